/* vnc-proxy.c - GET /v1/vnc/NAME: a WebSocket (RFC 6455) that carries the
 * RFB stream of a box's desktop between the panel's noVNC and the box's
 * Xvnc (web/README.md, "The desktop's WebSocket").
 *
 * The request is authenticated like every other (a Bearer token, or the
 * token as the subprotocol "paddock-token.TOKEN" since a browser cannot
 * set headers on a WebSocket; http.c), then checked here: a WebSocket
 * handshake, an Origin that is the server's own when one is sent, a box
 * that exists, `control=1` only for a caller that may write the box, and
 * a desktop that listens (engine_desktop_vnc_connect(), which never follows
 * a link the box made). Only then is the connection upgraded (101), so every
 * refusal is a plain HTTP status before any WebSocket exists.
 *
 * Each session runs on a thread of its own with the two sockets
 * non-blocking: wslay (libwslay) reads and writes the frames; binary
 * messages' payloads go, as they arrive (wslay's no-buffering mode), through
 * the RFB filter (rfb-filter.h: view-only drops input messages, anything
 * it does not know closes the session) into a bounded buffer towards Xvnc;
 * what Xvnc sends is relayed untouched as binary messages. Neither way
 * buffers without bound: the client is not read while VNC_TO_BOX_MAX bytes
 * wait for Xvnc, and Xvnc is not read while VNC_TO_CLIENT_MAX bytes of
 * frames wait for the client, so a slow side slows the other (TCP's own
 * backpressure) instead of growing memory.
 *
 * A session ends when either side closes; when the box or its desktop stops
 * (Xvnc's socket closes); at once when its token is revoked (the revocation
 * hook wakes the thread, which sends close 1008 and ends within a second
 * whatever the client does); when the client stops answering pings
 * (VNC_DEAD_S); when the server stops (close 1001).
 */
#include <errno.h>
#include <fcntl.h>
#include <nettle/base64.h>
#include <nettle/sha1.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>
#include <wslay/wslay.h>

#include "engine/desktop-vnc.h"
#include "common/log.h"
#include "common/parse.h"
#include "common/util.h"
#include "web/http-internal.h"
#include "web/rfb-filter.h"

#define VNC_SESSIONS_MAX 64		    /* WebSockets open at once (a thread each) */
#define VNC_TO_BOX_MAX (64 * 1024)	    /* filtered bytes waiting for Xvnc */
#define VNC_READ_CHUNK (64 * 1024)	    /* one read of Xvnc, one binary message */
#define VNC_TO_CLIENT_MAX (512 * 1024)	    /* frames waiting for the client */
#define VNC_MSG_MAX (16 * 1024 * 1024)	    /* a client's message (streamed anyway) */
#define VNC_PING_S 30			    /* a ping after this long without a byte */
#define VNC_DEAD_S 75			    /* no byte from the client: it is gone */
#define VNC_CLOSE_MS 1000		    /* time given to a close handshake */
#define VNC_PROTOCOL_TOKEN "paddock-token." /* the subprotocol carrying a token */
#define MIN(a, b) ((a) < (b) ? (a) : (b))

static const char ws_guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

struct vnc_session {
	struct vnc_proxy *p;
	struct vnc_session *prev, *next;
	char token_id[AUTH_ID_LEN + 1]; /* "" for the local socket's peers */
	char box[64];
	bool control;

	int ws_fd;  /* the client's socket (MHD's; closed by MHD) */
	int vnc_fd; /* Xvnc's */
	int efd;    /* wakes the thread: revoked or stopping */
	struct MHD_UpgradeResponseHandle *urh;
	bool started; /* its thread runs (or ran) */

	/* why it must end (under the proxy's lock); expired: when its token
	 * expired, if that (not a revocation) ended it */
	bool revoked, stopping;
	time_t expired;

