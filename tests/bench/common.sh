# shellcheck shell=bash
# common.sh - shared pieces of the benchmarks (sourced, not run).
#
# Reuses the integration harness (tests/integration/lib.sh): a private
# paddockd with its own mount point, data directory, crun root and cgroup
# parent, torn down on exit or Ctrl-C. On top of it:
#
#   bench_on_exit CMD      run CMD (a function name) before lib.sh's cleanup
#   bench_stats FILE       "median mean min p90 stdev n" of the numbers in FILE
#   bench_broken MSG       report a real failure and exit 1 (cleanup runs)
#   bench_in_private_ns    unmount the v2 tree in the current (private) mount
#                          namespace so crun accepts a hybrid host
#
# Benchmarks are not tests: a slow machine never makes them fail; only
# something that does not work (a box that does not start, crun refusing)
# does.

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../integration/lib.sh
. "$BENCH_DIR/../integration/lib.sh"

# lib.sh's skip_all prints a TAP plan; benchmarks print a RESULT line.
skip_all() {
	echo "skipped: $*"
	echo "RESULT ${BENCH_NAME:-bench}=skipped ratio=nan target=${BENCH_TARGET:-nan}"
	exit 0
}

bench_hooks=()

bench_on_exit() {
	bench_hooks+=("$1")
}

# Runs our hooks, then lib.sh's pd_cleanup with the original exit status
# (pd_cleanup reads $? first thing).
bench_cleanup() {
	local rc=$? h
	set +e
	trap '' INT TERM
	for h in "${bench_hooks[@]}"; do
		"$h" 2>/dev/null
	done
	(exit $rc)
	pd_cleanup
}

# Starts the private daemon and installs our cleanup in front of lib.sh's.
bench_start() {
	pd_setup || bench_broken "cannot set up (building the tiny image failed?)"
	trap bench_cleanup EXIT
	trap 'exit 130' INT TERM
	pd_start
}

# bench_fill BOX MB: MB megabytes of changes in the box's upper, one file
# per 10 MB written through root/, synced (dirty data would be written back
# inside a timed unmount).
bench_fill() {
	local i
	mkdir -p "$M/boxes/$1/root/data"
	for ((i = 0; i < $2 / 10; i++)); do
		dd if=/dev/zero of="$M/boxes/$1/root/data/f$i" bs=1M count=10 status=none ||
			bench_broken "cannot write into $1"
	done
	sync -f "$M/boxes/$1/root/data"
}

bench_broken() {
	echo "BROKEN: $*" >&2
	if [ -n "${PD_TMP:-}" ] && [ -f "$PD_TMP/paddockd.log" ]; then
		echo "--- paddockd log (tail) ---" >&2
		tail -n 20 "$PD_TMP/paddockd.log" >&2
	fi
	exit 1
}

# True if paddockd was built with the sanitizers (./configure
# --enable-sanitizers): ASan makes every fork of the daemon slower and
# keeps freed memory in quarantine, so its numbers are not the product's.
bench_sanitized() {
	grep -aq __asan_init "$PADDOCKD" 2>/dev/null
}

bench_build_note() {
	if bench_sanitized; then
		echo "  paddockd: $PADDOCKD -- ASan/UBSan build: slower, and it grows (see README;"
		echo "            run-all.sh builds a plain copy, or set PADDOCKD)"
	else
		echo "  paddockd: $PADDOCKD (no sanitizers)"
	fi
}

bench_stats() {
	python3 - "$1" <<'PY'
import statistics, sys
xs = sorted(float(l) for l in open(sys.argv[1]) if l.strip())
if not xs:
    print("nan nan nan nan nan 0")
    sys.exit(0)
p90 = xs[min(len(xs) - 1, int(round(0.9 * (len(xs) - 1))))]
sd = statistics.stdev(xs) if len(xs) > 1 else 0.0
print("%.3f %.3f %.3f %.3f %.3f %d" % (statistics.median(xs), statistics.mean(xs), xs[0], p90, sd, len(xs)))
PY
}

# x / y with 2 decimals ("nan" if y is 0 or not a number).
bench_ratio() {
	python3 -c '
import sys
try:
    print("%.2f" % (float(sys.argv[1]) / float(sys.argv[2])))
except (ValueError, ZeroDivisionError):
    print("nan")' "$1" "$2"
}

# "yes" if ratio <= target.
bench_meets() {
	python3 -c '
import sys
try:
    print("yes" if float(sys.argv[1]) <= float(sys.argv[2]) else "NO")
except ValueError:
    print("unknown")' "$1" "$2"
}

