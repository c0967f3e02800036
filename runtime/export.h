/* export.h - archives of a directory tree: a zstd-compressed tar stream
 * that ends with a manifest of XXH3-128 content hashes, streamed to readers
 * while it is made, and the verification of such a manifest on import.
 *
 * Used by volumes/NAME/export and snapshots/ID/export (the stream) and by
 * volumes/NAME/import (the verification).
 *
 * The archive: a pax tar stream (tarsafe_create(): names relative to the
 * exported directory, never starting with "./"), compressed with zstd at
 * level EXPORT_ZSTD_LEVEL, whose last entry is the manifest, a regular file
 * named exactly EXPORT_MANIFEST_NAME ("./.paddock-export"; the exporter
 * writes no other name with a "./" prefix, so it cannot clash with a file
 * of the tree, even one called .paddock-export). The manifest is text:
 *
 *	paddock-export 1 KIND SOURCE CREATED
 *	HASH SIZE PATH
 *	...
 *
 * KIND is "volume" or "snapshot", SOURCE the volume's name or snapshot's
 * id, CREATED an RFC 3339 UTC time. Then one line per regular file of the
 * archive, hard links included (each name of a file has its line), sorted
 * by PATH (bytewise): HASH is the XXH3-128 of the content as 32 lowercase
 * hex digits (canonical, big-endian), SIZE its bytes in decimal, PATH its
 * name in the archive with '\\' written "\\\\", newline "\\n" and other control
 * bytes "\\xHH". Directories and symlinks have no line.
 *
 * Thread safety: a manifest is used by one thread at a time; a stream's
 * functions may be called from any thread.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "common/error.h"

#define EXPORT_MANIFEST_NAME "./.paddock-export"
#define EXPORT_MANIFEST_VERSION 1
/* Largest manifest an import accepts (about 500,000 files). */
#define EXPORT_MANIFEST_MAX (64U << 20)
/* zstd's own default level, as `zstd` uses without -#. */
#define EXPORT_ZSTD_LEVEL 3
/* Wake keys of export streams (engine_wake_fn). */
#define EXPORT_WAKE_BIT (1ULL << 61)

/* --- the manifest ------------------------------------------------------- */

struct export_manifest;

/* An empty manifest. kind and source must not contain whitespace. NULL on
 * out of memory. */
struct export_manifest *export_manifest_new(const char *kind, const char *source, time_t created);
struct export_manifest *export_manifest_free(struct export_manifest *m);

/* Adds a regular file: its archive name, content size and XXH3-128 digest
 * (canonical bytes). -ENOMEM. */
int export_manifest_add(struct export_manifest *m, const char *path, uint64_t size,
			const unsigned char hash[16]);
/* Adds a hard link: `path` has the content of the earlier file `target`
 * (resolved by export_manifest_format()). -ENOMEM. */
int export_manifest_add_link(struct export_manifest *m, const char *path, const char *target);

/* The text form (malloc'd, NUL-terminated). -ENOENT when a link's target
 * is not a file of the manifest, -ENOMEM. */
int export_manifest_format(struct export_manifest *m, char **ret, size_t *ret_len);

/* Parses the text form. -EINVAL with the line in err for a bad header, an
 * unknown version, a malformed line, a repeated path, a NUL byte. */
int export_manifest_parse(const char *text, size_t len, struct export_manifest **ret,
			  pd_error *err);

const char *export_manifest_kind(const struct export_manifest *m);
const char *export_manifest_source(const struct export_manifest *m);
time_t export_manifest_created(const struct export_manifest *m);
size_t export_manifest_count(const struct export_manifest *m);

/* Checks the tree under dirfd (not followed through symlinks, not crossing
 * into other filesystems) against the manifest: every regular file must be
 * listed with its size and hash, and every listed path must be a regular
 * file there. -EINVAL "content does not match the archive's manifest: PATH
 * (why)" on the first difference; -errno if the tree cannot be read. */
int export_manifest_verify(struct export_manifest *m, int dirfd, pd_error *err);

/* XXH3-128 of what fd reads from its offset to the end. */
int export_hash_fd(int fd, unsigned char ret[16], uint64_t *ret_size);

/* --- the stream --------------------------------------------------------- */

/* What to export and how to tell the owner. The dirfd and tmpfd are taken
 * by export_stream_start() even when it fails; release() runs exactly once
 * (when it fails, or when the stream is closed and its threads ended). */
struct export_source {
	int dirfd;	    /* the directory to export (O_PATH is enough) */
	int tmpfd;	    /* an O_TMPFILE file to hold the archive (made 0600) */
	const char *kind;   /* "volume" or "snapshot" */
	const char *source; /* its name or id */
	void (*wake)(void *userdata, uint64_t key);
	void (*release)(void *userdata);
	void *userdata;
};

struct export_stream;

/* Starts the threads: tar (with hashing) into a pipe, zstd from the pipe
 * into the temp file. -EAGAIN if a thread cannot start, -ENOMEM. */
int export_stream_start(const struct export_source *src, struct export_stream **ret, pd_error *err);
/* Reads the archive at off: -EAGAIN while no bytes are there yet (wait for
 * a wake of export_stream_key()), 0 with *ret_n = 0 at the end, -EIO (or
 * -ENOMEM) if the export failed. */
int export_stream_read(struct export_stream *x, uint64_t off, char *buf, size_t size,
		       size_t *ret_n);
uint64_t export_stream_key(const struct export_stream *x);
/* True while more bytes may come. */
bool export_stream_live(struct export_stream *x);
/* The reason of a failed export ("" while none). */
void export_stream_error(struct export_stream *x, pd_error *ret);
/* Stops the threads early if needed; the temp file goes with the last
 * reference. NULL is allowed. */
void export_stream_close(struct export_stream *x);

/* --- verification on import ---------------------------------------------- */

/*
 * Hooks for tarsafe_extract_ex() that take the manifest out of the archive
 * (it is not extracted) and, before the merge, check the staged files
 * against it. An archive without a manifest passes unchecked; one with a
 * malformed manifest, two manifests or files that differ from it is
 * rejected (-EINVAL) and nothing is merged.
 *
 *	struct export_verify v = {0};
 *	struct tar_extract_hooks hooks;
 *	export_verify_hooks(&v, &hooks);
 *	r = tarsafe_extract_ex(rootfd, dir, fd, &lim, &hooks, &res, &err);
 *	... v.manifest (if not NULL) is the archive's, verified when r >= 0 ...
 *	export_verify_release(&v);
 */
struct tar_extract_hooks;
struct export_verify {
	struct export_manifest *manifest;
};
void export_verify_hooks(struct export_verify *v, struct tar_extract_hooks *ret);
void export_verify_release(struct export_verify *v);
