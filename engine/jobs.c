/* jobs.c - exec jobs: the engine's side. The supervisor (supervisor.c,
 * paddock-exec) runs the command; here jobs are created, configured,
 * started, followed (inotify on their directories) and removed. */
#include <fcntl.h>
#include <jansson.h>
#include <pwd.h>
#include <signal.h>
#include <string.h>
#include <poll.h>
#include <spawn.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "common/desktop.h"
#include "engine/internal.h"
#include "engine/jobs.h"
#include "common/log.h"
#include "common/tarsafe.h"

#define SETTING_MAX 4096

struct job {
	int64_t id;
	int64_t box_id;
	enum job_kind kind;
	char name[NAME_MAX_LEN + 1];
	/* In the engine's job indexes (e->jobs_by_name, e->jobs_by_id). */
	struct hmap_node by_name, by_id;
	enum job_state state;
	int wd; /* inotify watch while running, -1 otherwise */
	/* stdin.fifo opened read-write by the daemon from just before the
	 * supervisor starts until the job ends, so bytes written to `stdin`
	 * right after `cmd` wait in the pipe for the supervisor instead of
	 * failing for want of a reader. -1 after a daemon restart (the
	 * supervisor then holds the fifo open itself). */
	int stdin_fd;
};

static void job_close_stdin(struct job *j)
{
	if (j->stdin_fd >= 0)
		close(j->stdin_fd);
	j->stdin_fd = -1;
}

static const char *job_state_name(enum job_state s)
{
	return s == JOB_CREATED ? "created" : s == JOB_RUNNING ? "running" : "ended";
}

/* A kind's directory in the box's: its name space. */
static const char *kind_dir(enum job_kind kind)
{
	return kind == JOB_PROMPT ? "prompts" : "jobs";
}

/* The kind's word in messages and the store. */
static const char *kind_word(enum job_kind kind)
{
	return kind == JOB_PROMPT ? "prompt" : "job";
}

static void job_dir(struct engine *e, struct box *b, const struct job *j, const char *file,
		    char *buf, size_t bufsz)
{
	char sub[300];

	if (file)
		snprintf(sub, sizeof sub, "%s/%s/%s", kind_dir(j->kind), j->name, file);
	else
		snprintf(sub, sizeof sub, "%s/%s", kind_dir(j->kind), j->name);
	eng_box_path(e, b, sub, buf, bufsz);
}

/* A job's key in e->jobs_by_name: its box, its kind and its name. */
static uint64_t job_name_hash(int64_t box_id, enum job_kind kind, const char *name)
{
	return hmap_hash_str(name) ^ hmap_hash_u64((uint64_t)box_id * 2 + (uint64_t)kind);
}

static struct job *find_job_id(struct engine *e, int64_t id)
{
	uint64_t hash = hmap_hash_u64((uint64_t)id);
	struct hmap_node *node;

	HMAP_FOR_HASH(node, &e->jobs_by_id, hash)
	{
		struct job *j = HMAP_ENTRY(node, struct job, by_id);
		if (j->id == id)
			return j;
	}
	return NULL;
}

static struct job *find_job(struct engine *e, int64_t box_id, enum job_kind kind, const char *name)
{
	uint64_t hash = job_name_hash(box_id, kind, name);
	struct hmap_node *node;

	HMAP_FOR_HASH(node, &e->jobs_by_name, hash)
	{
		struct job *j = HMAP_ENTRY(node, struct job, by_name);
		if (j->box_id == box_id && j->kind == kind && strcmp(j->name, name) == 0)
			return j;
	}
	return NULL;
}

static int add_job(struct engine *e, struct job *j)
{
	struct job **nj = realloc(e->jobs, (e->n_jobs + 1) * sizeof *nj);
	if (!nj)
		return -ENOMEM;
	e->jobs = nj;
	if (hmap_insert_pair(&e->jobs_by_name, &j->by_name,
			     job_name_hash(j->box_id, j->kind, j->name), &e->jobs_by_id, &j->by_id,
			     hmap_hash_u64((uint64_t)j->id)) < 0)
		return -ENOMEM;
	e->jobs[e->n_jobs++] = j;
	return 0;
}

static void remove_job(struct engine *e, struct job *j)
{
	for (size_t i = 0; i < e->n_jobs; i++)
		if (e->jobs[i] == j) {
			memmove(&e->jobs[i], &e->jobs[i + 1],
				(e->n_jobs - i - 1) * sizeof *e->jobs);
			e->n_jobs--;
			hmap_remove(&e->jobs_by_name, &j->by_name);
			hmap_remove(&e->jobs_by_id, &j->by_id);
			return;
		}
}

/* Drops the jobs of a deleted box. Engine lock held. */
void eng_jobs_forget_box(struct engine *e, int64_t box_id)
{
	for (size_t i = 0; i < e->n_jobs;) {
		struct job *j = e->jobs[i];
		if (j->box_id == box_id) {
			if (j->wd >= 0 && e->inotify_fd >= 0)
				inotify_rm_watch(e->inotify_fd, j->wd);
			remove_job(e, j);
			eng_wake(e, JOB_WAKE_KEY(j->id));
			job_close_stdin(j);
			free(j);
		} else
			i++;
	}
}

static void view_of_job(const struct job *j, struct job_view *v)
{
	*v =
	    (struct job_view){.id = j->id, .box_id = j->box_id, .kind = j->kind, .state = j->state};
	snprintf(v->name, sizeof v->name, "%s", j->name);
}

static struct box *live_box(struct engine *e, int64_t box_id, pd_error *err)
{
	struct box *b = eng_live_box(e, box_id);

	if (!b)
		eng_box_gone(err);
	return b;
}

static int create_locked(struct engine *e, struct box *b, enum job_kind kind, const char *name,
			 struct job **ret, pd_error *err)
{
	struct job_row row = {.box_id = b->row.id};
	char dir[4096];
	struct job *j;
	int r;

