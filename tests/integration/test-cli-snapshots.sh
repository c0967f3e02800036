#!/bin/bash
# The paddock CLI's snapshot and volume commands against a real daemon over
# its unix socket: new, exec, snapshot (prints the id), snapshots (and
# --json), fork (both diverge), stop (takes a snapshot), restore (by id or
# label; a running box's jobs it ended are said), volume
# create/ls/attach/detach/export/import/rm, and the server's reasons for
# bad requests (exit 1).
. "$(dirname "$0")/lib.sh"
require_root
PADDOCK=${PADDOCK:-$TOP_BUILDDIR/cli/paddock}
command -v zstd >/dev/null || skip_all "needs zstd"

pd_start_with_socket
H=$PD_TMP/host
mkdir -p "$H"

pd() { PADDOCK_CONFIG=$PD_TMP/cli.ini "$PADDOCK" --url "unix:$SOCK" "$@"; }
export -f pd
export PADDOCK SOCK PD_TMP M

# --- snapshots ---------------------------------------------------------------
ok "paddock new --name s1" bash -c "pd new --name s1 >'$H/new.out' && same \"\$(cat '$H/new.out')\" s1"
ok "write a file with paddock exec" pd exec s1 -- sh -c 'echo one > /f1'
pd snapshot s1 first >"$H/snap.out" 2>"$H/snap.err"
ok "paddock snapshot BOX LABEL exits 0" same "$?" 0
SNAP1=$(cat "$H/snap.out")
ok "it prints the new snapshot's id" bash -c "[[ '$SNAP1' =~ ^s1-[0-9]+\$ ]] && test -d '$M/snapshots/$SNAP1'"
ok "the snapshot has the label" same "$(cat "$M/snapshots/$SNAP1/label")" first
ok "paddock snapshots BOX lists it" bash -c "pd snapshots s1 | grep -Eq '^$SNAP1 +s1 +first +'"
ok "paddock snapshots lists it too" bash -c "pd snapshots | grep -q '^$SNAP1 '"
ok "paddock snapshots BOX --json" bash -c "pd snapshots s1 --json | python3 -c '
import json, sys
rows = json.load(sys.stdin)
assert [r[\"id\"] for r in rows] == [\"$SNAP1\"], rows
assert rows[0][\"box\"] == \"s1\" and rows[0][\"label\"] == \"first\", rows
'"
SNAP2=$(pd snapshot s1)
ok "a snapshot without a label is labelled manual, with a new id" bash -c "[ '$SNAP2' != '$SNAP1' ] && same \"\$(cat '$M/snapshots/$SNAP2/label')\" manual"

ok "paddock fork BOX NEW prints the new name" same "$(pd fork s1 s2)" s2
ok "the fork has the file" same "$(pd exec s2 -- cat /f1 2>/dev/null || cat "$M/boxes/s2/root/f1")" one
pd exec s1 -- sh -c 'echo a > /only-s1'
echo b >"$M/boxes/s2/root/only-s2"
ok "the two diverge" bash -c "test ! -e '$M/boxes/s2/root/only-s1' && test ! -e '$M/boxes/s1/root/only-s2' && test -e '$M/boxes/s1/root/only-s1'"

n_before=$(pd snapshots s1 | tail -n +2 | wc -l)
ok "paddock stop" pd stop s1
ok "stop takes a snapshot labelled stop" bash -c "same \$(pd snapshots s1 | tail -n +2 | wc -l) $((n_before + 1)) && pd snapshots s1 | grep -Eq ' stop +'"
ok "paddock start" pd start s1
pd exec s1 -- sh -c 'echo later > /later'
pd exec s1 -- sleep 1000 >/dev/null 2>&1 &
exec_pid=$!
wait_for 10 bash -c "grep -lx 'sleep 1000' '$M'/boxes/s1/exec/*/cmd >/dev/null" >/dev/null
job=$(basename "$(dirname "$(grep -lx 'sleep 1000' "$M"/boxes/s1/exec/*/cmd | grep -v /last/)")")
wait_for 10 bash -c "same \"\$(cat '$M/boxes/s1/exec/$job/status')\" running" >/dev/null
pd restore s1 "$SNAP1" >"$H/o" 2>"$H/e"
ok "paddock restore BOX SNAP" same "$?" 0
ok "changes after the snapshot are gone, older ones stay" bash -c "
	test ! -e '$M/boxes/s1/root/later' && test ! -e '$M/boxes/s1/root/only-s1' &&
	same \"\$(cat '$M/boxes/s1/root/f1')\" one"
ok "it prints the id restored" same "$(cat "$H/o")" "$SNAP1"
ok "it says the running box was stopped, which job that ended, and where its files went" \
	grep -Eq "^paddock: s1 was running: stopped first \(which ended its jobs $job\), restored, started again; its files from before are in snapshot s1-[0-9]+\$" "$H/e"
wait "$exec_pid"
ok "the paddock exec following that job ends with its code (SIGTERM: 143)" same "$?" 143
ok "paddock restore BOX LABEL (a label one snapshot has)" bash -c "same \"\$(pd restore s1 manual 2>/dev/null)\" '$SNAP2'"
pd restore s1 stop >"$H/o" 2>"$H/e"
rc=$?
ok "a label several snapshots have exits 1, naming them" bash -c "same $rc 1 && grep -q 'snapshots of s1 have the label \"stop\" (s1-' '$H/e' && test ! -s '$H/o'"

# Errors: the server's reason, exit 1.
pd restore s1 nosuch-99 >"$H/o" 2>"$H/e"
rc=$?
ok "restore to an unknown snapshot exits 1" same "$rc" 1
ok "with the server's reason" grep -q "no snapshot nosuch-99" "$H/e"
pd snapshot nobox >"$H/o" 2>"$H/e"
rc=$?
ok "snapshot of an unknown box exits 1 with a reason" bash -c "same $rc 1 && grep -qi 'nobox' '$H/e' && test ! -s '$H/o'"
pd fork s1 s2 >"$H/o" 2>"$H/e"
rc=$?
ok "fork onto an existing name exits 1: already exists" bash -c "same $rc 1 && grep -q 'already exists' '$H/e'"
pd snapshots nobox >"$H/o" 2>"$H/e"
ok "snapshots of an unknown box exits 1" same "$?" 1

# --- volumes -----------------------------------------------------------------
ok "paddock volume create" pd volume create v1
ok "paddock volume ls lists it" bash -c "pd volume ls | grep -q '^v1 '"
# exec started s2; stopped, it gets the volume from crun at its start.
ok "paddock stop s2" pd stop s2
ok "paddock volume attach BOX NAME" pd volume attach s2 v1
ok "the box's volumes list has it" same "$(cat "$M/boxes/s2/volumes")" v1
ok "paddock volume ls shows the box" bash -c "pd volume ls | grep -Eq '^v1 +[0-9]+ +s2\$'"
ok "paddock volume ls --json" bash -c "pd volume ls --json | python3 -c '
import json, sys
rows = json.load(sys.stdin)
assert [r[\"name\"] for r in rows] == [\"v1\"], rows
'"
ok "the volume is mounted at /mnt/v1 once the box starts" bash -c "pd start s2 && pd exec s2 -- sh -c 'mkdir -p /mnt/v1/sub && echo deep > /mnt/v1/sub/deep'"
ok "paddock volume export NAME -o FILE" bash -c "pd volume export v1 -o '$H/v1.tar.zst' && zstd -dc '$H/v1.tar.zst' | tar t | grep -qx sub/deep"
pd volume rm v1 >"$H/o" 2>"$H/e"
rc=$?
ok "volume rm while attached exits 1 with the reason" bash -c "same $rc 1 && grep -q 's2' '$H/e'"
ok "paddock volume detach BOX NAME" pd volume detach s2 v1
ok "the box's list is empty" same "$(cat "$M/boxes/s2/volumes")" ""
pd volume detach s2 v1 >"$H/o" 2>"$H/e"
ok "detaching again exits 1: not attached" bash -c "same $? 1 && grep -q 'not attached' '$H/e'"
ok "paddock volume create v2, import NAME FILE" bash -c "pd volume create v2 && pd volume import v2 '$H/v1.tar.zst'"
ok "the imported volume has the data" same "$(cat "$M/volumes/v2/data/sub/deep")" deep
ok "paddock volume rm" bash -c "pd volume rm v1 && pd volume rm v2"
ok "volume ls no longer lists them" bash -c "! pd volume ls | grep -Eq '^v[12] '"
pd volume create 'Bad/Name' >"$H/o" 2>"$H/e"
ok "volume create with a bad name is a usage error (exit 2)" bash -c "same $? 2 && grep -q 'invalid name' '$H/e'"
pd volume rm nosuch >"$H/o" 2>"$H/e"
ok "volume rm of an unknown volume exits 1" bash -c "same $? 1 && grep -q 'nosuch' '$H/e'"

pd stop s1 >/dev/null 2>&1
pd stop s2 >/dev/null 2>&1
ok "paddock rm" bash -c "pd rm s1 && pd rm s2"
pd_done
