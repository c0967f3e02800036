/* check_engine.c - the engine driven through the in-memory runtime
 * (runtime/fake.h), without root and without crun: box lifecycle, what a
 * restart finds after PID 1 crashed or the daemon died mid-snapshot, the
 * runtime's failures and what they leave, limits, usage, exec jobs.
 *
 * Everything but the runtime is real: the store, the boxes' directories,
 * their overlay roots and views, the stop's snapshot, the job directories
 * and their inotify watch. The overlay and bind mounts are made in a user
 * and mount namespace of the test's own, which an unprivileged user may
 * make (Linux 5.11+): started as root, the test runs itself again as
 * nobody (setpriv), so the suite proves it needs no root. Left out, for
 * want of root: networking (network off), box user namespaces (userns off:
 * id-mapped mounts need a range of host ids), the disk limit (loop
 * devices), lxcfs; each has its own root tests. */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <pthread.h>
#include <grp.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check-mounts.h"
#include "check-tap.h"
#include "engine/engine.h"
#include "engine/jobs.h"
#include "engine/volumes.h"
#include "runtime/fake.h"
#include "store/store.h"
#include "common/util.h"

/* Paths that do not exist: the fake never runs a program. */
#define NO_CRUN "/nonexistent/crun"
#define NO_INIT "/nonexistent/paddock-init"
#define NOBODY 65534

static char base[64];
static char tmp[128];
static struct pd_config cfg;
static struct runtime *rt;
static struct engine *eng;

static void replace(char **field, const char *value)
{
	free(*field);
	*field = strdup(value);
	ck_assert_ptr_nonnull(*field);
}

static void put(const char *path, const char *text)
{
	ck_assert_int_eq(write_file_atomic(path, text, strlen(text), 0644), 0);
}

static void engine_up(void)
{
	pd_error err = {0};
	int r = engine_new_on(&cfg, NO_INIT, rt, &eng, &err);

	ck_assert_msg(r == 0, "engine_new_on: %d %s", r, err.msg);
}

/* The daemon stops and starts again; the runtime (and what runs) stays. */
static void restart(void)
{
	eng = engine_free(eng);
	engine_up();
}

static void setup(void)
{
	char path[256];
	pd_error err = {0};

	snprintf(tmp, sizeof tmp, "%s/t.XXXXXX", base);
	ck_assert_ptr_nonnull(mkdtemp(tmp));
	ck_assert_int_eq(config_load(NULL, &cfg, &err), 0);
	snprintf(path, sizeof path, "%s/data", tmp);
	replace(&cfg.data, path);
	snprintf(path, sizeof path, "%s/run", tmp);
	replace(&cfg.run, path);
	replace(&cfg.default_image, "tiny");
	replace(&cfg.crun, NO_CRUN);
	cfg.network = false;
	cfg.userns = false;
	cfg.disk_limit = false;
	free(cfg.lxcfs);
	cfg.lxcfs = NULL;

	snprintf(path, sizeof path, "%s/images/tiny/rootfs/etc", cfg.data);
	ck_assert_int_eq(mkdir_p(path, 0755), 0);
	snprintf(path, sizeof path, "%s/images/tiny/rootfs/etc/passwd", cfg.data);
	put(path, "root:x:0:0:root:/root:/bin/sh\n");
	snprintf(path, sizeof path, "%s/images/tiny/description", cfg.data);
	put(path, "Tiny test image\n");
	snprintf(path, sizeof path, "%s/images/tiny/size", cfg.data);
	put(path, "4096\n");
	snprintf(path, sizeof path, "%s/images/tiny/created", cfg.data);
	put(path, "2026-01-01T00:00:00Z\n");

	ck_assert_int_eq(runtime_fake_new(&rt), 0);
	engine_up();
}

static void teardown(void)
{
	eng = engine_free(eng);
	rt = runtime_free(rt);
	detach_under(tmp);
	config_release(&cfg);
	rm_rf(tmp);
}

static enum box_state state_of(const char *name)
{
	struct box_view v;

	ck_assert_int_eq(engine_box_get(eng, name, &v), 0);
	return v.state;
}

/* The id of box name, which exists: what the engine's calls take. */
static int64_t id_of(const char *name)
{
	struct box_view v;

	ck_assert_int_eq(engine_box_get(eng, name, &v), 0);
	return v.id;
}

static void set_state_ok(const char *name, const char *state)
{
	pd_error err = {0};
	int r = engine_box_set_state(eng, id_of(name), state, &err);

	ck_assert_msg(r == 0, "state %s: %d %s", state, r, err.msg);
}

static void create_ok(const char *name)
{
	pd_error err = {0};
	int r = engine_box_create(eng, name, &err);

	ck_assert_msg(r == 0, "create %s: %d %s", name, r, err.msg);
}

