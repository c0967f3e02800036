#!/bin/bash
# box-rmdir.sh - how long deleting a running box takes, against raw crun.
#
# Paddock: `rmdir MOUNT/boxes/NAME` of a running box of the tiny image (its
# PID 1 is paddock-init, nothing else runs), from the call to its return.
# The box is made and started outside the timed part.
#
# Baseline, in the same run and interleaved with it: the same stop and
# delete of a bare crun container made as in box-start.sh (a bundle from
# `crun spec` edited to what paddockd asks of crun: its own overlay mount
# of the same tiny image, PID 1 = the same paddock-init, the same
# namespaces and cgroup limits, cgroupsPath /paddock-bench-PID/raw-N),
# started outside the timed part. Timed: `crun kill raw-N TERM`, the wait
# until its PID 1 has exited (a pidfd, as the daemon waits), `crun delete
# --force raw-N`, and umount of its overlay. crun runs directly (no
# wrapper) inside one private mount namespace without the v2 tree; the
# timed loop is one python3 process, which forks crun as the daemon does.
#
# Also printed, no target: how long after rmdir returns the box's files
# are gone (DATA/boxes/ID, moved into DATA/trash: what the daemon leaves to
# the background, the unmounts of its overlay and disk image and the
# removal of its files), the baseline's
# umount alone, and a second baseline variant whose overlay's upper is on a
# loop-mounted ext4 image like a box's disk (`disk` of its type), umounted
# and removed in the timed part too.
#
# Ratio = paddock median / baseline median; target <= 2.
#
# Environment: BENCH_N (iterations, 20), BENCH_WARMUP (2).
# Needs root and a built tree (make); prints a result block and a RESULT line.

set -u
export LC_ALL=C
BENCH_NAME=box_rmdir_ms
BENCH_TARGET=2
. "$(cd "$(dirname "$0")" && pwd)/common.sh"

N=${BENCH_N:-20}
WARMUP=${BENCH_WARMUP:-2}

# --- the timed loop, run inside a private mount namespace -------------------
if [ "${1:-}" = __loop ]; then
	bench_in_private_ns
	export RAW M D N WARMUP
	exec python3 - <<'PY'
import ctypes, json, os, select, subprocess, sys, time

raw, mnt, data = os.environ["RAW"], os.environ["M"], os.environ["D"]
n, warm = int(os.environ["N"]), int(os.environ["WARMUP"])
libc = ctypes.CDLL(None, use_errno=True)
crunroot = os.path.join(raw, "crunroot")
lower = os.environ["LOWER"]

def die(msg):
    print(msg, file=sys.stderr)
    sys.exit(1)

errpath = os.path.join(raw, "crun.err")

# Output to files, not pipes: `crun run -d` leaves its stdio to the
# container, so a pipe would never see EOF.
def crun(*args, out=False):
    with open(errpath, "w+b") as err, open(errpath + ".out", "w+b") as o:
        rc = subprocess.run(["crun", "--root", crunroot, *args], stdin=subprocess.DEVNULL,
                            stdout=o if out else subprocess.DEVNULL, stderr=err).returncode
        if rc != 0:
            err.seek(0)
            die("crun %s failed: %s" % (" ".join(args), err.read().decode().strip()))
        o.seek(0)
        return o.read()

def sh(*args):
    if subprocess.run(args, stdout=subprocess.DEVNULL).returncode != 0:
        die("%s failed" % " ".join(args))

def umount(path):
    if libc.umount2(path.encode(), 0) != 0:
        die("umount %s: %s" % (path, os.strerror(ctypes.get_errno())))

def wait_gone(pid, timeout):
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        p = select.poll()
        p.register(fd, select.POLLIN)
        if not p.poll(timeout * 1000):
            die("PID %d did not exit on SIGTERM" % pid)
    finally:
        os.close(fd)

def raw_side(i, disk):
    b = os.path.join(raw, "b%d" % i)
    up = os.path.join(b, "disk") if disk else b
    if disk:
        os.makedirs(up, exist_ok=True)
        sh("cp", "--sparse=always", os.path.join(raw, "disk-template.img"), b + "/disk.img")
        sh("mount", "-o", "loop,nosuid,nodev", b + "/disk.img", up)
    os.makedirs(up + "/upper", exist_ok=True)
    os.makedirs(up + "/work", exist_ok=True)
    sh("mount", "-t", "overlay", "overlay", "-o",
       "lowerdir=%s,upperdir=%s/upper,workdir=%s/work" % (lower, up, up), b + "/rootfs")
    name = "raw-%d" % i
    crun("run", "-d", "--bundle", b, name)
    st = json.loads(crun("state", name, out=True))
    if st.get("status") != "running":
        die("%s is %s after crun run" % (name, st.get("status")))
    pid = st["pid"]
    t0 = time.perf_counter()
    crun("kill", name, "TERM")
    wait_gone(pid, 10)
    crun("delete", "--force", name)
    t1 = time.perf_counter()
    umount(b + "/rootfs")
    t2 = time.perf_counter()
    if disk:
        umount(up)
        os.unlink(b + "/disk.img")
    t3 = time.perf_counter()
    return (t3 - t0) * 1e3, (t2 - t1) * 1e3, (t1 - t0) * 1e3

