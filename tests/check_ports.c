/* check_ports.c - a box's published ports (common/ports.h): the list's
 * parser and canonical text, every refusal leaving the output untouched,
 * and the preview host form's parser with hostile Host headers. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check-tap.h"
#include "common/config.h"
#include "common/parse.h"
#include "common/ports.h"

static void expect_canonical(const char *text, const char *want)
{
	struct port_list l;
	pd_error err = {0};
	char buf[PORTS_TEXT_MAX];

	ck_assert_msg(ports_parse(text, strlen(text), &l, &err) == 0, "\"%s\": %s", text, err.msg);
	ck_assert_uint_eq(ports_format(&l, buf, sizeof buf), strlen(want));
	ck_assert_str_eq(buf, want);
}

static void expect_refused(const char *text, size_t len, const char *msg)
{
	struct port_list l = {.n = 99};
	pd_error err = {0};

	ck_assert_int_eq(ports_parse(text, len, &l, &err), -EINVAL);
	ck_assert_int_eq(err.code, -EINVAL);
	ck_assert_msg(strstr(err.msg, msg) != NULL, "\"%s\": got \"%s\", want \"%s\"", text,
		      err.msg, msg);
	ck_assert_uint_eq(l.n, 99); /* untouched */
}

START_TEST(test_canonical)
{
	expect_canonical("", "");
	expect_canonical("\n\n  \n", "");
	expect_canonical("8080", "8080\n");
	expect_canonical("8080\n", "8080\n");
	expect_canonical("3000 public\n8080\n", "3000 public\n8080\n");
	expect_canonical("8080\r\n  3000\tpublic  \r\n\n1\n65535 public",
			 "1\n3000 public\n8080\n65535 public\n");
}
END_TEST

START_TEST(test_find)
{
	struct port_list l;
	pd_error err = {0};
	const struct port_entry *p;

	ck_assert_int_eq(ports_parse("8080\n3000 public\n", 17, &l, &err), 0);
	ck_assert_uint_eq(l.n, 2);
	p = ports_find(&l, 3000);
	ck_assert_ptr_nonnull(p);
	ck_assert(p->public);
	p = ports_find(&l, 8080);
	ck_assert_ptr_nonnull(p);
	ck_assert(!p->public);
	ck_assert_ptr_null(ports_find(&l, 8081));
	ck_assert_ptr_null(ports_find(&l, 0));
}
END_TEST

START_TEST(test_refused)
{
	expect_refused("0\n", 2, "line 1: \"0\" is not a port");
	expect_refused("65536\n", 6, "\"65536\" is not a port");
	expect_refused("99999999999999999999\n", 21, "is not a port");
	expect_refused("080\n", 4, "\"080\" is not a port");
	expect_refused("-1\n", 3, "is not a port");
	expect_refused("+80\n", 4, "is not a port");
	expect_refused("http\n", 5, "\"http\" is not a port");
	expect_refused("8080\nhello\n", 11, "line 2:");
	expect_refused("8080 private\n", 13, "only \"public\" may follow");
	expect_refused("8080 PUBLIC\n", 12, "only \"public\" may follow");
	expect_refused("8080 public yes\n", 16, "more than \"8080 public\"");
	expect_refused("8080\n3000\n8080 public\n", 22, "line 3: port 8080 is listed twice");
	expect_refused("80:81\n", 6, "is not a port");
	expect_refused("8080\0\n", 6, "NUL");
}
END_TEST

START_TEST(test_cap)
{
	char text[PORTS_MAX * 13 + 16];
	size_t off = 0;
	struct port_list l;
	pd_error err = {0};
	char buf[PORTS_TEXT_MAX];

	for (int i = 0; i < PORTS_MAX; i++)
		off += (size_t)snprintf(text + off, sizeof text - off, "%d public\n", 60000 + i);
	ck_assert_int_eq(ports_parse(text, off, &l, &err), 0);
	ck_assert_uint_eq(l.n, PORTS_MAX);
	/* The longest canonical text fits. */
	ck_assert_uint_eq(ports_format(&l, buf, sizeof buf), off);
	snprintf(text + off, sizeof text - off, "1\n");
	expect_refused(text, off + 2, "more than 64 ports");
}
END_TEST

static int host(const char *h, char *box, unsigned *port)
{
	return ports_parse_host(h, "preview.test", box, NAME_MAX_LEN + 1, port);
}

