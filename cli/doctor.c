/* doctor.c - `paddock doctor` (doctor.h): checks of the server the daemon
 * runs on, each a line with what to do when it fails. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/doctor.h"

/* The checks are of a Linux server; the macOS compile check
 * (PADDOCK_PLATFORM_MACOS on Linux, tests/macos-poison.h) takes the
 * other branch, as a Mac would. */
#if defined(__linux__) && !defined(PADDOCK_PLATFORM_MACOS)

#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>
#include <linux/magic.h>

#include "common/config.h"
#include "common/util.h"

#define CADDYFILE_DEFAULT "/etc/caddy/Caddyfile"
#define CMD_TIMEOUT_S 30
#define HTTP_TIMEOUT_S 10

/* --- the pure parts ------------------------------------------------------ */

bool doctor_fs_listed(const char *text, const char *fs)
{
	size_t n = strlen(fs);

	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		const char *tab = strchr(l, '\t'), *end = strchr(l, '\n');
		const char *name = tab && (!end || tab < end) ? tab + 1 : l;
		size_t len = end ? (size_t)(end - name) : strlen(name);
		if (len == n && strncmp(name, fs, n) == 0)
			return true;
	}
	return false;
}

enum doctor_cgroup doctor_cgroup_mode(bool root_is_cgroup2, bool unified_is_cgroup2)
{
	if (root_is_cgroup2)
		return DOCTOR_CGROUP_V2;
	return unified_is_cgroup2 ? DOCTOR_CGROUP_HYBRID : DOCTOR_CGROUP_V1;
}

const char *doctor_cgroup_name(enum doctor_cgroup m)
{
	return m == DOCTOR_CGROUP_V2 ? "v2" : m == DOCTOR_CGROUP_HYBRID ? "hybrid" : "v1";
}

static bool has_word(const char *have, const char *w, size_t n)
{
	for (const char *p = have; *p;) {
		p += strspn(p, " \t\n");
		size_t len = strcspn(p, " \t\n");
		if (len == n && strncmp(p, w, n) == 0)
			return true;
		p += len;
	}
	return false;
}

size_t doctor_missing(const char *have, const char *need, char *out, size_t size)
{
	size_t missing = 0, used = 0;

	if (size)
		out[0] = '\0';
	for (const char *p = need; *p;) {
		p += strspn(p, " ");
		size_t len = strcspn(p, " ");
		if (len && !has_word(have, p, len)) {
			int k = snprintf(out + used, size > used ? size - used : 0, "%s%.*s",
					 missing ? " " : "", (int)len, p);
			if (k > 0 && used + (size_t)k < size)
				used += (size_t)k;
			missing++;
		}
		p += len;
	}
	return missing;
}

int doctor_parse_cert_time(const char *s, time_t *ret)
{
	static const char *const formats[] = {"%b %d %H:%M:%S %Y", "%Y-%m-%d %H:%M:%S"};

	while (*s == ' ')
		s++;
	for (size_t i = 0; i < ELEMENTSOF(formats); i++) {
		struct tm tm = {0};
		const char *end = strptime(s, formats[i], &tm);
		if (!end)
			continue;
		end += strspn(end, " ");
		if (*end && strcmp(end, "GMT") != 0 && strcmp(end, "UTC") != 0 &&
		    strcmp(end, "Z") != 0)
			continue;
		time_t t = timegm(&tm);
		if (t == (time_t)-1)
			return -EINVAL;
		*ret = t;
		return 0;
	}
	return -EINVAL;
}

long doctor_cert_days_left(time_t not_after, time_t now)
{
	long long d = (long long)not_after - (long long)now;

	return (long)(d >= 0 ? d / 86400 : -((-d + 86399) / 86400));
}

bool doctor_cert_ok(time_t not_after, time_t now, unsigned min_days)
{
	return (long long)not_after - (long long)now > (long long)min_days * 86400;
}

bool doctor_caddy_mentions(const char *text)
{
	return strcasestr(text, "paddock") != NULL;
}

