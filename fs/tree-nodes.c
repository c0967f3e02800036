/* tree-nodes.c - the node tables of /paddock: one table per object kind
 * (the top level, types, images, tokens, a box with its exec/, a job, a
 * snapshot, a volume), each row a file, link or directory with its
 * handlers (struct node, tree-internal.h). tree.c derives everything else
 * from the rows: modes, sizes, listings, the temp-then-rename rule, how a
 * write is applied and where its failure is recorded.
 *
 * Adding a control file: a row in its kind's table and its handler here.
 */
#include "fs/tree-internal.h"

static const char readme_text[] =
    "Paddock: isolated Linux boxes, driven by file operations.\n"
    "\n"
    "  mkdir boxes/web                   create a box (state: created)\n"
    "  echo running > boxes/web/state    start it; echo stopped > ... stops it\n"
    "  cat boxes/web/usage               cpu_usec, cpu_percent (last 5 s, 100 = one CPU),\n"
    "                                    memory_bytes, pids, disk_bytes\n"
    "  echo medium > boxes/web/type      change its limits (live when running)\n"
    "  cat boxes/web/error               why the last control write failed: TIME FILE:\n"
    "                                    reason (ERRNO), until FILE is written fine\n"
    "  cat boxes/web/events              follow its lifecycle events\n"
    "  rmdir boxes/web                   stop and delete it\n"
    "  echo before-upgrade > boxes/web/snapshot   snapshot it (running or not)\n"
    "  readlink boxes/web/snapshots/last the id of its newest snapshot\n"
    "  echo web2 > boxes/web/fork        new box web2 from web's filesystem\n"
    "                                    (with its type, policy, ports, TTL,\n"
    "                                    volumes)\n"
    "  echo web-3 > boxes/web/restore    reset web's filesystem to snapshot web-3\n"
    "                                    (an id, or a label only one of web's\n"
    "                                    snapshots has); a running box is stopped\n"
    "                                    first, which ends its jobs (see events)\n"
    "\n"
    "Commands (exec/): a job's streams follow it live and end with it.\n"
    "  echo 'make test' > boxes/web/exec/new     run it as the next numbered job\n"
    "  cat boxes/web/exec/last/output; cat boxes/web/exec/last/exit\n"
    "  mkdir boxes/web/exec/build; echo /src > boxes/web/exec/build/cwd\n"
    "  echo 'make' > boxes/web/exec/build/cmd    env, cwd, user go before cmd\n"
    "  echo kill > boxes/web/exec/build/ctl      or: signal TERM, eof\n"
    "  (exit of a job whose cmd was never written: EBUSY at once, see error)\n"
    "\n"
    "Prompts (prompts/): a coding agent run headless in the box.\n"
    "  echo 'add a test' > boxes/web/prompt     the next numbered prompt, defaults\n"
    "  cat boxes/web/prompts/last/events        normalized JSON events, live\n"
    "  cat boxes/web/prompts/last/result        the answer; status, exit as exec\n"
    "  mkdir boxes/web/prompts/p; echo codex > boxes/web/prompts/p/agent\n"
    "  echo 'fix it' > boxes/web/prompts/p/text  agent, model, cwd, env, continue\n"
    "                                            go before text\n"
    "  agents/ID     the agents the images carry (version, images, secrets)\n"
    "\n"
    "Network and lifetime:\n"
    "  echo deny-all > boxes/web/policy          or allow-all, or several lines:\n"
    "  printf 'allowlist\\nexample.org\\n10.0.0.0/8\\n' > boxes/web/policy\n"
    "  printf 'allowlist\\n@claude\\n' > boxes/web/policy  an agent's endpoints\n"
    "  echo 2h > boxes/web/ttl                   stopped in 2 hours; none clears\n"
    "  cat boxes/web/expires                     when (RFC 3339), or never\n"
    "  echo 8080 > boxes/web/ports               publish a server of the box on its\n"
    "                                            port 8080 (cat boxes/web/urls);\n"
    "                                            '8080 public': no token needed\n"
    "\n"
    "Events follow for ever (like tail -f): stop reading with Ctrl-C.\n"
    "  cat events                                every box's, one line each\n"
    "  cat boxes/web/events                      TIME web started, ...\n"
    "\n"
    "root/ is the box's filesystem. Symbolic links in it are not followed\n"
    "from the host (ELOOP): use real paths (root/usr/bin, not root/bin), or\n"
    "read through the HTTP mirror or inside the box.\n"
    "\n"
    "  types/NAME    limits of each box type\n"
    "  images/NAME/  installed base images\n"
    "  events        every lifecycle event, live\n"
    "  snapshots/ID/ box, label, created, size, root/ (read-only), export\n"
    "                (a zstd tar; import it into a volume);\n"
    "                every stop takes one; rmdir snapshots/ID deletes one\n"
    "                (EBUSY while a box is built on it: see its error file)\n"
    "  tokens/ID/    access tokens of the HTTP API (made by logging in):\n"
    "                label, created, last_used, expires (or never: an\n"
    "                expired token is refused); rmdir tokens/ID revokes one\n"
    "\n"
    "  mkdir volumes/data                a named volume; outlives every box\n"
    "  echo data > boxes/web/volumes     mount it at /mnt/data (at once)\n"
    "  cat volumes/data/export > v.tzst  a zstd tar; write one to import\n"
    "  volumes/data/data/                its files; size, boxes, error\n"
    "  rmdir volumes/data                delete it (EBUSY while attached)\n"
    "\n"
    "Secrets: given to a box's jobs as environment variables, never shown.\n"
    "  echo sk-... > secrets/API_KEY     set one (stored encrypted)\n"
    "  cat secrets/API_KEY               when it was set, not the value\n"
    "  echo API_KEY > boxes/web/secrets  box web's next jobs get $API_KEY\n"
    "  rm secrets/API_KEY                remove it (and from every box)\n"
    "\n"
    "Owners in root/: each box has its own user namespace; its ids 0-65535\n"
    "are host ids BASE+0-65535, BASE its range (stat -c %u boxes/NAME/root\n"
    "shows it: box root owns /). What you write through root/ becomes the\n"
    "box's default user's; to give a file another box id N, chown it to\n"
    "BASE+N. Pulls, snapshot roots and exports show the ids the box sees.\n"
    "\n"
    "Inside a box, free, top, uptime and /proc/meminfo, cpuinfo, stat, uptime\n"
    "show the box's type and its own uptime (lxcfs); nproc counts the host's\n"
    "CPUs: a type's cpus is a quota, not a set of CPUs.\n"
    "\n"
    "A failed write returns an errno (EINVAL bad value, EBUSY wrong state,\n"
    "ENOENT no such object, EEXIST name taken) and changes nothing; the\n"
    "reason is in the box's error file.\n"
    "\n"
    "Root and the members of one group (stat -c %G on this directory; config\n"
    "key group) may use this tree; anyone else gets EACCES. Modes say so:\n"
    "the group has the owner's bits (0660 read-write, 0440 read-only, 0220\n"
    "write-only, 0770 directories), others none.\n";

