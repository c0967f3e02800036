/* check_cgroup.c - reading a box's cgroup (on a made-up cgroup tree, v1 and
 * v2 layouts) and the recent CPU use computed from samples of it. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "runtime/cgroup.h"
#include "check-tap.h"
#include "common/util.h"

#define S 1000000ULL /* a second, in microseconds */

/* ---- core ---- */

/* A box on one full CPU: 100; on half of one: 50; on two: 200. */
START_TEST(test_percent_busy)
{
	struct cgroup_cpu_window w = {0};

	for (uint64_t t = 0; t <= 6; t++)
		cgroup_cpu_add(&w, 1000 * S + t * S, t * S);
	ck_assert_uint_eq(cgroup_cpu_percent(&w, 5 * S, S, 1006 * S + S / 2, 6 * S + S / 2), 100);

	memset(&w, 0, sizeof w);
	for (uint64_t t = 0; t <= 6; t++)
		cgroup_cpu_add(&w, t * S, t * S / 2);
	ck_assert_uint_eq(cgroup_cpu_percent(&w, 5 * S, S, 6 * S, 3 * S), 50);

	memset(&w, 0, sizeof w);
	for (uint64_t t = 0; t <= 6; t++)
		cgroup_cpu_add(&w, t * S, 2 * t * S);
	ck_assert_uint_eq(cgroup_cpu_percent(&w, 5 * S, S, 6 * S, 12 * S), 200);
}
END_TEST

START_TEST(test_percent_idle)
{
	struct cgroup_cpu_window w = {0};

	for (uint64_t t = 0; t <= 10; t++)
		cgroup_cpu_add(&w, t * S, 1234);
	ck_assert_uint_eq(cgroup_cpu_percent(&w, 5 * S, S, 10 * S, 1234), 0);
}
END_TEST

/* Only the last window counts: a box that spun and then went idle reads
 * 0 once the spinning is more than a window old. */
START_TEST(test_percent_recent_only)
{
	struct cgroup_cpu_window w = {0};
	uint64_t cpu = 0;

	for (uint64_t t = 0; t <= 20; t++) {
		cgroup_cpu_add(&w, t * S, cpu);
		if (t < 10)
			cpu += S; /* busy for 10 s, then idle */
	}
	ck_assert_uint_eq(cgroup_cpu_percent(&w, 5 * S, S, 20 * S, cpu), 0);
	/* 3 of the last 5 s busy (7 to 10). */
	memset(&w, 0, sizeof w);
	cpu = 0;
	for (uint64_t t = 0; t <= 12; t++) {
		cgroup_cpu_add(&w, t * S, cpu);
		if (t < 10)
			cpu += S;
	}
	ck_assert_uint_eq(cgroup_cpu_percent(&w, 5 * S, S, 12 * S, cpu), 60);
}
END_TEST

/* The base is the newest sample at least the window old: with samples a
 * second apart, the window is 5 to 6 s. */
START_TEST(test_percent_base)
{
	struct cgroup_cpu_window w = {0};

	/* Busy only from 4.5 s to 5 s; samples at 0..5. Read at 10.5: the
	 * base is the sample at 5 (5.5 s old), which already holds it. */
	cgroup_cpu_add(&w, 0, 0);
	for (uint64_t t = 1; t <= 5; t++)
		cgroup_cpu_add(&w, t * S, t == 5 ? S / 2 : 0);
	for (uint64_t t = 6; t <= 10; t++)
		cgroup_cpu_add(&w, t * S, S / 2);
	ck_assert_uint_eq(cgroup_cpu_percent(&w, 5 * S, S, 10 * S + S / 2, S / 2), 0);
	/* Read at 9.9: the base is the sample at 4 (5.9 s old). */
	ck_assert_uint_eq(cgroup_cpu_percent(&w, 5 * S, S, 9 * S + 9 * S / 10, S / 2),
			  (unsigned)((S / 2 * 100 + 59 * S / 20) / (59 * S / 10)));
}
END_TEST

/* ---- limits ---- */

/* A box younger than the window: the oldest sample, once a second old. */
START_TEST(test_percent_young)
{
	struct cgroup_cpu_window w = {0};

	ck_assert_uint_eq(cgroup_cpu_percent(&w, 5 * S, S, 10 * S, 5 * S), 0);
	cgroup_cpu_add(&w, 10 * S, 0);
	ck_assert_uint_eq(cgroup_cpu_percent(&w, 5 * S, S, 10 * S + S / 2, S / 2), 0);
	ck_assert_uint_eq(cgroup_cpu_percent(&w, 5 * S, S, 12 * S, 2 * S), 100);
	cgroup_cpu_add(&w, 11 * S, S);
	ck_assert_uint_eq(cgroup_cpu_percent(&w, 5 * S, S, 13 * S, 2 * S), 67);
}
END_TEST

