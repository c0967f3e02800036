/* agent-events.c - each agent's JSON stream made one schema
 * (agent-events.h). The command lines are in agent-cmd.c. */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "box/agent-events.h"

enum agent_kind { AGENT_CLAUDE, AGENT_CODEX, AGENT_OPENCODE, AGENT_PI };

/* Tool calls codex announced (item.started) and has not finished: its
 * item.completed then makes no second tool_call. A small ring: an agent
 * starting more at once gets a repeated tool_call, never unbounded state. */
#define SEEN_MAX 32
#define ID_MAX 128
#define WORD_MAX 256
/* Texts gathered in a capped pd_buf may end inside a UTF-8 sequence: they
 * are gathered a little past their cap, which str_capped() then cuts on a
 * character boundary. */
#define SLACK 8

struct agent_events {
	enum agent_kind kind;
	const char *agent;
	bool started, ended;
	char *session, *model, *result;
	uint64_t input_tokens, output_tokens;
	char seen[SEEN_MAX][ID_MAX];
	unsigned seen_next;
};

static const char *const NAMES[] = {
    [AGENT_CLAUDE] = "claude",
    [AGENT_CODEX] = "codex",
    [AGENT_OPENCODE] = "opencode",
    [AGENT_PI] = "pi",
};

struct agent_events *agent_events_new(const char *agent)
{
	for (size_t i = 0; agent && i < ELEMENTSOF(NAMES); i++)
		if (strcmp(agent, NAMES[i]) == 0) {
			struct agent_events *s = calloc(1, sizeof(*s));
			if (!s)
				return NULL;
			s->kind = (enum agent_kind)i;
			s->agent = NAMES[i];
			return s;
		}
	errno = EINVAL;
	return NULL;
}

void agent_events_free(struct agent_events *s)
{
	if (!s)
		return;
	free(s->session);
	free(s->model);
	free(s->result);
	free(s);
}

const char *agent_events_result(const struct agent_events *s)
{
	return s->result ? s->result : "";
}

const char *agent_events_session(const struct agent_events *s)
{
	return s->session ? s->session : "";
}

/* --- small helpers ------------------------------------------------------ */

/* n, lowered to the start of a UTF-8 sequence of p (so that p[0..n) stays
 * valid UTF-8 when p is). */
static size_t utf8_cut(const char *p, size_t len, size_t max)
{
	size_t n = len;

	if (n <= max)
		return n;
	n = max;
	while (n > 0 && ((unsigned char)p[n] & 0xC0) == 0x80)
		n--;
	return n;
}

/* A JSON string of p cut at max bytes; NULL when out of memory. */
static json_t *str_capped(const char *p, size_t max)
{
	size_t len = strlen(p);

	return json_stringn(p, utf8_cut(p, len, max));
}

