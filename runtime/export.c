/* export.c - tar.zst archives with an XXH3 manifest: the manifest's text
 * form, its verification against an extracted tree, and the export stream
 * (see export.h). */
#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "runtime/export.h"
#include "common/lock.h"
#include "common/parse.h"
#include "common/tarsafe.h"
#include "common/util.h"

#define EXPORT_CHUNK (64 * 1024)
#define HASH_CHUNK (128 * 1024)
#define WALK_DEPTH_MAX 256

/* --- the manifest ------------------------------------------------------- */

struct mfile {
	char *path;
	uint64_t size;
	unsigned char hash[16];
	bool seen;
};

struct mlink {
	char *path, *target;
};

struct export_manifest {
	char *kind, *source;
	time_t created;
	struct mfile *f;
	size_t n, cap;
	struct mlink *l;
	size_t nl, capl;
	bool sorted;
};

struct export_manifest *export_manifest_new(const char *kind, const char *source, time_t created)
{
	struct export_manifest *m = calloc(1, sizeof *m);

	if (!m)
		return NULL;
	m->kind = strdup(kind);
	m->source = strdup(source);
	m->created = created;
	m->sorted = true;
	if (!m->kind || !m->source)
		return export_manifest_free(m);
	return m;
}

struct export_manifest *export_manifest_free(struct export_manifest *m)
{
	if (!m)
		return NULL;
	for (size_t i = 0; i < m->n; i++)
		free(m->f[i].path);
	for (size_t i = 0; i < m->nl; i++) {
		free(m->l[i].path);
		free(m->l[i].target);
	}
	free(m->f);
	free(m->l);
	free(m->kind);
	free(m->source);
	free(m);
	return NULL;
}

static int add_file(struct export_manifest *m, char *path, uint64_t size,
		    const unsigned char hash[16])
{
	if (m->n == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 256;
		struct mfile *f = reallocarray(m->f, cap, sizeof *f);
		if (!f)
			return -ENOMEM;
		m->f = f;
		m->cap = cap;
	}
	m->f[m->n] = (struct mfile){.path = path, .size = size};
	memcpy(m->f[m->n].hash, hash, 16);
	if (m->n > 0 && strcmp(m->f[m->n - 1].path, path) >= 0)
		m->sorted = false;
	m->n++;
	return 0;
}

int export_manifest_add(struct export_manifest *m, const char *path, uint64_t size,
			const unsigned char hash[16])
{
	char *p = strdup(path);
	int r;

	if (!p)
		return -ENOMEM;
	r = add_file(m, p, size, hash);
	if (r < 0)
		free(p);
	return r;
}

int export_manifest_add_link(struct export_manifest *m, const char *path, const char *target)
{
	struct mlink l = {strdup(path), strdup(target)};

	if (l.path && l.target && m->nl == m->capl) {
		size_t cap = m->capl ? m->capl * 2 : 16;
		struct mlink *nl = reallocarray(m->l, cap, sizeof *nl);
		if (nl) {
			m->l = nl;
			m->capl = cap;
		}
	}
	if (!l.path || !l.target || m->nl == m->capl) {
		free(l.path);
		free(l.target);
		return -ENOMEM;
	}
	m->l[m->nl++] = l;
	return 0;
}

static int mfile_cmp(const void *a, const void *b)
{
	return strcmp(((const struct mfile *)a)->path, ((const struct mfile *)b)->path);
}

static void sort_files(struct export_manifest *m)
{
	if (!m->sorted && m->n > 1)
		qsort(m->f, m->n, sizeof *m->f, mfile_cmp);
	m->sorted = true;
}

static struct mfile *find_file(struct export_manifest *m, const char *path)
{
	struct mfile key = {.path = (char *)path};

	if (m->n == 0)
		return NULL;
	return bsearch(&key, m->f, m->n, sizeof key, mfile_cmp);
}

/* Hard links become files with their target's size and hash. */
static int resolve_links(struct export_manifest *m)
{
	size_t n = m->n;

	sort_files(m);
	for (size_t i = 0; i < m->nl; i++) {
		/* Targets are searched among the files stored with content. */
		struct mfile key = {.path = m->l[i].target}, *t;
		unsigned char hash[16];
		uint64_t size;
		int r;

		t = n ? bsearch(&key, m->f, n, sizeof key, mfile_cmp) : NULL;
		if (!t)
			return -ENOENT;
		size = t->size;
		memcpy(hash, t->hash, 16);
		r = add_file(m, m->l[i].path, size, hash);
		if (r < 0)
			return r;
		m->l[i].path = NULL; /* now the file's */
		free(m->l[i].target);
		m->l[i].target = NULL;
	}
	m->nl = 0;
	sort_files(m);
	return 0;
}

