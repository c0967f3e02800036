#!/bin/bash
# idle-memory.sh - host memory per idle box, beyond the box's own processes.
#
# Starts BENCH_BOXES (50) boxes of the tiny image in parallel batches, lets
# them settle, measures, deletes them all (rmdir, in parallel), and repeats
# that BENCH_ROUNDS (3) times. The reference is the same daemon with no
# boxes, after a warm-up batch was started and deleted (so one-time costs
# such as FUSE worker threads and sqlite's cache are in the reference).
#
#   (a) paddockd's own growth: Rss and Pss from /proc/PID/smaps_rollup.
#   (b) the whole host, minus what the boxes' cgroups are charged
#       (memory.usage_in_bytes; on cgroup v1 it includes the kernel memory
#       charged to them). What is left is what a box costs outside its own
#       cgroup: the daemon, namespaces, mounts and cgroup objects charged
#       elsewhere or nowhere, and any per-box helper process. Two ways:
#         used:  MemTotal - MemFree - Buffers - Cached + Shmem, i.e. memory
#                that is not reclaimable page cache, minus the boxes'
#                charge less their page cache. Page cache comes and goes
#                with whatever else runs on the host, so this is the
#                steadier figure and the headline (median over rounds).
#         avail: the drop in MemAvailable minus the boxes' whole charge.
#   (c) per-box helper processes on the host (conmon-like): processes
#       outside the boxes' cgroups that descend from paddockd or name this
#       daemon's directories. There should be none. The daemon's one lxcfs
#       (runtime/lxcfs.h) is not per box: it is counted in (d).
#   (d) lxcfs (one per daemon, serving every box's /proc views): its Rss
#       and Pss with 0 boxes, with BENCH_BOXES_MID (10) and with all
#       BENCH_BOXES. Each box first reads its views once (meminfo,
#       cpuinfo, stat, uptime, loadavg, swaps, diskstats, cpu/online, from
#       inside its namespaces), as `free` or `nproc` would, so that lxcfs
#       holds whatever it keeps per box; BENCH_TOUCH=0 skips that. Its
#       growth is part of (b) too (it is host memory outside the boxes).
#
# Target: < 3 MiB per box beyond the box's cgroup. The RESULT line's ratio
# is (headline MiB per box) / 3, so as for every benchmark here, the target
# is met when ratio <= target. "not returned" is the growth of `used` from
# the first reference to the end, after every box was deleted.
#
# The host may be shared: anything else allocating or freeing memory during
# a round shows up in (b); compare the rounds to judge.
#
# Environment: BENCH_BOXES (50), BENCH_BOXES_MID (10), BENCH_BATCH (10),
# BENCH_ROUNDS (3), BENCH_SETTLE (3 seconds), BENCH_TOUCH (1). Needs root and a built tree (make); prints a
# result block and a RESULT line.

set -u
export LC_ALL=C
BENCH_NAME=idle_memory_per_box_mib
BENCH_TARGET=1
. "$(cd "$(dirname "$0")" && pwd)/common.sh"

NBOX=${BENCH_BOXES:-50}
MID=${BENCH_BOXES_MID:-10}
TOUCH=${BENCH_TOUCH:-1}
BATCH=${BENCH_BATCH:-10}
ROUNDS=${BENCH_ROUNDS:-3}
SETTLE=${BENCH_SETTLE:-3}
LIMIT_MIB=3

bench_start
MEMCG=/sys/fs/cgroup/memory
[ -d "$MEMCG" ] || MEMCG=/sys/fs/cgroup # pure cgroup v2
OUT=$PD_TMP/idle
mkdir -p "$OUT"

# Starts boxes PREFIX{FIRST..LAST} in parallel batches; fails if any did not
# make it. (Waits for its own jobs by PID: a bare `wait` would also wait for
# the daemon, a background job of this shell too.)
start_boxes() {
	local first=$1 last=$2 prefix=$3 i j st pids
	for ((i = first; i <= last; i += BATCH)); do
		pids=()
		for ((j = i; j <= last && j < i + BATCH; j++)); do
			(mkdir "$M/boxes/$prefix$j" && echo running >"$M/boxes/$prefix$j/state") \
				2>"$PD_TMP/start-$prefix$j.err" &
			pids+=($!)
		done
		wait "${pids[@]}"
	done
	for ((i = first; i <= last; i++)); do
		st=$(cat "$M/boxes/$prefix$i/state" 2>/dev/null)
		if [ "$st" != running ]; then
			echo "box $prefix$i is [$st]: $(cat "$PD_TMP/start-$prefix$i.err" \
				"$M/boxes/$prefix$i/error" 2>/dev/null)" >&2
			return 1
		fi
	done
}

