/* policy.c - parse and format a box's network egress policy. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/policy.h"
#include "common/parse.h"
#include "common/util.h"

static const char *const mode_names[] = {
    [POLICY_ALLOW_ALL] = "allow-all",
    [POLICY_DENY_ALL] = "deny-all",
    [POLICY_ALLOWLIST] = "allowlist",
};

void policy_release(struct policy *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n_entries; i++)
		free(p->entries[i].domain);
	free(p->entries);
	*p = (struct policy){0};
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

/* The next item of text from *pos: a line with its surrounding blanks
 * cut, skipping blank and '#' lines. Returns false at the end; else
 * [*ret_a, *ret_b) is the item and *lineno its line. */
static bool next_item(const char *text, size_t len, size_t *pos, int *lineno, size_t *ret_a,
		      size_t *ret_b)
{
	while (*pos < len) {
		const char *nl = memchr(text + *pos, '\n', len - *pos);
		size_t end = nl ? (size_t)(nl - text) : len, a = *pos, b = end;

		(*lineno)++;
		*pos = end + 1;
		while (a < b && is_blank(text[a]))
			a++;
		while (b > a && is_blank(text[b - 1]))
			b--;
		if (a == b || text[a] == '#')
			continue;
		*ret_a = a;
		*ret_b = b;
		return true;
	}
	return false;
}

/* A host name: dot-separated labels of [a-z0-9_-] (1-63, no '-' at either
 * end), at least two labels, at most POLICY_DOMAIN_MAX in all. Lowercases
 * s in place. */
static bool domain_ok(char *s)
{
	size_t n = strlen(s), label = 0, labels = 1;

	if (n == 0 || n > POLICY_DOMAIN_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (c >= 'A' && c <= 'Z')
			s[i] = c = (char)(c - 'A' + 'a');
		if (c == '.') {
			if (label == 0 || s[i - 1] == '-')
				return false;
			label = 0;
			labels++;
			continue;
		}
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_'))
			return false;
		if (c == '-' && label == 0)
			return false;
		if (++label > 63)
			return false;
	}
	return label > 0 && s[n - 1] != '-' && labels >= 2;
}

/* Only digits, dots and at most one slash: meant as an IPv4 entry. */
static bool looks_ipv4(const char *s)
{
	bool digit = false;

	for (; *s; s++) {
		if (*s >= '0' && *s <= '9')
			digit = true;
		else if (*s != '.' && *s != '/')
			return false;
	}
	return digit;
}

static int parse_cidr(const char *s, struct policy_entry *e, const char **ret_why)
{
	char addr[INET_ADDRSTRLEN];
	const char *slash = strchr(s, '/');
	size_t alen = slash ? (size_t)(slash - s) : strlen(s);
	struct in_addr in;
	unsigned prefix = 32;

	if (alen >= sizeof(addr)) {
		*ret_why = "not an IPv4 address";
		return -EINVAL;
	}
	memcpy(addr, s, alen);
	addr[alen] = '\0';
	if (inet_pton(AF_INET, addr, &in) != 1) {
		*ret_why = "not an IPv4 address";
		return -EINVAL;
	}
	if (slash) {
		const char *p = slash + 1;
		char *end;
		unsigned long v;

		if (*p < '0' || *p > '9' || strlen(p) > 2) {
			*ret_why = "bad prefix length (0-32)";
			return -EINVAL;
		}
		v = strtoul(p, &end, 10);
		if (*end || v > 32) {
			*ret_why = "bad prefix length (0-32)";
			return -EINVAL;
		}
		prefix = (unsigned)v;
	}
	e->kind = POLICY_CIDR;
	e->addr = ntohl(in.s_addr);
	e->prefix = prefix;
	if (e->addr & ~(prefix ? ~0u << (32 - prefix) : 0u)) {
		*ret_why = "host bits set in the network (write the network address)";
		return -EINVAL;
	}
	return 0;
}

/* An agent id after "@": [a-z0-9][a-z0-9._-]{0,62} (name_valid()). */
static int parse_preset(const char *s, struct policy_entry *e, const char **ret_why)
{
	if (!name_valid(s)) {
		*ret_why = "an agent preset is @ and an agent id ([a-z0-9][a-z0-9._-]{0,62})";
		return -EINVAL;
	}
	e->kind = POLICY_PRESET;
	e->domain = strdup(s);
	return e->domain ? 0 : -ENOMEM;
}

