/* lock.c - the lock order check (lock.h). Each thread keeps the locks it
 * holds in a small thread-local list; nothing here takes a lock. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/lock.h"

static __thread const struct pd_mutex *held[LOCK_HELD_MAX];
static __thread unsigned n_held;

void pd_mutex_init(struct pd_mutex *m, enum lock_rank rank, unsigned flags, const char *name)
{
	pthread_mutex_init(&m->m, NULL);
	m->rank = rank;
	m->flags = flags;
	m->name = name;
}

void pd_mutex_destroy(struct pd_mutex *m)
{
	pthread_mutex_destroy(&m->m);
}

/* Writes the reason and what this thread holds to stderr with plain
 * write(2) (no stdio lock, no allocation), then aborts. */
static _Noreturn void fail(const char *what, const char *detail)
{
	char line[512];
	int n = snprintf(line, sizeof line,
			 "paddockd: lock check: %s%s\n  held, innermost last:", what, detail);

	for (unsigned i = 0; i < n_held && n > 0 && (size_t)n < sizeof line; i++)
		n += snprintf(line + n, sizeof line - (size_t)n, " %s (rank %d)", held[i]->name,
			      (int)held[i]->rank);
	if (n_held == 0 && n > 0 && (size_t)n < sizeof line)
		n += snprintf(line + n, sizeof line - (size_t)n, " none");
	if (n > 0 && (size_t)n < sizeof line - 1)
		line[n++] = '\n';
	if (n > (int)sizeof line)
		n = (int)sizeof line;
	(void)!write(STDERR_FILENO, line, n > 0 ? (size_t)n : 0);
	abort();
}

void lock_check_take(const struct pd_mutex *m)
{
	char detail[160];

	for (unsigned i = 0; i < n_held; i++) {
		if (held[i] == m) {
			snprintf(detail, sizeof detail, "%s (rank %d) taken twice", m->name,
				 (int)m->rank);
			fail("", detail);
		}
		if (held[i]->rank >= m->rank) {
			snprintf(detail, sizeof detail, "%s (rank %d) taken under %s (rank %d)",
				 m->name, (int)m->rank, held[i]->name, (int)held[i]->rank);
			fail("order inverted: ", detail);
		}
	}
	if (n_held == LOCK_HELD_MAX)
		fail("too many locks held at once taking ", m->name);
}

void lock_check_taken(const struct pd_mutex *m)
{
	held[n_held++] = m;
}

void lock_check_release(const struct pd_mutex *m)
{
	for (unsigned i = n_held; i > 0; i--)
		if (held[i - 1] == m) {
			memmove(&held[i - 1], &held[i], (n_held - i) * sizeof *held);
			n_held--;
			return;
		}
	fail("released but not held: ", m->name);
}

void lock_check_slow(const char *what)
{
	char detail[160];

	for (unsigned i = 0; i < n_held; i++)
		if (held[i]->flags & LOCK_NO_SLOW) {
			snprintf(detail, sizeof detail, "%s under %s", what, held[i]->name);
			fail("slow work under a lock that must stay short: ", detail);
		}
}

void lock_check_must_hold(const struct pd_mutex *m)
{
	for (unsigned i = 0; i < n_held; i++)
		if (held[i] == m)
			return;
	fail("not held where it must be: ", m->name);
}

/* --- statistics ------------------------------------------------------------ */

#define LOCK_STAT_NAMES 64
#define LOCK_STAT_BUCKETS 32 /* bucket i: [2^i, 2^(i+1)) µs; 0 also < 1 µs */

struct lock_stat {
	const char *name; /* NULL: a free slot; set once by compare-and-swap */
	uint64_t n, waited;
	uint64_t wait_max_ns, hold_max_ns, hold_ns;
	uint64_t wait[LOCK_STAT_BUCKETS], hold[LOCK_STAT_BUCKETS];
};

/* Where holds of LONG_HOLD_NS or more began. */
#define LONG_HOLD_NS 1000000ULL
#define LONG_SITES 64
struct long_site {
	const char *file; /* NULL: a free slot */
	int line;
	const char *name;
	uint64_t n, total_ns, max_ns;
};
static struct long_site long_sites[LONG_SITES];

bool lock_stats_on;
static struct lock_stat stats[LOCK_STAT_NAMES];
static struct lock_stat stat_overflow = {.name = "(other locks)"};

void lock_stats_enable(void)
{
	lock_stats_on = true;
}

uint64_t lock_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* The slot of m's name: found or claimed without a lock (slots are only
 * ever claimed, never freed). */
static struct lock_stat *stat_of(struct pd_mutex *m)
{
	struct lock_stat *s = __atomic_load_n(&m->stat, __ATOMIC_ACQUIRE);
	const char *name = m->name ? m->name : "(unnamed)";

