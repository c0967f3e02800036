#!/bin/bash
# Who may use the tree, written as attacks: user nobody (no group) tries to
# read, change and create through /paddock, to follow the links out of it,
# and to read the daemon's files directly; every attempt must fail with
# EACCES and change nothing. Then the other side: a member of the group
# (by its primary gid, and by a supplementary group) does all of it.
. "$(dirname "$0")/lib.sh"
require_root
command -v setpriv >/dev/null || skip_all "needs setpriv"

# A numeric gid no group on this machine has: no /etc/group change needed.
G=
for g in $(seq 61000 61999); do
	getent group "$g" >/dev/null || { G=$g; break; }
done
[ -n "$G" ] || skip_all "no free gid in 61000-61999"
PD_GROUP=$G
pd_setup || exit 1
# The daemon starts on an existing install whose modes are too open.
chmod 0755 "$D"
pd_start
pd_owner || { diag "cannot log in"; exit 1; }
# PD_TMP is 0700: let the other users reach the mount point.
chmod 0755 "$PD_TMP"
RUN=$PD_TMP/run

# The users, with the system's PATH (root's may lead where they cannot go).
USER_ENV="env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/ LC_ALL=C.UTF-8"
nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups -- $USER_ENV "$@"; }
member() { setpriv --reuid=65534 --regid="$G" --clear-groups -- $USER_ENV "$@"; }
member2() { setpriv --reuid=65534 --regid=65534 --groups="$G" -- $USER_ENV "$@"; }

# as WHO OP PATH [ARG]: one file operation as that user; prints OK (and
# what a read returned) or the errno's name.
as() {
	local who=$1
	shift
	"$who" python3 - "$@" <<'PY'
import errno, os, sys
op, path = sys.argv[1], sys.argv[2]
arg = sys.argv[3] if len(sys.argv) > 3 else ""
out = ""
try:
    if op == "ls":
        out = " ".join(sorted(os.listdir(path)))
    elif op == "read":
        with open(path, "rb") as f:
            out = f.read().decode(errors="replace").strip()
    elif op == "peek":  # a stream: what it holds now
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        try:
            out = os.read(fd, 65536).decode(errors="replace").strip()
        except BlockingIOError:
            pass
        os.close(fd)
    elif op == "write":
        fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
        os.write(fd, arg.encode())
        os.close(fd)
    elif op == "create":
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        os.write(fd, arg.encode())
        os.close(fd)
    elif op == "mkdir":
        os.mkdir(path)
    elif op == "rmdir":
        os.rmdir(path)
    elif op == "unlink":
        os.unlink(path)
    elif op == "rename":
        os.rename(path, arg)
    elif op == "stat":
        os.stat(path)
    elif op == "lstat":
        os.lstat(path)
    elif op == "readlink":
        out = os.readlink(path)
    elif op == "chdir":
        os.chdir(path)
    elif op == "truncate":
        os.truncate(path, 0)
    elif op == "chmod":
        os.chmod(path, 0o600)
    else:
        sys.exit("unknown op " + op)
    print(("OK " + out).strip())
except OSError as e:
    print(errno.errorcode[e.errno])
PY
}

# fd_as OP PATH: root opens PATH, then drops to nobody and uses the open
# descriptor (a handle passed to, or inherited by, another user).
fd_as() {
	python3 - "$@" <<'PY'
import errno, os, sys
op, path = sys.argv[1], sys.argv[2]
fd = os.open(path, {"readdir": os.O_RDONLY | os.O_DIRECTORY, "read": os.O_RDONLY,
                    "write": os.O_WRONLY}[op])
os.setgroups([])
os.setresgid(65534, 65534, 65534)
os.setresuid(65534, 65534, 65534)
try:
    if op == "readdir":
        os.listdir(fd)
    elif op == "read":
        os.read(fd, 4096)
    else:
        os.write(fd, b"2h\n")
    print("OK")
except OSError as e:
    print(errno.errorcode[e.errno])
PY
}

export -f as nobody member member2
export G USER_ENV

