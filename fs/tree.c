/* tree.c - the nodes of /paddock and their handlers.
 *
 * Inode numbers: the top byte is the node kind; the rest names the object
 * (a store id or a slot) and, in the low byte, the file within it. Store ids
 * are never reused, so an inode always names the same object, and a link's
 * target is fixed for its inode's life: `root` leads to its box's own
 * overlay mount, and exec/last is a link node of the job it leads to
 * (KIND_JOB, JF_LAST), so a newer last job is a new inode, not a changed
 * target. Adapters may cache link targets.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>

#include "auth.h"
#include "autoconfig.h"
#include "jobs.h"
#include "lock.h"
#include "policy.h"
#include "tree.h"
#include "export.h"
#include "volumes.h"

#define KIND_STATIC 0ULL
#define KIND_TYPE 1ULL
#define KIND_IMAGE 2ULL
#define KIND_BOX 3ULL
#define KIND_TEMP 4ULL
#define KIND_JOB 5ULL
#define KIND_TOKEN 6ULL	 /* id: the token's store seq */
#define KIND_SNAP 7ULL	 /* id: the snapshot's store seq */
#define KIND_VOLUME 9ULL /* id: the volume's store id */

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
};
_Static_assert(S_IMAGES == TREE_IMAGES_INO && S_BOXES == TREE_BOXES_INO &&
		   S_TOKENS == TREE_TOKENS_INO && S_SNAPSHOTS == TREE_SNAPSHOTS_INO &&
		   S_VOLUMES == TREE_VOLUMES_INO,
	       "tree.h inodes");

#define VALUE_MAX 255
#define TEMP_MAX_PER_DIR 32
#define TEMP_DATA_MAX (64 * 1024)
#define IMAGE_SLOTS_MAX 4096

struct node_def {
	const char *name;
	uint32_t mode;
};

static const struct node_def root_nodes[] = {
    [S_README] = {"README", S_IFREG | 0444},   [S_VERSION] = {"version", S_IFREG | 0444},
    [S_TYPES] = {"types", S_IFDIR | 0555},     [S_IMAGES] = {"images", S_IFDIR | 0555},
    [S_BOXES] = {"boxes", S_IFDIR | 0755},     [S_EVENTS] = {"events", S_IFREG | 0444},
    [S_TOKENS] = {"tokens", S_IFDIR | 0700},   [S_SNAPSHOTS] = {"snapshots", S_IFDIR | 0755},
    [S_VOLUMES] = {"volumes", S_IFDIR | 0755},
};

/* snapshots/ID/. SF_LINK: the entry ID of a box's snapshots/ directory, a
 * link to ../../../snapshots/ID (not a name in the snapshot's directory).
 * SF_LAST: the entry `last` there while this is the box's newest snapshot,
 * a link to its sibling ID (one inode per snapshot, like exec/last). */
enum { SF_DIR, SF_BOX, SF_LABEL, SF_CREATED, SF_SIZE, SF_ROOT, SF_ERROR, SF_EXPORT, _SF_MAX };
#define SF_LINK 0x40
#define SF_LAST 0x41
static const struct node_def snap_files[] = {
    [SF_BOX] = {"box", S_IFREG | 0444},		[SF_LABEL] = {"label", S_IFREG | 0644},
    [SF_CREATED] = {"created", S_IFREG | 0444}, [SF_SIZE] = {"size", S_IFREG | 0444},
    [SF_ROOT] = {"root", S_IFLNK | 0777},	[SF_ERROR] = {"error", S_IFREG | 0444},
    [SF_EXPORT] = {"export", S_IFREG | 0444},
};

/* volumes/NAME/: data leads to the volume's directory on the host. */
enum { VF_DIR, VF_DATA, VF_SIZE, VF_BOXES, VF_EXPORT, VF_IMPORT, VF_ERROR, _VF_MAX };
static const struct node_def volume_files[] = {
    [VF_DATA] = {"data", S_IFLNK | 0777},     [VF_SIZE] = {"size", S_IFREG | 0444},
    [VF_BOXES] = {"boxes", S_IFREG | 0444},   [VF_EXPORT] = {"export", S_IFREG | 0444},
    [VF_IMPORT] = {"import", S_IFREG | 0200}, [VF_ERROR] = {"error", S_IFREG | 0444},
};

/* tokens/ID/: the owner's access tokens (auth.h), read-only; rmdir revokes. */
enum { TF_DIR, TF_LABEL, TF_CREATED, TF_LAST_USED, _TF_MAX };
static const struct node_def token_files[] = {
    [TF_LABEL] = {"label", S_IFREG | 0400},
    [TF_CREATED] = {"created", S_IFREG | 0400},
    [TF_LAST_USED] = {"last_used", S_IFREG | 0400},
};

enum { IF_DIR, IF_DESCRIPTION, IF_SIZE, IF_CREATED, _IF_MAX };
static const struct node_def image_files[] = {
    [IF_DESCRIPTION] = {"description", S_IFREG | 0444},
    [IF_SIZE] = {"size", S_IFREG | 0444},
    [IF_CREATED] = {"created", S_IFREG | 0444},
};

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
	_BF_MAX
};
static const struct node_def box_files[] = {
    [BF_STATE] = {"state", S_IFREG | 0644},	  [BF_TYPE] = {"type", S_IFREG | 0644},
    [BF_IMAGE] = {"image", S_IFREG | 0644},	  [BF_CREATED] = {"created", S_IFREG | 0444},
    [BF_USAGE] = {"usage", S_IFREG | 0444},	  [BF_INFO] = {"info", S_IFREG | 0444},
    [BF_ERROR] = {"error", S_IFREG | 0444},	  [BF_EVENTS] = {"events", S_IFREG | 0444},
    [BF_TTL] = {"ttl", S_IFREG | 0644},		  [BF_EXPIRES] = {"expires", S_IFREG | 0444},
    [BF_ROOT] = {"root", S_IFLNK | 0777},	  [BF_EXEC] = {"exec", S_IFDIR | 0755},
    [BF_SNAPSHOT] = {"snapshot", S_IFREG | 0200}, [BF_FORK] = {"fork", S_IFREG | 0200},
    [BF_RESTORE] = {"restore", S_IFREG | 0200},	  [BF_SNAPSHOTS] = {"snapshots", S_IFDIR | 0555},
    [BF_VOLUMES] = {"volumes", S_IFREG | 0644},	  [BF_IP] = {"ip", S_IFREG | 0444},
    [BF_POLICY] = {"policy", S_IFREG | 0644},
};

/* exec/new: a file of the box's exec directory, whose other entries are
 * its jobs and exec/last. */
#define BF_EXEC_NEW 40
enum { XF_DIR, XF_NEW, _XF_MAX };
static const struct node_def exec_files[] = {
    [XF_NEW] = {"new", S_IFREG | 0200},
};

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
static const struct node_def job_files[] = {
    [JF_CMD] = {"cmd", S_IFREG | 0644},		[JF_ENV] = {"env", S_IFREG | 0644},
    [JF_CWD] = {"cwd", S_IFREG | 0644},		[JF_USER] = {"user", S_IFREG | 0644},
    [JF_DESKTOP] = {"desktop", S_IFREG | 0644}, [JF_STDIN] = {"stdin", S_IFREG | 0200},
    [JF_STDOUT] = {"stdout", S_IFREG | 0444},	[JF_STDERR] = {"stderr", S_IFREG | 0444},
    [JF_OUTPUT] = {"output", S_IFREG | 0444},	[JF_STATUS] = {"status", S_IFREG | 0444},
    [JF_EXIT] = {"exit", S_IFREG | 0444},	[JF_CTL] = {"ctl", S_IFREG | 0200},
    [JF_PID] = {"pid", S_IFREG | 0444},		[JF_STARTED] = {"started", S_IFREG | 0444},
    [JF_ENDED] = {"ended", S_IFREG | 0444},
};

static const char readme_text[] =
    "Paddock: isolated Linux boxes, driven by file operations.\n"
    "\n"
    "  mkdir boxes/web                   create a box (state: created)\n"
    "  echo running > boxes/web/state    start it; echo stopped > ... stops it\n"
    "  cat boxes/web/usage               cpu_usec, cpu_percent (last 5 s, 100 = one CPU),\n"
    "                                    memory_bytes, pids, disk_bytes\n"
    "  echo medium > boxes/web/type      change its limits (live when running)\n"
    "  cat boxes/web/error               why the last control write failed: TIME FILE:\n"
    "                                    reason (ERRNO), until FILE is written fine\n"
    "  cat boxes/web/events              follow its lifecycle events\n"
    "  rmdir boxes/web                   stop and delete it\n"
    "  echo before-upgrade > boxes/web/snapshot   snapshot it (running or not)\n"
    "  readlink boxes/web/snapshots/last the id of its newest snapshot\n"
    "  echo web2 > boxes/web/fork        new box web2 from web's filesystem\n"
    "                                    (with its type, policy, TTL, volumes)\n"
    "  echo web-3 > boxes/web/restore    reset web's filesystem to snapshot web-3\n"
    "                                    (an id, or a label only one of web's\n"
    "                                    snapshots has); a running box is stopped\n"
    "                                    first, which ends its jobs (see events)\n"
    "\n"
    "Commands (exec/): a job's streams follow it live and end with it.\n"
    "  echo 'make test' > boxes/web/exec/new     run it as the next numbered job\n"
    "  cat boxes/web/exec/last/output; cat boxes/web/exec/last/exit\n"
    "  mkdir boxes/web/exec/build; echo /src > boxes/web/exec/build/cwd\n"
    "  echo 'make' > boxes/web/exec/build/cmd    env, cwd, user go before cmd\n"
    "  echo kill > boxes/web/exec/build/ctl      or: signal TERM, eof\n"
    "  (exit of a job whose cmd was never written: EBUSY at once, see error)\n"
    "\n"
    "Network and lifetime:\n"
    "  echo deny-all > boxes/web/policy          or allow-all, or several lines:\n"
    "  printf 'allowlist\\nexample.org\\n10.0.0.0/8\\n' > boxes/web/policy\n"
    "  echo 2h > boxes/web/ttl                   stopped in 2 hours; none clears\n"
    "  cat boxes/web/expires                     when (RFC 3339), or never\n"
    "\n"
    "Events follow for ever (like tail -f): stop reading with Ctrl-C.\n"
    "  cat events                                every box's, one line each\n"
    "  cat boxes/web/events                      TIME web started, ...\n"
    "\n"
    "root/ is the box's filesystem. Symbolic links in it are not followed\n"
    "from the host (ELOOP): use real paths (root/usr/bin, not root/bin), or\n"
    "read through the HTTP mirror or inside the box.\n"
    "\n"
    "  types/NAME    limits of each box type\n"
    "  images/NAME/  installed base images\n"
    "  events        every lifecycle event, live\n"
    "  snapshots/ID/ box, label, created, size, root/ (read-only), export\n"
    "                (a zstd tar; import it into a volume);\n"
    "                every stop takes one; rmdir snapshots/ID deletes one\n"
    "                (EBUSY while a box is built on it: see its error file)\n"
    "  tokens/ID/    access tokens of the HTTP API (made by logging in):\n"
    "                label, created, last_used; rmdir tokens/ID revokes one\n"
    "\n"
    "  mkdir volumes/data                a named volume; outlives every box\n"
    "  echo data > boxes/web/volumes     mount it at /mnt/data (at once)\n"
    "  cat volumes/data/export > v.tzst  a zstd tar; write one to import\n"
    "  volumes/data/data/                its files; size, boxes, error\n"
    "  rmdir volumes/data                delete it (EBUSY while attached)\n"
    "\n"
    "Owners in root/: each box has its own user namespace; its ids 0-65535\n"
    "are host ids BASE+0-65535, BASE its range (stat -c %u boxes/NAME/root\n"
    "shows it: box root owns /). What you write through root/ becomes the\n"
    "box's default user's; to give a file another box id N, chown it to\n"
    "BASE+N. Pulls, snapshot roots and exports show the ids the box sees.\n"
    "\n"
    "Inside a box, free, top, uptime and /proc/meminfo, cpuinfo, stat, uptime\n"
    "show the box's type and its own uptime (lxcfs); nproc counts the host's\n"
    "CPUs: a type's cpus is a quota, not a set of CPUs.\n"
    "\n"
    "A failed write returns an errno (EINVAL bad value, EBUSY wrong state,\n"
    "ENOENT no such object, EEXIST name taken) and changes nothing; the\n"
    "reason is in the box's error file.\n"
    "\n"
    "Root and the members of one group (stat -c %G on this directory; config\n"
    "key group) may use this tree; anyone else gets EACCES. Modes say so:\n"
    "the group has the owner's bits (0660 read-write, 0440 read-only, 0220\n"
    "write-only, 0770 directories), others none.\n";

