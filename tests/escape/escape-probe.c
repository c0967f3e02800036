/* escape-probe.c - the attacks of the escape suite (tests/escape/battery.sh,
 * tests/integration/test-escape.sh), run as root inside a box. Built static
 * on the host (the tiny image has no libc) and copied into the box.
 *
 * Each case makes a real attempt, with arguments that would work on a host
 * (or in a box without the defence), and prints one line per case:
 *
 *   CASE<TAB>RESULT<TAB>DETAIL
 *
 * RESULT is CONTAINED (the attempt failed, DETAIL says how), ESCAPED (it
 * worked, DETAIL says what it reached) or HOST (the box cannot judge it:
 * DETAIL carries key=value pairs the test judges from the host). Attacks
 * whose success would harm the host are made harmless where that does not
 * change whether they succeed: a sysctl is written its own value, sysrq gets
 * no command, a module or kernel to load is a file that is none, the
 * runtime's binary gets a few bytes appended (ELF files still run).
 *
 *   escape-probe CASE [ARGS...]   (cases: see the table at the end)
 *
 * Exit status 0 once the line is printed, 2 on bad use. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/bpf.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/acct.h>
#include <sys/io.h>
#include <sys/ipc.h>
#include <sys/klog.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/swap.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef CLONE_NEWUSER
#define CLONE_NEWUSER 0x10000000
#endif
#ifndef OPEN_TREE_CLONE
#define OPEN_TREE_CLONE 1
#endif
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif
#define KEY_SPEC_SESSION_KEYRING (-3)
#define KEY_SPEC_USER_KEYRING (-4)
#define KEYCTL_GET_KEYRING_ID 0
#define KEYCTL_UNLINK 9
#define KEYCTL_SEARCH 10
#define KEXEC_FILE_NO_INITRAMFS 4
#define MARKER "PADDOCK-ESCAPE-MARKER\n"

static const char *self_exe = "/proc/self/exe";

static const char *ename(int e)
{
	const char *n = e ? strerrorname_np(e) : "OK";
	return n ? n : "E?";
}

/* A growing detail text: what each attempt gave, "what=ERRNO ...". */
struct detail {
	char text[3000];
	size_t len;
	bool escaped;
};

__attribute__((format(printf, 2, 3))) static void add(struct detail *d, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (d->len >= sizeof d->text - 1)
		return;
	if (d->len > 0)
		d->text[d->len++] = ' ';
	va_start(ap, fmt);
	n = vsnprintf(d->text + d->len, sizeof d->text - d->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		d->len =
		    d->len + (size_t)n < sizeof d->text ? d->len + (size_t)n : sizeof d->text - 1;
}

/* An attempt that must fail: r < 0 with errno is contained, anything else
 * is an escape. */
static void attempt(struct detail *d, const char *what, long r, int err)
{
	if (r < 0) {
		add(d, "%s=%s", what, ename(err));
	} else {
		add(d, "%s=WORKED", what);
		d->escaped = true;
	}
}

/* An attempt whose errno REACHED means the call passed its permission
 * check (the kernel went on to judge the arguments): an escape too. */
static void attempt_reach(struct detail *d, const char *what, long r, int err, int reached)
{
	if (r < 0 && err != reached) {
		add(d, "%s=%s", what, ename(err));
	} else {
		add(d, "%s=%s(past-the-permission-check)", what, r < 0 ? ename(err) : "WORKED");
		d->escaped = true;
	}
}

static int report(const char *name, const struct detail *d)
{
	printf("%s\t%s\t%s\n", name, d->escaped ? "ESCAPED" : "CONTAINED", d->text);
	fflush(stdout);
	return 0;
}

/* Runs fn in a child (some attempts would change the caller if they
 * worked) and returns its result, errno in *err. */
static long in_child(long (*fn)(const void *), const void *arg, int *err)
{
	int fds[2], st;
	long res[2] = {-1, EIO};
	pid_t pid;

	if (pipe(fds) < 0) {
		*err = errno;
		return -1;
	}
	pid = fork();
	if (pid < 0) {
		*err = errno;
		return -1;
	}
	if (pid == 0) {
		long out[2];
		out[0] = fn(arg);
		out[1] = out[0] < 0 ? errno : 0;
		if (write(fds[1], out, sizeof out) != sizeof out)
			_exit(3);
		_exit(0);
	}
	close(fds[1]);
	if (read(fds[0], res, sizeof res) != sizeof res) {
		res[0] = -1;
		res[1] = EIO;
	}
	close(fds[0]);
	waitpid(pid, &st, 0);
	*err = (int)res[1];
	return res[0];
}

/* ---- user namespaces -------------------------------------------------- */

/* Box root must not be host root: the box's uid_map must not map its 0 to
 * the parent's 0 (the identity map of a box without a user namespace). */
static int case_userns_map(int argc, char **argv)
{
	struct detail d = {0};
	const char *files[] = {"/proc/self/uid_map", "/proc/self/gid_map"};

	(void)argc, (void)argv;
	for (int i = 0; i < 2; i++) {
		FILE *f = fopen(files[i], "re");
		unsigned long in, out, count;
		bool zero = false;

		if (!f) {
			add(&d, "%s=%s", files[i], ename(errno));
			continue;
		}
		while (fscanf(f, "%lu %lu %lu", &in, &out, &count) == 3) {
			add(&d, "%s:%lu,%lu,%lu", strrchr(files[i], '/') + 1, in, out, count);
			if (in == 0 && out == 0)
				zero = true;
		}
		fclose(f);
		if (zero) {
			add(&d, "(box 0 is the host's 0)");
			d.escaped = true;
		}
	}
	return report("userns-map", &d);
}

static long do_unshare_user(const void *arg)
{
	(void)arg;
	return unshare(CLONE_NEWUSER);
}

static long do_clone_user(const void *arg)
{
	long r;

	(void)arg;
	r = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0);
	if (r == 0)
		_exit(0);
	if (r > 0)
		waitpid((pid_t)r, NULL, 0);
	return r;
}

