/* idmap.c - see idmap.h. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <linux/mount.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "runtime/idmap.h"
#include "common/util.h"

#define CAPS_XATTR "security.capability"

int64_t idmap_dir_base(const char *path)
{
	struct stat st;

	if (lstat(path, &st) < 0)
		return -errno;
	return idmap_base_of((uint32_t)st.st_uid);
}

static int write_map(pid_t pid, const char *file, const char *map)
{
	char path[64];
	_cleanup_close_ int fd = -1;

	snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, file);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	return write_all(fd, map, strlen(map));
}

/* The child of idmap_userns(): says it is in its user namespace, waits to
 * be told to go. It shares the daemon's memory (CLONE_VM: nothing to copy,
 * which is what makes it cheap) on a stack of its own, and makes only raw
 * system calls. */
static int userns_child(void *arg)
{
	const int *fds = arg; /* ready[1], go[0] */
	char c = 0;

	(void)syscall(SYS_write, fds[0], &c, 1);
	(void)syscall(SYS_read, fds[1], &c, 1);
	return 0;
}

/* A child of ours in new namespaces of flags (CLONE_NEWUSER and others)
 * mapped from..from+IDMAP_IDS-1 onto to..; *ret_pid waits until
 * userns_release(). */
struct userns_child {
	pid_t pid;
	int go[2], ready[2];
	int fds[2];
	char *stack;
};

static void userns_release(struct userns_child *c)
{
	int status;

	if (c->go[1] >= 0) {
		/* The child goes (its copy of the fd table holds go[1] too). */
		(void)!write(c->go[1], "", 1);
		close(c->go[1]);
	}
	if (c->pid > 0)
		while (waitpid(c->pid, &status, 0) < 0 && errno == EINTR)
			;
	for (int i = 0; i < 2; i++) {
		if (c->ready[i] >= 0)
			close(c->ready[i]);
	}
	if (c->go[0] >= 0)
		close(c->go[0]);
	/* Only now: the child ran on it until it ended. */
	free(c->stack);
	*c = (struct userns_child){.go = {-1, -1}, .ready = {-1, -1}};
}

static int userns_spawn(struct userns_child *c, int flags, uint32_t from, uint32_t to)
{
	const size_t stack_size = 64 * 1024;
	char map[64];
	char ch;
	int r;

	*c = (struct userns_child){.go = {-1, -1}, .ready = {-1, -1}};
	c->stack = malloc(stack_size);
	if (!c->stack)
		return -ENOMEM;
	if (pipe2(c->go, O_CLOEXEC) < 0 || pipe2(c->ready, O_CLOEXEC) < 0) {
		r = -errno;
		userns_release(c);
		return r;
	}
	c->fds[0] = c->ready[1];
	c->fds[1] = c->go[0];
	c->pid = clone(userns_child, c->stack + stack_size, flags | CLONE_VM | SIGCHLD, c->fds);
	r = c->pid < 0 ? -errno : 0;
	if (r >= 0)
		r = read(c->ready[0], &ch, 1) == 1 ? 0 : -ECHILD;
	snprintf(map, sizeof map, "%u %u %u\n", from, to, IDMAP_IDS);
	if (r >= 0)
		r = write_map(c->pid, "uid_map", map);
	if (r >= 0)
		r = write_map(c->pid, "gid_map", map);
	if (r < 0)
		userns_release(c);
	return r;
}

static int bind_ns(pid_t pid, const char *ns, const char *path)
{
	char src[64];
	int fd;

	fd = open(path, O_RDONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0444);
	if (fd < 0)
		return -errno;
	close(fd);
	snprintf(src, sizeof src, "/proc/%d/ns/%s", (int)pid, ns);
	return mount(src, path, NULL, MS_BIND, NULL) < 0 ? -errno : 0;
}

