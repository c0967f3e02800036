#!/bin/bash
# state-read.sh - reading a control file through the FUSE tree, against
# reading the same bytes from tmpfs.
#
#   1. `cat MOUNT/boxes/X/state` vs `cat /dev/shm/FILE` holding the same
#      content ("running\n"), with hyperfine -N (no shell), many runs.
#      Ratio = FUSE median / tmpfs median; target <= 2. Both sides pay
#      fork+exec of cat, which dominates the tmpfs side.
#   2. A tighter in-process figure: open+read-to-EOF+close of each file,
#      10,000 times in a loop (a small C program, or python3 without a C
#      compiler), in per-operation microseconds. Reported, no target.
#
# Environment: BENCH_RUNS (2000), BENCH_WARMUP (100), BENCH_LOOP (10000).
# Needs root and a built tree (make); prints a result block and a RESULT line.

set -u
export LC_ALL=C
BENCH_NAME=state_read_us
BENCH_TARGET=2
. "$(cd "$(dirname "$0")" && pwd)/common.sh"

RUNS=${BENCH_RUNS:-2000}
WARMUP=${BENCH_WARMUP:-100}
LOOP=${BENCH_LOOP:-10000}

command -v hyperfine >/dev/null || bench_broken "hyperfine is not installed"
bench_start

SHM=/dev/shm/paddock-bench-state-$$
shm_cleanup() {
	rm -f "$SHM"
}
bench_on_exit shm_cleanup

BOX=$M/boxes/readbench
mkdir "$BOX" || bench_broken "mkdir $BOX failed"
echo running >"$BOX/state" || bench_broken "cannot start the box: $(cat "$BOX/error")"
cat "$BOX/state" >"$SHM" || bench_broken "cannot read $BOX/state"
[ "$(cat "$SHM")" = running ] || bench_broken "box state is $(cat "$SHM"), not running"
CAT=$(command -v cat)

# --- 1. cat, through hyperfine ---------------------------------------------
JSON=$PD_TMP/state-read.json
hyperfine -N --style none --warmup "$WARMUP" --runs "$RUNS" --export-json "$JSON" \
	-n fuse "$CAT $BOX/state" -n tmpfs "$CAT $SHM" >/dev/null 2>"$PD_TMP/hyperfine.err" ||
	bench_broken "hyperfine failed: $(cat "$PD_TMP/hyperfine.err")"
read -r f_med f_mean f_sd f_min t_med t_mean t_sd t_min < <(python3 - "$JSON" <<'PY'
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
out = []
for k in ("fuse", "tmpfs"):
    x = r[k]
    out += ["%.1f" % (x[f] * 1e6) for f in ("median", "mean", "stddev", "min")]
print(" ".join(out))
PY
)

# --- 2. open+read+close in one process ----------------------------------------
LOOPER=$PD_TMP/readloop
if command -v cc >/dev/null && cc -O2 -o "$LOOPER" -x c - 2>/dev/null <<'C'; then
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
/* readloop FILE N: mean µs of N open + read-to-EOF + close of FILE. */
int main(int argc, char **argv)
{
	char buf[4096];
	struct timespec a, b;
	int n = atoi(argv[2]);
	for (int pass = 0; pass < 2; pass++) {
		int count = pass ? n : n / 10;
		clock_gettime(CLOCK_MONOTONIC, &a);
		for (int i = 0; i < count; i++) {
			int fd = open(argv[1], O_RDONLY | O_CLOEXEC);
			ssize_t r;
			if (fd < 0) {
				perror(argv[1]);
				return 1;
			}
			while ((r = read(fd, buf, sizeof buf)) > 0)
				;
			if (r < 0) {
				perror(argv[1]);
				return 1;
			}
			close(fd);
		}
		clock_gettime(CLOCK_MONOTONIC, &b);
	}
	printf("%.2f\n", ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / 1e3 / n);
	return 0;
}
C
	loop_how="C loop"
else
	cat >"$LOOPER" <<'PY'
#!/usr/bin/env python3
import os, sys, time
path, n = sys.argv[1], int(sys.argv[2])
for count in (n // 10, n):
    t = time.perf_counter()
    for _ in range(count):
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        while os.read(fd, 4096):
            pass
        os.close(fd)
    t = time.perf_counter() - t
print("%.2f" % (t * 1e6 / n))
PY
	chmod +x "$LOOPER"
	loop_how="python3 loop"
fi
# Five rounds, interleaved; the median round counts.
: >"$PD_TMP/loop_fuse"
: >"$PD_TMP/loop_tmpfs"
for _ in 1 2 3 4 5; do
	"$LOOPER" "$BOX/state" "$LOOP" >>"$PD_TMP/loop_fuse" || bench_broken "read loop on $BOX/state failed"
	"$LOOPER" "$SHM" "$LOOP" >>"$PD_TMP/loop_tmpfs" || bench_broken "read loop on $SHM failed"
done
read -r lf_med _ < <(bench_stats "$PD_TMP/loop_fuse")
read -r lt_med _ < <(bench_stats "$PD_TMP/loop_tmpfs")

ratio=$(bench_ratio "$f_med" "$t_med")
loop_ratio=$(bench_ratio "$lf_med" "$lt_med")
printf 'state read: "running" from a running box vs the same bytes on /dev/shm; load %s\n' \
	"$(cut -d' ' -f1-3 /proc/loadavg)"
bench_build_note
printf '  cat (hyperfine -N, %d runs, %d warm-up)   median    mean  stddev     min\n' "$RUNS" "$WARMUP"
printf '    %-38s %7s %7s %7s %7s us\n' "cat MOUNT/boxes/X/state" "$f_med" "$f_mean" "$f_sd" "$f_min"
printf '    %-38s %7s %7s %7s %7s us\n' "cat /dev/shm/FILE" "$t_med" "$t_mean" "$t_sd" "$t_min"
printf '    ratio (medians): %s  target <= %s  met: %s\n' "$ratio" "$BENCH_TARGET" \
	"$(bench_meets "$ratio" "$BENCH_TARGET")"
printf '  open+read+close, %s, %d per round, median of 5 rounds:\n' "$loop_how" "$LOOP"
printf '    FUSE %s us/op, tmpfs %s us/op, ratio %s (no target; cat above is the target)\n' \
	"$lf_med" "$lt_med" "$loop_ratio"
echo "RESULT $BENCH_NAME=$f_med ratio=$ratio target=$BENCH_TARGET"
exit 0
