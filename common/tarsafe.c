/* tarsafe.c - files and directories inside a box's root, and tar pull
 * (see tarsafe.h). Extraction (tar push) is in tarsafe-extract.c. */
#include <archive.h>
#include <assert.h>
#include <archive_entry.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/tarsafe-internal.h"
#include "common/tarsafe.h"
#include "common/util.h"

int tarsafe_openat2(int dirfd, const char *path, int flags, mode_t mode, uint64_t resolve)
{
	struct open_how how = {
	    .flags = (uint64_t)(flags | O_CLOEXEC),
	    .mode = (flags & O_CREAT) ? mode : 0,
	    .resolve = resolve,
	};
	long fd;

	do
		fd = syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
	while (fd < 0 && errno == EAGAIN);
	return fd < 0 ? -errno : (int)fd;
}

size_t tarsafe_next_component(const char **p)
{
	while (**p == '/')
		(*p)++;
	return strcspn(*p, "/");
}

int tarsafe_normalize(const char *path, char *buf, size_t size)
{
	size_t len = 0, clen;
	int n = 0;

	if (!path || size == 0)
		return -EINVAL;
	for (; (clen = tarsafe_next_component(&path)) > 0; path += clen) {
		if (clen == 1 && path[0] == '.')
			continue;
		if (clen == 2 && path[0] == '.' && path[1] == '.')
			return -EINVAL;
		if (len + (len > 0) + clen + 1 > size)
			return -ENAMETOOLONG;
		if (len > 0)
			buf[len++] = '/';
		memcpy(buf + len, path, clen);
		len += clen;
		n++;
	}
	buf[len] = '\0';
	return n;
}

void tarsafe_split(char *norm, const char **ret_parent, const char **ret_base)
{
	char *slash = strrchr(norm, '/');

	if (!slash) {
		*ret_parent = ".";
		*ret_base = norm;
		return;
	}
	*slash = '\0';
	*ret_parent = norm;
	*ret_base = slash + 1;
}

void tarsafe_random_name(char *buf, size_t size, const char *prefix)
{
	static const char chars[] = "abcdefghijklmnopqrstuvwxyz0123456789";
	unsigned char rnd[10];
	size_t n;

	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
		unsigned long long t = now_usec() ^ ((unsigned long long)getpid() << 32);
		for (size_t i = 0; i < sizeof(rnd); i++, t = t * 6364136223846793005ULL + 1)
			rnd[i] = (unsigned char)(t >> 56);
	}
	n = (size_t)snprintf(buf, size, "%s", prefix);
	for (size_t i = 0; i < sizeof(rnd) && n + 1 < size; i++)
		buf[n++] = chars[rnd[i] % (sizeof(chars) - 1)];
	if (n < size)
		buf[n] = '\0';
}

const char *tarsafe_printable(const char *name, char *buf, size_t size)
{
	size_t n = 0, max = size < 124 ? size : 124;

	if (!name)
		name = "";
	for (; *name && n + 4 < max; name++)
		buf[n++] = ((unsigned char)*name < 0x20 || *name == 0x7f) ? '?' : *name;
	if (*name && max >= 4) {
		memcpy(buf + n, "...", 3);
		n += 3;
	}
	buf[n] = '\0';
	return buf;
}

const char *tarsafe_archive_why(struct archive *a)
{
	const char *s = archive_error_string(a);
	int e = archive_errno(a);

	if (s && *s)
		return s;
	return e > 0 ? strerror(e) : "the archive is damaged or cut short";
}

int tarsafe_own_fd(int fd, mode_t mode, uid_t uid, gid_t gid)
{
	if ((uid != (uid_t)-1 || gid != (gid_t)-1) && fchown(fd, uid, gid) < 0)
		return -errno;
	if (fchmod(fd, mode) < 0)
		return -errno;
	return 0;
}

