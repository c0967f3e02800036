/* http.c - listeners, routing, authentication, the worker pool and parked
 * streams of the HTTP adapter (http.h, web/README.md). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <jansson.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "engine/access.h"
#include "engine/auth.h"
#include "common/config.h"
#include "web/http-internal.h"
#include "web/http.h"
#include "common/lock.h"
#include "common/log.h"
#include "common/parse.h"
#include "common/util.h"

#define HEAD_SPAN_MAX (64 * 1024) /* no request head is longer (MHD's buffer) */

struct listener {
	struct http *h;
	struct MHD_Daemon *d;
	bool local; /* the unix socket: peers judged by credentials, no token */
};

/* One connection (MHD's socket context), from accept to close. */
struct conn {
	struct listener *l;
	int fd;
	int family; /* the peer: AF_INET, AF_INET6 or AF_UNIX */
	uint8_t addr[16];
	char key[AUTH_CLIENT_MAX + 1]; /* auth_client_key() of the peer; "unix" */
	bool proxy;		       /* a trusted proxy: not capped per address */
	bool counted;		       /* in the per-address table */
	int peer;		       /* unix: access_check_socket_peer(), 0 = allowed */
	unsigned long long deadline;   /* now_usec() by which the connection must
					* have sent what it owes (a head, a small
					* body); 0 = none */
	struct req *cur;	       /* the request whose head is being read */
	struct conn *prev, *next;
};

struct addr_count {
	char key[AUTH_CLIENT_MAX + 1];
	unsigned n;
};

/* A pool of threads running requests' work while their connections are
 * suspended. When the queue is full, a new request is refused, or (login)
 * the oldest queued one is, so the newest gets in. */
struct pool {
	struct pd_mutex lock;
	pthread_cond_t cond;
	struct req **queue;
	size_t n, cap;
	bool stopping, drop_oldest;
	void (*refuse)(struct req *r);
	pthread_t *threads;
	size_t n_threads;
};

struct http {
	struct tree *tree;
	struct engine *engine;
	struct auth *auth;
	const struct pd_config *cfg;
	struct listener tcp, unix_sock;
	char *socket_path;
	unsigned port;

	struct pool work, login;

	/* parked streams, and replies by token (for revocation) */
	struct pd_mutex park_lock;
	struct req **parked;
	size_t parked_n, parked_cap;
	struct req **active;
	size_t active_n, active_cap;
	uint64_t next_serial;
	int epfd, stop_efd;
	pthread_t hangup_thread;
	bool hangup_started;
	bool wake_added, hook_added;
	bool stopping;
	struct vnc_proxy *vnc; /* the desktop's WebSockets (vnc-proxy.c) */
	struct preview_proxy *preview; /* preview URLs (preview-proxy.c) */

	/* connections and their count per address */
	struct pd_mutex conn_lock;
	struct conn *conns;
	struct addr_count *addrs;
	size_t addrs_n, addrs_cap;
};

struct tree *http_tree(struct http *h)
{
	return h->tree;
}

struct vnc_proxy *http_vnc_proxy(struct http *h)
{
	return h->vnc;
}

struct preview_proxy *http_preview_proxy(struct http *h)
{
	return h->preview;
}

struct engine *http_engine(struct http *h)
{
	return h->engine;
}

unsigned http_port(const struct http *h)
{
	return h ? h->port : 0;
}

/* --- replies ------------------------------------------------------------- */

unsigned http_status_from_errno(int code)
{
	switch (code < 0 ? -code : code) {
	case EINVAL:
	case ENOTDIR:
	case EISDIR:
	case ENAMETOOLONG:
	case ELOOP:
		return 400;
	case EPERM:
	case EACCES:
	case EROFS:
		return 403;
	case ENOENT:
	case ENXIO:
		return 404;
	case EEXIST:
	case EBUSY:
	case ENOTEMPTY:
	case ENODEV: /* a desktop that is off: a state the client can change */
		return 409;
	case E2BIG:
	case EFBIG:
		return 413;
	case ENOSPC:
	case EDQUOT:
		return 507;
	case EAGAIN:
		return 503;
	case ENOTSUP: /* (EOPNOTSUPP) never for this box or this server: an image
		       * without a desktop, disk limits off */
		return 501;
	default:
		return 500;
	}
}

static void set_resp(struct req *r, unsigned status, struct MHD_Response *resp)
{
	if (r->resp)
		MHD_destroy_response(r->resp);
	r->resp = resp;
	r->status = status;
}

void req_reply_text(struct req *r, unsigned status, const char *type, const char *data, size_t len)
{
	struct MHD_Response *resp =
	    MHD_create_response_from_buffer(len, (void *)data, MHD_RESPMEM_MUST_COPY);

	if (!resp)
		return;
	if (type)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	set_resp(r, status, resp);
}

void req_reply_json(struct req *r, unsigned status, const char *json)
{
	size_t n = strlen(json);
	_cleanup_free_ char *s = malloc(n + 2);

	if (!s)
		return;
	memcpy(s, json, n);
	s[n] = '\n';
	req_reply_text(r, status, "application/json", s, n + 1);
}

json_t *http_json_text(const char *s)
{
	size_t len = s ? strlen(s) : 0, size = len * 4 + 1; /* "\xHH" per byte at worst */
	_cleanup_free_ char *clean = malloc(size);

	if (!clean)
		return NULL;
	text_sanitize(s ? s : "", len, clean, size);
	return json_string(clean);
}

void req_reply_error(struct req *r, int code, const char *msg)
{
	const char *text = msg && *msg ? msg : strerror(code < 0 ? -code : code);
	size_t len = strlen(text), size = len * 4 + 1;
	_cleanup_free_ char *clean = malloc(size), *s = NULL;
	json_t *o = NULL;
	int e = code < 0 ? -code : code;

	/* The text may hold a box's bytes or a client's path: never a reason
	 * for the reply itself to fail. A message is for a person and may
	 * quote a box's error, already made printable: text_printable() leaves
	 * that as it is. */
	if (clean) {
		text_printable(text, len, clean, size);
		o = json_pack("{s:s, s:s}", "error", clean, "errno", errno_name(e));
	}
	if (o) {
		s = json_dumps(o, JSON_COMPACT);
		json_decref(o);
	}
	req_reply_json(r, http_status_from_errno(e), s ? s : "{\"error\":\"out of memory\"}");
}

void req_reply_listing(struct req *r, json_t *arr)
{
	char path[HTTP_PATH_MAX + 2];
	json_t *o;
	char *s;

	snprintf(path, sizeof(path), "/%s", r->path);
	o = json_pack("{s:o, s:o}", "path", http_json_text(path), "entries", arr);
	s = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	if (s)
		req_reply_json(r, 200, s);
	else
		req_reply_error(r, ENOMEM, "out of memory");
	free(s);
}

void req_reply_unauthorized(struct req *r, const char *msg)
{
	req_reply_error(r, EACCES, msg);
	r->status = 401;
	if (r->resp)
		MHD_add_response_header(r->resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
}

void req_reply_expired(struct req *r, time_t t)
{
	char when[32], msg[64];

	format_rfc3339(t, when, sizeof(when));
	snprintf(msg, sizeof(msg), "the token expired at %s", when);
	req_reply_error(r, EACCES, msg);
	r->status = 401;
	if (r->resp)
		MHD_add_response_header(r->resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
					"Bearer error=\"invalid_token\"");
}

void req_reply_token_ended(struct req *r)
{
	int64_t t = atomic_load(&r->expired_at);

	if (t)
		req_reply_expired(r, (time_t)t);
	else
		req_reply_unauthorized(r, "the token was revoked");
}

/* --- workers ------------------------------------------------------------- */

/* The request whose work this worker thread runs, if any: a revocation it
 * makes (DELETE tokens/ID of its own token) spares it (on_revoke). */
static _Thread_local struct req *working;

static void *pool_main(void *arg)
{
	struct pool *p = arg;

	for (;;) {
		struct req *r;

		pd_mutex_lock(&p->lock);
		while (p->n == 0 && !p->stopping)
			pd_cond_wait(&p->cond, &p->lock);
		if (p->n == 0) {
			pd_mutex_unlock(&p->lock);
			return NULL;
		}
		r = p->queue[0];
		memmove(p->queue, p->queue + 1, --p->n * sizeof(*p->queue));
		pd_mutex_unlock(&p->lock);

		/* Queued before its token's revocation, run after it: it does
		 * nothing. */
		if (atomic_load(&r->revoked))
			req_reply_token_ended(r);
		else {
			working = r;
			r->work(r);
			working = NULL;
		}
		req_finish_async(r);
	}
}

static int pool_start(struct pool *p, size_t threads, size_t cap, bool drop_oldest,
		      void (*refuse)(struct req *r))
{
	p->cap = cap;
	p->drop_oldest = drop_oldest;
	p->refuse = refuse;
	p->queue = calloc(cap, sizeof(*p->queue));
	p->threads = calloc(threads, sizeof(*p->threads));
	if (!p->queue || !p->threads)
		return -ENOMEM;
	for (size_t i = 0; i < threads; i++) {
		if (pthread_create(&p->threads[i], NULL, pool_main, p) != 0)
			return -EAGAIN;
		p->n_threads++;
	}
	return 0;
}

/* Lets the threads finish the queue and waits for them; logins asleep in
 * auth's queue are woken (refused) so that none holds the stop. */
static void pool_stop(struct pool *p, struct auth *cancel)
{
	pd_mutex_lock(&p->lock);
	p->stopping = true;
	pthread_cond_broadcast(&p->cond);
	pd_mutex_unlock(&p->lock);
	for (size_t i = 0; i < p->n_threads; i++) {
		struct timespec ts;
		for (;;) {
			if (cancel)
				auth_cancel_waiting(cancel);
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += 20 * 1000000L;
			if (ts.tv_nsec >= 1000000000L) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000L;
			}
			if (pthread_timedjoin_np(p->threads[i], NULL, &ts) != ETIMEDOUT)
				break;
		}
	}
	p->n_threads = 0;
	free(p->threads);
	free(p->queue);
	p->threads = NULL;
	p->queue = NULL;
}

