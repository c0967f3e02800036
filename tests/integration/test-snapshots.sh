#!/bin/bash
# Snapshots: stop freezes the box's changes into a layer, snapshot/fork/
# restore, read-only snapshot roots, deletion rules, garbage collection, and
# crash safety by fault injection (PADDOCK_FAULT=STEP makes paddockd kill
# itself at that step; see pd_fault() in common/util.h for the steps), and
# layer merging (layer_merge_depth = 4 here) keeping stacks shallow.
. "$(dirname "$0")/lib.sh"
PD_MERGE_DEPTH=4
pd_start

layers() { find "$D/layers" -mindepth 1 -maxdepth 1 -name 'L*' | wc -l; }
tmps() { find "$D/layers" -mindepth 1 -maxdepth 1 \( -name 'L*.tmp' -o -name 'L*.del' \) | wc -l; }
db() { python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); [print("|".join(map(str,r))) for r in c.execute(sys.argv[2])]' "$D/paddock.db" "$1"; }
referenced_layers() {
	db "SELECT layers FROM boxes UNION ALL SELECT layers FROM snapshots" | tr ',' '\n' | grep . | sort -un | wc -l
}
depth() { db "SELECT layers FROM boxes WHERE name = '$1'" | tr ',' '\n' | grep -c .; }
export -f layers tmps db depth

B=$M/boxes
mkdir "$B/web"
echo one >"$B/web/root/f1"
echo running >"$B/web/state"
echo two >"$B/web/root/f2"
echo stopped >"$B/web/state"
ok "a stop records a snapshot labelled stop" bash -c "ls '$B/web/snapshots' | grep -qx 'web-[0-9]*' && grep -qx stop $M/snapshots/\$(readlink '$B/web/snapshots/last')/label"
s1=$(readlink "$B/web/snapshots/last")
ok "the box's files are intact after the stop" bash -c "[ \"\$(cat '$B/web/root/f1' '$B/web/root/f2')\" = \"\$(printf 'one\ntwo')\" ]"
ok "a fresh empty upper after the freeze" bash -c "[ -z \"\$(ls -A $D/boxes/*/disk/upper)\" ]"
ok "one layer on disk" same "$(layers)" 1
echo running >"$B/web/state"
ok "resumed: same content inside the box" bash -c "[ \"\$(cat '$B/web/root/f1' '$B/web/root/f2')\" = \"\$(printf 'one\ntwo')\" ]"
ok "snapshot: box, created, size" bash -c "same \$(cat $M/snapshots/$s1/box) web && grep -q T $M/snapshots/$s1/created && [ \$(cat $M/snapshots/$s1/size) -gt 0 ]"
ok "box/snapshots entries lead to /snapshots/ID" same "$(readlink "$B/web/snapshots/$s1")" "../../../snapshots/$s1"
ok "snapshot root is readable" same "$(cat "$M/snapshots/$s1/root/f2")" two
ok "writes to a snapshot root fail with EROFS" write_expect EROFS "$M/snapshots/$s1/root/f1" x
ok "label is writable" bash -c "echo mine > $M/snapshots/$s1/label && same \"\$(cat $M/snapshots/$s1/label)\" mine"

# A running box's snapshot: paused, copied, resumed.
echo three >"$B/web/root/f3"
ok "snapshot of a running box" bash -c "echo live > '$B/web/snapshot'"
s2=$(readlink "$B/web/snapshots/last")
ok "it holds the running box's files" bash -c "same \"\$(cat $M/snapshots/$s2/root/f3)\" three && same \"\$(cat $M/snapshots/$s2/label)\" live"
ok "the box runs on, not paused" bash -c "pd_crun state web | grep -q '\"running\"'"
echo four >"$B/web/root/f4"

