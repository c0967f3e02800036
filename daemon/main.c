/* paddockd - serves /paddock: boxes, their files and their lifecycle. */
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "engine/access.h"
#include "autoconfig.h"
#include "common/config.h"
#include "engine/engine.h"
#include "fs/fuse-adapter.h"
#include "web/http.h"
#include "common/lock.h"
#include "common/log.h"
#include "fs/tree.h"
#include "common/util.h"

#ifndef LIBEXECDIR
#define LIBEXECDIR "/usr/local/libexec/paddock"
#endif

static void usage(FILE *out)
{
	fprintf(out, "Usage: paddockd [--config FILE] [--foreground] [--debug]\n"
		     "\n"
		     "  -c, --config FILE  configuration (default " CONFIG_DEFAULT_PATH ")\n"
		     "  -f, --foreground   stay attached, log to stderr\n"
		     "  -d, --debug        log debug messages\n"
		     "  -V, --version      print the version\n");
}

/* The box init: next to this binary (a build tree), else the installed one. */
static int find_init(char *buf, size_t bufsz)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);

	if (n > 0) {
		exe[n] = '\0';
		snprintf(buf, bufsz, "%s/paddock-init", dirname(exe));
		if (access(buf, X_OK) == 0)
			return 0;
		/* libtool keeps real binaries in .libs/ */
		snprintf(buf, bufsz, "%s/../paddock-init", dirname(exe));
		if (access(buf, X_OK) == 0)
			return 0;
	}
	snprintf(buf, bufsz, "%s/paddock-init", LIBEXECDIR);
	return access(buf, X_OK) == 0 ? 0 : -ENOENT;
}

/* Like sshd's StrictModes: the configuration decides what runs as root
 * (crun's path, the data directory, who may use the tree), so a file that
 * someone else than root could change is refused: owned by another user,
 * writable by its group or others, or in a directory (up to /) such a user
 * could change. A world-writable directory with the sticky bit (/tmp) is
 * fine: only root may replace root's entries in it. The file is judged
 * where its links lead, and that path (ret_real) is what is loaded: a link
 * in a directory someone else may change could otherwise be turned to
 * another file between the check and the load. A missing file is left to
 * config_load() (ret_real is path). Sets *ret_readable when every user
 * may read it. */
static int check_config_file(const char *path, char ret_real[static PATH_MAX], bool *ret_readable,
			     pd_error *err)
{
	char real[PATH_MAX];
	struct stat st;

	*ret_readable = false;
	if (!realpath(path, real)) {
		if (errno != ENOENT)
			return pd_error_set(err, -errno, "%s: %s", path, strerror(errno));
		snprintf(ret_real, PATH_MAX, "%s", path);
		return 0;
	}
	snprintf(ret_real, PATH_MAX, "%s", real);
	if (stat(real, &st) < 0)
		return pd_error_set(err, -errno, "%s: %s", real, strerror(errno));
	if (st.st_uid != 0)
		return pd_error_set(err, -EPERM,
				    "%s is owned by uid %u, not root: refused (chown root %s)",
				    real, (unsigned)st.st_uid, real);
	if (st.st_mode & (S_IWGRP | S_IWOTH))
		return pd_error_set(err, -EPERM, "%s is writable by %s: refused (chmod go-w %s)",
				    real, st.st_mode & S_IWOTH ? "every user" : "its group", real);
	*ret_readable = (st.st_mode & S_IROTH) != 0;
	for (char *slash = strrchr(real, '/'); slash; slash = strrchr(real, '/')) {
		slash[slash == real] = '\0'; /* "/etc" -> "/" */
		if (stat(real, &st) < 0)
			return pd_error_set(err, -errno, "%s: %s", real, strerror(errno));
		if (st.st_uid != 0)
			return pd_error_set(err, -EPERM,
					    "the configuration's directory %s is owned by uid %u, "
					    "not root: refused",
					    real, (unsigned)st.st_uid);
		if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX))
			return pd_error_set(
			    err, -EPERM,
			    "the configuration's directory %s is writable by %s: refused", real,
			    st.st_mode & S_IWOTH ? "every user" : "its group");
		if (slash == real)
			break;
	}
	return 0;
}

