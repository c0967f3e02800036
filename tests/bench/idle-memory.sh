#!/bin/bash
# idle-memory.sh - host memory per idle box, beyond the box's own processes.
#
# Starts BENCH_BOXES (50) boxes of the tiny image in parallel batches, lets
# them settle, and compares against the same daemon with no boxes (after a
# warm-up batch was started and deleted, so one-time costs such as FUSE
# worker threads and sqlite's cache are in the baseline):
#
#   (a) paddockd's own growth: Rss and Pss from /proc/PID/smaps_rollup;
#   (b) the whole host: MemAvailable before/after (median of several
#       samples), minus what the boxes' cgroups are charged
#       (memory.usage_in_bytes, which on cgroup v1 includes the kernel
#       memory charged to them). What is left is host memory a box costs
#       outside its own cgroup: the daemon, namespaces/mounts/cgroup objects
#       charged elsewhere, and any per-box helper process;
#   (c) per-box helper processes on the host (conmon-like): processes
#       outside the boxes' cgroups that belong to boxes (children of
#       paddockd, crun, paddock-init, anything naming the box data
#       directory). There should be none.
#
# Headline: (b) per box. Target < 3 MiB; the RESULT line's ratio is
# per-box MiB / 3, so as for every benchmark here, met <=> ratio <= target.
# After the boxes are deleted (rmdir, all in parallel) MemAvailable is read
# once more: what has not come back is reported as "not returned".
#
# The host is shared: other work moving memory during the run shows up in
# (b). The spread of the samples is printed to judge that.
#
# Environment: BENCH_BOXES (50), BENCH_BATCH (10), BENCH_SETTLE (3 seconds).
# Needs root and a built tree (make); prints a result block and a RESULT line.

set -u
export LC_ALL=C
BENCH_NAME=idle_memory_per_box_mib
BENCH_TARGET=1
. "$(cd "$(dirname "$0")" && pwd)/common.sh"

NBOX=${BENCH_BOXES:-50}
BATCH=${BENCH_BATCH:-10}
SETTLE=${BENCH_SETTLE:-3}
LIMIT_MIB=3

bench_start
MEMCG=/sys/fs/cgroup/memory
[ -d "$MEMCG" ] || MEMCG=/sys/fs/cgroup # pure cgroup v2

# Boxes named idleN. Starts (or deletes) boxes FIRST..LAST in parallel
# batches; fails if any did not make it.
start_boxes() {
	local first=$1 last=$2 prefix=$3 i j
	for ((i = first; i <= last; i += BATCH)); do
		for ((j = i; j <= last && j < i + BATCH; j++)); do
			(mkdir "$M/boxes/$prefix$j" && echo running >"$M/boxes/$prefix$j/state") \
				2>"$PD_TMP/start-$prefix$j.err" &
		done
		wait
	done
	for ((i = first; i <= last; i++)); do
		local st
		st=$(cat "$M/boxes/$prefix$i/state" 2>/dev/null)
		if [ "$st" != running ]; then
			echo "box $prefix$i is [$st]: $(cat "$PD_TMP/start-$prefix$i.err" \
				"$M/boxes/$prefix$i/error" 2>/dev/null)" >&2
			return 1
		fi
	done
}

delete_boxes() {
	local first=$1 last=$2 prefix=$3 i rc=0
	for ((i = first; i <= last; i++)); do
		rmdir "$M/boxes/$prefix$i" &
	done
	for ((i = first; i <= last; i++)); do
		wait -n || rc=1
	done
	return $rc
}

# Prints "key kB" for the /proc/meminfo fields we use, median of 5 samples,
# plus MemAvailable's spread over the samples.
meminfo() {
	python3 - <<'PY'
import statistics, time
keys = ["MemAvailable", "MemFree", "Cached", "Shmem", "AnonPages", "Slab", "SReclaimable",
        "SUnreclaim", "KernelStack", "PageTables", "Percpu"]
samples = []
for i in range(5):
    d = {}
    for line in open("/proc/meminfo"):
        k, v = line.split(":", 1)
        d[k] = int(v.split()[0])
    samples.append(d)
    time.sleep(0.2)
for k in keys:
    print(k, int(statistics.median(s.get(k, 0) for s in samples)))
av = [s["MemAvailable"] for s in samples]
print("MemAvailableSpread", max(av) - min(av))
PY
}

# "Rss Pss" of the daemon, kB.
daemon_mem() {
	awk '/^Rss:/ {r = $2} /^Pss:/ {p = $2} END {print r, p}' "/proc/$PD_PID/smaps_rollup"
}

# --- warm-up, then the empty baseline ------------------------------------------
WARM=$((BATCH < NBOX ? BATCH : NBOX))
start_boxes 1 "$WARM" warm || bench_broken "the warm-up boxes did not start"
delete_boxes 1 "$WARM" warm || bench_broken "the warm-up boxes could not be deleted"
sleep "$SETTLE"
meminfo >"$PD_TMP/mem0"
read -r rss0 pss0 < <(daemon_mem)
thr0=$(ls "/proc/$PD_PID/task" | wc -l)

# --- N idle boxes -------------------------------------------------------------------
t0=${EPOCHREALTIME/./}
start_boxes 1 "$NBOX" idle || bench_broken "not all $NBOX boxes started"
t1=${EPOCHREALTIME/./}
sleep "$SETTLE"
meminfo >"$PD_TMP/mem1"
read -r rss1 pss1 < <(daemon_mem)
thr1=$(ls "/proc/$PD_PID/task" | wc -l)

