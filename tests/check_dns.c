/* check_dns.c - the boxes' DNS resolver over loopback: a fake upstream
 * (a thread of this test, UDP and TCP) gives canned answers, test hooks
 * decide and record, and clients ask over UDP and TCP with messages built
 * and read by ldns. */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <ldns/ldns.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "check-tap.h"
#include "net/dns.h"

#define LOOPBACK 0x7f000001u
#define CLIENT_ADDR 0x7f000005u /* the "box": 127.0.0.5 */
#define MSG_MAX 4096
#define HELD_MSG_MAX 512
#define HOLD_MAX (DNS_MAX_PENDING + 16)
#define N_CONCURRENT 200

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static struct sockaddr_in sin4(uint32_t addr, uint16_t port)
{
	return (struct sockaddr_in){
	    .sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(addr)};
}

static bool read_exact(int fd, uint8_t *buf, size_t len)
{
	while (len) {
		ssize_t n = read(fd, buf, len);
		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			return false;
		}
		buf += n;
		len -= (size_t)n;
	}
	return true;
}

static bool write_framed(int fd, const uint8_t *msg, size_t len)
{
	uint8_t *buf = malloc(len + 2);
	bool ok;

	ck_assert_ptr_nonnull(buf);
	buf[0] = (uint8_t)(len >> 8);
	buf[1] = (uint8_t)len;
	memcpy(buf + 2, msg, len);
	ok = send(fd, buf, len + 2, MSG_NOSIGNAL) == (ssize_t)(len + 2);
	free(buf);
	return ok;
}

/* A port free for both UDP and TCP on 127.0.0.1 (at the time of asking). */
static uint16_t free_port(void)
{
	for (int tries = 0; tries < 50; tries++) {
		struct sockaddr_in sa = sin4(LOOPBACK, 0);
		socklen_t sl = sizeof sa;
		int u = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		int t = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		bool ok;

		ck_assert_int_ge(u, 0);
		ck_assert_int_ge(t, 0);
		ck_assert_int_eq(bind(u, (struct sockaddr *)&sa, sizeof sa), 0);
		ck_assert_int_eq(getsockname(u, (struct sockaddr *)&sa, &sl), 0);
		ok = bind(t, (struct sockaddr *)&sa, sizeof sa) == 0;
		close(t);
		close(u);
		if (ok)
			return ntohs(sa.sin_port);
	}
	ck_abort_msg("no free port");
	return 0;
}

/* ---- the fake upstream ---------------------------------------------------- */

struct held {
	uint8_t msg[HELD_MSG_MAX];
	size_t len;
	struct sockaddr_in from;
};

static struct upstream {
	int udp, tcp, stop[2];
	uint16_t port;
	pthread_t thread;
	pthread_mutex_t lock;
	unsigned queries, tcp_queries;
	uint16_t ids[8], ports[8]; /* of the first UDP queries */
	size_t n_ids;
	uint8_t last_query[MSG_MAX], last_reply[MSG_MAX];
	size_t last_query_len, last_reply_len;
	/* nNNN.test over UDP: held until hold_target of them have waited
	 * hold_grace_ms (or 3 s have passed since the first). */
	struct held *held;
	size_t n_held, hold_target, max_held;
	int hold_grace_ms;
	int64_t hold_since, hold_reached;
} up;

struct canned {
	uint8_t *msg[2];
	size_t len[2];
	int n;
	bool hold;
};

/* A reply with ID id to qp: its question (or question, when not NULL),
 * rcode and the answer records rrs ("@" is the question's name). */
static void add_reply(struct canned *c, const ldns_pkt *qp, uint16_t id, const char *question,
		      ldns_pkt_rcode rcode, const char *const *rrs)
{
	ldns_pkt *r = ldns_pkt_new();
	ldns_rr *qr = ldns_rr_list_rr(ldns_pkt_question(qp), 0);
	ldns_rr *q = NULL;

	ck_assert_ptr_nonnull(r);
	ldns_pkt_set_id(r, id);
	ldns_pkt_set_qr(r, true);
	ldns_pkt_set_rd(r, ldns_pkt_rd(qp));
	ldns_pkt_set_ra(r, true);
	ldns_pkt_set_rcode(r, (uint8_t)rcode);
	if (question)
		ck_assert_int_eq(ldns_rr_new_question_frm_str(&q, question, NULL, NULL),
				 LDNS_STATUS_OK);
	else
		q = ldns_rr_clone(qr);
	ck_assert(ldns_pkt_push_rr(r, LDNS_SECTION_QUESTION, q));
	for (; rrs && *rrs; rrs++) {
		ldns_rr *rr = NULL;
		ck_assert_int_eq(ldns_rr_new_frm_str(&rr, *rrs, 0, ldns_rr_owner(qr), NULL),
				 LDNS_STATUS_OK);
		ck_assert(ldns_pkt_push_rr(r, LDNS_SECTION_ANSWER, rr));
	}
	ck_assert_int_eq(ldns_pkt2wire(&c->msg[c->n], r, &c->len[c->n]), LDNS_STATUS_OK);
	c->n++;
	ldns_pkt_free(r);
}

/* The question's name: lowercase, no trailing dot. */
static void qname(const ldns_pkt *qp, char *out, size_t size)
{
	char *s = ldns_rdf2str(ldns_rr_owner(ldns_rr_list_rr(ldns_pkt_question(qp), 0)));
	size_t n;

	ck_assert_ptr_nonnull(s);
	n = strlen(s);
	if (n && s[n - 1] == '.')
		s[--n] = '\0';
	ck_assert_uint_lt(n, size);
	for (size_t i = 0; i <= n; i++)
		out[i] = (s[i] >= 'A' && s[i] <= 'Z') ? (char)(s[i] - 'A' + 'a') : s[i];
	free(s);
}

/* The canned answers to the query q. flushing: a held query's turn. */
static void upstream_answer(const uint8_t *q, size_t len, bool tcp, uint16_t port, bool flushing,
			    struct canned *c)
{
	ldns_pkt *qp = NULL;
	char name[256];
	uint16_t id;
	unsigned num;

	memset(c, 0, sizeof *c);
	if (ldns_wire2pkt(&qp, q, len) != LDNS_STATUS_OK || ldns_pkt_qdcount(qp) != 1) {
		ldns_pkt_free(qp);
		return;
	}
	id = ldns_pkt_id(qp);
	qname(qp, name, sizeof name);
	if (!flushing) {
		pthread_mutex_lock(&up.lock);
		up.queries++;
		if (tcp)
			up.tcp_queries++;
		else if (up.n_ids < ELEMENTSOF(up.ids)) {
			up.ids[up.n_ids] = id;
			up.ports[up.n_ids++] = port;
		}
		ck_assert_uint_le(len, sizeof up.last_query);
		memcpy(up.last_query, q, len);
		up.last_query_len = len;
		pthread_mutex_unlock(&up.lock);
	}

	if (strcmp(name, "a.test") == 0) {
		add_reply(
		    c, qp, id, NULL, LDNS_RCODE_NOERROR,
		    (const char *const[]){"@ 30 IN A 192.0.2.1", "@ 30 IN A 192.0.2.2", NULL});
	} else if (strcmp(name, "cname.test") == 0) {
		add_reply(c, qp, id, NULL, LDNS_RCODE_NOERROR,
			  (const char *const[]){"@ 60 IN CNAME a.test.",
						"a.test. 30 IN A 192.0.2.1", NULL});
	} else if (strcmp(name, "short.test") == 0) {
		add_reply(c, qp, id, NULL, LDNS_RCODE_NOERROR,
			  (const char *const[]){"@ 2 IN A 192.0.2.4", NULL});
	} else if (strcmp(name, "plain.example") == 0) {
		add_reply(c, qp, id, NULL, LDNS_RCODE_NOERROR,
			  (const char *const[]){"@ 300 IN A 192.0.2.3", NULL});
	} else if (strcmp(name, "bad-id.test") == 0) {
		add_reply(c, qp, id ^ 0x5a5a, NULL, LDNS_RCODE_NOERROR,
			  (const char *const[]){"@ 30 IN A 198.51.100.66", NULL});
		add_reply(c, qp, id, NULL, LDNS_RCODE_NOERROR,
			  (const char *const[]){"@ 30 IN A 192.0.2.9", NULL});
	} else if (strcmp(name, "other-question.test") == 0) {
		add_reply(c, qp, id, "a.test. IN A", LDNS_RCODE_NOERROR,
			  (const char *const[]){"a.test. 30 IN A 192.0.2.1", NULL});
	} else if (strcmp(name, "slow.test") == 0) {
		/* never answered */
	} else if (sscanf(name, "n%u.test", &num) == 1) {
		char rr[64];
		snprintf(rr, sizeof rr, "@ 30 IN A 10.0.%u.%u", num / 256, num % 256);
		if (!tcp && !flushing)
			c->hold = true;
		else
			add_reply(c, qp, id, NULL, LDNS_RCODE_NOERROR,
				  (const char *const[]){rr, NULL});
	} else {
		add_reply(c, qp, id, NULL, LDNS_RCODE_NXDOMAIN, NULL);
	}
	if (c->n) {
		pthread_mutex_lock(&up.lock);
		memcpy(up.last_reply, c->msg[c->n - 1], c->len[c->n - 1]);
		up.last_reply_len = c->len[c->n - 1];
		pthread_mutex_unlock(&up.lock);
	}
	ldns_pkt_free(qp);
}

static void canned_free(struct canned *c)
{
	for (int i = 0; i < c->n; i++)
		free(c->msg[i]);
}

