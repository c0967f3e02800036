/* runtime.h - the backend that runs boxes. One implementation today:
 * runtime-crun.c (crun driven through its CLI with a generated OCI
 * config.json). Node-local details (paths, cgroup layout, namespaces) stay
 * behind this interface.
 *
 * Thread-safety: every function may be called from any thread; calls for
 * different boxes run in parallel, the caller serialises calls for one box.
 */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "cgroup.h"
#include "config.h"
#include "error.h"

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
};

enum runtime_status {
	RUNTIME_ABSENT,	 /* no such container */
	RUNTIME_RUNNING, /* PID 1 is alive */
	RUNTIME_STOPPED, /* known to the runtime but not running */
	RUNTIME_PAUSED,	 /* frozen (runtime_pause) */
};

/* Detects the host's cgroup layout and finds the box init binary. */
int runtime_new(const struct pd_config *cfg, const char *init_path, struct runtime **ret,
		pd_error *err);
struct runtime *runtime_free(struct runtime *rt);

enum cgroup_mode runtime_cgroup_mode(const struct runtime *rt);

/* crun's --root, and whether crun calls need the private mount namespace
 * (for other programs that call crun, such as the job supervisor). */
const char *runtime_root(const struct runtime *rt);
bool runtime_private_ns(const struct runtime *rt);

/* The path of a box's exec server socket (exec-proto.h), made at every
 * runtime_start() and handed to the box's PID 1, in buf (>= 108 bytes).
 * Returns false when the box has no server because the path would not fit
 * a unix socket address (a long run directory): jobs then use crun exec. */
bool runtime_exec_socket(const struct runtime *rt, const char *id, char *buf, size_t bufsz);

/* The cgroup path of a box ("/<cgroup_parent>/<id>"), in buf. */
void runtime_cgroup_path(const struct runtime *rt, const char *id, char *buf, size_t bufsz);

/* Writes config.json and starts the container detached. Returns once PID 1
 * runs, with its host PID in *ret_pid. On failure nothing is left behind
 * (no container, no cgroup). */
int runtime_start(struct runtime *rt, const struct box_spec *spec, pid_t *ret_pid, pd_error *err);

/* Asks the runtime about a container. RUNTIME_ABSENT only when the runtime
 * does not know the container (crun: no state directory, or crun says it
 * does not exist); any other failure of the runtime is -errno with the
 * runtime's reason in err, and says nothing about the container. */
int runtime_status(struct runtime *rt, const char *id, enum runtime_status *ret_status,
		   pid_t *ret_pid, pd_error *err);

/* Stops a container: SIGTERM to PID 1, SIGKILL to every process after
 * grace_sec, then deletes the container and its cgroup. A container that is
 * already gone is success; a runtime that fails otherwise (its status
 * unknown, its delete refused) is a failure with the reason in err. */
int runtime_stop(struct runtime *rt, const char *id, unsigned grace_sec, pd_error *err);

/* Freezes every process of a running container (cgroup freezer), and
 * thaws it. Resuming a container that is not paused is success. */
int runtime_pause(struct runtime *rt, const char *id, pd_error *err);
int runtime_resume(struct runtime *rt, const char *id, pd_error *err);

/* Applies a type's CPU, memory and pids limits to a running container. */
int runtime_update(struct runtime *rt, const char *id, const struct box_type *type, pd_error *err);

/* Usage and limits from the container's cgroup. */
int runtime_usage(struct runtime *rt, const char *id, struct cgroup_usage *ret);
int runtime_limits(struct runtime *rt, const char *id, struct cgroup_limits *ret);
