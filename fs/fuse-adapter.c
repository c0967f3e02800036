/* fuse-adapter.c - the tree over FUSE.
 *
 * Who may use it: see allowed(). Kernel caches: see reply_entry() for what
 * the kernel keeps, and on_box_change() for how a box deleted by other means
 * than a FUSE rmdir leaves the kernel's cache before the deletion returns. */
#define FUSE_USE_VERSION 312

#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "engine/access.h"
#include "fs/fuse-adapter.h"
#include "common/lock.h"
#include "common/log.h"

/* The most one read answers, and the I/O size streams show (st_blksize), so
 * tools that size their buffers by it (cat, cp) ask for that much: each read
 * is a round trip through the daemon, and a stream followed live is read in
 * as few as its writer's batches allow. The kernel's own limit per request
 * is libfuse's max_write (1 MiB, FUSE_MAX_MAX_PAGES pages). Other files show
 * BLKSIZE: their values are small, and a reader with a 1 MiB buffer (and the
 * daemon's for its reads) would cost more than it saves. */
#define READ_MAX (1024 * 1024)
#define BLKSIZE 4096
#define WAKE_QUEUE_MAX 1024
#define VERDICTS 64		   /* callers whose groups are remembered (allowed()) */
#define VERDICT_USEC (1000 * 1000) /* for how long */

/* What the supplementary groups of one caller (a thread) decided. */
struct verdict {
	pid_t pid;
	uid_t uid;
	gid_t gid;
	bool ok;
	unsigned long long expires; /* now_usec() */
};

struct parked {
	fuse_req_t req;
	struct tree_file *f;
	uint64_t off;
	size_t size;
	uint64_t key;
	struct parked *next;
};

struct fuse_adapter {
	struct tree *tree;
	struct engine *engine;
	struct fuse_session *se;
	char *mountpoint;
	bool mounted;

	struct pd_mutex park_lock;
	struct parked *parked;
	size_t n_parked;

	struct pd_mutex wake_lock;
	pthread_cond_t wake_cond;
	uint64_t wake_keys[WAKE_QUEUE_MAX];
	size_t n_wake;
	bool wake_all; /* the queue overflowed: retry every parked read */
	bool stopping;
	pthread_t waker;
	bool waker_started;

	struct pd_mutex verdict_lock;
	struct verdict verdicts[VERDICTS]; /* by pid % VERDICTS */
};

struct dir_handle {
	struct tree_entry *entries;
	size_t n;
};

/* The box name a FUSE mkdir or rmdir in boxes/ served by this thread is
 * changing, else NULL (see on_box_change). */
static __thread const char *serving_box_change;

