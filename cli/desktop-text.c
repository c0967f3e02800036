/* desktop-text.c - the desktop commands' text, without a server: the
 * subcommand words, desktop/input bodies, geometries, desktop/windows
 * lines, screenshot names and PNG headers (see cli.h). */
#include <string.h>

#include "cli/cli.h"
#include "common/buf.h"

static const struct {
	const char *word;
	cli_desktop_sub sub;
} desktop_words[] = {
    {"on", CLI_DESKTOP_ON},	    {"off", CLI_DESKTOP_OFF},
    {"url", CLI_DESKTOP_URL},	    {"windows", CLI_DESKTOP_WINDOWS},
    {"cursor", CLI_DESKTOP_CURSOR}, {"geometry", CLI_DESKTOP_GEOMETRY},
};

cli_desktop_sub cli_desktop_sub_of(const char *word)
{
	for (size_t i = 0; i < ELEMENTSOF(desktop_words); i++)
		if (strcmp(desktop_words[i].word, word) == 0)
			return desktop_words[i].sub;
	return CLI_DESKTOP_INPUT;
}

int cli_desktop_input_body(const char *const *words, size_t n, char **ret, size_t *ret_len,
			   pd_error *err)
{
	_cleanup_(pd_buf_freep) struct pd_buf body = {0};
	size_t in_action = 0, action = 1;

	for (size_t i = 0; i <= n; i++) {
		if (i == n || strcmp(words[i], ",") == 0) {
			if (in_action == 0)
				return pd_error_set(err, -EINVAL,
						    "action %zu is empty (actions are separated by "
						    "a lone ',')",
						    action);
			if (pd_buf_append(&body, "\n", 1) < 0)
				return pd_error_set(err, -ENOMEM, "out of memory");
			in_action = 0;
			action++;
			continue;
		}
		if (strpbrk(words[i], "\r\n"))
			return pd_error_set(err, -EINVAL,
					    "action %zu holds a line break (an action is one line; "
					    "for Enter use 'key Return')",
					    action);
		if ((in_action++ > 0 && pd_buf_append(&body, " ", 1) < 0) ||
		    pd_buf_append(&body, words[i], strlen(words[i])) < 0)
			return pd_error_set(err, -ENOMEM, "out of memory");
	}
	*ret = pd_buf_take(&body, ret_len);
	return *ret ? 0 : pd_error_set(err, -ENOMEM, "out of memory");
}

/* Digits to an unsigned number (at most 5 digits: screens and offsets
 * stay far below); *p is moved past them. */
static int number(const char **p, unsigned *ret)
{
	unsigned v = 0;
	size_t k = 0;

	for (; (*p)[k] >= '0' && (*p)[k] <= '9'; k++) {
		if (k == 5)
			return -EINVAL;
		v = v * 10 + (unsigned)((*p)[k] - '0');
	}
	if (k == 0)
		return -EINVAL;
	*p += k;
	*ret = v;
	return 0;
}

/* An X offset: "+N", "-N" or "+-N". */
static int offset(const char **p, int *ret)
{
	bool neg = false;
	unsigned v;

	if (**p == '-')
		neg = true;
	else if (**p != '+')
		return -EINVAL;
	(*p)++;
	if (!neg && **p == '-') {
		neg = true;
		(*p)++;
	}
	if (number(p, &v) < 0)
		return -EINVAL;
	*ret = neg ? -(int)v : (int)v;
	return 0;
}

int cli_parse_geometry(const char *s, unsigned *ret_w, unsigned *ret_h, int *ret_x, int *ret_y,
		       bool *ret_has_pos)
{
	unsigned w, h;
	int x = 0, y = 0;
	bool pos = false;

	if (number(&s, &w) < 0 || *s++ != 'x' || number(&s, &h) < 0 || w == 0 || h == 0)
		return -EINVAL;
	if (*s != '\0') {
		if (offset(&s, &x) < 0 || offset(&s, &y) < 0 || *s != '\0')
			return -EINVAL;
		pos = true;
	}
	if (ret_w)
		*ret_w = w;
	if (ret_h)
		*ret_h = h;
	if (ret_x)
		*ret_x = x;
	if (ret_y)
		*ret_y = y;
	if (ret_has_pos)
		*ret_has_pos = pos;
	return 0;
}

static bool is_geometry(const char *s)
{
	return cli_parse_geometry(s, NULL, NULL, NULL, NULL, NULL) == 0;
}

static char *trim(char *s)
{
	size_t n;

	s += strspn(s, " \t");
	n = strlen(s);
	while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		s[--n] = '\0';
	return s;
}

int cli_parse_window_line(char *line, const char **ret_id, const char **ret_title,
			  const char **ret_geometry)
{
	char *id, *rest, *geometry = NULL;

	line[strcspn(line, "\r\n")] = '\0';
	if (strchr(line, '\t')) {
		/* ID<TAB>A<TAB>B: the geometry is A or B, the title the other */
		char *a = strchr(line, '\t'), *b;
		*a++ = '\0';
		id = trim(line);
		b = strchr(a, '\t');
		if (b)
			*b++ = '\0';
		if (b && is_geometry(trim(b))) {
			geometry = trim(b);
			rest = a;
		} else if (is_geometry(trim(a))) {
			geometry = trim(a);
			rest = b ? b : a + strlen(a);
		} else {
			rest = a;
			if (b)
				b[-1] = '\t'; /* no geometry: the title keeps its tab */
		}
	} else {
		id = line + strspn(line, " ");
		rest = id + strcspn(id, " ");
		if (*rest)
			*rest++ = '\0';
		rest = trim(rest);
		char *last = strrchr(rest, ' ');
		size_t first = strcspn(rest, " ");
		if (is_geometry(last ? last + 1 : rest)) {
			geometry = last ? last + 1 : rest;
			if (last)
				*last = '\0';
			else
				rest += strlen(rest);
		} else if (rest[first] == ' ') {
			rest[first] = '\0';
			if (is_geometry(rest)) {
				geometry = rest;
				rest += first + 1;
			} else {
				rest[first] = ' ';
			}
		}
	}
	if (*id == '\0')
		return -EINVAL;
	*ret_id = id;
	*ret_title = trim(rest);
	*ret_geometry = geometry;
	return 0;
}

char *cli_screenshot_name(const char *box, time_t t)
{
	struct tm tm;
	char stamp[32];
	char *name;

	if (!localtime_r(&t, &tm) || strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm) == 0)
		return NULL;
	if (asprintf(&name, "%s-%s.png", box, stamp) < 0)
		return NULL;
	return name;
}

static unsigned be32(const unsigned char *p)
{
	return (unsigned)p[0] << 24 | (unsigned)p[1] << 16 | (unsigned)p[2] << 8 | p[3];
}

int cli_png_header(const unsigned char *head, size_t n, unsigned *ret_w, unsigned *ret_h)
{
	static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};

	/* signature, then the IHDR chunk: length 13, "IHDR", width, height */
	if (n < 24 || memcmp(head, sig, 8) != 0 || be32(head + 8) != 13 ||
	    memcmp(head + 12, "IHDR", 4) != 0)
		return -EINVAL;
	unsigned w = be32(head + 16), h = be32(head + 20);
	if (w == 0 || h == 0 || w > 0x7fffffffu || h > 0x7fffffffu)
		return -EINVAL;
	if (ret_w)
		*ret_w = w;
	if (ret_h)
		*ret_h = h;
	return 0;
}
