/* cgroup.h - which cgroup layout this host has, and reading a box's cgroup.
 *
 * Detected at start, never assumed:
 *   CGROUP_UNIFIED  pure cgroup v2 (/sys/fs/cgroup is cgroup2)
 *   CGROUP_LEGACY   cgroup v1 only
 *   CGROUP_HYBRID   v1 controllers plus a v2 tree at /sys/fs/cgroup/unified.
 *                   When that v2 tree lists controllers, crun refuses to run
 *                   ("cgroups in hybrid mode not supported"); the runtime then
 *                   runs crun in a private mount namespace without that tree,
 *                   so crun sees a plain v1 host (cgroup_crun_needs_private_ns).
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

enum cgroup_mode { CGROUP_LEGACY, CGROUP_HYBRID, CGROUP_UNIFIED };

struct cgroup_usage {
	uint64_t cpu_usec;
	uint64_t memory_bytes;
	uint64_t pids;
};

struct cgroup_limits {
	uint64_t cpu_quota_usec; /* per period; 0 = none */
	uint64_t cpu_period_usec;
	uint64_t memory_bytes; /* UINT64_MAX = none */
	uint64_t pids;	       /* UINT64_MAX = none */
};

/* Detects the layout under root (normally "/sys/fs/cgroup"). Returns 0 or
 * -errno. *ret_crun_private_ns is true when crun must run without the v2
 * tree (see above). */
int cgroup_detect(const char *root, enum cgroup_mode *ret_mode, bool *ret_crun_private_ns);

const char *cgroup_mode_to_string(enum cgroup_mode m);

/* Reads the usage of the cgroup at path (relative, as in OCI cgroupsPath,
 * e.g. "/paddock/web"). Missing files count as 0. Returns 0, or -ENOENT if
 * the cgroup does not exist. */
int cgroup_read_usage(const char *root, enum cgroup_mode mode, const char *path,
		      struct cgroup_usage *ret);

/* Recent CPU use from samples of a cgroup's cumulative CPU time (cpu_usec
 * above), taken by the caller at its own pace: a ring of the last
 * CGROUP_CPU_SAMPLES (time, CPU time) pairs. Times are monotonic
 * microseconds. Not locked: the owner's lock guards it. */
#define CGROUP_CPU_SAMPLES 8
struct cgroup_cpu_window {
	struct {
		uint64_t at_usec;
		uint64_t cpu_usec;
	} s[CGROUP_CPU_SAMPLES];
	unsigned n;    /* samples held */
	unsigned next; /* slot of the next sample */
};

/* Adds a sample, dropping the oldest when full. A CPU time below the last
 * sample's (a new cgroup: the box was restarted) starts the window over. */
void cgroup_cpu_add(struct cgroup_cpu_window *w, uint64_t at_usec, uint64_t cpu_usec);

/* CPU use from a base sample to (now_usec, cpu_usec), in percent of one
 * CPU, rounded (a box busy on two CPUs: 200). The base is the newest sample
 * at least window_usec old or, when none is that old, the oldest if at
 * least min_usec old. 0 without such a sample or when the CPU time went
 * back. */
unsigned cgroup_cpu_percent(const struct cgroup_cpu_window *w, uint64_t window_usec,
			    uint64_t min_usec, uint64_t now_usec, uint64_t cpu_usec);

/* Reads the limits in force. Returns 0 or -ENOENT. */
int cgroup_read_limits(const char *root, enum cgroup_mode mode, const char *path,
		       struct cgroup_limits *ret);

/* True if any controller still has a directory for path. */
bool cgroup_exists(const char *root, enum cgroup_mode mode, const char *path);

/* Makes the cgroup at path (relative, as in OCI cgroupsPath) in every
 * hierarchy under root (each v1 controller's directory, skipping the
 * hybrid v2 tree "unified"; root itself when mode is CGROUP_UNIFIED) and
 * gives it to uid:gid: the directory and the files that move processes
 * (cgroup.procs, tasks, cgroup.threads, cgroup.subtree_control), as
 * systemd delegates a subtree. Box root can then make child cgroups (its
 * Docker's containers), which the kernel keeps within path's limits. A v1
 * cpuset directory made here gets its parent's cpus and mems (an empty
 * cpuset takes no task). Idempotent; the runtime removes the cgroup with
 * the container. Returns 0 or -errno. */
int cgroup_delegate(const char *root, enum cgroup_mode mode, const char *path, uid_t uid,
		    gid_t gid);

/* A v1 or hybrid host's cgroup v2 tree, for boxes whose cgroup namespace
 * must hold a v2 cgroup of their own. A box's cgroup namespace is rooted at
 * the cgroups its init is in, in every hierarchy, the v2 one included; on
 * such a host crun places a box in v1 cgroups only, so its init stays in
 * the daemon's v2 cgroup, and box root with CAP_SYS_ADMIN in its user
 * namespace (the Docker tier) could mount cgroup2 and read that cgroup: the
 * host's processes (listed as 0), the host's CPU and memory pressure and
 * cgroups beside the daemon's. The runtime gives each such box a v2 cgroup
 * before the namespace is made (cgroup_v2_make).
 *
 * cgroup_v2_open returns a directory fd of the tree's root: the hybrid
 * tree at root/unified, or on a v1-only host a cgroup2 mount of the
 * daemon's own, attached nowhere. -errno when there is none (a kernel
 * without the new mount API, or mode CGROUP_UNIFIED: crun gives boxes their
 * v2 cgroup there). */
int cgroup_v2_open(const char *root, enum cgroup_mode mode);

/* Makes the cgroup at path (relative, as in OCI cgroupsPath; no "." or
 * ".." level) under the tree v2fd and returns an fd of its cgroup.procs,
 * open for writing ("0" moves the writer in), or -errno. Not delegated:
 * the box has no use for it but as its namespace's root, and must not
 * change it. */
int cgroup_v2_make(int v2fd, const char *path);

/* Removes that cgroup once its processes are gone (they leave it as they
 * exit; a short wait for the last ones). Returns 0, or -errno (-EBUSY: a
 * process is still in it). */
int cgroup_v2_remove(int v2fd, const char *path);
