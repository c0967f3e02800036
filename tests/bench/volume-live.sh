#!/bin/bash
# volume-live.sh - what attaching a volume to a running box costs, and
# detaching it, against starting a box that has the volume.
#
# Paddock, live: `echo v > boxes/x/volumes` on a running box (the write
# returns once the volume is mounted at /mnt/v in the box: a detached,
# id-mapped copy of its data directory moved into the box's mount
# namespace by a child process), then `echo > boxes/x/volumes` (unmounted
# there). Each checked outside the timed part in the box's own mount table
# (/proc/PID/mountinfo of its PID 1).
#
# Baseline, in the same run and interleaved with it: `echo running >
# boxes/s/state` of a stopped box whose list has the volume (crun mounts it
# as it starts the box), stopped again outside the timed part. Also shown:
# what a running box needed before live attach, a stop and a start
# (`echo stopped`, `echo running`).
#
# Ratio = median attach (detach) / median start of a box with the volume;
# target <= 0.5. Two RESULT lines: volume_attach_ms, volume_detach_ms.
#
# Environment: BENCH_N (iterations, 20), BENCH_WARMUP (2).
# Needs root and a built tree (make); prints a result block and RESULT lines.

set -u
export LC_ALL=C
BENCH_NAME=volume_attach_ms
BENCH_TARGET=0.5
. "$(cd "$(dirname "$0")" && pwd)/common.sh"

N=${BENCH_N:-20}
WARMUP=${BENCH_WARMUP:-2}

# mounted BOX: the box's mounts under /mnt, from its PID 1's mount table.
mounted() {
	local pid
	pid=$(pd_crun state "$1" | python3 -c 'import json, sys; print(json.load(sys.stdin)["pid"])') ||
		return 1
	awk '$5 ~ "^/mnt/" {print $5}' "/proc/$pid/mountinfo" | tr '\n' ' '
}

bench_start
mkdir "$M/volumes/v" || bench_broken "mkdir volumes/v failed"
echo data >"$M/volumes/v/data/f"
for b in x s; do
	mkdir "$M/boxes/$b" || bench_broken "mkdir boxes/$b failed"
done
echo v >"$M/boxes/s/volumes" || bench_broken "cannot attach v to s: $(cat "$M/boxes/s/error")"
echo running >"$M/boxes/x/state" || bench_broken "cannot start x: $(cat "$M/boxes/x/error")"

for f in attach detach start restart; do
	: >"$PD_TMP/t_$f"
done
for ((i = 0; i < WARMUP + N; i++)); do
	for side in live start; do
		# Alternate which side goes first, so drift hits both alike.
		if [ $((i % 2)) = 1 ]; then
			[ $side = live ] && side=start || side=live
		fi
		if [ $side = live ]; then
			t0=$(now_us)
			echo v >"$M/boxes/x/volumes" ||
				bench_broken "attach failed: $(cat "$M/boxes/x/error")"
			t1=$(now_us)
			[ "$(mounted x)" = "/mnt/v " ] || bench_broken "v is not mounted in x after the write"
			t2=$(now_us)
			echo >"$M/boxes/x/volumes" ||
				bench_broken "detach failed: $(cat "$M/boxes/x/error")"
			t3=$(now_us)
			[ -z "$(mounted x)" ] || bench_broken "v is still mounted in x after the write"
			if [ $i -ge "$WARMUP" ]; then
				echo $((t1 - t0)) >>"$PD_TMP/t_attach"
				echo $((t3 - t2)) >>"$PD_TMP/t_detach"
			fi
		else
			t0=$(now_us)
			echo running >"$M/boxes/s/state" ||
				bench_broken "start of s failed: $(cat "$M/boxes/s/error")"
			t1=$(now_us)
			[ "$(mounted s)" = "/mnt/v " ] || bench_broken "v is not mounted in s after its start"
			t2=$(now_us)
			echo stopped >"$M/boxes/s/state" || bench_broken "stop of s failed"
			t3=$(now_us)
			if [ $i -ge "$WARMUP" ]; then
				echo $((t1 - t0)) >>"$PD_TMP/t_start"
				echo $((t3 - t2 + t1 - t0)) >>"$PD_TMP/t_restart"
			fi
		fi
	done
done

stats() { bench_stats <(awk '{print $1/1000}' "$PD_TMP/t_$1"); }
read -r a_med a_mean a_min a_p90 a_sd _ < <(stats attach)
read -r d_med d_mean d_min d_p90 d_sd _ < <(stats detach)
read -r s_med s_mean s_min s_p90 s_sd _ < <(stats start)
read -r r_med r_mean r_min r_p90 r_sd _ < <(stats restart)
ra=$(bench_ratio "$a_med" "$s_med")
rd=$(bench_ratio "$d_med" "$s_med")

printf 'volume attach/detach on a running box: %d iterations (+%d warm-up), interleaved with starts; load %s\n' \
	"$N" "$WARMUP" "$(cut -d' ' -f1-3 /proc/loadavg)"
bench_build_note
printf '  %-40s %9s %9s %9s %9s %8s\n' "" median mean min p90 stdev
row() { printf '  %-40s %9.2f %9.2f %9.2f %9.2f %8.2f ms\n' "$@"; }
row "start of a box with the volume (baseline)" "$s_med" "$s_mean" "$s_min" "$s_p90" "$s_sd"
row "stop + start (before live attach)" "$r_med" "$r_mean" "$r_min" "$r_p90" "$r_sd"
row "attach live (echo v > volumes)" "$a_med" "$a_mean" "$a_min" "$a_p90" "$a_sd"
row "detach live (echo > volumes)" "$d_med" "$d_mean" "$d_min" "$d_p90" "$d_sd"
printf '  ratio attach/start: %s, detach/start: %s (medians)  target <= %s  met: %s, %s\n' \
	"$ra" "$rd" "$BENCH_TARGET" "$(bench_meets "$ra" "$BENCH_TARGET")" \
	"$(bench_meets "$rd" "$BENCH_TARGET")"
echo "RESULT volume_attach_ms=$a_med ratio=$ra target=$BENCH_TARGET"
echo "RESULT volume_detach_ms=$d_med ratio=$rd target=$BENCH_TARGET"
exit 0
