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

#include "autoconfig.h"
#include "config.h"
#include "engine.h"
#include "fuse-adapter.h"
#include "http.h"
#include "log.h"
#include "tree.h"

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

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"config", required_argument, NULL, 'c'}, {"foreground", no_argument, NULL, 'f'},
	    {"debug", no_argument, NULL, 'd'},	      {"version", no_argument, NULL, 'V'},
	    {"help", no_argument, NULL, 'h'},	      {0},
	};
	const char *config_path = CONFIG_DEFAULT_PATH;
	bool foreground = false;
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

	r = config_load(config_path, &cfg, &err);
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

	r = mkdir_p(cfg.data, 0755);
	if (r >= 0)
		r = mkdir_p(cfg.run, 0700);
	if (r < 0) {
		pd_error_set(&err, r, "cannot create %s or %s: %s", cfg.data, cfg.run,
			     strerror(-r));
		goto fail;
	}
	if (!foreground) {
		snprintf(path, sizeof path, "%s/paddockd.log", cfg.data);
		(void)log_open(path);
	}
	snprintf(path, sizeof path, "%s/paddockd.lock", cfg.data);
	lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (lock_fd < 0 || flock(lock_fd, LOCK_EX | LOCK_NB) < 0) {
		pd_error_set(&err, -errno, "another paddockd is using %s", cfg.data);
		goto fail;
	}

	r = engine_new(&cfg, init_path, &engine, &err);
	if (r < 0)
		goto fail;
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