	if (!name_valid(name))
		return pd_error_set(err, -EINVAL,
				    "invalid %s name \"%s\": use [a-z0-9][a-z0-9._-]{0,62}",
				    kind_word(kind), name);
	if (find_job(e, b->row.id, kind, name))
		return pd_error_set(err, -EEXIST, "%s %s already exists", kind_word(kind), name);
	j = calloc(1, sizeof *j);
	if (j)
		j->stdin_fd = -1;
	if (!j)
		return pd_error_set(err, -ENOMEM, "out of memory");
	snprintf(row.name, sizeof row.name, "%s", name);
	snprintf(row.state, sizeof row.state, "created");
	snprintf(row.kind, sizeof row.kind, "%s", kind == JOB_PROMPT ? "prompt" : "exec");
	snprintf(j->name, sizeof j->name, "%s", name);
	j->kind = kind;
	j->box_id = b->row.id;
	j->state = JOB_CREATED;
	j->wd = -1;
	eng_box_path(e, b, kind_dir(kind), dir, sizeof dir);
	(void)mkdir(dir, 0700);
	job_dir(e, b, j, NULL, dir, sizeof dir);
	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		r = pd_error_set(err, -errno, "cannot create %s: %s", dir, strerror(errno));
		free(j);
		return r;
	}
	r = store_job_insert(e->store, &row, err);
	j->id = row.id; /* before add_job(): it is indexed by it */
	if (r < 0 || (r = add_job(e, j)) < 0) {
		if (row.id)
			store_job_delete(e->store, row.id, NULL);
		/* Made empty just above (engine lock held: no rm_rf). */
		(void)rmdir(dir);
		free(j);
		return err && err->code ? r : pd_error_set(err, r, "out of memory");
	}
	*ret = j;
	return 0;
}

/* Makes a new job's directory (and the box's jobs/) before the engine lock
 * is taken: under I/O load a mkdir can take milliseconds. create_locked()
 * finds it there (EEXIST) and removes it if the job is not made after all;
 * an invalid name, a box gone meanwhile or a job of that name already
 * there makes nothing here. */
static void premake_job_dir(struct engine *e, int64_t box_id, enum job_kind kind, const char *name)
{
	struct box files = {0};
	struct job j = {0};
	char dir[4096];
	struct box *b;

	if (!name_valid(name))
		return;
	pd_mutex_lock(&e->lock);
	b = eng_find_box_id(e, box_id);
	if (b && !b->deleting && !find_job(e, b->row.id, kind, name))
		files.row.id = b->row.id; /* all eng_box_path() needs */
	pd_mutex_unlock(&e->lock);
	if (!files.row.id)
		return;
	eng_box_path(e, &files, kind_dir(kind), dir, sizeof dir);
	(void)mkdir(dir, 0700);
	snprintf(j.name, sizeof j.name, "%s", name);
	j.kind = kind;
	job_dir(e, &files, &j, NULL, dir, sizeof dir);
	(void)mkdir(dir, 0700);
}

int engine_job_create_kind(struct engine *e, int64_t box_id, enum job_kind kind, const char *name,
			   pd_error *err)
{
	struct job *j;
	struct box *b;
	int r = -ENOENT;

	premake_job_dir(e, box_id, kind, name);
	pd_mutex_lock(&e->lock);
	b = live_box(e, box_id, err);
	if (b)
		r = create_locked(e, b, kind, name, &j, err);
	pd_mutex_unlock(&e->lock);
	return r;
}

int engine_job_create(struct engine *e, int64_t box_id, const char *name, pd_error *err)
{
	return engine_job_create_kind(e, box_id, JOB_EXEC, name, err);
}

int engine_job_delete(struct engine *e, int64_t job, pd_error *err)
{
	char dir[4096];
	struct job *j;
	struct box *b = NULL;
	int r = 0;

	pd_mutex_lock(&e->lock);
	j = find_job_id(e, job);
	if (j)
		b = live_box(e, j->box_id, err);
	if (!j || !b) {
		r = j ? -ENOENT : pd_error_set(err, -ENOENT, "no such job: it was deleted");
		goto out;
	}
	if (j->state == JOB_RUNNING) {
		r = pd_error_set(err, -EBUSY, "%s %s is running (write kill to its ctl first)",
				 kind_word(j->kind), j->name);
		goto out;
	}
	r = store_job_delete(e->store, j->id, err);
	if (r < 0)
		goto out;
	job_dir(e, b, j, NULL, dir, sizeof dir);
	remove_job(e, j);
	eng_wake(e, JOB_WAKE_KEY(j->id));
	job_close_stdin(j);
	free(j);
	pd_mutex_unlock(&e->lock);
	(void)rm_rf(dir);
	return 0;
out:
	pd_mutex_unlock(&e->lock);
	return r;
}

int engine_job_names(struct engine *e, int64_t box_id, char ***ret, size_t *ret_n)
{
	return engine_job_names_kind(e, box_id, JOB_EXEC, ret, ret_n);
}

int engine_job_names_kind(struct engine *e, int64_t box_id, enum job_kind kind, char ***ret,
			  size_t *ret_n)
{
	char **names = NULL;
	size_t n = 0;
	struct box *b;
	int r = 0;

	pd_mutex_lock(&e->lock);
	b = live_box(e, box_id, NULL);
	if (!b) {
		r = -ENOENT;
		goto out;
	}
	names = calloc(e->n_jobs + 1, sizeof *names);
	if (!names) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < e->n_jobs; i++)
		if (e->jobs[i]->box_id == b->row.id && e->jobs[i]->kind == kind) {
			if (!(names[n] = strdup(e->jobs[i]->name))) {
				r = -ENOMEM;
				goto out;
			}
			n++;
		}
out:
	pd_mutex_unlock(&e->lock);
	if (r < 0) {
		image_list_free(names, n);
		return r;
	}
	*ret = names;
	*ret_n = n;
	return 0;
}