int tarsafe_mkdir_p_at(int rootfd, const char *norm, mode_t mode, uid_t uid, gid_t gid,
		       uint64_t resolve, unsigned *ret_created)
{
	_cleanup_free_ char *buf = strdup(norm);
	unsigned created = 0;
	size_t len = strlen(norm);
	bool last_created = false;

	if (!buf)
		return -ENOMEM;
	if (len == 0) {
		_cleanup_close_ int fd =
		    tarsafe_openat2(rootfd, ".", O_PATH | O_DIRECTORY, 0, resolve);
		if (ret_created)
			*ret_created = 0;
		return fd < 0 ? fd : 0;
	}

	for (size_t end = 0; end <= len; end++) {
		_cleanup_close_ int fd = -1, pfd = -1, nfd = -1;
		const char *parent, *base;
		char saved;

		if (end < len && buf[end] != '/')
			continue;
		saved = buf[end];
		buf[end] = '\0';

		fd = tarsafe_openat2(rootfd, buf, O_PATH | O_DIRECTORY, 0, resolve);
		if (fd >= 0 && created == 0) {
			buf[end] = saved;
			continue;
		}
		if (fd >= 0) /* a racing creator; fine */
			goto next;
		if (fd != -ENOENT)
			return fd;

		/* Create the last component of buf[0..end) in its parent. */
		{
			char *slash = memrchr(buf, '/', end);
			if (slash)
				*slash = '\0';
			parent = slash ? buf : ".";
			base = slash ? slash + 1 : buf;
			pfd = tarsafe_openat2(rootfd, parent, O_PATH | O_DIRECTORY, 0, resolve);
			if (slash)
				*slash = '/';
			if (pfd < 0)
				return pfd;
		}
		if (mkdirat(pfd, base, 0700) < 0) {
			int e = errno;
			if (e != EEXIST)
				return -e;
			/* Something is there that did not resolve to a
			 * directory: a dangling symlink, or a racing box. */
			fd = tarsafe_openat2(rootfd, buf, O_PATH | O_DIRECTORY, 0, resolve);
			if (fd < 0)
				return fd == -ENOENT ? -EEXIST : fd;
			goto next;
		}
		nfd = openat(pfd, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (nfd < 0)
			return -errno;
		{
			int r = tarsafe_own_fd(nfd, mode, uid, gid);
			if (r < 0)
				return r;
		}
		created++;
		last_created = end == len;
		buf[end] = saved;
		continue;
	next:
		last_created = false;
		buf[end] = saved;
	}
	if (ret_created)
		*ret_created = created;
	return last_created ? 1 : 0;
}

int tarsafe_mkdir_p(int rootfd, const char *path, mode_t mode, uid_t uid, gid_t gid)
{
	char norm[PATH_MAX];
	int r = tarsafe_normalize(path, norm, sizeof(norm));

	if (r < 0)
		return r;
	return tarsafe_mkdir_p_at(rootfd, norm, mode & 01777, uid, gid, TARSAFE_RESOLVE_ROOT,
				  /* ret_created= */ NULL);
}

DIR *tarsafe_opendir(int fd)
{
	int dfd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	DIR *d;

	if (dfd < 0)
		return NULL;
	d = fdopendir(dfd);
	if (!d) {
		int e = errno;
		close(dfd);
		errno = e;
		return NULL;
	}
	rewinddir(d);
	return d;
}

static void keep_first(int *r, int e)
{
	if (*r == 0 && e < 0)
		*r = e;
}

int tarsafe_rm_children(int fd, dev_t dev, unsigned depth)
{
	struct dirent *de;
	DIR *d;
	int r = 0;

	if (depth > TARSAFE_MAX_DEPTH + 1)
		return -ELOOP;
	d = tarsafe_opendir(fd);
	if (!d)
		return -errno;

	while ((errno = 0, de = readdir(d))) {
		struct stat st;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno != ENOENT)
				keep_first(&r, -errno);
			continue;
		}
		if (S_ISDIR(st.st_mode)) {
			_cleanup_close_ int cfd = -1;

			if (st.st_dev != dev) {
				keep_first(&r, -EXDEV);
				continue;
			}
			cfd = openat(dirfd(d), de->d_name,
				     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (cfd < 0) {
				if (errno != ENOENT)
					keep_first(&r, -errno);
				continue;
			}
			keep_first(&r, tarsafe_rm_children(cfd, dev, depth + 1));
			if (unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR) < 0 && errno != ENOENT)
				keep_first(&r, -errno);
		} else if (unlinkat(dirfd(d), de->d_name, 0) < 0 && errno != ENOENT) {
			keep_first(&r, -errno);
		}
	}
	if (errno != 0)
		keep_first(&r, -errno);
	closedir(d);
	return r;
}

