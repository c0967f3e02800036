/* volumes.c - named volumes: the table, create and delete with intents,
 * attachments, size, and export/import archives. */
#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include "engine/internal.h"
#include "runtime/export.h"
#include "common/log.h"
#include "runtime/runtime.h"
#include "common/tarsafe.h"
#include "runtime/volume-live.h"
#include "engine/volumes.h"

struct volume {
	struct volume_row row;
	struct hmap_node by_name, by_id; /* in the table's indexes */
	bool deleting;			 /* rmdir in progress: hidden */
	bool importing;			 /* an import holds it */
	unsigned exports;
	unsigned live;	    /* mounts in, or unmounts from, running boxes under way */
	struct du_cache du; /* its data */
	char error[PD_ERROR_MAX + 64];
};

struct volumes {
	struct volume **v;
	size_t n;
	struct hmap by_name, by_id; /* the same volumes */
	char *dir;		    /* DATA/volumes */
	char *view_dir;		    /* RUN/volumes: the data of each, for the group (view_path) */
};

/* --- parsing -------------------------------------------------------------- */

int engine_volume_list_parse(const char *text, size_t len, char ***ret, size_t *ret_n,
			     pd_error *err)
{
	char **names = NULL;
	size_t n = 0, line = 0;
	const char *p = text, *end = text + len;
	int r = 0;

	if (memchr(text, '\0', len)) {
		r = pd_error_set(err, -EINVAL, "NUL byte in the list of volumes");
		goto fail;
	}
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t l = nl ? (size_t)(nl - p) : (size_t)(end - p);
		char name[NAME_MAX_LEN + 2];

		line++;
		if (l == 0)
			goto next;
		if (l > NAME_MAX_LEN) {
			r = pd_error_set(err, -EINVAL, "line %zu: invalid volume name (too long)",
					 line);
			goto fail;
		}
		memcpy(name, p, l);
		name[l] = '\0';
		if (!name_valid(name)) {
			r = pd_error_set(err, -EINVAL,
					 "line %zu: invalid volume name \"%s\": use "
					 "[a-z0-9][a-z0-9._-]{0,62}",
					 line, name);
			goto fail;
		}
		for (size_t i = 0; i < n; i++)
			if (strcmp(names[i], name) == 0) {
				r = pd_error_set(err, -EINVAL, "line %zu: volume %s listed twice",
						 line, name);
				goto fail;
			}
		if (n == VOLUMES_PER_BOX_MAX) {
			r = pd_error_set(err, -EINVAL, "line %zu: at most %d volumes per box", line,
					 VOLUMES_PER_BOX_MAX);
			goto fail;
		}
		char **nn = realloc(names, (n + 1) * sizeof *nn);
		if (!nn || !(nn[n] = strdup(name))) {
			if (nn)
				names = nn;
			r = pd_error_set(err, -ENOMEM, "out of memory");
			goto fail;
		}
		names = nn;
		n++;
	next:
		p += l + 1;
	}
	*ret = names;
	*ret_n = n;
	return 0;
fail:
	image_list_free(names, n);
	return r;
}

/* --- the table (engine lock held) ---------------------------------------- */

static struct volume *find_volume(struct engine *e, const char *name)
{
	uint64_t hash = hmap_hash_str(name);
	struct hmap_node *node;

	HMAP_FOR_HASH(node, &e->volumes->by_name, hash)
	{
		struct volume *v = HMAP_ENTRY(node, struct volume, by_name);
		if (strcmp(v->row.name, name) == 0)
			return v;
	}
	return NULL;
}

static struct volume *find_volume_id(struct engine *e, int64_t id)
{
	uint64_t hash = hmap_hash_u64((uint64_t)id);
	struct hmap_node *node;

	HMAP_FOR_HASH(node, &e->volumes->by_id, hash)
	{
		struct volume *v = HMAP_ENTRY(node, struct volume, by_id);
		if (v->row.id == id)
			return v;
	}
	return NULL;
}

static struct volume *find_live(struct engine *e, const char *name)
{
	struct volume *v = find_volume(e, name);

	return v && !v->deleting ? v : NULL;
}

/* Volume id unless it is gone or being deleted: what an action on an
 * existing volume looks up (a volume made again under its name is
 * another). */
static struct volume *find_live_id(struct engine *e, int64_t id)
{
	struct volume *v = find_volume_id(e, id);

	return v && !v->deleting ? v : NULL;
}

static int volume_gone(pd_error *err)
{
	return pd_error_set(err, -ENOENT,
			    "no such volume: it was deleted (a volume made again under its name "
			    "is another volume)");
}

/* "line N: no volume named X" and what there is instead. Engine lock held. */
static int no_such_volume(struct engine *e, size_t line, const char *name, pd_error *err)
{
	struct volumes *vs = e->volumes;
	char names[256];
	size_t len = 0;

	names[0] = '\0';
	for (size_t i = 0; i < vs->n; i++)
		if (!vs->v[i]->deleting &&
		    !text_list_add(names, sizeof names, &len, vs->v[i]->row.name))
			break;
	if (!len)
		return pd_error_set(err, -ENOENT,
				    "line %zu: no volume named %s: there are no volumes (mkdir "
				    "volumes/NAME makes one)",
				    line, name);
	return pd_error_set(err, -ENOENT, "line %zu: no volume named %s: volumes are %s", line,
			    name, names);
}

static int add_volume(struct engine *e, struct volume *v)
{
	struct volumes *vs = e->volumes;
	struct volume **nv = realloc(vs->v, (vs->n + 1) * sizeof *nv);

	if (!nv)
		return -ENOMEM;
	vs->v = nv;
	if (hmap_insert_pair(&vs->by_name, &v->by_name, hmap_hash_str(v->row.name), &vs->by_id,
			     &v->by_id, hmap_hash_u64((uint64_t)v->row.id)) < 0)
		return -ENOMEM;
	vs->v[vs->n++] = v;
	return 0;
}

static void remove_volume(struct engine *e, struct volume *v)
{
	struct volumes *vs = e->volumes;

	for (size_t i = 0; i < vs->n; i++)
		if (vs->v[i] == v) {
			memmove(&vs->v[i], &vs->v[i + 1], (vs->n - i - 1) * sizeof *vs->v);
			vs->n--;
			hmap_remove(&vs->by_name, &v->by_name);
			hmap_remove(&vs->by_id, &v->by_id);
			return;
		}
}

