/* desktop-vnc.c - connecting to a box's VNC server without following
 * anything the box controls (desktop-vnc.h). */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "engine/desktop-vnc.h"
#include "engine/engine.h"
#include "engine/internal.h"
#include "common/desktop.h"
#include "common/util.h"

#define DESKTOP_OFF "the desktop is off (echo on > boxes/%s/desktop/state)"

int engine_desktop_vnc_connect(struct engine *e, int64_t box_id, pd_error *err)
{
	struct box_view v;
	char root[4096];
	int k;

	k = engine_box_get_by_id(e, box_id, &v);
	if (k < 0)
		return pd_error_set(err, k, "no such box");
	if (v.state != BOX_RUNNING)
		return pd_error_set(err, -ENODEV, DESKTOP_OFF "; the box is %s", v.name,
				    box_state_to_string(v.state));
	k = engine_box_rootfs(e, box_id, root, sizeof root);
	if (k < 0)
		return pd_error_set(err, k, "cannot find the box's files: %s", strerror(-k));
	return eng_desktop_vnc_open(root, v.name, err);
}

int eng_desktop_vnc_open(const char *root, const char *name, pd_error *err)
{
	struct stat st;
	int k;

	_cleanup_close_ int rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return pd_error_set(err, -errno, "cannot open the box's files: %m");
	struct open_how how = {
	    .flags = O_PATH | O_CLOEXEC,
	    .resolve =
		RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV,
	};
	/* The path inside the root, without its leading '/'. */
	_cleanup_close_ int path_fd =
	    (int)syscall(SYS_openat2, rootfd, DESKTOP_VNC_SOCKET + 1, &how, sizeof how);
	if (path_fd < 0) {
		k = -errno;
		if (k == -ENOENT || k == -ENOTDIR)
			return pd_error_set(err, -ENODEV, DESKTOP_OFF, name);
		if (k == -ELOOP || k == -EXDEV)
			return pd_error_set(err, -ENODEV,
					    "the desktop's VNC socket %s is reached through a "
					    "link or a mount the box made: not followed",
					    DESKTOP_VNC_SOCKET);
		return pd_error_set(err, k, "cannot open %s in the box: %s", DESKTOP_VNC_SOCKET,
				    strerror(-k));
	}
	if (fstat(path_fd, &st) < 0)
		return pd_error_set(err, -errno, "cannot stat %s in the box: %m",
				    DESKTOP_VNC_SOCKET);
	if (!S_ISSOCK(st.st_mode))
		return pd_error_set(err, -ENODEV, "%s in the box is not a socket: not connected",
				    DESKTOP_VNC_SOCKET);

	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof sa.sun_path, "/proc/self/fd/%d", path_fd);
	_cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return pd_error_set(err, -errno, "cannot create a socket: %m");
	/* Non-blocking: a server that does not accept fills its queue and
	 * makes this fail at once (EAGAIN) instead of hanging the caller. */
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		k = -errno;
		if (k == -ECONNREFUSED || k == -ENOENT)
			return pd_error_set(err, -ENODEV, DESKTOP_OFF "; nobody listens on %s",
					    name, DESKTOP_VNC_SOCKET);
		if (k == -EAGAIN)
			return pd_error_set(err, -EAGAIN,
					    "the desktop's VNC server accepts no more connections "
					    "now; try again");
		return pd_error_set(err, k, "cannot connect to the desktop's VNC server: %s",
				    strerror(-k));
	}
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0)
		return pd_error_set(err, -errno, "cannot set up the socket: %m");
	k = fd;
	fd = -1;
	return k;
}
