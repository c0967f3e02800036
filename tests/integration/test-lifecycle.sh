#!/bin/bash
# Box lifecycle against a real mount and real crun: start, limits (live),
# stop with grace, restart, memory limit, delete leaving nothing behind.
. "$(dirname "$0")/lib.sh"
pd_start

B=$M/boxes/life
cgv1() { cat "/sys/fs/cgroup/$1/$PD_CGROUP/life/$2"; }
export -f cgv1

ok "mkdir creates a box in state created" mkdir "$B"
ok "state reads created" same "$(cat "$B/state")" created
ok "box dir lists its files" same "$(ls "$B" | tr '\n' ' ')" "created desktop docker error events exec expires fork image info ip policy ports prompt prompts restore root screenshot.png secrets snapshot snapshots state ttl type urls usage volumes "
ok "created is RFC 3339" grep -Eq '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$' "$B/created"
ok "image defaults to the configured one" same "$(cat "$B/image")" tiny
ok "type defaults to small" same "$(cat "$B/type")" small
ok "a created box has no processes" same "$(grep ^pids "$B/usage")" "pids 0"

ok "writing running starts it" bash -c "echo running > '$B/state'"
ok "state reads running" same "$(cat "$B/state")" running
pids=$(awk '/^pids/ {print $2}' "$B/usage")
ok "a process runs inside (usage pids >= 1)" test "${pids:-0}" -ge 1
ok "its container is known to crun" bash -c "crun_list | grep -qx life"
ok "hostname is the box name" same "$(pd_crun exec life hostname)" life
ok "PID 1 is paddock-init" same "$(pd_crun exec life cat /proc/1/cmdline | tr '\0' ' ')" "/dev/paddock-init "
# Box root is an unprivileged host id (test-userns.sh): setuid programs
# (sudo) may work inside, so no_new_privs is off; the box's user namespace
# is what holds.
ok "no_new_privileges is off (setuid works inside)" bash -c "pd_crun exec life grep -q '^NoNewPrivs:[[:space:]]*0' /proc/1/status"
ok "PID 1 is in a user namespace of its own" bash -c "[ \"\$(pd_crun exec life cat /proc/1/uid_map | awk '{print \$2}')\" -ge 65536 ]"
ok "capabilities are cut (no CAP_SYS_ADMIN)" bash -c "
	eff=\$(pd_crun exec life awk '/^CapEff/ {print \$2}' /proc/self/status)
	[ \$(( 0x\$eff & (1 << 21) )) -eq 0 ]"
ok "/sys is read-only inside" bash -c "! pd_crun exec life touch /sys/x 2>/dev/null"
ok "/proc is mounted inside" bash -c "pd_crun exec life test -r /proc/self/status"
ok "a file written in the box lands in its upper layer" bash -c "
	pd_crun exec life sh -c 'echo hi > /root/hello' && test \"\$(cat '$D'/boxes/*/disk/upper/root/hello)\" = hi"
ok "usage is flat keyed" same "$(cut -d' ' -f1 "$B/usage" | tr '\n' ' ')" "cpu_usec cpu_percent memory_bytes pids disk_bytes "
ok "info is one JSON object" python3 -c "
import json, sys
j = json.load(open('$B/info'))
assert j['name'] == 'life' and j['state'] == 'running' and j['type'] == 'small', j
assert j['usage']['pids'] >= 1, j"

# cpu_percent: CPU over the last 5 s (5 to 6: the daemon samples every
# second), 100 = one CPU. A box spinning a core reads about 100 (small: one
# CPU); an idle box, and the same box once it stopped spinning, about 0.
# Loose bounds: the machine may be busy with other work.
H=$M/boxes/hot
pct() { awk '/^cpu_percent/ {print $2}' "$M/boxes/$1/usage"; }
pct_in() { local p; p=$(pct "$1"); [ "${p:-x}" -ge "$2" ] && [ "$p" -le "$3" ]; }
export -f pct pct_in
mkdir "$H"
echo 'while :; do :; done' >"$H/exec/new" # starts the box
spin=$(readlink "$H/exec/last")
ok "a box spinning one core reads cpu_percent about 100" wait_for 20 pct_in hot 50 115
# What the box's cumulative cpu_usec says over the same last 5 s: the two
# agree whatever share of a core the spinner gets on a busy machine.
own_rate() {
	local c0 c1 t0 t1
	c0=$(awk '/^cpu_usec/ {print $2}' "$H/usage") t0=$(date +%s%N)
	sleep 5
	c1=$(awk '/^cpu_usec/ {print $2}' "$H/usage") t1=$(date +%s%N)
	echo $(((c1 - c0) * 100 / ((t1 - t0) / 1000)))
}
rate=$(own_rate) p=$(pct hot)
diag "spinning: cpu_percent $p, its cpu_usec grew by $rate% of a core over 5 s, idle beside it: $(pct life)"
ok "...agreeing with the growth of its cpu_usec over those 5 s (within 20)" \
	test $((p - rate)) -le 20 -a $((rate - p)) -le 20
ok "...and within its one CPU, read after read" bash -c "
	for i in 1 2 3 4 5 6 7 8 9 10; do pct_in hot 30 115 || exit 1; sleep 0.3; done"