/* The box's event stream, whole (malloc'd). */
static char *events_of(const char *name)
{
	struct box_view v;
	char *buf;
	size_t len = 0;
	ssize_t n;
	int fd;

	ck_assert_int_eq(engine_box_get(eng, name, &v), 0);
	fd = engine_events_open(eng, (uint64_t)v.id);
	ck_assert_int_ge(fd, 0);
	buf = calloc(1, 65537);
	ck_assert_ptr_nonnull(buf);
	while ((n = read(fd, buf + len, 65536 - len)) > 0)
		len += (size_t)n;
	close(fd);
	return buf;
}

/* The test itself has no root on the host: uid 0 here is another id there
 * (/proc/self/uid_map: inside, outside, count). */
START_TEST(t_no_root)
{
	_cleanup_free_ char *map = NULL;
	unsigned inside, outside, count;

	ck_assert_int_eq(read_file_at(AT_FDCWD, "/proc/self/uid_map", 4096, &map, NULL), 0);
	ck_assert_int_eq(sscanf(map, "%u %u %u", &inside, &outside, &count), 3);
	ck_assert_uint_eq(inside, 0);
	ck_assert_uint_ne(outside, 0);
	ck_assert_uint_eq(count, 1);
	ck_assert_int_eq(access(NO_CRUN, F_OK), -1);
}
END_TEST

/* create, start, stop, start again, delete: what the engine says and what
 * the runtime was asked. */
START_TEST(t_lifecycle)
{
	struct runtime_fake_box fb;
	struct box_view v;
	char rootfs[4096], path[4200];
	_cleanup_free_ char *events = NULL, *passwd = NULL;
	char **snaps = NULL;
	size_t n_snaps = 0;
	pid_t first;
	pd_error err = {0};

	create_ok("a");
	ck_assert_int_eq(state_of("a"), BOX_CREATED);
	ck_assert_int_eq(runtime_fake_get(rt, "a", &fb), -ENOENT);
	/* Its root is the overlay, mounted at create: the image shows. */
	ck_assert_int_eq(engine_box_rootfs(eng, id_of("a"), rootfs, sizeof rootfs), 0);
	snprintf(path, sizeof path, "%s/etc/passwd", rootfs);
	ck_assert_int_eq(read_file_at(AT_FDCWD, path, 4096, &passwd, NULL), 0);
	ck_assert_str_eq(passwd, "root:x:0:0:root:/root:/bin/sh\n");

	set_state_ok("a", "running");
	ck_assert_int_eq(engine_box_get(eng, "a", &v), 0);
	ck_assert_int_eq(v.state, BOX_RUNNING);
	ck_assert_int_eq(runtime_fake_get(rt, "a", &fb), 0);
	ck_assert_int_eq(fb.status, RUNTIME_RUNNING);
	ck_assert_int_eq(v.pid, fb.pid);
	ck_assert_str_eq(fb.rootfs, rootfs);
	ck_assert_str_eq(fb.hostname, "a");
	ck_assert_str_eq(fb.type, cfg.default_type);
	ck_assert(!fb.netns);
	ck_assert_uint_eq(fb.uid_base, 0);
	first = fb.pid;
	/* Running twice is nothing to do: the runtime is not asked again. */
	set_state_ok("a", "running");
	ck_assert_uint_eq(runtime_fake_calls(rt, RUNTIME_FAKE_START), 1);

	/* A change while it runs: the stop freezes it into a snapshot. */
	snprintf(path, sizeof path, "%s/made-by-the-box", rootfs);
	put(path, "x\n");
	set_state_ok("a", "stopped");
	ck_assert_int_eq(state_of("a"), BOX_STOPPED);
	ck_assert_int_eq(runtime_fake_get(rt, "a", &fb), -ENOENT);
	ck_assert_uint_eq(fb.last_grace, cfg.stop_grace);
	ck_assert_int_eq(engine_snapshot_names(eng, id_of("a"), &snaps, &n_snaps), 0);
	ck_assert_uint_eq(n_snaps, 1);
	image_list_free(snaps, n_snaps);
	/* The change is still there, from the snapshot's layer. */
	ck_assert_int_eq(access(path, F_OK), 0);

	set_state_ok("a", "running");
	ck_assert_int_eq(runtime_fake_get(rt, "a", &fb), 0);
	ck_assert_int_ne(fb.pid, first);
	ck_assert_int_eq(access(path, F_OK), 0);

	events = events_of("a");
	ck_assert_ptr_nonnull(strstr(events, " a created\n"));
	ck_assert_ptr_nonnull(strstr(strstr(events, " a started\n"), " a stopped\n"));

	ck_assert_int_eq(engine_box_delete(eng, id_of("a"), &err), 0);
	ck_assert_int_eq(engine_box_get(eng, "a", &v), -ENOENT);
	ck_assert_int_eq(runtime_fake_get(rt, "a", &fb), -ENOENT);
	ck_assert_int_eq(access(rootfs, F_OK), -1);
	/* Deleted means gone at the next start too. */
	restart();
	ck_assert_int_eq(engine_box_get(eng, "a", &v), -ENOENT);
}
END_TEST

