#!/bin/bash
# The engine when things fail under it, each written as what an attacker or
# a broken host does:
#  - a fork whose new box's directory cannot be made fails with its reason
#    and removes nothing (its rollback once removed an unset path).
. "$(dirname "$0")/lib.sh"
pd_start

B=$M/boxes
db() { sqlite3 "$D/paddock.db" "$1"; }
# What is on disk under the data directory, but the database.
listing() { (cd "$D" && find boxes layers images volumes -xdev -printf '%p %y %s\n' 2>/dev/null | sort); }
export -f db listing
export D

# --- a fork that cannot make its box's directory ------------------------------
mkdir "$B/src"
echo one >"$B/src/root/f1"
echo running >"$B/src/state"
echo two >"$B/src/root/f2"
echo stopped >"$B/src/state" # freezes f1, f2 into a layer
echo three >"$B/src/root/f3"
# Each failing fork comes right after a good one, as the unset path the
# rollback once removed held what the last fork left on the stack: that
# fork's new layer.
failed=0 changed=0
for i in 1 2 3; do
	echo "good$i" >"$B/src/fork" || failed=1
	next=$(($(db "SELECT seq FROM sqlite_sequence WHERE name = 'boxes'") + 1))
	listing >"$PD_TMP/before"
	# Box directories are DATA/boxes/ID: make that one impossible.
	chattr +i "$D/boxes"
	write_expect EPERM "$B/src/fork" "bad$i" || failed=1
	chattr -i "$D/boxes"
	grep -q "fork: cannot create .*/boxes/$next: " "$B/src/error" || failed=1
	diff "$PD_TMP/before" <(listing) >&2 || changed=1
done
ok "forks when DATA/boxes/ID cannot be made fail: EPERM, reason in error" same $failed 0
ok "...and remove or add nothing on disk" same $changed 0
ok "no box bad*" bash -c "! ls '$B' | grep -q '^bad'"
ok "the source box's and the good forks' files are intact" bash -c "
	for b in src good1 good2 good3; do
		same \"\$(cat '$B/'\$b/root/f1 '$B/'\$b/root/f2 '$B/'\$b/root/f3)\" \"\$(printf 'one\\ntwo\\nthree')\" || exit 1
	done"
ok "every recorded layer is on disk" bash -c "
	for l in \$(db 'SELECT id FROM layers'); do [ -d '$D/layers/L'\$l ] || { diag \"L\$l is gone\"; exit 1; }; done"
ok "every snapshot's root is readable" bash -c "
	for s in \$(ls '$M/snapshots'); do cat '$M/snapshots/'\$s/root/f1 >/dev/null || exit 1; done"
ok "no intent and no half-made box row left" same "$(db "SELECT (SELECT count(*) FROM intents) + (SELECT count(*) FROM boxes WHERE name LIKE 'bad%')")" 0
ok "the source box is free again: a fork works now" bash -c "echo copy >'$B/src/fork' && same \"\$(cat '$B/copy/root/f3')\" three"
rmdir "$B/copy" "$B/good1" "$B/good2" "$B/good3"

rmdir "$B/src"
pd_done
