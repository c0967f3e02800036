#!/bin/bash
# lock.sh - what the engine lock costs one box while others work: control
# reads and writes of an idle box, alone and while other boxes go through
# their whole life over and over, and the engine lock's own figures.
#
#   1. Idle: a sampler opens, reads to EOF and closes boxes/probe/state and
#      boxes/probe/info in turn, and writes boxes/probe/ttl (a store write),
#      one operation every millisecond, BENCH_IDLE_S seconds.
#   2. Loaded: the same while BENCH_WORKERS shell loops each run, on boxes
#      of their own: mkdir, start, an exec job read to its exit, a write
#      through root/, snapshot, fork, stop (a snapshot), rmdir of both.
#   3. The daemon runs with PADDOCK_LOCK_STATS=1 (lock.h): at its stop it
#      logs per lock how often it was taken, how often a taker waited and
#      for how long, and how long it was held.
#   Reported: p50, p99 and max per operation, idle and loaded, the lifecycle
#   loops' rate, and the engine lock's wait and hold figures.
#   RESULT lock_probe_p99_ms: p99 of the probe's operations under load;
#   ratio: that / p99 idle. Target 2: a box's control files stay about as
#   quick whatever the other boxes do. The hold figures say whether
#   splitting the engine lock would pay: a taker can wait at most about the
#   longest hold.
#
# Environment: BENCH_IDLE_S (5), BENCH_LOAD_S (20), BENCH_WORKERS (2).
# Needs root, a C compiler and a built tree.

set -u
export LC_ALL=C
BENCH_NAME=lock_probe_p99_ms
BENCH_TARGET=2
. "$(cd "$(dirname "$0")" && pwd)/common.sh"

IDLE_S=${BENCH_IDLE_S:-5}
LOAD_S=${BENCH_LOAD_S:-20}
WORKERS=${BENCH_WORKERS:-2}

command -v cc >/dev/null || bench_broken "a C compiler is needed (cc)"
export PADDOCK_LOCK_STATS=1
bench_start

B=$M/boxes
mkdir "$B/probe" || bench_broken "mkdir failed"

cc -O2 -o "$PD_TMP/sampler" "$BENCH_DIR/sampler.c" || bench_broken "cannot build the sampler"

# --- idle ---------------------------------------------------------------------
cat "$B/probe/info" >/dev/null || bench_broken "cannot read probe/info"
"$PD_TMP/sampler" "$IDLE_S" "$B/probe" >"$PD_TMP/idle" || bench_broken "the idle sampler failed"

# --- loaded -------------------------------------------------------------------
# worker N END: box lifecycles until END (epoch seconds); one line per cycle.
worker() {
	local n=$1 end=$2 b f j
	while [ "$(date +%s)" -lt "$end" ]; do
		b=$B/w$n f=$B/w$n-fork
		mkdir "$b" || return 1
		echo running >"$b/state" || return 1
		mkdir "$b/exec/j" && echo 'echo hi' >"$b/exec/j/cmd" && cat "$b/exec/j/exit" >/dev/null ||
			return 1
		echo data >"$b/root/tmp/f" || return 1
		echo snap >"$b/snapshot" || return 1
		echo "w$n-fork" >"$b/fork" || return 1
		echo stopped >"$b/state" || return 1
		rmdir "$f" "$b" || return 1
		echo cycle
	done
}
end=$(($(date +%s) + LOAD_S))
pids=()
for ((w = 0; w < WORKERS; w++)); do
	worker "$w" "$end" >"$PD_TMP/worker$w" 2>"$PD_TMP/worker$w.err" &
	pids+=($!)
done
sleep 0.5
"$PD_TMP/sampler" $((LOAD_S - 1)) "$B/probe" >"$PD_TMP/loaded" || bench_broken "the loaded sampler failed"
for p in "${pids[@]}"; do
	wait "$p" || bench_broken "a lifecycle loop failed: $(cat "$PD_TMP"/worker*.err)"
done
cycles=$(cat "$PD_TMP"/worker? | wc -l)
rmdir "$B/probe" || bench_broken "rmdir probe failed"

# --- the daemon's lock figures --------------------------------------------------
pd_stop || bench_broken "the daemon did not stop cleanly"
grep -q 'lock stats: engine lock:' "$PD_TMP/paddockd.log" ||
	bench_broken "no lock statistics in the daemon's log (a daemon without them?)"

read -r summary < <(python3 - "$PD_TMP/idle" "$PD_TMP/loaded" "$PD_TMP/table" <<'PY'
import sys
def load(p):
    return [(l.split()[1], float(l.split()[2]) / 1e3) for l in open(p) if len(l.split()) == 3]
idle, loaded = load(sys.argv[1]), load(sys.argv[2])
def q(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p * (len(xs) - 1))))] if xs else float("nan")
rows = []
for op in ("state", "info", "ttl"):
    i = [s[1] for s in idle if s[0] == op]
    d = [s[1] for s in loaded if s[0] == op]
    rows.append("    %-22s %6d %8.3f %8.3f %8.3f   %6d %8.3f %8.3f %8.3f" % (
        ("read probe/" if op != "ttl" else "write probe/") + op,
        len(i), q(i, .5), q(i, .99), max(i, default=float("nan")),
        len(d), q(d, .5), q(d, .99), max(d, default=float("nan"))))
open(sys.argv[3], "w").write("\n".join(rows) + "\n")
print("%.3f %.3f %.3f %.3f" % (q([s[1] for s in idle], .99), q([s[1] for s in loaded], .99),
      max((s[1] for s in idle), default=float("nan")), max((s[1] for s in loaded), default=float("nan"))))
PY
)
read -r idle_p99 load_p99 idle_max load_max <<<"$summary"
ratio=$(bench_ratio "$load_p99" "$idle_p99")
printf 'control files of an idle box while %d loops run box lifecycles; load %s\n' \
	"$WORKERS" "$(cut -d' ' -f1-3 /proc/loadavg)"
bench_build_note
printf '  %d lifecycles in %d s (mkdir, start, exec, write, snapshot, fork, stop, rmdir x2)\n' \
	"$cycles" "$LOAD_S"
printf '                             ---------- idle (ms) ----------   ---------- loaded (ms) ---------\n'
printf '    %-22s %6s %8s %8s %8s   %6s %8s %8s %8s\n' operation n p50 p99 max n p50 p99 max
cat "$PD_TMP/table"
printf '    all operations: p99 %s ms loaded vs %s ms idle (ratio %s); max %s vs %s ms\n' \
	"$load_p99" "$idle_p99" "$ratio" "$load_max" "$idle_max"
echo "  the daemon's locks over the whole run (PADDOCK_LOCK_STATS):"
sed -n 's/.*lock stats: /    /p' "$PD_TMP/paddockd.log"
printf '    target: ratio <= %s, met: %s\n' "$BENCH_TARGET" "$(bench_meets "$ratio" "$BENCH_TARGET")"
echo "RESULT $BENCH_NAME=$load_p99 ratio=$ratio target=$BENCH_TARGET"
exit 0