static void volume_path(const struct engine *e, const char *name, const char *sub, char *buf,
			size_t bufsz)
{
	if (sub)
		snprintf(buf, bufsz, "%s/%s/%s", e->volumes->dir, name, sub);
	else
		snprintf(buf, bufsz, "%s/%s", e->volumes->dir, name);
}

/* RUN/volumes/NAME: where the tree's data link leads, a bind of
 * DATA/volumes/NAME/data (eng_bind_view: nosuid, nodev, nosymfollow). DATA is root's
 * alone; the run directory is open to the group that may use the tree. */
static void view_path(const struct engine *e, const char *name, char *buf, size_t bufsz)
{
	snprintf(buf, bufsz, "%s/%s", e->volumes->view_dir, name);
}

static int bind_view(struct engine *e, const char *name, pd_error *err)
{
	char data[4096], view[4096];

	volume_path(e, name, "data", data, sizeof data);
	view_path(e, name, view, sizeof view);
	return eng_bind_view(data, view, err);
}

/* One line in the global event stream: "TIME volumes/NAME WHAT". */
static void emit_volume(struct engine *e, const char *name, const char *what)
{
	char line[256], ts[32];
	int n;

	if (e->events_fd < 0)
		return;
	format_rfc3339(time(NULL), ts, sizeof ts);
	n = snprintf(line, sizeof line, "%s volumes/%s %s\n", ts, name, what);
	if (n > 0 && (size_t)n < sizeof line)
		(void)write_all(e->events_fd, line, (size_t)n);
}

static void view_of(const struct volume *v, struct volume_view *ret)
{
	*ret = (struct volume_view){.id = v->row.id, .created = (time_t)v->row.created};
	snprintf(ret->name, sizeof ret->name, "%s", v->row.name);
	snprintf(ret->error, sizeof ret->error, "%s", v->error);
}

int engine_volume_names(struct engine *e, char ***ret, size_t *ret_n)
{
	char **names;
	size_t n = 0;

	pd_mutex_lock(&e->lock);
	names = calloc(e->volumes->n ? e->volumes->n : 1, sizeof *names);
	for (size_t i = 0; names && i < e->volumes->n; i++) {
		if (e->volumes->v[i]->deleting)
			continue;
		if (!(names[n] = strdup(e->volumes->v[i]->row.name))) {
			image_list_free(names, n);
			names = NULL;
		} else
			n++;
	}
	pd_mutex_unlock(&e->lock);
	if (!names)
		return -ENOMEM;
	*ret = names;
	*ret_n = n;
	return 0;
}

int engine_volume_get(struct engine *e, const char *name, struct volume_view *ret)
{
	struct volume *v;

	pd_mutex_lock(&e->lock);
	v = find_live(e, name);
	if (v)
		view_of(v, ret);
	pd_mutex_unlock(&e->lock);
	return v ? 0 : -ENOENT;
}

int engine_volume_get_by_id(struct engine *e, int64_t id, struct volume_view *ret)
{
	struct volume *v;

	pd_mutex_lock(&e->lock);
	v = find_volume_id(e, id);
	if (v && !v->deleting)
		view_of(v, ret);
	pd_mutex_unlock(&e->lock);
	return v && !v->deleting ? 0 : -ENOENT;
}

/* --- create and delete ----------------------------------------------------- */

static int make_volume_dirs(struct engine *e, const char *name, pd_error *err)
{
	char p[4096];

	volume_path(e, name, NULL, p, sizeof p);
	if (mkdir(p, 0700) < 0 && errno != EEXIST)
		return pd_error_set(err, -errno, "cannot create %s: %s", p, strerror(errno));
	volume_path(e, name, "data", p, sizeof p);
	if (mkdir(p, 0777) < 0 && errno != EEXIST)
		return pd_error_set(err, -errno, "cannot create %s: %s", p, strerror(errno));
	/* Writable by every box's user, whatever the image (umask aside). */
	if (chmod(p, 0777) < 0)
		return pd_error_set(err, -errno, "cannot chmod %s: %s", p, strerror(errno));
	return bind_view(e, name, err);
}

static void remove_volume_files(struct engine *e, const char *name)
{
	char p[4096];
	int r;

	view_path(e, name, p, sizeof p);
	eng_unbind_view(p);
	(void)rmdir(p);
	volume_path(e, name, NULL, p, sizeof p);
	r = rm_rf(p);
	if (r < 0)
		log_warn("volume %s: cannot remove all files: %s", name, strerror(-r));
}

int engine_volume_create(struct engine *e, const char *name, pd_error *err)
{
	struct volume *v;
	int r;

	if (!name_valid(name))
		return pd_error_set(err, -EINVAL,
				    "invalid volume name \"%s\": use [a-z0-9][a-z0-9._-]{0,62}",
				    name);
	v = calloc(1, sizeof *v);
	if (!v)
		return pd_error_set(err, -ENOMEM, "out of memory");
	snprintf(v->row.name, sizeof v->row.name, "%s", name);
	snprintf(v->row.state, sizeof v->row.state, "creating");
	v->row.created = time(NULL);

	pd_mutex_lock(&e->lock);
	if (find_volume(e, name)) {
		r = pd_error_set(err, -EEXIST, "volume %s already exists", name);
		goto fail;
	}
	/* Intent first: a crash from here on leaves a "creating" row that the
	 * next start rolls back with whatever directories exist. */
	r = store_volume_insert(e->store, &v->row, err);
	if (r < 0)
		goto fail;
	pd_fault("volume-create-row");
	r = make_volume_dirs(e, name, err);
	if (r >= 0) {
		pd_fault("volume-create-dir");
		r = store_volume_set_state(e->store, v->row.id, "ready", err);
	}
	if (r >= 0) {
		snprintf(v->row.state, sizeof v->row.state, "ready");
		r = add_volume(e, v);
		if (r < 0)
			pd_error_set(err, r, "out of memory");
	}
	if (r < 0) {
		/* Its "creating" row keeps the name meanwhile. */
		pd_mutex_unlock(&e->lock);
		remove_volume_files(e, name);
		pd_mutex_lock(&e->lock);
		(void)store_volume_delete(e->store, v->row.id, NULL);
		goto fail;
	}
	emit_volume(e, name, "created");
	pd_mutex_unlock(&e->lock);
	eng_wake(e, 0);
	log_debug("volume %s created", name);
	return 0;
fail:
	pd_mutex_unlock(&e->lock);
	free(v);
	return r;
}

