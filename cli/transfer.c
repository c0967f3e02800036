/* transfer.c - push and pull: tar streams of directories (see transfer.h);
 * the HTTP side is transfer-stream.c. */
#include <fcntl.h>
#include <fts.h>
#include <libgen.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>

#include <archive.h>
#include <archive_entry.h>

#include "common/tarsafe.h"
#include "cli/platform.h"
#include "cli/transfer-internal.h"
#include "cli/transfer.h"

#define COPY_BUF (64 * 1024)

/* --- push --------------------------------------------------------------- */

struct pusher {
	const char *const *srcs;
	size_t n;
	int fd; /* write end of the pipe */
	bool quiet;
	atomic_bool failed;
	pd_error err;
};

static bool is_dir_source(const char *src)
{
	struct stat st;
	return stat(src, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The archive name of an fts entry: relative to a directory SRC, or the
 * basename of anything else. NULL for the directory SRC itself. */
static const char *entry_name(FTSENT *e, bool dir_src, size_t root_len)
{
	if (!dir_src)
		return e->fts_level == 0 ? e->fts_name : e->fts_path + root_len + 1;
	if (e->fts_level == 0)
		return NULL;
	const char *p = e->fts_path + root_len;
	while (*p == '/')
		p++;
	return p;
}

/* Walks one SRC. With a, each entry goes into the archive; without, only
 * *total is added to (the estimate of the tar size). */
static int walk(const char *src, struct archive *a, unsigned long long *total, bool quiet,
		pd_error *err)
{
	char *paths[] = {(char *)src, NULL};
	bool dir_src = is_dir_source(src);
	size_t root_len = strlen(src);
	FTS *fts;
	FTSENT *e;
	int r = 0;

	while (root_len > 1 && src[root_len - 1] == '/')
		root_len--;
	fts = fts_open(paths, FTS_PHYSICAL | FTS_COMFOLLOW | FTS_NOCHDIR, NULL);
	if (!fts)
		return pd_error_set(err, -errno, "%s: %s", src, strerror(errno));
	errno = 0;
	while (r == 0 && (e = fts_read(fts))) {
		const char *name;
		switch (e->fts_info) {
		case FTS_DP:
			continue;
		case FTS_DNR:
		case FTS_ERR:
		case FTS_NS:
			r = pd_error_set(err, -e->fts_errno, "%s: %s", e->fts_path,
					 strerror(e->fts_errno));
			continue;
		case FTS_DC:
			continue;
		default:
			break;
		}
		name = entry_name(e, dir_src, root_len);
		if (!name || !*name)
			continue;
		mode_t type = e->fts_statp->st_mode & S_IFMT;
		if (type != S_IFREG && type != S_IFDIR && type != S_IFLNK) {
			if (a && !quiet)
				fprintf(stderr,
					"paddock: skipping %s (not a file, directory or link)\n",
					e->fts_path);
			continue;
		}
		if (!a) {
			unsigned long long size =
			    type == S_IFREG ? (unsigned long long)e->fts_statp->st_size : 0;
			*total += 512 + (size + 511) / 512 * 512;
			if (strlen(name) > 99)
				*total += 1536; /* a pax header for the long name */
			continue;
		}

		struct archive_entry *ent = archive_entry_new();
		if (!ent) {
			r = pd_error_set(err, -ENOMEM, "out of memory");
			break;
		}
		archive_entry_copy_stat(ent, e->fts_statp);
		archive_entry_set_pathname(ent, name);
		if (type == S_IFLNK) {
			char target[4096];
			ssize_t n = readlink(e->fts_accpath, target, sizeof(target) - 1);
			if (n < 0) {
				r = pd_error_set(err, -errno, "%s: %s", e->fts_path,
						 strerror(errno));
				archive_entry_free(ent);
				break;
			}
			target[n] = '\0';
			archive_entry_set_symlink(ent, target);
		}
		int fd = -1;
		if (type == S_IFREG) {
			fd = open(e->fts_accpath, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
			if (fd < 0) {
				r = pd_error_set(err, -errno, "%s: %s", e->fts_path,
						 strerror(errno));
				archive_entry_free(ent);
				break;
			}
		}
		if (archive_write_header(a, ent) != ARCHIVE_OK)
			r = pd_error_set(err, -EIO, "%s: %s", e->fts_path, tarsafe_archive_why(a));
		archive_entry_free(ent);
		if (fd >= 0) {
			static __thread char buf[COPY_BUF];
			while (r == 0) {
				ssize_t n = read(fd, buf, sizeof(buf));
				if (n < 0 && errno == EINTR)
					continue;
				if (n < 0)
					r = pd_error_set(err, -errno, "%s: %s", e->fts_path,
							 strerror(errno));
				if (n <= 0)
					break;
				if (archive_write_data(a, buf, (size_t)n) < 0)
					r = pd_error_set(err, -EIO, "%s", tarsafe_archive_why(a));
			}
			close(fd);
		}
	}
	/* fts_read() returns NULL with errno 0 at the end, else on failure */
	if (r == 0 && errno != 0)
		r = pd_error_set(err, -errno, "%s: %s", src, strerror(errno));
	fts_close(fts);
	return r;
}

static void *push_thread(void *user)
{
	struct pusher *p = user;
	struct archive *a = archive_write_new();
	int r = 0;

	if (!a) {
		r = pd_error_set(&p->err, -ENOMEM, "out of memory");
		goto out;
	}
	archive_write_set_format_pax_restricted(a);
	archive_write_set_bytes_in_last_block(a, 1);
	if (archive_write_open_fd(a, p->fd) != ARCHIVE_OK) {
		r = pd_error_set(&p->err, -EIO, "%s", tarsafe_archive_why(a));
		goto out;
	}
	for (size_t i = 0; r == 0 && i < p->n; i++)
		r = walk(p->srcs[i], a, NULL, p->quiet, &p->err);
	if (r == 0 && archive_write_close(a) != ARCHIVE_OK)
		r = pd_error_set(&p->err, -EIO, "%s", tarsafe_archive_why(a));
out:
	if (a)
		archive_write_free(a);
	if (r < 0)
		atomic_store(&p->failed, true);
	close(p->fd);
	return NULL;
}

struct push_reader {
	int fd; /* read end */
	struct pusher *pusher;
	struct cli_progress *progress;
};

static size_t push_read(char *ptr, size_t size, size_t nmemb, void *user)
{
	struct push_reader *r = user;

	for (;;) {
		ssize_t n = read(r->fd, ptr, size * nmemb);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return CURL_READFUNC_ABORT;
		if (n == 0 && atomic_load(&r->pusher->failed))
			return CURL_READFUNC_ABORT;
		r->progress->done += (unsigned long long)n;
		cli_progress_draw(r->progress, false);
		return (size_t)n;
	}
}

int cli_push(cli_client *c, const char *box, const char *const *srcs, size_t n, const char *to,
	     bool progress, bool quiet, pd_error *err)
{
	struct cli_progress prog = {.on = progress};
	struct pusher pusher = {.srcs = srcs, .n = n, .quiet = quiet};
	_cleanup_pd_buf_ struct pd_buf resp = {0};
	_cleanup_free_ char *ebox = NULL, *prefix = NULL, *path = NULL, *url = NULL;
	struct curl_slist *headers = NULL;
	char errbuf[CURL_ERROR_SIZE] = "";
	pthread_t thread;
	int fds[2];
	long status = 0;
	int r;

	for (size_t i = 0; i < n; i++) {
		struct stat st;
		if (stat(srcs[i], &st) < 0)
			return pd_error_set(err, -errno, "%s: %s", srcs[i], strerror(errno));
	}
	for (size_t i = 0; i < n; i++) {
		r = walk(srcs[i], NULL, &prog.total, true, err);
		if (r < 0)
			return r;
	}
	prog.total += 1024;

	ebox = cli_escape_segment(box);
	if (!ebox || asprintf(&prefix, "boxes/%s/root", ebox) < 0)
		return pd_error_set(err, -ENOMEM, "out of memory");
	r = cli_tree_path(prefix, to, /* dir_slash= */ true, &path, err);
	if (r < 0)
		return r;
	if (asprintf(&url, "%s/v1/tree/%s?format=tar", c->base, path) < 0)
		return pd_error_set(err, -ENOMEM, "out of memory");

	r = cli_platform_pipe(fds);
	if (r < 0)
		return pd_error_set(err, r, "pipe: %s", strerror(-r));
	pusher.fd = fds[1];
	r = pthread_create(&thread, NULL, push_thread, &pusher);
	if (r != 0) {
		close(fds[0]);
		close(fds[1]);
		return pd_error_set(err, -r, "cannot start a thread: %s", strerror(r));
	}

	CURL *h = curl_easy_init();
	struct push_reader reader = {.fd = fds[0], .pusher = &pusher, .progress = &prog};
	CURLcode res = cli_upload_perform(c, h, url, &headers, "application/x-tar", push_read,
					  &reader, errbuf, &resp, &status);
	/* Unblocks the producer if the transfer ended early. */
	close(fds[0]);
	pthread_join(thread, NULL);

	if (atomic_load(&pusher.failed)) {
		r = pd_error_set(err, pusher.err.code, "%s", pusher.err.msg);
	} else {
		r = cli_transfer_result(res, errbuf, status, resp.data, resp.len, err);
	}
	cli_progress_end(&prog, r == 0);
	curl_slist_free_all(headers);
	if (h)
		curl_easy_cleanup(h);
	return r;
}

/* --- pull ------------------------------------------------------------- */

static void report_skip(void *userdata, const char *name, const char *why)
{
	(void)userdata;
	fprintf(stderr, "paddock: skipped %s: %s\n", name, why);
}

int cli_pull_extract(int fd, int dirfd, const cli_pull_opts *opts, pd_error *err)
{
	struct tar_extract_hooks hooks = {.on_skip = report_skip};
	struct tar_limits lim = TAR_LIMITS_INIT;
	struct tar_result res = {0};
	int r;

	/* No size or count limit: the box's disk bounds what it can send. */
	lim.max_entries = UINT64_MAX;
	lim.max_bytes = UINT64_MAX;
	lim.flags = TAR_PULL_FLAGS | (opts->owners ? TAR_KEEP_OWNERS : 0);
	r = tarsafe_extract_ex(dirfd, "", fd, &lim, &hooks, &res, err);
	if (r < 0)
		return r;
	if (res.skipped > 0)
		return pd_error_set(err, -EPERM,
				    "%llu %s skipped (see above); the other %llu were copied",
				    (unsigned long long)res.skipped,
				    res.skipped == 1 ? "entry was" : "entries were",
				    (unsigned long long)(res.entries - res.skipped));
	return 0;
}

struct extractor {
	int fd; /* read end */
	int dirfd;
	const cli_pull_opts *opts;
	pd_error err;
	int r;
};

static void *extract_thread(void *user)
{
	struct extractor *x = user;

	x->r = cli_pull_extract(x->fd, x->dirfd, x->opts, &x->err);
	close(x->fd); /* stops the transfer if it is still sending */
	return NULL;
}

/* mkdir -p for the local destination. */
static int make_dirs(const char *path)
{
	_cleanup_free_ char *p = strdup(path);

	if (!p)
		return -ENOMEM;
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(p, 0777) < 0 && errno != EEXIST)
			return -errno;
		*s = '/';
	}
	if (mkdir(p, 0777) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

int cli_pull(cli_client *c, const char *box, const char *src, const char *dir,
	     const cli_pull_opts *opts, pd_error *err)
{
	struct cli_progress prog = {.on = opts->progress};
	_cleanup_free_ char *ebox = NULL, *prefix = NULL, *path = NULL, *url = NULL;
	_cleanup_close_ int dirfd = -1;
	struct extractor x = {.opts = opts};
	pd_error http_err = {0};
	pthread_t thread;
	int fds[2], r, hr;

	if (opts->owners && geteuid() != 0)
		return pd_error_set(err, -EPERM, "--owners needs root (it gives files away)");
	ebox = cli_escape_segment(box);
	if (!ebox || asprintf(&prefix, "boxes/%s/root", ebox) < 0)
		return pd_error_set(err, -ENOMEM, "out of memory");
	r = cli_tree_path(prefix, src, /* dir_slash= */ false, &path, err);
	if (r < 0)
		return r;
	if (asprintf(&url, "%s/v1/tree/%s?format=tar", c->base, path) < 0)
		return pd_error_set(err, -ENOMEM, "out of memory");

	r = make_dirs(dir);
	if (r < 0)
		return pd_error_set(err, r, "%s: %s", dir, strerror(-r));
	dirfd = cli_platform_open_dir(dir);
	if (dirfd < 0)
		return pd_error_set(err, dirfd, "%s: %s", dir, strerror(-dirfd));
	r = cli_platform_pipe(fds);
	if (r < 0)
		return pd_error_set(err, r, "pipe: %s", strerror(-r));
	x.fd = fds[0];
	x.dirfd = dirfd;
	r = pthread_create(&thread, NULL, extract_thread, &x);
	if (r != 0) {
		close(fds[0]);
		close(fds[1]);
		return pd_error_set(err, -r, "cannot start a thread: %s", strerror(r));
	}
	hr = cli_get_into(c, url, fds[1], &prog, &http_err);
	close(fds[1]);
	pthread_join(thread, NULL);
	/* The server's reason first; the extractor's when the transfer was fine
	 * or stopped because extraction failed. A transfer that ended early
	 * (the daemon could not finish the archive) left the archive without
	 * its end, so nothing of it was written. */
	if (hr < 0 && x.r < 0 && hr != -EPIPE)
		r = pd_error_set(err, hr, "the transfer ended early (%s), %s is unchanged: %s",
				 http_err.msg, dir, x.err.msg);
	else if (hr < 0 && !(x.r < 0 && hr == -EPIPE))
		r = pd_error_set(err, hr, "%s", http_err.msg);
	else if (x.r < 0)
		r = pd_error_set(err, x.r, "%s", x.err.msg);
	else
		r = 0;
	cli_progress_end(&prog, r == 0);
	return r;
}
