#include <fcntl.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <unistd.h>
#include <linux/magic.h>
#include <linux/mount.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>

#include "runtime/cgroup.h"
#include "common/util.h"

const char *cgroup_mode_to_string(enum cgroup_mode m)
{
	switch (m) {
	case CGROUP_LEGACY:
		return "v1";
	case CGROUP_HYBRID:
		return "hybrid";
	case CGROUP_UNIFIED:
		return "v2";
	}
	return "unknown";
}

int cgroup_detect(const char *root, enum cgroup_mode *ret_mode, bool *ret_crun_private_ns)
{
	char path[4096];
	struct statfs fs;
	bool private_ns = false;

	if (statfs(root, &fs) < 0)
		return -errno;
	if (fs.f_type == CGROUP2_SUPER_MAGIC) {
		*ret_mode = CGROUP_UNIFIED;
		*ret_crun_private_ns = false;
		return 0;
	}
	snprintf(path, sizeof path, "%s/unified", root);
	if (statfs(path, &fs) < 0 || fs.f_type != CGROUP2_SUPER_MAGIC) {
		*ret_mode = CGROUP_LEGACY;
		*ret_crun_private_ns = false;
		return 0;
	}
	/* A hybrid host whose v2 tree holds controllers: crun refuses it. */
	_cleanup_free_ char *ctrl = NULL;
	snprintf(path, sizeof path, "%s/unified/cgroup.controllers", root);
	if (read_file_at(AT_FDCWD, path, 4096, &ctrl, NULL) >= 0 &&
	    ctrl[strspn(ctrl, " \n")] != '\0')
		private_ns = true;
	*ret_mode = CGROUP_HYBRID;
	*ret_crun_private_ns = private_ns;
	return 0;
}

/* Reads the first number of a cgroup file; "max" reads as UINT64_MAX. */
static int read_u64(const char *root, const char *ctrl, const char *path, const char *file,
		    uint64_t *ret)
{
	char p[4096];
	_cleanup_free_ char *buf = NULL;
	int r;

	if (ctrl)
		snprintf(p, sizeof p, "%s/%s%s/%s", root, ctrl, path, file);
	else
		snprintf(p, sizeof p, "%s%s/%s", root, path, file);
	r = read_file_at(AT_FDCWD, p, 4096, &buf, NULL);
	if (r < 0)
		return r;
	if (strncmp(buf, "max", 3) == 0) {
		*ret = UINT64_MAX;
		return 0;
	}
	char *end;
	errno = 0;
	unsigned long long v = strtoull(buf, &end, 10);
	if (errno || end == buf)
		return -EIO;
	*ret = v;
	return 0;
}

/* Reads "key value" from a flat-keyed cgroup file (cpu.stat). */
static int read_keyed(const char *root, const char *path, const char *file, const char *key,
		      uint64_t *ret)
{
	char p[4096];
	_cleanup_free_ char *buf = NULL;
	size_t klen = strlen(key);
	int r;

	snprintf(p, sizeof p, "%s%s/%s", root, path, file);
	r = read_file_at(AT_FDCWD, p, 65536, &buf, NULL);
	if (r < 0)
		return r;
	for (char *line = buf; line && *line;
	     line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
		if (strncmp(line, key, klen) == 0 && line[klen] == ' ') {
			*ret = strtoull(line + klen + 1, NULL, 10);
			return 0;
		}
	}
	return -ENOENT;
}

