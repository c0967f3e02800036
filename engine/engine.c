/* engine.c - boxes: create, start, stop, change, delete, reconcile. */
#include <assert.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdarg.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "engine/internal.h"
#include "runtime/idmap.h"
#include "store/layers.h"
#include "common/log.h"

#define EVENT_LINE_MAX 1024

/* --- paths --------------------------------------------------------------- */

void eng_box_path(const struct engine *e, const struct box *b, const char *sub, char *buf,
		  size_t bufsz)
{
	if (sub)
		snprintf(buf, bufsz, "%s/%lld/%s", e->boxes_dir, (long long)b->row.id, sub);
	else
		snprintf(buf, bufsz, "%s/%lld", e->boxes_dir, (long long)b->row.id);
}

/* The host's view of a box's root: RUN/roots/ID, where the tree's root link
 * leads. The overlay itself stays at DATA/boxes/ID/rootfs, under DATA (root's
 * alone, 0700), where the container is started from; the view is a bind of
 * it (eng_bind_view) under the run directory, which the group that may use
 * the tree can traverse (RUN is 0750 root:GROUP) and no one else. */
void eng_box_root(const struct engine *e, const struct box *b, char *buf, size_t bufsz)
{
	snprintf(buf, bufsz, "%s/%lld", e->roots_dir, (long long)b->row.id);
}

/* --- the box table (engine lock held) ------------------------------------ */

struct box *eng_find_box(struct engine *e, const char *name)
{
	uint64_t hash = hmap_hash_str(name);
	struct hmap_node *node;

	HMAP_FOR_HASH(node, &e->by_name, hash)
	{
		struct box *b = HMAP_ENTRY(node, struct box, by_name);
		if (strcmp(b->row.name, name) == 0)
			return b;
	}
	return NULL;
}

struct box *eng_live_box(struct engine *e, int64_t id)
{
	struct box *b = eng_find_box_id(e, id);

	return b && !b->deleting ? b : NULL;
}

int eng_box_gone(pd_error *err)
{
	return pd_error_set(err, -ENOENT,
			    "no such box: it was deleted (a box made again under its name is "
			    "another box)");
}

struct box *eng_find_box_id(struct engine *e, int64_t id)
{
	uint64_t hash = hmap_hash_u64((uint64_t)id);
	struct hmap_node *node;

	HMAP_FOR_HASH(node, &e->by_id, hash)
	{
		struct box *b = HMAP_ENTRY(node, struct box, by_id);
		if (b->row.id == id)
			return b;
	}
	return NULL;
}

int eng_add_box(struct engine *e, struct box *b)
{
	struct box **nb = realloc(e->boxes, (e->n_boxes + 1) * sizeof *nb);

	if (!nb)
		return -ENOMEM;
	e->boxes = nb;
	if (hmap_insert_pair(&e->by_name, &b->by_name, hmap_hash_str(b->row.name), &e->by_id,
			     &b->by_id, hmap_hash_u64((uint64_t)b->row.id)) < 0)
		return -ENOMEM;
	e->boxes[e->n_boxes++] = b;
	return 0;
}

static void remove_box(struct engine *e, struct box *b)
{
	for (size_t i = 0; i < e->n_boxes; i++)
		if (e->boxes[i] == b) {
			memmove(&e->boxes[i], &e->boxes[i + 1],
				(e->n_boxes - i - 1) * sizeof *e->boxes);
			e->n_boxes--;
			hmap_remove(&e->by_name, &b->by_name);
			hmap_remove(&e->by_id, &b->by_id);
			return;
		}
}

/* Persists b->state (or a mid-action marker) with the rest of the row. */
int eng_save_box(struct engine *e, struct box *b, const char *marker, pd_error *err)
{
	snprintf(b->row.state, sizeof b->row.state, "%s",
		 marker ? marker : box_state_to_string(b->state));
	return store_box_update(e->store, &b->row, err);
}

/* --- events -------------------------------------------------------------- */

void eng_wake(struct engine *e, uint64_t key)
{
	pd_mutex_lock(&e->wake_lock);
	for (size_t i = 0; i < ENGINE_WAKE_MAX; i++)
		if (e->wake[i].fn)
			e->wake[i].fn(e->wake[i].data, key);
	pd_mutex_unlock(&e->wake_lock);
}

/* Appends one line to the box's stream and the global one. Engine lock
 * held. Event logs are best effort: a full disk must not fail an action. */
void eng_emit(struct engine *e, struct box *b, const char *fmt, ...)
{
	char line[EVENT_LINE_MAX], ts[32], path[4096];
	va_list ap;
	int n;

	format_rfc3339(time(NULL), ts, sizeof ts);
	n = snprintf(line, sizeof line, "%s %s ", ts, b->row.name);
	va_start(ap, fmt);
	n += vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof line - 2)
		n = (int)sizeof line - 2;
	line[n++] = '\n';

	if (e->events_fd >= 0)
		(void)write_all(e->events_fd, line, (size_t)n);
	eng_box_path(e, b, "events", path, sizeof path);
	_cleanup_close_ int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd >= 0)
		(void)write_all(fd, line, (size_t)n);
	eng_wake(e, 0);
	eng_wake(e, (uint64_t)b->row.id);
}

/* --- filesystem ------------------------------------------------------------ */

bool eng_is_mountpoint(const char *path)
{
	struct stat st, parent;
	struct statx sx;
	char p[4200];

	/* The kernel says so (5.8+): a bind mount of a directory on the same
	 * filesystem as its mount point has its parent's device. */
	if (statx(AT_FDCWD, path, AT_NO_AUTOMOUNT, STATX_BASIC_STATS, &sx) == 0 &&
	    (sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT))
		return (sx.stx_attributes & STATX_ATTR_MOUNT_ROOT) != 0;
	if (stat(path, &st) < 0)
		return false;
	snprintf(p, sizeof p, "%s/..", path);
	if (stat(p, &parent) < 0)
		return false;
	/* Overlay roots differ in device from their parent directory. */
	return st.st_dev != parent.st_dev || st.st_ino == parent.st_ino;
}

void eng_lowers_release(struct eng_lowers *l)
{
	for (size_t i = 0; i < l->n_fds; i++)
		close(l->fds[i]);
	l->n_fds = 0;
	free(l->opt);
	l->opt = NULL;
}

/* The user namespaces of one eng_lowerdir(), one per range mapped. */
struct ns_cache {
	uint32_t from[LAYER_STACK_DEPTH_MAX + 1];
	int fd[LAYER_STACK_DEPTH_MAX + 1];
	size_t n;
};

static void ns_cache_clear(struct ns_cache *c)
{
	for (size_t i = 0; i < c->n; i++)
		close(c->fd[i]);
	c->n = 0;
}

/* One lower directory of a stack seen in range base: as it is when it was
 * written in that range, else through an id-mapped copy. */
static int lower_add(struct eng_lowers *l, struct ns_cache *c, FILE *f, const char *path,
		     int64_t from, uint32_t base, pd_error *err)
{
	int fd = -1, r;
	size_t i;

	if (from < 0)
		return pd_error_set(err, (int)from, "cannot read %s: %s", path,
				    strerror((int)-from));
	if ((uint32_t)from == base) {
		fputs(path, f);
		return 0;
	}
	for (i = 0; i < c->n && c->from[i] != (uint32_t)from; i++)
		;
	if (i == c->n) {
		r = idmap_userns((uint32_t)from, base, &c->fd[i]);
		if (r < 0)
			return pd_error_set(err, r, "cannot make a user namespace: %s",
					    strerror(-r));
		c->from[c->n++] = (uint32_t)from;
	}
	r = idmap_open_tree(path, c->fd[i], &fd, err);
	if (r < 0)
		return r;
	l->fds[l->n_fds++] = fd;
	fprintf(f, "/proc/self/fd/%d", fd);
	return 0;
}

/* "lowerdir=DATA/layers/L7:/proc/self/fd/N:..." for a stack over an image
 * (see engine/internal.h). */
int eng_lowerdir(const struct engine *e, const char *stack, const char *image, uint32_t base,
		 struct eng_lowers *ret, pd_error *err)
{
	struct layer_stack s;
	struct eng_lowers l = {0};
	struct ns_cache c = {0};
	char rootfs[4096], path[4096];
	size_t len = 0;
	FILE *f;
	int r = 0;

	if (layers_stack_parse(stack, &s) < 0)
		return pd_error_set(err, -EIO, "corrupt layer stack \"%s\"", stack);
	image_rootfs(e->images_dir, image, rootfs, sizeof rootfs);
	if (access(rootfs, F_OK) < 0)
		return pd_error_set(err, -ENOENT, "image %s is not installed", image);
	f = open_memstream(&l.opt, &len);
	if (!f)
		return pd_error_set(err, -ENOMEM, "out of memory");
	fputs("lowerdir=", f);
	for (size_t i = 0; r >= 0 && i < s.n; i++) {
		r = eng_layer_dir(e, s.ids[i], path, sizeof path, err);
		if (r >= 0)
			r = lower_add(&l, &c, f, path, idmap_dir_base(path), base, err);
		fputc(':', f);
	}
	if (r >= 0)
		r = lower_add(&l, &c, f, rootfs, 0, base, err);
	ns_cache_clear(&c);
	if (fclose(f) != 0 || !l.opt) {
		eng_lowers_release(&l);
		return r < 0 ? r : pd_error_set(err, -ENOMEM, "out of memory");
	}
	if (r < 0) {
		eng_lowers_release(&l);
		return r;
	}
	/* Mount options travel in one page. */
	if (len >= 4000) {
		eng_lowers_release(&l);
		return pd_error_set(err, -E2BIG,
				    "the layer stack is too deep to mount (%zu layers)", s.n);
	}
	*ret = l;
	return 0;
}

uint32_t eng_box_base(const struct engine *e, const struct box *b)
{
	char upper[4096];
	int64_t base;

	/* An image not mounted: its upper is (or becomes, when it is
	 * mounted: eng_mount_disk()) the box's root's. */
	eng_box_upper(e, b, upper, sizeof upper);
	base = idmap_dir_base(upper);
	return base < 0 ? (uint32_t)b->row.uid_base : (uint32_t)base;
}

/* A view is nosymfollow: a host program that opens root/evil/file, where the
 * box made evil a link to /etc, gets ELOOP instead of the host's file. The
 * box plants links the host would resolve against its own root; the kernel
 * follows none on the view (readlink and lstat still see them, cp -a and
 * tar copy them as links). The daemon resolves inside the box on the mounts
 * under DATA instead (openat2 RESOLVE_IN_ROOT). */
