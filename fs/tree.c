/* tree.c - the generic code of /paddock's tree: attributes, lookup,
 * listings, open, read, write, temps and directory operations.
 *
 * Each object kind (the top level, a type, an image, a token, a box, a job,
 * a snapshot, a volume) is one table of rows in tree-nodes.c (struct node,
 * tree-internal.h: name, mode, read, write, stream, open and link handlers,
 * flags), and its kind (struct kind) says how its object is fetched and
 * where its write failures are recorded. Everything here works over those
 * rows: modes, sizes, listings, permissions, the temp-then-rename rule and
 * how a write is applied. No control file is named here, only the
 * directories whose entries are objects (the top level, exec/, a box's
 * snapshots/).
 *
 * Inode numbers: the top byte is the node kind; the rest names the object
 * (a store id or a slot) and, in the low byte, the file within it. Store ids
 * are never reused, so an inode always names the same object, and a link's
 * target is fixed for its inode's life: `root` leads to its box's own
 * overlay mount, and exec/last is a link node of the job it leads to
 * (KIND_JOB, JF_LAST), so a newer last job is a new inode, not a changed
 * target. Adapters may cache link targets.
 */
#include "fs/tree-internal.h"

/* --- helpers ---------------------------------------------------------------- */

/* The one place modes are decided: the tables (tree-nodes.c) state the owner's
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

const char *tree_image_slot_name(struct tree *t, uint64_t slot)
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
int tree_tell(struct tree_error *te, const char *label, const pd_error *err)
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

/* The row of ino and its object, fetched once: -ENOENT when there is no
 * such row or the object is gone. Temps are not nodes (find_temp_id()). */
static int node_of(struct tree *t, uint64_t ino, struct obj *o)
{
	uint64_t k = INO_KIND(ino);
	unsigned file = INO_FILE(ino);
	const struct kind *kind = k < tree_n_kinds ? &tree_kinds[k] : NULL;

	if (!kind || !kind->nodes || file >= kind->n || !kind->nodes[file].mode)
		return -ENOENT;
	if (k == KIND_STATIC && INO_ID(ino) != 0)
		return -ENOENT;
	o->ino = ino;
	o->kind = kind;
	o->node = &kind->nodes[file];
	o->id = 0;
	return kind->get(t, ino, o);
}

/* The row named name in directory row dir of kind, or -ENOENT. */
static int row_named(const struct kind *kind, unsigned dir, const char *name)
{
	for (size_t i = 0; i < kind->n; i++)
		if (kind->nodes[i].dir == dir && kind->nodes[i].name &&
		    strcmp(kind->nodes[i].name, name) == 0)
			return (int)i;
	return -ENOENT;
}

/* Where a write's failure is recorded, as its object's error file names
 * it: "state", "exec/new", "exec/JOB/cmd". */
static void node_label(const struct obj *o, char *buf, size_t bufsz)
{
	const struct node *n = o->node;

	if (o->kind == &tree_kinds[KIND_JOB])
		snprintf(buf, bufsz, "exec/%s/%s", o->job.name, n->name);
	else if (o->kind == &tree_kinds[KIND_PROMPT])
		snprintf(buf, bufsz, "prompts/%s/%s", o->job.name, n->name);
	else if (n->dir != 0 && n->dir != NODE_UNLISTED)
		snprintf(buf, bufsz, "%s/%s", o->kind->nodes[n->dir].name, n->name);
	else
		snprintf(buf, bufsz, "%s", n->name);
}

/* The one rule for writing: a row the owner may write. The adapters show
 * the mode (tree_mode()), and tree_open() enforces it (root passes the
 * kernel's own checks). */
static bool writable(uint32_t mode)
{
	return (mode & 0222) != 0;
}

