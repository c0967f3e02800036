/* util-portable.c - the helpers of util.h that need nothing Linux-only:
 * the CLI, which also builds on macOS, links these and not util.c (see
 * docs/cli-platforms.md). The daemon links both. */

#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "common/util.h"

struct errno_entry {
	int code;
	const char *name;
};

static const struct errno_entry errno_table[] = {
    {EPERM, "EPERM"},
    {ENOENT, "ENOENT"},
    {ESRCH, "ESRCH"},
    {EINTR, "EINTR"},
    {EIO, "EIO"},
    {ENXIO, "ENXIO"},
    {E2BIG, "E2BIG"},
    {EBADF, "EBADF"},
    {ECHILD, "ECHILD"},
    {EAGAIN, "EAGAIN"},
    {ENOMEM, "ENOMEM"},
    {EACCES, "EACCES"},
    {EBUSY, "EBUSY"},
    {EEXIST, "EEXIST"},
    {EXDEV, "EXDEV"},
    {ENODEV, "ENODEV"},
    {ENOTDIR, "ENOTDIR"},
    {EISDIR, "EISDIR"},
    {EINVAL, "EINVAL"},
    {EMFILE, "EMFILE"},
    {EFBIG, "EFBIG"},
    {ENOSPC, "ENOSPC"},
    {EROFS, "EROFS"},
    {ERANGE, "ERANGE"},
    {ENAMETOOLONG, "ENAMETOOLONG"},
    {ENOSYS, "ENOSYS"},
    {ENOTEMPTY, "ENOTEMPTY"},
    {ENOTSUP, "ENOTSUP"},
    {ENOTCONN, "ENOTCONN"},
    {ETIMEDOUT, "ETIMEDOUT"},
    {EDQUOT, "EDQUOT"},
    {ECANCELED, "ECANCELED"},
    {ELOOP, "ELOOP"},
    {ENOBUFS, "ENOBUFS"},
    {EPIPE, "EPIPE"},
    {ESPIPE, "ESPIPE"},
    {ENFILE, "ENFILE"},
    {ETXTBSY, "ETXTBSY"},
    {EMLINK, "EMLINK"},
    {ECONNREFUSED, "ECONNREFUSED"},
    {EADDRINUSE, "EADDRINUSE"},
    {EPROTO, "EPROTO"},
    {EOVERFLOW, "EOVERFLOW"},
    {EILSEQ, "EILSEQ"},
    {ENODATA, "ENODATA"},
};

char **strv_free(char **v)
{
	if (v) {
		for (char **p = v; *p; p++)
			free(*p);
		free(v);
	}
	return NULL;
}

/* Accepts err with either sign, so errno_name(r) works on a -errno return. */
const char *errno_name(int err)
{
	if (err < 0)
		err = -err;
	for (size_t i = 0; i < ELEMENTSOF(errno_table); i++)
		if (errno_table[i].code == err)
			return errno_table[i].name;
	return "EIO";
}

int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int read_file_at(int dirfd, const char *path, size_t max, char **ret, size_t *ret_len)
{
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *buf = NULL;
	size_t len = 0, cap;

	if (!path || !ret)
		return -EINVAL;
	if (max > SIZE_MAX / 2)
		max = SIZE_MAX / 2;

	fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;

	/* Room for max bytes, one more to notice a larger file, and the NUL.
	 * Grown as data arrives: sizes from stat lie for /proc and /sys. */
	cap = max + 2 < 4096 ? max + 2 : 4096;
	buf = malloc(cap);
	if (!buf)
		return -ENOMEM;

	for (;;) {
		if (len + 1 == cap) {
			size_t ncap = cap > (max + 2) / 2 ? max + 2 : cap * 2;
			char *n = realloc(buf, ncap);
			if (!n)
				return -ENOMEM;
			buf = n;
			cap = ncap;
		}
		ssize_t k = read(fd, buf + len, cap - 1 - len);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (k == 0)
			break;
		len += (size_t)k;
		if (len > max)
			return -EFBIG;
	}

	buf[len] = '\0';
	*ret = TAKE_PTR(buf);
	if (ret_len)
		*ret_len = len;
	return 0;
}

int mkdir_p(const char *path, mode_t mode)
{
	_cleanup_free_ char *p = NULL;
	struct stat st;

	if (!path || !*path)
		return -EINVAL;
	p = strdup(path);
	if (!p)
		return -ENOMEM;

	for (char *s = p + 1;; s++) {
		if (*s != '/' && *s != '\0')
			continue;
		bool last = *s == '\0';
		if (!last && s[-1] == '/')
			continue; /* "//" */
		char saved = *s;
		*s = '\0';
		if (mkdir(p, mode) < 0) {
			int e = errno;
			if (e != EEXIST)
				return -e;
			if (stat(p, &st) < 0)
				return -errno;
			if (!S_ISDIR(st.st_mode))
				return -ENOTDIR;
		}
		*s = saved;
		if (last)
			break;
	}
	return 0;
}

unsigned long long now_usec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000ULL + (unsigned long long)ts.tv_nsec / 1000;
}