#define VIEW_ATTRS (MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOSYMFOLLOW)

int eng_bind_view(const char *src, const char *dst, pd_error *err)
{
	struct mount_attr attr = {.attr_set = VIEW_ATTRS};
	_cleanup_close_ int fd = -1;

	/* One made by an older daemon gets the flags it lacks. */
	if (eng_is_mountpoint(dst)) {
		if (mount_setattr(AT_FDCWD, dst, AT_SYMLINK_NOFOLLOW, &attr, sizeof attr) < 0)
			return pd_error_set(err, -errno, "cannot set the flags of %s: %s", dst,
					    strerror(errno));
		return 0;
	}
	if (mkdir(dst, 0755) < 0 && errno != EEXIST)
		return pd_error_set(err, -errno, "cannot create %s: %s", dst, strerror(errno));
	/* A detached copy gets its flags before it is attached: the view is
	 * never, even for a moment, one where setuid files take effect. */
	fd = open_tree(AT_FDCWD, src, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
	if (fd < 0 || mount_setattr(fd, "", AT_EMPTY_PATH, &attr, sizeof attr) < 0 ||
	    move_mount(fd, "", AT_FDCWD, dst, MOVE_MOUNT_F_EMPTY_PATH) < 0)
		return pd_error_set(err, -errno, "cannot mount %s at %s: %s", src, dst,
				    strerror(errno));
	return 0;
}

void eng_unbind_view(const char *dst)
{
	while (eng_is_mountpoint(dst))
		if (umount2(dst, 0) < 0 && umount2(dst, MNT_DETACH) < 0)
			break;
}

static int mount_overlay(struct engine *e, struct box *b, const char *merged, pd_error *err)
{
	char upper[4096], work[4096];
	_cleanup_free_ char *opts = NULL;
	struct eng_lowers lower;
	int r;

	r = eng_mount_disk(e, b, err);
	if (r < 0)
		return r;
	eng_box_upper(e, b, upper, sizeof upper);
	eng_box_work(e, b, work, sizeof work);
	r = eng_lowerdir(e, b->row.layers, b->row.image, eng_box_base(e, b), &lower, err);
	if (r < 0)
		return r;
	if (asprintf(&opts, "%s,upperdir=%s,workdir=%s", lower.opt, upper, work) < 0) {
		eng_lowers_release(&lower);
		return pd_error_set(err, -ENOMEM, "out of memory");
	}
	r = mount("overlay", merged, "overlay", 0, opts) < 0 ? -errno : 0;
	eng_lowers_release(&lower);
	if (r < 0)
		return pd_error_set(err, r, "cannot mount the box filesystem: %s", strerror(-r));
	return 0;
}

/* Mounts the box's overlay (unless it is: a running box adopted after a
 * restart or an upgrade keeps its own) and its view. */
int eng_mount_root(struct engine *e, struct box *b, pd_error *err)
{
	char merged[4096], view[4096];
	int r;

	lock_assert_no_slow("mounting a box's root");
	eng_box_path(e, b, "rootfs", merged, sizeof merged);
	eng_box_root(e, b, view, sizeof view);
	if (!eng_is_mountpoint(merged)) {
		/* A view left without its overlay would show stale files. */
		eng_unbind_view(view);
		r = mount_overlay(e, b, merged, err);
		if (r < 0)
			return r;
	}
	if (eng_is_mountpoint(view))
		return eng_bind_view(merged, view, err);
	r = eng_bind_view(merged, view, err);
	if (r >= 0)
		eng_owners_watch(e, view);
	return r;
}

/* The view first: it holds the overlay. */
void eng_umount_root(struct engine *e, struct box *b)
{
	char merged[4096];

	eng_box_root(e, b, merged, sizeof merged);
	eng_unbind_view(merged);
	eng_box_path(e, b, "rootfs", merged, sizeof merged);
	eng_unbind_view(merged);
	/* Not lazily: one image, one writer (a detached one would still
	 * write while the next mount does). Held, it stays mounted, and the
	 * next mount takes it as it is. */
	(void)eng_umount_disk(e, b);
}

/* Unmounts the box's root without detaching: -EBUSY while something on the
 * host still uses it (a shell's cwd in root/, an open file), through the
 * view (the tree's root link) or the overlay itself. */
int eng_umount_root_strict(struct engine *e, struct box *b)
{
	char view[4096], merged[4096];
	int r;

	eng_box_root(e, b, view, sizeof view);
	eng_box_path(e, b, "rootfs", merged, sizeof merged);
	eng_owners_flush(e);
	while (eng_is_mountpoint(view))
		if (umount2(view, 0) < 0)
			return -errno;
	while (eng_is_mountpoint(merged))
		if (umount2(merged, 0) < 0) {
			r = -errno;
			/* It stays mounted: so does its view. */
			(void)eng_bind_view(merged, view, NULL);
			return r;
		}
	return 0;
}

int eng_make_box_dirs(struct engine *e, struct box *b, pd_error *err)
{
	static const char *const subs[] = {NULL, "rootfs", "bundle"};
	char p[4096];
	int r;

	for (size_t i = 0; i < ELEMENTSOF(subs); i++) {
		eng_box_path(e, b, subs[i], p, sizeof p);
		if (mkdir(p, 0700) < 0 && errno != EEXIST)
			return pd_error_set(err, -errno, "cannot create %s: %s", p,
					    strerror(errno));
	}
	r = eng_make_writable(e, b, (uint32_t)b->row.uid_base, err);
	if (r < 0)
		return r;
	eng_box_path(e, b, "rootfs", p, sizeof p);
	(void)chmod(p, 0755);
	eng_box_root(e, b, p, sizeof p);
	if (mkdir(p, 0755) < 0 && errno != EEXIST)
		return pd_error_set(err, -errno, "cannot create %s: %s", p, strerror(errno));
	return 0;
}

static int remove_box_files(struct engine *e, struct box *b)
{
	char p[4096];

	eng_umount_root(e, b);
	eng_umount_disk_lazy(e, b); /* its image goes with it */
	eng_box_root(e, b, p, sizeof p);
	(void)rmdir(p);
	eng_box_path(e, b, NULL, p, sizeof p);
	return rm_rf(p);
}

/* --- deleted boxes' files, removed in the background --------------------------
 *
 * A deletion moves the box's directory (DATA/boxes/ID, with its overlay and
 * its disk image still mounted in it) into DATA/trash by one rename, once
 * its container is gone and its view unmounted; a thread of its own then
 * unmounts them and removes the files, outside the request. Nothing there
 * is the user's any more: the row says "deleting" until after the rename
 * (a crash before it: reconcile() finishes the deletion), and whatever a
 * crash leaves in DATA/trash is emptied the same way at the next start. */

struct trash_job {
	struct engine *e;
	char path[4096];
};

static void trash_umount(const char *dir, const char *sub)
{
	char p[4200];

	snprintf(p, sizeof p, "%s/%s", dir, sub);
	while (eng_is_mountpoint(p))
		if (umount2(p, UMOUNT_NOFOLLOW) < 0 && umount2(p, MNT_DETACH | UMOUNT_NOFOLLOW) < 0)
			break;
}

/* The overlay first (it holds the disk), then the disk image; nothing is
 * removed through a mount left there. */
static void trash_remove(const char *path)
{
	char p[4200];
	int r;

	trash_umount(path, "rootfs");
	trash_umount(path, "disk");
	pd_fault("boxdel-umounted");
	snprintf(p, sizeof p, "%s/rootfs", path);
	if (eng_is_mountpoint(p) ||
	    (snprintf(p, sizeof p, "%s/disk", path), eng_is_mountpoint(p))) {
		log_warn("cannot unmount %s: left for the next start", p);
		return;
	}
	r = rm_rf(path);
	if (r < 0)
		log_warn("cannot remove %s: %s", path, strerror(-r));
}

static void *trash_main(void *userdata)
{
	struct trash_job *j = userdata;
	struct engine *e = j->e;

	trash_remove(j->path);
	free(j);
	pd_mutex_lock(&e->lock);
	e->trash_busy--;
	pthread_cond_broadcast(&e->trash_cond);
	pd_mutex_unlock(&e->lock);
	return NULL;
}

/* Removes path (in trash_dir) on a thread of its own; here if none starts. */
static void trash_spawn(struct engine *e, const char *path)
{
	struct trash_job *j = calloc(1, sizeof *j);
	pthread_attr_t attr;
	pthread_t t;
	int r = -ENOMEM;

	if (j) {
		j->e = e;
		snprintf(j->path, sizeof j->path, "%s", path);
		pd_mutex_lock(&e->lock);
		e->trash_busy++;
		pd_mutex_unlock(&e->lock);
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		r = -pthread_create(&t, &attr, trash_main, j);
		pthread_attr_destroy(&attr);
		if (r >= 0)
			return;
		pd_mutex_lock(&e->lock);
		e->trash_busy--;
		pd_mutex_unlock(&e->lock);
		free(j);
	}
	trash_remove(path);
}

/* At start: what a crash left in the trash. */
static void trash_empty(struct engine *e)
{
	DIR *d = opendir(e->trash_dir);
	struct dirent *de;
	char path[4096];

	while (d && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "%s/%s", e->trash_dir, de->d_name);
		trash_spawn(e, path);
	}
	if (d)
		closedir(d);
}

/* Waits for the removals under way (the daemon stops). */
static void trash_wait(struct engine *e)
{
	pd_mutex_lock(&e->lock);
	while (e->trash_busy)
		pd_cond_wait(&e->trash_cond, &e->lock);
	pd_mutex_unlock(&e->lock);
}

/* Waits for the exports to be released (the daemon stops). Their readers
 * are gone by then (the tree closed every file, which cancels them), but
 * their threads may still be finishing and then call back into the engine
 * (a wake, the release of the snapshot's or volume's mark). */
static void exports_wait(struct engine *e)
{
	pd_mutex_lock(&e->lock);
	while (e->exports_busy)
		pd_cond_wait(&e->exports_cond, &e->lock);
	pd_mutex_unlock(&e->lock);
}

void eng_export_released(struct engine *e)
{
	pd_mutex_lock(&e->lock);
	e->exports_busy--;
	pthread_cond_broadcast(&e->exports_cond);
	pd_mutex_unlock(&e->lock);
}

/* A deleted box's files out of the way: its view unmounted (the host sees
 * it no more), then its directory renamed into the trash, whose path is
 * returned for trash_spawn() once the row is gone (empty when there was no
 * directory, or it could not be moved and was removed here). */