static struct fuse_adapter *adapter(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

/* Access (docs/security.md, access.h): root and the members of one group
 * may use the tree; every request of anyone else is refused with EACCES
 * (the root directory's getattr aside, so `ls -ld` tells the truth).
 *
 * The kernel checks first (default_permissions, see fuse_adapter_mount):
 * every node shows owner root, the group, and no bits for others, so a
 * path walk by anyone else stops at the mount's root, whatever the
 * kernel's caches hold. Each handler then checks again by the caller's
 * credentials, which also covers descriptors opened by a member and used
 * by someone else (passed over a socket, inherited across setuid).
 *
 * uid and gid come with the request; the supplementary groups only from
 * /proc (a read that costs more than the request), so they are read only
 * when those two do not decide, and what they decided is remembered for
 * VERDICT_USEC per caller thread, with its uid and gid. A thread's groups
 * change only through setgroups(), which takes CAP_SETGID (a thread that
 * has it can give itself the group anyway); a thread that drops the group
 * is refused by the kernel at once on every path, and by this check within
 * VERDICT_USEC on the descriptors it holds. A pid is not reused that fast. */
static bool allowed(fuse_req_t req)
{
	struct fuse_adapter *a = adapter(req);
	const struct pd_access *acc = engine_access(a->engine);
	const struct fuse_ctx *c = fuse_req_ctx(req);
	gid_t groups[ACCESS_GROUPS_MAX];
	unsigned long long now;
	struct verdict *v;
	bool ok, hit;
	int n;

	if (access_allows(acc, c->uid, c->gid, NULL, 0))
		return true;
	if (!acc->has_group || c->pid <= 0)
		return false;
	now = now_usec();
	v = &a->verdicts[(unsigned)c->pid % VERDICTS];
	pd_mutex_lock(&a->verdict_lock);
	hit = v->pid == c->pid && v->uid == c->uid && v->gid == c->gid && now < v->expires;
	ok = v->ok;
	pd_mutex_unlock(&a->verdict_lock);
	if (hit)
		return ok;
	/* At most ACCESS_GROUPS_MAX are looked at, as for the local socket.
	 * A caller whose /proc entry is gone is refused. */
	n = fuse_req_getgroups(req, (int)ELEMENTSOF(groups), groups);
	if (n > (int)ELEMENTSOF(groups))
		n = (int)ELEMENTSOF(groups);
	ok = n > 0 && access_allows(acc, c->uid, c->gid, groups, (size_t)n);
	pd_mutex_lock(&a->verdict_lock);
	*v = (struct verdict){
	    .pid = c->pid, .uid = c->uid, .gid = c->gid, .ok = ok, .expires = now + VERDICT_USEC};
	pd_mutex_unlock(&a->verdict_lock);
	return ok;
}

/* Replies EACCES and returns true when the caller may not use the tree. */
static bool refused(fuse_req_t req)
{
	if (allowed(req))
		return false;
	fuse_reply_err(req, EACCES);
	return true;
}

static void to_stat(const struct fuse_adapter *ad, const struct tree_attr *a, struct stat *st)
{
	memset(st, 0, sizeof *st);
	st->st_ino = a->ino;
	st->st_mode = a->mode;
	st->st_gid = access_gid(engine_access(ad->engine));
	st->st_nlink = a->nlink;
	st->st_size = (off_t)a->size;
	st->st_blocks = (blkcnt_t)((a->size + 511) / 512);
	st->st_blksize = a->stream ? READ_MAX : BLKSIZE;
	st->st_mtime = st->st_ctime = st->st_atime = a->mtime;
}

/* What the kernel may cache. Daemon-side changes (HTTP, TTL expiry, jobs
 * ending) must show at once, so values are never cached. What cannot change
 * while its parent directory exists is cached, which spares every path walk
 * through the tree (cp -a into root/ walks boxes/NAME/root once per file):
 *  - the name -> inode mapping of directories and links. Inodes are never
 *    reused (tree.h), so a box or job created again under the same name is
 *    a new inode and the kernel asks again. This includes boxes/NAME: a box
 *    deleted by a FUSE rmdir leaves the kernel's cache with it, and one
 *    deleted any other way (HTTP) is dropped by on_box_change() before the
 *    deletion returns. Not cached: images/NAME (images are installed and
 *    removed on disk, behind the daemon's back), tokens/ID (revoked over
 *    HTTP without a hook), volumes/NAME (deleted over HTTP without a hook)
 *    and exec/last, whose name moves to a new inode with each new job: the
 *    kernel asks for it on every walk, and the answer is cheap;
 *  - the attributes of directories and links, and (FUSE_CAP_CACHE_SYMLINKS,
 *    see op_init) link targets: a link inode's target never changes (box
 *    `root`: RUN/roots/ID; exec/last: one inode per job).
 * Lookups that fail are never cached (ENOENT replies carry no timeout), so
 * a box created by other means than a FUSE mkdir shows at once.
 * Regular files are never cached: a rename of a temp file over a control
 * file would leave the kernel's entry on the vanished temp. */
#define STABLE_TIMEOUT 3600.0

static void reply_entry(fuse_req_t req, uint64_t parent, const char *name,
			const struct tree_attr *a)
{
	struct fuse_entry_param e = {0};
	bool fixed_attr = S_ISDIR(a->mode) || S_ISLNK(a->mode);
	bool moving = parent == TREE_IMAGES_INO || parent == TREE_TOKENS_INO ||
		      tree_entries_volatile(parent) || parent == TREE_VOLUMES_INO ||
		      (S_ISLNK(a->mode) && strcmp(name, "last") == 0);

	e.ino = a->ino;
	e.generation = 1;
	to_stat(adapter(req), a, &e.attr);
	e.attr_timeout = fixed_attr ? STABLE_TIMEOUT : 0;
	e.entry_timeout = fixed_attr && !moving ? STABLE_TIMEOUT : 0;
	fuse_reply_entry(req, &e);
}

static void reply_attr(fuse_req_t req, const struct tree_attr *a)
{
	struct stat st;

	to_stat(adapter(req), a, &st);
	/* As reply_entry(): the kernel checks permissions with the cached
	 * attributes, so those of the root must not expire at each walk. */
	fuse_reply_attr(req, &st, S_ISDIR(a->mode) || S_ISLNK(a->mode) ? STABLE_TIMEOUT : 0);
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct tree_attr a;
	int r;

	if (refused(req))
		return;
	r = tree_lookup(adapter(req)->tree, parent, name, &a);
	if (r < 0)
		fuse_reply_err(req, -r);
	else
		reply_entry(req, parent, name, &a);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct tree_attr a;
	int r;

	/* The root's attributes are anyone's: they say who may enter. */
	if (ino != FUSE_ROOT_ID && refused(req))
		return;
	r = tree_getattr(adapter(req)->tree, ino, &a);
	if (r < 0)
		fuse_reply_err(req, -r);
	else
		reply_attr(req, &a);
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	char target[4096];
	int r;

	if (refused(req))
		return;
	r = tree_readlink(adapter(req)->tree, ino, target, sizeof target);
	if (r < 0)
		fuse_reply_err(req, -r);
	else
		fuse_reply_readlink(req, target);
}

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		       struct fuse_file_info *fi)
{
	struct fuse_adapter *a = adapter(req);
	struct tree_attr ta;
	int r = 0;

	if (refused(req))
		return;
	if ((to_set & (FUSE_SET_ATTR_MODE | FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)) &&
	    tree_refuses_chmod(ino))
		r = -EPERM;
	else if (to_set & FUSE_SET_ATTR_SIZE)
		r = tree_truncate(a->tree, ino, (uint64_t)attr->st_size);
	/* Mode, owner and times are fixed by the tree; tools that copy them
	 * (editors, `cp -p`) must not fail, so those changes are ignored. The
	 * kernel (default_permissions) refuses them to group members first
	 * (EPERM: they do not own the node), as it would on any file. */
	if (r >= 0)
		r = tree_getattr(a->tree, ino, &ta);
	if (r < 0)
		fuse_reply_err(req, -r);
	else
		reply_attr(req, &ta);
}

