/* volume-live.h - a volume mounted into, or unmounted from, a box that
 * runs: at /mnt/NAME in the box's own mount namespace, without a restart.
 *
 * The mount is made on the host: a detached copy of the volume's data
 * directory (open_tree(OPEN_TREE_CLONE)), nosuid and nodev, id-mapped
 * through the box's user namespace when it has one (its files keep host
 * ids 0..65535 on disk, as at start where crun's "idmap" option does the
 * same). A child process then enters the box's mount namespace (and user
 * namespace: it acts as box root) and attaches it there. Paths are resolved
 * inside the box's root only (openat2 RESOLVE_IN_ROOT, no magic links): a
 * link the box made (/mnt leading anywhere) is followed inside the box,
 * never on the host. /mnt is made when missing; /mnt/NAME must be a
 * directory or absent (made then): a file or a link there is refused.
 *
 * The box is found by its PID 1 and checked to be it: a process whose root
 * is the box's root filesystem (no reused PID leads into the host). The
 * child is killed when it takes longer than VOLUME_LIVE_TIMEOUT_MS (a box
 * can make a path hang, with a FUSE mount of its own).
 *
 * Slow calls (a fork): never under the engine lock. Any thread may call
 * them; the caller serialises calls for one box. Return >= 0 or -errno
 * with a reason in err: -EBUSY the box no longer runs, -EEXIST something
 * other than a directory is at /mnt or /mnt/NAME, -EAGAIN the box did not
 * answer in time, -EIO anything else.
 */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "common/error.h"

#define VOLUME_LIVE_TIMEOUT_MS 10000

struct volume_live_box {
	const char *name;   /* for messages */
	pid_t pid;	    /* its PID 1 on the host */
	const char *rootfs; /* its root filesystem on the host (the overlay) */
};

/* Mounts the directory src at /mnt/NAME in the box. 1 when that directory
 * is mounted there already (nothing done), 0 when mounted now. */
int volume_live_attach(const struct volume_live_box *box, const char *src, const char *name,
		       pd_error *err);

/* What volume_live_detach() did. */
enum volume_live_detached {
	VOLUME_LIVE_NONE,      /* src was not mounted at /mnt/NAME */
	VOLUME_LIVE_UNMOUNTED, /* unmounted */
	/* A process in the box had a file or its working directory there:
	 * unmounted lazily (MNT_DETACH). /mnt/NAME no longer leads to it;
	 * that process keeps what it holds until it lets go. */
	VOLUME_LIVE_LAZY,
};

/* Unmounts the directory src from /mnt/NAME in the box (every copy
 * stacked there), then removes /mnt/NAME if it is an empty directory. A
 * mount of something else there is left alone. Returns an
 * enum volume_live_detached or -errno. */
int volume_live_detach(const struct volume_live_box *box, const char *src, const char *name,
		       pd_error *err);