# A box with a finished job, a volume with a file, a token.
B=$M/boxes/a
mkdir "$B"
echo 'echo secret-output; echo "$TOKEN"' >"$B/exec/new"
timeout 20 cat "$B/exec/1/exit" >/dev/null
mkdir "$B/exec/j"
printf 'TOKEN=s3cr3t\n' >"$B/exec/j/env"
mkdir "$M/volumes/v"
echo volume-file >"$M/volumes/v/data/f"
echo 1h >"$B/ttl"
ttl_before=$(cat "$B/expires")
policy_before=$(cat "$B/policy")
tok=$(ls "$M/tokens" | head -n1)
# The kernel's caches hold what root just walked: nobody must not reach
# it through them either.
stat "$B" "$B/exec" "$B/exec/1" "$B/root" "$M/volumes/v/data" >/dev/null
readlink "$B/root" "$M/volumes/v/data" >/dev/null

# --- nobody -----------------------------------------------------------------

ok "nobody: ls /paddock is EACCES" same "$(as nobody ls "$M")" EACCES
ok "nobody: cat version is EACCES" same "$(as nobody read "$M/version")" EACCES
ok "nobody: mkdir boxes/x is EACCES" same "$(as nobody mkdir "$M/boxes/x")" EACCES
ok "nobody: and no box is made" bash -c "test ! -e '$M/boxes/x' && ! hc boxes/ | grep -q '\"x\"'"
ok "nobody: writing state is EACCES" same "$(as nobody write "$B/state" running)" EACCES
ok "nobody: writing policy is EACCES" same "$(as nobody write "$B/policy" "allow 0.0.0.0/0")" EACCES
ok "nobody: writing ttl is EACCES" same "$(as nobody write "$B/ttl" 1s)" EACCES
ok "nobody: truncating ttl is EACCES" same "$(as nobody truncate "$B/ttl")" EACCES
ok "nobody: nothing changed (state, policy, expires)" same \
	"$(cat "$B/state")|$(cat "$B/policy")|$(cat "$B/expires")" "running|$policy_before|$ttl_before"
ok "nobody: reading a job's env is EACCES" same "$(as nobody read "$B/exec/j/env")" EACCES
ok "nobody: reading a job's output is EACCES" same "$(as nobody read "$B/exec/1/output")" EACCES
ok "nobody: writing exec/new is EACCES" same "$(as nobody write "$B/exec/new" id)" EACCES
ok "nobody: and no job is made" same "$(ls "$B/exec" | tr '\n' ' ')" "1 j last new "
ok "nobody: reading events is EACCES" same "$(as nobody peek "$M/events")" EACCES
ok "nobody: rmdir tokens/ID is EACCES" same "$(as nobody rmdir "$M/tokens/$tok")" EACCES
ok "nobody: and the token still works" bash -c "hc version | grep -q paddock"
ok "nobody: creating a file is EACCES" same "$(as nobody create "$B/.ttl.swp" 1s)" EACCES
echo 1s >"$B/.ttl.tmp"
ok "nobody: renaming a temp file over ttl is EACCES" same "$(as nobody rename "$B/.ttl.tmp" "$B/ttl")" EACCES
ok "nobody: unlinking a temp file is EACCES" same "$(as nobody unlink "$B/.ttl.tmp")" EACCES
ok "nobody: ttl is unchanged and the temp file still there" same \
	"$(cat "$B/expires") $(cat "$B/.ttl.tmp")" "$ttl_before 1s"
rm -f "$B/.ttl.tmp"
ok "nobody: chdir into the tree is EACCES" same "$(as nobody chdir "$M/boxes")" EACCES
ok "nobody: stat of a box root has walked is EACCES" same "$(as nobody stat "$B/exec/1")" EACCES
ok "nobody: stat --cached=always of a walked box finds nothing" \
	bash -c "! nobody stat --cached=always '$B' >/dev/null 2>&1"