static void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct dir_handle *d;
	int r;

	if (refused(req))
		return;
	d = calloc(1, sizeof *d);
	if (!d) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	r = tree_readdir(adapter(req)->tree, ino, &d->entries, &d->n);
	if (r < 0) {
		free(d);
		fuse_reply_err(req, -r);
		return;
	}
	fi->fh = (uintptr_t)d;
	fuse_reply_open(req, fi);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	struct dir_handle *d = (struct dir_handle *)(uintptr_t)fi->fh;
	_cleanup_free_ char *buf = NULL;
	size_t pos = 0;

	if (refused(req))
		return;
	buf = malloc(size);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	/* Offsets: 1 ".", 2 "..", 3 + i entry i. */
	for (off_t i = off; i < (off_t)d->n + 2; i++) {
		struct stat st = {0};
		const char *name;
		size_t need;

		if (i == 0) {
			name = ".";
			st.st_ino = ino;
			st.st_mode = S_IFDIR;
		} else if (i == 1) {
			name = "..";
			st.st_ino = TREE_ROOT_INO;
			st.st_mode = S_IFDIR;
		} else {
			name = d->entries[i - 2].name;
			to_stat(adapter(req), &d->entries[i - 2].attr, &st);
		}
		need = fuse_add_direntry(req, buf + pos, size - pos, name, &st, i + 1);
		if (need > size - pos)
			break;
		pos += need;
	}
	fuse_reply_buf(req, buf, pos);
}

