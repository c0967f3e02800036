/* preview-proxy.c - preview URLs: HTTP requests and WebSockets relayed to
 * the servers of a box on its published ports (boxes/NAME/ports,
 * docs/preview.md).
 *
 * Two forms reach port PORT of box BOX:
 *
 * - the path form, /v1/ports/BOX/PORT/REST, relayed with the path /REST
 *   (the raw bytes the client sent, never decoded nor normalised: a
 *   "/../" stays in the path the box's server sees, so whatever it means
 *   it means inside that server);
 * - the host form, when preview_domain is set: a request whose Host is
 *   PORT-BOX.DOMAIN is relayed with its path unchanged
 *   (ports_parse_host()).
 *
 * The box and the port come from the URL or the Host only, and the port
 * must be in the box's list (else 404, listening or not): the connection
 * goes to 127.0.0.1:PORT in the box's network namespace
 * (engine_box_port_connect()), never to an address the box or the client
 * names. A port listed "public" needs no token; any other needs the
 * server's token, as a Bearer header, a paddock_token cookie or a
 * ?paddock_token= query parameter (a browser's first visit; the host form
 * then sets the cookie). Neither the token, its cookie nor its parameter
 * is passed on to the box, nor are hop-by-hop headers.
 *
 * The request goes out as HTTP/1.1 with "Connection: close" (one box
 * connection per request), its body streamed as MHD hands it over: a
 * piece the box does not take at once waits in a bounded buffer while the
 * client's connection is suspended until the box's socket is writable.
 * The box's answer is read without blocking MHD's thread: its head (up to
 * PREVIEW_HEAD_MAX) while suspended, then its body by a content reader that
 * suspends the connection whenever the box has nothing to read (one
 * waiter thread per server watches the box sockets of suspended requests,
 * and their clients' for a hang-up). http-parser reads the answer (its
 * status line, headers, Content-Length or chunked framing), fed at most as
 * many bytes as the reader's buffer has room for, so the body it hands
 * over always fits. Content-Length is kept; a chunked body is decoded and
 * MHD frames it again for the client.
 *
 * An Upgrade: websocket request is relayed the same way; when the box's
 * server answers 101, the client's connection is upgraded (MHD's upgrade
 * API, as the desktop's vnc-proxy.c does) and the bytes are copied both
 * ways untouched by a thread of the session, at most PREVIEW_RELAY_BUF
 * bytes waiting in each direction, until either side closes, the token is
 * revoked or the server stops.
 *
 * GET /v1/preview-ask?domain=NAME is the "ask" of Caddy's on-demand TLS
 * (scripts/install writes it): Caddy asks before it gets a certificate for
 * a name under *.DOMAIN, so that nobody can make it request certificates
 * for made-up names (the CA's rate limits are the server's). 200 only for
 * a PORT-BOX.DOMAIN whose box lists PORT, else 404 (400 malformed). Caddy
 * sends no token: the answer goes to a loopback peer only, never to a
 * request a proxy forwarded, and says yes or no for the exact name asked,
 * as the TLS handshake for that name would anyway. It is a lookup in the
 * engine's memory, no more.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <http_parser.h>

#include "common/config.h"
#include "common/log.h"
#include "common/parse.h"
#include "common/ports.h"
#include "common/util.h"
#include "web/http-internal.h"

#define PREVIEW_HEAD_MAX (64 * 1024)	    /* the box's response head */
#define PREVIEW_OUT_MAX (256 * 1024)	    /* request bytes waiting for the box */
#define PREVIEW_IDLE_S 120		    /* the box silent while a request waits */
#define PREVIEW_RELAY_BUF (64 * 1024)	    /* a WebSocket's bytes waiting, each way */
#define PREVIEW_SESSIONS_MAX 256	    /* WebSockets relayed at once */
#define PREVIEW_TOKEN_PARAM "paddock_token" /* query parameter and cookie */
#define PREVIEW_PREFIX "/v1/ports/"

struct preview_req {
	struct preview_proxy *p;
	struct req *r;
	struct engine_port ep;
	pd_error missing; /* no such box or port (404 after the token) */
	bool host_form;
	bool websocket;			     /* the client asked for Upgrade: websocket */
	char set_cookie[AUTH_TOKEN_LEN + 8]; /* a token from the query, for the cookie */
	char *target;			     /* the path and query sent to the box */
	int fd;				     /* the box's socket */

	/* towards the box: the head, then the body (re-chunked when the
	 * client's was chunked) */
	char *out;
	size_t out_len, out_off;
	bool chunked_up, body_done, up_failed;

	/* from the box: in[in_off..in_len) not yet given to the parser */
	char in[PREVIEW_HEAD_MAX];
	size_t in_len, in_off;
	bool head_done, box_eof;
	http_parser hp;
	bool head_end;	  /* the final answer's head was read (the parser pauses) */
	bool msg_done;	  /* the answer is complete (the parser pauses) */
	bool bodiless;	  /* HEAD, 1xx, 204, 304: no body whatever the head says */
	struct pd_buf hb; /* the head's headers: "name\0value\0"... */
	int hstate;	  /* 0, or the last piece was of a name (1) or a value (2) */
	char *body;	  /* body_reader()'s buffer while the parser runs */
	size_t body_len, body_max;

	/* the waiter (the proxy's lock) */
	uint64_t id;
	bool waiting, timed_out, hangup;
	unsigned long long deadline;
	/* an upgrade's session until MHD hands it the socket */
	struct preview_session *session;
	int client_fd;
	struct preview_req *wprev, *wnext;
};

struct preview_session {
	struct preview_proxy *p;
	struct preview_session *prev, *next;
	char token_id[AUTH_ID_LEN + 1];
	char box[NAME_MAX_LEN + 1];
	int client_fd, box_fd, efd;
	struct MHD_UpgradeResponseHandle *urh;
	bool started, revoked, stopping;
	/* bytes for the box (MHD's extra, then the client's), for the client
	 * (what followed the box's 101 head, then the box's) */
	char to_box[PREVIEW_RELAY_BUF], to_client[PREVIEW_RELAY_BUF];
	size_t tb_len, tb_off, tc_len, tc_off;
};

struct preview_proxy {
	struct http *h;
	struct auth *auth;
	struct pd_mutex lock;
	pthread_cond_t cond;
	int epfd, efd;
	pthread_t thread;
	bool thread_started, stopping, hook_added;
	uint64_t next_id;
	struct preview_req *waiting;
	struct preview_session *sessions;
	size_t n_sessions;
};

/* Starts a thread that takes none of the process's signals (SIGTERM is
 * the FUSE loop's, in the main thread). */