# Deletes boxes PREFIX{FIRST..LAST}, all at once.
delete_boxes() {
	local first=$1 last=$2 prefix=$3 i rc=0 pids=()
	for ((i = first; i <= last; i++)); do
		rmdir "$M/boxes/$prefix$i" &
		pids+=($!)
	done
	for i in "${pids[@]}"; do
		wait "$i" || rc=1
	done
	return $rc
}

# Reads each box's lxcfs views once from inside its PID and mount
# namespaces (lxcfs answers by the reader's PID namespace).
touch_views() {
	local first=$1 last=$2 prefix=$3 i pid
	[ "$TOUCH" = 1 ] || return 0
	for ((i = first; i <= last; i++)); do
		pid=$(pd_crun state "$prefix$i" 2>/dev/null |
			python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])') || return 1
		nsenter -t "$pid" -m -p -- cat /proc/meminfo /proc/cpuinfo /proc/stat /proc/uptime \
			/proc/loadavg /proc/swaps /proc/diskstats /sys/devices/system/cpu/online \
			>/dev/null || return 1
	done
}

# "Rss Pss" of the daemon's lxcfs (kB), or "0 0" when it does not run.
lxcfs_mem() {
	local pid
	pid=$(cat "$PD_TMP/run/lxcfs.d/lxcfs.pid" 2>/dev/null)
	if [ -n "$pid" ] && [ -r "/proc/$pid/smaps_rollup" ]; then
		awk '/^Rss:/ {r = $2} /^Pss:/ {p = $2} END {print r, p}' "/proc/$pid/smaps_rollup"
	else
		echo 0 0
	fi
}

# /proc/meminfo, median of 5 samples 0.2 s apart, as "key kB" lines, plus
# the derived `used` and the spread of `used` over the samples.
meminfo() {
	python3 - <<'PY'
import statistics, time
samples = []
for i in range(5):
    d = {}
    for line in open("/proc/meminfo"):
        k, v = line.split(":", 1)
        d[k] = int(v.split()[0])
    d["used"] = d["MemTotal"] - d["MemFree"] - d["Buffers"] - d["Cached"] + d["Shmem"]
    samples.append(d)
    if i < 4:
        time.sleep(0.2)
for k in samples[0]:
    print(k, int(statistics.median(s[k] for s in samples)))
print("usedSpread", max(s["used"] for s in samples) - min(s["used"] for s in samples))
PY
}

# "Rss Pss threads" of the daemon (kB).
daemon_mem() {
	echo "$(awk '/^Rss:/ {r = $2} /^Pss:/ {p = $2} END {print r, p}' \
		"/proc/$PD_PID/smaps_rollup") $(ls "/proc/$PD_PID/task" | wc -l)"
}

# What the boxes' cgroups are charged: "usage cache shmem kmem procs pss"
# (bytes, except procs and pss in kB).
box_charges() {
	python3 - "$MEMCG/$PD_CGROUP" "$NBOX" <<'PY'
import os, sys
base, n = sys.argv[1], int(sys.argv[2])
tot = dict(usage=0, cache=0, shmem=0, kmem=0, procs=0, pss=0)
def num(path):
    try:
        return int(open(path).read().split()[0])
    except (OSError, ValueError, IndexError):
        return 0
for i in range(1, n + 1):
    cg = os.path.join(base, "idle%d" % i)
    v1 = os.path.exists(os.path.join(cg, "memory.usage_in_bytes"))
    tot["usage"] += num(os.path.join(cg, "memory.usage_in_bytes" if v1 else "memory.current"))
    tot["kmem"] += num(os.path.join(cg, "memory.kmem.usage_in_bytes")) if v1 else 0
    try:
        stat = dict(l.split() for l in open(os.path.join(cg, "memory.stat")))
    except OSError:
        stat = {}
    tot["cache"] += int(stat.get("cache" if v1 else "file", 0))
    tot["shmem"] += int(stat.get("shmem", 0))
    if not v1:
        tot["kmem"] += int(stat.get("kernel", 0))
    try:
        pids = open(os.path.join(cg, "cgroup.procs")).read().split()
    except OSError:
        pids = []
    for p in pids:
        tot["procs"] += 1
        try:
            for l in open("/proc/%s/smaps_rollup" % p):
                if l.startswith("Pss:"):
                    tot["pss"] += int(l.split()[1])
        except OSError:
            pass
print(" ".join(str(tot[k]) for k in ("usage", "cache", "shmem", "kmem", "procs", "pss")))
PY
}

