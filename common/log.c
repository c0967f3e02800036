#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "common/parse.h"

static enum log_level log_level = LOG_LVL_INFO;
static int log_fd = STDERR_FILENO;

void log_set_level(enum log_level lvl)
{
	log_level = lvl;
}

int log_open(const char *path)
{
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
	if (fd < 0)
		return -errno;
	if (log_fd != STDERR_FILENO)
		close(log_fd);
	log_fd = fd;
	return 0;
}

void log_msg(enum log_level lvl, const char *fmt, ...)
{
	static const char *const names[] = {"error", "warning", "info", "debug"};
	char line[2048], ts[32];
	va_list ap;
	int n;

	if (lvl > log_level)
		return;
	int saved = errno;
	format_rfc3339(time(NULL), ts, sizeof ts);
	n = snprintf(line, sizeof line, "%s paddockd[%d] %s: ", ts, (int)getpid(), names[lvl]);
	va_start(ap, fmt);
	n += vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof line - 2)
		n = (int)sizeof line - 2;
	line[n++] = '\n';
	/* One write per line, so lines from threads never interleave. */
	(void)!write(log_fd, line, (size_t)n);
	errno = saved;
}