int engine_job_get(struct engine *e, int64_t box_id, const char *name, struct job_view *ret)
{
	return engine_job_get_kind(e, box_id, JOB_EXEC, name, ret);
}

int engine_job_get_kind(struct engine *e, int64_t box_id, enum job_kind kind, const char *name,
			struct job_view *ret)
{
	struct box *b;
	struct job *j = NULL;

	pd_mutex_lock(&e->lock);
	b = live_box(e, box_id, NULL);
	if (b)
		j = find_job(e, b->row.id, kind, name);
	if (j)
		view_of_job(j, ret);
	pd_mutex_unlock(&e->lock);
	return j ? 0 : -ENOENT;
}

int engine_job_get_by_id(struct engine *e, int64_t id, struct job_view *ret)
{
	struct job *j;

	pd_mutex_lock(&e->lock);
	j = find_job_id(e, id);
	if (j)
		view_of_job(j, ret);
	pd_mutex_unlock(&e->lock);
	return j ? 0 : -ENOENT;
}

int engine_job_last(struct engine *e, int64_t box_id, char *ret_name, size_t namesz)
{
	return engine_job_last_kind(e, box_id, JOB_EXEC, ret_name, namesz);
}

int engine_job_last_kind(struct engine *e, int64_t box_id, enum job_kind kind, char *ret_name,
			 size_t namesz)
{
	struct box *b;
	int r = -ENOENT;

	pd_mutex_lock(&e->lock);
	b = live_box(e, box_id, NULL);
	for (size_t i = e->n_jobs; b && i > 0; i--)
		if (e->jobs[i - 1]->box_id == b->row.id && e->jobs[i - 1]->kind == kind) {
			snprintf(ret_name, namesz, "%s", e->jobs[i - 1]->name);
			r = 0;
			break;
		}
	pd_mutex_unlock(&e->lock);
	return r;
}

/* --- files ------------------------------------------------------------------ */

static const char *const settings[] = {"env", "cwd", "user", "desktop"};
static const char *const prompt_settings[] = {"agent", "model", "cwd", "env", "continue"};

static bool is_setting(enum job_kind kind, const char *file)
{
	const char *const *v = kind == JOB_PROMPT ? prompt_settings : settings;
	size_t n = kind == JOB_PROMPT ? ELEMENTSOF(prompt_settings) : ELEMENTSOF(settings);

	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i], file) == 0)
			return true;
	return false;
}

/* The file whose write starts a job of kind. */
static const char *start_file(enum job_kind kind)
{
	return kind == JOB_PROMPT ? "text" : "cmd";
}

/* Looks up a job and its box. Engine lock held. */
static int locate(struct engine *e, int64_t id, struct job **ret_j, struct box **ret_b)
{
	struct job *j = find_job_id(e, id);
	struct box *b = j ? eng_find_box_id(e, j->box_id) : NULL;

	if (!j || !b || b->deleting)
		return -ENOENT;
	*ret_j = j;
	*ret_b = b;
	return 0;
}

int engine_job_read(struct engine *e, int64_t id, const char *file, char **ret, size_t *ret_len)
{
	char path[4096];
	struct job *j;
	struct box *b;
	enum job_state st = JOB_CREATED;
	enum job_kind kind = JOB_EXEC;
	int64_t box_id = 0;
	int r;

	pd_mutex_lock(&e->lock);
	r = locate(e, id, &j, &b);
	if (r >= 0) {
		job_dir(e, b, j, file, path, sizeof path);
		st = j->state;
		kind = j->kind;
		box_id = b->row.id;
	}
	pd_mutex_unlock(&e->lock);
	if (r < 0)
		return r;
	r = read_file_at(AT_FDCWD, path, JOB_ENV_MAX + JOB_CMD_MAX + PROMPT_TEXT_MAX, ret, ret_len);
	if (r == -ENOENT && kind == JOB_PROMPT && st == JOB_CREATED &&
	    eng_prompt_default(e, box_id, file, ret) >= 0) {
		*ret_len = strlen(*ret);
		return 0;
	}
	if (r == -ENOENT) {
		/* Not written (yet): settings default to empty, status to the
		 * job's state. */
		const char *dflt = strcmp(file, "status") == 0	  ? job_state_name(st)
				   : strcmp(file, "desktop") == 0 ? "0"
								  : NULL;
		char *s;
		if (asprintf(&s, "%s%s", dflt ? dflt : "", dflt ? "\n" : "") < 0)
			return -ENOMEM;
		*ret = s;
		*ret_len = strlen(s);
		return 0;
	}
	return r;
}

int engine_job_open_stream(struct engine *e, int64_t id, enum job_stream s)
{
	static const char *const names[] = {"stdout", "stderr", "output", "events"};
	char path[4096];
	struct job *j;
	struct box *b;
	int r, fd;

	pd_mutex_lock(&e->lock);
	r = locate(e, id, &j, &b);
	if (r >= 0)
		job_dir(e, b, j, names[s], path, sizeof path);
	pd_mutex_unlock(&e->lock);
	if (r < 0)
		return r;
	/* Created empty if the job has not written yet, so readers can
	 * follow from byte 0. */
	fd = open(path, O_RDONLY | O_CREAT | O_CLOEXEC, 0644);
	return fd < 0 ? -errno : fd;
}

int eng_job_check_env(const char *data, size_t len, pd_error *err)
{
	size_t line = 1;
	const char *p = data, *end = data + len;

	if (memchr(data, '\0', len))
		return pd_error_set(err, -EINVAL, "env: NUL byte");
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		const char *eq = memchr(p, '=', (size_t)(le - p));
		if (le > p) {
			if (!eq || eq == p)
				return pd_error_set(err, -EINVAL, "env line %zu: not KEY=VALUE",
						    line);
			for (const char *k = p; k < eq; k++)
				if (!(*k == '_' || (*k >= 'A' && *k <= 'Z') ||
				      (*k >= 'a' && *k <= 'z') ||
				      (k > p && *k >= '0' && *k <= '9')))
					return pd_error_set(
					    err, -EINVAL, "env line %zu: bad variable name", line);
		}
		p = nl ? nl + 1 : end;
		line++;
	}
	return 0;
}

