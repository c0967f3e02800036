/* exec-main.c - paddock-exec JOBDIR: the per-job supervisor (supervisor.h).
 *
 * Exits 0 once the supervisor is up (it has written JOBDIR/supervisor.pid
 * and runs on detached), 1 when it could not start, 2 on a usage error.
 */
#include <fcntl.h>
#include <limits.h>
#include <string.h>

#include "box/supervisor.h"
#include "common/util.h"

int main(int argc, char **argv)
{
	_cleanup_free_ char *dir = NULL;
	_cleanup_close_ int dirfd = -1;
	int r;

	if (argc != 2 || !argv[1][0]) {
		fprintf(stderr, "usage: paddock-exec JOBDIR\n");
		return 2;
	}
	/* Nothing of the caller's but stdio; and stdio open, so that no fd
	 * opened below lands on 0, 1 or 2. */
	(void)close_range(3, ~0U, 0);
	for (;;) {
		int fd = open("/dev/null", O_RDWR | O_NOCTTY);
		if (fd < 0)
			break;
		if (fd > 2) {
			close(fd);
			break;
		}
	}

	dir = realpath(argv[1], NULL);
	if (!dir) {
		fprintf(stderr, "paddock-exec: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0) {
		fprintf(stderr, "paddock-exec: %s: %s\n", dir, strerror(errno));
		return 1;
	}
	/* Pin no mount of the caller's. */
	if (chdir("/") < 0) {
		fprintf(stderr, "paddock-exec: cannot chdir to /: %s\n", strerror(errno));
		return 1;
	}

	r = sup_detach(dirfd);
	if (r > 0)
		return 0;
	if (r < 0) {
		fprintf(stderr, "paddock-exec: %s: cannot start the supervisor: %s\n", dir,
			strerror(-r));
		return 1;
	}
	return sup_run(dir, dirfd) < 0 ? 1 : 0;
}
