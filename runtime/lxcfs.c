/* lxcfs.c - lxcfs run by the daemon (see lxcfs.h).
 *
 * The watcher thread owns the lxcfs process: it forks it (its stderr into
 * a pipe the watcher reads, for the log and for the reason of a failure),
 * waits for the mount (woken by POLLPRI on /proc/self/mountinfo at every
 * change of the mount table), then waits for the process to end, for its
 * mount to go (someone unmounted it: lxcfs is then killed and started
 * again, or new boxes would fail to bind missing files), or for the stop.
 * lxcfs_generation() is the only state other threads read (an atomic).
 */
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#include "common/log.h"
#include "runtime/lxcfs.h"
#include "common/util.h"

#define LOG_LINE_MAX 512
/* A run at least this long counts as a success: the backoff starts over. */
#define STABLE_USEC (60ULL * 1000 * 1000)

const struct lxcfs_view lxcfs_views[LXCFS_N_VIEWS] = {
    {"proc/meminfo", "/proc/meminfo"},
    {"proc/cpuinfo", "/proc/cpuinfo"},
    {"proc/stat", "/proc/stat"},
    {"proc/uptime", "/proc/uptime"},
    {"proc/swaps", "/proc/swaps"},
    {"proc/diskstats", "/proc/diskstats"},
    {"proc/loadavg", "/proc/loadavg"},
    {"sys/devices/system/cpu/online", "/sys/devices/system/cpu/online"},
};

struct lxcfs {
	char *binary;
	char *dir;     /* RUN/lxcfs */
	char *pidfile; /* RUN/lxcfs.pid */
	lxcfs_ready_fn ready;
	void *userdata;
	_Atomic uint64_t serving; /* the generation mounted now, or 0 */
	_Atomic unsigned views;	  /* of lxcfs_views[], what it serves */

	/* The watcher's own; lxcfs_stop() uses them after joining it. */
	uint64_t last_gen;
	pid_t pid; /* the running lxcfs, 0 when none */
	int pidfd;
	int log_fd; /* read end of its stdout and stderr */
	char line[LOG_LINE_MAX];
	size_t line_len;
	char last_line[LOG_LINE_MAX]; /* its last complete line */

	int stop_fd; /* eventfd: ends the watcher */
	pthread_t thread;
	bool thread_started;
	/* The first try's outcome, for lxcfs_start(). */
	sem_t first_done;
	bool first_reported;
	int first_r;
	pd_error first_err;
};

/* --- pieces ----------------------------------------------------------------- */

int lxcfs_argv(const char *binary, const char *mountpoint, const char *pidfile, const char **argv,
	       size_t n)
{
	const char *const args[] = {
	    binary,	    "--foreground",   "--pidfile",	  pidfile,
	    "--enable-cfs", "--enable-pidfd", "--enable-loadavg", mountpoint};

	if (n < ELEMENTSOF(args) + 1)
		return -E2BIG;
	for (size_t i = 0; i < ELEMENTSOF(args); i++)
		argv[i] = args[i];
	argv[ELEMENTSOF(args)] = NULL;
	return (int)ELEMENTSOF(args);
}

bool lxcfs_cmdline_is_ours(const char *cmdline, size_t len, const char *mountpoint,
			   const char *pidfile)
{
	const char *arg, *last = NULL, *prev = NULL;
	bool pidfile_seen = false;

	if (!cmdline || len == 0 || cmdline[len - 1] != '\0')
		return false;
	for (arg = cmdline; arg < cmdline + len; arg += strlen(arg) + 1) {
		if (prev && (strcmp(prev, "--pidfile") == 0 || strcmp(prev, "-p") == 0) &&
		    strcmp(arg, pidfile) == 0)
			pidfile_seen = true;
		prev = arg;
		last = arg;
	}
	return pidfile_seen && last && strcmp(last, mountpoint) == 0;
}

unsigned lxcfs_backoff_ms(unsigned failures)
{
	unsigned ms = 250;

	for (unsigned i = 1; i < failures && ms < 60000; i++)
		ms *= 2;
	return ms < 60000 ? ms : 60000;
}

/* --- mounts and processes ----------------------------------------------------- */

/* "DIR/NAME", malloc'd, or NULL. */
static char *path_join(const char *dir, const char *name)
{
	char *s;

	return asprintf(&s, "%s/%s", dir, name) < 0 ? NULL : s;
}

