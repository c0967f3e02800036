/* parse.c - strict parsers and formatters for user-written values. */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/parse.h"

#define TTL_MAX_SECONDS (10LL * 365 * 24 * 3600) /* ten years */
#define CPUS_MAX 1024

static bool is_lower_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

bool name_valid(const char *s)
{
	size_t i;

	if (!s || !is_lower_alnum(s[0]))
		return false;
	for (i = 1; s[i]; i++) {
		if (i >= NAME_MAX_LEN)
			return false;
		if (!is_lower_alnum(s[i]) && s[i] != '.' && s[i] != '_' && s[i] != '-')
			return false;
	}
	return true;
}

int value_from_write(const char *buf, size_t len, size_t max, char *out, size_t outsz)
{
	if ((!buf && len > 0) || !out || outsz <= max)
		return -EINVAL;

	if (len > 0 && buf[len - 1] == '\n') {
		len--;
		if (len > 0 && buf[len - 1] == '\r')
			len--;
	}
	if (len == 0 || len > max)
		return -EINVAL;
	if (memchr(buf, '\0', len) || memchr(buf, '\n', len))
		return -EINVAL;

	memcpy(out, buf, len);
	out[len] = '\0';
	return 0;
}

/* Consumes a run of decimal digits at *p. Returns 0, -EINVAL when there is
 * none, or -ERANGE on overflow (the digits are consumed either way, so the
 * caller can still tell garbage after them from a mere overflow). */
static int scan_digits(const char **p, uint64_t *ret)
{
	const char *s = *p;
	uint64_t v = 0;
	bool overflow = false;

	if (!is_digit(*s))
		return -EINVAL;
	for (; is_digit(*s); s++) {
		unsigned d = (unsigned)(*s - '0');
		if (v > (UINT64_MAX - d) / 10)
			overflow = true;
		else
			v = v * 10 + d;
	}
	*p = s;
	if (overflow)
		return -ERANGE;
	*ret = v;
	return 0;
}

int parse_uint64(const char *s, uint64_t max, uint64_t *ret)
{
	uint64_t v = 0;
	int r;

	if (!s)
		return -EINVAL;
	r = scan_digits(&s, &v);
	if (r == -EINVAL || *s != '\0')
		return -EINVAL;
	if (r < 0 || v > max)
		return -ERANGE;
	*ret = v;
	return 0;
}

int parse_size(const char *s, uint64_t *ret)
{
	unsigned shift = 0;
	uint64_t v = 0;
	int r;

	if (!s)
		return -EINVAL;
	r = scan_digits(&s, &v);
	if (r == -EINVAL)
		return -EINVAL;

	switch (*s) {
	case 'K':
	case 'k':
		shift = 10;
		break;
	case 'M':
	case 'm':
		shift = 20;
		break;
	case 'G':
	case 'g':
		shift = 30;
		break;
	case 'T':
	case 't':
		shift = 40;
		break;
	}
	if (shift > 0) {
		s++;
		if (strcmp(s, "iB") == 0)
			s += 2;
	}
	if (strcmp(s, "B") == 0)
		s++;
	if (*s != '\0')
		return -EINVAL;

	if (r < 0 || v > (UINT64_MAX >> shift))
		return -ERANGE;
	*ret = v << shift;
	return 0;
}

void format_size(uint64_t v, char *buf, size_t bufsz)
{
	static const char units[] = "KMGT";
	int i;

	if (bufsz == 0)
		return;
	for (i = 3; i >= 0 && v != 0; i--) {
		unsigned shift = 10 * (unsigned)(i + 1);
		if ((v & ((UINT64_C(1) << shift) - 1)) == 0) {
			snprintf(buf, bufsz, "%" PRIu64 "%c", v >> shift, units[i]);
			return;
		}
	}
	snprintf(buf, bufsz, "%" PRIu64, v);
}

int parse_cpus(const char *s, unsigned *ret_millicpus)
{
	uint64_t whole = 0, frac = 0;
	unsigned ndec = 0;
	int r;

	if (!s)
		return -EINVAL;
	r = scan_digits(&s, &whole);
	if (r == -EINVAL)
		return -EINVAL;
	if (*s == '.') {
		s++;
		for (; is_digit(*s); s++, ndec++)
			if (ndec < 3)
				frac = frac * 10 + (uint64_t)(*s - '0');
		if (ndec == 0 || ndec > 3)
			return -EINVAL;
	}
	if (*s != '\0')
		return -EINVAL;

	if (r < 0 || whole > CPUS_MAX)
		return -ERANGE;
	for (; ndec < 3; ndec++)
		frac *= 10;
	uint64_t m = whole * 1000 + frac;
	if (m == 0 || m > (uint64_t)CPUS_MAX * 1000)
		return -ERANGE;
	*ret_millicpus = (unsigned)m;
	return 0;
}