	/* the thread's own */
	wslay_event_context_ptr ctx;
	struct rfb_filter filter;
	char *extra; /* bytes MHD read past the request head */
	size_t extra_len, extra_off;
	uint8_t frame_op; /* the data message being received */
	bool data_frame;  /* the current frame carries RFB bytes */
	uint8_t to_box[VNC_TO_BOX_MAX + RFB_FILTER_SLACK];
	size_t to_box_len, to_box_off;
	bool failed;	  /* closing: the client broke the rules */
	bool client_gone; /* its socket closed or failed */
	unsigned long long last_rx, last_ping, last_tx, close_deadline;
};

struct vnc_proxy {
	struct http *h;
	struct auth *auth;
	struct pd_mutex lock;
	pthread_cond_t cond;
	struct vnc_session *sessions;
	size_t n;
	bool stopping, hook_added;
};

/* --- the registry and revocation ---------------------------------------- */

static void wake(struct vnc_session *s)
{
	uint64_t one = 1;
	(void)!write(s->efd, &one, sizeof one);
}

/* Called by auth_token_revoke() and auth_expire_tick(): every session of
 * the token ends. */
static void on_revoke(void *userdata, const char *id, time_t expired)
{
	struct vnc_proxy *p = userdata;

	pd_mutex_lock(&p->lock);
	for (struct vnc_session *s = p->sessions; s; s = s->next)
		if (s->token_id[0] && strcmp(s->token_id, id) == 0) {
			if (!s->revoked)
				s->expired = expired;
			s->revoked = true;
			wake(s);
		}
	pd_mutex_unlock(&p->lock);
}

int vnc_proxy_new(struct http *h, struct auth *a, struct vnc_proxy **ret)
{
	struct vnc_proxy *p = calloc(1, sizeof *p);
	int k;

	if (!p)
		return -ENOMEM;
	p->h = h;
	p->auth = a;
	pd_mutex_init(&p->lock, LOCK_RANK_LEAF, LOCK_NO_SLOW, "vnc proxy lock");
	pthread_cond_init(&p->cond, NULL);
	k = auth_add_revoke_hook(a, on_revoke, p);
	if (k < 0) {
		vnc_proxy_free(p);
		return k;
	}
	p->hook_added = true;
	*ret = p;
	return 0;
}

/* Ends every session (close 1001) and waits for their threads, which
 * close their upgraded sockets (MHD_upgrade_action()): before the HTTP
 * daemons stop. Sessions not started yet are freed by their requests
 * (http_vnc_release()), which MHD completes as it stops. */
