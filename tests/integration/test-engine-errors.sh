#!/bin/bash
# The engine when things fail under it, each written as what an attacker or
# a broken host does:
#  - a fork whose new box's directory cannot be made fails with its reason
#    and removes nothing (its rollback once removed an unset path); one
#    that fails later leaves none of the new box's directories;
#  - crun failing otherwise than "no such container" is not "box gone": the
#    box's state stays, the failure is reported (a fake crun, through the
#    `crun` config key, fails `state` while a flag file exists);
#  - a TTL whose stop fails keeps its deadline and is tried again, also
#    after a restart;
#  - bytes a client writes (ESC, bytes that are not UTF-8) come back in
#    `error`, `info` and labels as valid UTF-8 without control characters;
#  - `error` is "TIME FILE: reason (ERRNO)" until FILE is written
#    successfully (another file's success leaves it), for boxes, jobs,
#    snapshots and volumes, through the mount and over HTTP; the reasons
#    for a bad type, volume or signal name the valid ones.
. "$(dirname "$0")/lib.sh"
pd_setup || exit 1
pd_fake_crun
pd_start

B=$M/boxes
db() { sqlite3 "$D/paddock.db" "$1"; }
# What is on disk under the data directory, but the database.
listing() { (cd "$D" && find boxes layers images volumes -xdev -printf '%p %y %s\n' 2>/dev/null | sort); }
export -f db listing
export D

# --- a fork that cannot make its box's directory ------------------------------
mkdir "$B/src"
echo one >"$B/src/root/f1"
echo running >"$B/src/state"
echo two >"$B/src/root/f2"
echo stopped >"$B/src/state" # freezes f1, f2 into a layer
echo three >"$B/src/root/f3"
# Each failing fork comes right after a good one, as the unset path the
# rollback once removed held what the last fork left on the stack: that
# fork's new layer.
failed=0 changed=0
for i in 1 2 3; do
	echo "good$i" >"$B/src/fork" || failed=1
	next=$(($(db "SELECT seq FROM sqlite_sequence WHERE name = 'boxes'") + 1))
	listing >"$PD_TMP/before"
	# Box directories are DATA/boxes/ID: make that one impossible.
	chattr +i "$D/boxes"
	write_expect EPERM "$B/src/fork" "bad$i" || failed=1
	chattr -i "$D/boxes"
	grep -q "fork: cannot create .*/boxes/$next: " "$B/src/error" || failed=1
	diff "$PD_TMP/before" <(listing) >&2 || changed=1
done
ok "forks when DATA/boxes/ID cannot be made fail: EPERM, reason in error" same $failed 0
ok "...and remove or add nothing on disk" same $changed 0
ok "no box bad*" bash -c "! ls '$B' | grep -q '^bad'"
ok "the source box's and the good forks' files are intact" bash -c "
	for b in src good1 good2 good3; do
		same \"\$(cat '$B/'\$b/root/f1 '$B/'\$b/root/f2 '$B/'\$b/root/f3)\" \"\$(printf 'one\\ntwo\\nthree')\" || exit 1
	done"
