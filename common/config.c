/* config.c - paddockd's configuration, read with inih (see config.h).
 *
 * inih does the splitting into sections and key = value pairs; a reader
 * placed in front of it (read_line) feeds it one line at a time so that
 * every message can name its line, and checks what inih would let pass:
 * NUL bytes, overlong lines (inih would split them), section headers (inih
 * only reports them together with a key, and truncates long names) and lines
 * that are neither a section, a pair nor a comment. Leading whitespace is
 * dropped there too, which turns off inih's multi-line values: an indented
 * line is an ordinary line. Parsing stops at the first error.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>

#include <ini.h>

#include "common/config.h"

#ifdef HAVE_CONFIG_H
#include "autoconfig.h" /* CRUN_PATH, as found by configure */
#endif
#ifndef CRUN_PATH
#define CRUN_PATH "/usr/bin/crun"
#endif
#define LXCFS_PATH "/usr/bin/lxcfs"  /* Debian's lxcfs package */
#define NOVNC_DIR "/usr/share/novnc" /* Debian's novnc package */

#define GiB (UINT64_C(1) << 30)
#define STOP_GRACE_MAX 3600
#define PIDS_MAX 4194304 /* the kernel's PID_MAX_LIMIT */

static const struct box_type builtin_types[] = {
    {.name = "small", .millicpus = 1000, .memory = 2 * GiB, .pids = 4096, .disk = 10 * GiB},
    {.name = "medium", .millicpus = 2000, .memory = 4 * GiB, .pids = 4096, .disk = 10 * GiB},
    {.name = "large", .millicpus = 4000, .memory = 8 * GiB, .pids = 4096, .disk = 10 * GiB},
};

enum value_kind {
	VAL_PATH,   /* absolute path */
	VAL_CGROUP, /* relative cgroup path */
	VAL_NAME,   /* name_valid() */
	VAL_TTL,
	VAL_TOKEN_TTL, /* token_ttl: like default_ttl, at least 1 s */
	VAL_GRACE,
	VAL_SIZE,	 /* exec_log_max */
	VAL_LISTEN,	 /* HOST:PORT or none */
	VAL_SOCKET,	 /* absolute path or none */
	VAL_URL,	 /* http(s)://... or empty */
	VAL_DOMAIN,	 /* a DNS name or empty */
	VAL_PUSH_COUNT,	 /* push_max_entries */
	VAL_PUSH_BYTES,	 /* push_max_bytes */
	VAL_MERGE_DEPTH, /* layer_merge_depth */
	VAL_ONOFF,	 /* network */
	VAL_BRIDGE,	 /* bridge */
	VAL_SUBNET,	 /* subnet */
	VAL_NFT_TABLE,	 /* nft_table */
	VAL_UPSTREAM,	 /* dns_upstream */
	VAL_GROUP,	 /* group */
	VAL_PROXIES,	 /* trusted_proxies */
	VAL_SECCOMP,	 /* seccomp */
	VAL_USERNS,	 /* userns */
	VAL_USER_IDS,	 /* user_ids */
	VAL_LXCFS,	 /* lxcfs */
	VAL_DISK_LIMIT,	 /* disk_limit */
	VAL_AGENT,	 /* agent */
};

static const struct paddock_key {
	const char *key;
	enum value_kind kind;
	size_t offset; /* of the char * field, for the string kinds */
} paddock_keys[] = {
    {"mount", VAL_PATH, offsetof(struct pd_config, mount)},
    {"data", VAL_PATH, offsetof(struct pd_config, data)},
    {"run", VAL_PATH, offsetof(struct pd_config, run)},
    {"crun", VAL_PATH, offsetof(struct pd_config, crun)},
    {"cgroup_parent", VAL_CGROUP, offsetof(struct pd_config, cgroup_parent)},
    {"default_image", VAL_NAME, offsetof(struct pd_config, default_image)},
    {"default_type", VAL_NAME, offsetof(struct pd_config, default_type)},
    {"default_ttl", VAL_TTL, 0},
    {"token_ttl", VAL_TOKEN_TTL, 0},
    {"stop_grace", VAL_GRACE, 0},
    {"exec_log_max", VAL_SIZE, 0},
    {"listen", VAL_LISTEN, offsetof(struct pd_config, listen)},
    {"socket", VAL_SOCKET, offsetof(struct pd_config, socket)},
    {"public_url", VAL_URL, offsetof(struct pd_config, public_url)},
    {"preview_domain", VAL_DOMAIN, offsetof(struct pd_config, preview_domain)},
    {"push_max_entries", VAL_PUSH_COUNT, 0},
    {"push_max_bytes", VAL_PUSH_BYTES, 0},
    {"layer_merge_depth", VAL_MERGE_DEPTH, 0},
    {"network", VAL_ONOFF, 0},
    {"bridge", VAL_BRIDGE, offsetof(struct pd_config, bridge)},
    {"subnet", VAL_SUBNET, 0},
    {"nft_table", VAL_NFT_TABLE, offsetof(struct pd_config, nft_table)},
    {"dns_upstream", VAL_UPSTREAM, 0},
    {"group", VAL_GROUP, offsetof(struct pd_config, group)},
    {"trusted_proxies", VAL_PROXIES, 0},
    {"seccomp", VAL_SECCOMP, 0},
    {"userns", VAL_USERNS, 0},
    {"user_ids", VAL_USER_IDS, 0},
    {"lxcfs", VAL_LXCFS, 0},
    {"disk_limit", VAL_DISK_LIMIT, 0},
    {"novnc_dir", VAL_PATH, offsetof(struct pd_config, novnc_dir)},
    {"agent", VAL_AGENT, offsetof(struct pd_config, agent)},
};