void vnc_proxy_stop(struct vnc_proxy *p)
{
	if (!p)
		return;
	pd_mutex_lock(&p->lock);
	p->stopping = true;
	for (struct vnc_session *s = p->sessions; s; s = s->next) {
		s->stopping = true;
		wake(s);
	}
	for (;;) {
		bool running = false;
		for (struct vnc_session *s = p->sessions; s; s = s->next)
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

/* After the HTTP daemons stopped. */
void vnc_proxy_free(struct vnc_proxy *p)
{
	if (!p)
		return;
	vnc_proxy_stop(p);
	pthread_cond_destroy(&p->cond);
	pd_mutex_destroy(&p->lock);
	free(p);
}

static void session_free(struct vnc_session *s)
{
	if (s->ctx)
		wslay_event_context_free(s->ctx);
	if (s->vnc_fd >= 0)
		close(s->vnc_fd);
	if (s->efd >= 0)
		close(s->efd);
	free(s->extra);
	free(s);
}

static void session_unlist(struct vnc_session *s)
{
	struct vnc_proxy *p = s->p;

	pd_mutex_lock(&p->lock);
	if (s->prev)
		s->prev->next = s->next;
	else
		p->sessions = s->next;
	if (s->next)
		s->next->prev = s->prev;
	p->n--;
	pthread_cond_broadcast(&p->cond);
	pd_mutex_unlock(&p->lock);
}

/* --- wslay's callbacks ------------------------------------------------------ */

static ssize_t ws_recv(wslay_event_context_ptr ctx, uint8_t *buf, size_t len, int flags, void *user)
{
	struct vnc_session *s = user;
	ssize_t n;

	(void)flags;
	/* Room for what this read may add towards Xvnc, with what wslay
	 * holds from earlier reads (a frame's unread rest, 4 KiB at most). */
	size_t room = sizeof s->to_box - s->to_box_len;
	if (room < 2 * 4096 + RFB_FILTER_SLACK) {
		wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
		return -1;
	}
	if (len > room - 4096 - RFB_FILTER_SLACK)
		len = room - 4096 - RFB_FILTER_SLACK;
	if (s->extra_off < s->extra_len) {
		n = (ssize_t)MIN(len, s->extra_len - s->extra_off);
		memcpy(buf, s->extra + s->extra_off, (size_t)n);
		s->extra_off += (size_t)n;
		return n;
	}
	n = recv(s->ws_fd, buf, len, 0);
	if (n > 0) {
		s->last_rx = now_usec();
		return n;
	}
	if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
		wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
		return -1;
	}
	s->client_gone = true;
	wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
	return -1;
}

static ssize_t ws_send(wslay_event_context_ptr ctx, const uint8_t *data, size_t len, int flags,
		       void *user)
{
	struct vnc_session *s = user;
	ssize_t n;

	(void)flags;
	n = send(s->ws_fd, data, len, MSG_NOSIGNAL);
	if (n >= 0) {
		s->last_tx = now_usec();
		return n;
	}
	if (errno == EAGAIN || errno == EINTR) {
		wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
		return -1;
	}
	s->client_gone = true;
	wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
	return -1;
}

static void close_with(struct vnc_session *s, uint16_t code, const char *reason)
{
	if (!s->close_deadline)
		s->close_deadline = now_usec() + VNC_CLOSE_MS * 1000ULL;
	/* Reading goes on until the client's close comes back (its data is
	 * dropped meanwhile): a socket closed with bytes unread would be
	 * reset, and the client could lose the close frame with the reason. */
	(void)wslay_event_queue_close(s->ctx, code, (const uint8_t *)reason, strlen(reason));
}

static void ws_frame_start(wslay_event_context_ptr ctx,
			   const struct wslay_event_on_frame_recv_start_arg *arg, void *user)
{
	struct vnc_session *s = user;

	(void)ctx;
	s->data_frame = false;
	if (arg->opcode == WSLAY_TEXT_FRAME || arg->opcode == WSLAY_BINARY_FRAME)
		s->frame_op = arg->opcode;
	else if (arg->opcode != WSLAY_CONTINUATION_FRAME)
		return; /* a control frame: wslay answers it */
	if (s->frame_op == WSLAY_TEXT_FRAME) {
		if (!s->failed) {
			s->failed = true;
			close_with(s, WSLAY_CODE_UNSUPPORTED_DATA,
				   "RFB travels in binary messages only");
		}
		return;
	}
	s->data_frame = true;
}

static void ws_frame_chunk(wslay_event_context_ptr ctx,
			   const struct wslay_event_on_frame_recv_chunk_arg *arg, void *user)
{
	struct vnc_session *s = user;
	size_t got = 0;

	(void)ctx;
	if (!s->data_frame || s->failed || s->close_deadline)
		return;
	/* ws_recv() left room for it (asserted: never write past the end). */
	if (arg->data_length + RFB_FILTER_SLACK > sizeof s->to_box - s->to_box_len) {
		s->failed = true;
		close_with(s, WSLAY_CODE_INTERNAL_SERVER_ERROR, "internal error");
		return;
	}
	if (rfb_filter_feed(&s->filter, arg->data, arg->data_length, s->to_box + s->to_box_len,
			    &got) < 0) {
		log_info("vnc %s: closed: %s", s->box, s->filter.why);
		s->failed = true;
		close_with(s, WSLAY_CODE_POLICY_VIOLATION, s->filter.why);
	}
	s->to_box_len += got;
}

static void ws_msg(wslay_event_context_ptr ctx, const struct wslay_event_on_msg_recv_arg *arg,
		   void *user)
{
	(void)ctx;
	(void)arg;
	(void)user;
	/* Pings are answered and a close is echoed by wslay itself. */
}

static const struct wslay_event_callbacks ws_callbacks = {
    .recv_callback = ws_recv,
    .send_callback = ws_send,
    .on_frame_recv_start_callback = ws_frame_start,
    .on_frame_recv_chunk_callback = ws_frame_chunk,
    .on_msg_recv_callback = ws_msg,
};

/* --- the session's thread ---------------------------------------------------- */

static bool box_flush(struct vnc_session *s)
{
	while (s->to_box_off < s->to_box_len) {
		ssize_t n = send(s->vnc_fd, s->to_box + s->to_box_off,
				 s->to_box_len - s->to_box_off, MSG_NOSIGNAL);
		if (n < 0)
			return errno == EAGAIN || errno == EINTR;
		s->to_box_off += (size_t)n;
	}
	s->to_box_off = s->to_box_len = 0;
	return true;
}

/* Reads what Xvnc sent into one binary message. false: it closed. */
static bool box_read(struct vnc_session *s)
{
	static __thread uint8_t buf[VNC_READ_CHUNK];
	ssize_t n = recv(s->vnc_fd, buf, sizeof buf, 0);

	if (n < 0)
		return errno == EAGAIN || errno == EINTR;
	if (n == 0)
		return false;
	struct wslay_event_msg m = {
	    .opcode = WSLAY_BINARY_FRAME, .msg = buf, .msg_length = (size_t)n};
	return wslay_event_queue_msg(s->ctx, &m) == 0;
}

static void session_loop(struct vnc_session *s)
{
	bool box_open = true;

	s->last_rx = s->last_ping = s->last_tx = now_usec();
	for (;;) {
		unsigned long long now = now_usec();
		bool revoked, stopping;
		time_t expired;

		pd_mutex_lock(&s->p->lock);
		revoked = s->revoked;
		stopping = s->stopping;
		expired = s->expired;
		pd_mutex_unlock(&s->p->lock);
		if ((revoked || stopping) && !s->close_deadline) {
			s->failed = true;
			if (revoked && expired) {
				char when[32], why[64];
				format_rfc3339(expired, when, sizeof when);
				snprintf(why, sizeof why, "the token expired at %s", when);
				close_with(s, WSLAY_CODE_POLICY_VIOLATION, why);
			} else if (revoked)
				close_with(s, WSLAY_CODE_POLICY_VIOLATION, "the token was revoked");
			else
				close_with(s, WSLAY_CODE_GOING_AWAY, "the server stops");
		}
		if (s->client_gone)
			return;
		if (s->close_deadline && now >= s->close_deadline)
			return;
		if (!wslay_event_want_read(s->ctx) && !wslay_event_want_write(s->ctx))
			return; /* the close handshake is done */
		if (!s->close_deadline && now - s->last_rx > VNC_DEAD_S * 1000000ULL) {
			log_info("vnc %s: the client stopped answering; closed", s->box);
			return;
		}
		if (!s->close_deadline && now - s->last_rx > VNC_PING_S * 1000000ULL &&
		    now - s->last_ping > VNC_PING_S * 1000000ULL) {
			struct wslay_event_msg m = {.opcode = WSLAY_PING, .msg = NULL};
			(void)wslay_event_queue_msg(s->ctx, &m);
			s->last_ping = now;
		}

		struct pollfd pf[3] = {
		    {.fd = s->efd, .events = POLLIN},
		    {.fd = s->ws_fd},
		    {.fd = box_open ? s->vnc_fd : -1},
		};
		bool room = sizeof s->to_box - s->to_box_len >= 2 * 4096 + RFB_FILTER_SLACK;
		if (wslay_event_want_read(s->ctx) && room)
			pf[1].events |= POLLIN;
		if (wslay_event_want_write(s->ctx))
			pf[1].events |= POLLOUT;
		if (box_open && !s->close_deadline &&
		    wslay_event_get_queued_msg_length(s->ctx) < VNC_TO_CLIENT_MAX)
			pf[2].events |= POLLIN;
		if (box_open && s->to_box_len > s->to_box_off)
			pf[2].events |= POLLOUT;

		int timeout = 1000;
		if (s->close_deadline)
			timeout = (int)MIN(1000ULL, (s->close_deadline - now) / 1000 + 1);
		if (s->extra_off < s->extra_len && room)
			timeout = 0; /* bytes MHD read for us wait */
		int n = poll(pf, 3, timeout);
		if (n < 0 && errno != EINTR)
			return;
		if (pf[0].revents & POLLIN) {
			uint64_t v;
			(void)!read(s->efd, &v, sizeof v);
		}
		if ((pf[1].revents & (POLLIN | POLLHUP | POLLERR)) ||
		    (s->extra_off < s->extra_len && room)) {
			if (wslay_event_recv(s->ctx) != 0)
				return;
		}
		if (box_open && (pf[2].revents & POLLOUT || s->to_box_len > s->to_box_off)) {
			if (!box_flush(s))
				box_open = false;
		}
		if (box_open && pf[2].revents & (POLLIN | POLLHUP | POLLERR)) {
			if (!box_read(s)) {
				box_open = false;
				if (!s->close_deadline)
					close_with(s, WSLAY_CODE_NORMAL_CLOSURE,
						   "the desktop ended (it was turned off, or the "
						   "box stopped)");
			}
		}
		if (!box_open && !s->close_deadline)
			close_with(s, WSLAY_CODE_NORMAL_CLOSURE, "the desktop ended");
		if (wslay_event_want_write(s->ctx) && wslay_event_send(s->ctx) != 0)
			return;
	}
}

/* A graceful end: no more from us (FIN), then what the client still
 * sends is read and dropped until it closes too, for VNC_CLOSE_MS at most,
 * so that closing with bytes unread does not reset the connection before
 * the client read our close frame. */
static void linger(struct vnc_session *s)
{
	unsigned long long end = now_usec() + VNC_CLOSE_MS * 1000ULL;
	char buf[4096];

	if (s->client_gone || shutdown(s->ws_fd, SHUT_WR) < 0)
		return;
	for (unsigned long long now = now_usec(); now < end; now = now_usec()) {
		struct pollfd pf = {.fd = s->ws_fd, .events = POLLIN};
		if (poll(&pf, 1, (int)((end - now) / 1000 + 1)) <= 0)
			return;
		ssize_t n = recv(s->ws_fd, buf, sizeof buf, 0);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
			return;
	}
}

static void *session_main(void *arg)
{
	struct vnc_session *s = arg;

	session_loop(s);
	linger(s);
	(void)shutdown(s->ws_fd, SHUT_RDWR);
	MHD_upgrade_action(s->urh, MHD_UPGRADE_ACTION_CLOSE);
	log_debug("vnc %s: session ended (%llu input messages dropped)", s->box,
		  (unsigned long long)s->filter.dropped);
	session_unlist(s);
	session_free(s);
	return NULL;
}

/* MHD's upgrade handler, in its thread, once the 101 went out. */
static void on_upgraded(void *cls, struct MHD_Connection *connection, void *con_cls,
			const char *extra_in, size_t extra_in_size, MHD_socket sock,
			struct MHD_UpgradeResponseHandle *urh)
{
	struct vnc_session *s = cls;
	struct req *r = con_cls;
	pthread_attr_t attr;
	pthread_t t;
	int fl;

	(void)connection;
	if (r && r->vnc == s) {
		r->vnc = NULL; /* the session's thread owns it from now on */
		atomic_store(&r->upgraded, true);
	}
	s->ws_fd = sock;
	s->urh = urh;
	if (extra_in_size) {
		s->extra = malloc(extra_in_size);
		if (s->extra) {
			memcpy(s->extra, extra_in, extra_in_size);
			s->extra_len = extra_in_size;
		}
	}
	fl = fcntl(sock, F_GETFL);
	if (fl >= 0)
		(void)fcntl(sock, F_SETFL, fl | O_NONBLOCK);
	fl = fcntl(s->vnc_fd, F_GETFL);
	if (fl >= 0)
		(void)fcntl(s->vnc_fd, F_SETFL, fl | O_NONBLOCK);
	pd_mutex_lock(&s->p->lock);
	s->started = true;
	pd_mutex_unlock(&s->p->lock);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if ((extra_in_size && !s->extra) || pthread_create(&t, &attr, session_main, s) != 0) {
		log_error("vnc %s: cannot start the session", s->box);
		pthread_attr_destroy(&attr);
		MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE);
		session_unlist(s);
		session_free(s);
		return;
	}
	pthread_attr_destroy(&attr);
}

