/* check_layers.c - layer stacks, snapshot ids, the choice of garbage and
 * the merge of crafted layer directories (needs root for whiteouts and
 * trusted.* xattrs; skipped otherwise). */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "check-tap.h"
#include "runtime/layer-merge.h"
#include "store/layers.h"
#include "common/util.h"

START_TEST(test_parse_format)
{
	struct layer_stack s;
	char buf[LAYER_STACK_TEXT_MAX];

	ck_assert_int_eq(layers_stack_parse("", &s), 0);
	ck_assert_uint_eq(s.n, 0);
	ck_assert_int_eq(layers_stack_parse("7,5,2", &s), 0);
	ck_assert_uint_eq(s.n, 3);
	ck_assert_int_eq(s.ids[0], 7);
	ck_assert_int_eq(s.ids[2], 2);
	ck_assert_int_eq(layers_stack_format(&s, buf, sizeof buf), 0);
	ck_assert_str_eq(buf, "7,5,2");
	ck_assert_int_eq(layers_stack_push(&s, 9), 0);
	ck_assert_int_eq(layers_stack_format(&s, buf, sizeof buf), 0);
	ck_assert_str_eq(buf, "9,7,5,2");
	ck_assert(layers_stack_contains(&s, 5));
	ck_assert(!layers_stack_contains(&s, 6));
	ck_assert_int_eq(layers_stack_format(&s, buf, 4), -ENAMETOOLONG);
}
END_TEST

START_TEST(test_parse_errors)
{
	static const char *const bad[] = {
	    ",", "1,", ",1", "1,,2", "a", "0", "01", "1,1", "-3", "1 ,2", "99999999999999999999"};
	struct layer_stack s = {.n = 42};

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		ck_assert_msg(layers_stack_parse(bad[i], &s) == -EINVAL, "accepted \"%s\"", bad[i]);
	ck_assert_uint_eq(s.n, 42); /* untouched on failure */
}
END_TEST

START_TEST(test_depth_limit)
{
	struct layer_stack s = {0};
	char text[LAYER_STACK_TEXT_MAX + 32] = "";

	for (int i = 1; i <= LAYER_STACK_DEPTH_MAX; i++)
		ck_assert_int_eq(layers_stack_push(&s, i), 0);
	ck_assert_int_eq(layers_stack_push(&s, 1000), -ENOSPC);
	ck_assert_int_eq(layers_stack_format(&s, text, LAYER_STACK_TEXT_MAX), 0);
	strcat(text, ",1000");
	ck_assert_int_eq(layers_stack_parse(text, &s), -EINVAL);
	ck_assert_int_eq(layers_stack_push(&(struct layer_stack){0}, 0), -EINVAL);
}
END_TEST

START_TEST(test_snapshot_ids)
{
	char id[64], longname[64];

	ck_assert_int_eq(layers_snapshot_id("web", 3, id, sizeof id), 0);
	ck_assert_str_eq(id, "web-3");
	memset(longname, 'a', 63);
	longname[63] = '\0';
	ck_assert_int_eq(layers_snapshot_id(longname, 12345, id, sizeof id), 0);
	ck_assert_uint_eq(strlen(id), 63);
	ck_assert_str_eq(id + 57, "-12345");
	ck_assert_int_eq(layers_snapshot_id("Bad", 1, id, sizeof id), -EINVAL);
	ck_assert_int_eq(layers_snapshot_id("web", 0, id, sizeof id), -EINVAL);
	ck_assert_int_eq(layers_snapshot_id("web", 3, id, 4), -ENAMETOOLONG);
}
END_TEST

START_TEST(test_garbage)
{
	const int64_t present[] = {1, 2, 3, 4, 5}, refs[] = {4, 2, 9};
	int64_t out[5];

	ck_assert_uint_eq(layers_select_garbage(present, 5, refs, 3, out), 3);
	ck_assert_int_eq(out[0], 1);
	ck_assert_int_eq(out[1], 3);
	ck_assert_int_eq(out[2], 5);
	ck_assert_uint_eq(layers_select_garbage(present, 5, present, 5, out), 0);
	ck_assert_uint_eq(layers_select_garbage(present, 0, refs, 3, out), 0);
}
END_TEST

