/* prompt.c - a coding agent's run in a box, its events followed live (see
 * prompt.h). The job helpers are exec's (exec.h). */
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/exec.h"
#include "cli/platform.h"
#include "cli/prompt.h"

/* An event line longer than this is dropped whole (the daemon writes
 * none: an agent's message of megabytes is still far below). */
#define EVENT_LINE_MAX (16u << 20)

struct events {
	cli_prompt_view *view;
	struct pd_buf line;
	bool too_long;
	int r;
};

static bool take_events(void *user, const char *data, size_t n)
{
	struct events *e = user;

	while (n > 0) {
		const char *nl = memchr(data, '\n', n);
		size_t k = nl ? (size_t)(nl - data) : n;
		if (!e->too_long) {
			if (e->line.len + k > EVENT_LINE_MAX) {
				e->too_long = true;
				pd_buf_free(&e->line);
			} else if (pd_buf_append(&e->line, data, k) < 0) {
				e->r = -ENOMEM;
				return false;
			}
		}
		if (!nl)
			return true;
		data += k + 1;
		n -= k + 1;
		if (e->too_long)
			e->view->skipped++;
		else if (cli_prompt_view_line(e->view, e->line.data ? e->line.data : "",
					      e->line.len) < 0) {
			e->r = -ENOMEM;
			return false;
		}
		e->line.len = 0;
		e->too_long = false;
		/* `end` is always last: stop there, whatever the stream does. */
		if (e->view->ended)
			return false;
	}
	return true;
}

struct interrupted {
	bool killed;
};

/* The first SIGINT kills the agent (its events then end); the second
 * gives up waiting. */
static int prompt_interrupt(cli_client *c, const char *dir, unsigned nth, void *user, pd_error *err)
{
	struct interrupted *in = user;

	if (nth == 1) {
		fprintf(stderr, "paddock: stopping the agent (Ctrl-C again stops waiting)\n");
		cli_job_ctl(c, dir, "kill");
		in->killed = true;
		return 0;
	}
	return pd_error_set(err, -EINTR, "stopped waiting; the agent may still run");
}

/* Writes the prompt's settings, then its text. */
static int setup_prompt(cli_client *c, const char *dir, const cli_prompt_opts *o, pd_error *err)
{
	const struct {
		const char *file, *value;
	} settings[] = {
	    {"agent", o->agent},
	    {"model", o->model},
	    {"continue", o->cont},
	};
	_cleanup_free_ char *path = NULL;
	int r;

	for (size_t i = 0; i < ELEMENTSOF(settings); i++) {
		if (!settings[i].value)
			continue;
		r = cli_job_put(c, dir, settings[i].file, settings[i].value, err);
		if (r < 0)
			return r;
	}
	r = cli_job_settings(c, dir, o->env, o->n_env, o->cwd, err);
	if (r < 0)
		return r;
	if (asprintf(&path, "%stext", dir) < 0)
		return pd_error_set(err, -ENOMEM, "out of memory");
	r = cli_put(c, path, o->text, strlen(o->text), err);
	return r < 0 ? pd_error_prefix(err, "text") : 0;
}

/* A tool call's line fits the terminal; piped, it is cut at 160. */
static unsigned out_width(void)
{
	unsigned cols = cli_platform_columns(STDOUT_FILENO);

	return cols > 0 ? cols : 160;
}

int cli_prompt(cli_client *c, const char *box, const cli_prompt_opts *o, int *ret_exit,
	       bool *ret_started, pd_error *err)
{
	_cleanup_free_ char *ebox = NULL, *name = NULL, *dir = NULL;
	cli_prompt_view view = {
	    .out = stdout,
	    .err = stderr,
	    .width = out_width(),
	    .json = o->json,
	    .quiet = o->quiet,
	};
	struct events ev = {.view = &view};
	struct interrupted in = {0};
	const cli_job_stream stream = {"events", take_events, &ev};
	int r;

	*ret_started = false;
	ebox = cli_escape_segment(box);
	name = cli_random_name("cli-");
	if (!ebox || !name || asprintf(&dir, "boxes/%s/prompts/%s/", ebox, name) < 0)
		return pd_error_set(err, -ENOMEM, "out of memory");

	r = cli_put(c, dir, NULL, 0, err);
	if (r < 0)
		return r;
	r = setup_prompt(c, dir, o, err);
	if (r < 0) {
		pd_error ignored = {0};
		cli_delete(c, dir, &ignored);
		return r;
	}
	*ret_started = true;
	if (!o->quiet && !o->json)
		fprintf(stderr, "paddock: prompt %s\n", name);

	r = cli_job_follow(c, dir, &stream, 1, prompt_interrupt, &in, err);
	if (r == 0 && ev.r < 0)
		r = pd_error_set(err, ev.r, "out of memory");
	/* A last line without its newline. */
	if (r == 0 && !view.ended && ev.line.len > 0)
		cli_prompt_view_line(&view, ev.line.data, ev.line.len);
	cli_prompt_view_finish(&view);
	pd_buf_free(&ev.line);
	if (r == 0)
		r = cli_job_exit(c, dir, ret_exit, err);
	if (r == 0 && !view.ended && !o->quiet)
		fprintf(stderr, "paddock: the events ended without an end event\n");
	if (view.skipped > 0 && !o->quiet)
		fprintf(stderr, "paddock: %u event lines were not JSON and were skipped\n",
			view.skipped);
	cli_prompt_view_release(&view);
	if (r == 0 && in.killed)
		*ret_exit = 130;
	return r;
}
