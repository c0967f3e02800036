/* runtime-crun.c - boxes as crun containers.
 *
 * crun is driven through its CLI (≈10 ms a call) with its state under our
 * own --root, so we never touch other users of crun on the host. On hybrid
 * cgroup hosts whose v2 tree holds controllers, each crun call runs in a
 * private mount namespace where /sys/fs/cgroup/unified is unmounted (see
 * cgroup.h); that costs one unshare() in the forked child, well under a
 * millisecond, and changes nothing outside that child.
 */
#include <ctype.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <poll.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <sodium.h>
#include <spawn.h>

#include "common/exec-proto.h"
#include "common/lock.h"
#include "common/log.h"
#include "runtime/idmap.h"
#include "runtime/lxcfs.h"
#include "runtime/runtime.h"
#include "common/util.h"

#define CGROUP_ROOT "/sys/fs/cgroup"
#define CPU_PERIOD_USEC 100000
#define CRUN_OUTPUT_MAX (256 * 1024)
#define INIT_IN_BOX "/dev/paddock-init"

static const struct runtime_ops crun_ops;

/* The boxes' seccomp filter, in OCI form (linux.seccomp): Docker's default
 * profile decided for the capabilities below (seccomp/NOTICE says where it
 * comes from and how scripts/seccomp-convert made it). Built into the binary
 * so that no installed file can go missing or be swapped; NUL-terminated. */
extern const char pd_seccomp_profile[];
__asm__(".pushsection .rodata\n"
	".globl pd_seccomp_profile\n"
	".type pd_seccomp_profile, @object\n"
	"pd_seccomp_profile:\n"
	".incbin \"" SECCOMP_PROFILE "\"\n"
	".byte 0\n"
	".size pd_seccomp_profile, . - pd_seccomp_profile\n"
	".popsection\n");
/* The Docker tier's (runtime.h box_spec.docker): the same profile decided
 * for every capability, keyrings answering ENOSYS (runc carries on without
 * a session keyring only then). */
extern const char pd_seccomp_docker_profile[];
__asm__(".pushsection .rodata\n"
	".globl pd_seccomp_docker_profile\n"
	".type pd_seccomp_docker_profile, @object\n"
	"pd_seccomp_docker_profile:\n"
	".incbin \"" SECCOMP_DOCKER_PROFILE "\"\n"
	".byte 0\n"
	".size pd_seccomp_docker_profile, . - pd_seccomp_docker_profile\n"
	".popsection\n");

struct crun_rt {
	struct runtime base; /* first: the handle (runtime.h) */
	char *crun;
	char *root;	/* crun --root */
	char *exec_dir; /* the boxes' exec server sockets (0700) */
	char *cgroup_parent;
	char *init_path;
	char *exec_path; /* paddock-exec, beside the box init */
	enum cgroup_mode mode;
	bool private_ns;
	/* The cgroup v2 tree of a v1 or hybrid host (cgroup_v2_open), where
	 * a Docker box gets a v2 cgroup of its own; -1: none. */
	int v2_fd;
	bool swap_accounting;
	json_t *seccomp;   /* linux.seccomp, or NULL: seccomp = off */
	char *seccomp_bpf; /* the same compiled, base64 (run.oci.seccomp_bpf_data) */
	json_t *seccomp_docker; /* the Docker tier's, likewise */
	char *seccomp_docker_bpf;
};

static struct runtime *crun_free(struct crun_rt *rt)
{
	if (rt) {
		free(rt->crun);
		free(rt->root);
		free(rt->exec_dir);
		free(rt->cgroup_parent);
		free(rt->init_path);
		free(rt->exec_path);
		json_decref(rt->seccomp);
		free(rt->seccomp_bpf);
		json_decref(rt->seccomp_docker);
		free(rt->seccomp_docker_bpf);
		if (rt->v2_fd >= 0)
			close(rt->v2_fd);
		free(rt);
	}
	return NULL;
}

static int seccomp_action(const char *name, json_t *errno_ret, uint32_t *ret)
{
	if (!name)
		return -EINVAL;
	if (strcmp(name, "SCMP_ACT_ALLOW") == 0)
		*ret = SCMP_ACT_ALLOW;
	else if (strcmp(name, "SCMP_ACT_ERRNO") == 0)
		*ret = SCMP_ACT_ERRNO(errno_ret ? (uint16_t)json_integer_value(errno_ret) : EPERM);
	else if (strcmp(name, "SCMP_ACT_KILL") == 0 || strcmp(name, "SCMP_ACT_KILL_THREAD") == 0)
		*ret = SCMP_ACT_KILL_THREAD;
	else if (strcmp(name, "SCMP_ACT_KILL_PROCESS") == 0)
		*ret = SCMP_ACT_KILL_PROCESS;
	else
		return -EINVAL;
	return 0;
}

static int seccomp_op(const char *name, enum scmp_compare *ret)
{
	static const struct {
		const char *name;
		enum scmp_compare op;
	} ops[] = {{"SCMP_CMP_NE", SCMP_CMP_NE},
		   {"SCMP_CMP_LT", SCMP_CMP_LT},
		   {"SCMP_CMP_LE", SCMP_CMP_LE},
		   {"SCMP_CMP_EQ", SCMP_CMP_EQ},
		   {"SCMP_CMP_GE", SCMP_CMP_GE},
		   {"SCMP_CMP_GT", SCMP_CMP_GT},
		   {"SCMP_CMP_MASKED_EQ", SCMP_CMP_MASKED_EQ}};

	for (size_t i = 0; name && i < ELEMENTSOF(ops); i++)
		if (strcmp(name, ops[i].name) == 0) {
			*ret = ops[i].op;
			return 0;
		}
	return -EINVAL;
}

/* Adds one linux.seccomp rule: each of its syscalls known to libseccomp
 * (others are skipped, as crun skips them), its args ANDed. */
static int seccomp_add_rule(scmp_filter_ctx ctx, json_t *rule, pd_error *err)
{
	struct scmp_arg_cmp cmp[6];
	json_t *args = json_object_get(rule, "args"), *v;
	uint32_t action;
	size_t n = 0, i;
	int r;

	if (seccomp_action(json_string_value(json_object_get(rule, "action")),
			   json_object_get(rule, "errnoRet"), &action) < 0)
		return pd_error_set(err, -EINVAL, "seccomp profile: unknown action");
	if (json_array_size(args) > ELEMENTSOF(cmp))
		return pd_error_set(err, -EINVAL, "seccomp profile: too many args");
	json_array_foreach(args, i, v)
	{
		enum scmp_compare op;
		if (seccomp_op(json_string_value(json_object_get(v, "op")), &op) < 0)
			return pd_error_set(err, -EINVAL, "seccomp profile: unknown op");
		cmp[n++] = (struct scmp_arg_cmp){
		    .arg = (unsigned)json_integer_value(json_object_get(v, "index")),
		    .op = op,
		    .datum_a = (scmp_datum_t)json_integer_value(json_object_get(v, "value")),
		    .datum_b = (scmp_datum_t)json_integer_value(json_object_get(v, "valueTwo"))};
	}
	json_array_foreach(json_object_get(rule, "names"), i, v)
	{
		int nr = seccomp_syscall_resolve_name(json_string_value(v));
		if (nr == __NR_SCMP_ERROR)
			continue;
		r = seccomp_rule_add_array(ctx, action, nr, (unsigned)n, cmp);
		if (r < 0)
			return pd_error_set(err, r, "seccomp profile: cannot add %s: %s",
					    json_string_value(v), strerror(-r));
	}
	return 0;
}