static int case_unshare_user(int argc, char **argv)
{
	struct detail d = {0};
	long r;
	int err;

	(void)argc, (void)argv;
	r = in_child(do_unshare_user, NULL, &err);
	attempt(&d, "unshare(CLONE_NEWUSER)", r, err);
	r = in_child(do_clone_user, NULL, &err);
	attempt(&d, "clone(CLONE_NEWUSER)", r, err);
	return report("unshare-user", &d);
}

/* ---- kernel interfaces ------------------------------------------------ */

static int case_bpf(int argc, char **argv)
{
	struct detail d = {0};
	struct bpf_insn insns[] = {
	    {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = 0, .imm = 0},
	    {.code = BPF_JMP | BPF_EXIT},
	};
	union bpf_attr a;
	long r;

	(void)argc, (void)argv;
	memset(&a, 0, sizeof a);
	a.prog_type = BPF_PROG_TYPE_SOCKET_FILTER;
	a.insn_cnt = 2;
	a.insns = (uint64_t)(uintptr_t)insns;
	a.license = (uint64_t)(uintptr_t) "GPL";
	r = syscall(SYS_bpf, BPF_PROG_LOAD, &a, sizeof a);
	attempt(&d, "BPF_PROG_LOAD", r, errno);
	if (r >= 0)
		close((int)r);
	memset(&a, 0, sizeof a);
	a.map_type = BPF_MAP_TYPE_ARRAY;
	a.key_size = 4;
	a.value_size = 8;
	a.max_entries = 1;
	r = syscall(SYS_bpf, BPF_MAP_CREATE, &a, sizeof a);
	attempt(&d, "BPF_MAP_CREATE", r, errno);
	if (r >= 0)
		close((int)r);
	return report("bpf", &d);
}

static int case_perf(int argc, char **argv)
{
	struct detail d = {0};
	struct perf_event_attr a;
	long r;

	(void)argc, (void)argv;
	memset(&a, 0, sizeof a);
	a.size = sizeof a;
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_CPU_CLOCK;
	a.disabled = 1;
	r = syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
	attempt(&d, "own-process", r, errno);
	if (r >= 0)
		close((int)r);
	r = syscall(SYS_perf_event_open, &a, -1, 0, -1, 0);
	attempt(&d, "whole-cpu0", r, errno);
	if (r >= 0)
		close((int)r);
	return report("perf", &d);
}

/* The kernel keyring. Refused calls are contained; when keyctl works the
 * box cannot judge: it prints its keyrings' serials and adds a key named
 * ARGV[1] to its user keyring, and the test compares them with the host's
 * (HOST result). */
static int case_keyring(int argc, char **argv)
{
	struct detail d = {0};
	long user, session, key = -1;
	int user_err, session_err, key_err = 0;

	user = syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_USER_KEYRING, 0);
	user_err = errno;
	session = syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0);
	session_err = errno;
	if (argc > 1) {
		key =
		    syscall(SYS_add_key, "user", argv[1], "box-secret", 10, KEY_SPEC_USER_KEYRING);
		key_err = errno;
	}
	if (user < 0 && session < 0 && key < 0) {
		attempt(&d, "keyctl(@u)", user, user_err);
		attempt(&d, "keyctl(@s)", session, session_err);
		if (argc > 1)
			attempt(&d, "add_key(@u)", key, key_err);
		return report("keyring", &d);
	}
	printf("keyring\tHOST\tuser=%ld session=%ld", user < 0 ? -(long)user_err : user,
	       session < 0 ? -(long)session_err : session);
	if (argc > 1)
		printf(" key=%ld", key < 0 ? -(long)key_err : key);
	printf("\n");
	return 0;
}

/* On the host: looks for the key DESC in the caller's user keyring (where
 * a box without a user namespace of its own puts it) and unlinks it from
 * there. Prints HOST found=SERIAL or found=ERRNO. */
static int case_key_find(int argc, char **argv)
{
	long key;

	if (argc < 2)
		return 2;
	key = syscall(SYS_keyctl, KEYCTL_SEARCH, KEY_SPEC_USER_KEYRING, "user", argv[1], 0);
	if (key < 0) {
		printf("key-find\tHOST\tfound=%s\n", ename(errno));
		return 0;
	}
	syscall(SYS_keyctl, KEYCTL_UNLINK, key, KEY_SPEC_USER_KEYRING);
	printf("key-find\tHOST\tfound=%ld\n", key);
	return 0;
}

/* Shocker: a file handle for the root directory (inode 2) of the host
 * filesystem that holds /dev/paddock-init, opened through that mount. */
