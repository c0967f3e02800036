/* lock.h - the daemon's locks, the order they nest in, and a check of that
 * order in debug builds.
 *
 * The hierarchy, outermost first. A thread that holds a lock may take only
 * locks of a higher rank; two locks of one rank never nest. Locks marked
 * [checked] are struct pd_mutex and checked when the build has
 * PD_LOCK_CHECK (configure --enable-lock-check, on with
 * --enable-sanitizers); the others are plain mutexes whose place is kept by
 * their code and recorded here.
 *
 *  LOCK_RANK_FUSE_PARK    the FUSE adapter's park_lock (fs/fuse-adapter.c):
 *                         a parked read is retried under it, which calls
 *                         the tree and so takes the engine lock.
 *  LOCK_RANK_ENGINE       [checked] e->lock: the box table, jobs, volumes,
 *                         snapshot export marks, the boxes' looked-up
 *                         names and the store connection. No slow work
 *                         under it (see lock_assert_no_slow()): disk walks,
 *                         rm_rf, cp, crun, archive streams and waits for a
 *                         box all run outside it, on a box marked busy or
 *                         with its own in-flight mark (engine-internal.h).
 *  LOCK_RANK_ENGINE_WAKE  [checked] e->wake_lock: held while the wake
 *                         listeners run; taken under e->lock (an event
 *                         appended by eng_emit() wakes its readers) and
 *                         alone.
 *                         auth's hooks_lock (auth.c) has this rank too:
 *                         held while the revocation listeners run, never
 *                         with e->lock.
 *  LOCK_RANK_LISTENER     what a wake or revocation listener takes in its
 *                         callback: the FUSE adapter's wake_lock, the HTTP
 *                         adapter's park_lock (its parked streams and its
 *                         requests by token). Nothing is taken under
 *                         them.
 *  LOCK_RANK_LEAF         held around a few lines that take no other lock:
 *                         the nftables context (net-nft.c, taken under
 *                         e->lock), auth's lock (auth.c: the tokens and
 *                         their own store connection; never under
 *                         e->lock), the DNS resolver's tcp_lock (dns.c), an
 *                         export stream's lock (export.c: its wake and
 *                         release callbacks run with it dropped), the
 *                         tree's lock (fs/tree.c: temp files), and the
 *                         HTTP adapter's (web/http.c): the queue locks of
 *                         its two pools (workers, login threads), its
 *                         conn_lock (the connections and their count per
 *                         address: on_accept, conn_started, conn_closed,
 *                         conn_set_deadline, sweep_deadlines) and its
 *                         request locks. Its park_lock is a listener's
 *                         (above) and is never held with these.
 *
 * The volumes have no lock of their own (e->lock guards their table), and
 * neither do boxes: an action marks its box busy under e->lock and works
 * outside it; a disk walk marks the box walking (engine.c). Condition
 * waits (the TTL timer, readers of a walk) release e->lock while they
 * wait.
 */
#pragma once

#include <pthread.h>
#include <stdbool.h>

#include "autoconfig.h"

enum lock_rank {
	LOCK_RANK_FUSE_PARK = 10,
	LOCK_RANK_ENGINE = 20,
	LOCK_RANK_ENGINE_WAKE = 30,
	LOCK_RANK_LISTENER = 40,
	LOCK_RANK_LEAF = 50,
};

/* Flags of a lock. LOCK_NO_SLOW: lock_assert_no_slow() fails while it is
 * held. */
#define LOCK_NO_SLOW 1u

struct pd_mutex {
	pthread_mutex_t m;
	enum lock_rank rank;
	unsigned flags;
	const char *name; /* in the check's messages; static storage */
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

static inline void pd_mutex_lock(struct pd_mutex *m)
{
#ifdef PD_LOCK_CHECK
	lock_check_take(m);
#endif
	pthread_mutex_lock(&m->m);
#ifdef PD_LOCK_CHECK
	lock_check_taken(m);
#endif
}

static inline void pd_mutex_unlock(struct pd_mutex *m)
{
#ifdef PD_LOCK_CHECK
	lock_check_release(m);
#endif
	pthread_mutex_unlock(&m->m);
}

/* Waits on cond, releasing m meanwhile. m stays recorded as held: the
 * thread takes nothing else while it waits. */
static inline int pd_cond_wait(pthread_cond_t *cond, struct pd_mutex *m)
{
	return pthread_cond_wait(cond, &m->m);
}

static inline int pd_cond_timedwait(pthread_cond_t *cond, struct pd_mutex *m,
				    const struct timespec *abstime)
{
	return pthread_cond_timedwait(cond, &m->m, abstime);
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
