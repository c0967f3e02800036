#!/bin/bash
# The tree's conventions through a real mount: static files, modes, names,
# every write pattern, bad input (errno, error text, nothing changed),
# streams.
. "$(dirname "$0")/lib.sh"
pd_start

mode() { stat -c %a "$1"; }

ok "root lists the tree" same "$(ls "$M" | tr '\n' ' ')" "README agents boxes events images secrets snapshots tokens types version volumes "
ok "version reads paddock X.Y.Z" grep -Eq '^paddock [0-9]+\.[0-9]+\.[0-9]+$' "$M/version"
ok "README has examples" grep -q 'mkdir boxes/' "$M/README"
ok "README is 0440 (the group has the owner's bits, others none)" same "$(mode "$M/README")" 440
ok "types lists the built-in and configured types" same "$(ls "$M/types" | tr '\n' ' ')" "large medium small tiny "
ok "types/small is flat keyed" same "$(cat "$M/types/small")" "cpus 1
memory 2G
pids 4096
disk 10G"
ok "types/tiny shows the configured values" same "$(cat "$M/types/tiny")" "cpus 0.5
memory 64M
pids 256
disk 1G"
ok "images lists what is built" same "$(ls "$M/images")" tiny
ok "an image has description, size, created" same "$(ls "$M/images/tiny" | tr '\n' ' ')" "created description size "
ok "image size is a number of bytes" grep -Eq '^[0-9]+$' "$M/images/tiny/size"
ok "stat shows the real size of a value" same "$(stat -c %s "$M/version")" "$(cat "$M/version" | wc -c)"
ok "a file cannot be created at the root" bash -c "! touch '$M/newfile' 2>/dev/null"
ok "types are read-only" bash -c "! (echo x > '$M/types/small') 2>/dev/null"

# Names.
for bad in Upper -dash .dot "a b" "$(printf 'x%.0s' {1..64})" "é" "a/b"; do
	ok "mkdir boxes/'$bad' is refused" bash -c "! mkdir '$M/boxes/$bad' 2>/dev/null"
done
ok "mkdir with an invalid name gives EINVAL" same "$(python3 -c "
import os, errno
try: os.mkdir('$M/boxes/Bad')
except OSError as e: print(errno.errorcode[e.errno])")" EINVAL
ok "a 63-character name is fine" mkdir "$M/boxes/$(printf 'a%.0s' {1..63})"
ok "names may use . _ -" mkdir "$M/boxes/a.b_c-9"
ok "mkdir of an existing box gives EEXIST" same "$(python3 -c "
import os, errno
try: os.mkdir('$M/boxes/a.b_c-9')
except OSError as e: print(errno.errorcode[e.errno])")" EEXIST
ok "rmdir of a missing box gives ENOENT" same "$(python3 -c "
import os, errno
try: os.rmdir('$M/boxes/nope')
except OSError as e: print(errno.errorcode[e.errno])")" ENOENT
ok "boxes lists boxes" same "$(ls "$M/boxes" | wc -l)" 2
rmdir "$M/boxes/a.b_c-9" "$M/boxes/$(printf 'a%.0s' {1..63})"

B=$M/boxes/t
mkdir "$B"
ok "state is 0660" same "$(mode "$B/state")" 660
ok "type is 0660" same "$(mode "$B/type")" 660
ok "image is 0660" same "$(mode "$B/image")" 660
for f in created usage info error events; do
	ok "$f is 0440" same "$(mode "$B/$f")" 440
done
ok "error is empty before any failure" same "$(cat "$B/error")" ""
ok "a read-only file refuses writes even to root (EACCES)" write_expect EACCES "$B/usage" x
ok "files cannot be deleted" bash -c "! rm -f '$B/state' 2>/dev/null && test -e '$B/state'"
ok "boxes are not renamed" bash -c "! mv '$B' '$M/boxes/u' 2>/dev/null"

# Bad writes: right errno, reason in error, nothing changed.
check_bad() { # errno file value what-error-says
	local before after
	before=$(cat "$B/$2")
	write_expect "$1" "$B/$2" "$3" || return 1
	after=$(cat "$B/$2")
	same "$after" "$before" || return 1
	grep -q "$2: .*$4.*($1)\$" "$B/error" || { diag "error: $(cat "$B/error")"; return 1; }
	grep -Eq '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z ' "$B/error"
}
ok "state: garbage is EINVAL" check_bad EINVAL state "bogus" "unknown state"
ok "state: only a newline is EINVAL" check_bad EINVAL state $'\n' "not a value"
ok "state: a NUL byte is EINVAL" check_bad EINVAL state "hex:$(printf 'running\0\n' | od -An -tx1 | tr -d ' \n')" "not a value"
ok "state: two lines are EINVAL" check_bad EINVAL state $'running\nstopped' "not a value"
ok "state: overlong is EINVAL" check_bad EINVAL state "$(printf 'r%.0s' {1..300})" "not a value"
ok "state: created is not a target (EINVAL)" check_bad EINVAL state created "cannot go"
ok "state: stopping a box never started is EBUSY" check_bad EBUSY state stopped "never started"
ok "type: unknown is EINVAL" check_bad EINVAL type huge "unknown type"
ok "type: trailing space is EINVAL" check_bad EINVAL type "small " "unknown type"
ok "image: not installed is ENOENT" check_bad ENOENT image nosuch "not installed"
ok "image: invalid name is EINVAL" check_bad EINVAL image "../tiny" "invalid image"
ok "info reports the last error" grep -q '"error":".*image' "$B/info"