ok "nobody: readlink of a box's root is EACCES" same "$(as nobody readlink "$B/root")" EACCES
ok "nobody: readlink of a volume's data is EACCES" same "$(as nobody readlink "$M/volumes/v/data")" EACCES
ok "nobody: chmod of a control file is refused" bash -c "[ \"\$(as nobody chmod '$B/ttl')\" != OK ]"
ok "nobody: readdir through a descriptor root opened is EACCES" same "$(fd_as readdir "$M/boxes")" EACCES
ok "nobody: read through a descriptor root opened is EACCES" same "$(fd_as read "$B/exec/j/env")" EACCES
ok "nobody: write through a descriptor root opened is EACCES" same "$(fd_as write "$B/ttl")" EACCES
ok "nobody: and ttl is unchanged" same "$(cat "$B/expires")" "$ttl_before"
ok "stat of /paddock shows its mode and group to anyone" same "$(nobody stat -c '%a %g' "$M")" "770 $G"
ok "nobody: following a box's root/ fails" bash -c "! nobody ls '$(readlink "$B/root")' >/dev/null 2>&1"
ok "nobody: reading a box's file by its host path fails" same "$(as nobody read "$(readlink "$B/root")/etc/passwd")" EACCES
ok "nobody: following a volume's data/ fails" same "$(as nobody read "$(readlink "$M/volumes/v/data")/f")" EACCES
ok "nobody: reading a volume's file in the data directory fails" same "$(as nobody read "$D/volumes/v/data/f")" EACCES
# Last: against the code before the fix, these succeed and take the
# objects the attacks above aim at.
ok "nobody: rmdir of a box is EACCES" same "$(as nobody rmdir "$B")" EACCES
ok "nobody: rmdir of a volume is EACCES" same "$(as nobody rmdir "$M/volumes/v")" EACCES
ok "nobody: and both are still there" bash -c "test -d '$B' && test -d '$M/volumes/v'"

# --- the daemon's own files ---------------------------------------------------

ok "DATA is 0700 root" same "$(stat -c '%a %U' "$D")" "700 root"
ok "nobody: DATA is unreadable" same "$(as nobody ls "$D")" EACCES
ok "paddock.db, -wal and -shm are 0600" same \
	"$(stat -c %a "$D/paddock.db" "$D/paddock.db-wal" "$D/paddock.db-shm" | tr '\n' ' ')" "600 600 600 "
ok "nobody: paddock.db is unreadable" same "$(as nobody read "$D/paddock.db")" EACCES
ok "nobody: sqlite cannot open it" bash -c "nobody python3 -c \"
import sqlite3, sys
try:
    sqlite3.connect('file:$D/paddock.db?mode=ro', uri=True).execute('select * from owner').fetchall()
except sqlite3.Error:
    sys.exit(0)
sys.exit(1)\""
# Others may pass RUN (a box's root, a host id of its own, reaches what is
# bound for it under RUN/boxes/ID, 0710 to that box alone) but not list it;
# what the group uses is in directories closed to others.
ok "RUN is 0751 root:GROUP, RUN/crun 0700, the group's directories 0750, RUN/boxes 0711" same \
	"$(stat -c '%a %U %g' "$RUN") $(stat -c %a "$RUN/crun" "$RUN/roots" "$RUN/volumes" "$RUN/snapshots" "$RUN/netns" "$RUN/boxes" | tr '\n' ' ')" \
	"751 root $G 700 750 750 750 750 711 "
ok "nobody: RUN cannot be listed" same "$(as nobody ls "$RUN")" EACCES
for d in roots volumes snapshots netns crun boxes lxcfs.d; do
	ok "nobody: RUN/$d cannot be listed" same "$(as nobody ls "$RUN/$d")" EACCES
done

# Existing installs: modes made too open while the daemon was down are
# fixed at the next start.
pd_stop
chmod 0755 "$D" "$RUN" "$RUN/roots"
chmod 0644 "$D/paddock.db"
touch "$D/paddock.db-wal" "$D/paddock.db-shm"
chmod 0644 "$D/paddock.db-wal" "$D/paddock.db-shm"
pd_start
ok "a restart fixes DATA, RUN and the database files" same \
	"$(stat -c %a "$D" "$D/paddock.db" "$D/paddock.db-wal" "$D/paddock.db-shm" "$RUN" "$RUN/roots" | tr '\n' ' ')" "700 600 600 600 751 750 "