static void upstream_udp(void)
{
	uint8_t buf[MSG_MAX];

	for (;;) {
		struct sockaddr_in from;
		socklen_t fl = sizeof from;
		ssize_t n =
		    recvfrom(up.udp, buf, sizeof buf, MSG_DONTWAIT, (struct sockaddr *)&from, &fl);
		struct canned c;

		if (n < 0)
			return;
		upstream_answer(buf, (size_t)n, false, ntohs(from.sin_port), false, &c);
		if (c.hold && up.n_held < HOLD_MAX && (size_t)n <= HELD_MSG_MAX) {
			struct held *h = &up.held[up.n_held++];
			memcpy(h->msg, buf, (size_t)n);
			h->len = (size_t)n;
			h->from = from;
			if (up.n_held == 1)
				up.hold_since = now_ms();
			if (up.n_held == up.hold_target)
				up.hold_reached = now_ms();
			if (up.n_held > up.max_held)
				up.max_held = up.n_held;
		}
		for (int i = 0; i < c.n; i++)
			sendto(up.udp, c.msg[i], c.len[i], 0, (struct sockaddr *)&from,
			       sizeof from);
		canned_free(&c);
	}
}

static void upstream_flush(void)
{
	int64_t now = now_ms();
	bool all_in;

	pthread_mutex_lock(&up.lock);
	all_in = up.n_held >= up.hold_target && now - up.hold_reached >= up.hold_grace_ms;
	pthread_mutex_unlock(&up.lock);
	if (!up.n_held || (!all_in && now - up.hold_since < 3000))
		return;
	for (size_t i = 0; i < up.n_held; i++) {
		struct canned c;
		upstream_answer(up.held[i].msg, up.held[i].len, false, 0, true, &c);
		for (int k = 0; k < c.n; k++)
			sendto(up.udp, c.msg[k], c.len[k], 0, (struct sockaddr *)&up.held[i].from,
			       sizeof up.held[i].from);
		canned_free(&c);
	}
	up.n_held = 0;
}

/* One connection: length-prefixed queries until the resolver hangs up. */
static void upstream_tcp(void)
{
	int fd = accept4(up.tcp, NULL, NULL, SOCK_CLOEXEC);
	struct timeval tv = {.tv_sec = 2};
	uint8_t hdr[2], buf[MSG_MAX];

	if (fd < 0)
		return;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	while (read_exact(fd, hdr, 2)) {
		size_t len = (size_t)hdr[0] << 8 | hdr[1];
		struct canned c;

		if (len > sizeof buf || !read_exact(fd, buf, len))
			break;
		upstream_answer(buf, len, true, 0, false, &c);
		for (int i = 0; i < c.n; i++)
			write_framed(fd, c.msg[i], c.len[i]);
		canned_free(&c);
	}
	close(fd);
}

static void *upstream_thread(void *arg)
{
	(void)arg;
	for (;;) {
		struct pollfd pfd[3] = {
		    {.fd = up.udp, .events = POLLIN},
		    {.fd = up.tcp, .events = POLLIN},
		    {.fd = up.stop[0], .events = POLLIN},
		};

		poll(pfd, 3, 50);
		if (pfd[2].revents)
			return NULL;
		if (pfd[0].revents & POLLIN)
			upstream_udp();
		upstream_flush();
		if (pfd[1].revents & POLLIN)
			upstream_tcp();
	}
}

static void upstream_start(void)
{
	struct sockaddr_in sa = sin4(LOOPBACK, 0);
	socklen_t sl = sizeof sa;
	int big = 1 << 20;

	memset(&up, 0, sizeof up);
	pthread_mutex_init(&up.lock, NULL);
	up.held = calloc(HOLD_MAX, sizeof *up.held);
	ck_assert_ptr_nonnull(up.held);
	up.hold_target = HOLD_MAX;
	for (int tries = 0;; tries++) {
		ck_assert_int_lt(tries, 50);
		sa = sin4(LOOPBACK, 0);
		up.udp = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		up.tcp = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		ck_assert_int_ge(up.udp, 0);
		ck_assert_int_ge(up.tcp, 0);
		ck_assert_int_eq(bind(up.udp, (struct sockaddr *)&sa, sizeof sa), 0);
		ck_assert_int_eq(getsockname(up.udp, (struct sockaddr *)&sa, &sl), 0);
		if (bind(up.tcp, (struct sockaddr *)&sa, sizeof sa) == 0)
			break;
		close(up.udp);
		close(up.tcp);
	}
	ck_assert_int_eq(listen(up.tcp, 16), 0);
	up.port = ntohs(sa.sin_port);
	/* Room for N_CONCURRENT queries at once (needs root; harmless if not). */
	if (setsockopt(up.udp, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof big) < 0)
		setsockopt(up.udp, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
	ck_assert_int_eq(pipe2(up.stop, O_CLOEXEC), 0);
	ck_assert_int_eq(pthread_create(&up.thread, NULL, upstream_thread, NULL), 0);
}

static void upstream_stop(void)
{
	ck_assert_int_eq(write(up.stop[1], "x", 1), 1);
	pthread_join(up.thread, NULL);
	close(up.udp);
	close(up.tcp);
	close(up.stop[0]);
	close(up.stop[1]);
	free(up.held);
	pthread_mutex_destroy(&up.lock);
}

static unsigned upstream_queries(void)
{
	unsigned n;

	pthread_mutex_lock(&up.lock);
	n = up.queries;
	pthread_mutex_unlock(&up.lock);
	return n;
}

/* ---- the hooks ------------------------------------------------------------ */

static struct hook_state {
	pthread_mutex_t lock;
	int record_result;   /* what record() returns */
	int record_delay_ms; /* how long record() takes before it is done */
	unsigned decides, records, after_stop, mismatches;
	bool stopped;
	bool refuse_all; /* decide() refuses every name */
	uint32_t decide_src, record_src;
	char decided[256], recorded[256];
	struct dns_addr addrs[8];
	size_t n_addrs;
	/* record_many(): its calls, the most answers in one, names nNNN.test
	 * with NNN odd refused when refuse_odd, and done[NNN] set once the
	 * call holding nNNN.test's answer is over. */
	unsigned many_calls, many_max;
	bool refuse_odd;
	bool done[N_CONCURRENT];
} hk;

static enum dns_verdict test_decide(void *opaque, uint32_t src, const char *name)
{
	struct hook_state *h = opaque;
	size_t n = strlen(name);

	pthread_mutex_lock(&h->lock);
	h->decides++;
	h->decide_src = src;
	snprintf(h->decided, sizeof h->decided, "%s", name);
	if (h->stopped)
		h->after_stop++;
	pthread_mutex_unlock(&h->lock);
	if (strstr(name, "deny") || h->refuse_all)
		return DNS_REFUSE;
	if (n >= 5 && strcmp(name + n - 5, ".test") == 0)
		return DNS_FORWARD_RECORD;
	return DNS_FORWARD;
}

/* record() without the delay, lock held. */
static int record_locked(struct hook_state *h, uint32_t src, const char *name,
			 const struct dns_addr *a, size_t n)
{
	unsigned num;

	h->records++;
	h->record_src = src;
	snprintf(h->recorded, sizeof h->recorded, "%s", name);
	h->n_addrs = n < ELEMENTSOF(h->addrs) ? n : ELEMENTSOF(h->addrs);
	memcpy(h->addrs, a, h->n_addrs * sizeof *a);
	if (sscanf(name, "n%u.test", &num) == 1 && (n != 1 || a[0].addr != (0x0a000000u | num)))
		h->mismatches++;
	if (h->stopped)
		h->after_stop++;
	if (h->refuse_odd && sscanf(name, "n%u.test", &num) == 1 && num % 2)
		return -EACCES;
	return h->record_result;
}

static void test_record_many(void *opaque, struct dns_record *recs, size_t n)
{
	struct hook_state *h = opaque;
	unsigned num;

	if (h->record_delay_ms)
		usleep((useconds_t)h->record_delay_ms * 1000);
	pthread_mutex_lock(&h->lock);
	h->many_calls++;
	if (n > h->many_max)
		h->many_max = (unsigned)n;
	for (size_t i = 0; i < n; i++)
		recs[i].r = record_locked(h, recs[i].src, recs[i].name, recs[i].a, recs[i].n);
	for (size_t i = 0; i < n; i++)
		if (sscanf(recs[i].name, "n%u.test", &num) == 1 && num < N_CONCURRENT)
			h->done[num] = true;
	pthread_mutex_unlock(&h->lock);
}

static int test_record(void *opaque, uint32_t src, const char *name, const struct dns_addr *a,
		       size_t n)
{
	struct hook_state *h = opaque;
	int r;

	if (h->record_delay_ms)
		usleep((useconds_t)h->record_delay_ms * 1000);
	pthread_mutex_lock(&h->lock);
	r = record_locked(h, src, name, a, n);
	pthread_mutex_unlock(&h->lock);
	return r;
}

static const struct dns_hooks hooks = {.decide = test_decide, .record = test_record};
static const struct dns_hooks hooks_many = {.decide = test_decide, .record_many = test_record_many};
static const struct dns_hooks *use_hooks = &hooks;

/* ---- the resolver under test ---------------------------------------------- */

static struct dns *resolver;
static uint16_t resolver_port;

static int start_resolver(uint16_t upstream_port, struct dns **ret, uint16_t *ret_port)
{
	for (int tries = 0; tries < 20; tries++) {
		uint16_t port = free_port();
		pd_error err;
		int r;

		pd_error_clear(&err);
		r = dns_start(LOOPBACK, port, LOOPBACK, upstream_port, use_hooks, &hk, ret, &err);
		if (r == -EADDRINUSE)
			continue;
		if (r == 0)
			*ret_port = port;
		return r;
	}
	return -EADDRINUSE;
}

static void setup(void)
{
	memset(&hk, 0, sizeof hk);
	pthread_mutex_init(&hk.lock, NULL);
	upstream_start();
	ck_assert_int_eq(start_resolver(up.port, &resolver, &resolver_port), 0);
}

static void setup_many(void)
{
	use_hooks = &hooks_many;
	setup();
}

static void teardown(void)
{
	use_hooks = &hooks;
	dns_stop(resolver);
	resolver = NULL;
	upstream_stop();
}

static struct hook_state hooks_now(void)
{
	struct hook_state s;

	pthread_mutex_lock(&hk.lock);
	s = hk;
	pthread_mutex_unlock(&hk.lock);
	return s;
}

/* ---- clients -------------------------------------------------------------- */

static uint8_t *query_wire_edns(const char *name, ldns_rr_type type, ldns_rr_class cls, uint16_t id,
				bool edns, size_t *ret_len)
{
	ldns_pkt *p = NULL;
	uint8_t *w = NULL;

	ck_assert_int_eq(ldns_pkt_query_new_frm_str(&p, name, type, cls, LDNS_RD), LDNS_STATUS_OK);
	ldns_pkt_set_id(p, id);
	if (edns)
		ldns_pkt_set_edns_udp_size(p, 1232); /* an OPT record, to be passed on as is */
	ck_assert_int_eq(ldns_pkt2wire(&w, p, ret_len), LDNS_STATUS_OK);
	ldns_pkt_free(p);
	return w;
}

static uint8_t *query_wire(const char *name, ldns_rr_type type, ldns_rr_class cls, uint16_t id,
			   size_t *ret_len)
{
	return query_wire_edns(name, type, cls, id, true, ret_len);
}

/* A UDP socket from address from (a "box"), connected to port. */
static int udp_client_from(uint16_t port, uint32_t from)
{
	struct sockaddr_in me = sin4(from, 0), to = sin4(LOOPBACK, port);
	int big = 1 << 20;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	ck_assert_int_ge(fd, 0);
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof big) < 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&me, sizeof me), 0);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&to, sizeof to), 0);
	return fd;
}

