/* prompt.h - `paddock prompt`: a coding agent's run in a box
 * (boxes/NAME/prompts/P/, tree.md "Prompts"), its normalized events shown
 * as readable lines (prompt-text.c, no server) and followed live
 * (prompt.c).
 *
 * An event is one JSON object a line, `type` first (the daemon's
 * box/agent-events.h): start, message, tool_call, tool_result, usage,
 * error, end (always last). Everything in an event is the agent's, so
 * hostile: no control character or escape sequence of it reaches the
 * terminal raw (they print as \xHH). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "cli/client.h"

/* How the events of one prompt are shown. Fill the first fields, zero the
 * rest; cli_prompt_view_release() frees what the events left. */
typedef struct cli_prompt_view {
	FILE *out;	/* tool calls, tool results, messages */
	FILE *err;	/* start, usage, errors, notices */
	unsigned width; /* columns of a one-line item (a tool call, a result); 0: no cut */
	bool json;	/* print each event as it is (one line of JSON) */
	bool quiet;	/* no start and usage lines */

	/* What the events said. */
	bool ended;	     /* the `end` event came */
	int exit;	     /* its exit (valid when ended) */
	bool said_something; /* a message was printed */
	char *session;	     /* from start, or NULL */
	bool has_usage;	     /* a usage event came, not shown yet */
	long long input_tokens, output_tokens;
	unsigned skipped; /* lines that were no event (not JSON, no type) */
} cli_prompt_view;

/* Shows one event line (without its newline; a trailing '\r' is
 * ignored). Lines that are not a JSON object with a string `type` are
 * counted in skipped and shown as nothing; an unknown type is shown as
 * nothing. Usage is shown once, the last, when the events end. Returns 0,
 * or -ENOMEM. */
int cli_prompt_view_line(cli_prompt_view *v, const char *line, size_t len);

/* Shows the last usage (the prompt's tokens), once: called by the end
 * event, and by the caller when the events ended without one. */
void cli_prompt_view_finish(cli_prompt_view *v);

void cli_prompt_view_release(cli_prompt_view *v);

/* Writes s (n bytes) to f for a person: control characters and bytes
 * that are not UTF-8 as \xHH (text_printable()), but for '\n' and '\t'
 * when keep_lines, which stay as they are (without it, they and '\r'
 * become spaces). Stops after max_cols characters when max_cols > 0,
 * ending with "…" when something was cut. */
void cli_print_clean(FILE *f, const char *s, size_t n, bool keep_lines, unsigned max_cols);

/* The argument of a tool call that tells most about it: the first string
 * (or array of strings, joined by spaces) among the keys file_path,
 * filePath, path, command, cmd, pattern, url, query, description, prompt,
 * else the first string member. input is the JSON text of the call's
 * `input` object. malloc'd, NULL when there is none (or on ENOMEM). */
char *cli_tool_argument(const char *input_json);

typedef struct cli_prompt_opts {
	const char *agent, *model, *cont, *cwd; /* each may be NULL */
	const char *const *env;			/* KEY=VALUE */
	size_t n_env;
	const char *text; /* the prompt */
	bool json, quiet;
} cli_prompt_opts;

/* Creates prompts/cli-RANDOM/ in BOX, writes agent, model, continue, cwd
 * and env when given, then text (which starts it), follows events until
 * `end` (shown on stdout and stderr, see cli_prompt_view) and reads exit.
 * On SIGINT the prompt gets "kill" through its ctl, and the events are
 * followed to their end; a second SIGINT gives up waiting. Returns 0 with
 * the prompt's exit status (0..255) in *ret_exit (130 after a SIGINT), or
 * -errno with the reason (-EINTR: gave up waiting); *ret_started tells
 * whether the prompt was started. A setup step that fails removes the
 * prompt's directory. */
int cli_prompt(cli_client *c, const char *box, const cli_prompt_opts *o, int *ret_exit,
	       bool *ret_started, pd_error *err);

/* The text of `prompt BOX WORD…`: the words joined by single spaces, or
 * standard input read whole when the one word is "-" (at most 64 KiB,
 * the tree's write cap). -EINVAL (empty text, too long) / -EIO. */
int cli_prompt_text(const char *const *words, size_t n, FILE *in, char **ret, pd_error *err);
