/* check_agents.c - the agent catalogue (engine/agents.h): the images'
 * agents.ini files, the /paddock/agents/ID text, endpoints with and without
 * a configured base_url, and the @ID policy presets' expansion. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check-tap.h"
#include "engine/agents.h"
#include "common/util.h"
#include "runtime/image.h"

static char dir[64];

static void put(const char *image, const char *ini)
{
	char path[256];
	int fd;

	snprintf(path, sizeof path, "%s/%s", dir, image);
	mkdir(path, 0755);
	snprintf(path, sizeof path, "%s/%s/rootfs", dir, image);
	mkdir(path, 0755);
	if (!ini)
		return;
	snprintf(path, sizeof path, "%s/%s/agents.ini", dir, image);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write_all(fd, ini, strlen(ini)), 0);
	close(fd);
}

static void setup(void)
{
	snprintf(dir, sizeof dir, "/tmp/check_agents.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	put("agents", "; as mkimage agents writes it\n"
		      "[claude]\nname = Claude Code\npackage = @anthropic-ai/claude-code\n"
		      "version = 2.1.332\nbin = claude\nsecrets = ANTHROPIC_API_KEY\n"
		      "endpoints = api.anthropic.com statsig.anthropic.com\n"
		      "[codex]\nversion = 0.80.0\nbin = codex\nsecrets = OPENAI_API_KEY\n"
		      "endpoints = api.openai.com\n"
		      "[Bad Id]\nversion = 1\n"
		      "[pi]\nversion = 1.0\nendpoints = not/a/host, *.wild.test\n");
	put("other", "[codex]\nversion = 0.79.0\n");
	put("debian", NULL);			 /* no agents.ini */
	put("broken", "[claude\nversion = x\n"); /* unterminated: skipped */
}

static void teardown(void)
{
	rm_rf(dir);
}

static struct pd_config cfg_with(const char *base_url, const char *model)
{
	struct pd_config c = {0};

	if (base_url || model) {
		snprintf(c.agents[0].name, sizeof c.agents[0].name, "claude");
		c.agents[0].base_url = (char *)base_url;
		c.agents[0].model = (char *)model;
		c.n_agents = 1;
	}
	return c;
}

START_TEST(test_load)
{
	struct agent_catalogue c;
	const struct agent_entry *a;
	char ids[128];
	char **v = NULL;
	size_t n = 0;

	ck_assert_int_eq(agents_load(dir, &c), 0);
	/* Images with a file only, by name; a bad section id left out. */
	ck_assert_uint_eq(c.n, 2);
	ck_assert_str_eq(c.images[0].name, "agents");
	ck_assert_str_eq(c.images[1].name, "other");
	ck_assert_uint_eq(c.images[0].n, 3);
	a = agents_find(&c, "agents", "claude");
	ck_assert_ptr_nonnull(a);
	ck_assert_str_eq(a->version, "2.1.332");
	ck_assert_str_eq(a->secrets, "ANTHROPIC_API_KEY");
	ck_assert_ptr_null(agents_find(&c, "other", "claude"));
	ck_assert_str_eq(agents_find(&c, "other", "codex")->version, "0.79.0");
	ck_assert_str_eq(agents_find(&c, NULL, "codex")->version, "0.80.0");
	ck_assert_str_eq(agents_image_first(&c, "agents")->id, "claude");
	ck_assert_ptr_null(agents_image_first(&c, "debian"));
	agents_ids(&c, "agents", ids, sizeof ids);
	ck_assert_str_eq(ids, "claude, codex, pi");
	agents_ids(&c, "debian", ids, sizeof ids);
	ck_assert_str_eq(ids, "none");
	agents_ids(&c, NULL, ids, sizeof ids);
	ck_assert_str_eq(ids, "claude, codex, pi");
	ck_assert_int_eq(agents_id_list(&c, &v, &n), 0);
	ck_assert_uint_eq(n, 3);
	image_list_free(v, n);
	agents_release(&c);

	/* No images directory at all: an empty catalogue. */
	ck_assert_int_eq(agents_load("/nonexistent/images", &c), 0);
	ck_assert_uint_eq(c.n, 0);
	agents_release(&c);
}
END_TEST

