#!/bin/bash
# Each box in a user namespace of its own: its ids 0..65535 are a range of
# 65,536 host ids the daemon allocates from `user_ids`, records, never
# gives two boxes and frees with the box. Shared layers (the image, a
# forked box's snapshot) are id-mapped onto each box's range; what a box
# writes is owned by its range on the host; what the daemon puts in a box
# is owned by the box's user as the box sees it; snapshots and pulls show
# the ids a box sees; volumes keep 0..65535 and are id-mapped onto every box
# that has them; a box from before user namespaces moves to a range at its
# next start with nothing lost; setuid works inside (box root is nobody on
# the host).
. "$(dirname "$0")/lib.sh"

require_root
pd_setup || exit 1
PROBE=$PD_TMP/euid
cat >"$PD_TMP/euid.c" <<'EOF'
#include <stdio.h>
#include <unistd.h>
int main(void) { printf("%d %d\n", (int)getuid(), (int)geteuid()); return 0; }
EOF
${CC:-cc} -static -O2 -o "$PROBE" "$PD_TMP/euid.c" 2>"$PD_TMP/cc.log" ||
	skip_all "cannot build a static program: $(head -c 200 "$PD_TMP/cc.log")"

FIRST=1073741824 # the default user_ids
# Two ranges only, to see the last one refused.
sed -i "s|^\[paddock\]\$|[paddock]\nuser_ids = $FIRST-$((FIRST + 2 * 65536 - 1))|" "$PD_TMP/paddock.ini"
pd_start
pd_owner || echo "# no owner: HTTP cases fail"

