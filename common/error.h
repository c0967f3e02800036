/* error.h - an errno and a human-readable reason, carried up to whoever
 * must show it to a person (the tree's `error` files, the HTTP body, the CLI).
 *
 * The pattern (after crun's libcrun_error_t):
 *
 *	return pd_error_set(err, -EBUSY, "box %s is running", name);
 *
 * pd_error_set() records the reason and returns its first argument, so the
 * usual int -errno return convention is kept. Passing err == NULL is allowed
 * (the reason is dropped). pd_error_prefix() wraps an existing reason with
 * context on the way up.
 */
#pragma once

#include <time.h>

#include "common/util.h"

#define PD_ERROR_MAX 512

typedef struct pd_error {
	int code; /* negative errno, 0 when unset */
	char msg[PD_ERROR_MAX];
	time_t when; /* when it was set (pd_error_set()), 0 if never */
} pd_error;

int pd_error_set(pd_error *err, int code, const char *fmt, ...) _printf_(3, 4);

/* Prepends "context: " to the recorded reason. Returns err->code. */
int pd_error_prefix(pd_error *err, const char *fmt, ...) _printf_(2, 3);

static inline void pd_error_clear(pd_error *err)
{
	if (err) {
		err->code = 0;
		err->msg[0] = '\0';
		err->when = 0;
	}
}