/* Reopens an O_PATH fd of a regular file or directory with real access
 * flags, through /proc/self/fd: the same inode, so a box cannot swap in a
 * device node between the check and the open. */
static int reopen_checked(int pathfd, int flags)
{
	char proc[64];
	struct stat st;
	int fd;

	if (fstat(pathfd, &st) < 0)
		return -errno;
	if (S_ISLNK(st.st_mode))
		return -ELOOP;
	if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
		return -EPERM;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", pathfd);
	fd = open(proc, (flags & ~(O_CREAT | O_EXCL | O_NOFOLLOW)) | O_CLOEXEC | O_NOCTTY);
	return fd < 0 ? -errno : fd;
}

int tarsafe_open(int rootfd, const char *path, int flags, mode_t mode)
{
	char norm[PATH_MAX];
	_cleanup_close_ int pathfd = -1;
	int r = tarsafe_normalize(path, norm, sizeof(norm));
	const char *p = norm[0] ? norm : ".";
	int pflags = O_PATH | (flags & O_DIRECTORY);

	if (r < 0)
		return r;
	if (flags & O_CREAT) {
		int fd = tarsafe_openat2(rootfd, p, flags | O_EXCL | O_NOFOLLOW | O_NOCTTY, mode,
					 TARSAFE_RESOLVE_ROOT);
		if (fd >= 0 || fd != -EEXIST || (flags & O_EXCL))
			return fd;
		pflags |= O_NOFOLLOW;
	}
	if (flags & O_NOFOLLOW)
		pflags |= O_NOFOLLOW;
	pathfd = tarsafe_openat2(rootfd, p, pflags, 0, TARSAFE_RESOLVE_ROOT);
	if (pathfd < 0)
		return pathfd;
	return reopen_checked(pathfd, flags);
}

