/* check_tarsafe.c - tar push/pull and file operations inside a box's root
 * (common/tarsafe.h), against a fake box root with planted symlinks that point
 * outside it, and archives crafted here with libarchive's writer. */
#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check-links.h"
#include "check-tap.h"
#include "common/error.h"
#include "common/tarsafe.h"
#include "common/util.h"

/* Each test runs in its own process (fork mode) with a fresh directory:
 * tmpdir/root is the box root, tmpdir/outside must stay empty. They live
 * in basedir, which the runner process removes even when a test fails. */
static char basedir[64];
static char tmpdir[96];
static int rootfd = -1;

static const char *tmp_path(const char *rel)
{
	static char bufs[8][512];
	static unsigned next;
	char *b = bufs[next++ % 8];

	snprintf(b, sizeof(bufs[0]), "%s/%s", tmpdir, rel);
	return b;
}

static const char *root_path(const char *rel)
{
	static char bufs[8][512];
	static unsigned next;
	char *b = bufs[next++ % 8];

	snprintf(b, sizeof(bufs[0]), "%s/root/%s", tmpdir, rel);
	return b;
}

static void base_setup(void)
{
	snprintf(basedir, sizeof(basedir), "/tmp/check_tarsafe.XXXXXX");
	if (!mkdtemp(basedir))
		abort();
}

static void base_teardown(void)
{
	rm_rf(basedir);
}

static void setup(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "%s/t.XXXXXX", basedir);
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	ck_assert_int_eq(mkdir(tmp_path("root"), 0755), 0);
	ck_assert_int_eq(mkdir(tmp_path("outside"), 0755), 0);
	/* Planted by a hostile box: absolute (host path and /etc) and
	 * relative links that would lead outside if followed on the host. */
	ck_assert_int_eq(symlink(tmp_path("outside"), root_path("evil")), 0);
	ck_assert_int_eq(symlink("/etc", root_path("abs")), 0);
	ck_assert_int_eq(symlink("../outside", root_path("rel")), 0);
	ck_assert_int_eq(symlink("../../../../..", root_path("up")), 0);
	rootfd = open(tmp_path("root"), O_PATH | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(rootfd, 0);
	signal(SIGPIPE, SIG_IGN);
}

static void teardown(void)
{
	if (rootfd >= 0)
		close(rootfd);
	rm_rf(tmpdir);
}

static bool exists(const char *path)
{
	struct stat st;
	return lstat(path, &st) == 0;
}

static int count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	ck_assert_msg(d != NULL, "opendir %s: %s", dir, strerror(errno));
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			n++;
	closedir(d);
	return n;
}

static void make_file(const char *path, const char *data, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	ck_assert_msg(fd >= 0, "open %s: %s", path, strerror(errno));
	ck_assert_int_eq(write_all(fd, data, strlen(data)), 0);
	ck_assert_int_eq(close(fd), 0);
}

/* The whole content of a file (static buffer). */
static const char *slurp(const char *path)
{
	static char buf[4096];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	ck_assert_msg(fd >= 0, "open %s: %s", path, strerror(errno));
	n = read(fd, buf, sizeof(buf) - 1);
	ck_assert_int_ge(n, 0);
	buf[n] = '\0';
	close(fd);
	return buf;
}

/* ---- archives crafted for the tests ---- */

/* type: 'f' file, 'd' dir, 'l' symlink (data = target), 'h' hard link
 * (data = target), 'c' char device, 'b' block device, 'p' FIFO,
 * 's' socket. size < 0: strlen(data). */
struct ent {
	const char *name;
	char type;
	const char *data;
	mode_t mode;
	int64_t size;
	time_t mtime;
};

static void add_entry(struct archive *a, const struct ent *x)
{
	struct archive_entry *e = archive_entry_new();
	int64_t size = 0;

	archive_entry_set_pathname(e, x->name);
	archive_entry_set_perm(e, x->mode ? x->mode : 0644);
	archive_entry_set_mtime(e, x->mtime ? x->mtime : 1600000000, 0);
	switch (x->type) {
	case 'f':
		archive_entry_set_filetype(e, AE_IFREG);
		size = x->size >= 0 ? x->size : (int64_t)strlen(x->data ? x->data : "");
		break;
	case 'd':
		archive_entry_set_filetype(e, AE_IFDIR);
		break;
	case 'l':
		archive_entry_set_filetype(e, AE_IFLNK);
		archive_entry_set_symlink(e, x->data);
		break;
	case 'h':
		archive_entry_set_filetype(e, AE_IFREG);
		archive_entry_set_hardlink(e, x->data);
		break;
	case 'c':
		archive_entry_set_filetype(e, AE_IFCHR);
		archive_entry_set_rdev(e, makedev(1, 3));
		break;
	case 'b':
		archive_entry_set_filetype(e, AE_IFBLK);
		archive_entry_set_rdev(e, makedev(8, 0));
		break;
	case 'p':
		archive_entry_set_filetype(e, AE_IFIFO);
		break;
	case 's':
		archive_entry_set_filetype(e, AE_IFSOCK);
		break;
	default:
		ck_abort_msg("bad type %c", x->type);
	}
	archive_entry_set_size(e, size);
	ck_assert_int_ge(archive_write_header(a, e), ARCHIVE_WARN);
	if (x->type == 'f' && size > 0 && x->data)
		ck_assert_int_eq(archive_write_data(a, x->data, (size_t)size), size);
	archive_entry_free(e);
}

/* The archive as a memfd positioned at its start. filter: 0, 'g' gzip,
 * 'z' zstd. */
static int build_filtered(const struct ent *ents, size_t n, char filter)
{
	struct archive *a = archive_write_new();
	int fd = memfd_create("tar", MFD_CLOEXEC);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(archive_write_set_format_pax_restricted(a), ARCHIVE_OK);
	if (filter == 'g')
		ck_assert_int_eq(archive_write_add_filter_gzip(a), ARCHIVE_OK);
	else if (filter == 'z')
		ck_assert_int_eq(archive_write_add_filter_zstd(a), ARCHIVE_OK);
	ck_assert_int_eq(archive_write_open_fd(a, fd), ARCHIVE_OK);
	for (size_t i = 0; i < n; i++)
		add_entry(a, &ents[i]);
	ck_assert_int_eq(archive_write_close(a), ARCHIVE_OK);
	archive_write_free(a);
	ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);
	return fd;
}

static int build(const struct ent *ents, size_t n)
{
	return build_filtered(ents, n, 0);
}

/* A push into a box's root, as web/http-root.c makes it: absolute link
 * targets name the box's own paths. */
static struct tar_limits box_limits(void)
{
	struct tar_limits lim = TAR_LIMITS_INIT;

	lim.flags = TAR_ABS_LINKS_IN_ROOT;
	lim.root_what = "the box root";
	return lim;
}

/* lim NULL: box_limits(). */
static int extract_lim(const char *dir, const struct ent *ents, size_t n,
		       const struct tar_limits *lim, struct tar_result *res, pd_error *err)
{
	struct tar_limits box = box_limits();
	int fd = build(ents, n);
	int r = tarsafe_extract(rootfd, dir, fd, lim ? lim : &box, res, err);
	close(fd);
	return r;
}

static int extract(const char *dir, const struct ent *ents, size_t n, pd_error *err)
{
	return extract_lim(dir, ents, n, NULL, NULL, err);
}

/* No staging directory left anywhere below root/rel. */
static void assert_no_staging(const char *rel)
{
	DIR *d = opendir(root_path(rel));
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d)))
		ck_assert_msg(strncmp(de->d_name, ".paddock-", 9) != 0, "left behind: %s/%s", rel,
			      de->d_name);
	closedir(d);
}

static void assert_outside_untouched(void)
{
	ck_assert_int_eq(count_entries(tmp_path("outside")), 0);
	ck_assert(!exists(tmp_path("pwned")));
	ck_assert(!exists("/etc/paddock-check-pwned"));
}

/* ---- push: what must work ---- */

START_TEST(test_extract_tree)
{
	const struct ent ents[] = {
	    {"sub/", 'd', NULL, 0750, 0, 1500000000}, {"sub/a", 'f', "hello", 0640, -1, 1400000000},
	    {"b", 'f', "world", 04755, -1, 0},	      {"sub/link", 'l', "a", 0777, 0, 0},
	    {"sub/hard", 'h', "sub/a", 0, 0, 0},      {"./c//./d", 'f', "x", 0600, -1, 0},
	};
	struct tar_result res = {0};
	pd_error err = {0};
	struct stat st, st2;
	char target[64];

	ck_assert_int_eq(extract_lim("dst/deep", ents, ELEMENTSOF(ents), NULL, &res, &err), 0);
	ck_assert_int_eq(res.entries, 6);
	ck_assert_int_eq(res.bytes, 11);
	ck_assert_str_eq(slurp(root_path("dst/deep/sub/a")), "hello");
	ck_assert_str_eq(slurp(root_path("dst/deep/b")), "world");
	ck_assert_str_eq(slurp(root_path("dst/deep/c/d")), "x");

	ck_assert_int_eq(stat(root_path("dst/deep/sub"), &st), 0);
	ck_assert_int_eq(st.st_mode & 07777, 0750);
	ck_assert_int_eq(st.st_mtime, 1500000000);
	ck_assert_int_eq(stat(root_path("dst/deep/sub/a"), &st), 0);
	ck_assert_int_eq(st.st_mode & 07777, 0640);
	ck_assert_int_eq(st.st_mtime, 1400000000);
	ck_assert_int_eq(stat(root_path("dst/deep/b"), &st), 0);
	ck_assert_int_eq(st.st_mode & 07777, 0755); /* setuid dropped */

	ck_assert_int_eq(readlink(root_path("dst/deep/sub/link"), target, sizeof(target)), 1);
	ck_assert_int_eq(target[0], 'a');
	ck_assert_int_eq(stat(root_path("dst/deep/sub/hard"), &st2), 0);
	ck_assert_int_eq(stat(root_path("dst/deep/sub/a"), &st), 0);
	ck_assert_int_eq(st.st_ino, st2.st_ino);
	ck_assert_int_eq(st.st_nlink, 2);
	ck_assert_int_eq(count_entries(root_path("dst/deep")), 3);
	assert_no_staging("dst/deep");
}
END_TEST

START_TEST(test_extract_owner)
{
	const struct ent ents[] = {
	    {"d/", 'd', NULL, 0755, 0, 0},
	    {"d/f", 'f', "x", 0644, -1, 0},
	    {"i/j/f", 'f', "y", 0644, -1, 0},
	    {"l", 'l', "d/f", 0777, 0, 0},
	};
	struct tar_limits lim = TAR_LIMITS_INIT;
	pd_error err = {0};
	const char *paths[] = {"new", "new/d", "new/d/f", "new/i", "new/i/j", "new/i/j/f", "new/l"};
	struct stat st;

	lim.uid = 1000;
	lim.gid = 1000;
	ck_assert_int_eq(extract_lim("new", ents, ELEMENTSOF(ents), &lim, NULL, &err), 0);
	for (size_t i = 0; i < ELEMENTSOF(paths); i++) {
		ck_assert_int_eq(lstat(root_path(paths[i]), &st), 0);
		ck_assert_msg(st.st_uid == 1000 && st.st_gid == 1000, "%s owned by %u:%u", paths[i],
			      st.st_uid, st.st_gid);
	}
}
END_TEST

