#!/bin/bash
# A daemon that can die: SIGTERM unmounts cleanly and leaves boxes running;
# kill -9 leaves a stale mount that the next start clears; running boxes are
# adopted, dead ones read stopped; half-done actions are finished or rolled
# back.
. "$(dirname "$0")/lib.sh"
pd_start

box_pid() { pd_crun state "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])'; }
export -f box_pid

mkdir "$M/boxes/keep" "$M/boxes/dies" "$M/boxes/idle"
echo running >"$M/boxes/keep/state"
echo running >"$M/boxes/dies/state"
echo medium >"$M/boxes/keep/type"
pid_before=$(box_pid keep)

# SIGTERM: clean unmount, boxes keep running.
ok "SIGTERM stops the daemon with status 0" pd_stop
ok "the mount is gone after SIGTERM" bash -c "! grep -q ' $M ' /proc/self/mountinfo"
ok "boxes keep running without the daemon" bash -c "crun_list | grep -qx keep && kill -0 $pid_before"

pd_start
ok "restart mounts again" test -r "$M/version"
ok "a running box is adopted" same "$(cat "$M/boxes/keep/state")" running
ok "same container, same PID 1" same "$(box_pid keep)" "$pid_before"
ok "its type is remembered" same "$(cat "$M/boxes/keep/type")" medium
ok "usage still reads its cgroup" bash -c "[ \$(awk '/^pids/ {print \$2}' '$M/boxes/keep/usage') -ge 1 ]"
ok "a created box stays created" same "$(cat "$M/boxes/idle/state")" created

# kill -9: stale mount; a box dies while the daemon is down.
pd_kill9
ok "after kill -9 the mount is stale (ENOTCONN)" bash -c "! stat '$M/version' 2>&1 | grep -q . || stat '$M/version' 2>&1 | grep -q 'not connected'"
pd_crun kill --all dies KILL
wait_for 10 bash -c "pd_crun state dies | grep -q '\"status\": *\"stopped\"'" ||
	diag "box dies: its container has not stopped"
pd_start
ok "restart after kill -9 clears the stale mount" test -r "$M/version"
ok "the running box is adopted again" same "$(cat "$M/boxes/keep/state")" running
ok "still the same PID 1" same "$(box_pid keep)" "$pid_before"
ok "a box whose container died reads stopped" same "$(cat "$M/boxes/dies/state")" stopped
ok "its dead container is cleaned up" bash -c "! crun_list | grep -qx dies"
ok "and it can start again" bash -c "echo running > '$M/boxes/dies/state' && test \"\$(cat '$M/boxes/dies/state')\" = running"
ok "the adopted box can be stopped" bash -c "echo stopped > '$M/boxes/keep/state' && ! crun_list | grep -qx keep"
ok "the event of the death is recorded" bash -c "snap '$M/boxes/dies/events' | grep -q 'dies stopped (its container ended'"

# Half-done actions, as a crash would leave them (the intent is recorded
# before the work, see engine.h).
pd_stop
db=$D/paddock.db
python3 - "$db" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.execute("UPDATE boxes SET state = 'deleting' WHERE name = 'idle'")
c.execute("INSERT INTO boxes (name, state, type, image, created) VALUES ('half', 'creating', 'small', 'tiny', 0)")
c.commit()
PY
half_id=$(python3 -c "import sqlite3; print(sqlite3.connect('$db').execute(\"SELECT id FROM boxes WHERE name='half'\").fetchone()[0])")
mkdir -p "$D/boxes/$half_id/upper"
pd_start
ok "a box interrupted while being created is rolled back" test ! -e "$M/boxes/half"
ok "its files are removed" test ! -e "$D/boxes/$half_id"
ok "a box interrupted while being deleted is deleted" test ! -e "$M/boxes/idle"
ok "the database agrees" same "$(python3 -c "import sqlite3; print(sqlite3.connect('$db').execute('SELECT group_concat(name) FROM (SELECT name FROM boxes ORDER BY name)').fetchone()[0])")" "dies,keep"
ok "schema is versioned" same "$(python3 -c "import sqlite3; print(sqlite3.connect('$db').execute('PRAGMA user_version').fetchone()[0])")" \
	"$(sed -n 's/^#define STORE_SCHEMA_VERSION \([0-9]*\).*/\1/p' "$TOP_SRCDIR/store/store.h")"
ok "the database is in WAL mode" same "$(python3 -c "import sqlite3; print(sqlite3.connect('$db').execute('PRAGMA journal_mode').fetchone()[0])")" wal

# Two daemons cannot share a data directory or a mount point.
ok "a second daemon on the same data refuses" bash -c "
	! '$PADDOCKD' --config '$PD_TMP/paddock.ini' --foreground > '$PD_TMP/second.err' 2>&1 &&
	grep -q 'another paddockd is using' '$PD_TMP/second.err'"
ok "the first daemon is unaffected" test -r "$M/version"

# Background mode: the parent returns once the tree is mounted.
pd_stop
ok "paddockd without --foreground returns once mounted" bash -c "'$PADDOCKD' --config '$PD_TMP/paddock.ini' && test -r '$M/version'"
bgpid=$(pgrep -f "^$PADDOCKD --config $PD_TMP/paddock.ini\$" | head -1)
ok "and logs to the data directory" test -s "$D/paddockd.log"
[ -n "$bgpid" ] && kill -TERM "$bgpid" && wait_for 10 bash -c "! kill -0 $bgpid"
ok "a bad config stops it with FILE:LINE: reason" bash -c "
	printf '[paddock]\nstop_grace = forever\n' > '$PD_TMP/bad.ini'
	! '$PADDOCKD' --config '$PD_TMP/bad.ini' 2> '$PD_TMP/bad.err' &&
	grep -q '^paddockd: $PD_TMP/bad.ini:2: ' '$PD_TMP/bad.err'"
pd_start
rmdir "$M/boxes/keep" "$M/boxes/dies"
ok "everything is deleted" bash -c "[ -z \"\$(crun_list)\" ]"

pd_done
