/* policy.h - a box's network egress policy (the box's `policy` file).
 *
 * Text form, one item per line (tree.md):
 *
 *	allow-all | deny-all | allowlist      the mode, on the first line
 *	api.example.com                       allowlist only: a domain,
 *	*.example.com                         a *. wildcard (subdomains only),
 *	10.20.0.0/16                          or an IPv4 address or network
 *	@claude                               or an agent preset: @ and an
 *	                                      agent id (docs/prompts.md)
 *
 * Blank lines and surrounding blanks are ignored; '#' starts a comment
 * line. Domains are case-insensitive and kept lowercase. A parsed policy
 * formats back to a canonical text (policy_format), which is what the store
 * keeps and the file shows.
 *
 * Presets are kept as entries of their own (POLICY_PRESET, the agent id in
 * domain): this module does not know the agents. The engine checks the ids
 * and expands each preset into the hosts it stands for with
 * policy_add_expanded(): entries marked expanded, which match like the
 * others but never show in the canonical text.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

#define POLICY_MAX_ENTRIES 1000
#define POLICY_DOMAIN_MAX 253
/* The longest text policy_parse() reads: every entry a full-length domain. */
#define POLICY_TEXT_MAX ((POLICY_MAX_ENTRIES + 1) * (POLICY_DOMAIN_MAX + 4) + 64)

enum policy_mode { POLICY_ALLOW_ALL, POLICY_DENY_ALL, POLICY_ALLOWLIST };

enum policy_kind { POLICY_CIDR, POLICY_DOMAIN, POLICY_WILDCARD, POLICY_PRESET };

struct policy_entry {
	enum policy_kind kind;
	bool expanded;	 /* added by policy_add_expanded(), not written */
	int line;	 /* PRESET: its line in the text parsed (for errors) */
	uint32_t addr;	 /* CIDR: network, host byte order, host bits clear */
	unsigned prefix; /* CIDR: 0-32 */
	char *domain;	 /* DOMAIN/WILDCARD: lowercase, without the "*.";
			  * PRESET: the agent id, without the "@" */
};

struct policy {
	enum policy_mode mode;
	struct policy_entry *entries;
	size_t n_entries;
};

/* Parses text (len bytes, need not be NUL-terminated). On success fills
 * *ret (release with policy_release()). On failure returns -EINVAL (or
 * -ENOMEM) with "line N: reason" in err and leaves *ret untouched. Refused:
 * an unknown mode, entries after allow-all or deny-all, an allowlist with no
 * entries or more than POLICY_MAX_ENTRIES, an unparsable entry, a network
 * with host bits set, and any IPv6 entry ("IPv6 is not supported yet"). */
int policy_parse(const char *text, size_t len, struct policy *ret, pd_error *err);

/* The canonical text: the mode, then one entry a line, newline-terminated.
 * Returns the length, or -ENOMEM. *ret is malloc'd. */
int policy_format(const struct policy *p, char **ret);

void policy_release(struct policy *p);

/* True when text is "allowlist" with no entries yet (comments and blank
 * lines aside): the start of an allowlist written line by line. */
bool policy_awaits_entries(const char *text, size_t len);

/* True when host name name (lowercase, no trailing dot) is allowed by one
 * of p's domain entries (always under allow-all). A name with any byte but
 * [a-z0-9._-] (such as an escaped dot inside a label) is never allowed by
 * an entry. */
bool policy_allows_name(const struct policy *p, const char *name);

/* True when p has an @AGENT entry. */
bool policy_has_presets(const struct policy *p);

/* Adds host (a host name, lowercase, or a dotted IPv4 address) to p as an
 * expanded entry: a domain, or a /32. -EINVAL for anything else, -ENOMEM. */
int policy_add_expanded(struct policy *p, const char *host);

/* True when p lets a box reach host (a name or a dotted IPv4 address):
 * allow-all, a domain entry naming it, or a network holding it. */
bool policy_allows_host(const struct policy *p, const char *host);
