#!/bin/bash
# root-copy.sh - copying a tree of small files into a box's filesystem
# through MOUNT/boxes/X/root, against the same copy into a plain directory
# on the same filesystem as the data directory.
#
# The tree: BENCH_DIRS (100) directories of BENCH_FILES (100) files each,
# 512 to 1536 bytes of pseudo-random content (about 1 KiB on average), made
# once in a temp directory. Each run is `cp -a TREE DEST` with
#   paddock   DEST = MOUNT/boxes/X/root/config/copyN: `root` is a symlink
#             (served by FUSE) to the box's overlay mount in the data
#             directory, so every path cp uses is walked through the FUSE
#             tree, then written through overlayfs;
#   plain     DEST = a directory next to the data directory, on the same
#             filesystem (checked: same device as the box's upper layer).
# `sync` runs before every copy (page cache is not dropped: that cannot be
# assumed). BENCH_RUNS (5) counted runs per side after BENCH_WARMUP (1),
# rotating which side goes first. The copies are kept until the end (about
# 40 MiB each on ext4; the data directory needs room for all of them):
# deleting 10,000 files makes the next 10,000 creations in the same
# block groups slow on an ext4 without a journal (inode allocation skips
# inodes freed within the last minute, one buffer lookup each: quadratic),
# which would measure the order of the runs, not paddock. For the same
# reason the script first waits (up to BENCH_SETTLE_MAX, 360 s) until
# creating an empty file in both destinations takes at most
# BENCH_SETTLE_FACTOR (4.5) times as long as on tmpfs (a previous run's
# cleanup, or other work deleting files, slows it to 5 to 20 times), probes
# again after the runs, and prints a warning if either probe was slow.
#
# A third side, with no target, tells where the time goes:
#   overlay   DEST = the symlink's target, i.e. the same overlay mount
#             reached without the FUSE tree.
# and a path-walk figure: os.stat() of MOUNT/boxes/X/root/config against
# the same directory by its resolved path, per call (cp does about one such
# walk per file it creates).
#
# Ratio = plain median time / paddock median time (a throughput ratio:
# higher is better, unlike the other benchmarks); target >= 0.8. The RESULT
# value is paddock's throughput in files per second (median run).
#
# Environment: BENCH_DIRS (100), BENCH_FILES (100), BENCH_RUNS (5),
# BENCH_WARMUP (1), BENCH_SETTLE_MAX (360 seconds), BENCH_SETTLE_FACTOR
# (4.5). Needs root and a built tree (make); prints a result block and a
# RESULT line.

set -u
export LC_ALL=C
BENCH_NAME=root_copy_files_per_s
BENCH_TARGET=0.8
. "$(cd "$(dirname "$0")" && pwd)/common.sh"

NDIRS=${BENCH_DIRS:-100}
NFILES=${BENCH_FILES:-100}
RUNS=${BENCH_RUNS:-5}
WARMUP=${BENCH_WARMUP:-1}
SETTLE_MAX=${BENCH_SETTLE_MAX:-360}
SETTLE_FACTOR=${BENCH_SETTLE_FACTOR:-4.5}
TOTAL=$((NDIRS * NFILES))


meets_min() {
	python3 -c '
import sys
try:
    print("yes" if float(sys.argv[1]) >= float(sys.argv[2]) else "NO")
except ValueError:
    print("unknown")' "$1" "$2"
}

bench_start
BOX=copy
B=$M/boxes/$BOX
W=$PD_TMP/rootcopy
SRC=$W/src
PLAIN=$W/plain
mkdir -p "$W" "$PLAIN"

mkdir "$B" || bench_broken "mkdir $B failed"
echo running >"$B/state" || bench_broken "cannot start the box: $(cat "$B/error")"
[ -d "$B/root/config" ] || bench_broken "$B/root/config is not a directory (image without /config?)"
OVL=$(readlink "$B/root") || bench_broken "$B/root is not a symlink"
UPPER=$(dirname "$OVL")/upper
[ -d "$UPPER" ] || bench_broken "no upper layer at $UPPER"
if [ "$(stat -c %d "$PLAIN")" != "$(stat -c %d "$UPPER")" ]; then
	echo "warning: $PLAIN and the box's upper layer $UPPER are on different filesystems" >&2
fi

# Removes this run's 10,000s of files, then syncs: the inode table blocks
# are then clean, so the next run on this filesystem is slowed by them (see
# above) for one minute instead of up to six.
copies_cleanup() {
	rm -rf --one-file-system "$W"
	[ -n "${OVL:-}" ] && rm -rf --one-file-system "$OVL"/config/copy* "$OVL"/config/direct* \
		"$OVL"/config/probe*
	sync
}
bench_on_exit copies_cleanup