static int udp_client(uint16_t port)
{
	return udp_client_from(port, CLIENT_ADDR);
}

static int tcp_client_from(uint16_t port, uint32_t from)
{
	struct sockaddr_in me = sin4(from, 0), to = sin4(LOOPBACK, port);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&me, sizeof me), 0);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&to, sizeof to), 0);
	return fd;
}

static int tcp_client(uint16_t port)
{
	return tcp_client_from(port, CLIENT_ADDR);
}

static bool readable(int fd, int timeout_ms)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};

	return poll(&p, 1, timeout_ms) == 1;
}

/* One datagram within timeout_ms: its length, or -1. */
static ssize_t udp_recv(int fd, uint8_t *buf, size_t cap, int timeout_ms)
{
	if (!readable(fd, timeout_ms))
		return -1;
	return recv(fd, buf, cap, 0);
}

/* One length-prefixed message within timeout_ms: its length, or -1 (none,
 * or the connection closed). */
static ssize_t tcp_recv(int fd, uint8_t *buf, size_t cap, int timeout_ms)
{
	uint8_t hdr[2];
	size_t len;
	struct timeval tv = {.tv_sec = timeout_ms / 1000, .tv_usec = timeout_ms % 1000 * 1000};

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	if (!read_exact(fd, hdr, 2))
		return -1;
	len = (size_t)hdr[0] << 8 | hdr[1];
	ck_assert_uint_le(len, cap);
	return read_exact(fd, buf, len) ? (ssize_t)len : -1;
}

static ldns_pkt *parse(const uint8_t *buf, ssize_t len)
{
	ldns_pkt *p = NULL;

	ck_assert_int_gt(len, 0);
	ck_assert_int_eq(ldns_wire2pkt(&p, buf, (size_t)len), LDNS_STATUS_OK);
	ck_assert(ldns_pkt_qr(p));
	return p;
}

/* Asks name (type) over UDP from address from, with or without EDNS; the
 * reply, parsed; its raw bytes in raw (MSG_MAX) when not NULL. */
static ldns_pkt *ask_from(const char *name, ldns_rr_type type, uint16_t id, uint32_t from,
			  bool edns, uint8_t *raw, size_t *raw_len)
{
	int fd = udp_client_from(resolver_port, from);
	size_t len;
	uint8_t *q = query_wire_edns(name, type, LDNS_RR_CLASS_IN, id, edns, &len);
	uint8_t buf[MSG_MAX];
	ssize_t n;
	ldns_pkt *p;

	ck_assert_int_eq(send(fd, q, len, 0), (ssize_t)len);
	n = udp_recv(fd, buf, sizeof buf, 3000);
	ck_assert_msg(n > 0, "no reply to %s", name);
	p = parse(buf, n);
	ck_assert_uint_eq(ldns_pkt_id(p), id);
	if (raw) {
		memcpy(raw, buf, (size_t)n);
		*raw_len = (size_t)n;
	}
	free(q);
	close(fd);
	return p;
}

/* Asks name over UDP from the box's address, with EDNS; the reply, parsed,
 * with the client's ID. */
static ldns_pkt *ask(const char *name, ldns_rr_type type, uint16_t id)
{
	return ask_from(name, type, id, CLIENT_ADDR, true, NULL, NULL);
}

/* The same for an A query, with or without EDNS. */
static ldns_pkt *ask_plain(const char *name, uint16_t id, uint32_t from, bool edns, uint8_t *raw,
			   size_t *raw_len)
{
	return ask_from(name, LDNS_RR_TYPE_A, id, from, edns, raw, raw_len);
}

static ldns_pkt *ask_tcp(int fd, const char *name, ldns_rr_type type, uint16_t id)
{
	size_t len;
	uint8_t *q = query_wire(name, type, LDNS_RR_CLASS_IN, id, &len);
	uint8_t buf[MSG_MAX];
	ssize_t n;
	ldns_pkt *p;

	ck_assert(write_framed(fd, q, len));
	n = tcp_recv(fd, buf, sizeof buf, 3000);
	ck_assert_msg(n > 0, "no reply to %s over TCP", name);
	p = parse(buf, n);
	ck_assert_uint_eq(ldns_pkt_id(p), id);
	free(q);
	return p;
}

/* The question of p is name (as asked) type. */
static void expect_question(const ldns_pkt *p, const char *name, ldns_rr_type type)
{
	ldns_rr_list *qs = ldns_pkt_question(p);
	ldns_rdf *want = ldns_dname_new_frm_str(name);
	ldns_rr *q;

	ck_assert_uint_eq(ldns_rr_list_rr_count(qs), 1);
	q = ldns_rr_list_rr(qs, 0);
	ck_assert_int_eq(ldns_rr_get_type(q), type);
	ck_assert_int_eq(ldns_dname_compare(ldns_rr_owner(q), want), 0);
	ldns_rdf_deep_free(want);
}

/* The A records of p's answer are exactly want (NULL-terminated), in order. */
static void expect_a(const ldns_pkt *p, const char *const *want)
{
	ldns_rr_list *an = ldns_pkt_answer(p);
	size_t k = 0;

	for (size_t i = 0; i < ldns_rr_list_rr_count(an); i++) {
		ldns_rr *rr = ldns_rr_list_rr(an, i);
		char got[INET_ADDRSTRLEN];

		if (ldns_rr_get_type(rr) != LDNS_RR_TYPE_A)
			continue;
		ck_assert_ptr_nonnull(want[k]);
		ck_assert_uint_eq(ldns_rdf_size(ldns_rr_rdf(rr, 0)), 4);
		inet_ntop(AF_INET, ldns_rdf_data(ldns_rr_rdf(rr, 0)), got, sizeof got);
		ck_assert_str_eq(got, want[k]);
		k++;
	}
	ck_assert_ptr_null(want[k]);
}

static uint32_t ip(const char *s)
{
	struct in_addr in;

	ck_assert_int_eq(inet_pton(AF_INET, s, &in), 1);
	return ntohl(in.s_addr);
}

/* ---- core ----------------------------------------------------------------- */

START_TEST(test_allowed_a)
{
	int fd = udp_client(resolver_port);
	size_t len;
	uint8_t *q = query_wire("A.Test.", LDNS_RR_TYPE_A, LDNS_RR_CLASS_IN, 0x1234, &len);
	uint8_t buf[MSG_MAX];
	ssize_t n;
	ldns_pkt *p;
	struct hook_state s;

	/* record() takes a while: the reply must still wait for it. */
	hk.record_delay_ms = 150;
	ck_assert_int_eq(send(fd, q, len, 0), (ssize_t)len);
	n = udp_recv(fd, buf, sizeof buf, 3000);
	s = hooks_now();
	ck_assert_uint_eq(s.records, 1);
	ck_assert_str_eq(s.recorded, "a.test");
	ck_assert_uint_eq(s.record_src, CLIENT_ADDR);
	ck_assert_uint_eq(s.n_addrs, 2);
	ck_assert_uint_eq(s.addrs[0].addr, ip("192.0.2.1"));
	ck_assert_uint_eq(s.addrs[0].ttl, 30);
	ck_assert_uint_eq(s.addrs[1].addr, ip("192.0.2.2"));
	ck_assert_uint_eq(s.addrs[1].ttl, 30);
	ck_assert_uint_eq(s.decides, 1);
	ck_assert_str_eq(s.decided, "a.test");
	ck_assert_uint_eq(s.decide_src, CLIENT_ADDR);

	p = parse(buf, n);
	ck_assert_uint_eq(ldns_pkt_id(p), 0x1234);
	ck_assert_int_eq(ldns_pkt_get_rcode(p), LDNS_RCODE_NOERROR);
	expect_question(p, "a.test.", LDNS_RR_TYPE_A);
	expect_a(p, (const char *const[]){"192.0.2.1", "192.0.2.2", NULL});
	ldns_pkt_free(p);

	/* Passed on unchanged but for the ID, both ways (EDNS, case and all). */
	pthread_mutex_lock(&up.lock);
	ck_assert_uint_eq(up.queries, 1);
	ck_assert_uint_eq(up.last_query_len, len);
	ck_assert_mem_eq(up.last_query + 2, q + 2, len - 2);
	ck_assert_uint_eq(up.last_reply_len, (size_t)n);
	ck_assert_mem_eq(up.last_reply + 2, buf + 2, (size_t)n - 2);
	pthread_mutex_unlock(&up.lock);
	free(q);
	close(fd);
}
END_TEST

