/* macos-poison.h - the compile check of the CLI's macOS build on Linux
 * (tests/integration/test-cli-portable.sh): force-included (-include) into
 * each file of cli/ compiled with -DPADDOCK_PLATFORM_MACOS and without
 * _GNU_SOURCE. It includes the usual system headers, then poisons what
 * glibc has and macOS does not, so a use of any of it in cli/ is a
 * compile error here rather than on a Mac. (There is no macOS SDK on
 * Linux to compile against: this catches the Linux-only calls, not every
 * difference.) */
#pragma once

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

/* What macOS declares by default and glibc only with _GNU_SOURCE. */
int asprintf(char **ret, const char *fmt, ...);
int vasprintf(char **ret, const char *fmt, va_list ap);
int mkostemp(char *template, int flags); /* macOS 10.12 */

/* functions */
#pragma GCC poison explicit_bzero fdatasync getrandom pipe2 memrchr strchrnul mempcpy
#pragma GCC poison accept4 dup3 ppoll secure_getenv euidaccess get_current_dir_name
#pragma GCC poison statx openat2 renameat2 umount2 strerrorname_np sigisemptyset
#pragma GCC poison program_invocation_name program_invocation_short_name
/* flags */
#pragma GCC poison O_PATH O_TMPFILE O_DIRECT O_NOATIME MSG_NOSIGNAL
