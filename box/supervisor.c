/* supervisor.c - paddock-exec, the per-job supervisor (see supervisor.h).
 *
 * One process per job, single-threaded, driven by one poll() loop over a
 * signalfd (SIGCHLD, SIGUSR1, SIGTERM, SIGINT), the command's stdout and
 * stderr pipes, stdin.fifo and the command's stdin pipe.
 *
 * The command runs through the box's exec server (exec-proto.h) when the
 * spec names one that answers: the supervisor hands PID 1 the command and its
 * pipe ends over a unix socket, gets a pidfd of the command back and, once
 * it ends, its exact wait status. The connection sits in the same poll()
 * loop; SIGTERM and SIGINT are passed on through the pidfd.
 *
 * Otherwise (no server: a box started by an older daemon) the command runs
 * as `crun exec` without a terminal and without --detach:
 * crun stays the command's parent, proxies catchable signals it receives to
 * it, and exits with its exit code, or with 128+N when it was killed by
 * signal N (crun 1.8.1, checked on this host: `kill -9 $$` -> 137, `exit 3`
 * -> 3, SIGTERM to crun reaches the command's trap). crun cannot be told
 * apart from a command that itself exits 128+N; such a code is read as
 * "killed", as shells read $?. When crun fails before the command runs
 * (container missing, executable not found, bad cwd) it exits 1 or 255
 * without writing --pid-file: a missing pid file is how "could not start"
 * is recognised.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <linux/keyctl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#include "common/exec-proto.h"
#include "common/parse.h"
#include "box/agent-events.h"
#include "common/buf.h"
#include "box/supervisor.h"
#include "common/util.h"

#define SPEC_MAX (4 * 1024 * 1024)
#define CHUNK (64 * 1024)
/* The command's stdout and stderr pipes, and the most read from one at a
 * time: a fast writer then costs a read, two appends and the daemon's
 * wake-ups per MiB rather than per 64 KiB. */
#define STREAM_PIPE_SIZE (1024 * 1024)
#define REASON_MAX 512
#define CGROUP_UNIFIED "/sys/fs/cgroup/unified"
/* crun's own environment: nothing of the daemon's (LISTEN_FDS, for one,
 * would make crun pass extra fds into the box). */
#define CRUN_PATH "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

/* ---- spec.json ---- */

char **sup_strv_free(char **v)
{
	return strv_free(v);
}

struct sup_spec *sup_spec_free(struct sup_spec *spec)
{
	if (spec) {
		free(spec->container);
		free(spec->crun);
		free(spec->crun_root);
		free(spec->server);
		free(spec->user);
		free(spec->cwd);
		free(spec->events);
		/* env may hold secrets (sup_spec_add_env()). */
		sup_secrets_free(spec->env);
		sup_strv_free(spec->argv);
		free(spec);
	}
	return NULL;
}

static void spec_freep(struct sup_spec **p)
{
	sup_spec_free(*p);
}

/* A string member: *ret stays NULL when absent and not required. */
static int get_string(json_t *obj, const char *key, bool required, char **ret, pd_error *err)
{
	json_t *v = json_object_get(obj, key);
	const char *s;

	if (!v || json_is_null(v)) {
		if (required)
			return pd_error_set(err, -EINVAL, "spec.json: \"%s\" is missing", key);
		return 0;
	}
	if (!json_is_string(v))
		return pd_error_set(err, -EINVAL, "spec.json: \"%s\" must be a string", key);
	s = json_string_value(v);
	if (strlen(s) != json_string_length(v))
		return pd_error_set(err, -EINVAL, "spec.json: \"%s\" holds a NUL byte", key);
	*ret = strdup(s);
	if (!*ret)
		return pd_error_set(err, -ENOMEM, "out of memory");
	return 0;
}

static int get_strv(json_t *obj, const char *key, bool required, char ***ret, pd_error *err)
{
	json_t *v = json_object_get(obj, key);
	size_t n;
	char **strv;

	if (!v || json_is_null(v)) {
		if (required)
			return pd_error_set(err, -EINVAL, "spec.json: \"%s\" is missing", key);
		return 0;
	}
	if (!json_is_array(v))
		return pd_error_set(err, -EINVAL, "spec.json: \"%s\" must be an array", key);
	n = json_array_size(v);
	strv = calloc(n + 1, sizeof *strv);
	if (!strv)
		return pd_error_set(err, -ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		json_t *e = json_array_get(v, i);
		const char *s = json_is_string(e) ? json_string_value(e) : NULL;
		if (!s || strlen(s) != json_string_length(e)) {
			sup_strv_free(strv);
			return pd_error_set(err, -EINVAL,
					    "spec.json: \"%s\" must hold strings without NUL bytes",
					    key);
		}
		strv[i] = strdup(s);
		if (!strv[i]) {
			sup_strv_free(strv);
			return pd_error_set(err, -ENOMEM, "out of memory");
		}
	}
	*ret = strv;
	return 0;
}

/* "UID:GID", both decimal. */
static bool user_valid(const char *s)
{
	char part[16];
	const char *colon = strchr(s, ':');
	uint64_t v;

	if (!colon || (size_t)(colon - s) >= sizeof part)
		return false;
	memcpy(part, s, (size_t)(colon - s));
	part[colon - s] = '\0';
	return parse_uint64(part, UINT32_MAX - 1, &v) == 0 &&
	       parse_uint64(colon + 1, UINT32_MAX - 1, &v) == 0;
}

static int spec_validate(const struct sup_spec *spec, pd_error *err)
{
	if (!spec->container[0])
		return pd_error_set(err, -EINVAL, "spec.json: \"container\" is empty");
	if (spec->crun[0] != '/')
		return pd_error_set(err, -EINVAL, "spec.json: \"crun\" must be an absolute path");
	if (spec->crun_root[0] != '/')
		return pd_error_set(err, -EINVAL,
				    "spec.json: \"crun_root\" must be an absolute path");
	if (spec->server && spec->server[0] != '/')
		return pd_error_set(err, -EINVAL, "spec.json: \"server\" must be an absolute path");
	if (spec->cwd && spec->cwd[0] != '/')
		return pd_error_set(err, -EINVAL, "spec.json: \"cwd\" must be an absolute path");
	if (spec->user && !user_valid(spec->user))
		return pd_error_set(err, -EINVAL, "spec.json: \"user\" must be UID:GID, not %.40s",
				    spec->user);
	for (char **e = spec->env; e && *e; e++)
		if ((*e)[0] == '=' || !strchr(*e, '='))
			return pd_error_set(err, -EINVAL,
					    "spec.json: \"env\" entry %.40s is not KEY=VALUE", *e);
	if (!spec->argv[0] || !spec->argv[0][0])
		return pd_error_set(err, -EINVAL, "spec.json: \"argv\" is empty");
	return 0;
}