/* Whether path is the root of a mount, asked without calling the
 * filesystem (AT_STATX_DONT_SYNC: the kernel's cached attributes), so that
 * an lxcfs that hangs cannot hang the question. A dead FUSE mount (its
 * server gone) counts as a mount. */
static bool is_mount(const char *path)
{
	struct statx sx;

	if (statx(AT_FDCWD, path, AT_NO_AUTOMOUNT | AT_SYMLINK_NOFOLLOW | AT_STATX_DONT_SYNC,
		  STATX_TYPE, &sx) < 0)
		return errno == ENOTCONN || errno == EIO;
	return (sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) &&
	       (sx.stx_attributes & STATX_ATTR_MOUNT_ROOT);
}

/* Detaches every mount stacked on path. */
static int detach_all(const char *path, pd_error *err)
{
	for (int i = 0; i < 16 && is_mount(path); i++)
		if (umount2(path, MNT_DETACH | UMOUNT_NOFOLLOW) < 0 && errno != EINVAL)
			return pd_error_set(err, -errno, "cannot unmount %s: %s", path,
					    strerror(errno));
	return 0;
}

static int pidfd_open(pid_t pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

static int pidfd_kill(int pidfd, int sig)
{
	return (int)syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0);
}

int lxcfs_clear_leftover(const char *run_dir, pd_error *err)
{
	_cleanup_free_ char *mnt = NULL, *pidfile = NULL, *text = NULL, *cmdline = NULL;
	_cleanup_close_ int pidfd = -1;
	char path[64];
	size_t len;
	bool found = false;
	long pid;
	int r;

	mnt = path_join(run_dir, "lxcfs");
	pidfile = path_join(run_dir, "lxcfs.pid");
	if (!mnt || !pidfile)
		return pd_error_set(err, -ENOMEM, "out of memory");
	if (read_file_at(AT_FDCWD, pidfile, 64, &text, NULL) >= 0 &&
	    (pid = strtol(text, NULL, 10)) > 1 && pid < INT32_MAX &&
	    (pidfd = pidfd_open((pid_t)pid)) >= 0) {
		/* Judged after the pidfd is held: the process read is the one
		 * the pidfd refers to, whatever became of the PID before. */
		snprintf(path, sizeof path, "/proc/%ld/cmdline", pid);
		if (read_file_at(AT_FDCWD, path, 65536, &cmdline, &len) >= 0 &&
		    lxcfs_cmdline_is_ours(cmdline, len, mnt, pidfile)) {
			if (pidfd_kill(pidfd, SIGKILL) < 0 && errno != ESRCH)
				return pd_error_set(err, -errno, "cannot end lxcfs (pid %ld): %s",
						    pid, strerror(errno));
			r = pidfd_wait_exit(pidfd, 10000);
			if (r < 0)
				return pd_error_set(err, r, "lxcfs (pid %ld) does not end: %s", pid,
						    strerror(-r));
			found = true;
		}
	}
	if (is_mount(mnt)) {
		r = detach_all(mnt, err);
		if (r < 0)
			return r;
		found = true;
	}
	(void)unlink(pidfile);
	return found;
}

/* --- the watcher ---------------------------------------------------------------- */

/* Reads what lxcfs wrote: each line to the debug log, the last one kept
 * for the reason of a failure. */
static void drain_log(struct lxcfs *lx)
{
	char buf[4096];
	ssize_t n;

	while ((n = read(lx->log_fd, buf, sizeof buf)) > 0)
		for (ssize_t i = 0; i < n; i++) {
			if (buf[i] != '\n' && lx->line_len < sizeof lx->line - 1) {
				lx->line[lx->line_len++] = buf[i];
				continue;
			}
			if (buf[i] != '\n')
				continue; /* too long: the rest of the line is dropped */
			lx->line[lx->line_len] = '\0';
			if (lx->line_len) {
				log_debug("lxcfs: %s", lx->line);
				memcpy(lx->last_line, lx->line, lx->line_len + 1);
			}
			lx->line_len = 0;
		}
}