void req_wait_async(struct req *r)
{
	bool resume;

	MHD_suspend_connection(r->conn);
	pd_mutex_lock(&r->lock);
	r->waiting = true;
	resume = r->done;
	pd_mutex_unlock(&r->lock);
	if (resume)
		MHD_resume_connection(r->conn);
}

void req_finish_async(struct req *r)
{
	bool resume;

	pd_mutex_lock(&r->lock);
	r->done = true;
	resume = r->waiting;
	pd_mutex_unlock(&r->lock);
	if (resume)
		MHD_resume_connection(r->conn);
}

static void pool_submit(struct pool *p, struct req *r, req_work_fn fn)
{
	struct req *refused = NULL;

	r->work = fn;
	req_wait_async(r);
	pd_mutex_lock(&p->lock);
	if (p->stopping || !p->cap)
		refused = r;
	else {
		if (p->n == p->cap) {
			if (p->drop_oldest) {
				refused = p->queue[0];
				memmove(p->queue, p->queue + 1, --p->n * sizeof(*p->queue));
			} else
				refused = r;
		}
		if (refused != r) {
			p->queue[p->n++] = r;
			pthread_cond_signal(&p->cond);
		}
	}
	pd_mutex_unlock(&p->lock);
	if (refused) {
		p->refuse(refused);
		req_finish_async(refused);
	}
}

static void refuse_busy(struct req *r)
{
	req_reply_error(r, EAGAIN, "the server is busy or stopping; try again");
}

void req_run_async(struct req *r, req_work_fn fn)
{
	pool_submit(&r->h->work, r, fn);
}

/* --- parked streams ------------------------------------------------------ */

static void park_remove_locked(struct http *h, struct req *r)
{
	for (size_t i = 0; i < h->parked_n; i++)
		if (h->parked[i] == r) {
			h->parked[i] = h->parked[--h->parked_n];
			break;
		}
	r->parked = false;
}

static int conn_fd(struct req *r)
{
	return r->c ? r->c->fd : -1;
}

void http_park_arm(struct http *h, struct req *r, uint64_t key)
{
	pd_mutex_lock(&h->park_lock);
	if (!r->parked) {
		if (h->parked_n == h->parked_cap) {
			size_t cap = h->parked_cap ? h->parked_cap * 2 : 64;
			struct req **p = realloc(h->parked, cap * sizeof(*p));
			if (!p) {
				pd_mutex_unlock(&h->park_lock);
				return; /* the read will be retried by the hangup poll */
			}
			h->parked = p;
			h->parked_cap = cap;
		}
		h->parked[h->parked_n++] = r;
		r->parked = true;
	}
	r->key = key;
	r->woken = false;
	pd_mutex_unlock(&h->park_lock);
}

void http_park_disarm(struct http *h, struct req *r)
{
	int fd = -1;

	pd_mutex_lock(&h->park_lock);
	if (r->parked)
		park_remove_locked(h, r);
	if (r->suspended) {
		r->suspended = false;
		fd = conn_fd(r);
	}
	pd_mutex_unlock(&h->park_lock);
	if (fd >= 0)
		epoll_ctl(h->epfd, EPOLL_CTL_DEL, fd, NULL);
}

void http_park_suspend(struct http *h, struct req *r)
{
	bool resume = false;
	int fd = conn_fd(r);

	MHD_suspend_connection(r->conn);
	pd_mutex_lock(&h->park_lock);
	if (r->woken || h->stopping || !r->parked) {
		resume = true;
		if (h->stopping)
			atomic_store(&r->hangup, true);
		if (r->parked)
			park_remove_locked(h, r);
	} else {
		r->suspended = true;
		if (fd >= 0) {
			struct epoll_event ev = {.events = EPOLLRDHUP | EPOLLONESHOT,
						 .data.u64 = r->serial};
			if (epoll_ctl(h->epfd, EPOLL_CTL_ADD, fd, &ev) < 0 && errno == EEXIST)
				epoll_ctl(h->epfd, EPOLL_CTL_MOD, fd, &ev);
		}
	}
	pd_mutex_unlock(&h->park_lock);
	if (resume)
		MHD_resume_connection(r->conn);
}

/* Resumes the parked requests matching key (all when all is set), marking
 * them hung up when hangup is set. */
static void park_wake(struct http *h, uint64_t key, bool all, uint64_t serial, bool hangup)
{
	struct MHD_Connection *batch[256];
	size_t n;

	do {
		n = 0;
		pd_mutex_lock(&h->park_lock);
		for (size_t i = 0; i < h->parked_n && n < ELEMENTSOF(batch);) {
			struct req *r = h->parked[i];
			bool match = all || (serial ? r->serial == serial : r->key == key);

			if (!match) {
				i++;
				continue;
			}
			if (hangup)
				atomic_store(&r->hangup, true);
			if (!r->suspended) {
				r->woken = true;
				i++;
				continue;
			}
			r->suspended = false;
			int fd = conn_fd(r);
			if (fd >= 0)
				epoll_ctl(h->epfd, EPOLL_CTL_DEL, fd, NULL);
			park_remove_locked(h, r);
			batch[n++] = r->conn;
		}
		pd_mutex_unlock(&h->park_lock);
		for (size_t i = 0; i < n; i++)
			MHD_resume_connection(batch[i]);
	} while (n == ELEMENTSOF(batch));
}

static void on_wake(void *userdata, uint64_t key)
{
	park_wake(userdata, key, /* all= */ false, 0, /* hangup= */ false);
}

/* --- revocation ----------------------------------------------------------- */

/* Requests authenticated by a token, from the moment the token is checked
 * (begin()) until the request completes (park_lock): what a revocation
 * reaches, whether the request still waits for its body, is queued for a
 * worker, runs, or streams its reply. -EACCES when the token was revoked
 * since the request's check, or has expired (r->expired_at set); -ENOMEM
 * when the request cannot be listed (a revocation would not reach it: it is
 * refused). */
static int active_add(struct http *h, struct req *r)
{
	uint64_t gen;

	if (!r->token_id[0])
		return 0;
	pd_mutex_lock(&h->park_lock);
	if (h->active_n == h->active_cap) {
		size_t cap = h->active_cap ? h->active_cap * 2 : 64;
		struct req **v = realloc(h->active, cap * sizeof(*v));
		if (!v) {
			pd_mutex_unlock(&h->park_lock);
			return -ENOMEM;
		}
		h->active = v;
		h->active_cap = cap;
	}
	r->active_idx = h->active_n;
	h->active[h->active_n++] = r;
	r->active = true;
	gen = auth_revocations(h->auth);
	pd_mutex_unlock(&h->park_lock);
	/* Listed before the generation was read: a revocation or an expiry
	 * announced after this finds the request; one before it shows in the
	 * generation, or here in the clock (an expiry is announced after it
	 * passed). */
	if (r->token_expires && time(NULL) >= r->token_expires) {
		atomic_store(&r->expired_at, (int64_t)r->token_expires);
		return -EACCES;
	}
	if (gen == r->auth_gen)
		return 0;
	struct auth_token t;
	return auth_token_get(h->auth, r->token_id, &t) == -ENOENT ? -EACCES : 0;
}

static void active_remove_locked(struct http *h, struct req *r)
{
	if (!r->active)
		return;
	h->active[r->active_idx] = h->active[--h->active_n];
	h->active[r->active_idx]->active_idx = r->active_idx;
	r->active = false;
}

/* Called by auth_token_revoke(), in the revoker's thread, and by
 * auth_expire_tick() (expired: when the token expired), in the hangup
 * thread within about a second of the expiry: every request of the token
 * is cut at once, an expiry exactly like a revocation. It is marked
 * revoked, so that it does nothing more: a body still coming is not taken
 * (on_request closes the connection), a request not yet dispatched or
 * still queued for a worker is refused, a tar push not yet merged merges
 * nothing (http-root.c), a read replies 401 (queue_reply). Shutting the
 * socket down reaches a flowing reply (MHD's next send or read fails and
 * it closes the connection) as well as a parked one (its EPOLLRDHUP wakes
 * the hangup thread, which resumes it into stream_reader's hangup), and
 * makes the kernel refuse more of the body. The request making the
 * revocation (its work runs in this thread) is spared: what it did is
 * done, and it hears that it worked. The socket stays open while the
 * request is listed (it leaves the list in on_completed, before MHD closes
 * the socket), so the descriptor cannot be another's. */
static void on_revoke(void *userdata, const char *id, time_t expired)
{
	struct http *h = userdata;

	pd_mutex_lock(&h->park_lock);
	for (size_t i = 0; i < h->active_n; i++) {
		struct req *r = h->active[i];
		if (r == working || strcmp(r->token_id, id) != 0)
			continue;
		if (expired && !atomic_load(&r->revoked))
			atomic_store(&r->expired_at, (int64_t)expired);
		atomic_store(&r->revoked, true);
		atomic_store(&r->hangup, true);
		/* A WebSocket says why it closes (vnc-proxy.c's own hook). */
		if (conn_fd(r) >= 0 && !atomic_load(&r->upgraded))
			(void)shutdown(conn_fd(r), SHUT_RDWR);
	}
	pd_mutex_unlock(&h->park_lock);
}

