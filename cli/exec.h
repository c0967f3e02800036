/* exec.h - `paddock exec`: a named job in a box, its stdout and stderr
 * followed live to fd 1 and 2, and its exit code. The job helpers below
 * serve prompts too (prompt.c): a prompt is a job with other files. */
#pragma once

#include "cli/client.h"

struct cli_args;

typedef struct cli_exec_opts {
	const char *const *words; /* CMD…; one word is a shell line as is */
	size_t n_words;
	const char *const *env; /* KEY=VALUE */
	size_t n_env;
	const char *cwd;
	bool desktop;
} cli_exec_opts;

/* Creates exec/cli-RANDOM/ in BOX, writes env, cwd, desktop, then cmd
 * (cli_shell_join()), follows stdout and stderr concurrently (curl multi)
 * and reads exit. On the first SIGINT the job gets "signal INT" through
 * its ctl, on the second "kill"; a third gives up waiting (exit 130).
 * Returns 0 with the job's exit code (0..255) in *ret_exit, or -errno
 * with the reason; *ret_started tells whether the job was started (the
 * box was used). A setup step that fails removes the job directory. */
int cli_exec(cli_client *c, const char *box, const cli_exec_opts *o, int *ret_exit,
	     bool *ret_started, pd_error *err);

/* --- jobs and prompts: DIR is the job's tree path with its slash
 * ("boxes/B/exec/J/", "boxes/B/prompts/P/") --------------------------- */

/* PUT of value + "\n" to DIR + file; the error is prefixed with file. */
int cli_job_put(cli_client *c, const char *dir, const char *file, const char *value, pd_error *err);

/* Writes env (the KEY=VALUE lines) and cwd when given. */
int cli_job_settings(cli_client *c, const char *dir, const char *const *env, size_t n_env,
		     const char *cwd, pd_error *err);

/* Sends a ctl line ("kill", "signal INT"); a failure is only printed. */
void cli_job_ctl(cli_client *c, const char *dir, const char *line);

/* Reads DIR/exit (it waits for the end): 0 with 0..255, or -errno. */
int cli_job_exit(cli_client *c, const char *dir, int *ret, pd_error *err);

/* A stream of a job: each piece of the body of DIR + file goes to sink,
 * which returns false to stop following it (the stream then ends as if
 * the server had ended it). */
typedef bool (*cli_sink_fn)(void *user, const char *data, size_t n);
typedef struct cli_job_stream {
	const char *file;
	cli_sink_fn sink;
	void *user;
} cli_job_stream;

/* What a SIGINT does while following: called with the count of SIGINTs
 * so far (1, 2, …); returns 0 to keep following, or -EINTR (with the
 * reason) to stop now. */
typedef int (*cli_interrupt_fn)(cli_client *c, const char *dir, unsigned nth, void *user,
				pd_error *err);

/* Follows the n streams concurrently (curl multi) until each ended,
 * with SIGINT caught meanwhile and given to on_interrupt. Returns 0, the
 * first stream's failure as -errno with the reason, or on_interrupt's
 * -EINTR. */
int cli_job_follow(cli_client *c, const char *dir, const cli_job_stream *streams, size_t n,
		   cli_interrupt_fn on_interrupt, void *user, pd_error *err);
