/* check_cli_prompt.c - `paddock prompt` and `paddock skill` without a
 * server: normalized event lines shown as readable lines (tool calls cut
 * to the width, results short, messages whole, usage and errors on
 * stderr), hostile events (escape sequences, C1 controls, invalid UTF-8)
 * that must never reach the terminal raw, --json lines, the prompt's text,
 * the command line, and the skill written without following links. */
#include <fcntl.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check-cli-parse.h"
#include "check-tap.h"
#include "cli/cli.h"
#include "cli/prompt.h"
#include "cli/skill.h"
#include "common/util.h"

/* A view writing into two memory buffers. */
struct shown {
	char *out, *err;
	size_t out_len, err_len;
	FILE *fout, *ferr;
	cli_prompt_view v;
};

static void shown_open(struct shown *s, unsigned width, bool json, bool quiet)
{
	*s = (struct shown){0};
	s->fout = open_memstream(&s->out, &s->out_len);
	s->ferr = open_memstream(&s->err, &s->err_len);
	ck_assert(s->fout && s->ferr);
	s->v = (cli_prompt_view){
	    .out = s->fout, .err = s->ferr, .width = width, .json = json, .quiet = quiet};
}

static void feed(struct shown *s, const char *line)
{
	ck_assert_int_eq(cli_prompt_view_line(&s->v, line, strlen(line)), 0);
}

static void shown_close(struct shown *s)
{
	fclose(s->fout);
	fclose(s->ferr);
}

static void shown_free(struct shown *s)
{
	cli_prompt_view_release(&s->v);
	free(s->out);
	free(s->err);
}

/* No byte of s may drive a terminal: no C0 control but \n and \t, no DEL,
 * no C1 control (U+0080-U+009F, 0xc2 0x80-0x9f in UTF-8). */
static void assert_terminal_safe(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		ck_assert_msg(c >= 0x20 || c == '\n' || c == '\t',
			      "control byte 0x%02x at %zu in %s", c, i, s);
		ck_assert_msg(c != 0x7f, "DEL at %zu", i);
		if (c == 0xc2 && i + 1 < n)
			ck_assert_msg((unsigned char)s[i + 1] < 0x80 ||
					  (unsigned char)s[i + 1] > 0x9f,
				      "C1 control at %zu", i);
	}
}

static size_t columns(const char *s, size_t n)
{
	size_t cols = 0;
	for (size_t i = 0; i < n; i++)
		cols += ((unsigned char)s[i] & 0xc0) != 0x80;
	return cols;
}

START_TEST(tool_calls_one_line_each)
{
	struct shown s;

	shown_open(&s, 0, false, false);
	feed(&s, "{\"type\":\"tool_call\",\"time\":\"T\",\"id\":\"1\",\"name\":\"Write\","
		 "\"input\":{\"content\":\"hi\\nthere\",\"file_path\":\"hello.txt\"}}");
	/* codex: a command as an array of words */
	feed(&s, "{\"type\":\"tool_call\",\"time\":\"T\",\"id\":\"2\",\"name\":\"shell\","
		 "\"input\":{\"command\":[\"bash\",\"-lc\",\"ls -la\\nwc -l x\"]}}");
	/* opencode: filePath; an unknown tool: its first string */
	feed(&s, "{\"type\":\"tool_call\",\"time\":\"T\",\"id\":\"3\",\"name\":\"read\","
		 "\"input\":{\"filePath\":\"/config/a.c\"}}");
	feed(&s, "{\"type\":\"tool_call\",\"time\":\"T\",\"id\":\"4\",\"name\":\"odd\","
		 "\"input\":{\"n\":3,\"what\":\"thing\"}}");
	feed(&s, "{\"type\":\"tool_call\",\"time\":\"T\",\"id\":\"5\",\"name\":\"TodoWrite\","
		 "\"input\":{\"todos\":[{\"a\":1}]}}");
	shown_close(&s);
	ck_assert_str_eq(s.out, "→ Write hello.txt\n"
				"→ shell bash -lc ls -la wc -l x\n"
				"→ read /config/a.c\n"
				"→ odd thing\n"
				"→ TodoWrite\n");
	ck_assert_str_eq(s.err, "");
	shown_free(&s);
}
END_TEST

