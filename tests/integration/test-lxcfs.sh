#!/bin/bash
# What a box sees of itself: lxcfs, run by the daemon, bound over the box's
# /proc/meminfo, cpuinfo, stat, uptime, swaps, diskstats, loadavg and
# /sys/devices/system/cpu/online. A box reads its type's memory and CPUs
# and its own uptime; a live change of its type shows at once; two boxes of
# different types each read their own; the box cannot write the files or
# unmount them; local users cannot reach lxcfs's mount. lxcfs killed: the
# daemon starts it again and binds the new views into running boxes;
# daemon stopped: no lxcfs left, running boxes read the kernel's files
# (not errors) until the next daemon binds them again; daemon killed:
# its lxcfs is ended by the next start. `lxcfs = off` and a missing
# binary: boxes read the host's values. The debian image (built once per
# run, shared): procps `free`, `uptime`, and what nproc / getconf / Python
# see.
. "$(dirname "$0")/lib.sh"

require_root
command -v lxcfs >/dev/null || skip_all "needs lxcfs (scripts/install-deps installs it)"
pd_setup || exit 1
cat >>"$PD_TMP/paddock.ini" <<'INI'
[types.big]
cpus = 2
memory = 128M
pids = 256
disk = 1G
INI
LX=$PD_TMP/run/lxcfs.d/lxcfs
HOST_CPUS=$(nproc --all)
# CPUs lxcfs shows for a CPU quota of $1 (fraction): rounded up, at most
# the host's.
cpus_for() {
	python3 -c "import math,sys; print(min(math.ceil(float(sys.argv[1])), int(sys.argv[2])))" "$1" "$HOST_CPUS"
}
host_kb() {
	awk '/^MemTotal:/ {print $2}' /proc/meminfo
}
pd_start

