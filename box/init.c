/* init.c - paddock-init, PID 1 inside every box.
 *
 * Its jobs are the ones a PID 1 cannot leave to anyone else, and the box's
 * exec server:
 *
 *  - reap orphans: a process whose parent exits is re-parented to PID 1 of
 *    its PID namespace, and stays a zombie until PID 1 waits for it;
 *  - turn SIGTERM (and SIGINT, SIGHUP, SIGPWR) into a clean stop: pass
 *    SIGTERM on to every process in the box, wait until they are all gone,
 *    then exit, which ends the container;
 *  - run exec jobs (exec-proto.h): when the daemon handed it a listening
 *    socket as fd EXEC_SERVER_FD, fork and execute the commands that jobs'
 *    supervisors ask for, and report how each ended. A fork of PID 1 costs
 *    far less than a `crun exec`, and holds no copy of the host's mounts.
 *
 * It never exits otherwise and prints nothing (its stdio is /dev/null). It is
 * linked statically so that it runs in any image, and allocates nothing
 * (requests land in a static buffer, jobs in a static table).
 *
 * Signals are taken synchronously through a signalfd rather than by
 * handlers: no async-signal-safety to reason about, and no SIGCHLD can slip
 * between a check and a wait. Blocking them also matters for a reason
 * specific to PID 1: the kernel discards signals sent to a namespace's init
 * whose disposition is SIG_DFL, but queues blocked ones.
 *
 * Why "all gone" and not just "no children left" (waitpid's ECHILD): a
 * process entered with `crun exec` (a box started before the exec server,
 * or a daemon's fallback) stays a child of crun, outside the box, so this
 * program never hears of its exit. Were it to exit as soon as its own
 * children are gone, the kernel would SIGKILL those processes at once, and
 * the daemon's grace period between SIGTERM and SIGKILL would be lost. So
 * while stopping it also polls, every STOP_POLL_MS, whether any other
 * process is left. One that ignores SIGTERM keeps the box up until the
 * daemon's SIGKILL.
 *
 * The exec server's fds stay out of the box's reach: all are close-on-exec,
 * a job's child closes every one but its own connection before it drops
 * privileges, and this process is not dumpable (PR_SET_DUMPABLE 0), so
 * box root, which lacks CAP_SYS_PTRACE, can neither ptrace it nor open
 * /proc/1/fd/N nor pidfd_getfd() its fds. The non-dumpable flag is reset by
 * execve(), so each job's command is an ordinary process again.
 */

/* Autoconf's header is autoconfig.h: "config.h" is the daemon's own. */
#ifdef HAVE_CONFIG_H
#include "autoconfig.h"
#endif

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <linux/keyctl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/exec-proto.h"

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "unknown"
#endif

#define STOP_POLL_MS 20

/* A job the server started: its supervisor's connection (-1 once that is
 * gone) and the command's PID in the box (0: the slot is free). */
struct job {
	int conn;
	pid_t pid;
};

static struct job jobs[EXEC_MAX_JOBS];
/* Connections whose request has not come yet: poll()ed like the jobs'. */
static int pending[EXEC_MAX_JOBS];
static size_t n_pending;
static char req[EXEC_REQ_MAX + 1];

/* Sends one reply; a supervisor that is gone (EPIPE) or does not read is
 * its own loss, never a reason to block PID 1. */
static void reply(int conn, const char *text, int fd)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} ctl;
	struct iovec iov = {.iov_base = (void *)text, .iov_len = strlen(text)};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};

	if (fd >= 0) {
		memset(&ctl, 0, sizeof ctl);
		msg.msg_control = ctl.buf;
		msg.msg_controllen = sizeof ctl.buf;
		struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof fd);
	}
	(void)sendmsg(conn, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
}

/* The error reply, "error " + text. */
static void reply_error(int conn, const char *what, int err)
{
	char buf[512];

	snprintf(buf, sizeof buf, "error %s%s%s", what, err ? ": " : "", err ? strerror(err) : "");
	reply(conn, buf, -1);
}

static bool parse_id(const char *s, unsigned long max, unsigned long *ret)
{
	char *end;

	if (!s || *s < '0' || *s > '9')
		return false;
	errno = 0;
	*ret = strtoul(s, &end, 10);
	return errno == 0 && *end == '\0' && *ret <= max;
}

/* The command's side of the fork; never returns. conn is its connection,
 * the only fd besides fds[] that it keeps until execve() (close-on-exec),
 * to report a failure with. */