/* A request that was answered without its upgrade (the client went away
 * before the 101 was sent): its session never started. */
void http_vnc_release(struct req *r)
{
	struct vnc_session *s = r->vnc;

	if (!s)
		return;
	r->vnc = NULL;
	session_unlist(s);
	session_free(s);
}

/* --- the handshake ------------------------------------------------------------ */

bool http_vnc_protocol_token(struct req *r, char *buf, size_t size)
{
	const char *list = req_header(r, "Sec-WebSocket-Protocol");
	const size_t pl = strlen(VNC_PROTOCOL_TOKEN);

	while (list && *list) {
		while (*list == ' ' || *list == '\t' || *list == ',')
			list++;
		size_t n = strcspn(list, ", \t");
		if (n > pl && strncmp(list, VNC_PROTOCOL_TOKEN, pl) == 0 && n - pl < size) {
			memcpy(buf, list + pl, n - pl);
			buf[n - pl] = '\0';
			return true;
		}
		list += n;
	}
	return false;
}

/* host[:port] of an origin "scheme://host[:port]" without its default port,
 * and its scheme's default port; false if it is not such an origin. */
static bool origin_split(const char *origin, char *hostport, size_t size, const char **def)
{
	const char *p;

	if (strncasecmp(origin, "http://", 7) == 0) {
		p = origin + 7;
		*def = ":80";
	} else if (strncasecmp(origin, "https://", 8) == 0) {
		p = origin + 8;
		*def = ":443";
	} else
		return false;
	size_t n = strcspn(p, "/?#");
	if (!n || p[n] || n >= size)
		return false;
	memcpy(hostport, p, n);
	hostport[n] = '\0';
	size_t dl = strlen(*def);
	if (n > dl && strcasecmp(hostport + n - dl, *def) == 0)
		hostport[n - dl] = '\0';
	return true;
}