# Fork of a running box, then of a stopped one; both diverge.
ok "fork of a running box" bash -c "echo web2 > '$B/web/fork'"
ok "the fork has the files up to now" same "$(cat "$B/web2/root/f4")" four
ok "the fork is created, same image and type" bash -c "same \$(cat $B/web2/state) created && same \$(cat $B/web2/image) \$(cat $B/web/image)"
echo stopped >"$B/web/state"
ok "fork of a stopped box" bash -c "echo web3 > '$B/web/fork'"
echo mine >"$B/web/root/only-web"
echo theirs >"$B/web3/root/only-web3"
ok "the forks diverge independently" bash -c "[ ! -e '$B/web3/root/only-web' ] && [ ! -e '$B/web/root/only-web3' ] && same \"\$(cat '$B/web3/root/f4')\" four"
write_expect EEXIST "$B/web/fork" web2 >/dev/null
ok "fork onto an existing name: EEXIST" write_expect EEXIST "$B/web/fork" web2
ok "fork to a bad name: EINVAL" write_expect EINVAL "$B/web/fork" Bad/Name

# Restore: later changes go, earlier ones stay.
echo running >"$B/web/state"
echo five >"$B/web/root/f5"
ok "restore to the first snapshot" bash -c "echo $s1 > '$B/web/restore'"
ok "restore returns a running box to running" same "$(cat "$B/web/state")" running
ok "changes after the snapshot are gone, older ones there" bash -c "[ ! -e '$B/web/root/f3' ] && [ ! -e '$B/web/root/f5' ] && same \"\$(cat '$B/web/root/f2')\" two"
ok "restore to an unknown snapshot: ENOENT" write_expect ENOENT "$B/web/restore" nosuch-1

# Deletion: EBUSY while a box stands on it, with the reason.
ok "rmdir of a snapshot a box is built on: EBUSY" bash -c "! rmdir $M/snapshots/$s1 2>/dev/null && grep -q 'box web' $M/snapshots/$s1/error"
echo stopped >"$B/web/state"
rmdir "$B/web" "$B/web2" "$B/web3"
ok "after deleting the boxes, their snapshots remain" test -d "$M/snapshots/$s1"
ok "and can be deleted" bash -c "for s in \$(ls $M/snapshots); do rmdir $M/snapshots/\$s || exit 1; done"
ok "no orphan layers remain" same "$(layers)" 0
ok "no snapshot mounts remain" bash -c "! grep -q ' $PD_TMP/run/snapshots/' /proc/self/mountinfo"

# Layer merging: ten stop/start rounds, each writing and deleting; the
# stack stays at most 4 deep and the box shows exactly what a model of the
# same changes holds; older snapshots keep showing their own content.
MODEL=$PD_TMP/model
mkdir -p "$MODEL/w"
cp -a "$D/images/tiny/rootfs/etc" "$MODEL/etc"
# listing ROOT: every path under w and etc, with a symlink's target or a
# file's sha256 (busybox in the box, coreutils on the host: same output).
cat >"$PD_TMP/list.sh" <<'SH'
cd "${1:-/}" || exit 1
find w etc | LC_ALL=C sort | while read -r p; do
	if [ -L "$p" ]; then echo "$p -> $(readlink "$p")"
	elif [ -d "$p" ]; then echo "$p/"
	else echo "$p $(sha256sum <"$p" | cut -d' ' -f1)"; fi