static void op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct dir_handle *d = (struct dir_handle *)(uintptr_t)fi->fh;

	if (d) {
		free(d->entries);
		free(d);
	}
	fuse_reply_err(req, 0);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct tree_file *f;
	int r;

	if (refused(req))
		return;
	r = tree_open(adapter(req)->tree, ino, fi->flags, &f, /* te= */ NULL);
	if (r < 0) {
		fuse_reply_err(req, -r);
		return;
	}
	fi->fh = (uintptr_t)f;
	/* Values change size at any time: never serve them from the page
	 * cache. */
	fi->direct_io = 1;
	fi->keep_cache = 0;
	if (fuse_reply_open(req, fi) == -ENOENT)
		tree_release(adapter(req)->tree, f); /* the opener was interrupted */
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      struct fuse_file_info *fi)
{
	struct fuse_adapter *a = adapter(req);
	struct fuse_entry_param e = {0};
	struct tree_attr ta;
	struct tree_file *f;
	int r;

	if (refused(req))
		return;
	r = tree_create(a->tree, parent, name, fi->flags, &ta, &f);
	if (r < 0) {
		fuse_reply_err(req, -r);
		return;
	}
	e.ino = ta.ino;
	e.generation = 1;
	to_stat(a, &ta, &e.attr);
	fi->fh = (uintptr_t)f;
	fi->direct_io = 1;
	if (fuse_reply_create(req, &e, fi) == -ENOENT)
		tree_release(a->tree, f);
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	tree_release(adapter(req)->tree, (struct tree_file *)(uintptr_t)fi->fh);
	fuse_reply_err(req, 0);
}

/* Called by libfuse when the reader of a parked request gives up (a signal
 * reached it). The entry may already have been answered. */
static void parked_interrupted(fuse_req_t req, void *data)
{
	struct fuse_adapter *a = data;
	struct parked *victim = NULL;

	pd_mutex_lock(&a->park_lock);
	for (struct parked **p = &a->parked; *p; p = &(*p)->next)
		if ((*p)->req == req) {
			victim = *p;
			*p = victim->next;
			a->n_parked--;
			break;
		}
	pd_mutex_unlock(&a->park_lock);
	if (victim) {
		fuse_reply_err(req, EINTR);
		free(victim);
	}
}

/* Replies n bytes of fd at off. With FUSE_CAP_SPLICE_WRITE (op_init)
 * libfuse splices them from the file to the FUSE device, so they are not
 * copied through the daemon (libfuse copies replies under two pages). */
static void reply_fd(fuse_req_t req, int fd, uint64_t off, size_t n)
{
	struct fuse_bufvec bv = FUSE_BUFVEC_INIT(n);

	if (n == 0) {
		fuse_reply_buf(req, NULL, 0);
		return;
	}
	bv.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
	bv.buf[0].fd = fd;
	bv.buf[0].pos = (off_t)off;
	fuse_reply_data(req, &bv, 0);
}

