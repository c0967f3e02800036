#!/bin/bash
# A handle on an object reaches that object or nothing: never another one
# made since under the same name. The tree fetches a box, job or volume by
# the id in the inode, then acts on it; when the action went by name, a
# delete and a mkdir of the same name in between made the action land on
# the new object (another user's box of the same name, say). The window
# is held open at the hold point tree-act (PADDOCK_HOLD, pd_hold() in
# common/util.h): the write or open is held after the fetch, the object is
# deleted and made again, then the action goes on. It must fail with
# ENOENT (404 over HTTP) and leave the new object as it was.
#
# Also the same without a race: a descriptor opened before the rmdir and
# used after the mkdir (exec 3>boxes/a/ttl) fails and changes nothing.
. "$(dirname "$0")/lib.sh"
pd_setup || exit 1
HOLD=$PD_TMP/hold
mkdir "$HOLD"
export PADDOCK_HOLD=tree-act:$HOLD
pd_start
pd_owner || { diag "cannot set up the owner"; exit 1; }
B=$M/boxes
V=$M/volumes
T=10

# held PYTHON: runs the statements (errno_of: OK or the errno's name into
# $PD_TMP/out) in the background once the hold is armed, and waits until
# they are held there (pd_hold_wait, lib.sh).
held() {
	touch "$HOLD/arm"
	errno_of "$1" >"$PD_TMP/out" &
	BG=$!
	pd_hold_wait
}
# release: lets the held statements go on; their outcome is then in $OUT.
release() {
	pd_hold_release
	wait "$BG"
	OUT=$(cat "$PD_TMP/out")
}
# renew NAME: rmdir and mkdir again of box NAME.
renew() {
	rmdir "$B/$1" && mkdir "$B/$1"
}
is_created() {
	same "$(cat "$B/$1/state")" created
}
# The default TTL of a new box: what "unchanged" means.
mkdir "$B/ref"
TTL0=$(cat "$B/ref/ttl")
rmdir "$B/ref"

# --- without a race: a descriptor kept across rmdir and mkdir ---------------------------
mkdir "$B/a"
exec 3>"$B/a/ttl"
renew a
ok "a write to the old box's ttl through a kept descriptor fails" \
	same "$(errno_of "os.write(3, b'1h\n')")" ENOENT
exec 3>&-
ok "the new box's ttl is unchanged" same "$(cat "$B/a/ttl")" "$TTL0"
rmdir "$B/a"

# --- a box's control file: the write held after its box was fetched ---------------------
mkdir "$B/a"
ok "a ttl write is held after the fetch" \
	held "fd = os.open('$B/a/ttl', os.O_WRONLY); os.write(fd, b'1h\n')"
ok "box a deleted and made again meanwhile" renew a
release
ok "the write fails: ENOENT" same "$OUT" ENOENT
ok "the new box a's ttl is unchanged" same "$(cat "$B/a/ttl")" "$TTL0"
ok "its error is empty" same "$(cat "$B/a/error")" ""
rmdir "$B/a"

# state: a start of the old box must not start the new one.
mkdir "$B/a"
ok "a state write is held" \
	held "fd = os.open('$B/a/state', os.O_WRONLY); os.write(fd, b'running\n')"
renew a
release
ok "a start of the deleted box fails: ENOENT" same "$OUT" ENOENT
ok "the new box a was not started" is_created a
rmdir "$B/a"

# --- jobs --------------------------------------------------------------------------------
# exec/new: a command for the old box must not run in the new one (nor
# start it). Applied at close, where it is held.
mkdir "$B/a"
ok "an exec/new is held at close" held "fd = os.open('$B/a/exec/new', os.O_WRONLY)
    os.write(fd, b'echo planted > /planted'); os.close(fd)"
renew a
release
ok "the command for the deleted box fails: ENOENT" same "$OUT" ENOENT
ok "the new box a has no job" same "$(ls "$B/a/exec" | tr '\n' ' ')" "new "
ok "and was not started" is_created a
rmdir "$B/a"

