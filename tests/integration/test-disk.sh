#!/bin/bash
# The disk limit: a box's writable layer is an ext4 image of its type's
# `disk` size (engine/disk.c). A box that fills it gets ENOSPC, so
# does the host writing through root/; the box, the daemon, another box and
# the host's filesystem keep working; usage and `df /` say the limit; stop,
# snapshot, fork, restore and delete keep working with images (a freeze
# renames the image into a layer); a restart (SIGTERM and kill -9) adopts
# the mounts as they are; a box made with the limit off keeps its directory
# until its next freeze; a type's new size applies at the next start; a
# kill at each new step (PADDOCK_FAULT) loses nothing.
. "$(dirname "$0")/lib.sh"
require_root
[ -w /dev/loop-control ] || skip_all "no /dev/loop-control (loop devices)"
command -v mkfs.ext4 >/dev/null || skip_all "mkfs.ext4 not installed (e2fsprogs)"
pd_setup || exit 1
cat >>"$PD_TMP/paddock.ini" <<'INI'
[types.d64]
cpus = 0.5
memory = 64M
pids = 256
disk = 64M
[types.d128]
cpus = 0.5
memory = 64M
pids = 256
disk = 128M
INI
pd_start

B=$M/boxes
MiB=1048576
db() { python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); [print("|".join(map(str,r))) for r in c.execute(sys.argv[2])]' "$D/paddock.db" "$1"; }
id_of() { db "SELECT id FROM boxes WHERE name = '$1'"; }
img_of() { echo "$D/boxes/$(id_of "$1")/disk.img"; }
# loops_of BOX: loop devices bound to the box's image (after the kernel
# had time to clear unmounted ones). One at most: one filesystem per image.
# (A job's crun, anywhere on the host, runs in a private copy of the mount
# table made when it started, which keeps the filesystems mounted then
# alive until it ends: an image unmounted here may stay bound that long.)
loops_of() {
	local f i
	f=$(img_of "$1")
	for ((i = 0; i < 50; i++)); do
		[ "$(losetup -j "$f" | wc -l)" -le 1 ] && break
		sleep 0.1
	done
	losetup -j "$f" | wc -l
}
mounts_of() { grep -c " $D/boxes/$(id_of "$1")/disk " /proc/self/mountinfo; }
usage_disk() { awk '/^disk_bytes/ {print $2}' "$B/$1/usage"; }
# in BOX CMD: stdout and stderr of CMD run in BOX (whatever its status).
inbox() { pd_job "$1" "{ $2 ; } 2>&1; true"; }
host_used_kib() { df -k --output=used "$D" | tail -1; }
export B MiB
export -f db id_of img_of loops_of mounts_of usage_disk

# ---- a box fills its disk -------------------------------------------------
mkdir "$B/full" "$B/other"
echo d64 >"$B/full/type"
echo d64 >"$B/other/type"
ok "a new box's writable layer is an image" test -f "$(img_of full)"
ok "its image is sparse (a few MiB on the host)" bash -c "[ \$(du -k '$(img_of full)' | cut -f1) -lt 8192 ]"
echo running >"$B/full/state"
echo running >"$B/other/state"
ok "the type's disk applied at start (10G image shrunk to 64M)" \
	bash -c "[ \$(stat -c %s '$(img_of full)') -lt $((80 * MiB)) ]"
size_kib=$(inbox full "df -k / | tail -1" | awk '{print $2}')
ok "df / inside the box shows about 64M ($size_kib KiB)" \
	bash -c "[ '${size_kib:-0}' -ge 65536 ] && [ '${size_kib:-0}' -lt 70000 ]"
before=$(host_used_kib)
out=$(inbox full "dd if=/dev/zero of=/fill bs=1M count=200")
ok "writes past the limit fail with ENOSPC inside the box" bash -c "grep -q 'No space left on device' <<<'$out'"
grew=$(($(host_used_kib) - before))
ok "the host's filesystem grew by the image's fill only ($grew KiB)" bash -c "[ $grew -lt $((80 * 1024)) ]"
ok "usage's disk_bytes says the disk is full" bash -c "[ \$(usage_disk full) -ge $((60 * MiB)) ] && [ \$(usage_disk full) -le $((70 * MiB)) ]"
ok "the box keeps working" same "$(pd_job full 'echo alive')" alive
ok "the daemon keeps working" test -r "$M/version"
ok "the other box writes as before" same "$(pd_job other 'dd if=/dev/zero of=/ten bs=1M count=10 2>/dev/null && echo wrote')" wrote
ok "the host writes as before" bash -c "dd if=/dev/zero of='$PD_TMP/host-file' bs=1M count=10 2>/dev/null && rm '$PD_TMP/host-file'"
hostout=$(dd if=/dev/zero of="$B/full/root/from-host" bs=1M count=200 2>&1)
ok "writing through root/ from the host fails with ENOSPC too" bash -c "grep -q 'No space left on device' <<<'$hostout'"
pd_job full 'rm /fill /from-host' >/dev/null
ok "freed space can be written again" same "$(pd_job full 'dd if=/dev/zero of=/again bs=1M count=30 2>/dev/null && echo wrote')" wrote
ok "one mount and one loop device for the box's image" bash -c "same \$(mounts_of full) 1 && same \$(loops_of full) 1"

