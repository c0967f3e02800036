/* tree.h - the /paddock tree: every node, its mode and its handlers, with
 * no FUSE or HTTP types. The FUSE adapter (fuse-adapter.c) and the HTTP
 * adapter translate requests into these calls and errno into replies.
 *
 * Nodes are named by 64-bit inode numbers that stay stable for an object's
 * life (they are derived from store ids), so adapters may cache them.
 * Directory contents and file values are computed on demand from the engine:
 * nothing here is a second copy of engine state.
 *
 * Control files: a write takes effect in tree_write() and returns its error
 * there; the reason goes to the owning object's `error` file and, the same
 * line, to the caller (struct tree_error). Files created in
 * a directory that holds a writable file (a box, exec/, a job, a snapshot, a
 * volume: read from the node tables, so none is missed) are temporary files
 * (for the "write a temp file, rename it over the target" pattern), held in
 * memory, or on disk for a volume's import archive: renaming one over a
 * writable file applies its content as `cat TEMP > FILE` would (one open,
 * its writes, one close). They go with their directory's object.
 *
 * Streams (events, a job's stdout, stderr and output, and its exit):
 * tree_read() at the end of a stream returns TREE_WAIT when more may come.
 * The adapter parks the request and calls tree_read() again after the
 * engine's wake callback names tree_file_wait_key(f). events follows for as
 * long as it is read; a job's streams end with the job. Those of a job that
 * has not started would never end: tree_open() refuses them (-EBUSY, the
 * reason in the box's error file).
 *
 * All functions are thread-safe. Return values: >= 0 success, -errno.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "engine/engine.h"

#define TREE_ROOT_INO 1
#define TREE_IMAGES_INO 5 /* directories whose entries the daemon changes */
#define TREE_BOXES_INO 6
#define TREE_TOKENS_INO 8
#define TREE_SNAPSHOTS_INO 9
#define TREE_VOLUMES_INO 10
#define TREE_SECRETS_INO 11
#define TREE_WAIT 1 /* tree_read(): park and retry after a wake */
#define TREE_NAME_MAX 255

struct tree;
struct tree_file;

struct tree_attr {
	uint64_t ino;
	uint32_t mode; /* S_IFDIR/S_IFREG | permission bits */
	uint64_t size;
	uint32_t nlink;
	time_t mtime;
	bool stream; /* a stream (stdout, events...): read in large pieces */
};

/* Why a call failed, for an adapter to show a person: the line the call
 * recorded in its object's `error` file ("TIME FILE: reason (ERRNO)", as
 * the file shows it; engine_error_line()), or code 0 and "" when it recorded
 * none (a path that does not exist, a mode that refuses: the errno says it
 * all). Filled by the call itself, so of two calls at once each gets its
 * own reason, whatever the error file holds by the time it is read.
 * Functions that take one accept NULL (FUSE can only pass on the errno). */
#define TREE_ERROR_MAX (PD_ERROR_MAX + 64)
struct tree_error {
	int code; /* -errno, or 0 */
	char text[TREE_ERROR_MAX];
};

struct tree_entry {
	char name[TREE_NAME_MAX + 1];
	struct tree_attr attr;
};

/* True for directories whose entries come and go without a FUSE call the
 * adapter sees (snapshots/, a box's snapshots/): adapters must not cache
 * their entries. */
bool tree_entries_volatile(uint64_t parent);

/* True for secrets/ and the secrets in it: their mode and owner are not
 * to be changed, and a try says so (EPERM) rather than being ignored as
 * elsewhere: a chmod that seemed to work would mislead about who can
 * reach them. */
bool tree_refuses_chmod(uint64_t ino);

int tree_new(struct engine *e, struct tree **ret);
struct tree *tree_free(struct tree *t);

int tree_lookup(struct tree *t, uint64_t parent, const char *name, struct tree_attr *ret);
int tree_getattr(struct tree *t, uint64_t ino, struct tree_attr *ret);

/* The target of a symlink node (a box's root: the box's filesystem as
 * mounted on the host, so data never passes through the daemon). */
