/* http-internal.h - shared by the HTTP adapter's files: http.c (listeners,
 * routing, auth, workers, parked streams), http-tree.c (tree nodes) and
 * http-root.c (files under a box's root/, tar push and pull). */
#pragma once

#include <jansson.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "engine/auth.h"
#include "engine/engine.h"
#include "common/error.h"
#include "common/buf.h"
#include "common/lock.h"
#include "fs/tree.h"

#define HTTP_BODY_MAX (64 * 1024) /* control writes, login, setup */
#define HTTP_WORKERS 8
#define HTTP_PATH_MAX 4096

/* Connections (web/README.md, "Limits"). */
#define HTTP_CONNS_MAX 4096	/* per listener */
#define HTTP_CONNS_PER_ADDR 128 /* per client address (IPv6: /64), not proxies */
#define HTTP_HEAD_TIMEOUT_S 10	/* request line and headers, or keep-alive idle */
#define HTTP_BODY_TIMEOUT_S 30	/* a whole small body (control writes, login) */
#define HTTP_IDLE_TIMEOUT_S 30	/* no byte either way (big bodies, responses) */
#define HTTP_LOGIN_BACKLOG 64	/* logins waiting for a login thread */

struct http;
struct req;
struct conn;
struct vnc_session;
struct vnc_proxy;
struct preview_req;
struct preview_proxy;

typedef void (*req_work_fn)(struct req *r);

enum req_route {
	ROUTE_NONE,
	ROUTE_PANEL,
	ROUTE_SETUP_PAGE,
	ROUTE_SETUP,
	ROUTE_LOGIN,
	ROUTE_TREE,
	ROUTE_ROOT,
	ROUTE_NOVNC,
	ROUTE_VNC,     /* GET /v1/vnc/NAME: the desktop's WebSocket (vnc-proxy.c) */
	ROUTE_METRICS, /* GET /metrics (metrics.c) */
	ROUTE_PREVIEW, /* a box's published port (preview-proxy.c) */
};

enum req_method { M_GET, M_HEAD, M_PUT, M_POST, M_DELETE, M_OTHER };

/* One request (MHD's con_cls). Owned by the connection: freed by the
 * completion callback. Fields below "async" are guarded by lock. */
struct req {
	struct http *h;
	struct MHD_Connection *conn;
	struct conn *c;			/* the connection's state (http.c) */
	bool trusted;			/* came in on the unix socket from root or the group */
	bool begun;			/* the access handler has seen it */
	char token_id[AUTH_ID_LEN + 1]; /* the token that authenticated it, or "" */
	uint64_t auth_gen;		/* auth_revocations() before the check */
	size_t active_idx;		/* in the server's list of requests by token */
	bool active;			/* listed (park_lock) */
	/* Its token was revoked since it was checked: it must not act, read
	 * or reply any more (set under park_lock, read anywhere). */
	atomic_bool revoked;
	/* The token's expiry when the check found it (0: never; active_add()
	 * refuses the request once it has passed), and, set before revoked
	 * when an expiry rather than a revocation ended it, when it expired
	 * (auth_check_token()'s on a failed check). */
	time_t token_expires;
	_Atomic int64_t expired_at;

	/* the raw request, checked before routing */
	const char *raw_uri; /* as received, up to the first NUL byte */
	size_t raw_uri_len;
	char *uri_copy; /* a copy of it (MHD's is decoded in place), or NULL */
	bool bad_bytes; /* a control byte in the decoded path or query */

	/* login and setup: the client and the body's fields */
	char client[AUTH_CLIENT_MAX + 1];
	char *fields[3]; /* login: password, label, ttl (digits) */
	int fields_err;
	bool ttl_bad; /* login: a JSON ttl that is not an integer */
	bool form;    /* the body was a form (setup answers HTML) */