/* parser.paddock_seen has a bit per key. */
_Static_assert(sizeof(paddock_keys) / sizeof(paddock_keys[0]) <= 32,
	       "too many keys for paddock_seen");

static const char *const type_keys[] = {"cpus", "memory", "pids", "disk"};

static const char *const agent_keys[] = {"base_url", "model"};

enum section_kind { SECTION_NONE, SECTION_PADDOCK, SECTION_TYPE, SECTION_AGENT };

struct parser {
	const char *path;
	FILE *f;
	struct pd_config *c;
	pd_error *err;
	int r;		/* the first error, once there is one */
	int read_errno; /* of a failed getc() */
	int lineno;
	enum section_kind section;
	size_t type_idx;
	unsigned paddock_seen;		      /* bit per paddock_keys[] entry */
	unsigned type_seen[CONFIG_MAX_TYPES]; /* bit per type_keys[] entry */
	size_t agent_idx;
	unsigned agent_seen[CONFIG_MAX_AGENTS]; /* bit per agent_keys[] entry */
	int default_type_line;
};

/* Records the first error as "FILE:LINE: reason"; later ones are dropped
 * (parsing stops at the first). Returns code. */
static int fail_at(struct parser *p, int line, int code, const char *fmt, ...) _printf_(4, 5);
static int fail_at(struct parser *p, int line, int code, const char *fmt, ...)
{
	char reason[PD_ERROR_MAX];
	va_list ap;

	if (p->r < 0)
		return p->r;
	va_start(ap, fmt);
	vsnprintf(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	p->r = code;
	return pd_error_set(p->err, code, "%s:%d: %s", p->path, line, reason);
}

#define fail_here(p, ...) fail_at((p), (p)->lineno, -EINVAL, __VA_ARGS__)

static bool has_space_or_control(const char *s)
{
	for (; *s; s++)
		if (isspace((unsigned char)*s) || iscntrl((unsigned char)*s))
			return true;
	return false;
}

static bool path_ok(const char *v)
{
	return v[0] == '/' && !has_space_or_control(v);
}

/* "paddock", "system.slice/paddock": components under the cgroup root. */
static bool cgroup_ok(const char *v)
{
	if (!*v || has_space_or_control(v))
		return false;
	for (const char *s = v;;) {
		size_t n = strcspn(s, "/");
		if (n == 0 || (n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
			return false;
		if (s[n] == '\0')
			return true;
		s += n + 1;
	}
}

/* "127.0.0.1:7860", "0.0.0.0:80", "[::1]:7860": a numeric address and a
 * port (1-65535). Host names are not resolved: the daemon must not depend
 * on DNS to start. */
static bool listen_ok(const char *v)
{
	const char *colon = strrchr(v, ':');
	char host[64];
	uint64_t port;
	size_t n;
	unsigned char buf[16];

	if (!colon || parse_uint64(colon + 1, 65535, &port) < 0)
		return false;
	n = (size_t)(colon - v);
	if (n == 0 || n >= sizeof(host))
		return false;
	memcpy(host, v, n);
	host[n] = '\0';
	if (host[0] == '[') {
		if (n < 3 || host[n - 1] != ']')
			return false;
		host[n - 1] = '\0';
		return inet_pton(AF_INET6, host + 1, buf) == 1;
	}
	return inet_pton(AF_INET, host, buf) == 1;
}

static bool url_ok(const char *v)
{
	return (strncmp(v, "http://", 7) == 0 || strncmp(v, "https://", 8) == 0) &&
	       !has_space_or_control(v) && strlen(v) < 512;
}

/* preview_domain: empty, or DNS labels of [a-z0-9-] (not starting or
 * ending in '-') joined by dots, at most 200 bytes. */
static bool domain_ok(const char *v)
{
	size_t n = strlen(v), label = 0;

	if (n == 0)
		return true;
	if (n > 200 || v[0] == '.' || v[n - 1] == '.')
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = v[i];
		if (c == '.') {
			if (label == 0 || v[i - 1] == '-')
				return false;
			label = 0;
			continue;
		}
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'))
			return false;
		if (c == '-' && label == 0)
			return false;
		if (++label > 63)
			return false;
	}
	return v[n - 1] != '-';
}

int config_url_host(const char *url, char *host, size_t hostsz)
{
	const char *h, *end;
	size_t n;

	if (!url || !url_ok(url))
		return -EINVAL;
	h = url + (url[4] == 's' ? 8 : 7);
	end = h + strcspn(h, ":/?#");
	n = (size_t)(end - h);
	/* No userinfo (user:pass@host reads as another host to a person),
	 * no IPv6 literal (policies take IPv4 only). */
	if (n == 0 || n > CONFIG_HOST_MAX || n >= hostsz || memchr(h, '@', strlen(h)) ||
	    memchr(h, '[', n))
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		char c = (char)tolower((unsigned char)h[i]);
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-' ||
		      c == '_'))
			return -EINVAL;
		host[i] = c;
	}
	host[n] = '\0';
	if (host[0] == '.' || host[n - 1] == '.' || strstr(host, ".."))
		return -EINVAL;
	if (*end == ':') {
		const char *port = end + 1;
		size_t pn = strcspn(port, "/?#");
		char buf[8];
		uint64_t v;
		if (pn == 0 || pn >= sizeof buf)
			return -EINVAL;
		memcpy(buf, port, pn);
		buf[pn] = '\0';
		if (parse_uint64(buf, 65535, &v) < 0 || v == 0)
			return -EINVAL;
		end = port + pn;
	}
	if (*end == '?' || *end == '#')
		return -EINVAL;
	return 0;
}

