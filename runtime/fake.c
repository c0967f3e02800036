/* runtime/fake.c - containers as records in memory (runtime/fake.h). */
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include "common/lock.h"
#include "common/parse.h"
#include "runtime/fake.h"
#include "common/util.h"

/* Above PID_MAX_LIMIT (2^22 on 64-bit Linux): never a process. */
#define FAKE_PID_FIRST (4194304 + 1000)

struct fake_box {
	char id[NAME_MAX_LEN + 1];
	struct runtime_fake_box v;
};

struct fake {
	struct runtime base;  /* first: the handle (runtime.h) */
	struct pd_mutex lock; /* LEAF: everything below */
	struct fake_box *boxes;
	size_t n_boxes;
	pid_t next_pid;
	unsigned calls[RUNTIME_FAKE_N_OPS];
	int fail_code[RUNTIME_FAKE_N_OPS];
	unsigned fail_n[RUNTIME_FAKE_N_OPS];
	int exit_code;
	char *stdout_text;
	/* The last stop's grace per id deleted: runtime_fake_get() of a
	 * stopped box. One slot: the last one. */
	char gone_id[NAME_MAX_LEN + 1];
	unsigned gone_grace;
};

static const char *const op_names[RUNTIME_FAKE_N_OPS] = {
    "start", "status", "stop", "pause", "resume", "update", "usage", "limits", "exec"};

static struct fake *of(struct runtime *rt)
{
	return (struct fake *)rt;
}

static struct fake_box *find(struct fake *f, const char *id)
{
	for (size_t i = 0; i < f->n_boxes; i++)
		if (strcmp(f->boxes[i].id, id) == 0)
			return &f->boxes[i];
	return NULL;
}

static void drop(struct fake *f, struct fake_box *b)
{
	size_t i = (size_t)(b - f->boxes);

	memmove(&f->boxes[i], &f->boxes[i + 1], (f->n_boxes - i - 1) * sizeof *f->boxes);
	f->n_boxes--;
}

/* Counts the call; a failure the test asked for: its code, with the
 * reason in err. Lock held. */
static int enter(struct fake *f, enum runtime_fake_op op, pd_error *err)
{
	f->calls[op]++;
	if (!f->fail_n[op])
		return 0;
	f->fail_n[op]--;
	return pd_error_set(err, f->fail_code[op], "fake runtime: %s fails (as the test asked)",
			    op_names[op]);
}

static void limits_of(const struct box_type *t, struct runtime_fake_box *v)
{
	snprintf(v->type, sizeof v->type, "%s", t->name);
	v->limits = (struct cgroup_limits){
	    .cpu_quota_usec = (uint64_t)t->millicpus * 100,
	    .cpu_period_usec = 100000,
	    .memory_bytes = t->memory,
	    .pids = t->pids,
	};
}

