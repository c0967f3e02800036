/* check_agent_events.c - the agents' streams made one schema, and their
 * command lines (box/agent-events.h).
 *
 * The fixtures in tests/data/agent-streams/AGENT.jsonl are the real
 * streams of the four agents, each run against tests/integration/
 * fake-model.py (one tool call writing hello.txt, then "Wrote hello.txt"),
 * their paths rewritten to /config/proj. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check-tap.h"
#include "box/agent-events.h"
#include "common/buf.h"
#include "common/util.h"

#define T "2026-01-02T03:04:05.678Z"

static const char *const AGENTS[] = {"claude", "codex", "opencode", "pi"};

/* The events in text, one JSON object a line, each checked for the
 * schema's common part (type first, then time). */
static json_t *parse_events(const char *text)
{
	json_t *all = json_array();
	const char *p = text ? text : "";

	while (*p) {
		const char *nl = strchr(p, '\n');
		json_error_t jerr;
		json_t *e;

		ck_assert_msg(nl, "an event line without its newline: %s", p);
		e = json_loadb(p, (size_t)(nl - p), 0, &jerr);
		ck_assert_msg(e, "not JSON: %.*s (%s)", (int)(nl - p), p, jerr.text);
		ck_assert_msg(strncmp(p, "{\"type\":\"", 9) == 0, "type is not first: %.80s", p);
		ck_assert_msg(strncmp(strchr(p + 9, '"'), "\",\"time\":\"", 10) == 0,
			      "time is not second: %.80s", p);
		ck_assert(json_is_string(json_object_get(e, "time")));
		json_array_append_new(all, e);
		p = nl + 1;
	}
	return all;
}

static const char *type_of(json_t *e)
{
	return json_string_value(json_object_get(e, "type"));
}

/* The first event of type after index from, or NULL. */
static json_t *find(json_t *events, const char *type, size_t from, size_t *ret_index)
{
	for (size_t i = from; i < json_array_size(events); i++) {
		json_t *e = json_array_get(events, i);
		if (strcmp(type_of(e), type) == 0) {
			if (ret_index)
				*ret_index = i;
			return e;
		}
	}
	return NULL;
}

/* Feeds every line of text to s; returns what it appended. */
static char *feed(struct agent_events *s, const char *text, int exit_code)
{
	struct pd_buf out = {0};
	const char *p = text;

	while (*p) {
		const char *nl = strchrnul(p, '\n');
		ck_assert_int_ge(agent_events_line(s, p, (size_t)(nl - p), T, &out), 0);
		p = *nl ? nl + 1 : nl;
	}
	ck_assert_int_ge(agent_events_end(s, exit_code, T, &out), 1);
	return pd_buf_take(&out, NULL);
}

static char *fixture(const char *agent)
{
	const char *top = getenv("TOP_SRCDIR");
	char path[PATH_MAX], *text = NULL;

	snprintf(path, sizeof(path), "%s/tests/data/agent-streams/%s.jsonl", top ? top : "..",
		 agent);
	ck_assert_int_eq(read_file_at(AT_FDCWD, path, 1 << 20, &text, NULL), 0);
	return text;
}

/* The session each fixture's agent reported. */
static const char *fixture_session(const char *agent, const char *text)
{
	static char buf[256];
	const char *keys[] = {"\"session_id\":\"", "\"thread_id\":\"", "\"sessionID\":\"",
			      "\"id\":\""};
	size_t i = 0;
	const char *p;

	while (strcmp(AGENTS[i], agent) != 0)
		i++;
	p = strstr(text, keys[i]);
	ck_assert_ptr_nonnull(p);
	p += strlen(keys[i]);
	snprintf(buf, sizeof(buf), "%.*s", (int)(strchr(p, '"') - p), p);
	return buf;
}