int sup_spec_parse(const char *text, size_t len, struct sup_spec **ret, pd_error *err)
{
	json_auto_t *root = NULL;
	_cleanup_(spec_freep) struct sup_spec *spec = NULL;
	json_error_t jerr;
	json_t *v;
	int r;

	root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root)
		return pd_error_set(err, -EINVAL, "spec.json: %s (line %d)", jerr.text, jerr.line);
	if (!json_is_object(root))
		return pd_error_set(err, -EINVAL, "spec.json: not an object");
	spec = calloc(1, sizeof *spec);
	if (!spec)
		return pd_error_set(err, -ENOMEM, "out of memory");
	spec->log_max = SUP_LOG_MAX_DEFAULT;

	if ((r = get_string(root, "container", true, &spec->container, err)) < 0 ||
	    (r = get_string(root, "crun", true, &spec->crun, err)) < 0 ||
	    (r = get_string(root, "crun_root", true, &spec->crun_root, err)) < 0 ||
	    (r = get_string(root, "server", false, &spec->server, err)) < 0 ||
	    (r = get_string(root, "user", false, &spec->user, err)) < 0 ||
	    (r = get_string(root, "cwd", false, &spec->cwd, err)) < 0 ||
	    (r = get_strv(root, "env", false, &spec->env, err)) < 0 ||
	    (r = get_strv(root, "argv", true, &spec->argv, err)) < 0 ||
	    (r = get_string(root, "events", false, &spec->events, err)) < 0)
		return r;
	if (spec->events && !name_valid(spec->events))
		return pd_error_set(err, -EINVAL, "spec.json: \"events\" must be an agent id");

	v = json_object_get(root, "private_ns");
	if (v && !json_is_null(v)) {
		if (!json_is_boolean(v))
			return pd_error_set(err, -EINVAL,
					    "spec.json: \"private_ns\" must be a boolean");
		spec->private_ns = json_is_true(v);
	}
	v = json_object_get(root, "log_max");
	if (v && !json_is_null(v)) {
		if (!json_is_integer(v) || json_integer_value(v) <= 0)
			return pd_error_set(err, -EINVAL,
					    "spec.json: \"log_max\" must be a positive integer");
		spec->log_max = (uint64_t)json_integer_value(v);
	}

	r = spec_validate(spec, err);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(spec);
	return 0;
}

/* ---- crun's command line ---- */

int sup_crun_argv(const struct sup_spec *spec, const char *jobdir, char ***ret)
{
	size_t nenv = 0, nargv = 0, n = 0;
	char **v;

	for (char **e = spec->env; e && *e; e++)
		nenv++;
	for (char **a = spec->argv; *a; a++)
		nargv++;
	/* crun, --root, --log, exec, --pid-file, --user, --cwd, --, NAME, NULL */
	v = calloc(nenv + nargv + 10, sizeof *v);
	if (!v)
		return -ENOMEM;

	v[n++] = strdup(spec->crun);
	if (asprintf(&v[n++], "--root=%s", spec->crun_root) < 0)
		v[n - 1] = NULL;
	if (asprintf(&v[n++], "--log=file:%s/crun.log", jobdir) < 0)
		v[n - 1] = NULL;
	v[n++] = strdup("exec");
	if (asprintf(&v[n++], "--pid-file=%s/pid", jobdir) < 0)
		v[n - 1] = NULL;
	if (spec->user && asprintf(&v[n++], "--user=%s", spec->user) < 0)
		v[n - 1] = NULL;
	if (spec->cwd && asprintf(&v[n++], "--cwd=%s", spec->cwd) < 0)
		v[n - 1] = NULL;
	for (char **e = spec->env; e && *e; e++)
		if (asprintf(&v[n++], "--env=%s", *e) < 0)
			v[n - 1] = NULL;
	v[n++] = strdup("--");
	v[n++] = strdup(spec->container);
	for (char **a = spec->argv; *a; a++)
		v[n++] = strdup(*a);

	/* Any failed allocation left a NULL hole before the end. */
	for (size_t i = 0; i < n; i++)
		if (!v[i]) {
			for (size_t k = i + 1; k < n; k++)
				free(v[k]);
			sup_strv_free(v);
			return -ENOMEM;
		}
	*ret = v;
	return 0;
}

/* ---- secrets (handed over by the daemon on a pipe) ---- */

void sup_secrets_free(char **v)
{
	if (!v)
		return;
	for (char **p = v; *p; p++) {
		explicit_bzero(*p, strlen(*p));
		free(*p);
	}
	free(v);
}

int sup_secrets_read(int fd, char ***ret)
{
	size_t len = 0, cap = 0, n = 0;
	char *buf = NULL, **v = NULL;
	int r = 0;

	for (;;) {
		if (len == cap) {
			size_t ncap = cap ? cap * 2 : 64 * 1024;
			char *nb;
			if (cap >= SUP_SECRETS_MAX) {
				r = -E2BIG;
				break;
			}
			/* Grown by hand, so that no copy is left unzeroed. */
			nb = malloc(ncap);
			if (!nb) {
				r = -ENOMEM;
				break;
			}
			if (buf) {
				memcpy(nb, buf, len);
				explicit_bzero(buf, len);
				free(buf);
			}
			buf = nb;
			cap = ncap;
		}
		ssize_t k = read(fd, buf + len, cap - len);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			r = -errno;
			break;
		}
		if (k == 0)
			break;
		len += (size_t)k;
	}
	close(fd);
	if (r >= 0 && len && buf[len - 1] != '\0')
		r = -EINVAL;
	for (size_t off = 0; r >= 0 && off < len; n++)
		off += strlen(buf + off) + 1;
	if (r >= 0) {
		v = calloc(n + 1, sizeof *v);
		if (!v)
			r = -ENOMEM;
	}
	for (size_t off = 0, i = 0; r >= 0 && off < len; i++) {
		const char *entry = buf + off, *eq = strchr(entry, '=');
		off += strlen(entry) + 1;
		if (!eq || eq == entry) {
			r = -EINVAL;
			break;
		}
		v[i] = strdup(entry);
		if (!v[i])
			r = -ENOMEM;
	}
	if (buf) {
		explicit_bzero(buf, cap);
		free(buf);
	}
	if (r < 0) {
		sup_secrets_free(v);
		return r;
	}
	*ret = v;
	return 0;
}