START_TEST(test_cname_forward_root)
{
	ldns_pkt *p = ask("cname.test", LDNS_RR_TYPE_A, 1);
	struct hook_state s = hooks_now();

	/* Every A record of the answer is handed over, under the name asked. */
	ck_assert_int_eq(ldns_pkt_get_rcode(p), LDNS_RCODE_NOERROR);
	ck_assert_uint_eq(ldns_pkt_ancount(p), 2);
	expect_a(p, (const char *const[]){"192.0.2.1", NULL});
	ck_assert_uint_eq(s.records, 1);
	ck_assert_str_eq(s.recorded, "cname.test");
	ck_assert_uint_eq(s.n_addrs, 1);
	ck_assert_uint_eq(s.addrs[0].addr, ip("192.0.2.1"));
	ldns_pkt_free(p);

	/* DNS_FORWARD: answered, nothing recorded. */
	p = ask("plain.example", LDNS_RR_TYPE_A, 2);
	expect_a(p, (const char *const[]){"192.0.2.3", NULL});
	ck_assert_uint_eq(hooks_now().records, 1);
	ck_assert_str_eq(hooks_now().decided, "plain.example");
	ldns_pkt_free(p);

	/* The root is "" to decide(); upstream's NXDOMAIN comes back as is. */
	p = ask(".", LDNS_RR_TYPE_NS, 3);
	ck_assert_str_eq(hooks_now().decided, "");
	ck_assert_int_eq(ldns_pkt_get_rcode(p), LDNS_RCODE_NXDOMAIN);
	expect_question(p, ".", LDNS_RR_TYPE_NS);
	ldns_pkt_free(p);
	ck_assert_uint_eq(upstream_queries(), 3);
}
END_TEST

START_TEST(test_fresh_upstream_id_and_port)
{
	bool ids_differ = false, ports_differ = false;

	for (int i = 0; i < 4; i++)
		ldns_pkt_free(ask("a.test", LDNS_RR_TYPE_A, 7));
	pthread_mutex_lock(&up.lock);
	ck_assert_uint_eq(up.n_ids, 4);
	for (size_t i = 0; i < up.n_ids; i++) {
		ids_differ |= up.ids[i] != 7;
		ports_differ |= up.ports[i] != up.ports[0];
	}
	pthread_mutex_unlock(&up.lock);
	ck_assert_msg(ids_differ, "the client's ID went upstream");
	ck_assert_msg(ports_differ, "one source port for every query");
}
END_TEST

START_TEST(test_refused)
{
	const char *names[] = {"deny.test", "x.deny.example", "Deny.Example."};

	for (size_t i = 0; i < ELEMENTSOF(names); i++) {
		ldns_pkt *p = ask(names[i], LDNS_RR_TYPE_A, (uint16_t)(100 + i));
		ck_assert_int_eq(ldns_pkt_get_rcode(p), LDNS_RCODE_REFUSED);
		expect_question(p, names[i], LDNS_RR_TYPE_A);
		ck_assert_uint_eq(ldns_pkt_ancount(p), 0);
		ldns_pkt_free(p);
	}
	ck_assert_uint_eq(hooks_now().decides, 3);
	ck_assert_uint_eq(hooks_now().records, 0);
	ck_assert_uint_eq(upstream_queries(), 0);
}
END_TEST

START_TEST(test_aaaa_empty)
{
	ldns_pkt *p = ask("a.test", LDNS_RR_TYPE_AAAA, 9);

	ck_assert_int_eq(ldns_pkt_get_rcode(p), LDNS_RCODE_NOERROR);
	expect_question(p, "a.test", LDNS_RR_TYPE_AAAA);
	ck_assert_uint_eq(ldns_pkt_ancount(p), 0);
	ldns_pkt_free(p);
	/* Refusing comes first. */
	p = ask("deny.test", LDNS_RR_TYPE_AAAA, 10);
	ck_assert_int_eq(ldns_pkt_get_rcode(p), LDNS_RCODE_REFUSED);
	ldns_pkt_free(p);
	ck_assert_uint_eq(upstream_queries(), 0);
	ck_assert_uint_eq(hooks_now().records, 0);
}
END_TEST

/* ---- malformed queries ---------------------------------------------------- */

/* Sends msg over UDP: the reply, parsed (NULL when none came in 300 ms). */
static ldns_pkt *send_raw(const uint8_t *msg, size_t len)
{
	int fd = udp_client(resolver_port);
	uint8_t buf[MSG_MAX];
	ssize_t n;

	ck_assert_int_eq(send(fd, msg, len, 0), (ssize_t)len);
	n = udp_recv(fd, buf, sizeof buf, 300);
	close(fd);
	return n > 0 ? parse(buf, n) : NULL;
}

START_TEST(test_non_in_class)
{
	size_t len;
	uint8_t *q = query_wire("version.bind", LDNS_RR_TYPE_TXT, LDNS_RR_CLASS_CH, 0x0c0c, &len);
	ldns_pkt *p = send_raw(q, len);

	/* Never passed on; REFUSED (or FORMERR) rather than an answer. */
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(ldns_pkt_id(p), 0x0c0c);
	ck_assert_msg(ldns_pkt_get_rcode(p) == LDNS_RCODE_REFUSED ||
			  ldns_pkt_get_rcode(p) == LDNS_RCODE_FORMERR,
		      "rcode %d", ldns_pkt_get_rcode(p));
	ck_assert_uint_eq(ldns_pkt_ancount(p), 0);
	ldns_pkt_free(p);
	free(q);
	ck_assert_uint_eq(upstream_queries(), 0);
}
END_TEST

/* A query for a.test with ID id and opcode op, and the record extra (if
 * not NULL) added to section sec. */
static uint8_t *odd_query(uint16_t id, ldns_pkt_opcode op, ldns_pkt_section sec, const char *extra,
			  size_t *ret_len)
{
	ldns_pkt *qp = NULL;
	ldns_rr *rr = NULL;
	uint8_t *w = NULL;

	ck_assert_int_eq(
	    ldns_pkt_query_new_frm_str(&qp, "a.test", LDNS_RR_TYPE_A, LDNS_RR_CLASS_IN, LDNS_RD),
	    LDNS_STATUS_OK);
	ldns_pkt_set_id(qp, id);
	ldns_pkt_set_opcode(qp, op);
	if (extra) {
		ldns_status st = sec == LDNS_SECTION_QUESTION
				     ? ldns_rr_new_question_frm_str(&rr, extra, NULL, NULL)
				     : ldns_rr_new_frm_str(&rr, extra, 0, NULL, NULL);
		ck_assert_int_eq(st, LDNS_STATUS_OK);
		ck_assert(ldns_pkt_push_rr(qp, sec, rr));
	}
	ck_assert_int_eq(ldns_pkt2wire(&w, qp, ret_len), LDNS_STATUS_OK);
	ldns_pkt_free(qp);
	return w;
}

START_TEST(test_opcode_notimp)
{
	size_t len;
	uint8_t *w = odd_query(0x0b0b, LDNS_PACKET_STATUS, LDNS_SECTION_ANY, NULL, &len);
	ldns_pkt *p = send_raw(w, len);

	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(ldns_pkt_id(p), 0x0b0b);
	ck_assert_int_eq(ldns_pkt_get_rcode(p), LDNS_RCODE_NOTIMPL);
	ldns_pkt_free(p);
	free(w);
	ck_assert_uint_eq(upstream_queries(), 0);
	ck_assert_uint_eq(hooks_now().decides, 0);
}
END_TEST

static void expect_formerr(const uint8_t *msg, size_t len, uint16_t id)
{
	ldns_pkt *p = send_raw(msg, len);

	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(ldns_pkt_id(p), id);
	ck_assert_int_eq(ldns_pkt_get_rcode(p), LDNS_RCODE_FORMERR);
	ck_assert_uint_eq(ldns_pkt_ancount(p), 0);
	ldns_pkt_free(p);
}

START_TEST(test_formerr)
{
	/* One question that runs past the end of the message. */
	const uint8_t truncated[] = {0x42, 0x42, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0, 63, 'a', 'b'};
	/* No question at all. */
	const uint8_t empty[] = {0x43, 0x43, 0x01, 0x00, 0, 0, 0, 0, 0, 0, 0, 0};
	size_t len;
	uint8_t *w;

	/* Two questions. */
	w = odd_query(0x0a0a, LDNS_PACKET_QUERY, LDNS_SECTION_QUESTION, "b.test. IN A", &len);
	expect_formerr(w, len, 0x0a0a);
	free(w);
	/* A query carrying an answer. */
	w = odd_query(0x0d0d, LDNS_PACKET_QUERY, LDNS_SECTION_ANSWER, "a.test. 30 IN A 192.0.2.1",
		      &len);
	expect_formerr(w, len, 0x0d0d);
	free(w);
	expect_formerr(truncated, sizeof truncated, 0x4242);
	expect_formerr(empty, sizeof empty, 0x4343);
	ck_assert_uint_eq(upstream_queries(), 0);
	ck_assert_uint_eq(hooks_now().decides, 0);
}
END_TEST