/* PID 1 crashed: a stop of the box still works (the runtime deletes what
 * is left), and so does the next start. */
START_TEST(t_crash_then_stop)
{
	struct runtime_fake_box fb;

	create_ok("a");
	set_state_ok("a", "running");
	ck_assert_int_eq(runtime_fake_crash(rt, "a"), 0);
	set_state_ok("a", "stopped");
	ck_assert_int_eq(state_of("a"), BOX_STOPPED);
	ck_assert_int_eq(runtime_fake_get(rt, "a", &fb), -ENOENT);
	set_state_ok("a", "running");
	ck_assert_int_eq(runtime_fake_get(rt, "a", &fb), 0);
	ck_assert_int_eq(fb.status, RUNTIME_RUNNING);
}
END_TEST

/* PID 1 crashed while the daemon was down: the next start finds the box
 * stopped, says so in its events, and clears the dead container. A box
 * still running is adopted (its PID, no new start). */
START_TEST(t_crash_across_restart)
{
	struct runtime_fake_box fb;
	struct box_view v;
	_cleanup_free_ char *events = NULL;
	pid_t b_pid;

	create_ok("a");
	create_ok("b");
	set_state_ok("a", "running");
	set_state_ok("b", "running");
	ck_assert_int_eq(runtime_fake_get(rt, "b", &fb), 0);
	b_pid = fb.pid;
	eng = engine_free(eng);
	ck_assert_int_eq(runtime_fake_crash(rt, "a"), 0);
	engine_up();

	ck_assert_int_eq(engine_box_get(eng, "a", &v), 0);
	ck_assert_int_eq(v.state, BOX_STOPPED);
	ck_assert_int_eq(v.pid, 0);
	ck_assert_int_eq(runtime_fake_get(rt, "a", &fb), -ENOENT);
	events = events_of("a");
	ck_assert_ptr_nonnull(
	    strstr(events, "stopped (its container ended while paddockd was down)"));

	ck_assert_int_eq(engine_box_get(eng, "b", &v), 0);
	ck_assert_int_eq(v.state, BOX_RUNNING);
	ck_assert_int_eq(v.pid, b_pid);
	ck_assert_uint_eq(runtime_fake_calls(rt, RUNTIME_FAKE_START), 2);

	set_state_ok("a", "running");
	ck_assert_int_eq(state_of("a"), BOX_RUNNING);
}
END_TEST

/* The runtime cannot say what runs at start: the recorded state stands and
 * the reason is in the box's error; the next start that can ask fixes it. */
START_TEST(t_status_unknown_at_restart)
{
	struct box_view v;

	create_ok("a");
	set_state_ok("a", "running");
	eng = engine_free(eng);
	ck_assert_int_eq(runtime_fake_crash(rt, "a"), 0);
	runtime_fake_fail(rt, RUNTIME_FAKE_STATUS, -EIO, 1);
	engine_up();
	ck_assert_int_eq(engine_box_get(eng, "a", &v), 0);
	ck_assert_int_eq(v.state, BOX_RUNNING);
	ck_assert_ptr_nonnull(strstr(v.error, "state: fake runtime: status fails"));
	ck_assert_ptr_nonnull(strstr(v.error, "(EIO)"));

	restart();
	ck_assert_int_eq(state_of("a"), BOX_STOPPED);
}
END_TEST

/* A failed start changes nothing: the box stays created, nothing runs,
 * and the next start works. */
START_TEST(t_start_fails)
{
	struct runtime_fake_box fb;
	pd_error err = {0};

	create_ok("a");
	runtime_fake_fail(rt, RUNTIME_FAKE_START, -EIO, 1);
	ck_assert_int_eq(engine_box_set_state(eng, id_of("a"), "running", &err), -EIO);
	ck_assert_str_eq(err.msg, "fake runtime: start fails (as the test asked)");
	ck_assert_int_eq(state_of("a"), BOX_CREATED);
	ck_assert_int_eq(runtime_fake_get(rt, "a", &fb), -ENOENT);
	set_state_ok("a", "running");
	ck_assert_int_eq(state_of("a"), BOX_RUNNING);
}
END_TEST

/* A failed stop leaves the box running (and its container), as a failed
 * delete leaves the box; both work the next time. */