static int trash_box_files(struct engine *e, struct box *b, char *trash, size_t trashsz)
{
	char p[4096];

	trash[0] = '\0';
	eng_box_root(e, b, p, sizeof p);
	eng_unbind_view(p);
	(void)rmdir(p);
	eng_box_path(e, b, NULL, p, sizeof p);
	snprintf(trash, trashsz, "%s/%lld.%llu", e->trash_dir, (long long)b->row.id, now_usec());
	if (rename(p, trash) == 0)
		return 0;
	trash[0] = '\0';
	return errno == ENOENT ? 0 : remove_box_files(e, b);
}

/* A walk's result still good at `now`: recent, and begun after the last
 * push ended. */
static bool du_fresh(const struct du_cache *c, unsigned long long now)
{
	return c->checked_usec && c->checked_usec > c->push_ended_usec &&
	       now - c->checked_usec < ENG_DU_CACHE_USEC;
}

/* c, when its object is still there and not being deleted. */
static struct du_cache *du_live(struct engine *e, eng_du_find_fn find, int64_t id)
{
	bool deleting = false;
	struct du_cache *c = find(e, id, &deleting);

	return c && !deleting ? c : NULL;
}

int eng_du_cached(struct engine *e, eng_du_find_fn find, int64_t id, const char *path,
		  unsigned flags, uint64_t *ret)
{
	struct du_cache *c = du_live(e, find, id);
	unsigned long long start = now_usec();
	bool deleting = false;
	uint64_t bytes = 0;
	struct timespec until;

	lock_assert_held(&e->lock);
	assert(c);
	if ((flags & ENGINE_USAGE_NO_WALK) || du_fresh(c, start)) {
		*ret = c->bytes;
		return 0;
	}
	/* One walk at a time: the others take its last result, or wait for
	 * its first (or, ENG_DU_CURRENT, for it). A reader without
	 * ENG_DU_CURRENT waits ENG_DU_WAIT_USEC at most: a walk of a huge tree
	 * must not hold every thread that serves the tree. */
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_nsec += (long)(ENG_DU_WAIT_USEC % 1000000) * 1000;
	until.tv_sec += (time_t)(ENG_DU_WAIT_USEC / 1000000) + until.tv_nsec / 1000000000;
	until.tv_nsec %= 1000000000;
	while (c->walking) {
		if (c->checked_usec && !(flags & ENG_DU_CURRENT)) {
			*ret = c->bytes;
			return 0;
		}
		if (flags & ENG_DU_CURRENT) {
			pd_cond_wait(&e->du_cond, &e->lock);
		} else if (pd_cond_timedwait(&e->du_cond, &e->lock, &until) == ETIMEDOUT) {
			c = du_live(e, find, id);
			if (!c)
				return -ENOENT;
			*ret = c->bytes;
			return 0;
		}
		c = du_live(e, find, id);
		if (!c)
			return -ENOENT;
	}
	if (du_fresh(c, now_usec())) {
		*ret = c->bytes;
		return 0;
	}
	c->walking = true;
	start = now_usec();
	pd_mutex_unlock(&e->lock);

	pd_hold("disk-walk");
	if (du_tree(path, &bytes) < 0)
		bytes = 0;

	pd_mutex_lock(&e->lock);
	/* Cleared even when the object is being deleted: a delete that fails
	 * keeps it, and the next reader must not wait for this walk. */
	c = find(e, id, &deleting);
	if (c) {
		c->walking = false;
		c->bytes = bytes;
		c->checked_usec = start;
	}
	pthread_cond_broadcast(&e->du_cond);
	if (!c || deleting)
		return -ENOENT;
	*ret = bytes;
	return 0;
}

static struct du_cache *box_disk(struct engine *e, int64_t id, bool *ret_deleting)
{
	struct box *b = eng_find_box_id(e, id);

	*ret_deleting = b && b->deleting;
	return b ? &b->disk : NULL;
}

/* --- lifecycle --------------------------------------------------------------- */

/* Whether line, as eng_format_error() wrote it ("TIME FILE: ..."), is
 * about file. */
static bool error_is_for(const char *line, const char *file)
{
	const char *p = strchr(line, ' ');
	size_t n = strlen(file);

	return p && strncmp(p + 1, file, n) == 0 && strncmp(p + 1 + n, ": ", 2) == 0;
}

void engine_error_line(const pd_error *err, const char *file, char *buf, size_t bufsz)
{
	char ts[32], msg[PD_ERROR_MAX], line[PD_ERROR_MAX + 256];
	const char *code = errno_name(-err->code);
	size_t fixed, room;

	format_rfc3339(err->when ? err->when : time(NULL), ts, sizeof ts);
	/* The reason gets what the rest leaves, so "(ERRNO)" always shows. */
	fixed = strlen(ts) + strlen(file) + strlen(code) + 7;
	room = bufsz > fixed + 1 ? bufsz - fixed : 1;
	text_printable(err->msg, strnlen(err->msg, sizeof err->msg), msg,
		       room < sizeof msg ? room : sizeof msg);
	snprintf(line, sizeof line, "%s %s: %s (%s)", ts, file, msg, code);
	text_printable(line, strlen(line), buf, bufsz);
}

bool eng_format_error(const char *file, const pd_error *err, char *buf, size_t bufsz)
{
	if (!err) {
		if (!error_is_for(buf, file))
			return false;
		buf[0] = '\0';
		return true;
	}
	engine_error_line(err, file, buf, bufsz);
	return true;
}

/* b's error: "TIME FILE: reason (ERRNO)", made fit for any reader (a box
 * or a client may have written the bytes the reason echoes); err NULL
 * clears FILE's. Engine lock held (or start-up); the caller records the row
 * when it changed. */
static bool set_error(struct box *b, const char *file, const pd_error *err)
{
	return eng_format_error(file, err, b->row.error, sizeof b->row.error);
}

static void view_of(const struct box *b, struct box_view *v)
{
	*v = (struct box_view){
	    .id = b->row.id,
	    .state = b->state,
	    .created = (time_t)b->row.created,
	    .pid = b->pid,
	    .expires = (time_t)b->row.expires,
	    .uid_base = b->row.uid_base,
	};
	snprintf(v->name, sizeof v->name, "%s", b->row.name);
	snprintf(v->type, sizeof v->type, "%s", b->row.type);
	snprintf(v->image, sizeof v->image, "%s", b->row.image);
	/* Sanitized when recorded; again here for rows older than that. */
	text_printable(b->row.error, strlen(b->row.error), v->error, sizeof v->error);
}

int engine_box_names(struct engine *e, char ***ret, size_t *ret_n)
{
	char **names;
	size_t n = 0;

	pd_mutex_lock(&e->lock);
	names = calloc(e->n_boxes ? e->n_boxes : 1, sizeof *names);
	if (!names)
		goto oom;
	for (size_t i = 0; i < e->n_boxes; i++) {
		if (e->boxes[i]->deleting)
			continue;
		if (!(names[n] = strdup(e->boxes[i]->row.name)))
			goto oom;
		n++;
	}
	pd_mutex_unlock(&e->lock);
	*ret = names;
	*ret_n = n;
	return 0;
oom:
	pd_mutex_unlock(&e->lock);
	image_list_free(names, n);
	return -ENOMEM;
}

int engine_box_get(struct engine *e, const char *name, struct box_view *ret)
{
	struct box *b;

	pd_mutex_lock(&e->lock);
	b = eng_find_box(e, name);
	if (b && !b->deleting)
		view_of(b, ret);
	pd_mutex_unlock(&e->lock);
	return b && !b->deleting ? 0 : -ENOENT;
}

int engine_box_get_by_id(struct engine *e, int64_t id, struct box_view *ret)
{
	struct box *b;

	pd_mutex_lock(&e->lock);
	b = eng_find_box_id(e, id);
	if (b && !b->deleting)
		view_of(b, ret);
	pd_mutex_unlock(&e->lock);
	return b && !b->deleting ? 0 : -ENOENT;
}

int engine_box_create(struct engine *e, const char *name, pd_error *err)
{
	const struct pd_config *cfg = e->cfg;
	struct image_info img;
	struct box *b;
	int r;

	if (!name_valid(name))
		return pd_error_set(err, -EINVAL,
				    "invalid box name \"%s\": use [a-z0-9][a-z0-9._-]{0,62}", name);
	if (!config_find_type(cfg, cfg->default_type)) {
		char types[256];
		config_type_names(cfg, types, sizeof types);
		return pd_error_set(err, -EINVAL, "default type %s is not defined: types are %s",
				    cfg->default_type, types);
	}
	r = image_get(e->images_dir, cfg->default_image, &img);
	if (r < 0)
		return pd_error_set(err, -ENOENT,
				    "default image %s is not installed (build it with: mkimage %s)",
				    cfg->default_image, cfg->default_image);

	b = calloc(1, sizeof *b);
	if (!b)
		return pd_error_set(err, -ENOMEM, "out of memory");
	snprintf(b->row.name, sizeof b->row.name, "%s", name);
	snprintf(b->row.type, sizeof b->row.type, "%s", cfg->default_type);
	snprintf(b->row.image, sizeof b->row.image, "%s", cfg->default_image);
	snprintf(b->row.state, sizeof b->row.state, "creating");
	b->row.created = time(NULL);
	b->row.expires = cfg->default_ttl >= 0 ? b->row.created + cfg->default_ttl : 0;
	b->row.uid_base = cfg->userns ? -1 : 0; /* a range of its own */
	b->row.docker = -1; /* as its image says */
	b->state = BOX_CREATED;

	pd_mutex_lock(&e->lock);
	if (eng_find_box(e, name)) {
		r = pd_error_set(err, -EEXIST, "box %s already exists", name);
		goto fail;
	}
	/* Intent first: a crash from here on leaves a "creating" row that the
	 * next start rolls back. */
	r = store_box_insert(e->store, &b->row, err);
	if (r < 0)
		goto fail;
	/* Its "creating" row keeps the name (a create or fork of the same
	 * name fails on it): its files and mounts are made outside the lock,
	 * the box not yet in the table. */
	pd_mutex_unlock(&e->lock);
	r = eng_make_box_dirs(e, b, err);
	if (r >= 0)
		r = eng_mount_root(e, b, err);
	pd_mutex_lock(&e->lock);
	if (r >= 0)
		r = eng_save_box(e, b, NULL, err);
	if (r < 0) {
		pd_mutex_unlock(&e->lock);
		remove_box_files(e, b);
		pd_mutex_lock(&e->lock);
		store_box_delete(e->store, b->row.id, NULL);
		goto fail;
	}
	r = eng_add_box(e, b);
	if (r < 0) {
		/* Recorded and on disk: the next start picks it up. */
		pd_mutex_unlock(&e->lock);
		free(b);
		return pd_error_set(err, r, "out of memory");
	}
	eng_emit(e, b, "created");
	if (b->row.expires)
		pthread_cond_signal(&e->timer_cond);
	pd_mutex_unlock(&e->lock);
	if (e->box_hook)
		e->box_hook(e->box_hook_data, ENGINE_BOX_CREATED, name);
	log_debug("box %s created", name);
	return 0;
fail:
	pd_mutex_unlock(&e->lock);
	free(b);
	return r;
}

