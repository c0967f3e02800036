/* supervisor.h - paddock-exec, the per-job supervisor.
 *
 * Every exec job runs under its own supervisor process, so jobs outlive the
 * daemon: the supervisor owns the command's pipes, appends its output to
 * files in the job directory and records how it ended. The daemon only
 * follows those files.
 *
 * The job directory JOBDIR (created by the daemon) holds, before the
 * supervisor starts:
 *
 *	spec.json	{"container": "NAME", "crun": "/usr/bin/crun",
 *			 "crun_root": "/run/paddock/crun", "private_ns": true,
 *			 "server": "/run/paddock/exec/NAME",
 *			 "user": "1000:1000", "cwd": "/config",
 *			 "env": ["HOME=/config", ...], "argv": ["/bin/sh", "-c", "..."],
 *			 "log_max": 67108864}
 *
 * container, crun, crun_root and argv are required; server, user, cwd, env,
 * private_ns (default false), log_max (default SUP_LOG_MAX_DEFAULT) and
 * events are optional.
 *
 * "events": "AGENT" (a prompt, engine/prompts.h): each complete line of
 * stdout (at most SUP_EVENT_LINE_MAX bytes; a longer one is skipped, with a
 * note in output) goes to AGENT's normalizer (box/agent-events.h), whose
 * events are appended to `events` as stdout is to `stdout`; at the end the
 * end event follows, and `result` and `session` are written before exit
 * and status. Its stdin is closed at once (the text is in argv). env replaces the container's environment entirely when given
 * (crun exec --env semantics): include PATH.
 *
 * How the command is started: through the box's exec server (exec-proto.h)
 * at the socket path server, when given and the socket is there; otherwise
 * (no server, or a box whose PID 1 has none: its path is missing or refuses
 * connections) by `crun exec`, which stays the command's parent.
 *
 * `paddock-exec JOBDIR` detaches (fork, setsid; the parent exits 0 once the
 * supervisor has written supervisor.pid, 1 if it could not get that far) and
 * then writes, in JOBDIR:
 *
 *	supervisor.pid	"PID\n" of the supervisor (SIGUSR1: close the command's
 *			stdin once what was written to stdin.fifo is delivered;
 *			SIGTERM/SIGINT: forwarded to the command through crun)
 *	stdin.fifo	FIFO (0600): bytes written are fed to the command's stdin
 *	started		RFC 3339 UTC + "\n"
 *	status		"running\n", at the end "exited N\n" or "killed SIGNAME\n"
 *	pid		the command's PID in the host PID namespace (written
 *			once the command runs; absent if it never started)
 *	stdout, stderr	the streams, byte-exact, each capped at log_max bytes
 *	output		both streams interleaved in the order the supervisor
 *			read them, capped at log_max bytes
 *	crun.log	crun's own error messages, when crun exec ran it
 *	exit		"N\n": the exit code, 128+SIG if killed, 127 if the command
 *			could not be started
 *	ended		RFC 3339 UTC + "\n"
 *
 * While the supervisor runs it holds an exclusive flock() on JOBDIR itself:
 * a second `paddock-exec JOBDIR` fails (exit 1), and flock(LOCK_SH |
 * LOCK_NB) on JOBDIR succeeding tells the daemon, after a restart say, that
 * the supervisor is gone (no PID-reuse race, unlike kill(pid, 0)).
 *
 * Every small file is replaced atomically (temporary file + rename). status
 * is written last: a reader that sees a final status finds exit and ended
 * written and all output in the stream files.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/error.h"

#define SUP_LOG_MAX_DEFAULT (64ULL * 1024 * 1024)
/* Bytes written to stdin.fifo held while the command does not read them. */
#define SUP_STDIN_BUF_MAX (1024 * 1024)
/* How long output is still collected after crun exec exited (see
 * supervisor.c for why this is bounded). */
#define SUP_DRAIN_MSEC 2000
/* Exit code recorded when the command could not be started at all. */
#define SUP_EXIT_CANNOT_START 127
/* The longest stdout line of an agent that is normalized. */
#define SUP_EVENT_LINE_MAX (4 * 1024 * 1024)

struct sup_spec {
	char *container;
	char *crun;
	char *crun_root;
	char *server; /* the exec server's socket, or NULL */
	bool private_ns;
	char *user;  /* "UID:GID", or NULL */
	char *cwd;   /* absolute, or NULL */
	char **env;  /* NULL-terminated; NULL when not given */
	char **argv; /* NULL-terminated, at least one element */
	uint64_t log_max;
	char *events; /* the agent whose stdout is normalized, or NULL */
};

