#!/bin/bash
# box-start.sh - how long starting a box takes, against raw crun.
#
# Paddock: `mkdir MOUNT/boxes/NAME` then `echo running > .../state` (the
# write returns once the box's PID 1 runs); the box is deleted (rmdir)
# outside the timed part.
#
# Baseline, in the same run and interleaved with it: `crun run -d` of a
# bundle made with `crun spec` and edited to what paddockd asks of crun:
# rootfs = its own overlay mount of the same tiny image (mounted outside
# the timed part), PID 1 = the same paddock-init bind-mounted at
# /dev/paddock-init, namespaces pid, network, ipc, uts, mount, the cgroup
# limits paddockd wrote for a real box (copied from its config.json),
# cgroupsPath /paddock-bench-PID/raw-N. Timed from just before `crun run`
# to its return; deleted outside the timed part. crun runs directly (no
# wrapper process) inside one private mount namespace without the v2 tree,
# which is what paddockd's own fork+unshare amounts to.
#
# Ratio = paddock median / crun median; target <= 1.5. On a small VM the
# time of `crun run` itself varies a lot from one call to the next (about
# 7 to 25 ms here), which is why both sides are interleaved and medians
# compared; the minimums are printed too.
#
# Environment: BENCH_N (iterations, 20), BENCH_WARMUP (2).
# Needs root and a built tree (make); prints a result block and a RESULT line.

set -u
export LC_ALL=C
BENCH_NAME=box_start_ms
BENCH_TARGET=1.5
. "$(cd "$(dirname "$0")" && pwd)/common.sh"

N=${BENCH_N:-20}
WARMUP=${BENCH_WARMUP:-2}


# --- the timed loop, run inside a private mount namespace -------------------
if [ "${1:-}" = __loop ]; then
	bench_in_private_ns
	# Each baseline container's root: the tiny image under its own overlay,
	# as a box has. Mounted here, so they vanish with this namespace.
	for ((i = 0; i < WARMUP + N; i++)); do
		mkdir -p "$RAW/b$i/upper" "$RAW/b$i/work" "$RAW/b$i/rootfs"
		mount -t overlay overlay \
			-o "lowerdir=$LOWER,upperdir=$RAW/b$i/upper,workdir=$RAW/b$i/work" \
			"$RAW/b$i/rootfs" || { echo "cannot mount the baseline's overlay" >&2; exit 1; }
	done
	: >"$RAW/t_crun"
	: >"$RAW/t_paddock"
	: >"$RAW/t_mkdir"
	: >"$RAW/t_state"
	for ((i = 0; i < WARMUP + N; i++)); do
		for side in crun paddock; do
			# Alternate which side goes first, so drift hits both alike.
			if [ $((i % 2)) = 1 ]; then
				[ $side = crun ] && side=paddock || side=crun
			fi
			if [ $side = crun ]; then
				t0=$(now_us)
				crun --root "$RAW/crunroot" run -d --bundle "$RAW/b$i" "raw-$i" \
					</dev/null >/dev/null 2>"$RAW/crun.err"
				rc=$?
				t1=$(now_us)
				if [ $rc != 0 ]; then
					echo "crun run failed: $(cat "$RAW/crun.err")" >&2
					exit 1
				fi
				if ! crun --root "$RAW/crunroot" state "raw-$i" 2>/dev/null |
					grep -q '"status": *"running"'; then
					echo "raw-$i is not running after crun run" >&2
					exit 1
				fi
				crun --root "$RAW/crunroot" delete -f "raw-$i" >/dev/null 2>&1
				umount "$RAW/b$i/rootfs"
				[ $i -ge "$WARMUP" ] && echo "$(((t1 - t0)))" >>"$RAW/t_crun"
			else
				box=$M/boxes/bench$i
				t0=$(now_us)
				mkdir "$box" || { echo "mkdir $box failed" >&2; exit 1; }
				t1=$(now_us)
				echo running >"$box/state" ||
					{ echo "start of $box failed: $(cat "$box/error")" >&2; exit 1; }
				t2=$(now_us)
				read -r st <"$box/state"
				if [ "$st" != running ]; then
					echo "box bench$i is $st after the write" >&2
					exit 1
				fi
				rmdir "$box" || { echo "rmdir $box failed" >&2; exit 1; }
				if [ $i -ge "$WARMUP" ]; then
					echo $((t2 - t0)) >>"$RAW/t_paddock"
					echo $((t1 - t0)) >>"$RAW/t_mkdir"
					echo $((t2 - t1)) >>"$RAW/t_state"
				fi
			fi
		done
	done
	exit 0
fi

# --- set-up ------------------------------------------------------------------
bench_start
bench_raw_setup
bench_raw_probe
rmdir "$M/boxes/probe" || bench_broken "rmdir $M/boxes/probe failed"
bench_raw_bundles $((WARMUP + N))

# --- run -----------------------------------------------------------------------
export RAW M LOWER N WARMUP
unshare -m --propagation private "$0" __loop || bench_broken "the timed loop failed"

read -r c_med c_mean c_min c_p90 c_sd _ < <(bench_stats <(awk '{print $1/1000}' "$RAW/t_crun"))
read -r p_med p_mean p_min p_p90 p_sd _ < <(bench_stats <(awk '{print $1/1000}' "$RAW/t_paddock"))
read -r m_med m_mean _ < <(bench_stats <(awk '{print $1/1000}' "$RAW/t_mkdir"))
read -r s_med s_mean _ < <(bench_stats <(awk '{print $1/1000}' "$RAW/t_state"))
ratio=$(bench_ratio "$p_med" "$c_med")

printf 'box start: %d iterations (+%d warm-up), crun and paddock interleaved; load %s\n' \
	"$N" "$WARMUP" "$(cut -d' ' -f1-3 /proc/loadavg)"
bench_build_note
printf '  %-34s %9s %9s %9s %9s %8s\n' "" median mean min p90 stdev
printf '  %-34s %9.2f %9.2f %9.2f %9.2f %8.2f ms\n' "crun run -d (baseline)" \
	"$c_med" "$c_mean" "$c_min" "$c_p90" "$c_sd"
printf '  %-34s %9.2f %9.2f %9.2f %9.2f %8.2f ms\n' "paddock mkdir + write running" \
	"$p_med" "$p_mean" "$p_min" "$p_p90" "$p_sd"
printf '  %-34s %9.2f %9.2f %9s %9s %8s ms\n' "  of which mkdir (create)" "$m_med" "$m_mean" "" "" ""
printf '  %-34s %9.2f %9.2f %9s %9s %8s ms\n' "  of which write running (start)" "$s_med" "$s_mean" "" "" ""
printf '  ratio paddock/crun (medians): %s  target <= %s  met: %s  (of minimums: %s)\n' \
	"$ratio" "$BENCH_TARGET" "$(bench_meets "$ratio" "$BENCH_TARGET")" \
	"$(bench_ratio "$p_min" "$c_min")"
echo "RESULT $BENCH_NAME=$p_med ratio=$ratio target=$BENCH_TARGET"
exit 0
