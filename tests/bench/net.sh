#!/bin/bash
# net.sh - box networking: what it adds to a box start, how fast a policy
# change is in force, and TCP throughput out of a box.
#
# Like tests/integration/test-net.sh, the whole run lives in network
# namespaces the script makes: the daemon in a "host" namespace whose
# default route leads through a veth to an "inet" namespace holding a TCP
# sink (tcp-pump.c, built by this script). No traffic leaves them.
#
#   1. Box start with networking against without: `mkdir` + `echo running
#      > state` (the write returns once PID 1 runs; only the write is
#      timed), one daemon restarted between blocks with `network = on` and
#      `network = off` (same data directory and image), BENCH_BLOCKS (8)
#      blocks per setting, alternating which goes first, BENCH_N (8)
#      starts per block after one untimed. The machine drifts (other work,
#      a kernel still tearing down the namespaces of boxes just deleted):
#      alternating blocks lets drift hit both alike. Added = median of all
#      "on" starts - median of all "off" starts; the spread of the per-block
#      medians and a 90% bootstrap interval of the added time are printed.
#      Target: median added <= 5 ms.
#      A start itself varies by tens of milliseconds on a shared machine,
#      so the difference of two medians is good to a few milliseconds at
#      best; the daemon (run with --debug) also times what networking does
#      on each start's path: making the box's namespaces, then, after the
#      runtime returns, waiting for the link and rules made meanwhile on a
#      thread. Their medians are printed (no target) beside the thread's
#      own time (link, rules), which runs alongside the runtime.
#   2. Policy change: `echo deny-all|allow-all > policy` on a running box,
#      alternating, BENCH_POLICY_N (20) writes; the write returns once the
#      new table is loaded (one libnftables transaction), so its duration is
#      the latency to rules in force. Target: median <= 20 ms.
#   3. TCP throughput: BENCH_MB (2048) MiB to the sink in 1 MiB writes by
#      tcp-pump's sender, timed until the sink has acknowledged every byte,
#      from three places, BENCH_ROUNDS (5) rounds rotating which goes first,
#      medians:
#        (a) the box's network namespace (nsenter --net, a process of the
#            daemon's namespace otherwise): the box's path, veth + bridge +
#            forward + conntrack + NAT, without the box's CPU quota;
#        (b) inside the box (crun exec of a static build copied into its
#            root), which its type's CPU quota limits (no target);
#        (c) the daemon's own namespace (the boxes' uplink), the baseline.
#      Ratio = (a) / (c); target >= 0.8.
#
# Needs root and a built tree; prints a block and RESULT lines.

set -u
export LC_ALL=C
BENCH_NAME=net
BENCH_TARGET=5
. "$(cd "$(dirname "$0")" && pwd)/common.sh"

N=${BENCH_N:-8}
BLOCKS=${BENCH_BLOCKS:-8}
PN=${BENCH_POLICY_N:-20}
MB=${BENCH_MB:-2048}
ROUNDS=${BENCH_ROUNDS:-5}

if [ -z "${PD_NET_INSIDE:-}" ]; then
	require_root
	tag=pdb$$
	cleanup_ns() {
		[ -n "${sink_pid:-}" ] && kill "$sink_pid" 2>/dev/null
		[ -n "${PUMP_DIR:-}" ] && rm -rf "$PUMP_DIR"
		pd_fake_net_down
	}
	trap cleanup_ns EXIT
	pd_fake_net "$tag" 198.51.100.20 || bench_broken "cannot make network namespaces"
	# The sender and sink (tcp-pump.c), built for this run: dynamic for the
	# namespaces, static for inside the box (its image has no libc of ours).
	PUMP_DIR=$(mktemp -d /tmp/paddock-bench-pump.XXXXXX)
	cc -O2 -o "$PUMP_DIR/tcp-pump" "$BENCH_DIR/tcp-pump.c" 2>"$PUMP_DIR/cc.log" ||
		bench_broken "cannot build tcp-pump.c (a C compiler is needed): $(cat "$PUMP_DIR/cc.log")"
	cc -O2 -static -o "$PUMP_DIR/tcp-pump-static" "$BENCH_DIR/tcp-pump.c" 2>>"$PUMP_DIR/cc.log" ||
		rm -f "$PUMP_DIR/tcp-pump-static"
	# The sink: takes connections one after another, logs each one's byte
	# count.
	SINK_LOG=$PUMP_DIR/sink.log
	ip netns exec "$INETNS" "$PUMP_DIR/tcp-pump" sink 198.51.100.20 9000 >"$SINK_LOG" 2>&1 &
	sink_pid=$!
	for _ in $(seq 50); do
		ip netns exec "$INETNS" ss -Hltn | grep -q 9000 && break
		sleep 0.1
	done
	PD_NET_INSIDE=1 PUMP_DIR=$PUMP_DIR nsenter --net="/run/netns/$HOSTNS" "$0"
	rc=$?
	rm -rf "$PUMP_DIR"
	cleanup_ns
	trap - EXIT
	exit $rc