/* A temp file: held in memory (data), or for the archives written to a
 * volume's import, in an unnamed file of the data directory (fd). */

static json_t *usage_json(const struct box_usage *u)
{
	return json_pack("{s:I, s:I, s:I, s:I, s:I}", "cpu_usec", (json_int_t)u->cpu_usec,
			 "cpu_percent", (json_int_t)u->cpu_percent, "memory_bytes",
			 (json_int_t)u->memory_bytes, "pids", (json_int_t)u->pids, "disk_bytes",
			 (json_int_t)u->disk_bytes);
}

/* A JSON string of text from anywhere (a box, a client, an old row):
 * jansson takes only valid UTF-8, so anything else is escaped first
 * (text_printable()) rather than failing the whole rendering. */
static json_t *json_text(const char *s)
{
	size_t len = strlen(s);
	json_t *j;

	if (utf8_valid(s, len))
		return json_stringn(s, len);
	char *clean = malloc(4 * len + 1);
	if (!clean)
		return NULL;
	text_printable(s, len, clean, 4 * len + 1);
	j = json_string(clean);
	free(clean);
	return j;
}

__thread bool tree_sizing;		       /* tree-internal.h */
__thread struct tree_error *tree_rendering_te; /* tree-internal.h */

static int render_info(struct tree *t, const struct box_view *v, struct pd_buf *out)
{
	const struct box_type *type = config_find_type(engine_config(t->engine), v->type);
	struct box_usage u = {0};
	char created[32];
	json_t *j, *limits;
	char *s;

	(void)engine_box_usage(t->engine, v->id, tree_sizing ? ENGINE_USAGE_NO_WALK : 0, &u);
	format_rfc3339(v->created, created, sizeof created);
	limits = json_object();
	if (type) {
		char cpus[32];
		format_cpus(type->millicpus, cpus, sizeof cpus);
		json_object_set_new(limits, "cpus", json_string(cpus));
		json_object_set_new(limits, "memory", json_integer((json_int_t)type->memory));
		json_object_set_new(limits, "pids", json_integer((json_int_t)type->pids));
		json_object_set_new(limits, "disk", json_integer((json_int_t)type->disk));
	}
	j = json_pack("{s:s, s:s, s:s, s:s, s:s, s:o, s:o, s:o}", "name", v->name, "state",
		      box_state_to_string(v->state), "type", v->type, "image", v->image, "created",
		      created, "usage", usage_json(&u), "limits", limits, "error",
		      json_text(v->error));
	if (!j)
		return -ENOMEM;
	{
		char **vols = NULL;
		size_t n = 0;
		json_t *arr = json_array();
		if (engine_box_volumes(t->engine, v->id, &vols, &n) >= 0)
			for (size_t i = 0; i < n; i++)
				json_array_append_new(arr, json_string(vols[i]));
		image_list_free(vols, n);
		json_object_set_new(j, "volumes", arr);
		/* A change on a running box waits for its next start. */
		json_object_set_new(j, "volumes_pending",
				    json_boolean(engine_box_volumes_pending(t->engine, v->id)));
	}
	{
		char docker[16];
		if (engine_box_docker_get(t->engine, v->id, docker, sizeof docker) >= 0)
			json_object_set_new(j, "docker", json_boolean(strcmp(docker, "on") == 0));
	}
	{
		struct port_list pl;
		json_t *arr = json_array();
		if (arr && engine_box_ports(t->engine, v->id, &pl) >= 0)
			for (size_t i = 0; i < pl.n; i++)
				json_array_append_new(arr, json_pack("{s:i, s:b}", "port",
								     (int)pl.e[i].port, "public",
								     (int)pl.e[i].public));
		if (arr)
			json_object_set_new(j, "ports", arr);
	}
	{
		char ip[32] = "";
		char *policy = NULL;
		(void)engine_box_ip(t->engine, v->id, ip, sizeof ip);
		json_object_set_new(j, "ip", json_string(ip));
		if (engine_box_policy(t->engine, v->id, &policy) >= 0)
			json_object_set_new(j, "policy", json_text(policy));
		free(policy);
	}
	s = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	if (!s)
		return -ENOMEM;
	int r = pd_buf_printf(out, "%s\n", s);
	free(s);
	return r;
}

/* --- reads: one handler per value ------------------------------------------------ */

static int line(struct pd_buf *out, const char *s)
{
	return pd_buf_printf(out, "%s\n", s);
}

static int line_time(struct pd_buf *out, time_t when, const char *none)
{
	char ts[32];

	if (!when && none)
		return line(out, none);
	format_rfc3339(when, ts, sizeof ts);
	return line(out, ts);
}

/* A row's string field of the object (OBJ_TEXT), as a line. */
static int read_text(struct tree *t, const struct obj *o, struct pd_buf *out)
{
	(void)t;
	return line(out, (const char *)o + o->node->field);
}

/* A row's time field of the object (OBJ_TIME), in RFC 3339. */
static int read_time(struct tree *t, const struct obj *o, struct pd_buf *out)
{
	time_t when;

	(void)t;
	memcpy(&when, (const char *)o + o->node->field, sizeof when);
	return line_time(out, when, /* none= */ NULL);
}

/* An error file: its line, or empty. */
static int line_error(struct pd_buf *out, const char *error)
{
	return error[0] ? line(out, error) : 0;
}

static int lines(struct pd_buf *out, int r, char **names, size_t n)
{
	for (size_t i = 0; i < n && r >= 0; i++)
		r = line(out, names[i]);
	image_list_free(names, n);
	return r;
}

static int read_readme(struct tree *t, const struct obj *o, struct pd_buf *out)
{
	(void)t, (void)o;
	return pd_buf_printf(out, "%s", readme_text);
}

static int read_version(struct tree *t, const struct obj *o, struct pd_buf *out)
{
	(void)t, (void)o;
	return pd_buf_printf(out, "paddock %s\n", PACKAGE_VERSION);
}

static int read_type(struct tree *t, const struct obj *o, struct pd_buf *out)
{
	const struct pd_config *cfg = engine_config(t->engine);
	char text[256];

	config_box_type_format(&cfg->types[INO_ID(o->ino)], text, sizeof text);
	return pd_buf_printf(out, "%s", text);
}

static int read_token_label(struct tree *t, const struct obj *o, struct pd_buf *out)
{
	(void)t;
	return o->tok.label[0] ? line(out, o->tok.label) : 0;
}

static int read_token_last_used(struct tree *t, const struct obj *o, struct pd_buf *out)
{
	(void)t;
	return line_time(out, o->tok.last_used, "never");
}

