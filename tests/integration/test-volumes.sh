#!/bin/bash
# Named volumes: mkdir/rmdir, the data/ link, size and boxes, a box's
# volumes list (bad writes keep the old list), data written by one box read
# by another after the first is deleted, EBUSY while attached, export and
# import round trip, hostile archives, the HTTP data/ route, the CLI, and
# kill -9 at every step of create and delete.
. "$(dirname "$0")/lib.sh"
require_root
PADDOCK=${PADDOCK:-$TOP_BUILDDIR/cli/paddock}
command -v zstd >/dev/null || skip_all "needs zstd"

pd_start_with_socket
V=$M/volumes
H=$PD_TMP/host
mkdir -p "$H"

# hashes DIR: sha256 of every file under DIR (followed through the link),
# with names relative to it.
hashes() {
	(cd "$1/" && find . -type f -print0 | sort -z | xargs -0 -r sha256sum)
}
# job BOX CMD: runs CMD in the box, prints its stdout; fails unless it exits 0.
job() {
	echo "$2" >"$M/boxes/$1/exec/new" || return 1
	local last
	last=$(readlink "$M/boxes/$1/exec/last")
	same "$(timeout 20 cat "$M/boxes/$1/exec/$last/exit")" 0 || {
		cat "$M/boxes/$1/exec/$last/stderr" | sed 's/^/# /'
		return 1
	}
	cat "$M/boxes/$1/exec/$last/stdout"
}

export -f job uc hashes errno_of same diag
export SOCK M