int sup_spec_add_env(struct sup_spec *spec, char *const *secrets)
{
	static const char *const default_env[] = {CRUN_PATH, NULL};
	const char *const *env = spec->env ? (const char *const *)spec->env : default_env;
	size_t n = 0, m = 0, k = 0;
	char **v;

	for (const char *const *p = env; *p; p++)
		n++;
	for (char *const *p = secrets; p && *p; p++)
		m++;
	if (!m)
		return 0;
	v = calloc(n + m + 1, sizeof *v);
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (!(v[k++] = strdup(env[i])))
			goto oom;
	for (size_t i = 0; i < m; i++) {
		size_t name = strcspn(secrets[i], "=") + 1; /* with the '=' */
		bool set = false;
		for (size_t j = 0; j < n && !set; j++)
			set = strncmp(env[j], secrets[i], name) == 0;
		if (!set && !(v[k++] = strdup(secrets[i])))
			goto oom;
	}
	sup_secrets_free(spec->env);
	spec->env = v;
	return 0;
oom:
	sup_secrets_free(v);
	return -ENOMEM;
}

/* ---- the exec server's request ---- */

int sup_exec_request(const struct sup_spec *spec, char **ret, size_t *ret_len)
{
	static const char *const default_env[] = {CRUN_PATH, NULL};
	const char *const *env = spec->env ? (const char *const *)spec->env : default_env;
	unsigned long uid = 0, gid = 0;

	if (spec->user) {
		/* Validated: "UID:GID", both decimal (user_valid()). */
		uid = strtoul(spec->user, NULL, 10);
		gid = strtoul(spec->user + strcspn(spec->user, ":") + 1, NULL, 10);
	}
	return exec_proto_request((unsigned)uid, (unsigned)gid, spec->cwd,
				  (const char *const *)spec->argv, env, ret, ret_len);
}

/* ---- capped stream files ---- */

size_t sup_cap_keep(uint64_t used, uint64_t max, size_t len)
{
	if (used >= max)
		return 0;
	if ((uint64_t)len > max - used)
		return (size_t)(max - used);
	return len;
}

static void log_write(struct sup_log *log, const char *text, size_t len)
{
	int r = write_all(log->fd, text, len);
	if (r < 0 && !log->error)
		log->error = r;
}

void sup_log_append(struct sup_log *log, const void *buf, size_t len)
{
	size_t keep = sup_cap_keep(log->stored, log->max, len);

	if (keep > 0) {
		int r = write_all(log->fd, buf, keep);
		if (r < 0) {
			if (!log->error)
				log->error = r;
			log->dropped += keep;
		} else {
			log->stored += keep;
			log->mid_line = ((const char *)buf)[keep - 1] != '\n';
		}
	}
	if (keep < len) {
		if (!log->marked) {
			char m[160];
			int n = snprintf(m, sizeof m,
					 "\n[paddock: %s capped at %" PRIu64
					 " bytes; the rest is dropped]\n",
					 log->name, log->max);
			log_write(log, m, (size_t)n);
			log->marked = true;
			log->mid_line = false;
		}
		log->dropped += len - keep;
	}
}

void sup_log_note(struct sup_log *log, const char *text)
{
	if (log->mid_line)
		log_write(log, "\n", 1);
	log_write(log, text, strlen(text));
	log->mid_line = text[0] && text[strlen(text) - 1] != '\n';
}

void sup_log_finish(struct sup_log *log)
{
	char m[80];

	if (log->dropped == 0)
		return;
	snprintf(m, sizeof m, "[paddock: %" PRIu64 " bytes dropped]\n", log->dropped);
	sup_log_note(log, m);
}

/* ---- results ---- */

struct sup_result sup_result_from_wait(int wstatus, bool started)
{
	if (WIFSIGNALED(wstatus))
		return (struct sup_result){.killed = true, .code = WTERMSIG(wstatus)};
	if (!started || !WIFEXITED(wstatus))
		return (struct sup_result){.code = SUP_EXIT_CANNOT_START};
	int code = WEXITSTATUS(wstatus);
	if (code > 128 && code - 128 <= SIGRTMAX)
		return (struct sup_result){.killed = true, .code = code - 128};
	return (struct sup_result){.code = code};
}

struct sup_result sup_result_from_server(int wstatus)
{
	if (WIFSIGNALED(wstatus))
		return (struct sup_result){.killed = true, .code = WTERMSIG(wstatus)};
	if (WIFEXITED(wstatus))
		return (struct sup_result){.code = WEXITSTATUS(wstatus)};
	return (struct sup_result){.code = SUP_EXIT_CANNOT_START};
}

int sup_result_exit_code(struct sup_result res)
{
	return res.killed ? 128 + res.code : res.code;
}

void sup_signal_name(int sig, char *buf, size_t bufsz)
{
	const char *abbrev = NULL;

#if defined(__GLIBC__) && __GLIBC_PREREQ(2, 32)
	abbrev = sigabbrev_np(sig);
#endif
	if (abbrev)
		snprintf(buf, bufsz, "SIG%s", abbrev);
	else
		snprintf(buf, bufsz, "SIG%d", sig);
}

void sup_format_status(struct sup_result res, char *buf, size_t bufsz)
{
	char name[16];

	if (!res.killed) {
		snprintf(buf, bufsz, "exited %d\n", res.code);
		return;
	}
	sup_signal_name(res.code, name, sizeof name);
	snprintf(buf, bufsz, "killed %s\n", name);
}

/* ---- records ---- */

int sup_write_record(int dirfd, const char *name, const char *text)
{
	char tmp[NAME_MAX_LEN + 16];
	_cleanup_close_ int fd = -1;
	int r;

	if (snprintf(tmp, sizeof tmp, ".%s.tmp", name) >= (int)sizeof tmp)
		return -ENAMETOOLONG;
	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY, 0644);
	if (fd < 0)
		return -errno;
	r = write_all(fd, text, strlen(text));
	if (r >= 0 && close(TAKE_FD(fd)) < 0)
		r = -errno;
	if (r >= 0 && renameat(dirfd, tmp, dirfd, name) < 0)
		r = -errno;
	if (r < 0)
		unlinkat(dirfd, tmp, 0);
	return r;
}

static int write_time(int dirfd, const char *name, time_t t)
{
	char buf[32];

	format_rfc3339(t, buf, sizeof buf - 1);
	strcat(buf, "\n");
	return sup_write_record(dirfd, name, buf);
}

/* ---- detaching ---- */

/* The supervisor's signal setup, in force before supervisor.pid exists: a
 * SIGUSR1 or SIGTERM sent as soon as the pid is known stays pending for the
 * signalfd instead of killing the supervisor. Ignored dispositions survive
 * exec: the crun child resets them. */
static int block_signals(sigset_t *ret_mask)
{
	sigset_t mask;

	signal(SIGPIPE, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGCHLD, SIG_DFL);
	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGUSR1);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	if (sigprocmask(SIG_SETMASK, &mask, NULL) < 0)
		return -errno;
	if (ret_mask)
		*ret_mask = mask;
	return 0;
}

