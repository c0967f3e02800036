/* desktop.c - a box's desktop: its X server (Xvnc) and XFCE session run in
 * the box, supervised by the daemon, and what the tree offers of it: the
 * state and geometry, a screenshot, input, windows, cursor and url.
 *
 * The session. `on` (engine_box_set_desktop()) records the setting, starts
 * the box if it is not running, and starts a supervisor thread for the box
 * (struct eng_desk), which runs in the box, through its exec server
 * (runtime/box-exec.h):
 *   1. as box root: DESKTOP_RUN_DIR made afresh, 0700, the box user's; the
 *      X socket directory /tmp/.X11-unix (1777); a stale X lock removed;
 *   2. as the box's default user: Xvnc on DESKTOP_DISPLAY, with no TCP
 *      listener at all (-rfbport -1, -nolisten tcp), RFB on the unix socket
 *      DESKTOP_VNC_SOCKET (0600, -SecurityTypes None: the socket's mode and
 *      its directory are the access control; the daemon alone reaches it
 *      from the host);
 *   3. once that socket greets (first frame ready), the XFCE session
 *      (dbus-launch --exit-with-session xfce4-session) on the display.
 * The `on` write returns when step 3 began, or with the reason it failed
 * (the setting then goes back to off). The thread then holds both
 * commands' pidfds and exec connections: when either ends while the box
 * runs and the desktop is on, it ends the other and starts both again
 * after a backoff (1 s doubling to 30 s; back to 1 s after a minute up),
 * each time an event "desktop restarted (N): why". A stop of the box ends
 * the thread quietly; the next start of the box starts it again (the
 * setting is in the store). `off` ends the thread, which ends the commands
 * (SIGTERM, SIGKILL after DESK_KILL_GRACE_MS).
 *
 * A daemon that stops leaves the session running (its thread ends without
 * killing anything); at the next start the thread adopts it: the host PIDs
 * and start times recorded in DATA/boxes/ID/desktop.pids name the same
 * processes still (pidfd_open(), then the start time checked) and the VNC
 * socket greets. Otherwise it starts afresh.
 *
 * The host reaches the VNC socket without following anything the box put
 * there: the socket is opened O_PATH with openat2(RESOLVE_IN_ROOT |
 * RESOLVE_NO_SYMLINKS) in the box's root and connected to through its
 * /proc/self/fd/N.
 */
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "common/desktop.h"
#include "common/log.h"
#include "engine/internal.h"
#include "runtime/box-exec.h"

/* The least memory a box's type must have for `on`: an idle XFCE desktop
 * with a terminal measured 150-220 MiB (usage memory_bytes, page cache
 * included), a browser needs 768 MiB to 1 GiB more. 512 MiB leaves room for
 * the session and a small app; docs/desktop.md has the figures. */
#define DESK_MEMORY_MIN (512ULL << 20)
#define DESK_MEMORY_BROWSER (1ULL << 30)
/* How long `on` waits for the first frame, and Xvnc for its socket. */
#define DESK_START_MS 30000
#define DESK_KILL_GRACE_MS 3000
#define DESK_BACKOFF_MAX_S 30
#define DESK_STABLE_S 60
/* A screen grab's largest xwd: the largest geometry at 32 bits a pixel,
 * and room for the header and colour map. */
#define DESK_XWD_MAX ((size_t)DESKTOP_WIDTH_MAX * DESKTOP_HEIGHT_MAX * 4 + 256 * 1024)
#define DESK_CMD_MS 20000
#define DESK_OUT_MAX (1024 * 1024)
#define DESK_XVNC "usr/bin/Xvnc"

/* What a command in the box runs as, for the desktop's box. */
struct desk_ctx {
	int64_t box_id;
	char box[NAME_MAX_LEN + 1];
	char server[128];
	char rootfs[4096];
	char user[64];
	char home[4096];
	unsigned uid, gid;
	unsigned width, height;
};

struct eng_desk {
	struct engine *engine;
	int64_t box_id;
	unsigned waiters; /* `on` writes waiting: the last one frees it once exited */
	int wake;    /* eventfd: stop or detach asked */
	bool stop;   /* end the session and the thread (off) */
	bool detach; /* end the thread, leave the session (daemon stop) */
	bool adopt;  /* first try to adopt a running session */
	bool up;     /* the session runs */
	bool tried;  /* the first start was tried: result in first_r, why */
	bool exited; /* the thread has ended */
	int first_r;
	char why[PD_ERROR_MAX];
	unsigned restarts;
};

/* --- small helpers ------------------------------------------------------------- */

static int parse_geometry(const char *s, unsigned *w, unsigned *h)
{
	char *end;
	unsigned long a, b;

	if (!s[0] || s[0] < '1' || s[0] > '9')
		return -EINVAL;
	a = strtoul(s, &end, 10);
	if (*end != 'x' || end[1] < '1' || end[1] > '9')
		return -EINVAL;
	b = strtoul(end + 1, &end, 10);
	if (*end || a < 64 || b < 64 || a > DESKTOP_WIDTH_MAX || b > DESKTOP_HEIGHT_MAX)
		return -EINVAL;
	*w = (unsigned)a;
	*h = (unsigned)b;
	return 0;
}