START_TEST(test_extract_merges)
{
	const struct ent ents[] = {
	    {"sub/new", 'f', "new", 0644, -1, 0}, {"imp/x", 'f', "x", 0644, -1, 0},
	    {"b", 'f', "replaced", 0644, -1, 0},  {"wasfile/", 'd', NULL, 0755, 0, 0},
	    {"wasdir", 'f', "f", 0644, -1, 0},
	};
	pd_error err = {0};
	struct stat st;

	ck_assert_int_eq(mkdir(root_path("dst"), 0755), 0);
	ck_assert_int_eq(mkdir(root_path("dst/sub"), 0755), 0);
	ck_assert_int_eq(mkdir(root_path("dst/imp"), 0711), 0);
	ck_assert_int_eq(chown(root_path("dst/imp"), 1000, 1000), 0);
	ck_assert_int_eq(mkdir(root_path("dst/wasdir"), 0755), 0);
	make_file(root_path("dst/keep"), "keep", 0644);
	make_file(root_path("dst/sub/old"), "old", 0644);
	make_file(root_path("dst/b"), "before", 0600);
	make_file(root_path("dst/wasfile"), "file", 0644);

	ck_assert_msg(extract("dst", ents, ELEMENTSOF(ents), &err) == 0, "%s", err.msg);
	ck_assert_str_eq(slurp(root_path("dst/keep")), "keep");
	ck_assert_str_eq(slurp(root_path("dst/sub/old")), "old");
	ck_assert_str_eq(slurp(root_path("dst/sub/new")), "new");
	ck_assert_str_eq(slurp(root_path("dst/b")), "replaced");
	ck_assert_str_eq(slurp(root_path("dst/imp/x")), "x");
	ck_assert_str_eq(slurp(root_path("dst/wasdir")), "f");
	ck_assert_int_eq(stat(root_path("dst/wasfile"), &st), 0);
	ck_assert(S_ISDIR(st.st_mode));
	/* A parent implied by "imp/x" leaves the existing directory alone. */
	ck_assert_int_eq(stat(root_path("dst/imp"), &st), 0);
	ck_assert_int_eq(st.st_mode & 07777, 0711);
	ck_assert_int_eq(st.st_uid, 1000);
	assert_no_staging("dst");
}
END_TEST

START_TEST(test_extract_nonempty_dir_in_the_way)
{
	const struct ent ents[] = {
	    {"first", 'f', "1", 0644, -1, 0},
	    {"d", 'f', "file over a full directory", 0644, -1, 0},
	};
	pd_error err = {0};

	ck_assert_int_eq(mkdir(root_path("dst"), 0755), 0);
	ck_assert_int_eq(mkdir(root_path("dst/d"), 0755), 0);
	make_file(root_path("dst/d/inside"), "inside", 0644);
	ck_assert_int_eq(extract("dst", ents, ELEMENTSOF(ents), &err), -EISDIR);
	ck_assert_ptr_nonnull(strstr(err.msg, "dst/d"));
	/* Checked before anything moved. */
	ck_assert(!exists(root_path("dst/first")));
	ck_assert_str_eq(slurp(root_path("dst/d/inside")), "inside");
	assert_no_staging("dst");
}
END_TEST

START_TEST(test_extract_dot_and_duplicates)
{
	const struct ent ents[] = {
	    {"./", 'd', NULL, 0700, 0, 0},	 {"dup", 'f', "first", 0644, -1, 0},
	    {"dup", 'f', "second", 0644, -1, 0}, {"x", 'd', NULL, 0755, 0, 0},
	    {"x", 'l', "dup", 0777, 0, 0},	 {"y", 'f', "y", 0644, -1, 0},
	    {"y", 'd', NULL, 0755, 0, 0},
	};
	struct tar_result res = {0};
	pd_error err = {0};
	struct stat st;

	ck_assert_int_eq(mkdir(root_path("dst"), 0755), 0);
	ck_assert_int_eq(extract_lim("dst", ents, ELEMENTSOF(ents), NULL, &res, &err), 0);
	ck_assert_int_eq(res.entries, 7);
	ck_assert_str_eq(slurp(root_path("dst/dup")), "second");
	ck_assert_int_eq(lstat(root_path("dst/x"), &st), 0);
	ck_assert(S_ISLNK(st.st_mode));
	ck_assert_int_eq(lstat(root_path("dst/y"), &st), 0);
	ck_assert(S_ISDIR(st.st_mode));
	/* "./" does not change the target directory. */
	ck_assert_int_eq(stat(root_path("dst"), &st), 0);
	ck_assert_int_eq(st.st_mode & 07777, 0755);
}
END_TEST

START_TEST(test_extract_compressed)
{
	const struct ent ents[] = {{"f", 'f', "compressed", 0644, -1, 0}};
	const char filters[] = {'g', 'z'};
	pd_error err = {0};

	for (size_t i = 0; i < ELEMENTSOF(filters); i++) {
		char dir[8];
		int fd = build_filtered(ents, 1, filters[i]);

		snprintf(dir, sizeof(dir), "d%c", filters[i]);
		ck_assert_msg(tarsafe_extract(rootfd, dir, fd, NULL, NULL, &err) == 0, "%s",
			      err.msg);
		close(fd);
		snprintf(dir, sizeof(dir), "d%c/f", filters[i]);
		ck_assert_str_eq(slurp(root_path(dir)), "compressed");
	}
}
END_TEST

START_TEST(test_extract_empty_stream)
{
	int fd = memfd_create("empty", MFD_CLOEXEC);
	struct tar_result res = {.entries = 9};
	pd_error err = {0};

	ck_assert_int_eq(tarsafe_extract(rootfd, "e", fd, NULL, &res, &err), 0);
	ck_assert_int_eq(res.entries, 0);
	ck_assert_int_eq(count_entries(root_path("e")), 0);
	close(fd);
}
END_TEST

START_TEST(test_extract_keeps_directory_symlink)
{
	const struct ent ents[] = {{"lib/x", 'f', "x", 0644, -1, 0}};
	pd_error err = {0};
	struct stat st;

	/* A merged-/usr layout: /lib -> usr/lib stays a link. */
	ck_assert_int_eq(mkdir(root_path("usr"), 0755), 0);
	ck_assert_int_eq(mkdir(root_path("usr/lib"), 0755), 0);
	ck_assert_int_eq(symlink("usr/lib", root_path("lib")), 0);
	ck_assert_int_eq(extract("", ents, 1, &err), 0);
	ck_assert_int_eq(lstat(root_path("lib"), &st), 0);
	ck_assert(S_ISLNK(st.st_mode));
	ck_assert_str_eq(slurp(root_path("usr/lib/x")), "x");
	assert_no_staging("");
}
END_TEST

START_TEST(test_extract_many_small_files)
{
	enum { N = 10000 };
	struct archive *a = archive_write_new();
	int fd = memfd_create("many", MFD_CLOEXEC);
	struct tar_result res = {0};
	pd_error err = {0};
	struct timespec t0, t1;
	double secs;

	ck_assert_int_eq(archive_write_set_format_pax_restricted(a), ARCHIVE_OK);
	ck_assert_int_eq(archive_write_open_fd(a, fd), ARCHIVE_OK);
	for (int i = 0; i < N; i++) {
		char name[32];
		snprintf(name, sizeof(name), "d%02d/f%05d", i % 100, i);
		add_entry(a, &(struct ent){name, 'f', "small file\n", 0644, -1, 0});
	}
	ck_assert_int_eq(archive_write_close(a), ARCHIVE_OK);
	archive_write_free(a);
	ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);

	clock_gettime(CLOCK_MONOTONIC, &t0);
	ck_assert_msg(tarsafe_extract(rootfd, "many", fd, NULL, &res, &err) == 0, "%s", err.msg);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	fprintf(stderr, "# extracted %d files in %.3f s\n", N, secs);
	ck_assert_int_eq(res.entries, N);
	ck_assert_int_eq(count_entries(root_path("many")), 100);
	ck_assert_int_eq(count_entries(root_path("many/d42")), 100);
	ck_assert_str_eq(slurp(root_path("many/d99/f09999")), "small file\n");
	/* Generous even under sanitizers; without them it takes well under
	 * a second. */
	ck_assert_msg(secs < 20.0, "took %.1f s", secs);
	close(fd);
}
END_TEST

/* ---- push: what must be rejected, leaving nothing behind ---- */

/* Extracts ents into a fresh "dst" that has one file; expects code, a
 * message containing `what`, and dst exactly as before. */
static void expect_rejected(const struct ent *ents, size_t n, int code, const char *what)
{
	pd_error err = {0};
	int r;

	if (!exists(root_path("dst"))) {
		ck_assert_int_eq(mkdir(root_path("dst"), 0755), 0);
		make_file(root_path("dst/existing"), "existing", 0644);
	}
	r = extract("dst", ents, n, &err);
	ck_assert_msg(r == code, "got %d (%s), want %d", r, err.msg, code);
	ck_assert_int_eq(err.code, code);
	ck_assert_msg(strstr(err.msg, what), "message \"%s\" lacks \"%s\"", err.msg, what);
	ck_assert_int_eq(count_entries(root_path("dst")), 1);
	ck_assert_str_eq(slurp(root_path("dst/existing")), "existing");
	assert_outside_untouched();
}

START_TEST(test_reject_names)
{
	const struct ent abs[] = {{"/etc/paddock-check-pwned", 'f', "x", 0644, -1, 0}};
	const struct ent dotdot[] = {{"a/../../pwned", 'f', "x", 0644, -1, 0}};
	const struct ent dotdot2[] = {{"..", 'd', NULL, 0755, 0, 0}};
	const struct ent empty[] = {{"", 'f', "x", 0644, -1, 0}};
	const struct ent dotfile[] = {{".", 'f', "x", 0644, -1, 0}};

	expect_rejected(abs, 1, -EINVAL, "entry 1 (/etc/paddock-check-pwned): absolute path");
	expect_rejected(dotdot, 1, -EINVAL,
			"entry 1 (a/../../pwned): path leaves the target directory");
	expect_rejected(dotdot2, 1, -EINVAL, "entry 1 (../): path leaves");
	expect_rejected(empty, 1, -EINVAL, "empty name");
	expect_rejected(dotfile, 1, -EINVAL, "names the target directory itself");
}
END_TEST

START_TEST(test_reject_special_files)
{
	/* Sockets have no tar representation libarchive writes or reads. */
	const char types[] = {'c', 'b', 'p'};
	const char *why[] = {"device nodes are not allowed", "device nodes are not allowed",
			     "FIFOs are not allowed"};

	for (size_t i = 0; i < ELEMENTSOF(types); i++) {
		const struct ent ents[] = {
		    {"ok", 'f', "fine", 0644, -1, 0},
		    {"node", types[i], NULL, 0600, 0, 0},
		};
		expect_rejected(ents, 2, -EPERM, why[i]);
		ck_assert_int_eq(count_entries(root_path("dst")), 1);
	}
	{
		pd_error err = {0};
		const struct ent ents[] = {{"node", 'p', NULL, 0600, 0, 0}};
		ck_assert_int_eq(extract("dst", ents, 1, &err), -EPERM);
		ck_assert_str_eq(err.msg, "entry 1 (node): FIFOs are not allowed");
	}
}
END_TEST

START_TEST(test_reject_symlinks_out)
{
	const struct ent up4[] = {{"a/b/x", 'l', "../../../../pwned", 0777, 0, 0}};
	const struct ent absdot[] = {{"x", 'l', "/../pwned", 0777, 0, 0}};
	const struct ent empty[] = {{"x", 'l', "", 0777, 0, 0}};

	/* dst is one level below the root: "../../.." from dst/a/b is the
	 * root, one more leaves it. */
	expect_rejected(up4, 1, -EPERM,
			"entry 1 (a/b/x): symlink to ../../../../pwned leads outside the box root: "
			"climbs above it");
	expect_rejected(absdot, 1, -EPERM, "leads outside the box root");
	expect_rejected(empty, 1, -EINVAL, "empty target");
}
END_TEST

START_TEST(test_symlinks_inside_allowed)
{
	const struct ent ents[] = {
	    {"a/b/x", 'l', "../../../y", 0777, 0, 0}, /* root/y from d/a/b */
	    {"abs", 'l', "/etc/passwd", 0777, 0, 0},  /* the box's own /etc */
	    {"dots", 'l', "./.././a/./b", 0777, 0, 0},
	    {"chain", 'l', "dots/c", 0777, 0, 0}, /* through a link of the archive */
	    {"dangling", 'l', "missing/x", 0777, 0, 0},
	};
	const struct ent out[] = {{"a/b/x", 'l', "../../../../y", 0777, 0, 0}};
	pd_error err = {0};
	char target[64];
	ssize_t n;

	ck_assert_msg(extract("d", ents, ELEMENTSOF(ents), &err) == 0, "%s", err.msg);
	n = readlink(root_path("d/a/b/x"), target, sizeof(target) - 1);
	ck_assert_int_gt(n, 0);
	target[n] = '\0';
	ck_assert_str_eq(target, "../../../y");
	ck_assert_int_eq(extract("d", out, 1, &err), -EPERM);
}
END_TEST

