#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/loop.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/diskimg.h"

extern char **environ;

static inline void closedirp(DIR **d)
{
	if (*d)
		closedir(*d);
}

#define MIB (1ull << 20)

uint64_t diskimg_next_size(uint64_t disk, uint64_t tried, uint64_t got)
{
	uint64_t next;

	if (got >= disk)
		return tried;
	next = tried + (disk - got);
	return (next + MIB - 1) / MIB * MIB;
}

int diskimg_template_path(const char *dir, uint64_t disk, char *buf, size_t bufsz)
{
	int n = snprintf(buf, bufsz, "%s/ext4-%" PRIu64 ".img", dir, disk);

	return n < 0 || (size_t)n >= bufsz ? -ENAMETOOLONG : 0;
}

/* Runs argv (looked up in PATH) with stdin and stdout on /dev/null; its
 * stderr's last line goes into err when it fails. */
static int run(const char *const *argv, pd_error *err)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t none, dfl;
	char out[1024], *line;
	size_t len = 0;
	int p[2], r, status;
	pid_t pid;
	ssize_t n;

	if (pipe2(p, O_CLOEXEC) < 0)
		return pd_error_set(err, -errno, "cannot make a pipe: %s", strerror(errno));
	sigemptyset(&none);
	sigemptyset(&dfl);
	sigaddset(&dfl, SIGPIPE);
	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&attr);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, p[1], 2);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setsigdefault(&attr, &dfl);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	r = posix_spawnp(&pid, argv[0], &fa, &attr, (char *const *)argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	close(p[1]);
	if (r != 0) {
		close(p[0]);
		return pd_error_set(err, -r, "cannot run %s: %s", argv[0], strerror(r));
	}
	/* Keeps the last of what it says: the reason of a failure. */
	while ((n = read(p[0], out + len, sizeof out - 1 - len)) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		len += (size_t)n;
		if (len == sizeof out - 1) {
			memmove(out, out + len / 2, len - len / 2);
			len -= len / 2;
		}
	}
	close(p[0]);
	out[len] = '\0';
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return pd_error_set(err, -errno, "waitpid: %s", strerror(errno));
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	while (len > 0 && (out[len - 1] == '\n' || out[len - 1] == ' '))
		out[--len] = '\0';
	line = strrchr(out, '\n');
	line = line ? line + 1 : out;
	if (WIFEXITED(status))
		return pd_error_set(err, -EIO, "%s failed (exit %d): %s", argv[0],
				    WEXITSTATUS(status), line);
	return pd_error_set(err, -EIO, "%s failed (signal %d)", argv[0],
			    WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

static int mkfs(const char *path, uint64_t bytes, pd_error *err)
{
	/* Lazy tables and journal: the file stays sparse (4 MiB for 10 GiB)
	 * and mkfs takes milliseconds. No blocks reserved for root: the box's
	 * root is the one that fills it. An inode per 8 KiB (twice mke2fs's
	 * default): boxes hold many small files (node_modules), and ext4
	 * cannot add inodes later; 10 GiB get 1.3 million. */
	const char *argv[] = {"mkfs.ext4", "-q", "-F",
			      "-m",	   "0",	 "-i",
			      "8192",	   "-E", "lazy_itable_init=1,lazy_journal_init=1",
			      path,	   NULL};
	_cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (fd < 0)
		return pd_error_set(err, -errno, "cannot create %s: %s", path, strerror(errno));
	if (ftruncate(fd, (off_t)bytes) < 0)
		return pd_error_set(err, -errno, "cannot size %s: %s", path, strerror(errno));
	return run(argv, err);
}

/* The template's upper/ (unclaimed: DISKIMG_UNCLAIMED_MODE, root's) and
 * work/ (overlay's: on the same filesystem, not inside upper/). */
static int make_dirs(const char *root)
{
	char p[4096];

	if (snprintf(p, sizeof p, "%s/upper", root) >= (int)sizeof p)
		return -ENAMETOOLONG;
	if (mkdir(p, 0700) < 0 || chmod(p, DISKIMG_UNCLAIMED_MODE) < 0)
		return -errno;
	if (snprintf(p, sizeof p, "%s/work", root) >= (int)sizeof p)
		return -ENAMETOOLONG;
	return mkdir(p, 0700) < 0 ? -errno : 0;
}

int diskimg_template(const char *dir, uint64_t disk, char *ret, size_t retsz, pd_error *err)
{
	char tmp[4096], probe[4096];
	uint64_t size = disk, used = 0, total = 0;
	int r;

	if (disk < DISKIMG_MIN_BYTES)
		disk = DISKIMG_MIN_BYTES;
	if (diskimg_template_path(dir, disk, ret, retsz) < 0 ||
	    snprintf(tmp, sizeof tmp, "%s.tmp", ret) >= (int)sizeof tmp ||
	    snprintf(probe, sizeof probe, "%s/probe-%" PRIu64, dir, disk) >= (int)sizeof probe)
		return pd_error_set(err, -ENAMETOOLONG, "path too long: %s", dir);
	if (access(ret, F_OK) == 0)
		return 0;
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return pd_error_set(err, -errno, "cannot create %s: %s", dir, strerror(errno));
	if (mkdir(probe, 0700) < 0 && errno != EEXIST)
		return pd_error_set(err, -errno, "cannot create %s: %s", probe, strerror(errno));
	/* ext4's metadata (journal, inode tables) takes a share that depends
	 * on the size: grown until what statfs shows reaches disk. */
	for (int i = 0;; i++) {
		r = mkfs(tmp, size, err);
		if (r >= 0)
			r = diskimg_mount(tmp, probe, false, err);
		if (r < 0)
			goto out;
		r = make_dirs(probe);
		if (r >= 0)
			r = diskimg_usage(probe, &used, &total);
		if (diskimg_umount(probe) < 0 && r >= 0)
			r = -EBUSY;
		if (r < 0) {
			pd_error_set(err, r, "cannot statfs a new image: %s", strerror(-r));
			goto out;
		}
		if (total >= disk)
			break;
		if (i == 3) {
			r = pd_error_set(err, -EIO, "mkfs.ext4 of %" PRIu64 " bytes shows %" PRIu64,
					 size, total);
			goto out;
		}
		size = diskimg_next_size(disk, size, total);
	}
	{
		_cleanup_close_ int fd = open(tmp, O_RDONLY | O_CLOEXEC);
		_cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0 || fsync(fd) < 0 || rename(tmp, ret) < 0 || dfd < 0 || fsync(dfd) < 0)
			r = pd_error_set(err, -errno, "cannot store the template %s: %s", ret,
					 strerror(errno));
	}
out:
	(void)rmdir(probe);
	if (r < 0)
		(void)unlink(tmp);
	return r < 0 ? r : 0;
}

int diskimg_copy(const char *src, const char *dst, pd_error *err)
{
	_cleanup_close_ int in = open(src, O_RDONLY | O_CLOEXEC);
	_cleanup_close_ int out = -1;
	struct stat st;
	off_t data = 0, hole;
	int r = 0;

	if (in < 0 || fstat(in, &st) < 0)
		return pd_error_set(err, -errno, "cannot open %s: %s", src, strerror(errno));
	out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (out < 0)
		return pd_error_set(err, -errno, "cannot create %s: %s", dst, strerror(errno));
	if (ftruncate(out, st.st_size) < 0) {
		r = -errno;
		goto fail;
	}
	/* Only what src holds: its holes stay holes in dst. */
	while ((data = lseek(in, data, SEEK_DATA)) >= 0) {
		hole = lseek(in, data, SEEK_HOLE);
		if (hole < 0) {
			r = -errno;
			goto fail;
		}
		while (data < hole) {
			off_t o_in = data, o_out = data;
			ssize_t n =
			    copy_file_range(in, &o_in, out, &o_out, (size_t)(hole - data), 0);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				r = n < 0 ? -errno : -EIO;
				goto fail;
			}
			data += n;
		}
	}
	if (errno != ENXIO) {
		r = -errno;
		goto fail;
	}
	if (fsync(out) < 0) {
		r = -errno;
		goto fail;
	}
	return 0;
fail:
	(void)unlink(dst);
	return pd_error_set(err, r, "cannot copy %s to %s: %s", src, dst, strerror(-r));
}

