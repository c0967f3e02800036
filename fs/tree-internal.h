/* tree-internal.h - shared by the tree's files: tree.c (the generic code:
 * attributes, lookup, listing, open, read, write, temps, directories) and
 * tree-nodes.c (each object kind's table of nodes and their handlers).
 * Nothing here is for the adapters: they use tree.h. */
#pragma once

#include <assert.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sys/stat.h>

#include "engine/auth.h"
#include "autoconfig.h"
#include "engine/agents.h"
#include "engine/jobs.h"
#include "engine/prompts.h"
#include "common/buf.h"
#include "common/lock.h"
#include "net/policy.h"
#include "fs/tree.h"
#include "runtime/export.h"
#include "engine/secrets.h"
#include "engine/volumes.h"

#define KIND_STATIC 0ULL
#define KIND_TYPE 1ULL
#define KIND_IMAGE 2ULL
#define KIND_BOX 3ULL
#define KIND_TEMP 4ULL
#define KIND_JOB 5ULL
#define KIND_TOKEN 6ULL	  /* id: the token's store seq */
#define KIND_SNAP 7ULL	  /* id: the snapshot's store seq */
#define KIND_VOLUME 9ULL  /* id: the volume's store id */
#define KIND_SECRET 12ULL /* id: the secret's store id; one file, no directory */
#define KIND_PROMPT 10ULL /* id: the prompt's job id (jobs.h) */
#define KIND_AGENT 11ULL  /* id: the agent's slot (tree_image_slot_name(): "@ID") */

#define INO(kind, id, file) (((kind) << 56) | ((uint64_t)(id) << 8) | (uint64_t)(file))
#define INO_KIND(ino) ((ino) >> 56)
#define INO_ID(ino) (((ino) >> 8) & ((1ULL << 48) - 1))
#define INO_FILE(ino) ((ino)&0xff)

enum {
	S_ROOT = TREE_ROOT_INO,
	S_README,
	S_VERSION,
	S_TYPES,
	S_IMAGES,
	S_BOXES,
	S_EVENTS,
	S_TOKENS,
	S_SNAPSHOTS,
	S_VOLUMES,
	S_SECRETS,
	S_AGENTS,
};
_Static_assert(S_IMAGES == TREE_IMAGES_INO && S_BOXES == TREE_BOXES_INO &&
		   S_TOKENS == TREE_TOKENS_INO && S_SNAPSHOTS == TREE_SNAPSHOTS_INO &&
		   S_VOLUMES == TREE_VOLUMES_INO && S_SECRETS == TREE_SECRETS_INO,
	       "tree.h inodes");

#define VALUE_MAX 255
#define TEMP_MAX_PER_DIR 32
#define TEMP_DATA_MAX (64 * 1024)
#define IMAGE_SLOTS_MAX 4096

/* snapshots/ID/. SF_LINK: the entry ID of a box's snapshots/ directory, a
 * link to ../../../snapshots/ID (not a name in the snapshot's directory).
 * SF_LAST: the entry `last` there while this is the box's newest snapshot,
 * a link to its sibling ID (one inode per snapshot, like exec/last). */
enum { SF_DIR, SF_BOX, SF_LABEL, SF_CREATED, SF_SIZE, SF_ROOT, SF_ERROR, SF_EXPORT, _SF_MAX };
#define SF_LINK 0x40
#define SF_LAST 0x41

/* volumes/NAME/: data leads to the volume's directory on the host. */
enum { VF_DIR, VF_DATA, VF_SIZE, VF_BOXES, VF_EXPORT, VF_IMPORT, VF_ERROR, _VF_MAX };

/* tokens/ID/: the owner's access tokens (auth.h), read-only; rmdir revokes. */
enum { TF_DIR, TF_LABEL, TF_CREATED, TF_LAST_USED, TF_EXPIRES, _TF_MAX };

enum { IF_DIR, IF_DESCRIPTION, IF_SIZE, IF_CREATED, _IF_MAX };

enum {
	BF_DIR,
	BF_STATE,
	BF_TYPE,
	BF_IMAGE,
	BF_CREATED,
	BF_USAGE,
	BF_INFO,
	BF_ERROR,
	BF_EVENTS,
	BF_TTL,
	BF_EXPIRES,
	BF_ROOT,
	BF_EXEC,
	BF_SNAPSHOT,
	BF_FORK,
	BF_RESTORE,
	BF_SNAPSHOTS,
	BF_VOLUMES,
	BF_IP,
	BF_POLICY,
	BF_SCREENSHOT,
	BF_DESKTOP,
	BF_SECRETS,
	BF_PROMPTS,
	BF_PROMPT,
	BF_DOCKER,
	BF_PORTS,
	BF_URLS,
	_BF_MAX
};