static int spawn(struct lxcfs *lx, pd_error *err)
{
	const char *argv[16];
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t none, dfl;
	int p[2], r;
	pid_t pid;

	if (lxcfs_argv(lx->binary, lx->dir, lx->pidfile, argv, ELEMENTSOF(argv)) < 0)
		return pd_error_set(err, -E2BIG, "lxcfs: too many arguments");
	if (pipe2(p, O_CLOEXEC) < 0)
		return pd_error_set(err, -errno, "cannot make a pipe: %s", strerror(errno));
	/* posix_spawn, not fork: no copy of the daemon's page tables (slow
	 * for a large or sanitized daemon). lxcfs gets its own session, so
	 * that a terminal's ^C to a foreground daemon does not reach it, an
	 * empty signal mask and SIGPIPE back to its default (the daemon
	 * ignores it, which exec would keep). */
	sigemptyset(&none);
	sigemptyset(&dfl);
	sigaddset(&dfl, SIGPIPE);
	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&attr);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, p[1], 1);
	posix_spawn_file_actions_adddup2(&fa, p[1], 2);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setsigdefault(&attr, &dfl);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK |
					    POSIX_SPAWN_SETSIGDEF);
	r = posix_spawn(&pid, argv[0], &fa, &attr, (char *const *)argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	if (r != 0) {
		close(p[0]);
		close(p[1]);
		return pd_error_set(err, -r, "cannot run %s: %s", lx->binary, strerror(r));
	}
	/* Spared by the OOM killer, as the packaged service is. */
	{
		char path[64];
		snprintf(path, sizeof path, "/proc/%d/oom_score_adj", (int)pid);
		_cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);
		if (fd >= 0)
			(void)!write(fd, "-1000", 5);
	}
	close(p[1]);
	lx->pid = pid;
	lx->pidfd = pidfd_open(pid);
	lx->log_fd = p[0];
	lx->line_len = 0;
	lx->last_line[0] = '\0';
	(void)fcntl(lx->log_fd, F_SETFL, O_NONBLOCK);
	if (lx->pidfd < 0) {
		int e = errno;
		kill(pid, SIGKILL);
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		lx->pid = 0;
		close(lx->log_fd);
		lx->log_fd = -1;
		return pd_error_set(err, -e, "pidfd_open: %s", strerror(e));
	}
	return 0;
}

/* Ends the process (if it still runs), reaps it, detaches its mount.
 * Returns its wait status, or -1 when there was none. */
static int reap(struct lxcfs *lx)
{
	int status = -1;

	atomic_store(&lx->serving, 0);
	if (lx->pid > 0) {
		(void)umount2(lx->dir, MNT_DETACH | UMOUNT_NOFOLLOW);
		(void)pidfd_kill(lx->pidfd, SIGKILL);
		while (waitpid(lx->pid, &status, 0) < 0 && errno == EINTR)
			;
		drain_log(lx);
		lx->pid = 0;
	}
	if (lx->pidfd >= 0)
		close(lx->pidfd);
	if (lx->log_fd >= 0)
		close(lx->log_fd);
	lx->pidfd = lx->log_fd = -1;
	(void)detach_all(lx->dir, NULL);
	(void)unlink(lx->pidfile);
	return status;
}

/* "exited with status N" / "killed by SIGNAME", and lxcfs's last line. */
static void describe_end(const struct lxcfs *lx, int status, char *buf, size_t bufsz)
{
	char how[64];

	if (status >= 0 && WIFEXITED(status))
		snprintf(how, sizeof how, "exited with status %d", WEXITSTATUS(status));
	else if (status >= 0 && WIFSIGNALED(status))
		snprintf(how, sizeof how, "was killed by signal %d (%s)", WTERMSIG(status),
			 strsignal(WTERMSIG(status)));
	else
		snprintf(how, sizeof how, "ended");
	if (lx->last_line[0])
		snprintf(buf, bufsz, "%s (its last words: %s)", how, lx->last_line);
	else
		snprintf(buf, bufsz, "%s", how);
}

enum wait_what { WAIT_MOUNTED, WAIT_UNMOUNTED };

/* Waits, draining lxcfs's output, until its mount is there (WAIT_MOUNTED)
 * or gone (WAIT_UNMOUNTED), the process ended (-ECHILD), the stop was asked
 * (-ECANCELED), or timeout_ms passed (-ETIMEDOUT; -1: no timeout). */
