/* desktop-input.c - desktop/input lines to one xdotool command line, and
 * the output of the window and pointer queries to the tree's text.
 *
 * Why `type` becomes `key`: xdotool's `type` takes every argument after it
 * as text to type, so a chain could not go on after it (and a text such as
 * "mousemove 0 0" would be typed, not run: safe, but the actions after it
 * would be lost). `key` stops at the first argument that is a command
 * name, and its arguments here are only "Uxxxx" keysym names (and "Tab"),
 * which no command is called: so each character is sent as its Unicode
 * keysym, which xdotool binds to a spare keycode when the keyboard map
 * lacks it, as `type` does. Keys the user names are checked against the
 * list of xdotool's commands for the same reason.
 */
#include "engine/desktop-input.h"

#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "common/buf.h"
#include "common/parse.h"
#include "common/util.h"

/* A growing NULL-terminated argument vector. */
struct argv_build {
	char **v;
	size_t n, size;
};

static void argv_build_release(struct argv_build *a)
{
	if (a->v) {
		for (size_t i = 0; i < a->n; i++)
			free(a->v[i]);
		free(a->v);
	}
	a->v = NULL;
	a->n = a->size = 0;
}

static int argv_add(struct argv_build *a, const char *s)
{
	char *copy;

	if (a->n + 2 > a->size) {
		size_t size = a->size ? a->size * 2 : 64;
		char **v = realloc(a->v, size * sizeof(*v));
		if (!v)
			return -ENOMEM;
		a->v = v;
		a->size = size;
	}
	copy = strdup(s);
	if (!copy)
		return -ENOMEM;
	a->v[a->n++] = copy;
	a->v[a->n] = NULL;
	return 0;
}

static int argv_addv(struct argv_build *a, const char *const *words, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int r = argv_add(a, words[i]);
		if (r < 0)
			return r;
	}
	return 0;
}

static int argv_add_uint(struct argv_build *a, unsigned v)
{
	char num[16];

	snprintf(num, sizeof(num), "%u", v);
	return argv_add(a, num);
}

/* xdotool's commands (its `help`, and those of later versions): words that
 * must never be a key's argument, since `key` would stop there and run
 * the command with the arguments after it (`exec` runs a program). They
 * are matched regardless of case, as xdotool does. */
static const char *const xdotool_commands[] = {
    "behave",
    "behave_screen_edge",
    "click",
    "exec",
    "get_desktop",
    "get_desktop_for_window",
    "get_desktop_viewport",
    "get_num_desktops",
    "getactivewindow",
    "getdisplaygeometry",
    "getmouselocation",
    "getwindowclassname",
    "getwindowfocus",
    "getwindowgeometry",
    "getwindowname",
    "getwindowpid",
    "help",
    "key",
    "keydown",
    "keyup",
    "mousedown",
    "mousemove",
    "mousemove_relative",
    "mouseup",
    "search",
    "selectwindow",
    "set_desktop",
    "set_desktop_for_window",
    "set_desktop_viewport",
    "set_num_desktops",
    "set_window",
    "sleep",
    "type",
    "version",
    "windowactivate",
    "windowclose",
    "windowfocus",
    "windowkill",
    "windowmap",
    "windowminimize",
    "windowmove",
    "windowquit",
    "windowraise",
    "windowreparent",
    "windowsize",
    "windowstate",
    "windowunmap",
};

static bool is_xdotool_command(const char *s)
{
	for (size_t i = 0; i < ELEMENTSOF(xdotool_commands); i++)
		if (strcasecmp(s, xdotool_commands[i]) == 0)
			return true;
	return false;
}

/* Modifiers a COMBO may name, and what xdotool is given for each. */
static const struct {
	const char *name, *xdotool;
} modifiers[] = {
    {"ctrl", "ctrl"},	{"control", "ctrl"}, {"alt", "alt"},   {"shift", "shift"},
    {"super", "super"}, {"win", "super"},    {"meta", "meta"},
};

