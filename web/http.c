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

#include "auth.h"
#include "http-internal.h"
#include "http.h"
#include "log.h"
#include "panel-assets.h"
#include "util.h"

struct listener {
	struct http *h;
	struct MHD_Daemon *d;
	bool trusted;
};

struct http {
	struct tree *tree;
	struct engine *engine;
	struct auth *auth;
	const struct pd_config *cfg;
	struct listener tcp, unix_sock;
	char *socket_path;
	unsigned port;

	/* workers */
	pthread_mutex_t work_lock;
	pthread_cond_t work_cond;
	struct req **queue;
	size_t queue_n, queue_cap;
	bool stopping;
	pthread_t workers[HTTP_WORKERS];
	size_t n_workers;

	/* parked streams */
	pthread_mutex_t park_lock;
	struct req **parked;
	size_t parked_n, parked_cap;
	uint64_t next_serial;
	int epfd, stop_efd;
	pthread_t hangup_thread;
	bool hangup_started;
	bool wake_added;
};

struct tree *http_tree(struct http *h)
{
	return h->tree;
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
		return 409;
	case E2BIG:
	case EFBIG:
		return 413;
	case ENOSPC:
	case EDQUOT:
		return 507;
	case EAGAIN:
		return 503;
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

void req_reply_error(struct req *r, int code, const char *msg)
{
	_cleanup_free_ char *s = NULL;
	json_t *o;
	int e = code < 0 ? -code : code;

	o = json_pack("{s:s, s:s}", "error", msg && *msg ? msg : strerror(e), "errno",
		      errno_name(e));
	if (o) {
		s = json_dumps(o, JSON_COMPACT);
		json_decref(o);
	}
	req_reply_json(r, http_status_from_errno(e), s ? s : "{\"error\":\"out of memory\"}");
	if (r->resp && e == EACCES && r->status == 401)
		MHD_add_response_header(r->resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
}

void req_reply_listing(struct req *r, json_t *arr)
{
	char path[HTTP_PATH_MAX + 2];
	json_t *o;
	char *s;

	snprintf(path, sizeof(path), "/%s", r->path);
	o = json_pack("{s:s, s:o}", "path", path, "entries", arr);
	s = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	if (s)
		req_reply_json(r, 200, s);
	else
		req_reply_error(r, ENOMEM, "out of memory");
	free(s);
}

static void reply_unauthorized(struct req *r, const char *msg)
{
	req_reply_error(r, EACCES, msg);
	r->status = 401;
	if (r->resp)
		MHD_add_response_header(r->resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
}

/* --- workers ------------------------------------------------------------- */

static void *worker_main(void *arg)
{
	struct http *h = arg;

	for (;;) {
		struct req *r;

		pthread_mutex_lock(&h->work_lock);
		while (h->queue_n == 0 && !h->stopping)
			pthread_cond_wait(&h->work_cond, &h->work_lock);
		if (h->queue_n == 0) {
			pthread_mutex_unlock(&h->work_lock);
			return NULL;
		}
		r = h->queue[0];
		memmove(h->queue, h->queue + 1, --h->queue_n * sizeof(*h->queue));
		pthread_mutex_unlock(&h->work_lock);

		r->work(r);
		req_finish_async(r);
	}
}

void req_wait_async(struct req *r)
{
	bool resume;

	MHD_suspend_connection(r->conn);
	pthread_mutex_lock(&r->lock);
	r->waiting = true;
	resume = r->done;
	pthread_mutex_unlock(&r->lock);
	if (resume)
		MHD_resume_connection(r->conn);
}

void req_finish_async(struct req *r)
{
	bool resume;

	pthread_mutex_lock(&r->lock);
	r->done = true;
	resume = r->waiting;
	pthread_mutex_unlock(&r->lock);
	if (resume)
		MHD_resume_connection(r->conn);
}

void req_run_async(struct req *r, req_work_fn fn)
{
	struct http *h = r->h;
	bool queued = false;

	r->work = fn;
	req_wait_async(r);
	pthread_mutex_lock(&h->work_lock);
	if (!h->stopping && h->queue_n < h->queue_cap) {
		h->queue[h->queue_n++] = r;
		queued = true;
		pthread_cond_signal(&h->work_cond);
	}
	pthread_mutex_unlock(&h->work_lock);
	if (!queued) {
		req_reply_error(r, EAGAIN, "the server is busy or stopping; try again");
		req_finish_async(r);
	}
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
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	return ci ? ci->connect_fd : -1;
}

void http_park_arm(struct http *h, struct req *r, uint64_t key)
{
	pthread_mutex_lock(&h->park_lock);
	if (!r->parked) {
		if (h->parked_n == h->parked_cap) {
			size_t cap = h->parked_cap ? h->parked_cap * 2 : 64;
			struct req **p = realloc(h->parked, cap * sizeof(*p));
			if (!p) {
				pthread_mutex_unlock(&h->park_lock);
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
	pthread_mutex_unlock(&h->park_lock);
}

void http_park_disarm(struct http *h, struct req *r)
{
	int fd = -1;

	pthread_mutex_lock(&h->park_lock);
	if (r->parked)
		park_remove_locked(h, r);
	if (r->suspended) {
		r->suspended = false;
		fd = conn_fd(r);
	}
	pthread_mutex_unlock(&h->park_lock);
	if (fd >= 0)
		epoll_ctl(h->epfd, EPOLL_CTL_DEL, fd, NULL);
}

void http_park_suspend(struct http *h, struct req *r)
{
	bool resume = false;
	int fd = conn_fd(r);

	MHD_suspend_connection(r->conn);
	pthread_mutex_lock(&h->park_lock);
	if (r->woken || h->stopping || !r->parked) {
		resume = true;
		if (h->stopping)
			r->hangup = true;
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
	pthread_mutex_unlock(&h->park_lock);
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
		pthread_mutex_lock(&h->park_lock);
		for (size_t i = 0; i < h->parked_n && n < ELEMENTSOF(batch);) {
			struct req *r = h->parked[i];
			bool match = all || (serial ? r->serial == serial : r->key == key);

			if (!match) {
				i++;
				continue;
			}
			if (hangup)
				r->hangup = true;
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
		pthread_mutex_unlock(&h->park_lock);
		for (size_t i = 0; i < n; i++)
			MHD_resume_connection(batch[i]);
	} while (n == ELEMENTSOF(batch));
}

static void on_wake(void *userdata, uint64_t key)
{
	park_wake(userdata, key, /* all= */ false, 0, /* hangup= */ false);
}

/* A client that goes away while its stream is parked: resume it so MHD
 * notices and frees the connection. */
static void *hangup_main(void *arg)
{
	struct http *h = arg;
	struct epoll_event ev[64];

	for (;;) {
		int n = epoll_wait(h->epfd, ev, ELEMENTSOF(ev), -1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return NULL;
		}
		for (int i = 0; i < n; i++) {
			if (ev[i].data.u64 == 0)
				return NULL; /* the stop eventfd */
			park_wake(h, 0, false, ev[i].data.u64, /* hangup= */ true);
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

static void client_address(struct req *r, char *buf, size_t size)
{
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	const struct sockaddr *sa = ci ? ci->client_addr : NULL;

	snprintf(buf, size, "unknown");
	if (!sa)
		return;
	if (sa->sa_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, buf,
			  (socklen_t)size);
	else if (sa->sa_family == AF_INET6)
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr,
			  buf, (socklen_t)size);
	else if (sa->sa_family == AF_UNIX)
		snprintf(buf, size, "unix");
}

static bool authorized(struct req *r)
{
	const char *a;

	if (r->trusted)
		return true;
	a = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
	if (!a || strncasecmp(a, "Bearer ", 7) != 0)
		return false;
	a += 7;
	while (*a == ' ')
		a++;
	return auth_check_token(r->h->auth, a) == 0;
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

/* Decodes one application/x-www-form-urlencoded value in place. */
static void form_decode(char *s)
{
	char *o = s;

	for (; *s; s++) {
		if (*s == '+')
			*o++ = ' ';
		else if (*s == '%' && s[1] && s[2]) {
			char hex[3] = {s[1], s[2], 0};
			char *end;
			long v = strtol(hex, &end, 16);
			if (*end || v == 0) {
				*o++ = *s;
				continue;
			}
			*o++ = (char)v;
			s += 2;
		} else
			*o++ = *s;
	}
	*o = '\0';
}

/* Fields of a JSON object or a urlencoded form body. Values are copied into
 * out (NULL when absent). */
static int body_fields(struct req *r, const char *const *keys, char **out, size_t n)
{
	const char *ct =
	    MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);

	for (size_t i = 0; i < n; i++)
		out[i] = NULL;
	/* curl --data sends JSON as a form: the body's first byte decides. */
	if (ct && strncmp(ct, "application/x-www-form-urlencoded", 33) == 0 &&
	    !(r->len && r->body[0] == '{')) {
		_cleanup_free_ char *copy = strndup(r->body ? r->body : "", r->len);
		char *save = NULL;

		if (!copy)
			return -ENOMEM;
		for (char *kv = strtok_r(copy, "&", &save); kv; kv = strtok_r(NULL, "&", &save)) {
			char *eq = strchr(kv, '=');
			if (!eq)
				continue;
			*eq = '\0';
			form_decode(kv);
			form_decode(eq + 1);
			for (size_t i = 0; i < n; i++)
				if (strcmp(kv, keys[i]) == 0 && !out[i])
					out[i] = strdup(eq + 1);
		}
		return 0;
	}
	json_error_t je;
	json_t *o = json_loadb(r->body ? r->body : "", r->len, 0, &je);
	if (!o || !json_is_object(o)) {
		json_decref(o);
		return -EINVAL;
	}
	for (size_t i = 0; i < n; i++) {
		json_t *v = json_object_get(o, keys[i]);
		if (v && json_is_string(v))
			out[i] = strdup(json_string_value(v));
	}
	json_decref(o);
	return 0;
}

static void free_fields(char **f, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (f[i])
			explicit_bzero(f[i], strlen(f[i]));
		free(f[i]);
	}
}

static void setup_url_path(struct http *h, char *buf, size_t size)
{
	snprintf(buf, size, "%s/setup-url", h->cfg->data);
}

static void work_setup(struct req *r)
{
	static const char *const keys[] = {"token", "password"};
	char *f[2];
	pd_error err = {0};
	char path[PATH_MAX];
	int k;

	k = body_fields(r, keys, f, 2);
	if (k < 0 || !f[0] || !f[1]) {
		req_reply_error(r, EINVAL, "expected a token and a password");
		free_fields(f, 2);
		return;
	}
	k = auth_setup_finish(r->h->auth, f[0], f[1], &err);
	free_fields(f, 2);
	if (k < 0) {
		req_reply_error(r, k, err.msg);
		return;
	}
	setup_url_path(r->h, path, sizeof(path));
	(void)unlink(path);
	log_info("owner password set through the setup link");
	const char *ct =
	    MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
	if (ct && strncmp(ct, "application/x-www-form-urlencoded", 33) == 0 &&
	    !(r->len && r->body[0] == '{')) {
		static const char done[] =
		    "<!doctype html><html><body><h1>Password set</h1>"
		    "<p><a href=\"/\">Open the panel</a> and log in.</p></body></html>\n";
		req_reply_text(r, 200, "text/html; charset=utf-8", done, sizeof(done) - 1);
		return;
	}
	req_reply_json(r, 200, "{\"ok\":true}");
}

static void work_login(struct req *r)
{
	static const char *const keys[] = {"password", "label"};
	char *f[2];
	char client[INET6_ADDRSTRLEN + 8], token[160], id[32];
	unsigned retry = 0;
	pd_error err = {0};
	int k;

	k = body_fields(r, keys, f, 2);
	if (k < 0 || !f[0]) {
		req_reply_error(r, EINVAL, "expected {\"password\": ...}");
		free_fields(f, 2);
		return;
	}
	client_address(r, client, sizeof(client));
	k = auth_login(r->h->auth, client, f[0], f[1], token, sizeof(token), id, sizeof(id), &retry,
		       &err);
	free_fields(f, 2);
	if (k == -EAGAIN) {
		char s[16];
		req_reply_error(r, k, err.msg);
		r->status = 429;
		snprintf(s, sizeof(s), "%u", retry ? retry : 1);
		if (r->resp)
			MHD_add_response_header(r->resp, MHD_HTTP_HEADER_RETRY_AFTER, s);
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
		char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
		json_decref(o);
		req_reply_json(r, 200, s ? s : "{}");
		free(s);
	}
	explicit_bzero(token, sizeof(token));
}

static void handle_panel(struct req *r, const char *url)
{
	const char *name = strcmp(url, "/") == 0 ? "index.html" : url + strlen("/panel/");
	const struct panel_asset *a = panel_asset_find(name);
	struct MHD_Response *resp;

	if (!a) {
		req_reply_error(r, ENOENT, "no such page");
		return;
	}
	resp = MHD_create_response_from_buffer(a->size, (void *)a->data, MHD_RESPMEM_PERSISTENT);
	if (!resp)
		return;
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, a->content_type);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
	MHD_add_response_header(resp, "Content-Security-Policy",
				"default-src 'self'; img-src 'self' data:; frame-ancestors 'none'");
	MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
	set_resp(r, 200, resp);
}

/* --- the access handler -------------------------------------------------- */

static enum MHD_Result queue_reply(struct req *r)
{
	enum MHD_Result ok;

	if (!r->resp) {
		req_reply_error(r, ENOMEM, "out of memory");
		if (!r->resp)
			return MHD_NO;
	}
	ok = MHD_queue_response(r->conn, r->status, r->resp);
	MHD_destroy_response(r->resp);
	r->resp = NULL;
	r->replied = true;
	return ok;
}

/* First call: route and authenticate. Returns false when a reply is
 * already set (an error). */
static bool begin(struct req *r, const char *url)
{
	const char *v;
	int k;

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
		return true;
	}
	if (!authorized(r)) {
		reply_unauthorized(r, "missing or invalid token");
		return false;
	}
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
	if (r->too_big)
		return;
	if (r->len + len > HTTP_BODY_MAX) {
		r->too_big = true;
		return;
	}
	char *b = realloc(r->body, r->len + len + 1);
	if (!b) {
		r->too_big = true;
		return;
	}
	memcpy(b + r->len, data, len);
	r->len += len;
	b[r->len] = '\0';
	r->body = b;
}

static void dispatch(struct req *r, const char *url)
{
	switch (r->route) {
	case ROUTE_PANEL:
		handle_panel(r, url);
		break;
	case ROUTE_SETUP_PAGE:
		handle_setup_page(r);
		break;
	case ROUTE_SETUP:
		req_run_async(r, work_setup);
		break;
	case ROUTE_LOGIN:
		req_run_async(r, work_login);
		break;
	case ROUTE_TREE:
		http_tree_handle(r);
		break;
	case ROUTE_ROOT:
		http_root_handle(r);
		break;
	default:
		req_reply_error(r, ENOENT, "no such route");
	}
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version, const char *upload_data,
				  size_t *upload_data_size, void **con_cls)
{
	struct listener *l = cls;
	struct req *r = *con_cls;

	if (!r) {
		r = calloc(1, sizeof(*r));
		if (!r)
			return MHD_NO;
		r->h = l->h;
		r->conn = conn;
		r->trusted = l->trusted;
		r->method = method_of(method);
		r->rootfd = -1;
		r->upload_fd = -1;
		pthread_mutex_init(&r->lock, NULL);
		pthread_mutex_lock(&l->h->park_lock);
		r->serial = ++l->h->next_serial;
		pthread_mutex_unlock(&l->h->park_lock);
		*con_cls = r;
		if (!begin(r, url))
			return queue_reply(r);
		return MHD_YES;
	}

	if (r->replied) {
		*upload_data_size = 0; /* the body of a refused request */
		return MHD_YES;
	}
	if (*upload_data_size) {
		if (r->route == ROUTE_ROOT)
			http_root_upload(r, upload_data, *upload_data_size);
		else
			append_body(r, upload_data, *upload_data_size);
		*upload_data_size = 0;
		return MHD_YES;
	}

	if (!r->started) {
		r->started = true;
		if (r->too_big) {
			req_reply_error(r, EFBIG, "request body too large (64 KiB at most here)");
			return queue_reply(r);
		}
		if (r->route == ROUTE_ROOT)
			http_root_upload(r, NULL, 0);
		dispatch(r, url);
		pthread_mutex_lock(&r->lock);
		bool waiting = r->waiting;
		pthread_mutex_unlock(&r->lock);
		if (waiting)
			return MHD_YES; /* called again once resumed */
	} else {
		/* Resumed: the work is done unless this is a spurious call. */
		pthread_mutex_lock(&r->lock);
		bool pending = r->waiting && !r->done;
		pthread_mutex_unlock(&r->lock);
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

	if (!r)
		return;
	http_park_disarm(r->h, r);
	http_root_release(r);
	if (r->file)
		tree_release(r->h->tree, r->file);
	if (r->resp)
		MHD_destroy_response(r->resp);
	free(r->body);
	pthread_mutex_destroy(&r->lock);
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
	if (bind(fd, (struct sockaddr *)&ss, sl) < 0 || listen(fd, 512) < 0) {
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

static int listen_unix(const char *path, int *ret_fd, pd_error *err)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
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
	if (chmod(path, 0600) < 0 || listen(fd, 512) < 0) {
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
	l->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL |
				    MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG,
				0, NULL, NULL, on_request, l, MHD_OPTION_LISTEN_SOCKET, fd,
				MHD_OPTION_NOTIFY_COMPLETED, on_completed, l,
				MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)600,
				MHD_OPTION_CONNECTION_LIMIT, (unsigned)4096,
				MHD_OPTION_EXTERNAL_LOGGER, log_mhd, NULL, MHD_OPTION_END);
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
	pthread_mutex_init(&h->work_lock, NULL);
	pthread_cond_init(&h->work_cond, NULL);
	pthread_mutex_init(&h->park_lock, NULL);
	h->queue_cap = 4096;
	h->queue = calloc(h->queue_cap, sizeof(*h->queue));
	if (!h->queue) {
		http_stop(h);
		return pd_error_set(err, -ENOMEM, "out of memory");
	}
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
	for (size_t i = 0; i < HTTP_WORKERS; i++) {
		if (pthread_create(&h->workers[i], NULL, worker_main, h) != 0) {
			http_stop(h);
			return pd_error_set(err, -EAGAIN, "cannot start a thread");
		}
		h->n_workers++;
	}
	k = engine_add_wake(e, on_wake, h);
	if (k < 0) {
		http_stop(h);
		return pd_error_set(err, k, "too many wake listeners");
	}
	h->wake_added = true;

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
		h->unix_sock.trusted = true;
		k = listen_unix(cfg->socket, &fd, err);
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
	pthread_mutex_lock(&h->park_lock);
	h->stopping = true;
	pthread_mutex_unlock(&h->park_lock);
	park_wake(h, 0, /* all= */ true, 0, /* hangup= */ true);
	if (h->wake_added)
		engine_remove_wake(h->engine, on_wake, h);
	pthread_mutex_lock(&h->work_lock);
	h->stopping = true;
	pthread_cond_broadcast(&h->work_cond);
	pthread_mutex_unlock(&h->work_lock);
	for (size_t i = 0; i < h->n_workers; i++)
		pthread_join(h->workers[i], NULL);
	if (h->tcp.d)
		MHD_stop_daemon(h->tcp.d);
	if (h->unix_sock.d)
		MHD_stop_daemon(h->unix_sock.d);
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
	pthread_mutex_destroy(&h->work_lock);
	pthread_cond_destroy(&h->work_cond);
	pthread_mutex_destroy(&h->park_lock);
	free(h->parked);
	free(h->queue);
	free(h->socket_path);
	free(h);
	return NULL;
}
