/* check_diskimg.c - per-box ext4 images (diskimg.c): template sizing,
 * sparse copies, loop mounts that clear themselves, ENOSPC at the size,
 * statfs usage, offline resize (root and e2fsprogs for the images:
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
#include "runtime/diskimg.h"
#include "common/util.h"

#define MIB (1ull << 20)

static char dir[96];

/* Loop devices whose backing file is under dir, but for those whose
 * filesystem lives on (/proc/fs/ext4/loopN): a mount namespace copied
 * while it was mounted here (any crun on the host runs in one, until it
 * ends) keeps it, which the test cannot help. */
static int loops_under(const char *d)
{
	char cmd[512], buf[64] = "";
	FILE *f;

	snprintf(cmd, sizeof cmd,
		 "losetup -nO NAME,BACK-FILE | awk -v d=%s/ 'index($2, d) == 1 {print $1}' | "
		 "while read -r n; do [ -e /proc/fs/ext4/${n#/dev/} ] || echo $n; done | wc -l",
		 d);
	f = popen(cmd, "r");
	ck_assert_ptr_nonnull(f);
	if (!fgets(buf, sizeof buf, f))
		buf[0] = '\0';
	pclose(f);
	return atoi(buf);
}

/* The kernel clears an autoclear loop device after its last unmount
 * asynchronously: true once none is left under d (5 s at most). */
static bool loops_gone(const char *d)
{
	for (int i = 0; i < 100; i++) {
		if (loops_under(d) == 0)
			return true;
		usleep(50 * 1000);
	}
	return false;
}

/* The run's directory (made by the parent process, before the tests are
 * forked) and the test's, inside it. */
static char base[64];

static void clean(const char *d)
{
	char cmd[512];

	snprintf(cmd, sizeof cmd,
		 "awk -v d=%s/ 'index($2, d) == 1 {print $2}' /proc/self/mounts | sort -r | "
		 "while read -r m; do umount \"$m\" || umount -l \"$m\"; done; "
		 "losetup -nO NAME,BACK-FILE | awk -v d=%s/ 'index($2, d) == 1 {print $1}' | "
		 "xargs -r -n1 losetup -d; rm -rf %s",
		 d, d, d);
	ck_assert_int_eq(system(cmd), 0);
}

