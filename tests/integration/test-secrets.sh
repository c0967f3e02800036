#!/bin/bash
# Secrets: secrets/NAME over FUSE and HTTP (set, read "set TIME", list,
# remove), a box's secrets file, jobs that get them as environment
# variables (rotation at the next job), and every place a value must not
# be: the tree's and HTTP's reads, info, a snapshot's export, the daemon's
# log, the data directory (spec.json, the job's files, the database), the
# processes' command lines. Attacks: other users, HTTP without a token or
# with a traversal, names that try to escape, a value too large, a key file
# with the wrong mode, and kill -9 in the middle of a set.
. "$(dirname "$0")/lib.sh"
command -v setpriv >/dev/null || skip_all "needs setpriv"
pd_start
pd_owner || { diag "no owner"; exit 1; }

S=$M/secrets
B=$M/boxes/sb
V1=first-value-$RANDOM$RANDOM
V2=second-value-$RANDOM$RANDOM
V3=third-value-$RANDOM$RANDOM

errno_of() { # errno_of PYTHON-STATEMENT: the errno name it fails with, or OK
	python3 -c "
import errno, os, sys
try:
    $1
    print('OK')
except OSError as e:
    print(errno.errorcode[e.errno])"
}
export -f errno_of

# --- the tree ------------------------------------------------------------------
ok "secrets/ is a directory only root and the group reach" same "$(stat -c %a "$S")" 770
ok "it is empty at first" same "$(ls -A "$S")" ""
ok "echo VALUE > secrets/NAME sets a new secret" bash -c "echo '$V1' > '$S/API_KEY'"
ok "it is listed" same "$(ls "$S")" API_KEY
ok "a read says only when it was set" bash -c "grep -Eqx 'set [0-9-]{10}T[0-9:]{8}Z' '$S/API_KEY'"
ok "the read never holds the value" bash -c "! grep -q '$V1' '$S/API_KEY'"
ok "its mode says root and the group may read and write it" same "$(stat -c %a "$S/API_KEY")" 660
ok "printf (no newline) sets another" bash -c "printf '%s' 'two words' > '$S/_second_1'"
ok "both are listed in name order" same "$(ls "$S" | tr '\n' ' ')" "API_KEY _second_1 "
ok "touch makes an empty secret" bash -c "touch '$S/EMPTY' && test -e '$S/EMPTY'"
ok "rm removes it" bash -c "rm '$S/EMPTY' && test ! -e '$S/EMPTY'"
ok "rm of a missing one is ENOENT" same "$(errno_of "os.unlink('$S/EMPTY')")" ENOENT
ok "a bad name is EINVAL: a=b" same "$(errno_of "open('$S/a=b', 'w')")" EINVAL
ok "a bad name is EINVAL: 1ABC" same "$(errno_of "open('$S/1ABC', 'w')")" EINVAL
ok "a bad name is EINVAL: dash-name" same "$(errno_of "open('$S/dash-name', 'w')")" EINVAL
ok "a name over 128 bytes is ENAMETOOLONG" same "$(errno_of "open('$S/' + 'A' * 129, 'w')")" ENAMETOOLONG
ok "a name of 128 bytes is fine" bash -c "echo x > '$S/$(printf 'B%.0s' $(seq 128))' && rm '$S/$(printf 'B%.0s' $(seq 128))'"
ok "../x from secrets/ leads out of it, and makes no secret" bash -c "
	test \"\$(errno_of \"open('$S/../x', 'w')\")\" != OK && test \"\$(ls '$S' | tr '\n' ' ')\" = 'API_KEY _second_1 '"
ok "a value of 64 KiB is taken" bash -c "head -c 65536 /dev/zero | tr '\\0' a > '$S/BIG'"
ok "a value of 64 KiB + 1 (no newline) is refused: EFBIG" \
	same "$(errno_of "fd = os.open('$S/BIG', os.O_WRONLY | os.O_TRUNC); os.write(fd, b'a' * 65537); os.close(fd)")" EFBIG