# Host-side processes that belong to boxes but live outside their cgroups:
# descendants of paddockd, or processes naming this run's directory (our
# crun root is under it). Prints them as comm(pid), space-separated.
box_helpers() {
	python3 - "$PD_PID" "$PD_CGROUP" "$PD_TMP" "$$" <<'PY'
import os, sys
daemon, parent, tmp, script = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
me = os.getpid()
info = {}
for p in os.listdir("/proc"):
    if not p.isdigit():
        continue
    try:
        stat = open("/proc/%s/stat" % p).read()
        cg = open("/proc/%s/cgroup" % p).read()
        cmd = open("/proc/%s/cmdline" % p, "rb").read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        continue
    comm = stat[stat.index("(") + 1:stat.rindex(")")]
    ppid = int(stat[stat.rindex(")") + 2:].split()[1])
    info[int(p)] = (comm, ppid, cg, cmd)
def descends_from_daemon(pid):
    seen = 0
    while pid > 1 and seen < 64:
        if pid == daemon:
            return True
        pid = info.get(pid, ("", 0))[1]
        seen += 1
    return False
found = []
for pid, (comm, ppid, cg, cmd) in sorted(info.items()):
    if pid in (daemon, me, script) or info.get(pid, ("", 0))[1] == script:
        continue
    if "/%s/" % parent in cg:
        continue  # inside a box
    if comm == "lxcfs" and cmd.rstrip().endswith(tmp + "/run/lxcfs.d/lxcfs"):
        continue  # the daemon's one lxcfs, not per box: counted apart
    if descends_from_daemon(pid) or tmp in cmd:
        found.append("%s(%d)" % (comm, pid))
print(" ".join(found))
PY
}

# --- warm-up, then rounds ----------------------------------------------------------
WARM=$((BATCH < NBOX ? BATCH : NBOX))
start_boxes 1 "$WARM" warm || bench_broken "the warm-up boxes did not start"
delete_boxes 1 "$WARM" warm || bench_broken "the warm-up boxes could not be deleted"
sleep "$SETTLE"

helpers=
for ((r = 1; r <= ROUNDS; r++)); do
	meminfo >"$OUT/mem0.$r"
	daemon_mem >"$OUT/daemon0.$r"
	lxcfs_mem >"$OUT/lxcfs0.$r"
	# The start time counts starts only (not the reads of the views, nor
	# the pause at MID boxes).
	if ((MID > 0 && MID < NBOX)); then
		t0=${EPOCHREALTIME/./}
		start_boxes 1 "$MID" idle || bench_broken "not all $MID boxes started"
		t1=${EPOCHREALTIME/./}
		touch_views 1 "$MID" idle || bench_broken "cannot read the boxes' /proc views"
		sleep "$SETTLE"
		lxcfs_mem >"$OUT/lxcfsmid.$r"
		t2=${EPOCHREALTIME/./}
		start_boxes $((MID + 1)) "$NBOX" idle || bench_broken "not all $NBOX boxes started"
		t3=${EPOCHREALTIME/./}
		echo $(((t1 - t0 + t3 - t2) / 1000)) >"$OUT/start_ms.$r"
		touch_views $((MID + 1)) "$NBOX" idle || bench_broken "cannot read the boxes' /proc views"
	else
		t0=${EPOCHREALTIME/./}
		start_boxes 1 "$NBOX" idle || bench_broken "not all $NBOX boxes started"
		t1=${EPOCHREALTIME/./}
		echo $(((t1 - t0) / 1000)) >"$OUT/start_ms.$r"
		touch_views 1 "$NBOX" idle || bench_broken "cannot read the boxes' /proc views"
		lxcfs_mem >"$OUT/lxcfsmid.$r"
	fi
	sleep "$SETTLE"
	lxcfs_mem >"$OUT/lxcfs1.$r"
	meminfo >"$OUT/mem1.$r"
	daemon_mem >"$OUT/daemon1.$r"
	box_charges >"$OUT/charges.$r"
	h=$(box_helpers)
	[ -n "$h" ] && helpers="$helpers $h"
	delete_boxes 1 "$NBOX" idle || bench_broken "not all boxes could be deleted"
	left=$(ls "$M/boxes" | wc -l)
	[ "$left" = 0 ] || bench_broken "$left boxes left after rmdir"
	sleep "$SETTLE"
done
meminfo >"$OUT/mem.end"
daemon_mem >"$OUT/daemon.end"

# --- report ------------------------------------------------------------------------
python3 - "$OUT" "$NBOX" "$ROUNDS" "$BATCH" "$LIMIT_MIB" "$BENCH_NAME" "$BENCH_TARGET" \
	"$helpers" "$(bench_build_note)" "$MID" "$TOUCH" <<'PY'
import statistics, sys
out, n, rounds, batch, limit, name, target, helpers, build, mid, touch = sys.argv[1:12]
n, rounds, limit, target, mid = int(n), int(rounds), float(limit), float(target), int(mid)
mid = mid if 0 < mid < n else n
helpers = sorted(set(helpers.split()))
MiB = 1024.0
def mem(f):
    return {k: int(v) for k, v in (l.split() for l in open("%s/%s" % (out, f)))}
