#!/bin/bash
# stop-snapshot.sh - what the snapshot every stop takes costs when the box
# changed nothing since its last freeze. Such a snapshot is an empty
# directory as its top layer (the box keeps its stack and its mounts), so
# it should add little to a stop. Per iteration, on one box of the tiny
# image whose stack already holds a layer (started untimed each time):
#
#   stop_unchanged      `echo stopped > state` of the running box that
#                       changed nothing (the stop and its snapshot);
#   snapshot_unchanged  then `echo x > snapshot` of the stopped, unchanged
#                       box: the snapshot alone, the baseline;
#   stop_changed        for scale: a stop after one 4 KiB file was written
#                       (the changes frozen into a layer).
#
# RESULT stop_unchanged_ms=MEDIAN ratio=snapshot_unchanged/stop_unchanged
# target=0.2 (the snapshot is at most a fifth of such a stop). BENCH_N (20)
# iterations after BENCH_WARMUP (2). Run it with PADDOCKD of another build
# to compare stops before and after.
. "$(dirname "$0")/common.sh"

BENCH_NAME=stop_unchanged_ms
BENCH_TARGET=0.2
N=${BENCH_N:-20}
WARMUP=${BENCH_WARMUP:-2}
bench_start
bench_build_note

# timed FILE VALUE OUT: appends the milliseconds of one control write to OUT.
timed() {
	local t0 t1
	t0=${EPOCHREALTIME/./}
	echo "$2" >"$1" || bench_broken "write of $2 to $1 failed: $(cat "$(dirname "$1")/error")"
	t1=${EPOCHREALTIME/./}
	printf '%d.%03d\n' $(((10#$t1 - 10#$t0) / 1000)) $(((10#$t1 - 10#$t0) % 1000)) >>"$3"
}

B=$M/boxes/u
mkdir "$B" || bench_broken "mkdir failed"
echo seed >"$B/root/seed"
echo running >"$B/state" || bench_broken "the box does not start"
echo stopped >"$B/state" || bench_broken "the box does not stop"

stop=$PD_TMP/stop.txt snap=$PD_TMP/snap.txt changed=$PD_TMP/changed.txt
for ((i = 0; i < WARMUP + N; i++)); do
	out_stop=$stop out_snap=$snap out_changed=$changed
	if [ "$i" -lt "$WARMUP" ]; then out_stop=/dev/null out_snap=/dev/null out_changed=/dev/null; fi
	echo running >"$B/state" || bench_broken "the box does not start"
	timed "$B/state" stopped "$out_stop"
	timed "$B/snapshot" x "$out_snap"
	echo running >"$B/state" || bench_broken "the box does not start"
	head -c 4096 /dev/urandom >"$B/root/f$i"
	sync -f "$B/root/f$i"
	timed "$B/state" stopped "$out_changed"
	# Snapshots pile up: three per iteration. Delete those no box stands on.
	for s in $(ls "$M/snapshots"); do rmdir "$M/snapshots/$s" 2>/dev/null; done
done

read -r st_med st_mean st_min st_p90 _ <<<"$(bench_stats "$stop")"
read -r sn_med sn_mean sn_min sn_p90 _ <<<"$(bench_stats "$snap")"
read -r ch_med _ <<<"$(bench_stats "$changed")"
ratio=$(bench_ratio "$sn_med" "$st_med")
echo "stop of an unchanged box (with its snapshot): median ${st_med} ms (mean $st_mean, min $st_min, p90 $st_p90)"
echo "snapshot of the stopped, unchanged box:       median ${sn_med} ms (mean $sn_mean, min $sn_min, p90 $sn_p90)"
echo "stop after a 4 KiB change (frozen):           median ${ch_med} ms"
echo "the snapshot is ${ratio} of such a stop ($(bench_meets "$ratio" "$BENCH_TARGET"))"
echo "RESULT stop_unchanged_ms=$st_med ratio=$ratio target=$BENCH_TARGET"
