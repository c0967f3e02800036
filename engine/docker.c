/* docker.c - Docker in a box: the `docker` setting, the tier a box with it
 * runs in, Docker's store, and dockerd supervised in the box.
 *
 * The setting (boxes/NAME/docker, engine_box_set_docker()): on, off, or,
 * never written, what the box's image says (its `docker` file: the docker
 * and full images say on). It changes only while the box is stopped (or
 * not yet started): a box with Docker runs in another tier, which is fixed
 * for a run (runtime.h box_spec.docker: every capability of its user
 * namespace, Docker's seccomp profile for them, its cgroup delegated, a
 * cgroup namespace).
 * A running box keeps the tier it started with, so a write of the other
 * value is EBUSY with the reason and changes nothing.
 *
 * The store: /var/lib/docker is bound from DOCKER_DIR on the box's disk
 * (its ext4 image beside upper/ and work/, so within its disk limit and
 * counted in usage; without a disk image, DATA/boxes/ID/docker). Never in
 * the writable layer: snapshots, forks and exports leave it out. A stop
 * then copies the box's changes into its snapshot instead of moving the
 * image (snapshots.c), so the store outlives stops; a fork and a restore
 * start with an empty store (they get a fresh image), and say so in the
 * box's events.
 *
 * The daemon: at every start of a box with Docker on, a supervisor thread
 * (struct eng_dock) runs dockerd in the box as box root through the box's
 * exec server (runtime/box-exec.h), its output appended to
 * /var/log/dockerd.log in the box. When dockerd ends while the box runs,
 * it starts it again after a backoff (1 s doubling to 30 s; back to 1 s
 * after a minute up), each time an event "docker restarted (N): why". The
 * box's stop ends it with the box. A daemon that stops leaves dockerd
 * running; the next one adopts it by its recorded PID and start time
 * (DATA/boxes/ID/docker.pid).
 */
#include <fcntl.h>
#include <linux/openat2.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "common/log.h"
#include "engine/internal.h"
#include "runtime/box-exec.h"
#include "runtime/image.h"

#define DOCK_BACKOFF_MAX_S 30
#define DOCK_STABLE_S 60
#define DOCK_KILL_GRACE_MS 10000
#define DOCK_LOG "/var/log/dockerd.log"

struct eng_dock {
	struct engine *engine;
	int64_t box_id;
	int wake;    /* eventfd: detach asked */
	bool detach; /* end the thread, leave dockerd (daemon stop) */
	bool adopt;  /* first try to adopt a running dockerd */
	bool exited;
	unsigned restarts;
};

/* --- the setting ------------------------------------------------------------------- */

bool eng_image_has_docker(const struct engine *e, const char *image)
{
	struct image_info img;

	return image_get(e->images_dir, image, &img) == 0 && img.docker;
}

bool eng_box_docker(const struct engine *e, const struct box *b)
{
	if (b->row.docker >= 0)
		return b->row.docker > 0;
	return eng_image_has_docker(e, b->row.image);
}

void eng_docker_dir(const struct engine *e, const struct box *b, char *buf, size_t bufsz)
{
	if (eng_box_has_image(e, b))
		eng_box_path(e, b, "disk/" DOCKER_DIR, buf, bufsz);
	else
		eng_box_path(e, b, DOCKER_DIR, buf, bufsz);
}

bool eng_docker_store_empty(const struct engine *e, const struct box *b)
{
	char dir[4096];

	eng_docker_dir(e, b, dir, sizeof dir);
	return access(dir, F_OK) < 0 || eng_dir_empty(dir);
}

/* Whether the box's filesystem has dockerd, looked up inside its root
 * (nothing the box planted leads out of it). */
