/* config.h - paddockd's configuration (an INI file read with inih).
 *
 * Every key has a compiled-in default, so no file is needed. The file, when
 * given, may set:
 *
 *	[paddock]
 *	mount = /paddock            where the tree is mounted
 *	data = /var/lib/paddock     state database, images, boxes
 *	default_image = debian
 *	default_type = small        must name a type
 *	default_ttl = none          seconds, with s/m/h/d suffix, or none
 *	token_ttl = none            lifetime of an HTTP access token whose login
 *	                            names none, and the longest a login may ask
 *	                            for (a longer ttl is refused): seconds (at
 *	                            least 1) with s/m/h/d suffix, or none (the
 *	                            default: tokens never expire unless their
 *	                            login asks)
 *	stop_grace = 10             seconds between SIGTERM and SIGKILL (0-3600)
 *	crun = /usr/bin/crun        the OCI runtime binary
 *	cgroup_parent = paddock     boxes' cgroups live under /<cgroup_parent>/NAME
 *	run = /run/paddock          runtime state (crun's --root lives under it)
 *	exec_log_max = 64M          stored bytes per exec job stream (4K..1T)
 *	listen = 127.0.0.1:7860     HTTP on a numeric address:port (port 0: any
 *	                            free one, written to RUN/http-url), or none
 *	socket = RUN/paddock.sock   HTTP on a unix socket (mode 0600), or none
 *	public_url =                base URL printed in the setup link
 *	                            (default http://LISTEN)
 *	preview_domain =            DOMAIN: a request whose Host is
 *	                            PORT-BOX.DOMAIN goes to port PORT of box
 *	                            BOX (its ports file; docs/preview.md);
 *	                            empty (default): the path form only
 *	push_max_entries = 100000   tar push limits: entries per archive
 *	push_max_bytes = 8G         and content bytes per archive
 *	layer_merge_depth = 16      deepest layer stack a box keeps (2-32): when
 *	                            a stop, snapshot or fork would make it
 *	                            deeper, its oldest layers merge into one
 *	network = on                box networking (on/off): each box gets a
 *	                            veth on the daemon's bridge, an address,
 *	                            NAT and its egress policy. off: a box has
 *	                            its own network namespace with loopback only
 *	bridge = paddock0           the daemon's bridge (1-8 of [a-z0-9-], a
 *	                            letter first); box veths are named after it
 *	subnet = 10.88.0.0/16       IPv4 network of the bridge (prefix 8-28); the
 *	                            bridge takes its first host address
 *	nft_table = paddock         the daemon's nftables inet table (1-32 of
 *	                            [a-z0-9_], a letter first)
 *	dns_upstream = auto         where the boxes' resolver sends the lookups
 *	                            it allows: ADDR or ADDR:PORT (IPv4), or
 *	                            auto: the first IPv4 nameserver of the
 *	                            host's /etc/resolv.conf at start
 *	group = paddock             the group whose members (with root) may use
 *	                            the tree and the local socket: a group name
 *	                            or a numeric gid (docs/security.md)
 *	trusted_proxies =           addresses or networks (IPv4 or IPv6, with
 *	                            an optional /PREFIX), separated by commas
 *	                            or spaces, whose X-Forwarded-For header is
 *	                            believed; empty: none (the default)
 *	seccomp = default           the boxes' seccomp filter: default (Docker's
 *	                            default profile, converted for the boxes'
 *	                            capabilities: runtime/seccomp/NOTICE) or off
 *	                            (no filter; for comparison, not for use)
 *	userns = on                 each box in its own user namespace, its ids
 *	                            0-65535 mapped to a range of host ids of
 *	                            its own (off: box root is host root; for
 *	                            comparison, not for use)
 *	disk_limit = on             a box's writable layer is an ext4 image of
 *	                            its type's `disk` size (engine-disk.c): writes
 *	                            past it fail with ENOSPC (off: a directory,
 *	                            no limit; for comparison, not for use)
 *	user_ids = 1073741824-2147483647
 *	                            the host ids (FIRST-LAST) the boxes' ranges
 *	                            are taken from: FIRST a multiple of 65536,
 *	                            at least 65536 ids; ids nothing else on the
 *	                            host uses (not /etc/subuid's)
 *	lxcfs = on                  per-box views of /proc/meminfo, cpuinfo,
 *	                            stat, uptime, ... from an lxcfs the daemon
 *	                            runs (lxcfs.h): on (/usr/bin/lxcfs), off,
 *	                            or the absolute path of an lxcfs binary
 *	novnc_dir = /usr/share/novnc
 *	                            noVNC (Debian's novnc package): the panel's
 *	                            live desktop view loads its modules from
 *	                            here, served read-only under /novnc/
 *
 *	agent = claude              the default agent of prompts (an agent id);
 *	                            unset: the first agent of the box's image
 *
 *	[agent NAME]                one section per agent id (docs/prompts.md)
 *	base_url = URL              the model endpoint the agent is pointed at
 *	                            (through its own base-URL setting): http://
 *	                            or https://, a host name or an IPv4 address,
 *	                            an optional port and path; the @NAME policy
 *	                            preset then allows that host only
 *	model = M                   the agent's default model (a prompt's own
 *	                            model file wins)
 *
 *	[types.NAME]                one section per box type
 *	cpus = 1                    may be fractional: 0.5
 *	memory = 2G
 *	pids = 4096
 *	disk = 10G
 *
 * Built-in types small (1 cpu, 2G), medium (2, 4G) and large (4, 8G), each
 * with pids 4096 and disk 10G, exist unless the file redefines them; a
 * [types.X] section starts from those built-in values for X (or from small's
 * for a new type) and overrides what it names.
 *
 * Errors: an unknown section or key, a bad value, a duplicated key or an
 * unreadable file make config_load() fail with "FILE:LINE: reason" in err
 * (LINE is 0 for whole-file problems).
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"
#include "common/parse.h"

#define CONFIG_DEFAULT_PATH "/etc/paddock/paddock.ini"
#define CONFIG_MAX_TYPES 64
/* Bounds of layer_merge_depth. The top stays well under the stack's hard
 * limit (layers.h LAYER_STACK_DEPTH_MAX): a snapshot of a running box is
 * one deeper than the box, and a restored box one more before it merges. */
