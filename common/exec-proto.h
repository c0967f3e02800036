/* exec-proto.h - the box's exec server: how a job's supervisor (supervisor.c,
 * on the host) asks the box's PID 1 (init.c) to run a command.
 *
 * The daemon makes a listening SOCK_SEQPACKET unix socket, bound in a
 * directory of its run dir (0700 root) that is never mounted into a box, and
 * hands it to the box's PID 1 as fd EXEC_SERVER_FD when it starts the box
 * (crun run --preserve-fds), before any code of the box runs. PID 1 keeps
 * that fd close-on-exec and itself non-dumpable (PR_SET_DUMPABLE 0), so
 * the box's own processes, root included, can neither reach the socket's
 * path, nor take the fd through /proc/1/fd, ptrace or pidfd_getfd (each
 * needs CAP_SYS_PTRACE against a non-dumpable process, which no box has).
 * PID 1 also refuses a peer whose PID is visible in the box's PID namespace.
 *
 * One connection per job. The supervisor sends one message, a request:
 *
 *	EXEC_PROTO_MAGIC \0 UID \0 GID \0 CWD \0 ARGC \0 ARGV... \0 ENV... \0
 *
 * (decimal UID, GID and ARGC; ARGC >= 1 strings of argv, then every
 * remaining string is a KEY=VALUE of the environment, which replaces PID 1's
 * entirely) with SCM_RIGHTS carrying exactly three fds: the command's stdin,
 * stdout and stderr. PID 1 forks; the child starts a session of its own,
 * takes the three fds as 0, 1 and 2, drops every other fd, sets groups (no
 * supplementary ones), GID and UID, joins a new session keyring, changes to CWD and executes
 *ARGV[0] (searched in PATH when it has no '/'). The child inherits the box's namespaces, cgroup,
 * seccomp filter, capability bounding set and no_new_privs from PID 1, as a
 * `crun exec` would set them from the box's configuration. Replies, one
 * message each:
 *
 *	"pid"		from PID 1, with SCM_RIGHTS: a pidfd of the command
 *			(the supervisor signals the command through it)
 *	"run"		from the command itself, right before execve(): the
 *			supervisor, which set SO_PASSCRED, reads the command's
 *			host PID from the message's credentials
 *	"error TEXT"	the command could not be started (sent by the child
 *			before it exits 127, or by PID 1 for a bad request;
 *			an "exit" follows only when a child was forked)
 *	"exit STATUS"	the command ended: its wait status in decimal
 *
 * after which PID 1 closes the connection. A connection that closes without
 * "exit" means PID 1 is gone: the box stopped, and the command with it.
 */
#pragma once

#define EXEC_PROTO_MAGIC "paddock-exec/1"
/* The listening socket, as PID 1 receives it. */
#define EXEC_SERVER_FD 3
/* A request's largest size (the command line and env are 64 KiB each). */
#define EXEC_REQ_MAX (512 * 1024)
/* Jobs one box's PID 1 runs at once; more are refused with an error. */
#define EXEC_MAX_JOBS 1024

/* The client's side of the protocol, shared by the job supervisor
 * (box/supervisor.c) and the daemon's own commands in a box
 * (runtime/box-exec.c). */
#include <stddef.h>
#include <sys/types.h>

/* Builds a request: a malloc'd buffer in *ret, its size in *ret_len. env
 * NULL: PATH alone. Returns 0, -ENOMEM, or -E2BIG when it exceeds
 * EXEC_REQ_MAX. */
int exec_proto_request(unsigned uid, unsigned gid, const char *cwd, const char *const *argv,
		       const char *const *env, char **ret, size_t *ret_len);
/* Connects to the server at path: the connection (SOCK_SEQPACKET,
 * close-on-exec), -ENOENT or -ECONNREFUSED when there is no server there,
 * or another -errno. */
int exec_proto_connect(const char *path);
/* Sends the request with the command's stdin, stdout and stderr, and asks
 * for the senders' credentials on every reply (the "run" message's PID).
 * The caller runs as root (the buffer is forced to a request's size). */
int exec_proto_send(int conn, const char *req, size_t len, const int fds[3]);
/* Receives one reply into buf (NUL-terminated, at most bufsz - 1 bytes):
 * its length, 0 when the server closed the connection, or -errno (-EAGAIN
 * with MSG_DONTWAIT in flags). A passed fd goes to *ret_fd (-1: none; the
 * caller closes it), the sender's PID to *ret_pid (0: none). */
ssize_t exec_proto_recv(int conn, int flags, char *buf, size_t bufsz, int *ret_fd, pid_t *ret_pid);
