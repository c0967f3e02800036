# lib.sh - for tests/integration/test-panel*.sh (sourced after
# integration/lib.sh): playwright-core from npm in the build tree, and the
# browser scripts' output as TAP.

PW_VERSION=1.65.1
PW_DIR=$TOP_BUILDDIR/tests/node-cache
CHROMIUM=${CHROMIUM:-$(command -v chromium || true)}

# Skips the test without a browser to drive.
panel_require() {
	[ -n "$CHROMIUM" ] || skip_all "needs chromium"
	command -v node >/dev/null || skip_all "needs node"
	command -v npm >/dev/null || skip_all "needs npm"
}

# A free loopback port: the kernel picks one, we release it for the daemon.
panel_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# panel_shots NAME: the directory of a test's page screenshots (its
# artifacts), emptied, in SHOTS; printed.
panel_shots() {
	SHOTS=$TOP_BUILDDIR/tests/panel-artifacts/$1
	rm -rf "$SHOTS" && mkdir -p "$SHOTS" || return 1
	diag "panel screenshots: $SHOTS"
}

pw_version() {
	node -p "require('$PW_DIR/node_modules/playwright-core/package.json').version" 2>/dev/null
}

# playwright-core PW_VERSION in PW_DIR (installed once); ends the test
# when it cannot be installed.
panel_playwright() {
	[ "$(pw_version)" = "$PW_VERSION" ] && return 0
	mkdir -p "$PW_DIR"
	ok "playwright-core $PW_VERSION installs into the build tree" \
		bash -c 'npm install --no-audit --no-fund --loglevel=error --prefix "$1" \
			"playwright-core@$2" >"$3" 2>&1' - "$PW_DIR" "$PW_VERSION" "$PD_TMP/npm.log"
	if [ "$(pw_version)" != "$PW_VERSION" ]; then
		sed 's/^/# /' "$PD_TMP/npm.log"
		pd_done
	fi
}

# The owner's password PASSWORD set through the setup link of the daemon
# at URL.
panel_owner() {
	local secret
	ok "the setup link is written to DATA/setup-url" wait_for 10 test -s "$D/setup-url"
	secret=$(sed 's/.*token=//' "$D/setup-url" 2>/dev/null)
	ok "it carries a one-time secret" test -n "$secret" -a "$secret" != "$(cat "$D/setup-url")"
	ok "POST /v1/setup sets the owner's password" same "$(curl -sS -o /dev/null -w '%{http_code}' \
		-H 'Content-Type: application/json' \
		--data "{\"token\":\"$secret\",\"password\":\"$PASSWORD\"}" "$URL/v1/setup")" 200
}

# panel_run SECONDS SCRIPT: runs tests/panel/SCRIPT against the daemon at
# URL (environment: tests/panel/common.mjs, and what the caller exported),
# each of its steps ("PLAN N", "PASS name", "FAIL name", "# diagnostics")
# a TAP line; then that every step ran and passed.
panel_run() {
	local rc passed=0 plan= line
	PANEL_URL=$URL PANEL_PASSWORD=$PASSWORD PANEL_MOUNT=$M PANEL_SHOTS=$SHOTS PW_DIR=$PW_DIR \
		CHROMIUM=$CHROMIUM timeout "$1" node "$TOP_SRCDIR/tests/panel/$2" \
		>"$PD_TMP/panel.out" 2>&1
	rc=$?
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
	if [ $rc -ne 0 ] && ! grep -q '^FAIL ' "$PD_TMP/panel.out"; then
		ok "the browser run finished (exit $rc)" false
	fi
	ok "every browser step ran and passed" same "$passed" "${plan:-(no plan)}"
}