START_TEST(tool_calls_cut_to_the_width)
{
	struct shown s;
	char line[1024];

	shown_open(&s, 20, false, false);
	snprintf(line, sizeof(line),
		 "{\"type\":\"tool_call\",\"time\":\"T\",\"id\":\"1\",\"name\":\"Bash\","
		 "\"input\":{\"command\":\"%s\"}}",
		 "echo aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
	feed(&s, line);
	/* multi-byte characters count as one column each */
	feed(&s, "{\"type\":\"tool_call\",\"time\":\"T\",\"id\":\"2\",\"name\":\"Write\","
		 "\"input\":{\"file_path\":\"ééééééééééééééééééééééééé\"}}");
	shown_close(&s);
	char *nl = strchr(s.out, '\n');
	ck_assert_ptr_nonnull(nl);
	ck_assert_uint_eq(columns(s.out, (size_t)(nl - s.out)), 20);
	ck_assert(strncmp(nl - strlen("…"), "…", strlen("…")) == 0);
	ck_assert(strncmp(s.out, "→ Bash echo aaaa", strlen("→ Bash echo aaaa")) == 0);
	char *second = nl + 1, *nl2 = strchr(second, '\n');
	ck_assert_ptr_nonnull(nl2);
	ck_assert_uint_eq(columns(second, (size_t)(nl2 - second)), 20);
	/* cut on a character's boundary: the output is still valid UTF-8 */
	ck_assert(strstr(second, "é…") != NULL);
	shown_free(&s);
}
END_TEST

START_TEST(tool_results_short)
{
	struct shown s;

	shown_open(&s, 0, false, false);
	feed(&s, "{\"type\":\"tool_result\",\"time\":\"T\",\"id\":\"1\",\"output\":"
		 "\"\\nfirst\\nsecond\\n"
		 "third\\n\",\"is_error\":false}");
	feed(&s, "{\"type\":\"tool_result\",\"time\":\"T\",\"id\":\"2\",\"output\":\"only\","
		 "\"is_error\":false}");
	feed(&s,
	     "{\"type\":\"tool_result\",\"time\":\"T\",\"id\":\"3\",\"output\":\"No such file\\n"
	     "at x\",\"is_error\":true}");
	feed(&s, "{\"type\":\"tool_result\",\"time\":\"T\",\"id\":\"4\",\"output\":\"\","
		 "\"is_error\":false}");
	feed(&s, "{\"type\":\"tool_result\",\"time\":\"T\",\"id\":\"5\",\"is_error\":true}");
	shown_close(&s);
	ck_assert_str_eq(s.out, "  ← first (+2 lines)\n"
				"  ← only\n"
				"  ✗ No such file (+1 lines)\n"
				"  ← (no output)\n"
				"  ✗ failed\n");
	shown_free(&s);
}
END_TEST

START_TEST(messages_whole_usage_and_errors_on_stderr)
{
	struct shown s;

	shown_open(&s, 10, false, false);
	feed(&s, "{\"type\":\"start\",\"time\":\"T\",\"agent\":\"claude\",\"session\":\"S-1\","
		 "\"model\":\"m1\"}");
	feed(&s, "{\"type\":\"message\",\"time\":\"T\",\"text\":\"A long answer, longer than the "
		 "width.\\n\\tIndented line\\n\"}");
	feed(&s, "{\"type\":\"usage\",\"time\":\"T\",\"input_tokens\":2,\"output_tokens\":3}");
	/* the running total: only the last is shown, at the end */
	feed(&s, "{\"type\":\"usage\",\"time\":\"T\",\"input_tokens\":12,\"output_tokens\":34}");
	feed(&s, "{\"type\":\"error\",\"time\":\"T\",\"message\":\"rate limited\"}");
	feed(&s, "{\"type\":\"end\",\"time\":\"T\",\"exit\":3,\"result\":\"A long answer\"}");
	shown_close(&s);
	/* the result is not printed again after the message */
	ck_assert_str_eq(s.out, "A long answer, longer than the width.\n\tIndented line\n");
	ck_assert_str_eq(s.err, "paddock: claude, model m1, session S-1\n"
				"paddock: agent error: rate limited\n"
				"paddock: 12 input tokens, 34 output tokens\n");
	ck_assert(s.v.ended);
	ck_assert_int_eq(s.v.exit, 3);
	ck_assert_str_eq(s.v.session, "S-1");
	shown_free(&s);

	/* quiet: no start and usage lines; errors still */
	shown_open(&s, 0, false, true);
	feed(&s, "{\"type\":\"start\",\"time\":\"T\",\"agent\":\"pi\",\"session\":\"x\"}");
	feed(&s, "{\"type\":\"usage\",\"time\":\"T\",\"input_tokens\":1,\"output_tokens\":2}");
	feed(&s, "{\"type\":\"error\",\"time\":\"T\",\"message\":\"boom\"}");
	/* an agent that answered only in its result */
	feed(&s, "{\"type\":\"end\",\"time\":\"T\",\"exit\":0,\"result\":\"the answer\"}");
	shown_close(&s);
	ck_assert_str_eq(s.out, "the answer\n");
	ck_assert_str_eq(s.err, "paddock: agent error: boom\n");
	ck_assert_int_eq(s.v.exit, 0);
	shown_free(&s);
}
END_TEST

/* Everything an agent writes is hostile: escape sequences (colours, the
 * window title, OSC 52 clipboard writes), BEL, DEL, C1 controls (CSI as
 * U+009B), invalid UTF-8 — in messages, tool names, arguments, results,
 * errors, the model's name. None reaches the terminal raw. */
START_TEST(hostile_events_never_reach_the_terminal_raw)
{
	static const char *const lines[] = {
	    "{\"type\":\"start\",\"time\":\"T\",\"agent\":\"a\\u001b[2J\",\"session\":\"s\\u0007\","
	    "\"model\":\"m\\u009b31m\"}",
	    "{\"type\":\"message\",\"time\":\"T\",\"text\":\"\\u001b[31mred\\u001b]0;owned\\u0007 "
	    "\\u001b]52;c;ZWNobyBwd25lZA==\\u0007 \\r\\u0008\\u007f\\u009b2J end\"}",
	    "{\"type\":\"tool_call\",\"time\":\"T\",\"id\":\"1\",\"name\":\"W\\u001b[8m\","
	    "\"input\":{\"file_path\":\"x\\u001b[1A\\u001b[2K\\n\\r\\u009d0;t\\u009c\"}}",
	    "{\"type\":\"tool_result\",\"time\":\"T\",\"id\":\"1\",\"output\":\"\\u001b[?1049h\","
	    "\"is_error\":false}",
	    "{\"type\":\"tool_result\",\"time\":\"T\",\"id\":\"1\",\"output\":\"\\u0085\\u001bc\","
	    "\"is_error\":true}",
	    "{\"type\":\"error\",\"time\":\"T\",\"message\":\"\\u001b[6n\\u0000after nul\"}",
	    "{\"type\":\"usage\",\"time\":\"T\",\"input_tokens\":1,\"output_tokens\":1}",
	    "{\"type\":\"end\",\"time\":\"T\",\"exit\":0,\"result\":\"\\u001b[5m\"}",
	};
	struct shown s;

	for (int json = 0; json <= 1; json++) {
		shown_open(&s, 30, json, false);
		for (size_t i = 0; i < ELEMENTSOF(lines); i++)
			feed(&s, lines[i]);
		/* raw bytes: DEL and a C1 control as UTF-8 are valid JSON as
		 * they are, and invalid UTF-8 is no JSON (skipped) */
		feed(&s, "{\"type\":\"message\",\"time\":\"T\",\"text\":\"raw\x7f del \xc2\x9b"
			 "31m c1\"}");
		feed(&s, "{\"type\":\"message\",\"time\":\"T\",\"text\":\"bad \xff\xfe utf8\"}");
		shown_close(&s);
		assert_terminal_safe(s.out, s.out_len);
		assert_terminal_safe(s.err, s.err_len);
		if (!json) {
			ck_assert(strstr(s.out, "\\x1b[31mred") != NULL);
			ck_assert(strstr(s.err, "agent error: \\x1b[6n\\x00after nul") != NULL);
		} else {
			ck_assert(strstr(s.out, "\\u007f") != NULL);
			ck_assert(strstr(s.out, "\\u009b") != NULL);
		}
		ck_assert_uint_eq(s.v.skipped, 1);
		shown_free(&s);
	}
}
END_TEST

START_TEST(json_lines_as_they_are)
{
	struct shown s;
	const char *a =
	    "{\"type\":\"start\",\"time\":\"2026-01-01T00:00:00.000Z\",\"agent\":\"claude\","
	    "\"session\":\"abc\",\"model\":\"m\"}";
	const char *b = "{\"type\":\"message\",\"time\":\"T\",\"text\":\"héllo \\\"q\\\"\"}";
	const char *c = "{\"type\":\"end\",\"time\":\"T\",\"exit\":0,\"result\":\"done\"}";

	shown_open(&s, 0, true, false);
	feed(&s, a);
	feed(&s, "not json at all");
	feed(&s, "[1,2]");
	feed(&s, "{\"no\":\"type\"}");
	feed(&s, "{\"type\":\"future_kind\",\"time\":\"T\"}");
	feed(&s, b);
	feed(&s, "");
	feed(&s, c);
	shown_close(&s);
	char want[1024];
	snprintf(want, sizeof(want), "%s\n{\"type\":\"future_kind\",\"time\":\"T\"}\n%s\n%s\n", a,
		 b, c);
	ck_assert_str_eq(s.out, want);
	ck_assert_str_eq(s.err, "");
	ck_assert_uint_eq(s.v.skipped, 3);
	ck_assert(s.v.ended);
	ck_assert_str_eq(s.v.session, "abc");
	shown_free(&s);

	/* readable: an unknown type shows nothing, a duplicate key is no event */
	shown_open(&s, 0, false, false);
	feed(&s, "{\"type\":\"future_kind\",\"time\":\"T\",\"text\":\"x\"}");
	feed(&s, "{\"type\":\"message\",\"type\":\"error\",\"text\":\"x\"}");
	feed(&s, "{\"type\":\"message\",\"time\":\"T\",\"text\":\"ok\"}\r");
	shown_close(&s);
	ck_assert_str_eq(s.out, "ok\n");
	ck_assert_uint_eq(s.v.skipped, 1);
	shown_free(&s);
}
END_TEST

START_TEST(end_exit_values)
{
	static const struct {
		const char *line;
		int exit;
	} cases[] = {
	    {"{\"type\":\"end\",\"time\":\"T\",\"exit\":0}", 0},
	    {"{\"type\":\"end\",\"time\":\"T\",\"exit\":255}", 255},
	    {"{\"type\":\"end\",\"time\":\"T\",\"exit\":256}", 1},
	    {"{\"type\":\"end\",\"time\":\"T\",\"exit\":-1}", 1},
	    {"{\"type\":\"end\",\"time\":\"T\",\"exit\":\"0\"}", 1},
	    {"{\"type\":\"end\",\"time\":\"T\"}", 1},
	};
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		struct shown s;
		shown_open(&s, 0, false, false);
		feed(&s, cases[i].line);
		shown_close(&s);
		ck_assert(s.v.ended);
		ck_assert_int_eq(s.v.exit, cases[i].exit);
		shown_free(&s);
	}
}
END_TEST

