#!/bin/bash
# usage-stall.sh - control reads of one box while another box's disk usage
# (1,000,000 files) is walked, against the same reads on an idle daemon.
#
#   1. Box `big` gets 1,000,000 empty files (1,000 directories of 1,000),
#      made straight in its own layer on the host by a small C helper (one
#      process per CPU; a minute or more on a busy machine).
#   2. Idle: a sampler opens, reads to EOF and closes boxes/other/state and
#      boxes/other/info in turn, and writes boxes/other/ttl, one operation
#      every millisecond, BENCH_IDLE_S seconds; each operation's latency is
#      recorded.
#   3. Loaded: the same sampler runs while a reader reads boxes/big/usage
#      over and over (a read walks the million files when the last walk is
#      over 5 s old). Only the samples taken while a walk ran count: a walk
#      is a read of big/usage that took over 100 ms.
#   Reported per operation: p50, p99 and max in ms, idle and during walks.
#   RESULT value: the max over all operations during walks, in ms; the
#   target is absolute: < 50 ms. Ratio: p99 during walks / p99 idle (all
#   operations), which a busy machine moves less than the maxima.
#
# Environment: BENCH_FILES (1000000), BENCH_IDLE_S (5), BENCH_WALKS (4:
# walks to sample through). Needs root, a C compiler and a built tree.

set -u
export LC_ALL=C
BENCH_NAME=usage_stall_ms
BENCH_TARGET=50
. "$(cd "$(dirname "$0")" && pwd)/common.sh"

FILES=${BENCH_FILES:-1000000}
IDLE_S=${BENCH_IDLE_S:-5}
WALKS=${BENCH_WALKS:-4}

command -v cc >/dev/null || bench_broken "a C compiler is needed (cc)"
# Walks are of directory uppers (a box's image says its usage by statfs).
PD_DISK_LIMIT=off
bench_start

B=$M/boxes
mkdir "$B/big" "$B/other" || bench_broken "mkdir failed"
id=$(sqlite3 "$D/paddock.db" "SELECT id FROM boxes WHERE name = 'big'" 2>/dev/null ||
	python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("SELECT id FROM boxes WHERE name = ?", ("big",)).fetchone()[0])' "$D/paddock.db")
UPPER=$D/boxes/$id/upper
[ -d "$UPPER" ] || bench_broken "no layer at $UPPER"

# --- the helpers ------------------------------------------------------------
cc -O2 -o "$PD_TMP/mkfiles" -x c - <<'C' || bench_broken "cannot build the file maker"
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
/* mkfiles DIR N: N empty files in DIR/dNNNN/fNNNN, 1,000 per directory,
 * one process per CPU (each makes every Pth directory). */
static int make(int top, long n, long first, long step)
{
	char name[32];
	for (long d = first; d * 1000 < n; d += step) {
		snprintf(name, sizeof name, "d%04ld", d);
		if (mkdirat(top, name, 0755) < 0)
			return perror(name), 1;
		int dfd = openat(top, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd < 0)
			return perror(name), 1;
		for (long f = 0; f < 1000 && d * 1000 + f < n; f++) {
			snprintf(name, sizeof name, "f%04ld", f);
			int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
			if (fd < 0)
				return perror(name), 1;
			close(fd);
		}
		close(dfd);
	}
	return 0;
}
int main(int argc, char **argv)
{
	long n = atol(argv[2]), procs = sysconf(_SC_NPROCESSORS_ONLN);
	int top = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC), status, rc = 0;
	if (top < 0)
		return perror(argv[1]), 1;
	if (procs < 1)
		procs = 1;
	for (long k = 0; k < procs; k++)
		if (fork() == 0)
			_exit(make(top, n, k, procs));
	while (wait(&status) > 0)
		rc |= !WIFEXITED(status) || WEXITSTATUS(status);
	return rc;
}
C
cc -O2 -o "$PD_TMP/sampler" "$BENCH_DIR/sampler.c" || bench_broken "cannot build the sampler"

echo "making $FILES files in box big's layer..." >&2
t0=$(date +%s%N)
"$PD_TMP/mkfiles" "$UPPER" "$FILES" || bench_broken "cannot make the files"
make_s=$(python3 -c "print('%.1f' % (($(date +%s%N) - $t0) / 1e9))")

# --- idle ---------------------------------------------------------------------
cat "$B/other/info" >/dev/null || bench_broken "cannot read other/info"
"$PD_TMP/sampler" "$IDLE_S" "$B/other" >"$PD_TMP/idle" || bench_broken "the idle sampler failed"