START_TEST(test_reject_hardlinks_out)
{
	const struct ent abs[] = {{"h", 'h', "/etc/passwd", 0, 0, 0}};
	const struct ent dotdot[] = {{"h", 'h', "../outside", 0, 0, 0}};
	const struct ent existing[] = {{"h", 'h', "existing", 0, 0, 0}};
	const struct ent later[] = {{"h", 'h', "f", 0, 0, 0}, {"f", 'f', "x", 0644, -1, 0}};
	const struct ent dir[] = {{"d/f", 'f', "x", 0644, -1, 0}, {"h", 'h', "d", 0, 0, 0}};

	expect_rejected(abs, 1, -EPERM, "entry 1 (h): hard link to an absolute path");
	expect_rejected(dotdot, 1, -EPERM, "leaves the target directory");
	/* A file of the target directory is not an entry of the archive. */
	expect_rejected(existing, 1, -EPERM, "hard link to existing, which is not an earlier");
	expect_rejected(later, 2, -EPERM, "not an earlier entry");
	expect_rejected(dir, 2, -EPERM, "a directory");
}
END_TEST

START_TEST(test_reject_through_archive_symlink)
{
	const struct ent ents[] = {
	    {"s", 'l', "/", 0777, 0, 0},
	    {"s/etc/paddock-check-pwned", 'f', "x", 0644, -1, 0},
	};
	const struct ent ents2[] = {
	    {"t", 'l', "sub", 0777, 0, 0},
	    {"sub/", 'd', NULL, 0755, 0, 0},
	    {"t/f", 'f', "x", 0644, -1, 0},
	};
	const struct ent ents3[] = {
	    {"f", 'f', "x", 0644, -1, 0},
	    {"f/g", 'f', "x", 0644, -1, 0},
	};

	expect_rejected(ents, 2, -EINVAL,
			"entry 2 (s/etc/paddock-check-pwned): path goes through "
			"a symlink of the archive");
	expect_rejected(ents2, 3, -EINVAL, "path goes through a symlink");
	expect_rejected(ents3, 2, -EINVAL, "path goes through a file");
}
END_TEST

START_TEST(test_planted_symlinks_stay_inside)
{
	const struct ent ents[] = {
	    {"evil/pwned", 'f', "x", 0644, -1, 0},
	    {"abs/paddock-check-pwned", 'f', "x", 0644, -1, 0},
	    {"rel/pwned", 'f', "x", 0644, -1, 0},
	};
	const struct ent up[] = {{"up/pwned", 'f', "x", 0644, -1, 0}};
	pd_error err = {0};
	struct stat st;

	/* Into the root: the dangling links are replaced by the archive's
	 * directories. */
	ck_assert_msg(extract("", ents, ELEMENTSOF(ents), &err) == 0, "%s", err.msg);
	assert_outside_untouched();
	ck_assert_int_eq(lstat(root_path("evil"), &st), 0);
	ck_assert(S_ISDIR(st.st_mode));
	ck_assert_str_eq(slurp(root_path("evil/pwned")), "x");
	ck_assert_str_eq(slurp(root_path("abs/paddock-check-pwned")), "x");
	ck_assert_str_eq(slurp(root_path("rel/pwned")), "x");
	assert_no_staging("");
	/* "up" resolves to the root itself inside the root, where the archive
	 * writes: refused, never outside. */
	ck_assert_int_eq(extract("", up, 1, &err), -EPERM);
	ck_assert_msg(strstr(err.msg, "up/ would merge through the symlink already there into /,"),
		      "%s", err.msg);
	ck_assert(!exists(root_path("pwned")));
	assert_outside_untouched();
	assert_no_staging("");
}
END_TEST

START_TEST(test_planted_symlink_as_target_dir)
{
	const struct ent ents[] = {{"paddock-check-pwned", 'f', "x", 0644, -1, 0}};
	const char *dirs[] = {"evil/sub", "abs", "rel/x", "evil"};
	pd_error err = {0};

	for (size_t i = 0; i < ELEMENTSOF(dirs); i++) {
		int r = extract(dirs[i], ents, 1, &err);
		/* Either refused (a dangling link is in the way) or created
		 * inside the root: never outside. */
		ck_assert_msg(r == 0 || r == -EEXIST, "%s: %d %s", dirs[i], r, err.msg);
		assert_outside_untouched();
	}
	/* root/abs -> /etc resolves to the box's /etc, once it exists. */
	ck_assert_int_eq(mkdir(root_path("etc"), 0755), 0);
	ck_assert_int_eq(extract("abs", ents, 1, &err), 0);
	ck_assert_str_eq(slurp(root_path("etc/paddock-check-pwned")), "x");
	assert_outside_untouched();
}
END_TEST

/* Pushes ents into DIR (below the root) and expects -EPERM with `what` in
 * the message, and DIR, the root and the outside exactly as before. */
static void push_refused(const char *dir, const struct ent *ents, size_t n, const char *what)
{
	int before_dir = exists(root_path(dir)) ? count_entries(root_path(dir)) : -1;
	int before_root = count_entries(root_path(""));
	pd_error err = {0};
	int r = extract(dir, ents, n, &err);

	ck_assert_msg(r == -EPERM, "got %d (%s), want -EPERM", r, err.msg);
	ck_assert_msg(strstr(err.msg, what), "message \"%s\" lacks \"%s\"", err.msg, what);
	ck_assert_int_eq(count_entries(root_path("")), before_root);
	if (before_dir >= 0)
		ck_assert_int_eq(count_entries(root_path(dir)), before_dir);
	assert_no_staging(dir);
	assert_outside_untouched();
}

/* Chains of links that stay inside when read lexically, but lead out of
 * the root for a reader following them on the host. */
START_TEST(test_reject_link_chains)
{
	const struct ent dot[] = {
	    {"a", 'l', ".", 0777, 0, 0},
	    {"b", 'l', "a/..", 0777, 0, 0},
	};
	const struct ent climb[] = {
	    {"a", 'l', ".", 0777, 0, 0},
	    {"b", 'l', "a/..", 0777, 0, 0},
	    {"c", 'l', "b/../..", 0777, 0, 0},
	};
	/* A second name of a symlink, at a place where its target leads out. */
	const struct ent moved[] = {
	    {"d/e/l", 'l', "../../f", 0777, 0, 0},
	    {"h", 'h', "d/e/l", 0, 0, 0},
	};
	/* Through links the box planted: up -> ../../../../.. (setup), and a
	 * chain a2 -> ., b2 -> a2/.. made here. */
	const struct ent through_up[] = {{"x", 'l', "up/etc", 0777, 0, 0}};
	const struct ent through_chain[] = {{"x", 'l', "b2", 0777, 0, 0}};
	const struct ent through_abs[] = {{"x", 'l', "/../etc", 0777, 0, 0}};

	ck_assert_int_eq(symlink(".", root_path("a2")), 0);
	ck_assert_int_eq(symlink("a2/..", root_path("b2")), 0);
	push_refused("", dot, ELEMENTSOF(dot),
		     "entry 2 (b): symlink to a/.. leads outside the box root: goes back up");
	push_refused("", climb, ELEMENTSOF(climb), "entry 2 (b): symlink to a/..");
	push_refused("", moved, ELEMENTSOF(moved),
		     "entry 2 (h): symlink to ../../f leads outside the box root: climbs above");
	push_refused("", through_up, 1,
		     "entry 1 (x): symlink to up/etc leads outside the box root: climbs above it "
		     "(through up -> ../../../../..)");
	push_refused("", through_chain, 1,
		     "entry 1 (x): symlink to b2 leads outside the box root: "
		     "climbs above it (through a2 -> .)");
	push_refused("", through_abs, 1, "climbs above it");
	/* One level down, b -> a/.. would stay inside, but is still refused:
	 * a later a -> .. would make it lead out. */
	push_refused("dst", dot, ELEMENTSOF(dot), "only leading .. are allowed");
}
END_TEST

/* A link's real place: a staged directory merges through the box's own
 * directory link, so deep/ is a/b/c. */
START_TEST(test_links_judged_at_their_real_place)
{
	const struct ent in[] = {{"deep/ok", 'l', "../../../y", 0777, 0, 0}};
	const struct ent out[] = {{"deep/out", 'l', "../../../../y", 0777, 0, 0}};
	pd_error err = {0};
	char target[64];
	ssize_t n;

	ck_assert_int_eq(mkdir(root_path("a"), 0755), 0);
	ck_assert_int_eq(mkdir(root_path("a/b"), 0755), 0);
	ck_assert_int_eq(mkdir(root_path("a/b/c"), 0755), 0);
	ck_assert_int_eq(symlink("a/b/c", root_path("deep")), 0);
	ck_assert_msg(extract("", in, 1, &err) == 0, "%s", err.msg);
	n = readlink(root_path("a/b/c/ok"), target, sizeof(target) - 1);
	ck_assert_int_gt(n, 0);
	push_refused("", out, 1, "entry 1 (deep/out)");
	/* DIR itself reached through a link: /deep is a/b/c. */
	ck_assert_msg(extract("deep", (const struct ent[]){{"x", 'l', "../../../y", 0777, 0, 0}}, 1,
			      &err) == 0,
		      "%s", err.msg);
	push_refused("deep", (const struct ent[]){{"x", 'l', "../../../../y", 0777, 0, 0}}, 1,
		     "climbs above it");
}
END_TEST

/* A listing of everything below root/rel (names, types, link targets,
 * inodes), to tell that a refused push changed nothing. */
static char *listing(const char *rel)
{
	char cmd[1024], *out = NULL;
	size_t len = 0;
	FILE *f, *mem = open_memstream(&out, &len);

	snprintf(cmd, sizeof(cmd), "cd '%s' && find . -printf '%%P %%y %%l %%i %%m\\n' | sort",
		 root_path(rel));
	f = popen(cmd, "r");
	ck_assert_ptr_nonnull(f);
	ck_assert_ptr_nonnull(mem);
	for (int c; (c = fgetc(f)) != EOF;)
		fputc(c, mem);
	ck_assert_int_eq(pclose(f), 0);
	fclose(mem);
	return out;
}

/* Pushes ents into DIR and expects -EPERM with `what` in the message and
 * nothing below the root changed. */
static void push_refused_whole(const char *dir, const struct ent *ents, size_t n, const char *what)
{
	_cleanup_free_ char *before = listing("");
	_cleanup_free_ char *after = NULL;
	pd_error err = {0};
	int r = extract(dir, ents, n, &err);

	fprintf(stderr, "# %s\n", err.msg);
	ck_assert_msg(r == -EPERM, "got %d (%s), want -EPERM", r, err.msg);
	ck_assert_msg(strstr(err.msg, what), "message \"%s\" lacks \"%s\"", err.msg, what);
	after = listing("");
	ck_assert_str_eq(after, before);
	ck_assert(!links_lead_out(root_path("opt"), tmp_path("root")));
	assert_outside_untouched();
}

/* Push 1 leaves opt/e/ and opt/d -> e. Push 2 writes e/sub -> a/b/c/d2 and
 * d/sub/L -> ../../../../../../etc/shadow: judged through d -> e and then
 * e/sub (as a/b/c/d2), L would sit six levels down; merged entry by entry
 * it lands at opt/e/sub/L, which climbs above the root. Two of the
 * archive's subtrees land in one directory: refused, in either order. */
