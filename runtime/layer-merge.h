/* layer-merge.h - merging a run of frozen overlay layers into one.
 *
 * The result, used as one lowerdir in place of the run, shows exactly what
 * the run showed over whatever lies below it (older layers, the image):
 *   - a whiteout (char device 0/0) deletes the path from the layers under
 *     it and stays in the result, since it may hide a file further down;
 *   - an opaque directory (xattr trusted.overlay.opaque = "y") replaces the
 *     directory under it and stays opaque; a directory over a non-directory
 *     or a whiteout is made opaque too, since the run ended the lookup there;
 *   - a file, symlink, device, fifo or socket replaces whatever was under
 *     it; a directory over a directory merges with it and takes the newer
 *     directory's metadata.
 * Everything is copied with its data (copy_file_range), mode, owner, times
 * and extended attributes (trusted.overlay.*, user.*, security.*, ACLs).
 * Hard links stay links: the names of a regular file of one layer become
 * names of one copy (link(2) to the first name copied), so a layer of
 * 1 MiB and 300 links to it merges into 1 MiB, not 301. A newer layer
 * that replaces one of the names leaves the others linked. Past the
 * filesystem's link limit (EMLINK) a new copy takes the next names.
 * Whiteouts and other special files are each made anew.
 *
 * Layers written with overlay's redirect_dir or metacopy features (xattrs
 * trusted.overlay.redirect / .metacopy) are refused with -ENOTSUP: their
 * files point into other layers. paddockd mounts with both off.
 *
 * Layers written in different ranges of ids (idmap.h) merge into the
 * newest one's: an owner from+k of an older layer becomes to+k.
 *
 * Symlinks are never followed; every path is the caller's own. Needs root
 * (mknod, chown, trusted.* xattrs).
 */
#pragma once

#include <stddef.h>

#include "common/error.h"

/* Applies layers[0] (the oldest, lowest) up to layers[n-1] (the newest)
 * onto dst, an existing empty directory. On failure dst holds a partial
 * result for the caller to remove, and err says why. Returns 0 or -errno. */
int layer_merge(const char *const *layers, size_t n, const char *dst, pd_error *err);