/* Tries a read; replies unless it must wait. Returns true when replied. */
static bool try_read(struct fuse_adapter *a, fuse_req_t req, struct tree_file *f, uint64_t off,
		     size_t size)
{
	char stackbuf[4096];
	char *buf;
	size_t n = 0;
	int fd, r;

	r = tree_read_fd(a->tree, f, off, size, &fd, &n);
	if (r != -EOPNOTSUPP) {
		if (r == TREE_WAIT)
			return false;
		if (r < 0)
			fuse_reply_err(req, -r);
		else
			reply_fd(req, fd, off, n);
		return true;
	}
	buf = size <= sizeof stackbuf ? stackbuf : malloc(size);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return true;
	}
	r = tree_read(a->tree, f, off, buf, size, &n);
	if (r == TREE_WAIT) {
		if (buf != stackbuf)
			free(buf);
		return false;
	}
	if (r < 0)
		fuse_reply_err(req, -r);
	else
		fuse_reply_buf(req, buf, n);
	if (buf != stackbuf)
		free(buf);
	return true;
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct fuse_adapter *a = adapter(req);
	struct tree_file *f = (struct tree_file *)(uintptr_t)fi->fh;
	struct parked *p;

	if (refused(req))
		return;
	if (size > READ_MAX)
		size = READ_MAX;
	if (!tree_file_is_stream(f)) {
		(void)try_read(a, req, f, (uint64_t)off, size);
		return;
	}
	/* Registered before the request can be parked (and so answered by
	 * the waker and freed); if the reader was already interrupted, this
	 * finds nothing to cancel and the read parks until data comes. */
	fuse_req_interrupt_func(req, parked_interrupted, a);
	/* Park under the lock, so a wake between the failed read and the
	 * parking cannot be missed: wakers retry parked reads under it. */
	pd_mutex_lock(&a->park_lock);
	if (try_read(a, req, f, (uint64_t)off, size)) {
		pd_mutex_unlock(&a->park_lock);
		return;
	}
	p = calloc(1, sizeof *p);
	if (!p) {
		pd_mutex_unlock(&a->park_lock);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	*p = (struct parked){.req = req,
			     .f = f,
			     .off = (uint64_t)off,
			     .size = size,
			     .key = tree_file_wait_key(f),
			     .next = a->parked};
	a->parked = p;
	a->n_parked++;
	pd_mutex_unlock(&a->park_lock);
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	struct tree_file *f = (struct tree_file *)(uintptr_t)fi->fh;
	int r;

	if (refused(req))
		return;
	r = tree_write(adapter(req)->tree, f, (uint64_t)off, buf, size, /* te= */ NULL);
	if (r < 0)
		fuse_reply_err(req, -r);
	else
		fuse_reply_write(req, r > 0 ? (size_t)r : size); /* r > 0: a short write */
}

static void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct tree_file *f = (struct tree_file *)(uintptr_t)fi->fh;

	/* A pending value (cmd, exec/new) is applied at flush: not for a
	 * caller who may not use the tree. */
	if (refused(req))
		return;
	fuse_reply_err(req, f ? -tree_flush(adapter(req)->tree, f, /* te= */ NULL) : 0);
}

static void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	if (refused(req))
		return;
	fuse_reply_err(req, 0);
}

/* access(2) and chdir: the same rule; the modes tell the rest. */
static void op_access(fuse_req_t req, fuse_ino_t ino, int mask)
{
	if (refused(req))
		return;
	fuse_reply_err(req, 0);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	struct tree_attr a;
	int r;

	if (refused(req))
		return;
	serving_box_change = parent == TREE_BOXES_INO ? name : NULL;
	r = tree_mkdir(adapter(req)->tree, parent, name, &a);
	serving_box_change = NULL;
	if (r < 0)
		fuse_reply_err(req, -r);
	else
		reply_entry(req, parent, name, &a);
}