python3 - "$SRC" "$NDIRS" "$NFILES" <<'PY' || bench_broken "cannot generate the source tree"
import os, random, sys
root, ndirs, nfiles = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rnd = random.Random(42)
for d in range(ndirs):
    p = os.path.join(root, "d%03d" % d)
    os.makedirs(p)
    for f in range(nfiles):
        with open(os.path.join(p, "f%03d" % f), "wb") as fh:
            fh.write(rnd.randbytes(rnd.randint(512, 1536)))
PY
src_bytes=$(du -s --apparent-size -B1 "$SRC" | cut -f1)
src_disk=$(du -s -B1 "$SRC" | cut -f1)
need=$((src_disk * 3 * (WARMUP + RUNS) + 256 * 1024 * 1024))
free=$(df -B1 --output=avail "$W" | tail -n 1 | tr -d ' ')
[ "${free:-0}" -ge "$need" ] ||
	skip_all "$W has $((free / 1048576)) MiB free; the copies, all kept to the end, need $((need / 1048576)) MiB"

# Creation of 500 empty files in a new directory under each of $@, in µs
# per file, one figure per directory.
create_probe() {
	python3 - "$@" <<'PY'
import os, sys, tempfile, time
out = []
for base in sys.argv[1:]:
    d = tempfile.mkdtemp(prefix="probe", dir=base)
    t = time.perf_counter()
    for i in range(500):
        os.close(os.open(os.path.join(d, "p%d" % i), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
    out.append("%.1f" % ((time.perf_counter() - t) / 500 * 1e6))
print(" ".join(out))
PY
}

# "yes" when creating a file on the data directory's filesystem takes at
# most SETTLE_FACTOR times as long as on tmpfs, in both places the copies go
# to: usec_plain usec_overlay usec_tmpfs.
is_fast() {
	python3 -c '
import sys
try:
    p, o, t, f = map(float, sys.argv[1:])
    print("yes" if max(p, o) <= f * t else "no")
except ValueError:
    print("no")' "$1" "$2" "$3" "$SETTLE_FACTOR"
}

SHMPROBE=/dev/shm/paddock-bench-probe-$$
shm_cleanup() {
	rm -rf "$SHMPROBE"
}
bench_on_exit shm_cleanup
mkdir -p "$SHMPROBE"

# Waits (up to SETTLE_MAX seconds) for a filesystem where creating files is
# not slowed by inodes deleted moments ago (see above). The probes' files
# stay until the end: deleting them would slow what follows.
waited=0
while :; do
	read -r probe_plain probe_ovl probe_shm < <(create_probe "$PLAIN" "$OVL/config" "$SHMPROBE")
	[ -n "${probe_shm:-}" ] || bench_broken "the file creation probe failed"
	[ "$(is_fast "$probe_plain" "$probe_ovl" "$probe_shm")" = yes ] && break
	[ $waited -ge "$SETTLE_MAX" ] && break
	[ $waited = 0 ] && echo "waiting for the filesystem to settle: creating a file takes" \
		"${probe_plain} us (plain), ${probe_ovl} us (overlay), ${probe_shm} us on tmpfs" >&2
	sleep 20
	waited=$((waited + 20))
done
settle_note="creating a file before the runs: ${probe_plain} us plain, ${probe_ovl} us overlay, ${probe_shm} us tmpfs"
[ $waited -gt 0 ] && settle_note="$settle_note (after waiting ${waited} s)"
unsettled=no
[ "$(is_fast "$probe_plain" "$probe_ovl" "$probe_shm")" = yes ] || unsettled=yes

# dest_of SIDE N: where run N of SIDE copies to.
dest_of() {
	case $1 in
	paddock) echo "$B/root/config/copy$2" ;;
	plain) echo "$PLAIN/copy$2" ;;
	overlay) echo "$OVL/config/direct$2" ;;
	esac
}

# The same copy seen without the FUSE tree (for the checks).
direct_of() {
	case $1 in
	paddock) echo "$OVL/config/copy$2" ;;
	*) dest_of "$1" "$2" ;;
	esac
}

sides=(paddock plain overlay)
for s in "${sides[@]}"; do
	: >"$W/t_$s"