START_TEST(fixture_normalizes)
{
	const char *agent = AGENTS[_i];
	_cleanup_free_ char *text = fixture(agent), *out = NULL, *input = NULL;
	struct agent_events *s = agent_events_new(agent);
	json_t *events, *e, *call, *res;
	size_t i_call, i_res, i_msg, n;

	ck_assert_ptr_nonnull(s);
	out = feed(s, text, 0);
	events = parse_events(out);
	n = json_array_size(events);
	ck_assert_uint_ge(n, 5);

	e = json_array_get(events, 0);
	ck_assert_str_eq(type_of(e), "start");
	ck_assert_str_eq(json_string_value(json_object_get(e, "agent")), agent);
	ck_assert_str_eq(json_string_value(json_object_get(e, "session")),
			 fixture_session(agent, text));
	ck_assert_str_eq(agent_events_session(s), fixture_session(agent, text));
	ck_assert_ptr_null(find(events, "start", 1, NULL));

	call = find(events, "tool_call", 0, &i_call);
	ck_assert_ptr_nonnull(call);
	input = json_dumps(json_object_get(call, "input"), JSON_COMPACT);
	ck_assert_msg(strstr(input, "/config/proj/hello.txt"), "tool input %s", input);
	ck_assert_msg(strstr(input, "hi from the fake"), "tool input %s", input);
	ck_assert(json_string_length(json_object_get(call, "id")) > 0);
	ck_assert(json_string_length(json_object_get(call, "name")) > 0);

	res = find(events, "tool_result", i_call, &i_res);
	ck_assert_ptr_nonnull(res);
	ck_assert_str_eq(json_string_value(json_object_get(res, "id")),
			 json_string_value(json_object_get(call, "id")));
	ck_assert(json_is_false(json_object_get(res, "is_error")));

	e = find(events, "message", i_res, &i_msg);
	ck_assert_ptr_nonnull(e);
	ck_assert_str_eq(json_string_value(json_object_get(e, "text")), "Wrote hello.txt");

	e = find(events, "usage", 0, NULL);
	ck_assert_ptr_nonnull(e);
	ck_assert_int_gt(json_integer_value(json_object_get(e, "input_tokens")), 0);
	ck_assert_int_gt(json_integer_value(json_object_get(e, "output_tokens")), 0);
	ck_assert_ptr_null(find(events, "error", 0, NULL));

	e = json_array_get(events, n - 1);
	ck_assert_str_eq(type_of(e), "end");
	ck_assert_int_eq(json_integer_value(json_object_get(e, "exit")), 0);
	ck_assert_str_eq(json_string_value(json_object_get(e, "result")), "Wrote hello.txt");
	ck_assert_str_eq(agent_events_result(s), "Wrote hello.txt");
	ck_assert_str_eq(json_string_value(json_object_get(e, "time")), T);
	json_decref(events);
	agent_events_free(s);
}
END_TEST

/* Every line of the fixture cut short, or with a byte changed, one at a
 * time: the normalizer skips what it cannot read and never prints a bad
 * event. */
START_TEST(fixture_mangled)
{
	const char *agent = AGENTS[_i];
	_cleanup_free_ char *text = fixture(agent);
	const char *p = text;
	unsigned seed = 16;

	while (*p) {
		const char *nl = strchrnul(p, '\n');
		size_t len = (size_t)(nl - p);
		_cleanup_free_ char *copy = strndup(p, len);

		for (int k = 0; k < 64; k++) {
			struct agent_events *s = agent_events_new(agent);
			struct pd_buf out = {0};
			size_t cut = len ? (size_t)rand_r(&seed) % len : 0;
			_cleanup_free_ char *m = strndup(copy, len);
			static const char junk[] = {'\0', '"',	  '{',	  '}', '[',
						    '\\', '\xff', '\xc3', '9'};

			if (k % 2)
				m[cut] = junk[(unsigned)rand_r(&seed) % sizeof(junk)];
			ck_assert_int_ge(agent_events_line(s, m, k % 2 ? len : cut, T, &out), 0);
			ck_assert_int_ge(agent_events_end(s, 1, T, &out), 1);
			json_decref(parse_events(out.data));
			pd_buf_free(&out);
			agent_events_free(s);
		}
		p = *nl ? nl + 1 : nl;
	}
}
END_TEST