static int case_open_by_handle(int argc, char **argv)
{
	struct detail d = {0};
	struct {
		struct file_handle fh;
		unsigned char bytes[MAX_HANDLE_SZ];
	} h;
	int mfd, mount_id;
	long r;

	(void)argc, (void)argv;
	mfd = open("/dev/paddock-init", O_RDONLY | O_CLOEXEC);
	if (mfd < 0) {
		add(&d, "open(/dev/paddock-init)=%s", ename(errno));
		return report("open-by-handle", &d);
	}
	memset(&h, 0, sizeof h);
	h.fh.handle_bytes = 8;
	h.fh.handle_type = 1; /* FILEID_INO32_GEN: inode 2, generation 0 */
	h.bytes[0] = 2;
	r = syscall(SYS_open_by_handle_at, mfd, &h.fh, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	attempt(&d, "host-fs-root", r, errno);
	if (r >= 0) {
		DIR *dir = fdopendir((int)r);
		struct dirent *e;
		int n = 0;
		while (dir && (e = readdir(dir)) && n++ < 8)
			add(&d, "/%s", e->d_name);
		if (dir)
			closedir(dir);
	}
	memset(&h, 0, sizeof h);
	h.fh.handle_bytes = MAX_HANDLE_SZ;
	if (syscall(SYS_name_to_handle_at, AT_FDCWD, "/dev/paddock-init", &h.fh, &mount_id, 0) <
	    0) {
		add(&d, "name_to_handle_at=%s", ename(errno));
	} else {
		r = syscall(SYS_open_by_handle_at, mfd, &h.fh, O_RDONLY | O_CLOEXEC);
		attempt(&d, "own-handle", r, errno);
		if (r >= 0)
			close((int)r);
	}
	close(mfd);
	return report("open-by-handle", &d);
}

/* A module and a kernel that are none (this program): a loader reached
 * answers ENOEXEC or EINVAL, a refused one EPERM. */
static int case_modules(int argc, char **argv)
{
	struct detail d = {0};
	unsigned char junk[64] = {0};
	int fd = open(self_exe, O_RDONLY | O_CLOEXEC);
	long r;

	(void)argc, (void)argv;
	r = syscall(SYS_finit_module, fd, "", 0);
	attempt_reach(&d, "finit_module", r, errno, ENOEXEC);
	r = syscall(SYS_init_module, junk, sizeof junk, "");
	attempt_reach(&d, "init_module", r, errno, ENOEXEC);
	r = syscall(SYS_delete_module, "paddock_no_such_module", O_NONBLOCK);
	attempt_reach(&d, "delete_module", r, errno, ENOENT);
	close(fd);
	return report("modules", &d);
}

static int case_kexec(int argc, char **argv)
{
	struct detail d = {0};
	int fd = open(self_exe, O_RDONLY | O_CLOEXEC);
	long r;

	(void)argc, (void)argv;
	r = syscall(SYS_kexec_file_load, fd, -1, 1, "", KEXEC_FILE_NO_INITRAMFS);
	attempt_reach(&d, "kexec_file_load", r, errno, ENOEXEC);
	/* 1000 segments: past the permission check the kernel says EINVAL. */
	r = syscall(SYS_kexec_load, 0, 1000, NULL, 0);
	attempt_reach(&d, "kexec_load", r, errno, EINVAL);
	close(fd);
	return report("kexec", &d);
}

/* The kernel's log and its addresses. */
static int case_kernel_log(int argc, char **argv)
{
	struct detail d = {0};
	char buf[4096];
	FILE *f;
	long r;

	(void)argc, (void)argv;
	r = klogctl(10 /* SYSLOG_ACTION_SIZE_BUFFER */, NULL, 0);
	attempt(&d, "syslog(SIZE_BUFFER)", r, errno);
	r = klogctl(3 /* SYSLOG_ACTION_READ_ALL */, buf, sizeof buf);
	attempt(&d, "syslog(READ_ALL)", r, errno);
	f = fopen("/proc/kallsyms", "re");
	if (!f) {
		add(&d, "kallsyms=%s", ename(errno));
	} else {
		int n = 0, nonzero = 0;
		while (n < 2000 && fgets(buf, sizeof buf, f)) {
			n++;
			if (strtoull(buf, NULL, 16) != 0)
				nonzero++;
		}
		fclose(f);
		add(&d, "kallsyms:%d/%d-addresses-shown", nonzero, n);
		if (nonzero)
			d.escaped = true;
	}
	return report("kernel-log", &d);
}

static int case_raw_io(int argc, char **argv)
{
	struct detail d = {0};
	struct timespec now;
	long r;

	(void)argc, (void)argv;
	r = ioperm(0x80, 1, 1);
	attempt(&d, "ioperm", r, errno);
	r = iopl(3);
	attempt(&d, "iopl", r, errno);
	/* The host's clock, set to what it is. */
	clock_gettime(CLOCK_REALTIME, &now);
	r = clock_settime(CLOCK_REALTIME, &now);
	attempt(&d, "clock_settime", r, errno);
	r = swapon(self_exe, 0);
	attempt_reach(&d, "swapon", r, errno, EINVAL);
	r = acct("/tmp/paddock-acct");
	attempt(&d, "acct", r, errno);
	if (r == 0)
		acct(NULL);
	return report("raw-io", &d);
}

/* ---- mounts, devices, /proc and /sys ----------------------------------- */

static long do_mount(const void *arg)
{
	const char *const *m = arg;
	unsigned long flags = strtoul(m[4], NULL, 0);

	mkdir(m[1], 0700);
	return mount(m[0], m[1], m[2], flags, m[3][0] ? m[3] : NULL);
}

static long do_umount(const void *arg)
{
	return umount2(arg, MNT_DETACH);
}

static long do_open_tree(const void *arg)
{
	(void)arg;
	return syscall(SYS_open_tree, AT_FDCWD, "/", OPEN_TREE_CLONE);
}

static long do_fsopen(const void *arg)
{
	return syscall(SYS_fsopen, arg, 0);
}

/* The box's own root device (the host disk holding /dev/paddock-init). */
static dev_t host_disk(void)
{
	struct stat st;

	if (stat("/dev/paddock-init", &st) < 0)
		return 0;
	return st.st_dev;
}

static int case_mount(int argc, char **argv)
{
	struct detail d = {0};
	char dev[64] = "";
	dev_t disk = host_disk();
	const char *mounts[][6] = {
	    {"proc", "/tmp/esc-proc", "proc", "", "0", "new-proc"},
	    {"sysfs", "/tmp/esc-sys", "sysfs", "", "0", "new-sysfs"},
	    {"cgroup", "/tmp/esc-cg", "cgroup", "memory", "0", "cgroup-v1"},
	    {"cgroup2", "/tmp/esc-cg2", "cgroup2", "", "0", "cgroup2"},
	    {"none", "/tmp/esc-tmp", "tmpfs", "", "0", "tmpfs"},
	    {"/", "/tmp/esc-bind", "", "", "0x5000" /* MS_BIND|MS_REC */, "bind-of-/"},
	    {"none", "/sys", "", "", "0x20" /* MS_REMOUNT */, "remount-/sys-rw"},
	    {"none", "/proc/sys", "", "", "0x1020" /* MS_REMOUNT|MS_BIND */,
	     "remount-/proc/sys-rw"},
	    {"none", "/sys/fs/cgroup/memory", "", "", "0x20", "remount-cgroup-rw"},
	    {dev, "/tmp/esc-disk", "ext4", "", "1" /* MS_RDONLY */, "host-disk"},
	};
	long r;
	int err;

	(void)argc, (void)argv;
	if (disk) {
		snprintf(dev, sizeof dev, "/tmp/esc-blk-%u-%u", major(disk), minor(disk));
		if (mknod(dev, S_IFBLK | 0600, disk) < 0 && errno != EEXIST)
			add(&d, "mknod(%s)=%s", dev, ename(errno));
	}
	for (size_t i = 0; i < sizeof mounts / sizeof mounts[0]; i++) {
		if (!mounts[i][0][0])
			continue;
		r = in_child(do_mount, mounts[i], &err);
		attempt(&d, mounts[i][5], r, err);
	}
	/* Unmasking: what the runtime hid or made read-only. */
	const char *masks[] = {"/proc/keys", "/proc/timer_list", "/proc/sys",
			       "/proc/acpi", "/sys/firmware",	 "/dev/paddock-init"};
	for (size_t i = 0; i < sizeof masks / sizeof masks[0]; i++) {
		char what[64];
		snprintf(what, sizeof what, "umount(%s)", masks[i]);
		r = in_child(do_umount, masks[i], &err);
		attempt(&d, what, r, err);
	}
	r = in_child(do_open_tree, NULL, &err);
	attempt(&d, "open_tree(/)", r, err);
	r = in_child(do_fsopen, "proc", &err);
	attempt(&d, "fsopen(proc)", r, err);
	if (dev[0])
		unlink(dev);
	return report("mount", &d);
}

/* mknod of devices and their use: the host's disk (the device of the
 * filesystem behind /dev/paddock-init), memory, I/O ports, the kernel log,
 * FUSE, loop devices. Making the node is allowed (CAP_MKNOD); opening it
 * must not be. */
static int case_mknod(int argc, char **argv)
{
	struct detail d = {0};
	dev_t disk = host_disk();
	struct {
		const char *name;
		mode_t type;
		dev_t dev;
	} nodes[] = {
	    {"host-disk", S_IFBLK, disk},
	    {"mem", S_IFCHR, makedev(1, 1)},
	    {"kmem", S_IFCHR, makedev(1, 2)},
	    {"port", S_IFCHR, makedev(1, 4)},
	    {"kmsg", S_IFCHR, makedev(1, 11)},
	    {"fuse", S_IFCHR, makedev(10, 229)},
	    {"loop-control", S_IFCHR, makedev(10, 237)},
	    {"loop0", S_IFBLK, makedev(7, 0)},
	};

	(void)argc, (void)argv;
	for (size_t i = 0; i < sizeof nodes / sizeof nodes[0]; i++) {
		char path[128], buf[512];
		int fd;

		if (nodes[i].name[0] == 'h' && !disk)
			continue;
		snprintf(path, sizeof path, "/tmp/esc-node-%s", nodes[i].name);
		unlink(path);
		if (mknod(path, nodes[i].type | 0600, nodes[i].dev) < 0) {
			add(&d, "mknod(%s)=%s", nodes[i].name, ename(errno));
			continue;
		}
		fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0) {
			add(&d, "open(%s %u:%u)=%s", nodes[i].name, major(nodes[i].dev),
			    minor(nodes[i].dev), ename(errno));
		} else {
			ssize_t n = read(fd, buf, sizeof buf);
			add(&d, "open(%s %u:%u)=WORKED read=%zd", nodes[i].name,
			    major(nodes[i].dev), minor(nodes[i].dev), n);
			d.escaped = true;
			close(fd);
		}
		unlink(path);
	}
	return report("mknod", &d);
}

