/* desktop.c - a box's desktop over HTTP (see desktop.h): every command is
 * a read or write of boxes/BOX/desktop/… or boxes/BOX/screenshot.png. */
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

/* Prints {"KEY":"VALUE"} (or VALUE alone without json). */
static int print_value(bool json, const char *key, const char *value)
{
	if (!json) {
		printf("%s\n", value);
		return 0;
	}
	return cli_json_print(stdout, json_pack("{s:o}", key, cli_json_str(value)));
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
	return print_value(a->json, "url", url) < 0 ? oom(err) : 0;
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
		return print_value(a->json, "url", url) < 0 ? oom(err) : 0;
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

/* --- screenshot --------------------------------------------------------- */

/* How a screenshot reaches its file. */
enum target_kind {
	TARGET_NEW,	/* a new name: never replaces a file (-2, -3… added) */
	TARGET_REPLACE, /* a regular file, or none yet: renamed over */
	TARGET_STREAM,	/* not a regular file (/dev/null, a FIFO): written into */
};

/* The file to write: FILE, FILE/DEFAULT when FILE is a directory (or ends
 * in '/'), or DEFAULT in the current directory. A symbolic link to a
 * regular file is followed (the file is replaced, never the link); what
 * is neither a regular file nor a directory is written into as it is, so
 * `-o /dev/null` never replaces /dev/null, even for root. *ret_mode: the
 * mode of the file replaced, or 0666 & ~umask. */
static int target_path(const char *box, const char *output, char **ret, enum target_kind *ret_kind,
		       mode_t *ret_mode, pd_error *err)
{
	_cleanup_free_ char *name = cli_screenshot_name(box, time(NULL));
	struct stat st, lst;
	mode_t mask = umask(0);

	umask(mask);
	*ret_mode = 0666 & ~mask;
	if (!name)
		return oom(err);
	if (!output) {
		*ret = TAKE_PTR(name);
		*ret_kind = TARGET_NEW;
		return 0;
	}
	size_t n = strlen(output);
	if (n == 0)
		return pd_error_set(err, -EINVAL, "-o needs a file name");
	bool exists = stat(output, &st) == 0;
	if (output[n - 1] == '/' || (exists && S_ISDIR(st.st_mode))) {
		if (asprintf(ret, "%s%s%s", output, output[n - 1] == '/' ? "" : "/", name) < 0)
			return oom(err);
		*ret_kind = TARGET_NEW;
		return 0;
	}
	if (lstat(output, &lst) == 0 && S_ISLNK(lst.st_mode) && !exists)
		return pd_error_set(err, -ENOENT, "%s: a symbolic link to nothing", output);
	if (exists && !S_ISREG(st.st_mode)) {
		*ret_kind = TARGET_STREAM;
		*ret = strdup(output);
		return *ret ? 0 : oom(err);
	}
	*ret_kind = TARGET_REPLACE;
	if (exists) {
		*ret_mode = st.st_mode & 0777;
		if (S_ISLNK(lst.st_mode)) {
			*ret = realpath(output, NULL);
			return *ret ? 0
				    : pd_error_set(err, -errno, "%s: %s", output, strerror(errno));
		}
	}
	*ret = strdup(output);
	return *ret ? 0 : oom(err);
}

/* Writes the PNG into what is not a regular file (a device, a FIFO). */
static int screenshot_stream(cli_client *c, const char *path, const char *target, pd_error *err)
{
	_cleanup_close_ int fd = open(target, O_WRONLY | O_CLOEXEC | O_NOCTTY);

	if (fd < 0)
		return pd_error_set(err, -errno, "%s: %s", target, strerror(errno));
	if (cli_platform_isatty(fd))
		return pd_error_set(err, -EINVAL, "not writing a PNG to a terminal (%s)", target);
	return cli_download(c, path, fd, false, err);
}

/* dir of path ("." when it has no slash) and its last component. */
static int split_path(const char *path, char **ret_dir, const char **ret_base)
{
	const char *slash = strrchr(path, '/');

	if (!slash) {
		*ret_dir = strdup(".");
		*ret_base = path;
	} else {
		*ret_dir = slash == path ? strdup("/") : strndup(path, (size_t)(slash - path));
		*ret_base = slash + 1;
	}
	return *ret_dir ? 0 : -ENOMEM;
}

/* Moves tmp to path. Without replace, an existing path is kept and the
 * name gets "-2", "-3"… before ".png" (link() fails on an existing name,
 * atomically); *ret_path is the name used. */
static int place(const char *tmp, const char *path, bool replace, char **ret_path, pd_error *err)
{
	if (replace) {
		/* rename() replaces a link, never what it leads to: a link
		 * here (made meanwhile) is refused. */
		struct stat st;
		if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode))
			return pd_error_set(err, -EEXIST, "%s: became a symbolic link", path);
		if (rename(tmp, path) < 0)
			return pd_error_set(err, -errno, "%s: %s", path, strerror(errno));
		*ret_path = strdup(path);
		return *ret_path ? 0 : oom(err);
	}
	size_t n = strlen(path), stem = n >= 4 && strcmp(path + n - 4, ".png") == 0 ? n - 4 : n;
	for (int i = 1; i <= 100; i++) {
		_cleanup_free_ char *name = NULL;
		if (i == 1)
			name = strdup(path);
		else if (asprintf(&name, "%.*s-%d%s", (int)stem, path, i, path + stem) < 0)
			name = NULL;
		if (!name)
			return oom(err);
		if (link(tmp, name) == 0) {
			unlink(tmp);
			*ret_path = TAKE_PTR(name);
			return 0;
		}
		if (errno == EEXIST)
			continue;
		if (errno != EPERM && errno != ENOTSUP && errno != EMLINK)
			return pd_error_set(err, -errno, "%s: %s", name, strerror(errno));
		/* A filesystem without hard links: check, then rename. */
		if (access(name, F_OK) == 0)
			continue;
		if (rename(tmp, name) < 0)
			return pd_error_set(err, -errno, "%s: %s", name, strerror(errno));
		*ret_path = TAKE_PTR(name);
		return 0;
	}
	return pd_error_set(err, -EEXIST, "%s and 99 more names like it exist", path);
}