/* The data directory is root's alone (0700: the database, every box's
 * files); the run directory is open to the group that may use the tree
 * (0751 root:GROUP: others may only pass, see below), which reaches the
 * boxes' roots and the volumes' data through it, and root's alone when
 * there is no group. Fixed at
 * each start: an older install made them 0755. crun's state in RUN/crun
 * stays root's. */
static int fix_dir(const char *path, gid_t gid, mode_t mode, pd_error *err)
{
	if (chown(path, 0, gid) < 0 || chmod(path, mode) < 0)
		return pd_error_set(err, -errno, "cannot make %s %04o: %s", path, (unsigned)mode,
				    strerror(errno));
	return 0;
}

/* Forks into the background; the parent waits until the child reports that
 * the tree is mounted (or why it is not), so errors reach the terminal. */
static int daemonize(int *ret_notify_fd)
{
	int p[2];
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid > 0) {
		char msg[1024];
		ssize_t n;
		close(p[1]);
		n = read(p[0], msg, sizeof msg - 1);
		if (n == 1 && msg[0] == '\0')
			_exit(0);
		if (n > 0) {
			msg[n] = '\0';
			fprintf(stderr, "paddockd: %s\n", msg);
		} else
			fprintf(stderr, "paddockd: failed to start (see the log)\n");
		_exit(1);
	}
	close(p[0]);
	setsid();
	*ret_notify_fd = p[1];
	return 0;
}

static void notify(int *fd, const char *msg)
{
	if (*fd < 0)
		return;
	if (msg)
		(void)!write(*fd, msg, strlen(msg));
	else
		(void)!write(*fd, "", 1);
	close(*fd);
	*fd = -1;
}

