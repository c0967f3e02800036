/* prompts.c - prompts: what a prompt adds to an exec job (prompts.h). The
 * job machinery (jobs.c) creates, starts, follows and deletes them. */
#include <fcntl.h>
#include <jansson.h>
#include <string.h>
#include <time.h>

#include "box/agent-events.h"
#include "engine/internal.h"
#include "engine/prompts.h"
#include "common/parse.h"
#include "common/util.h"

#define SETTING_MAX 4096

int engine_prompt_new(struct engine *e, int64_t box_id, const char *data, size_t len,
		      char *ret_name, size_t namesz, pd_error *err)
{
	return engine_job_new_kind(e, box_id, JOB_PROMPT, data, len, ret_name, namesz, err);
}

int eng_prompt_check_text(const char *data, size_t len, char **ret, pd_error *err)
{
	size_t blank = 0;

	if (len > PROMPT_TEXT_MAX)
		return pd_error_set(err, -EINVAL, "text: over %d bytes (%zu)", PROMPT_TEXT_MAX,
				    len);
	if (memchr(data, '\0', len))
		return pd_error_set(err, -EINVAL, "text: NUL byte");
	while (blank < len && strchr(" \t\r\n", data[blank]))
		blank++;
	if (blank == len)
		return pd_error_set(err, -EINVAL, "text: empty (write the prompt's text)");
	*ret = strndup(data, len);
	return *ret ? 0 : pd_error_set(err, -ENOMEM, "out of memory");
}

/* The box's image (for its agents). */
static int box_image(struct engine *e, int64_t box_id, char *image, size_t imagesz)
{
	struct box *b;

	pd_mutex_lock(&e->lock);
	b = eng_live_box(e, box_id);
	if (b)
		snprintf(image, imagesz, "%s", b->row.image);
	pd_mutex_unlock(&e->lock);
	return b ? 0 : -ENOENT;
}

/* The default agent of a box of image: the config's, else the image's
 * first. */
static const char *default_agent(struct engine *e, const struct agent_catalogue *c,
				 const char *image)
{
	const struct agent_entry *first = agents_image_first(c, image);

	if (e->cfg->agent)
		return e->cfg->agent;
	return first ? first->id : NULL;
}

int eng_prompt_setting(struct engine *e, int64_t box_id, const char *file, const char *data,
		       size_t len, char **ret, pd_error *err)
{
	char value[SETTING_MAX + 1];
	int r;

	(void)box_id;
	r = value_from_write(data, len, SETTING_MAX, value, sizeof value);
	if (r < 0)
		return pd_error_set(err, -EINVAL, "not a value: write one line, no NUL bytes");
	if (strcmp(file, "agent") == 0) {
		struct agent_catalogue c;
		char known[512];
		r = agents_load(e->images_dir, &c);
		if (r < 0)
			return pd_error_set(err, r, "cannot read the agents' catalogue");
		agents_ids(&c, NULL, known, sizeof known);
		bool found = name_valid(value) && agents_find(&c, NULL, value);
		agents_release(&c);
		if (!found)
			return pd_error_set(err, -EINVAL, "unknown agent \"%s\" (known: %s)", value,
					    known);
	} else if (strcmp(file, "model") == 0) {
		if (strlen(value) > CONFIG_MODEL_MAX || strpbrk(value, " \t"))
			return pd_error_set(err, -EINVAL, "model: 1 to %d bytes, no blanks",
					    CONFIG_MODEL_MAX);
	} else if (strcmp(file, "continue") == 0) {
		struct job_view v;
		if (!name_valid(value) || engine_job_get_kind(e, box_id, JOB_PROMPT, value, &v) < 0)
			return pd_error_set(err, -ENOENT,
					    "continue: no prompt \"%s\" in this box (the name of "
					    "an earlier prompt)",
					    value);
	} else
		return pd_error_set(err, -EACCES, "%s is not writable", file);
	*ret = strdup(value);
	return *ret ? 0 : pd_error_set(err, -ENOMEM, "out of memory");
}

