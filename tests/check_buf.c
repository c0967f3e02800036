/* check_buf.c - the growing byte buffer (common/buf.h): appends, text,
 * the cap, handing the bytes out. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "check-tap.h"
#include "common/buf.h"

START_TEST(test_empty)
{
	struct pd_buf b = {0};
	size_t len = 99;
	char *s;

	ck_assert_ptr_null(b.data);
	s = pd_buf_take(&b, &len);
	ck_assert_ptr_nonnull(s);
	ck_assert_str_eq(s, "");
	ck_assert_uint_eq(len, 0);
	free(s);
	pd_buf_free(&b);
	ck_assert_ptr_null(b.data);
}
END_TEST

START_TEST(test_append_grows_and_terminates)
{
	_cleanup_pd_buf_ struct pd_buf b = {0};
	char chunk[100];

	memset(chunk, 'x', sizeof chunk);
	ck_assert_int_eq(pd_buf_append(&b, "ab", 2), 0);
	ck_assert_str_eq(b.data, "ab");
	ck_assert_int_eq(pd_buf_append(&b, "", 0), 0);
	ck_assert_uint_eq(b.len, 2);
	for (int i = 0; i < 1000; i++)
		ck_assert_int_eq(pd_buf_append(&b, chunk, sizeof chunk), 0);
	ck_assert_uint_eq(b.len, 2 + 1000 * sizeof chunk);
	ck_assert_uint_eq(strlen(b.data), b.len);
	ck_assert(b.size > b.len);
	ck_assert(!b.truncated);
	/* Bytes, not only text: a NUL inside is kept and counted. */
	ck_assert_int_eq(pd_buf_append(&b, "a\0b", 3), 0);
	ck_assert_int_eq(memcmp(b.data + b.len - 3, "a\0b", 3), 0);
}
END_TEST

START_TEST(test_printf)
{
	_cleanup_pd_buf_ struct pd_buf b = {0};
	char big[5000];

	ck_assert_int_eq(pd_buf_printf(&b, "%d-%s", 42, "x"), 0);
	ck_assert_str_eq(b.data, "42-x");
	/* Longer than the room the buffer has: a second pass after growing. */
	memset(big, 'y', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	ck_assert_int_eq(pd_buf_printf(&b, "[%s]", big), 0);
	ck_assert_uint_eq(b.len, 4 + 2 + sizeof big - 1);
	ck_assert_uint_eq(strlen(b.data), b.len);
	ck_assert_int_eq(b.data[4], '[');
	ck_assert_int_eq(b.data[b.len - 1], ']');
	ck_assert_int_eq(pd_buf_printf(&b, "%s", ""), 0);
	ck_assert_uint_eq(strlen(b.data), b.len);
}
END_TEST

START_TEST(test_cap_append)
{
	_cleanup_pd_buf_ struct pd_buf b = {.max = 5};

	ck_assert_int_eq(pd_buf_append(&b, "abc", 3), 0);
	ck_assert(!b.truncated);
	/* Keeps what fits, says so. */
	ck_assert_int_eq(pd_buf_append(&b, "defg", 4), -EFBIG);
	ck_assert(b.truncated);
	ck_assert_uint_eq(b.len, 5);
	ck_assert_str_eq(b.data, "abcde");
	/* Full: nothing more gets in, not even through printf. */
	ck_assert_int_eq(pd_buf_append(&b, "h", 1), -EFBIG);
	ck_assert_int_eq(pd_buf_printf(&b, "%d", 7), -EFBIG);
	ck_assert_str_eq(b.data, "abcde");
	ck_assert_int_eq(pd_buf_append(&b, "", 0), 0);
	/* The cap stays for the next use. */
	pd_buf_free(&b);
	ck_assert_uint_eq(b.max, 5);
	ck_assert(!b.truncated);
	ck_assert_int_eq(pd_buf_append(&b, "123456", 6), -EFBIG);
	ck_assert_str_eq(b.data, "12345");
}
END_TEST

START_TEST(test_cap_printf)
{
	_cleanup_pd_buf_ struct pd_buf b = {.max = 8};
	char big[300];

	ck_assert_int_eq(pd_buf_printf(&b, "%s", "abcd"), 0);
	ck_assert_int_eq(pd_buf_printf(&b, "%05d", 42), -EFBIG);
	ck_assert_str_eq(b.data, "abcd0004");
	ck_assert_uint_eq(b.len, 8);
	ck_assert(b.truncated);

	/* A text much longer than the cap on an empty buffer: cut, and no
	 * more than the cap is kept. */
	struct pd_buf c = {.max = 3};
	memset(big, 'z', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	ck_assert_int_eq(pd_buf_printf(&c, "%s", big), -EFBIG);
	ck_assert_str_eq(c.data, "zzz");
	ck_assert_uint_eq(c.len, 3);
	pd_buf_free(&c);
}
END_TEST

START_TEST(test_take)
{
	struct pd_buf b = {.max = 100};
	size_t len = 0;
	char *s;

	ck_assert_int_eq(pd_buf_printf(&b, "hello %s", "there"), 0);
	s = pd_buf_take(&b, &len);
	ck_assert_str_eq(s, "hello there");
	ck_assert_uint_eq(len, 11);
	ck_assert_ptr_null(b.data);
	ck_assert_uint_eq(b.len, 0);
	ck_assert_uint_eq(b.max, 100);
	free(s);
	/* Reusable after a take. */
	ck_assert_int_eq(pd_buf_append(&b, "x", 1), 0);
	s = pd_buf_take(&b, NULL);
	ck_assert_str_eq(s, "x");
	free(s);
}
END_TEST

START_TEST(test_huge_append_refused)
{
	_cleanup_pd_buf_ struct pd_buf b = {0};

	ck_assert_int_eq(pd_buf_append(&b, "ab", 2), 0);
	/* A length that cannot be allocated: -ENOMEM, the buffer unchanged. */
	ck_assert_int_eq(pd_buf_append(&b, "", SIZE_MAX - 1), -ENOMEM);
	ck_assert_str_eq(b.data, "ab");
	ck_assert_uint_eq(b.len, 2);
}
END_TEST

static Suite *buf_suite(void)
{
	Suite *s = suite_create("buf");
	TCase *tc = tcase_create("buf");

	tcase_add_test(tc, test_empty);
	tcase_add_test(tc, test_append_grows_and_terminates);
	tcase_add_test(tc, test_printf);
	tcase_add_test(tc, test_cap_append);
	tcase_add_test(tc, test_cap_printf);
	tcase_add_test(tc, test_take);
	tcase_add_test(tc, test_huge_append_refused);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_tap_run(buf_suite());
}