memtotal() {
	pd_job "$1" "awk '/^MemTotal:/ {print \$2}' /proc/meminfo"
}
box_cpus() {
	pd_job "$1" 'grep -c ^processor /proc/cpuinfo'
}
stat_cpus() {
	pd_job "$1" "grep -c '^cpu[0-9]' /proc/stat"
}
# new_box NAME TYPE: a running box of that type.
new_box() {
	mkdir "$M/boxes/$1" && echo "$2" >"$M/boxes/$1/type" && echo running >"$M/boxes/$1/state"
}
lxcfs_pid() {
	cat "$LX.pid" 2>/dev/null
}
lxcfs_mounted() {
	grep -q " $LX [^ ]* - fuse.lxcfs " /proc/self/mountinfo
}
lxcfs_serving() {
	local pid
	pid=$(lxcfs_pid) && [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && lxcfs_mounted
}
# The box's mount table lists each view as a read-only fuse.lxcfs mount.
views_in_box() {
	local table n
	table=$(pd_job "$1" 'cat /proc/self/mountinfo') || return 1
	n=$(echo "$table" | awk '{
		for (i = 7; i < NF; i++)
			if ($i == "-")
				break
		if ($(i + 1) == "fuse.lxcfs" && $6 ~ /^ro,/)
			print $5
	}' | sort | tr '\n' ' ')
	same "$n" "/proc/cpuinfo /proc/diskstats /proc/loadavg /proc/meminfo /proc/stat /proc/swaps /proc/uptime /sys/devices/system/cpu/online "
}

ok "the daemon runs lxcfs on RUN/lxcfs" lxcfs_serving
ok "its pidfile names a process of the daemon's" \
	same "$(awk '{print $4}' "/proc/$(lxcfs_pid)/stat")" "$PD_PID"

new_box a tiny
ok "box a (tiny) runs" same "$(cat "$M/boxes/a/state")" running
ok "every view is a read-only lxcfs mount in the box" views_in_box a
ok "a: MemTotal is the type's memory (64M), not the host's" same "$(memtotal a)" 65536
ok "a: /proc/cpuinfo lists the type's CPUs (0.5 -> 1)" same "$(box_cpus a)" "$(cpus_for 0.5)"
ok "a: /proc/stat has as many cpuN lines" same "$(stat_cpus a)" "$(cpus_for 0.5)"
# online is read with read(2) (awk), as glibc's sysconf does: lxcfs 5.0
# serves it through the page cache, where sendfile(2) (busybox cat) may
# get it cut to the length another box read last (README).
online() {
	pd_job "$1" 'awk 1 /sys/devices/system/cpu/online'
}
ok "a: /sys/devices/system/cpu/online says 0" same "$(online a)" 0
ok "a: no swap (SwapTotal 0, /proc/swaps empty)" \
	same "$(pd_job a "awk '/^SwapTotal:/ {print \$2}' /proc/meminfo; tail -n +2 /proc/swaps | wc -l")" "0
0"
up=$(pd_job a 'cut -d. -f1 /proc/uptime')
host_up=$(cut -d. -f1 /proc/uptime)
ok "a: /proc/uptime is the box's (${up}s), not the host's (${host_up}s)" \
	test -n "$up" -a "${up:-99}" -lt 20 -a "$host_up" -gt $((${up:-0} + 10))
sleep 2
ok "a: its uptime runs" test "$(pd_job a 'cut -d. -f1 /proc/uptime')" -ge $((up + 2))
ok "a: /proc/loadavg reads five fields" \
	same "$(pd_job a 'wc -w </proc/loadavg')" 5

# A live resize shows at once: lxcfs reads the cgroup at each read.
ok "resize a to big through type" bash -c "echo big >'$M/boxes/a/type'"
ok "a: MemTotal follows (128M)" same "$(memtotal a)" 131072
ok "a: the CPUs follow (2, at most the host's)" same "$(box_cpus a)" "$(cpus_for 2)"
ok "a: so does /sys/devices/system/cpu/online" \
	same "$(online a)" "$([ "$(cpus_for 2)" = 1 ] && echo 0 || echo "0-$(($(cpus_for 2) - 1))")"
ok "resize a back to tiny" bash -c "echo tiny >'$M/boxes/a/type'"
ok "a: MemTotal back to 64M" same "$(memtotal a)" 65536

# Another box of another type: each reads its own values through the same
# files (lxcfs answers by the reader's box).
new_box b big
ok "b (big) reads 128M while a (tiny) reads 64M" \
	same "$(memtotal b) $(memtotal a)" "131072 65536"
ok "b: its own CPUs" same "$(box_cpus b)" "$(cpus_for 2)"
ok "b: its own online CPUs, right after a read a's" \
	same "$(online a) $(online b)" "0 $([ "$(cpus_for 2)" = 1 ] && echo 0 || echo "0-$(($(cpus_for 2) - 1))")"
ok "a: still its own CPUs" same "$(box_cpus a)" "$(cpus_for 0.5)"

# Attacks from inside: box root cannot write the files, replace them,
# unmount them or mount over them; the values stay the box's.
refused() { # BOX CMD: CMD must fail in the box
	local out
	out=$(pd_job "$1" "$2 2>&1; echo rc=\$?") || return 1
	case $out in
	*rc=0) diag "$2 succeeded: $out"; return 1 ;;
	esac
}
ok "a: echo >/proc/meminfo is refused" refused a 'echo 999999 >/proc/meminfo'
ok "a: echo >/proc/uptime is refused" refused a 'echo 1 >/proc/uptime'
ok "a: echo >/sys/devices/system/cpu/online is refused" refused a 'echo 0-63 >/sys/devices/system/cpu/online'
ok "a: umount /proc/meminfo is refused" refused a 'umount /proc/meminfo'
ok "a: umount -l /proc/meminfo is refused" refused a 'umount -l /proc/meminfo'
ok "a: a bind mount over /proc/meminfo is refused" refused a 'mount --bind /etc/passwd /proc/meminfo'
ok "a: mv over /proc/meminfo is refused" refused a 'echo x >/tmp/m && mv /tmp/m /proc/meminfo'
ok "a: rm /proc/meminfo is refused" refused a 'rm -f /proc/meminfo'
ok "a: after all that, MemTotal is still 64M" same "$(memtotal a)" 65536
ok "b: and b's still 128M" same "$(memtotal b)" 131072
# Local users other than root and the group cannot reach lxcfs's mount
# (RUN is 0750 root:GROUP).
ok "an unprivileged user cannot read RUN/lxcfs" \
	bash -c "! setpriv --reuid=65534 --regid=65534 --clear-groups cat '$LX/proc/meminfo' 2>/dev/null"

# lxcfs killed: the daemon starts another, binds its views into the running
# boxes, and boxes started afterwards get them too.
old=$(lxcfs_pid)
kill -KILL "$old"
new_lxcfs() {
	local p
	p=$(lxcfs_pid)
	[ -n "$p" ] && [ "$p" != "$old" ] && lxcfs_serving
}
ok "lxcfs killed: the daemon starts a new one" wait_for 15 new_lxcfs
ok "the log says lxcfs ended and was started again" \
	grep -q "lxcfs (pid $old) was killed by signal 9.*starting it again" "$PD_TMP/paddockd.log"
a_back() {
	[ "$(memtotal a 2>/dev/null)" = 65536 ]
}
ok "a: its views are bound again (MemTotal 64M)" wait_for 10 a_back
ok "a: every view is a read-only lxcfs mount again, none stacked on a dead one" views_in_box a
ok "a: /proc/uptime reads again" test -n "$(pd_job a 'cat /proc/uptime')"
ok "b: 128M again" same "$(memtotal b)" 131072
new_box c tiny
ok "c, started after the restart, gets the views" same "$(memtotal c)" 65536
ok "c: every view" views_in_box c

# Daemon stop: lxcfs ends with it, nothing is left mounted; the boxes run
# on and read the kernel's files (not ENOTCONN) until the next start.
lx_before=$(lxcfs_pid)
pd_stop
ok "daemon stopped: its lxcfs is gone" bash -c "! kill -0 $lx_before 2>/dev/null"
ok "daemon stopped: nothing is mounted on RUN/lxcfs" bash -c "! grep -q ' $LX ' /proc/self/mountinfo"
A_PID=$(pd_crun state a | python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])')
in_a() { # the box's file, read from inside its namespaces
	nsenter -t "$A_PID" -m -p -- cat "$1"
}
ok "box a still runs" kill -0 "$A_PID"
ok "a, daemon down: /proc/meminfo reads (the kernel's)" \
	same "$(in_a /proc/meminfo | awk '/^MemTotal:/ {print $2}')" "$(host_kb)"
