/* platform-posix.c - the CLI's system calls on Linux and macOS (see
 * platform.h). The few differences are the macOS branches below, chosen
 * by __APPLE__ or by PADDOCK_PLATFORM_MACOS: the latter lets a Linux build
 * compile them (`make -C cli check-macos-syntax`), since there is no
 * macOS SDK to compile against here. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#if defined(__APPLE__) && !defined(PADDOCK_PLATFORM_MACOS)
#define PADDOCK_PLATFORM_MACOS 1
#endif
#ifndef PADDOCK_PLATFORM_MACOS
#include <sys/random.h>
#endif

#include "cli/cli.h"
#include "cli/platform.h"

void cli_platform_init(void)
{
	signal(SIGPIPE, SIG_IGN);
}

int cli_platform_config_path(char **ret)
{
	const char *env;
	char *p = NULL;

	if ((env = getenv("XDG_CONFIG_HOME")) && *env == '/') {
		if (asprintf(&p, "%s/paddock/config.ini", env) < 0)
			p = NULL;
	} else if ((env = getenv("HOME")) && *env) {
		if (asprintf(&p, "%s/.config/paddock/config.ini", env) < 0)
			p = NULL;
	} else {
		return -ENOENT;
	}
	if (!p)
		return -ENOMEM;
	*ret = p;
	return 0;
}

int cli_platform_mkdir_private(const char *dir)
{
	return mkdir(dir, 0700) == 0 || errno == EEXIST ? 0 : -errno;
}

int cli_platform_write_private(const char *path, const void *data, size_t len)
{
	_cleanup_free_ char *tmp = NULL;
	int fd, r = 0;

	if (asprintf(&tmp, "%s.tmpXXXXXX", path) < 0)
		return -ENOMEM;
	/* mkostemp: Linux, and macOS since 10.12. Its file is 0600 already;
	 * the fchmod says so whatever the libc. */
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fchmod(fd, 0600) < 0)
		r = -errno;
	for (size_t off = 0; r == 0 && off < len;) {
		ssize_t n = write(fd, (const char *)data + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			r = n < 0 ? -errno : -EIO;
		else
			off += (size_t)n;
	}
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r == 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0)
		unlink(tmp);
	return r;
}

int cli_platform_datasync(int fd)
{
#ifdef PADDOCK_PLATFORM_MACOS
	return fsync(fd) < 0 ? -errno : 0;
#else
	return fdatasync(fd) < 0 ? -errno : 0;
#endif
}

void cli_platform_wipe(void *p, size_t n)
{
#ifdef PADDOCK_PLATFORM_MACOS
	/* No explicit_bzero: a memset the compiler cannot see through. */
	static void *(*const volatile wipe)(void *, int, size_t) = memset;
	wipe(p, 0, n);
#else
	explicit_bzero(p, n);
#endif
}

int cli_platform_pipe(int fds[2])
{
#ifdef PADDOCK_PLATFORM_MACOS
	/* No pipe2; the CLI starts no process meanwhile. */
	if (pipe(fds) < 0)
		return -errno;
	if (fcntl(fds[0], F_SETFD, FD_CLOEXEC) < 0 || fcntl(fds[1], F_SETFD, FD_CLOEXEC) < 0) {
		int r = -errno;
		close(fds[0]);
		close(fds[1]);
		return r;
	}
	return 0;
#else
	return pipe2(fds, O_CLOEXEC) < 0 ? -errno : 0;
#endif
}

int cli_platform_open_dir(const char *dir)
{
#ifdef PADDOCK_PLATFORM_MACOS
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
#else
	int fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
#endif
	return fd < 0 ? -errno : fd;
}

void cli_platform_random(unsigned char *buf, size_t n)
{
#ifdef PADDOCK_PLATFORM_MACOS
	/* Never fails, never blocks. */
	arc4random_buf(buf, n);
#else
	if (getrandom(buf, n, GRND_NONBLOCK) == (ssize_t)n)
		return;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	uint64_t x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^ (uint64_t)getpid();
	for (size_t i = 0; i < n; i++) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		buf[i] = (unsigned char)(x >> 33);
	}