static int start_thread(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	sigset_t all, old;
	int k;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	k = pthread_create(t, attr, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return k;
}

/* --- the waiter ------------------------------------------------------------- */

static void wake_fd(int fd)
{
	uint64_t one = 1;
	(void)!write(fd, &one, sizeof one);
}

/* Lock held: takes pr off the waiter's list and its sockets off epoll. */
static void unwait_locked(struct preview_req *pr)
{
	struct preview_proxy *p = pr->p;

	if (!pr->waiting)
		return;
	pr->waiting = false;
	epoll_ctl(p->epfd, EPOLL_CTL_DEL, pr->fd, NULL);
	if (pr->client_fd >= 0)
		epoll_ctl(p->epfd, EPOLL_CTL_DEL, pr->client_fd, NULL);
	if (pr->wprev)
		pr->wprev->wnext = pr->wnext;
	else
		p->waiting = pr->wnext;
	if (pr->wnext)
		pr->wnext->wprev = pr->wprev;
	pr->wprev = pr->wnext = NULL;
}

/* Suspends the request's connection until the box's socket is ready for
 * events (EPOLLIN or EPOLLOUT), its client hangs up, PREVIEW_IDLE_S pass
 * or the server stops. MHD calls the handler (or the reader) again then. */
static void wait_box(struct preview_req *pr, uint32_t events)
{
	struct preview_proxy *p = pr->p;
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(pr->r->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	bool resume = false;

	MHD_suspend_connection(pr->r->conn);
	pd_mutex_lock(&p->lock);
	if (p->stopping) {
		pr->hangup = true;
		resume = true;
	} else {
		pr->id = ++p->next_id;
		pr->waiting = true;
		pr->deadline = now_usec() + PREVIEW_IDLE_S * 1000000ULL;
		pr->client_fd = ci ? ci->connect_fd : -1;
		pr->wnext = p->waiting;
		if (p->waiting)
			p->waiting->wprev = pr;
		p->waiting = pr;
		struct epoll_event ev = {.events = events | EPOLLONESHOT, .data.u64 = pr->id};
		if (epoll_ctl(p->epfd, EPOLL_CTL_ADD, pr->fd, &ev) < 0) {
			unwait_locked(pr);
			pr->hangup = true;
			resume = true;
		} else if (pr->client_fd >= 0) {
			struct epoll_event ce = {.events = EPOLLRDHUP | EPOLLONESHOT,
						 .data.u64 = pr->id};
			if (epoll_ctl(p->epfd, EPOLL_CTL_ADD, pr->client_fd, &ce) < 0)
				pr->client_fd = -1; /* the deadline still ends it */
		}
	}
	pd_mutex_unlock(&p->lock);
	if (resume)
		MHD_resume_connection(pr->r->conn);
}

static void *waiter_main(void *arg)
{
	struct preview_proxy *p = arg;
	struct epoll_event evs[64];

	for (;;) {
		int n = epoll_wait(p->epfd, evs, ELEMENTSOF(evs), 1000);
		unsigned long long now = now_usec();
		struct MHD_Connection *batch[64];
		size_t nb = 0;

		pd_mutex_lock(&p->lock);
		if (p->stopping) {
			pd_mutex_unlock(&p->lock);
			return NULL;
		}
		for (int i = 0; i < n; i++) {
			if (evs[i].data.u64 == 0) {
				uint64_t v;
				(void)!read(p->efd, &v, sizeof v);
				continue;
			}
			for (struct preview_req *pr = p->waiting; pr; pr = pr->wnext)
				if (pr->id == evs[i].data.u64) {
					unwait_locked(pr);
					batch[nb++] = pr->r->conn;
					break;
				}
		}
		for (struct preview_req *pr = p->waiting, *next; pr && nb < ELEMENTSOF(batch);
		     pr = next) {
			next = pr->wnext;
			if (now >= pr->deadline) {
				pr->timed_out = true;
				unwait_locked(pr);
				batch[nb++] = pr->r->conn;
			}
		}
		pd_mutex_unlock(&p->lock);
		for (size_t i = 0; i < nb; i++)
			MHD_resume_connection(batch[i]);
	}
}

/* --- sessions: WebSockets relayed as bytes ------------------------------------ */

/* Called by auth_token_revoke() and auth_expire_tick(): an expiry ends a
 * session as a revocation does. */
static void on_revoke(void *userdata, const char *id, time_t expired)
{
	struct preview_proxy *p = userdata;

	(void)expired;
	pd_mutex_lock(&p->lock);
	for (struct preview_session *s = p->sessions; s; s = s->next)
		if (s->token_id[0] && strcmp(s->token_id, id) == 0) {
			s->revoked = true;
			wake_fd(s->efd);
		}
	pd_mutex_unlock(&p->lock);
}

int preview_proxy_new(struct http *h, struct auth *a, struct preview_proxy **ret)
{
	struct preview_proxy *p = calloc(1, sizeof *p);
	int k;

	if (!p)
		return -ENOMEM;
	p->h = h;
	p->auth = a;
	pd_mutex_init(&p->lock, LOCK_RANK_LEAF, LOCK_NO_SLOW, "preview proxy lock");
	pthread_cond_init(&p->cond, NULL);
	p->epfd = epoll_create1(EPOLL_CLOEXEC);
	p->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (p->epfd < 0 || p->efd < 0) {
		k = -errno;
		preview_proxy_free(p);
		return k;
	}
	struct epoll_event ev = {.events = EPOLLIN, .data.u64 = 0};
	epoll_ctl(p->epfd, EPOLL_CTL_ADD, p->efd, &ev);
	k = auth_add_revoke_hook(a, on_revoke, p);
	if (k < 0) {
		preview_proxy_free(p);
		return k;
	}
	p->hook_added = true;
	k = -start_thread(&p->thread, NULL, waiter_main, p);
	if (k < 0) {
		preview_proxy_free(p);
		return k;
	}
	p->thread_started = true;
	*ret = p;
	return 0;
}

/* Before the HTTP daemons stop: every suspended request resumes (and
 * fails), every session ends and its thread is waited for. */
void preview_proxy_stop(struct preview_proxy *p)
{
	struct MHD_Connection *batch[64];
	size_t nb;

	if (!p)
		return;
	pd_mutex_lock(&p->lock);
	p->stopping = true;
	for (struct preview_session *s = p->sessions; s; s = s->next) {
		s->stopping = true;
		wake_fd(s->efd);
	}
	pd_mutex_unlock(&p->lock);
	if (p->thread_started) {
		wake_fd(p->efd);
		pthread_join(p->thread, NULL);
		p->thread_started = false;
	}
	do {
		nb = 0;
		pd_mutex_lock(&p->lock);
		while (p->waiting && nb < ELEMENTSOF(batch)) {
			struct preview_req *pr = p->waiting;
			pr->hangup = true;
			unwait_locked(pr);
			batch[nb++] = pr->r->conn;
		}
		pd_mutex_unlock(&p->lock);
		for (size_t i = 0; i < nb; i++)
			MHD_resume_connection(batch[i]);
	} while (nb);
	pd_mutex_lock(&p->lock);
	for (;;) {
		bool running = false;
		for (struct preview_session *s = p->sessions; s; s = s->next)
			running |= s->started;
		if (!running)
			break;
		pd_cond_wait(&p->cond, &p->lock);
	}
	pd_mutex_unlock(&p->lock);
	if (p->hook_added)
		auth_remove_revoke_hook(p->auth, on_revoke, p);
	p->hook_added = false;
}

void preview_proxy_free(struct preview_proxy *p)
{
	if (!p)
		return;
	preview_proxy_stop(p);
	if (p->epfd >= 0)
		close(p->epfd);
	if (p->efd >= 0)
		close(p->efd);
	pthread_cond_destroy(&p->cond);
	pd_mutex_destroy(&p->lock);
	free(p);
}

static void session_free(struct preview_session *s)
{
	if (s->box_fd >= 0)
		close(s->box_fd);
	if (s->efd >= 0)
		close(s->efd);
	free(s);
}

static void session_unlist(struct preview_session *s)
{
	struct preview_proxy *p = s->p;

	pd_mutex_lock(&p->lock);
	if (s->prev)
		s->prev->next = s->next;
	else
		p->sessions = s->next;
	if (s->next)
		s->next->prev = s->prev;
	p->n_sessions--;
	s->started = false;
	pthread_cond_broadcast(&p->cond);
	pd_mutex_unlock(&p->lock);
}

/* Moves bytes from fd into buf (up to its size); false at EOF or error. */
static bool fill(int fd, char *buf, size_t *len, size_t size)
{
	ssize_t n = recv(fd, buf + *len, size - *len, 0);

	if (n > 0) {
		*len += (size_t)n;
		return true;
	}
	return n < 0 && (errno == EAGAIN || errno == EINTR);
}

/* Sends what buf holds from off; false on error. */
static bool drain(int fd, char *buf, size_t *off, size_t *len)
{
	while (*off < *len) {
		ssize_t n = send(fd, buf + *off, *len - *off, MSG_NOSIGNAL);
		if (n < 0)
			return errno == EAGAIN || errno == EINTR;
		*off += (size_t)n;
	}
	*off = *len = 0;
	return true;
}

static void session_loop(struct preview_session *s)
{
	bool client_open = true, box_open = true;

	for (;;) {
		pd_mutex_lock(&s->p->lock);
		bool end = s->revoked || s->stopping;
		pd_mutex_unlock(&s->p->lock);
		if (end)
			return;
		if (!drain(s->box_fd, s->to_box, &s->tb_off, &s->tb_len) ||
		    !drain(s->client_fd, s->to_client, &s->tc_off, &s->tc_len))
			return;
		/* A side closed: the session ends once what that side sent
		 * has reached the other (a WebSocket has no half-closed state
		 * worth keeping: its close is a frame, relayed like any). */
		if ((!client_open && s->tb_len == 0) || (!box_open && s->tc_len == 0))
			return;

		struct pollfd pf[3] = {
		    {.fd = s->efd, .events = POLLIN},
		    {.fd = s->client_fd},
		    {.fd = s->box_fd},
		};
		if (client_open && s->tb_len < sizeof s->to_box)
			pf[1].events |= POLLIN;
		if (s->tc_len)
			pf[1].events |= POLLOUT;
		if (box_open && s->tc_len < sizeof s->to_client)
			pf[2].events |= POLLIN;
		if (s->tb_len)
			pf[2].events |= POLLOUT;
		if (poll(pf, 3, 1000) < 0 && errno != EINTR)
			return;
		if (pf[0].revents & POLLIN) {
			uint64_t v;
			(void)!read(s->efd, &v, sizeof v);
		}
		if (client_open && (pf[1].revents & (POLLIN | POLLHUP | POLLERR)) &&
		    s->tb_len < sizeof s->to_box) {
			size_t before = s->tb_len;
			if (!fill(s->client_fd, s->to_box, &s->tb_len, sizeof s->to_box) ||
			    ((pf[1].revents & (POLLHUP | POLLERR)) && s->tb_len == before &&
			     !(pf[1].revents & POLLIN)))
				client_open = false;
		}
		if (box_open && (pf[2].revents & (POLLIN | POLLHUP | POLLERR)) &&
		    s->tc_len < sizeof s->to_client) {
			size_t before = s->tc_len;
			if (!fill(s->box_fd, s->to_client, &s->tc_len, sizeof s->to_client) ||
			    ((pf[2].revents & (POLLHUP | POLLERR)) && s->tc_len == before &&
			     !(pf[2].revents & POLLIN)))
				box_open = false;
		}
	}
}

static void *session_main(void *arg)
{
	struct preview_session *s = arg;

	session_loop(s);
	(void)shutdown(s->client_fd, SHUT_RDWR);
	MHD_upgrade_action(s->urh, MHD_UPGRADE_ACTION_CLOSE);
	log_debug("preview %s: WebSocket ended", s->box);
	session_unlist(s);
	session_free(s);
	return NULL;
}

static void on_upgraded(void *cls, struct MHD_Connection *connection, void *con_cls,
			const char *extra_in, size_t extra_in_size, MHD_socket sock,
			struct MHD_UpgradeResponseHandle *urh)
{
	struct preview_session *s = cls;
	struct req *r = con_cls;
	pthread_attr_t attr;
	pthread_t t;
	int fl;

	(void)connection;
	if (r) {
		if (r->preview && r->preview->session == s)
			r->preview->session = NULL; /* the thread's from now on */
		atomic_store(&r->upgraded, true);
	}
	s->client_fd = sock;
	s->urh = urh;
	/* What the client sent past its head is the box's (its room was
	 * kept: the box's leftovers went to to_client). */
	if (extra_in_size > sizeof s->to_box - s->tb_len)
		extra_in_size = 0; /* cannot happen with MHD's buffer; never overflow */
	memcpy(s->to_box + s->tb_len, extra_in, extra_in_size);
	s->tb_len += extra_in_size;
	fl = fcntl(sock, F_GETFL);
	if (fl >= 0)
		(void)fcntl(sock, F_SETFL, fl | O_NONBLOCK);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (start_thread(&t, &attr, session_main, s) != 0) {
		log_error("preview %s: cannot start the WebSocket's relay", s->box);
		MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE);
		session_unlist(s);
		session_free(s);
	}
	pthread_attr_destroy(&attr);
}

/* --- the request towards the box ----------------------------------------------- */

/* The token a browser sends instead of Authorization: the paddock_token
 * cookie, else the paddock_token query parameter. */
bool http_preview_token(struct req *r, char *buf, size_t size)
{
	const char *c = req_header(r, "Cookie");
	const size_t kl = strlen(PREVIEW_TOKEN_PARAM);

	while (c && *c) {
		while (*c == ' ' || *c == ';')
			c++;
		size_t n = strcspn(c, ";");
		if (n > kl && strncmp(c, PREVIEW_TOKEN_PARAM "=", kl + 1) == 0 &&
		    n - kl - 1 < size) {
			memcpy(buf, c + kl + 1, n - kl - 1);
			buf[n - kl - 1] = '\0';
			return true;
		}
		c += n;
	}
	c = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, PREVIEW_TOKEN_PARAM);
	if (c && strlen(c) < size) {
		snprintf(buf, size, "%s", c);
		if (r->preview && r->preview->host_form &&
		    strlen(c) < sizeof r->preview->set_cookie)
			snprintf(r->preview->set_cookie, sizeof r->preview->set_cookie, "%s", c);
		return true;
	}
	return false;
}

