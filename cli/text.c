/* text.c - the CLI's text helpers: shell quoting, JSON string writing, the
 * error body's "error" string, random names, listing lines (see cli.h). */
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"

static bool shell_safe(unsigned char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	       strchr("_@%+=:,./-", ch) != NULL;
}

char *cli_shell_quote(const char *word)
{
	size_t n = 0, quotes = 0;
	bool bare = word[0] != '\0';

	for (const char *p = word; *p; p++, n++) {
		if (*p == '\'')
			quotes++;
		if (!shell_safe((unsigned char)*p))
			bare = false;
	}
	if (bare)
		return strdup(word);

	/* '…' plus three extra bytes per quote ('\'') */
	char *out = malloc(n + 3 * quotes + 3);
	if (!out)
		return NULL;
	char *o = out;
	*o++ = '\'';
	for (const char *p = word; *p; p++) {
		if (*p == '\'') {
			memcpy(o, "'\\''", 4);
			o += 4;
		} else {
			*o++ = *p;
		}
	}
	*o++ = '\'';
	*o = '\0';
	return out;
}

char *cli_shell_join(const char *const *words, size_t n)
{
	if (n == 0)
		return NULL;
	if (n == 1)
		return strdup(words[0]);

	char *out = NULL;
	size_t len = 0;
	for (size_t i = 0; i < n; i++) {
		_cleanup_free_ char *q = cli_shell_quote(words[i]);
		if (!q) {
			free(out);
			return NULL;
		}
		size_t ql = strlen(q);
		char *grown = realloc(out, len + ql + 2);
		if (!grown) {
			free(out);
			return NULL;
		}
		out = grown;
		if (i > 0)
			out[len++] = ' ';
		memcpy(out + len, q, ql + 1);
		len += ql;
	}
	return out;
}

static int append(char **buf, size_t *len, const char *s, size_t n)
{
	char *grown = realloc(*buf, *len + n + 1);
	if (!grown)
		return -ENOMEM;
	memcpy(grown + *len, s, n);
	*len += n;
	grown[*len] = '\0';
	*buf = grown;
	return 0;
}

int cli_json_string(char **buf, size_t *len, const char *s)
{
	int r = append(buf, len, "\"", 1);

	for (const unsigned char *p = (const unsigned char *)s; r == 0 && *p; p++) {
		char esc[8];
		switch (*p) {
		case '"':
			r = append(buf, len, "\\\"", 2);
			break;
		case '\\':
			r = append(buf, len, "\\\\", 2);
			break;
		case '\n':
			r = append(buf, len, "\\n", 2);
			break;
		case '\r':
			r = append(buf, len, "\\r", 2);
			break;
		case '\t':
			r = append(buf, len, "\\t", 2);
			break;
		default:
			if (*p < 0x20 || *p == 0x7f) {
				snprintf(esc, sizeof(esc), "\\u%04x", *p);
				r = append(buf, len, esc, 6);
			} else {
				r = append(buf, len, (const char *)p, 1);
			}
		}
	}
	return r < 0 ? r : append(buf, len, "\"", 1);
}

/* The scanner for the error body and the answers of control writes. It
 * walks one flat JSON object; any nesting or syntax it does not expect
 * makes it give up (NULL), and the caller falls back to the raw body. */
struct scan {
	const char *p, *end;
};

static void skip_ws(struct scan *s)
{
	while (s->p < s->end && strchr(" \t\r\n", *s->p) && *s->p)
		s->p++;
}

static int hex4(struct scan *s, unsigned *ret)
{
	unsigned v = 0;

	if (s->end - s->p < 4)
		return -EINVAL;
	for (int i = 0; i < 4; i++) {
		char ch = *s->p++;
		v <<= 4;
		if (ch >= '0' && ch <= '9')
			v |= (unsigned)(ch - '0');
		else if (ch >= 'a' && ch <= 'f')
			v |= (unsigned)(ch - 'a' + 10);
		else if (ch >= 'A' && ch <= 'F')
			v |= (unsigned)(ch - 'A' + 10);
		else
			return -EINVAL;
	}
	*ret = v;
	return 0;
}