int doctor_caddy_site(const char *text, char *host, size_t size, unsigned *ret_port)
{
	int depth = 0;

	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		size_t len = strcspn(l, "\n");
		char line[1024];
		snprintf(line, sizeof line, "%.*s",
			 (int)(len < sizeof line ? len : sizeof line - 1), l);
		char *hash = strchr(line, '#');
		if (hash && (hash == line || isspace((unsigned char)hash[-1])))
			*hash = '\0';
		size_t n = strlen(line);
		while (n && isspace((unsigned char)line[n - 1]))
			line[--n] = '\0';
		char *p = line + strspn(line, " \t");
		bool opens = n && line[n - 1] == '{';
		if (depth == 0 && opens) {
			line[n - 1] = '\0';
			/* The first address of the block's list. */
			p += strspn(p, " \t");
			size_t alen = strcspn(p, " \t,");
			p[alen] = '\0';
			if (*p && *p != '(' && !strchr(p, '*')) {
				const char *a = p;
				if (strncmp(a, "https://", 8) == 0)
					a += 8;
				else if (strncmp(a, "http://", 7) == 0)
					a += 7;
				char *colon = strrchr(a, ':');
				unsigned port = 443;
				size_t hlen = colon ? (size_t)(colon - a) : strlen(a);
				if (colon)
					port = (unsigned)strtoul(colon + 1, NULL, 10);
				if (hlen && hlen < size && port && port < 65536 &&
				    strcspn(a, "/") >= hlen) {
					snprintf(host, size, "%.*s", (int)hlen, a);
					*ret_port = port;
					return 0;
				}
			}
		}
		for (const char *c = line; *c; c++)
			depth += *c == '{' ? 1 : *c == '}' ? -1 : 0;
		if (opens && depth == 0)
			depth = 1; /* the brace was cut off above */
		if (depth < 0)
			depth = 0;
	}
	return -ENOENT;
}

int doctor_listen_url(const char *listen, char *out, size_t size)
{
	const char *colon = strrchr(listen, ':');
	char host[64];
	size_t hlen;

	if (!colon || strcmp(listen, "none") == 0)
		return -EINVAL;
	hlen = (size_t)(colon - listen);
	if (hlen == 0 || hlen >= sizeof host)
		return -EINVAL;
	snprintf(host, sizeof host, "%.*s", (int)hlen, listen);
	if (strcmp(colon + 1, "0") == 0)
		return -EAGAIN;
	if (!colon[1] || strspn(colon + 1, "0123456789") != strlen(colon + 1))
		return -EINVAL;
	if (strcmp(host, "0.0.0.0") == 0)
		snprintf(host, sizeof host, "127.0.0.1");
	else if (strcmp(host, "[::]") == 0)
		snprintf(host, sizeof host, "[::1]");
	if ((size_t)snprintf(out, size, "http://%s:%s/", host, colon + 1) >= size)
		return -EINVAL;
	return 0;
}

/* Undoes mountinfo's octal escapes (\040 for a space) in place. */
static void unescape_octal(char *s)
{
	char *w = s;

	for (const char *r = s; *r;) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' &&
		    r[3] >= '0' && r[3] <= '7') {
			*w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
			r += 4;
		} else
			*w++ = *r++;
	}
	*w = '\0';
}

bool doctor_mountinfo_fuse(const char *text, const char *path)
{
	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		size_t len = strcspn(l, "\n");
		_cleanup_free_ char *line = strndup(l, len);
		char *save = NULL, *f[5] = {0};
		if (!line)
			return false;
		/* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE ... */
		f[0] = strtok_r(line, " ", &save);
		for (int i = 1; i < 5 && f[i - 1]; i++)
			f[i] = strtok_r(NULL, " ", &save);
		if (!f[4])
			continue;
		unescape_octal(f[4]);
		if (strcmp(f[4], path) != 0)
			continue;
		const char *dash = strstr(l, " - ");
		if (dash && (size_t)(dash - l) < len && strncmp(dash + 3, "fuse", 4) == 0)
			return true;
	}
	return false;
}

/* --- results --------------------------------------------------------------- */

enum status { ST_OK, ST_FAIL, ST_WARN, ST_SKIP };

struct doctor {
	bool json;
	json_t *results;
	unsigned failed;
	struct pd_config cfg;
	bool cfg_ok;
	const char *config_path;
	const char *caddyfile;
};

/* One line: "ok   NAME: what", or its object in --json. fix (NULL for
 * none) says what to do about a failure. */
static void report(struct doctor *d, enum status st, const char *name, const char *fix,
		   const char *fmt, ...) _printf_(5, 6);
static void report(struct doctor *d, enum status st, const char *name, const char *fix,
		   const char *fmt, ...)
{
	static const char *const words[] = {"ok", "FAIL", "warn", "skip"};
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (st == ST_FAIL)
		d->failed++;
	if (d->json) {
		json_t *o = json_pack("{s:s, s:s, s:s}", "check", name, "status",
				      st == ST_FAIL ? "fail" : words[st], "detail", msg);
		if (o && fix)
			json_object_set_new(o, "fix", json_string(fix));
		if (o)
			json_array_append_new(d->results, o);
		return;
	}
	printf("%-4s %s: %s%s%s\n", words[st], name, msg, fix ? ": " : "", fix ? fix : "");
	fflush(stdout);
}