static int read_token_expires(struct tree *t, const struct obj *o, struct pd_buf *out)
{
	(void)t;
	return line_time(out, o->tok.expires, "never");
}

static int read_box_state(struct tree *t, const struct obj *o, struct pd_buf *out)
{
	(void)t;
	return line(out, box_state_to_string(o->box.state));
}

static int read_box_usage(struct tree *t, const struct obj *o, struct pd_buf *out)
{
	struct box_usage u;
	int r = engine_box_usage(t->engine, o->id, tree_sizing ? ENGINE_USAGE_NO_WALK : 0, &u);

	if (r < 0)
		return r;
	return pd_buf_printf(out,
			     "cpu_usec %" PRIu64 "\ncpu_percent %u\nmemory_bytes %" PRIu64
			     "\npids %" PRIu64 "\ndisk_bytes %" PRIu64 "\n",
			     u.cpu_usec, u.cpu_percent, u.memory_bytes, u.pids, u.disk_bytes);
}

static int read_box_info(struct tree *t, const struct obj *o, struct pd_buf *out)
{
	return render_info(t, &o->box, out);
}

static int read_box_error(struct tree *t, const struct obj *o, struct pd_buf *out)
{
	(void)t;
	return line_error(out, o->box.error);
}

static int read_box_ttl(struct tree *t, const struct obj *o, struct pd_buf *out)
{
	time_t now = time(NULL), expires = o->box.expires;

	(void)t;
	if (!expires)
		return line(out, "none");
	return pd_buf_printf(out, "%lld\n", (long long)(expires > now ? expires - now : 0));
}

static int read_box_expires(struct tree *t, const struct obj *o, struct pd_buf *out)
{
	(void)t;
	return line_time(out, o->box.expires, "never");
}

static int read_box_ip(struct tree *t, const struct obj *o, struct pd_buf *out)
{
	char ip[32];
	int r = engine_box_ip(t->engine, o->id, ip, sizeof ip);

	if (r < 0)
		return r;
	return ip[0] ? line(out, ip) : 0;
}

static int read_box_policy(struct tree *t, const struct obj *o, struct pd_buf *out)
{
	_cleanup_free_ char *text = NULL;
	int r = engine_box_policy(t->engine, o->id, &text);

	return r < 0 ? r : pd_buf_printf(out, "%s", text);
}

static int read_box_volumes(struct tree *t, const struct obj *o, struct pd_buf *out)
{
	char **names = NULL;
	size_t n = 0;
	int r = engine_box_volumes(t->engine, o->id, &names, &n);

	return lines(out, r, names, n);
}

/* --- secrets ------------------------------------------------------------------------ */

/* secrets/NAME: never the value, only when it was set. */
static int read_secret(struct tree *t, const struct obj *o, struct pd_buf *out)
{
	char buf[96];
	int r = engine_secret_read_time(t->engine, o->sec.id, buf, sizeof buf);

	return r < 0 ? r : pd_buf_printf(out, "%s", buf);
}

/* The value is the bytes written, one trailing newline dropped (echo's). */
static int write_secret(struct tree *t, const struct obj *o, const char *data, size_t len,
			pd_error *err, json_t **ret_answer)
{
	(void)ret_answer;
	if (len && data[len - 1] == '\n')
		len--;
	return engine_secret_set(t->engine, o->sec.name, data, len, err);
}

static int read_box_secrets(struct tree *t, const struct obj *o, struct pd_buf *out)
{
	_cleanup_free_ char *text = NULL;
	int r = engine_box_secrets(t->engine, o->id, &text);

	return r < 0 ? r : pd_buf_printf(out, "%s", text);
}

static int write_box_secrets(struct tree *t, const struct obj *o, const char *data, size_t len,
			     pd_error *err, json_t **ret_answer)
{
	(void)ret_answer;
	return engine_box_set_secrets(t->engine, o->id, data, len, err);
}

/* --- the desktop ---------------------------------------------------------------- */

static int read_desktop_state(struct tree *t, const struct obj *o, struct pd_buf *out)
{
	char buf[32];
	int r = engine_box_desktop_state(t->engine, o->id, buf, sizeof buf);

	return r < 0 ? r : line(out, buf);
}

static int read_box_docker(struct tree *t, const struct obj *o, struct pd_buf *out)
{
	char buf[16];
	int r = engine_box_docker_get(t->engine, o->id, buf, sizeof buf);

	return r < 0 ? r : line(out, buf);
}

static int read_box_ports(struct tree *t, const struct obj *o, struct pd_buf *out)
{
	char buf[PORTS_TEXT_MAX];
	int r = engine_box_ports_text(t->engine, o->id, buf, sizeof buf);

	return r < 0 ? r : pd_buf_append(out, buf, (size_t)r);
}

/* urls: "PORT URL" a line, a published port's preview URL (ports_url()). */
static int read_box_urls(struct tree *t, const struct obj *o, struct pd_buf *out)
{
	struct box_view v;
	struct port_list l;
	char url[1024];
	int r = engine_box_get_by_id(t->engine, o->id, &v);

	if (r >= 0)
		r = engine_box_ports(t->engine, o->id, &l);
	for (size_t i = 0; r >= 0 && i < l.n; i++) {
		if (ports_url(engine_config(t->engine), v.name, l.e[i].port, url, sizeof url) < 0)
			continue;
		r = pd_buf_printf(out, "%u %s\n", l.e[i].port, url);
	}
	return r < 0 ? r : 0;
}

static int write_box_ports(struct tree *t, const struct obj *o, const char *data, size_t len,
			   pd_error *err, json_t **ret_answer)
{
	(void)ret_answer;
	return engine_box_set_ports(t->engine, o->id, data, len, err);
}

static int read_desktop_geometry(struct tree *t, const struct obj *o, struct pd_buf *out)
{
	char buf[32];
	int r = engine_box_desktop_geometry(t->engine, o->id, buf, sizeof buf);

	return r < 0 ? r : line(out, buf);
}

static int read_desktop_url(struct tree *t, const struct obj *o, struct pd_buf *out)
{
	char buf[1024];
	int r = engine_box_desktop_url(t->engine, o->id, buf, sizeof buf);

	return r == -ENODEV ? 0 : r < 0 ? r : line(out, buf);
}

/* A capture of the desktop (screenshot, windows, cursor): fresh at every
 * open, none for a size (a getattr: 0, the file is read to its end); a
 * failure is the box's error, as a write's. */
static int desktop_read(struct tree *t, const struct obj *o, const char *label, int r,
			const pd_error *err)
{
	engine_box_record_error(t->engine, o->id, label, r < 0 ? err : NULL);
	if (r < 0 && tree_rendering_te)
		(void)tree_tell(tree_rendering_te, label, err);
	return r;
}

