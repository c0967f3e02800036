/* layer-merge.c - merging overlay layers by hand (see layer-merge.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <search.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "runtime/idmap.h"
#include "runtime/layer-merge.h"
#include "common/util.h"

#define OPAQUE_XATTR "trusted.overlay.opaque"
/* Bounds what one xattr list or value may take. */
#define XATTR_BUF_MAX (64 * 1024)

/* A regular file of the layer being merged that has more names than one:
 * where its first name was copied, so the others become links to it. */
struct first_copy {
	dev_t dev; /* the source inode */
	ino_t ino;
	ino_t copy_ino; /* the copy's, to tell it is still in place */
	char path[];	/* the copy */
};

/* One merge: the layer's files with several names seen so far (a tsearch
 * tree of struct first_copy, emptied after each layer: a layer's inodes
 * are its own). */
struct merger {
	void *copies;
	pd_error *err;
};

static int copy_cmp(const void *a, const void *b)
{
	const struct first_copy *x = a, *y = b;

	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	return x->ino < y->ino ? -1 : x->ino > y->ino;
}

static bool is_opaque(const char *path)
{
	char v[2];
	ssize_t n = lgetxattr(path, OPAQUE_XATTR, v, sizeof v);

	return n == 1 && v[0] == 'y';
}

/* The names of path's xattrs ("a\0b\0") in *ret (malloc'd), length in
 * *ret_len. */
static int list_xattrs(const char *path, char **ret, size_t *ret_len, pd_error *err)
{
	_cleanup_free_ char *buf = NULL;
	ssize_t n = llistxattr(path, NULL, 0);

	if (n < 0 && (errno == ENOTSUP || errno == EOPNOTSUPP))
		n = 0;
	if (n < 0)
		return pd_error_set(err, -errno, "cannot list xattrs of %s: %s", path,
				    strerror(errno));
	buf = malloc((size_t)n + 1);
	if (!buf)
		return pd_error_set(err, -ENOMEM, "out of memory");
	if (n > 0) {
		n = llistxattr(path, buf, (size_t)n);
		if (n < 0)
			return pd_error_set(err, -errno, "cannot list xattrs of %s: %s", path,
					    strerror(errno));
	}
	*ret = TAKE_PTR(buf);
	*ret_len = (size_t)n;
	return 0;
}

/* Removes every xattr of dst (a directory about to take a newer layer's
 * metadata). */
static int clear_xattrs(const char *dst, pd_error *err)
{
	_cleanup_free_ char *names = NULL;
	size_t len;
	int r = list_xattrs(dst, &names, &len, err);

	for (size_t off = 0; r >= 0 && off < len; off += strlen(names + off) + 1)
		if (lremovexattr(dst, names + off) < 0 && errno != ENODATA)
			r = pd_error_set(err, -errno, "cannot remove xattr %s of %s: %s",
					 names + off, dst, strerror(errno));
	return r;
}

/* Copies src's xattrs onto dst, all but the opaque mark when skip_opaque. */
static int copy_xattrs(const char *src, const char *dst, bool skip_opaque, pd_error *err)
{
	_cleanup_free_ char *names = NULL, *val = NULL;
	size_t len;
	int r = list_xattrs(src, &names, &len, err);

	if (r >= 0 && len && !(val = malloc(XATTR_BUF_MAX)))
		r = pd_error_set(err, -ENOMEM, "out of memory");
	for (size_t off = 0; r >= 0 && off < len; off += strlen(names + off) + 1) {
		const char *name = names + off;
		ssize_t n;

		if (strcmp(name, "trusted.overlay.redirect") == 0 ||
		    strcmp(name, "trusted.overlay.metacopy") == 0)
			return pd_error_set(err, -ENOTSUP,
					    "%s has %s (overlay redirect_dir/metacopy), which "
					    "merging does not support",
					    src, name);
		if (skip_opaque && strcmp(name, OPAQUE_XATTR) == 0)
			continue;
		n = lgetxattr(src, name, val, XATTR_BUF_MAX);
		if (n < 0)
			return pd_error_set(err, -errno, "cannot read xattr %s of %s: %s", name,
					    src, strerror(errno));
		if (lsetxattr(dst, name, val, (size_t)n, 0) < 0)
			return pd_error_set(err, -errno, "cannot set xattr %s on %s: %s", name, dst,
					    strerror(errno));
	}
	return r;
}

/* Owner, mode, xattrs, then times (last: the others change ctime only,
 * but a directory's contents change its mtime, so callers finish a
 * directory's children first). chown comes before xattrs because it drops
 * security.capability. */
/* The ranges of ids (idmap.h) of the layer being applied and of the
 * result: an owner from+k is written to+k. */
static _Thread_local uint32_t shift_from, shift_to;

static uint32_t shifted(uint32_t id)
{
	return idmap_base_of(id) == shift_from ? shift_to + (id - shift_from) : id;
}

