/* tarsafe-internal.h - path primitives shared by tarsafe.c (files, pull)
 * and tarsafe-extract.c (push). Not for other modules: use tarsafe.h. */
#pragma once

#include <linux/openat2.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "tarsafe.h"

/* Resolution of a PATH given by a user or a box: inside the root, no magic
 * links, no mount crossing. */
#define TARSAFE_RESOLVE_ROOT (RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV)

/* Resolution inside a directory the daemon owns (the push staging area):
 * beneath it, and through no symlink at all. */
#define TARSAFE_RESOLVE_STAGE                                                                      \
	(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV)

/* Deepest directory nesting walked recursively (one fd per level). */
#define TARSAFE_MAX_DEPTH 256

/* openat2(2) with O_CLOEXEC added; `mode` is used only with O_CREAT.
 * Returns the fd or -errno. */
int tarsafe_openat2(int dirfd, const char *path, int flags, mode_t mode, uint64_t resolve);

/* Skips the slashes at *p and returns the length of the component that
 * starts there (0 at the end of the string). */
size_t tarsafe_next_component(const char **p);

/* Copies PATH into buf (size bytes) in normal form: components joined by
 * one '/', no leading or trailing slash, no "." components; "" for the
 * root. Returns the number of components, -EINVAL for a ".." component,
 * -ENAMETOOLONG when it does not fit. */
int tarsafe_normalize(const char *path, char *buf, size_t size);

/* Splits a normalized non-empty path in place: *ret_parent is "." or the
 * parent's path, *ret_base the last component. */
void tarsafe_split(char *norm, const char **ret_parent, const char **ret_base);

/* mkdir -p of the normalized path `norm` below rootfd (resolved with
 * `resolve`): see tarsafe_mkdir_p(). *ret_created (if not NULL) is the
 * number of trailing components this call created. */
int tarsafe_mkdir_p_at(int rootfd, const char *norm, mode_t mode, uid_t uid, gid_t gid,
		       uint64_t resolve, unsigned *ret_created);

/* Removes everything inside the directory fd (not fd itself), never
 * following symlinks; a directory on another device than `dev` is left in
 * place (-EXDEV). Returns 0 or the first -errno met (it carries on). */
int tarsafe_rm_children(int fd, dev_t dev, unsigned depth);

/* Applies owner ((uid_t)-1/(gid_t)-1: unchanged) and mode to an fd,
 * chown first (it would clear setuid/setgid bits). Returns 0 or -errno. */
int tarsafe_own_fd(int fd, mode_t mode, uid_t uid, gid_t gid);

/* Writes a random name "PREFIXxxxxxxxxx" into buf. */
void tarsafe_random_name(char *buf, size_t size, const char *prefix);

/* A copy of an archive entry's or a user's name fit for a message:
 * control characters replaced, at most ~120 bytes. */
const char *tarsafe_printable(const char *name, char *buf, size_t size);