START_TEST(tool_argument)
{
	char *a;

	a = cli_tool_argument("{\"content\":\"c\",\"path\":\"p\",\"file_path\":\"fp\"}");
	ck_assert_str_eq(a, "fp");
	free(a);
	a = cli_tool_argument("{\"command\":[\"ls\",1]}"); /* not all strings: next key */
	ck_assert_ptr_null(a);
	a = cli_tool_argument("{\"command\":[\"ls\",1],\"x\":\"y\"}");
	ck_assert_str_eq(a, "y");
	free(a);
	ck_assert_ptr_null(cli_tool_argument("[]"));
	ck_assert_ptr_null(cli_tool_argument("nope"));
	ck_assert_ptr_null(cli_tool_argument("{}"));
}
END_TEST

START_TEST(prompt_text)
{
	pd_error err = {0};
	char *t = NULL;
	const char *words[] = {"write", "hello.txt", "with  two"};

	ck_assert_int_eq(cli_prompt_text(words, 3, NULL, &t, &err), 0);
	ck_assert_str_eq(t, "write hello.txt with  two");
	free(t);

	char in[] = "from\nstdin\n";
	FILE *f = fmemopen(in, strlen(in), "r");
	const char *dash[] = {"-"};
	ck_assert_int_eq(cli_prompt_text(dash, 1, f, &t, &err), 0);
	ck_assert_str_eq(t, "from\nstdin\n");
	free(t);
	fclose(f);

	char blank[] = " \n\t";
	f = fmemopen(blank, strlen(blank), "r");
	ck_assert_int_eq(cli_prompt_text(dash, 1, f, &t, &err), -EINVAL);
	ck_assert(strstr(err.msg, "empty") != NULL);
	fclose(f);

	size_t big = 64 * 1024 + 1;
	char *huge = malloc(big);
	memset(huge, 'a', big);
	f = fmemopen(huge, big, "r");
	ck_assert_int_eq(cli_prompt_text(dash, 1, f, &t, &err), -EINVAL);
	ck_assert(strstr(err.msg, "64 KiB") != NULL);
	fclose(f);
	/* exactly the cap passes */
	f = fmemopen(huge, big - 1, "r");
	ck_assert_int_eq(cli_prompt_text(dash, 1, f, &t, &err), 0);
	ck_assert_uint_eq(strlen(t), big - 1);
	free(t);
	fclose(f);
	free(huge);

	char nul[] = "a\0b";
	f = fmemopen(nul, 3, "r");
	ck_assert_int_eq(cli_prompt_text(dash, 1, f, &t, &err), -EINVAL);
	fclose(f);
}
END_TEST