START_TEST(unknown_agent)
{
	errno = 0;
	ck_assert_ptr_null(agent_events_new("kimi"));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_ptr_null(agent_events_new(NULL));
	ck_assert_ptr_null(agent_events_new(""));
	agent_events_free(NULL);
}
END_TEST

/* Lines each normalizer must skip: not JSON, not an object, no type, too
 * deep, a NUL, invalid UTF-8, fields of the wrong type. */
START_TEST(hostile_lines_skipped)
{
	static const char *const lines[] = {
	    "",
	    "not json",
	    "[1,2,3]",
	    "\"type\"",
	    "{}",
	    "{\"type\":5}",
	    "{\"type\":null}",
	    "{\"type\":\"system\",\"subtype\":7,\"session_id\":[1]}",
	    "{\"type\":\"assistant\",\"message\":\"x\"}",
	    "{\"type\":\"assistant\",\"message\":{\"content\":7}}",
	    "{\"type\":\"assistant\",\"message\":{\"content\":[7,null,{\"type\":3}]}}",
	    "{\"type\":\"user\",\"message\":{\"content\":\"x\"}}",
	    "{\"type\":\"item.completed\",\"item\":5}",
	    "{\"type\":\"item.completed\",\"item\":{\"type\":[]}}",
	    "{\"type\":\"turn.completed\",\"usage\":\"lots\"}",
	    "{\"type\":\"step_finish\",\"part\":{\"tokens\":[1]}}",
	    "{\"type\":\"message_end\",\"message\":{\"role\":\"user\",\"content\":\"hi\"}}",
	    "{\"type\":\"message_end\",\"message\":{\"role\":7}}",
	    "{\"type\":\"tool_use\",\"part\":5}",
	    "{\"type\":\"text\",\"part\":{\"text\":\"\"}}",
	    "{\"type\":\"text\"} trailing",
	    "{\"type\":\"a\",\"type\":\"b\"}",
	    "{\"type\":\"text\",\"part\":{\"text\":\"a\\u0000b\"}}",
	    "{\"type\":\"text\",\"part\":{\"text\":\"\xff\xfe\"}}",
	    "{\"type\":\"unknown.event\",\"x\":1}",
	};
	for (size_t a = 0; a < ELEMENTSOF(AGENTS); a++) {
		struct agent_events *s = agent_events_new(AGENTS[a]);
		struct pd_buf out = {0};

		for (size_t i = 0; i < ELEMENTSOF(lines); i++)
			ck_assert_msg(agent_events_line(s, lines[i], strlen(lines[i]), T, &out) ==
					  0,
				      "%s: [%s] made %s", AGENTS[a], lines[i], out.data);
		ck_assert_ptr_null(out.data);
		/* A NUL inside the line given by length. */
		ck_assert_int_eq(agent_events_line(s, "{\"type\":\0\"text\"}", 16, T, &out), 0);
		ck_assert_str_eq(agent_events_session(s), "");
		ck_assert_str_eq(agent_events_result(s), "");
		pd_buf_free(&out);
		agent_events_free(s);
	}
}
END_TEST

START_TEST(deep_and_huge)
{
	size_t depth = 100000, big = AGENT_EVENTS_LINE_MAX + 16;
	_cleanup_free_ char *deep = malloc(depth * 2 + 128), *huge = malloc(big + 1);
	struct agent_events *s = agent_events_new("opencode");
	struct pd_buf out = {0};
	size_t n;

	/* {"type":"text","part":{"text":"x","a":[[[[...]]]]}} */
	n = (size_t)sprintf(deep, "{\"type\":\"text\",\"part\":{\"text\":\"x\",\"a\":");
	memset(deep + n, '[', depth);
	memset(deep + n + depth, ']', depth);
	strcpy(deep + n + 2 * depth, "}}");
	ck_assert_int_eq(agent_events_line(s, deep, strlen(deep), T, &out), 0);

	/* A valid line longer than the cap is not even parsed. */
	n = (size_t)sprintf(huge, "{\"type\":\"text\",\"part\":{\"text\":\"");
	memset(huge + n, 'a', big - n - 4);
	strcpy(huge + big - 4, "\"}}");
	ck_assert_int_eq(agent_events_line(s, huge, strlen(huge), T, &out), 0);
	ck_assert_ptr_null(out.data);
	agent_events_free(s);
}
END_TEST

