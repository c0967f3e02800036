/* metrics.c - the daemon's counters and histograms, and the engine's part
 * of GET /metrics (metrics.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>

#include "autoconfig.h"
#include "common/lock.h"
#include "common/util.h"
#include "engine/internal.h"
#include "engine/metrics.h"

#define HIST_MAX 16 /* buckets at most, +Inf included */

struct hist {
	unsigned long long counts[HIST_MAX];
	unsigned long long sum_usec;
};

static const double box_bounds[] = {METRICS_BOX_START_BUCKETS};
static const double job_bounds[] = {METRICS_JOB_START_BUCKETS};
_Static_assert(ELEMENTSOF(box_bounds) < HIST_MAX, "too many buckets");
_Static_assert(ELEMENTSOF(job_bounds) < HIST_MAX, "too many buckets");

/* The histograms; counters are atomics. */
static struct pd_mutex hist_lock = PD_MUTEX_INITIALIZER(LOCK_RANK_LEAF, 0, "metrics lock");
static struct hist box_hist, job_hist[2];
static atomic_ullong box_starts[2];    /* [ok] */
static atomic_ullong job_starts[2][2]; /* [kind][ok] */

/* When the process started: set before main() (the daemon's start time
 * as far as a scrape can tell), wall clock and monotonic. */
static time_t start_wall;
static unsigned long long start_mono;

__attribute__((constructor)) static void metrics_init(void)
{
	start_wall = time(NULL);
	start_mono = now_usec();
}

static void hist_add(struct hist *h, const double *bounds, size_t n, unsigned long long usec)
{
	size_t i = 0;

	while (i < n && (double)usec > bounds[i] * 1e6)
		i++;
	pd_mutex_lock(&hist_lock);
	h->counts[i]++;
	h->sum_usec += usec;
	pd_mutex_unlock(&hist_lock);
}

void metrics_box_start(bool ok, unsigned long long usec)
{
	atomic_fetch_add(&box_starts[ok], 1);
	if (ok)
		hist_add(&box_hist, box_bounds, ELEMENTSOF(box_bounds), usec);
}

void metrics_job_start(enum job_kind kind, bool ok, unsigned long long usec)
{
	size_t k = kind == JOB_PROMPT;

	atomic_fetch_add(&job_starts[k][ok], 1);
	if (ok)
		hist_add(&job_hist[k], job_bounds, ELEMENTSOF(job_bounds), usec);
}