static void read_masked(struct detail *d, const char *path)
{
	char buf[256];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0) {
		add(d, "%s=%s", path, ename(errno));
		return;
	}
	n = read(fd, buf, sizeof buf);
	close(fd);
	if (n > 0) {
		add(d, "%s=READ-%zd-BYTES", path, n);
		d->escaped = true;
	} else {
		add(d, "%s=empty", path);
	}
}

/* One attempt per path, one line for the case. */
static int each_path(const char *name, void (*fn)(struct detail *, const char *),
		     const char *const *paths)
{
	struct detail d = {0};

	for (; *paths; paths++)
		fn(&d, *paths);
	return report(name, &d);
}

static int case_proc_kcore(int argc, char **argv)
{
	(void)argc, (void)argv;
	return each_path("proc-kcore", read_masked,
			 (const char *const[]){"/proc/kcore", "/dev/core", "/proc/keys",
					       "/proc/timer_list", NULL});
}

/* Opening for writing is the escape; a sysrq command is never sent. */
static int case_sysrq(int argc, char **argv)
{
	struct detail d = {0};
	int fd = open("/proc/sysrq-trigger", O_WRONLY | O_CLOEXEC);

	(void)argc, (void)argv;
	attempt(&d, "open(/proc/sysrq-trigger,w)", fd, errno);
	if (fd >= 0)
		close(fd);
	return report("sysrq", &d);
}