/* An Origin, when the client sends one (a browser always does), must be
 * the server's own: the Host the request was sent to (so the panel served
 * from this very address), or the configured public_url's (the panel
 * behind a proxy that rewrites Host). A page of another site cannot then
 * drive a viewer's browser into a socket (cross-site WebSocket hijacking);
 * the token, never sent by a browser on its own (no cookie), is the first
 * guard, this the second. Clients that are not browsers send none. */
static bool origin_ok(struct req *r)
{
	const char *origin = req_header(r, "Origin"), *host = req_header(r, "Host"), *def;
	const char *pub = engine_config(http_engine(r->h))->public_url;
	char o[256], h[256], pu[256];

	if (!origin)
		return true;
	if (!origin_split(origin, o, sizeof o, &def))
		return false;
	if (pub && *pub) {
		const char *pdef;
		size_t pl = strlen(pub);
		char base[256];
		if (pl < sizeof base) {
			memcpy(base, pub, pl + 1);
			while (pl && base[pl - 1] == '/')
				base[--pl] = '\0';
			if (origin_split(base, pu, sizeof pu, &pdef) &&
			    strcasecmp(def, pdef) == 0 && strcasecmp(o, pu) == 0)
				return true;
		}
	}
	if (!host || strlen(host) >= sizeof h)
		return false;
	snprintf(h, sizeof h, "%s", host);
	size_t hl = strlen(h), dl = strlen(def);
	if (hl > dl && strcasecmp(h + hl - dl, def) == 0)
		h[hl - dl] = '\0';
	return strcasecmp(o, h) == 0;
}

