/* prompt-text.c - a prompt's normalized events as readable lines, without
 * a server (see prompt.h). JSON by jansson. */
#include <string.h>

#include <jansson.h>

#include "cli/cli.h"
#include "cli/prompt.h"
#include "common/buf.h"
#include "common/parse.h"

/* A result's first line at most, then how many more it had. */
#define RESULT_MORE_FMT " (+%zu lines)"

/* Writes the first max_cols characters of the UTF-8 string s (all of it
 * when max_cols is 0), "…" in place of the last one when it is cut.
 * Returns the characters written. */
static unsigned put_cols(FILE *f, const char *s, unsigned max_cols)
{
	size_t total = 0;

	for (const char *p = s; *p; p++)
		total += ((unsigned char)*p & 0xc0) != 0x80;
	if (max_cols == 0 || total <= max_cols) {
		fputs(s, f);
		return (unsigned)total;
	}
	/* Keep max_cols - 1 characters and the ellipsis. */
	const char *p = s;
	for (unsigned n = 0; *p; p++) {
		if (((unsigned char)*p & 0xc0) != 0x80 && n++ == max_cols - 1)
			break;
	}
	fwrite(s, 1, (size_t)(p - s), f);
	fputs("…", f);
	return max_cols;
}

void cli_print_clean(FILE *f, const char *s, size_t n, bool keep_lines, unsigned max_cols)
{
	_cleanup_free_ char *flat = NULL, *clean = NULL;
	size_t cap = n * 4 + 1;

	clean = malloc(cap);
	if (!clean)
		return;
	if (!keep_lines) {
		flat = malloc(n + 1);
		if (!flat)
			return;
		for (size_t i = 0; i < n; i++)
			flat[i] = s[i] == '\n' || s[i] == '\r' || s[i] == '\t' ? ' ' : s[i];
		text_printable(flat, n, clean, cap);
		put_cols(f, clean, max_cols);
		return;
	}
	/* '\n' and '\t' pass; every other piece is made printable. */
	unsigned left = max_cols;
	for (const char *p = s, *end = s + n; p < end;) {
		size_t k = 0;
		while (p + k < end && p[k] != '\n' && p[k] != '\t')
			k++;
		text_printable(p, k, clean, cap);
		unsigned put = put_cols(f, clean, max_cols ? left : 0);
		if (max_cols) {
			left -= put;
			if (left == 0)
				return;
		}
		p += k;
		if (p < end) {
			fputc(*p, f);
			p++;
			if (max_cols && --left == 0)
				return;
		}
	}
}

/* A string, or an array of strings joined by spaces; NULL for anything
 * else. */
static char *string_of(json_t *v)
{
	if (json_is_string(v))
		return strndup(json_string_value(v), json_string_length(v));
	if (!json_is_array(v) || json_array_size(v) == 0)
		return NULL;
	_cleanup_(pd_buf_freep) struct pd_buf out = {0};
	size_t i;
	json_t *item;
	json_array_foreach(v, i, item)
	{
		if (!json_is_string(item) || (i > 0 && pd_buf_append(&out, " ", 1) < 0) ||
		    pd_buf_append(&out, json_string_value(item), json_string_length(item)) < 0)
			return NULL;
	}
	return pd_buf_take(&out, NULL);
}

static char *tool_argument(json_t *input)
{
	static const char *const keys[] = {"file_path",	  "filePath", "path", "command",
					   "cmd",	  "pattern",  "url",  "query",
					   "description", "prompt"};
	const char *key;
	json_t *v;

	if (!json_is_object(input))
		return NULL;
	for (size_t i = 0; i < ELEMENTSOF(keys); i++) {
		char *s = string_of(json_object_get(input, keys[i]));
		if (s)
			return s;
	}
	json_object_foreach(input, key, v)
	{
		if (json_is_string(v))
			return strndup(json_string_value(v), json_string_length(v));
	}
	return NULL;
}

char *cli_tool_argument(const char *input_json)
{
	json_t *input = json_loads(input_json, JSON_REJECT_DUPLICATES, NULL);
	char *s = tool_argument(input);
	json_decref(input);
	return s;
}

static const char *str(json_t *o, const char *key, size_t *ret_len)
{
	json_t *v = json_object_get(o, key);
	if (!json_is_string(v)) {
		*ret_len = 0;
		return NULL;
	}
	*ret_len = json_string_length(v);
	return json_string_value(v);
}

/* The width left after a prefix of cols columns (0: no cut). */
static unsigned width_after(const cli_prompt_view *v, unsigned cols)
{
	if (v->width == 0)
		return 0;
	return v->width > cols + 1 ? v->width - cols : 1;
}

