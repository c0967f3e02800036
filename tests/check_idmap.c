/* check_idmap.c - ranges, the user namespaces and id-mapped trees of
 * idmap.c, the move of a tree between ranges, and the allocation of
 * ranges in the store (root for chown, user namespaces and mounts:
 * skipped otherwise). */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check-tap.h"
#include "runtime/idmap.h"
#include "store/store.h"
#include "common/util.h"

#define B1 1073741824u
#define B2 (B1 + IDMAP_IDS)

static char dir[64];

static void setup(void)
{
	snprintf(dir, sizeof dir, "/tmp/check-idmap.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
}

START_TEST(test_base_of)
{
	ck_assert_uint_eq(idmap_base_of(0), 0);
	ck_assert_uint_eq(idmap_base_of(65535), 0);
	ck_assert_uint_eq(idmap_base_of(B1), B1);
	ck_assert_uint_eq(idmap_base_of(B1 + 1000), B1);
	ck_assert_uint_eq(idmap_base_of(B2 - 1), B1);
	ck_assert_uint_eq(idmap_base_of(B2), B2);
}
END_TEST

static void make(const char *name, mode_t mode, uid_t uid, gid_t gid)
{
	char p[256];
	int fd;

	snprintf(p, sizeof p, "%s/%s", dir, name);
	if (S_ISDIR(mode))
		ck_assert_int_eq(mkdir(p, mode & 07777), 0);
	else if (S_ISLNK(mode))
		ck_assert_int_eq(symlink("target", p), 0);
	else {
		fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
		ck_assert_int_ge(fd, 0);
		close(fd);
	}
	ck_assert_int_eq(lchown(p, uid, gid), 0);
	if (!S_ISLNK(mode))
		ck_assert_int_eq(chmod(p, mode & 07777), 0);
}

static struct stat st_of(const char *name)
{
	char p[256];
	struct stat st;

	snprintf(p, sizeof p, "%s/%s", dir, name);
	ck_assert_int_eq(lstat(p, &st), 0);
	return st;
}

START_TEST(test_shift_tree)
{
	pd_error err = {0};
	struct stat st;

	make("t", S_IFDIR | 0755, 0, 0);
	make("t/sub", S_IFDIR | 0700, 1000, 1000);
	make("t/sub/suid", S_IFREG | 04755, 0, 0);
	make("t/link", S_IFLNK | 0777, 1000, 5);
	make("t/foreign", S_IFREG | 0644, 70000, 70000);
	char root[128];
	snprintf(root, sizeof root, "%s/t", dir);
	ck_assert_int_eq(idmap_dir_base(root), 0);
	ck_assert_int_eq(idmap_shift_tree(root, 0, B1, &err), 0);
	ck_assert_int_eq(idmap_dir_base(root), B1);
	st = st_of("t/sub");
	ck_assert_uint_eq(st.st_uid, B1 + 1000);
	ck_assert_uint_eq(st.st_gid, B1 + 1000);
	st = st_of("t/sub/suid");
	ck_assert_uint_eq(st.st_uid, B1);
	ck_assert_uint_eq(st.st_mode & 07777, 04755); /* kept through chown */
	st = st_of("t/link");
	ck_assert(S_ISLNK(st.st_mode));
	ck_assert_uint_eq(st.st_uid, B1 + 1000);
	ck_assert_uint_eq(st.st_gid, B1 + 5);
	st = st_of("t/foreign"); /* outside range 0: stays */
	ck_assert_uint_eq(st.st_uid, 70000);
	/* Again: nothing in range 0 is left; the walk is idempotent. */
	ck_assert_int_eq(idmap_shift_tree(root, 0, B1, &err), 0);
	ck_assert_uint_eq(st_of("t/sub").st_uid, B1 + 1000);
	/* And on to another range. */
	ck_assert_int_eq(idmap_shift_tree(root, B1, B2, &err), 0);
	ck_assert_uint_eq(st_of("t/sub/suid").st_uid, B2);
	ck_assert_uint_eq(st_of("t/link").st_gid, B2 + 5);
	ck_assert_int_eq(idmap_dir_base(root), B2);
	ck_assert_int_eq(idmap_shift_tree("/nonexistent-dir-xyz", 0, B1, &err), -ENOENT);
}
END_TEST

START_TEST(test_userns_and_tree)
{
	pd_error err = {0};
	char root[128], mnt[128], path[256];
	struct stat st;
	int ns = -1, fd = -1;

	make("img", S_IFDIR | 0755, 0, 0);
	make("img/f", S_IFREG | 0644, 1000, 1000);
	snprintf(root, sizeof root, "%s/img", dir);
	ck_assert_int_eq(idmap_userns(0, B1, &ns), 0);
	ck_assert_int_ge(ns, 0);
	ck_assert_int_eq(idmap_open_tree(root, ns, &fd, &err), 0);
	close(ns);
	/* Through the detached tree the files show in range B1, read-only. */
	snprintf(path, sizeof path, "/proc/self/fd/%d/f", fd);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_uint_eq(st.st_uid, B1 + 1000);
	ck_assert_int_eq(open(path, O_WRONLY | O_CLOEXEC), -1);
	ck_assert_int_eq(errno, EROFS);
	/* Mounted on a directory it stays so; the directory itself is not
	 * changed on disk. */
	snprintf(mnt, sizeof mnt, "%s/mnt", dir);
	ck_assert_int_eq(mkdir(mnt, 0755), 0);
	ck_assert_int_eq(move_mount(fd, "", AT_FDCWD, mnt, MOVE_MOUNT_F_EMPTY_PATH), 0);
	snprintf(path, sizeof path, "%s/f", mnt);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_uint_eq(st.st_uid, B1 + 1000);
	ck_assert_int_eq(umount2(mnt, MNT_DETACH), 0);
	close(fd);
	ck_assert_uint_eq(st_of("img/f").st_uid, 1000);
	/* Not mapped: a plain read-only copy. */
	ck_assert_int_eq(idmap_open_tree(root, -1, &fd, &err), 0);
	snprintf(path, sizeof path, "/proc/self/fd/%d/f", fd);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_uint_eq(st.st_uid, 1000);
	close(fd);
	ck_assert_int_eq(idmap_open_tree("/nonexistent-dir-xyz", -1, &fd, &err), -ENOENT);
}
END_TEST

START_TEST(test_store_ranges)
{
	char path[128];
	struct store *s = NULL;
	struct box_row a = {.state = "created", .type = "small", .image = "tiny", .uid_base = -1};
	struct box_row b, c;
	int64_t next;
	pd_error err = {0};

	snprintf(path, sizeof path, "%s/db", dir);
	ck_assert_int_eq(store_open(path, &s, &err), 0);
	/* No range configured: allocation is refused. */
	ck_assert_int_eq(store_box_alloc_ids(s, &next, &err), -EINVAL);
	store_set_user_ids(s, B1, 3 * IDMAP_IDS);
	snprintf(a.name, sizeof a.name, "a");
	ck_assert_int_eq(store_box_insert(s, &a, &err), 0);
	ck_assert_int_eq(a.uid_base, B1);
	b = a;
	b.uid_base = -1;
	snprintf(b.name, sizeof b.name, "b");
	ck_assert_int_eq(store_box_insert(s, &b, &err), 0);
	ck_assert_int_eq(b.uid_base, B1 + IDMAP_IDS);
	/* A gap (a deleted) is filled first. */
	ck_assert_int_eq(store_box_delete(s, a.id, &err), 0);
	c = a;
	c.uid_base = -1;
	snprintf(c.name, sizeof c.name, "c");
	ck_assert_int_eq(store_box_insert(s, &c, &err), 0);
	ck_assert_int_eq(c.uid_base, B1);
	/* Two boxes never share one: the index refuses. */
	a.uid_base = B1;
	snprintf(a.name, sizeof a.name, "dup");
	ck_assert_int_eq(store_box_insert(s, &a, &err), -EEXIST);
	/* A box from before (0) takes none. */
	a.uid_base = 0;
	snprintf(a.name, sizeof a.name, "old");
	ck_assert_int_eq(store_box_insert(s, &a, &err), 0);
	ck_assert_int_eq(a.uid_base, 0);
	a.uid_base = 0;
	snprintf(a.name, sizeof a.name, "old2");
	ck_assert_int_eq(store_box_insert(s, &a, &err), 0);
	/* The third range, then none left. */
	ck_assert_int_eq(store_box_alloc_ids(s, &next, &err), 0);
	ck_assert_int_eq(next, B1 + 2 * IDMAP_IDS);
	a.uid_base = -1;
	snprintf(a.name, sizeof a.name, "d");
	ck_assert_int_eq(store_box_insert(s, &a, &err), 0);
	a.uid_base = -1;
	snprintf(a.name, sizeof a.name, "e");
	ck_assert_int_eq(store_box_insert(s, &a, &err), -ENOSPC);
	ck_assert_ptr_nonnull(strstr(err.msg, "every range of user ids is taken"));
	store_close(s);
}
END_TEST

static bool is_root(void)
{
	return geteuid() == 0;
}

static Suite *idmap_suite(void)
{
	Suite *s = suite_create("idmap");
	TCase *tc = tcase_create("ranges");

	tcase_add_test(tc, test_base_of);
	suite_add_tcase(s, tc);
	tc = tcase_create("store");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_store_ranges);
	suite_add_tcase(s, tc);
	if (is_root()) {
		tc = tcase_create("trees");
		tcase_add_checked_fixture(tc, setup, teardown);
		tcase_add_test(tc, test_shift_tree);
		tcase_add_test(tc, test_userns_and_tree);
		suite_add_tcase(s, tc);
	}
	return s;
}

int main(void)
{
	static const char *const root_only[] = {"test_shift_tree", "test_userns_and_tree"};

	return check_tap_run_skipping(idmap_suite(), root_only,
				      is_root() ? 0 : ELEMENTSOF(root_only),
				      "needs root (chown, user namespaces, mounts)");
}
