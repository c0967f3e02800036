#!/bin/bash
# The paddock CLI against a real daemon over HTTP: the owner's setup link,
# `paddock login`, then the documented first test verbatim in a debian box
# (new, push, exec npm test, stop), pull, exit codes, separate streams,
# ls/info/ttl/rm, the unix socket, bad input, and token revocation.
. "$(dirname "$0")/lib.sh"
require_root
PADDOCK=${PADDOCK:-$TOP_BUILDDIR/cli/paddock}

pd_use_debian
pd_setup || exit 1

# A loopback port and a private socket for this daemon.
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
SOCK=$PD_TMP/run/paddock.sock
set_key() { # set_key KEY VALUE: in the [paddock] section of the test config
	if grep -q "^$1 *=" "$PD_TMP/paddock.ini"; then
		sed -i "s|^$1 *=.*|$1 = $2|" "$PD_TMP/paddock.ini"
	else
		sed -i "s|^\[paddock\]$|[paddock]\n$1 = $2|" "$PD_TMP/paddock.ini"
	fi
}
set_key listen "127.0.0.1:$PORT"
set_key socket "$SOCK"
pd_start
URL=http://127.0.0.1:$PORT
if ! wait_for 10 curl -s -o /dev/null "$URL/"; then
	diag "the daemon does not listen on $URL"
	exit 1
fi

export PADDOCK_CONFIG=$PD_TMP/cli/config.ini
unset PADDOCK_URL PADDOCK_TOKEN
paddock() { "$PADDOCK" "$@"; }
export -f paddock
export PADDOCK

