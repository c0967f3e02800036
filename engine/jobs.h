/* jobs.h - exec jobs: commands run in a box under a per-job supervisor
 * (paddock-exec) that owns the pipes and records everything in the job's
 * directory, so jobs and their output outlive the daemon.
 *
 * A job directory (DATA/boxes/ID/jobs/NAME/) holds spec.json (written here),
 * and, written by the supervisor: supervisor.pid, pid, started, stdout,
 * stderr, output, stdin.fifo, then exit, ended and, last, status. A final
 * status ("exited N", "killed SIG") therefore means every other file is
 * complete.
 *
 * Wake keys: a job's streams wake with JOB_WAKE_KEY(job id).
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "engine/engine.h"

#define JOB_WAKE_KEY(id) ((1ULL << 62) | (uint64_t)(id))
#define JOB_ENV_MAX 65536
#define JOB_CMD_MAX 65536

enum job_state { JOB_CREATED, JOB_RUNNING, JOB_ENDED };

/* What a job runs: a command (exec/NAME, DATA/boxes/ID/jobs/NAME) or an
 * agent's prompt (prompts/NAME, DATA/boxes/ID/prompts/NAME, prompts.h).
 * Each kind is a name space of its own in a box; ids are shared. */
enum job_kind { JOB_EXEC, JOB_PROMPT };

struct job_view {
	int64_t id;
	int64_t box_id;
	enum job_kind kind;
	char name[NAME_MAX_LEN + 1];
	enum job_state state;
};

/* Job files a reader may follow. */
enum job_stream { JOB_STDOUT, JOB_STDERR, JOB_OUTPUT, JOB_EVENTS };

/* A job is addressed by its id (job_view's id, never reused), a box's jobs
 * by the box's id (engine.h: ids, not names); -ENOENT once it is gone. */

/* mkdir exec/NAME: a job in state created. */
int engine_job_create(struct engine *e, int64_t box_id, const char *name, pd_error *err);
/* The same for a kind (mkdir prompts/NAME: JOB_PROMPT). */
int engine_job_create_kind(struct engine *e, int64_t box_id, enum job_kind kind, const char *name,
			   pd_error *err);
/* exec/new: creates the next numbered job and starts cmd in it; the new
 * job's name is copied to ret_name. */
int engine_job_new(struct engine *e, int64_t box_id, const char *cmd, char *ret_name, size_t namesz,
		   pd_error *err);
/* rmdir exec/NAME (the job's id): -EBUSY while it runs. */
int engine_job_delete(struct engine *e, int64_t job, pd_error *err);

/* Job names of a box in creation order; free with image_list_free(). */
int engine_job_names(struct engine *e, int64_t box_id, char ***ret, size_t *ret_n);
int engine_job_get(struct engine *e, int64_t box_id, const char *name, struct job_view *ret);
/* The same in a kind's name space. */
int engine_job_names_kind(struct engine *e, int64_t box_id, enum job_kind kind, char ***ret,
			  size_t *ret_n);
int engine_job_get_kind(struct engine *e, int64_t box_id, enum job_kind kind, const char *name,
			struct job_view *ret);
int engine_job_last_kind(struct engine *e, int64_t box_id, enum job_kind kind, char *ret_name,
			 size_t namesz);
int engine_job_get_by_id(struct engine *e, int64_t id, struct job_view *ret);
/* The last job created in the box (for exec/last). */
int engine_job_last(struct engine *e, int64_t box_id, char *ret_name, size_t namesz);

/* Setting files, only while created (else -EBUSY): env (KEY=VALUE lines),
 * cwd, user, desktop ("0"/"1"). cmd starts the job. A prompt's: agent,
 * model, cwd, env, continue; text starts it (prompts.h). */
int engine_job_set(struct engine *e, int64_t job, const char *file, const char *data, size_t len,
		   pd_error *err);
/* Reads a job file's current content (settings, status, exit, pid, started,
 * ended). *ret is malloc'd. status of a created job is "created". */
int engine_job_read(struct engine *e, int64_t job, const char *file, char **ret, size_t *ret_len);
/* Opens a job stream for reading with pread(). */
int engine_job_open_stream(struct engine *e, int64_t job, enum job_stream s);
/* stdin: bytes for the process (-EAGAIN when its buffer is full, -EPIPE
 * after eof or the end). */
int engine_job_stdin(struct engine *e, int64_t job, const char *data, size_t len, pd_error *err);
/* ctl: "signal NAME|NUM", "kill", "eof". */
int engine_job_ctl(struct engine *e, int64_t job, const char *cmd, pd_error *err);