/* The ring keeps the last CGROUP_CPU_SAMPLES; older ones are gone. */
START_TEST(test_ring_wraps)
{
	struct cgroup_cpu_window w = {0};

	for (uint64_t t = 0; t < 100; t++)
		cgroup_cpu_add(&w, t * S, t < 90 ? 0 : (t - 89) * S);
	ck_assert_uint_eq(w.n, CGROUP_CPU_SAMPLES);
	/* Window far longer than the ring: the oldest kept sample (t = 92). */
	ck_assert_uint_eq(cgroup_cpu_percent(&w, 60 * S, S, 99 * S, 10 * S), 100);
}
END_TEST

/* ---- errors ---- */

/* A counter that goes back (the box was started again: a new cgroup)
 * starts the window over; a read below the base gives 0, never a wrap. */
START_TEST(test_counter_back)
{
	struct cgroup_cpu_window w = {0};

	for (uint64_t t = 0; t <= 6; t++)
		cgroup_cpu_add(&w, t * S, 100 * S + t * S);
	ck_assert_uint_eq(cgroup_cpu_percent(&w, 5 * S, S, 7 * S, 10 * S), 0);
	cgroup_cpu_add(&w, 7 * S, 0);
	ck_assert_uint_eq(w.n, 1);
	ck_assert_uint_eq(cgroup_cpu_percent(&w, 5 * S, S, 8 * S, S), 100);
}
END_TEST

/* Samples from the future (a clock read before another thread's sample)
 * are skipped, not taken for a negative age. */
START_TEST(test_sample_after_now)
{
	struct cgroup_cpu_window w = {0};

	cgroup_cpu_add(&w, 0, 0);
	cgroup_cpu_add(&w, 5 * S, 5 * S);
	ck_assert_uint_eq(cgroup_cpu_percent(&w, 5 * S, S, 4 * S, 4 * S), 100);
}
END_TEST

/* ---- reading a cgroup tree ---- */

static char root[64];

static void put(const char *rel, const char *text)
{
	char p[256];

	snprintf(p, sizeof p, "%s/%s", root, rel);
	ck_assert_int_eq(write_file_atomic(p, text, strlen(text), 0644), 0);
}

static void setup(void)
{
	snprintf(root, sizeof root, "/tmp/check-cgroup.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(root));
}

static void teardown(void)
{
	(void)rm_rf(root);
}

START_TEST(test_read_v1)
{
	struct cgroup_usage u;
	char p[256];

	for (const char *c = "cpuacct\0memory\0pids\0"; *c; c += strlen(c) + 1) {
		snprintf(p, sizeof p, "%s/%s/paddock/web", root, c);
		ck_assert_int_eq(mkdir_p(p, 0755), 0);
	}
	put("cpuacct/paddock/web/cpuacct.usage", "2500000000\n");
	put("memory/paddock/web/memory.usage_in_bytes", "4096\n");
	put("pids/paddock/web/pids.current", "3\n");
	ck_assert_int_eq(cgroup_read_usage(root, CGROUP_HYBRID, "/paddock/web", &u), 0);
	ck_assert_uint_eq(u.cpu_usec, 2500000);
	ck_assert_uint_eq(u.memory_bytes, 4096);
	ck_assert_uint_eq(u.pids, 3);
	ck_assert_int_eq(cgroup_read_usage(root, CGROUP_LEGACY, "/paddock/gone", &u), -ENOENT);
}
END_TEST

START_TEST(test_read_v2)
{
	struct cgroup_usage u;
	char p[256];

	snprintf(p, sizeof p, "%s/paddock/web", root);
	ck_assert_int_eq(mkdir_p(p, 0755), 0);
	put("paddock/web/cpu.stat", "usage_usec 1500\nuser_usec 1000\nsystem_usec 500\n");
	put("paddock/web/memory.current", "8192\n");
	ck_assert_int_eq(cgroup_read_usage(root, CGROUP_UNIFIED, "/paddock/web", &u), 0);
	ck_assert_uint_eq(u.cpu_usec, 1500);
	ck_assert_uint_eq(u.memory_bytes, 8192);
	ck_assert_uint_eq(u.pids, 0); /* a missing file counts as 0 */
}
END_TEST

static Suite *cgroup_suite(void)
{
	Suite *s = suite_create("cgroup");
	TCase *tc;

	tc = tcase_create("core");
	tcase_add_test(tc, test_percent_busy);
	tcase_add_test(tc, test_percent_idle);
	tcase_add_test(tc, test_percent_recent_only);
	tcase_add_test(tc, test_percent_base);
	suite_add_tcase(s, tc);

	tc = tcase_create("limits");
	tcase_add_test(tc, test_percent_young);
	tcase_add_test(tc, test_ring_wraps);
	suite_add_tcase(s, tc);

	tc = tcase_create("errors");
	tcase_add_test(tc, test_counter_back);
	tcase_add_test(tc, test_sample_after_now);
	suite_add_tcase(s, tc);

	tc = tcase_create("read");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_read_v1);
	tcase_add_test(tc, test_read_v2);
	suite_add_tcase(s, tc);

	return s;
}

int main(void)
{
	return check_tap_run(cgroup_suite());
}
