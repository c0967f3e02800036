/* box-exec.h - the daemon's own commands in a running box, through the
 * box's exec server (common/exec-proto.h): what the desktop runs (its X
 * server and session, a screen grab, xdotool). The command is a child of
 * the box's PID 1, in the box's namespaces, cgroup and seccomp filter, as
 * the given user; the daemon holds its pidfd and hears how it ended.
 *
 * The server's socket path is runtime_exec_socket()'s. Blocking calls: no
 * lock held (lock.h). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "common/buf.h"
#include "common/error.h"

struct box_exec {
	const char *server; /* the exec server's socket */
	unsigned uid, gid;  /* in the box */
	const char *cwd;    /* NULL: "/" */
	const char *const *argv;
	const char *const *env; /* KEY=VALUE, the whole environment; NULL: PATH */
};

/* A command that runs: its connection to PID 1 (the "exit" comes there),
 * its pidfd and its host PID. */
struct box_exec_proc {
	int conn;
	int pidfd;
	pid_t pid;
	bool ended;
	int wstatus;
};

#define BOX_EXEC_PROC_INIT                                                                         \
	{                                                                                          \
		.conn = -1, .pidfd = -1                                                            \
	}

/* Starts x with fds[0..2] as its stdin, stdout, stderr (they stay the
 * caller's). Returns once it runs (0, *ret filled), or -errno with the
 * reason in err: -ENOTCONN when the box has no exec server, the server's
 * "error" text when the command cannot be started (not found: -ENOENT). */
int box_exec_start(const struct box_exec *x, const int fds[3], struct box_exec_proc *ret,
		   pd_error *err);
/* Waits up to timeout_ms (-1: no limit) for the command to end: 0 with
 * p->ended and p->wstatus set (a box that stopped ends it with SIGKILL),
 * or -ETIMEDOUT. */
int box_exec_wait(struct box_exec_proc *p, int timeout_ms);
/* Signals it through its pidfd (never another process). */
int box_exec_kill(struct box_exec_proc *p, int sig);
/* Closes the connection and the pidfd (the command runs on). */
void box_exec_release(struct box_exec_proc *p);

/* Runs x with stdin /dev/null, collects its stdout (at most max bytes:
 * more is -EFBIG, the command killed) and the start of its stderr (for the
 * reason), and waits for its end, timeout_ms at most (then it is killed:
 * -ETIMEDOUT). Returns 0 with *ret_wstatus set; out holds what it wrote. A
 * command that failed (exit not 0, or a signal) is not an error here. */
int box_exec_output(const struct box_exec *x, size_t max, int timeout_ms, struct pd_buf *out,
		    struct pd_buf *errout, int *ret_wstatus, pd_error *err);