static bool dir_exists(const char *root, const char *ctrl, const char *path)
{
	char p[4096];
	struct stat st;

	if (ctrl)
		snprintf(p, sizeof p, "%s/%s%s", root, ctrl, path);
	else
		snprintf(p, sizeof p, "%s%s", root, path);
	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

bool cgroup_exists(const char *root, enum cgroup_mode mode, const char *path)
{
	static const char *const v1[] = {"memory",  "pids",  "cpu",    "cpuacct", "freezer",
					 "devices", "blkio", "cpuset", "systemd"};

	if (mode == CGROUP_UNIFIED)
		return dir_exists(root, NULL, path);
	for (size_t i = 0; i < ELEMENTSOF(v1); i++)
		if (dir_exists(root, v1[i], path))
			return true;
	return false;
}

int cgroup_read_usage(const char *root, enum cgroup_mode mode, const char *path,
		      struct cgroup_usage *ret)
{
	struct cgroup_usage u = {0};
	uint64_t v;

	if (mode == CGROUP_UNIFIED) {
		if (!dir_exists(root, NULL, path))
			return -ENOENT;
		if (read_keyed(root, path, "cpu.stat", "usage_usec", &v) >= 0)
			u.cpu_usec = v;
		if (read_u64(root, NULL, path, "memory.current", &v) >= 0)
			u.memory_bytes = v;
		if (read_u64(root, NULL, path, "pids.current", &v) >= 0)
			u.pids = v;
	} else {
		if (!dir_exists(root, "memory", path) && !dir_exists(root, "pids", path))
			return -ENOENT;
		if (read_u64(root, "cpuacct", path, "cpuacct.usage", &v) >= 0)
			u.cpu_usec = v / 1000;
		if (read_u64(root, "memory", path, "memory.usage_in_bytes", &v) >= 0)
			u.memory_bytes = v;
		if (read_u64(root, "pids", path, "pids.current", &v) >= 0)
			u.pids = v;
	}
	*ret = u;
	return 0;
}

int cgroup_read_limits(const char *root, enum cgroup_mode mode, const char *path,
		       struct cgroup_limits *ret)
{
	struct cgroup_limits l = {.memory_bytes = UINT64_MAX, .pids = UINT64_MAX};
	uint64_t v;

	if (mode == CGROUP_UNIFIED) {
		char p[4096];
		_cleanup_free_ char *buf = NULL;

		if (!dir_exists(root, NULL, path))
			return -ENOENT;
		snprintf(p, sizeof p, "%s%s/cpu.max", root, path);
		if (read_file_at(AT_FDCWD, p, 4096, &buf, NULL) >= 0) {
			unsigned long long q, per;
			if (sscanf(buf, "%llu %llu", &q, &per) == 2) {
				l.cpu_quota_usec = q;
				l.cpu_period_usec = per;
			} else if (sscanf(buf, "max %llu", &per) == 1)
				l.cpu_period_usec = per;
		}
		if (read_u64(root, NULL, path, "memory.max", &v) >= 0)
			l.memory_bytes = v;
		if (read_u64(root, NULL, path, "pids.max", &v) >= 0)
			l.pids = v;
	} else {
		if (!dir_exists(root, "memory", path))
			return -ENOENT;
		char p[4096];
		_cleanup_free_ char *buf = NULL;
		snprintf(p, sizeof p, "%s/cpu%s/cpu.cfs_quota_us", root, path);
		if (read_file_at(AT_FDCWD, p, 4096, &buf, NULL) >= 0) {
			long long q = strtoll(buf, NULL, 10);
			l.cpu_quota_usec = q > 0 ? (uint64_t)q : 0;
		}
		if (read_u64(root, "cpu", path, "cpu.cfs_period_us", &v) >= 0)
			l.cpu_period_usec = v;
		if (read_u64(root, "memory", path, "memory.limit_in_bytes", &v) >= 0)
			l.memory_bytes = v;
		if (read_u64(root, "pids", path, "pids.max", &v) >= 0)
			l.pids = v;
	}
	*ret = l;
	return 0;
}

void cgroup_cpu_add(struct cgroup_cpu_window *w, uint64_t at_usec, uint64_t cpu_usec)
{
	if (w->n) {
		unsigned last = (w->next + CGROUP_CPU_SAMPLES - 1) % CGROUP_CPU_SAMPLES;
		if (cpu_usec < w->s[last].cpu_usec)
			w->n = 0;
	}
	w->s[w->next].at_usec = at_usec;
	w->s[w->next].cpu_usec = cpu_usec;
	w->next = (w->next + 1) % CGROUP_CPU_SAMPLES;
	if (w->n < CGROUP_CPU_SAMPLES)
		w->n++;
}

unsigned cgroup_cpu_percent(const struct cgroup_cpu_window *w, uint64_t window_usec,
			    uint64_t min_usec, uint64_t now_usec, uint64_t cpu_usec)
{
	uint64_t span, used;
	int base = -1;

	/* From the newest sample back to the oldest. */
	for (unsigned k = 1; k <= w->n; k++) {
		unsigned i = (w->next + CGROUP_CPU_SAMPLES - k) % CGROUP_CPU_SAMPLES;
		if (w->s[i].at_usec > now_usec)
			continue;
		uint64_t age = now_usec - w->s[i].at_usec;
		if (age >= min_usec)
			base = (int)i;
		if (age >= window_usec)
			break;
	}
	if (base < 0 || cpu_usec < w->s[base].cpu_usec)
		return 0;
	span = now_usec - w->s[base].at_usec;
	used = cpu_usec - w->s[base].cpu_usec;
	if (span == 0)
		return 0;
	/* used * 100 cannot overflow for centuries of CPU time. */
	return (unsigned)((used * 100 + span / 2) / span);
}

/* The levels of path (as in OCI cgroupsPath), each checked: no
 * empty, "." or ".." level, none longer than a name. Calls fn with the
 * prefix up to each level in turn (rel: "a", "a/b", ...). Returns 0, fn's
 * error, or -EINVAL / -ENAMETOOLONG before fn is first called. */
static int cg_levels(const char *path, char *rel, size_t relsz,
		     int (*fn)(void *ctx, const char *rel), void *ctx)
{
	size_t at = 0;

	/* Checked whole first: a bad level changes nothing. */
	for (const char *p = path; *p;) {
		const char *end;

		while (*p == '/')
			p++;
		if (!*p)
			break;
		end = strchrnul(p, '/');
		if (end - p >= 256 || at + 1 + (size_t)(end - p) >= relsz)
			return -ENAMETOOLONG;
		if (p[0] == '.' && (end - p == 1 || (end - p == 2 && p[1] == '.')))
			return -EINVAL;
		at += 1 + (size_t)(end - p);
		p = end;
	}
	if (at == 0)
		return -EINVAL;
	at = 0;
	for (const char *p = path; *p;) {
		const char *end;
		int r;

		while (*p == '/')
			p++;
		if (!*p)
			break;
		end = strchrnul(p, '/');
		at += (size_t)snprintf(rel + at, relsz - at, "%s%.*s", at ? "/" : "",
				       (int)(end - p), p);
		r = fn(ctx, rel);
		if (r < 0)
			return r;
		p = end;
	}
	return 0;
}

/* A new cpuset directory is empty and takes no task: its parent's. */
static void cpuset_inherit(const char *dir)
{
	static const char *const files[] = {"cpuset.cpus", "cpuset.mems"};
	char path[4200], parent[4200];

	for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
		_cleanup_free_ char *val = NULL;
		char *slash;

		snprintf(parent, sizeof parent, "%s", dir);
		slash = strrchr(parent, '/');
		if (!slash)
			return;
		snprintf(slash, sizeof parent - (size_t)(slash - parent), "/%s", files[i]);
		snprintf(path, sizeof path, "%s/%s", dir, files[i]);
		if (read_file_at(AT_FDCWD, parent, 4096, &val, NULL) < 0)
			continue;
		int fd = open(path, O_WRONLY | O_CLOEXEC);
		if (fd >= 0) {
			(void)write_all(fd, val, strlen(val));
			close(fd);
		}
	}
}

