/* check_cgroup.c - reading a box's cgroup (on a made-up cgroup tree, v1 and
 * v2 layouts), the recent CPU use computed from samples of it, and giving a
 * Docker box its cgroup (cgroup_delegate: on a made-up tree, and, as root
 * on a cgroup v1 host, on a real cpuset hierarchy) and its own v2 cgroup on
 * a v1 or hybrid host (cgroup_v2_*). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <linux/magic.h>
#include <unistd.h>

#include "runtime/cgroup.h"
#include "check-tap.h"
#include "common/util.h"

#define S 1000000ULL /* a second, in microseconds */

/* ---- core ---- */

/* A box on one full CPU: 100; on half of one: 50; on two: 200. */
START_TEST(test_percent_busy)
{
	struct cgroup_cpu_window w = {0};

	for (uint64_t t = 0; t <= 6; t++)
		cgroup_cpu_add(&w, 1000 * S + t * S, t * S);
	ck_assert_uint_eq(cgroup_cpu_percent(&w, 5 * S, S, 1006 * S + S / 2, 6 * S + S / 2), 100);

	memset(&w, 0, sizeof w);
	for (uint64_t t = 0; t <= 6; t++)
		cgroup_cpu_add(&w, t * S, t * S / 2);
	ck_assert_uint_eq(cgroup_cpu_percent(&w, 5 * S, S, 6 * S, 3 * S), 50);

	memset(&w, 0, sizeof w);
	for (uint64_t t = 0; t <= 6; t++)
		cgroup_cpu_add(&w, t * S, 2 * t * S);
	ck_assert_uint_eq(cgroup_cpu_percent(&w, 5 * S, S, 6 * S, 12 * S), 200);
}
END_TEST

START_TEST(test_percent_idle)
{
	struct cgroup_cpu_window w = {0};

	for (uint64_t t = 0; t <= 10; t++)
		cgroup_cpu_add(&w, t * S, 1234);
	ck_assert_uint_eq(cgroup_cpu_percent(&w, 5 * S, S, 10 * S, 1234), 0);
}
END_TEST

/* Only the last window counts: a box that spun and then went idle reads
 * 0 once the spinning is more than a window old. */
START_TEST(test_percent_recent_only)
{
	struct cgroup_cpu_window w = {0};
	uint64_t cpu = 0;

	for (uint64_t t = 0; t <= 20; t++) {
		cgroup_cpu_add(&w, t * S, cpu);
		if (t < 10)
			cpu += S; /* busy for 10 s, then idle */
	}
	ck_assert_uint_eq(cgroup_cpu_percent(&w, 5 * S, S, 20 * S, cpu), 0);
	/* 3 of the last 5 s busy (7 to 10). */
	memset(&w, 0, sizeof w);
	cpu = 0;
	for (uint64_t t = 0; t <= 12; t++) {
		cgroup_cpu_add(&w, t * S, cpu);
		if (t < 10)
			cpu += S;
	}
	ck_assert_uint_eq(cgroup_cpu_percent(&w, 5 * S, S, 12 * S, cpu), 60);
}
END_TEST

/* The base is the newest sample at least the window old: with samples a
 * second apart, the window is 5 to 6 s. */
START_TEST(test_percent_base)
{
	struct cgroup_cpu_window w = {0};

	/* Busy only from 4.5 s to 5 s; samples at 0..5. Read at 10.5: the
	 * base is the sample at 5 (5.5 s old), which already holds it. */
	cgroup_cpu_add(&w, 0, 0);
	for (uint64_t t = 1; t <= 5; t++)
		cgroup_cpu_add(&w, t * S, t == 5 ? S / 2 : 0);
	for (uint64_t t = 6; t <= 10; t++)
		cgroup_cpu_add(&w, t * S, S / 2);
	ck_assert_uint_eq(cgroup_cpu_percent(&w, 5 * S, S, 10 * S + S / 2, S / 2), 0);
	/* Read at 9.9: the base is the sample at 4 (5.9 s old). */
	ck_assert_uint_eq(cgroup_cpu_percent(&w, 5 * S, S, 9 * S + 9 * S / 10, S / 2),
			  (unsigned)((S / 2 * 100 + 59 * S / 20) / (59 * S / 10)));
}
END_TEST

/* ---- limits ---- */

