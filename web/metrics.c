/* metrics.c - GET /metrics (Prometheus' text format 0.0.4): the engine's
 * metrics (engine/metrics.h) and the HTTP adapter's own, the requests it
 * answered by method and status. Behind the same authentication as /v1
 * (http.c); docs/operations.md lists what each metric means. */
#include <errno.h>
#include <stdatomic.h>

#include "engine/metrics.h"
#include "web/http-internal.h"

#define STATUS_MIN 100
#define STATUS_MAX 599

static const char *const method_names[] = {
    [M_GET] = "GET",   [M_HEAD] = "HEAD",     [M_PUT] = "PUT",
    [M_POST] = "POST", [M_DELETE] = "DELETE", [M_OTHER] = "OTHER",
};

/* Requests answered, by method and status; process-wide, from its start. */
static atomic_ullong requests[M_OTHER + 1][STATUS_MAX - STATUS_MIN + 1];

void http_metrics_count(const struct req *r)
{
	unsigned m = (unsigned)r->method <= M_OTHER ? (unsigned)r->method : M_OTHER;

	if (r->status >= STATUS_MIN && r->status <= STATUS_MAX)
		atomic_fetch_add_explicit(&requests[m][r->status - STATUS_MIN], 1,
					  memory_order_relaxed);
}

/* Only the pairs seen so far: a counter appears at its first request. */
static int write_requests(struct pd_buf *out)
{
	int r = pd_buf_printf(out, "# HELP paddock_http_requests_total HTTP requests answered, "
				   "by method and status code.\n"
				   "# TYPE paddock_http_requests_total counter\n");

	for (size_t m = 0; m <= M_OTHER && r >= 0; m++)
		for (unsigned s = 0; s <= STATUS_MAX - STATUS_MIN && r >= 0; s++) {
			unsigned long long n =
			    atomic_load_explicit(&requests[m][s], memory_order_relaxed);
			if (n)
				r = pd_buf_printf(out,
						  "paddock_http_requests_total{method=\"%s\","
						  "code=\"%u\"} %llu\n",
						  method_names[m], s + STATUS_MIN, n);
		}
	return r < 0 ? -ENOMEM : 0;
}

/* On a worker: the engine's part walks the box table and each box's usage. */
static void work_metrics(struct req *r)
{
	_cleanup_pd_buf_ struct pd_buf out = {0};

	if (engine_metrics_write(http_engine(r->h), &out) < 0 || write_requests(&out) < 0) {
		req_reply_error(r, ENOMEM, "out of memory");
		return;
	}
	req_reply_text(r, 200, "text/plain; version=0.0.4; charset=utf-8", out.data, out.len);
}

void http_metrics_handle(struct req *r)
{
	req_run_async(r, work_metrics);
}