START_TEST(t_stop_and_delete_fail)
{
	struct runtime_fake_box fb;
	struct box_view v;
	pd_error err = {0};
	char rootfs[4096];

	create_ok("a");
	set_state_ok("a", "running");
	runtime_fake_fail(rt, RUNTIME_FAKE_STOP, -EBUSY, 1);
	ck_assert_int_eq(engine_box_set_state(eng, id_of("a"), "stopped", &err), -EBUSY);
	ck_assert_int_eq(state_of("a"), BOX_RUNNING);
	ck_assert_int_eq(runtime_fake_get(rt, "a", &fb), 0);
	ck_assert_int_eq(fb.status, RUNTIME_RUNNING);

	ck_assert_int_eq(engine_box_rootfs(eng, id_of("a"), rootfs, sizeof rootfs), 0);
	runtime_fake_fail(rt, RUNTIME_FAKE_STOP, -EIO, 1);
	pd_error_clear(&err);
	ck_assert_int_eq(engine_box_delete(eng, id_of("a"), &err), -EIO);
	ck_assert_int_eq(engine_box_get(eng, "a", &v), 0);
	ck_assert_int_eq(v.state, BOX_RUNNING);
	ck_assert_int_eq(access(rootfs, F_OK), 0);
	/* Not left half-deleted across a restart either. */
	restart();
	ck_assert_int_eq(state_of("a"), BOX_RUNNING);

	pd_error_clear(&err);
	ck_assert_int_eq(engine_box_delete(eng, id_of("a"), &err), 0);
	ck_assert_int_eq(runtime_fake_get(rt, "a", &fb), -ENOENT);
}
END_TEST

/* A snapshot of a running box pauses and resumes it; a pause that fails
 * fails the snapshot and leaves the box running. A daemon that died with
 * the box paused resumes it at start. */
START_TEST(t_snapshot_pauses)
{
	struct runtime_fake_box fb;
	char id[64];
	pd_error err = {0};
	int r;

	create_ok("a");
	set_state_ok("a", "running");
	r = engine_box_snapshot(eng, id_of("a"), "one", id, sizeof id, &err);
	ck_assert_msg(r == 0, "snapshot: %d %s", r, err.msg);
	ck_assert_uint_eq(runtime_fake_calls(rt, RUNTIME_FAKE_PAUSE), 1);
	ck_assert_uint_eq(runtime_fake_calls(rt, RUNTIME_FAKE_RESUME), 1);
	ck_assert_int_eq(runtime_fake_get(rt, "a", &fb), 0);
	ck_assert_int_eq(fb.status, RUNTIME_RUNNING);

	runtime_fake_fail(rt, RUNTIME_FAKE_PAUSE, -EIO, 1);
	ck_assert_int_lt(engine_box_snapshot(eng, id_of("a"), "two", id, sizeof id, &err), 0);
	ck_assert_int_eq(state_of("a"), BOX_RUNNING);
	ck_assert_int_eq(runtime_fake_get(rt, "a", &fb), 0);
	ck_assert_int_eq(fb.status, RUNTIME_RUNNING);

	eng = engine_free(eng);
	ck_assert_int_eq(runtime_pause(rt, "a", &err), 0);
	engine_up();
	ck_assert_int_eq(state_of("a"), BOX_RUNNING);
	ck_assert_int_eq(runtime_fake_get(rt, "a", &fb), 0);
	ck_assert_int_eq(fb.status, RUNTIME_RUNNING);
}
END_TEST

/* type: the runtime applies the new limits to a running box, which the
 * limits file then shows; a runtime that refuses leaves the old type. */
START_TEST(t_type_limits_usage)
{
	const struct box_type *medium = config_find_type(&cfg, "medium");
	struct runtime_fake_box fb;
	struct cgroup_limits lim;
	struct box_usage u;
	struct box_view v;
	pd_error err = {0};

	ck_assert_ptr_nonnull(medium);
	ck_assert_str_ne(cfg.default_type, "medium");
	create_ok("a");
	set_state_ok("a", "running");
	ck_assert_int_eq(engine_box_set_type(eng, id_of("a"), "medium", &err), 0);
	ck_assert_int_eq(runtime_fake_get(rt, "a", &fb), 0);
	ck_assert_str_eq(fb.type, "medium");
	ck_assert_int_eq(engine_box_limits(eng, id_of("a"), &lim), 0);
	ck_assert_uint_eq(lim.memory_bytes, medium->memory);
	ck_assert_uint_eq(lim.pids, medium->pids);
	ck_assert_uint_eq(lim.cpu_quota_usec * 1000 / lim.cpu_period_usec, medium->millicpus);

	runtime_fake_fail(rt, RUNTIME_FAKE_UPDATE, -EIO, 1);
	ck_assert_int_eq(engine_box_set_type(eng, id_of("a"), cfg.default_type, &err), -EIO);
	ck_assert_int_eq(engine_box_get(eng, "a", &v), 0);
	ck_assert_str_eq(v.type, "medium");

	ck_assert_int_eq(
	    runtime_fake_set_usage(
		rt, "a",
		&(struct cgroup_usage){.cpu_usec = 7000000, .memory_bytes = 12345, .pids = 3}),
	    0);
	ck_assert_int_eq(engine_box_usage(eng, id_of("a"), ENGINE_USAGE_NO_WALK, &u), 0);
	ck_assert_uint_eq(u.cpu_usec, 7000000);
	ck_assert_uint_eq(u.memory_bytes, 12345);
	ck_assert_uint_eq(u.pids, 3);
	/* Stopped: no cgroup figures. */
	set_state_ok("a", "stopped");
	ck_assert_int_eq(engine_box_usage(eng, id_of("a"), ENGINE_USAGE_NO_WALK, &u), 0);
	ck_assert_uint_eq(u.memory_bytes, 0);
	ck_assert_uint_eq(u.pids, 0);
}
END_TEST