done
SH
# round ROOT I: the changes of round I, applied under ROOT.
round() {
	local r=$1 i=$2
	mkdir -p "$r/w"
	echo "v$i" >"$r/w/f$i"
	rm -f "$r/w/f$((i - 2))"
	echo "$i" >"$r/w/counter"
	case $i in
	1) rm "$r/etc/hosts" ;;			     # a file from the image
	2) mkdir "$r/w/d"; echo a >"$r/w/d/a"; echo b >"$r/w/d/b"; ln -s f2 "$r/w/link" ;;
	3) echo mine >"$r/etc/hosts"; mkdir -p "$r/w/deep/er"; echo x >"$r/w/deep/er/x" ;;
	4) rm -rf "$r/w/d"; mkdir "$r/w/d"; echo c >"$r/w/d/c" ;; # a directory replaced
	5) rm -rf "$r/w/d"; echo file >"$r/w/d"; rm "$r/w/link"; ln -s f5 "$r/w/link" ;;
	6) rm "$r/etc/hosts"; rm -rf "$r/w/deep/er" ;;
	7) rm "$r/w/d"; mkdir -p "$r/w/d/e"; echo e >"$r/w/d/e/e" ;;
	8) rm "$r/etc/hostname"; mkdir "$r/etc/x"; echo y >"$r/etc/x/y" ;; # exec needs passwd
	9) rm -rf "$r/w/deep"; echo deep >"$r/w/deep" ;;
	10) mkdir "$r/etc/hosts"; echo in >"$r/etc/hosts/dir" ;;
	esac
}
# The newest snapshot of box $1.
newest_snapshot() { readlink "$B/$1/snapshots/last"; }
mkdir "$B/deep"
deep_ok=0
for i in 1 2 3 4 5 6 7 8 9 10; do
	echo running >"$B/deep/state"
	round "$B/deep/root" "$i"
	round "$MODEL" "$i"
	echo stopped >"$B/deep/state"
	[ "$(depth deep)" -le 4 ] || { diag "round $i: depth $(depth deep)"; deep_ok=1; }
	case $i in
	3) snap3=$(newest_snapshot deep); cp -a "$MODEL" "$PD_TMP/model3" ;;
	7) snap7=$(newest_snapshot deep); cp -a "$MODEL" "$PD_TMP/model7" ;;
	esac
done
ok "ten rounds: the stack never grew past layer_merge_depth (4)" same "$deep_ok" 0
ok "stop snapshots were taken each round" same "$(ls "$B/deep/snapshots" | grep -c -- -)" 10
cp "$PD_TMP/list.sh" "$B/deep/root/tmp/list.sh"
echo running >"$B/deep/state"
echo 'sh /tmp/list.sh /' >"$B/deep/exec/new"
timeout 20 cat "$B/deep/exec/last/exit" >/dev/null
bash "$PD_TMP/list.sh" "$MODEL" >"$PD_TMP/want"
cat "$B/deep/exec/last/stdout" >"$PD_TMP/got"
ok "inside the box, the files equal the model exactly" diff "$PD_TMP/want" "$PD_TMP/got"
ok "the model saw every kind of change" bash -c "grep -q '^etc/hosts/\$' '$PD_TMP/want' && ! grep -q '^etc/hostname ' '$PD_TMP/want' && grep -q '^w/link -> f5' '$PD_TMP/want'"
ok "an older snapshot (round 3) still shows its own content" bash -c "diff <(bash '$PD_TMP/list.sh' '$PD_TMP/model3') <(bash '$PD_TMP/list.sh' '$M/snapshots/$snap3/root')"
ok "so does round 7's" bash -c "diff <(bash '$PD_TMP/list.sh' '$PD_TMP/model7') <(bash '$PD_TMP/list.sh' '$M/snapshots/$snap7/root')"
ok "restoring round 3's snapshot brings its content back" bash -c "echo $snap3 > '$B/deep/restore' && diff <(bash '$PD_TMP/list.sh' '$PD_TMP/model3') <(bash '$PD_TMP/list.sh' '$B/deep/root')"
echo stopped >"$B/deep/state"
rmdir "$B/deep"
for s in $(ls "$M/snapshots"); do rmdir "$M/snapshots/$s"; done
ok "after the box and its snapshots go, no layer remains" same "$(layers)" 0