# --- create, the files -----------------------------------------------------------
ok "volumes/ starts empty" same "$(ls -A "$V")" ""
ok "mkdir volumes/v1 creates a volume" mkdir "$V/v1"
ok "it lists its files" same "$(ls "$V/v1" | tr '\n' ' ')" "boxes data error export import size "
ok "data leads to RUN/volumes/v1, a view of DATA/volumes/v1/data" bash -c "
	[ \"\$(readlink '$V/v1/data')\" = '$PD_TMP/run/volumes/v1' ] &&
	[ \"\$(stat -c %d:%i '$PD_TMP/run/volumes/v1')\" = \"\$(stat -c %d:%i '$D/volumes/v1/data')\" ]"
ok "the data directory exists on the host" test -d "$D/volumes/v1/data"
ok "size is a number" grep -Eqx '[0-9]+' "$V/v1/size"
ok "boxes is empty" same "$(cat "$V/v1/boxes")" ""
ok "import is write-only, export read-only" same "$(stat -c %a "$V/v1/import") $(stat -c %a "$V/v1/export")" "220 440"
ok "a bad name is EINVAL" same "$(errno_of "os.mkdir('$V/Bad_Name')")" EINVAL
ok "a taken name is EEXIST" same "$(errno_of "os.mkdir('$V/v1')")" EEXIST
ok "the volume is recorded in the store" same "$(python3 -c "import sqlite3; print(sqlite3.connect('$D/paddock.db').execute(\"SELECT name, state FROM volumes\").fetchall())")" "[('v1', 'ready')]"

# --- a box's volumes list ------------------------------------------------------------
mkdir "$M/boxes/a"
ok "a box's volumes file is rw and empty" same "$(stat -c %a "$M/boxes/a/volumes"):$(cat "$M/boxes/a/volumes")" "660:"
ok "a bad name in the list is EINVAL" write_expect EINVAL "$M/boxes/a/volumes" "$(printf 'v1\nBAD!\n')"
ok "the reason names the line" grep -q 'volumes: line 2: invalid volume name "BAD!"' "$M/boxes/a/error"
ok "a duplicate is EINVAL" write_expect EINVAL "$M/boxes/a/volumes" "$(printf 'v1\nv1\n')"
ok "the reason names its line" grep -q 'line 2: volume v1 listed twice' "$M/boxes/a/error"
ok "a volume that does not exist is ENOENT" write_expect ENOENT "$M/boxes/a/volumes" "$(printf 'v1\n\nnosuch\n')"
ok "the reason names its line" grep -q 'line 3: no volume named nosuch' "$M/boxes/a/error"
ok "the list is unchanged after bad writes" same "$(cat "$M/boxes/a/volumes")" ""
ok "echo v1 > volumes attaches it" bash -c "echo v1 > '$M/boxes/a/volumes'"
ok "the list reads back" same "$(cat "$M/boxes/a/volumes")" v1
ok "a bad write keeps the old list" bash -c "! echo 'x y' > '$M/boxes/a/volumes' 2>/dev/null && test \"\$(cat '$M/boxes/a/volumes')\" = v1"
ok "volumes/v1/boxes names the box" same "$(cat "$V/v1/boxes")" a
ok "info lists the volumes" bash -c "grep -q '\"volumes\":\[\"v1\"\]' '$M/boxes/a/info'"

# --- data through a box --------------------------------------------------------------
ok "box a writes /mnt/v1/file" job a 'echo hello-from-a > /mnt/v1/file && dd if=/dev/zero of=/mnt/v1/big bs=1024 count=200 2>/dev/null && mkdir -p /mnt/v1/sub && echo deep > /mnt/v1/sub/deep && ln -s file /mnt/v1/link'
ok "the file is on the host through data/" same "$(cat "$V/v1/data/file")" hello-from-a
ok "info: no change pending while running" bash -c "grep -q '\"volumes_pending\":false' '$M/boxes/a/info'"
ok "rmdir while attached is EBUSY" same "$(errno_of "os.rmdir('$V/v1')")" EBUSY
ok "the reason names the box" grep -q 'rmdir: volume v1 is attached to a' "$V/v1/error"
ok "the volume is still there" test -f "$V/v1/data/file"
mkdir "$V/v2"
# (test-volumes-live.sh has the live attach and detach in depth.)
ok "a change on a running box applies at once" bash -c "printf 'v1\nv2\n' > '$M/boxes/a/volumes' && grep -q '\"volumes_pending\":false' '$M/boxes/a/info'"
ok "the event says so" bash -c "snap '$M/boxes/a/events' | grep -q ' volumes v1,v2\$'"
ok "v2 is mounted already" job a 'test -d /mnt/v2 && grep -q " /mnt/v2 " /proc/mounts'
ok "size counts the data (>= 200 KiB) once its cache expires" \
	wait_for 30 bash -c "test \$(cat '$V/v1/size') -ge 204800"
ok "rmdir boxes/a detaches" bash -c "rmdir '$M/boxes/a' && test -z \"\$(cat '$V/v1/boxes')\""
mkdir "$M/boxes/b"
ok "box b attaches v1" bash -c "echo v1 > '$M/boxes/b/volumes'"
ok "box b reads what box a wrote" same "$(job b 'cat /mnt/v1/file /mnt/v1/sub/deep')" "hello-from-a
deep"
ok "it is mounted nosuid,nodev" bash -c "job b 'cat /proc/mounts' | grep ' /mnt/v1 ' | grep -q 'nosuid,nodev'"
ok "rmdir of an attached volume stays EBUSY" same "$(errno_of "os.rmdir('$V/v1')")" EBUSY
ok "detaching (empty list) on a stopped box" bash -c "echo stopped > '$M/boxes/b/state' && echo > '$M/boxes/b/volumes' && test -z \"\$(cat '$M/boxes/b/volumes')\""

# --- export and import -------------------------------------------------------------------
ok "export streams a zstd tar" bash -c "cat '$V/v1/export' > '$H/v1.tar.zst' && zstd -tq '$H/v1.tar.zst'"
ok "it holds the files" bash -c "zstd -dc '$H/v1.tar.zst' | tar t | sort | tr '\n' ' ' | grep -q 'big file link sub/ sub/deep'"
mkdir "$V/copy"
ok "import into an empty volume" bash -c "cat '$H/v1.tar.zst' > '$V/copy/import'"
ok "every file has the same hash" same "$(hashes "$V/copy/data")" "$(hashes "$V/v1/data")"
ok "the symlink is kept" same "$(readlink "$V/copy/data/link")" file
ok "import into a volume with data is ENOTEMPTY" same "$(errno_of "os.open('$V/copy/import', os.O_WRONLY)")" ENOTEMPTY
ok "the HTTP export is a zstd tar too" bash -c "uc GET volumes/v1/export -o '$H/http.tar.zst' && zstd -dc '$H/http.tar.zst' | tar t | grep -qx sub/deep"

# hostile archives: each must be refused with a reason, leaving nothing.
python3 "$TOP_SRCDIR/tests/integration/hostile-tars.py" "$H"
zstd -q -c "$H/v1.tar.zst" >/dev/null
head -c $(($(stat -c %s "$H/v1.tar.zst") / 2)) "$H/v1.tar.zst" >"$H/truncated.tar.zst"
n=0
for bad in dotdot.tar absolute.tar symlink.tar symlink-rel.tar hardlink.tar device.tar truncated.tar.zst; do
	n=$((n + 1))
	mkdir "$V/h$n"
	ok "import of a hostile archive ($bad) is refused" bash -c "! cat '$H/$bad' > '$V/h$n/import' 2>/dev/null"
	ok "with a reason ($bad)" grep -q 'import: import rejected, the volume is unchanged: ' "$V/h$n/error"
	ok "and nothing left in the volume ($bad)" same "$(ls -A "$V/h$n/data/")" ""
done
diag "$(cat "$V/h1/error")"
ok "nothing escaped to the host" bash -c "test ! -e /etc/paddock-escape && test ! -e '$D/volumes/escape' && test ! -e '$D/volumes/h1/escape'"

# --- HTTP data/ route ------------------------------------------------------------------------
mkdir "$V/web"
ok "PUT volumes/NAME/data/?format=tar extracts into the volume" bash -c "
	tar -C '$V/v1/data' -c file sub | uc PUT 'volumes/web/data/?format=tar' --data-binary @- -o /dev/null -w '%{http_code}' | grep -qx 200"
ok "the files are there" same "$(cat "$V/web/data/sub/deep")" deep
ok "GET volumes/NAME/data/FILE reads a file" same "$(uc GET volumes/web/data/file)" hello-from-a

# --- the CLI -----------------------------------------------------------------------------------
pd() { PADDOCK_CONFIG=/nonexistent/c.ini "$PADDOCK" --url "unix:$SOCK" "$@"; }
ok "paddock volume create" pd volume create cv
ok "paddock volume ls lists it" bash -c "$(declare -f pd); PADDOCK='$PADDOCK' SOCK='$SOCK'; pd volume ls | grep -q '^cv '"
ok "paddock volume attach BOX NAME" pd volume attach b cv
ok "the box lists it" same "$(cat "$M/boxes/b/volumes")" cv
ok "paddock volume ls shows the box" bash -c "$(declare -f pd); PADDOCK='$PADDOCK' SOCK='$SOCK'; pd volume ls | grep -Eq '^cv +[0-9]+ +b\$'"
ok "paddock volume detach BOX NAME" pd volume detach b cv
ok "the box lists none" same "$(cat "$M/boxes/b/volumes")" ""
ok "paddock volume import NAME FILE" pd volume import cv "$H/v1.tar.zst"
ok "the imported files hash the same" same "$(hashes "$V/cv/data")" "$(hashes "$V/v1/data")"
ok "paddock volume export NAME -o FILE" bash -c "$(declare -f pd); PADDOCK='$PADDOCK' SOCK='$SOCK'; pd volume export cv -o '$H/cv.tar.zst' && zstd -dc '$H/cv.tar.zst' | tar t | grep -qx sub/deep"
ok "paddock volume rm" pd volume rm cv
ok "it is gone" test ! -e "$V/cv"
ok "its files are gone" test ! -e "$D/volumes/cv"

# --- crash safety: kill -9 at every step ---------------------------------------------------------
# crash_at STEP ACTION NAME: restarts the daemon with PADDOCK_FAULT=STEP,
# runs ACTION (mkdir or rmdir) on volumes/NAME, which kills it, then
# restarts it normally.
crash_at() {
	pd_stop
	export PADDOCK_FAULT=$1
	pd_start
	unset PADDOCK_FAULT
	$2 "$V/$3" 2>/dev/null
	wait "$PD_PID" 2>/dev/null
	local rc=$?
	PD_PID=
	[ $rc = 137 ] || { diag "the daemon did not die at $1 (status $rc)"; return 1; }
	pd_start
}
gone() { # no trace of the volume: tree, files, store
	test ! -e "$V/$1" && test ! -e "$D/volumes/$1" &&
		same "$(python3 -c "import sqlite3; print(sqlite3.connect('$D/paddock.db').execute(\"SELECT count(*) FROM volumes WHERE name = '$1'\").fetchone()[0])")" 0
}
for step in volume-create-row volume-create-dir; do
	ok "kill -9 at $step: the daemon dies there" crash_at $step mkdir "c-$step"
	ok "after restart the half-made volume is rolled back" gone "c-$step"
	ok "and the name can be used again" bash -c "mkdir '$V/c-$step' && test -d '$V/c-$step/data/'"
done
for step in volume-delete-mark volume-delete-files volume-delete-rows; do
	mkdir "$V/d-$step"
	echo data >"$V/d-$step/data/f"
	ok "kill -9 at $step: the daemon dies there" crash_at $step rmdir "d-$step"
	ok "after restart the deletion is finished" gone "d-$step"
done
ok "other volumes are intact after the crashes" same "$(hashes "$V/copy/data")" "$(hashes "$V/v1/data")"

pd_done