/* One line being checked: its number for the messages. */
struct line_ctx {
	unsigned no;
	pd_error *err;
};

static int line_error(struct line_ctx *l, const char *fmt, ...) _printf_(2, 3);
static int line_error(struct line_ctx *l, const char *fmt, ...)
{
	char reason[PD_ERROR_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	return pd_error_set(l->err, -EINVAL, "line %u: %s", l->no, reason);
}

/* A word of the line quoted in a message: printable, at most 40 bytes. */
static const char *quote(const char *s, size_t len, char *buf, size_t bufsz)
{
	text_printable(s, len > 40 ? 40 : len, buf, bufsz);
	return buf;
}

/* The blank-separated words of a line (at most max; *ret_n = max + 1 when
 * there are more). */
struct word {
	const char *s;
	size_t len;
};

static size_t split_words(const char *s, size_t len, struct word *words, size_t max)
{
	size_t n = 0, i = 0;

	while (i < len) {
		size_t start;

		while (i < len && (s[i] == ' ' || s[i] == '\t'))
			i++;
		if (i == len)
			break;
		start = i;
		while (i < len && s[i] != ' ' && s[i] != '\t')
			i++;
		if (n == max)
			return max + 1;
		words[n].s = s + start;
		words[n].len = i - start;
		n++;
	}
	return n;
}

static bool word_is(const struct word *w, const char *s)
{
	return w->len == strlen(s) && memcmp(w->s, s, w->len) == 0;
}

/* A coordinate: decimal digits only, below limit. */
static int parse_coord(struct line_ctx *l, const struct word *w, const char *what, unsigned limit,
		       unsigned *ret)
{
	char q[200];
	unsigned v = 0;

	if (w->len == 0 || w->len > 6)
		goto bad;
	for (size_t i = 0; i < w->len; i++) {
		if (w->s[i] < '0' || w->s[i] > '9')
			goto bad;
		v = v * 10 + (unsigned)(w->s[i] - '0');
	}
	if (v >= limit)
		return line_error(l, "%s %u is off the screen (0 to %u)", what, v, limit - 1);
	*ret = v;
	return 0;
bad:
	return line_error(l, "%s '%s' is not a coordinate (a decimal number from 0 to %u)", what,
			  quote(w->s, w->len, q, sizeof(q)), limit - 1);
}

struct screen {
	unsigned width, height;
};

/* Optional "X Y" at words[0..n): 0 words or 2. */
static int parse_point(struct line_ctx *l, const struct screen *sc, const struct word *words,
		       size_t n, const char *usage, bool *ret_has, unsigned *x, unsigned *y)
{
	int r;

	if (n == 0) {
		*ret_has = false;
		return 0;
	}
	if (n != 2)
		return line_error(l, "usage: %s", usage);
	r = parse_coord(l, &words[0], "X", sc->width, x);
	if (r < 0)
		return r;
	r = parse_coord(l, &words[1], "Y", sc->height, y);
	if (r < 0)
		return r;
	*ret_has = true;
	return 0;
}

static int emit_move(struct argv_build *a, unsigned x, unsigned y)
{
	int r = argv_add(a, "mousemove");
	if (r >= 0)
		r = argv_add_uint(a, x);
	if (r >= 0)
		r = argv_add_uint(a, y);
	return r;
}

static int do_move(struct line_ctx *l, const struct screen *sc, const struct word *w, size_t n,
		   struct argv_build *a)
{
	unsigned x, y;
	bool has;
	int r;

	if (n != 2)
		return line_error(l, "usage: move X Y");
	r = parse_point(l, sc, w, n, "move X Y", &has, &x, &y);
	if (r < 0)
		return r;
	return emit_move(a, x, y);
}

static int do_click(struct line_ctx *l, const struct screen *sc, const struct word *w, size_t n,
		    struct argv_build *a)
{
	static const char usage[] = "click [left|middle|right] [X Y]";
	const char *button = "1";
	unsigned x = 0, y = 0;
	bool has;
	int r;

	if (n > 0 && (w[0].s[0] < '0' || w[0].s[0] > '9')) {
		if (word_is(&w[0], "left"))
			button = "1";
		else if (word_is(&w[0], "middle"))
			button = "2";
		else if (word_is(&w[0], "right"))
			button = "3";
		else {
			char q[200];
			return line_error(l, "unknown button '%s' (left, middle, right)",
					  quote(w[0].s, w[0].len, q, sizeof(q)));
		}
		w++;
		n--;
	}
	r = parse_point(l, sc, w, n, usage, &has, &x, &y);
	if (r < 0)
		return r;
	if (has && (r = emit_move(a, x, y)) < 0)
		return r;
	r = argv_add(a, "click");
	if (r >= 0)
		r = argv_add(a, button);
	return r;
}

static int do_double(struct line_ctx *l, const struct screen *sc, const struct word *w, size_t n,
		     struct argv_build *a)
{
	static const char *const words[] = {"click", "--repeat", "2", "1"};
	unsigned x = 0, y = 0;
	bool has;
	int r;

	r = parse_point(l, sc, w, n, "double [X Y]", &has, &x, &y);
	if (r < 0)
		return r;
	if (has && (r = emit_move(a, x, y)) < 0)
		return r;
	return argv_addv(a, words, ELEMENTSOF(words));
}

static int do_drag(struct line_ctx *l, const struct screen *sc, const struct word *w, size_t n,
		   struct argv_build *a)
{
	unsigned x1, y1, x2, y2;
	bool has;
	int r;

	if (n != 4)
		return line_error(l, "usage: drag X1 Y1 X2 Y2");
	r = parse_point(l, sc, w, 2, "drag X1 Y1 X2 Y2", &has, &x1, &y1);
	if (r >= 0)
		r = parse_point(l, sc, w + 2, 2, "drag X1 Y1 X2 Y2", &has, &x2, &y2);
	if (r < 0)
		return r;
	if ((r = emit_move(a, x1, y1)) < 0 || (r = argv_add(a, "mousedown")) < 0 ||
	    (r = argv_add(a, "1")) < 0 || (r = emit_move(a, x2, y2)) < 0 ||
	    (r = argv_add(a, "mouseup")) < 0 || (r = argv_add(a, "1")) < 0)
		return r;
	return 0;
}

static int do_scroll(struct line_ctx *l, const struct word *w, size_t n, struct argv_build *a)
{
	static const char *const words[] = {"click", "--delay", "50", "--repeat"};
	const char *button;
	unsigned steps = 0;
	char q[200];
	int r;

	if (n != 2)
		return line_error(l, "usage: scroll up|down N");
	if (word_is(&w[0], "up"))
		button = "4";
	else if (word_is(&w[0], "down"))
		button = "5";
	else
		return line_error(l, "scroll goes up or down, not '%s'",
				  quote(w[0].s, w[0].len, q, sizeof(q)));
	for (size_t i = 0; i < w[1].len; i++) {
		if (w[1].s[i] < '0' || w[1].s[i] > '9' || i >= 3)
			return line_error(l, "'%s' is not a number of steps (1 to %d)",
					  quote(w[1].s, w[1].len, q, sizeof(q)),
					  DESKTOP_SCROLL_MAX);
		steps = steps * 10 + (unsigned)(w[1].s[i] - '0');
	}
	if (steps < 1 || steps > DESKTOP_SCROLL_MAX)
		return line_error(l, "%u steps: scroll takes 1 to %d", steps, DESKTOP_SCROLL_MAX);
	if ((r = argv_addv(a, words, ELEMENTSOF(words))) < 0 || (r = argv_add_uint(a, steps)) < 0)
		return r;
	return argv_add(a, button);
}

/* The keysym name xdotool is given for the character cp. */
static void keysym_of(uint32_t cp, char *buf, size_t bufsz)
{
	if (cp == '\t')
		snprintf(buf, bufsz, "Tab");
	else
		snprintf(buf, bufsz, "U%04X", (unsigned)cp);
}

static bool is_control(uint32_t cp)
{
	return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f);
}