int eng_prompt_default(struct engine *e, int64_t box_id, const char *file, char **ret)
{
	struct agent_catalogue c;
	char image[NAME_MAX_LEN + 1];
	const char *agent;
	int r;

	if (strcmp(file, "agent") != 0 && strcmp(file, "model") != 0)
		return -ENOENT;
	r = box_image(e, box_id, image, sizeof image);
	if (r < 0)
		return r;
	r = agents_load(e->images_dir, &c);
	if (r < 0)
		return r;
	agent = default_agent(e, &c, image);
	if (strcmp(file, "agent") == 0)
		r = asprintf(ret, "%s%s", agent ? agent : "", agent ? "\n" : "");
	else {
		const struct agent_config *ac = agent ? config_find_agent(e->cfg, agent) : NULL;
		r = asprintf(ret, "%s%s", ac && ac->model ? ac->model : "",
			     ac && ac->model ? "\n" : "");
	}
	agents_release(&c);
	return r < 0 ? -ENOMEM : 0;
}

/* A one-line setting of a prompt's directory, without its newline; NULL
 * when not set. */
static char *line_setting(const char *dir, const char *file)
{
	char *v = eng_job_setting(dir, file, SETTING_MAX + 1);

	if (v)
		v[strcspn(v, "\n")] = '\0';
	if (v && !*v) {
		free(v);
		v = NULL;
	}
	return v;
}

/* The prompt's agent, checked against the box's image. */
static int resolve_agent(struct engine *e, const struct agent_catalogue *c, const char *dir,
			 const char *image, char *agent, size_t agentsz, pd_error *err)
{
	_cleanup_free_ char *set = line_setting(dir, "agent");
	const char *a = set ? set : default_agent(e, c, image);
	char known[512];

	agents_ids(c, image, known, sizeof known);
	if (!a)
		return pd_error_set(err, -ENOENT,
				    "image %s has no agents (agents: none); use a box of an "
				    "image with agents (scripts/mkimage agents)",
				    image);
	if (!agents_find(c, image, a))
		return pd_error_set(err, -ENOENT, "agent %s is not in image %s (agents: %s)", a,
				    image, known);
	snprintf(agent, agentsz, "%s", a);
	return 0;
}

/* The session an earlier prompt left for agent, into *ret. */
static int continued_session(struct engine *e, int64_t box_id, const char *dir, const char *agent,
			     char **ret, pd_error *err)
{
	_cleanup_free_ char *name = line_setting(dir, "continue");
	_cleanup_free_ char *other_agent = NULL, *session = NULL;
	char other[4096], sub[300];
	struct job_view v;
	struct box *b;

	*ret = NULL;
	if (!name)
		return 0;
	if (engine_job_get_kind(e, box_id, JOB_PROMPT, name, &v) < 0)
		return pd_error_set(err, -ENOENT, "continue: no prompt \"%s\" in this box", name);
	pd_mutex_lock(&e->lock);
	b = eng_live_box(e, box_id);
	snprintf(sub, sizeof sub, "prompts/%s", name);
	if (b)
		eng_box_path(e, b, sub, other, sizeof other);
	pd_mutex_unlock(&e->lock);
	if (!b)
		return pd_error_set(err, -ENOENT, "the box is gone");
	other_agent = line_setting(other, "agent");
	session = line_setting(other, "session");
	if (other_agent && strcmp(other_agent, agent) != 0)
		return pd_error_set(err, -EINVAL,
				    "continue: prompt %s ran agent %s, not %s (a session is "
				    "one agent's)",
				    name, other_agent, agent);
	if (!session)
		return pd_error_set(
		    err, -EINVAL, "continue: prompt %s has no session to resume (%s)", name,
		    v.state == JOB_ENDED ? "its agent reported none" : "it has not ended yet");
	/* Written from what the agent in the box printed: only a plain id
	 * goes on to the next command line (never one that reads as an
	 * option). */
	if (strlen(session) > 512 || session[0] == '-' ||
	    strspn(session,
		   "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:/@+-") !=
		strlen(session))
		return pd_error_set(err, -EINVAL,
				    "continue: the session prompt %s recorded is not a plain id "
				    "([A-Za-z0-9._:/@+-], not starting with -)",
				    name);
	*ret = session;
	session = NULL;
	return 0;
}