	if (s)
		return s;
	for (size_t i = 0; i < LOCK_STAT_NAMES && !s; i++) {
		const char *have = __atomic_load_n(&stats[i].name, __ATOMIC_ACQUIRE);

		if (!have && __atomic_compare_exchange_n(&stats[i].name, &have, name, false,
							 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			have = name;
		if (have && strcmp(have, name) == 0)
			s = &stats[i];
	}
	if (!s)
		s = &stat_overflow;
	__atomic_store_n(&m->stat, s, __ATOMIC_RELEASE);
	return s;
}

static unsigned bucket(uint64_t ns)
{
	uint64_t us = ns / 1000;
	unsigned b = 0;

	while (us > 1 && b < LOCK_STAT_BUCKETS - 1) {
		us >>= 1;
		b++;
	}
	return b;
}

static void add_max(uint64_t *max, uint64_t v)
{
	uint64_t have = __atomic_load_n(max, __ATOMIC_RELAXED);

	while (v > have && !__atomic_compare_exchange_n(max, &have, v, true, __ATOMIC_RELAXED,
							__ATOMIC_RELAXED))
		;
}

void lock_stats_taken(struct pd_mutex *m, uint64_t t0_ns, bool waited, const char *file, int line)
{
	struct lock_stat *s = stat_of(m);
	uint64_t now = lock_now_ns();

	m->taken_ns = now;
	m->taken_file = file;
	m->taken_line = line;
	__atomic_fetch_add(&s->n, 1, __ATOMIC_RELAXED);
	if (!waited)
		return;
	__atomic_fetch_add(&s->waited, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&s->wait[bucket(now - t0_ns)], 1, __ATOMIC_RELAXED);
	add_max(&s->wait_max_ns, now - t0_ns);
}

void lock_stats_release(struct pd_mutex *m)
{
	struct lock_stat *s = stat_of(m);
	uint64_t for_ns;

	if (!m->taken_ns) /* taken before the statistics were on */
		return;
	for_ns = lock_now_ns() - m->taken_ns;
	m->taken_ns = 0;
	__atomic_fetch_add(&s->hold_ns, for_ns, __ATOMIC_RELAXED);
	__atomic_fetch_add(&s->hold[bucket(for_ns)], 1, __ATOMIC_RELAXED);
	add_max(&s->hold_max_ns, for_ns);
	if (for_ns < LONG_HOLD_NS)
		return;
	for (size_t i = 0; i < LONG_SITES; i++) {
		struct long_site *l = &long_sites[i];
		const char *have = __atomic_load_n(&l->file, __ATOMIC_ACQUIRE);

		/* A slot is claimed by its file, then given its line: a
		 * reader that sees the file before the line waits a moment. */
		if (!have && __atomic_compare_exchange_n(&l->file, &have, m->taken_file, false,
							 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
			l->name = s->name;
			__atomic_store_n(&l->line, m->taken_line, __ATOMIC_RELEASE);
			have = m->taken_file;
		}
		while (have && !__atomic_load_n(&l->line, __ATOMIC_ACQUIRE))
			;
		if (have == m->taken_file &&
		    __atomic_load_n(&l->line, __ATOMIC_ACQUIRE) == m->taken_line) {
			__atomic_fetch_add(&l->n, 1, __ATOMIC_RELAXED);
			__atomic_fetch_add(&l->total_ns, for_ns, __ATOMIC_RELAXED);
			add_max(&l->max_ns, for_ns);
			return;
		}
	}
}

/* The upper bound, in µs, of the bucket the q-th share of counts falls in. */
static uint64_t quantile_us(const uint64_t *b, uint64_t total, double q)
{
	uint64_t want = (uint64_t)((double)total * q), seen = 0;

	for (unsigned i = 0; i < LOCK_STAT_BUCKETS; i++) {
		seen += b[i];
		if (seen > want)
			return 2ULL << i;
	}
	return 2ULL << (LOCK_STAT_BUCKETS - 1);
}

static void dump_one(const struct lock_stat *s, void (*out)(const char *line))
{
	char line[512];
	uint64_t n_held_samples = 0;

	for (unsigned i = 0; i < LOCK_STAT_BUCKETS; i++)
		n_held_samples += s->hold[i];
	if (!s->n)
		return;
	snprintf(line, sizeof line,
		 "lock stats: %s: taken %" PRIu64 ", waited %" PRIu64 " (p99 < %" PRIu64
		 " us, max %" PRIu64 " us); held p50 < %" PRIu64 " us, p99 < %" PRIu64
		 " us, max %" PRIu64 " us, total %" PRIu64 " ms",
		 s->name, s->n, s->waited, s->waited ? quantile_us(s->wait, s->waited, 0.99) : 0,
		 s->wait_max_ns / 1000,
		 n_held_samples ? quantile_us(s->hold, n_held_samples, 0.5) : 0,
		 n_held_samples ? quantile_us(s->hold, n_held_samples, 0.99) : 0,
		 s->hold_max_ns / 1000, s->hold_ns / 1000000);
	out(line);
}

void lock_stats_dump(void (*out)(const char *line))
{
	if (!lock_stats_on)
		return;
	for (size_t i = 0; i < LOCK_STAT_NAMES; i++)
		if (__atomic_load_n(&stats[i].name, __ATOMIC_ACQUIRE))
			dump_one(&stats[i], out);
	dump_one(&stat_overflow, out);
	for (size_t i = 0; i < LONG_SITES; i++) {
		const struct long_site *l = &long_sites[i];
		char text[512];

		if (!l->file)
			continue;
		snprintf(text, sizeof text,
			 "lock stats: long hold: %s taken at %s:%d: %" PRIu64
			 " holds >= 1 ms, max %" PRIu64 " us, total %" PRIu64 " ms",
			 l->name ? l->name : "?", l->file, l->line, l->n, l->max_ns / 1000,
			 l->total_ns / 1000000);
		out(text);
	}
}