#define CONFIG_MERGE_DEPTH_MIN 2
#define CONFIG_MERGE_DEPTH_MAX 32
#define CONFIG_BRIDGE_MAX 8
#define CONFIG_NFT_TABLE_MAX 32
#define CONFIG_GROUP_MAX 32
#define CONFIG_PROXIES_MAX 16
#define CONFIG_MAX_AGENTS 32
#define CONFIG_URL_MAX 511
#define CONFIG_MODEL_MAX 255
#define CONFIG_HOST_MAX 253
/* Each box's user namespace maps its ids 0..CONFIG_BOX_IDS-1. */
#define CONFIG_BOX_IDS 65536u
#define CONFIG_USER_IDS_FIRST 1073741824u /* 2^30 */
#define CONFIG_USER_IDS_COUNT 1073741824u /* up to 2^31 - 1: 16384 boxes */

/* An IPv4 or IPv6 network: family AF_INET or AF_INET6, addr in network
 * byte order (the first 4 bytes for IPv4), host bits cleared. */
struct net_prefix {
	int family;
	uint8_t addr[16];
	unsigned prefix; /* 0-32 or 0-128 */
};

struct box_type {
	char name[NAME_MAX_LEN + 1];
	unsigned millicpus;
	uint64_t memory; /* bytes */
	uint64_t pids;
	uint64_t disk; /* bytes */
};

/* An [agent NAME] section: NULL for what it does not set. */
struct agent_config {
	char name[NAME_MAX_LEN + 1];
	char *base_url;
	char *model;
};