START_TEST(test_push_two_subtrees_into_one_directory)
{
	const struct ent first[] = {{"e/", 'd', NULL, 0755, 0, 0}, {"d", 'l', "e", 0777, 0, 0}};
	const struct ent second[] = {
	    {"e/sub", 'l', "a/b/c/d2", 0777, 0, 0},
	    {"d/sub/L", 'l', "../../../../../../etc/shadow", 0777, 0, 0},
	};
	const struct ent reversed[] = {second[1], second[0]};
	pd_error err = {0};

	ck_assert_msg(extract("opt", first, ELEMENTSOF(first), &err) == 0, "%s", err.msg);
	push_refused_whole("opt", second, ELEMENTSOF(second), "the archive also writes");
	push_refused_whole("opt", reversed, ELEMENTSOF(reversed), "the archive also writes");
	/* Through the link alone it is fine: d/x lands in e/. */
	ck_assert_msg(
	    extract("opt", (const struct ent[]){{"d/x", 'f', "x", 0644, -1, 0}}, 1, &err) == 0,
	    "%s", err.msg);
	ck_assert_str_eq(slurp(root_path("opt/e/x")), "x");
}
END_TEST

/* The box has opt/e/x/, g -> e and d -> g/x. The archive replaces g by a
 * link to h/i/j/k and puts d/L -> ../../../../../../etc: judged through the
 * archive's own g, L would sit six levels down; d merges into opt/e/x, three
 * levels down, where L leads out. A directory merging through a link goes
 * where the link led before the push: L is judged there. */
START_TEST(test_push_link_reached_through_a_replaced_link)
{
	const struct ent ents[] = {
	    {"g", 'l', "h/i/j/k", 0777, 0, 0},
	    {"d/L", 'l', "../../../../../../etc", 0777, 0, 0},
	};

	ck_assert_int_eq(mkdir(root_path("opt"), 0755), 0);
	ck_assert_int_eq(mkdir(root_path("opt/e"), 0755), 0);
	ck_assert_int_eq(mkdir(root_path("opt/e/x"), 0755), 0);
	ck_assert_int_eq(symlink("e", root_path("opt/g")), 0);
	ck_assert_int_eq(symlink("g/x", root_path("opt/d")), 0);
	push_refused_whole("opt", ents, ELEMENTSOF(ents), "entry 2 (d/L): symlink to");
}
END_TEST

/* A directory link into the target itself (d -> .) would make d/x and x
 * one file: refused. */
START_TEST(test_push_link_to_the_target_itself)
{
	const struct ent ents[] = {{"d/x", 'f', "1", 0644, -1, 0}, {"x", 'f', "2", 0644, -1, 0}};

	ck_assert_int_eq(mkdir(root_path("opt"), 0755), 0);
	ck_assert_int_eq(symlink(".", root_path("opt/d")), 0);
	push_refused_whole("opt", ents, ELEMENTSOF(ents), "the archive also writes");
}
END_TEST

/* Cases the shape rule (.. only at the start) lets through and only the
 * walk catches: each link's target reads as inside from where its name
 * says it is. */
START_TEST(test_links_only_the_walk_catches)
{
	/* k -> .. in the box: k/l/L sits in root/l, where ../../etc climbs
	 * out; read from opt/k/l it would be opt/etc. */
	const struct ent through_target_link[] = {{"k/l/L", 'l', "../../etc", 0777, 0, 0}};
	/* w -> ../.. in the box (it climbs above opt's parent): x -> w/y. */
	const struct ent through_climbing_link[] = {{"x", 'l', "w/y", 0777, 0, 0}};
	/* A chain: the archive's p/q/r -> ../../s/v and s -> t/v, each read
	 * from its own place inside, and the box's t -> ../../.. in opt/deep. */
	const struct ent chain[] = {
	    {"p/q/r", 'l', "../../s/v", 0777, 0, 0},
	    {"s", 'l', "t/v", 0777, 0, 0},
	};
	pd_error err = {0};

	ck_assert_int_eq(mkdir(root_path("opt"), 0755), 0);
	ck_assert_int_eq(symlink("..", root_path("opt/k")), 0);
	ck_assert_int_eq(symlink("../..", root_path("opt/w")), 0);
	push_refused("opt", through_target_link, 1,
		     "entry 1 (k/l/L): symlink to ../../etc leads outside the box root: climbs "
		     "above it");
	push_refused("opt", through_climbing_link, 1,
		     "entry 1 (x): symlink to w/y leads outside the box root: climbs above it "
		     "(through opt/w -> ../..)");
	ck_assert_int_eq(mkdir(root_path("opt/deep"), 0755), 0);
	ck_assert_int_eq(symlink("../../..", root_path("opt/deep/t")), 0);
	push_refused("opt/deep", chain, ELEMENTSOF(chain),
		     "entry 1 (p/q/r): symlink to ../../s/v leads outside the box root: climbs "
		     "above it (through opt/deep/t -> ../../..)");
	/* One level down, t leads to the root: the chain is inside. */
	ck_assert_int_eq(mkdir(root_path("opt/deep/er"), 0755), 0);
	ck_assert_int_eq(symlink("../../..", root_path("opt/deep/er/t")), 0);
	ck_assert_msg(extract("opt/deep/er", chain, ELEMENTSOF(chain), &err) == 0, "%s", err.msg);
}
END_TEST

/* Outside a box root (a pull's target), absolute targets lead out. */
START_TEST(test_reject_absolute_links_in_a_plain_directory)
{
	const struct ent ents[] = {{"ok", 'f', "x", 0644, -1, 0}, {"x", 'l', "/etc", 0777, 0, 0}};
	struct tar_limits lim = TAR_LIMITS_INIT;
	pd_error err = {0};

	ck_assert_int_eq(extract_lim("new", ents, 2, &lim, NULL, &err), -EPERM);
	ck_assert_str_eq(err.msg, "entry 2 (x): symlink to /etc leads outside the target "
				  "directory: it is absolute");
	ck_assert(!exists(root_path("new")));
}
END_TEST

struct skips {
	char names[16][64];
	int n;
};

static void on_skip(void *userdata, const char *name, const char *why)
{
	struct skips *s = userdata;

	fprintf(stderr, "# skipped %s: %s\n", name, why);
	if (s->n < 16)
		snprintf(s->names[s->n++], sizeof(s->names[0]), "%s", name);
}

static bool skipped(const struct skips *s, const char *name)
{
	for (int i = 0; i < s->n; i++)
		if (strcmp(s->names[i], name) == 0)
			return true;
	return false;
}

/* A pull's rules: what is not written is skipped and reported, the rest
 * lands; no setuid bit, owners only when asked. */