/* "a, b" from box ids. Engine lock held. */
static void box_names_of(struct engine *e, const int64_t *ids, size_t n, char *buf, size_t bufsz)
{
	size_t len = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n && len < bufsz; i++) {
		struct box *b = eng_find_box_id(e, ids[i]);
		int w = snprintf(buf + len, bufsz - len, "%s%s", i ? ", " : "",
				 b ? b->row.name : "(a box being deleted)");
		if (w < 0)
			break;
		len += (size_t)w;
	}
}

int engine_volume_delete(struct engine *e, int64_t id, pd_error *err)
{
	_cleanup_free_ int64_t *boxes = NULL;
	char name[NAME_MAX_LEN + 1];
	struct volume *v;
	size_t n = 0;
	int r;

	pd_mutex_lock(&e->lock);
	v = find_live_id(e, id);
	if (!v) {
		r = volume_gone(err);
		goto out;
	}
	snprintf(name, sizeof name, "%s", v->row.name);
	r = store_volume_boxes(e->store, v->row.id, &boxes, &n);
	if (r < 0) {
		pd_error_set(err, r, "cannot read the boxes of volume %s", name);
		goto out;
	}
	if (n) {
		char list[512];
		box_names_of(e, boxes, n, list, sizeof list);
		r = pd_error_set(err, -EBUSY, "volume %s is attached to %s: detach it first", name,
				 list);
		goto out;
	}
	if (v->live) {
		r = pd_error_set(err, -EBUSY,
				 "volume %s is being detached from a running box; try again when "
				 "it is done",
				 name);
		goto out;
	}
	if (v->importing || v->exports) {
		r = pd_error_set(err, -EBUSY, "volume %s is being %s; try again when it is done",
				 name, v->importing ? "imported into" : "exported");
		goto out;
	}
	r = store_volume_set_state(e->store, v->row.id, "deleting", err);
	if (r < 0)
		goto out;
	pd_fault("volume-delete-mark");
	v->deleting = true;
	pd_mutex_unlock(&e->lock);

	/* Recorded: a crash from here on is finished at the next start. */
	remove_volume_files(e, name);
	pd_fault("volume-delete-files");

	pd_mutex_lock(&e->lock);
	r = store_volume_delete(e->store, v->row.id, err);
	if (r < 0) {
		/* Files gone but the row stays "deleting": the next start
		 * finishes it. Hidden until then. */
		log_warn("volume %s: %s", name, err->msg);
		r = 0;
	} else {
		remove_volume(e, v);
		free(v);
	}
	pd_fault("volume-delete-rows");
	emit_volume(e, name, "deleted");
	pd_mutex_unlock(&e->lock);
	eng_wake(e, 0);
	log_debug("volume %s deleted", name);
	return 0;
out:
	pd_mutex_unlock(&e->lock);
	return r;
}

void engine_volume_record_error(struct engine *e, int64_t id, const char *file, const pd_error *err)
{
	struct volume *v;

	pd_mutex_lock(&e->lock);
	v = find_live_id(e, id);
	if (v)
		eng_format_error(file, err, v->error, sizeof v->error);
	pd_mutex_unlock(&e->lock);
}

/* --- data, size, boxes -------------------------------------------------------- */

static int volume_dir(struct engine *e, int64_t id, bool own, char *buf, size_t bufsz)
{
	struct volume *v;

	pd_mutex_lock(&e->lock);
	v = find_live_id(e, id);
	if (v) {
		if (own)
			volume_path(e, v->row.name, "data", buf, bufsz);
		else
			view_path(e, v->row.name, buf, bufsz);
	}
	pd_mutex_unlock(&e->lock);
	return v ? 0 : -ENOENT;
}

int engine_volume_data(struct engine *e, int64_t id, char *buf, size_t bufsz)
{
	return volume_dir(e, id, false, buf, bufsz);
}

int engine_volume_datadir(struct engine *e, int64_t id, char *buf, size_t bufsz)
{
	return volume_dir(e, id, true, buf, bufsz);
}

static struct du_cache *volume_disk(struct engine *e, int64_t id, bool *ret_deleting)
{
	struct volume *v = find_volume_id(e, id);

	*ret_deleting = v && v->deleting;
	return v ? &v->du : NULL;
}

int engine_volume_size(struct engine *e, int64_t id, uint64_t *ret)
{
	char path[4096];
	struct volume *v;
	int r = -ENOENT;

	pd_mutex_lock(&e->lock);
	v = find_live_id(e, id);
	if (v) {
		volume_path(e, v->row.name, "data", path, sizeof path);
		/* Walked without the lock: a big volume must not stall the
		 * engine. */
		r = eng_du_cached(e, volume_disk, v->row.id, path, /* flags= */ 0, ret);
	}
	pd_mutex_unlock(&e->lock);
	return r;
}

int engine_volume_boxes(struct engine *e, int64_t id, char ***ret, size_t *ret_n)
{
	_cleanup_free_ int64_t *ids = NULL;
	char **names = NULL;
	size_t n = 0, k = 0;
	struct volume *v;
	int r;

	pd_mutex_lock(&e->lock);
	v = find_live_id(e, id);
	r = v ? store_volume_boxes(e->store, v->row.id, &ids, &n) : -ENOENT;
	if (r >= 0 && !(names = calloc(n ? n : 1, sizeof *names)))
		r = -ENOMEM;
	for (size_t i = 0; r >= 0 && i < n; i++) {
		struct box *b = eng_find_box_id(e, ids[i]);
		if (!b || b->deleting)
			continue;
		if (!(names[k] = strdup(b->row.name)))
			r = -ENOMEM;
		else
			k++;
	}
	pd_mutex_unlock(&e->lock);
	if (r < 0) {
		image_list_free(names, k);
		return r;
	}
	*ret = names;
	*ret_n = k;
	return 0;
}

/* --- attachments --------------------------------------------------------------- */

/* The names of a box's volumes. Engine lock held. */
static int box_volume_names(struct engine *e, struct box *b, char ***ret, size_t *ret_n)
{
	_cleanup_free_ int64_t *ids = NULL;
	char **names;
	size_t n = 0, k = 0;
	int r;

	r = store_box_volumes(e->store, b->row.id, &ids, &n);
	if (r < 0)
		return r;
	names = calloc(n ? n : 1, sizeof *names);
	if (!names)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct volume *v = find_volume_id(e, ids[i]);
		if (!v)
			continue;
		if (!(names[k] = strdup(v->row.name))) {
			image_list_free(names, k);
			return -ENOMEM;
		}
		k++;
	}
	*ret = names;
	*ret_n = k;
	return 0;
}