/* The raw query without the paddock_token parameter ("" when nothing is
 * left), appended to out. */
static int append_query(struct pd_buf *out, const char *q, size_t len)
{
	bool first = true;
	const size_t kl = strlen(PREVIEW_TOKEN_PARAM);

	for (size_t pos = 0; pos <= len;) {
		const char *a = q + pos, *amp = memchr(a, '&', len - pos);
		size_t n = amp ? (size_t)(amp - a) : len - pos;
		pos += n + 1;
		if ((n >= kl && strncmp(a, PREVIEW_TOKEN_PARAM, kl) == 0 &&
		     (n == kl || a[kl] == '=')) ||
		    (n == 0 && !amp))
			continue;
		if (pd_buf_append(out, first ? "?" : "&", 1) < 0 || pd_buf_append(out, a, n) < 0)
			return -ENOMEM;
		first = false;
	}
	return 0;
}

/* The Cookie header without the paddock_token cookie; false when none is
 * left. */
static bool filtered_cookie(const char *c, struct pd_buf *out)
{
	const size_t kl = strlen(PREVIEW_TOKEN_PARAM);
	bool any = false;

	while (*c) {
		while (*c == ' ' || *c == ';')
			c++;
		size_t n = strcspn(c, ";");
		if (n && !(n > kl && strncmp(c, PREVIEW_TOKEN_PARAM "=", kl + 1) == 0)) {
			if (any)
				(void)pd_buf_append(out, "; ", 2);
			(void)pd_buf_append(out, c, n);
			any = true;
		}
		c += n;
	}
	return any;
}