/* A temp file: held in memory (data), or for the archives written to a
 * volume's import, in an unnamed file of the data directory (fd). */
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

/* --- helpers ---------------------------------------------------------------- */

/* The one place modes are decided: the tables above state the owner's
 * (root's) permissions; the group (who may use the tree, access.h) gets
 * the same, everyone else nothing. 0644 -> 0660, 0444 -> 0440, 0200 -> 0220,
 * 0755 -> 0770, 0555 -> 0550. The FUSE adapter and the HTTP listing both
 * show what this returns. */
static uint32_t tree_mode(uint32_t mode)
{
	uint32_t owner = mode & S_IRWXU;

	return (mode & S_IFMT) | owner | (owner >> 3);
}

static struct tree_attr mkattr(uint64_t ino, uint32_t mode, uint64_t size, time_t mtime)
{
	mode = tree_mode(mode);
	return (struct tree_attr){
	    .ino = ino, .mode = mode, .size = size, .nlink = S_ISDIR(mode) ? 2 : 1, .mtime = mtime};
}

static int image_slot(struct tree *t, const char *name)
{
	int slot = -ENOSPC;

	pd_mutex_lock(&t->lock);
	for (size_t i = 0; i < t->n_image_slots; i++)
		if (strcmp(t->image_slots[i], name) == 0) {
			slot = (int)i;
			goto out;
		}
	if (t->n_image_slots < IMAGE_SLOTS_MAX) {
		char *copy = strdup(name);
		if (!copy) {
			slot = -ENOMEM;
			goto out;
		}
		t->image_slots[t->n_image_slots] = copy;
		slot = (int)t->n_image_slots++;
	}
out:
	pd_mutex_unlock(&t->lock);
	return slot;
}

static const char *image_slot_name(struct tree *t, uint64_t slot)
{
	const char *name = NULL;

	pd_mutex_lock(&t->lock);
	if (slot < t->n_image_slots)
		name = t->image_slots[slot];
	pd_mutex_unlock(&t->lock);
	return name; /* slots are never freed while the tree lives */
}

static struct temp_file *find_temp(struct tree *t, uint64_t parent, const char *name)
{
	for (struct temp_file *f = t->temps; f; f = f->next)
		if (f->parent == parent && strcmp(f->name, name) == 0)
			return f;
	return NULL;
}

static struct temp_file *find_temp_id(struct tree *t, uint64_t id)
{
	for (struct temp_file *f = t->temps; f; f = f->next)
		if (f->id == id)
			return f;
	return NULL;
}

static void drop_temp(struct tree *t, struct temp_file *victim)
{
	for (struct temp_file **p = &t->temps; *p; p = &(*p)->next)
		if (*p == victim) {
			*p = victim->next;
			if (victim->fd >= 0)
				close(victim->fd);
			free(victim->data);
			free(victim);
			return;
		}
}

/* Hands err, just recorded as label's failure in an object's error file, to
 * the caller of the tree function (te may be NULL): the very line the file
 * shows, so no adapter has to read the file back. Returns err->code. */
static int tell(struct tree_error *te, const char *label, const pd_error *err)
{
	if (te && err->code) {
		te->code = err->code;
		engine_error_line(err, label, te->text, sizeof te->text);
	}
	return err->code;
}

static void tell_clear(struct tree_error *te)
{
	if (te) {
		te->code = 0;
		te->text[0] = '\0';
	}
}

static int lookup_index(const struct node_def *defs, size_t n, const char *name)
{
	for (size_t i = 1; i < n; i++)
		if (defs[i].name && strcmp(defs[i].name, name) == 0)
			return (int)i;
	return -ENOENT;
}

/* --- rendering ---------------------------------------------------------------- */

struct buf {
	char *data;
	size_t len;
};

static int buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	char *s;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -ENOMEM;
	char *nd = realloc(b->data, b->len + (size_t)n + 1);
	if (!nd) {
		free(s);
		return -ENOMEM;
	}
	memcpy(nd + b->len, s, (size_t)n + 1);
	b->data = nd;
	b->len += (size_t)n;
	free(s);
	return 0;
}

static json_t *usage_json(const struct box_usage *u)
{
	return json_pack("{s:I, s:I, s:I, s:I, s:I}", "cpu_usec", (json_int_t)u->cpu_usec,
			 "cpu_percent", (json_int_t)u->cpu_percent, "memory_bytes",
			 (json_int_t)u->memory_bytes, "pids", (json_int_t)u->pids, "disk_bytes",
			 (json_int_t)u->disk_bytes);
}

/* A JSON string of text from anywhere (a box, a client, an old row):
 * jansson takes only valid UTF-8, so anything else is escaped first
 * (text_printable()) rather than failing the whole rendering. */
static json_t *json_text(const char *s)
{
	size_t len = strlen(s);
	json_t *j;

	if (utf8_valid(s, len))
		return json_stringn(s, len);
	char *clean = malloc(4 * len + 1);
	if (!clean)
		return NULL;
	text_printable(s, len, clean, 4 * len + 1);
	j = json_string(clean);
	free(clean);
	return j;
}

/* Set while tree_getattr() renders a value for its size only: the size of
 * `usage` and `info` then comes from the box's last disk walk, never from
 * a new one (engine.h: a lookup must not walk a box's files). */
static __thread bool sizing;

static int render_info(struct tree *t, const struct box_view *v, struct buf *out)
{
	const struct box_type *type = config_find_type(engine_config(t->engine), v->type);
	struct box_usage u = {0};
	char created[32];
	json_t *j, *limits;
	char *s;

	(void)engine_box_usage(t->engine, v->name, sizing ? ENGINE_USAGE_NO_WALK : 0, &u);
	format_rfc3339(v->created, created, sizeof created);
	limits = json_object();
	if (type) {
		char cpus[32];
		format_cpus(type->millicpus, cpus, sizeof cpus);
		json_object_set_new(limits, "cpus", json_string(cpus));
		json_object_set_new(limits, "memory", json_integer((json_int_t)type->memory));
		json_object_set_new(limits, "pids", json_integer((json_int_t)type->pids));
		json_object_set_new(limits, "disk", json_integer((json_int_t)type->disk));
	}
	j = json_pack("{s:s, s:s, s:s, s:s, s:s, s:o, s:o, s:o}", "name", v->name, "state",
		      box_state_to_string(v->state), "type", v->type, "image", v->image, "created",
		      created, "usage", usage_json(&u), "limits", limits, "error",
		      json_text(v->error));
	if (!j)
		return -ENOMEM;
	{
		char **vols = NULL;
		size_t n = 0;
		json_t *arr = json_array();
		if (engine_box_volumes(t->engine, v->name, &vols, &n) >= 0)
			for (size_t i = 0; i < n; i++)
				json_array_append_new(arr, json_string(vols[i]));
		image_list_free(vols, n);
		json_object_set_new(j, "volumes", arr);
		/* A change on a running box waits for its next start. */
		json_object_set_new(j, "volumes_pending",
				    json_boolean(engine_box_volumes_pending(t->engine, v->name)));
	}
	{
		char ip[32] = "";
		char *policy = NULL;
		(void)engine_box_ip(t->engine, v->name, ip, sizeof ip);
		json_object_set_new(j, "ip", json_string(ip));
		if (engine_box_policy(t->engine, v->name, &policy) >= 0)
			json_object_set_new(j, "policy", json_text(policy));
		free(policy);
	}
	s = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	if (!s)
		return -ENOMEM;
	int r = buf_printf(out, "%s\n", s);
	free(s);
	return r;
}

static int render_box_file(struct tree *t, int64_t id, unsigned file, struct buf *out)
{
	struct box_view v;
	struct box_usage u;
	char ts[32];
	int r;

	r = engine_box_get_by_id(t->engine, id, &v);
	if (r < 0)
		return r;
	switch (file) {
	case BF_STATE:
		return buf_printf(out, "%s\n", box_state_to_string(v.state));
	case BF_TYPE:
		return buf_printf(out, "%s\n", v.type);
	case BF_IMAGE:
		return buf_printf(out, "%s\n", v.image);
	case BF_CREATED:
		format_rfc3339(v.created, ts, sizeof ts);
		return buf_printf(out, "%s\n", ts);
	case BF_USAGE:
		r = engine_box_usage(t->engine, v.name, sizing ? ENGINE_USAGE_NO_WALK : 0, &u);
		if (r < 0)
			return r;
		return buf_printf(out,
				  "cpu_usec %" PRIu64 "\ncpu_percent %u\nmemory_bytes %" PRIu64
				  "\npids %" PRIu64 "\ndisk_bytes %" PRIu64 "\n",
				  u.cpu_usec, u.cpu_percent, u.memory_bytes, u.pids, u.disk_bytes);
	case BF_INFO:
		return render_info(t, &v, out);
	case BF_ERROR:
		return v.error[0] ? buf_printf(out, "%s\n", v.error) : 0;
	case BF_TTL: {
		time_t now = time(NULL);
		if (!v.expires)
			return buf_printf(out, "none\n");
		return buf_printf(out, "%lld\n",
				  (long long)(v.expires > now ? v.expires - now : 0));
	}
	case BF_EXPIRES:
		if (!v.expires)
			return buf_printf(out, "never\n");
		format_rfc3339(v.expires, ts, sizeof ts);
		return buf_printf(out, "%s\n", ts);
	case BF_SNAPSHOT:
	case BF_FORK:
	case BF_RESTORE:
		return 0; /* write-only */
	case BF_IP: {
		char ip[32];
		r = engine_box_ip(t->engine, v.name, ip, sizeof ip);
		if (r < 0)
			return r;
		return ip[0] ? buf_printf(out, "%s\n", ip) : 0;
	}
	case BF_POLICY: {
		char *text = NULL;
		r = engine_box_policy(t->engine, v.name, &text);
		if (r < 0)
			return r;
		r = buf_printf(out, "%s", text);
		free(text);
		return r;
	}
	case BF_VOLUMES: {
		char **names = NULL;
		size_t n = 0;
		r = engine_box_volumes(t->engine, v.name, &names, &n);
		for (size_t i = 0; i < n && r >= 0; i++)
			r = buf_printf(out, "%s\n", names[i]);
		image_list_free(names, n);
		return r;
	}
	}
	return -ENOENT;
}