/* Writes FILE's own content back into it (no effect if it works). */
static void write_back(struct detail *d, const char *path)
{
	char buf[4096];
	ssize_t n = -1;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		add(d, "%s=absent(%s)", path, ename(errno));
		return;
	}
	n = read(fd, buf, sizeof buf);
	close(fd);
	if (n < 0)
		n = 0;
	/* Multiple-choice sysfs files show "a [b] c": write the choice. */
	char *open_b = memchr(buf, '[', (size_t)n), *close_b;
	const char *val = buf;
	size_t len = (size_t)n;
	if (open_b && (close_b = memchr(open_b, ']', (size_t)(buf + n - open_b)))) {
		val = open_b + 1;
		len = (size_t)(close_b - open_b - 1);
	}
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		add(d, "%s=%s", path, ename(errno));
		return;
	}
	ssize_t w = write(fd, val, len);
	int err = errno;
	close(fd);
	add(d, "%s=OPENED-FOR-WRITING(write:%s)", path, w < 0 ? ename(err) : "OK");
	d->escaped = true;
}

static int case_proc_sys(int argc, char **argv)
{
	(void)argc, (void)argv;
	return each_path("proc-sys", write_back,
			 (const char *const[]){
			     "/proc/sys/kernel/core_pattern", "/proc/sys/kernel/modprobe",
			     "/proc/sys/kernel/sysrq", "/proc/sys/vm/overcommit_memory", NULL});
}

static int case_sys_write(int argc, char **argv)
{
	(void)argc, (void)argv;
	return each_path("sys-write", write_back,
			 (const char *const[]){"/sys/kernel/uevent_helper",
					       "/sys/kernel/mm/transparent_hugepage/enabled",
					       "/sys/kernel/profiling",
					       "/sys/module/kernel/parameters/panic", NULL});
}

/* The box's cgroup files (bound read-only from the host's hierarchy):
 * lifting its own limits, opening its device list, moving out. */
static void cg_write(struct detail *d, const char *path, const char *val)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);

	if (fd < 0) {
		add(d, "%s=%s", path, ename(errno));
		return;
	}
	ssize_t w = write(fd, val, strlen(val));
	int err = errno;
	close(fd);
	add(d, "%s=%s", path, w < 0 ? ename(err) : "WORKED");
	if (w >= 0)
		d->escaped = true;
}

static int case_cgroup_write(int argc, char **argv)
{
	struct detail d = {0};
	char pid[32];

	(void)argc, (void)argv;
	snprintf(pid, sizeof pid, "%d", getpid());
	if (access("/sys/fs/cgroup/memory", F_OK) == 0) {
		cg_write(&d, "/sys/fs/cgroup/memory/memory.limit_in_bytes", "-1");
		cg_write(&d, "/sys/fs/cgroup/pids/pids.max", "max");
		cg_write(&d, "/sys/fs/cgroup/devices/devices.allow", "a");
		cg_write(&d, "/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "-1");
		cg_write(&d, "/sys/fs/cgroup/memory/notify_on_release", "1");
		cg_write(&d, "/sys/fs/cgroup/memory/release_agent", "/tmp/esc-agent");
		cg_write(&d, "/sys/fs/cgroup/memory/cgroup.procs", pid);
	} else {
		cg_write(&d, "/sys/fs/cgroup/memory.max", "max");
		cg_write(&d, "/sys/fs/cgroup/pids.max", "max");
		cg_write(&d, "/sys/fs/cgroup/cpu.max", "max");
		cg_write(&d, "/sys/fs/cgroup/cgroup.procs", pid);
		cg_write(&d, "/sys/fs/cgroup/cgroup.subtree_control", "+memory");
	}
	return report("cgroup-write", &d);
}

/* ---- other processes and other boxes ---------------------------------- */

static bool same_root(const char *proc_root)
{
	struct stat a, b;

	if (stat("/", &a) < 0 || stat(proc_root, &b) < 0)
		return true;
	return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

static long do_ptrace(const void *arg)
{
	pid_t pid = (pid_t)(intptr_t)arg;

	if (ptrace(PTRACE_ATTACH, pid, NULL, NULL) < 0)
		return -1;
	waitpid(pid, NULL, __WALL);
	ptrace(PTRACE_DETACH, pid, NULL, NULL);
	return 0;
}

static bool holds(const char *path, const char *token);

/* The box's own init, which is not dumpable (it holds the exec server):
 * its /proc/PID/root and exe are closed to the box (EACCES), its comm is
 * still readable. */
static bool is_box_init(pid_t pid)
{
	char path[64];

	snprintf(path, sizeof path, "/proc/%d/root", (int)pid);
	if (access(path, F_OK) == 0 || errno != EACCES)
		return false;
	snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
	return pid == 1 && holds(path, "paddock-init");
}

/* ARGV: host PIDs (the daemon, the other box's PID 1, the test). Not
 * visible in the box's PID namespace: signals and ptrace get ESRCH. Also:
 * every process the box sees has the box's root, and its PID 1 is the
 * box's init. */
static int case_ptrace_host(int argc, char **argv)
{
	struct detail d = {0};
	char path[300], exe[256] = "";
	DIR *proc;
	struct dirent *e;
	int seen = 0;

	for (int i = 1; i < argc; i++) {
		pid_t pid = (pid_t)atoi(argv[i]);
		int err;
		long r;

		snprintf(path, sizeof path, "/proc/%d/root", pid);
		if (access(path, F_OK) == 0 && same_root(path)) {
			/* A box process that happens to have this number. */
			add(&d, "pid%d=box's-own", pid);
			continue;
		}
		if (is_box_init(pid)) {
			add(&d, "pid%d=box's-init-hidden", pid);
			continue;
		}
		r = kill(pid, 0);
		attempt(&d, "kill", r, errno);
		r = in_child(do_ptrace, (const void *)(intptr_t)pid, &err);
		attempt(&d, "ptrace", r, err);
	}
	proc = opendir("/proc");
	while (proc && (e = readdir(proc))) {
		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof path, "/proc/%s/root", e->d_name);
		seen++;
		if (!same_root(path)) {
			add(&d, "pid%s-has-another-root", e->d_name);
			d.escaped = true;
		}
	}
	if (proc)
		closedir(proc);
	ssize_t n = readlink("/proc/1/exe", exe, sizeof exe - 1);
	exe[n > 0 ? n : 0] = '\0';
	if (n < 0 && is_box_init(1))
		snprintf(exe, sizeof exe, "paddock-init(hidden)");
	add(&d, "processes-seen=%d pid1=%s", seen, exe);
	if (strcmp(exe, "/dev/paddock-init") != 0 && strcmp(exe, "paddock-init(hidden)") != 0)
		d.escaped = true;
	return report("ptrace-host", &d);
}

/* Reads PATH; true when it holds TOKEN. */
static bool holds(const char *path, const char *token)
{
	char buf[512];
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	ssize_t n;

	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	return strstr(buf, token) != NULL;
}

/* ARGV: PATH (the other box's secret, absolute in that box), TOKEN (its
 * content), NAME (its base name). Through every /proc/PID/root and
 * /proc/PID/cwd the box sees. */
static int case_proc_root(int argc, char **argv)
{
	struct detail d = {0};
	DIR *proc;
	struct dirent *e;
	int tried = 0;

	if (argc < 4)
		return 2;
	proc = opendir("/proc");
	while (proc && (e = readdir(proc))) {
		char path[4200];
		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof path, "/proc/%s/root%s", e->d_name, argv[1]);
		tried++;
		if (holds(path, argv[2])) {
			add(&d, "read-via-/proc/%s/root", e->d_name);
			d.escaped = true;
		}
		snprintf(path, sizeof path, "/proc/%s/cwd/%s", e->d_name, argv[3]);
		if (holds(path, argv[2])) {
			add(&d, "read-via-/proc/%s/cwd", e->d_name);
			d.escaped = true;
		}
	}
	if (proc)
		closedir(proc);
	add(&d, "processes-tried=%d", tried);
	if (!d.escaped)
		add(&d, "secret-not-found");
	return report("proc-root", &d);
}