ok "every recorded layer is on disk" bash -c "
	for l in \$(db 'SELECT id FROM layers'); do [ -e '$D/layers/L'\$l ] || { diag \"L\$l is gone\"; exit 1; }; done"
ok "every snapshot's root is readable" bash -c "
	for s in \$(ls '$M/snapshots'); do cat '$M/snapshots/'\$s/root/f1 >/dev/null || exit 1; done"
ok "no intent and no half-made box row left" same "$(db "SELECT (SELECT count(*) FROM intents) + (SELECT count(*) FROM boxes WHERE name LIKE 'bad%')")" 0
ok "the source box is free again: a fork works now" bash -c "echo copy >'$B/src/fork' && same \"\$(cat '$B/copy/root/f3')\" three"
rmdir "$B/copy" "$B/good1" "$B/good2" "$B/good3"

# --- a fork that fails after its new box's directories were made ------------
# (Its mount point under RUN/roots was once left behind.)
roots() { ls "$PD_TMP/run/roots"; }
roots >"$PD_TMP/roots-before"
chattr +i "$D/layers"
ok "a fork that cannot store its layer fails" bash -c "! echo bad9 2>/dev/null >'$B/src/fork'"
chattr -i "$D/layers"
ok "...and leaves no directory under RUN/roots" diff "$PD_TMP/roots-before" <(roots)
ok "...and no box bad9" bash -c "! [ -e '$B/bad9' ] && ! db \"SELECT id FROM boxes WHERE name = 'bad9'\" | grep -q ."

# --- crun failing otherwise than "not found" ------------------------------------
mkdir "$B/run"
echo running >"$B/run/state"
touch "$FLAG"
ok "stop while crun state fails: EIO" write_expect EIO "$B/run/state" stopped
ok "...the box stays running" same "$(cat "$B/run/state")" running
ok "...its error says why" grep -q "cannot query container run: cannot read the cgroup" "$B/run/error"
ok "...and its container runs on" bash -c "pd_crun state run | grep -q '\"running\"'"
ok "rmdir while crun state fails: EIO, the box stays" bash -c "! rmdir '$B/run' 2>/dev/null && [ -d '$B/run' ] && same \$(cat '$B/run/state') running"
pd_stop
pd_start
ok "a restart while crun fails keeps the box running" same "$(cat "$B/run/state")" running
ok "...with the reason in its error" grep -q "state: cannot query container run: cannot read the cgroup" "$B/run/error"
ok "...and no stop event made up" bash -c "! snap '$B/run/events' | grep -q 'container ended'"
rm -f "$FLAG"
ok "once crun answers, the stop works" bash -c "echo stopped >'$B/run/state' && same \$(cat '$B/run/state') stopped && ! pd_crun state run >/dev/null 2>&1"
ok "a box whose container is really gone is stopped at restart" bash -c "
	echo running >'$B/run/state' && pd_crun kill run KILL && sleep 0.5 && pd_crun delete --force run"
pd_stop
pd_start
ok "...(state stopped)" same "$(cat "$B/run/state")" stopped

# --- a TTL whose stop fails is tried again ------------------------------------
# (The deadline was once cleared before the stop: one that failed, or a
# daemon killed before it, left the box running with no TTL at all.)
echo running >"$B/run/state"
touch "$FLAG"
echo 1 >"$B/run/ttl"
ok "a TTL expires while crun fails: the box runs on" bash -c "sleep 2.5; same \$(cat '$B/run/state') running"
ok "...its error says the TTL's stop failed" grep -q "ttl: cannot query container run: cannot read the cgroup" "$B/run/error"
ok "...and the deadline stays (expires is not never)" bash -c "! grep -qx never '$B/run/expires'"
rm -f "$FLAG"
ok "once crun answers, the stop is tried again and works" wait_for 20 bash -c "same \$(cat '$B/run/state') stopped"
ok "...and the deadline is done with" same "$(cat "$B/run/expires")" never
ok "...and the failure of the earlier try is cleared from error" same "$(cat "$B/run/error")" ""
echo running >"$B/run/state"
touch "$FLAG"
echo 1 >"$B/run/ttl"
sleep 2.5
pd_stop
rm -f "$FLAG"
pd_start
ok "a TTL that expired while the daemon could not stop the box fires after a restart" \
	wait_for 10 bash -c "same \$(cat '$B/run/state') stopped"

# --- error texts and labels are valid UTF-8 ------------------------------------
# clean FILE: valid UTF-8, no control byte but a final newline.
clean() {
	python3 - "$1" <<'PY'
import sys
b = open(sys.argv[1], "rb").read()
t = b.decode("utf-8")  # raises on invalid UTF-8
body = t[:-1] if t.endswith("\n") else t
bad = [c for c in body if ord(c) < 0x20 or 0x7f <= ord(c) <= 0x9f]
sys.exit(1 if bad else 0)
PY
}
info_ok() {
	python3 - "$1" <<'PY'
import json, sys
j = json.loads(open(sys.argv[1], "rb").read())  # bytes: must be UTF-8 JSON
e = j["error"]
sys.exit(1 if any(ord(c) < 0x20 or 0x7f <= ord(c) <= 0x9f for c in e) else 0)
PY
}
export -f clean info_ok
mkdir "$B/u"
# A value echoed in the reason: ESC [31m, a C1 control, bytes not UTF-8.
ok "a hostile type value: EINVAL" write_expect EINVAL "$B/u/type" "hex:$(printf 'x\033[31m\302\233\377\376' | xxd -p)"
ok "error is valid UTF-8 without control bytes" clean "$B/u/error"
ok "...and shows the bytes escaped" grep -qF 'x\x1b[31m\xc2\x9b\xff\xfe' "$B/u/error"
ok "info parses as JSON, its error clean" bash -c "cat '$B/u/info' >'$PD_TMP/info' && info_ok '$PD_TMP/info'"
ok "a hostile policy line: EINVAL" write_expect EINVAL "$B/u/policy" "hex:$(printf 'allow \033]0;pwned\007\377\n' | xxd -p)"
ok "error and info stay clean, the line shown escaped" bash -c "clean '$B/u/error' && grep -qF 'pwned\x07\xff' '$B/u/error' && cat '$B/u/info' >'$PD_TMP/info' && info_ok '$PD_TMP/info'"
echo "snap" >"$B/u/snapshot"
S=$(readlink "$B/u/snapshots/last")
ok "a hostile label is stored escaped" bash -c "printf 'l\033[2J\377\n' >'$M/snapshots/$S/label' && clean '$M/snapshots/$S/label' && grep -qF 'l\x1b[2J\xff' '$M/snapshots/$S/label'"
ok "a label is at most 255 bytes as stored: EINVAL" write_expect EINVAL "$M/snapshots/$S/label" "hex:$(head -c 100 /dev/zero | tr '\0' '\377' | xxd -p -c 1000)"
ok "...and the snapshot's error is clean" clean "$M/snapshots/$S/error"

# --- error: time and file, until that file's next success ------------------
pd_owner || diag "cannot log in"
mkdir "$B/e"
# err BOX: the box's error file; none: it is empty.
err() { cat "$B/$1/error"; }
none() { same "$(cat "$1")" ""; }
export -f err none
export B
ok "a bad type: EINVAL" write_expect EINVAL "$B/e/type" hug
ok "...error is 'TIME type: reason (ERRNO)', the reason naming the types" grep -Eqx \
	'[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z type: unknown type "hug": types are small, medium, large, tiny \(EINVAL\)' "$B/e/error"
ok "a success of another file leaves it" bash -c "echo 60 >'$B/e/ttl' && echo none >'$B/e/ttl' && err e | grep -q ' type: unknown type'"
ok "a success of the same file clears it" bash -c "echo medium >'$B/e/type' && none '$B/e/error'"
ok "...and info's error with it" python3 -c "import json; assert json.load(open('$B/e/info'))['error'] == ''"
ok "over HTTP: a bad type is 400, the body naming the types" bash -c "
	out=\$(hc -w ' %{http_code}' -X PUT --data-binary hugs boxes/e/type)
	[[ \$out == *'types are small, medium, large, tiny (EINVAL)\",\"errno\":\"EINVAL\"}'*' 400' ]]"
ok "...the body's error is the error file's line" bash -c "
	hc -X PUT --data-binary huge boxes/e/type | python3 -c '
import json, sys
e = json.load(sys.stdin)[\"error\"]
assert e == open(\"$B/e/error\").read().rstrip(\"\\n\"), e
assert e.endswith(\" type: unknown type \\\"huge\\\": types are small, medium, large, tiny (EINVAL)\"), e'"
ok "...and GET error shows it" bash -c "hc boxes/e/error | grep -q ' type: unknown type \"huge\"'"
ok "over HTTP, a success of another file leaves it" bash -c "
	hc -f -X PUT --data-binary 60 boxes/e/ttl && err e | grep -q ' type: '"
ok "over HTTP, a success of the same file clears it" bash -c "
	hc -f -X PUT --data-binary small boxes/e/type && none '$B/e/error' && same \"\$(hc boxes/e/error)\" ''"
ok "a write through a temp file and rename clears it too" bash -c "
	echo hug >'$B/e/type' 2>/dev/null; err e | grep -q ' type: ' &&
	echo large >'$B/e/.type.tmp' && mv '$B/e/.type.tmp' '$B/e/type' && none '$B/e/error'"

# A job's file is its own: exec/j/cwd, cleared by exec/j/cwd only.
mkdir "$B/e/exec/j" "$B/e/exec/k"
ok "a job's bad cwd: EINVAL" write_expect EINVAL "$B/e/exec/j/cwd" relative
ok "...is the box's error as exec/j/cwd" bash -c "err e | grep -Eq '^[0-9T:-]{19}Z exec/j/cwd: '"
ok "...which another job's success leaves" bash -c "echo /tmp >'$B/e/exec/k/cwd' && err e | grep -q ' exec/j/cwd: '"
ok "...and a good cwd for that job clears" bash -c "echo /tmp >'$B/e/exec/j/cwd' && none '$B/e/error'"

# Signals: the reason names them.
echo 'sleep 60' >"$B/e/exec/j/cmd"
ok "an unknown signal: EINVAL" write_expect EINVAL "$B/e/exec/j/ctl" "signal HUG"
ok "...the reason names the signals" grep -Eq \
	' exec/j/ctl: unknown signal "HUG": signals are HUP, INT, QUIT, .*, KILL, .*, TERM, .*, SYS \(with or without SIG\), or a number 1-64 \(EINVAL\)$' "$B/e/error"
ok "...over HTTP too" bash -c "
	out=\$(hc -w ' %{http_code}' -X PUT --data-binary 'signal 99' boxes/e/exec/j/ctl)
	[[ \$out == *'unknown signal \\\"99\\\": signals are HUP, INT, QUIT'*' 400' ]]"
ok "a good signal clears it" bash -c "echo 'signal TERM' >'$B/e/exec/j/ctl' && none '$B/e/error'"
ok "...and the job ends by it" same "$(timeout 10 cat "$B/e/exec/j/exit")" 143

# Volumes: the reason names those there are.
ok "a volume that does not exist: ENOENT" write_expect ENOENT "$B/e/volumes" nosuch
ok "...the reason says there are none" grep -q \
	' volumes: line 1: no volume named nosuch: there are no volumes (mkdir volumes/NAME makes one) (ENOENT)$' "$B/e/error"
mkdir "$M/volumes/v1" "$M/volumes/v2"
ok "...or names those there are" bash -c "
	write_expect ENOENT '$B/e/volumes' \$'v1\nnosuch' &&
	err e | grep -q ' volumes: line 2: no volume named nosuch: volumes are v1, v2 (ENOENT)\$'"
ok "a good list clears it" bash -c "echo v1 >'$B/e/volumes' && none '$B/e/error'"

# A volume's error: a refused import, then one that works.
ok "a volume: a refused import" bash -c "! echo 'not a tar archive' | cat >'$M/volumes/v2/import' 2>/dev/null"
ok "...is its error as import" bash -c "grep -Eq '^[0-9T:-]{19}Z import: import rejected' '$M/volumes/v2/error'"
mkdir -p "$PD_TMP/imp" && echo hi >"$PD_TMP/imp/f"
ok "...a good import clears it" bash -c "tar -C '$PD_TMP/imp' -cf - f >'$M/volumes/v2/import' && none '$M/volumes/v2/error' && same \"\$(cat '$M/volumes/v2/data/f')\" hi"

# A snapshot's error: a refused label, then one that works (over HTTP).
echo one >"$B/e/snapshot"
S=$(readlink "$B/e/snapshots/last")
long=$(head -c 300 /dev/zero | tr '\0' x)
ok "a snapshot: a label too long is 400 over HTTP" same "$(hc -o /dev/null -w '%{http_code}' -X PUT --data-binary "$long" "snapshots/$S/label")" 400
ok "...is its error as label" bash -c "grep -Eq '^[0-9T:-]{19}Z label: ' '$M/snapshots/$S/error'"
ok "...a good label over HTTP clears it" bash -c "
	hc -f -X PUT --data-binary two 'snapshots/$S/label' && none '$M/snapshots/$S/error' && same \"\$(hc snapshots/$S/error)\" ''"
ok "a box's error stays cleared across a restart" bash -c "
	echo hug >'$B/e/type' 2>/dev/null; echo small >'$B/e/type' && none '$B/e/error'"
pd_stop
pd_start
ok "...(empty after the restart)" none "$B/e/error"

echo stopped >"$B/e/state"
echo >"$B/e/volumes"
rmdir "$B/e" "$M/volumes/v1" "$M/volumes/v2"
rmdir "$B/u" "$B/src" "$B/run"
pd_done