static const char *geometry_of(const struct box *b)
{
	return b->row.geometry[0] ? b->row.geometry : DESKTOP_GEOMETRY_DEFAULT;
}

/* Whether the box's root has Xvnc (its own changes included), found
 * without following a link out of it. */
static bool has_xvnc(const char *rootfs)
{
	struct open_how how = {.flags = O_PATH | O_CLOEXEC, .resolve = RESOLVE_IN_ROOT};
	_cleanup_close_ int rootfd = open(rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC);
	_cleanup_close_ int fd = -1;
	struct stat st;

	if (rootfd < 0)
		return false;
	fd = (int)syscall(SYS_openat2, rootfd, DESK_XVNC, &how, sizeof how);
	return fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0111);
}

/* Connects to the box's VNC socket from the host (see the top). */
/* The VNC server greets ("RFB 003.008\n") within timeout_ms. */
static bool vnc_greets(const char *rootfs, int timeout_ms)
{
	_cleanup_close_ int fd = eng_desktop_vnc_open(rootfs, "", NULL);
	struct pollfd p = {.fd = fd, .events = POLLIN};
	char buf[12];

	if (fd < 0 || poll(&p, 1, timeout_ms) != 1)
		return false;
	return recv(fd, buf, sizeof buf, MSG_WAITALL | MSG_DONTWAIT) >= 4 &&
	       memcmp(buf, "RFB ", 4) == 0;
}

/* Everything a command of the desktop's needs, read under the lock (b
 * live) except the box user's ids (its /etc/passwd: no lock). */
static int ctx_of(struct engine *e, struct box *b, struct desk_ctx *c, pd_error *err)
{
	struct image_info img;

	memset(c, 0, sizeof *c);
	c->box_id = b->row.id;
	snprintf(c->box, sizeof c->box, "%s", b->row.name);
	eng_box_path(e, b, "rootfs", c->rootfs, sizeof c->rootfs);
	if (parse_geometry(geometry_of(b), &c->width, &c->height) < 0)
		(void)parse_geometry(DESKTOP_GEOMETRY_DEFAULT, &c->width, &c->height);
	if (!runtime_exec_socket(e->rt, b->row.name, c->server, sizeof c->server))
		return pd_error_set(err, -ENOTCONN,
				    "box %s has no exec server: the desktop cannot run in it",
				    b->row.name);
	if (image_get(e->images_dir, b->row.image, &img) < 0)
		snprintf(img.user, sizeof img.user, "root");
	snprintf(c->user, sizeof c->user, "%s", img.user);
	return 0;
}

static int ctx_user(struct desk_ctx *c, pd_error *err)
{
	if (eng_box_user(c->rootfs, c->user, &c->uid, &c->gid, c->home, sizeof c->home) < 0)
		return pd_error_set(err, -EINVAL, "no user %s in box %s", c->user, c->box);
	return 0;
}

/* The environment of the desktop's commands (as the box user). */
struct desk_env {
	char home[4200], user[80], xdg[64];
	const char *v[9];
};

static void env_of(const struct desk_ctx *c, struct desk_env *env)
{
	size_t n = 0;

	snprintf(env->home, sizeof env->home, "HOME=%s", c->home);
	snprintf(env->user, sizeof env->user, "USER=%s", c->user);
	snprintf(env->xdg, sizeof env->xdg, "XDG_RUNTIME_DIR=%s", DESKTOP_RUN_DIR);
	env->v[n++] = "PATH=/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin";
	env->v[n++] = env->home;
	env->v[n++] = env->user;
	env->v[n++] = "LANG=C.UTF-8";
	env->v[n++] = "DISPLAY=" DESKTOP_DISPLAY;
	env->v[n++] = env->xdg;
	env->v[n] = NULL;
}

/* Runs argv in the box as the box user with DISPLAY set, collecting its
 * output: 0 (exit 0), or -errno with its stderr in err. */
static int desk_run_for(const struct desk_ctx *c, const char *const *argv, bool as_root, size_t max,
			int timeout_ms, struct pd_buf *out, pd_error *err)
{
	struct desk_env env;
	struct pd_buf errout = {0};
	struct box_exec x = {.server = c->server,
			     .uid = as_root ? 0 : c->uid,
			     .gid = as_root ? 0 : c->gid,
			     .cwd = "/",
			     .argv = argv};
	int ws = 0, r;

	env_of(c, &env);
	x.env = env.v;
	r = box_exec_output(&x, max, timeout_ms, out, &errout, &ws, err);
	if (r >= 0 && !(WIFEXITED(ws) && WEXITSTATUS(ws) == 0)) {
		size_t n = errout.len;
		while (n && (errout.data[n - 1] == '\n' || errout.data[n - 1] == ' '))
			n--;
		r = pd_error_set(err, -EIO, "%s failed (%s %d)%s%.*s", argv[0],
				 WIFEXITED(ws) ? "exit" : "signal",
				 WIFEXITED(ws) ? WEXITSTATUS(ws) : WTERMSIG(ws), n ? ": " : "",
				 (int)(n > 300 ? 300 : n), n ? errout.data : "");
	}
	pd_buf_free(&errout);
	return r;
}