static int copy_meta(const char *src, const char *dst, const struct stat *st, bool skip_opaque,
		     pd_error *err)
{
	struct timespec times[2] = {st->st_atim, st->st_mtim};
	int r;

	if (lchown(dst, shifted(st->st_uid), shifted(st->st_gid)) < 0)
		return pd_error_set(err, -errno, "cannot chown %s: %s", dst, strerror(errno));
	if (!S_ISLNK(st->st_mode) && chmod(dst, st->st_mode & 07777) < 0)
		return pd_error_set(err, -errno, "cannot chmod %s: %s", dst, strerror(errno));
	r = copy_xattrs(src, dst, skip_opaque, err);
	if (r < 0)
		return r;
	if (utimensat(AT_FDCWD, dst, times, AT_SYMLINK_NOFOLLOW) < 0)
		return pd_error_set(err, -errno, "cannot set the times of %s: %s", dst,
				    strerror(errno));
	return 0;
}

static int copy_data(int in, int out)
{
	char buf[64 * 1024];
	bool plain = false;

	for (;;) {
		ssize_t n = plain ? read(in, buf, sizeof buf)
				  : copy_file_range(in, NULL, out, NULL, 1 << 30, 0);
		int r;

		if (n < 0 && !plain &&
		    (errno == EXDEV || errno == ENOSYS || errno == EINVAL || errno == EOPNOTSUPP)) {
			plain = true;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : 0;
		if (plain && (r = write_all(out, buf, (size_t)n)) < 0)
			return r;
	}
}

static int copy_file(const char *src, const char *dst, pd_error *err)
{
	_cleanup_close_ int in = -1, out = -1;
	int r;

	in = open(src, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
	if (in < 0)
		return pd_error_set(err, -errno, "cannot open %s: %s", src, strerror(errno));
	out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, 0600);
	if (out < 0)
		return pd_error_set(err, -errno, "cannot create %s: %s", dst, strerror(errno));
	r = copy_data(in, out);
	if (r < 0)
		return pd_error_set(err, r, "cannot copy %s: %s", src, strerror(-r));
	return 0;
}

/*
 * A later name of a regular file already copied in this layer: a hard link
 * to the copy at dst, so a layer of one file and 300 links to it merges
 * into one file, not 301. Returns 1 when linked, 0 when dst must be
 * copied (a first name, or the copy is gone or has too many links; then
 * it becomes the copy the next names link to), or -errno.
 */
static int link_to_copy(struct merger *m, const struct stat *st, const char *dst,
			struct first_copy **ret_slot)
{
	struct first_copy key = {.dev = st->st_dev, .ino = st->st_ino}, **found;
	struct stat cst;

	*ret_slot = NULL;
	if (!S_ISREG(st->st_mode) || st->st_nlink < 2)
		return 0;
	found = tfind(&key, &m->copies, copy_cmp);
	if (!found)
		return 0;
	if (lstat((*found)->path, &cst) == 0 && cst.st_ino == (*found)->copy_ino &&
	    S_ISREG(cst.st_mode)) {
		if (link((*found)->path, dst) == 0)
			return 1;
		if (errno != EMLINK)
			return pd_error_set(m->err, -errno, "cannot link %s to %s: %s", dst,
					    (*found)->path, strerror(errno));
	}
	*ret_slot = *found;
	return 0;
}

/* Records dst, a fresh copy of st's file, as the copy its other names
 * link to (replacing `slot`, an earlier copy that cannot take more). */
static int note_copy(struct merger *m, const struct stat *st, const char *dst,
		     struct first_copy *slot)
{
	struct first_copy *c;
	struct stat cst;
	size_t len = strlen(dst);

	if (!S_ISREG(st->st_mode) || st->st_nlink < 2)
		return 0;
	if (lstat(dst, &cst) < 0)
		return pd_error_set(m->err, -errno, "cannot stat %s: %s", dst, strerror(errno));
	c = malloc(sizeof(*c) + len + 1);
	if (!c)
		return pd_error_set(m->err, -ENOMEM, "out of memory");
	*c = (struct first_copy){.dev = st->st_dev, .ino = st->st_ino, .copy_ino = cst.st_ino};
	memcpy(c->path, dst, len + 1);
	if (slot) {
		tdelete(slot, &m->copies, copy_cmp);
		free(slot);
	}
	if (!tsearch(c, &m->copies, copy_cmp)) {
		free(c);
		return pd_error_set(m->err, -ENOMEM, "out of memory");
	}
	return 0;
}

/* A non-directory: a new copy of src at dst (which does not exist). */
static int copy_node(const char *src, const char *dst, const struct stat *st, pd_error *err)
{
	int r = 0;

	if (S_ISREG(st->st_mode))
		r = copy_file(src, dst, err);
	else if (S_ISLNK(st->st_mode)) {
		_cleanup_free_ char *target = malloc((size_t)st->st_size + 1);
		ssize_t n;

		if (!target)
			return pd_error_set(err, -ENOMEM, "out of memory");
		n = readlink(src, target, (size_t)st->st_size + 1);
		if (n < 0 || n > st->st_size)
			return pd_error_set(err, n < 0 ? -errno : -EIO, "cannot read link %s", src);
		target[n] = '\0';
		if (symlink(target, dst) < 0)
			r = pd_error_set(err, -errno, "cannot make link %s: %s", dst,
					 strerror(errno));
	} else if (mknod(dst, st->st_mode, st->st_rdev) < 0)
		r = pd_error_set(err, -errno, "cannot make %s: %s", dst, strerror(errno));
	if (r < 0)
		return r;
	return copy_meta(src, dst, st, /* skip_opaque= */ false, err);
}

static int remove_path(const char *path, pd_error *err)
{
	int r = rm_rf(path);

	if (r < 0)
		return pd_error_set(err, r, "cannot remove %s: %s", path, strerror(-r));
	return 0;
}

static int merge_dir(struct merger *m, const char *src, const char *dst);

/* Applies one entry of a newer layer (src) onto the merged tree (dst). */
static int merge_entry(struct merger *m, const char *src, const char *dst)
{
	pd_error *err = m->err;
	struct first_copy *slot;
	struct stat st, dst_st;
	bool exists, opaque;
	int r;

	if (lstat(src, &st) < 0)
		return pd_error_set(err, -errno, "cannot stat %s: %s", src, strerror(errno));
	exists = lstat(dst, &dst_st) == 0;
	if (!exists && errno != ENOENT)
		return pd_error_set(err, -errno, "cannot stat %s: %s", dst, strerror(errno));

	if (!S_ISDIR(st.st_mode)) {
		/* Whiteouts included: copied as they are, over what they hide. */
		if (exists && (r = remove_path(dst, err)) < 0)
			return r;
		r = link_to_copy(m, &st, dst, &slot);
		if (r != 0)
			return r < 0 ? r : 0;
		r = copy_node(src, dst, &st, err);
		return r < 0 ? r : note_copy(m, &st, dst, slot);
	}

	opaque = is_opaque(src);
	if (exists && S_ISDIR(dst_st.st_mode) && !opaque) {
		/* Merges with the older directory, which stays opaque if it was. */
		opaque = is_opaque(dst);
		r = clear_xattrs(dst, err);
	} else {
		/* Opaque, or over a non-directory or a whiteout, which ended
		 * the lookup there: nothing from below shows through. */
		if (exists) {
			opaque = true;
			if ((r = remove_path(dst, err)) < 0)
				return r;
		}
		r = mkdir(dst, 0700) < 0
			? pd_error_set(err, -errno, "cannot make %s: %s", dst, strerror(errno))
			: 0;
	}
	if (r >= 0 && opaque && lsetxattr(dst, OPAQUE_XATTR, "y", 1, 0) < 0)
		r = pd_error_set(err, -errno, "cannot mark %s opaque: %s", dst, strerror(errno));
	if (r >= 0)
		r = merge_dir(m, src, dst);
	if (r >= 0)
		r = copy_meta(src, dst, &st, /* skip_opaque= */ true, err);
	return r;
}

static int merge_dir(struct merger *m, const char *src, const char *dst)
{
	pd_error *err = m->err;
	DIR *d = opendir(src);
	struct dirent *de;
	int r = 0;

	if (!d)
		return pd_error_set(err, -errno, "cannot open %s: %s", src, strerror(errno));
	while (r >= 0) {
		_cleanup_free_ char *s = NULL, *t = NULL;

		errno = 0;
		de = readdir(d);
		if (!de) {
			if (errno)
				r = pd_error_set(err, -errno, "cannot read %s: %s", src,
						 strerror(errno));
			break;
		}
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (asprintf(&s, "%s/%s", src, de->d_name) < 0)
			s = NULL;
		else if (asprintf(&t, "%s/%s", dst, de->d_name) < 0)
			t = NULL;
		if (!s || !t) {
			r = pd_error_set(err, -ENOMEM, "out of memory");
			break;
		}
		r = merge_entry(m, s, t);
	}
	closedir(d);
	return r;
}

int layer_merge(const char *const *layers, size_t n, const char *dst, pd_error *err)
{
	int64_t to = n ? idmap_dir_base(layers[n - 1]) : 0;
	int r = 0;

	if (to < 0)
		return pd_error_set(err, (int)to, "cannot stat %s: %s", layers[n - 1],
				    strerror((int)-to));
	shift_to = (uint32_t)to;
	for (size_t i = 0; i < n && r >= 0; i++) {
		struct merger m = {.err = err};
		struct stat st;

		if (lstat(layers[i], &st) < 0)
			return pd_error_set(err, -errno, "cannot stat %s: %s", layers[i],
					    strerror(errno));
		if (!S_ISDIR(st.st_mode))
			return pd_error_set(err, -ENOTDIR, "layer %s is not a directory",
					    layers[i]);
		shift_from = idmap_base_of((uint32_t)st.st_uid);
		r = merge_dir(&m, layers[i], dst);
		tdestroy(m.copies, free);
		/* The root takes the newest layer's metadata; it is never opaque. */
		if (r >= 0)
			r = clear_xattrs(dst, err);
		if (r >= 0)
			r = copy_meta(layers[i], dst, &st, /* skip_opaque= */ true, err);
	}
	return r;
}