/* The secrets box_id lists, for its job (eng_secrets_env()). A box whose
 * jobs would run through `crun exec` (no exec server: its socket's path
 * does not fit) would have them on crun's command line, which every
 * user of the host can read: refused instead. */
static int job_secrets(struct engine *e, int64_t box_id, const char *box, char ***ret,
		       pd_error *err)
{
	char server[4200];
	int r = eng_secrets_env(e, box_id, ret, err);

	if (r >= 0 && **ret && !runtime_exec_socket(e->rt, box, server, sizeof server)) {
		eng_secrets_env_free(*ret);
		*ret = NULL;
		r = pd_error_set(err, -EOPNOTSUPP,
				 "box %s has no exec server (its run directory's path is too "
				 "long), and secrets are never put on a command line: empty its "
				 "secrets file to run this job",
				 box);
	}
	return r;
}

static int start_locked_out(struct engine *e, int64_t id, const char *cmd, size_t len,
			    pd_error *err);

int engine_job_set(struct engine *e, int64_t id, const char *file, const char *data, size_t len,
		   pd_error *err)
{
	char path[4096], value[SETTING_MAX + 1];
	struct job *j;
	struct box *b;
	int r;

	_cleanup_free_ char *checked = NULL;
	struct job_view v;

	if (engine_job_get_by_id(e, id, &v) < 0)
		return pd_error_set(err, -ENOENT, "no such job");
	if (strcmp(file, start_file(v.kind)) == 0)
		return start_locked_out(e, id, data, len, err);
	if (!is_setting(v.kind, file))
		return pd_error_set(err, -EACCES, "%s is not writable", file);
	if (v.state != JOB_CREATED)
		goto claim; /* refused below, whatever the value */
	if (strcmp(file, "env") == 0) {
		if (len > JOB_ENV_MAX)
			return pd_error_set(err, -EINVAL, "env: over %d bytes", JOB_ENV_MAX);
		r = eng_job_check_env(data, len, err);
		if (r < 0)
			return r;
	} else if (v.kind == JOB_PROMPT && strcmp(file, "cwd") != 0) {
		/* agent, model, continue: prompts.c knows them. */
		r = eng_prompt_setting(e, v.box_id, file, data, len, &checked, err);
		if (r < 0)
			return r;
		data = checked;
		len = strlen(checked);
	} else {
		r = value_from_write(data, len, SETTING_MAX, value, sizeof value);
		if (r < 0)
			return pd_error_set(err, -EINVAL,
					    "not a value: write one line, no NUL bytes");
		if (strcmp(file, "desktop") == 0 && strcmp(value, "0") && strcmp(value, "1"))
			return pd_error_set(err, -EINVAL, "desktop: write 0 or 1");
		if (strcmp(file, "cwd") == 0 && value[0] != '/')
			return pd_error_set(err, -EINVAL, "cwd: an absolute path");
		if (strcmp(file, "user") == 0 && !name_valid(value) &&
		    strspn(value, "0123456789") != strlen(value))
			return pd_error_set(err, -EINVAL, "user: a user name or uid");
		data = value;
		len = strlen(value);
	}
claim:
	pd_mutex_lock(&e->lock);
	r = locate(e, id, &j, &b);
	if (r < 0)
		pd_error_set(err, r, "no such job");
	else if (j->state != JOB_CREATED)
		/* Read once, when cmd starts the job: a later value would
		 * change nothing, so it is refused rather than ignored. */
		r = j->kind == JOB_PROMPT
			? pd_error_set(
			      err, -EBUSY,
			      "prompt %s has started (text was written): write agent, "
			      "model, cwd, env and continue before text; %s is not changed",
			      j->name, file)
			: pd_error_set(err, -EBUSY,
				       "job %s has started (cmd was written): write env, cwd, user "
				       "and desktop before cmd; %s is not changed",
				       j->name, file);
	else {
		job_dir(e, b, j, file, path, sizeof path);
		r = write_file_replace(path, data, len);
		if (r < 0)
			pd_error_set(err, r, "cannot write %s: %s", file, strerror(-r));
	}
	pd_mutex_unlock(&e->lock);
	return r;
}

/* --- starting -------------------------------------------------------------- */

/* Finds a user in the box's /etc/passwd: by name, or a bare uid. */
int eng_box_user(const char *rootfs, const char *user, unsigned *uid, unsigned *gid, char *home,
		 size_t homesz)
{
	_cleanup_fclose_ FILE *f = NULL;
	_cleanup_close_ int rootfd = open(rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC);
	struct passwd *pw;
	bool numeric = user[0] && strspn(user, "0123456789") == strlen(user);
	/* The box's file, resolved inside its root: a link there that leads
	 * out is the box's "/", never the host's. */
	int fd = rootfd < 0 ? -1 : tarsafe_open(rootfd, "etc/passwd", O_RDONLY, 0);

	f = fd >= 0 ? fdopen(fd, "re") : NULL;
	if (!f && fd >= 0)
		close(fd);
	while (f && (pw = fgetpwent(f))) {
		if (numeric ? pw->pw_uid == (uid_t)strtoul(user, NULL, 10)
			    : strcmp(pw->pw_name, user) == 0) {
			*uid = pw->pw_uid;
			*gid = pw->pw_gid;
			snprintf(home, homesz, "%s", pw->pw_dir);
			return 0;
		}
	}
	if (numeric) {
		*uid = *gid = (unsigned)strtoul(user, NULL, 10);
		snprintf(home, homesz, "/");
		return 0;
	}
	return -ENOENT;
}

