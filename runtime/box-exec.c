/* box-exec.c - the daemon's own commands in a box (box-exec.h). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/exec-proto.h"
#include "common/util.h"
#include "runtime/box-exec.h"

#define REPLY_MAX 640
/* The command runs before this: PID 1 forks at once. */
#define START_TIMEOUT_MS 10000
/* What is kept of a command's stderr, for the reason it failed. */
#define STDERR_KEEP 2048

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

void box_exec_release(struct box_exec_proc *p)
{
	if (p->conn >= 0)
		close(p->conn);
	if (p->pidfd >= 0)
		close(p->pidfd);
	p->conn = p->pidfd = -1;
}

/* One reply, waiting timeout_ms at most: its length, 0 when PID 1 closed
 * the connection, or -errno. */
static ssize_t recv_reply(struct box_exec_proc *p, int timeout_ms, char *buf, size_t bufsz, int *fd,
			  pid_t *pid)
{
	struct pollfd pfd = {.fd = p->conn, .events = POLLIN};
	int n;

	*fd = -1;
	*pid = 0;
	do
		n = poll(&pfd, 1, timeout_ms);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if (n == 0)
		return -ETIMEDOUT;
	return exec_proto_recv(p->conn, MSG_DONTWAIT, buf, bufsz, fd, pid);
}

/* Takes one reply the loops below do not wait for. */
static void note_reply(struct box_exec_proc *p, const char *buf, ssize_t n)
{
	if (n == 0) {
		/* PID 1 is gone: the box stopped, and the command with it. */
		if (!p->ended) {
			p->ended = true;
			p->wstatus = SIGKILL; /* a wait status: killed by SIGKILL */
		}
		close(p->conn);
		p->conn = -1;
	} else if (n > 0 && strncmp(buf, "exit ", 5) == 0 && !p->ended) {
		p->ended = true;
		p->wstatus = (int)strtol(buf + 5, NULL, 10);
	}
}

int box_exec_start(const struct box_exec *x, const int fds[3], struct box_exec_proc *ret,
		   pd_error *err)
{
	_cleanup_free_ char *req = NULL;
	struct box_exec_proc p = BOX_EXEC_PROC_INIT;
	char buf[REPLY_MAX];
	bool ran = false, got_pid = false;
	size_t len;
	int r;

	r = exec_proto_request(x->uid, x->gid, x->cwd, x->argv, x->env, &req, &len);
	if (r < 0)
		return pd_error_set(err, r, "%s",
				    r == -E2BIG ? "the command and its environment are too large"
						: "out of memory");
	p.conn = exec_proto_connect(x->server);
	if (p.conn == -ENOENT || p.conn == -ECONNREFUSED)
		return pd_error_set(err, -ENOTCONN,
				    "the box has no exec server (it was started by an older "
				    "paddockd: stop and start it)");
	if (p.conn < 0)
		return pd_error_set(err, p.conn, "cannot reach the box's exec server: %s",
				    strerror(-p.conn));
	r = exec_proto_send(p.conn, req, len, fds);
	if (r < 0) {
		box_exec_release(&p);
		return pd_error_set(err, r, "cannot send the command to the box: %s", strerror(-r));
	}
	/* "pid" with its pidfd from PID 1, and "run" (or "error") from the
	 * command's own process: two writers, so in either order. */
	while (!ran || !got_pid) {
		int fd;
		pid_t pid;
		ssize_t n = recv_reply(&p, START_TIMEOUT_MS, buf, sizeof buf, &fd, &pid);

		if (n < 0 && n != -EAGAIN && n != -EINTR) {
			box_exec_release(&p);
			return pd_error_set(err, (int)n, "the box's exec server did not answer: %s",
					    strerror((int)-n));
		}
		if (n == -EAGAIN || n == -EINTR)
			continue;
		if (n > 0 && strcmp(buf, "pid") == 0 && !got_pid) {
			got_pid = true;
			p.pidfd = fd; /* -1 if PID 1 could not open one */
			continue;
		}
		if (fd >= 0)
			close(fd);
		if (n > 0 && strcmp(buf, "run") == 0 && pid > 0) {
			p.pid = pid;
			ran = true;
		} else if (n > 0 && strncmp(buf, "error ", 6) == 0) {
			/* The child's reason comes before its "exit 127". */
			r = strstr(buf, "No such file") ? -ENOENT : -EIO;
			pd_error_set(err, r, "cannot run %s in the box: %s", x->argv[0], buf + 6);
			box_exec_release(&p);
			return r;
		} else if (n == 0) {
			box_exec_release(&p);
			return pd_error_set(err, -ESRCH, "the box stopped before %s ran",
					    x->argv[0]);
		}
	}
	if (p.pidfd < 0) {
		box_exec_release(&p);
		return pd_error_set(err, -EIO, "the box's exec server sent no pidfd");
	}
	*ret = p;
	return 0;
}

