/* desktop.h - where a box's desktop lives inside the box.
 *
 * The daemon starts the session in the box (Xvnc, then an XFCE session on
 * its display) when boxes/NAME/desktop/state says `on`. Xvnc listens on no
 * TCP port at all: only on a unix socket in DESKTOP_RUN_DIR, a directory the
 * daemon makes 0700 for the box's user. The daemon reaches that socket from
 * the host through the box's root, never following a link the box put
 * there. Programs in the box reach the display as DISPLAY=DESKTOP_DISPLAY.
 */
#pragma once

/* The X display of the session, and so DISPLAY of `desktop`=1 jobs. */
#define DESKTOP_DISPLAY ":1"
/* In the box: the session's own directory (the box user's, 0700). */
#define DESKTOP_RUN_DIR "/run/paddock-desktop"
/* In the box: Xvnc's RFB socket (-rfbunixpath), mode 0600. */
#define DESKTOP_VNC_SOCKET DESKTOP_RUN_DIR "/vnc.sock"
/* The geometry of a desktop nobody set one for. */
#define DESKTOP_GEOMETRY_DEFAULT "1280x800"
/* The largest geometry a write may ask for. */
#define DESKTOP_WIDTH_MAX 3840
#define DESKTOP_HEIGHT_MAX 2160