static bool is_dir(const char *path)
{
	struct stat st;

	return path && stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static void fake_free(struct runtime *rt)
{
	struct fake *f = of(rt);

	pd_mutex_destroy(&f->lock);
	free(f->boxes);
	free(f->stdout_text);
	free(f);
}

static enum cgroup_mode fake_cgroup_mode(const struct runtime *rt)
{
	(void)rt;
	return CGROUP_UNIFIED;
}

static const char *fake_root(const struct runtime *rt)
{
	(void)rt;
	return "";
}

static bool fake_private_ns(const struct runtime *rt)
{
	(void)rt;
	return false;
}

static int fake_start(struct runtime *rt, const struct box_spec *spec, pid_t *ret_pid,
		      pd_error *err)
{
	struct fake *f = of(rt);
	struct fake_box *b, *nb;
	int r;

	pd_mutex_lock(&f->lock);
	r = enter(f, RUNTIME_FAKE_START, err);
	if (r < 0)
		goto out;
	/* What crun would refuse. */
	if (!is_dir(spec->rootfs) || !is_dir(spec->bundle_dir)) {
		r = pd_error_set(err, -ENOENT, "cannot start container: %s is not a directory",
				 is_dir(spec->rootfs) ? spec->bundle_dir : spec->rootfs);
		goto out;
	}
	if (strlen(spec->id) > NAME_MAX_LEN) {
		r = pd_error_set(err, -EINVAL, "cannot start container: id too long");
		goto out;
	}
	/* A leftover of the same id is replaced, as crun_start() does. */
	b = find(f, spec->id);
	if (!b) {
		nb = realloc(f->boxes, (f->n_boxes + 1) * sizeof *nb);
		if (!nb) {
			r = pd_error_set(err, -ENOMEM, "out of memory");
			goto out;
		}
		f->boxes = nb;
		b = &f->boxes[f->n_boxes++];
	}
	*b = (struct fake_box){0};
	snprintf(b->id, sizeof b->id, "%s", spec->id);
	b->v.status = RUNTIME_RUNNING;
	b->v.pid = f->next_pid++;
	snprintf(b->v.rootfs, sizeof b->v.rootfs, "%s", spec->rootfs);
	snprintf(b->v.hostname, sizeof b->v.hostname, "%s", spec->hostname);
	b->v.n_mounts = spec->n_mounts;
	for (size_t i = 0; i < spec->n_mounts && i < ELEMENTSOF(b->v.mounts); i++)
		snprintf(b->v.mounts[i], sizeof b->v.mounts[i], "%s", spec->mounts[i].destination);
	b->v.netns = spec->netns != NULL;
	b->v.uid_base = spec->uid_base;
	limits_of(spec->type, &b->v);
	*ret_pid = b->v.pid;
out:
	pd_mutex_unlock(&f->lock);
	return r;
}

static int fake_status(struct runtime *rt, const char *id, enum runtime_status *ret_status,
		       pid_t *ret_pid, pd_error *err)
{
	struct fake *f = of(rt);
	struct fake_box *b;
	int r;

	pd_mutex_lock(&f->lock);
	r = enter(f, RUNTIME_FAKE_STATUS, err);
	if (r >= 0) {
		b = find(f, id);
		*ret_status = b ? b->v.status : RUNTIME_ABSENT;
		*ret_pid = b ? b->v.pid : 0;
	}
	pd_mutex_unlock(&f->lock);
	return r;
}

static int fake_stop(struct runtime *rt, const char *id, unsigned grace_sec, pd_error *err)
{
	struct fake *f = of(rt);
	struct fake_box *b;
	int r;

	pd_mutex_lock(&f->lock);
	r = enter(f, RUNTIME_FAKE_STOP, err);
	if (r >= 0 && (b = find(f, id))) {
		snprintf(f->gone_id, sizeof f->gone_id, "%s", id);
		f->gone_grace = grace_sec;
		drop(f, b);
	}
	pd_mutex_unlock(&f->lock);
	return r;
}

/* pause and resume: from one status to the other; resume of a container
 * that is not paused is success (runtime.h), pause of one that does not
 * run is crun's failure. */
static int fake_freeze(struct runtime *rt, const char *id, enum runtime_fake_op op, pd_error *err)
{
	enum runtime_status from = op == RUNTIME_FAKE_PAUSE ? RUNTIME_RUNNING : RUNTIME_PAUSED;
	struct fake *f = of(rt);
	struct fake_box *b;
	int r;

	pd_mutex_lock(&f->lock);
	r = enter(f, op, err);
	b = r < 0 ? NULL : find(f, id);
	if (r >= 0 && b && b->v.status == from)
		b->v.status = op == RUNTIME_FAKE_PAUSE ? RUNTIME_PAUSED : RUNTIME_RUNNING;
	else if (r >= 0 && op == RUNTIME_FAKE_PAUSE)
		r = pd_error_set(err, -EIO, "cannot pause the box: container %s is not running",
				 id);
	pd_mutex_unlock(&f->lock);
	return r;
}

static int fake_pause(struct runtime *rt, const char *id, pd_error *err)
{
	return fake_freeze(rt, id, RUNTIME_FAKE_PAUSE, err);
}

static int fake_resume(struct runtime *rt, const char *id, pd_error *err)
{
	return fake_freeze(rt, id, RUNTIME_FAKE_RESUME, err);
}

static int fake_update(struct runtime *rt, const char *id, const struct box_type *type,
		       pd_error *err)
{
	struct fake *f = of(rt);
	struct fake_box *b;
	int r;

	pd_mutex_lock(&f->lock);
	r = enter(f, RUNTIME_FAKE_UPDATE, err);
	b = r < 0 ? NULL : find(f, id);
	if (b && b->v.status != RUNTIME_STOPPED)
		limits_of(type, &b->v);
	else if (r >= 0)
		r = pd_error_set(err, -EIO, "cannot update limits: container %s is not running",
				 id);
	pd_mutex_unlock(&f->lock);
	return r;
}

/* usage and limits: as read from a cgroup, which a stopped container
 * still has until it is deleted. No reason to give: -errno alone. One of
 * ret_usage, ret_limits. */
static int fake_cgroup(struct runtime *rt, const char *id, struct cgroup_usage *ret_usage,
		       struct cgroup_limits *ret_limits)
{
	struct fake *f = of(rt);
	struct fake_box *b;
	pd_error err = {0};
	int r;

	pd_mutex_lock(&f->lock);
	r = enter(f, ret_usage ? RUNTIME_FAKE_USAGE : RUNTIME_FAKE_LIMITS, &err);
	b = r < 0 ? NULL : find(f, id);
	if (b && ret_usage)
		*ret_usage = b->v.usage;
	else if (b)
		*ret_limits = b->v.limits;
	else if (r >= 0)
		r = -ENOENT;
	pd_mutex_unlock(&f->lock);
	return r;
}

static int fake_usage(struct runtime *rt, const char *id, struct cgroup_usage *ret)
{
	return fake_cgroup(rt, id, ret, NULL);
}

static int fake_limits(struct runtime *rt, const char *id, struct cgroup_limits *ret)
{
	return fake_cgroup(rt, id, NULL, ret);
}

/* One file of the job, replaced as the supervisor replaces it. */
static int job_file(const char *dir, const char *name, const char *text)
{
	char path[4200];

	snprintf(path, sizeof path, "%s/%s", dir, name);
	return write_file_replace(path, text, strlen(text));
}

/* The job "runs" at once and ends as runtime_fake_set_exit() said, its
 * files written as supervisor.h has them, status last. */
static int fake_exec(struct runtime *rt, const char *id, const char *job_dir,
		     char *const *secret_env, pd_error *err)
{
	struct fake *f = of(rt);
	_cleanup_free_ char *cmd = NULL, *out = NULL;
	char path[4200], ts[32], status[64], code[16];
	struct fake_box *b;
	int r, exit_code;

	snprintf(path, sizeof path, "%s/cmd", job_dir);
	if (read_file_at(AT_FDCWD, path, 65536, &cmd, NULL) < 0)
		return pd_error_set(err, -EIO, "the job supervisor failed to start (no cmd)");
	pd_mutex_lock(&f->lock);
	r = enter(f, RUNTIME_FAKE_EXEC, err);
	b = r < 0 ? NULL : find(f, id);
	if (b && b->v.status == RUNTIME_RUNNING) {
		b->v.execs++;
		snprintf(b->v.last_cmd, sizeof b->v.last_cmd, "%s", cmd);
		b->v.last_secrets = 0;
		for (char *const *p = secret_env; p && *p; p++)
			b->v.last_secrets++;
	} else if (r >= 0)
		r = pd_error_set(err, -EIO, "the job supervisor failed to start (%s not running)",
				 id);
	exit_code = f->exit_code;
	out = strdup(f->stdout_text ? f->stdout_text : "");
	pd_mutex_unlock(&f->lock);
	if (r < 0)
		return r;
	if (!out)
		return pd_error_set(err, -ENOMEM, "out of memory");

	format_rfc3339(time(NULL), ts, sizeof ts);
	if (exit_code >= 0) {
		snprintf(status, sizeof status, "exited %d\n", exit_code);
		snprintf(code, sizeof code, "%d\n", exit_code);
	} else {
		const char *name = sigabbrev_np(-exit_code);
		snprintf(status, sizeof status, "killed SIG%s\n", name ? name : "UNKNOWN");
		snprintf(code, sizeof code, "%d\n", 128 - exit_code);
	}
	strcat(ts, "\n");
	r = job_file(job_dir, "started", ts);
	if (r >= 0)
		r = job_file(job_dir, "stdout", out);
	if (r >= 0)
		r = job_file(job_dir, "stderr", "");
	if (r >= 0)
		r = job_file(job_dir, "output", out);
	if (r >= 0)
		r = job_file(job_dir, "exit", code);
	if (r >= 0)
		r = job_file(job_dir, "ended", ts);
	if (r >= 0)
		r = job_file(job_dir, "status", status);
	if (r < 0)
		return pd_error_set(err, r, "cannot write the job's files: %s", strerror(-r));
	return 0;
}

static const struct runtime_ops fake_ops = {
    .name = "fake",
    .free = fake_free,
    .cgroup_mode = fake_cgroup_mode,
    .root = fake_root,
    .private_ns = fake_private_ns,
    .start = fake_start,
    .status = fake_status,
    .stop = fake_stop,
    .pause = fake_pause,
    .resume = fake_resume,
    .update = fake_update,
    .usage = fake_usage,
    .limits = fake_limits,
    .exec = fake_exec,
};

int runtime_fake_new(struct runtime **ret)
{
	struct fake *f = calloc(1, sizeof *f);

	if (!f)
		return -ENOMEM;
	f->base.ops = &fake_ops;
	pd_mutex_init(&f->lock, LOCK_RANK_LEAF, 0, "fake runtime lock");
	f->next_pid = FAKE_PID_FIRST;
	*ret = &f->base;
	return 0;
}

/* The test functions take a runtime_fake_new() runtime only. */
static struct fake *fake_of(struct runtime *rt)
{
	if (rt->ops != &fake_ops)
		abort();
	return of(rt);
}

int runtime_fake_crash(struct runtime *rt, const char *id)
{
	struct fake *f = fake_of(rt);
	struct fake_box *b;
	int r = -ENOENT;

	pd_mutex_lock(&f->lock);
	b = find(f, id);
	if (b && b->v.status != RUNTIME_STOPPED) {
		b->v.status = RUNTIME_STOPPED;
		b->v.pid = 0;
		r = 0;
	}
	pd_mutex_unlock(&f->lock);
	return r;
}

void runtime_fake_fail(struct runtime *rt, enum runtime_fake_op op, int code, unsigned n)
{
	struct fake *f = fake_of(rt);

	pd_mutex_lock(&f->lock);
	f->fail_code[op] = code;
	f->fail_n[op] = n;
	pd_mutex_unlock(&f->lock);
}

unsigned runtime_fake_calls(struct runtime *rt, enum runtime_fake_op op)
{
	struct fake *f = fake_of(rt);
	unsigned n;

	pd_mutex_lock(&f->lock);
	n = f->calls[op];
	pd_mutex_unlock(&f->lock);
	return n;
}

int runtime_fake_get(struct runtime *rt, const char *id, struct runtime_fake_box *ret)
{
	struct fake *f = fake_of(rt);
	struct fake_box *b;
	int r = 0;

	pd_mutex_lock(&f->lock);
	b = find(f, id);
	if (b)
		*ret = b->v;
	else {
		*ret = (struct runtime_fake_box){.status = RUNTIME_ABSENT};
		if (strcmp(f->gone_id, id) == 0)
			ret->last_grace = f->gone_grace;
		r = -ENOENT;
	}
	pd_mutex_unlock(&f->lock);
	return r;
}

int runtime_fake_set_usage(struct runtime *rt, const char *id, const struct cgroup_usage *u)
{
	struct fake *f = fake_of(rt);
	struct fake_box *b;

	pd_mutex_lock(&f->lock);
	b = find(f, id);
	if (b)
		b->v.usage = *u;
	pd_mutex_unlock(&f->lock);
	return b ? 0 : -ENOENT;
}

void runtime_fake_set_exit(struct runtime *rt, int code, const char *stdout_text)
{
	struct fake *f = fake_of(rt);

	pd_mutex_lock(&f->lock);
	f->exit_code = code;
	free(f->stdout_text);
	f->stdout_text = stdout_text ? strdup(stdout_text) : NULL;
	pd_mutex_unlock(&f->lock);
}
