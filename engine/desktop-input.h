/* desktop-input.h - computer use as commands run in the box: the lines
 * written to boxes/NAME/desktop/input turned into one xdotool command line,
 * and the output of the commands that list the desktop's windows and
 * where the pointer is turned into the text of desktop/windows and
 * desktop/cursor. Pure functions: no I/O, no lock, thread-safe.
 *
 * Everything they read is hostile: the input lines come from whoever may
 * write the file, the command output from the box (its programs are the
 * box's own). Nothing read is ever passed to xdotool as an option, a
 * command name or a window: the argument vector is built from fixed words
 * and from numbers and key names checked here.
 *
 * The input language, one action a line:
 *	move X Y
 *	click [left|middle|right] [X Y]
 *	double [X Y]                    (a left double click)
 *	drag X1 Y1 X2 Y2                (left button held from 1 to 2)
 *	scroll up|down N                (N wheel steps, 1..DESKTOP_SCROLL_MAX)
 *	type TEXT                       (TEXT: everything after "type ")
 *	key COMBO                       (ctrl+s, Return, ctrl+alt+t, shift+Tab)
 * Words are separated by spaces or tabs (any number); `type` takes the
 * rest of its line after exactly one space, verbatim (leading spaces, tabs
 * included). Coordinates are decimal, 0 <= X < width, 0 <= Y < height.
 * COMBO: modifiers (ctrl, control, alt, shift, super, win, meta; any case)
 * joined by '+' to one key: a key name of [A-Za-z0-9_] (X keysym names:
 * Return, Tab, F5, BackSpace, Page_Up, a, ...) or one printable character
 * (`key ctrl+/`, `key +`, `key ctrl++`). A key name that is an xdotool
 * command (`key exec`) is refused. TEXT: valid UTF-8 without control
 * characters except tab, at most DESKTOP_TYPE_MAX bytes, and all the
 * `type` lines of one write at most DESKTOP_TYPE_TOTAL_MAX bytes. Empty
 * lines (and lines of blanks) are skipped; they count for line numbers. A
 * final newline is optional; "\r\n" line ends are accepted (the "\r" is
 * dropped, it never reaches a TEXT). At most DESKTOP_INPUT_LINES_MAX lines.
 */
#pragma once

#include <stddef.h>

#include "common/error.h"

/* Lines of one write to desktop/input. */
#define DESKTOP_INPUT_LINES_MAX 1000
/* Bytes of the TEXT of one `type` line, and of all of them in one write
 * (each character is typed ~12 ms apart: 16 KiB is ~3 minutes). */
#define DESKTOP_TYPE_MAX 4096
#define DESKTOP_TYPE_TOTAL_MAX 16384
/* Wheel steps of one `scroll`. */
#define DESKTOP_SCROLL_MAX 100
/* Milliseconds between typed characters (xdotool's own default). */
#define DESKTOP_TYPE_DELAY_MS 12

/* Checks every line of text[0..len) against a screen of width x height,
 * then builds one NULL-terminated argument vector "xdotool" ... that
 * performs all the actions in order. On success returns 0 and *ret_argv
 * (malloc'd, free with strv_free()). Any bad line: -EINVAL, err says
 * "line N: reason" (N from 1), *ret_argv untouched; so nothing is sent.
 * No action at all (empty text, only blank lines): -EINVAL too.
 * -ENOMEM when out of memory. */
int eng_desktop_input_parse(const char *text, size_t len, unsigned width, unsigned height,
			    char ***ret_argv, pd_error *err);

/* What desktop/windows lists: windows that are mapped, have a title, are
 * at most two levels below the root (a client, or a window manager's frame
 * and its client: not the widgets inside) and show some of themselves on
 * the screen's side of its top-left corner. At most DESKTOP_WINDOWS_MAX. */
#define DESKTOP_WINDOWS_MAX 256
/* Bytes of a title kept (a longer one is cut). */
#define DESKTOP_TITLE_MAX 1024

/* The command that lists the windows, to run in the box with DISPLAY set
 * (a `sh -c` script of xdotool, head, od and tr: programs of every desktop
 * image). It prints one line per window: its id in decimal, a space, then
 * in hexadecimal (so a title's newlines cannot forge a line) the output of
 * `xdotool getwindowgeometry --shell ID getwindowname ID`, cut to 1200
 * bytes. A static vector owned by the module: do not free. */
char **eng_desktop_windows_argv(void);

/* Turns that command's output out[0..len) (hostile: any bytes, any size)
 * into the text of desktop/windows, one line per window:
 *	ID WxH+X+Y TITLE
 * e.g. "0x1c00003 817x483+10+85 Terminal - user@box: ~". ID in
 * hexadecimal (xdotool takes it as a window), W x H the size, X and Y the
 * offsets of its top-left corner from the screen's with their sign
 * ("+10+85"; "-5+0" is 5 pixels left of the screen, not X11's offset from
 * the right edge), TITLE after one space to the end of the line (it may
 * hold spaces), escaped as text_sanitize() does (control characters,
 * backslashes and bytes that are not UTF-8 as \xHH) after being cut to
 * DESKTOP_TITLE_MAX bytes. Malformed lines are skipped. Returns 0 and
 * *ret_text (malloc'd, "" when there is no window), or -ENOMEM. */
int eng_desktop_windows_format(const char *out, size_t len, char **ret_text, pd_error *err);

/* The command that tells where the pointer is: `xdotool getmouselocation
 * --shell`, run with DISPLAY set. Static, do not free. */
char **eng_desktop_cursor_argv(void);

/* Turns its output into "X Y\n". Output without X= and Y= lines of
 * decimal numbers (at most 65535): -EIO with a reason. -ENOMEM. */
int eng_desktop_cursor_format(const char *out, size_t len, char **ret_text, pd_error *err);
