/* transfer.h - tar streams between local trees and a box's root/, and
 * downloads of streams (volume export), with libarchive and libcurl.
 *
 * The process must ignore SIGPIPE (main.c does): the tar producer or
 * consumer thread and the HTTP transfer stop each other by closing their
 * end of a pipe.
 */
#pragma once

#include <stdbool.h>

#include "client.h"

/* Sends SRCs as one tar stream (pax) to PUT boxes/BOX/root/TO/?format=tar.
 * A directory SRC contributes its contents (like SRC/.), anything else
 * itself under its basename; symlinks are stored as symlinks, other
 * special files (sockets, FIFOs, devices) are skipped with a warning
 * unless quiet. Every SRC is checked before anything is sent. progress
 * draws a bar on stderr (bytes sent / pre-scanned estimate). */
int cli_push(cli_client *c, const char *box, const char *const *srcs, size_t n, const char *to,
	     bool progress, bool quiet, pd_error *err);

/* GET boxes/BOX/root/SRC?format=tar, extracted into the local DIR
 * (created if missing) with archive_write_disk's SECURE_NODOTDOT,
 * SECURE_SYMLINKS and SECURE_NOABSOLUTEPATHS, owners restored only when
 * running as root. The process's working directory is DIR during the
 * transfer and restored afterwards. */
int cli_pull(cli_client *c, const char *box, const char *src, const char *dir, bool progress,
	     pd_error *err);

/* PUT of the bytes of fd (read to its end, not into memory) to a tree
 * path, which may carry a query ("volumes/v/data/?format=tar"). */
int cli_upload(cli_client *c, const char *path, int fd, pd_error *err);

/* GET of a tree path streamed into fd (not into memory). */
int cli_download(cli_client *c, const char *path, int fd, bool progress, pd_error *err);

/* Formats n bytes for people: "512 B", "1.5 KiB", "3.2 MiB"… into buf. */
const char *cli_format_size(unsigned long long n, char *buf, size_t size);
