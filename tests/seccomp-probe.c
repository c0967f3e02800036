/* seccomp-probe.c - run inside a box by integration/test-seccomp.sh.
 *
 * Built statically on the host (the tiny image has no libc) and copied into
 * the box's root/. Makes each system call a box's seccomp filter must refuse,
 * each in a child of its own (some would change the caller if they
 * succeeded), and prints one line per call: "NAME RESULT", RESULT being OK
 * when the call succeeded or the errno's name (EPERM, ENOSYS, EINVAL, ...).
 *
 * Arguments are chosen, where the kernel allows it, so that without a filter
 * the call fails with another errno than the filter's (EFAULT, EBADF,
 * EINVAL) or succeeds: the test can then tell the filter's answer from the
 * kernel's own permission checks. A few (open_by_handle_at, init_module,
 * kexec_load, mount) are refused by capability checks anyway; they are here
 * so that the filter's answer is still checked.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef CLONE_NEWUSER
#define CLONE_NEWUSER 0x10000000
#endif
#define KEY_SPEC_SESSION_KEYRING (-3)
#define KEYCTL_GET_KEYRING_ID 0
#define I386_NR_UNSHARE 310

/* unshare(CLONE_NEWUSER) through the 32-bit x86 ABI (int $0x80): the filter
 * must cover the compat ABI as well. */
static long unshare_i386(void)
{
#if defined(__x86_64__)
	long ret;
	__asm__ volatile("int $0x80"
			 : "=a"(ret)
			 : "a"((long)I386_NR_UNSHARE), "b"((long)CLONE_NEWUSER)
			 : "memory", "r8", "r9", "r10", "r11");
	if (ret < 0 && ret > -4096) {
		errno = (int)-ret;
		return -1;
	}
	return ret;
#else
	errno = ENOSYS;
	return -1;
#endif
}

static long setuid_child(void)
{
	if (setgid(1000) < 0 || setuid(1000) < 0)
		return -1;
	return getuid() == 1000 ? 0 : (errno = EIO, -1);
}

static long fork_child(void)
{
	pid_t pid = fork();
	int st;

	if (pid < 0)
		return -1;
	if (pid == 0)
		_exit(7);
	if (waitpid(pid, &st, 0) < 0)
		return -1;
	return WIFEXITED(st) && WEXITSTATUS(st) == 7 ? 0 : (errno = EIO, -1);
}

static long probe(const char *name)
{
	if (!strcmp(name, "unshare_user"))
		return unshare(CLONE_NEWUSER);
	if (!strcmp(name, "unshare_user_i386"))
		return unshare_i386();
	if (!strcmp(name, "clone_newuser"))
		return syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0);
	if (!strcmp(name, "clone3"))
		return syscall(SYS_clone3, NULL, 0);
	if (!strcmp(name, "setns"))
		return syscall(SYS_setns, -1, 0);
	if (!strcmp(name, "bpf"))
		return syscall(SYS_bpf, 9999, NULL, 0);
	if (!strcmp(name, "perf_event_open"))
		return syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0);
	if (!strcmp(name, "keyctl"))
		return syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0);
	if (!strcmp(name, "add_key"))
		return syscall(SYS_add_key, "user", "paddock-probe", "x", 1,
			       KEY_SPEC_SESSION_KEYRING);
	if (!strcmp(name, "request_key"))
		return syscall(SYS_request_key, "user", "paddock-probe", NULL, 0);
	if (!strcmp(name, "open_by_handle_at"))
		return syscall(SYS_open_by_handle_at, -1, NULL, 0);
	if (!strcmp(name, "init_module"))
		return syscall(SYS_init_module, NULL, 0, "");
	if (!strcmp(name, "finit_module"))
		return syscall(SYS_finit_module, -1, "", 0);
	if (!strcmp(name, "kexec_load"))
		return syscall(SYS_kexec_load, 0, 0, NULL, 0);
	if (!strcmp(name, "mount"))
		return mount("none", "/mnt", "tmpfs", 0, NULL);
	if (!strcmp(name, "io_uring_setup"))
		return syscall(SYS_io_uring_setup, 0, NULL);
	if (!strcmp(name, "fork"))
		return fork_child();
	if (!strcmp(name, "setuid"))
		return setuid_child();
	errno = EINVAL;
	fprintf(stderr, "unknown probe %s\n", name);
	return -2;
}

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		int fds[2], st, err = 0;
		pid_t pid;

		if (pipe(fds) < 0)
			return 2;
		pid = fork();
		if (pid < 0)
			return 2;
		if (pid == 0) {
			long r = probe(argv[i]);
			err = r < 0 ? errno : 0;
			if (write(fds[1], &err, sizeof err) != sizeof err)
				_exit(3);
			_exit(r == -2 ? 2 : 0);
		}
		close(fds[1]);
		if (read(fds[0], &err, sizeof err) != sizeof err)
			err = -1;
		close(fds[0]);
		if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			return 2;
		if (err < 0)
			printf("%s NORESULT\n", argv[i]);
		else if (err == 0)
			printf("%s OK\n", argv[i]);
		else
			printf("%s %s\n", argv[i],
			       strerrorname_np(err) ? strerrorname_np(err) : "E?");
	}
	return 0;
}