static void show_tool_call(cli_prompt_view *v, json_t *ev)
{
	size_t nlen;
	const char *name = str(ev, "name", &nlen);
	_cleanup_free_ char *arg = tool_argument(json_object_get(ev, "input"));
	_cleanup_free_ char *line = NULL;

	if (!name) {
		name = "tool";
		nlen = 4;
	}
	if (asprintf(&line, "%.*s%s%s", (int)nlen, name, arg ? " " : "", arg ? arg : "") < 0)
		return;
	fputs("→ ", v->out);
	cli_print_clean(v->out, line, strlen(line), false, width_after(v, 2));
	fputc('\n', v->out);
}

static void show_tool_result(cli_prompt_view *v, json_t *ev)
{
	size_t len;
	const char *out = str(ev, "output", &len);
	bool failed = json_is_true(json_object_get(ev, "is_error"));
	size_t first = 0, more = 0;
	char tail[48] = "";

	if (!out) {
		out = "";
		len = 0;
	}
	/* Leading blank lines say nothing. */
	while (len > 0 && (*out == '\n' || *out == '\r')) {
		out++;
		len--;
	}
	while (first < len && out[first] != '\n')
		first++;
	for (size_t i = first; i < len; i++)
		if (out[i] == '\n' && i + 1 < len)
			more++;
	if (more > 0)
		snprintf(tail, sizeof(tail), RESULT_MORE_FMT, more);
	fputs(failed ? "  ✗ " : "  ← ", v->out);
	if (len == 0)
		fputs(failed ? "failed" : "(no output)", v->out);
	else
		cli_print_clean(v->out, out, first, false,
				width_after(v, 4 + (unsigned)strlen(tail)));
	fprintf(v->out, "%s\n", tail);
}

static void show_message(cli_prompt_view *v, json_t *ev)
{
	size_t len;
	const char *text = str(ev, "text", &len);

	if (!text || len == 0)
		return;
	cli_print_clean(v->out, text, len, true, 0);
	if (text[len - 1] != '\n')
		fputc('\n', v->out);
	v->said_something = true;
}

static void show_start(cli_prompt_view *v, json_t *ev)
{
	size_t alen, mlen, slen;
	const char *agent = str(ev, "agent", &alen), *model = str(ev, "model", &mlen);
	const char *session = str(ev, "session", &slen);

	if (session) {
		free(v->session);
		v->session = strndup(session, slen);
	}
	if (v->quiet)
		return;
	fputs("paddock: ", v->err);
	cli_print_clean(v->err, agent ? agent : "agent", agent ? alen : 5, false, 0);
	if (model && mlen > 0) {
		fputs(", model ", v->err);
		cli_print_clean(v->err, model, mlen, false, 0);
	}
	if (session && slen > 0) {
		fputs(", session ", v->err);
		cli_print_clean(v->err, session, slen, false, 0);
	}
	fputc('\n', v->err);
}

static void show_error(cli_prompt_view *v, json_t *ev)
{
	size_t len;
	const char *msg = str(ev, "message", &len);

	fputs("paddock: agent error: ", v->err);
	if (msg && len > 0)
		cli_print_clean(v->err, msg, len, true, 0);
	else
		fputs("(no message)", v->err);
	fputc('\n', v->err);
}

/* usage counts the prompt's tokens so far: the last one is shown, at the
 * end. */
static void note_usage(cli_prompt_view *v, json_t *ev)
{
	json_t *in = json_object_get(ev, "input_tokens"),
	       *out = json_object_get(ev, "output_tokens");

	if (!json_is_integer(in) || !json_is_integer(out))
		return;
	v->has_usage = true;
	v->input_tokens = json_integer_value(in);
	v->output_tokens = json_integer_value(out);
}

void cli_prompt_view_finish(cli_prompt_view *v)
{
	if (!v->has_usage || v->quiet || v->json)
		return;
	v->has_usage = false;
	fprintf(v->err,
		"paddock: %" JSON_INTEGER_FORMAT " input tokens, %" JSON_INTEGER_FORMAT
		" output tokens\n",
		(json_int_t)v->input_tokens, (json_int_t)v->output_tokens);
}

static void note_end(cli_prompt_view *v, json_t *ev)
{
	json_t *code = json_object_get(ev, "exit");
	size_t len;
	const char *result = str(ev, "result", &len);

	v->ended = true;
	cli_prompt_view_finish(v);
	v->exit = json_is_integer(code) && json_integer_value(code) >= 0 &&
			  json_integer_value(code) <= 255
		      ? (int)json_integer_value(code)
		      : 1;
	/* The answer is the last message; an agent that said it only in its
	 * result still shows it. */
	if (!v->json && !v->said_something && result && len > 0) {
		cli_print_clean(v->out, result, len, true, 0);
		if (result[len - 1] != '\n')
			fputc('\n', v->out);
	}
}