/* An interface or table name: a lowercase letter, then up to max - 1 of
 * [a-z0-9] and the one extra character allowed (- or _). */
static bool ident_ok(const char *v, size_t max, char extra)
{
	size_t n = strlen(v);

	if (n == 0 || n > max || !(v[0] >= 'a' && v[0] <= 'z'))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!((v[i] >= 'a' && v[i] <= 'z') || (v[i] >= '0' && v[i] <= '9') ||
		      v[i] == extra))
			return false;
	return true;
}

/* "10.88.0.0/16": a dotted quad with no host bits set and a prefix of
 * 8-28 (room for the bridge and at least a dozen boxes). */
/* "FIRST-LAST": host ids for the boxes' ranges; FIRST a multiple of
 * CONFIG_BOX_IDS, at least one whole range, LAST below 2^32 - 1 (-1 is
 * "no id"). */
static bool user_ids_ok(const char *v, uint32_t *ret_first, uint32_t *ret_count)
{
	char first[16];
	const char *dash = strchr(v, '-');
	uint64_t a, b;

	if (!dash || (size_t)(dash - v) >= sizeof first)
		return false;
	memcpy(first, v, (size_t)(dash - v));
	first[dash - v] = '\0';
	if (parse_uint64(first, UINT32_MAX - 1, &a) < 0 ||
	    parse_uint64(dash + 1, UINT32_MAX - 1, &b) < 0)
		return false;
	if (a == 0 || a % CONFIG_BOX_IDS || b < a || b - a + 1 < CONFIG_BOX_IDS)
		return false;
	*ret_first = (uint32_t)a;
	*ret_count = (uint32_t)(b - a + 1);
	return true;
}

static bool subnet_ok(const char *v, uint32_t *ret_net, unsigned *ret_prefix)
{
	const char *slash = strchr(v, '/');
	char addr[16];
	struct in_addr in;
	uint64_t prefix;
	uint32_t net, mask;

	if (!slash || (size_t)(slash - v) >= sizeof(addr))
		return false;
	memcpy(addr, v, (size_t)(slash - v));
	addr[slash - v] = '\0';
	if (inet_pton(AF_INET, addr, &in) != 1 || parse_uint64(slash + 1, 28, &prefix) < 0 ||
	    prefix < 8)
		return false;
	net = ntohl(in.s_addr);
	mask = ~0u << (32 - prefix);
	if (net & ~mask)
		return false;
	*ret_net = net;
	*ret_prefix = (unsigned)prefix;
	return true;
}

/* "192.0.2.53" or "192.0.2.53:5353": an IPv4 address, not 0.0.0.0, and
 * an optional port (1-65535; 53 when absent). */
static bool upstream_ok(const char *v, uint32_t *ret_addr, uint16_t *ret_port)
{
	const char *colon = strchr(v, ':');
	char addr[16];
	struct in_addr in;
	uint64_t port = 53;
	size_t alen = colon ? (size_t)(colon - v) : strlen(v);

	if (alen >= sizeof(addr))
		return false;
	memcpy(addr, v, alen);
	addr[alen] = '\0';
	if (inet_pton(AF_INET, addr, &in) != 1 || in.s_addr == 0)
		return false;
	if (colon && (parse_uint64(colon + 1, 65535, &port) < 0 || port == 0))
		return false;
	*ret_addr = ntohl(in.s_addr);
	*ret_port = (uint16_t)port;
	return true;
}

/* A group name as groupadd(8) takes it ([a-z_][a-z0-9_-]*, optionally
 * ending in $) or a decimal gid. */