int metrics_write_histogram(struct pd_buf *out, const char *name, const char *help,
			    const char *labels, bool head, const double *bounds, size_t n,
			    const unsigned long long *counts, unsigned long long sum_usec)
{
	const char *sep = *labels ? "," : "";
	unsigned long long cum = 0;
	int r = 0;

	if (head)
		r = pd_buf_printf(out, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
	for (size_t i = 0; i <= n && r >= 0; i++) {
		cum += counts[i];
		if (i < n)
			r = pd_buf_printf(out, "%s_bucket{%s%sle=\"%g\"} %llu\n", name, labels, sep,
					  bounds[i], cum);
		else
			r = pd_buf_printf(out, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", name, labels,
					  sep, cum);
	}
	if (r >= 0)
		r = pd_buf_printf(out, "%s_sum%s%s%s %llu.%06llu\n%s_count%s%s%s %llu\n", name,
				  *labels ? "{" : "", labels, *labels ? "}" : "",
				  sum_usec / 1000000, sum_usec % 1000000, name, *labels ? "{" : "",
				  labels, *labels ? "}" : "", cum);
	return r == -EFBIG ? -ENOMEM : r;
}

/* Appends formatted text; remembers a failure (out of memory) in *failed,
 * so that a scrape never answers with lines missing. */
static void put(struct pd_buf *out, bool *failed, const char *fmt, ...) _printf_(3, 4);
static void put(struct pd_buf *out, bool *failed, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (pd_buf_vprintf(out, fmt, ap) < 0)
		*failed = true;
	va_end(ap);
}

/* What a scrape reads from the engine's tables. */
struct snapshot {
	size_t boxes[_BOX_STATE_MAX];
	size_t jobs[2];
	int64_t *ids; /* the boxes, for their usage */
	size_t n_ids;
	unsigned long long disk_bytes, memory_bytes;
};

static int take_snapshot(struct engine *e, struct snapshot *s)
{
	pd_mutex_lock(&e->lock);
	s->ids = e->n_boxes ? malloc(e->n_boxes * sizeof *s->ids) : NULL;
	if (e->n_boxes && !s->ids) {
		pd_mutex_unlock(&e->lock);
		return -ENOMEM;
	}
	for (size_t i = 0; i < e->n_boxes; i++) {
		const struct box *b = e->boxes[i];
		if (b->deleting)
			continue;
		if (b->state >= 0 && b->state < _BOX_STATE_MAX)
			s->boxes[b->state]++;
		s->ids[s->n_ids++] = b->row.id;
	}
	eng_jobs_running(e, s->jobs);
	pd_mutex_unlock(&e->lock);

	/* Outside the lock: a statfs per box with a disk image, a few cgroup
	 * files per running box. A box deleted meanwhile is skipped. */
	for (size_t i = 0; i < s->n_ids; i++) {
		struct box_usage u;
		if (engine_box_usage(e, s->ids[i], ENGINE_USAGE_NO_WALK, &u) < 0)
			continue;
		s->disk_bytes += u.disk_bytes;
		s->memory_bytes += u.memory_bytes;
	}
	return 0;
}

int engine_metrics_write(struct engine *e, struct pd_buf *out)
{
	static const char *const kinds[] = {"exec", "prompt"};
	struct snapshot s = {0};
	struct hist box, job[2];
	struct statvfs vfs;
	bool failed = false;
	int r;

	r = take_snapshot(e, &s);
	free(s.ids);
	if (r < 0)
		return r;
	pd_mutex_lock(&hist_lock);
	box = box_hist;
	memcpy(job, job_hist, sizeof job);
	pd_mutex_unlock(&hist_lock);

	put(out, &failed,
	    "# HELP paddock_build_info The daemon's version.\n"
	    "# TYPE paddock_build_info gauge\n"
	    "paddock_build_info{version=\"%s\"} 1\n"
	    "# HELP paddock_start_time_seconds When the daemon started, in seconds "
	    "since the epoch.\n"
	    "# TYPE paddock_start_time_seconds gauge\n"
	    "paddock_start_time_seconds %lld\n"
	    "# HELP paddock_uptime_seconds Seconds since the daemon started.\n"
	    "# TYPE paddock_uptime_seconds gauge\n"
	    "paddock_uptime_seconds %.3f\n",
	    PACKAGE_VERSION, (long long)start_wall, (double)(now_usec() - start_mono) / 1e6);

	put(out, &failed,
	    "# HELP paddock_boxes Boxes by state.\n"
	    "# TYPE paddock_boxes gauge\n");
	for (int i = 0; i < _BOX_STATE_MAX; i++)
		put(out, &failed, "paddock_boxes{state=\"%s\"} %zu\n",
		    box_state_to_string((enum box_state)i), s.boxes[i]);
	put(out, &failed,
	    "# HELP paddock_jobs_running Jobs running, by kind.\n"
	    "# TYPE paddock_jobs_running gauge\n");
	for (size_t k = 0; k < 2; k++)
		put(out, &failed, "paddock_jobs_running{kind=\"%s\"} %zu\n", kinds[k], s.jobs[k]);

	put(out, &failed,
	    "# HELP paddock_boxes_disk_bytes Bytes the boxes' own files hold (their "
	    "writable layers; a directory's as its last walk found).\n"
	    "# TYPE paddock_boxes_disk_bytes gauge\n"
	    "paddock_boxes_disk_bytes %llu\n"
	    "# HELP paddock_boxes_memory_bytes Memory the running boxes use (their "
	    "cgroups).\n"
	    "# TYPE paddock_boxes_memory_bytes gauge\n"
	    "paddock_boxes_memory_bytes %llu\n",
	    s.disk_bytes, s.memory_bytes);
	if (statvfs(e->cfg->data, &vfs) == 0)
		put(out, &failed,
		    "# HELP paddock_data_fs_size_bytes Size of the data directory's "
		    "filesystem.\n"
		    "# TYPE paddock_data_fs_size_bytes gauge\n"
		    "paddock_data_fs_size_bytes %llu\n"
		    "# HELP paddock_data_fs_avail_bytes Bytes free for the daemon on the "
		    "data directory's filesystem.\n"
		    "# TYPE paddock_data_fs_avail_bytes gauge\n"
		    "paddock_data_fs_avail_bytes %llu\n",
		    (unsigned long long)vfs.f_blocks * vfs.f_frsize,
		    (unsigned long long)vfs.f_bavail * vfs.f_frsize);

	put(out, &failed,
	    "# HELP paddock_box_starts_total Box starts, by result.\n"
	    "# TYPE paddock_box_starts_total counter\n"
	    "paddock_box_starts_total{result=\"ok\"} %llu\n"
	    "paddock_box_starts_total{result=\"error\"} %llu\n",
	    (unsigned long long)atomic_load(&box_starts[1]),
	    (unsigned long long)atomic_load(&box_starts[0]));
	if (metrics_write_histogram(out, "paddock_box_start_seconds",
				    "Time from the write of running to a box's state to the box "
				    "running.",
				    "", true, box_bounds, ELEMENTSOF(box_bounds), box.counts,
				    box.sum_usec) < 0)
		failed = true;
	put(out, &failed,
	    "# HELP paddock_job_starts_total Job starts (exec jobs and prompts), "
	    "by kind and result.\n"
	    "# TYPE paddock_job_starts_total counter\n");
	for (size_t k = 0; k < 2; k++)
		put(out, &failed,
		    "paddock_job_starts_total{kind=\"%s\",result=\"ok\"} %llu\n"
		    "paddock_job_starts_total{kind=\"%s\",result=\"error\"} %llu\n",
		    kinds[k], (unsigned long long)atomic_load(&job_starts[k][1]), kinds[k],
		    (unsigned long long)atomic_load(&job_starts[k][0]));
	for (size_t k = 0; k < 2; k++) {
		char labels[32];
		snprintf(labels, sizeof labels, "kind=\"%s\"", kinds[k]);
		if (metrics_write_histogram(out, "paddock_job_start_seconds",
					    "Time from the write of a job's cmd to its command "
					    "running in the box.",
					    labels, k == 0, job_bounds, ELEMENTSOF(job_bounds),
					    job[k].counts, job[k].sum_usec) < 0)
			failed = true;
	}
	return failed ? -ENOMEM : 0;
}
