/* check_cli_portable.c - the CLI's portable part, with no Check and no
 * fork, so the same file runs on Linux (make check) and, cross-built with
 * mingw-w64, under Wine (scripts/build-windows-cli --run): the command
 * line, shell quoting, JSON on jansson, names and listings, the desktop's
 * and a prompt's pure text, and platform.h (config path, private files,
 * random bytes, terminals). TAP on stdout. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check-cli-parse.h"
#include "cli/cli-config.h"
#include "cli/cli.h"
#include "cli/json.h"
#include "cli/platform.h"
#include "cli/prompt.h"

static unsigned n_tests, n_failed;
static const char *current;
static bool current_failed;

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			printf("# %s:%d: %s: failed: %s\n", __FILE__, __LINE__, current, #cond);   \
			current_failed = true;                                                     \
		}                                                                                  \
	} while (0)
#define CHECK_STR(got, want)                                                                       \
	do {                                                                                       \
		const char *g_ = (got), *w_ = (want);                                              \
		if (!g_ || strcmp(g_, w_) != 0) {                                                  \
			printf("# %s:%d: %s: got '%s', want '%s'\n", __FILE__, __LINE__, current,  \
			       g_ ? g_ : "(null)", w_);                                            \
			current_failed = true;                                                     \
		}                                                                                  \
	} while (0)

static void run(const char *name, void (*fn)(void))
{
	current = name;
	current_failed = false;
	fn();
	n_tests++;
	n_failed += current_failed;
	printf("%s %u - %s\n", current_failed ? "not ok" : "ok", n_tests, name);
	fflush(stdout);
}

/* What f holds (it is rewound), malloc'd. */
static char *slurp(FILE *f)
{
	long n;
	char *s;

	fflush(f);
	n = ftell(f);
	if (n < 0 || !(s = calloc(1, (size_t)n + 1)))
		return NULL;
	rewind(f);
	if (fread(s, 1, (size_t)n, f) != (size_t)n) {
		free(s);
		return NULL;
	}
	return s;
}

static void command_line(void)
{
	cli_args a;
	pd_error err = {0};

	CHECK(parse(&a, &err, "--json", "ls", NULL) == 0);
	CHECK(a.verb == CLI_LS && a.json);
	cli_args_release(&a);
	CHECK(parse(&a, &err, "new", "--name", "web", "--type", "small", "--ttl", "3600", NULL) ==
	      0);
	CHECK(a.verb == CLI_NEW);
	CHECK_STR(a.name, "web");
	CHECK_STR(a.ttl, "3600");
	cli_args_release(&a);
	CHECK(parse(&a, &err, "exec", "b", "--", "ls", "-l", NULL) == 0);
	CHECK(a.verb == CLI_EXEC && a.n_words == 2);
	cli_args_release(&a);
	CHECK(parse(&a, &err, "no-such-command", NULL) == -EINVAL);
	CHECK(err.msg[0] != '\0');
}

static void shell_quoting(void)
{
	char *q = cli_shell_quote("it's");
	CHECK_STR(q, "'it'\\''s'");
	free(q);
	const char *words[] = {"bash", "-lc", "cd /x && make"};
	q = cli_shell_join(words, 3);
	CHECK_STR(q, "bash -lc 'cd /x && make'");
	free(q);
}

static void json(void)
{
	FILE *f = tmpfile();
	char *s;

	CHECK(f != NULL);
	if (!f)
		return;
	CHECK(cli_json_print(
		  f, json_pack("{s:o,s:i}", "k", cli_json_str("a\"b\n\x01 é\xff"), "n", 7)) == 0);
	s = slurp(f);
	CHECK_STR(s, "{\"k\":\"a\\\"b\\n\\u0001 é\xef\xbf\xbd\",\"n\":7}\n");
	free(s);
	fclose(f);

	const char *body = "{\"error\":\"no such box\",\"errno\":\"ENOENT\"}";
	s = cli_error_from_body(body, strlen(body));
	CHECK_STR(s, "no such box");
	free(s);
	s = cli_json_get_string(body, strlen(body), "errno");
	CHECK_STR(s, "ENOENT");
	free(s);
	CHECK(cli_error_from_body("<html>", 6) == NULL);
	CHECK(cli_error_from_body("{\"error\":\"a\\u0000\"}", 19) == NULL);
}

