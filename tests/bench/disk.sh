#!/bin/bash
# disk.sh - candidates for the per-box disk limit, compared in one run.
#
# This host's ext4 is mounted `noquota` (no project quotas), so the limit is
# a per-box ext4 image holding the box's upper and work directories. What it
# costs, each against the plain directory of today (the baseline):
#
#   create     a new box's (or a fork's) writable layer: mkdir (baseline),
#              mkfs.ext4 of a sparse file, a sparse copy of a pre-made
#              template, a rename out of a pool of pre-made images;
#   mount      loop attach + ext4 mount, and overlay on top of it, against
#              the overlay over plain directories;
#   freeze     what stop + snapshot costs when the upper lives in an image:
#              unmount, rename the image into a layer (O(1)), and mount it
#              read-only where lowers are looked up; against `cp -a` of the
#              upper out of the image (keeping layers as directories);
#   limits     a fill to ENOSPC, `df` of the overlay, blocks an empty image
#              takes, offline and online grow (resize2fs), loop devices.
#
# Runs without a daemon (bare tools only). Every mount and loop device it
# makes is removed on exit, on failure and on Ctrl-C.
. "$(dirname "$0")/common.sh"

BENCH_NAME=disk-create
BENCH_TARGET=nan
RUNS=${RUNS:-7}
SIZE=${SIZE:-10G}

[ "$(id -u)" = 0 ] || skip_all "needs root"
for t in mkfs.ext4 losetup resize2fs; do
	command -v $t >/dev/null || skip_all "$t not installed (e2fsprogs, util-linux)"
done

W=$(mktemp -d /var/tmp/paddock-bench-disk.XXXXXX)
disk_cleanup() {
	local m f
	set +e
	# Innermost mounts first.
	for m in $(awk -v w="$W" 'index($2, w) == 1 {print $2}' /proc/self/mounts | sort -r); do
		umount "$m" 2>/dev/null || umount -l "$m"
	done
	for f in $(losetup -nO NAME,BACK-FILE | awk -v w="$W" 'index($2, w) == 1 {print $1}'); do
		losetup -d "$f"
	done
	rm -rf "$W"
}
trap disk_cleanup EXIT
trap 'exit 130' INT TERM

now() { date +%s%N; }
ms() { python3 -c 'import sys; print("%.2f" % ((int(sys.argv[2]) - int(sys.argv[1])) / 1e6))' "$1" "$2"; }
# timed OUT CMD...: appends the milliseconds CMD took to OUT.
timed() {
	local out=$1 t0 t1
	shift
	t0=$(now)
	"$@" >/dev/null 2>&1 || bench_broken "failed: $*"
	t1=$(now)
	ms "$t0" "$t1" >>"$out"
}
med() { bench_stats "$1" | cut -d' ' -f1; }
mkimg() { # mkimg FILE SIZE
	truncate -s "$2" "$1" &&
		mkfs.ext4 -q -F -E lazy_itable_init=1,lazy_journal_init=1,root_owner=200000:200000 \
			-m 0 "$1"
}
blocks_kib() { du -k "$1" | cut -f1; }

# A lower layer to put under the overlays: a few files, like a tiny image.
mkdir -p "$W/lower/bin" "$W/lower/etc"
echo root:x:0:0::/root:/bin/sh >"$W/lower/etc/passwd"
cp /bin/true "$W/lower/bin/"

echo "disk limit candidates (image size $SIZE, $RUNS runs each, medians)"

# ---- create --------------------------------------------------------------
mkimg "$W/template-$SIZE" "$SIZE" || bench_broken "mkfs of the template failed"
mkimg "$W/template-64M" 64M || bench_broken "mkfs of the template failed"
mkdir -p "$W/pool"
for ((r = 0; r < RUNS; r++)); do
	timed "$W/c-true" true
	timed "$W/c-dir" mkdir -p "$W/d$r/upper" "$W/d$r/work"
	timed "$W/c-mkfs" mkimg "$W/m$r.img" "$SIZE"
	timed "$W/c-mkfs64" mkimg "$W/s$r.img" 64M
	timed "$W/c-copy" cp --sparse=always "$W/template-$SIZE" "$W/t$r.img"
	timed "$W/c-copy64" cp --sparse=always "$W/template-64M" "$W/u$r.img"
	cp --sparse=always "$W/template-$SIZE" "$W/pool/p$r.img"
	sync -f "$W"
	timed "$W/c-pool" mv "$W/pool/p$r.img" "$W/p$r.img"