/* Looks a box up for an action and marks it busy. Engine lock held. */
int eng_claim(struct engine *e, int64_t id, struct box **ret, pd_error *err)
{
	struct box *b = eng_live_box(e, id);

	if (!b)
		return eng_box_gone(err);
	if (b->busy)
		return pd_error_set(
		    err, -EBUSY, "box %s is %s; try again when it is done", b->row.name,
		    box_state_is_transition(b->state) ? box_state_to_string(b->state)
						      : "busy with another change");
	*ret = b;
	return 0;
}

/* Moves a box's files into a range of its own before it first starts in a
 * user namespace: a box from before them (its upper in range 0, the
 * host's ids) or one whose move was cut short. The range is recorded
 * first; the walk is redone until it ends (idmap_shift_tree()). b is busy;
 * called without the lock. */
static int eng_box_own_ids(struct engine *e, struct box *b, pd_error *err)
{
	char upper[4096];
	uint32_t base;
	int r;

	if (!e->cfg->userns)
		return 0;
	if (!b->row.uid_base) {
		struct box_row row;

		pd_mutex_lock(&e->lock);
		row = b->row;
		r = store_box_alloc_ids(e->store, &row.uid_base, err);
		if (r >= 0)
			r = store_box_update(e->store, &row, err);
		if (r >= 0)
			b->row = row;
		pd_mutex_unlock(&e->lock);
		if (r < 0)
			return r;
		log_info("box %s: its files move to host ids %lld+ (a user namespace of its own)",
			 b->row.name, (long long)b->row.uid_base);
	}
	/* Its image mounted first: the owner of its upper says the range. */
	r = eng_mount_disk(e, b, err);
	if (r < 0)
		return r;
	base = eng_box_base(e, b);
	if (base == (uint32_t)b->row.uid_base)
		return 0;
	/* Its overlay reads the upper: not while the walk changes it. */
	r = eng_umount_root_strict(e, b);
	if (r < 0)
		return pd_error_set(
		    err, r,
		    "box %s must move its files to its own user ids first, and its "
		    "root is in use on the host: close what uses it and start again",
		    b->row.name);
	r = eng_mount_disk(e, b, err);
	if (r < 0)
		return r;
	eng_box_upper(e, b, upper, sizeof upper);
	r = idmap_shift_tree(upper, base, (uint32_t)b->row.uid_base, err);
	if (r < 0)
		return pd_error_prefix(err, "cannot move box %s to its user ids", b->row.name);
	return 0;
}

/* RUN/boxes/ID[/NAME]: where a box in a user namespace finds what crun
 * mounts into it. crun mounts as the box's root, a host id that may not
 * pass DATA (root's alone) or the group's views: so what the box gets is
 * bound here first, in a directory only the box's root may pass (0710
 * root:its gid) under one anyone may pass but not list (0711), and
 * unbound once the box runs (its mounts are its own by then). */
static void stage_path(const struct engine *e, const struct box *b, const char *name, char *buf,
		       size_t bufsz)
{
	snprintf(buf, bufsz, "%s/boxes/%lld%s%s", e->cfg->run, (long long)b->row.id,
		 name ? "/" : "", name ? name : "");
}

static void unstage(struct engine *e, struct box *b)
{
	char dir[4096], p[4096 + 260];
	struct dirent *de;
	DIR *d;

	stage_path(e, b, NULL, dir, sizeof dir);
	d = opendir(dir);
	if (!d)
		return;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
		while (umount2(p, MNT_DETACH) == 0)
			;
		if (rmdir(p) < 0)
			(void)unlink(p);
	}
	closedir(d);
	(void)rmdir(dir);
}

/* Binds src (a directory, or a file) at the box's stage as name; its path
 * in buf. The copy keeps src's mount flags, and gets attr_set's. */