START_TEST(parse_prompt_and_skill)
{
	cli_args a;
	pd_error err;

	ck_assert_int_eq(parse(&a, &err, "--json", "prompt", "--agent", "codex", "--model=gpt-x",
			       "--continue", "cli-abc123", "--cwd", "/config", "-e", "A=1", "b",
			       "write", "--agent", "x", NULL),
			 0);
	ck_assert_int_eq(a.verb, CLI_PROMPT);
	ck_assert(a.json);
	ck_assert_str_eq(a.agent, "codex");
	ck_assert_str_eq(a.model, "gpt-x");
	ck_assert_str_eq(a.cont, "cli-abc123");
	ck_assert_str_eq(a.cwd, "/config");
	ck_assert_uint_eq(a.n_env, 1);
	ck_assert_str_eq(a.box, "b");
	/* after the first word, everything is the text */
	ck_assert_uint_eq(a.n_words, 3);
	ck_assert_str_eq(a.words[1], "--agent");
	cli_args_release(&a);

	ck_assert_int_eq(parse(&a, &err, "prompt", "current", "-", NULL), 0);
	ck_assert_uint_eq(a.n_words, 1);
	ck_assert_str_eq(a.words[0], "-");
	cli_args_release(&a);

	ck_assert_int_eq(parse(&a, &err, "prompt", "b", NULL), -EINVAL);
	ck_assert_int_eq(parse(&a, &err, "prompt", "b", "x", "-", NULL), -EINVAL);
	ck_assert_int_eq(parse(&a, &err, "prompt", "--agent", "../x", "b", "hi", NULL), -EINVAL);
	ck_assert_int_eq(parse(&a, &err, "prompt", "--model", "", "b", "hi", NULL), -EINVAL);
	ck_assert_int_eq(parse(&a, &err, "prompt", "--continue", "a/b", "b", "hi", NULL), -EINVAL);
	ck_assert_int_eq(parse(&a, &err, "exec", "--agent", "claude", "b", "ls", NULL), -EINVAL);
	ck_assert_int_eq(parse(&a, &err, "prompt", "--desktop", "b", "hi", NULL), -EINVAL);

	ck_assert_int_eq(parse(&a, &err, "skill", "install", NULL), 0);
	ck_assert_int_eq(a.verb, CLI_SKILL_INSTALL);
	ck_assert_ptr_null(a.value);
	cli_args_release(&a);
	ck_assert_int_eq(parse(&a, &err, "skill", "install", "./dir", NULL), 0);
	ck_assert_str_eq(a.value, "./dir");
	cli_args_release(&a);
	ck_assert_int_eq(parse(&a, &err, "skill", "install", "a", "b", NULL), -EINVAL);
	ck_assert_int_eq(parse(&a, &err, "skill", NULL), -EINVAL);
	ck_assert_int_eq(parse(&a, &err, "skill", "remove", NULL), -EINVAL);
}
END_TEST

