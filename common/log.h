/* log.h - the daemon's log. Library code logs at debug level only; the
 * daemon's top level reports errors once, with context. Messages go to stderr
 * in the foreground, otherwise to the log file given to log_open(). */
#pragma once

#include "common/util.h"

enum log_level { LOG_LVL_ERROR, LOG_LVL_WARN, LOG_LVL_INFO, LOG_LVL_DEBUG };

void log_set_level(enum log_level lvl);
/* Redirects logging to path (appending). Returns 0 or -errno. */
int log_open(const char *path);
void log_msg(enum log_level lvl, const char *fmt, ...) _printf_(2, 3);

#define log_error(...) log_msg(LOG_LVL_ERROR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_LVL_WARN, __VA_ARGS__)
#define log_info(...) log_msg(LOG_LVL_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_LVL_DEBUG, __VA_ARGS__)
