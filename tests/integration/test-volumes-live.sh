#!/bin/bash
# Volumes attached to and detached from a running box, live, through the
# mount (FUSE), HTTP and the CLI: the mount appears at /mnt/NAME in the box
# at once (id-mapped, nosuid, nodev, /mnt/NAME made by box root) and goes
# at once. Attacks from inside the box: /mnt a link to a host directory,
# /mnt/NAME a file or a link, a volume detached while a process has it as
# its working directory. While a change runs, the box and the volume are
# busy. kill -9 of the daemon at each step of a live change: after the
# restart the box's mounts and its list agree, and a mount the box prevents
# meanwhile takes the volume out of the list, saying so.
. "$(dirname "$0")/lib.sh"
require_root
PADDOCK=${PADDOCK:-$TOP_BUILDDIR/cli/paddock}

pd_start_with_socket
V=$M/volumes
HOSTDIR=$PD_TMP/hostdir # exists on the host only
mkdir -p "$HOSTDIR"

# uc METHOD PATH [CURL-ARGS...]: the HTTP API over the unix socket (no token).
uc() {
	local method=$1 path=$2
	shift 2
	curl -sS --unix-socket "$SOCK" -X "$method" "$@" "http://paddock/v1/tree/$path"
}
pd() { PADDOCK_CONFIG=/nonexistent/c.ini "$PADDOCK" --url "unix:$SOCK" "$@"; }
# The box's PID 1 on the host (crun's state).
box_pid() {
	pd_crun state "$1" | python3 -c 'import json, sys; print(json.load(sys.stdin)["pid"])'
}
# mounted BOX [DIR]: the mount points under DIR (/mnt) in the box, as its
# PID 1 sees them, read on the host (/proc/PID/mountinfo): no daemon, no job.
mounted() {
	local pid
	pid=$(box_pid "$1") || return 1
	awk -v d="^${2:-/mnt}/" '$5 ~ d {print $5}' "/proc/$pid/mountinfo" | sort | tr '\n' ' '
}
# has_event BOX TEXT: the box's events hold TEXT (read without following).
has_event() {
	snap "$M/boxes/$1/events" | grep -qF "$2"
}
pending() {
	grep -o '"volumes_pending":[a-z]*' "$M/boxes/$1/info"
}
# Nothing of the volumes reached the host directory the box's links name.
host_untouched() {
	same "$(ls -A "$HOSTDIR")" "" && ! grep -qF " $HOSTDIR" /proc/self/mountinfo
}
export -f box_pid mounted has_event uc pd_job
export M SOCK

mkdir "$V/v1" "$V/v2" "$V/v3"
echo from-host >"$V/v1/data/f"
mkdir "$M/boxes/a"
echo running >"$M/boxes/a/state"

# --- attach and detach through the mount ------------------------------------------
ok "no volume mounted at first" same "$(mounted a)" ""
ok "echo v1 > volumes on a running box succeeds" bash -c "echo v1 > '$M/boxes/a/volumes'"
ok "v1 is mounted at /mnt/v1 at once (the box's own mount table)" same "$(mounted a)" "/mnt/v1 "
ok "a job reads the host's file there" same "$(pd_job a 'cat /mnt/v1/f')" from-host
ok "mounted nosuid, nodev and id-mapped" bash -c "
	pd_job a 'grep \" /mnt/v1 \" /proc/mounts' | grep -q 'nosuid,nodev.*idmapped'"
ok "the box sees the volume's files as its root's (0:0)" same "$(pd_job a 'stat -c %u:%g /mnt/v1/f')" 0:0
ok "what box root writes there is host uid 0 on disk (volumes keep ids 0-65535)" bash -c "
	pd_job a 'echo from-box > /mnt/v1/w' >/dev/null && test \"\$(stat -c %u:%g '$D/volumes/v1/data/w')\" = 0:0"
ok "/mnt/v1 was made by box root (its range on the host, not host root)" \
	same "$(stat -c %u "$M/boxes/a/root/mnt/v1")" "$(stat -c %u "$M/boxes/a/root/")"
ok "info: nothing pending" same "$(pending a)" '"volumes_pending":false'
ok "the event names the list, with no 'next start'" bash -c "has_event a 'volumes v1' && ! has_event a 'applies at the next start'"
ok "the list reads back" same "$(cat "$M/boxes/a/volumes")" v1
ok "writing the same list again mounts nothing more" bash -c "
	echo v1 > '$M/boxes/a/volumes' && test \"\$(mounted a)\" = '/mnt/v1 '"