/* The host paths the box learns from its mountinfo (the overlay's
 * upperdir, the image's lowerdir), with the other box's number guessed:
 * DATA/boxes/N/upper/PATH and RUN/roots/N/PATH for N in 1..64. */
static int case_host_paths(int argc, char **argv)
{
	struct detail d = {0};
	char line[8192], upper[4096] = "";
	FILE *f;
	int tried = 0;

	if (argc < 3)
		return 2;
	f = fopen("/proc/self/mountinfo", "re");
	while (f && fgets(line, sizeof line, f)) {
		char *u = strstr(line, "upperdir=");
		if (u && strstr(line, " / / ")) {
			u += strlen("upperdir=");
			size_t n = strcspn(u, ", \n");
			if (n < sizeof upper) {
				memcpy(upper, u, n);
				upper[n] = '\0';
			}
		}
	}
	if (f)
		fclose(f);
	if (!upper[0]) {
		add(&d, "mountinfo-shows-no-upperdir");
	} else {
		/* .../data/boxes/ID/upper */
		char *boxes = strstr(upper, "/boxes/");
		add(&d, "mountinfo-leaks=%s", upper);
		if (boxes) {
			*boxes = '\0';
			for (int n = 1; n <= 64; n++) {
				char path[8400];
				snprintf(path, sizeof path, "%s/boxes/%d/upper%s", upper, n,
					 argv[1]);
				tried++;
				if (holds(path, argv[2])) {
					add(&d, "read:%s", path);
					d.escaped = true;
				}
				snprintf(path, sizeof path, "%s/../run/roots/%d%s", upper, n,
					 argv[1]);
				tried++;
				if (holds(path, argv[2])) {
					add(&d, "read:%s", path);
					d.escaped = true;
				}
			}
		}
	}
	add(&d, "paths-tried=%d", tried);
	if (!d.escaped)
		add(&d, "secret-not-found");
	return report("host-paths", &d);
}

static long do_chroot_break(const void *arg)
{
	const char *marker = arg;
	int fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	mkdir("/tmp/esc-jail", 0700);
	if (fd < 0 || chroot("/tmp/esc-jail") < 0)
		return -1;
	/* Out of the jail through the kept descriptor, then up and up. */
	if (fchdir(fd) < 0)
		return -1;
	for (int i = 0; i < 64; i++)
		if (chdir("..") < 0)
			return -1;
	if (chroot(".") < 0)
		return -1;
	if (access(marker, F_OK) == 0)
		return 0;
	errno = ENOENT;
	return -1;
}

/* ARGV: a file that exists on the host only. */
static int case_chroot(int argc, char **argv)
{
	struct detail d = {0};
	long r;
	int err;

	if (argc < 2)
		return 2;
	r = in_child(do_chroot_break, argv[1], &err);
	attempt(&d, "chroot-breakout-reaches-host-file", r, err);
	rmdir("/tmp/esc-jail");
	return report("chroot", &d);
}

/* IPC objects of another box: held by `ipc-hold` there. ARGV: KEY NAME TOKEN. */
static int case_ipc(int argc, char **argv)
{
	struct detail d = {0};
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	char path[300];
	long r;
	int s;

	if (argc < 4)
		return 2;
	r = shmget((key_t)strtol(argv[1], NULL, 0), 0, 0);
	attempt(&d, "shmget", r, errno);
	snprintf(path, sizeof path, "/dev/shm/%s", argv[2]);
	r = holds(path, argv[3]) ? 0 : -1;
	attempt(&d, "/dev/shm", r, ENOENT);
	s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	snprintf(sa.sun_path + 1, sizeof sa.sun_path - 1, "%s", argv[2]);
	r = connect(s, (struct sockaddr *)&sa,
		    (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(argv[2])));
	attempt(&d, "abstract-socket", r, errno);
	close(s);
	return report("ipc", &d);
}

/* In the victim box: holds a SysV segment, a /dev/shm file and an abstract
 * socket with TOKEN, from a background process whose working directory is
 * DIR, for SECONDS. ARGV: KEY NAME TOKEN DIR SECONDS. */