static int screenshot_stdout(cli_client *c, const char *path, pd_error *err)
{
	if (cli_platform_isatty(STDOUT_FILENO))
		return pd_error_set(err, -EINVAL,
				    "not writing a PNG to a terminal: use -o FILE (or redirect)");
	if (cli_download(c, path, STDOUT_FILENO, false, err) < 0)
		return err->code;
	return 0;
}

int cli_screenshot(cli_client *c, const cli_args *a, const char *box, pd_error *err)
{
	_cleanup_free_ char *path = cli_box_path(box, "screenshot.png"), *target = NULL,
			    *dir = NULL, *tmp = NULL, *written = NULL;
	_cleanup_close_ int fd = -1;
	unsigned char head[24];
	const char *base;
	enum target_kind kind;
	mode_t mode;
	struct stat st;
	int r;

	if (!path)
		return oom(err);
	if (a->output && strcmp(a->output, "-") == 0)
		return screenshot_stdout(c, path, err);
	r = target_path(box, a->output, &target, &kind, &mode, err);
	if (r < 0)
		return r;
	if (kind == TARGET_STREAM) {
		r = screenshot_stream(c, path, target, err);
		if (r == 0)
			r = print_value(a->json, "path", target) < 0 ? oom(err) : 0;
		return r;
	}
	if (split_path(target, &dir, &base) < 0)
		return oom(err);
	if (*base == '\0')
		return pd_error_set(err, -EINVAL, "-o: '%s' names no file", a->output);
	if (asprintf(&tmp, "%s/.%s.XXXXXX", dir, base) < 0)
		return oom(err);
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return pd_error_set(err, -errno, "%s: cannot create a file there: %s", dir,
				    strerror(errno));
	cli_platform_guard_file(tmp);

	r = cli_download(c, path, fd, false, err);
	if (r == 0 && (fstat(fd, &st) < 0 || pread(fd, head, sizeof(head), 0) < 0))
		r = pd_error_set(err, -errno, "%s: %s", tmp, strerror(errno));
	/* A PNG starts with its signature and IHDR and ends with IEND: a cut
	 * answer is never renamed into place. */
	static const unsigned char iend[12] = {0,   0,	 0,    0,    'I',  'E',
					       'N', 'D', 0xae, 0x42, 0x60, 0x82};
	unsigned char tail[12];
	unsigned w = 0, h = 0;
	if (r == 0 &&
	    (cli_png_header(head, st.st_size >= 24 ? 24 : (size_t)st.st_size, &w, &h) < 0 ||
	     st.st_size < 36 || pread(fd, tail, sizeof(tail), st.st_size - 12) != 12 ||
	     memcmp(tail, iend, sizeof(iend)) != 0))
		r = pd_error_set(err, -EPROTO,
				 "the server's answer is not a whole PNG (%lld bytes)",
				 (long long)st.st_size);
	if (r == 0) {
		/* mkostemp makes 0600: give it the mode of the file it
		 * replaces, or the one a new file gets. */
		if (fchmod(fd, mode) < 0)
			r = pd_error_set(err, -errno, "%s: %s", tmp, strerror(errno));
		else if ((r = cli_platform_datasync(fd)) < 0)
			r = pd_error_set(err, r, "%s: %s", tmp, strerror(-r));
	}
	if (r == 0)
		r = place(tmp, target, kind == TARGET_REPLACE, &written, err);
	if (r < 0)
		unlink(tmp);
	cli_platform_guard_file(NULL);
	if (r < 0)
		return r;

	if (!a->json) {
		printf("%s\n", written);
		return 0;
	}
	return cli_json_print(stdout, json_pack("{s:o,s:I,s:I,s:I}", "path", cli_json_str(written),
						"width", (json_int_t)w, "height", (json_int_t)h,
						"bytes", (json_int_t)st.st_size)) < 0
		   ? oom(err)
		   : 0;
}