static const char hexdigits[] = "0123456789abcdef";

/* A path fit for a message: control bytes as '?', at most ~120 bytes. */
static const char *printable(const char *s, char *buf, size_t size)
{
	size_t i = 0;

	for (; s[i] && i + 4 < size && i < 120; i++)
		buf[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
	if (s[i])
		buf[i++] = '.', buf[i++] = '.', buf[i++] = '.';
	buf[i] = '\0';
	return buf;
}

/* Appends path escaped (see export.h) to the stream. */
static void put_escaped(FILE *f, const char *path)
{
	for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
		if (*p == '\\')
			fputs("\\\\", f);
		else if (*p == '\n')
			fputs("\\n", f);
		else if (*p < 0x20 || *p == 0x7f)
			fprintf(f, "\\x%c%c", hexdigits[*p >> 4], hexdigits[*p & 15]);
		else
			fputc(*p, f);
	}
}

int export_manifest_format(struct export_manifest *m, char **ret, size_t *ret_len)
{
	char *buf = NULL, ts[32];
	size_t len = 0;
	FILE *f;
	int r;

	r = resolve_links(m);
	if (r < 0)
		return r;
	f = open_memstream(&buf, &len);
	if (!f)
		return -ENOMEM;
	format_rfc3339(m->created, ts, sizeof ts);
	fprintf(f, "paddock-export %d %s %s %s\n", EXPORT_MANIFEST_VERSION, m->kind, m->source, ts);
	for (size_t i = 0; i < m->n; i++) {
		char hex[33];
		for (int k = 0; k < 16; k++) {
			hex[2 * k] = hexdigits[m->f[i].hash[k] >> 4];
			hex[2 * k + 1] = hexdigits[m->f[i].hash[k] & 15];
		}
		hex[32] = '\0';
		fprintf(f, "%s %llu ", hex, (unsigned long long)m->f[i].size);
		put_escaped(f, m->f[i].path);
		fputc('\n', f);
	}
	if (fclose(f) != 0) {
		free(buf);
		return -ENOMEM;
	}
	*ret = buf;
	*ret_len = len;
	return 0;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* Unescapes [s, s+len) into a new string; NULL on a bad escape. */
static char *unescape(const char *s, size_t len)
{
	char *out = malloc(len + 1), *o = out;

	if (!out)
		return NULL;
	for (size_t i = 0; i < len; i++) {
		if (s[i] != '\\') {
			*o++ = s[i];
			continue;
		}
		if (i + 1 < len && s[i + 1] == '\\') {
			*o++ = '\\';
			i++;
		} else if (i + 1 < len && s[i + 1] == 'n') {
			*o++ = '\n';
			i++;
		} else if (i + 3 < len && s[i + 1] == 'x' && hexval(s[i + 2]) >= 0 &&
			   hexval(s[i + 3]) >= 0 && (hexval(s[i + 2]) || hexval(s[i + 3]))) {
			*o++ = (char)(hexval(s[i + 2]) << 4 | hexval(s[i + 3]));
			i += 3;
		} else {
			free(out);
			return NULL;
		}
	}
	*o = '\0';
	return out;
}

static int parse_header(const char *line, size_t len, struct export_manifest **ret, pd_error *err)
{
	char buf[256], kind[16], source[NAME_MAX_LEN + 1], ts[40], tail;
	int version;
	struct tm tm = {0};
	const char *end;

	if (len >= sizeof buf)
		return pd_error_set(err, -EINVAL, "manifest line 1: not a paddock-export header");
	memcpy(buf, line, len);
	buf[len] = '\0';
	if (sscanf(buf, "paddock-export %d %15s %63s %39s%c", &version, kind, source, ts, &tail) !=
	    4)
		return pd_error_set(err, -EINVAL, "manifest line 1: not a paddock-export header");
	if (version != EXPORT_MANIFEST_VERSION)
		return pd_error_set(err, -EINVAL, "manifest version %d is not supported (only %d)",
				    version, EXPORT_MANIFEST_VERSION);
	if (strcmp(kind, "volume") != 0 && strcmp(kind, "snapshot") != 0)
		return pd_error_set(err, -EINVAL, "manifest line 1: unknown kind \"%s\"", kind);
	end = strptime(ts, "%Y-%m-%dT%H:%M:%SZ", &tm);
	if (!end || *end)
		return pd_error_set(err, -EINVAL, "manifest line 1: bad time \"%s\"", ts);
	*ret = export_manifest_new(kind, source, timegm(&tm));
	return *ret ? 0 : pd_error_set(err, -ENOMEM, "out of memory");
}

static int parse_line(struct export_manifest *m, const char *line, size_t len, size_t lineno,
		      pd_error *err)
{
	unsigned char hash[16];
	unsigned long long size = 0;
	const char *p = line + 33, *end = line + len;
	char *path;
	int r;

	if (len < 36 || line[32] != ' ')
		return pd_error_set(err, -EINVAL, "manifest line %zu: malformed", lineno);
	for (int k = 0; k < 16; k++) {
		int hi = hexval(line[2 * k]), lo = hexval(line[2 * k + 1]);
		if (hi < 0 || lo < 0)
			return pd_error_set(err, -EINVAL, "manifest line %zu: bad hash", lineno);
		hash[k] = (unsigned char)(hi << 4 | lo);
	}
	if (p >= end || *p < '0' || *p > '9' || (*p == '0' && p + 1 < end && p[1] != ' '))
		return pd_error_set(err, -EINVAL, "manifest line %zu: bad size", lineno);
	for (; p < end && *p >= '0' && *p <= '9'; p++) {
		if (size > (ULLONG_MAX - 9) / 10)
			return pd_error_set(err, -EINVAL, "manifest line %zu: bad size", lineno);
		size = size * 10 + (unsigned long long)(*p - '0');
	}
	if (p >= end - 1 || *p != ' ')
		return pd_error_set(err, -EINVAL, "manifest line %zu: malformed", lineno);
	p++;
	path = unescape(p, (size_t)(end - p));
	if (!path)
		return pd_error_set(err, -EINVAL, "manifest line %zu: bad escape in the path",
				    lineno);
	r = add_file(m, path, size, hash);
	if (r < 0) {
		free(path);
		return pd_error_set(err, r, "out of memory");
	}
	return 0;
}

int export_manifest_parse(const char *text, size_t len, struct export_manifest **ret, pd_error *err)
{
	struct export_manifest *m = NULL;
	const char *p = text, *end = text + len;
	size_t lineno = 0;
	int r = 0;

	if (memchr(text, '\0', len))
		return pd_error_set(err, -EINVAL, "manifest: NUL byte");
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t l = nl ? (size_t)(nl - p) : (size_t)(end - p);

		lineno++;
		if (!nl) {
			r = pd_error_set(err, -EINVAL, "manifest line %zu: no final newline",
					 lineno);
			break;
		}
		r = lineno == 1 ? parse_header(p, l, &m, err) : parse_line(m, p, l, lineno, err);
		if (r < 0)
			break;
		p += l + 1;
	}
	if (r >= 0 && !m)
		r = pd_error_set(err, -EINVAL, "manifest: empty");
	if (r >= 0) {
		sort_files(m);
		for (size_t i = 1; i < m->n; i++)
			if (strcmp(m->f[i - 1].path, m->f[i].path) == 0) {
				char pbuf[128];
				r = pd_error_set(err, -EINVAL, "manifest: %s listed twice",
						 printable(m->f[i].path, pbuf, sizeof pbuf));
				break;
			}
	}
	if (r < 0) {
		export_manifest_free(m);
		return r;
	}
	*ret = m;
	return 0;
}