int engine_box_volumes(struct engine *e, int64_t box_id, char ***ret, size_t *ret_n)
{
	struct box *b;
	int r;

	pd_mutex_lock(&e->lock);
	b = eng_live_box(e, box_id);
	r = b ? box_volume_names(e, b, ret, ret_n) : -ENOENT;
	pd_mutex_unlock(&e->lock);
	return r;
}

/* The list as text, one name a line. */
static int join_names(char **names, size_t n, char *buf, size_t bufsz)
{
	size_t len = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		int w = snprintf(buf + len, bufsz - len, "%s\n", names[i]);
		if (w < 0 || (size_t)w >= bufsz - len)
			return -ENOBUFS;
		len += (size_t)w;
	}
	return 0;
}

/* The line of text holding name (the list parsed without error). */
static size_t line_of(const char *text, size_t len, const char *name)
{
	size_t line = 1, nl = strlen(name);

	for (const char *p = text, *end = text + len; p < end; line++) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		size_t l = eol ? (size_t)(eol - p) : (size_t)(end - p);
		if (l == nl && memcmp(p, name, l) == 0)
			return line;
		p += l + 1;
	}
	return 0;
}

#define LIST_TEXT_MAX (VOLUMES_PER_BOX_MAX * (NAME_MAX_LEN + 1) + 1)

/*
 * What is mounted in a running box is recorded beside its bundle:
 *   bundle/volumes       the volumes mounted in it (at its start, and live
 *                        since), one name a line; a change is pending while
 *                        its list says otherwise;
 *   bundle/volumes-live  while a live change runs, every volume that may be
 *                        mounted in it (the old ones and the new). Written
 *                        before the list is recorded, removed once the mounts
 *                        and bundle/volumes agree with the list: a daemon
 *                        killed in between finds it at its next start, and
 *                        eng_volumes_reconcile() brings the box's mounts in
 *                        line with its list.
 */
#define RECORD_MAX (2 * VOLUMES_PER_BOX_MAX)

/* "a,b", or "none", for events. */
static void comma_list(char **names, size_t n, char *buf, size_t bufsz)
{
	if (!n || join_names(names, n, buf, bufsz) < 0) {
		snprintf(buf, bufsz, "%s", n ? "(too long)" : "none");
		return;
	}
	for (char *c = buf; *c; c++)
		if (*c == '\n')
			*c = c[1] ? ',' : '\0';
}

static bool has_name(char **names, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(names[i], name) == 0)
			return true;
	return false;
}

/* Appends a copy of name to the list unless it is there. */
static int add_name(char ***names, size_t *n, const char *name)
{
	char **nn;

	if (has_name(*names, *n, name))
		return 0;
	nn = realloc(*names, (*n + 1) * sizeof *nn);
	if (!nn)
		return -ENOMEM;
	*names = nn;
	if (!(nn[*n] = strdup(name)))
		return -ENOMEM;
	(*n)++;
	return 0;
}

static void record_path(const struct engine *e, const struct box *b, bool live, char *buf,
			size_t bufsz)
{
	eng_box_path(e, b, live ? "bundle/volumes-live" : "bundle/volumes", buf, bufsz);
}

/* Adds the names a record holds to the list (none when it is missing). */
static int record_read(const struct engine *e, const struct box *b, bool live, char ***names,
		       size_t *n)
{
	_cleanup_free_ char *text = NULL;
	char path[4096], *save = NULL;
	int r;

	record_path(e, b, live, path, sizeof path);
	r = read_file_at(AT_FDCWD, path, RECORD_MAX * (NAME_MAX_LEN + 1) + 1, &text, NULL);
	if (r == -ENOENT)
		return 0;
	for (char *tok = r < 0 ? NULL : strtok_r(text, "\n", &save); tok;
	     tok = strtok_r(NULL, "\n", &save)) {
		if (!name_valid(tok) || *n == RECORD_MAX)
			continue;
		r = add_name(names, n, tok);
		if (r < 0)
			return r;
	}
	return r;
}

static int record_write(const struct engine *e, const struct box *b, bool live, char **names,
			size_t n)
{
	char path[4096], text[RECORD_MAX * (NAME_MAX_LEN + 1) + 1];
	int r = join_names(names, n, text, sizeof text);

	if (r < 0)
		return r;
	record_path(e, b, live, path, sizeof path);
	return write_file_replace(path, text, strlen(text));
}

static void record_done(const struct engine *e, const struct box *b)
{
	char path[4096];

	record_path(e, b, /* live= */ true, path, sizeof path);
	(void)unlink(path);
}

/* One volume to mount in, or unmount from, a running box. */
struct live_step {
	char name[NAME_MAX_LEN + 1];
	char src[4096]; /* its data directory */
	bool attach;
	int result; /* what volume_live_attach() or _detach() returned */
};

/* The steps from the volumes mounted in a box to names: mounts first (a
 * box can make those fail), then unmounts. Engine lock held. */
static int live_plan(struct engine *e, char **mounted, size_t n_mounted, char **names, size_t n,
		     struct live_step **ret, size_t *ret_n)
{
	struct live_step *s = calloc(n + n_mounted + 1, sizeof *s);
	size_t k = 0;

	if (!s)
		return -ENOMEM;
	for (size_t i = 0; i < n + n_mounted; i++) {
		bool attach = i < n;
		const char *name = attach ? names[i] : mounted[i - n];

		if (attach ? has_name(mounted, n_mounted, name) : has_name(names, n, name))
			continue;
		/* A volume deleted meanwhile has no files to unmount. */
		if (!attach && !find_volume(e, name))
			continue;
		snprintf(s[k].name, sizeof s[k].name, "%s", name);
		volume_path(e, name, "data", s[k].src, sizeof s[k].src);
		s[k++].attach = attach;
	}
	*ret = s;
	*ret_n = k;
	return 0;
}

