/* engine-disk.c - the disk limit: a box's writable layer (its upper and
 * overlay's work directory) in an ext4 image of its type's `disk` size
 * (diskimg.h; docs/disk-limit.md has the design and the measurements).
 *
 *   DATA/boxes/ID/disk.img   the image, a sparse copy of the type's
 *                            template (DATA/disk-templates)
 *   DATA/boxes/ID/disk/      where it is mounted (read-write, one writer)
 *   DATA/boxes/ID/disk/upper, disk/work   overlay's upperdir and workdir
 *
 * A freeze renames disk.img into the layer (DATA/layers/L<ID>, a regular
 * file where a directory layer is a directory) and the box gets a fresh
 * copy: O(1) whatever the box holds. Frozen images are mounted read-only,
 * once each, at RUN/layers/L<ID> when a stack needs them; overlay keeps
 * its own clone of each lower, so those mounts may go at any time (at gc,
 * at start).
 *
 * A box whose upper is a plain directory (made before this, or with
 * `disk_limit = off`) keeps it, without a limit, until its next freeze:
 * then its files become a layer as always and its new writable layer is
 * an image. Nothing is copied, nothing is lost.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/config.h"
#include "runtime/diskimg.h"
#include "engine/internal.h"
#include "common/log.h"
#include "common/util.h"

bool eng_box_has_image(const struct engine *e, const struct box *b)
{
	char p[4096];

	eng_box_path(e, b, "disk.img", p, sizeof p);
	return access(p, F_OK) == 0;
}

void eng_box_upper(const struct engine *e, const struct box *b, char *buf, size_t bufsz)
{
	eng_box_path(e, b, eng_box_has_image(e, b) ? "disk/upper" : "upper", buf, bufsz);
}

void eng_box_work(const struct engine *e, const struct box *b, char *buf, size_t bufsz)
{
	eng_box_path(e, b, eng_box_has_image(e, b) ? "disk/work" : "work", buf, bufsz);
}

/* The template for the box's type (made now if it is missing), or -errno
 * when the box gets no image: the limit is off, its type is gone. */
static int box_template(struct engine *e, const struct box *b, char *buf, size_t bufsz,
			pd_error *err)
{
	const struct box_type *t;

	if (!e->disk_images)
		return pd_error_set(err, -EOPNOTSUPP, "disk limits are off");
	t = config_find_type(e->cfg, b->row.type);
	if (!t)
		return pd_error_set(err, -ENOENT, "type %s is not defined", b->row.type);
	return diskimg_template(e->templates_dir, t->disk, buf, bufsz, err);
}

int eng_disk_init(struct engine *e, pd_error *err)
{
	char t[4096];
	pd_error terr = {0};

	if (asprintf(&e->templates_dir, "%s/disk-templates", e->cfg->data) < 0 ||
	    asprintf(&e->layermnt_dir, "%s/layers", e->cfg->run) < 0)
		return pd_error_set(err, -ENOMEM, "out of memory");
	if (mkdir_p(e->layermnt_dir, 0700) < 0)
		return pd_error_set(err, -errno, "cannot create %s: %s", e->layermnt_dir,
				    strerror(errno));
	/* A former daemon's mounts of image layers: made again where a
	 * stack needs them (boxes adopted running hold clones of theirs). */
	eng_layer_mounts_clear(e);
	e->disk_images = e->cfg->disk_limit;
	if (!e->disk_images)
		return 0;
	if (access("/dev/loop-control", R_OK | W_OK) < 0) {
		log_warn("disk limits are not enforced: no /dev/loop-control (%s)",
			 strerror(errno));
		e->disk_images = false;
		return 0;
	}
	/* Every type's template now, so that making a box only copies. */
	for (size_t i = 0; i < e->cfg->n_types; i++)
		if (diskimg_template(e->templates_dir, e->cfg->types[i].disk, t, sizeof t, &terr) <
		    0) {
			log_warn("disk limits are not enforced: type %s: %s", e->cfg->types[i].name,
				 terr.msg);
			e->disk_images = false;
			return 0;
		}
	return 0;
}

void eng_disk_free(struct engine *e)
{
	free(e->templates_dir);
	free(e->layermnt_dir);
}

