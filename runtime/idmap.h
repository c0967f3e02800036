/* idmap.h - the boxes' user namespaces: ranges of host ids, id-mapped
 * views of shared directories, and moving a tree's owners between ranges.
 *
 * A box's ids 0..IDMAP_IDS-1 are host ids base..base+IDMAP_IDS-1, base a
 * multiple of IDMAP_IDS (0: the host's own ids, as an image's files and
 * boxes from before user namespaces have them). A directory's files are
 * written in one range, its base: a layer's is the owner of its top
 * directory rounded down to a range (the box's root owns "/"), an image's
 * is 0. Mounted for a box of another base, a directory is seen through an
 * id-mapped mount (kernel 5.12+) that maps its range onto the box's.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/error.h"

#define IDMAP_IDS 65536u

/* The range an id belongs to. */
static inline uint32_t idmap_base_of(uint32_t id)
{
	return id & ~(IDMAP_IDS - 1);
}

/* The base of the range the directory at path was written in (the owner of
 * path itself), or -errno. */
int64_t idmap_dir_base(const char *path);

/* A user namespace mapping ids from..from+IDMAP_IDS-1 to host ids
 * to..to+IDMAP_IDS-1 (uids and gids), as an open fd in *ret (O_CLOEXEC).
 * Needs CAP_SETUID/CAP_SETGID; costs a short-lived child process. */
int idmap_userns(uint32_t from, uint32_t to, int *ret);

/* A box's user namespace (its ids 0..IDMAP_IDS-1 onto host ids base..)
 * and a network namespace it owns (so box root has the network
 * capabilities of the box's namespace: raw sockets, ports below 1024), each
 * bound on a file (user_path, net_path: made, or reused when a plain
 * leftover file) for the runtime to join. Removed with
 * unbind_remove() (util.h). */
int idmap_box_namespaces(uint32_t base, const char *user_path, const char *net_path,
			 pd_error *err);
/* A detached, read-only copy of the mount at path, id-mapped through the
 * user namespace userns (an idmap_userns(); -1: not mapped), as an open fd
 * in *ret: usable as a path through /proc/self/fd/N (overlay's lowerdir)
 * until closed. */
int idmap_open_tree(const char *path, int userns, int *ret, pd_error *err);

/* Moves the owners in tree root (not crossing mounts, never following
 * links) from range `from` to range `to`: an owner id from+k becomes to+k;
 * ids outside `from` stay. Modes are kept (chown drops setuid and setgid),
 * and so are file capabilities. root itself goes last, so a walk cut
 * short is redone whole (idmap_dir_base(root) is still `from`): every step
 * is idempotent. Returns 0 or -errno with err set. */
int idmap_shift_tree(const char *root, uint32_t from, uint32_t to, pd_error *err);