const char *export_manifest_kind(const struct export_manifest *m)
{
	return m->kind;
}

const char *export_manifest_source(const struct export_manifest *m)
{
	return m->source;
}

time_t export_manifest_created(const struct export_manifest *m)
{
	return m->created;
}

size_t export_manifest_count(const struct export_manifest *m)
{
	return m->n + m->nl;
}

int export_hash_fd(int fd, unsigned char ret[16], uint64_t *ret_size)
{
	_cleanup_free_ char *buf = malloc(HASH_CHUNK);
	XXH3_state_t *st = XXH3_createState();
	XXH128_canonical_t c;
	uint64_t size = 0;
	int r = 0;

	if (!buf || !st || XXH3_128bits_reset(st) != XXH_OK)
		r = -ENOMEM;
	while (r == 0) {
		ssize_t n = read(fd, buf, HASH_CHUNK);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			r = -errno;
		if (n <= 0)
			break;
		XXH3_128bits_update(st, buf, (size_t)n);
		size += (uint64_t)n;
	}
	if (r == 0) {
		XXH128_canonicalFromHash(&c, XXH3_128bits_digest(st));
		memcpy(ret, c.digest, 16);
		*ret_size = size;
	}
	XXH3_freeState(st);
	return r;
}

static int mismatch(pd_error *err, const char *path, const char *why)
{
	char pbuf[128];

	return pd_error_set(err, -EINVAL, "content does not match the archive's manifest: %s (%s)",
			    printable(path, pbuf, sizeof pbuf), why);
}