def nums(f):
    return [int(x) for x in open("%s/%s" % (out, f)).read().split()]
rows = []
for r in range(1, rounds + 1):
    m0, m1 = mem("mem0.%d" % r), mem("mem1.%d" % r)
    d0, d1 = nums("daemon0.%d" % r), nums("daemon1.%d" % r)
    usage, cache, shmem, kmem, procs, pss = nums("charges.%d" % r)
    charge_kb = usage / 1024.0
    charge_nc_kb = (usage - cache + shmem) / 1024.0
    used = m1["used"] - m0["used"]
    avail = m0["MemAvailable"] - m1["MemAvailable"]
    rows.append(dict(
        start_ms=nums("start_ms.%d" % r)[0], used=used, avail=avail, charge=charge_kb,
        charge_nc=charge_nc_kb, kmem=kmem / 1024.0, procs=procs, pss=pss,
        beyond_used=used - charge_nc_kb, beyond_avail=avail - charge_kb,
        rss=d1[0] - d0[0], dpss=d1[1] - d0[1], threads=(d0[2], d1[2]),
        lx=(nums("lxcfs0.%d" % r), nums("lxcfsmid.%d" % r), nums("lxcfs1.%d" % r)),
        spread=max(m0["usedSpread"], m1["usedSpread"]),
        kern={k: m1[k] - m0[k] for k in ("SUnreclaim", "SReclaimable", "KernelStack",
                                         "PageTables", "Percpu", "AnonPages")}))
def per(kb):
    return kb / n / MiB
print("idle memory: %d boxes of the tiny image, parallel batches of %s, %d rounds"
      % (n, batch, rounds))
print(build)
print("  MiB per box                              " + "".join("  round %d" % (i + 1) for i in range(rounds)))
def line(label, key, fmt="%9.3f", f=per):
    print("  %-40s" % label + "".join(fmt % f(row[key]) for row in rows))
line("start of all boxes (ms, total)", "start_ms", "%9d", lambda v: v)
line("host `used` growth (all costs)", "used")
line("host MemAvailable drop (all costs)", "avail")
line("charged to the boxes' cgroups", "charge")
line("  of which kernel memory (kmem)", "kmem")
line("  box processes' own Pss", "pss")
line("beyond the boxes' cgroups, by `used` *", "beyond_used")
line("beyond the boxes' cgroups, by MemAvail.", "beyond_avail")
line("paddockd Rss growth", "rss")
line("paddockd Pss growth", "dpss")
line("noise: spread of `used` in samples (MiB)", "spread", "%9.1f", lambda v: v / MiB)
if any(row["lx"][2][0] for row in rows):
    print("  lxcfs, one per daemon (boxes %s their views once), kB with 0 / %d / %d boxes:"
          % ("read" if touch == "1" else "did not read", mid, n))
    for r, row in enumerate(rows):
        print("    round %d: Rss %s kB, Pss %s kB" % (r + 1, " / ".join(
            str(row["lx"][k][0]) for k in range(3)), " / ".join(str(row["lx"][k][1]) for k in range(3))))
    print("  %-40s" % ("  Rss growth per box, 0 -> %d (MiB)" % n) + "".join(
        "%9.3f" % ((row["lx"][2][0] - row["lx"][0][0]) / n / MiB) for row in rows))
else:
    print("  lxcfs: not running (lxcfs = off, or not installed)")
print("  kernel counters, round 1, MiB per box: " + ", ".join(
    "%s %+.3f" % (k, per(v)) for k, v in rows[0]["kern"].items()))
print("  box processes: %s per round (one PID 1 per box); paddockd threads %s -> %s"
      % ("/".join(str(r["procs"]) for r in rows), rows[0]["threads"][0], rows[0]["threads"][1]))
m_first, m_end = mem("mem0.1"), mem("mem.end")
print("  after deleting all: `used` not returned %.1f MiB (%.3f MiB per box started)"
      % ((m_end["used"] - m_first["used"]) / MiB, per(m_end["used"] - m_first["used"]) / rounds))
print("  per-box host processes outside box cgroups: %d%s"
      % (len(helpers), (" (" + " ".join(helpers) + ")") if helpers else " (none, as designed)"))
head = statistics.median(per(r["beyond_used"]) for r in rows)
ratio = head / limit
print("  * headline (median of rounds): %.3f MiB per box; target < %.0f MiB: ratio %.2f, met: %s"
      % (head, limit, ratio, "yes" if ratio <= target else "NO"))
print("RESULT %s=%.3f ratio=%.2f target=%g" % (name, head, ratio, target))
PY
exit 0