# --- the owner's setup link, then login -------------------------------------
PW='correct horse battery'
ok "the setup link is in DATA/setup-url" wait_for 10 test -s "$D/setup-url"
link=$(cat "$D/setup-url")
secret=${link##*token=}
ok "the owner's password is set through POST /v1/setup" same "$(curl -sS -o /dev/null \
	-w '%{http_code}' -H 'Content-Type: application/json' \
	--data "{\"token\":\"$secret\",\"password\":\"$PW\"}" "$URL/v1/setup")" 200
ok "a wrong password: login fails with the server's reason" bash -c "
	! echo wrong-password | paddock login '$URL' --password-stdin 2>'$PD_TMP/err' &&
	grep -q 'wrong password' '$PD_TMP/err'"
sleep 1 # past the failed attempt's delay
ok "paddock login URL --password-stdin" bash -c "echo '$PW' | paddock -q login '$URL' --password-stdin"
ok "the config file is 0600 and holds url and token" bash -c "
	test \"\$(stat -c %a '$PADDOCK_CONFIG')\" = 600 &&
	grep -qx 'url = $URL' '$PADDOCK_CONFIG' && grep -q '^token = pd_' '$PADDOCK_CONFIG'"

# --- the project --------------------------------------------------------------
proj=$PD_TMP/project
pd_node_project "$proj"
cat >"$proj/test/results.test.js" <<'JS'
const test = require('node:test');
const fs = require('node:fs');
const sum = require('../sum.js');
test('writes results', () => fs.writeFileSync('results.txt', `sum(2, 3) = ${sum(2, 3)}\n`));
JS
ln -s sum.js "$proj/link.js"

# --- the documented first test, verbatim ------------------------------------------
cd "$proj" || exit 1
paddock new --type small --ttl 3600 >"$PD_TMP/new.out" 2>"$PD_TMP/new.err"
ok "paddock new --type small --ttl 3600 prints the name" \
	grep -Eqx 'box-[a-z0-9]{6}' "$PD_TMP/new.out"
B=$(cat "$PD_TMP/new.out")
ok "it is the current box" same "$(paddock current)" "$B"
ok "the box runs with type small" bash -c "
	test \"\$(cat '$M/boxes/$B/state')\" = running && test \"\$(cat '$M/boxes/$B/type')\" = small"
ok "paddock push current . --to /config/project" paddock push current . --to /config/project
ok "the project is in the box, symlink as a symlink" bash -c "
	cmp '$proj/test/sum.test.js' '$M/boxes/$B/root/config/project/test/sum.test.js' &&
	test \"\$(readlink '$M/boxes/$B/root/config/project/link.js')\" = sum.js"
paddock exec current -- bash -lc 'cd /config/project && npm test' >"$PD_TMP/test.out" 2>"$PD_TMP/test.err"
rc=$?
ok "paddock exec current -- bash -lc 'cd /config/project && npm test' exits 0" same "$rc" 0
ok "the test output reaches stdout" grep -q '# pass 3' "$PD_TMP/test.out"
cd / || exit 1

ok "exec exits with the job's code" bash -c "paddock exec current -- sh -c 'exit 7'; test \$? = 7"
ok "stdout and stderr stay separate" bash -c "
	paddock exec current -- sh -c 'echo to-out; echo to-err >&2' >'$PD_TMP/o' 2>'$PD_TMP/e' &&
	test \"\$(cat '$PD_TMP/o')\" = to-out && test \"\$(cat '$PD_TMP/e')\" = to-err"
ok "one word is a shell line" same "$(paddock exec current -- 'echo a b c | wc -w')" 3
ok "several words are quoted" same "$(paddock exec current -- printf '%s|' 'a b' "it's" '$HOME')" \
	"a b|it's|\$HOME|"
ok "--env and --cwd" same "$(paddock exec --env GREETING='hi there' --cwd /tmp current -- \
	'echo "$GREETING $(pwd)"')" "hi there /tmp"

sed -i 's/sum(2, 3), 5/sum(2, 3), 6/' "$proj/test/sum.test.js"
ok "push again with a broken test" bash -c "cd '$proj' && paddock push current . --to /config/project"
ok "a failing test gives a non-zero exit" bash -c "
	! paddock exec current -- bash -lc 'cd /config/project && npm test' >'$PD_TMP/fail.out' 2>&1 &&
	grep -q '# fail 1' '$PD_TMP/fail.out'"

ok "ls lists the box as running" bash -c "paddock ls | grep -Eq '^$B +running +small '"
ok "ls --json" bash -c "paddock ls --json | python3 -c '
import json, sys
rows = json.load(sys.stdin)
assert any(r[\"name\"] == \"$B\" and r[\"state\"] == \"running\" for r in rows), rows'"
ok "info is the box's JSON" bash -c "paddock info current | python3 -c '
import json, sys; o = json.load(sys.stdin); assert o[\"state\"] == \"running\", o'"
ok "ttl sets the countdown" bash -c "paddock ttl current 120 && t=\$(cat '$M/boxes/$B/ttl') && [ \"\$t\" -le 120 ] && [ \"\$t\" -gt 100 ]"
ok "ttl none" bash -c "paddock ttl current none && test \"\$(cat '$M/boxes/$B/expires')\" = never"
ok "the unix socket needs no token" bash -c "PADDOCK_CONFIG=/nonexistent/c.ini paddock --url 'unix:$SOCK' ls | grep -q '^$B '"

ok "paddock stop current" paddock stop current
ok "the box is stopped" same "$(cat "$M/boxes/$B/state")" stopped
out=$PD_TMP/pulled
ok "pull a file the test wrote" paddock pull current /config/project/results.txt --to "$out"
ok "it is the box's file" bash -c "
	cmp '$out/results.txt' '$M/boxes/$B/root/config/project/results.txt' &&
	grep -qx 'sum(2, 3) = 5' '$out/results.txt'"
ok "pull a directory: its contents land in DIR" bash -c "
	paddock pull current /config/project --to '$out/tree' &&
	cmp '$proj/package.json' '$out/tree/package.json' &&
	test \"\$(readlink '$out/tree/link.js')\" = sum.js"

# --- bad input ----------------------------------------------------------------
ok "an unknown command exits 2" bash -c "paddock frobnicate 2>/dev/null; test \$? = 2"
ok "a bad box name exits 2" bash -c "paddock info 'Bad/Name' 2>/dev/null; test \$? = 2"
ok "a box that does not exist: the server's reason, exit 1" bash -c "
	paddock info nosuchbox 2>'$PD_TMP/err'; rc=\$?
	test \$rc = 1 && grep -q '^paddock: ' '$PD_TMP/err'"
ok "a failed command does not change the current box" same "$(paddock current)" "$B"
ok "push of a missing file changes nothing" bash -c "
	! paddock push current /nonexistent/x --to /config/other 2>/dev/null &&
	test ! -e '$M/boxes/$B/root/config/other'"

ok "paddock rm current" paddock rm current
ok "the box is gone" test ! -e "$M/boxes/$B"
ok "and there is no current box" bash -c "! paddock current 2>/dev/null"

# --- tokens -----------------------------------------------------------------------
host=$(hostname)
ok "token ls shows this CLI's token" bash -c "paddock token ls | grep -q 'paddock-cli@$host'"
id=$(paddock token ls --json | python3 -c '
import json, sys
print(next(r["id"] for r in json.load(sys.stdin) if r["label"].startswith("paddock-cli@")))')
ok "token revoke ID" paddock token revoke "$id"
ok "the revoked token is refused with the server's reason" bash -c "
	paddock ls 2>'$PD_TMP/err'; rc=\$?
	test \$rc = 1 && grep -q 'missing or invalid token' '$PD_TMP/err'"

pd_done