/* --- connections ------------------------------------------------------------ */

static struct conn *conn_of(struct MHD_Connection *mc)
{
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(mc, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	return ci ? ci->socket_context : NULL;
}

/* family/addr of a socket address (IPv4-mapped IPv6 as IPv4). */
static bool sockaddr_split(const struct sockaddr *sa, int *family, uint8_t addr[16])
{
	memset(addr, 0, 16);
	if (!sa)
		return false;
	if (sa->sa_family == AF_INET) {
		*family = AF_INET;
		memcpy(addr, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, 4);
		return true;
	}
	if (sa->sa_family == AF_INET6) {
		const struct in6_addr *a6 =
		    &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;
		if (IN6_IS_ADDR_V4MAPPED(a6)) {
			*family = AF_INET;
			memcpy(addr, a6->s6_addr + 12, 4);
		} else {
			*family = AF_INET6;
			memcpy(addr, a6->s6_addr, 16);
		}
		return true;
	}
	*family = sa->sa_family;
	return false;
}

static void addr_key(int family, const uint8_t addr[16], char *key, size_t size)
{
	char s[INET6_ADDRSTRLEN];

	inet_ntop(family, addr, s, sizeof(s));
	auth_client_key(s, key, size);
}

static bool trusted_proxy(const struct http *h, int family, const uint8_t addr[16])
{
	for (size_t i = 0; i < h->cfg->n_trusted_proxies; i++)
		if (config_net_prefix_contains(&h->cfg->trusted_proxies[i], family, addr))
			return true;
	return false;
}

static struct addr_count *addr_find(struct http *h, const char *key)
{
	for (size_t i = 0; i < h->addrs_n; i++)
		if (strcmp(h->addrs[i].key, key) == 0)
			return &h->addrs[i];
	return NULL;
}

/* MHD's accept policy: a client address already holding
 * HTTP_CONNS_PER_ADDR connections gets no more (MHD closes the new one
 * at once), so one address cannot take the connections everyone shares. A
 * trusted proxy carries many clients: only the listener's limit applies. */
static enum MHD_Result on_accept(void *cls, const struct sockaddr *sa, socklen_t len)
{
	struct listener *l = cls;
	struct http *h = l->h;
	char key[AUTH_CLIENT_MAX + 1];
	uint8_t addr[16];
	int family;
	bool ok = true;

	(void)len;
	if (!sockaddr_split(sa, &family, addr) || trusted_proxy(h, family, addr))
		return MHD_YES;
	addr_key(family, addr, key, sizeof(key));
	pd_mutex_lock(&h->conn_lock);
	struct addr_count *a = addr_find(h, key);
	if (a && a->n >= HTTP_CONNS_PER_ADDR)
		ok = false;
	pd_mutex_unlock(&h->conn_lock);
	if (!ok)
		log_debug("http: %s already has %d connections; refused another", key,
			  HTTP_CONNS_PER_ADDR);
	return ok ? MHD_YES : MHD_NO;
}

static unsigned long long deadline_in(unsigned seconds)
{
	return now_usec() + seconds * 1000000ULL;
}

static void conn_set_deadline(struct conn *c, unsigned long long deadline)
{
	struct http *h = c->l->h;

	pd_mutex_lock(&h->conn_lock);
	c->deadline = deadline;
	pd_mutex_unlock(&h->conn_lock);
}

static void conn_started(struct listener *l, struct MHD_Connection *mc, void **socket_context)
{
	struct http *h = l->h;
	const union MHD_ConnectionInfo *ci;
	struct conn *c = calloc(1, sizeof(*c));

	if (!c)
		return; /* no context: its requests are refused */
	c->l = l;
	ci = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CONNECTION_FD);
	c->fd = ci ? ci->connect_fd : -1;
	ci = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	if (l->local || !ci || !sockaddr_split(ci->client_addr, &c->family, c->addr)) {
		c->family = AF_UNIX;
		snprintf(c->key, sizeof(c->key), "unix");
	} else {
		addr_key(c->family, c->addr, c->key, sizeof(c->key));
		c->proxy = trusted_proxy(h, c->family, c->addr);
	}
	if (l->local)
		c->peer =
		    c->fd < 0 ? -EBADF : access_check_socket_peer(engine_access(h->engine), c->fd);
	c->deadline = deadline_in(HTTP_HEAD_TIMEOUT_S);

	pd_mutex_lock(&h->conn_lock);
	if (c->family != AF_UNIX && !c->proxy) {
		struct addr_count *a = addr_find(h, c->key);
		if (!a && h->addrs_n == h->addrs_cap) {
			size_t cap = h->addrs_cap ? h->addrs_cap * 2 : 64;
			struct addr_count *v = realloc(h->addrs, cap * sizeof(*v));
			if (v) {
				h->addrs = v;
				h->addrs_cap = cap;
			}
		}
		if (!a && h->addrs_n < h->addrs_cap) {
			a = &h->addrs[h->addrs_n++];
			snprintf(a->key, sizeof(a->key), "%s", c->key);
			a->n = 0;
		}
		if (a) {
			a->n++;
			c->counted = true;
		}
	}
	c->next = h->conns;
	if (h->conns)
		h->conns->prev = c;
	h->conns = c;
	pd_mutex_unlock(&h->conn_lock);
	*socket_context = c;
}

static void conn_closed(struct http *h, struct conn *c)
{
	pd_mutex_lock(&h->conn_lock);
	if (c->counted) {
		struct addr_count *a = addr_find(h, c->key);
		if (a && --a->n == 0)
			*a = h->addrs[--h->addrs_n];
	}
	if (c->prev)
		c->prev->next = c->next;
	else
		h->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	pd_mutex_unlock(&h->conn_lock);
	free(c);
}

static void on_connection(void *cls, struct MHD_Connection *mc, void **socket_context,
			  enum MHD_ConnectionNotificationCode code)
{
	struct listener *l = cls;

	if (code == MHD_CONNECTION_NOTIFY_STARTED)
		conn_started(l, mc, socket_context);
	else if (code == MHD_CONNECTION_NOTIFY_CLOSED && *socket_context) {
		conn_closed(l->h, *socket_context);
		*socket_context = NULL;
	}
}

/* Connections past their deadline (a head or a small body that does not
 * come; slowloris) are shut down; MHD then closes them. Suspended
 * connections (parked streams, work in progress) have no deadline. */
static void sweep_deadlines(struct http *h)
{
	unsigned long long now = now_usec();

	pd_mutex_lock(&h->conn_lock);
	for (struct conn *c = h->conns; c; c = c->next)
		if (c->deadline && now > c->deadline && c->fd >= 0) {
			c->deadline = 0;
			(void)shutdown(c->fd, SHUT_RDWR);
		}
	pd_mutex_unlock(&h->conn_lock);
}

/* A client that goes away while its stream is parked: resume it so MHD
 * notices and frees the connection. Also the deadline sweep and the
 * announcement of tokens that expired (on_revoke() ends what they have
 * open), every second. */
static void *hangup_main(void *arg)
{
	struct http *h = arg;
	struct epoll_event ev[64];
	unsigned long long swept = now_usec();

	for (;;) {
		int n = epoll_wait(h->epfd, ev, ELEMENTSOF(ev), 1000);
		if (n < 0 && errno != EINTR)
			return NULL;
		for (int i = 0; i < n; i++) {
			if (ev[i].data.u64 == 0)
				return NULL; /* the stop eventfd */
			park_wake(h, 0, false, ev[i].data.u64, /* hangup= */ true);
		}
		if (now_usec() - swept >= 1000000ULL) {
			sweep_deadlines(h);
			auth_expire_tick(h->auth);
			swept = now_usec();
		}
	}
}

/* --- routing ------------------------------------------------------------- */

static enum req_method method_of(const char *m)
{
	if (strcmp(m, "GET") == 0)
		return M_GET;
	if (strcmp(m, "HEAD") == 0)
		return M_HEAD;
	if (strcmp(m, "PUT") == 0)
		return M_PUT;
	if (strcmp(m, "POST") == 0)
		return M_POST;
	if (strcmp(m, "DELETE") == 0)
		return M_DELETE;
	return M_OTHER;
}

/* Splits the decoded URL path after /v1/tree/ into r->path (segments joined
 * by '/'), refusing ".", ".." and empty segments. Recognises
 * boxes/NAME/root/REST and volumes/NAME/data/REST as root/ routes. */
static int parse_tree_path(struct req *r, const char *p)
{
	char buf[HTTP_PATH_MAX];
	char *segs[512];
	size_t n = 0, len = strlen(p);
	char *s, *save = NULL;

	if (len >= sizeof(buf))
		return -ENAMETOOLONG;
	r->dir = len == 0 || p[len - 1] == '/';
	memcpy(buf, p, len + 1);
	if (r->dir && len)
		buf[len - 1] = '\0';
	if (len && r->dir && len >= 2 && p[len - 2] == '/')
		return -EINVAL;
	if (buf[0] == '\0') {
		r->path[0] = '\0';
		return 0;
	}
	for (s = buf; s; s = save) {
		save = strchr(s, '/');
		if (save)
			*save++ = '\0';
		if (!*s || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
			return -EINVAL;
		if (n == ELEMENTSOF(segs))
			return -ENAMETOOLONG;
		segs[n++] = s;
	}
	if (n >= 3 && ((strcmp(segs[0], "boxes") == 0 && strcmp(segs[2], "root") == 0) ||
		       (strcmp(segs[0], "volumes") == 0 && strcmp(segs[2], "data") == 0))) {
		if (strlen(segs[1]) >= sizeof(r->box))
			return -EINVAL;
		r->route = ROUTE_ROOT;
		r->volume = segs[0][0] == 'v';
		snprintf(r->box, sizeof(r->box), "%s", segs[1]);
		r->rel[0] = '\0';
		for (size_t i = 3; i < n; i++) {
			size_t cur = strlen(r->rel);
			int w = snprintf(r->rel + cur, sizeof(r->rel) - cur, "%s%s",
					 i > 3 ? "/" : "", segs[i]);
			if (w < 0 || (size_t)w >= sizeof(r->rel) - cur)
				return -ENAMETOOLONG;
		}
	}
	r->path[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		size_t cur = strlen(r->path);
		snprintf(r->path + cur, sizeof(r->path) - cur, "%s%s", i ? "/" : "", segs[i]);
	}
	return 0;
}

static const char *query(struct req *r, const char *key)
{
	return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, key);
}