/* One allowlist entry (s trimmed, NUL-terminated, writable). */
static int parse_entry(char *s, struct policy_entry *e, const char **ret_why)
{
	if (s[0] == '@')
		return parse_preset(s + 1, e, ret_why);
	if (strchr(s, ':')) {
		*ret_why = "IPv6 is not supported yet";
		return -EINVAL;
	}
	if (looks_ipv4(s))
		return parse_cidr(s, e, ret_why);
	if (strchr(s, '/')) {
		*ret_why = "not an IPv4 network or a domain";
		return -EINVAL;
	}
	e->kind = POLICY_DOMAIN;
	if (s[0] == '*') {
		if (s[1] != '.') {
			*ret_why = "a wildcard must be \"*.\" followed by a domain";
			return -EINVAL;
		}
		e->kind = POLICY_WILDCARD;
		s += 2;
	}
	if (!domain_ok(s)) {
		*ret_why = "not a domain, an IPv4 address or an IPv4 network";
		return -EINVAL;
	}
	e->domain = strdup(s);
	if (!e->domain)
		return -ENOMEM;
	return 0;
}

int policy_parse(const char *text, size_t len, struct policy *ret, pd_error *err)
{
	struct policy p = {0};
	bool have_mode = false;
	int lineno = 0, r;
	size_t pos = 0;

	if (len > POLICY_TEXT_MAX)
		return pd_error_set(err, -EINVAL, "policy too long (at most %d entries)",
				    POLICY_MAX_ENTRIES);
	if (memchr(text, '\0', len))
		return pd_error_set(err, -EINVAL, "policy contains a NUL byte");

	size_t a, b;

	while (next_item(text, len, &pos, &lineno, &a, &b)) {
		char line[POLICY_DOMAIN_MAX + 8];
		const char *why = NULL;

		if (b - a >= sizeof(line)) {
			r = pd_error_set(err, -EINVAL, "line %d: entry too long", lineno);
			goto fail;
		}
		memcpy(line, text + a, b - a);
		line[b - a] = '\0';

		if (!have_mode) {
			size_t m;
			for (m = 0; m < ELEMENTSOF(mode_names); m++)
				if (strcmp(line, mode_names[m]) == 0)
					break;
			if (m == ELEMENTSOF(mode_names)) {
				r = pd_error_set(err, -EINVAL,
						 "line %d: unknown policy \"%s\": write allow-all, "
						 "deny-all or allowlist",
						 lineno, line);
				goto fail;
			}
			p.mode = (enum policy_mode)m;
			have_mode = true;
			continue;
		}
		if (p.mode != POLICY_ALLOWLIST) {
			r = pd_error_set(err, -EINVAL, "line %d: %s takes no entries", lineno,
					 mode_names[p.mode]);
			goto fail;
		}
		if (p.n_entries == POLICY_MAX_ENTRIES) {
			r = pd_error_set(err, -EINVAL, "line %d: more than %d entries", lineno,
					 POLICY_MAX_ENTRIES);
			goto fail;
		}
		if (!p.entries) {
			p.entries = calloc(POLICY_MAX_ENTRIES, sizeof(*p.entries));
			if (!p.entries) {
				r = pd_error_set(err, -ENOMEM, "out of memory");
				goto fail;
			}
		}
		r = parse_entry(line, &p.entries[p.n_entries], &why);
		p.entries[p.n_entries].line = lineno;
		if (r < 0) {
			if (r == -ENOMEM)
				pd_error_set(err, r, "out of memory");
			else
				pd_error_set(err, r, "line %d: \"%s\": %s", lineno, line, why);
			goto fail;
		}
		p.n_entries++;
	}
	if (!have_mode) {
		r = pd_error_set(err, -EINVAL,
				 "empty policy: write allow-all, deny-all or allowlist");
		goto fail;
	}
	if (p.mode == POLICY_ALLOWLIST && p.n_entries == 0) {
		r = pd_error_set(err, -EINVAL,
				 "line %d: an allowlist needs at least one entry (deny-all "
				 "allows nothing)",
				 lineno);
		goto fail;
	}
	*ret = p;
	return 0;
fail:
	policy_release(&p);
	return r;
}

