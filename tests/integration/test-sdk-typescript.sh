#!/bin/bash
# The TypeScript SDK (sdk/typescript) against a real daemon over HTTP: it is
# compiled with tsc, packed with npm pack, installed from the tarball into
# a project of its own (offline: it has no dependencies) and imported from
# there; its node:test suite (sdk/typescript/test/) then runs with
# PADDOCK_URL and PADDOCK_TOKEN, each of its tests one TAP line here: the
# seed's first test as an SDK program, live streaming, a background job
# with stdin and kill, binary and 100 MB file round trips, tree upload and
# download, typed errors with the server's text, a revoked token (and an
# expired one once the server's tokens expire), snapshots, policy,
# volumes, the desktop and a coding agent's events when the image cache
# has those images, and every example of the SDK's README (run; its
# TypeScript fragment type-checked against the shipped declarations).
# About 30 s.
. "$(dirname "$0")/lib.sh"
require_root
command -v node >/dev/null || skip_all "needs node"
command -v npm >/dev/null || skip_all "needs npm"
command -v tsc >/dev/null || skip_all "needs tsc (node-typescript)"
command -v tar >/dev/null || skip_all "needs tar"

SDK_SRC=$TOP_SRCDIR/sdk/typescript
[ -d "$SDK_SRC/src" ] || skip_all "no SDK sources in $SDK_SRC"
pd_use_debian
# A prompt's events need a coding agent and a model: when the image cache
# has the agents image, the whole test runs in agents-lib.sh's fake
# internet (its fake model), with that image beside debian.
# shellcheck source=agents-lib.sh
. "$(dirname "$0")/agents-lib.sh"
if [ -d "${PD_IMAGES:-}/agents/rootfs" ] && pd_model_can; then
	pd_model_outer "$0"
	pd_model_setup
	ln -s "$PD_IMAGES/agents" "$D/images/agents"
	AGENTS=1
else
	pd_setup || exit 1
	AGENTS=
fi
# The desktop image beside debian, when the cache has it: the desktop test.
if [ -d "${PD_IMAGES:-}/desktop/rootfs" ]; then
	ln -s "$PD_IMAGES/desktop" "$D/images/desktop"
	export PADDOCK_TEST_DESKTOP_IMAGE=desktop
fi
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
sed -i "s|^listen *=.*|listen = 127.0.0.1:$PORT|" "$PD_TMP/paddock.ini"
pd_start
pd_owner || { diag "cannot set the owner's password and log in"; exit 1; }

# The agents box: claude under its allowlist, its keys secrets.
agent_box() {
	local s
	hc -fsS -o /dev/null -X PUT boxes/agent/ &&
		hc -fsS -o /dev/null -X PUT --data agents boxes/agent/image &&
		hc -fsS -o /dev/null -X PUT --data-binary $'allowlist\n@claude\n' boxes/agent/policy || return 1
	: >"$PD_TMP/secrets"
	for s in $(sed -n 's/^secrets //p' "$M/agents/claude"); do
		hc -fsS -o /dev/null -X PUT --data "sk-test-$RANDOM$RANDOM" "secrets/$s" || return 1
		echo "$s" >>"$PD_TMP/secrets"
	done
	hc -fsS -o /dev/null -X PUT --data-binary @"$PD_TMP/secrets" boxes/agent/secrets &&
		hc -fsS -o /dev/null -X PUT --data running boxes/agent/state
}
if [ -n "$AGENTS" ]; then
	if agent_box; then
		export PADDOCK_TEST_AGENT_BOX=agent
	else
		diag "cannot make the agents box"
	fi
fi

# --- build, pack, install -------------------------------------------------
# A copy: the build writes dist/ and the tarball, never into the sources.
SDK=$PD_TMP/sdk
mkdir -p "$SDK" && cp -r "$SDK_SRC/src" "$SDK_SRC/test" "$SDK_SRC/bench" \
	"$SDK_SRC/package.json" "$SDK_SRC/tsconfig.json" "$SDK_SRC/tsconfig.cjs.json" \
	"$SDK_SRC/README.md" "$SDK_SRC/LICENSE" "$SDK/"
npm_q() { npm --offline --no-audit --no-fund --no-update-notifier --loglevel=error "$@"; }
export npm_config_cache=$PD_TMP/npm-cache
ok "the SDK compiles with tsc (ESM, CommonJS, declarations)" \
	bash -c "cd '$SDK' && npm_config_cache='$npm_config_cache' npm run -s build >'$PD_TMP/build.log' 2>&1 ||
		{ sed 's/^/# /' '$PD_TMP/build.log'; false; }"