int tarsafe_remove(int rootfd, const char *path, bool recursive, pd_error *err)
{
	char norm[PATH_MAX], pbuf[128];
	_cleanup_close_ int pfd = -1, cfd = -1;
	const char *parent, *base;
	struct stat st, pst;
	int r = tarsafe_normalize(path, norm, sizeof(norm));

	tarsafe_printable(path, pbuf, sizeof(pbuf));
	if (r < 0)
		return pd_error_set(err, r, "%s: invalid path", pbuf);
	if (!norm[0])
		return pd_error_set(err, -EPERM, "refusing to remove the root directory");
	tarsafe_split(norm, &parent, &base);
	pfd = tarsafe_openat2(rootfd, parent, O_PATH | O_DIRECTORY, 0, TARSAFE_RESOLVE_ROOT);
	if (pfd < 0)
		return pd_error_set(err, pfd, "%s: %s", pbuf, strerror(-pfd));
	if (fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return pd_error_set(err, -errno, "%s: %s", pbuf, strerror(errno));
	if (!S_ISDIR(st.st_mode)) {
		if (unlinkat(pfd, base, 0) < 0)
			return pd_error_set(err, -errno, "%s: %s", pbuf, strerror(errno));
		return 0;
	}
	if (fstat(pfd, &pst) < 0)
		return pd_error_set(err, -errno, "%s: %s", pbuf, strerror(errno));
	if (st.st_dev != pst.st_dev)
		return pd_error_set(err, -EXDEV, "%s: is a mount point", pbuf);
	if (recursive) {
		cfd = openat(pfd, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (cfd < 0)
			return pd_error_set(err, -errno, "%s: %s", pbuf, strerror(errno));
		r = tarsafe_rm_children(cfd, st.st_dev, 0);
		if (r < 0)
			return pd_error_set(err, r, "%s: cannot remove everything inside: %s", pbuf,
					    strerror(-r));
	}
	if (unlinkat(pfd, base, AT_REMOVEDIR) < 0) {
		r = errno == EEXIST ? -ENOTEMPTY : -errno;
		return pd_error_set(err, r, "%s: %s", pbuf, strerror(-r));
	}
	return 0;
}

static void replace_release(struct tarsafe_replace *r)
{
	if (r->fd >= 0)
		close(r->fd);
	if (r->dirfd >= 0)
		close(r->dirfd);
	r->fd = r->dirfd = -1;
	r->name[0] = r->tmpname[0] = '\0';
}

int tarsafe_replace_begin(int rootfd, const char *path, mode_t mode, uid_t uid, gid_t gid,
			  struct tarsafe_replace *ret, pd_error *err)
{
	char norm[PATH_MAX], pbuf[128];
	const char *parent, *base;
	struct tarsafe_replace t = {.fd = -1, .dirfd = -1};
	struct stat st;
	int r;

	*ret = t;
	tarsafe_printable(path, pbuf, sizeof(pbuf));
	r = tarsafe_normalize(path, norm, sizeof(norm));
	if (r < 0)
		return pd_error_set(err, r, "%s: invalid path", pbuf);
	if (!norm[0])
		return pd_error_set(err, -EISDIR, "the root is a directory");
	tarsafe_split(norm, &parent, &base);
	if (strlen(base) >= sizeof(t.name))
		return pd_error_set(err, -ENAMETOOLONG, "%s: name too long", pbuf);
	snprintf(t.name, sizeof(t.name), "%s", base);

	t.dirfd = tarsafe_openat2(rootfd, parent, O_PATH | O_DIRECTORY, 0, TARSAFE_RESOLVE_ROOT);
	if (t.dirfd < 0)
		return pd_error_set(err, t.dirfd, "%s: parent directory: %s", pbuf,
				    strerror(-t.dirfd));
	mode &= 01777;
	if (fstatat(t.dirfd, t.name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (S_ISDIR(st.st_mode)) {
			replace_release(&t);
			return pd_error_set(err, -EISDIR, "%s: is a directory", pbuf);
		}
		if (S_ISREG(st.st_mode)) {
			mode = st.st_mode & 07777;
			uid = st.st_uid;
			gid = st.st_gid;
		}
	} else if (errno != ENOENT) {
		r = -errno;
		replace_release(&t);
		return pd_error_set(err, r, "%s: %s", pbuf, strerror(-r));
	}

	for (int tries = 0; tries < 16; tries++) {
		tarsafe_random_name(t.tmpname, sizeof(t.tmpname), ".paddock-put-");
		t.fd =
		    openat(t.dirfd, t.tmpname,
			   O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
		if (t.fd >= 0 || errno != EEXIST)
			break;
	}
	if (t.fd < 0) {
		r = -errno;
		replace_release(&t);
		return pd_error_set(err, r, "%s: cannot create a temporary file: %s", pbuf,
				    strerror(-r));
	}
	r = tarsafe_own_fd(t.fd, mode, uid, gid);
	if (r < 0) {
		unlinkat(t.dirfd, t.tmpname, 0);
		replace_release(&t);
		return pd_error_set(err, r, "%s: cannot set owner and mode: %s", pbuf,
				    strerror(-r));
	}
	*ret = t;
	return 0;
}

int tarsafe_replace_commit(struct tarsafe_replace *r, pd_error *err)
{
	char pbuf[128];
	int fd = r->fd, e;

	if (fd < 0 || r->dirfd < 0)
		return pd_error_set(err, -EBADF, "no replacement in progress");
	tarsafe_printable(r->name, pbuf, sizeof(pbuf));
	r->fd = -1;
	if (close(fd) < 0) {
		e = -errno;
		goto fail;
	}
	if (renameat(r->dirfd, r->tmpname, r->dirfd, r->name) < 0) {
		e = -errno;
		goto fail;
	}
	replace_release(r);
	return 0;
fail:
	unlinkat(r->dirfd, r->tmpname, 0);
	replace_release(r);
	return pd_error_set(err, e, "%s: cannot replace: %s", pbuf, strerror(-e));
}

void tarsafe_replace_abort(struct tarsafe_replace *r)
{
	if (r->dirfd >= 0 && r->tmpname[0])
		unlinkat(r->dirfd, r->tmpname, 0);
	replace_release(r);
}

/* ---- tar pull ---- */

struct creator {
	struct archive *a;
	struct archive_entry_linkresolver *links;
	char *buf; /* 64 KiB copy buffer */
	int out_fd;
	bool failed;   /* nothing more reaches out_fd, not even the end marker */
	int write_err; /* -errno of the write to out_fd that failed */
	const struct tar_create_hooks *hooks;
	pd_error *err;
};

#define COPY_BUF (64 * 1024)

static int archive_code(struct archive *a)
{
	int e = archive_errno(a);

	return e > 0 && e != EILSEQ ? -e : -EIO;
}

/* The stream's writer. It never fails towards libarchive: a write error
 * inside archive_write_header() leaves the archive in its fatal state,
 * where archive_write_free() skips the close that frees its block buffer
 * (libarchive 3.6: 10 KiB leaked per cut stream, e.g. an export whose
 * reader went away). The error is kept in write_err, which every step
 * checks (stream_error()), and from then on, as after any other error
 * (failed), the bytes are dropped: no end-of-archive marker makes a cut
 * stream look whole. */
static la_ssize_t creator_write(struct archive *a, void *data, const void *buf, size_t len)
{
	struct creator *c = data;
	ssize_t n;

	(void)a;
	if (c->failed || c->write_err)
		return (la_ssize_t)len;
	do
		n = write(c->out_fd, buf, len);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		c->write_err = -errno;
		return (la_ssize_t)len;
	}
	return n;
}

/* The failed write of the last libarchive call, if any, as c's error. */
static int stream_error(struct creator *c, const char *name)
{
	char pbuf[128];

	if (!c->write_err)
		return 0;
	return pd_error_set(c->err, c->write_err, "%s: %s",
			    tarsafe_printable(name, pbuf, sizeof(pbuf)), strerror(-c->write_err));
}

static int write_header(struct creator *c, struct archive_entry *entry, const char *name)
{
	uint32_t base = c->hooks ? c->hooks->owner_base : 0;
	char pbuf[128];

	if (base) {
		uint64_t uid = (uint64_t)archive_entry_uid(entry);
		uint64_t gid = (uint64_t)archive_entry_gid(entry);
		if (uid - base < 65536)
			archive_entry_set_uid(entry, (la_int64_t)(uid - base));
		if (gid - base < 65536)
			archive_entry_set_gid(entry, (la_int64_t)(gid - base));
		/* Names are the host's, not the box's. */
		archive_entry_set_uname(entry, NULL);
		archive_entry_set_gname(entry, NULL);
	}
	if (archive_write_header(c->a, entry) < ARCHIVE_WARN)
		return pd_error_set(c->err, archive_code(c->a), "%s: %s",
				    tarsafe_printable(name, pbuf, sizeof(pbuf)),
				    tarsafe_archive_why(c->a));
	return stream_error(c, name);
}

/* Writes one regular file (fd open for reading, st its fstat). */
static int add_file(struct creator *c, int fd, const struct stat *st, const char *name)
{
	struct archive_entry *entry = archive_entry_new(), *spare = NULL;
	char pbuf[128];
	uint64_t size;
	off_t left;
	int r;

	if (!entry)
		return pd_error_set(c->err, -ENOMEM, "out of memory");
	archive_entry_copy_stat(entry, st);
	archive_entry_set_pathname(entry, name);
	archive_entry_linkify(c->links, &entry, &spare);
	assert(!spare); /* tar strategy: never deferred */
	if (!entry)
		return 0;
	r = write_header(c, entry, name);
	if (r < 0 || archive_entry_hardlink(entry)) {
		if (r == 0 && c->hooks && c->hooks->hardlink)
			r = c->hooks->hardlink(c->hooks->userdata, name,
					       archive_entry_hardlink(entry), c->err);
		archive_entry_free(entry);
		return r;
	}
	left = archive_entry_size(entry);
	size = (uint64_t)left;
	archive_entry_free(entry);
	if (c->hooks && c->hooks->file_begin)
		c->hooks->file_begin(c->hooks->userdata, name);
	while (left > 0) {
		ssize_t n = read(fd, c->buf, left < COPY_BUF ? (size_t)left : COPY_BUF);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return pd_error_set(c->err, -errno, "%s: %s",
					    tarsafe_printable(name, pbuf, sizeof(pbuf)),
					    strerror(errno));
		if (n == 0)
			break; /* shrank: finish_entry pads with zeros */
		if (archive_write_data(c->a, c->buf, (size_t)n) < 0)
			return pd_error_set(c->err, archive_code(c->a), "%s: %s",
					    tarsafe_printable(name, pbuf, sizeof(pbuf)),
					    tarsafe_archive_why(c->a));
		r = stream_error(c, name);
		if (r < 0)
			return r;
		if (c->hooks && c->hooks->file_data)
			c->hooks->file_data(c->hooks->userdata, c->buf, (size_t)n);
		left -= n;
	}
	if (c->hooks && c->hooks->file_data && left > 0) {
		/* The zeros finish_entry pads a shrunk file with. */
		memset(c->buf, 0, COPY_BUF);
		for (off_t k; left > 0; left -= k) {
			k = left < COPY_BUF ? left : COPY_BUF;
			c->hooks->file_data(c->hooks->userdata, c->buf, (size_t)k);
		}
	}
	if (c->hooks && c->hooks->file_end) {
		r = c->hooks->file_end(c->hooks->userdata, size, c->err);
		if (r < 0)
			return r;
	}
	if (archive_write_finish_entry(c->a) < ARCHIVE_WARN)
		return pd_error_set(c->err, archive_code(c->a), "%s: %s",
				    tarsafe_printable(name, pbuf, sizeof(pbuf)),
				    tarsafe_archive_why(c->a));
	return stream_error(c, name);
}

static int add_simple(struct creator *c, const struct stat *st, const char *name,
		      const char *symlink_target)
{
	struct archive_entry *entry = archive_entry_new();
	int r;

	if (!entry)
		return pd_error_set(c->err, -ENOMEM, "out of memory");
	archive_entry_copy_stat(entry, st);
	archive_entry_set_pathname(entry, name);
	archive_entry_set_size(entry, 0);
	if (symlink_target)
		archive_entry_set_symlink(entry, symlink_target);
	r = write_header(c, entry, name);
	archive_entry_free(entry);
	return r;
}

static int add_tree(struct creator *c, int dfd, char *path, size_t plen, dev_t dev, unsigned depth);

/* One directory entry `name` of dfd; path[0..plen) is its parent's prefix
 * in the archive ("" or "dir/"), a buffer of PATH_MAX bytes. */
static int add_child(struct creator *c, int dfd, const char *name, char *path, size_t plen,
		     dev_t dev, unsigned depth)
{
	size_t nlen = strlen(name);
	struct stat st;
	int r;

	if (plen + nlen + 2 > PATH_MAX)
		return pd_error_set(c->err, -ENAMETOOLONG, "%.*s%s: name too long", (int)plen, path,
				    name);
	memcpy(path + plen, name, nlen + 1);

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT
			   ? 0
			   : pd_error_set(c->err, -errno, "%s: %s", path, strerror(errno));
	if (S_ISDIR(st.st_mode)) {
		_cleanup_close_ int cfd =
		    openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (cfd < 0)
			return errno == ENOENT
				   ? 0
				   : pd_error_set(c->err, -errno, "%s: %s", path, strerror(errno));
		if (fstat(cfd, &st) < 0)
			return pd_error_set(c->err, -errno, "%s: %s", path, strerror(errno));
		r = add_simple(c, &st, path, /* symlink_target= */ NULL);
		/* Past TARSAFE_MAX_DEPTH the entry goes alone: a receiver
		 * names it as left out. */
		if (r < 0 || st.st_dev != dev || depth + 1 > TARSAFE_MAX_DEPTH)
			return r;
		path[plen + nlen] = '/';
		path[plen + nlen + 1] = '\0';
		return add_tree(c, cfd, path, plen + nlen + 1, dev, depth + 1);
	}
	if (S_ISLNK(st.st_mode)) {
		char target[PATH_MAX];
		ssize_t n = readlinkat(dfd, name, target, sizeof(target));
		if (n < 0)
			return errno == ENOENT
				   ? 0
				   : pd_error_set(c->err, -errno, "%s: %s", path, strerror(errno));
		if ((size_t)n >= sizeof(target))
			return pd_error_set(c->err, -ENAMETOOLONG, "%s: link target too long",
					    path);
		target[n] = '\0';
		return add_simple(c, &st, path, target);
	}
	if (S_ISREG(st.st_mode)) {
		_cleanup_close_ int pfd = -1, fd = -1;

		pfd = openat(dfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (pfd < 0)
			return errno == ENOENT
				   ? 0
				   : pd_error_set(c->err, -errno, "%s: %s", path, strerror(errno));
		fd = reopen_checked(pfd, O_RDONLY);
		if (fd == -EPERM || fd == -ELOOP)
			return 0; /* swapped for something else meanwhile */
		if (fd < 0)
			return pd_error_set(c->err, fd, "%s: %s", path, strerror(-fd));
		if (fstat(fd, &st) < 0)
			return pd_error_set(c->err, -errno, "%s: %s", path, strerror(errno));
		if (!S_ISREG(st.st_mode))
			return 0;
		return add_file(c, fd, &st, path);
	}
	return 0; /* device nodes, FIFOs, sockets: skipped */
}

static int add_tree(struct creator *c, int dfd, char *path, size_t plen, dev_t dev, unsigned depth)
{
	struct dirent *de;
	DIR *d;
	int r = 0;

	if (depth > TARSAFE_MAX_DEPTH)
		return pd_error_set(c->err, -ELOOP, "%s: more than %d levels of directories", path,
				    TARSAFE_MAX_DEPTH);
	d = tarsafe_opendir(dfd);
	if (!d)
		return pd_error_set(c->err, -errno, "%s: %s", path, strerror(errno));
	while ((errno = 0, de = readdir(d))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		r = add_child(c, dirfd(d), de->d_name, path, plen, dev, depth);
		path[plen] = '\0';
		if (r < 0)
			break;
	}
	if (r == 0 && errno != 0)
		r = pd_error_set(c->err, -errno, "%s: %s", path, strerror(errno));
	closedir(d);
	return r;
}

/* The trailer hook's extra entry, if it wants one. */
static int add_trailer(struct creator *c)
{
	const char *name = NULL, *data = NULL;
	struct archive_entry *entry;
	size_t len = 0;
	int r;

	if (!c->hooks || !c->hooks->trailer)
		return 0;
	r = c->hooks->trailer(c->hooks->userdata, &name, &data, &len, c->err);
	if (r < 0 || !name)
		return r;
	entry = archive_entry_new();
	if (!entry)
		return pd_error_set(c->err, -ENOMEM, "out of memory");
	archive_entry_set_pathname(entry, name);
	archive_entry_set_filetype(entry, AE_IFREG);
	archive_entry_set_perm(entry, 0444);
	archive_entry_set_size(entry, (la_int64_t)len);
	archive_entry_set_mtime(entry, time(NULL), 0);
	r = write_header(c, entry, name);
	archive_entry_free(entry);
	if (r == 0 && len > 0 && archive_write_data(c->a, data, len) != (la_ssize_t)len)
		r = pd_error_set(c->err, archive_code(c->a), "%s: %s", name,
				 tarsafe_archive_why(c->a));
	if (r == 0 && archive_write_finish_entry(c->a) < ARCHIVE_WARN)
		r = pd_error_set(c->err, archive_code(c->a), "%s: %s", name,
				 tarsafe_archive_why(c->a));
	return r < 0 ? r : stream_error(c, name);
}

int tarsafe_create(int rootfd, const char *path, int out_fd, pd_error *err)
{
	return tarsafe_create_ex(rootfd, path, out_fd, /* hooks= */ NULL, err);
}

int tarsafe_create_ex(int rootfd, const char *path, int out_fd,
		      const struct tar_create_hooks *hooks, pd_error *err)
{
	char norm[PATH_MAX], pbuf[128];
	_cleanup_free_ char *name = NULL, *buf = NULL;
	_cleanup_close_ int dfd = -1, pathfd = -1, fd = -1;
	struct creator c = {.err = err, .hooks = hooks, .out_fd = out_fd};
	struct stat st;
	int r = tarsafe_normalize(path, norm, sizeof(norm));

	tarsafe_printable(path, pbuf, sizeof(pbuf));
	if (r < 0)
		return pd_error_set(err, r, "%s: invalid path", pbuf);

	dfd = tarsafe_openat2(rootfd, norm[0] ? norm : ".", O_RDONLY | O_DIRECTORY, 0,
			      TARSAFE_RESOLVE_ROOT);
	if (dfd == -ENOTDIR) {
		pathfd = tarsafe_openat2(rootfd, norm, O_PATH, 0, TARSAFE_RESOLVE_ROOT);
		if (pathfd < 0)
			return pd_error_set(err, pathfd, "%s: %s", pbuf, strerror(-pathfd));
		fd = reopen_checked(pathfd, O_RDONLY);
		if (fd == -EPERM)
			return pd_error_set(err, fd, "%s: not a regular file or directory", pbuf);
		if (fd < 0)
			return pd_error_set(err, fd, "%s: %s", pbuf, strerror(-fd));
		if (fstat(fd, &st) < 0)
			return pd_error_set(err, -errno, "%s: %s", pbuf, strerror(errno));
		name = strdup(strrchr(norm, '/') ? strrchr(norm, '/') + 1 : norm);
		if (!name)
			return pd_error_set(err, -ENOMEM, "out of memory");
	} else if (dfd < 0) {
		return pd_error_set(err, dfd, "%s: %s", pbuf, strerror(-dfd));
	} else if (fstat(dfd, &st) < 0) {
		return pd_error_set(err, -errno, "%s: %s", pbuf, strerror(errno));
	}

	buf = malloc(PATH_MAX);
	c.buf = malloc(COPY_BUF);
	c.a = archive_write_new();
	c.links = archive_entry_linkresolver_new();
	if (!buf || !c.buf || !c.a || !c.links) {
		r = pd_error_set(err, -ENOMEM, "out of memory");
		goto out;
	}
	archive_entry_linkresolver_set_strategy(c.links, ARCHIVE_FORMAT_TAR_PAX_RESTRICTED);
	if (archive_write_set_format_pax_restricted(c.a) != ARCHIVE_OK ||
	    archive_write_add_filter_none(c.a) != ARCHIVE_OK ||
	    archive_write_set_bytes_in_last_block(c.a, 1) != ARCHIVE_OK ||
	    archive_write_open2(c.a, &c, /* opener= */ NULL, creator_write, /* closer= */ NULL,
				/* freer= */ NULL) != ARCHIVE_OK) {
		r = pd_error_set(err, archive_code(c.a), "cannot start the tar stream: %s",
				 tarsafe_archive_why(c.a));
		goto out;
	}
	if (dfd >= 0) {
		buf[0] = '\0';
		r = add_tree(&c, dfd, buf, 0, st.st_dev, 0);
	} else {
		r = add_file(&c, fd, &st, name);
	}
	if (r == 0)
		r = add_trailer(&c);
	if (r == 0 && archive_write_close(c.a) != ARCHIVE_OK)
		r = pd_error_set(err, archive_code(c.a), "cannot finish the tar stream: %s",
				 tarsafe_archive_why(c.a));
	if (r == 0 && c.write_err)
		r = pd_error_set(err, c.write_err, "cannot finish the tar stream: %s",
				 strerror(-c.write_err));
out:
	if (r < 0 && c.a)
		c.failed = true; /* no end-of-archive marker after an error */
	if (c.links)
		archive_entry_linkresolver_free(c.links);
	if (c.a)
		archive_write_free(c.a);
	free(c.buf);
	return r;
}