/* Waits (5 s at most) for job name of box to end. */
static struct job_view job_ended(const char *box, const char *name)
{
	struct job_view jv = {0};

	for (int i = 0; i < 500; i++) {
		ck_assert_int_eq(engine_job_get(eng, id_of(box), name, &jv), 0);
		if (jv.state == JOB_ENDED)
			break;
		usleep(10000);
	}
	ck_assert_int_eq(jv.state, JOB_ENDED);
	return jv;
}

static void job_file_is(int64_t id, const char *file, const char *want)
{
	_cleanup_free_ char *v = NULL;
	size_t n;

	ck_assert_int_eq(engine_job_read(eng, id, file, &v, &n), 0);
	ck_assert_str_eq(v, want);
}

/* exec: the first job of a created box starts it; the job's end comes back
 * through its files (the inotify thread), its exit and output readable. */
START_TEST(t_jobs)
{
	struct runtime_fake_box fb;
	struct job_view jv;
	char name[32];
	pd_error err = {0};
	int r;

	ck_assert_int_eq(engine_start_timers(eng), 0);
	create_ok("a");
	runtime_fake_set_exit(rt, 3, "hello\n");
	r = engine_job_new(eng, id_of("a"), "echo hello; exit 3", name, sizeof name, &err);
	ck_assert_msg(r == 0, "job: %d %s", r, err.msg);
	ck_assert_int_eq(state_of("a"), BOX_RUNNING);
	ck_assert_int_eq(runtime_fake_get(rt, "a", &fb), 0);
	ck_assert_uint_eq(fb.execs, 1);
	ck_assert_str_eq(fb.last_cmd, "echo hello; exit 3");
	jv = job_ended("a", name);
	job_file_is(jv.id, "exit", "3\n");
	job_file_is(jv.id, "stdout", "hello\n");

	runtime_fake_set_exit(rt, -9, NULL);
	ck_assert_int_eq(engine_job_new(eng, id_of("a"), "sleep 100", name, sizeof name, &err), 0);
	jv = job_ended("a", name);
	job_file_is(jv.id, "exit", "137\n");
	job_file_is(jv.id, "status", "killed SIGKILL\n");

	/* An exec the runtime refuses: the job is not left behind. */
	runtime_fake_fail(rt, RUNTIME_FAKE_EXEC, -EIO, 1);
	pd_error_clear(&err);
	ck_assert_int_eq(engine_job_new(eng, id_of("a"), "true", name, sizeof name, &err), -EIO);
	ck_assert_str_eq(err.msg, "fake runtime: exec fails (as the test asked)");
	ck_assert_int_eq(runtime_fake_get(rt, "a", &fb), 0);
	ck_assert_uint_eq(fb.execs, 2);

	/* A box whose PID 1 died runs no job. */
	ck_assert_int_eq(runtime_fake_crash(rt, "a"), 0);
	pd_error_clear(&err);
	ck_assert_int_lt(engine_job_new(eng, id_of("a"), "true", name, sizeof name, &err), 0);
	ck_assert_ptr_nonnull(strstr(err.msg, "not running"));
}
END_TEST

/* A TTL that runs out stops the box through the runtime. */
START_TEST(t_ttl_stops)
{
	struct runtime_fake_box fb;
	pd_error err = {0};
	int i;

	ck_assert_int_eq(engine_start_timers(eng), 0);
	create_ok("a");
	set_state_ok("a", "running");
	ck_assert_int_eq(engine_box_set_ttl(eng, id_of("a"), "1", &err), 0);
	for (i = 0; i < 500 && state_of("a") != BOX_STOPPED; i++)
		usleep(10000);
	ck_assert_int_eq(state_of("a"), BOX_STOPPED);
	ck_assert_int_eq(runtime_fake_get(rt, "a", &fb), -ENOENT);
}
END_TEST

/* An id whose object was deleted reaches nothing, even when an object of
 * the same name was made since: every call on an existing box, job or
 * volume is -ENOENT for it, and the new object is left as it was. */
