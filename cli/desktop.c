/* desktop.c - a box's desktop over HTTP (see desktop.h): every command is
 * a read or write of boxes/BOX/desktop/…; `screenshot` (a file written
 * into place) is screenshot.c. */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/desktop.h"
#include "cli/json.h"
#include "cli/platform.h"
#include "common/parse.h"
#include "cli/transfer.h"

static int oom(pd_error *err)
{
	return pd_error_set(err, -ENOMEM, "out of memory");
}

/* GET of a value file of the box; *ret without its trailing newline. */
static int get_file(cli_client *c, const char *box, const char *file, char **ret, pd_error *err)
{
	_cleanup_free_ char *path = cli_box_path(box, file);

	if (!path)
		return oom(err);
	return cli_get_value(c, path, ret, err);
}

static int put_file(cli_client *c, const char *box, const char *file, const char *body, size_t len,
		    pd_error *err)
{
	_cleanup_free_ char *path = cli_box_path(box, file);

	if (!path)
		return oom(err);
	return cli_put(c, path, body, len, err);
}

/* Errors that mean "not answering yet" while a desktop starts: off (its
 * session not up yet), busy, or the X server not listening yet. Anything
 * else (no such box, an image without a desktop, no access) is final. */
static bool starting(int code)
{
	return code == -ENODEV || code == -EAGAIN || code == -EBUSY || code == -ECONNREFUSED ||
	       code == -ENOTCONN || code == -ETIMEDOUT || code == -EIO;
}

/* Reads desktop/cursor until it answers, for at most timeout_s seconds. */
static int wait_answer(cli_client *c, const char *box, int timeout_s, pd_error *err)
{
	struct timespec start, now, pause = {.tv_nsec = 250 * 1000 * 1000};
	int r;

	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		_cleanup_free_ char *cursor = NULL;
		pd_error_clear(err);
		r = get_file(c, box, "desktop/cursor", &cursor, err);
		if (r == 0 || !starting(r))
			return r;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec - start.tv_sec >= timeout_s)
			return pd_error_prefix(err,
					       "the desktop of %s did not answer within %d s (see "
					       "boxes/%s/events)",
					       box, timeout_s, box);
		nanosleep(&pause, NULL);
	}
}

static int desktop_on(cli_client *c, const cli_args *a, const char *box, pd_error *err)
{
	_cleanup_free_ char *url = NULL;
	int r = put_file(c, box, "desktop/state", "on\n", 3, err);

	if (r < 0)
		return r;
	/* A box that does not run starts its desktop when it runs: nothing
	 * to wait for now. */
	_cleanup_free_ char *state = NULL;
	pd_error ignored = {0};
	bool running =
	    get_file(c, box, "state", &state, &ignored) < 0 || strcmp(state, "running") == 0;
	if (!running && !a->quiet)
		fprintf(stderr, "paddock: %s is %s: its desktop starts when it runs\n", box, state);
	if (!a->no_wait && running) {
		if (!a->quiet && cli_platform_isatty(STDERR_FILENO))
			fprintf(stderr, "paddock: waiting for the desktop of %s to answer…\n", box);
		r = wait_answer(c, box, CLI_DESKTOP_WAIT_S, err);
		if (r < 0)
			return r;
	}
	r = get_file(c, box, "desktop/url", &url, err);
	if (r < 0)
		return pd_error_prefix(err, "url");
	return cli_json_print_value(a->json, "url", url) < 0 ? oom(err) : 0;
}

/* windows --json: [{"id","title","geometry","x","y","width","height"}…];
 * the numbers only when the geometry has them. */
