#!/bin/bash
# The engine does not stall while a box's files are walked (its `usage`,
# `info`): the walk is held at a hold point (PADDOCK_HOLD, see pd_hold() in
# common/util.h) for as long as the test likes, and meanwhile every other
# read and write of that box and of the others completes. Proven by the
# hold, not by timing: with the walk under the engine lock, these
# operations would wait for the release, which comes only after them (each
# has a 10 s timeout, far above what any takes).
#
# Also what a reader of the walked box sees: with no earlier result it
# waits for the walk in flight a moment (ENG_DU_WAIT_USEC, 100 ms), then
# gets 0 (nothing measured yet) rather than hold a thread of the tree for
# as long as the walk takes; with one, it gets that result at once.
#
# And a delete that fails while a walk runs: the walk ends while the box is
# being deleted, the delete then fails (a fake crun, through the `crun`
# config key, makes `state` and `kill` wait for a go file and fail) and the
# box stays: its next reader gets an answer (the walk was once left marked
# running forever, and every later reader of the box waited for it).
. "$(dirname "$0")/lib.sh"
# Walks are of directory uppers: a box's image says its usage at once
# (statfs), so its boxes keep directories.
PD_DISK_LIMIT=off
pd_setup || exit 1
HOLD=$PD_TMP/hold
mkdir "$HOLD"
export PADDOCK_HOLD=disk-walk:$HOLD
pd_fake_crun
pd_start
pd_owner || { diag "cannot set up the owner"; exit 1; }

B=$M/boxes
mkdir "$B/big" "$B/other"
for i in $(seq 1 200); do echo "file $i" >"$B/big/root/f$i"; done

T=10 # seconds: a bound no operation here comes near unless it waits for the walk

# hold_walk FILE [BOX]: reads boxes/BOX/FILE (BOX: big) in the background (PID in BG) and
# waits until its walk is held (pd_hold_wait, lib.sh).
hold_walk() {
	touch "$HOLD/arm"
	cat "$B/${2:-big}/$1" >"$PD_TMP/$1.out" 2>&1 &
	BG=$!
	pd_hold_wait
}
release() {
	pd_hold_release
}
# quick COMMAND...: the command succeeds within T seconds (measured: a
# process waiting in the kernel outlives any timeout).
quick() {
	local start=$(date +%s%N) rc ms
	timeout $T "$@" >/dev/null
	rc=$?
	ms=$((($(date +%s%N) - start) / 1000000))
	[ $rc -eq 0 ] && [ $ms -lt $((T * 1000)) ] && return 0
	diag "took ${ms} ms, status $rc: $*"
	return 1
}
# gone PID: waits (at most T seconds) until the process has ended.
gone() {
	timeout $T tail --pid="$1" -f /dev/null
}
is_json() {
	python3 -c 'import json,sys; json.load(sys.stdin)' <"$1"
}
export -f is_json gone quick
export T B PD_TMP

ok "a walk of box big is held" hold_walk usage
ok "its reader waits for the walk" bash -c "sleep 0.2; kill -0 $BG"

# While the walk is held: reads and writes of another box and of big itself.
ok "read: other/state" quick cat "$B/other/state"
ok "read: other/info, valid JSON (its own walk is not held)" \
	quick bash -c "cat '$B/other/info' >'$PD_TMP/other-info' && is_json '$PD_TMP/other-info'"
ok "read: other/ttl, other/usage" quick cat "$B/other/ttl" "$B/other/usage"
ok "read: big/state, big/ttl, big/error, big/type" \
	quick cat "$B/big/state" "$B/big/ttl" "$B/big/error" "$B/big/type"
ok "write: other/ttl" quick bash -c "echo 3600 >'$B/other/ttl'"
ok "write: big/ttl" quick bash -c "echo 7200 >'$B/big/ttl'"
ok "write: other/state running (a container starts)" quick bash -c "echo running >'$B/other/state'"
ok "mkdir and rmdir of a third box" quick bash -c "mkdir '$B/third' && rmdir '$B/third'"
ok "list boxes" quick bash -c "ls '$B' | grep -qx other"
ok "over HTTP: other/info and big/state" quick bash -c "hc -f boxes/other/info && hc -f boxes/big/state"
ok "another reader of big/usage waits a moment, then has 0 (nothing measured yet)" \
	bash -c "quick cp '$B/big/usage' '$PD_TMP/usage2.out' &&
		awk '/^disk_bytes/ {exit \$2 != 0}' '$PD_TMP/usage2.out'"
ok "...and so do readers of big/info over HTTP, at once" \
	quick bash -c "pids=; for i in 1 2 3 4 5 6 7 8 9 10 11 12; do hc -f boxes/big/info >/dev/null & pids=\"\$pids \$!\"; done
		for p in \$pids; do wait \$p || exit 1; done"
ok "the first reader is still held" kill -0 $BG

release
ok "released: the first reader gets its answer" gone $BG
wait "$BG"
ok "...with disk_bytes > 0" bash -c "awk '/^disk_bytes/ {exit !(\$2 > 0)}' '$PD_TMP/usage.out'"
ok "a reader now has that result" bash -c "
	quick cp '$B/big/usage' '$PD_TMP/usage2.out' &&
	same \"\$(grep disk_bytes '$PD_TMP/usage2.out')\" \"\$(grep disk_bytes '$PD_TMP/usage.out')\""

# A reader that comes while a later walk runs gets the last result at once.
sleep 5.2 # the result is reused for 5 s (ENG_DU_CACHE_USEC): let it age
ok "a second walk of big is held (info)" hold_walk info
ok "meanwhile big/usage answers at once with the last result" bash -c "
	quick cp '$B/big/usage' '$PD_TMP/usage3.out' &&
	same \"\$(grep disk_bytes '$PD_TMP/usage3.out')\" \"\$(grep disk_bytes '$PD_TMP/usage.out')\""
ok "and other/info too" bash -c "quick cp '$B/other/info' '$PD_TMP/other-info2' && is_json '$PD_TMP/other-info2'"
release
wait "$BG"
ok "released: big/info is valid JSON with the usage" bash -c "is_json '$PD_TMP/info.out' && grep -q disk_bytes '$PD_TMP/info.out'"

# --- a delete that fails while a walk runs -------------------------------------
mkdir "$B/doomed"
echo running >"$B/doomed/state"
for i in $(seq 1 50); do echo "file $i" >"$B/doomed/root/f$i"; done
ok "a walk of box doomed is held" hold_walk usage doomed
mkdir "$FLAG"
rmdir "$B/doomed" 2>"$PD_TMP/rmdir.err" &
RM=$!
ok "its delete waits in crun" wait_for $T test -e "$FLAG/waiting"
release
gone $BG
wait $BG
rc=$?
ok "the walk ends while the box is being deleted: its reader fails" [ $rc -ne 0 ]
diag "$(cat "$PD_TMP/usage.out")"
touch "$FLAG/go"
gone $RM
wait $RM
rc=$?
ok "crun fails: the delete fails" [ $rc -ne 0 ]
diag "$(cat "$PD_TMP/rmdir.err")"
rm -rf "$FLAG"
ok "the box stays" same "$(cat "$B/doomed/state")" running
ok "its next reader has an answer, not a wait for that walk" bash -c "
	quick cp '$B/doomed/usage' '$PD_TMP/usage4.out' &&
	awk '/^disk_bytes/ {exit !(\$2 > 0)}' '$PD_TMP/usage4.out'"
ok "and it can be deleted" bash -c "echo stopped >'$B/doomed/state' && rmdir '$B/doomed'"

echo stopped >"$B/other/state"
rmdir "$B/big" "$B/other"
pd_done