const char *req_header(struct req *r, const char *name)
{
	return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

bool http_list_has(const char *list, const char *token, size_t tl)
{
	while (list && *list) {
		while (*list == ' ' || *list == '	' || *list == ',')
			list++;
		size_t n = strcspn(list, ",");
		size_t m = n;
		while (m && (list[m - 1] == ' ' || list[m - 1] == '	'))
			m--;
		if (m == tl && strncasecmp(list, token, tl) == 0)
			return true;
		list += n;
	}
	return false;
}

/* One X-Forwarded-For entry: an address, maybe "[v6]:port" or
 * "v4:port" as some proxies write it. */
static bool forwarded_addr(const char *s, size_t n, int *family, uint8_t addr[16])
{
	char buf[INET6_ADDRSTRLEN + 8];
	char *p;

	while (n && (*s == ' ' || *s == '\t'))
		s++, n--;
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		n--;
	if (!n || n >= sizeof(buf))
		return false;
	memcpy(buf, s, n);
	buf[n] = '\0';
	p = buf;
	if (*p == '[') {
		char *end = strchr(p, ']');
		if (!end)
			return false;
		*end = '\0';
		p++;
	} else if ((p = strchr(buf, ':')) && !strchr(p + 1, ':'))
		*p = '\0'; /* v4:port */
	else
		p = buf;
	memset(addr, 0, 16);
	if (inet_pton(AF_INET, p, addr) == 1) {
		*family = AF_INET;
		return true;
	}
	struct in6_addr a6;
	if (inet_pton(AF_INET6, p, &a6) != 1)
		return false;
	struct sockaddr_in6 sa = {.sin6_family = AF_INET6, .sin6_addr = a6};
	return sockaddr_split((const struct sockaddr *)&sa, family, addr);
}

struct xff {
	const char *v[16]; /* the X-Forwarded-For headers, in order */
	size_t len[16];
	size_t n;
	bool too_many;
};

static enum MHD_Result xff_header(void *cls, enum MHD_ValueKind kind, const char *key,
				  size_t key_size, const char *value, size_t value_size)
{
	struct xff *x = cls;

	(void)kind;
	(void)key_size;
	if (strcasecmp(key, "X-Forwarded-For") != 0)
		return MHD_YES;
	if (x->n == ELEMENTSOF(x->v)) {
		x->too_many = true;
		return MHD_NO;
	}
	x->v[x->n] = value;
	x->len[x->n++] = value_size;
	return MHD_YES;
}

/* The client a login counts for (r->client). From a trusted proxy, the
 * rightmost X-Forwarded-For address that is not a trusted proxy itself (the
 * one the outermost trusted proxy saw; what is left of it the client may
 * have written); the proxy's own address without the header. From anyone
 * else the header is ignored. -EINVAL when that entry is not an address. */
static int login_client(struct req *r)
{
	struct conn *c = r->c;
	struct xff x = {0};
	int family = 0, last_family = 0;
	uint8_t addr[16], last[16];

	snprintf(r->client, sizeof(r->client), "%s", c->key);
	if (!c->proxy)
		return 0;
	MHD_get_connection_values_n(r->conn, MHD_HEADER_KIND, xff_header, &x);
	if (x.too_many)
		return -EINVAL;
	for (size_t i = x.n; i-- > 0;) {
		size_t end = x.len[i];
		for (;;) {
			const char *v = x.v[i];
			size_t start = end;
			while (start > 0 && v[start - 1] != ',')
				start--;
			if (!forwarded_addr(v + start, end - start, &family, addr))
				return -EINVAL;
			if (!trusted_proxy(r->h, family, addr)) {
				addr_key(family, addr, r->client, sizeof(r->client));
				return 0;
			}
			last_family = family;
			memcpy(last, addr, sizeof(last));
			if (start == 0)
				break;
			end = start - 1;
		}
	}
	if (last_family) /* every hop a trusted proxy: the first one */
		addr_key(last_family, last, r->client, sizeof(r->client));
	return 0;
}

/* Whether the request may go on: the local socket's trusted peers, or a
 * valid token. A token that expired leaves its expiry in r->expired_at
 * (reply_unauthorized() tells it). */
static bool authorized(struct req *r)
{
	time_t expires = 0;
	const char *a;
	char tok[AUTH_TOKEN_LEN + 8];

	if (r->trusted)
		return true;
	a = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
	if (a && strncasecmp(a, "Bearer ", 7) == 0) {
		a += 7;
		while (*a == ' ')
			a++;
	} else if (!a && r->route == ROUTE_VNC && http_vnc_protocol_token(r, tok, sizeof tok))
		a = tok; /* a browser's WebSocket cannot send Authorization */
	else if (r->route == ROUTE_PREVIEW && http_preview_token(r, tok, sizeof tok))
		a = tok; /* a browser's page: a cookie, or the link's parameter */
	else
		return false;
	r->auth_gen = auth_revocations(r->h->auth);
	bool ok = auth_check_token(r->h->auth, a, r->token_id, &expires) == 0;
	explicit_bzero(tok, sizeof tok);
	if (ok)
		r->token_expires = expires;
	else
		atomic_store(&r->expired_at, (int64_t)expires);
	return ok;
}

/* The 401 of a request authorized() refused. */
static void reply_unauthorized(struct req *r)
{
	if (atomic_load(&r->expired_at))
		req_reply_token_ended(r);
	else
		req_reply_unauthorized(r, "missing or invalid token");
}

/* --- setup and login ----------------------------------------------------- */

static const char setup_page[] =
    "<!doctype html><html><head><meta charset=\"utf-8\"><title>Paddock setup</title>"
    "<meta name=\"viewport\" content=\"width=device-width\"></head><body>"
    "<h1>Paddock: set the owner's password</h1>"
    "<form method=\"post\" action=\"/v1/setup\">"
    "<input type=\"hidden\" name=\"token\" value=\"%s\">"
    "<p><label>Password (8 characters or more) <input type=\"password\" name=\"password\" "
    "minlength=\"8\" required autofocus></label></p>"
    "<p><button type=\"submit\">Set password</button></p></form></body></html>\n";

static bool token_chars_ok(const char *s)
{
	if (!*s || strlen(s) > 128)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '-' || *s == '_'))
			return false;
	return true;
}

static void handle_setup_page(struct req *r)
{
	const char *t = query(r, "token");
	char page[sizeof(setup_page) + 160];

	if (!t || !token_chars_ok(t) || auth_has_owner(r->h->auth)) {
		static const char gone[] =
		    "<!doctype html><html><body><h1>This setup link is not valid</h1>"
		    "<p>It was already used, or it is wrong. Log in with the owner's "
		    "password instead.</p></body></html>\n";
		req_reply_text(r, 404, "text/html; charset=utf-8", gone, sizeof(gone) - 1);
		return;
	}
	snprintf(page, sizeof(page), setup_page, t);
	req_reply_text(r, 200, "text/html; charset=utf-8", page, strlen(page));
}

/* True if s[0..n) has a control byte (0x00-0x1f, 0x7f); a tab passes when
 * tab_ok (it is whitespace in header values). */
static bool has_control(const char *s, size_t n, bool tab_ok)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char b = (unsigned char)s[i];
		if ((b < 0x20 && !(tab_ok && b == '\t')) || b == 0x7f)
			return true;
	}
	return false;
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = (char)(c | 0x20);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* True if a form body (application/x-www-form-urlencoded) holds a control
 * byte, raw or percent-encoded (%00-%1F, %7F, either case). Such a body is
 * refused whole before the post processor reads it: it hands keys on as C
 * strings, so "password%00junk=" would pass for "password=". */
static bool form_has_control(const char *s, size_t n)
{
	if (has_control(s, n, false))
		return true;
	for (size_t i = 0; i + 2 < n; i++) {
		if (s[i] != '%')
			continue;
		int hi = hex_digit(s[i + 1]), lo = hex_digit(s[i + 2]);
		if (hi >= 0 && lo >= 0 && (hi < 2 || (hi == 7 && lo == 15)))
			return true;
	}
	return false;
}

/* The fields a route reads from its body. */
static const char *const setup_keys[] = {"token", "password", NULL};
static const char *const login_keys[] = {"password", "label", "ttl"};

static const char *const *body_keys(const struct req *r)
{
	return r->route == ROUTE_SETUP ? setup_keys : login_keys;
}

