/* runtime.h - the backend that runs boxes, behind a table of operations.
 * Two implementations: runtime-crun.c (crun driven through its CLI with a
 * generated OCI config.json, the daemon's) and runtime/fake.c (containers
 * in memory, runtime/fake.h: for unit tests of the engine without root or
 * crun). A cluster backend (docs/scaling.md) is a third table.
 *
 * The engine makes the crun one (engine_new()) or is handed one
 * (engine_new_on(), the tests). It speaks to it only through the functions
 * below, which call the table: box ids, limits and the box_spec in, errno
 * and a reason out. Node-local details (paths, cgroup layout, namespaces)
 * stay behind it, except what box_spec carries: the engine prepares the
 * box's root filesystem, network namespace, volumes and lxcfs views on the
 * node, and the backend runs a box on them.
 *
 * Thread-safety: every function may be called from any thread; calls for
 * different boxes run in parallel, the caller serialises calls for one box.
 */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "runtime/cgroup.h"
#include "common/config.h"
#include "common/error.h"

struct runtime;

/* A host directory bind-mounted into the box (rw, nosuid, nodev). */
struct box_mount {
	char source[4096];    /* absolute host path */
	char destination[96]; /* absolute path inside the box */
};

/* What a box runs as. All strings are borrowed for the call. */
struct box_spec {
	const char *id; /* container id: the box name */
	const char *hostname;
	const char *bundle_dir; /* where config.json is written */
	const char *rootfs;	/* the box's mounted root filesystem */
	const struct box_type *type;
	const struct box_mount *mounts; /* n_mounts extra bind mounts, in order */
	size_t n_mounts;
	const char *netns;	 /* a network namespace bound on a file, or NULL: a new one */
	const char *resolv_conf; /* bound read-only on /etc/resolv.conf, or NULL */
	/* The box's ids 0..65535 are host ids uid_base.. in a user namespace
	 * of its own; 0: none (box root is host root). Its root filesystem
	 * is in that range already; the extra mounts (volumes) hold ids
	 * 0..65535 and are id-mapped onto it. */
	uint32_t uid_base;
	/* With uid_base: the user namespace to join (bound on a file; it owns
	 * netns), or NULL: a new one mapped onto uid_base. */
	const char *userns;
	/* lxcfs's mount point, or NULL: its views (lxcfs.h lxcfs_views[],
	 * those of bit i set in lxcfs_views) are bound read-only over the
	 * box's /proc and /sys files. */
	const char *lxcfs_dir;
	unsigned lxcfs_views;
	/* The Docker tier (docs/docker.md): every capability of the box's
	 * user namespace, seccomp with Docker's profile for them, a cgroup namespace with the
	 * box's cgroup writable by its root (delegated), and docker_dir (a
	 * host directory owned by the box's root) bound on /var/lib/docker.
	 * Needs uid_base: box root must not be host root. */
	bool docker;
	const char *docker_dir;
};

enum runtime_status {
	RUNTIME_ABSENT,	 /* no such container */
	RUNTIME_RUNNING, /* PID 1 is alive */
	RUNTIME_STOPPED, /* known to the runtime but not running */
	RUNTIME_PAUSED,	 /* frozen (runtime_pause) */
};

/* The operations of a backend; each is required. rt is the backend's own
 * (the one whose `ops` points here). Contracts as for the functions of the
 * same name below. */
struct runtime_ops {
	const char *name; /* "crun", "fake" */
	void (*free)(struct runtime *rt);
	enum cgroup_mode (*cgroup_mode)(const struct runtime *rt);
	const char *(*root)(const struct runtime *rt);
	bool (*private_ns)(const struct runtime *rt);
	int (*start)(struct runtime *rt, const struct box_spec *spec, pid_t *ret_pid,
		     pd_error *err);
	int (*status)(struct runtime *rt, const char *id, enum runtime_status *ret_status,
		      pid_t *ret_pid, pd_error *err);
	int (*stop)(struct runtime *rt, const char *id, unsigned grace_sec, pd_error *err);
	int (*pause)(struct runtime *rt, const char *id, pd_error *err);
	int (*resume)(struct runtime *rt, const char *id, pd_error *err);
	int (*update)(struct runtime *rt, const char *id, const struct box_type *type,
		      pd_error *err);
	int (*usage)(struct runtime *rt, const char *id, struct cgroup_usage *ret);
	int (*limits)(struct runtime *rt, const char *id, struct cgroup_limits *ret);
	int (*exec)(struct runtime *rt, const char *id, const char *job_dir,
		    char *const *secret_env, pd_error *err);
	/* The path of box id's exec server socket (common/exec-proto.h), made at
	 * every start and handed to the box's PID 1, in buf (>= 108 bytes):
	 * the supervisor's spec.json names it. False when the box has no
	 * server: the path would not fit a unix socket address (a long run
	 * directory; jobs then use crun exec), or the backend has none (NULL). */
	bool (*exec_socket)(const struct runtime *rt, const char *id, char *buf, size_t bufsz);
};

