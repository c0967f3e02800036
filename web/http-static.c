/* http-static.c - the panel's static code: the compiled-in panel assets'
 * headers, and noVNC's ES modules under /novnc/ (web/README.md, "The panel").
 *
 * /novnc/PATH serves PATH from the config's novnc_dir (Debian's novnc
 * package, /usr/share/novnc), without a token: it is public code, like the
 * panel. Only what the panel's live view imports is served: JavaScript
 * modules (.js), read-only, under the security headers of the panel. Never
 * an HTML page or an SVG: a page of that tree (vnc.html) would run in the
 * panel's origin, beside the token the panel keeps in localStorage.
 *
 * PATH is checked before anything is opened (segments of [A-Za-z0-9_-]
 * then [A-Za-z0-9._-], so no empty, ".", ".." or hidden segment), then
 * opened with openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS) from the
 * directory: a symbolic link inside it may lead to another file inside it
 * (the package has one), never out of it. Only a regular file is served. */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/config.h"
#include "common/util.h"
#include "web/http-internal.h"
#include "web/panel-assets.h"

#define NOVNC_PATH_MAX 255

/* The panel's Content-Security-Policy, on every page and script it is made
 * of (panel assets and noVNC's modules): its own scripts and styles only
 * (module scripts included), no inline code, requests (fetch, and the live
 * view's WebSocket: 'self' matches ws: and wss: to the same host) to the
 * daemon only, images from the daemon, data: (noVNC's cursor and tight
 * PNG rectangles) and blob: (the screenshot view), never framed. */
#define PANEL_CSP                                                                                  \
	"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "    \
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

void http_static_headers(struct MHD_Response *resp, const char *content_type)
{
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
	MHD_add_response_header(resp, "Content-Security-Policy", PANEL_CSP);
	MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(resp, "Referrer-Policy", "no-referrer");
	MHD_add_response_header(resp, "Cross-Origin-Resource-Policy", "same-origin");
}

static void reply(struct req *r, unsigned status, struct MHD_Response *resp)
{
	if (r->resp)
		MHD_destroy_response(r->resp);
	r->resp = resp;
	r->status = status;
}

void http_panel_handle(struct req *r, const char *url)
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
	http_static_headers(resp, a->content_type);
	reply(r, 200, resp);
}

/* rel is a path noVNC's modules may have: segments of [A-Za-z0-9._-] that
 * do not start with a dot, ending in ".js". */
static bool novnc_path_ok(const char *rel)
{
	size_t n = strlen(rel);
	bool seg_start = true;

	if (n == 0 || n > NOVNC_PATH_MAX || n < 4 || strcmp(rel + n - 3, ".js") != 0)
		return false;
	for (const char *p = rel; *p; p++) {
		char c = *p;
		if (c == '/') {
			if (seg_start)
				return false; /* an empty segment */
			seg_start = true;
			continue;
		}
		bool word = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			    (c >= '0' && c <= '9') || c == '_' || c == '-';
		if (!word && !(c == '.' && !seg_start))
			return false;
		seg_start = false;
	}
	return !seg_start;
}

static int open_beneath(int dirfd, const char *path)
{
	struct open_how how = {
	    .flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK,
	    .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
	};
	int fd = (int)syscall(SYS_openat2, dirfd, path, &how, sizeof how);

	return fd < 0 ? -errno : fd;
}

void http_novnc_handle(struct req *r, const char *url)
{
	const char *dir = engine_config(http_engine(r->h))->novnc_dir;
	const char *rel = url + strlen("/novnc/");
	_cleanup_close_ int dirfd = -1;
	struct MHD_Response *resp;
	struct stat st;
	int fd;

	if (!novnc_path_ok(rel)) {
		req_reply_error(r, ENOENT, "no such file: noVNC's modules only (/novnc/PATH.js)");
		return;
	}
	dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0) {
		req_reply_error(r, ENOENT,
				"noVNC is not installed (the novnc package, or the config's "
				"novnc_dir)");
		return;
	}
	fd = open_beneath(dirfd, rel);
	if (fd >= 0 && (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))) {
		close(fd);
		fd = -ENOENT;
	}
	if (fd < 0) {
		req_reply_error(r, ENOENT, "no such file");
		return;
	}
	/* MHD owns fd from here (closed with the response). */
	resp = MHD_create_response_from_fd((uint64_t)st.st_size, fd);
	if (!resp) {
		close(fd);
		return;
	}
	http_static_headers(resp, "text/javascript; charset=utf-8");
	reply(r, 200, resp);
}