/* While a step runs, its volume cannot be deleted (rmdir: -EBUSY). */
static void live_mark(struct engine *e, const struct live_step *s, size_t n, bool on)
{
	for (size_t i = 0; i < n; i++) {
		struct volume *v = find_volume(e, s[i].name);
		if (v)
			v->live += on ? 1 : -1;
	}
}

static int live_step_run(const struct volume_live_box *lb, struct live_step *s, bool undo,
			 pd_error *err)
{
	return s->attach != undo ? volume_live_attach(lb, s->src, s->name, err)
				 : volume_live_detach(lb, s->src, s->name, err);
}

/* Runs the steps in order; after a failure, undoes the ones that changed
 * something, last first (*ret_clean false when an undo failed too). No
 * lock held. */
static int live_apply(const struct volume_live_box *lb, struct live_step *s, size_t n,
		      bool *ret_clean, pd_error *err)
{
	size_t i;
	int r = 0;

	*ret_clean = true;
	for (i = 0; i < n && r >= 0; i++) {
		r = live_step_run(lb, &s[i], /* undo= */ false, err);
		s[i].result = r;
	}
	if (r >= 0)
		return 0;
	for (i--; i-- > 0;) {
		pd_error uerr = {0};
		/* Mounted there before this change, or not mounted at all. */
		if (s[i].attach ? s[i].result == 1 : s[i].result == VOLUME_LIVE_NONE)
			continue;
		if (live_step_run(lb, &s[i], /* undo= */ true, &uerr) < 0) {
			log_warn("box %s: cannot undo the %s of volume %s: %s", lb->name,
				 s[i].attach ? "mount" : "unmount", s[i].name, uerr.msg);
			*ret_clean = false;
		}
	}
	return r;
}

static void emit_lazy(struct engine *e, struct box *b, const char *name)
{
	eng_emit(e, b,
		 "volume %s detached lazily: a process in the box still uses /mnt/%s (its "
		 "working directory or an open file) and keeps that until it lets go",
		 name, name);
}

/* The volumes file of a running box: the list recorded, then the box's
 * mounts changed live (see above); a failure puts both back. Engine lock
 * held on entry and on return, dropped meanwhile with b busy. */
static int live_change(struct engine *e, struct box *b, char **names, size_t n, const int64_t *ids,
		       bool same, pd_error *err)
{
	_cleanup_free_ int64_t *old_ids = NULL;
	_cleanup_free_ struct live_step *steps = NULL;
	char **mounted = NULL, **maybe = NULL;
	size_t n_old = 0, n_mounted = 0, n_maybe = 0, n_steps = 0;
	char rootfs[4096], boxname[NAME_MAX_LEN + 1];
	struct volume_live_box lb;
	bool clean;
	int r;

	r = store_box_volumes(e->store, b->row.id, &old_ids, &n_old);
	if (r >= 0)
		r = record_read(e, b, /* live= */ false, &mounted, &n_mounted);
	if (r >= 0)
		r = live_plan(e, mounted, n_mounted, names, n, &steps, &n_steps);
	for (size_t i = 0; r >= 0 && i < n_mounted + n; i++)
		r = add_name(&maybe, &n_maybe, i < n_mounted ? mounted[i] : names[i - n_mounted]);
	if (r < 0) {
		pd_error_set(err, r, "cannot read the volumes of box %s", b->row.name);
		goto out;
	}
	if (same && !n_steps)
		goto out;
	/* Recorded first: what may be mounted, then the list. */
	r = record_write(e, b, /* live= */ true, maybe, n_maybe);
	if (r < 0) {
		pd_error_set(err, r, "cannot record the volumes of box %s: %s", b->row.name,
			     strerror(-r));
		goto out;
	}
	r = store_box_set_volumes(e->store, b->row.id, ids, n, err);
	if (r < 0) {
		record_done(e, b);
		goto out;
	}
	live_mark(e, steps, n_steps, true);
	b->busy = true;
	snprintf(boxname, sizeof boxname, "%s", b->row.name);
	eng_box_path(e, b, "rootfs", rootfs, sizeof rootfs);
	lb = (struct volume_live_box){.name = boxname, .pid = b->pid, .rootfs = rootfs};
	pd_mutex_unlock(&e->lock);

	pd_fault("volume-live-recorded");
	pd_hold("volume-live");
	r = live_apply(&lb, steps, n_steps, &clean, err);
	pd_fault("volume-live-applied");

	pd_mutex_lock(&e->lock);
	if (r < 0 && store_box_set_volumes(e->store, b->row.id, old_ids, n_old, NULL) < 0)
		clean = false;
	if (clean && record_write(e, b, /* live= */ false, r < 0 ? mounted : names,
				  r < 0 ? n_mounted : n) >= 0)
		record_done(e, b);
	else
		log_warn("box %s: its volumes and its mounts may differ until paddockd restarts",
			 boxname);
	live_mark(e, steps, n_steps, false);
	b->busy = false;
	if (r >= 0) {
		char list[LIST_TEXT_MAX];
		comma_list(names, n, list, sizeof list);
		eng_emit(e, b, "volumes %s", list);
		for (size_t i = 0; i < n_steps; i++)
			if (!steps[i].attach && steps[i].result == VOLUME_LIVE_LAZY)
				emit_lazy(e, b, steps[i].name);
	}
out:
	image_list_free(mounted, n_mounted);
	image_list_free(maybe, n_maybe);
	return r;
}