/* Texts, outputs and inputs are cut, on a character boundary. */
START_TEST(caps)
{
	size_t big = AGENT_EVENTS_TEXT_MAX + 4096, n;
	_cleanup_free_ char *line = malloc(big + 256);
	struct agent_events *s = agent_events_new("pi");
	struct pd_buf out = {0};
	json_t *events, *e;

	/* A tool output of 2-byte characters, longer than the cap. */
	n = (size_t)sprintf(
	    line, "{\"type\":\"tool_execution_end\",\"toolCallId\":\"c1\",\"toolName\":\"x\","
		  "\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"a");
	for (size_t i = 0; i < AGENT_EVENTS_OUTPUT_MAX; i++, n += 2)
		memcpy(line + n, "\xc3\xa9", 2);
	strcpy(line + n, "\"}]},\"isError\":true}");
	ck_assert_int_eq(agent_events_line(s, line, strlen(line), T, &out), 2);

	/* A message text longer than the cap. */
	n = (size_t)sprintf(line, "{\"type\":\"message_end\",\"message\":{\"role\":\"assistant\","
				  "\"content\":[{\"type\":\"text\",\"text\":\"");
	memset(line + n, 'b', big);
	strcpy(line + n + big, "\"}]}}");
	ck_assert_int_eq(agent_events_line(s, line, strlen(line), T, &out), 1);
	ck_assert_uint_eq(strlen(agent_events_result(s)), AGENT_EVENTS_TEXT_MAX);

	/* A tool input larger than its cap. */
	n = (size_t)sprintf(
	    line, "{\"type\":\"tool_execution_start\",\"toolCallId\":\"c2\",\"toolName\":\"w\","
		  "\"args\":{\"content\":\"");
	memset(line + n, 'c', AGENT_EVENTS_INPUT_MAX);
	strcpy(line + n + AGENT_EVENTS_INPUT_MAX, "\"}}");
	ck_assert_int_eq(agent_events_line(s, line, strlen(line), T, &out), 1);

	events = parse_events(out.data);
	e = find(events, "tool_result", 0, NULL);
	ck_assert(json_is_true(json_object_get(e, "is_error")));
	ck_assert_uint_le(json_string_length(json_object_get(e, "output")),
			  AGENT_EVENTS_OUTPUT_MAX);
	ck_assert_uint_ge(json_string_length(json_object_get(e, "output")),
			  AGENT_EVENTS_OUTPUT_MAX - 2);
	e = find(events, "message", 0, NULL);
	ck_assert_uint_eq(json_string_length(json_object_get(e, "text")), AGENT_EVENTS_TEXT_MAX);
	e = find(events, "tool_call", 0, NULL);
	ck_assert(json_is_true(json_object_get(json_object_get(e, "input"), "truncated")));
	json_decref(events);
	pd_buf_free(&out);
	agent_events_free(s);
}
END_TEST

/* A session id or model that is no short word is not kept. */
START_TEST(bad_session_not_kept)
{
	struct agent_events *s = agent_events_new("codex");
	struct pd_buf out = {0};
	const char *l1 = "{\"type\":\"thread.started\",\"thread_id\":\"a b\\\"; rm -rf /\"}";

	ck_assert_int_eq(agent_events_line(s, l1, strlen(l1), T, &out), 1);
	ck_assert_str_eq(agent_events_session(s), "");
	ck_assert_ptr_null(strstr(out.data, "session"));
	pd_buf_free(&out);
	agent_events_free(s);
}
END_TEST

/* start before anything else, end once and last, nothing after it. */
START_TEST(start_and_end)
{
	struct agent_events *s = agent_events_new("opencode");
	struct pd_buf out = {0};
	const char *l = "{\"type\":\"text\",\"sessionID\":\"ses_1\",\"part\":{\"text\":\"hi\"}}";
	json_t *events;

	ck_assert_int_eq(agent_events_end(s, 3, T, &out), 2);
	ck_assert_int_eq(agent_events_end(s, 0, T, &out), 0);
	ck_assert_int_eq(agent_events_line(s, l, strlen(l), T, &out), 0);
	events = parse_events(out.data);
	ck_assert_uint_eq(json_array_size(events), 2);
	ck_assert_str_eq(type_of(json_array_get(events, 0)), "start");
	ck_assert_str_eq(type_of(json_array_get(events, 1)), "end");
	ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(events, 1), "exit")), 3);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(events, 1), "result")),
			 "");
	json_decref(events);
	pd_buf_free(&out);
	agent_events_free(s);

	/* A line that starts: start with the session, then the message. */
	s = agent_events_new("opencode");
	ck_assert_int_eq(agent_events_line(s, l, strlen(l), T, &out), 2);
	ck_assert_ptr_nonnull(strstr(out.data,
				     "{\"type\":\"start\",\"time\":\"" T
				     "\",\"agent\":\"opencode\",\"session\":\"ses_1\"}\n"));
	pd_buf_free(&out);
	agent_events_free(s);
}
END_TEST

