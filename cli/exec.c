/* exec.c - a job in a box, followed live (see exec.h). */
#include <signal.h> /* sig_atomic_t */
#include <string.h>

#include "cli/cli.h"
#include "cli/exec.h"
#include "cli/platform.h"

static volatile sig_atomic_t interrupts;

static void count_interrupt(void)
{
	interrupts++;
}

struct stream {
	CURL *h;
	const cli_job_stream *spec;
	bool checked, ok, stopped;
	struct pd_buf errbody;
	char errbuf[CURL_ERROR_SIZE];
	struct curl_slist *headers;
	CURLcode result;
};

static size_t stream_write(char *ptr, size_t size, size_t nmemb, void *user)
{
	struct stream *s = user;
	size_t n = size * nmemb;

	if (!s->checked) {
		s->ok = cli_response_ok(s->h);
		s->checked = true;
	}
	if (!s->ok)
		return cli_errbody_write(ptr, size, nmemb, &s->errbody);
	if (!s->spec->sink(s->spec->user, ptr, n)) {
		s->stopped = true;
		return CURL_WRITEFUNC_ERROR; /* ends this transfer; not a failure */
	}
	return n;
}

static int job_file(const char *job_dir, const char *file, char **ret)
{
	if (asprintf(ret, "%s%s", job_dir, file) < 0)
		return -ENOMEM;
	return 0;
}

int cli_job_put(cli_client *c, const char *dir, const char *file, const char *value, pd_error *err)
{
	_cleanup_free_ char *path = NULL;

	if (job_file(dir, file, &path) < 0)
		return pd_error_set(err, -ENOMEM, "out of memory");
	int r = cli_put_value(c, path, value, err);
	return r < 0 ? pd_error_prefix(err, "%s", file) : 0;
}

