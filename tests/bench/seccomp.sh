#!/bin/bash
# seccomp.sh - what the boxes' seccomp filter costs: box start and exec
# round trip of the same build with `seccomp = default` against `seccomp =
# off`, in one run.
#
# One daemon, restarted between blocks with the other setting (outside the
# timed part); BENCH_BLOCKS blocks per setting, alternating, so drift hits
# both alike. In each block BENCH_N starts (mkdir boxes/X, echo running >
# state; timed as box-start.sh does; rmdir outside the timed part) and
# BENCH_N exec round trips in one running box (echo true > exec/new, read
# exec/last/exit; crun exec applies the box's filter to each job, so exec
# pays for it too).
#
# Ratio = median with the filter / median without; target: start <= +3 ms
# (printed as the difference), exec unchanged within noise. Two RESULT
# lines: seccomp_start_ms, seccomp_exec_ms.
#
# Environment: BENCH_N (10), BENCH_BLOCKS (4), BENCH_WARMUP (1 per block).

set -u
export LC_ALL=C
BENCH_NAME=seccomp_start_ms
. "$(cd "$(dirname "$0")" && pwd)/common.sh"

N=${BENCH_N:-10}
BLOCKS=${BENCH_BLOCKS:-4}
WARMUP=${BENCH_WARMUP:-1}


# set_mode default|off: restarts the daemon with that setting.
set_mode() {
	pd_stop || bench_broken "the daemon did not stop cleanly"
	sed -i '/^seccomp = /d' "$PD_TMP/paddock.ini"
	sed -i "s|^\[paddock\]\$|[paddock]\nseccomp = $1|" "$PD_TMP/paddock.ini"
	pd_start
}

# block MODE: one block of starts and exec round trips.
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
	rmdir "$box" || bench_broken "rmdir $box failed"
}

bench_start
: >"$PD_TMP/start_default"
: >"$PD_TMP/start_off"
: >"$PD_TMP/exec_default"
: >"$PD_TMP/exec_off"
for ((b = 0; b < BLOCKS; b++)); do
	if [ $((b % 2)) = 0 ]; then order="default off"; else order="off default"; fi
	for mode in $order; do
		set_mode "$mode"
		block "$mode"
	done
done

stats() { bench_stats <(awk '{print $1/1000}' "$PD_TMP/$1"); }
read -r sd_med sd_mean sd_min _ < <(stats start_default)
read -r so_med so_mean so_min _ < <(stats start_off)
read -r ed_med ed_mean ed_min _ < <(stats exec_default)
read -r eo_med eo_mean eo_min _ < <(stats exec_off)
sdiff=$(python3 -c 'import sys; print("%+.2f" % (float(sys.argv[1]) - float(sys.argv[2])))' "$sd_med" "$so_med")
ediff=$(python3 -c 'import sys; print("%+.2f" % (float(sys.argv[1]) - float(sys.argv[2])))' "$ed_med" "$eo_med")

printf 'seccomp: %d blocks x %d per setting, alternating; load %s\n' "$BLOCKS" "$N" \
	"$(cut -d' ' -f1-3 /proc/loadavg)"
bench_build_note
printf '  %-34s %9s %9s %9s\n' "" median mean min
printf '  %-34s %9.2f %9.2f %9.2f ms\n' "box start, seccomp = off" "$so_med" "$so_mean" "$so_min"
printf '  %-34s %9.2f %9.2f %9.2f ms\n' "box start, seccomp = default" "$sd_med" "$sd_mean" "$sd_min"
printf '  %-34s %9s ms (target <= +3)\n' "  difference of medians" "$sdiff"
printf '  %-34s %9.2f %9.2f %9.2f ms\n' "exec round trip, seccomp = off" "$eo_med" "$eo_mean" "$eo_min"
printf '  %-34s %9.2f %9.2f %9.2f ms\n' "exec round trip, seccomp = default" "$ed_med" "$ed_mean" "$ed_min"
printf '  %-34s %9s ms\n' "  difference of medians" "$ediff"
echo "RESULT seccomp_start_ms=$sd_med ratio=$(bench_ratio "$sd_med" "$so_med") target=nan"
echo "RESULT seccomp_exec_ms=$ed_med ratio=$(bench_ratio "$ed_med" "$eo_med") target=nan"
exit 0