static int render_snap_file(struct tree *t, int64_t seq, unsigned file, struct buf *out)
{
	struct snapshot_view v;
	uint64_t size;
	char ts[32];
	int r;

	r = engine_snapshot_get_by_seq(t->engine, seq, &v);
	if (r < 0)
		return r;
	switch (file) {
	case SF_BOX:
		return buf_printf(out, "%s\n", v.box);
	case SF_LABEL:
		return buf_printf(out, "%s\n", v.label);
	case SF_CREATED:
		format_rfc3339(v.created, ts, sizeof ts);
		return buf_printf(out, "%s\n", ts);
	case SF_SIZE:
		r = engine_snapshot_size(t->engine, v.id, &size);
		return r < 0 ? r : buf_printf(out, "%" PRIu64 "\n", size);
	case SF_ERROR:
		return v.error[0] ? buf_printf(out, "%s\n", v.error) : 0;
	}
	return -EISDIR;
}

static int render_volume_file(struct tree *t, int64_t id, unsigned file, struct buf *out)
{
	struct volume_view v;
	char **names = NULL;
	size_t n = 0;
	uint64_t size;
	int r;

	r = engine_volume_get_by_id(t->engine, id, &v);
	if (r < 0)
		return r;
	switch (file) {
	case VF_SIZE:
		r = engine_volume_size(t->engine, v.name, &size);
		return r < 0 ? r : buf_printf(out, "%" PRIu64 "\n", size);
	case VF_BOXES:
		r = engine_volume_boxes(t->engine, v.name, &names, &n);
		for (size_t i = 0; i < n && r >= 0; i++)
			r = buf_printf(out, "%s\n", names[i]);
		image_list_free(names, n);
		return r;
	case VF_ERROR:
		return v.error[0] ? buf_printf(out, "%s\n", v.error) : 0;
	case VF_IMPORT:
		return 0;
	}
	return -EISDIR;
}

static int render_image_file(struct tree *t, uint64_t slot, unsigned file, struct buf *out)
{
	const char *name = image_slot_name(t, slot);
	struct image_info img;
	int r;

	if (!name)
		return -ENOENT;
	r = image_get(engine_images_dir(t->engine), name, &img);
	if (r < 0)
		return r;
	switch (file) {
	case IF_DESCRIPTION:
		return buf_printf(out, "%s\n", img.description);
	case IF_SIZE:
		return buf_printf(out, "%s\n", img.size);
	case IF_CREATED:
		return buf_printf(out, "%s\n", img.created);
	}
	return -ENOENT;
}

static int render_token_file(struct tree *t, int64_t seq, unsigned file, struct buf *out)
{
	struct auth_token tok;
	char ts[32];
	int r;

	r = auth_token_get_seq(engine_auth(t->engine), seq, &tok);
	if (r < 0)
		return r;
	switch (file) {
	case TF_LABEL:
		return tok.label[0] ? buf_printf(out, "%s\n", tok.label) : 0;
	case TF_CREATED:
		format_rfc3339(tok.created, ts, sizeof ts);
		return buf_printf(out, "%s\n", ts);
	case TF_LAST_USED:
		if (!tok.last_used)
			return buf_printf(out, "never\n");
		format_rfc3339(tok.last_used, ts, sizeof ts);
		return buf_printf(out, "%s\n", ts);
	}
	return -EISDIR;
}

/* Renders the value of a regular, non-stream file. */
static int render(struct tree *t, uint64_t ino, struct buf *out)
{
	const struct pd_config *cfg = engine_config(t->engine);

	switch (INO_KIND(ino)) {
	case KIND_STATIC:
		if (ino == S_README)
			return buf_printf(out, "%s", readme_text);
		if (ino == S_VERSION)
			return buf_printf(out, "paddock %s\n", PACKAGE_VERSION);
		return -EISDIR;
	case KIND_TYPE: {
		uint64_t i = INO_ID(ino);
		char text[256];
		if (i >= cfg->n_types)
			return -ENOENT;
		box_type_format(&cfg->types[i], text, sizeof text);
		return buf_printf(out, "%s", text);
	}
	case KIND_IMAGE:
		return render_image_file(t, INO_ID(ino), INO_FILE(ino), out);
	case KIND_BOX:
		return render_box_file(t, (int64_t)INO_ID(ino), INO_FILE(ino), out);
	case KIND_TOKEN:
		return render_token_file(t, (int64_t)INO_ID(ino), INO_FILE(ino), out);
	case KIND_SNAP:
		return render_snap_file(t, (int64_t)INO_ID(ino), INO_FILE(ino), out);
	case KIND_VOLUME:
		return render_volume_file(t, (int64_t)INO_ID(ino), INO_FILE(ino), out);
	case KIND_JOB: {
		unsigned file = INO_FILE(ino);
		char *text;
		size_t len;
		if (file == JF_DIR || file >= _JF_MAX)
			return -EISDIR;
		if (file == JF_STDIN || file == JF_CTL)
			return 0;
		int r = engine_job_read(t->engine, (int64_t)INO_ID(ino), job_files[file].name,
					&text, &len);
		if (r < 0)
			return r;
		out->data = text;
		out->len = len;
		return 0;
	}
	}
	return -ENOENT; /* temps are read with temp_read() */
}

/* The events log behind a stream node, or 0 if ino is not a stream. */
static bool stream_key(uint64_t ino, uint64_t *ret_key)
{
	if (ino == S_EVENTS) {
		*ret_key = 0;
		return true;
	}
	if (INO_KIND(ino) == KIND_BOX && INO_FILE(ino) == BF_EVENTS) {
		*ret_key = INO_ID(ino);
		return true;
	}
	if (INO_KIND(ino) == KIND_JOB &&
	    (INO_FILE(ino) == JF_STDOUT || INO_FILE(ino) == JF_STDERR ||
	     INO_FILE(ino) == JF_OUTPUT)) {
		*ret_key = JOB_WAKE_KEY(INO_ID(ino));
		return true;
	}
	return false;
}

/* Whether a stream may still grow: 1 yes, 0 no. -EBUSY for the streams
 * and exit of a job that has not started: nothing would ever answer a
 * read that waits (see refuse_unstarted()). */
static int stream_live(struct tree *t, uint64_t key)
{
	struct job_view v;

	if (key & (1ULL << 62)) {
		if (engine_job_get_by_id(t->engine, (int64_t)(key & ((1ULL << 62) - 1)), &v) < 0)
			return 0;
		return v.state == JOB_CREATED ? -EBUSY : v.state != JOB_ENDED;
	}
	return engine_events_live(t->engine, key);
}

/* A read of a job's exit, stdout, stderr or output would wait for the job
 * to end; one that has not started (no cmd yet) never would, so the open
 * fails at once with EBUSY and says why in the box's error file. A job
 * that has started keeps its readers waiting (following the stream). */
static int refuse_unstarted(struct tree *t, uint64_t ino, struct tree_error *te)
{
	char label[NAME_MAX_LEN + 32];
	struct job_view jv;
	struct box_view v;
	pd_error err = {0};
	unsigned file = INO_FILE(ino);

	if (INO_KIND(ino) != KIND_JOB ||
	    (file != JF_EXIT && file != JF_STDOUT && file != JF_STDERR && file != JF_OUTPUT))
		return 0;
	if (engine_job_get_by_id(t->engine, (int64_t)INO_ID(ino), &jv) < 0 ||
	    engine_box_get_by_id(t->engine, jv.box_id, &v) < 0)
		return -ENOENT;
	if (jv.state != JOB_CREATED)
		return 0;
	snprintf(label, sizeof label, "exec/%s/%s", jv.name, job_files[file].name);
	pd_error_set(&err, -EBUSY,
		     "job %s has not started, so %s would wait forever: write its command to "
		     "cmd first, then read %s",
		     jv.name, job_files[file].name, job_files[file].name);
	engine_box_record_error(t->engine, v.name, label, &err);
	return tell(te, label, &err);
}

static int open_stream(struct tree *t, uint64_t ino, uint64_t key)
{
	if (INO_KIND(ino) == KIND_JOB)
		return engine_job_open_stream(t->engine, (int64_t)INO_ID(ino),
					      INO_FILE(ino) == JF_STDOUT   ? JOB_STDOUT
					      : INO_FILE(ino) == JF_STDERR ? JOB_STDERR
									   : JOB_OUTPUT);
	return engine_events_open(t->engine, key);
}

/* The box name of a box node. */
static int box_name_of(struct tree *t, uint64_t ino, char *buf, size_t bufsz)
{
	struct box_view v;
	int r = engine_box_get_by_id(t->engine, (int64_t)INO_ID(ino), &v);

	if (r >= 0)
		snprintf(buf, bufsz, "%s", v.name);
	return r;
}

static bool is_exec_dir(uint64_t ino)
{
	return INO_KIND(ino) == KIND_BOX && INO_FILE(ino) == BF_EXEC;
}

/* --- attributes ----------------------------------------------------------------- */

int tree_getattr(struct tree *t, uint64_t ino, struct tree_attr *ret)
{
	const struct pd_config *cfg = engine_config(t->engine);
	struct buf b = {0};
	uint64_t key;
	uint32_t mode;
	time_t mtime = t->started;
	int r;

	switch (INO_KIND(ino)) {
	case KIND_STATIC:
		if (ino == S_ROOT) {
			*ret = mkattr(ino, S_IFDIR | 0755, 0, mtime);
			return 0;
		}
		if (ino >= ELEMENTSOF(root_nodes) || !root_nodes[ino].name)
			return -ENOENT;
		mode = root_nodes[ino].mode;
		break;
	case KIND_TYPE:
		if (INO_ID(ino) >= cfg->n_types)
			return -ENOENT;
		mode = S_IFREG | 0444;
		break;
	case KIND_IMAGE: {
		const char *name = image_slot_name(t, INO_ID(ino));
		struct image_info img;
		if (!name || image_get(engine_images_dir(t->engine), name, &img) < 0 ||
		    INO_FILE(ino) >= _IF_MAX)
			return -ENOENT;
		mode = INO_FILE(ino) == IF_DIR ? (S_IFDIR | 0555) : image_files[INO_FILE(ino)].mode;
		break;
	}
	case KIND_BOX: {
		struct box_view v;
		unsigned file = INO_FILE(ino);
		if (file >= _BF_MAX && file != BF_EXEC_NEW)
			return -ENOENT;
		r = engine_box_get_by_id(t->engine, (int64_t)INO_ID(ino), &v);
		if (r < 0)
			return r;
		mtime = v.created;
		if (file == BF_EXEC_NEW) {
			*ret = mkattr(ino, exec_files[XF_NEW].mode, 0, mtime);
			return 0;
		}
		mode = file == BF_DIR ? (S_IFDIR | 0755) : box_files[file].mode;
		break;
	}
	case KIND_JOB: {
		struct job_view jv;
		struct box_view v;
		unsigned file = INO_FILE(ino);
		if (file >= _JF_MAX && file != JF_LAST)
			return -ENOENT;
		r = engine_job_get_by_id(t->engine, (int64_t)INO_ID(ino), &jv);
		if (r < 0 || engine_box_get_by_id(t->engine, jv.box_id, &v) < 0)
			return -ENOENT;
		mtime = v.created;
		mode = file == JF_DIR	 ? (S_IFDIR | 0755)
		       : file == JF_LAST ? (S_IFLNK | 0777)
					 : job_files[file].mode;
		if (file == JF_STDIN || file == JF_CTL ||
		    (file == JF_EXIT && jv.state != JOB_ENDED)) {
			*ret = mkattr(ino, mode, 0, mtime);
			return 0;
		}
		break;
	}
	case KIND_TOKEN: {
		struct auth_token tok;
		if (INO_FILE(ino) >= _TF_MAX)
			return -ENOENT;
		r = auth_token_get_seq(engine_auth(t->engine), (int64_t)INO_ID(ino), &tok);
		if (r < 0)
			return r;
		mtime = tok.created;
		mode = INO_FILE(ino) == TF_DIR ? (S_IFDIR | 0500) : token_files[INO_FILE(ino)].mode;
		break;
	}
	case KIND_SNAP: {
		struct snapshot_view sv;
		unsigned file = INO_FILE(ino);
		if (file >= _SF_MAX && file != SF_LINK && file != SF_LAST)
			return -ENOENT;
		r = engine_snapshot_get_by_seq(t->engine, (int64_t)INO_ID(ino), &sv);
		if (r < 0)
			return r;
		mtime = sv.created;
		mode = file == SF_DIR			    ? (S_IFDIR | 0755)
		       : file == SF_LINK || file == SF_LAST ? (S_IFLNK | 0777)
							    : snap_files[file].mode;
		if (file == SF_EXPORT) {
			*ret = mkattr(ino, mode, 0, mtime); /* a stream */
			return 0;
		}
		break;
	}
	case KIND_VOLUME: {
		struct volume_view vv;
		unsigned file = INO_FILE(ino);
		if (file >= _VF_MAX)
			return -ENOENT;
		r = engine_volume_get_by_id(t->engine, (int64_t)INO_ID(ino), &vv);
		if (r < 0)
			return r;
		mtime = vv.created;
		mode = file == VF_DIR ? (S_IFDIR | 0755) : volume_files[file].mode;
		if (file == VF_EXPORT || file == VF_IMPORT) {
			/* A stream, and a sink: no size to tell. */
			*ret = mkattr(ino, mode, 0, mtime);
			return 0;
		}
		break;
	}
	case KIND_TEMP: {
		pd_mutex_lock(&t->lock);
		struct temp_file *f = find_temp_id(t, INO_ID(ino));
		if (f)
			*ret = mkattr(ino, S_IFREG | (f->mode & 07777), f->len, f->mtime);
		pd_mutex_unlock(&t->lock);
		return f ? 0 : -ENOENT;
	}
	default:
		return -ENOENT;
	}

	if (S_ISDIR(mode)) {
		*ret = mkattr(ino, mode, 0, mtime);
		return 0;
	}
	if (S_ISLNK(mode)) {
		char target[4096];
		r = tree_readlink(t, ino, target, sizeof target);
		if (r < 0)
			return r;
		*ret = mkattr(ino, mode, strlen(target), mtime);
		return 0;
	}
	if (stream_key(ino, &key)) {
		struct stat st;
		int fd = open_stream(t, ino, key);
		if (fd < 0)
			return fd;
		r = fstat(fd, &st);
		close(fd);
		*ret = mkattr(ino, mode, r == 0 ? (uint64_t)st.st_size : 0, mtime);
		return 0;
	}
	/* The real size of the value, so tools that trust st_size read it
	 * all (a disk usage in it as last measured: see sizing). */
	sizing = true;
	r = render(t, ino, &b);
	sizing = false;
	free(b.data);
	if (r < 0)
		return r;
	*ret = mkattr(ino, mode, b.len, mtime);
	return 0;
}