/* A box younger than the window: the oldest sample, once a second old. */
START_TEST(test_percent_young)
{
	struct cgroup_cpu_window w = {0};

	ck_assert_uint_eq(cgroup_cpu_percent(&w, 5 * S, S, 10 * S, 5 * S), 0);
	cgroup_cpu_add(&w, 10 * S, 0);
	ck_assert_uint_eq(cgroup_cpu_percent(&w, 5 * S, S, 10 * S + S / 2, S / 2), 0);
	ck_assert_uint_eq(cgroup_cpu_percent(&w, 5 * S, S, 12 * S, 2 * S), 100);
	cgroup_cpu_add(&w, 11 * S, S);
	ck_assert_uint_eq(cgroup_cpu_percent(&w, 5 * S, S, 13 * S, 2 * S), 67);
}
END_TEST

/* The ring keeps the last CGROUP_CPU_SAMPLES; older ones are gone. */
START_TEST(test_ring_wraps)
{
	struct cgroup_cpu_window w = {0};

	for (uint64_t t = 0; t < 100; t++)
		cgroup_cpu_add(&w, t * S, t < 90 ? 0 : (t - 89) * S);
	ck_assert_uint_eq(w.n, CGROUP_CPU_SAMPLES);
	/* Window far longer than the ring: the oldest kept sample (t = 92). */
	ck_assert_uint_eq(cgroup_cpu_percent(&w, 60 * S, S, 99 * S, 10 * S), 100);
}
END_TEST

/* ---- errors ---- */

/* A counter that goes back (the box was started again: a new cgroup)
 * starts the window over; a read below the base gives 0, never a wrap. */
START_TEST(test_counter_back)
{
	struct cgroup_cpu_window w = {0};

	for (uint64_t t = 0; t <= 6; t++)
		cgroup_cpu_add(&w, t * S, 100 * S + t * S);
	ck_assert_uint_eq(cgroup_cpu_percent(&w, 5 * S, S, 7 * S, 10 * S), 0);
	cgroup_cpu_add(&w, 7 * S, 0);
	ck_assert_uint_eq(w.n, 1);
	ck_assert_uint_eq(cgroup_cpu_percent(&w, 5 * S, S, 8 * S, S), 100);
}
END_TEST

/* Samples from the future (a clock read before another thread's sample)
 * are skipped, not taken for a negative age. */
START_TEST(test_sample_after_now)
{
	struct cgroup_cpu_window w = {0};

	cgroup_cpu_add(&w, 0, 0);
	cgroup_cpu_add(&w, 5 * S, 5 * S);
	ck_assert_uint_eq(cgroup_cpu_percent(&w, 5 * S, S, 4 * S, 4 * S), 100);
}
END_TEST

/* ---- reading a cgroup tree ---- */

static char root[64];

static void put(const char *rel, const char *text)
{
	char p[256];

	snprintf(p, sizeof p, "%s/%s", root, rel);
	ck_assert_int_eq(write_file_atomic(p, text, strlen(text), 0644), 0);
}