START_TEST(t_stale_id)
{
	int64_t old_box, old_job, old_vol;
	struct job_view jv;
	struct volume_view vv;
	struct box_view v, before;
	struct box_usage u;
	char buf[4096], *text = NULL, **names = NULL;
	size_t n = 0;
	pd_error err = {0};

	create_ok("a");
	old_box = id_of("a");
	ck_assert_int_eq(engine_job_create(eng, old_box, "j", &err), 0);
	ck_assert_int_eq(engine_job_get(eng, old_box, "j", &jv), 0);
	old_job = jv.id;
	ck_assert_int_eq(engine_box_delete(eng, old_box, &err), 0);
	create_ok("a");
	ck_assert_int_ne(id_of("a"), old_box);
	ck_assert_int_eq(engine_job_create(eng, id_of("a"), "j", &err), 0);
	ck_assert_int_eq(engine_box_get(eng, "a", &before), 0);

	ck_assert_int_eq(engine_box_get_by_id(eng, old_box, &v), -ENOENT);
	pd_error_clear(&err);
	ck_assert_int_eq(engine_box_set_ttl(eng, old_box, "1h", &err), -ENOENT);
	ck_assert_ptr_nonnull(strstr(err.msg, "deleted"));
	ck_assert_int_eq(engine_box_set_state(eng, old_box, "running", &err), -ENOENT);
	ck_assert_int_eq(engine_box_set_type(eng, old_box, "medium", &err), -ENOENT);
	ck_assert_int_eq(engine_box_set_image(eng, old_box, "tiny", &err), -ENOENT);
	ck_assert_int_eq(engine_box_set_policy(eng, old_box, "allow-all\n", 10, &err), -ENOENT);
	ck_assert_int_eq(engine_box_set_volumes(eng, old_box, "", 0, &err), -ENOENT);
	ck_assert_int_eq(engine_box_snapshot(eng, old_box, "x", buf, sizeof buf, &err), -ENOENT);
	ck_assert_int_eq(engine_box_fork(eng, old_box, "c", buf, sizeof buf, &err), -ENOENT);
	ck_assert_int_eq(engine_box_restore(eng, old_box, "x", NULL, &err), -ENOENT);
	ck_assert_int_eq(engine_job_new(eng, old_box, "true", buf, sizeof buf, &err), -ENOENT);
	ck_assert_int_eq(engine_job_create(eng, old_box, "k", &err), -ENOENT);
	ck_assert_int_eq(engine_job_delete(eng, old_job, &err), -ENOENT);
	ck_assert_int_eq(engine_job_names(eng, old_box, &names, &n), -ENOENT);
	ck_assert_int_eq(engine_snapshot_names(eng, old_box, &names, &n), -ENOENT);
	ck_assert_int_eq(engine_box_usage(eng, old_box, ENGINE_USAGE_NO_WALK, &u), -ENOENT);
	ck_assert_int_eq(engine_box_rootfs(eng, old_box, buf, sizeof buf), -ENOENT);
	ck_assert_int_eq(engine_box_ip(eng, old_box, buf, sizeof buf), -ENOENT);
	ck_assert_int_eq(engine_box_policy(eng, old_box, &text), -ENOENT);
	engine_box_record_error(eng, old_box, "ttl", &err);
	ck_assert_int_eq(engine_box_delete(eng, old_box, &err), -ENOENT);

	/* The new box a: untouched. */
	ck_assert_int_eq(engine_box_get(eng, "a", &v), 0);
	ck_assert_int_eq(v.state, BOX_CREATED);
	ck_assert_str_eq(v.type, cfg.default_type);
	ck_assert_int_eq(v.expires, before.expires);
	ck_assert_str_eq(v.error, "");
	ck_assert_int_eq(engine_job_get(eng, v.id, "j", &jv), 0);
	ck_assert_int_ne(jv.id, old_job);
	ck_assert_int_eq(engine_job_names(eng, v.id, &names, &n), 0);
	ck_assert_uint_eq(n, 1);
	image_list_free(names, n);
	ck_assert_uint_eq(runtime_fake_calls(rt, RUNTIME_FAKE_START), 0);

	/* A volume: the same. */
	ck_assert_int_eq(engine_volume_create(eng, "v", &err), 0);
	ck_assert_int_eq(engine_volume_get(eng, "v", &vv), 0);
	old_vol = vv.id;
	ck_assert_int_eq(engine_volume_delete(eng, old_vol, &err), 0);
	ck_assert_int_eq(engine_volume_create(eng, "v", &err), 0);
	ck_assert_int_eq(engine_volume_get(eng, "v", &vv), 0);
	ck_assert_int_ne(vv.id, old_vol);
	pd_error_clear(&err);
	ck_assert_int_eq(engine_volume_delete(eng, old_vol, &err), -ENOENT);
	ck_assert_ptr_nonnull(strstr(err.msg, "deleted"));
	ck_assert_int_eq(engine_volume_datadir(eng, old_vol, buf, sizeof buf), -ENOENT);
	ck_assert_int_eq(engine_volume_data(eng, old_vol, buf, sizeof buf), -ENOENT);
	engine_volume_record_error(eng, old_vol, "import", &err);
	ck_assert_int_eq(engine_volume_get(eng, "v", &vv), 0);
	ck_assert_str_eq(vv.error, "");
	ck_assert_int_eq(engine_volume_delete(eng, vv.id, &err), 0);
}
END_TEST

