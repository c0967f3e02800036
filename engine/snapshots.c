/* snapshots.c - frozen layers, snapshots, fork, restore, garbage collection
 * and their crash recovery (see engine.h and layers.h).
 *
 * Crash safety. Every action writes an intent row (and, for a new layer,
 * the layer's row) before its first change on disk, and deletes it in the
 * transaction that commits the result. On disk each step is one rename or
 * mkdir, so at start eng_intents_recover() can tell how far it got:
 *   take (stop/snapshot/fork): L<ID> exists -> roll forward (commit);
 *     else -> roll back (forget the layer; a fork's "creating" box is then
 *     removed by reconcile). L<ID>.tmp (a half copy) is removed.
 *   merge (a stack deeper than layer_merge_depth): never committed ->
 *     roll back (remove L<ID> and L<ID>.tmp; the old stack stays).
 *   restore: the snapshot is there (it cannot be deleted while an intent
 *     names it) -> always roll forward: move the old upper aside if it is
 *     still in place, make a fresh one, commit.
 * Deleting a snapshot is one row delete; its mount and layers are cleaned
 * up after, and again at every start (eng_gc). A box paused for a copy is
 * resumed by reconcile.
 */
#include <assert.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "engine/internal.h"
#include "runtime/export.h"
#include "runtime/idmap.h"
#include "runtime/layer-merge.h"
#include "store/layers.h"
#include "common/log.h"

static void layer_path(const struct engine *e, int64_t id, const char *suffix, char *buf,
		       size_t bufsz)
{
	snprintf(buf, bufsz, "%s/L%lld%s", e->layers_dir, (long long)id, suffix ? suffix : "");
}

static void snapmnt_path(const struct engine *e, const char *id, char *buf, size_t bufsz)
{
	snprintf(buf, bufsz, "%s/%s", e->snapmnt_dir, id);
}

/* cp -a SRC DST: modes, owners, xattrs (trusted.overlay.*), whiteouts,
 * links, hard links. */
