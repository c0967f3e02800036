/* lock.h - the daemon's locks, the order they nest in, and a check of that
 * order in debug builds.
 *
 * The hierarchy, outermost first. A thread that holds a lock may take only
 * locks of a higher rank; two locks of one rank never nest. Every mutex of
 * the daemon is a struct pd_mutex initialised with its rank here, and all
 * are [checked] when the build has PD_LOCK_CHECK (configure
 * --enable-lock-check, on with --enable-sanitizers): an inversion anywhere
 * aborts. A new lock gets one of these ranks and a line here. Locks flagged
 * LOCK_NO_SLOW (lock_assert_no_slow()) are named so.
 *
 *  LOCK_RANK_FUSE_PARK    [checked] the FUSE adapter's park_lock
 *                         (fs/fuse-adapter.c): a parked read is retried
 *                         under it, which calls the tree, and so the engine
 *                         (e->lock and what nests under it) and an export
 *                         stream's lock.
 *  LOCK_RANK_ENGINE_GC    [checked] e->gc_lock (engine/internal.h): one
 *                         layer collection at a time (eng_gc(),
 *                         snapshots.c) and its own store connection. It
 *                         reads every box, snapshot and intent row and
 *                         checkpoints the database under gc_lock alone,
 *                         then takes e->lock to check each layer it would
 *                         remove again and remove it. Taken with no other
 *                         lock held.
 *  LOCK_RANK_ENGINE       [checked] e->lock, LOCK_NO_SLOW: the box table,
 *                         jobs, volumes, snapshot export marks, the boxes'
 *                         looked-up names and the store connection (the
 *                         layer collector reads on its own, under
 *                         gc_lock). No
 *                         slow work under it: disk walks, rm_rf, cp, crun,
 *                         archive streams and waits for a box all run
 *                         outside it, on a box marked busy or with its own
 *                         in-flight mark (engine/internal.h).
 *  LOCK_RANK_ENGINE_WAKE  [checked] e->wake_lock: held while the wake
 *                         listeners run; taken under e->lock (an event
 *                         appended by eng_emit() wakes its readers) and
 *                         alone.
 *                         [checked] auth's hooks_lock (auth.c) has this
 *                         rank too: held while the revocation listeners
 *                         run, never with e->lock nor e->wake_lock.
 *  LOCK_RANK_LISTENER     [checked] what a wake or revocation listener
 *                         takes in its callback, so LOCK_NO_SLOW (the
 *                         engine waits on them): the FUSE adapter's
 *                         wake_lock (its queue of wake keys; its waker
 *                         thread waits on it), the HTTP adapter's
 *                         park_lock (its parked streams and its requests
 *                         by token). Nothing is taken under them.
 *  LOCK_RANK_LEAF         [checked] held around a few lines that take no
 *                         other lock:
 *                         - the nftables context (net-nft.c, a static
 *                           mutex; taken under e->lock and alone),
 *                         - auth's lock (auth.c: the tokens and their own
 *                           store connection, the login rate limit and
 *                           queue, whose waiters wait on it; never under
 *                           e->lock; the password hash runs outside it),
 *                         - the DNS resolver's tcp_lock (dns.c: its TCP
 *                           connections; dns_stop() waits on it),
 *                         - an export stream's lock (export.c: its wake
 *                           and release callbacks run with it dropped),
 *                         - the in-memory runtime's lock (runtime/fake.c,
 *                           unit tests only: its containers),
 *                         - the tree's lock (fs/tree.c: temp files, image
 *                           slots, open files),
 *                         - the FUSE adapter's verdict_lock (the callers'
 *                           remembered groups, read from /proc outside
 *                           it), LOCK_NO_SLOW: every FUSE request of a
 *                           group member may pass it,
 *                         - the HTTP adapter's (web/http.c): the queue
 *                           locks of its two pools (workers, login threads;
 *                           idle threads wait on them), its conn_lock (the
 *                           connections and their count per address:
 *                           on_accept, conn_started, conn_closed,
 *                           conn_set_deadline, sweep_deadlines), all three
 *                           LOCK_NO_SLOW (every request or connection
 *                           passes them), and its request locks
 *                           (http-internal.h: a request's waiting and done).
 *                           Its park_lock is a listener's (above) and is
 *                           never held with these.
 *
 * The volumes have no lock of their own (e->lock guards their table), and
 * neither do boxes: an action marks its box busy under e->lock and works
 * outside it; a disk walk marks the box walking (engine.c). A condition
 * wait releases its mutex while it waits and holds no other lock: the TTL
 * timer and readers of a walk (e->lock), logins queued for the password
 * budget (auth's lock), idle pool threads (the HTTP queue locks), the FUSE
 * waker (its wake_lock) and dns_stop() (tcp_lock), all through
 * pd_cond_wait()/pd_cond_timedwait().
 */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "autoconfig.h"

enum lock_rank {
	LOCK_RANK_FUSE_PARK = 10,
	LOCK_RANK_ENGINE_GC = 15,
	LOCK_RANK_ENGINE = 20,
	LOCK_RANK_ENGINE_WAKE = 30,
	LOCK_RANK_LISTENER = 40,
	LOCK_RANK_LEAF = 50,
};

/* Flags of a lock. LOCK_NO_SLOW: lock_assert_no_slow() fails while it is
 * held. */
#define LOCK_NO_SLOW 1u

struct lock_stat;