int sup_detach(int dirfd)
{
	_cleanup_close_ int devnull = -1;
	int p[2], r;
	char pidbuf[32];
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		r = -errno;
		close(p[0]);
		close(p[1]);
		return r;
	}
	if (pid > 0) {
		char c;
		ssize_t n;

		close(p[1]);
		do
			n = read(p[0], &c, 1);
		while (n < 0 && errno == EINTR);
		r = n == 1 ? 1 : n < 0 ? -errno : -EIO;
		close(p[0]);
		/* A child that failed has exited (EOF): reap it. One that is up
		 * runs on, and is no longer ours to wait for. */
		if (r < 0)
			(void)waitpid(pid, NULL, 0);
		return r;
	}

	close(p[0]);
	/* The child: from here on it is the supervisor. Its failures are
	 * reported to the parent by closing the pipe without a byte. */
	r = block_signals(/* ret_mask= */ NULL);
	if (r < 0)
		return r;
	if (setsid() < 0)
		return -errno;
	/* Held until the supervisor exits: one supervisor per job, and a
	 * liveness test for the daemon that no reused PID can fool. */
	if (flock(dirfd, LOCK_EX | LOCK_NB) < 0)
		return errno == EWOULDBLOCK ? -EBUSY : -errno;
	devnull = open("/dev/null", O_RDWR | O_CLOEXEC | O_NOCTTY);
	if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(devnull, 1) < 0 || dup2(devnull, 2) < 0)
		return -errno;
	snprintf(pidbuf, sizeof pidbuf, "%d\n", (int)getpid());
	r = sup_write_record(dirfd, "supervisor.pid", pidbuf);
	if (r < 0)
		return r;
	if (write(p[1], "1", 1) != 1)
		return -errno;
	close(p[1]);
	return 0;
}

/* ---- lines of an agent's stdout ---- */

void sup_lines_feed(struct sup_lines *l, const char *data, size_t len,
		    void (*fn)(const char *line, size_t len, void *userdata), void *userdata)
{
	while (len > 0) {
		const char *nl = memchr(data, '\n', len);
		size_t n = nl ? (size_t)(nl - data) : len;

		if (!l->skipping && l->len + n > l->max) {
			l->skipping = true;
			l->skipped++;
			l->len = 0;
		}
		if (!l->skipping) {
			if (l->len + n > l->cap) {
				size_t cap = l->cap ? l->cap : 4096;
				while (cap < l->len + n)
					cap *= 2;
				char *b = realloc(l->buf, cap);
				if (!b) { /* dropped like an overlong line */
					l->skipping = true;
					l->skipped++;
					l->len = 0;
				} else {
					l->buf = b;
					l->cap = cap;
				}
			}
			if (!l->skipping) {
				memcpy(l->buf + l->len, data, n);
				l->len += n;
			}
		}
		if (!nl)
			return;
		if (!l->skipping)
			fn(l->buf ? l->buf : "", l->len, userdata);
		l->skipping = false;
		l->len = 0;
		data = nl + 1;
		len -= n + 1;
	}
}

void sup_lines_finish(struct sup_lines *l, void (*fn)(const char *line, size_t len, void *userdata),
		      void *userdata)
{
	if (!l->skipping && l->len > 0)
		fn(l->buf, l->len, userdata);
	l->skipping = false;
	l->len = 0;
}

void sup_lines_release(struct sup_lines *l)
{
	free(l->buf);
	*l = (struct sup_lines){.max = l->max};
}

/* ---- the job ---- */

struct job {
	const char *dir;
	int dirfd;
	struct sup_spec *spec;
	struct sup_log out, err, all;
	int sigfd, fifo;
	int in_w, out_r, err_r; /* our ends of the command's pipes */
	char *inbuf;		/* stdin bytes not yet taken by the command */
	size_t in_start, in_len;
	bool fifo_empty; /* the last read of stdin.fifo found nothing */
	bool eof_requested;
	pid_t child;
	/* Through the exec server: the connection, the command's pidfd, and
	 * whether it reported the command running / unable to start. */
	bool via_server;
	int conn, pidfd;
	bool server_pid, server_failed;
	bool exited;
	int wstatus;
	time_t ended;
	unsigned long long deadline; /* stop draining output, now_usec() */
	/* The stream held (SUP_STREAM_HOLD_USEC): &out_r, &err_r or NULL, and
	 * until when (now_usec()). */
	int *held;
	unsigned long long hold_until;
	unsigned long long out_last, err_last; /* now_usec() of the last read with data */
	char why[REASON_MAX];		       /* why the command could not start */
	bool secrets;			       /* its env holds secrets: the server only */
	/* "events": the normalizer, its output file and stdout's lines. */
	struct agent_events *norm;
	struct sup_log ev;
	struct sup_lines lines;
	uint64_t noted_skipped;
};

static void close_fd(int *fd)
{
	if (*fd >= 0) {
		close(*fd);
		*fd = -1;
	}
}

static void job_release(struct job *j)
{
	close_fd(&j->out.fd);
	close_fd(&j->err.fd);
	close_fd(&j->all.fd);
	close_fd(&j->sigfd);
	close_fd(&j->fifo);
	close_fd(&j->in_w);
	close_fd(&j->out_r);
	close_fd(&j->err_r);
	close_fd(&j->conn);
	close_fd(&j->pidfd);
	close_fd(&j->ev.fd);
	agent_events_free(j->norm);
	j->norm = NULL;
	sup_lines_release(&j->lines);
	free(j->inbuf);
	j->inbuf = NULL;
	j->spec = sup_spec_free(j->spec);
}

static int open_stream(struct job *j, struct sup_log *log, const char *name)
{
	struct stat st;
	int fd = openat(j->dirfd, name, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY, 0644);

	if (fd < 0)
		return -errno;
	*log = (struct sup_log){.fd = fd, .name = name, .max = SUP_LOG_MAX_DEFAULT};
	/* A file that already holds bytes (the daemon's, or a rerun) counts
	 * against the cap. */
	if (fstat(fd, &st) == 0)
		log->stored = (uint64_t)st.st_size;
	return 0;
}

static int open_streams(struct job *j)
{
	int r;

	if ((r = open_stream(j, &j->out, "stdout")) < 0 ||
	    (r = open_stream(j, &j->err, "stderr")) < 0 ||
	    (r = open_stream(j, &j->all, "output")) < 0)
		return r;
	return 0;
}

static int load_spec(struct job *j)
{
	_cleanup_free_ char *text = NULL;
	size_t len;
	pd_error err = {0};
	int r;

	r = read_file_at(j->dirfd, "spec.json", SPEC_MAX, &text, &len);
	if (r < 0) {
		snprintf(j->why, sizeof j->why, "cannot read spec.json: %s", strerror(-r));
		return r;
	}
	r = sup_spec_parse(text, len, &j->spec, &err);
	if (r < 0) {
		snprintf(j->why, sizeof j->why, "%s", err.msg);
		return r;
	}
	j->out.max = j->err.max = j->all.max = j->spec->log_max;
	return 0;
}

