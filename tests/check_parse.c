/* check_parse.c - names, control-file writes, numbers, sizes, CPUs, TTLs. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check-tap.h"
#include "common/parse.h"

#define NAME_63 "abcdefghij0123456789abcdefghij0123456789abcdefghij0123456789abc"
#define NAME_64 NAME_63 "d"

/* ---- names ---- */

START_TEST(test_name_valid)
{
	static const char *const good[] = {
	    "a",       "0",	 "box1", "my-box", "my_box", "my.box",
	    "a.b-c_d", "9lives", "a-",	 "a.",	   NAME_63,
	};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		ck_assert_msg(name_valid(good[i]), "\"%s\" should be valid", good[i]);
	ck_assert_uint_eq(strlen(NAME_63), NAME_MAX_LEN);
}
END_TEST

START_TEST(test_name_invalid)
{
	static const char *const bad[] = {
	    "",	  "Box",  "bOx",	  "BOX",      ".a",	   "-a",	  "_a",
	    ".",  "..",	  "a/b",	  "/a",	      "a/",	   "a b",	  " a",
	    "a ", "a\n",  "a\t",	  "\xc3\xa9", "a\xc3\xa9", "caf\xc3\xa9", "a:b",
	    "a*", "a\\b", "\xe2\x98\x83", "a@b",      "~a",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(!name_valid(bad[i]), "\"%s\" should be invalid", bad[i]);
	ck_assert(!name_valid(NULL));
	ck_assert_uint_eq(strlen(NAME_64), NAME_MAX_LEN + 1);
	ck_assert(!name_valid(NAME_64));
}
END_TEST

START_TEST(test_name_nul_ends_it)
{
	/* A C string stops at NUL: what follows is never looked at. Control
	 * writes with a NUL byte are refused earlier, by value_from_write(). */
	static const char buf[] = "box\0Bad!";
	char out[NAME_MAX_LEN + 1];

	ck_assert(name_valid(buf));
	ck_assert_int_eq(value_from_write(buf, sizeof(buf) - 1, NAME_MAX_LEN, out, sizeof(out)),
			 -EINVAL);
}
END_TEST

/* ---- value_from_write ---- */

static int vfw(const char *buf, size_t len, size_t max, char *out, size_t outsz)
{
	return value_from_write(buf, len, max, out, outsz);
}

#define VFW_OK(lit, want)                                                                          \
	do {                                                                                       \
		char out_[64];                                                                     \
		ck_assert_int_eq(vfw(lit, sizeof(lit) - 1, 32, out_, sizeof(out_)), 0);            \
		ck_assert_str_eq(out_, want);                                                      \
	} while (0)

#define VFW_BAD(lit)                                                                               \
	do {                                                                                       \
		char out_[64] = "untouched";                                                       \
		ck_assert_int_eq(vfw(lit, sizeof(lit) - 1, 32, out_, sizeof(out_)), -EINVAL);      \
		ck_assert_str_eq(out_, "untouched");                                               \
	} while (0)

START_TEST(test_value_newlines)
{
	VFW_OK("running\n", "running");
	VFW_OK("running\r\n", "running");
	VFW_OK("running", "running");
	VFW_OK("a", "a");
	VFW_OK("two words\n", "two words");
	VFW_OK(" padded \n", " padded ");
}
END_TEST

START_TEST(test_utf8)
{
	ck_assert(utf8_valid("", 0));
	ck_assert(utf8_valid("plain", 5));
	ck_assert(utf8_valid("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 14));
	ck_assert(!utf8_valid("\xc3", 1));	       /* cut short */
	ck_assert(!utf8_valid("\xc0\xaf", 2));	       /* overlong '/' */
	ck_assert(!utf8_valid("\xed\xa0\x80", 3));     /* a surrogate */
	ck_assert(!utf8_valid("\xf4\x90\x80\x80", 4)); /* above U+10FFFF */
	ck_assert(!utf8_valid("\xff", 1));
}
END_TEST

static void expect_sanitized(const char *in, size_t len, size_t outsz, const char *want)
{
	char out[256];
	size_t n = text_sanitize(in, len, out, outsz);

	ck_assert_str_eq(out, want);
	ck_assert_uint_eq(n, strlen(want));
	ck_assert(utf8_valid(out, n));
}

START_TEST(test_sanitize)
{
	expect_sanitized("no change", 9, 256, "no change");
	expect_sanitized("caf\xc3\xa9", 5, 256, "caf\xc3\xa9");
	/* ESC, NUL, newline, DEL and C1 controls are escaped */
	expect_sanitized("a\x1b[31mb", 7, 256, "a\\x1b[31mb");
	expect_sanitized("x\0y\nz\x7f", 6, 256, "x\\x00y\\x0az\\x7f");
	expect_sanitized("\xc2\x85", 2, 256, "\\xc2\\x85");
	/* bytes that are no UTF-8 are escaped one by one */
	expect_sanitized("bad \xff\xc3(", 7, 256, "bad \\xff\\xc3(");
	expect_sanitized("\xed\xa0\x80", 3, 256, "\\xed\\xa0\\x80");
	/* a character that does not fit is left out whole */
	expect_sanitized("ab\xe2\x82\xac", 5, 5, "ab");
	expect_sanitized("ab\x01", 3, 6, "ab");
	expect_sanitized("ab\x01", 3, 7, "ab\\x01");
	expect_sanitized("abc", 3, 1, "");
	/* the backslash itself is escaped: no two inputs look alike */
	expect_sanitized("a\\b", 3, 256, "a\\x5cb");
	expect_sanitized("\xff", 1, 256, "\\xff");
	expect_sanitized("\\xff", 4, 256, "\\x5cxff");
	expect_sanitized("\\x5c", 4, 256, "\\x5cx5c");
	expect_sanitized("ab\\", 3, 6, "ab");
}
END_TEST

/* Undoes text_sanitize(): "\xHH" is the byte HH, anything else itself. */
static size_t unsanitize(const char *s, char *out)
{
	size_t o = 0;

	while (*s) {
		unsigned v;
		if (s[0] == '\\' && s[1] == 'x' && sscanf(s + 2, "%2x", &v) == 1) {
			out[o++] = (char)v;
			s += 4;
		} else
			out[o++] = *s++;
	}
	return o;
}

START_TEST(test_sanitize_injective)
{
	/* Every string of up to 3 bytes from an alphabet of the bytes that
	 * matter (escape material, a control byte, bytes that are not UTF-8,
	 * the halves of a UTF-8 character) is sanitized to text that gives it
	 * back: no two inputs share their text. */
	static const char alphabet[] = {'\\', 'x',    'f',    '5',    'c',
					'\0', '\x01', '\xff', '\xc3', '\xa9'};
	const size_t na = sizeof(alphabet);
	char in[3], out[64], back[64];

	for (size_t len = 0; len <= 3; len++) {
		size_t total = 1;
		for (size_t i = 0; i < len; i++)
			total *= na;
		for (size_t k = 0; k < total; k++) {
			size_t x = k;
			for (size_t i = 0; i < len; i++, x /= na)
				in[i] = alphabet[x % na];
			size_t n = text_sanitize(in, len, out, sizeof(out));
			ck_assert(utf8_valid(out, n));
			ck_assert_uint_eq(unsanitize(out, back), len);
			ck_assert_mem_eq(back, in, len);
		}
	}
}
END_TEST

START_TEST(test_printable)
{
	char out[256], again[256];
	static const char hostile[] = "a\\b \\xff \xff\x1b[2J\xc2\x85";

	/* text_sanitize() but the backslash passes */
	size_t n = text_printable(hostile, sizeof(hostile) - 1, out, sizeof(out));
	ck_assert_str_eq(out, "a\\b \\xff \\xff\\x1b[2J\\xc2\\x85");
	ck_assert_uint_eq(n, strlen(out));
	/* text already printable comes back unchanged */
	ck_assert_uint_eq(text_printable(out, n, again, sizeof(again)), n);
	ck_assert_str_eq(again, out);
	ck_assert_uint_eq(text_printable("ab\x01", 3, out, 6), 2);
	ck_assert_str_eq(out, "ab");
}
END_TEST

START_TEST(test_value_refused)
{
	char out[64] = "untouched";

	VFW_BAD("");
	VFW_BAD("\n");
	VFW_BAD("\r\n");
	VFW_BAD("\n\n");
	VFW_BAD("a\n\n");
	VFW_BAD("a\nb");
	VFW_BAD("a\nb\n");
	VFW_BAD("\nrunning");
	VFW_BAD("run\0ning\n");
	VFW_BAD("\0");
	VFW_BAD("running\0");
	ck_assert_int_eq(vfw(NULL, 0, 32, out, sizeof(out)), -EINVAL);
	ck_assert_int_eq(vfw(NULL, 3, 32, out, sizeof(out)), -EINVAL);
	ck_assert_str_eq(out, "untouched");
}
END_TEST

START_TEST(test_value_max)
{
	char out[9];

	/* Exactly max bytes, with or without the newline, fits. */
	ck_assert_int_eq(vfw("12345678", 8, 8, out, sizeof(out)), 0);
	ck_assert_str_eq(out, "12345678");
	ck_assert_int_eq(vfw("12345678\n", 9, 8, out, sizeof(out)), 0);
	ck_assert_str_eq(out, "12345678");
	ck_assert_int_eq(vfw("12345678\r\n", 10, 8, out, sizeof(out)), 0);
	ck_assert_str_eq(out, "12345678");
	/* One more is refused. */
	ck_assert_int_eq(vfw("123456789", 9, 8, out, sizeof(out)), -EINVAL);
	ck_assert_int_eq(vfw("123456789\n", 10, 8, out, sizeof(out)), -EINVAL);
	/* outsz must leave room for the NUL after max bytes. */
	ck_assert_int_eq(vfw("1", 1, 8, out, 8), -EINVAL);
	ck_assert_int_eq(vfw("1", 1, 0, out, sizeof(out)), -EINVAL);
}
END_TEST

START_TEST(test_value_overlong)
{
	char big[4096];
	char out[NAME_MAX_LEN + 1];

	memset(big, 'a', sizeof(big));
	ck_assert_int_eq(vfw(big, sizeof(big), NAME_MAX_LEN, out, sizeof(out)), -EINVAL);
	ck_assert_int_eq(vfw(big, NAME_MAX_LEN, NAME_MAX_LEN, out, sizeof(out)), 0);
	ck_assert_uint_eq(strlen(out), NAME_MAX_LEN);
}
END_TEST

/* ---- parse_uint64 ---- */

START_TEST(test_uint64_ok)
{
	uint64_t v = 0;

	ck_assert_int_eq(parse_uint64("0", UINT64_MAX, &v), 0);
	ck_assert_uint_eq(v, 0);
	ck_assert_int_eq(parse_uint64("42", UINT64_MAX, &v), 0);
	ck_assert_uint_eq(v, 42);
	ck_assert_int_eq(parse_uint64("007", UINT64_MAX, &v), 0);
	ck_assert_uint_eq(v, 7);
	ck_assert_int_eq(parse_uint64("18446744073709551615", UINT64_MAX, &v), 0);
	ck_assert(v == UINT64_MAX);
	ck_assert_int_eq(parse_uint64("99", 99, &v), 0);
	ck_assert_uint_eq(v, 99);
}
END_TEST

START_TEST(test_uint64_range)
{
	uint64_t v = 1234;

	ck_assert_int_eq(parse_uint64("18446744073709551616", UINT64_MAX, &v), -ERANGE);
	ck_assert_int_eq(parse_uint64("99999999999999999999999999", UINT64_MAX, &v), -ERANGE);
	ck_assert_int_eq(parse_uint64("100", 99, &v), -ERANGE);
	ck_assert_int_eq(parse_uint64("1", 0, &v), -ERANGE);
	ck_assert_uint_eq(v, 1234);
}
END_TEST

START_TEST(test_uint64_garbage)
{
	static const char *const bad[] = {
	    "",
	    "-1",
	    "+1",
	    " 1",
	    "1 ",
	    "1\n",
	    "0x10",
	    "1a",
	    "a1",
	    "1.0",
	    "1e3",
	    "١",
	    "99999999999999999999999x",
	    "-0",
	};
	uint64_t v = 1234;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(parse_uint64(bad[i], UINT64_MAX, &v) == -EINVAL, "\"%s\"", bad[i]);
	ck_assert_int_eq(parse_uint64(NULL, UINT64_MAX, &v), -EINVAL);
	ck_assert_uint_eq(v, 1234);
}
END_TEST

/* ---- sizes ---- */

START_TEST(test_size_ok)
{
	static const struct {
		const char *s;
		uint64_t v;
	} cases[] = {
	    {"0", 0},
	    {"123", 123},
	    {"5B", 5},
	    {"64K", 64ULL << 10},
	    {"64k", 64ULL << 10},
	    {"2M", 2ULL << 20},
	    {"10G", 10ULL << 30},
	    {"1T", 1ULL << 40},
	    {"2GiB", 2ULL << 30},
	    {"2GB", 2ULL << 30},
	    {"512MiB", 512ULL << 20},
	    {"1KB", 1024},
	    {"18446744073709551615", UINT64_MAX},
	    {"16777215T", 16777215ULL << 40},
	    {"0G", 0},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t v = 1;
		ck_assert_msg(parse_size(cases[i].s, &v) == 0, "\"%s\"", cases[i].s);
		ck_assert_msg(v == cases[i].v, "\"%s\" gave %llu", cases[i].s,
			      (unsigned long long)v);
	}
}
END_TEST

START_TEST(test_size_range)
{
	uint64_t v = 1234;

	ck_assert_int_eq(parse_size("16777216T", &v), -ERANGE);
	ck_assert_int_eq(parse_size("18446744073709551616", &v), -ERANGE);
	ck_assert_int_eq(parse_size("17179869184G", &v), -ERANGE);
	ck_assert_int_eq(parse_size("99999999999999999999G", &v), -ERANGE);
	ck_assert_uint_eq(v, 1234);
}
END_TEST

START_TEST(test_size_garbage)
{
	static const char *const bad[] = {
	    "",	     "G",
	    "B",     "iB",
	    "2X",    "2 G",
	    " 2G",   "2G ",
	    "2G\n",  "2iB",
	    "2GiBB", "2Gi",
	    "2Gb",   "2gib",
	    "-1",    "-1G",
	    "+1G",   "1.5G",
	    "2KM",   "0x10",
	    "2P",    "2E",
	    "G2",    "2GB ",
	    "2 ",    "99999999999999999999Q",
	};
	uint64_t v = 1234;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(parse_size(bad[i], &v) == -EINVAL, "\"%s\"", bad[i]);
	ck_assert_int_eq(parse_size(NULL, &v), -EINVAL);
	ck_assert_uint_eq(v, 1234);
}
END_TEST

START_TEST(test_size_format)
{
	static const struct {
		uint64_t v;
		const char *s;
	} cases[] = {
	    {0, "0"},
	    {1, "1"},
	    {1000, "1000"},
	    {1023, "1023"},
	    {1024, "1K"},
	    {1536, "1536"},
	    {3072, "3K"},
	    {512ULL << 20, "512M"},
	    {1025ULL << 20, "1025M"},
	    {2ULL << 30, "2G"},
	    {10ULL << 30, "10G"},
	    {1ULL << 40, "1T"},
	    {1024ULL << 40, "1024T"},
	    {16777215ULL << 40, "16777215T"},
	    {UINT64_MAX, "18446744073709551615"},
	};
	char buf[32];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		format_size(cases[i].v, buf, sizeof(buf));
		ck_assert_str_eq(buf, cases[i].s);
	}
}
END_TEST

START_TEST(test_size_round_trip)
{
	char buf[32];
	uint64_t v;

	for (unsigned shift = 0; shift < 64; shift++) {
		for (uint64_t m = 1; m <= 3; m++) {
			uint64_t x = m << shift;
			if (shift > 0 && x >> shift != m)
				continue; /* shifted out */
			format_size(x, buf, sizeof(buf));
			ck_assert_int_eq(parse_size(buf, &v), 0);
			ck_assert_msg(v == x, "%s", buf);
		}
	}
	format_size(UINT64_MAX, buf, sizeof(buf));
	ck_assert_int_eq(parse_size(buf, &v), 0);
	ck_assert(v == UINT64_MAX);
}
END_TEST

START_TEST(test_size_format_small_buffer)
{
	char buf[4] = "xxx";

	format_size(10ULL << 30, buf, 2);
	ck_assert_str_eq(buf, "1");
	format_size(123456, buf, sizeof(buf));
	ck_assert_str_eq(buf, "123");
	format_size(1, buf, 0); /* nothing written */
	ck_assert_str_eq(buf, "123");
}
END_TEST

/* ---- CPUs ---- */

START_TEST(test_cpus_ok)
{
	static const struct {
		const char *s;
		unsigned m;
	} cases[] = {
	    {"1", 1000},       {"0.5", 500},	      {"2.25", 2250},	     {"0.001", 1},
	    {"0.010", 10},     {"1.0", 1000},	      {"1.000", 1000},	     {"4", 4000},
	    {"1024", 1024000}, {"1024.000", 1024000}, {"1023.999", 1023999}, {"01", 1000},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		unsigned m = 7;
		ck_assert_msg(parse_cpus(cases[i].s, &m) == 0, "\"%s\"", cases[i].s);
		ck_assert_uint_eq(m, cases[i].m);
	}
}
END_TEST

START_TEST(test_cpus_refused)
{
	static const struct {
		const char *s;
		int r;
	} cases[] = {
	    {"0", -ERANGE},	   {"0.0", -ERANGE},
	    {"0.000", -ERANGE},	   {"1025", -ERANGE},
	    {"1024.001", -ERANGE}, {"99999999999999999999999", -ERANGE},
	    {"0.0001", -EINVAL},   {"1.2345", -EINVAL},
	    {"", -EINVAL},	   {".5", -EINVAL},
	    {"1.", -EINVAL},	   {"-1", -EINVAL},
	    {"+1", -EINVAL},	   {"1,5", -EINVAL},
	    {" 1", -EINVAL},	   {"1 ", -EINVAL},
	    {"1e3", -EINVAL},	   {"1..5", -EINVAL},
	    {"1.5.", -EINVAL},	   {"one", -EINVAL},
	    {"2cpus", -EINVAL},	   {"99999999999999999999999x", -EINVAL},
	};
	unsigned m = 7;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		ck_assert_msg(parse_cpus(cases[i].s, &m) == cases[i].r, "\"%s\"", cases[i].s);
	ck_assert_int_eq(parse_cpus(NULL, &m), -EINVAL);
	ck_assert_uint_eq(m, 7);
}
END_TEST

START_TEST(test_cpus_format)
{
	static const struct {
		unsigned m;
		const char *s;
	} cases[] = {
	    {1000, "1"},    {500, "0.5"},      {2250, "2.25"}, {1, "0.001"}, {10, "0.01"},
	    {1010, "1.01"}, {1024000, "1024"}, {4000, "4"},    {0, "0"},     {123456, "123.456"},
	};
	char buf[32];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		format_cpus(cases[i].m, buf, sizeof(buf));
		ck_assert_str_eq(buf, cases[i].s);
	}
}
END_TEST

START_TEST(test_cpus_round_trip)
{
	char buf[32];

	for (unsigned m = 1; m <= 1024000; m++) {
		unsigned back = 0;
		format_cpus(m, buf, sizeof(buf));
		if (parse_cpus(buf, &back) != 0 || back != m)
			ck_abort_msg("%u -> \"%s\" -> %u", m, buf, back);
	}
}
END_TEST

/* ---- TTLs ---- */

START_TEST(test_ttl_ok)
{
	static const struct {
		const char *s;
		int64_t v;
	} cases[] = {
	    {"3600", 3600},
	    {"30s", 30},
	    {"15m", 900},
	    {"2h", 7200},
	    {"1d", 86400},
	    {"0", 0},
	    {"0s", 0},
	    {"none", -1},
	    {"3650d", 315360000},
	    {"87600h", 315360000},
	    {"315360000", 315360000},
	    {"5256000m", 315360000},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int64_t v = 7;
		ck_assert_msg(parse_ttl(cases[i].s, &v) == 0, "\"%s\"", cases[i].s);
		ck_assert_int_eq(v, cases[i].v);
	}
}
END_TEST

START_TEST(test_ttl_refused)
{
	static const struct {
		const char *s;
		int r;
	} cases[] = {
	    {"3651d", -ERANGE},
	    {"315360001", -ERANGE},
	    {"87601h", -ERANGE},
	    {"99999999999999999999999d", -ERANGE},
	    {"18446744073709551615", -ERANGE},
	    {"", -EINVAL},
	    {"None", -EINVAL},
	    {"NONE", -EINVAL},
	    {"none\n", -EINVAL},
	    {"never", -EINVAL},
	    {"-1", -EINVAL},
	    {"-5s", -EINVAL},
	    {"1w", -EINVAL},
	    {"1 h", -EINVAL},
	    {" 1h", -EINVAL},
	    {"1h ", -EINVAL},
	    {"1hh", -EINVAL},
	    {"1H", -EINVAL},
	    {"h", -EINVAL},
	    {"1.5h", -EINVAL},
	    {"1h30m", -EINVAL},
	    {"0x10", -EINVAL},
	};
	int64_t v = 7;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		ck_assert_msg(parse_ttl(cases[i].s, &v) == cases[i].r, "\"%s\"", cases[i].s);
	ck_assert_int_eq(parse_ttl(NULL, &v), -EINVAL);
	ck_assert_int_eq(v, 7);
}
END_TEST

/* ---- time ---- */

START_TEST(test_rfc3339)
{
	char buf[21];

	format_rfc3339(0, buf, sizeof(buf));
	ck_assert_str_eq(buf, "1970-01-01T00:00:00Z");
	format_rfc3339(1795992000, buf, sizeof(buf));
	ck_assert_str_eq(buf, "2026-11-29T22:40:00Z");
	format_rfc3339(951782400, buf, sizeof(buf)); /* a leap day */
	ck_assert_str_eq(buf, "2000-02-29T00:00:00Z");
	format_rfc3339(1795992000, buf, 10); /* too small: empty, not cut */
	ck_assert_str_eq(buf, "");
}
END_TEST

/* A list of valid values for an error text: whole names only, ", ..."
 * when one does not fit, never past the buffer. */
START_TEST(test_text_list)
{
	char buf[16];
	size_t len = 0;

	buf[0] = '\0';
	ck_assert(text_list_add(buf, sizeof buf, &len, "a"));
	ck_assert(text_list_add(buf, sizeof buf, &len, "bb"));
	ck_assert_str_eq(buf, "a, bb");
	ck_assert_uint_eq(len, 5);
	ck_assert(!text_list_add(buf, sizeof buf, &len, "cccccc"));
	ck_assert_str_eq(buf, "a, bb, ...");
	ck_assert_uint_eq(len, strlen(buf));

	len = 0;
	buf[0] = '\0';
	ck_assert(!text_list_add(buf, sizeof buf, &len, "a-name-too-long-to-fit"));
	ck_assert_str_eq(buf, "...");
}
END_TEST

static Suite *parse_suite(void)
{
	Suite *s = suite_create("parse");
	TCase *tc;

	tc = tcase_create("core");
	tcase_add_test(tc, test_name_valid);
	tcase_add_test(tc, test_value_newlines);
	tcase_add_test(tc, test_uint64_ok);
	tcase_add_test(tc, test_size_ok);
	tcase_add_test(tc, test_size_format);
	tcase_add_test(tc, test_size_round_trip);
	tcase_add_test(tc, test_cpus_ok);
	tcase_add_test(tc, test_cpus_format);
	tcase_add_test(tc, test_cpus_round_trip);
	tcase_add_test(tc, test_ttl_ok);
	tcase_add_test(tc, test_rfc3339);
	suite_add_tcase(s, tc);

	tc = tcase_create("limits");
	tcase_add_test(tc, test_value_max);
	tcase_add_test(tc, test_value_overlong);
	tcase_add_test(tc, test_uint64_range);
	tcase_add_test(tc, test_size_range);
	tcase_add_test(tc, test_size_format_small_buffer);
	tcase_add_test(tc, test_text_list);
	suite_add_tcase(s, tc);

	tc = tcase_create("errors");
	tcase_add_test(tc, test_name_invalid);
	tcase_add_test(tc, test_name_nul_ends_it);
	tcase_add_test(tc, test_value_refused);
	tcase_add_test(tc, test_utf8);
	tcase_add_test(tc, test_sanitize);
	tcase_add_test(tc, test_sanitize_injective);
	tcase_add_test(tc, test_printable);
	tcase_add_test(tc, test_uint64_garbage);
	tcase_add_test(tc, test_size_garbage);
	tcase_add_test(tc, test_cpus_refused);
	tcase_add_test(tc, test_ttl_refused);
	suite_add_tcase(s, tc);

	return s;
}

int main(void)
{
	return check_tap_run(parse_suite());
}