struct delegate_walk {
	const char *hier;
	bool cpuset;
	char dir[4200];
};

/* One level of the box's cgroup: made (a cpuset one given its parent's
 * cpus and mems). */
static int delegate_level(void *ctx, const char *rel)
{
	struct delegate_walk *w = ctx;
	int n = snprintf(w->dir, sizeof w->dir, "%s/%s", w->hier, rel);

	if (n < 0 || (size_t)n >= sizeof w->dir)
		return -ENAMETOOLONG;
	if (mkdir(w->dir, 0755) == 0) {
		if (w->cpuset)
			cpuset_inherit(w->dir);
	} else if (errno != EEXIST)
		return -errno;
	return 0;
}

static int delegate_in(const char *hier, const char *path, uid_t uid, gid_t gid)
{
	static const char *const files[] = {"cgroup.procs", "tasks", "cgroup.threads",
					    "cgroup.subtree_control"};
	struct delegate_walk w = {.hier = hier};
	char rel[4096], file[4300];
	int r;

	snprintf(file, sizeof file, "%s/cpuset.cpus", hier);
	w.cpuset = access(file, F_OK) == 0;
	/* Each level in turn (cgroupfs has no mkdir -p), the whole path
	 * checked first. */
	r = cg_levels(path, rel, sizeof rel, delegate_level, &w);
	if (r < 0)
		return r;
	if (lchown(w.dir, uid, gid) < 0)
		return -errno;
	for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
		snprintf(file, sizeof file, "%s/%s", w.dir, files[i]);
		if (lchown(file, uid, gid) < 0 && errno != ENOENT)
			return -errno;
	}
	return 0;
}

