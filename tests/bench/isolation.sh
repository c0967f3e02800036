#!/bin/bash
# isolation.sh - what the boxes' isolation costs: box start, exec round trip
# and fork of the same build with it on (a user namespace per box with
# id-mapped layers, the seccomp filter, and lxcfs's views when the build
# has them) against it off (`userns = off`, `seccomp = off`, `lxcfs =
# off`), in one run.
#
# One daemon, restarted between blocks with the other setting (outside the
# timed part); BENCH_BLOCKS blocks per setting, alternating, so drift hits
# both alike. In each block BENCH_N starts (mkdir boxes/X, echo running >
# state; rmdir outside the timed part), BENCH_N exec round trips in one
# running box (echo true > exec/new, read exec/last/exit) and BENCH_N forks
# of a stopped box holding 1,000 files of its own (echo NEW > fork; the new
# box's id-mapped lowers are mounted then).
#
# Ratio = median on / median off; target: start <= +3 ms (printed as the
# difference), exec and fork unchanged within noise. Three RESULT lines:
# isolation_start_ms, isolation_exec_ms, isolation_fork_ms.
#
# Environment: BENCH_N (10), BENCH_BLOCKS (4), BENCH_WARMUP (1 per block).

set -u
export LC_ALL=C
BENCH_NAME=isolation_start_ms
. "$(cd "$(dirname "$0")" && pwd)/common.sh"

N=${BENCH_N:-10}
BLOCKS=${BENCH_BLOCKS:-4}
WARMUP=${BENCH_WARMUP:-1}


# set_mode on|off: restarts the daemon with that setting.
set_mode() {
	local v=default u=on
	[ "$1" = off ] && { v=off; u=off; }
	pd_stop || bench_broken "the daemon did not stop cleanly"
	sed -i '/^seccomp = /d; /^userns = /d; /^lxcfs = /d' "$PD_TMP/paddock.ini"
	sed -i "s|^\[paddock\]\$|[paddock]\nseccomp = $v\nuserns = $u|" "$PD_TMP/paddock.ini"
	[ -e "$TOP_SRCDIR/runtime/lxcfs.c" ] &&
		sed -i "s|^\[paddock\]\$|[paddock]\nlxcfs = $u|" "$PD_TMP/paddock.ini"
	pd_start
}

# block MODE: one block of starts, exec round trips and forks.
block() {
	local mode=$1 i box t0 t1 st last e
	for ((i = 0; i < WARMUP + N; i++)); do
		box=$M/boxes/b$i
		t0=$(now_us)
		mkdir "$box" || bench_broken "mkdir $box failed"
		echo running >"$box/state" || bench_broken "start of $box failed: $(cat "$box/error")"
		t1=$(now_us)
		read -r st <"$box/state"
		[ "$st" = running ] || bench_broken "box b$i is $st after the write"
		rmdir "$box" || bench_broken "rmdir $box failed"
		[ $i -ge "$WARMUP" ] && echo $((t1 - t0)) >>"$PD_TMP/start_$mode"
	done
	box=$M/boxes/x
	mkdir "$box" && echo running >"$box/state" || bench_broken "cannot start $box"
	for ((i = 0; i < WARMUP + N; i++)); do
		t0=$(now_us)
		echo true >"$box/exec/new" || bench_broken "exec failed: $(cat "$box/error")"
		last=$(readlink "$box/exec/last")
		read -r e <"$box/exec/$last/exit"
		t1=$(now_us)
		[ "$e" = 0 ] || bench_broken "exec exited $e"
		rmdir "$box/exec/$last"
		[ $i -ge "$WARMUP" ] && echo $((t1 - t0)) >>"$PD_TMP/exec_$mode"
	done
	echo 'mkdir -p /data && for i in $(seq 1000); do echo $i >/data/f$i; done' >"$box/exec/new"
	last=$(readlink "$box/exec/last")
	read -r e <"$box/exec/$last/exit"
	[ "$e" = 0 ] || bench_broken "cannot fill $box"
	echo stopped >"$box/state" || bench_broken "cannot stop $box"
	for ((i = 0; i < WARMUP + N; i++)); do
		t0=$(now_us)
		echo "f$i" >"$box/fork" || bench_broken "fork failed: $(cat "$box/error")"
		t1=$(now_us)
		[ $i -ge "$WARMUP" ] && echo $((t1 - t0)) >>"$PD_TMP/fork_$mode"
	done
	for ((i = 0; i < WARMUP + N; i++)); do
		rmdir "$M/boxes/f$i" || bench_broken "rmdir f$i failed"
	done
	rmdir "$box" || bench_broken "rmdir $box failed"
	for s in "$M"/snapshots/*; do
		[ -e "$s" ] && rmdir "$s" 2>/dev/null
	done
	return 0
}

bench_start
for f in start exec fork; do
	: >"$PD_TMP/${f}_on"
	: >"$PD_TMP/${f}_off"
done
for ((b = 0; b < BLOCKS; b++)); do
	if [ $((b % 2)) = 0 ]; then order="on off"; else order="off on"; fi
	for mode in $order; do
		set_mode "$mode"
		block "$mode"
	done
done

stats() { bench_stats <(awk '{print $1/1000}' "$PD_TMP/$1"); }
diffms() { python3 -c 'import sys; print("%+.2f" % (float(sys.argv[1]) - float(sys.argv[2])))' "$1" "$2"; }

printf 'isolation: %d blocks x %d per setting, alternating; load %s\n' "$BLOCKS" "$N" \
	"$(cut -d' ' -f1-3 /proc/loadavg)"
bench_build_note
printf '  %-34s %9s %9s %9s\n' "" median mean min
for f in start exec fork; do
	read -r on_med on_mean on_min _ < <(stats ${f}_on)
	read -r off_med off_mean off_min _ < <(stats ${f}_off)
	printf '  %-34s %9.2f %9.2f %9.2f ms\n' "$f, isolation off" "$off_med" "$off_mean" "$off_min"
	printf '  %-34s %9.2f %9.2f %9.2f ms\n' "$f, isolation on" "$on_med" "$on_mean" "$on_min"
	printf '  %-34s %9s ms%s\n' "  difference of medians" "$(diffms "$on_med" "$off_med")" \
		"$([ $f = start ] && echo ' (target <= +3)')"
	eval "${f}_on_med=$on_med ${f}_off_med=$off_med"
done
echo "RESULT isolation_start_ms=$start_on_med ratio=$(bench_ratio "$start_on_med" "$start_off_med") target=nan"
echo "RESULT isolation_exec_ms=$exec_on_med ratio=$(bench_ratio "$exec_on_med" "$exec_off_med") target=nan"
echo "RESULT isolation_fork_ms=$fork_on_med ratio=$(bench_ratio "$fork_on_med" "$fork_off_med") target=nan"
exit 0