static void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	int r;

	if (refused(req))
		return;
	serving_box_change = parent == TREE_BOXES_INO ? name : NULL;
	r = tree_rmdir(adapter(req)->tree, parent, name, /* te= */ NULL);
	serving_box_change = NULL;
	fuse_reply_err(req, -r);
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	if (refused(req))
		return;
	fuse_reply_err(req, -tree_unlink(adapter(req)->tree, parent, name));
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		      const char *newname, unsigned int flags)
{
	if (refused(req))
		return;
	if (flags & RENAME_EXCHANGE) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	fuse_reply_err(req, -tree_rename(adapter(req)->tree, parent, name, newparent, newname));
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct statvfs sv = {.f_bsize = 4096, .f_frsize = 4096, .f_namemax = TREE_NAME_MAX};

	fuse_reply_statfs(req, &sv);
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	/* Link targets are fixed for their inode's life (see reply_entry). */
	if (conn->capable & FUSE_CAP_CACHE_SYMLINKS)
		conn->want |= FUSE_CAP_CACHE_SYMLINKS;
	/* Stream replies straight from their files (reply_fd). */
	if (conn->capable & FUSE_CAP_SPLICE_WRITE)
		conn->want |= FUSE_CAP_SPLICE_WRITE;
}

static const struct fuse_lowlevel_ops ops = {
    .init = op_init,
    .lookup = op_lookup,
    .getattr = op_getattr,
    .setattr = op_setattr,
    .readlink = op_readlink,
    .opendir = op_opendir,
    .readdir = op_readdir,
    .releasedir = op_releasedir,
    .open = op_open,
    .create = op_create,
    .read = op_read,
    .write = op_write,
    .flush = op_flush,
    .fsync = op_fsync,
    .access = op_access,
    .release = op_release,
    .mkdir = op_mkdir,
    .rmdir = op_rmdir,
    .unlink = op_unlink,
    .rename = op_rename,
    .statfs = op_statfs,
};

/* --- waking parked reads ----------------------------------------------------------- */

static void on_wake(void *userdata, uint64_t key)
{
	struct fuse_adapter *a = userdata;

	pd_mutex_lock(&a->wake_lock);
	bool queued = false;
	for (size_t i = 0; i < a->n_wake; i++)
		queued |= a->wake_keys[i] == key;
	if (!queued) {
		if (a->n_wake < WAKE_QUEUE_MAX)
			a->wake_keys[a->n_wake++] = key;
		else
			a->wake_all = true;
	}
	pthread_cond_signal(&a->wake_cond);
	pd_mutex_unlock(&a->wake_lock);
}

static void retry_parked(struct fuse_adapter *a, const uint64_t *keys, size_t n, bool all)
{
	pd_mutex_lock(&a->park_lock);
	for (struct parked **pp = &a->parked; *pp;) {
		struct parked *p = *pp;
		bool match = all;
		for (size_t i = 0; i < n && !match; i++)
			match = p->key == keys[i];
		if (match && try_read(a, p->req, p->f, p->off, p->size)) {
			*pp = p->next;
			a->n_parked--;
			free(p);
		} else
			pp = &p->next;
	}
	pd_mutex_unlock(&a->park_lock);
}

static void *waker_main(void *userdata)
{
	struct fuse_adapter *a = userdata;
	uint64_t keys[WAKE_QUEUE_MAX];

	for (;;) {
		size_t n;
		bool all;

		pd_mutex_lock(&a->wake_lock);
		while (!a->n_wake && !a->wake_all && !a->stopping)
			pd_cond_wait(&a->wake_cond, &a->wake_lock);
		if (a->stopping) {
			pd_mutex_unlock(&a->wake_lock);
			return NULL;
		}
		n = a->n_wake;
		memcpy(keys, a->wake_keys, n * sizeof *keys);
		all = a->wake_all;
		a->n_wake = 0;
		a->wake_all = false;
		pd_mutex_unlock(&a->wake_lock);
		retry_parked(a, keys, n, all);
	}
}

/* --- boxes created and deleted by the daemon ---------------------------------------- */

