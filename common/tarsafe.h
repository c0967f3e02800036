/* tarsafe.h - files, directories and tar streams inside a box's root
 * filesystem, safe against a hostile box and hostile archives.
 *
 * Every function takes `rootfd`, an fd of the box's root directory (O_PATH
 * or O_DIRECTORY; the caller keeps ownership), and a PATH relative to it.
 * PATH is split on '/': leading, doubled and trailing slashes and `.`
 * components are ignored, a `..` component is -EINVAL; "" (or "/") is the
 * root itself. Paths are resolved with openat2(RESOLVE_IN_ROOT |
 * RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV): symlinks planted by the box
 * (absolute or relative, `..` included) are followed as the box itself
 * would see them, so they never lead outside the root; magic links
 * (/proc/PID/fd/...) and mount points are refused (-ELOOP, -EXDEV).
 *
 * A symlink as the last component is followed when reading (tarsafe_open
 * without O_CREAT, tarsafe_create) and never when writing: creation uses
 * O_NOFOLLOW or renames over the link, removal removes the link itself.
 * The host never opens a device node, FIFO or socket found in the box.
 *
 * Functions return >= 0 on success and -errno on failure; those taking a
 * pd_error also record a reason a person can read (naming the archive entry
 * for tar errors, e.g. "entry 4 (../x): path leaves the target directory").
 * No function logs, none keeps state between calls; they are safe to call
 * from several threads at once on different paths.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/error.h"

#define TAR_DEFAULT_MAX_ENTRIES 100000ULL
#define TAR_DEFAULT_MAX_BYTES (8ULL << 30)

/* Limits, ownership and link rules for tarsafe_extract(). A zero
 * max_entries or max_bytes means the default. uid/gid own every entry
 * created (files, directories, symlinks); (uid_t)-1 / (gid_t)-1 keeps the
 * creating user (root in the daemon). TAR_LIMITS_INIT gives the defaults
 * with the creating user's ownership and no disk limit. */
struct tar_limits {
	uint64_t max_entries; /* entries of any type, default 100,000 */
	uint64_t max_bytes;   /* sum of the regular files' sizes, default 8 GiB */
	uid_t uid;
	gid_t gid;
	/* Room left under the target's disk limit: when disk_limited, entries
	 * whose charge on a disk (see tarsafe_extract()) would take the total
	 * above disk_room are -ENOSPC, checked from each header before its
	 * data is written. */
	bool disk_limited;
	uint64_t disk_room;
	unsigned flags; /* TAR_* below */
	/* What the root is, for messages ("the box root", "the volume");
	 * NULL: "the target directory". */
	const char *root_what;
};

enum {
	/* Absolute symlink targets name paths from the root (a box's root or
	 * a volume, where the box and the daemon's readers resolve them);
	 * without it they lead outside and are refused. */
	TAR_ABS_LINKS_IN_ROOT = 1u << 0,
	/* Owners are the archive's numeric uid/gid instead of lim->uid/gid. */
	TAR_KEEP_OWNERS = 1u << 1,
	/* An entry refused for its kind (device node, FIFO, socket, a hard
	 * link to anything but an earlier entry), a name deeper than
	 * TARSAFE_MAX_DEPTH or a symlink leading outside is skipped and
	 * reported to the hooks' on_skip() instead of failing the whole
	 * archive; malformed archives and names still fail it. */
	TAR_SKIP_REFUSED = 1u << 2,
	/* A directory of the archive replaces a symlink it meets in the target
	 * (GNU tar's default) instead of merging through it: nothing is ever
	 * written through a link of the target. */
	TAR_REPLACE_DIR_LINKS = 1u << 3,
	/* Directories that exist in the target keep their mode, owner and
	 * time; the archive's apply only to directories it creates. */
	TAR_KEEP_EXISTING_DIRS = 1u << 4,
	/* What a pull onto the host uses: the target is the puller's own. */
	TAR_PULL_FLAGS = TAR_SKIP_REFUSED | TAR_REPLACE_DIR_LINKS | TAR_KEEP_EXISTING_DIRS,
};