static int print_windows_json(char *body)
{
	json_t *all = json_array();

	for (char *line = body, *next; all && line && *line; line = next) {
		const char *id, *title, *geometry;
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (cli_parse_window_line(line, &id, &title, &geometry) < 0)
			continue;
		json_t *o = json_object();
		if (!o || cli_json_set(o, "id", id) < 0 || cli_json_set(o, "title", title) < 0 ||
		    cli_json_set(o, "geometry", geometry) < 0)
			json_decref(TAKE_PTR(o));
		unsigned w, h;
		int x, y;
		bool pos;
		if (o && geometry && cli_parse_geometry(geometry, &w, &h, &x, &y, &pos) == 0) {
			if (pos && (json_object_set_new(o, "x", json_integer(x)) < 0 ||
				    json_object_set_new(o, "y", json_integer(y)) < 0))
				json_decref(TAKE_PTR(o));
			if (o && (json_object_set_new(o, "width", json_integer(w)) < 0 ||
				  json_object_set_new(o, "height", json_integer(h)) < 0))
				json_decref(TAKE_PTR(o));
		}
		if (json_array_append_new(all, o) < 0)
			json_decref(TAKE_PTR(all));
	}
	return cli_json_print(stdout, all);
}

static int desktop_windows(cli_client *c, const cli_args *a, const char *box, pd_error *err)
{
	_cleanup_free_ char *path = cli_box_path(box, "desktop/windows"), *body = NULL;
	size_t len = 0;
	int r;

	if (!path)
		return oom(err);
	r = cli_get(c, path, &body, &len, err);
	if (r < 0)
		return r;
	if (a->json)
		return print_windows_json(body) < 0 ? oom(err) : 0;
	/* Titles are the box's: a title holding ESC or BEL would drive the
	 * user's terminal. Control characters and invalid UTF-8 print as
	 * \xHH, but for the newline ending a line and tabs between fields
	 * (--json escapes them as JSON does). */
	_cleanup_free_ char *clean = malloc(len * 4 + 1);
	if (!clean)
		return oom(err);
	for (char *p = body, *end = body + len; p < end;) {
		size_t n = strcspn(p, "\t\n");
		if (p + n > end)
			n = (size_t)(end - p);
		text_printable(p, n, clean, len * 4 + 1);
		fputs(clean, stdout);
		p += n;
		if (p < end && *p == '\t')
			putchar('\t');
		if (p >= end || *p == '\n')
			putchar('\n');
		p++;
	}
	return 0;
}

static int desktop_cursor(cli_client *c, const cli_args *a, const char *box, pd_error *err)
{
	_cleanup_free_ char *cursor = NULL;
	int x, y, end = 0;
	int r = get_file(c, box, "desktop/cursor", &cursor, err);

	if (r < 0)
		return r;
	if (!a->json) {
		printf("%s\n", cursor);
		return 0;
	}
	if (sscanf(cursor, "%d %d%n", &x, &y, &end) != 2 || cursor[end] != '\0')
		return pd_error_set(err, -EPROTO, "unexpected cursor '%s' from the server", cursor);
	return cli_json_print(stdout, json_pack("{s:i,s:i}", "x", x, "y", y)) < 0 ? oom(err) : 0;
}

static int desktop_geometry(cli_client *c, const cli_args *a, const char *box, pd_error *err)
{
	_cleanup_free_ char *geometry = NULL, *line = NULL;
	unsigned w, h;
	int r;

	if (a->value) {
		if (asprintf(&line, "%s\n", a->value) < 0)
			return oom(err);
		r = put_file(c, box, "desktop/geometry", line, strlen(line), err);
		if (r == 0 && a->verbose)
			fprintf(stderr, "paddock: %s: desktop geometry = %s\n", box, a->value);
		return r;
	}
	r = get_file(c, box, "desktop/geometry", &geometry, err);
	if (r < 0)
		return r;
	if (!a->json) {
		printf("%s\n", geometry);
		return 0;
	}
	if (cli_parse_geometry(geometry, &w, &h, NULL, NULL, NULL) < 0)
		return pd_error_set(err, -EPROTO, "unexpected geometry '%s' from the server",
				    geometry);
	char text[32];
	snprintf(text, sizeof(text), "%ux%u", w, h);
	return cli_json_print(stdout, json_pack("{s:s,s:I,s:I}", "geometry", text, "width",
						(json_int_t)w, "height", (json_int_t)h)) < 0
		   ? oom(err)
		   : 0;
}