static int put(const char *dir, const char *file, const char *text)
{
	char path[4200];

	snprintf(path, sizeof path, "%s/%s", dir, file);
	return write_file_replace(path, text, strlen(text));
}

/* Records a prompt that ends before anything runs: an error event, the
 * end, exit 1 and, last, the final status (as the supervisor would). */
int eng_prompt_record_refused(const char *dir, const struct prompt_refusal *ref, const char *text)
{
	char agent[NAME_MAX_LEN + 2];
	char t[64], secs[32];
	json_auto_t *ev1 = NULL, *ev2 = NULL;
	_cleanup_free_ char *l1 = NULL, *l2 = NULL, *events = NULL;
	time_t now = time(NULL);
	struct tm tm;
	int r;

	snprintf(agent, sizeof agent, "%s\n", ref->agent);
	format_rfc3339_ms_now(t, sizeof t);
	ev1 = json_pack("{s:s, s:s, s:s}", "type", "error", "time", t, "message", ref->why);
	ev2 = json_pack("{s:s, s:s, s:i, s:s}", "type", "end", "time", t, "exit", 1, "result", "");
	l1 = ev1 ? json_dumps(ev1, JSON_COMPACT) : NULL;
	l2 = ev2 ? json_dumps(ev2, JSON_COMPACT) : NULL;
	if (!l1 || !l2 || asprintf(&events, "%s\n%s\n", l1, l2) < 0)
		return -ENOMEM;
	gmtime_r(&now, &tm);
	strftime(secs, sizeof secs, "%Y-%m-%dT%H:%M:%SZ\n", &tm);
	if ((r = put(dir, "agent", agent)) < 0 || (r = put(dir, "text", text)) < 0 ||
	    (r = put(dir, "started", secs)) < 0 || (r = put(dir, "events", events)) < 0 ||
	    (r = put(dir, "result", "")) < 0 || (r = put(dir, "exit", "1\n")) < 0 ||
	    (r = put(dir, "ended", secs)) < 0)
		return r;
	return put(dir, "status", "exited 1\n");
}

int eng_prompt_precheck(struct engine *e, int64_t id, struct prompt_refusal *ret, pd_error *err)
{
	_cleanup_free_ char *session = NULL;
	_cleanup_strv_free_ char **hosts = NULL;
	struct agent_catalogue c;
	char image[NAME_MAX_LEN + 1], agent[NAME_MAX_LEN + 1], dir[4096], box[NAME_MAX_LEN + 1];
	char sub[300], mode[16] = "";
	struct job_view v;
	struct box *b;
	bool allowed = true;
	int r;

	if (engine_job_get_by_id(e, id, &v) < 0)
		return pd_error_set(err, -ENOENT, "no such prompt");
	pd_mutex_lock(&e->lock);
	b = eng_live_box(e, v.box_id);
	if (b) {
		snprintf(image, sizeof image, "%s", b->row.image);
		snprintf(box, sizeof box, "%s", b->row.name);
		snprintf(sub, sizeof sub, "prompts/%s", v.name);
		eng_box_path(e, b, sub, dir, sizeof dir);
	}
	pd_mutex_unlock(&e->lock);
	if (!b)
		return eng_box_gone(err);
	r = agents_load(e->images_dir, &c);
	if (r < 0)
		return pd_error_set(err, r, "cannot read the agents' catalogue");
	r = resolve_agent(e, &c, dir, image, agent, sizeof agent, err);
	if (r >= 0)
		r = continued_session(e, v.box_id, dir, agent, &session, err);
	if (r >= 0 && agents_endpoints(&c, e->cfg, agent, &hosts) < 0)
		r = pd_error_set(err, -ENOMEM, "out of memory");
	agents_release(&c);
	if (r < 0)
		return r;

	/* Its model endpoint (the first host) under the box's policy now. */
	pd_mutex_lock(&e->lock);
	b = eng_live_box(e, v.box_id);
	if (b && hosts[0]) {
		allowed = policy_allows_host(&b->policy, hosts[0]);
		snprintf(mode, sizeof mode, "%s",
			 b->policy.mode == POLICY_DENY_ALL    ? "deny-all"
			 : b->policy.mode == POLICY_ALLOWLIST ? "allowlist"
							      : "allow-all");
	}
	pd_mutex_unlock(&e->lock);
	if (!b)
		return eng_box_gone(err);
	if (allowed)
		return 0;
	snprintf(ret->agent, sizeof ret->agent, "%s", agent);
	snprintf(ret->why, sizeof ret->why,
		 "box %s's policy (%s) does not let agent %s reach %s: add @%s to an allowlist "
		 "(printf 'allowlist\\n@%s\\n' > boxes/%s/policy)",
		 box, mode, agent, hosts[0], agent, agent, box);
	return PROMPT_ENDED;
}