static const char *get_str(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

/* A session id or model name worth keeping: a short word of printable
 * ASCII without spaces or quotes. */
static bool good_word(const char *p)
{
	size_t n = 0;

	if (!p || !*p)
		return false;
	for (; p[n]; n++)
		if (p[n] <= ' ' || p[n] >= 0x7f || p[n] == '"' || p[n] == '\\')
			return false;
	return n <= WORD_MAX;
}

/* Replaces *dst by a copy of src cut at max bytes. -ENOMEM. */
static int set_str(char **dst, const char *src, size_t max)
{
	char *c = strndup(src, utf8_cut(src, strlen(src), max));

	if (!c)
		return -ENOMEM;
	free(*dst);
	*dst = c;
	return 0;
}

static int set_word(char **dst, const char *src)
{
	if (!good_word(src))
		return 0;
	if (*dst && strcmp(*dst, src) == 0)
		return 0;
	return set_str(dst, src, WORD_MAX);
}

/* Appends the text blocks of content (a string, or an array of
 * {"type":"text","text":...} blocks; also {"type":"output_text"}) to b,
 * joined by newlines. */
static void text_of(const json_t *content, struct pd_buf *b)
{
	size_t i;
	json_t *block;

	if (json_is_string(content)) {
		(void)pd_buf_append(b, json_string_value(content), json_string_length(content));
		return;
	}
	if (!json_is_array(content))
		return;
	json_array_foreach(content, i, block)
	{
		const char *t = get_str(block, "type"), *text = get_str(block, "text");
		if (!text || !t || (strcmp(t, "text") != 0 && strcmp(t, "output_text") != 0))
			continue;
		if (b->len > 0)
			(void)pd_buf_append(b, "\n", 1);
		(void)pd_buf_append(b, text, strlen(text));
	}
}

/* --- events --------------------------------------------------------------- */

static json_t *event_new(const char *type, const char *time)
{
	json_t *e = json_object();

	if (!e)
		return NULL;
	if (json_object_set_new(e, "type", json_string(type)) < 0 ||
	    json_object_set_new(e, "time", json_string(time ? time : "")) < 0) {
		json_decref(e);
		return NULL;
	}
	return e;
}

/* Prints event e (taken) as a line of out. 1 (one event), -ENOMEM, -EFBIG. */
static int emit(json_t *e, struct pd_buf *out)
{
	char *text;
	int r;

	if (!e)
		return -ENOMEM;
	text = json_dumps(e, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(e);
	if (!text)
		return -ENOMEM;
	r = pd_buf_append(out, text, strlen(text));
	free(text);
	if (r >= 0)
		r = pd_buf_append(out, "\n", 1);
	return r < 0 ? r : 1;
}

/* Sets key of e to v (taken); on failure e is freed and NULL returned, so
 * calls chain into emit(). */
static json_t *with(json_t *e, const char *key, json_t *v)
{
	if (!e) {
		json_decref(v);
		return NULL;
	}
	if (!v || json_object_set_new(e, key, v) < 0) {
		json_decref(e);
		return NULL;
	}
	return e;
}

/* The running count of events appended, or the first failure. */
struct emitter {
	struct agent_events *s;
	const char *time;
	struct pd_buf *out;
	int n;
};

static void put(struct emitter *m, json_t *e)
{
	int r;

	if (m->n < 0) {
		json_decref(e);
		return;
	}
	r = emit(e, m->out);
	m->n = r < 0 ? r : m->n + r;
}

static void ensure_start(struct emitter *m)
{
	struct agent_events *s = m->s;
	json_t *e;

	if (s->started)
		return;
	s->started = true;
	e = with(event_new("start", m->time), "agent", json_string(s->agent));
	if (s->session)
		e = with(e, "session", json_string(s->session));
	if (s->model)
		e = with(e, "model", json_string(s->model));
	put(m, e);
}

static void message(struct emitter *m, const char *text)
{
	if (!text || !*text)
		return;
	ensure_start(m);
	if (set_str(&m->s->result, text, AGENT_EVENTS_TEXT_MAX) < 0) {
		m->n = -ENOMEM;
		return;
	}
	put(m,
	    with(event_new("message", m->time), "text", str_capped(text, AGENT_EVENTS_TEXT_MAX)));
}

/* A tool input worth printing: an object or array not too large once
 * printed, else {"truncated": true}. */
static json_t *tool_input(json_t *input)
{
	size_t size;

	if (!json_is_object(input))
		return json_object();
	size = json_dumpb(input, NULL, 0, JSON_COMPACT);
	if (size == 0 || size > AGENT_EVENTS_INPUT_MAX)
		return json_pack("{s:b}", "truncated", 1);
	return json_deep_copy(input);
}

static void tool_call(struct emitter *m, const char *id, const char *name, json_t *input)
{
	json_t *e;

	if (!name || !*name)
		return; /* not a call the agent made: a malformed line */
	ensure_start(m);
	e = with(event_new("tool_call", m->time), "id", str_capped(id ? id : "", ID_MAX));
	e = with(e, "name", str_capped(name, WORD_MAX));
	put(m, with(e, "input", tool_input(input)));
}

static void tool_result(struct emitter *m, const char *id, const char *output, bool is_error)
{
	json_t *e;

	if (!id)
		return; /* a result of no call: a malformed line */
	ensure_start(m);
	e = with(event_new("tool_result", m->time), "id", str_capped(id, ID_MAX));
	e = with(e, "output", str_capped(output ? output : "", AGENT_EVENTS_OUTPUT_MAX));
	put(m, with(e, "is_error", json_boolean(is_error)));
}

static void error_event(struct emitter *m, const char *message)
{
	ensure_start(m);
	put(m, with(event_new("error", m->time), "message",
		    str_capped(message && *message ? message : "unknown error",
			       AGENT_EVENTS_TEXT_MAX)));
}

/* A token count as the agent printed it: a non-negative integer, else 0. */
static uint64_t count(const json_t *o, const char *key)
{
	json_int_t v = json_integer_value(json_object_get(o, key));

	return v > 0 ? (uint64_t)v : 0;
}

static void usage(struct emitter *m, uint64_t in, uint64_t out)
{
	json_t *e;

	ensure_start(m);
	m->s->input_tokens = in;
	m->s->output_tokens = out;
	e = with(event_new("usage", m->time), "input_tokens",
		 json_integer((json_int_t)(in & INT64_MAX)));
	put(m, with(e, "output_tokens", json_integer((json_int_t)(out & INT64_MAX))));
}

/* Adds to the running total (saturating) and reports it. */
static void usage_add(struct emitter *m, uint64_t in, uint64_t out)
{
	struct agent_events *s = m->s;
	uint64_t a = s->input_tokens + in, b = s->output_tokens + out;

	usage(m, a < in ? UINT64_MAX : a, b < out ? UINT64_MAX : b);
}

/* --- claude (claude -p --output-format stream-json --verbose) ------------ */

static void claude_line(struct emitter *m, json_t *j)
{
	struct agent_events *s = m->s;
	const char *type = get_str(j, "type");
	json_t *msg = json_object_get(j, "message"), *content, *b;
	size_t i;

	if (set_word(&s->session, get_str(j, "session_id")) < 0)
		goto oom;
	if (strcmp(type, "system") == 0) {
		const char *sub = get_str(j, "subtype");
		if (sub && strcmp(sub, "init") == 0) {
			if (set_word(&s->model, get_str(j, "model")) < 0)
				goto oom;
			ensure_start(m);
		} else if (sub && strcmp(sub, "api_retry") == 0) {
			char why[256];
			const char *err = get_str(j, "error");
			snprintf(why, sizeof(why),
				 "model API unreachable (%.64s), retry %" PRIu64 " of %" PRIu64,
				 err ? err : "unknown", count(j, "attempt"),
				 count(j, "max_retries"));
			error_event(m, why);
		}
		return;
	}
	if (strcmp(type, "assistant") == 0 || strcmp(type, "user") == 0) {
		if (!s->model && set_word(&s->model, get_str(msg, "model")) < 0)
			goto oom;
		content = json_object_get(msg, "content");
		if (strcmp(type, "user") == 0 && !json_is_array(content))
			return;
		if (json_is_string(content)) {
			message(m, json_string_value(content));
			return;
		}
		json_array_foreach(content, i, b)
		{
			const char *bt = get_str(b, "type");
			if (!bt)
				continue;
			if (strcmp(type, "assistant") == 0 && strcmp(bt, "text") == 0) {
				message(m, get_str(b, "text"));
			} else if (strcmp(type, "assistant") == 0 && strcmp(bt, "tool_use") == 0) {
				tool_call(m, get_str(b, "id"), get_str(b, "name"),
					  json_object_get(b, "input"));
			} else if (strcmp(type, "user") == 0 && strcmp(bt, "tool_result") == 0) {
				struct pd_buf t = {.max = AGENT_EVENTS_OUTPUT_MAX + SLACK};
				text_of(json_object_get(b, "content"), &t);
				tool_result(m, get_str(b, "tool_use_id"), t.data,
					    json_is_true(json_object_get(b, "is_error")));
				pd_buf_free(&t);
			}
		}
		return;
	}
	if (strcmp(type, "result") == 0) {
		const char *result = get_str(j, "result");
		json_t *u = json_object_get(j, "usage");
		if (json_is_object(u))
			usage(m, count(u, "input_tokens"), count(u, "output_tokens"));
		if (json_is_true(json_object_get(j, "is_error")))
			error_event(m, result && *result ? result : get_str(j, "subtype"));
		else if (result && set_str(&s->result, result, AGENT_EVENTS_TEXT_MAX) < 0)
			goto oom;
	}
	return;
oom:
	m->n = -ENOMEM;
}

/* --- codex (codex exec --json) ------------------------------------------- */

static bool seen_take(struct agent_events *s, const char *id)
{
	for (unsigned i = 0; id && i < SEEN_MAX; i++)
		if (s->seen[i][0] && strcmp(s->seen[i], id) == 0) {
			s->seen[i][0] = '\0';
			return true;
		}
	return false;
}

static void seen_add(struct agent_events *s, const char *id)
{
	if (!id || strlen(id) >= ID_MAX)
		return;
	strcpy(s->seen[s->seen_next], id);
	s->seen_next = (s->seen_next + 1) % SEEN_MAX;
}

/* The tool call an item stands for: name and input (new reference), or
 * false for an item that is no tool call. */
static bool codex_call(json_t *item, const char *itype, char *name, size_t size, json_t **input)
{
	if (strcmp(itype, "command_execution") == 0) {
		snprintf(name, size, "shell");
		*input = json_pack("{s:O?}", "command", json_object_get(item, "command"));
	} else if (strcmp(itype, "file_change") == 0) {
		snprintf(name, size, "apply_patch");
		*input = json_pack("{s:O?}", "changes", json_object_get(item, "changes"));
	} else if (strcmp(itype, "mcp_tool_call") == 0) {
		const char *server = get_str(item, "server"), *tool = get_str(item, "tool");
		json_t *args = json_object_get(item, "arguments");
		snprintf(name, size, "%.100s.%.100s", server ? server : "", tool ? tool : "");
		*input = json_is_object(args) ? json_incref(args) : json_object();
	} else if (strcmp(itype, "web_search") == 0) {
		snprintf(name, size, "web_search");
		*input = json_pack("{s:O?}", "query", json_object_get(item, "query"));
	} else {
		return false;
	}
	return true;
}

static void codex_item(struct emitter *m, const char *type, json_t *item)
{
	struct agent_events *s = m->s;
	const char *itype = get_str(item, "type"), *id = get_str(item, "id"), *status;
	char name[WORD_MAX];
	json_t *input = NULL;
	bool done = strcmp(type, "item.completed") == 0;

	if (!itype)
		return;
	if (strcmp(itype, "agent_message") == 0) {
		if (done)
			message(m, get_str(item, "text"));
		return;
	}
	if (!codex_call(item, itype, name, sizeof(name), &input))
		return; /* reasoning, todo_list, error (a warning), ... */
	if (strcmp(type, "item.started") == 0) {
		tool_call(m, id, name, input);
		seen_add(s, id);
	} else if (done) {
		status = get_str(item, "status");
		bool failed = status && strcmp(status, "failed") == 0;
		if (!seen_take(s, id))
			tool_call(m, id, name, input);
		if (strcmp(itype, "command_execution") == 0) {
			json_t *code = json_object_get(item, "exit_code");
			tool_result(m, id, get_str(item, "aggregated_output"),
				    failed ||
					(json_is_integer(code) && json_integer_value(code) != 0));
		} else if (strcmp(itype, "mcp_tool_call") == 0) {
			json_t *err = json_object_get(item, "error");
			char *text = json_dumps(json_object_get(item, "result"),
						JSON_COMPACT | JSON_ENCODE_ANY);
			tool_result(m, id, json_is_object(err) ? get_str(err, "message") : text,
				    failed || json_is_object(err));
			free(text);
		} else if (strcmp(itype, "file_change") == 0) {
			tool_result(m, id, status, failed);
		}
	}
	json_decref(input);
}

static void codex_line(struct emitter *m, json_t *j)
{
	struct agent_events *s = m->s;
	const char *type = get_str(j, "type");

	if (strcmp(type, "thread.started") == 0) {
		if (set_word(&s->session, get_str(j, "thread_id")) < 0) {
			m->n = -ENOMEM;
			return;
		}
		ensure_start(m);
	} else if (strncmp(type, "item.", 5) == 0) {
		codex_item(m, type, json_object_get(j, "item"));
	} else if (strcmp(type, "turn.completed") == 0) {
		json_t *u = json_object_get(j, "usage");
		if (json_is_object(u))
			usage(m, count(u, "input_tokens"), count(u, "output_tokens"));
	} else if (strcmp(type, "turn.failed") == 0) {
		error_event(m, get_str(json_object_get(j, "error"), "message"));
	} else if (strcmp(type, "error") == 0) {
		error_event(m, get_str(j, "message"));
	}
}

/* --- opencode (opencode run --format json) -------------------------------- */

static void opencode_line(struct emitter *m, json_t *j)
{
	struct agent_events *s = m->s;
	const char *type = get_str(j, "type");
	json_t *part = json_object_get(j, "part");

	if (set_word(&s->session, get_str(j, "sessionID")) < 0) {
		m->n = -ENOMEM;
		return;
	}
	if (strcmp(type, "text") == 0) {
		message(m, get_str(part, "text"));
	} else if (strcmp(type, "tool_use") == 0) {
		json_t *state = json_object_get(part, "state");
		const char *id = get_str(part, "callID"), *status = get_str(state, "status");
		tool_call(m, id, get_str(part, "tool"), json_object_get(state, "input"));
		if (status && strcmp(status, "completed") == 0)
			tool_result(m, id, get_str(state, "output"), false);
		else if (status && strcmp(status, "error") == 0)
			tool_result(m, id, get_str(state, "error"), true);
	} else if (strcmp(type, "step_finish") == 0) {
		json_t *t = json_object_get(part, "tokens");
		if (json_is_object(t))
			usage_add(m, count(t, "input"), count(t, "output"));
	} else if (strcmp(type, "error") == 0) {
		json_t *err = json_object_get(j, "error");
		const char *msg = get_str(json_object_get(err, "data"), "message");
		if (!msg)
			msg = get_str(err, "message");
		if (!msg)
			msg = get_str(err, "name");
		error_event(m, msg);
	} else if (strcmp(type, "step_start") == 0) {
		ensure_start(m);
	}
}

/* --- pi (pi -p --mode json) ----------------------------------------------- */

static void pi_line(struct emitter *m, json_t *j)
{
	struct agent_events *s = m->s;
	const char *type = get_str(j, "type");

	if (strcmp(type, "session") == 0) {
		if (set_word(&s->session, get_str(j, "id")) < 0) {
			m->n = -ENOMEM;
			return;
		}
		ensure_start(m);
	} else if (strcmp(type, "message_end") == 0) {
		json_t *msg = json_object_get(j, "message"), *u = json_object_get(msg, "usage");
		const char *role = get_str(msg, "role"), *stop = get_str(msg, "stopReason");
		struct pd_buf t = {.max = AGENT_EVENTS_TEXT_MAX + SLACK};

		if (!role || strcmp(role, "assistant") != 0)
			return;
		if (!s->model && set_word(&s->model, get_str(msg, "model")) < 0) {
			m->n = -ENOMEM;
			return;
		}
		text_of(json_object_get(msg, "content"), &t);
		message(m, t.data);
		pd_buf_free(&t);
		if (json_is_object(u))
			usage_add(m, count(u, "input"), count(u, "output"));
		if (stop && (strcmp(stop, "error") == 0 || strcmp(stop, "aborted") == 0))
			error_event(m, get_str(msg, "errorMessage"));
	} else if (strcmp(type, "tool_execution_start") == 0) {
		tool_call(m, get_str(j, "toolCallId"), get_str(j, "toolName"),
			  json_object_get(j, "args"));
	} else if (strcmp(type, "tool_execution_end") == 0) {
		struct pd_buf t = {.max = AGENT_EVENTS_OUTPUT_MAX + SLACK};
		text_of(json_object_get(json_object_get(j, "result"), "content"), &t);
		tool_result(m, get_str(j, "toolCallId"), t.data,
			    json_is_true(json_object_get(j, "isError")));
		pd_buf_free(&t);
	}
}

/* --- the entry points --------------------------------------------------- */

int agent_events_line(struct agent_events *s, const char *line, size_t len, const char *time,
		      struct pd_buf *out)
{
	struct emitter m = {.s = s, .time = time, .out = out};
	json_error_t jerr;
	json_t *j;

	if (s->ended || len > AGENT_EVENTS_LINE_MAX)
		return 0;
	while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
		len--;
	if (len == 0 || line[0] != '{')
		return 0;
	j = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!j)
		return 0;
	if (!json_is_object(j) || !get_str(j, "type")) {
		json_decref(j);
		return 0;
	}
	switch (s->kind) {
	case AGENT_CLAUDE:
		claude_line(&m, j);
		break;
	case AGENT_CODEX:
		codex_line(&m, j);
		break;
	case AGENT_OPENCODE:
		opencode_line(&m, j);
		break;
	case AGENT_PI:
		pi_line(&m, j);
		break;
	}
	json_decref(j);
	return m.n;
}

int agent_events_end(struct agent_events *s, int exit_code, const char *time, struct pd_buf *out)
{
	struct emitter m = {.s = s, .time = time, .out = out};
	json_t *e;

	if (s->ended)
		return 0;
	s->ended = true;
	ensure_start(&m);
	e = with(event_new("end", time), "exit", json_integer(exit_code));
	put(&m, with(e, "result", json_string(s->result ? s->result : "")));
	return m.n;
}
