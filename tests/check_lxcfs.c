/* check_lxcfs.c - the lxcfs module's pieces (command line, leftovers,
 * backoff, the views), its start with a binary that fails, the
 * clearing of a leftover process, and the refusal to bind views into the
 * daemon's own mount namespace. A real lxcfs and real boxes are
 * tests/integration/test-lxcfs.sh's. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check-tap.h"
#include "runtime/lxcfs.h"
#include "common/util.h"

static char tmpdir[64];

static void setup(void)
{
	snprintf(tmpdir, sizeof tmpdir, "/tmp/check_lxcfs.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void teardown(void)
{
	rm_rf(tmpdir);
}

START_TEST(test_argv)
{
	const char *argv[16];
	int n = lxcfs_argv("/usr/bin/lxcfs", "/run/pd/lxcfs", "/run/pd/lxcfs.pid", argv, 16);

	ck_assert_int_eq(n, 8);
	ck_assert_str_eq(argv[0], "/usr/bin/lxcfs");
	ck_assert_str_eq(argv[1], "--foreground");
	ck_assert_str_eq(argv[2], "--pidfile");
	ck_assert_str_eq(argv[3], "/run/pd/lxcfs.pid");
	ck_assert_str_eq(argv[4], "--enable-cfs");
	ck_assert_str_eq(argv[5], "--enable-pidfd");
	ck_assert_str_eq(argv[6], "--enable-loadavg");
	ck_assert_str_eq(argv[7], "/run/pd/lxcfs");
	ck_assert_ptr_null(argv[8]);
	ck_assert_int_eq(lxcfs_argv("/usr/bin/lxcfs", "/m", "/p", argv, 8), -E2BIG);
	ck_assert_int_eq(lxcfs_argv("/usr/bin/lxcfs", "/m", "/p", argv, 9), 8);
}
END_TEST

START_TEST(test_cmdline)
{
	static const char ours[] = "/usr/bin/lxcfs\0--foreground\0--pidfile\0/run/pd/lxcfs.pid\0"
				   "--enable-cfs\0/run/pd/lxcfs";
	static const char short_opt[] = "lxcfs\0-p\0/run/pd/lxcfs.pid\0/run/pd/lxcfs";
	static const char other_pid[] = "lxcfs\0-p\0/run/lxcfs.pid\0/run/pd/lxcfs";
	static const char no_pid[] = "lxcfs\0/run/pd/lxcfs.pid\0/run/pd/lxcfs";
	static const char other_mnt[] = "lxcfs\0-p\0/run/pd/lxcfs.pid\0/var/lib/lxcfs";

	ck_assert(lxcfs_cmdline_is_ours(ours, sizeof ours, "/run/pd/lxcfs", "/run/pd/lxcfs.pid"));
	ck_assert(lxcfs_cmdline_is_ours(short_opt, sizeof short_opt, "/run/pd/lxcfs",
					"/run/pd/lxcfs.pid"));
	ck_assert(!lxcfs_cmdline_is_ours(other_pid, sizeof other_pid, "/run/pd/lxcfs",
					 "/run/pd/lxcfs.pid"));
	ck_assert(
	    !lxcfs_cmdline_is_ours(no_pid, sizeof no_pid, "/run/pd/lxcfs", "/run/pd/lxcfs.pid"));
	ck_assert(!lxcfs_cmdline_is_ours(other_mnt, sizeof other_mnt, "/run/pd/lxcfs",
					 "/run/pd/lxcfs.pid"));
	/* Not NUL-terminated, or empty: not judged. */
	ck_assert(
	    !lxcfs_cmdline_is_ours(ours, sizeof ours - 1, "/run/pd/lxcfs", "/run/pd/lxcfs.pid"));
	ck_assert(!lxcfs_cmdline_is_ours("", 0, "/run/pd/lxcfs", "/run/pd/lxcfs.pid"));
}
END_TEST

START_TEST(test_backoff)
{
	ck_assert_uint_eq(lxcfs_backoff_ms(0), 250);
	ck_assert_uint_eq(lxcfs_backoff_ms(1), 250);
	ck_assert_uint_eq(lxcfs_backoff_ms(2), 500);
	ck_assert_uint_eq(lxcfs_backoff_ms(3), 1000);
	ck_assert_uint_eq(lxcfs_backoff_ms(8), 32000);
	ck_assert_uint_eq(lxcfs_backoff_ms(9), 60000);
	ck_assert_uint_eq(lxcfs_backoff_ms(1000), 60000);
	ck_assert_uint_eq(lxcfs_backoff_ms(~0u), 60000);
}
END_TEST