START_TEST(test_host)
{
	char box[NAME_MAX_LEN + 1];
	unsigned port = 0;

	ck_assert_int_eq(host("8080-web.preview.test", box, &port), 0);
	ck_assert_str_eq(box, "web");
	ck_assert_uint_eq(port, 8080);
	ck_assert_int_eq(host("3000-My-Box.Preview.TEST:443", box, &port), 0);
	ck_assert_str_eq(box, "my-box");
	ck_assert_uint_eq(port, 3000);
	ck_assert_int_eq(host("1-a.b.preview.test", box, &port), 0);
	ck_assert_str_eq(box, "a.b");

	/* Not preview requests at all: the API's own host. */
	ck_assert_int_eq(host("preview.test", box, &port), -ENOENT);
	ck_assert_int_eq(host("localhost:8080", box, &port), -ENOENT);
	ck_assert_int_eq(host("127.0.0.1", box, &port), -ENOENT);
	ck_assert_int_eq(host("[::1]:80", box, &port), -ENOENT);
	ck_assert_int_eq(host("8080-web.preview.test.evil.org", box, &port), -ENOENT);
	ck_assert_int_eq(host("8080-web.xpreview.test", box, &port), -ENOENT);
	ck_assert_int_eq(host("8080-web.preview.test.", box, &port), -ENOENT);
	ck_assert_int_eq(ports_parse_host("8080-web.preview.test", "", box, sizeof box, &port),
			 -ENOENT);
	ck_assert_int_eq(ports_parse_host(NULL, "preview.test", box, sizeof box, &port), -ENOENT);

	/* Under the domain but malformed. */
	ck_assert_int_eq(host("web.preview.test", box, &port), -EINVAL);
	ck_assert_int_eq(host("-web.preview.test", box, &port), -EINVAL);
	ck_assert_int_eq(host("0-web.preview.test", box, &port), -EINVAL);
	ck_assert_int_eq(host("08080-web.preview.test", box, &port), -EINVAL);
	ck_assert_int_eq(host("65536-web.preview.test", box, &port), -EINVAL);
	ck_assert_int_eq(host("8080-.preview.test", box, &port), -EINVAL);
	ck_assert_int_eq(host("8080-.hidden.preview.test", box, &port), -EINVAL);
	ck_assert_int_eq(host("8080web.preview.test", box, &port), -EINVAL);
	ck_assert_int_eq(host("8080-web.preview.test:x", box, &port), -EINVAL);
	ck_assert_int_eq(host("8080-web/../x.preview.test", box, &port), -EINVAL);
	ck_assert_int_eq(host("8080-we b.preview.test", box, &port), -EINVAL);
	ck_assert_int_eq(host("8080-web%2e.preview.test", box, &port), -EINVAL);
	ck_assert_int_eq(host("8080-web@other.preview.test", box, &port), -EINVAL);
	char longh[400];
	memset(longh, 'a', sizeof longh);
	memcpy(longh, "80-", 3);
	snprintf(longh + 300, sizeof longh - 300, ".preview.test");
	ck_assert_int_eq(host(longh, box, &port), -EINVAL);
	port = 7;
	ck_assert_int_eq(host("9-"
			      "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
			      ".preview.test",
			      box, &port),
			 -EINVAL); /* a name longer than NAME_MAX_LEN */
}
END_TEST

static void expect_url(const char *listen, const char *pub, const char *domain, const char *want)
{
	struct pd_config c = {
	    .listen = (char *)listen, .public_url = (char *)pub, .preview_domain = (char *)domain};
	char buf[256];

	ck_assert_int_eq(ports_url(&c, "web", 8080, buf, sizeof buf), (int)strlen(want));
	ck_assert_str_eq(buf, want);
}

START_TEST(test_url)
{
	expect_url("127.0.0.1:7860", NULL, NULL, "http://127.0.0.1:7860/v1/ports/web/8080/");
	expect_url("127.0.0.1:0", NULL, NULL, "/v1/ports/web/8080/");
	expect_url("none", NULL, NULL, "/v1/ports/web/8080/");
	expect_url("127.0.0.1:7860", "https://pd.example.org/", NULL,
		   "https://pd.example.org/v1/ports/web/8080/");
	expect_url("127.0.0.1:7860", NULL, "preview.test", "http://8080-web.preview.test:7860/");
	expect_url("127.0.0.1:0", NULL, "preview.test", "http://8080-web.preview.test/");
	expect_url("127.0.0.1:7860", "https://pd.example.org", "p.example.org",
		   "https://8080-web.p.example.org/");
	expect_url("127.0.0.1:7860", "http://[::1]:8443/x", "p.example.org",
		   "http://8080-web.p.example.org:8443/");

	struct pd_config c = {.listen = (char *)"none"};
	char small[8];
	ck_assert_int_eq(ports_url(&c, "web", 8080, small, sizeof small), -ENOSPC);
}
END_TEST

static Suite *ports_suite(void)
{
	Suite *s = suite_create("ports");
	TCase *tc = tcase_create("list");

	tcase_add_test(tc, test_canonical);
	tcase_add_test(tc, test_find);
	tcase_add_test(tc, test_refused);
	tcase_add_test(tc, test_cap);
	suite_add_tcase(s, tc);
	tc = tcase_create("host");
	tcase_add_test(tc, test_host);
	tcase_add_test(tc, test_url);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_tap_run(ports_suite());
}