/* Compiles the profile (linux.seccomp) once into the classic BPF program
 * crun would make of it at every start and exec (≈10 ms each), base64 for
 * crun's run.oci.seccomp_bpf_data annotation. */
static int seccomp_compile(json_t *profile, char **ret, pd_error *err)
{
	scmp_filter_ctx ctx = NULL;
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *bpf = NULL;
	json_t *v;
	uint32_t def;
	size_t i, b64len;
	struct stat st;
	int r;

	if (seccomp_action(json_string_value(json_object_get(profile, "defaultAction")),
			   json_object_get(profile, "defaultErrnoRet"), &def) < 0)
		return pd_error_set(err, -EINVAL, "seccomp profile: unknown default action");
	ctx = seccomp_init(def);
	if (!ctx)
		return pd_error_set(err, -ENOMEM, "cannot start a seccomp filter");
	r = 0;
	json_array_foreach(json_object_get(profile, "architectures"), i, v)
	{
		const char *name = json_string_value(v);
		char lower[32];
		size_t k;
		uint32_t arch;

		if (!name || strncmp(name, "SCMP_ARCH_", 10) != 0 ||
		    strlen(name + 10) >= sizeof lower)
			r = pd_error_set(err, -EINVAL, "seccomp profile: bad architecture");
		else {
			for (k = 0; name[10 + k]; k++)
				lower[k] = (char)tolower((unsigned char)name[10 + k]);
			lower[k] = '\0';
			arch = seccomp_arch_resolve_name(lower);
			if (!arch)
				r = pd_error_set(err, -EINVAL,
						 "seccomp profile: unknown architecture %s", name);
			else if ((r = seccomp_arch_add(ctx, arch)) == -EEXIST)
				r = 0;
			else if (r < 0)
				pd_error_set(err, r, "cannot add architecture %s: %s", name,
					     strerror(-r));
		}
		if (r < 0)
			goto out;
	}
	json_array_foreach(json_object_get(profile, "syscalls"), i, v)
	{
		r = seccomp_add_rule(ctx, v, err);
		if (r < 0)
			goto out;
	}
	fd = memfd_create("seccomp-bpf", MFD_CLOEXEC);
	if (fd < 0) {
		r = pd_error_set(err, -errno, "memfd_create: %s", strerror(errno));
		goto out;
	}
	r = seccomp_export_bpf(ctx, fd);
	if (r < 0 || fstat(fd, &st) < 0 || st.st_size <= 0) {
		r = pd_error_set(err, r < 0 ? r : -EIO, "cannot compile the seccomp filter");
		goto out;
	}
	bpf = malloc((size_t)st.st_size);
	if (!bpf || pread(fd, bpf, (size_t)st.st_size, 0) != st.st_size) {
		r = pd_error_set(err, -EIO, "cannot read the compiled seccomp filter");
		goto out;
	}
	b64len = sodium_base64_encoded_len((size_t)st.st_size, sodium_base64_VARIANT_ORIGINAL);
	*ret = malloc(b64len);
	if (!*ret) {
		r = pd_error_set(err, -ENOMEM, "out of memory");
		goto out;
	}
	sodium_bin2base64(*ret, b64len, (const unsigned char *)bpf, (size_t)st.st_size,
			  sodium_base64_VARIANT_ORIGINAL);
	r = 0;
out:
	seccomp_release(ctx);
	return r;
}

/* paddock-exec, in the box init's directory; NULL: out of memory. */
static char *exec_beside(const char *init_path)
{
	const char *slash = strrchr(init_path, '/');
	char *p = NULL;

	if (asprintf(&p, "%.*s/paddock-exec", slash ? (int)(slash - init_path) : 1,
		     slash ? init_path : ".") < 0)
		return NULL;
	return p;
}

int runtime_crun_new(const struct pd_config *cfg, const char *init_path, struct runtime **ret,
		     pd_error *err)
{
	struct crun_rt *rt;
	char path[4096];
	int r;

	if (access(cfg->crun, X_OK) < 0)
		return pd_error_set(err, -errno, "crun not found at %s: %s", cfg->crun,
				    strerror(errno));
	if (access(init_path, X_OK) < 0)
		return pd_error_set(err, -errno, "box init not found at %s: %s", init_path,
				    strerror(errno));
	rt = calloc(1, sizeof *rt);
	if (!rt)
		return pd_error_set(err, -ENOMEM, "out of memory");
	rt->v2_fd = -1;
	snprintf(path, sizeof path, "%s/crun", cfg->run);
	rt->crun = strdup(cfg->crun);
	rt->root = strdup(path);
	snprintf(path, sizeof path, "%s/exec", cfg->run);
	rt->exec_dir = strdup(path);
	rt->cgroup_parent = strdup(cfg->cgroup_parent);
	rt->init_path = strdup(init_path);
	rt->exec_path = exec_beside(init_path);
	if (!rt->crun || !rt->root || !rt->exec_dir || !rt->cgroup_parent || !rt->init_path ||
	    !rt->exec_path) {
		crun_free(rt);
		return pd_error_set(err, -ENOMEM, "out of memory");
	}
	if (cfg->seccomp) {
		json_error_t jerr;
		rt->seccomp = json_loads(pd_seccomp_profile, 0, &jerr);
		if (!json_is_object(rt->seccomp)) {
			crun_free(rt);
			return pd_error_set(err, -EINVAL, "built-in seccomp profile: %s",
					    jerr.text);
		}
		r = seccomp_compile(rt->seccomp, &rt->seccomp_bpf, err);
		if (r < 0) {
			crun_free(rt);
			return r;
		}
		rt->seccomp_docker = json_loads(pd_seccomp_docker_profile, 0, &jerr);
		if (!json_is_object(rt->seccomp_docker)) {
			crun_free(rt);
			return pd_error_set(err, -EINVAL, "built-in seccomp profile (Docker): %s",
					    jerr.text);
		}
		r = seccomp_compile(rt->seccomp_docker, &rt->seccomp_docker_bpf, err);
		if (r < 0) {
			crun_free(rt);
			return r;
		}
	}
	r = cgroup_detect(CGROUP_ROOT, &rt->mode, &rt->private_ns);
	if (r < 0) {
		crun_free(rt);
		return pd_error_set(err, r, "cannot detect cgroup layout: %s", strerror(-r));
	}
	if (rt->mode != CGROUP_UNIFIED) {
		r = cgroup_v2_open(CGROUP_ROOT, rt->mode);
		if (r >= 0)
			rt->v2_fd = r;
		else
			log_warn("no cgroup v2 tree to give Docker boxes a v2 cgroup of their own "
				 "(%s): box root of a Docker box can mount cgroup2 and read the "
				 "daemon's v2 cgroup (the number of processes in it, its CPU and "
				 "memory pressure)",
				 strerror(-r));
	}
	if (rt->mode == CGROUP_UNIFIED)
		rt->swap_accounting = access(CGROUP_ROOT "/memory.swap.max", F_OK) == 0 ||
				      access(CGROUP_ROOT "/init.scope/memory.swap.max", F_OK) == 0;
	else
		rt->swap_accounting =
		    access(CGROUP_ROOT "/memory/memory.memsw.limit_in_bytes", F_OK) == 0;
	r = mkdir_p(rt->root, 0700);
	if (r < 0) {
		pd_error_set(err, r, "cannot create %s: %s", rt->root, strerror(-r));
		crun_free(rt);
		return r;
	}
	/* Only root may reach the exec servers; never mounted into a box. */
	r = mkdir_p(rt->exec_dir, 0700);
	if (r >= 0 && chmod(rt->exec_dir, 0700) < 0)
		r = -errno;
	if (r < 0) {
		pd_error_set(err, r, "cannot create %s: %s", rt->exec_dir, strerror(-r));
		crun_free(rt);
		return r;
	}
	rt->base.ops = &crun_ops;
	*ret = &rt->base;
	return 0;
}