/* A free loop device bound to fd (autoclear; read-only when ro): its
 * number in ret_n, an open fd of it in ret_fd. Autoclear clears the
 * device when its last user goes: the caller keeps the fd until its mount
 * holds the device. Another process may take the device we were offered:
 * then we ask again. */
static int loop_attach(int fd, bool ro, int *ret_n, int *ret_fd, pd_error *err)
{
	_cleanup_close_ int ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
	struct loop_config cfg = {
	    .fd = (uint32_t)fd,
	    .info = {.lo_flags = LO_FLAGS_AUTOCLEAR | (ro ? LO_FLAGS_READ_ONLY : 0)},
	};

	if (ctl < 0)
		return pd_error_set(err, -errno, "cannot open /dev/loop-control: %s",
				    strerror(errno));
	for (int tries = 0; tries < 16; tries++) {
		char dev[32];
		int n = ioctl(ctl, LOOP_CTL_GET_FREE);
		_cleanup_close_ int lfd = -1;

		if (n < 0)
			return pd_error_set(err, -errno, "no free loop device: %s",
					    strerror(errno));
		snprintf(dev, sizeof dev, "/dev/loop%d", n);
		lfd = open(dev, O_RDWR | O_CLOEXEC);
		if (lfd < 0)
			return pd_error_set(err, -errno, "cannot open %s: %s", dev,
					    strerror(errno));
		if (ioctl(lfd, LOOP_CONFIGURE, &cfg) == 0) {
			*ret_n = n;
			*ret_fd = TAKE_FD(lfd);
			return 0;
		}
		if (errno != EBUSY)
			return pd_error_set(err, -errno, "cannot set up %s: %s", dev,
					    strerror(errno));
	}
	return pd_error_set(err, -EBUSY, "every free loop device was taken meanwhile");
}