static int setup_signals(struct job *j)
{
	sigset_t mask;
	int r;

	r = block_signals(&mask);
	if (r < 0)
		return r;
	j->sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (j->sigfd < 0)
		return -errno;
	return 0;
}

static int open_fifo(struct job *j)
{
	struct stat st;

	if (mkfifoat(j->dirfd, "stdin.fifo", 0600) < 0) {
		if (errno != EEXIST)
			return -errno;
		if (fstatat(j->dirfd, "stdin.fifo", &st, AT_SYMLINK_NOFOLLOW) < 0)
			return -errno;
		if (!S_ISFIFO(st.st_mode))
			return -EEXIST;
	}
	/* Read-write: the supervisor is a writer itself, so writers coming
	 * and going never make it see EOF, and opening for writing never
	 * blocks while the supervisor runs. */
	j->fifo = openat(j->dirfd, "stdin.fifo", O_RDWR | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (j->fifo < 0)
		return -errno;
	return 0;
}

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

/* In the forked child: never returns. Failures before exec are written to
 * errfd for the supervisor to record. */
static _Noreturn void child_exec(const struct job *j, char **argv, int in_r, int out_w, int err_w,
				 int errfd)
{
	static char *const envp[] = {(char *)CRUN_PATH, NULL};
	char msg[REASON_MAX];
	sigset_t none;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	/* crun refuses hybrid cgroup hosts whose v2 tree holds controllers;
	 * hiding the v2 tree in a private mount namespace fixes that for this
	 * crun alone (as runtime-crun.c does). Nothing mounted there is
	 * nothing to hide. */
	if (j->spec->private_ns) {
		if (unshare(CLONE_NEWNS) < 0 ||
		    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
		    (umount2(CGROUP_UNIFIED, MNT_DETACH) < 0 && errno != EINVAL &&
		     errno != ENOENT)) {
			snprintf(msg, sizeof msg, "cannot prepare crun's mount namespace: %s",
				 strerror(errno));
			(void)!write(errfd, msg, strlen(msg));
			_exit(125);
		}
	}
	/* A session keyring of the job's own: crun exec hands the command the
	 * caller's, and the daemon's session keyring (with whatever keys it
	 * holds) would be the box's. A kernel without keys has none to give. */
	if (syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, NULL) < 0 && errno != ENOSYS) {
		snprintf(msg, sizeof msg, "cannot make the job's session keyring: %s",
			 strerror(errno));
		(void)!write(errfd, msg, strlen(msg));
		_exit(125);
	}
	if (dup2(in_r, 0) < 0 || dup2(out_w, 1) < 0 || dup2(err_w, 2) < 0) {
		snprintf(msg, sizeof msg, "cannot set up the command's stdio: %s", strerror(errno));
		(void)!write(errfd, msg, strlen(msg));
		_exit(125);
	}
	execve(argv[0], argv, envp);
	snprintf(msg, sizeof msg, "cannot run %s: %s", argv[0], strerror(errno));
	(void)!write(errfd, msg, strlen(msg));
	_exit(127);
}

/* Starts crun exec with the command's pipe ends. On failure j->why says
 * why. */
static int spawn(struct job *j, int in_r, int out_w, int err_w)
{
	char **argv = NULL;
	int ep[2], r;
	pid_t pid;
	ssize_t n;

	r = sup_crun_argv(j->spec, j->dir, &argv);
	if (r < 0) {
		snprintf(j->why, sizeof j->why, "out of memory");
		return r;
	}
	if (pipe2(ep, O_CLOEXEC) < 0) {
		r = -errno;
		snprintf(j->why, sizeof j->why, "cannot create a pipe: %s", strerror(-r));
		sup_strv_free(argv);
		return r;
	}
	pid = fork();
	if (pid < 0) {
		r = -errno;
		snprintf(j->why, sizeof j->why, "cannot fork: %s", strerror(-r));
		close(ep[0]);
		close(ep[1]);
		sup_strv_free(argv);
		return r;
	}
	if (pid == 0)
		child_exec(j, argv, in_r, out_w, err_w, ep[1]);
	close(ep[1]);
	sup_strv_free(argv);

	/* EOF at exec (close-on-exec), or the child's reason first. */
	do
		n = read(ep[0], j->why, sizeof j->why - 1);
	while (n < 0 && errno == EINTR);
	close(ep[0]);
	if (n > 0) {
		j->why[n] = '\0';
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		return -EIO;
	}
	j->why[0] = '\0';
	j->child = pid;
	return 0;
}

static void close_stdin(struct job *j)
{
	close_fd(&j->in_w);
	j->in_start = j->in_len = 0;
}

/* Hands the command to the exec server: 1 when it took it (the reply comes
 * through the loop), 0 when there is no server (start with crun), or -errno
 * with j->why set. */
static int server_send(struct job *j, const char *req, size_t len, const int fds[3]);

static int server_start(struct job *j, int in_r, int out_w, int err_w)
{
	_cleanup_free_ char *req = NULL;
	int fds[3] = {in_r, out_w, err_w}, r;
	size_t len;

	r = sup_exec_request(j->spec, &req, &len);
	if (r < 0) {
		snprintf(j->why, sizeof j->why, "%s",
			 r == -E2BIG ? "the command and its environment are too large"
				     : "out of memory");
		return r;
	}
	r = server_send(j, req, len, fds);
	explicit_bzero(req, len); /* the environment: maybe secrets */
	return r;
}

static int server_send(struct job *j, const char *req, size_t len, const int fds[3])
{
	int conn, r;

	conn = exec_proto_connect(j->spec->server);
	if ((conn == -ENOENT || conn == -ECONNREFUSED) && j->secrets) {
		snprintf(j->why, sizeof j->why,
			 "the box's exec server is not there (a box started by an older "
			 "paddockd?): a job with secrets runs only through it, as crun exec "
			 "would show them on its command line; restart the box");
		return -EOPNOTSUPP;
	}
	if (conn == -ENOENT || conn == -ECONNREFUSED)
		return 0;
	if (conn < 0) {
		snprintf(j->why, sizeof j->why, "cannot reach the box's exec server: %s",
			 strerror(-conn));
		return conn;
	}
	r = exec_proto_send(conn, req, len, fds);
	if (r < 0) {
		snprintf(j->why, sizeof j->why, "cannot send the command to the box: %s",
			 strerror(-r));
		close(conn);
		return r;
	}
	j->conn = conn;
	j->via_server = true;
	return 1;
}