static int desk_run(const struct desk_ctx *c, const char *const *argv, bool as_root, size_t max,
		    struct pd_buf *out, pd_error *err)
{
	return desk_run_for(c, argv, as_root, max, DESK_CMD_MS, out, err);
}

/* The time an input batch may take: the usual bound, plus what its typing
 * (one word a key, DESKTOP_TYPE_DELAY_MS apart) and scrolling (--repeat N,
 * 50 ms apart) take by design, with room. */
static int input_timeout_ms(char *const *argv)
{
	long long ms = DESK_CMD_MS;

	for (size_t i = 0; argv[i]; i++) {
		ms += 2 * DESKTOP_TYPE_DELAY_MS;
		if (strcmp(argv[i], "--repeat") == 0 && argv[i + 1])
			ms += 2 * 50LL * strtol(argv[i + 1], NULL, 10);
	}
	return ms > INT_MAX ? INT_MAX : (int)ms;
}

/* --- the session ------------------------------------------------------------------ */

struct session {
	struct box_exec_proc xvnc, sess;
	unsigned long long up_usec;
};

static void pids_path(struct engine *e, int64_t id, char *buf, size_t bufsz)
{
	snprintf(buf, bufsz, "%s/%lld/desktop.pids", e->boxes_dir, (long long)id);
}

static void session_end(struct session *s)
{
	eng_proc_end(&s->sess, DESK_KILL_GRACE_MS);
	eng_proc_end(&s->xvnc, DESK_KILL_GRACE_MS);
}

static void session_release(struct session *s)
{
	box_exec_release(&s->sess);
	box_exec_release(&s->xvnc);
}

/* Starts one command as the box user, its output to LOG in
 * DESKTOP_RUN_DIR (the box's file: the daemon never reads it). */
static int start_logged(const struct desk_ctx *c, const char *log, const char *const *cmd,
			struct box_exec_proc *ret, pd_error *err)
{
	char script[256];
	const char *argv[24];
	struct desk_env env;
	_cleanup_close_ int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	int fds[3] = {devnull, devnull, devnull};
	size_t n = 0;
	struct box_exec x = {.server = c->server, .uid = c->uid, .gid = c->gid, .cwd = "/"};

	snprintf(script, sizeof script, "exec \"$0\" \"$@\" >>%s/%s 2>&1", DESKTOP_RUN_DIR, log);
	argv[n++] = "/bin/sh";
	argv[n++] = "-c";
	argv[n++] = script;
	for (const char *const *a = cmd; *a && n < ELEMENTSOF(argv) - 1; a++)
		argv[n++] = *a;
	argv[n] = NULL;
	env_of(c, &env);
	x.argv = argv;
	x.env = env.v;
	if (devnull < 0)
		return pd_error_set(err, -errno, "cannot open /dev/null: %s", strerror(errno));
	return box_exec_start(&x, fds, ret, err);
}

static int session_start(struct engine *e, const struct desk_ctx *c, struct session *s,
			 pd_error *err)
{
	char prep[512], geom[32], path[4200], rec[128];
	const char *prep_argv[] = {"/bin/sh", "-c", prep, NULL};
	struct pd_buf out = {0};
	unsigned long long deadline;
	int r;

	snprintf(prep, sizeof prep,
		 "set -e; rm -f /tmp/.X1-lock /tmp/.X11-unix/X1; mkdir -p /tmp/.X11-unix;"
		 " chmod 1777 /tmp/.X11-unix; rm -rf %s; mkdir -m 0700 %s; chown %u:%u %s",
		 DESKTOP_RUN_DIR, DESKTOP_RUN_DIR, c->uid, c->gid, DESKTOP_RUN_DIR);
	r = desk_run(c, prep_argv, /* as_root= */ true, DESK_OUT_MAX, &out, err);
	pd_buf_free(&out);
	if (r < 0)
		return pd_error_prefix(err, "cannot prepare %s", DESKTOP_RUN_DIR);

	snprintf(geom, sizeof geom, "%ux%u", c->width, c->height);
	const char *xvnc[] = {"Xvnc",
			      DESKTOP_DISPLAY,
			      "-rfbport",
			      "-1",
			      "-rfbunixpath",
			      DESKTOP_VNC_SOCKET,
			      "-rfbunixmode",
			      "0600",
			      "-SecurityTypes",
			      "None",
			      "-nolisten",
			      "tcp",
			      "-geometry",
			      geom,
			      "-depth",
			      "24",
			      "-desktop",
			      c->box,
			      NULL};
	r = start_logged(c, "xvnc.log", xvnc, &s->xvnc, err);
	if (r < 0)
		return r;
	/* The first frame: the socket greets. */
	deadline = now_usec() + DESK_START_MS * 1000ULL;
	while (!vnc_greets(c->rootfs, 500)) {
		if (pidfd_wait_exit(s->xvnc.pidfd, 50) == 0 || now_usec() > deadline) {
			(void)box_exec_wait(&s->xvnc, 1000);
			session_end(s);
			return pd_error_set(err, -EIO,
					    "Xvnc did not come up (see %s/xvnc.log in the box)",
					    DESKTOP_RUN_DIR);
		}
	}
	const char *sess[] = {"dbus-launch", "--exit-with-session", "xfce4-session", NULL};
	r = start_logged(c, "session.log", sess, &s->sess, err);
	if (r < 0) {
		session_end(s);
		return r;
	}
	s->up_usec = now_usec();
	/* For an adoption after a daemon restart. */
	pids_path(e, c->box_id, path, sizeof path);
	snprintf(rec, sizeof rec, "%d %llu %d %llu\n", (int)s->xvnc.pid,
		 proc_start_time(s->xvnc.pid), (int)s->sess.pid, proc_start_time(s->sess.pid));
	(void)write_file_atomic(path, rec, strlen(rec), 0600);
	return 0;
}