/* Every view: a relative source inside lxcfs's tree, an absolute
 * destination under /proc or /sys, none twice; the files the box's tools
 * read are there. */
START_TEST(test_views)
{
	static const char *const want[] = {
	    "/proc/meminfo", "/proc/cpuinfo",	"/proc/stat",	 "/proc/uptime",
	    "/proc/swaps",   "/proc/diskstats", "/proc/loadavg", "/sys/devices/system/cpu/online"};

	for (size_t i = 0; i < LXCFS_N_VIEWS; i++) {
		const struct lxcfs_view *v = &lxcfs_views[i];
		ck_assert(v->src[0] != '/' && !strstr(v->src, ".."));
		ck_assert(strncmp(v->dst, "/proc/", 6) == 0 || strncmp(v->dst, "/sys/", 5) == 0);
		/* lxcfs's tree mirrors the paths it serves. */
		ck_assert_str_eq(v->src, v->dst + 1);
		for (size_t j = 0; j < i; j++)
			ck_assert_str_ne(v->dst, lxcfs_views[j].dst);
	}
	for (size_t i = 0; i < ELEMENTSOF(want); i++) {
		bool found = false;
		for (size_t j = 0; j < LXCFS_N_VIEWS; j++)
			found |= strcmp(lxcfs_views[j].dst, want[i]) == 0;
		ck_assert_msg(found, "%s is not a view", want[i]);
	}
}
END_TEST

START_TEST(test_start_missing_binary)
{
	struct lxcfs *lx = NULL;
	pd_error err = {0};

	ck_assert_int_eq(lxcfs_start("/nonexistent/lxcfs", tmpdir, NULL, NULL, &lx, &err), -ENOENT);
	ck_assert_ptr_null(lx);
	ck_assert_str_eq(err.msg,
			 "lxcfs not found at /nonexistent/lxcfs: No such file or directory");
	ck_assert_int_eq(lxcfs_generation(NULL, NULL), 0);
}
END_TEST

static int ready_calls;
static void on_ready(void *userdata, struct lxcfs *lx, uint64_t gen)
{
	(void)userdata, (void)lx, (void)gen;
	ready_calls++;
}

/* A binary that fails at once: start says so with its status and its last
 * line, keeps trying in the background (not serving meanwhile), and the
 * stop leaves nothing running. */
START_TEST(test_start_failing_binary)
{
	char bin[128], pidfile[128], script[256];
	struct lxcfs *lx = NULL;
	pd_error err = {0};
	unsigned views = 99;
	int fd;

	snprintf(bin, sizeof bin, "%s/fake-lxcfs", tmpdir);
	snprintf(script, sizeof script,
		 "#!/bin/sh\necho starting\necho \"fuse: device not found, args $*\" >&2\n"
		 "echo $$ >%s/ran\nexit 3\n",
		 tmpdir);
	fd = open(bin, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write_all(fd, script, strlen(script)), 0);
	close(fd);

	ck_assert_int_eq(lxcfs_start(bin, tmpdir, on_ready, NULL, &lx, &err), 0);
	ck_assert_ptr_nonnull(lx);
	ck_assert_int_eq(err.code, -EIO);
	ck_assert_msg(strstr(err.msg, "exited with status 3") &&
			  strstr(err.msg, "fuse: device not found, args --foreground --pidfile") &&
			  strstr(err.msg, "--enable-cfs --enable-pidfd --enable-loadavg"),
		      "%s", err.msg);
	ck_assert_int_eq(lxcfs_generation(lx, &views), 0);
	ck_assert_uint_eq(views, 0);
	snprintf(pidfile, sizeof pidfile, "%s/lxcfs", tmpdir);
	ck_assert_str_eq(lxcfs_dir(lx), pidfile);
	ck_assert_int_eq(lxcfs_attach(lx, getpid(), &err), -ENOTCONN);
	usleep(400 * 1000); /* the watcher tries again after 250 ms */
	ck_assert_ptr_null(lxcfs_stop(lx));
	ck_assert_int_eq(ready_calls, 0);
	snprintf(pidfile, sizeof pidfile, "%s/lxcfs.pid", tmpdir);
	ck_assert_int_ne(access(pidfile, F_OK), 0);
	/* Its children are all reaped: none left for this process. */
	ck_assert_int_eq(waitpid(-1, NULL, WNOHANG), -1);
	ck_assert_int_eq(errno, ECHILD);
}
END_TEST