static enum cgroup_mode crun_cgroup_mode(const struct crun_rt *rt)
{
	return rt->mode;
}

static const char *crun_root(const struct crun_rt *rt)
{
	return rt->root;
}

static bool crun_private_ns(const struct crun_rt *rt)
{
	return rt->private_ns;
}

static bool crun_exec_socket(const struct crun_rt *rt, const char *id, char *buf, size_t bufsz)
{
	struct sockaddr_un sa;
	int n = snprintf(buf, bufsz, "%s/%s", rt->exec_dir, id);

	return n > 0 && (size_t)n < bufsz && (size_t)n < sizeof sa.sun_path;
}

/* Makes the box's exec server socket: listening, bound at its path (any old
 * one replaced), mode 0600. Returns the fd, or -errno (-ENAMETOOLONG: the
 * box gets no server). */
static int exec_socket_make(struct crun_rt *rt, const char *id)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd, r;

	if (!crun_exec_socket(rt, id, sa.sun_path, sizeof sa.sun_path))
		return -ENAMETOOLONG;
	(void)unlink(sa.sun_path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || chmod(sa.sun_path, 0600) < 0 ||
	    listen(fd, 128) < 0) {
		r = -errno;
		close(fd);
		(void)unlink(sa.sun_path);
		return r;
	}
	return fd;
}

static void exec_socket_remove(struct crun_rt *rt, const char *id)
{
	char path[4200];

	if (crun_exec_socket(rt, id, path, sizeof path))
		(void)unlink(path);
}

static void crun_cgroup_path(const struct crun_rt *rt, const char *id, char *buf, size_t bufsz)
{
	snprintf(buf, bufsz, "/%s/%s", rt->cgroup_parent, id);
}

/* The box's own v2 cgroup (crun_start, Docker boxes), once it is empty;
 * none is no error. */
static void v2_remove(struct crun_rt *rt, const char *id)
{
	char cgpath[512];
	int r;

	if (rt->v2_fd < 0)
		return;
	crun_cgroup_path(rt, id, cgpath, sizeof cgpath);
	r = cgroup_v2_remove(rt->v2_fd, cgpath);
	if (r < 0)
		log_warn("box %s: cannot remove its cgroup v2 %s: %s", id, cgpath, strerror(-r));
}