static _Noreturn void child(int conn, const int fds[3], uid_t uid, gid_t gid, const char *cwd,
			    char **argv, char **envp)
{
	const char *what = NULL;
	sigset_t none;
	int err = 0;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	/* A session and process group of its own (under crun exec it shares
	 * crun's): a `kill 0` of the job reaches the job alone. */
	(void)setsid();
	/* Should PID 1's own 0, 1 or 2 ever be closed, the connection or a
	 * received fd could hold one of those numbers: move them all above 2
	 * first, so the dup2()s below clobber none of them. */
	int high[3];
	if (conn <= 2)
		conn = fcntl(conn, F_DUPFD_CLOEXEC, 3);
	for (int i = 0; i < 3; i++)
		high[i] = fds[i] <= 2 ? fcntl(fds[i], F_DUPFD_CLOEXEC, 3) : fds[i];
	if (conn < 0 || high[0] < 0 || high[1] < 0 || high[2] < 0 || dup2(high[0], 0) < 0 ||
	    dup2(high[1], 1) < 0 || dup2(high[2], 2) < 0) {
		what = "cannot set up the command's stdio";
		goto fail;
	}
	/* Nothing of PID 1's but the connection: the listening socket and the
	 * other jobs' connections must not reach the box, even for the
	 * moment before execve(). */
	if (conn > 3)
		(void)syscall(SYS_close_range, 3, conn - 1, 0);
	(void)syscall(SYS_close_range, conn + 1, ~0U, 0);
	/* No supplementary groups, as crun exec --user=UID:GID sets them. */
	if (setgroups(0, NULL) < 0 || setresgid(gid, gid, gid) < 0) {
		what = "cannot set the command's group";
		goto fail;
	}
	if (setresuid(uid, uid, uid) < 0) {
		what = "cannot set the command's user";
		goto fail;
	}
	/* A session keyring of the job's own, not PID 1's (which all jobs
	 * would share). Where keyrings are refused (the seccomp filter) or
	 * absent there is nothing to share. */
	if (syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, NULL) < 0 && errno != EPERM &&
	    errno != ENOSYS) {
		what = "cannot make the job's session keyring";
		goto fail;
	}
	if (chdir(cwd) < 0) {
		char buf[PATH_MAX + 64];
		err = errno;
		snprintf(buf, sizeof buf, "cannot change to %s", cwd);
		reply_error(conn, buf, err);
		_exit(127);
	}
	/* The supervisor learns the command's host PID from this message's
	 * credentials (SO_PASSCRED), which the kernel fills in and
	 * translates. */
	reply(conn, "run", -1);
	execvpe(argv[0], argv, envp);
	{
		char buf[PATH_MAX + 64];
		err = errno;
		snprintf(buf, sizeof buf, "cannot run %s", argv[0]);
		reply_error(conn, buf, err);
		_exit(127);
	}
fail:
	err = errno;
	reply_error(conn, what, err);
	_exit(127);
}

/* Splits the request (len bytes in req, NUL-terminated strings) into
 * pointers, in place. Returns false for a malformed request. */
static bool parse_request(size_t len, char **ret_strings, size_t max, size_t *ret_n)
{
	size_t n = 0;

	if (len == 0 || req[len - 1] != '\0')
		return false;
	for (size_t i = 0; i < len; i += strlen(req + i) + 1) {
		if (n == max)
			return false;
		ret_strings[n++] = req + i;
	}
	*ret_n = n;
	return true;
}

/* Takes the request of a new connection and starts its job; the connection
 * then belongs to the job's slot, or is closed. */