static void names_and_listings(void)
{
	char type;
	const char *name;
	char *r = cli_random_name("box-");

	CHECK(cli_name_valid("web-1.x"));
	CHECK(!cli_name_valid("Web"));
	CHECK(!cli_name_valid(""));
	CHECK(cli_parse_listing_line("d 755 0 my dir", &type, &name) == 0);
	CHECK(type == 'd');
	CHECK_STR(name, "my dir");
	CHECK(cli_parse_listing_line("x 1 2 n", &type, &name) == -EINVAL);
	CHECK(r && strlen(r) == 10 && cli_name_valid(r));
	free(r);
}

static void desktop_text(void)
{
	const char *words[] = {"type", "a  b", ",", "key", "Return"};
	char *body = NULL;
	size_t len = 0;
	pd_error err = {0};
	unsigned w, h;
	int x, y;
	bool pos;

	CHECK(cli_desktop_input_body(words, 5, &body, &len, &err) == 0);
	CHECK_STR(body, "type a  b\nkey Return\n");
	CHECK(len == 21);
	free(body);
	CHECK(cli_desktop_input_body(words, 3, &body, &len, &err) == -EINVAL);
	CHECK(cli_parse_geometry("300x200+-5+7", &w, &h, &x, &y, &pos) == 0);
	CHECK(w == 300 && h == 200 && x == -5 && y == 7 && pos);
	CHECK(cli_parse_geometry("0x1", NULL, NULL, NULL, NULL, NULL) == -EINVAL);
	char line[] = "0x1 a title 10x10+0+0";
	const char *id, *title, *geo;
	CHECK(cli_parse_window_line(line, &id, &title, &geo) == 0);
	CHECK_STR(id, "0x1");
	CHECK_STR(title, "a title");
	CHECK_STR(geo, "10x10+0+0");
	char *shot = cli_screenshot_name("web", 0);
	CHECK(shot && strncmp(shot, "web-19", 6) == 0 &&
	      strlen(shot) == strlen("web-19700101-000000.png"));
	free(shot);
	static const unsigned char png[24] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n',
					      0,    0,	 0,   13,  'I',	 'H',  'D',  'R',
					      0,    0,	 1,   0,   0,	 0,    0,    2};
	CHECK(cli_png_header(png, sizeof(png), &w, &h) == 0 && w == 256 && h == 2);
}

static void prompt_text(void)
{
	FILE *out = tmpfile(), *err = tmpfile();
	cli_prompt_view v = {.out = out, .err = err, .width = 40};
	char *s;

	CHECK(out && err);
	if (!out || !err)
		return;
	s = cli_tool_argument("{\"command\":\"ls -l\",\"x\":1}");
	CHECK_STR(s, "ls -l");
	free(s);
	static const char *const lines[] = {
	    "{\"type\":\"message\",\"text\":\"hello \\u001b[2J there\"}",
	    "not json",
	    "{\"type\":\"end\",\"exit\":3}",
	};
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
		CHECK(cli_prompt_view_line(&v, lines[i], strlen(lines[i])) == 0);
	CHECK(v.ended && v.exit == 3 && v.skipped == 1);
	s = slurp(out);
	CHECK(s && strstr(s, "hello") && !strchr(s, '\x1b'));
	free(s);
	cli_prompt_view_release(&v);
	fclose(out);
	fclose(err);
}

/* A directory of its own for the file tests, under the temp directory. */
static char *scratch(void)
{
	const char *tmp = getenv("TMPDIR");
	char *dir = NULL;
	unsigned char rnd[4];

#ifdef _WIN32
	if (!tmp)
		tmp = getenv("TEMP");
#endif
	cli_platform_random(rnd, sizeof(rnd));
	if (asprintf(&dir, "%s/cli-portable-%02x%02x%02x%02x", tmp ? tmp : "/tmp", rnd[0], rnd[1],
		     rnd[2], rnd[3]) < 0)
		return NULL;
	return dir;
}