START_TEST(test_unreadable_ignored)
{
	const uint8_t five[] = {0x12, 0x34, 0x01, 0x00, 0x00};
	size_t len;
	uint8_t *q = query_wire("a.test", LDNS_RR_TYPE_A, LDNS_RR_CLASS_IN, 0x5151, &len);
	ldns_pkt *p;

	/* No header: nothing to answer. */
	ck_assert_ptr_null(send_raw(five, sizeof five));
	ck_assert_ptr_null(send_raw(five, 0));
	/* A reply sent to the resolver is not answered (no loops). */
	q[2] |= 0x80;
	ck_assert_ptr_null(send_raw(q, len));
	free(q);
	ck_assert_uint_eq(upstream_queries(), 0);
	ck_assert_uint_eq(hooks_now().decides, 0);
	/* And the resolver still serves. */
	p = ask("a.test", LDNS_RR_TYPE_A, 0x5252);
	expect_a(p, (const char *const[]){"192.0.2.1", "192.0.2.2", NULL});
	ldns_pkt_free(p);
}
END_TEST

/* ---- the cache ------------------------------------------------------------ */

/* The TTL of p's first answer record. */
static uint32_t first_ttl(const ldns_pkt *p)
{
	ck_assert_uint_ge(ldns_rr_list_rr_count(ldns_pkt_answer(p)), 1);
	return ldns_rr_ttl(ldns_rr_list_rr(ldns_pkt_answer(p), 0));
}

START_TEST(test_cache_hit)
{
	uint8_t raw[MSG_MAX];
	size_t raw_len;
	ldns_pkt *p = ask_plain("a.test", 0x0101, CLIENT_ADDR, false, NULL, NULL);
	struct hook_state s;

	expect_a(p, (const char *const[]){"192.0.2.1", "192.0.2.2", NULL});
	ldns_pkt_free(p);
	/* Again, in other letters: from the cache, with this query's ID and
	 * question as written, the policy asked and the addresses recorded
	 * again before the answer. */
	hk.record_delay_ms = 100;
	p = ask_plain("A.tEsT", 0x0202, CLIENT_ADDR, false, raw, &raw_len);
	s = hooks_now();
	ck_assert_uint_eq(upstream_queries(), 1);
	ck_assert_int_eq(ldns_pkt_get_rcode(p), LDNS_RCODE_NOERROR);
	expect_a(p, (const char *const[]){"192.0.2.1", "192.0.2.2", NULL});
	ck_assert_uint_ge(raw_len, 12 + 8);
	ck_assert_mem_eq(raw + 12,
			 "\x01"
			 "A\x04tEsT\x00",
			 8);
	ck_assert_uint_eq(s.decides, 2);
	ck_assert_uint_eq(s.records, 2);
	ck_assert_uint_eq(s.n_addrs, 2);
	ck_assert_uint_eq(s.addrs[1].addr, ip("192.0.2.2"));
	ck_assert_uint_le(s.addrs[1].ttl, 30);
	ldns_pkt_free(p);
}
END_TEST

START_TEST(test_cache_record_refused)
{
	ldns_pkt *p = ask_plain("a.test", 1, CLIENT_ADDR, false, NULL, NULL);

	ldns_pkt_free(p);
	/* A cached answer whose addresses can no longer be allowed is not
	 * given. */
	hk.record_result = -EACCES;
	p = ask_plain("a.test", 2, CLIENT_ADDR, false, NULL, NULL);
	ck_assert_int_eq(ldns_pkt_get_rcode(p), LDNS_RCODE_REFUSED);
	ck_assert_uint_eq(ldns_pkt_ancount(p), 0);
	ldns_pkt_free(p);
	ck_assert_uint_eq(upstream_queries(), 1);
	ck_assert_uint_eq(hooks_now().records, 2);
}
END_TEST

START_TEST(test_cache_refused_name)
{
	ldns_pkt *p = ask_plain("a.test", 1, CLIENT_ADDR, false, NULL, NULL);

	ldns_pkt_free(p);
	/* The policy is asked before the cache: a kept answer to a name no
	 * longer allowed is not given. */
	pthread_mutex_lock(&hk.lock);
	hk.refuse_all = true;
	pthread_mutex_unlock(&hk.lock);
	p = ask_plain("a.test", 2, CLIENT_ADDR, false, NULL, NULL);
	ck_assert_int_eq(ldns_pkt_get_rcode(p), LDNS_RCODE_REFUSED);
	ck_assert_uint_eq(ldns_pkt_ancount(p), 0);
	ldns_pkt_free(p);
	ck_assert_uint_eq(upstream_queries(), 1);
}
END_TEST

START_TEST(test_cache_per_box)
{
	ldns_pkt *p = ask_plain("a.test", 1, CLIENT_ADDR, false, NULL, NULL);

	ldns_pkt_free(p);
	/* Another box does not get this box's answer (nor learn from its
	 * timing that it was asked). */
	p = ask_plain("a.test", 2, CLIENT_ADDR + 1, false, NULL, NULL);
	ldns_pkt_free(p);
	ck_assert_uint_eq(upstream_queries(), 2);
	p = ask_plain("a.test", 3, CLIENT_ADDR, false, NULL, NULL);
	ldns_pkt_free(p);
	ck_assert_uint_eq(upstream_queries(), 2);
	/* Forgotten when the box goes. */
	dns_forget_source(resolver, CLIENT_ADDR);
	p = ask_plain("a.test", 4, CLIENT_ADDR, false, NULL, NULL);
	expect_a(p, (const char *const[]){"192.0.2.1", "192.0.2.2", NULL});
	ldns_pkt_free(p);
	ck_assert_uint_eq(upstream_queries(), 3);
	p = ask_plain("a.test", 5, CLIENT_ADDR + 1, false, NULL, NULL);
	ldns_pkt_free(p);
	ck_assert_uint_eq(upstream_queries(), 3);
}
END_TEST

START_TEST(test_cache_not_kept)
{
	/* With EDNS (passed on as is), negative answers, and answers that
	 * failed: always upstream. */
	const struct {
		const char *name;
		bool edns;
	} cases[] = {{"a.test", true}, {"nothing.test", false}, {"AAAA-none.example", false}};

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		unsigned before = upstream_queries();
		for (int k = 0; k < 2; k++) {
			ldns_pkt *p = ask_plain(cases[i].name, (uint16_t)(i * 2 + k), CLIENT_ADDR,
						cases[i].edns, NULL, NULL);
			ldns_pkt_free(p);
		}
		ck_assert_msg(upstream_queries() == before + 2, "%s was kept", cases[i].name);
	}
	hk.record_result = -EIO;
	ldns_pkt_free(ask_plain("cname.test", 9, CLIENT_ADDR, false, NULL, NULL));
	hk.record_result = 0;
	ldns_pkt_free(ask_plain("cname.test", 10, CLIENT_ADDR, false, NULL, NULL));
	ck_assert_uint_eq(upstream_queries(), 8);
}
END_TEST

START_TEST(test_cache_ttl)
{
	ldns_pkt *p = ask_plain("short.test", 1, CLIENT_ADDR, false, NULL, NULL);
	int64_t t0 = now_ms();

	ck_assert_uint_eq(first_ttl(p), 2);
	ldns_pkt_free(p);
	usleep(1100 * 1000);
	/* Kept, its TTL lowered by the time it was kept. */
	p = ask_plain("short.test", 2, CLIENT_ADDR, false, NULL, NULL);
	if (now_ms() - t0 < 1900) {
		ck_assert_uint_eq(upstream_queries(), 1);
		ck_assert_uint_eq(first_ttl(p), 1);
		ck_assert_uint_eq(hooks_now().addrs[0].ttl, 1);
	}
	ldns_pkt_free(p);
	usleep(1200 * 1000);
	/* Gone once its TTL is up. */
	unsigned before = upstream_queries();
	p = ask_plain("short.test", 3, CLIENT_ADDR, false, NULL, NULL);
	ck_assert_uint_eq(first_ttl(p), 2);
	ldns_pkt_free(p);
	ck_assert_uint_eq(upstream_queries(), before + 1);
}
END_TEST

/* ---- record() and upstream failures ---------------------------------------- */

/* record() returns result for name's addresses: the box gets rcode and
 * no answer. */
static void expect_record_failure(int result, const char *name, ldns_pkt_rcode rcode)
{
	ldns_pkt *p;

	hk.record_result = result;
	p = ask(name, LDNS_RR_TYPE_A, 0x2121);
	ck_assert_int_eq(ldns_pkt_get_rcode(p), rcode);
	expect_question(p, name, LDNS_RR_TYPE_A);
	ck_assert_uint_eq(ldns_pkt_ancount(p), 0);
	ldns_pkt_free(p);
	ck_assert_uint_eq(hooks_now().records, 1);
}

START_TEST(test_record_refuses)
{
	expect_record_failure(-EACCES, "a.test", LDNS_RCODE_REFUSED);
}
END_TEST

START_TEST(test_record_fails)
{
	expect_record_failure(-EIO, "cname.test", LDNS_RCODE_SERVFAIL);
}
END_TEST

