/* check_metrics.c - the text of the metrics' histograms (engine/metrics.h):
 * buckets cumulative and in order, +Inf equal to _count, the sum in
 * seconds, labels joined with le, and the head only when asked. The
 * scrape as a whole, against a daemon: tests/integration/test-metrics.sh. */
#include <string.h>

#include "check-tap.h"
#include "common/buf.h"
#include "engine/metrics.h"

START_TEST(histogram_plain)
{
	static const double bounds[] = {0.1, 1, 2.5};
	const unsigned long long counts[] = {2, 0, 3, 1}; /* the last: above 2.5 s */
	_cleanup_pd_buf_ struct pd_buf out = {0};

	ck_assert_int_eq(metrics_write_histogram(&out, "x_seconds", "What it is.", "", true, bounds,
						 3, counts, 12345678ULL),
			 0);
	ck_assert_str_eq(out.data, "# HELP x_seconds What it is.\n"
				   "# TYPE x_seconds histogram\n"
				   "x_seconds_bucket{le=\"0.1\"} 2\n"
				   "x_seconds_bucket{le=\"1\"} 2\n"
				   "x_seconds_bucket{le=\"2.5\"} 5\n"
				   "x_seconds_bucket{le=\"+Inf\"} 6\n"
				   "x_seconds_sum 12.345678\n"
				   "x_seconds_count 6\n");
}
END_TEST

START_TEST(histogram_labels)
{
	static const double bounds[] = {0.005};
	const unsigned long long counts[] = {0, 0};
	_cleanup_pd_buf_ struct pd_buf out = {0};

	ck_assert_int_eq(
	    metrics_write_histogram(&out, "j", "h", "kind=\"exec\"", false, bounds, 1, counts, 0),
	    0);
	ck_assert_str_eq(out.data, "j_bucket{kind=\"exec\",le=\"0.005\"} 0\n"
				   "j_bucket{kind=\"exec\",le=\"+Inf\"} 0\n"
				   "j_sum{kind=\"exec\"} 0.000000\n"
				   "j_count{kind=\"exec\"} 0\n");
}
END_TEST

START_TEST(histogram_capped)
{
	static const double bounds[] = {1};
	const unsigned long long counts[] = {1, 1};
	struct pd_buf out = {.max = 40};

	/* A buffer that cannot hold it all: a failure, never a cut text. */
	ck_assert_int_eq(metrics_write_histogram(&out, "long_name_seconds", "help", "", true,
						 bounds, 1, counts, 1),
			 -ENOMEM);
	pd_buf_free(&out);
}
END_TEST

START_TEST(buckets_as_documented)
{
	static const double box[] = {METRICS_BOX_START_BUCKETS};
	static const double job[] = {METRICS_JOB_START_BUCKETS};

	for (size_t i = 1; i < sizeof box / sizeof *box; i++)
		ck_assert(box[i] > box[i - 1]);
	for (size_t i = 1; i < sizeof job / sizeof *job; i++)
		ck_assert(job[i] > job[i - 1]);
	ck_assert(box[0] == 0.1 && box[sizeof box / sizeof *box - 1] == 60);
	ck_assert(job[0] == 0.005 && job[sizeof job / sizeof *job - 1] == 10);
}
END_TEST

static Suite *metrics_suite(void)
{
	Suite *s = suite_create("metrics");
	TCase *tc = tcase_create("text");

	tcase_add_test(tc, histogram_plain);
	tcase_add_test(tc, histogram_labels);
	tcase_add_test(tc, histogram_capped);
	tcase_add_test(tc, buckets_as_documented);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_tap_run(metrics_suite());
}