int cli_job_settings(cli_client *c, const char *dir, const char *const *env, size_t n_env,
		     const char *cwd, pd_error *err)
{
	int r;

	if (n_env > 0) {
		_cleanup_free_ char *path = NULL;
		_cleanup_(pd_buf_freep) struct pd_buf body = {0};
		for (size_t i = 0; i < n_env; i++)
			if (pd_buf_printf(&body, "%s\n", env[i]) < 0)
				return pd_error_set(err, -ENOMEM, "out of memory");
		if (job_file(dir, "env", &path) < 0)
			return pd_error_set(err, -ENOMEM, "out of memory");
		r = cli_put(c, path, body.data, body.len, err);
		if (r < 0)
			return pd_error_prefix(err, "env");
	}
	if (cwd) {
		r = cli_job_put(c, dir, "cwd", cwd, err);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Writes the job's settings and cmd. */
static int setup_job(cli_client *c, const char *dir, const cli_exec_opts *o, pd_error *err)
{
	_cleanup_free_ char *path = NULL, *cmd = NULL;
	int r;

	r = cli_job_settings(c, dir, o->env, o->n_env, o->cwd, err);
	if (r < 0)
		return r;
	if (o->desktop) {
		r = cli_job_put(c, dir, "desktop", "1", err);
		if (r < 0)
			return r;
	}
	cmd = cli_shell_join(o->words, o->n_words);
	if (!cmd || job_file(dir, "cmd", &path) < 0)
		return pd_error_set(err, -ENOMEM, "out of memory");
	return cli_put(c, path, cmd, strlen(cmd), err);
}

static int stream_open(cli_client *c, CURLM *multi, const char *dir, const cli_job_stream *spec,
		       struct stream *s)
{
	_cleanup_free_ char *path = NULL, *url = NULL;

	s->spec = spec;
	s->h = curl_easy_init();
	if (!s->h || job_file(dir, spec->file, &path) < 0 || !(url = cli_tree_url(c, path)))
		return -ENOMEM;
	if (cli_client_setup(c, s->h, url, &s->headers) < 0)
		return -ENOMEM;
	curl_easy_setopt(s->h, CURLOPT_ERRORBUFFER, s->errbuf);
	curl_easy_setopt(s->h, CURLOPT_WRITEFUNCTION, stream_write);
	curl_easy_setopt(s->h, CURLOPT_WRITEDATA, s);
	curl_easy_setopt(s->h, CURLOPT_PRIVATE, s);
	if (curl_multi_add_handle(multi, s->h) != CURLM_OK)
		return -ENOMEM;
	return 0;
}

static void stream_release(CURLM *multi, struct stream *s)
{
	if (s->h) {
		curl_multi_remove_handle(multi, s->h);
		curl_easy_cleanup(s->h);
	}
	curl_slist_free_all(s->headers);
	pd_buf_free(&s->errbody);
}

void cli_job_ctl(cli_client *c, const char *dir, const char *line)
{
	pd_error err = {0};

	if (cli_job_put(c, dir, "ctl", line, &err) < 0)
		fprintf(stderr, "paddock: %s\n", err.msg[0] ? err.msg : "out of memory");
}

/* Follows the streams until they end. Returns 0, -errno with a reason,
 * or -EINTR when the user gave up. */
static int follow(cli_client *c, const char *dir, const cli_job_stream *specs, size_t n,
		  cli_interrupt_fn on_interrupt, void *user, pd_error *err)
{
	_cleanup_free_ struct stream *s = calloc(n, sizeof(*s));
	CURLM *multi = curl_multi_init();
	int running = 0, r = 0;
	unsigned seen = 0;

	if (!multi || !s) {
		r = pd_error_set(err, -ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		if (stream_open(c, multi, dir, &specs[i], &s[i]) < 0) {
			r = pd_error_set(err, -ENOMEM, "out of memory");
			goto out;
		}
	do {
		CURLMcode mc = curl_multi_perform(multi, &running);
		if (mc == CURLM_OK && running > 0)
			mc = curl_multi_poll(multi, NULL, 0, 200, NULL);
		if (mc != CURLM_OK) {
			r = pd_error_set(err, -EIO, "%s", curl_multi_strerror(mc));
			goto out;
		}
		CURLMsg *msg;
		int left;
		while ((msg = curl_multi_info_read(multi, &left)))
			if (msg->msg == CURLMSG_DONE)
				for (size_t i = 0; i < n; i++)
					if (msg->easy_handle == s[i].h)
						s[i].result = msg->data.result;
		while (seen < (unsigned)interrupts) {
			seen++;
			r = on_interrupt(c, dir, seen, user, err);
			if (r < 0)
				goto out;
		}
	} while (running > 0);

	for (size_t i = 0; i < n && r == 0; i++) {
		long status = 0;
		if (s[i].stopped)
			continue;
		curl_easy_getinfo(s[i].h, CURLINFO_RESPONSE_CODE, &status);
		r = cli_transfer_result(s[i].result, s[i].errbuf, status, s[i].errbody.data,
					s[i].errbody.len, err);
	}
out:
	for (size_t i = 0; s && i < n; i++)
		stream_release(multi, &s[i]);
	if (multi)
		curl_multi_cleanup(multi);
	return r;
}

int cli_job_follow(cli_client *c, const char *dir, const cli_job_stream *streams, size_t n,
		   cli_interrupt_fn on_interrupt, void *user, pd_error *err)
{
	interrupts = 0;
	cli_platform_interrupt_on(count_interrupt);
	int r = follow(c, dir, streams, n, on_interrupt, user, err);
	cli_platform_interrupt_off();
	return r;
}

int cli_job_exit(cli_client *c, const char *dir, int *ret, pd_error *err)
{
	_cleanup_free_ char *path = NULL, *code = NULL;
	int r;

	if (job_file(dir, "exit", &path) < 0)
		return pd_error_set(err, -ENOMEM, "out of memory");
	r = cli_get_value(c, path, &code, err);
	if (r < 0)
		return r;
	char *end;
	errno = 0;
	long v = strtol(code, &end, 10);
	if (errno != 0 || end == code || *end != '\0' || v < 0 || v > 255)
		return pd_error_set(err, -EPROTO, "unexpected exit code '%s'", code);
	*ret = (int)v;
	return 0;
}

/* exec's output: a closed stdout (`| head`) drops the rest; the job
 * still runs to its end. */
struct out_sink {
	FILE *f;
	bool discard;
};

static bool write_out(void *user, const char *data, size_t n)
{
	struct out_sink *o = user;

	if (!o->discard && (fwrite(data, 1, n, o->f) != n || fflush(o->f) != 0))
		o->discard = true;
	return true;
}

/* The first SIGINT sends "signal INT", the second "kill", the third
 * gives up. */
static int exec_interrupt(cli_client *c, const char *dir, unsigned nth, void *user, pd_error *err)
{
	(void)user;
	if (nth == 1) {
		fprintf(stderr, "paddock: sending SIGINT to the job (Ctrl-C again kills it)\n");
		cli_job_ctl(c, dir, "signal INT");
	} else if (nth == 2) {
		fprintf(stderr, "paddock: killing the job (Ctrl-C again stops waiting)\n");
		cli_job_ctl(c, dir, "kill");
	} else
		return pd_error_set(err, -EINTR, "stopped waiting; the job may still run");
	return 0;
}

int cli_exec(cli_client *c, const char *box, const cli_exec_opts *o, int *ret_exit,
	     bool *ret_started, pd_error *err)
{
	_cleanup_free_ char *ebox = NULL, *job = NULL, *dir = NULL;
	struct out_sink out = {.f = stdout}, errs = {.f = stderr};
	const cli_job_stream streams[] = {
	    {"stdout", write_out, &out},
	    {"stderr", write_out, &errs},
	};
	int r;

	*ret_started = false;
	ebox = cli_escape_segment(box);
	job = cli_random_name("cli-");
	if (!ebox || !job || asprintf(&dir, "boxes/%s/exec/%s/", ebox, job) < 0)
		return pd_error_set(err, -ENOMEM, "out of memory");

	r = cli_put(c, dir, NULL, 0, err);
	if (r < 0)
		return r;
	r = setup_job(c, dir, o, err);
	if (r < 0) {
		pd_error ignored = {0};
		cli_delete(c, dir, &ignored);
		return r;
	}
	*ret_started = true;

	r = cli_job_follow(c, dir, streams, ELEMENTSOF(streams), exec_interrupt, NULL, err);
	if (r < 0)
		return r;
	return cli_job_exit(c, dir, ret_exit, err);
}