/* A running session from before a daemon restart: its recorded processes
 * are alive (the same ones: start times) and the socket greets. */
static bool session_adopt(struct engine *e, const struct desk_ctx *c, struct session *s)
{
	_cleanup_free_ char *text = NULL;
	char path[4200];
	int xp, sp;
	unsigned long long xs, ss;

	pids_path(e, c->box_id, path, sizeof path);
	if (read_file_at(AT_FDCWD, path, 256, &text, NULL) < 0 ||
	    sscanf(text, "%d %llu %d %llu", &xp, &xs, &sp, &ss) != 4 || xp <= 0 || sp <= 0)
		return false;
	s->xvnc.pidfd = (int)syscall(SYS_pidfd_open, xp, 0);
	s->sess.pidfd = (int)syscall(SYS_pidfd_open, sp, 0);
	s->xvnc.pid = xp;
	s->sess.pid = sp;
	if (s->xvnc.pidfd < 0 || s->sess.pidfd < 0 || proc_start_time(xp) != xs ||
	    proc_start_time(sp) != ss || !vnc_greets(c->rootfs, 2000)) {
		/* Not ours (any more): never signalled. */
		session_release(s);
		*s = (struct session){.xvnc = BOX_EXEC_PROC_INIT, .sess = BOX_EXEC_PROC_INIT};
		return false;
	}
	s->up_usec = now_usec();
	return true;
}

/* Waits until a command of the session ends (its reason in why: 1) or the
 * thread is woken (0). */
static int session_watch(struct eng_desk *d, struct session *s, char *why, size_t whysz)
{
	for (;;) {
		struct pollfd p[5];
		int n = 0;

		p[n++] = (struct pollfd){.fd = d->wake, .events = POLLIN};
		p[n++] = (struct pollfd){.fd = s->xvnc.pidfd, .events = POLLIN};
		p[n++] = (struct pollfd){.fd = s->sess.pidfd, .events = POLLIN};
		if (s->xvnc.conn >= 0)
			p[n++] = (struct pollfd){.fd = s->xvnc.conn, .events = POLLIN};
		if (s->sess.conn >= 0)
			p[n++] = (struct pollfd){.fd = s->sess.conn, .events = POLLIN};
		if (poll(p, (nfds_t)n, -1) < 0) {
			if (errno == EINTR)
				continue;
			return 0;
		}
		if (p[0].revents)
			return 0;
		/* Take the exit reports that came (an "exit" precedes the
		 * pidfd's wake-up only sometimes). */
		if (s->xvnc.conn >= 0)
			(void)box_exec_wait(&s->xvnc, 0);
		if (s->sess.conn >= 0)
			(void)box_exec_wait(&s->sess, 0);
		if (p[1].revents || s->xvnc.ended) {
			(void)box_exec_wait(&s->xvnc, 200);
			snprintf(why, whysz, "Xvnc ended");
			return 1;
		}
		if (p[2].revents || s->sess.ended) {
			snprintf(why, whysz, "the XFCE session ended");
			return 1;
		}
		/* A connection's other replies: nothing to do. */
		if (s->xvnc.conn < 0 && s->sess.conn < 0 && !p[1].revents && !p[2].revents) {
			/* Both connections gone (the box stopping): the pidfds
			 * say when. */
			continue;
		}
	}
}

/* What the thread is to do now (engine lock held): 1 run the session (ctx
 * filled), 0 wait (the box is starting), -1 end. */
static int desk_plan(struct engine *e, struct eng_desk *d, struct desk_ctx *c, pd_error *err)
{
	struct box *b = eng_live_box(e, d->box_id);

	if (!b || d->stop || d->detach || e->stopping || !b->row.desktop)
		return -1;
	if (b->state != BOX_RUNNING)
		return b->busy && b->state == BOX_STARTING ? 0 : -1;
	if (b->busy)
		return 0;
	return ctx_of(e, b, c, err) < 0 ? -2 : 1;
}

/* Marks the first start's result, for the `on` that waits. */
static void desk_tried(struct engine *e, struct eng_desk *d, int r, const pd_error *err)
{
	pd_mutex_lock(&e->lock);
	if (!d->tried) {
		d->tried = true;
		d->first_r = r;
		snprintf(d->why, sizeof d->why, "%s", err && err->code ? err->msg : "");
	}
	d->up = r >= 0;
	pthread_cond_broadcast(&e->desk_cond);
	pd_mutex_unlock(&e->lock);
}