int eng_prompt_write_spec(struct engine *e, const struct job_start *si, const char *text,
			  pd_error *err)
{
	_cleanup_free_ char *model = line_setting(si->dir, "model");
	_cleanup_free_ char *session = NULL;
	_cleanup_strv_free_ char **argv = NULL, **env = NULL;
	json_auto_t *spec = NULL;
	struct agent_catalogue c;
	const struct agent_config *ac;
	char agent[NAME_MAX_LEN + 2];
	const char *shell;
	json_t *jargv;
	int r;

	r = agents_load(e->images_dir, &c);
	if (r < 0)
		return pd_error_set(err, r, "cannot read the agents' catalogue");
	r = resolve_agent(e, &c, si->dir, si->image, agent, sizeof agent, err);
	agents_release(&c);
	if (r < 0)
		return r;
	r = continued_session(e, si->box_id, si->dir, agent, &session, err);
	if (r < 0)
		return r;
	ac = config_find_agent(e->cfg, agent);
	struct agent_run run = {
	    .text = text,
	    .model = model ? model
		     : ac  ? ac->model
			   : NULL, /* the prompt's wins */
	    .session = session,
	    .base_url = ac ? ac->base_url : NULL,
	};
	r = agent_command(agent, &run, &argv, &env, err);
	if (r < 0)
		return r;
	/* The box's image's default user, in its home unless cwd says
	 * otherwise; the box's secrets come the way every job's do. */
	r = eng_job_spec(e, si, NULL, (const char *const *)env, &spec, err);
	if (r < 0)
		return r;
	shell = json_string_value(json_object_get(spec, "shell"));
	jargv = json_array();
	/* Under the box's login shell, for its PATH: exec "$0" "$@" takes the
	 * agent's argv as it is, nothing of it parsed by the shell. */
	if (shell && strstr(shell, "bash")) {
		json_array_append_new(jargv, json_string(shell));
		json_array_append_new(jargv, json_string("-lc"));
		json_array_append_new(jargv, json_string("exec \"$0\" \"$@\""));
	}
	for (char **a = argv; a && *a; a++)
		json_array_append_new(jargv, json_string(*a));
	if (json_object_set_new(spec, "argv", jargv) < 0 ||
	    json_object_set_new(spec, "events", json_string(agent)) < 0)
		return pd_error_set(err, -ENOMEM, "cannot build the prompt's spec");
	r = put(si->dir, "text", text);
	if (r >= 0) {
		strcat(agent, "\n");
		r = put(si->dir, "agent", agent);
	}
	if (r < 0)
		return pd_error_set(err, r, "cannot write the prompt's files: %s", strerror(-r));
	return eng_job_write_spec(si, spec, err);
}
