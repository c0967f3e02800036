/* platform-windows.c - the CLI's system calls on Windows, built with
 * mingw-w64 (see platform.h and docs/cli-platforms.md). */
#include <errno.h>
#include <fcntl.h>
#include <io.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <windows.h>
#include <bcrypt.h>

#include "cli/cli.h"
#include "cli/platform.h"

void cli_platform_init(void)
{
	/* No SIGPIPE here: a write to a closed pipe fails with EINVAL or
	 * EPIPE. Binary stdio, so a tar or PNG on stdout keeps its bytes. */
	_setmode(_fileno(stdin), _O_BINARY);
	_setmode(_fileno(stdout), _O_BINARY);
	/* And every file opened from now on: a volume's tar or a config file
	 * is bytes, never text with \n made \r\n (or cut at a ^Z). */
	_fmode = _O_BINARY;
	/* The CLI's text is UTF-8 (the server's names, a prompt's events). */
	SetConsoleOutputCP(CP_UTF8);
}

int cli_platform_config_path(char **ret)
{
	const char *appdata = getenv("APPDATA");
	char *p;

	if (!appdata || !*appdata)
		return -ENOENT;
	p = malloc(strlen(appdata) + sizeof("\\paddock\\config.ini"));
	if (!p)
		return -ENOMEM;
	strcpy(p, appdata);
	strcat(p, "\\paddock\\config.ini");
	*ret = p;
	return 0;
}

/* errno for a Windows error code, for the few that matter here. */
static int errno_of(DWORD e)
{
	switch (e) {
	case ERROR_FILE_NOT_FOUND:
	case ERROR_PATH_NOT_FOUND:
		return ENOENT;
	case ERROR_ACCESS_DENIED:
	case ERROR_SHARING_VIOLATION:
		return EACCES;
	case ERROR_ALREADY_EXISTS:
	case ERROR_FILE_EXISTS:
		return EEXIST;
	case ERROR_DISK_FULL:
		return ENOSPC;
	default:
		return EIO;
	}
}

int cli_platform_mkdir_private(const char *dir)
{
	/* %APPDATA% is the user's own: a new directory inherits its ACL. */
	return CreateDirectoryA(dir, NULL) || GetLastError() == ERROR_ALREADY_EXISTS
		   ? 0
		   : -errno_of(GetLastError());
}

int cli_platform_write_private(const char *path, const void *data, size_t len)
{
	static const char alphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
	unsigned char rnd[6];
	size_t pl = strlen(path);
	_cleanup_free_ char *tmp = malloc(pl + sizeof(".tmp") + sizeof(rnd));
	int fd, r = 0;

	if (!tmp)
		return -ENOMEM;
	cli_platform_random(rnd, sizeof(rnd));
	memcpy(tmp, path, pl);
	memcpy(tmp + pl, ".tmp", 4);
	for (size_t i = 0; i < sizeof(rnd); i++)
		tmp[pl + 4 + i] = alphabet[rnd[i] % (sizeof(alphabet) - 1)];
	tmp[pl + 4 + sizeof(rnd)] = '\0';
	fd = _open(tmp, _O_WRONLY | _O_CREAT | _O_EXCL | _O_BINARY | _O_NOINHERIT,
		   _S_IREAD | _S_IWRITE);
	if (fd < 0)
		return -errno;
	for (size_t off = 0; r == 0 && off < len;) {
		unsigned chunk = len - off > (1u << 30) ? 1u << 30 : (unsigned)(len - off);
		int n = _write(fd, (const char *)data + off, chunk);
		if (n <= 0)
			r = n < 0 ? -errno : -EIO;
		else
			off += (size_t)n;
	}
	if (_close(fd) < 0 && r == 0)
		r = -errno;
	/* rename() will not replace a file on Windows; MoveFileEx does. */
	if (r == 0 && !MoveFileExA(tmp, path, MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH))
		r = -errno_of(GetLastError());
	if (r < 0)
		_unlink(tmp);
	return r;
}

int cli_platform_datasync(int fd)
{
	HANDLE h = (HANDLE)_get_osfhandle(fd);

	if (h == INVALID_HANDLE_VALUE)
		return -EBADF;
	return FlushFileBuffers(h) ? 0 : -errno_of(GetLastError());
}

void cli_platform_wipe(void *p, size_t n)
{
	SecureZeroMemory(p, n);
}

int cli_platform_pipe(int fds[2])
{
	return _pipe(fds, 65536, _O_BINARY | _O_NOINHERIT) < 0 ? -errno : 0;
}