# The configuration: refused when others could change it.
pd_stop
chmod 0664 "$PD_TMP/paddock.ini"
ok "a group-writable config is refused" bash -c "
	! timeout 20 '$PADDOCKD' --config '$PD_TMP/paddock.ini' --foreground >'$PD_TMP/bad.log' 2>&1 &&
	grep -q 'writable by' '$PD_TMP/bad.log'"
chmod 0600 "$PD_TMP/paddock.ini"
chown 65534 "$PD_TMP/paddock.ini"
ok "a config owned by another user is refused" bash -c "
	! timeout 20 '$PADDOCKD' --config '$PD_TMP/paddock.ini' --foreground >'$PD_TMP/bad.log' 2>&1 &&
	grep -q 'owned by' '$PD_TMP/bad.log'"
chown 0 "$PD_TMP/paddock.ini"
ok "the mount was left alone" bash -c "! grep -q ' $M fuse' /proc/self/mounts"
# Through a link in a directory another user may change: the file is
# judged where the link leads, and that file is loaded, even when the link
# is turned to the user's own file between the check and the load (held
# there by the config-check hold point).
LINKS=$PD_TMP/links
mkdir -m 0777 "$LINKS"
chown 65534 "$LINKS"
ln -s "$PD_TMP/paddock.ini" "$LINKS/paddock.ini"
sed "s|^mount = .*|mount = $PD_TMP/evil-mount|" "$PD_TMP/paddock.ini" >"$LINKS/evil.ini"
chown 65534 "$LINKS/evil.ini"
mkdir "$PD_TMP/evil-mount" "$PD_TMP/hold"
touch "$PD_TMP/hold/arm"
PADDOCK_HOLD=config-check:$PD_TMP/hold "$PADDOCKD" --config "$LINKS/paddock.ini" --foreground \
	>>"$PD_TMP/paddockd.log" 2>&1 &
PD_PID=$!
pd_daemons="$pd_daemons $PD_PID"
ok "a config through a link is checked where it leads (held after the check)" \
	wait_for 10 test -e "$PD_TMP/hold/held"
setpriv --reuid=65534 --regid=65534 --clear-groups ln -sfn evil.ini "$LINKS/paddock.ini"
ok "the link is turned to another user's file" same "$(readlink "$LINKS/paddock.ini")" evil.ini
rm -f "$PD_TMP/hold/held"
ok "the daemon loads the file it checked: the tree is at its mount" wait_for 10 test -f "$M/version"
ok "...and not at the other file's" bash -c "! grep -q ' $PD_TMP/evil-mount ' /proc/self/mounts"
pd_stop
rm -rf "$LINKS" "$PD_TMP/hold"
rmdir "$PD_TMP/evil-mount"
chmod 0644 "$PD_TMP/paddock.ini"
pd_start
ok "a world-readable config starts with a warning" grep -q 'readable by every user' "$PD_TMP/paddockd.log"
chmod 0755 "$PD_TMP"

# --- members of the group --------------------------------------------------------

