/* ports.c - `paddock ports BOX [PORT [public]... | none]`: the operands
 * as the text of the box's ports file (ports.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli/ports.h"

int cli_ports_body(const char *const *words, size_t n, char **ret, pd_error *err)
{
	size_t cap = 2, len = 0;
	char *s;

	if (n == 1 && strcmp(words[0], "none") == 0) {
		s = strdup("\n");
		if (!s)
			return pd_error_set(err, -ENOMEM, "out of memory");
		*ret = s;
		return 0;
	}
	for (size_t i = 0; i < n; i++)
		cap += strlen(words[i]) + 8;
	s = malloc(cap);
	if (!s)
		return pd_error_set(err, -ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		const char *w = words[i];
		size_t wl = strlen(w);
		if (strcmp(w, "public") == 0 && i > 0 && strcmp(words[i - 1], "public") != 0) {
			/* The line of the port before it. */
			s[len - 1] = ' ';
			memcpy(s + len, "public\n", 7);
			len += 7;
			continue;
		}
		if (wl == 0 || wl > 5 || strspn(w, "0123456789") != wl) {
			free(s);
			return pd_error_set(err, -EINVAL,
					    "ports takes PORT [public]... or none, not '%s'", w);
		}
		memcpy(s + len, w, wl);
		len += wl;
		s[len++] = '\n';
	}
	s[len] = '\0';
	*ret = s;
	return 0;
}