# To be called inside `unshare -m --propagation private`: crun refuses a
# hybrid host whose v2 tree lists controllers, and paddockd does the same.
bench_in_private_ns() {
	if [ "$(stat -f -c %T /sys/fs/cgroup 2>/dev/null)" != cgroup2fs ] &&
		[ "$(stat -f -c %T /sys/fs/cgroup/unified 2>/dev/null)" = cgroup2fs ]; then
		umount /sys/fs/cgroup/unified 2>/dev/null || umount -l /sys/fs/cgroup/unified
	fi
}

# Removes the directories of cgroup parent $1 (every v1 controller, or v2).
bench_rm_cgroup() {
	local d
	[ -n "$1" ] || return 0
	for d in /sys/fs/cgroup/*/"$1" /sys/fs/cgroup/"$1"; do
		[ -d "$d" ] || continue
		find "$d" -depth -type d -exec rmdir {} + 2>/dev/null
	done
}

# now_us: the wall clock in microseconds (bash's EPOCHREALTIME, no fork).
now_us() {
	local t=${EPOCHREALTIME/./}
	echo $((10#$t))
}

# --- bare crun containers, the baseline of box-start.sh and box-rmdir.sh -----

# bench_raw_setup: after bench_start. Sets RAW (their directory), BENCH_CG
# (their cgroup parent), LOWER (the image's rootfs) and INIT (paddock-init),
# and removes the containers and their cgroups at exit.
bench_raw_setup() {
	RAW=$PD_TMP/raw
	BENCH_CG=paddock-bench-$$
	LOWER=$D/images/${PD_IMAGE:-tiny}/rootfs
	INIT=$(dirname "$PADDOCKD")/paddock-init
	[ -x "$INIT" ] || bench_broken "no $INIT: run make first"
	mkdir -p "$RAW/crunroot" "$RAW/spec"
	bench_on_exit bench_raw_cleanup
}

bench_raw_cleanup() {
	local c
	for c in $(crun --root "$RAW/crunroot" list -q 2>/dev/null); do
		unshare -m --propagation private sh -c \
			'umount /sys/fs/cgroup/unified 2>/dev/null; exec "$@"' - \
			crun --root "$RAW/crunroot" delete -f "$c" >/dev/null 2>&1
	done
	bench_rm_cgroup "$BENCH_CG"
}

# bench_raw_probe: starts the box `probe` and copies the config.json
# paddockd wrote for it to $RAW/paddock-config.json (the limits a box gets).
# The box stays; the caller removes it.
bench_raw_probe() {
	mkdir "$M/boxes/probe" || bench_broken "mkdir $M/boxes/probe failed"
	echo running >"$M/boxes/probe/state" ||
		bench_broken "cannot start a box: $(cat "$M/boxes/probe/error")"
	cp "$D"/boxes/*/bundle/config.json "$RAW/paddock-config.json" ||
		bench_broken "no config.json in the box's bundle"
}

# bench_raw_bundles COUNT: bundles $RAW/b0 .. b(COUNT-1), each with an empty
# rootfs/ directory, made with `crun spec` and edited to what paddockd asks
# of crun: PID 1 = paddock-init bind-mounted at /dev/paddock-init,
# namespaces pid, network, ipc, uts, mount, the probe's cgroup limits,
# cgroupsPath /$BENCH_CG/raw-N. Needs bench_raw_probe first.
bench_raw_bundles() {
	(cd "$RAW/spec" && crun spec) || bench_broken "crun spec failed"
	python3 - "$RAW" "$INIT" "$BENCH_CG" "$1" <<'PY' || bench_broken "cannot write the baseline bundles"
import json, os, sys
raw, init, cg, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
c = json.load(open(os.path.join(raw, "spec", "config.json")))
box = json.load(open(os.path.join(raw, "paddock-config.json")))
c["process"]["terminal"] = False
c["process"]["args"] = ["/dev/paddock-init"]
c["hostname"] = "raw"
c["mounts"].append({"destination": "/dev/paddock-init", "type": "bind", "source": init,
                    "options": ["bind", "ro", "nosuid", "nodev"]})
lin = c["linux"]
lin["namespaces"] = [{"type": t} for t in ("pid", "network", "ipc", "uts", "mount")]
lin["resources"] = box["linux"]["resources"]
for i in range(count):
    d = os.path.join(raw, "b%d" % i)
    os.makedirs(os.path.join(d, "rootfs"), exist_ok=True)
    c["root"] = {"path": os.path.join(d, "rootfs"), "readonly": False}
    lin["cgroupsPath"] = "/%s/raw-%d" % (cg, i)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(c, f, indent=1)
PY
}
