/* tarsafe-extract.c - tar push into a box's root: read the whole archive
 * into a staging directory, checking and charging every entry; find where
 * its directories land (struct root); judge its symlinks against the tree
 * the merge will make; then merge it into the target (see tarsafe_extract()
 * in tarsafe.h). */
#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/tarsafe-internal.h"
#include "common/tarsafe.h"
#include "common/util.h"

#define READ_BLOCK (64 * 1024)
#define REL_MAX (2 * PATH_MAX)
/* What an entry is charged on a disk (see tarsafe_extract()). */
#define DISK_BLOCK 4096ULL
#define DISK_NAME_COST 64ULL
/* Path lookups the link check may make for one archive: a base, and more
 * for each link. Enough for any archive made by tar from a real tree. */
#define LOOKUP_BUDGET_BASE 1000000ULL
#define LOOKUPS_PER_LINK 64ULL

/* An explicit directory entry's mtime, applied once all entries are in. */
struct dirmeta {
	ino_t ino;
	struct timespec mtime;
};

/* A symlink put in the staging directory, checked again once all entries
 * are in (its meaning depends on the whole tree). */
struct staged_link {
	char *rel; /* from DIR, normalized */
	uint64_t entry;
	bool removed; /* skipped by the final check */
};

/* Where staged directories land: DIR (the first), and every directory of
 * the archive that merges through a symlink already in the target, which is
 * kept (like tar's --keep-directory-symlink) and leads to a directory of
 * the same filesystem inside the root. Found before any link is judged, and
 * followed by the merge only if unchanged. */
struct root {
	char *stage;	 /* the staged directory, from the staging directory; "" for DIR */
	char *real;	 /* where it lands, from the root, through no link; "" the root */
	ino_t stage_ino; /* the staged directory */
	dev_t link_dev;	 /* the symlink it merges through */
	ino_t link_ino;
	dev_t dev; /* the directory it lands in */
	ino_t ino;
};

struct extract {
	int rootfd;
	int dirfd;   /* DIR */
	int stagefd; /* DIR/.paddock-push-XXXXXXXXXX */
	dev_t dev;
	ino_t stage_ino;
	char stagename[32];
	char dir[PATH_MAX]; /* DIR, normalized */
	uint64_t max_entries, max_bytes;
	bool disk_limited;
	uint64_t disk_room;
	uint64_t disk_used; /* charged so far */
	uid_t uid;
	gid_t gid;
	unsigned flags;
	const char *root_what;
	uint64_t entries, bytes, skipped;
	/* DIR's real place from the root (through the box's links), for
	 * judging where the archive's symlinks lead. */
	char dir_real[PATH_MAX];

	/* The staging directory the last entry went into. */
	char cached[PATH_MAX];
	int cachedfd;

	struct dirmeta *dirs;
	size_t n_dirs, cap_dirs;

	struct staged_link *links;
	size_t n_links, cap_links;

	struct root *roots; /* roots[0] is DIR */
	size_t n_roots, cap_roots;
	/* The roots sorted by real, by stage and by stage_ino. */
	struct root **by_real, **by_stage, **by_ino;

	const struct tar_extract_hooks *hooks;
	pd_error *err;
	char pname[128];	/* the current entry's name, printable */
	uint64_t lookup_budget; /* for the link check's message */
	uint64_t lookups;
};

/* The end of the archive at entry number `entry` (pname, printable), or,
 * when `skippable` and under TAR_SKIP_REFUSED, that entry skipped and
 * reported (returns 0). */
static int vreport(struct extract *ex, uint64_t entry, const char *pname, int code, bool skippable,
		   const char *fmt, va_list ap) _printf_(6, 0);

static int vreport(struct extract *ex, uint64_t entry, const char *pname, int code, bool skippable,
		   const char *fmt, va_list ap)
{
	char why[256];

	if (vsnprintf(why, sizeof(why), fmt, ap) < 0)
		why[0] = '\0';
	if (!skippable || !(ex->flags & TAR_SKIP_REFUSED))
		return pd_error_set(ex->err, code, "entry %llu (%s): %s", (unsigned long long)entry,
				    pname, why);
	ex->skipped++;
	if (ex->hooks && ex->hooks->on_skip)
		ex->hooks->on_skip(ex->hooks->userdata, pname, why);
	return 0;
}

static int entry_fail(struct extract *ex, int code, const char *fmt, ...) _printf_(3, 4);

static int entry_fail(struct extract *ex, int code, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vreport(ex, ex->entries, ex->pname, code, /* skippable= */ false, fmt, ap);
	va_end(ap);
	return r;
}

static int refuse_at(struct extract *ex, uint64_t entry, const char *pname, int code,
		     const char *fmt, ...) _printf_(5, 6);

/* An entry this extraction does not write: skipped and reported under
 * TAR_SKIP_REFUSED (returns 0), else the archive's end (code). */
static int refuse_at(struct extract *ex, uint64_t entry, const char *pname, int code,
		     const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vreport(ex, entry, pname, code, /* skippable= */ true, fmt, ap);
	va_end(ap);
	return r;
}

#define entry_refuse(ex, ...) refuse_at((ex), (ex)->entries, (ex)->pname, -EPERM, __VA_ARGS__)

static const char *root_what(const struct extract *ex)
{
	return ex->root_what ? ex->root_what : "the target directory";
}

/* The owner of an entry's file: the archive's with TAR_KEEP_OWNERS. */
static void entry_owner(const struct extract *ex, struct archive_entry *e, uid_t *uid, gid_t *gid)
{
	*uid = ex->uid;
	*gid = ex->gid;
	if (ex->flags & TAR_KEEP_OWNERS) {
		*uid = (uid_t)archive_entry_uid(e);
		*gid = (gid_t)archive_entry_gid(e);
	}
}

/* Charges `bytes` on a disk for the current entry, before it is written:
 * against the room left (lim->disk_room) and through the hooks' reserve(). */
static int charge(struct extract *ex, uint64_t bytes)
{
	int r;

	if (ex->disk_limited && bytes > ex->disk_room - ex->disk_used)
		return entry_fail(ex, -ENOSPC,
				  "takes %llu bytes on disk, %llu in all, over the %llu bytes left "
				  "under the disk limit",
				  (unsigned long long)bytes,
				  (unsigned long long)(ex->disk_used + bytes),
				  (unsigned long long)ex->disk_room);
	if (ex->hooks && ex->hooks->reserve) {
		r = ex->hooks->reserve(ex->hooks->userdata, bytes, ex->err);
		if (r < 0)
			return pd_error_prefix(ex->err, "entry %llu (%s): %llu bytes on disk",
					       (unsigned long long)ex->entries, ex->pname,
					       (unsigned long long)bytes);
	}
	ex->disk_used += bytes;
	return 0;
}

static uint64_t round_block(uint64_t n)
{
	uint64_t r = (n + DISK_BLOCK - 1) / DISK_BLOCK * DISK_BLOCK;

	return r < DISK_BLOCK ? DISK_BLOCK : r;
}

static int archive_code(struct archive *a)
{
	int e = archive_errno(a);

	/* A malformed or truncated stream is the client's fault (EINVAL);
	 * a read error on in_fd keeps its errno. */
	return e > 0 && e != EILSEQ && e != EINVAL ? -e : -EINVAL;
}

static void drop_cache(struct extract *ex)
{
	if (ex->cachedfd >= 0)
		close(ex->cachedfd);
	ex->cachedfd = -1;
	ex->cached[0] = '\0';
}

/* A borrowed fd of the staging directory `parent` ("." for the top),
 * created with its missing ancestors if needed; never through a symlink. */