struct delete_call {
	int64_t id;
	int r;
	pd_error err;
};

static void *delete_main(void *userdata)
{
	struct delete_call *c = userdata;

	c->r = engine_box_delete(eng, c->id, &c->err);
	return NULL;
}

/* The layer collector reads the rows outside the engine lock: a layer no
 * row named when it read, but that an action claimed before it took the
 * lock (here an intent row, committed while the collector is held between
 * its read and its lock), is kept; once nothing claims it, it goes. */
START_TEST(t_gc_keeps_claimed_layer)
{
	char db[256], layer[300], hold[256], arm[300], held[300], env[300];
	struct intent_row in = {.kind = "snapshot", .box_id = 1};
	struct delete_call c = {0};
	struct store *s = NULL;
	pd_error err = {0};
	pthread_t t;
	int64_t size;
	int i;

	snprintf(db, sizeof db, "%s/paddock.db", cfg.data);
	ck_assert_int_eq(store_open(db, &s, &err), 0);
	/* A layer nothing uses: its row and its directory. */
	ck_assert_int_eq(store_layer_insert(s, time(NULL), &in.layer, &err), 0);
	snprintf(layer, sizeof layer, "%s/layers/L%lld", cfg.data, (long long)in.layer);
	ck_assert_int_eq(mkdir_p(layer, 0755), 0);
	create_ok("a");
	create_ok("b");
	c.id = id_of("a");

	snprintf(hold, sizeof hold, "%s/hold", tmp);
	snprintf(arm, sizeof arm, "%s/arm", hold);
	snprintf(held, sizeof held, "%s/held", hold);
	snprintf(env, sizeof env, "gc-read:%s", hold);
	ck_assert_int_eq(mkdir(hold, 0700), 0);
	put(arm, "");
	setenv("PADDOCK_HOLD", env, 1);
	/* Deleting a box collects garbage: it stops at gc-read, having read
	 * the rows and chosen the layer. */
	ck_assert_int_eq(pthread_create(&t, NULL, delete_main, &c), 0);
	for (i = 0; i < 1000 && access(held, F_OK) < 0; i++)
		usleep(10000);
	ck_assert_msg(access(held, F_OK) == 0, "the collector never reached gc-read");
	/* An action claims the layer now. */
	ck_assert_int_eq(store_intent_insert(s, &in, &err), 0);
	ck_assert_int_eq(unlink(held), 0);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	unsetenv("PADDOCK_HOLD");
	ck_assert_msg(c.r == 0, "delete: %d %s", c.r, c.err.msg);
	ck_assert_msg(access(layer, F_OK) == 0, "a claimed layer was removed");
	ck_assert_int_eq(store_layer_get_size(s, in.layer, &size), 0);

	/* Unclaimed, it goes at the next collection. */
	ck_assert_int_eq(store_intent_delete(s, in.id, &err), 0);
	ck_assert_int_eq(engine_box_delete(eng, id_of("b"), &err), 0);
	ck_assert_int_eq(access(layer, F_OK), -1);
	ck_assert_int_eq(store_layer_get_size(s, in.layer, &size), -ENOENT);
	store_close(s);
}
END_TEST

static Suite *engine_suite(bool as_root)
{
	Suite *s = suite_create("engine");
	TCase *tc = tcase_create("fake runtime");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	if (!as_root)
		tcase_add_test(tc, t_no_root);
	tcase_add_test(tc, t_lifecycle);
	tcase_add_test(tc, t_crash_then_stop);
	tcase_add_test(tc, t_crash_across_restart);
	tcase_add_test(tc, t_status_unknown_at_restart);
	tcase_add_test(tc, t_start_fails);
	tcase_add_test(tc, t_stop_and_delete_fail);
	tcase_add_test(tc, t_snapshot_pauses);
	tcase_add_test(tc, t_type_limits_usage);
	tcase_add_test(tc, t_jobs);
	tcase_add_test(tc, t_ttl_stops);
	tcase_add_test(tc, t_stale_id);
	tcase_add_test(tc, t_gc_keeps_claimed_layer);
	suite_add_tcase(s, tc);
	return s;
}

static int write_to(const char *path, const char *text)
{
	_cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);

	return fd >= 0 && write(fd, text, strlen(text)) == (ssize_t)strlen(text) ? 0 : -1;
}

/* A user namespace where this (unprivileged) user is root, and a mount
 * namespace it owns: the boxes' mounts are made there and end with it. */