static bool box_has_dockerd(const struct engine *e, const struct box *b)
{
	static const char *const paths[] = {"usr/bin/dockerd", "usr/sbin/dockerd"};
	struct open_how how = {.flags = O_PATH | O_CLOEXEC, .resolve = RESOLVE_IN_ROOT};
	char rootfs[4096];
	_cleanup_close_ int root = -1;

	eng_box_path(e, b, "rootfs", rootfs, sizeof rootfs);
	root = open(rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return false;
	for (size_t i = 0; i < ELEMENTSOF(paths); i++) {
		int fd = (int)syscall(SYS_openat2, root, paths[i], &how, sizeof how);
		if (fd >= 0) {
			struct stat st;
			bool ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
			close(fd);
			if (ok)
				return true;
		}
	}
	return false;
}

int engine_box_docker_get(struct engine *e, int64_t id, char *buf, size_t bufsz)
{
	struct box *b;
	int r = 0;

	pd_mutex_lock(&e->lock);
	b = eng_find_box_id(e, id);
	if (!b)
		r = -ENOENT;
	else
		snprintf(buf, bufsz, "%s", eng_box_docker(e, b) ? "on" : "off");
	pd_mutex_unlock(&e->lock);
	return r;
}

int engine_box_set_docker(struct engine *e, int64_t id, const char *value, pd_error *err)
{
	struct box *b;
	bool on;
	int r;

	if (strcmp(value, "on") == 0)
		on = true;
	else if (strcmp(value, "off") == 0)
		on = false;
	else
		return pd_error_set(err, -EINVAL, "write on or off (not \"%.40s\")", value);

	pd_mutex_lock(&e->lock);
	r = eng_claim(e, id, &b, err);
	if (r < 0)
		goto out;
	if (on == eng_box_docker(e, b)) {
		/* Pinned: a rebuilt image's default no longer moves it. */
		if (b->row.docker < 0) {
			b->row.docker = on;
			r = eng_save_box(e, b, NULL, err);
		}
		goto out;
	}
	if (b->state != BOX_CREATED && b->state != BOX_STOPPED) {
		r = pd_error_set(err, -EBUSY,
				 "box %s runs with Docker %s: Docker changes the box's privileges, "
				 "so it is set while the box is stopped (write stopped to state "
				 "first)",
				 b->row.name, on ? "off" : "on");
		goto out;
	}
	if (on && !e->cfg->userns) {
		r = pd_error_set(err, -EPERM,
				 "Docker runs only in boxes with a user namespace of their own "
				 "(userns = on in the configuration)");
		goto out;
	}
	if (on && !box_has_dockerd(e, b)) {
		r = pd_error_set(err, -EINVAL,
				 "box %s has no Docker (no /usr/bin/dockerd in it): use the docker "
				 "or full image, or install docker.io in the box first",
				 b->row.name);
		goto out;
	}
	int64_t old = b->row.docker;
	b->row.docker = on;
	r = eng_save_box(e, b, NULL, err);
	if (r < 0)
		b->row.docker = old;
	else
		eng_emit(e, b, "docker %s", on ? "on" : "off");
out:
	pd_mutex_unlock(&e->lock);
	return r;
}

/* --- the store ----------------------------------------------------------------------- */

int eng_docker_prepare(struct engine *e, struct box *b, char *dir, size_t dirsz, pd_error *err)
{
	uint32_t base = eng_box_base(e, b);
	struct stat st;

	eng_docker_dir(e, b, dir, dirsz);
	if (mkdir(dir, 0710) < 0 && errno != EEXIST)
		return pd_error_set(err, -errno, "cannot make the box's Docker store: %s",
				    strerror(errno));
	/* Box root's, as /var/lib/docker is a host's root's; never a link
	 * (the disk is the daemon's, not the box's: none is expected). */
	if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode))
		return pd_error_set(err, -ENOTDIR, "%s is not a directory", dir);
	if ((st.st_uid != base || st.st_gid != base) && lchown(dir, base, base) < 0)
		return pd_error_set(err, -errno, "cannot give the Docker store to the box: %s",
				    strerror(errno));
	return 0;
}

/* --- dockerd ------------------------------------------------------------------------- */

static void pid_path(struct engine *e, int64_t id, char *buf, size_t bufsz)
{
	snprintf(buf, bufsz, "%s/%lld/docker.pid", e->boxes_dir, (long long)id);
}

static int dockerd_start(struct engine *e, int64_t id, const char *server, unsigned sock_gid,
			 struct box_exec_proc *ret, pd_error *err)
{
	/* Its log in the box (the box's to read; the daemon never does), and
	 * a pid file that a dockerd killed with its box left behind, whose
	 * PID may be anyone's in the next run, removed first. */
	static const char script[] = "rm -f /var/run/docker.pid; mkdir -p /var/log; "
				     "exec \"$0\" \"$@\" >>" DOCK_LOG " 2>&1";
	char group[32];
	/* The socket is the image user's group's: jobs run without
	 * supplementary groups (box/init.c), so a `docker` group would not
	 * let the box's user in. */
	const char *const argv[] = {"/bin/sh", "-c", script, "dockerd", "--group", group, NULL};
	static const char *const env[] = {
	    "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root",
	    "LANG=C.UTF-8", NULL};
	_cleanup_close_ int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	int fds[3] = {devnull, devnull, devnull};
	struct box_exec x = {.server = server, .uid = 0, .gid = 0, .cwd = "/", .env = env};
	char path[4200], rec[64];
	int r;