fi


PD_NETWORK=on PD_BRIDGE=pb$(($$ % 10000)) PD_SUBNET=10.202.$(($$ % 250)).0/24 PD_NFT_TABLE=paddock_b$$
# --debug: each start logs what networking cost it (see the header).
PD_DEBUG=1
export PD_NETWORK PD_BRIDGE PD_SUBNET PD_NFT_TABLE PD_DEBUG
bench_start

# --- 2. policy change latency ---------------------------------------------------------
mkdir "$M/boxes/pol" && echo running >"$M/boxes/pol/state" || bench_broken "cannot start pol"
: >"$PD_TMP/policy"
for i in $(seq 1 "$PN"); do
	v=deny-all
	[ $((i % 2)) = 0 ] && v=allow-all
	s=$(now_us)
	echo "$v" >"$M/boxes/pol/policy" || bench_broken "policy write: $(cat "$M/boxes/pol/error")"
	e=$(now_us)
	echo "$(((e - s) / 1000)).$(((e - s) % 1000 / 100))" >>"$PD_TMP/policy"
done
echo allow-all >"$M/boxes/pol/policy"

# --- 2b. throughput -----------------------------------------------------------------------
PUMP=$PUMP_DIR/tcp-pump
SINK_LOG=$PUMP_DIR/sink.log
BOXNS=$PD_TMP/run/netns/pol
[ -e "$BOXNS" ] || bench_broken "no network namespace at $BOXNS"
# (b) runs inside the box: its own copy of the static build in its root.
box_pump=no
if [ -x "$PUMP_DIR/tcp-pump-static" ]; then
	cp "$PUMP_DIR/tcp-pump-static" "$M/boxes/pol/root/tcp-pump" || bench_broken "cannot copy tcp-pump into the box"
	box_pump=yes
fi
box_type=$(cat "$M/boxes/pol/type")
box_cpus=$(awk '$1 == "cpus" {print $2}' "$M/types/$box_type" 2>/dev/null)
send_ns() {
	nsenter --net="$BOXNS" "$PUMP" send 198.51.100.20 9000 "$MB"
}
send_box() {
	pd_crun exec pol /tcp-pump send 198.51.100.20 9000 "$MB"
}
send_host() {
	"$PUMP" send 198.51.100.20 9000 "$MB"
}
sides="ns host"
[ "$box_pump" = yes ] && sides="ns box host"
for side in ns box host; do : >"$PD_TMP/tput_$side"; done
# Rounds rotate which side goes first.
for r in $(seq 1 "$ROUNDS"); do
	set -- $sides
	for _ in $(seq 2 "$r"); do set -- "${@:2}" "$1"; done
	for side in "$@"; do
		out=$("send_$side") || bench_broken "sending from the $side failed: $out"
		echo "${out##* }" >>"$PD_TMP/tput_$side"
	done
done
rmdir "$M/boxes/pol"

# --- 1. start with and without networking (blocks, alternating) ---------------
time_starts() { # time_starts PREFIX FILE: one untimed start, then N timed
	for i in $(seq 0 "$N"); do
		local b=$M/boxes/$1$i s e
		mkdir "$b" || bench_broken "mkdir $b"
		s=$(now_us)
		echo running >"$b/state" || bench_broken "start $1$i: $(cat "$b/error")"
		e=$(now_us)
		[ "$i" = 0 ] && continue
		echo "$(((e - s) / 1000)).$(((e - s) % 1000 / 100))" | tee -a "$3" >>"$2"
	done
	for i in $(seq 0 "$N"); do rmdir "$M/boxes/$1$i"; done
}
set_network() { # set_network on|off: the daemon restarted with it
	pd_stop || bench_broken "the daemon did not stop cleanly"
	sed -i "s/^network = .*/network = $1/" "$PD_TMP/paddock.ini"
	pd_start
}
: >"$PD_TMP/start_on"
: >"$PD_TMP/start_off"
: >"$PD_TMP/block_on"
: >"$PD_TMP/block_off"
for ((k = 0; k < BLOCKS; k++)); do
	order="on off"
	[ $((k % 2)) = 1 ] && order="off on"
	for mode in $order; do
		set_network "$mode"
		: >"$PD_TMP/this_block"
		time_starts "$mode$k-" "$PD_TMP/start_$mode" "$PD_TMP/this_block"
		read -r med _ < <(bench_stats "$PD_TMP/this_block")
		echo "$med" >>"$PD_TMP/block_$mode"
	done
done