/* A plain directory upper, as before images (limit off). */
static int make_dir_upper(struct engine *e, struct box *b, uint32_t base, pd_error *err)
{
	char p[4096];

	eng_box_path(e, b, "work", p, sizeof p);
	if (mkdir(p, 0700) < 0 && errno != EEXIST)
		return pd_error_set(err, -errno, "cannot create %s: %s", p, strerror(errno));
	eng_box_path(e, b, "upper", p, sizeof p);
	if (mkdir(p, 0755) < 0 && errno != EEXIST)
		return pd_error_set(err, -errno, "cannot create %s: %s", p, strerror(errno));
	/* The upper becomes the box's "/": it must look like one, owned by
	 * the box's root, which records the range (idmap.h). */
	if (chmod(p, 0755) < 0 || lchown(p, base, base) < 0)
		return pd_error_set(err, -errno, "cannot prepare %s: %s", p, strerror(errno));
	return 0;
}

int eng_make_writable(struct engine *e, struct box *b, uint32_t base, pd_error *err)
{
	char t[4096], img[4096], tmp[4096], mnt[4096], up[4096];
	pd_error terr = {0};
	int r;

	eng_box_path(e, b, "disk.img", img, sizeof img);
	eng_box_path(e, b, "upper", up, sizeof up);
	/* Already there (a recovery that redoes this step): kept. */
	if (access(img, F_OK) == 0 || access(up, F_OK) == 0)
		return 0;
	if (box_template(e, b, t, sizeof t, &terr) < 0) {
		if (e->disk_images)
			log_warn("box %s: no disk limit: %s", b->row.name, terr.msg);
		return make_dir_upper(e, b, base, err);
	}
	eng_box_path(e, b, "disk", mnt, sizeof mnt);
	if (mkdir(mnt, 0700) < 0 && errno != EEXIST)
		return pd_error_set(err, -errno, "cannot create %s: %s", mnt, strerror(errno));
	eng_box_path(e, b, "disk.img.tmp", tmp, sizeof tmp);
	(void)unlink(tmp);
	r = diskimg_copy(t, tmp, err);
	if (r < 0)
		return r;
	pd_fault("disk-copied");
	if (rename(tmp, img) < 0) {
		r = pd_error_set(err, -errno, "cannot store %s: %s", img, strerror(errno));
		(void)unlink(tmp);
		return r;
	}
	return 0;
}

int eng_mount_disk(struct engine *e, struct box *b, pd_error *err)
{
	char img[4096], mnt[4096];
	int r;

	if (!eng_box_has_image(e, b))
		return 0;
	eng_box_path(e, b, "disk.img", img, sizeof img);
	eng_box_path(e, b, "disk", mnt, sizeof mnt);
	r = diskimg_mounted_from(mnt, img);
	if (r == 0) {
		/* Another image (an old one, renamed while it was held): it
		 * must go before this one may come. */
		if (diskimg_umount(mnt) < 0)
			return pd_error_set(err, -EBUSY,
					    "an old disk of box %s is still mounted and in use",
					    b->row.name);
		r = -ENOTCONN;
	}
	if (r == -ENOTCONN) {
		if (mkdir(mnt, 0700) < 0 && errno != EEXIST)
			return pd_error_set(err, -errno, "cannot create %s: %s", mnt,
					    strerror(errno));
		r = diskimg_mount(img, mnt, false, err);
		if (r < 0)
			return pd_error_prefix(err, "box %s", b->row.name);
		pd_fault("disk-mounted");
	} else if (r < 0)
		return pd_error_set(err, r, "cannot read %s: %s", mnt, strerror(-r));
	/* A fresh image's upper becomes the box's root's (its range). */
	r = diskimg_claim(mnt, (uint32_t)(b->row.uid_base > 0 ? b->row.uid_base : 0));
	if (r < 0)
		return pd_error_set(err, r, "cannot prepare the disk of box %s: %s", b->row.name,
				    strerror(-r));
	return 0;
}

int eng_umount_disk(struct engine *e, struct box *b)
{
	char mnt[4096];

	eng_box_path(e, b, "disk", mnt, sizeof mnt);
	return diskimg_umount(mnt);
}

