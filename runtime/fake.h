/* runtime/fake.h - an in-memory runtime backend (runtime.h) for unit tests
 * of the engine: no root, no crun, no cgroup. Its containers are records;
 * nothing runs. What it checks of the engine's calls is what crun would
 * refuse (a start on a root filesystem or bundle directory that is not
 * there, a pause of a box that does not run, an exec in one); what it
 * answers is what crun would (status, usage, limits of the type applied).
 * The test drives it: a crash of a box's PID 1, a failure of the next calls
 * of an operation, the exit code of the jobs it "runs".
 *
 * PIDs it hands out are above the kernel's largest (PID_MAX_LIMIT), so no
 * process of the machine is ever one: what the engine does with a box's PID
 * on the host (volume-live.c's namespaces, lxcfs) fails as for a box whose
 * PID 1 just died.
 *
 * Thread-safety: as runtime.h; the test functions too. */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "runtime/runtime.h"

enum runtime_fake_op {
	RUNTIME_FAKE_START,
	RUNTIME_FAKE_STATUS,
	RUNTIME_FAKE_STOP,
	RUNTIME_FAKE_PAUSE,
	RUNTIME_FAKE_RESUME,
	RUNTIME_FAKE_UPDATE,
	RUNTIME_FAKE_USAGE,
	RUNTIME_FAKE_LIMITS,
	RUNTIME_FAKE_EXEC,
	RUNTIME_FAKE_N_OPS,
};

/* What the fake knows of a container. */
struct runtime_fake_box {
	enum runtime_status status;
	pid_t pid; /* 0 unless running or paused */
	char rootfs[4096];
	char hostname[256];
	size_t n_mounts;
	char mounts[8][96]; /* destinations of the first 8 */
	bool netns;	    /* joined one the engine made */
	uint32_t uid_base;
	char type[NAME_MAX_LEN + 1]; /* the type applied last (start, update) */
	struct cgroup_limits limits;
	struct cgroup_usage usage;
	unsigned execs;	       /* jobs started in it */
	char last_cmd[256];    /* the last job's cmd, cut */
	unsigned last_secrets; /* how many secrets the last job was handed */
	unsigned last_grace;   /* the grace of the stop that removed it */
};

/* A new fake (free it with runtime_free()). -ENOMEM. */
int runtime_fake_new(struct runtime **ret);

/* PID 1 of running (or paused) container id ends, as in a crash: the
 * container stays, stopped, until runtime_stop() deletes it. -ENOENT when
 * it does not run. */
int runtime_fake_crash(struct runtime *rt, const char *id);

/* The next n calls of op fail with code (a negative errno) and a reason
 * that names the operation; they change nothing. n 0 ends it. */
void runtime_fake_fail(struct runtime *rt, enum runtime_fake_op op, int code, unsigned n);

/* Calls of op so far, failed ones included. */
unsigned runtime_fake_calls(struct runtime *rt, enum runtime_fake_op op);

/* A copy of container id's record. -ENOENT when the fake has none (never
 * started, or stopped and deleted: *ret then has the last_grace of that
 * stop when there was one). */
int runtime_fake_get(struct runtime *rt, const char *id, struct runtime_fake_box *ret);

/* What usage reports for container id from now on. -ENOENT for none. */
int runtime_fake_set_usage(struct runtime *rt, const char *id, const struct cgroup_usage *u);

/* How the jobs runtime_exec() starts from now on end: "exited CODE" (code
 * >= 0, the default 0) or "killed SIGNAME" (code < 0: -signal); stdout is
 * the text given (NULL: empty). */
void runtime_fake_set_exit(struct runtime *rt, int code, const char *stdout_text);