static char *memfd_slurp(int fd)
{
	struct stat st;
	size_t len;
	char *buf;

	if (fstat(fd, &st) < 0)
		return NULL;
	len = (size_t)st.st_size > CRUN_OUTPUT_MAX ? CRUN_OUTPUT_MAX : (size_t)st.st_size;
	buf = malloc(len + 1);
	if (!buf)
		return NULL;
	ssize_t n = pread(fd, buf, len, 0);
	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

/* Runs crun with args (NULL-terminated, after the global options). Returns
 * crun's exit status (>= 0) or -errno if it could not run. Captured stdout
 * and stderr are returned when asked for. Output goes to memfds rather than
 * pipes: `crun run -d` leaves its stdio to the container, so a pipe would
 * never see EOF. pass_fd, unless -1, is crun's fd 3 (for --preserve-fds).
 * cgroup_fd, unless -1, is a cgroup.procs that crun is moved into first
 * (what it starts is then born there). */
static int crun_fd(struct crun_rt *rt, const char *const *args, int pass_fd, int cgroup_fd,
		   char **ret_out, char **ret_err)
{
	const char *argv[32];
	size_t n = 0;
	char rootopt[4200];
	_cleanup_close_ int out = -1, errfd = -1, devnull = -1;
	pid_t pid;
	int status;

	lock_assert_no_slow("crun");
	snprintf(rootopt, sizeof rootopt, "--root=%s", rt->root);
	argv[n++] = rt->crun;
	argv[n++] = rootopt;
	for (size_t i = 0; args[i]; i++) {
		if (n >= ELEMENTSOF(argv) - 1)
			return -E2BIG;
		argv[n++] = args[i];
	}
	argv[n] = NULL;

	out = memfd_create("crun-out", MFD_CLOEXEC);
	errfd = memfd_create("crun-err", MFD_CLOEXEC);
	devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (out < 0 || errfd < 0 || devnull < 0)
		return -errno;

	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		/* Only async-signal-safe calls from here: the daemon is threaded. */
		if (cgroup_fd >= 0 && write(cgroup_fd, "0", 1) != 1)
			_exit(125);
		if (rt->private_ns) {
			if (unshare(CLONE_NEWNS) < 0 ||
			    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
			    umount2(CGROUP_ROOT "/unified", MNT_DETACH) < 0)
				_exit(125);
		}
		if (dup2(devnull, 0) < 0 || dup2(out, 1) < 0 || dup2(errfd, 2) < 0)
			_exit(125);
		/* dup2() onto itself keeps close-on-exec: clear it then. */
		if (pass_fd >= 0 && (pass_fd == EXEC_SERVER_FD ? fcntl(pass_fd, F_SETFD, 0)
							       : dup2(pass_fd, EXEC_SERVER_FD)) < 0)
			_exit(125);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	if (ret_out)
		*ret_out = memfd_slurp(out);
	if (ret_err)
		*ret_err = memfd_slurp(errfd);
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return 128 + WTERMSIG(status);
}

static int crun(struct crun_rt *rt, const char *const *args, char **ret_out, char **ret_err)
{
	return crun_fd(rt, args, -1, -1, ret_out, ret_err);
}

/* crun's error text, trimmed to its last line, for the user's `error` file. */
static const char *crun_reason(char *text)
{
	if (!text || !*text)
		return "crun failed without a message";
	size_t len = strlen(text);
	while (len && (text[len - 1] == '\n' || text[len - 1] == ' '))
		text[--len] = '\0';
	char *nl = strrchr(text, '\n');
	return nl ? nl + 1 : text;
}

/* crun with args; on failure, -errno with "cannot WHAT: crun's reason". */
static int crun_do(struct crun_rt *rt, const char *const *args, const char *what, pd_error *err)
{
	_cleanup_free_ char *errtext = NULL;
	int r = crun(rt, args, NULL, &errtext);

	if (r != 0)
		return pd_error_set(err, r < 0 ? r : -EIO, "cannot %s: %s", what,
				    r < 0 ? strerror(-r) : crun_reason(errtext));
	return 0;
}

static json_t *strv(const char *const *v)
{
	json_t *a = json_array();
	for (size_t i = 0; v[i]; i++)
		json_array_append_new(a, json_string(v[i]));
	return a;
}

static json_t *mount_entry(const char *dst, const char *type, const char *src,
			   const char *const *opts)
{
	return json_pack("{s:s, s:s, s:s, s:o}", "destination", dst, "type", type, "source", src,
			 "options", strv(opts));
}

static void limits_from_type(const struct crun_rt *rt, const struct box_type *t, int64_t *quota,
			     int64_t *mem, int64_t *swap)
{
	*quota = (int64_t)t->millicpus * CPU_PERIOD_USEC / 1000;
	*mem = (int64_t)t->memory;
	*swap = rt->swap_accounting ? (int64_t)t->memory : -1;
}

static json_t *resources_json(const struct crun_rt *rt, const struct box_type *t)
{
	int64_t quota, mem, swap;
	json_t *memory;

	limits_from_type(rt, t, &quota, &mem, &swap);
	memory = json_pack("{s:I}", "limit", (json_int_t)mem);
	if (swap > 0)
		json_object_set_new(memory, "swap", json_integer(swap));
	return json_pack("{s:o, s:{s:I, s:I}, s:{s:I}, s:[{s:b, s:s}]}", "memory", memory, "cpu",
			 "quota", (json_int_t)quota, "period", (json_int_t)CPU_PERIOD_USEC, "pids",
			 "limit", (json_int_t)t->pids, "devices", "allow", 0, "access", "rwm");
}

static json_t *config_json_base(const struct crun_rt *rt, const struct box_spec *spec);

/* [{containerID 0, hostID, size 65536}]: a box's ids onto its range. */
static json_t *id_mappings(uint32_t host)
{
	return json_pack("[{s:i, s:I, s:i}]", "containerID", 0, "hostID", (json_int_t)host, "size",
			 (int)IDMAP_IDS);
}

/* Joins the namespace the engine prepared, when there is one, and adds the
 * seccomp filter (a copy: jansson objects are not shared between threads). */
static json_t *config_json(const struct crun_rt *rt, const struct box_spec *spec)
{
	json_t *cfg = config_json_base(rt, spec);
	json_t *lx = cfg ? json_object_get(cfg, "linux") : NULL;
	json_t *ns = json_object_get(lx, "namespaces");
	size_t i;
	json_t *v;

	/* The Docker tier's filter is Docker's profile for every capability
	 * (nested namespaces, mounts, setns: what dockerd and runc need). */
	json_t *profile = spec->docker ? rt->seccomp_docker : rt->seccomp;
	const char *bpf = spec->docker ? rt->seccomp_docker_bpf : rt->seccomp_bpf;
	if (cfg && profile &&
	    (json_object_set_new(lx, "seccomp", json_deep_copy(profile)) < 0 ||
	     json_object_set_new(cfg, "annotations",
				 json_pack("{s:s}", "run.oci.seccomp_bpf_data", bpf)) < 0)) {
		json_decref(cfg);
		return NULL;
	}
	if (cfg && spec->uid_base) {
		/* Box root is an unprivileged host id: setuid programs (sudo)
		 * may raise a process to it, so no_new_privs is not needed. */
		json_array_append_new(
		    ns, spec->userns ? json_pack("{s:s, s:s}", "type", "user", "path", spec->userns)
				     : json_pack("{s:s}", "type", "user"));
		json_object_set_new(lx, "uidMappings", id_mappings(spec->uid_base));
		json_object_set_new(lx, "gidMappings", id_mappings(spec->uid_base));
		json_object_set_new(json_object_get(cfg, "process"), "noNewPrivileges",
				    json_false());
	}
	if (cfg && spec->docker)
		json_array_append_new(ns, json_pack("{s:s}", "type", "cgroup"));
	if (!cfg || !spec->netns)
		return cfg;
	json_array_foreach(ns, i, v)
	{
		const char *type = json_string_value(json_object_get(v, "type"));
		if (type && strcmp(type, "network") == 0)
			json_object_set_new(v, "path", json_string(spec->netns));
	}
	return cfg;
}

static json_t *config_json_base(const struct crun_rt *rt, const struct box_spec *spec)
{
	static const char *const caps[] = {"CAP_CHOWN",
					   "CAP_DAC_OVERRIDE",
					   "CAP_FSETID",
					   "CAP_FOWNER",
					   "CAP_MKNOD",
					   "CAP_NET_RAW",
					   "CAP_SETGID",
					   "CAP_SETUID",
					   "CAP_SETFCAP",
					   "CAP_SETPCAP",
					   "CAP_NET_BIND_SERVICE",
					   "CAP_SYS_CHROOT",
					   "CAP_KILL",
					   "CAP_AUDIT_WRITE",
					   NULL};
	/* The Docker tier: every capability, of the box's user namespace
	 * only (box root is an unprivileged host id): dockerd and runc need
	 * CAP_SYS_ADMIN (mounts, namespaces), CAP_NET_ADMIN (bridges and
	 * iptables in the box's own network namespace) and more. */
	static const char *const all_caps[] = {"CAP_CHOWN",
					       "CAP_DAC_OVERRIDE",
					       "CAP_DAC_READ_SEARCH",
					       "CAP_FOWNER",
					       "CAP_FSETID",
					       "CAP_KILL",
					       "CAP_SETGID",
					       "CAP_SETUID",
					       "CAP_SETPCAP",
					       "CAP_LINUX_IMMUTABLE",
					       "CAP_NET_BIND_SERVICE",
					       "CAP_NET_BROADCAST",
					       "CAP_NET_ADMIN",
					       "CAP_NET_RAW",
					       "CAP_IPC_LOCK",
					       "CAP_IPC_OWNER",
					       "CAP_SYS_MODULE",
					       "CAP_SYS_RAWIO",
					       "CAP_SYS_CHROOT",
					       "CAP_SYS_PTRACE",
					       "CAP_SYS_PACCT",
					       "CAP_SYS_ADMIN",
					       "CAP_SYS_BOOT",
					       "CAP_SYS_NICE",
					       "CAP_SYS_RESOURCE",
					       "CAP_SYS_TIME",
					       "CAP_SYS_TTY_CONFIG",
					       "CAP_MKNOD",
					       "CAP_LEASE",
					       "CAP_AUDIT_WRITE",
					       "CAP_AUDIT_CONTROL",
					       "CAP_SETFCAP",
					       "CAP_MAC_OVERRIDE",
					       "CAP_MAC_ADMIN",
					       "CAP_SYSLOG",
					       "CAP_WAKE_ALARM",
					       "CAP_BLOCK_SUSPEND",
					       "CAP_AUDIT_READ",
					       "CAP_PERFMON",
					       "CAP_BPF",
					       "CAP_CHECKPOINT_RESTORE",
					       NULL};
	static const char *const env[] = {
	    "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "TERM=xterm",
	    "container=paddock", NULL};
	static const char *const masked[] = {"/proc/acpi",
					     "/proc/asound",
					     "/proc/kcore",
					     "/proc/keys",
					     "/proc/latency_stats",
					     "/proc/timer_list",
					     "/proc/timer_stats",
					     "/proc/sched_debug",
					     "/proc/scsi",
					     "/sys/firmware",
					     "/sys/devices/virtual/powercap",
					     NULL};
	static const char *const readonly[] = {
	    "/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger", NULL};
	/* Docker sets sysctls of the box's own namespaces (ip_forward); the
	 * host's own sysctls stay refused to box root, which is not root of
	 * the namespaces that own them. */
	static const char *const readonly_docker[] = {"/proc/bus", "/proc/fs", "/proc/irq",
						      "/proc/sysrq-trigger", NULL};
	const char *const *box_caps = spec->docker ? all_caps : caps;
	static const char *const args[] = {INIT_IN_BOX, NULL};
	char cgpath[512];
	json_t *mounts;

	crun_cgroup_path(rt, spec->id, cgpath, sizeof cgpath);
	mounts = json_array();
	json_array_append_new(
	    mounts, mount_entry("/proc", "proc", "proc",
				(const char *const[]){"nosuid", "noexec", "nodev", NULL}));
	json_array_append_new(mounts,
			      mount_entry("/dev", "tmpfs", "tmpfs",
					  (const char *const[]){"nosuid", "strictatime", "mode=755",
								"size=65536k", NULL}));
	json_array_append_new(
	    mounts, mount_entry("/dev/pts", "devpts", "devpts",
				(const char *const[]){"nosuid", "noexec", "newinstance",
						      "ptmxmode=0666", "mode=0620", NULL}));
	json_array_append_new(mounts,
			      mount_entry("/dev/shm", "tmpfs", "shm",
					  (const char *const[]){"nosuid", "noexec", "nodev",
								"mode=1777", "size=65536k", NULL}));
	json_array_append_new(
	    mounts, mount_entry("/dev/mqueue", "mqueue", "mqueue",
				(const char *const[]){"nosuid", "noexec", "nodev", NULL}));
	json_array_append_new(
	    mounts, mount_entry("/sys", "sysfs", "sysfs",
				(const char *const[]){"nosuid", "noexec", "nodev", "ro", NULL}));
	/* Read-only, except for the Docker tier: its cgroup (and only its own,
	 * a cgroup namespace's root) is delegated to box root, for Docker's
	 * containers to get limits within the box's. */
	json_array_append_new(
	    mounts, mount_entry("/sys/fs/cgroup", "cgroup", "cgroup",
				spec->docker ? (const char *const[]){"nosuid", "noexec", "nodev",
								     "relatime", "rw", NULL}
					     : (const char *const[]){"nosuid", "noexec", "nodev",
								     "relatime", "ro", NULL}));
	json_array_append_new(
	    mounts, mount_entry(INIT_IN_BOX, "bind", rt->init_path,
				(const char *const[]){"bind", "ro", "nosuid", "nodev", NULL}));
	if (spec->resolv_conf)
		json_array_append_new(mounts,
				      mount_entry("/etc/resolv.conf", "bind", spec->resolv_conf,
						  (const char *const[]){"bind", "ro", "nosuid",
									"nodev", "noexec", NULL}));
	for (size_t i = 0; spec->lxcfs_dir && i < LXCFS_N_VIEWS; i++) {
		char src[4200];
		if (!(spec->lxcfs_views & (1u << i)))
			continue;
		snprintf(src, sizeof src, "%s/%s", spec->lxcfs_dir, lxcfs_views[i].src);
		json_array_append_new(mounts,
				      mount_entry(lxcfs_views[i].dst, "bind", src,
						  (const char *const[]){"bind", "ro", "nosuid",
									"nodev", "noexec", NULL}));
	}
	/* Docker's store: a directory of the box's disk owned by its root
	 * already (no idmap). Not nosuid: images hold setuid programs, which
	 * raise a process to ids of the box's range only. */
	if (spec->docker && spec->docker_dir)
		json_array_append_new(mounts,
				      mount_entry("/var/lib/docker", "bind", spec->docker_dir,
						  (const char *const[]){"rbind", "rw", "nodev", NULL}));
	for (size_t i = 0; i < spec->n_mounts; i++) {
		/* A volume keeps ids 0..65535 on disk, whichever box has it:
		 * crun's "idmap" option maps them through the box's user
		 * namespace onto its range. */
		json_array_append_new(
		    mounts,
		    mount_entry(
			spec->mounts[i].destination, "bind", spec->mounts[i].source,
			spec->uid_base
			    ? (const char *const[]){"rbind", "rw", "nosuid", "nodev", "idmap", NULL}
			    : (const char *const[]){"rbind", "rw", "nosuid", "nodev", NULL}));
	}

	return json_pack(
	    "{s:s, s:{s:b, s:{s:i, s:i}, s:o, s:o, s:s, s:{s:o, s:o, s:o, s:o},"
	    " s:b}, s:{s:s, s:b}, s:s, s:o, s:{s:s, s:o, s:[{s:s}, {s:s}, {s:s}, {s:s}, {s:s}],"
	    " s:o, s:o}}",
	    "ociVersion", "1.0.2", "process", "terminal", 0, "user", "uid", 0, "gid", 0, "args",
	    strv(args), "env", strv(env), "cwd", "/", "capabilities", "bounding", strv(box_caps),
	    "effective", strv(box_caps), "permitted", strv(box_caps), "ambient", json_array(),
	    "noNewPrivileges", 1, "root", "path", spec->rootfs, "readonly", 0, "hostname",
	    spec->hostname, "mounts", mounts, "linux", "cgroupsPath", cgpath, "resources",
	    resources_json(rt, spec->type), "namespaces", "type", "pid", "type", "network", "type",
	    "ipc", "type", "uts", "type", "mount", "maskedPaths", strv(masked), "readonlyPaths",
	    strv(spec->docker ? readonly_docker : readonly));
}

static int read_pid_file(const char *path, pid_t *ret)
{
	_cleanup_free_ char *buf = NULL;
	int r = read_file_at(AT_FDCWD, path, 64, &buf, NULL);
	if (r < 0)
		return r;
	long v = strtol(buf, NULL, 10);
	if (v <= 0)
		return -EIO;
	*ret = (pid_t)v;
	return 0;
}

static bool container_known(const struct crun_rt *rt, const char *id)
{
	char path[4200];

	snprintf(path, sizeof path, "%s/%s", rt->root, id);
	return access(path, F_OK) == 0;
}

static int crun_start(struct crun_rt *rt, const struct box_spec *spec, pid_t *ret_pid,
		      pd_error *err)
{
	char cfgpath[4096], pidpath[4096], cgpath[512];
	_cleanup_free_ char *text = NULL;
	_cleanup_close_ int v2procs = -1;
	json_t *cfg;
	pid_t pid;
	int r;

	if (spec->docker && !spec->uid_base)
		return pd_error_set(err, -EPERM,
				    "the Docker tier needs a user namespace per box (userns = on)");
	crun_cgroup_path(rt, spec->id, cgpath, sizeof cgpath);
	if (spec->docker) {
		/* crun removes the box's cgroup when the box ends: given
		 * again before every start. */
		r = cgroup_delegate(CGROUP_ROOT, rt->mode, cgpath, (uid_t)spec->uid_base,
				    (gid_t)spec->uid_base);
		if (r < 0)
			return pd_error_set(err, r, "cannot delegate the box's cgroup %s: %s",
					    cgpath, strerror(-r));
		/* Its cgroup namespace's v2 root: its own (cgroup.h). */
		if (rt->v2_fd >= 0) {
			v2procs = cgroup_v2_make(rt->v2_fd, cgpath);
			if (v2procs < 0)
				return pd_error_set(err, v2procs,
						    "cannot make the box's cgroup v2 %s: %s",
						    cgpath, strerror(-v2procs));
		}
	}
	cfg = config_json(rt, spec);
	if (!cfg)
		return pd_error_set(err, -ENOMEM, "cannot build the container configuration");
	text = json_dumps(cfg, JSON_INDENT(1));
	json_decref(cfg);
	if (!text)
		return pd_error_set(err, -ENOMEM, "out of memory");
	snprintf(cfgpath, sizeof cfgpath, "%s/config.json", spec->bundle_dir);
	/* Rewritten at every start: no fsync needed. */
	r = write_file_replace(cfgpath, text, strlen(text));
	if (r < 0)
		return pd_error_set(err, r, "cannot write %s: %s", cfgpath, strerror(-r));

	/* A leftover container of the same name (a crash between start and
	 * record) would make `run` fail: clear it first. crun keeps a
	 * directory per container under its root, so this costs a stat when
	 * there is none. */
	if (container_known(rt, spec->id))
		(void)crun(rt, (const char *const[]){"delete", "--force", spec->id, NULL}, NULL,
			   NULL);

	snprintf(pidpath, sizeof pidpath, "%s/pid", spec->bundle_dir);
	unlink(pidpath);
	/* The exec server's socket goes to PID 1 as fd 3, and only there: our
	 * copy is closed once crun has started the box. Without one (a path
	 * too long) jobs use crun exec. */
	_cleanup_close_ int lfd = exec_socket_make(rt, spec->id);
	_cleanup_free_ char *errtext = NULL;
	if (lfd < 0 && lfd != -ENAMETOOLONG) {
		v2_remove(rt, spec->id);
		return pd_error_set(err, lfd, "cannot make the box's exec socket: %s",
				    strerror(-lfd));
	}
	r = crun_fd(rt,
		    lfd >= 0
			? (const char *const[]){"run", "--detach", "--preserve-fds=1", "--bundle",
						spec->bundle_dir, "--pid-file", pidpath, spec->id,
						NULL}
			: (const char *const[]){"run", "--detach", "--bundle", spec->bundle_dir,
						"--pid-file", pidpath, spec->id, NULL},
		    lfd, v2procs, NULL, &errtext);
	if (r != 0)
		r = pd_error_set(err, r < 0 ? r : -EIO, "cannot start container: %s",
				 r < 0 ? strerror(-r) : crun_reason(errtext));
	if (r < 0) {
		exec_socket_remove(rt, spec->id);
		(void)crun(rt, (const char *const[]){"delete", "--force", spec->id, NULL}, NULL,
			   NULL);
		v2_remove(rt, spec->id);
		return r;
	}
	r = read_pid_file(pidpath, &pid);
	if (r < 0) {
		exec_socket_remove(rt, spec->id);
		(void)crun(rt, (const char *const[]){"delete", "--force", spec->id, NULL}, NULL,
			   NULL);
		v2_remove(rt, spec->id);
		return pd_error_set(err, r, "container started but its PID is unknown");
	}
	*ret_pid = pid;
	return 0;
}

/* Whether crun's failure text says the container is not there: "container
 * `ID` does not exist", or (crun 1.8) "error opening file `ROOT/ID/status`:
 * No such file or directory". */
static bool crun_says_absent(const struct crun_rt *rt, const char *id, const char *text)
{
	char status[4200];

	if (!text)
		return false;
	if (strstr(text, "does not exist"))
		return true;
	snprintf(status, sizeof status, "%s/%s/status`", rt->root, id);
	return strstr(text, status) && strstr(text, "No such file or directory");
}

static int crun_status(struct crun_rt *rt, const char *id, enum runtime_status *ret_status,
		       pid_t *ret_pid, pd_error *err)
{
	_cleanup_free_ char *out = NULL, *errtext = NULL;
	json_t *j;
	const char *status = NULL;
	json_int_t pid = 0;
	int r;

	/* crun keeps a directory per container under its root: without it
	 * there is no container, and no need to ask. */
	if (!container_known(rt, id)) {
		*ret_status = RUNTIME_ABSENT;
		*ret_pid = 0;
		return 0;
	}
	r = crun(rt, (const char *const[]){"state", id, NULL}, &out, &errtext);
	if (r < 0)
		return pd_error_set(err, r, "cannot run crun: %s", strerror(-r));
	if (r != 0) {
		/* Gone meanwhile, or crun says so: absent. Anything else
		 * (crun cannot read its state, the cgroup, ...) is not an
		 * answer. */
		if (!container_known(rt, id) || crun_says_absent(rt, id, errtext)) {
			*ret_status = RUNTIME_ABSENT;
			*ret_pid = 0;
			return 0;
		}
		return pd_error_set(err, -EIO, "cannot query container %s: %s", id,
				    crun_reason(errtext));
	}
	j = json_loads(out ? out : "", 0, NULL);
	if (!j || json_unpack(j, "{s:s, s?I}", "status", &status, "pid", &pid) < 0) {
		json_decref(j);
		return pd_error_set(err, -EIO,
				    "cannot query container %s: crun's answer is "
				    "not its state",
				    id);
	}
	*ret_status = strcmp(status, "running") == 0  ? RUNTIME_RUNNING
		      : strcmp(status, "paused") == 0 ? RUNTIME_PAUSED
						      : RUNTIME_STOPPED;
	*ret_pid = (pid_t)pid;
	json_decref(j);
	return 0;
}

/* A pidfd for the container's PID 1 when it runs (1), 0 when it has none
 * left, without asking crun (`crun state` is a fork and ≈5-10 ms): crun
 * records the PID and its start time in ROOT/ID/status when it starts the
 * container, and reads them back the same way. -errno when that record
 * cannot be read or parsed (another crun version): the caller asks crun.
 * The pidfd is opened before the start time is checked, so it is the
 * process checked, not one that took its number since. A paused container
 * counts as running: runtime_stop() resumes it if SIGTERM does not end it. */
static int container_pid(const struct crun_rt *rt, const char *id, int *ret_pidfd)
{
	char path[4200];
	_cleanup_free_ char *text = NULL;
	_cleanup_close_ int pfd = -1;
	json_int_t pid = 0, start = 0;
	json_t *j;
	int r;

	snprintf(path, sizeof path, "%s/%s/status", rt->root, id);
	r = read_file_at(AT_FDCWD, path, 64 * 1024, &text, NULL);
	if (r < 0)
		return r;
	j = json_loads(text, 0, NULL);
	r = j && json_unpack(j, "{s:I, s:I}", "pid", &pid, "process-start-time", &start) == 0 &&
		    pid > 0 && start > 0
		? 0
		: -EIO;
	json_decref(j);
	if (r < 0)
		return r;
	pfd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
	if (pfd < 0)
		return errno == ESRCH ? 0 : -errno;
	if (proc_start_time((pid_t)pid) != (unsigned long long)start)
		return 0;
	*ret_pidfd = TAKE_FD(pfd);
	return 1;
}

static int crun_stop(struct crun_rt *rt, const char *id, unsigned grace_sec, pd_error *err)
{
	const char *const term[] = {"kill", id, "TERM", NULL};
	enum runtime_status st;
	_cleanup_close_ int pfd = -1;
	pid_t pid = 0;
	int r;

	if (!container_known(rt, id)) {
		exec_socket_remove(rt, id);
		v2_remove(rt, id);
		return 0;
	}
	r = container_pid(rt, id, &pfd);
	if (r > 0 && crun(rt, term, NULL, NULL) != 0) {
		/* crun cannot signal it (stopped meanwhile, or crun failing
		 * otherwise): ask crun, as when its record is unreadable. */
		close(TAKE_FD(pfd));
		r = -EAGAIN;
	}
	if (r < 0) {
		/* A failure to say is the answer: the stop fails, the
		 * container is left as it is. */
		r = crun_status(rt, id, &st, &pid, err);
		if (r < 0)
			return r;
		if (st == RUNTIME_ABSENT) {
			exec_socket_remove(rt, id);
			v2_remove(rt, id);
			return 0;
		}
		if (st == RUNTIME_PAUSED) {
			/* A frozen PID 1 cannot take its SIGTERM. */
			(void)crun(rt, (const char *const[]){"resume", id, NULL}, NULL, NULL);
			st = RUNTIME_RUNNING;
		}
		r = 0;
		if (st == RUNTIME_RUNNING && pid > 0) {
			pfd = (int)syscall(SYS_pidfd_open, pid, 0);
			r = pfd >= 0 ? 1 : 0;
			(void)crun(rt, term, NULL, NULL);
		}
	}
	if (r > 0 && pidfd_wait_exit(pfd, (int)grace_sec * 1000) < 0) {
		/* Paused (a frozen PID 1 takes no signal), or deaf to SIGTERM. */
		(void)crun(rt, (const char *const[]){"resume", id, NULL}, NULL, NULL);
		(void)crun(rt, (const char *const[]){"kill", "--all", id, "KILL", NULL}, NULL,
			   NULL);
		(void)pidfd_wait_exit(pfd, 10000);
	}
	r = crun_do(rt, (const char *const[]){"delete", "--force", id, NULL}, "delete container",
		    err);
	if (r >= 0) {
		exec_socket_remove(rt, id);
		v2_remove(rt, id);
	}
	return r;
}

/* Waits up to max_ms for crun to report the container paused: on a cgroup
 * v1 host the freezer passes through FREEZING, which crun reports as
 * running, and `crun pause` may return before it is FROZEN. True once
 * paused. */
static bool wait_paused(struct crun_rt *rt, const char *id, unsigned max_ms)
{
	for (unsigned waited = 0;; waited += 5) {
		enum runtime_status st;
		pid_t pid;
		pd_error e = {0};

		if (crun_status(rt, id, &st, &pid, &e) < 0 || st == RUNTIME_STOPPED)
			return false;
		if (st == RUNTIME_PAUSED)
			return true;
		if (waited >= max_ms)
			return false;
		(void)usleep(5000);
	}
}

/* Returns once the box is frozen, so a resume that follows finds it paused
 * (a resume that saw it still freezing would leave it frozen for good). */
static int crun_pause(struct crun_rt *rt, const char *id, pd_error *err)
{
	int r = crun_do(rt, (const char *const[]){"pause", id, NULL}, "pause the box", err);
	if (r < 0)
		return r;
	if (!wait_paused(rt, id, 5000))
		log_warn("box %s: not reported paused 5 s after crun pause", id);
	return 0;
}

static int crun_resume(struct crun_rt *rt, const char *id, pd_error *err)
{
	/* A box caught between FREEZING and FROZEN reads running: give it a
	 * moment to settle before deciding there is nothing to thaw. */
	if (!wait_paused(rt, id, 1000))
		return 0;
	return crun_do(rt, (const char *const[]){"resume", id, NULL}, "resume the box", err);
}

static int crun_update(struct crun_rt *rt, const char *id, const struct box_type *type,
		       pd_error *err)
{
	char quota[32], period[32], mem[32], swap[32], pids[32];
	int64_t q, m, s;

	limits_from_type(rt, type, &q, &m, &s);
	snprintf(quota, sizeof quota, "--cpu-quota=%" PRId64, q);
	snprintf(period, sizeof period, "--cpu-period=%d", CPU_PERIOD_USEC);
	snprintf(mem, sizeof mem, "--memory=%" PRId64, m);
	snprintf(swap, sizeof swap, "--memory-swap=%" PRId64, s);
	snprintf(pids, sizeof pids, "--pids-limit=%" PRIu64, type->pids);
	if (s > 0)
		return crun_do(
		    rt, (const char *const[]){"update", period, quota, mem, swap, pids, id, NULL},
		    "update limits", err);
	return crun_do(rt, (const char *const[]){"update", period, quota, mem, pids, id, NULL},
		       "update limits", err);
}

static int crun_usage(struct crun_rt *rt, const char *id, struct cgroup_usage *ret)
{
	char path[512];

	crun_cgroup_path(rt, id, path, sizeof path);
	return cgroup_read_usage(CGROUP_ROOT, rt->mode, path, ret);
}

static int crun_limits(struct crun_rt *rt, const char *id, struct cgroup_limits *ret)
{
	char path[512];

	crun_cgroup_path(rt, id, path, sizeof path);
	return cgroup_read_limits(CGROUP_ROOT, rt->mode, path, ret);
}

/* Writes the secrets, "NAME=VALUE\0" each, to fd and closes it. */
static int send_secrets(int fd, char *const *env)
{
	int r = 0;

	for (char *const *p = env; *p && r >= 0; p++) {
		size_t len = strlen(*p) + 1, off = 0;
		while (off < len) {
			ssize_t n = write(fd, *p + off, len - off);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				r = n < 0 ? -errno : -EIO;
				break;
			}
			off += (size_t)n;
		}
	}
	close(fd);
	return r;
}