int eng_disk_seal(struct engine *e, struct box *b)
{
	char img[4096], mnt[4096];

	if (!eng_box_has_image(e, b))
		return 0;
	eng_box_path(e, b, "disk.img", img, sizeof img);
	eng_box_path(e, b, "disk", mnt, sizeof mnt);
	if (diskimg_mounted_from(mnt, img) != 1)
		return 0; /* unmounted: nothing more will be written */
	/* Read-only from here: every write of the box on the image, the
	 * journal committed. -EBUSY while a file is open for writing. */
	if (mount(NULL, mnt, NULL, MS_REMOUNT | MS_RDONLY | MS_NODEV | MS_NOSUID, NULL) < 0)
		return -errno;
	return 1;
}

void eng_disk_unseal(struct engine *e, struct box *b)
{
	char mnt[4096];

	eng_box_path(e, b, "disk", mnt, sizeof mnt);
	if (diskimg_is_mount(mnt) == 1 &&
	    mount(NULL, mnt, NULL, MS_REMOUNT | MS_NODEV | MS_NOSUID, "noinit_itable") < 0)
		log_warn("box %s: its disk stays read-only: %s", b->row.name, strerror(errno));
}

static void layer_mnt(const struct engine *e, int64_t id, char *buf, size_t bufsz);