#endif
}

bool cli_platform_isatty(int fd)
{
	return isatty(fd) == 1;
}

unsigned cli_platform_columns(int fd)
{
	struct winsize ws;

	if (isatty(fd) && ioctl(fd, TIOCGWINSZ, &ws) == 0)
		return ws.ws_col;
	return 0;
}

void cli_platform_hostname(char *buf, size_t size)
{
	if (size == 0)
		return;
	buf[0] = '\0';
	if (gethostname(buf, size - 1) < 0)
		buf[0] = '\0';
	buf[size - 1] = '\0';
}

struct cli_tty {
	FILE *f;
	struct termios old;
	bool echo_off;
};

int cli_tty_open(cli_tty **ret)
{
	/* open + fdopen rather than fopen's "e" mode, which not every libc
	 * has; O_NOCTTY so a process without one does not acquire it. */
	int fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
	cli_tty *t;

	if (fd < 0)
		return -errno;
	t = calloc(1, sizeof(*t));
	if (!t || !(t->f = fdopen(fd, "r+"))) {
		free(t);
		close(fd);
		return -ENOMEM;
	}
	*ret = t;
	return 0;
}

FILE *cli_tty_in(cli_tty *t)
{
	return t->f;
}

FILE *cli_tty_out(cli_tty *t)
{
	return t->f;
}

bool cli_tty_echo_off(cli_tty *t)
{
	struct termios noecho;

	if (tcgetattr(fileno(t->f), &t->old) != 0)
		return false;
	noecho = t->old;
	noecho.c_lflag &= ~(tcflag_t)ECHO;
	noecho.c_lflag |= ECHONL;
	t->echo_off = tcsetattr(fileno(t->f), TCSAFLUSH, &noecho) == 0;
	return t->echo_off;
}

void cli_tty_close(cli_tty *t)
{
	if (!t)
		return;
	if (t->echo_off)
		tcsetattr(fileno(t->f), TCSAFLUSH, &t->old);
	fclose(t->f);
	free(t);
}

static void (*interrupt_fn)(void);
static struct sigaction interrupt_old;

static void on_sigint(int sig)
{
	(void)sig;
	if (interrupt_fn)
		interrupt_fn();
}

void cli_platform_interrupt_on(void (*fn)(void))
{
	struct sigaction sa = {.sa_handler = on_sigint};

	sigemptyset(&sa.sa_mask);
	interrupt_fn = fn;
	sigaction(SIGINT, &sa, &interrupt_old);
}

void cli_platform_interrupt_off(void)
{
	sigaction(SIGINT, &interrupt_old, NULL);
	interrupt_fn = NULL;
}

/* The guarded file (unlink is async-signal-safe); empty when none. */
static char guarded[PATH_MAX];
static const int fatal_signals[] = {SIGINT, SIGTERM, SIGHUP};
static struct sigaction guard_old[ELEMENTSOF(fatal_signals)];
static bool guarding;

static void on_fatal_signal(int sig)
{
	if (guarded[0])
		unlink(guarded);
	signal(sig, SIG_DFL);
	raise(sig);
}

void cli_platform_guard_file(const char *path)
{
	if (!path) {
		for (size_t i = 0; guarding && i < ELEMENTSOF(fatal_signals); i++)
			sigaction(fatal_signals[i], &guard_old[i], NULL);
		guarded[0] = '\0';
		guarding = false;
		return;
	}
	struct sigaction sa = {.sa_handler = on_fatal_signal};
	sigemptyset(&sa.sa_mask);
	snprintf(guarded, sizeof(guarded), "%s", path);
	for (size_t i = 0; !guarding && i < ELEMENTSOF(fatal_signals); i++) {
		sigaction(fatal_signals[i], NULL, &guard_old[i]);
		if (guard_old[i].sa_handler != SIG_IGN)
			sigaction(fatal_signals[i], &sa, NULL);
	}
	guarding = true;
}
