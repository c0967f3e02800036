/* lxcfs.h - lxcfs run by the daemon: what a box reads in /proc/meminfo,
 * /proc/cpuinfo, /proc/uptime, ... are its own limits and its own uptime.
 *
 * lxcfs (Debian's, 5.x) is a FUSE filesystem whose files answer according
 * to who reads them: it finds the reader's PID namespace's init, that
 * process's cgroups, and renders the file from the cgroup's limits and
 * usage, read at each read (so a live change of a box's type shows at
 * once). The daemon runs one lxcfs for all its boxes, on RUN/lxcfs, and a
 * box gets lxcfs's files bound read-only over the kernel's (lxcfs_views).
 *
 * One watcher thread per daemon starts lxcfs (--enable-cfs: CPUs follow the
 * CPU quota; -l: per-box load averages; --enable-pidfd), waits until it is
 * mounted, and starts it again when it ends (backing off while it keeps
 * failing). Each mount is a new generation; the owner's hook, called on the
 * watcher thread after each mount, binds the new views into the boxes that
 * already run (lxcfs_attach): a box whose lxcfs died reads ENOTCONN from
 * these files only until the watcher has mounted a new one.
 *
 * A daemon killed without its stop leaves lxcfs running (the boxes keep
 * their views meanwhile); the next lxcfs_start() ends that one (found by
 * RUN/lxcfs.pid, and only when that process is lxcfs serving this mount
 * point) and clears its mount.
 *
 * Thread-safety: lxcfs_generation() and lxcfs_dir() from any thread;
 * lxcfs_attach()/lxcfs_detach() from any thread (each forks a child that
 * enters the box's mount namespace); start and stop from one thread.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/error.h"

/* lxcfs's files a box gets: src relative to lxcfs's mount point, dst the
 * path in the box. */
struct lxcfs_view {
	const char *src;
	const char *dst;
};
#define LXCFS_N_VIEWS 8
extern const struct lxcfs_view lxcfs_views[LXCFS_N_VIEWS];

struct lxcfs;

/* Called on the watcher thread after each mount, with the new generation
 * (>= 1); on the first, possibly before lxcfs_start() has returned (use
 * lx, not what lxcfs_start() set). It may take the engine lock; it must
 * not call lxcfs_stop(). */
typedef void (*lxcfs_ready_fn)(void *userdata, struct lxcfs *lx, uint64_t generation);

/* Starts lxcfs (binary, an absolute path) on RUN/lxcfs (run_dir's), its
 * PID in RUN/lxcfs.pid, after clearing what an earlier daemon left there
 * (lxcfs_clear_leftover()), and waits until it is mounted (at most
 * LXCFS_MOUNT_TIMEOUT_MS). Returns 1 when it serves; 0 when this first try
 * failed (err says why: its last line on stderr, its exit status), in which
 * case the watcher keeps trying in the background; both set *ret. -errno
 * when it cannot run at all (binary missing or not executable, no thread,
 * no memory): nothing runs, *ret is untouched. ready may be NULL. */
#define LXCFS_MOUNT_TIMEOUT_MS 10000
int lxcfs_start(const char *binary, const char *run_dir, lxcfs_ready_fn ready, void *userdata,
		struct lxcfs **ret, pd_error *err);

/* Ends the watcher, then lxcfs: its mount is detached and the process
 * (the one this object started, by its pidfd) killed and reaped. lxcfs
 * keeps nothing worth a graceful end, and takes seconds to end on SIGTERM.
 * Accepts NULL; returns NULL. */
struct lxcfs *lxcfs_stop(struct lxcfs *lx);

/* The mount point, RUN/lxcfs. */
const char *lxcfs_dir(const struct lxcfs *lx);

/* The generation lxcfs serves now: >= 1 while mounted, 0 while it is down
 * (or lx is NULL). It changes with every new mount. ret_views (may be
 * NULL): which of lxcfs_views[] it serves, bit i for view i (an lxcfs
 * other than 5.x may lack some; 0 when not serving). */
uint64_t lxcfs_generation(const struct lxcfs *lx, unsigned *ret_views);

/* Binds lxcfs's views over the files of the mount namespace of process pid
 * (a box's PID 1), replacing views there (those of a dead lxcfs).
 * lxcfs_detach() removes them, so that the box reads the kernel's files
 * again. Refused (-EPERM) when that namespace is the daemon's own; -ESRCH
 * when the process is gone; -ENOTCONN when lxcfs is not serving. The views
 * are mounted read-only, nosuid, nodev, noexec. A slow call (a fork). */
int lxcfs_attach(struct lxcfs *lx, pid_t pid, pd_error *err);
int lxcfs_detach(pid_t pid, pd_error *err);

/* What a daemon killed earlier left in run_dir: an lxcfs named by
 * RUN/lxcfs.pid that is still running on RUN/lxcfs (killed, waited for),
 * and a mount on RUN/lxcfs (detached). Returns 1 when something was
 * cleared, 0 when there was nothing, -errno when the mount could not be
 * detached or the process not killed. */
int lxcfs_clear_leftover(const char *run_dir, pd_error *err);

/* --- pieces, exposed for the unit tests ------------------------------------- */

/* lxcfs's command line: argv (room for n entries, NULL-terminated), the
 * strings borrowed. Returns the count, or -E2BIG. */
int lxcfs_argv(const char *binary, const char *mountpoint, const char *pidfile, const char **argv,
	       size_t n);

/* Whether a process's /proc/PID/cmdline (len bytes, NUL-separated) is an
 * lxcfs of ours: its last argument is mountpoint and it was given pidfile
 * (--pidfile FILE or -p FILE). */
bool lxcfs_cmdline_is_ours(const char *cmdline, size_t len, const char *mountpoint,
			   const char *pidfile);

/* How long the watcher waits before the next start after failures starts
 * that failed in a row (or ended early): 250 ms, doubling, at most 60 s. */
unsigned lxcfs_backoff_ms(unsigned failures);