int tree_readlink(struct tree *t, uint64_t ino, char *buf, size_t bufsz)
{
	struct job_view jv;
	struct box_view v;
	int r;

	if (INO_KIND(ino) == KIND_JOB && INO_FILE(ino) == JF_LAST) {
		/* The job's name, even once a newer job is the last: the
		 * target of an inode never changes. */
		r = engine_job_get_by_id(t->engine, (int64_t)INO_ID(ino), &jv);
		if (r < 0)
			return r;
		if ((size_t)snprintf(buf, bufsz, "%s", jv.name) >= bufsz)
			return -ENAMETOOLONG;
		return 0;
	}
	if (INO_KIND(ino) == KIND_SNAP) {
		struct snapshot_view sv;
		r = engine_snapshot_get_by_seq(t->engine, (int64_t)INO_ID(ino), &sv);
		if (r < 0)
			return r;
		if (INO_FILE(ino) == SF_ROOT)
			return engine_snapshot_root(t->engine, sv.id, buf, bufsz);
		if (INO_FILE(ino) == SF_LAST) {
			/* Its id, even once a newer one is the last (as exec/last). */
			if ((size_t)snprintf(buf, bufsz, "%s", sv.id) >= bufsz)
				return -ENAMETOOLONG;
			return 0;
		}
		if (INO_FILE(ino) != SF_LINK)
			return -EINVAL;
		if ((size_t)snprintf(buf, bufsz, "../../../snapshots/%s", sv.id) >= bufsz)
			return -ENAMETOOLONG;
		return 0;
	}
	if (INO_KIND(ino) == KIND_VOLUME && INO_FILE(ino) == VF_DATA) {
		struct volume_view vv;
		r = engine_volume_get_by_id(t->engine, (int64_t)INO_ID(ino), &vv);
		return r < 0 ? r : engine_volume_data(t->engine, vv.name, buf, bufsz);
	}
	if (INO_KIND(ino) != KIND_BOX || INO_FILE(ino) != BF_ROOT)
		return -EINVAL;
	r = engine_box_get_by_id(t->engine, (int64_t)INO_ID(ino), &v);
	if (r < 0)
		return r;
	return engine_box_root(t->engine, v.name, buf, bufsz);
}

static int lookup_temp(struct tree *t, uint64_t parent, const char *name, struct tree_attr *ret)
{
	pd_mutex_lock(&t->lock);
	struct temp_file *f = find_temp(t, parent, name);
	uint64_t tid = f ? f->id : 0;
	pd_mutex_unlock(&t->lock);
	if (!f)
		return -ENOENT;
	return tree_getattr(t, INO(KIND_TEMP, tid, 0), ret);
}

int tree_lookup(struct tree *t, uint64_t parent, const char *name, struct tree_attr *ret)
{
	const struct pd_config *cfg = engine_config(t->engine);
	int i;

	if (strlen(name) > TREE_NAME_MAX)
		return -ENAMETOOLONG;
	switch (INO_KIND(parent)) {
	case KIND_STATIC:
		if (parent == S_ROOT) {
			i = lookup_index(root_nodes, ELEMENTSOF(root_nodes), name);
			return i < 0 ? i : tree_getattr(t, (uint64_t)i, ret);
		}
		if (parent == S_TYPES) {
			for (size_t k = 0; k < cfg->n_types; k++)
				if (strcmp(cfg->types[k].name, name) == 0)
					return tree_getattr(t, INO(KIND_TYPE, k, 0), ret);
			return -ENOENT;
		}
		if (parent == S_IMAGES) {
			struct image_info img;
			if (!name_valid(name) ||
			    image_get(engine_images_dir(t->engine), name, &img) < 0)
				return -ENOENT;
			i = image_slot(t, name);
			return i < 0 ? i : tree_getattr(t, INO(KIND_IMAGE, i, IF_DIR), ret);
		}
		if (parent == S_BOXES) {
			struct box_view v;
			if (!name_valid(name) || engine_box_get(t->engine, name, &v) < 0)
				return -ENOENT;
			return tree_getattr(t, INO(KIND_BOX, v.id, BF_DIR), ret);
		}
		if (parent == S_SNAPSHOTS) {
			struct snapshot_view sv;
			if (engine_snapshot_get(t->engine, name, &sv) < 0)
				return -ENOENT;
			return tree_getattr(t, INO(KIND_SNAP, sv.seq, SF_DIR), ret);
		}
		if (parent == S_TOKENS) {
			struct auth_token tok;
			if (auth_token_get(engine_auth(t->engine), name, &tok) < 0)
				return -ENOENT;
			return tree_getattr(t, INO(KIND_TOKEN, tok.seq, TF_DIR), ret);
		}
		if (parent == S_VOLUMES) {
			struct volume_view vv;
			if (!name_valid(name) || engine_volume_get(t->engine, name, &vv) < 0)
				return -ENOENT;
			return tree_getattr(t, INO(KIND_VOLUME, vv.id, VF_DIR), ret);
		}
		return tree_getattr(t, parent, ret) < 0 ? -ENOENT : -ENOTDIR;
	case KIND_TOKEN:
		if (INO_FILE(parent) != TF_DIR)
			return -ENOTDIR;
		i = lookup_index(token_files, ELEMENTSOF(token_files), name);
		return i < 0 ? i : tree_getattr(t, parent | (uint64_t)i, ret);
	case KIND_IMAGE:
		if (INO_FILE(parent) != IF_DIR)
			return -ENOTDIR;
		i = lookup_index(image_files, ELEMENTSOF(image_files), name);
		return i < 0 ? i : tree_getattr(t, parent | (uint64_t)i, ret);
	case KIND_SNAP:
		if (INO_FILE(parent) != SF_DIR)
			return -ENOTDIR;
		i = lookup_index(snap_files, ELEMENTSOF(snap_files), name);
		if (i >= 0)
			return tree_getattr(t, parent | (uint64_t)i, ret);
		return lookup_temp(t, parent, name, ret);
	case KIND_VOLUME:
		if (INO_FILE(parent) != VF_DIR)
			return -ENOTDIR;
		i = lookup_index(volume_files, ELEMENTSOF(volume_files), name);
		if (i >= 0)
			return tree_getattr(t, parent | (uint64_t)i, ret);
		return lookup_temp(t, parent, name, ret);
	case KIND_JOB:
		if (INO_FILE(parent) != JF_DIR)
			return -ENOTDIR;
		i = lookup_index(job_files, ELEMENTSOF(job_files), name);
		if (i >= 0)
			return tree_getattr(t, parent | (uint64_t)i, ret);
		return lookup_temp(t, parent, name, ret);
	case KIND_BOX:
		if (is_exec_dir(parent)) {
			char box[NAME_MAX_LEN + 1];
			struct job_view jv;
			if (strcmp(name, exec_files[XF_NEW].name) == 0)
				return tree_getattr(t, (parent & ~0xffULL) | BF_EXEC_NEW, ret);
			if (strcmp(name, "last") == 0) {
				char last[NAME_MAX_LEN + 1];
				if (box_name_of(t, parent, box, sizeof box) < 0 ||
				    engine_job_last(t->engine, box, last, sizeof last) < 0 ||
				    engine_job_get(t->engine, box, last, &jv) < 0)
					return -ENOENT;
				return tree_getattr(t, INO(KIND_JOB, jv.id, JF_LAST), ret);
			}
			if (name_valid(name) && box_name_of(t, parent, box, sizeof box) >= 0 &&
			    engine_job_get(t->engine, box, name, &jv) >= 0)
				return tree_getattr(t, INO(KIND_JOB, jv.id, JF_DIR), ret);
			return lookup_temp(t, parent, name, ret);
		}
		if (INO_FILE(parent) == BF_SNAPSHOTS) {
			struct snapshot_view sv;
			struct box_view v;
			if (engine_box_get_by_id(t->engine, (int64_t)INO_ID(parent), &v) < 0)
				return -ENOENT;
			/* Never an id: those are BOX-SEQ. */
			if (strcmp(name, "last") == 0)
				return engine_snapshot_last(t->engine, v.name, &sv) < 0
					   ? -ENOENT
					   : tree_getattr(t, INO(KIND_SNAP, sv.seq, SF_LAST), ret);
			if (engine_snapshot_get(t->engine, name, &sv) < 0 || sv.box_id != v.id)
				return -ENOENT;
			return tree_getattr(t, INO(KIND_SNAP, sv.seq, SF_LINK), ret);
		}
		if (INO_FILE(parent) != BF_DIR)
			return -ENOTDIR;
		i = lookup_index(box_files, ELEMENTSOF(box_files), name);
		if (i >= 0)
			return tree_getattr(t, parent | (uint64_t)i, ret);
		return lookup_temp(t, parent, name, ret);
	}
	return -ENOTDIR;
}

