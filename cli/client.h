/* client.h - the HTTP side of the CLI: one libcurl handle per client,
 * reused for keep-alive, over TCP (http/https) or a unix socket.
 *
 * Every request returns 0 on a 2xx answer; otherwise -errno with a reason
 * for a person in err: the server's "error" text for an HTTP error (the
 * errno from its status: 400 EINVAL, 401/403 EACCES, 404 ENOENT, 409 EBUSY,
 * 413 EFBIG, 429/503 EAGAIN, 507 ENOSPC, else EIO), curl's message for a
 * connection failure (-ECONNREFUSED / -EIO).
 *
 * Paths given to the request functions are tree paths relative to
 * /v1/tree/, already escaped (see cli_tree_path()).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include <curl/curl.h>

#include "common/buf.h"
#include "common/error.h"

/* Bodies read into memory are capped: lists and small files only. */
#define CLI_BODY_MAX (16u << 20)
/* Error bodies kept from streaming transfers: the rest is dropped. */
#define CLI_ERRBODY_MAX (64u * 1024)

/* A CURLOPT_WRITEFUNCTION keeping the first CLI_ERRBODY_MAX bytes of an
 * error body in the struct pd_buf given as its user pointer (it sets the
 * buffer's max to CLI_ERRBODY_MAX; the rest is dropped). */
size_t cli_errbody_write(char *ptr, size_t size, size_t nmemb, void *buf);

typedef struct cli_client {
	CURL *curl;
	char *base;	 /* "http://host:port[/prefix]", no trailing slash */
	char *unix_path; /* NULL over TCP */
	char *auth;	 /* "Authorization: Bearer TOKEN", or NULL */
	char *cacert;	 /* CA certificates (PEM) trusted for https, or NULL */
	char errbuf[CURL_ERROR_SIZE];
} cli_client;

/* url: "http://…", "https://…" or "unix:/path/to.sock"; token may be NULL.
 * Returns 0 or -EINVAL (unsupported URL, reason in err) / -ENOMEM. */
int cli_client_init(cli_client *c, const char *url, const char *token, pd_error *err);
void cli_client_release(cli_client *c);

/* Trusts the CA certificates (PEM) in file for https instead of the
 * system's (CURLOPT_CAINFO): a private CA, a self-signed server. The file
 * must be readable now (-errno with the reason in err), so that a typo is
 * not taken for a server with a bad certificate. NULL: the system's. There
 * is no switch that trusts any certificate. */
int cli_client_set_cacert(cli_client *c, const char *file, pd_error *err);

/* Escapes one path segment (curl_easy_escape: everything but
 * [A-Za-z0-9._~-] is %XX). Returns malloc'd or NULL. */
char *cli_escape_segment(const char *s);

/* Builds an escaped tree path from a prefix and a path inside a box's
 * root or any slash-separated path: "boxes/" + esc(box) + "/root" +
 * "/" + esc(seg)… for each non-empty segment of sub. A "." or ".."
 * segment is refused (-EINVAL). dir_slash adds a trailing slash.
 * prefix is copied as is (already escaped). */
int cli_tree_path(const char *prefix, const char *sub, bool dir_slash, char **ret, pd_error *err);

/* "boxes/" + esc(box) + "/" + file (file already escaped, may be "").
 * malloc'd; NULL on ENOMEM. */
char *cli_box_path(const char *box, const char *file);

/* The full URL of a tree path: base + "/v1/tree/" + path. */
char *cli_tree_url(const cli_client *c, const char *path);

/* GET into memory (at most CLI_BODY_MAX). *ret_body is NUL-terminated,
 * written only on success; ret_len may be NULL. */
int cli_get(cli_client *c, const char *path, char **ret_body, size_t *ret_len, pd_error *err);

/* GET of a small value file, with its trailing newline removed. */
int cli_get_value(cli_client *c, const char *path, char **ret, pd_error *err);

/* PUT of a body (a control write, or mkdir when path ends in '/'). */
int cli_put(cli_client *c, const char *path, const char *body, size_t len, pd_error *err);

/* PUT of a value: the string with a newline appended. */
int cli_put_value(cli_client *c, const char *path, const char *value, pd_error *err);
/* The same, with the server's answer in *ret_body ("" when it sent none:
 * most writes answer 204; `snapshot`, `fork` and `restore` a JSON object
 * of what they made). */
int cli_put_value_answer(cli_client *c, const char *path, const char *value, char **ret_body,
			 size_t *ret_len, pd_error *err);

int cli_delete(cli_client *c, const char *path, pd_error *err);

/* POST of a JSON body to an API path such as "/v1/login" with
 * Accept: text/plain; the answer's body in *ret_body. */
int cli_post_json(cli_client *c, const char *api_path, const char *json, char **ret_body,
		  pd_error *err);

/* Sets the options every request shares (URL, socket, auth header list,
 * error buffer) on another easy handle, for streaming transfers. The
 * header list is returned in *ret_headers (free with curl_slist_free_all). */
int cli_client_setup(const cli_client *c, CURL *h, const char *url,
		     struct curl_slist **ret_headers);

/* Turns a finished transfer into 0 or -errno + reason: res is the curl
 * result and errbuf its CURLOPT_ERRORBUFFER, status the HTTP status,
 * body/len what the server sent (for an error). */
int cli_transfer_result(CURLcode res, const char *errbuf, long status, const char *body, size_t len,
			pd_error *err);

/* Whether a transfer's response status (so far) is 2xx: for write
 * callbacks that route the body by it. */
bool cli_response_ok(CURL *h);

/* The errno an HTTP status stands for (see above). */
int cli_status_errno(long status);