char *eng_job_setting(const char *dir, const char *file, size_t max)
{
	char path[4200];
	char *v = NULL;

	snprintf(path, sizeof path, "%s/%s", dir, file);
	if (read_file_at(AT_FDCWD, path, max, &v, NULL) < 0)
		return NULL;
	return v;
}

int eng_job_spec(struct engine *e, const struct job_start *si, const char *user_setting,
		 const char *const *extra_env, json_t **ret, pd_error *err)
{
	_cleanup_free_ char *user = user_setting ? strdup(user_setting) : NULL;
	_cleanup_free_ char *cwd = eng_job_setting(si->dir, "cwd", 4096);
	_cleanup_free_ char *env = eng_job_setting(si->dir, "env", JOB_ENV_MAX);
	char home[4096], ug[64], server[4200];
	struct image_info img;
	unsigned uid, gid;
	json_t *envs, *spec;

	if (user)
		user[strcspn(user, "\n")] = '\0';
	if (cwd)
		cwd[strcspn(cwd, "\n")] = '\0';
	if (image_get(e->images_dir, si->image, &img) < 0) {
		snprintf(img.user, sizeof img.user, "root");
		snprintf(img.shell, sizeof img.shell, "/bin/sh");
	}
	if (!user || !*user) {
		free(user);
		user = strdup(img.user);
		if (!user)
			return pd_error_set(err, -ENOMEM, "out of memory");
	}
	if (eng_box_user(si->rootfs, user, &uid, &gid, home, sizeof home) < 0)
		return pd_error_set(err, -EINVAL, "no user %s in the box", user);
	snprintf(ug, sizeof ug, "%u:%u", uid, gid);

	envs = json_array();
	json_array_append_new(envs, json_pack("s++", "HOME=", home, ""));
	json_array_append_new(envs, json_pack("s++", "USER=", user, ""));
	json_array_append_new(envs, json_string("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:"
						"/usr/bin:/sbin:/bin"));
	json_array_append_new(envs, json_string("LANG=C.UTF-8"));
	json_array_append_new(envs, json_string("TERM=dumb"));
	for (size_t i = 0; extra_env && extra_env[i]; i++)
		json_array_append_new(envs, json_string(extra_env[i]));
	/* The job's own env last: it may override any of the above. */
	for (char *line = env, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (*line)
			json_array_append_new(envs, json_string(line));
	}
	spec =
	    json_pack("{s:s, s:s, s:s, s:b, s:s, s:s, s:o, s:s, s:I}", "container", si->box, "crun",
		      e->cfg->crun, "crun_root", runtime_root(e->rt), "private_ns",
		      runtime_private_ns(e->rt), "user", ug, "cwd", cwd && *cwd ? cwd : home, "env",
		      envs, "shell", img.shell, "log_max", (json_int_t)e->cfg->exec_log_max);
	if (spec && runtime_exec_socket(e->rt, si->box, server, sizeof server))
		json_object_set_new(spec, "server", json_string(server));
	if (!spec)
		return pd_error_set(err, -ENOMEM, "cannot build the job spec");
	*ret = spec;
	return 0;
}

int eng_job_write_spec(const struct job_start *si, json_t *spec, pd_error *err)
{
	_cleanup_free_ char *text = NULL;
	char path[4200];
	int r;

	/* "shell" is for the kinds' argv only, not the supervisor's. */
	json_object_del(spec, "shell");
	text = json_dumps(spec, JSON_COMPACT);
	if (!text)
		return pd_error_set(err, -ENOMEM, "out of memory");
	snprintf(path, sizeof path, "%s/spec.json", si->dir);
	r = write_file_replace(path, text, strlen(text));
	if (r < 0)
		return pd_error_set(err, r, "cannot write the job spec: %s", strerror(-r));
	return 0;
}

/* Writes spec.json and cmd for the supervisor. Called without the engine
 * lock: the job is already marked running, so nothing else touches it. */
static int write_spec(struct engine *e, const struct job_start *si, const char *cmd, pd_error *err)
{
	_cleanup_free_ char *user = eng_job_setting(si->dir, "user", 4096);
	_cleanup_free_ char *desktop = eng_job_setting(si->dir, "desktop", 16);
	/* desktop 1: its windows open on the box's desktop (whether it runs
	 * or not: a client started while it is off fails as X clients do). */
	const char *const display[] = {"DISPLAY=" DESKTOP_DISPLAY, NULL};
	json_auto_t *spec = NULL;
	char path[4200];
	const char *shell;
	int r;

	r = eng_job_spec(e, si, user, desktop && desktop[0] == '1' ? display : NULL, &spec, err);
	if (r < 0)
		return r;
	shell = json_string_value(json_object_get(spec, "shell"));
	bool bash = strstr(shell, "bash") != NULL;
	if (json_object_set_new(spec, "argv",
				json_pack("[s, s, s]", shell, bash ? "-lc" : "-c", cmd)) < 0)
		return pd_error_set(err, -ENOMEM, "cannot build the job spec");
	snprintf(path, sizeof path, "%s/cmd", si->dir);
	r = write_file_replace(path, cmd, strlen(cmd));
	if (r < 0)
		return pd_error_set(err, r, "cannot write the job spec: %s", strerror(-r));
	return eng_job_write_spec(si, spec, err);
}

/* A prompt refused before anything runs (prompts.h): claimed as running
 * (no other writer touches it), its files written as the supervisor
 * would, then ended. */
