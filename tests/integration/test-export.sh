#!/bin/bash
# Exports: snapshots/ID/export is a zstd tar whose files match the
# snapshot's root and whose last entry is an XXH3 manifest; export -> import
# into a volume keeps every content hash; a tampered archive is refused by
# the manifest; hostile archives (.., absolute, links out, device node,
# 1,000,000 entries, a 1 TB sparse entry, a truncated stream) are refused
# with a reason and leave nothing; a snapshot is EBUSY while exported.
. "$(dirname "$0")/lib.sh"
require_root
command -v zstd >/dev/null || skip_all "needs zstd"
pd_start

B=$M/boxes
V=$M/volumes
H=$PD_TMP/host
mkdir -p "$H"
# hashes DIR: sha256 of every regular file under DIR (names relative to it).
hashes() {
	(cd "$1/" && find . -type f ! -path ./.paddock-export -print0 | sort -z | xargs -0 -r sha256sum)
}
errno_of() {
	python3 -c "
import errno, os
try:
    $1
    print('OK')
except OSError as e:
    print(errno.errorcode[e.errno])"
}
export -f hashes errno_of

# --- a snapshot and its export ------------------------------------------------
mkdir "$B/web"
mkdir -p "$B/web/root/srv/sub"
echo hello >"$B/web/root/srv/a"
echo tamper-me-0123456789 >"$B/web/root/srv/t"
head -c 3000000 /dev/urandom >"$B/web/root/srv/sub/big"
printf 'new\nline' >"$B/web/root/srv/name with space"
ln -s ../a "$B/web/root/srv/sub/link"
echo snap >"$B/web/snapshot"
s=$(readlink "$B/web/snapshots/last")
S=$M/snapshots/$s
ok "snapshots/ID/export is listed, read-only" same "$(stat -c %a "$S/export")" 440
ok "reading it gives a valid tar.zst" bash -c "cat '$S/export' > '$H/snap.tar.zst' && zstd -tq '$H/snap.tar.zst'"
ok "tar lists it, the manifest last" same "$(zstd -dc "$H/snap.tar.zst" | tar -t | tail -1)" ./.paddock-export
ok "the manifest's header names the snapshot" bash -c "zstd -dc '$H/snap.tar.zst' | tar -xO ./.paddock-export | head -1 | grep -Eq '^paddock-export 1 snapshot $s [0-9T:-]+Z\$'"
ok "the manifest has one line per regular file" same \
	"$(zstd -dc "$H/snap.tar.zst" | tar -xO ./.paddock-export | tail -n +2 | wc -l)" \
	"$(cd "$S/root/" && find . -type f | wc -l)"
mkdir "$H/x"
zstd -dc "$H/snap.tar.zst" | tar -x -C "$H/x" --exclude ./.paddock-export
ok "its files match the snapshot's root (sha256 of each)" same "$(hashes "$H/x")" "$(hashes "$S/root")"
ok "symlinks are kept" same "$(readlink "$H/x/srv/sub/link")" ../a

# --- export -> import round trip ---------------------------------------------------
mkdir "$V/fromsnap"
ok "a snapshot archive imports into an empty volume" bash -c "cat '$H/snap.tar.zst' > '$V/fromsnap/import'"
ok "with identical content hashes" same "$(hashes "$V/fromsnap/data")" "$(hashes "$S/root")"
ok "the manifest is not extracted" test ! -e "$V/fromsnap/data/.paddock-export"
ok "the event says it was verified" grep -q "volumes/fromsnap imported (.* files verified against the manifest of snapshot $s)" "$M/events"
ok "a volume export round-trips too" bash -c "cat '$V/fromsnap/export' > '$H/vol.tar.zst' && mkdir '$V/again' && cat '$H/vol.tar.zst' > '$V/again/import'"
ok "with identical content hashes" same "$(hashes "$V/again/data")" "$(hashes "$V/fromsnap/data")"
ok "its manifest names the volume" bash -c "zstd -dc '$H/vol.tar.zst' | tar -xO ./.paddock-export | head -1 | grep -q '^paddock-export 1 volume fromsnap '"

