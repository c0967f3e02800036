/* exec-server-attack.c - run inside a box, as its root, by
 * integration/test-exec-server.sh: tries every way a box process has to
 * reach the box's exec server (PID 1's listening socket, fd 3, and its jobs'
 * connections) and prints one line per try, "NAME OK" when the try got
 * through, "NAME ERRNO" (EPERM, EACCES, ...) when it was refused:
 *
 *   ptrace         PTRACE_ATTACH to PID 1 (then it could make PID 1 call
 *                  accept() for it)
 *   vmread         process_vm_readv() of PID 1's memory
 *   getfd          pidfd_getfd() of PID 1's fd 3 (the listening socket)
 *   procfd         open() of /proc/1/fd/3
 *   fdlink         readlink() of /proc/1/fd/3
 *   connect        connect() to each unix socket path the box can see
 *                  (/proc/net/unix and a walk of the filesystem, /proc and
 *                  /sys excepted) that answers an exec request: "connect
 *                  OK" if one did, "connect ENOENT" if none did
 *
 * `exec-server-attack keyring` prints the serial of the process's session
 * keyring instead (or the errno name), to tell jobs' keyrings apart.
 *
 * Built statically on the host, so it runs in any image.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

static void result(const char *name, int r)
{
	printf("%s %s\n", name, r >= 0 ? "OK" : strerrorname_np(errno));
	fflush(stdout);
}

static int answered;

/* Connects to path (SOCK_SEQPACKET, then SOCK_STREAM) and sends what an
 * exec request starts with; one that answers counts. */
static void try_socket(const char *path)
{
	static const int types[] = {SOCK_SEQPACKET, SOCK_STREAM};
	struct sockaddr_un sa = {.sun_family = AF_UNIX};

	if (strlen(path) >= sizeof sa.sun_path)
		return;
	strcpy(sa.sun_path, path);
	for (size_t i = 0; i < 2; i++) {
		int fd = socket(AF_UNIX, types[i] | SOCK_CLOEXEC, 0);
		struct pollfd p = {.fd = fd, .events = POLLIN};
		char buf[64];

		if (fd < 0)
			continue;
		if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0 &&
		    send(fd, "paddock-exec/1", 15, MSG_NOSIGNAL) > 0 && poll(&p, 1, 200) > 0 &&
		    recv(fd, buf, sizeof buf, MSG_DONTWAIT) > 0) {
			fprintf(stderr, "answered: %s\n", path);
			answered++;
		}
		close(fd);
	}
}

static int walk(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)type;
	(void)ftw;
	if (strcmp(path, "/proc") == 0 || strcmp(path, "/sys") == 0)
		return FTW_SKIP_SUBTREE;
	if (S_ISSOCK(st->st_mode))
		try_socket(path);
	return FTW_CONTINUE;
}

int main(int argc, char **argv)
{
	char buf[256];
	struct iovec local = {.iov_base = buf, .iov_len = sizeof buf};
	struct iovec remote = {.iov_base = (void *)0x400000, .iov_len = 16};
	int pidfd, r;
	FILE *f;

	if (argc == 2 && strcmp(argv[1], "keyring") == 0) {
		/* KEYCTL_GET_KEYRING_ID 0, KEY_SPEC_SESSION_KEYRING -3 */
		long id = syscall(SYS_keyctl, 0, -3, 0);
		if (id < 0)
			printf("%s\n", strerrorname_np(errno));
		else
			printf("%ld\n", id);
		return 0;
	}
	r = (int)ptrace(PTRACE_ATTACH, 1, NULL, NULL);
	result("ptrace", r);
	if (r == 0) {
		waitpid(1, NULL, __WALL);
		ptrace(PTRACE_DETACH, 1, NULL, NULL);
	}
	/* EFAULT would mean the access check passed. */
	r = (int)process_vm_readv(1, &local, 1, &remote, 1, 0);
	result("vmread", r < 0 && errno == EFAULT ? 0 : r);

	pidfd = (int)syscall(SYS_pidfd_open, 1, 0);
	r = pidfd < 0 ? -1 : (int)syscall(SYS_pidfd_getfd, pidfd, 3, 0);
	result("getfd", r);

	r = open("/proc/1/fd/3", O_RDWR | O_CLOEXEC);
	/* A socket cannot be opened through /proc (ENXIO): getting that far
	 * means the permission check passed. */
	result("procfd", r < 0 && errno == ENXIO ? 0 : r);
	r = (int)readlink("/proc/1/fd/3", buf, sizeof buf);
	result("fdlink", r);

	f = fopen("/proc/net/unix", "re");
	while (f && fgets(buf, sizeof buf, f)) {
		char *path = strchr(buf, '/');
		if (path) {
			path[strcspn(path, "\n")] = '\0';
			try_socket(path);
		}
	}
	if (f)
		fclose(f);
	nftw("/", walk, 32, FTW_PHYS | FTW_ACTIONRETVAL);
	errno = ENOENT;
	result("connect", answered ? 0 : -1);
	return 0;
}