int cgroup_delegate(const char *root, enum cgroup_mode mode, const char *path, uid_t uid,
		    gid_t gid)
{
	struct dirent *de;
	DIR *d;
	int r = 0;

	if (mode == CGROUP_UNIFIED)
		return delegate_in(root, path, uid, gid);
	d = opendir(root);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		char hier[4200];
		struct stat st;

		if (de->d_name[0] == '.' || strcmp(de->d_name, "unified") == 0)
			continue;
		snprintf(hier, sizeof hier, "%s/%s", root, de->d_name);
		/* Real directories only: cpu -> cpu,cpuacct links name a
		 * hierarchy twice. */
		if (lstat(hier, &st) < 0 || !S_ISDIR(st.st_mode))
			continue;
		int k = delegate_in(hier, path, uid, gid);
		if (k < 0 && r == 0)
			r = k;
	}
	closedir(d);
	return r;
}

static int v2_mkdir(void *ctx, const char *rel)
{
	if (mkdirat(*(int *)ctx, rel, 0755) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

static int v2_nothing(void *ctx, const char *rel)
{
	(void)ctx;
	(void)rel;
	return 0;
}

int cgroup_v2_open(const char *root, enum cgroup_mode mode)
{
	char path[4096];
	int fs, mnt;

	if (mode == CGROUP_UNIFIED)
		return -EOPNOTSUPP;
	if (mode == CGROUP_HYBRID) {
		snprintf(path, sizeof path, "%s/unified", root);
		int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		return fd < 0 ? -errno : fd;
	}
	fs = (int)syscall(SYS_fsopen, "cgroup2", FSOPEN_CLOEXEC);
	if (fs < 0)
		return -errno;
	if (syscall(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0) {
		int r = -errno;
		close(fs);
		return r;
	}
	mnt = (int)syscall(SYS_fsmount, fs, FSMOUNT_CLOEXEC,
			   MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
	int r = mnt < 0 ? -errno : mnt;
	close(fs);
	return r;
}

int cgroup_v2_make(int v2fd, const char *path)
{
	char rel[4096], procs[4200];
	int r, fd;

	r = cg_levels(path, rel, sizeof rel, v2_mkdir, &v2fd);
	if (r < 0)
		return r;
	snprintf(procs, sizeof procs, "%s/cgroup.procs", rel);
	fd = openat(v2fd, procs, O_WRONLY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int cgroup_v2_remove(int v2fd, const char *path)
{
	char rel[4096];
	int r;

	r = cg_levels(path, rel, sizeof rel, v2_nothing, NULL);
	if (r < 0)
		return r;
	/* A killed process leaves its cgroup in its exit, which may still
	 * be under way when the runtime is told the box is gone. */
	for (int i = 0;; i++) {
		if (unlinkat(v2fd, rel, AT_REMOVEDIR) == 0 || errno == ENOENT)
			return 0;
		if (errno != EBUSY || i == 50)
			return -errno;
		(void)usleep(10000);
	}
}