ok "a NUL in the value is refused: EINVAL" \
	same "$(errno_of "fd = os.open('$S/BIG', os.O_WRONLY | os.O_TRUNC); os.write(fd, b'a\\0b'); os.close(fd)")" EINVAL
ok "mkdir in secrets/ is refused: EPERM" same "$(errno_of "os.mkdir('$S/DIR')")" EPERM
ok "rename of a secret is refused: EPERM" same "$(errno_of "os.rename('$S/BIG', '$S/BIG2')")" EPERM
ok "chmod of a secret is refused: EPERM" same "$(errno_of "os.chmod('$S/BIG', 0o644)")" EPERM
ok "chmod of secrets/ is refused: EPERM" same "$(errno_of "os.chmod('$S', 0o777)")" EPERM
rm -f "$S/BIG"

# --- another user --------------------------------------------------------------
nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups -- "$@"; }
ok "another user cannot list secrets/" bash -c "! nobody ls '$S' 2>/dev/null"
ok "another user cannot read a secret's file" bash -c "! nobody cat '$S/API_KEY' 2>/dev/null"
ok "another user cannot set one" bash -c "! nobody sh -c 'echo evil > $S/API_KEY' 2>/dev/null"
ok "another user cannot make one" bash -c "! nobody sh -c 'echo evil > $S/EVIL' 2>/dev/null && test ! -e '$S/EVIL'"
ok "another user cannot remove one" bash -c "! nobody rm -f '$S/API_KEY' 2>/dev/null && test -e '$S/API_KEY'"

