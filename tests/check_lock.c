/* check_lock.c - the lock order check (lock.h): locks taken in rank order
 * pass, an inversion, a lock taken twice, two locks of one rank and slow
 * work under the engine lock abort with a message naming the locks. A
 * mutex of static storage (PD_MUTEX_INITIALIZER) is checked the same. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "autoconfig.h"
#ifdef PD_LOCK_CHECK
/* The library (rm_rf, du_tree) was built with the check too. */
#define LIBRARY_CHECKED 1
#endif
/* This file's wrappers always check, whatever the build. */
#ifndef PD_LOCK_CHECK
#define PD_LOCK_CHECK 1
#endif

#include "check-tap.h"
#include "common/lock.h"
#include "common/util.h"

static struct pd_mutex engine, wake, listener, leaf, leaf2, outer;
/* Like the nftables context's lock (net-nft.c). */
static struct pd_mutex static_leaf =
    PD_MUTEX_INITIALIZER(LOCK_RANK_LEAF, LOCK_NO_SLOW, "static leaf");

static void setup(void)
{
	pd_mutex_init(&outer, LOCK_RANK_FUSE_PARK, 0, "park");
	pd_mutex_init(&engine, LOCK_RANK_ENGINE, LOCK_NO_SLOW, "engine");
	pd_mutex_init(&wake, LOCK_RANK_ENGINE_WAKE, 0, "wake");
	pd_mutex_init(&listener, LOCK_RANK_LISTENER, LOCK_NO_SLOW, "listener");
	pd_mutex_init(&leaf, LOCK_RANK_LEAF, 0, "leaf one");
	pd_mutex_init(&leaf2, LOCK_RANK_LEAF, 0, "leaf two");
}

/* --- core: the allowed orders --------------------------------------------- */

START_TEST(test_in_order)
{
	pd_mutex_lock(&outer);
	pd_mutex_lock(&engine);
	pd_mutex_lock(&wake);
	pd_mutex_lock(&leaf);
	lock_assert_held(&engine);
	lock_assert_held(&leaf);
	/* Released in any order. */
	pd_mutex_unlock(&engine);
	pd_mutex_unlock(&leaf);
	pd_mutex_unlock(&outer);
	pd_mutex_unlock(&wake);
	/* Everything released: any order again, one at a time. */
	pd_mutex_lock(&leaf);
	pd_mutex_unlock(&leaf);
	pd_mutex_lock(&engine);
	pd_mutex_unlock(&engine);
}
END_TEST

START_TEST(test_skip_ranks)
{
	/* Ranks need not be consecutive: engine straight to a leaf. */
	pd_mutex_lock(&engine);
	pd_mutex_lock(&leaf);
	pd_mutex_unlock(&leaf);
	pd_mutex_lock(&leaf2);
	pd_mutex_unlock(&leaf2);
	pd_mutex_unlock(&engine);
}
END_TEST

START_TEST(test_slow_allowed)
{
	/* Slow work under a lock without LOCK_NO_SLOW, and under none. */
	lock_assert_no_slow("a walk");
	pd_mutex_lock(&wake);
	lock_assert_no_slow("a walk");
	pd_mutex_unlock(&wake);
	pd_mutex_lock(&engine);
	pd_mutex_unlock(&engine);
	lock_assert_no_slow("a walk");
}
END_TEST

START_TEST(test_listener_under_wake)
{
	/* A wake or revocation listener's lock, taken in its callback under
	 * the engine's wake_lock (or auth's hooks_lock), itself under the
	 * engine lock. */
	pd_mutex_lock(&engine);
	pd_mutex_lock(&wake);
	pd_mutex_lock(&listener);
	pd_mutex_unlock(&listener);
	pd_mutex_unlock(&wake);
	pd_mutex_unlock(&engine);
}
END_TEST

START_TEST(test_static_in_order)
{
	pd_mutex_lock(&engine);
	pd_mutex_lock(&static_leaf);
	lock_assert_held(&static_leaf);
	pd_mutex_unlock(&static_leaf);
	pd_mutex_unlock(&engine);
	pd_mutex_lock(&static_leaf);
	pd_mutex_unlock(&static_leaf);
}
END_TEST

static void *hold_engine(void *arg)
{
	(void)arg;
	pd_mutex_lock(&engine);
	pd_mutex_lock(&leaf);
	pd_mutex_unlock(&leaf);
	pd_mutex_unlock(&engine);
	return NULL;
}

START_TEST(test_per_thread)
{
	pthread_t t;

	/* What one thread holds does not constrain another. */
	pd_mutex_lock(&wake);
	ck_assert_int_eq(pthread_create(&t, NULL, hold_engine, NULL), 0);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	pd_mutex_unlock(&wake);
}
END_TEST