static void *desk_main(void *userdata)
{
	struct eng_desk *d = userdata;
	struct engine *e = d->engine;
	struct session s = {.xvnc = BOX_EXEC_PROC_INIT, .sess = BOX_EXEC_PROC_INIT};
	unsigned failures = 0;
	bool running = false;

	for (;;) {
		struct desk_ctx c;
		pd_error err = {0};
		char why[128] = "";
		int plan;

		pd_mutex_lock(&e->lock);
		plan = desk_plan(e, d, &c, &err);
		pd_mutex_unlock(&e->lock);
		if (plan == 0) {
			if (!eng_nap(d->wake, 100))
				continue; /* woken: look again */
			continue;
		}
		if (plan < 0) {
			if (plan == -2)
				desk_tried(e, d, err.code, &err);
			break;
		}
		if (!running) {
			int r = ctx_user(&c, &err);
			if (r >= 0 && d->adopt && session_adopt(e, &c, &s)) {
				log_info("box %s: desktop adopted (Xvnc pid %d)", c.box,
					 (int)s.xvnc.pid);
				d->adopt = false;
			} else {
				d->adopt = false;
				if (r >= 0)
					r = session_start(e, &c, &s, &err);
				if (r < 0) {
					bool first = !d->tried;
					desk_tried(e, d, r, &err);
					log_warn("box %s: desktop: %s", c.box, err.msg);
					if (first)
						break; /* `on` reports it */
					failures++;
					goto backoff;
				}
			}
			running = true;
			desk_tried(e, d, 0, NULL);
		}
		if (session_watch(d, &s, why, sizeof why) == 0)
			break; /* stop or detach */
		running = false;
		if (now_usec() - s.up_usec > DESK_STABLE_S * 1000000ULL)
			failures = 0;
		failures++;
		session_end(&s);
		pd_mutex_lock(&e->lock);
		d->up = false;
		{
			struct box *b = eng_live_box(e, d->box_id);
			if (b && b->state == BOX_RUNNING && !b->busy && b->row.desktop &&
			    !d->stop && !d->detach && !e->stopping) {
				d->restarts++;
				eng_emit(e, b, "desktop restarted (%u): %s", d->restarts, why);
			}
		}
		pd_mutex_unlock(&e->lock);
	backoff:;
		if (!eng_nap(d->wake, eng_backoff_ms(failures, DESK_BACKOFF_MAX_S)))
			continue;
	}
	pd_mutex_lock(&e->lock);
	bool kill_it = d->stop;
	pd_mutex_unlock(&e->lock);
	if (kill_it || !running) {
		char path[4200];
		if (running || kill_it)
			session_end(&s);
		pids_path(e, d->box_id, path, sizeof path);
		if (kill_it)
			(void)unlink(path);
	}
	session_release(&s);
	pd_mutex_lock(&e->lock);
	{
		struct box *b = eng_find_box_id(e, d->box_id);
		if (b && b->desk == d)
			b->desk = NULL;
	}
	d->exited = true;
	d->up = false;
	if (!d->tried) {
		d->tried = true;
		d->first_r = -ESRCH;
		snprintf(d->why, sizeof d->why, "the box stopped before its desktop started");
	}
	e->desk_threads--;
	pthread_cond_broadcast(&e->desk_cond);
	bool free_it = d->waiters == 0;
	close(d->wake);
	d->wake = -1;
	pd_mutex_unlock(&e->lock);
	if (free_it)
		free(d);
	return NULL;
}

/* --- the engine's side ------------------------------------------------------------ */

static void desk_poke(struct eng_desk *d)
{
	if (d->wake >= 0)
		(void)eventfd_write(d->wake, 1);
}

/* Starts the box's supervisor thread unless it has one. Engine lock held. */
int eng_desktop_spawn(struct engine *e, struct box *b, bool adopt)
{
	struct eng_desk *d;
	int r;

	if (b->desk && !b->desk->stop && !b->desk->exited)
		return 0;
	d = calloc(1, sizeof *d);
	if (!d)
		return -ENOMEM;
	d->engine = e;
	d->box_id = b->row.id;
	d->adopt = adopt;
	r = eng_spawn_detached(desk_main, d, &d->wake);
	if (r < 0) {
		free(d);
		return r;
	}
	b->desk = d;
	e->desk_threads++;
	return 0;
}

void eng_desktop_start_all(struct engine *e)
{
	pd_mutex_lock(&e->lock);
	for (size_t i = 0; i < e->n_boxes; i++) {
		struct box *b = e->boxes[i];
		if (b->row.desktop && b->state == BOX_RUNNING && eng_desktop_spawn(e, b, true) < 0)
			log_warn("box %s: cannot start its desktop's supervisor", b->row.name);
	}
	pd_mutex_unlock(&e->lock);
}