START_TEST(test_dir_names)
{
	int64_t id = 0;

	ck_assert_int_eq(layers_dir_id("L12", &id), 0);
	ck_assert_int_eq(id, 12);
	ck_assert_int_eq(layers_dir_id("L12.tmp", &id), -EINVAL);
	ck_assert_int_eq(layers_dir_id("L12.del", &id), -EINVAL);
	ck_assert_int_eq(layers_dir_id("L0", &id), -EINVAL);
	ck_assert_int_eq(layers_dir_id("L", &id), -EINVAL);
	ck_assert_int_eq(layers_dir_id("L1,2", &id), -EINVAL);
	ck_assert_int_eq(layers_dir_id("x12", &id), -EINVAL);
}
END_TEST

START_TEST(test_merge_count)
{
	struct layer_stack s = {0};
	char buf[LAYER_STACK_TEXT_MAX];

	for (int i = 1; i <= 4; i++)
		ck_assert_int_eq(layers_stack_push(&s, i), 0);
	ck_assert_uint_eq(layers_stack_merge_count(&s, 4), 0);
	ck_assert_int_eq(layers_stack_push(&s, 5), 0); /* 5,4,3,2,1 */
	ck_assert_uint_eq(layers_stack_merge_count(&s, 4), 4);
	ck_assert_uint_eq(layers_stack_merge_count(&s, 16), 0);
	ck_assert_uint_eq(layers_stack_merge_count(&s, 2), 5);
	ck_assert_uint_eq(layers_stack_merge_count(&s, 3), 5);
	ck_assert_int_eq(layers_stack_replace_oldest(&s, 4, 5), -EINVAL); /* still on top */
	ck_assert_int_eq(layers_stack_replace_oldest(&s, 6, 9), -EINVAL);
	ck_assert_int_eq(layers_stack_replace_oldest(&s, 0, 9), -EINVAL);
	ck_assert_int_eq(layers_stack_replace_oldest(&s, 4, 0), -EINVAL);
	ck_assert_int_eq(layers_stack_replace_oldest(&s, 4, 9), 0);
	ck_assert_int_eq(layers_stack_format(&s, buf, sizeof buf), 0);
	ck_assert_str_eq(buf, "5,9");
	ck_assert_uint_eq(layers_stack_merge_count(&s, 4), 0);
	/* depth 16: a merge leaves 8, the newest 7 untouched */
	s = (struct layer_stack){0};
	for (int i = 1; i <= 17; i++)
		ck_assert_int_eq(layers_stack_push(&s, i), 0);
	ck_assert_uint_eq(layers_stack_merge_count(&s, 16), 10);
	ck_assert_int_eq(layers_stack_replace_oldest(&s, 10, 100), 0);
	ck_assert_uint_eq(s.n, 8);
	ck_assert_int_eq(s.ids[0], 17);
	ck_assert_int_eq(s.ids[6], 11);
	ck_assert_int_eq(s.ids[7], 100);
}
END_TEST

static char tmpdir[64];

