/* dns.h - the boxes' DNS resolver.
 *
 * A box's /etc/resolv.conf names the bridge address; the resolver listens
 * there on port 53, UDP and TCP, in the daemon's network namespace. It
 * knows a box by the query's source address (the bridge table pins each
 * port to its box's address) and asks its hooks, per query, what to do:
 *
 *  - DNS_REFUSE: the answer is REFUSED and nothing is sent on, so a lookup
 *    of a name the box may not reach cannot carry data out;
 *  - DNS_FORWARD: the query goes upstream;
 *  - DNS_FORWARD_RECORD: the same, and the A records of the reply are
 *    handed to the record hook before the reply goes back to the box, so
 *    the addresses are allowed by the time the box reads them.
 *
 * Answers to plain UDP queries (one question, no EDNS) that are positive
 * and whole are kept per box, name, type and RD/CD bits for the smallest
 * TTL of their records (see DNS_CACHE_*), and given again with their TTLs
 * lowered by the time kept and the box's own ID and question. The policy
 * is asked for every query, cached or not, and a recorded query's
 * addresses go through the record hook before a cached answer leaves too.
 *
 * AAAA queries that are not refused get an empty answer without asking
 * upstream: boxes are IPv4-only, and an IPv6 address first would send
 * clients to a route that does not exist.
 *
 * Answers that arrive together (one turn of the resolver's loop: several
 * queries in flight, from one box or many) have their records handed over
 * in one record_many() call, so one set update serves them all; each waits
 * for that call.
 *
 * Upstream, each query leaves from a fresh socket (a random source port,
 * used for that query alone; a few are opened ahead, while the resolver has
 * nothing else to do) with a fresh random ID; the reply must come from the upstream address,
 * carry that ID and repeat the question, or it is dropped. A query that
 * gets no reply within DNS_TIMEOUT_MS is answered SERVFAIL. The message
 * itself is forwarded unchanged but for its ID (EDNS options included),
 * and so is the reply.
 *
 * Queries a box sends over TCP are forwarded over TCP. A malformed query
 * (not one question, truncated) gets FORMERR, one that is not a standard
 * query NOTIMP, one of a class other than IN REFUSED, and one whose header
 * is unreadable nothing. Queries turned away for load (see the limits
 * below) get SERVFAIL.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

#define DNS_TIMEOUT_MS 4000
/* Queries waiting for upstream at once over UDP (more: SERVFAIL). */
#define DNS_MAX_PENDING 512
/* ... of which from one box (so one box cannot starve the others). */
#define DNS_MAX_PENDING_PER_SOURCE 64
/* TCP connections served at once (more: closed at once). */
#define DNS_MAX_TCP 16
#define DNS_MAX_TCP_PER_SOURCE 4
/* The answer cache: slots (a power of two; one answer each, a new answer
 * takes the slot of the one it collides with), the longest an answer is
 * kept, the largest kept, and the most A records in one. */
#define DNS_CACHE_SLOTS 1024
#define DNS_CACHE_TTL_MAX 3600
#define DNS_CACHE_WIRE_MAX 512
#define DNS_CACHE_ADDRS 16
/* Upstream sockets opened ahead, each for one query. */
#define DNS_SPARE_SOCKETS 8
/* Answers whose records are handed over together, at most. */
#define DNS_BATCH 64

enum dns_verdict { DNS_REFUSE, DNS_FORWARD, DNS_FORWARD_RECORD };

struct dns_addr {
	uint32_t addr; /* host byte order */
	uint32_t ttl;  /* seconds, as the record says */
};

/* One answer's A records, for the record_many hook. */
struct dns_record {
	uint32_t src;	  /* the box (host byte order) */
	const char *name; /* as for record() */
	const struct dns_addr *a;
	size_t n;
	int r; /* set by the hook */
};

struct dns_hooks {
	/* What to do with a query for name (lowercase, no trailing dot; "" for
	 * the root) from src (host byte order). */
	enum dns_verdict (*decide)(void *opaque, uint32_t src, const char *name);
	/* The n (>= 1) A records of the reply to a DNS_FORWARD_RECORD query.
	 * Returns 0 once they are in force; -EACCES when the name is no longer
	 * allowed (the box gets REFUSED), another -errno on failure
	 * (SERVFAIL). */
	int (*record)(void *opaque, uint32_t src, const char *name, const struct dns_addr *a,
		      size_t n);
	/* Optional: record() for several answers at once (those the resolver
	 * has ready together), setting each one's r as record() would return
	 * it. No answer of the lot leaves before the call returns. */
	void (*record_many)(void *opaque, struct dns_record *recs, size_t n);
};

struct dns;

/* Binds listen_addr:port (host byte order; port 53 for boxes) over UDP
 * and TCP and starts serving on a thread of its own, forwarding to
 * upstream:upstream_port. hooks are called from the resolver's threads,
 * never with a lock of the resolver's held. */
int dns_start(uint32_t listen_addr, uint16_t port, uint32_t upstream, uint16_t upstream_port,
	      const struct dns_hooks *hooks, void *opaque, struct dns **ret, pd_error *err);

/* Stops serving and frees d: no hook runs once it returns. NULL is a no-op. */
void dns_stop(struct dns *d);

/* Drops what the cache keeps for src (a box that stops: its address may go
 * to another box). Any thread. NULL d is a no-op. */
void dns_forget_source(struct dns *d, uint32_t src);

/* The first IPv4 "nameserver" line of a resolv.conf file: 0 and *ret set,
 * -ENOENT when there is none, or -errno when the file cannot be read. */
int dns_resolv_conf_upstream(const char *path, uint32_t *ret);
