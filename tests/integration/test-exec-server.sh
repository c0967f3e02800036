#!/bin/bash
# The box's exec server (daemon/exec-proto.h): jobs are forked by the box's
# PID 1, not entered with crun exec. A job so started has the same
# credentials, capabilities, seccomp filter, no_new_privs, cgroup and
# namespaces as one that crun exec starts (the fallback, compared in the same
# box); the box's own processes, root included, cannot reach the server
# (ptrace, /proc/1/fd, pidfd_getfd, any socket path they can see); jobs
# survive a daemon restart; a job pins no copy of the host's mounts; and a
# box whose PID 1 has no server still runs jobs through crun exec.
. "$(dirname "$0")/lib.sh"

require_root
ATTACK_SRC=$TOP_SRCDIR/tests/exec-server-attack.c
pd_setup || exit 1
${CC:-cc} -static -O2 -D_GNU_SOURCE -o "$PD_TMP/attack" "$ATTACK_SRC" 2>"$PD_TMP/cc.log" ||
	skip_all "cannot build a static program: $(head -c 200 "$PD_TMP/cc.log")"
pd_start

B=$M/boxes/x
X=$B/exec
SOCK=$PD_TMP/run/exec/x

# job CMD [USER]: runs CMD in box x as a named job, prints its stdout;
# fails unless it exits 0. The job's name is left in $LAST and in the file
# $PD_TMP/last (job often runs in a subshell).
echo 0 >"$PD_TMP/n"
job() {
	local n
	n=$(($(cat "$PD_TMP/n") + 1))
	echo $n >"$PD_TMP/n"
	LAST=j$n
	echo "$LAST" >"$PD_TMP/last"
	mkdir "$X/$LAST" || return 1
	[ -z "${2:-}" ] || echo "$2" >"$X/$LAST/user" || return 1
	echo "$1" >"$X/$LAST/cmd" || return 1
	same "$(timeout 20 cat "$X/$LAST/exit")" 0 || {
		sed 's/^/# /' "$X/$LAST/output"
		return 1
	}
	cat "$X/$LAST/stdout"
}