ok "...while the idle box beside it reads about 0" pct_in life 0 5
ok "info has cpu_percent too" python3 -c "
import json
j = json.load(open('$H/info'))
assert 30 <= j['usage']['cpu_percent'] <= 115, j"
pd_owner || diag "cannot log in"
ok "...and so does HTTP (usage and info)" bash -c "
	hc boxes/hot/usage | awk '/^cpu_percent/ {exit !(\$2 >= 30 && \$2 <= 115)}' &&
	hc boxes/hot/info | python3 -c 'import json, sys; assert 30 <= json.load(sys.stdin)[\"usage\"][\"cpu_percent\"] <= 115'"
echo kill >"$H/exec/$spin/ctl"
ok "once it stops spinning it reads about 0 again (the window moves on)" wait_for 15 pct_in hot 0 5
ok "a stopped box reads 0" bash -c "echo stopped >'$H/state' && same \$(pct hot) 0"
rmdir "$H"

# Limits from the type, live.
ok "small's memory limit is in the cgroup" same "$(cgv1 memory memory.limit_in_bytes)" $((2 * 1024 * 1024 * 1024))
ok "small's CPU quota is in the cgroup" same "$(cgv1 cpu cpu.cfs_quota_us)" 100000
ok "type change to tiny applies live" bash -c "echo tiny > '$B/type'"
ok "memory limit follows (64M)" same "$(cgv1 memory memory.limit_in_bytes)" $((64 * 1024 * 1024))
ok "CPU quota follows (0.5 cpu)" same "$(cgv1 cpu cpu.cfs_quota_us)" 50000
ok "pids limit follows" same "$(cgv1 pids pids.max)" 256
ok "type reads tiny" same "$(cat "$B/type")" tiny
ok "info shows the new limits" python3 -c "
import json; j = json.load(open('$B/info')); assert j['limits']['memory'] == 64 << 20, j"

# The memory limit kills a hog inside, and nothing else.
hog_rc=0
pd_crun exec life sh -c 'x=$(head -c 200000000 /dev/zero | tr "\0" a); echo survived ${#x}' >/dev/null 2>&1 || hog_rc=$?
ok "a memory hog inside the box is killed" test "$hog_rc" -ne 0
ok "the OOM killer acted in the box's cgroup" bash -c "[ \$(cgv1 memory memory.oom_control | awk '/^oom_kill / {print \$2}') -gt 0 ]"
ok "the box is still running after the OOM" same "$(cat "$B/state")" running
ok "PID 1 survived" bash -c "pd_crun exec life true"
ok "the daemon is alive" kill -0 "$PD_PID"
ok "the tree still answers" test -r "$M/version"

# Raise again (memory+swap order matters on cgroup v1).
ok "type change up to large applies live" bash -c "echo large > '$B/type'"
ok "memory limit raised (8G)" same "$(cgv1 memory memory.limit_in_bytes)" $((8 * 1024 * 1024 * 1024))

# Stop: SIGTERM, then SIGKILL after the grace period (2 s here).
pd_crun exec -d life sh -c 'trap "" TERM; while :; do sleep 1; done'
start=$(date +%s%N)
ok "writing stopped stops it" bash -c "echo stopped > '$B/state'"
took=$((($(date +%s%N) - start) / 1000000))
ok "a process ignoring SIGTERM is killed after the grace period (${took} ms)" \
	test "$took" -ge 1500 -a "$took" -lt 15000
ok "state reads stopped" same "$(cat "$B/state")" stopped
ok "no container left while stopped" bash -c "! crun_list | grep -qx life"
ok "usage shows no processes when stopped" same "$(grep ^pids "$B/usage")" "pids 0"
ok "files survive a stop (frozen into a snapshot layer)" bash -c "test -f '$B/root/root/hello' && ls '$PD_TMP'/run/layers/L*/upper/root/hello >/dev/null"
ok "writing stopped again is a no-op" bash -c "echo stopped > '$B/state'"

ok "stopped -> running works" bash -c "echo running > '$B/state'"
ok "state reads running again" same "$(cat "$B/state")" running
ok "files are there after a restart" same "$(pd_crun exec life cat /root/hello)" hi
ok "the type survives a restart" same "$(cgv1 memory memory.limit_in_bytes)" $((8 * 1024 * 1024 * 1024))
ok "writing running again is a no-op" bash -c "echo running > '$B/state'"

ok "box events record the lifecycle" bash -c "
	snap '$B/events' | awk '{ \$1 = \"\"; print substr(\$0, 2) }' | tr '\n' '|' |
	grep -q '^life created|life started|life type tiny|life type large|life snapshot life-[0-9]*|life stopped|life started|$'"

# Delete a running box: no container, no mount, no cgroup, no files.
boxdir=$(ls -d "$D"/boxes/*)
view=$(readlink "$B/root")
ok "rmdir of a running box succeeds" rmdir "$B"
ok "the box is gone from the tree" test ! -e "$B"
ok "no container is left" bash -c "! crun_list | grep -qx life"
ok "no mount is left" bash -c "! grep -q -e ' $boxdir/rootfs ' -e ' $view ' /proc/self/mountinfo"
ok "no cgroup is left" bash -c "! ls -d /sys/fs/cgroup/*/$PD_CGROUP/life 2>/dev/null | grep -q ."
ok "no files are left" bash -c "test ! -e '$boxdir' && test ! -e '$view'"
ok "the global stream records the deletion" bash -c "snap '$M/events' | grep -q ' life deleted\$'"
ok "the name can be reused" mkdir "$B"
ok "and the new box starts" bash -c "echo running > '$B/state'"
ok "and is deleted" rmdir "$B"

pd_done
