#!/bin/sh
# battery.sh - the escape suite's attacks from inside a box, run as the
# box's root by tests/integration/test-escape.sh (busybox sh is enough).
# Each line it prints is one case: CASE<TAB>RESULT<TAB>DETAIL, RESULT being
# CONTAINED, ESCAPED, or HOST (judged by the test from the host); a case
# whose probe fails to report prints ERROR.
#
# What the host tells it (environment):
#   ESC_HOST_PIDS  host PIDs the box must not reach (the daemon, the other
#                  box's PID 1, the test itself, the host's PID 1)
#   ESC_SECRET     the other box's secret file (its path in that box)
#   ESC_TOKEN      that file's content
#   ESC_HOST_FILE  a file that exists on the host only
#   ESC_IPC_KEY, ESC_IPC_NAME   the other box's SysV key and /dev/shm and
#                  abstract socket name, holding ESC_TOKEN
#   ESC_KEY        a key description for the keyring case
#
# The attacks themselves are in escape-probe.c, next to this file.
P=/escape/escape-probe

run() {
	out=$("$P" "$@" 2>&1) || {
		printf '%s\tERROR\tthe probe failed: %s\n' "$1" "$(echo "$out" | tr '\n\t' '  ')"
		return
	}
	printf '%s\n' "$out"
}

# The kernel's own interfaces, closed by capabilities and seccomp.
run userns-map
run unshare-user
run bpf
run perf
run keyring "$ESC_KEY"
run open-by-handle
run modules
run kexec
run kernel-log
run raw-io
# Mounts, devices, /proc, /sys and cgroup files.
run mount
run mknod
run proc-kcore
run sysrq
run proc-sys
run sys-write
run cgroup-write
# The host's processes, the other box, the runtime's binaries.
# shellcheck disable=SC2086
run ptrace-host $ESC_HOST_PIDS
run proc-root "$ESC_SECRET" "$ESC_TOKEN" "${ESC_SECRET##*/}"
run host-paths "$ESC_SECRET" "$ESC_TOKEN"
run chroot "$ESC_HOST_FILE"
run ipc "$ESC_IPC_KEY" "$ESC_IPC_NAME" "$ESC_TOKEN"
run exe-init
# Memory-backed filesystems: bounded by their size (64 MiB each).
run fill /dev/shm 256
run fill /dev 256