# Crash safety: a kill at each step leaves the old or the new state.
steps="freeze-recorded freeze-renamed freeze-upper copy-paused copy-copied copy-renamed fork-committed restore-recorded restore-moved restore-committed snapdel-deleted gc-renamed merge-copied merge-renamed merge-committed"
for step in $steps; do
	pd_stop
	PADDOCK_FAULT=$step pd_start
	name=c-${step%%-*}-$RANDOM
	mkdir "$B/$name"
	echo kept >"$B/$name/root/kept"
	case $step in
	merge-*)
		# Four stops fill the stack (4 layers); the fifth merges.
		for k in 1 2 3 4 5; do
			echo running >"$B/$name/state" 2>/dev/null
			echo "$k" >"$B/$name/root/m$k" 2>/dev/null
			echo stopped >"$B/$name/state" 2>/dev/null
		done ;;
	copy-*) echo running >"$B/$name/state"; echo x >"$B/$name/snapshot" 2>/dev/null ;;
	fork-*) echo "$name-f" >"$B/$name/fork" 2>/dev/null ;;
	restore-*)
		echo base >"$B/$name/snapshot"
		sid=$(readlink "$B/$name/snapshots/last")
		echo later >"$B/$name/root/later"
		echo "$sid" >"$B/$name/restore" 2>/dev/null ;;
	snapdel-* | gc-*)
		# A running box's snapshot: no box stands on its layer.
		echo running >"$B/$name/state"
		echo base >"$B/$name/snapshot"
		sid=$(readlink "$B/$name/snapshots/last")
		rmdir "$M/snapshots/$sid" 2>/dev/null ;;
	*) echo x >"$B/$name/snapshot" 2>/dev/null ;;
	esac
	wait_for 10 bash -c "! kill -0 $PD_PID 2>/dev/null"
	ok "$step: the daemon died at the step" bash -c "! kill -0 $PD_PID 2>/dev/null"
	PD_PID=
	pd_start
	ok "$step: the box's files are intact" same "$(cat "$B/$name/root/kept" 2>/dev/null)" kept
	ok "$step: no intents, no L*.tmp or L*.del" bash -c "[ -z \"\$(db 'SELECT id FROM intents')\" ] && same \$(tmps) 0"
	ok "$step: no paused container" bash -c "! pd_crun list 2>/dev/null | grep -q paused"
	ok "$step: every layer on disk is referenced, every reference on disk" bash -c "
		for l in \$(db 'SELECT layers FROM boxes UNION ALL SELECT layers FROM snapshots' | tr ',' '\n' | grep . | sort -u); do [ -e $D/layers/L\$l ] || exit 1; done
		same \$(layers) \$(db 'SELECT layers FROM boxes UNION ALL SELECT layers FROM snapshots' | tr ',' '\n' | grep . | sort -u | wc -l)"
	case $step in
	restore-*) ok "$step: an interrupted restore is finished (later changes gone, base kept)" bash -c "[ ! -e '$B/$name/root/later' ] && [ -e '$B/$name/root/kept' ]" ;;
	snapdel-*) ok "$step: the snapshot is gone (its row delete was the commit)" test ! -e "$M/snapshots/$sid" ;;
	merge-committed) ok "$step: the merged stack is in force" bash -c "[ \$(depth $name) -le 4 ] && same \"\$(cat '$B/$name/root/m1' '$B/$name/root/m5')\" \"\$(printf '1\n5')\"" ;;
	merge-*) ok "$step: the old stack is in force, whole" bash -c "same \$(depth $name) 5 && same \"\$(cat '$B/$name/root/m1' '$B/$name/root/m5')\" \"\$(printf '1\n5')\"" ;;
	fork-*) ok "$step: the fork is whole or absent" bash -c "[ ! -e '$B/$name-f' ] || same \"\$(cat '$B/$name-f/root/kept')\" kept" ;;
	esac
	ok "$step: no leaked mounts" bash -c "[ \$(grep -c '$PD_TMP/run/snapshots/' /proc/self/mountinfo) -eq 0 ]"
done

pd_done