static bool group_ok(const char *v)
{
	size_t n = strlen(v);
	uint64_t gid;

	if (n == 0 || n > CONFIG_GROUP_MAX)
		return false;
	if (v[0] >= '0' && v[0] <= '9')
		return parse_uint64(v, UINT32_MAX - 1, &gid) >= 0;
	if (!((v[0] >= 'a' && v[0] <= 'z') || v[0] == '_'))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!((v[i] >= 'a' && v[i] <= 'z') || (v[i] >= '0' && v[i] <= '9') || v[i] == '_' ||
		      v[i] == '-' || (v[i] == '$' && i == n - 1)))
			return false;
	return true;
}

/* "192.0.2.1", "10.0.0.0/8", "::1", "fd00::/8": a numeric address with an
 * optional prefix; host bits must be clear. */
static bool prefix_ok(const char *v, size_t len, struct net_prefix *ret)
{
	char addr[64];
	const char *slash = memchr(v, '/', len);
	size_t alen = slash ? (size_t)(slash - v) : len;
	struct net_prefix p = {0};
	uint64_t prefix;
	unsigned max;

	if (alen == 0 || alen >= sizeof(addr))
		return false;
	memcpy(addr, v, alen);
	addr[alen] = '\0';
	if (inet_pton(AF_INET, addr, p.addr) == 1)
		p.family = AF_INET, max = 32;
	else if (inet_pton(AF_INET6, addr, p.addr) == 1)
		p.family = AF_INET6, max = 128;
	else
		return false;
	p.prefix = max;
	if (slash) {
		char num[8];
		size_t nlen = len - alen - 1;
		if (nlen == 0 || nlen >= sizeof(num))
			return false;
		memcpy(num, slash + 1, nlen);
		num[nlen] = '\0';
		if (parse_uint64(num, max, &prefix) < 0)
			return false;
		p.prefix = (unsigned)prefix;
	}
	for (unsigned bit = p.prefix; bit < max; bit++)
		if (p.addr[bit / 8] & (0x80 >> (bit % 8)))
			return false;
	*ret = p;
	return true;
}

static bool proxies_ok(const char *v, struct pd_config *c)
{
	size_t n = 0;

	for (const char *s = v; *s;) {
		size_t len;

		s += strspn(s, ", \t");
		len = strcspn(s, ", \t");
		if (len == 0)
			break;
		if (n == CONFIG_PROXIES_MAX || !prefix_ok(s, len, &c->trusted_proxies[n]))
			return false;
		n++;
		s += len;
	}
	c->n_trusted_proxies = n;
	return true;
}

bool config_net_prefix_contains(const struct net_prefix *p, int family, const void *addr)
{
	static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	const uint8_t *a = addr;

	if (family == AF_INET6 && p->family == AF_INET && memcmp(a, mapped, 12) == 0) {
		a += 12;
		family = AF_INET;
	}
	if (family != p->family)
		return false;
	for (unsigned bit = 0; bit < p->prefix; bit++) {
		uint8_t m = (uint8_t)(0x80 >> (bit % 8));
		if ((a[bit / 8] & m) != (p->addr[bit / 8] & m))
			return false;
	}
	return true;
}

static int set_string(struct parser *p, size_t offset, const char *value)
{
	char **field = (char **)((char *)p->c + offset);
	char *s = strdup(value);

	if (!s)
		return fail_at(p, p->lineno, -ENOMEM, "out of memory");
	free(*field);
	*field = s;
	return 0;
}