done
c_dir=$(med "$W/c-dir")
echo "(every figure includes starting the tool: \`true\` takes $(med "$W/c-true") ms)"
echo "create: mkdir $c_dir ms; mkfs $SIZE $(med "$W/c-mkfs") ms, 64M $(med "$W/c-mkfs64") ms;" \
	"sparse copy of a template $SIZE $(med "$W/c-copy") ms, 64M $(med "$W/c-copy64") ms;" \
	"rename from a pool $(med "$W/c-pool") ms"
echo "       on disk when empty: $SIZE $(blocks_kib "$W/m0.img") KiB (mkfs), $(blocks_kib "$W/t0.img") KiB (copy);" \
	"64M $(blocks_kib "$W/s0.img") KiB"

# ---- mount ---------------------------------------------------------------
ovl() { # ovl UPPERBASE MERGED
	mount -t overlay overlay -o "lowerdir=$W/lower,upperdir=$1/upper,workdir=$1/work" "$2"
}
for ((r = 0; r < RUNS; r++)); do
	mkdir -p "$W/mnt$r" "$W/merged$r" "$W/dmerged$r"
	timed "$W/m-dir-ovl" ovl "$W/d$r" "$W/dmerged$r"
	timed "$W/m-loop" mount -o loop,nodev,nosuid "$W/t$r.img" "$W/mnt$r"
	mkdir -p "$W/mnt$r/upper" "$W/mnt$r/work"
	timed "$W/m-img-ovl" ovl "$W/mnt$r" "$W/merged$r"
	timed "$W/u-dir-ovl" umount "$W/dmerged$r"
	timed "$W/u-img-ovl" umount "$W/merged$r"
	timed "$W/u-loop" umount "$W/mnt$r"
done
echo "mount: overlay on directories $(med "$W/m-dir-ovl") ms; loop + ext4 $(med "$W/m-loop") ms," \
	"then overlay on it $(med "$W/m-img-ovl") ms"
echo "unmount: overlay on directories $(med "$W/u-dir-ovl") ms; overlay on image $(med "$W/u-img-ovl") ms," \
	"ext4 + loop detach $(med "$W/u-loop") ms"

# ---- freeze: stop + snapshot with 100 MB of changes -------------------------
mkdir -p "$W/layers"
for ((r = 0; r < RUNS; r++)); do
	mount -o loop "$W/t$r.img" "$W/mnt$r" || bench_broken "mount failed"
	ovl "$W/mnt$r" "$W/merged$r" || bench_broken "overlay failed"
	for i in $(seq 10); do dd if=/dev/zero of="$W/merged$r/f$i" bs=1M count=10 status=none; done
	# Today: the stop unmounts the overlay, the snapshot renames the upper.
	mkdir -p "$W/d$r/upper/data"
	for i in $(seq 10); do dd if=/dev/zero of="$W/d$r/upper/data/f$i" bs=1M count=10 status=none; done
	sync -f "$W"
	sync -f "$W/mnt$r"
	timed "$W/f-dir" mv "$W/d$r/upper" "$W/layers/D$r"
	timed "$W/f-umount" sh -c "umount '$W/merged$r' && umount '$W/mnt$r'"
	timed "$W/f-rename" mv "$W/t$r.img" "$W/layers/L$r.img"
	mkdir -p "$W/lower$r"
	timed "$W/f-ro" mount -o loop,ro,noload "$W/layers/L$r.img" "$W/lower$r"
	timed "$W/f-copy" sh -c "cp -a '$W/lower$r/upper' '$W/layers/C$r' && sync -f '$W/layers'"
	# A fork: a fresh image over the frozen one.
	cp --sparse=always "$W/template-$SIZE" "$W/k$r.img"
	mkdir -p "$W/kmnt$r" "$W/kmerged$r"
	mount -o loop "$W/k$r.img" "$W/kmnt$r" && mkdir "$W/kmnt$r/upper" "$W/kmnt$r/work"
	timed "$W/f-fork-ovl" mount -t overlay overlay \
		-o "lowerdir=$W/lower$r/upper:$W/lower,upperdir=$W/kmnt$r/upper,workdir=$W/kmnt$r/work" "$W/kmerged$r"
	[ -f "$W/kmerged$r/f3" ] || bench_broken "the frozen layer is not seen through the fork"
	umount "$W/kmerged$r" "$W/kmnt$r"
	timed "$W/f-ro-umount" umount "$W/lower$r"
done
echo "freeze (100 MB of changes): rename of a directory upper $(med "$W/f-dir") ms (baseline);" \
	"with an image: unmount overlay + ext4 $(med "$W/f-umount") ms, rename $(med "$W/f-rename") ms,"