void eng_desktop_stop_all(struct engine *e)
{
	pd_mutex_lock(&e->lock);
	for (size_t i = 0; i < e->n_boxes; i++)
		if (e->boxes[i]->desk) {
			e->boxes[i]->desk->detach = true;
			desk_poke(e->boxes[i]->desk);
		}
	while (e->desk_threads > 0)
		pd_cond_wait(&e->desk_cond, &e->lock);
	pd_mutex_unlock(&e->lock);
}

/* Waits (engine lock held, released meanwhile) until d's first start was
 * tried or d ended, timeout_ms at most; frees d if it ended and this was
 * its last waiter. Returns d's first result (-ETIMEDOUT: still trying),
 * its reason in err. */
static int desk_wait(struct engine *e, struct eng_desk *d, bool for_exit, int timeout_ms,
		     pd_error *err)
{
	struct timespec ts;
	int r;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += timeout_ms / 1000;
	ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	d->waiters++;
	while (!(for_exit ? d->exited : d->tried || d->exited))
		if (pd_cond_timedwait(&e->desk_cond, &e->lock, &ts) == ETIMEDOUT)
			break;
	d->waiters--;
	if (!(for_exit ? d->exited : d->tried || d->exited))
		r = -ETIMEDOUT;
	else if (d->first_r < 0)
		r = pd_error_set(err, d->first_r, "%s", d->why);
	else
		r = 0;
	if (d->exited && d->waiters == 0)
		free(d);
	return r;
}

static const char off_text[] = "the desktop is off (echo on > boxes/%s/desktop/state)";

int engine_box_desktop_state(struct engine *e, int64_t id, char *buf, size_t bufsz)
{
	struct box *b;

	pd_mutex_lock(&e->lock);
	b = eng_live_box(e, id);
	if (b)
		snprintf(buf, bufsz, "%s",
			 !b->row.desktop					? "off"
			 : b->state == BOX_RUNNING && !(b->desk && b->desk->up) ? "starting"
										: "on");
	pd_mutex_unlock(&e->lock);
	return b ? 0 : -ENOENT;
}

/* Refuses `on` for a box that cannot have a desktop. Engine lock held. */
static int desk_can(struct engine *e, struct box *b, pd_error *err)
{
	const struct box_type *type = config_find_type(e->cfg, b->row.type);
	char rootfs[4096], have[32], need[32];

	eng_box_path(e, b, "rootfs", rootfs, sizeof rootfs);
	if (!has_xvnc(rootfs))
		return pd_error_set(err, -ENOTSUP,
				    "image %s has no desktop (use the desktop image): box %s has "
				    "no /usr/bin/Xvnc",
				    b->row.image, b->row.name);
	if (type && type->memory && type->memory < DESK_MEMORY_MIN) {
		format_size(type->memory, have, sizeof have);
		format_size(DESK_MEMORY_MIN, need, sizeof need);
		char browser[32];
		format_size(DESK_MEMORY_BROWSER, browser, sizeof browser);
		return pd_error_set(err, -ENOMEM,
				    "type %s has %s of memory; the desktop needs at least %s (%s "
				    "with a browser): write a larger type to boxes/%s/type",
				    b->row.type, have, need, browser, b->row.name);
	}
	return 0;
}

static int desktop_on(struct engine *e, int64_t id, pd_error *err)
{
	struct box *b;
	struct eng_desk *d;
	bool start_box;
	int r;

	pd_mutex_lock(&e->lock);
	b = eng_live_box(e, id);
	if (!b) {
		pd_mutex_unlock(&e->lock);
		return eng_box_gone(err);
	}
	r = desk_can(e, b, err);
	start_box = b->state == BOX_CREATED || b->state == BOX_STOPPED;
	pd_mutex_unlock(&e->lock);
	if (r < 0)
		return r;
	/* As a job's first cmd: the box starts. */
	if (start_box) {
		r = engine_box_set_state(e, id, "running", err);
		if (r < 0)
			return pd_error_prefix(err, "cannot start the box for its desktop");
	}
	pd_mutex_lock(&e->lock);
	b = eng_live_box(e, id);
	if (!b) {
		pd_mutex_unlock(&e->lock);
		return eng_box_gone(err);
	}
	if (b->state != BOX_RUNNING || b->busy) {
		r = pd_error_set(err, -EBUSY, "box %s is %s%s; try again", b->row.name,
				 box_state_to_string(b->state), b->busy ? " and busy" : "");
		goto out;
	}
	/* A session being ended by an `off` just before: wait for it. */
	d = b->desk;
	if (d && d->stop) {
		(void)desk_wait(e, d, /* for_exit= */ true, DESK_KILL_GRACE_MS * 3, NULL);
		b = eng_live_box(e, id);
		if (!b) {
			r = eng_box_gone(err);
			goto out;
		}
		if (b->desk) {
			r = pd_error_set(err, -EBUSY, "the desktop is still stopping; try again");
			goto out;
		}
	}
	if (b->desk && b->desk->up && b->row.desktop)
		goto out; /* on already */
	b->row.desktop = 1;
	r = eng_save_box(e, b, NULL, err);
	if (r < 0) {
		b->row.desktop = 0;
		goto out;
	}
	r = eng_desktop_spawn(e, b, /* adopt= */ false);
	if (r < 0) {
		pd_error_set(err, r, "cannot start the desktop's supervisor: %s", strerror(-r));
		goto undo;
	}
	d = b->desk;
	r = desk_wait(e, d, /* for_exit= */ false, DESK_START_MS + 15000, err);
	if (r == -ETIMEDOUT) {
		/* It keeps trying: the state says starting. */
		r = 0;
		goto out;
	}
	if (r >= 0)
		goto out;
undo:
	b = eng_live_box(e, id);
	if (b) {
		b->row.desktop = 0;
		(void)eng_save_box(e, b, NULL, NULL);
		if (b->desk) {
			b->desk->stop = true;
			desk_poke(b->desk);
		}
	}
out:
	if (r >= 0 && (b = eng_live_box(e, id)))
		eng_emit(e, b, "desktop on");
	pd_mutex_unlock(&e->lock);
	return r;
}

