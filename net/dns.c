/* dns.c - the boxes' DNS resolver: decide per query, forward, record the
 * answers (see dns.h). One thread serves UDP with an epoll loop; each TCP
 * connection gets a short-lived thread of its own. ldns parses and builds
 * the messages. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ldns/ldns.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "net/dns.h"
#include "common/lock.h"
#include "common/log.h"
#include "common/util.h"

#define DNS_NAME_MAX 256
#define DNS_UDP_MAX 65535
#define DNS_HEADER 12
/* A records taken from one reply, at most. */
#define DNS_REPLY_ADDRS 64

/* What a query turned out to be. */
struct query {
	uint16_t id; /* the box's */
	uint16_t qtype;
	bool record;
	bool cacheable;	    /* a plain UDP query: its answer may be kept (see cache_put) */
	uint8_t flags;	    /* the query's RD and CD bits (byte 2 and 3 masks) */
	uint16_t qname_len; /* the question's name on the wire, from offset 12 */
	char name[DNS_NAME_MAX];
	ldns_rdf *owner; /* the question's name, for matching the reply */
};

/* An answer kept for its records' lifetime. Keyed by the box (its source
 * address: no box learns from timing what another looked up), the name,
 * the type and the query's RD and CD bits. */
struct cache_entry {
	uint32_t src;
	uint16_t qtype;
	uint8_t flags;
	char name[DNS_NAME_MAX];
	uint8_t *wire; /* the reply as upstream sent it, TTLs as of stored_ms */
	size_t len;
	/* CLOCK_MONOTONIC ms: when its TTLs were last right, and when it is
	 * dead (stored + the smallest TTL); in ms, so an entry lives its whole
	 * TTL whatever the fraction of a second it was stored at. */
	int64_t stored_ms, expires_ms;
	struct dns_addr addrs[DNS_CACHE_ADDRS]; /* its A records, TTLs as of stored_ms */
	size_t n_addrs;
};

/* An answer waiting for its records to be in force (see batch_flush()). */
struct answer {
	struct sockaddr_in to;
	uint32_t src;
	struct query q; /* owns q.owner */
	uint8_t *wire;	/* malloc'd: the reply as it will leave */
	size_t len;
	ldns_pkt *rp; /* from upstream: parsed (see reply_done()); NULL: from the cache */
	struct dns_addr addrs[DNS_REPLY_ADDRS];
	size_t n;
};

struct pending {
	int fd; /* connected to upstream; -1: slot free */
	uint16_t up_id;
	uint32_t src;
	struct sockaddr_in client;
	int64_t deadline_ms;
	struct query q;
};

struct dns {
	const struct dns_hooks *hooks;
	void *opaque;
	struct sockaddr_in upstream;
	int udp, tcp, epfd, wake, timer;
	pthread_t thread;
	bool thread_started;
	struct pending *pending; /* DNS_MAX_PENDING slots */
	size_t n_pending;
	struct answer *batch; /* DNS_BATCH: answers of this turn of the loop */
	size_t n_batch;
	int spare[DNS_SPARE_SOCKETS]; /* upstream sockets opened ahead */
	size_t n_spare;
	bool spare_tried; /* refilled since the last one was taken */

	struct pd_mutex cache_lock;
	struct cache_entry **cache; /* DNS_CACHE_SLOTS, one entry a slot */