static int set_paddock_key(struct parser *p, const char *key, const char *value)
{
	const struct paddock_key *k = NULL;
	size_t i;
	bool ok;

	for (i = 0; i < ELEMENTSOF(paddock_keys); i++)
		if (strcmp(key, paddock_keys[i].key) == 0) {
			k = &paddock_keys[i];
			break;
		}
	if (!k)
		return fail_here(p, "unknown key \"%s\" in [paddock]", key);
	if (p->paddock_seen & (1u << i))
		return fail_here(p, "duplicate key \"%s\" in [paddock]", key);
	p->paddock_seen |= 1u << i;

	switch (k->kind) {
	case VAL_PATH:
		ok = path_ok(value);
		break;
	case VAL_CGROUP:
		ok = cgroup_ok(value);
		break;
	case VAL_NAME:
	case VAL_AGENT:
		ok = name_valid(value);
		break;
	case VAL_TTL:
		ok = parse_ttl(value, &p->c->default_ttl) >= 0;
		break;
	case VAL_TOKEN_TTL: {
		int64_t v;
		/* 0 would make tokens dead at birth: "none" says never. */
		ok = parse_ttl(value, &v) >= 0 && v != 0;
		if (ok)
			p->c->token_ttl = v < 0 ? 0 : v;
		break;
	}
	case VAL_MERGE_DEPTH: {
		uint64_t v;
		ok = parse_uint64(value, CONFIG_MERGE_DEPTH_MAX, &v) >= 0 &&
		     v >= CONFIG_MERGE_DEPTH_MIN;
		if (ok)
			p->c->layer_merge_depth = (unsigned)v;
		break;
	}
	case VAL_GRACE: {
		uint64_t v;
		ok = parse_uint64(value, STOP_GRACE_MAX, &v) >= 0;
		if (ok)
			p->c->stop_grace = (unsigned)v;
		break;
	}
	case VAL_SIZE: {
		uint64_t v;
		ok = parse_size(value, &v) >= 0 && v >= 4096 && v <= (1ULL << 40);
		if (ok)
			p->c->exec_log_max = v;
		break;
	}
	case VAL_LISTEN:
		ok = strcmp(value, "none") == 0 || listen_ok(value);
		break;
	case VAL_SOCKET:
		ok = strcmp(value, "none") == 0 || (path_ok(value) && strlen(value) < 100);
		break;
	case VAL_URL:
		ok = url_ok(value);
		break;
	case VAL_DOMAIN:
		ok = domain_ok(value);
		break;
	case VAL_PUSH_COUNT: {
		uint64_t v;
		ok = parse_uint64(value, 100000000, &v) >= 0 && v > 0;
		if (ok)
			p->c->push_max_entries = v;
		break;
	}
	case VAL_PUSH_BYTES: {
		uint64_t v;
		ok = parse_size(value, &v) >= 0 && v > 0;
		if (ok)
			p->c->push_max_bytes = v;
		break;
	}
	case VAL_ONOFF:
		ok = strcmp(value, "on") == 0 || strcmp(value, "off") == 0;
		if (ok)
			p->c->network = value[1] == 'n';
		break;
	case VAL_BRIDGE:
		ok = ident_ok(value, CONFIG_BRIDGE_MAX, '-');
		break;
	case VAL_NFT_TABLE:
		ok = ident_ok(value, CONFIG_NFT_TABLE_MAX, '_');
		break;
	case VAL_SUBNET:
		ok = subnet_ok(value, &p->c->subnet, &p->c->subnet_prefix);
		break;
	case VAL_UPSTREAM:
		ok = strcmp(value, "auto") == 0
			 ? (p->c->dns_upstream = 0, p->c->dns_upstream_port = 0, true)
			 : upstream_ok(value, &p->c->dns_upstream, &p->c->dns_upstream_port);
		break;
	case VAL_GROUP:
		ok = group_ok(value);
		break;
	case VAL_PROXIES:
		ok = proxies_ok(value, p->c);
		break;
	case VAL_SECCOMP:
		ok = strcmp(value, "default") == 0 || strcmp(value, "off") == 0;
		if (ok)
			p->c->seccomp = value[0] == 'd';
		break;
	case VAL_USERNS:
		ok = strcmp(value, "on") == 0 || strcmp(value, "off") == 0;
		if (ok)
			p->c->userns = value[1] == 'n';
		break;
	case VAL_DISK_LIMIT:
		ok = strcmp(value, "on") == 0 || strcmp(value, "off") == 0;
		if (ok)
			p->c->disk_limit = value[1] == 'n';
		break;
	case VAL_USER_IDS:
		ok = user_ids_ok(value, &p->c->user_ids_first, &p->c->user_ids_count);
		break;
	case VAL_LXCFS:
		ok = strcmp(value, "on") == 0 || strcmp(value, "off") == 0 || path_ok(value);
		if (ok && strcmp(value, "off") == 0) {
			free(p->c->lxcfs);
			p->c->lxcfs = NULL;
		} else if (ok && strcmp(value, "on") != 0)
			return set_string(p, offsetof(struct pd_config, lxcfs), value);
		break;
	default:
		ok = false;
	}
	if (!ok)
		return fail_here(p, "bad value for %s: \"%s\"", key, value);

	if (k->kind == VAL_TTL || k->kind == VAL_TOKEN_TTL || k->kind == VAL_GRACE ||
	    k->kind == VAL_SIZE || k->kind == VAL_PUSH_COUNT || k->kind == VAL_PUSH_BYTES ||
	    k->kind == VAL_MERGE_DEPTH || k->kind == VAL_ONOFF || k->kind == VAL_SUBNET ||
	    k->kind == VAL_UPSTREAM || k->kind == VAL_PROXIES || k->kind == VAL_SECCOMP ||
	    k->kind == VAL_USERNS || k->kind == VAL_USER_IDS || k->kind == VAL_LXCFS ||
	    k->kind == VAL_DISK_LIMIT)
		return 0;
	if (strcmp(key, "default_type") == 0)
		p->default_type_line = p->lineno;
	return set_string(p, k->offset, value);
}

