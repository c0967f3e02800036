/* agent-events.h - each agent's JSON stream normalized to Paddock's events,
 * and the command line that runs an agent headless (issue 16, contract 6).
 *
 * One JSON object a line, `type` first, every event with `time` (RFC 3339
 * UTC, milliseconds): start, message, tool_call, tool_result, usage, error,
 * end (always last). Pure: no I/O.
 */
#pragma once

#include <stddef.h>

#include "common/buf.h"
#include "common/error.h"

struct agent_events;

/* A normalizer for agent (an agent id); NULL for an unknown agent or when
 * out of memory. */
struct agent_events *agent_events_new(const char *agent);
/* Feeds one line of the agent's stdout (without its newline); appends the
 * events it makes (zero or more lines) to out. */
int agent_events_line(struct agent_events *s, const char *line, size_t len, const char *time,
		      struct pd_buf *out);
/* The end: appends what is left and the end event with exit_code. */
int agent_events_end(struct agent_events *s, int exit_code, const char *time, struct pd_buf *out);
/* The final answer and the agent's session id so far ("" when none). */
const char *agent_events_result(struct agent_events *s);
const char *agent_events_session(struct agent_events *s);
void agent_events_free(struct agent_events *s);

/* What a prompt asks of its agent; NULL members are not set. */
struct agent_run {
	const char *text, *model, *session, *base_url;
};

/* The command that runs agent headless in its JSON mode with its
 * permission prompts off: argv (run under the box's shell PATH) and extra
 * env entries KEY=VALUE (base URL, switches), both NULL-terminated and
 * malloc'd (free with strv_free()). -ENOENT for an unknown agent. */
int agent_command(const char *agent, const struct agent_run *run, char ***ret_argv, char ***ret_env,
		  pd_error *err);