static int desktop_off(struct engine *e, int64_t id, pd_error *err)
{
	struct box *b;
	int r = 0;

	pd_mutex_lock(&e->lock);
	b = eng_live_box(e, id);
	if (!b) {
		pd_mutex_unlock(&e->lock);
		return eng_box_gone(err);
	}
	bool was = b->row.desktop;
	b->row.desktop = 0;
	r = eng_save_box(e, b, NULL, err);
	if (r < 0) {
		b->row.desktop = was;
		goto out;
	}
	if (b->desk) {
		struct eng_desk *d = b->desk;
		d->stop = true;
		desk_poke(d);
		/* Ended when the write returns (SIGTERM, then SIGKILL). */
		(void)desk_wait(e, d, /* for_exit= */ true, DESK_KILL_GRACE_MS * 3, NULL);
	}
	if (was && (b = eng_live_box(e, id)))
		eng_emit(e, b, "desktop off");
out:
	pd_mutex_unlock(&e->lock);
	return r;
}

int engine_box_set_desktop(struct engine *e, int64_t id, const char *value, pd_error *err)
{
	if (strcmp(value, "on") == 0)
		return desktop_on(e, id, err);
	if (strcmp(value, "off") == 0)
		return desktop_off(e, id, err);
	return pd_error_set(err, -EINVAL, "desktop/state: write on or off, not \"%.40s\"", value);
}

int engine_box_desktop_geometry(struct engine *e, int64_t id, char *buf, size_t bufsz)
{
	struct box *b;

	pd_mutex_lock(&e->lock);
	b = eng_live_box(e, id);
	if (b)
		snprintf(buf, bufsz, "%s", geometry_of(b));
	pd_mutex_unlock(&e->lock);
	return b ? 0 : -ENOENT;
}

/* The context of a command on a running desktop (ENODEV when off). */
static int desk_live(struct engine *e, int64_t id, struct desk_ctx *c, pd_error *err)
{
	struct box *b;
	int r;

	pd_mutex_lock(&e->lock);
	b = eng_live_box(e, id);
	if (!b)
		r = eng_box_gone(err);
	else if (!b->row.desktop)
		r = pd_error_set(err, -ENODEV, off_text, b->row.name);
	else if (b->state != BOX_RUNNING)
		r = pd_error_set(err, -ENODEV,
				 "box %s is %s: its desktop runs while the box does (echo running "
				 "> boxes/%s/state)",
				 b->row.name, box_state_to_string(b->state), b->row.name);
	else if (!b->desk || !b->desk->up)
		r = pd_error_set(err, -EAGAIN, "the desktop of box %s is starting; try again",
				 b->row.name);
	else
		r = ctx_of(e, b, c, err);
	pd_mutex_unlock(&e->lock);
	if (r >= 0)
		r = ctx_user(c, err);
	return r;
}

int engine_box_set_desktop_geometry(struct engine *e, int64_t id, const char *value, pd_error *err)
{
	char geom[32];
	unsigned w, h;
	struct box *b;
	bool live;
	int r;

	if (parse_geometry(value, &w, &h) < 0)
		return pd_error_set(err, -EINVAL,
				    "write WIDTHxHEIGHT, 64x64 to %ux%u, not "
				    "\"%.40s\"",
				    DESKTOP_WIDTH_MAX, DESKTOP_HEIGHT_MAX, value);
	snprintf(geom, sizeof geom, "%ux%u", w, h);
	pd_mutex_lock(&e->lock);
	b = eng_live_box(e, id);
	if (!b) {
		pd_mutex_unlock(&e->lock);
		return eng_box_gone(err);
	}
	char old[sizeof b->row.geometry];
	snprintf(old, sizeof old, "%s", b->row.geometry);
	snprintf(b->row.geometry, sizeof b->row.geometry, "%.15s", geom);
	r = eng_save_box(e, b, NULL, err);
	if (r < 0)
		snprintf(b->row.geometry, sizeof b->row.geometry, "%s", old);
	live = r >= 0 && b->row.desktop && b->state == BOX_RUNNING && b->desk && b->desk->up;
	pd_mutex_unlock(&e->lock);
	if (!live)
		return r; /* at the next start */
	/* Live: Xvnc resizes its framebuffer through RandR. */
	struct desk_ctx c;
	struct pd_buf out = {0};
	pd_error lerr = {0};
	const char *fb[] = {"xrandr", "--fb", geom, NULL};
	r = desk_live(e, id, &c, &lerr);
	if (r >= 0)
		r = desk_run(&c, fb, false, DESK_OUT_MAX, &out, &lerr);
	pd_buf_free(&out);
	pd_mutex_lock(&e->lock);
	if ((b = eng_live_box(e, id))) {
		if (r < 0)
			eng_emit(e, b, "desktop geometry %s applies at the next start: %s", geom,
				 lerr.msg);
		else
			eng_emit(e, b, "desktop geometry %s", geom);
	}
	pd_mutex_unlock(&e->lock);
	return 0;
}

