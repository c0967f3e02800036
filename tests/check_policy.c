/* check_policy.c - the network policy parser: modes, entries, canonical
 * text, name matching, and every refusal with its line number. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check-tap.h"
#include "net/policy.h"

static int parse(const char *text, struct policy *p, pd_error *err)
{
	pd_error_clear(err);
	return policy_parse(text, strlen(text), p, err);
}

static void expect_refused(const char *text, const char *msg)
{
	struct policy p = {.mode = POLICY_DENY_ALL};
	pd_error err;

	ck_assert_int_eq(parse(text, &p, &err), -EINVAL);
	ck_assert_int_eq(err.code, -EINVAL);
	ck_assert_msg(strstr(err.msg, msg) != NULL, "\"%s\": got \"%s\", want \"%s\"", text,
		      err.msg, msg);
	/* Untouched on failure. */
	ck_assert_int_eq(p.mode, POLICY_DENY_ALL);
	ck_assert_ptr_null(p.entries);
}

static void expect_canonical(const char *text, const char *want)
{
	struct policy p;
	pd_error err;
	char *out = NULL;

	ck_assert_int_eq(parse(text, &p, &err), 0);
	ck_assert_int_eq(policy_format(&p, &out), (int)strlen(want));
	ck_assert_str_eq(out, want);
	free(out);
	policy_release(&p);
}

/* ---- core ---- */

START_TEST(test_modes)
{
	struct policy p;
	pd_error err;

	ck_assert_int_eq(parse("allow-all", &p, &err), 0);
	ck_assert_int_eq(p.mode, POLICY_ALLOW_ALL);
	ck_assert_uint_eq(p.n_entries, 0);
	policy_release(&p);
	ck_assert_int_eq(parse("deny-all\n", &p, &err), 0);
	ck_assert_int_eq(p.mode, POLICY_DENY_ALL);
	policy_release(&p);
	ck_assert_int_eq(parse("  allow-all \r\n\n", &p, &err), 0);
	ck_assert_int_eq(p.mode, POLICY_ALLOW_ALL);
	policy_release(&p);
}
END_TEST

START_TEST(test_allowlist_entries)
{
	struct policy p;
	pd_error err;

	ck_assert_int_eq(parse("allowlist\napi.Example.ORG\n*.example.net\n10.20.0.0/16\n"
			       "192.168.1.7\n",
			       &p, &err),
			 0);
	ck_assert_int_eq(p.mode, POLICY_ALLOWLIST);
	ck_assert_uint_eq(p.n_entries, 4);
	ck_assert_int_eq(p.entries[0].kind, POLICY_DOMAIN);
	ck_assert_str_eq(p.entries[0].domain, "api.example.org");
	ck_assert_int_eq(p.entries[1].kind, POLICY_WILDCARD);
	ck_assert_str_eq(p.entries[1].domain, "example.net");
	ck_assert_int_eq(p.entries[2].kind, POLICY_CIDR);
	ck_assert_uint_eq(p.entries[2].addr, 0x0a140000);
	ck_assert_uint_eq(p.entries[2].prefix, 16);
	ck_assert_uint_eq(p.entries[3].addr, 0xc0a80107);
	ck_assert_uint_eq(p.entries[3].prefix, 32);
	policy_release(&p);
}
END_TEST

START_TEST(test_canonical)
{
	expect_canonical("allow-all", "allow-all\n");
	expect_canonical("# comment\n\ndeny-all\n# more\n", "deny-all\n");
	expect_canonical("allowlist\n  Pkgs.Example.ORG  \n\n*.x.example.net\n0.0.0.0/0\n1.2.3.4\n",
			 "allowlist\npkgs.example.org\n*.x.example.net\n0.0.0.0/0\n1.2.3.4/32\n");
	/* The canonical text parses to itself. */
	expect_canonical("allowlist\npkgs.example.org\n*.x.example.net\n0.0.0.0/0\n1.2.3.4/32\n",
			 "allowlist\npkgs.example.org\n*.x.example.net\n0.0.0.0/0\n1.2.3.4/32\n");
}
END_TEST

