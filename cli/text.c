/* text.c - the CLI's text helpers: shell quoting, random names, listing
 * lines, names (see cli.h). */
#include <string.h>

#include "cli/cli.h"
#include "cli/platform.h"

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

char *cli_random_name(const char *prefix)
{
	static const char alphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
	unsigned char rnd[6];
	size_t pl = strlen(prefix);
	char *out = malloc(pl + sizeof(rnd) + 1);

	if (!out)
		return NULL;
	cli_platform_random(rnd, sizeof(rnd));
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