int box_exec_wait(struct box_exec_proc *p, int timeout_ms)
{
	unsigned long long deadline = now_usec() + (unsigned long long)timeout_ms * 1000;
	char buf[REPLY_MAX];

	while (!p->ended) {
		int fd, left = -1;
		pid_t pid;
		ssize_t n;

		if (p->conn < 0)
			return -ENOTCONN;
		if (timeout_ms >= 0) {
			unsigned long long now = now_usec();
			left = now >= deadline ? 0 : (int)((deadline - now + 999) / 1000);
		}
		n = recv_reply(p, left, buf, sizeof buf, &fd, &pid);
		if (fd >= 0)
			close(fd);
		if (n == -ETIMEDOUT || (n == -EAGAIN && left == 0))
			return -ETIMEDOUT;
		if (n == -EAGAIN || n == -EINTR)
			continue;
		note_reply(p, buf, n < 0 ? 0 : n);
	}
	return 0;
}

int box_exec_kill(struct box_exec_proc *p, int sig)
{
	if (p->pidfd < 0 || p->ended)
		return -ESRCH;
	if (syscall(SYS_pidfd_send_signal, p->pidfd, sig, NULL, 0) < 0)
		return -errno;
	return 0;
}

/* Reads what fd has into out (keeping at most keep bytes in all, the rest
 * counted in *over), or marks it closed (-1). */
static void drain(int *fd, struct pd_buf *out, size_t keep, size_t *over)
{
	char chunk[65536];
	ssize_t n = read(*fd, chunk, sizeof chunk);

	if (n > 0) {
		size_t room = out->len < keep ? keep - out->len : 0;
		size_t take = (size_t)n < room ? (size_t)n : room;
		if (take && pd_buf_append(out, chunk, take) < 0)
			*over += (size_t)n;
		*over += (size_t)n - take;
	} else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
		close(*fd);
		*fd = -1;
	}
}

int box_exec_output(const struct box_exec *x, size_t max, int timeout_ms, struct pd_buf *out,
		    struct pd_buf *errout, int *ret_wstatus, pd_error *err)
{
	struct box_exec_proc p = BOX_EXEC_PROC_INIT;
	int po[2] = {-1, -1}, pe[2] = {-1, -1}, fds[3];
	_cleanup_close_ int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	unsigned long long deadline = now_usec() + (unsigned long long)timeout_ms * 1000;
	size_t over = 0, err_over = 0;
	int r;

	if (devnull < 0)
		return pd_error_set(err, -errno, "cannot open /dev/null: %s", strerror(errno));
	if (pipe2(po, O_CLOEXEC) < 0 || pipe2(pe, O_CLOEXEC) < 0) {
		r = pd_error_set(err, -errno, "cannot make a pipe: %s", strerror(errno));
		goto out;
	}
	(void)fcntl(po[0], F_SETPIPE_SZ, 1024 * 1024);
	fds[0] = devnull;
	fds[1] = po[1];
	fds[2] = pe[1];
	r = box_exec_start(x, fds, &p, err);
	/* Ours are the read ends: EOF comes once the command's side closes. */
	close_fd(&po[1]);
	close_fd(&pe[1]);
	if (r < 0)
		goto out;
	(void)fcntl(po[0], F_SETFL, O_NONBLOCK);
	(void)fcntl(pe[0], F_SETFL, O_NONBLOCK);
	while (po[0] >= 0 || pe[0] >= 0 || !p.ended) {
		struct pollfd pf[3];
		int np = 0, io = -1, ie = -1, ic = -1, left;
		unsigned long long now = now_usec();

		if (now >= deadline) {
			(void)box_exec_kill(&p, SIGKILL);
			r = pd_error_set(err, -ETIMEDOUT, "%s did not end within %d ms", x->argv[0],
					 timeout_ms);
			goto out;
		}
		left = (int)((deadline - now + 999) / 1000);
		if (po[0] >= 0) {
			io = np;
			pf[np++] = (struct pollfd){.fd = po[0], .events = POLLIN};
		}
		if (pe[0] >= 0) {
			ie = np;
			pf[np++] = (struct pollfd){.fd = pe[0], .events = POLLIN};
		}
		if (!p.ended && p.conn >= 0) {
			ic = np;
			pf[np++] = (struct pollfd){.fd = p.conn, .events = POLLIN};
		}
		if (np == 0)
			break;
		if (poll(pf, (nfds_t)np, left) < 0 && errno != EINTR) {
			r = pd_error_set(err, -errno, "poll: %s", strerror(errno));
			goto out;
		}
		if (io >= 0 && pf[io].revents) {
			drain(&po[0], out, max, &over);
			if (over) {
				(void)box_exec_kill(&p, SIGKILL);
				r = pd_error_set(err, -EFBIG, "%s wrote more than %zu bytes",
						 x->argv[0], max);
				goto out;
			}
		}
		if (ie >= 0 && pf[ie].revents)
			drain(&pe[0], errout, STDERR_KEEP, &err_over);
		if (ic >= 0 && pf[ic].revents) {
			char buf[REPLY_MAX];
			int fd;
			pid_t pid;
			ssize_t n =
			    exec_proto_recv(p.conn, MSG_DONTWAIT, buf, sizeof buf, &fd, &pid);
			if (fd >= 0)
				close(fd);
			if (n != -EAGAIN && n != -EINTR)
				note_reply(&p, buf, n < 0 ? 0 : n);
		}
		if (!p.ended && p.conn < 0)
			break;
	}
	*ret_wstatus = p.wstatus;
	r = 0;
out:
	box_exec_release(&p);
	for (int i = 0; i < 2; i++) {
		close_fd(&po[i]);
		close_fd(&pe[i]);
	}
	return r;
}