def paddock_side(i):
    box = os.path.join(mnt, "boxes", "bench%d" % i)
    os.mkdir(box)
    with open(box + "/state", "w") as f:
        f.write("running\n")
    with open(box + "/state") as f:
        if f.read().strip() != "running":
            die("box bench%d does not run" % i)
    bid = os.path.basename(os.readlink(box + "/root"))
    d = os.path.join(data, "boxes", bid)
    if not os.path.isdir(d):
        die("no %s" % d)
    t0 = time.perf_counter()
    os.rmdir(box)
    t1 = time.perf_counter()
    if os.path.exists(box):
        die("%s is still there after rmdir" % box)
    # The background part: until DATA/boxes/ID, or what it became in
    # DATA/trash, is gone (10 s at most).
    trash = os.path.join(data, "trash")
    def left():
        return os.path.exists(d) or any(
            x.startswith(bid + ".") for x in (os.listdir(trash) if os.path.isdir(trash) else []))
    while left() and time.perf_counter() - t1 < 10:
        time.sleep(0.001)
    t2 = time.perf_counter()
    if left():
        die("%s still there 10 s after rmdir" % d)
    return (t1 - t0) * 1e3, (t2 - t1) * 1e3

out = {k: [] for k in ("paddock", "behind", "crun", "umount", "crunonly", "crundisk")}
sides = ["crun", "paddock", "crundisk"]
for i in range(warm + n):
    # Rotate which side goes first, so drift hits all alike.
    for k in range(len(sides)):
        side = sides[(i + k) % len(sides)]
        if side == "paddock":
            a, b = paddock_side(i)
            res = [("paddock", a), ("behind", b)]
        elif side == "crun":
            a, b, c = raw_side(i, False)
            res = [("crun", a), ("umount", b), ("crunonly", c)]
        else:
            a, _, _ = raw_side(warm + n + i, True)
            res = [("crundisk", a)]
        if i >= warm:
            for key, v in res:
                out[key].append(v)
for key, v in out.items():
    with open(os.path.join(raw, "t_" + key), "w") as f:
        f.write("".join("%.3f\n" % x for x in v))
PY
fi

# --- set-up ------------------------------------------------------------------
bench_start
bench_raw_setup
# The limits paddockd gives a box, and its disk's template (a copy of the
# daemon's own, same size and filesystem).
bench_raw_probe
tmpl=$(find "$D/disk-templates" -maxdepth 1 -type f -name '*.img' 2>/dev/null | head -n 1)
[ -n "$tmpl" ] || tmpl=$(ls "$D"/boxes/*/disk.img 2>/dev/null | head -n 1)
[ -n "$tmpl" ] || bench_broken "no disk image (disk_limit off?)"
rmdir "$M/boxes/probe" || bench_broken "rmdir $M/boxes/probe failed"
# A fresh one (the box's was written to, and is gone with it).
if [ ! -f "$tmpl" ]; then
	truncate -s 1G "$RAW/disk-template.img"
	mkfs.ext4 -q -E nodiscard "$RAW/disk-template.img" || bench_broken "mkfs.ext4 failed"
else
	cp --sparse=always "$tmpl" "$RAW/disk-template.img"
fi
bench_raw_bundles $((2 * (WARMUP + N)))

# --- run -----------------------------------------------------------------------
export RAW M D LOWER N WARMUP
unshare -m --propagation private "$0" __loop || bench_broken "the timed loop failed"

st() {
	bench_stats "$RAW/t_$1"
}
read -r c_med c_mean c_min c_p90 c_sd _ < <(st crun)
read -r p_med p_mean p_min p_p90 p_sd _ < <(st paddock)
read -r k_med k_mean k_min k_p90 k_sd _ < <(st crundisk)
read -r u_med u_mean _ < <(st umount)
read -r x_med x_mean x_min _ < <(st crunonly)
read -r b_med b_mean _ < <(st behind)
ratio=$(bench_ratio "$p_med" "$c_med")

printf 'rmdir of a running box: %d iterations (+%d warm-up), interleaved; load %s\n' \
	"$N" "$WARMUP" "$(cut -d' ' -f1-3 /proc/loadavg)"
bench_build_note
printf '  %-50s %8s %8s %8s %8s %7s\n' "" median mean min p90 stdev
printf '  %-50s %8.2f %8.2f %8.2f %8.2f %7.2f ms\n' \
	"crun kill TERM + wait + delete + umount (baseline)" "$c_med" "$c_mean" "$c_min" "$c_p90" "$c_sd"
printf '  %-50s %8.2f %8.2f %8s %8s %7s ms\n' "  of which umount of the overlay" "$u_med" "$u_mean" "" "" ""
printf '  %-50s %8.2f %8.2f %8.2f %8s %7s ms\n' "  of which crun kill + wait + delete" "$x_med" "$x_mean" "$x_min" "" ""
printf '  %-50s %8.2f %8.2f %8.2f %8.2f %7.2f ms\n' \
	"the same, upper on an ext4 image (umount, rm)" "$k_med" "$k_mean" "$k_min" "$k_p90" "$k_sd"
printf '  %-50s %8.2f %8.2f %8.2f %8.2f %7.2f ms\n' "paddock rmdir boxes/NAME" \
	"$p_med" "$p_mean" "$p_min" "$p_p90" "$p_sd"
printf '  %-50s %8.2f %8.2f %8s %8s %7s ms\n' "  then until its files are gone (background)" \
	"$b_med" "$b_mean" "" "" ""
printf '  ratio paddock/baseline (medians): %s  target <= %s  met: %s  (of minimums: %s)\n' \
	"$ratio" "$BENCH_TARGET" "$(bench_meets "$ratio" "$BENCH_TARGET")" "$(bench_ratio "$p_min" "$c_min")"
printf '  paddock against crun kill + wait + delete alone: %s; against the image variant: %s\n' \
	"$(bench_ratio "$p_med" "$x_med")" "$(bench_ratio "$p_med" "$k_med")"
echo "RESULT $BENCH_NAME=$p_med ratio=$ratio target=$BENCH_TARGET"
exit 0