static int set_type_key(struct parser *p, const char *key, const char *value)
{
	struct box_type *t = &p->c->types[p->type_idx];
	size_t i;
	uint64_t v = 0;
	bool ok;

	for (i = 0; i < ELEMENTSOF(type_keys); i++)
		if (strcmp(key, type_keys[i]) == 0)
			break;
	if (i == ELEMENTSOF(type_keys))
		return fail_here(p, "unknown key \"%s\" in [types.%s]", key, t->name);
	if (p->type_seen[p->type_idx] & (1u << i))
		return fail_here(p, "duplicate key \"%s\" in [types.%s]", key, t->name);
	p->type_seen[p->type_idx] |= 1u << i;

	switch (i) {
	case 0:
		ok = parse_cpus(value, &t->millicpus) >= 0;
		break;
	case 1:
		ok = parse_size(value, &v) >= 0 && v > 0;
		if (ok)
			t->memory = v;
		break;
	case 2:
		ok = parse_uint64(value, PIDS_MAX, &v) >= 0 && v > 0;
		if (ok)
			t->pids = v;
		break;
	default:
		ok = parse_size(value, &v) >= 0 && v > 0;
		if (ok)
			t->disk = v;
		break;
	}
	if (!ok)
		return fail_here(p, "bad value for %s: \"%s\"", key, value);
	return 0;
}

static int set_agent_key(struct parser *p, const char *key, const char *value)
{
	struct agent_config *a = &p->c->agents[p->agent_idx];
	char host[CONFIG_HOST_MAX + 1];
	size_t i;

	for (i = 0; i < ELEMENTSOF(agent_keys); i++)
		if (strcmp(key, agent_keys[i]) == 0)
			break;
	if (i == ELEMENTSOF(agent_keys))
		return fail_here(p, "unknown key \"%s\" in [agent %s] (base_url, model)", key,
				 a->name);
	if (p->agent_seen[p->agent_idx] & (1u << i))
		return fail_here(p, "duplicate key \"%s\" in [agent %s]", key, a->name);
	p->agent_seen[p->agent_idx] |= 1u << i;
	if (i == 0) {
		if (strlen(value) > CONFIG_URL_MAX || config_url_host(value, host, sizeof host) < 0)
			return fail_here(p,
					 "bad base_url \"%s\": http:// or https://, a host name or "
					 "an IPv4 address, an optional :PORT and /PATH",
					 value);
		return set_string(p, (size_t)((char *)&a->base_url - (char *)p->c), value);
	}
	if (!*value || strlen(value) > CONFIG_MODEL_MAX || has_space_or_control(value))
		return fail_here(p, "bad model \"%s\": 1 to %d bytes, no blanks", value,
				 CONFIG_MODEL_MAX);
	return set_string(p, (size_t)((char *)&a->model - (char *)p->c), value);
}

static int on_pair(void *user, const char *section, const char *name, const char *value)
{
	struct parser *p = user;
	int r;

	/* section is inih's idea of it, truncated to 49 bytes; ours is whole. */
	switch (p->section) {
	case SECTION_PADDOCK:
		r = set_paddock_key(p, name, value);
		break;
	case SECTION_TYPE:
		r = set_type_key(p, name, value);
		break;
	case SECTION_AGENT:
		r = set_agent_key(p, name, value);
		break;
	default:
		r = fail_here(p, "key \"%s\" outside of any section", name);
	}
	return r >= 0; /* inih: nonzero is success */
}

static int begin_type_section(struct parser *p, const char *header, const char *name)
{
	struct pd_config *c = p->c;
	size_t i;

	if (!name_valid(name))
		return fail_here(p, "invalid type name \"%s\" in [%s]", name, header);

	for (i = 0; i < c->n_types; i++)
		if (strcmp(c->types[i].name, name) == 0)
			break;
	if (i == c->n_types) {
		if (c->n_types == CONFIG_MAX_TYPES)
			return fail_here(p, "too many types (at most %d)", CONFIG_MAX_TYPES);
		/* A new type starts from small's built-in values. */
		c->types[i] = builtin_types[0];
		snprintf(c->types[i].name, sizeof(c->types[i].name), "%s", name);
		c->n_types++;
	}
	p->section = SECTION_TYPE;
	p->type_idx = i;
	return 0;
}

static int begin_agent_section(struct parser *p, const char *header, const char *name)
{
	struct pd_config *c = p->c;
	size_t i;

	if (!name_valid(name))
		return fail_here(p, "invalid agent id \"%s\" in [%s]", name, header);
	for (i = 0; i < c->n_agents; i++)
		if (strcmp(c->agents[i].name, name) == 0)
			return fail_here(p, "duplicate section [%s]", header);
	if (c->n_agents == CONFIG_MAX_AGENTS)
		return fail_here(p, "too many agent sections (at most %d)", CONFIG_MAX_AGENTS);
	snprintf(c->agents[i].name, sizeof c->agents[i].name, "%s", name);
	c->n_agents++;
	p->section = SECTION_AGENT;
	p->agent_idx = i;
	return 0;
}

/* line starts with '['. The name ends at ']', found the way inih finds it
 * (a ';' after whitespace starts a comment first). */