# ---- freeze, fork, restore, delete ------------------------------------------
echo kept >"$B/full/root/kept"
old_img_ino=$(stat -c %i "$(img_of full)")
echo stopped >"$B/full/state"
sid=$(readlink "$B/full/snapshots/last")
ok "a stop freezes the image into a layer (a file)" bash -c "[ -n '$sid' ] && find '$D/layers' -maxdepth 1 -type f -name 'L*' -inum $old_img_ino | grep -q ."
ok "the box has a fresh image" bash -c "[ \$(stat -c %i '$(img_of full)') != $old_img_ino ] && [ \$(usage_disk full) -lt $((8 * MiB)) ]"
ok "its files are intact through the frozen layer" same "$(cat "$B/full/root/kept")" kept
ok "the snapshot's root shows them" same "$(cat "$M/snapshots/$sid/root/kept")" kept
ok "the frozen image is mounted read-only once" bash -c "grep ' $PD_TMP/run/layers/L' /proc/self/mountinfo | grep -q ' ro,'"
echo running >"$B/full/state"
ok "the limit counts the writable layer: 40M more fit after the freeze" \
	same "$(pd_job full 'dd if=/dev/zero of=/more bs=1M count=40 2>/dev/null && echo wrote')" wrote
echo stopped >"$B/full/state"
t0=$(date +%s%N)
echo full2 >"$B/full/fork"
t1=$(date +%s%N)
diag "fork of a stopped box with images: $(((t1 - t0) / 1000000)) ms"
ok "fork of a stopped box: the fork has the files" bash -c "same \"\$(cat '$B/full2/root/kept')\" kept && test -e '$B/full2/root/more'"
ok "the fork has an image of its own" bash -c "test -f '$(img_of full2)' && [ '$(img_of full2)' != '$(img_of full)' ]"
echo later >"$B/full/root/later"
echo "$sid" >"$B/full/restore"
ok "restore: later changes gone, earlier kept" bash -c "[ ! -e '$B/full/root/later' ] && [ ! -e '$B/full/root/more' ] && same \"\$(cat '$B/full/root/kept')\" kept"
ok "restore: no old image left" test ! -e "$(img_of full).old"
full2_id=$(id_of full2)
full2_img=$(img_of full2)
rmdir "$B/full2"
ok "delete: the box's files and mount are gone" bash -c "
	test ! -e '$D/boxes/$full2_id' && ! grep -q ' $D/boxes/$full2_id/disk ' /proc/self/mountinfo"

# ---- a type's disk changes ------------------------------------------------------
echo d128 >"$B/full/type"
echo running >"$B/full/state"
size_kib=$(inbox full "df -k / | tail -1" | awk '{print $2}')
ok "a larger type's disk applies at the next start ($size_kib KiB)" bash -c "[ '${size_kib:-0}' -ge 131072 ]"
ok "its files are still there" same "$(cat "$B/full/root/kept")" kept
echo stopped >"$B/full/state"

# ---- restart: SIGTERM and kill -9, boxes running and stopped --------------------
mkdir "$B/idle"
echo d64 >"$B/idle/type"
echo idle >"$B/idle/root/f"
pd_stop
pd_start
ok "after a restart: the running box's disk is adopted (one mount, one loop)" \
	bash -c "same \$(mounts_of other) 1 && same \$(loops_of other) 1 && same \"\$(cat '$B/other/state')\" running"
ok "a stopped box's root shows its files" same "$(cat "$B/idle/root/f")" idle
ok "the running box writes" same "$(pd_job other 'echo x >/after-restart && echo wrote')" wrote
pd_kill9
pd_start
ok "after kill -9: one mount and one loop device per image" \
	bash -c "for b in other idle full; do same \$(mounts_of \$b) 1 && same \$(loops_of \$b) 1 || exit 1; done"
ok "the running box still writes" same "$(pd_job other 'cat /after-restart && echo x >/after-kill && echo wrote')" "$(printf 'x\nwrote')"
out=$(inbox other "dd if=/dev/zero of=/fill bs=1M count=200")
ok "and is still limited" bash -c "grep -q 'No space left on device' <<<'$out'"
pd_job other 'rm -f /fill' >/dev/null