int tree_readlink(struct tree *t, uint64_t ino, char *buf, size_t bufsz);

/* Resolves a path relative to the tree's root ("boxes/web/state"; empty or
 * "/" is the root). */
int tree_resolve(struct tree *t, const char *path, struct tree_attr *ret);

/* Lists a directory ("." and ".." excluded). *ret is malloc'd. */
int tree_readdir(struct tree *t, uint64_t ino, struct tree_entry **ret, size_t *ret_n);

/* Opens a file. flags as for open(2): O_ACCMODE, O_TRUNC, O_NONBLOCK.
 * Regular values are rendered once here, so every read of one open sees
 * the same bytes. */
int tree_open(struct tree *t, uint64_t ino, int flags, struct tree_file **ret,
	      struct tree_error *te);
void tree_release(struct tree *t, struct tree_file *f);

/* Reads up to size bytes at off. Returns 0 with the count in *ret_n
 * (0 = end of file), TREE_WAIT (see above; a file opened O_NONBLOCK gets
 * -EAGAIN instead), or -errno. */
int tree_read(struct tree *t, struct tree_file *f, uint64_t off, char *buf, size_t size,
	      size_t *ret_n);

/* As tree_read(), for a stream kept in a file (a job's stdout, stderr and
 * output) without copying it: on 0, *ret_n (0 = end of file) bytes at off
 * can be read from *ret_fd (owned by f, valid until tree_release()), with
 * pread() or splice() at that offset. Returns -EOPNOTSUPP for every other
 * file: use tree_read(). */
int tree_read_fd(struct tree *t, struct tree_file *f, uint64_t off, size_t size, int *ret_fd,
		 size_t *ret_n);

/* True if reads of f may wait (TREE_WAIT); only those ever need parking. */
bool tree_file_is_stream(const struct tree_file *f);

/* True if f's value is one JSON object (a box's info): the HTTP mirror
 * serves it as application/json. */
bool tree_file_is_json(const struct tree_file *f);

/* The key that wakes a parked read of f (see engine_wake_fn). */
uint64_t tree_file_wait_key(const struct tree_file *f);

/* One write(2). Returns 0 (all of len taken) or -errno; a file that may
 * take part of a write (N_PARTIAL: a job's stdin, a pipe) returns the bytes
 * it took, 0 < n < len, like a short write(2), and -EAGAIN when it took
 * none. Its answer (tree_file_answer()) is {"written":N} either way. */
int tree_write(struct tree *t, struct tree_file *f, uint64_t off, const char *buf, size_t len,
	       struct tree_error *te);

/* What the last write of f made, as a JSON object, or NULL: `snapshot`
 * {"snapshot":ID}, `fork` {"box":NEW,"snapshot":ID}, `restore`
 * {"snapshot":ID,"restarted":BOOL} and, if the box was running (stopped
 * and started again), "before" (the snapshot its stop took, or "") and
 * "jobs_ended" (the jobs that stop ended, names separated by spaces). Valid
 * until the next write or the release. */
const char *tree_file_answer(const struct tree_file *f);

/* close(2) of one descriptor: applies a value that waits for it (a job's
 * cmd, exec/new) and returns its error. Called again by tree_release(). */
int tree_flush(struct tree *t, struct tree_file *f, struct tree_error *te);

/* truncate(2)/O_TRUNC: accepted on writable files, changes nothing on
 * control files. */
int tree_truncate(struct tree *t, uint64_t ino, uint64_t size);

int tree_mkdir(struct tree *t, uint64_t parent, const char *name, struct tree_attr *ret);
int tree_rmdir(struct tree *t, uint64_t parent, const char *name, struct tree_error *te);

/* Creates (or opens, if it exists) a file in a directory that allows
 * temporary files. */
int tree_create(struct tree *t, uint64_t parent, const char *name, int flags, struct tree_attr *ret,
		struct tree_file **ret_f);
int tree_unlink(struct tree *t, uint64_t parent, const char *name);
int tree_rename(struct tree *t, uint64_t parent, const char *name, uint64_t newparent,
		const char *newname);
