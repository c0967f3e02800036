/* desktop-vnc.h - a connection to the VNC server of a box's desktop, for
 * the daemon's WebSocket proxy (web/vnc-proxy.c) and anyone else in the
 * daemon that speaks RFB to a box.
 *
 * Xvnc listens in the box on a unix socket only (DESKTOP_VNC_SOCKET,
 * common/desktop.h), in a directory the box's user owns. The box is
 * hostile: it may replace that socket, or a directory on its way, by a
 * symlink to a socket of the host (the daemon's own, another box's), by a
 * hard link, a FIFO or a mount. So the socket is opened as an O_PATH
 * descriptor with openat2() from the box's root filesystem on the host
 * (engine_box_rootfs()), with RESOLVE_IN_ROOT (".." stays in the box),
 * RESOLVE_NO_SYMLINKS (no link at all, the box's own included: the path
 * is fixed and ours), RESOLVE_NO_MAGICLINKS and RESOLVE_NO_XDEV (no mount
 * crossed), checked to be a socket (fstat S_ISSOCK), and connected through
 * /proc/self/fd/N: connect(2) has no *at() form, and the magic link names
 * the very inode the descriptor holds, so nothing is looked up by name
 * after the check. The socket the box made is whatever it is (a hostile
 * server in the box is expected: the bytes it sends are relayed to the
 * viewer, never parsed by the daemon).
 */
#pragma once

#include <stdint.h>

#include "common/error.h"

struct engine;

/* A connected, blocking SOCK_STREAM unix socket (O_CLOEXEC) to the
 * desktop's VNC server in box box_id, or -errno with the reason in err:
 * -ENOENT no such box; -ENODEV the box is not running or its desktop does
 * not listen (no socket, not a socket, a link, nobody accepting);
 * -EAGAIN the server's queue of connections is full; other -errno. */
int engine_desktop_vnc_connect(struct engine *e, int64_t box_id, pd_error *err);
