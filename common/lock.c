/* lock.c - the lock order check (lock.h). Each thread keeps the locks it
 * holds in a small thread-local list; nothing here takes a lock. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