START_TEST(test_format)
{
	struct agent_catalogue c;
	struct pd_config none = cfg_with(NULL, NULL), set = cfg_with("http://m.test:8080", "m1");
	char *text = NULL;

	ck_assert_int_eq(agents_load(dir, &c), 0);
	ck_assert_int_eq(agents_format(&c, &none, "codex", &text), 0);
	ck_assert_str_eq(text, "version 0.80.0\nimages agents other\nsecrets OPENAI_API_KEY\n");
	free(text);
	ck_assert_int_eq(agents_format(&c, &set, "claude", &text), 0);
	ck_assert_str_eq(text, "version 2.1.332\nimages agents\nsecrets ANTHROPIC_API_KEY\n"
			       "base_url http://m.test:8080\nmodel m1\n");
	free(text);
	ck_assert_int_eq(agents_format(&c, &set, "nope", &text), -ENOENT);
	agents_release(&c);
}
END_TEST

START_TEST(test_endpoints)
{
	struct agent_catalogue c;
	struct pd_config none = cfg_with(NULL, NULL), set = cfg_with("https://10.1.2.3/v1", NULL);
	char **h = NULL;

	ck_assert_int_eq(agents_load(dir, &c), 0);
	ck_assert_int_eq(agents_endpoints(&c, &none, "claude", &h), 0);
	ck_assert_str_eq(h[0], "api.anthropic.com");
	ck_assert_str_eq(h[1], "statsig.anthropic.com");
	ck_assert_ptr_null(h[2]);
	strv_free(h);
	/* A configured base_url replaces the catalogue's hosts. */
	ck_assert_int_eq(agents_endpoints(&c, &set, "claude", &h), 0);
	ck_assert_str_eq(h[0], "10.1.2.3");
	ck_assert_ptr_null(h[1]);
	strv_free(h);
	ck_assert_int_eq(agents_endpoints(&c, &none, "nope", &h), -ENOENT);
	agents_release(&c);
}
END_TEST

START_TEST(test_expand)
{
	struct agent_catalogue c;
	struct pd_config none = cfg_with(NULL, NULL),
			 set = cfg_with("http://model.test:8080", NULL);
	struct policy p;
	pd_error err = {0};
	const char *text = "allowlist\nexample.org\n@claude\n@pi\n";
	char *out = NULL;

	ck_assert_int_eq(agents_load(dir, &c), 0);
	ck_assert_int_eq(policy_parse(text, strlen(text), &p, &err), 0);
	ck_assert_int_eq(agents_expand_policy(&c, &none, &p, true, &err), 0);
	ck_assert(policy_allows_host(&p, "api.anthropic.com"));
	ck_assert(policy_allows_host(&p, "statsig.anthropic.com"));
	/* pi's endpoints are no hosts: they allow nothing, not a wildcard. */
	ck_assert(!policy_allows_host(&p, "x.wild.test"));
	ck_assert(!policy_allows_host(&p, "api.openai.com"));
	ck_assert_int_eq(policy_format(&p, &out), (int)strlen(text));
	ck_assert_str_eq(out, text);
	free(out);
	policy_release(&p);

	ck_assert_int_eq(policy_parse(text, strlen(text), &p, &err), 0);
	ck_assert_int_eq(agents_expand_policy(&c, &set, &p, true, &err), 0);
	ck_assert(policy_allows_host(&p, "model.test"));
	ck_assert(!policy_allows_host(&p, "api.anthropic.com"));
	policy_release(&p);

	text = "allowlist\n# models\n@claude\n\n@gone\n";
	ck_assert_int_eq(policy_parse(text, strlen(text), &p, &err), 0);
	ck_assert_int_eq(agents_expand_policy(&c, &none, &p, true, &err), -EINVAL);
	ck_assert_str_eq(err.msg, "line 5: unknown agent @gone (known: claude, codex, pi)");
	policy_release(&p);
	/* Not strict (a stored policy): the unknown one allows nothing. */
	ck_assert_int_eq(policy_parse(text, strlen(text), &p, &err), 0);
	ck_assert_int_eq(agents_expand_policy(&c, &none, &p, false, &err), 0);
	ck_assert(policy_allows_host(&p, "api.anthropic.com"));
	ck_assert(!policy_allows_host(&p, "gone"));
	policy_release(&p);
	agents_release(&c);
}
END_TEST

static Suite *agents_suite(void)
{
	Suite *s = suite_create("agents");
	TCase *tc = tcase_create("catalogue");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_load);
	tcase_add_test(tc, test_format);
	tcase_add_test(tc, test_endpoints);
	tcase_add_test(tc, test_expand);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_tap_run(agents_suite());
}