/* Splits a stream into lines for the normalizer: bytes are added with
 * sup_lines_feed(), which calls fn for each complete line (without its
 * '\n') of at most max bytes and counts the longer ones, which are
 * dropped, in skipped. */
struct sup_lines {
	char *buf;
	size_t len, cap, max;
	bool skipping; /* in a line over max */
	uint64_t skipped;
};
void sup_lines_feed(struct sup_lines *l, const char *data, size_t len,
		    void (*fn)(const char *line, size_t len, void *userdata), void *userdata);
/* The last line when the stream did not end with '\n' (same rules). */
void sup_lines_finish(struct sup_lines *l, void (*fn)(const char *line, size_t len, void *userdata),
		      void *userdata);
void sup_lines_release(struct sup_lines *l);

/* Parses and validates the text of spec.json (len bytes, need not be
 * NUL-terminated). Strings with NUL bytes, relative paths, a malformed user,
 * env entries without '=', an empty argv and log_max == 0 are refused with
 * -EINVAL and a reason in err. Returns 0 and a new spec in *ret (free with
 * sup_spec_free()), or -errno. */
int sup_spec_parse(const char *text, size_t len, struct sup_spec **ret, pd_error *err);

/* Builds the exec server's request (exec-proto.h) for spec: a malloc'd
 * buffer in *ret, its size in *ret_len. Returns 0, -ENOMEM, or -E2BIG when
 * it exceeds EXEC_REQ_MAX. */
int sup_exec_request(const struct sup_spec *spec, char **ret, size_t *ret_len);

/* The result from the exec server's report of a wait status: exact, unlike
 * sup_result_from_wait(): killed only when the command was. */
struct sup_result sup_result_from_server(int wstatus);

/* Frees a spec; accepts NULL; returns NULL. */
struct sup_spec *sup_spec_free(struct sup_spec *spec);

/* Builds the argument vector that runs the job:
 *	CRUN --root=R --log=file:JOBDIR/crun.log exec --pid-file=JOBDIR/pid
 *	     [--user=U] [--cwd=C] [--env=K=V...] -- CONTAINER ARGV...
 * jobdir must be absolute. Returns 0 and a NULL-terminated malloc'd vector
 * (free with sup_strv_free()), or -ENOMEM. */
int sup_crun_argv(const struct sup_spec *spec, const char *jobdir, char ***ret);

/* Frees a NULL-terminated string vector; accepts NULL; returns NULL. */
char **sup_strv_free(char **v);

/* How many of len new bytes may still be stored in a stream that already
 * holds used bytes, under a cap of max bytes. Never fails. */
size_t sup_cap_keep(uint64_t used, uint64_t max, size_t len);

/* A stream that keeps coming is read in batches: after a read of less than
 * SUP_STREAM_BATCH bytes its pipe is left alone for about the time the
 * command takes to write SUP_STREAM_BATCH more at the rate it has been
 * writing, at most SUP_STREAM_HOLD_USEC. A command writing 4 KiB at a time
 * then costs a read, two appends and the daemon's wake-ups per batch rather
 * than per write. The first output after a quiet spell is read at once;
 * what follows waits at most SUP_STREAM_HOLD_USEC. A fast writer is held
 * for less than it takes to fill the pipe, so it is not made to wait. */
#define SUP_STREAM_BATCH (256 * 1024)
#define SUP_STREAM_HOLD_USEC 1000
#define SUP_STREAM_HOLD_MIN_USEC 20 /* shorter holds are not worth a timer */

/* How long to hold a stream after a read of n bytes that came elapsed usec
 * after the previous read with data (ULLONG_MAX: none before): 0 for no
 * hold (n is 0 or at least SUP_STREAM_BATCH, or the hold would be under
 * SUP_STREAM_HOLD_MIN_USEC), else the time to write SUP_STREAM_BATCH at
 * n / elapsed, at most SUP_STREAM_HOLD_USEC. Never fails. */
unsigned long long sup_hold_usec(size_t n, unsigned long long elapsed);