/* desktop/: the files of a box's desktop directory. */
#define BF_DESKTOP_STATE 41
#define BF_DESKTOP_GEOMETRY 42
#define BF_DESKTOP_URL 43
#define BF_DESKTOP_INPUT 44
#define BF_DESKTOP_WINDOWS 45
#define BF_DESKTOP_CURSOR 46

/* exec/new: a file of the box's exec directory, whose other entries are
 * its jobs and exec/last. */
#define BF_EXEC_NEW 40

enum {
	JF_DIR,
	JF_CMD,
	JF_ENV,
	JF_CWD,
	JF_USER,
	JF_DESKTOP,
	JF_STDIN,
	JF_STDOUT,
	JF_STDERR,
	JF_OUTPUT,
	JF_STATUS,
	JF_EXIT,
	JF_CTL,
	JF_PID,
	JF_STARTED,
	JF_ENDED,
	_JF_MAX
};
/* exec/last while this job is its box's last: a link to the job's name. Not
 * a name in the job's directory. */
#define JF_LAST 0x40

/* prompts/P/ (prompts.h); PF_LAST as JF_LAST, for prompts/last. */
enum {
	PF_DIR,
	PF_AGENT,
	PF_MODEL,
	PF_CWD,
	PF_ENV,
	PF_CONTINUE,
	PF_TEXT,
	PF_EVENTS,
	PF_RESULT,
	PF_STATUS,
	PF_EXIT,
	PF_SESSION,
	PF_OUTPUT,
	PF_CTL,
	PF_STARTED,
	PF_ENDED,
	_PF_MAX
};
#define PF_LAST 0x40

struct temp_file {
	uint64_t id;
	uint64_t parent;
	char name[TREE_NAME_MAX + 1];
	char *data;
	int fd; /* -1: in data */
	uint64_t len;
	uint32_t mode;
	time_t mtime;
	struct temp_file *next;
};

struct tree {
	struct engine *engine;
	time_t started;
	struct pd_mutex lock; /* temps and image slots */
	struct temp_file *temps;
	uint64_t next_temp_id;
	char *image_slots[IMAGE_SLOTS_MAX];
	size_t n_image_slots;
	/* Open files: the kernel sends no release for those still open when
	 * the session ends, and tree_free() frees them. Under lock. */
	struct tree_file *files;
};

struct tree_file {
	uint64_t ino;
	int flags;
	char *content; /* rendered value */
	size_t len;
	int stream_fd;	/* events log or job stream, or -1 */
	bool wait_exit; /* a job's exit: reads wait for the end */
	bool json;	/* its node is N_JSON */
	uint64_t wait_key;
	/* Multi-line values (env, cmd, exec/new) may arrive in several
	 * write(2)s of one open: they accumulate here. */
	char *wbuf;
	size_t wlen;
	bool pending;		       /* cmd/new: applied at flush (close) */
	char *answer;		       /* what the last write made (tree_file_answer) */
	struct export_stream *export;  /* volumes/NAME/export, snapshots/ID/export */
	struct volume_import *import;  /* volumes/NAME/import: applied at flush */
	struct tree_file *prev, *next; /* tree->files */
};

/* --- the node tables' shape --------------------------------------------------- */

struct pd_buf;

/* The object a node belongs to, fetched from the engine once per call
 * (node_of()) and handed to the row's handlers. */
struct obj {
	uint64_t ino;
	const struct kind *kind;
	const struct node *node; /* the row of ino's file */
	time_t mtime;
	/* The id the engine's calls on the object take, from the inode: a
	 * box's (also for its jobs: their error file is the box's), a job's
	 * box's, a volume's; 0 for other kinds (a snapshot is addressed by
	 * snap.id, "BOX-SEQ", never reused either). Never a name: an inode
	 * kept open across an rmdir and a mkdir of the same name must not
	 * reach the new object. */
	int64_t id;
	union {
		struct box_view box;
		struct job_view job;
		struct snapshot_view snap;
		struct volume_view vol;
		struct auth_token tok;
		struct image_info img;
		struct secret_view sec;
	};
};

/* One row of a kind's table: a file, link or directory of every object of
 * that kind. Everything else is derived from the row:
 *  - the mode any adapter shows (tree_mode(): the group gets the owner's
 *    bits) and whether an open for writing is allowed (writable());
 *  - the size in getattr: a rendered value's length (read), a stream's
 *    current length (stream), 0 for sinks and archives;
 *  - where it is listed (dir) and so which directories take the temp files
 *    of "write a temp, rename it over the file" (temps_allowed());
 *  - how a write is applied (flags, write) and where its failure is
 *    recorded (the kind's record, as the row's label()).
 * Adding a control file is one row and its handler. */