static int begin_section(struct parser *p, char *line)
{
	bool was_space = false;
	char *end, *rest;
	int r;

	for (end = line + 1; *end && *end != ']' && !(was_space && *end == ';'); end++)
		was_space = isspace((unsigned char)*end);
	if (*end != ']')
		return fail_here(p, "unterminated section header");
	for (rest = end + 1; isspace((unsigned char)*rest); rest++)
		;
	if (*rest != '\0' && *rest != ';')
		return fail_here(p, "unexpected text after section header");

	*end = '\0'; /* restored below: inih parses this line too */
	if (strcmp(line + 1, "paddock") == 0) {
		p->section = SECTION_PADDOCK;
		r = 0;
	} else if (strncmp(line + 1, "types.", 6) == 0)
		r = begin_type_section(p, line + 1, line + 7);
	else if (strncmp(line + 1, "agent ", 6) == 0)
		r = begin_agent_section(p, line + 1, line + 7);
	else
		r = fail_here(p, "unknown section [%s]", line + 1);
	*end = ']';
	return r;
}

/* The ini_reader: fgets()-like, one line per call, num including the NUL. */
static char *read_line(char *str, int num, void *stream)
{
	struct parser *p = stream;
	size_t n = 0, skip;
	int ch;

	if (p->r < 0 || num < 3)
		return NULL;

	ch = getc(p->f);
	if (ch == EOF) {
		if (ferror(p->f))
			p->read_errno = errno;
		return NULL;
	}
	p->lineno++;

	for (; ch != EOF && ch != '\n'; ch = getc(p->f)) {
		if (ch == '\0') {
			fail_here(p, "NUL byte");
			return NULL;
		}
		/* Keep room for "\n\0": inih splits longer lines. */
		if (n >= (size_t)num - 2) {
			fail_here(p, "line too long (at most %d bytes)", num - 2);
			return NULL;
		}
		str[n++] = (char)ch;
	}
	if (ch == '\n')
		str[n++] = '\n';
	else if (ferror(p->f))
		p->read_errno = errno;
	str[n] = '\0';

	skip = 0;
	if (p->lineno == 1 && strncmp(str, "\xef\xbb\xbf", 3) == 0)
		skip = 3;
	while (isspace((unsigned char)str[skip]))
		skip++;
	memmove(str, str + skip, n - skip + 1);

	if (str[0] == '\0' || str[0] == ';' || str[0] == '#')
		return str;
	if (str[0] == '[')
		return begin_section(p, str) < 0 ? NULL : str;

	bool was_space = false;
	const char *s;
	for (s = str; *s && *s != '=' && *s != ':' && !(was_space && *s == ';'); s++)
		was_space = isspace((unsigned char)*s);
	if (*s != '=' && *s != ':') {
		fail_here(p, "expected \"key = value\", \"[section]\" or a comment");
		return NULL;
	}
	return str;
}

void config_release(struct pd_config *c)
{
	if (!c)
		return;
	free(c->path);
	free(c->mount);
	free(c->data);
	free(c->run);
	free(c->crun);
	free(c->cgroup_parent);
	free(c->default_image);
	free(c->default_type);
	free(c->listen);
	free(c->socket);
	free(c->public_url);
	free(c->preview_domain);
	free(c->bridge);
	free(c->nft_table);
	free(c->group);
	free(c->lxcfs);
	free(c->novnc_dir);
	free(c->agent);
	for (size_t i = 0; i < c->n_agents; i++) {
		free(c->agents[i].base_url);
		free(c->agents[i].model);
	}
	memset(c, 0, sizeof(*c));
}

static int config_defaults(struct pd_config *c)
{
	memset(c, 0, sizeof(*c));
	c->mount = strdup("/paddock");
	c->data = strdup("/var/lib/paddock");
	c->run = strdup("/run/paddock");
	c->crun = strdup(CRUN_PATH);
	c->cgroup_parent = strdup("paddock");
	c->default_image = strdup("debian");
	c->default_type = strdup("small");
	c->listen = strdup("127.0.0.1:7860");
	c->bridge = strdup("paddock0");
	c->nft_table = strdup("paddock");
	c->group = strdup("paddock");
	c->lxcfs = strdup(LXCFS_PATH);
	c->novnc_dir = strdup(NOVNC_DIR);
	if (!c->lxcfs || !c->novnc_dir || !c->mount || !c->data || !c->run || !c->crun ||
	    !c->cgroup_parent || !c->default_image || !c->default_type || !c->listen ||
	    !c->bridge || !c->nft_table || !c->group)
		return -ENOMEM;
	c->network = true;
	c->seccomp = true;
	c->userns = true;
	c->disk_limit = true;
	c->user_ids_first = CONFIG_USER_IDS_FIRST;
	c->user_ids_count = CONFIG_USER_IDS_COUNT;
	c->subnet = 0x0a580000; /* 10.88.0.0 */
	c->subnet_prefix = 16;
	c->push_max_entries = 100000;
	c->push_max_bytes = 8 * GiB;
	c->default_ttl = -1;
	c->stop_grace = 10;
	c->layer_merge_depth = 16;
	c->exec_log_max = 64ULL << 20;
	memcpy(c->types, builtin_types, sizeof(builtin_types));
	c->n_types = ELEMENTSOF(builtin_types);
	return 0;
}