/* The path of the file loop device MAJ:MIN reads, as sysfs says it (with
 * " (deleted)" when it was removed). -ENOENT when it is no loop device or
 * is not bound. */
static int backing_file(unsigned maj, unsigned min, char *buf, size_t bufsz)
{
	char p[96];
	_cleanup_close_ int fd = -1;
	ssize_t n;

	snprintf(p, sizeof p, "/sys/dev/block/%u:%u/loop/backing_file", maj, min);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, bufsz - 1);
	if (n < 0)
		return -errno;
	while (n > 0 && buf[n - 1] == '\n')
		n--;
	buf[n] = '\0';
	return 0;
}

int diskimg_bound(const char *img)
{
	_cleanup_free_ char *real = realpath(img, NULL);
	_cleanup_(closedirp) DIR *d = NULL;
	struct dirent *de;
	char back[4096];

	if (!real)
		return -errno;
	d = opendir("/sys/block");
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		unsigned n, maj, min;
		char p[300], dev[32] = "";
		_cleanup_close_ int fd = -1;
		ssize_t len;

		if (sscanf(de->d_name, "loop%u", &n) != 1)
			continue;
		snprintf(p, sizeof p, "/sys/block/%s/dev", de->d_name);
		fd = open(p, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || (len = read(fd, dev, sizeof dev - 1)) <= 0)
			continue;
		dev[len] = '\0';
		if (sscanf(dev, "%u:%u", &maj, &min) != 2 ||
		    backing_file(maj, min, back, sizeof back) < 0)
			continue;
		if (strcmp(back, real) == 0)
			return (int)n;
	}
	return -ENOENT;
}

int diskimg_mounted_from(const char *dir, const char *img)
{
	_cleanup_free_ char *real = NULL;
	char back[4096];
	struct stat st;
	int r;

	r = diskimg_is_mount(dir);
	if (r <= 0)
		return r < 0 ? r : -ENOTCONN;
	if (stat(dir, &st) < 0)
		return -errno;
	if (backing_file(major(st.st_dev), minor(st.st_dev), back, sizeof back) < 0)
		return 0; /* not a loop device's filesystem */
	real = realpath(img, NULL);
	return real && strcmp(real, back) == 0 ? 1 : 0;
}

int diskimg_is_mount(const char *dir)
{
	struct statx a, b;
	char parent[4096];

	if (snprintf(parent, sizeof parent, "%s/..", dir) >= (int)sizeof parent)
		return -ENAMETOOLONG;
	if (statx(AT_FDCWD, dir, AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, &a) < 0)
		return -errno;
	if (a.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT)
		return !!(a.stx_attributes & STATX_ATTR_MOUNT_ROOT);
	if (statx(AT_FDCWD, parent, 0, STATX_BASIC_STATS, &b) < 0)
		return -errno;
	return a.stx_dev_major != b.stx_dev_major || a.stx_dev_minor != b.stx_dev_minor;
}

/* Mounts the ext4 on /dev/loopN at dir. Read-only: no journal replay (a
 * frozen image was unmounted cleanly). Read-write: no background zeroing
 * of inode tables, which would fill in the sparse file for nothing (mkfs
 * made them lazily; ext4 keeps track of the groups it never used). When
 * the device already carries a filesystem, the kernel gives that one, with
 * its options: a read-only mount of one that is read-write becomes a
 * read-only mount of it. */
static int mount_dev(int n, const char *dir, bool ro)
{
	unsigned long flags = MS_NODEV | MS_NOSUID;
	char dev[32];

	snprintf(dev, sizeof dev, "/dev/loop%d", n);
	if (mount(dev, dir, "ext4", flags | (ro ? MS_RDONLY : 0),
		  ro ? "noload" : "noinit_itable") == 0)
		return 0;
	if (!ro || errno != EBUSY)
		return -errno;
	if (mount(dev, dir, "ext4", flags, NULL) < 0)
		return -errno;
	if (mount(NULL, dir, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | flags, NULL) < 0) {
		int r = -errno;
		(void)umount2(dir, UMOUNT_NOFOLLOW);
		return r;
	}
	return 0;
}

