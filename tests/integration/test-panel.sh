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

PW_VERSION=1.65.1
PW_DIR=$TOP_BUILDDIR/tests/node-cache
CHROMIUM=${CHROMIUM:-$(command -v chromium || true)}

NOVNC=/usr/share/novnc
[ -n "$CHROMIUM" ] || skip_all "needs chromium"
[ -f "$NOVNC/core/rfb.js" ] || skip_all "needs noVNC (the novnc package)"
command -v node >/dev/null || skip_all "needs node"
command -v npm >/dev/null || skip_all "needs npm"

# A free loopback port: the kernel picks one, we release it for the daemon.
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
URL=http://127.0.0.1:$PORT
PASSWORD=panel-test-$RANDOM$RANDOM

PD_LISTEN=127.0.0.1:$PORT
pd_setup || exit 1

# noVNC as the daemon serves it: a copy of the package, with what must not
# be served planted in it. outside.js lies beside it, outside.
NV=$PD_TMP/novnc
cp -a "$NOVNC" "$NV"
echo 'export const secret = "outside";' >"$PD_TMP/outside.js"
ln -s ../outside.js "$NV/core/escape.js"	   # a link out of the directory
ln -s "$PD_TMP/outside.js" "$NV/core/escape2.js" # an absolute one
ln -s rfb.js "$NV/core/alias.js"		   # a link inside it: served
echo 'export const hidden = 1;' >"$NV/core/.hidden.js"
mkdir "$NV/core/dir.js"
sed -i "s|^\[paddock\]$|[paddock]\nnovnc_dir = $NV|" "$PD_TMP/paddock.ini"

# The screenshots of the pages: the test's artifacts.
SHOTS=$TOP_BUILDDIR/tests/panel-artifacts/panel
rm -rf "$SHOTS" && mkdir -p "$SHOTS" || exit 1
diag "panel screenshots: $SHOTS"

pw_version() {
	node -p "require('$PW_DIR/node_modules/playwright-core/package.json').version" 2>/dev/null
}
if [ "$(pw_version)" != "$PW_VERSION" ]; then
	mkdir -p "$PW_DIR"
	ok "playwright-core $PW_VERSION installs into the build tree" \
		bash -c 'npm install --no-audit --no-fund --loglevel=error --prefix "$1" \
			"playwright-core@$2" >"$3" 2>&1' - "$PW_DIR" "$PW_VERSION" "$PD_TMP/npm.log"
	if [ "$(pw_version)" != "$PW_VERSION" ]; then
		sed 's/^/# /' "$PD_TMP/npm.log"
		pd_done
	fi
fi

pd_start
ok "the daemon listens on $URL" wait_for 10 curl -fsS -o /dev/null "$URL/"

setup_url=
ok "the setup link is written to DATA/setup-url" wait_for 10 test -s "$D/setup-url"
setup_url=$(cat "$D/setup-url" 2>/dev/null)
secret=${setup_url##*token=}
ok "it carries a one-time secret" test -n "$secret" -a "$secret" != "$setup_url"
ok "POST /v1/setup sets the owner's password" same "$(curl -sS -o /dev/null -w '%{http_code}' \
	-H 'Content-Type: application/json' \
	--data "{\"token\":\"$secret\",\"password\":\"$PASSWORD\"}" "$URL/v1/setup")" 200

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

# The browser steps: "PLAN N", "PASS name", "FAIL name", "# diagnostics".
PANEL_URL=$URL PANEL_PASSWORD=$PASSWORD PANEL_MOUNT=$M PANEL_SHOTS=$SHOTS PW_DIR=$PW_DIR \
	CHROMIUM=$CHROMIUM timeout 300 node "$TOP_SRCDIR/tests/panel/panel.mjs" \
	>"$PD_TMP/panel.out" 2>&1
node_rc=$?
passed=0
plan=
while IFS= read -r line; do
	case $line in
	"PASS "*)
		ok "panel: ${line#PASS }" true
		passed=$((passed + 1))
		;;
	"FAIL "*) ok "panel: ${line#FAIL }" false ;;
	"PLAN "*) plan=${line#PLAN } ;;
	"#"*) echo "$line" ;;
	*) echo "# $line" ;;
	esac
done <"$PD_TMP/panel.out"
if [ $node_rc -ne 0 ] && ! grep -q '^FAIL ' "$PD_TMP/panel.out"; then
	ok "the browser run finished (exit $node_rc)" false
fi
ok "every browser step ran and passed" same "$passed" "${plan:-(no plan)}"

pd_done