static enum MHD_Result form_field(void *cls, enum MHD_ValueKind kind, const char *key,
				  const char *filename, const char *content_type,
				  const char *transfer_encoding, const char *data, uint64_t off,
				  size_t size)
{
	struct req *r = cls;
	const char *const *keys = body_keys(r);

	(void)kind, (void)filename, (void)content_type, (void)transfer_encoding;
	for (size_t i = 0; i < ELEMENTSOF(r->fields); i++) {
		if (!keys[i] || strcmp(key, keys[i]) != 0)
			continue;
		size_t have = r->fields[i] ? strlen(r->fields[i]) : 0;
		if ((off == 0 && r->fields[i]) || off != have || has_control(data, size, false)) {
			r->fields_err = -EINVAL; /* a repeated field, or a control byte */
			return MHD_NO;
		}
		char *v = realloc(r->fields[i], have + size + 1);
		if (!v) {
			r->fields_err = -ENOMEM;
			return MHD_NO;
		}
		memcpy(v + have, data, size);
		v[have + size] = '\0';
		r->fields[i] = v;
	}
	return MHD_YES;
}

/* Reads the fields of a login or setup body into r->fields (NULL when
 * absent): a JSON object, or an application/x-www-form-urlencoded form,
 * decoded by libmicrohttpd's post processor. A field holding a control
 * character or given twice makes the body invalid (r->fields_err), as does
 * a form holding one anywhere (form_has_control()) and a JSON \u0000
 * (jansson refuses it, in keys too). Runs on the connection's thread. */
static void parse_body_fields(struct req *r)
{
	const char *ct =
	    MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
	const char *const *keys = body_keys(r);

	/* curl --data sends JSON as a form: the body's first byte decides. */
	if (ct &&
	    strncasecmp(ct, MHD_HTTP_POST_ENCODING_FORM_URLENCODED,
			strlen(MHD_HTTP_POST_ENCODING_FORM_URLENCODED)) == 0 &&
	    !(r->body.len && r->body.data[0] == '{')) {
		r->form = true;
		if (form_has_control(r->body.data, r->body.len)) {
			r->fields_err = -EINVAL;
			return;
		}
		struct MHD_PostProcessor *pp =
		    MHD_create_post_processor(r->conn, 1024, form_field, r);
		if (!pp) {
			r->fields_err = -EINVAL;
			return;
		}
		if (r->body.len && MHD_post_process(pp, r->body.data, r->body.len) != MHD_YES &&
		    !r->fields_err)
			r->fields_err = -EINVAL;
		/* The last value is delivered when the processor ends. */
		if (MHD_destroy_post_processor(pp) != MHD_YES && !r->fields_err)
			r->fields_err = -EINVAL;
		return;
	}
	json_error_t je;
	json_t *o =
	    json_loadb(r->body.data ? r->body.data : "", r->body.len, JSON_REJECT_DUPLICATES, &je);
	if (!o || !json_is_object(o)) {
		json_decref(o);
		r->fields_err = -EINVAL;
		return;
	}
	for (size_t i = 0; i < ELEMENTSOF(r->fields) && !r->fields_err; i++) {
		json_t *v = keys[i] ? json_object_get(o, keys[i]) : NULL;
		if (v && r->route == ROUTE_LOGIN && strcmp(keys[i], "ttl") == 0) {
			/* A number, not a string: kept as its digits (a negative
			 * one with its sign, refused by work_login()). null is
			 * no ttl, as a client's unset optional field. */
			if (json_is_null(v))
				continue;
			char num[32];
			if (!json_is_integer(v))
				r->ttl_bad = true;
			else if (snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT,
					  json_integer_value(v)),
				 !(r->fields[i] = strdup(num)))
				r->fields_err = -ENOMEM;
			continue;
		}
		if (!v || !json_is_string(v))
			continue;
		if (has_control(json_string_value(v), json_string_length(v), false))
			r->fields_err = -EINVAL;
		else if (!(r->fields[i] = strdup(json_string_value(v))))
			r->fields_err = -ENOMEM;
	}
	json_decref(o);
}

static void free_fields(struct req *r)
{
	for (size_t i = 0; i < ELEMENTSOF(r->fields); i++) {
		if (r->fields[i])
			explicit_bzero(r->fields[i], strlen(r->fields[i]));
		free(r->fields[i]);
		r->fields[i] = NULL;
	}
}

static void setup_url_path(struct http *h, char *buf, size_t size)
{
	snprintf(buf, size, "%s/setup-url", h->cfg->data);
}

static bool body_ok(struct req *r, const char *what)
{
	if (r->fields_err == -ENOMEM) {
		req_reply_error(r, ENOMEM, "out of memory");
		return false;
	}
	if (r->fields_err) {
		char msg[160];
		snprintf(msg, sizeof(msg),
			 "bad request body: %s, each field once, without control characters", what);
		req_reply_error(r, EINVAL, msg);
		return false;
	}
	if (!r->fields[0] || (r->route == ROUTE_SETUP && !r->fields[1])) {
		char msg[160];
		snprintf(msg, sizeof(msg), "expected %s", what);
		req_reply_error(r, EINVAL, msg);
		return false;
	}
	return true;
}

static void work_setup(struct req *r)
{
	pd_error err = {0};
	char path[PATH_MAX];
	int k;

	if (!body_ok(r, "a token and a password")) {
		free_fields(r);
		return;
	}
	k = auth_setup_finish(r->h->auth, r->fields[0], r->fields[1], &err);
	free_fields(r);
	if (k < 0) {
		req_reply_error(r, k, err.msg);
		return;
	}
	setup_url_path(r->h, path, sizeof(path));
	(void)unlink(path);
	log_info("owner password set through the setup link");
	if (r->form) {
		static const char done[] =
		    "<!doctype html><html><body><h1>Password set</h1>"
		    "<p><a href=\"/\">Open the panel</a> and log in.</p></body></html>\n";
		req_reply_text(r, 200, "text/html; charset=utf-8", done, sizeof(done) - 1);
		return;
	}
	req_reply_json(r, 200, "{\"ok\":true}");
}

static void reply_too_many(struct req *r, unsigned retry, const char *msg)
{
	char s[16];

	req_reply_error(r, EAGAIN, msg);
	r->status = 429;
	snprintf(s, sizeof(s), "%u", retry ? retry : 1);
	if (r->resp)
		MHD_add_response_header(r->resp, MHD_HTTP_HEADER_RETRY_AFTER, s);
}

/* A login pushed out of the login threads' backlog by a newer one. */
static void refuse_login(struct req *r)
{
	reply_too_many(r, 1, "too many logins at once; retry in 1 s");
}

/* A login's ttl: absent (0: the server's default), or a whole number of
 * seconds, 1..AUTH_TTL_MAX, as digits (a form's field, a JSON integer's
 * text). */
static int login_ttl(struct req *r, int64_t *ret)
{
	const char *s = r->fields[2];
	int64_t v = 0;

	*ret = 0;
	if (!s && !r->ttl_bad)
		return 0;
	if (r->ttl_bad || !*s || strlen(s) > 12)
		goto bad;
	for (const char *p = s; *p; p++) {
		if (*p < '0' || *p > '9')
			goto bad;
		v = v * 10 + (*p - '0');
	}
	if (v < 1 || v > AUTH_TTL_MAX)
		goto bad;
	*ret = v;
	return 0;
bad:
	req_reply_error(r, EINVAL,
			"ttl: the token's lifetime, a whole number of seconds from 1 to 315360000 "
			"(ten years)");
	return -EINVAL;
}

static void work_login(struct req *r)
{
	char token[160], id[32];
	unsigned retry = 0;
	pd_error err = {0};
	time_t expires = 0;
	int64_t ttl;
	int k;

	if (!body_ok(r, "{\"password\": ...}") || login_ttl(r, &ttl) < 0) {
		free_fields(r);
		return;
	}
	k = auth_login(r->h->auth, r->client, r->fields[0], r->fields[1], ttl, token, sizeof(token),
		       id, sizeof(id), &expires, &retry, &err);
	free_fields(r);
	if (k == -EAGAIN) {
		reply_too_many(r, retry, err.msg);
		return;
	}
	if (k < 0) {
		req_reply_error(r, k, err.msg);
		if (k == -EACCES)
			r->status = 401;
		return;
	}
	const char *accept =
	    MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);
	if (accept && strstr(accept, "text/plain") && !strstr(accept, "application/json")) {
		char line[200];
		int n = snprintf(line, sizeof(line), "%s\n", token);
		req_reply_text(r, 200, "text/plain; charset=utf-8", line, (size_t)n);
	} else {
		json_t *o = json_pack("{s:s, s:s}", "token", token, "id", id);
		if (o && expires) {
			char when[32];
			format_rfc3339(expires, when, sizeof(when));
			json_object_set_new(o, "expires", json_string(when));
		}
		char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
		json_decref(o);
		req_reply_json(r, 200, s ? s : "{}");
		free(s);
	}
	explicit_bzero(token, sizeof(token));
}

/* --- the access handler -------------------------------------------------- */

static enum MHD_Result queue_reply(struct req *r);

enum MHD_Result http_queue_reply(struct req *r)
{
	return queue_reply(r);
}

static enum MHD_Result queue_reply(struct req *r)
{
	enum MHD_Result ok;

	if (!r->resp) {
		req_reply_error(r, ENOMEM, "out of memory");
		if (!r->resp)
			return MHD_NO;
	}
	/* The token was revoked after the request's check: nothing read in
	 * its name goes out (a stream would otherwise start after the
	 * revocation). An action's reply does: what it did was done before
	 * (and the request that revoked its own token hears that it worked). */
	if (atomic_load(&r->revoked) && (r->method == M_GET || r->method == M_HEAD))
		req_reply_token_ended(r);
	http_metrics_count(r);
	ok = MHD_queue_response(r->conn, r->status, r->resp);
	MHD_destroy_response(r->resp);
	r->resp = NULL;
	r->replied = true;
	return ok;
}