/* --- the machine ------------------------------------------------------------ */

/* The full path of an executable in $PATH (or name itself when it has a
 * '/'), in buf; false when there is none. */
static bool find_program(const char *name, char *buf, size_t size)
{
	const char *path = getenv("PATH");
	_cleanup_free_ char *dirs = NULL;
	char *save = NULL;

	if (strchr(name, '/')) {
		snprintf(buf, size, "%s", name);
		return access(buf, X_OK) == 0;
	}
	dirs = strdup(
	    path && *path ? path : "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
	if (!dirs)
		return false;
	for (char *dir = strtok_r(dirs, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
		snprintf(buf, size, "%s/%s", dir, name);
		if (access(buf, X_OK) == 0)
			return true;
	}
	/* Debian's root PATH has the sbin directories; a user's may not. */
	for (const char *const *dir = (const char *const[]){"/usr/sbin", "/sbin", NULL}; *dir;
	     dir++) {
		snprintf(buf, size, "%s/%s", *dir, name);
		if (access(buf, X_OK) == 0)
			return true;
	}
	return false;
}

/* Runs argv (argv[0] a path), its stdout and stderr into out (size bytes,
 * NUL-terminated, cut), CMD_TIMEOUT_S at most (then killed). Returns its
 * exit status, 128+N for signal N, or -errno. */
static int run(const char *const argv[], char *out, size_t size)
{
	int pfd[2], status;
	size_t used = 0;
	pid_t pid;
	unsigned long long deadline = now_usec() + CMD_TIMEOUT_S * 1000000ULL;

	out[0] = '\0';
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		int r = -errno;
		close(pfd[0]);
		close(pfd[1]);
		return r;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDONLY);
		if (null >= 0)
			dup2(null, 0);
		dup2(pfd[1], 1);
		dup2(pfd[1], 2);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(pfd[1]);
	for (;;) {
		struct pollfd p = {.fd = pfd[0], .events = POLLIN};
		unsigned long long now = now_usec();
		if (now >= deadline) {
			kill(pid, SIGKILL);
			break;
		}
		int k = poll(&p, 1, (int)((deadline - now) / 1000) + 1);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			continue;
		char buf[4096];
		ssize_t n = read(pfd[0], buf, sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (used + 1 < size) {
			size_t c = (size_t)n < size - 1 - used ? (size_t)n : size - 1 - used;
			memcpy(out + used, buf, c);
			used += c;
			out[used] = '\0';
		}
	}
	close(pfd[0]);
	/* Its output ended; it may still run (or have handed the pipe on):
	 * the deadline holds for the wait too. */
	for (;;) {
		pid_t w = waitpid(pid, &status, WNOHANG);
		if (w == pid)
			break;
		if (w < 0 && errno != EINTR)
			return -errno;
		if (now_usec() >= deadline) {
			kill(pid, SIGKILL);
			while (waitpid(pid, &status, 0) < 0)
				if (errno != EINTR)
					return -errno;
			break;
		}
		usleep(10000);
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* The first line of s, cut at the first newline, in place. */
static char *first_line(char *s)
{
	s[strcspn(s, "\n")] = '\0';
	return s;
}

static bool is_fs(const char *path, long magic)
{
	struct statfs fs;

	return statfs(path, &fs) == 0 && (long)fs.f_type == magic;
}

/* --- the checks -------------------------------------------------------------- */

static void check_fuse(struct doctor *d)
{
	char path[4096];
	struct stat st;

	if (stat("/dev/fuse", &st) < 0 || !S_ISCHR(st.st_mode))
		report(d, ST_FAIL, "fuse", "modprobe fuse (and apt install fuse3)",
		       "/dev/fuse is missing");
	else {
		int fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
		if (fd < 0 && geteuid() == 0)
			report(d, ST_FAIL, "fuse",
			       "a container must pass /dev/fuse in (--device /dev/fuse)",
			       "/dev/fuse cannot be opened: %s", strerror(errno));
		else {
			if (fd >= 0)
				close(fd);
			report(d, ST_OK, "fuse", NULL, "/dev/fuse");
		}
	}
	if (!find_program("fusermount3", path, sizeof path))
		report(d, ST_FAIL, "fusermount3", "apt install fuse3", "not found");
	else
		report(d, ST_OK, "fusermount3", NULL, "%s", path);
}

static void check_crun(struct doctor *d)
{
	const char *crun = d->cfg_ok ? d->cfg.crun : "/usr/bin/crun";
	char out[4096];

	if (access(crun, X_OK) < 0) {
		report(d, ST_FAIL, "crun", "apt install crun (or set crun = PATH in the config)",
		       "%s not found", crun);
		return;
	}
	int r = run((const char *const[]){crun, "--version", NULL}, out, sizeof out);
	if (r != 0)
		report(d, ST_FAIL, "crun", "reinstall it: apt install --reinstall crun",
		       "%s --version fails: %s", crun, r < 0 ? strerror(-r) : first_line(out));
	else
		report(d, ST_OK, "crun", NULL, "%s (%s)", first_line(out), crun);
}

/* The daemon sets cpu, memory and pids limits and reads cpuacct on v1
 * (runtime/cgroup.c, runtime/crun.c). */
static void check_cgroups(struct doctor *d)
{
	enum doctor_cgroup m =
	    doctor_cgroup_mode(is_fs("/sys/fs/cgroup", CGROUP2_SUPER_MAGIC),
			       is_fs("/sys/fs/cgroup/unified", CGROUP2_SUPER_MAGIC));
	char missing[256];
	size_t n;

	if (m == DOCTOR_CGROUP_V2) {
		_cleanup_free_ char *ctrl = NULL;
		if (read_file_at(AT_FDCWD, "/sys/fs/cgroup/cgroup.controllers", 4096, &ctrl, NULL) <
		    0) {
			report(d, ST_FAIL, "cgroups", "mount cgroup2 on /sys/fs/cgroup",
			       "v2, but /sys/fs/cgroup/cgroup.controllers cannot be read");
			return;
		}
		n = doctor_missing(ctrl, "cpu memory pids", missing, sizeof missing);
	} else {
		char have[256] = "";
		static const char *const v1[] = {"cpu", "cpuacct", "memory", "pids"};
		if (!is_fs("/sys/fs/cgroup", TMPFS_MAGIC) &&
		    !is_fs("/sys/fs/cgroup", CGROUP_SUPER_MAGIC)) {
			report(d, ST_FAIL, "cgroups",
			       "mount the cgroup filesystems (systemd does at boot)",
			       "nothing mounted on /sys/fs/cgroup");
			return;
		}
		for (size_t i = 0; i < ELEMENTSOF(v1); i++) {
			char p[128];
			snprintf(p, sizeof p, "/sys/fs/cgroup/%s", v1[i]);
			if (is_fs(p, CGROUP_SUPER_MAGIC)) {
				strcat(have, v1[i]);
				strcat(have, " ");
			}
		}
		n = doctor_missing(have, "cpu cpuacct memory pids", missing, sizeof missing);
	}
	if (n)
		report(d, ST_FAIL, "cgroups",
		       "enable them in the kernel (boot with cgroup_enable=memory for memory)",
		       "%s, controllers missing: %s", doctor_cgroup_name(m), missing);
	else
		report(d, ST_OK, "cgroups", NULL, "%s, controllers cpu memory pids",
		       doctor_cgroup_name(m));
}

static void check_nftables(struct doctor *d)
{
	bool loaded = access("/sys/module/nf_tables", F_OK) == 0;
	char nft[4096], out[8192];

	if (d->cfg_ok && !d->cfg.network) {
		report(d, ST_SKIP, "nftables", NULL, "network = off in the config");
		return;
	}
	if (geteuid() != 0) {
		report(d, loaded ? ST_OK : ST_SKIP, "nftables", NULL, "%s",
		       loaded ? "the kernel's nf_tables is loaded (listing tables needs root)"
			      : "needs root to list the tables");
		return;
	}
	/* The daemon links libnftables; nft is how to ask the kernel here. */
	if (!find_program("nft", nft, sizeof nft)) {
		report(d, loaded ? ST_WARN : ST_FAIL, "nftables",
		       loaded ? "apt install nftables (to see the daemon's rules)"
			      : "modprobe nf_tables (and apt install nftables to check)",
		       "nft not found; the kernel's nf_tables is %s",
		       loaded ? "loaded" : "not loaded");
		return;
	}
	int r = run((const char *const[]){nft, "list", "tables", NULL}, out, sizeof out);
	if (r != 0)
		report(d, ST_FAIL, "nftables",
		       "modprobe nf_tables; a container needs CAP_NET_ADMIN and its own network",
		       "nft list tables fails: %s", r < 0 ? strerror(-r) : first_line(out));
	else
		report(d, ST_OK, "nftables", NULL, "nf_tables usable (nft list tables)");
}

static void check_userns(struct doctor *d)
{
	_cleanup_free_ char *s = NULL;

	if (d->cfg_ok && !d->cfg.userns) {
		report(d, ST_WARN, "userns", "set userns = on in the config",
		       "userns = off: box root is host root");
		return;
	}
	if (read_file_at(AT_FDCWD, "/proc/sys/user/max_user_namespaces", 64, &s, NULL) < 0) {
		report(d, ST_FAIL, "userns", "a kernel with user namespaces (CONFIG_USER_NS)",
		       "/proc/sys/user/max_user_namespaces is missing");
		return;
	}
	long n = strtol(s, NULL, 10);
	if (n <= 0)
		report(d, ST_FAIL, "userns",
		       "sysctl -w user.max_user_namespaces=65536 (and in /etc/sysctl.d)",
		       "user.max_user_namespaces is %ld", n);
	else
		report(d, ST_OK, "userns", NULL, "user.max_user_namespaces = %ld", n);
}

static void check_overlayfs(struct doctor *d)
{
	_cleanup_free_ char *s = NULL;

	if (read_file_at(AT_FDCWD, "/proc/filesystems", 65536, &s, NULL) < 0)
		report(d, ST_FAIL, "overlayfs", "mount /proc", "/proc/filesystems cannot be read");
	else if (!doctor_fs_listed(s, "overlay"))
		report(d, ST_FAIL, "overlayfs", "modprobe overlay",
		       "overlay is not in /proc/filesystems");
	else
		report(d, ST_OK, "overlayfs", NULL, "overlay in /proc/filesystems");
}

static void check_lxcfs(struct doctor *d)
{
	if (!d->cfg_ok)
		return;
	if (!d->cfg.lxcfs)
		report(d, ST_SKIP, "lxcfs", NULL, "lxcfs = off in the config");
	else if (access(d->cfg.lxcfs, X_OK) < 0)
		report(d, ST_WARN, "lxcfs", "apt install lxcfs",
		       "%s not found: boxes see the host's memory, CPUs and uptime", d->cfg.lxcfs);
	else
		report(d, ST_OK, "lxcfs", NULL, "%s", d->cfg.lxcfs);
}

static void check_config(struct doctor *d)
{
	pd_error err = {0};
	struct stat st;

	if (config_load(d->config_path, &d->cfg, &err) < 0) {
		report(d, ST_FAIL, "config", "fix the file (paddockd refuses to start with it)",
		       "%s", err.msg);
		return;
	}
	d->cfg_ok = true;
	if (!d->cfg.path)
		report(d, ST_OK, "config", NULL, "no %s: the defaults", d->config_path);
	else if (stat(d->cfg.path, &st) == 0 && (st.st_mode & 0002))
		report(d, ST_FAIL, "config", "chmod o-w the file (paddockd refuses it)",
		       "%s is writable by everyone", d->cfg.path);
	else if (stat(d->cfg.path, &st) == 0 && (st.st_mode & 0004)) {
		char fix[4200];
		snprintf(fix, sizeof fix, "chmod o-r %s", d->cfg.path);
		report(d, ST_WARN, "config", fix,
		       "%s is readable by every user; it may hold secrets", d->cfg.path);
	} else
		report(d, ST_OK, "config", NULL, "%s", d->cfg.path);
}

/* Who may use the tree and the local socket besides root (access.h). */
static void check_group(struct doctor *d)
{
	char fix[128];
	struct group *g;
	size_t n = 0;

	if (!d->cfg_ok)
		return;
	g = strspn(d->cfg.group, "0123456789") == strlen(d->cfg.group)
		? getgrgid((gid_t)strtoul(d->cfg.group, NULL, 10))
		: getgrnam(d->cfg.group);
	if (!g) {
		snprintf(fix, sizeof fix, "groupadd --system %s, then usermod -aG %s USER",
			 d->cfg.group, d->cfg.group);
		report(d, ST_WARN, "group", fix,
		       "no group %s: the tree and the local socket are root's only", d->cfg.group);
		return;
	}
	for (char **m = g->gr_mem; m && *m; m++)
		n++;
	report(d, ST_OK, "group", NULL, "%s (gid %u, %zu member%s besides root)", g->gr_name,
	       (unsigned)g->gr_gid, n, n == 1 ? "" : "s");
}

static void check_data(struct doctor *d)
{
	char path[4096], fix[4200];
	struct stat st;
	DIR *dir;
	size_t n = 0;

	if (!d->cfg_ok)
		return;
	if (stat(d->cfg.data, &st) < 0 || !S_ISDIR(st.st_mode)) {
		snprintf(fix, sizeof fix, "start paddockd once (it makes it) or fix data = in %s",
			 d->cfg.path ? d->cfg.path : d->config_path);
		report(d, ST_FAIL, "data", fix, "%s is not a directory", d->cfg.data);
		report(d, ST_SKIP, "images", NULL, "no data directory");
		return;
	}
	report(d, ST_OK, "data", NULL, "%s", d->cfg.data);

	snprintf(path, sizeof path, "%s/images", d->cfg.data);
	dir = opendir(path);
	if (dir) {
		struct dirent *de;
		while ((de = readdir(dir))) {
			char rootfs[4400];
			if (de->d_name[0] == '.')
				continue;
			snprintf(rootfs, sizeof rootfs, "%s/%s/rootfs", path, de->d_name);
			if (stat(rootfs, &st) == 0 && S_ISDIR(st.st_mode))
				n++;
		}
		closedir(dir);
	}
	snprintf(fix, sizeof fix, "mkimage --config %s %s",
		 d->cfg.path ? d->cfg.path : d->config_path, d->cfg.default_image);
	snprintf(path, sizeof path, "%s/images/%s/rootfs", d->cfg.data, d->cfg.default_image);
	if (n == 0)
		report(d, ST_FAIL, "images", fix, "no image in %s/images", d->cfg.data);
	else if (stat(path, &st) < 0 || !S_ISDIR(st.st_mode))
		report(d, ST_FAIL, "images", fix, "%zu image%s, but not the default one, %s", n,
		       n == 1 ? "" : "s", d->cfg.default_image);
	else
		report(d, ST_OK, "images", NULL, "%zu image%s, the default %s among them", n,
		       n == 1 ? "" : "s", d->cfg.default_image);
}

static size_t discard(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	(void)ptr;
	(void)userdata;
	return size * nmemb;
}

/* GET url (over the unix socket sock, unless NULL): the HTTP status, or
 * -1 with curl's reason in why. */
static long http_get(const char *url, const char *sock, char *why, size_t size)
{
	CURL *c = curl_easy_init();
	char errbuf[CURL_ERROR_SIZE] = "";
	long status = -1;

	if (!c) {
		snprintf(why, size, "out of memory");
		return -1;
	}
	curl_easy_setopt(c, CURLOPT_URL, url);
	if (sock)
		curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, sock);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, (long)HTTP_TIMEOUT_S);
	curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
	if (curl_easy_perform(c) == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	else
		snprintf(why, size, "%s", errbuf);
	curl_easy_cleanup(c);
	return status;
}

static void check_daemon(struct doctor *d)
{
	static const char fix[] = "systemctl start paddockd (journalctl -u paddockd says why "
				  "it stopped)";
	char url[512], why[CURL_ERROR_SIZE + 64], path[4096];
	_cleanup_free_ char *text = NULL;
	struct stat st;
	long status;
	int r;

	if (!d->cfg_ok)
		return;
	r = doctor_listen_url(d->cfg.listen, url, sizeof url);
	if (r == -EAGAIN) {
		/* listen = ADDR:0: the port it bound is in RUN/http-url. */
		_cleanup_free_ char *bound = NULL;
		snprintf(path, sizeof path, "%s/http-url", d->cfg.run);
		if (read_file_at(AT_FDCWD, path, 512, &bound, NULL) >= 0) {
			snprintf(url, sizeof url, "%s/", first_line(bound));
			r = 0;
		}
	}
	if (strcmp(d->cfg.listen, "none") == 0)
		report(d, ST_SKIP, "http", NULL, "listen = none");
	else if (r < 0)
		report(d, ST_FAIL, "http", fix, "no listener found for listen = %s", d->cfg.listen);
	else if ((status = http_get(url, NULL, why, sizeof why)) < 0)
		report(d, ST_FAIL, "http", fix, "%s does not answer: %s", url, why);
	else
		report(d, status < 500 ? ST_OK : ST_FAIL, "http", status < 500 ? NULL : fix,
		       "%s answers %ld", url, status);

	if (strcmp(d->cfg.socket, "none") == 0)
		report(d, ST_SKIP, "socket", NULL, "socket = none");
	else if ((status = http_get("http://paddock/v1/tree/version", d->cfg.socket, why,
				    sizeof why)) < 0)
		report(d, ST_FAIL, "socket", fix, "%s does not answer: %s", d->cfg.socket, why);
	else
		report(d, status < 500 ? ST_OK : ST_FAIL, "socket", status < 500 ? NULL : fix,
		       "%s answers %ld", d->cfg.socket, status);

	if (read_file_at(AT_FDCWD, "/proc/self/mountinfo", 16 << 20, &text, NULL) < 0 ||
	    !doctor_mountinfo_fuse(text, d->cfg.mount))
		report(d, ST_FAIL, "mount", fix, "%s is not mounted", d->cfg.mount);
	else if (stat(d->cfg.mount, &st) < 0)
		report(d, ST_FAIL, "mount",
		       "the daemon is gone: umount -l the mount point, then systemctl restart "
		       "paddockd",
		       "%s is mounted but dead: %s", d->cfg.mount, strerror(errno));
	else
		report(d, ST_OK, "mount", NULL, "%s (FUSE)", d->cfg.mount);
}

/* A process whose name is caddy: its PID, or 0. */
static pid_t caddy_pid(void)
{
	DIR *dir = opendir("/proc");
	struct dirent *de;
	pid_t pid = 0;

	if (!dir)
		return 0;
	while (!pid && (de = readdir(dir))) {
		char path[300];
		_cleanup_free_ char *comm = NULL;
		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		snprintf(path, sizeof path, "/proc/%s/comm", de->d_name);
		if (read_file_at(AT_FDCWD, path, 64, &comm, NULL) >= 0 &&
		    strcmp(first_line(comm), "caddy") == 0)
			pid = (pid_t)atoi(de->d_name);
	}
	closedir(dir);
	return pid;
}

/* The certificate host:port serves on 127.0.0.1 for the name host: its
 * expiry. 0, or -1 with the reason in why. */
static int served_cert_expiry(const char *host, unsigned port, time_t *ret, char *why, size_t size)
{
	CURL *c = curl_easy_init();
	char url[600], resolve[600], errbuf[CURL_ERROR_SIZE] = "";
	struct curl_slist *rl = NULL;
	struct curl_certinfo *ci = NULL;
	int r = -1;

	if (!c) {
		snprintf(why, size, "out of memory");
		return -1;
	}
	snprintf(url, sizeof url, "https://%s:%u/", host, port);
	snprintf(resolve, sizeof resolve, "%s:%u:127.0.0.1", host, port);
	rl = curl_slist_append(NULL, resolve);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_RESOLVE, rl);
	curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
	/* Whatever its issuer (tls internal: Caddy's own CA), its dates. */
	curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
	curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
	curl_easy_setopt(c, CURLOPT_CERTINFO, 1L);
	curl_easy_setopt(c, CURLOPT_CONNECT_ONLY, 1L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, (long)HTTP_TIMEOUT_S);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
	if (curl_easy_perform(c) != CURLE_OK)
		snprintf(why, size, "no TLS on 127.0.0.1:%u for %s: %s", port, host, errbuf);
	else if (curl_easy_getinfo(c, CURLINFO_CERTINFO, &ci) != CURLE_OK || !ci ||
		 ci->num_of_certs < 1)
		snprintf(why, size, "no certificate seen on 127.0.0.1:%u for %s", port, host);
	else {
		snprintf(why, size, "the certificate has no expiry date");
		for (struct curl_slist *s = ci->certinfo[0]; s; s = s->next)
			if (strncmp(s->data, "Expire date:", 12) == 0) {
				if (doctor_parse_cert_time(s->data + 12, ret) == 0)
					r = 0;
				else
					snprintf(why, size, "unreadable expiry \"%s\"",
						 s->data + 12);
				break;
			}
	}
	curl_slist_free_all(rl);
	curl_easy_cleanup(c);
	return r;
}

static void check_caddy(struct doctor *d)
{
	_cleanup_free_ char *text = NULL, *site = NULL;
	char caddy[4096], out[8192], host[256], fix[512];
	unsigned port;
	time_t not_after;
	pid_t pid;

	if (read_file_at(AT_FDCWD, d->caddyfile, 1 << 20, &text, NULL) < 0 ||
	    !doctor_caddy_mentions(text)) {
		report(d, ST_SKIP, "caddy", NULL, "not configured (no %s naming paddock)",
		       d->caddyfile);
		return;
	}
	if (!find_program("caddy", caddy, sizeof caddy))
		report(d, ST_FAIL, "caddy", "apt install caddy",
		       "%s names paddock but caddy is not installed", d->caddyfile);
	else {
		int r = run((const char *const[]){caddy, "validate", "--adapter", "caddyfile",
						  "--config", d->caddyfile, NULL},
			    out, sizeof out);
		if (r != 0) {
			/* Its last line says what it refuses. */
			char *end = out + strlen(out);
			while (end > out && end[-1] == '\n')
				*--end = '\0';
			char *last = strrchr(out, '\n');
			snprintf(fix, sizeof fix, "fix it: caddy validate --config %s",
				 d->caddyfile);
			report(d, ST_FAIL, "caddy", fix, "%s is refused: %s", d->caddyfile,
			       r < 0  ? strerror(-r)
			       : last ? last + 1
				      : out);
		} else if (!(pid = caddy_pid()))
			report(d, ST_FAIL, "caddy",
			       "systemctl enable --now caddy (journalctl -u caddy says why it "
			       "stopped)",
			       "%s is valid, but caddy is not running", d->caddyfile);
		else
			report(d, ST_OK, "caddy", NULL, "%s is valid; caddy runs (PID %d)",
			       d->caddyfile, (int)pid);
	}

	/* The site: in the installer's file beside the Caddyfile
	 * (paddock.caddy) when the Caddyfile imports it, which may list
	 * other sites of its own; else the Caddyfile's first. */
	const char *slash = strrchr(d->caddyfile, '/');
	char inc[4096];
	if (slash)
		snprintf(inc, sizeof inc, "%.*s/paddock.caddy", (int)(slash - d->caddyfile),
			 d->caddyfile);
	else
		snprintf(inc, sizeof inc, "paddock.caddy");
	if (!(strstr(text, "paddock.caddy") &&
	      read_file_at(AT_FDCWD, inc, 1 << 20, &site, NULL) >= 0 &&
	      doctor_caddy_site(site, host, sizeof host, &port) == 0) &&
	    doctor_caddy_site(text, host, sizeof host, &port) < 0) {
		report(d, ST_SKIP, "tls", NULL, "no site with a host name in %s or %s",
		       d->caddyfile, inc);
		return;
	}
	if (served_cert_expiry(host, port, &not_after, out, sizeof out) < 0) {
		report(d, ST_FAIL, "tls",
		       "check that the name resolves here and ports 80 and 443 are open "
		       "(journalctl -u caddy)",
		       "%s", out);
		return;
	}
	time_t now = time(NULL);
	long days = doctor_cert_days_left(not_after, now);
	char date[64];
	struct tm tm;
	strftime(date, sizeof date, "%Y-%m-%d", gmtime_r(&not_after, &tm));
	if (!doctor_cert_ok(not_after, now, DOCTOR_CERT_DAYS_MIN))
		report(d, ST_FAIL, "tls",
		       "Caddy renews 30 days ahead: see why it could not (journalctl -u caddy)",
		       "the certificate for %s %s %s (%ld days)", host,
		       days < 0 ? "expired" : "expires", date, days);
	else
		report(d, ST_OK, "tls", NULL, "the certificate for %s is valid until %s (%ld days)",
		       host, date, days);
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: paddock doctor [--config FILE] [--caddyfile FILE] [--json]\n"
		"Checks this server for what paddockd needs, one line per check; each\n"
		"failing one says what to do. Exit status 0 when none fails.\n"
		"  --config FILE     the daemon's configuration (default " CONFIG_DEFAULT_PATH ")\n"
		"  --caddyfile FILE  Caddy's configuration (default " CADDYFILE_DEFAULT ")\n"
		"  --json            the results as a JSON array\n");
}

int cli_doctor(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"config", required_argument, NULL, 'c'},
	    {"caddyfile", required_argument, NULL, 'C'},
	    {"json", no_argument, NULL, 'j'},
	    {"help", no_argument, NULL, 'h'},
	    {0},
	};
	struct doctor d = {.config_path = CONFIG_DEFAULT_PATH, .caddyfile = CADDYFILE_DEFAULT};
	int c;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "c:h", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			d.config_path = optarg;
			break;
		case 'C':
			d.caddyfile = optarg;
			break;
		case 'j':
			d.json = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			fprintf(stderr, "paddock: doctor: unknown option or missing value: %s\n",
				argv[optind - 1]);
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "paddock: doctor: unexpected argument \"%s\"\n", argv[optind]);
		usage(stderr);
		return 2;
	}
	if (d.json && !(d.results = json_array())) {
		fprintf(stderr, "paddock: out of memory\n");
		return 1;
	}
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0) {
		fprintf(stderr, "paddock: cannot initialize libcurl\n");
		json_decref(d.results);
		return 1;
	}
	if (geteuid() != 0 && !d.json)
		printf("(not root: some checks need root and are skipped or may fail)\n");

	check_config(&d);
	check_fuse(&d);
	check_crun(&d);
	check_cgroups(&d);
	check_nftables(&d);
	check_userns(&d);
	check_overlayfs(&d);
	check_lxcfs(&d);
	check_group(&d);
	check_data(&d);
	check_daemon(&d);
	check_caddy(&d);

	if (d.json) {
		json_dumpf(d.results, stdout, JSON_INDENT(2));
		putchar('\n');
		json_decref(d.results);
	} else if (d.failed)
		printf("%u check%s failed\n", d.failed, d.failed == 1 ? "" : "s");
	config_release(&d.cfg);
	curl_global_cleanup();
	return d.failed ? 1 : 0;
}

#else /* not a Linux server */

int cli_doctor(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "paddock: doctor checks a Linux server: run it there\n");
	return 1;
}

#endif