/* Errors each agent reports become error events. */
START_TEST(errors)
{
	static const struct {
		const char *agent, *line, *message;
	} cases[] = {
	    {"claude",
	     "{\"type\":\"system\",\"subtype\":\"api_retry\",\"attempt\":2,\"max_retries\":10,"
	     "\"error\":\"unknown\",\"session_id\":\"s1\"}",
	     "model API unreachable (unknown), retry 2 of 10"},
	    {"claude",
	     "{\"type\":\"result\",\"subtype\":\"error_during_execution\",\"is_error\":true}",
	     "error_during_execution"},
	    {"codex", "{\"type\":\"turn.failed\",\"error\":{\"message\":\"quota\"}}", "quota"},
	    {"codex", "{\"type\":\"error\",\"message\":\"Reconnecting... 2/5\"}",
	     "Reconnecting... 2/5"},
	    {"opencode",
	     "{\"type\":\"error\",\"error\":{\"name\":\"APIError\",\"data\":{\"message\":\"down\"}}"
	     "}",
	     "down"},
	    {"pi",
	     "{\"type\":\"message_end\",\"message\":{\"role\":\"assistant\",\"content\":[],"
	     "\"stopReason\":\"error\",\"errorMessage\":\"Connection error.\"}}",
	     "Connection error."},
	};
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		struct agent_events *s = agent_events_new(cases[i].agent);
		struct pd_buf out = {0};
		json_t *events, *e;

		ck_assert_int_ge(
		    agent_events_line(s, cases[i].line, strlen(cases[i].line), T, &out), 1);
		events = parse_events(out.data);
		e = find(events, "error", 0, NULL);
		ck_assert_msg(e, "%s: no error from %s", cases[i].agent, cases[i].line);
		ck_assert_str_eq(json_string_value(json_object_get(e, "message")),
				 cases[i].message);
		json_decref(events);
		pd_buf_free(&out);
		agent_events_free(s);
	}
}
END_TEST

/* A capped output buffer: -EFBIG, never an overflow. */
START_TEST(out_cap)
{
	struct agent_events *s = agent_events_new("pi");
	struct pd_buf out = {.max = 20};
	const char *l = "{\"type\":\"session\",\"id\":\"abc\"}";

	ck_assert_int_eq(agent_events_line(s, l, strlen(l), T, &out), -EFBIG);
	ck_assert_uint_eq(out.len, 20);
	pd_buf_free(&out);
	agent_events_free(s);
}
END_TEST