#define TAR_LIMITS_INIT                                                                            \
	{                                                                                          \
		.max_entries = 0, .max_bytes = 0, .uid = (uid_t)-1, .gid = (gid_t)-1,              \
		.disk_limited = false, .disk_room = 0, .flags = 0, .root_what = NULL               \
	}

/* What an extraction did: entries read (all types), content bytes, what
 * the entries were charged on a disk, entries skipped (TAR_SKIP_REFUSED),
 * and path lookups the link check made (remembered ones too). */
struct tar_result {
	uint64_t entries;
	uint64_t bytes;
	uint64_t disk;
	uint64_t skipped;
	uint64_t lookups;
};

/*
 * Reads a tar archive from in_fd (ustar, pax or GNU tar; gzip- or
 * zstd-compressed streams are recognised too; an empty stream is an empty
 * archive) and extracts it into DIR, which is created like mkdir -p if
 * missing. `lim` may be NULL (defaults, root ownership).
 *
 * Accepted entries: regular files, directories, symlinks and hard links.
 * Rejected, with a reason naming the entry, and the whole archive with
 * them: empty or absolute names, `..` components, names longer than
 * PATH_MAX, entries whose path goes through a symlink or file of the
 * archive, an archive without its end-of-archive marker (two zero blocks:
 * it was cut short between two entries) (-EINVAL); device nodes, FIFOs and
 * sockets, hard links to anything but an earlier entry of the same archive,
 * symlinks that lead outside the root (see below) (-EPERM); names deeper
 * than TARSAFE_MAX_DEPTH (256) components (-ENAMETOOLONG); more than
 * max_entries entries (-E2BIG); a total size above max_bytes (-EFBIG).
 * With TAR_SKIP_REFUSED the -EPERM kinds and the names too deep are
 * skipped instead. A `./` entry (the directory itself) is counted and
 * skipped. When a name appears twice, the later entry wins.
 *
 * Disk: each entry is charged, from its header and before its data is
 * read (a sparse 1 TiB entry is refused at once), what it may take on a
 * disk: a file its size rounded up to 4 KiB blocks, at least one; a
 * directory (also one the archive only implies) a block; a symlink its
 * target rounded up to a block; a hard link its name plus 64 bytes. The
 * total must fit in lim->disk_room (when disk_limited) and the hooks'
 * reserve() must grant each charge, else -ENOSPC (or reserve()'s error).
 * Existing entries an archive replaces are not credited.
 *
 * Where its directories land: a staged directory merges into the existing
 * directory of the same name; over an existing symlink that leads to a
 * directory of the same filesystem inside the root, it merges through it
 * (like tar's --keep-directory-symlink), unless TAR_REPLACE_DIR_LINKS;
 * over anything else it replaces it. These places are found before any
 * link is judged, and an archive two parts of which would land in one
 * directory (d/ through the link d -> e, and e/ itself; d -> . and any
 * other entry) is refused (-EPERM): every directory of the merged tree
 * then comes from one staged directory, and the merge follows only the
 * links found then, unchanged (else it fails, -ESTALE).
 *
 * Symlinks are checked semantically, as a reader on the host that follows
 * them would resolve them: from the link's real place (where its directory
 * lands), through the links of the archive and those already under the
 * root, as the tree will be once merged. A link is refused when that walk
 * takes `..` above the root, meets an absolute target (unless
 * TAR_ABS_LINKS_IN_ROOT, where it restarts at the root) or more than 40
 * links. Its own target must also back out (`..`) only at its start
 * ("../../lib/x", not "a/../x"): such a link keeps pointing inside
 * whatever later replaces a directory on its way with an inside link.
 * The target's own shape is checked when the link is read; where it leads,
 * once the whole archive is staged (against the final tree, in archive
 * order, so the first link refused is the one named); a hard link to a
 * symlink is judged at its own place. What each path is and where each
 * link leads is worked out once per archive; the whole check may make at
 * most 1,000,000 path lookups plus 64 per link of the archive, else the
 * archive is refused (-E2BIG).
 *
 * Modes keep the permission bits and the sticky bit (setuid/setgid are
 * dropped); mtimes are kept; owners are lim->uid/gid, or the archive's
 * numeric ones with TAR_KEEP_OWNERS. A directory entry's mode, owner and
 * time apply to an existing directory it merges into, unless
 * TAR_KEEP_EXISTING_DIRS.
 *
 * Atomicity: entries are written into a hidden staging directory inside
 * DIR (".paddock-push-XXXXXX", mode 0700) and merged into DIR only once
 * the whole archive was read and accepted: files and symlinks replace
 * existing entries with rename(2). Before merging, a dry run checks that
 * no staged file would replace a non-empty directory (-EISDIR). On any
 * error (rejection, truncated or corrupt stream: -EINVAL; read error: its
 * errno) the staging directory is removed, and so are the directories this
 * call created for DIR: nothing is left behind. A failure of the merge
 * itself (disk full, a racing box) can leave the entries merged so far.
 *
 * No fsync: a crash during extraction may lose recently pushed data.
 * Returns 0 and fills *ret (if not NULL) on success.
 */