/* The command ended (or, with PID 1 gone, ended with the box). */
static void mark_exited(struct job *j, int wstatus)
{
	j->exited = true;
	j->wstatus = wstatus;
	j->ended = time(NULL);
	j->deadline = now_usec() + SUP_DRAIN_MSEC * 1000ULL;
	close_stdin(j);
}

/* One reply of the exec server (exec-proto.h). */
static void on_server(struct job *j)
{
	char buf[REASON_MAX + 16];
	pid_t pid;
	int fd;
	ssize_t n = exec_proto_recv(j->conn, MSG_DONTWAIT, buf, sizeof buf, &fd, &pid);

	if (n == -EAGAIN || n == -EINTR)
		return;
	if (n <= 0) {
		/* PID 1 is gone, and the box with it: a command that ran was
		 * killed with the box. */
		close_fd(&j->conn);
		if (fd >= 0)
			close(fd);
		if (!j->server_pid && !j->server_failed) {
			j->server_failed = true;
			snprintf(j->why, sizeof j->why, "the box stopped before the command ran");
		}
		if (!j->exited)
			mark_exited(j, SIGKILL); /* a wait status: killed by SIGKILL */
		return;
	}
	if (strcmp(buf, "pid") == 0 && fd >= 0 && j->pidfd < 0) {
		j->pidfd = fd;
		return;
	}
	if (strcmp(buf, "run") == 0 && pid > 0 && !j->server_pid) {
		char line[32];
		snprintf(line, sizeof line, "%d\n", (int)pid);
		(void)sup_write_record(j->dirfd, "pid", line);
		j->server_pid = true;
	}
	if (fd >= 0)
		close(fd);
	if (strncmp(buf, "error ", 6) == 0) {
		j->server_failed = true;
		snprintf(j->why, sizeof j->why, "%.*s", (int)sizeof j->why - 1, buf + 6);
	} else if (strncmp(buf, "exit ", 5) == 0 && !j->exited) {
		mark_exited(j, (int)strtol(buf + 5, NULL, 10));
		close_fd(&j->conn);
	}
}

/* Creates the pipes and stdin.fifo, then starts the command. */
static int start(struct job *j)
{
	int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
	int r;

	r = open_fifo(j);
	if (r < 0) {
		snprintf(j->why, sizeof j->why, "cannot create stdin.fifo: %s", strerror(-r));
		return r;
	}
	if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0 ||
	    set_nonblock(in[1]) < 0 || set_nonblock(out[0]) < 0 || set_nonblock(err[0]) < 0) {
		r = -errno;
		snprintf(j->why, sizeof j->why, "cannot create pipes: %s", strerror(-r));
		goto out;
	}
	/* Best effort: the default size works, only slower. */
	(void)fcntl(out[0], F_SETPIPE_SZ, STREAM_PIPE_SIZE);
	(void)fcntl(err[0], F_SETPIPE_SZ, STREAM_PIPE_SIZE);
	/* crun writes these; stale ones would fake a start or a reason. */
	(void)unlinkat(j->dirfd, "pid", 0);
	(void)unlinkat(j->dirfd, "crun.log", 0);
	r = j->spec->server ? server_start(j, in[0], out[1], err[1]) : 0;
	if (r == 0)
		r = spawn(j, in[0], out[1], err[1]);
	if (r >= 0) {
		j->in_w = TAKE_FD(in[1]);
		j->out_r = TAKE_FD(out[0]);
		j->err_r = TAKE_FD(err[0]);
		/* A prompt's agent has its text in argv and an empty stdin:
		 * an agent that reads a piped stdin to its end before it
		 * starts (codex exec does) would otherwise wait for ever. */
		if (j->spec->events)
			j->eof_requested = true;
	}
out:
	for (int i = 0; i < 2; i++) {
		closep(&in[i]);
		closep(&out[i]);
		closep(&err[i]);
	}
	return r;
}

static void on_signals(struct job *j)
{
	struct signalfd_siginfo si;
	int st;
	pid_t p;

	while (read(j->sigfd, &si, sizeof si) == (ssize_t)sizeof si) {
		switch (si.ssi_signo) {
		case SIGCHLD:
			while ((p = waitpid(-1, &st, WNOHANG)) > 0) {
				if (p != j->child || j->via_server)
					continue;
				mark_exited(j, st);
			}
			break;
		case SIGTERM:
		case SIGINT:
			/* crun proxies it to the command; the job ends, and is
			 * recorded, when the command does. */
			if (j->exited)
				break;
			if (j->pidfd >= 0)
				(void)syscall(SYS_pidfd_send_signal, j->pidfd, (int)si.ssi_signo,
					      NULL, 0);
			else if (j->child > 0)
				(void)kill(j->child, (int)si.ssi_signo);
			break;
		case SIGUSR1:
			j->eof_requested = true;
			break;
		}
	}
}

/* One complete stdout line of the agent: its events to `events`. */
static void on_agent_line(const char *line, size_t len, void *userdata)
{
	struct job *j = userdata;
	struct pd_buf out = {0};
	char t[64];

	format_rfc3339_ms_now(t, sizeof t);
	(void)agent_events_line(j->norm, line, len, t, &out);
	if (out.len)
		sup_log_append(&j->ev, out.data, out.len);
	pd_buf_free(&out);
}

/* Feeds stdout bytes to the normalizer, noting lines it skipped. */
static void events_feed(struct job *j, const char *buf, size_t n)
{
	char note[128];

	if (!j->norm)
		return;
	sup_lines_feed(&j->lines, buf, n, on_agent_line, j);
	if (j->lines.skipped > j->noted_skipped) {
		j->noted_skipped = j->lines.skipped;
		snprintf(note, sizeof note,
			 "[paddock: a stdout line over %d bytes was not read for events]\n",
			 SUP_EVENT_LINE_MAX);
		sup_log_note(&j->all, note);
	}
}

/* Reads one chunk of a stream into its file and into output. */
static ssize_t pump_once(struct job *j, int *fd, struct sup_log *log)
{
	static char buf[STREAM_PIPE_SIZE];
	ssize_t n = read(*fd, buf, sizeof buf);

	if (n > 0) {
		sup_log_append(log, buf, (size_t)n);
		sup_log_append(&j->all, buf, (size_t)n);
		if (log == &j->out)
			events_feed(j, buf, (size_t)n);
	} else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
		close_fd(fd);
	}
	return n;
}

/* Batching a stream that keeps coming (see sup_hold_usec() in supervisor.h).
 *
 * output keeps the order of the two streams as well as reading each as it
 * comes did: when both hold bytes at a wake-up, stdout is read first. So only
 * stdout is held (stderr only once stdout is closed), stderr is watched
 * throughout, and when it has something, what stdout held is read first: the
 * same as a supervisor that was slow to wake up would have read. Holding
 * stderr too would read it first in that case, and a stdout line written
 * before a later stderr line could then follow it. */