# --- a tampered archive -------------------------------------------------------------
zstd -qdc "$H/snap.tar.zst" >"$H/t.tar"
sed -i 's/tamper-me-0123456789/TAMPER-ME-0123456789/' "$H/t.tar"
zstd -qf "$H/t.tar" -o "$H/tampered.tar.zst"
ok "the tampered archive holds the changed file" bash -c "zstd -dc '$H/tampered.tar.zst' | tar -xO srv/t | grep -q TAMPER-ME"
mkdir "$V/tamp"
ok "its import is refused" bash -c "! cat '$H/tampered.tar.zst' > '$V/tamp/import' 2>/dev/null"
ok "with the file named" grep -q "content does not match the archive's manifest: srv/t (hash differs)" "$V/tamp/error"
ok "and nothing left behind" same "$(ls -A "$V/tamp/data/")" ""
diag "$(cat "$V/tamp/error")"

# --- hostile archives ----------------------------------------------------------------
python3 "$TOP_SRCDIR/tests/integration/hostile-tars.py" "$H" --big
zstd -q --rm -f "$H/million.tar" -o "$H/million.tar.zst"
ok "the million-entry archive is valid" same "$(zstd -dc "$H/million.tar.zst" | tar -t | wc -l)" 1000000
head -c $(($(stat -c %s "$H/snap.tar.zst") / 2)) "$H/snap.tar.zst" >"$H/truncated.tar.zst"
n=0
for bad in dotdot.tar:'path leaves the target directory' absolute.tar:'absolute path' \
	symlink.tar:'leads outside the volume' hardlink.tar:'hard link to an absolute path' \
	device.tar:'device nodes are not allowed' million.tar.zst:'more than 100000 entries' \
	terabyte.tar:'exceed the limit' truncated.tar.zst:'truncated'; do
	file=${bad%%:*} why=${bad#*:}
	n=$((n + 1))
	mkdir "$V/h$n"
	start=$(date +%s)
	ok "import of $file is refused" bash -c "! cat '$H/$file' > '$V/h$n/import' 2>/dev/null"
	if [ "$file" = million.tar.zst ]; then
		# Read up to the limit, not to the end: the error names the entry
		# past it (time says little: 100001 entries under load and ASan
		# can take longer than the small archives' 30 s).
		ok "at the limit ($file)" grep -q "entry 100001 " "$V/h$n/error"
	else
		ok "quickly ($file)" test $(($(date +%s) - start)) -lt 30
	fi
	ok "with a clear reason ($file: $why)" grep -qi "import rejected, the volume is unchanged: .*$why" "$V/h$n/error"
	ok "nothing left behind ($file)" same "$(ls -A "$V/h$n/data/")" ""
	diag "$(cat "$V/h$n/error")"
done
ok "no staging directory anywhere" same "$(find "$D/volumes" -name '.paddock-push-*' | wc -l)" 0
ok "nothing escaped to the host" bash -c "test ! -e /etc/paddock-escape && test ! -e '$D/volumes/escape'"

# --- the snapshot is busy while exported --------------------------------------------
rmdir "$B/web"
ok "the box is gone (nothing stands on the snapshot)" test ! -e "$B/web"
ok "rmdir of a snapshot being exported is EBUSY" same "$(python3 -c "
import errno, os
fd = os.open('$S/export', os.O_RDONLY)
os.read(fd, 100)
try:
    os.rmdir('$S')
    print('OK')
except OSError as e:
    print(errno.errorcode[e.errno])
os.close(fd)")" EBUSY
ok "with the reason" grep -q 'is being exported' "$S/error"
ok "once closed, rmdir deletes it" wait_for 10 rmdir "$S"

pd_done
