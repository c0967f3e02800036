/* client.c - HTTP requests on the daemon's tree with libcurl (see
 * client.h). */
#include <string.h>

#include "autoconfig.h" /* PACKAGE_VERSION */
#include "cli/cli.h"
#include "cli/client.h"

#define USER_AGENT "paddock-cli/" PACKAGE_VERSION

int cli_client_init(cli_client *c, const char *url, const char *token, pd_error *err)
{
	*c = (cli_client){0};

	if (strncmp(url, "unix:", 5) == 0) {
		const char *path = url + 5;
		if (*path == '\0')
			return pd_error_set(err, -EINVAL, "unix: URL without a socket path");
		if (*path == '/') {
			c->unix_path = strdup(path);
		} else {
			char cwd[4096];
			if (!getcwd(cwd, sizeof(cwd)) ||
			    asprintf(&c->unix_path, "%s/%s", cwd, path) < 0)
				c->unix_path = NULL;
		}
		c->base = strdup("http://localhost");
	} else if (strncmp(url, "http://", 7) == 0 || strncmp(url, "https://", 8) == 0) {
		c->base = strdup(url);
		if (c->base) {
			size_t n = strlen(c->base);
			while (n > 8 && c->base[n - 1] == '/')
				c->base[--n] = '\0';
		}
	} else {
		return pd_error_set(
		    err, -EINVAL, "unsupported URL '%s' (use http://, https:// or unix:PATH)", url);
	}
	if (!c->base || (strncmp(url, "unix:", 5) == 0 && !c->unix_path))
		goto nomem;
	if (token && *token) {
		if (strpbrk(token, "\r\n")) {
			cli_client_release(c);
			return pd_error_set(err, -EINVAL, "the token must be one line");
		}
		if (asprintf(&c->auth, "Authorization: Bearer %s", token) < 0) {
			c->auth = NULL;
			goto nomem;
		}
	}
	c->curl = curl_easy_init();
	if (!c->curl)
		goto nomem;
	return 0;
nomem:
	cli_client_release(c);
	return pd_error_set(err, -ENOMEM, "out of memory");
}

void cli_client_release(cli_client *c)
{
	if (c->curl)
		curl_easy_cleanup(c->curl);
	free(c->base);
	free(c->unix_path);
	free(c->auth);
	free(c->cacert);
	*c = (cli_client){0};
}

int cli_client_set_cacert(cli_client *c, const char *file, pd_error *err)
{
	char *copy = NULL;

	if (file) {
		FILE *f = fopen(file, "rb");
		if (!f)
			return pd_error_set(err, -errno, "cannot read the CA certificates %s: %s",
					    file, strerror(errno));
		fclose(f);
		if (!(copy = strdup(file)))
			return pd_error_set(err, -ENOMEM, "out of memory");
	}
	free(c->cacert);
	c->cacert = copy;
	return 0;
}

char *cli_escape_segment(const char *s)
{
	char *e = curl_easy_escape(NULL, s, 0);
	char *out = e ? strdup(e) : NULL;

	curl_free(e);
	return out;
}

int cli_tree_path(const char *prefix, const char *sub, bool dir_slash, char **ret, pd_error *err)
{
	_cleanup_free_ char *out = strdup(prefix);
	size_t len = strlen(prefix);
	const char *p = sub ? sub : "";

	if (!out)
		return pd_error_set(err, -ENOMEM, "out of memory");
	while (*p) {
		const char *end = p + strcspn(p, "/");
		size_t n = (size_t)(end - p);
		if (n > 0) {
			if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
				return pd_error_set(err, -EINVAL,
						    "'%s': '.' and '..' are not allowed in paths",
						    sub);
			_cleanup_free_ char *seg = strndup(p, n);
			_cleanup_free_ char *esc = seg ? cli_escape_segment(seg) : NULL;
			if (!esc)
				return pd_error_set(err, -ENOMEM, "out of memory");
			size_t el = strlen(esc);
			char *grown = realloc(out, len + el + 3);
			if (!grown)
				return pd_error_set(err, -ENOMEM, "out of memory");
			out = grown;
			if (len > 0 && out[len - 1] != '/')
				out[len++] = '/';
			memcpy(out + len, esc, el + 1);
			len += el;
		}
		p = *end ? end + 1 : end;
	}
	if (dir_slash && (len == 0 || out[len - 1] != '/')) {
		char *grown = realloc(out, len + 2);
		if (!grown)
			return pd_error_set(err, -ENOMEM, "out of memory");
		out = grown;
		out[len++] = '/';
		out[len] = '\0';
	}
	*ret = TAKE_PTR(out);
	return 0;
}