int tree_resolve(struct tree *t, const char *path, struct tree_attr *ret)
{
	struct tree_attr a;
	char name[TREE_NAME_MAX + 1];
	int r;

	r = tree_getattr(t, TREE_ROOT_INO, &a);
	if (r < 0)
		return r;
	while (*path) {
		size_t n;
		while (*path == '/')
			path++;
		if (!*path)
			break;
		n = strcspn(path, "/");
		if (n > TREE_NAME_MAX)
			return -ENAMETOOLONG;
		memcpy(name, path, n);
		name[n] = '\0';
		if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
			return -EINVAL;
		r = tree_lookup(t, a.ino, name, &a);
		if (r < 0)
			return r;
		path += n;
	}
	*ret = a;
	return 0;
}

/* --- directories -------------------------------------------------------------------- */

struct entries {
	struct tree_entry *v;
	size_t n, cap;
};

static int add_entry(struct entries *es, const char *name, const struct tree_attr *a)
{
	if (es->n == es->cap) {
		size_t cap = es->cap ? es->cap * 2 : 16;
		struct tree_entry *nv = realloc(es->v, cap * sizeof *nv);
		if (!nv)
			return -ENOMEM;
		es->v = nv;
		es->cap = cap;
	}
	snprintf(es->v[es->n].name, sizeof es->v[es->n].name, "%s", name);
	es->v[es->n].attr = *a;
	es->n++;
	return 0;
}

/* Lists names through lookup, so listing and lookup never disagree. Names
 * that vanished in between are skipped. */
static int add_by_lookup(struct tree *t, struct entries *es, uint64_t parent, const char *name)
{
	struct tree_attr a;
	int r = tree_lookup(t, parent, name, &a);

	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	return add_entry(es, name, &a);
}

/* The temps of a directory, but for one a real entry shadows (a job that
 * exec/new numbered as a temp was named): lookups find the entry. */
static int add_temps(struct tree *t, struct entries *es, uint64_t parent)
{
	size_t listed = es->n;
	int r = 0;

	pd_mutex_lock(&t->lock);
	for (struct temp_file *f = t->temps; f && r >= 0; f = f->next) {
		bool shadowed = false;
		for (size_t i = 0; i < listed && !shadowed; i++)
			shadowed = strcmp(es->v[i].name, f->name) == 0;
		if (f->parent == parent && !shadowed) {
			struct tree_attr ta = mkattr(INO(KIND_TEMP, f->id, 0),
						     S_IFREG | (f->mode & 07777), f->len, f->mtime);
			r = add_entry(es, f->name, &ta);
		}
	}
	pd_mutex_unlock(&t->lock);
	return r;
}

int tree_readdir(struct tree *t, uint64_t ino, struct tree_entry **ret, size_t *ret_n)
{
	const struct pd_config *cfg = engine_config(t->engine);
	struct entries es = {0};
	char **names = NULL;
	size_t n = 0;
	int r = 0;

	switch (INO_KIND(ino)) {
	case KIND_STATIC:
		if (ino == S_ROOT) {
			for (size_t i = 1; i < ELEMENTSOF(root_nodes) && r >= 0; i++)
				if (root_nodes[i].name)
					r = add_by_lookup(t, &es, ino, root_nodes[i].name);
		} else if (ino == S_TYPES) {
			for (size_t i = 0; i < cfg->n_types && r >= 0; i++)
				r = add_by_lookup(t, &es, ino, cfg->types[i].name);
		} else if (ino == S_IMAGES || ino == S_BOXES || ino == S_VOLUMES) {
			r = ino == S_IMAGES  ? image_list(engine_images_dir(t->engine), &names, &n)
			    : ino == S_BOXES ? engine_box_names(t->engine, &names, &n)
					     : engine_volume_names(t->engine, &names, &n);
			for (size_t i = 0; i < n && r >= 0; i++)
				r = add_by_lookup(t, &es, ino, names[i]);
			image_list_free(names, n);
		} else if (ino == S_SNAPSHOTS) {
			r = engine_snapshot_names(t->engine, NULL, &names, &n);
			for (size_t i = 0; i < n && r >= 0; i++)
				r = add_by_lookup(t, &es, ino, names[i]);
			image_list_free(names, n);
		} else if (ino == S_TOKENS) {
			struct auth_token *toks = NULL;
			r = auth_token_list(engine_auth(t->engine), &toks, &n);
			for (size_t i = 0; i < n && r >= 0; i++)
				r = add_by_lookup(t, &es, ino, toks[i].id);
			free(toks);
		} else
			r = tree_getattr(t, ino, &(struct tree_attr){0}) < 0 ? -ENOENT : -ENOTDIR;
		break;
	case KIND_TOKEN:
		if (INO_FILE(ino) != TF_DIR) {
			r = -ENOTDIR;
			break;
		}
		for (size_t i = 1; i < ELEMENTSOF(token_files) && r >= 0; i++)
			r = add_by_lookup(t, &es, ino, token_files[i].name);
		break;
	case KIND_IMAGE:
		for (size_t i = 1; i < ELEMENTSOF(image_files) && r >= 0; i++)
			r = add_by_lookup(t, &es, ino, image_files[i].name);
		break;
	case KIND_SNAP:
		if (INO_FILE(ino) != SF_DIR) {
			r = -ENOTDIR;
			break;
		}
		for (size_t i = 1; i < ELEMENTSOF(snap_files) && r >= 0; i++)
			r = add_by_lookup(t, &es, ino, snap_files[i].name);
		r = r < 0 ? r : add_temps(t, &es, ino);
		break;
	case KIND_VOLUME:
		if (INO_FILE(ino) != VF_DIR) {
			r = -ENOTDIR;
			break;
		}
		for (size_t i = 1; i < ELEMENTSOF(volume_files) && r >= 0; i++)
			r = add_by_lookup(t, &es, ino, volume_files[i].name);
		r = r < 0 ? r : add_temps(t, &es, ino);
		break;
	case KIND_JOB:
		if (INO_FILE(ino) != JF_DIR) {
			r = -ENOTDIR;
			break;
		}
		for (size_t i = 1; i < ELEMENTSOF(job_files) && r >= 0; i++)
			r = add_by_lookup(t, &es, ino, job_files[i].name);
		r = r < 0 ? r : add_temps(t, &es, ino);
		break;
	case KIND_BOX: {
		if (is_exec_dir(ino)) {
			char box[NAME_MAX_LEN + 1];
			r = box_name_of(t, ino, box, sizeof box);
			if (r >= 0)
				r = add_by_lookup(t, &es, ino, "new");
			if (r >= 0)
				r = add_by_lookup(t, &es, ino, "last");
			if (r >= 0)
				r = engine_job_names(t->engine, box, &names, &n);
			for (size_t i = 0; i < n && r >= 0; i++)
				r = add_by_lookup(t, &es, ino, names[i]);
			image_list_free(names, n);
			r = r < 0 ? r : add_temps(t, &es, ino);
			break;
		}
		if (INO_FILE(ino) == BF_SNAPSHOTS) {
			char box[NAME_MAX_LEN + 1];
			r = box_name_of(t, ino, box, sizeof box);
			if (r >= 0)
				r = add_by_lookup(t, &es, ino, "last");
			if (r >= 0)
				r = engine_snapshot_names(t->engine, box, &names, &n);
			for (size_t i = 0; i < n && r >= 0; i++)
				r = add_by_lookup(t, &es, ino, names[i]);
			image_list_free(names, n);
			break;
		}
		if (INO_FILE(ino) != BF_DIR) {
			r = -ENOTDIR;
			break;
		}
		struct box_view v;
		r = engine_box_get_by_id(t->engine, (int64_t)INO_ID(ino), &v);
		for (size_t i = 1; i < ELEMENTSOF(box_files) && r >= 0; i++)
			r = add_by_lookup(t, &es, ino, box_files[i].name);
		r = r < 0 ? r : add_temps(t, &es, ino);
		break;
	}
	default:
		r = -ENOTDIR;
	}
	if (r < 0) {
		free(es.v);
		return r;
	}
	*ret = es.v;
	*ret_n = es.n;
	return 0;
}

/* --- open, read, write ---------------------------------------------------------------- */

static bool writable(uint32_t mode)
{
	return (mode & 0222) != 0;
}

/* export: starts the archive; import: claims the (empty) volume. A refusal
 * is recorded as the volume's error. */
static int open_volume_archive(struct tree *t, struct tree_file *f, struct tree_error *te)
{
	struct volume_view vv;
	pd_error err = {0};
	bool export = INO_FILE(f->ino) == VF_EXPORT;
	int r;

	r = engine_volume_get_by_id(t->engine, (int64_t)INO_ID(f->ino), &vv);
	if (r < 0)
		return r;
	if (export) {
		r = volume_export_open(t->engine, vv.name, &f->export, &err);
		if (r >= 0)
			f->wait_key = export_stream_key(f->export);
	} else {
		r = volume_import_begin(t->engine, vv.name, &f->import, &err);
	}
	/* An import is done (and its error cleared) only at close. */
	if ((r < 0 && err.code) || (r >= 0 && export))
		engine_volume_record_error(t->engine, vv.name, export ? "export" : "import",
					   r < 0 ? &err : NULL);
	if (r < 0 && err.code)
		tell(te, export ? "export" : "import", &err);
	return r;
}

/* snapshots/ID/export: starts the archive; a refusal is recorded as the
 * snapshot's error. */
static int open_snapshot_export(struct tree *t, struct tree_file *f, struct tree_error *te)
{
	struct snapshot_view sv;
	pd_error err = {0};
	int r;

	r = engine_snapshot_get_by_seq(t->engine, (int64_t)INO_ID(f->ino), &sv);
	if (r < 0)
		return r;
	r = engine_snapshot_export(t->engine, sv.id, &f->export, &err);
	if (r >= 0)
		f->wait_key = export_stream_key(f->export);
	if (r >= 0 || err.code)
		engine_snapshot_record_error(t->engine, sv.id, "export", r < 0 ? &err : NULL);
	if (r < 0 && err.code)
		tell(te, "export", &err);
	return r;
}

int tree_open(struct tree *t, uint64_t ino, int flags, struct tree_file **ret,
	      struct tree_error *te)
{
	struct tree_attr a;
	struct tree_file *f;
	int acc = flags & O_ACCMODE;
	struct buf b = {0};
	uint64_t key;
	int r;

	tell_clear(te);
	r = tree_getattr(t, ino, &a);
	if (r < 0)
		return r;
	if (S_ISDIR(a.mode))
		return -EISDIR;
	if (S_ISLNK(a.mode))
		return -ELOOP;
	/* Root passes the kernel's permission checks: enforce the modes here. */
	if (acc != O_RDONLY && !writable(a.mode))
		return -EACCES;
	if (acc != O_WRONLY && !(a.mode & 0444))
		return -EACCES;
	r = refuse_unstarted(t, ino, te);
	if (r < 0)
		return r;
	f = calloc(1, sizeof *f);
	if (!f)
		return -ENOMEM;
	f->ino = ino;
	f->flags = flags;
	f->stream_fd = -1;
	if (INO_KIND(ino) == KIND_VOLUME &&
	    (INO_FILE(ino) == VF_EXPORT || INO_FILE(ino) == VF_IMPORT)) {
		r = open_volume_archive(t, f, te);
		if (r < 0) {
			free(f);
			return r;
		}
	} else if (INO_KIND(ino) == KIND_SNAP && INO_FILE(ino) == SF_EXPORT) {
		r = open_snapshot_export(t, f, te);
		if (r < 0) {
			free(f);
			return r;
		}
	} else if (INO_KIND(ino) == KIND_JOB && INO_FILE(ino) == JF_EXIT) {
		f->wait_exit = true;
		f->wait_key = JOB_WAKE_KEY(INO_ID(ino));
	} else if (stream_key(ino, &key)) {
		f->wait_key = key;
		f->stream_fd = open_stream(t, ino, key);
		if (f->stream_fd < 0) {
			r = f->stream_fd;
			free(f);
			return r;
		}
	} else if (acc != O_WRONLY && INO_KIND(ino) != KIND_TEMP) {
		r = render(t, ino, &b);
		if (r < 0) {
			free(b.data);
			free(f);
			return r;
		}
		f->content = b.data;
		f->len = b.len;
	}
	pd_mutex_lock(&t->lock);
	f->next = t->files;
	if (f->next)
		f->next->prev = f;
	t->files = f;
	pd_mutex_unlock(&t->lock);
	if ((flags & O_TRUNC) && acc != O_RDONLY) {
		r = tree_truncate(t, ino, 0);
		if (r < 0) {
			tree_release(t, f);
			return r;
		}
	}
	*ret = f;
	return 0;
}

