#!/bin/bash
# Snapshots as an agent with file tools (and an HTTP client) meets them:
# boxes/NAME/snapshots/last leads to the box's newest snapshot and the
# HTTP reply of a `snapshot` or `fork` write names it; `restore` takes an
# id or a label unique among the box's snapshots (an ambiguous or unknown
# one is refused with the reason, nothing changed); a restore of a running
# box says which jobs its stop ended; a fork inherits type, policy, TTL
# and volumes and has no address until it runs; every stop takes a
# snapshot, without deepening the box's stack when nothing changed.
# Networking is on (addresses), in a network namespace of the test's own.
. "$(dirname "$0")/lib.sh"
require_root
pd_own_netns "$0" "$@"
PD_NETWORK=on
export PD_NETWORK
pd_start
ok "the owner logs in over HTTP" pd_owner
B=$M/boxes

db() { python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); [print("|".join(map(str,r))) for r in c.execute(sys.argv[2])]' "$D/paddock.db" "$1"; }
# jget KEY: that member of the JSON object on stdin ("" when absent).
jget() { python3 -c 'import json,sys; o=json.load(sys.stdin); v=o.get(sys.argv[1], ""); print(str(v).lower() if isinstance(v, bool) else v)' "$1"; }
# hput PATH BODY: PUT over HTTP; prints "BODY STATUS" (JSON bodies end
# with a newline).
hput() { hc -X PUT --data-binary "$2" -w '%{http_code}' "$1" | tr '\n' ' '; }
# has STRING PATTERN: STRING matches the glob.
has() { [[ $1 == $2 ]] || { diag "[$1] does not match [$2]"; return 1; }; }
events() { snap "$B/$1/events" | cut -d' ' -f3-; }
export -f db jget

# --- snapshots/last --------------------------------------------------------
mkdir "$B/w"
ok "a box without snapshots has no snapshots/last" bash -c "! test -e '$B/w/snapshots/last' && [ -z \"\$(ls -A '$B/w/snapshots')\" ]"
echo running >"$B/w/state"
echo one >"$B/w/root/f"
echo first >"$B/w/snapshot"
s1=$(readlink "$B/w/snapshots/last")
ok "snapshot: snapshots/last is a link to the new snapshot's id" bash -c "[[ '$s1' =~ ^w-[0-9]+\$ ]] && test -d '$M/snapshots/$s1'"
ok "ls shows last beside the ids" same "$(ls "$B/w/snapshots" | tr '\n' ' ')" "last $s1 "
ok "last/label and last/root lead into it" bash -c "same \"\$(cat '$B/w/snapshots/last/label')\" first && same \"\$(cat '$B/w/snapshots/last/root/f')\" one"
echo two >"$B/w/root/f"
echo second >"$B/w/snapshot"
s2=$(readlink "$B/w/snapshots/last")
ok "a newer snapshot moves last" bash -c "[ '$s2' != '$s1' ] && same \"\$(cat '$B/w/snapshots/last/root/f')\" two"
ok "another box's snapshots leave it alone" bash -c "mkdir '$B/other' && echo o >'$B/other/snapshot' && same \"\$(readlink '$B/w/snapshots/last')\" '$s2'"
rmdir "$M/snapshots/$s2"
ok "deleting the newest moves last back" same "$(readlink "$B/w/snapshots/last")" "$s1"