ok "a write naming a missing volume is ENOENT" write_expect ENOENT "$M/boxes/a/volumes" "$(printf 'v1\nnosuch\n')"
ok "and changes no mount" same "$(mounted a)" "/mnt/v1 "
ok "two at once, in one write" bash -c "printf 'v1\nv2\nv3\n' > '$M/boxes/a/volumes' && test \"\$(mounted a)\" = '/mnt/v1 /mnt/v2 /mnt/v3 '"
ok "echo > volumes detaches all of them" bash -c "echo > '$M/boxes/a/volumes'"
ok "none is mounted any more" same "$(mounted a)" ""
ok "their mount points are gone from /mnt" same "$(pd_job a 'ls -A /mnt')" ""
ok "the data stays on the host" same "$(cat "$V/v1/data/f" "$V/v1/data/w")" "from-host
from-box"
ok "the event says none" has_event a "volumes none"

# --- HTTP and the CLI --------------------------------------------------------------
ok "PUT boxes/a/volumes attaches live (204)" same "$(uc PUT boxes/a/volumes --data-binary "$(printf 'v1\nv2\n')" -o /dev/null -w '%{http_code}')" 204
ok "both are mounted" same "$(mounted a)" "/mnt/v1 /mnt/v2 "
ok "PUT with one name less detaches the other" bash -c "
	uc PUT boxes/a/volumes --data-binary 'v2' -o /dev/null && test \"\$(mounted a)\" = '/mnt/v2 '"
ok "a job no longer finds /mnt/v1" pd_job a 'test ! -e /mnt/v1'
ok "paddock volume attach a v1" pd volume attach a v1
ok "mounted" same "$(mounted a)" "/mnt/v1 /mnt/v2 "
ok "paddock volume detach a v2" pd volume detach a v2
ok "unmounted" same "$(mounted a)" "/mnt/v1 "
ok "the mount survives a stop and a start (crun mounts the list)" bash -c "
	echo stopped > '$M/boxes/a/state' && echo running > '$M/boxes/a/state' &&
	test \"\$(mounted a)\" = '/mnt/v1 ' && pd_job a 'cat /mnt/v1/f' | grep -qx from-host"
ok "detach after a restart of the box works too" bash -c "
	echo > '$M/boxes/a/volumes' && test -z \"\$(mounted a)\""

# --- attacks from inside the box -----------------------------------------------------
# /mnt a link to a directory that exists on the host only: resolved inside
# the box it leads nowhere, so the attach is refused; nothing on the host.
ok "the box makes /mnt a link to a host directory" pd_job a "rm -rf /mnt && ln -s '$HOSTDIR' /mnt"
ok "attaching is refused with EEXIST" write_expect EEXIST "$M/boxes/a/volumes" v1
ok "the reason names /mnt" grep -q "volumes: cannot mount volume v1 in box a: its /mnt " "$M/boxes/a/error"
ok "the host directory is untouched, nothing mounted on the host" host_untouched
ok "the list is unchanged" same "$(cat "$M/boxes/a/volumes")" ""
ok "the same through a relative link (../../..$HOSTDIR)" bash -c "
	pd_job a 'rm /mnt && ln -s ../../../../../../..$HOSTDIR /mnt' >/dev/null &&
	write_expect EEXIST '$M/boxes/a/volumes' v1"
ok "the host directory is still untouched" host_untouched
ok "a magic link (/proc/1/root/...) is refused" bash -c "
	pd_job a 'rm /mnt && mkdir -p /opt/m && ln -s /proc/1/root/opt/m /mnt' >/dev/null &&
	write_expect EEXIST '$M/boxes/a/volumes' v1 && test -z \"\$(mounted a /opt)\""
# A link to a directory inside the box is followed there, as crun does at
# start: the box chose where its own mount goes.
ok "/mnt a link to /opt/m inside the box: followed there" bash -c "
	pd_job a 'rm /mnt && ln -s /opt/m /mnt' >/dev/null && echo v1 > '$M/boxes/a/volumes' &&
	test \"\$(mounted a /opt)\" = '/opt/m/v1 ' && pd_job a 'cat /mnt/v1/f' | grep -qx from-host"