int engine_box_desktop_url(struct engine *e, int64_t id, char *buf, size_t bufsz)
{
	_cleanup_free_ char *file = NULL;
	char base[512], name[NAME_MAX_LEN + 1];
	struct box *b;

	pd_mutex_lock(&e->lock);
	b = eng_live_box(e, id);
	if (b)
		snprintf(name, sizeof name, "%s", b->row.name);
	pd_mutex_unlock(&e->lock);
	if (!b)
		return -ENOENT;
	if (e->cfg->public_url && e->cfg->public_url[0])
		snprintf(base, sizeof base, "%s", e->cfg->public_url);
	else {
		char path[4200];
		snprintf(path, sizeof path, "%s/http-url", e->cfg->run);
		/* A listener on port 0 wrote where it listens. */
		if (read_file_at(AT_FDCWD, path, sizeof base - 1, &file, NULL) >= 0)
			snprintf(base, sizeof base, "%.*s", (int)strcspn(file, "\r\n"), file);
		else if (e->cfg->listen && strcmp(e->cfg->listen, "none") != 0)
			snprintf(base, sizeof base, "http://%s", e->cfg->listen);
		else
			return -ENODEV;
	}
	size_t n = strlen(base);
	while (n && base[n - 1] == '/')
		base[--n] = '\0';
	if ((size_t)snprintf(buf, bufsz, "%s/#/desktop/%s", base, name) >= bufsz)
		return -ENAMETOOLONG;
	return 0;
}

int engine_box_screenshot(struct engine *e, int64_t id, struct pd_buf *png, pd_error *err)
{
	static const char *const xwd[] = {"xwd",      "-root",	       "-silent",
					  "-display", DESKTOP_DISPLAY, NULL};
	struct desk_ctx c;
	struct pd_buf raw = {0};
	unsigned w, h;
	int r = desk_live(e, id, &c, err);

	/* A grab taken while the session changes its screen (starting, a
	 * resize) can fail once; the second try is the answer. */
	for (int attempt = 0; r >= 0 && attempt < 2; attempt++) {
		pd_error e2 = {0};
		raw.len = 0;
		r = desk_run(&c, xwd, false, DESK_XWD_MAX, &raw, &e2);
		if (r >= 0)
			r = eng_shot_xwd_to_png(raw.data, raw.len, png, &w, &h, &e2);
		if (r >= 0)
			break;
		if (err)
			*err = e2;
		if (attempt == 0 && r != -EFBIG)
			r = 0;
	}
	pd_buf_free(&raw);
	return r;
}

int engine_box_desktop_input(struct engine *e, int64_t id, const char *text, size_t len,
			     pd_error *err)
{
	struct desk_ctx c;
	struct pd_buf out = {0};
	char **argv = NULL;
	int r = desk_live(e, id, &c, err);

	/* Every line checked before anything is sent. */
	if (r >= 0)
		r = eng_desktop_input_parse(text, len, c.width, c.height, &argv, err);
	if (r >= 0)
		r = desk_run_for(&c, (const char *const *)argv, false, DESK_OUT_MAX,
				 input_timeout_ms(argv), &out, err);
	strv_free(argv);
	pd_buf_free(&out);
	return r;
}

/* Runs a query (windows, cursor) and formats what it printed. */
static int desk_query(struct engine *e, int64_t id, char **argv,
		      int (*format)(const char *, size_t, char **, pd_error *), char **ret,
		      pd_error *err)
{
	struct desk_ctx c;
	struct pd_buf out = {0};
	int r = desk_live(e, id, &c, err);

	if (r >= 0)
		r = desk_run(&c, (const char *const *)argv, false, DESK_OUT_MAX, &out, err);
	if (r >= 0)
		r = format(out.data ? out.data : "", out.len, ret, err);
	pd_buf_free(&out);
	return r;
}

int engine_box_desktop_windows(struct engine *e, int64_t id, char **ret, pd_error *err)
{
	return desk_query(e, id, eng_desktop_windows_argv(), eng_desktop_windows_format, ret, err);
}

int engine_box_desktop_cursor(struct engine *e, int64_t id, char **ret, pd_error *err)
{
	return desk_query(e, id, eng_desktop_cursor_argv(), eng_desktop_cursor_format, ret, err);
}
