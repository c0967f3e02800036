/* desktop-input.h - desktop/input lines to one xdotool command line, and
 * the queries of desktop/windows and desktop/cursor. Pure. */
#pragma once

#include <stddef.h>

#include "common/error.h"

/* All lines checked first: -EINVAL "line N: reason" and nothing to run on
 * any bad line. Else one argv (argv[0] "xdotool", NULL-terminated; free
 * with strv_free()). */
int eng_desktop_input_parse(const char *text, size_t len, unsigned width, unsigned height,
			    char ***ret_argv, pd_error *err);
/* The queries' command lines (static) and the text their output gives. */
char **eng_desktop_windows_argv(void);
int eng_desktop_windows_format(const char *out, size_t len, char **ret_text, pd_error *err);
char **eng_desktop_cursor_argv(void);
int eng_desktop_cursor_format(const char *out, size_t len, char **ret_text, pd_error *err);