static int read_screenshot(struct tree *t, const struct obj *o, struct pd_buf *out)
{
	pd_error err = {0};

	if (tree_sizing)
		return 0;
	return desktop_read(t, o, "screenshot.png",
			    engine_box_screenshot(t->engine, o->id, out, &err), &err);
}

static int read_desktop_text(struct tree *t, const struct obj *o, struct pd_buf *out,
			     int (*get)(struct engine *, int64_t, char **, pd_error *))
{
	_cleanup_free_ char *text = NULL;
	pd_error err = {0};
	char label[64];
	int r;

	if (tree_sizing)
		return 0;
	snprintf(label, sizeof label, "desktop/%s", o->node->name);
	r = desktop_read(t, o, label, get(t->engine, o->id, &text, &err), &err);
	return r < 0 ? r : pd_buf_printf(out, "%s", text);
}

static int read_desktop_windows(struct tree *t, const struct obj *o, struct pd_buf *out)
{
	return read_desktop_text(t, o, out, engine_box_desktop_windows);
}

static int read_desktop_cursor(struct tree *t, const struct obj *o, struct pd_buf *out)
{
	return read_desktop_text(t, o, out, engine_box_desktop_cursor);
}

/* desktop/input: each write(2) is one batch of lines, all checked before
 * any is sent. */
static int write_desktop_input(struct tree *t, const struct obj *o, const char *data, size_t len,
			       pd_error *err, json_t **ret_answer)
{
	(void)ret_answer;
	return engine_box_desktop_input(t->engine, o->id, data, len, err);
}

/* A job's settings and results, as the engine keeps them. */
static int read_job_file(struct tree *t, const struct obj *o, struct pd_buf *out)
{
	_cleanup_free_ char *data = NULL;
	size_t len = 0;
	int r = engine_job_read(t->engine, o->job.id, o->node->name, &data, &len);

	if (r < 0)
		return r;
	return data ? pd_buf_append(out, data, len) : 0;
}

static int read_snap_size(struct tree *t, const struct obj *o, struct pd_buf *out)
{
	uint64_t size;
	int r = engine_snapshot_size(t->engine, o->snap.id, &size);

	return r < 0 ? r : pd_buf_printf(out, "%" PRIu64 "\n", size);
}

static int read_snap_error(struct tree *t, const struct obj *o, struct pd_buf *out)
{
	(void)t;
	return line_error(out, o->snap.error);
}

static int read_volume_size(struct tree *t, const struct obj *o, struct pd_buf *out)
{
	uint64_t size;
	int r = engine_volume_size(t->engine, o->id, &size);

	return r < 0 ? r : pd_buf_printf(out, "%" PRIu64 "\n", size);
}

static int read_volume_boxes(struct tree *t, const struct obj *o, struct pd_buf *out)
{
	char **names = NULL;
	size_t n = 0;
	int r = engine_volume_boxes(t->engine, o->id, &names, &n);

	return lines(out, r, names, n);
}

static int read_volume_error(struct tree *t, const struct obj *o, struct pd_buf *out)
{
	(void)t;
	return line_error(out, o->vol.error);
}

/* --- streams and links -------------------------------------------------------------- */

static int stream_events(struct tree *t, const struct obj *o, uint64_t *ret_key)
{
	(void)o;
	*ret_key = 0;
	return engine_events_open(t->engine, 0);
}

static int stream_box_events(struct tree *t, const struct obj *o, uint64_t *ret_key)
{
	*ret_key = (uint64_t)o->box.id;
	return engine_events_open(t->engine, *ret_key);
}

static int job_stream(struct tree *t, const struct obj *o, enum job_stream which, uint64_t *ret_key)
{
	*ret_key = JOB_WAKE_KEY(o->job.id);
	return engine_job_open_stream(t->engine, o->job.id, which);
}

static int stream_job_stdout(struct tree *t, const struct obj *o, uint64_t *ret_key)
{
	return job_stream(t, o, JOB_STDOUT, ret_key);
}

static int stream_job_stderr(struct tree *t, const struct obj *o, uint64_t *ret_key)
{
	return job_stream(t, o, JOB_STDERR, ret_key);
}

static int stream_job_output(struct tree *t, const struct obj *o, uint64_t *ret_key)
{
	return job_stream(t, o, JOB_OUTPUT, ret_key);
}

static int stream_prompt_events(struct tree *t, const struct obj *o, uint64_t *ret_key)
{
	return job_stream(t, o, JOB_EVENTS, ret_key);
}

static int name_link(const char *prefix, const char *name, char *buf, size_t bufsz)
{
	if ((size_t)snprintf(buf, bufsz, "%s%s", prefix, name) >= bufsz)
		return -ENAMETOOLONG;
	return 0;
}

static int link_box_root(struct tree *t, const struct obj *o, char *buf, size_t bufsz)
{
	return engine_box_root(t->engine, o->id, buf, bufsz);
}

/* exec/last: the job's name, even once a newer job is the last: the
 * target of an inode never changes. */
static int link_job_last(struct tree *t, const struct obj *o, char *buf, size_t bufsz)
{
	(void)t;
	return name_link("", o->job.name, buf, bufsz);
}

static int link_snap_root(struct tree *t, const struct obj *o, char *buf, size_t bufsz)
{
	return engine_snapshot_root(t->engine, o->snap.id, buf, bufsz);
}

/* A box's snapshots/ID. */
static int link_snap_entry(struct tree *t, const struct obj *o, char *buf, size_t bufsz)
{
	(void)t;
	return name_link("../../../snapshots/", o->snap.id, buf, bufsz);
}

/* A box's snapshots/last: its id, even once a newer one is the last (as
 * exec/last). */
static int link_snap_last(struct tree *t, const struct obj *o, char *buf, size_t bufsz)
{
	(void)t;
	return name_link("", o->snap.id, buf, bufsz);
}

static int link_volume_data(struct tree *t, const struct obj *o, char *buf, size_t bufsz)
{
	return engine_volume_data(t->engine, o->id, buf, bufsz);
}

/* --- writes: one handler per control file ------------------------------------------- */

/* A one-line setting the engine takes by the object's id (a box's state,
 * type, image, ttl): the row's set. */
static int write_setting(struct tree *t, const struct obj *o, const char *value, size_t len,
			 pd_error *err, json_t **ret_answer)
{
	(void)len, (void)ret_answer;
	return o->node->set(t->engine, o->id, value, err);
}

/* A snapshot's label: by its id (BOX-SEQ). */
static int write_snap_label(struct tree *t, const struct obj *o, const char *value, size_t len,
			    pd_error *err, json_t **ret_answer)
{
	(void)len, (void)ret_answer;
	return engine_snapshot_set_label(t->engine, o->snap.id, value, err);
}