/* The engine's box hook: drops the kernel's entry boxes/NAME, so a box
 * deleted by other means than a FUSE rmdir (HTTP) is gone from the mount
 * when the deletion returns, and a box created again under that name is
 * looked up afresh (creations need it only if a stale entry survived; the
 * call is cheap and keeps the two symmetric).
 *
 * Called by the thread that made the change. A FUSE mkdir or rmdir of that
 * very name needs nothing: the kernel updates its cache from our reply. It
 * also must not call the kernel: the kernel holds the lock of boxes/ while
 * the request runs, and the invalidation takes that lock, so it would wait
 * for itself. Any other thread is no FUSE request on boxes/ (only mkdir and
 * rmdir there create or delete boxes; tree.h), so the invalidation runs
 * here, synchronously: it waits at most for the FUSE requests that hold
 * boxes/ at the moment (a lookup, or another box's mkdir or rmdir), none
 * of which waits for this thread. */
static void on_box_change(void *userdata, enum engine_box_change change, const char *name)
{
	struct fuse_adapter *a = userdata;
	int r;

	if (serving_box_change && strcmp(serving_box_change, name) == 0)
		return;
	r = fuse_lowlevel_notify_inval_entry(a->se, TREE_BOXES_INO, name, strlen(name));
	/* -ENOENT: nothing cached; -ENOSYS: not mounted yet or any more. */
	if (r < 0 && r != -ENOENT && r != -ENOSYS)
		log_debug("box %s %s: dropping the kernel's entry failed: %s", name,
			  change == ENGINE_BOX_DELETED ? "deleted" : "created", strerror(-r));
}

size_t fuse_adapter_parked(struct fuse_adapter *a)
{
	pd_mutex_lock(&a->park_lock);
	size_t n = a->n_parked;
	pd_mutex_unlock(&a->park_lock);
	return n;
}

/* --- mounting ------------------------------------------------------------------------ */

/* A daemon killed with -9 leaves its mount behind: every access then fails
 * with ENOTCONN. Detach it so we can mount afresh. */
static int clear_stale_mount(const char *mountpoint, pd_error *err)
{
	struct statx st;

	/* Forced past the kernel's cache: the root's attributes are cached
	 * (reply_attr), and would answer for a dead daemon. */
	if (statx(AT_FDCWD, mountpoint, AT_STATX_FORCE_SYNC, STATX_TYPE, &st) == 0) {
		if (!S_ISDIR(st.stx_mode))
			return pd_error_set(err, -ENOTDIR, "mount point %s is not a directory",
					    mountpoint);
		return 0;
	}
	if (errno == ENOENT) {
		int r = mkdir_p(mountpoint, 0755);
		return r < 0
			   ? pd_error_set(err, r, "cannot create %s: %s", mountpoint, strerror(-r))
			   : 0;
	}
	if (errno == ENOTCONN) {
		log_info("detaching the stale mount at %s", mountpoint);
		if (umount2(mountpoint, MNT_DETACH) < 0)
			return pd_error_set(err, -errno, "cannot detach stale mount %s: %s",
					    mountpoint, strerror(errno));
		return 0;
	}
	return pd_error_set(err, -errno, "cannot use mount point %s: %s", mountpoint,
			    strerror(errno));
}

static bool is_paddock_mount(const char *mountpoint)
{
	_cleanup_fclose_ FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[8192];

	if (!f)
		return false;
	while (fgets(line, sizeof line, f)) {
		char mp[4096], fstype[256];
		/* id parent maj:min root mountpoint opts ... - fstype source */
		if (sscanf(line, "%*s %*s %*s %*s %4095s", mp) != 1)
			continue;
		char *dash = strstr(line, " - ");
		if (!dash || sscanf(dash, " - %255s", fstype) != 1)
			continue;
		if (strcmp(mp, mountpoint) == 0 && strncmp(fstype, "fuse.paddock", 12) == 0)
			return true;
	}
	return false;
}

int fuse_adapter_mount(struct tree *t, struct engine *e, const char *mountpoint,
		       struct fuse_adapter **ret, pd_error *err)
{
	/* allow_other: the group's members are not the mounting user.
	 * default_permissions: the kernel checks the modes too (allowed()). */
	const char *argv[] = {"paddockd", "-o",
			      "fsname=paddock,subtype=paddock,allow_other,default_permissions",
			      NULL};
	struct fuse_args args = FUSE_ARGS_INIT(3, (char **)argv);
	struct fuse_adapter *a;
	int r;