ok "and detached from there" bash -c "echo > '$M/boxes/a/volumes' && test -z \"\$(mounted a /opt)\""
ok "the host has no /opt/m" test ! -e /opt/m
pd_job a 'rm /mnt && mkdir /mnt' >/dev/null

ok "/mnt/v1 a file in the box: attach is EEXIST" bash -c "
	pd_job a 'echo mine > /mnt/v1' >/dev/null && write_expect EEXIST '$M/boxes/a/volumes' v1"
ok "the reason says what is there" grep -q "/mnt/v1 there is a file, not a directory" "$M/boxes/a/error"
ok "the box's file is intact, nothing mounted, list unchanged" bash -c "
	test \"\$(pd_job a 'cat /mnt/v1')\" = mine && test -z \"\$(mounted a)\" &&
	test -z \"\$(cat '$M/boxes/a/volumes')\""
ok "/mnt/v1 a link to /etc in the box: EEXIST, /etc not covered" bash -c "
	pd_job a 'rm /mnt/v1 && ln -s /etc /mnt/v1' >/dev/null && write_expect EEXIST '$M/boxes/a/volumes' v1 &&
	grep -q '/mnt/v1 there is a symbolic link' '$M/boxes/a/error' && test -z \"\$(mounted a /etc)\""
ok "/mnt/v1 a link to a host directory: EEXIST, host untouched" bash -c "
	pd_job a 'rm /mnt/v1 && ln -s $HOSTDIR /mnt/v1' >/dev/null && write_expect EEXIST '$M/boxes/a/volumes' v1" &&
	host_untouched
ok "a failed write in a list of two mounts neither" bash -c "
	write_expect EEXIST '$M/boxes/a/volumes' \"\$(printf 'v2\nv1\n')\" && test -z \"\$(mounted a)\" &&
	test -z \"\$(cat '$M/boxes/a/volumes')\""
pd_job a 'rm /mnt/v1' >/dev/null

# A process with its working directory in the volume: the unmount is lazy.
echo v1 >"$M/boxes/a/volumes"
mkdir "$M/boxes/a/exec/holder"
echo 'cd /mnt/v1 && exec sleep 600' >"$M/boxes/a/exec/holder/cmd"
hpid=
holding() {
	wait_for 10 grep -Eqx '[0-9]+' "$M/boxes/a/exec/holder/pid" && hpid=$(cat "$M/boxes/a/exec/holder/pid")
	[ -n "$hpid" ] && wait_for 10 test -f "/proc/$hpid/cwd/f" && return 0
	diag "holder: pid [$hpid], $(cat "$M/boxes/a/exec/holder/status"): $(snap "$M/boxes/a/exec/holder/output")"
	return 1
}
ok "a job holds /mnt/v1 as its working directory" holding
ok "detach while a process has /mnt/v1 as its cwd succeeds" bash -c "echo > '$M/boxes/a/volumes'"
ok "the mount is gone from the box's table" same "$(mounted a)" ""
ok "the event says it was lazy, and why" has_event a "volume v1 detached lazily: a process in the box still uses /mnt/v1"
ok "a new process finds no /mnt/v1" pd_job a 'test ! -e /mnt/v1'
ok "the process keeps its cwd in the volume until it lets go (documented)" \
	bash -c "test -f /proc/$hpid/cwd/f"
echo kill >"$M/boxes/a/exec/holder/ctl"
ok "the box's list is empty, nothing pending" bash -c "
	test -z \"\$(cat '$M/boxes/a/volumes')\" && test \"\$(grep -o '\"volumes_pending\":[a-z]*' '$M/boxes/a/info')\" = '\"volumes_pending\":false'"

# --- while a change runs -------------------------------------------------------------
echo v1 >"$M/boxes/a/volumes"
pd_stop
HOLD=$PD_TMP/hold
mkdir -p "$HOLD"
export PADDOCK_HOLD=volume-live:$HOLD
pd_start
unset PADDOCK_HOLD
ok "the box's mount survives a daemon restart, untouched" same "$(mounted a)" "/mnt/v1 "
touch "$HOLD/arm"
echo >"$M/boxes/a/volumes" &
writer=$!
ok "a detach is held before it unmounts" wait_for 10 test -e "$HOLD/held"
ok "rmdir volumes/v1 is EBUSY while it is being detached" bash -c "! rmdir '$V/v1' 2>/dev/null && test -d '$V/v1'"
ok "the reason says so" grep -q "being detached from a running box" "$V/v1/error"
ok "a state write is EBUSY" write_expect EBUSY "$M/boxes/a/state" stopped
# (Through HTTP: the kernel holds a second write(2) to the same file until
# the first returns.)
ok "another volumes write is refused: 409, busy" bash -c "
	uc PUT boxes/a/volumes --data-binary v2 -w '%{http_code}' | tr -d '\n' | grep -q 'box a is busy with another change.*409'"