static int walk(struct export_manifest *m, int dfd, char *rel, size_t rlen, dev_t dev,
		unsigned depth, pd_error *err)
{
	struct dirent *de;
	DIR *d;
	int fd, r = 0;

	if (depth > WALK_DEPTH_MAX)
		return pd_error_set(err, -ELOOP, "%s: too many levels of directories", rel);
	fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || !(d = fdopendir(fd))) {
		r = -errno;
		if (fd >= 0)
			close(fd);
		return pd_error_set(err, r, "cannot read the extracted files: %s", strerror(-r));
	}
	while ((errno = 0, de = readdir(d))) {
		size_t nlen = strlen(de->d_name);
		struct stat st;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (rlen + nlen + 2 > PATH_MAX) {
			r = pd_error_set(err, -ENAMETOOLONG, "%s: name too long", rel);
			break;
		}
		snprintf(rel + rlen, PATH_MAX - rlen, "%s%s", rlen ? "/" : "", de->d_name);
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			r = pd_error_set(err, -errno, "%s: %s", rel, strerror(errno));
			break;
		}
		if (S_ISDIR(st.st_mode) && st.st_dev == dev) {
			_cleanup_close_ int cfd = openat(
			    dirfd(d), de->d_name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			r = cfd < 0 ? pd_error_set(err, -errno, "%s: %s", rel, strerror(errno))
				    : walk(m, cfd, rel, strlen(rel), dev, depth + 1, err);
		} else if (S_ISREG(st.st_mode)) {
			_cleanup_close_ int ffd =
			    openat(dirfd(d), de->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
			struct mfile *f = find_file(m, rel);
			unsigned char hash[16];
			uint64_t size = 0;

			if (!f)
				r = mismatch(err, rel, "not listed");
			else if (f->seen)
				r = mismatch(err, rel, "seen twice");
			else if (ffd < 0)
				r = pd_error_set(err, -errno, "%s: %s", rel, strerror(errno));
			else if ((r = export_hash_fd(ffd, hash, &size)) < 0)
				r = pd_error_set(err, r, "%s: %s", rel, strerror(-r));
			else if (size != f->size)
				r = mismatch(err, rel, "size differs");
			else if (memcmp(hash, f->hash, 16) != 0)
				r = mismatch(err, rel, "hash differs");
			else
				f->seen = true;
		}
		rel[rlen] = '\0';
		if (r < 0)
			break;
	}
	if (r == 0 && errno != 0)
		r = pd_error_set(err, -errno, "cannot read the extracted files: %s",
				 strerror(errno));
	closedir(d);
	return r;
}

int export_manifest_verify(struct export_manifest *m, int dirfd, pd_error *err)
{
	_cleanup_free_ char *rel = malloc(PATH_MAX);
	struct stat st;
	int r;

	if (!rel)
		return pd_error_set(err, -ENOMEM, "out of memory");
	r = resolve_links(m);
	if (r < 0)
		return pd_error_set(err, -EINVAL, "manifest: a hard link's target is not listed");
	if (fstat(dirfd, &st) < 0)
		return pd_error_set(err, -errno, "cannot read the extracted files: %s",
				    strerror(errno));
	for (size_t i = 0; i < m->n; i++)
		m->f[i].seen = false;
	rel[0] = '\0';
	r = walk(m, dirfd, rel, 0, st.st_dev, 0, err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < m->n; i++)
		if (!m->f[i].seen)
			return mismatch(err, m->f[i].path, "missing");
	return 0;
}

/* --- the stream --------------------------------------------------------- */