# --- during walks -------------------------------------------------------------
# The reader logs "START_MS END_MS" of each read of big/usage.
python3 - "$B/big/usage" "$WALKS" >"$PD_TMP/walks" <<'PY' &
import sys, time
path, want = sys.argv[1], int(sys.argv[2])
walks = 0
while walks < want:
    t = time.clock_gettime(time.CLOCK_MONOTONIC) * 1e3
    with open(path, "rb") as f:
        f.read()
    e = time.clock_gettime(time.CLOCK_MONOTONIC) * 1e3
    print("%.3f %.3f" % (t, e), flush=True)
    if e - t > 100:
        walks += 1
    time.sleep(0.05)
PY
reader=$!
"$PD_TMP/sampler" 100000 "$B/other" >"$PD_TMP/loaded" &
sampler=$!
wait "$reader" || bench_broken "the reader of big/usage failed"
kill "$sampler" 2>/dev/null
wait "$sampler" 2>/dev/null
disk=$(awk '/^disk_bytes/ {print $2}' "$B/big/usage")

read -r summary < <(python3 - "$PD_TMP/idle" "$PD_TMP/loaded" "$PD_TMP/walks" "$PD_TMP/table" <<'PY'
import statistics, sys
def load(p):
    out = []
    for line in open(p):
        parts = line.split()
        if len(parts) == 3:
            out.append((float(parts[0]), parts[1], float(parts[2]) / 1e3))
    return out
idle, loaded = load(sys.argv[1]), load(sys.argv[2])
walks = [tuple(map(float, l.split())) for l in open(sys.argv[3]) if l.strip()]
walks = [(a, b) for a, b in walks if b - a > 100]
during = [s for s in loaded if any(a <= s[0] <= b for a, b in walks)]
def q(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p * (len(xs) - 1))))] if xs else float("nan")
rows = []
for op in ("state", "info", "ttl"):
    i = [s[2] for s in idle if s[1] == op]
    d = [s[2] for s in during if s[1] == op]
    rows.append("    %-22s %6d %8.3f %8.3f %8.3f   %6d %8.3f %8.3f %8.3f" % (
        ("read other/" if op != "ttl" else "write other/") + op,
        len(i), q(i, .5), q(i, .99), max(i, default=float("nan")),
        len(d), q(d, .5), q(d, .99), max(d, default=float("nan"))))
open(sys.argv[4], "w").write("\n".join(rows) + "\n")
imax = max((s[2] for s in idle), default=float("nan"))
dmax = max((s[2] for s in during), default=float("nan"))
ip99 = q([s[2] for s in idle], .99)
dp99 = q([s[2] for s in during], .99)
wl = [b - a for a, b in walks]
print("%.3f %.3f %.3f %.3f %d %.0f %d" % (imax, dmax, ip99, dp99, len(wl),
      statistics.median(wl) if wl else float("nan"), len(during)))
PY
)
read -r idle_max walk_max idle_p99 walk_p99 n_walks walk_ms n_during <<<"$summary"
[ "$n_during" -gt 0 ] || bench_broken "no sample fell inside a walk"

ratio=$(bench_ratio "$walk_p99" "$idle_p99")
met=$(python3 -c "import sys; print('yes' if float(sys.argv[1]) < float(sys.argv[2]) else 'NO')" "$walk_max" "$BENCH_TARGET")
printf 'control reads of box other while box big'"'"'s usage walks %d files; load %s\n' \
	"$FILES" "$(cut -d' ' -f1-3 /proc/loadavg)"
bench_build_note
printf '  files made in %s s; big/usage: disk_bytes %s; %d walks, median %s ms each\n' \
	"$make_s" "$disk" "$n_walks" "$walk_ms"
printf '                             ---------- idle (ms) ----------   ------- during walks (ms) -----\n'
printf '    %-22s %6s %8s %8s %8s   %6s %8s %8s %8s\n' operation n p50 p99 max n p50 p99 max
cat "$PD_TMP/table"
printf '    all operations: p99 %s ms during walks vs %s ms idle (ratio %s); max %s vs %s ms\n' \
	"$walk_p99" "$idle_p99" "$ratio" "$walk_max" "$idle_max"
printf '    target: max during walks < %s ms, met: %s\n' "$BENCH_TARGET" "$met"
echo "RESULT $BENCH_NAME=$walk_max ratio=$ratio target=$BENCH_TARGET"
rmdir "$B/big" "$B/other" 2>/dev/null
exit 0