/* The skill's text: Agent Skills front matter first. */
START_TEST(skill_front_matter)
{
	const char *md = (const char *)cli_skill_md;

	ck_assert_uint_eq(strlen(md), cli_skill_md_size);
	ck_assert(strncmp(md, "---\nname: paddock\ndescription: ", 31) == 0);
	const char *end = strstr(md + 4, "\n---\n");
	ck_assert_ptr_nonnull(end);
	const char *desc = strstr(md, "description: ") + 13;
	const char *nl = strchr(desc, '\n');
	ck_assert(nl - desc > 20 && nl - desc <= 1024);
	ck_assert(strstr(end, "```sh\n") != NULL);
}
END_TEST

static char *tmpdir(void)
{
	char t[] = "/tmp/check-skill.XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(t));
	return strdup(t);
}

static char *cat(const char *path)
{
	char *body = NULL;
	ck_assert_int_eq(read_file_at(AT_FDCWD, path, 1 << 20, &body, NULL), 0);
	return body;
}

START_TEST(skill_written_never_through_a_link)
{
	_cleanup_free_ char *d = tmpdir(), *victim = NULL, *p = NULL, *path = NULL;
	pd_error err = {0};
	struct stat st;

	/* a fresh directory: ROOT and ROOT/paddock are made */
	ck_assert_int_gt(asprintf(&p, "%s/a/b", d), 0);
	ck_assert_int_eq(cli_skill_write(p, "one\n", 4, &path, &err), 0);
	ck_assert(strstr(path, "/a/b/paddock/SKILL.md") != NULL);
	_cleanup_free_ char *got = cat(path);
	ck_assert_str_eq(got, "one\n");
	free(path);
	path = NULL;
	/* again: replaced whole */
	ck_assert_int_eq(cli_skill_write(p, "two\n", 4, &path, &err), 0);
	free(got);
	got = cat(path);
	ck_assert_str_eq(got, "two\n");

	/* SKILL.md a link to a file elsewhere: the link is replaced, the file
	 * it led to is untouched */
	ck_assert_int_gt(asprintf(&victim, "%s/victim", d), 0);
	ck_assert_int_eq(write_file_atomic(victim, "keep\n", 5, 0644), 0);
	ck_assert_int_eq(unlink(path), 0);
	ck_assert_int_eq(symlink(victim, path), 0);
	free(path);
	path = NULL;
	ck_assert_int_eq(cli_skill_write(p, "three\n", 6, &path, &err), 0);
	ck_assert_int_eq(lstat(path, &st), 0);
	ck_assert(S_ISREG(st.st_mode));
	free(got);
	got = cat(victim);
	ck_assert_str_eq(got, "keep\n");

	/* ROOT/paddock a link to another directory: refused, nothing written
	 * there */
	_cleanup_free_ char *q = NULL, *link = NULL, *other = NULL, *through = NULL;
	ck_assert_int_gt(asprintf(&q, "%s/c", d), 0);
	ck_assert_int_gt(asprintf(&other, "%s/other", d), 0);
	ck_assert_int_eq(mkdir(q, 0755), 0);
	ck_assert_int_eq(mkdir(other, 0755), 0);
	ck_assert_int_gt(asprintf(&link, "%s/paddock", q), 0);
	ck_assert_int_eq(symlink(other, link), 0);
	char *none = NULL;
	ck_assert_int_eq(cli_skill_write(q, "x", 1, &none, &err), -ENOTDIR);
	ck_assert(strstr(err.msg, "not a directory") != NULL);
	ck_assert_ptr_null(none);
	ck_assert_int_gt(asprintf(&through, "%s/SKILL.md", other), 0);
	ck_assert_int_eq(access(through, F_OK), -1);

	/* ROOT/paddock a file: refused */
	ck_assert_int_eq(unlink(link), 0);
	ck_assert_int_eq(write_file_atomic(link, "f", 1, 0644), 0);
	ck_assert_int_eq(cli_skill_write(q, "x", 1, &none, &err), -ENOTDIR);
	/* SKILL.md a directory: refused, not replaced */
	ck_assert_int_eq(unlink(link), 0);
	ck_assert_int_eq(mkdir(link, 0755), 0);
	_cleanup_free_ char *sd = NULL;
	ck_assert_int_gt(asprintf(&sd, "%s/SKILL.md", link), 0);
	ck_assert_int_eq(mkdir(sd, 0755), 0);
	ck_assert_int_eq(cli_skill_write(q, "x", 1, &none, &err), -EISDIR);
	/* no temp file left behind anywhere */
	_cleanup_free_ char *cmd = NULL;
	ck_assert_int_gt(asprintf(&cmd, "test -z \"$(find %s -name '.SKILL.md.*')\"", d), 0);
	ck_assert_int_eq(system(cmd), 0);
	free(cmd);
	ck_assert_int_gt(asprintf(&cmd, "rm -rf %s", d), 0);
	ck_assert_int_eq(system(cmd), 0);
}
END_TEST