static struct req *req_new(struct http *h, struct MHD_Connection *mc, struct conn *c)
{
	struct req *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->h = h;
	r->conn = mc;
	r->c = c;
	r->rootfd = -1;
	r->body.max = HTTP_BODY_MAX;
	r->upload_fd = -1;
	pd_mutex_init(&r->lock, LOCK_RANK_LEAF, 0, "http request lock");
	pd_mutex_lock(&h->park_lock);
	r->serial = ++h->next_serial;
	pd_mutex_unlock(&h->park_lock);
	return r;
}

/* MHD's URI log callback: called once the request line is read, with the
 * URI as received (before any decoding, up to a NUL byte if there is one),
 * before the path and query are decoded. The request starts here (the
 * return value is its con_cls). */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *mc)
{
	struct listener *l = cls;
	struct conn *c = conn_of(mc);
	struct req *r;

	if (!c)
		return NULL; /* no connection state: on_request refuses it */
	r = req_new(l->h, mc, c);
	if (!r)
		return NULL;
	r->raw_uri = uri;
	r->raw_uri_len = strlen(uri);
	/* MHD decodes the path and splits the query in place later: a
	 * preview request relays the bytes as they came (preview-proxy.c). */
	r->uri_copy = strdup(uri);
	r->trusted = l->local && c->peer == 0;
	c->cur = r;
	return r;
}

/* MHD's unescape callback, for the path and every query key and value:
 * MHD's own percent-decoding, noting a decoded control byte (%00 ...) on
 * the request, which is then refused, where MHD would pass the string on
 * cut at a NUL. */
static size_t on_unescape(void *cls, struct MHD_Connection *mc, char *s)
{
	struct conn *c = conn_of(mc);
	size_t n = MHD_http_unescape(s);

	(void)cls;
	if (has_control(s, n, false) && c && c->cur)
		c->cur->bad_bytes = true;
	return n;
}

/* libmicrohttpd 0.9.75 reads the request head in place and hands out C
 * strings: a raw NUL byte in the method, the URI or a header cuts it there
 * without notice ("GET\0junk" is GET, "DELETE\0x" is DELETE). It has no
 * option that refuses such bytes (MHD_OPTION_STRICT_FOR_CLIENT only
 * refuses spaces in the URI and before a header's colon) and shows the raw
 * head to no callback (the URI callback sees the URI up to its first NUL),
 * so whether a byte was hidden is judged from where the strings lie in the
 * buffer MHD read the head into, which it consumes line by line in place:
 *
 * - the method starts the head; MHD writes a NUL over the space after it
 *   and skips more spaces: between the method and the URI lie that NUL and
 *   spaces only;
 * - the URI callback saw the URI up to its first NUL, and the version
 *   follows the whole URI (after the NUL written over a space);
 * - the headers (key, value) follow each other with separators only:
 *   after a key, NUL (written over ':'), spaces and tabs; after a value
 *   (which keeps its trailing spaces), its line end alone (CR LF or LF,
 *   written over with NULs), and after the last, the empty line's too.
 *
 * Any other byte in those gaps, or a longer gap, is what a NUL hid: a
 * control character (400). A head whose strings do not lie so cannot be
 * judged, and is refused as well (400) rather than let through: a folded
 * header (obs-fold, which MHD moves out of the buffer; RFC 7230 section
 * 3.2.4 lets a server refuse it), or a libmicrohttpd that lays the head
 * out otherwise (its tests fail then, not its users' requests). */
enum head_verdict { HEAD_OK, HEAD_CONTROL, HEAD_LAYOUT };

struct head_walk {
	uintptr_t pos, end;
	enum head_verdict verdict;
};

/* [from, to) is at most max bytes of NUL, CR, LF, or of NUL, ':', space
 * and tab (key_gap). */
static bool gap_ok(uintptr_t from, uintptr_t to, size_t max, bool key_gap)
{
	if (to - from > max)
		return false;
	for (const char *p = (const char *)from; (uintptr_t)p < to; p++)
		if (*p && !strchr(key_gap ? ": \t" : "\r\n", *p))
			return false;
	return true;
}

static enum MHD_Result head_header(void *cls, enum MHD_ValueKind kind, const char *key,
				   size_t key_size, const char *value, size_t value_size)
{
	struct head_walk *w = cls;
	uintptr_t k = (uintptr_t)key, v = (uintptr_t)value;

	(void)kind;
	if (has_control(key, key_size, false) || (value && has_control(value, value_size, true))) {
		w->verdict = HEAD_CONTROL;
		return MHD_NO;
	}
	if (!value || k < w->pos || k + key_size > w->end || v < k + key_size ||
	    v + value_size > w->end) {
		w->verdict = HEAD_LAYOUT;
		return MHD_NO;
	}
	if (!gap_ok(w->pos, k, 2, false) || !gap_ok(k + key_size, v, HEAD_SPAN_MAX, true)) {
		w->verdict = HEAD_CONTROL;
		return MHD_NO;
	}
	w->pos = v + value_size;
	return MHD_YES;
}

static enum head_verdict head_judge(struct req *r, const char *method, const char *version)
{
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
	uintptr_t m = (uintptr_t)method, u = (uintptr_t)r->raw_uri, ver = (uintptr_t)version;
	uintptr_t m_end = m + strlen(method);
	struct head_walk w = {0};

	if (!ci || !r->raw_uri || !(m < u && u < ver) || ver - m > HEAD_SPAN_MAX ||
	    ci->header_size > HEAD_SPAN_MAX)
		return HEAD_LAYOUT;
	/* The method's NUL is the one MHD wrote over the first space. */
	if (m_end >= u)
		return HEAD_LAYOUT;
	for (const char *p = (const char *)m_end + 1; (uintptr_t)p < u; p++)
		if (*p != ' ')
			return HEAD_CONTROL;
	if (ver - u != r->raw_uri_len + 1)
		return HEAD_CONTROL; /* a NUL in the URI */
	w.pos = ver + strlen(version);
	w.end = m + ci->header_size;
	if (w.pos > w.end)
		return HEAD_LAYOUT;
	MHD_get_connection_values_n(r->conn, MHD_HEADER_KIND, head_header, &w);
	if (w.verdict == HEAD_OK && !gap_ok(w.pos, w.end, 4, false))
		return HEAD_CONTROL;
	return w.verdict;
}

/* First call: check the request, route and authenticate. Returns false
 * when a reply is already set (an error). */
static bool begin(struct req *r, const char *url, const char *method, const char *version)
{
	const char *v;
	int k;

	if (r->c->l->local && r->c->peer < 0) {
		char msg[160];
		snprintf(msg, sizeof(msg),
			 "the local socket is for root and the members of group %s",
			 engine_access(r->h->engine)->group);
		req_reply_error(r, EACCES, msg);
		return false;
	}
	if (r->bad_bytes) {
		req_reply_error(r, EINVAL, "control character in the request's path or query");
		return false;
	}
	switch (head_judge(r, method, version)) {
	case HEAD_OK:
		break;
	case HEAD_CONTROL:
		req_reply_error(r, EINVAL, "control character in the request line or a header");
		return false;
	case HEAD_LAYOUT:
		req_reply_error(r, EINVAL,
				"request head not understood: a header folded over lines "
				"(obs-fold) is not accepted");
		return false;
	}
	/* Preview URLs (any method, the box's server judges it), by their
	 * host or their path, before every other route. */
	k = http_preview_begin(r, url);
	if (k < 0)
		return false;
	if (k > 0) {
		if (k == 1 && !authorized(r)) {
			reply_unauthorized(r);
			return false;
		}
		if (k == 1 && (k = active_add(r->h, r)) < 0) {
			if (k == -EACCES)
				req_reply_token_ended(r);
			else
				req_reply_error(r, EAGAIN, "out of memory; try again");
			return false;
		}
		return http_preview_start(r, method);
	}
	/* Caddy's on-demand TLS asks before it gets a preview host's
	 * certificate: no token, answered at once (loopback only). */
	if (strcmp(url, HTTP_PREVIEW_ASK_PATH) == 0) {
		http_preview_ask(r);
		return false;
	}
	if (r->method == M_OTHER) {
		req_reply_error(r, EINVAL, "method not supported");
		r->status = 405;
		return false;
	}
	if ((r->method == M_GET || r->method == M_HEAD) &&
	    (strcmp(url, "/") == 0 || strncmp(url, "/panel/", 7) == 0)) {
		r->route = ROUTE_PANEL;
		return true;
	}
	if ((r->method == M_GET || r->method == M_HEAD) && strncmp(url, "/novnc/", 7) == 0) {
		r->route = ROUTE_NOVNC;
		return true;
	}
	if ((r->method == M_GET || r->method == M_HEAD) && strcmp(url, "/setup") == 0) {
		r->route = ROUTE_SETUP_PAGE;
		return true;
	}
	if (r->method == M_POST && strcmp(url, "/v1/setup") == 0) {
		r->route = ROUTE_SETUP;
		return true;
	}
	if (r->method == M_POST && strcmp(url, "/v1/login") == 0) {
		r->route = ROUTE_LOGIN;
		if (login_client(r) < 0) {
			req_reply_error(r, EINVAL,
					"bad X-Forwarded-For from a trusted proxy: expected "
					"addresses separated by commas");
			return false;
		}
		return true;
	}
	if (strncmp(url, "/v1/vnc/", 8) == 0)
		r->route = ROUTE_VNC;
	if ((r->method == M_GET || r->method == M_HEAD) && strcmp(url, "/metrics") == 0)
		r->route = ROUTE_METRICS;
	if (!authorized(r)) {
		reply_unauthorized(r);
		return false;
	}
	/* Listed from now on, so that a revocation reaches it whatever it
	 * is doing; a revocation since the check shows here. */
	k = active_add(r->h, r);
	if (k < 0) {
		if (k == -EACCES)
			req_reply_token_ended(r);
		else
			req_reply_error(r, EAGAIN, "out of memory; try again");
		return false;
	}
	if (r->route == ROUTE_VNC) {
		/* One segment, a box's name (decoded once: NAME%2F.. is "NAME/.."). */
		const char *name = url + 8;
		if (!*name || strchr(name, '/') || strcmp(name, ".") == 0 ||
		    strcmp(name, "..") == 0 || strlen(name) >= sizeof(r->box)) {
			req_reply_error(r, EINVAL, "bad path: /v1/vnc/NAME, NAME a box");
			return false;
		}
		snprintf(r->box, sizeof(r->box), "%s", name);
		return true;
	}
	if (r->route == ROUTE_METRICS)
		return true;
	if (strcmp(url, "/v1/tree") == 0)
		url = "/v1/tree/";
	if (strncmp(url, "/v1/tree/", 9) != 0) {
		req_reply_error(r, ENOENT, "no such route");
		return false;
	}
	r->route = ROUTE_TREE;
	k = parse_tree_path(r, url + 9);
	if (k < 0) {
		req_reply_error(r, k,
				k == -EINVAL ? "bad path: empty, \".\" or \"..\" segment"
					     : "path too long");
		return false;
	}
	v = query(r, "follow");
	r->follow = !(v && strcmp(v, "0") == 0);
	r->format = query(r, "format");
	v = query(r, "recursive");
	r->recursive = v && strcmp(v, "1") == 0;
	return true;
}

