/* transfer-internal.h - what transfer.c (push, pull) and
 * transfer-stream.c (the HTTP side, portable) share. */
#pragma once

#include <stdbool.h>

#include <curl/curl.h>

#include "cli/client.h"
#include "common/buf.h"
#include "common/error.h"

/* A progress bar on stderr (nothing unless on). */
struct cli_progress {
	bool on, drawn;
	unsigned long long done, total; /* total 0: unknown */
	unsigned long long last_us;
};

/* Redraws the bar (at most ten times a second unless final). */
void cli_progress_draw(struct cli_progress *p, bool final);
/* Ends the bar's line: drawn complete when ok. */
void cli_progress_end(struct cli_progress *p, bool ok);

/* PUTs what fn reads (from data) as ctype to url on h: the body of an
 * error reply goes to resp, curl's reason to errbuf, the status to
 * *status. h may be NULL (out of memory). */
CURLcode cli_upload_perform(cli_client *c, CURL *h, const char *url, struct curl_slist **headers,
			    const char *ctype, curl_read_callback fn, void *data, char *errbuf,
			    struct pd_buf *resp, long *status);

/* Runs a GET of url into fd, counting into prog. */
int cli_get_into(cli_client *c, const char *url, int fd, struct cli_progress *prog, pd_error *err);