START_TEST(test_wrong_id_ignored)
{
	ldns_pkt *p = ask("bad-id.test", LDNS_RR_TYPE_A, 0x3131);
	struct hook_state s = hooks_now();

	ck_assert_int_eq(ldns_pkt_get_rcode(p), LDNS_RCODE_NOERROR);
	expect_a(p, (const char *const[]){"192.0.2.9", NULL});
	ldns_pkt_free(p);
	ck_assert_uint_eq(s.records, 1);
	ck_assert_uint_eq(s.n_addrs, 1);
	ck_assert_uint_eq(s.addrs[0].addr, ip("192.0.2.9"));
	ck_assert_uint_eq(upstream_queries(), 1);
}
END_TEST

/* slow.test never gets a reply; other-question.test gets one that repeats
 * another question. Both: SERVFAIL once DNS_TIMEOUT_MS is up, not before. */
START_TEST(test_timeouts)
{
	const char *names[] = {"slow.test", "other-question.test"};
	int fds[2];
	int64_t start = now_ms();

	for (int i = 0; i < 2; i++) {
		size_t len;
		uint8_t *q = query_wire(names[i], LDNS_RR_TYPE_A, LDNS_RR_CLASS_IN,
					(uint16_t)(0x6000 + i), &len);
		fds[i] = udp_client(resolver_port);
		ck_assert_int_eq(send(fds[i], q, len, 0), (ssize_t)len);
		free(q);
	}
	for (int i = 0; i < 2; i++) {
		uint8_t buf[MSG_MAX];
		ssize_t n = udp_recv(fds[i], buf, sizeof buf, DNS_TIMEOUT_MS + 3000);
		int64_t took = now_ms() - start;
		ldns_pkt *p;

		ck_assert_msg(n > 0, "no reply to %s", names[i]);
		p = parse(buf, n);
		ck_assert_uint_eq(ldns_pkt_id(p), 0x6000 + i);
		ck_assert_int_eq(ldns_pkt_get_rcode(p), LDNS_RCODE_SERVFAIL);
		expect_question(p, names[i], LDNS_RR_TYPE_A);
		ck_assert_uint_eq(ldns_pkt_ancount(p), 0);
		ck_assert_int_ge(took, DNS_TIMEOUT_MS - 100);
		ck_assert_int_le(took, DNS_TIMEOUT_MS + 2000);
		ldns_pkt_free(p);
		close(fds[i]);
	}
	ck_assert_uint_eq(hooks_now().records, 0);
	ck_assert_uint_eq(upstream_queries(), 2);
}
END_TEST

START_TEST(test_upstream_down)
{
	struct dns *d = NULL;
	uint16_t port, save = resolver_port;
	int64_t start;
	ldns_pkt *p;
	int fd;

	/* Nothing listens on the upstream port: SERVFAIL at once. */
	ck_assert_int_eq(start_resolver(free_port(), &d, &port), 0);
	resolver_port = port;
	start = now_ms();
	p = ask("a.test", LDNS_RR_TYPE_A, 0x7171);
	ck_assert_int_eq(ldns_pkt_get_rcode(p), LDNS_RCODE_SERVFAIL);
	ldns_pkt_free(p);
	fd = tcp_client(port);
	p = ask_tcp(fd, "a.test", LDNS_RR_TYPE_A, 0x7272);
	ck_assert_int_eq(ldns_pkt_get_rcode(p), LDNS_RCODE_SERVFAIL);
	ldns_pkt_free(p);
	ck_assert_int_lt(now_ms() - start, 1500);
	close(fd);
	resolver_port = save;
	dns_stop(d);
	ck_assert_uint_eq(hooks_now().records, 0);
}
END_TEST

/* ---- TCP ------------------------------------------------------------------ */

START_TEST(test_tcp)
{
	int fd = tcp_client(resolver_port);
	ldns_pkt *p;
	struct hook_state s;

	/* Two queries on one connection, each forwarded over TCP. */
	hk.record_delay_ms = 100;
	p = ask_tcp(fd, "A.Test.", LDNS_RR_TYPE_A, 1);
	s = hooks_now();
	ck_assert_uint_eq(s.records, 1);
	ck_assert_str_eq(s.recorded, "a.test");
	ck_assert_uint_eq(s.record_src, CLIENT_ADDR);
	ck_assert_uint_eq(s.n_addrs, 2);
	ck_assert_uint_eq(s.addrs[1].ttl, 30);
	ck_assert_int_eq(ldns_pkt_get_rcode(p), LDNS_RCODE_NOERROR);
	expect_a(p, (const char *const[]){"192.0.2.1", "192.0.2.2", NULL});
	ldns_pkt_free(p);
	p = ask_tcp(fd, "cname.test", LDNS_RR_TYPE_A, 2);
	expect_a(p, (const char *const[]){"192.0.2.1", NULL});
	ldns_pkt_free(p);
	ck_assert_uint_eq(hooks_now().records, 2);
	pthread_mutex_lock(&up.lock);
	ck_assert_uint_eq(up.tcp_queries, 2);
	ck_assert_uint_eq(up.queries, 2);
	pthread_mutex_unlock(&up.lock);

	/* Refused and AAAA over TCP: answered here. */
	p = ask_tcp(fd, "deny.test", LDNS_RR_TYPE_A, 3);
	ck_assert_int_eq(ldns_pkt_get_rcode(p), LDNS_RCODE_REFUSED);
	ldns_pkt_free(p);
	p = ask_tcp(fd, "a.test", LDNS_RR_TYPE_AAAA, 4);
	ck_assert_int_eq(ldns_pkt_get_rcode(p), LDNS_RCODE_NOERROR);
	ck_assert_uint_eq(ldns_pkt_ancount(p), 0);
	ldns_pkt_free(p);
	ck_assert_uint_eq(upstream_queries(), 2);

	/* A reply to another question: SERVFAIL, and the connection goes on. */
	p = ask_tcp(fd, "other-question.test", LDNS_RR_TYPE_A, 5);
	ck_assert_int_eq(ldns_pkt_get_rcode(p), LDNS_RCODE_SERVFAIL);
	ldns_pkt_free(p);
	ck_assert_uint_eq(hooks_now().records, 2);
	p = ask_tcp(fd, "plain.example", LDNS_RR_TYPE_A, 6);
	expect_a(p, (const char *const[]){"192.0.2.3", NULL});
	ldns_pkt_free(p);
	close(fd);
}
END_TEST

START_TEST(test_tcp_short_message)
{
	int fd = tcp_client(resolver_port);
	const uint8_t five[] = {0, 5, 0x12, 0x34, 0x01, 0x00, 0x00};
	uint8_t buf[16];
	ldns_pkt *p;

	/* A message shorter than a header: the connection is closed. */
	ck_assert_int_eq(send(fd, five, sizeof five, MSG_NOSIGNAL), (ssize_t)sizeof five);
	ck_assert(readable(fd, 2000));
	ck_assert_int_le(recv(fd, buf, sizeof buf, 0), 0);
	close(fd);
	ck_assert_uint_eq(hooks_now().decides, 0);
	p = ask("a.test", LDNS_RR_TYPE_A, 0x4141);
	ck_assert_int_eq(ldns_pkt_get_rcode(p), LDNS_RCODE_NOERROR);
	ldns_pkt_free(p);
}
END_TEST

/* DNS_MAX_TCP connections are served at once; one more is closed at once,
 * and a slot frees when a connection ends. */
/* DNS_MAX_TCP connections at once in all, DNS_MAX_TCP_PER_SOURCE from one
 * box: beyond either the connection is closed unanswered; a slot frees
 * when a connection ends. */
START_TEST(test_tcp_limit)
{
	const unsigned per = DNS_MAX_TCP_PER_SOURCE, boxes = DNS_MAX_TCP / DNS_MAX_TCP_PER_SOURCE;
	int fds[DNS_MAX_TCP], extra;
	uint8_t buf[16];
	bool served = false;

	/* One box fills its own share: its next connection is refused while
	 * another box is still served. */
	for (unsigned i = 0; i < per; i++) {
		fds[i] = tcp_client(resolver_port);
		ldns_pkt_free(ask_tcp(fds[i], "deny.test", LDNS_RR_TYPE_A, (uint16_t)i));
	}
	extra = tcp_client(resolver_port);
	ck_assert(readable(extra, 2000));
	ck_assert_int_le(recv(extra, buf, sizeof buf, 0), 0);
	close(extra);
	/* The other boxes fill the rest. */
	for (unsigned i = per; i < DNS_MAX_TCP; i++) {
		fds[i] = tcp_client_from(resolver_port, CLIENT_ADDR + 1 + (i / per) % boxes);
		ldns_pkt_free(ask_tcp(fds[i], "deny.test", LDNS_RR_TYPE_A, (uint16_t)i));
	}
	extra = tcp_client_from(resolver_port, CLIENT_ADDR + 100);
	ck_assert(readable(extra, 2000));
	ck_assert_int_le(recv(extra, buf, sizeof buf, 0), 0);
	close(extra);

	close(fds[0]);
	for (int tries = 0; tries < 20 && !served; tries++) {
		size_t len;
		uint8_t *q = query_wire("deny.test", LDNS_RR_TYPE_A, LDNS_RR_CLASS_IN, 99, &len);
		uint8_t reply[MSG_MAX];

		extra = tcp_client(resolver_port);
		served =
		    write_framed(extra, q, len) && tcp_recv(extra, reply, sizeof reply, 500) > 0;
		free(q);
		close(extra);
		if (!served)
			usleep(50000);
	}
	ck_assert_msg(served, "no slot after a connection ended");
	for (int i = 1; i < DNS_MAX_TCP; i++)
		close(fds[i]);
	ck_assert_uint_eq(upstream_queries(), 0);
}
END_TEST

/* ---- load ----------------------------------------------------------------- */

/* Sends queries nNNN.test with IDs 1000 + NNN, NNN from first to
 * first + n - 1, on fd; the upstream holds them until hold_target are in,
 * and then grace_ms more. */
