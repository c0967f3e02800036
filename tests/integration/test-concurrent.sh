#!/bin/bash
# 20 boxes created and started at once from 20 shells; then deleted at once.
. "$(dirname "$0")/lib.sh"
pd_start

# `wait` alone would wait for the daemon too: wait for these shells only.
N=20
pids=()
for i in $(seq $N); do
	(mkdir "$M/boxes/c$i" && echo running >"$M/boxes/c$i/state") >"$PD_TMP/c$i.out" 2>&1 &
	pids+=($!)
done
wait "${pids[@]}"
ok "all $N shells succeeded" bash -c "cat '$PD_TMP'/c*.out | grep -q . && { cat '$PD_TMP'/c*.out | sed 's/^/# /'; exit 1; } || true"
ok "$N boxes exist" same "$(ls "$M/boxes" | wc -l)" $N
ok "all $N read running" same "$(cat "$M"/boxes/c*/state | sort | uniq -c | awk '{print $1, $2}')" "$N running"
ok "$N containers run" same "$(crun_list | wc -l)" $N
ok "each has a process" bash -c "for i in \$(seq $N); do [ \$(awk '/^pids/ {print \$2}' '$M/boxes/c'\$i/usage) -ge 1 ] || exit 1; done"
ok "box ids and names do not mix" bash -c "for i in \$(seq $N); do [ \"\$(pd_crun exec c\$i hostname)\" = c\$i ] || exit 1; done"

# Racing writers on one box: exactly one start happens, others see
# running (no-op) or EBUSY while it is starting; never a second container.
mkdir "$M/boxes/race"
pids=()
for i in $(seq 10); do
	(echo running >"$M/boxes/race/state") 2>>"$PD_TMP/race.err" &
	pids+=($!)
done
wait "${pids[@]}"
ok "racing starts leave one running box" same "$(cat "$M/boxes/race/state")" running
ok "racing starts fail only with EBUSY" bash -c "! grep -v 'Device or resource busy' '$PD_TMP/race.err' | grep -q ."

pids=()
for i in $(seq $N); do
	rmdir "$M/boxes/c$i" &
	pids+=($!)
done
rmdir "$M/boxes/race" &
pids+=($!)
wait "${pids[@]}"
ok "all boxes deleted concurrently" same "$(ls "$M/boxes" | wc -l)" 0
ok "no containers left" same "$(crun_list | wc -l)" 0
ok "no cgroups left" bash -c "! find /sys/fs/cgroup/*/$PD_CGROUP -mindepth 1 -type d 2>/dev/null | grep -q ."
ok "no box mounts left" bash -c "! grep -q -e ' $D/boxes/' -e ' $PD_TMP/run/roots/' /proc/self/mountinfo"
ok "the daemon is fine" kill -0 "$PD_PID"

pd_done