/* A Sec-WebSocket-Key: 16 bytes in base64 (24 characters, "==" ending). */
static bool key_ok(const char *k)
{
	if (!k || strlen(k) != 24 || strcmp(k + 22, "==") != 0)
		return false;
	for (size_t i = 0; i < 22; i++)
		if (!strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
			    k[i]))
			return false;
	return true;
}

static void accept_value(const char *key, char out[BASE64_ENCODE_RAW_LENGTH(SHA1_DIGEST_SIZE) + 1])
{
	struct sha1_ctx c;
	uint8_t d[SHA1_DIGEST_SIZE];

	sha1_init(&c);
	sha1_update(&c, strlen(key), (const uint8_t *)key);
	sha1_update(&c, strlen(ws_guid), (const uint8_t *)ws_guid);
	sha1_digest(&c, sizeof d, d);
	base64_encode_raw(out, sizeof d, d);
	out[BASE64_ENCODE_RAW_LENGTH(SHA1_DIGEST_SIZE)] = '\0';
}

/* Whether the caller may watch (write false) or drive (true) box: every
 * token is the owner's, and the local socket's peers are root and the
 * tree's group (access.h), who may read and write every box; tokens have
 * no narrower scope yet. Kept in one place for when they do. */
static bool may_use_box(struct req *r, const struct box_view *v, bool write)
{
	(void)v;
	(void)write;
	return r->trusted || r->token_id[0];
}