# Every write pattern a user or agent uses.
ok "echo v > f" bash -c "echo medium > '$B/type' && test \"\$(cat '$B/type')\" = medium"
ok "printf v > f (no newline)" bash -c "printf large > '$B/type' && test \"\$(cat '$B/type')\" = large"
ok "printf with CRLF" bash -c "printf 'small\r\n' > '$B/type' && test \"\$(cat '$B/type')\" = small"
ok "python open(f, 'w').write(v)" bash -c "python3 -c \"open('$B/type', 'w').write('medium\\n')\" && test \"\$(cat '$B/type')\" = medium"
ok "tee" bash -c "echo large | tee '$B/type' >/dev/null && test \"\$(cat '$B/type')\" = large"
ok "truncate -s 0 is not an error" truncate -s 0 "$B/type"
ok "truncate changed nothing" same "$(cat "$B/type")" large
ok "temp file then rename applies the value" bash -c "
	echo small > '$B/.type.tmp.1' && mv '$B/.type.tmp.1' '$B/type' &&
	test \"\$(cat '$B/type')\" = small && test ! -e '$B/.type.tmp.1'"
ok "python tempfile + os.replace (agent pattern)" python3 -c "
import os, tempfile
fd, tmp = tempfile.mkstemp(dir='$B', prefix='.type.')
os.write(fd, b'medium\n'); os.fsync(fd); os.close(fd)
os.chmod(tmp, 0o644)
os.replace(tmp, '$B/type')
assert open('$B/type').read() == 'medium\n'
assert not any(n.startswith('.type.') for n in os.listdir('$B'))"
ok "a temp file with a bad value: rename fails with EINVAL" same "$(python3 -c "
import os, errno
open('$B/t.tmp', 'w').write('bogus')
try: os.rename('$B/t.tmp', '$B/type'); print('OK')
except OSError as e: print(errno.errorcode[e.errno])")" EINVAL
ok "and nothing changed" same "$(cat "$B/type")" medium
ok "the temp file can be removed" rm "$B/t.tmp"
ok "temp files are never box files" same "$(ls -A "$B" | tr '\n' ' ')" "created desktop docker error events exec expires fork image info ip policy ports prompt prompts restore root screenshot.png secrets snapshot snapshots state ttl type urls usage volumes "

# Streams.
ok "events: O_NONBLOCK read at the end gives EAGAIN" python3 -c "
import os, errno
fd = os.open('$B/events', os.O_RDONLY | os.O_NONBLOCK)
data = os.read(fd, 65536)
assert data.endswith(b' t created\n') or b' t created\n' in data, data
try:
    os.read(fd, 65536); raise SystemExit('no EAGAIN')
except BlockingIOError: pass"
ok "events: a waiting reader is woken by a new event" bash -c "
	timeout 10 python3 -c \"
import os
fd = os.open('$B/events', os.O_RDONLY)
os.lseek(fd, 0, os.SEEK_END)
seen = b''
while b'type large' not in seen:
    seen += os.read(fd, 4096)
\" & r=\$!
	wait_for 10 pd_parked \$r; echo large > '$B/type'; wait \$r"
ok "events: the global stream follows too" bash -c "
	timeout 10 python3 -c \"
import os
fd = os.open('$M/events', os.O_RDONLY)
os.lseek(fd, 0, os.SEEK_END)
seen = b''
while b' t type small' not in seen:
    seen += os.read(fd, 4096)
\" & r=\$!
	wait_for 10 pd_parked \$r; echo small > '$B/type'; wait \$r"
ok "events: a reader of a deleted box gets EOF" bash -c "
	timeout 10 cat '$B/events' >/dev/null & r=\$!
	wait_for 10 pd_parked \$r; rmdir '$B'; wait \$r"
mkdir "$M/boxes/intr"
ok "events: a parked reader can be interrupted by a signal" timeout 10 python3 -c "
import os, signal, time
class Alarm(Exception): pass
def on_alarm(sig, frame): raise Alarm()
signal.signal(signal.SIGALRM, on_alarm)
fd = os.open('$M/boxes/intr/events', os.O_RDONLY)
os.read(fd, 65536)
signal.alarm(1)
t = time.time()
try:
    os.read(fd, 65536); raise SystemExit('read returned')