# What the boxes' cgroups are charged, and their processes.
cg_sum=0 kmem_sum=0 nprocs=0 box_pss=0
for ((i = 1; i <= NBOX; i++)); do
	cg=$MEMCG/$PD_CGROUP/idle$i
	if [ -f "$cg/memory.usage_in_bytes" ]; then
		u=$(cat "$cg/memory.usage_in_bytes")
		k=$(cat "$cg/memory.kmem.usage_in_bytes" 2>/dev/null || echo 0)
	else
		u=$(cat "$cg/memory.current" 2>/dev/null || echo 0)
		k=0
	fi
	cg_sum=$((cg_sum + u))
	kmem_sum=$((kmem_sum + k))
	for p in $(cat "$cg/cgroup.procs" 2>/dev/null); do
		nprocs=$((nprocs + 1))
		ps_kb=$(awk '/^Pss:/ {print $2}' "/proc/$p/smaps_rollup" 2>/dev/null)
		box_pss=$((box_pss + ${ps_kb:-0}))
	done
done

# Host-side processes that belong to boxes but live outside their cgroups.
helpers=$(python3 - "$PD_PID" "$PD_CGROUP" "$D" <<'PY'
import os, sys
daemon, parent, data = int(sys.argv[1]), sys.argv[2], sys.argv[3]
found = []
for p in os.listdir("/proc"):
    if not p.isdigit() or int(p) == daemon:
        continue
    try:
        cg = open("/proc/%s/cgroup" % p).read()
        stat = open("/proc/%s/stat" % p).read()
        cmd = open("/proc/%s/cmdline" % p, "rb").read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        continue
    if "/%s/" % parent in cg:
        continue  # inside a box
    comm = stat[stat.index("(") + 1:stat.rindex(")")]
    ppid = int(stat[stat.rindex(")") + 2:].split()[1])
    if ppid == daemon or comm in ("crun", "conmon", "paddock-init") or data in cmd:
        found.append("%s(%s)" % (comm, p))
print(" ".join(found))
PY
)

# --- delete them all, in parallel, and see what comes back -----------------------------
delete_boxes 1 "$NBOX" idle || bench_broken "not all boxes could be deleted"
left=$(ls "$M/boxes" | wc -l)
[ "$left" = 0 ] || bench_broken "$left boxes left after rmdir"
sleep "$SETTLE"
meminfo >"$PD_TMP/mem2"
read -r rss2 pss2 < <(daemon_mem)

# --- report ------------------------------------------------------------------------
python3 - "$PD_TMP" "$NBOX" "$cg_sum" "$kmem_sum" "$nprocs" "$box_pss" \
	"$rss0" "$pss0" "$rss1" "$pss1" "$rss2" "$pss2" "$thr0" "$thr1" \
	"$(((t1 - t0) / 1000))" "$LIMIT_MIB" "$BENCH_NAME" "$BENCH_TARGET" "$BATCH" "$helpers" <<'PY'
import sys
(tmp, n, cg_sum, kmem_sum, nprocs, box_pss, rss0, pss0, rss1, pss1, rss2, pss2, thr0, thr1,
 start_ms, limit, name, target, batch) = sys.argv[1:20]
helpers = sys.argv[20].split()
n, cg_kb, kmem_kb = int(n), int(cg_sum) / 1024, int(kmem_sum) / 1024
limit, target = float(limit), float(target)
def load(f):
    return {k: int(v) for k, v in (l.split() for l in open("%s/%s" % (tmp, f)))}
m0, m1, m2 = load("mem0"), load("mem1"), load("mem2")
MiB = 1024.0
total = m0["MemAvailable"] - m1["MemAvailable"]
beyond = total - cg_kb
per_box = beyond / n / MiB
ratio = per_box / limit
print("idle memory: %d boxes of the tiny image, started in parallel batches of %s (%s ms in all)"
      % (n, batch, start_ms))
print("  per box                                         MiB/box    total MiB")
def row(label, kb):
    print("  %-46s %8.3f %11.1f" % (label, kb / n / MiB, kb / MiB))
row("host MemAvailable drop (all costs)", total)
row("  charged to the boxes' cgroups", cg_kb)
row("    of which kernel memory (kmem)", kmem_kb)
row("    box processes' own Pss (%d procs)" % int(nprocs), int(box_pss))
row("  beyond the boxes' cgroups  <- headline", beyond)
row("  paddockd Rss growth", int(rss1) - int(rss0))
row("  paddockd Pss growth", int(pss1) - int(pss0))
print("  kernel counters, change with %d boxes (MiB): " % n + ", ".join(
    "%s %+.1f" % (k, (m1[k] - m0[k]) / MiB)
    for k in ("SUnreclaim", "SReclaimable", "KernelStack", "PageTables", "Percpu", "Shmem",
              "AnonPages", "Cached")))
print("  paddockd: Rss %d -> %d kB, threads %s -> %s; after delete Rss %s kB"
      % (int(rss0), int(rss1), thr0, thr1, rss2))
print("  after deleting all: MemAvailable not returned %.1f MiB (%.3f MiB/box)"
      % ((m0["MemAvailable"] - m2["MemAvailable"]) / MiB,
         (m0["MemAvailable"] - m2["MemAvailable"]) / n / MiB))
print("  noise: MemAvailable spread within samples %d / %d / %d kB (before/with/after)"
      % (m0["MemAvailableSpread"], m1["MemAvailableSpread"], m2["MemAvailableSpread"]))
print("  per-box host processes outside box cgroups: %d%s"
      % (len(helpers), (" (" + " ".join(helpers) + ")") if helpers else " (none, as designed)"))
print("  target: < %.0f MiB per box beyond the box's cgroup; ratio %.2f (<= %.0f)  met: %s"
      % (limit, ratio, target, "yes" if ratio <= target else "NO"))
print("RESULT %s=%.3f ratio=%.2f target=%g" % (name, per_box, ratio, target))
PY
exit 0