/* Headers never passed on: hop-by-hop ones (RFC 9110 7.6.1), the ones
 * this proxy sets itself, and the client's credentials for this server. */
static bool dropped_header(const char *key)
{
	static const char *const names[] = {
	    "Connection",
	    "Keep-Alive",
	    "Proxy-Connection",
	    "Proxy-Authorization",
	    "Proxy-Authenticate",
	    "TE",
	    "Trailer",
	    "Transfer-Encoding",
	    "Upgrade",
	    "Expect",
	    "Host",
	    "Content-Length",
	    "Cookie",
	    "Forwarded",
	    "X-Forwarded-For",
	    "X-Forwarded-Host",
	    "X-Forwarded-Proto",
	    "X-Forwarded-Prefix",
	};
	for (size_t i = 0; i < ELEMENTSOF(names); i++)
		if (strcasecmp(key, names[i]) == 0)
			return true;
	return false;
}

struct head_ctx {
	struct preview_req *pr;
	struct pd_buf *out;
	const char *connection; /* the client's Connection header */
};

static enum MHD_Result add_header(void *cls, enum MHD_ValueKind kind, const char *key,
				  size_t key_size, const char *value, size_t value_size)
{
	struct head_ctx *c = cls;

	(void)kind;
	if (!value || dropped_header(key))
		return MHD_YES;
	/* Headers the client named in Connection are hop-by-hop too. */
	if (c->connection && http_list_has(c->connection, key, key_size))
		return MHD_YES;
	/* The token is for this server: never for the box, unless the port
	 * is public (no token is checked; an Authorization is the app's). */
	if (strcasecmp(key, "Authorization") == 0 && !c->pr->ep.public)
		return MHD_YES;
	if (pd_buf_append(c->out, key, key_size) < 0 || pd_buf_append(c->out, ": ", 2) < 0 ||
	    pd_buf_append(c->out, value, value_size) < 0 || pd_buf_append(c->out, "\r\n", 2) < 0)
		return MHD_NO;
	return MHD_YES;
}

static bool method_ok(const char *m)
{
	size_t n = strlen(m);

	if (n == 0 || n > 32)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((m[i] >= 'A' && m[i] <= 'Z') || (m[i] >= 'a' && m[i] <= 'z') ||
		      (m[i] >= '0' && m[i] <= '9') || strchr("!#$%&'*+-.^_`|~", m[i])))
			return false;
	return true;
}

/* The head sent to the box. */
static int build_head(struct preview_req *pr, const char *method)
{
	struct req *r = pr->r;
	struct pd_buf b = {.max = PREVIEW_HEAD_MAX + 4096};
	const char *v, *host = req_header(r, "Host");
	struct head_ctx c = {.pr = pr, .out = &b, .connection = req_header(r, "Connection")};
	bool ok;

	ok = pd_buf_printf(&b, "%s %s HTTP/1.1\r\nHost: localhost:%u\r\n", method, pr->target,
			   pr->ep.port) >= 0;
	if (ok && MHD_get_connection_values_n(r->conn, MHD_HEADER_KIND, add_header, &c) < 0)
		ok = false;
	v = req_header(r, "Cookie");
	if (ok && v) {
		struct pd_buf ck = {.max = PREVIEW_HEAD_MAX};
		if (filtered_cookie(v, &ck) && pd_buf_append(&ck, "", 1) >= 0)
			ok = pd_buf_printf(&b, "Cookie: %s\r\n", ck.data) >= 0;
		pd_buf_free(&ck);
	}
	if (ok && host)
		ok = pd_buf_printf(&b, "X-Forwarded-Host: %s\r\n", host) >= 0;
	if (ok)
		ok = pd_buf_printf(&b, "X-Forwarded-Proto: %s\r\n",
				   strncasecmp(engine_config(http_engine(r->h))->public_url
						   ? engine_config(http_engine(r->h))->public_url
						   : "",
					       "https:", 6) == 0
				       ? "https"
				       : "http") >= 0;
	if (ok && !pr->host_form)
		ok = pd_buf_printf(&b, "X-Forwarded-Prefix: " PREVIEW_PREFIX "%s/%u\r\n",
				   pr->ep.box, pr->ep.port) >= 0;
	v = req_header(r, "Transfer-Encoding");
	if (ok && v) {
		pr->chunked_up = true;
		ok = pd_buf_printf(&b, "Transfer-Encoding: chunked\r\n") >= 0;
	} else if (ok && (v = req_header(r, "Content-Length")))
		ok = pd_buf_printf(&b, "Content-Length: %s\r\n", v) >= 0;
	if (ok && pr->websocket)
		ok = pd_buf_printf(&b, "Upgrade: websocket\r\nConnection: Upgrade\r\n\r\n") >= 0;
	else if (ok)
		ok = pd_buf_printf(&b, "Connection: close\r\n\r\n") >= 0;
	if (!ok) {
		pd_buf_free(&b);
		return -E2BIG;
	}
	pr->out = b.data;
	pr->out_len = b.len;
	pr->out_off = 0;
	return 0;
}

static void reply_status(struct req *r, unsigned status, int code, const char *msg)
{
	req_reply_error(r, code, msg);
	r->status = status;
}

/* Parses /v1/ports/BOX/PORT[/REST][?QUERY] from the raw URI the client
 * sent: BOX and PORT literally (no escape), REST and QUERY as they are. */
static int parse_path_form(struct req *r, char *box, unsigned *port, const char **rest)
{
	const char *u = r->uri_copy, *b, *slash;
	size_t pl = strlen(PREVIEW_PREFIX);

	if (!u || strncmp(u, PREVIEW_PREFIX, pl) != 0)
		return -EINVAL;
	b = u + pl;
	slash = strchr(b, '/');
	const char *q = strchr(b, '?');
	if (!slash || (q && q < slash))
		return -EINVAL; /* no PORT segment */
	if ((size_t)(slash - b) > NAME_MAX_LEN)
		return -EINVAL;
	memcpy(box, b, (size_t)(slash - b));
	box[slash - b] = '\0';
	if (!name_valid(box))
		return -EINVAL;
	const char *p = slash + 1;
	size_t n = strcspn(p, "/?");
	if (ports_parse_number(p, n, port) < 0)
		return -EINVAL;
	*rest = p + n;
	return 0;
}