void eng_disk_to_layer(struct engine *e, struct box *b, int64_t id)
{
	struct mount_attr attr = {.attr_set =
				      MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV};
	char mnt[4096], dst[4096];
	_cleanup_close_ int fd = -1;

	eng_box_path(e, b, "disk", mnt, sizeof mnt);
	if (diskimg_is_mount(mnt) != 1)
		return;
	layer_mnt(e, id, dst, sizeof dst);
	/* The sealed filesystem, kept where the layer's stacks look for it:
	 * its cache stays warm and nothing is evicted (an unmount of 1 GB of
	 * changes costs tens of ms). A copy of the mount, not a move: a move
	 * from under a shared mount is refused. */
	if ((mkdir(dst, 0700) == 0 || errno == EEXIST) && diskimg_is_mount(dst) == 0) {
		fd = open_tree(AT_FDCWD, mnt, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
		if (fd < 0 || mount_setattr(fd, "", AT_EMPTY_PATH, &attr, sizeof attr) < 0 ||
		    move_mount(fd, "", AT_FDCWD, dst, MOVE_MOUNT_F_EMPTY_PATH) < 0)
			log_debug("box %s: layer %lld mounted again later: %s", b->row.name,
				  (long long)id, strerror(errno));
	}
	if (diskimg_umount(mnt) < 0)
		log_warn("box %s: its old disk stays mounted: %s", b->row.name, strerror(errno));
}

void eng_umount_disk_lazy(struct engine *e, struct box *b)
{
	char mnt[4096];

	eng_box_path(e, b, "disk", mnt, sizeof mnt);
	if (diskimg_umount(mnt) < 0)
		while (umount2(mnt, MNT_DETACH | UMOUNT_NOFOLLOW) == 0)
			;
}

int eng_disk_usage(struct engine *e, const struct box *b, uint64_t *ret)
{
	char img[4096], mnt[4096];
	uint64_t total;

	if (!eng_box_has_image(e, b))
		return -ENOENT;
	eng_box_path(e, b, "disk.img", img, sizeof img);
	eng_box_path(e, b, "disk", mnt, sizeof mnt);
	if (diskimg_mounted_from(mnt, img) != 1)
		return -ENOENT;
	return diskimg_usage(mnt, ret, &total);
}

bool eng_dir_empty(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *de;
	bool empty = true;

	if (!d)
		return false;
	while (empty && (de = readdir(d)))
		empty = strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0;
	closedir(d);
	return empty;
}

int eng_disk_resize(struct engine *e, struct box *b, pd_error *err)
{
	char t[4096], img[4096], up[4096], tmp[4096];
	struct stat ts, is;
	pd_error terr = {0};
	bool empty;
	int r;

	if (!eng_box_has_image(e, b) || box_template(e, b, t, sizeof t, &terr) < 0)
		return 0;
	eng_box_path(e, b, "disk.img", img, sizeof img);
	if (stat(t, &ts) < 0 || stat(img, &is) < 0 || ts.st_size == is.st_size)
		return 0;
	/* Holding none of the box's files (a box made with another type, a
	 * fresh image after a freeze): a copy of the new template replaces
	 * it, whatever the sizes (resize2fs cannot shrink a large empty
	 * filesystem much: its inode tables stay). */
	eng_box_path(e, b, "disk/upper", up, sizeof up);
	empty = eng_dir_empty(up); /* false when not mounted */
	/* Offline only (ext4 refuses to grow these online): its root goes
	 * for the time of the resize. */
	r = eng_umount_root_strict(e, b);
	if (r >= 0)
		r = eng_umount_disk(e, b);
	if (r < 0)
		return pd_error_set(err, r,
				    "its disk cannot change size while its root is in use on the "
				    "host; it keeps %" PRIu64 " bytes",
				    (uint64_t)is.st_size);
	if (empty) {
		eng_box_path(e, b, "disk.img.tmp", tmp, sizeof tmp);
		(void)unlink(tmp);
		r = diskimg_copy(t, tmp, err);
		if (r >= 0 && rename(tmp, img) < 0)
			r = pd_error_set(err, -errno, "cannot store %s: %s", img, strerror(errno));
		if (r < 0) {
			(void)unlink(tmp);
			return pd_error_prefix(err, "its disk keeps %" PRIu64 " bytes",
					       (uint64_t)is.st_size);
		}
		log_info("box %s: empty disk replaced by one of %" PRIu64 " bytes (type %s)",
			 b->row.name, (uint64_t)ts.st_size, b->row.type);
		return 1;
	}
	r = diskimg_resize(img, (uint64_t)ts.st_size, err);
	if (r < 0)
		return pd_error_prefix(err, "its disk keeps %" PRIu64 " bytes",
				       (uint64_t)is.st_size);
	log_info("box %s: disk resized from %" PRIu64 " to %" PRIu64 " bytes (type %s)",
		 b->row.name, (uint64_t)is.st_size, (uint64_t)ts.st_size, b->row.type);
	return 1;
}

/* --- frozen layers ----------------------------------------------------------- */

static void layer_mnt(const struct engine *e, int64_t id, char *buf, size_t bufsz)
{
	snprintf(buf, bufsz, "%s/L%lld", e->layermnt_dir, (long long)id);
}

int eng_layer_dir(const struct engine *e, int64_t id, char *buf, size_t bufsz, pd_error *err)
{
	char path[4096], mnt[4096];
	struct stat st;
	int r;

	snprintf(path, sizeof path, "%s/L%lld", e->layers_dir, (long long)id);
	if (lstat(path, &st) < 0 || !S_ISREG(st.st_mode)) {
		snprintf(buf, bufsz, "%s", path);
		return 0;
	}
	layer_mnt(e, id, mnt, sizeof mnt);
	if (mkdir(mnt, 0700) < 0 && errno != EEXIST)
		return pd_error_set(err, -errno, "cannot create %s: %s", mnt, strerror(errno));
	if (diskimg_mounted_from(mnt, path) != 1) {
		(void)diskimg_umount(mnt);
		r = diskimg_mount(path, mnt, true, err);
		if (r < 0)
			return pd_error_prefix(err, "layer %lld", (long long)id);
	}
	snprintf(buf, bufsz, "%s/upper", mnt);
	return 0;
}

void eng_layer_umount(const struct engine *e, int64_t id)
{
	char mnt[4096];

	layer_mnt(e, id, mnt, sizeof mnt);
	/* Overlays hold clones of their lowers: this one goes at once. */
	if (diskimg_umount(mnt) < 0)
		while (umount2(mnt, MNT_DETACH | UMOUNT_NOFOLLOW) == 0)
			;
	(void)rmdir(mnt);
}

void eng_layer_mounts_clear(const struct engine *e)
{
	DIR *d = opendir(e->layermnt_dir);
	struct dirent *de;
	long long id;

	while (d && (de = readdir(d)))
		if (sscanf(de->d_name, "L%lld", &id) == 1)
			eng_layer_umount(e, id);
	if (d)
		closedir(d);
}