static void serve(int conn)
{
	/* argv and env pointers: at most one per 2 bytes of the request. */
	static char *strs[EXEC_REQ_MAX / 2 + 2];
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(3 * sizeof(int))];
	} ctl;
	struct iovec iov = {.iov_base = req, .iov_len = EXEC_REQ_MAX};
	struct msghdr msg = {
	    .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf, .msg_controllen = sizeof ctl};
	int fds[3] = {-1, -1, -1}, nfds = 0;
	unsigned long uid, gid, argc;
	struct job *slot = NULL;
	size_t n;
	ssize_t len;
	pid_t pid;

	len = recvmsg(conn, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (len < 0 && (errno == EAGAIN || errno == EINTR))
		return; /* not yet: stays pending */
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); len >= 0 && c; c = CMSG_NXTHDR(&msg, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		int k = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		for (int i = 0; i < k; i++) {
			int fd;
			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
			if (nfds < 3)
				fds[nfds++] = fd;
			else
				close(fd);
		}
	}
	/* Now out of the pending list, whatever comes. */
	for (size_t i = 0; i < n_pending; i++)
		if (pending[i] == conn) {
			pending[i] = pending[--n_pending];
			break;
		}

	if (len <= 0 || (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || nfds != 3) {
		reply_error(conn, "malformed request", 0);
		goto drop;
	}
	req[len] = '\0';
	if (!parse_request((size_t)len, strs, sizeof strs / sizeof *strs - 1, &n) || n < 6 ||
	    strcmp(strs[0], EXEC_PROTO_MAGIC) != 0 || !parse_id(strs[1], UINT_MAX - 1, &uid) ||
	    !parse_id(strs[2], UINT_MAX - 1, &gid) || strs[3][0] != '/' ||
	    !parse_id(strs[4], n - 5, &argc) || argc == 0) {
		reply_error(conn, "malformed request", 0);
		goto drop;
	}
	for (size_t i = 0; i < EXEC_MAX_JOBS && !slot; i++)
		if (jobs[i].pid == 0)
			slot = &jobs[i];
	if (!slot) {
		reply_error(conn, "too many jobs in this box", 0);
		goto drop;
	}
	/* argv ends at its own NULL, which is also where env starts: shift
	 * env one up to make room. */
	char **argv = &strs[5];
	char **envp = &strs[5 + argc + 1];
	memmove(envp, &strs[5 + argc], (n - 5 - argc) * sizeof *strs);
	envp[n - 5 - argc] = NULL;
	argv[argc] = NULL;

	pid = fork();
	if (pid < 0) {
		reply_error(conn, "cannot fork", errno);
		goto drop;
	}
	if (pid == 0)
		child(conn, fds, (uid_t)uid, (gid_t)gid, strs[3], argv, envp);
	for (int i = 0; i < 3; i++)
		close(fds[i]);
	slot->conn = conn;
	slot->pid = pid;
	int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	reply(conn, "pid", pidfd);
	if (pidfd >= 0)
		close(pidfd);
	return;
drop:
	for (int i = 0; i < nfds; i++)
		close(fds[i]);
	close(conn);
}

/* A new connection: only from outside the box (its PID there is 0). */
static void accept_one(int lfd)
{
	struct ucred cred;
	socklen_t clen = sizeof cred;
	int conn = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

	if (conn < 0)
		return;
	if (getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0 || cred.pid != 0 ||
	    n_pending == EXEC_MAX_JOBS) {
		close(conn);
		return;
	}
	pending[n_pending++] = conn;
}

/* Reaps every child that has exited and reports the jobs' ends; returns once
 * none is left to reap now. */
static void reap_children(void)
{
	for (;;) {
		int st;
		pid_t pid = waitpid(-1, &st, WNOHANG);

		if (pid > 0) {
			for (size_t i = 0; i < EXEC_MAX_JOBS; i++) {
				if (jobs[i].pid != pid)
					continue;
				if (jobs[i].conn >= 0) {
					char buf[32];
					snprintf(buf, sizeof buf, "exit %d", st);
					reply(jobs[i].conn, buf, -1);
					close(jobs[i].conn);
				}
				jobs[i] = (struct job){.conn = -1};
				break;
			}
			continue;
		}
		if (pid < 0 && errno == EINTR)
			continue;
		return; /* 0: children still running; ECHILD: none at all */
	}
}

/* True when no process but this one is left in the box's PID namespace.
 * kill(-1, 0) checks every process this one may signal, which for the init
 * of a namespace is every other process in it: its children and processes
 * entered with setns() alike, zombies included. */
static bool box_is_empty(void)
{
	return kill(-1, 0) < 0 && errno == ESRCH;
}

static bool is_stop_signal(int sig)
{
	return sig == SIGTERM || sig == SIGINT || sig == SIGHUP || sig == SIGPWR;
}

/* The listening socket the daemon handed over, or -1 when there is none
 * (a daemon without the exec server started this box). */
static int server_socket(void)
{
	struct stat st;
	int on = 0;
	socklen_t len = sizeof on;

	if (fstat(EXEC_SERVER_FD, &st) < 0 || !S_ISSOCK(st.st_mode) ||
	    getsockopt(EXEC_SERVER_FD, SOL_SOCKET, SO_ACCEPTCONN, &on, &len) < 0 || !on)
		return -1;
	if (fcntl(EXEC_SERVER_FD, F_SETFD, FD_CLOEXEC) < 0 ||
	    fcntl(EXEC_SERVER_FD, F_SETFL, O_NONBLOCK) < 0)
		return -1;
	return EXEC_SERVER_FD;
}

