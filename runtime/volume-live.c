/* volume-live.c - see volume-live.h. */
#include <fcntl.h>
#include <linux/openat2.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "common/lock.h"
#include "common/util.h"
#include "runtime/volume-live.h"

/* The box's namespaces, opened from its PID 1. */
struct box_ns {
	int mnt;
	int user; /* -1: the box shares the host's (no user namespace) */
};

static void box_ns_close(struct box_ns *ns)
{
	if (ns->mnt >= 0)
		close(ns->mnt);
	if (ns->user >= 0)
		close(ns->user);
	*ns = (struct box_ns){-1, -1};
}

static bool same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* Opens the namespaces of box->pid once it is known to be the box: a
 * process whose root is box->rootfs, still alive after its namespaces were
 * opened (the pidfd pins which process that is, whatever became of the
 * PID before). */
static int open_box(const struct volume_live_box *box, struct box_ns *ns, pd_error *err)
{
	_cleanup_close_ int pidfd = -1;
	struct stat want, root, user, self;
	char path[64];
	bool ok;

	*ns = (struct box_ns){-1, -1};
	if (stat(box->rootfs, &want) < 0)
		return pd_error_set(err, -EIO, "cannot read the root of box %s: %s", box->name,
				    strerror(errno));
	pidfd = box->pid > 0 ? (int)syscall(SYS_pidfd_open, box->pid, 0) : -1;
	if (pidfd < 0)
		return pd_error_set(err, -EBUSY, "box %s no longer runs (its PID 1 is gone)",
				    box->name);
	snprintf(path, sizeof path, "/proc/%d/ns/mnt", (int)box->pid);
	ns->mnt = open(path, O_RDONLY | O_CLOEXEC);
	snprintf(path, sizeof path, "/proc/%d/ns/user", (int)box->pid);
	ns->user = open(path, O_RDONLY | O_CLOEXEC);
	snprintf(path, sizeof path, "/proc/%d/root", (int)box->pid);
	ok = ns->mnt >= 0 && ns->user >= 0 && stat(path, &root) == 0 && same_file(&root, &want) &&
	     fstat(ns->user, &user) == 0 && stat("/proc/self/ns/user", &self) == 0 &&
	     syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0) == 0;
	if (!ok) {
		box_ns_close(ns);
		return pd_error_set(err, -EBUSY,
				    "box %s no longer runs (PID %d is not its PID 1 any more)",
				    box->name, (int)box->pid);
	}
	if (same_file(&user, &self)) {
		close(ns->user);
		ns->user = -1;
	}
	return 0;
}

/* --- in the child ----------------------------------------------------------------------- */

/* What the child did: the step it reached and how that ended. */
enum step { STEP_ENTER, STEP_MNT, STEP_TARGET, STEP_MOUNT, STEP_UMOUNT };

struct report {
	int step;
	int err;      /* 0 or -errno of that step */
	int result;   /* what the operation returns */
	mode_t found; /* STEP_TARGET: what is at /mnt/NAME */
};

struct op {
	const struct box_ns *ns;
	int tree;	 /* attach: the mount to attach */
	struct stat vol; /* the volume's data directory */
	const char *name;
};

/* Closes every descriptor but keep[] (the box sees nothing of the
 * daemon's, however briefly). */
static void close_others(int *keep, size_t n)
{
	unsigned lo = 0;

	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && keep[j - 1] > keep[j]; j--) {
			int t = keep[j];
			keep[j] = keep[j - 1];
			keep[j - 1] = t;
		}
	for (size_t i = 0; i < n; i++) {
		if (keep[i] < 0)
			continue;
		if ((unsigned)keep[i] > lo)
			(void)syscall(SYS_close_range, lo, (unsigned)keep[i] - 1, 0);
		lo = (unsigned)keep[i] + 1;
	}
	(void)syscall(SYS_close_range, lo, ~0u, 0);
}

/* Joins the box's mount namespace, and its user namespace as box root: what
 * is made there (/mnt, /mnt/NAME) is the box's own, and what is allowed is
 * what box root may do. */
static int enter(const struct box_ns *ns)
{
	if (setns(ns->mnt, CLONE_NEWNS) < 0)
		return -errno;
	if (ns->user < 0)
		return 0;
	if (setns(ns->user, CLONE_NEWUSER) < 0)
		return -errno;
	(void)syscall(SYS_setgroups, 0, NULL); /* refused where setgroups is denied */
	if (syscall(SYS_setresgid, 0, 0, 0) < 0 || syscall(SYS_setresuid, 0, 0, 0) < 0)
		return -errno;
	return 0;
}

/* path beneath root, the box's "/": its links are followed inside it and
 * never lead out; /proc's magic links are refused. */
static int open_in_root(int root, const char *path, int flags)
{
	struct open_how how = {.flags = (uint64_t)flags | O_CLOEXEC,
			       .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS};

	return (int)syscall(SYS_openat2, root, path, &how, sizeof how);
}