read -r on_med _ < <(bench_stats "$PD_TMP/start_on")
read -r off_med _ < <(bench_stats "$PD_TMP/start_off")
# The added time's 90% interval: the difference of the medians of
# resamples of each side (2000 of them).
added_ci=$(python3 - "$PD_TMP/start_on" "$PD_TMP/start_off" <<'PY'
import random, statistics, sys
on = [float(l) for l in open(sys.argv[1]) if l.strip()]
off = [float(l) for l in open(sys.argv[2]) if l.strip()]
rnd = random.Random(1)
d = sorted(statistics.median(rnd.choices(on, k=len(on))) -
           statistics.median(rnd.choices(off, k=len(off))) for _ in range(2000))
print("%.1f to %.1f" % (d[100], d[1899]))
PY
)
# What the daemon timed on each start with networking (its debug lines):
# "on the path ns wait link rules" medians, in ms.
path_ms=$(python3 - "$PD_TMP/paddockd.log" <<'PY'
import re, statistics, sys
rows = [list(map(float, m.groups())) for m in (re.search(
    r"network on the start's path ([\d.]+) ms \(namespaces ([\d.]+) ms, wait for the link "
    r"([\d.]+) ms\); on its thread, link ([\d.]+) ms, rules ([\d.]+) ms", l)
    for l in open(sys.argv[1], errors="replace")) if m]
if rows:
    print(len(rows), *("%.2f" % statistics.median(r[i] for r in rows) for i in range(5)),
          "%.2f" % max(r[0] for r in rows))
else:
    print("0 nan nan nan nan nan nan")
PY
)
read -r path_n path_med path_ns path_wait path_link path_rules path_max <<<"$path_ms"
read -r pol_med _ < <(bench_stats "$PD_TMP/policy")
read -r ns_mbps _ < <(bench_stats "$PD_TMP/tput_ns")
read -r box_mbps _ < <(bench_stats "$PD_TMP/tput_box")
read -r host_mbps _ < <(bench_stats "$PD_TMP/tput_host")
added=$(python3 -c "print(round($on_med - $off_med, 1))")
tput_ratio=$(bench_ratio "$ns_mbps" "$host_mbps")
# "min-max" of a side's runs.
spread() {
	sort -n "$PD_TMP/tput_$1" | sed -n '1p;$p' | paste -sd- -
}
box_ratio=$(bench_ratio "$box_mbps" "$host_mbps")
received=$(wc -l <"$SINK_LOG")

printf 'box networking; load %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
bench_build_note
printf '  box start (median of %d x %d, alternating blocks): with networking %s ms, without %s ms: %s ms added (target <= 5: %s)\n' \
	"$BLOCKS" "$N" "$on_med" "$off_med" "$added" "$(python3 -c "print('yes' if $added <= 5 else 'NO')")"
printf '    90%% interval of the added time: %s ms\n' "$added_ci"
printf '    per-block medians: on %s; off %s\n' "$(paste -sd' ' "$PD_TMP/block_on")" \
	"$(paste -sd' ' "$PD_TMP/block_off")"
printf '    timed by the daemon (median of %s starts): on the start'"'"'s path %s ms (max %s): namespaces %s ms, waiting for the link %s ms; alongside the runtime, link %s ms, rules %s ms\n' \
	"$path_n" "$path_med" "$path_max" "$path_ns" "$path_wait" "$path_link" "$path_rules"
printf '  policy change to rules in force (median of %d writes): %s ms (target <= 20: %s)\n' \
	"$PN" "$pol_med" "$(python3 -c "print('yes' if $pol_med <= 20 else 'NO')")"
printf '  TCP, %d MiB per run to a fake host, median of %d rounds (MB/s, MB = 10^6 bytes):\n' "$MB" "$ROUNDS"
printf '    from the box'"'"'s network namespace %s (%s), from the host %s (%s): ratio %s (target >= 0.8: %s)\n' \
	"$ns_mbps" "$(spread ns)" "$host_mbps" "$(spread host)" "$tput_ratio" \
	"$(python3 -c "print('yes' if $tput_ratio >= 0.8 else 'NO')" 2>/dev/null || echo unknown)"
if [ "$box_pump" = yes ]; then
	printf '    from inside the box (crun exec, type %s: cpus %s): %s (%s), ratio %s (no target: the box'"'"'s CPU quota)\n' \
		"$box_type" "${box_cpus:-?}" "$box_mbps" "$(spread box)" "$box_ratio"
else
	printf '    from inside the box: not measured (no static build: %s)\n' "$(tail -n 1 "$PUMP_DIR/cc.log")"
fi
printf '    the sink saw %s connections\n' "$received"
echo "RESULT net_start_added_ms=$added ratio=$added target=5"
echo "RESULT net_start_path_ms=$path_med ratio=$path_med target=nan"
echo "RESULT net_policy_ms=$pol_med ratio=$pol_med target=20"
echo "RESULT net_tcp_mbps=$ns_mbps ratio=$tput_ratio target=0.8"
exit 0