static void append_body(struct req *r, const char *data, size_t len)
{
	/* Beyond the cap or out of memory, the request fails as too big. */
	if (!r->too_big && pd_buf_append(&r->body, data, len) < 0)
		r->too_big = true;
}

static void dispatch(struct req *r, const char *url)
{
	switch (r->route) {
	case ROUTE_PANEL:
		http_panel_handle(r, url);
		break;
	case ROUTE_NOVNC:
		http_novnc_handle(r, url);
		break;
	case ROUTE_SETUP_PAGE:
		handle_setup_page(r);
		break;
	case ROUTE_SETUP:
		parse_body_fields(r);
		req_run_async(r, work_setup);
		break;
	case ROUTE_LOGIN:
		parse_body_fields(r);
		pool_submit(&r->h->login, r, work_login);
		break;
	case ROUTE_TREE:
		http_tree_handle(r);
		break;
	case ROUTE_ROOT:
		http_root_handle(r);
		break;
	case ROUTE_VNC:
		http_vnc_handle(r);
		break;
	case ROUTE_METRICS:
		http_metrics_handle(r);
		break;
	default:
		req_reply_error(r, ENOENT, "no such route");
	}
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version, const char *upload_data,
				  size_t *upload_data_size, void **con_cls)
{
	struct req *r = *con_cls;

	(void)cls;
	(void)conn;
	if (!r)
		return MHD_NO; /* out of memory when the request line came */
	if (!r->begun) {
		r->begun = true;
		r->c->cur = NULL;
		r->method = method_of(method);
		bool ok = begin(r, url, method, version);
		/* The head is in. A small body has its own deadline; a big one
		 * (root/ uploads) only MHD's idle timeout. */
		conn_set_deadline(r->c, ok && r->route != ROUTE_ROOT && r->route != ROUTE_PREVIEW &&
						(r->method == M_PUT || r->method == M_POST)
					    ? deadline_in(HTTP_BODY_TIMEOUT_S)
					    : 0);
		if (!ok)
			return queue_reply(r);
		return MHD_YES;
	}

	if (r->replied) {
		*upload_data_size = 0; /* the body of a refused request */
		return MHD_YES;
	}
	if (r->route == ROUTE_PREVIEW)
		return http_preview_request(r, upload_data, upload_data_size);
	if (*upload_data_size) {
		/* Its token was revoked while the body came: nothing more of
		 * it is taken; closing the connection ends the request (an
		 * upload's temp file is removed, a push's extractor reads a cut
		 * archive and merges nothing). */
		if (atomic_load(&r->revoked))
			return MHD_NO;
		if (r->route == ROUTE_ROOT)
			http_root_upload(r, upload_data, *upload_data_size);
		else
			append_body(r, upload_data, *upload_data_size);
		*upload_data_size = 0;
		return MHD_YES;
	}

	if (!r->started) {
		r->started = true;
		conn_set_deadline(r->c, 0);
		if (atomic_load(&r->revoked)) {
			req_reply_token_ended(r);
			return queue_reply(r);
		}
		if (r->too_big) {
			req_reply_error(r, EFBIG, "request body too large (64 KiB at most here)");
			return queue_reply(r);
		}
		if (r->route == ROUTE_ROOT)
			http_root_upload(r, NULL, 0);
		dispatch(r, url);
		pd_mutex_lock(&r->lock);
		bool waiting = r->waiting;
		pd_mutex_unlock(&r->lock);
		if (waiting)
			return MHD_YES; /* called again once resumed */
	} else {
		/* Resumed: the work is done unless this is a spurious call. */
		pd_mutex_lock(&r->lock);
		bool pending = r->waiting && !r->done;
		pd_mutex_unlock(&r->lock);
		if (pending)
			return MHD_YES;
	}
	if (r->route == ROUTE_ROOT)
		http_root_finish_push(r);
	if (!r->resp)
		return MHD_YES;
	return queue_reply(r);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct req *r = *con_cls;

	(void)cls;
	(void)conn;
	(void)toe;
	if (!r)
		return;
	pd_mutex_lock(&r->h->park_lock);
	active_remove_locked(r->h, r);
	pd_mutex_unlock(&r->h->park_lock);
	http_park_disarm(r->h, r);
	http_root_release(r);
	http_vnc_release(r);
	http_preview_release(r);
	if (r->file)
		tree_release(r->h->tree, r->file);
	if (r->resp)
		MHD_destroy_response(r->resp);
	if (r->c) {
		if (r->c->cur == r)
			r->c->cur = NULL;
		/* Kept alive: the next request's head is due. */
		conn_set_deadline(r->c, deadline_in(HTTP_HEAD_TIMEOUT_S));
	}
	free_fields(r);
	free(r->uri_copy);
	/* A body may be a secret's value or a password. */
	if (r->body.data)
		explicit_bzero(r->body.data, r->body.len);
	pd_buf_free(&r->body);
	pd_mutex_destroy(&r->lock);
	free(r);
	*con_cls = NULL;
}

static void log_mhd(void *cls, const char *fmt, va_list ap)
{
	char buf[512];

	vsnprintf(buf, sizeof(buf), fmt, ap);
	buf[strcspn(buf, "\n")] = '\0';
	log_debug("http: %s", buf);
}

/* --- listeners ----------------------------------------------------------- */

static int listen_tcp(const char *spec, int *ret_fd, unsigned *ret_port, pd_error *err)
{
	const char *colon = strrchr(spec, ':');
	char host[64];
	struct sockaddr_storage ss = {0};
	socklen_t sl;
	int fd, one = 1;
	size_t n = (size_t)(colon - spec);

	memcpy(host, spec, n);
	host[n] = '\0';
	unsigned port = (unsigned)atoi(colon + 1);
	if (host[0] == '[') {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
		host[n - 1] = '\0';
		a->sin6_family = AF_INET6;
		a->sin6_port = htons((uint16_t)port);
		inet_pton(AF_INET6, host + 1, &a->sin6_addr);
		sl = sizeof(*a);
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;
		a->sin_family = AF_INET;
		a->sin_port = htons((uint16_t)port);
		inet_pton(AF_INET, host, &a->sin_addr);
		sl = sizeof(*a);
	}
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return pd_error_set(err, -errno, "cannot create a socket: %m");
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, sl) < 0 || listen(fd, SOMAXCONN) < 0) {
		int k = -errno;
		close(fd);
		errno = -k;
		return pd_error_set(err, k, "cannot listen on %s: %m", spec);
	}
	sl = sizeof(ss);
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
		*ret_port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
							   : ((struct sockaddr_in *)&ss)->sin_port);
	*ret_fd = fd;
	return 0;
}

/* The local socket: mode 0660, group the tree's group (root only, 0600,
 * when there is none). The mode is a first gate; every connection's peer
 * is judged again by its credentials (conn_started). */
static int listen_unix(const char *path, const struct pd_access *access, int *ret_fd, pd_error *err)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	gid_t gid = access_gid(access);
	mode_t mode = gid ? 0660 : 0600;
	int fd;
	mode_t old;

	if (strlen(path) >= sizeof(a.sun_path))
		return pd_error_set(err, -ENAMETOOLONG, "socket path too long: %s", path);
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return pd_error_set(err, -errno, "cannot create a socket: %m");
	(void)unlink(path); /* a stale socket of a previous run (the data lock is ours) */
	old = umask(0177);
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		int k = -errno;
		umask(old);
		close(fd);
		errno = -k;
		return pd_error_set(err, k, "cannot bind %s: %m", path);
	}
	umask(old);
	if (chown(path, 0, gid) < 0 || chmod(path, mode) < 0 || listen(fd, SOMAXCONN) < 0) {
		int k = -errno;
		close(fd);
		errno = -k;
		return pd_error_set(err, k, "cannot listen on %s: %m", path);
	}
	*ret_fd = fd;
	return 0;
}