int engine_box_set_volumes(struct engine *e, int64_t box_id, const char *text, size_t len,
			   pd_error *err)
{
	_cleanup_free_ int64_t *ids = NULL;
	char **names = NULL, **old = NULL;
	size_t n = 0, n_old = 0;
	struct box *b;
	bool running, same;
	int r;

	r = engine_volume_list_parse(text, len, &names, &n, err);
	if (r < 0)
		return r;
	ids = calloc(n ? n : 1, sizeof *ids);
	if (!ids) {
		image_list_free(names, n);
		return pd_error_set(err, -ENOMEM, "out of memory");
	}
	pd_mutex_lock(&e->lock);
	b = eng_live_box(e, box_id);
	if (!b) {
		r = eng_box_gone(err);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		struct volume *v = find_live(e, names[i]);
		if (!v) {
			r = no_such_volume(e, line_of(text, len, names[i]), names[i], err);
			goto out;
		}
		ids[i] = v->row.id;
	}
	running = b->state == BOX_RUNNING || b->state == BOX_STARTING || b->state == BOX_STOPPING;
	/* A box on its way up or down, or busy with another change, has
	 * mounts that are about to change: not now. */
	if (running) {
		r = eng_claim(e, box_id, &b, err);
		if (r < 0)
			goto out;
	}
	r = box_volume_names(e, b, &old, &n_old);
	if (r < 0) {
		pd_error_set(err, r, "cannot read the volumes of box %s", b->row.name);
		goto out;
	}
	same = n == n_old;
	for (size_t i = 0; same && i < n; i++)
		same = strcmp(names[i], old[i]) == 0;
	if (b->state == BOX_RUNNING && b->pid > 0) {
		r = live_change(e, b, names, n, ids, same, err);
		goto out;
	}
	if (same)
		goto out;
	r = store_box_set_volumes(e->store, b->row.id, ids, n, err);
	if (r < 0)
		goto out;
	{
		char list[LIST_TEXT_MAX];
		comma_list(names, n, list, sizeof list);
		/* Running, its PID unknown (crun did not answer at start). */
		if (running)
			eng_emit(e, b, "volumes %s (applies at the next start)", list);
		else
			eng_emit(e, b, "volumes %s", list);
	}
out:
	pd_mutex_unlock(&e->lock);
	image_list_free(names, n);
	image_list_free(old, n_old);
	return r;
}

bool engine_box_volumes_pending(struct engine *e, int64_t box_id)
{
	char path[4096], now[LIST_TEXT_MAX];
	_cleanup_free_ char *started = NULL;
	char **names = NULL;
	size_t n = 0;
	bool pending = false;
	struct box *b;

	pd_mutex_lock(&e->lock);
	b = eng_live_box(e, box_id);
	if (b && (b->state == BOX_RUNNING || b->state == BOX_STARTING) &&
	    box_volume_names(e, b, &names, &n) >= 0 && join_names(names, n, now, sizeof now) >= 0) {
		eng_box_path(e, b, "bundle/volumes", path, sizeof path);
		if (read_file_at(AT_FDCWD, path, LIST_TEXT_MAX, &started, NULL) < 0)
			pending = n > 0; /* started before volumes existed */
		else
			pending = strcmp(started, now) != 0;
	}
	pd_mutex_unlock(&e->lock);
	image_list_free(names, n);
	return pending;
}

int eng_volume_mounts(struct engine *e, struct box *b, struct box_mount **ret, size_t *ret_n,
		      pd_error *err)
{
	char **names = NULL;
	size_t n = 0;
	struct box_mount *m = NULL;
	int r;

	r = box_volume_names(e, b, &names, &n);
	if (r < 0)
		return pd_error_set(err, r, "cannot read the volumes of box %s", b->row.name);
	if (n && !(m = calloc(n, sizeof *m))) {
		image_list_free(names, n);
		return pd_error_set(err, -ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < n; i++) {
		volume_path(e, names[i], "data", m[i].source, sizeof m[i].source);
		snprintf(m[i].destination, sizeof m[i].destination, "/mnt/%s", names[i]);
	}
	image_list_free(names, n);
	*ret = m;
	*ret_n = n;
	return 0;
}

void eng_volumes_started(struct engine *e, struct box *b, const struct box_mount *m, size_t n)
{
	char path[4096], list[LIST_TEXT_MAX];
	size_t len = 0;

	list[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		/* destination is "/mnt/NAME" */
		int w = snprintf(list + len, sizeof list - len, "%s\n", m[i].destination + 5);
		if (w < 0 || (size_t)w >= sizeof list - len)
			break;
		len += (size_t)w;
	}
	eng_box_path(e, b, "bundle/volumes", path, sizeof path);
	if (write_file_replace(path, list, len) < 0)
		log_warn("box %s: cannot record its volumes", b->row.name);
	record_done(e, b); /* a live change cut short: its mounts ended with the box */
}

/* The ids of names, in order (volumes that no longer exist left out). */
static int ids_of(struct engine *e, char **names, size_t n, int64_t **ret, size_t *ret_n)
{
	int64_t *ids = calloc(n ? n : 1, sizeof *ids);
	size_t k = 0;

	if (!ids)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct volume *v = find_live(e, names[i]);
		if (v)
			ids[k++] = v->row.id;
	}
	*ret = ids;
	*ret_n = k;
	return 0;
}

static void reconcile_failed(struct engine *e, struct box *b, const char *name, bool attach,
			     const pd_error *err)
{
	log_warn("box %s: %s", b->row.name, err->msg);
	eng_emit(e, b, "volume %s %s after a restart: %s", name,
		 attach ? "taken out of the list: it could not be mounted"
			: "kept in the list: it could not be unmounted",
		 err->msg);
}

/* A live change a crash cut short, finished (see bundle/volumes-live). */
static void reconcile_box(struct engine *e, struct box *b)
{
	_cleanup_free_ int64_t *ids = NULL;
	char **want = NULL, **maybe = NULL, **now = NULL;
	size_t n_want = 0, n_maybe = 0, n_now = 0, n_ids = 0;
	char path[4096], rootfs[4096];
	struct volume_live_box lb;
	bool changed = false;
	int r;

	record_path(e, b, /* live= */ true, path, sizeof path);
	if (access(path, F_OK) < 0)
		return;
	if (b->state != BOX_RUNNING) {
		record_done(e, b); /* its mounts ended with it */
		return;
	}
	if (b->pid <= 0)
		return; /* crun did not answer: at a later start */
	r = box_volume_names(e, b, &want, &n_want);
	if (r >= 0)
		r = record_read(e, b, /* live= */ true, &maybe, &n_maybe);
	if (r >= 0)
		r = record_read(e, b, /* live= */ false, &maybe, &n_maybe);
	if (r < 0) {
		log_warn("box %s: cannot read its volumes: %s", b->row.name, strerror(-r));
		goto out;
	}
	eng_box_path(e, b, "rootfs", rootfs, sizeof rootfs);
	lb = (struct volume_live_box){.name = b->row.name, .pid = b->pid, .rootfs = rootfs};
	/* Every step is a no-op where the mount is as it should be. What a
	 * step cannot do, the list follows: it and the mounts agree. */
	for (size_t i = 0; r >= 0 && i < n_want; i++) {
		pd_error err = {0};

		volume_path(e, want[i], "data", path, sizeof path);
		if (volume_live_attach(&lb, path, want[i], &err) >= 0) {
			r = add_name(&now, &n_now, want[i]);
			continue;
		}
		changed = true;
		reconcile_failed(e, b, want[i], /* attach= */ true, &err);
	}
	for (size_t i = 0; r >= 0 && i < n_maybe; i++) {
		pd_error err = {0};
		int d;

		if (has_name(want, n_want, maybe[i]) || !find_volume(e, maybe[i]))
			continue;
		volume_path(e, maybe[i], "data", path, sizeof path);
		d = volume_live_detach(&lb, path, maybe[i], &err);
		if (d == VOLUME_LIVE_LAZY)
			emit_lazy(e, b, maybe[i]);
		if (d >= 0)
			continue;
		changed = true;
		reconcile_failed(e, b, maybe[i], /* attach= */ false, &err);
		r = add_name(&now, &n_now, maybe[i]);
	}
	if (r >= 0 && changed) {
		r = ids_of(e, now, n_now, &ids, &n_ids);
		if (r >= 0)
			r = store_box_set_volumes(e->store, b->row.id, ids, n_ids, NULL);
	}
	if (r >= 0)
		r = record_write(e, b, /* live= */ false, now, n_now);
	if (r >= 0) {
		record_done(e, b);
		log_info("box %s: volumes mounted as its list says (a change was cut short)",
			 b->row.name);
	} else
		log_warn("box %s: cannot finish a change of its volumes: %s", b->row.name,
			 strerror(-r));
out:
	image_list_free(want, n_want);
	image_list_free(maybe, n_maybe);
	image_list_free(now, n_now);
}