# Over HTTP: the id in the reply, last as a link.
out=$(hput boxes/w/snapshot third)
s3=$(readlink "$B/w/snapshots/last")
ok "HTTP: PUT snapshot answers 200 with the new id" same "$out" "{\"snapshot\":\"$s3\"} 200"
ok "HTTP: GET snapshots/last answers the link" same "$(hc boxes/w/snapshots/last)" "{\"link\":\"$s3\"}"
ok "HTTP: the box's snapshots/ listing has last, a link" bash -c "hc boxes/w/snapshots/ | python3 -c '
import json, sys
e = {x[\"name\"]: x[\"type\"] for x in json.load(sys.stdin)[\"entries\"]}
assert e == {\"last\": \"link\", \"$s1\": \"link\", \"$s3\": \"link\"}, e'"
ok "HTTP: other control writes still answer 204, no body" same "$(hput boxes/w/ttl 600)" 204
out=$(hput boxes/w/snapshot "$(printf 'x\ny')")
ok "HTTP: a refused snapshot answers the error, no id" has "$out" '*"errno":"EINVAL"}'*' 400'

# --- restore by id or label ------------------------------------------------
mkdir "$B/r"
echo base >"$B/r/root/f"
echo 'before upgrade' >"$B/r/snapshot"
r_base=$(readlink "$B/r/snapshots/last")
echo mid >"$B/r/root/f"
echo dup >"$B/r/snapshot"
r_d1=$(readlink "$B/r/snapshots/last")
echo later >"$B/r/root/f"
echo dup >"$B/r/snapshot"
r_d2=$(readlink "$B/r/snapshots/last")
echo end >"$B/r/root/f"
ok "restore by a label unique among the box's (with a space)" bash -c "echo 'before upgrade' > '$B/r/restore' && same \"\$(cat '$B/r/root/f')\" base"
echo changed >"$B/r/root/f"
echo x >"$B/r/root/g"
ok "restore by a label two snapshots have: EINVAL" write_expect EINVAL "$B/r/restore" dup
ok "...the error names both ids" bash -c "grep -q 'restore: 2 snapshots of r have the label \"dup\" ($r_d1, $r_d2)' '$B/r/error'"
ok "...nothing changed" bash -c "same \"\$(cat '$B/r/root/f')\" changed && test -e '$B/r/root/g' && same \"\$(readlink '$B/r/snapshots/last')\" '$r_d2'"
ok "restore by a label none has: ENOENT" write_expect ENOENT "$B/r/restore" nolabel
ok "...the error says so" grep -q "restore: no snapshot nolabel: no snapshot has that id, and none of r's has that label" "$B/r/error"
ok "...nothing changed" bash -c "same \"\$(cat '$B/r/root/f')\" changed && test -e '$B/r/root/g'"
ok "a label of another box's snapshot is not this box's: ENOENT" write_expect ENOENT "$B/r/restore" first
out=$(hput boxes/r/restore dup)
ok "HTTP: an ambiguous label answers 400 with errno and the ids" has "$out" "*($r_d1, $r_d2)*\"errno\":\"EINVAL\"} 400"
out=$(hput boxes/r/restore nolabel)
ok "HTTP: an unknown label answers 404" has "$out" '*no snapshot nolabel*"errno":"ENOENT"} 404'
ok "...nothing changed" same "$(cat "$B/r/root/f")" changed
echo "$r_d1" >"$M/snapshots/$r_base/label"
ok "an id wins over a label equal to it" bash -c "echo '$r_d1' > '$B/r/restore' && same \"\$(cat '$B/r/root/f')\" mid"
echo 'before upgrade' >"$M/snapshots/$r_base/label"
out=$(hput boxes/r/restore "$r_d2")
ok "HTTP: restore of a stopped box answers the id, not restarted" same "$out" "{\"snapshot\":\"$r_d2\",\"restarted\":false} 200"
ok "...and restores it" same "$(cat "$B/r/root/f")" later

# --- restore of a running box: its jobs ------------------------------------
echo running >"$B/r/state"
echo 'sleep 1000' >"$B/r/exec/new"
j1=$(readlink "$B/r/exec/last")
mkdir "$B/r/exec/build"
echo 'sleep 1000' >"$B/r/exec/build/cmd"
echo true >"$B/r/exec/new"
jt=$(readlink "$B/r/exec/last")
wait_for 10 bash -c "same \"\$(cat '$B/r/exec/$jt/status')\" 'exited 0' && same \"\$(cat '$B/r/exec/build/status')\" running && same \"\$(cat '$B/r/exec/$j1/status')\" running" >/dev/null
echo pre >"$B/r/root/pre"
ans=$(hc -X PUT --data-binary "before upgrade" -w '\n%{http_code}' boxes/r/restore)
code=${ans##*$'\n'}
ans=${ans%$'\n'*}
before=$(echo "$ans" | jget before)
ok "HTTP: restore of a running box answers 200" same "$code" 200
ok "...the snapshot restored (a label resolved)" same "$(echo "$ans" | jget snapshot)" "$r_base"
ok "...restarted: true" same "$(echo "$ans" | jget restarted)" true
ok "...the jobs its stop ended (the running ones)" same "$(echo "$ans" | jget jobs_ended)" "$j1 build"
ok "...the snapshot of its files before" bash -c "[ -n '$before' ] && same \"\$(cat '$M/snapshots/$before/root/pre')\" pre && same \"\$(cat '$M/snapshots/$before/label')\" stop"
ok "the box runs again, restored" bash -c "same \"\$(cat '$B/r/state')\" running && same \"\$(cat '$B/r/root/f')\" base && test ! -e '$B/r/root/pre'"
ok "the jobs ended (killed)" bash -c "wait_for 10 bash -c \"grep -q '^killed' '$B/r/exec/$j1/status' && grep -q '^killed' '$B/r/exec/build/status'\""
wait_for 10 bash -c "snap '$B/r/events' | grep -q 'job build ended'" >/dev/null
# Job ends come from their supervisors, in any order with the rest.
ev=$(events r | grep -v '^job ' | tr '\n' '|')
ok "events: the restore says it stops the box and which jobs that ends" has "$ev" "*|restoring $r_base: stopping the box first, which ends its running jobs: $j1 build|*"
ok "events: then the stop, the restore with the snapshot of before, the start" has "$ev" "*|snapshot $before|stopped|restored $r_base (its files from before are in snapshot $before)|started|*"
echo 'before upgrade' >"$B/r/restore"
ok "FUSE: a restore with no job running says so" bash -c "snap '$B/r/events' | grep -q ' restoring $r_base: stopping the box first (no job is running)\$'"

# --- fork: type, policy, TTL, volumes; no address until it runs ------------
mkdir "$B/p" "$M/volumes/v1"
echo medium >"$B/p/type"
printf 'deny-all\n' >"$B/p/policy"
echo v1 >"$B/p/volumes"
echo 3600 >"$B/p/ttl"
echo running >"$B/p/state"
ip_p=$(cat "$B/p/ip")
out=$(hput boxes/p/fork q)
q_snap=$(readlink "$B/p/snapshots/last")
ok "HTTP: PUT fork answers the new box and its snapshot" same "$out" "{\"box\":\"q\",\"snapshot\":\"$q_snap\"} 200"
ok "the fork inherits the type" same "$(cat "$B/q/type")" medium
ok "the fork inherits the policy" same "$(cat "$B/q/policy")" deny-all
ok "the fork inherits the volumes" bash -c "same \"\$(cat '$B/q/volumes')\" v1 && same \"\$(cat '$M/volumes/v1/boxes' | tr '\n' ' ')\" 'p q '"
ok "the fork inherits the TTL deadline" bash -c "same \"\$(cat '$B/q/expires')\" \"\$(cat '$B/p/expires')\" && [ \$(cat '$B/q/ttl') -gt 3500 ]"
ok "the source has an address" bash -c "[[ '$ip_p' =~ ^10\\. ]]"
ok "an unstarted fork has none" bash -c "same \"\$(cat '$B/q/ip')\" '' && cat '$B/q/info' | python3 -c 'import json,sys; o=json.load(sys.stdin); assert o.get(\"ip\", \"\") in (\"\", None), o'"
echo running >"$B/q/state"
ip_q=$(cat "$B/q/ip")
ok "started, it gets an address of its own" bash -c "[[ '$ip_q' =~ ^10\\. ]] && [ '$ip_q' != '$ip_p' ]"
ok "its volume is mounted" same "$(pd_job q 'test -d /mnt/v1 && echo yes')" yes
printf 'allow-all\n' >"$B/p/policy"
ok "the two policies are apart afterwards" bash -c "same \"\$(cat '$B/q/policy')\" deny-all"
echo none >"$B/p/ttl"
echo s >"$B/p/fork"
ok "a fork of a box without TTL has none" bash -c "same \"\$(cat '$B/s/ttl')\" none && same \"\$(cat '$B/s/expires')\" never"
pd_stop
pd_start
ok "after a restart: the fork's policy, volumes and TTL are kept" bash -c "same \"\$(cat '$B/q/policy')\" deny-all && same \"\$(cat '$B/q/volumes')\" v1 && [ \$(cat '$B/q/ttl') -gt 3000 ]"

# --- every stop takes a snapshot ---------------------------------------------
mkdir "$B/t"
echo kept >"$B/t/root/kept"
echo running >"$B/t/state"
echo stopped >"$B/t/state"
t1=$(readlink "$B/t/snapshots/last")
stack=$(db "SELECT layers FROM boxes WHERE name = 't'")
n_layers=$(find "$D/layers" -maxdepth 1 -name 'L*' | wc -l)
echo running >"$B/t/state"
echo stopped >"$B/t/state"
t2=$(readlink "$B/t/snapshots/last")
ok "a stop without changes takes a snapshot labelled stop" bash -c "[ -n '$t2' ] && [ '$t2' != '$t1' ] && same \"\$(cat '$M/snapshots/$t2/label')\" stop"
ok "...holding the box's files" same "$(cat "$M/snapshots/$t2/root/kept")" kept
ok "...with size 0 (nothing no older snapshot holds)" bash -c "[ \$(cat '$M/snapshots/$t2/size') -le 4096 ]"
ok "...without deepening the box's stack" same "$(db "SELECT layers FROM boxes WHERE name = 't'")" "$stack"
ok "...one empty layer more" bash -c "same \$(find '$D/layers' -maxdepth 1 -name 'L*' | wc -l) $((n_layers + 1))"
ok "...and the box's root/ stays the same mount" bash -c "same \"\$(cat '$B/t/root/kept')\" kept"
echo changed >"$B/t/root/kept"
ok "restoring it brings the files back" bash -c "echo '$t2' > '$B/t/restore' && same \"\$(cat '$B/t/root/kept')\" kept"
stack=$(db "SELECT layers FROM boxes WHERE name = 't'")
echo again >"$B/t/snapshot"
ok "a snapshot of a stopped box without changes keeps its stack too" bash -c "same \"\$(db \"SELECT layers FROM boxes WHERE name = 't'\")\" '$stack' && same \"\$(cat '$B/t/snapshots/last/label')\" again"

for x in w other r p q s t; do
	echo stopped >"$B/$x/state" 2>/dev/null
	rmdir "$B/$x"
done
for s in $(ls "$M/snapshots"); do rmdir "$M/snapshots/$s"; done
rmdir "$M/volumes/v1"
ok "no layer is left" same "$(find "$D/layers" -maxdepth 1 -name 'L*' | wc -l)" 0
pd_done
