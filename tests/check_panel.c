/* check_panel.c - the web panel's compiled-in assets (web/panel-assets.h):
 * every file of web/panel/ is in the table byte for byte with the right
 * content type, and panel_asset_find() finds exactly the base names. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#include "check-tap.h"
#include "web/panel-assets.h"
#include "common/util.h"

static const struct {
	const char *name;
	const char *content_type;
} expected[] = {
    {"index.html", "text/html; charset=utf-8"},
    {"app.js", "text/javascript; charset=utf-8"},
    {"prompt-render.js", "text/javascript; charset=utf-8"},
    {"style.css", "text/css; charset=utf-8"},
};

START_TEST(test_table_matches_sources)
{
	const char *top = getenv("TOP_SRCDIR");
	ck_assert_msg(top && *top, "TOP_SRCDIR is not set");
	ck_assert_uint_eq(panel_assets_n, sizeof expected / sizeof expected[0]);
	for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++) {
		char path[4096];
		char *data = NULL;
		size_t len = 0;
		snprintf(path, sizeof path, "%s/web/panel/%s", top, expected[i].name);
		int r = read_file_at(AT_FDCWD, path, 1 << 24, &data, &len);
		ck_assert_msg(r >= 0, "read %s: %s", path, strerror(-r));
		const struct panel_asset *a = panel_asset_find(expected[i].name);
		ck_assert_ptr_nonnull(a);
		ck_assert_str_eq(a->path, expected[i].name);
		ck_assert_str_eq(a->content_type, expected[i].content_type);
		ck_assert_uint_eq(a->size, len);
		ck_assert_msg(memcmp(a->data, data, len) == 0, "%s differs", expected[i].name);
		ck_assert_uint_eq(a->data[a->size], 0);
		free(data);
	}
}
END_TEST

/* The page loads only what the panel serves: no external URLs. */
START_TEST(test_no_external_urls)
{
	for (size_t i = 0; i < panel_assets_n; i++) {
		const char *text = (const char *)panel_assets[i].data;
		ck_assert_msg(!strstr(text, "http://") && !strstr(text, "https://") &&
				  !strstr(text, "//cdn"),
			      "%s refers to an external URL", panel_assets[i].path);
	}
}
END_TEST

START_TEST(test_find_rejects)
{
	ck_assert_ptr_null(panel_asset_find(NULL));
	ck_assert_ptr_null(panel_asset_find(""));
	ck_assert_ptr_null(panel_asset_find("/index.html"));
	ck_assert_ptr_null(panel_asset_find("panel/app.js"));
	ck_assert_ptr_null(panel_asset_find("../index.html"));
	ck_assert_ptr_null(panel_asset_find("index.htm"));
	ck_assert_ptr_null(panel_asset_find("index.html.bak"));
	ck_assert_ptr_null(panel_asset_find("INDEX.HTML"));
}
END_TEST

static Suite *panel_suite(void)
{
	Suite *s = suite_create("panel");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_table_matches_sources);
	tcase_add_test(tc, test_no_external_urls);
	suite_add_tcase(s, tc);

	tc = tcase_create("errors");
	tcase_add_test(tc, test_find_rejects);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_tap_run(panel_suite());
}