/* --- agent_command --------------------------------------------------- */

static char *join(char **v)
{
	struct pd_buf b = {0};

	for (size_t i = 0; v[i]; i++)
		pd_buf_printf(&b, "%s%s", i ? "|" : "", v[i]);
	return pd_buf_take(&b, NULL);
}

static void command(const char *agent, const struct agent_run *run, const char *want_argv,
		    const char *want_env)
{
	char **argv = NULL, **env = NULL;
	pd_error err = {0};
	_cleanup_free_ char *a = NULL, *e = NULL;

	ck_assert_msg(agent_command(agent, run, &argv, &env, &err) == 0, "%s", err.msg);
	a = join(argv);
	e = join(env);
	ck_assert_str_eq(a, want_argv);
	ck_assert_str_eq(e, want_env);
	strv_free(argv);
	strv_free(env);
}

#define SH "sh|-c|exec \"$0\" \"$@\" </dev/null|"
#define CLAUDE_ENV                                                                                 \
	"IS_SANDBOX=1|DISABLE_TELEMETRY=1|DISABLE_AUTOUPDATER=1|DISABLE_ERROR_REPORTING=1|"        \
	"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"
#define CODEX_ARGV                                                                                 \
	SH "codex|exec|--json|--skip-git-repo-check|--dangerously-bypass-approvals-and-sandbox|"   \
	   "--color|never"
#define CODEX_C                                                                                    \
	"-c|check_for_update_on_startup=false|-c|analytics.enabled=false|-c|"                      \
	"features.shell_snapshot=false"
#define OPENCODE_ENV                                                                               \
	"OPENCODE_DISABLE_AUTOUPDATE=1|OPENCODE_DISABLE_MODELS_FETCH=1|"                           \
	"OPENCODE_DISABLE_DEFAULT_PLUGINS=1|OPENCODE_DISABLE_LSP_DOWNLOAD=1"

START_TEST(command_claude)
{
	command("claude", &(struct agent_run){.text = "Write hello.txt"},
		SH
		"claude|-p|--output-format|stream-json|--verbose|--dangerously-skip-permissions|--|"
		"Write hello.txt",
		CLAUDE_ENV);
	command("claude",
		&(struct agent_run){.text = "--help",
				    .model = "claude-sonnet-4-5",
				    .session = "77e2dac2-d4ea-4ba6-bd95-8089910e5200",
				    .base_url = "http://model.test:8080"},
		SH
		"claude|-p|--output-format|stream-json|--verbose|--dangerously-skip-permissions|"
		"--model|claude-sonnet-4-5|--resume|77e2dac2-d4ea-4ba6-bd95-8089910e5200|--|--help",
		CLAUDE_ENV "|ANTHROPIC_BASE_URL=http://model.test:8080");
}
END_TEST

START_TEST(command_codex)
{
	command("codex", &(struct agent_run){.text = "hi"}, CODEX_ARGV "|" CODEX_C "|--|hi", "");
	command(
	    "codex",
	    &(struct agent_run){
		.text = "hi", .model = "gpt-5", .session = "01a2", .base_url = "http://m.test:81/"},
	    CODEX_ARGV "|-m|gpt-5|" CODEX_C "|-c|model_provider=\"paddock\"|-c|"
		       "model_providers.paddock.name=\"paddock\"|-c|"
		       "model_providers.paddock.base_url=\"http://m.test:81/v1\"|-c|"
		       "model_providers.paddock.env_key=\"OPENAI_API_KEY\"|-c|"
		       "model_providers.paddock.wire_api=\"responses\"|resume|01a2|--|hi",
	    "");
	/* A base URL that ends in /v1 keeps it. */
	command("codex", &(struct agent_run){.text = "hi", .base_url = "https://p.test/x/v1"},
		CODEX_ARGV "|" CODEX_C "|-c|model_provider=\"paddock\"|-c|"
			   "model_providers.paddock.name=\"paddock\"|-c|"
			   "model_providers.paddock.base_url=\"https://p.test/x/v1\"|-c|"
			   "model_providers.paddock.env_key=\"OPENAI_API_KEY\"|-c|"
			   "model_providers.paddock.wire_api=\"responses\"|--|hi",
		"");
}
END_TEST