static int case_ipc_hold(int argc, char **argv)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	char path[300];
	int id, s, fd;
	void *p;

	if (argc < 6)
		return 2;
	if (fork() != 0)
		return 0;
	setsid();
	if (chdir(argv[4]) < 0)
		_exit(1);
	id = shmget((key_t)strtol(argv[1], NULL, 0), 4096, IPC_CREAT | 0600);
	p = id >= 0 ? shmat(id, NULL, 0) : (void *)-1;
	if (p != (void *)-1)
		snprintf(p, 4096, "%s", argv[3]);
	snprintf(path, sizeof path, "/dev/shm/%s", argv[2]);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd >= 0 && write(fd, argv[3], strlen(argv[3])) < 0)
		_exit(1);
	s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	snprintf(sa.sun_path + 1, sizeof sa.sun_path - 1, "%s", argv[2]);
	if (bind(s, (struct sockaddr *)&sa,
		 (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(argv[2]))) == 0)
		listen(s, 4);
	int fdnull = open("/dev/null", O_RDWR);
	dup2(fdnull, 0), dup2(fdnull, 1), dup2(fdnull, 2);
	sleep((unsigned)atoi(argv[5]));
	_exit(0);
}

/* ---- the runtime's binaries (CVE-2019-5736) --------------------------- */

/* Appends the marker through FD reopened for writing (ELF files still run
 * with bytes after their end); true when that worked. */
static bool append_marker(int fd, const char *how, struct detail *d)
{
	char path[64];
	int w;

	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	w = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (w < 0) {
		add(d, "%s=%s", how, ename(errno));
		return false;
	}
	if (write(w, MARKER, strlen(MARKER)) < 0)
		add(d, "%s=OPENED(write:%s)", how, ename(errno));
	else
		add(d, "%s=WRITTEN", how);
	close(w);
	d->escaped = true;
	return true;
}

/* The box's init, its binary bound at /dev/paddock-init. */
static int case_exe_init(int argc, char **argv)
{
	struct detail d = {0};
	int fd;

	(void)argc, (void)argv;
	fd = open("/proc/1/exe", O_WRONLY | O_APPEND | O_CLOEXEC);
	attempt(&d, "open(/proc/1/exe,w)", fd, errno);
	if (fd >= 0)
		close(fd);
	fd = open("/dev/paddock-init", O_WRONLY | O_APPEND | O_CLOEXEC);
	attempt(&d, "open(/dev/paddock-init,w)", fd, errno);
	if (fd >= 0)
		close(fd);
	fd = open("/proc/1/exe", O_PATH | O_CLOEXEC);
	if (fd < 0) {
		add(&d, "open(/proc/1/exe,O_PATH)=%s", ename(errno));
	} else {
		append_marker(fd, "reopen(/proc/1/exe)", &d);
		close(fd);
	}
	return report("exe-init", &d);
}

struct held {
	pid_t pid;
	int fd;
	char exe[128];
	int last;
};

static bool is_box_binary(const char *exe)
{
	static const char *const ours[] = {"/bin/", "/sbin/", "/usr/", "/escape/",
					   "/dev/paddock-init"};
	for (size_t i = 0; i < sizeof ours / sizeof ours[0]; i++)
		if (strncmp(exe, ours[i], strlen(ours[i])) == 0)
			return true;
	return false;
}

/* Watches the box's processes for SECONDS: every process whose binary is
 * not one of the box's (the runtime entering the box for an exec) has its
 * /proc/PID/exe opened at once (O_PATH) and, while it runs and after it has
 * ended, reopened for writing through that descriptor, the CVE-2019-5736
 * pattern. Prints what it saw. Run in the background; the test starts exec
 * jobs meanwhile. */
static int case_exe_watch(int argc, char **argv)
{
	struct detail d = {0};
	struct held held[64];
	int nheld = 0, seen_pids = 0, denied = 0;
	pid_t seen[4096];
	int nseen = 0;
	struct timespec t0, now;
	double limit = argc > 1 ? atof(argv[1]) : 10;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		if ((double)(now.tv_sec - t0.tv_sec) + (double)(now.tv_nsec - t0.tv_nsec) / 1e9 >
		    limit)
			break;
		DIR *proc = opendir("/proc");
		struct dirent *e;
		while (proc && (e = readdir(proc))) {
			pid_t pid = (pid_t)atoi(e->d_name);
			char path[64], exe[128];
			bool known = false;
			if (pid <= 0 || pid == getpid())
				continue;
			for (int i = 0; i < nseen && !known; i++)
				known = seen[i] == pid;
			if (known)
				continue;
			snprintf(path, sizeof path, "/proc/%d/exe", pid);
			int fd = open(path, O_PATH | O_CLOEXEC);
			int err = errno;
			ssize_t n = readlink(path, exe, sizeof exe - 1);
			exe[n > 0 ? n : 0] = '\0';
			if (fd < 0 && err == ENOENT)
				continue; /* gone, or a kernel thread: look again */
			if (nseen < (int)(sizeof seen / sizeof seen[0]))
				seen[nseen++] = pid;
			seen_pids++;
			if (fd < 0) {
				/* The runtime makes itself undumpable while it is in
				 * the box: its exe cannot be opened. */
				denied++;
				if (denied <= 3)
					add(&d, "pid%d:exe=%s", pid, ename(err));
				continue;
			}
			if (is_box_binary(exe) || nheld >= 64) {
				close(fd);
				continue;
			}
			held[nheld].pid = pid;
			held[nheld].fd = fd;
			held[nheld].last = -1;
			snprintf(held[nheld].exe, sizeof held[nheld].exe, "%s", exe[0] ? exe : "?");
			nheld++;
		}
		if (proc)
			closedir(proc);
		for (int i = 0; i < nheld; i++) {
			char path[64];
			int w;
			if (held[i].fd < 0)
				continue;
			snprintf(path, sizeof path, "/proc/self/fd/%d", held[i].fd);
			w = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
			if (w >= 0) {
				ssize_t r = write(w, MARKER, strlen(MARKER));
				add(&d, "pid%d:%s=WRITTEN(%zd)", held[i].pid, held[i].exe, r);
				d.escaped = true;
				close(w);
				close(held[i].fd);
				held[i].fd = -1;
				continue;
			}
			held[i].last = errno;
			/* ETXTBSY while it runs: try again after it ended. */
			if (errno != ETXTBSY) {
				add(&d, "pid%d:%s=%s", held[i].pid, held[i].exe, ename(errno));
				close(held[i].fd);
				held[i].fd = -1;
			}
		}
	}
	for (int i = 0; i < nheld; i++)
		if (held[i].fd >= 0)
			add(&d, "pid%d:%s=%s(at-the-end)", held[i].pid, held[i].exe,
			    ename(held[i].last));
	add(&d, "processes-seen=%d runtime-exe-held=%d exe-denied=%d", seen_pids, nheld, denied);
	return report("exe-runtime", &d);
}

