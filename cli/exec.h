/* exec.h - `paddock exec`: a named job in a box, its stdout and stderr
 * followed live to fd 1 and 2, and its exit code. */
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