void eng_volumes_reconcile(struct engine *e)
{
	for (size_t i = 0; i < e->n_boxes; i++)
		if (!e->boxes[i]->deleting)
			reconcile_box(e, e->boxes[i]);
}

/* --- start-up ---------------------------------------------------------------------- */

static int load_one(const struct volume_row *row, void *userdata)
{
	struct engine *e = userdata;
	struct volume *v;
	pd_error err = {0};

	if (strcmp(row->state, "ready") != 0) {
		/* Roll back a half-made volume; finish a half-deleted one. */
		bool creating = strcmp(row->state, "creating") == 0;
		remove_volume_files(e, row->name);
		if (store_volume_delete(e->store, row->id, &err) < 0)
			log_warn("volume %s: %s", row->name, err.msg);
		log_info("volume %s: %s interrupted by a crash: %s", row->name,
			 creating ? "creation" : "deletion", creating ? "rolled back" : "finished");
		return 0;
	}
	v = calloc(1, sizeof *v);
	if (!v)
		return -ENOMEM;
	v->row = *row;
	if (make_volume_dirs(e, row->name, &err) < 0)
		log_warn("volume %s: %s", row->name, err.msg);
	if (add_volume(e, v) < 0) {
		free(v);
		return -ENOMEM;
	}
	return 0;
}

/* Views of volumes that are no more (deleted by a daemon that died before
 * it removed the view): unmounted and removed. */
static void clear_stray_views(struct engine *e)
{
	DIR *d = opendir(e->volumes->view_dir);
	struct dirent *de;
	char path[4096];

	while (d && (de = readdir(d))) {
		if (de->d_name[0] == '.' || find_live(e, de->d_name))
			continue;
		view_path(e, de->d_name, path, sizeof path);
		eng_unbind_view(path);
		(void)rmdir(path);
	}
	if (d)
		closedir(d);
}

int eng_volumes_load(struct engine *e, pd_error *err)
{
	int r;

	e->volumes = calloc(1, sizeof *e->volumes);
	if (!e->volumes || asprintf(&e->volumes->dir, "%s/volumes", e->cfg->data) < 0 ||
	    asprintf(&e->volumes->view_dir, "%s/volumes", e->cfg->run) < 0)
		return pd_error_set(err, -ENOMEM, "out of memory");
	r = mkdir_p(e->volumes->dir, 0700);
	if (r < 0)
		return pd_error_set(err, r, "cannot create %s: %s", e->volumes->dir, strerror(-r));
	r = mkdir_p(e->volumes->view_dir, 0755);
	if (r < 0)
		return pd_error_set(err, r, "cannot create %s: %s", e->volumes->view_dir,
				    strerror(-r));
	r = store_volume_foreach(e->store, load_one, e);
	if (r < 0)
		return pd_error_set(err, r, "cannot load volumes: %s", strerror(-r));
	clear_stray_views(e);
	return 0;
}

void eng_volumes_free(struct engine *e)
{
	if (!e->volumes)
		return;
	for (size_t i = 0; i < e->volumes->n; i++)
		free(e->volumes->v[i]);
	free(e->volumes->v);
	hmap_free(&e->volumes->by_name);
	hmap_free(&e->volumes->by_id);
	free(e->volumes->dir);
	free(e->volumes->view_dir);
	free(e->volumes);
	e->volumes = NULL;
}

/* --- export -------------------------------------------------------------------------- */

/* Claims a volume for an archive. Engine lock held. */
static struct volume *claim_volume(struct engine *e, int64_t id, pd_error *err)
{
	struct volume *v = find_live_id(e, id);

	if (!v)
		volume_gone(err);
	else if (v->importing)
		pd_error_set(err, -EBUSY, "volume %s is being imported into", v->row.name);
	return v && !v->importing ? v : NULL;
}

