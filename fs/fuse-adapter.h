/* fuse-adapter.h - serves a tree through the kernel's FUSE (libfuse3
 * low-level API). Translates requests into tree calls and -errno into
 * replies; parks reads that must wait and answers them when the engine's
 * wake callback fires (no thread is held by a waiting read).
 */
#pragma once

#include "common/error.h"
#include "fs/tree.h"

struct fuse_adapter;

/* Mounts the tree at mountpoint (allow_other, default_permissions). Only
 * root and the members of the engine's group (engine_access()) may use it:
 * every request of anyone else is EACCES, but the root's getattr. A stale
 * mount left by a daemon that died (ENOTCONN) is detached first; a live one
 * is -EBUSY. Installs the wake
 * callback and the box hook on the tree's engine: the kernel caches the
 * entries of boxes/, and a box the engine creates or deletes outside a FUSE
 * request (HTTP) has its entry dropped before the engine call returns. */
int fuse_adapter_mount(struct tree *t, struct engine *e, const char *mountpoint,
		       struct fuse_adapter **ret, pd_error *err);

/* Serves requests with a pool of threads until fuse_adapter_exit() or
 * SIGTERM/SIGINT/SIGHUP. Returns 0 or -errno. */
int fuse_adapter_run(struct fuse_adapter *a);

/* Unmounts and frees; clears the engine's wake callback and box hook.
 * Parked reads are answered with EINTR. */
struct fuse_adapter *fuse_adapter_free(struct fuse_adapter *a);

/* The number of reads parked right now (for tests and diagnostics). */
size_t fuse_adapter_parked(struct fuse_adapter *a);