/* Unlinks f from t->files and frees it; nothing pending is applied. */
static void file_free(struct tree *t, struct tree_file *f)
{
	pd_mutex_lock(&t->lock);
	if (f->prev)
		f->prev->next = f->next;
	else
		t->files = f->next;
	if (f->next)
		f->next->prev = f->prev;
	pd_mutex_unlock(&t->lock);
	export_stream_close(f->export);
	volume_import_abort(f->import);
	if (f->stream_fd >= 0)
		close(f->stream_fd);
	free(f->content);
	free(f->wbuf);
	free(f->answer);
	free(f);
}

void tree_release(struct tree *t, struct tree_file *f)
{
	if (!f)
		return;
	if (f->pending)
		(void)tree_flush(t, f, /* te= */ NULL);
	file_free(t, f);
}

const char *tree_file_answer(const struct tree_file *f)
{
	return f->answer;
}

bool tree_file_is_stream(const struct tree_file *f)
{
	return f->stream_fd >= 0 || f->wait_exit || f->export;
}

uint64_t tree_file_wait_key(const struct tree_file *f)
{
	return f->wait_key;
}

static int temp_read(struct tree *t, uint64_t id, uint64_t off, char *buf, size_t size,
		     size_t *ret_n);

int tree_read(struct tree *t, struct tree_file *f, uint64_t off, char *buf, size_t size,
	      size_t *ret_n)
{
	if (f->export) {
		int r = export_stream_read(f->export, off, buf, size, ret_n);
		if (r == -EAGAIN)
			return f->flags & O_NONBLOCK ? -EAGAIN : TREE_WAIT;
		return r;
	}
	if (f->stream_fd >= 0) {
		ssize_t n = pread(f->stream_fd, buf, size, (off_t)off);
		if (n < 0)
			return -errno;
		if (n == 0 && size > 0) {
			int live = stream_live(t, f->wait_key);
			if (live < 0)
				return live;
			if (live)
				return f->flags & O_NONBLOCK ? -EAGAIN : TREE_WAIT;
			/* Ended: all it wrote is there now, but it may have
			 * written and ended between the read and the check. */
			n = pread(f->stream_fd, buf, size, (off_t)off);
			if (n < 0)
				return -errno;
		}
		*ret_n = (size_t)n;
		return 0;
	}
	if (f->wait_exit && !f->content) {
		/* exit answers once the job has ended. */
		struct buf b = {0};
		int r = stream_live(t, f->wait_key);
		if (r < 0)
			return r;
		if (r)
			return f->flags & O_NONBLOCK ? -EAGAIN : TREE_WAIT;
		r = render(t, f->ino, &b);
		if (r < 0)
			return r;
		f->content = b.data;
		f->len = b.len;
	}
	if (INO_KIND(f->ino) == KIND_TEMP) /* its current bytes, like a real file */
		return temp_read(t, INO_ID(f->ino), off, buf, size, ret_n);
	if (off >= f->len) {
		*ret_n = 0;
		return 0;
	}
	size_t n = f->len - off < size ? f->len - off : size;
	memcpy(buf, f->content + off, n);
	*ret_n = n;
	return 0;
}

/* Applies one value to a box control file, recording a failure in the box's
 * error file (and a success, which clears that file's). What `snapshot`,
 * `fork` and `restore` made goes to *ret_answer (may be NULL) as a JSON
 * object (tree_file_answer). */
static int write_box_file_answer(struct tree *t, int64_t id, unsigned file, const char *data,
				 size_t len, char **ret_answer, struct tree_error *te)
{
	char value[VALUE_MAX + 1], made[NAME_MAX_LEN + 1];
	struct engine_restore res;
	json_t *answer = NULL;
	struct box_view v;
	pd_error err = {0};
	int r;

	r = engine_box_get_by_id(t->engine, id, &v);
	if (r < 0)
		return r;
	if (file == BF_VOLUMES) {
		/* A list: several lines, parsed by the engine. */
		r = engine_box_set_volumes(t->engine, v.name, data, len, &err);
		goto done;
	}
	if (file == BF_POLICY) {
		r = engine_box_set_policy(t->engine, v.name, data, len, &err);
		goto done;
	}
	r = value_from_write(data, len, VALUE_MAX, value, sizeof value);
	if (r < 0) {
		pd_error_set(&err, -EINVAL,
			     "not a value: write one line of at most %d bytes, no NUL bytes",
			     VALUE_MAX);
		goto fail;
	}
	switch (file) {
	case BF_STATE:
		r = engine_box_set_state(t->engine, v.name, value, &err);
		break;
	case BF_TYPE:
		r = engine_box_set_type(t->engine, v.name, value, &err);
		break;
	case BF_IMAGE:
		r = engine_box_set_image(t->engine, v.name, value, &err);
		break;
	case BF_TTL:
		r = engine_box_set_ttl(t->engine, v.name, value, &err);
		break;
	case BF_SNAPSHOT:
		r = engine_box_snapshot(t->engine, v.name, value, made, sizeof made, &err);
		if (r >= 0)
			answer = json_pack("{s:s}", "snapshot", made);
		break;
	case BF_FORK:
		r = engine_box_fork(t->engine, v.name, value, made, sizeof made, &err);
		if (r >= 0)
			answer = json_pack("{s:s, s:s}", "box", value, "snapshot", made);
		break;
	case BF_RESTORE:
		r = engine_box_restore(t->engine, v.name, value, &res, &err);
		if (r >= 0 && res.restarted)
			answer = json_pack("{s:s, s:b, s:s, s:s}", "snapshot", res.id, "restarted",
					   1, "before", res.before, "jobs_ended", res.jobs);
		else if (r >= 0)
			answer = json_pack("{s:s, s:b}", "snapshot", res.id, "restarted", 0);
		break;
	default:
		return -EACCES;
	}
done:
	if (r >= 0) {
		if (answer && ret_answer)
			*ret_answer = json_dumps(answer, JSON_COMPACT);
		json_decref(answer);
		engine_box_record_error(t->engine, v.name, box_files[file].name, /* err= */ NULL);
		return 0;
	}
fail:
	if (!err.code)
		pd_error_set(&err, r, "%s", strerror(-r));
	engine_box_record_error(t->engine, v.name, box_files[file].name, &err);
	return tell(te, box_files[file].name, &err);
}

static int write_box_file(struct tree *t, int64_t id, unsigned file, const char *data, size_t len,
			  struct tree_error *te)
{
	return write_box_file_answer(t, id, file, data, len, NULL, te);
}

/* A snapshot's label, with a failure recorded in the snapshot's error. */
static int write_snap_file(struct tree *t, int64_t seq, unsigned file, const char *data, size_t len,
			   struct tree_error *te)
{
	char value[VALUE_MAX + 1];
	struct snapshot_view v;
	pd_error err = {0};
	int r;

	r = engine_snapshot_get_by_seq(t->engine, seq, &v);
	if (r < 0)
		return r;
	if (file != SF_LABEL)
		return -EACCES;
	r = value_from_write(data, len, VALUE_MAX, value, sizeof value);
	if (r < 0)
		pd_error_set(&err, -EINVAL,
			     "not a value: write one line of at most %d bytes, no NUL bytes",
			     VALUE_MAX);
	else
		r = engine_snapshot_set_label(t->engine, v.id, value, &err);
	if (r >= 0) {
		engine_snapshot_record_error(t->engine, v.id, snap_files[file].name,
					     /* err= */ NULL);
		return 0;
	}
	if (!err.code)
		pd_error_set(&err, r, "%s", strerror(-r));
	engine_snapshot_record_error(t->engine, v.id, snap_files[file].name, &err);
	return tell(te, snap_files[file].name, &err);
}

/* What a temp of parent may hold: a control value, or for a volume's import
 * an archive (push_max_bytes, the import's own limit). */
static uint64_t temp_max(struct tree *t, const struct temp_file *f)
{
	uint64_t max = engine_config(t->engine)->push_max_bytes;

	return f->fd < 0 ? TEMP_DATA_MAX : max ? max : UINT64_MAX;
}

/* Where a spooled temp's bytes are: a descriptor of its own, to work on
 * outside the tree lock. Tree lock held. */
static int temp_dup(const struct temp_file *f)
{
	int fd = fcntl(f->fd, F_DUPFD_CLOEXEC, 3);

	return fd < 0 ? -errno : fd;
}

/* After a change of a spooled temp through fd: its size and time. */
static void temp_changed(struct tree *t, uint64_t id, int fd)
{
	struct stat st;
	struct temp_file *f;

	if (fstat(fd, &st) < 0)
		return;
	pd_mutex_lock(&t->lock);
	f = find_temp_id(t, id);
	if (f) {
		f->len = (uint64_t)st.st_size;
		f->mtime = time(NULL);
	}
	pd_mutex_unlock(&t->lock);
}

/* pread(2) of a temp. */
static int temp_read(struct tree *t, uint64_t id, uint64_t off, char *buf, size_t size,
		     size_t *ret_n)
{
	_cleanup_close_ int fd = -1;
	struct temp_file *f;
	size_t n = 0;
	int r = 0;

	if (off > INT64_MAX)
		return -EINVAL;
	pd_mutex_lock(&t->lock);
	f = find_temp_id(t, id);
	if (!f)
		r = -ENOENT;
	else if (f->fd >= 0)
		r = fd = temp_dup(f);
	else if (off < f->len) {
		n = f->len - off < size ? (size_t)(f->len - off) : size;
		memcpy(buf, f->data + off, n);
	}
	pd_mutex_unlock(&t->lock);
	if (r < 0)
		return r;
	if (fd >= 0) {
		ssize_t k = pread(fd, buf, size, (off_t)off);
		if (k < 0)
			return -errno;
		n = (size_t)k;
	}
	*ret_n = n;
	return 0;
}

/* pwrite(2) of a temp. */
static int write_temp(struct tree *t, uint64_t id, uint64_t off, const char *data, size_t len)
{
	_cleanup_close_ int fd = -1;
	struct temp_file *f;
	int r = 0;

	pd_mutex_lock(&t->lock);
	f = find_temp_id(t, id);
	if (!f) {
		r = -ENOENT;
		goto out;
	}
	if (off > temp_max(t, f) || len > temp_max(t, f) - off) {
		r = -EFBIG;
		goto out;
	}
	if (f->fd >= 0) {
		r = fd = temp_dup(f);
		goto out;
	}
	if (off + len > f->len) {
		char *nd = realloc(f->data, off + len);
		if (!nd) {
			r = -ENOMEM;
			goto out;
		}
		memset(nd + f->len, 0, off > f->len ? off - f->len : 0);
		f->data = nd;
		f->len = off + len;
	}
	if (len)
		memcpy(f->data + off, data, len);
	f->mtime = time(NULL);
out:
	pd_mutex_unlock(&t->lock);
	if (r < 0 || fd < 0)
		return r;
	for (size_t done = 0; done < len;) {
		ssize_t k = pwrite(fd, data + done, len - done, (off_t)(off + done));
		if (k < 0 && errno != EINTR)
			return -errno;
		done += k > 0 ? (size_t)k : 0;
	}
	temp_changed(t, id, fd);
	return 0;
}

