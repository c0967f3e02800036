/* metrics.h - the daemon's counters and histograms, and the engine's part
 * of GET /metrics (web/metrics.c) in Prometheus' text exposition format,
 * version 0.0.4. What each metric means: docs/operations.md.
 *
 * The counters are process-wide: one set whatever the number of engines
 * (the daemon makes one; unit tests several), counted from the process's
 * start. Recording is thread-safe and cheap (atomic adds; a histogram's
 * few adds under a leaf lock), so a hook may run with any lock held.
 *
 * Gauges (boxes by state, jobs running, disk use) are read at the scrape
 * from the engine's tables; see engine_metrics_write().
 */
#pragma once

#include <stdbool.h>

#include "common/buf.h"
#include "engine/engine.h"

/* Upper bounds (seconds) of the latency histograms' buckets; +Inf is
 * implicit. Box starts take a second or more; job starts milliseconds. */
#define METRICS_BOX_START_BUCKETS 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60
#define METRICS_JOB_START_BUCKETS 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10

/* The hooks that count box and job starts (metrics_box_start(),
 * metrics_job_start()) and jobs.c's count of running jobs are declared in
 * engine/internal.h, for the engine's parts. */

/* Appends the engine's metrics to out: build info, start time, boxes by
 * state, jobs running, disk and memory use, box and job starts. The
 * gauges are read now: the box table under the engine lock (a count, no
 * I/O), then for each box its usage without a disk walk
 * (ENGINE_USAGE_NO_WALK: a statfs of its disk image, or the bytes its last
 * walk found), and a statvfs of the data directory. 0, or -ENOMEM. */
int engine_metrics_write(struct engine *e, struct pd_buf *out);

/* Appends one histogram's lines (# HELP, # TYPE, _bucket, _sum, _count)
 * for bounds[0..n) seconds and counts[0..n] (per bucket, not cumulative,
 * the last +Inf), sum_usec and labels ("" or `kind="exec"`). For the
 * writers here and in web/metrics.c, and the unit tests. 0 or -ENOMEM. */
int metrics_write_histogram(struct pd_buf *out, const char *name, const char *help,
			    const char *labels, bool head, const double *bounds, size_t n,
			    const unsigned long long *counts, unsigned long long sum_usec);