	enum req_method method;
	enum req_route route;
	char path[HTTP_PATH_MAX]; /* tree path, no leading or trailing '/' */
	bool dir;		  /* the URL ended in '/' */
	char box[64];		  /* ROUTE_ROOT: the box, or the volume */
	bool volume;		  /* ROUTE_ROOT: box names a volume (its data/) */
	char rel[HTTP_PATH_MAX];  /* ROUTE_ROOT: path inside its root ("" = /) */
	bool follow;
	const char *format; /* ?format=, or NULL */
	bool recursive;
	bool started; /* the final call dispatched the request */
	bool replied; /* a response is queued */

	/* the body of small requests, capped at HTTP_BODY_MAX; too_big: it
	 * did not fit */
	struct pd_buf body;
	bool too_big;

	/* the reply, once known */
	struct MHD_Response *resp;
	unsigned status;

	/* a parked stream */
	struct tree_file *file;
	uint64_t serial;
	uint64_t key;
	uint64_t off;
	bool parked, suspended, woken; /* park_lock */
	atomic_bool hangup;	       /* the stream must end: set under park_lock, read anywhere */

	/* root/ uploads and downloads (http-root.c) */
	int rootfd;
	int upload_fd; /* temp file or pipe to the extractor */
	void *upload;  /* http-root.c's state */
	bool upload_failed;

	/* ROUTE_VNC: the session until its upgrade (vnc-proxy.c) */
	struct vnc_session *vnc;
	/* upgraded to a WebSocket, which ends itself on revocation */
	atomic_bool upgraded;

	/* ROUTE_PREVIEW: the relay to the box (preview-proxy.c) */
	struct preview_req *preview;

	/* async: a worker or the extractor thread finishes the request */
	struct pd_mutex lock;
	bool waiting, done;
	req_work_fn work;
};

/* Replies. Each sets r->resp/r->status (replacing an earlier one). */
void req_reply_json(struct req *r, unsigned status, const char *json);
void req_reply_text(struct req *r, unsigned status, const char *type, const char *data, size_t len);
/* The error reply of the contract: status from the errno, JSON body with
 * the reason (err->msg, or strerror when empty; control characters and
 * bytes that are not UTF-8 escaped, text_printable()). */
void req_reply_error(struct req *r, int code, const char *msg);
/* 401 with WWW-Authenticate: Bearer, for a token missing, wrong or revoked. */
void req_reply_unauthorized(struct req *r, const char *msg);
/* 401 for a token that expired at t: "the token expired at RFC3339",
 * WWW-Authenticate: Bearer error="invalid_token". */
void req_reply_expired(struct req *r, time_t t);
/* 401 for a request whose token ended after its check: expired
 * (r->expired_at) or revoked. */
void req_reply_token_ended(struct req *r);
unsigned http_status_from_errno(int code);
/* The JSON listing of the contract, {"path": "/PATH", "entries": arr};
 * takes arr's reference. */
void req_reply_listing(struct req *r, json_t *arr);
/* A JSON string of a name or path from anywhere (a box's file, a client's
 * URL): invalid UTF-8, control characters and the backslash are written as
 * \xHH (text_sanitize()), so building a reply never fails on the bytes and
 * two different names never look alike. NULL only without memory. */
json_t *http_json_text(const char *s);

/* Runs fn on a worker thread with the connection suspended; the
 * connection resumes and the reply is queued when fn returns. */
void req_run_async(struct req *r, req_work_fn fn);
/* For work already running elsewhere (the tar extractor): suspends until
 * req_finish_async() is called (in either order). */
void req_wait_async(struct req *r);
void req_finish_async(struct req *r);

struct tree *http_tree(struct http *h);
struct engine *http_engine(struct http *h);

/* Parking of stream reads (http.c). */
void http_park_arm(struct http *h, struct req *r, uint64_t key);
/* After a read returned TREE_WAIT: suspends the connection unless a wake
 * came since http_park_arm(). */
void http_park_suspend(struct http *h, struct req *r);
void http_park_disarm(struct http *h, struct req *r);

/* metrics.c: GET /metrics, and the count of a reply about to be queued. */
void http_metrics_handle(struct req *r);
void http_metrics_count(const struct req *r);