struct pd_mutex {
	pthread_mutex_t m;
	enum lock_rank rank;
	unsigned flags;
	const char *name; /* in the check's messages; static storage */
	/* The statistics (below): when it was taken, and its name's counts. */
	uint64_t taken_ns;
	struct lock_stat *stat;
	const char *taken_file; /* where it was taken */
	int taken_line;
};

void pd_mutex_init(struct pd_mutex *m, enum lock_rank rank, unsigned flags, const char *name);
/* The same for a mutex of static storage:
 * static struct pd_mutex l = PD_MUTEX_INITIALIZER(LOCK_RANK_LEAF, 0, "name"); */
#define PD_MUTEX_INITIALIZER(rank_, flags_, name_)                                                 \
	{                                                                                          \
		.m = PTHREAD_MUTEX_INITIALIZER, .rank = (rank_), .flags = (flags_),                \
		.name = (name_)                                                                    \
	}
void pd_mutex_destroy(struct pd_mutex *m);

/* Lock statistics, for measuring contention (tests/bench/lock.sh): off
 * unless the daemon starts with PADDOCK_LOCK_STATS=1 in its environment
 * (lock_stats_enable() before any thread; a branch per lock and unlock
 * when off). Counted per lock name (every HTTP request lock is one line):
 * acquisitions, those that had to wait, and the wait and hold times in
 * power-of-two buckets of microseconds. A condition wait does not count
 * as holding. A hold of a millisecond or more is also counted by where the
 * lock was taken (file:line). lock_stats_dump() gives out() one line
 * per name and per such place (the daemon logs them when it stops). */
extern bool lock_stats_on;
void lock_stats_enable(void);
void lock_stats_dump(void (*out)(const char *line));
void lock_stats_taken(struct pd_mutex *m, uint64_t t0_ns, bool waited, const char *file, int line);
void lock_stats_release(struct pd_mutex *m);
uint64_t lock_now_ns(void);

/* The check, called by the wrappers below when PD_LOCK_CHECK is defined.
 * A violation writes what was held and what was taken to stderr and
 * aborts: an inversion is a deadlock waiting for its moment, slow work
 * under the engine lock a stall of every box. Each thread records what it
 * holds (at most LOCK_HELD_MAX locks). */
#define LOCK_HELD_MAX 8
void lock_check_take(const struct pd_mutex *m);
void lock_check_taken(const struct pd_mutex *m);
void lock_check_release(const struct pd_mutex *m);
void lock_check_slow(const char *what);
void lock_check_must_hold(const struct pd_mutex *m);

/* pd_mutex_lock(m), pd_cond_wait(c, m), pd_cond_timedwait(c, m, t): the
 * wrappers below, told where they are called from (the statistics). */
#define pd_mutex_lock(m) pd_mutex_lock_at((m), __FILE__, __LINE__)
#define pd_cond_wait(c, m) pd_cond_wait_at((c), (m), __FILE__, __LINE__)
#define pd_cond_timedwait(c, m, t) pd_cond_timedwait_at((c), (m), (t), __FILE__, __LINE__)

static inline void pd_mutex_lock_at(struct pd_mutex *m, const char *file, int line)
{
#ifdef PD_LOCK_CHECK
	lock_check_take(m);
#endif
	if (__builtin_expect(lock_stats_on, 0)) {
		uint64_t t0 = lock_now_ns();
		bool waited = pthread_mutex_trylock(&m->m) != 0;

		if (waited)
			pthread_mutex_lock(&m->m);
		lock_stats_taken(m, t0, waited, file, line);
	} else {
		pthread_mutex_lock(&m->m);
	}
#ifdef PD_LOCK_CHECK
	lock_check_taken(m);
#endif
}

static inline void pd_mutex_unlock(struct pd_mutex *m)
{
#ifdef PD_LOCK_CHECK
	lock_check_release(m);
#endif
	if (__builtin_expect(lock_stats_on, 0))
		lock_stats_release(m);
	pthread_mutex_unlock(&m->m);
}

/* Waits on cond, releasing m meanwhile. m stays recorded as held: the
 * thread takes nothing else while it waits. */
static inline int pd_cond_wait_at(pthread_cond_t *cond, struct pd_mutex *m, const char *file,
				  int line)
{
	int r;

	if (__builtin_expect(lock_stats_on, 0))
		lock_stats_release(m);
	r = pthread_cond_wait(cond, &m->m);
	if (__builtin_expect(lock_stats_on, 0))
		lock_stats_taken(m, lock_now_ns(), false, file, line);
	return r;
}

static inline int pd_cond_timedwait_at(pthread_cond_t *cond, struct pd_mutex *m,
				       const struct timespec *abstime, const char *file, int line)
{
	int r;

	if (__builtin_expect(lock_stats_on, 0))
		lock_stats_release(m);
	r = pthread_cond_timedwait(cond, &m->m, abstime);
	if (__builtin_expect(lock_stats_on, 0))
		lock_stats_taken(m, lock_now_ns(), false, file, line);
	return r;
}

/* Marks a call that may take long (walks a box's files, removes a tree,
 * runs crun or cp): it must not run under a LOCK_NO_SLOW lock. what names
 * it in the message. */
static inline void lock_assert_no_slow(const char *what)
{
#ifdef PD_LOCK_CHECK
	lock_check_slow(what);
#else
	(void)what;
#endif
}

/* The contract "m held" of a function, checked. */
static inline void lock_assert_held(const struct pd_mutex *m)
{
#ifdef PD_LOCK_CHECK
	lock_check_must_hold(m);
#else
	(void)m;
#endif
}