int diskimg_mount(const char *img, const char *dir, bool ro, pd_error *err)
{
	_cleanup_close_ int fd = open(img, (ro ? O_RDONLY : O_RDWR) | O_CLOEXEC | O_NOFOLLOW);
	_cleanup_close_ int lfd = -1;
	int n = -1, r = 0;

	if (fd < 0)
		return pd_error_set(err, -errno, "cannot open %s: %s", img, strerror(errno));
	/* One image, one filesystem: two over the same blocks would each
	 * overwrite what the other wrote. An image still bound to a loop
	 * device has one there (a mount elsewhere: another mount namespace
	 * that copied ours, a lazy unmount something still holds): that one
	 * is mounted again. A device the kernel is clearing (asynchronously,
	 * after the last unmount) refuses to open: then we wait until it is
	 * free (2 s at most). */
	for (int i = 0; i < 100; i++) {
		n = diskimg_bound(img);
		if (n < 0)
			break;
		r = mount_dev(n, dir, ro);
		if (r == 0)
			return 0;
		usleep(20 * 1000);
	}
	if (n >= 0)
		return pd_error_set(err, -EBUSY, "cannot mount %s: /dev/loop%d holds it (%s)", img,
				    n, strerror(-r));
	r = loop_attach(fd, ro, &n, &lfd, err);
	if (r < 0)
		return r;
	r = mount_dev(n, dir, ro);
	if (r < 0)
		return pd_error_set(err, r, "cannot mount %s at %s: %s", img, dir, strerror(-r));
	/* Autoclear: when lfd closes (here), the device stays while the
	 * mount holds it and clears itself with the last unmount; without a
	 * mount it clears now. */
	return 0;
}

int diskimg_umount(const char *dir)
{
	for (;;) {
		if (umount2(dir, UMOUNT_NOFOLLOW) == 0)
			continue;
		return errno == EINVAL || errno == ENOENT ? 0 : -errno;
	}
}

int diskimg_claim(const char *dir, uint32_t uid)
{
	char p[4096];
	struct stat st;

	if (snprintf(p, sizeof p, "%s/upper", dir) >= (int)sizeof p)
		return -ENAMETOOLONG;
	if (lstat(p, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	if ((st.st_mode & 07777) != DISKIMG_UNCLAIMED_MODE || st.st_uid != 0)
		return 0;
	if (lchown(p, uid, uid) < 0 || chmod(p, 0755) < 0)
		return -errno;
	return 0;
}

int diskimg_usage(const char *dir, uint64_t *ret_used, uint64_t *ret_total)
{
	struct statfs s;

	if (statfs(dir, &s) < 0)
		return -errno;
	*ret_total = (uint64_t)s.f_blocks * (uint64_t)s.f_bsize;
	*ret_used = (uint64_t)(s.f_blocks - s.f_bfree) * (uint64_t)s.f_bsize;
	return 0;
}

int diskimg_resize(const char *img, uint64_t bytes, pd_error *err)
{
	const char *fsck[] = {"e2fsck", "-f", "-p", img, NULL};
	char kib[32];
	const char *resize[] = {"resize2fs", img, kib, NULL};
	struct stat st;
	int r;

	if (stat(img, &st) < 0)
		return pd_error_set(err, -errno, "cannot stat %s: %s", img, strerror(errno));
	if ((uint64_t)st.st_size == bytes)
		return 0;
	/* Never under a filesystem that still has it (the kernel clears an
	 * unmounted one's device asynchronously: 2 s for that). */
	for (int i = 0; i < 100 && diskimg_bound(img) >= 0; i++)
		usleep(20 * 1000);
	if (diskimg_bound(img) >= 0)
		return pd_error_set(err, -EBUSY, "%s is still mounted somewhere", img);
	snprintf(kib, sizeof kib, "%" PRIu64 "K", bytes / 1024);
	/* resize2fs wants a checked filesystem; -p fixes only what is safe
	 * and fails (exit > 1) on anything else. */
	r = run(fsck, err);
	if (r < 0)
		return r;
	if (bytes > (uint64_t)st.st_size) {
		if (truncate(img, (off_t)bytes) < 0)
			return pd_error_set(err, -errno, "cannot grow %s: %s", img,
					    strerror(errno));
		r = run(resize, err);
		if (r < 0)
			(void)!truncate(img, st.st_size);
		return r;
	}
	/* A shrink that does not fit is refused by resize2fs before it
	 * changes anything. */
	r = run(resize, err);
	if (r < 0)
		return r;
	if (truncate(img, (off_t)bytes) < 0)
		return pd_error_set(err, -errno, "cannot shrink %s: %s", img, strerror(errno));
	return 0;
}