/* http-tree.c */
void http_tree_handle(struct req *r);

/* http-root.c */
/* Called for every piece of a root/ request's body (and once with len 0 at
 * the end, before http_root_handle). Returns false to refuse the upload. */
void http_root_upload(struct req *r, const char *data, size_t len);
void http_root_handle(struct req *r);
void http_root_release(struct req *r);
/* Once a tar push's extractor has finished and the connection resumed:
 * turns its result into the reply (no-op for other requests). */
void http_root_finish_push(struct req *r);

/* Static code (http-static.c): the panel's assets at / and /panel/FILE, and
 * noVNC's modules at /novnc/PATH.js from the config's novnc_dir; both
 * public, with the panel's security headers (Content-Security-Policy ...),
 * which http_static_headers() adds to resp with its content type. */
void http_panel_handle(struct req *r, const char *url);
void http_novnc_handle(struct req *r, const char *url);
void http_static_headers(struct MHD_Response *resp, const char *content_type);
/* A request header's value, or NULL. */
const char *req_header(struct req *r, const char *name);
/* Whether a comma-separated header list (Connection, Upgrade,
 * Sec-WebSocket-Protocol) holds token, tl bytes long (case-insensitive). */
bool http_list_has(const char *list, const char *token, size_t tl);
/* vnc-proxy.c: the desktop's WebSocket, GET /v1/vnc/NAME (r->box). */
int vnc_proxy_new(struct http *h, struct auth *a, struct vnc_proxy **ret);
/* Ends every open session; before the HTTP daemons stop. */
void vnc_proxy_stop(struct vnc_proxy *p);
/* After they stopped. */
void vnc_proxy_free(struct vnc_proxy *p);
struct vnc_proxy *http_vnc_proxy(struct http *h);
void http_vnc_handle(struct req *r);
/* From on_completed: frees a session whose upgrade never happened. */
void http_vnc_release(struct req *r);
/* The token a browser sends as the subprotocol "paddock-token.TOKEN" in
 * Sec-WebSocket-Protocol (it cannot set Authorization on a WebSocket):
 * copied into buf (size bytes with its NUL); false when there is none. */
bool http_vnc_protocol_token(struct req *r, char *buf, size_t size);

/* preview-proxy.c: preview URLs, a box's published ports (docs/preview.md). */
int preview_proxy_new(struct http *h, struct auth *a, struct preview_proxy **ret);
/* Resumes every request it holds suspended and ends every WebSocket;
 * before the HTTP daemons stop. */
void preview_proxy_stop(struct preview_proxy *p);
void preview_proxy_free(struct preview_proxy *p);
struct preview_proxy *http_preview_proxy(struct http *h);
/* From begin(), before the method check: 0 not a preview request (the
 * other routes follow); -1 a preview request refused (reply set: a bad
 * host or path, no such box, a port not published); 1 a preview request
 * that needs the token; 2 one for a public port (no token). */
int http_preview_begin(struct req *r, const char *url);
/* Once authorized: connects to the box and prepares the request's head;
 * false with the reply set (503 box not running, 502 nothing listens). */
bool http_preview_start(struct req *r, const char *method);
/* Every later call of the access handler (body pieces, the final call,
 * resumptions). */
enum MHD_Result http_preview_request(struct req *r, const char *upload_data,
				     size_t *upload_data_size);
/* From on_completed. */
void http_preview_release(struct req *r);
/* A browser's token: the paddock_token cookie or query parameter. */
bool http_preview_token(struct req *r, char *buf, size_t size);
/* GET /v1/preview-ask?domain=NAME, the ask of Caddy's on-demand TLS:
 * sets the reply (200 only for a published PORT-BOX.DOMAIN). From
 * begin(), before the token is checked (Caddy has none). */
#define HTTP_PREVIEW_ASK_PATH "/v1/preview-ask"
void http_preview_ask(struct req *r);
/* Queues r's reply (http.c's own path: revocation checked, r->replied). */
enum MHD_Result http_queue_reply(struct req *r);