static int stage_parent(struct extract *ex, const char *parent)
{
	int fd, r;

	if (strcmp(parent, ".") == 0)
		return ex->stagefd;
	if (ex->cachedfd >= 0 && strcmp(ex->cached, parent) == 0)
		return ex->cachedfd;
	drop_cache(ex);

	fd = tarsafe_openat2(ex->stagefd, parent, O_PATH | O_DIRECTORY, 0, TARSAFE_RESOLVE_STAGE);
	if (fd == -ENOENT) {
		unsigned created = 0;

		r = tarsafe_mkdir_p_at(ex->stagefd, parent, 0755, ex->uid, ex->gid,
				       TARSAFE_RESOLVE_STAGE, &created);
		/* Directories the archive implies take room too (at most
		 * TARSAFE_MAX_DEPTH, made just now in the staging area). */
		if (r >= 0 && created > 0) {
			r = charge(ex, created * DISK_BLOCK);
			if (r < 0)
				return r;
		}
		fd = r < 0 ? r
			   : tarsafe_openat2(ex->stagefd, parent, O_PATH | O_DIRECTORY, 0,
					     TARSAFE_RESOLVE_STAGE);
	}
	if (fd == -ELOOP)
		return entry_fail(ex, -EINVAL, "path goes through a symlink of the archive");
	if (fd == -ENOTDIR || fd == -EEXIST)
		return entry_fail(ex, -EINVAL, "path goes through a file of the archive");
	if (fd < 0)
		return entry_fail(ex, fd, "cannot create its directory: %s", strerror(-fd));
	snprintf(ex->cached, sizeof(ex->cached), "%s", parent);
	ex->cachedfd = fd;
	return fd;
}

/* Makes room for an entry `base` in pfd, where an earlier entry of the
 * same name exists: the later one wins. Returns 1 when an existing
 * directory should be kept (want_dir), 0 when the name is free. */
static int stage_clear(struct extract *ex, int pfd, const char *base, bool want_dir)
{
	struct stat st;

	if (fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : entry_fail(ex, -errno, "%s", strerror(errno));
	if (S_ISDIR(st.st_mode)) {
		if (want_dir)
			return 1;
		drop_cache(ex);
		if (unlinkat(pfd, base, AT_REMOVEDIR) < 0)
			return entry_fail(ex, -EINVAL,
					  "replaces a directory of the archive that is not empty");
		return 0;
	}
	if (unlinkat(pfd, base, 0) < 0 && errno != ENOENT)
		return entry_fail(ex, -errno, "%s", strerror(errno));
	return 0;
}

static void entry_times(struct archive_entry *e, struct timespec ts[2])
{
	ts[0].tv_sec = 0;
	ts[0].tv_nsec = UTIME_OMIT;
	ts[1] = ts[0];
	if (archive_entry_mtime_is_set(e)) {
		long ns = archive_entry_mtime_nsec(e);
		ts[1].tv_sec = archive_entry_mtime(e);
		ts[1].tv_nsec = ns >= 0 && ns < 1000000000L ? ns : 0;
	}
}

static int pwrite_all(int fd, const void *buf, size_t len, off_t off)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = pwrite(fd, p, len, off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
		off += n;
	}
	return 0;
}

static int stage_file(struct extract *ex, struct archive *a, struct archive_entry *e, int pfd,
		      const char *base)
{
	_cleanup_close_ int fd = -1;
	int64_t size = archive_entry_size(e);
	uint64_t end = 0;
	struct timespec ts[2];
	uid_t uid;
	gid_t gid;
	int r;

	for (int tries = 0; fd < 0; tries++) {
		fd = openat(pfd, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd >= 0)
			break;
		if (errno != EEXIST || tries > 0)
			return entry_fail(ex, -errno, "cannot create: %s", strerror(errno));
		r = stage_clear(ex, pfd, base, /* want_dir= */ false);
		if (r < 0)
			return r;
	}

	for (;;) {
		const void *buf;
		size_t len;
		la_int64_t off;

		r = archive_read_data_block(a, &buf, &len, &off);
		if (r == ARCHIVE_EOF)
			break;
		if (r < ARCHIVE_WARN)
			return entry_fail(ex, archive_code(a), "%s", tarsafe_archive_why(a));
		if (off < 0 || (uint64_t)off > (uint64_t)size ||
		    len > (uint64_t)size - (uint64_t)off)
			return entry_fail(ex, -EINVAL, "data beyond the size in its header");
		r = pwrite_all(fd, buf, len, off);
		if (r < 0)
			return entry_fail(ex, r, "cannot write: %s", strerror(-r));
		if ((uint64_t)off + len > end)
			end = (uint64_t)off + len;
	}
	if (end < (uint64_t)size && ftruncate(fd, size) < 0) /* a sparse file's tail */
		return entry_fail(ex, -errno, "cannot write: %s", strerror(errno));

	entry_owner(ex, e, &uid, &gid);
	r = tarsafe_own_fd(fd, archive_entry_perm(e) & 01777, uid, gid);
	entry_times(e, ts);
	if (r == 0 && futimens(fd, ts) < 0)
		r = -errno;
	if (r < 0)
		return entry_fail(ex, r, "cannot set owner, mode or time: %s", strerror(-r));
	return 0;
}