void http_vnc_handle(struct req *r)
{
	struct vnc_proxy *p = http_vnc_proxy(r->h);
	const char *v, *protocols = req_header(r, "Sec-WebSocket-Protocol");
	struct box_view box;
	pd_error err = {0};
	char accept[BASE64_ENCODE_RAW_LENGTH(SHA1_DIGEST_SIZE) + 1];
	bool control;
	int k;

	if (r->method != M_GET) {
		req_reply_error(r, EINVAL, "GET only: this is a WebSocket");
		r->status = 405;
		return;
	}
	v = req_header(r, MHD_HTTP_HEADER_UPGRADE);
	if (!v || !http_list_has(v, "websocket", 9) || !(v = req_header(r, MHD_HTTP_HEADER_CONNECTION)) ||
	    !http_list_has(v, "upgrade", 7)) {
		req_reply_error(r, EINVAL,
				"a WebSocket handshake is expected (Upgrade: websocket, "
				"Connection: Upgrade)");
		return;
	}
	v = req_header(r, "Sec-WebSocket-Version");
	if (!v || strcmp(v, "13") != 0) {
		req_reply_error(r, EINVAL, "WebSocket version 13 only");
		if (r->resp)
			MHD_add_response_header(r->resp, "Sec-WebSocket-Version", "13");
		r->status = 426;
		return;
	}
	v = req_header(r, "Sec-WebSocket-Key");
	if (!key_ok(v)) {
		req_reply_error(r, EINVAL, "bad Sec-WebSocket-Key");
		return;
	}
	accept_value(v, accept);
	if (protocols && !http_list_has(protocols, "binary", 6)) {
		req_reply_error(
		    r, EINVAL, "offer the subprotocol \"binary\" (RFB travels in binary messages)");
		return;
	}
	if (!origin_ok(r)) {
		req_reply_error(r, EACCES, "the Origin is not this server's");
		return;
	}
	v = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "control");
	if (v && strcmp(v, "0") != 0 && strcmp(v, "1") != 0) {
		req_reply_error(r, EINVAL, "control=1 or control=0");
		return;
	}
	control = v && strcmp(v, "1") == 0;

	k = engine_box_get(http_engine(r->h), r->box, &box);
	if (k < 0) {
		req_reply_error(r, k == -ENOENT ? ENOENT : -k,
				k == -ENOENT ? "no such box" : strerror(-k));
		return;
	}
	if (!may_use_box(r, &box, false)) {
		req_reply_error(r, EACCES, "this token may not watch the box");
		return;
	}
	if (control && !may_use_box(r, &box, true)) {
		req_reply_error(r, EACCES, "this token may not control the box (use view-only)");
		return;
	}
	if (atomic_load(&r->revoked)) {
		req_reply_token_ended(r);
		return;
	}

	struct vnc_session *s = calloc(1, sizeof *s);
	if (!s) {
		req_reply_error(r, EAGAIN, "out of memory; try again");
		return;
	}
	s->p = p;
	s->ws_fd = -1;
	s->vnc_fd = -1;
	s->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	s->control = control;
	snprintf(s->token_id, sizeof s->token_id, "%s", r->trusted ? "" : r->token_id);
	snprintf(s->box, sizeof s->box, "%s", box.name);
	rfb_filter_init(&s->filter, !control);
	if (s->efd < 0 || wslay_event_context_server_init(&s->ctx, &ws_callbacks, s) != 0) {
		session_free(s);
		req_reply_error(r, EAGAIN, "out of memory; try again");
		return;
	}
	wslay_event_config_set_no_buffering(s->ctx, 1);
	wslay_event_config_set_max_recv_msg_length(s->ctx, VNC_MSG_MAX);

	s->vnc_fd = engine_desktop_vnc_connect(http_engine(r->h), box.id, &err);
	if (s->vnc_fd < 0) {
		k = s->vnc_fd;
		s->vnc_fd = -1;
		session_free(s);
		req_reply_error(r, -k, err.msg);
		if (k == -ENODEV)
			r->status = 409;
		return;
	}

	/* Listed before the reply, so that a revocation from now on reaches
	 * it (http.c's own list reaches the request until then). */
	pd_mutex_lock(&p->lock);
	if (p->stopping || p->n >= VNC_SESSIONS_MAX) {
		pd_mutex_unlock(&p->lock);
		session_free(s);
		req_reply_error(r, EAGAIN, "too many desktop connections; try again later");
		return;
	}
	s->next = p->sessions;
	if (p->sessions)
		p->sessions->prev = s;
	p->sessions = s;
	p->n++;
	pd_mutex_unlock(&p->lock);

	struct MHD_Response *resp = MHD_create_response_for_upgrade(on_upgraded, s);
	if (!resp) {
		session_unlist(s);
		session_free(s);
		req_reply_error(r, EAGAIN, "out of memory; try again");
		return;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_UPGRADE, "websocket");
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "Upgrade");
	MHD_add_response_header(resp, "Sec-WebSocket-Accept", accept);
	if (protocols)
		MHD_add_response_header(resp, "Sec-WebSocket-Protocol", "binary");
	r->vnc = s;
	if (r->resp)
		MHD_destroy_response(r->resp);
	r->resp = resp;
	r->status = MHD_HTTP_SWITCHING_PROTOCOLS;
	log_info("vnc %s: %s viewer connected", box.name, control ? "controlling" : "view-only");
}
