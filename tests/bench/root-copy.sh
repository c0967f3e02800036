#!/bin/bash
# root-copy.sh - copying a tree of small files into a box's filesystem
# through MOUNT/boxes/X/root, against the same copy into the box's overlay
# mount itself, into plain directories, and into overlays mounted other
# ways (the overlay's own cost against its alternatives).
#
# The tree: BENCH_DIRS (100) directories of BENCH_FILES (100) files each,
# 512 to 1536 bytes of pseudo-random content (about 1 KiB on average), made
# once in a temp directory. Each run is `cp -a TREE DEST/copyN`, with DEST:
#   paddock   MOUNT/boxes/X/root: `root` is a symlink served by FUSE to
#             the box's view (RUN/roots/ID, a nosymfollow bind of its
#             overlay, watched by the daemon's owners thread: each file
#             written there is given to the box's user);
#   view      RUN/roots/ID, the same view without the FUSE walk;
#   overlay   DATA/boxes/ID/rootfs, the box's overlay mount itself (no
#             view, no watch): the target's baseline;
#   plain     a directory on the box's disk image beside its upper (the
#             upper's own filesystem, no overlay);
#   datafs    a directory on the data directory's filesystem;
# and overlays the script mounts itself on the same image (lower = the
# image's rootfs), each with an upper of its own:
#   o-box       as the daemon mounts a box's: the lower id-mapped onto the
#               box's range (mount X-mount.idmap), the upper on an ext4
#               image of the box's type (a copy of the daemon's template),
#               default options;
#   o-noidmap   the same without the id-mapping;
#   o-datafs    upper on the data directory's filesystem (disk_limit = off);
#   o-tmpfs     upper on tmpfs;
#   o-volatile  volatile (no syncs to the upper);
#   o-redirect  redirect_dir=on;  o-metacopy  metacopy=on;
#   o-index     index=on;         o-userxattr userxattr;
#   o-dio       the image's loop device in direct I/O mode (no second
#               copy of its blocks in the page cache);
#   o-nojournal the image made without a journal (mkfs.ext4 -O ^has_journal);
# (those after o-datafs on an ext4 image as o-box, without id-mapping).
#
# `sync` runs before every copy, outside the timed part (page cache is not
# dropped: that cannot be assumed). BENCH_RUNS (5) counted runs per side
# after BENCH_WARMUP (1), rotating which side goes first. The copies are
# kept until the end (deleting 10,000 files makes the next creations on an
# ext4 without a journal slow for a minute: README). The daemon's CPU time
# during each side's copies is printed too (the owners thread's work).
#
# Ratio = overlay median time / paddock median time (a throughput ratio:
# higher is better); target >= 0.95. Also printed: the same ratio per run
# (the runs' paddock and overlay copies are adjacent), and each side's
# throughput against the overlay's. The RESULT value is paddock's files
# per second (median run).
#
# Environment: BENCH_DIRS (100), BENCH_FILES (100), BENCH_RUNS (5),
# BENCH_WARMUP (1), BENCH_SIDES (all of the above, space-separated; the
# first three are always run), BENCH_SETTLE_MAX (360 seconds),
# BENCH_SETTLE_FACTOR (4.5). Needs root and a built tree (make); prints a
# result block and a RESULT line.

set -u
export LC_ALL=C
BENCH_NAME=root_copy_files_per_s
BENCH_TARGET=0.95
. "$(cd "$(dirname "$0")" && pwd)/common.sh"

NDIRS=${BENCH_DIRS:-100}
NFILES=${BENCH_FILES:-100}
RUNS=${BENCH_RUNS:-5}
WARMUP=${BENCH_WARMUP:-1}
SETTLE_MAX=${BENCH_SETTLE_MAX:-360}
SETTLE_FACTOR=${BENCH_SETTLE_FACTOR:-4.5}
TOTAL=$((NDIRS * NFILES))
ALL_SIDES="paddock view overlay plain datafs o-box o-noidmap o-datafs o-tmpfs o-volatile o-redirect o-metacopy o-index o-userxattr o-dio o-nojournal"
sides=(paddock view overlay)
for s in ${BENCH_SIDES:-$ALL_SIDES}; do
	case " ${sides[*]} " in *" $s "*) continue ;; esac
	case " $ALL_SIDES " in *" $s "*) sides+=("$s") ;; *) bench_broken "unknown side $s" ;; esac