# --- HTTP ----------------------------------------------------------------------
ok "GET secrets/ lists the names" bash -c "hc secrets/ | python3 -c '
import json, sys
names = sorted(e[\"name\"] for e in json.load(sys.stdin)[\"entries\"])
assert names == [\"API_KEY\", \"_second_1\"], names'"
ok "GET secrets/NAME gives only set TIME" bash -c "hc secrets/API_KEY | grep -Eqx 'set [0-9-]{10}T[0-9:]{8}Z'"
ok "PUT secrets/NEW makes a secret" same "$(hc -o /dev/null -w '%{http_code}' -X PUT --data-binary 'over http' secrets/HTTP_ONE)" 204
ok "it is in the tree at once" test -e "$S/HTTP_ONE"
ok "PUT of a bad name is refused with 400" same "$(hc -o /dev/null -w '%{http_code}' -X PUT --data-binary v 'secrets/a-b')" 400
ok "PUT of 64 KiB + 1 is refused" bash -c "
	code=\$(head -c 65537 /dev/zero | tr '\\0' a | hc -o /dev/null -w '%{http_code}' -X PUT --data-binary @- secrets/HTTP_ONE)
	[ \"\$code\" -ge 400 ]"
ok "DELETE secrets/NAME removes it" bash -c "
	test \"\$(hc -o /dev/null -w '%{http_code}' -X DELETE secrets/HTTP_ONE)\" = 204 && test ! -e '$S/HTTP_ONE'"
ok "without a token: 401, nothing read" same "$(curl -s -o /dev/null -w '%{http_code}' "$PD_URL/v1/tree/secrets/API_KEY")" 401
ok "without a token: a PUT makes nothing" bash -c "
	curl -s -o /dev/null -X PUT --data-binary evil '$PD_URL/v1/tree/secrets/EVIL'; test ! -e '$S/EVIL'"
ok "traversal secrets/../boxes does not leave secrets/" bash -c "
	out=\$(curl -sS --path-as-is -H 'Authorization: Bearer $PD_TOKEN' '$PD_URL/v1/tree/secrets/../boxes')
	! grep -q '\"entries\"' <<<\"\$out\""
ok "traversal PUT secrets/../x makes nothing" bash -c "
	curl -sS --path-as-is -o /dev/null -X PUT --data-binary v -H 'Authorization: Bearer $PD_TOKEN' '$PD_URL/v1/tree/secrets/../EVIL'
	test ! -e '$S/EVIL' && test ! -e '$M/EVIL'"
ok "an encoded NUL in a name makes nothing" bash -c "
	curl -sS --path-as-is -o /dev/null -X PUT --data-binary v -H 'Authorization: Bearer $PD_TOKEN' '$PD_URL/v1/tree/secrets/A%00B'
	test \"\$(ls '$S' | tr '\n' ' ')\" = 'API_KEY _second_1 '"

# --- a box's secrets -------------------------------------------------------------
mkdir "$B"
ok "a box's secrets file is empty at first" same "$(cat "$B/secrets")" ""
ok "an unset name is refused: ENOENT" write_expect ENOENT "$B/secrets" "NOT_SET"
ok "the reason names it" grep -q 'secret NOT_SET is not set' "$B/error"
ok "a bad name is refused: EINVAL" write_expect EINVAL "$B/secrets" "a=b"
ok "a name twice is refused" write_expect EEXIST "$B/secrets" "$(printf 'API_KEY\nAPI_KEY')"
ok "the list is written whole" bash -c "printf 'API_KEY\n_second_1\n' > '$B/secrets'"
ok "it reads back in its order" same "$(cat "$B/secrets" | tr '\n' ' ')" "API_KEY _second_1 "
ok "over HTTP too" same "$(hc boxes/sb/secrets | tr '\n' ' ')" "API_KEY _second_1 "

# Jobs print a digest of what they got, never the value: the data
# directory is searched for the values below.
digest() { printf '%s' "$1" | sha256sum | cut -c1-64; }
ok "a job sees them as environment variables" \
	same "$(pd_job sb 'printf %s "$API_KEY|$_second_1" | sha256sum | cut -c1-64')" "$(digest "$V1|two words")"
ok "rotation: a new value..." bash -c "echo '$V2' > '$S/API_KEY'"
ok "...is what the next job sees" \
	same "$(pd_job sb 'printf %s "$API_KEY" | sha256sum | cut -c1-64')" "$(digest "$V2")"
ok "a job's own env line wins over a secret of the same name" bash -c "
	mkdir '$B/exec/own' && echo API_KEY=mine > '$B/exec/own/env' && echo 'echo \$API_KEY' > '$B/exec/own/cmd' &&
	test \"\$(timeout 30 cat '$B/exec/own/exit')\" = 0 && test \"\$(cat '$B/exec/own/stdout')\" = mine"

# A job that runs while its value is looked for everywhere.
echo "$V2" >"$S/API_KEY"
echo 'test -n "$API_KEY"; sleep 30' >"$B/exec/new"
JL=$(readlink "$B/exec/last")
wait_for 10 test -s "$B/exec/$JL/pid"
printf '%s\n' "$V1" "$V2" >"$PD_TMP/values"
# grep -f: no command line of the test's own holds a value either.
ok "no command line on the host holds the value" bash -c "! ps -eo args | grep -qF -f '$PD_TMP/values'"
ok "the supervisor's environment does not hold it" bash -c "
	pid=\$(cat '$D/boxes/'*/jobs/$JL/supervisor.pid | head -1)
	test -n \"\$pid\" && ! tr '\\0' '\\n' < /proc/\$pid/environ | grep -qF -- '$V2'"
ok "nor its command line" bash -c "
	pid=\$(cat '$D/boxes/'*/jobs/$JL/supervisor.pid | head -1)
	! tr '\\0' ' ' < /proc/\$pid/cmdline | grep -qF -- '$V2'"
echo kill >"$B/exec/$JL/ctl"

# Without the box's exec server (its socket gone: as for a box started by
# an older daemon) a job would run through `crun exec`, whose command line
# (--env=NAME=VALUE) every user of the host can read: refused instead.
SOCK=$PD_TMP/run/exec/sb
mv "$SOCK" "$SOCK.away"
echo 'sleep 3' >"$B/exec/new"
JN=$(readlink "$B/exec/last")
seen=no
for i in $(seq 30); do
	ps -eo args | grep -qF -f "$PD_TMP/values" && seen=yes
	[ -s "$B/exec/$JN/ended" ] && break
	sleep 0.1
done
ok "without the exec server, a job with secrets does not run" same "$(timeout 30 cat "$B/exec/$JN/exit")" 127
ok "and says why" grep -q 'a job with secrets runs only through it' "$B/exec/$JN/output"
ok "no command line showed a value meanwhile" same "$seen" no
mv "$SOCK.away" "$SOCK"
ok "with the server back, jobs run again" same "$(pd_job sb 'echo back')" back

ok "info does not hold a value" bash -c "! grep -qF -e '$V1' -e '$V2' -e 'two words' '$B/info'"
ok "spec.json holds no value" bash -c "! grep -rqF -e '$V2' '$D'/boxes/*/jobs/*/spec.json"
ok "the job directories hold no value" bash -c "! grep -rqF -e '$V1' -e '$V2' '$D'/boxes/*/jobs/"
ok "no file of the data directory holds one (the database neither)" bash -c "
	! grep -rqF -e '$V1' -e '$V2' '$D' && ! grep -rqaF -e '$V1' -e '$V2' '$D'/paddock.db*"
ok "the daemon's log holds none" bash -c "! grep -qF -e '$V1' -e '$V2' '$PD_TMP/paddockd.log'"
ok "a snapshot's export holds none" bash -c "
	echo before > '$B/snapshot' && s=\$(readlink '$B/snapshots/last') &&
	! (cat '$M/snapshots/'\$s/export | zstd -dc | grep -aqF -e '$V1' -e '$V2')"
ok "the key file is 0600 and root's" same "$(stat -c '%a %u' "$D/secrets.key")" "600 0"

# --- removal -----------------------------------------------------------------------
ok "removing a secret a box lists..." rm "$S/_second_1"
ok "...drops it from the box's list" same "$(cat "$B/secrets")" "API_KEY"
ok "...and the next job goes without it" same "$(pd_job sb 'echo "${_second_1-unset}"')" unset

# --- kill -9 in the middle of a set, and a restart ------------------------------
# A set is one sqlite statement: a daemon killed at any point leaves the old
# value or the new one, and the restarted daemon decrypts it.
echo "$V2" >"$S/API_KEY"
( for i in $(seq 200); do echo "$V3" >"$S/API_KEY" || break; echo "$V2" >"$S/API_KEY" || break; done ) 2>/dev/null &
writer=$!
sleep 0.3
pd_kill9
wait "$writer" 2>/dev/null
fusermount3 -u "$M" 2>/dev/null || umount -l "$M"
pd_start
ok "after kill -9 and a restart the secret is still there" test -e "$S/API_KEY"
got=$(pd_job sb 'printf %s "$API_KEY" | sha256sum | cut -c1-64')
ok "and a job gets the old value or the new one, decrypted" \
	test "$got" = "$(digest "$V2")" -o "$got" = "$(digest "$V3")"

# --- the key file -------------------------------------------------------------------
pd_stop
fusermount3 -u "$M" 2>/dev/null || true
chmod 0644 "$D/secrets.key"
"$PADDOCKD" --config "$PD_TMP/paddock.ini" --foreground >"$PD_TMP/badkey.log" 2>&1 &
bad=$!
pd_reap "$bad" 20
rc=$?
ok "a key file of mode 0644 stops the daemon at start" test "$rc" -ne 0 -a "$rc" -ne 255
ok "with a clear reason" grep -q 'secrets.key has mode 0644, not 0600' "$PD_TMP/badkey.log"
ok "and the file is left as it was" same "$(stat -c %a "$D/secrets.key")" 644
fusermount3 -u "$M" 2>/dev/null || true
chmod 0600 "$D/secrets.key"
chown 65534 "$D/secrets.key"
"$PADDOCKD" --config "$PD_TMP/paddock.ini" --foreground >"$PD_TMP/badkey2.log" 2>&1 &
bad=$!
pd_reap "$bad" 20
ok "a key file owned by another user stops it too" grep -q 'secrets.key is owned by uid 65534' "$PD_TMP/badkey2.log"
fusermount3 -u "$M" 2>/dev/null || true
chown 0 "$D/secrets.key"
pd_start
ok "with the key fixed, the daemon starts and decrypts" same "$(pd_job sb 'echo ok-"${API_KEY:+set}"')" ok-set

pd_done