static int open_dirs(struct engine *e, const char *name, int *ret_data, int *ret_tmp, pd_error *err)
{
	char path[4096];

	pd_mutex_lock(&e->lock);
	volume_path(e, name, "data", path, sizeof path);
	pd_mutex_unlock(&e->lock);
	*ret_data = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (*ret_data < 0)
		return pd_error_set(err, -errno, "cannot open the data of volume %s: %s", name,
				    strerror(errno));
	*ret_tmp = open(e->volumes->dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (*ret_tmp < 0) {
		int r = -errno;
		close(*ret_data);
		*ret_data = -1;
		return pd_error_set(err, r, "cannot make a temp file in %s: %s", e->volumes->dir,
				    strerror(-r));
	}
	return 0;
}

static void release_volume(struct engine *e, int64_t id, bool import)
{
	struct volume *v;

	pd_mutex_lock(&e->lock);
	v = find_volume_id(e, id);
	if (v && import)
		v->importing = false;
	else if (v && v->exports)
		v->exports--;
	pd_mutex_unlock(&e->lock);
}

struct volume_hold {
	struct engine *e;
	int64_t id;
};

static void export_wake(void *userdata, uint64_t key)
{
	struct volume_hold *h = userdata;

	eng_wake(h->e, key);
}

static void export_release(void *userdata)
{
	struct volume_hold *h = userdata;
	struct engine *e = h->e;

	release_volume(e, h->id, /* import= */ false);
	free(h);
	eng_export_released(e);
}

int engine_volume_export_open(struct engine *e, int64_t id, struct export_stream **ret,
			      pd_error *err)
{
	char name[NAME_MAX_LEN + 1];
	struct export_source src = {.kind = "volume", .source = name};
	struct volume_hold *h;
	struct volume *v;
	int r;

	h = calloc(1, sizeof *h);
	if (!h)
		return pd_error_set(err, -ENOMEM, "out of memory");
	h->e = e;
	pd_mutex_lock(&e->lock);
	v = claim_volume(e, id, err);
	if (v) {
		v->exports++;
		e->exports_busy++; /* until export_release() */
		h->id = v->row.id;
		snprintf(name, sizeof name, "%s", v->row.name);
	}
	pd_mutex_unlock(&e->lock);
	if (!v) {
		free(h);
		return err->code;
	}
	r = open_dirs(e, name, &src.dirfd, &src.tmpfd, err);
	if (r < 0) {
		export_release(h);
		return r;
	}
	src.wake = export_wake;
	src.release = export_release;
	src.userdata = h;
	return export_stream_start(&src, ret, err);
}

/* --- import ------------------------------------------------------------------------------ */

struct volume_import {
	struct engine *e;
	int64_t volume_id;
	char name[NAME_MAX_LEN + 1];
	int datafd, fd;
	uint64_t len, max;
};

static bool dir_is_empty(int dirfd)
{
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;
	bool empty = true;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return false;
	}
	while (empty && (de = readdir(d)))
		empty = strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0;
	closedir(d);
	return empty;
}

static void import_free(struct volume_import *imp)
{
	release_volume(imp->e, imp->volume_id, /* import= */ true);
	if (imp->fd >= 0)
		close(imp->fd);
	if (imp->datafd >= 0)
		close(imp->datafd);
	free(imp);
}

int engine_volume_import_begin(struct engine *e, int64_t id, struct volume_import **ret,
			       pd_error *err)
{
	struct volume_import *imp;
	struct volume *v;
	int r;

	imp = calloc(1, sizeof *imp);
	if (!imp)
		return pd_error_set(err, -ENOMEM, "out of memory");
	imp->e = e;
	imp->fd = imp->datafd = -1;
	imp->max = e->cfg->push_max_bytes ? e->cfg->push_max_bytes : TAR_DEFAULT_MAX_BYTES;
	pd_mutex_lock(&e->lock);
	v = claim_volume(e, id, err);
	if (v && v->exports) {
		pd_error_set(err, -EBUSY, "volume %s is being exported", v->row.name);
		v = NULL;
	}
	if (v) {
		v->importing = true;
		imp->volume_id = v->row.id;
		snprintf(imp->name, sizeof imp->name, "%s", v->row.name);
	}
	pd_mutex_unlock(&e->lock);
	if (!v) {
		free(imp);
		return err->code;
	}
	r = open_dirs(e, imp->name, &imp->datafd, &imp->fd, err);
	if (r >= 0 && !dir_is_empty(imp->datafd))
		r = pd_error_set(err, -ENOTEMPTY,
				 "volume %s is not empty: import fills a new, empty volume",
				 imp->name);
	if (r < 0) {
		import_free(imp);
		return r;
	}
	*ret = imp;
	return 0;
}

int engine_volume_import_write(struct volume_import *imp, uint64_t off, const char *buf, size_t len,
			       pd_error *err)
{
	int r;

	if (off != imp->len)
		return pd_error_set(err, -EINVAL,
				    "write the archive in order (offset %llu, expected %llu)",
				    (unsigned long long)off, (unsigned long long)imp->len);
	if (len > imp->max || imp->len > imp->max - len)
		return pd_error_set(err, -EFBIG, "the archive is larger than %llu bytes",
				    (unsigned long long)imp->max);
	r = write_all(imp->fd, buf, len);
	if (r < 0)
		return pd_error_set(err, r, "cannot store the archive: %s", strerror(-r));
	imp->len += len;
	return 0;
}

int engine_volume_import_finish(struct volume_import *imp, pd_error *err)
{
	const struct pd_config *cfg = imp->e->cfg;
	struct tar_limits lim = TAR_LIMITS_INIT;
	struct tar_result res = {0};
	struct tar_extract_hooks hooks;
	struct export_verify verify = {0};
	int r;

	lim.max_entries = cfg->push_max_entries;
	lim.max_bytes = cfg->push_max_bytes;
	/* As a push into the volume over HTTP (web/http-root.c). */
	lim.flags = TAR_ABS_LINKS_IN_ROOT;
	lim.root_what = "the volume";
	export_verify_hooks(&verify, &hooks);
	if (lseek(imp->fd, 0, SEEK_SET) < 0)
		r = pd_error_set(err, -errno, "cannot read the archive back: %s", strerror(errno));
	else
		r = tarsafe_extract_ex(imp->datafd, ".", imp->fd, &lim, &hooks, &res, err);
	if (r < 0) {
		pd_error_prefix(err, "import rejected, the volume is unchanged");
		engine_volume_record_error(imp->e, imp->volume_id, "import", err);
	} else {
		engine_volume_record_error(imp->e, imp->volume_id, "import", /* err= */ NULL);
		char what[160];
		if (verify.manifest)
			snprintf(what, sizeof what,
				 "imported (%llu entries, %zu files verified against the manifest "
				 "of %s %s)",
				 (unsigned long long)res.entries,
				 export_manifest_count(verify.manifest),
				 export_manifest_kind(verify.manifest),
				 export_manifest_source(verify.manifest));
		else
			snprintf(what, sizeof what, "imported (%llu entries, no manifest)",
				 (unsigned long long)res.entries);
		pd_mutex_lock(&imp->e->lock);
		emit_volume(imp->e, imp->name, what);
		pd_mutex_unlock(&imp->e->lock);
		eng_wake(imp->e, 0);
	}
	export_verify_release(&verify);
	import_free(imp);
	return r;
}

void engine_volume_import_abort(struct volume_import *imp)
{
	if (imp)
		import_free(imp);
}