	r = clear_stale_mount(mountpoint, err);
	if (r < 0)
		return r;
	if (is_paddock_mount(mountpoint))
		return pd_error_set(err, -EBUSY, "%s is already served by a running paddockd",
				    mountpoint);

	a = calloc(1, sizeof *a);
	if (!a)
		return pd_error_set(err, -ENOMEM, "out of memory");
	a->tree = t;
	a->engine = e;
	pd_mutex_init(&a->park_lock, LOCK_RANK_FUSE_PARK, 0, "fuse park_lock");
	pd_mutex_init(&a->wake_lock, LOCK_RANK_LISTENER, LOCK_NO_SLOW, "fuse wake_lock");
	pd_mutex_init(&a->verdict_lock, LOCK_RANK_LEAF, LOCK_NO_SLOW, "fuse verdict_lock");
	pthread_cond_init(&a->wake_cond, NULL);
	a->mountpoint = strdup(mountpoint);
	if (!a->mountpoint) {
		fuse_adapter_free(a);
		return pd_error_set(err, -ENOMEM, "out of memory");
	}
	a->se = fuse_session_new(&args, &ops, sizeof ops, a);
	fuse_opt_free_args(&args);
	if (!a->se) {
		fuse_adapter_free(a);
		return pd_error_set(err, -EIO, "cannot create the FUSE session");
	}
	if (fuse_session_mount(a->se, mountpoint) != 0) {
		fuse_adapter_free(a);
		return pd_error_set(err, -EIO, "cannot mount %s (is /dev/fuse available?)",
				    mountpoint);
	}
	a->mounted = true;
	r = pthread_create(&a->waker, NULL, waker_main, a);
	if (r != 0) {
		fuse_adapter_free(a);
		return pd_error_set(err, -r, "cannot start the waker thread");
	}
	a->waker_started = true;
	engine_set_wake(e, on_wake, a);
	engine_set_box_hook(e, on_box_change, a);
	*ret = a;
	return 0;
}

int fuse_adapter_run(struct fuse_adapter *a)
{
	struct fuse_loop_config *cfg;
	int r;

	if (fuse_set_signal_handlers(a->se) != 0)
		return -EIO;
	cfg = fuse_loop_cfg_create();
	if (!cfg)
		return -ENOMEM;
	fuse_loop_cfg_set_idle_threads(cfg, 4);
	fuse_loop_cfg_set_max_threads(cfg, 64);
	r = fuse_session_loop_mt(a->se, cfg);
	fuse_loop_cfg_destroy(cfg);
	fuse_remove_signal_handlers(a->se);
	return r < 0 ? r : 0;
}

struct fuse_adapter *fuse_adapter_free(struct fuse_adapter *a)
{
	if (!a)
		return NULL;
	if (a->engine) {
		engine_set_wake(a->engine, NULL, NULL);
		engine_set_box_hook(a->engine, NULL, NULL);
	}
	if (a->waker_started) {
		pd_mutex_lock(&a->wake_lock);
		a->stopping = true;
		pthread_cond_signal(&a->wake_cond);
		pd_mutex_unlock(&a->wake_lock);
		pthread_join(a->waker, NULL);
	}
	pd_mutex_lock(&a->park_lock);
	while (a->parked) {
		struct parked *p = a->parked;
		a->parked = p->next;
		fuse_reply_err(p->req, EINTR);
		free(p);
	}
	pd_mutex_unlock(&a->park_lock);
	if (a->se) {
		if (a->mounted)
			fuse_session_unmount(a->se);
		fuse_session_destroy(a->se);
	}
	free(a->mountpoint);
	pd_mutex_destroy(&a->park_lock);
	pd_mutex_destroy(&a->wake_lock);
	pd_mutex_destroy(&a->verdict_lock);
	pthread_cond_destroy(&a->wake_cond);
	free(a);
	return NULL;
}
