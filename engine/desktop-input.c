/* desktop-input.c - desktop/input to xdotool (desktop-input.h). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/util.h"
#include "engine/desktop-input.h"

#define ARGS_MAX 4096

struct av {
	char **v;
	size_t n;
	bool oom;
};

static void add(struct av *a, const char *s)
{
	char **nv;

	if (a->oom)
		return;
	nv = realloc(a->v, (a->n + 2) * sizeof *nv);
	if (!nv || !(nv[a->n] = strdup(s))) {
		if (nv)
			a->v = nv;
		a->oom = true;
		return;
	}
	a->v = nv;
	a->v[++a->n] = NULL;
}

static bool coord(const char *s, unsigned max, unsigned *ret)
{
	char *end;
	unsigned long v;

	if (!s || !*s || strspn(s, "0123456789") != strlen(s) || strlen(s) > 6)
		return false;
	v = strtoul(s, &end, 10);
	if (v >= max)
		return false;
	*ret = (unsigned)v;
	return true;
}

static void add_move(struct av *a, unsigned x, unsigned y)
{
	char sx[16], sy[16];

	snprintf(sx, sizeof sx, "%u", x);
	snprintf(sy, sizeof sy, "%u", y);
	add(a, "mousemove");
	add(a, sx);
	add(a, sy);
}

static int line_to_args(char *line, unsigned w, unsigned h, struct av *a, bool *typed,
			const char **why)
{
	char *tok[8] = {0};
	size_t nt = 0;
	char *save = NULL, *rest = NULL;
	unsigned x, y, x2, y2;

	if (strncmp(line, "type ", 5) == 0) {
		rest = line + 5;
		if (!*rest)
			return *why = "type: nothing to type", -1;
		add(a, "type");
		add(a, "--");
		add(a, rest);
		*typed = true;
		return 0;
	}
	for (char *t = strtok_r(line, " \t", &save); t; t = strtok_r(NULL, " \t", &save)) {
		if (nt == ELEMENTSOF(tok))
			return *why = "too many words", -1;
		tok[nt++] = t;
	}
	if (nt == 0)
		return 1; /* blank */
	if (strcmp(tok[0], "move") == 0) {
		if (nt != 3 || !coord(tok[1], w, &x) || !coord(tok[2], h, &y))
			return *why = "move X Y, inside the screen", -1;
		add_move(a, x, y);
	} else if (strcmp(tok[0], "click") == 0 || strcmp(tok[0], "double") == 0) {
		bool dbl = tok[0][0] == 'd';
		const char *button = "1";
		size_t i = 1;
		if (!dbl && nt > 1 && !(tok[1][0] >= '0' && tok[1][0] <= '9')) {
			if (strcmp(tok[1], "left") == 0)
				button = "1";
			else if (strcmp(tok[1], "middle") == 0)
				button = "2";
			else if (strcmp(tok[1], "right") == 0)
				button = "3";
			else
				return *why = "click [left|middle|right] [X Y]", -1;
			i = 2;
		}
		if (nt == i + 2) {
			if (!coord(tok[i], w, &x) || !coord(tok[i + 1], h, &y))
				return *why = "X Y must be inside the screen", -1;
			add_move(a, x, y);
		} else if (nt != i)
			return *why = dbl ? "double [X Y]" : "click [left|middle|right] [X Y]", -1;
		add(a, "click");
		if (dbl) {
			add(a, "--repeat");
			add(a, "2");
		}
		add(a, button);
	} else if (strcmp(tok[0], "drag") == 0) {
		if (nt != 5 || !coord(tok[1], w, &x) || !coord(tok[2], h, &y) ||
		    !coord(tok[3], w, &x2) || !coord(tok[4], h, &y2))
			return *why = "drag X1 Y1 X2 Y2, inside the screen", -1;
		add_move(a, x, y);
		add(a, "mousedown");
		add(a, "1");
		add_move(a, x2, y2);
		add(a, "mouseup");
		add(a, "1");
	} else if (strcmp(tok[0], "scroll") == 0) {
		if (nt != 3 || (strcmp(tok[1], "up") && strcmp(tok[1], "down")) ||
		    !coord(tok[2], 101, &x) || x == 0)
			return *why = "scroll up|down N (1 to 100)", -1;
		add(a, "click");
		add(a, "--repeat");
		add(a, tok[2]);
		add(a, tok[1][0] == 'u' ? "4" : "5");
	} else if (strcmp(tok[0], "key") == 0) {
		if (nt != 2 || strspn(tok[1], "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
					      "0123456789+_") != strlen(tok[1]))
			return *why = "key COMBO (such as ctrl+s)", -1;
		add(a, "key");
		add(a, "--");
		add(a, tok[1]);
	} else
		return *why = "unknown action (move, click, double, drag, scroll, type, key)", -1;
	return 0;
}