START_TEST(test_skip_refused_entries)
{
	const struct ent ents[] = {
	    {"ok", 'f', "fine", 0644, -1, 0},	   {"suid", 'f', "#!/bin/sh\n", 06755, -1, 0},
	    {"null", 'c', NULL, 0666, 0, 0},	   {"fifo", 'p', NULL, 0600, 0, 0},
	    {"etc", 'l', "/etc", 0777, 0, 0},	   {"up", 'l', "..", 0777, 0, 0},
	    {"a", 'l', ".", 0777, 0, 0},	   {"b", 'l', "a/..", 0777, 0, 0},
	    {"pw", 'h', "/etc/passwd", 0, 0, 0},   {"etc/passwd", 'f', "mine", 0644, -1, 0},
	    {"sub/rel", 'l', "../ok", 0777, 0, 0},
	};
	const char *gone[] = {"null", "fifo", "etc", "up", "b", "pw"};
	struct tar_extract_hooks hooks = {0};
	struct tar_limits lim = TAR_LIMITS_INIT;
	struct tar_result res = {0};
	struct skips sk = {0};
	pd_error err = {0};
	struct stat st;
	int fd = build(ents, ELEMENTSOF(ents));
	int r, tfd;

	/* The target is the root, as in a pull. */
	ck_assert_int_eq(mkdir(root_path("pulled"), 0755), 0);
	tfd = open(root_path("pulled"), O_PATH | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(tfd, 0);
	hooks.on_skip = on_skip;
	hooks.userdata = &sk;
	lim.flags = TAR_SKIP_REFUSED;
	r = tarsafe_extract_ex(tfd, "", fd, &lim, &hooks, &res, &err);
	close(fd);
	close(tfd);
	ck_assert_msg(r == 0, "%s", err.msg);
	ck_assert_int_eq(res.skipped, ELEMENTSOF(gone));
	ck_assert_int_eq(sk.n, (int)ELEMENTSOF(gone));
	for (size_t i = 0; i < ELEMENTSOF(gone); i++)
		ck_assert_msg(skipped(&sk, gone[i]), "%s not reported", gone[i]);
	ck_assert(!exists(root_path("pulled/null")));
	ck_assert(!exists(root_path("pulled/fifo")));
	ck_assert(!exists(root_path("pulled/up")));
	ck_assert(!exists(root_path("pulled/b")));
	ck_assert(!exists(root_path("pulled/pw")));
	ck_assert_str_eq(slurp(root_path("pulled/ok")), "fine");
	/* etc was skipped as a link, so etc/passwd is a file of a real
	 * directory inside the target. */
	ck_assert_int_eq(lstat(root_path("pulled/etc"), &st), 0);
	ck_assert(S_ISDIR(st.st_mode));
	ck_assert_str_eq(slurp(root_path("pulled/etc/passwd")), "mine");
	ck_assert_int_eq(lstat(root_path("pulled/a"), &st), 0);
	ck_assert(S_ISLNK(st.st_mode));
	ck_assert_int_eq(lstat(root_path("pulled/sub/rel"), &st), 0);
	ck_assert(S_ISLNK(st.st_mode));
	ck_assert_int_eq(stat(root_path("pulled/suid"), &st), 0);
	ck_assert_int_eq(st.st_mode & 07777, 0755);
	ck_assert_int_eq(st.st_uid, geteuid());
	assert_no_staging("pulled");
	assert_outside_untouched();
}
END_TEST

START_TEST(test_keep_owners)
{
	const struct ent ents[] = {{"d/", 'd', NULL, 02775, 0, 0}, {"d/f", 'f', "x", 04755, -1, 0}};
	struct tar_limits lim = TAR_LIMITS_INIT;
	struct archive *a = archive_write_new();
	int fd = memfd_create("owners", MFD_CLOEXEC);
	pd_error err = {0};
	struct stat st;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(archive_write_set_format_pax_restricted(a), ARCHIVE_OK);
	ck_assert_int_eq(archive_write_open_fd(a, fd), ARCHIVE_OK);
	for (size_t i = 0; i < ELEMENTSOF(ents); i++) {
		struct archive_entry *e = archive_entry_new();
		archive_entry_set_pathname(e, ents[i].name);
		archive_entry_set_filetype(e, ents[i].type == 'd' ? AE_IFDIR : AE_IFREG);
		archive_entry_set_perm(e, ents[i].mode);
		archive_entry_set_uid(e, 1234);
		archive_entry_set_gid(e, 2345);
		archive_entry_set_size(e, ents[i].type == 'f' ? 1 : 0);
		ck_assert_int_eq(archive_write_header(a, e), ARCHIVE_OK);
		if (ents[i].type == 'f')
			ck_assert_int_eq(archive_write_data(a, "x", 1), 1);
		archive_entry_free(e);
	}
	ck_assert_int_eq(archive_write_close(a), ARCHIVE_OK);
	archive_write_free(a);

	ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);
	ck_assert_msg(tarsafe_extract(rootfd, "mine", fd, &lim, NULL, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(stat(root_path("mine/d/f"), &st), 0);
	ck_assert_int_eq(st.st_uid, 0);
	ck_assert_int_eq(st.st_mode & 07777, 0755);

	lim.flags = TAR_KEEP_OWNERS;
	ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);
	ck_assert_msg(tarsafe_extract(rootfd, "theirs", fd, &lim, NULL, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(stat(root_path("theirs/d/f"), &st), 0);
	ck_assert_int_eq(st.st_uid, 1234);
	ck_assert_int_eq(st.st_gid, 2345);
	ck_assert_int_eq(st.st_mode & 07777, 0755); /* never setuid, even then */
	ck_assert_int_eq(stat(root_path("theirs/d"), &st), 0);
	ck_assert_int_eq(st.st_uid, 1234);
	ck_assert_int_eq(st.st_mode & 07777, 0775);
	close(fd);
}
END_TEST

/* What an archive expands to, checked against the room left under a disk
 * limit before anything is written: a file takes its size in 4 KiB blocks
 * (at least one), a hard link only its name. */
START_TEST(test_disk_room)
{
	enum { LINKS = 300 };
	struct ent ents[LINKS + 1];
	const struct ent over[] = {{"a", 'f', "123456", 0644, -1, 0},
				   {"b", 'f', "123456", 0644, -1, 0}};
	struct tar_limits lim = box_limits();
	struct tar_result res = {0};
	char names[LINKS][16];
	pd_error err = {0};
	struct stat st;

	lim.disk_limited = true;
	lim.disk_room = 6000;
	ck_assert_int_eq(extract_lim("new", over, 2, &lim, NULL, &err), -ENOSPC);
	ck_assert_str_eq(err.msg, "entry 2 (b): takes 4096 bytes on disk, 8192 in all, over the "
				  "6000 bytes left under the disk limit");
	ck_assert(!exists(root_path("new")));

	ents[0] = (struct ent){"a", 'f', "123456", 0644, -1, 0};
	for (int i = 0; i < LINKS; i++) {
		snprintf(names[i], sizeof(names[i]), "l%03d", i);
		ents[i + 1] = (struct ent){names[i], 'h', "a", 0, 0, 0};
	}
	/* 4096 for a, 4 + 64 for each name. */
	lim.disk_room = 4096 + LINKS * 68 - 1;
	ck_assert_int_eq(extract_lim("new", ents, LINKS + 1, &lim, &res, &err), -ENOSPC);
	ck_assert_msg(strstr(err.msg, "entry 301 (l299)"), "%s", err.msg);
	lim.disk_room++;
	ck_assert_msg(extract_lim("new", ents, LINKS + 1, &lim, &res, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(res.bytes, 6);
	ck_assert_int_eq(res.disk, lim.disk_room);
	ck_assert_int_eq(stat(root_path("new/l299"), &st), 0);
	ck_assert_int_eq(st.st_nlink, LINKS + 1);
}
END_TEST

START_TEST(test_limit_entries)
{
	const struct ent ents[] = {
	    {"a", 'f', "1", 0644, -1, 0},
	    {"b", 'f', "2", 0644, -1, 0},
	    {"c", 'f', "3", 0644, -1, 0},
	    {"d", 'f', "4", 0644, -1, 0},
	};
	struct tar_limits lim = TAR_LIMITS_INIT;
	pd_error err = {0};

	lim.max_entries = 3;
	ck_assert_int_eq(extract_lim("new", ents, 4, &lim, NULL, &err), -E2BIG);
	ck_assert_str_eq(err.msg, "entry 4 (d): more than 3 entries");
	ck_assert(!exists(root_path("new")));
	ck_assert_int_eq(extract_lim("new", ents, 3, &lim, NULL, &err), 0);
}
END_TEST

START_TEST(test_limit_bytes)
{
	const struct ent ents[] = {
	    {"a", 'f', "12345", 0644, -1, 0},
	    {"b", 'f', "123456", 0644, -1, 0},
	};
	struct tar_limits lim = TAR_LIMITS_INIT;
	struct tar_result res = {0};
	pd_error err = {0};

	lim.max_bytes = 10;
	ck_assert_int_eq(extract_lim("new", ents, 2, &lim, NULL, &err), -EFBIG);
	ck_assert_ptr_nonnull(strstr(err.msg, "entry 2 (b): 6 bytes exceed the limit of 10"));
	ck_assert(!exists(root_path("new")));
	lim.max_bytes = 11;
	ck_assert_int_eq(extract_lim("new", ents, 2, &lim, &res, &err), 0);
	ck_assert_int_eq(res.bytes, 11);
}
END_TEST

/* Every entry takes room on a disk, not only files' content: 20,000
 * directories and 20,000 links with 4,000-byte targets took 158 MB from a
 * 492 KiB archive. Each directory is charged a block, each link its target
 * rounded up to a block, each file at least a block. */
START_TEST(test_disk_room_counts_every_entry)
{
	enum { N = 200 };
	struct archive *a = archive_write_new();
	int fd = memfd_create("dirs", MFD_CLOEXEC);
	struct tar_limits lim = box_limits();
	char name[32], target[4001];
	pd_error err = {0};
	int r;

	memset(target, 't', sizeof(target) - 1);
	target[sizeof(target) - 1] = '\0';
	ck_assert_int_eq(archive_write_set_format_pax_restricted(a), ARCHIVE_OK);
	ck_assert_int_eq(archive_write_open_fd(a, fd), ARCHIVE_OK);
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "d%04d/", i);
		add_entry(a, &(struct ent){name, 'd', NULL, 0755, 0, 0});
		snprintf(name, sizeof(name), "l%04d", i);
		add_entry(a, &(struct ent){name, 'l', target, 0777, 0, 0});
	}
	ck_assert_int_eq(archive_write_close(a), ARCHIVE_OK);
	archive_write_free(a);

	/* 400 entries, no content: more than 1 MiB on a disk. */
	lim.disk_limited = true;
	lim.disk_room = 1 << 20;
	ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);
	r = tarsafe_extract(rootfd, "new", fd, &lim, NULL, &err);
	ck_assert_msg(r == -ENOSPC, "%d %s", r, err.msg);
	ck_assert(!exists(root_path("new")));
	fprintf(stderr, "# %s\n", err.msg);
	/* Empty files take a block each too. */
	{
		const struct ent empty[] = {{"a", 'f', "", 0644, -1, 0},
					    {"b", 'f', "", 0644, -1, 0}};
		lim.disk_room = 4096;
		ck_assert_int_eq(extract_lim("new", empty, 2, &lim, NULL, &err), -ENOSPC);
		lim.disk_room = 3 * 4096;
		ck_assert_msg(extract_lim("new", empty, 2, &lim, NULL, &err) == 0, "%s", err.msg);
	}
	lim.disk_room = 8 << 20;
	ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);
	ck_assert_msg(tarsafe_extract(rootfd, "new", fd, &lim, NULL, &err) == 0, "%s", err.msg);
	close(fd);
}
END_TEST

/* An archive without its end-of-archive marker (two zero blocks) was cut
 * between two entries: refused, nothing written. */
START_TEST(test_missing_end_marker_refused)
{
	const struct ent ents[] = {{"one", 'f', "1", 0644, -1, 0}, {"two/", 'd', NULL, 0755, 0, 0}};
	struct archive *a = archive_write_new();
	int fd = memfd_create("cut", MFD_CLOEXEC);
	pd_error err = {0};
	struct stat st;
	int r;

	ck_assert_int_eq(archive_write_set_format_pax_restricted(a), ARCHIVE_OK);
	ck_assert_int_eq(archive_write_set_bytes_in_last_block(a, 1), ARCHIVE_OK);
	ck_assert_int_eq(archive_write_open_fd(a, fd), ARCHIVE_OK);
	add_entry(a, &ents[0]);
	add_entry(a, &ents[1]);
	ck_assert_int_eq(archive_write_close(a), ARCHIVE_OK);
	archive_write_free(a);
	ck_assert_int_eq(fstat(fd, &st), 0);
	for (off_t cut = 512; cut <= 1024; cut += 512) {
		ck_assert_int_eq(ftruncate(fd, st.st_size - cut), 0);
		ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);
		r = tarsafe_extract(rootfd, "new", fd, NULL, NULL, &err);
		ck_assert_msg(r == -EINVAL, "%d %s", r, err.msg);
		ck_assert_str_eq(err.msg, "archive truncated after 2 entries: no end-of-archive "
					  "marker");
		ck_assert(!exists(root_path("new")));
	}
	close(fd);
}
END_TEST

/* A chain of 39 links and 99,000 links to its head, each leading 40 links
 * deep: the check took 29 s. Where a link leads is worked out once. */
START_TEST(test_links_to_a_long_chain_are_cheap)
{
	enum { CHAIN = 39, N = 99000 };
	struct archive *a = archive_write_new();
	int fd = memfd_create("chain", MFD_CLOEXEC);
	struct tar_result res = {0};
	struct timespec t0, t1;
	char name[32], target[32];
	pd_error err = {0};
	double secs;
	int r;

	ck_assert_int_eq(archive_write_set_format_pax_restricted(a), ARCHIVE_OK);
	ck_assert_int_eq(archive_write_add_filter_gzip(a), ARCHIVE_OK);
	ck_assert_int_eq(archive_write_open_fd(a, fd), ARCHIVE_OK);
	add_entry(a, &(struct ent){"t/", 'd', NULL, 0755, 0, 0});
	for (int i = 1; i <= CHAIN; i++) {
		snprintf(name, sizeof(name), "c%02d", i);
		if (i < CHAIN)
			snprintf(target, sizeof(target), "c%02d", i + 1);
		else
			snprintf(target, sizeof(target), "t");
		add_entry(a, &(struct ent){name, 'l', target, 0777, 0, 0});
	}
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "x/%05d", i);
		add_entry(a, &(struct ent){name, 'l', "../c01", 0777, 0, 0});
	}
	ck_assert_int_eq(archive_write_close(a), ARCHIVE_OK);
	archive_write_free(a);
	ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);

	clock_gettime(CLOCK_MONOTONIC, &t0);
	r = tarsafe_extract(rootfd, "chain", fd, NULL, &res, &err);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	fprintf(stderr, "# %d links to a chain of %d judged in %.2f s\n", N, CHAIN, secs);
	ck_assert_msg(r == 0, "%s", err.msg);
	ck_assert_int_eq(res.entries, 1 + CHAIN + N);
	/* The chain is followed once: each link costs its own lookup and its
	 * target's (the time above is mostly the filesystem making links). */
	fprintf(stderr, "# %llu lookups\n", (unsigned long long)res.lookups);
	ck_assert_uint_le(res.lookups, 2 * N + 10 * CHAIN);
	close(fd);
}
END_TEST

/* Links whose targets walk deep through the archive's directories, each
 * to a new name: the lookups to judge them are capped; past the cap the
 * archive is refused with a reason, never judged for minutes. */
START_TEST(test_link_check_is_capped)
{
	enum { DEPTH = 120, N = 40000 };
	struct archive *a = archive_write_new();
	int fd = memfd_create("deep", MFD_CLOEXEC);
	char *dir = malloc(DEPTH * 2 + 1), *target = malloc(DEPTH * 2 + 16), name[32];
	struct timespec t0, t1;
	pd_error err = {0};
	double secs;
	int r;

	ck_assert_ptr_nonnull(dir);
	ck_assert_ptr_nonnull(target);
	dir[0] = '\0';
	for (int i = 0; i < DEPTH; i++)
		strcat(dir, "d/");
	ck_assert_int_eq(archive_write_set_format_pax_restricted(a), ARCHIVE_OK);
	ck_assert_int_eq(archive_write_add_filter_gzip(a), ARCHIVE_OK);
	ck_assert_int_eq(archive_write_open_fd(a, fd), ARCHIVE_OK);
	add_entry(a, &(struct ent){dir, 'd', NULL, 0755, 0, 0});
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "l%05d", i);
		snprintf(target, DEPTH * 2 + 16, "%sx%05d", dir, i);
		add_entry(a, &(struct ent){name, 'l', target, 0777, 0, 0});
	}
	ck_assert_int_eq(archive_write_close(a), ARCHIVE_OK);
	archive_write_free(a);
	ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);

	clock_gettime(CLOCK_MONOTONIC, &t0);
	r = tarsafe_extract(rootfd, "deep", fd, NULL, NULL, &err);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	fprintf(stderr, "# %.2f s: %s\n", secs, err.msg);
	ck_assert_msg(r == -E2BIG, "%d %s", r, err.msg);
	ck_assert_msg(strstr(err.msg, "path lookups"), "%s", err.msg);
	ck_assert(!exists(root_path("deep")));
	free(dir);
	free(target);
	close(fd);
}
END_TEST

/* One depth limit for the creator and the extractor: what a pull of a box
 * sends, a pull takes. Deeper than it, the creator sends the next level
 * without descending further; the extractor skips those entries on a pull
 * (naming them) and refuses them in a push. */