int idmap_box_namespaces(uint32_t base, const char *user_path, const char *net_path,
			 pd_error *err)
{
	struct userns_child c;
	int r;

	(void)unbind_remove(user_path);
	(void)unbind_remove(net_path);
	/* One clone: the network namespace is owned by the new user
	 * namespace. */
	r = userns_spawn(&c, CLONE_NEWUSER | CLONE_NEWNET, 0, base);
	if (r < 0)
		return pd_error_set(err, r, "cannot make the box's namespaces: %s", strerror(-r));
	r = bind_ns(c.pid, "user", user_path);
	if (r >= 0)
		r = bind_ns(c.pid, "net", net_path);
	userns_release(&c);
	if (r < 0) {
		(void)unbind_remove(user_path);
		(void)unbind_remove(net_path);
		return pd_error_set(err, r, "cannot bind the box's namespaces: %s", strerror(-r));
	}
	return 0;
}

int idmap_userns(uint32_t from, uint32_t to, int *ret)
{
	struct userns_child c;
	char path[64];
	int r = userns_spawn(&c, CLONE_NEWUSER, from, to);

	if (r < 0)
		return r;
	snprintf(path, sizeof path, "/proc/%d/ns/user", (int)c.pid);
	*ret = open(path, O_RDONLY | O_CLOEXEC);
	r = *ret < 0 ? -errno : 0;
	userns_release(&c);
	return r;
}

int idmap_open_tree(const char *path, int userns, int *ret, pd_error *err)
{
	struct mount_attr attr = {.attr_set = MOUNT_ATTR_RDONLY};
	_cleanup_close_ int fd = -1;

	fd = (int)syscall(SYS_open_tree, AT_FDCWD, path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
	if (fd < 0)
		return pd_error_set(err, -errno, "cannot open %s: %s", path, strerror(errno));
	if (userns >= 0) {
		attr.attr_set |= MOUNT_ATTR_IDMAP;
		attr.userns_fd = (uint64_t)userns;
	}
	if (syscall(SYS_mount_setattr, fd, "", AT_EMPTY_PATH, &attr, sizeof attr) < 0)
		return pd_error_set(err, -errno, "cannot map the ids of %s: %s", path,
				    strerror(errno));
	*ret = fd;
	fd = -1;
	return 0;
}

/* nftw() has no user data: the walk's parameters, one walk at a time per
 * thread. */
static _Thread_local struct {
	uint32_t from, to;
	dev_t dev;
	pd_error *err;
} walk;

static uint32_t shifted(uint32_t id)
{
	return idmap_base_of(id) == walk.from ? walk.to + (id - walk.from) : id;
}

static int shift_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	char caps[256];
	ssize_t n_caps = -1;
	uid_t uid = shifted((uint32_t)st->st_uid);
	gid_t gid = shifted((uint32_t)st->st_gid);

	(void)ftw;
	if (flag == FTW_NS || flag == FTW_DNR)
		return pd_error_set(walk.err, -EIO, "cannot read %s", path);
	if (st->st_dev != walk.dev || (uid == st->st_uid && gid == st->st_gid))
		return 0;
	if (S_ISREG(st->st_mode))
		n_caps = lgetxattr(path, CAPS_XATTR, caps, sizeof caps);
	if (lchown(path, uid, gid) < 0)
		return pd_error_set(walk.err, -errno, "cannot chown %s: %s", path, strerror(errno));
	if (!S_ISLNK(st->st_mode) && (st->st_mode & (S_ISUID | S_ISGID)) &&
	    chmod(path, st->st_mode & 07777) < 0)
		return pd_error_set(walk.err, -errno, "cannot chmod %s: %s", path, strerror(errno));
	if (n_caps > 0)
		(void)lsetxattr(path, CAPS_XATTR, caps, (size_t)n_caps, 0);
	return 0;
}

int idmap_shift_tree(const char *root, uint32_t from, uint32_t to, pd_error *err)
{
	struct stat st;
	int r;

	if (lstat(root, &st) < 0)
		return pd_error_set(err, -errno, "cannot read %s: %s", root, strerror(errno));
	walk.from = from;
	walk.to = to;
	walk.dev = st.st_dev;
	walk.err = err;
	/* Depth first: root, the last visited, says whether the walk ended. */
	r = nftw(root, shift_one, 32, FTW_PHYS | FTW_MOUNT | FTW_DEPTH);
	if (r < 0 && (!err || !err->code))
		return pd_error_set(err, -errno, "cannot walk %s: %s", root, strerror(errno));
	return r < 0 ? r : 0;
}