static int ended_at_once(struct engine *e, int64_t id, const char *text,
			 const struct prompt_refusal *ref, pd_error *err)
{
	char dir[4096];
	struct job *j;
	struct box *b;
	int r;

	pd_mutex_lock(&e->lock);
	r = locate(e, id, &j, &b);
	if (r < 0)
		pd_error_set(err, r, "no such prompt");
	else if (j->state != JOB_CREATED)
		r = pd_error_set(err, -EBUSY, "prompt %s has already started", j->name);
	else {
		j->state = JOB_RUNNING;
		job_dir(e, b, j, NULL, dir, sizeof dir);
	}
	pd_mutex_unlock(&e->lock);
	if (r < 0)
		return r;
	r = eng_prompt_record_refused(dir, ref, text);
	pd_mutex_lock(&e->lock);
	if (locate(e, id, &j, &b) >= 0) {
		j->state = r < 0 ? JOB_CREATED : JOB_ENDED;
		if (r >= 0) {
			(void)store_job_set_state(e->store, j->id, "ended", NULL);
			eng_emit(e, b, "prompt %s ended at once: %s", j->name, ref->why);
		}
		eng_wake(e, JOB_WAKE_KEY(j->id));
	}
	pd_mutex_unlock(&e->lock);
	if (r < 0)
		return pd_error_set(err, r, "cannot record the prompt's end: %s", strerror(-r));
	return 0;
}