static void merge_setup(void)
{
	snprintf(tmpdir, sizeof tmpdir, "/tmp/check-layers-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void merge_teardown(void)
{
	(void)rm_rf(tmpdir);
}

/* tmpdir/rel in one of 8 rotating buffers: good for the next 7 calls. */
static const char *at(const char *rel)
{
	static char bufs[8][4096];
	static int k;
	char *b = bufs[k++ % 8];

	snprintf(b, 4096, "%s/%s", tmpdir, rel);
	return b;
}

static void put(const char *rel, const char *text)
{
	int fd = open(at(rel), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static void dir(const char *rel)
{
	ck_assert_int_eq(mkdir(at(rel), 0755), 0);
}

static void whiteout(const char *rel)
{
	ck_assert_int_eq(mknod(at(rel), S_IFCHR | 0, makedev(0, 0)), 0);
}

static void opaque(const char *rel)
{
	ck_assert_int_eq(lsetxattr(at(rel), "trusted.overlay.opaque", "y", 1, 0), 0);
}

static bool has_opaque(const char *rel)
{
	char v[4];

	return lgetxattr(at(rel), "trusted.overlay.opaque", v, sizeof v) == 1 && v[0] == 'y';
}

static void assert_text(const char *rel, const char *text)
{
	char buf[256];
	struct stat st;
	int fd = open(at(rel), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	ssize_t n;

	ck_assert_msg(fd >= 0, "%s: %s", rel, strerror(errno));
	ck_assert_int_eq(fstat(fd, &st), 0);
	ck_assert(S_ISREG(st.st_mode));
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	ck_assert_int_ge(n, 0);
	buf[n] = '\0';
	ck_assert_str_eq(buf, text);
}

static void assert_link(const char *rel, const char *target)
{
	char buf[256];
	ssize_t n = readlink(at(rel), buf, sizeof buf - 1);

	ck_assert_msg(n >= 0, "%s: %s", rel, strerror(errno));
	buf[n] = '\0';
	ck_assert_str_eq(buf, target);
}

static void assert_whiteout(const char *rel)
{
	struct stat st;

	ck_assert_msg(lstat(at(rel), &st) == 0, "%s missing", rel);
	ck_assert(S_ISCHR(st.st_mode));
	ck_assert_uint_eq(st.st_rdev, makedev(0, 0));
}

static void assert_absent(const char *rel)
{
	struct stat st;

	ck_assert_msg(lstat(at(rel), &st) < 0 && errno == ENOENT, "%s exists", rel);
}

static bool is_root(void)
{
	return geteuid() == 0;
}

START_TEST(test_merge_overlay_rules)
{
	const char *layers[3];
	struct stat st, st2;
	char v[16];
	pd_error err = {0};

	/* L1, the oldest */
	dir("l1");
	dir("l1/a");
	put("l1/a/x", "x1");
	put("l1/a/y", "y1");
	dir("l1/b");
	put("l1/b/k", "k1");
	dir("l1/b/sub");
	put("l1/b/sub/deep", "d1");
	ck_assert_int_eq(symlink("a/x", at("l1/link")), 0);
	put("l1/f", "f1");
	put("l1/h1", "hard");
	ck_assert_int_eq(link(at("l1/h1"), at("l1/h2")), 0);
	dir("l1/c");
	put("l1/c/old", "old");
	dir("l1/d");
	put("l1/d/keep", "keep");
	ck_assert_int_eq(lsetxattr(at("l1/d"), "user.color", "red", 3, 0), 0);
	/* L2 */
	dir("l2");
	dir("l2/a");
	put("l2/a/x", "x2");
	whiteout("l2/a/y");
	dir("l2/b");
	opaque("l2/b");
	put("l2/b/new", "n2");
	ck_assert_int_eq(symlink("other", at("l2/link")), 0);
	whiteout("l2/g"); /* hides an image file: kept */
	put("l2/c", "cfile");
	put("l2/m", "mode");
	ck_assert_int_eq(chown(at("l2/m"), 1234, 5678), 0);
	ck_assert_int_eq(chmod(at("l2/m"), 04750), 0);
	ck_assert_int_eq(lsetxattr(at("l2/m"), "trusted.overlay.origin", "o", 1, 0), 0);
	ck_assert_int_eq(lsetxattr(at("l2/m"), "user.note", "hi", 2, 0), 0);
	ck_assert_int_eq(
	    utimensat(AT_FDCWD, at("l2/m"),
		      (struct timespec[]){{.tv_sec = 1000000000}, {.tv_sec = 1000000001}}, 0),
	    0);
	ck_assert_int_eq(mknod(at("l2/fifo"), S_IFIFO | 0600, 0), 0);
	dir("l2/d");
	put("l2/d/more", "more");
	/* L3, the newest */
	dir("l3");
	dir("l3/a");
	put("l3/a/y", "y3"); /* back, over the whiteout */
	dir("l3/c");	     /* a directory over a file: opaque */
	put("l3/c/n", "n3");
	ck_assert_int_eq(symlink("a", at("l3/f")), 0);
	dir("l3/e");
	opaque("l3/e");
	ck_assert_int_eq(chmod(at("l3"), 0751), 0);
	ck_assert_int_eq(
	    utimensat(AT_FDCWD, at("l3/a"),
		      (struct timespec[]){{.tv_sec = 1200000000}, {.tv_sec = 1200000001}}, 0),
	    0);

	dir("out");
	layers[0] = at("l1");
	layers[1] = at("l2");
	layers[2] = at("l3");
	ck_assert_msg(layer_merge(layers, 3, at("out"), &err) == 0, "%s", err.msg);

	assert_text("out/a/x", "x2");
	assert_text("out/a/y", "y3");
	ck_assert(!has_opaque("out/a"));
	ck_assert_int_eq(lstat(at("out/a"), &st), 0);
	ck_assert_int_eq(st.st_mtim.tv_sec, 1200000001);
	/* opaque b: only what L2 put there, still opaque */
	ck_assert(has_opaque("out/b"));
	assert_text("out/b/new", "n2");
	assert_absent("out/b/k");
	assert_absent("out/b/sub");
	assert_link("out/link", "other");
	assert_link("out/f", "a");
	assert_whiteout("out/g");
	/* c: file over dir, then dir over file */
	ck_assert(has_opaque("out/c"));
	assert_text("out/c/n", "n3");
	assert_absent("out/c/old");
	ck_assert(has_opaque("out/e"));
	/* d merged, its xattr from the newest layer (L2 has none) */
	assert_text("out/d/keep", "keep");
	assert_text("out/d/more", "more");
	ck_assert_int_lt(lgetxattr(at("out/d"), "user.color", v, sizeof v), 0);
	/* metadata */
	assert_text("out/m", "mode");
	ck_assert_int_eq(lstat(at("out/m"), &st), 0);
	ck_assert_uint_eq(st.st_uid, 1234);
	ck_assert_uint_eq(st.st_gid, 5678);
	ck_assert_uint_eq(st.st_mode & 07777, 04750);
	ck_assert_int_eq(st.st_mtim.tv_sec, 1000000001);
	ck_assert_int_eq(lgetxattr(at("out/m"), "trusted.overlay.origin", v, sizeof v), 1);
	ck_assert_int_eq(lgetxattr(at("out/m"), "user.note", v, sizeof v), 2);
	ck_assert_int_eq(memcmp(v, "hi", 2), 0);
	ck_assert_int_eq(lstat(at("out/fifo"), &st), 0);
	ck_assert(S_ISFIFO(st.st_mode));
	ck_assert_int_eq(lstat(at("out"), &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0751);
	/* hard links stay links */
	assert_text("out/h1", "hard");
	assert_text("out/h2", "hard");
	ck_assert_int_eq(lstat(at("out/h1"), &st), 0);
	ck_assert_int_eq(lstat(at("out/h2"), &st2), 0);
	ck_assert_uint_eq(st.st_ino, st2.st_ino);
	/* the sources are untouched */
	assert_text("l1/a/x", "x1");
	assert_whiteout("l2/a/y");
	assert_text("l1/b/k", "k1");
}
END_TEST

START_TEST(test_merge_whiteout_over_dir)
{
	const char *layers[2];
	pd_error err = {0};

	dir("l1");
	dir("l1/t");
	put("l1/t/a", "a");
	dir("l2");
	whiteout("l2/t");
	dir("out");
	layers[0] = at("l1");
	layers[1] = at("l2");
	ck_assert_int_eq(layer_merge(layers, 2, at("out"), &err), 0);
	assert_whiteout("out/t");
	/* a single layer merges to an equal copy */
	dir("one");
	layers[0] = at("l2");
	ck_assert_int_eq(layer_merge(layers, 1, at("one"), &err), 0);
	assert_whiteout("one/t");
}
END_TEST

/* Disk blocks (512 bytes) under tmpdir/rel, each inode counted once. */
static long long blocks_under(const char *rel)
{
	char cmd[4200];
	long long kib = -1;
	FILE *p;

	snprintf(cmd, sizeof cmd, "du -sk '%s'", at(rel));
	p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(fscanf(p, "%lld", &kib), 1);
	pclose(p);
	return kib * 2;
}

/* A layer of 1 MiB and 300 hard links to it merges into 1 MiB, not 301:
 * the names stay links of one file, also where a newer layer replaces or
 * deletes some of them. */
START_TEST(test_merge_keeps_hard_links)
{
	enum { LINKS = 300, SIZE = 1 << 20 };
	const char *layers[2];
	char name[64], *data = malloc(SIZE);
	struct stat st, st2;
	pd_error err = {0};
	int fd;

	ck_assert_ptr_nonnull(data);
	memset(data, 'x', SIZE);
	dir("l1");
	dir("l1/sub");
	fd = open(at("l1/big"), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, data, SIZE), SIZE);
	close(fd);
	free(data);
	ck_assert_int_eq(chown(at("l1/big"), 1000, 1000), 0);
	for (int i = 0; i < LINKS; i++) {
		snprintf(name, sizeof name, "l1/%sl%03d", i % 2 ? "sub/" : "", i);
		ck_assert_int_eq(link(at("l1/big"), at(name)), 0);
	}
	/* The newer layer deletes one name and gives another new content. */
	dir("l2");
	dir("l2/sub");
	whiteout("l2/l000");
	put("l2/sub/l001", "new");
	dir("out");
	layers[0] = at("l1");
	layers[1] = at("l2");
	ck_assert_msg(layer_merge(layers, 2, at("out"), &err) == 0, "%s", err.msg);

	ck_assert_int_eq(stat(at("out/big"), &st), 0);
	ck_assert_int_eq(st.st_size, SIZE);
	ck_assert_int_eq(st.st_uid, 1000);
	ck_assert_int_eq(st.st_mode & 07777, 0640);
	ck_assert_int_eq(st.st_nlink, LINKS + 1 - 2);
	for (int i = 2; i < LINKS; i++) {
		snprintf(name, sizeof name, "out/%sl%03d", i % 2 ? "sub/" : "", i);
		ck_assert_int_eq(stat(at(name), &st2), 0);
		ck_assert_msg(st2.st_ino == st.st_ino, "%s is a copy", name);
	}
	assert_whiteout("out/l000");
	assert_text("out/sub/l001", "new");
	ck_assert_msg(blocks_under("out") < 2 * SIZE / 512, "merged layer takes %lld blocks",
		      blocks_under("out"));
}
END_TEST

START_TEST(test_merge_refuses)
{
	const char *layers[1];
	pd_error err = {0};

	dir("l1");
	dir("l1/moved");
	ck_assert_int_eq(lsetxattr(at("l1/moved"), "trusted.overlay.redirect", "/x", 2, 0), 0);
	dir("out");
	layers[0] = at("l1");
	ck_assert_int_eq(layer_merge(layers, 1, at("out"), &err), -ENOTSUP);
	ck_assert_ptr_nonnull(strstr(err.msg, "redirect"));
	layers[0] = at("missing");
	ck_assert_int_eq(layer_merge(layers, 1, at("out"), &err), -ENOENT);
	put("file", "x");
	layers[0] = at("file");
	ck_assert_int_eq(layer_merge(layers, 1, at("out"), &err), -ENOTDIR);
}
END_TEST

static Suite *layers_suite(void)
{
	Suite *s = suite_create("layers");
	TCase *tc = tcase_create("stacks");

	tcase_add_test(tc, test_parse_format);
	tcase_add_test(tc, test_parse_errors);
	tcase_add_test(tc, test_depth_limit);
	tcase_add_test(tc, test_merge_count);
	suite_add_tcase(s, tc);
	/* mknod 0/0 (whiteouts), trusted.* and chown need root. */
	if (is_root()) {
		tc = tcase_create("merge");
		tcase_add_checked_fixture(tc, merge_setup, merge_teardown);
		tcase_add_test(tc, test_merge_overlay_rules);
		tcase_add_test(tc, test_merge_whiteout_over_dir);
		tcase_add_test(tc, test_merge_keeps_hard_links);
		tcase_add_test(tc, test_merge_refuses);
		suite_add_tcase(s, tc);
	}
	tc = tcase_create("names");
	tcase_add_test(tc, test_snapshot_ids);
	tcase_add_test(tc, test_dir_names);
	tcase_add_test(tc, test_garbage);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	static const char *const root_only[] = {
	    "test_merge_overlay_rules", "test_merge_whiteout_over_dir",
	    "test_merge_keeps_hard_links", "test_merge_refuses"};

	return check_tap_run_skipping(layers_suite(), root_only,
				      is_root() ? 0 : ELEMENTSOF(root_only),
				      "needs root (whiteouts, trusted.* xattrs, chown)");
}