/* truncate(2) of a temp. */
static int truncate_temp(struct tree *t, uint64_t id, uint64_t size)
{
	_cleanup_close_ int fd = -1;
	struct temp_file *f;
	int r = 0;

	pd_mutex_lock(&t->lock);
	f = find_temp_id(t, id);
	if (!f)
		r = -ENOENT;
	else if (size > temp_max(t, f))
		r = -EFBIG;
	else if (f->fd >= 0)
		r = fd = temp_dup(f);
	else if (size < f->len)
		f->len = size;
	else if (size > f->len) {
		char *nd = realloc(f->data, size);
		if (nd) {
			memset(nd + f->len, 0, size - f->len);
			f->data = nd;
			f->len = size;
		} else
			r = -ENOMEM;
	}
	pd_mutex_unlock(&t->lock);
	if (r < 0 || fd < 0)
		return r;
	if (ftruncate(fd, (off_t)size) < 0)
		return -errno;
	temp_changed(t, id, fd);
	return 0;
}

/* Writes of a job's files (and exec/new), with failures recorded in the
 * box's error file as "exec/JOB/FILE" (a success clears that file's). */
static int write_job_file(struct tree *t, uint64_t ino, const char *data, size_t len,
			  struct tree_error *te)
{
	char box[NAME_MAX_LEN + 1], label[160], value[256], name[NAME_MAX_LEN + 1];
	struct job_view jv;
	pd_error err = {0};
	unsigned file = INO_FILE(ino);
	int r;

	if (INO_KIND(ino) == KIND_BOX) { /* exec/new */
		_cleanup_free_ char *cmd = strndup(data, len);
		r = box_name_of(t, ino, box, sizeof box);
		if (r < 0)
			return r;
		snprintf(label, sizeof label, "exec/new");
		if (!cmd)
			r = pd_error_set(&err, -ENOMEM, "out of memory");
		else if (strlen(cmd) != len)
			r = pd_error_set(&err, -EINVAL, "cmd: NUL byte");
		else
			r = engine_job_new(t->engine, box, cmd, name, sizeof name, &err);
		goto done;
	}
	r = engine_job_get_by_id(t->engine, (int64_t)INO_ID(ino), &jv);
	if (r < 0)
		return -ENOENT;
	{
		struct box_view v;
		if (engine_box_get_by_id(t->engine, jv.box_id, &v) < 0)
			return -ENOENT;
		snprintf(box, sizeof box, "%s", v.name);
	}
	snprintf(label, sizeof label, "exec/%s/%s", jv.name, job_files[file].name);
	switch (file) {
	case JF_STDIN:
		r = engine_job_stdin(t->engine, jv.id, data, len, &err);
		if (r >= 0 && (size_t)r < len)
			r = -EAGAIN; /* partial: FUSE writes are all or nothing here */
		if (r == -EAGAIN)
			return -EAGAIN;
		break;
	case JF_CTL:
		if (value_from_write(data, len, sizeof value - 1, value, sizeof value) < 0)
			r = pd_error_set(&err, -EINVAL, "not a value: write one line");
		else
			r = engine_job_ctl(t->engine, jv.id, value, &err);
		break;
	default:
		r = engine_job_set(t->engine, jv.id, job_files[file].name, data, len, &err);
	}
done:
	if (r >= 0) {
		engine_box_record_error(t->engine, box, label, /* err= */ NULL);
		return 0;
	}
	if (!err.code)
		pd_error_set(&err, r, "%s", strerror(-r));
	engine_box_record_error(t->engine, box, label, &err);
	return tell(te, label, &err);
}

/* Appends one write(2) to the value this open has written so far: a write
 * at offset 0 starts over, one at the end continues it. */
static int accumulate(struct tree_file *f, uint64_t off, const char *buf, size_t len)
{
	if (off == 0)
		f->wlen = 0;
	else if (off != f->wlen)
		return -EINVAL;
	if (f->wlen + len > JOB_ENV_MAX + JOB_CMD_MAX && f->wlen + len > POLICY_TEXT_MAX)
		return -EFBIG;
	char *nb = realloc(f->wbuf, f->wlen + len + 1);
	if (!nb)
		return -ENOMEM;
	memcpy(nb + f->wlen, buf, len);
	f->wbuf = nb;
	f->wlen += len;
	f->wbuf[f->wlen] = '\0';
	return 0;
}

static bool starts_job(uint64_t ino)
{
	return (INO_KIND(ino) == KIND_JOB && INO_FILE(ino) == JF_CMD) ||
	       (INO_KIND(ino) == KIND_BOX && INO_FILE(ino) == BF_EXEC_NEW);
}

/* Extracts what was written to volumes/NAME/import; the engine records a
 * refusal as the volume's error. */
static int finish_import(struct tree_file *f, struct tree_error *te)
{
	pd_error err = {0};
	int r = volume_import_finish(TAKE_PTR(f->import), &err);

	if (r < 0 && err.code)
		tell(te, "import", &err);
	return r;
}

/* One write(2) of volumes/NAME/import. */
static int write_import(struct tree *t, struct tree_file *f, uint64_t off, const char *buf,
			size_t len, struct tree_error *te)
{
	struct volume_view vv;
	pd_error err = {0};
	int r;

	if (!f->import)
		return -EBADF;
	r = volume_import_write(f->import, off, buf, len, &err);
	/* Applied at close, but not at the flush of a descriptor closed
	 * before any write (a shell's dup2 of a redirection). */
	f->pending = r >= 0;
	if (r < 0 && engine_volume_get_by_id(t->engine, (int64_t)INO_ID(f->ino), &vv) >= 0) {
		engine_volume_record_error(t->engine, vv.name, "import", &err);
		tell(te, "import", &err);
	}
	return r;
}

int tree_flush(struct tree *t, struct tree_file *f, struct tree_error *te)
{
	tell_clear(te);
	if (!f->pending)
		return 0;
	f->pending = false;
	if (f->import)
		return finish_import(f, te);
	if (INO_KIND(f->ino) == KIND_BOX && INO_FILE(f->ino) == BF_POLICY)
		return write_box_file(t, (int64_t)INO_ID(f->ino), BF_POLICY, f->wbuf ? f->wbuf : "",
				      f->wlen, te);
	return write_job_file(t, f->ino, f->wbuf ? f->wbuf : "", f->wlen, te);
}

int tree_write(struct tree *t, struct tree_file *f, uint64_t off, const char *buf, size_t len,
	       struct tree_error *te)
{
	int r;

	tell_clear(te);
	if (starts_job(f->ino)) {
		/* A command may come in several writes (a shell's printf
		 * writes line by line): it starts when the file is closed.
		 * What can be refused now is refused now. */
		struct job_view jv;
		if (INO_KIND(f->ino) == KIND_JOB &&
		    engine_job_get_by_id(t->engine, (int64_t)INO_ID(f->ino), &jv) >= 0 &&
		    jv.state != JOB_CREATED)
			return write_job_file(t, f->ino, buf, len, te); /* EBUSY, recorded */
		r = accumulate(f, off, buf, len);
		if (r < 0)
			return r;
		f->pending = true;
		return 0;
	}
	if (INO_KIND(f->ino) == KIND_JOB && INO_FILE(f->ino) == JF_ENV) {
		r = accumulate(f, off, buf, len);
		return r < 0 ? r : write_job_file(t, f->ino, f->wbuf, f->wlen, te);
	}
	if (INO_KIND(f->ino) == KIND_BOX &&
	    (INO_FILE(f->ino) == BF_VOLUMES || INO_FILE(f->ino) == BF_POLICY)) {
		/* The list may come in several writes: each applies the whole
		 * list written so far. A bare "allowlist" (a shell's printf
		 * writes line by line) waits for its entries: applied, or
		 * refused, at close if none come. */
		r = accumulate(f, off, buf, len);
		if (r < 0)
			return r;
		f->pending = false;
		if (INO_FILE(f->ino) == BF_POLICY && policy_awaits_entries(f->wbuf, f->wlen)) {
			f->pending = true;
			return 0;
		}
		return write_box_file(t, (int64_t)INO_ID(f->ino), INO_FILE(f->ino), f->wbuf,
				      f->wlen, te);
	}
	if (INO_KIND(f->ino) == KIND_VOLUME && INO_FILE(f->ino) == VF_IMPORT)
		return write_import(t, f, off, buf, len, te);
	if (INO_KIND(f->ino) == KIND_JOB)
		return write_job_file(t, f->ino, buf, len, te);
	switch (INO_KIND(f->ino)) {
	case KIND_BOX:
		(void)off; /* each write(2) is one whole value */
		free(f->answer);
		f->answer = NULL;
		return write_box_file_answer(t, (int64_t)INO_ID(f->ino), INO_FILE(f->ino), buf, len,
					     &f->answer, te);
	case KIND_SNAP:
		return write_snap_file(t, (int64_t)INO_ID(f->ino), INO_FILE(f->ino), buf, len, te);
	case KIND_TEMP:
		return write_temp(t, INO_ID(f->ino), off, buf, len);
	}
	return -EACCES;
}

int tree_truncate(struct tree *t, uint64_t ino, uint64_t size)
{
	struct tree_attr a;
	int r;

	if (INO_KIND(ino) == KIND_TEMP)
		return truncate_temp(t, INO_ID(ino), size);
	r = tree_getattr(t, ino, &a);
	if (r < 0)
		return r;
	if (S_ISDIR(a.mode))
		return -EISDIR;
	if (!writable(a.mode))
		return -EACCES;
	/* Truncating a control file is how shells open it for writing: it
	 * changes nothing. */
	return 0;
}

/* --- directory operations ------------------------------------------------------------------ */

/* Drops the temps of directories that are gone (a deleted box, job,
 * snapshot or volume): nothing reaches them any more. */
static void drop_orphan_temps(struct tree *t)
{
	_cleanup_free_ uint64_t *dirs = NULL;
	size_t n = 0, cap = 0, dead = 0;
	struct tree_attr a;

	pd_mutex_lock(&t->lock);
	for (struct temp_file *f = t->temps; f; f = f->next)
		cap++;
	dirs = cap ? calloc(cap, sizeof *dirs) : NULL;
	for (struct temp_file *f = t->temps; f && dirs; f = f->next)
		dirs[n++] = f->parent;
	pd_mutex_unlock(&t->lock);
	for (size_t i = 0; i < n; i++)
		if (tree_getattr(t, dirs[i], &a) < 0)
			dirs[dead++] = dirs[i];
	pd_mutex_lock(&t->lock);
	for (struct temp_file **p = &t->temps; *p;) {
		bool gone = false;
		for (size_t i = 0; i < dead && !gone; i++)
			gone = (*p)->parent == dirs[i];
		if (gone)
			drop_temp(t, *p);
		else
			p = &(*p)->next;
	}
	pd_mutex_unlock(&t->lock);
}