int tarsafe_extract(int rootfd, const char *dir, int in_fd, const struct tar_limits *lim,
		    struct tar_result *ret, pd_error *err);

/*
 * Hooks of tarsafe_extract_ex(), all optional (NULL):
 *
 * - special: an entry whose name in the archive is exactly this string
 *   (compared before any normalisation, e.g. "./.paddock-export") is not
 *   extracted. It must be a regular file of at most special_max bytes
 *   (-EINVAL / -EFBIG otherwise); its content is handed to on_special().
 *   It counts as an entry for max_entries.
 * - before_merge() runs once the whole archive was read and accepted, with
 *   an fd of the staging directory (every entry in place, nothing merged
 *   yet). A negative return rejects the archive like any other error:
 *   the staging directory is removed, DIR is unchanged.
 * - reserve() is asked for every entry's charge on a disk (see
 *   tarsafe_extract()) before it is written; a negative return (-ENOSPC
 *   with a reason) refuses the archive. What it granted is the caller's to
 *   release (tar_result.disk on success).
 * These set err when they fail.
 * - on_skip() is told of every entry skipped under TAR_SKIP_REFUSED: its
 *   name (printable) and why.
 */
struct tar_extract_hooks {
	const char *special;
	size_t special_max;
	int (*on_special)(void *userdata, const char *data, size_t len, pd_error *err);
	int (*before_merge)(void *userdata, int stagefd, pd_error *err);
	int (*reserve)(void *userdata, uint64_t bytes, pd_error *err);
	void (*on_skip)(void *userdata, const char *name, const char *why);
	void *userdata;
};

/* tarsafe_extract() with hooks (may be NULL). */
int tarsafe_extract_ex(int rootfd, const char *dir, int in_fd, const struct tar_limits *lim,
		       const struct tar_extract_hooks *hooks, struct tar_result *ret,
		       pd_error *err);

/*
 * Writes PATH as a pax tar stream to out_fd (not closed). A directory is
 * written as its contents, with names relative to it ("a", "sub/",
 * "sub/b"); anything else as one entry named by PATH's basename. A symlink
 * PATH is followed (inside the root); symlinks inside the tree are stored as
 * symlinks, never followed. Hard links within the tree are stored as hard
 * links. Device nodes, FIFOs and sockets are skipped (no entry at all), as
 * are the contents of a directory on another filesystem (its entry is
 * kept). Entries 257 levels deep are written, but not what is below them:
 * the extractor refuses (a pull skips and names) names deeper than 256. A
 * file that shrinks while it is read is padded with zeros, one that grows
 * is cut at the size it had when its header was written.
 * Returns 0, or -errno (-EPERM when PATH is neither a regular file nor a
 * directory, the write error of out_fd, e.g. -EPIPE); after an error the
 * stream is incomplete and has no end-of-archive marker.
 */
int tarsafe_create(int rootfd, const char *path, int out_fd, pd_error *err);

/*
 * Hooks of tarsafe_create_ex(), all optional (NULL):
 *
 * - file_begin(), file_data() (the content in order, with the zeros that
 *   pad a file that shrank) and file_end() for every regular file whose
 *   content is written, named as in the archive;
 * - hardlink() for an entry stored as a hard link to the earlier `target`;
 * - trailer(), after the last entry: when it sets *ret_name, one more
 *   regular file (mode 0444) with that name and content is written before
 *   the end-of-archive marker. The strings stay owned by the hook.
 * A negative return of file_end(), hardlink() or trailer() ends the stream
 * with that error (the hook sets err).
 *
 * owner_base, when not 0: owners in the range of ids from it (a box's,
 * 65536 ids) are written as the box sees them, 0..65535.
 */
