/* exec.c - a job in a box, followed live (see exec.h). */
#include <signal.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/exec.h"

static volatile sig_atomic_t interrupts;

static void on_sigint(int sig)
{
	(void)sig;
	interrupts++;
}

struct stream {
	CURL *h;
	FILE *out;
	bool checked, ok, discard, done;
	struct pd_buf errbody;
	char errbuf[CURL_ERROR_SIZE];
	struct curl_slist *headers;
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
	/* A closed stdout (`| head`) drops the rest; the job still runs to its end. */
	if (!s->discard && (fwrite(ptr, 1, n, s->out) != n || fflush(s->out) != 0))
		s->discard = true;
	return n;
}

static int job_file(const char *job_dir, const char *file, char **ret)
{
	if (asprintf(ret, "%s%s", job_dir, file) < 0)
		return -ENOMEM;
	return 0;
}

/* Writes the job's settings and cmd. */
static int setup_job(cli_client *c, const char *dir, const cli_exec_opts *o, pd_error *err)
{
	_cleanup_free_ char *path = NULL, *cmd = NULL;
	int r;

	if (o->n_env > 0) {
		_cleanup_free_ char *env = NULL;
		size_t len = 0;
		_cleanup_fclose_ FILE *m = open_memstream(&env, &len);
		if (!m)
			return pd_error_set(err, -ENOMEM, "out of memory");
		for (size_t i = 0; i < o->n_env; i++)
			fprintf(m, "%s\n", o->env[i]);
		fclose(TAKE_PTR(m));
		if (job_file(dir, "env", &path) < 0)
			return pd_error_set(err, -ENOMEM, "out of memory");
		r = cli_put(c, path, env, len, err);
		if (r < 0)
			return pd_error_prefix(err, "env");
		free(TAKE_PTR(path));
	}
	if (o->cwd) {
		if (job_file(dir, "cwd", &path) < 0)
			return pd_error_set(err, -ENOMEM, "out of memory");
		r = cli_put_value(c, path, o->cwd, err);
		if (r < 0)
			return pd_error_prefix(err, "cwd");
		free(TAKE_PTR(path));
	}
	if (o->desktop) {
		if (job_file(dir, "desktop", &path) < 0)
			return pd_error_set(err, -ENOMEM, "out of memory");
		r = cli_put_value(c, path, "1", err);
		if (r < 0)
			return pd_error_prefix(err, "desktop");
		free(TAKE_PTR(path));
	}
	cmd = cli_shell_join(o->words, o->n_words);
	if (!cmd || job_file(dir, "cmd", &path) < 0)
		return pd_error_set(err, -ENOMEM, "out of memory");
	return cli_put(c, path, cmd, strlen(cmd), err);
}

static int stream_open(cli_client *c, CURLM *multi, const char *dir, const char *name, FILE *out,
		       struct stream *s)
{
	_cleanup_free_ char *path = NULL, *url = NULL;

	s->out = out;
	s->h = curl_easy_init();
	if (!s->h || job_file(dir, name, &path) < 0 || !(url = cli_tree_url(c, path)))
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

/* Sends a ctl line to the job; failures are only reported. */
static void send_ctl(cli_client *c, const char *dir, const char *line)
{
	_cleanup_free_ char *path = NULL;
	pd_error err = {0};

	if (job_file(dir, "ctl", &path) < 0 || cli_put_value(c, path, line, &err) < 0)
		fprintf(stderr, "paddock: %s: %s\n", line, err.msg[0] ? err.msg : "out of memory");
}

/* Follows both streams until they end. Returns 0, -errno with a reason,
 * or -EINTR when the user gave up. */
static int follow(cli_client *c, const char *dir, pd_error *err)
{
	struct stream out = {0}, errs = {0};
	CURLM *multi = curl_multi_init();
	int running = 0, r = 0, seen = 0;
	CURLcode results[2] = {CURLE_OK, CURLE_OK};

	if (!multi)
		return pd_error_set(err, -ENOMEM, "out of memory");
	if (stream_open(c, multi, dir, "stdout", stdout, &out) < 0 ||
	    stream_open(c, multi, dir, "stderr", stderr, &errs) < 0) {
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
				results[msg->easy_handle == out.h ? 0 : 1] = msg->data.result;
		while (seen < interrupts) {
			seen++;
			if (seen == 1) {
				fprintf(
				    stderr,
				    "paddock: sending SIGINT to the job (Ctrl-C again kills it)\n");
				send_ctl(c, dir, "signal INT");
			} else if (seen == 2) {
				fprintf(stderr,
					"paddock: killing the job (Ctrl-C again stops waiting)\n");
				send_ctl(c, dir, "kill");
			} else {
				r = pd_error_set(err, -EINTR,
						 "stopped waiting; the job may still run");
				goto out;
			}
		}
	} while (running > 0);

	struct stream *streams[2] = {&out, &errs};
	for (int i = 0; i < 2 && r == 0; i++) {
		long status = 0;
		curl_easy_getinfo(streams[i]->h, CURLINFO_RESPONSE_CODE, &status);
		r = cli_transfer_result(results[i], streams[i]->errbuf, status,
					streams[i]->errbody.data, streams[i]->errbody.len, err);
	}
out:
	stream_release(multi, &out);
	stream_release(multi, &errs);
	curl_multi_cleanup(multi);
	return r;
}

int cli_exec(cli_client *c, const char *box, const cli_exec_opts *o, int *ret_exit,
	     bool *ret_started, pd_error *err)
{
	_cleanup_free_ char *ebox = NULL, *job = NULL, *dir = NULL, *exit_path = NULL, *code = NULL;
	struct sigaction sa = {.sa_handler = on_sigint}, old;
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

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old);
	interrupts = 0;
	r = follow(c, dir, err);
	if (r == 0) {
		if (job_file(dir, "exit", &exit_path) < 0)
			r = pd_error_set(err, -ENOMEM, "out of memory");
		else
			r = cli_get_value(c, exit_path, &code, err);
	}
	sigaction(SIGINT, &old, NULL);
	if (r < 0)
		return r;

	char *end;
	errno = 0;
	long v = strtol(code, &end, 10);
	if (errno != 0 || end == code || *end != '\0' || v < 0 || v > 255)
		return pd_error_set(err, -EPROTO, "unexpected exit code '%s'", code);
	*ret_exit = (int)v;
	return 0;
}