static void log_lock_stat(const char *line)
{
	log_info("%s", line);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"config", required_argument, NULL, 'c'}, {"foreground", no_argument, NULL, 'f'},
	    {"debug", no_argument, NULL, 'd'},	      {"version", no_argument, NULL, 'V'},
	    {"help", no_argument, NULL, 'h'},	      {0},
	};
	const char *config_path = CONFIG_DEFAULT_PATH;
	char config_real[PATH_MAX];
	bool foreground = false, config_readable = false;
	struct pd_config cfg = {0};
	struct engine *engine = NULL;
	struct tree *tree = NULL;
	struct fuse_adapter *fa = NULL;
	struct http *http = NULL;
	pd_error err = {0};
	char init_path[PATH_MAX], path[PATH_MAX];
	int notify_fd = -1, lock_fd = -1, c, r;

	while ((c = getopt_long(argc, argv, "c:fdVh", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			config_path = optarg;
			break;
		case 'f':
			foreground = true;
			break;
		case 'd':
			log_set_level(LOG_LVL_DEBUG);
			break;
		case 'V':
			printf("paddock %s\n", PACKAGE_VERSION);
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	/* Contention figures for the benchmarks (lock.h), logged at stop. */
	if (getenv("PADDOCK_LOCK_STATS") && strcmp(getenv("PADDOCK_LOCK_STATS"), "1") == 0)
		lock_stats_enable();

	r = check_config_file(config_path, config_real, &config_readable, &err);
	pd_hold("config-check");
	if (r >= 0)
		r = config_load(config_real, &cfg, &err);
	if (r < 0) {
		fprintf(stderr, "paddockd: %s\n", err.msg);
		return 1;
	}
	if (geteuid() != 0) {
		fprintf(stderr, "paddockd: must run as root (it mounts filesystems and runs "
				"containers)\n");
		return 1;
	}
	if (find_init(init_path, sizeof init_path) < 0) {
		fprintf(stderr,
			"paddockd: paddock-init not found (looked next to paddockd and in "
			"%s)\n",
			LIBEXECDIR);
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	/* Every running job holds its stdin fifo and every HTTP client a
	 * socket: take the hard limit of descriptors, not the soft 1024. */
	struct rlimit nofile;
	if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
		nofile.rlim_cur = nofile.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &nofile);
	}

	/* Before any thread exists. */
	if (!foreground && daemonize(&notify_fd) < 0) {
		fprintf(stderr, "paddockd: cannot fork: %s\n", strerror(errno));
		return 1;
	}

	r = mkdir_p(cfg.data, 0700);
	if (r >= 0)
		r = mkdir_p(cfg.run, 0700);
	if (r < 0) {
		pd_error_set(&err, r, "cannot create %s or %s: %s", cfg.data, cfg.run,
			     strerror(-r));
		goto fail;
	}
	snprintf(path, sizeof path, "%s/crun", cfg.run);
	r = mkdir_p(path, 0700);
	if (r < 0)
		pd_error_set(&err, r, "cannot create %s: %s", path, strerror(-r));
	/* Root's alone until the group is known (after engine_new). */
	if (r < 0 || fix_dir(cfg.data, 0, 0700, &err) < 0 || fix_dir(cfg.run, 0, 0700, &err) < 0 ||
	    fix_dir(path, 0, 0700, &err) < 0)
		goto fail;
	if (!foreground) {
		snprintf(path, sizeof path, "%s/paddockd.log", cfg.data);
		(void)log_open(path);
	}
	if (config_readable)
		log_warn("%s is readable by every user; it may hold secrets: chmod o-r %s",
			 cfg.path, cfg.path);
	snprintf(path, sizeof path, "%s/paddockd.lock", cfg.data);
	lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (lock_fd < 0 || flock(lock_fd, LOCK_EX | LOCK_NB) < 0) {
		pd_error_set(&err, -errno, "another paddockd is using %s", cfg.data);
		goto fail;
	}

	r = engine_new(&cfg, init_path, &engine, &err);
	if (r < 0)
		goto fail;
	{
		/* RUN: anyone may pass, for the boxes' root, a host id of
		 * their own, to reach what is bound for them (RUN/boxes/ID,
		 * each 0710 to its box); what the group may use is in
		 * subdirectories closed to others. */
		static const char *const group_dirs[] = {"roots", "snapshots", "volumes", "netns"};
		const struct pd_access *acc = engine_access(engine);
		gid_t gid = acc->has_group ? access_gid(acc) : 0;

		for (size_t i = 0; r >= 0 && i < ELEMENTSOF(group_dirs); i++) {
			snprintf(path, sizeof path, "%s/%s", cfg.run, group_dirs[i]);
			if (mkdir(path, 0700) < 0 && errno != EEXIST)
				r = pd_error_set(&err, -errno, "cannot create %s: %s", path,
						 strerror(errno));
			else
				r = fix_dir(path, gid, acc->has_group ? 0750 : 0700, &err);
		}
		if (r >= 0)
			r = fix_dir(cfg.run, gid, acc->has_group ? 0751 : 0711, &err);
		if (r < 0)
			goto fail;
	}
	r = tree_new(engine, &tree);
	if (r < 0) {
		pd_error_set(&err, r, "out of memory");
		goto fail;
	}
	r = fuse_adapter_mount(tree, engine, cfg.mount, &fa, &err);
	if (r < 0)
		goto fail;
	r = http_start(tree, engine, &http, &err);
	if (r < 0)
		goto fail;
	r = engine_start_timers(engine);
	if (r < 0) {
		pd_error_set(&err, r, "cannot start the TTL timer: %s", strerror(-r));
		goto fail;
	}

	log_info("serving %s (data %s, cgroups %s, config %s)", cfg.mount, cfg.data,
		 cgroup_mode_to_string(engine_cgroup_mode(engine)),
		 cfg.path ? cfg.path : "built-in defaults");
	if (!foreground) {
		int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (devnull >= 0) {
			dup2(devnull, 0);
			dup2(devnull, 1);
			dup2(devnull, 2);
			close(devnull);
		}
	}
	notify(&notify_fd, NULL);

	r = fuse_adapter_run(fa);
	log_info("unmounting %s; boxes keep running", cfg.mount);
	http_stop(http);
	fuse_adapter_free(fa);
	tree_free(tree);
	engine_free(engine);
	lock_stats_dump(log_lock_stat);
	config_release(&cfg);
	return r < 0 ? 1 : 0;

fail:
	log_error("%s", err.msg);
	notify(&notify_fd, err.msg);
	http_stop(http);
	fuse_adapter_free(fa);
	tree_free(tree);
	engine_free(engine);
	config_release(&cfg);
	return 1;
}