# job BOX [USER] CMD: runs CMD in the box (as USER), prints its stdout; fails
# unless it exits 0.
job() {
	local box=$1 user= cmd n
	[ $# -eq 3 ] && { user=$2; shift; }
	cmd=$2
	n=j$RANDOM$RANDOM
	mkdir "$M/boxes/$box/exec/$n" || return 1
	[ -n "$user" ] && { echo "$user" >"$M/boxes/$box/exec/$n/user" || return 1; }
	echo "$cmd" >"$M/boxes/$box/exec/$n/cmd" || return 1
	same "$(timeout 20 cat "$M/boxes/$box/exec/$n/exit")" 0 || {
		sed 's/^/# /' "$M/boxes/$box/exec/$n/stderr"
		return 1
	}
	cat "$M/boxes/$box/exec/$n/stdout"
}
# host_uid PID: the host uid a process runs as.
host_uid() { awk '/^Uid:/ {print $2}' "/proc/$1/status"; }
box_pid() { pd_crun state "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])'; }
db() { python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); [print("|".join(map(str,r))) for r in c.execute(sys.argv[2])]' "$D/paddock.db" "$1"; }

mkdir "$M/boxes/a" "$M/boxes/b"
ok "a box gets the first range" same "$(db "SELECT uid_base FROM boxes WHERE name='a'")" $FIRST
ok "the next box the next one" same "$(db "SELECT uid_base FROM boxes WHERE name='b'")" $((FIRST + 65536))
ok "when every range is taken, a new box is refused (ENOSPC) and not made" \
	bash -c "mkdir '$M/boxes/c' 2>&1 | grep -q 'No space left on device' && [ ! -e '$M/boxes/c' ]"
ok "box a's root/ is owned by its root, a host id of its range" \
	same "$(stat -c %u:%g "$M/boxes/a/root/")" "$FIRST:$FIRST"
ok "so are the image's files, seen through a's root/ (id-mapped)" \
	same "$(stat -c %u "$M/boxes/a/root/bin")" "$FIRST"
ok "and through b's, b's range" same "$(stat -c %u "$M/boxes/b/root/bin")" "$((FIRST + 65536))"
ok "the image on disk is unchanged (owned by host root)" \
	same "$(stat -c %u "$D/images/tiny/rootfs/bin")" 0

ok "inside, box root is uid 0, mapped onto its range" \
	same "$(job a 'id -u; cat /proc/self/uid_map' | tr -s ' ' | sed 's/^ //')" "0
0 $FIRST 65536"
echo running >"$M/boxes/b/state"
pid=$(box_pid a)
ok "on the host, its PID 1 runs as the range's first id, not root" same "$(host_uid "$pid")" "$FIRST"
ok "b's processes run as b's range" bash -c "[ \"\$(awk '/^Uid:/ {print \$2}' /proc/$(box_pid b)/status)\" = $((FIRST + 65536)) ]"
mkdir "$M/boxes/a/exec/sl" && echo 1000 >"$M/boxes/a/exec/sl/user" && echo 'sleep 30' >"$M/boxes/a/exec/sl/cmd"
wait_for 10 test -s "$M/boxes/a/exec/sl/pid"
ok "box user 1000's command runs as host id FIRST+1000" \
	same "$(host_uid "$(cat "$M/boxes/a/exec/sl/pid")")" "$((FIRST + 1000))"
echo kill >"$M/boxes/a/exec/sl/ctl"
ok "a file box root makes is owned by the range on the host" \
	bash -c "$(declare -f job same); M='$M'; job a 'echo hi >/made && chown 1000:1000 /made' >/dev/null &&
		[ \"\$(stat -c %u:%g '$M/boxes/a/root/made')\" = '$((FIRST + 1000)):$((FIRST + 1000))' ]"
ok "what box root writes over an image file goes to its upper; the image is unchanged" \
	bash -c "$(declare -f job same); M='$M'; job a 'echo x >/bin/.poke' >/dev/null && [ ! -e '$D/images/tiny/rootfs/bin/.poke' ]"

# setuid inside: box root's setuid program raises box user 1000 to box root
# (no no_new_privs), which is still the range's id on the host.
# What the host writes through root/ becomes the box user's (tiny's user
# is root: the range's first id), with the directories made on the way;
# an owner the writer chose inside the range stays.
mkdir -p "$M/boxes/a/root/host/deep"
cp "$PROBE" "$M/boxes/a/root/host/deep/euid"
ok "a file the host writes through root/ becomes the box user's" \
	wait_for 10 bash -c "[ \"\$(stat -c %u:%g '$M/boxes/a/root/host/deep/euid')\" = $FIRST:$FIRST ]"
ok "so do the directories leading to it" \
	same "$(stat -c %u "$M/boxes/a/root/host" "$M/boxes/a/root/host/deep" | tr '\n' ' ')" "$FIRST $FIRST "
echo x >"$M/boxes/a/root/host/chosen" && chown $((FIRST + 1000)):$((FIRST + 5)) "$M/boxes/a/root/host/chosen"
echo y >>"$M/boxes/a/root/host/chosen"
sleep 0.5
ok "an owner the writer chose inside the box's range stays" \
	same "$(stat -c %u:%g "$M/boxes/a/root/host/chosen")" "$((FIRST + 1000)):$((FIRST + 5))"
ok "inside, the box sees them as its own" same "$(job a 'stat -c %u:%g /host/deep/euid /host/chosen')" "0:0
1000:5"
# cp -a sets each directory's owner after its files: those are given
# again once the copy is quiet.
mkdir -p "$PD_TMP/tree/d1/d2/d3" "$PD_TMP/tree/e"
echo 1 >"$PD_TMP/tree/d1/f1" && echo 3 >"$PD_TMP/tree/d1/d2/d3/f3" && echo 4 >"$PD_TMP/tree/e/f4"
# Enough files that the daemon sees the first of them before cp is done.
for i in $(seq 3000); do echo $i >"$PD_TMP/tree/d1/d2/n$i"; done
chown -R 4242:4242 "$PD_TMP/tree"
cp -a "$PD_TMP/tree" "$M/boxes/a/root/copied"
ok "cp -a of a tree through root/: every file and directory becomes the box user's" \
	wait_for 10 bash -c "[ -z \"\$(find '$M/boxes/a/root/copied' ! -uid $FIRST -o ! -gid $FIRST)\" ]"
ok "and stays so" bash -c "sleep 0.5; [ -z \"\$(find '$M/boxes/a/root/copied' ! -uid $FIRST)\" ]"
cp "$PROBE" "$M/boxes/a/root/euid"
wait_for 10 bash -c "[ \"\$(stat -c %u '$M/boxes/a/root/euid')\" = $FIRST ]"
ok "setuid works inside (sudo's way): user 1000 runs a setuid-root program as euid 0" \
	same "$(job a 'chown 0:0 /euid && chmod 4755 /euid' && job a 1000 /euid)" "1000 0"

# What the daemon puts in a box over HTTP is owned by its user as the box
# sees it (tiny's user is root: the range's first id).
ok "a file put over HTTP is owned by the box's user (its range on the host)" \
	bash -c "$(declare -f hc); PD_URL='$PD_URL' PD_TOKEN='$PD_TOKEN'
		echo data | hc -f -X PUT --data-binary @- boxes/a/root/put.txt >/dev/null &&
		[ \"\$(stat -c %u '$M/boxes/a/root/put.txt')\" = $FIRST ]"
ok "a pull gives the ids the box sees (1000, not the host's)" \
	bash -c "$(declare -f hc); PD_URL='$PD_URL' PD_TOKEN='$PD_TOKEN'
		hc -f 'boxes/a/root/made?format=tar' | tar -tv --numeric-owner | grep -q ' 1000/1000 '"

# Snapshot, fork, restore across ranges.
echo stopped >"$M/boxes/a/state"
echo one >"$M/boxes/a/snapshot"
sid=$(readlink "$M/boxes/a/snapshots/last")
ok "a snapshot's root shows the ids a box sees" \
	same "$(stat -c %u "$M/snapshots/$sid/root/made"):$(stat -c %u "$M/snapshots/$sid/root/bin")" "1000:0"
ok "its export has them too" \
	bash -c "cat '$M/snapshots/$sid/export' | zstd -dc | tar -tv --numeric-owner | grep -q ' 1000/1000 .* made\$'"
rmdir "$M/boxes/b"
ok "deleting a box frees its range" same "$(db "SELECT count(*) FROM boxes WHERE uid_base=$((FIRST + 65536))")" 0
echo f >"$M/boxes/a/fork"
ok "a fork gets a range of its own (b's, freed)" same "$(db "SELECT uid_base FROM boxes WHERE name='f'")" $((FIRST + 65536))
echo running >"$M/boxes/f/state"
ok "the fork sees a's file as its own user 1000's, and user 1000 may change it" \
	same "$(job f 1000 'stat -c %u /made && echo more >>/made && cat /made')" "1000
hi
more"
ok "on the host, the fork's copy is in the fork's range" \
	same "$(stat -c %u "$M/boxes/f/root/made")" "$((FIRST + 65536 + 1000))"
ok "a's file is unchanged" same "$(cat "$M/boxes/a/root/made")" hi
ok "a restored snapshot keeps its owners" \
	bash -c "echo '$sid' >'$M/boxes/f/restore' && [ \"\$(stat -c %u '$M/boxes/f/root/made')\" = $((FIRST + 65536 + 1000)) ]"

# Volumes keep 0..65535 on disk and are id-mapped onto each box.
mkdir "$M/volumes/v"
echo stopped >"$M/boxes/f/state"
echo v >"$M/boxes/a/volumes"
echo running >"$M/boxes/a/state"
job a 'chmod 1777 /mnt/v' >/dev/null
ok "box user 1000 writes into a volume" job a 1000 'echo vol >/mnt/v/u && id -u >/dev/null'
ok "on disk the volume holds the id the box sees (1000)" same "$(stat -c %u "$M/volumes/v/data/u")" 1000
echo stopped >"$M/boxes/a/state"
echo "" >"$M/boxes/a/volumes"
echo v >"$M/boxes/f/volumes"
echo running >"$M/boxes/f/state"
ok "another box (another range) sees it as its user 1000's, writable" \
	same "$(job f 1000 'stat -c %u /mnt/v/u && echo again >>/mnt/v/u && tail -1 /mnt/v/u')" "1000
again"
echo stopped >"$M/boxes/f/state"
echo "" >"$M/boxes/f/volumes"
rmdir "$M/boxes/f" # its range for the next box

# A box from before user namespaces: made with userns = off (host ids), then
# the daemon is upgraded (userns on): it moves at its next start.
pd_stop
sed -i "s|^\[paddock\]\$|[paddock]\nuserns = off|" "$PD_TMP/paddock.ini"
pd_start
mkdir "$M/boxes/old"
ok "with userns = off a box has no range and runs as host root" \
	same "$(db "SELECT uid_base FROM boxes WHERE name='old'"):$(job old 'cat /proc/self/uid_map' | tr -s ' ' | sed 's/^ //')" "0:0 0 4294967295"
job old 'mkdir -p /home/u && echo keep >/home/u/data && chown -R 1000:1000 /home/u && chmod 4755 /bin/busybox' >/dev/null
echo stopped >"$M/boxes/old/state"
ok "its files are host ids" same "$(stat -c %u "$M/boxes/old/root/home/u/data")" 1000
pd_stop
sed -i '/^userns = off$/d' "$PD_TMP/paddock.ini"
pd_start
ok "after the upgrade it starts" bash -c "echo running >'$M/boxes/old/state'"
base=$(db "SELECT uid_base FROM boxes WHERE name='old'")
ok "with a range of its own" bash -c "[ '$base' -ge $FIRST ] && [ \$(( $base % 65536 )) = 0 ]"
ok "its files kept: same content, same owner inside, writable by their user" \
	same "$(job old 1000 'cat /home/u/data && stat -c %u /home/u/data && echo more >>/home/u/data')" "keep
1000"
ok "on the host they moved into the range" same "$(stat -c %u "$M/boxes/old/root/home/u/data")" "$((base + 1000))"
ok "a setuid bit it set survives the move" same "$(stat -c %a "$M/boxes/old/root/bin/busybox")" 4755
ok "it runs in its user namespace" bash -c "[ \"\$(awk '/^Uid:/ {print \$2}' /proc/$(box_pid old)/status)\" = $base ]"
echo stopped >"$M/boxes/old/state"

pd_done