START_TEST(command_opencode)
{
	command("opencode", &(struct agent_run){.text = "hi"},
		SH "opencode|run|--format|json|--|hi",
		"OPENCODE_CONFIG_CONTENT={\"permission\":\"allow\",\"autoupdate\":false,\"share\":"
		"\"disabled\"}|" OPENCODE_ENV);
	command("opencode",
		&(struct agent_run){.text = "hi",
				    .model = "claude-sonnet-4-5",
				    .session = "ses_1",
				    .base_url = "http://model.test:8080"},
		SH
		"opencode|run|--format|json|-m|anthropic/claude-sonnet-4-5|--session|ses_1|--|hi",
		"OPENCODE_CONFIG_CONTENT={\"permission\":\"allow\",\"autoupdate\":false,\"share\":"
		"\"disabled\",\"provider\":{\"anthropic\":{\"options\":{\"baseURL\":"
		"\"http://model.test:8080/v1\"}}}}|" OPENCODE_ENV);
	command(
	    "opencode",
	    &(struct agent_run){.text = "hi", .model = "openai/gpt-5", .base_url = "http://m.test"},
	    SH "opencode|run|--format|json|-m|openai/gpt-5|--|hi",
	    "OPENCODE_CONFIG_CONTENT={\"permission\":\"allow\",\"autoupdate\":false,\"share\":"
	    "\"disabled\",\"provider\":{\"openai\":{\"options\":{\"baseURL\":"
	    "\"http://m.test/v1\"}}}}|" OPENCODE_ENV);
}
END_TEST

START_TEST(command_pi)
{
	char **argv = NULL, **env = NULL;

	command("pi",
		&(struct agent_run){
		    .text = "hi", .model = "anthropic/claude-sonnet-4-5", .session = "01a2"},
		SH "pi|-p|--mode|json|--model|anthropic/claude-sonnet-4-5|--session|01a2|hi",
		"PI_OFFLINE=1|PI_TELEMETRY=0");
	/* pi has no "--": a text that looks like an option or a file gets a
	 * leading space. */
	command("pi", &(struct agent_run){.text = "--version"}, SH "pi|-p|--mode|json| --version",
		"PI_OFFLINE=1|PI_TELEMETRY=0");
	command("pi", &(struct agent_run){.text = "@/etc/shadow"},
		SH "pi|-p|--mode|json| @/etc/shadow", "PI_OFFLINE=1|PI_TELEMETRY=0");
	/* A base URL: a shell writes models.json, then runs pi. */
	ck_assert_int_eq(agent_command("pi",
				       &(struct agent_run){.text = "hi",
							   .model = "anthropic/claude-sonnet-4-5",
							   .base_url = "http://model.test:8080"},
				       &argv, &env, NULL),
			 0);
	ck_assert_str_eq(argv[0], "sh");
	ck_assert_str_eq(argv[1], "-c");
	ck_assert_ptr_nonnull(strstr(argv[2], "exec pi \"$@\" </dev/null"));
	ck_assert_str_eq(argv[3], "pi");
	ck_assert_str_eq(argv[4], "-p");
	ck_assert_str_eq(env[0], "PADDOCK_PI_MODELS={\"providers\":{\"anthropic\":{\"baseUrl\":"
				 "\"http://model.test:8080\"}}}");
	strv_free(argv);
	strv_free(env);
	ck_assert_int_eq(agent_command("pi",
				       &(struct agent_run){.text = "hi",
							   .model = "openai/gpt-5",
							   .base_url = "http://m.test"},
				       &argv, &env, NULL),
			 0);
	ck_assert_str_eq(env[0], "PADDOCK_PI_MODELS={\"providers\":{\"openai\":{\"baseUrl\":"
				 "\"http://m.test/v1\"}}}");
	strv_free(argv);
	strv_free(env);
}
END_TEST

