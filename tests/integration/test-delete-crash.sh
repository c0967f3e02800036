#!/bin/bash
# test-delete-crash.sh - deleting a running box: the request returns once
# the box is gone from the tree, its container stopped and its view
# unmounted; its files (DATA/boxes/ID, with its overlay and disk image
# mounted in it) are moved into DATA/trash and removed in the background.
# A kill of the daemon at each step of a deletion (PADDOCK_FAULT) leaves
# the box either whole or deleted at the next start, never half, and
# nothing behind: no mount, no loop device, no container, no file in
# DATA/trash; other boxes keep their files.
#
#   boxdel-stopped   its container gone, its files where they were
#   boxdel-trashed   its directory moved into DATA/trash, its row still there
#   boxdel-umounted  its row gone, its overlay and disk unmounted in the
#                    trash, its files not yet removed
. "$(dirname "$0")/lib.sh"

pd_start
B=$M/boxes
db() { python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); [print("|".join(map(str,r))) for r in c.execute(sys.argv[2])]' "$D/paddock.db" "$1"; }
id_of() { db "SELECT id FROM boxes WHERE name = '$1'"; }
# Nothing of box id $1 left: directory, trash entry, mount, loop device.
all_gone() {
	local id=$1
	[ ! -e "$D/boxes/$id" ] && [ -z "$(ls -A "$D/trash")" ] &&
		! grep -q -e " $D/boxes/$id/" -e " $D/trash/" -e " $PD_TMP/run/roots/$id " \
			/proc/self/mountinfo &&
		! losetup -nO BACK-FILE | grep -q -e "^$D/boxes/$id/" -e "^$D/trash/"
}
export -f all_gone db id_of
export D PD_TMP

mkdir "$B/keep"
echo kept >"$B/keep/root/kept"
echo running >"$B/keep/state"

# ---- a plain deletion ---------------------------------------------------------
mkdir "$B/plain"
echo data >"$B/plain/root/data"
echo running >"$B/plain/state"
id=$(id_of plain)
ok "rmdir of a running box succeeds" rmdir "$B/plain"
ok "the box is gone from the tree and the database at once" bash -c "
	test ! -e '$B/plain' && [ -z \"\$(db \"SELECT id FROM boxes WHERE name = 'plain'\")\" ]"
ok "its container is gone at once" bash -c "! crun_list | grep -qx plain"
ok "its view is unmounted at once" bash -c "! grep -q ' $PD_TMP/run/roots/$id ' /proc/self/mountinfo"
ok "its files, mounts and loop device go soon after" wait_for 10 all_gone "$id"

# A stop right after a deletion waits for its removal.
mkdir "$B/quick"
echo running >"$B/quick/state"
id=$(id_of quick)
rmdir "$B/quick"
pd_stop
ok "a daemon stopped right after a deletion leaves nothing of it" all_gone "$id"
pd_start

# ---- a kill at each step ---------------------------------------------------------
for step in boxdel-stopped boxdel-trashed boxdel-umounted; do
	name=k-${step#boxdel-}
	mkdir "$B/$name"
	echo mine >"$B/$name/root/mine"
	echo running >"$B/$name/state"
	id=$(id_of "$name")
	pd_stop
	PADDOCK_FAULT=$step pd_start
	rmdir "$B/$name" 2>/dev/null
	wait_for 10 bash -c "! kill -0 $PD_PID 2>/dev/null"
	ok "$step: the daemon died at the step" bash -c "! kill -0 $PD_PID 2>/dev/null"
	PD_PID=
	pd_start
	ok "$step: the box is deleted at the next start" bash -c "
		test ! -e '$B/$name' && [ -z \"\$(db \"SELECT id FROM boxes WHERE name = '$name'\")\" ]"
	ok "$step: no container left" bash -c "! crun_list | grep -qx '$name'"
	ok "$step: nothing of it left (files, trash, mounts, loop device)" wait_for 10 all_gone "$id"
	ok "$step: another box keeps its files and runs" bash -c "
		same \"\$(cat '$B/keep/root/kept')\" kept && same \"\$(cat '$B/keep/state')\" running"
	mkdir "$B/$name"
	ok "$step: the name can be used again" bash -c "echo running > '$B/$name/state' &&
		test ! -e '$B/$name/root/mine'"
	rmdir "$B/$name"
done

pd_done