done

meets_min() {
	python3 -c '
import sys
try:
    print("yes" if float(sys.argv[1]) >= float(sys.argv[2]) else "NO")
except ValueError:
    print("unknown")' "$1" "$2"
}

# As bench_start, with a bigger disk for the box: it holds four sides'
# copies.
pd_setup || bench_broken "cannot set up (building the tiny image failed?)"
sed -i 's/^disk = .*/disk = 8G/' "$PD_TMP/paddock.ini"
trap bench_cleanup EXIT
trap 'exit 130' INT TERM
pd_start
BOX=copy
B=$M/boxes/$BOX
W=$PD_TMP/rootcopy
SRC=$W/src
ALT=$W/alt
mkdir -p "$W" "$ALT"

mkdir "$B" || bench_broken "mkdir $B failed"
echo running >"$B/state" || bench_broken "cannot start the box: $(cat "$B/error")"
VIEW=$(readlink "$B/root") || bench_broken "$B/root is not a symlink"
ID=$(basename "$VIEW")
OVL=$D/boxes/$ID/rootfs
DISK=$D/boxes/$ID/disk
[ "$(stat -f -c %T "$OVL")" = overlayfs ] || bench_broken "no overlay mounted at $OVL"
[ -d "$DISK/upper" ] || bench_broken "no disk image at $DISK (disk_limit off?)"
BASE=$(stat -c %u "$DISK/upper")
LOWER=$D/images/${PD_IMAGE:-tiny}/rootfs
TMPL=$(find "$D/disk-templates" -maxdepth 1 -type f 2>/dev/null | head -n 1)

# Every mount the script makes, unmounted at the end (deepest first).
alt_mounts=()
alt_loops=()
alt_cleanup() {
	local i
	for ((i = ${#alt_mounts[@]} - 1; i >= 0; i--)); do
		umount "${alt_mounts[$i]}" 2>/dev/null || umount -l "${alt_mounts[$i]}"
	done
	alt_mounts=()
	for i in "${alt_loops[@]}"; do
		losetup -d "$i" 2>/dev/null
	done
	alt_loops=()
}
bench_on_exit alt_cleanup
copies_cleanup() {
	alt_cleanup
	rm -rf --one-file-system "$W"
	rm -rf --one-file-system "$OVL"/copy* "$DISK"/plain* 2>/dev/null
	sync
}
bench_on_exit copies_cleanup

alt_mount() {
	mount "$@" || bench_broken "mount $* failed"
	alt_mounts+=("${!#}")
}

# A fresh ext4 image as a box's disk, mounted at $1 (o-dio: through a
# loop device in direct I/O mode; o-nojournal: made without a journal).
alt_image() {
	local dev
	mkdir -p "$1"
	if [ "${2:-}" = nojournal ]; then
		truncate -s 8G "$1.img" && mkfs.ext4 -q -O ^has_journal "$1.img"
	elif [ -n "$TMPL" ]; then
		cp --sparse=always "$TMPL" "$1.img"
	else
		truncate -s 1G "$1.img" && mkfs.ext4 -q "$1.img"
	fi || bench_broken "cannot make $1.img"
	if [ "${2:-}" = dio ]; then
		dev=$(losetup --direct-io=on --show -f "$1.img") || bench_broken "losetup --direct-io failed"
		alt_loops+=("$dev")
		alt_mount -o nosuid,nodev "$dev" "$1"
	else
		alt_mount -o loop,nosuid,nodev "$1.img" "$1"
	fi
}

# alt_overlay NAME UPPERBASE LOWER [OPTIONS]: an overlay at ALT/NAME/m.
alt_overlay() {
	local d=$ALT/$1 opts=lowerdir=$3,upperdir=$2/upper,workdir=$2/work
	mkdir -p "$d/m" "$2/upper" "$2/work"
	[ -n "${4:-}" ] && opts=$opts,$4
	alt_mount -t overlay overlay -o "$opts" "$d/m"
}

for s in "${sides[@]}"; do
	case $s in
	o-box)
		mkdir -p "$ALT/idlower"
		alt_mount --bind -o "X-mount.idmap=b:0:$BASE:65536" "$LOWER" "$ALT/idlower"
		alt_image "$ALT/o-box/disk"
		alt_overlay o-box "$ALT/o-box/disk" "$ALT/idlower"
		;;
	o-noidmap | o-volatile | o-redirect | o-metacopy | o-index | o-userxattr | o-dio | o-nojournal)
		alt_image "$ALT/$s/disk" "${s#o-}"
		opt=
		case $s in
		o-volatile) opt=volatile ;;
		o-redirect) opt=redirect_dir=on ;;
		o-metacopy) opt=metacopy=on ;;
		o-index) opt=index=on ;;
		o-userxattr) opt=userxattr ;;
		esac
		alt_overlay "$s" "$ALT/$s/disk" "$LOWER" "$opt"
		;;
	o-datafs)
		alt_overlay o-datafs "$ALT/o-datafs" "$LOWER"
		;;
	o-tmpfs)
		mkdir -p "$ALT/o-tmpfs/t"
		alt_mount -t tmpfs -o size=4G tmpfs "$ALT/o-tmpfs/t"
		alt_overlay o-tmpfs "$ALT/o-tmpfs/t" "$LOWER"
		;;
	esac