/* What every backend's handle starts with. */
struct runtime {
	const struct runtime_ops *ops;
};

/* The crun backend: detects the host's cgroup layout and finds the box
 * init binary (and paddock-exec beside it). */
int runtime_crun_new(const struct pd_config *cfg, const char *init_path, struct runtime **ret,
		     pd_error *err);

static inline struct runtime *runtime_free(struct runtime *rt)
{
	if (rt)
		rt->ops->free(rt);
	return NULL;
}

static inline enum cgroup_mode runtime_cgroup_mode(const struct runtime *rt)
{
	return rt->ops->cgroup_mode(rt);
}

/* crun's --root, and whether crun calls need the private mount namespace:
 * for the job supervisor, which calls crun itself (spec.json,
 * supervisor.h). A backend without them: "" and false. */
static inline const char *runtime_root(const struct runtime *rt)
{
	return rt->ops->root(rt);
}

static inline bool runtime_private_ns(const struct runtime *rt)
{
	return rt->ops->private_ns(rt);
}

/* Starts the box detached. Returns once PID 1 runs, with its host PID in
 * *ret_pid (crun: config.json written in spec->bundle_dir first). On
 * failure nothing is left behind (no container, no cgroup). */
static inline int runtime_start(struct runtime *rt, const struct box_spec *spec, pid_t *ret_pid,
				pd_error *err)
{
	return rt->ops->start(rt, spec, ret_pid, err);
}

/* Asks the runtime about a container. RUNTIME_ABSENT only when the runtime
 * does not know the container (crun: no state directory, or crun says it
 * does not exist); any other failure of the runtime is -errno with the
 * runtime's reason in err, and says nothing about the container. */
static inline int runtime_status(struct runtime *rt, const char *id,
				 enum runtime_status *ret_status, pid_t *ret_pid, pd_error *err)
{
	return rt->ops->status(rt, id, ret_status, ret_pid, err);
}

/* Stops a container: SIGTERM to PID 1, SIGKILL to every process after
 * grace_sec, then deletes the container and its cgroup. A container that is
 * already gone is success; a runtime that fails otherwise (its status
 * unknown, its delete refused) is a failure with the reason in err. */
static inline int runtime_stop(struct runtime *rt, const char *id, unsigned grace_sec,
			       pd_error *err)
{
	return rt->ops->stop(rt, id, grace_sec, err);
}

/* Freezes every process of a running container (cgroup freezer), and
 * thaws it. Resuming a container that is not paused is success. */
static inline int runtime_pause(struct runtime *rt, const char *id, pd_error *err)
{
	return rt->ops->pause(rt, id, err);
}

static inline int runtime_resume(struct runtime *rt, const char *id, pd_error *err)
{
	return rt->ops->resume(rt, id, err);
}

/* Applies a type's CPU, memory and pids limits to a running container. */
static inline int runtime_update(struct runtime *rt, const char *id, const struct box_type *type,
				 pd_error *err)
{
	return rt->ops->update(rt, id, type, err);
}

/* Usage and limits from the container's cgroup. */
static inline int runtime_usage(struct runtime *rt, const char *id, struct cgroup_usage *ret)
{
	return rt->ops->usage(rt, id, ret);
}

static inline int runtime_limits(struct runtime *rt, const char *id, struct cgroup_limits *ret)
{
	return rt->ops->limits(rt, id, ret);
}

/* Starts the exec job whose directory job_dir the engine prepared (cmd,
 * spec.json, stdin.fifo: supervisor.h) in running container id, and
 * returns once it runs detached; from then on the job's files in job_dir
 * (status last) say how it goes and how it ended, as supervisor.h has it.
 * secret_env (NULL, or NULL-terminated "NAME=VALUE"): added to the
 * command's environment, never written to a file or a command line.
 * crun: paddock-exec [--secrets-fd=3] JOBDIR, the values through a pipe. */
static inline int runtime_exec(struct runtime *rt, const char *id, const char *job_dir,
			       char *const *secret_env, pd_error *err)
{
	return rt->ops->exec(rt, id, job_dir, secret_env, err);
}

static inline bool runtime_exec_socket(const struct runtime *rt, const char *id, char *buf,
				       size_t bufsz)
{
	return rt->ops->exec_socket && rt->ops->exec_socket(rt, id, buf, bufsz);
}