	struct pd_mutex tcp_lock;
	pthread_cond_t tcp_done;
	int tcp_fds[DNS_MAX_TCP]; /* connections being served; -1 free */
	uint32_t tcp_srcs[DNS_MAX_TCP];
	size_t n_tcp;
	bool stopping;
};

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Random IDs from the kernel, fetched 128 at a time (one getrandom() per
 * query was a tenth of a forwarded query's cost). Per thread. */
static uint16_t random_id(void)
{
	static _Thread_local uint16_t pool[128];
	static _Thread_local size_t left;

	if (!left) {
		if (getrandom(pool, sizeof pool, 0) == (ssize_t)sizeof pool)
			left = ELEMENTSOF(pool);
		else
			return (uint16_t)(now_ms() * 2654435761u >> 7);
	}
	return pool[--left];
}

static void query_release(struct query *q)
{
	if (q->owner)
		ldns_rdf_deep_free(q->owner);
	q->owner = NULL;
}

/* A reply made here: the query's ID, flags and question, rcode, no
 * records. NULL on failure. */
static uint8_t *local_reply(const ldns_pkt *qp, ldns_pkt_rcode rcode, size_t *ret_len)
{
	ldns_pkt *r = ldns_pkt_new();
	uint8_t *wire = NULL;
	ldns_rr_list *qs = qp ? ldns_pkt_question(qp) : NULL;

	if (!r)
		return NULL;
	if (qp) {
		ldns_pkt_set_id(r, ldns_pkt_id(qp));
		ldns_pkt_set_opcode(r, ldns_pkt_get_opcode(qp));
		ldns_pkt_set_rd(r, ldns_pkt_rd(qp));
		ldns_pkt_set_cd(r, ldns_pkt_cd(qp));
	}
	ldns_pkt_set_qr(r, true);
	ldns_pkt_set_ra(r, true);
	ldns_pkt_set_rcode(r, (uint8_t)rcode);
	if (qs && ldns_rr_list_rr_count(qs) == 1) {
		ldns_rr *c = ldns_rr_clone(ldns_rr_list_rr(qs, 0));
		if (!c || !ldns_pkt_push_rr(r, LDNS_SECTION_QUESTION, c)) {
			ldns_rr_free(c);
			ldns_pkt_free(r);
			return NULL;
		}
	}
	if (ldns_pkt2wire(&wire, r, ret_len) != LDNS_STATUS_OK)
		wire = NULL;
	ldns_pkt_free(r);
	return wire;
}

/* A reply that only echoes the header of an unparsable query. */
static uint8_t *header_reply(const uint8_t *msg, size_t len, ldns_pkt_rcode rcode, size_t *ret_len)
{
	uint8_t *w;

	if (len < DNS_HEADER)
		return NULL;
	w = calloc(1, DNS_HEADER);
	if (!w)
		return NULL;
	w[0] = msg[0];
	w[1] = msg[1];
	w[2] = 0x80 | (msg[2] & 0x79); /* QR, the opcode and RD back */
	w[3] = 0x80 | (uint8_t)rcode;  /* RA */
	*ret_len = DNS_HEADER;
	return w;
}

/* Sorts out a query from src. Returns 1 with *q filled when it goes
 * upstream; 0 with a reply made here in *ret_reply (NULL: say nothing). */
static int classify(struct dns *d, uint32_t src, const uint8_t *msg, size_t len, struct query *q,
		    uint8_t **ret_reply, size_t *ret_len)
{
	ldns_pkt *qp = NULL;
	ldns_rr *qr;
	char *name;
	size_t n;
	enum dns_verdict v;
	int r = 0;

	*ret_reply = NULL;
	memset(q, 0, sizeof *q);
	if (len < DNS_HEADER || (msg[2] & 0x80)) /* too short, or a reply */
		return 0;
	if (ldns_wire2pkt(&qp, msg, len) != LDNS_STATUS_OK) {
		*ret_reply = header_reply(msg, len, LDNS_RCODE_FORMERR, ret_len);
		return 0;
	}
	if (ldns_pkt_get_opcode(qp) != LDNS_PACKET_QUERY) {
		*ret_reply = local_reply(qp, LDNS_RCODE_NOTIMPL, ret_len);
		goto out;
	}
	if (ldns_pkt_qdcount(qp) != 1 || ldns_pkt_ancount(qp) != 0 ||
	    ldns_rr_list_rr_count(ldns_pkt_question(qp)) != 1) {
		*ret_reply = local_reply(qp, LDNS_RCODE_FORMERR, ret_len);
		goto out;
	}
	qr = ldns_rr_list_rr(ldns_pkt_question(qp), 0);
	if (ldns_rr_get_class(qr) != LDNS_RR_CLASS_IN) {
		*ret_reply = local_reply(qp, LDNS_RCODE_REFUSED, ret_len);
		goto out;
	}
	name = ldns_rdf2str(ldns_rr_owner(qr));
	if (!name) {
		*ret_reply = local_reply(qp, LDNS_RCODE_SERVFAIL, ret_len);
		goto out;
	}
	n = strlen(name);
	if (n && name[n - 1] == '.')
		name[--n] = '\0';
	if (n >= sizeof q->name) {
		free(name);
		*ret_reply = local_reply(qp, LDNS_RCODE_FORMERR, ret_len);
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		q->name[i] =
		    (name[i] >= 'A' && name[i] <= 'Z') ? (char)(name[i] - 'A' + 'a') : name[i];
	q->name[n] = '\0';
	free(name);

	v = d->hooks->decide(d->opaque, src, q->name);
	if (v == DNS_REFUSE) {
		*ret_reply = local_reply(qp, LDNS_RCODE_REFUSED, ret_len);
		goto out;
	}
	if (ldns_rr_get_type(qr) == LDNS_RR_TYPE_AAAA) {
		*ret_reply = local_reply(qp, LDNS_RCODE_NOERROR, ret_len);
		goto out;
	}
	q->owner = ldns_rdf_clone(ldns_rr_owner(qr));
	if (!q->owner) {
		*ret_reply = local_reply(qp, LDNS_RCODE_SERVFAIL, ret_len);
		goto out;
	}
	q->id = ldns_pkt_id(qp);
	q->qtype = (uint16_t)ldns_rr_get_type(qr);
	q->flags = (uint8_t)((msg[2] & 0x01) | (msg[3] & 0x10));
	q->qname_len = (uint16_t)ldns_rdf_size(q->owner);
	q->record = v == DNS_FORWARD_RECORD;
	r = 1;
out:
	ldns_pkt_free(qp);
	return r;
}

/* ---- the cache ---------------------------------------------------------- */

static uint32_t cache_hash(uint32_t src, const struct query *q)
{
	uint32_t h = 2166136261u;

	for (const char *c = q->name; *c; c++)
		h = (h ^ (uint8_t)*c) * 16777619u;
	h = (h ^ q->qtype) * 16777619u;
	h = (h ^ q->flags) * 16777619u;
	return (h ^ src) * 16777619u;
}

static struct cache_entry **cache_slot(struct dns *d, uint32_t src, const struct query *q)
{
	return &d->cache[cache_hash(src, q) & (DNS_CACHE_SLOTS - 1)];
}

static bool cache_match(const struct cache_entry *c, uint32_t src, const struct query *q)
{
	return c && c->src == src && c->qtype == q->qtype && c->flags == q->flags &&
	       strcmp(c->name, q->name) == 0;
}

static void cache_entry_free(struct cache_entry *c)
{
	if (c)
		free(c->wire);
	free(c);
}

/* The smallest TTL of rp's records (UINT32_MAX when it has none). */
static uint32_t min_ttl(const ldns_pkt *rp)
{
	const ldns_rr_list *secs[] = {ldns_pkt_answer(rp), ldns_pkt_authority(rp),
				      ldns_pkt_additional(rp)};
	uint32_t m = UINT32_MAX;

	for (size_t s = 0; s < ELEMENTSOF(secs); s++)
		for (size_t i = 0; secs[s] && i < ldns_rr_list_rr_count(secs[s]); i++) {
			uint32_t t = ldns_rr_ttl(ldns_rr_list_rr(secs[s], i));
			if (t < m)
				m = t;
		}
	return m;
}

/* Keeps rp (wire: reply, len bytes) as the answer to q from src, when it
 * is a plain, whole, positive answer whose records all live at least a
 * second: NOERROR, not truncated, no EDNS, at least one answer record,
 * at most DNS_CACHE_ADDRS A records. It is kept for the smallest TTL of its
 * records (at most DNS_CACHE_TTL_MAX seconds). */
static void cache_put(struct dns *d, uint32_t src, const struct query *q, const ldns_pkt *rp,
		      const uint8_t *reply, size_t len, const struct dns_addr *addrs, size_t n)
{
	uint32_t ttl;
	struct cache_entry *c, **slot;

	if (!q->cacheable || ldns_pkt_get_rcode(rp) != LDNS_RCODE_NOERROR || ldns_pkt_tc(rp) ||
	    ldns_pkt_edns(rp) || ldns_pkt_ancount(rp) == 0 || n > DNS_CACHE_ADDRS ||
	    len > DNS_CACHE_WIRE_MAX)
		return;
	ttl = min_ttl(rp);
	if (ttl == 0 || ttl == UINT32_MAX)
		return;
	if (ttl > DNS_CACHE_TTL_MAX)
		ttl = DNS_CACHE_TTL_MAX;
	c = calloc(1, sizeof *c);
	if (!c || !(c->wire = malloc(len))) {
		free(c);
		return;
	}
	memcpy(c->wire, reply, len);
	c->len = len;
	c->src = src;
	c->qtype = q->qtype;
	c->flags = q->flags;
	memcpy(c->name, q->name, sizeof c->name);
	c->stored_ms = now_ms();
	c->expires_ms = c->stored_ms + (int64_t)ttl * 1000;
	memcpy(c->addrs, addrs, n * sizeof *addrs);
	c->n_addrs = n;
	pd_mutex_lock(&d->cache_lock);
	slot = cache_slot(d, src, q);
	cache_entry_free(*slot);
	*slot = c;
	pd_mutex_unlock(&d->cache_lock);
}

/* Entry c, which is a whole number of seconds (elapsed) older than its
 * records' TTLs say, brought up to date: every TTL lowered by elapsed, the
 * fraction of a second kept for next time. Cache lock held. */
static int cache_age(struct cache_entry *c, int64_t now)
{
	uint32_t elapsed = (uint32_t)((now - c->stored_ms) / 1000);
	ldns_pkt *rp = NULL;
	ldns_rr_list *secs[3];
	uint8_t *wire = NULL;
	size_t len = 0;

	if (ldns_wire2pkt(&rp, c->wire, c->len) != LDNS_STATUS_OK)
		return -EBADMSG;
	secs[0] = ldns_pkt_answer(rp);
	secs[1] = ldns_pkt_authority(rp);
	secs[2] = ldns_pkt_additional(rp);
	for (size_t s = 0; s < ELEMENTSOF(secs); s++)
		for (size_t i = 0; secs[s] && i < ldns_rr_list_rr_count(secs[s]); i++) {
			ldns_rr *rr = ldns_rr_list_rr(secs[s], i);
			uint32_t t = ldns_rr_ttl(rr);
			ldns_rr_set_ttl(rr, t > elapsed ? t - elapsed : 0);
		}
	if (ldns_pkt2wire(&wire, rp, &len) != LDNS_STATUS_OK || len > DNS_CACHE_WIRE_MAX) {
		ldns_pkt_free(rp);
		free(wire);
		return -ENOMEM;
	}
	ldns_pkt_free(rp);
	free(c->wire);
	c->wire = wire;
	c->len = len;
	for (size_t i = 0; i < c->n_addrs; i++)
		c->addrs[i].ttl = c->addrs[i].ttl > elapsed ? c->addrs[i].ttl - elapsed : 0;
	c->stored_ms += (int64_t)elapsed * 1000;
	return 0;
}

/* The kept answer to q from src, if any and still alive, copied into out
 * (DNS_CACHE_WIRE_MAX bytes), with its A records (TTLs as of now) in
 * addrs: its length, or 0. */
static size_t cache_get(struct dns *d, uint32_t src, const struct query *q, uint8_t *out,
			struct dns_addr *addrs, size_t *ret_n)
{
	int64_t now = now_ms();
	struct cache_entry **slot;
	size_t len = 0;

	pd_mutex_lock(&d->cache_lock);
	slot = cache_slot(d, src, q);
	if (cache_match(*slot, src, q)) {
		struct cache_entry *c = *slot;
		if (c->expires_ms <= now || (now - c->stored_ms >= 1000 && cache_age(c, now) < 0)) {
			cache_entry_free(c);
			*slot = NULL;
		} else {
			memcpy(out, c->wire, c->len);
			len = c->len;
			memcpy(addrs, c->addrs, c->n_addrs * sizeof *addrs);
			*ret_n = c->n_addrs;
		}
	}
	pd_mutex_unlock(&d->cache_lock);
	return len;
}

void dns_forget_source(struct dns *d, uint32_t src)
{
	if (!d)
		return;
	pd_mutex_lock(&d->cache_lock);
	for (size_t i = 0; i < DNS_CACHE_SLOTS; i++)
		if (d->cache[i] && d->cache[i]->src == src) {
			cache_entry_free(d->cache[i]);
			d->cache[i] = NULL;
		}
	pd_mutex_unlock(&d->cache_lock);
}

/* The reply from upstream to q (sent with ID up_id): parsed, with its A
 * records (up to DNS_REPLY_ADDRS) in addrs, *ret_n of them; NULL when reply
 * is not the answer to q (drop it and keep waiting). */
static ldns_pkt *reply_parse(const struct query *q, uint16_t up_id, const uint8_t *reply,
			     size_t len, struct dns_addr *addrs, size_t *ret_n)
{
	ldns_pkt *rp = NULL;
	ldns_rr *qr;
	ldns_rr_list *answer;
	size_t n = 0;

	*ret_n = 0;
	if (len < DNS_HEADER || ldns_wire2pkt(&rp, reply, len) != LDNS_STATUS_OK)
		return NULL;
	if (!ldns_pkt_qr(rp) || ldns_pkt_id(rp) != up_id ||
	    ldns_rr_list_rr_count(ldns_pkt_question(rp)) != 1) {
		ldns_pkt_free(rp);
		return NULL;
	}
	qr = ldns_rr_list_rr(ldns_pkt_question(rp), 0);
	if (ldns_rr_get_type(qr) != q->qtype || ldns_rr_get_class(qr) != LDNS_RR_CLASS_IN ||
	    ldns_dname_compare(ldns_rr_owner(qr), q->owner) != 0) {
		ldns_pkt_free(rp);
		return NULL;
	}
	answer = ldns_pkt_answer(rp);
	for (size_t i = 0; answer && i < ldns_rr_list_rr_count(answer); i++) {
		ldns_rr *rr = ldns_rr_list_rr(answer, i);
		ldns_rdf *a;
		uint32_t be;

		if (ldns_rr_get_type(rr) != LDNS_RR_TYPE_A ||
		    ldns_rr_get_class(rr) != LDNS_RR_CLASS_IN || ldns_rr_rd_count(rr) != 1)
			continue;
		a = ldns_rr_rdf(rr, 0);
		if (ldns_rdf_size(a) != 4 || n == DNS_REPLY_ADDRS)
			continue;
		memcpy(&be, ldns_rdf_data(a), 4);
		addrs[n++] = (struct dns_addr){.addr = ntohl(be), .ttl = ldns_rr_ttl(rr)};
	}
	*ret_n = n;
	return rp;
}

/* The message to send back for the parsed reply rp (wire: reply, len
 * bytes) to q from src, once its records' fate r is known (0: in force, or
 * none to record): reply itself with the box's ID (and kept in the cache),
 * or a reply made here when r < 0 (REFUSED for -EACCES, else SERVFAIL).
 * Frees rp. *ret_own: the result was allocated here. */
static uint8_t *reply_done(struct dns *d, uint32_t src, const struct query *q, ldns_pkt *rp,
			   uint8_t *reply, size_t len, const struct dns_addr *addrs, size_t n,
			   int r, size_t *ret_len, bool *ret_own)
{
	uint8_t *out = reply;

	*ret_own = false;
	if (r < 0) {
		ldns_pkt_set_id(rp, q->id);
		out = local_reply(rp, r == -EACCES ? LDNS_RCODE_REFUSED : LDNS_RCODE_SERVFAIL,
				  ret_len);
		*ret_own = true;
		ldns_pkt_free(rp);
		return out;
	}
	cache_put(d, src, q, rp, reply, len, addrs, n);
	ldns_pkt_free(rp);
	reply[0] = (uint8_t)(q->id >> 8);
	reply[1] = (uint8_t)q->id;
	*ret_len = len;
	return out;
}

/* One answer's records through the hooks. */
static int record_one(struct dns *d, uint32_t src, const char *name, const struct dns_addr *a,
		      size_t n)
{
	struct dns_record rec = {.src = src, .name = name, .a = a, .n = n};

	if (d->hooks->record)
		return d->hooks->record(d->opaque, src, name, a, n);
	d->hooks->record_many(d->opaque, &rec, 1);
	return rec.r;
}

/* reply_parse(), the record hook when q asks for it, reply_done(); NULL
 * when reply is not the answer to q. */
static uint8_t *finish(struct dns *d, uint32_t src, struct query *q, uint16_t up_id, uint8_t *reply,
		       size_t len, size_t *ret_len, bool *ret_own)
{
	struct dns_addr addrs[DNS_REPLY_ADDRS];
	size_t n = 0;
	ldns_pkt *rp = reply_parse(q, up_id, reply, len, addrs, &n);
	int r = 0;

	*ret_own = false;
	if (!rp)
		return NULL;
	if (n && q->record)
		r = record_one(d, src, q->name, addrs, n);
	return reply_done(d, src, q, rp, reply, len, addrs, n, r, ret_len, ret_own);
}

/* ---- UDP ---------------------------------------------------------------- */

static void send_to(int fd, const struct sockaddr_in *to, const uint8_t *msg, size_t len)
{
	if (sendto(fd, msg, len, MSG_DONTWAIT | MSG_NOSIGNAL, (const struct sockaddr *)to,
		   sizeof *to) < 0 &&
	    errno != EAGAIN)
		log_debug("dns: cannot answer: %s", strerror(errno));
}

static void pending_free(struct dns *d, struct pending *p)
{
	/* The socket is in no other process or fd: closing it takes it out
	 * of the epoll set. */
	close(p->fd);
	p->fd = -1;
	query_release(&p->q);
	d->n_pending--;
}

/* Answers the box with a reply made here and frees p. */
/* A reply made here to q: its ID and question, rcode. NULL on failure. */
static uint8_t *query_reply(const struct query *q, ldns_pkt_rcode rcode, size_t *ret_len)
{
	ldns_pkt *qp = ldns_pkt_new();
	ldns_rr *qr = qp ? ldns_rr_new() : NULL;
	ldns_rdf *owner = qr && q->owner ? ldns_rdf_clone(q->owner) : NULL;
	uint8_t *w = NULL;

	if (owner) {
		ldns_rr_set_owner(qr, owner);
		ldns_rr_set_type(qr, (ldns_rr_type)q->qtype);
		ldns_rr_set_class(qr, LDNS_RR_CLASS_IN);
		ldns_rr_set_question(qr, true);
		ldns_pkt_set_id(qp, q->id);
		ldns_pkt_set_rd(qp, true);
		if (ldns_pkt_push_rr(qp, LDNS_SECTION_QUESTION, qr))
			qr = NULL;
		w = local_reply(qp, rcode, ret_len);
	}
	ldns_rr_free(qr);
	ldns_pkt_free(qp);
	return w;
}

/* Answers the box with a reply made here and frees p. */
static void pending_fail(struct dns *d, struct pending *p, ldns_pkt_rcode rcode)
{
	size_t len = 0;
	uint8_t *w = query_reply(&p->q, rcode, &len);

	if (w)
		send_to(d->udp, &p->client, w, len);
	free(w);
	pending_free(d, p);
}

static void set_timeouts(int fd);

static int upstream_socket(struct dns *d, int type)
{
	int fd = socket(AF_INET, type | SOCK_CLOEXEC | (type == SOCK_DGRAM ? SOCK_NONBLOCK : 0), 0);

	if (fd < 0)
		return -errno;
	if (type == SOCK_STREAM)
		set_timeouts(fd); /* connect() too */
	if (connect(fd, (struct sockaddr *)&d->upstream, sizeof d->upstream) < 0) {
		int r = -errno;
		close(fd);
		return r;
	}
	return fd;
}

static void batch_flush(struct dns *d);

/* Queues an answer whose records must be in force before it leaves: q's
 * name is moved into it (q->owner NULL after), wire (len bytes) copied.
 * When there is no memory for it, the box gets SERVFAIL (rp freed). */
static void batch_push(struct dns *d, const struct sockaddr_in *to, uint32_t src, struct query *q,
		       const uint8_t *wire, size_t len, ldns_pkt *rp, const struct dns_addr *addrs,
		       size_t n)
{
	struct answer *a;
	uint8_t *copy = malloc(len);

	if (!copy) {
		size_t l = 0;
		uint8_t *w = query_reply(q, LDNS_RCODE_SERVFAIL, &l);
		if (w)
			send_to(d->udp, to, w, l);
		free(w);
		if (rp)
			ldns_pkt_free(rp);
		return;
	}
	if (d->n_batch == DNS_BATCH)
		batch_flush(d);
	a = &d->batch[d->n_batch++];
	memcpy(copy, wire, len);
	*a = (struct answer){
	    .to = *to, .src = src, .q = *q, .wire = copy, .len = len, .rp = rp, .n = n};
	memcpy(a->addrs, addrs, n * sizeof *addrs);
	q->owner = NULL;
}

static void answer_release(struct answer *a)
{
	if (a->rp)
		ldns_pkt_free(a->rp);
	a->rp = NULL;
	free(a->wire);
	a->wire = NULL;
	query_release(&a->q);
}

/* Puts the records of every queued answer in force (one record_many()
 * call: one set update for all of them), then sends each answer, or
 * REFUSED/SERVFAIL in place of those whose records failed. */
static void batch_flush(struct dns *d)
{
	struct dns_record recs[DNS_BATCH];
	size_t n = d->n_batch;

	if (!n)
		return;
	for (size_t i = 0; i < n; i++)
		recs[i] = (struct dns_record){.src = d->batch[i].src,
					      .name = d->batch[i].q.name,
					      .a = d->batch[i].addrs,
					      .n = d->batch[i].n};
	if (d->hooks->record_many)
		d->hooks->record_many(d->opaque, recs, n);
	else
		for (size_t i = 0; i < n; i++)
			recs[i].r = d->hooks->record(d->opaque, recs[i].src, recs[i].name,
						     recs[i].a, recs[i].n);
	for (size_t i = 0; i < n; i++) {
		struct answer *a = &d->batch[i];
		uint8_t *out = a->wire;
		size_t len = a->len;
		bool own = false;

		if (a->rp) {
			out = reply_done(d, a->src, &a->q, a->rp, a->wire, a->len, a->addrs, a->n,
					 recs[i].r, &len, &own);
			a->rp = NULL;
		} else if (recs[i].r < 0) {
			out = query_reply(
			    &a->q, recs[i].r == -EACCES ? LDNS_RCODE_REFUSED : LDNS_RCODE_SERVFAIL,
			    &len);
			own = true;
		}
		if (out)
			send_to(d->udp, &a->to, out, len);
		if (own)
			free(out);
		answer_release(a);
	}
	d->n_batch = 0;
}

/* Answers q (the query msg) from the cache: true when answered (or
 * queued: a recorded query's addresses are in force before the answer
 * leaves, as for a forwarded one; q's name is moved into the queue). */
static bool cache_reply(struct dns *d, uint32_t src, struct query *q, const uint8_t *msg,
			const struct sockaddr_in *from)
{
	uint8_t out[DNS_CACHE_WIRE_MAX];
	struct dns_addr addrs[DNS_CACHE_ADDRS];
	size_t n = 0, len = cache_get(d, src, q, out, addrs, &n);

	if (!len)
		return false;
	out[0] = (uint8_t)(q->id >> 8);
	out[1] = (uint8_t)q->id;
	/* The question as the box wrote it (its letters' case). */
	if (len >= (size_t)DNS_HEADER + q->qname_len)
		memcpy(out + DNS_HEADER, msg + DNS_HEADER, q->qname_len);
	if (n && q->record)
		batch_push(d, from, src, q, out, len, NULL, addrs, n);
	else
		send_to(d->udp, from, out, len);
	return true;
}

/* An upstream UDP socket: one opened ahead when there is one. */
static int upstream_udp(struct dns *d)
{
	if (d->n_spare) {
		d->spare_tried = false;
		return d->spare[--d->n_spare];
	}
	return upstream_socket(d, SOCK_DGRAM);
}

/* Opens upstream sockets ahead (the loop has nothing else to do). */
static void spare_fill(struct dns *d)
{
	while (d->n_spare < DNS_SPARE_SOCKETS) {
		int fd = upstream_socket(d, SOCK_DGRAM);
		if (fd < 0)
			break;
		d->spare[d->n_spare++] = fd;
	}
	d->spare_tried = true;
}

static void udp_query(struct dns *d, uint8_t *msg, size_t len, const struct sockaddr_in *from)
{
	struct query q;
	uint8_t *local = NULL;
	size_t local_len = 0;
	struct pending *p = NULL;
	uint32_t src = ntohl(from->sin_addr.s_addr);
	int fd;

	if (classify(d, src, msg, len, &q, &local, &local_len) == 0) {
		if (local)
			send_to(d->udp, from, local, local_len);
		free(local);
		return;
	}
	/* No authority or additional records (no EDNS): its answer can be
	 * kept and given again. */
	q.cacheable = !msg[8] && !msg[9] && !msg[10] && !msg[11];
	if (q.cacheable && cache_reply(d, src, &q, msg, from)) {
		query_release(&q);
		return;
	}
	size_t same = 0;
	for (size_t i = 0; i < DNS_MAX_PENDING; i++) {
		if (d->pending[i].fd < 0) {
			if (!p)
				p = &d->pending[i];
		} else if (d->pending[i].src == src)
			same++;
	}
	fd = p && same < DNS_MAX_PENDING_PER_SOURCE ? upstream_udp(d) : -EAGAIN;
	if (fd < 0) {
		log_debug("dns: cannot forward %s: %s", q.name, strerror(-fd));
		local = query_reply(&q, LDNS_RCODE_SERVFAIL, &local_len);
		query_release(&q);
		if (local)
			send_to(d->udp, from, local, local_len);
		free(local);
		return;
	}
	*p = (struct pending){.fd = fd,
			      .up_id = random_id(),
			      .src = src,
			      .client = *from,
			      .deadline_ms = now_ms() + DNS_TIMEOUT_MS,
			      .q = q};
	d->n_pending++;
	msg[0] = (uint8_t)(p->up_id >> 8);
	msg[1] = (uint8_t)p->up_id;
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = p};
	if (epoll_ctl(d->epfd, EPOLL_CTL_ADD, fd, &ev) < 0 || send(fd, msg, len, MSG_NOSIGNAL) < 0)
		pending_fail(d, p, LDNS_RCODE_SERVFAIL);
}

static void udp_reply(struct dns *d, struct pending *p, uint8_t *buf)
{
	ssize_t n = recv(p->fd, buf, DNS_UDP_MAX, MSG_DONTWAIT);
	struct dns_addr addrs[DNS_REPLY_ADDRS];
	size_t k = 0, out_len = 0;
	bool own;
	ldns_pkt *rp;
	uint8_t *out;

	if (n < 0) {
		if (errno != EAGAIN && errno != EINTR)
			pending_fail(d, p, LDNS_RCODE_SERVFAIL); /* e.g. ICMP refused */
		return;
	}
	rp = reply_parse(&p->q, p->up_id, buf, (size_t)n, addrs, &k);
	if (!rp)
		return; /* not the reply: keep waiting */
	if (k && p->q.record)
		/* Answered at the end of this turn, with the others. */
		batch_push(d, &p->client, p->src, &p->q, buf, (size_t)n, rp, addrs, k);
	else {
		out = reply_done(d, p->src, &p->q, rp, buf, (size_t)n, addrs, k, 0, &out_len, &own);
		if (out)
			send_to(d->udp, &p->client, out, out_len);
		if (own)
			free(out);
	}
	pending_free(d, p);
}

static void expire(struct dns *d)
{
	int64_t now = now_ms();
	uint64_t ticks;

	if (read(d->timer, &ticks, sizeof ticks) < 0) {
		/* nothing to read: spurious */
	}
	for (size_t i = 0; i < DNS_MAX_PENDING && d->n_pending; i++)
		if (d->pending[i].fd >= 0 && d->pending[i].deadline_ms <= now)
			pending_fail(d, &d->pending[i], LDNS_RCODE_SERVFAIL);
}

/* ---- TCP ---------------------------------------------------------------- */

static int read_full(int fd, uint8_t *buf, size_t len)
{
	while (len) {
		ssize_t n = read(fd, buf, len);
		if (n == 0)
			return -EPIPE;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* One length-prefixed message: *ret malloc'd. */
static int read_msg(int fd, uint8_t **ret, size_t *ret_len)
{
	uint8_t hdr[2];
	size_t len;
	uint8_t *buf;
	int r = read_full(fd, hdr, 2);

	if (r < 0)
		return r;
	len = (size_t)hdr[0] << 8 | hdr[1];
	if (len < DNS_HEADER)
		return -EBADMSG;
	buf = malloc(len);
	if (!buf)
		return -ENOMEM;
	r = read_full(fd, buf, len);
	if (r < 0) {
		free(buf);
		return r;
	}
	*ret = buf;
	*ret_len = len;
	return 0;
}

static int write_msg(int fd, const uint8_t *msg, size_t len)
{
	uint8_t hdr[2] = {(uint8_t)(len >> 8), (uint8_t)len};
	struct iovec iov[2] = {{hdr, 2}, {(void *)msg, len}};
	struct msghdr mh = {.msg_iov = iov, .msg_iovlen = 2};
	size_t want = len + 2;
	ssize_t n = sendmsg(fd, &mh, MSG_NOSIGNAL);

	return n == (ssize_t)want ? 0 : -EIO;
}

static void set_timeouts(int fd)
{
	struct timeval tv = {.tv_sec = DNS_TIMEOUT_MS / 1000,
			     .tv_usec = DNS_TIMEOUT_MS % 1000 * 1000};

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

struct tcp_conn {
	struct dns *d;
	int fd;
	size_t slot;
	uint32_t src;
};

/* Serves the queries of one connection, one after another. */
static void tcp_serve(struct tcp_conn *c)
{
	struct dns *d = c->d;

	for (;;) {
		_cleanup_free_ uint8_t *msg = NULL, *local = NULL, *reply = NULL;
		size_t len = 0, local_len = 0, reply_len = 0, out_len = 0;
		struct query q;
		uint16_t up_id;
		int up, r;
		bool own = false;
		uint8_t *out;

		if (read_msg(c->fd, &msg, &len) < 0)
			return;
		if (classify(d, c->src, msg, len, &q, &local, &local_len) == 0) {
			if (!local || write_msg(c->fd, local, local_len) < 0)
				return;
			continue;
		}
		up_id = random_id();
		msg[0] = (uint8_t)(up_id >> 8);
		msg[1] = (uint8_t)up_id;
		up = upstream_socket(d, SOCK_STREAM);
		if (up >= 0) {
			r = write_msg(up, msg, len);
			if (r >= 0)
				r = read_msg(up, &reply, &reply_len);
			close(up);
		} else
			r = up;
		out =
		    r >= 0 ? finish(d, c->src, &q, up_id, reply, reply_len, &out_len, &own) : NULL;
		if (!out) {
			out = query_reply(&q, LDNS_RCODE_SERVFAIL, &out_len);
			own = true;
		}
		query_release(&q);
		r = out ? write_msg(c->fd, out, out_len) : -ENOMEM;
		if (own)
			free(out);
		if (r < 0)
			return;
	}
}

static void *tcp_thread(void *arg)
{
	struct tcp_conn *c = arg;
	struct dns *d = c->d;

	tcp_serve(c);
	pd_mutex_lock(&d->tcp_lock);
	d->tcp_fds[c->slot] = -1;
	d->n_tcp--;
	close(c->fd);
	pthread_cond_broadcast(&d->tcp_done);
	pd_mutex_unlock(&d->tcp_lock);
	free(c);
	return NULL;
}

static void tcp_accept(struct dns *d)
{
	struct sockaddr_in from;
	socklen_t fl = sizeof from;
	int fd = accept4(d->tcp, (struct sockaddr *)&from, &fl, SOCK_CLOEXEC);
	struct tcp_conn *c;
	pthread_t t;
	pthread_attr_t attr;
	size_t slot = DNS_MAX_TCP, same = 0;
	uint32_t src;

	if (fd < 0)
		return;
	src = ntohl(from.sin_addr.s_addr);
	pd_mutex_lock(&d->tcp_lock);
	for (size_t i = 0; i < DNS_MAX_TCP; i++) {
		if (d->tcp_fds[i] < 0) {
			if (slot == DNS_MAX_TCP)
				slot = i;
		} else if (d->tcp_srcs[i] == src)
			same++;
	}
	c = slot < DNS_MAX_TCP && same < DNS_MAX_TCP_PER_SOURCE && !d->stopping
		? calloc(1, sizeof *c)
		: NULL;
	if (!c) {
		pd_mutex_unlock(&d->tcp_lock);
		close(fd);
		return;
	}
	set_timeouts(fd);
	*c = (struct tcp_conn){.d = d, .fd = fd, .slot = slot, .src = src};
	d->tcp_fds[slot] = fd;
	d->tcp_srcs[slot] = src;
	d->n_tcp++;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &attr, tcp_thread, c) != 0) {
		d->tcp_fds[slot] = -1;
		d->n_tcp--;
		close(fd);
		free(c);
	}
	pthread_attr_destroy(&attr);
	pd_mutex_unlock(&d->tcp_lock);
}

/* ---- the loop ----------------------------------------------------------- */

static void *dns_thread(void *arg)
{
	struct dns *d = arg;
	_cleanup_free_ uint8_t *buf = malloc(DNS_UDP_MAX);

	if (!buf) {
		log_error("dns: out of memory: the boxes' resolver is not serving");
		return NULL;
	}
	for (;;) {
		struct epoll_event evs[32];
		/* Nothing waiting: open upstream sockets ahead, then sleep. */
		bool fill = d->n_spare < DNS_SPARE_SOCKETS && !d->spare_tried;
		int n = epoll_wait(d->epfd, evs, ELEMENTSOF(evs), fill ? 0 : -1);

		if (n < 0 && errno != EINTR) {
			log_error("dns: epoll: %s", strerror(errno));
			return NULL;
		}
		if (n == 0 && fill)
			spare_fill(d);
		for (int i = 0; i < n; i++) {
			void *ptr = evs[i].data.ptr;
			if (ptr == &d->wake)
				return NULL;
			if (ptr == &d->timer)
				expire(d);
			else if (ptr == &d->tcp)
				tcp_accept(d);
			else if (ptr == &d->udp) {
				for (int k = 0; k < 64; k++) {
					struct sockaddr_in from;
					socklen_t fl = sizeof from;
					ssize_t m = recvfrom(d->udp, buf, DNS_UDP_MAX, MSG_DONTWAIT,
							     (struct sockaddr *)&from, &fl);
					if (m < 0)
						break;
					udp_query(d, buf, (size_t)m, &from);
				}
			} else
				udp_reply(d, ptr, buf);
		}
		batch_flush(d);
	}
}

static int bind_socket(int type, uint32_t addr, uint16_t port)
{
	struct sockaddr_in sa = {
	    .sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(addr)};
	int one = 1;
	int fd = socket(AF_INET, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	/* The bridge may carry its address a moment after it is set. */
	setsockopt(fd, IPPROTO_IP, IP_FREEBIND, &one, sizeof one);
	if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 ||
	    (type == SOCK_STREAM && listen(fd, 64) < 0)) {
		int r = -errno;
		close(fd);
		return r;
	}
	return fd;
}

static int watch(struct dns *d, int fd, void *ptr)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = ptr};

	return epoll_ctl(d->epfd, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

int dns_start(uint32_t listen_addr, uint16_t port, uint32_t upstream, uint16_t upstream_port,
	      const struct dns_hooks *hooks, void *opaque, struct dns **ret, pd_error *err)
{
	struct dns *d = calloc(1, sizeof *d);
	struct itimerspec tick = {.it_interval = {0, 250000000}, .it_value = {0, 250000000}};
	int r;

	if (!d)
		return pd_error_set(err, -ENOMEM, "out of memory");
	d->udp = d->tcp = d->epfd = d->wake = d->timer = -1;
	d->hooks = hooks;
	d->opaque = opaque;
	d->upstream = (struct sockaddr_in){.sin_family = AF_INET,
					   .sin_port = htons(upstream_port),
					   .sin_addr.s_addr = htonl(upstream)};
	pd_mutex_init(&d->tcp_lock, LOCK_RANK_LEAF, 0, "dns tcp_lock");
	pd_mutex_init(&d->cache_lock, LOCK_RANK_LEAF, 0, "dns cache_lock");
	pthread_cond_init(&d->tcp_done, NULL);
	for (size_t i = 0; i < DNS_MAX_TCP; i++)
		d->tcp_fds[i] = -1;
	d->pending = calloc(DNS_MAX_PENDING, sizeof *d->pending);
	d->cache = calloc(DNS_CACHE_SLOTS, sizeof *d->cache);
	d->batch = calloc(DNS_BATCH, sizeof *d->batch);
	if (!d->pending || !d->cache || !d->batch) {
		r = pd_error_set(err, -ENOMEM, "out of memory");
		goto fail;
	}
	for (size_t i = 0; i < DNS_MAX_PENDING; i++)
		d->pending[i].fd = -1;
	d->udp = bind_socket(SOCK_DGRAM, listen_addr, port);
	d->tcp = d->udp >= 0 ? bind_socket(SOCK_STREAM, listen_addr, port) : d->udp;
	if (d->udp < 0 || d->tcp < 0) {
		r = pd_error_set(err, d->udp < 0 ? d->udp : d->tcp,
				 "cannot listen for DNS on %u.%u.%u.%u:%u: %s", listen_addr >> 24,
				 (listen_addr >> 16) & 0xff, (listen_addr >> 8) & 0xff,
				 listen_addr & 0xff, port,
				 strerror(-(d->udp < 0 ? d->udp : d->tcp)));
		goto fail;
	}
	d->epfd = epoll_create1(EPOLL_CLOEXEC);
	d->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	d->timer = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (d->epfd < 0 || d->wake < 0 || d->timer < 0 ||
	    timerfd_settime(d->timer, 0, &tick, NULL) < 0) {
		r = pd_error_set(err, -errno, "dns: %s", strerror(errno));
		goto fail;
	}
	r = watch(d, d->udp, &d->udp);
	if (r >= 0)
		r = watch(d, d->tcp, &d->tcp);
	if (r >= 0)
		r = watch(d, d->wake, &d->wake);
	if (r >= 0)
		r = watch(d, d->timer, &d->timer);
	if (r < 0) {
		pd_error_set(err, r, "dns: epoll: %s", strerror(-r));
		goto fail;
	}
	r = -pthread_create(&d->thread, NULL, dns_thread, d);
	if (r < 0) {
		pd_error_set(err, r, "dns: cannot start a thread: %s", strerror(-r));
		goto fail;
	}
	d->thread_started = true;
	*ret = d;
	return 0;
fail:
	dns_stop(d);
	return r;
}

void dns_stop(struct dns *d)
{
	uint64_t one = 1;

	if (!d)
		return;
	if (d->thread_started) {
		if (write(d->wake, &one, sizeof one) < 0)
			log_warn("dns: cannot wake the resolver: %s", strerror(errno));
		pthread_join(d->thread, NULL);
	}
	pd_mutex_lock(&d->tcp_lock);
	d->stopping = true;
	for (size_t i = 0; i < DNS_MAX_TCP; i++)
		if (d->tcp_fds[i] >= 0)
			shutdown(d->tcp_fds[i], SHUT_RDWR);
	while (d->n_tcp)
		pd_cond_wait(&d->tcp_done, &d->tcp_lock);
	pd_mutex_unlock(&d->tcp_lock);
	for (size_t i = 0; d->pending && i < DNS_MAX_PENDING; i++)
		if (d->pending[i].fd >= 0) {
			close(d->pending[i].fd);
			query_release(&d->pending[i].q);
		}
	free(d->pending);
	for (size_t i = 0; i < d->n_batch; i++)
		answer_release(&d->batch[i]);
	free(d->batch);
	for (size_t i = 0; i < d->n_spare; i++)
		close(d->spare[i]);
	for (size_t i = 0; d->cache && i < DNS_CACHE_SLOTS; i++)
		cache_entry_free(d->cache[i]);
	free(d->cache);
	if (d->udp >= 0)
		close(d->udp);
	if (d->tcp >= 0)
		close(d->tcp);
	if (d->epfd >= 0)
		close(d->epfd);
	if (d->wake >= 0)
		close(d->wake);
	if (d->timer >= 0)
		close(d->timer);
	pd_mutex_destroy(&d->tcp_lock);
	pd_mutex_destroy(&d->cache_lock);
	pthread_cond_destroy(&d->tcp_done);
	free(d);
}

int dns_resolv_conf_upstream(const char *path, uint32_t *ret)
{
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	char line[512];
	bool tail = false; /* line is the rest of a line longer than the buffer */

	if (!f)
		return -errno;
	while (fgets(line, sizeof line, f)) {
		char word[16], addr[64];
		struct in_addr in;
		bool in_tail = tail;

		tail = !strchr(line, '\n');
		if (in_tail)
			continue;
		if (sscanf(line, " %15s %63s", word, addr) != 2 || strcmp(word, "nameserver") != 0)
			continue;
		if (inet_pton(AF_INET, addr, &in) == 1 && in.s_addr != 0) {
			*ret = ntohl(in.s_addr);
			return 0;
		}
	}
	if (ferror(f))
		return errno > 0 ? -errno : -EIO;
	return -ENOENT;
}