static void send_held(int fd, unsigned first, unsigned n, size_t hold_target, int grace_ms)
{
	pthread_mutex_lock(&up.lock);
	up.hold_target = hold_target;
	up.hold_grace_ms = grace_ms;
	pthread_mutex_unlock(&up.lock);
	for (unsigned i = first; i < first + n; i++) {
		char name[32];
		size_t len;
		uint8_t *q;

		snprintf(name, sizeof name, "n%u.test", i);
		q = query_wire(name, LDNS_RR_TYPE_A, LDNS_RR_CLASS_IN, (uint16_t)(1000 + i), &len);
		ck_assert_int_eq(send(fd, q, len, 0), (ssize_t)len);
		free(q);
		if (i % 50 == 49)
			usleep(20000); /* bursts the listening socket can hold */
	}
}

/* Receives on any of fds until total replies are in or 10 s pass; each is
 * checked and counted by its ID (1000 + NNN): seen[NNN], *servfail. */
static unsigned collect(const int *fds, size_t nfds, unsigned total, bool *seen, unsigned *servfail)
{
	unsigned got = 0;
	int64_t deadline = now_ms() + 10000;

	while (got < total && now_ms() < deadline) {
		struct pollfd p[16];

		for (size_t k = 0; k < nfds; k++)
			p[k] = (struct pollfd){.fd = fds[k], .events = POLLIN};
		if (poll(p, nfds, 1000) <= 0)
			continue;
		for (size_t k = 0; k < nfds; k++) {
			uint8_t buf[MSG_MAX];
			ssize_t n;
			ldns_pkt *pk;
			unsigned i;
			char name[32], addr[32];

			if (!(p[k].revents & POLLIN))
				continue;
			n = recv(fds[k], buf, sizeof buf, MSG_DONTWAIT);
			if (n <= 0)
				continue;
			pk = parse(buf, n);
			i = (unsigned)ldns_pkt_id(pk) - 1000;
			ck_assert_uint_lt(i, total);
			ck_assert_msg(!seen[i], "two replies to ID %u", 1000 + i);
			seen[i] = true;
			got++;
			snprintf(name, sizeof name, "n%u.test", i);
			expect_question(pk, name, LDNS_RR_TYPE_A);
			if (ldns_pkt_get_rcode(pk) == LDNS_RCODE_SERVFAIL)
				(*servfail)++;
			else {
				ck_assert_int_eq(ldns_pkt_get_rcode(pk), LDNS_RCODE_NOERROR);
				snprintf(addr, sizeof addr, "10.0.%u.%u", i / 256, i % 256);
				expect_a(pk, (const char *const[]){addr, NULL});
			}
			ldns_pkt_free(pk);
		}
	}
	return got;
}

/* N_CONCURRENT queries from several boxes wait upstream at once (the fake
 * upstream holds them until all are in); every reply goes back to its own
 * box and ID. */
START_TEST(test_concurrent_udp)
{
	enum { BOXES = 4 };
	int fds[BOXES];
	bool seen[N_CONCURRENT] = {false};
	unsigned servfail = 0, per = N_CONCURRENT / BOXES;

	ck_assert_uint_le(per, DNS_MAX_PENDING_PER_SOURCE);
	for (unsigned k = 0; k < BOXES; k++) {
		fds[k] = udp_client_from(resolver_port, CLIENT_ADDR + k);
		send_held(fds[k], k * per, per, N_CONCURRENT, 0);
	}
	ck_assert_uint_eq(collect(fds, BOXES, N_CONCURRENT, seen, &servfail), N_CONCURRENT);
	ck_assert_uint_eq(servfail, 0);
	pthread_mutex_lock(&up.lock);
	ck_assert_uint_eq(up.max_held, N_CONCURRENT);
	ck_assert_uint_eq(up.queries, N_CONCURRENT);
	pthread_mutex_unlock(&up.lock);
	ck_assert_uint_eq(hooks_now().records, N_CONCURRENT);
	ck_assert_uint_eq(hooks_now().mismatches, 0);
	for (unsigned k = 0; k < BOXES; k++)
		close(fds[k]);
}
END_TEST

/* Answers that arrive together have their records handed over together
 * (record_many), each with its own verdict, and none leaves before the
 * call that holds it is over: 40 names (two boxes) whose answers upstream
 * sends at once, the odd ones refused by the hook. */
START_TEST(test_record_many_batch)
{
	enum { N = 40 };
	int fds[2] = {udp_client_from(resolver_port, CLIENT_ADDR),
		      udp_client_from(resolver_port, CLIENT_ADDR + 1)};
	unsigned got = 0, refused = 0;
	int64_t deadline = now_ms() + 10000;
	bool seen[N] = {false};

	hk.record_delay_ms = 30;
	hk.refuse_odd = true;
	send_held(fds[0], 0, N / 2, N, 0);
	send_held(fds[1], N / 2, N / 2, N, 0);
	while (got < N && now_ms() < deadline) {
		struct pollfd p[2] = {{.fd = fds[0], .events = POLLIN},
				      {.fd = fds[1], .events = POLLIN}};
		if (poll(p, 2, 1000) <= 0)
			continue;
		for (int k = 0; k < 2; k++) {
			uint8_t buf[MSG_MAX];
			char name[32], addr[32];
			ssize_t n;
			ldns_pkt *pk;
			unsigned i;
			bool done;

			if (!(p[k].revents & POLLIN) ||
			    (n = recv(fds[k], buf, sizeof buf, MSG_DONTWAIT)) <= 0)
				continue;
			pk = parse(buf, n);
			i = (unsigned)ldns_pkt_id(pk) - 1000;
			ck_assert_uint_lt(i, N);
			ck_assert_msg(!seen[i], "two replies to ID %u", 1000 + i);
			seen[i] = true;
			got++;
			pthread_mutex_lock(&hk.lock);
			done = hk.done[i];
			pthread_mutex_unlock(&hk.lock);
			ck_assert_msg(done, "n%u.test answered before its records were in force",
				      i);
			snprintf(name, sizeof name, "n%u.test", i);
			expect_question(pk, name, LDNS_RR_TYPE_A);
			if (i % 2) {
				ck_assert_int_eq(ldns_pkt_get_rcode(pk), LDNS_RCODE_REFUSED);
				ck_assert_uint_eq(ldns_pkt_ancount(pk), 0);
				refused++;
			} else {
				ck_assert_int_eq(ldns_pkt_get_rcode(pk), LDNS_RCODE_NOERROR);
				snprintf(addr, sizeof addr, "10.0.%u.%u", i / 256, i % 256);
				expect_a(pk, (const char *const[]){addr, NULL});
			}
			ldns_pkt_free(pk);
		}
	}
	ck_assert_uint_eq(got, N);
	ck_assert_uint_eq(refused, N / 2);
	ck_assert_uint_eq(hooks_now().records, N);
	ck_assert_uint_eq(hooks_now().mismatches, 0);
	/* Upstream sent the answers at once: some came in one call. */
	ck_assert_uint_gt(hooks_now().many_max, 1);
	ck_assert_uint_lt(hooks_now().many_calls, N);
	close(fds[0]);
	close(fds[1]);
}
END_TEST

/* Through record_many too, a cached answer whose records are refused now
 * gets REFUSED, and one allowed again is given from the cache. */
START_TEST(test_record_many_cache)
{
	ldns_pkt *p = ask_plain("a.test", 1, CLIENT_ADDR, false, NULL, NULL);

	ck_assert_int_eq(ldns_pkt_get_rcode(p), LDNS_RCODE_NOERROR);
	ldns_pkt_free(p);
	pthread_mutex_lock(&hk.lock);
	hk.record_result = -EACCES;
	pthread_mutex_unlock(&hk.lock);
	p = ask_plain("a.test", 2, CLIENT_ADDR, false, NULL, NULL);
	ck_assert_int_eq(ldns_pkt_get_rcode(p), LDNS_RCODE_REFUSED);
	ck_assert_uint_eq(ldns_pkt_ancount(p), 0);
	ldns_pkt_free(p);
	pthread_mutex_lock(&hk.lock);
	hk.record_result = 0;
	pthread_mutex_unlock(&hk.lock);
	p = ask_plain("a.test", 3, CLIENT_ADDR, false, NULL, NULL);
	ck_assert_int_eq(ldns_pkt_get_rcode(p), LDNS_RCODE_NOERROR);
	expect_a(p, (const char *const[]){"192.0.2.1", "192.0.2.2", NULL});
	ldns_pkt_free(p);
	ck_assert_uint_eq(upstream_queries(), 1);
	ck_assert_uint_eq(hooks_now().many_calls, 3);
	ck_assert_uint_eq(hooks_now().records, 3);
}
END_TEST

/* One box with DNS_MAX_PENDING_PER_SOURCE queries waiting upstream gets
 * SERVFAIL at once for more; the waiting ones are still answered. */
START_TEST(test_pending_per_box)
{
	const unsigned extra = 8, total = DNS_MAX_PENDING_PER_SOURCE + extra;
	int fd = udp_client(resolver_port);
	bool seen[DNS_MAX_PENDING_PER_SOURCE + 8] = {false};
	unsigned servfail = 0;

	send_held(fd, 0, total, DNS_MAX_PENDING_PER_SOURCE, 500);
	ck_assert_uint_eq(collect(&fd, 1, total, seen, &servfail), total);
	ck_assert_uint_eq(servfail, extra);
	ck_assert_uint_eq(upstream_queries(), DNS_MAX_PENDING_PER_SOURCE);
	ck_assert_uint_eq(hooks_now().mismatches, 0);
	close(fd);
}
END_TEST