struct export_stream {
	uint64_t key;
	struct pd_mutex lock;
	unsigned refs; /* the reader and the compressor thread */
	int fd;	       /* the archive so far: an unlinked temp file */
	uint64_t written;
	bool done, cancel;
	int result;
	pd_error err;
	int dirfd, pipe_r, pipe_w;
	pthread_t tar_thread;
	int tar_result;
	pd_error tar_err;
	int write_err; /* of the temp file (zstd thread) */

	/* The tar thread's hashing. */
	struct export_manifest *manifest;
	XXH3_state_t *hash;
	char *file; /* the file being hashed */
	char *manifest_text;
	bool oom;

	void (*wake)(void *userdata, uint64_t key);
	void (*release)(void *userdata);
	void *userdata;
};

static atomic_uint_fast64_t next_serial;

static void stream_unref(struct export_stream *x)
{
	bool last;

	pd_mutex_lock(&x->lock);
	last = --x->refs == 0;
	pd_mutex_unlock(&x->lock);
	if (!last)
		return;
	if (x->release)
		x->release(x->userdata);
	if (x->fd >= 0)
		close(x->fd);
	if (x->dirfd >= 0)
		close(x->dirfd);
	if (x->pipe_r >= 0)
		close(x->pipe_r);
	if (x->pipe_w >= 0)
		close(x->pipe_w);
	export_manifest_free(x->manifest);
	if (x->hash)
		XXH3_freeState(x->hash);
	free(x->file);
	free(x->manifest_text);
	pd_mutex_destroy(&x->lock);
	free(x);
}

static void hook_begin(void *userdata, const char *name)
{
	struct export_stream *x = userdata;

	free(x->file);
	x->file = strdup(name);
	if (!x->file)
		x->oom = true;
	(void)XXH3_128bits_reset(x->hash);
}

static void hook_data(void *userdata, const void *data, size_t len)
{
	struct export_stream *x = userdata;

	XXH3_128bits_update(x->hash, data, len);
}

static int hook_end(void *userdata, uint64_t size, pd_error *err)
{
	struct export_stream *x = userdata;
	XXH128_canonical_t c;

	XXH128_canonicalFromHash(&c, XXH3_128bits_digest(x->hash));
	if (x->oom || export_manifest_add(x->manifest, x->file, size, c.digest) < 0)
		return pd_error_set(err, -ENOMEM, "out of memory");
	return 0;
}

static int hook_link(void *userdata, const char *name, const char *target, pd_error *err)
{
	struct export_stream *x = userdata;

	if (export_manifest_add_link(x->manifest, name, target) < 0)
		return pd_error_set(err, -ENOMEM, "out of memory");
	return 0;
}

static int hook_trailer(void *userdata, const char **ret_name, const char **ret_data,
			size_t *ret_len, pd_error *err)
{
	struct export_stream *x = userdata;
	int r = export_manifest_format(x->manifest, &x->manifest_text, ret_len);

	if (r < 0)
		return pd_error_set(err, r, "cannot write the manifest: %s", strerror(-r));
	*ret_name = EXPORT_MANIFEST_NAME;
	*ret_data = x->manifest_text;
	return 0;
}

static void *tar_main(void *userdata)
{
	struct export_stream *x = userdata;
	const struct tar_create_hooks hooks = {
	    .file_begin = hook_begin,
	    .file_data = hook_data,
	    .file_end = hook_end,
	    .hardlink = hook_link,
	    .trailer = hook_trailer,
	    .userdata = x,
	};

	x->tar_result = tarsafe_create_ex(x->dirfd, ".", x->pipe_w, &hooks, &x->tar_err);
	close(x->pipe_w);
	x->pipe_w = -1;
	return NULL;
}

static la_ssize_t zstd_write(struct archive *a, void *userdata, const void *buf, size_t len)
{
	struct export_stream *x = userdata;
	bool cancel;

	/* Failures are noted, not returned: libarchive leaks its buffer
	 * when a write fails, and the loop stops at the next read. */
	(void)a;
	pd_mutex_lock(&x->lock);
	cancel = x->cancel;
	pd_mutex_unlock(&x->lock);
	if (cancel || x->write_err)
		return (la_ssize_t)len;
	x->write_err = write_all(x->fd, buf, len);
	if (x->write_err < 0)
		return (la_ssize_t)len;
	pd_mutex_lock(&x->lock);
	x->written += len;
	pd_mutex_unlock(&x->lock);
	x->wake(x->userdata, x->key);
	return (la_ssize_t)len;
}

