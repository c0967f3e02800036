/* engine-lxcfs.c - the boxes' views of /proc from lxcfs (lxcfs.h), in the
 * engine: lxcfs starts with the engine and ends with it; a box starting
 * gets the views of the lxcfs serving then (in its OCI config); each time
 * lxcfs mounts anew (the first time, after it died) the views are bound
 * into the boxes already running, which covers boxes adopted from an
 * earlier daemon, boxes whose lxcfs died, and boxes started while it was
 * down.
 *
 * Each box records the generation of the views it holds (b->lxcfs_gen,
 * engine lock). A start that raced with a new mount (the hook skips busy
 * boxes) catches up once the box is no longer busy (eng_lxcfs_started).
 * At daemon stop lxcfs ends and the running boxes' views are removed, so
 * that while no daemon runs they read the kernel's files rather than
 * ENOTCONN; the next daemon binds them again. */
#include <string.h>
#include <sys/stat.h>

#include "engine/internal.h"
#include "common/log.h"
#include "runtime/lxcfs.h"
#include "common/util.h"

struct running {
	int64_t id;
	pid_t pid;
	char name[NAME_MAX_LEN + 1];
};

/* Running boxes that are not busy, with views of another generation than
 * gen (all of those that have views when gen is 0), in *ret (malloc'd). */
static size_t collect(struct engine *e, uint64_t gen, struct running **ret)
{
	struct running *list;
	size_t n = 0;

	pd_mutex_lock(&e->lock);
	list = calloc(e->n_boxes ? e->n_boxes : 1, sizeof *list);
	for (size_t i = 0; list && i < e->n_boxes; i++) {
		struct box *b = e->boxes[i];
		if (b->state != BOX_RUNNING || b->busy || b->pid <= 0 ||
		    (gen ? b->lxcfs_gen == gen : b->lxcfs_gen == 0))
			continue;
		list[n].id = b->row.id;
		list[n].pid = b->pid;
		snprintf(list[n].name, sizeof list[n].name, "%s", b->row.name);
		n++;
	}
	pd_mutex_unlock(&e->lock);
	*ret = list;
	return n;
}

/* Binds the views into the box (gen >= 1) or removes them (gen 0), and
 * records it when the box still runs that process. */
static void sync_box(struct engine *e, struct lxcfs *lx, const struct running *rb, uint64_t gen)
{
	pd_error err = {0};
	struct box *b;
	int r;

	r = gen ? lxcfs_attach(lx, rb->pid, &err) : lxcfs_detach(rb->pid, &err);
	if (r < 0 && r != -ESRCH)
		log_warn("box %s: cannot %s lxcfs's views of /proc: %s", rb->name,
			 gen ? "bind" : "remove", err.msg);
	pd_mutex_lock(&e->lock);
	b = eng_find_box_id(e, rb->id);
	if (b && b->pid == rb->pid)
		b->lxcfs_gen = r >= 0 ? gen : 0;
	pd_mutex_unlock(&e->lock);
}

static void sync_all(struct engine *e, struct lxcfs *lx, uint64_t gen, bool all)
{
	_cleanup_free_ struct running *list = NULL;
	size_t n;

	if (all) {
		/* At start, before lxcfs runs: every running box, whatever
		 * it holds (views of a leftover lxcfs just ended). */
		pd_mutex_lock(&e->lock);
		for (size_t i = 0; i < e->n_boxes; i++)
			e->boxes[i]->lxcfs_gen = UINT64_MAX;
		pd_mutex_unlock(&e->lock);
	}
	n = collect(e, gen, &list);
	for (size_t i = 0; i < n; i++)
		sync_box(e, lx, &list[i], gen);
	if (n)
		log_debug("lxcfs: views %s %zu running box(es)",
			  gen ? "bound into" : "removed from", n);
}

/* lxcfs's hook: a new mount (generation gen). */
static void on_ready(void *userdata, struct lxcfs *lx, uint64_t gen)
{
	sync_all(userdata, lx, gen, /* all= */ false);
}

void eng_lxcfs_start(struct engine *e)
{
	pd_error err = {0};
	char dir[4096];
	int r;

	/* RUN/lxcfs.d (0700): RUN itself lets others pass (a box's root
	 * reaches its stage through it), lxcfs's mount must not. Boxes get
	 * its files through their stage (engine.c, stage_all()). */
	snprintf(dir, sizeof dir, "%s/lxcfs.d", e->cfg->run);
	if ((mkdir(dir, 0700) < 0 && errno != EEXIST) || chmod(dir, 0700) < 0)
		log_warn("lxcfs: cannot create %s: %s", dir, strerror(errno));

	/* A daemon killed earlier may have left its lxcfs running (boxes
	 * kept their views) or its mount dead: cleared first, and the
	 * running boxes' views removed before anything else binds new ones. */
	r = lxcfs_clear_leftover(dir, &err);
	if (r < 0)
		log_warn("lxcfs: %s", err.msg);
	else if (r > 0) {
		log_info("lxcfs: ended the one an earlier paddockd left");
		sync_all(e, /* lx= */ NULL, 0, /* all= */ true);
	}
	if (!e->cfg->lxcfs) {
		log_info("lxcfs = off: boxes read the kernel's /proc/meminfo, cpuinfo, uptime");
		return;
	}
	r = lxcfs_start(e->cfg->lxcfs, dir, on_ready, e, &e->lxcfs, &err);
	if (r < 0)
		log_warn("%s: boxes start without lxcfs's views of /proc (their memory, CPUs and "
			 "uptime read as the host's)",
			 err.msg);
	else if (r == 0)
		log_warn("%s: boxes start without lxcfs's views of /proc until it runs (tried "
			 "again in the background)",
			 err.msg);
	else
		log_info("lxcfs serves %s: boxes see their own memory, CPUs and uptime",
			 lxcfs_dir(e->lxcfs));
}

void eng_lxcfs_stop(struct engine *e)
{
	_cleanup_free_ struct running *list = NULL;
	size_t n;

	if (!e->lxcfs)
		return;
	e->lxcfs = lxcfs_stop(e->lxcfs);
	n = collect(e, 0, &list);
	for (size_t i = 0; i < n; i++)
		sync_box(e, /* lx= */ NULL, &list[i], 0);
}

uint64_t eng_lxcfs_spec(struct engine *e, struct box_spec *spec)
{
	unsigned views;
	uint64_t gen = lxcfs_generation(e->lxcfs, &views);

	spec->lxcfs_dir = gen ? lxcfs_dir(e->lxcfs) : NULL;
	spec->lxcfs_views = views;
	return gen;
}

void eng_lxcfs_started(struct engine *e, int64_t box_id)
{
	struct running rb = {0};
	uint64_t gen = lxcfs_generation(e->lxcfs, NULL);
	struct box *b;

	if (!gen)
		return;
	pd_mutex_lock(&e->lock);
	b = eng_find_box_id(e, box_id);
	if (b && b->state == BOX_RUNNING && !b->busy && b->pid > 0 && b->lxcfs_gen != gen) {
		rb.id = b->row.id;
		rb.pid = b->pid;
		snprintf(rb.name, sizeof rb.name, "%s", b->row.name);
	}
	pd_mutex_unlock(&e->lock);
	if (rb.pid)
		sync_box(e, e->lxcfs, &rb, gen);
}