echo "       read-only loop mount of the frozen image $(med "$W/f-ro") ms (unmount $(med "$W/f-ro-umount") ms);" \
	"cp -a of the upper out of it $(med "$W/f-copy") ms; overlay of a fork over it $(med "$W/f-fork-ovl") ms"

# ---- limits --------------------------------------------------------------
mkdir -p "$W/lim" "$W/limm"
cp --sparse=always "$W/template-64M" "$W/lim.img"
mount -o loop "$W/lim.img" "$W/lim" && mkdir "$W/lim/upper" "$W/lim/work"
ovl "$W/lim" "$W/limm" || bench_broken "overlay failed"
host_before=$(df -k --output=used "$W" | tail -1)
err=$(dd if=/dev/zero of="$W/limm/fill" bs=1M count=200 2>&1 >/dev/null | grep -o 'No space left on device' | head -1)
[ -n "$err" ] || bench_broken "no ENOSPC past 64M"
written=$(du -k "$W/limm/fill" | cut -f1)
echo "fill to the limit (64M image): ${written} KiB written, then: $err; the host's filesystem grew by" \
	"$(($(df -k --output=used "$W" | tail -1) - host_before)) KiB (the sparse image filling in, bounded by its size)"
echo "df of the overlay: $(df -h --output=size,used,avail "$W/limm" | tail -1)"
echo "df of the ext4 under it: $(df -h --output=size,used,avail "$W/lim" | tail -1) (64M image: ext4's own metadata takes the rest)"
rm -f "$W/limm/fill"
echo x >"$W/limm/small" && echo "   after rm: writes work again"
umount "$W/limm" "$W/lim"
timed "$W/g-off" sh -c "truncate -s 128M '$W/lim.img' && e2fsck -fp '$W/lim.img' && resize2fs '$W/lim.img'"
mount -o loop "$W/lim.img" "$W/lim"
dev=$(findmnt -no SOURCE "$W/lim")
if online=$(truncate -s 256M "$W/lim.img" && losetup -c "$dev" && resize2fs "$dev" 2>&1); then
	online="works"
else
	online="refused ($(echo "$online" | tail -1))"
fi
echo "grow 64M -> 128M offline (e2fsck -f + resize2fs) $(med "$W/g-off") ms, now" \
	"$(df -h --output=size "$W/lim" | tail -1); online 128M -> 256M: $online"
umount "$W/lim"

n=64
before=$(losetup -a | wc -l)
t0=$(now)
for ((i = 0; i < n; i++)); do
	cp --sparse=always "$W/template-64M" "$W/many$i.img"
	mkdir -p "$W/many$i"
	mount -o loop "$W/many$i.img" "$W/many$i" || bench_broken "mount of loop device $i failed"
done
t1=$(now)
echo "loop devices: $n images mounted at once (copy + mount) in $(ms "$t0" "$t1") ms;" \
	"$(($(losetup -a | wc -l) - before)) loop devices in use; /dev/loop* nodes: $(ls /dev/loop[0-9]* | wc -l)"
for ((i = 0; i < n; i++)); do umount "$W/many$i"; done
echo "            after unmounting: $(($(losetup -a | wc -l) - before)) in use (autoclear)"

read -r c_copy _ <<<"$(bench_stats "$W/c-copy")"
read -r c_mkfs _ <<<"$(bench_stats "$W/c-mkfs")"
read -r c_pool _ <<<"$(bench_stats "$W/c-pool")"
echo "RESULT disk_create_copy_ms=$c_copy ratio=$(bench_ratio "$c_copy" "$c_dir") target=nan"
echo "RESULT disk_create_mkfs_ms=$c_mkfs ratio=$(bench_ratio "$c_mkfs" "$c_dir") target=nan"
echo "RESULT disk_create_pool_ms=$c_pool ratio=$(bench_ratio "$c_pool" "$c_dir") target=nan"
read -r m_img _ <<<"$(bench_stats "$W/m-loop")"
read -r m_dir _ <<<"$(bench_stats "$W/m-dir-ovl")"
echo "RESULT disk_mount_ms=$m_img ratio=$(bench_ratio "$m_img" "$m_dir") target=nan"
read -r f_ro _ <<<"$(bench_stats "$W/f-ro")"
read -r f_rn _ <<<"$(bench_stats "$W/f-rename")"
read -r f_dir _ <<<"$(bench_stats "$W/f-dir")"
echo "RESULT disk_freeze_ms=$(python3 -c "print('%.2f' % ($f_rn + $f_ro))") ratio=$(bench_ratio "$(python3 -c "print($f_rn + $f_ro)")" "$f_dir") target=nan"
