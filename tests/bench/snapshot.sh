#!/bin/bash
# snapshot.sh - snapshots of stopped boxes are O(1): a rename of the box's
# upper into a frozen layer, whatever its size. Three measurements, three
# RESULT lines:
#
#   snapshot-fork     `echo NEW > boxes/X/fork` on a stopped box holding
#                     1 GB of changes, against the same with 10 MB
#                     (ratio = 1G / 10M; target flat: <= 1.5, and the 1 GB
#                     fork <= 50 ms, printed beside it);
#   snapshot-stopped  `echo label > boxes/X/snapshot` on a stopped box with
#                     1 GB of changes, against `cp -a` of those changes
#                     (ratio; target <= 0.1);
#   snapshot-restore  `echo ID > boxes/X/restore` on a stopped box (ms;
#                     ratio against the 10 MB fork, informational).
# Data is synced to disk before each timed write (see fill's callers).
# Each is the median of RUNS (default 5) runs. Changes are written through
# root/ as one file per 10 MB of random-free data (fallocate-free dd).
. "$(dirname "$0")/common.sh"

BENCH_NAME=snapshot-fork
BENCH_TARGET=1.5
RUNS=${RUNS:-5}
bench_start
bench_build_note

ms() { python3 -c 'import sys; print("%.2f" % ((int(sys.argv[2]) - int(sys.argv[1])) / 1e6))' "$1" "$2"; }

fill() { bench_fill "$@"; }

# timed_write FILE VALUE: milliseconds of one control write.
timed_write() {
	local t0 t1
	t0=$(date +%s%N)
	echo "$2" >"$1" || bench_broken "write of $2 to $1 failed: $(cat "$(dirname "$1")/error")"
	t1=$(date +%s%N)
	ms "$t0" "$t1"
}

small=$PD_TMP/small.txt big=$PD_TMP/big.txt snap=$PD_TMP/snap.txt cp=$PD_TMP/cp.txt res=$PD_TMP/restore.txt
for ((r = 0; r < RUNS; r++)); do
	for size in 10 1000; do
		mkdir "$M/boxes/s$size-$r" || bench_broken "mkdir failed"
		fill "s$size-$r" "$size"
		out=$small
		[ "$size" = 1000 ] && out=$big
		# Unmounting an overlay syncs its upper: freshly written, still
		# dirty data would be written back inside the timed fork. Timed
		# here is the fork of changes already on disk.
		sync -f "$M/boxes/s$size-$r/root/data"
		timed_write "$M/boxes/s$size-$r/fork" "f$size-$r" >>"$out"
	done
	# Snapshot of a stopped box with 1 GB of fresh changes, against cp -a.
	b=snap-$r
	mkdir "$M/boxes/$b"
	fill "$b" 1000
	# Its upper: boxes/ID/upper, or boxes/ID/disk/upper in its image
	# (the disk limit).
	upper=$(ls -d "$D"/boxes/*/upper "$D"/boxes/*/disk/upper 2>/dev/null | while read -r u; do [ -d "$u/data" ] && [ "$(ls "$u/data" | wc -l)" = 100 ] && echo "$u"; done | tail -1)
	t0=$(date +%s%N)
	cp -a "$upper" "$PD_TMP/cp-copy" || bench_broken "cp -a failed"
	sync -f "$PD_TMP/cp-copy"
	t1=$(date +%s%N)
	ms "$t0" "$t1" >>"$cp"
	rm -rf "$PD_TMP/cp-copy"
	timed_write "$M/boxes/$b/snapshot" "bench" >>"$snap"
	sid=$(readlink "$M/boxes/$b/snapshots/last")
	echo more >"$M/boxes/$b/root/more"
	timed_write "$M/boxes/$b/restore" "$sid" >>"$res"
	for x in "s10-$r" "s1000-$r" "f10-$r" "f1000-$r" "$b"; do rmdir "$M/boxes/$x"; done
	for s in $(ls "$M/snapshots"); do rmdir "$M/snapshots/$s"; done
done

read -r s_med _ <<<"$(bench_stats "$small")"
read -r b_med _ <<<"$(bench_stats "$big")"
read -r sn_med _ <<<"$(bench_stats "$snap")"
read -r cp_med _ <<<"$(bench_stats "$cp")"
read -r r_med _ <<<"$(bench_stats "$res")"
ratio=$(bench_ratio "$b_med" "$s_med")
echo "fork of a stopped box: 10 MB ${s_med} ms, 1 GB ${b_med} ms (target <= 50 ms: $(bench_meets "$b_med" 50))"
echo "RESULT snapshot-fork=$b_med ratio=$ratio target=$BENCH_TARGET"
ratio=$(bench_ratio "$sn_med" "$cp_med")
echo "snapshot of a stopped box with 1 GB: ${sn_med} ms; cp -a of it: ${cp_med} ms ($(bench_meets "$ratio" 0.1))"
echo "RESULT snapshot-stopped=$sn_med ratio=$ratio target=0.1"
echo "restore of a stopped box: ${r_med} ms"
echo "RESULT snapshot-restore=$r_med ratio=$(bench_ratio "$r_med" "$s_med") target=nan"
