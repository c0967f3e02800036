/* compat-windows.h - the few POSIX functions the CLI uses that mingw-w64's
 * C library lacks. The Windows build (scripts/build-windows-cli) includes
 * it before anything else (-include); compat-windows.c defines them. */
#pragma once

#include <fcntl.h>
#include <stddef.h>
#include <string.h>

/* Not inherited by a child process: what O_CLOEXEC means on POSIX. */
#define O_CLOEXEC _O_NOINHERIT
/* There is no controlling terminal to acquire. */
#define O_NOCTTY 0
/* clock_gettime(CLOCK_REALTIME) and CLOCK_MONOTONIC, from winpthreads */
#include <pthread_time.h>

char *strndup(const char *s, size_t n);