static int start_locked_out(struct engine *e, int64_t id, const char *data, size_t len,
			    pd_error *err)
{
	unsigned long long t0 = now_usec(); /* metrics */
	_cleanup_free_ char *cmd = NULL;
	char boxname[NAME_MAX_LEN + 1];
	struct job *j;
	struct box *b;
	enum job_kind kind;
	int r;

	pd_mutex_lock(&e->lock);
	r = locate(e, id, &j, &b);
	if (r < 0) {
		pd_mutex_unlock(&e->lock);
		return pd_error_set(err, r, "no such job");
	}
	kind = j->kind;
	if (j->state != JOB_CREATED) {
		pd_mutex_unlock(&e->lock);
		return pd_error_set(err, -EBUSY, "%s %s has already started", kind_word(kind),
				    j->name);
	}
	pd_mutex_unlock(&e->lock);

	if (kind == JOB_PROMPT) {
		struct prompt_refusal ref;
		r = eng_prompt_check_text(data, len, &cmd, err);
		/* A prompt its box's policy would keep from its model ends
		 * here, before anything starts (prompts.h). */
		if (r >= 0)
			r = eng_prompt_precheck(e, id, &ref, err);
		if (r == PROMPT_ENDED)
			return ended_at_once(e, id, cmd, &ref, err);
		if (r < 0)
			return r;
	} else {
		if (len == 0 || len > JOB_CMD_MAX || memchr(data, '\0', len))
			return pd_error_set(err, -EINVAL,
					    "cmd: one command line, 1 to %d bytes, no NUL",
					    JOB_CMD_MAX);
		while (len && (data[len - 1] == '\n' || data[len - 1] == '\r'))
			len--;
		if (!len)
			return pd_error_set(err, -EINVAL, "cmd: empty command");
		cmd = strndup(data, len);
		if (!cmd)
			return pd_error_set(err, -ENOMEM, "out of memory");
	}

	pd_mutex_lock(&e->lock);
	r = locate(e, id, &j, &b);
	if (r < 0) {
		pd_mutex_unlock(&e->lock);
		return pd_error_set(err, r, "no such job");
	}
	if (j->state != JOB_CREATED) {
		pd_mutex_unlock(&e->lock);
		return pd_error_set(err, -EBUSY, "%s %s has already started", kind_word(kind),
				    j->name);
	}
	snprintf(boxname, sizeof boxname, "%s", b->row.name);
	int64_t box_id = b->row.id;
	bool start_box = b->state == BOX_CREATED;
	if (!start_box && b->state != BOX_RUNNING) {
		r = pd_error_set(err, -EBUSY, "box %s is %s; write running to its state first",
				 boxname, box_state_to_string(b->state));
		pd_mutex_unlock(&e->lock);
		return r;
	}
	pd_mutex_unlock(&e->lock);

	/* The first job of a created box starts it. */
	if (start_box) {
		r = engine_box_set_state(e, box_id, "running", err);
		if (r < 0)
			return r;
	}

	struct job_start si = {.id = id, .box_id = box_id};
	pd_mutex_lock(&e->lock);
	r = locate(e, id, &j, &b);
	if (r >= 0 && (j->state != JOB_CREATED || b->state != BOX_RUNNING))
		r = pd_error_set(err, -EBUSY, "job or box changed meanwhile; try again");
	else if (r < 0)
		pd_error_set(err, r, "no such job");
	if (r >= 0) {
		/* Claimed: from here no other writer touches this job. */
		j->state = JOB_RUNNING;
		job_dir(e, b, j, NULL, si.dir, sizeof si.dir);
		eng_box_path(e, b, "rootfs", si.rootfs, sizeof si.rootfs);
		snprintf(si.box, sizeof si.box, "%s", b->row.name);
		snprintf(si.image, sizeof si.image, "%s", b->row.image);
	}
	pd_mutex_unlock(&e->lock);
	if (r < 0)
		return r;

	/* The box's secrets, read now (a value set since the last job is
	 * the one this job sees), to paddock-exec through a pipe. */
	char **secrets = NULL;
	r = job_secrets(e, box_id, si.box, &secrets, err);
	if (r >= 0)
		r = kind == JOB_PROMPT ? eng_prompt_write_spec(e, &si, cmd, err)
				       : write_spec(e, &si, cmd, err);
	bool spec_ok = r >= 0;
	if (spec_ok) {
		char fifo[4200];
		snprintf(fifo, sizeof fifo, "%s/stdin.fifo", si.dir);
		if (mkfifo(fifo, 0600) < 0 && errno != EEXIST)
			log_debug("cannot create %s: %s", fifo, strerror(errno));
		int hold = open(fifo, O_RDWR | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
		pd_mutex_lock(&e->lock);
		if (locate(e, id, &j, &b) >= 0) {
			job_close_stdin(j);
			j->stdin_fd = hold;
			hold = -1;
			if (e->inotify_fd >= 0)
				j->wd = inotify_add_watch(e->inotify_fd, si.dir,
							  IN_MODIFY | IN_MOVED_TO | IN_CLOSE_WRITE);
			(void)store_job_set_state(e->store, j->id, "running", NULL);
		}
		pd_mutex_unlock(&e->lock);
		if (hold >= 0)
			close(hold);
		r = runtime_exec(e->rt, si.box, si.dir, secrets, err);
	}
	eng_secrets_env_free(secrets);
	pd_mutex_lock(&e->lock);
	if (locate(e, id, &j, &b) >= 0) {
		if (r < 0) {
			/* Nothing runs: a job whose spec could not be written can be
			 * fixed and started again; one whose supervisor failed has
			 * ended. */
			j->state = spec_ok ? JOB_ENDED : JOB_CREATED;
			job_close_stdin(j);
			(void)store_job_set_state(e->store, j->id, job_state_name(j->state), NULL);
		} else
			eng_emit(e, b, "%s %s started", kind_word(kind), j->name);
	}
	pd_mutex_unlock(&e->lock);
	metrics_job_start(kind, r >= 0, now_usec() - t0);
	return r;
}

int engine_job_new(struct engine *e, int64_t box_id, const char *cmd, char *ret_name, size_t namesz,
		   pd_error *err)
{
	return engine_job_new_kind(e, box_id, JOB_EXEC, cmd, strlen(cmd), ret_name, namesz, err);
}

int engine_job_new_kind(struct engine *e, int64_t box_id, enum job_kind kind, const char *data,
			size_t len, char *ret_name, size_t namesz, pd_error *err)
{
	struct box *b;
	struct job *j = NULL;
	unsigned long max = 0;
	char name[32];
	int64_t id = 0;
	int r = -ENOENT;

	pd_mutex_lock(&e->lock);
	b = live_box(e, box_id, err);
	if (b) {
		for (size_t i = 0; i < e->n_jobs; i++)
			if (e->jobs[i]->box_id == b->row.id && e->jobs[i]->kind == kind &&
			    strspn(e->jobs[i]->name, "0123456789") == strlen(e->jobs[i]->name)) {
				unsigned long v = strtoul(e->jobs[i]->name, NULL, 10);
				if (v > max)
					max = v;
			}
		snprintf(name, sizeof name, "%lu", max + 1);
		r = create_locked(e, b, kind, name, &j, err);
		if (r >= 0)
			id = j->id;
	}
	pd_mutex_unlock(&e->lock);
	if (r < 0)
		return r;
	r = start_locked_out(e, id, data, len, err);
	if (r < 0) {
		pd_error saved = *err;
		(void)engine_job_delete(e, id, NULL);
		*err = saved;
		return r;
	}
	snprintf(ret_name, namesz, "%s", name);
	return 0;
}

/* --- stdin and ctl ----------------------------------------------------------- */

static pid_t read_pid(struct engine *e, int64_t id, const char *file)
{
	_cleanup_free_ char *v = NULL;
	size_t n;

	if (engine_job_read(e, id, file, &v, &n) < 0)
		return 0;
	long p = strtol(v, NULL, 10);
	return p > 0 ? (pid_t)p : 0;
}

int engine_job_stdin(struct engine *e, int64_t id, const char *data, size_t len, pd_error *err)
{
	char path[4096];
	struct job *j;
	struct box *b;
	ssize_t n;
	int r;

	pd_mutex_lock(&e->lock);
	r = locate(e, id, &j, &b);
	if (r >= 0 && j->state != JOB_RUNNING)
		r = -EPIPE;
	_cleanup_close_ int fd = -1;
	if (r >= 0) {
		job_dir(e, b, j, "stdin.fifo", path, sizeof path);
		if (j->stdin_fd >= 0)
			fd = fcntl(j->stdin_fd, F_DUPFD_CLOEXEC, 3);
	}
	pd_mutex_unlock(&e->lock);
	if (r == -EPIPE)
		return pd_error_set(err, -EPIPE, "the job is not running");
	if (r < 0)
		return pd_error_set(err, r, "no such job");
	if (fd < 0)
		fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return pd_error_set(err, errno == ENXIO ? -EPIPE : -errno,
				    "the job's stdin is closed");
	n = write(fd, data, len);
	if (n < 0)
		return pd_error_set(err, -errno, "stdin: %s", strerror(errno));
	return (int)n;
}

/* "HUP, INT, ..., SYS": the names `signal NAME` takes, for an error text. */
static void signal_names(char *buf, size_t bufsz)
{
	size_t len = 0;

	buf[0] = '\0';
	for (int i = 1; i < 65; i++) {
		const char *abbrev = sigabbrev_np(i);
		if (abbrev && !text_list_add(buf, bufsz, &len, abbrev))
			break;
	}
}

int engine_job_ctl(struct engine *e, int64_t id, const char *cmd, pd_error *err)
{
	struct job_view v;
	int sig;
	pid_t pid;

	if (engine_job_get_by_id(e, id, &v) < 0)
		return pd_error_set(err, -ENOENT, "no such job");
	if (strcmp(cmd, "kill") == 0)
		sig = SIGKILL;
	else if (strcmp(cmd, "eof") == 0)
		sig = 0;
	else if (strncmp(cmd, "signal ", 7) == 0) {
		const char *s = cmd + 7;
		uint64_t num;
		if (parse_uint64(s, 64, &num) >= 0 && num > 0)
			sig = (int)num;
		else {
			sig = -1;
			for (int i = 1; i < 65; i++) {
				const char *abbrev = sigabbrev_np(i);
				if (abbrev &&
				    (strcmp(s, abbrev) == 0 ||
				     (strncmp(s, "SIG", 3) == 0 && strcmp(s + 3, abbrev) == 0))) {
					sig = i;
					break;
				}
			}
			if (sig < 0) {
				char names[256];
				signal_names(names, sizeof names);
				return pd_error_set(
				    err, -EINVAL,
				    "unknown signal \"%s\": signals are %s (with or "
				    "without SIG), or a number 1-64",
				    s, names);
			}
		}
	} else
		return pd_error_set(err, -EINVAL,
				    "unknown control \"%s\": signal NAME|NUM, kill or eof", cmd);
	if (v.state != JOB_RUNNING)
		return pd_error_set(err, -EBUSY, "job %s is not running", v.name);
	if (sig == 0) {
		pid = read_pid(e, id, "supervisor.pid");
		if (pid <= 0 || kill(pid, SIGUSR1) < 0)
			return pd_error_set(err, -ESRCH, "the job's supervisor is gone");
		return 0;
	}
	pid = read_pid(e, id, "pid");
	if (pid <= 0)
		return pd_error_set(err, -EAGAIN, "the job has no process yet; try again");
	if (kill(pid, sig) < 0)
		return pd_error_set(err, -errno, "cannot signal the job: %s", strerror(errno));
	return 0;
}

/* --- following ------------------------------------------------------------------ */

/* Re-reads a running job's status; marks it ended when final. Engine lock
 * held. */
static void check_ended(struct engine *e, struct job *j)
{
	_cleanup_free_ char *st = NULL;
	char path[4096];
	struct box *b = eng_find_box_id(e, j->box_id);

	if (!b || j->state != JOB_RUNNING)
		return;
	job_dir(e, b, j, "status", path, sizeof path);
	if (read_file_at(AT_FDCWD, path, 256, &st, NULL) < 0)
		return;
	if (strncmp(st, "exited ", 7) != 0 && strncmp(st, "killed ", 7) != 0)
		return;
	st[strcspn(st, "\n")] = '\0';
	j->state = JOB_ENDED;
	job_close_stdin(j);
	if (j->wd >= 0 && e->inotify_fd >= 0)
		inotify_rm_watch(e->inotify_fd, j->wd);
	j->wd = -1;
	(void)store_job_set_state(e->store, j->id, "ended", NULL);
	eng_emit(e, b, "job %s ended %s", j->name, st);
}

static void *inotify_main(void *userdata)
{
	struct engine *e = userdata;
	char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));

	for (;;) {
		struct pollfd p[2] = {{.fd = e->inotify_fd, .events = POLLIN},
				      {.fd = e->inotify_stop, .events = POLLIN}};
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return NULL;
		}
		if (p[1].revents)
			return NULL; /* eng_jobs_stop() */
		ssize_t n = read(e->inotify_fd, buf, sizeof buf);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return NULL;
		}
		pd_mutex_lock(&e->lock);
		for (char *q = buf; q < buf + n;) {
			struct inotify_event *ev = (struct inotify_event *)q;
			for (size_t i = 0; i < e->n_jobs; i++) {
				struct job *j = e->jobs[i];
				if (j->wd != ev->wd)
					continue;
				if (ev->len && strcmp(ev->name, "status") == 0)
					check_ended(e, j);
				eng_wake(e, JOB_WAKE_KEY(j->id));
				break;
			}
			q += sizeof *ev + ev->len;
		}
		pd_mutex_unlock(&e->lock);
	}
}

