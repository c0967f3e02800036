/* transfer-stream.c - the HTTP side of transfers: a GET streamed into a
 * file descriptor and a PUT read from one (volume export and import,
 * screenshot), the progress bar on stderr, and the pieces push and pull
 * (transfer.c) use. Portable: the Windows build has it too. */
#include <string.h>
#include <time.h>

#include "cli/transfer-internal.h"
#include "cli/transfer.h"

const char *cli_format_size(unsigned long long n, char *buf, size_t size)
{
	static const char *units[] = {"KiB", "MiB", "GiB", "TiB"};
	double v = (double)n;
	size_t u = 0;

	if (n < 1024) {
		snprintf(buf, size, "%llu B", n);
		return buf;
	}
	v /= 1024;
	while (v >= 1024 && u + 1 < ELEMENTSOF(units)) {
		v /= 1024;
		u++;
	}
	snprintf(buf, size, "%.1f %s", v, units[u]);
	return buf;
}

/* --- progress on stderr ----------------------------------------------- */

static unsigned long long mono_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000ULL + (unsigned long long)ts.tv_nsec / 1000;
}

void cli_progress_draw(struct cli_progress *p, bool final)
{
	char a[32], b[32];
	unsigned long long now;

	if (!p->on)
		return;
	now = mono_us();
	if (!final && now - p->last_us < 100000)
		return;
	p->last_us = now;
	cli_format_size(p->done, a, sizeof(a));
	if (p->total > 0) {
		unsigned long long done = p->done > p->total ? p->total : p->done;
		int pct = (int)(done * 100 / p->total);
		int bar = pct / 4;
		fprintf(stderr, "\r[%-25.*s] %3d%% %s / %s  ", bar, "#########################",
			pct, a, cli_format_size(p->total, b, sizeof(b)));
	} else {
		fprintf(stderr, "\r%s  ", a);
	}
	p->drawn = true;
	if (final)
		fputc('\n', stderr);
}

void cli_progress_end(struct cli_progress *p, bool ok)
{
	if (!p->on || !p->drawn)
		return;
	if (ok)
		cli_progress_draw(p, true);
	else
		fputc('\n', stderr);
}

/* PUTs what fn reads (from data) as ctype to url on h: the body of an
 * error reply goes to resp, curl's reason to errbuf, the status to
 * *status. h may be NULL (out of memory). */
CURLcode cli_upload_perform(cli_client *c, CURL *h, const char *url, struct curl_slist **headers,
			    const char *ctype, curl_read_callback fn, void *data, char *errbuf,
			    struct pd_buf *resp, long *status)
{
	char header[96];
	struct curl_slist *more;
	CURLcode res;

	if (!h || !url || cli_client_setup(c, h, url, headers) != 0)
		return CURLE_OUT_OF_MEMORY;
	snprintf(header, sizeof header, "Content-Type: %s", ctype);
	more = curl_slist_append(*headers, header);
	if (more)
		*headers = more;
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, *headers);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
	curl_easy_setopt(h, CURLOPT_READFUNCTION, fn);
	curl_easy_setopt(h, CURLOPT_READDATA, data);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, cli_errbody_write);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, resp);
	res = curl_easy_perform(h);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
	return res;
}

/* Where a GET's body goes: fd while the status is 2xx, else errbody. */
struct sink {
	CURL *h;
	int fd;
	bool checked, ok;
	struct pd_buf errbody;
	struct cli_progress *progress;
};

static size_t sink_write(char *ptr, size_t size, size_t nmemb, void *user)
{
	struct sink *s = user;
	size_t n = size * nmemb;

	if (!s->checked) {
		curl_off_t len = -1;
		s->ok = cli_response_ok(s->h);
		s->checked = true;
		if (curl_easy_getinfo(s->h, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &len) == CURLE_OK &&
		    len > 0 && s->ok)
			s->progress->total = (unsigned long long)len;
	}
	if (!s->ok)
		return cli_errbody_write(ptr, size, nmemb, &s->errbody);
	for (size_t off = 0; off < n;) {
		ssize_t w = write(s->fd, ptr + off, n - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return 0;
		off += (size_t)w;
	}
	s->progress->done += n;
	cli_progress_draw(s->progress, false);
	return n;
}

/* Runs a GET of url into fd. */
int cli_get_into(cli_client *c, const char *url, int fd, struct cli_progress *prog, pd_error *err)
{
	struct curl_slist *headers = NULL;
	char errbuf[CURL_ERROR_SIZE] = "";
	struct sink s = {.fd = fd, .progress = prog};
	long status = 0;
	int r;

	s.h = curl_easy_init();
	if (!s.h || cli_client_setup(c, s.h, url, &headers) < 0) {
		if (s.h)
			curl_easy_cleanup(s.h);
		return pd_error_set(err, -ENOMEM, "out of memory");
	}
	curl_easy_setopt(s.h, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(s.h, CURLOPT_WRITEFUNCTION, sink_write);
	curl_easy_setopt(s.h, CURLOPT_WRITEDATA, &s);
	CURLcode res = curl_easy_perform(s.h);
	curl_easy_getinfo(s.h, CURLINFO_RESPONSE_CODE, &status);
	if (res == CURLE_WRITE_ERROR && s.ok)
		r = pd_error_set(err, -EPIPE, "writing the data failed: %s", strerror(errno));
	else
		r = cli_transfer_result(res, errbuf, status, s.errbody.data, s.errbody.len, err);
	curl_slist_free_all(headers);
	curl_easy_cleanup(s.h);
	pd_buf_free(&s.errbody);
	return r;
}

int cli_download(cli_client *c, const char *path, int fd, bool progress, pd_error *err)
{
	struct cli_progress prog = {.on = progress};
	_cleanup_free_ char *url = cli_tree_url(c, path);
	int r;

	if (!url)
		return pd_error_set(err, -ENOMEM, "out of memory");
	r = cli_get_into(c, url, fd, &prog, err);
	cli_progress_end(&prog, r == 0);
	return r;
}

static size_t upload_read(char *buf, size_t size, size_t nmemb, void *user)
{
	int fd = *(int *)user;
	ssize_t n;

	do
		n = read(fd, buf, size * nmemb);
	while (n < 0 && errno == EINTR);
	return n < 0 ? CURL_READFUNC_ABORT : (size_t)n;
}

int cli_upload(cli_client *c, const char *path, int fd, pd_error *err)
{
	_cleanup_free_ char *url = cli_tree_url(c, path);
	char errbuf[CURL_ERROR_SIZE] = "";
	struct curl_slist *headers = NULL;
	_cleanup_pd_buf_ struct pd_buf resp = {0};
	long status = 0;
	CURL *h = curl_easy_init();
	CURLcode res = cli_upload_perform(c, h, url, &headers, "application/octet-stream",
					  upload_read, &fd, errbuf, &resp, &status);
	int r;

	r = cli_transfer_result(res, errbuf, status, resp.data, resp.len, err);
	curl_slist_free_all(headers);
	if (h)
		curl_easy_cleanup(h);
	return r;
}