/* Renders o's value (empty for a row without a read handler). */
static int render(struct tree *t, const struct obj *o, struct pd_buf *out)
{
	return o->node->read ? o->node->read(t, o, out) : 0;
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

/* A read of a job's exit, stdout, stderr or output (N_NEEDS_START) would
 * wait for the job to end; one that has not started (no cmd yet) never
 * would, so the open fails at once with EBUSY and says why in the box's
 * error file. A job that has started keeps its readers waiting (following
 * the stream). */
static int refuse_unstarted(struct tree *t, const struct obj *o, struct tree_error *te)
{
	char label[NAME_MAX_LEN + 32];
	const char *file = o->node->name;
	pd_error err = {0};

	if (!(o->node->flags & N_NEEDS_START) || o->job.state != JOB_CREATED)
		return 0;
	node_label(o, label, sizeof label);
	if (o->kind == &tree_kinds[KIND_PROMPT])
		pd_error_set(&err, -EBUSY,
			     "prompt %s has not started, so %s would wait forever: write its text "
			     "first, then read %s",
			     o->job.name, file, file);
	else
		pd_error_set(&err, -EBUSY,
			     "job %s has not started, so %s would wait forever: write its command "
			     "to cmd first, then read %s",
			     o->job.name, file, file);
	o->kind->record(t, o, label, &err);
	return tree_tell(te, label, &err);
}

/* The id of the box of a box node, or -ENOENT once that box is gone (the
 * node never leads to another box of the same name). */
static int64_t box_id_of(struct tree *t, uint64_t ino)
{
	struct box_view v;
	int r = engine_box_get_by_id(t->engine, (int64_t)INO_ID(ino), &v);

	return r < 0 ? r : v.id;
}

static bool is_exec_dir(uint64_t ino)
{
	return INO_KIND(ino) == KIND_BOX && INO_FILE(ino) == BF_EXEC;
}

static bool is_prompts_dir(uint64_t ino)
{
	return INO_KIND(ino) == KIND_BOX && INO_FILE(ino) == BF_PROMPTS;
}

/* --- attributes ----------------------------------------------------------------- */

static int temp_getattr(struct tree *t, uint64_t ino, struct tree_attr *ret)
{
	pd_mutex_lock(&t->lock);
	struct temp_file *f = find_temp_id(t, INO_ID(ino));
	if (f)
		*ret = mkattr(ino, S_IFREG | (f->mode & 07777), f->len, f->mtime);
	pd_mutex_unlock(&t->lock);
	return f ? 0 : -ENOENT;
}

/* The size a node shows: a value's length (so tools that trust st_size
 * read it all), a stream's length so far, a link's target's; 0 for
 * directories, sinks, archives and an exit not yet known. */
static int node_size(struct tree *t, const struct obj *o, uint64_t *ret)
{
	const struct node *n = o->node;
	struct pd_buf b = {0};
	int r;

	*ret = 0;
	if (S_ISDIR(n->mode))
		return 0;
	if (S_ISLNK(n->mode)) {
		char target[4096];
		r = n->link(t, o, target, sizeof target);
		if (r >= 0)
			*ret = strlen(target);
		return r;
	}
	if (n->stream) {
		struct stat st;
		uint64_t key;
		int fd = n->stream(t, o, &key);
		if (fd < 0)
			return fd;
		r = fstat(fd, &st);
		close(fd);
		*ret = r == 0 ? (uint64_t)st.st_size : 0;
		return 0;
	}
	if (!n->read || ((n->flags & N_AFTER_END) && o->job.state != JOB_ENDED))
		return 0;
	/* A disk usage in it as last measured: see tree_sizing. */
	tree_sizing = true;
	r = render(t, o, &b);
	tree_sizing = false;
	*ret = b.len;
	pd_buf_free(&b);
	return r < 0 ? r : 0;
}

int tree_getattr(struct tree *t, uint64_t ino, struct tree_attr *ret)
{
	struct obj o;
	uint64_t size;
	int r;

	if (INO_KIND(ino) == KIND_TEMP)
		return temp_getattr(t, ino, ret);
	r = node_of(t, ino, &o);
	if (r >= 0)
		r = node_size(t, &o, &size);
	if (r < 0)
		return r;
	*ret = mkattr(ino, o.node->mode, size, o.mtime);
	ret->stream = o.node->stream != NULL;
	return 0;
}

int tree_readlink(struct tree *t, uint64_t ino, char *buf, size_t bufsz)
{
	struct obj o;
	int r = node_of(t, ino, &o);

	if (r < 0)
		return INO_KIND(ino) == KIND_TEMP ? -EINVAL : r;
	if (!S_ISLNK(o.node->mode))
		return -EINVAL;
	return o.node->link(t, &o, buf, bufsz);
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

/* Entries of an object's directory that are objects themselves: the jobs
 * and exec/last in exec/, the snapshots and last in a box's snapshots/. */
static int lookup_object_entry(struct tree *t, uint64_t parent, const char *name,
			       struct tree_attr *ret)
{
	int64_t box = (int64_t)INO_ID(parent);

	if (is_exec_dir(parent)) {
		struct job_view jv;
		if (strcmp(name, "last") == 0) {
			char last[NAME_MAX_LEN + 1];
			if (engine_job_last(t->engine, box, last, sizeof last) < 0 ||
			    engine_job_get(t->engine, box, last, &jv) < 0)
				return -ENOENT;
			return tree_getattr(t, INO(KIND_JOB, jv.id, JF_LAST), ret);
		}
		if (name_valid(name) && engine_job_get(t->engine, box, name, &jv) >= 0)
			return tree_getattr(t, INO(KIND_JOB, jv.id, JF_DIR), ret);
		return -ENOENT;
	}
	if (is_prompts_dir(parent)) {
		struct job_view jv;
		if (strcmp(name, "last") == 0) {
			char last[NAME_MAX_LEN + 1];
			if (engine_job_last_kind(t->engine, box, JOB_PROMPT, last, sizeof last) <
				0 ||
			    engine_job_get_kind(t->engine, box, JOB_PROMPT, last, &jv) < 0)
				return -ENOENT;
			return tree_getattr(t, INO(KIND_PROMPT, jv.id, PF_LAST), ret);
		}
		if (name_valid(name) &&
		    engine_job_get_kind(t->engine, box, JOB_PROMPT, name, &jv) >= 0)
			return tree_getattr(t, INO(KIND_PROMPT, jv.id, PF_DIR), ret);
		return -ENOENT;
	}
	if (INO_KIND(parent) == KIND_BOX && INO_FILE(parent) == BF_SNAPSHOTS) {
		struct snapshot_view sv;
		struct box_view v;
		if (engine_box_get_by_id(t->engine, box, &v) < 0)
			return -ENOENT;
		/* Never an id: those are BOX-SEQ. */
		if (strcmp(name, "last") == 0)
			return engine_snapshot_last(t->engine, v.id, &sv) < 0
				   ? -ENOENT
				   : tree_getattr(t, INO(KIND_SNAP, sv.seq, SF_LAST), ret);
		if (engine_snapshot_get(t->engine, name, &sv) < 0 || sv.box_id != v.id)
			return -ENOENT;
		return tree_getattr(t, INO(KIND_SNAP, sv.seq, SF_LINK), ret);
	}
	return -ENOENT;
}

/* The entries of the top-level directories: objects by name. */
static int lookup_top(struct tree *t, uint64_t parent, const char *name, struct tree_attr *ret)
{
	const struct pd_config *cfg = engine_config(t->engine);
	int i;

	if (parent == S_TYPES) {
		for (size_t k = 0; k < cfg->n_types; k++)
			if (strcmp(cfg->types[k].name, name) == 0)
				return tree_getattr(t, INO(KIND_TYPE, k, 0), ret);
		return -ENOENT;
	}
	if (parent == S_IMAGES) {
		struct image_info img;
		if (!name_valid(name) || image_get(engine_images_dir(t->engine), name, &img) < 0)
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
	if (parent == S_SECRETS) {
		struct secret_view sv;
		if (engine_secret_get(t->engine, name, &sv) < 0)
			return -ENOENT;
		return tree_getattr(t, INO(KIND_SECRET, sv.id, 0), ret);
	}
	if (parent == S_AGENTS) {
		/* Slots are shared with images: an agent's is "@ID". */
		char key[NAME_MAX_LEN + 2];
		_cleanup_free_ char *text = NULL;
		size_t len;
		if (!name_valid(name) || engine_agent_read(t->engine, name, &text, &len) < 0)
			return -ENOENT;
		snprintf(key, sizeof key, "@%s", name);
		i = image_slot(t, key);
		return i < 0 ? i : tree_getattr(t, INO(KIND_AGENT, i, 0), ret);
	}
	return -ENOENT;
}

/* The directory row of parent in its kind's table, or -ENOTDIR (also for
 * temps and inodes no table has). */
static int dir_row(uint64_t parent, const struct kind **ret_kind)
{
	uint64_t k = INO_KIND(parent);
	unsigned file = k == KIND_STATIC ? (unsigned)parent : INO_FILE(parent);
	const struct kind *kind = k < tree_n_kinds ? &tree_kinds[k] : NULL;

	if (!kind || !kind->nodes || (k == KIND_STATIC && parent >= kind->n) || file >= kind->n ||
	    !S_ISDIR(kind->nodes[file].mode))
		return -ENOTDIR;
	*ret_kind = kind;
	return (int)file;
}

int tree_lookup(struct tree *t, uint64_t parent, const char *name, struct tree_attr *ret)
{
	const struct kind *kind;
	int dir, i, r;

	if (strlen(name) > TREE_NAME_MAX)
		return -ENAMETOOLONG;
	dir = dir_row(parent, &kind);
	if (dir < 0) /* a file, or nothing at all */
		return INO_KIND(parent) == KIND_STATIC && tree_getattr(t, parent, ret) < 0 ? -ENOENT
											   : dir;
	/* The files of its table, then objects, then temps. */
	i = row_named(kind, (unsigned)dir, name);
	if (i >= 0)
		return tree_getattr(t, (parent & ~0xffULL) | (uint64_t)i, ret);
	r = INO_KIND(parent) == KIND_STATIC ? lookup_top(t, parent, name, ret)
					    : lookup_object_entry(t, parent, name, ret);
	if (r != -ENOENT)
		return r;
	return lookup_temp(t, parent, name, ret);
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

/* The entries of the top-level directories: their objects. */
static int list_top(struct tree *t, struct entries *es, uint64_t ino)
{
	const struct pd_config *cfg = engine_config(t->engine);
	char **names = NULL;
	size_t n = 0;
	int r = 0;

	if (ino == S_TYPES) {
		for (size_t i = 0; i < cfg->n_types && r >= 0; i++)
			r = add_by_lookup(t, es, ino, cfg->types[i].name);
	} else if (ino == S_IMAGES || ino == S_BOXES || ino == S_VOLUMES || ino == S_SNAPSHOTS) {
		r = ino == S_IMAGES  ? image_list(engine_images_dir(t->engine), &names, &n)
		    : ino == S_BOXES ? engine_box_names(t->engine, &names, &n)
		    : ino == S_VOLUMES
			? engine_volume_names(t->engine, &names, &n)
			: engine_snapshot_names(t->engine, /* box_id= (all) */ 0, &names, &n);
		for (size_t i = 0; i < n && r >= 0; i++)
			r = add_by_lookup(t, es, ino, names[i]);
		image_list_free(names, n);
	} else if (ino == S_SECRETS || ino == S_AGENTS) {
		r = ino == S_SECRETS ? engine_secret_names(t->engine, &names, &n)
				     : engine_agent_names(t->engine, &names, &n);
		for (size_t i = 0; i < n && r >= 0; i++)
			r = add_by_lookup(t, es, ino, names[i]);
		image_list_free(names, n);
	} else if (ino == S_TOKENS) {
		struct auth_token *toks = NULL;
		r = auth_token_list(engine_auth(t->engine), &toks, &n);
		for (size_t i = 0; i < n && r >= 0; i++)
			r = add_by_lookup(t, es, ino, toks[i].id);
		free(toks);
	}
	return r;
}

/* The entries of an object's directory that are objects: exec/'s last
 * and jobs, a box's snapshots/ last and ids. */
static int list_object_entries(struct tree *t, struct entries *es, uint64_t ino)
{
	char **names = NULL;
	size_t n = 0;
	int64_t box;
	int r;

	if (!is_exec_dir(ino) && !is_prompts_dir(ino) &&
	    !(INO_KIND(ino) == KIND_BOX && INO_FILE(ino) == BF_SNAPSHOTS))
		return 0;
	box = box_id_of(t, ino);
	r = box < 0 ? (int)box : 0;
	if (r >= 0)
		r = add_by_lookup(t, es, ino, "last");
	if (r >= 0)
		r = is_exec_dir(ino) ? engine_job_names(t->engine, box, &names, &n)
		    : is_prompts_dir(ino)
			? engine_job_names_kind(t->engine, box, JOB_PROMPT, &names, &n)
			: engine_snapshot_names(t->engine, box, &names, &n);
	for (size_t i = 0; i < n && r >= 0; i++)
		r = add_by_lookup(t, es, ino, names[i]);
	image_list_free(names, n);
	return r;
}

int tree_readdir(struct tree *t, uint64_t ino, struct tree_entry **ret, size_t *ret_n)
{
	const struct kind *kind;
	struct entries es = {0};
	struct obj o;
	int dir, r;

	dir = dir_row(ino, &kind);
	r = dir < 0 ? dir : node_of(t, ino, &o);
	if (dir < 0 && INO_KIND(ino) == KIND_STATIC)
		r = tree_getattr(t, ino, &(struct tree_attr){0}) < 0 ? -ENOENT : -ENOTDIR;
	/* The files of its table, then objects, then temps. */
	for (size_t i = 0; r >= 0 && i < kind->n; i++)
		if (kind->nodes[i].mode && kind->nodes[i].dir == (unsigned)dir)
			r = add_by_lookup(t, &es, ino, kind->nodes[i].name);
	if (r >= 0)
		r = INO_KIND(ino) == KIND_STATIC ? list_top(t, &es, ino)
						 : list_object_entries(t, &es, ino);
	if (r >= 0)
		r = add_temps(t, &es, ino);
	if (r < 0) {
		free(es.v);
		return r;
	}
	*ret = es.v;
	*ret_n = es.n;
	return 0;
}

/* --- open, read, write ---------------------------------------------------------------- */

int tree_open(struct tree *t, uint64_t ino, int flags, struct tree_file **ret,
	      struct tree_error *te)
{
	struct tree_attr a;
	struct tree_file *f;
	int acc = flags & O_ACCMODE;
	struct pd_buf b = {0};
	struct obj o = {0};
	uint32_t mode;
	int r;

	tell_clear(te);
	if (INO_KIND(ino) == KIND_TEMP) {
		r = temp_getattr(t, ino, &a);
		mode = a.mode;
	} else {
		r = node_of(t, ino, &o);
		mode = o.node ? o.node->mode : 0;
	}
	if (r < 0)
		return r;
	if (S_ISDIR(mode))
		return -EISDIR;
	if (S_ISLNK(mode))
		return -ELOOP;
	/* Root passes the kernel's permission checks: enforce the modes here. */
	if (acc != O_RDONLY && !writable(mode))
		return -EACCES;
	if (acc != O_WRONLY && !(mode & 0444))
		return -EACCES;
	if (o.node) {
		r = refuse_unstarted(t, &o, te);
		if (r < 0)
			return r;
	}
	f = calloc(1, sizeof *f);
	if (!f)
		return -ENOMEM;
	f->ino = ino;
	f->flags = flags;
	f->stream_fd = -1;
	f->json = o.node && (o.node->flags & N_JSON);
	if (!o.node)
		; /* a temp: read as it is now (temp_read()) */
	else if (o.node->open) {
		pd_hold("tree-act"); /* the tests' window: see util.h */
		r = o.node->open(t, &o, f, te);
	} else if (o.node->flags & N_AFTER_END) {
		f->wait_exit = true;
		f->wait_key = JOB_WAKE_KEY(o.job.id);
	} else if (o.node->stream) {
		f->stream_fd = o.node->stream(t, &o, &f->wait_key);
		r = f->stream_fd < 0 ? f->stream_fd : 0;
	} else if (acc != O_WRONLY) {
		/* Rendered once, so every read of this open sees the same bytes.
		 * A reader that fails with a reason tells it through
		 * tree_rendering_te (the desktop's captures). */
		tree_rendering_te = te;
		r = render(t, &o, &b);
		tree_rendering_te = NULL;
		f->content = b.data;
		f->len = b.len;
	}
	if (r < 0) {
		free(f->content);
		free(f);
		return r;
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
	engine_volume_import_abort(f->import);
	if (f->stream_fd >= 0)
		close(f->stream_fd);
	free(f->content);
	if (f->wbuf) /* a secret's value, maybe */
		explicit_bzero(f->wbuf, f->wlen);
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

bool tree_file_is_json(const struct tree_file *f)
{
	return f->json;
}

uint64_t tree_file_wait_key(const struct tree_file *f)
{
	return f->wait_key;
}

static int temp_read(struct tree *t, uint64_t id, uint64_t off, char *buf, size_t size,
		     size_t *ret_n);

/* The bytes of stream file fd at off now, at most size. */
static int stream_avail(int fd, uint64_t off, size_t size, size_t *ret_n)
{
	struct stat st;
	uint64_t end;

	if (fstat(fd, &st) < 0)
		return -errno;
	end = (uint64_t)st.st_size;
	*ret_n = end <= off ? 0 : end - off < size ? (size_t)(end - off) : size;
	return 0;
}

int tree_read_fd(struct tree *t, struct tree_file *f, uint64_t off, size_t size, int *ret_fd,
		 size_t *ret_n)
{
	int r;

	if (f->stream_fd < 0)
		return -EOPNOTSUPP;
	r = stream_avail(f->stream_fd, off, size, ret_n);
	if (r < 0)
		return r;
	if (*ret_n == 0 && size > 0) {
		int live = stream_live(t, f->wait_key);
		if (live < 0)
			return live;
		if (live)
			return f->flags & O_NONBLOCK ? -EAGAIN : TREE_WAIT;
		/* Ended: all it wrote is there now, but it may have written
		 * and ended between the look and the check. */
		r = stream_avail(f->stream_fd, off, size, ret_n);
		if (r < 0)
			return r;
	}
	*ret_fd = f->stream_fd;
	return 0;
}

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
		size_t n;
		int fd, r = tree_read_fd(t, f, off, size, &fd, &n);
		if (r != 0)
			return r;
		ssize_t got = n ? pread(fd, buf, n, (off_t)off) : 0;
		if (got < 0)
			return -errno;
		*ret_n = (size_t)got;
		return 0;
	}
	if (f->wait_exit && !f->content) {
		/* exit answers once the job has ended. */
		struct pd_buf b = {0};
		int r = stream_live(t, f->wait_key);
		if (r < 0)
			return r;
		if (r)
			return f->flags & O_NONBLOCK ? -EAGAIN : TREE_WAIT;
		struct obj o;
		r = node_of(t, f->ino, &o);
		if (r >= 0)
			r = render(t, &o, &b);
		if (r < 0) {
			pd_buf_free(&b);
			return r;
		}
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

/* Extracts what was written to volumes/NAME/import; the engine records a
 * refusal as the volume's error. */
static int finish_import(struct tree_file *f, struct tree_error *te)
{
	pd_error err = {0};
	int r = engine_volume_import_finish(TAKE_PTR(f->import), &err);

	if (r < 0 && err.code)
		tree_tell(te, "import", &err);
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
	r = engine_volume_import_write(f->import, off, buf, len, &err);
	/* Applied at close, but not at the flush of a descriptor closed
	 * before any write (a shell's dup2 of a redirection). */
	f->pending = r >= 0;
	if (r < 0 && engine_volume_get_by_id(t->engine, (int64_t)INO_ID(f->ino), &vv) >= 0) {
		engine_volume_record_error(t->engine, vv.id, "import", &err);
		tree_tell(te, "import", &err);
	}
	return r;
}

/* Applies one value to o's file through its row's write handler, records
 * the outcome in the object's error file (a failure; a success clears that
 * file's) and hands a failure's line to the caller (te). What the write
 * made goes to f->answer (tree_file_answer()). */
static int apply(struct tree *t, struct tree_file *f, const struct obj *o, const char *data,
		 size_t len, struct tree_error *te)
{
	const struct node *n = o->node;
	char value[VALUE_MAX + 1], label[NAME_MAX_LEN + 64];
	json_t *answer = NULL;
	pd_error err = {0};
	int r;

	free(f->answer);
	f->answer = NULL;
	node_label(o, label, sizeof label);
	pd_hold("tree-act"); /* the tests' window: see util.h */
	if ((n->flags & N_LINE) && value_from_write(data, len, VALUE_MAX, value, sizeof value) < 0)
		r = pd_error_set(&err, -EINVAL,
				 "not a value: write one line of at most %d bytes, no NUL bytes",
				 VALUE_MAX);
	else if (n->flags & N_LINE)
		r = n->write(t, o, value, strlen(value), &err, &answer);
	else
		r = n->write(t, o, data, len, &err, &answer);
	if (r == -EAGAIN && (n->flags & N_PARTIAL))
		return r;
	if (r >= 0) {
		if (answer)
			f->answer = json_dumps(answer, JSON_COMPACT);
		json_decref(answer);
		o->kind->record(t, o, label, /* err= */ NULL);
		/* A short write: the caller sends the rest. */
		return (n->flags & N_PARTIAL) && r > 0 && (size_t)r < len ? r : 0;
	}
	json_decref(answer);
	if (!err.code)
		pd_error_set(&err, r, "%s", strerror(-r));
	o->kind->record(t, o, label, &err);
	return tree_tell(te, label, &err);
}

int tree_flush(struct tree *t, struct tree_file *f, struct tree_error *te)
{
	struct obj o;
	int r;

	tell_clear(te);
	if (!f->pending)
		return 0;
	f->pending = false;
	if (f->import)
		return finish_import(f, te);
	r = node_of(t, f->ino, &o);
	if (r < 0)
		return r;
	return apply(t, f, &o, f->wbuf ? f->wbuf : "", f->wlen, te);
}

int tree_write(struct tree *t, struct tree_file *f, uint64_t off, const char *buf, size_t len,
	       struct tree_error *te)
{
	const struct node *n;
	struct obj o;
	int r;

	tell_clear(te);
	if (INO_KIND(f->ino) == KIND_TEMP)
		return write_temp(t, INO_ID(f->ino), off, buf, len);
	r = node_of(t, f->ino, &o);
	if (r < 0)
		return r;
	n = o.node;
	if (!n->write && !(n->flags & N_IMPORT))
		return -EACCES;
	if (n->flags & N_IMPORT)
		return write_import(t, f, off, buf, len, te);
	if (n->flags & N_AT_CLOSE) {
		/* What can be refused now is refused now: cmd of a job that
		 * has started (EBUSY, recorded). */
		if ((o.kind == &tree_kinds[KIND_JOB] || o.kind == &tree_kinds[KIND_PROMPT]) &&
		    o.job.state != JOB_CREATED)
			return apply(t, f, &o, buf, len, te);
		r = accumulate(f, off, buf, len);
		if (r < 0)
			return r;
		f->pending = true;
		return 0;
	}
	if (n->flags & N_WHOLE) {
		r = accumulate(f, off, buf, len);
		if (r < 0)
			return r;
		f->pending = n->waits && n->waits(f->wbuf, f->wlen);
		return f->pending ? 0 : apply(t, f, &o, f->wbuf, f->wlen, te);
	}
	return apply(t, f, &o, buf, len, te); /* each write(2) is one whole value */
}

int tree_truncate(struct tree *t, uint64_t ino, uint64_t size)
{
	struct obj o;
	int r;

	if (INO_KIND(ino) == KIND_TEMP)
		return truncate_temp(t, INO_ID(ino), size);
	r = node_of(t, ino, &o);
	if (r < 0)
		return r;
	if (S_ISDIR(o.node->mode))
		return -EISDIR;
	if (!writable(o.node->mode))
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

	if (is_exec_dir(parent) || is_prompts_dir(parent)) {
		int64_t box = box_id_of(t, parent);
		if (box < 0)
			return (int)box;
		if ((is_exec_dir(parent) && strcmp(name, "new") == 0) || strcmp(name, "last") == 0)
			return -EEXIST;
		pd_mutex_lock(&t->lock);
		bool temp = find_temp(t, parent, name) != NULL;
		pd_mutex_unlock(&t->lock);
		if (temp)
			return -EEXIST;
		r = engine_job_create_kind(
		    t->engine, box, is_prompts_dir(parent) ? JOB_PROMPT : JOB_EXEC, name, &err);
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
	/* From here the object is the one the lookup found, by its id: a
	 * concurrent rmdir and mkdir of the same name makes another, which
	 * this one never deletes. */
	if (is_exec_dir(parent) || is_prompts_dir(parent)) {
		int64_t box = (int64_t)INO_ID(parent);
		r = engine_job_delete(t->engine, (int64_t)INO_ID(a.ino), &err);
		if (r >= 0 || err.code) {
			char label[100];
			snprintf(label, sizeof label, "%s/%s",
				 is_prompts_dir(parent) ? "prompts" : "exec", name);
			engine_box_record_error(t->engine, box, label, r < 0 ? &err : NULL);
			if (r < 0)
				tree_tell(te, label, &err);
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
			tree_tell(te, "rmdir", &err);
		}
		if (r >= 0)
			drop_orphan_temps(t);
		return r;
	}
	if (parent == S_VOLUMES) {
		r = engine_volume_delete(t->engine, (int64_t)INO_ID(a.ino), &err);
		if (r < 0 && err.code) {
			engine_volume_record_error(t->engine, (int64_t)INO_ID(a.ino), "rmdir",
						   &err);
			tree_tell(te, "rmdir", &err);
		}
		if (r >= 0)
			drop_orphan_temps(t);
		return r;
	}
	if (parent != S_BOXES)
		return -EPERM;
	r = engine_box_delete(t->engine, (int64_t)INO_ID(a.ino), &err);
	if (r < 0) {
		engine_box_record_error(t->engine, (int64_t)INO_ID(a.ino), "rmdir", &err);
		tree_tell(te, "rmdir", &err);
		return r;
	}
	drop_orphan_temps(t);
	return 0;
}

/* The temp-then-rename write works for every writable file: temps may be
 * made in exactly the directories that list a writable regular file in
 * their kind's table, while the directory's object exists. A new row gets
 * it with nothing to add here. */
static bool temps_allowed(struct tree *t, uint64_t parent)
{
	const struct kind *kind;
	struct obj o;
	bool any = false;
	int dir = dir_row(parent, &kind);

	for (size_t i = 0; dir >= 0 && i < kind->n && !any; i++)
		any = kind->nodes[i].dir == (unsigned)dir && S_ISREG(kind->nodes[i].mode) &&
		      writable(kind->nodes[i].mode);
	return any && node_of(t, parent, &o) >= 0;
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

/* secrets/NAME made by an open with O_CREAT: the secret exists from here,
 * empty (`touch` makes an empty one); the writes of this open set it. No
 * temp files there: every name in secrets/ is a secret's. */
static int create_secret(struct tree *t, const char *name, int flags, struct tree_attr *ret,
			 struct tree_file **ret_f)
{
	pd_error err = {0};
	int r;

	if (!secret_name_valid(name))
		return strlen(name) > SECRET_NAME_MAX ? -ENAMETOOLONG : -EINVAL;
	r = engine_secret_set(t->engine, name, "", 0, &err);
	if (r >= 0)
		r = tree_lookup(t, S_SECRETS, name, ret);
	if (r >= 0)
		r = tree_open(t, ret->ino, flags & ~O_TRUNC, ret_f, /* te= */ NULL);
	return r;
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
	if (parent == S_SECRETS)
		return create_secret(t, name, flags, ret, ret_f);
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
	if (parent == S_SECRETS && INO_KIND(a.ino) == KIND_SECRET)
		return engine_secret_delete(t->engine, (int64_t)INO_ID(a.ino), /* err= */ NULL);
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
		if (r > 0) /* a job's stdin took part of it: no way to send the rest */
			r = -EAGAIN;
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

bool tree_refuses_chmod(uint64_t ino)
{
	return ino == S_SECRETS || INO_KIND(ino) == KIND_SECRET;
}

bool tree_entries_volatile(uint64_t parent)
{
	return parent == S_SNAPSHOTS ||
	       (INO_KIND(parent) == KIND_BOX && INO_FILE(parent) == BF_SNAPSHOTS);
}

/* --- life ---------------------------------------------------------------------------------- */

/* What the tables promise the generic code: every row has the handler its
 * mode and flags need. */
static void check_tables(void)
{
	for (size_t k = 0; k < tree_n_kinds; k++)
		for (size_t i = 0; tree_kinds[k].nodes && i < tree_kinds[k].n; i++) {
			const struct node *n = &tree_kinds[k].nodes[i];
			if (!n->mode)
				continue;
			assert(n->name);
			assert(!S_ISLNK(n->mode) || n->link);
			assert(!S_ISREG(n->mode) || !writable(n->mode) || n->write ||
			       (n->flags & N_IMPORT));
			assert(!n->write || tree_kinds[k].record);
			assert(!(n->flags & (N_AFTER_END | N_NEEDS_START)) || k == KIND_JOB ||
			       k == KIND_PROMPT);
			assert(n->dir == NODE_UNLISTED || n->dir < tree_kinds[k].n);
		}
}

int tree_new(struct engine *e, struct tree **ret)
{
	struct tree *t = calloc(1, sizeof *t);

	if (!t)
		return -ENOMEM;
	check_tables();
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