static int config_parse_file(struct parser *p)
{
	_cleanup_fclose_ FILE *f = NULL;
	struct stat st;
	int fd, r;

	fd = open(p->path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return fail_at(p, 0, -errno, "cannot open: %m");
	if (fstat(fd, &st) < 0) {
		r = -errno;
		close(fd);
		errno = -r;
		return fail_at(p, 0, r, "cannot open: %m");
	}
	if (S_ISDIR(st.st_mode)) {
		close(fd);
		errno = EISDIR;
		return fail_at(p, 0, -EISDIR, "cannot open: %m");
	}
	f = fdopen(fd, "r");
	if (!f) {
		r = -errno;
		close(fd);
		errno = -r;
		return fail_at(p, 0, r, "cannot open: %m");
	}

	p->f = f;
	r = ini_parse_stream(read_line, p, on_pair, p);
	p->f = NULL;
	if (p->r < 0)
		return p->r;
	if (ferror(f)) {
		errno = p->read_errno > 0 ? p->read_errno : EIO;
		return fail_at(p, 0, -errno, "cannot read: %m");
	}
	if (r == -2)
		return fail_at(p, 0, -ENOMEM, "out of memory");
	if (r != 0) /* whatever inih refused that read_line let through */
		return fail_at(p, r, -EINVAL, "syntax error");

	if (!config_find_type(p->c, p->c->default_type)) {
		char types[256];
		config_type_names(p->c, types, sizeof types);
		return fail_at(p, p->default_type_line, -EINVAL,
			       "default_type \"%s\" names no type: types are %s",
			       p->c->default_type, types);
	}
	return 0;
}

int config_load(const char *path, struct pd_config *ret, pd_error *err)
{
	struct pd_config c;
	struct parser p = {.path = path, .c = &c, .err = err};
	int r;

	r = config_defaults(&c);
	if (r < 0) {
		pd_error_set(err, r, "%s:0: out of memory", path ? path : "(defaults)");
		goto fail;
	}

	if (path) {
		r = config_parse_file(&p);
		if (r == -ENOENT && strcmp(path, CONFIG_DEFAULT_PATH) == 0) {
			pd_error_clear(err);
			path = NULL; /* the defaults stand */
		} else if (r < 0)
			goto fail;
	}

	if (!c.socket) {
		/* Beside the rest of the runtime state, so that daemons with
		 * different run directories never share it. */
		if (asprintf(&c.socket, "%s/paddock.sock", c.run) < 0) {
			c.socket = NULL;
			r = pd_error_set(err, -ENOMEM, "%s:0: out of memory",
					 path ? path : "(defaults)");
			goto fail;
		}
		if (strlen(c.socket) >= 108) {
			r = pd_error_set(
			    err, -EINVAL,
			    "%s:0: run directory too long for the socket %s; set socket",
			    path ? path : "(defaults)", c.socket);
			goto fail;
		}
	}
	if (path) {
		c.path = strdup(path);
		if (!c.path) {
			r = pd_error_set(err, -ENOMEM, "%s:0: out of memory", path);
			goto fail;
		}
	}
	*ret = c;
	return 0;

fail:
	config_release(&c);
	memset(ret, 0, sizeof(*ret));
	return r;
}

const struct agent_config *config_find_agent(const struct pd_config *c, const char *name)
{
	if (!c || !name)
		return NULL;
	for (size_t i = 0; i < c->n_agents; i++)
		if (strcmp(c->agents[i].name, name) == 0)
			return &c->agents[i];
	return NULL;
}

const struct box_type *config_find_type(const struct pd_config *c, const char *name)
{
	if (!c || !name)
		return NULL;
	for (size_t i = 0; i < c->n_types; i++)
		if (strcmp(c->types[i].name, name) == 0)
			return &c->types[i];
	return NULL;
}

void config_type_names(const struct pd_config *c, char *buf, size_t bufsz)
{
	size_t len = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < c->n_types; i++)
		if (!text_list_add(buf, bufsz, &len, c->types[i].name))
			break;
}

int config_box_type_format(const struct box_type *t, char *buf, size_t bufsz)
{
	char cpus[32], memory[32], disk[32];
	int n;

	format_cpus(t->millicpus, cpus, sizeof(cpus));
	format_size(t->memory, memory, sizeof(memory));
	format_size(t->disk, disk, sizeof(disk));
	n = snprintf(buf, bufsz, "cpus %s\nmemory %s\npids %" PRIu64 "\ndisk %s\n", cpus, memory,
		     t->pids, disk);
	if (n < 0)
		return -EIO;
	if ((size_t)n >= bufsz)
		return -ENOBUFS;
	return n;
}