int policy_format(const struct policy *p, char **ret)
{
	size_t cap = 16, len;
	char *buf, *w;

	for (size_t i = 0; i < p->n_entries; i++)
		cap += (p->entries[i].domain ? strlen(p->entries[i].domain) : 0) + 24;
	buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	w = buf + sprintf(buf, "%s\n", mode_names[p->mode]);
	for (size_t i = 0; i < p->n_entries; i++) {
		const struct policy_entry *e = &p->entries[i];
		if (e->expanded)
			continue;
		if (e->kind == POLICY_PRESET)
			w += sprintf(w, "@%s\n", e->domain);
		else if (e->kind == POLICY_CIDR) {
			w += sprintf(w, "%u.%u.%u.%u/%u\n", e->addr >> 24, (e->addr >> 16) & 0xff,
				     (e->addr >> 8) & 0xff, e->addr & 0xff, e->prefix);
		} else
			w +=
			    sprintf(w, "%s%s\n", e->kind == POLICY_WILDCARD ? "*." : "", e->domain);
	}
	len = (size_t)(w - buf);
	*ret = buf;
	return (int)len;
}

bool policy_allows_name(const struct policy *p, const char *name)
{
	size_t n = strlen(name);

	if (p->mode == POLICY_ALLOW_ALL)
		return true;
	/* Only host names: a label holding an escaped dot ("evil\\.a.com" as
	 * the resolver prints it) or any other byte is nobody's entry. */
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
		      c == '.'))
			return false;
	}
	for (size_t i = 0; i < p->n_entries; i++) {
		const struct policy_entry *e = &p->entries[i];
		size_t d;

		if (e->kind == POLICY_DOMAIN && strcmp(name, e->domain) == 0)
			return true;
		if (e->kind != POLICY_WILDCARD)
			continue;
		d = strlen(e->domain);
		if (n > d + 1 && name[n - d - 1] == '.' && strcmp(name + n - d, e->domain) == 0)
			return true;
	}
	return false;
}

bool policy_has_presets(const struct policy *p)
{
	for (size_t i = 0; i < p->n_entries; i++)
		if (p->entries[i].kind == POLICY_PRESET)
			return true;
	return false;
}

int policy_add_expanded(struct policy *p, const char *host)
{
	struct policy_entry e = {.expanded = true};
	struct policy_entry *v;
	const char *why;
	char buf[POLICY_DOMAIN_MAX + 1];
	int r;

	if (strlen(host) >= sizeof buf || host[0] == '*' || host[0] == '@' || strchr(host, '/'))
		return -EINVAL;
	snprintf(buf, sizeof buf, "%s", host);
	r = parse_entry(buf, &e, &why);
	if (r < 0)
		return r;
	e.expanded = true;
	v = realloc(p->entries, (p->n_entries + 1) * sizeof *v);
	if (!v) {
		free(e.domain);
		return -ENOMEM;
	}
	p->entries = v;
	p->entries[p->n_entries++] = e;
	return 0;
}

bool policy_allows_host(const struct policy *p, const char *host)
{
	struct in_addr in;

	if (p->mode == POLICY_ALLOW_ALL)
		return true;
	if (p->mode != POLICY_ALLOWLIST)
		return false;
	if (inet_pton(AF_INET, host, &in) == 1) {
		uint32_t a = ntohl(in.s_addr);
		for (size_t i = 0; i < p->n_entries; i++) {
			const struct policy_entry *e = &p->entries[i];
			uint32_t mask = e->prefix ? ~0u << (32 - e->prefix) : 0u;
			if (e->kind == POLICY_CIDR && (a & mask) == e->addr)
				return true;
		}
		return false;
	}
	return policy_allows_name(p, host);
}

bool policy_awaits_entries(const char *text, size_t len)
{
	bool mode = false;
	size_t pos = 0;

	size_t a, b;
	int lineno = 0;

	while (next_item(text, len, &pos, &lineno, &a, &b)) {
		if (mode || b - a != 9 || memcmp(text + a, "allowlist", 9) != 0)
			return false;
		mode = true;
	}
	return mode;
}
