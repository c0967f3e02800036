#!/bin/bash
# disk-fork.sh - what the disk limit (each box's writable layer in an ext4
# image, engine/disk.c) costs the actions it touches, against the
# same build with `disk_limit = off` (plain directories), in one run:
#
#   create   mkdir of a box (a copy of the type's template + its mount)
#   start    of a created box
#   freeze   stop of a running box with 10 MB of changes (the image is
#            renamed into a layer and a fresh one made)
#   fork     of a stopped box with 10 MB and with 1 GB of changes (the
#            snapshot.sh targets: flat, and <= 50 ms)
#
# Medians of RUNS (default 5). RESULT lines: disk_fork_ms (1 GB fork, limit
# on; ratio against the limit off), disk_create_ms, disk_start_ms,
# disk_freeze_ms.
. "$(dirname "$0")/common.sh"

BENCH_NAME=disk-fork
BENCH_TARGET=nan
RUNS=${RUNS:-5}
[ -w /dev/loop-control ] || skip_all "no /dev/loop-control"
bench_start
bench_build_note

ms() { python3 -c 'import sys; print("%.2f" % ((int(sys.argv[2]) - int(sys.argv[1])) / 1e6))' "$1" "$2"; }
timed() { # timed OUT CMD...
	local out=$1 t0 t1
	shift
	t0=$(date +%s%N)
	"$@" || bench_broken "failed: $*"
	t1=$(date +%s%N)
	ms "$t0" "$t1" >>"$out"
}
put() { echo "$2" >"$1"; }
fill() { bench_fill "$@"; }

round() { # round TAG
	local t=$1 r b
	for ((r = 0; r < RUNS; r++)); do
		b=$t-$r
		timed "$PD_TMP/$t-create" mkdir "$M/boxes/$b"
		timed "$PD_TMP/$t-start" put "$M/boxes/$b/state" running
		fill "$b" 10
		timed "$PD_TMP/$t-freeze" put "$M/boxes/$b/state" stopped
		fill "$b" 10
		timed "$PD_TMP/$t-fork10" put "$M/boxes/$b/fork" "$b-f10"
		mkdir "$M/boxes/$b-big"
		fill "$b-big" 1000
		timed "$PD_TMP/$t-fork1g" put "$M/boxes/$b-big/fork" "$b-f1g"
		for x in "$b" "$b-f10" "$b-big" "$b-f1g"; do rmdir "$M/boxes/$x"; done
		for s in $(ls "$M/snapshots"); do rmdir "$M/snapshots/$s"; done
	done
}

med() { bench_stats "$1" | cut -d' ' -f1; }
pd_stop
sed -i 's|^\[paddock\]$|[paddock]\ndisk_limit = off|' "$PD_TMP/paddock.ini"
pd_start
round off
pd_stop
sed -i '/^disk_limit = off$/d' "$PD_TMP/paddock.ini"
pd_start
round on

printf '%-8s %10s %10s %12s %10s %10s\n' "" create start "freeze 10M" "fork 10M" "fork 1G"
for t in off on; do
	printf '%-8s %10s %10s %12s %10s %10s\n' "limit $t" "$(med "$PD_TMP/$t-create")" \
		"$(med "$PD_TMP/$t-start")" "$(med "$PD_TMP/$t-freeze")" "$(med "$PD_TMP/$t-fork10")" \
		"$(med "$PD_TMP/$t-fork1g")"
done
echo "(ms, medians of $RUNS)"
for m in fork1g create start freeze; do
	on=$(med "$PD_TMP/on-$m")
	off=$(med "$PD_TMP/off-$m")
	name=disk_${m}_ms
	[ $m = fork1g ] && name=disk_fork_ms
	echo "RESULT $name=$on ratio=$(bench_ratio "$on" "$off") target=nan"
done
echo "fork of 1 GB with the limit on: $(med "$PD_TMP/on-fork1g") ms (target <= 50 ms: $(bench_meets "$(med "$PD_TMP/on-fork1g")" 50)); 10 MB: $(med "$PD_TMP/on-fork10") ms"