/* --json: the line as it came when nothing in it could drive a terminal;
 * else the event again with every non-ASCII character and DEL escaped. (jansson
 * never lets a raw control character into a string it parsed, but DEL
 * and the C1 controls U+0080-U+009F are valid JSON.) */
static void print_json(cli_prompt_view *v, json_t *ev, const char *line, size_t len)
{
	bool plain = true;

	for (size_t i = 0; i < len && plain; i++) {
		unsigned char c = (unsigned char)line[i];
		if (c < 0x20 || c == 0x7f ||
		    (c == 0xc2 && i + 1 < len && (unsigned char)line[i + 1] >= 0x80 &&
		     (unsigned char)line[i + 1] <= 0x9f))
			plain = false;
	}
	if (plain) {
		fwrite(line, 1, len, v->out);
		fputc('\n', v->out);
		return;
	}
	_cleanup_free_ char *again =
	    json_dumps(ev, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII);
	if (!again)
		return;
	/* ENSURE_ASCII leaves DEL (ASCII) as it is: only inside strings. */
	for (const char *p = again; *p; p++) {
		if (*p == 0x7f)
			fputs("\\u007f", v->out);
		else
			fputc(*p, v->out);
	}
	fputc('\n', v->out);
}

int cli_prompt_view_line(cli_prompt_view *v, const char *line, size_t len)
{
	json_error_t jerr;
	json_t *ev;
	const char *type;

	if (len > 0 && line[len - 1] == '\r')
		len--;
	if (len == 0)
		return 0;
	ev = json_loadb(line, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
	if (!json_is_object(ev) || !json_is_string(json_object_get(ev, "type"))) {
		json_decref(ev);
		v->skipped++;
		return 0;
	}
	type = json_string_value(json_object_get(ev, "type"));
	if (v->json)
		print_json(v, ev, line, len);
	if (strcmp(type, "start") == 0) {
		if (v->json) {
			size_t slen;
			const char *s = str(ev, "session", &slen);
			if (s) {
				free(v->session);
				v->session = strndup(s, slen);
			}
		} else
			show_start(v, ev);
	} else if (strcmp(type, "end") == 0)
		note_end(v, ev);
	else if (v->json)
		; /* printed above */
	else if (strcmp(type, "message") == 0)
		show_message(v, ev);
	else if (strcmp(type, "tool_call") == 0)
		show_tool_call(v, ev);
	else if (strcmp(type, "tool_result") == 0)
		show_tool_result(v, ev);
	else if (strcmp(type, "usage") == 0)
		note_usage(v, ev);
	else if (strcmp(type, "error") == 0)
		show_error(v, ev);
	json_decref(ev);
	fflush(v->out);
	fflush(v->err);
	return 0;
}

void cli_prompt_view_release(cli_prompt_view *v)
{
	free(v->session);
	v->session = NULL;
}

int cli_prompt_text(const char *const *words, size_t n, FILE *in, char **ret, pd_error *err)
{
	/* The tree takes one write of at most 64 KiB. */
	const size_t max = 64 * 1024;
	_cleanup_free_ char *text = NULL;
	size_t len = 0;

	if (n == 1 && strcmp(words[0], "-") == 0) {
		text = malloc(max + 1);
		if (!text)
			return pd_error_set(err, -ENOMEM, "out of memory");
		size_t got;
		while ((got = fread(text + len, 1, max + 1 - len, in)) > 0)
			len += got;
		if (ferror(in))
			return pd_error_set(err, -EIO,
					    "cannot read the prompt from standard input");
		if (len > max)
			return pd_error_set(err, -EINVAL,
					    "the prompt is longer than %zu KiB (the tree's write "
					    "cap)",
					    max / 1024);
		text[len] = '\0';
		if (memchr(text, '\0', len))
			return pd_error_set(err, -EINVAL, "the prompt holds a NUL byte");
	} else {
		struct pd_buf b = {0};
		for (size_t i = 0; i < n; i++)
			if (pd_buf_printf(&b, "%s%s", i ? " " : "", words[i]) < 0) {
				pd_buf_free(&b);
				return pd_error_set(err, -ENOMEM, "out of memory");
			}
		text = pd_buf_take(&b, &len);
		pd_buf_free(&b);
		if (!text)
			return pd_error_set(err, -ENOMEM, "out of memory");
		if (len > max)
			return pd_error_set(err, -EINVAL,
					    "the prompt is longer than %zu KiB (the tree's write "
					    "cap)",
					    max / 1024);
	}
	bool blank = true;
	for (size_t i = 0; i < len && blank; i++)
		blank = text[i] == ' ' || text[i] == '\n' || text[i] == '\t' || text[i] == '\r';
	if (blank)
		return pd_error_set(err, -EINVAL, "the prompt is empty");
	*ret = TAKE_PTR(text);
	return 0;
}
