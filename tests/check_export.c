/* check_export.c - export archives (runtime/export.h): the manifest's text
 * form, parse errors, verification against a tree, and a whole stream
 * (export a directory, read the tar.zst, extract it with verification). */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check-tap.h"
#include "common/error.h"
#include "runtime/export.h"
#include "common/tarsafe.h"
#include "common/util.h"

static char tmpdir[64];

static void setup(void)
{
	snprintf(tmpdir, sizeof tmpdir, "/tmp/check_export.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	signal(SIGPIPE, SIG_IGN);
}

static void teardown(void)
{
	rm_rf(tmpdir);
}

static const char *tpath(const char *rel)
{
	static char bufs[8][256];
	static unsigned next;
	char *b = bufs[next++ % 8];

	snprintf(b, sizeof bufs[0], "%s/%s", tmpdir, rel);
	return b;
}

static void put(const char *rel, const char *content)
{
	int fd = open(tpath(rel), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write_all(fd, content, strlen(content)), 0);
	close(fd);
}

static void hash_of(const char *s, unsigned char ret[16])
{
	uint64_t size;
	int fd;

	put("h.tmp", s);
	fd = open(tpath("h.tmp"), O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(export_hash_fd(fd, ret, &size), 0);
	ck_assert_uint_eq(size, strlen(s));
	close(fd);
	unlink(tpath("h.tmp"));
}

START_TEST(test_format_and_parse)
{
	struct export_manifest *m = export_manifest_new("volume", "data", 0), *p = NULL;
	unsigned char h[16];
	char *text = NULL;
	size_t len = 0;
	pd_error err = {0};

	ck_assert_ptr_nonnull(m);
	hash_of("hello", h);
	ck_assert_int_eq(export_manifest_add(m, "sub/b", 5, h), 0);
	ck_assert_int_eq(export_manifest_add(m, "a\nb\\c\x01", 5, h), 0);
	ck_assert_int_eq(export_manifest_add_link(m, "link", "sub/b"), 0);
	ck_assert_int_eq(export_manifest_format(m, &text, &len), 0);
	ck_assert_uint_eq(strlen(text), len);
	/* Header, then sorted by path, escaped; the link has the file's hash. */
	ck_assert_int_eq(strncmp(text, "paddock-export 1 volume data 1970-01-01T00:00:00Z\n", 50),
			 0);
	ck_assert_ptr_nonnull(strstr(text, " 5 a\\nb\\\\c\\x01\n"));
	ck_assert(strstr(text, " a\\n") < strstr(text, " link\n"));
	ck_assert(strstr(text, " link\n") < strstr(text, " sub/b\n"));
	/* The known XXH3-128 of "hello". */
	ck_assert_ptr_nonnull(strstr(text, "b5e9c1ad071b3e7fc779cfaa5e523818 5 sub/b\n"));

	ck_assert_int_eq(export_manifest_parse(text, len, &p, &err), 0);
	ck_assert_str_eq(export_manifest_kind(p), "volume");
	ck_assert_str_eq(export_manifest_source(p), "data");
	ck_assert_int_eq(export_manifest_created(p), 0);
	ck_assert_uint_eq(export_manifest_count(p), 3);
	{
		char *again = NULL;
		size_t alen = 0;
		ck_assert_int_eq(export_manifest_format(p, &again, &alen), 0);
		ck_assert_str_eq(again, text);
		free(again);
	}
	export_manifest_free(p);
	export_manifest_free(m);
	free(text);
}
END_TEST

START_TEST(test_link_to_unknown_target)
{
	struct export_manifest *m = export_manifest_new("snapshot", "web-1", 0);
	char *text = NULL;
	size_t len;

	ck_assert_int_eq(export_manifest_add_link(m, "l", "nowhere"), 0);
	ck_assert_int_eq(export_manifest_format(m, &text, &len), -ENOENT);
	export_manifest_free(m);
}
END_TEST

static void parse_fails(const char *text, const char *why)
{
	struct export_manifest *m = NULL;
	pd_error err = {0};

	ck_assert_int_eq(export_manifest_parse(text, strlen(text), &m, &err), -EINVAL);
	ck_assert_ptr_null(m);
	ck_assert_msg(strstr(err.msg, why), "\"%s\": got \"%s\", want \"%s\"", text, err.msg, why);
}

#define HDR "paddock-export 1 volume v 2024-05-01T10:00:00Z\n"
#define H32 "0123456789abcdef0123456789abcdef"

START_TEST(test_parse_errors)
{
	parse_fails("", "empty");
	parse_fails("tar 1 volume v 2024-05-01T10:00:00Z\n", "header");
	parse_fails("paddock-export 2 volume v 2024-05-01T10:00:00Z\n", "version 2");
	parse_fails("paddock-export 1 box v 2024-05-01T10:00:00Z\n", "unknown kind");
	parse_fails("paddock-export 1 volume v yesterday\n", "bad time");
	parse_fails(HDR H32 " 5 a", "no final newline");
	parse_fails(HDR "0123 5 a\n", "line 2: malformed");
	parse_fails(HDR "0123456789abcdef0123456789abcdeX 5 a\n", "bad hash");
	parse_fails(HDR H32 " x a\n", "bad size");
	parse_fails(HDR H32 " 05 a\n", "bad size");
	parse_fails(HDR H32 " 99999999999999999999999 a\n", "bad size");
	parse_fails(HDR H32 " 5 a\\q\n", "bad escape");
	parse_fails(HDR H32 " 5 a\\x00\n", "bad escape");
	parse_fails(HDR H32 " 5 a\n" H32 " 5 b\n" H32 " 6 a\n", "listed twice");
	{
		struct export_manifest *m = NULL;
		pd_error err = {0};
		ck_assert_int_eq(export_manifest_parse(HDR "x\0y\n", sizeof(HDR) + 3, &m, &err),
				 -EINVAL);
		ck_assert_ptr_nonnull(strstr(err.msg, "NUL"));
	}
}
END_TEST

/* A tree with its manifest, then changes that must be caught. */
static struct export_manifest *tree_manifest(void)
{
	struct export_manifest *m = export_manifest_new("volume", "v", 0);
	unsigned char h1[16], h2[16];

	hash_of("one", h1);
	hash_of("", h2);
	ck_assert_int_eq(mkdir(tpath("t"), 0755), 0);
	ck_assert_int_eq(mkdir(tpath("t/d"), 0755), 0);
	put("t/a", "one");
	put("t/d/e", "");
	ck_assert_int_eq(link(tpath("t/a"), tpath("t/d/hl")), 0);
	ck_assert_int_eq(symlink("a", tpath("t/sym")), 0);
	ck_assert_int_eq(export_manifest_add(m, "a", 3, h1), 0);
	ck_assert_int_eq(export_manifest_add(m, "d/e", 0, h2), 0);
	ck_assert_int_eq(export_manifest_add_link(m, "d/hl", "a"), 0);
	return m;
}

static int verify_tree(struct export_manifest *m, pd_error *err)
{
	int fd = open(tpath("t"), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int r;

	ck_assert_int_ge(fd, 0);
	r = export_manifest_verify(m, fd, err);
	close(fd);
	return r;
}

START_TEST(test_verify)
{
	struct export_manifest *m = tree_manifest();
	pd_error err = {0};

	ck_assert_int_eq(verify_tree(m, &err), 0);
	/* Twice: the marks are reset. */
	ck_assert_int_eq(verify_tree(m, &err), 0);

	put("t/d/e", "x"); /* size differs */
	ck_assert_int_eq(verify_tree(m, &err), -EINVAL);
	ck_assert_str_eq(err.msg,
			 "content does not match the archive's manifest: d/e (size differs)");
	put("t/d/e", "");
	unlink(tpath("t/d/hl"));
	put("t/d/hl", "two"); /* same size, other content */
	ck_assert_int_eq(verify_tree(m, &err), -EINVAL);
	ck_assert_str_eq(err.msg,
			 "content does not match the archive's manifest: d/hl (hash differs)");
	unlink(tpath("t/d/hl"));
	ck_assert_int_eq(verify_tree(m, &err), -EINVAL);
	ck_assert_str_eq(err.msg, "content does not match the archive's manifest: d/hl (missing)");
	ck_assert_int_eq(link(tpath("t/a"), tpath("t/d/hl")), 0);
	put("t/extra", "");
	ck_assert_int_eq(verify_tree(m, &err), -EINVAL);
	ck_assert_str_eq(err.msg,
			 "content does not match the archive's manifest: extra (not listed)");
	export_manifest_free(m);
}
END_TEST

/* --- a whole stream ------------------------------------------------------ */

static pthread_mutex_t wake_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake_cond = PTHREAD_COND_INITIALIZER;
static unsigned wakes, releases;

static void on_wake(void *userdata, uint64_t key)
{
	(void)userdata;
	ck_assert(key & EXPORT_WAKE_BIT);
	pthread_mutex_lock(&wake_lock);
	wakes++;
	pthread_cond_broadcast(&wake_cond);
	pthread_mutex_unlock(&wake_lock);
}

static void on_release(void *userdata)
{
	(void)userdata;
	pthread_mutex_lock(&wake_lock);
	releases++;
	pthread_mutex_unlock(&wake_lock);
}

/* Exports tmpdir/src into tmpdir/out.tzst. */
static void export_src(void)
{
	struct export_source src = {
	    .dirfd = open(tpath("src"), O_PATH | O_DIRECTORY | O_CLOEXEC),
	    .tmpfd = open(tmpdir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600),
	    .kind = "volume",
	    .source = "src",
	    .wake = on_wake,
	    .release = on_release,
	};
	struct export_stream *x = NULL;
	pd_error err = {0};
	char buf[4096];
	uint64_t off = 0;
	int out = open(tpath("out.tzst"), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	ck_assert_int_ge(src.dirfd, 0);
	ck_assert_int_ge(src.tmpfd, 0);
	ck_assert_int_eq(export_stream_start(&src, &x, &err), 0);
	for (;;) {
		size_t n = 0;
		int r = export_stream_read(x, off, buf, sizeof buf, &n);
		if (r == -EAGAIN) {
			pthread_mutex_lock(&wake_lock);
			unsigned seen = wakes;
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += 10 * 1000 * 1000;
			if (ts.tv_nsec >= 1000000000L) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000L;
			}
			if (wakes == seen)
				pthread_cond_timedwait(&wake_cond, &wake_lock, &ts);
			pthread_mutex_unlock(&wake_lock);
			continue;
		}
		ck_assert_int_eq(r, 0);
		if (n == 0)
			break;
		ck_assert_int_eq(write_all(out, buf, n), 0);
		off += n;
	}
	ck_assert(!export_stream_live(x));
	export_stream_close(x);
	close(out);
	/* release() runs once the threads have ended, which may be a moment
	 * after the last byte: wait for it (2 s at most). */
	for (int i = 0; i < 200; i++) {
		pthread_mutex_lock(&wake_lock);
		unsigned n = releases;
		pthread_mutex_unlock(&wake_lock);
		if (n)
			break;
		usleep(10000);
	}
	usleep(20000); /* a second release would show by now */
	pthread_mutex_lock(&wake_lock);
	ck_assert_uint_eq(releases, 1);
	pthread_mutex_unlock(&wake_lock);
}

static int import_into(const char *dir, pd_error *err)
{
	struct export_verify v = {0};
	struct tar_extract_hooks hooks;
	int rootfd = open(tmpdir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	int in = open(tpath("out.tzst"), O_RDONLY | O_CLOEXEC);
	int r;

	export_verify_hooks(&v, &hooks);
	r = tarsafe_extract_ex(rootfd, dir, in, /* lim= */ NULL, &hooks, /* ret= */ NULL, err);
	if (r == 0) {
		ck_assert_ptr_nonnull(v.manifest);
		ck_assert_str_eq(export_manifest_kind(v.manifest), "volume");
		ck_assert_uint_eq(export_manifest_count(v.manifest), 4);
	}
	export_verify_release(&v);
	close(in);
	close(rootfd);
	return r;
}

START_TEST(test_stream_round_trip)
{
	pd_error err = {0};
	_cleanup_free_ char *a = NULL, *b = NULL;
	struct stat st;

	ck_assert_int_eq(mkdir(tpath("src"), 0755), 0);
	ck_assert_int_eq(mkdir(tpath("src/d"), 0755), 0);
	put("src/a", "alpha");
	put("src/.paddock-export", "a file of the tree with the manifest's base name");
	put("src/d/b", "");
	ck_assert_int_eq(link(tpath("src/a"), tpath("src/d/hl")), 0);
	ck_assert_int_eq(symlink("../a", tpath("src/d/sym")), 0);
	export_src();

	ck_assert_int_eq(import_into("dst", &err), 0);
	ck_assert_int_eq(read_file_at(AT_FDCWD, tpath("dst/a"), 100, &a, NULL), 0);
	ck_assert_str_eq(a, "alpha");
	ck_assert_int_eq(read_file_at(AT_FDCWD, tpath("dst/.paddock-export"), 100, &b, NULL), 0);
	ck_assert_str_eq(b, "a file of the tree with the manifest's base name");
	ck_assert_int_eq(lstat(tpath("dst/d/sym"), &st), 0);
	ck_assert(S_ISLNK(st.st_mode));
	ck_assert_int_eq(stat(tpath("dst/d/hl"), &st), 0);
	ck_assert_int_eq(st.st_nlink, 2);
	/* Only the tree's own .paddock-export: the manifest entry itself is
	 * not extracted (verification found no unlisted file). */
}
END_TEST

START_TEST(test_stream_failed_verification_leaves_nothing)
{
	pd_error err = {0};

	ck_assert_int_eq(mkdir(tpath("src"), 0755), 0);
	put("src/a", "alpha");
	put("src/b", "beta");
	put("src/c", "gamma");
	ck_assert_int_eq(mkdir(tpath("dst"), 0755), 0);
	put("dst/keep", "k");
	export_src();
	/* Decompress, flip "beta" to "BETA", recompress: the manifest stays. */
	{
		char cmd[1024];
		snprintf(cmd, sizeof cmd,
			 "cd %s && zstd -qdc out.tzst > out.tar && "
			 "sed -i 's/beta/BETA/' out.tar && zstd -qf out.tar -o out.tzst",
			 tmpdir);
		if (system(cmd) != 0) {
			fprintf(stderr, "# zstd missing: part skipped\n");
			return;
		}
	}
	ck_assert_int_eq(import_into("dst", &err), -EINVAL);
	ck_assert_str_eq(err.msg,
			 "content does not match the archive's manifest: b (hash differs)");
	/* Nothing merged, no staging directory left. */
	{
		int n = 0;
		DIR *d = opendir(tpath("dst"));
		struct dirent *de;
		while ((de = readdir(d)))
			if (de->d_name[0] != '.' || strlen(de->d_name) > 2)
				n++;
		closedir(d);
		ck_assert_int_eq(n, 1);
		ck_assert_int_eq(access(tpath("dst/keep"), F_OK), 0);
	}
}
END_TEST

static Suite *export_suite(void)
{
	Suite *s = suite_create("export");
	TCase *tc = tcase_create("manifest");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_format_and_parse);
	tcase_add_test(tc, test_link_to_unknown_target);
	tcase_add_test(tc, test_parse_errors);
	tcase_add_test(tc, test_verify);
	suite_add_tcase(s, tc);

	tc = tcase_create("stream");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_stream_round_trip);
	tcase_add_test(tc, test_stream_failed_verification_leaves_nothing);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_tap_run(export_suite());
}
