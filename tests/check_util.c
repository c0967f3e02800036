/* check_util.c - the shared helpers (util.h) and the error carrier
 * (error.h): errno names, complete writes, capped reads, atomic writes,
 * mkdir -p, rm -rf that never follows a symlink, and error messages. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check-tap.h"
#include "common/error.h"
#include "common/util.h"

/* Each test runs in its own process (fork mode) with a fresh directory. */
static char tmpdir[64];

static void setup(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/check_util.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void teardown(void)
{
	rm_rf(tmpdir);
}

/* tmpdir/rel, in a static buffer of its own per call slot. */
static const char *tmp_path(const char *rel)
{
	static char bufs[8][512];
	static unsigned next;
	char *b = bufs[next++ % 8];

	snprintf(b, sizeof(bufs[0]), "%s/%s", tmpdir, rel);
	return b;
}

static void make_file(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	ck_assert_msg(fd >= 0, "open %s: %s", path, strerror(errno));
	ck_assert_int_eq(write_all(fd, data, len), 0);
	ck_assert_int_eq(close(fd), 0);
}

static void make_file_of_size(const char *path, size_t len, char fill)
{
	char *data = malloc(len ? len : 1);
	ck_assert_ptr_nonnull(data);
	memset(data, fill, len);
	make_file(path, data, len);
	free(data);
}

static bool exists(const char *path)
{
	struct stat st;
	return lstat(path, &st) == 0;
}

/* Number of entries in dir, "." and ".." excluded. */
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

static char *slurp(const char *path, size_t *ret_len)
{
	char *buf = NULL;
	ck_assert_int_eq(read_file_at(AT_FDCWD, path, 1 << 20, &buf, ret_len), 0);
	return buf;
}

/* ---- core ---- */

START_TEST(test_errno_name)
{
	ck_assert_str_eq(errno_name(EINVAL), "EINVAL");
	ck_assert_str_eq(errno_name(-EINVAL), "EINVAL");
	ck_assert_str_eq(errno_name(ENOENT), "ENOENT");
	ck_assert_str_eq(errno_name(-EBUSY), "EBUSY");
	ck_assert_str_eq(errno_name(EEXIST), "EEXIST");
	ck_assert_str_eq(errno_name(ENOSPC), "ENOSPC");
	ck_assert_str_eq(errno_name(EPROTO), "EPROTO");
	ck_assert_str_eq(errno_name(EFBIG), "EFBIG");
	ck_assert_str_eq(errno_name(EAGAIN), "EAGAIN");
	ck_assert_str_eq(errno_name(EIO), "EIO");
}
END_TEST

START_TEST(test_errno_name_unknown)
{
	/* Never NULL: an unknown code reads as EIO. */
	ck_assert_str_eq(errno_name(0), "EIO");
	ck_assert_str_eq(errno_name(9999), "EIO");
	ck_assert_str_eq(errno_name(-9999), "EIO");
}
END_TEST

START_TEST(test_write_all_pipe)
{
	int p[2];
	char buf[16] = {0};

	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	ck_assert_int_eq(write_all(p[1], "hello", 5), 0);
	ck_assert_int_eq(write_all(p[1], "", 0), 0);
	close(p[1]);
	ck_assert_int_eq(read(p[0], buf, sizeof(buf)), 5);
	ck_assert_str_eq(buf, "hello");
	close(p[0]);
}
END_TEST

START_TEST(test_write_all_large)
{
	const size_t len = 3 * 1024 * 1024 + 17;
	char *data = malloc(len), *back;
	size_t back_len;
	int fd;

	ck_assert_ptr_nonnull(data);
	for (size_t i = 0; i < len; i++)
		data[i] = (char)('a' + i % 26);
	fd = open(tmp_path("big"), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write_all(fd, data, len), 0);
	close(fd);

	ck_assert_int_eq(read_file_at(AT_FDCWD, tmp_path("big"), len, &back, &back_len), 0);
	ck_assert_uint_eq(back_len, len);
	ck_assert_int_eq(memcmp(back, data, len), 0);
	free(back);
	free(data);
}
END_TEST

START_TEST(test_read_file_at)
{
	char *buf = (char *)"unset";
	size_t len = 1234;
	int dfd;

	make_file(tmp_path("f"), "one\ntwo\n", 8);
	dfd = open(tmpdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(dfd, 0);

	/* Relative to a directory fd. */
	ck_assert_int_eq(read_file_at(dfd, "f", 100, &buf, &len), 0);
	ck_assert_uint_eq(len, 8);
	ck_assert_str_eq(buf, "one\ntwo\n");
	free(buf);

	/* ret_len is optional; the buffer is NUL-terminated. */
	ck_assert_int_eq(read_file_at(dfd, "f", 100, &buf, NULL), 0);
	ck_assert_uint_eq(strlen(buf), 8);
	free(buf);

	/* Absolute path with AT_FDCWD. */
	ck_assert_int_eq(read_file_at(AT_FDCWD, tmp_path("f"), 8, &buf, &len), 0);
	ck_assert_str_eq(buf, "one\ntwo\n");
	free(buf);
	close(dfd);
}
END_TEST

START_TEST(test_read_file_at_empty)
{
	char *buf = NULL;
	size_t len = 99;

	make_file(tmp_path("empty"), "", 0);
	ck_assert_int_eq(read_file_at(AT_FDCWD, tmp_path("empty"), 0, &buf, &len), 0);
	ck_assert_uint_eq(len, 0);
	ck_assert_str_eq(buf, "");
	free(buf);
}
END_TEST

START_TEST(test_read_file_at_proc)
{
	/* stat() says 0 bytes for /proc files: the read must not trust it. */
	char *buf = NULL;
	size_t len = 0;

	ck_assert_int_eq(read_file_at(AT_FDCWD, "/proc/self/status", 1 << 20, &buf, &len), 0);
	ck_assert_uint_gt(len, 0);
	ck_assert_ptr_nonnull(strstr(buf, "Pid:"));
	free(buf);
}
END_TEST

START_TEST(test_write_file_atomic)
{
	char *buf;
	size_t len;
	struct stat st;

	umask(022);
	ck_assert_int_eq(write_file_atomic(tmp_path("cfg"), "v1\n", 3, 0640), 0);
	buf = slurp(tmp_path("cfg"), &len);
	ck_assert_uint_eq(len, 3);
	ck_assert_str_eq(buf, "v1\n");
	free(buf);
	ck_assert_int_eq(stat(tmp_path("cfg"), &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0640);
	ck_assert(S_ISREG(st.st_mode));

	/* Replacing: new content, new mode, no temporary file left behind. */
	ck_assert_int_eq(write_file_atomic(tmp_path("cfg"), "second value\n", 13, 0600), 0);
	buf = slurp(tmp_path("cfg"), &len);
	ck_assert_str_eq(buf, "second value\n");
	free(buf);
	ck_assert_int_eq(stat(tmp_path("cfg"), &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0600);
	ck_assert_int_eq(count_entries(tmpdir), 1);
}
END_TEST

START_TEST(test_write_file_atomic_empty_and_binary)
{
	static const char bin[] = {'a', '\0', 'b', '\n', '\0'};
	char *buf;
	size_t len;

	ck_assert_int_eq(write_file_atomic(tmp_path("e"), "", 0, 0644), 0);
	buf = slurp(tmp_path("e"), &len);
	ck_assert_uint_eq(len, 0);
	free(buf);

	ck_assert_int_eq(write_file_atomic(tmp_path("b"), bin, sizeof(bin), 0644), 0);
	buf = slurp(tmp_path("b"), &len);
	ck_assert_uint_eq(len, sizeof(bin));
	ck_assert_int_eq(memcmp(buf, bin, sizeof(bin)), 0);
	free(buf);
	ck_assert_int_eq(count_entries(tmpdir), 2);
}
END_TEST

START_TEST(test_write_file_atomic_relative)
{
	char *buf;

	/* A bare name is relative to the working directory. */
	ck_assert_int_eq(chdir(tmpdir), 0);
	ck_assert_int_eq(write_file_atomic("rel", "x", 1, 0644), 0);
	buf = slurp(tmp_path("rel"), NULL);
	ck_assert_str_eq(buf, "x");
	free(buf);
	ck_assert_int_eq(count_entries(tmpdir), 1);
}
END_TEST

START_TEST(test_mkdir_p)
{
	struct stat st;

	umask(022);
	ck_assert_int_eq(mkdir_p(tmp_path("a/b/c"), 0750), 0);
	ck_assert_int_eq(stat(tmp_path("a/b/c"), &st), 0);
	ck_assert(S_ISDIR(st.st_mode));
	ck_assert_uint_eq(st.st_mode & 0777, 0750);
	ck_assert_int_eq(stat(tmp_path("a"), &st), 0);
	ck_assert_uint_eq(st.st_mode & 0777, 0750);

	/* Existing directories are fine, as are doubled and trailing slashes. */
	ck_assert_int_eq(mkdir_p(tmp_path("a/b/c"), 0750), 0);
	ck_assert_int_eq(mkdir_p(tmp_path("a//b/d/"), 0755), 0);
	ck_assert_int_eq(stat(tmp_path("a/b/d"), &st), 0);
	ck_assert(S_ISDIR(st.st_mode));
	ck_assert_int_eq(mkdir_p(tmpdir, 0700), 0);
}
END_TEST

START_TEST(test_rm_rf_tree)
{
	ck_assert_int_eq(mkdir_p(tmp_path("victim/a/b/c"), 0755), 0);
	ck_assert_int_eq(mkdir_p(tmp_path("victim/empty"), 0755), 0);
	make_file(tmp_path("victim/top"), "1", 1);
	make_file(tmp_path("victim/a/f"), "2", 1);
	make_file(tmp_path("victim/a/b/c/deep"), "3", 1);
	ck_assert_int_eq(symlink("top", tmp_path("victim/a/link")), 0);
	ck_assert_int_eq(symlink("/nonexistent/dangling", tmp_path("victim/dangling")), 0);
	/* A file without permissions goes like any other. */
	ck_assert_int_eq(chmod(tmp_path("victim/a/f"), 0), 0);

	ck_assert_int_eq(rm_rf(tmp_path("victim")), 0);
	ck_assert(!exists(tmp_path("victim")));
	ck_assert_int_eq(count_entries(tmpdir), 0);
}
END_TEST

START_TEST(test_rm_rf_symlink_not_followed)
{
	char *buf;

	/* outside/ must survive removal of a tree that links to it. */
	ck_assert_int_eq(mkdir_p(tmp_path("outside/sub"), 0755), 0);
	make_file(tmp_path("outside/keep"), "keep", 4);
	make_file(tmp_path("outside/sub/keep2"), "k2", 2);
	ck_assert_int_eq(mkdir_p(tmp_path("victim/d"), 0755), 0);
	ck_assert_int_eq(symlink(tmp_path("outside"), tmp_path("victim/abs")), 0);
	ck_assert_int_eq(symlink("../../outside", tmp_path("victim/d/rel")), 0);
	ck_assert_int_eq(symlink(tmp_path("outside/keep"), tmp_path("victim/file")), 0);

	ck_assert_int_eq(rm_rf(tmp_path("victim")), 0);
	ck_assert(!exists(tmp_path("victim")));
	buf = slurp(tmp_path("outside/keep"), NULL);
	ck_assert_str_eq(buf, "keep");
	free(buf);
	buf = slurp(tmp_path("outside/sub/keep2"), NULL);
	ck_assert_str_eq(buf, "k2");
	free(buf);
}
END_TEST

START_TEST(test_rm_rf_path_is_symlink)
{
	/* The path itself a symlink to a directory: the link goes, the
	 * directory and its contents stay. */
	ck_assert_int_eq(mkdir_p(tmp_path("outside"), 0755), 0);
	make_file(tmp_path("outside/keep"), "keep", 4);
	ck_assert_int_eq(symlink(tmp_path("outside"), tmp_path("link")), 0);

	ck_assert_int_eq(rm_rf(tmp_path("link")), 0);
	ck_assert(!exists(tmp_path("link")));
	ck_assert(exists(tmp_path("outside/keep")));
}
END_TEST

START_TEST(test_rm_rf_symlink_trailing_slash)
{
	/* Regression: with a trailing slash, "link/" made open() resolve the
	 * symlink despite O_NOFOLLOW, and rm_rf() emptied the directory the
	 * link points to. It must remove only the link. */
	char path[600];

	ck_assert_int_eq(mkdir_p(tmp_path("outside"), 0755), 0);
	make_file(tmp_path("outside/keep"), "keep", 4);
	ck_assert_int_eq(symlink(tmp_path("outside"), tmp_path("link")), 0);
	snprintf(path, sizeof(path), "%s/", tmp_path("link"));

	(void)rm_rf(path);
	ck_assert(exists(tmp_path("outside/keep")));
}
END_TEST

START_TEST(test_rm_rf_file_and_missing)
{
	make_file(tmp_path("plain"), "x", 1);
	ck_assert_int_eq(rm_rf(tmp_path("plain")), 0);
	ck_assert(!exists(tmp_path("plain")));

	/* A missing path is success, twice over. */
	ck_assert_int_eq(rm_rf(tmp_path("plain")), 0);
	ck_assert_int_eq(rm_rf(tmp_path("never/was/here")), 0);
}
END_TEST

START_TEST(test_pd_error_set)
{
	pd_error err;
	int r;

	pd_error_clear(&err);
	ck_assert_int_eq(err.code, 0);
	ck_assert_str_eq(err.msg, "");

	errno = ENOTTY;
	r = pd_error_set(&err, -EBUSY, "box %s is %s", "web", "running");
	ck_assert_int_eq(r, -EBUSY);
	ck_assert_int_eq(err.code, -EBUSY);
	ck_assert_str_eq(err.msg, "box web is running");
	ck_assert_int_eq(errno, ENOTTY); /* errno is preserved */

	/* A later set replaces the earlier one. */
	ck_assert_int_eq(pd_error_set(&err, -ENOENT, "gone"), -ENOENT);
	ck_assert_int_eq(err.code, -ENOENT);
	ck_assert_str_eq(err.msg, "gone");

	pd_error_clear(&err);
	ck_assert_int_eq(err.code, 0);
	ck_assert_str_eq(err.msg, "");
	pd_error_clear(NULL);
}
END_TEST

START_TEST(test_pd_error_null)
{
	/* err == NULL: the reason is dropped, the code still returned. */
	ck_assert_int_eq(pd_error_set(NULL, -EINVAL, "ignored %d", 1), -EINVAL);
	ck_assert_int_eq(pd_error_set(NULL, 0, "fine"), 0);
	/* No recorded code to return: prefix keeps a failure a failure. */
	ck_assert_int_eq(pd_error_prefix(NULL, "context"), -EIO);
}
END_TEST

START_TEST(test_pd_error_prefix)
{
	pd_error err;
	int r;

	pd_error_clear(&err);
	pd_error_set(&err, -ENOSPC, "disk full");
	errno = EDOM;
	r = pd_error_prefix(&err, "box %s", "web");
	ck_assert_int_eq(r, -ENOSPC);
	ck_assert_int_eq(err.code, -ENOSPC);
	ck_assert_str_eq(err.msg, "box web: disk full");
	ck_assert_int_eq(errno, EDOM);

	/* Context stacks outward. */
	ck_assert_int_eq(pd_error_prefix(&err, "start"), -ENOSPC);
	ck_assert_str_eq(err.msg, "start: box web: disk full");

	/* No old reason: just the context, no dangling ": ". */
	pd_error_clear(&err);
	err.code = -EIO;
	ck_assert_int_eq(pd_error_prefix(&err, "ctx"), -EIO);
	ck_assert_str_eq(err.msg, "ctx");

	/* Empty context: the old reason unchanged. */
	pd_error_set(&err, -EPERM, "denied");
	ck_assert_int_eq(pd_error_prefix(&err, "%s", ""), -EPERM);
	ck_assert_str_eq(err.msg, "denied");
}
END_TEST

/* ---- limits ---- */

START_TEST(test_read_file_at_cap)
{
	char *buf = NULL;
	size_t len = 0;

	/* Exactly max bytes fits; one more is -EFBIG. */
	make_file(tmp_path("ten"), "0123456789", 10);
	ck_assert_int_eq(read_file_at(AT_FDCWD, tmp_path("ten"), 10, &buf, &len), 0);
	ck_assert_uint_eq(len, 10);
	ck_assert_str_eq(buf, "0123456789");
	free(buf);

	buf = (char *)"untouched";
	len = 77;
	ck_assert_int_eq(read_file_at(AT_FDCWD, tmp_path("ten"), 9, &buf, &len), -EFBIG);
	ck_assert_str_eq(buf, "untouched"); /* outputs written only on success */
	ck_assert_uint_eq(len, 77);
	ck_assert_int_eq(read_file_at(AT_FDCWD, tmp_path("ten"), 0, &buf, &len), -EFBIG);

	make_file(tmp_path("one"), "x", 1);
	ck_assert_int_eq(read_file_at(AT_FDCWD, tmp_path("one"), 0, &buf, &len), -EFBIG);
}
END_TEST

START_TEST(test_read_file_at_cap_growth)
{
	/* Sizes on both sides of the buffer's growth steps. */
	static const size_t sizes[] = {4094, 4095, 4096, 4097, 5000, 8191, 8192, 100000};
	char *buf;
	size_t len;

	for (size_t i = 0; i < ELEMENTSOF(sizes); i++) {
		size_t n = sizes[i];
		make_file_of_size(tmp_path("g"), n, 'z');

		buf = NULL;
		ck_assert_msg(read_file_at(AT_FDCWD, tmp_path("g"), n, &buf, &len) == 0,
			      "size %zu, max %zu", n, n);
		ck_assert_uint_eq(len, n);
		ck_assert_uint_eq(strlen(buf), n);
		ck_assert(buf[0] == 'z' && buf[n - 1] == 'z');
		free(buf);

		ck_assert_msg(read_file_at(AT_FDCWD, tmp_path("g"), n - 1, &buf, &len) == -EFBIG,
			      "size %zu, max %zu", n, n - 1);
		ck_assert_msg(read_file_at(AT_FDCWD, tmp_path("g"), n + 1, &buf, &len) == 0,
			      "size %zu, max %zu", n, n + 1);
		ck_assert_uint_eq(len, n);
		free(buf);
	}
}
END_TEST

START_TEST(test_read_file_at_huge_max)
{
	char *buf;
	size_t len;

	/* A max near SIZE_MAX must not overflow the buffer arithmetic. */
	make_file(tmp_path("f"), "abc", 3);
	ck_assert_int_eq(read_file_at(AT_FDCWD, tmp_path("f"), SIZE_MAX, &buf, &len), 0);
	ck_assert_uint_eq(len, 3);
	ck_assert_str_eq(buf, "abc");
	free(buf);
}
END_TEST

START_TEST(test_pd_error_truncation)
{
	char long_text[PD_ERROR_MAX * 2];
	pd_error err;

	memset(long_text, 'x', sizeof(long_text) - 1);
	long_text[sizeof(long_text) - 1] = '\0';

	ck_assert_int_eq(pd_error_set(&err, -EIO, "%s", long_text), -EIO);
	ck_assert_uint_eq(strlen(err.msg), PD_ERROR_MAX - 1);

	/* A prefix onto a full message keeps the context and stays
	 * terminated within the buffer. */
	ck_assert_int_eq(pd_error_prefix(&err, "ctx"), -EIO);
	ck_assert_uint_eq(strlen(err.msg), PD_ERROR_MAX - 1);
	ck_assert_int_eq(strncmp(err.msg, "ctx: xxx", 8), 0);

	/* A context longer than the buffer. */
	pd_error_set(&err, -EIO, "old");
	ck_assert_int_eq(pd_error_prefix(&err, "%s", long_text), -EIO);
	ck_assert_uint_eq(strlen(err.msg), PD_ERROR_MAX - 1);
	ck_assert(err.msg[0] == 'x');
}
END_TEST

START_TEST(test_rm_rf_deep)
{
	char rel[4096] = "deep";
	size_t len = strlen(rel);

	/* 200 levels: one open directory per level during the walk. */
	for (int i = 0; i < 200; i++) {
		memcpy(rel + len, "/d", 3);
		len += 2;
	}
	ck_assert_int_eq(mkdir_p(tmp_path(rel), 0755), 0);
	memcpy(rel + len, "/f", 3);
	make_file(tmp_path(rel), "x", 1);

	ck_assert_int_eq(rm_rf(tmp_path("deep")), 0);
	ck_assert(!exists(tmp_path("deep")));
}
END_TEST

/* ---- errors ---- */

START_TEST(test_write_all_errors)
{
	int p[2];

	ck_assert_int_eq(write_all(-1, "x", 1), -EBADF);

	/* A pipe nobody reads: -EPIPE, not a signal. */
	signal(SIGPIPE, SIG_IGN);
	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	close(p[0]);
	ck_assert_int_eq(write_all(p[1], "x", 1), -EPIPE);
	close(p[1]);

	/* A read-only fd. */
	make_file(tmp_path("ro"), "x", 1);
	int fd = open(tmp_path("ro"), O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write_all(fd, "x", 1), -EBADF);
	close(fd);
}
END_TEST

START_TEST(test_read_file_at_errors)
{
	char *buf = (char *)"untouched";

	ck_assert_int_eq(read_file_at(AT_FDCWD, tmp_path("missing"), 10, &buf, NULL), -ENOENT);
	ck_assert_int_eq(read_file_at(AT_FDCWD, NULL, 10, &buf, NULL), -EINVAL);
	ck_assert_int_eq(read_file_at(AT_FDCWD, tmp_path("x"), 10, NULL, NULL), -EINVAL);
	ck_assert_int_eq(read_file_at(AT_FDCWD, tmpdir, 10, &buf, NULL), -EISDIR);
	ck_assert_int_eq(read_file_at(-1, "relative", 10, &buf, NULL), -EBADF);
	ck_assert_str_eq(buf, "untouched");
}
END_TEST

START_TEST(test_write_file_atomic_errors)
{
	ck_assert_int_eq(write_file_atomic(tmp_path("no/such/dir/f"), "x", 1, 0644), -ENOENT);
	ck_assert_int_eq(write_file_atomic("", "x", 1, 0644), -EINVAL);
	ck_assert_int_eq(write_file_atomic(NULL, "x", 1, 0644), -EINVAL);
	ck_assert_int_eq(write_file_atomic(tmp_path("dir/"), "x", 1, 0644), -EINVAL);

	/* The target is a non-empty directory: rename fails, the temp goes. */
	ck_assert_int_eq(mkdir_p(tmp_path("d/inside"), 0755), 0);
	ck_assert_int_lt(write_file_atomic(tmp_path("d"), "x", 1, 0644), 0);
	ck_assert_int_eq(count_entries(tmpdir), 1);
	ck_assert_int_eq(count_entries(tmp_path("d")), 1);
}
END_TEST

START_TEST(test_mkdir_p_errors)
{
	make_file(tmp_path("file"), "x", 1);
	ck_assert_int_eq(mkdir_p(tmp_path("file"), 0755), -ENOTDIR);
	ck_assert_int_eq(mkdir_p(tmp_path("file/sub"), 0755), -ENOTDIR);
	ck_assert_int_eq(mkdir_p("", 0755), -EINVAL);
	ck_assert_int_eq(mkdir_p(NULL, 0755), -EINVAL);
}
END_TEST

START_TEST(test_rm_rf_errors)
{
	ck_assert_int_eq(rm_rf(""), -EINVAL);
	ck_assert_int_eq(rm_rf(NULL), -EINVAL);
	/* Never the root directory, however spelled. */
	ck_assert_int_eq(rm_rf("/"), -EPERM);
	ck_assert_int_eq(rm_rf("///"), -EPERM);
}
END_TEST

START_TEST(test_rm_rf_other_mount)
{
	char *buf;

	if (getuid() != 0)
		return; /* mounting needs root */

	/* A mount inside the tree is left alone (and its contents with it);
	 * the rest goes and the result says -EBUSY. */
	ck_assert_int_eq(mkdir_p(tmp_path("victim/mnt"), 0755), 0);
	make_file(tmp_path("victim/other"), "x", 1);
	ck_assert_int_eq(mount("tmpfs", tmp_path("victim/mnt"), "tmpfs", 0, "size=1m"), 0);
	make_file(tmp_path("victim/mnt/precious"), "p", 1);

	int r = rm_rf(tmp_path("victim"));
	buf = NULL;
	int rr = read_file_at(AT_FDCWD, tmp_path("victim/mnt/precious"), 10, &buf, NULL);
	bool other = exists(tmp_path("victim/other"));
	umount2(tmp_path("victim/mnt"), MNT_DETACH);

	ck_assert_int_eq(r, -EBUSY);
	ck_assert_int_eq(rr, 0);
	ck_assert_str_eq(buf, "p");
	free(buf);
	ck_assert(!other);
}
END_TEST

static Suite *util_suite(void)
{
	Suite *s = suite_create("util");
	TCase *tc;

	tc = tcase_create("core");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_errno_name);
	tcase_add_test(tc, test_errno_name_unknown);
	tcase_add_test(tc, test_write_all_pipe);
	tcase_add_test(tc, test_write_all_large);
	tcase_add_test(tc, test_read_file_at);
	tcase_add_test(tc, test_read_file_at_empty);
	tcase_add_test(tc, test_read_file_at_proc);
	tcase_add_test(tc, test_write_file_atomic);
	tcase_add_test(tc, test_write_file_atomic_empty_and_binary);
	tcase_add_test(tc, test_write_file_atomic_relative);
	tcase_add_test(tc, test_mkdir_p);
	tcase_add_test(tc, test_rm_rf_tree);
	tcase_add_test(tc, test_rm_rf_symlink_not_followed);
	tcase_add_test(tc, test_rm_rf_path_is_symlink);
	tcase_add_test(tc, test_rm_rf_symlink_trailing_slash);
	tcase_add_test(tc, test_rm_rf_file_and_missing);
	tcase_add_test(tc, test_pd_error_set);
	tcase_add_test(tc, test_pd_error_null);
	tcase_add_test(tc, test_pd_error_prefix);
	suite_add_tcase(s, tc);

	tc = tcase_create("limits");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_read_file_at_cap);
	tcase_add_test(tc, test_read_file_at_cap_growth);
	tcase_add_test(tc, test_read_file_at_huge_max);
	tcase_add_test(tc, test_pd_error_truncation);
	tcase_add_test(tc, test_rm_rf_deep);
	suite_add_tcase(s, tc);

	tc = tcase_create("errors");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_write_all_errors);
	tcase_add_test(tc, test_read_file_at_errors);
	tcase_add_test(tc, test_write_file_atomic_errors);
	tcase_add_test(tc, test_mkdir_p_errors);
	tcase_add_test(tc, test_rm_rf_errors);
	tcase_add_test(tc, test_rm_rf_other_mount);
	suite_add_tcase(s, tc);

	return s;
}

int main(void)
{
	return check_tap_run(util_suite());
}
