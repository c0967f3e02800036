/* compat-windows.c - see compat-windows.h; and errno_name(), which the
 * Windows build takes from here instead of common/util.c (Linux only: the
 * rest of that file is the daemon's). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <windows.h>

#include "common/util.h"

char *strndup(const char *s, size_t n)
{
	size_t len = strnlen(s, n);
	char *p = malloc(len + 1);

	if (!p)
		return NULL;
	memcpy(p, s, len);
	p[len] = '\0';
	return p;
}

/* The names the server sends in an error body's "errno" that Windows'
 * errno.h has too (see common/util.c for the full table). */
static const struct {
	int code;
	const char *name;
} errno_table[] = {
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

const char *errno_name(int err)
{
	if (err < 0)
		err = -err;
	for (size_t i = 0; i < sizeof(errno_table) / sizeof(errno_table[0]); i++)
		if (errno_table[i].code == err)
			return errno_table[i].name;
	return "EIO";
}