START_TEST(test_cond_wait)
{
	pthread_cond_t c = PTHREAD_COND_INITIALIZER;
	struct timespec ts;

	/* A wait releases and takes the lock back; it stays recorded. */
	clock_gettime(CLOCK_REALTIME, &ts);
	pd_mutex_lock(&engine);
	ck_assert_int_eq(pd_cond_timedwait(&c, &engine, &ts), ETIMEDOUT);
	lock_assert_held(&engine);
	pd_mutex_lock(&wake);
	pd_mutex_unlock(&wake);
	pd_mutex_unlock(&engine);
}
END_TEST

/* --- errors: each aborts (SIGABRT) ------------------------------------------ */

START_TEST(test_inversion_aborts)
{
	pd_mutex_lock(&wake);
	pd_mutex_lock(&engine); /* engine under wake: inverted */
}
END_TEST

START_TEST(test_outer_under_engine_aborts)
{
	pd_mutex_lock(&engine);
	pd_mutex_lock(&outer);
}
END_TEST

START_TEST(test_same_rank_aborts)
{
	pd_mutex_lock(&leaf);
	pd_mutex_lock(&leaf2);
}
END_TEST

START_TEST(test_listener_under_leaf_aborts)
{
	pd_mutex_lock(&leaf);
	pd_mutex_lock(&listener);
}
END_TEST

START_TEST(test_static_under_leaf_aborts)
{
	/* Its rank came with the initializer. */
	pd_mutex_lock(&leaf);
	pd_mutex_lock(&static_leaf);
}
END_TEST

START_TEST(test_slow_under_static_aborts)
{
	/* So did its flags. */
	pd_mutex_lock(&static_leaf);
	lock_assert_no_slow("a walk");
}
END_TEST

START_TEST(test_twice_aborts)
{
	/* Found before the second lock would deadlock. */
	pd_mutex_lock(&engine);
	pd_mutex_lock(&engine);
}
END_TEST

START_TEST(test_release_unheld_aborts)
{
	pd_mutex_unlock(&leaf);
}
END_TEST

START_TEST(test_assert_held_aborts)
{
	pd_mutex_lock(&wake);
	lock_assert_held(&engine);
}
END_TEST

START_TEST(test_slow_under_engine_aborts)
{
	pd_mutex_lock(&engine);
	pd_mutex_lock(&leaf);
	lock_assert_no_slow("a walk");
}
END_TEST

#ifdef LIBRARY_CHECKED
START_TEST(test_rm_rf_under_engine_aborts)
{
	/* It aborts before it looks at the path: none is made (the test
	 * ends in the abort, so nothing it made could be removed). */
	pd_mutex_lock(&engine);
	(void)rm_rf("/nonexistent/check_lock");
}
END_TEST

START_TEST(test_du_under_engine_aborts)
{
	uint64_t n;

	pd_mutex_lock(&engine);
	(void)du_tree("/tmp", &n);
}
END_TEST
#endif

