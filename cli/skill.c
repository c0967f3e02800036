/* skill.c - the Paddock skill written where agents find it (see skill.h). */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/skill.h"
#include "common/util.h"

int cli_skill_dirs(char *(*get)(const char *), char ***ret, size_t *ret_n, pd_error *err)
{
	const char *home, *claude, *xdg;
	_cleanup_strv_free_ char **v = calloc(5, sizeof(char *));
	size_t n = 0;

	if (!get)
		get = getenv;
	home = get("HOME");
	if (!v)
		return pd_error_set(err, -ENOMEM, "out of memory");
	if (!home || home[0] != '/')
		return pd_error_set(err, -ENOENT,
				    "HOME is not set to an absolute path: give the directory to "
				    "install into");
	claude = get("CLAUDE_CONFIG_DIR");
	xdg = get("XDG_CONFIG_HOME");
	/* Relative values are ignored, as the XDG spec says of its own. */
	if (claude && claude[0] != '/')
		claude = NULL;
	if (xdg && xdg[0] != '/')
		xdg = NULL;
	if ((claude ? asprintf(&v[n++], "%s/skills", claude)
		    : asprintf(&v[n++], "%s/.claude/skills", home)) < 0 ||
	    asprintf(&v[n++], "%s/.agents/skills", home) < 0 ||
	    (xdg ? asprintf(&v[n++], "%s/opencode/skills", xdg)
		 : asprintf(&v[n++], "%s/.config/opencode/skills", home)) < 0 ||
	    asprintf(&v[n++], "%s/.pi/agent/skills", home) < 0) {
		v[n - 1] = NULL;
		return pd_error_set(err, -ENOMEM, "out of memory");
	}
	*ret = TAKE_PTR(v);
	*ret_n = n;
	return 0;
}

int cli_skill_write(const char *root, const void *body, size_t len, char **ret, pd_error *err)
{
	_cleanup_close_ int rootfd = -1, dfd = -1, fd = -1;
	_cleanup_free_ char *path = NULL;
	_cleanup_free_ char *tmp = NULL;
	struct stat st;
	int r;

	r = mkdir_p(root, 0755);
	if (r < 0)
		return pd_error_set(err, r, "%s: %s", root, strerror(-r));
	rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return pd_error_set(err, -errno, "%s: %s", root, strerror(errno));
	if (mkdirat(rootfd, "paddock", 0755) < 0 && errno != EEXIST)
		return pd_error_set(err, -errno, "%s/paddock: %s", root, strerror(errno));
	/* O_NOFOLLOW: a link named paddock (to anywhere) is refused. */
	dfd = openat(rootfd, "paddock", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0) {
		int e = errno;
		if (e == ELOOP || e == ENOTDIR)
			return pd_error_set(err, -ENOTDIR,
					    "%s/paddock is not a directory (a link or a file): not "
					    "writing through it",
					    root);
		return pd_error_set(err, -e, "%s/paddock: %s", root, strerror(e));
	}
	if (asprintf(&path, "%s/paddock/SKILL.md", root) < 0)
		return pd_error_set(err, -ENOMEM, "out of memory");
	/* SKILL.md itself: a directory there would take the rename. */
	if (fstatat(dfd, "SKILL.md", &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode))
		return pd_error_set(err, -EISDIR, "%s is a directory", path);
	for (int attempt = 0;; attempt++) {
		free(tmp);
		tmp = cli_random_name(".SKILL.md.");
		if (!tmp)
			return pd_error_set(err, -ENOMEM, "out of memory");
		fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (fd >= 0)
			break;
		if (errno != EEXIST || attempt >= 16)
			return pd_error_set(err, -errno, "%s: %s", path, strerror(errno));
	}
	r = write_all(fd, body, len);
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	if (r == 0 && close(TAKE_FD(fd)) < 0)
		r = -errno;
	/* rename replaces whatever SKILL.md was (a link too), never follows it. */
	if (r == 0 && renameat(dfd, tmp, dfd, "SKILL.md") < 0)
		r = -errno;
	if (r < 0) {
		unlinkat(dfd, tmp, 0);
		return pd_error_set(err, r, "%s: %s", path, strerror(-r));
	}
	*ret = TAKE_PTR(path);
	return 0;
}

int cli_skill_install(const char *dir, FILE *out, pd_error *err)
{
	_cleanup_strv_free_ char **dirs = NULL;
	size_t n = 0;
	int first = 0;

	if (dir) {
		_cleanup_free_ char *path = NULL;
		int r = cli_skill_write(dir, cli_skill_md, cli_skill_md_size, &path, err);
		if (r < 0)
			return r;
		fprintf(out, "%s\n", path);
		return 0;
	}
	int r = cli_skill_dirs(NULL, &dirs, &n, err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		_cleanup_free_ char *path = NULL;
		pd_error e = {0};
		r = cli_skill_write(dirs[i], cli_skill_md, cli_skill_md_size, &path, &e);
		if (r < 0) {
			fprintf(stderr, "paddock: %s\n", e.msg);
			if (first == 0) {
				first = r;
				*err = e;
			}
			continue;
		}
		fprintf(out, "%s\n", path);
	}
	return first;
}