/* A list: several lines, parsed by the engine. */
static int write_box_volumes(struct tree *t, const struct obj *o, const char *data, size_t len,
			     pd_error *err, json_t **ret_answer)
{
	(void)ret_answer;
	return engine_box_set_volumes(t->engine, o->id, data, len, err);
}

static int write_box_policy(struct tree *t, const struct obj *o, const char *data, size_t len,
			    pd_error *err, json_t **ret_answer)
{
	(void)ret_answer;
	return engine_box_set_policy(t->engine, o->id, data, len, err);
}

static int write_box_snapshot(struct tree *t, const struct obj *o, const char *value, size_t len,
			      pd_error *err, json_t **ret_answer)
{
	char made[NAME_MAX_LEN + 1];
	int r = engine_box_snapshot(t->engine, o->id, value, made, sizeof made, err);

	(void)len;
	if (r >= 0)
		*ret_answer = json_pack("{s:s}", "snapshot", made);
	return r;
}

static int write_box_fork(struct tree *t, const struct obj *o, const char *value, size_t len,
			  pd_error *err, json_t **ret_answer)
{
	char made[NAME_MAX_LEN + 1];
	int r = engine_box_fork(t->engine, o->id, value, made, sizeof made, err);

	(void)len;
	if (r >= 0)
		*ret_answer = json_pack("{s:s, s:s}", "box", value, "snapshot", made);
	return r;
}

static int write_box_restore(struct tree *t, const struct obj *o, const char *value, size_t len,
			     pd_error *err, json_t **ret_answer)
{
	struct engine_restore res;
	int r = engine_box_restore(t->engine, o->id, value, &res, err);

	(void)len;
	if (r >= 0 && res.restarted)
		*ret_answer = json_pack("{s:s, s:b, s:s, s:s}", "snapshot", res.id, "restarted", 1,
					"before", res.before, "jobs_ended", res.jobs);
	else if (r >= 0)
		*ret_answer = json_pack("{s:s, s:b}", "snapshot", res.id, "restarted", 0);
	return r;
}

/* The box's prompt file: the next numbered prompt, started with this text
 * (at close: a text may come in several writes). */
static int write_box_prompt(struct tree *t, const struct obj *o, const char *data, size_t len,
			    pd_error *err, json_t **ret_answer)
{
	char name[NAME_MAX_LEN + 1];
	int r = engine_prompt_new(t->engine, o->id, data, len, name, sizeof name, err);

	if (r >= 0 && ret_answer)
		*ret_answer = json_pack("{s:s}", "prompt", name);
	return r;
}

/* agents/ID: version, images, secrets, base_url, model. */
static int read_agent(struct tree *t, const struct obj *o, struct pd_buf *out)
{
	const char *name = tree_image_slot_name(t, INO_ID(o->ino));
	_cleanup_free_ char *text = NULL;
	size_t len;
	int r;

	if (!name || name[0] != '@')
		return -ENOENT;
	r = engine_agent_read(t->engine, name + 1, &text, &len);
	return r < 0 ? r : pd_buf_append(out, text, len);
}

/* exec/new: the next numbered job, started with this command. */
static int write_exec_new(struct tree *t, const struct obj *o, const char *data, size_t len,
			  pd_error *err, json_t **ret_answer)
{
	_cleanup_free_ char *cmd = strndup(data, len);
	char name[NAME_MAX_LEN + 1];

	(void)ret_answer;
	if (!cmd)
		return pd_error_set(err, -ENOMEM, "out of memory");
	if (strlen(cmd) != len)
		return pd_error_set(err, -EINVAL, "cmd: NUL byte");
	return engine_job_new(t->engine, o->id, cmd, name, sizeof name, err);
}

/* cmd, env, cwd, user, desktop: settings while the job is created (cmd
 * starts it). */
static int write_job_setting(struct tree *t, const struct obj *o, const char *data, size_t len,
			     pd_error *err, json_t **ret_answer)
{
	(void)ret_answer;
	return engine_job_set(t->engine, o->job.id, o->node->name, data, len, err);
}

static int write_job_stdin(struct tree *t, const struct obj *o, const char *data, size_t len,
			   pd_error *err, json_t **ret_answer)
{
	int r = engine_job_stdin(t->engine, o->job.id, data, len, err);

	/* What the pipe took: all, or part (a short write; the caller sends
	 * the rest: never the part again, which would repeat bytes). */
	if (r >= 0)
		*ret_answer = json_pack("{s:i}", "written", r);
	return r;
}

static int write_job_ctl(struct tree *t, const struct obj *o, const char *data, size_t len,
			 pd_error *err, json_t **ret_answer)
{
	char value[256];

	(void)ret_answer;
	if (value_from_write(data, len, sizeof value - 1, value, sizeof value) < 0)
		return pd_error_set(err, -EINVAL, "not a value: write one line");
	return engine_job_ctl(t->engine, o->job.id, value, err);
}

/* --- archives -------------------------------------------------------------------------- */

/* volumes/NAME/export: starts the archive (a refusal is the volume's
 * error). */
static int open_volume_export(struct tree *t, const struct obj *o, struct tree_file *f,
			      struct tree_error *te)
{
	pd_error err = {0};
	int r = engine_volume_export_open(t->engine, o->id, &f->export, &err);

	if (r >= 0)
		f->wait_key = export_stream_key(f->export);
	if (r >= 0 || err.code)
		engine_volume_record_error(t->engine, o->id, "export", r < 0 ? &err : NULL);
	if (r < 0 && err.code)
		tree_tell(te, "export", &err);
	return r;
}

/* volumes/NAME/import: claims the (empty) volume; done (and its error
 * cleared) only at close. */
static int open_volume_import(struct tree *t, const struct obj *o, struct tree_file *f,
			      struct tree_error *te)
{
	pd_error err = {0};
	int r = engine_volume_import_begin(t->engine, o->id, &f->import, &err);

	if (r < 0 && err.code) {
		engine_volume_record_error(t->engine, o->id, "import", &err);
		tree_tell(te, "import", &err);
	}
	return r;
}

/* snapshots/ID/export: starts the archive (a refusal is the snapshot's
 * error). */
static int open_snapshot_export(struct tree *t, const struct obj *o, struct tree_file *f,
				struct tree_error *te)
{
	pd_error err = {0};
	int r = engine_snapshot_export(t->engine, o->snap.id, &f->export, &err);

	if (r >= 0)
		f->wait_key = export_stream_key(f->export);
	if (r >= 0 || err.code)
		engine_snapshot_record_error(t->engine, o->snap.id, "export", r < 0 ? &err : NULL);
	if (r < 0 && err.code)
		tree_tell(te, "export", &err);
	return r;
}

/* --- the tables ---------------------------------------------------------------------------- */