static void setup_run(void)
{
	snprintf(base, sizeof base, "/var/tmp/check-diskimg.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(base));
}

/* In the parent, after every test: also what a failed test left (a
 * failure ends the forked test before its own teardown). */
static void teardown_run(void)
{
	clean(base);
}

static void setup(void)
{
	snprintf(dir, sizeof dir, "%s/t.XXXXXX", base);
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
	clean(dir);
}

START_TEST(test_next_size)
{
	/* Enough: unchanged. */
	ck_assert_uint_eq(diskimg_next_size(64 * MIB, 64 * MIB, 64 * MIB), 64 * MIB);
	ck_assert_uint_eq(diskimg_next_size(64 * MIB, 70 * MIB, 65 * MIB), 70 * MIB);
	/* Short by 9 MiB: 9 MiB more. */
	ck_assert_uint_eq(diskimg_next_size(64 * MIB, 64 * MIB, 55 * MIB), 73 * MIB);
	/* Rounded up to a MiB. */
	ck_assert_uint_eq(diskimg_next_size(64 * MIB, 64 * MIB, 64 * MIB - 1), 65 * MIB);
}
END_TEST

START_TEST(test_template_path)
{
	char buf[64];

	ck_assert_int_eq(diskimg_template_path("/d", 64 * MIB, buf, sizeof buf), 0);
	ck_assert_str_eq(buf, "/d/ext4-67108864.img");
	ck_assert_int_eq(diskimg_template_path("/d", 64 * MIB, buf, 8), -ENAMETOOLONG);
}
END_TEST

/* Below the floor: the floor. */
START_TEST(test_too_small)
{
	char t[4096];
	pd_error err = {0};
	struct stat st;

	ck_assert_msg(diskimg_template(dir, MIB, t, sizeof t, &err) == 0, "%s", err.msg);
	ck_assert_ptr_nonnull(strstr(t, "/ext4-16777216.img"));
	ck_assert_int_eq(stat(t, &st), 0);
	ck_assert_uint_ge((uint64_t)st.st_size, DISKIMG_MIN_BYTES);
}
END_TEST

/* A template shows at least its disk in statfs; a copy is sparse; the
 * mounted copy fails with ENOSPC at its size, and its loop device goes
 * with the unmount. */
START_TEST(test_template_copy_fill)
{
	char t[4096], img[4096], mnt[2048], file[4096];
	uint64_t used, total;
	pd_error err = {0};
	struct stat st, tst;
	static char block[1 << 20];
	int fd, r = 0;
	uint64_t written = 0;

	ck_assert_msg(diskimg_template(dir, 64 * MIB, t, sizeof t, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(stat(t, &tst), 0);
	ck_assert_uint_ge((uint64_t)tst.st_size, 64 * MIB);
	/* A second call finds it. */
	ck_assert_int_eq(diskimg_template(dir, 64 * MIB, t, sizeof t, &err), 0);

	snprintf(img, sizeof img, "%s/box.img", dir);
	ck_assert_msg(diskimg_copy(t, img, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(stat(img, &st), 0);
	ck_assert_int_eq(st.st_size, tst.st_size);
	ck_assert_int_le(st.st_blocks, tst.st_blocks); /* holes stay holes */
	ck_assert_int_lt((uint64_t)st.st_blocks * 512, 8 * MIB);
	/* dst must not exist. */
	ck_assert_int_eq(diskimg_copy(t, img, &err), -EEXIST);

	snprintf(mnt, sizeof mnt, "%s/mnt", dir);
	ck_assert_int_eq(mkdir(mnt, 0700), 0);
	ck_assert_msg(diskimg_mount(img, mnt, false, &err) == 0, "%s", err.msg);
	ck_assert_int_ge(diskimg_bound(img), 0);
	ck_assert_int_eq(diskimg_usage(mnt, &used, &total), 0);
	ck_assert_uint_ge(total, 64 * MIB);
	ck_assert_uint_lt(total, 66 * MIB);

	snprintf(file, sizeof file, "%s/fill", mnt);
	fd = open(file, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	ck_assert_int_ge(fd, 0);
	memset(block, 'x', sizeof block);
	while (written < 128 * MIB) {
		ssize_t n = write(fd, block, sizeof block);
		if (n < 0) {
			r = -errno;
			break;
		}
		written += (uint64_t)n;
	}
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	close(fd);
	ck_assert_int_eq(r, -ENOSPC);
	ck_assert_uint_le(written, 65 * MIB);
	ck_assert_uint_ge(written, 60 * MIB);
	ck_assert_int_eq(diskimg_usage(mnt, &used, &total), 0);
	ck_assert_uint_ge(used, 60 * MIB);

	ck_assert_int_eq(diskimg_umount(mnt), 0);
	ck_assert_int_eq(diskimg_umount(mnt), 0); /* not a mount point: done */
	ck_assert(loops_gone(dir));
	/* The file kept what was written. */
	ck_assert_msg(diskimg_mount(img, mnt, true, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(stat(file, &st), 0);
	ck_assert_uint_eq((uint64_t)st.st_size, written);
	/* Read-only. */
	fd = open(file, O_WRONLY | O_CLOEXEC);
	ck_assert_int_eq(fd, -1);
	ck_assert_int_eq(errno, EROFS);
	ck_assert_int_eq(diskimg_umount(mnt), 0);
	ck_assert(loops_gone(dir));
}
END_TEST

/* A mount that fails leaves no loop device behind. */
START_TEST(test_failed_mount_clears)
{
	char img[4096], mnt[4096];
	pd_error err = {0};
	int fd;

	snprintf(img, sizeof img, "%s/garbage.img", dir);
	fd = open(img, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, 32 * MIB), 0);
	close(fd);
	snprintf(mnt, sizeof mnt, "%s/mnt", dir);
	ck_assert_int_eq(mkdir(mnt, 0700), 0);
	ck_assert_int_lt(diskimg_mount(img, mnt, false, &err), 0);
	ck_assert_ptr_nonnull(strstr(err.msg, "cannot mount"));
	ck_assert(loops_gone(dir));
}
END_TEST

START_TEST(test_resize)
{
	char t[4096], img[4096], mnt[2048], file[4096];
	uint64_t used, total, small;
	pd_error err = {0};
	struct stat st;
	int fd;

	ck_assert_msg(diskimg_template(dir, 32 * MIB, t, sizeof t, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(stat(t, &st), 0);
	small = (uint64_t)st.st_size;
	snprintf(img, sizeof img, "%s/box.img", dir);
	snprintf(mnt, sizeof mnt, "%s/mnt", dir);
	ck_assert_int_eq(mkdir(mnt, 0700), 0);
	ck_assert_int_eq(diskimg_copy(t, img, &err), 0);

	ck_assert_msg(diskimg_resize(img, 2 * small, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(diskimg_mount(img, mnt, false, &err), 0);
	ck_assert_int_eq(diskimg_usage(mnt, &used, &total), 0);
	ck_assert_uint_ge(total, 60 * MIB);
	/* 40 MiB of files: more than the small size holds. */
	snprintf(file, sizeof file, "%s/f", mnt);
	fd = open(file, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fallocate(fd, 0, 0, 40 * MIB), 0);
	close(fd);
	ck_assert_int_eq(diskimg_umount(mnt), 0);

	/* A shrink below the files is refused and changes nothing. */
	ck_assert_int_lt(diskimg_resize(img, small, &err), 0);
	ck_assert_int_eq(stat(img, &st), 0);
	ck_assert_uint_eq((uint64_t)st.st_size, 2 * small);
	ck_assert_int_eq(diskimg_mount(img, mnt, true, &err), 0);
	ck_assert_int_eq(stat(file, &st), 0);
	ck_assert_int_eq(st.st_size, 40 * MIB);
	ck_assert_int_eq(diskimg_umount(mnt), 0);
	ck_assert(loops_gone(dir));
}
END_TEST

/* A fresh copy's upper/ is claimed once, by the first mount's box; the
 * mount says which image it is; a second writer of one image is refused. */
START_TEST(test_claim_and_one_writer)
{
	char t[4096], img[4096], other[4096], mnt[2048], mnt2[2048], p[4096];
	pd_error err = {0};
	struct stat st;

	ck_assert_msg(diskimg_template(dir, 32 * MIB, t, sizeof t, &err) == 0, "%s", err.msg);
	snprintf(img, sizeof img, "%s/a.img", dir);
	snprintf(other, sizeof other, "%s/b.img", dir);
	snprintf(mnt, sizeof mnt, "%s/mnt", dir);
	snprintf(mnt2, sizeof mnt2, "%s/mnt2", dir);
	ck_assert_int_eq(mkdir(mnt, 0700), 0);
	ck_assert_int_eq(mkdir(mnt2, 0700), 0);
	ck_assert_int_eq(diskimg_copy(t, img, &err), 0);
	ck_assert_int_eq(diskimg_copy(t, other, &err), 0);
	ck_assert_int_eq(diskimg_mounted_from(mnt, img), -ENOTCONN);
	ck_assert_int_eq(diskimg_bound(img), -ENOENT);

	ck_assert_int_eq(diskimg_mount(img, mnt, false, &err), 0);
	ck_assert_int_eq(diskimg_is_mount(mnt), 1);
	ck_assert_int_eq(diskimg_is_mount(dir), 0);
	ck_assert_int_eq(diskimg_mounted_from(mnt, img), 1);
	ck_assert_int_eq(diskimg_mounted_from(mnt, other), 0);
	ck_assert_int_ge(diskimg_bound(img), 0);
	snprintf(p, sizeof p, "%s/upper", mnt);
	ck_assert_int_eq(stat(p, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, DISKIMG_UNCLAIMED_MODE);
	snprintf(p, sizeof p, "%s/work", mnt);
	ck_assert_int_eq(stat(p, &st), 0);
	snprintf(p, sizeof p, "%s/upper", mnt);
	ck_assert_int_eq(diskimg_claim(mnt, 1234), 0);
	ck_assert_int_eq(stat(p, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0755);
	ck_assert_uint_eq(st.st_uid, 1234);
	/* Claimed: what its box does with it stays. */
	ck_assert_int_eq(chmod(p, DISKIMG_UNCLAIMED_MODE), 0);
	ck_assert_int_eq(diskimg_claim(mnt, 99), 0);
	ck_assert_int_eq(stat(p, &st), 0);
	ck_assert_uint_eq(st.st_uid, 1234);

	/* One filesystem per image: a second mount is the same one (a file
	 * made through one is seen through the other at once), on the same
	 * loop device; read-only, it cannot write. */
	ck_assert_msg(diskimg_mount(img, mnt2, false, &err) == 0, "%s", err.msg);
	{
		struct stat a, b2;
		char q[4096];
		int fd;

		ck_assert_int_eq(stat(mnt, &a), 0);
		ck_assert_int_eq(stat(mnt2, &b2), 0);
		ck_assert_int_eq(a.st_dev, b2.st_dev);
		snprintf(q, sizeof q, "%s/seen", mnt);
		fd = open(q, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
		ck_assert_int_ge(fd, 0);
		close(fd);
		snprintf(q, sizeof q, "%s/seen", mnt2);
		ck_assert_int_eq(access(q, F_OK), 0);
		ck_assert_int_eq(diskimg_umount(mnt2), 0);
		ck_assert_int_eq(diskimg_mount(img, mnt2, true, &err), 0);
		ck_assert_int_eq(stat(mnt2, &b2), 0);
		ck_assert_int_eq(a.st_dev, b2.st_dev);
		snprintf(q, sizeof q, "%s/no", mnt2);
		ck_assert_int_eq(open(q, O_WRONLY | O_CREAT | O_CLOEXEC, 0600), -1);
		ck_assert_int_eq(errno, EROFS);
		ck_assert_int_eq(diskimg_umount(mnt2), 0);
	}
	/* Resizing one in use is refused. */
	ck_assert_int_eq(diskimg_resize(img, 64 * MIB, &err), -EBUSY);
	/* A lazily unmounted one that something still holds: mounted again
	 * from its device, not a second filesystem. */
	{
		char q[4096];
		struct stat a, b2;
		int held;

		snprintf(q, sizeof q, "%s/seen", mnt);
		held = open(q, O_RDONLY | O_CLOEXEC);
		ck_assert_int_ge(held, 0);
		ck_assert_int_eq(fstat(held, &a), 0);
		ck_assert_int_eq(umount2(mnt, MNT_DETACH), 0);
		ck_assert_int_eq(diskimg_is_mount(mnt), 0);
		ck_assert_msg(diskimg_mount(img, mnt2, false, &err) == 0, "%s", err.msg);
		ck_assert_int_eq(stat(mnt2, &b2), 0);
		ck_assert_int_eq(a.st_dev, b2.st_dev);
		close(held);
		ck_assert_int_eq(diskimg_umount(mnt2), 0);
	}
	ck_assert(loops_gone(dir));
	/* Right after the unmount (the device clears asynchronously): a
	 * fresh mount works. */
	ck_assert_msg(diskimg_mount(img, mnt2, false, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(diskimg_mounted_from(mnt2, img), 1);
	ck_assert_int_eq(diskimg_umount(mnt2), 0);
	ck_assert(loops_gone(dir));
}
END_TEST

static bool can_run(void)
{
	return geteuid() == 0 && system("command -v mkfs.ext4 resize2fs e2fsck >/dev/null") == 0 &&
	       access("/dev/loop-control", R_OK | W_OK) == 0;
}

static Suite *diskimg_suite(void)
{
	Suite *s = suite_create("diskimg");
	TCase *tc = tcase_create("pure");

	tcase_add_test(tc, test_next_size);
	tcase_add_test(tc, test_template_path);
	suite_add_tcase(s, tc);
	if (can_run()) {
		tc = tcase_create("images");
		tcase_set_timeout(tc, 60);
		tcase_add_unchecked_fixture(tc, setup_run, teardown_run);
		tcase_add_checked_fixture(tc, setup, teardown);
		tcase_add_test(tc, test_too_small);
		tcase_add_test(tc, test_template_copy_fill);
		tcase_add_test(tc, test_failed_mount_clears);
		tcase_add_test(tc, test_resize);
		tcase_add_test(tc, test_claim_and_one_writer);
		suite_add_tcase(s, tc);
	}
	return s;
}

int main(void)
{
	static const char *const root_only[] = {"test_too_small", "test_template_copy_fill",
						"test_failed_mount_clears", "test_resize",
						"test_claim_and_one_writer"};

	return check_tap_run_skipping(diskimg_suite(), root_only,
				      can_run() ? 0 : ELEMENTSOF(root_only),
				      "needs root, /dev/loop-control and e2fsprogs");
}