START_TEST(test_names)
{
	struct policy p;
	pd_error err;

	ck_assert_int_eq(parse("allowlist\napi.example.com\n*.example.net\n", &p, &err), 0);
	ck_assert(policy_allows_name(&p, "api.example.com"));
	ck_assert(!policy_allows_name(&p, "example.com"));
	ck_assert(!policy_allows_name(&p, "x.api.example.com"));
	ck_assert(policy_allows_name(&p, "raw.example.net"));
	ck_assert(policy_allows_name(&p, "a.b.example.net"));
	/* A label holding an escaped dot is not a name under example.net. */
	ck_assert(!policy_allows_name(&p, "evil\\.raw.example.net"));
	ck_assert(!policy_allows_name(&p, "evil\\046raw.example.net"));
	ck_assert(!policy_allows_name(&p, "a b.example.net"));
	/* "*." means subdomains only, and on a label boundary. */
	ck_assert(!policy_allows_name(&p, "example.net"));
	ck_assert(!policy_allows_name(&p, "evilexample.net"));
	policy_release(&p);

	ck_assert_int_eq(parse("deny-all", &p, &err), 0);
	ck_assert(!policy_allows_name(&p, "api.example.com"));
	policy_release(&p);
	ck_assert_int_eq(parse("allow-all", &p, &err), 0);
	ck_assert(policy_allows_name(&p, "anything.example"));
	policy_release(&p);
}
END_TEST

/* ---- agent presets ---- */

START_TEST(test_presets)
{
	struct policy p;
	pd_error err;
	char *out = NULL;

	ck_assert_int_eq(parse("allowlist\nexample.org\n\n@claude\n@my-agent_2\n", &p, &err), 0);
	ck_assert_uint_eq(p.n_entries, 3);
	ck_assert_int_eq(p.entries[1].kind, POLICY_PRESET);
	ck_assert_str_eq(p.entries[1].domain, "claude");
	ck_assert_int_eq(p.entries[1].line, 4);
	ck_assert_int_eq(p.entries[2].line, 5);
	/* A preset alone allows no name until it is expanded. */
	ck_assert(!policy_allows_name(&p, "claude"));
	ck_assert(!policy_allows_host(&p, "model.test"));
	/* Expanded hosts match, and never show in the canonical text. */
	ck_assert_int_eq(policy_add_expanded(&p, "model.test"), 0);
	ck_assert_int_eq(policy_add_expanded(&p, "10.9.8.7"), 0);
	ck_assert_int_eq(policy_add_expanded(&p, "*.evil.test"), -EINVAL);
	ck_assert_int_eq(policy_add_expanded(&p, "10.0.0.0/8"), -EINVAL);
	ck_assert_int_eq(policy_add_expanded(&p, "not a host"), -EINVAL);
	ck_assert_uint_eq(p.n_entries, 5);
	ck_assert(p.entries[3].expanded && p.entries[4].expanded);
	ck_assert(policy_allows_name(&p, "model.test"));
	ck_assert(policy_allows_host(&p, "model.test"));
	ck_assert(policy_allows_host(&p, "10.9.8.7"));
	ck_assert(!policy_allows_host(&p, "10.9.8.8"));
	ck_assert(!policy_allows_host(&p, "other.test"));
	ck_assert(policy_allows_host(&p, "example.org"));
	ck_assert_int_eq(policy_format(&p, &out),
			 (int)strlen("allowlist\nexample.org\n@claude\n@my-agent_2\n"));
	ck_assert_str_eq(out, "allowlist\nexample.org\n@claude\n@my-agent_2\n");
	free(out);
	policy_release(&p);

	/* The canonical text parses to itself. */
	expect_canonical("allowlist\n  @codex  \n", "allowlist\n@codex\n");
	/* Hosts under other modes. */
	ck_assert_int_eq(parse("deny-all", &p, &err), 0);
	ck_assert(!policy_allows_host(&p, "10.9.8.7"));
	policy_release(&p);
	ck_assert_int_eq(parse("allow-all", &p, &err), 0);
	ck_assert(policy_allows_host(&p, "10.9.8.7"));
	policy_release(&p);

	expect_refused("allowlist\n@\n", "line 2: \"@\": an agent preset is @ and an agent id");
	expect_refused("allowlist\n@Claude\n", "line 2: \"@Claude\": an agent preset");
	expect_refused("allowlist\n@a/b\n", "line 2: \"@a/b\": an agent preset");
	expect_refused("deny-all\n@claude\n", "line 2: deny-all takes no entries");
}
END_TEST

/* ---- limits ---- */

static char *allowlist_of(size_t n)
{
	size_t cap = 16 + n * 24;
	char *s = malloc(cap), *w = s;

	w += sprintf(w, "allowlist\n");
	for (size_t i = 0; i < n; i++)
		w += sprintf(w, "10.%zu.%zu.0/24\n", i / 256, i % 256);
	return s;
}