except Alarm: pass
assert time.time() - t < 5"
ok "events: a parked reader can be killed" timeout 10 bash -c "
	cat '$M/boxes/intr/events' >/dev/null & r=\$!
	wait_for 5 pd_parked \$r; kill -TERM \$r; wait \$r; [ \$? -eq 143 ]"
rmdir "$M/boxes/intr"
ok "the tree answers during parked reads" bash -c "
	mkdir '$M/boxes/p'
	for i in \$(seq 50); do cat '$M/boxes/p/events' >/dev/null & done
	wait_for 20 pd_parked \$(jobs -p)
	s=\$(date +%s%N); cat '$M/boxes/p/state' >/dev/null; e=\$(date +%s%N)
	rmdir '$M/boxes/p'; wait
	[ \$(( (e - s) / 1000000 )) -lt 1000 ]"


# tokens/: the owner's access tokens, made by logging in over HTTP.
ok "tokens/ is for root and the group only (drwxrwx---)" same "$(ls -ld "$M/tokens" | cut -c1-10)" drwxrwx---
ok "mkdir in tokens/ gives EPERM" same "$(python3 -c "
import os, errno
try: os.mkdir('$M/tokens/x'); print('OK')
except OSError as e: print(errno.errorcode[e.errno])")" EPERM
ok "tokens/ is empty before any login" same "$(ls -A "$M/tokens")" ""
if command -v sqlite3 >/dev/null; then
	# A token row as a login writes it (only a hash of the token is kept).
	sqlite3 -cmd '.timeout 5000' "$D/paddock.db" "INSERT INTO tokens (id, hash, label, created)
		VALUES ('abcdef012345', randomblob(32), 'laptop', 1767225600)"
	ok "a token shows as tokens/ID/" same "$(ls "$M/tokens")" abcdef012345
	ok "a token directory has label, created, last_used, expires" \
		same "$(ls "$M/tokens/abcdef012345" | tr '\n' ' ')" "created expires label last_used "
	ok "tokens/ID/expires is never for a token made without a lifetime" \
		same "$(cat "$M/tokens/abcdef012345/expires")" never
	ok "tokens/ID/label" same "$(cat "$M/tokens/abcdef012345/label")" laptop
	ok "tokens/ID/created is RFC 3339" same "$(cat "$M/tokens/abcdef012345/created")" \
		2026-01-01T00:00:00Z
	ok "tokens/ID/last_used is never before a use" \
		same "$(cat "$M/tokens/abcdef012345/last_used")" never
	ok "token files are read-only" bash -c "! (echo x > '$M/tokens/abcdef012345/label') 2>/dev/null"
	ok "rmdir tokens/ID revokes the token" rmdir "$M/tokens/abcdef012345"
	ok "a revoked token is gone from the database" \
		same "$(sqlite3 -cmd '.timeout 5000' "$D/paddock.db" 'SELECT count(*) FROM tokens')" 0
	ok "a revoked token is gone from the tree" bash -c "! ls '$M/tokens/abcdef012345' 2>/dev/null"
else
	diag "no sqlite3 shell: token directories not checked through the mount"
fi

# The kernel caches boxes/NAME: a box deleted and created again under the
# same name is the new box through the mount.
recreate_shows_new_box() {
	local b=$M/boxes/again ino1 root1 created1
	mkdir "$b" && echo tiny >"$b/type" || return 1
	ino1=$(stat -c %i "$b") root1=$(readlink "$b/root") created1=$(cat "$b/created")
	stat "$b/root/" >/dev/null || return 1
	sleep 1.1
	rmdir "$b" || return 1
	[ ! -e "$b" ] || { echo "still there after rmdir"; return 1; }
	[ "$(ls "$M/boxes" | grep -c '^again$')" = 0 ] || { echo "ls still lists it"; return 1; }
	mkdir "$b" || return 1
	[ "$(cat "$b/state")" = created ] || { echo "state $(cat "$b/state")"; return 1; }
	[ "$(cat "$b/type")" != tiny ] || { echo "the old box's type"; return 1; }
	[ "$(cat "$b/created")" != "$created1" ] || { echo "the old created time"; return 1; }
	[ "$(stat -c %i "$b")" != "$ino1" ] || { echo "the old inode"; return 1; }
	[ "$(readlink "$b/root")" != "$root1" ] || { echo "the old root"; return 1; }
	[ "$(stat -c %i "$b/root/")" = "$(stat -c %i "$(readlink "$b/root")/")" ] || { echo "root/ is not the new overlay"; return 1; }
	[ "$(ls "$M/boxes" | grep -c '^again$')" = 1 ] || { echo "ls lists it $(ls "$M/boxes" | grep -c '^again$') times"; return 1; }
	rmdir "$b"
}
ok "rmdir and mkdir of the same name show the new box" recreate_shows_new_box

pd_done
