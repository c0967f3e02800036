/* check_layers.c - layer stacks, snapshot ids and the choice of garbage. */
#include <check.h>
#include <errno.h>
#include <string.h>

#include "check-tap.h"
#include "layers.h"

START_TEST(test_parse_format)
{
	struct layer_stack s;
	char buf[LAYER_STACK_TEXT_MAX];

	ck_assert_int_eq(layer_stack_parse("", &s), 0);
	ck_assert_uint_eq(s.n, 0);
	ck_assert_int_eq(layer_stack_parse("7,5,2", &s), 0);
	ck_assert_uint_eq(s.n, 3);
	ck_assert_int_eq(s.ids[0], 7);
	ck_assert_int_eq(s.ids[2], 2);
	ck_assert_int_eq(layer_stack_format(&s, buf, sizeof buf), 0);
	ck_assert_str_eq(buf, "7,5,2");
	ck_assert_int_eq(layer_stack_push(&s, 9), 0);
	ck_assert_int_eq(layer_stack_format(&s, buf, sizeof buf), 0);
	ck_assert_str_eq(buf, "9,7,5,2");
	ck_assert(layer_stack_contains(&s, 5));
	ck_assert(!layer_stack_contains(&s, 6));
	ck_assert_int_eq(layer_stack_format(&s, buf, 4), -ENAMETOOLONG);
}
END_TEST

START_TEST(test_parse_errors)
{
	static const char *const bad[] = {
	    ",", "1,", ",1", "1,,2", "a", "0", "01", "1,1", "-3", "1 ,2", "99999999999999999999"};
	struct layer_stack s = {.n = 42};

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		ck_assert_msg(layer_stack_parse(bad[i], &s) == -EINVAL, "accepted \"%s\"", bad[i]);
	ck_assert_uint_eq(s.n, 42); /* untouched on failure */
}
END_TEST

START_TEST(test_depth_limit)
{
	struct layer_stack s = {0};
	char text[LAYER_STACK_TEXT_MAX + 32] = "";

	for (int i = 1; i <= LAYER_STACK_DEPTH_MAX; i++)
		ck_assert_int_eq(layer_stack_push(&s, i), 0);
	ck_assert_int_eq(layer_stack_push(&s, 1000), -ENOSPC);
	ck_assert_int_eq(layer_stack_format(&s, text, LAYER_STACK_TEXT_MAX), 0);
	strcat(text, ",1000");
	ck_assert_int_eq(layer_stack_parse(text, &s), -EINVAL);
	ck_assert_int_eq(layer_stack_push(&(struct layer_stack){0}, 0), -EINVAL);
}
END_TEST

START_TEST(test_snapshot_ids)
{
	char id[64], longname[64];

	ck_assert_int_eq(snapshot_id_make("web", 3, id, sizeof id), 0);
	ck_assert_str_eq(id, "web-3");
	memset(longname, 'a', 63);
	longname[63] = '\0';
	ck_assert_int_eq(snapshot_id_make(longname, 12345, id, sizeof id), 0);
	ck_assert_uint_eq(strlen(id), 63);
	ck_assert_str_eq(id + 57, "-12345");
	ck_assert_int_eq(snapshot_id_make("Bad", 1, id, sizeof id), -EINVAL);
	ck_assert_int_eq(snapshot_id_make("web", 0, id, sizeof id), -EINVAL);
	ck_assert_int_eq(snapshot_id_make("web", 3, id, 4), -ENAMETOOLONG);
}
END_TEST

START_TEST(test_garbage)
{
	const int64_t present[] = {1, 2, 3, 4, 5}, refs[] = {4, 2, 9};
	int64_t out[5];

	ck_assert_uint_eq(layers_select_garbage(present, 5, refs, 3, out), 3);
	ck_assert_int_eq(out[0], 1);
	ck_assert_int_eq(out[1], 3);
	ck_assert_int_eq(out[2], 5);
	ck_assert_uint_eq(layers_select_garbage(present, 5, present, 5, out), 0);
	ck_assert_uint_eq(layers_select_garbage(present, 0, refs, 3, out), 0);
}
END_TEST

START_TEST(test_dir_names)
{
	int64_t id = 0;

	ck_assert_int_eq(layer_dir_id("L12", &id), 0);
	ck_assert_int_eq(id, 12);
	ck_assert_int_eq(layer_dir_id("L12.tmp", &id), -EINVAL);
	ck_assert_int_eq(layer_dir_id("L12.del", &id), -EINVAL);
	ck_assert_int_eq(layer_dir_id("L0", &id), -EINVAL);
	ck_assert_int_eq(layer_dir_id("L", &id), -EINVAL);
	ck_assert_int_eq(layer_dir_id("L1,2", &id), -EINVAL);
	ck_assert_int_eq(layer_dir_id("x12", &id), -EINVAL);
}
END_TEST

static Suite *layers_suite(void)
{
	Suite *s = suite_create("layers");
	TCase *tc = tcase_create("stacks");

	tcase_add_test(tc, test_parse_format);
	tcase_add_test(tc, test_parse_errors);
	tcase_add_test(tc, test_depth_limit);
	suite_add_tcase(s, tc);
	tc = tcase_create("names");
	tcase_add_test(tc, test_snapshot_ids);
	tcase_add_test(tc, test_dir_names);
	tcase_add_test(tc, test_garbage);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_tap_run(layers_suite());
}