static int copy_tree(const char *src, const char *dst, pd_error *err)
{
	const char *argv[] = {"cp", "-a", "--no-target-directory", src, dst, NULL};
	pid_t pid;
	int status;

	lock_assert_no_slow("cp -a");
	pid = fork();
	if (pid < 0)
		return pd_error_set(err, -errno, "cannot fork: %s", strerror(errno));
	if (pid == 0) {
		int fd = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (fd >= 0) {
			dup2(fd, 0);
			dup2(fd, 1);
		}
		execv("/usr/bin/cp", (char *const *)argv);
		execv("/bin/cp", (char *const *)argv);
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return pd_error_set(err, -errno, "waitpid: %s", strerror(errno));
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return pd_error_set(err, -EIO, "copying the box's changes failed (cp status %d)",
				    WIFEXITED(status) ? WEXITSTATUS(status)
						      : 128 + WTERMSIG(status));
	return 0;
}

/* A client's label as stored: valid UTF-8 without control characters
 * (text_printable(): such bytes become "\xHH"), at most
 * ENGINE_SNAPSHOT_LABEL_MAX bytes once so written. */
static int label_clean(const char *label, char ret[static ENGINE_SNAPSHOT_LABEL_MAX + 1],
		       pd_error *err)
{
	char wide[4 * ENGINE_SNAPSHOT_LABEL_MAX + 2];
	size_t len = strlen(label), n = 0;

	if (len <= ENGINE_SNAPSHOT_LABEL_MAX)
		n = text_printable(label, len, wide, sizeof wide);
	if (len <= ENGINE_SNAPSHOT_LABEL_MAX && n <= ENGINE_SNAPSHOT_LABEL_MAX) {
		memcpy(ret, wide, n + 1);
		return 0;
	}
	return pd_error_set(err, -EINVAL,
			    "a label has at most %d bytes (a control character or a byte that "
			    "is not UTF-8 counts 4: it is kept as \\xHH)",
			    ENGINE_SNAPSHOT_LABEL_MAX);
}

/* --- committing a take ------------------------------------------------------ */

struct take_commit {
	const struct intent_row *in;
	struct box_row *box;	 /* updated in place */
	struct box_row *new_box; /* fork only */
	struct snapshot_row snap;
	int r;
	pd_error *err;
};

static int take_commit_tx(struct store *s, void *userdata)
{
	struct take_commit *c = userdata;
	struct layer_stack stack;
	char text[LAYER_STACK_TEXT_MAX];
	int r;

	r = layers_stack_parse(c->box->layers, &stack);
	if (r >= 0)
		r = layers_stack_push(&stack, c->in->layer);
	if (r >= 0)
		r = layers_stack_format(&stack, text, sizeof text);
	if (r < 0)
		return pd_error_set(c->err, r, "cannot add a layer to the stack of %s",
				    c->box->name);
	if (!c->in->copy) {
		/* The upper moved into the layer: the box now stands on it. */
		snprintf(c->box->layers, sizeof c->box->layers, "%s", text);
		r = store_box_update(s, c->box, c->err);
		if (r < 0)
			return r;
	}
	c->snap = (struct snapshot_row){.created = time(NULL), .box_id = c->box->id};
	snprintf(c->snap.box, sizeof c->snap.box, "%s", c->box->name);
	snprintf(c->snap.label, sizeof c->snap.label, "%s", c->in->label);
	snprintf(c->snap.image, sizeof c->snap.image, "%s", c->box->image);
	snprintf(c->snap.layers, sizeof c->snap.layers, "%s", text);
	r = store_snapshot_insert(s, &c->snap, c->err);
	if (r < 0)
		return r;
	if (c->new_box) {
		snprintf(c->new_box->layers, sizeof c->new_box->layers, "%s", text);
		snprintf(c->new_box->image, sizeof c->new_box->image, "%s", c->box->image);
		snprintf(c->new_box->state, sizeof c->new_box->state, "created");
		r = store_box_update(s, c->new_box, c->err);
		if (r < 0)
			return r;
	}
	return store_intent_delete(s, c->in->id, c->err);
}

/* Records a take whose layer is on disk. Engine lock held. */
static int take_commit(struct engine *e, const struct intent_row *in, struct box_row *box,
		       struct box_row *new_box, char *ret_id, size_t ret_idsz, pd_error *err)
{
	struct box_row b = *box, nb = new_box ? *new_box : (struct box_row){0};
	struct take_commit c = {.in = in, .box = &b, .new_box = new_box ? &nb : NULL, .err = err};
	int r = store_transaction(e->store, take_commit_tx, &c, err);

	if (r < 0)
		return r;
	*box = b;
	if (new_box)
		*new_box = nb;
	if (ret_id)
		snprintf(ret_id, ret_idsz, "%s", c.snap.id);
	return 0;
}

struct take_begin {
	struct intent_row *in;
	struct box_row *new_box;
	pd_error *err;
};

static int take_begin_tx(struct store *s, void *userdata)
{
	struct take_begin *c = userdata;
	int r = store_layer_insert(s, time(NULL), &c->in->layer, c->err);

	if (r >= 0 && c->new_box) {
		r = store_box_insert(s, c->new_box, c->err);
		c->in->new_box_id = c->new_box->id;
		/* A fork runs under its source's policy, with its volumes. */
		if (r >= 0)
			r = store_box_copy_settings(s, c->in->box_id, c->new_box->id, c->err);
	}
	if (r >= 0)
		r = store_intent_insert(s, c->in, c->err);
	return r;
}

struct rollback {
	const struct intent_row *in;
};

static int take_rollback_tx(struct store *s, void *userdata)
{
	const struct intent_row *in = ((struct rollback *)userdata)->in;

	(void)store_layer_delete(s, in->layer);
	if (in->new_box_id)
		(void)store_box_delete(s, in->new_box_id, NULL);
	return store_intent_delete(s, in->id, NULL);
}

/* --- merging ------------------------------------------------------------------ */

struct merge_commit {
	const struct intent_row *in;
	struct box_row *rows; /* copies, updated in place */
	size_t n_rows;
	size_t count;
	pd_error *err;
};

static int merge_commit_tx(struct store *s, void *userdata)
{
	struct merge_commit *c = userdata;
	int r = 0;

	for (size_t i = 0; i < c->n_rows && r >= 0; i++) {
		struct layer_stack stack;
		char text[LAYER_STACK_TEXT_MAX];

		r = layers_stack_parse(c->rows[i].layers, &stack);
		if (r >= 0)
			r = layers_stack_replace_oldest(&stack, c->count, c->in->layer);
		if (r >= 0)
			r = layers_stack_format(&stack, text, sizeof text);
		if (r < 0)
			return pd_error_set(c->err, r, "cannot merge the stack of %s",
					    c->rows[i].name);
		snprintf(c->rows[i].layers, sizeof c->rows[i].layers, "%s", text);
		r = store_box_update(s, &c->rows[i], c->err);
	}
	if (r >= 0)
		r = store_intent_delete(s, c->in->id, c->err);
	return r;
}

/* When the stack of the boxes rows[] (one stack, shared by all: a fork of
 * a stopped box) is deeper than layer_merge_depth, merges its oldest
 * layers into a new one (layer-merge.h) that replaces them in these boxes'
 * stacks only: snapshots keep theirs, and eng_gc() removes what nothing
 * uses any more. Crash safety: intent "merge" and the layer row first, the
 * copy in L<ID>.tmp renamed to L<ID>, then one transaction swaps the
 * stacks and deletes the intent; a crash before it leaves the old stacks in
 * force (eng_intents_recover() removes the new layer). The boxes are busy
 * or not yet shared and their roots unmounted; no lock held. Failure
 * leaves the stacks as they were. */
static int merge_stack(struct engine *e, struct box_row *const *rows, size_t n_rows, pd_error *err)
{
	struct box_row copies[2];
	struct intent_row in = {0};
	struct layer_stack s;
	char layer[4096], tmp[4096];
	char *paths[LAYER_STACK_DEPTH_MAX] = {0};
	size_t count;
	int r;

	assert(n_rows >= 1 && n_rows <= ELEMENTSOF(copies));
	if (layers_stack_parse(rows[0]->layers, &s) < 0)
		return pd_error_set(err, -EIO, "box %s has a corrupt layer stack", rows[0]->name);
	count = layers_stack_merge_count(&s, e->cfg->layer_merge_depth);
	if (count == 0)
		return 0;

	snprintf(in.kind, sizeof in.kind, "merge");
	in.box_id = rows[0]->id;
	pd_mutex_lock(&e->lock);
	r = store_transaction(e->store, take_begin_tx, &(struct take_begin){.in = &in, .err = err},
			      err);
	pd_mutex_unlock(&e->lock);
	if (r < 0)
		return r;
	layer_path(e, in.layer, NULL, layer, sizeof layer);
	layer_path(e, in.layer, ".tmp", tmp, sizeof tmp);
	(void)rm_rf(tmp);
	if (mkdir(tmp, 0755) < 0) {
		r = pd_error_set(err, -errno, "cannot make %s: %s", tmp, strerror(errno));
		goto rollback;
	}
	/* Oldest first: the bottom of the run is the end of the stack. */
	for (size_t i = 0; i < count; i++) {
		char dir[4096];
		/* An image layer through its read-only mount. */
		r = eng_layer_dir(e, s.ids[s.n - 1 - i], dir, sizeof dir, err);
		if (r < 0)
			goto rollback;
		paths[i] = strdup(dir);
		if (!paths[i]) {
			r = pd_error_set(err, -ENOMEM, "out of memory");
			goto rollback;
		}
	}
	r = layer_merge((const char *const *)paths, count, tmp, err);
	if (r < 0)
		goto rollback;
	pd_fault("merge-copied");
	if (rename(tmp, layer) < 0) {
		r = pd_error_set(err, -errno, "cannot store the merged layer: %s", strerror(errno));
		goto rollback;
	}
	pd_fault("merge-renamed");

	for (size_t i = 0; i < n_rows; i++)
		copies[i] = *rows[i];
	pd_mutex_lock(&e->lock);
	r = store_transaction(
	    e->store, merge_commit_tx,
	    &(struct merge_commit){
		.in = &in, .rows = copies, .n_rows = n_rows, .count = count, .err = err},
	    err);
	if (r >= 0)
		for (size_t i = 0; i < n_rows; i++)
			snprintf(rows[i]->layers, sizeof rows[i]->layers, "%s", copies[i].layers);
	pd_mutex_unlock(&e->lock);
	if (r < 0)
		goto rollback;
	pd_fault("merge-committed");
	log_debug("box %s: %zu layers merged into layer %lld (stack %s)", rows[0]->name, count,
		  (long long)in.layer, rows[0]->layers);
	for (size_t i = 0; i < count; i++)
		free(paths[i]);
	return 0;

rollback:
	for (size_t i = 0; i < count; i++)
		free(paths[i]);
	pd_mutex_lock(&e->lock);
	(void)store_transaction(e->store, take_rollback_tx, &(struct rollback){.in = &in}, NULL);
	pd_mutex_unlock(&e->lock);
	(void)rm_rf(tmp);
	(void)rm_rf(layer);
	return r;
}

/* Keeps the stacks that a take just made deeper shallow: the box's (when
 * its upper was frozen into the stack) and a fork's. Failure is logged:
 * the stacks stay deeper, which works up to LAYER_STACK_DEPTH_MAX. */
static void merge_after_take(struct engine *e, struct box *b, bool frozen, struct box *nb)
{
	struct box_row *rows[2];
	size_t n = 0;
	pd_error err = {0};
	bool merged_nb = false;

	if (frozen) {
		rows[n++] = &b->row;
		if (nb && strcmp(nb->row.layers, b->row.layers) == 0) {
			rows[n++] = &nb->row;
			merged_nb = true;
		}
		if (merge_stack(e, rows, n, &err) < 0)
			log_warn("box %s: cannot merge its layers: %s", b->row.name, err.msg);
	}
	if (nb && !merged_nb) {
		rows[0] = &nb->row;
		if (merge_stack(e, rows, 1, &err) < 0)
			log_warn("box %s: cannot merge its layers: %s", nb->row.name, err.msg);
	}
}

/* Freezes (stopped box: rename) or copies (running box, an empty upper, or
 * a root/ still in use on the host) b's upper into a new layer and records
 * a snapshot; for a fork, also box new_name on it. b is busy; called
 * without the lock. */
static int take(struct engine *e, struct box *b, const char *kind, const char *label, bool running,
		const char *new_name, struct box **ret_new, char *ret_id, size_t ret_idsz,
		pd_error *err)
{
	struct intent_row in = {0};
	struct box *nb = NULL;
	char upper[4096], layer[4096], tmp[4096], src[4096];
	struct layer_stack stack;
	bool unmounted = false, empty;
	int sealed = 0, r;

	eng_box_upper(e, b, upper, sizeof upper);
	/* No change since the last freeze: its copy is one empty directory,
	 * and the box keeps its stack (no deeper, no merge) and its mounts. */
	empty = !running && eng_dir_empty(upper);
	/* What a freeze moves: the box's image, or its upper directory. */
	if (eng_box_has_image(e, b))
		eng_box_path(e, b, "disk.img", src, sizeof src);
	else
		snprintf(src, sizeof src, "%s", upper);
	if (new_name) {
		nb = calloc(1, sizeof *nb);
		if (!nb)
			return pd_error_set(err, -ENOMEM, "out of memory");
		nb->row = b->row;
		nb->row.id = 0;
		/* A range of its own: its files (a new upper) start there;
		 * the layers it shares are mapped onto it. */
		nb->row.uid_base = e->cfg->userns ? -1 : 0;
		snprintf(nb->row.name, sizeof nb->row.name, "%s", new_name);
		snprintf(nb->row.state, sizeof nb->row.state, "creating");
		nb->row.created = time(NULL);
		nb->row.last_started = 0;
		nb->row.error[0] = '\0';
		/* Its source's deadline (none stays none); an address comes
		 * with its first start. Policy and volumes: take_begin_tx. */
		nb->row.net_addr = 0;
		nb->state = BOX_CREATED;
	}

	pd_mutex_lock(&e->lock);
	if (layers_stack_parse(b->row.layers, &stack) < 0 || stack.n >= LAYER_STACK_DEPTH_MAX) {
		pd_mutex_unlock(&e->lock);
		free(nb);
		return pd_error_set(err, -ENOSPC,
				    "box %s has %d layers, the most a stack may have (merging "
				    "them failed: see the daemon's log)",
				    b->row.name, LAYER_STACK_DEPTH_MAX);
	}
	if (new_name && eng_find_box(e, new_name)) {
		pd_mutex_unlock(&e->lock);
		free(nb);
		return pd_error_set(err, -EEXIST, "box %s already exists", new_name);
	}
	snprintf(in.kind, sizeof in.kind, "%s", kind);
	in.box_id = b->row.id;
	/* Docker's store lives on the box's disk image beside its upper
	 * (docker.c): the image stays the box's, so its changes are copied
	 * out, as for a running box. */
	in.copy = running || empty ||
		  (eng_box_has_image(e, b) && !eng_docker_store_empty(e, b));
	snprintf(in.label, sizeof in.label, "%s", label);
	if (new_name)
		snprintf(in.target, sizeof in.target, "%s", new_name);
	r = store_transaction(
	    e->store, take_begin_tx,
	    &(struct take_begin){.in = &in, .new_box = nb ? &nb->row : NULL, .err = err}, err);
	pd_mutex_unlock(&e->lock);
	if (r < 0) {
		free(nb);
		return r;
	}
	/* Before the first goto rollback, which needs them. */
	layer_path(e, in.layer, NULL, layer, sizeof layer);
	layer_path(e, in.layer, ".tmp", tmp, sizeof tmp);
	/* The new box's directories before anything is committed: a crash
	 * leaves either no box or a whole one. */
	if (nb && (r = eng_make_box_dirs(e, nb, err)) < 0)
		goto rollback;
	pd_fault("freeze-recorded");

	if (!in.copy && eng_umount_root_strict(e, b) >= 0) {
		unmounted = true;
		/* The image is moved sealed: every write is in it. */
		sealed = eng_disk_seal(e, b);
		if (sealed < 0)
			in.copy = true;
	} else
		in.copy = true;
	if (in.copy && !running && !empty) {
		/* Something on the host holds root/ (or the box's disk): copy
		 * instead of move. */
		pd_mutex_lock(&e->lock);
		r = store_intent_set_copy(e->store, in.id, true, err);
		pd_mutex_unlock(&e->lock);
		if (r < 0)
			goto rollback;
	}
	if (!in.copy) {
		uint32_t base = eng_box_base(e, b);

		if (rename(src, layer) < 0) {
			r = pd_error_set(err, -errno, "cannot freeze the box's changes: %s",
					 strerror(errno));
			if (sealed > 0)
				eng_disk_unseal(e, b);
			goto rollback;
		}
		pd_fault("freeze-renamed");
		if (sealed > 0)
			eng_disk_to_layer(e, b, in.layer);
		/* A fresh image (or, disk limit off, an upper directory): a
		 * box with a directory upper gets its disk limit here. */
		r = eng_make_writable(e, b, base, err);
		if (r < 0) {
			/* Undo the move: the intent is still open. Its sealed
			 * mount goes; the image is mounted again writable. */
			if (sealed > 0)
				eng_layer_umount(e, in.layer);
			if (rename(layer, src) < 0) {
				/* The changes are in the layer and the intent
				 * says so: the next start commits the
				 * snapshot. Nothing here may remove either. */
				log_error("box %s: its changes are in layer %lld until the "
					  "next start: %s",
					  b->row.name, (long long)in.layer, strerror(errno));
				free(nb);
				return r;
			}
			goto rollback;
		}
		pd_fault("freeze-upper");
	} else {
		pd_error perr = {0};
		(void)rm_rf(tmp);
		if (running) {
			r = runtime_pause(e->rt, b->row.name, err);
			if (r < 0)
				goto rollback;
			pd_fault("copy-paused");
		}
		r = copy_tree(upper, tmp, err);
		if (r >= 0)
			pd_fault("copy-copied");
		/* Always thawed, whatever the copy did. */
		if (running && runtime_resume(e->rt, b->row.name, &perr) < 0) {
			log_error("box %s: stays paused after a snapshot: %s", b->row.name,
				  perr.msg);
			if (r >= 0)
				r = pd_error_set(err, perr.code, "%s", perr.msg);
		}
		if (r < 0) {
			(void)rm_rf(tmp);
			goto rollback;
		}
		if (rename(tmp, layer) < 0) {
			r = pd_error_set(err, -errno, "cannot store the layer: %s",
					 strerror(errno));
			(void)rm_rf(tmp);
			goto rollback;
		}
		pd_fault("copy-renamed");
	}

	pd_mutex_lock(&e->lock);
	r = take_commit(e, &in, &b->row, nb ? &nb->row : NULL, ret_id, ret_idsz, err);
	pd_mutex_unlock(&e->lock);
	if (r < 0) {
		/* On disk and in the intent: the next start finishes it. */
		log_error("box %s: cannot record a snapshot (finished at next start): %s",
			  b->row.name, err->msg);
		free(nb);
		return r;
	}
	if (nb)
		pd_fault("fork-committed");
	/* Both roots are unmounted (or, for the new box, not yet mounted):
	 * the stacks may change under them. */
	merge_after_take(e, b, !in.copy, nb);
	if (unmounted) {
		pd_error merr = {0};
		if (eng_mount_root(e, b, &merr) < 0)
			log_warn("box %s: %s", b->row.name, merr.msg);
	}
	if (nb) {
		pd_error merr = {0};
		if (eng_mount_root(e, nb, &merr) < 0)
			log_warn("box %s: %s", nb->row.name, merr.msg);
		*ret_new = nb;
	}
	eng_gc(e, false);
	return 0;

rollback:
	/* No layer is on disk here: a copy is removed where it failed and a
	 * moved upper was moved back. */
	pd_mutex_lock(&e->lock);
	(void)store_transaction(e->store, take_rollback_tx, &(struct rollback){.in = &in}, NULL);
	pd_mutex_unlock(&e->lock);
	if (!running)
		(void)eng_mount_root(e, b, NULL);
	if (nb && nb->row.id) {
		eng_umount_disk_lazy(e, nb);
		char dir[4096];
		eng_box_path(e, nb, NULL, dir, sizeof dir);
		(void)rm_rf(dir);
		eng_box_root(e, nb, dir, sizeof dir); /* its mount point, never mounted */
		(void)rmdir(dir);
	}
	free(nb);
	return r;
}

/* Every stop records a snapshot, changes or not (an unchanged box's costs
 * an empty directory: see take()), so a stopped box's newest snapshot is
 * always its filesystem as the stop left it (snapshots/last). */
void eng_freeze_after_stop(struct engine *e, struct box *b)
{
	char id[NAME_MAX_LEN + 1] = "";
	pd_error err = {0};

	if (take(e, b, "stop", "stop", /* running= */ false, /* new_name= */ NULL, NULL, id,
		 sizeof id, &err) < 0) {
		log_warn("box %s: stopped, but its changes stay unsnapshotted: %s", b->row.name,
			 err.msg);
		pd_mutex_lock(&e->lock);
		eng_emit(e, b, "snapshot failed: %s", err.msg);
		pd_mutex_unlock(&e->lock);
		return;
	}
	pd_mutex_lock(&e->lock);
	eng_emit(e, b, "snapshot %s", id);
	pd_mutex_unlock(&e->lock);
}

/* Claims box id for a layer action: busy, not mid-transition. */
static int claim_for(struct engine *e, int64_t id, struct box **ret, bool *ret_running,
		     pd_error *err)
{
	struct box *b;
	int r = eng_claim(e, id, &b, err);

	if (r < 0)
		return r;
	if (box_state_is_transition(b->state))
		return pd_error_set(err, -EBUSY, "box %s is %s", b->row.name,
				    box_state_to_string(b->state));
	b->busy = true;
	*ret = b;
	*ret_running = b->state == BOX_RUNNING;
	return 0;
}

int engine_box_snapshot(struct engine *e, int64_t box_id, const char *label_in, char *ret_id,
			size_t ret_idsz, pd_error *err)
{
	char id[NAME_MAX_LEN + 1] = "", label[ENGINE_SNAPSHOT_LABEL_MAX + 1];
	struct box *b;
	bool running;
	int r;

	r = label_clean(label_in, label, err);
	if (r < 0)
		return r;
	pd_mutex_lock(&e->lock);
	r = claim_for(e, box_id, &b, &running, err);
	pd_mutex_unlock(&e->lock);
	if (r < 0)
		return r;
	r = take(e, b, "snapshot", label, running, NULL, NULL, id, sizeof id, err);
	pd_mutex_lock(&e->lock);
	b->busy = false;
	if (r >= 0)
		eng_emit(e, b, "snapshot %s", id);
	pd_mutex_unlock(&e->lock);
	if (r >= 0 && ret_id)
		snprintf(ret_id, ret_idsz, "%s", id);
	return r < 0 ? r : 0;
}

int engine_box_fork(struct engine *e, int64_t box_id, const char *new_name, char *ret_id,
		    size_t ret_idsz, pd_error *err)
{
	char id[NAME_MAX_LEN + 1] = "", label[NAME_MAX_LEN + 8];
	struct box *b, *nb = NULL;
	bool running;
	int r;

	if (!name_valid(new_name))
		return pd_error_set(err, -EINVAL,
				    "invalid box name \"%s\": use [a-z0-9][a-z0-9._-]{0,62}",
				    new_name);
	pd_mutex_lock(&e->lock);
	if (eng_find_box(e, new_name)) {
		pd_mutex_unlock(&e->lock);
		return pd_error_set(err, -EEXIST, "box %s already exists", new_name);
	}
	r = claim_for(e, box_id, &b, &running, err);
	pd_mutex_unlock(&e->lock);
	if (r < 0)
		return r;
	snprintf(label, sizeof label, "fork %s", new_name);
	r = take(e, b, "fork", label, running, new_name, &nb, id, sizeof id, err);
	pd_mutex_lock(&e->lock);
	b->busy = false;
	if (r >= 0) {
		eng_emit(e, b, "snapshot %s", id);
		eng_emit(e, b, "forked %s", new_name);
		eng_net_load_policy(e, nb); /* its source's, recorded in take() */
		eng_ports_load(e, nb);	    /* so are its published ports */
		if (eng_add_box(e, nb) < 0) {
			policy_release(&nb->policy);
			free(nb); /* recorded: the next start loads it */
			nb = NULL;
		} else {
			eng_emit(e, nb, "created (fork of %s, snapshot %s)", b->row.name, id);
			/* Docker's store is never in a snapshot (docker.c). */
			if (eng_box_docker(e, nb))
				eng_emit(e, nb,
					 "docker: starts with an empty Docker store (the images, "
					 "containers and volumes of %s's Docker are not forked)",
					 b->row.name);
			if (nb->row.expires)
				pthread_cond_signal(&e->timer_cond);
		}
	}
	pd_mutex_unlock(&e->lock);
	if (r >= 0 && e->box_hook)
		e->box_hook(e->box_hook_data, ENGINE_BOX_CREATED, new_name);
	if (r >= 0 && ret_id)
		snprintf(ret_id, ret_idsz, "%s", id);
	return r < 0 ? r : 0;
}

/* --- restore ------------------------------------------------------------------ */

struct restore_commit {
	const struct intent_row *in;
	struct box_row *box;
	const struct snapshot_row *snap;
	pd_error *err;
};

static int restore_commit_tx(struct store *s, void *userdata)
{
	struct restore_commit *c = userdata;
	int r;

	snprintf(c->box->layers, sizeof c->box->layers, "%s", c->snap->layers);
	snprintf(c->box->image, sizeof c->box->image, "%s", c->snap->image);
	r = store_box_update(s, c->box, c->err);
	if (r >= 0)
		r = store_intent_delete(s, c->in->id, c->err);
	return r;
}

/* Moves the writable layer aside (the image to disk.img.old, an upper
 * directory to upper.old) if still in place, makes a fresh one and
 * records the snapshot's stack. Its image is unmounted. Engine lock held
 * (or start-up). The caller removes the old one after, without the lock
 * (at start, reconcile does). */
static int restore_finish(struct engine *e, const struct intent_row *in, struct box *b,
			  pd_error *err)
{
	char cur[4096], old[4096], old_img[4096];
	struct snapshot_row snap;
	struct box_row row = b->row;
	int r;

	r = store_snapshot_get(e->store, in->target, &snap);
	if (r < 0)
		return pd_error_set(err, r, "snapshot %s is gone", in->target);
	eng_box_path(e, b, "upper.old", old, sizeof old);
	eng_box_path(e, b, "disk.img.old", old_img, sizeof old_img);
	/* Either old one there: the move was done before a crash. */
	if (access(old, F_OK) < 0 && access(old_img, F_OK) < 0) {
		bool img = eng_box_has_image(e, b);
		eng_box_path(e, b, img ? "disk.img" : "upper", cur, sizeof cur);
		if (rename(cur, img ? old_img : old) < 0 && errno != ENOENT)
			return pd_error_set(err, -errno, "cannot set the old files aside: %s",
					    strerror(errno));
	}
	pd_fault("restore-moved");
	r = eng_make_writable(e, b, (uint32_t)b->row.uid_base, err);
	if (r < 0)
		return r;
	r = store_transaction(
	    e->store, restore_commit_tx,
	    &(struct restore_commit){.in = in, .box = &row, .snap = &snap, .err = err}, err);
	if (r < 0)
		return r;
	b->row = row;
	return 0;
}

/* The snapshots of one box whose label is label (as stored: cleaned). */
struct label_match {
	const char *label;
	size_t n;
	char first[NAME_MAX_LEN + 1];
	char list[200]; /* their ids, for the error */
};

static int match_label(const struct snapshot_row *row, void *userdata)
{
	struct label_match *m = userdata;
	char shown[ENGINE_SNAPSHOT_LABEL_MAX + 1];
	size_t len = strlen(m->list);

	/* As view_of() shows it: rows from before labels were cleaned. */
	text_printable(row->label, strlen(row->label), shown, sizeof shown);
	if (strcmp(shown, m->label) != 0)
		return 0;
	if (m->n++ == 0)
		snprintf(m->first, sizeof m->first, "%s", row->id);
	if (len + strlen(row->id) + 8 < sizeof m->list)
		snprintf(m->list + len, sizeof m->list - len, "%s%s", len ? ", " : "", row->id);
	else if (!strstr(m->list, ", …"))
		snprintf(m->list + len, sizeof m->list - len, ", …");
	return 0;
}

/* The snapshot ref names for box b: an id (of any box's snapshot), else a
 * label exactly one of b's snapshots has. Engine lock held. */
static int resolve_ref(struct engine *e, const struct box *b, const char *ref,
		       struct snapshot_row *ret, pd_error *err)
{
	char label[ENGINE_SNAPSHOT_LABEL_MAX + 1];
	struct label_match m = {.label = label};
	int r;

	if (name_valid(ref) && store_snapshot_get(e->store, ref, ret) >= 0)
		return 0;
	if (label_clean(ref, label, NULL) < 0)
		return pd_error_set(err, -ENOENT,
				    "no snapshot has that id or label (a label has at most %d "
				    "bytes)",
				    ENGINE_SNAPSHOT_LABEL_MAX);
	r = store_snapshot_foreach(e->store, b->row.id, match_label, &m);
	if (r < 0)
		return pd_error_set(err, -EIO, "cannot read the snapshots of %s: %s", b->row.name,
				    strerror(-r));
	if (m.n == 0)
		return pd_error_set(err, -ENOENT,
				    "no snapshot %s: no snapshot has that id, and none of %s's "
				    "has that label (see boxes/%s/snapshots)",
				    label, b->row.name, b->row.name);
	if (m.n > 1)
		return pd_error_set(err, -EINVAL,
				    "%zu snapshots of %s have the label \"%s\" (%s): write the id "
				    "of the one to restore",
				    m.n, b->row.name, label, m.list);
	if (store_snapshot_get(e->store, m.first, ret) < 0)
		return pd_error_set(err, -ENOENT, "snapshot %s is gone", m.first);
	return 0;
}

/* The box's running jobs, names separated by spaces ("…" when more did
 * not fit); "" when none. */
static void running_jobs(struct engine *e, int64_t box, char *buf, size_t bufsz)
{
	char **names = NULL;
	size_t n = 0, len = 0;

	buf[0] = '\0';
	if (engine_job_names(e, box, &names, &n) < 0)
		return;
	for (size_t i = 0; i < n; i++) {
		struct job_view jv;
		if (engine_job_get(e, box, names[i], &jv) < 0 || jv.state != JOB_RUNNING)
			continue;
		if (len + strlen(names[i]) + 1 + sizeof " …" > bufsz) {
			snprintf(buf + len, bufsz - len, "%s…", len ? " " : "");
			break;
		}
		len += (size_t)snprintf(buf + len, bufsz - len, "%s%s", len ? " " : "", names[i]);
	}
	image_list_free(names, n);
}

/* The seq of the box's newest snapshot, 0 for none. */
static int64_t last_seq(struct engine *e, int64_t box, char *ret_id, size_t ret_idsz)
{
	struct snapshot_view v;

	if (engine_snapshot_last(e, box, &v) < 0)
		return 0;
	if (ret_id)
		snprintf(ret_id, ret_idsz, "%s", v.id);
	return v.seq;
}

/* Emits one event of box id, if it still exists. */
static void emit_box(struct engine *e, int64_t id, const char *text)
{
	struct box *box;

	pd_mutex_lock(&e->lock);
	box = eng_live_box(e, id);
	if (box)
		eng_emit(e, box, "%s", text);
	pd_mutex_unlock(&e->lock);
}

int engine_box_restore(struct engine *e, int64_t id, const char *ref, struct engine_restore *ret,
		       pd_error *err)
{
	struct engine_restore res = {0};
	struct snapshot_row snap;
	struct intent_row in = {0};
	struct image_info img;
	char old[4096], old_img[4096], snapshot_id[NAME_MAX_LEN + 1];
	struct box *b;
	bool running, had_store = false;
	int64_t before = 0;
	int r = 0;

	/* Which snapshot, before anything changes: a bad ref changes nothing. */
	pd_mutex_lock(&e->lock);
	b = eng_live_box(e, id);
	running = b && b->state == BOX_RUNNING;
	if (b)
		r = resolve_ref(e, b, ref, &snap, err);
	pd_mutex_unlock(&e->lock);
	if (!b)
		return eng_box_gone(err);
	if (r < 0)
		return r;
	snprintf(snapshot_id, sizeof snapshot_id, "%s", snap.id);
	snprintf(res.id, sizeof res.id, "%s", snap.id);
	if (image_get(e->images_dir, snap.image, &img) < 0)
		return pd_error_set(err, -ENOENT, "image %s of snapshot %s is not installed",
				    snap.image, snapshot_id);
	/* A running box is stopped first (its stop takes a snapshot), which
	 * ends its jobs: said before, in its events, and to the caller. */
	if (running) {
		char text[NAME_MAX_LEN + ENGINE_RESTORE_JOBS_MAX + 128];
		res.restarted = true;
		running_jobs(e, id, res.jobs, sizeof res.jobs);
		before = last_seq(e, id, NULL, 0);
		if (res.jobs[0])
			snprintf(text, sizeof text,
				 "restoring %s: stopping the box first, which ends its running "
				 "jobs: %s",
				 snapshot_id, res.jobs);
		else
			snprintf(text, sizeof text,
				 "restoring %s: stopping the box first (no job is running)",
				 snapshot_id);
		emit_box(e, id, text);
		r = engine_box_set_state(e, id, "stopped", err);
		if (r < 0)
			return r;
		if (last_seq(e, id, res.before, sizeof res.before) <= before)
			res.before[0] = '\0'; /* its stop took none (see the events) */
	}

	pd_mutex_lock(&e->lock);
	r = claim_for(e, id, &b, &(bool){false}, err);
	if (r >= 0 && b->state == BOX_RUNNING) {
		b->busy = false;
		r = pd_error_set(err, -EBUSY, "box %s was started again meanwhile", b->row.name);
	}
	if (r >= 0 && store_snapshot_get(e->store, snapshot_id, &snap) < 0) {
		b->busy = false;
		r = pd_error_set(err, -ENOENT, "snapshot %s was deleted meanwhile", snapshot_id);
	}
	pd_mutex_unlock(&e->lock);
	if (r < 0)
		return r;
	/* b is busy: its directories are ours. A leftover of an earlier
	 * restore goes before this one moves the upper there. */
	eng_box_path(e, b, "upper.old", old, sizeof old);
	(void)rm_rf(old);
	eng_box_path(e, b, "disk.img.old", old_img, sizeof old_img);
	(void)unlink(old_img);
	pd_mutex_lock(&e->lock);
	snprintf(in.kind, sizeof in.kind, "restore");
	in.box_id = b->row.id;
	snprintf(in.target, sizeof in.target, "%s", snapshot_id);
	r = store_intent_insert(e->store, &in, err);
	pd_mutex_unlock(&e->lock);
	if (r < 0)
		goto out;
	pd_fault("restore-recorded");
	/* The fresh image below has an empty Docker store (docker.c). */
	had_store = eng_box_has_image(e, b) && !eng_docker_store_empty(e, b);

	if (eng_umount_root_strict(e, b) < 0 || eng_umount_disk(e, b) < 0) {
		r = pd_error_set(err, -EBUSY,
				 "its root/ is in use on the host (a working directory or an open "
				 "file); close it and try again");
		pd_mutex_lock(&e->lock);
		(void)store_intent_delete(e->store, in.id, NULL);
		pd_mutex_unlock(&e->lock);
		(void)eng_mount_root(e, b, NULL);
		goto out;
	}
	pd_mutex_lock(&e->lock);
	r = restore_finish(e, &in, b, err);
	pd_mutex_unlock(&e->lock);
	if (r >= 0) {
		pd_fault("restore-committed");
		(void)rm_rf(old);
		(void)unlink(old_img);
		r = eng_mount_root(e, b, err);
	}
out:
	pd_mutex_lock(&e->lock);
	b->busy = false;
	if (r >= 0 && res.before[0])
		eng_emit(e, b, "restored %s (its files from before are in snapshot %s)",
			 snapshot_id, res.before);
	else if (r >= 0)
		eng_emit(e, b, "restored %s", snapshot_id);
	if (r >= 0 && had_store)
		eng_emit(e, b, "docker: starts with an empty Docker store (a restore resets it: "
			       "Docker's store is in no snapshot)");
	pd_mutex_unlock(&e->lock);
	if (r < 0)
		return r;
	eng_gc(e, false);
	if (running)
		r = engine_box_set_state(e, id, "running", err);
	if (r >= 0 && ret)
		*ret = res;
	return r < 0 ? r : 0;
}

/* --- snapshots ----------------------------------------------------------------- */

static void view_of(const struct snapshot_row *row, struct snapshot_view *v)
{
	*v =
	    (struct snapshot_view){.seq = row->seq, .box_id = row->box_id, .created = row->created};
	snprintf(v->id, sizeof v->id, "%s", row->id);
	snprintf(v->box, sizeof v->box, "%s", row->box);
	snprintf(v->image, sizeof v->image, "%s", row->image);
	/* Sanitized when recorded; again here for rows older than that. */
	text_printable(row->label, strlen(row->label), v->label, sizeof v->label);
	text_printable(row->error, strlen(row->error), v->error, sizeof v->error);
}

struct names {
	char **v;
	size_t n;
};

static int add_name(const struct snapshot_row *row, void *userdata)
{
	struct names *ns = userdata;
	char **nv = realloc(ns->v, (ns->n + 1) * sizeof *nv);

	if (!nv)
		return -ENOMEM;
	ns->v = nv;
	if (!(ns->v[ns->n] = strdup(row->id)))
		return -ENOMEM;
	ns->n++;
	return 0;
}

int engine_snapshot_names(struct engine *e, int64_t box_id, char ***ret, size_t *ret_n)
{
	struct names ns = {0};
	int r = 0;

	pd_mutex_lock(&e->lock);
	if (box_id && !eng_live_box(e, box_id))
		r = -ENOENT;
	if (r >= 0)
		r = store_snapshot_foreach(e->store, box_id, add_name, &ns);
	pd_mutex_unlock(&e->lock);
	if (r < 0) {
		image_list_free(ns.v, ns.n);
		return r;
	}
	*ret = ns.v;
	*ret_n = ns.n;
	return 0;
}

static int keep_row(const struct snapshot_row *row, void *userdata)
{
	*(struct snapshot_row *)userdata = *row;
	return 0;
}

int engine_snapshot_last(struct engine *e, int64_t box_id, struct snapshot_view *ret)
{
	struct snapshot_row row = {0};
	struct box *b;
	int r;

	pd_mutex_lock(&e->lock);
	b = eng_live_box(e, box_id);
	/* In creation order: the last row seen is the newest. */
	r = b ? store_snapshot_foreach(e->store, b->row.id, keep_row, &row) : -ENOENT;
	pd_mutex_unlock(&e->lock);
	if (r >= 0 && row.seq == 0)
		r = -ENOENT;
	if (r < 0)
		return r;
	view_of(&row, ret);
	return 0;
}

int engine_snapshot_get(struct engine *e, const char *id, struct snapshot_view *ret)
{
	struct snapshot_row row;
	int r;

	if (!name_valid(id))
		return -ENOENT;
	pd_mutex_lock(&e->lock);
	r = store_snapshot_get(e->store, id, &row);
	pd_mutex_unlock(&e->lock);
	if (r >= 0)
		view_of(&row, ret);
	return r;
}

int engine_snapshot_get_by_seq(struct engine *e, int64_t seq, struct snapshot_view *ret)
{
	struct snapshot_row row;
	int r;

	pd_mutex_lock(&e->lock);
	r = store_snapshot_get_seq(e->store, seq, &row);
	pd_mutex_unlock(&e->lock);
	if (r >= 0)
		view_of(&row, ret);
	return r;
}

int engine_snapshot_size(struct engine *e, const char *id, uint64_t *ret)
{
	struct snapshot_row row;
	struct layer_stack s;
	char path[4096];
	int64_t size = -1;
	int r;

	pd_mutex_lock(&e->lock);
	r = store_snapshot_get(e->store, id, &row);
	if (r >= 0 && (layers_stack_parse(row.layers, &s) < 0 || s.n == 0))
		r = -EIO;
	if (r >= 0)
		r = store_layer_get_size(e->store, s.ids[0], &size);
	pd_mutex_unlock(&e->lock);
	if (r < 0)
		return r;
	if (size < 0) {
		/* Measured once, outside the lock: a frozen layer never changes. */
		uint64_t bytes = 0;
		if (eng_layer_dir(e, s.ids[0], path, sizeof path, NULL) >= 0)
			(void)du_tree(path, &bytes);
		size = (int64_t)bytes;
		pd_mutex_lock(&e->lock);
		(void)store_layer_set_size(e->store, s.ids[0], size);
		pd_mutex_unlock(&e->lock);
	}
	*ret = (uint64_t)size;
	return 0;
}

int engine_snapshot_root(struct engine *e, const char *id, char *buf, size_t bufsz)
{
	struct eng_lowers lower = {0};
	struct snapshot_row row;
	char path[4096];
	int r;

	pd_mutex_lock(&e->lock);
	r = store_snapshot_get(e->store, id, &row);
	if (r < 0)
		goto out;
	snapmnt_path(e, id, path, sizeof path);
	if (!eng_is_mountpoint(path)) {
		/* Its files with the ids they have in a box (range 0, as an
		 * image's): what export writes and what the host reads. */
		r = eng_lowerdir(e, row.layers, row.image, 0, &lower, NULL);
		if (r < 0)
			goto out;
		if (mkdir(path, 0755) < 0 && errno != EEXIST) {
			r = -errno;
			goto out;
		}
		/* nosymfollow as a box's view (eng_bind_view): the host
		 * never resolves the links a box left in it. */
		if (mount("overlay", path, "overlay",
			  MS_RDONLY | MS_NODEV | MS_NOSUID | MS_NOSYMFOLLOW, lower.opt) < 0) {
			r = -errno;
			log_warn("snapshot %s: cannot mount its root: %s", id, strerror(errno));
			goto out;
		}
	} else {
		/* Mounted by an older daemon, without it. */
		struct mount_attr attr = {.attr_set = MOUNT_ATTR_NOSYMFOLLOW};
		if (mount_setattr(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW, &attr, sizeof attr) < 0) {
			r = -errno;
			log_warn("snapshot %s: cannot set nosymfollow on its root: %s", id,
				 strerror(errno));
			goto out;
		}
	}
	if ((size_t)snprintf(buf, bufsz, "%s", path) >= bufsz)
		r = -ENAMETOOLONG;
out:
	eng_lowers_release(&lower);
	pd_mutex_unlock(&e->lock);
	return r;
}

/* --- export ------------------------------------------------------------------ */

struct snap_hold {
	struct engine *e;
	char id[NAME_MAX_LEN + 1];
};

static bool snapshot_exporting(struct engine *e, const char *id)
{
	for (size_t i = 0; i < e->n_snap_exports; i++)
		if (strcmp(e->snap_exports[i], id) == 0)
			return true;
	return false;
}

static void snap_export_wake(void *userdata, uint64_t key)
{
	struct snap_hold *h = userdata;

	eng_wake(h->e, key);
}

/* Drops one of the snapshot's export marks. */
static void snap_export_release(void *userdata)
{
	struct snap_hold *h = userdata;
	struct engine *e = h->e;

	pd_mutex_lock(&e->lock);
	for (size_t i = 0; i < e->n_snap_exports; i++)
		if (strcmp(e->snap_exports[i], h->id) == 0) {
			free(e->snap_exports[i]);
			e->snap_exports[i] = e->snap_exports[--e->n_snap_exports];
			break;
		}
	pd_mutex_unlock(&e->lock);
	free(h);
	eng_export_released(e);
}

int engine_snapshot_export(struct engine *e, const char *id, struct export_stream **ret,
			   pd_error *err)
{
	struct export_source src = {.kind = "snapshot", .source = id, .dirfd = -1, .tmpfd = -1};
	struct snapshot_row row;
	struct snap_hold *h;
	char path[4096];
	char **nv;
	int r;

	if (!name_valid(id))
		return pd_error_set(err, -ENOENT, "no snapshot %s", id);
	r = engine_snapshot_root(e, id, path, sizeof path);
	if (r == -ENOENT)
		return pd_error_set(err, r, "no snapshot %s", id);
	if (r < 0)
		return pd_error_set(err, r, "cannot mount the root of snapshot %s: %s", id,
				    strerror(-r));
	h = calloc(1, sizeof *h);
	if (!h)
		return pd_error_set(err, -ENOMEM, "out of memory");
	h->e = e;
	snprintf(h->id, sizeof h->id, "%s", id);

	/* Marked before the root is opened: from here on rmdir waits. */
	pd_mutex_lock(&e->lock);
	r = store_snapshot_get(e->store, id, &row);
	if (r < 0)
		r = pd_error_set(err, -ENOENT, "no snapshot %s", id);
	nv = r < 0 ? NULL : reallocarray(e->snap_exports, e->n_snap_exports + 1, sizeof *nv);
	if (r >= 0 && nv) {
		e->snap_exports = nv;
		nv[e->n_snap_exports] = strdup(id);
		if (nv[e->n_snap_exports]) {
			e->n_snap_exports++;
			e->exports_busy++; /* until snap_export_release() */
		} else
			nv = NULL;
	}
	if (r >= 0 && !nv)
		r = pd_error_set(err, -ENOMEM, "out of memory");
	pd_mutex_unlock(&e->lock);
	if (r < 0) {
		free(h);
		return r;
	}

	src.dirfd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (src.dirfd < 0)
		r = pd_error_set(err, -errno, "cannot open the root of snapshot %s: %s", id,
				 strerror(errno));
	if (r >= 0) {
		src.tmpfd = open(e->layers_dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
		if (src.tmpfd < 0)
			r = pd_error_set(err, -errno, "cannot make a temp file in %s: %s",
					 e->layers_dir, strerror(errno));
	}
	if (r < 0) {
		if (src.dirfd >= 0)
			close(src.dirfd);
		snap_export_release(h);
		return r;
	}
	src.wake = snap_export_wake;
	src.release = snap_export_release;
	src.userdata = h;
	return export_stream_start(&src, ret, err);
}

int engine_snapshot_set_label(struct engine *e, const char *id, const char *label_in, pd_error *err)
{
	char label[ENGINE_SNAPSHOT_LABEL_MAX + 1];
	struct snapshot_row row;
	int r;

	r = label_clean(label_in, label, err);
	if (r < 0)
		return r;
	pd_mutex_lock(&e->lock);
	r = store_snapshot_get(e->store, id, &row);
	if (r < 0)
		r = pd_error_set(err, -ENOENT, "no snapshot %s", id);
	else {
		snprintf(row.label, sizeof row.label, "%s", label);
		r = store_snapshot_update(e->store, &row, err);
	}
	pd_mutex_unlock(&e->lock);
	return r;
}

void engine_snapshot_record_error(struct engine *e, const char *id, const char *file,
				  const pd_error *err)
{
	struct snapshot_row row;

	pd_mutex_lock(&e->lock);
	if (store_snapshot_get(e->store, id, &row) >= 0 &&
	    eng_format_error(file, err, row.error, sizeof row.error))
		(void)store_snapshot_update(e->store, &row, NULL);
	pd_mutex_unlock(&e->lock);
}

struct restore_ref {
	const char *id;
	bool found;
};

static int intent_names(const struct intent_row *in, void *userdata)
{
	struct restore_ref *ref = userdata;

	if (strcmp(in->kind, "restore") == 0 && strcmp(in->target, ref->id) == 0)
		ref->found = true;
	return 0;
}

static void umount_snapshot(struct engine *e, const char *id)
{
	char path[4096];

	snapmnt_path(e, id, path, sizeof path);
	while (eng_is_mountpoint(path))
		if (umount2(path, 0) < 0 && umount2(path, MNT_DETACH) < 0)
			break;
	(void)rmdir(path);
}

int engine_snapshot_delete(struct engine *e, const char *id, pd_error *err)
{
	struct snapshot_row row;
	struct layer_stack s;
	struct restore_ref ref = {.id = id};
	int r;

	pd_mutex_lock(&e->lock);
	r = name_valid(id) ? store_snapshot_get(e->store, id, &row) : -ENOENT;
	if (r < 0) {
		r = pd_error_set(err, -ENOENT, "no snapshot %s", id);
		goto out;
	}
	if (layers_stack_parse(row.layers, &s) < 0 || s.n == 0) {
		r = pd_error_set(err, -EIO, "snapshot %s has a corrupt layer stack", id);
		goto out;
	}
	for (size_t i = 0; i < e->n_boxes; i++) {
		struct layer_stack bs;
		if (layers_stack_parse(e->boxes[i]->row.layers, &bs) >= 0 &&
		    layers_stack_contains(&bs, s.ids[0])) {
			r = pd_error_set(err, -EBUSY,
					 "box %s is built on it (its filesystem stands on the "
					 "snapshot's layers): delete that box or restore it to "
					 "another snapshot first",
					 e->boxes[i]->row.name);
			goto out;
		}
	}
	if (snapshot_exporting(e, id)) {
		r = pd_error_set(err, -EBUSY,
				 "snapshot %s is being exported; try again when it is done", id);
		goto out;
	}
	(void)store_intent_foreach(e->store, intent_names, &ref);
	if (ref.found) {
		r = pd_error_set(err, -EBUSY, "a box is being restored to it");
		goto out;
	}
	/* The commit point: the rest is cleanup, redone at every start. */
	r = store_snapshot_delete(e->store, row.seq, err);
	if (r < 0)
		goto out;
	pd_fault("snapdel-deleted");
	umount_snapshot(e, id);
out:
	pd_mutex_unlock(&e->lock);
	if (r >= 0) {
		log_debug("snapshot %s deleted", id);
		eng_gc(e, false);
	}
	return r;
}

/* --- garbage ------------------------------------------------------------------ */

struct ids {
	int64_t *v;
	size_t n, cap;
};

static int ids_add(struct ids *ids, int64_t id)
{
	if (ids->n == ids->cap) {
		size_t cap = ids->cap ? ids->cap * 2 : 64;
		int64_t *nv = realloc(ids->v, cap * sizeof *nv);
		if (!nv)
			return -ENOMEM;
		ids->v = nv;
		ids->cap = cap;
	}
	ids->v[ids->n++] = id;
	return 0;
}

static int ids_add_stack(struct ids *ids, const char *text)
{
	struct layer_stack s;
	int r = 0;

	if (layers_stack_parse(text, &s) < 0)
		return -EIO; /* unreadable: keep everything */
	for (size_t i = 0; i < s.n && r >= 0; i++)
		r = ids_add(ids, s.ids[i]);
	return r;
}

static int ref_box(const struct box_row *row, void *userdata)
{
	return ids_add_stack(userdata, row->layers);
}

static int ref_snapshot(const struct snapshot_row *row, void *userdata)
{
	return ids_add_stack(userdata, row->layers);
}

static int ref_intent(const struct intent_row *in, void *userdata)
{
	return in->layer ? ids_add(userdata, in->layer) : 0;
}

/* At start (nothing else runs): half copies and half removals from before
 * a crash, L<ID>.tmp and L<ID>.del. */
static void remove_leftovers(struct engine *e)
{
	DIR *d = opendir(e->layers_dir);
	struct dirent *de;
	char path[4096];

	while (d && (de = readdir(d))) {
		size_t len = strlen(de->d_name);
		if (de->d_name[0] == 'L' && len > 4 &&
		    (strcmp(de->d_name + len - 4, ".tmp") == 0 ||
		     strcmp(de->d_name + len - 4, ".del") == 0)) {
			snprintf(path, sizeof path, "%s/%s", e->layers_dir, de->d_name);
			(void)rm_rf(path);
		}
	}
	if (d)
		closedir(d);
}

/* The layers the rows name (refs) and the layer rows (added to present),
 * all as one commit left them (a read transaction). */
static int read_refs(struct store *s, struct ids *refs, struct ids *present)
{
	int64_t *rows = NULL;
	size_t n_rows = 0;
	int r = store_read_begin(s);

	if (r < 0)
		return r;
	r = store_box_foreach(s, ref_box, refs);
	if (r >= 0)
		r = store_snapshot_foreach(s, 0, ref_snapshot, refs);
	if (r >= 0)
		r = store_intent_foreach(s, ref_intent, refs);
	if (r >= 0)
		r = store_layer_ids(s, &rows, &n_rows);
	store_read_end(s);
	for (size_t i = 0; i < n_rows && r >= 0; i++)
		r = ids_add(present, rows[i]);
	free(rows);
	return r;
}

/* Checkpoints at most once a second, with gc_lock held: the commits under
 * the engine lock then rarely copy the log themselves (engine.c sets
 * their fallback). */
static void gc_checkpoint(struct engine *e)
{
	uint64_t now = now_usec();

	if (!e->gc_store || now - e->gc_checkpoint_usec < 1000000)
		return;
	e->gc_checkpoint_usec = now;
	if (store_checkpoint(e->gc_store) < 0)
		log_debug("database checkpoint skipped (busy)");
}

/* The collector. Its reads of every row run outside the engine lock, on
 * its own connection: they grow with the number of boxes and snapshots,
 * and the lock is only taken for the layers found unused. Those are
 * checked again under it (store_layer_referenced()): an action may have
 * committed a claim on one since the read, and a layer is removed only if
 * no row names it while the lock is held, as before the split. Crash
 * safety is unchanged: rename to L<ID>.del and delete the row under the
 * lock, remove the tree after (at start, leftovers go). */
void eng_gc(struct engine *e, bool at_start)
{
	struct ids present = {0}, refs = {0};
	_cleanup_free_ int64_t *garbage = NULL;
	size_t n_garbage = 0, n_removed = 0;
	char path[4096], del[4096];
	struct dirent *de;
	DIR *d;
	int r = 0;

	if (at_start)
		remove_leftovers(e);
	pd_mutex_lock(&e->gc_lock);
	/* The directories before the rows: an action writes a layer's row and
	 * its claim (an intent) before the directory, so a directory seen
	 * here has them in what is read next. */
	d = opendir(e->layers_dir);
	while (d && r >= 0 && (de = readdir(d))) {
		int64_t id;
		if (layers_dir_id(de->d_name, &id) >= 0)
			r = ids_add(&present, id);
	}
	if (d)
		closedir(d);
	if (r >= 0 && e->gc_store) {
		r = read_refs(e->gc_store, &refs, &present);
	} else if (r >= 0) {
		pd_mutex_lock(&e->lock);
		r = read_refs(e->store, &refs, &present);
		pd_mutex_unlock(&e->lock);
	}
	if (r >= 0 && present.n && (garbage = calloc(present.n, sizeof *garbage)))
		n_garbage = layers_select_garbage(present.v, present.n, refs.v, refs.n, garbage);
	if (n_garbage)
		pd_hold("gc-read");
	if (n_garbage)
		pd_mutex_lock(&e->lock);
	for (size_t i = 0; i < n_garbage; i++) {
		int64_t id = garbage[i];
		if (store_layer_referenced(e->store, id) != 0) {
			log_debug("layer %lld kept: claimed since the collector read",
				  (long long)id);
			continue;
		}
		layer_path(e, id, NULL, path, sizeof path);
		layer_path(e, id, ".del", del, sizeof del);
		eng_layer_umount(e, id);
		if (rename(path, del) < 0 && errno != ENOENT)
			continue;
		(void)store_layer_delete(e->store, id);
		garbage[n_removed++] = id;
	}
	if (n_garbage)
		pd_mutex_unlock(&e->lock);
	gc_checkpoint(e);
	pd_mutex_unlock(&e->gc_lock);
	if (n_removed)
		pd_fault("gc-renamed");
	for (size_t i = 0; i < n_removed; i++) {
		layer_path(e, garbage[i], ".del", del, sizeof del);
		(void)rm_rf(del);
		log_debug("layer %lld removed (nothing uses it)", (long long)garbage[i]);
	}
	if (r < 0)
		log_warn("layer garbage collection skipped: %s", strerror(-r));
	free(present.v);
	free(refs.v);
	if (at_start)
		eng_snapshot_mounts_clear(e);
}

void eng_snapshot_mounts_clear(struct engine *e)
{
	DIR *d = opendir(e->snapmnt_dir);
	struct dirent *de;

	while (d && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		umount_snapshot(e, de->d_name);
	}
	if (d)
		closedir(d);
}

/* --- recovery ----------------------------------------------------------------- */

/* A fork's new box that will not be: its directory goes. */
static void remove_new_box_dir(struct engine *e, const struct intent_row *in)
{
	struct box nb = {.row.id = in->new_box_id};
	char dir[4096];

	if (!in->new_box_id)
		return;
	eng_umount_root(e, &nb);
	eng_box_root(e, &nb, dir, sizeof dir);
	(void)rmdir(dir);
	eng_box_path(e, &nb, NULL, dir, sizeof dir);
	(void)rm_rf(dir);
}

static int recover_one(struct engine *e, const struct intent_row *in)
{
	struct box b = {0}, nb = {0};
	char layer[4096], tmp[4096];
	pd_error err = {0};
	int r;

	if (store_box_get(e->store, in->box_id, &b.row) < 0) {
		remove_new_box_dir(e, in);
		/* Its box is gone: nothing to finish. */
		(void)store_transaction(e->store, take_rollback_tx, &(struct rollback){.in = in},
					NULL);
		return 0;
	}
	if (strcmp(in->kind, "merge") == 0) {
		/* Not committed: the old stack stays; the new layer goes. */
		layer_path(e, in->layer, ".tmp", tmp, sizeof tmp);
		layer_path(e, in->layer, NULL, layer, sizeof layer);
		(void)rm_rf(tmp);
		(void)rm_rf(layer);
		(void)store_transaction(e->store, take_rollback_tx, &(struct rollback){.in = in},
					NULL);
		log_info("box %s: layer merge interrupted by a crash: rolled back", b.row.name);
		return 0;
	}
	/* A mount left by the dead daemon shows the old stack: the box is
	 * stopped (a copy leaves its box alone), so it goes. */
	if (!in->copy)
		eng_umount_root(e, &b);
	if (strcmp(in->kind, "restore") == 0) {
		r = restore_finish(e, in, &b, &err);
		if (r < 0) {
			log_warn("box %s: restore to %s interrupted and not finished: %s",
				 b.row.name, in->target, err.msg);
			(void)store_intent_delete(e->store, in->id, NULL);
		} else
			log_info("box %s: restore to %s interrupted by a crash: finished",
				 b.row.name, in->target);
		return 0;
	}
	layer_path(e, in->layer, NULL, layer, sizeof layer);
	layer_path(e, in->layer, ".tmp", tmp, sizeof tmp);
	(void)rm_rf(tmp);
	if (access(layer, F_OK) < 0) {
		remove_new_box_dir(e, in);
		(void)store_transaction(e->store, take_rollback_tx, &(struct rollback){.in = in},
					NULL);
		log_info("box %s: %s interrupted by a crash: rolled back", b.row.name, in->kind);
		return 0;
	}
	if (!in->copy) {
		/* The range the frozen files were in (a directory layer's
		 * owner; an image's upper is its box's). */
		int64_t base = idmap_dir_base(layer);
		if (eng_make_writable(e, &b, base < 0 ? (uint32_t)b.row.uid_base : (uint32_t)base,
				      &err) < 0)
			log_warn("box %s: %s", b.row.name, err.msg);
	}
	if (in->new_box_id && store_box_get(e->store, in->new_box_id, &nb.row) >= 0)
		(void)eng_make_box_dirs(e, &nb, &err);
	r = take_commit(e, in, &b.row, in->new_box_id ? &nb.row : NULL, NULL, 0, &err);
	if (r < 0)
		log_warn("box %s: cannot finish an interrupted %s: %s", b.row.name, in->kind,
			 err.msg);
	else
		log_info("box %s: %s interrupted by a crash: finished", b.row.name, in->kind);
	return 0;
}

struct intents {
	struct intent_row *v;
	size_t n;
};

static int collect_intent(const struct intent_row *in, void *userdata)
{
	struct intents *is = userdata;
	struct intent_row *nv = realloc(is->v, (is->n + 1) * sizeof *nv);

	if (!nv)
		return -ENOMEM;
	is->v = nv;
	is->v[is->n++] = *in;
	return 0;
}

int eng_intents_recover(struct engine *e)
{
	struct intents is = {0};
	int r = store_intent_foreach(e->store, collect_intent, &is);

	for (size_t i = 0; i < is.n && r >= 0; i++)
		r = recover_one(e, &is.v[i]);
	free(is.v);
	return r;
}