static int stage(struct engine *e, struct box *b, const char *src, const char *name,
		 uint64_t attr_set, char *buf, size_t bufsz, pd_error *err)
{
	struct mount_attr attr = {.attr_set = attr_set};
	_cleanup_close_ int fd = -1;
	struct stat st;

	stage_path(e, b, name, buf, bufsz);
	if (stat(src, &st) < 0)
		return pd_error_set(err, -errno, "cannot read %s: %s", src, strerror(errno));
	if (S_ISDIR(st.st_mode) ? mkdir(buf, 0700) < 0 && errno != EEXIST
				: mknodat(AT_FDCWD, buf, S_IFREG | 0600, 0) < 0 && errno != EEXIST)
		return pd_error_set(err, -errno, "cannot create %s: %s", buf, strerror(errno));
	fd = open_tree(AT_FDCWD, src, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
	if (fd < 0 ||
	    (attr_set &&
	     mount_setattr(fd, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof attr) < 0) ||
	    move_mount(fd, "", AT_FDCWD, buf, MOVE_MOUNT_F_EMPTY_PATH) < 0)
		return pd_error_set(err, -errno, "cannot mount %s at %s: %s", src, buf,
				    strerror(errno));
	return 0;
}

static int stage_all(struct engine *e, struct box *b, struct box_spec *spec, char *rootfs,
		     char *resolv, char *lxcfs, struct box_mount *mounts, pd_error *err)
{
	char dir[4096], name[32];
	int r;

	unstage(e, b); /* a start that a crash cut short */
	stage_path(e, b, NULL, dir, sizeof dir);
	if (mkdir(dir, 0710) < 0 && errno != EEXIST)
		return pd_error_set(err, -errno, "cannot create %s: %s", dir, strerror(errno));
	if (chown(dir, 0, (gid_t)spec->uid_base) < 0 || chmod(dir, 0710) < 0)
		return pd_error_set(err, -errno, "cannot prepare %s: %s", dir, strerror(errno));
	r = stage(e, b, spec->rootfs, "rootfs", 0, rootfs, 4096, err);
	if (r < 0)
		return r;
	spec->rootfs = rootfs;
	if (spec->resolv_conf) {
		r = stage(e, b, spec->resolv_conf, "resolv.conf",
			  MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC, resolv, 4096,
			  err);
		if (r < 0)
			return r;
		spec->resolv_conf = resolv;
	}
	if (spec->lxcfs_dir) {
		r = stage(e, b, spec->lxcfs_dir, "lxcfs",
			  MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC, lxcfs, 4096,
			  err);
		if (r < 0)
			return r;
		spec->lxcfs_dir = lxcfs;
	}
	for (size_t i = 0; i < spec->n_mounts; i++) {
		snprintf(name, sizeof name, "m%zu", i);
		/* crun's id-mapped copy keeps these (its mount options
		 * do not reach an id-mapped mount). */
		r = stage(e, b, spec->mounts[i].source, name, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
			  mounts[i].source, sizeof mounts[i].source, err);
		if (r < 0)
			return r;
		snprintf(mounts[i].destination, sizeof mounts[i].destination, "%s",
			 spec->mounts[i].destination);
	}
	spec->mounts = mounts;
	return 0;
}

/* runtime_start(), through the box's stage when it has a user namespace. */
static int run_box(struct engine *e, struct box *b, const struct box_spec *spec_in, pid_t *ret_pid,
		   pd_error *err)
{
	struct box_spec spec = *spec_in;
	char srootfs[4096], sresolv[4096], slxcfs[4096];
	_cleanup_free_ struct box_mount *smounts = NULL;
	int r;

	if (!spec.uid_base)
		return runtime_start(e->rt, &spec, ret_pid, err);
	smounts = calloc(spec.n_mounts + 1, sizeof *smounts);
	r = smounts ? stage_all(e, b, &spec, srootfs, sresolv, slxcfs, smounts, err)
		    : pd_error_set(err, -ENOMEM, "out of memory");
	if (r >= 0)
		r = runtime_start(e->rt, &spec, ret_pid, err);
	unstage(e, b);
	return r;
}

static int eng_box_start(struct engine *e, struct box *b, pd_error *err)
{
	const struct box_type *type = config_find_type(e->cfg, b->row.type);
	char bundle[4096], rootfs[4096], netns[4096], resolv[4096], userns[4096];
	char docker_dir[4096];
	_cleanup_free_ struct box_mount *mounts = NULL;
	size_t n_mounts = 0;
	struct box_spec spec;
	uint64_t lxcfs_gen;
	pid_t pid = 0;
	int r;

	if (!type) {
		char types[256];
		config_type_names(e->cfg, types, sizeof types);
		return pd_error_set(err, -EINVAL,
				    "type %s is not defined in the configuration: types are %s "
				    "(write one to type)",
				    b->row.type, types);
	}
	r = eng_box_own_ids(e, b, err);
	if (r < 0)
		return r;
	{
		/* Its type's disk changed: its image follows, or, when it
		 * cannot (files that do not fit, a root in use), keeps its
		 * size and the box starts with it. */
		pd_error derr = {0};
		r = eng_disk_resize(e, b, &derr);
		pd_mutex_lock(&e->lock);
		if (r < 0) {
			log_warn("box %s: %s", b->row.name, derr.msg);
			eng_emit(e, b, "disk not resized: %s", derr.msg);
		} else if (r > 0)
			eng_emit(e, b, "disk resized to type %s", b->row.type);
		pd_mutex_unlock(&e->lock);
	}
	r = eng_mount_root(e, b, err); /* b is busy: no lock needed */
	if (r >= 0) {
		pd_mutex_lock(&e->lock);
		r = eng_volume_mounts(e, b, &mounts, &n_mounts, err);
		pd_mutex_unlock(&e->lock);
	}
	if (r < 0)
		return r;
	eng_box_path(e, b, "bundle", bundle, sizeof bundle);
	eng_box_path(e, b, "rootfs", rootfs, sizeof rootfs);
	r = eng_net_box_up(e, b, netns, sizeof netns, err);
	if (r < 0)
		return r;
	eng_net_resolv_conf(e, resolv, sizeof resolv);
	spec = (struct box_spec){
	    .netns = e->cfg->network ? netns : NULL,
	    .resolv_conf = e->cfg->network ? resolv : NULL,
	    .id = b->row.name,
	    .hostname = b->row.name,
	    .bundle_dir = bundle,
	    .rootfs = rootfs,
	    .type = type,
	    .mounts = mounts,
	    .n_mounts = n_mounts,
	    .uid_base = e->cfg->userns ? (uint32_t)b->row.uid_base : 0,
	};
	if (spec.uid_base && e->cfg->network) {
		eng_net_userns_path(e, b, userns, sizeof userns);
		spec.userns = userns;
	}
	pd_mutex_lock(&e->lock);
	spec.docker = eng_box_docker(e, b);
	pd_mutex_unlock(&e->lock);
	if (spec.docker && !spec.uid_base) {
		/* Never box root as host root with every capability. */
		spec.docker = false;
		pd_mutex_lock(&e->lock);
		eng_emit(e, b, "docker not started: it needs a user namespace per box "
			       "(userns = on)");
		pd_mutex_unlock(&e->lock);
	}
	if (spec.docker) {
		r = eng_docker_prepare(e, b, docker_dir, sizeof docker_dir, err);
		if (r < 0) {
			eng_net_box_down(e, b);
			return r;
		}
		spec.docker_dir = docker_dir;
	}
	lxcfs_gen = eng_lxcfs_spec(e, &spec);
	r = run_box(e, b, &spec, &pid, err);
	if (r < 0 && lxcfs_gen && eng_lxcfs_spec(e, &spec) != lxcfs_gen) {
		/* lxcfs ended while crun bound its files: again with the next
		 * one's views (the spec has them now), or none while it is down. */
		pd_error_clear(err);
		lxcfs_gen = spec.lxcfs_dir ? eng_lxcfs_spec(e, &spec) : 0;
		r = run_box(e, b, &spec, &pid, err);
	}
	/* Its link and rules, made while the container started. */
	int rn = eng_net_box_ready(e, b, r < 0 ? NULL : err);
	if (rn < 0 && r >= 0) {
		(void)runtime_stop(e->rt, b->row.name, 0, NULL);
		r = rn;
	}
	if (r < 0) {
		eng_net_box_down(e, b);
		return r;
	}
	eng_volumes_started(e, b, mounts, n_mounts);
	b->pid = pid;
	b->lxcfs_gen = lxcfs_gen;
	return 0;
}

int engine_box_set_state(struct engine *e, int64_t id, const char *value, pd_error *err)
{
	unsigned long long t0 = now_usec(); /* metrics */
	enum box_state target = box_state_from_string(value), prior;
	enum box_action action;
	const char *reason = NULL;
	int64_t started = 0; /* the box's id once it started */
	struct box *b;
	int r;

	pd_mutex_lock(&e->lock);
	r = eng_claim(e, id, &b, err);
	if (r < 0)
		goto out;
	if (target < 0) {
		r = pd_error_set(err, -EINVAL, "unknown state \"%s\": write running or stopped",
				 value);
		goto out;
	}
	r = box_state_plan(b->state, target, &action, &reason);
	if (r < 0) {
		pd_error_set(err, r, "cannot go from %s to %s: %s", box_state_to_string(b->state),
			     value, reason);
		goto out;
	}
	if (action == BOX_ACTION_NONE)
		goto out;
	prior = b->state;
	b->busy = true;
	b->state = action == BOX_ACTION_START ? BOX_STARTING : BOX_STOPPING;
	r = eng_save_box(e, b, NULL, err);
	if (r < 0) {
		b->state = prior;
		b->busy = false;
		goto out;
	}
	if (action == BOX_ACTION_STOP)
		eng_docker_box_stops(e, b);
	pd_mutex_unlock(&e->lock);

	if (action == BOX_ACTION_START)
		r = eng_box_start(e, b, err);
	else {
		r = runtime_stop(e->rt, b->row.name, e->cfg->stop_grace, err);
		if (r >= 0)
			eng_net_box_down(e, b);
		/* Stop = snapshot: freeze what the box changed. */
		if (r >= 0)
			eng_freeze_after_stop(e, b);
	}

	pd_mutex_lock(&e->lock);
	b->busy = false;
	b->state = box_state_finish(prior, action, r >= 0);
	if (action == BOX_ACTION_START)
		metrics_box_start(r >= 0, now_usec() - t0);
	if (r >= 0 && action == BOX_ACTION_START) {
		b->row.last_started = time(NULL);
		/* A new cgroup: its CPU samples start now (timer_main). */
		b->cpu.n = 0;
		e->cpu_sampled_usec = 0;
		pthread_cond_signal(&e->timer_cond);
	}
	if (r >= 0 && action == BOX_ACTION_STOP) {
		b->pid = 0;
		b->lxcfs_gen = 0;
	}
	(void)eng_save_box(e, b, NULL, NULL);
	if (r >= 0)
		eng_emit(e, b, "%s", action == BOX_ACTION_START ? "started" : "stopped");
	log_debug("box %s: %s %s", b->row.name, action == BOX_ACTION_START ? "start" : "stop",
		  r >= 0 ? "done" : err->msg);
	if (r >= 0 && action == BOX_ACTION_START)
		started = b->row.id;
	/* So does its Docker. */
	if (r >= 0 && action == BOX_ACTION_START && eng_box_docker(e, b) && e->cfg->userns &&
	    eng_docker_spawn(e, b, /* adopt= */ false) < 0)
		eng_emit(e, b, "docker not started: cannot start its supervisor");
	/* Its desktop starts with it (the setting outlives stops). */
	if (r >= 0 && action == BOX_ACTION_START && b->row.desktop &&
	    eng_desktop_spawn(e, b, /* adopt= */ false) < 0)
		eng_emit(e, b, "desktop not started: cannot start its supervisor");
out:
	pd_mutex_unlock(&e->lock);
	if (started)
		eng_lxcfs_started(e, started);
	return r < 0 ? r : 0;
}

int engine_box_set_type(struct engine *e, int64_t id, const char *value, pd_error *err)
{
	const struct box_type *type;
	struct box *b;
	char old[NAME_MAX_LEN + 1];
	int r;

	pd_mutex_lock(&e->lock);
	r = eng_claim(e, id, &b, err);
	if (r < 0)
		goto out;
	type = config_find_type(e->cfg, value);
	if (!type) {
		char types[256];
		config_type_names(e->cfg, types, sizeof types);
		r = pd_error_set(err, -EINVAL, "unknown type \"%s\": types are %s", value, types);
		goto out;
	}
	if (strcmp(b->row.type, value) == 0)
		goto out;
	if (b->state == BOX_RUNNING) {
		b->busy = true;
		pd_mutex_unlock(&e->lock);
		r = runtime_update(e->rt, b->row.name, type, err);
		pd_mutex_lock(&e->lock);
		b->busy = false;
		if (r < 0)
			goto out;
	}
	snprintf(old, sizeof old, "%s", b->row.type);
	snprintf(b->row.type, sizeof b->row.type, "%s", value);
	r = eng_save_box(e, b, NULL, err);
	if (r < 0) {
		snprintf(b->row.type, sizeof b->row.type, "%s", old);
		goto out;
	}
	eng_emit(e, b, "type %s", value);
out:
	pd_mutex_unlock(&e->lock);
	return r;
}

int engine_box_set_image(struct engine *e, int64_t id, const char *value, pd_error *err)
{
	char old[NAME_MAX_LEN + 1];
	struct image_info img;
	struct box *b;
	int r;

	pd_mutex_lock(&e->lock);
	r = eng_claim(e, id, &b, err);
	if (r < 0)
		goto out;
	if (!name_valid(value)) {
		r = pd_error_set(err, -EINVAL, "invalid image name \"%s\"", value);
		goto out;
	}
	if (image_get(e->images_dir, value, &img) < 0) {
		r = pd_error_set(err, -ENOENT, "image %s is not installed (see /images)", value);
		goto out;
	}
	if (strcmp(b->row.image, value) == 0)
		goto out;
	if (b->state != BOX_CREATED) {
		r = pd_error_set(err, -EBUSY,
				 "the image can only change before the box first starts (it is %s)",
				 box_state_to_string(b->state));
		goto out;
	}
	snprintf(old, sizeof old, "%s", b->row.image);
	/* The mounts change outside the lock, the box busy meanwhile. */
	b->busy = true;
	snprintf(b->row.image, sizeof b->row.image, "%s", value);
	pd_mutex_unlock(&e->lock);
	eng_umount_root(e, b);
	r = eng_mount_root(e, b, err);
	pd_mutex_lock(&e->lock);
	if (r >= 0)
		r = eng_save_box(e, b, NULL, err);
	if (r < 0) {
		snprintf(b->row.image, sizeof b->row.image, "%s", old);
		pd_mutex_unlock(&e->lock);
		eng_umount_root(e, b);
		(void)eng_mount_root(e, b, NULL);
		pd_mutex_lock(&e->lock);
	}
	b->busy = false;
	if (r >= 0)
		eng_emit(e, b, "image %s", value);
out:
	pd_mutex_unlock(&e->lock);
	return r;
}

int engine_box_set_ttl(struct engine *e, int64_t id, const char *value, pd_error *err)
{
	int64_t secs, old;
	struct box *b;
	int r;

	r = parse_ttl(value, &secs);
	if (r < 0)
		return pd_error_set(err, -EINVAL,
				    "not a TTL: \"%s\" (seconds, with s/m/h/d, or none)", value);
	pd_mutex_lock(&e->lock);
	b = eng_live_box(e, id);
	if (!b) {
		r = eng_box_gone(err);
		goto out;
	}
	old = b->row.expires;
	b->row.expires = secs < 0 ? 0 : (int64_t)time(NULL) + secs;
	b->expire_retry = 0;
	r = eng_save_box(e, b, NULL, err);
	if (r < 0) {
		b->row.expires = old;
		goto out;
	}
	if (secs < 0)
		eng_emit(e, b, "ttl none");
	else
		eng_emit(e, b, "ttl %lld", (long long)secs);
out:
	pd_mutex_unlock(&e->lock);
	/* After the unlock: the timer thread it wakes takes the lock first
	 * thing. */
	if (r >= 0)
		pthread_cond_signal(&e->timer_cond);
	return r;
}

static int box_root(struct engine *e, int64_t id, bool own, char *buf, size_t bufsz)
{
	struct box *b;

	pd_mutex_lock(&e->lock);
	b = eng_live_box(e, id);
	if (b) {
		if (own)
			eng_box_path(e, b, "rootfs", buf, bufsz);
		else
			eng_box_root(e, b, buf, bufsz);
	}
	pd_mutex_unlock(&e->lock);
	return b ? 0 : -ENOENT;
}

int engine_box_root(struct engine *e, int64_t id, char *buf, size_t bufsz)
{
	return box_root(e, id, false, buf, bufsz);
}

int engine_box_rootfs(struct engine *e, int64_t id, char *buf, size_t bufsz)
{
	return box_root(e, id, true, buf, bufsz);
}

/* Seconds before a TTL's stop that failed is tried again. */
#define EXPIRE_RETRY_S 10

/* A box whose TTL ran out while it runs: stopped by id (a box deleted and
 * made again under its name meanwhile is another box, left alone); the
 * name is for the log. */
struct expiry {
	int64_t id;
	char name[NAME_MAX_LEN + 1];
};

/* Fires expired TTLs. Returns the next deadline (0 = none). Engine lock
 * held; stops run after the lock is dropped, by id. A running box's
 * deadline stays recorded until its stop worked (expire_stopped()): a stop
 * that fails, or a daemon killed before it, is tried again. */
static time_t expire_due(struct engine *e, struct expiry **ret_stop, size_t *ret_n)
{
	time_t now = time(NULL), next = 0;
	struct expiry *stop = NULL;
	size_t n = 0;

	for (size_t i = 0; i < e->n_boxes; i++) {
		struct box *b = e->boxes[i];
		time_t at = 0;

		if (!b->row.expires || b->deleting)
			continue;
		if (b->row.expires > now)
			at = (time_t)b->row.expires;
		else if (b->busy)
			at = now + 1; /* mid-start or mid-stop: look again in a second */
		else if (b->expire_retry > now)
			at = b->expire_retry;
		if (at) {
			if (!next || at < next)
				next = at;
			continue;
		}
		if (!b->expire_retry)
			eng_emit(e, b, "expired");
		if (b->state != BOX_RUNNING) {
			b->row.expires = 0;
			b->expire_retry = 0;
			(void)eng_save_box(e, b, NULL, NULL);
			continue;
		}
		struct expiry *ns = reallocarray(stop, n + 1, sizeof *ns);
		if (!ns)
			break;
		stop = ns;
		ns[n].id = b->row.id;
		snprintf(ns[n].name, sizeof ns[n].name, "%s", b->row.name);
		n++;
		b->expire_retry = now + EXPIRE_RETRY_S;
	}
	*ret_stop = stop;
	*ret_n = n;
	return next;
}

/* After the stop of box `id` for its expired TTL: the deadline is done
 * with when it worked (and was not moved meanwhile), else the stop is tried
 * again in EXPIRE_RETRY_S and the failure is in the box's `error`. */
static void expire_stopped(struct engine *e, int64_t id, int r, const pd_error *err)
{
	struct box *b;

	pd_mutex_lock(&e->lock);
	b = eng_live_box(e, id);
	if (b && b->expire_retry) {
		if (r >= 0 || b->state != BOX_RUNNING) {
			/* A failure of an earlier try is over. */
			bool cleared = set_error(b, "ttl", /* err= */ NULL);
			if (b->row.expires && b->row.expires <= time(NULL)) {
				b->row.expires = 0;
				(void)eng_save_box(e, b, NULL, NULL);
			} else if (cleared)
				(void)store_box_update(e->store, &b->row, NULL);
			b->expire_retry = 0;
		} else {
			set_error(b, "ttl", err);
			(void)store_box_update(e->store, &b->row, NULL);
		}
	}
	pd_mutex_unlock(&e->lock);
}

#define CPU_SAMPLE_USEC 1000000ULL

/* Takes a sample of the CPU time of every running box (cpu_percent). The
 * cgroup files are read without the engine lock, which is dropped and
 * taken again. Returns whether a box runs: when none does, no round is due
 * until a start resets cpu_sampled_usec and signals timer_cond. Engine
 * lock held. */
static bool sample_cpu(struct engine *e)
{
	struct cpu_sample {
		int64_t id;
		pid_t pid; /* the same box, not started again meanwhile */
		char name[NAME_MAX_LEN + 1];
		uint64_t at_usec, cpu_usec;
		bool ok;
	};
	_cleanup_free_ struct cpu_sample *s = NULL;
	size_t n = 0;

	e->cpu_sampled_usec = now_usec();
	s = calloc(e->n_boxes ? e->n_boxes : 1, sizeof *s);
	if (!s)
		return true; /* try again in a second */
	for (size_t i = 0; i < e->n_boxes; i++) {
		struct box *b = e->boxes[i];
		if (b->state != BOX_RUNNING || b->deleting) {
			b->cpu.n = 0;
			continue;
		}
		s[n].id = b->row.id;
		s[n].pid = b->pid;
		snprintf(s[n].name, sizeof s[n].name, "%s", b->row.name);
		n++;
	}
	if (!n)
		return false;
	pd_mutex_unlock(&e->lock);
	for (size_t i = 0; i < n; i++) {
		struct cgroup_usage cg;
		s[i].ok = runtime_usage(e->rt, s[i].name, &cg) >= 0;
		s[i].at_usec = now_usec();
		s[i].cpu_usec = cg.cpu_usec;
	}
	pd_mutex_lock(&e->lock);
	for (size_t i = 0; i < n; i++) {
		struct box *b = eng_find_box_id(e, s[i].id);
		if (s[i].ok && b && b->state == BOX_RUNNING && b->pid == s[i].pid)
			cgroup_cpu_add(&b->cpu, s[i].at_usec, s[i].cpu_usec);
	}
	return true;
}

static void *timer_main(void *userdata)
{
	struct engine *e = userdata;
	bool sampling = true;

	pd_mutex_lock(&e->lock);
	while (!e->stopping) {
		struct expiry *stop;
		size_t n;
		time_t next;

		if (now_usec() - e->cpu_sampled_usec >= CPU_SAMPLE_USEC) {
			sampling = sample_cpu(e);
			if (e->stopping)
				break;
		}
		next = expire_due(e, &stop, &n);

		if (n) {
			pd_mutex_unlock(&e->lock);
			for (size_t i = 0; i < n; i++) {
				pd_error err = {0};
				int r = engine_box_set_state(e, stop[i].id, "stopped", &err);
				if (r < 0)
					log_warn("box %s: TTL expired but it could not be stopped "
						 "(tried again in %d s): %s",
						 stop[i].name, EXPIRE_RETRY_S, err.msg);
				else
					log_info("box %s: TTL expired, stopped", stop[i].name);
				expire_stopped(e, stop[i].id, r, &err);
			}
			free(stop);
			pd_mutex_lock(&e->lock);
			continue;
		}
		free(stop);
		if (sampling) {
			/* The next round, or the deadline if it comes first. */
			uint64_t due = e->cpu_sampled_usec + CPU_SAMPLE_USEC, now = now_usec();
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			uint64_t at = (uint64_t)ts.tv_sec * 1000000ULL +
				      (uint64_t)ts.tv_nsec / 1000 + (due > now ? due - now : 0);
			if (!next || (uint64_t)next * 1000000ULL > at) {
				ts.tv_sec = (time_t)(at / 1000000ULL);
				ts.tv_nsec = (long)(at % 1000000ULL) * 1000;
			} else {
				ts.tv_sec = next;
				ts.tv_nsec = 0;
			}
			pd_cond_timedwait(&e->timer_cond, &e->lock, &ts);
		} else if (next) {
			struct timespec ts = {.tv_sec = next, .tv_nsec = 0};
			pd_cond_timedwait(&e->timer_cond, &e->lock, &ts);
		} else
			pd_cond_wait(&e->timer_cond, &e->lock);
	}
	pd_mutex_unlock(&e->lock);
	return NULL;
}

int engine_start_timers(struct engine *e)
{
	int r = pthread_create(&e->timer, NULL, timer_main, e);

	if (r != 0)
		return -r;
	e->timer_started = true;
	eng_desktop_start_all(e);
	eng_docker_start_all(e);
	r = eng_jobs_start(e);
	if (r >= 0 && e->cfg->userns && eng_owners_start(e) < 0)
		log_warn(
		    "cannot watch the boxes' roots (fanotify): files the host writes there keep "
		    "their host owner");
	return r;
}

int engine_box_delete(struct engine *e, int64_t id, pd_error *err)
{
	char trash[4096], name[NAME_MAX_LEN + 1];
	struct box *b;
	int r;

	pd_mutex_lock(&e->lock);
	r = eng_claim(e, id, &b, err);
	if (r < 0) {
		pd_mutex_unlock(&e->lock);
		return r;
	}
	snprintf(name, sizeof name, "%s", b->row.name);
	b->busy = true;
	r = eng_save_box(e, b, "deleting", err);
	if (r < 0) {
		b->busy = false;
		pd_mutex_unlock(&e->lock);
		return r;
	}
	b->deleting = true;
	eng_docker_box_stops(e, b);
	pd_mutex_unlock(&e->lock);

	/* From here the deletion is recorded: a crash is finished at start. */
	r = runtime_stop(e->rt, b->row.name, e->cfg->stop_grace, err);
	if (r < 0) {
		pd_mutex_lock(&e->lock);
		b->busy = false;
		b->deleting = false;
		(void)eng_save_box(e, b, NULL, NULL);
		pd_mutex_unlock(&e->lock);
		return r;
	}
	eng_net_box_down(e, b);
	pd_fault("boxdel-stopped");
	r = trash_box_files(e, b, trash, sizeof trash);
	if (r < 0)
		log_warn("box %s: cannot remove all files: %s", name, strerror(-r));
	if (trash[0])
		pd_fault("boxdel-trashed");

	pd_mutex_lock(&e->lock);
	b->state = BOX_STOPPED;
	(void)store_box_delete(e->store, id, NULL);
	eng_jobs_forget_box(e, id);
	/* The box's own stream is gone with its directory; the global one
	 * records the deletion. */
	if (e->events_fd >= 0) {
		char line[EVENT_LINE_MAX], ts[32];
		format_rfc3339(time(NULL), ts, sizeof ts);
		int n = snprintf(line, sizeof line, "%s %s deleted\n", ts, b->row.name);
		(void)write_all(e->events_fd, line, (size_t)n);
	}
	remove_box(e, b);
	pd_mutex_unlock(&e->lock);
	policy_release(&b->policy);
	eng_dns_forget(b);
	free(b);
	eng_wake(e, 0);
	eng_wake(e, (uint64_t)id);
	if (e->box_hook)
		e->box_hook(e->box_hook_data, ENGINE_BOX_DELETED, name);
	if (trash[0])
		trash_spawn(e, trash);
	/* Its claim on layers went with its row. */
	eng_gc(e, /* at_start= */ false);
	log_debug("box %s deleted", name);
	return 0;
}

void engine_box_record_error(struct engine *e, int64_t id, const char *file, const pd_error *err)
{
	struct box *b;

	pd_mutex_lock(&e->lock);
	b = eng_live_box(e, id);
	/* Keep the marker of an action in flight. */
	if (b && set_error(b, file, err))
		(void)store_box_update(e->store, &b->row, NULL);
	pd_mutex_unlock(&e->lock);
}

int engine_box_usage(struct engine *e, int64_t id, unsigned flags, struct box_usage *ret)
{
	struct cgroup_usage cg = {0};
	struct cgroup_cpu_window cpu;
	struct box_usage u = {0};
	char name[NAME_MAX_LEN + 1];
	struct box *b, files = {0};
	bool running;
	int r;

	pd_mutex_lock(&e->lock);
	b = eng_live_box(e, id);
	if (!b) {
		pd_mutex_unlock(&e->lock);
		return -ENOENT;
	}
	snprintf(name, sizeof name, "%s", b->row.name);
	running = b->state == BOX_RUNNING || b->state == BOX_STOPPING;
	cpu = b->cpu;
	files.row.id = b->row.id; /* all eng_box_path() needs */
	pd_mutex_unlock(&e->lock);
	/* Its image says at once what it holds: a few system calls on its
	 * files (a path lookup, a statfs), outside the lock. A box deleted
	 * meanwhile has no image any more. A directory is walked. */
	r = eng_disk_usage(e, &files, &u.disk_bytes);
	if (r < 0) {
		char upper[4096];
		pd_mutex_lock(&e->lock);
		b = eng_find_box_id(e, files.row.id);
		if (!b || b->deleting)
			r = -ENOENT;
		else {
			eng_box_upper(e, b, upper, sizeof upper);
			r = eng_du_cached(e, box_disk, b->row.id, upper, flags, &u.disk_bytes);
		}
		pd_mutex_unlock(&e->lock);
	}
	if (r < 0)
		return r;
	if (running && runtime_usage(e->rt, name, &cg) >= 0) {
		u.cpu_usec = cg.cpu_usec;
		u.cpu_percent = cgroup_cpu_percent(&cpu, ENGINE_CPU_WINDOW_S * 1000000ULL,
						   1000000ULL, now_usec(), cg.cpu_usec);
		u.memory_bytes = cg.memory_bytes;
		u.pids = cg.pids;
	}
	*ret = u;
	return 0;
}

int engine_box_push_begin(struct engine *e, int64_t id)
{
	struct box *b;
	uint64_t bytes = 0;
	int r = 0;

	pd_mutex_lock(&e->lock);
	b = eng_find_box_id(e, id);
	if (b && !b->deleting && b->disk.pushes == 0) {
		char upper[4096];
		eng_box_upper(e, b, upper, sizeof upper);
		r = eng_du_cached(e, box_disk, id, upper, ENG_DU_CURRENT, &bytes);
		b = eng_find_box_id(e, id); /* the lock was dropped */
	}
	if (!b || b->deleting) {
		r = -ENOENT;
	} else if (r == 0 && b->disk.pushes++ == 0) {
		b->disk.push_base = bytes;
		b->disk.push_held = 0;
		b->disk.push_since_usec = now_usec();
	}
	pd_mutex_unlock(&e->lock);
	return r;
}

int engine_box_push_reserve(struct engine *e, int64_t id, uint64_t limit, uint64_t bytes,
			    uint64_t *ret_used)
{
	struct box *b;
	int r = 0;

	pd_mutex_lock(&e->lock);
	b = eng_find_box_id(e, id);
	if (!b || b->deleting || b->disk.pushes == 0) {
		r = -ENOENT;
	} else {
		uint64_t used = b->disk.push_base + b->disk.push_held;
		*ret_used = used;
		if (bytes > limit || used > limit - bytes)
			r = -ENOSPC;
		else
			b->disk.push_held += bytes;
	}
	pd_mutex_unlock(&e->lock);
	return r;
}

void engine_box_push_end(struct engine *e, int64_t id, uint64_t held, int result)
{
	struct box *b;

	pd_mutex_lock(&e->lock);
	b = eng_find_box_id(e, id);
	if (b && b->disk.pushes > 0) {
		struct du_cache *c = &b->disk;

		c->push_held -= held < c->push_held ? held : c->push_held;
		c->push_base += held; /* one that failed may have merged some */
		if (result != 0)
			c->push_ended_usec = now_usec();
		/* The last of a run of pushes: with no walk since it began, that
		 * walk's figure plus what they wrote stands for the disk until
		 * the next walk; else the next reader walks. */
		if (--c->pushes == 0) {
			if (!c->walking && c->checked_usec && c->checked_usec < c->push_since_usec)
				c->bytes = c->push_base;
			else
				c->push_ended_usec = now_usec();
		}
	}
	pd_mutex_unlock(&e->lock);
}

int engine_box_limits(struct engine *e, int64_t id, struct cgroup_limits *ret)
{
	struct box_view v;
	int r = engine_box_get_by_id(e, id, &v);

	if (r < 0)
		return r;
	return runtime_limits(e->rt, v.name, ret);
}

int engine_events_open(struct engine *e, uint64_t key)
{
	char path[4096];
	int fd;

	if (key == 0) {
		fd = open(e->events_path, O_RDONLY | O_CLOEXEC);
		return fd < 0 ? -errno : fd;
	}
	pd_mutex_lock(&e->lock);
	struct box *b = eng_find_box_id(e, (int64_t)key);
	if (!b || b->deleting) {
		pd_mutex_unlock(&e->lock);
		return -ENOENT;
	}
	eng_box_path(e, b, "events", path, sizeof path);
	fd = open(path, O_RDONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		fd = -errno;
	pd_mutex_unlock(&e->lock);
	return fd;
}

bool engine_events_live(struct engine *e, uint64_t key)
{
	bool live;

	if (key == 0)
		return true;
	pd_mutex_lock(&e->lock);
	struct box *b = eng_find_box_id(e, (int64_t)key);
	live = b && !b->deleting;
	pd_mutex_unlock(&e->lock);
	return live;
}

/* --- start-up ---------------------------------------------------------------- */

/* Views in RUN/roots of boxes that are no more (a crash between making
 * and recording, a deletion interrupted): unmounted and removed. At
 * start, after reconcile(), before any other thread runs. */
static void clear_stray_views(struct engine *e)
{
	DIR *d = opendir(e->roots_dir);
	struct dirent *de;
	char path[4096];

	while (d && (de = readdir(d))) {
		char *end;
		long long id = strtoll(de->d_name, &end, 10);
		if (de->d_name[0] == '.' || (*end == '\0' && eng_find_box_id(e, id)))
			continue;
		snprintf(path, sizeof path, "%s/%s", e->roots_dir, de->d_name);
		eng_unbind_view(path);
		(void)rmdir(path);
	}
	if (d)
		closedir(d);
}

/* Brings one recorded box in line with reality after a restart or crash. */
static int reconcile(const struct box_row *row, void *userdata)
{
	struct engine *e = userdata;
	enum runtime_status st = RUNTIME_ABSENT;
	struct box *b;
	pid_t pid = 0;
	pd_error err = {0};

	b = calloc(1, sizeof *b);
	if (!b)
		return -ENOMEM;
	b->row = *row;

	if (strcmp(row->state, "creating") == 0 || strcmp(row->state, "deleting") == 0) {
		/* Roll back a half-made box; finish a half-deleted one. Not
		 * while crun cannot say whether its container runs: the row
		 * and the files stay, hidden, for the next start. */
		if (runtime_stop(e->rt, row->name, 0, &err) < 0) {
			log_error("box %s: %s interrupted by a crash, not finished: %s", row->name,
				  row->state[0] == 'c' ? "creation" : "deletion", err.msg);
			free(b);
			return 0;
		}
		remove_box_files(e, b);
		store_box_delete(e->store, row->id, NULL);
		log_info("box %s: %s interrupted by a crash: %s", row->name,
			 row->state[0] == 'c' ? "creation" : "deletion",
			 row->state[0] == 'c' ? "rolled back" : "finished");
		free(b);
		return 0;
	}

	if (runtime_status(e->rt, row->name, &st, &pid, &err) < 0) {
		/* crun failed otherwise than "no such container": what runs is
		 * unknown, so the recorded state stands (a box caught mid-start
		 * or mid-stop counts as running: its container may be there),
		 * and the reason goes to its error file. A stop or a delete
		 * fails the same way until crun answers again. */
		enum box_state recorded = box_state_from_string(row->state);
		b->state =
		    recorded == BOX_CREATED || recorded == BOX_STOPPED ? recorded : BOX_RUNNING;
		log_warn("box %s: state unknown, stays %s: %s", row->name,
			 box_state_to_string(b->state), err.msg);
		set_error(b, "state", &err);
		goto loaded;
	}
	if (st == RUNTIME_PAUSED) {
		/* Paused for a snapshot when the daemon died: never leave a
		 * box frozen. */
		if (runtime_resume(e->rt, row->name, &err) < 0)
			log_warn("box %s: %s", row->name, err.msg);
		else
			log_info("box %s: resumed (it was paused for a snapshot)", row->name);
		st = RUNTIME_RUNNING;
	}
	{
		/* Leftover of a restore that committed (the old upper). */
		char old[4096];
		eng_box_path(e, b, "upper.old", old, sizeof old);
		(void)rm_rf(old);
		eng_box_path(e, b, "disk.img.old", old, sizeof old);
		(void)rm_rf(old);
	}
	if (st == RUNTIME_RUNNING) {
		b->state = BOX_RUNNING;
		b->pid = pid;
	} else {
		if (st == RUNTIME_STOPPED && runtime_stop(e->rt, row->name, 0, &err) < 0)
			log_warn("box %s: %s", row->name, err.msg);
		b->state = b->row.last_started ? BOX_STOPPED : BOX_CREATED;
	}
loaded:
	if (eng_mount_root(e, b, &err) < 0)
		log_warn("box %s: %s", row->name, err.msg);
	eng_net_load_policy(e, b);
	eng_ports_load(e, b);
	if (eng_add_box(e, b) < 0) {
		policy_release(&b->policy);
		free(b);
		return -ENOMEM;
	}
	if (strcmp(row->state, box_state_to_string(b->state)) != 0) {
		log_info("box %s: was %s, is %s", row->name, row->state,
			 box_state_to_string(b->state));
		(void)eng_save_box(e, b, NULL, NULL);
		if (b->state == BOX_STOPPED && strcmp(row->state, "running") == 0)
			eng_emit(e, b, "stopped (its container ended while paddockd was down)");
	} else if (b->state == BOX_RUNNING && pid)
		log_info("box %s: adopted running container (pid %d)", row->name, (int)pid);
	return 0;
}

int engine_new(const struct pd_config *cfg, const char *init_path, struct engine **ret,
	       pd_error *err)
{
	return engine_new_on(cfg, init_path, /* rt= */ NULL, ret, err);
}

int engine_new_on(const struct pd_config *cfg, const char *init_path, struct runtime *rt,
		  struct engine **ret, pd_error *err)
{
	struct engine *e;
	char path[4096];
	int r;

	e = calloc(1, sizeof *e);
	if (!e)
		return pd_error_set(err, -ENOMEM, "out of memory");
	pd_mutex_init(&e->lock, LOCK_RANK_ENGINE, LOCK_NO_SLOW, "engine lock");
	pd_mutex_init(&e->gc_lock, LOCK_RANK_ENGINE_GC, 0, "engine gc_lock");
	pd_mutex_init(&e->wake_lock, LOCK_RANK_ENGINE_WAKE, 0, "engine wake_lock");
	pthread_cond_init(&e->timer_cond, NULL);
	{
		pthread_condattr_t ca;
		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&e->du_cond, &ca);
		pthread_cond_init(&e->desk_cond, &ca);
		pthread_condattr_destroy(&ca);
	}
	pthread_cond_init(&e->trash_cond, NULL);
	pthread_cond_init(&e->exports_cond, NULL);
	e->cfg = cfg;
	e->events_fd = -1;
	e->inotify_fd = -1;
	e->owners_fd = e->owners_stop = e->owners_flush = -1;
	e->inotify_stop = -1;
	{
		pd_error aerr = {0};
		/* A missing group leaves root alone allowed (access.h). */
		if (access_init(cfg->group, &e->access, &aerr) < 0)
			log_warn("%s", aerr.msg);
	}
	if (asprintf(&e->images_dir, "%s/images", cfg->data) < 0 ||
	    asprintf(&e->boxes_dir, "%s/boxes", cfg->data) < 0 ||
	    asprintf(&e->events_path, "%s/events", cfg->data) < 0 ||
	    asprintf(&e->layers_dir, "%s/layers", cfg->data) < 0 ||
	    asprintf(&e->snapmnt_dir, "%s/snapshots", cfg->run) < 0 ||
	    asprintf(&e->roots_dir, "%s/roots", cfg->run) < 0 ||
	    asprintf(&e->trash_dir, "%s/trash", cfg->data) < 0) {
		r = pd_error_set(err, -ENOMEM, "out of memory");
		goto fail;
	}
	r = mkdir_p(e->boxes_dir, 0700);
	if (r >= 0)
		r = mkdir_p(e->images_dir, 0755);
	if (r >= 0)
		r = mkdir_p(e->layers_dir, 0700);
	if (r >= 0)
		r = mkdir_p(e->snapmnt_dir, 0755);
	if (r >= 0)
		r = mkdir_p(e->roots_dir, 0755);
	if (r >= 0)
		r = mkdir_p(e->trash_dir, 0700);
	if (r >= 0) {
		char stage[4096];
		snprintf(stage, sizeof stage, "%s/boxes", cfg->run);
		r = mkdir_p(stage, 0711);
		if (r >= 0 && chmod(stage, 0711) < 0)
			r = -errno;
	}
	if (r < 0) {
		pd_error_set(err, r, "cannot create %s: %s", cfg->data, strerror(-r));
		goto fail;
	}
	e->events_fd = open(e->events_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (e->events_fd < 0) {
		r = pd_error_set(err, -errno, "cannot open %s: %s", e->events_path,
				 strerror(errno));
		goto fail;
	}
	snprintf(path, sizeof path, "%s/paddock.db", cfg->data);
	r = store_open(path, &e->store, err);
	if (r < 0)
		goto fail;
	store_set_user_ids(e->store, cfg->user_ids_first, cfg->userns ? cfg->user_ids_count : 0);
	{
		pd_error gerr = {0};
		if (store_open_reader(path, &e->gc_store, &gerr) < 0)
			log_warn("layer collection reads under the engine lock: %s", gerr.msg);
		else
			/* The collector checkpoints outside the lock (eng_gc());
			 * a commit under it only when the log grows past 16 MiB
			 * without one. */
			store_set_autocheckpoint(e->store, 4000);
	}
	/* After the store: the database is migrated by now. */
	r = auth_new(path, &(struct auth_options){.token_ttl = cfg->token_ttl}, &e->auth, err);
	if (r < 0)
		goto fail;
	r = eng_secrets_init(e, err);
	if (r < 0)
		goto fail;
	e->rt = rt;
	e->rt_borrowed = rt != NULL;
	r = rt ? 0 : runtime_crun_new(cfg, init_path, &e->rt, err);
	if (r < 0)
		goto fail;
	r = eng_net_init(e, err);
	if (r < 0)
		goto fail;
	r = eng_disk_init(e, err);
	if (r < 0)
		goto fail;
	/* Start-up runs without the engine lock: the engine is not shared
	 * yet and runs no thread of its own until the boxes' resolver starts,
	 * last. So the slow work of recovery (crun, removing leftovers) may
	 * run here, which the lock forbids (lock.h). Half-done layer actions
	 * first: they decide each box's stack. */
	r = eng_intents_recover(e);
	if (r >= 0)
		r = store_box_foreach(e->store, reconcile, e);
	if (r >= 0)
		clear_stray_views(e);
	if (r >= 0)
		r = eng_jobs_load(e);
	if (r < 0) {
		pd_error_set(err, r, "cannot load boxes: %s", strerror(-r));
		goto fail;
	}
	r = eng_net_reconcile(e, err);
	if (r < 0)
		goto fail;
	eng_gc(e, /* at_start= */ true);
	trash_empty(e);
	/* After the boxes: deleted boxes no longer hold their volumes. */
	r = eng_volumes_load(e, err);
	if (r < 0)
		goto fail;
	eng_volumes_reconcile(e);
	r = eng_net_dns_start(e, err);
	if (r < 0)
		goto fail;
	eng_lxcfs_start(e);
	*ret = e;
	return 0;
fail:
	engine_free(e);
	return r;
}

struct engine *engine_free(struct engine *e)
{
	if (!e)
		return NULL;
	exports_wait(e);
	eng_desktop_stop_all(e);
	eng_docker_stop_all(e);
	if (e->timer_started) {
		pd_mutex_lock(&e->lock);
		e->stopping = true;
		pthread_cond_signal(&e->timer_cond);
		pd_mutex_unlock(&e->lock);
		pthread_join(e->timer, NULL);
	}
	trash_wait(e);
	eng_lxcfs_stop(e);
	eng_dns_stop(e);
	eng_owners_stop(e);
	eng_jobs_stop(e);
	if (e->snapmnt_dir)
		eng_snapshot_mounts_clear(e);
	for (size_t i = 0; i < e->n_boxes; i++) {
		policy_release(&e->boxes[i]->policy);
		eng_dns_forget(e->boxes[i]);
		free(e->boxes[i]);
	}
	free(e->boxes);
	hmap_free(&e->by_name);
	hmap_free(&e->by_id);
	eng_volumes_free(e);
	for (size_t i = 0; i < e->n_snap_exports; i++)
		free(e->snap_exports[i]);
	free(e->snap_exports);
	if (!e->rt_borrowed)
		runtime_free(e->rt);
	auth_free(e->auth);
	eng_secrets_free(e);
	store_close(e->gc_store);
	store_close(e->store);
	if (e->events_fd >= 0)
		close(e->events_fd);
	free(e->images_dir);
	free(e->boxes_dir);
	free(e->layers_dir);
	eng_disk_free(e);
	free(e->snapmnt_dir);
	free(e->roots_dir);
	free(e->trash_dir);
	free(e->events_path);
	pd_mutex_destroy(&e->lock);
	pd_mutex_destroy(&e->gc_lock);
	pd_mutex_destroy(&e->wake_lock);
	pthread_cond_destroy(&e->timer_cond);
	pthread_cond_destroy(&e->du_cond);
	pthread_cond_destroy(&e->desk_cond);
	pthread_cond_destroy(&e->trash_cond);
	pthread_cond_destroy(&e->exports_cond);
	free(e);
	return NULL;
}

void engine_set_wake(struct engine *e, engine_wake_fn fn, void *userdata)
{
	pd_mutex_lock(&e->wake_lock);
	e->wake[0].fn = fn;
	e->wake[0].data = userdata;
	pd_mutex_unlock(&e->wake_lock);
}

int engine_add_wake(struct engine *e, engine_wake_fn fn, void *userdata)
{
	int r = -ENOSPC;

	pd_mutex_lock(&e->wake_lock);
	for (size_t i = 1; i < ENGINE_WAKE_MAX; i++)
		if (!e->wake[i].fn) {
			e->wake[i].fn = fn;
			e->wake[i].data = userdata;
			r = 0;
			break;
		}
	pd_mutex_unlock(&e->wake_lock);
	return r;
}

void engine_remove_wake(struct engine *e, engine_wake_fn fn, void *userdata)
{
	pd_mutex_lock(&e->wake_lock);
	for (size_t i = 1; i < ENGINE_WAKE_MAX; i++)
		if (e->wake[i].fn == fn && e->wake[i].data == userdata)
			e->wake[i].fn = NULL;
	pd_mutex_unlock(&e->wake_lock);
}

void engine_set_box_hook(struct engine *e, engine_box_fn fn, void *userdata)
{
	e->box_hook = fn;
	e->box_hook_data = userdata;
}

const struct pd_config *engine_config(const struct engine *e)
{
	return e->cfg;
}

enum cgroup_mode engine_cgroup_mode(const struct engine *e)
{
	return runtime_cgroup_mode(e->rt);
}

const char *engine_images_dir(const struct engine *e)
{
	return e->images_dir;
}

struct auth *engine_auth(struct engine *e)
{
	return e->auth;
}

const struct pd_access *engine_access(const struct engine *e)
{
	return &e->access;
}
