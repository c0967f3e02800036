#!/bin/bash
# The live desktop in the web panel, end to end in a real headless browser
# (Debian's chromium, playwright-core): a box of the desktop image with its
# desktop on; its desktop/url opens the panel's login form, then the live
# view: noVNC (the novnc package, served by the daemon under /novnc/) draws
# the box's screen over the WebSocket /v1/vnc/NAME that the daemon proxies
# to the box's VNC server. View-only first (the pointer does not reach the
# box); Take control reconnects with ?control=1, text typed in the browser
# reaches a terminal in the box (a file it writes, the colour it paints in
# the next screenshot.png, through the panel's screenshot view); revoking
# the token closes the socket (tests/panel/panel-desktop.mjs).
# A screenshot of every page is kept as an artifact in
# tests/panel-artifacts/panel-desktop/ of the build tree (printed).
# Skips only without chromium (or node and npm to drive it) or when the
# desktop image cannot be built (no Debian mirror).
. "$(dirname "$0")/lib.sh"
. "$TOP_SRCDIR/tests/panel/lib.sh"
require_root

panel_require
pd_use_image desktop

PORT=$(panel_port)
URL=http://127.0.0.1:$PORT
PASSWORD=panel-test-$RANDOM$RANDOM
PD_LISTEN=127.0.0.1:$PORT
pd_setup || exit 1

panel_shots panel-desktop || exit 1
panel_playwright

pd_start
ok "the daemon listens on $URL" wait_for 10 curl -fsS -o /dev/null "$URL/"
ok "noVNC's RFB module is served" same \
	"$(curl -sS -o /dev/null -w '%{http_code} %{content_type}' "$URL/novnc/core/rfb.js")" \
	"200 text/javascript; charset=utf-8"

panel_owner

# The box: desktop image, a type with room for the desktop (small: 2G).
BOX=desk
B=$M/boxes/$BOX
ok "a desktop box is created and started" bash -c "
	mkdir '$B' && echo desktop >'$B/image' && echo small >'$B/type' &&
	echo running >'$B/state'"
ok "its desktop turns on" bash -c "echo on >'$B/desktop/state'"

PANEL_BOX=$BOX panel_run 600 panel-desktop.mjs
[ "$pd_failed" -eq 0 ] || {
	diag "box error: $(cat "$B/error" 2>/dev/null)"
	diag "desktop state: $(cat "$B/desktop/state" 2>/dev/null)"
}

pd_done