struct pd_config {
	char *path; /* the file read, or NULL when only defaults are in force */
	char *mount;
	char *data;
	char *run;
	char *crun;
	char *cgroup_parent;
	char *default_image;
	char *default_type;
	int64_t default_ttl;   /* seconds, -1 = none */
	int64_t token_ttl;     /* seconds, 0 = none (auth_options.token_ttl) */
	unsigned stop_grace;   /* seconds */
	uint64_t exec_log_max; /* bytes per job stream */
	char *listen;	       /* "HOST:PORT" or "none" */
	char *socket;	       /* unix socket path or "none" */
	char *public_url;      /* NULL = http://LISTEN */
	char *preview_domain;  /* NULL = no host form of preview URLs */
	uint64_t push_max_entries;
	uint64_t push_max_bytes;
	unsigned layer_merge_depth; /* CONFIG_MERGE_DEPTH_MIN..MAX */
	bool network;
	char *bridge;
	char *nft_table;
	uint32_t subnet;	/* network address, host byte order */
	unsigned subnet_prefix; /* 8-28 */
	uint32_t dns_upstream;	/* host byte order; 0: auto */
	uint16_t dns_upstream_port;
	char *group;  /* a group name or a decimal gid */
	bool seccomp; /* filter boxes with the built-in profile */
	bool userns;  /* each box in its own user namespace */
	/* Boxes' writable layers in images of their type's disk. */
	bool disk_limit;
	/* Host ids boxes take their ranges from: user_ids_count ranges of
	 * CONFIG_BOX_IDS ids from user_ids_first, a multiple of CONFIG_BOX_IDS. */
	uint32_t user_ids_first;
	uint32_t user_ids_count;
	char *lxcfs;	 /* the lxcfs binary, or NULL: lxcfs = off */
	char *novnc_dir; /* noVNC's files, served under /novnc/ */
	struct net_prefix trusted_proxies[CONFIG_PROXIES_MAX];
	size_t n_trusted_proxies;
	struct box_type types[CONFIG_MAX_TYPES];
	size_t n_types;
	char *agent; /* [paddock] agent, or NULL */
	struct agent_config agents[CONFIG_MAX_AGENTS];
	size_t n_agents;
};

/* Fills *ret with the defaults, then applies path when it is not NULL.
 * If path is CONFIG_DEFAULT_PATH and that file does not exist, the defaults
 * stand; any other missing or unreadable file is an error. On failure *ret is
 * left released (nothing to free) and err says why. */
int config_load(const char *path, struct pd_config *ret, pd_error *err);

/* Frees what config_load() allocated. Accepts a zeroed struct. */
void config_release(struct pd_config *c);

/* The type called name, or NULL. */
const struct box_type *config_find_type(const struct pd_config *c, const char *name);

/* The types' names for an error text, "small, medium, large" in buf; a list
 * that does not fit ends in ", ..." (bufsz at least TEXT_LIST_MIN). */
void config_type_names(const struct pd_config *c, char *buf, size_t bufsz);

/* True if addr (family AF_INET or AF_INET6, network byte order) lies in
 * network p. An IPv4-mapped IPv6 address (::ffff:a.b.c.d) matches the IPv4
 * networks as a.b.c.d. */
bool config_net_prefix_contains(const struct net_prefix *p, int family, const void *addr);

/* The [agent NAME] section of name, or NULL. */
const struct agent_config *config_find_agent(const struct pd_config *c, const char *name);

/* The host of a base_url that config_load() accepted (http(s)://HOST[:PORT]
 * [/PATH]): lowercase, into host (bufsz > CONFIG_HOST_MAX). -EINVAL for a
 * URL that is not of that form (userinfo, IPv6, an empty host, a bad port,
 * blanks or control bytes). */
int config_url_host(const char *url, char *host, size_t hostsz);

/* Renders a type the way /paddock/types/NAME shows it:
 * "cpus 1\nmemory 2G\npids 4096\ndisk 10G\n". Returns the length. */
int config_box_type_format(const struct box_type *t, char *buf, size_t bufsz);