/* The server's own name (public_url's host) is never a preview host, even
 * under preview_domain: the API and the panel stay reachable. */
static bool own_host(const struct pd_config *cfg, const char *host)
{
	char pub[CONFIG_HOST_MAX + 1];
	size_t n;

	if (!host || !cfg->public_url || config_url_host(cfg->public_url, pub, sizeof pub) < 0)
		return false;
	n = strcspn(host, ":");
	return n == strlen(pub) && strncasecmp(host, pub, n) == 0;
}

int http_preview_begin(struct req *r, const char *url)
{
	const struct pd_config *cfg = engine_config(http_engine(r->h));
	struct preview_req *pr;
	char box[NAME_MAX_LEN + 1];
	unsigned port = 0;
	const char *rest = NULL;
	bool host_form = false;
	int k;

	if (cfg->preview_domain && *cfg->preview_domain && !own_host(cfg, req_header(r, "Host"))) {
		k = ports_parse_host(req_header(r, "Host"), cfg->preview_domain, box, sizeof box,
				     &port);
		if (k == -EINVAL) {
			reply_status(r, 400, EINVAL,
				     "bad preview host: PORT-BOX.DOMAIN, PORT a published port of "
				     "box BOX");
			return -1;
		}
		host_form = k == 0;
	}
	if (!host_form) {
		if (strncmp(url, PREVIEW_PREFIX, strlen(PREVIEW_PREFIX)) != 0)
			return 0;
		if (parse_path_form(r, box, &port, &rest) < 0) {
			reply_status(r, 404, ENOENT,
				     "bad preview path: " PREVIEW_PREFIX
				     "BOX/PORT/PATH, BOX a box, PORT a published port");
			return -1;
		}
	} else
		rest = r->uri_copy;
	if (!rest || (host_form && rest[0] != '/')) {
		reply_status(r, 400, EINVAL, "bad request target: a path is expected");
		return -1;
	}
	pr = calloc(1, sizeof *pr);
	if (!pr) {
		reply_status(r, 503, EAGAIN, "out of memory; try again");
		return -1;
	}
	pr->p = http_preview_proxy(r->h);
	pr->r = r;
	pr->fd = -1;
	pr->client_fd = -1;
	pr->host_form = host_form;
	http_parser_init(&pr->hp, HTTP_RESPONSE);
	pr->hp.data = pr;
	pr->hb.max = PREVIEW_HEAD_MAX;
	r->preview = pr;
	r->route = ROUTE_PREVIEW;
	k = engine_box_port_lookup(http_engine(r->h), box, port, &pr->ep, &pr->missing);
	if (k < 0)
		return 1; /* 404 once the token is checked: no box names for anyone */
	/* The path and query for the box: REST ("/" when empty), the query
	 * without the token's parameter. */
	struct pd_buf t = {.max = HTTP_PATH_MAX * 2};
	size_t pathlen = strcspn(rest, "?");
	if ((pathlen ? pd_buf_append(&t, rest, pathlen) : pd_buf_append(&t, "/", 1)) < 0 ||
	    (rest[pathlen] == '?' &&
	     append_query(&t, rest + pathlen + 1, strlen(rest + pathlen + 1)) < 0) ||
	    pd_buf_append(&t, "", 1) < 0) {
		pd_buf_free(&t);
		reply_status(r, 414, ENAMETOOLONG, "request target too long");
		return -1;
	}
	pr->target = t.data;
	return pr->ep.public ? 2 : 1;
}

bool http_preview_start(struct req *r, const char *method)
{
	struct preview_req *pr = r->preview;
	pd_error err = {0};
	const char *v;
	int fd;

	if (pr->missing.code) {
		reply_status(r, 404, ENOENT, pr->missing.msg);
		return false;
	}
	if (!method_ok(method)) {
		reply_status(r, 400, EINVAL, "bad method");
		return false;
	}
	v = req_header(r, MHD_HTTP_HEADER_UPGRADE);
	if (v && http_list_has(v, "websocket", 9) && (v = req_header(r, MHD_HTTP_HEADER_CONNECTION)) &&
	    http_list_has(v, "upgrade", 7))
		pr->websocket = true;
	if (build_head(pr, method) < 0) {
		reply_status(r, 431, E2BIG, "request head too large");
		return false;
	}
	fd = engine_box_port_connect(http_engine(r->h), pr->ep.box_id, pr->ep.port, &err);
	if (fd < 0) {
		unsigned st = fd == -ENOENT ? 404 : fd == -EAGAIN ? 503 : 502;
		reply_status(r, st, fd == -EAGAIN ? EAGAIN : fd == -ENOENT ? ENOENT : -fd, err.msg);
		return false;
	}
	pr->fd = fd;
	return true;
}

/* Sends what waits for the box; false when the box's socket failed. */
static bool flush_out(struct preview_req *pr)
{
	if (pr->up_failed) {
		pr->out_off = pr->out_len = 0;
		return false;
	}
	while (pr->out_off < pr->out_len) {
		ssize_t n =
		    send(pr->fd, pr->out + pr->out_off, pr->out_len - pr->out_off, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return true;
			pr->up_failed = true;
			pr->out_off = pr->out_len = 0;
			return false;
		}
		pr->out_off += (size_t)n;
	}
	pr->out_off = pr->out_len = 0;
	return true;
}

static int out_append(struct preview_req *pr, const char *data, size_t len)
{
	if (pr->out_off && pr->out_off == pr->out_len)
		pr->out_off = pr->out_len = 0;
	if (pr->out_len + len > PREVIEW_OUT_MAX + 64) {
		/* Compact first: what was sent is gone. */
		memmove(pr->out, pr->out + pr->out_off, pr->out_len - pr->out_off);
		pr->out_len -= pr->out_off;
		pr->out_off = 0;
	}
	char *n = realloc(pr->out, pr->out_len + len + 1);
	if (!n)
		return -ENOMEM;
	pr->out = n;
	memcpy(pr->out + pr->out_len, data, len);
	pr->out_len += len;
	return 0;
}

/* --- the box's answer ---------------------------------------------------------- */

static bool header_value_ok(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (((unsigned char)s[i] < 0x20 && s[i] != '\t') || s[i] == 0x7f)
			return false;
	return true;
}

/* Ends the header piece being gathered: a value loses its trailing blanks
 * (the parser drops the leading ones). */
static int end_piece(struct preview_req *pr)
{
	if (pr->hstate == 2)
		while (pr->hb.len &&
		       (pr->hb.data[pr->hb.len - 1] == ' ' || pr->hb.data[pr->hb.len - 1] == '\t'))
			pr->hb.len--;
	return pr->hstate ? pd_buf_append(&pr->hb, "", 1) : 0;
}