int eng_desktop_input_parse(const char *text, size_t len, unsigned width, unsigned height,
			    char ***ret_argv, pd_error *err)
{
	struct av a = {0};
	size_t lineno = 0, actions = 0;
	const char *p = text, *end = text + len;
	bool typed = false;

	if (memchr(text, '\0', len))
		return pd_error_set(err, -EINVAL, "input: NUL byte");
	add(&a, "xdotool");
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = (size_t)((nl ? nl : end) - p);
		char *line = strndup(p, n);
		const char *why = NULL;
		int r;

		lineno++;
		if (!line) {
			strv_free(a.v);
			return pd_error_set(err, -ENOMEM, "out of memory");
		}
		if (n && line[n - 1] == '\r')
			line[n - 1] = '\0';
		if (typed && line[0])
			r = -1, why = "type must be the last action";
		else
			r = line_to_args(line, width, height, &a, &typed, &why);
		free(line);
		if (r < 0) {
			strv_free(a.v);
			return pd_error_set(err, -EINVAL, "line %zu: %s", lineno, why);
		}
		actions += r == 0;
		p = nl ? nl + 1 : end;
	}
	if (a.oom || a.n > ARGS_MAX) {
		strv_free(a.v);
		return pd_error_set(err, a.oom ? -ENOMEM : -E2BIG, "input: too much at once");
	}
	if (!actions) {
		strv_free(a.v);
		return pd_error_set(err, -EINVAL, "input: no action");
	}
	*ret_argv = a.v;
	return 0;
}

static char sh[] = "/bin/sh", dash_c[] = "-c", xdotool[] = "xdotool",
	    getmouse[] = "getmouselocation", shell[] = "--shell";
static char script[] =
    "for id in $(xdotool search --onlyvisible --name '.' 2>/dev/null); do"
    " eval \"$(xdotool getwindowgeometry --shell \"$id\" 2>/dev/null)\" || continue;"
    " printf '%s %sx%s+%s+%s %s\\n' \"$id\" \"$WIDTH\" \"$HEIGHT\" \"$X\" \"$Y\""
    " \"$(xdotool getwindowname \"$id\" 2>/dev/null)\"; done";
static char *windows_argv[] = {sh, dash_c, script, NULL};

char **eng_desktop_windows_argv(void)
{
	return windows_argv;
}

/* Control characters out (a title is the box's). */
int eng_desktop_windows_format(const char *out, size_t len, char **ret_text, pd_error *err)
{
	char *t = malloc(len + 1);

	if (!t)
		return pd_error_set(err, -ENOMEM, "out of memory");
	for (size_t i = 0; i < len; i++)
		t[i] = (unsigned char)out[i] < 0x20 && out[i] != '\n' ? ' ' : out[i];
	t[len] = '\0';
	*ret_text = t;
	return 0;
}

static char *cursor_argv[] = {xdotool, getmouse, shell, NULL};

char **eng_desktop_cursor_argv(void)
{
	return cursor_argv;
}

int eng_desktop_cursor_format(const char *out, size_t len, char **ret_text, pd_error *err)
{
	_cleanup_free_ char *s = strndup(out, len);
	const char *px, *py;

	if (!s)
		return pd_error_set(err, -ENOMEM, "out of memory");
	px = strstr(s, "X=");
	py = strstr(s, "Y=");
	if (!px || !py)
		return pd_error_set(err, -EIO, "xdotool getmouselocation: unexpected output");
	if (asprintf(ret_text, "%ld %ld\n", strtol(px + 2, NULL, 10), strtol(py + 2, NULL, 10)) < 0)
		return pd_error_set(err, -ENOMEM, "out of memory");
	return 0;
}