/* One capped stream file (stdout, stderr or output). */
struct sup_log {
	int fd;		  /* opened O_APPEND; not owned */
	const char *name; /* "stdout", ... for the marker lines */
	uint64_t max;
	uint64_t stored;  /* stream bytes in the file */
	uint64_t dropped; /* stream bytes not stored (over the cap, or failed writes) */
	bool marked;	  /* the "capped" marker has been written */
	bool mid_line;	  /* the file does not end with '\n' */
	int error;	  /* first write error (-errno), 0 if none */
};

/* Appends a chunk of the stream. Bytes up to the cap are stored exactly;
 * the first time bytes must be dropped, one marker line
 * "\n[paddock: NAME capped at MAX bytes; the rest is dropped]\n" follows
 * them, and dropped bytes are counted. A failed write counts its bytes as
 * dropped and is remembered in log->error; the stream goes on. */
void sup_log_append(struct sup_log *log, const void *buf, size_t len);

/* Appends a line of the supervisor's own, starting a new line first if
 * the file ends mid-line (not counted against the cap). */
void sup_log_note(struct sup_log *log, const char *text);

/* Ends the stream: "[paddock: D bytes dropped]\n" if anything was dropped. */
void sup_log_finish(struct sup_log *log);

/* How a job ended. */
struct sup_result {
	bool killed;
	int code; /* the exit code, or the signal number when killed */
};

/* The result from crun exec's wait status. crun 1.8.1 (attached, no tty)
 * waits for the command and exits with its exit code, or with 128+N when
 * the command was killed by signal N; so a code in 129..128+SIGRTMAX is read
 * as "killed" (as shells read $?). crun itself killed by a signal counts as
 * the job killed by that signal. started is false when crun never wrote the
 * pid file: then the command never ran and the result is exit 127. */
struct sup_result sup_result_from_wait(int wstatus, bool started);

/* The exit file's value: code, or 128+signal when killed. */
int sup_result_exit_code(struct sup_result res);

/* Formats the final status line, "exited N\n" or "killed SIGNAME\n" (e.g.
 * "killed SIGKILL\n"; a signal without a name, such as a real-time one, as
 * "killed SIG36\n"). bufsz >= 32. */
void sup_format_status(struct sup_result res, char *buf, size_t bufsz);

/* Formats a signal name with its SIG prefix. bufsz >= 16. */
void sup_signal_name(int sig, char *buf, size_t bufsz);

/* Replaces dirfd/name atomically with text (temporary file + rename, no
 * fsync: the rename is what readers rely on). Mode 0644. Returns 0 or
 * -errno. */
int sup_write_record(int dirfd, const char *name, const char *text);

/* Detaches from the caller: forks; the parent waits until the child has
 * written supervisor.pid into dirfd and returns 1 (the caller then exits 0),
 * or -errno if the child failed before that (-EBUSY: another supervisor
 * holds the job). The child blocks the supervisor's signals, starts a new
 * session, takes the flock on dirfd (kept as long as dirfd is open), points
 * stdio at /dev/null, writes supervisor.pid and returns 0: it is the
 * supervisor. */
int sup_detach(int dirfd);

/* Reads the secrets the daemon hands over on fd (paddock-exec
 * --secrets-fd=N): "NAME=VALUE\0" entries up to EOF, at most
 * SUP_SECRETS_MAX bytes; closes fd. A NULL-terminated vector in *ret, to
 * free with sup_secrets_free() (which zeroes them). -EINVAL for an entry
 * without '=' or an unterminated last one, -E2BIG over the cap. */
#define SUP_SECRETS_MAX (8 * 1024 * 1024)
int sup_secrets_read(int fd, char ***ret);
void sup_secrets_free(char **v);

/* Adds secrets (may be NULL) to spec's env, after what it sets: a name the
 * spec's env already sets keeps the spec's value. -ENOMEM. */
int sup_spec_add_env(struct sup_spec *spec, char *const *secrets);

/* Runs the job described by jobdir/spec.json to its end and records it
 * (see the top of this file). jobdir must be absolute, dirfd open on it.
 * secrets (NULL or NULL-terminated "NAME=VALUE", sup_secrets_read()): added
 * to the command's environment; a job with any runs through the exec server
 * only (crun exec would put them on its command line): without one it
 * cannot start, and says why.
 * Single-threaded; blocks SIGCHLD, SIGUSR1, SIGTERM and SIGINT and
 * ignores SIGPIPE and SIGHUP. Returns 0 once a final status is written, or
 * -errno when even that failed. A job that cannot start is still recorded
 * (exit 127) and returns 0. */
int sup_run(const char *jobdir, int dirfd, char *const *secrets);