int tree_mkdir(struct tree *t, uint64_t parent, const char *name, struct tree_attr *ret)
{
	pd_error err = {0};
	int r;

	if (is_exec_dir(parent)) {
		char box[NAME_MAX_LEN + 1];
		r = box_name_of(t, parent, box, sizeof box);
		if (r < 0)
			return r;
		if (strcmp(name, "new") == 0 || strcmp(name, "last") == 0)
			return -EEXIST;
		pd_mutex_lock(&t->lock);
		bool temp = find_temp(t, parent, name) != NULL;
		pd_mutex_unlock(&t->lock);
		if (temp)
			return -EEXIST;
		r = engine_job_create(t->engine, box, name, &err);
		if (r < 0)
			return r;
		return tree_lookup(t, parent, name, ret);
	}
	if (parent == S_VOLUMES) {
		if (!name_valid(name))
			return -EINVAL;
		r = engine_volume_create(t->engine, name, &err);
		return r < 0 ? r : tree_lookup(t, parent, name, ret);
	}
	if (parent != S_BOXES) {
		struct tree_attr a;
		r = tree_lookup(t, parent, name, &a);
		if (r >= 0)
			return -EEXIST;
		return tree_getattr(t, parent, &a) < 0 ? -ENOENT : -EPERM;
	}
	if (!name_valid(name))
		return -EINVAL;
	r = engine_box_create(t->engine, name, &err);
	if (r < 0)
		return r;
	return tree_lookup(t, parent, name, ret);
}

int tree_rmdir(struct tree *t, uint64_t parent, const char *name, struct tree_error *te)
{
	struct tree_attr a;
	pd_error err = {0};
	int r;

	tell_clear(te);
	r = tree_lookup(t, parent, name, &a);
	if (r < 0)
		return r;
	if (!S_ISDIR(a.mode))
		return -ENOTDIR;
	if (is_exec_dir(parent)) {
		char box[NAME_MAX_LEN + 1];
		r = box_name_of(t, parent, box, sizeof box);
		if (r >= 0)
			r = engine_job_delete(t->engine, box, name, &err);
		if (r >= 0 || err.code) {
			char label[100];
			snprintf(label, sizeof label, "exec/%s", name);
			engine_box_record_error(t->engine, box, label, r < 0 ? &err : NULL);
			if (r < 0)
				tell(te, label, &err);
		}
		if (r >= 0)
			drop_orphan_temps(t);
		return r;
	}
	if (parent == S_TOKENS)
		return auth_token_revoke(engine_auth(t->engine), name);
	if (parent == S_SNAPSHOTS) {
		/* The reason of a refusal goes to the snapshot's own error. */
		r = engine_snapshot_delete(t->engine, name, &err);
		if (r < 0 && err.code) {
			engine_snapshot_record_error(t->engine, name, "rmdir", &err);
			tell(te, "rmdir", &err);
		}
		if (r >= 0)
			drop_orphan_temps(t);
		return r;
	}
	if (parent == S_VOLUMES) {
		r = engine_volume_delete(t->engine, name, &err);
		if (r < 0 && err.code) {
			engine_volume_record_error(t->engine, name, "rmdir", &err);
			tell(te, "rmdir", &err);
		}
		if (r >= 0)
			drop_orphan_temps(t);
		return r;
	}
	if (parent != S_BOXES)
		return -EPERM;
	r = engine_box_delete(t->engine, name, &err);
	if (r < 0) {
		engine_box_record_error(t->engine, name, "rmdir", &err);
		tell(te, "rmdir", &err);
		return r;
	}
	drop_orphan_temps(t);
	return 0;
}

/* The files a directory node holds itself (its table above); NULL for one
 * that holds only objects (boxes/, snapshots/, a box's snapshots/). */
static const struct node_def *dir_files(uint64_t dir, size_t *ret_n)
{
#define FILES(table) (*ret_n = ELEMENTSOF(table), (table))
	switch (INO_KIND(dir)) {
	case KIND_STATIC:
		return dir == S_ROOT ? FILES(root_nodes) : NULL;
	case KIND_BOX:
		return INO_FILE(dir) == BF_DIR	  ? FILES(box_files)
		       : INO_FILE(dir) == BF_EXEC ? FILES(exec_files)
						  : NULL;
	case KIND_JOB:
		return INO_FILE(dir) == JF_DIR ? FILES(job_files) : NULL;
	case KIND_SNAP:
		return INO_FILE(dir) == SF_DIR ? FILES(snap_files) : NULL;
	case KIND_VOLUME:
		return INO_FILE(dir) == VF_DIR ? FILES(volume_files) : NULL;
	case KIND_TOKEN:
		return INO_FILE(dir) == TF_DIR ? FILES(token_files) : NULL;
	case KIND_IMAGE:
		return INO_FILE(dir) == IF_DIR ? FILES(image_files) : NULL;
	}
	return NULL;
#undef FILES
}

/* The temp-then-rename write works for every writable file: temps may be
 * made in exactly the directories whose table holds a writable regular
 * file, while the directory's object exists. A new directory or file gets
 * it from its table, with nothing to add here. */
static bool temps_allowed(struct tree *t, uint64_t parent)
{
	const struct node_def *defs;
	struct tree_attr a;
	bool any = false;
	size_t n = 0;

	defs = dir_files(parent, &n);
	for (size_t i = 1; defs && i < n && !any; i++)
		any = defs[i].name && S_ISREG(defs[i].mode) && writable(defs[i].mode);
	return any && tree_getattr(t, parent, &a) >= 0 && S_ISDIR(a.mode);
}

/* Temps of a volume's directory hold the archive an import takes (its only
 * writable file): in an unnamed file of the data directory, not in memory. */
static int temp_spool(struct tree *t, uint64_t parent, int *ret_fd)
{
	*ret_fd = -1;
	if (INO_KIND(parent) != KIND_VOLUME)
		return 0;
	*ret_fd = open(engine_config(t->engine)->data, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	return *ret_fd < 0 ? -errno : 0;
}

int tree_create(struct tree *t, uint64_t parent, const char *name, int flags, struct tree_attr *ret,
		struct tree_file **ret_f)
{
	_cleanup_close_ int spool = -1;
	struct tree_attr a;
	struct temp_file *f;
	size_t count = 0;
	int r;

	r = tree_lookup(t, parent, name, &a);
	if (r >= 0) {
		if (flags & O_EXCL)
			return -EEXIST;
		r = tree_open(t, a.ino, flags, ret_f, /* te= */ NULL);
		if (r >= 0)
			*ret = a;
		return r;
	}
	if (r != -ENOENT)
		return r;
	if (!temps_allowed(t, parent))
		return tree_getattr(t, parent, &a) < 0 ? -ENOENT : -EACCES;
	if (strlen(name) > TREE_NAME_MAX)
		return -ENAMETOOLONG;

	r = temp_spool(t, parent, &spool);
	if (r < 0)
		return r;
	pd_mutex_lock(&t->lock);
	for (struct temp_file *p = t->temps; p; p = p->next)
		count += p->parent == parent;
	f = count < TEMP_MAX_PER_DIR ? calloc(1, sizeof *f) : NULL;
	if (!f) {
		pd_mutex_unlock(&t->lock);
		return count < TEMP_MAX_PER_DIR ? -ENOMEM : -ENOSPC;
	}
	f->id = ++t->next_temp_id;
	f->parent = parent;
	f->fd = TAKE_FD(spool);
	f->mode = 0644;
	f->mtime = time(NULL);
	snprintf(f->name, sizeof f->name, "%s", name);
	f->next = t->temps;
	t->temps = f;
	uint64_t ino = INO(KIND_TEMP, f->id, 0);
	pd_mutex_unlock(&t->lock);

	r = tree_getattr(t, ino, ret);
	if (r >= 0)
		r = tree_open(t, ino, flags & ~O_TRUNC, ret_f, /* te= */ NULL);
	return r;
}

int tree_unlink(struct tree *t, uint64_t parent, const char *name)
{
	struct tree_attr a;
	int r;

	pd_mutex_lock(&t->lock);
	struct temp_file *f = find_temp(t, parent, name);
	if (f)
		drop_temp(t, f);
	pd_mutex_unlock(&t->lock);
	if (f)
		return 0;
	r = tree_lookup(t, parent, name, &a);
	if (r < 0)
		return r;
	return S_ISDIR(a.mode) ? -EISDIR : -EPERM;
}

/* The temp-then-rename write: the temp's bytes applied to target exactly as
 * `cat temp > target` would: one open(O_TRUNC), its writes, one close. A
 * value (at most TEMP_DATA_MAX) goes in one write(2); a spooled archive in
 * writes of that size, in order. */
static int apply_temp(struct tree *t, uint64_t id, uint64_t target)
{
	_cleanup_free_ char *buf = malloc(TEMP_DATA_MAX);
	struct tree_file *f;
	uint64_t off = 0;
	int r;

	if (!buf)
		return -ENOMEM;
	r = tree_open(t, target, O_WRONLY | O_TRUNC, &f, /* te= */ NULL);
	if (r < 0)
		return r;
	for (;;) {
		size_t n = 0;
		r = temp_read(t, id, off, buf, TEMP_DATA_MAX, &n);
		if (r < 0 || (n == 0 && off > 0))
			break;
		r = tree_write(t, f, off, buf, n, /* te= */ NULL);
		if (r < 0 || n == 0)
			break;
		off += n;
	}
	if (r >= 0)
		r = tree_flush(t, f, /* te= */ NULL);
	/* Not tree_release(): after a failure nothing pending is applied. */
	file_free(t, f);
	return r;
}

int tree_rename(struct tree *t, uint64_t parent, const char *name, uint64_t newparent,
		const char *newname)
{
	struct tree_attr target;
	int r;

	pd_mutex_lock(&t->lock);
	struct temp_file *src = find_temp(t, parent, name);
	uint64_t src_id = src ? src->id : 0;
	pd_mutex_unlock(&t->lock);
	if (!src_id) {
		r = tree_lookup(t, parent, name, &target);
		return r < 0 ? r : -EPERM; /* objects are not renamed */
	}
	if (newparent != parent)
		return -EXDEV;

	r = tree_lookup(t, newparent, newname, &target);
	if (r >= 0 && INO_KIND(target.ino) != KIND_TEMP) {
		if (S_ISDIR(target.mode))
			return -EISDIR;
		if (!S_ISREG(target.mode))
			return -EACCES;
		r = apply_temp(t, src_id, target.ino);
		if (r < 0)
			return r; /* the temp stays, as a failed rename(2) leaves it */
		pd_mutex_lock(&t->lock);
		struct temp_file *f = find_temp_id(t, src_id);
		if (f)
			drop_temp(t, f);
		pd_mutex_unlock(&t->lock);
		return 0;
	}
	if (r < 0 && r != -ENOENT)
		return r;
	/* Temp to temp: a plain rename, replacing any temp of that name. */
	pd_mutex_lock(&t->lock);
	struct temp_file *f = find_temp_id(t, src_id), *old = find_temp(t, newparent, newname);
	if (f && old && old != f)
		drop_temp(t, old);
	if (f)
		snprintf(f->name, sizeof f->name, "%s", newname);
	pd_mutex_unlock(&t->lock);
	return f ? 0 : -ENOENT;
}

bool tree_entries_volatile(uint64_t parent)
{
	return parent == S_SNAPSHOTS ||
	       (INO_KIND(parent) == KIND_BOX && INO_FILE(parent) == BF_SNAPSHOTS);
}

/* --- life ---------------------------------------------------------------------------------- */

int tree_new(struct engine *e, struct tree **ret)
{
	struct tree *t = calloc(1, sizeof *t);

	if (!t)
		return -ENOMEM;
	t->engine = e;
	t->started = time(NULL);
	pd_mutex_init(&t->lock, LOCK_RANK_LEAF, 0, "tree lock");
	*ret = t;
	return 0;
}

struct tree *tree_free(struct tree *t)
{
	if (!t)
		return NULL;
	while (t->files)
		file_free(t, t->files);
	while (t->temps)
		drop_temp(t, t->temps);
	for (size_t i = 0; i < t->n_image_slots; i++)
		free(t->image_slots[i]);
	pd_mutex_destroy(&t->lock);
	free(t);
	return NULL;
}