static int wait_for(struct lxcfs *lx, enum wait_what what, int timeout_ms)
{
	_cleanup_close_ int mi = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
	unsigned long long deadline = now_usec() + (unsigned long long)timeout_ms * 1000;

	if (mi < 0)
		return -errno;
	for (;;) {
		struct pollfd p[4] = {{.fd = mi, .events = POLLPRI},
				      {.fd = lx->pidfd, .events = POLLIN},
				      {.fd = lx->log_fd, .events = POLLIN},
				      {.fd = lx->stop_fd, .events = POLLIN}};
		int left = -1;

		/* Looked at after each change (and first): POLLPRI says the
		 * table changed since the last poll of this descriptor. Before
		 * lxcfs mounts, RUN/lxcfs is a plain directory (leftovers were
		 * cleared), so a mount there is lxcfs's. */
		if (is_mount(lx->dir) == (what == WAIT_MOUNTED))
			return 0;
		if (timeout_ms >= 0) {
			unsigned long long now = now_usec();
			if (now >= deadline)
				return -ETIMEDOUT;
			left = (int)((deadline - now + 999) / 1000);
		}
		if (poll(p, ELEMENTSOF(p), left) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (p[3].revents)
			return -ECANCELED;
		if (p[2].revents)
			drain_log(lx);
		if (p[1].revents)
			return -ECHILD;
	}
}

/* One start: lxcfs forked and mounted. On failure the process is gone. */
static int start_once(struct lxcfs *lx, pd_error *err)
{
	char why[LOG_LINE_MAX + 96];
	int r = spawn(lx, err);

	if (r < 0)
		return r;
	r = wait_for(lx, WAIT_MOUNTED, LXCFS_MOUNT_TIMEOUT_MS);
	if (r == 0)
		return 0;
	if (r == -ECANCELED) {
		(void)reap(lx);
		return r;
	}
	describe_end(lx, reap(lx), why, sizeof why);
	if (r == -ECHILD)
		return pd_error_set(err, -EIO, "lxcfs %s before it mounted %s", why, lx->dir);
	if (r == -ETIMEDOUT)
		return pd_error_set(err, -ETIMEDOUT, "lxcfs did not mount %s within %d s: killed",
				    lx->dir, LXCFS_MOUNT_TIMEOUT_MS / 1000);
	return pd_error_set(err, r, "cannot watch lxcfs: %s", strerror(-r));
}

/* Which views this lxcfs serves (another version may lack some). */
static unsigned check_views(const struct lxcfs *lx)
{
	unsigned mask = 0;
	char path[4096];

	for (size_t i = 0; i < LXCFS_N_VIEWS; i++) {
		snprintf(path, sizeof path, "%s/%s", lx->dir, lxcfs_views[i].src);
		if (access(path, R_OK) == 0)
			mask |= 1u << i;
		else if (!lx->first_reported)
			log_warn("lxcfs serves no %s: boxes read the kernel's %s", path,
				 lxcfs_views[i].dst);
	}
	return mask;
}

static void report_first(struct lxcfs *lx, int r, const pd_error *err)
{
	if (lx->first_reported)
		return;
	lx->first_reported = true;
	lx->first_r = r;
	if (err)
		lx->first_err = *err;
	sem_post(&lx->first_done);
}

static void *watch(void *arg)
{
	struct lxcfs *lx = arg;
	unsigned failures = 0;

	for (;;) {
		pd_error err = {0};
		char why[LOG_LINE_MAX + 96];
		unsigned long long since;
		uint64_t gen;
		int r;

		r = start_once(lx, &err);
		if (r == -ECANCELED)
			break;
		if (r < 0) {
			if (lx->first_reported)
				log_warn("%s; boxes start without lxcfs's views; trying again "
					 "in %u ms",
					 err.msg, lxcfs_backoff_ms(failures + 1));
			report_first(lx, r, &err);
		} else {
			atomic_store(&lx->views, check_views(lx));
			gen = ++lx->last_gen;
			atomic_store(&lx->serving, gen);
			if (lx->first_reported)
				log_info("lxcfs (pid %d) serves %s again", (int)lx->pid, lx->dir);
			report_first(lx, 1, NULL);
			if (lx->ready)
				lx->ready(lx->userdata, lx, gen);
			since = now_usec();
			r = wait_for(lx, WAIT_UNMOUNTED, -1);
			atomic_store(&lx->serving, 0);
			if (r == -ECANCELED)
				break;
			pid_t pid = lx->pid;
			describe_end(lx, reap(lx), why, sizeof why);
			if (r == 0)
				log_warn("lxcfs (pid %d) lost its mount: ended; starting it again",
					 (int)pid);
			else if (r == -ECHILD)
				log_warn("lxcfs (pid %d) %s; starting it again", (int)pid, why);
			else
				log_warn("lxcfs: cannot watch it: %s; ended it, starting it again",
					 strerror(-r));
			if (now_usec() - since >= STABLE_USEC)
				failures = 0;
		}
		failures++;
		struct pollfd p = {.fd = lx->stop_fd, .events = POLLIN};
		if (poll(&p, 1, (int)lxcfs_backoff_ms(failures)) > 0)
			break;
	}
	report_first(lx, -ECANCELED, NULL);
	return NULL;
}

/* --- start and stop ---------------------------------------------------------------- */

static void lxcfs_free(struct lxcfs *lx)
{
	if (lx->stop_fd >= 0)
		close(lx->stop_fd);
	sem_destroy(&lx->first_done);
	free(lx->binary);
	free(lx->dir);
	free(lx->pidfile);
	free(lx);
}

int lxcfs_start(const char *binary, const char *run_dir, lxcfs_ready_fn ready, void *userdata,
		struct lxcfs **ret, pd_error *err)
{
	struct lxcfs *lx;
	int r;

	if (access(binary, X_OK) < 0)
		return pd_error_set(err, -errno, "lxcfs not found at %s: %s", binary,
				    strerror(errno));
	lx = calloc(1, sizeof *lx);
	if (!lx)
		return pd_error_set(err, -ENOMEM, "out of memory");
	lx->pidfd = lx->log_fd = lx->stop_fd = -1;
	lx->ready = ready;
	lx->userdata = userdata;
	sem_init(&lx->first_done, 0, 0);
	lx->binary = strdup(binary);
	lx->dir = path_join(run_dir, "lxcfs");
	lx->pidfile = path_join(run_dir, "lxcfs.pid");
	if (!lx->binary || !lx->dir || !lx->pidfile) {
		lxcfs_free(lx);
		return pd_error_set(err, -ENOMEM, "out of memory");
	}
	r = lxcfs_clear_leftover(run_dir, err);
	if (r >= 0 && (r = mkdir_p(lx->dir, 0755)) < 0)
		pd_error_set(err, r, "cannot create %s: %s", lx->dir, strerror(-r));
	if (r < 0) {
		lxcfs_free(lx);
		return r;
	}
	lx->stop_fd = eventfd(0, EFD_CLOEXEC);
	if (lx->stop_fd < 0) {
		r = pd_error_set(err, -errno, "eventfd: %s", strerror(errno));
		lxcfs_free(lx);
		return r;
	}
	r = pthread_create(&lx->thread, NULL, watch, lx);
	if (r != 0) {
		lxcfs_free(lx);
		return pd_error_set(err, -r, "cannot start the lxcfs watcher: %s", strerror(r));
	}
	lx->thread_started = true;
	while (sem_wait(&lx->first_done) < 0 && errno == EINTR)
		;
	*ret = lx;
	if (lx->first_r < 0) {
		if (err)
			*err = lx->first_err;
		return 0;
	}
	return 1;
}

struct lxcfs *lxcfs_stop(struct lxcfs *lx)
{
	if (!lx)
		return NULL;
	if (lx->thread_started) {
		uint64_t one = 1;
		(void)!write(lx->stop_fd, &one, sizeof one);
		pthread_join(lx->thread, NULL);
	}
	(void)reap(lx);
	lxcfs_free(lx);
	return NULL;
}

const char *lxcfs_dir(const struct lxcfs *lx)
{
	return lx->dir;
}

uint64_t lxcfs_generation(const struct lxcfs *lx, unsigned *ret_views)
{
	uint64_t gen = lx ? atomic_load(&((struct lxcfs *)lx)->serving) : 0;

	if (ret_views)
		*ret_views = gen ? atomic_load(&((struct lxcfs *)lx)->views) : 0;
	return gen;
}

/* --- views in a box ------------------------------------------------------------------ */

/* Binds (fds[i] >= 0) or removes the views in the mount namespace nsfd,
 * from a child: setns() to a mount namespace needs a process of one
 * thread. The child runs no program and reads nothing of the box's: it
 * unmounts and mounts on the box's own paths, in the box's namespace.
 * UMOUNT_NOFOLLOW and move_mount() without MOVE_MOUNT_T_SYMLINKS: a final
 * symbolic link the box planted is not followed. */
static int views_in_ns(int nsfd, const int *fds, pd_error *err)
{
	pid_t pid;
	int status;

	pid = fork();
	if (pid < 0)
		return pd_error_set(err, -errno, "cannot fork: %s", strerror(errno));
	if (pid == 0) {
		if (setns(nsfd, CLONE_NEWNS) < 0)
			_exit(errno);
		for (size_t i = 0; i < LXCFS_N_VIEWS; i++) {
			const char *dst = lxcfs_views[i].dst;
			/* Every view stacked there: a dead lxcfs's, one
			 * bound twice by a race of two attaches. */
			for (int k = 0; k < 8; k++)
				if (umount2(dst, MNT_DETACH | UMOUNT_NOFOLLOW) < 0)
					break;
			if (fds && fds[i] >= 0 &&
			    move_mount(fds[i], "", AT_FDCWD, dst, MOVE_MOUNT_F_EMPTY_PATH) < 0)
				_exit(errno);
		}
		_exit(0);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return pd_error_set(err, -errno, "waitpid: %s", strerror(errno));
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	if (WIFEXITED(status))
		return pd_error_set(err, -WEXITSTATUS(status), "in the box's mount namespace: %s",
				    strerror(WEXITSTATUS(status)));
	return pd_error_set(err, -EIO, "the child binding the views was killed by signal %d",
			    WTERMSIG(status));
}

/* The mount namespace of pid, refused when it is the daemon's own. */
static int open_box_ns(pid_t pid, pd_error *err)
{
	struct stat ours, theirs;
	char path[64];
	int fd;

	snprintf(path, sizeof path, "/proc/%d/ns/mnt", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return pd_error_set(err, errno == ENOENT ? -ESRCH : -errno,
				    "no mount namespace for pid %d: %s", (int)pid, strerror(errno));
	if (fstat(fd, &theirs) < 0 || stat("/proc/self/ns/mnt", &ours) < 0) {
		int e = errno;
		close(fd);
		return pd_error_set(err, -e, "cannot stat a mount namespace: %s", strerror(e));
	}
	if (theirs.st_ino == ours.st_ino && theirs.st_dev == ours.st_dev) {
		close(fd);
		return pd_error_set(err, -EPERM, "pid %d shares the daemon's mount namespace",
				    (int)pid);
	}
	return fd;
}

int lxcfs_attach(struct lxcfs *lx, pid_t pid, pd_error *err)
{
	struct mount_attr attr = {.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID |
					      MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC};
	_cleanup_close_ int nsfd = -1;
	int fds[LXCFS_N_VIEWS];
	char path[4096];
	int r = 0;

	if (!lxcfs_generation(lx, NULL))
		return pd_error_set(err, -ENOTCONN, "lxcfs is not serving");
	nsfd = open_box_ns(pid, err);
	if (nsfd < 0)
		return nsfd;
	/* Detached copies of lxcfs's files, made read-only before they are
	 * attached in the box. A view lxcfs lacks is left as it is. */
	for (size_t i = 0; i < LXCFS_N_VIEWS; i++) {
		snprintf(path, sizeof path, "%s/%s", lx->dir, lxcfs_views[i].src);
		fds[i] = open_tree(AT_FDCWD, path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
		if (fds[i] < 0 && errno != ENOENT && r == 0)
			r = pd_error_set(err, -errno, "cannot clone %s: %s", path, strerror(errno));
		if (fds[i] >= 0 &&
		    mount_setattr(fds[i], "", AT_EMPTY_PATH, &attr, sizeof attr) < 0 && r == 0)
			r = pd_error_set(err, -errno, "cannot make %s read-only: %s", path,
					 strerror(errno));
	}
	if (r == 0)
		r = views_in_ns(nsfd, fds, err);
	for (size_t i = 0; i < LXCFS_N_VIEWS; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	return r;
}

int lxcfs_detach(pid_t pid, pd_error *err)
{
	_cleanup_close_ int nsfd = open_box_ns(pid, err);

	if (nsfd < 0)
		return nsfd;
	return views_in_ns(nsfd, NULL, err);
}