struct tar_create_hooks {
	void (*file_begin)(void *userdata, const char *name);
	void (*file_data)(void *userdata, const void *data, size_t len);
	int (*file_end)(void *userdata, uint64_t size, pd_error *err);
	int (*hardlink)(void *userdata, const char *name, const char *target, pd_error *err);
	int (*trailer)(void *userdata, const char **ret_name, const char **ret_data,
		       size_t *ret_len, pd_error *err);
	void *userdata;
	uint32_t owner_base;
};

/* tarsafe_create() with hooks (may be NULL). */
int tarsafe_create_ex(int rootfd, const char *path, int out_fd,
		      const struct tar_create_hooks *hooks, pd_error *err);

/*
 * Opens PATH inside the root with open(2) flags (O_CLOEXEC is added).
 * With O_CREAT the last component is never followed (a symlink there is
 * -ELOOP, or -EEXIST with O_EXCL). An existing entry that is not a regular
 * file or directory is -EPERM and is never opened. Returns the fd or -errno.
 */
int tarsafe_open(int rootfd, const char *path, int flags, mode_t mode);

/*
 * mkdir -p of PATH inside the root. Created directories get `mode` and the
 * owner uid/gid ((uid_t)-1/(gid_t)-1: root); existing ones (or symlinks to
 * directories inside the root) are left alone. A non-directory in the way
 * is -ENOTDIR (-EEXIST for a dangling symlink). Returns 1 if it created the
 * last component, 0 if it existed, or -errno.
 */
int tarsafe_mkdir_p(int rootfd, const char *path, mode_t mode, uid_t uid, gid_t gid);

/*
 * Removes PATH: a file, symlink (the link itself) or empty directory; with
 * `recursive`, a directory tree, never following symlinks nor crossing
 * into another filesystem. The root itself is -EPERM; a missing PATH is
 * -ENOENT; a non-empty directory without `recursive` is -ENOTEMPTY.
 */
int tarsafe_remove(int rootfd, const char *path, bool recursive, pd_error *err);

/*
 * Atomic replacement of one file, fed in pieces (an HTTP body as it
 * arrives):
 *
 *	struct tarsafe_replace rep;
 *	k = tarsafe_replace_begin(rootfd, "etc/motd", 0644, uid, gid, &rep, &err);
 *	... write_all(rep.fd, chunk, n) for every chunk ...
 *	k = tarsafe_replace_commit(&rep, &err);   (or tarsafe_replace_abort(&rep))
 *
 * begin() creates a temp file ".paddock-put-XXXXXX" in PATH's parent
 * directory, which must exist (-ENOENT otherwise). When PATH is an existing
 * regular file its mode and owner are kept; otherwise `mode` (& 01777) and
 * uid/gid are used. PATH being a directory is -EISDIR; any other kind of
 * entry (a symlink too) is replaced. commit() renames the temp file over
 * PATH (no fsync) and releases `r`; on failure it removes the temp file and
 * releases `r` too. abort() removes the temp file and releases `r`.
 * begin() initialises *ret even when it fails, and a released struct is
 * left inert, so abort() may be called unconditionally on cleanup paths.
 */
struct tarsafe_replace {
	int fd;	   /* the temp file, open for writing; -1 when released */
	int dirfd; /* PATH's parent directory */
	char name[256];
	char tmpname[32];
};

int tarsafe_replace_begin(int rootfd, const char *path, mode_t mode, uid_t uid, gid_t gid,
			  struct tarsafe_replace *ret, pd_error *err);
int tarsafe_replace_commit(struct tarsafe_replace *r, pd_error *err);
void tarsafe_replace_abort(struct tarsafe_replace *r);

/* libarchive's reason for its last failure, never NULL: it has none for
 * some (a gzip stream cut in its trailer), then its errno's text or a
 * fixed one. For every message that quotes libarchive. */
struct archive;
const char *tarsafe_archive_why(struct archive *a);