unsigned long long sup_hold_usec(size_t n, unsigned long long elapsed)
{
	unsigned long long hold;

	if (n == 0 || n >= SUP_STREAM_BATCH)
		return 0;
	if (elapsed >= SUP_STREAM_HOLD_USEC)
		return SUP_STREAM_HOLD_USEC;
	hold = elapsed * SUP_STREAM_BATCH / n;
	if (hold < SUP_STREAM_HOLD_MIN_USEC)
		return 0;
	return hold < SUP_STREAM_HOLD_USEC ? hold : SUP_STREAM_HOLD_USEC;
}

/* Reads stream fd (readable), after what the other stream held, and holds
 * stdout after a short read (sup_hold_usec()). */
static void pump(struct job *j, int *fd, struct sup_log *log)
{
	unsigned long long *last = fd == &j->out_r ? &j->out_last : &j->err_last;
	unsigned long long now, hold;
	ssize_t n;

	if (j->held && j->held != fd && *j->held >= 0)
		(void)pump_once(j, j->held, j->held == &j->out_r ? &j->out : &j->err);
	j->held = NULL;
	n = pump_once(j, fd, log);
	if (n <= 0)
		return;
	now = now_usec();
	hold = j->exited ? 0 : sup_hold_usec((size_t)n, *last ? now - *last : ULLONG_MAX);
	*last = now;
	if (hold && (fd == &j->out_r || j->out_r < 0)) {
		j->held = fd;
		j->hold_until = now + hold;
	}
}

/* Takes what stdin.fifo holds, as far as the buffer has room. With the
 * command's stdin closed (EOF given, the job over, or EPIPE), reads and drops
 * it so writers never block.
 *
 * crun exec keeps its own copy of the stdin pipe's read end for as long as it
 * runs, so a command that closes its stdin without exiting is not noticed:
 * its input fills the pipe and the buffer, then writers of stdin.fifo wait
 * until the command reads, gets EOF or ends. */
static void fifo_read(struct job *j)
{
	static char scratch[CHUNK];
	ssize_t n;

	if (j->in_w >= 0 && !j->inbuf)
		j->inbuf = malloc(SUP_STDIN_BUF_MAX);
	if (j->in_w < 0 || !j->inbuf) {
		while ((n = read(j->fifo, scratch, sizeof scratch)) > 0)
			;
		j->fifo_empty = true;
		return;
	}
	if (j->in_start > 0 && j->in_start + j->in_len == SUP_STDIN_BUF_MAX) {
		memmove(j->inbuf, j->inbuf + j->in_start, j->in_len);
		j->in_start = 0;
	}
	size_t room = SUP_STDIN_BUF_MAX - j->in_start - j->in_len;
	if (room == 0)
		return;
	n = read(j->fifo, j->inbuf + j->in_start + j->in_len, room);
	if (n > 0)
		j->in_len += (size_t)n;
	j->fifo_empty = n < 0 && errno == EAGAIN;
}

static void stdin_write(struct job *j)
{
	ssize_t n;

	if (j->in_w < 0 || j->in_len == 0)
		return;
	n = write(j->in_w, j->inbuf + j->in_start, j->in_len);
	if (n > 0) {
		j->in_start += (size_t)n;
		j->in_len -= (size_t)n;
		if (j->in_len == 0)
			j->in_start = 0;
	} else if (n < 0 && errno != EAGAIN && errno != EINTR) {
		/* EPIPE: the command closed its stdin; what it did not
		 * take is dropped. */
		close_stdin(j);
	}
}

/* Runs until crun exec has exited and its output is drained. After crun
 * exits, output is collected until both pipes reach EOF but for at most
 * SUP_DRAIN_MSEC: a background process the command left behind (`sleep 600
 * &`) inherits the pipes and would otherwise keep a finished job "running"
 * for as long as it lives. What it writes later is lost; the job has ended. */
static void loop(struct job *j)
{
	for (;;) {
		struct pollfd p[6];
		int np = 0, isig, iout = -1, ierr = -1, ififo = -1, iin = -1, iconn = -1;
		unsigned long long now = now_usec(), wait = ULLONG_MAX; /* usec */

		if (j->exited) {
			if ((j->out_r < 0 && j->err_r < 0) || now >= j->deadline)
				return;
			wait = j->deadline - now;
			/* Draining: the command is gone, batching gains nothing. */
			j->held = NULL;
		}
		if (j->held && (now >= j->hold_until || *j->held < 0))
			j->held = NULL;
		if (j->held && j->hold_until - now < wait)
			wait = j->hold_until - now;
		/* End of stdin asked for and nothing buffered: look at the
		 * FIFO once more right away (below) instead of waiting. */
		if (j->eof_requested && j->in_w >= 0 && j->in_len == 0)
			wait = 0;
		isig = np;
		p[np++] = (struct pollfd){.fd = j->sigfd, .events = POLLIN};
		if (j->out_r >= 0 && j->held != &j->out_r) {
			iout = np;
			p[np++] = (struct pollfd){.fd = j->out_r, .events = POLLIN};
		}
		if (j->err_r >= 0 && j->held != &j->err_r) {
			ierr = np;
			p[np++] = (struct pollfd){.fd = j->err_r, .events = POLLIN};
		}
		if (j->in_w < 0 || j->in_len < SUP_STDIN_BUF_MAX) {
			ififo = np;
			p[np++] = (struct pollfd){.fd = j->fifo, .events = POLLIN};
		}
		if (j->conn >= 0) {
			iconn = np;
			p[np++] = (struct pollfd){.fd = j->conn, .events = POLLIN};
		}
		if (j->in_w >= 0 && j->in_len > 0) {
			iin = np;
			p[np++] = (struct pollfd){.fd = j->in_w, .events = POLLOUT};
		}

		struct timespec ts = {.tv_sec = (time_t)(wait / 1000000),
				      .tv_nsec = (long)(wait % 1000000) * 1000};
		if (ppoll(p, (nfds_t)np, wait == ULLONG_MAX ? NULL : &ts, NULL) < 0) {
			if (errno == EINTR)
				continue;
			/* Cannot happen with valid fds; do not spin. */
			sleep(1);
			continue;
		}
		if (p[isig].revents)
			on_signals(j);
		if (iconn >= 0 && p[iconn].revents && j->conn >= 0)
			on_server(j);
		if (iout >= 0 && p[iout].revents && j->out_r >= 0)
			pump(j, &j->out_r, &j->out);
		if (ierr >= 0 && p[ierr].revents && j->err_r >= 0)
			pump(j, &j->err_r, &j->err);
		if (ififo >= 0 && p[ififo].revents)
			fifo_read(j);
		if (iin >= 0 && p[iin].revents)
			stdin_write(j);

		/* End of stdin: hand over everything written to stdin.fifo
		 * before the signal, then close. While the command has not
		 * taken the buffer, POLLOUT brings us back here. */
		if (j->eof_requested && j->in_w >= 0) {
			fifo_read(j);
			stdin_write(j);
			if (j->in_len == 0 && j->fifo_empty)
				close_stdin(j);
		}
	}
}