static void setup(void)
{
	snprintf(root, sizeof root, "/tmp/check-cgroup.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(root));
}

static void teardown(void)
{
	(void)rm_rf(root);
}

START_TEST(test_read_v1)
{
	struct cgroup_usage u;
	char p[256];

	for (const char *c = "cpuacct\0memory\0pids\0"; *c; c += strlen(c) + 1) {
		snprintf(p, sizeof p, "%s/%s/paddock/web", root, c);
		ck_assert_int_eq(mkdir_p(p, 0755), 0);
	}
	put("cpuacct/paddock/web/cpuacct.usage", "2500000000\n");
	put("memory/paddock/web/memory.usage_in_bytes", "4096\n");
	put("pids/paddock/web/pids.current", "3\n");
	ck_assert_int_eq(cgroup_read_usage(root, CGROUP_HYBRID, "/paddock/web", &u), 0);
	ck_assert_uint_eq(u.cpu_usec, 2500000);
	ck_assert_uint_eq(u.memory_bytes, 4096);
	ck_assert_uint_eq(u.pids, 3);
	ck_assert_int_eq(cgroup_read_usage(root, CGROUP_LEGACY, "/paddock/gone", &u), -ENOENT);
}
END_TEST

START_TEST(test_read_v2)
{
	struct cgroup_usage u;
	char p[256];

	snprintf(p, sizeof p, "%s/paddock/web", root);
	ck_assert_int_eq(mkdir_p(p, 0755), 0);
	put("paddock/web/cpu.stat", "usage_usec 1500\nuser_usec 1000\nsystem_usec 500\n");
	put("paddock/web/memory.current", "8192\n");
	ck_assert_int_eq(cgroup_read_usage(root, CGROUP_UNIFIED, "/paddock/web", &u), 0);
	ck_assert_uint_eq(u.cpu_usec, 1500);
	ck_assert_uint_eq(u.memory_bytes, 8192);
	ck_assert_uint_eq(u.pids, 0); /* a missing file counts as 0 */
}
END_TEST

/* ---- delegating a cgroup (cgroup_delegate) ---- */

static char outside[64];
static uid_t box_uid;
static gid_t box_gid;

/* The box's ids: another user's as root (lchown to anyone), else ours
 * (lchown to oneself is allowed; ownership then tells less). uid and gid
 * differ so that one is not taken for the other. */
static void delegate_setup(void)
{
	setup();
	snprintf(outside, sizeof outside, "/tmp/check-cgroup-out.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(outside));
	box_uid = geteuid() == 0 ? 231072 : getuid();
	box_gid = geteuid() == 0 ? 231073 : getgid();
}

static void delegate_teardown(void)
{
	teardown();
	(void)rm_rf(outside);
}

static void mk(const char *rel)
{
	char p[256];

	snprintf(p, sizeof p, "%s/%s", root, rel);
	ck_assert_int_eq(mkdir_p(p, 0755), 0);
}

static bool there(const char *rel)
{
	char p[256];

	snprintf(p, sizeof p, "%s/%s", root, rel);
	return access(p, F_OK) == 0;
}

static void assert_owner(const char *rel, uid_t uid, gid_t gid)
{
	char p[256];
	struct stat st;

	snprintf(p, sizeof p, "%s/%s", root, rel);
	ck_assert_msg(lstat(p, &st) == 0, "%s: %s", rel, strerror(errno));
	ck_assert_msg(st.st_uid == uid && st.st_gid == gid, "%s: owner %u:%u, wanted %u:%u", rel,
		      (unsigned)st.st_uid, (unsigned)st.st_gid, (unsigned)uid, (unsigned)gid);
}

/* A v1 host as it looks: a directory per hierarchy, a link naming one of
 * them again (here to a directory outside the tree, so that following it
 * would show), the hybrid v2 tree "unified", a stray file. */
static void fake_v1(void)
{
	char p[256];

	mk("cpu");
	mk("memory");
	mk("cpuset");
	mk("unified");
	put("cpuset/cpuset.cpus", "0-1\n");
	put("cpuset/cpuset.mems", "0\n");
	put("release_agent", "");
	snprintf(p, sizeof p, "%s/cpu,cpuacct", root);
	ck_assert_int_eq(symlink(outside, p), 0);
}

/* Every level of the path is made in each hierarchy; the leaf alone is the
 * box's. */
START_TEST(test_delegate_v1_levels)
{
	char p[256];

	fake_v1();
	ck_assert_int_eq(cgroup_delegate(root, CGROUP_HYBRID, "/paddock/box-7", box_uid, box_gid),
			 0);
	for (const char *c = "cpu\0memory\0cpuset\0"; *c; c += strlen(c) + 1) {
		snprintf(p, sizeof p, "%s/paddock/box-7", c);
		assert_owner(p, box_uid, box_gid);
		/* The level above stays the host's: the box must not make
		 * or remove its siblings. */
		snprintf(p, sizeof p, "%s/paddock", c);
		assert_owner(p, geteuid(), getegid());
	}
	/* Skipped: the v2 tree, the link (nothing made where it leads), the
	 * stray file. */
	ck_assert(!there("unified/paddock"));
	snprintf(p, sizeof p, "%s/paddock", outside);
	ck_assert_int_ne(access(p, F_OK), 0);
	/* A made-up tree has no cgroup.procs (cgroupfs makes it): missing
	 * files are not an error, and none is created. */
	ck_assert(!there("memory/paddock/box-7/cgroup.procs"));
	ck_assert(!there("cpuset/paddock/box-7/cpuset.cpus"));
}
END_TEST

/* Given again (every start of the box, crun having removed it), with the
 * files a real cgroup has: those that move processes become the box's,
 * the limits stay the host's. */
START_TEST(test_delegate_v1_files_idempotent)
{
	static const char *const mine[] = {"cgroup.procs", "tasks"};
	static const char *const not_mine[] = {"memory.limit_in_bytes", "cgroup.clone_children",
					       "notify_on_release"};
	char p[256];

	fake_v1();
	ck_assert_int_eq(cgroup_delegate(root, CGROUP_LEGACY, "paddock/box-7", box_uid, box_gid),
			 0);
	for (size_t i = 0; i < ELEMENTSOF(mine); i++) {
		snprintf(p, sizeof p, "memory/paddock/box-7/%s", mine[i]);
		put(p, "");
		snprintf(p, sizeof p, "cpu/paddock/box-7/%s", mine[i]);
		put(p, "");
	}
	for (size_t i = 0; i < ELEMENTSOF(not_mine); i++) {
		snprintf(p, sizeof p, "memory/paddock/box-7/%s", not_mine[i]);
		put(p, "1\n");
	}
	ck_assert_int_eq(cgroup_delegate(root, CGROUP_LEGACY, "paddock/box-7", box_uid, box_gid),
			 0);
	ck_assert_int_eq(
	    cgroup_delegate(root, CGROUP_LEGACY, "//paddock//box-7/", box_uid, box_gid), 0);
	for (size_t i = 0; i < ELEMENTSOF(mine); i++) {
		snprintf(p, sizeof p, "memory/paddock/box-7/%s", mine[i]);
		assert_owner(p, box_uid, box_gid);
		snprintf(p, sizeof p, "cpu/paddock/box-7/%s", mine[i]);
		assert_owner(p, box_uid, box_gid);
	}
	for (size_t i = 0; i < ELEMENTSOF(not_mine); i++) {
		snprintf(p, sizeof p, "memory/paddock/box-7/%s", not_mine[i]);
		assert_owner(p, geteuid(), getegid());
	}
	assert_owner("memory/paddock/box-7", box_uid, box_gid);
	assert_owner("memory/paddock", geteuid(), getegid());
	ck_assert(!there("unified/paddock"));
}
END_TEST

/* v2: the tree's root is the hierarchy; cgroup.threads and
 * cgroup.subtree_control are the box's too (it enables controllers for
 * its own children), its limits are not. */
START_TEST(test_delegate_v2)
{
	static const char *const mine[] = {"cgroup.procs", "cgroup.threads",
					   "cgroup.subtree_control"};
	char p[256];

	ck_assert_int_eq(cgroup_delegate(root, CGROUP_UNIFIED, "/paddock/box-7", box_uid, box_gid),
			 0);
	assert_owner("paddock/box-7", box_uid, box_gid);
	assert_owner("paddock", geteuid(), getegid());
	for (size_t i = 0; i < ELEMENTSOF(mine); i++) {
		snprintf(p, sizeof p, "paddock/box-7/%s", mine[i]);
		put(p, "");
	}
	put("paddock/box-7/memory.max", "max\n");
	ck_assert_int_eq(cgroup_delegate(root, CGROUP_UNIFIED, "/paddock/box-7", box_uid, box_gid),
			 0);
	for (size_t i = 0; i < ELEMENTSOF(mine); i++) {
		snprintf(p, sizeof p, "paddock/box-7/%s", mine[i]);
		assert_owner(p, box_uid, box_gid);
	}
	assert_owner("paddock/box-7/memory.max", geteuid(), getegid());
}
END_TEST

/* A level "." or ".." is refused (the path would leave the cgroup it
 * names, up to the tree's root or out of it); nothing is made above it.
 * "..." and ".x" are plain names. */
START_TEST(test_delegate_dotdot)
{
	char p[256];

	fake_v1();
	ck_assert_int_eq(cgroup_delegate(root, CGROUP_LEGACY, "/../escape", box_uid, box_gid),
			 -EINVAL);
	ck_assert_int_eq(
	    cgroup_delegate(root, CGROUP_LEGACY, "/paddock/../../escape", box_uid, box_gid),
	    -EINVAL);
	ck_assert_int_eq(cgroup_delegate(root, CGROUP_LEGACY, "/paddock/..", box_uid, box_gid),
			 -EINVAL);
	ck_assert_int_eq(cgroup_delegate(root, CGROUP_LEGACY, "/./box", box_uid, box_gid), -EINVAL);
	ck_assert_int_eq(cgroup_delegate(root, CGROUP_UNIFIED, "/..", box_uid, box_gid), -EINVAL);
	ck_assert(!there("escape"));
	ck_assert(!there("cpu/escape"));
	ck_assert(!there("cpu/box"));
	snprintf(p, sizeof p, "%s/escape", outside);
	ck_assert_int_ne(access(p, F_OK), 0);
	/* Nothing given away on the way: a level made before the refusal
	 * stays the host's. */
	if (there("cpu/paddock"))
		assert_owner("cpu/paddock", geteuid(), getegid());

	ck_assert_int_eq(cgroup_delegate(root, CGROUP_LEGACY, "/.../.x", box_uid, box_gid), 0);
	assert_owner("memory/.../.x", box_uid, box_gid);
}
END_TEST

START_TEST(test_delegate_limits)
{
	char path[400];

	fake_v1();
	/* A level of 256 bytes: longer than a name may be. */
	memset(path, 'a', sizeof path);
	path[0] = '/';
	path[257] = '\0';
	ck_assert_int_eq(cgroup_delegate(root, CGROUP_LEGACY, path, box_uid, box_gid),
			 -ENAMETOOLONG);
	ck_assert_int_eq(cgroup_delegate(root, CGROUP_UNIFIED, path, box_uid, box_gid),
			 -ENAMETOOLONG);
	/* No tree: the error, nothing made. */
	snprintf(path, sizeof path, "%s/none", root);
	ck_assert_int_eq(cgroup_delegate(path, CGROUP_LEGACY, "/paddock/b", box_uid, box_gid),
			 -ENOENT);
	ck_assert(!there("none"));
}
END_TEST

/* On a real cpuset hierarchy (a v1 host, as root): a new cpuset cgroup
 * has no CPUs and no memory nodes and takes no task, so each level made
 * gets its parent's; cgroupfs's own cgroup.procs and tasks become the
 * box's, its cpuset.cpus does not. Mounted again in a mount namespace of
 * the test's own; the cgroups are removed at the end. */
static bool real_cpuset(void)
{
	return geteuid() == 0 && access("/sys/fs/cgroup/cpuset/cpuset.cpus", R_OK) == 0;
}

static char *read_trim(const char *path)
{
	char *buf = NULL;

	ck_assert_int_ge(read_file_at(AT_FDCWD, path, 4096, &buf, NULL), 0);
	buf[strcspn(buf, "\n")] = '\0';
	return buf;
}

START_TEST(test_delegate_cpuset_real)
{
	char hier[128], top[64], path[128], p[512];
	_cleanup_free_ char *cpus = NULL, *mems = NULL, *lcpus = NULL, *lmems = NULL, *mcpus = NULL;
	int r;

	ck_assert_int_eq(unshare(CLONE_NEWNS), 0);
	ck_assert_int_eq(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
	snprintf(hier, sizeof hier, "%s/cpuset", root);
	ck_assert_int_eq(mkdir(hier, 0755), 0);
	ck_assert_msg(mount("cgroup", hier, "cgroup", 0, "cpuset") == 0, "mount: %s",
		      strerror(errno));
	snprintf(top, sizeof top, "check-cgroup-%d", (int)getpid());
	snprintf(path, sizeof path, "/%s/box", top);
	r = cgroup_delegate(root, CGROUP_LEGACY, path, box_uid, box_gid);

	snprintf(p, sizeof p, "%s/cpuset.cpus", hier);
	cpus = read_trim(p);
	snprintf(p, sizeof p, "%s/cpuset.mems", hier);
	mems = read_trim(p);
	snprintf(p, sizeof p, "%s/%s/cpuset.cpus", hier, top);
	mcpus = read_trim(p);
	snprintf(p, sizeof p, "%s%s/cpuset.cpus", hier, path);
	lcpus = read_trim(p);
	snprintf(p, sizeof p, "%s%s/cpuset.mems", hier, path);
	lmems = read_trim(p);
	snprintf(p, sizeof p, "cpuset%s", path);
	assert_owner(p, box_uid, box_gid);
	snprintf(p, sizeof p, "cpuset%s/cgroup.procs", path);
	assert_owner(p, box_uid, box_gid);
	snprintf(p, sizeof p, "cpuset%s/tasks", path);
	assert_owner(p, box_uid, box_gid);
	snprintf(p, sizeof p, "cpuset%s/cpuset.cpus", path);
	assert_owner(p, 0, 0);
	snprintf(p, sizeof p, "cpuset/%s", top);
	assert_owner(p, 0, 0);

	/* Removed before the checks that may fail. */
	snprintf(p, sizeof p, "%s%s", hier, path);
	int rm1 = rmdir(p);
	snprintf(p, sizeof p, "%s/%s", hier, top);
	int rm2 = rmdir(p);
	(void)umount2(hier, MNT_DETACH);

	ck_assert_int_eq(r, 0);
	ck_assert_str_eq(mcpus, cpus);
	ck_assert_str_eq(lcpus, cpus);
	ck_assert_str_eq(lmems, mems);
	ck_assert_int_eq(rm1, 0);
	ck_assert_int_eq(rm2, 0);
}
END_TEST

/* ---- a box's own v2 cgroup on a v1 or hybrid host (cgroup_v2_*) ---- */

static int open_root(void)
{
	int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	ck_assert_int_ge(fd, 0);
	return fd;
}

/* Every level made, the leaf's cgroup.procs opened for writing; none given
 * to anyone (it stays the host's). */
START_TEST(test_v2_make)
{
	int v2 = open_root(), fd;

	/* A made-up tree has no cgroup.procs: the levels are made, the
	 * open fails. */
	ck_assert_int_eq(cgroup_v2_make(v2, "/paddock/box-7"), -ENOENT);
	ck_assert(there("paddock/box-7"));
	put("paddock/box-7/cgroup.procs", "");
	fd = cgroup_v2_make(v2, "//paddock/box-7/");
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "0", 1), 1);
	close(fd);
	assert_owner("paddock/box-7", geteuid(), getegid());
	assert_owner("paddock/box-7/cgroup.procs", geteuid(), getegid());
	close(v2);
}
END_TEST

/* A bad level is refused before anything is made. */
START_TEST(test_v2_make_refused)
{
	int v2 = open_root();
	char path[400];

	ck_assert_int_eq(cgroup_v2_make(v2, "/paddock/../../escape"), -EINVAL);
	ck_assert_int_eq(cgroup_v2_make(v2, "/paddock/./box"), -EINVAL);
	ck_assert_int_eq(cgroup_v2_make(v2, "/paddock/box/.."), -EINVAL);
	ck_assert_int_eq(cgroup_v2_make(v2, "/"), -EINVAL);
	ck_assert_int_eq(cgroup_v2_make(v2, ""), -EINVAL);
	memset(path, 'a', sizeof path);
	memcpy(path, "/paddock/", 9);
	path[9 + 256] = '\0';
	ck_assert_int_eq(cgroup_v2_make(v2, path), -ENAMETOOLONG);
	ck_assert(!there("paddock"));
	ck_assert(!there("escape"));
	close(v2);
}
END_TEST

/* Removal: the leaf only (the parent is shared by every box), none is no
 * error, a cgroup with something in it is left. */
START_TEST(test_v2_remove)
{
	int v2 = open_root();

	mk("paddock/box-7");
	mk("paddock/box-8");
	ck_assert_int_eq(cgroup_v2_remove(v2, "/paddock/box-7"), 0);
	ck_assert(!there("paddock/box-7"));
	ck_assert(there("paddock/box-8"));
	ck_assert_int_eq(cgroup_v2_remove(v2, "/paddock/box-7"), 0);
	put("paddock/box-8/cgroup.procs", "");
	ck_assert_int_eq(cgroup_v2_remove(v2, "/paddock/box-8"), -ENOTEMPTY);
	ck_assert(there("paddock/box-8"));
	ck_assert_int_eq(cgroup_v2_remove(v2, "/paddock/../x"), -EINVAL);
	close(v2);
}
END_TEST

/* Opening the tree: a hybrid host's at unified/; none on a v2 host (crun
 * gives boxes their v2 cgroup there) nor on a hybrid host without one. */
START_TEST(test_v2_open)
{
	struct stat st, st2;
	char p[256];
	int fd;

	ck_assert_int_eq(cgroup_v2_open(root, CGROUP_UNIFIED), -EOPNOTSUPP);
	ck_assert_int_eq(cgroup_v2_open(root, CGROUP_HYBRID), -ENOENT);
	mk("unified");
	fd = cgroup_v2_open(root, CGROUP_HYBRID);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fstat(fd, &st), 0);
	snprintf(p, sizeof p, "%s/unified", root);
	ck_assert_int_eq(stat(p, &st2), 0);
	ck_assert(st.st_ino == st2.st_ino && st.st_dev == st2.st_dev);
	ck_assert_int_ne(fcntl(fd, F_GETFD) & FD_CLOEXEC, 0);
	close(fd);
}
END_TEST

