/* prompts.h - prompts: an agent run headless in a box, as a job of kind
 * JOB_PROMPT (jobs.h) in boxes/NAME/prompts/P (docs/prompts.md).
 *
 * A prompt's directory (DATA/boxes/ID/prompts/P/) holds what an exec job's
 * does (spec.json, status, exit, output, ...) and: agent, model, cwd, env,
 * continue (settings until text is written), text (writing it starts the
 * prompt), events (normalized, box/agent-events.h), result and session
 * (written by the supervisor before the final status).
 *
 * Starting a prompt: its agent (the agent file, else the config's [paddock]
 * agent, else the first agent of the box's image) must be in the box's
 * image (-ENOENT); `continue` names an earlier prompt of the same agent
 * whose session is resumed. A box whose policy keeps the agent from its
 * model endpoint (agents.h) gets no process at all: the daemon writes an
 * error event naming the policy and the preset to add, an end event, exit
 * 1 and status "exited 1" (PROMPT_ENDED).
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "common/parse.h"

struct engine;
struct job_start;

#define PROMPT_TEXT_MAX (100 * 1024)
/* eng_prompt_precheck(): the prompt was recorded as ended at once. */
#define PROMPT_ENDED 1

/* The box's `prompt` file: the next numbered prompt with the defaults,
 * started with data; its name in ret_name. */
int engine_prompt_new(struct engine *e, int64_t box_id, const char *data, size_t len,
		      char *ret_name, size_t namesz, pd_error *err);

/* --- for jobs.c ------------------------------------------------------------------ */

/* text: 1 to PROMPT_TEXT_MAX bytes, no NUL, not only blanks; *ret a copy. */
int eng_prompt_check_text(const char *data, size_t len, char **ret, pd_error *err);
/* agent, model, continue: checks a value; *ret what to store. */
int eng_prompt_setting(struct engine *e, int64_t box_id, const char *file, const char *data,
		       size_t len, char **ret, pd_error *err);
/* What a created prompt's agent and model read as before they are set
 * (the defaults it would start with); -ENOENT for other files. */
int eng_prompt_default(struct engine *e, int64_t box_id, const char *file, char **ret);
/* Why a prompt does not start: its agent and the error event's text. */
struct prompt_refusal {
	char agent[NAME_MAX_LEN + 1];
	char why[1024];
};
/* Checks prompt id can start: its agent, continue, and its box's policy.
 * 0: go on; PROMPT_ENDED: the policy keeps the agent from its model, *ret
 * says why (nothing written yet); < 0: bad input, nothing changed. */
int eng_prompt_precheck(struct engine *e, int64_t id, struct prompt_refusal *ret, pd_error *err);
/* Writes a refused prompt's files into its directory: agent, text,
 * started, events (an error event, then end with exit 1), result, exit 1,
 * ended and, last, status "exited 1". */
int eng_prompt_record_refused(const char *dir, const struct prompt_refusal *ref, const char *text);
/* Writes the prompt's spec.json (and its agent and text files). */
int eng_prompt_write_spec(struct engine *e, const struct job_start *si, const char *text,
			  pd_error *err);