START_TEST(test_one_depth_limit)
{
	char *path = malloc(8 * 300);
	int fd = memfd_create("deep", MFD_CLOEXEC);
	struct tar_extract_hooks hooks = {0};
	struct tar_limits lim = TAR_LIMITS_INIT;
	struct tar_result res = {0};
	struct skips sk = {0};
	pd_error err = {0};
	int r;

	ck_assert_ptr_nonnull(path);
	snprintf(path, 8 * 300, "%s", root_path("src"));
	ck_assert_int_eq(mkdir(path, 0755), 0);
	for (int i = 1; i <= 260; i++) {
		strcat(path, "/d");
		ck_assert_int_eq(mkdir(path, 0755), 0);
		if (i == 200 || i == 255 || i == 256 || i == 257 || i == 260) {
			size_t len = strlen(path);
			strcat(path, "/f");
			make_file(path, "x", 0644);
			path[len] = '\0';
		}
	}
	r = tarsafe_create(rootfd, "src", fd, &err);
	ck_assert_msg(r == 0, "%d %s", r, err.msg);

	/* A push refuses the entries past the limit. */
	ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);
	r = tarsafe_extract(rootfd, "push", fd, NULL, NULL, &err);
	ck_assert_msg(r == -ENAMETOOLONG, "%d %s", r, err.msg);
	ck_assert_msg(strstr(err.msg, "more than 256 levels"), "%s", err.msg);

	/* A pull skips them, and takes everything up to 256 levels. */
	hooks.on_skip = on_skip;
	hooks.userdata = &sk;
	lim.flags = TAR_SKIP_REFUSED;
	ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);
	r = tarsafe_extract_ex(rootfd, "pull", fd, &lim, &hooks, &res, &err);
	ck_assert_msg(r == 0, "%d %s", r, err.msg);
	ck_assert_int_eq(res.skipped, 2); /* level 257: d and f; nothing deeper was sent */
	snprintf(path, 8 * 300, "%s", root_path("pull"));
	for (int i = 1; i <= 200; i++)
		strcat(path, "/d");
	strcat(path, "/f");
	ck_assert_str_eq(slurp(path), "x");
	snprintf(path, 8 * 300, "%s", root_path("pull"));
	for (int i = 1; i <= 255; i++)
		strcat(path, "/d");
	strcat(path, "/f");
	ck_assert_str_eq(slurp(path), "x"); /* 256 levels */
	free(path);
	close(fd);
}
END_TEST

/* Keeps the first CAP bytes of what libarchive writes, then fails it: a
 * header announcing 1 TiB, followed by some zeros and the end of input. */
struct capture {
	char *buf;
	size_t len, cap;
};

static la_ssize_t capture_write(struct archive *a, void *data, const void *buf, size_t len)
{
	struct capture *c = data;

	if (c->len + len > c->cap)
		return -1;
	memcpy(c->buf + c->len, buf, len);
	c->len += len;
	return (la_ssize_t)len;
}

START_TEST(test_limit_huge_header_rejected_at_once)
{
	struct capture cap = {.buf = malloc(1 << 20), .cap = 1 << 20};
	struct archive *a = archive_write_new();
	struct archive_entry *e = archive_entry_new();
	int fd = memfd_create("huge", MFD_CLOEXEC);
	pd_error err = {0};
	struct timespec t0, t1;

	ck_assert_ptr_nonnull(cap.buf);
	ck_assert_int_eq(archive_write_set_format_pax_restricted(a), ARCHIVE_OK);
	ck_assert_int_eq(archive_write_open(a, &cap, NULL, capture_write, NULL), ARCHIVE_OK);
	archive_entry_set_pathname(e, "sparse-terabyte");
	archive_entry_set_filetype(e, AE_IFREG);
	archive_entry_set_perm(e, 0644);
	archive_entry_set_size(e, 1LL << 40);
	ck_assert_int_eq(archive_write_header(a, e), ARCHIVE_OK);
	archive_write_free(a); /* padding fails once cap is reached */
	archive_entry_free(e);
	ck_assert_int_gt(cap.len, 1024);
	ck_assert_int_eq(write_all(fd, cap.buf, cap.len), 0);
	ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);

	clock_gettime(CLOCK_MONOTONIC, &t0);
	ck_assert_msg(tarsafe_extract(rootfd, "big", fd, NULL, NULL, &err) == -EFBIG, "%s",
		      err.msg);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ck_assert_ptr_nonnull(strstr(err.msg, "entry 1 (sparse-terabyte): 1099511627776 bytes "
					      "exceed the limit of 8589934592 bytes"));
	ck_assert_int_lt(t1.tv_sec - t0.tv_sec, 5);
	ck_assert(!exists(root_path("big")));
	close(fd);
	free(cap.buf);
}
END_TEST

START_TEST(test_limit_sparse_terabyte)
{
	struct archive *a = archive_write_new();
	struct archive_entry *e = archive_entry_new();
	int fd = memfd_create("sparse", MFD_CLOEXEC);
	struct tar_limits lim = TAR_LIMITS_INIT;
	pd_error err = {0};
	struct stat st;

	/* A complete, valid and small archive of a 1 TiB file with one byte
	 * of data at its end. */
	ck_assert_int_eq(archive_write_set_format_pax(a), ARCHIVE_OK);
	ck_assert_int_eq(archive_write_open_fd(a, fd), ARCHIVE_OK);
	archive_entry_set_pathname(e, "sparse");
	archive_entry_set_filetype(e, AE_IFREG);
	archive_entry_set_perm(e, 0644);
	archive_entry_set_size(e, 1LL << 40);
	archive_entry_sparse_add_entry(e, (1LL << 40) - 1, 1);
	ck_assert_int_eq(archive_write_header(a, e), ARCHIVE_OK);
	ck_assert_int_eq(archive_write_data(a, "x", 1), 1);
	ck_assert_int_eq(archive_write_close(a), ARCHIVE_OK);
	archive_write_free(a);
	archive_entry_free(e);
	ck_assert_int_eq(fstat(fd, &st), 0);
	ck_assert_int_lt(st.st_size, 64 * 1024);

	ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);
	ck_assert_int_eq(tarsafe_extract(rootfd, "big", fd, NULL, NULL, &err), -EFBIG);
	ck_assert_ptr_nonnull(strstr(err.msg, "entry 1 (sparse): 1099511627776 bytes"));
	ck_assert(!exists(root_path("big")));

	/* Within the limit it is extracted sparse: one byte at the end. */
	lim.max_bytes = 1ULL << 41;
	ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);
	ck_assert_msg(tarsafe_extract(rootfd, "big", fd, &lim, NULL, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(stat(root_path("big/sparse"), &st), 0);
	ck_assert_int_eq(st.st_size, 1LL << 40);
	ck_assert_int_lt(st.st_blocks, 1024);
	close(fd);
}
END_TEST

START_TEST(test_bad_entry_after_good_ones_changes_nothing)
{
	const struct ent ents[] = {
	    {"one", 'f', "1", 0644, -1, 0},
	    {"sub/two", 'f', "2", 0644, -1, 0},
	    {"existing", 'f', "overwritten", 0644, -1, 0},
	    {"../escape", 'f', "bad", 0644, -1, 0},
	};
	pd_error err = {0};

	expect_rejected(ents, ELEMENTSOF(ents), -EINVAL, "entry 4 (../escape)");
	assert_no_staging("dst");
	/* A directory the call created for DIR is removed too. */
	ck_assert_int_eq(extract("made/by/push", ents, ELEMENTSOF(ents), &err), -EINVAL);
	ck_assert(!exists(root_path("made")));
}
END_TEST

START_TEST(test_truncated_archive_changes_nothing)
{
	const struct ent ents[] = {
	    {"one", 'f', "1", 0644, -1, 0},
	    {"two", 'f', "2", 0644, -1, 0},
	    {"big", 'f', NULL, 0644, 100000, 0},
	};
	char *zeros = calloc(1, 100000);
	struct archive *a = archive_write_new();
	int fd = memfd_create("trunc", MFD_CLOEXEC);
	pd_error err = {0};
	struct stat st;
	int r;

	ck_assert_int_eq(mkdir(root_path("dst"), 0755), 0);
	make_file(root_path("dst/existing"), "existing", 0644);
	ck_assert_int_eq(archive_write_set_format_pax_restricted(a), ARCHIVE_OK);
	ck_assert_int_eq(archive_write_open_fd(a, fd), ARCHIVE_OK);
	add_entry(a, &ents[0]);
	add_entry(a, &ents[1]);
	add_entry(a, &ents[2]);
	ck_assert_int_eq(archive_write_data(a, zeros, 100000), 100000);
	ck_assert_int_eq(archive_write_close(a), ARCHIVE_OK);
	archive_write_free(a);
	free(zeros);
	ck_assert_int_eq(fstat(fd, &st), 0);
	ck_assert_int_eq(ftruncate(fd, st.st_size / 2), 0);
	ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);

	r = tarsafe_extract(rootfd, "dst", fd, NULL, NULL, &err);
	ck_assert_msg(r == -EINVAL, "%d %s", r, err.msg);
	ck_assert_ptr_nonnull(strstr(err.msg, "entry 3 (big)"));
	ck_assert_int_eq(count_entries(root_path("dst")), 1);
	ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);
	ck_assert_int_eq(tarsafe_extract(rootfd, "new", fd, NULL, NULL, &err), -EINVAL);
	ck_assert(!exists(root_path("new")));
	close(fd);
}
END_TEST

START_TEST(test_garbage_rejected)
{
	int fd = memfd_create("garbage", MFD_CLOEXEC);
	char junk[4096];
	pd_error err = {0};

	memset(junk, 'z', sizeof(junk));
	ck_assert_int_eq(write_all(fd, junk, sizeof(junk)), 0);
	ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);
	ck_assert_int_eq(tarsafe_extract(rootfd, "new", fd, NULL, NULL, &err), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err.msg, "not a tar archive"));
	ck_assert(!exists(root_path("new")));
	ck_assert_int_eq(tarsafe_extract(rootfd, "../x", fd, NULL, NULL, &err), -EINVAL);
	close(fd);
}
END_TEST

/* ---- pull ---- */

struct got {
	char name[128];
	mode_t type;
	char link[128];	    /* symlink target */
	char hardlink[128]; /* hard link target */
	char data[64];
};

/* Reads the stream in fd (from its start) into got[], returns the count. */
static int read_back(int fd, struct got *got, int max)
{
	struct archive *a = archive_read_new();
	struct archive_entry *e;
	int n = 0;

	ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);
	archive_read_support_format_tar(a);
	ck_assert_int_eq(archive_read_open_fd(a, fd, 65536), ARCHIVE_OK);
	while (archive_read_next_header(a, &e) == ARCHIVE_OK) {
		struct got *g = &got[n++];
		ssize_t len;

		ck_assert_int_le(n, max);
		memset(g, 0, sizeof(*g));
		snprintf(g->name, sizeof(g->name), "%s", archive_entry_pathname(e));
		g->type = archive_entry_filetype(e);
		if (archive_entry_symlink(e))
			snprintf(g->link, sizeof(g->link), "%s", archive_entry_symlink(e));
		if (archive_entry_hardlink(e))
			snprintf(g->hardlink, sizeof(g->hardlink), "%s", archive_entry_hardlink(e));
		len = archive_read_data(a, g->data, sizeof(g->data) - 1);
		ck_assert_int_ge(len, 0);
	}
	ck_assert_int_eq(archive_read_free(a), ARCHIVE_OK);
	return n;
}

static const struct got *find(const struct got *got, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (strcmp(got[i].name, name) == 0)
			return &got[i];
	return NULL;
}

