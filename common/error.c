/* error.c - an errno and a human-readable reason (see error.h). */
#include <stdarg.h>
#include <string.h>
#include <time.h>

#include "common/error.h"

int pd_error_set(pd_error *err, int code, const char *fmt, ...)
{
	if (err) {
		int saved = errno;
		va_list ap;

		va_start(ap, fmt);
		if (vsnprintf(err->msg, sizeof(err->msg), fmt, ap) < 0)
			err->msg[0] = '\0';
		va_end(ap);
		err->code = code;
		err->when = time(NULL);
		errno = saved;
	}
	return code;
}

/* Appends as much of s as fits, keeping dst NUL-terminated. */
static void append(char *dst, size_t size, size_t *pos, const char *s)
{
	size_t n = strlen(s);

	if (*pos + 1 >= size)
		return;
	if (n > size - 1 - *pos)
		n = size - 1 - *pos;
	memcpy(dst + *pos, s, n);
	*pos += n;
	dst[*pos] = '\0';
}

/* With err == NULL there is no recorded code to return; -EIO keeps a caller's
 * "return pd_error_prefix(err, ...)" a failure. */
int pd_error_prefix(pd_error *err, const char *fmt, ...)
{
	char ctx[PD_ERROR_MAX], old[PD_ERROR_MAX];
	int saved = errno;
	size_t pos = 0;
	va_list ap;

	if (!err)
		return -EIO;

	va_start(ap, fmt);
	if (vsnprintf(ctx, sizeof(ctx), fmt, ap) < 0)
		ctx[0] = '\0';
	va_end(ap);

	memcpy(old, err->msg, sizeof(old));
	old[sizeof(old) - 1] = '\0';
	err->msg[0] = '\0';
	append(err->msg, sizeof(err->msg), &pos, ctx);
	if (ctx[0] != '\0' && old[0] != '\0')
		append(err->msg, sizeof(err->msg), &pos, ": ");
	append(err->msg, sizeof(err->msg), &pos, old);
	errno = saved;
	return err->code;
}
