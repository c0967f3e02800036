/* tarsafe-unsupported.c - the safe tar extractor where it cannot be built:
 * every system but Linux (the CLI's macOS build; docs/cli-platforms.md).
 *
 * The extractor (tarsafe*.c) rests on openat2(RESOLVE_IN_ROOT |
 * RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV) and O_PATH, which only Linux
 * has. A fallback that walks each component itself is security code of
 * its own and is not written yet, so `paddock pull` refuses here with a
 * clear reason and writes nothing; the CLI needs only the two functions
 * below. The Linux build never compiles this file. */
#include <archive.h>
#include <errno.h>
#include <string.h>

#include "common/tarsafe.h"

int tarsafe_extract_ex(int rootfd, const char *dir, int in_fd, const struct tar_limits *lim,
		       const struct tar_extract_hooks *hooks, struct tar_result *ret,
		       pd_error *err)
{
	(void)rootfd, (void)dir, (void)in_fd, (void)lim, (void)hooks, (void)ret;
	return pd_error_set(err, -EOPNOTSUPP,
			    "pull is not in the macOS build of paddock yet: its safe "
			    "extractor needs Linux (openat2)");
}

/* As tarsafe.c's: libarchive's reason, else errno's, else a generic one. */
const char *tarsafe_archive_why(struct archive *a)
{
	const char *s = archive_error_string(a);
	int e = archive_errno(a);

	if (s && *s)
		return s;
	return e > 0 ? strerror(e) : "the archive is damaged or cut short";
}