/* Runs paddock-exec JOBDIR; it returns once the supervisor has detached.
 * posix_spawn(), not fork(): glibc's vfork-like clone copies none of the
 * daemon's page tables, which a fork of the threaded daemon does.
 * Secrets go through a pipe on the child's fd 3 (--secrets-fd=3), which
 * paddock-exec reads to its end before it detaches: never in argv,
 * spec.json or its own environment. Both ends are close-on-exec here, so
 * no other spawn of the daemon's holds the write end open. */
static int crun_exec(struct crun_rt *rt, const char *id, const char *dir, char *const *secret_env,
		     pd_error *err)
{
	char *argv[4] = {(char *)"paddock-exec"};
	bool secrets = secret_env && *secret_env;
	posix_spawn_file_actions_t fa;
	int status, r, p[2] = {-1, -1};
	size_t a = 1;
	pid_t pid;

	(void)id; /* in dir's spec.json */
	if (secrets)
		argv[a++] = (char *)"--secrets-fd=3";
	argv[a++] = (char *)dir;
	argv[a] = NULL;
	if (secrets) {
		if (pipe2(p, O_CLOEXEC) < 0)
			return pd_error_set(err, -errno, "cannot make a pipe: %s", strerror(errno));
		if (p[0] == 3) { /* dup2(3, 3) would leave it close-on-exec */
			int moved = fcntl(p[0], F_DUPFD_CLOEXEC, 4);
			r = moved < 0 ? -errno : 0;
			close(p[0]);
			p[0] = moved;
			if (r < 0) {
				close(p[1]);
				return pd_error_set(err, r, "cannot make a pipe: %s", strerror(-r));
			}
		}
	}
	posix_spawn_file_actions_init(&fa);
	if (secrets)
		posix_spawn_file_actions_adddup2(&fa, p[0], 3);
	r = posix_spawn(&pid, rt->exec_path, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (secrets)
		close(p[0]);
	if (r != 0) {
		if (secrets)
			close(p[1]);
		return pd_error_set(err, -r, "cannot start %s: %s", rt->exec_path, strerror(r));
	}
	/* A supervisor that died early leaves EPIPE here (SIGPIPE is
	 * ignored): its exit status says the rest. */
	if (secrets)
		(void)send_secrets(p[1], secret_env);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return pd_error_set(err, -errno, "waitpid: %s", strerror(errno));
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return pd_error_set(err, -EIO, "the job supervisor failed to start (%s)",
				    rt->exec_path);
	return 0;
}

/* --- the table (runtime.h) --------------------------------------------------- */

/* base is the first member: the handle is the backend's own. */
static struct crun_rt *of(struct runtime *rt)
{
	return (struct crun_rt *)rt;
}

static const struct crun_rt *of_const(const struct runtime *rt)
{
	return (const struct crun_rt *)rt;
}

static void op_free(struct runtime *rt)
{
	crun_free(of(rt));
}

static enum cgroup_mode op_cgroup_mode(const struct runtime *rt)
{
	return crun_cgroup_mode(of_const(rt));
}

static const char *op_root(const struct runtime *rt)
{
	return crun_root(of_const(rt));
}

static bool op_private_ns(const struct runtime *rt)
{
	return crun_private_ns(of_const(rt));
}

static int op_start(struct runtime *rt, const struct box_spec *spec, pid_t *ret_pid, pd_error *err)
{
	return crun_start(of(rt), spec, ret_pid, err);
}

static int op_status(struct runtime *rt, const char *id, enum runtime_status *ret_status,
		     pid_t *ret_pid, pd_error *err)
{
	return crun_status(of(rt), id, ret_status, ret_pid, err);
}

static int op_stop(struct runtime *rt, const char *id, unsigned grace_sec, pd_error *err)
{
	return crun_stop(of(rt), id, grace_sec, err);
}

static int op_pause(struct runtime *rt, const char *id, pd_error *err)
{
	return crun_pause(of(rt), id, err);
}

static int op_resume(struct runtime *rt, const char *id, pd_error *err)
{
	return crun_resume(of(rt), id, err);
}

static int op_update(struct runtime *rt, const char *id, const struct box_type *type, pd_error *err)
{
	return crun_update(of(rt), id, type, err);
}

static int op_usage(struct runtime *rt, const char *id, struct cgroup_usage *ret)
{
	return crun_usage(of(rt), id, ret);
}

static int op_limits(struct runtime *rt, const char *id, struct cgroup_limits *ret)
{
	return crun_limits(of(rt), id, ret);
}

static int op_exec(struct runtime *rt, const char *id, const char *job_dir, char *const *secret_env,
		   pd_error *err)
{
	return crun_exec(of(rt), id, job_dir, secret_env, err);
}

static bool op_exec_socket(const struct runtime *rt, const char *id, char *buf, size_t bufsz)
{
	return crun_exec_socket(of_const(rt), id, buf, bufsz);
}

static const struct runtime_ops crun_ops = {
    .name = "crun",
    .free = op_free,
    .cgroup_mode = op_cgroup_mode,
    .root = op_root,
    .private_ns = op_private_ns,
    .start = op_start,
    .status = op_status,
    .stop = op_stop,
    .pause = op_pause,
    .resume = op_resume,
    .update = op_update,
    .usage = op_usage,
    .limits = op_limits,
    .exec = op_exec,
    .exec_socket = op_exec_socket,
};