void format_cpus(unsigned millicpus, char *buf, size_t bufsz)
{
	unsigned whole = millicpus / 1000, frac = millicpus % 1000;
	char digits[4];
	int n;

	if (bufsz == 0)
		return;
	if (frac == 0) {
		snprintf(buf, bufsz, "%u", whole);
		return;
	}
	snprintf(digits, sizeof(digits), "%03u", frac);
	for (n = 3; digits[n - 1] == '0'; n--)
		;
	snprintf(buf, bufsz, "%u.%.*s", whole, n, digits);
}

int parse_ttl(const char *s, int64_t *ret)
{
	uint64_t v = 0, mult = 1;
	int r;

	if (!s)
		return -EINVAL;
	if (strcmp(s, "none") == 0) {
		*ret = -1;
		return 0;
	}
	r = scan_digits(&s, &v);
	if (r == -EINVAL)
		return -EINVAL;
	switch (*s) {
	case '\0':
		break;
	case 's':
		s++;
		break;
	case 'm':
		mult = 60;
		s++;
		break;
	case 'h':
		mult = 3600;
		s++;
		break;
	case 'd':
		mult = 86400;
		s++;
		break;
	default:
		return -EINVAL;
	}
	if (*s != '\0')
		return -EINVAL;

	if (r < 0 || v > (uint64_t)TTL_MAX_SECONDS / mult)
		return -ERANGE;
	*ret = (int64_t)(v * mult);
	return 0;
}

void format_rfc3339(time_t t, char *buf, size_t bufsz)
{
	struct tm tm;

	if (bufsz == 0)
		return;
	if (!gmtime_r(&t, &tm) || strftime(buf, bufsz, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		buf[0] = '\0';
}

void format_rfc3339_ms_now(char *buf, size_t bufsz)
{
	struct timespec ts;
	struct tm tm;
	char s[32];

	if (bufsz == 0)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	if (!gmtime_r(&ts.tv_sec, &tm) || strftime(s, sizeof s, "%Y-%m-%dT%H:%M:%S", &tm) == 0) {
		buf[0] = '\0';
		return;
	}
	snprintf(buf, bufsz, "%s.%03ldZ", s, ts.tv_nsec / 1000000);
}

size_t utf8_char(const unsigned char *s, size_t n, uint32_t *cp)
{
	unsigned c = s[0];
	size_t len;
	uint32_t v;

	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf)
		len = 2, v = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3, v = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4, v = c & 0x07;
	else
		return 0;
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		v = (v << 6) | (s[i] & 0x3f);
	}
	if ((len == 3 && (v < 0x800 || (v >= 0xd800 && v <= 0xdfff))) ||
	    (len == 4 && (v < 0x10000 || v > 0x10ffff)))
		return 0;
	*cp = v;
	return len;
}

bool utf8_valid(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	uint32_t cp;

	while (len) {
		size_t n = utf8_char(p, len, &cp);
		if (n == 0)
			return false;
		p += n;
		len -= n;
	}
	return true;
}

static size_t text_escape(const char *in, size_t len, char *out, size_t outsz, bool backslash)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)in;
	size_t o = 0;

	while (len) {
		uint32_t cp = 0;
		size_t n = utf8_char(p, len, &cp);
		bool escape =
		    n == 0 || cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || (backslash && cp == '\\');
		size_t k = n ? n : 1;
		size_t need = escape ? 4 * k : k;

		if (o + need >= outsz)
			break;
		for (size_t i = 0; i < k; i++) {
			if (escape) {
				out[o++] = '\\';
				out[o++] = 'x';
				out[o++] = hex[p[i] >> 4];
				out[o++] = hex[p[i] & 15];
			} else
				out[o++] = (char)p[i];
		}
		p += k;
		len -= k;
	}
	out[o] = '\0';
	return o;
}

size_t text_sanitize(const char *in, size_t len, char *out, size_t outsz)
{
	return text_escape(in, len, out, outsz, /* backslash= */ true);
}

size_t text_printable(const char *in, size_t len, char *out, size_t outsz)
{
	return text_escape(in, len, out, outsz, /* backslash= */ false);
}

bool text_list_add(char *buf, size_t bufsz, size_t *len, const char *name)
{
	static const char more[] = ", ...";
	const char *sep = *len ? ", " : "";

	assert(bufsz >= TEXT_LIST_MIN && *len + sizeof more <= bufsz);
	/* After each name there stays room for ", ..." and the NUL. */
	if (*len + strlen(sep) + strlen(name) + sizeof more > bufsz) {
		*len += (size_t)snprintf(buf + *len, bufsz - *len, "%s", *len ? more : more + 2);
		return false;
	}
	*len += (size_t)snprintf(buf + *len, bufsz - *len, "%s%s", sep, name);
	return true;
}