#define DIR_ROW(m)                                                                                 \
	{                                                                                          \
		.name = "", .mode = S_IFDIR | (m), .dir = NODE_UNLISTED                            \
	}
#define VALUE(n, r)                                                                                \
	{                                                                                          \
		.name = (n), .mode = S_IFREG | 0444, .read = (r)                                   \
	}
/* A value that is one JSON object and a newline (N_JSON). */
#define JSON_VALUE(n, r)                                                                           \
	{                                                                                          \
		.name = (n), .mode = S_IFREG | 0444, .flags = N_JSON, .read = (r)                  \
	}
#define SETTING(n, r, s)                                                                           \
	{                                                                                          \
		.name = (n), .mode = S_IFREG | 0644, .flags = N_LINE, .read = (r),                 \
		.write = write_setting, .set = (s)                                                 \
	}
/* A value or setting that is one field of the object. */
#define TEXT(n, f)                                                                                 \
	{                                                                                          \
		.name = (n), .mode = S_IFREG | 0444, .read = read_text, .field = OBJ_TEXT(f)       \
	}
#define TIME(n, f)                                                                                 \
	{                                                                                          \
		.name = (n), .mode = S_IFREG | 0444, .read = read_time, .field = OBJ_TIME(f)       \
	}
#define SETTING_TEXT(n, f, s)                                                                      \
	{                                                                                          \
		.name = (n), .mode = S_IFREG | 0644, .flags = N_LINE, .read = read_text,           \
		.field = OBJ_TEXT(f), .write = write_setting, .set = (s)                           \
	}
#define ACTION(n, w)                                                                               \
	{                                                                                          \
		.name = (n), .mode = S_IFREG | 0200, .flags = N_LINE, .write = (w)                 \
	}
#define STREAM(n, s)                                                                               \
	{                                                                                          \
		.name = (n), .mode = S_IFREG | 0444, .stream = (s)                                 \
	}
#define LINK(n, l)                                                                                 \
	{                                                                                          \
		.name = (n), .mode = S_IFLNK | 0777, .link = (l)                                   \
	}

static const struct node root_nodes[] = {
    [S_ROOT] = DIR_ROW(0755),
    [S_README] = {"README", S_IFREG | 0444, S_ROOT, .read = read_readme},
    [S_VERSION] = {"version", S_IFREG | 0444, S_ROOT, .read = read_version},
    [S_TYPES] = {"types", S_IFDIR | 0555, S_ROOT},
    [S_IMAGES] = {"images", S_IFDIR | 0555, S_ROOT},
    [S_BOXES] = {"boxes", S_IFDIR | 0755, S_ROOT},
    [S_EVENTS] = {"events", S_IFREG | 0444, S_ROOT, .stream = stream_events},
    [S_TOKENS] = {"tokens", S_IFDIR | 0700, S_ROOT},
    [S_SNAPSHOTS] = {"snapshots", S_IFDIR | 0755, S_ROOT},
    [S_VOLUMES] = {"volumes", S_IFDIR | 0755, S_ROOT},
    /* Names only: a value is written, never read back. */
    [S_SECRETS] = {"secrets", S_IFDIR | 0700, S_ROOT},
    [S_AGENTS] = {"agents", S_IFDIR | 0555, S_ROOT},
};

/* secrets/NAME: one file, no directory. A value may come in several
 * write(2)s of one open: each sets all written so far. */
static const struct node secret_nodes[] = {
    {"", S_IFREG | 0600, NODE_UNLISTED, N_WHOLE, .read = read_secret, .write = write_secret},
};

/* agents/ID: one file, no directory. */
static const struct node agent_nodes[] = {
    {"", S_IFREG | 0444, NODE_UNLISTED, .read = read_agent},
};

/* types/NAME: one file, no directory. */
static const struct node type_nodes[] = {
    {"", S_IFREG | 0444, NODE_UNLISTED, .read = read_type},
};

static const struct node image_nodes[] = {
    [IF_DIR] = DIR_ROW(0555),
    [IF_DESCRIPTION] = TEXT("description", img.description),
    [IF_SIZE] = TEXT("size", img.size),
    [IF_CREATED] = TEXT("created", img.created),
};

/* tokens/ID/: the owner's access tokens (auth.h), read-only; rmdir revokes. */
static const struct node token_nodes[] = {
    [TF_DIR] = DIR_ROW(0500),
    [TF_LABEL] = {"label", S_IFREG | 0400, .read = read_token_label},
    [TF_CREATED] = {"created", S_IFREG | 0400, .read = read_time, .field = OBJ_TIME(tok.created)},
    [TF_LAST_USED] = {"last_used", S_IFREG | 0400, .read = read_token_last_used},
    [TF_EXPIRES] = {"expires", S_IFREG | 0400, .read = read_token_expires},
};

