/* util.h - small helpers shared by every part of Paddock.
 *
 * Cleanup attributes in the style of systemd and crun: a variable declared
 * with _cleanup_free_ is freed when it leaves scope; TAKE_PTR()/TAKE_FD()
 * hand ownership out of such a variable.
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _unused_ __attribute__((unused))

static inline void freep(void *p)
{
	free(*(void **)p);
}

static inline void closep(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		close(*fd);
		errno = saved;
	}
}

static inline void fclosep(FILE **f)
{
	if (*f)
		fclose(*f);
}

#define _cleanup_free_ _cleanup_(freep)
#define _cleanup_close_ _cleanup_(closep)
#define _cleanup_fclose_ _cleanup_(fclosep)

#define TAKE_PTR(p)                                                                                \
	({                                                                                         \
		__typeof__(p) _p_ = (p);                                                           \
		(p) = NULL;                                                                        \
		_p_;                                                                               \
	})
#define TAKE_FD(fd)                                                                                \
	({                                                                                         \
		int _fd_ = (fd);                                                                   \
		(fd) = -1;                                                                         \
		_fd_;                                                                              \
	})

/* Frees a NULL-terminated vector of malloc'd strings; accepts NULL;
 * returns NULL. */
char **strv_free(char **v);
static inline void strv_freep(char ***v)
{
	strv_free(*v);
}
#define _cleanup_strv_free_ _cleanup_(strv_freep)

#define ELEMENTSOF(a) (sizeof(a) / sizeof((a)[0]))

/* Returns the symbolic name of an errno value ("EINVAL"), or "EIO" for an
 * unknown one. Never NULL. */
const char *errno_name(int err);

/* Writes buf to fd completely, retrying on EINTR and short writes.
 * Returns 0 or -errno. */
int write_all(int fd, const void *buf, size_t len);

/* Reads a whole small file (at most max bytes) into a NUL-terminated malloc'd
 * buffer. Returns 0 and sets *ret (and *ret_len if not NULL), or -errno;
 * -EFBIG when the file is larger than max. */
int read_file_at(int dirfd, const char *path, size_t max, char **ret, size_t *ret_len);

/* Writes a file atomically: temp file in the same directory, fsync, rename.
 * Returns 0 or -errno. */
int write_file_atomic(const char *path, const void *buf, size_t len, mode_t mode);

/* The same without fsync, for files that are rewritten anyway after a crash
 * (config.json, job specs and settings): readers never see half a file.
 * Mode 0600. Returns 0 or -errno. */
int write_file_replace(const char *path, const void *buf, size_t len);

/* mkdir -p with the given mode. Returns 0 or -errno. */
int mkdir_p(const char *path, mode_t mode);

/* Removes a directory tree without following symlinks or crossing into
 * other mounts. A missing path is success. Returns 0 or -errno. */
/* Detaches whatever is mounted on path (a bound namespace file, a bind)
 * and removes the file; no error when there is none. */
int unbind_remove(const char *path);
int rm_rf(const char *path);

/* Bytes allocated to what lies inside the directory at path (the
 * st_blocks of every entry below it), staying on its filesystem and
 * following no symlink. Each step is relative to an open directory, so a
 * tree that changes during the walk (a running box's files) cannot lead it
 * elsewhere; what changes meanwhile may be counted or not. Directories
 * more than DU_DEPTH_MAX levels down are counted, not entered. A slow call
 * (lock.h: never under the engine lock). Returns 0, or -errno when path
 * cannot be opened as a directory. */
#define DU_DEPTH_MAX 256
int du_tree(const char *path, uint64_t *ret);

/* The start time of pid (/proc/PID/stat's 22nd field, in clock ticks
 * after boot), or 0 when it cannot be read (gone): with the PID, it names
 * one process across PID reuse. */
unsigned long long proc_start_time(pid_t pid);

/* Monotonic clock in microseconds. */
unsigned long long now_usec(void);

/* Waits until the process pidfd (pidfd_open(2)) refers to has ended,
 * timeout_ms at most (-1: no limit). Works for processes that are not our
 * children (it does not reap). 0 when it has ended, -ETIMEDOUT, or
 * -errno. */
int pidfd_wait_exit(int pidfd, int timeout_ms);

/* Fault injection for the crash tests: when the environment variable
 * PADDOCK_FAULT equals step, the process kills itself with SIGKILL right
 * here, as a power cut would at that step. Without the variable it does
 * nothing. The steps, in the order an action reaches them:
 *   layers (snapshots.c):
 *   freeze-recorded   intent and layer row written, nothing moved yet
 *   freeze-renamed    a stopped box's upper renamed to its layer
 *   freeze-upper      the fresh empty upper made, not yet committed
 *   copy-paused       running box paused, before its upper is copied
 *   copy-copied       its copy complete (L<ID>.tmp), box still paused
 *   copy-renamed      L<ID>.tmp renamed to L<ID>, not yet committed
 *   fork-committed    fork recorded, the new box's directories not made
 *   restore-recorded  restore intent written, upper untouched
 *   restore-moved     the old upper moved aside, no new one yet
 *   restore-committed the new stack recorded, old upper not yet removed
 *   snapdel-deleted   snapshot row deleted, its mount and layers remain
 *   gc-renamed        garbage layers renamed to L<ID>.del, not removed
 *   merge-copied      a stack's oldest layers merged into L<ID>.tmp
 *   merge-renamed     L<ID>.tmp renamed to L<ID>, stacks not yet swapped
 *   merge-committed   the box's stack swapped, old layers not yet collected
 *   volumes (volumes.c):
 *   volume-create-row, volume-create-dir, volume-delete-mark,
 *   volume-delete-files, volume-delete-rows,
 *   volume-live-recorded  a running box's new list recorded, its mounts
 *                         not yet changed
 *   volume-live-applied   its mounts changed, bundle/volumes not yet */
void pd_fault(const char *step);

/* Hold points, for the tests that prove what goes on while slow work
 * runs. With PADDOCK_HOLD set to "STEP:DIR", the first thread to reach
 * STEP after the test created DIR/arm removes it, creates DIR/held and
 * waits there until the test removes DIR/held; other threads pass. Without
 * the variable it does nothing. A slow call (lock.h). The steps:
 *   gc-read     the layer collector read the rows and chose layers to
 *               remove; it is about to take the engine lock (snapshots.c)
 *   disk-walk   a box's disk usage or a volume's size is about to be
 *               walked (engine.c), the engine lock not held
 *   config-check  the configuration file was checked and is about to be
 *               loaded (main.c)
 *   volume-live a running box's new list of volumes is recorded and its
 *               mounts are about to change (volumes.c), the box busy
 *   tree-act    the tree fetched an object by the id in an inode and is
 *               about to act on it (fs/tree.c: a write applied, an
 *               archive opened), no lock held: what a delete and a new
 *               object of the same name meanwhile do to the action
 *   export-end  an export's compressor thread finished (or was cancelled)
 *               and is about to drop its reference, which may release
 *               the snapshot's or volume's mark in the engine
 *               (runtime/export.c), no lock held */
void pd_hold(const char *step);