static int start_daemon(struct http *h, struct listener *l, int fd, pd_error *err)
{
	l->h = h;
	/* Idle connections time out (MHD_OPTION_CONNECTION_TIMEOUT, counted
	 * from the last byte either way); suspended ones (parked streams, work
	 * in progress) never do. Heads and small bodies also have a deadline
	 * (sweep_deadlines), and one address a connection cap (on_accept). */
	l->d = MHD_start_daemon(
	    MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME |
		MHD_ALLOW_UPGRADE | MHD_USE_ERROR_LOG,
	    0, on_accept, l, on_request, l, MHD_OPTION_LISTEN_SOCKET, fd,
	    MHD_OPTION_NOTIFY_COMPLETED, on_completed, l, MHD_OPTION_NOTIFY_CONNECTION,
	    on_connection, l, MHD_OPTION_URI_LOG_CALLBACK, on_uri, l, MHD_OPTION_UNESCAPE_CALLBACK,
	    on_unescape, l, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)HTTP_IDLE_TIMEOUT_S,
	    MHD_OPTION_CONNECTION_LIMIT, (unsigned)HTTP_CONNS_MAX, MHD_OPTION_EXTERNAL_LOGGER,
	    log_mhd, NULL, MHD_OPTION_END);
	if (!l->d) {
		close(fd);
		return pd_error_set(err, -EIO, "cannot start the HTTP server");
	}
	return 0;
}

/* First start: a one-time link that lets the owner choose a password. */
static void announce_setup(struct http *h)
{
	char secret[128], url[1024], path[PATH_MAX];
	int k;

	if (auth_has_owner(h->auth))
		return;
	k = auth_setup_begin(h->auth, secret, sizeof(secret));
	if (k < 0) {
		log_error("cannot create the setup link: %s", strerror(-k));
		return;
	}
	if (h->cfg->public_url && *h->cfg->public_url)
		snprintf(url, sizeof(url), "%s/setup?token=%s", h->cfg->public_url, secret);
	else if (h->tcp.d) {
		char host[80];
		snprintf(host, sizeof(host), "%s", h->cfg->listen);
		char *colon = strrchr(host, ':');
		if (colon)
			*colon = '\0';
		if (strcmp(host, "0.0.0.0") == 0)
			snprintf(host, sizeof(host), "127.0.0.1");
		snprintf(url, sizeof(url), "http://%s:%u/setup?token=%s", host, h->port, secret);
	} else
		snprintf(url, sizeof(url), "unix:%s /setup?token=%s", h->socket_path, secret);
	setup_url_path(h, path, sizeof(path));
	char line[1100];
	snprintf(line, sizeof(line), "%s\n", url);
	k = write_file_atomic(path, line, strlen(line), 0600);
	if (k < 0)
		log_error("cannot write %s: %s", path, strerror(-k));
	log_info("setup: open %s to set the owner's password", url);
	explicit_bzero(secret, sizeof(secret));
}

int http_start(struct tree *t, struct engine *e, struct http **ret, pd_error *err)
{
	struct http *h = calloc(1, sizeof(*h));
	const struct pd_config *cfg = engine_config(e);
	int fd = -1, k;

	if (!h)
		return pd_error_set(err, -ENOMEM, "out of memory");
	h->tree = t;
	h->engine = e;
	h->cfg = cfg;
	h->auth = engine_auth(e);
	h->epfd = -1;
	h->stop_efd = -1;
	pd_mutex_init(&h->work.lock, LOCK_RANK_LEAF, LOCK_NO_SLOW, "http work queue lock");
	pthread_cond_init(&h->work.cond, NULL);
	pd_mutex_init(&h->login.lock, LOCK_RANK_LEAF, LOCK_NO_SLOW, "http login queue lock");
	pthread_cond_init(&h->login.cond, NULL);
	pd_mutex_init(&h->park_lock, LOCK_RANK_LISTENER, LOCK_NO_SLOW, "http park_lock");
	pd_mutex_init(&h->conn_lock, LOCK_RANK_LEAF, LOCK_NO_SLOW, "http conn_lock");
	h->epfd = epoll_create1(EPOLL_CLOEXEC);
	h->stop_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (h->epfd < 0 || h->stop_efd < 0) {
		k = -errno;
		http_stop(h);
		return pd_error_set(err, k, "cannot create an epoll set: %s", strerror(-k));
	}
	struct epoll_event ev = {.events = EPOLLIN, .data.u64 = 0};
	epoll_ctl(h->epfd, EPOLL_CTL_ADD, h->stop_efd, &ev);
	if (pthread_create(&h->hangup_thread, NULL, hangup_main, h) != 0) {
		http_stop(h);
		return pd_error_set(err, -EAGAIN, "cannot start a thread");
	}
	h->hangup_started = true;
	/* Logins have threads of their own, as many as can be inside
	 * auth_login() usefully at once, so that waiting for the login budget
	 * never holds the workers of everything else. */
	k = pool_start(&h->work, HTTP_WORKERS, 4096, false, refuse_busy);
	if (k >= 0)
		k = pool_start(&h->login, AUTH_LOGIN_CALLERS, HTTP_LOGIN_BACKLOG, true,
			       refuse_login);
	if (k < 0) {
		http_stop(h);
		return pd_error_set(err, k, "cannot start the HTTP threads: %s", strerror(-k));
	}
	k = engine_add_wake(e, on_wake, h);
	if (k < 0) {
		http_stop(h);
		return pd_error_set(err, k, "too many wake listeners");
	}
	h->wake_added = true;
	k = auth_add_revoke_hook(h->auth, on_revoke, h);
	if (k < 0) {
		http_stop(h);
		return pd_error_set(err, k, "too many revocation hooks");
	}
	h->hook_added = true;
	k = vnc_proxy_new(h, h->auth, &h->vnc);
	if (k < 0) {
		http_stop(h);
		return pd_error_set(err, k, "cannot set up the desktop's WebSockets: %s",
				    strerror(-k));
	}
	k = preview_proxy_new(h, h->auth, &h->preview);
	if (k < 0) {
		http_stop(h);
		return pd_error_set(err, k, "cannot set up the preview proxy: %s", strerror(-k));
	}

	if (strcmp(cfg->listen, "none") != 0) {
		k = listen_tcp(cfg->listen, &fd, &h->port, err);
		if (k >= 0)
			k = start_daemon(h, &h->tcp, fd, err);
		if (k < 0) {
			http_stop(h);
			return k;
		}
	}
	if (strcmp(cfg->socket, "none") != 0) {
		_cleanup_free_ char *dir = strdup(cfg->socket);
		if (dir && strrchr(dir, '/') && strrchr(dir, '/') != dir) {
			*strrchr(dir, '/') = '\0';
			(void)mkdir_p(dir, 0755);
		}
		h->unix_sock.local = true;
		k = listen_unix(cfg->socket, engine_access(e), &fd, err);
		if (k >= 0)
			k = start_daemon(h, &h->unix_sock, fd, err);
		if (k < 0) {
			http_stop(h);
			return k;
		}
		h->socket_path = strdup(cfg->socket);
	}
	if (h->tcp.d) {
		char path[PATH_MAX], url[128], host[80];
		snprintf(host, sizeof(host), "%s", cfg->listen);
		if (strrchr(host, ':'))
			*strrchr(host, ':') = '\0';
		snprintf(url, sizeof(url), "http://%s:%u\n",
			 strcmp(host, "0.0.0.0") == 0 ? "127.0.0.1" : host, h->port);
		snprintf(path, sizeof(path), "%s/http-url", cfg->run);
		(void)write_file_replace(path, url, strlen(url));
		log_info("HTTP on %.*s", (int)strcspn(url, "\n"), url);
	}
	announce_setup(h);
	*ret = h;
	return 0;
}

struct http *http_stop(struct http *h)
{
	if (!h)
		return NULL;
	pd_mutex_lock(&h->park_lock);
	h->stopping = true;
	pd_mutex_unlock(&h->park_lock);
	park_wake(h, 0, /* all= */ true, 0, /* hangup= */ true);
	if (h->wake_added)
		engine_remove_wake(h->engine, on_wake, h);
	if (h->hook_added)
		auth_remove_revoke_hook(h->auth, on_revoke, h);
	pool_stop(&h->login, h->auth);
	pool_stop(&h->work, NULL);
	vnc_proxy_stop(h->vnc);
	preview_proxy_stop(h->preview);
	if (h->tcp.d)
		MHD_stop_daemon(h->tcp.d);
	if (h->unix_sock.d)
		MHD_stop_daemon(h->unix_sock.d);
	vnc_proxy_free(h->vnc);
	preview_proxy_free(h->preview);
	if (h->socket_path)
		(void)unlink(h->socket_path);
	if (h->hangup_started) {
		uint64_t one = 1;
		(void)!write(h->stop_efd, &one, sizeof(one));
		pthread_join(h->hangup_thread, NULL);
	}
	if (h->epfd >= 0)
		close(h->epfd);
	if (h->stop_efd >= 0)
		close(h->stop_efd);
	pd_mutex_destroy(&h->work.lock);
	pthread_cond_destroy(&h->work.cond);
	pd_mutex_destroy(&h->login.lock);
	pthread_cond_destroy(&h->login.cond);
	pd_mutex_destroy(&h->park_lock);
	pd_mutex_destroy(&h->conn_lock);
	free(h->parked);
	free(h->active);
	free(h->addrs);
	free(h->socket_path);
	free(h);
	return NULL;
}