static const struct node box_nodes[] = {
    [BF_DIR] = DIR_ROW(0755),
    [BF_STATE] = SETTING("state", read_box_state, engine_box_set_state),
    [BF_TYPE] = SETTING_TEXT("type", box.type, engine_box_set_type),
    [BF_IMAGE] = SETTING_TEXT("image", box.image, engine_box_set_image),
    [BF_CREATED] = TIME("created", box.created),
    [BF_USAGE] = VALUE("usage", read_box_usage),
    [BF_INFO] = JSON_VALUE("info", read_box_info),
    [BF_ERROR] = VALUE("error", read_box_error),
    [BF_EVENTS] = STREAM("events", stream_box_events),
    [BF_TTL] = SETTING("ttl", read_box_ttl, engine_box_set_ttl),
    [BF_EXPIRES] = VALUE("expires", read_box_expires),
    [BF_ROOT] = LINK("root", link_box_root),
    [BF_EXEC] = {"exec", S_IFDIR | 0755},
    [BF_SNAPSHOT] = ACTION("snapshot", write_box_snapshot),
    [BF_FORK] = ACTION("fork", write_box_fork),
    [BF_RESTORE] = ACTION("restore", write_box_restore),
    [BF_SNAPSHOTS] = {"snapshots", S_IFDIR | 0555},
    /* Lists that may come in several write(2)s (a shell's printf writes
     * line by line): each applies the whole list written so far; a bare
     * "allowlist" waits for its entries (applied, or refused, at close
     * if none come). */
    [BF_VOLUMES] = {"volumes", S_IFREG | 0644, .flags = N_WHOLE, .read = read_box_volumes,
		    .write = write_box_volumes},
    [BF_IP] = VALUE("ip", read_box_ip),
    [BF_POLICY] = {"policy", S_IFREG | 0644, .flags = N_WHOLE, .read = read_box_policy,
		   .write = write_box_policy, .waits = policy_awaits_entries},
    /* exec/new, in exec/ beside the jobs and exec/last: a command may come
     * in several writes, and starts when the file is closed. */
    [BF_EXEC_NEW] = {"new", S_IFREG | 0200, BF_EXEC, N_AT_CLOSE, .write = write_exec_new},
    /* The desktop (engine.h): a screenshot taken at each open, and its
     * directory. */
    [BF_SCREENSHOT] = VALUE("screenshot.png", read_screenshot),
    [BF_DESKTOP] = {"desktop", S_IFDIR | 0755},
    /* prompts/: its prompts and prompts/last; prompt: the quick form (a
     * text may come in several writes, and starts when closed). */
    [BF_PROMPTS] = {"prompts", S_IFDIR | 0755},
    [BF_PROMPT] = {"prompt", S_IFREG | 0200, .flags = N_AT_CLOSE, .write = write_box_prompt},
    /* Docker in the box (engine.h): on or off, changed while stopped. */
    [BF_DOCKER] = SETTING("docker", read_box_docker, engine_box_set_docker),
    /* Ports published as preview URLs, one a line (the whole list at each
     * write; a blank line empties it). */
    [BF_PORTS] = {"ports", S_IFREG | 0644, .flags = N_WHOLE, .read = read_box_ports,
		  .write = write_box_ports},
    /* Their preview URLs, from the configuration. */
    [BF_URLS] = VALUE("urls", read_box_urls),
    [BF_DESKTOP_STATE] = {"state", S_IFREG | 0644, BF_DESKTOP, N_LINE, .read = read_desktop_state,
			  .write = write_setting, .set = engine_box_set_desktop},
    [BF_DESKTOP_GEOMETRY] = {"geometry", S_IFREG | 0644, BF_DESKTOP, N_LINE,
			     .read = read_desktop_geometry, .write = write_setting,
			     .set = engine_box_set_desktop_geometry},
    [BF_DESKTOP_URL] = {"url", S_IFREG | 0444, BF_DESKTOP, .read = read_desktop_url},
    [BF_DESKTOP_INPUT] = {"input", S_IFREG | 0200, BF_DESKTOP, .write = write_desktop_input},
    [BF_DESKTOP_WINDOWS] = {"windows", S_IFREG | 0444, BF_DESKTOP, .read = read_desktop_windows},
    [BF_DESKTOP_CURSOR] = {"cursor", S_IFREG | 0444, BF_DESKTOP, .read = read_desktop_cursor},
    /* Names from secrets/, one a line (the whole list at each write). */
    [BF_SECRETS] = {"secrets", S_IFREG | 0644, .flags = N_WHOLE, .read = read_box_secrets,
		    .write = write_box_secrets},
};

#define JOB_SETTING(n)                                                                             \
	{                                                                                          \
		.name = (n), .mode = S_IFREG | 0644, .read = read_job_file,                        \
		.write = write_job_setting                                                         \
	}
#define JOB_END(n, s)                                                                              \
	{                                                                                          \
		.name = (n), .mode = S_IFREG | 0444, .flags = N_NEEDS_START, .stream = (s)         \
	}
static const struct node job_nodes[] = {
    [JF_DIR] = DIR_ROW(0755),
    /* cmd starts the job at close; once started, a write is refused at
     * once (EBUSY, recorded). */
    [JF_CMD] = {"cmd", S_IFREG | 0644, .flags = N_AT_CLOSE, .read = read_job_file,
		.write = write_job_setting},
    [JF_ENV] = {"env", S_IFREG | 0644, .flags = N_WHOLE, .read = read_job_file,
		.write = write_job_setting},
    [JF_CWD] = JOB_SETTING("cwd"),
    [JF_USER] = JOB_SETTING("user"),
    [JF_DESKTOP] = JOB_SETTING("desktop"),
    [JF_STDIN] = {"stdin", S_IFREG | 0200, .flags = N_PARTIAL, .write = write_job_stdin},
    [JF_STDOUT] = JOB_END("stdout", stream_job_stdout),
    [JF_STDERR] = JOB_END("stderr", stream_job_stderr),
    [JF_OUTPUT] = JOB_END("output", stream_job_output),
    [JF_STATUS] = VALUE("status", read_job_file),
    [JF_EXIT] = {"exit", S_IFREG | 0444, .flags = N_NEEDS_START | N_AFTER_END,
		 .read = read_job_file},
    [JF_CTL] = {"ctl", S_IFREG | 0200, .write = write_job_ctl},
    [JF_PID] = VALUE("pid", read_job_file),
    [JF_STARTED] = VALUE("started", read_job_file),
    [JF_ENDED] = VALUE("ended", read_job_file),
    /* exec/last while this job is its box's last (listed by exec/). */
    [JF_LAST] = {"last", S_IFLNK | 0777, NODE_UNLISTED, .link = link_job_last},
};

static const struct node prompt_nodes[] = {
    [PF_DIR] = DIR_ROW(0755),
    [PF_AGENT] = JOB_SETTING("agent"),
    [PF_MODEL] = JOB_SETTING("model"),
    [PF_CWD] = JOB_SETTING("cwd"),
    [PF_ENV] = {"env", S_IFREG | 0644, .flags = N_WHOLE, .read = read_job_file,
		.write = write_job_setting},
    [PF_CONTINUE] = JOB_SETTING("continue"),
    /* text starts the prompt at close (it may come in several writes). */
    [PF_TEXT] = {"text", S_IFREG | 0644, .flags = N_AT_CLOSE, .read = read_job_file,
		 .write = write_job_setting},
    [PF_EVENTS] = JOB_END("events", stream_prompt_events),
    [PF_RESULT] = VALUE("result", read_job_file),
    [PF_STATUS] = VALUE("status", read_job_file),
    [PF_EXIT] = {"exit", S_IFREG | 0444, .flags = N_NEEDS_START | N_AFTER_END,
		 .read = read_job_file},
    [PF_SESSION] = VALUE("session", read_job_file),
    [PF_OUTPUT] = JOB_END("output", stream_job_output),
    [PF_CTL] = {"ctl", S_IFREG | 0200, .write = write_job_ctl},
    [PF_STARTED] = VALUE("started", read_job_file),
    [PF_ENDED] = VALUE("ended", read_job_file),
    /* prompts/last while this prompt is its box's last. */
    [PF_LAST] = {"last", S_IFLNK | 0777, NODE_UNLISTED, .link = link_job_last},
};

static const struct node snap_nodes[] = {
    [SF_DIR] = DIR_ROW(0755),
    [SF_BOX] = TEXT("box", snap.box),
    [SF_LABEL] = {"label", S_IFREG | 0644, .flags = N_LINE, .read = read_text,
		  .field = OBJ_TEXT(snap.label), .write = write_snap_label},
    [SF_CREATED] = TIME("created", snap.created),
    [SF_SIZE] = VALUE("size", read_snap_size),
    [SF_ROOT] = LINK("root", link_snap_root),
    [SF_ERROR] = VALUE("error", read_snap_error),
    [SF_EXPORT] = {"export", S_IFREG | 0444, .open = open_snapshot_export},
    /* Entries of the box's snapshots/ directory (listed there). */
    [SF_LINK] = {"", S_IFLNK | 0777, NODE_UNLISTED, .link = link_snap_entry},
    [SF_LAST] = {"last", S_IFLNK | 0777, NODE_UNLISTED, .link = link_snap_last},
};