/* A piece of a header's name (kind 1) or value (kind 2); a name or value
 * split over two reads comes in two pieces. */
static int on_header_piece(http_parser *hp, const char *at, size_t len, int kind)
{
	struct preview_req *pr = hp->data;

	if (pr->head_end)
		return 0; /* a chunked body's trailer: not passed on */
	if (kind == 2 && pr->hstate == 2) {
		/* A value continued on a line of its own (obs-fold) is refused:
		 * only blanks stand between it and the end of a line. The head
		 * stays whole in pr->in while it is read. */
		const char *q = at;
		while (q > pr->in && (q[-1] == ' ' || q[-1] == '\t'))
			q--;
		if (q > pr->in && q[-1] == '\n')
			return -1;
	}
	if (pr->hstate != kind && end_piece(pr) < 0)
		return -1;
	pr->hstate = kind;
	return pd_buf_append(&pr->hb, at, len) < 0 ? -1 : 0;
}

static int on_header_field(http_parser *hp, const char *at, size_t len)
{
	return on_header_piece(hp, at, len, 1);
}

static int on_header_value(http_parser *hp, const char *at, size_t len)
{
	return on_header_piece(hp, at, len, 2);
}

/* 1 tells the parser the answer has no body. The parser pauses at the
 * final answer's head: the body is read by body_reader(), as MHD asks. */
static int on_headers_complete(http_parser *hp)
{
	struct preview_req *pr = hp->data;
	unsigned st = hp->status_code;

	if (hp->http_major != 1 || st < 100 || st > 599)
		return -1;
	if (st < 200 && st != 101) {
		/* An interim answer (100 Continue, 103) before the final one:
		 * skipped, its headers with it. */
		pd_buf_free(&pr->hb);
		pr->hb = (struct pd_buf){.max = PREVIEW_HEAD_MAX};
		pr->hstate = 0;
		return 1;
	}
	if (end_piece(pr) < 0 || (pr->hstate == 1 && pd_buf_append(&pr->hb, "", 1) < 0))
		return -1;
	pr->hstate = 0;
	pr->head_end = true;
	pr->bodiless = pr->r->method == M_HEAD || st == 204 || st == 304 || st < 200;
	/* A 101 ends here; the parser stops after its head (on_message_complete()). */
	if (st != 101)
		http_parser_pause(hp, 1);
	return pr->bodiless ? 1 : 0;
}

/* Copies the body into body_reader()'s buffer: the parser is never fed
 * more bytes than it has room for. */
static int on_body(http_parser *hp, const char *at, size_t len)
{
	struct preview_req *pr = hp->data;

	if (!pr->body || len > pr->body_max - pr->body_len)
		return -1;
	memcpy(pr->body + pr->body_len, at, len);
	pr->body_len += len;
	return 0;
}

static int on_message_complete(http_parser *hp)
{
	struct preview_req *pr = hp->data;

	if (!pr->head_end)
		return 0; /* an interim answer */
	/* Whatever follows (the box's bytes after a 101) is not HTTP. */
	pr->msg_done = true;
	http_parser_pause(hp, 1);
	return 0;
}

static const http_parser_settings answer_parser = {
    .on_header_field = on_header_field,
    .on_header_value = on_header_value,
    .on_headers_complete = on_headers_complete,
    .on_body = on_body,
    .on_message_complete = on_message_complete,
};

/* Feeds the parser in[in_off..in_off+n); false on an error in the answer. */
static bool parse_in(struct preview_req *pr, size_t n)
{
	enum http_errno e;

	if (HTTP_PARSER_ERRNO(&pr->hp) == HPE_PAUSED)
		http_parser_pause(&pr->hp, 0);
	pr->in_off += http_parser_execute(&pr->hp, &answer_parser, pr->in + pr->in_off, n);
	e = HTTP_PARSER_ERRNO(&pr->hp);
	if (e == HPE_OK || e == HPE_PAUSED)
		return true;
	log_info("preview %s:%u: bad answer from the box: %s", pr->ep.box, pr->ep.port,
		 http_errno_description(e));
	return false;
}

/* The headers gathered from the head, one at each call: false at the end. */
static bool next_header(const struct preview_req *pr, size_t *off, const char **k, const char **v)
{
	size_t kl, vl;

	if (*off >= pr->hb.len)
		return false;
	*k = pr->hb.data + *off;
	kl = strnlen(*k, pr->hb.len - *off);
	if (*off + kl + 1 > pr->hb.len)
		return false;
	*v = *k + kl + 1;
	vl = strnlen(*v, pr->hb.len - *off - kl - 1);
	*off += kl + 1 + vl + 1;
	return true;
}

static ssize_t body_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct preview_req *pr = cls;

	(void)pos;
	if (atomic_load(&pr->r->revoked) || pr->hangup)
		return MHD_CONTENT_READER_END_WITH_ERROR;
	if (pr->bodiless)
		return MHD_CONTENT_READER_END_OF_STREAM; /* whatever follows is dropped */
	for (;;) {
		pr->body = buf;
		pr->body_len = 0;
		pr->body_max = max;
		while (!pr->msg_done && pr->in_off < pr->in_len && pr->body_len < max) {
			size_t n = pr->in_len - pr->in_off;
			if (!parse_in(pr, n < max - pr->body_len ? n : max - pr->body_len)) {
				pr->body = NULL;
				return MHD_CONTENT_READER_END_WITH_ERROR;
			}
		}
		pr->body = NULL;
		if (pr->body_len)
			return (ssize_t)pr->body_len;
		if (pr->msg_done)
			return MHD_CONTENT_READER_END_OF_STREAM;
		if (pr->box_eof) {
			/* The end of a body framed by the connection's close; any
			 * other body is cut short. */
			if (HTTP_PARSER_ERRNO(&pr->hp) == HPE_PAUSED)
				http_parser_pause(&pr->hp, 0);
			http_parser_execute(&pr->hp, &answer_parser, NULL, 0);
			return pr->msg_done ? MHD_CONTENT_READER_END_OF_STREAM
					    : MHD_CONTENT_READER_END_WITH_ERROR;
		}
		if (pr->timed_out)
			return MHD_CONTENT_READER_END_WITH_ERROR;
		pr->in_off = pr->in_len = 0;
		ssize_t k = recv(pr->fd, pr->in, sizeof pr->in, 0);
		if (k > 0) {
			pr->in_len = (size_t)k;
			continue;
		}
		if (k == 0) {
			pr->box_eof = true;
			continue;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN)
			return MHD_CONTENT_READER_END_WITH_ERROR;
		wait_box(pr, EPOLLIN);
		return 0;
	}
}

/* The response for the final answer's head the parser read: the body's
 * framing decides its kind; the box's end-to-end headers go on it. */