START_TEST(test_create_tree)
{
	int fd = memfd_create("pull", MFD_CLOEXEC);
	struct got got[16];
	const struct got *g;
	pd_error err = {0};
	int n;

	ck_assert_int_eq(mkdir(root_path("src"), 0755), 0);
	ck_assert_int_eq(mkdir(root_path("src/sub"), 0700), 0);
	make_file(root_path("src/a"), "alpha", 0644);
	make_file(root_path("src/sub/b"), "beta", 0600);
	ck_assert_int_eq(link(root_path("src/a"), root_path("src/sub/hard")), 0);
	ck_assert_int_eq(symlink("/etc/passwd", root_path("src/passwd")), 0);
	ck_assert_int_eq(symlink(tmp_path("outside"), root_path("src/sub/evil")), 0);
	ck_assert_int_eq(mkfifo(root_path("src/fifo"), 0600), 0);
	ck_assert_int_eq(mknod(root_path("src/null"), S_IFCHR | 0666, makedev(1, 3)), 0);
	make_file(tmp_path("outside/secret"), "secret", 0644);

	ck_assert_msg(tarsafe_create(rootfd, "src", fd, &err) == 0, "%s", err.msg);
	n = read_back(fd, got, 16);
	ck_assert_int_eq(n, 6); /* a, sub/, sub/b, sub/hard, passwd, sub/evil */
	ck_assert_ptr_nonnull(g = find(got, n, "a"));
	ck_assert(g->type == AE_IFREG || g->hardlink[0]);
	ck_assert_ptr_nonnull(g = find(got, n, "sub/"));
	ck_assert(g->type == AE_IFDIR);
	ck_assert_ptr_nonnull(g = find(got, n, "sub/b"));
	ck_assert_str_eq(g->data, "beta");
	ck_assert_ptr_nonnull(g = find(got, n, "passwd"));
	ck_assert(g->type == AE_IFLNK);
	ck_assert_str_eq(g->link, "/etc/passwd");
	ck_assert_str_eq(g->data, "");
	ck_assert_ptr_nonnull(g = find(got, n, "sub/evil"));
	ck_assert(g->type == AE_IFLNK);
	/* One of a and sub/hard carries the data, the other links to it. */
	{
		const struct got *x = find(got, n, "a"), *y = find(got, n, "sub/hard");
		ck_assert_ptr_nonnull(y);
		if (x->hardlink[0]) {
			ck_assert_str_eq(x->hardlink, "sub/hard");
			ck_assert_str_eq(y->data, "alpha");
		} else {
			ck_assert_str_eq(y->hardlink, "a");
			ck_assert_str_eq(x->data, "alpha");
		}
	}
	ck_assert_ptr_null(find(got, n, "fifo"));
	ck_assert_ptr_null(find(got, n, "null"));
	for (int i = 0; i < n; i++)
		ck_assert_ptr_null(strstr(got[i].data, "secret"));
	close(fd);
}
END_TEST

START_TEST(test_create_single_file_and_planted_links)
{
	int fd = memfd_create("pull", MFD_CLOEXEC);
	struct got got[4];
	pd_error err = {0};
	int n;

	ck_assert_int_eq(mkdir(root_path("etc"), 0755), 0);
	make_file(root_path("etc/passwd"), "box passwd", 0644);
	make_file(tmp_path("outside/secret"), "secret", 0644);

	/* root/abs -> /etc is the box's /etc. */
	ck_assert_msg(tarsafe_create(rootfd, "abs/passwd", fd, &err) == 0, "%s", err.msg);
	n = read_back(fd, got, 4);
	ck_assert_int_eq(n, 1);
	ck_assert_str_eq(got[0].name, "passwd");
	ck_assert_str_eq(got[0].data, "box passwd");

	ck_assert_int_eq(tarsafe_create(rootfd, "evil/secret", fd, &err), -ENOENT);
	ck_assert_int_eq(tarsafe_create(rootfd, "rel/secret", fd, &err), -ENOENT);
	ck_assert_int_eq(tarsafe_create(rootfd, "../outside/secret", fd, &err), -EINVAL);
	ck_assert_int_eq(tarsafe_create(rootfd, "missing", fd, &err), -ENOENT);
	ck_assert_int_eq(mkfifo(root_path("fifo"), 0600), 0);
	ck_assert_int_eq(tarsafe_create(rootfd, "fifo", fd, &err), -EPERM);
	close(fd);
}
END_TEST

START_TEST(test_create_then_extract_round_trip)
{
	int fd = memfd_create("pull", MFD_CLOEXEC);
	pd_error err = {0};
	struct stat st1, st2;

	ck_assert_int_eq(mkdir(root_path("src"), 0755), 0);
	ck_assert_int_eq(mkdir(root_path("src/d"), 0711), 0);
	make_file(root_path("src/d/f"), "content", 0640);
	ck_assert_int_eq(link(root_path("src/d/f"), root_path("src/g")), 0);
	ck_assert_int_eq(symlink("d/f", root_path("src/l")), 0);

	ck_assert_int_eq(tarsafe_create(rootfd, "src", fd, &err), 0);
	ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);
	ck_assert_msg(tarsafe_extract(rootfd, "copy", fd, NULL, NULL, &err) == 0, "%s", err.msg);
	ck_assert_str_eq(slurp(root_path("copy/d/f")), "content");
	ck_assert_str_eq(slurp(root_path("copy/l")), "content");
	ck_assert_int_eq(stat(root_path("copy/d"), &st1), 0);
	ck_assert_int_eq(st1.st_mode & 07777, 0711);
	ck_assert_int_eq(stat(root_path("copy/d/f"), &st1), 0);
	ck_assert_int_eq(stat(root_path("copy/g"), &st2), 0);
	ck_assert_int_eq(st1.st_ino, st2.st_ino);
	ck_assert_int_eq(st1.st_mode & 07777, 0640);
	close(fd);
}
END_TEST

/* Runs fn in a child that exits normally: under ASan, LeakSanitizer then
 * checks it at exit and makes the exit status non-zero on a leak. */