# ---- boxes without an image (from before, or disk_limit = off) ---------------------
pd_stop
sed -i 's|^\[paddock\]$|[paddock]\ndisk_limit = off|' "$PD_TMP/paddock.ini"
pd_start
mkdir "$B/legacy"
echo legacy-file >"$B/legacy/root/legacy"
ok "with the limit off a box gets a plain upper directory" bash -c "test -d '$D/boxes/$(id_of legacy)/upper' && test ! -e '$(img_of legacy)'"
ok "boxes with images keep working with the limit off" same "$(pd_job other 'cat /after-kill')" x
pd_stop
sed -i '/^disk_limit = off$/d' "$PD_TMP/paddock.ini"
pd_start
ok "a box with a directory upper keeps it, unlimited, until its next freeze" bash -c "
	test -d '$D/boxes/$(id_of legacy)/upper' && same \"\$(cat '$B/legacy/root/legacy')\" legacy-file"
echo d64 >"$B/legacy/type"
echo snap >"$B/legacy/snapshot"
ok "its next freeze gives it an image; its files are intact" bash -c "
	test -f '$(img_of legacy)' && test ! -e '$D/boxes/$(id_of legacy)/upper' &&
	same \"\$(cat '$B/legacy/root/legacy')\" legacy-file"
echo running >"$B/legacy/state"
out=$(inbox legacy "dd if=/dev/zero of=/fill bs=1M count=200")
ok "and from then on it is limited" bash -c "grep -q 'No space left on device' <<<'$out'"
pd_job legacy 'rm -f /fill' >/dev/null
echo stopped >"$B/legacy/state"

# ---- a kill at each new step -----------------------------------------------------
# disk-copied: the fresh image copied, not renamed into place;
# disk-mounted: a box's image mounted, its overlay not yet.
for step in disk-copied disk-mounted; do
	for when in create freeze; do
		name=k-${step#disk-}-$when
		if [ $when = freeze ]; then
			mkdir "$B/$name"
			echo d64 >"$B/$name/type"
			echo kept >"$B/$name/root/kept"
		fi
		pd_stop
		PADDOCK_FAULT=$step pd_start
		if [ $when = create ]; then
			mkdir "$B/$name" 2>/dev/null
		else
			echo stopped >"$B/$name/snapshot" 2>/dev/null
		fi
		wait_for 10 bash -c "! kill -0 $PD_PID 2>/dev/null"
		ok "$step ($when): the daemon died at the step" bash -c "! kill -0 $PD_PID 2>/dev/null"
		PD_PID=
		pd_start
		if [ $when = create ]; then
			ok "$step ($when): the half-made box is rolled back, nothing left" bash -c "
				test ! -e '$B/$name' && [ -z \"\$(db \"SELECT id FROM boxes WHERE name = '$name'\")\" ] &&
				wait_for 5 bash -c \"! losetup -nO BACK-FILE | grep -q '^$D/.*(deleted)'\""
			mkdir "$B/$name"
			echo d64 >"$B/$name/type"
			ok "$step ($when): the name can be used again" test -f "$(img_of "$name")"
		else
			ok "$step ($when): the freeze is finished, the files intact" bash -c "
				same \"\$(cat '$B/$name/root/kept')\" kept && [ -z \"\$(db 'SELECT id FROM intents')\" ] &&
				test -f '$(img_of "$name")'"
		fi
		ok "$step ($when): no temporary image left" bash -c "! ls '$D'/boxes/*/disk.img.tmp 2>/dev/null | grep -q ."
		ok "$step ($when): one mount and one loop device for its image" \
			bash -c "same \$(mounts_of $name) 1 && same \$(loops_of $name) 1"
		echo running >"$B/$name/state"
		out=$(inbox "$name" "echo x >/w && dd if=/dev/zero of=/fill bs=1M count=200")
		ok "$step ($when): the box runs, writes, and is limited" bash -c "grep -q 'No space left on device' <<<'$out'"
		echo stopped >"$B/$name/state"
		rmdir "$B/$name"
	done
done

# ---- cleanup: every mount and loop device of the daemon goes with its boxes ----------
for b in $(ls "$B"); do
	echo stopped >"$B/$b/state" 2>/dev/null
	rmdir "$B/$b"
done
for s in $(ls "$M/snapshots"); do rmdir "$M/snapshots/$s"; done
ok "no box image is mounted once the boxes are gone" bash -c "! grep -q ' $D/boxes/[0-9]*/disk ' /proc/self/mountinfo"
ok "no image layer is mounted once the snapshots are gone" bash -c "! grep -q ' $PD_TMP/run/layers/' /proc/self/mountinfo"
ok "no image is read by two loop devices (one filesystem per image)" bash -c "
	! losetup -nO BACK-FILE | grep '^$PD_TMP/' | grep -v '(deleted)' | sort | uniq -d | grep -q ."
pd_loops_gone 5 || diag "loop devices still bound (pinned by crun processes' mount namespaces): $(losetup -nO NAME,BACK-FILE | grep -c "$PD_TMP/")"
pd_done
