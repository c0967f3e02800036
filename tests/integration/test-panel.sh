#!/bin/bash
# The web panel in a real headless browser: Debian's chromium driven by
# playwright-core (npm, installed once into the build tree) against a
# private paddockd listening on a loopback port. The owner's password is
# set through the setup link; then the browser logs in, creates a box,
# runs a command in the exec console, forks, stops, resumes and deletes it,
# and a wrong password and a revoked token lead back to the login form. Each
# effect is also checked through the mount (tests/panel/panel.mjs).
# On failure a screenshot is kept and its path printed.
. "$(dirname "$0")/lib.sh"

PW_VERSION=1.65.1
PW_DIR=$TOP_BUILDDIR/tests/node-cache
CHROMIUM=${CHROMIUM:-$(command -v chromium || true)}

[ -n "$CHROMIUM" ] || skip_all "needs chromium"
command -v node >/dev/null || skip_all "needs node"
command -v npm >/dev/null || skip_all "needs npm"

# A free loopback port: the kernel picks one, we release it for the daemon.
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
URL=http://127.0.0.1:$PORT
PASSWORD=panel-test-$RANDOM$RANDOM

PD_LISTEN=127.0.0.1:$PORT
pd_setup || exit 1

# Screenshots outlive PD_TMP when something failed.
SHOTS=$(mktemp -d /tmp/paddock-panel.XXXXXX)
panel_cleanup() {
	local rc=$?
	if [ $rc -eq 0 ] && [ "$pd_failed" -eq 0 ]; then
		rm -rf "$SHOTS"
	else
		rmdir "$SHOTS" 2>/dev/null # kept only when it holds a screenshot
	fi
	(exit $rc)
	pd_cleanup
}
trap panel_cleanup EXIT

pw_version() {
	node -p "require('$PW_DIR/node_modules/playwright-core/package.json').version" 2>/dev/null
}
if [ "$(pw_version)" != "$PW_VERSION" ]; then
	mkdir -p "$PW_DIR"
	ok "playwright-core $PW_VERSION installs into the build tree" \
		npm install --no-audit --no-fund --loglevel=error --prefix "$PW_DIR" \
		"playwright-core@$PW_VERSION" >"$PD_TMP/npm.log" 2>&1
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

ok "index.html is served at /" bash -c "curl -fsS '$URL/' | grep -q 'id=\"login-form\"'"
ok "app.js is served as JavaScript" same "$(curl -fsS -o /dev/null -w '%{content_type}' "$URL/panel/app.js")" \
	"text/javascript; charset=utf-8"

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