static const char *fake_env_claude, *fake_env_xdg, *fake_env_home;
static char *fake_getenv(const char *name)
{
	if (strcmp(name, "HOME") == 0)
		return (char *)fake_env_home;
	if (strcmp(name, "CLAUDE_CONFIG_DIR") == 0)
		return (char *)fake_env_claude;
	if (strcmp(name, "XDG_CONFIG_HOME") == 0)
		return (char *)fake_env_xdg;
	return NULL;
}

START_TEST(skill_dirs)
{
	char **v = NULL;
	size_t n = 0;
	pd_error err = {0};

	fake_env_home = "/home/u";
	fake_env_claude = NULL;
	fake_env_xdg = NULL;
	ck_assert_int_eq(cli_skill_dirs(fake_getenv, &v, &n, &err), 0);
	ck_assert_uint_eq(n, 4);
	ck_assert_str_eq(v[0], "/home/u/.claude/skills");
	ck_assert_str_eq(v[1], "/home/u/.agents/skills");
	ck_assert_str_eq(v[2], "/home/u/.config/opencode/skills");
	ck_assert_str_eq(v[3], "/home/u/.pi/agent/skills");
	ck_assert_ptr_null(v[4]);
	strv_free(v);

	fake_env_claude = "/c";
	fake_env_xdg = "/x";
	ck_assert_int_eq(cli_skill_dirs(fake_getenv, &v, &n, &err), 0);
	ck_assert_str_eq(v[0], "/c/skills");
	ck_assert_str_eq(v[2], "/x/opencode/skills");
	strv_free(v);

	/* relative values are ignored */
	fake_env_claude = "rel";
	fake_env_xdg = "";
	ck_assert_int_eq(cli_skill_dirs(fake_getenv, &v, &n, &err), 0);
	ck_assert_str_eq(v[0], "/home/u/.claude/skills");
	ck_assert_str_eq(v[2], "/home/u/.config/opencode/skills");
	strv_free(v);

	fake_env_home = NULL;
	ck_assert_int_eq(cli_skill_dirs(fake_getenv, &v, &n, &err), -ENOENT);
	fake_env_home = "relative";
	ck_assert_int_eq(cli_skill_dirs(fake_getenv, &v, &n, &err), -ENOENT);
}
END_TEST

static Suite *prompt_suite(void)
{
	Suite *s = suite_create("cli_prompt");
	TCase *tc = tcase_create("events");
	tcase_add_test(tc, tool_calls_one_line_each);
	tcase_add_test(tc, tool_calls_cut_to_the_width);
	tcase_add_test(tc, tool_results_short);
	tcase_add_test(tc, messages_whole_usage_and_errors_on_stderr);
	tcase_add_test(tc, hostile_events_never_reach_the_terminal_raw);
	tcase_add_test(tc, json_lines_as_they_are);
	tcase_add_test(tc, end_exit_values);
	tcase_add_test(tc, tool_argument);
	suite_add_tcase(s, tc);
	tc = tcase_create("command");
	tcase_add_test(tc, prompt_text);
	tcase_add_test(tc, parse_prompt_and_skill);
	suite_add_tcase(s, tc);
	tc = tcase_create("skill");
	tcase_add_test(tc, skill_front_matter);
	tcase_add_test(tc, skill_written_never_through_a_link);
	tcase_add_test(tc, skill_dirs);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_tap_run(prompt_suite());
}