/* Compresses the tar stream from the pipe into the temp file (libarchive's
 * raw format: one unnamed stream through the zstd filter). */
static void *zstd_main(void *userdata)
{
	struct export_stream *x = userdata;
	struct archive *a = archive_write_new();
	struct archive_entry *entry = archive_entry_new();
	_cleanup_free_ char *buf = malloc(EXPORT_CHUNK);
	char level[8];
	pd_error err = {0};
	int r = 0;

	snprintf(level, sizeof level, "%d", EXPORT_ZSTD_LEVEL);
	if (!a || !entry || !buf)
		r = pd_error_set(&err, -ENOMEM, "out of memory");
	if (r >= 0 &&
	    (archive_write_set_format_raw(a) != ARCHIVE_OK ||
	     archive_write_add_filter_zstd(a) != ARCHIVE_OK ||
	     archive_write_set_filter_option(a, "zstd", "compression-level", level) != ARCHIVE_OK ||
	     archive_write_set_bytes_in_last_block(a, 1) != ARCHIVE_OK ||
	     archive_write_open2(a, x, NULL, zstd_write, NULL, NULL) != ARCHIVE_OK))
		r = pd_error_set(&err, -EIO, "cannot start zstd: %s", archive_error_string(a));
	if (r >= 0) {
		archive_entry_set_pathname(entry, "export.tar");
		archive_entry_set_filetype(entry, AE_IFREG);
		if (archive_write_header(a, entry) != ARCHIVE_OK)
			r = pd_error_set(&err, -EIO, "cannot start zstd: %s",
					 archive_error_string(a));
	}
	while (r >= 0) {
		ssize_t n;
		bool cancel;

		pd_mutex_lock(&x->lock);
		cancel = x->cancel;
		pd_mutex_unlock(&x->lock);
		if (cancel) {
			r = pd_error_set(&err, -ECANCELED, "export cancelled");
			break;
		}
		if (x->write_err < 0) {
			r = pd_error_set(&err, x->write_err, "cannot write the export: %s",
					 strerror(-x->write_err));
			break;
		}
		n = read(x->pipe_r, buf, EXPORT_CHUNK);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = pd_error_set(&err, -errno, "cannot read the tar stream: %s",
					 strerror(errno));
			break;
		}
		if (n == 0)
			break;
		if (archive_write_data(a, buf, (size_t)n) != n)
			r = pd_error_set(&err, -EIO, "cannot compress: %s",
					 archive_error_string(a));
	}
	/* The tar thread ends on EOF of its pipe, or EPIPE once we stop. */
	close(x->pipe_r);
	x->pipe_r = -1;
	pthread_join(x->tar_thread, NULL);
	if (a && archive_write_close(a) != ARCHIVE_OK && r >= 0)
		r = pd_error_set(&err, -EIO, "cannot compress: %s", archive_error_string(a));
	if (r >= 0 && x->write_err < 0)
		r = pd_error_set(&err, x->write_err, "cannot write the export: %s",
				 strerror(-x->write_err));
	if (x->tar_result < 0 && (r >= 0 || r == -EIO)) {
		/* The cause; our own failure would only be its echo. */
		err = x->tar_err;
		r = x->tar_result;
	}
	if (a)
		archive_write_free(a);
	if (entry)
		archive_entry_free(entry);

	pd_mutex_lock(&x->lock);
	x->done = true;
	x->result = r;
	x->err = err;
	pd_mutex_unlock(&x->lock);
	x->wake(x->userdata, x->key);
	pd_hold("export-end");
	stream_unref(x);
	return NULL;
}

