/* util.c - small helpers shared by every part of Paddock. */

#include <dirent.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/random.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>

#include "common/lock.h"
#include "common/util.h"

/* A fresh temporary name beside path: "DIR/.#BASE.RANDOM". */
static int temp_path_for(const char *path, char **ret)
{
	const char *slash = strrchr(path, '/');
	size_t dir_len = slash ? (size_t)(slash - path) + 1 : 0;
	const char *base = path + dir_len;
	uint64_t rnd;
	char *s;

	if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != sizeof(rnd))
		rnd = now_usec() ^ ((uint64_t)getpid() << 32);

	/* Keep the temporary name short enough for NAME_MAX. */
	if (asprintf(&s, "%.*s.#%.200s.%016llx", (int)dir_len, path, base,
		     (unsigned long long)rnd) < 0)
		return -ENOMEM;
	*ret = s;
	return 0;
}

int write_file_atomic(const char *path, const void *buf, size_t len, mode_t mode)
{
	_cleanup_free_ char *tmp = NULL;
	_cleanup_close_ int fd = -1;
	int r;

	if (!path || !*path || path[strlen(path) - 1] == '/')
		return -EINVAL;

	for (int attempt = 0;; attempt++) {
		free(tmp);
		tmp = NULL;
		r = temp_path_for(path, &tmp);
		if (r < 0)
			return r;
		fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOCTTY, mode);
		if (fd >= 0)
			break;
		if (errno != EEXIST || attempt >= 16)
			return -errno;
	}

	r = write_all(fd, buf, len);
	if (r < 0)
		goto fail;
	if (fsync(fd) < 0) {
		r = -errno;
		goto fail;
	}
	if (close(TAKE_FD(fd)) < 0) {
		r = -errno;
		goto fail;
	}
	if (rename(tmp, path) < 0) {
		r = -errno;
		goto fail;
	}

	/* Make the rename itself durable. The new content is already in place,
	 * so a failure here is not reported as a failed write. */
	{
		_cleanup_free_ char *dir = strdup(path);
		if (dir) {
			char *slash = strrchr(dir, '/');
			const char *d = ".";
			if (slash == dir)
				d = "/";
			else if (slash) {
				*slash = '\0';
				d = dir;
			}
			_cleanup_close_ int dfd = open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if (dfd >= 0)
				(void)fsync(dfd);
		}
	}
	return 0;

fail:
	(void)unlink(tmp);
	return r;
}

static void keep_first(int *r, int e)
{
	if (*r == 0 && e < 0)
		*r = e;
}

static bool on_other_mount(const struct statx *sx, dev_t dev)
{
	if (makedev(sx->stx_dev_major, sx->stx_dev_minor) != dev)
		return true;
#ifdef STATX_ATTR_MOUNT_ROOT
	if ((sx->stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) &&
	    (sx->stx_attributes & STATX_ATTR_MOUNT_ROOT))
		return true;
#endif
	return false;
}

/* Removes everything inside the directory open at fd (consumed), staying on
 * device dev. Entries on another mount are left alone and make the result
 * -EBUSY; the walk goes on past errors and returns the first one. */
static int rm_children(int fd, dev_t dev)
{
	DIR *d = fdopendir(fd);
	struct dirent *de;
	int r = 0;

	if (!d) {
		r = -errno;
		close(fd);
		return r;
	}

	for (;;) {
		errno = 0;
		de = readdir(d);
		if (!de) {
			keep_first(&r, -errno);
			break;
		}
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;

		struct statx sx;
		if (statx(dirfd(d), de->d_name, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT, STATX_TYPE,
			  &sx) < 0) {
			if (errno != ENOENT)
				keep_first(&r, -errno);
			continue;
		}
		if (on_other_mount(&sx, dev)) {
			keep_first(&r, -EBUSY);
			continue;
		}

		int flags = 0;
		if (S_ISDIR(sx.stx_mode)) {
			int cfd =
			    openat(dirfd(d), de->d_name,
				   O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
			if (cfd < 0) {
				if (errno != ENOENT)
					keep_first(&r, -errno);
				continue;
			}
			/* Re-check on the open fd: the entry may have been
			 * swapped for a mount point since statx(). */
			if (statx(cfd, "", AT_EMPTY_PATH, STATX_TYPE, &sx) < 0 ||
			    on_other_mount(&sx, dev)) {
				close(cfd);
				keep_first(&r, -EBUSY);
				continue;
			}
			keep_first(&r, rm_children(cfd, dev));
			flags = AT_REMOVEDIR;
		}
		if (unlinkat(dirfd(d), de->d_name, flags) < 0 && errno != ENOENT)
			keep_first(&r, -errno);
	}

	closedir(d);
	return r;
}

int rm_rf(const char *path_in)
{
	_cleanup_free_ char *path = NULL;
	struct stat st;
	size_t len;
	int fd, r;

	lock_assert_no_slow("rm_rf");
	if (!path_in || !*path_in)
		return -EINVAL;
	if (strspn(path_in, "/") == strlen(path_in))
		return -EPERM; /* never the root directory */
	/* A trailing slash would make open() follow a symlink despite
	 * O_NOFOLLOW: drop it. */
	path = strdup(path_in);
	if (!path)
		return -ENOMEM;
	len = strlen(path);
	while (len > 1 && path[len - 1] == '/')
		path[--len] = '\0';

	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		if (errno == ENOENT)
			return 0;
		if (errno != ENOTDIR && errno != ELOOP)
			return -errno;
		/* Not a directory, or a symlink: remove the entry itself. */
		if (unlink(path) < 0 && errno != ENOENT)
			return -errno;
		return 0;
	}
	if (fstat(fd, &st) < 0) {
		r = -errno;
		close(fd);
		return r;
	}

	r = rm_children(fd, st.st_dev);
	if (rmdir(path) < 0 && errno != ENOENT)
		keep_first(&r, -errno);
	return r;
}

