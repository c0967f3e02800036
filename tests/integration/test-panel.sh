#!/bin/bash
# The web panel in a real headless browser: Debian's chromium driven by
# playwright-core (npm, installed once into the build tree) against a
# private paddockd listening on a loopback port. The owner's password is
# set through the setup link; then the browser logs in, creates a box,
# runs a command in the exec console, forks, stops, resumes and deletes it,
# and a wrong password and a revoked token lead back to the login form. Each
# effect is also checked through the mount (tests/panel/panel.mjs). The
# pages for one box (type, TTL, policy editor, snapshots, volumes attached),
# the volumes and the tokens are driven the same way, bad input showing the
# server's own reason. A screenshot of every page is kept as an artifact in
# tests/panel-artifacts/panel/ of the build tree (replaced on each run, the
# path printed), with one of the failure when a step fails.
#
# /novnc/ (noVNC's modules for the live desktop): served without a token,
# JavaScript only, with the panel's security headers; paths with "..",
# hidden names, other file types, directories and symlinks out of
# novnc_dir are refused (404) before or while opening (openat2
# RESOLVE_BENEATH). The daemon's novnc_dir is a copy of the novnc package
# here, planted with such files.
. "$(dirname "$0")/lib.sh"
. "$TOP_SRCDIR/tests/panel/lib.sh"

NOVNC=/usr/share/novnc
panel_require
[ -f "$NOVNC/core/rfb.js" ] || skip_all "needs noVNC (the novnc package)"

PORT=$(panel_port)
URL=http://127.0.0.1:$PORT
PASSWORD=panel-test-$RANDOM$RANDOM

PD_LISTEN=127.0.0.1:$PORT
pd_setup || exit 1

# noVNC as the daemon serves it: a copy of the package, with what must not
# be served planted in it. outside.js lies beside it, outside.
NV=$PD_TMP/novnc
cp -a "$NOVNC" "$NV"
echo 'export const secret = "outside";' >"$PD_TMP/outside.js"
ln -s ../../outside.js "$NV/core/escape.js"   # a link out of the directory
ln -s "$PD_TMP/outside.js" "$NV/core/escape2.js" # an absolute one
ln -s rfb.js "$NV/core/alias.js"		   # a link inside it: served
echo 'export const hidden = 1;' >"$NV/core/.hidden.js"
mkdir "$NV/core/dir.js"
sed -i "s|^\[paddock\]$|[paddock]\nnovnc_dir = $NV|" "$PD_TMP/paddock.ini"

panel_shots panel || exit 1
panel_playwright

pd_start
ok "the daemon listens on $URL" wait_for 10 curl -fsS -o /dev/null "$URL/"

panel_owner

ok "index.html is served at /" bash -c "curl -fsS '$URL/' | grep 'id=\"login-form\"' >/dev/null"
ok "app.js is served as JavaScript" same "$(curl -fsS -o /dev/null -w '%{content_type}' "$URL/panel/app.js")" \
	"text/javascript; charset=utf-8"
CSP="default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
# header NAME URL: that response header's value in the answer to a GET.
header() {
	curl -fsS -D - -o /dev/null "$2" | tr -d '\r' | sed -n "s/^$1: //Ip"
}
ok "the panel's page carries its Content-Security-Policy" same "$(header Content-Security-Policy "$URL/")" "$CSP"

# /novnc/: noVNC's modules, public, read-only.
ok "noVNC's RFB module is served without a token, as JavaScript" same \
	"$(curl -fsS -o /dev/null -w '%{http_code} %{content_type}' "$URL/novnc/core/rfb.js")" \
	"200 text/javascript; charset=utf-8"
ok "its bytes are the file's" cmp <(curl -fsS "$URL/novnc/core/rfb.js") "$NOVNC/core/rfb.js"
ok "a module it imports (vendor/pako) is served too" same \
	"$(curl -fsS -o /dev/null -w '%{http_code}' "$URL/novnc/vendor/pako/lib/zlib/inflate.js")" 200
ok "noVNC's modules carry the panel's security headers" bash -c "
	h=\$(curl -fsS -D - -o /dev/null '$URL/novnc/core/websock.js' | tr -d '\r')
	grep -qxF \"Content-Security-Policy: $CSP\" <<<\"\$h\" &&
	grep -qx 'X-Content-Type-Options: nosniff' <<<\"\$h\""
ok "a link inside novnc_dir is followed" cmp <(curl -fsS "$URL/novnc/core/alias.js") "$NOVNC/core/rfb.js"
# status PATH: the status of GET /novnc/PATH as sent (no client-side
# normalisation of dots), and its body must not carry the outside file.
novnc_refused() {
	local out code
	out=$(curl -sS --path-as-is -o - -w '\n%{http_code}' "$URL/novnc/$1")
	code=${out##*$'\n'}
	[ "$code" = 404 ] && ! grep -q outside <<<"$out" || {
		diag "/novnc/$1: $out"
		return 1
	}
}
for p in core/escape.js core/escape2.js ../outside.js core/../../outside.js \
	core/%2e%2e/%2e%2e/outside.js core/..%2f..%2foutside.js %2e%2e/outside.js \
	core/.hidden.js core/dir.js core//rfb.js core/./rfb.js vnc.html vnc_lite.html \
	app/images/connect.svg core core/ '' core/rfb.js.map core/rfb.jsx \
	core/nonexistent.js; do
	ok "/novnc/$p is refused (404)" novnc_refused "$p"
done
ok "/novnc/ refuses what is not a GET" same \
	"$(curl -sS -o /dev/null -w '%{http_code}' -X PUT --data x "$URL/novnc/core/new.js")" 401
ok "and wrote nothing" test ! -e "$NV/core/new.js"

panel_run 300 panel.mjs

pd_done