int export_stream_start(const struct export_source *src, struct export_stream **ret, pd_error *err)
{
	/* The archive holds a box's or a volume's files: root's alone, whatever
	 * mode the caller's temp file was made with. */
	int r = fchmod(src->tmpfd, 0600) < 0 ? -errno : 0;
	struct export_stream *x = r < 0 ? NULL : calloc(1, sizeof *x);
	pthread_t th;
	int fds[2];

	if (!x) {
		close(src->dirfd);
		close(src->tmpfd);
		if (src->release)
			src->release(src->userdata);
		return r < 0 ? pd_error_set(err, r, "cannot make the archive private: %s",
					    strerror(-r))
			     : pd_error_set(err, -ENOMEM, "out of memory");
	}
	pd_mutex_init(&x->lock, LOCK_RANK_LEAF, 0, "export stream lock");
	x->refs = 1;
	x->dirfd = src->dirfd;
	x->fd = src->tmpfd;
	x->pipe_r = x->pipe_w = -1;
	x->wake = src->wake;
	x->release = src->release;
	x->userdata = src->userdata;
	x->key = EXPORT_WAKE_BIT | (atomic_fetch_add(&next_serial, 1) + 1);
	x->manifest = export_manifest_new(src->kind, src->source, time(NULL));
	x->hash = XXH3_createState();
	if (!x->manifest || !x->hash) {
		stream_unref(x);
		return pd_error_set(err, -ENOMEM, "out of memory");
	}
	if (pipe2(fds, O_CLOEXEC) < 0) {
		r = -errno;
		stream_unref(x);
		return pd_error_set(err, r, "cannot make a pipe: %s", strerror(-r));
	}
	x->pipe_r = fds[0];
	x->pipe_w = fds[1];
	if (pthread_create(&x->tar_thread, NULL, tar_main, x) != 0) {
		stream_unref(x);
		return pd_error_set(err, -EAGAIN, "cannot start the export");
	}
	x->refs = 2;
	if (pthread_create(&th, NULL, zstd_main, x) != 0) {
		/* The tar thread gets EPIPE and ends. */
		close(x->pipe_r);
		x->pipe_r = -1;
		pthread_join(x->tar_thread, NULL);
		x->refs = 1;
		stream_unref(x);
		return pd_error_set(err, -EAGAIN, "cannot start the export");
	}
	pthread_detach(th);
	*ret = x;
	return 0;
}

int export_stream_read(struct export_stream *x, uint64_t off, char *buf, size_t size, size_t *ret_n)
{
	uint64_t avail;
	bool done;
	int result;
	ssize_t n;

	pd_mutex_lock(&x->lock);
	avail = x->written;
	done = x->done;
	result = x->result;
	pd_mutex_unlock(&x->lock);
	if (off >= avail) {
		if (!done && size > 0)
			return -EAGAIN;
		if (result < 0)
			return result == -ENOMEM ? -ENOMEM : -EIO;
		*ret_n = 0;
		return 0;
	}
	if (size > avail - off)
		size = (size_t)(avail - off);
	n = pread(x->fd, buf, size, (off_t)off);
	if (n < 0)
		return -errno;
	*ret_n = (size_t)n;
	return 0;
}

uint64_t export_stream_key(const struct export_stream *x)
{
	return x->key;
}

bool export_stream_live(struct export_stream *x)
{
	bool live;

	pd_mutex_lock(&x->lock);
	live = !x->done;
	pd_mutex_unlock(&x->lock);
	return live;
}

void export_stream_error(struct export_stream *x, pd_error *ret)
{
	pd_mutex_lock(&x->lock);
	*ret = x->err;
	pd_mutex_unlock(&x->lock);
}

void export_stream_close(struct export_stream *x)
{
	if (!x)
		return;
	pd_mutex_lock(&x->lock);
	x->cancel = true;
	pd_mutex_unlock(&x->lock);
	stream_unref(x);
}

/* --- verification on import ---------------------------------------------- */

static int verify_special(void *userdata, const char *data, size_t len, pd_error *err)
{
	struct export_verify *v = userdata;
	int r;

	if (v->manifest)
		return pd_error_set(err, -EINVAL, "the archive has two manifests");
	r = export_manifest_parse(data, len, &v->manifest, err);
	if (r < 0)
		pd_error_prefix(err, "the archive's manifest (%s) is invalid",
				EXPORT_MANIFEST_NAME);
	return r;
}

static int verify_before_merge(void *userdata, int stagefd, pd_error *err)
{
	struct export_verify *v = userdata;

	return v->manifest ? export_manifest_verify(v->manifest, stagefd, err) : 0;
}

void export_verify_hooks(struct export_verify *v, struct tar_extract_hooks *ret)
{
	*ret = (struct tar_extract_hooks){
	    .special = EXPORT_MANIFEST_NAME,
	    .special_max = EXPORT_MANIFEST_MAX,
	    .on_special = verify_special,
	    .before_merge = verify_before_merge,
	    .userdata = v,
	};
}

void export_verify_release(struct export_verify *v)
{
	v->manifest = export_manifest_free(v->manifest);
}
