/* agent-events.h - what the coding agents print, made one schema; and the
 * command line that runs each of them headless.
 *
 * Every agent (claude, codex, opencode, pi) prints its own JSON stream, one
 * object a line. A normalizer turns each line into zero or more events of
 * one schema, one JSON object a line, `type` first, then `time` (the RFC
 * 3339 UTC time the caller gives, with milliseconds):
 *
 *	{"type":"start","time":T,"agent":"claude","session":"S","model":"M"}
 *	{"type":"message","time":T,"text":"..."}		(assistant text)
 *	{"type":"tool_call","time":T,"id":"ID","name":"Write","input":{...}}
 *	{"type":"tool_result","time":T,"id":"ID","output":"...","is_error":false}
 *	{"type":"usage","time":T,"input_tokens":N,"output_tokens":N}
 *	{"type":"error","time":T,"message":"..."}
 *	{"type":"end","time":T,"exit":N,"result":"..."}	(always last)
 *
 * start comes from the agent's own first event (claude's init, codex's
 * thread.started, pi's session) or, for an agent without one (opencode),
 * just before the first other event; session and model are there when the
 * agent told them by then. usage counts the tokens of the prompt so far,
 * as the agent reports them (a running total). Tool names are the agent's
 * own (claude "Write", opencode and pi "write"); codex's items get "shell"
 * (a command), "apply_patch" (a file change), "web_search" or
 * "SERVER.TOOL" (an MCP call), with the command or changes as input.
 *
 * The stream is hostile (the agent runs inside the box): a line longer
 * than AGENT_EVENTS_LINE_MAX, a line that is not a JSON object (not JSON,
 * nesting deeper than jansson's limit, a NUL, invalid UTF-8), a field of
 * the wrong type or an unknown event is skipped, never an error. Texts are
 * cut at AGENT_EVENTS_TEXT_MAX bytes, tool outputs at
 * AGENT_EVENTS_OUTPUT_MAX, tool inputs larger than AGENT_EVENTS_INPUT_MAX
 * once printed are replaced by {"truncated": true}; the session and model
 * are kept only when they are short printable words. The normalizer holds
 * a bounded state whatever the agent prints.
 *
 * Pure: no I/O, no clock; not thread-safe (one owner).
 */
#pragma once

#include <stddef.h>

#include "common/buf.h"
#include "common/error.h"

#define AGENT_EVENTS_LINE_MAX (8u << 20)
#define AGENT_EVENTS_TEXT_MAX (1u << 20)
#define AGENT_EVENTS_OUTPUT_MAX (64u << 10)
#define AGENT_EVENTS_INPUT_MAX (64u << 10)

struct agent_events;

/* A normalizer for agent `agent` ("claude", "codex", "opencode", "pi").
 * NULL with errno EINVAL for another name, ENOMEM when out of memory. */
struct agent_events *agent_events_new(const char *agent);

/* Normalizes one line of the agent's stdout (len bytes, without or with
 * its trailing newline) and appends the events it makes to out, each
 * ending in '\n'. Returns how many events were appended (0 for a skipped
 * line, and for every line after agent_events_end()), or -ENOMEM, or
 * -EFBIG when out's cap cut an event (out then holds part of it). */
int agent_events_line(struct agent_events *s, const char *line, size_t len, const char *time,
		      struct pd_buf *out);

/* The agent ended with exit_code: appends start (when none was yet) and
 * end. Once only: later calls append nothing and return 0. Returns the
 * number of events appended, -ENOMEM or -EFBIG. */
int agent_events_end(struct agent_events *s, int exit_code, const char *time, struct pd_buf *out);

/* The agent's final answer so far (its result event, else its last
 * message), "" when it gave none. Valid until the next call on s. */
const char *agent_events_result(const struct agent_events *s);

/* The agent's session id (to resume it), "" while unknown. Valid until
 * the next call on s. */
const char *agent_events_session(const struct agent_events *s);

void agent_events_free(struct agent_events *s);

/* What a prompt runs: the text, and optionally the model, the session of
 * an earlier prompt to resume and the model endpoint's base URL (the API
 * root without /v1: http://HOST[:PORT][/PATH]). */
struct agent_run {
	const char *text, *model, *session, *base_url;
};

#define AGENT_TEXT_MAX (100u << 10)

/* The command line of agent `agent` running run headless, in its JSON
 * mode, permission prompts off: *ret_argv (argv[0] a command name, looked
 * up in the box's PATH) and *ret_env (extra "KEY=VALUE" strings: base URL,
 * permission, telemetry and update switches; never a secret), both
 * NULL-terminated and malloc'd (free with strv_free()). The text is one
 * argv element, after the options, so that it is never read as one.
 *
 * -ENOENT for an agent without a headless mode here (kimi, prime, an
 * unknown name). -EINVAL with a reason for a text longer than
 * AGENT_TEXT_MAX or empty, a model or session that is not a short word
 * (letters, digits, "._:/@+-", not starting with '-'), a base URL that is
 * not http(s):// followed by printable characters without quotes,
 * backslashes or spaces. -ENOMEM. Nothing is returned on failure. */
int agent_command(const char *agent, const struct agent_run *run, char ***ret_argv, char ***ret_env,
		  pd_error *err);