# A job's directory: a write to the old job's cmd reports its failure in
# its own box's error file, not in the new box's.
mkdir "$B/a" "$B/a/exec/j"
ok "a cmd write of job j is held at close" held "fd = os.open('$B/a/exec/j/cmd', os.O_WRONLY)
    os.write(fd, b'true'); os.close(fd)"
renew a
mkdir "$B/a/exec/j"
release
ok "the old job's cmd fails: ENOENT" same "$OUT" ENOENT
ok "the new box a's error is empty" same "$(cat "$B/a/error")" ""
ok "the new job j has not started" same "$(cat "$B/a/exec/j/status")" created
ok "the new box a was not started" is_created a
rmdir "$B/a"

# --- volumes -----------------------------------------------------------------------------
# import: an archive for the old volume must not fill the new one.
python3 -c '
import io, sys, tarfile
with tarfile.open(sys.argv[1], "w") as t:
    data = b"planted\n"
    ti = tarfile.TarInfo("planted")
    ti.size = len(data)
    t.addfile(ti, io.BytesIO(data))' "$PD_TMP/planted.tar"
mkdir "$V/v"
ok "an open of the volume's import is held" held "fd = os.open('$V/v/import', os.O_WRONLY)
    os.write(fd, open('$PD_TMP/planted.tar', 'rb').read()); os.close(fd)"
ok "volume v deleted and made again meanwhile" bash -c "rmdir '$V/v' && mkdir '$V/v'"
release
ok "the import into the deleted volume fails: ENOENT" same "$OUT" ENOENT
ok "the new volume v is empty" same "$(ls -A "$V/v/data/")" ""
ok "its error is empty" same "$(cat "$V/v/error")" ""
rmdir "$V/v"

# export: an archive of the old volume must not be the new one's files.
mkdir "$V/v"
ok "an open of the volume's export is held" held "fd = os.open('$V/v/export', os.O_RDONLY)
    data = b''.join(iter(lambda: os.read(fd, 65536), b''))
    open('$PD_TMP/export.tar.zst', 'wb').write(data)"
ok "volume v deleted and made again with a file meanwhile" bash -c "
	rmdir '$V/v' && mkdir '$V/v' && echo private >'$V/v/data/new-secret'"
release
ok "the export of the deleted volume fails: ENOENT" same "$OUT" ENOENT
ok "nothing of the new volume was exported" bash -c "
	! tar --zstd -tf '$PD_TMP/export.tar.zst' 2>/dev/null | grep -q new-secret"
rm -f "$V/v/data/new-secret"
rmdir "$V/v"

# --- over HTTP: a path is resolved per request, and acted on by id -----------------------
# (hc in Python's place: held runs Python, which runs curl.)
mkdir "$B/a"
ok "an HTTP ttl write is held" held "import subprocess
    print(subprocess.run(['curl', '-sS', '-o', '/dev/null', '-w', '%{http_code}', '-X', 'PUT',
        '--data-binary', '1h', '-H', 'Authorization: Bearer $PD_TOKEN',
        '$PD_URL/v1/tree/boxes/a/ttl'], capture_output=True, text=True).stdout, end=' ')"
renew a
release
ok "the request fails: 404" same "$OUT" "404 OK"
ok "the new box a's ttl is unchanged" same "$(cat "$B/a/ttl")" "$TTL0"
# Nothing held: HTTP writes as before.
ok "a plain HTTP ttl write still works" same \
	"$(hc -X PUT --data-binary 1h -o /dev/null -w '%{http_code}' boxes/a/ttl)" 204
ok "and shows" bash -c "t=\$(cat '$B/a/ttl'); [ \"\$t\" -le 3600 ] && [ \"\$t\" -ge 3590 ]"
rmdir "$B/a"

pd_done