# The host side of a job's directory.
job_dir() {
	local d
	for d in "$D"/boxes/*/jobs/"$1"; do
		[ -d "$d" ] && { echo "$d"; return 0; }
	done
	return 1
}

mkdir "$B"
echo running >"$B/state"
cp "$PD_TMP/attack" "$B/root/attack"

ok "the box's exec socket is root's alone (0600, in a 0700 directory)" \
	same "$(stat -c '%F %a %u' "$SOCK" "$(dirname "$SOCK")" | tr '\n' ' ')" \
	"socket 600 0 directory 700 0 "
ok "a job's parent is the box's PID 1" same "$(job 'grep ^PPid: /proc/self/status')" "PPid:	1"
ok "crun did not run it (no crun.log)" test ! -e "$(job_dir "$(cat "$PD_TMP/last")")/crun.log"

# What makes a process's privileges and confinement, as the process sees
# them. PPid differs by design (1 here, 0 under crun exec) and is left out.
PROBE='for f in Uid Gid Groups CapInh CapPrm CapEff CapBnd CapAmb NoNewPrivs Seccomp Seccomp_filters; do grep "^$f:" /proc/self/status; done
cat /proc/self/cgroup /proc/self/oom_score_adj /proc/self/loginuid 2>&1
for ns in cgroup ipc mnt net pid time user uts; do echo "$ns $(readlink /proc/self/ns/$ns)"; done
umask; ulimit -a; id; pwd; env | sort
cat /proc/self/attr/current 2>&1; echo; cat /proc/self/sessionid 2>&1; echo'

# compare USER: the probe through the server, then through crun exec (the
# server's socket moved away, as for a box whose PID 1 has none).
compare() {
	local a b
	a=$(job "$PROBE" "$1") || return 1
	mv "$SOCK" "$SOCK.away" || return 1
	b=$(job "$PROBE; grep ^PPid: /proc/self/status" "$1")
	mv "$SOCK.away" "$SOCK" || return 1
	[ -e "$(job_dir "$(cat "$PD_TMP/last")")/crun.log" ] || { diag "crun exec did not run the fallback"; return 1; }
	same "$(tail -n 1 <<<"$b")" "PPid:	0" || return 1
	same "$a" "$(sed '$d' <<<"$b")"
}
ok "as root: a job from the server and one from crun exec are confined alike" compare ""
ok "as user 1000: the same" compare 1000
ok "the box's jobs run in seccomp filter mode" same "$(job 'grep ^Seccomp: /proc/self/status')" "Seccomp:	2"

ok "a job is a session and process group of its own" \
	same "$(job 'set -- $(cut -d" " -f5,6 /proc/self/stat); [ "$1 $2" = "$$ $$" ] && echo yes')" yes

# The attack, as box root: every way to the server is closed.
ok "box root cannot ptrace PID 1, read its memory, take or open its fds, or find the socket" \
	same "$(job /attack | tr '\n' ' ')" \
	"ptrace EPERM vmread EPERM getfd EPERM procfd EACCES fdlink EACCES connect ENOENT "

# Signals: ctl reaches the command; the exact status is recorded.
mkdir "$X/sig"
echo 'trap "echo got TERM; exit 7" TERM; sleep 100 & wait' >"$X/sig/cmd"
ok "ctl signal TERM reaches the command" bash -c "
	for i in \$(seq 50); do [ -s '$X/sig/pid' ] && break; sleep 0.1; done
	sleep 0.3; echo 'signal TERM' >'$X/sig/ctl'"
ok "its trap ran and the exit code is exact" same "$(timeout 10 cat "$X/sig/exit"):$(cat "$X/sig/stdout")" "7:got TERM"
mkdir "$X/kill"
echo 'sleep 100' >"$X/kill/cmd"
ok "ctl kill ends it as killed SIGKILL" bash -c "
	for i in \$(seq 50); do [ -s '$X/kill/pid' ] && break; sleep 0.1; done
	echo kill >'$X/kill/ctl' && [ \"\$(timeout 10 cat '$X/kill/exit')\" = 137 ] &&
	[ \"\$(cat '$X/kill/status')\" = 'killed SIGKILL' ]"
ok "a command that cannot run is recorded: exit 127 and why" bash -c "
	mkdir '$X/bad' && echo /x > '$X/bad/cwd' && echo true > '$X/bad/cmd' &&
	[ \"\$(timeout 10 cat '$X/bad/exit')\" = 127 ] && grep -q 'cannot change to /x' '$X/bad/stderr'"
ok "stdin reaches the command; eof closes it" bash -c "
	mkdir '$X/in' && echo 'cat; echo end' > '$X/in/cmd' && printf 'abc\n' > '$X/in/stdin' &&
	echo eof > '$X/in/ctl' && [ \"\$(timeout 10 cat '$X/in/exit')\" = 0 ] &&
	[ \"\$(cat '$X/in/stdout')\" = 'abc
end' ]"

# One poll round of PID 1 with a new connection and a job's hang-up at once
# (PID 1 held stopped meanwhile): the new request is served, and PID 1
# keeps its own stdin and stdout (it once read the job's entry as a pending
# connection and closed fd 0; the next job's connection then took fd 0 and
# its command could not start).
box_init() {
	local p
	for p in $(cat "/sys/fs/cgroup/memory/$PD_CGROUP/x/cgroup.procs"); do
		[ "$(cat "/proc/$p/comm" 2>/dev/null)" = paddock-init ] && echo "$p"
	done
}
INIT_PID=$(box_init)
ok "a request and a job's hang-up in one round: the request is served" \
	same "$(python3 "$TOP_SRCDIR/tests/integration/exec-server-race.py" "$SOCK" "$INIT_PID")" "pid run exit"
ok "PID 1 keeps its fds 0, 1 and 2" bash -c "ls -l /proc/$INIT_PID/fd/0 /proc/$INIT_PID/fd/1 /proc/$INIT_PID/fd/2 >/dev/null"
ok "and the next job runs" same "$(job 'echo fine')" fine

# No copy of the host's mounts for the job's life: a mount made on the host
# before the job starts and removed while it runs is gone from every mount
# namespace (crun exec, in the private namespace it needs on hybrid cgroup
# hosts, kept one until the job ended).
PIN=$PD_TMP/pin
mkdir "$PIN"
mount -t tmpfs pd-pin "$PIN"
mkdir "$X/long"
echo 'sleep 30' >"$X/long/cmd"
ok "the long job runs" wait_for 10 test -s "$X/long/pid"
ok "its pid file holds its host PID" grep -q sleep "/proc/$(cat "$X/long/pid")/cmdline"
umount "$PIN"
# The job's supervisor and every process under it (under crun exec: crun
# and its private mount namespace), the command's mount namespace too.
pinned() {
	local todo p kids
	todo=$(cat "$(job_dir long)/supervisor.pid") || return 1
	while [ -n "$todo" ]; do
		set -- $todo
		p=$1
		shift
		todo="$*"
		grep -q " $PIN " "/proc/$p/mountinfo" 2>/dev/null && echo "$p $(tr '\0' ' ' <"/proc/$p/cmdline")"
		kids=$(cat /proc/"$p"/task/*/children 2>/dev/null)
		todo="$todo $kids"
		todo=${todo# }
	done
}
ok "the job's processes hold no copy of a host mount removed while it runs" same "$(pinned)" ""
echo kill >"$X/long/ctl"