/* A v1-only host: a cgroup2 mount of the caller's own, attached nowhere
 * (as root). */
static int count_mounts(void)
{
	_cleanup_free_ char *text = NULL;
	int n = 0;

	ck_assert_int_ge(read_file_at(AT_FDCWD, "/proc/self/mountinfo", 1 << 20, &text, NULL), 0);
	for (char *l = text; (l = strchr(l, '\n')); l++)
		n++;
	return n;
}

START_TEST(test_v2_open_legacy)
{
	struct statfs fs;
	int fd, procs, before = count_mounts();

	fd = cgroup_v2_open(root, CGROUP_LEGACY);
	ck_assert_msg(fd >= 0, "cgroup_v2_open: %s", strerror(-fd));
	ck_assert_int_eq(fstatfs(fd, &fs), 0);
	ck_assert(fs.f_type == CGROUP2_SUPER_MAGIC);
	procs = openat(fd, "cgroup.procs", O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(procs, 0);
	close(procs);
	ck_assert_int_ne(fcntl(fd, F_GETFD) & FD_CLOEXEC, 0);
	/* Attached nowhere: the mount table is as it was. */
	ck_assert_int_eq(count_mounts(), before);
	close(fd);
}
END_TEST

static Suite *cgroup_suite(void)
{
	Suite *s = suite_create("cgroup");
	TCase *tc;

	tc = tcase_create("core");
	tcase_add_test(tc, test_percent_busy);
	tcase_add_test(tc, test_percent_idle);
	tcase_add_test(tc, test_percent_recent_only);
	tcase_add_test(tc, test_percent_base);
	suite_add_tcase(s, tc);

	tc = tcase_create("limits");
	tcase_add_test(tc, test_percent_young);
	tcase_add_test(tc, test_ring_wraps);
	suite_add_tcase(s, tc);

	tc = tcase_create("errors");
	tcase_add_test(tc, test_counter_back);
	tcase_add_test(tc, test_sample_after_now);
	suite_add_tcase(s, tc);

	tc = tcase_create("read");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_read_v1);
	tcase_add_test(tc, test_read_v2);
	suite_add_tcase(s, tc);

	tc = tcase_create("delegate");
	tcase_add_checked_fixture(tc, delegate_setup, delegate_teardown);
	tcase_add_test(tc, test_delegate_v1_levels);
	tcase_add_test(tc, test_delegate_v1_files_idempotent);
	tcase_add_test(tc, test_delegate_v2);
	tcase_add_test(tc, test_delegate_dotdot);
	tcase_add_test(tc, test_delegate_limits);
	if (real_cpuset())
		tcase_add_test(tc, test_delegate_cpuset_real);
	suite_add_tcase(s, tc);

	tc = tcase_create("v2");
	tcase_add_checked_fixture(tc, delegate_setup, delegate_teardown);
	tcase_add_test(tc, test_v2_make);
	tcase_add_test(tc, test_v2_make_refused);
	tcase_add_test(tc, test_v2_remove);
	tcase_add_test(tc, test_v2_open);
	if (geteuid() == 0)
		tcase_add_test(tc, test_v2_open_legacy);
	suite_add_tcase(s, tc);

	return s;
}

int main(void)
{
	const char *skipped[2];
	size_t n = 0;

	if (!real_cpuset())
		skipped[n++] = "test_delegate_cpuset_real (needs a cgroup v1 cpuset hierarchy)";
	if (geteuid() != 0)
		skipped[n++] = "test_v2_open_legacy";
	return check_tap_run_skipping(cgroup_suite(), (const char *const *)skipped, n,
				      "needs root");
}