/* The message names both locks and their ranks. */
START_TEST(test_message)
{
	int p[2];
	char buf[1024] = "";
	ssize_t n, got = 0;
	int status;
	pid_t pid;

	ck_assert_int_eq(pipe(p), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		dup2(p[1], STDERR_FILENO);
		pd_mutex_lock(&engine);
		pd_mutex_lock(&wake);
		pd_mutex_lock(&engine);
		_exit(0);
	}
	close(p[1]);
	while ((n = read(p[0], buf + got, sizeof buf - 1 - (size_t)got)) > 0)
		got += n;
	close(p[0]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
	ck_assert_ptr_nonnull(strstr(buf, "engine (rank 20) taken twice"));
	ck_assert_ptr_nonnull(strstr(buf, "held, innermost last: engine (rank 20) wake (rank 30)"));
}
END_TEST

/* --- statistics (PADDOCK_LOCK_STATS) --------------------------------------- */

static char stat_lines[8][512];
static unsigned n_stat_lines;

static void collect(const char *line)
{
	if (n_stat_lines < 8)
		snprintf(stat_lines[n_stat_lines++], sizeof stat_lines[0], "%s", line);
}

static const char *stat_line(const char *needle)
{
	for (unsigned i = 0; i < n_stat_lines; i++)
		if (strstr(stat_lines[i], needle))
			return stat_lines[i];
	return NULL;
}

static void *hold_a_moment(void *arg)
{
	struct pd_mutex *m = arg;

	pd_mutex_lock(m);
	usleep(20 * 1000);
	pd_mutex_unlock(m);
	return NULL;
}

/* Off: nothing counted, nothing dumped. */
START_TEST(test_stats_off)
{
	n_stat_lines = 0;
	pd_mutex_lock(&leaf);
	pd_mutex_unlock(&leaf);
	lock_stats_dump(collect);
	ck_assert_uint_eq(n_stat_lines, 0);
}
END_TEST

/* Takes, waits and holds are counted per name; a hold of 1 ms or more is
 * also counted where it was taken (this file and line); a condition wait
 * does not count as holding. */
START_TEST(test_stats_counted)
{
	pthread_t t;
	pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
	struct timespec until;
	const char *l;
	int line;

	lock_stats_enable();
	n_stat_lines = 0;
	for (int i = 0; i < 3; i++) {
		pd_mutex_lock(&leaf2);
		pd_mutex_unlock(&leaf2);
	}
	/* Another thread holds leaf 20 ms; we wait for it. */
	ck_assert_int_eq(pthread_create(&t, NULL, hold_a_moment, &leaf), 0);
	usleep(5 * 1000);
	pd_mutex_lock(&leaf);
	pd_mutex_unlock(&leaf);
	pthread_join(t, NULL);
	/* Held 2 ms at a known line. */
	line = __LINE__ + 1;
	pd_mutex_lock(&leaf2);
	usleep(2000);
	pd_mutex_unlock(&leaf2);
	/* 50 ms in a condition wait: not a hold. */
	pd_mutex_lock(&leaf);
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_nsec += 50 * 1000 * 1000;
	if (until.tv_nsec >= 1000000000) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000;
	}
	(void)pd_cond_timedwait(&cond, &leaf, &until);
	pd_mutex_unlock(&leaf);

	lock_stats_dump(collect);
	l = stat_line("lock stats: leaf two:");
	ck_assert_msg(l, "no line for leaf two");
	ck_assert_msg(strstr(l, "taken 4, waited 0"), "%s", l);
	l = stat_line("lock stats: leaf one:");
	ck_assert_msg(l, "no line for leaf one");
	ck_assert_msg(strstr(l, "waited 1"), "%s", l);
	{
		/* The longest hold of leaf one is the other thread's 20 ms,
		 * not the 50 ms condition wait. */
		unsigned long long max_us = 0;
		const char *p = strstr(l, "held");
		ck_assert_ptr_nonnull(p);
		p = strstr(p, "max ");
		ck_assert_ptr_nonnull(p);
		max_us = strtoull(p + 4, NULL, 10);
		ck_assert_msg(max_us >= 19000 && max_us < 45000, "%s", l);
	}
	{
		char where[128];
		snprintf(where, sizeof where, "leaf two taken at %s:%d: 1 holds", __FILE__, line);
		ck_assert_msg(stat_line(where), "no long-hold line \"%s\"", where);
	}
}
END_TEST

static Suite *lock_suite(void)
{
	Suite *s = suite_create("lock");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, test_in_order);
	tcase_add_test(tc, test_skip_ranks);
	tcase_add_test(tc, test_slow_allowed);
	tcase_add_test(tc, test_listener_under_wake);
	tcase_add_test(tc, test_static_in_order);
	tcase_add_test(tc, test_per_thread);
	tcase_add_test(tc, test_cond_wait);
	tcase_add_test(tc, test_message);
	tcase_add_test(tc, test_stats_off);
	tcase_add_test(tc, test_stats_counted);
	suite_add_tcase(s, tc);

	tc = tcase_create("errors");
	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test_raise_signal(tc, test_inversion_aborts, SIGABRT);
	tcase_add_test_raise_signal(tc, test_outer_under_engine_aborts, SIGABRT);
	tcase_add_test_raise_signal(tc, test_same_rank_aborts, SIGABRT);
	tcase_add_test_raise_signal(tc, test_listener_under_leaf_aborts, SIGABRT);
	tcase_add_test_raise_signal(tc, test_static_under_leaf_aborts, SIGABRT);
	tcase_add_test_raise_signal(tc, test_slow_under_static_aborts, SIGABRT);
	tcase_add_test_raise_signal(tc, test_twice_aborts, SIGABRT);
	tcase_add_test_raise_signal(tc, test_release_unheld_aborts, SIGABRT);
	tcase_add_test_raise_signal(tc, test_assert_held_aborts, SIGABRT);
	tcase_add_test_raise_signal(tc, test_slow_under_engine_aborts, SIGABRT);
#ifdef LIBRARY_CHECKED
	tcase_add_test_raise_signal(tc, test_rm_rf_under_engine_aborts, SIGABRT);
	tcase_add_test_raise_signal(tc, test_du_under_engine_aborts, SIGABRT);
#endif
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
#ifdef LIBRARY_CHECKED
	return check_tap_run(lock_suite());
#else
	static const char *const skipped[] = {"test_rm_rf_under_engine_aborts",
					      "test_du_under_engine_aborts"};
	return check_tap_run_skipping(lock_suite(), skipped, 2,
				      "the library is built without the lock check "
				      "(--enable-lock-check)");
#endif
}