static int stage_dir(struct extract *ex, struct archive_entry *e, int pfd, const char *base)
{
	_cleanup_close_ int fd = -1;
	struct timespec ts[2];
	struct stat st;
	uid_t uid;
	gid_t gid;
	int r;

	if (mkdirat(pfd, base, 0700) < 0) {
		if (errno != EEXIST)
			return entry_fail(ex, -errno, "cannot create: %s", strerror(errno));
		r = stage_clear(ex, pfd, base, /* want_dir= */ true);
		if (r < 0)
			return r;
		if (r == 0 && mkdirat(pfd, base, 0700) < 0)
			return entry_fail(ex, -errno, "cannot create: %s", strerror(errno));
	}
	fd = openat(pfd, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return entry_fail(ex, -errno, "cannot open: %s", strerror(errno));
	entry_owner(ex, e, &uid, &gid);
	r = tarsafe_own_fd(fd, archive_entry_perm(e) & 01777, uid, gid);
	if (r == 0 && fstat(fd, &st) < 0)
		r = -errno;
	if (r < 0)
		return entry_fail(ex, r, "cannot set owner or mode: %s", strerror(-r));

	if (ex->n_dirs == ex->cap_dirs) {
		size_t cap = ex->cap_dirs ? ex->cap_dirs * 2 : 64;
		struct dirmeta *d = reallocarray(ex->dirs, cap, sizeof(*d));
		if (!d)
			return entry_fail(ex, -ENOMEM, "out of memory");
		ex->dirs = d;
		ex->cap_dirs = cap;
	}
	entry_times(e, ts);
	ex->dirs[ex->n_dirs++] = (struct dirmeta){.ino = st.st_ino, .mtime = ts[1]};
	return 0;
}

/* Whether normalized `norm`'s first component is the staging directory. */
static bool is_stage_name(const struct extract *ex, const char *norm)
{
	size_t len = strlen(ex->stagename);

	return strncmp(norm, ex->stagename, len) == 0 && (norm[len] == '/' || norm[len] == '\0');
}

/* ---- looking at the staged tree and the target ---- */

static enum tarsafe_node node_at(int pfd, const char *base, const struct stat *st, char *target,
				 size_t size)
{
	ssize_t n;

	if (S_ISDIR(st->st_mode))
		return TARSAFE_NODE_DIR;
	if (!S_ISLNK(st->st_mode))
		return TARSAFE_NODE_OTHER;
	n = readlinkat(pfd, base, target, size - 1);
	if (n < 0)
		return TARSAFE_NODE_MISSING;
	target[n] = '\0';
	return TARSAFE_NODE_LINK;
}

/* lstat of `path` below dirfd through real directories only: *ret_pfd is
 * its parent (the caller closes it). Returns 0, or -errno when the entry
 * or a directory on its way is missing (or not a directory). */
static int stat_below(int dirfd, const char *path, int *ret_pfd, const char **ret_base, char *buf,
		      size_t size, struct stat *st)
{
	const char *parent;
	int pfd;

	if ((size_t)snprintf(buf, size, "%s", path) >= size)
		return -ENAMETOOLONG;
	tarsafe_split(buf, &parent, ret_base);
	pfd = tarsafe_openat2(dirfd, parent, O_PATH | O_DIRECTORY, 0, TARSAFE_RESOLVE_STAGE);
	if (pfd < 0)
		return pfd;
	if (fstatat(pfd, *ret_base, st, AT_SYMLINK_NOFOLLOW) < 0) {
		int r = -errno;
		close(pfd);
		return r;
	}
	*ret_pfd = pfd;
	return 0;
}

/* ---- where the archive's directories land (struct root) ---- */

/* A directory's place from the root as the kernel resolved it (through
 * the box's own links, held inside the root), read back from
 * /proc/self/fd. */
static int real_dir(int rootfd, int dirfd, char *buf, size_t size)
{
	char rpath[PATH_MAX], dpath[PATH_MAX], proc[64];
	ssize_t rn, dn;

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", rootfd);
	rn = readlink(proc, rpath, sizeof(rpath) - 1);
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", dirfd);
	dn = readlink(proc, dpath, sizeof(dpath) - 1);
	if (rn < 0 || dn < 0)
		return -errno;
	if (rn == 0 || dn == 0)
		return -EIO;
	if (rn == 1) /* the root is "/" */
		rn = 0;
	if (dn < rn || memcmp(dpath, rpath, (size_t)rn) != 0 || (dn > rn && dpath[rn] != '/'))
		return -EIO; /* moved away meanwhile */
	dpath[dn] = '\0';
	if ((size_t)snprintf(buf, size, "%s", dpath + rn + (dn > rn)) >= size)
		return -ENAMETOOLONG;
	return 0;
}

static int cmp_real(const void *a, const void *b)
{
	return strcmp((*(struct root *const *)a)->real, (*(struct root *const *)b)->real);
}

static int cmp_stage(const void *a, const void *b)
{
	return strcmp((*(struct root *const *)a)->stage, (*(struct root *const *)b)->stage);
}

static int cmp_ino(const void *a, const void *b)
{
	ino_t x = (*(struct root *const *)a)->stage_ino, y = (*(struct root *const *)b)->stage_ino;

	return x < y ? -1 : x > y;
}

static const char *root_key(const struct root *r, bool stage)
{
	return stage ? r->stage : r->real;
}

/* The first root (sorted by stage or real) whose key is not below
 * key[0..len). */
static size_t root_lower(struct root *const *sorted, size_t n, bool stage, const char *key,
			 size_t len)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const char *v = root_key(sorted[mid], stage);
		int c = strncmp(v, key, len);

		if (c == 0)
			c = v[len] != '\0';
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static bool root_is(const struct root *r, bool stage, const char *key, size_t len)
{
	const char *v = root_key(r, stage);

	return strncmp(v, key, len) == 0 && v[len] == '\0';
}

/* The root whose stage (or real) is the longest prefix of path at a
 * component boundary; *ret_rest is the rest of path ("" for all of it).
 * NULL when there is none (never for stage: DIR's is ""). */
static struct root *root_deepest(const struct extract *ex, bool stage, const char *path,
				 const char **ret_rest)
{
	struct root *const *sorted = stage ? ex->by_stage : ex->by_real;
	size_t len = strlen(path);

	for (;;) {
		size_t i = root_lower(sorted, ex->n_roots, stage, path, len);

		if (i < ex->n_roots && root_is(sorted[i], stage, path, len)) {
			*ret_rest = path + len + (path[len] == '/');
			return sorted[i];
		}
		if (len == 0)
			return NULL;
		while (len > 0 && path[len - 1] != '/')
			len--;
		if (len > 0)
			len--;
	}
}

/* The root kept for the staged directory `ino`, or NULL. */
static struct root *root_by_ino(const struct extract *ex, ino_t ino)
{
	struct root key = {.stage_ino = ino}, *kp = &key, **r;

	if (!ex->by_ino)
		return NULL;
	r = bsearch(&kp, ex->by_ino, ex->n_roots, sizeof(kp), cmp_ino);
	return r ? *r : NULL;
}

static int add_root(struct extract *ex, const char *stage, const char *real, ino_t stage_ino,
		    const struct stat *link, const struct stat *dir)
{
	struct root *r;

	if (ex->n_roots == ex->cap_roots) {
		size_t cap = ex->cap_roots ? ex->cap_roots * 2 : 8;
		r = reallocarray(ex->roots, cap, sizeof(*r));
		if (!r)
			return pd_error_set(ex->err, -ENOMEM, "out of memory");
		ex->roots = r;
		ex->cap_roots = cap;
	}
	r = &ex->roots[ex->n_roots];
	*r = (struct root){.stage = strdup(stage),
			   .real = strdup(real),
			   .stage_ino = stage_ino,
			   .link_dev = link ? link->st_dev : 0,
			   .link_ino = link ? link->st_ino : 0,
			   .dev = dir->st_dev,
			   .ino = dir->st_ino};
	if (!r->stage || !r->real) {
		free(r->stage);
		free(r->real);
		return pd_error_set(ex->err, -ENOMEM, "out of memory");
	}
	ex->n_roots++;
	return 0;
}

static int plan_fail(struct extract *ex, int code, const char *stage, const char *what)
{
	char pbuf[128];

	return pd_error_set(ex->err, code, "%s: %s",
			    tarsafe_printable(stage[0] ? stage : ".", pbuf, sizeof(pbuf)), what);
}

/* Appends "/name" to buf (len used, REL_MAX bytes). */
static int path_append(char *buf, size_t len, const char *name, size_t *ret_len)
{
	size_t nlen = strlen(name), n = len + (len > 0) + nlen;

	if (n + 1 > REL_MAX)
		return -ENAMETOOLONG;
	if (len > 0)
		buf[len] = '/';
	memcpy(buf + len + (len > 0), name, nlen + 1);
	*ret_len = n;
	return 0;
}

static int plan_dir(struct extract *ex, int sfd, char *stage, size_t slen, int tfd, char *real,
		    size_t rlen, unsigned depth);

/* The staged directory csfd (at stage) meets the symlink `link` of the
 * target (at real, from the root): a root when it leads to a directory of
 * the same filesystem inside the root and outside the staging directory;
 * otherwise the merge replaces the link. */
static int plan_link(struct extract *ex, int csfd, const struct stat *sst, const struct stat *link,
		     char *stage, size_t slen, const char *real, unsigned depth)
{
	_cleanup_free_ char *dest = malloc(REL_MAX);
	_cleanup_close_ int dfd = -1;
	size_t dlen = strlen(ex->dir_real), nlen = strlen(ex->stagename);
	const char *in_dir;
	struct stat st;
	int r;

	if (!dest)
		return pd_error_set(ex->err, -ENOMEM, "out of memory");
	dfd = tarsafe_openat2(ex->rootfd, real, O_RDONLY | O_DIRECTORY, 0, TARSAFE_RESOLVE_ROOT);
	if (dfd < 0 || fstat(dfd, &st) < 0 || st.st_dev != ex->dev)
		return 0;
	r = real_dir(ex->rootfd, dfd, dest, REL_MAX);
	if (r < 0)
		return plan_fail(ex, r, stage, "cannot tell where the symlink there leads");
	in_dir = dlen == 0						       ? dest
		 : strncmp(dest, ex->dir_real, dlen) == 0 && dest[dlen] == '/' ? dest + dlen + 1
									       : NULL;
	if (in_dir && strncmp(in_dir, ex->stagename, nlen) == 0 &&
	    (in_dir[nlen] == '\0' || in_dir[nlen] == '/'))
		return 0; /* into the staging directory (a racing box) */
	r = add_root(ex, stage, dest, sst->st_ino, link, &st);
	if (r < 0)
		return r;
	return plan_dir(ex, csfd, stage, slen, dfd, dest, strlen(dest), depth + 1);
}

/*
 * Finds the roots below the staged directory sfd (at `stage` from the
 * staging directory, slen bytes used of REL_MAX) and the existing directory
 * tfd it merges into (at `real` from the root, rlen used of REL_MAX): every
 * staged directory that meets a symlink of the target, unless
 * TAR_REPLACE_DIR_LINKS. Nothing is changed.
 */
static int plan_dir(struct extract *ex, int sfd, char *stage, size_t slen, int tfd, char *real,
		    size_t rlen, unsigned depth)
{
	struct dirent *de;
	DIR *d;
	int r = 0;

	if (depth > TARSAFE_MAX_DEPTH + 1)
		return plan_fail(ex, -ELOOP, stage, "too many levels of directories");
	d = tarsafe_opendir(sfd);
	if (!d)
		return plan_fail(ex, -errno, stage, strerror(errno));

	while ((errno = 0, de = readdir(d))) {
		_cleanup_close_ int csfd = -1, ctfd = -1;
		const char *name = de->d_name;
		struct stat sst, tst;
		size_t sl, rl;

		if ((de->d_type != DT_DIR && de->d_type != DT_UNKNOWN) || strcmp(name, ".") == 0 ||
		    strcmp(name, "..") == 0)
			continue;
		if (fstatat(dirfd(d), name, &sst, AT_SYMLINK_NOFOLLOW) < 0) {
			r = plan_fail(ex, -errno, stage, strerror(errno));
			break;
		}
		if (!S_ISDIR(sst.st_mode))
			continue;
		if (fstatat(tfd, name, &tst, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno == ENOENT)
				continue;
			r = plan_fail(ex, -errno, stage, strerror(errno));
			break;
		}
		if (!S_ISDIR(tst.st_mode) && !S_ISLNK(tst.st_mode))
			continue; /* a file: the directory replaces it */
		if (S_ISLNK(tst.st_mode) && (ex->flags & TAR_REPLACE_DIR_LINKS))
			continue;
		if (path_append(stage, slen, name, &sl) < 0 ||
		    path_append(real, rlen, name, &rl) < 0) {
			stage[slen] = '\0';
			r = plan_fail(ex, -ENAMETOOLONG, stage, "name too long");
			break;
		}
		csfd = openat(dirfd(d), name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (csfd < 0) {
			r = plan_fail(ex, -errno, stage, strerror(errno));
		} else if (S_ISLNK(tst.st_mode)) {
			r = plan_link(ex, csfd, &sst, &tst, stage, sl, real, depth);
		} else if (tst.st_dev == ex->dev) {
			ctfd = openat(tfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (ctfd >= 0)
				r = plan_dir(ex, csfd, stage, sl, ctfd, real, rl, depth + 1);
		}
		stage[slen] = '\0';
		real[rlen] = '\0';
		if (r < 0)
			break;
	}
	if (r == 0 && errno != 0)
		r = plan_fail(ex, -errno, stage, strerror(errno));
	closedir(d);
	return r;
}

/* Whether entries staged below root a reach `rel` (from a->real): an
 * entry staged there, or a non-directory on the way. */
static bool root_reaches(const struct extract *ex, const struct root *a, const char *rel)
{
	char buf[PATH_MAX], sbuf[PATH_MAX];
	size_t len = strlen(a->stage);
	const char *p = rel;

	if (!*rel || len >= sizeof(buf))
		return true;
	memcpy(buf, a->stage, len + 1);
	for (size_t clen; (clen = tarsafe_next_component(&p)) > 0; p += clen) {
		_cleanup_close_ int pfd = -1;
		const char *base;
		struct stat st;

		if (len + 1 + clen + 1 > sizeof(buf))
			return true;
		if (len > 0)
			buf[len++] = '/';
		memcpy(buf + len, p, clen);
		len += clen;
		buf[len] = '\0';
		if (stat_below(ex->stagefd, buf, &pfd, &base, sbuf, sizeof(sbuf), &st) < 0)
			return false; /* nothing of the archive there */
		if (!S_ISDIR(st.st_mode))
			return true;
	}
	return true; /* staged down to rel itself */
}

static int root_conflict(struct extract *ex, const struct root *a, const struct root *b,
			 const char *rel)
{
	char name[PATH_MAX], p1[128], p2[128], p3[128];

	if (b == &ex->roots[0]) /* a's entries reach into DIR */
		return pd_error_set(ex->err, -EPERM,
				    "%s/ would merge through the symlink already there into /%s, "
				    "where the archive also writes the target directory /%s",
				    tarsafe_printable(a->stage, p1, sizeof(p1)),
				    tarsafe_printable(a->real, p2, sizeof(p2)),
				    tarsafe_printable(b->real, p3, sizeof(p3)));
	snprintf(name, sizeof(name), "%s%s%s", a->stage, *a->stage && *rel ? "/" : "", rel);
	return pd_error_set(
	    ex->err, -EPERM,
	    "%s/ would merge through the symlink already there into /%s, where the "
	    "archive also writes %s",
	    tarsafe_printable(b->stage, p1, sizeof(p1)), tarsafe_printable(b->real, p2, sizeof(p2)),
	    name[0] ? tarsafe_printable(name, p3, sizeof(p3)) : "into the target directory itself");
}

/*
 * Finds the roots and refuses an archive two of whose parts land in one
 * directory: when a root b lands at or below a root a, a's own entries may
 * not reach b's place (b->real less a->real). Then each directory of the
 * tree once merged is written from one staged directory, and a staged
 * path's place from the root is known before anything moves: the link
 * check judges the tree the merge makes.
 */
static int plan(struct extract *ex)
{
	_cleanup_free_ char *stage = malloc(REL_MAX), *real = malloc(REL_MAX);
	struct stat st;
	int r;

	if (!stage || !real)
		return pd_error_set(ex->err, -ENOMEM, "out of memory");
	if (fstat(ex->dirfd, &st) < 0)
		return pd_error_set(ex->err, -errno, "%s", strerror(errno));
	r = add_root(ex, "", ex->dir_real, ex->stage_ino, NULL, &st);
	if (r < 0)
		return r;
	stage[0] = '\0';
	snprintf(real, REL_MAX, "%s", ex->dir_real);
	r = plan_dir(ex, ex->stagefd, stage, 0, ex->dirfd, real, strlen(real), 0);
	if (r < 0)
		return r;

	ex->by_real = reallocarray(NULL, ex->n_roots, sizeof(struct root *));
	ex->by_stage = reallocarray(NULL, ex->n_roots, sizeof(struct root *));
	ex->by_ino = reallocarray(NULL, ex->n_roots, sizeof(struct root *));
	if (!ex->by_real || !ex->by_stage || !ex->by_ino)
		return pd_error_set(ex->err, -ENOMEM, "out of memory");
	for (size_t i = 0; i < ex->n_roots; i++)
		ex->by_real[i] = ex->by_stage[i] = ex->by_ino[i] = &ex->roots[i];
	qsort(ex->by_real, ex->n_roots, sizeof(struct root *), cmp_real);
	qsort(ex->by_stage, ex->n_roots, sizeof(struct root *), cmp_stage);
	qsort(ex->by_ino, ex->n_roots, sizeof(struct root *), cmp_ino);

	for (size_t i = 0; i < ex->n_roots; i++) {
		const struct root *b = ex->by_real[i];
		size_t len = strlen(b->real);

		/* Every root at b's place or above it. */
		for (size_t end = 0;;) {
			const char *slash;

			for (size_t j = root_lower(ex->by_real, ex->n_roots, false, b->real, end);
			     j < ex->n_roots && root_is(ex->by_real[j], false, b->real, end); j++) {
				const struct root *a = ex->by_real[j];
				const char *rel = end == len ? "" : b->real + end + (end > 0);

				if (a != b && root_reaches(ex, a, rel))
					return root_conflict(ex, a, b, rel);
			}
			if (end == len)
				break;
			slash = strchr(b->real + end + (end > 0), '/');
			end = slash ? (size_t)(slash - b->real) : len;
		}
	}
	return 0;
}

/* ---- the tree as it will be once merged, for judging symlinks ---- */

/* What `path` (from the root) is in the tree as it stands now. */
static enum tarsafe_node existing_node(const struct extract *ex, const char *path, char *target,
				       size_t size)
{
	char buf[PATH_MAX];
	const char *base;
	struct stat st;
	int pfd = -1;

	if (stat_below(ex->rootfd, path, &pfd, &base, buf, sizeof(buf), &st) < 0)
		return TARSAFE_NODE_MISSING;
	{
		_cleanup_close_ int dpfd = pfd;
		return node_at(dpfd, base, &st, target, size);
	}
}

/* What `path` (from the root) is in the tree the merge will leave: under
 * the deepest root that holds it, the staged entry where there is one (a
 * staged directory that is itself a root leads to where it lands), else
 * what is there now. */
static enum tarsafe_node model_lookup(void *userdata, const char *path, char *target, size_t size)
{
	struct extract *ex = userdata;
	char sp[PATH_MAX], buf[PATH_MAX];
	const char *rest, *base;
	struct root *r = root_deepest(ex, false, path, &rest), *k;
	struct stat st;
	int pfd = -1;

	if (!r)
		return existing_node(ex, path, target, size);
	if (!*rest)
		return TARSAFE_NODE_DIR;
	if (r == &ex->roots[0] && is_stage_name(ex, rest))
		return TARSAFE_NODE_MISSING;
	if ((size_t)snprintf(sp, sizeof(sp), "%s%s%s", r->stage, *r->stage ? "/" : "", rest) >=
	    sizeof(sp))
		return TARSAFE_NODE_MISSING;
	if (stat_below(ex->stagefd, sp, &pfd, &base, buf, sizeof(buf), &st) < 0)
		return existing_node(ex, path, target, size);
	{
		_cleanup_close_ int spfd = pfd;

		if (!S_ISDIR(st.st_mode))
			return node_at(spfd, base, &st, target, size);
	}
	k = root_by_ino(ex, st.st_ino);
	if (!k || k == r)
		return TARSAFE_NODE_DIR;
	snprintf(target, size, "%s", k->real);
	return TARSAFE_NODE_REDIRECT;
}

/* Where the staged entry `stage` (from the staging directory) lands, from
 * the root. */
static int landing(const struct extract *ex, const char *stage, char *buf, size_t size)
{
	const char *rest;
	const struct root *r = root_deepest(ex, true, stage, &rest);

	if (!r || (size_t)snprintf(buf, size, "%s%s%s", r->real, *r->real && *rest ? "/" : "",
				   rest) >= size)
		return -ENAMETOOLONG;
	return 0;
}

/*
 * Judges the staged symlink l against the tree as it stands (stage and
 * root): 0 when it stays inside the root or is no longer a symlink, 1 when
 * it was refused and removed (skipped), or -errno.
 */
static int judge_link(struct extract *ex, const struct tarsafe_walk *w, const struct staged_link *l)
{
	char buf[PATH_MAX], name[PATH_MAX], target[PATH_MAX], cur[PATH_MAX], self[PATH_MAX];
	char why[256], pname[128], tbuf[128];
	_cleanup_close_ int pfd = -1;
	const char *base, *parent, *lbase;
	struct stat st;
	ssize_t n;
	int r;

	tarsafe_printable(l->rel, pname, sizeof(pname));
	r = stat_below(ex->stagefd, l->rel, &pfd, &base, buf, sizeof(buf), &st);
	if (r < 0 || !S_ISLNK(st.st_mode))
		return 0; /* replaced by a later entry */
	n = readlinkat(pfd, base, target, sizeof(target) - 1);
	if (n < 0)
		return pd_error_set(ex->err, -errno, "entry %llu (%s): %s",
				    (unsigned long long)l->entry, pname, strerror(errno));
	target[n] = '\0';
	tarsafe_printable(target, tbuf, sizeof(tbuf));

	snprintf(name, sizeof(name), "%s", l->rel);
	tarsafe_split(name, &parent, &lbase);
	r = landing(ex, strcmp(parent, ".") == 0 ? "" : parent, cur, sizeof(cur));
	if (r == 0 && (size_t)snprintf(self, sizeof(self), "%s%s%s", cur, *cur ? "/" : "", lbase) >=
			  sizeof(self))
		r = -ENAMETOOLONG;
	if (r < 0)
		snprintf(why, sizeof(why), "too long to resolve");
	else
		r = tarsafe_walk_link(w, cur, target, why, sizeof(why));
	if (r == -ENOMEM)
		return pd_error_set(ex->err, r, "out of memory");
	if (r == -E2BIG)
		return pd_error_set(ex->err, r,
				    "its symbolic links take more than %llu path lookups to judge "
				    "(at entry %llu, %s): refused",
				    (unsigned long long)ex->lookup_budget,
				    (unsigned long long)l->entry, pname);
	if (r == 0)
		return 0;
	r = refuse_at(ex, l->entry, pname, -EPERM, "symlink to %s leads outside %s: %s", tbuf,
		      root_what(ex), why);
	if (r < 0)
		return r;
	if (unlinkat(pfd, base, 0) < 0 && errno != ENOENT)
		return pd_error_set(ex->err, -errno, "entry %llu (%s): cannot remove: %s",
				    (unsigned long long)l->entry, pname, strerror(errno));
	tarsafe_walk_cache_forget(w->cache, self);
	return 1;
}

/* Records the symlink just staged at `norm` (from DIR), to be judged once
 * the whole archive is staged. */
static int note_link(struct extract *ex, const char *norm)
{
	if (ex->n_links == ex->cap_links) {
		size_t cap = ex->cap_links ? ex->cap_links * 2 : 16;
		struct staged_link *l = reallocarray(ex->links, cap, sizeof(*l));
		if (!l)
			return entry_fail(ex, -ENOMEM, "out of memory");
		ex->links = l;
		ex->cap_links = cap;
	}
	ex->links[ex->n_links].rel = strdup(norm);
	if (!ex->links[ex->n_links].rel)
		return entry_fail(ex, -ENOMEM, "out of memory");
	ex->links[ex->n_links].entry = ex->entries;
	ex->links[ex->n_links++].removed = false;
	return 0;
}

/* Most rounds of the final check: a skipped link can change where others
 * lead, so it runs until nothing more is skipped. */
#define JUDGE_ROUNDS 16

/* Judges every staged symlink against the whole tree, in archive order
 * (the first one refused is the one named), with one cache and one budget
 * of lookups for the whole archive. */
static int judge_links(struct extract *ex)
{
	uint64_t budget = LOOKUP_BUDGET_BASE + LOOKUPS_PER_LINK * ex->n_links;
	struct tarsafe_walk w = {.lookup = model_lookup,
				 .userdata = ex,
				 .abs_in_root = ex->flags & TAR_ABS_LINKS_IN_ROOT,
				 .cache = tarsafe_walk_cache_new(),
				 .budget = &budget};
	int r = 0;

	if (!w.cache)
		return pd_error_set(ex->err, -ENOMEM, "out of memory");
	ex->lookup_budget = budget;
	for (unsigned round = 0; round < JUDGE_ROUNDS; round++) {
		bool skipped = false;

		for (size_t i = 0; i < ex->n_links && r >= 0; i++) {
			struct staged_link *l = &ex->links[i];

			if (l->removed)
				continue;
			r = judge_link(ex, &w, l);
			if (r > 0) {
				l->removed = true;
				skipped = true;
			}
		}
		if (r < 0 || !skipped)
			break;
		if (round + 1 == JUDGE_ROUNDS)
			r = pd_error_set(ex->err, -EPERM,
					 "too many symlinks depend on symlinks that were skipped");
	}
	tarsafe_walk_cache_free(w.cache);
	ex->lookups = ex->lookup_budget - budget;
	return r < 0 ? r : 0;
}

static int stage_symlink(struct extract *ex, struct archive_entry *e, int pfd, const char *base,
			 const char *norm)
{
	const char *target = archive_entry_symlink(e);
	char why[128], tbuf[128];
	struct timespec ts[2];
	uid_t uid;
	gid_t gid;

	if (!target || !*target)
		return entry_fail(ex, -EINVAL, "symlink with an empty target");
	if (strlen(target) >= PATH_MAX)
		return entry_fail(ex, -ENAMETOOLONG, "symlink target too long");
	/* What the target says alone is judged now; where it leads, once
	 * the whole tree is known (judge_links()). */
	if (tarsafe_link_shape(target, ex->flags & TAR_ABS_LINKS_IN_ROOT, why, sizeof(why)) < 0)
		return entry_refuse(ex, "symlink to %s leads outside %s: %s",
				    tarsafe_printable(target, tbuf, sizeof(tbuf)), root_what(ex),
				    why);

	for (int tries = 0;; tries++) {
		if (symlinkat(target, pfd, base) == 0)
			break;
		if (errno != EEXIST || tries > 0)
			return entry_fail(ex, -errno, "cannot create: %s", strerror(errno));
		int r = stage_clear(ex, pfd, base, /* want_dir= */ false);
		if (r < 0)
			return r;
	}
	entry_owner(ex, e, &uid, &gid);
	if ((uid != (uid_t)-1 || gid != (gid_t)-1) &&
	    fchownat(pfd, base, uid, gid, AT_SYMLINK_NOFOLLOW) < 0)
		return entry_fail(ex, -errno, "cannot set owner: %s", strerror(errno));
	entry_times(e, ts);
	if (utimensat(pfd, base, ts, AT_SYMLINK_NOFOLLOW) < 0)
		return entry_fail(ex, -errno, "cannot set time: %s", strerror(errno));
	return note_link(ex, norm);
}

static int stage_hardlink(struct extract *ex, const char *link, const char *norm, int pfd,
			  const char *base)
{
	char hnorm[PATH_MAX], tbuf[128];
	_cleanup_close_ int hpfd = -1;
	const char *hparent, *hbase;
	struct stat st;
	int r;

	tarsafe_printable(link, tbuf, sizeof(tbuf));
	if (link[0] == '/')
		return entry_refuse(ex, "hard link to an absolute path (%s)", tbuf);
	r = tarsafe_normalize(link, hnorm, sizeof(hnorm));
	if (r == -EINVAL)
		return entry_refuse(ex, "hard link to %s leaves the target directory", tbuf);
	if (r < 0)
		return entry_fail(ex, r, "hard link target too long");
	if (!hnorm[0] || is_stage_name(ex, hnorm))
		return entry_refuse(ex, "hard link to %s, which is not an earlier entry", tbuf);
	if (strcmp(hnorm, norm) == 0)
		return 0; /* a link to itself: nothing to do */

	tarsafe_split(hnorm, &hparent, &hbase);
	hpfd =
	    tarsafe_openat2(ex->stagefd, hparent, O_PATH | O_DIRECTORY, 0, TARSAFE_RESOLVE_STAGE);
	if (hpfd < 0)
		return entry_refuse(ex, "hard link to %s, which is not an earlier entry", tbuf);
	for (int tries = 0;; tries++) {
		if (linkat(hpfd, hbase, pfd, base, 0) == 0)
			break;
		if (errno == ENOENT)
			return entry_refuse(ex, "hard link to %s, which is not an earlier entry",
					    tbuf);
		if (errno == EPERM)
			return entry_refuse(ex, "hard link to %s, a directory", tbuf);
		if (errno != EEXIST || tries > 0)
			return entry_fail(ex, -errno, "cannot create: %s", strerror(errno));
		r = stage_clear(ex, pfd, base, /* want_dir= */ false);
		if (r < 0)
			return r;
	}
	/* A second name of a symlink is a symlink in another place, where
	 * its target may mean something else. */
	if (fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
		return note_link(ex, norm);
	return 0;
}

/* The hooks' special entry: read whole into memory and handed over. */
static int take_special(struct extract *ex, struct archive *a, struct archive_entry *e)
{
	const struct tar_extract_hooks *h = ex->hooks;
	int64_t size = archive_entry_size_is_set(e) ? archive_entry_size(e) : 0;
	_cleanup_free_ char *data = NULL;
	size_t len = 0;

	if (archive_entry_filetype(e) != AE_IFREG || archive_entry_hardlink(e))
		return entry_fail(ex, -EINVAL, "reserved name, but not a regular file");
	if (size < 0 || (uint64_t)size > h->special_max)
		return entry_fail(ex, -EFBIG, "larger than %zu bytes", h->special_max);
	data = malloc((size_t)size + 1);
	if (!data)
		return entry_fail(ex, -ENOMEM, "out of memory");
	for (;;) {
		la_ssize_t n = archive_read_data(a, data + len, (size_t)size - len);
		if (n < 0)
			return entry_fail(ex, archive_code(a), "%s", tarsafe_archive_why(a));
		if (n == 0)
			break;
		len += (size_t)n;
		if (len == (size_t)size)
			break;
	}
	if (len != (size_t)size)
		return entry_fail(ex, -EINVAL, "truncated");
	data[len] = '\0';
	if (!h->on_special)
		return 0;
	return h->on_special(h->userdata, data, len, ex->err);
}

static int extract_entry(struct extract *ex, struct archive *a, struct archive_entry *e)
{
	const char *name = archive_entry_pathname(e), *link = archive_entry_hardlink(e);
	const char *parent, *base;
	char norm[PATH_MAX], full[PATH_MAX];
	mode_t type = archive_entry_filetype(e);
	int depth, pfd, r;

	ex->entries++;
	tarsafe_printable(name, ex->pname, sizeof(ex->pname));
	if (ex->entries > ex->max_entries)
		return entry_fail(ex, -E2BIG, "more than %llu entries",
				  (unsigned long long)ex->max_entries);
	if (!name)
		return entry_fail(ex, -EINVAL, "name cannot be decoded");
	if (ex->hooks && ex->hooks->special && strcmp(name, ex->hooks->special) == 0)
		return take_special(ex, a, e);
	if (!*name)
		return entry_fail(ex, -EINVAL, "empty name");
	if (name[0] == '/')
		return entry_fail(ex, -EINVAL, "absolute path");
	depth = tarsafe_normalize(name, norm, sizeof(norm));
	if (depth == -EINVAL)
		return entry_fail(ex, -EINVAL, "path leaves the target directory");
	if (depth < 0)
		return entry_fail(ex, depth, "name too long");
	if (depth > TARSAFE_MAX_DEPTH)
		return refuse_at(ex, ex->entries, ex->pname, -ENAMETOOLONG,
				 "more than %d levels of directories", TARSAFE_MAX_DEPTH);

	if (!link) {
		switch (type) {
		case AE_IFREG:
		case AE_IFDIR:
		case AE_IFLNK:
			break;
		case AE_IFCHR:
		case AE_IFBLK:
			return entry_refuse(ex, "device nodes are not allowed");
		case AE_IFIFO:
			return entry_refuse(ex, "FIFOs are not allowed");
		case AE_IFSOCK:
			return entry_refuse(ex, "sockets are not allowed");
		default:
			return entry_refuse(ex, "unsupported entry type 0%o", (unsigned)type);
		}
	}
	if (!norm[0]) {
		if (type == AE_IFDIR && !link)
			return 0; /* "./": the target directory itself */
		return entry_fail(ex, -EINVAL, "names the target directory itself");
	}
	if (is_stage_name(ex, norm))
		return entry_fail(ex, -EINVAL, "name reserved for the staging directory");

	memcpy(full, norm, strlen(norm) + 1);
	tarsafe_split(norm, &parent, &base);

	/* What it takes on a disk, charged before anything is written. */
	if (link) {
		r = charge(ex, strlen(base) + DISK_NAME_COST);
	} else if (type == AE_IFREG) {
		int64_t size = archive_entry_size_is_set(e) ? archive_entry_size(e) : 0;
		if (size < 0)
			return entry_fail(ex, -EINVAL, "negative size");
		if ((uint64_t)size > ex->max_bytes - ex->bytes)
			return entry_fail(ex, -EFBIG,
					  "%lld bytes exceed the limit of %llu bytes in total",
					  (long long)size, (unsigned long long)ex->max_bytes);
		r = charge(ex, round_block((uint64_t)size));
		ex->bytes += (uint64_t)size;
	} else if (type == AE_IFLNK) {
		const char *target = archive_entry_symlink(e);
		r = charge(ex, round_block(strlen(target ? target : "") + 1));
	} else {
		r = charge(ex, DISK_BLOCK);
	}
	if (r < 0)
		return r;

	pfd = stage_parent(ex, parent);
	if (pfd < 0)
		return pfd;
	if (link)
		return stage_hardlink(ex, link, full, pfd, base);
	switch (type) {
	case AE_IFREG:
		return stage_file(ex, a, e, pfd, base);
	case AE_IFDIR:
		return stage_dir(ex, e, pfd, base);
	default:
		return stage_symlink(ex, e, pfd, base, full);
	}
}

static int dirmeta_cmp(const void *a, const void *b)
{
	const struct dirmeta *x = a, *y = b;

	return x->ino < y->ino ? -1 : x->ino > y->ino;
}

static const struct dirmeta *dirmeta_find(const struct extract *ex, ino_t ino)
{
	struct dirmeta key = {.ino = ino};

	if (ex->n_dirs == 0)
		return NULL;
	return bsearch(&key, ex->dirs, ex->n_dirs, sizeof(key), dirmeta_cmp);
}

static bool dir_is_empty(int dfd, const char *name)
{
	int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct dirent *de;
	bool empty = true;
	DIR *d;

	if (fd < 0)
		return false;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return false;
	}
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0) {
			empty = false;
			break;
		}
	closedir(d);
	return empty;
}

/* An fd of the directory root k lands in, found by its place through real
 * directories only: -ESTALE unless the symlink `link` met now and that
 * directory are the ones found before the links were judged. */
static int open_landing(const struct extract *ex, const struct root *k, const struct stat *link)
{
	struct stat st;
	int fd;

	if (link->st_dev != k->link_dev || link->st_ino != k->link_ino)
		return -ESTALE;
	fd = tarsafe_openat2(ex->rootfd, k->real[0] ? k->real : ".", O_RDONLY | O_DIRECTORY, 0,
			     TARSAFE_RESOLVE_ROOT | RESOLVE_NO_SYMLINKS);
	if (fd < 0)
		return fd == -ENOENT || fd == -ELOOP || fd == -ENOTDIR ? -ESTALE : fd;
	if (fstat(fd, &st) < 0 || st.st_dev != k->dev || st.st_ino != k->ino) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

static int merge_fail(struct extract *ex, int code, const char *rel, const char *what)
{
	char pbuf[128];

	return pd_error_set(ex->err, code, "%s: %s", tarsafe_printable(rel, pbuf, sizeof(pbuf)),
			    what);
}

/*
 * Merges the staged directory sfd into the target directory tfd; rel
 * (REL_MAX bytes, rlen used) is the target's path from the root.
 * The dry pass changes nothing outside the staging area: it checks that no
 * staged file would replace a non-empty directory, and sets the staged
 * directories' mtimes (tfd is -1 below a directory that will move whole).
 * The real pass renames entries over and applies explicit directories'
 * mode, owner and mtime to target directories they merge into.
 */
static int merge_dir(struct extract *ex, int sfd, int tfd, char *rel, size_t rlen, bool dry,
		     unsigned depth)
{
	struct dirent *de;
	DIR *d;
	int r = 0;

	if (depth > TARSAFE_MAX_DEPTH + 1)
		return merge_fail(ex, -ELOOP, rel, "too many levels of directories");
	d = tarsafe_opendir(sfd); /* read again by the real pass */
	if (!d)
		return merge_fail(ex, -errno, rel, strerror(errno));

	while ((errno = 0, de = readdir(d))) {
		const char *name = de->d_name;
		size_t nlen = strlen(name), clen;
		struct stat sst, tst;
		bool texists = false;

		if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
			continue;
		clen = rlen + (rlen > 0) + nlen;
		if (clen + 1 > REL_MAX) {
			r = merge_fail(ex, -ENAMETOOLONG, rel, "name too long");
			break;
		}
		snprintf(rel + rlen, REL_MAX - rlen, "%s%s", rlen > 0 ? "/" : "", name);

		if (fstatat(dirfd(d), name, &sst, AT_SYMLINK_NOFOLLOW) < 0) {
			r = merge_fail(ex, -errno, rel, strerror(errno));
			break;
		}
		if (tfd >= 0) {
			if (fstatat(tfd, name, &tst, AT_SYMLINK_NOFOLLOW) == 0)
				texists = true;
			else if (errno != ENOENT) {
				r = merge_fail(ex, -errno, rel, strerror(errno));
				break;
			}
		}

		if (S_ISDIR(sst.st_mode)) {
			_cleanup_close_ int csfd = -1, ctfd = -1;
			const struct dirmeta *meta = dirmeta_find(ex, sst.st_ino);

			csfd =
			    openat(dirfd(d), name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (csfd < 0) {
				r = merge_fail(ex, -errno, rel, strerror(errno));
				break;
			}
			if (texists && S_ISDIR(tst.st_mode)) {
				ctfd = openat(tfd, name,
					      O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
				if (ctfd < 0) {
					r = merge_fail(ex, -errno, rel, strerror(errno));
					break;
				}
			} else if (texists && S_ISLNK(tst.st_mode)) {
				/* Merge through a symlink found a root before the
				 * links were judged, if unchanged; else the
				 * directory replaces it. */
				const struct root *k = root_by_ino(ex, sst.st_ino);
				if (k) {
					ctfd = open_landing(ex, k, &tst);
					if (ctfd < 0) {
						r = merge_fail(ex, ctfd, rel,
							       "the symlink there or the directory "
							       "it leads to changed meanwhile");
						break;
					}
				}
			}
			if (ctfd >= 0 || dry) {
				r = merge_dir(ex, csfd, ctfd, rel, clen, dry, depth + 1);
				if (r < 0)
					break;
			}
			if (dry) {
				if (meta) {
					struct timespec ts[2] = {{.tv_nsec = UTIME_OMIT},
								 meta->mtime};
					if (futimens(csfd, ts) < 0) {
						r = merge_fail(ex, -errno, rel, strerror(errno));
						break;
					}
				}
			} else if (ctfd >= 0) {
				/* An existing directory: TAR_KEEP_EXISTING_DIRS
				 * leaves it as it is. */
				if (meta && !(ex->flags & TAR_KEEP_EXISTING_DIRS)) {
					struct timespec ts[2] = {{.tv_nsec = UTIME_OMIT},
								 meta->mtime};
					bool keep = ex->flags & TAR_KEEP_OWNERS;
					r = tarsafe_own_fd(ctfd, sst.st_mode & 07777,
							   keep ? sst.st_uid : ex->uid,
							   keep ? sst.st_gid : ex->gid);
					if (r == 0 && futimens(ctfd, ts) < 0)
						r = -errno;
					if (r < 0) {
						r = merge_fail(ex, r, rel, strerror(-r));
						break;
					}
				}
			} else {
				if (texists && unlinkat(tfd, name, 0) < 0 && errno != ENOENT) {
					r = merge_fail(ex, -errno, rel, strerror(errno));
					break;
				}
				if (renameat(dirfd(d), name, tfd, name) < 0) {
					r = merge_fail(ex, -errno, rel, strerror(errno));
					break;
				}
			}
		} else if (dry) {
			if (texists && S_ISDIR(tst.st_mode) && !dir_is_empty(tfd, name)) {
				r = merge_fail(ex, -EISDIR, rel,
					       "the archive's entry would replace a directory that "
					       "is not empty");
				break;
			}
		} else {
			if (texists && S_ISDIR(tst.st_mode) &&
			    unlinkat(tfd, name, AT_REMOVEDIR) < 0) {
				r = merge_fail(ex, errno == EEXIST ? -ENOTEMPTY : -errno, rel,
					       strerror(errno));
				break;
			}
			if (renameat(dirfd(d), name, tfd, name) < 0) {
				r = merge_fail(ex, -errno, rel, strerror(errno));
				break;
			}
		}
		rel[rlen] = '\0';
	}
	if (r == 0 && errno != 0)
		r = merge_fail(ex, -errno, rel, strerror(errno));
	rel[rlen] = '\0';
	closedir(d);
	return r;
}

static int merge(struct extract *ex)
{
	_cleanup_free_ char *rel = malloc(REL_MAX);
	size_t len = strlen(ex->dir);
	int r;

	if (!rel)
		return pd_error_set(ex->err, -ENOMEM, "out of memory");
	if (ex->n_dirs > 1)
		qsort(ex->dirs, ex->n_dirs, sizeof(ex->dirs[0]), dirmeta_cmp);
	memcpy(rel, ex->dir, len + 1);
	r = merge_dir(ex, ex->stagefd, ex->dirfd, rel, len, /* dry= */ true, 0);
	if (r < 0)
		return r;
	return merge_dir(ex, ex->stagefd, ex->dirfd, rel, len, /* dry= */ false, 0);
}

/* A tar reader with the gzip and zstd filters libarchive has built in:
 * one it was built without would run an external program (ARCHIVE_WARN),
 * so that filter is left out. */
static struct archive *reader_new(void)
{
	bool gzip = true, zstd = true;

	for (;;) {
		struct archive *a = archive_read_new();

		if (!a)
			return NULL;
		if (archive_read_support_format_tar(a) != ARCHIVE_OK ||
		    archive_read_support_format_empty(a) != ARCHIVE_OK) {
			archive_read_free(a);
			return NULL;
		}
		if (gzip && archive_read_support_filter_gzip(a) != ARCHIVE_OK)
			gzip = false;
		else if (zstd && archive_read_support_filter_zstd(a) != ARCHIVE_OK)
			zstd = false;
		else
			return a;
		archive_read_free(a);
	}
}

/* Reads every entry. An archive must end with its end-of-archive marker
 * (two zero blocks): libarchive takes a stream that stops between two
 * entries (a creator that failed midway) for a whole archive. An empty
 * stream is an empty archive. */
static int read_archive(struct extract *ex, int in_fd)
{
	struct archive *a = reader_new();
	struct archive_entry *e;
	int64_t end = 0; /* where the last entry's data ended */
	int r = 0;

	if (!a)
		return pd_error_set(ex->err, -ENOMEM, "cannot set up the tar reader");
	if (archive_read_open_fd(a, in_fd, READ_BLOCK) != ARCHIVE_OK) {
		r = pd_error_set(ex->err, archive_code(a), "not a tar archive: %s",
				 tarsafe_archive_why(a));
		goto out;
	}
	for (;;) {
		int ar = archive_read_next_header(a, &e);
		if (ar == ARCHIVE_EOF) {
			int64_t pos = archive_filter_bytes(a, 0);
			if (pos > 0 && pos - end < 1024)
				r = pd_error_set(ex->err, -EINVAL,
						 "archive truncated after %llu entries: no "
						 "end-of-archive marker",
						 (unsigned long long)ex->entries);
			break;
		}
		if (ar < ARCHIVE_WARN) {
			r = pd_error_set(ex->err, archive_code(a), "%s after %llu entries: %s",
					 ex->entries ? "archive truncated or corrupt"
						     : "not a tar archive",
					 (unsigned long long)ex->entries, tarsafe_archive_why(a));
			break;
		}
		r = extract_entry(ex, a, e);
		if (r < 0)
			break;
		/* The rest of its data (a skipped entry) and its padding. */
		if (archive_read_data_skip(a) < ARCHIVE_WARN) {
			r = pd_error_set(ex->err, archive_code(a),
					 "archive truncated or corrupt after %llu entries: %s",
					 (unsigned long long)ex->entries, tarsafe_archive_why(a));
			break;
		}
		end = archive_filter_bytes(a, 0);
	}
out:
	archive_read_free(a);
	return r;
}

/* Removes the directories of DIR this call created, deepest first; only
 * empty ones (a racing box may have put something there). */
static void remove_created(int rootfd, const char *dir, unsigned created)
{
	char buf[PATH_MAX];

	snprintf(buf, sizeof(buf), "%s", dir);
	for (unsigned i = 0; i < created && buf[0]; i++) {
		_cleanup_close_ int pfd = -1;
		const char *parent, *base;

		tarsafe_split(buf, &parent, &base);
		pfd =
		    tarsafe_openat2(rootfd, parent, O_PATH | O_DIRECTORY, 0, TARSAFE_RESOLVE_ROOT);
		if (pfd < 0 || unlinkat(pfd, base, AT_REMOVEDIR) < 0)
			return;
		if (parent == buf)
			continue; /* buf now holds the parent */
		buf[0] = '\0';
	}
}

int tarsafe_extract(int rootfd, const char *dir, int in_fd, const struct tar_limits *lim,
		    struct tar_result *ret, pd_error *err)
{
	return tarsafe_extract_ex(rootfd, dir, in_fd, lim, /* hooks= */ NULL, ret, err);
}

int tarsafe_extract_ex(int rootfd, const char *dir, int in_fd, const struct tar_limits *lim,
		       const struct tar_extract_hooks *hooks, struct tar_result *ret, pd_error *err)
{
	struct extract ex = {
	    .hooks = hooks,
	    .rootfd = rootfd,
	    .dirfd = -1,
	    .stagefd = -1,
	    .cachedfd = -1,
	    .max_entries = TAR_DEFAULT_MAX_ENTRIES,
	    .max_bytes = TAR_DEFAULT_MAX_BYTES,
	    .uid = (uid_t)-1,
	    .gid = (gid_t)-1,
	    .err = err,
	};
	char pbuf[128];
	unsigned created = 0;
	struct stat st;
	int r;

	if (lim) {
		if (lim->max_entries)
			ex.max_entries = lim->max_entries;
		if (lim->max_bytes)
			ex.max_bytes = lim->max_bytes;
		ex.uid = lim->uid;
		ex.gid = lim->gid;
		ex.disk_limited = lim->disk_limited;
		ex.disk_room = lim->disk_room;
		ex.flags = lim->flags;
		ex.root_what = lim->root_what;
	}
	tarsafe_printable(dir, pbuf, sizeof(pbuf));
	r = tarsafe_normalize(dir, ex.dir, sizeof(ex.dir));
	if (r < 0)
		return pd_error_set(err, r, "%s: invalid path", pbuf);

	r = tarsafe_mkdir_p_at(rootfd, ex.dir, 0755, ex.uid, ex.gid, TARSAFE_RESOLVE_ROOT,
			       &created);
	if (r < 0)
		return pd_error_set(err, r, "%s: cannot create the directory: %s", pbuf,
				    strerror(-r));
	ex.dirfd = tarsafe_openat2(rootfd, ex.dir[0] ? ex.dir : ".", O_RDONLY | O_DIRECTORY, 0,
				   TARSAFE_RESOLVE_ROOT);
	if (ex.dirfd < 0) {
		r = pd_error_set(err, ex.dirfd, "%s: %s", pbuf, strerror(-ex.dirfd));
		goto out;
	}
	r = ex.dir[0] ? real_dir(rootfd, ex.dirfd, ex.dir_real, sizeof(ex.dir_real)) : 0;
	if (r < 0) {
		r = pd_error_set(err, r, "%s: cannot tell where it is: %s", pbuf, strerror(-r));
		goto out;
	}

	for (int tries = 0; tries < 16; tries++) {
		tarsafe_random_name(ex.stagename, sizeof(ex.stagename), ".paddock-push-");
		r = mkdirat(ex.dirfd, ex.stagename, 0700) < 0 ? -errno : 0;
		if (r != -EEXIST)
			break;
	}
	if (r < 0) {
		r = pd_error_set(err, r, "%s: cannot create a staging directory: %s", pbuf,
				 strerror(-r));
		ex.stagename[0] = '\0';
		goto out;
	}
	ex.stagefd =
	    openat(ex.dirfd, ex.stagename, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (ex.stagefd < 0 || fstat(ex.stagefd, &st) < 0) {
		r = pd_error_set(err, -errno, "%s: staging directory: %s", pbuf, strerror(errno));
		goto out;
	}
	ex.dev = st.st_dev;
	ex.stage_ino = st.st_ino;

	r = read_archive(&ex, in_fd);
	drop_cache(&ex);
	if (r == 0)
		r = plan(&ex);
	if (r == 0)
		r = judge_links(&ex);
	if (r == 0 && hooks && hooks->before_merge)
		r = hooks->before_merge(hooks->userdata, ex.stagefd, err);
	if (r == 0)
		r = merge(&ex);

out:
	drop_cache(&ex);
	if (ex.stagefd >= 0) {
		tarsafe_rm_children(ex.stagefd, ex.dev, 0);
		close(ex.stagefd);
	}
	if (ex.stagename[0])
		unlinkat(ex.dirfd, ex.stagename, AT_REMOVEDIR);
	if (ex.dirfd >= 0)
		close(ex.dirfd);
	if (r < 0 && created > 0)
		remove_created(rootfd, ex.dir, created);
	free(ex.dirs);
	for (size_t i = 0; i < ex.n_links; i++)
		free(ex.links[i].rel);
	free(ex.links);
	for (size_t i = 0; i < ex.n_roots; i++) {
		free(ex.roots[i].stage);
		free(ex.roots[i].real);
	}
	free(ex.roots);
	free(ex.by_real);
	free(ex.by_stage);
	free(ex.by_ino);
	if (r == 0 && ret)
		*ret = (struct tar_result){.entries = ex.entries,
					   .bytes = ex.bytes,
					   .disk = ex.disk_used,
					   .skipped = ex.skipped,
					   .lookups = ex.lookups};
	return r;
}