static int load_job(const struct job_row *row, void *userdata)
{
	struct engine *e = userdata;
	struct job *j = calloc(1, sizeof *j);
	if (j)
		j->stdin_fd = -1;

	if (!j)
		return -ENOMEM;
	j->id = row->id;
	j->box_id = row->box_id;
	j->kind = strcmp(row->kind, "prompt") == 0 ? JOB_PROMPT : JOB_EXEC;
	j->wd = -1;
	snprintf(j->name, sizeof j->name, "%s", row->name);
	j->state = strcmp(row->state, "created") == 0	? JOB_CREATED
		   : strcmp(row->state, "running") == 0 ? JOB_RUNNING
							: JOB_ENDED;
	if (add_job(e, j) < 0) {
		free(j);
		return -ENOMEM;
	}
	return 0;
}

int eng_jobs_load(struct engine *e)
{
	return store_job_foreach(e->store, load_job, e);
}

int eng_jobs_start(struct engine *e)
{
	char dir[4096];
	int r;

	e->inotify_fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	if (e->inotify_fd < 0)
		return -errno;
	e->inotify_stop = eventfd(0, EFD_CLOEXEC);
	if (e->inotify_stop < 0)
		return -errno;
	pd_mutex_lock(&e->lock);
	for (size_t i = 0; i < e->n_jobs; i++) {
		struct job *j = e->jobs[i];
		struct box *b = eng_find_box_id(e, j->box_id);
		if (j->state != JOB_RUNNING || !b)
			continue;
		job_dir(e, b, j, NULL, dir, sizeof dir);
		j->wd =
		    inotify_add_watch(e->inotify_fd, dir, IN_MODIFY | IN_MOVED_TO | IN_CLOSE_WRITE);
		/* It may have ended while the daemon was down. */
		check_ended(e, j);
	}
	pd_mutex_unlock(&e->lock);
	r = pthread_create(&e->inotify_thread, NULL, inotify_main, e);
	if (r != 0)
		return -r;
	e->inotify_started = true;
	return 0;
}

void eng_jobs_stop(struct engine *e)
{
	if (e->inotify_started) {
		uint64_t one = 1;
		(void)!write(e->inotify_stop, &one, sizeof one);
		pthread_join(e->inotify_thread, NULL);
		e->inotify_started = false;
	}
	if (e->inotify_fd >= 0)
		close(e->inotify_fd);
	if (e->inotify_stop >= 0)
		close(e->inotify_stop);
	e->inotify_fd = e->inotify_stop = -1;
	for (size_t i = 0; i < e->n_jobs; i++)
		free(e->jobs[i]);
	free(e->jobs);
	e->jobs = NULL;
	e->n_jobs = 0;
	hmap_free(&e->jobs_by_name);
	hmap_free(&e->jobs_by_id);
}

void eng_jobs_running(struct engine *e, size_t ret[2])
{
	for (size_t i = 0; i < e->n_jobs; i++)
		if (e->jobs[i]->state == JOB_RUNNING)
			ret[e->jobs[i]->kind == JOB_PROMPT]++;
}