static int make_response(struct preview_req *pr, struct MHD_Response **ret_resp)
{
	uint64_t length = pr->hp.content_length; /* ULLONG_MAX: none */
	struct MHD_Response *resp = NULL;
	struct req *r = pr->r;
	const char *k, *v;

	if (pr->bodiless)
		resp = MHD_create_response_from_callback(
		    r->method == M_HEAD && length != ULLONG_MAX ? length : 0, 4096, body_reader, pr,
		    NULL);
	else if ((pr->hp.flags & F_CHUNKED) || length == ULLONG_MAX)
		resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024, body_reader,
							 pr, NULL);
	else
		resp = MHD_create_response_from_callback(length, 64 * 1024, body_reader, pr, NULL);
	if (!resp)
		return -ENOMEM;
	for (size_t off = 0; next_header(pr, &off, &k, &v);) {
		if (!header_value_ok(k, strlen(k)) || strpbrk(k, " \t") ||
		    !header_value_ok(v, strlen(v)))
			continue; /* never a byte a head cannot carry */
		if (strcasecmp(k, "Transfer-Encoding") == 0 ||
		    strcasecmp(k, "Content-Length") == 0 || strcasecmp(k, "Keep-Alive") == 0 ||
		    strcasecmp(k, "Proxy-Connection") == 0 || strcasecmp(k, "Trailer") == 0 ||
		    strcasecmp(k, "TE") == 0)
			continue;
		if (strcasecmp(k, "Connection") == 0 || strcasecmp(k, "Upgrade") == 0)
			continue;
		/* The box may not set this server's token cookie. */
		if (strcasecmp(k, "Set-Cookie") == 0 &&
		    strncasecmp(v, PREVIEW_TOKEN_PARAM "=", strlen(PREVIEW_TOKEN_PARAM) + 1) == 0)
			continue;
		MHD_add_response_header(resp, k, v);
	}
	if (pr->set_cookie[0]) {
		char c[AUTH_TOKEN_LEN + 128];
		snprintf(c, sizeof c, PREVIEW_TOKEN_PARAM "=%s; Path=/; HttpOnly; SameSite=Lax%s",
			 pr->set_cookie,
			 engine_config(http_engine(r->h))->public_url &&
				 strncasecmp(engine_config(http_engine(r->h))->public_url,
					     "https:", 6) == 0
			     ? "; Secure"
			     : "");
		MHD_add_response_header(resp, "Set-Cookie", c);
		explicit_bzero(c, sizeof c);
	}
	/* The path form shares this server's origin with the panel and the
	 * API: the box's pages run in a sandbox (an opaque origin), so their
	 * scripts reach neither the panel's storage nor the API as the
	 * viewer. The host form has an origin of its own per box and port. */
	if (!pr->host_form)
		MHD_add_response_header(resp, "Content-Security-Policy",
					"sandbox allow-scripts allow-forms allow-popups "
					"allow-modals allow-downloads");
	*ret_resp = resp;
	return 0;
}

/* Reads the box's head; 1 when complete (the reply is set), 2 for a 101
 * (in_off after its head), 0 to wait, < 0 when the reply (an error) is set. */
static int read_head(struct preview_req *pr)
{
	struct req *r = pr->r;

	for (;;) {
		if (pr->in_off < pr->in_len && !parse_in(pr, pr->in_len - pr->in_off)) {
			reply_status(r, 502, EPROTO,
				     "the server in the box sent an answer that is not HTTP");
			return -1;
		}
		if (pr->head_end && pr->hp.status_code == 101) {
			if (!pr->websocket) {
				reply_status(r, 502, EPROTO,
					     "the server in the box switched protocols unasked");
				return -1;
			}
			/* The session takes the rest (start_session()). */
			pr->head_done = true;
			return 2;
		}
		if (pr->head_end) {
			struct MHD_Response *resp = NULL;
			if (make_response(pr, &resp) < 0) {
				reply_status(r, 503, EAGAIN, "out of memory; try again");
				return -1;
			}
			pd_buf_free(&pr->hb);
			pr->head_done = true;
			if (r->resp)
				MHD_destroy_response(r->resp);
			r->resp = resp;
			r->status = pr->hp.status_code;
			return 1;
		}
		if (pr->in_len == sizeof pr->in) {
			reply_status(r, 502, E2BIG, "the answer's head from the box is too large");
			return -1;
		}
		if (pr->box_eof) {
			reply_status(
			    r, 502, ECONNRESET,
			    "the server in the box closed the connection without an answer");
			return -1;
		}
		if (pr->timed_out) {
			reply_status(r, 504, ETIMEDOUT,
				     "the server in the box did not answer in time");
			return -1;
		}
		ssize_t n = recv(pr->fd, pr->in + pr->in_len, sizeof pr->in - pr->in_len, 0);
		if (n > 0)
			pr->in_len += (size_t)n;
		else if (n == 0)
			pr->box_eof = true;
		else if (errno == EINTR)
			continue;
		else if (errno == EAGAIN)
			return 0;
		else {
			reply_status(r, 502, ECONNRESET, "the connection to the box failed");
			return -1;
		}
	}
}

/* An upgrade: the session that relays the bytes once MHD sent the 101. */
static bool start_session(struct preview_req *pr)
{
	struct preview_proxy *p = pr->p;
	struct req *r = pr->r;
	struct preview_session *s = calloc(1, sizeof *s);

	if (!s)
		return false;
	s->p = p;
	s->client_fd = -1;
	s->box_fd = -1;
	s->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	snprintf(s->token_id, sizeof s->token_id, "%s", r->trusted ? "" : r->token_id);
	snprintf(s->box, sizeof s->box, "%s", pr->ep.box);
	/* What came after the 101 head is the client's. */
	size_t extra = pr->in_len - pr->in_off;
	if (s->efd < 0 || extra > sizeof s->to_client) {
		session_free(s);
		return false;
	}
	memcpy(s->to_client, pr->in + pr->in_off, extra);
	s->tc_len = extra;
	pd_mutex_lock(&p->lock);
	if (p->stopping || p->n_sessions >= PREVIEW_SESSIONS_MAX) {
		pd_mutex_unlock(&p->lock);
		session_free(s);
		return false;
	}
	s->next = p->sessions;
	if (p->sessions)
		p->sessions->prev = s;
	p->sessions = s;
	p->n_sessions++;
	s->started = true;
	pd_mutex_unlock(&p->lock);
	/* The box's socket is the session's from now on. */
	s->box_fd = pr->fd;
	pr->fd = -1;
	if (r->resp)
		MHD_destroy_response(r->resp);
	r->resp = MHD_create_response_for_upgrade(on_upgraded, s);
	if (!r->resp) {
		pr->fd = s->box_fd;
		s->box_fd = -1;
		session_unlist(s);
		session_free(s);
		return false;
	}
	r->status = MHD_HTTP_SWITCHING_PROTOCOLS;
	pr->session = s;
	return true;
}

/* The head of the box's 101 again, on the response for the session. */
static void copy_upgrade_headers(struct preview_req *pr, struct MHD_Response *resp)
{
	const char *k, *v;

	for (size_t off = 0; next_header(pr, &off, &k, &v);) {
		if (strlen(k) + 2 + strlen(v) >= 4096 || !header_value_ok(k, strlen(k)) ||
		    strpbrk(k, " \t") || !header_value_ok(v, strlen(v)) ||
		    strcasecmp(k, "Connection") == 0 || strcasecmp(k, "Content-Length") == 0 ||
		    strcasecmp(k, "Transfer-Encoding") == 0)
			continue;
		MHD_add_response_header(resp, k, v);
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "Upgrade");
}