done

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
# The box's disk holds paddock, view, overlay and plain's copies.
need=$((src_disk * 4 * (WARMUP + RUNS) * 2))
dfree=$(df -B1 --output=avail "$DISK" | tail -n 1 | tr -d ' ')
[ "${dfree:-0}" -ge "$need" ] ||
	skip_all "the box's disk has $((dfree / 1048576)) MiB free; the copies need $((need / 1048576)) MiB (raise the tiny type's disk)"
need=$((src_disk * 3 * (WARMUP + RUNS) + 256 * 1024 * 1024))
free=$(df -B1 --output=avail "$W" | tail -n 1 | tr -d ' ')
[ "${free:-0}" -ge "$need" ] ||
	skip_all "$W has $((free / 1048576)) MiB free; the copies, all kept to the end, need $((need / 1048576)) MiB"

# Creation of 500 empty files in a new directory under $1, in µs per file.
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
SHMPROBE=/dev/shm/paddock-bench-probe-$$
shm_cleanup() {
	rm -rf "$SHMPROBE"
}
bench_on_exit shm_cleanup
mkdir -p "$SHMPROBE" "$W/probe"

# The data directory's filesystem (datafs, o-datafs) may be slowed by
# files deleted moments ago (README): wait until creating a file there
# takes at most SETTLE_FACTOR times tmpfs's time.
is_fast() {
	python3 -c 'import sys; p, t, f = map(float, sys.argv[1:]); print("yes" if p <= f * t else "no")' \
		"$1" "$2" "$SETTLE_FACTOR" 2>/dev/null || echo no
}
waited=0
while :; do
	read -r probe_data probe_shm < <(create_probe "$W/probe" "$SHMPROBE")
	[ -n "${probe_shm:-}" ] || bench_broken "the file creation probe failed"
	[ "$(is_fast "$probe_data" "$probe_shm")" = yes ] && break
	[ $waited -ge "$SETTLE_MAX" ] && break
	[ $waited = 0 ] && echo "waiting for the data filesystem to settle: creating a file takes" \
		"${probe_data} us there, ${probe_shm} us on tmpfs" >&2
	sleep 20
	waited=$((waited + 20))
done
settle_note="creating a file on the data filesystem: ${probe_data} us (tmpfs ${probe_shm} us)"
[ $waited -gt 0 ] && settle_note="$settle_note after waiting ${waited} s"

# dest_of SIDE N: where run N of SIDE copies to; direct_of: the same seen
# without the FUSE tree (for the checks).
dest_of() {
	case $1 in
	paddock) echo "$B/root/copy$2" ;;
	view) echo "$VIEW/copyv$2" ;;
	overlay) echo "$OVL/copyo$2" ;;
	plain) echo "$DISK/plain$2" ;;
	datafs) echo "$W/datafs$2" ;;
	o-*) echo "$ALT/$1/m/copy$2" ;;
	esac
}
direct_of() {
	case $1 in
	paddock) echo "$OVL/copy$2" ;;
	*) dest_of "$1" "$2" ;;
	esac
}
daemon_ticks() {
	awk '{print $14 + $15}' "/proc/$PD_PID/stat"
}