done
for ((i = 0; i < WARMUP + RUNS; i++)); do
	for ((k = 0; k < ${#sides[@]}; k++)); do
		# Rotate which side goes first.
		side=${sides[$(((i + k) % ${#sides[@]}))]}
		dest=$(dest_of "$side" "$i")
		sync
		t0=$(now_us)
		cp -a "$SRC" "$dest" || bench_broken "cp -a into $dest failed"
		t1=$(now_us)
		n=$(find "$(direct_of "$side" "$i")" -type f | wc -l)
		[ "$n" = "$TOTAL" ] || bench_broken "$dest holds $n files, not $TOTAL"
		[ $i -ge "$WARMUP" ] && echo $((t1 - t0)) >>"$W/t_$side"
	done
done

# Did it stay so during the runs (other work on the host deleting files)?
read -r after_plain after_ovl after_shm < <(create_probe "$PLAIN" "$OVL/config" "$SHMPROBE")
after_note="after the runs: ${after_plain} us plain, ${after_ovl} us overlay, ${after_shm} us tmpfs"
[ "$(is_fast "$after_plain" "$after_ovl" "$after_shm")" = yes ] || unsettled=yes

# Path walks: MOUNT/boxes/X/root/config vs the same directory directly.
read -r walk_fuse walk_direct < <(python3 - "$B/root/config" "$OVL/config" <<'PY'
import os, statistics, sys, time
out = []
for p in sys.argv[1:]:
    rounds = []
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(2000):
            os.stat(p)
        rounds.append((time.perf_counter() - t) / 2000 * 1e6)
    out.append("%.1f" % statistics.median(rounds))
print(" ".join(out))
PY
)

s_stats() {
	bench_stats <(awk '{print $1/1e6}' "$W/t_$1")
}
read -r p_med p_mean p_min p_p90 p_sd _ < <(s_stats paddock)
read -r l_med l_mean l_min l_p90 l_sd _ < <(s_stats plain)
read -r o_med o_mean o_min o_p90 o_sd _ < <(s_stats overlay)
ratio=$(bench_ratio "$l_med" "$p_med")
fps() {
	python3 -c 'import sys; print("%.0f" % (float(sys.argv[1]) / float(sys.argv[2])))' "$TOTAL" "$1"
}
p_fps=$(fps "$p_med")

printf 'cp -a of %d files in %d directories (%s KiB of content): %d runs per side (+%d warm-up), sync before each; load %s\n' \
	"$TOTAL" "$NDIRS" "$((src_bytes / 1024))" "$RUNS" "$WARMUP" "$(cut -d' ' -f1-3 /proc/loadavg)"
bench_build_note
echo "  plain: $PLAIN ($(stat -f -c %T "$PLAIN"), same filesystem as the data directory)"
printf '  %-44s %8s %8s %8s %8s %7s %9s\n' "" median mean min p90 stdev "files/s"
row() {
	printf '  %-44s %8.3f %8.3f %8.3f %8.3f %7.3f %9s\n' "$1" "$2" "$3" "$4" "$5" "$6" "$(fps "$2")"
}
row "paddock: MOUNT/boxes/X/root/config/copyN" "$p_med" "$p_mean" "$p_min" "$p_p90" "$p_sd"
row "plain directory, same filesystem" "$l_med" "$l_mean" "$l_min" "$l_p90" "$l_sd"
row "overlay mount directly (no FUSE walk)" "$o_med" "$o_mean" "$o_min" "$o_p90" "$o_sd"
printf '  ratio plain time / paddock time (medians): %s  target >= %s  met: %s\n' \
	"$ratio" "$BENCH_TARGET" "$(meets_min "$ratio" "$BENCH_TARGET")"
printf '  where it goes: overlay alone runs at %s of plain; paddock - overlay = %.3f s (FUSE path walks)\n' \
	"$(bench_ratio "$l_med" "$o_med")" "$(python3 -c "print(max(0, $p_med - $o_med))")"
printf '  path walk (stat), MOUNT/boxes/X/root/config: %s us; the overlay directory itself: %s us\n' \
	"$walk_fuse" "$walk_direct"
echo "  $settle_note;"
echo "    $after_note"
if [ $unsettled = yes ]; then
	echo "  WARNING: creating a file on this filesystem took over ${SETTLE_FACTOR}x tmpfs's time: files deleted"
	echo "  moments ago (ext4 without a journal skips their inodes, one lookup each) slow every side by"
	echo "  an uneven amount; the ratio is not reliable. Rerun when nothing deletes many files."
fi
echo "RESULT $BENCH_NAME=$p_fps ratio=$ratio target=$BENCH_TARGET"
exit 0