static int enter_namespaces(void)
{
	char map[64];
	uid_t uid = getuid();
	gid_t gid = getgid();

	if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0)
		return -1;
	snprintf(map, sizeof map, "0 %u 1\n", (unsigned)uid);
	if (write_to("/proc/self/setgroups", "deny") < 0 || write_to("/proc/self/uid_map", map) < 0)
		return -1;
	snprintf(map, sizeof map, "0 %u 1\n", (unsigned)gid);
	if (write_to("/proc/self/gid_map", map) < 0)
		return -1;
	return mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL);
}

/* Whether nobody may run this program (its directories may be closed to
 * others): a child as nobody tries. */
static bool nobody_reaches(const char *self)
{
	int status;
	pid_t pid = fork();

	if (pid == 0)
		_exit(setgroups(0, NULL) == 0 && setresgid(NOBODY, NOBODY, NOBODY) == 0 &&
			      setresuid(NOBODY, NOBODY, NOBODY) == 0 && access(self, X_OK) == 0
			  ? 0
			  : 1);
	return pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
	       WEXITSTATUS(status) == 0;
}

/* Runs a copy of this program, from a directory nobody can reach, as nobody
 * (the build may sit in a directory closed to others, as a fresh clone in a
 * 0700 temp dir is): its exit status, or -1 when no copy could be made. The
 * copy is removed when it ends. */
static int run_copy_as_nobody(const char *self)
{
	char dir[] = "/tmp/check_engine-self.XXXXXX", copy[sizeof dir + 16];
	_cleanup_free_ char *bytes = NULL;
	size_t len = 0;
	int fd, status = -1;
	pid_t pid;

	if (read_file_at(AT_FDCWD, self, 256u << 20, &bytes, &len) < 0 || !mkdtemp(dir))
		return -1;
	snprintf(copy, sizeof copy, "%s/check_engine", dir);
	fd = open(copy, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755);
	if (fd >= 0 && (write_all(fd, bytes, len) < 0 || close(fd) < 0))
		fd = -1;
	if (fd < 0 || chmod(dir, 0755) < 0 || !nobody_reaches(copy)) {
		(void)unlink(copy);
		(void)rmdir(dir);
		return -1;
	}
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		execl("/usr/bin/setpriv", "setpriv", "--reuid=65534", "--regid=65534",
		      "--clear-groups", "--", copy, (char *)NULL);
		printf("Bail out! cannot run setpriv: %s\n", strerror(errno));
		_exit(EXIT_FAILURE);
	}
	if (pid > 0 && waitpid(pid, &status, 0) == pid)
		status = WIFEXITED(status) ? WEXITSTATUS(status) : EXIT_FAILURE;
	else
		status = EXIT_FAILURE;
	(void)unlink(copy);
	(void)rmdir(dir);
	return status;
}

int main(void)
{
	static const char *const root_only[] = {"t_no_root"};
	const char *why = "runs as root: CHECK_ENGINE_AS_ROOT is set";
	bool as_root = geteuid() == 0;
	char self[4096];
	ssize_t n;
	int r;

	/* As root: again as nobody, to show that no root is needed (unless
	 * CHECK_ENGINE_AS_ROOT is set, or nobody cannot reach the build). */
	if (as_root && !getenv("CHECK_ENGINE_AS_ROOT")) {
		n = readlink("/proc/self/exe", self, sizeof self - 1);
		if (n <= 0) {
			printf("Bail out! cannot find this program: %s\n", strerror(errno));
			return EXIT_FAILURE;
		}
		self[n] = '\0';
		if (nobody_reaches(self)) {
			fflush(stdout);
			execl("/usr/bin/setpriv", "setpriv", "--reuid=65534", "--regid=65534",
			      "--clear-groups", "--", self, (char *)NULL);
			printf("Bail out! cannot run setpriv: %s\n", strerror(errno));
			return EXIT_FAILURE;
		}
		r = run_copy_as_nobody(self);
		if (r >= 0)
			return r;
		why = "runs as root: nobody cannot reach this program's directory, nor a copy";
	}
	if (as_root
		? unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0
		: enter_namespaces() < 0) {
		printf("1..0 # SKIP cannot make a user and mount namespace: %s\n", strerror(errno));
		return 0;
	}
	snprintf(base, sizeof base, "/tmp/check_engine.XXXXXX");
	if (!mkdtemp(base)) {
		printf("Bail out! mkdtemp: %s\n", strerror(errno));
		return EXIT_FAILURE;
	}
	r = as_root ? check_tap_run_skipping(engine_suite(true), root_only, 1, why)
		    : check_tap_run(engine_suite(false));
	/* Whatever a failed test left behind. */
	{
		char pattern[128];
		glob_t g;
		snprintf(pattern, sizeof pattern, "%s/*", base);
		if (glob(pattern, GLOB_NOSORT, NULL, &g) == 0) {
			for (size_t i = 0; i < g.gl_pathc; i++)
				detach_under(g.gl_pathv[i]);
			globfree(&g);
		}
	}
	rm_rf(base);
	return r;
}