for who in member member2; do
	ok "$who: ls /paddock" same "$(as $who ls "$M")" "OK README agents boxes events images secrets snapshots tokens types version volumes"
	ok "$who: stat shows the mode and group" same "$($who stat -c '%a %g' "$M/boxes" "$B/state" "$B/info" "$B/exec/new" | tr '\n' ' ')" \
		"770 $G 660 $G 440 $G 220 $G "
	ok "$who: creates a box" same "$(as $who mkdir "$M/boxes/$who")" OK
	ok "$who: runs an exec job in it" same "$(as $who write "$M/boxes/$who/exec/new" 'echo hello from $(hostname)')" OK
	ok "$who: waits for its exit" same "$($who timeout 20 cat "$M/boxes/$who/exec/1/exit")" 0
	ok "$who: reads its output" same "$(as $who read "$M/boxes/$who/exec/1/output")" "OK hello from $who"
	ok "$who: reads a job's env" same "$(as $who read "$B/exec/j/env")" "OK TOKEN=s3cr3t"
	ok "$who: writes ttl" same "$(as $who write "$M/boxes/$who/ttl" 2h)" OK
	ok "$who: writes a file into root/ through the link" same "$(as $who create "$M/boxes/$who/root/tmp/from-host" hi)" OK
	ok "$who: the box sees it" bash -c "echo 'cat /tmp/from-host' >'$M/boxes/$who/exec/new' &&
		timeout 20 cat '$M/boxes/$who/exec/2/exit' >/dev/null && test \"\$(cat '$M/boxes/$who/exec/2/stdout')\" = hi"
	ok "$who: reads a volume's data" same "$(as $who read "$M/volumes/v/data/f")" "OK volume-file"
	ok "$who: renames a temp file over a control file" bash -c "
		[ \"\$(as $who create '$M/boxes/$who/.ttl.tmp' 3h)\" = OK ] &&
		[ \"\$(as $who rename '$M/boxes/$who/.ttl.tmp' '$M/boxes/$who/ttl')\" = OK ]"
	ok "$who: deletes its box" same "$(as $who rmdir "$M/boxes/$who")" OK
done
ok "a member cannot read DATA either" same "$(as member ls "$D")" EACCES

# What a box (root inside it) leaves in its files must not give a member
# more than the member has: the views are nosuid and nodev.
cp /usr/bin/id "$B/root/tmp/id-suid" && chmod 4755 "$B/root/tmp/id-suid"
mknod -m 0666 "$B/root/tmp/zero" c 1 5
cp /usr/bin/id "$M/volumes/v/data/id-suid" && chmod 4755 "$M/volumes/v/data/id-suid"
ok "a member running a setuid-root file of a box stays itself" same "$(member "$B/root/tmp/id-suid" -u)" 65534
ok "a member running a setuid-root file of a volume stays itself" same "$(member "$M/volumes/v/data/id-suid" -u)" 65534
ok "a member cannot open a device node a box made" same "$(as member read "$B/root/tmp/zero")" EACCES

# root/ in use on the host (a member's shell in it): a restore refuses
# with the reason, and root/ stays reachable.
mkdir "$M/boxes/h"
echo x >"$M/boxes/h/snapshot"
snap=$(readlink "$M/boxes/h/snapshots/last")
# setpriv itself in the background (not a function: a subshell), so that
# $! is the process whose working directory is in root/.
setpriv --reuid=65534 --regid="$G" --clear-groups -- $USER_ENV \
	sh -c "cd '$M/boxes/h/root/tmp' && exec sleep 60" &
holder=$!
wait_for 10 bash -c "readlink /proc/$holder/cwd | grep -q '/roots/'"
ok "restore while a member's shell is in root/: EBUSY" write_expect EBUSY "$M/boxes/h/restore" "$snap"
ok "the reason says root/ is in use on the host" grep -q 'in use on the host' "$M/boxes/h/error"
ok "root/ is still there for the member" same "$(as member ls "$M/boxes/h/root/tmp")" OK
kill "$holder"
wait "$holder" 2>/dev/null
ok "with the shell gone, the restore goes through" bash -c "echo '$snap' >'$M/boxes/h/restore'"

# An install from before the views: a running box's overlay is mounted
# (DATA/boxes/ID/rootfs) and nothing is under RUN/roots. The new daemon
# adds the view; the box runs on, nothing lost.
echo 'echo kept >/tmp/upgrade' >"$B/exec/new"
wait_for 20 test -s "$B/exec/last/exit"
view=$(readlink "$B/root")
pd_kill9
umount "$view" && rmdir "$view"
pd_start
ok "upgrade: root/ leads to the box's files again" same "$(cat "$B/root/tmp/upgrade")" kept
ok "upgrade: the view is a mount of its own" bash -c "grep -q ' $view ' /proc/self/mountinfo"
ok "upgrade: the box still runs and takes jobs" bash -c "echo 'cat /tmp/upgrade' >'$B/exec/new' &&
	timeout 20 cat '$B/exec/last/exit' >/dev/null && test \"\$(cat '$B/exec/last/stdout')\" = kept"

pd_done