	snprintf(group, sizeof group, "%u", sock_gid);
	if (devnull < 0)
		return pd_error_set(err, -errno, "cannot open /dev/null: %s", strerror(errno));
	x.argv = argv;
	r = box_exec_start(&x, fds, ret, err);
	if (r < 0)
		return r;
	pid_path(e, id, path, sizeof path);
	snprintf(rec, sizeof rec, "%d %llu\n", (int)ret->pid, proc_start_time(ret->pid));
	if (write_file_atomic(path, rec, strlen(rec), 0600) < 0)
		log_warn("cannot record dockerd's pid in %s", path);
	return 0;
}

/* dockerd from before a daemon restart: the recorded process, alive. */
static bool dockerd_adopt(struct engine *e, int64_t id, struct box_exec_proc *p)
{
	_cleanup_free_ char *text = NULL;
	char path[4200];
	unsigned long long start;
	int pid;

	pid_path(e, id, path, sizeof path);
	if (read_file_at(AT_FDCWD, path, 128, &text, NULL) < 0 ||
	    sscanf(text, "%d %llu", &pid, &start) != 2 || pid <= 0)
		return false;
	p->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	p->pid = pid;
	if (p->pidfd < 0 || proc_start_time(pid) != start) {
		/* Not ours (any more): never signalled. */
		box_exec_release(p);
		*p = (struct box_exec_proc)BOX_EXEC_PROC_INIT;
		return false;
	}
	return true;
}

/* Waits until dockerd ends (1, its reason in why) or the thread is woken
 * (0). */
static int dockerd_watch(struct eng_dock *d, struct box_exec_proc *p, char *why, size_t whysz)
{
	for (;;) {
		struct pollfd f[3];
		int n = 0;

		f[n++] = (struct pollfd){.fd = d->wake, .events = POLLIN};
		f[n++] = (struct pollfd){.fd = p->pidfd, .events = POLLIN};
		if (p->conn >= 0)
			f[n++] = (struct pollfd){.fd = p->conn, .events = POLLIN};
		if (poll(f, (nfds_t)n, -1) < 0) {
			if (errno == EINTR)
				continue;
			return 0;
		}
		if (f[0].revents)
			return 0;
		if (p->conn >= 0)
			(void)box_exec_wait(p, 0);
		if (f[1].revents || p->ended) {
			if (p->conn >= 0)
				(void)box_exec_wait(p, 200);
			if (p->ended && WIFEXITED(p->wstatus))
				snprintf(why, whysz, "dockerd exited with status %d (see %s)",
					 WEXITSTATUS(p->wstatus), DOCK_LOG);
			else if (p->ended && WIFSIGNALED(p->wstatus))
				snprintf(why, whysz, "dockerd was killed by signal %d",
					 WTERMSIG(p->wstatus));
			else
				snprintf(why, whysz, "dockerd ended");
			return 1;
		}
	}
}

/* What the thread is to do now (engine lock held): 1 run dockerd (server
 * and the box's root filesystem and image user filled), 0 wait (the box
 * is busy), -1 end. */
static int dock_plan(struct engine *e, struct eng_dock *d, char *server, size_t serversz,
		     char *rootfs, size_t rootfssz, char *user, size_t usersz)
{
	struct box *b = eng_live_box(e, d->box_id);
	struct image_info img;

	if (!b || d->detach || e->stopping || !eng_box_docker(e, b) || b->dock != d)
		return -1;
	if (b->state != BOX_RUNNING)
		return b->busy && b->state == BOX_STARTING ? 0 : -1;
	if (b->busy)
		return 0;
	eng_box_path(e, b, "rootfs", rootfs, rootfssz);
	if (image_get(e->images_dir, b->row.image, &img) < 0)
		snprintf(img.user, sizeof img.user, "root");
	snprintf(user, usersz, "%s", img.user);
	return runtime_exec_socket(e->rt, b->row.name, server, serversz) ? 1 : -1;
}

static void dock_emit_failed(struct engine *e, struct eng_dock *d, unsigned n, const char *why)
{
	pd_mutex_lock(&e->lock);
	struct box *b = eng_live_box(e, d->box_id);
	if (b && b->state == BOX_RUNNING && !d->detach && !e->stopping)
		eng_emit(e, b, "docker not started (%u): %s", n, why);
	pd_mutex_unlock(&e->lock);
}