START_TEST(command_refused)
{
	static const struct {
		const char *agent;
		struct agent_run run;
		const char *why;
		int code; /* 0: -EINVAL */
	} cases[] = {
	    {"kimi", {.text = "hi"}, "no headless mode", -ENOENT},
	    {NULL, {.text = "hi"}, "no headless mode", -ENOENT},
	    {"claude", {.text = ""}, "empty", 0},
	    {"claude", {.text = NULL}, "empty", 0},
	    {"claude", {.text = "hi", .model = "--help"}, "model", 0},
	    {"claude", {.text = "hi", .model = "a b"}, "model", 0},
	    {"claude", {.text = "hi", .model = ""}, "model", 0},
	    {"codex", {.text = "hi", .session = "x\"; rm -rf /"}, "session", 0},
	    {"codex", {.text = "hi", .session = "-c"}, "session", 0},
	    {"codex",
	     {.text = "hi", .base_url = "http://x\"\nmodel_provider=\"evil"},
	     "base_url",
	     0},
	    {"codex", {.text = "hi", .base_url = "file:///etc/passwd"}, "base_url", 0},
	    {"opencode", {.text = "hi", .base_url = "http://a b"}, "base_url", 0},
	    {"pi", {.text = "hi", .base_url = "http://x'$(id)'"}, "base_url", 0},
	};
	_cleanup_free_ char *long_text = malloc(AGENT_TEXT_MAX + 2);

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		char **argv = (char **)0x1, **env = (char **)0x1;
		pd_error err = {0};

		ck_assert_int_eq(agent_command(cases[i].agent, &cases[i].run, &argv, &env, &err),
				 cases[i].code ? cases[i].code : -EINVAL);
		ck_assert_msg(strstr(err.msg, cases[i].why), "case %zu: [%s]", i, err.msg);
		ck_assert_ptr_eq(argv, (char **)0x1);
		ck_assert_ptr_eq(env, (char **)0x1);
	}
	memset(long_text, 'a', AGENT_TEXT_MAX + 1);
	long_text[AGENT_TEXT_MAX + 1] = '\0';
	char **argv, **env;
	pd_error err = {0};
	ck_assert_int_eq(
	    agent_command("claude", &(struct agent_run){.text = long_text}, &argv, &env, &err),
	    -EINVAL);
	ck_assert_ptr_nonnull(strstr(err.msg, "longer"));
}
END_TEST

static Suite *agent_events_suite(void)
{
	Suite *s = suite_create("agent_events");
	TCase *tc = tcase_create("fixtures");

	tcase_add_loop_test(tc, fixture_normalizes, 0, ELEMENTSOF(AGENTS));
	tcase_add_loop_test(tc, fixture_mangled, 0, ELEMENTSOF(AGENTS));
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);

	tc = tcase_create("core");
	tcase_add_test(tc, unknown_agent);
	tcase_add_test(tc, start_and_end);
	tcase_add_test(tc, errors);
	suite_add_tcase(s, tc);

	tc = tcase_create("limits");
	tcase_add_test(tc, hostile_lines_skipped);
	tcase_add_test(tc, deep_and_huge);
	tcase_add_test(tc, caps);
	tcase_add_test(tc, bad_session_not_kept);
	tcase_add_test(tc, out_cap);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);

	tc = tcase_create("command");
	tcase_add_test(tc, command_claude);
	tcase_add_test(tc, command_codex);
	tcase_add_test(tc, command_opencode);
	tcase_add_test(tc, command_pi);
	tcase_add_test(tc, command_refused);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_tap_run(agent_events_suite());
}
