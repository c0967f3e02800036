/* screenshot.c - `paddock screenshot`: boxes/BOX/screenshot.png written to
 * a file whole or not at all (a temp file beside it, checked as a PNG,
 * then renamed or linked into place), or to stdout (see desktop.h). POSIX
 * file calls: the Windows build has no `screenshot` yet
 * (docs/cli-platforms.md). */
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
#include "cli/transfer.h"

static int oom(pd_error *err)
{
	return pd_error_set(err, -ENOMEM, "out of memory");
}

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
	enum target_kind kind = TARGET_NEW; /* set by target_path(); gcc -O2 cannot tell */
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
			r = cli_json_print_value(a->json, "path", target) < 0 ? oom(err) : 0;
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