struct node {
	const char *name;
	uint32_t mode;	/* type and the owner's permission bits */
	uint8_t dir;	/* the row of the directory that lists it, or NODE_UNLISTED */
	unsigned flags; /* N_* */
	/* Renders the value (regular files; NULL: reads as empty). */
	int (*read)(struct tree *t, const struct obj *o, struct pd_buf *out);
	/* Applies one written value; the reason of a refusal in err. What the
	 * write made (a snapshot's id) may go to *ret_answer. */
	int (*write)(struct tree *t, const struct obj *o, const char *data, size_t len,
		     pd_error *err, json_t **ret_answer);
	/* For write_setting(): the engine's setter of a one-line value,
	 * called with the object's id (struct obj's id). */
	int (*set)(struct engine *e, int64_t id, const char *value, pd_error *err);
	/* A followed stream: opens its log (returns an fd) and says which
	 * wake key announces growth. Reads at its end wait (TREE_WAIT). */
	int (*stream)(struct tree *t, const struct obj *o, uint64_t *ret_key);
	/* An archive (export stream, import sink): set up at open. */
	int (*open)(struct tree *t, const struct obj *o, struct tree_file *f,
		    struct tree_error *te);
	/* The target of a link. */
	int (*link)(struct tree *t, const struct obj *o, char *buf, size_t bufsz);
	/* N_WHOLE: the value written so far waits for more (applied at close
	 * if nothing else comes). */
	bool (*waits)(const char *data, size_t len);
	/* For the shared readers tree_read_text() and tree_read_time(): where
	 * in struct obj the value is (a string, a time_t). Set through
	 * OBJ_TEXT() and OBJ_TIME(), which check the field's type. */
	unsigned short field;
};

_Static_assert(sizeof(struct obj) <= 0xffff, "struct node's field holds an offset in struct obj");

#define OBJ_TEXT(f)                                                                                \
	(offsetof(struct obj, f) +                                                                 \
	 0 * sizeof(                                                                               \
		 char[__builtin_types_compatible_p(__typeof__(&((struct obj *)0)->f[0]), char *)   \
			  ? 1                                                                      \
			  : -1]))
#define OBJ_TIME(f)                                                                                \
	(offsetof(struct obj, f) +                                                                 \
	 0 * sizeof(char[__builtin_types_compatible_p(__typeof__(((struct obj *)0)->f), time_t)    \
			     ? 1                                                                   \
			     : -1]))

#define NODE_UNLISTED 0xff

enum {
	N_LINE = 1 << 0,     /* a write is one value of one line (value_from_write()) */
	N_WHOLE = 1 << 1,    /* written in several write(2)s of one open: each applies all so far */
	N_AT_CLOSE = 1 << 2, /* ...: applied once, at close (a command) */
	N_AFTER_END = 1 << 3,	/* read once its job has ended (exit) */
	N_NEEDS_START = 1 << 4, /* open refused while its job has not started: no end would come */
	N_PARTIAL = 1 << 5,	/* a write may be refused for now (EAGAIN), recorded nowhere */
	N_IMPORT = 1 << 6,	/* an archive's sink: its writes go to f->import */
	N_JSON = 1 << 7,	/* its value is one JSON object (tree_file_is_json()) */
};

/* An object kind: its table (indexed by the inode's file byte), how its
 * object is fetched and where its write failures are recorded. */
struct kind {
	const struct node *nodes;
	size_t n;
	int (*get)(struct tree *t, uint64_t ino, struct obj *o);
	void (*record)(struct tree *t, const struct obj *o, const char *label, const pd_error *err);
};

/* --- shared between tree.c and tree-nodes.c --------------------------------------- */

/* The tables, indexed by KIND_*: kinds without one have nodes == NULL. */
extern const struct kind tree_kinds[];
extern const size_t tree_n_kinds;

/* Set while tree_getattr() renders a value for its size only: the size of
 * `usage` and `info` then comes from the box's last disk walk, never from
 * a new one (engine.h: a lookup must not walk a box's files). */
extern __thread bool tree_sizing;
/* While tree_open() renders a value: where a reader that fails says why
 * (tree_tell()), for the HTTP answer; NULL otherwise. */
extern __thread struct tree_error *tree_rendering_te;

/* The image an image node's slot names (slots are never freed while the
 * tree lives), or NULL. */
const char *tree_image_slot_name(struct tree *t, uint64_t slot);

/* Hands err, just recorded as label's failure in an object's error file, to
 * the caller of the tree function (te may be NULL): the very line the file
 * shows, so no adapter has to read the file back. Returns err->code. */
int tree_tell(struct tree_error *te, const char *label, const pd_error *err);