char *cli_box_path(const char *box, const char *file)
{
	_cleanup_free_ char *e = cli_escape_segment(box);
	char *p;

	if (!e || asprintf(&p, "boxes/%s/%s", e, file) < 0)
		return NULL;
	return p;
}

char *cli_tree_url(const cli_client *c, const char *path)
{
	char *url;

	if (asprintf(&url, "%s/v1/tree/%s", c->base, path) < 0)
		return NULL;
	return url;
}

bool cli_response_ok(CURL *h)
{
	long status = 0;

	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	return status >= 200 && status < 300;
}

int cli_status_errno(long status)
{
	switch (status) {
	case 400:
		return -EINVAL;
	case 401:
	case 403:
		return -EACCES;
	case 404:
		return -ENOENT;
	case 409:
		return -EBUSY;
	case 413:
		return -EFBIG;
	case 429:
	case 503:
		return -EAGAIN;
	case 507:
		return -ENOSPC;
	default:
		return -EIO;
	}
}

int cli_transfer_result(CURLcode res, const char *errbuf, long status, const char *body, size_t len,
			pd_error *err)
{
	if (res != CURLE_OK) {
		int code = res == CURLE_COULDNT_CONNECT ? -ECONNREFUSED : -EIO;
		/* A certificate not trusted: most often a private CA's. */
		bool cert =
		    res == CURLE_PEER_FAILED_VERIFICATION || res == CURLE_SSL_CACERT_BADFILE;
		return pd_error_set(err, code, "%s%s",
				    errbuf && *errbuf ? errbuf : curl_easy_strerror(res),
				    cert ? " (a server with a private CA: trust it with --cacert "
					   "FILE or PADDOCK_CACERT; paddock login --cacert FILE "
					   "URL saves it)"
					 : "");
	}
	if (status >= 200 && status < 300)
		return 0;

	int code = cli_status_errno(status);
	_cleanup_free_ char *reason = cli_error_from_body(body, len);
	if (code == -EIO || status == 409) {
		/* The statuses keep their errno above, but those that stand for
		 * several take the errno the body names: 409 (EEXIST, EBUSY,
		 * ENOTEMPTY, ENODEV for a desktop that is off), 501 (ENOTSUP for
		 * an image without a desktop), 500 (anything else). */
		_cleanup_free_ char *name = cli_json_get_string(body, len, "errno");
		for (int e = 1; name && e < 256; e++)
			if (strcmp(errno_name(e), name) == 0) {
				code = -e;
				break;
			}
	}
	if (reason)
		return pd_error_set(err, code, "%s", reason);
	/* Not the JSON shape: show the body itself, one line of it. */
	size_t n = 0;
	while (body && n < len && n < 400 && body[n] != '\n' && body[n] != '\0')
		n++;
	if (n > 0)
		return pd_error_set(err, code, "%.*s", (int)n, body);
	return pd_error_set(err, code, "HTTP status %ld", status);
}

int cli_client_setup(const cli_client *c, CURL *h, const char *url, struct curl_slist **ret_headers)
{
	struct curl_slist *headers = NULL;

	if (c->auth && !(headers = curl_slist_append(headers, c->auth)))
		return -ENOMEM;
	/* No "Expect: 100-continue" round trip before a body. */
	struct curl_slist *more = curl_slist_append(headers, "Expect:");
	if (!more) {
		curl_slist_free_all(headers);
		return -ENOMEM;
	}
	headers = more;
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(h, CURLOPT_USERAGENT, USER_AGENT);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 30L);
	if (c->unix_path)
		curl_easy_setopt(h, CURLOPT_UNIX_SOCKET_PATH, c->unix_path);
	if (c->cacert)
		curl_easy_setopt(h, CURLOPT_CAINFO, c->cacert);
	*ret_headers = headers;
	return 0;
}

size_t cli_errbody_write(char *ptr, size_t size, size_t nmemb, void *buf)
{
	struct pd_buf *b = buf;

	b->max = CLI_ERRBODY_MAX;
	return pd_buf_append(b, ptr, size * nmemb) == -ENOMEM ? 0 : size * nmemb;
}

/* An in-memory body (a struct pd_buf capped at CLI_BODY_MAX): more fails
 * the transfer. */
static size_t on_body(char *ptr, size_t size, size_t nmemb, void *user)
{
	size_t n = size * nmemb;

	return pd_buf_append(user, ptr, n) < 0 ? 0 : n;
}

struct upload {
	const char *data;
	size_t len, off;
};

static size_t on_upload(char *ptr, size_t size, size_t nmemb, void *user)
{
	struct upload *u = user;
	size_t n = size * nmemb;

	if (n > u->len - u->off)
		n = u->len - u->off;
	memcpy(ptr, u->data + u->off, n);
	u->off += n;
	return n;
}