# Jobs survive a daemon restart: the supervisor holds the connection to PID 1.
mkdir "$X/survive"
echo 'sleep 2; echo survived' >"$X/survive/cmd"
pd_stop
pd_start
ok "a job started before a daemon restart ends well after it" \
	same "$(timeout 20 cat "$X/survive/exit"):$(cat "$X/survive/stdout")" "0:survived"
ok "new jobs after the restart use the server" same "$(job 'grep ^PPid: /proc/self/status')" "PPid:	1"

ok "the box stops" bash -c "echo stopped > '$B/state'"
ok "its exec socket is gone" test ! -e "$SOCK"
ok "a restarted box gets a new server" bash -c "echo running > '$B/state'"
ok "and jobs use it" same "$(job 'grep ^PPid: /proc/self/status')" "PPid:	1"

# Keyrings, where the seccomp filter lets them be used: each job has a
# session keyring of its own, not PID 1's.
pd_stop
sed -i 's|^\[paddock\]$|[paddock]\nseccomp = off|' "$PD_TMP/paddock.ini"
pd_start
echo stopped >"$B/state"
echo running >"$B/state"
k1=$(job '/attack keyring')
k2=$(job '/attack keyring')
ok "seccomp = off: each job has a session keyring of its own" \
	bash -c "[ -n '$k1' ] && [ -n '$k2' ] && [ '$k1' != '$k2' ] && [ '$k1' -gt 0 ] 2>/dev/null"

# A PID 1 started without a server socket (a box whose socket path would not
# fit, or any runtime that passes no fd 3): it must sleep, not spin, and end
# on SIGTERM. Run here as PID 1 of a PID namespace of its own.
INIT=$(dirname "$PADDOCKD")/paddock-init
no_server_init() {
	local pid state i
	unshare --pid --fork "$INIT" 3>&- &
	pid=$!
	sleep 0.5
	# The child of unshare is the init (PID 1 in its namespace).
	i=$(cat "/proc/$pid/task/$pid/children" 2>/dev/null | awk '{print $1}')
	[ -n "$i" ] || { kill "$pid"; return 1; }
	read -r _ _ state _ <"/proc/$i/stat"
	sleep 0.5
	local t0 t1
	t0=$(awk '{print $14 + $15}' "/proc/$i/stat")
	sleep 0.5
	t1=$(awk '{print $14 + $15}' "/proc/$i/stat")
	kill -TERM "$i"
	timeout 5 tail --pid="$i" -f /dev/null || { kill -KILL "$i"; wait "$pid"; return 1; }
	wait "$pid"
	# Sleeping, and no more than a tick of CPU in half a second.
	[ "$state" = S ] && [ $((t1 - t0)) -le 1 ]
}
ok "a PID 1 without a server socket sleeps and ends on SIGTERM" no_server_init

pd_done