/* volumes/NAME/: data leads to the volume's directory on the host; an
 * archive written to import is spooled to disk (temp_spool()). */
static const struct node volume_nodes[] = {
    [VF_DIR] = DIR_ROW(0755),
    [VF_DATA] = LINK("data", link_volume_data),
    [VF_SIZE] = VALUE("size", read_volume_size),
    [VF_BOXES] = VALUE("boxes", read_volume_boxes),
    [VF_EXPORT] = {"export", S_IFREG | 0444, .open = open_volume_export},
    [VF_IMPORT] = {"import", S_IFREG | 0200, .flags = N_IMPORT, .open = open_volume_import},
    [VF_ERROR] = VALUE("error", read_volume_error),
};

/* --- the kinds ---------------------------------------------------------------------------- */

static int get_static(struct tree *t, uint64_t ino, struct obj *o)
{
	(void)ino;
	o->mtime = t->started;
	return 0;
}

static int get_type(struct tree *t, uint64_t ino, struct obj *o)
{
	if (INO_ID(ino) >= engine_config(t->engine)->n_types)
		return -ENOENT;
	o->mtime = t->started;
	return 0;
}

static int get_image(struct tree *t, uint64_t ino, struct obj *o)
{
	const char *name = tree_image_slot_name(t, INO_ID(ino));

	if (!name || image_get(engine_images_dir(t->engine), name, &o->img) < 0)
		return -ENOENT;
	o->mtime = t->started;
	return 0;
}

static int get_token(struct tree *t, uint64_t ino, struct obj *o)
{
	int r = auth_token_get_seq(engine_auth(t->engine), (int64_t)INO_ID(ino), &o->tok);

	o->mtime = o->tok.created;
	return r;
}

static int get_box(struct tree *t, uint64_t ino, struct obj *o)
{
	int r = engine_box_get_by_id(t->engine, (int64_t)INO_ID(ino), &o->box);

	if (r < 0)
		return r;
	o->id = o->box.id;
	o->mtime = o->box.created;
	return 0;
}

/* A job or prompt (kind) and the id of its box (whose error file is the
 * job's). */
static int get_job_kind(struct tree *t, uint64_t ino, enum job_kind kind, struct obj *o)
{
	struct box_view v;

	if (engine_job_get_by_id(t->engine, (int64_t)INO_ID(ino), &o->job) < 0 ||
	    o->job.kind != kind || engine_box_get_by_id(t->engine, o->job.box_id, &v) < 0)
		return -ENOENT;
	o->id = v.id;
	o->mtime = v.created;
	return 0;
}

static int get_job(struct tree *t, uint64_t ino, struct obj *o)
{
	return get_job_kind(t, ino, JOB_EXEC, o);
}

static int get_prompt(struct tree *t, uint64_t ino, struct obj *o)
{
	return get_job_kind(t, ino, JOB_PROMPT, o);
}

static int get_agent(struct tree *t, uint64_t ino, struct obj *o)
{
	const char *name = tree_image_slot_name(t, INO_ID(ino));
	_cleanup_free_ char *text = NULL;
	size_t len;

	if (!name || name[0] != '@' || engine_agent_read(t->engine, name + 1, &text, &len) < 0)
		return -ENOENT;
	o->mtime = t->started;
	return 0;
}

static int get_snap(struct tree *t, uint64_t ino, struct obj *o)
{
	int r = engine_snapshot_get_by_seq(t->engine, (int64_t)INO_ID(ino), &o->snap);

	if (r < 0)
		return r;
	o->mtime = o->snap.created;
	return 0;
}

static int get_volume(struct tree *t, uint64_t ino, struct obj *o)
{
	int r = engine_volume_get_by_id(t->engine, (int64_t)INO_ID(ino), &o->vol);

	if (r < 0)
		return r;
	o->id = o->vol.id;
	o->mtime = o->vol.created;
	return 0;
}

static int get_secret(struct tree *t, uint64_t ino, struct obj *o)
{
	int r = engine_secret_get_by_id(t->engine, (int64_t)INO_ID(ino), &o->sec);

	if (r < 0)
		return r;
	o->id = o->sec.id;
	o->mtime = o->sec.set_time;
	return 0;
}

/* secrets/ has no error file (a name there is a secret's): the reason of
 * a refused write goes to its caller only (the HTTP body, the CLI). */
static void record_secret(struct tree *t, const struct obj *o, const char *label,
			  const pd_error *err)
{
	(void)t, (void)o, (void)label, (void)err;
}

/* A box's and its jobs' failures go to the box's error file. */
static void record_box(struct tree *t, const struct obj *o, const char *label, const pd_error *err)
{
	engine_box_record_error(t->engine, o->id, label, err);
}

static void record_snap(struct tree *t, const struct obj *o, const char *label, const pd_error *err)
{
	engine_snapshot_record_error(t->engine, o->snap.id, label, err);
}

static void record_volume(struct tree *t, const struct obj *o, const char *label,
			  const pd_error *err)
{
	engine_volume_record_error(t->engine, o->id, label, err);
}

#define KIND_ROW(table, g, rec)                                                                    \
	{                                                                                          \
		(table), ELEMENTSOF(table), (g), (rec)                                             \
	}
const struct kind tree_kinds[] = {
    [KIND_STATIC] = KIND_ROW(root_nodes, get_static, NULL),
    [KIND_TYPE] = KIND_ROW(type_nodes, get_type, NULL),
    [KIND_IMAGE] = KIND_ROW(image_nodes, get_image, NULL),
    [KIND_BOX] = KIND_ROW(box_nodes, get_box, record_box),
    [KIND_JOB] = KIND_ROW(job_nodes, get_job, record_box),
    [KIND_TOKEN] = KIND_ROW(token_nodes, get_token, NULL),
    [KIND_SNAP] = KIND_ROW(snap_nodes, get_snap, record_snap),
    [KIND_VOLUME] = KIND_ROW(volume_nodes, get_volume, record_volume),
    [KIND_SECRET] = KIND_ROW(secret_nodes, get_secret, record_secret),
    [KIND_PROMPT] = KIND_ROW(prompt_nodes, get_prompt, record_box),
    [KIND_AGENT] = KIND_ROW(agent_nodes, get_agent, NULL),
};
const size_t tree_n_kinds = ELEMENTSOF(tree_kinds);
