/* access.c - root and one group may use the tree (access.h). */
#include <errno.h>
#include <grp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "engine/access.h"
#include "common/parse.h"

int access_init(const char *spec, struct pd_access *ret, pd_error *err)
{
	struct pd_access a = {0};
	uint64_t gid;

	snprintf(a.group, sizeof a.group, "%s", spec ? spec : "");
	*ret = a;
	if (!spec || !*spec)
		return pd_error_set(err, -EINVAL,
				    "no group configured: only root may use the tree");
	if (spec[0] >= '0' && spec[0] <= '9') {
		if (parse_uint64(spec, UINT32_MAX - 1, &gid) < 0)
			return pd_error_set(err, -EINVAL, "bad group \"%s\"", spec);
		a.gid = (gid_t)gid;
		a.has_group = true;
		*ret = a;
		return 0;
	}

	struct group gr, *res = NULL;
	size_t size = 16384;
	_cleanup_free_ char *buf = malloc(size);
	int r;

	if (!buf)
		return pd_error_set(err, -ENOMEM, "out of memory");
	while ((r = getgrnam_r(spec, &gr, buf, size, &res)) == ERANGE && size < (1u << 22)) {
		char *nb = realloc(buf, size *= 2);
		if (!nb)
			return pd_error_set(err, -ENOMEM, "out of memory");
		buf = nb;
	}
	if (r != 0)
		return pd_error_set(err, -r, "cannot look up group %s: %s", spec, strerror(r));
	if (!res)
		return pd_error_set(err, -ENOENT,
				    "group %s does not exist: only root may use the tree "
				    "(create it with: groupadd --system %s)",
				    spec, spec);
	a.gid = gr.gr_gid;
	a.has_group = true;
	*ret = a;
	return 0;
}

gid_t access_gid(const struct pd_access *a)
{
	return a && a->has_group ? a->gid : 0;
}

bool access_allows(const struct pd_access *a, uid_t uid, gid_t gid, const gid_t *groups,
		   size_t n_groups)
{
	if (uid == 0)
		return true;
	if (!a || !a->has_group)
		return false;
	if (gid == a->gid)
		return true;
	for (size_t i = 0; i < n_groups; i++)
		if (groups[i] == a->gid)
			return true;
	return false;
}

int access_check_socket_peer(const struct pd_access *a, int fd)
{
	struct ucred cred;
	socklen_t len = sizeof cred;
	gid_t groups[ACCESS_GROUPS_MAX];

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
		return -errno;
	if (cred.uid == 0 || (a && a->has_group && cred.gid == a->gid))
		return 0;
	len = sizeof groups;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) < 0)
		return errno == ERANGE ? -EACCES : -errno;
	return access_allows(a, cred.uid, cred.gid, groups, len / sizeof(gid_t)) ? 0 : -EACCES;
}
