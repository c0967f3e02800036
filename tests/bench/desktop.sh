#!/bin/bash
# desktop.sh - a box's desktop: start, screenshot latency, idle memory.
#
#   start:      desktop/state on (the box already running) until the write
#               returns, which is when the VNC socket greets (first frame
#               ready), and until the first screenshot.png that decodes.
#   screenshot: N reads of screenshot.png (1280x800; xwd in the box, then
#               the PNG), against the baseline `xwd -root` alone in the box
#               (N runs inside one exec job, timed in the box), same run.
#   memory:     usage memory_bytes of the box, its desktop idle for 10 s,
#               against an idle plain box of the same image.
# Target: screenshot <= 150 ms (ratio = median / 150 ms).
BENCH_NAME=desktop
BENCH_TARGET=1
. "$(dirname "$0")/common.sh"
N=${BENCH_N:-20}

pd_use_image desktop
bench_start
B=$M/boxes/desk
mkdir "$B" "$M/boxes/plain" || bench_broken "mkdir"
echo running >"$B/state" && echo running >"$M/boxes/plain/state" || bench_broken "start"

t0=$(date +%s%N)
echo on >"$B/desktop/state" || bench_broken "desktop on: $(cat "$B/error")"
t1=$(date +%s%N)
until python3 -c 'import sys; d=open(sys.argv[1],"rb").read(); sys.exit(d[:4]!=b"\x89PNG")' "$B/screenshot.png" 2>/dev/null; do
	sleep 0.02
	[ $(($(date +%s%N) - t0)) -lt 60000000000 ] || bench_broken "no screenshot"
done
t2=$(date +%s%N)

# Screenshots through the tree.
: >"$PD_TMP/shot"
for ((i = 0; i < N; i++)); do
	a=$(date +%s%N)
	cat "$B/screenshot.png" >"$PD_TMP/s.png" || bench_broken "screenshot: $(cat "$B/error")"
	b=$(date +%s%N)
	echo $(((b - a) / 1000)) >>"$PD_TMP/shot"
done
size=$(stat -c %s "$PD_TMP/s.png")
# The baseline: xwd -root alone, N times in one job (no job start counted).
mkdir "$B/exec/base" && echo 1 >"$B/exec/base/desktop"
echo "for i in \$(seq $N); do a=\$(date +%s%N); xwd -root -silent >/tmp/x.xwd; b=\$(date +%s%N); echo \$(((b - a) / 1000)); done" >"$B/exec/base/cmd"
[ "$(timeout 120 cat "$B/exec/base/exit")" = 0 ] || bench_broken "baseline job: $(cat "$B/exec/base/output")"
cp "$B/exec/base/stdout" "$PD_TMP/base"

sleep 10
mem_desk=$(awk '$1 == "memory_bytes" {print $2}' "$B/usage")
mem_plain=$(awk '$1 == "memory_bytes" {print $2}' "$M/boxes/plain/usage")

read -r s_med s_mean s_min s_p90 s_sd _ < <(bench_stats <(awk '{print $1/1000}' "$PD_TMP/shot"))
read -r x_med x_mean x_min x_p90 x_sd _ < <(bench_stats <(awk '{print $1/1000}' "$PD_TMP/base"))
ratio=$(bench_ratio "$s_med" 150)
printf 'desktop: %d screenshots of 1280x800 (PNG %d bytes); load %s\n' "$N" "$size" "$(cut -d' ' -f1-3 /proc/loadavg)"
bench_build_note
printf '  state on -> write returned (VNC greets): %d ms; -> first screenshot: %d ms\n' \
	$(((t1 - t0) / 1000000)) $(((t2 - t0) / 1000000))
printf '  %-40s %9s %9s %9s %9s %8s\n' "" median mean min p90 stdev
printf '  %-40s %9.2f %9.2f %9.2f %9.2f %8.2f ms\n' "xwd -root alone in the box (baseline)" \
	"$x_med" "$x_mean" "$x_min" "$x_p90" "$x_sd"
printf '  %-40s %9.2f %9.2f %9.2f %9.2f %8.2f ms\n' "cat screenshot.png" \
	"$s_med" "$s_mean" "$s_min" "$s_p90" "$s_sd"
printf '  ratio screenshot/xwd: %s\n' "$(bench_ratio "$s_med" "$x_med")"
printf '  idle memory: desktop box %d MiB, plain box %d MiB (usage memory_bytes)\n' \
	$((mem_desk / 1048576)) $((mem_plain / 1048576))
printf '  target: screenshot <= 150 ms; ratio %s  met: %s\n' "$ratio" "$(bench_meets "$ratio" 1)"
echo "RESULT $BENCH_NAME=$s_med ratio=$ratio target=$BENCH_TARGET"
exit 0