/* Reads the actions of `desktop BOX -` from stdin (at most 1 MiB: the
 * server has its own, lower limit on an input write). */
static int read_stdin(char **ret, size_t *ret_len, pd_error *err)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0, cap = 0, max = 1u << 20;

	for (;;) {
		if (cap - len < 4096) {
			cap = cap ? cap * 2 : 8192;
			char *grown = realloc(buf, cap + 1);
			if (!grown)
				return oom(err);
			buf = grown;
		}
		ssize_t n = read(STDIN_FILENO, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return pd_error_set(err, -errno, "standard input: %s", strerror(errno));
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > max)
			return pd_error_set(err, -EFBIG,
					    "more than 1 MiB of actions on standard input");
	}
	if (len == 0)
		return pd_error_set(err, -EINVAL, "no actions on standard input");
	buf[len] = '\0';
	*ret = TAKE_PTR(buf);
	*ret_len = len;
	return 0;
}

static int desktop_input(cli_client *c, const cli_args *a, const char *box, pd_error *err)
{
	_cleanup_free_ char *body = NULL;
	size_t len = 0;
	int r = a->input ? read_stdin(&body, &len, err)
			 : cli_desktop_input_body(a->words, a->n_words, &body, &len, err);

	if (r < 0)
		return r;
	r = put_file(c, box, "desktop/input", body, len, err);
	if (r == 0 && a->verbose)
		fprintf(stderr, "paddock: %s: sent %.*s", box, (int)len, body);
	return r;
}

/* Runs fn again while the desktop says it is starting or restarting
 * (EAGAIN: its session is being brought up), for at most 30 s: a command
 * on a desktop that is coming up waits for it instead of failing. Nothing
 * was printed or sent when EAGAIN comes back. */
static int when_up(int (*fn)(cli_client *, const cli_args *, const char *, pd_error *),
		   cli_client *c, const cli_args *a, const char *box, pd_error *err)
{
	for (int i = 0;; i++) {
		pd_error e = {0};
		int r = fn(c, a, box, &e);
		if (r != -EAGAIN || i >= 120) {
			if (err)
				*err = e;
			return r;
		}
		usleep(250 * 1000);
	}
}

int cli_desktop(cli_client *c, const cli_args *a, const char *box, pd_error *err)
{
	switch (a->desktop_sub) {
	case CLI_DESKTOP_ON:
		return desktop_on(c, a, box, err);
	case CLI_DESKTOP_OFF: {
		int r = put_file(c, box, "desktop/state", "off\n", 4, err);
		if (r == 0 && a->verbose)
			fprintf(stderr, "paddock: %s: desktop off\n", box);
		return r;
	}
	case CLI_DESKTOP_URL: {
		_cleanup_free_ char *url = NULL;
		int r = get_file(c, box, "desktop/url", &url, err);
		if (r < 0)
			return r;
		return cli_json_print_value(a->json, "url", url) < 0 ? oom(err) : 0;
	}
	case CLI_DESKTOP_WINDOWS:
		return when_up(desktop_windows, c, a, box, err);
	case CLI_DESKTOP_CURSOR:
		return when_up(desktop_cursor, c, a, box, err);
	case CLI_DESKTOP_GEOMETRY:
		return desktop_geometry(c, a, box, err);
	case CLI_DESKTOP_INPUT:
		/* Lines read from stdin are read once: no second try. */
		return a->input ? desktop_input(c, a, box, err)
				: when_up(desktop_input, c, a, box, err);
	}
	return pd_error_set(err, -EINVAL, "unknown desktop subcommand");
}
