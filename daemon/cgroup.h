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

/* Reads the limits in force. Returns 0 or -ENOENT. */
int cgroup_read_limits(const char *root, enum cgroup_mode mode, const char *path,
		       struct cgroup_limits *ret);

/* True if any controller still has a directory for path. */
bool cgroup_exists(const char *root, enum cgroup_mode mode, const char *path);
