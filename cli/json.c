/* json.c - the CLI's JSON on jansson (see json.h and cli.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/json.h"

/* The length of the valid UTF-8 sequence at p, or 0 when it is not one. */
static size_t utf8_len(const unsigned char *p)
{
	unsigned cp;
	size_t n;

	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		n = 2, cp = p[0] & 0x1f;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		n = 3, cp = p[0] & 0x0f;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		n = 4, cp = p[0] & 0x07;
	else
		return 0;
	/* A NUL ends the loop below too: it is no continuation byte. */
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (p[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

bool cli_utf8_valid(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p;) {
		size_t n = utf8_len(p);
		if (n == 0)
			return false;
		p += n;
	}
	return true;
}

json_t *cli_json_str(const char *s)
{
	if (cli_utf8_valid(s))
		return json_string(s);

	/* Each bad byte becomes the 3 bytes of U+FFFD. */
	size_t len = strlen(s);
	_cleanup_free_ char *fixed = malloc(len * 3 + 1);
	char *o = fixed;
	if (!fixed)
		return NULL;
	for (const unsigned char *p = (const unsigned char *)s; *p;) {
		size_t n = utf8_len(p);
		if (n == 0) {
			memcpy(o, "\xef\xbf\xbd", 3);
			o += 3;
			p++;
		} else {
			memcpy(o, p, n);
			o += n;
			p += n;
		}
	}
	*o = '\0';
	return json_string(fixed);
}

int cli_json_set(json_t *o, const char *key, const char *value)
{
	json_t *v = value ? cli_json_str(value) : json_null();

	return v && json_object_set_new(o, key, v) == 0 ? 0 : -ENOMEM;
}

int cli_json_print(FILE *f, json_t *v)
{
	int r = v && json_dumpf(v, f, JSON_COMPACT) == 0 && fputc('\n', f) != EOF ? 0 : -ENOMEM;

	json_decref(v);
	return r;
}

int cli_json_print_value(bool json, const char *key, const char *value)
{
	if (!json) {
		printf("%s\n", value);
		return 0;
	}
	return cli_json_print(stdout, json_pack("{s:o}", key, cli_json_str(value)));
}

char *cli_json_get_string(const char *body, size_t len, const char *key)
{
	/* No JSON_ALLOW_NUL: a string with a NUL inside could not be shown
	 * whole, so such a body is not of the expected shape. */
	json_t *o = body ? json_loadb(body, len, JSON_REJECT_DUPLICATES, NULL) : NULL;
	json_t *v = json_object_get(o, key);
	char *s = json_is_string(v) ? strdup(json_string_value(v)) : NULL;

	json_decref(o);
	return s;
}

char *cli_error_from_body(const char *body, size_t len)
{
	return cli_json_get_string(body, len, "error");
}