static int exit_status_of(void (*fn)(void))
{
	int status;
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		fn();
		exit(0);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int fail_second_file(void *userdata, uint64_t size, pd_error *err)
{
	int *n = userdata;

	(void)size;
	return ++*n == 2 ? pd_error_set(err, -EIO, "cannot read the second file") : 0;
}

/* A stream that a hook ends with an error (as an export cancelled). */
static void create_failing_hook(void)
{
	int n = 0, fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	struct tar_create_hooks hooks = {.file_end = fail_second_file, .userdata = &n};
	pd_error err = {0};

	if (fd < 0 || tarsafe_create_ex(rootfd, "src", fd, &hooks, &err) != -EIO)
		_exit(99);
	close(fd);
}

START_TEST(test_create_write_error)
{
	int p[2];
	pd_error err = {0};

	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	close(p[0]);
	make_file(root_path("f"), "data", 0644);
	ck_assert_int_eq(tarsafe_create(rootfd, "f", p[1], &err), -EPIPE);
	close(p[1]);
	/* Nothing leaks when a stream fails (exit status 0 under ASan). */
	ck_assert_int_eq(mkdir(root_path("src"), 0755), 0);
	make_file(root_path("src/a"), "first", 0644);
	make_file(root_path("src/b"), "second", 0644);
	ck_assert_int_eq(exit_status_of(create_failing_hook), 0);
}
END_TEST

/* A stream that ends with an error has no end-of-archive marker (a reader
 * must not take it for a whole archive), and nothing is leaked. */

START_TEST(test_create_error_has_no_end_marker)
{
	struct tar_create_hooks hooks = {.file_end = fail_second_file};
	int fd = memfd_create("cut", MFD_CLOEXEC), n = 0;
	unsigned char tail[1024];
	static char big[30000];
	pd_error err = {0};
	struct stat st;
	bool zeros = true;

	hooks.userdata = &n;
	ck_assert_int_eq(mkdir(root_path("src"), 0755), 0);
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	make_file(root_path("src/a"), big, 0644); /* past libarchive's 10 KiB block */
	make_file(root_path("src/b"), "second", 0644);
	ck_assert_int_eq(tarsafe_create_ex(rootfd, "src", fd, &hooks, &err), -EIO);
	ck_assert_int_eq(fstat(fd, &st), 0);
	ck_assert_int_ge(st.st_size, (off_t)sizeof(tail));
	ck_assert_int_eq(pread(fd, tail, sizeof(tail), st.st_size - (off_t)sizeof(tail)),
			 (ssize_t)sizeof(tail));
	for (size_t i = 0; i < sizeof(tail); i++)
		zeros = zeros && tail[i] == 0;
	ck_assert_msg(!zeros, "the cut stream ends with an end-of-archive marker");
	close(fd);
}
END_TEST

/* tarsafe_create() of one path of the root into a pipe whose reader is
 * gone, in a thread of its own, as the daemon's exports are, so that no
 * stale pointer on this stack hides a leak (LSan). Returns its result. */
struct closed_pipe_run {
	const char *path;
	int r;
};

static void *create_to_closed_pipe(void *arg)
{
	struct closed_pipe_run *run = arg;
	pd_error err = {0};
	int p[2];

	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	close(p[0]);
	run->r = tarsafe_create(rootfd, run->path, p[1], &err);
	close(p[1]);
	return NULL;
}

static int create_in_thread_to_closed_pipe(const char *path)
{
	struct closed_pipe_run run = {.path = path};
	pthread_t th;

	ck_assert_int_eq(pthread_create(&th, NULL, create_to_closed_pipe, &run), 0);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	return run.r;
}

/* A write that fails mid-stream (more than libarchive's 10 KiB block) fails
 * the archive: its buffers are freed all the same. */
START_TEST(test_create_write_error_mid_stream)
{
	_cleanup_free_ char *big = malloc(1 << 20);

	ck_assert_ptr_nonnull(big);
	memset(big, 'x', (1 << 20) - 1);
	big[(1 << 20) - 1] = '\0';
	make_file(root_path("big"), big, 0644);
	ck_assert_int_eq(create_in_thread_to_closed_pipe("big"), -EPIPE);
}
END_TEST

/* A write that fails while libarchive writes a header (a tree of empty
 * files: headers only) leaves the archive in its fatal state, where
 * archive_write_free() skips the close that frees the block buffer; the
 * writer never fails towards libarchive, so nothing leaks (an export whose
 * reader went away, or a tar pull whose client did). */
START_TEST(test_create_write_error_in_a_header)
{
	char name[64];

	ck_assert_int_eq(mkdir(root_path("many"), 0755), 0);
	for (int i = 0; i < 200; i++) {
		snprintf(name, sizeof(name), "many/f%03d", i);
		make_file(root_path(name), "", 0644);
	}
	ck_assert_int_eq(create_in_thread_to_closed_pipe("many"), -EPIPE);
}
END_TEST

/* ---- plain file operations ---- */

START_TEST(test_open_resolves_inside)
{
	char buf[32];
	ssize_t n;
	int fd;

	ck_assert_int_eq(mkdir(root_path("etc"), 0755), 0);
	make_file(root_path("etc/passwd"), "box", 0644);
	fd = tarsafe_open(rootfd, "abs/passwd", O_RDONLY, 0);
	ck_assert_int_ge(fd, 0);
	n = read(fd, buf, sizeof(buf));
	ck_assert_int_eq(n, 3);
	close(fd);
	fd = tarsafe_open(rootfd, "/etc/passwd", O_RDONLY, 0);
	ck_assert_int_ge(fd, 0);
	close(fd);
	fd = tarsafe_open(rootfd, "", O_RDONLY | O_DIRECTORY, 0);
	ck_assert_int_ge(fd, 0);
	close(fd);

	ck_assert_int_eq(tarsafe_open(rootfd, "../outside/x", O_RDONLY, 0), -EINVAL);
	ck_assert_int_eq(tarsafe_open(rootfd, "evil/x", O_WRONLY | O_CREAT, 0644), -ENOENT);
	ck_assert_int_eq(tarsafe_open(rootfd, "rel/x", O_WRONLY | O_CREAT, 0644), -ENOENT);
	/* Never through a link at the last component when creating. */
	ck_assert_int_eq(tarsafe_open(rootfd, "evil", O_WRONLY | O_CREAT, 0644), -ELOOP);
	ck_assert_int_eq(tarsafe_open(rootfd, "evil", O_WRONLY | O_CREAT | O_EXCL, 0644), -EEXIST);
	assert_outside_untouched();

	fd = tarsafe_open(rootfd, "new", O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write_all(fd, "abc", 3), 0);
	close(fd);
	fd = tarsafe_open(rootfd, "new", O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_str_eq(slurp(root_path("new")), "");
}
END_TEST

START_TEST(test_open_refuses_special_files)
{
	ck_assert_int_eq(mkfifo(root_path("fifo"), 0600), 0);
	ck_assert_int_eq(mknod(root_path("null"), S_IFCHR | 0666, makedev(1, 3)), 0);
	/* Would block forever if opened. */
	ck_assert_int_eq(tarsafe_open(rootfd, "fifo", O_RDONLY, 0), -EPERM);
	ck_assert_int_eq(tarsafe_open(rootfd, "null", O_RDONLY, 0), -EPERM);
	ck_assert_int_eq(tarsafe_open(rootfd, "null", O_WRONLY | O_CREAT, 0644), -EPERM);
}
END_TEST

START_TEST(test_mkdir_p)
{
	struct stat st;

	ck_assert_int_eq(tarsafe_mkdir_p(rootfd, "a/b/c", 0750, 1000, 1000), 1);
	ck_assert_int_eq(tarsafe_mkdir_p(rootfd, "a/b/c/", 0750, 1000, 1000), 0);
	ck_assert_int_eq(stat(root_path("a/b"), &st), 0);
	ck_assert_int_eq(st.st_mode & 07777, 0750);
	ck_assert_int_eq(st.st_uid, 1000);
	ck_assert_int_eq(tarsafe_mkdir_p(rootfd, "", 0755, -1, -1), 0);

	make_file(root_path("file"), "x", 0644);
	ck_assert_int_eq(tarsafe_mkdir_p(rootfd, "file/x", 0755, -1, -1), -ENOTDIR);
	ck_assert_int_eq(tarsafe_mkdir_p(rootfd, "evil/x", 0755, -1, -1), -EEXIST);
	ck_assert_int_eq(tarsafe_mkdir_p(rootfd, "a/../../x", 0755, -1, -1), -EINVAL);
	assert_outside_untouched();

	ck_assert_int_eq(mkdir(root_path("etc"), 0755), 0);
	ck_assert_int_eq(tarsafe_mkdir_p(rootfd, "abs/paddock-check-pwned/y", 0755, -1, -1), 1);
	ck_assert(exists(root_path("etc/paddock-check-pwned/y")));
	assert_outside_untouched();
}
END_TEST

START_TEST(test_replace_file)
{
	struct tarsafe_replace rep;
	pd_error err = {0};
	struct stat st;

	ck_assert_int_eq(tarsafe_replace_begin(rootfd, "new", 0640, 1000, 1000, &rep, &err), 0);
	ck_assert_int_eq(write_all(rep.fd, "chunk1 ", 7), 0);
	ck_assert(!exists(root_path("new")));
	ck_assert_int_eq(write_all(rep.fd, "chunk2", 6), 0);
	ck_assert_int_eq(tarsafe_replace_commit(&rep, &err), 0);
	ck_assert_int_eq(rep.fd, -1);
	ck_assert_str_eq(slurp(root_path("new")), "chunk1 chunk2");
	ck_assert_int_eq(stat(root_path("new"), &st), 0);
	ck_assert_int_eq(st.st_mode & 07777, 0640);
	ck_assert_int_eq(st.st_uid, 1000);

	/* An existing file keeps its mode and owner. */
	make_file(root_path("old"), "old", 0604);
	ck_assert_int_eq(chown(root_path("old"), 1001, 1002), 0);
	ck_assert_int_eq(tarsafe_replace_begin(rootfd, "old", 0644, -1, -1, &rep, &err), 0);
	ck_assert_int_eq(write_all(rep.fd, "fresh", 5), 0);
	ck_assert_int_eq(tarsafe_replace_commit(&rep, &err), 0);
	ck_assert_str_eq(slurp(root_path("old")), "fresh");
	ck_assert_int_eq(stat(root_path("old"), &st), 0);
	ck_assert_int_eq(st.st_mode & 07777, 0604);
	ck_assert_int_eq(st.st_uid, 1001);
	ck_assert_int_eq(st.st_gid, 1002);

	/* A planted link is replaced, not written through. */
	ck_assert_int_eq(tarsafe_replace_begin(rootfd, "evil", 0644, -1, -1, &rep, &err), 0);
	ck_assert_int_eq(write_all(rep.fd, "x", 1), 0);
	ck_assert_int_eq(tarsafe_replace_commit(&rep, &err), 0);
	ck_assert_int_eq(lstat(root_path("evil"), &st), 0);
	ck_assert(S_ISREG(st.st_mode));
	assert_outside_untouched();

	ck_assert_int_eq(tarsafe_replace_begin(rootfd, "abs/passwd", 0644, -1, -1, &rep, &err),
			 -ENOENT);
	tarsafe_replace_abort(&rep); /* inert after a failed begin */
	ck_assert_int_eq(tarsafe_replace_begin(rootfd, "missing/f", 0644, -1, -1, &rep, &err),
			 -ENOENT);
	ck_assert_int_eq(mkdir(root_path("dir"), 0755), 0);
	ck_assert_int_eq(tarsafe_replace_begin(rootfd, "dir", 0644, -1, -1, &rep, &err), -EISDIR);
	ck_assert_int_eq(tarsafe_replace_begin(rootfd, "", 0644, -1, -1, &rep, &err), -EISDIR);

	/* Abort leaves nothing. */
	ck_assert_int_eq(tarsafe_replace_begin(rootfd, "dir/f", 0644, -1, -1, &rep, &err), 0);
	ck_assert_int_eq(write_all(rep.fd, "x", 1), 0);
	ck_assert_int_eq(count_entries(root_path("dir")), 1);
	tarsafe_replace_abort(&rep);
	tarsafe_replace_abort(&rep);
	ck_assert_int_eq(count_entries(root_path("dir")), 0);
	ck_assert_int_eq(tarsafe_replace_commit(&rep, &err), -EBADF);
}
END_TEST

START_TEST(test_remove)
{
	pd_error err = {0};

	make_file(tmp_path("outside/keep"), "keep", 0644);
	make_file(root_path("f"), "x", 0644);
	ck_assert_int_eq(tarsafe_remove(rootfd, "f", false, &err), 0);
	ck_assert(!exists(root_path("f")));
	ck_assert_int_eq(tarsafe_remove(rootfd, "f", false, &err), -ENOENT);

	ck_assert_int_eq(mkdir(root_path("d"), 0755), 0);
	ck_assert_int_eq(mkdir(root_path("d/e"), 0755), 0);
	make_file(root_path("d/e/g"), "x", 0644);
	ck_assert_int_eq(symlink(tmp_path("outside"), root_path("d/e/out")), 0);
	ck_assert_int_eq(symlink("../../evil", root_path("d/rel")), 0);
	ck_assert_int_eq(tarsafe_remove(rootfd, "d", false, &err), -ENOTEMPTY);
	ck_assert_int_eq(tarsafe_remove(rootfd, "d/", true, &err), 0);
	ck_assert(!exists(root_path("d")));
	ck_assert_str_eq(slurp(tmp_path("outside/keep")), "keep");

	/* The link itself, never what it points to. */
	ck_assert_int_eq(tarsafe_remove(rootfd, "evil", true, &err), 0);
	ck_assert(!exists(root_path("evil")));
	ck_assert_str_eq(slurp(tmp_path("outside/keep")), "keep");
	ck_assert_int_eq(tarsafe_remove(rootfd, "rel/keep", false, &err), -ENOENT);
	ck_assert_int_eq(tarsafe_remove(rootfd, "abs/passwd", false, &err), -ENOENT);
	ck_assert(exists("/etc/passwd"));

	ck_assert_int_eq(tarsafe_remove(rootfd, "", true, &err), -EPERM);
	ck_assert_int_eq(tarsafe_remove(rootfd, "/", true, &err), -EPERM);
	ck_assert_int_eq(tarsafe_remove(rootfd, "x/../..", true, &err), -EINVAL);
}
END_TEST

static Suite *tarsafe_suite(void)
{
	Suite *s = suite_create("tarsafe");
	TCase *tc;

	tc = tcase_create("push");
	tcase_add_unchecked_fixture(tc, base_setup, base_teardown);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_extract_tree);
	tcase_add_test(tc, test_extract_owner);
	tcase_add_test(tc, test_extract_merges);
	tcase_add_test(tc, test_extract_nonempty_dir_in_the_way);
	tcase_add_test(tc, test_extract_dot_and_duplicates);
	tcase_add_test(tc, test_extract_compressed);
	tcase_add_test(tc, test_extract_empty_stream);
	tcase_add_test(tc, test_extract_keeps_directory_symlink);
	suite_add_tcase(s, tc);

	tc = tcase_create("safety");
	tcase_add_unchecked_fixture(tc, base_setup, base_teardown);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_reject_names);
	tcase_add_test(tc, test_reject_special_files);
	tcase_add_test(tc, test_reject_symlinks_out);
	tcase_add_test(tc, test_symlinks_inside_allowed);
	tcase_add_test(tc, test_reject_hardlinks_out);
	tcase_add_test(tc, test_reject_through_archive_symlink);
	tcase_add_test(tc, test_reject_link_chains);
	tcase_add_test(tc, test_links_judged_at_their_real_place);
	tcase_add_test(tc, test_push_two_subtrees_into_one_directory);
	tcase_add_test(tc, test_push_link_reached_through_a_replaced_link);
	tcase_add_test(tc, test_push_link_to_the_target_itself);
	tcase_add_test(tc, test_links_only_the_walk_catches);
	tcase_add_test(tc, test_reject_absolute_links_in_a_plain_directory);
	tcase_add_test(tc, test_skip_refused_entries);
	if (geteuid() == 0) /* chown needs root */
		tcase_add_test(tc, test_keep_owners);
	tcase_add_test(tc, test_disk_room);
	tcase_add_test(tc, test_planted_symlinks_stay_inside);
	tcase_add_test(tc, test_planted_symlink_as_target_dir);
	tcase_add_test(tc, test_bad_entry_after_good_ones_changes_nothing);
	tcase_add_test(tc, test_truncated_archive_changes_nothing);
	tcase_add_test(tc, test_garbage_rejected);
	suite_add_tcase(s, tc);

	tc = tcase_create("limits");
	tcase_add_unchecked_fixture(tc, base_setup, base_teardown);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_limit_entries);
	tcase_add_test(tc, test_limit_bytes);
	tcase_add_test(tc, test_limit_huge_header_rejected_at_once);
	tcase_add_test(tc, test_limit_sparse_terabyte);
	tcase_add_test(tc, test_extract_many_small_files);
	tcase_add_test(tc, test_disk_room_counts_every_entry);
	tcase_add_test(tc, test_missing_end_marker_refused);
	tcase_add_test(tc, test_links_to_a_long_chain_are_cheap);
	tcase_add_test(tc, test_link_check_is_capped);
	tcase_add_test(tc, test_one_depth_limit);
	suite_add_tcase(s, tc);

	tc = tcase_create("pull");
	tcase_add_unchecked_fixture(tc, base_setup, base_teardown);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_create_tree);
	tcase_add_test(tc, test_create_single_file_and_planted_links);
	tcase_add_test(tc, test_create_then_extract_round_trip);
	tcase_add_test(tc, test_create_write_error);
	tcase_add_test(tc, test_create_write_error_mid_stream);
	tcase_add_test(tc, test_create_write_error_in_a_header);
	tcase_add_test(tc, test_create_error_has_no_end_marker);
	suite_add_tcase(s, tc);

	tc = tcase_create("files");
	tcase_add_unchecked_fixture(tc, base_setup, base_teardown);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_open_resolves_inside);
	tcase_add_test(tc, test_open_refuses_special_files);
	tcase_add_test(tc, test_mkdir_p);
	tcase_add_test(tc, test_replace_file);
	tcase_add_test(tc, test_remove);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	static const char *const root_only[] = {"test_keep_owners"};

	return check_tap_run_skipping(tarsafe_suite(), root_only, geteuid() == 0 ? 0 : 1,
				      "needs root (chown)");
}
