#!/bin/bash
# The boxes' seccomp filter: inside a box, as its root, the system calls
# Docker's default profile refuses to a container with Docker's default
# capabilities fail with EPERM (clone3 with ENOSYS, so that libcs fall back
# to clone), through the native and the 32-bit x86 ABI, while ordinary work
# (a shell, files, fork, setuid) goes on; /proc/PID/status says seccomp
# mode 2. With `seccomp = off` the same box has no filter.
. "$(dirname "$0")/lib.sh"

require_root
PROBE_SRC=$TOP_SRCDIR/tests/seccomp-probe.c
pd_setup || exit 1
${CC:-cc} -static -O2 -D_GNU_SOURCE -o "$PD_TMP/probe" "$PROBE_SRC" 2>"$PD_TMP/cc.log" ||
	skip_all "cannot build a static program: $(head -c 200 "$PD_TMP/cc.log")"
pd_start

# job BOX CMD: runs CMD in the box, prints its stdout; fails unless it exits 0.
job() {
	echo "$2" >"$M/boxes/$1/exec/new" || return 1
	local last
	last=$(readlink "$M/boxes/$1/exec/last")
	same "$(timeout 20 cat "$M/boxes/$1/exec/$last/exit")" 0 || {
		sed 's/^/# /' "$M/boxes/$1/exec/$last/stderr"
		return 1
	}
	cat "$M/boxes/$1/exec/$last/stdout"
}

REFUSED="unshare_user unshare_user_i386 clone_newuser setns bpf perf_event_open keyctl add_key
request_key open_by_handle_at init_module finit_module kexec_load mount io_uring_setup"

# expect_probe BOX NAME RESULT: the probe's NAME call in BOX gives RESULT.
expect_probe() {
	local got
	got=$(job "$1" "/probe $2") || return 1
	same "$got" "$2 $3"
}

mkdir "$M/boxes/s"
cp "$PD_TMP/probe" "$M/boxes/s/root/probe"
ok "the probe runs in the box" expect_probe s fork OK
ok "the box's processes run in seccomp filter mode (2)" \
	same "$(job s 'grep ^Seccomp: /proc/self/status')" "Seccomp:	2"
ok "so does the box's PID 1" same "$(job s 'grep ^Seccomp: /proc/1/status')" "Seccomp:	2"
for call in $REFUSED; do
	ok "$call is refused with EPERM" expect_probe s "$call" EPERM
done
ok "clone3 gets ENOSYS (libc falls back to clone)" expect_probe s clone3 ENOSYS
ok "root may still change its uid and gid (setuid, setgid)" expect_probe s setuid OK
ok "a shell, pipes and files work" same "$(job s 'echo hi >/tmp/f && cat /tmp/f | tr a-z A-Z && rm /tmp/f')" HI
ok "ordinary tools work (ls, ps, id)" same "$(job s "ls / >/dev/null && ps >/dev/null && id -u")" 0
ok "the box stops cleanly" bash -c "echo stopped >'$M/boxes/s/state'"

# The same build with `seccomp = off`: no filter, and the probe says so.
pd_stop
sed -i 's|^\[paddock\]$|[paddock]\nseccomp = off|' "$PD_TMP/paddock.ini"
pd_start
mkdir "$M/boxes/n"
cp "$PD_TMP/probe" "$M/boxes/n/root/probe"
ok "seccomp = off: no filter (mode 0)" same "$(job n 'grep ^Seccomp: /proc/self/status')" "Seccomp:	0"
ok "seccomp = off: bpf reaches the kernel (EINVAL for a bad command)" expect_probe n bpf EINVAL

pd_done