/* Adds the blocks of everything inside the directory open at fd (consumed)
 * to *total, staying on device dev. */
static void du_children(int fd, dev_t dev, unsigned depth, uint64_t *total)
{
	DIR *d = fdopendir(fd);
	struct dirent *de;

	if (!d) {
		close(fd);
		return;
	}
	while ((de = readdir(d))) {
		struct stat st;
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT) < 0 ||
		    st.st_dev != dev)
			continue;
		*total += (uint64_t)st.st_blocks * 512;
		if (S_ISDIR(st.st_mode) && depth < DU_DEPTH_MAX) {
			int cfd =
			    openat(dirfd(d), de->d_name,
				   O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
			if (cfd >= 0)
				du_children(cfd, dev, depth + 1, total);
		}
	}
	closedir(d);
}

int du_tree(const char *path, uint64_t *ret)
{
	struct stat st;
	uint64_t total = 0;
	int fd;

	lock_assert_no_slow("a disk walk");
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		int r = -errno;
		close(fd);
		return r;
	}
	du_children(fd, st.st_dev, 0, &total);
	*ret = total;
	return 0;
}

int pidfd_wait_exit(int pidfd, int timeout_ms)
{
	struct pollfd p = {.fd = pidfd, .events = POLLIN};

	for (;;) {
		int n = poll(&p, 1, timeout_ms);
		if (n > 0)
			return 0;
		if (n == 0)
			return -ETIMEDOUT;
		if (errno != EINTR)
			return -errno;
	}
}

int write_file_replace(const char *path, const void *buf, size_t len)
{
	char tmp[PATH_MAX];
	int r;

	if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp)
		return -ENAMETOOLONG;
	_cleanup_close_ int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	r = write_all(fd, buf, len);
	if (r >= 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0)
		unlink(tmp);
	return r;
}

void pd_hold(const char *step)
{
	const char *want = getenv("PADDOCK_HOLD");
	const char *colon = want ? strchr(want, ':') : NULL;
	size_t n = strlen(step);
	char arm[PATH_MAX], held[PATH_MAX];
	int fd;

	if (!colon || (size_t)(colon - want) != n || strncmp(want, step, n) != 0)
		return;
	lock_assert_no_slow("a hold point");
	snprintf(arm, sizeof arm, "%s/arm", colon + 1);
	snprintf(held, sizeof held, "%s/held", colon + 1);
	/* One thread per arming: the one whose unlink succeeds. */
	if (unlink(arm) < 0)
		return;
	fd = open(held, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return;
	close(fd);
	while (access(held, F_OK) == 0)
		nanosleep(&(struct timespec){.tv_nsec = 10 * 1000 * 1000}, NULL);
}

void pd_fault(const char *step)
{
	const char *want = getenv("PADDOCK_FAULT");

	if (want && strcmp(want, step) == 0)
		raise(SIGKILL);
}

int unbind_remove(const char *path)
{
	while (umount2(path, MNT_DETACH) == 0)
		;
	if (unlink(path) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}

/* The start time of pid (/proc/PID/stat's 22nd field, in clock ticks), or
 * 0 when it cannot be read (gone). */
unsigned long long proc_start_time(pid_t pid)
{
	char path[64], *p;
	_cleanup_free_ char *buf = NULL;
	unsigned long long t = 0;

	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	if (read_file_at(AT_FDCWD, path, 4096, &buf, NULL) < 0 || !(p = strrchr(buf, ')')))
		return 0;
	/* After the name, a space before each field: state (3rd) ...
	 * starttime (22nd). */
	for (int field = 3; field <= 22 && p; field++)
		p = strchr(p + 1, ' ');
	if (p && sscanf(p + 1, "%llu", &t) != 1)
		t = 0;
	return t;
}