START_TEST(test_max_entries)
{
	struct policy p;
	pd_error err;
	char *text = allowlist_of(POLICY_MAX_ENTRIES);

	ck_assert_int_eq(parse(text, &p, &err), 0);
	ck_assert_uint_eq(p.n_entries, POLICY_MAX_ENTRIES);
	policy_release(&p);
	free(text);

	text = allowlist_of(POLICY_MAX_ENTRIES + 1);
	expect_refused(text, "line 1002: more than 1000 entries");
	free(text);
}
END_TEST

START_TEST(test_domain_lengths)
{
	char text[600], label[70];
	struct policy p;
	pd_error err;

	memset(label, 'a', 63);
	label[63] = '\0';
	snprintf(text, sizeof text, "allowlist\n%s.com\n", label);
	ck_assert_int_eq(parse(text, &p, &err), 0);
	policy_release(&p);
	memset(label, 'a', 64);
	label[64] = '\0';
	snprintf(text, sizeof text, "allowlist\n%s.com\n", label);
	expect_refused(text, "line 2:");
	/* 4 x 63 + 3 dots + ".io" > 253 */
	memset(label, 'a', 63);
	label[63] = '\0';
	snprintf(text, sizeof text, "allowlist\n%s.%s.%s.%s.io\n", label, label, label, label);
	expect_refused(text, "line 2:");
}
END_TEST

/* ---- errors ---- */

START_TEST(test_refused)
{
	expect_refused("", "empty policy");
	expect_refused("\n# only a comment\n", "empty policy");
	expect_refused("allow", "line 1: unknown policy \"allow\"");
	expect_refused("\n\nALLOW-ALL\n", "line 3: unknown policy");
	expect_refused("allowlist\n", "line 1: an allowlist needs at least one entry");
	expect_refused("allowlist\n\n# nothing\n", "an allowlist needs at least one entry");
	expect_refused("deny-all\nexample.com\n", "line 2: deny-all takes no entries");
	expect_refused("allow-all\n10.0.0.0/8\n", "line 2: allow-all takes no entries");
	expect_refused("allowlist\nok.com\n10.0.0.1/8\n", "line 3: \"10.0.0.1/8\": host bits set");
	expect_refused("allowlist\n10.0.0.0/33\n", "line 2: \"10.0.0.0/33\": bad prefix length");
	expect_refused("allowlist\n10.0.0.0/\n", "line 2:");
	expect_refused("allowlist\n10.0.0/8\n", "line 2: \"10.0.0/8\": not an IPv4 address");
	expect_refused("allowlist\n300.1.1.1\n", "line 2:");
	expect_refused("allowlist\nexample\n", "line 2: \"example\": not a domain");
	expect_refused("allowlist\n-x.example.com\n", "line 2:");
	expect_refused("allowlist\nx-.example.com\n", "line 2:");
	expect_refused("allowlist\na..b\n", "line 2:");
	expect_refused("allowlist\nexample.com.\n", "line 2:");
	expect_refused("allowlist\nhttps://example.com\n", "line 2:");
	expect_refused("allowlist\nexa mple.com\n", "line 2:");
	expect_refused("allowlist\n*example.com\n", "line 2: \"*example.com\": a wildcard");
	expect_refused("allowlist\n*.*.example.com\n", "line 2:");
	expect_refused("allowlist\n*\n", "line 2:");
	expect_refused("allowlist\nexample.com/24\n", "line 2:");
}
END_TEST

START_TEST(test_ipv6_refused)
{
	expect_refused("allowlist\nexample.com\n2001:db8::/32\n",
		       "line 3: \"2001:db8::/32\": IPv6 is not supported yet");
	expect_refused("allowlist\n::1\n", "IPv6 is not supported yet");
}
END_TEST

START_TEST(test_nul_refused)
{
	struct policy p;
	pd_error err;

	pd_error_clear(&err);
	ck_assert_int_eq(policy_parse("deny-all\0x", 10, &p, &err), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err.msg, "NUL"));
}
END_TEST

static Suite *policy_suite(void)
{
	Suite *s = suite_create("policy");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_modes);
	tcase_add_test(tc, test_allowlist_entries);
	tcase_add_test(tc, test_canonical);
	tcase_add_test(tc, test_names);
	tcase_add_test(tc, test_presets);
	suite_add_tcase(s, tc);

	tc = tcase_create("limits");
	tcase_add_test(tc, test_max_entries);
	tcase_add_test(tc, test_domain_lengths);
	suite_add_tcase(s, tc);

	tc = tcase_create("errors");
	tcase_add_test(tc, test_refused);
	tcase_add_test(tc, test_ipv6_refused);
	tcase_add_test(tc, test_nul_refused);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_tap_run(policy_suite());
}