static int do_type(struct line_ctx *l, const char *text, size_t len, size_t *total,
		   struct argv_build *a)
{
	static const char *const words[] = {"key", "--delay", "12", "--"};
	const unsigned char *p = (const unsigned char *)text;
	size_t off = 0;
	int r;

	static_assert(DESKTOP_TYPE_DELAY_MS == 12, "the delay in words[]");
	if (len == 0)
		return line_error(l, "usage: type TEXT (the text after one space)");
	if (len > DESKTOP_TYPE_MAX)
		return line_error(l, "the text is %zu bytes, more than %d", len, DESKTOP_TYPE_MAX);
	if (*total + len > DESKTOP_TYPE_TOTAL_MAX)
		return line_error(l, "the texts of one write pass %d bytes",
				  DESKTOP_TYPE_TOTAL_MAX);
	/* Checked whole before anything is added. */
	while (off < len) {
		uint32_t cp;
		size_t n = utf8_char(p + off, len - off, &cp);

		if (n == 0)
			return line_error(l, "the text is not UTF-8 (byte 0x%02x at byte %zu)",
					  p[off], off + 1);
		if (is_control(cp) && cp != '\t')
			return line_error(l,
					  "the text has a control character (U+%04X at byte %zu); "
					  "use key for Return and the like",
					  (unsigned)cp, off + 1);
		off += n;
	}
	*total += len;
	r = argv_addv(a, words, ELEMENTSOF(words));
	for (off = 0; r >= 0 && off < len;) {
		char sym[16];
		uint32_t cp = 0;

		off += utf8_char(p + off, len - off, &cp);
		keysym_of(cp, sym, sizeof(sym));
		r = argv_add(a, sym);
	}
	return r;
}