/* Beyond DNS_MAX_PENDING queries waiting upstream from all boxes, the
 * rest get SERVFAIL at once; the waiting ones are still answered. */
START_TEST(test_pending_limit)
{
	enum { BOXES = DNS_MAX_PENDING / DNS_MAX_PENDING_PER_SOURCE };
	const unsigned per = DNS_MAX_PENDING_PER_SOURCE, extra = 8;
	const unsigned total = DNS_MAX_PENDING + extra;
	int fds[BOXES + 1];
	bool seen[DNS_MAX_PENDING + 8] = {false};
	unsigned servfail = 0;

	/* The upstream waits a while once all are in: time for the extra ones
	 * (from one more box) to be turned away. */
	for (unsigned k = 0; k <= BOXES; k++) {
		fds[k] = udp_client_from(resolver_port, CLIENT_ADDR + 10 + k);
		send_held(fds[k], k * per, k < BOXES ? per : extra, DNS_MAX_PENDING, 500);
	}
	ck_assert_uint_eq(collect(fds, BOXES + 1, total, seen, &servfail), total);
	ck_assert_uint_eq(servfail, extra);
	for (unsigned i = DNS_MAX_PENDING; i < total; i++)
		ck_assert(seen[i]);
	ck_assert_uint_eq(upstream_queries(), DNS_MAX_PENDING);
	ck_assert_uint_eq(hooks_now().mismatches, 0);
	for (unsigned k = 0; k <= BOXES; k++)
		close(fds[k]);
}
END_TEST

/* ---- lifecycle ------------------------------------------------------------ */

START_TEST(test_stop_with_idle_tcp)
{
	int fd = tcp_client(resolver_port);
	int udp = udp_client(resolver_port);
	size_t len;
	uint8_t *q = query_wire("a.test", LDNS_RR_TYPE_A, LDNS_RR_CLASS_IN, 0x0101, &len);
	uint8_t buf[MSG_MAX];
	int64_t start;
	ldns_pkt *p;

	/* The connection's thread is serving: it answered once. */
	p = ask_tcp(fd, "a.test", LDNS_RR_TYPE_A, 0x0100);
	ldns_pkt_free(p);
	start = now_ms();
	dns_stop(resolver);
	resolver = NULL;
	ck_assert_int_lt(now_ms() - start, 1000);
	pthread_mutex_lock(&hk.lock);
	hk.stopped = true;
	pthread_mutex_unlock(&hk.lock);

	/* The connection is closed; nothing answers and no hook runs. */
	ck_assert(readable(fd, 1000));
	ck_assert_int_le(recv(fd, buf, sizeof buf, MSG_DONTWAIT), 0);
	write_framed(fd, q, len);
	send(udp, q, len, 0);
	ck_assert_int_lt(udp_recv(udp, buf, sizeof buf, 300), 0);
	ck_assert_uint_eq(hooks_now().after_stop, 0);
	ck_assert_uint_eq(hooks_now().records, 1);
	free(q);
	close(fd);
	close(udp);
	dns_stop(NULL);
}
END_TEST

START_TEST(test_start_port_busy)
{
	uint16_t port = free_port();
	struct sockaddr_in sa = sin4(LOOPBACK, port);
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct dns *d = NULL;
	pd_error err;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
	pd_error_clear(&err);
	ck_assert_int_eq(dns_start(LOOPBACK, port, LOOPBACK, up.port, &hooks, &hk, &d, &err),
			 -EADDRINUSE);
	ck_assert_ptr_null(d);
	ck_assert_int_eq(err.code, -EADDRINUSE);
	ck_assert_msg(strstr(err.msg, "cannot listen for DNS on 127.0.0.1:") != NULL, "%s",
		      err.msg);
	close(fd);
}
END_TEST

/* ---- resolv.conf ---------------------------------------------------------- */

static int resolv(const char *text, uint32_t *ret)
{
	char path[] = "/tmp/check_dns.XXXXXX";
	int fd = mkstemp(path);
	int r;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	r = dns_resolv_conf_upstream(path, ret);
	unlink(path);
	return r;
}

START_TEST(test_resolv_conf)
{
	uint32_t a = 0;
	char *long_line;

	ck_assert_int_eq(resolv("# nameserver 10.9.9.9\n"
				"#nameserver 10.9.9.8\n"
				"; nameserver 10.9.9.7\n"
				"search example.org\n"
				"   nameserver\t192.0.2.53   # ours\n"
				"nameserver 192.0.2.54\n",
				&a),
			 0);
	ck_assert_uint_eq(a, ip("192.0.2.53"));
	ck_assert_int_eq(resolv("nameserver ::1\nnameserver 2001:db8::53\nnameserver 10.1.2.3\n"
				"nameserver 10.1.2.4\n",
				&a),
			 0);
	ck_assert_uint_eq(a, ip("10.1.2.3"));
	/* No line without its address, no prefix of a word. */
	ck_assert_int_eq(resolv("nameserver\nnameservers 10.3.3.3\nnameserver 10.4.4.4\n", &a), 0);
	ck_assert_uint_eq(a, ip("10.4.4.4"));

	a = 42;
	ck_assert_int_eq(resolv("search example.org\noptions ndots:2\nnameserver ::1\n", &a),
			 -ENOENT);
	ck_assert_int_eq(resolv("", &a), -ENOENT);
	ck_assert_uint_eq(a, 42);
	ck_assert_int_eq(dns_resolv_conf_upstream("/nonexistent/resolv.conf", &a), -ENOENT);
	ck_assert_uint_eq(a, 42);

	/* A directory cannot be read: an error of its own, not "no nameserver". */
	ck_assert_int_eq(dns_resolv_conf_upstream("/", &a), -EISDIR);
	ck_assert_uint_eq(a, 42);

	/* A long line is one line wherever it breaks: its tail is no
	 * "nameserver" line of its own. */
	long_line = malloc(2048);
	ck_assert_ptr_nonnull(long_line);
	for (size_t at = 64; at < 1100; at++) {
		memset(long_line, 'x', at);
		long_line[0] = '#';
		snprintf(long_line + at, 2048 - at, " nameserver 10.6.6.6\nnameserver 10.7.7.7\n");
		ck_assert_int_eq(resolv(long_line, &a), 0);
		ck_assert_msg(a == ip("10.7.7.7"), "a comment of %zu bytes gave a nameserver", at);
	}
	free(long_line);
}
END_TEST

static Suite *dns_suite(void)
{
	Suite *s = suite_create("dns");
	TCase *core = tcase_create("core");
	TCase *errors = tcase_create("errors");
	TCase *slow = tcase_create("timeouts");
	TCase *tcp = tcase_create("tcp");
	TCase *load = tcase_create("load");
	TCase *conf = tcase_create("resolv_conf");

	tcase_add_checked_fixture(core, setup, teardown);
	tcase_add_test(core, test_allowed_a);
	tcase_add_test(core, test_cname_forward_root);
	tcase_add_test(core, test_fresh_upstream_id_and_port);
	tcase_add_test(core, test_refused);
	tcase_add_test(core, test_aaaa_empty);
	tcase_add_test(core, test_stop_with_idle_tcp);
	tcase_add_test(core, test_start_port_busy);
	suite_add_tcase(s, core);

	TCase *cache = tcase_create("cache");
	tcase_add_checked_fixture(cache, setup, teardown);
	tcase_add_test(cache, test_cache_hit);
	tcase_add_test(cache, test_cache_record_refused);
	tcase_add_test(cache, test_cache_refused_name);
	tcase_add_test(cache, test_cache_per_box);
	tcase_add_test(cache, test_cache_not_kept);
	tcase_add_test(cache, test_cache_ttl);
	tcase_set_timeout(cache, 20);
	suite_add_tcase(s, cache);

	tcase_add_checked_fixture(errors, setup, teardown);
	tcase_add_test(errors, test_non_in_class);
	tcase_add_test(errors, test_opcode_notimp);
	tcase_add_test(errors, test_formerr);
	tcase_add_test(errors, test_unreadable_ignored);
	tcase_add_test(errors, test_record_refuses);
	tcase_add_test(errors, test_record_fails);
	tcase_add_test(errors, test_wrong_id_ignored);
	tcase_add_test(errors, test_upstream_down);
	suite_add_tcase(s, errors);

	tcase_add_checked_fixture(slow, setup, teardown);
	tcase_set_timeout(slow, 20);
	tcase_add_test(slow, test_timeouts);
	suite_add_tcase(s, slow);

	tcase_add_checked_fixture(tcp, setup, teardown);
	tcase_set_timeout(tcp, 15);
	tcase_add_test(tcp, test_tcp);
	tcase_add_test(tcp, test_tcp_short_message);
	tcase_add_test(tcp, test_tcp_limit);
	suite_add_tcase(s, tcp);

	tcase_add_checked_fixture(load, setup, teardown);
	tcase_set_timeout(load, 20);
	tcase_add_test(load, test_concurrent_udp);
	tcase_add_test(load, test_pending_per_box);
	tcase_add_test(load, test_pending_limit);
	suite_add_tcase(s, load);

	TCase *many = tcase_create("record_many");
	tcase_add_checked_fixture(many, setup_many, teardown);
	tcase_set_timeout(many, 20);
	tcase_add_test(many, test_record_many_batch);
	tcase_add_test(many, test_record_many_cache);
	tcase_add_test(many, test_concurrent_udp);
	tcase_add_test(many, test_pending_per_box);
	suite_add_tcase(s, many);

	tcase_add_test(conf, test_resolv_conf);
	suite_add_tcase(s, conf);
	return s;
}

int main(void)
{
	return check_tap_run(dns_suite());
}