(cd "$SDK" && npm_q pack --ignore-scripts --pack-destination "$PD_TMP" >"$PD_TMP/pack.log" 2>&1)
TGZ=$PD_TMP/paddock-sdk-0.1.0.tgz
ok "npm pack makes paddock-sdk-0.1.0.tgz with dist/ and README" bash -c "
	test -s '$TGZ' && tar -tzf '$TGZ' >'$PD_TMP/tgz.list' &&
	grep -qx package/dist/esm/index.js '$PD_TMP/tgz.list' &&
	grep -qx package/dist/cjs/index.js '$PD_TMP/tgz.list' &&
	grep -qx package/dist/types/index.d.ts '$PD_TMP/tgz.list' &&
	grep -qx package/README.md '$PD_TMP/tgz.list' &&
	! grep -q '^package/src/' '$PD_TMP/tgz.list' || { sed 's/^/# /' '$PD_TMP/pack.log'; false; }"

APP=$PD_TMP/app
mkdir -p "$APP"
printf '{ "name": "sdk-user", "version": "1.0.0", "private": true }\n' >"$APP/package.json"
ok "the tarball installs into a project offline" bash -c "
	cd '$APP' && npm_config_cache='$npm_config_cache' npm --offline --no-audit --no-fund --loglevel=error \
		install '$TGZ' >'$PD_TMP/install.log' 2>&1 || { sed 's/^/# /' '$PD_TMP/install.log'; false; }"
ok "it has no dependencies" same "$(ls "$APP/node_modules" | tr '\n' ' ')" "paddock-sdk "
ok "import and require both load it from the project" bash -c "
	cd '$APP' &&
	node --input-type=module -e \"import { Box, AuthError } from 'paddock-sdk'; if (typeof Box.create !== 'function' || !AuthError) process.exit(1)\" &&
	node -e \"const { Box, PaddockError } = require('paddock-sdk'); if (typeof Box.create !== 'function' || !PaddockError) process.exit(1)\""

# --- the SDK's own tests, from the project --------------------------------
cp -r "$SDK/test" "$SDK/bench" "$SDK/README.md" "$APP/"
export PADDOCK_URL=$PD_URL PADDOCK_TOKEN=$PD_TOKEN PADDOCK_PASSWORD=$PD_PASSWORD
export PADDOCK_CONFIG=$PD_TMP/no-config.ini
# What the tests and examples put in the temporary directory goes with PD_TMP.
export TMPDIR=$PD_TMP/tmp
mkdir -p "$TMPDIR"
(cd "$APP" && timeout 300 node --test --test-reporter=tap test/ >"$PD_TMP/node-test.tap" 2>&1)
rc=$?
# Each top-level test of node's TAP (no indentation) is one line here (a
# skipped one keeps its "# SKIP reason"), its time a diagnostic; the
# details of failures follow at the end.
awk '/^(not )?ok [0-9]+ - / { if (line != "") print line "\t?"; line = $0; next }
	/^  duration_ms: / { if (line != "") { print line "\t" int($2); line = "" } }
	END { if (line != "") print line "\t?" }' "$PD_TMP/node-test.tap" >"$PD_TMP/node-test.lines"
while IFS=$'\t' read -r line ms; do
	name=${line#* - }
	name=${name#"$APP/"} # a file with no test of its own is named by its path
	case $line in
	"ok "*) ok "sdk: $name" true ;;
	*) ok "sdk: $name" false ;;
	esac
	diag "$ms ms"
done <"$PD_TMP/node-test.lines"
if [ "$rc" -ne 0 ]; then
	diag "node --test exited $rc:"
	grep -vE '^(ok|# Subtest)' "$PD_TMP/node-test.tap" | head -n 80 | sed 's/^/# /'
fi
ok "node --test passed (every test file ran to its end)" same "$rc" 0

# The benchmark's program (tests/bench/sdk.sh runs it), on a box of its own: a few calls
# suffice to check it.
ok "bench/run-true.mjs prints the median and mean" bash -c "
	hc -fsS -o /dev/null -X PUT boxes/bench/ && hc -fsS -o /dev/null -X PUT --data running boxes/bench/state &&
	cd '$APP' && timeout 60 node bench/run-true.mjs bench 5 >'$PD_TMP/bench.out' 2>&1 &&
	grep -Eq '^median [0-9.]+ ms, mean [0-9.]+ ms' '$PD_TMP/bench.out'"
sed 's/^/# /' "$PD_TMP/bench.out" 2>/dev/null

pd_done
