#!/bin/bash
# net.sh - box networking: what it adds to a box start, how fast a policy
# change is in force, and TCP throughput out of a box.
#
# Like tests/integration/test-net.sh, the whole run lives in network
# namespaces the script makes: the daemon in a "host" namespace whose
# default route leads through a veth to an "inet" namespace holding a TCP
# sink (a python3 socket server that counts bytes). No traffic leaves them.
#
#   1. Box start with networking against without: `mkdir` + `echo running
#      > state` (the write returns once PID 1 runs), BENCH_N (10) boxes each
#      way, one daemon with `network = on` then one with `network = off`,
#      same data directory and image. Target: median added <= 10 ms.
#   2. Policy change: `echo deny-all|allow-all > policy` on a running box,
#      alternating, BENCH_POLICY_N (20) writes; the write returns once the
#      new table is loaded (one libnftables transaction), so its duration is
#      the latency to rules in force. Target: median <= 20 ms.
#   3. TCP throughput: BENCH_MB (300) MB from the box to the sink (busybox
#      nc from /dev/zero) against the same bytes from the daemon's own
#      namespace (the box's uplink) with the same nc binary. Ratio = box MB/s
#      / host MB/s; target >= 0.8.
#
# Needs root and a built tree; prints a block and RESULT lines.

set -u
export LC_ALL=C
BENCH_NAME=net
BENCH_TARGET=10
. "$(cd "$(dirname "$0")" && pwd)/common.sh"

N=${BENCH_N:-10}
PN=${BENCH_POLICY_N:-20}
MB=${BENCH_MB:-300}

if [ -z "${PD_NET_INSIDE:-}" ]; then
	require_root
	tag=pdb$$
	cleanup_ns() {
		[ -n "${sink_pid:-}" ] && kill "$sink_pid" 2>/dev/null
		pd_fake_net_down
	}
	trap cleanup_ns EXIT
	pd_fake_net "$tag" 198.51.100.20 || bench_broken "cannot make network namespaces"
	# The sink: accepts connections one after another, prints each one's
	# byte count on its own log.
	SINK_LOG=$(mktemp /tmp/paddock-bench-sink.XXXXXX)
	ip netns exec "$INETNS" python3 -c '
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("198.51.100.20", 9000)); s.listen(8)
log = open(sys.argv[1], "a", buffering=1)
while True:
    c, _ = s.accept(); n = 0
    while True:
        b = c.recv(1 << 20)
        if not b: break
        n += len(b)
    c.close(); log.write("%d\n" % n)' "$SINK_LOG" >/dev/null 2>&1 &
	sink_pid=$!
	for _ in $(seq 50); do
		ip netns exec "$INETNS" ss -Hltn | grep -q 9000 && break
		sleep 0.1
	done
	PD_NET_INSIDE=1 SINK_LOG=$SINK_LOG nsenter --net="/run/netns/$HOSTNS" "$0"
	rc=$?
	rm -f "$SINK_LOG"
	cleanup_ns
	trap - EXIT
	exit $rc
fi

now_us() {
	local t=${EPOCHREALTIME/./}
	echo $((10#$t))
}

PD_NETWORK=on PD_BRIDGE=pb$(($$ % 10000)) PD_SUBNET=10.202.$(($$ % 250)).0/24 PD_NFT_TABLE=paddock_b$$
export PD_NETWORK PD_BRIDGE PD_SUBNET PD_NFT_TABLE
bench_start

# --- 1. start with and without networking --------------------------------------
time_starts() { # time_starts PREFIX FILE
	for i in $(seq 1 "$N"); do
		local b=$M/boxes/$1$i s e
		mkdir "$b" || bench_broken "mkdir $b"
		s=$(now_us)
		echo running >"$b/state" || bench_broken "start $1$i: $(cat "$b/error")"
		e=$(now_us)
		echo "$(((e - s) / 1000)).$(((e - s) % 1000 / 100))" >>"$2"
	done
	for i in $(seq 1 "$N"); do rmdir "$M/boxes/$1$i"; done
}
: >"$PD_TMP/start_on"
: >"$PD_TMP/start_off"
time_starts on "$PD_TMP/start_on"

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

# --- 3. throughput -----------------------------------------------------------------------
NC=$(command -v busybox)
[ -n "$NC" ] || bench_broken "busybox is not installed on the host"
send_box() {
	pd_crun exec pol sh -c "head -c $((MB << 20)) /dev/zero | nc 198.51.100.20 9000"
}
send_host() {
	head -c $((MB << 20)) /dev/zero | "$NC" nc 198.51.100.20 9000
}
: >"$PD_TMP/tput_box"
: >"$PD_TMP/tput_host"
for _ in 1 2 3; do
	for side in box host; do
		s=$(now_us)
		"send_$side" || bench_broken "sending from the $side failed"
		e=$(now_us)
		python3 -c "print(round($MB * 1048576 / (($e - $s) / 1e6) / 1e6, 1))" >>"$PD_TMP/tput_$side"
	done
done
rmdir "$M/boxes/pol"

# The same starts on a daemon without networking.
pd_stop
sed -i 's/^network = on$/network = off/' "$PD_TMP/paddock.ini"
pd_start
time_starts off "$PD_TMP/start_off"

read -r on_med _ < <(bench_stats "$PD_TMP/start_on")
read -r off_med _ < <(bench_stats "$PD_TMP/start_off")
read -r pol_med _ < <(bench_stats "$PD_TMP/policy")
read -r box_mbps _ < <(bench_stats "$PD_TMP/tput_box")
read -r host_mbps _ < <(bench_stats "$PD_TMP/tput_host")
added=$(python3 -c "print(round($on_med - $off_med, 1))")
tput_ratio=$(python3 -c "print(round($box_mbps / $host_mbps, 2))")
received=$(wc -l <"$SINK_LOG")

printf 'box networking; load %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
bench_build_note
printf '  box start (median of %d): with networking %s ms, without %s ms: %s ms added (target <= 10: %s)\n' \
	"$N" "$on_med" "$off_med" "$added" "$(python3 -c "print('yes' if $added <= 10 else 'NO')")"
printf '  policy change to rules in force (median of %d writes): %s ms (target <= 20: %s)\n' \
	"$PN" "$pol_med" "$(python3 -c "print('yes' if $pol_med <= 20 else 'NO')")"
printf '  TCP %d MB to a fake host (median of 3): box %s MB/s, host %s MB/s; ratio %s (target >= 0.8: %s); the sink saw %s connections\n' \
	"$MB" "$box_mbps" "$host_mbps" "$tput_ratio" \
	"$(python3 -c "print('yes' if $tput_ratio >= 0.8 else 'NO')")" "$received"
echo "RESULT net_start_added_ms=$added ratio=$added target=10"
echo "RESULT net_policy_ms=$pol_med ratio=$pol_med target=20"
echo "RESULT net_tcp_mbps=$box_mbps ratio=$tput_ratio target=0.8"
exit 0