/* ---- resources --------------------------------------------------------- */

/* Writes DIR/esc-fill in 1 MiB blocks until a write fails or MAX MiB are
 * written; removes it. HOST: the test judges bytes against the size. */
static int case_fill(int argc, char **argv)
{
	static char block[1 << 20];
	char path[4200];
	long mib = 0, max;
	int fd, err = 0;

	if (argc < 3)
		return 2;
	max = atol(argv[2]);
	memset(block, 'x', sizeof block);
	snprintf(path, sizeof path, "%s/esc-fill", argv[1]);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		printf("fill:%s\tHOST\topen=%s\n", argv[1], ename(errno));
		return 0;
	}
	while (mib < max) {
		size_t done = 0;
		while (done < sizeof block) {
			ssize_t n = write(fd, block + done, sizeof block - done);
			if (n < 0) {
				err = errno;
				break;
			}
			done += (size_t)n;
		}
		if (err)
			break;
		mib++;
	}
	close(fd);
	unlink(path);
	printf("fill:%s\tHOST\tmib=%ld error=%s\n", argv[1], mib, ename(err));
	return 0;
}

/* Every process forks for ever: the box's pids limit must hold it. Never
 * returns (the box is stopped). */
static int case_fork_bomb(int argc, char **argv)
{
	(void)argc, (void)argv;
	printf("fork-bomb\tHOST\tstarted pid=%d\n", getpid());
	fflush(stdout);
	for (;;)
		if (fork() < 0)
			usleep(1000);
	return 0;
}

/* Allocates and touches memory until the kernel kills it; prints how far it
 * got every 16 MiB. */
static int case_mem_bomb(int argc, char **argv)
{
	long mib = 0;

	(void)argc, (void)argv;
	for (;;) {
		char *p = malloc(1 << 20);
		if (!p) {
			printf("mem-bomb\tHOST\tmalloc-failed-at=%ldMiB\n", mib);
			return 0;
		}
		memset(p, 1, 1 << 20);
		if (++mib % 16 == 0) {
			printf("mem-bomb\tHOST\tat=%ldMiB\n", mib);
			fflush(stdout);
		}
	}
}

/* Swaps DIR with each LINK in turn (renameat2 RENAME_EXCHANGE) for SECONDS
 * or until STOP exists: DIR is a directory, then a symbolic link, then a
 * directory again, while the host reads and writes through it. ARGV:
 * SECONDS STOP DIR LINK... */
static int case_flip(int argc, char **argv)
{
	struct timespec t0, now;
	long swaps = 0;

	if (argc < 5)
		return 2;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		for (int i = 4; i < argc; i++) {
			if (syscall(SYS_renameat2, AT_FDCWD, argv[3], AT_FDCWD, argv[i],
				    RENAME_EXCHANGE) < 0) {
				printf("flip\tHOST\terror=%s\n", ename(errno));
				return 0;
			}
			/* Back, so that DIR is a directory half of the time. */
			syscall(SYS_renameat2, AT_FDCWD, argv[3], AT_FDCWD, argv[i],
				RENAME_EXCHANGE);
			swaps += 2;
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec - t0.tv_sec >= atol(argv[1]) || access(argv[2], F_OK) == 0)
			break;
	}
	printf("flip\tHOST\tswaps=%ld\n", swaps);
	return 0;
}

/* ---- the table --------------------------------------------------------- */

static const struct {
	const char *name;
	int (*fn)(int, char **);
} cases[] = {
    {"userns-map", case_userns_map},
    {"unshare-user", case_unshare_user},
    {"bpf", case_bpf},
    {"perf", case_perf},
    {"keyring", case_keyring},
    {"key-find", case_key_find},
    {"open-by-handle", case_open_by_handle},
    {"modules", case_modules},
    {"kexec", case_kexec},
    {"kernel-log", case_kernel_log},
    {"raw-io", case_raw_io},
    {"mount", case_mount},
    {"mknod", case_mknod},
    {"proc-kcore", case_proc_kcore},
    {"sysrq", case_sysrq},
    {"proc-sys", case_proc_sys},
    {"sys-write", case_sys_write},
    {"cgroup-write", case_cgroup_write},
    {"ptrace-host", case_ptrace_host},
    {"proc-root", case_proc_root},
    {"host-paths", case_host_paths},
    {"chroot", case_chroot},
    {"ipc", case_ipc},
    {"ipc-hold", case_ipc_hold},
    {"exe-init", case_exe_init},
    {"exe-watch", case_exe_watch},
    {"fill", case_fill},
    {"fork-bomb", case_fork_bomb},
    {"mem-bomb", case_mem_bomb},
    {"flip", case_flip},
};

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: escape-probe CASE [ARGS...]\n");
		return 2;
	}
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		if (strcmp(argv[1], cases[i].name) == 0)
			return cases[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "escape-probe: unknown case %s\n", argv[1]);
	return 2;
}