int main(int argc, char *argv[])
{
	/* poll set: signalfd, listening socket, pending connections, jobs'
	 * connections (watched for hang-ups only). */
	static struct pollfd p[2 + 2 * EXEC_MAX_JOBS];
	static int pconn[2 + 2 * EXEC_MAX_JOBS];
	sigset_t all;
	bool stopping = false;
	int sfd, lfd;

	/* Arguments are ignored, except a request for the version. */
	if (argc == 2 && strcmp(argv[1], "--version") == 0) {
		printf("paddock-init %s\n", PACKAGE_VERSION);
		return EXIT_SUCCESS;
	}

	/* First of all: no process of the box may look into this one. */
	(void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);

	/* The server's socket first: without one, fd EXEC_SERVER_FD is closed
	 * before any fd of ours can take its number (a signalfd made first
	 * would be fd 3 in a box started without the server, and closed here:
	 * PID 1 would spin on it and never see SIGTERM). */
	lfd = server_socket();
	if (lfd < 0)
		(void)close(EXEC_SERVER_FD); /* whatever it was, not for the box */
	/* SIGKILL and SIGSTOP cannot be blocked; sigprocmask leaves them be. */
	sigfillset(&all);
	if (sigprocmask(SIG_BLOCK, &all, NULL) < 0)
		return EXIT_FAILURE; /* cannot happen with a valid set; nothing runs yet */
	sfd = signalfd(-1, &all, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0)
		return EXIT_FAILURE;
	for (size_t i = 0; i < EXEC_MAX_JOBS; i++)
		jobs[i].conn = -1;

	/* Do not keep the directory we were started in busy. */
	if (chdir("/") < 0) {
		/* Harmless: the box works the same from any directory. */
	}

	for (;;) {
		nfds_t np = 0;
		int timeout = stopping ? STOP_POLL_MS : -1;
		/* A stopping box takes no new jobs. */
		bool listening = lfd >= 0 && !stopping;

		p[np++] = (struct pollfd){.fd = sfd, .events = POLLIN};
		if (listening)
			p[np++] = (struct pollfd){.fd = lfd, .events = POLLIN};
		for (size_t i = 0; i < n_pending; i++) {
			pconn[np] = pending[i];
			p[np++] = (struct pollfd){.fd = pending[i], .events = POLLIN};
		}
		for (size_t i = 0; i < EXEC_MAX_JOBS; i++)
			if (jobs[i].pid && jobs[i].conn >= 0) {
				pconn[np] = (int)i;
				p[np++] = (struct pollfd){.fd = jobs[i].conn, .events = 0};
			}

		if (poll(p, np, timeout) < 0)
			continue; /* EINTR; nothing else with valid fds */

		if (p[0].revents) {
			struct signalfd_siginfo si;
			while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
				if (!is_stop_signal((int)si.ssi_signo))
					continue; /* SIGCHLD and the rest: consumed */
				/* Repeated on every such signal: a second SIGTERM
				 * reaches processes started since the first. */
				stopping = true;
				kill(-1, SIGTERM); /* all but ourselves; ESRCH if none */
			}
		}
		/* The poll set's layout is the one made above, whatever this
		 * round changes: a stop signal read just now, or a connection
		 * accepted just now (it joins the pending list, but not this
		 * round's poll set; counting it here once read a job's entry as
		 * a pending connection, and PID 1 closed its own stdin). */
		nfds_t k = 1;
		size_t np_pending = n_pending;
		if (listening) {
			if (p[k].revents && !stopping)
				accept_one(lfd);
			k++;
		}
		for (size_t i = 0; i < np_pending; i++, k++)
			if (p[k].revents)
				serve(pconn[k]);
		for (; k < np; k++)
			if (p[k].revents & (POLLHUP | POLLERR)) {
				/* The supervisor is gone; the job runs on, and is
				 * reaped unreported. */
				struct job *j = &jobs[pconn[k]];
				close(j->conn);
				j->conn = -1;
			}

		/* Whatever woke us: one SIGCHLD may stand for many exits. */
		reap_children();

		/* Checked right after the stop signal too, in case the box is
		 * already empty. */
		if (stopping && box_is_empty())
			return EXIT_SUCCESS;
	}
}