/* One request on the shared handle. method: "GET", "PUT", "DELETE" or
 * "POST"; body (PUT/POST) may be empty. */
static int request(cli_client *c, const char *method, const char *url, const char *body,
		   size_t body_len, struct curl_slist *extra, char **ret_body, size_t *ret_len,
		   pd_error *err)
{
	struct curl_slist *headers = NULL;
	_cleanup_pd_buf_ struct pd_buf resp = {.max = CLI_BODY_MAX};
	struct upload up = {.data = body, .len = body_len};
	CURL *h = c->curl;
	long status = 0;
	int r;

	curl_easy_reset(h);
	c->errbuf[0] = '\0';
	r = cli_client_setup(c, h, url, &headers);
	if (r < 0)
		return pd_error_set(err, r, "out of memory");
	for (struct curl_slist *e = extra; e; e = e->next) {
		struct curl_slist *more = curl_slist_append(headers, e->data);
		if (!more) {
			curl_slist_free_all(headers);
			return pd_error_set(err, -ENOMEM, "out of memory");
		}
		headers = more;
	}
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, c->errbuf);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &resp);
	if (strcmp(method, "PUT") == 0) {
		curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(h, CURLOPT_READFUNCTION, on_upload);
		curl_easy_setopt(h, CURLOPT_READDATA, &up);
		curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)body_len);
	} else if (strcmp(method, "POST") == 0) {
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len);
	} else if (strcmp(method, "DELETE") == 0) {
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, "DELETE");
	}

	CURLcode res = curl_easy_perform(h);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	curl_slist_free_all(headers);
	if (res == CURLE_WRITE_ERROR && resp.truncated)
		return pd_error_set(err, -EFBIG, "the answer is larger than %u bytes",
				    CLI_BODY_MAX);
	r = cli_transfer_result(res, c->errbuf, status, resp.data, resp.len, err);
	if (r < 0)
		return r;
	if (ret_body && !(*ret_body = pd_buf_take(&resp, ret_len)))
		return pd_error_set(err, -ENOMEM, "out of memory");
	return 0;
}

static int tree_request(cli_client *c, const char *method, const char *path, const char *body,
			size_t len, char **ret_body, size_t *ret_len, pd_error *err)
{
	_cleanup_free_ char *url = cli_tree_url(c, path);

	if (!url)
		return pd_error_set(err, -ENOMEM, "out of memory");
	return request(c, method, url, body, len, /* extra= */ NULL, ret_body, ret_len, err);
}

int cli_get(cli_client *c, const char *path, char **ret_body, size_t *ret_len, pd_error *err)
{
	return tree_request(c, "GET", path, NULL, 0, ret_body, ret_len, err);
}

int cli_get_value(cli_client *c, const char *path, char **ret, pd_error *err)
{
	char *body;
	size_t len;
	int r = cli_get(c, path, &body, &len, err);

	if (r < 0)
		return r;
	if (len > 0 && body[len - 1] == '\n')
		body[len - 1] = '\0';
	*ret = body;
	return 0;
}

int cli_put(cli_client *c, const char *path, const char *body, size_t len, pd_error *err)
{
	return tree_request(c, "PUT", path, body ? body : "", len, NULL, NULL, err);
}

int cli_put_value_answer(cli_client *c, const char *path, const char *value, char **ret_body,
			 size_t *ret_len, pd_error *err)
{
	_cleanup_free_ char *line = NULL;

	if (asprintf(&line, "%s\n", value) < 0)
		return pd_error_set(err, -ENOMEM, "out of memory");
	return tree_request(c, "PUT", path, line, strlen(line), ret_body, ret_len, err);
}

int cli_put_value(cli_client *c, const char *path, const char *value, pd_error *err)
{
	return cli_put_value_answer(c, path, value, NULL, NULL, err);
}

int cli_delete(cli_client *c, const char *path, pd_error *err)
{
	return tree_request(c, "DELETE", path, NULL, 0, NULL, NULL, err);
}

int cli_post_json(cli_client *c, const char *api_path, const char *json, char **ret_body,
		  pd_error *err)
{
	_cleanup_free_ char *url = NULL;
	struct curl_slist *extra = NULL, *more;
	int r;

	if (asprintf(&url, "%s%s", c->base, api_path) < 0)
		return pd_error_set(err, -ENOMEM, "out of memory");
	extra = curl_slist_append(NULL, "Content-Type: application/json");
	more = extra ? curl_slist_append(extra, "Accept: text/plain") : NULL;
	if (!more) {
		curl_slist_free_all(extra);
		return pd_error_set(err, -ENOMEM, "out of memory");
	}
	extra = more;
	r = request(c, "POST", url, json, strlen(json), extra, ret_body, NULL, err);
	curl_slist_free_all(extra);
	return r;
}