/* The last line crun logged, as the reason the command did not start. */
static void reason_from_crun_log(struct job *j)
{
	_cleanup_free_ char *text = NULL;
	size_t len;
	char *line;

	if (read_file_at(j->dirfd, "crun.log", 256 * 1024, &text, &len) < 0)
		goto fallback;
	while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == ' '))
		text[--len] = '\0';
	if (len == 0)
		goto fallback;
	line = strrchr(text, '\n');
	snprintf(j->why, sizeof j->why, "%s", line ? line + 1 : text);
	return;
fallback:
	snprintf(j->why, sizeof j->why, "crun exec exited with status %d",
		 WIFEXITED(j->wstatus) ? WEXITSTATUS(j->wstatus) : -1);
}

static void note_cannot_start(struct job *j)
{
	char line[REASON_MAX + 64];

	snprintf(line, sizeof line, "[paddock: cannot start: %s]\n",
		 j->why[0] ? j->why : "unknown reason");
	if (j->err.fd >= 0)
		sup_log_note(&j->err, line);
	if (j->all.fd >= 0)
		sup_log_note(&j->all, line);
}

/* A prompt's end: the last line, the end event, result and session. */
static int events_end(struct job *j, struct sup_result res)
{
	struct pd_buf out = {0};
	char t[64];
	int r;

	if (!j->norm)
		return 0;
	sup_lines_finish(&j->lines, on_agent_line, j);
	format_rfc3339_ms_now(t, sizeof t);
	(void)agent_events_end(j->norm, sup_result_exit_code(res), t, &out);
	if (out.len)
		sup_log_append(&j->ev, out.data, out.len);
	pd_buf_free(&out);
	/* The answer, at most log_max bytes like every stream. */
	const char *result = agent_events_result(j->norm);
	_cleanup_free_ char *cut = NULL;
	if (result && strlen(result) > j->spec->log_max) {
		cut = strndup(result, (size_t)j->spec->log_max);
		if (!cut)
			return -ENOMEM;
		result = cut;
	}
	if ((r = sup_write_record(j->dirfd, "result", result ? result : "")) < 0)
		return r;
	const char *session = agent_events_session(j->norm);
	if (session && *session) {
		_cleanup_free_ char *line = NULL;
		if (asprintf(&line, "%s\n", session) < 0)
			return -ENOMEM;
		return sup_write_record(j->dirfd, "session", line);
	}
	return 0;
}

/* Records the end: streams closed off, then (a prompt's result and
 * session,) exit, ended, and status last. */
static int record_end(struct job *j, struct sup_result res)
{
	char buf[32];
	int r;

	if ((r = events_end(j, res)) < 0)
		return r;

	if (j->out.fd >= 0)
		sup_log_finish(&j->out);
	if (j->err.fd >= 0)
		sup_log_finish(&j->err);
	if (j->all.fd >= 0)
		sup_log_finish(&j->all);
	snprintf(buf, sizeof buf, "%d\n", sup_result_exit_code(res));
	if ((r = sup_write_record(j->dirfd, "exit", buf)) < 0 ||
	    (r = write_time(j->dirfd, "ended", j->ended ? j->ended : time(NULL))) < 0)
		return r;
	sup_format_status(res, buf, sizeof buf);
	return sup_write_record(j->dirfd, "status", buf);
}

int sup_run(const char *jobdir, int dirfd, char *const *secrets)
{
	struct job j = {.dir = jobdir,
			.dirfd = dirfd,
			.conn = -1,
			.pidfd = -1,
			.sigfd = -1,
			.fifo = -1,
			.in_w = -1,
			.out_r = -1,
			.err_r = -1};
	struct sup_result res = {.code = SUP_EXIT_CANNOT_START};
	bool started;
	int r;

	j.out.fd = j.err.fd = j.all.fd = j.ev.fd = -1;
	j.lines.max = SUP_EVENT_LINE_MAX;
	umask(022);
	/* Already so since sup_detach(); the signalfd is what is new. */
	r = setup_signals(&j);
	if (r < 0) {
		snprintf(j.why, sizeof j.why, "cannot set up signals: %s", strerror(-r));
		goto cannot_start;
	}
	r = write_time(dirfd, "started", time(NULL));
	if (r >= 0)
		r = sup_write_record(dirfd, "status", "running\n");
	if (r < 0) {
		snprintf(j.why, sizeof j.why, "cannot write to the job directory: %s",
			 strerror(-r));
		goto cannot_start;
	}
	r = open_streams(&j);
	if (r < 0) {
		snprintf(j.why, sizeof j.why, "cannot open the output files: %s", strerror(-r));
		goto cannot_start;
	}
	if (load_spec(&j) < 0)
		goto cannot_start;
	if (secrets && *secrets) {
		j.secrets = true;
		if (!j.spec->server) {
			snprintf(j.why, sizeof j.why,
				 "the box has no exec server: a job with secrets runs only "
				 "through it (crun exec would show them on its command line)");
			goto cannot_start;
		}
		if (sup_spec_add_env(j.spec, secrets) < 0) {
			snprintf(j.why, sizeof j.why, "out of memory");
			goto cannot_start;
		}
	}
	if (j.spec->events) {
		char note[160];
		if ((r = open_stream(&j, &j.ev, "events")) < 0) {
			snprintf(j.why, sizeof j.why, "cannot open the events file: %s",
				 strerror(-r));
			goto cannot_start;
		}
		j.ev.max = j.spec->log_max;
		j.norm = agent_events_new(j.spec->events);
		if (!j.norm) {
			snprintf(note, sizeof note, "[paddock: no event reader for agent %s]\n",
				 j.spec->events);
			sup_log_note(&j.all, note);
		}
	}
	if (start(&j) < 0)
		goto cannot_start;

	loop(&j);
	close_fd(&j.out_r);
	close_fd(&j.err_r);
	if (j.via_server) {
		started = j.server_pid && !j.server_failed;
		res = started ? sup_result_from_server(j.wstatus)
			      : (struct sup_result){.code = SUP_EXIT_CANNOT_START};
		if (!started)
			note_cannot_start(&j);
		goto end;
	}
	started = faccessat(dirfd, "pid", F_OK, 0) == 0;
	res = sup_result_from_wait(j.wstatus, started);
	if (!started && !res.killed) {
		reason_from_crun_log(&j);
		note_cannot_start(&j);
	}
	goto end;

cannot_start:
	note_cannot_start(&j);
end:
	r = record_end(&j, res);
	job_release(&j);
	return r;
}