ok "a, daemon down: /proc/uptime reads" test -n "$(in_a /proc/uptime)"
pd_start
ok "daemon started: a's views are bound again" wait_for 10 a_back
ok "a, adopted: every view" views_in_box a

# Daemon killed with SIGKILL: its lxcfs runs on (the boxes keep their
# views); the next start ends it and starts its own.
lx_before=$(lxcfs_pid)
pd_kill9
ok "daemon killed: its lxcfs runs on" kill -0 "$lx_before"
ok "daemon killed: a keeps its views" \
	same "$(in_a /proc/meminfo | awk '/^MemTotal:/ {print $2}')" 65536
pd_start
ok "the next start ends the lxcfs left behind" wait_for 10 bash -c "! kill -0 $lx_before 2>/dev/null"
ok "and serves its own" bash -c "p=\$(cat '$LX.pid'); [ -n \"\$p\" ] && [ \"\$p\" != $lx_before ] && kill -0 \$p"
ok "the log says so" grep -q "lxcfs: ended the one an earlier paddockd left" "$PD_TMP/paddockd.log"
ok "a: its own values, with the new lxcfs" wait_for 10 a_back
ok "one lxcfs mount on RUN/lxcfs, not two" same "$(grep -c " $LX " /proc/self/mountinfo)" 1

# lxcfs = off: no lxcfs; running and new boxes read the kernel's files.
pd_stop
sed -i 's|^\[paddock\]$|[paddock]\nlxcfs = off|' "$PD_TMP/paddock.ini"
pd_start
ok "lxcfs = off: no lxcfs runs for this daemon" bash -c "! test -s '$LX.pid' && ! grep -q ' $LX ' /proc/self/mountinfo"
ok "lxcfs = off: a reads the host's MemTotal" same "$(memtotal a)" "$(host_kb)"
new_box d tiny
ok "lxcfs = off: a new box reads the host's MemTotal" same "$(memtotal d)" "$(host_kb)"
ok "lxcfs = off: and the host's CPUs" same "$(box_cpus d)" "$(grep -c ^processor /proc/cpuinfo)"

# A binary that is missing: logged, boxes start without the views.
pd_stop
sed -i 's|^lxcfs = off$|lxcfs = /nonexistent/lxcfs|' "$PD_TMP/paddock.ini"
pd_start
ok "a missing lxcfs is logged" \
	grep -q "lxcfs not found at /nonexistent/lxcfs.*boxes start without lxcfs's views" "$PD_TMP/paddockd.log"
new_box e tiny
ok "without lxcfs a box starts and reads the host's MemTotal" same "$(memtotal e)" "$(host_kb)"
for b in a b c d e; do
	echo stopped >"$M/boxes/$b/state"
done

# The debian image: procps free and uptime, and what the CPU-count tools
# see (nproc: the affinity mask, the host's CPUs; getconf and Python:
# /sys/devices/system/cpu/online, the box's).
# Built once per run and shared with the other tests that use it.
if pd_debian_cache; then
	pd_stop
	sed -i 's|^lxcfs = /nonexistent/lxcfs$|lxcfs = on|' "$PD_TMP/paddock.ini"
	ln -sfn "$PD_IMAGES/debian" "$D/images/debian"
	pd_start
	mkdir "$M/boxes/deb" && echo debian >"$M/boxes/deb/image" && echo tiny >"$M/boxes/deb/type" &&
		echo running >"$M/boxes/deb/state"
	ok "debian: free -b shows the type's memory" \
		same "$(pd_job deb "free -b | awk '/^Mem:/ {print \$2}'")" 67108864
	ok "debian: free shows no swap" same "$(pd_job deb "free -b | awk '/^Swap:/ {print \$2}'")" 0
	out=$(pd_job deb uptime)
	ok "debian: uptime: the box's ($out)" bash -c "[[ '$out' == *' up 0 min'* ]]"
	ok "debian: nproc counts the host's CPUs (affinity; not pinned)" same "$(pd_job deb nproc)" "$HOST_CPUS"
	ok "debian: getconf _NPROCESSORS_ONLN counts the box's" \
		same "$(pd_job deb 'getconf _NPROCESSORS_ONLN')" "$(cpus_for 0.5)"
	ok "debian: Python's os.cpu_count() counts the box's" \
		same "$(pd_job deb "python3 -c 'import os; print(os.cpu_count())'")" "$(cpus_for 0.5)"
	ok "resize deb to big" bash -c "echo big >'$M/boxes/deb/type'"
	ok "debian: free follows the resize" \
		same "$(pd_job deb "free -b | awk '/^Mem:/ {print \$2}'")" 134217728
	echo stopped >"$M/boxes/deb/state"
else
	diag "the debian image cannot be built: its free, uptime and nproc are not checked"
fi

pd_done
