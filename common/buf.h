/* buf.h - the one growing byte buffer of the project (the daemon's adapters
 * and the CLI).
 *
 * Start from zero, or with a cap: `struct pd_buf b = {.max = LIMIT}`.
 * data is NULL until something is appended, and NUL-terminated from then on
 * (the NUL is not counted in len), so text in it is a string.
 *
 * max, when not 0, caps len. An append that does not fit keeps the bytes
 * that do, sets truncated and returns -EFBIG: a caller either fails (a body
 * larger than it accepts) or goes on (the first 64 KiB of an error body).
 * -ENOMEM leaves the buffer as it was. Not thread-safe: one owner.
 */
#pragma once

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/util.h"

struct pd_buf {
	char *data;	/* NULL, or len bytes and a NUL */
	size_t len;	/* bytes held */
	size_t size;	/* bytes allocated (len + 1 at least, once data is set) */
	size_t max;	/* 0: no cap; else len never exceeds it */
	bool truncated; /* an append was cut at max */
};

/* Appends n bytes of p. 0, -EFBIG (cut at max), or -ENOMEM. */
int pd_buf_append(struct pd_buf *b, const void *p, size_t n);

/* Appends formatted text, under the same rules as pd_buf_append(). */
int pd_buf_printf(struct pd_buf *b, const char *fmt, ...) _printf_(2, 3);
int pd_buf_vprintf(struct pd_buf *b, const char *fmt, va_list ap) _printf_(2, 0);

/* Hands the bytes out (malloc'd, NUL-terminated; "" when nothing was
 * appended) and empties b (its max stays). *ret_len (if not NULL) gets
 * their length. NULL when out of memory (b is then unchanged). */
char *pd_buf_take(struct pd_buf *b, size_t *ret_len);

/* Frees the bytes and empties b (its max stays). */
void pd_buf_free(struct pd_buf *b);

static inline void pd_buf_freep(struct pd_buf *b)
{
	pd_buf_free(b);
}
#define _cleanup_pd_buf_ _cleanup_(pd_buf_freep)