int cli_platform_open_dir(const char *dir)
{
	(void)dir;
	return -ENOTSUP; /* no *at() calls on Windows */
}

void cli_platform_random(unsigned char *buf, size_t n)
{
	if (n <= ULONG_MAX &&
	    BCryptGenRandom(NULL, buf, (ULONG)n, BCRYPT_USE_SYSTEM_PREFERRED_RNG) == 0)
		return;
	uint64_t x = (uint64_t)time(NULL) ^ ((uint64_t)GetTickCount64() << 20) ^
		     (uint64_t)GetCurrentProcessId();
	for (size_t i = 0; i < n; i++) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		buf[i] = (unsigned char)(x >> 33);
	}
}

bool cli_platform_isatty(int fd)
{
	DWORD mode;
	HANDLE h = (HANDLE)_get_osfhandle(fd);

	/* _isatty() is true for any character device (NUL too): a console
	 * is what has a console mode. */
	return h != INVALID_HANDLE_VALUE && GetConsoleMode(h, &mode);
}

unsigned cli_platform_columns(int fd)
{
	CONSOLE_SCREEN_BUFFER_INFO info;
	HANDLE h = (HANDLE)_get_osfhandle(fd);

	if (h == INVALID_HANDLE_VALUE || !GetConsoleScreenBufferInfo(h, &info))
		return 0;
	return (unsigned)(info.srWindow.Right - info.srWindow.Left + 1);
}

void cli_platform_hostname(char *buf, size_t size)
{
	DWORD n = size > MAXDWORD ? MAXDWORD : (DWORD)size;

	if (size == 0)
		return;
	if (!GetComputerNameA(buf, &n))
		buf[0] = '\0';
	buf[size - 1] = '\0';
}

struct cli_tty {
	FILE *in, *out;
	HANDLE h;
	DWORD old_mode;
	bool echo_off;
};

int cli_tty_open(cli_tty **ret)
{
	cli_tty *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	t->in = fopen("CONIN$", "r");
	t->out = fopen("CONOUT$", "w");
	if (!t->in || !t->out) {
		int r = -errno;
		cli_tty_close(t);
		return r < 0 ? r : -ENOTTY;
	}
	t->h = (HANDLE)_get_osfhandle(_fileno(t->in));
	*ret = t;
	return 0;
}

FILE *cli_tty_in(cli_tty *t)
{
	return t->in;
}

FILE *cli_tty_out(cli_tty *t)
{
	return t->out;
}

bool cli_tty_echo_off(cli_tty *t)
{
	if (!GetConsoleMode(t->h, &t->old_mode))
		return false;
	t->echo_off = SetConsoleMode(t->h, t->old_mode & ~(DWORD)ENABLE_ECHO_INPUT);
	return t->echo_off;
}

void cli_tty_close(cli_tty *t)
{
	if (!t)
		return;
	if (t->echo_off) {
		SetConsoleMode(t->h, t->old_mode);
		/* the newline typed was not echoed (POSIX keeps ECHONL) */
		fputs("\n", t->out);
	}
	if (t->in)
		fclose(t->in);
	if (t->out)
		fclose(t->out);
	free(t);
}

static void (*volatile interrupt_fn)(void);

/* Runs on the console's own thread: fn only sets a flag. */
static BOOL WINAPI on_ctrl(DWORD type)
{
	if (type != CTRL_C_EVENT || !interrupt_fn)
		return FALSE;
	interrupt_fn();
	return TRUE;
}

void cli_platform_interrupt_on(void (*fn)(void))
{
	interrupt_fn = fn;
	SetConsoleCtrlHandler(on_ctrl, TRUE);
}

void cli_platform_interrupt_off(void)
{
	SetConsoleCtrlHandler(on_ctrl, FALSE);
	interrupt_fn = NULL;
}

static char guarded[MAX_PATH];

static BOOL WINAPI on_ctrl_guard(DWORD type)
{
	(void)type;
	if (guarded[0])
		DeleteFileA(guarded);
	return FALSE; /* and the process ends as it would have */
}

void cli_platform_guard_file(const char *path)
{
	if (!path) {
		SetConsoleCtrlHandler(on_ctrl_guard, FALSE);
		guarded[0] = '\0';
		return;
	}
	snprintf(guarded, sizeof(guarded), "%s", path);
	SetConsoleCtrlHandler(on_ctrl_guard, TRUE);
}
