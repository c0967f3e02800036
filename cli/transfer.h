/* transfer.h - tar streams between local trees and a box's root/, and
 * downloads of streams (volume export), with libarchive and libcurl.
 *
 * The process must ignore SIGPIPE (main.c does): the tar producer or
 * consumer thread and the HTTP transfer stop each other by closing their
 * end of a pipe.
 */
#pragma once

#include <stdbool.h>

#include "cli/client.h"

/* Sends SRCs as one tar stream (pax) to PUT boxes/BOX/root/TO/?format=tar.
 * A directory SRC contributes its contents (like SRC/.), anything else
 * itself under its basename; symlinks are stored as symlinks, other
 * special files (sockets, FIFOs, devices) are skipped with a warning
 * unless quiet. Every SRC is checked before anything is sent. progress
 * draws a bar on stderr (bytes sent / pre-scanned estimate). */
int cli_push(cli_client *c, const char *box, const char *const *srcs, size_t n, const char *to,
	     bool progress, bool quiet, pd_error *err);

/* How cli_pull() writes what it gets. */
typedef struct cli_pull_opts {
	bool progress; /* a bar on stderr (bytes received / Content-Length) */
	bool owners;   /* the archive's numeric owners (needs root) */
} cli_pull_opts;

/*
 * GET boxes/BOX/root/SRC?format=tar, extracted into the local DIR (created
 * if missing) by the daemon's own safe extractor (common/tarsafe.h), with DIR
 * as the root: the stream is treated as hostile. Files, directories,
 * symlinks and hard links between pulled files are written; setuid and
 * setgid bits never; owners are the running user's unless opts->owners.
 * Device nodes, FIFOs, sockets, hard links to anything else and symlinks
 * leading outside DIR (absolute, climbing out, or through other links)
 * are skipped, each named on stderr, and the pull fails (-EPERM) once the
 * rest is in place. A malformed archive or a name leaving DIR fails it
 * whole, leaving DIR as it was: entries are staged in a hidden directory
 * inside DIR and merged only when the whole archive was read.
 */
int cli_pull(cli_client *c, const char *box, const char *src, const char *dir,
	     const cli_pull_opts *opts, pd_error *err);

/* The extraction of cli_pull(): the tar stream in fd into the directory
 * dirfd (its root), skipped entries reported on stderr. Returns 0, -EPERM
 * when entries were skipped (err says how many), or the extractor's error. */
int cli_pull_extract(int fd, int dirfd, const cli_pull_opts *opts, pd_error *err);

/* PUT of the bytes of fd (read to its end, not into memory) to a tree
 * path, which may carry a query ("volumes/v/data/?format=tar"). */
int cli_upload(cli_client *c, const char *path, int fd, pd_error *err);

/* GET of a tree path streamed into fd (not into memory). */
int cli_download(cli_client *c, const char *path, int fd, bool progress, pd_error *err);

/* Formats n bytes for people: "512 B", "1.5 KiB", "3.2 MiB"… into buf. */
const char *cli_format_size(unsigned long long n, char *buf, size_t size);