static void *dock_main(void *userdata)
{
	struct eng_dock *d = userdata;
	struct engine *e = d->engine;
	struct box_exec_proc p = BOX_EXEC_PROC_INIT;
	unsigned long long up_usec = 0;
	unsigned failures = 0;
	bool running = false;

	for (;;) {
		char server[128], why[PD_ERROR_MAX + 64] = "", rootfs[4096], user[64], home[4096];
		unsigned uid = 0, gid = 0;
		pd_error err = {0};
		int plan;

		pd_mutex_lock(&e->lock);
		plan = dock_plan(e, d, server, sizeof server, rootfs, sizeof rootfs, user,
				 sizeof user);
		pd_mutex_unlock(&e->lock);
		if (plan == 0) {
			(void)eng_nap(d->wake, 100);
			continue;
		}
		if (plan < 0)
			break;
		if (!running) {
			/* No such user (a box that changed its passwd): root's
			 * group, root only. */
			if (eng_box_user(rootfs, user, &uid, &gid, home, sizeof home) < 0)
				gid = 0;
			if (d->adopt && dockerd_adopt(e, d->box_id, &p)) {
				log_info("box %lld: dockerd adopted (pid %d)", (long long)d->box_id,
					 (int)p.pid);
			} else if (dockerd_start(e, d->box_id, server, gid, &p, &err) < 0) {
				d->adopt = false;
				failures++;
				snprintf(why, sizeof why, "%s", err.msg);
				log_warn("box %lld: dockerd: %s", (long long)d->box_id, err.msg);
				dock_emit_failed(e, d, failures, why);
				goto backoff;
			}
			d->adopt = false;
			running = true;
			up_usec = now_usec();
		}
		if (dockerd_watch(d, &p, why, sizeof why) == 0)
			break; /* detach */
		running = false;
		eng_proc_end(&p, DOCK_KILL_GRACE_MS);
		if (now_usec() - up_usec > DOCK_STABLE_S * 1000000ULL)
			failures = 0;
		failures++;
		pd_mutex_lock(&e->lock);
		{
			struct box *b = eng_live_box(e, d->box_id);
			if (b && b->state == BOX_RUNNING && !b->busy && !d->detach &&
			    !e->stopping) {
				d->restarts++;
				eng_emit(e, b, "docker restarted (%u): %s", d->restarts, why);
			}
		}
		pd_mutex_unlock(&e->lock);
	backoff:;
		(void)eng_nap(d->wake, eng_backoff_ms(failures, DOCK_BACKOFF_MAX_S));
	}
	/* Detached (the daemon stops): dockerd stays, for the next daemon to
	 * adopt. Otherwise the box stopped or its setting went off. */
	if (running && !d->detach && !e->stopping)
		eng_proc_end(&p, DOCK_KILL_GRACE_MS);
	box_exec_release(&p);
	pd_mutex_lock(&e->lock);
	{
		struct box *b = eng_find_box_id(e, d->box_id);
		if (b && b->dock == d)
			b->dock = NULL;
	}
	e->dock_threads--;
	pthread_cond_broadcast(&e->desk_cond);
	close(d->wake);
	pd_mutex_unlock(&e->lock);
	free(d);
	return NULL;
}

int eng_docker_spawn(struct engine *e, struct box *b, bool adopt)
{
	struct eng_dock *d;
	int r;

	if (b->dock)
		return 0;
	d = calloc(1, sizeof *d);
	if (!d)
		return -ENOMEM;
	d->engine = e;
	d->box_id = b->row.id;
	d->adopt = adopt;
	r = eng_spawn_detached(dock_main, d, &d->wake);
	if (r < 0) {
		free(d);
		return r;
	}
	b->dock = d;
	e->dock_threads++;
	return 0;
}

void eng_docker_start_all(struct engine *e)
{
	pd_mutex_lock(&e->lock);
	for (size_t i = 0; i < e->n_boxes; i++) {
		struct box *b = e->boxes[i];
		if (b->state == BOX_RUNNING && eng_box_docker(e, b) &&
		    eng_docker_spawn(e, b, true) < 0)
			log_warn("box %s: cannot start its Docker's supervisor", b->row.name);
	}
	pd_mutex_unlock(&e->lock);
}

void eng_docker_box_stops(struct engine *e, struct box *b)
{
	(void)e;
	if (!b->dock)
		return;
	/* Its thread ends (its dockerd ends with the box); the box's next
	 * start gets a new one, with no failures counted. */
	(void)eventfd_write(b->dock->wake, 1);
	b->dock = NULL;
}

void eng_docker_stop_all(struct engine *e)
{
	pd_mutex_lock(&e->lock);
	for (size_t i = 0; i < e->n_boxes; i++)
		if (e->boxes[i]->dock) {
			e->boxes[i]->dock->detach = true;
			(void)eventfd_write(e->boxes[i]->dock->wake, 1);
		}
	while (e->dock_threads > 0)
		pd_cond_wait(&e->desk_cond, &e->lock);
	pd_mutex_unlock(&e->lock);
}