/* COMBO: MOD+MOD+KEY, KEY a name of [A-Za-z0-9_] or one printable
 * character (which may be '+': "ctrl++", "+"). */
static int do_key(struct line_ctx *l, const struct word *w, size_t n, struct argv_build *a)
{
	_cleanup_pd_buf_ struct pd_buf seq = {0};
	const char *s, *key;
	size_t len, keylen, modlen, i;
	char q[200], sym[16];
	bool named = true;
	int r;

	if (n != 1)
		return line_error(l, "usage: key COMBO (such as ctrl+s, Return, shift+Tab)");
	s = w[0].s;
	len = w[0].len;
	if (len > 128)
		return line_error(l, "the combo is longer than 128 bytes");
	/* The key: after the last '+', or the '+' itself when the combo ends
	 * with one ("+", "ctrl++"). */
	if (s[len - 1] == '+') {
		key = s + len - 1;
		keylen = 1;
		if (len == 1)
			modlen = 0;
		else if (s[len - 2] == '+' && len > 2)
			modlen = len - 2;
		else
			return line_error(l, "'%s' ends with '+' but names no key after it",
					  quote(s, len, q, sizeof(q)));
	} else {
		const char *plus = memrchr(s, '+', len);
		key = plus ? plus + 1 : s;
		keylen = (size_t)(s + len - key);
		modlen = plus ? (size_t)(plus - s) : 0;
		if (plus && modlen == 0)
			return line_error(l, "'%s' starts with '+'", quote(s, len, q, sizeof(q)));
	}
	for (i = 0; i < keylen; i++) {
		char c = key[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_'))
			named = false;
	}
	if (!named) {
		uint32_t cp = 0;
		size_t cl = utf8_char((const unsigned char *)key, keylen, &cp);

		if (cl != keylen || is_control(cp) || cp == ' ')
			return line_error(l,
					  "'%s' is not a key: a key name (letters, digits, _: "
					  "Return, F5, a) or one printable character",
					  quote(key, keylen, q, sizeof(q)));
		keysym_of(cp, sym, sizeof(sym));
	} else if (keylen > 32)
		return line_error(l, "the key name is longer than 32 bytes");
	/* The modifiers, each from the list ("ctrl++a" has an empty one). */
	if (modlen > 0 && s[modlen - 1] == '+')
		return line_error(l, "'%s' has an empty modifier", quote(s, len, q, sizeof(q)));
	for (i = 0; i < modlen;) {
		const char *m = s + i;
		const char *end = memchr(m, '+', modlen - i);
		size_t ml = end ? (size_t)(end - m) : modlen - i;
		size_t k;

		for (k = 0; k < ELEMENTSOF(modifiers); k++)
			if (ml == strlen(modifiers[k].name) &&
			    strncasecmp(m, modifiers[k].name, ml) == 0)
				break;
		if (k == ELEMENTSOF(modifiers))
			return line_error(
			    l,
			    "unknown modifier '%s' (ctrl, control, alt, shift, super, win, meta)",
			    quote(m, ml, q, sizeof(q)));
		if ((r = pd_buf_printf(&seq, "%s+", modifiers[k].xdotool)) < 0)
			return r;
		i += ml + 1;
	}
	if (named) {
		if ((r = pd_buf_append(&seq, key, keylen)) < 0)
			return r;
		if (modlen == 0 && is_xdotool_command(seq.data))
			return line_error(l, "'%s' is an xdotool command, not a key", seq.data);
	} else if ((r = pd_buf_printf(&seq, "%s", sym)) < 0)
		return r;
	if ((r = argv_add(a, "key")) < 0 || (r = argv_add(a, "--")) < 0)
		return r;
	return argv_add(a, seq.data);
}

static int parse_line(struct line_ctx *l, const struct screen *sc, const char *s, size_t len,
		      size_t *typed, struct argv_build *a)
{
	struct word w[5];
	size_t start = 0, kwlen, n;
	char q[200];

	if (memchr(s, '\0', len))
		return line_error(l, "a NUL byte");
	while (start < len && (s[start] == ' ' || s[start] == '\t'))
		start++;
	if (start == len)
		return 0; /* blank */
	kwlen = strcspn(s + start, " \t");
	if (kwlen > len - start)
		kwlen = len - start;
	if (kwlen == 4 && memcmp(s + start, "type", 4) == 0) {
		size_t t = start + 4;
		if (t < len)
			t++; /* the one separator */
		return do_type(l, s + t, len - t, typed, a);
	}
	/* At most 5 words: drag X1 Y1 X2 Y2. */
	n = split_words(s + start, len - start, w, ELEMENTSOF(w));
	if (n > ELEMENTSOF(w))
		return line_error(l, "too many words");
	if (word_is(&w[0], "move"))
		return do_move(l, sc, w + 1, n - 1, a);
	if (word_is(&w[0], "click"))
		return do_click(l, sc, w + 1, n - 1, a);
	if (word_is(&w[0], "double"))
		return do_double(l, sc, w + 1, n - 1, a);
	if (word_is(&w[0], "drag"))
		return do_drag(l, sc, w + 1, n - 1, a);
	if (word_is(&w[0], "scroll"))
		return do_scroll(l, w + 1, n - 1, a);
	if (word_is(&w[0], "key"))
		return do_key(l, w + 1, n - 1, a);
	return line_error(l, "unknown action '%s' (move, click, double, drag, scroll, type, key)",
			  quote(w[0].s, w[0].len, q, sizeof(q)));
}

int eng_desktop_input_parse(const char *text, size_t len, unsigned width, unsigned height,
			    char ***ret_argv, pd_error *err)
{
	struct argv_build a = {0};
	struct screen sc = {width, height};
	struct line_ctx l = {0, err};
	size_t off = 0, typed = 0;
	int r;

	if (width == 0 || height == 0)
		return pd_error_set(err, -EINVAL, "the screen has no size");
	r = argv_add(&a, "xdotool");
	if (r < 0)
		goto fail;
	while (off < len) {
		const char *nl = memchr(text + off, '\n', len - off);
		size_t end = nl ? (size_t)(nl - text) : len;
		size_t ll = end - off;

		l.no++;
		if (l.no > DESKTOP_INPUT_LINES_MAX) {
			r = line_error(&l, "more than %d lines in one write",
				       DESKTOP_INPUT_LINES_MAX);
			goto fail;
		}
		if (ll > 0 && text[off + ll - 1] == '\r')
			ll--;
		r = parse_line(&l, &sc, text + off, ll, &typed, &a);
		if (r < 0)
			goto fail;
		off = end + 1;
	}
	if (a.n == 1) {
		r = pd_error_set(err, -EINVAL,
				 "no action (move, click, double, drag, scroll, type, key)");
		goto fail;
	}
	*ret_argv = a.v;
	return 0;
fail:
	if (r == -ENOMEM)
		pd_error_set(err, -ENOMEM, "out of memory");
	argv_build_release(&a);
	return r;
}

/* The windows: a line per window, "ID HEX" where HEX is the output of
 * getwindowgeometry --shell + getwindowname, so nothing the window's
 * owner chose can break out of its line. head bounds each part. */
#define WINDOWS_SCRIPT                                                                             \
	"for w in $(xdotool search --maxdepth 2 --onlyvisible --name . 2>/dev/null | head -n "     \
	"256); do "                                                                                \
	"printf '%s ' \"$w\"; "                                                                    \
	"xdotool getwindowgeometry --shell \"$w\" getwindowname \"$w\" 2>/dev/null "               \
	"| head -c 1200 | od -An -v -tx1 | tr -d ' \\n'; echo; done"

char **eng_desktop_windows_argv(void)
{
	static char *argv[] = {(char *)"/bin/sh", (char *)"-c", (char *)WINDOWS_SCRIPT, NULL};
	return argv;
}

char **eng_desktop_cursor_argv(void)
{
	static char *argv[] = {(char *)"xdotool", (char *)"getmouselocation", (char *)"--shell",
			       NULL};
	return argv;
}

/* "NAME=<signed decimal>\n" at *p (n bytes): the value, and *p moved
 * past the line. -1 when the bytes are not that. */
static int shell_var(const char **p, const char *end, const char *name, long long min,
		     long long max, long long *ret)
{
	size_t nl = strlen(name);
	const char *s = *p;
	bool neg = false;
	long long v = 0;
	int digits = 0;

	if ((size_t)(end - s) < nl + 1 || memcmp(s, name, nl) != 0 || s[nl] != '=')
		return -1;
	s += nl + 1;
	if (s < end && *s == '-') {
		neg = true;
		s++;
	}
	while (s < end && *s >= '0' && *s <= '9') {
		if (++digits > 12)
			return -1;
		v = v * 10 + (*s - '0');
		s++;
	}
	if (digits == 0 || s == end || *s != '\n')
		return -1;
	if (neg)
		v = -v;
	if (v < min || v > max)
		return -1;
	*ret = v;
	*p = s + 1;
	return 0;
}

/* A lowercase hex digit's value (od prints those), -1 for anything else. */
static int hexval(char c)
{
	static const char digits[] = "0123456789abcdef";
	const char *d = c ? strchr(digits, c) : NULL;

	return d ? (int)(d - digits) : -1;
}

/* One line "DECIMAL_ID HEX" of the windows script: appends the window's
 * line to b. Returns 1 when one was added, 0 when the line is malformed,
 * -ENOMEM. */
static int format_window(const char *s, size_t len, struct pd_buf *b)
{
	/* The decoded bytes: geometry lines (short) and a title. */
	unsigned char raw[DESKTOP_TITLE_MAX + 200];
	char title[4 * DESKTOP_TITLE_MAX + 1];
	const char *p, *end, *sp;
	long long id = 0, wid, x, y, w, h, screen;
	size_t rawlen = 0, hexlen, tl;

	sp = memchr(s, ' ', len);
	if (!sp || sp == s || sp - s > 12)
		return 0;
	for (p = s; p < sp; p++) {
		if (*p < '0' || *p > '9')
			return 0;
		id = id * 10 + (*p - '0');
	}
	if (id <= 0 || id > 0xffffffffLL)
		return 0;
	p = sp + 1;
	hexlen = len - (size_t)(p - s);
	if (hexlen % 2 != 0)
		return 0;
	for (size_t i = 0; i < hexlen; i += 2) {
		int hi = hexval(p[i]), lo = hexval(p[i + 1]);
		if (hi < 0 || lo < 0)
			return 0;
		if (rawlen == sizeof(raw))
			break; /* a longer title is cut below */
		raw[rawlen++] = (unsigned char)(hi << 4 | lo);
	}
	p = (const char *)raw;
	end = p + rawlen;
	if (shell_var(&p, end, "WINDOW", 0, 0xffffffffLL, &wid) < 0 || wid != id ||
	    shell_var(&p, end, "X", -100000, 100000, &x) < 0 ||
	    shell_var(&p, end, "Y", -100000, 100000, &y) < 0 ||
	    shell_var(&p, end, "WIDTH", 0, 100000, &w) < 0 ||
	    shell_var(&p, end, "HEIGHT", 0, 100000, &h) < 0 ||
	    shell_var(&p, end, "SCREEN", 0, 1000, &screen) < 0)
		return 0;
	/* Nothing of it on the screen: a window manager's helper parked at
	 * -1000,-1000, an empty one. */
	if (w == 0 || h == 0 || x + w <= 0 || y + h <= 0)
		return 0;
	/* The title: the rest, without getwindowname's newline. */
	tl = (size_t)(end - p);
	if (tl > 0 && p[tl - 1] == '\n')
		tl--;
	if (tl > DESKTOP_TITLE_MAX)
		tl = DESKTOP_TITLE_MAX;
	text_sanitize(p, tl, title, sizeof(title));
	if (pd_buf_printf(b, "0x%llx %lldx%lld%+lld%+lld %s\n", id, w, h, x, y, title) == -ENOMEM)
		return -ENOMEM;
	return 1;
}

int eng_desktop_windows_format(const char *out, size_t len, char **ret_text, pd_error *err)
{
	_cleanup_pd_buf_ struct pd_buf b = {0};
	size_t off = 0;
	unsigned count = 0;
	char *text;

	while (off < len && count < DESKTOP_WINDOWS_MAX) {
		const char *nl = memchr(out + off, '\n', len - off);
		size_t end = nl ? (size_t)(nl - out) : len;
		int r = format_window(out + off, end - off, &b);

		if (r < 0)
			return pd_error_set(err, r, "out of memory");
		count += (unsigned)r;
		off = end + 1;
	}
	text = pd_buf_take(&b, NULL);
	if (!text)
		return pd_error_set(err, -ENOMEM, "out of memory");
	*ret_text = text;
	return 0;
}

int eng_desktop_cursor_format(const char *out, size_t len, char **ret_text, pd_error *err)
{
	const char *p = out, *end = out + len;
	long long x, y;
	char *text;

	if (len > 4096)
		return pd_error_set(err, -EIO, "xdotool getmouselocation said too much");
	if (shell_var(&p, end, "X", 0, 65535, &x) < 0 || shell_var(&p, end, "Y", 0, 65535, &y) < 0)
		return pd_error_set(err, -EIO,
				    "xdotool getmouselocation did not say where the pointer is");
	if (asprintf(&text, "%lld %lld\n", x, y) < 0)
		return pd_error_set(err, -ENOMEM, "out of memory");
	*ret_text = text;
	return 0;
}
