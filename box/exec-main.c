/* exec-main.c - paddock-exec [--secrets-fd=N] JOBDIR: the per-job
 * supervisor (supervisor.h).
 *
 * --secrets-fd=N: the daemon's pipe with the job's secrets ("NAME=VALUE\0"
 * each), read to its end before anything else, so that they are never in
 * a file, argv or this program's own environment.
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
	char **secrets = NULL;
	const char *jobdir;
	int r;

	if (argc == 3 && strncmp(argv[1], "--secrets-fd=", 13) == 0) {
		char *end;
		long fd = strtol(argv[1] + 13, &end, 10);
		if (*end || fd < 3 || fd > INT_MAX) {
			fprintf(stderr, "paddock-exec: bad %s\n", argv[1]);
			return 2;
		}
		r = sup_secrets_read((int)fd, &secrets);
		if (r < 0) {
			fprintf(stderr, "paddock-exec: cannot read the secrets: %s\n",
				strerror(-r));
			return 1;
		}
		argc--;
		argv++;
	}
	if (argc != 2 || !argv[1][0]) {
		fprintf(stderr, "usage: paddock-exec [--secrets-fd=N] JOBDIR\n");
		sup_secrets_free(secrets);
		return 2;
	}
	jobdir = argv[1];
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

	dir = realpath(jobdir, NULL);
	if (!dir) {
		fprintf(stderr, "paddock-exec: %s: %s\n", jobdir, strerror(errno));
		sup_secrets_free(secrets);
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
	if (r != 0)
		sup_secrets_free(secrets); /* the supervisor has its own copy */
	if (r > 0)
		return 0;
	if (r < 0) {
		fprintf(stderr, "paddock-exec: %s: cannot start the supervisor: %s\n", dir,
			strerror(-r));
		return 1;
	}
	r = sup_run(dir, dirfd, secrets);
	sup_secrets_free(secrets);
	return r < 0 ? 1 : 0;
}