for s in "${sides[@]}"; do
	: >"$W/t_$s"
	: >"$W/c_$s"
done
for ((i = 0; i < WARMUP + RUNS; i++)); do
	for ((k = 0; k < ${#sides[@]}; k++)); do
		# Rotate which side goes first.
		side=${sides[$(((i + k) % ${#sides[@]}))]}
		dest=$(dest_of "$side" "$i")
		sync
		c0=$(daemon_ticks)
		t0=$(now_us)
		cp -a "$SRC" "$dest" || bench_broken "cp -a into $dest failed"
		t1=$(now_us)
		c1=$(daemon_ticks)
		n=$(find "$(direct_of "$side" "$i")" -type f | wc -l)
		[ "$n" = "$TOTAL" ] || bench_broken "$dest holds $n files, not $TOTAL"
		if [ $i -ge "$WARMUP" ]; then
			echo $((t1 - t0)) >>"$W/t_$side"
			echo $((c1 - c0)) >>"$W/c_$side"
		fi
	done
done
# The owners thread gave the paddock side's files to the box's user.
eng_wait=0
while [ -n "$(find "$OVL/copy$WARMUP" ! -uid "$BASE" -print -quit)" ] && [ $eng_wait -lt 100 ]; do
	sleep 0.1
	eng_wait=$((eng_wait + 1))
done
[ -z "$(find "$OVL/copy$WARMUP" ! -uid "$BASE" -print -quit)" ] ||
	bench_broken "files copied through root/ are not the box user's"

s_stats() {
	bench_stats <(awk '{print $1/1e6}' "$W/t_$1")
}
read -r p_med _ < <(s_stats paddock)
read -r o_med _ < <(s_stats overlay)
ratio=$(bench_ratio "$o_med" "$p_med")
fps() {
	python3 -c 'import sys; print("%.0f" % (float(sys.argv[1]) / float(sys.argv[2])))' "$TOTAL" "$1"
}
p_fps=$(fps "$p_med")
# Per run: overlay time / paddock time.
per_run=$(paste "$W/t_overlay" "$W/t_paddock" | awk '{printf "%s%.2f", (NR > 1 ? " " : ""), $1 / $2}')

printf 'cp -a of %d files in %d directories (%s KiB of content): %d runs per side (+%d warm-up), sync before each; load %s\n' \
	"$TOTAL" "$NDIRS" "$((src_bytes / 1024))" "$RUNS" "$WARMUP" "$(cut -d' ' -f1-3 /proc/loadavg)"
bench_build_note
echo "  box's disk: $(stat -f -c %T "$DISK") image; data directory: $(stat -f -c %T "$W")"
printf '  %-12s %8s %8s %8s %8s %7s %9s %8s %11s\n' side median mean min p90 stdev "files/s" "/overlay" "daemon CPU"
for s in "${sides[@]}"; do
	read -r med mean min p90 sd _ < <(s_stats "$s")
	cpu=$(awk -v hz="$(getconf CLK_TCK)" '{s += $1} END {printf "%.0f ms", NR ? s / NR * 1000 / hz : 0}' "$W/c_$s")
	printf '  %-12s %8.3f %8.3f %8.3f %8.3f %7.3f %9s %8s %11s\n' "$s" "$med" "$mean" "$min" "$p90" "$sd" \
		"$(fps "$med")" "$(bench_ratio "$o_med" "$med")" "$cpu"
done
printf '  ratio overlay time / paddock time (medians): %s  target >= %s  met: %s\n' \
	"$ratio" "$BENCH_TARGET" "$(meets_min "$ratio" "$BENCH_TARGET")"
echo "  per run: $per_run"
echo "  $settle_note"
echo "RESULT $BENCH_NAME=$p_fps ratio=$ratio target=$BENCH_TARGET"
exit 0
