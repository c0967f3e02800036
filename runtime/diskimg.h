/* diskimg.h - per-box ext4 images: the building block of the disk limit.
 *
 * Where the data directory's filesystem has no project quotas, a box's
 * writable layer lives in a sparse ext4 image of the type's `disk` size,
 * loop mounted: writes past it fail with ENOSPC, and statfs of an overlay
 * whose upper is on it reports the image (docs/disk-limit.md has the
 * design and the measurements behind it).
 *
 * Images are never made by mkfs per box: a template per size is made once
 * (diskimg_template()) and each box gets a sparse copy of it
 * (diskimg_copy(), a few ms whatever the size). Loop devices are set up
 * with autoclear: the device goes away with the last unmount, so nothing
 * but the mount itself needs cleaning up.
 *
 * All of these do I/O and may take tens of milliseconds (a template:
 * hundreds): never under the engine lock (lock.h).
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "common/error.h"

/* The smallest image: below it ext4's own metadata would leave next to
 * nothing. A smaller `disk` gets this much (pushes still count against
 * the type's own figure: web/http-root.c). */
#define DISKIMG_MIN_BYTES (16ull << 20)

/* The mode of a fresh image's upper/, root's: not yet claimed by a box.
 * The first mount for a box gives it to the box's root (diskimg_claim()),
 * so a copy needs no mount to be made. */
#define DISKIMG_UNCLAIMED_MODE (S_ISVTX | 0700)

/* The next size to try for a template meant to show `disk` bytes in
 * statfs (f_blocks * f_bsize), when an image of `tried` bytes showed
 * `got`: larger by what was missing, rounded up to a MiB. Returns `tried`
 * when it was enough. Pure. */
uint64_t diskimg_next_size(uint64_t disk, uint64_t tried, uint64_t got);

/* "DIR/ext4-<disk>.img". Returns 0 or -ENAMETOOLONG. */
int diskimg_template_path(const char *dir, uint64_t disk, char *buf, size_t bufsz);

/* Makes (unless there is one) the template for `disk` (at least
 * DISKIMG_MIN_BYTES) in dir: mkfs.ext4
 * into a temporary file, grown until its filesystem shows at least `disk`
 * bytes, fsynced and renamed: a crash leaves no template or a whole one
 * (and a ".tmp" that the next call replaces). Its path in ret. */
int diskimg_template(const char *dir, uint64_t disk, char *ret, size_t retsz, pd_error *err);

/* A sparse copy of src at dst (which must not exist), fsynced: only the
 * blocks src has are copied (SEEK_DATA/SEEK_HOLE, copy_file_range). On
 * failure dst is removed. */
int diskimg_copy(const char *src, const char *dst, pd_error *err);

/* Loop mounts image img at dir (nodev, nosuid; read-only and without
 * journal replay when ro). The loop device clears itself on unmount. One
 * image, one filesystem: when a loop device still carries img (a mount in
 * another namespace, a lazy unmount still held), that filesystem is
 * mounted again rather than a second one made. */
int diskimg_mount(const char *img, const char *dir, bool ro, pd_error *err);

/* 1 when dir is a mount point, 0 when not, or -errno. */
int diskimg_is_mount(const char *dir);

/* 1 when what is mounted at dir is image img (through a loop device), 0
 * when something else is, -ENOTCONN when nothing is, or -errno. */
int diskimg_mounted_from(const char *dir, const char *img);

/* The number of a loop device bound to img, or -ENOENT. */
int diskimg_bound(const char *img);

/* Unmounts dir (each mount stacked on it). -EBUSY while something uses
 * it; the loop device goes with the last unmount. A dir that is not a
 * mount point is success. */
int diskimg_umount(const char *dir);

/* Gives the upper/ of the image mounted at dir to uid (its owner, 0755),
 * unless it was claimed already (then it stays as the box left it). The
 * owner first, the mode last: cut short, it is redone. */
int diskimg_claim(const char *dir, uint32_t uid);

/* Bytes used and the filesystem's size (statfs) of the image mounted at
 * dir. */
int diskimg_usage(const char *dir, uint64_t *ret_used, uint64_t *ret_total);

/* Grows (or shrinks, when the files fit) the unmounted image img to
 * `bytes`: e2fsck -f, then resize2fs. A shrink that does not fit fails and
 * leaves the image as it was; so does an image still mounted anywhere
 * (-EBUSY). */
int diskimg_resize(const char *img, uint64_t bytes, pd_error *err);
