/* unsupported-windows.c - what the Windows build of the CLI does not have
 * yet, each failing with the same clear reason (ENOTSUP) instead of the
 * POSIX code it would need (docs/cli-platforms.md says why):
 *  - push and pull (transfer.c: a directory walk with fts, tar streams
 *    through a pipe and a thread, the daemon's safe extractor
 *    common/tarsafe.c, which resolves names with openat2);
 *  - screenshot (screenshot.c: a temp file linked or renamed into place);
 *  - skill install (skill.c: openat/O_NOFOLLOW so no link is followed). */
#include <errno.h>

#include "cli/desktop.h"
#include "cli/skill.h"
#include "cli/transfer.h"

static int unsupported(pd_error *err, const char *what)
{
	return pd_error_set(err, -ENOTSUP, "%s is not in the Windows build of paddock yet", what);
}

int cli_push(cli_client *c, const char *box, const char *const *srcs, size_t n, const char *to,
	     bool progress, bool quiet, pd_error *err)
{
	return unsupported(err, "push");
}

int cli_pull(cli_client *c, const char *box, const char *src, const char *dir,
	     const cli_pull_opts *opts, pd_error *err)
{
	return unsupported(err, "pull");
}

int cli_pull_extract(int fd, int dirfd, const cli_pull_opts *opts, pd_error *err)
{
	return unsupported(err, "pull");
}

int cli_screenshot(cli_client *c, const cli_args *a, const char *box, pd_error *err)
{
	return unsupported(err, "screenshot");
}

int cli_skill_install(const char *dir, FILE *out, pd_error *err)
{
	return unsupported(err, "skill install");
}
