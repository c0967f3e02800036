/* tarsafe-internal.h - path primitives shared by tarsafe.c (files, pull)
 * and tarsafe-extract.c (push). Not for other modules: use tarsafe.h. */
#pragma once

#include <dirent.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "common/tarsafe.h"

/* Resolution of a PATH given by a user or a box: inside the root, no magic
 * links, no mount crossing. */
#define TARSAFE_RESOLVE_ROOT (RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV)

/* Resolution inside a directory the daemon owns (the push staging area):
 * beneath it, and through no symlink at all. */
#define TARSAFE_RESOLVE_STAGE                                                                      \
	(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV)

/* Deepest name, in components, an archive entry may have, for the creator
 * and the extractor alike (they recurse with one fd per level). The creator
 * writes the entries one level deeper without descending into them, so that
 * a pull names what it left out (the extractor refuses them, or skips them
 * under TAR_SKIP_REFUSED). */
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

/* A stream of the directory fd's entries from the start, on a dup of fd
 * (which stays the caller's; the dup shares its offset, so it is rewound).
 * NULL with errno set on failure. */
DIR *tarsafe_opendir(int fd);

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

/* ---- where symlinks lead (tarsafe-links.c) ---- */

enum tarsafe_node {
	TARSAFE_NODE_MISSING,
	TARSAFE_NODE_DIR,
	TARSAFE_NODE_OTHER, /* a file, device, ...: nothing to walk into */
	TARSAFE_NODE_LINK,
	/* A directory of the archive that merges through a symlink already in
	 * the target: target is the directory it lands in, from the root and
	 * normalized; the walk goes there (counting one link). */
	TARSAFE_NODE_REDIRECT,
};

/* What lookups returned and where links lead, remembered across the walks
 * of one judge pass (one archive). */
struct tarsafe_walk_cache;

/* A model of the tree being judged: lookup() tells what PATH (normalized,
 * from the root, never "") is, without following a symlink at its end,
 * and for a link or a redirect copies its target into target (size bytes).
 * With a cache, each PATH is looked up once (until forgotten). Every
 * lookup (remembered or not) takes one from *budget when budget is not
 * NULL; at 0 the walk stops with -E2BIG. */
struct tarsafe_walk {
	enum tarsafe_node (*lookup)(void *userdata, const char *path, char *target, size_t size);
	void *userdata;
	bool abs_in_root; /* absolute targets restart at the root; else refused */
	struct tarsafe_walk_cache *cache;
	uint64_t *budget;
};

/* A cache of at most a few tens of MiB (past that it starts over).
 * Returns NULL when out of memory. */
struct tarsafe_walk_cache *tarsafe_walk_cache_new(void);
void tarsafe_walk_cache_free(struct tarsafe_walk_cache *c);
/* PATH changed in the model (a link of the archive was skipped): forgets
 * it, and where links lead when one went through it. */
void tarsafe_walk_cache_forget(struct tarsafe_walk_cache *c, const char *path);

/* What a symlink's target may look like wherever it is: not absolute
 * unless abs_in_root (and then not "/.."), and going back up (..) only at
 * its start. Returns 0,
 * or -EPERM with a short reason in why (whysz bytes). */
int tarsafe_link_shape(const char *target, bool abs_in_root, char *why, size_t whysz);

/* Whether a symlink in directory cur (normalized from the root, a PATH_MAX
 * buffer) with this target stays inside the root for a reader following it
 * as the kernel would: tarsafe_link_shape(), then the walk, component by
 * component through every link, may not take `..` above the root, meet an
 * absolute target unless abs_in_root, or follow more than 40 links. Past a
 * missing entry or a file the rest is taken lexically.
 * Returns 0 (cur is where it leads), -EPERM with a short reason in why
 * (whysz bytes, e.g. "climbs above it (through a -> ..)"), -E2BIG when the
 * budget ran out, or -ENOMEM. */
int tarsafe_walk_link(const struct tarsafe_walk *w, char *cur, const char *target, char *why,
		      size_t whysz);