ok "the list already reads the new value (recorded first)" same "$(cat "$M/boxes/a/volumes")" ""
rm -f "$HOLD/held"
ok "the detach finishes" wait "$writer"
ok "unmounted" same "$(mounted a)" ""

# --- kill -9 at each step of a live change ------------------------------------------------
# crash STEP LIST: the daemon started with PADDOCK_FAULT=STEP dies while
# LIST is written to box a's volumes; box a runs on. The daemon is down
# afterwards, whatever happened. crash_at: then it starts again normally.
crash() {
	local rc
	pd_stop
	export PADDOCK_FAULT=$1
	pd_start
	unset PADDOCK_FAULT
	# One write(2): a shell's printf may write line by line.
	python3 -c 'import os, sys; os.write(os.open(sys.argv[1], os.O_WRONLY | os.O_TRUNC), sys.argv[2].encode())' \
		"$M/boxes/a/volumes" "$2" 2>/dev/null
	if ! wait_for 30 pd_ended "$PD_PID"; then
		diag "the daemon did not die at $1"
		pd_stop
		return 1
	fi
	wait "$PD_PID" 2>/dev/null
	rc=$?
	PD_PID=
	[ $rc = 137 ] || { diag "the daemon did not die at $1 (status $rc)"; return 1; }
	[ -n "$(box_pid a)" ] || { diag "box a died with the daemon"; return 1; }
}
crash_at() {
	local rc
	crash "$@"
	rc=$?
	pd_start
	return $rc
}
# agree BOX: its list, its mounts and the record of them agree; no live
# change is left over.
agree() {
	local want
	want=$(sed 's|^|/mnt/|' "$M/boxes/$1/volumes" | sort | tr '\n' ' ')
	same "$(mounted "$1")" "$want" &&
		same "$(pending "$1")" '"volumes_pending":false' &&
		test ! -e "$D/boxes/$(box_id "$1")/bundle/volumes-live"
}
box_id() {
	python3 -c "import sqlite3; print(sqlite3.connect('$D/paddock.db').execute(\"SELECT id FROM boxes WHERE name = '$1'\").fetchone()[0])"
}
for step in volume-live-recorded volume-live-applied; do
	ok "kill -9 at $step while attaching: the daemon dies there" crash_at $step "$(printf 'v1\nv2\n')"
	ok "after the restart v1 and v2 are listed" same "$(tr '\n' ' ' <"$M/boxes/a/volumes")" "v1 v2 "
	ok "and mounted" same "$(mounted a)" "/mnt/v1 /mnt/v2 "
	ok "list and mounts agree, nothing left over ($step, attach)" agree a
	ok "kill -9 at $step while detaching: the daemon dies there" crash_at $step v2
	ok "after the restart only v2 is listed" same "$(cat "$M/boxes/a/volumes")" v2
	ok "and mounted" same "$(mounted a)" "/mnt/v2 "
	ok "list and mounts agree, nothing left over ($step, detach)" agree a
done
# The box prevents the mount while the daemon is down: the list follows.
ok "kill -9 after recording v3, before mounting it" crash volume-live-recorded "$(printf 'v2\nv3\n')"
mkdir -p "$D/boxes/$(box_id a)/rootfs/mnt"
rm -rf "$D/boxes/$(box_id a)/rootfs/mnt/v3"
echo blocker >"$D/boxes/$(box_id a)/rootfs/mnt/v3"
pd_start
ok "after the restart v3 is out of the list (the box has a file there)" same "$(cat "$M/boxes/a/volumes")" v2
ok "the event says why" has_event a "volume v3 taken out of the list: it could not be mounted after a restart"
ok "list and mounts agree" agree a
ok "the box's file is intact" same "$(pd_job a 'cat /mnt/v3')" blocker
ok "every volume's data is intact" same "$(cat "$V/v1/data/f")" from-host

pd_done