enum MHD_Result http_preview_request(struct req *r, const char *upload_data,
				     size_t *upload_data_size)
{
	struct preview_req *pr = r->preview;

	if (atomic_load(&r->revoked)) {
		if (*upload_data_size)
			return MHD_NO;
		req_reply_token_ended(r);
		return http_queue_reply(r);
	}
	if (pr->hangup)
		return MHD_NO;
	if (*upload_data_size) {
		/* A piece of the body: sent now if the box takes it, kept while
		 * the buffer has room, else the connection waits for the box. */
		if (!flush_out(pr) || pr->up_failed) {
			*upload_data_size = 0; /* the box stopped reading: dropped */
			return MHD_YES;
		}
		if (pr->timed_out) {
			reply_status(r, 504, ETIMEDOUT, "the server in the box stopped reading");
			return MHD_NO;
		}
		if (pr->out_len - pr->out_off >= PREVIEW_OUT_MAX) {
			wait_box(pr, EPOLLOUT);
			return MHD_YES;
		}
		size_t n = *upload_data_size;
		if (n > PREVIEW_OUT_MAX)
			n = PREVIEW_OUT_MAX;
		char hdr[24];
		int hl = pr->chunked_up ? snprintf(hdr, sizeof hdr, "%zx\r\n", n) : 0;
		if ((hl && out_append(pr, hdr, (size_t)hl) < 0) ||
		    out_append(pr, upload_data, n) < 0 ||
		    (pr->chunked_up && out_append(pr, "\r\n", 2) < 0))
			return MHD_NO;
		*upload_data_size -= n;
		(void)flush_out(pr);
		return MHD_YES;
	}
	if (!pr->body_done) {
		pr->body_done = true;
		if (pr->chunked_up && out_append(pr, "0\r\n\r\n", 5) < 0)
			return MHD_NO;
	}
	if (!pr->head_done) {
		/* The rest of the request first (a box that answers early and
		 * stops reading gets no more). */
		if (pr->out_off < pr->out_len && flush_out(pr) && pr->out_off < pr->out_len &&
		    !pr->timed_out) {
			wait_box(pr, EPOLLOUT);
			return MHD_YES;
		}
		int k = read_head(pr);
		if (k == 0) {
			wait_box(pr, EPOLLIN);
			return MHD_YES;
		}
		if (k == 2) {
			if (!start_session(pr)) {
				reply_status(r, 503, EAGAIN,
					     "too many WebSockets to boxes; try again later");
				return http_queue_reply(r);
			}
			copy_upgrade_headers(pr, r->resp);
			log_info("preview %s:%u: WebSocket opened", pr->ep.box, pr->ep.port);
		}
	}
	return http_queue_reply(r);
}

void http_preview_release(struct req *r)
{
	struct preview_req *pr = r->preview;

	if (!pr)
		return;
	pd_mutex_lock(&pr->p->lock);
	unwait_locked(pr);
	pd_mutex_unlock(&pr->p->lock);
	r->preview = NULL;
	/* An upgrade that never happened (the client left before the 101). */
	if (pr->session) {
		session_unlist(pr->session);
		session_free(pr->session);
	}
	if (pr->fd >= 0)
		close(pr->fd);
	explicit_bzero(pr->set_cookie, sizeof pr->set_cookie);
	pd_buf_free(&pr->hb);
	free(pr->out);
	free(pr->target);
	free(pr);
}

/* --- the ask of Caddy's on-demand TLS ---------------------------------------- */

/* The connection comes from this host's loopback (127.0.0.0/8, ::1, or a
 * v4-mapped 127.x): not a unix socket, not another address of this host. */
static bool peer_loopback(struct req *r)
{
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	const struct sockaddr *sa = ci ? ci->client_addr : NULL;

	if (!sa)
		return false;
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *a = (const struct sockaddr_in *)(const void *)sa;
		return ((const uint8_t *)&a->sin_addr)[0] == 127;
	}
	if (sa->sa_family == AF_INET6) {
		const struct in6_addr *a =
		    &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;
		return IN6_IS_ADDR_LOOPBACK(a) ||
		       (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
	}
	return false;
}

/* The Host of a request made to the loopback address itself (Caddy's ask
 * URL): 127.x, [::1] or localhost, with a port or not. A public request a
 * reverse proxy passes on carries its site's name instead. */
static bool host_loopback(const char *host)
{
	size_t n;

	if (!host)
		return false;
	if (strncmp(host, "[::1]", 5) == 0)
		n = 5;
	else if (strncasecmp(host, "localhost", 9) == 0)
		n = 9;
	else if (strncmp(host, "127.", 4) == 0)
		n = 4 + strspn(host + 4, "0123456789.");
	else
		return false;
	return host[n] == '\0' || (host[n] == ':' && host[n + 1] &&
				   strspn(host + n + 1, "0123456789") == strlen(host + n + 1));
}

void http_preview_ask(struct req *r)
{
	const struct pd_config *cfg = engine_config(http_engine(r->h));
	const char *name;
	char box[NAME_MAX_LEN + 1];
	struct engine_port ep;
	pd_error err = {0};
	unsigned port;
	int k;

	if (r->method != M_GET && r->method != M_HEAD) {
		reply_status(r, 405, EINVAL, "method not supported: GET " HTTP_PREVIEW_ASK_PATH);
		return;
	}
	/* Caddy on this host asks from loopback, to a loopback URL, with no
	 * forwarding header: a client's request that a reverse proxy on this
	 * host passes on has one or the other. */
	if (!peer_loopback(r) || !host_loopback(req_header(r, "Host")) ||
	    req_header(r, "X-Forwarded-For") || req_header(r, "Forwarded") ||
	    req_header(r, "X-Forwarded-Host") || req_header(r, "X-Real-IP")) {
		reply_status(r, 403, EACCES,
			     "only for the reverse proxy on this server (its on-demand TLS "
			     "ask), from loopback");
		return;
	}
	name = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "domain");
	if (!name || !*name) {
		reply_status(r, 400, EINVAL, "missing ?domain=NAME");
		return;
	}
	if (!cfg->preview_domain || !*cfg->preview_domain) {
		reply_status(r, 404, ENOENT,
			     "no preview_domain: no preview host has a certificate");
		return;
	}
	/* A name, not a Host: no port after it. The server's own name has
	 * its certificate from its own site, never on demand. */
	if (own_host(cfg, name))
		k = -ENOENT;
	else if (strchr(name, ':'))
		k = -EINVAL;
	else
		k = ports_parse_host(name, cfg->preview_domain, box, sizeof box, &port);
	if (k == -EINVAL) {
		reply_status(r, 400, EINVAL, "bad name: PORT-BOX.DOMAIN expected");
		return;
	}
	/* One answer for every name that is not a published port (no box,
	 * a port not listed, another domain, the server's own name): which
	 * of them it was is nobody's business here. */
	if (k < 0 || engine_box_port_lookup(http_engine(r->h), box, port, &ep, &err) < 0) {
		reply_status(r, 404, ENOENT, "not a published preview host");
		return;
	}
	req_reply_json(r, 200, "{\"ok\": true}");
}
