/* buf.c - the growing byte buffer (buf.h). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"

#define PD_BUF_MIN 64

/* Makes room for len + n bytes and the NUL. */
static int reserve(struct pd_buf *b, size_t n)
{
	size_t want, size;
	char *grown;

	if (n > SIZE_MAX - 1 - b->len)
		return -ENOMEM;
	want = b->len + n + 1;
	if (b->data && want <= b->size)
		return 0;
	size = b->size < PD_BUF_MIN ? PD_BUF_MIN : b->size;
	while (size < want)
		size = size > SIZE_MAX / 2 ? want : size * 2;
	grown = realloc(b->data, size);
	if (!grown)
		return -ENOMEM;
	if (!b->data)
		grown[0] = '\0';
	b->data = grown;
	b->size = size;
	return 0;
}

/* How many of n more bytes fit under max. */
static size_t room(const struct pd_buf *b, size_t n)
{
	if (!b->max)
		return n;
	if (b->len >= b->max)
		return 0;
	return b->max - b->len < n ? b->max - b->len : n;
}

int pd_buf_append(struct pd_buf *b, const void *p, size_t n)
{
	size_t keep = room(b, n);
	int r = reserve(b, keep);

	if (r < 0)
		return r;
	if (keep)
		memcpy(b->data + b->len, p, keep);
	b->len += keep;
	b->data[b->len] = '\0';
	if (keep < n) {
		b->truncated = true;
		return -EFBIG;
	}
	return 0;
}

int pd_buf_vprintf(struct pd_buf *b, const char *fmt, va_list ap)
{
	va_list again;
	size_t spare, keep;
	int n, r;

	/* Into the spare room first: most texts fit, and need no second pass. */
	spare = b->data ? b->size - b->len : 0;
	va_copy(again, ap);
	n = vsnprintf(b->data ? b->data + b->len : NULL, spare, fmt, ap);
	if (n < 0) {
		va_end(again);
		if (b->data)
			b->data[b->len] = '\0';
		return -EINVAL;
	}
	keep = room(b, (size_t)n);
	if (keep + 1 > spare) { /* the first pass wrote spare - 1 bytes at most */
		r = reserve(b, keep);
		if (r < 0) {
			va_end(again);
			if (b->data)
				b->data[b->len] = '\0';
			return r;
		}
		vsnprintf(b->data + b->len, keep + 1, fmt, again);
	}
	va_end(again);
	b->len += keep;
	b->data[b->len] = '\0';
	if (keep < (size_t)n) {
		b->truncated = true;
		return -EFBIG;
	}
	return 0;
}

int pd_buf_printf(struct pd_buf *b, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = pd_buf_vprintf(b, fmt, ap);
	va_end(ap);
	return r;
}

char *pd_buf_take(struct pd_buf *b, size_t *ret_len)
{
	char *data = b->data ? b->data : strdup("");

	if (!data)
		return NULL;
	if (ret_len)
		*ret_len = b->len;
	*b = (struct pd_buf){.max = b->max};
	return data;
}

void pd_buf_free(struct pd_buf *b)
{
	free(b->data);
	*b = (struct pd_buf){.max = b->max};
}