/* The box's /mnt (made if missing and make is set), after enter(). */
static int open_mnt(bool make)
{
	_cleanup_close_ int root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	int fd;

	if (root < 0)
		return -errno;
	fd = open_in_root(root, "mnt", O_PATH | O_DIRECTORY);
	if (fd < 0 && errno == ENOENT && make) {
		if (mkdirat(root, "mnt", 0755) < 0 && errno != EEXIST)
			return -errno;
		fd = open_in_root(root, "mnt", O_PATH | O_DIRECTORY);
	}
	return fd < 0 ? -errno : fd;
}

static void do_attach(const struct op *op, struct report *rep)
{
	_cleanup_close_ int mnt = -1, target = -1;
	struct stat st;

	rep->step = STEP_MNT;
	mnt = open_mnt(/* make= */ true);
	if (mnt < 0) {
		rep->err = mnt;
		return;
	}
	rep->step = STEP_TARGET;
	if (fstatat(mnt, op->name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno != ENOENT || (mkdirat(mnt, op->name, 0755) < 0 && errno != EEXIST) ||
		    fstatat(mnt, op->name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			rep->err = -errno;
			return;
		}
	}
	rep->found = st.st_mode;
	if (!S_ISDIR(st.st_mode)) {
		rep->err = -EEXIST;
		return;
	}
	if (same_file(&st, &op->vol)) {
		rep->result = 1; /* mounted there already */
		return;
	}
	/* The directory itself, whatever the box renames meanwhile. */
	target = openat(mnt, op->name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (target < 0) {
		rep->err = errno == ENOTDIR || errno == ELOOP ? -EEXIST : -errno;
		return;
	}
	rep->step = STEP_MOUNT;
	if (move_mount(op->tree, "", target, "",
		       MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
		rep->err = -errno;
}

static void do_detach(const struct op *op, struct report *rep)
{
	_cleanup_close_ int mnt = -1;
	struct stat st;

	rep->step = STEP_MNT;
	rep->result = VOLUME_LIVE_NONE;
	mnt = open_mnt(/* make= */ false);
	if (mnt < 0) {
		/* No /mnt, or not a directory: nothing of ours is there. */
		if (mnt == -ENOENT || mnt == -ENOTDIR || mnt == -ELOOP)
			return;
		rep->err = mnt;
		return;
	}
	if (fchdir(mnt) < 0) {
		rep->err = -errno;
		return;
	}
	rep->step = STEP_UMOUNT;
	/* Unmounted by name beneath /mnt (an open descriptor on the mount
	 * would keep it busy): the box may swap /mnt/NAME meanwhile, and
	 * then loses a mount of its own, which it could unmount anyway. */
	for (int i = 0; i < 16; i++) {
		if (fstatat(AT_FDCWD, op->name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISDIR(st.st_mode) || !same_file(&st, &op->vol))
			break;
		if (umount2(op->name, UMOUNT_NOFOLLOW) == 0) {
			if (rep->result == VOLUME_LIVE_NONE)
				rep->result = VOLUME_LIVE_UNMOUNTED;
			continue;
		}
		if (errno != EBUSY || umount2(op->name, MNT_DETACH | UMOUNT_NOFOLLOW) < 0) {
			rep->err = -errno;
			return;
		}
		rep->result = VOLUME_LIVE_LAZY;
	}
	if (rep->result != VOLUME_LIVE_NONE)
		(void)unlinkat(AT_FDCWD, op->name, AT_REMOVEDIR); /* only if empty */
}

/* --- in the daemon -------------------------------------------------------------------------- */

/* Runs fn in a child that enters the box (enter()), and waits for its report,
 * VOLUME_LIVE_TIMEOUT_MS at most. 0 with *rep filled, or -errno. */
static int run_child(void (*fn)(const struct op *, struct report *), struct op *op,
		     struct report *rep)
{
	unsigned long long deadline = now_usec() + VOLUME_LIVE_TIMEOUT_MS * 1000ull;
	int p[2], status, r = 0;
	ssize_t n = 0;
	pid_t pid;

	lock_assert_no_slow("entering a box");
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		r = -errno;
		close(p[0]);
		close(p[1]);
		return r;
	}
	if (pid == 0) {
		struct report mine = {0};
		int keep[] = {p[1], op->tree, op->ns->mnt, op->ns->user};

		close_others(keep, ELEMENTSOF(keep));
		mine.step = STEP_ENTER;
		mine.err = enter(op->ns);
		if (mine.err == 0)
			fn(op, &mine);
		(void)!write(p[1], &mine, sizeof mine);
		_exit(0);
	}
	close(p[1]);
	for (;;) {
		unsigned long long now = now_usec();
		struct pollfd pf = {.fd = p[0], .events = POLLIN};
		int left = now < deadline ? (int)((deadline - now) / 1000) + 1 : 0;
		int k = poll(&pf, 1, left);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			r = k < 0 ? -errno : -ETIMEDOUT;
			break;
		}
		n = read(p[0], rep, sizeof *rep);
		if (n < 0 && errno == EINTR)
			continue;
		r = n == (ssize_t)sizeof *rep ? 0 : -ECHILD;
		break;
	}
	close(p[0]);
	if (r < 0)
		(void)kill(pid, SIGKILL); /* ours, not yet reaped */
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return r;
}

static const char *kind_of(mode_t m)
{
	return S_ISLNK(m) ? "symbolic link" : S_ISREG(m) ? "file" : "special file";
}

/* The reason of a failed child, in err. */
static int child_failed(const struct volume_live_box *box, const char *name, bool attach, int r,
			const struct report *rep, pd_error *err)
{
	const char *what = attach ? "mount" : "unmount";

	if (r == -ETIMEDOUT)
		return pd_error_set(err, -EAGAIN,
				    "cannot %s volume %s in box %s: the box did not answer within "
				    "%d s (a path under /mnt that hangs?)",
				    what, name, box->name, VOLUME_LIVE_TIMEOUT_MS / 1000);
	if (r < 0)
		return pd_error_set(err, -EIO, "cannot %s volume %s in box %s: %s", what, name,
				    box->name, strerror(-r));
	r = rep->err;
	switch (rep->step) {
	case STEP_ENTER:
		return pd_error_set(err, -EIO, "cannot enter box %s: %s", box->name, strerror(-r));
	case STEP_MNT:
		if (r == -ENOTDIR || r == -ELOOP || r == -ENOENT || r == -EEXIST)
			return pd_error_set(
			    err, -EEXIST, "cannot mount volume %s in box %s: its /mnt is %s", name,
			    box->name,
			    r == -ENOENT  ? "a link that leads to nothing inside the box"
			    : r == -ELOOP ? "a link that loops or leads through /proc"
					  : "not a directory");
		break;
	case STEP_TARGET:
		if (r == -EEXIST)
			return pd_error_set(
			    err, -EEXIST,
			    "cannot mount volume %s in box %s: /mnt/%s there is a "
			    "%s, not a directory: remove it in the box and write the "
			    "list again",
			    name, box->name, name, kind_of(rep->found));
		break;
	default:
		break;
	}
	if (r == -ENOSPC || r == -EDQUOT)
		return pd_error_set(err, r, "cannot make /mnt/%s in box %s: its disk is full", name,
				    box->name);
	return pd_error_set(err, -EIO, "cannot %s volume %s at /mnt/%s in box %s: %s", what, name,
			    name, box->name, strerror(-r));
}

int volume_live_attach(const struct volume_live_box *box, const char *src, const char *name,
		       pd_error *err)
{
	struct mount_attr attr = {.attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
				  .attr_clr = MOUNT_ATTR_NOSYMFOLLOW};
	_cleanup_close_ int tree = -1;
	struct box_ns ns;
	struct report rep = {0};
	struct op op = {.ns = &ns, .name = name};
	int r;

	r = open_box(box, &ns, err);
	if (r < 0)
		return r;
	/* A copy of the data directory alone, made here with the host's
	 * rights: the box's ids see the volume's 0..65535 as their own. */
	tree = open_tree(AT_FDCWD, src, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
	if (tree >= 0 && ns.user >= 0) {
		attr.attr_set |= MOUNT_ATTR_IDMAP;
		attr.userns_fd = (uint64_t)ns.user;
	}
	if (tree < 0 || mount_setattr(tree, "", AT_EMPTY_PATH, &attr, sizeof attr) < 0 ||
	    fstat(tree, &op.vol) < 0) {
		r = pd_error_set(err, -EIO, "cannot prepare volume %s for box %s: %s", name,
				 box->name, strerror(errno));
		box_ns_close(&ns);
		return r;
	}
	op.tree = tree;
	r = run_child(do_attach, &op, &rep);
	box_ns_close(&ns);
	if (r < 0 || rep.err < 0)
		return child_failed(box, name, /* attach= */ true, r, &rep, err);
	return rep.result;
}

int volume_live_detach(const struct volume_live_box *box, const char *src, const char *name,
		       pd_error *err)
{
	struct box_ns ns;
	struct report rep = {0};
	struct op op = {.ns = &ns, .tree = -1, .name = name};
	int r;

	if (stat(src, &op.vol) < 0)
		return pd_error_set(err, -EIO, "cannot read volume %s: %s", name, strerror(errno));
	r = open_box(box, &ns, err);
	if (r < 0)
		return r;
	r = run_child(do_detach, &op, &rep);
	box_ns_close(&ns);
	if (r < 0 || rep.err < 0)
		return child_failed(box, name, /* attach= */ false, r, &rep, err);
	return rep.result;
}