static void platform_files(void)
{
	char *dir = scratch(), *file = NULL, *s;
	FILE *f;

	CHECK(dir != NULL);
	if (!dir)
		return;
	CHECK(cli_platform_mkdir_private(dir) == 0);
	CHECK(cli_platform_mkdir_private(dir) == 0); /* there already */
	CHECK(asprintf(&file, "%s/config.ini", dir) > 0);
	CHECK(cli_platform_write_private(file, "one\n", 4) == 0);
	CHECK(cli_platform_write_private(file, "two, longer\n", 12) == 0); /* replaced */
	f = fopen(file, "rb");
	CHECK(f != NULL);
	if (f) {
		fseek(f, 0, SEEK_END);
		s = slurp(f);
		CHECK_STR(s, "two, longer\n");
		free(s);
		fclose(f);
	}
#ifndef _WIN32
	struct stat st;
	CHECK(stat(file, &st) == 0 && (st.st_mode & 07777) == 0600);
	CHECK(stat(dir, &st) == 0 && (st.st_mode & 07777) == 0700);
#endif
	/* a directory that cannot be made: its parent is missing */
	char *deep = NULL;
	CHECK(asprintf(&deep, "%s/no/such", dir) > 0);
	CHECK(cli_platform_mkdir_private(deep) == -ENOENT);
	free(deep);
	CHECK(remove(file) == 0);
	CHECK(rmdir(dir) == 0);
	free(file);
	free(dir);
}

/* The config file written (a private file, a directory made for it) and
 * read back by inih; a value with a line break is refused. */
static void config_round_trip(void)
{
	char *dir = scratch(), *path = NULL;
	cli_config c = {0}, back = {0};
	pd_error err = {0};

	CHECK(dir && asprintf(&path, "%s/paddock/config.ini", dir) > 0);
	if (!path)
		return;
	CHECK(cli_platform_mkdir_private(dir) == 0);
	CHECK(cli_config_set(&c.url, "https://paddock.example.com") == 0);
	CHECK(cli_config_set(&c.token, "pd_abc") == 0);
	CHECK(cli_config_set(&c.current, "box-1") == 0);
	CHECK(cli_config_write(path, &c, &err) == 0);
	CHECK(cli_config_read(path, &back, &err) == 0);
	CHECK_STR(back.url, "https://paddock.example.com");
	CHECK_STR(back.token, "pd_abc");
	CHECK_STR(back.current, "box-1");
	CHECK(cli_config_set(&c.current, "a\nb") == 0);
	CHECK(cli_config_write(path, &c, &err) == -EINVAL);
	cli_config_release(&c);
	cli_config_release(&back);
	CHECK(remove(path) == 0);
	path[strlen(path) - strlen("/config.ini")] = '\0';
	CHECK(rmdir(path) == 0);
	CHECK(rmdir(dir) == 0);
	free(path);
	free(dir);
}

static void platform_config_path(void)
{
	char *p = NULL;

#ifdef _WIN32
	_putenv("APPDATA=C:\\Users\\u\\AppData\\Roaming");
	CHECK(cli_platform_config_path(&p) == 0);
	CHECK_STR(p, "C:\\Users\\u\\AppData\\Roaming\\paddock\\config.ini");
	free(p);
	_putenv("APPDATA=");
	CHECK(cli_platform_config_path(&p) == -ENOENT);
#else
	setenv("XDG_CONFIG_HOME", "/x/conf", 1);
	CHECK(cli_platform_config_path(&p) == 0);
	CHECK_STR(p, "/x/conf/paddock/config.ini");
	free(p);
	setenv("XDG_CONFIG_HOME", "relative", 1); /* not absolute: ignored */
	setenv("HOME", "/home/u", 1);
	CHECK(cli_platform_config_path(&p) == 0);
	CHECK_STR(p, "/home/u/.config/paddock/config.ini");
	free(p);
#endif
}

static void platform_misc(void)
{
	unsigned char a[16] = {0}, b[16] = {0};
	char host[256];

	cli_platform_random(a, sizeof(a));
	cli_platform_random(b, sizeof(b));
	CHECK(memcmp(a, b, sizeof(a)) != 0);
	/* a pipe is no terminal, and has no width */
	int fds[2];
	CHECK(cli_platform_pipe(fds) == 0);
	CHECK(!cli_platform_isatty(fds[0]) && !cli_platform_isatty(fds[1]));
	CHECK(cli_platform_columns(fds[1]) == 0);
	close(fds[0]);
	close(fds[1]);
	cli_platform_hostname(host, sizeof(host));
	CHECK(strlen(host) < sizeof(host));
	cli_platform_interrupt_on(NULL);
	cli_platform_interrupt_off();
}

int main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	printf("1..10\n");
	run("command_line", command_line);
	run("shell_quoting", shell_quoting);
	run("json", json);
	run("names_and_listings", names_and_listings);
	run("desktop_text", desktop_text);
	run("prompt_text", prompt_text);
	run("platform_files", platform_files);
	run("config_round_trip", config_round_trip);
	run("platform_config_path", platform_config_path);
	run("platform_misc", platform_misc);
	return n_failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