static pid_t spawn_self(const char *const *argv)
{
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		execv("/proc/self/exe", (char *const *)argv);
		_exit(127);
	}
	return pid;
}

static void write_pidfile(pid_t pid)
{
	char path[128], text[32];

	snprintf(path, sizeof path, "%s/lxcfs.pid", tmpdir);
	snprintf(text, sizeof text, "%d\n", (int)pid);
	ck_assert_int_eq(write_file_replace(path, text, strlen(text)), 0);
}

/* A process named by RUN/lxcfs.pid with lxcfs's command line for this run
 * directory is ended; one with another command line is left alone. (This
 * program, run as `--pidfile FILE DIR`, waits to be killed.) */
START_TEST(test_clear_leftover)
{
	char mnt[128], pidfile[128];
	pd_error err = {0};
	int status;
	pid_t pid;

	snprintf(mnt, sizeof mnt, "%s/lxcfs", tmpdir);
	snprintf(pidfile, sizeof pidfile, "%s/lxcfs.pid", tmpdir);
	ck_assert_int_eq(lxcfs_clear_leftover(tmpdir, &err), 0);

	pid = spawn_self(
	    (const char *const[]){"fake-lxcfs", "--pidfile", "/elsewhere.pid", mnt, NULL});
	write_pidfile(pid);
	usleep(100 * 1000); /* its exec done */
	ck_assert_int_eq(lxcfs_clear_leftover(tmpdir, &err), 0);
	ck_assert_int_eq(waitpid(pid, &status, WNOHANG), 0); /* still running */
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);

	pid = spawn_self((const char *const[]){"fake-lxcfs", "--pidfile", pidfile, mnt, NULL});
	write_pidfile(pid);
	usleep(100 * 1000);
	ck_assert_int_eq(lxcfs_clear_leftover(tmpdir, &err), 1);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	ck_assert_int_ne(access(pidfile, F_OK), 0);

	/* A pidfile naming no process, or garbage: nothing to clear. */
	write_pidfile(pid);
	ck_assert_int_eq(lxcfs_clear_leftover(tmpdir, &err), 0);
	ck_assert_int_eq(write_file_replace(pidfile, "x\n", 2), 0);
	ck_assert_int_eq(lxcfs_clear_leftover(tmpdir, &err), 0);
}
END_TEST

/* Views are never bound into the daemon's own mount namespace (a box's
 * PID reused by a host process), nor into a process that is gone. */
START_TEST(test_refuse_own_namespace)
{
	pd_error err = {0};

	ck_assert_int_eq(lxcfs_detach(getpid(), &err), -EPERM);
	ck_assert_msg(strstr(err.msg, "shares the daemon's mount namespace"), "%s", err.msg);
	ck_assert_int_eq(lxcfs_detach(0x3fffffff, &err), -ESRCH);
	ck_assert_int_eq(lxcfs_attach(NULL, getpid(), &err), -ENOTCONN);
}
END_TEST

static Suite *lxcfs_suite(void)
{
	Suite *s = suite_create("lxcfs");
	TCase *tc;

	tc = tcase_create("core");
	tcase_add_test(tc, test_argv);
	tcase_add_test(tc, test_cmdline);
	tcase_add_test(tc, test_backoff);
	tcase_add_test(tc, test_views);
	suite_add_tcase(s, tc);

	tc = tcase_create("process");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_start_missing_binary);
	tcase_add_test(tc, test_start_failing_binary);
	tcase_add_test(tc, test_clear_leftover);
	tcase_add_test(tc, test_refuse_own_namespace);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "--pidfile") == 0) {
		pause(); /* a leftover "lxcfs" for test_clear_leftover */
		return 0;
	}
	return check_tap_run(lxcfs_suite());
}
