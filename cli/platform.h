/* platform.h - what the CLI needs of the system it runs on, behind one
 * small file per platform: platform-posix.c (Linux and macOS; the macOS
 * branches are chosen by __APPLE__, or by PADDOCK_PLATFORM_MACOS for the
 * compile check of them on Linux) and platform-windows.c (mingw-w64).
 * Nothing else in cli/ should need an #ifdef for the platform.
 *
 * Errors are -errno values, as everywhere in the CLI. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* Once, first thing in main(): a closed pipe becomes an error return and
 * never a silent death (POSIX: SIGPIPE ignored); Windows: stdin and stdout
 * in binary mode (`pull` may stream a tar to stdout) and UTF-8 output on
 * the console. */
void cli_platform_init(void);

/* The default config file when $PADDOCK_CONFIG is not set. POSIX:
 * $XDG_CONFIG_HOME/paddock/config.ini (when absolute), else
 * ~/.config/paddock/config.ini; Windows: %APPDATA%\paddock\config.ini.
 * -ENOENT when there is no home to put it in. */
int cli_platform_config_path(char **ret);

/* Creates the directory `dir` (not its parents) readable by the user only
 * (POSIX: mode 0700; Windows: a directory under the user's profile, whose
 * ACL is inherited). 0 when it exists already. */
int cli_platform_mkdir_private(const char *dir);

/* Writes data to path whole or not at all: a temporary file in the same
 * directory, readable by the user only (0600), renamed over path. */
int cli_platform_write_private(const char *path, const void *data, size_t len);

/* fdatasync(fd) where there is one; macOS: fsync (it has no fdatasync
 * in its headers); Windows: FlushFileBuffers. */
int cli_platform_datasync(int fd);

/* Zeroes n bytes at p (a password, a secret's value) in a way the
 * compiler may not leave out. */
void cli_platform_wipe(void *p, size_t n);

/* A pipe whose ends are not inherited by child processes. POSIX only: the
 * Windows build has no `push`/`pull` (docs/cli-platforms.md). */
int cli_platform_pipe(int fds[2]);

/* A directory opened to be the base of *at() calls (Linux: O_PATH). */
int cli_platform_open_dir(const char *dir);

/* n random bytes, for names only (never secrets): the system's generator,
 * or the clock and pid when it fails. */
void cli_platform_random(unsigned char *buf, size_t n);

/* Whether fd (0, 1, 2) is a terminal (a console on Windows). */
bool cli_platform_isatty(int fd);

/* The terminal's width in columns behind fd, or 0 when unknown. */
unsigned cli_platform_columns(int fd);

/* This computer's name, for the label of a login token. "" when unknown. */
void cli_platform_hostname(char *buf, size_t size);

/* The user's terminal, for a prompt that is not echoed (a password, a
 * secret's value) while stdin stays what it is: POSIX /dev/tty; Windows
 * the console (CONIN$ and CONOUT$). */
typedef struct cli_tty cli_tty;
int cli_tty_open(cli_tty **ret);
FILE *cli_tty_in(cli_tty *t);
FILE *cli_tty_out(cli_tty *t);
/* Turns echo off (a typed newline is still shown); false when it cannot. */
bool cli_tty_echo_off(cli_tty *t);
/* Restores the echo if it was turned off, closes, frees. NULL is fine. */
void cli_tty_close(cli_tty *t);

/* Ctrl-C: fn is called (from a signal handler or, on Windows, the console's
 * control thread: it may only set a flag) until cli_platform_interrupt_off().
 * One at a time. */
void cli_platform_interrupt_on(void (*fn)(void));
void cli_platform_interrupt_off(void);

/* A file being written that must not be left behind when the command is
 * ended by a signal (SIGINT, SIGTERM, SIGHUP; Windows: Ctrl-C, Ctrl-Break,
 * the console closed): removed then, and the command ends as it would
 * have. A signal the command was started with ignored stays ignored. One
 * path at a time; cli_platform_guard_file(NULL) ends the guard. */
void cli_platform_guard_file(const char *path);

/* The characters that end a directory's name in a path. */
#ifdef _WIN32
#define CLI_PATH_SEPARATORS "/\\"
#else
#define CLI_PATH_SEPARATORS "/"
#endif
