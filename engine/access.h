/* access.h - who may use the tree and the local HTTP socket: root and the
 * members of one group (config `group`, docs/security.md). Everyone else is
 * refused (-EACCES) on every request.
 *
 * A caller is allowed when its uid is 0, or its gid or one of its
 * supplementary groups is the group. When the configured group does not
 * exist, only root is allowed (fail closed).
 *
 * Thread-safe: a pd_access is read-only once made.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "common/error.h"

#define ACCESS_GROUPS_MAX 256 /* supplementary groups looked at per caller */

struct pd_access {
	bool has_group; /* false: the group does not exist; root only */
	gid_t gid;
	char group[64]; /* as configured, for messages */
};

/* Resolves spec (a group name or a decimal gid). A name that does not
 * exist leaves has_group false and returns -ENOENT with the reason and the
 * fix in err; *ret is usable (root only) either way. Other errors: -errno. */
int access_init(const char *spec, struct pd_access *ret, pd_error *err);

/* The gid shown as the group of every node (0 when there is no group). */
gid_t access_gid(const struct pd_access *a);

/* True if a caller with these credentials may use the tree. */
bool access_allows(const struct pd_access *a, uid_t uid, gid_t gid, const gid_t *groups,
		   size_t n_groups);

/* The peer of a connected unix socket, by its credentials at connect time
 * (SO_PEERCRED, SO_PEERGROUPS). 0 allowed, -EACCES refused, -errno when
 * they cannot be read (refused too). */
int access_check_socket_peer(const struct pd_access *a, int fd);