static int put_utf8(char **buf, size_t *len, unsigned cp)
{
	char u[4];
	size_t n;

	if (cp < 0x80) {
		u[0] = (char)cp;
		n = 1;
	} else if (cp < 0x800) {
		u[0] = (char)(0xc0 | (cp >> 6));
		u[1] = (char)(0x80 | (cp & 0x3f));
		n = 2;
	} else if (cp < 0x10000) {
		u[0] = (char)(0xe0 | (cp >> 12));
		u[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		u[2] = (char)(0x80 | (cp & 0x3f));
		n = 3;
	} else {
		u[0] = (char)(0xf0 | (cp >> 18));
		u[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
		u[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
		u[3] = (char)(0x80 | (cp & 0x3f));
		n = 4;
	}
	return append(buf, len, u, n);
}

/* A JSON string at s->p (which must be '"'); its unescaped value goes to
 * *ret when ret is not NULL. */
static int scan_string(struct scan *s, char **ret)
{
	_cleanup_free_ char *out = NULL;
	size_t len = 0;
	int r = 0;

	if (s->p >= s->end || *s->p != '"')
		return -EINVAL;
	s->p++;
	r = append(&out, &len, "", 0);
	while (r == 0) {
		if (s->p >= s->end)
			return -EINVAL;
		unsigned char ch = (unsigned char)*s->p++;
		if (ch == '"')
			break;
		if (ch < 0x20)
			return -EINVAL;
		if (ch != '\\') {
			r = append(&out, &len, (const char *)&ch, 1);
			continue;
		}
		if (s->p >= s->end)
			return -EINVAL;
		char e = *s->p++;
		const char *simple = NULL;
		switch (e) {
		case '"':
			simple = "\"";
			break;
		case '\\':
			simple = "\\";
			break;
		case '/':
			simple = "/";
			break;
		case 'b':
			simple = "\b";
			break;
		case 'f':
			simple = "\f";
			break;
		case 'n':
			simple = "\n";
			break;
		case 'r':
			simple = "\r";
			break;
		case 't':
			simple = "\t";
			break;
		case 'u': {
			unsigned cp, lo;
			if (hex4(s, &cp) < 0 || cp == 0)
				return -EINVAL;
			if (cp >= 0xdc00 && cp <= 0xdfff)
				return -EINVAL;
			if (cp >= 0xd800 && cp <= 0xdbff) {
				if (s->end - s->p < 6 || s->p[0] != '\\' || s->p[1] != 'u')
					return -EINVAL;
				s->p += 2;
				if (hex4(s, &lo) < 0 || lo < 0xdc00 || lo > 0xdfff)
					return -EINVAL;
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
			}
			r = put_utf8(&out, &len, cp);
			continue;
		}
		default:
			return -EINVAL;
		}
		r = append(&out, &len, simple, 1);
	}
	if (r < 0)
		return r;
	if (ret)
		*ret = TAKE_PTR(out);
	return 0;
}

/* A scalar that is not a string: number, true, false, null. */
static int scan_scalar(struct scan *s)
{
	const char *start = s->p;

	while (s->p < s->end &&
	       (strchr("+-.0123456789eE", *s->p) || (*s->p >= 'a' && *s->p <= 'z')) && *s->p)
		s->p++;
	if (s->p == start)
		return -EINVAL;
	size_t n = (size_t)(s->p - start);
	if (start[0] >= 'a' && start[0] <= 'z' &&
	    !((n == 4 && memcmp(start, "true", 4) == 0) ||
	      (n == 5 && memcmp(start, "false", 5) == 0) ||
	      (n == 4 && memcmp(start, "null", 4) == 0)))
		return -EINVAL;
	return 0;
}

char *cli_error_from_body(const char *body, size_t len)
{
	return cli_json_flat_get(body, len, "error");
}

char *cli_json_flat_get(const char *body, size_t len, const char *want)
{
	struct scan s = {.p = body, .end = body + len};
	_cleanup_free_ char *found = NULL;

	if (!body)
		return NULL;
	skip_ws(&s);
	if (s.p >= s.end || *s.p++ != '{')
		return NULL;
	for (;;) {
		_cleanup_free_ char *key = NULL;

		skip_ws(&s);
		if (scan_string(&s, &key) < 0)
			return NULL;
		skip_ws(&s);
		if (s.p >= s.end || *s.p++ != ':')
			return NULL;
		skip_ws(&s);
		if (s.p < s.end && *s.p == '"') {
			char *v = NULL;
			if (scan_string(&s, &v) < 0)
				return NULL;
			if (strcmp(key, want) == 0 && !found)
				found = v;
			else
				free(v);
		} else if (scan_scalar(&s) < 0) {
			return NULL;
		}
		skip_ws(&s);
		if (s.p >= s.end)
			return NULL;
		if (*s.p == ',') {
			s.p++;
			continue;
		}
		if (*s.p++ != '}')
			return NULL;
		break;
	}
	skip_ws(&s);
	if (s.p != s.end)
		return NULL;
	return TAKE_PTR(found);
}

/* Randomness for names only (not secrets): /dev/urandom, or the clock and
 * pid when it cannot be read. */
static void random_bytes(unsigned char *buf, size_t n)
{
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	ssize_t got = fd >= 0 ? read(fd, buf, n) : -1;

	if (fd >= 0)
		close(fd);
	if (got == (ssize_t)n)
		return;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	uint64_t x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^ (uint64_t)getpid();
	for (size_t i = 0; i < n; i++) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		buf[i] = (unsigned char)(x >> 33);
	}
}

char *cli_random_name(const char *prefix)
{
	static const char alphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
	unsigned char rnd[6];
	size_t pl = strlen(prefix);
	char *out = malloc(pl + sizeof(rnd) + 1);

	if (!out)
		return NULL;
	random_bytes(rnd, sizeof(rnd));
	memcpy(out, prefix, pl);
	for (size_t i = 0; i < sizeof(rnd); i++)
		out[pl + i] = alphabet[rnd[i] % (sizeof(alphabet) - 1)];
	out[pl + sizeof(rnd)] = '\0';
	return out;
}

int cli_parse_listing_line(const char *line, char *ret_type, const char **ret_name)
{
	const char *p = line;

	if (!strchr("dfl", p[0]) || p[0] == '\0' || p[1] != ' ')
		return -EINVAL;
	p += 2;
	/* MODE and SIZE: digits each, one space after */
	for (int field = 0; field < 2; field++) {
		const char *start = p;
		while (*p >= '0' && *p <= '9')
			p++;
		if (p == start || *p != ' ')
			return -EINVAL;
		p++;
	}
	if (*p == '\0')
		return -EINVAL;
	*ret_type = line[0];
	*ret_name = p;
	return 0;
}

bool cli_name_valid(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 63)
		return false;
	if (!((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= '0' && s[0] <= '9')))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') ||
		      strchr("._-", s[i])))
			return false;
	return true;
}
