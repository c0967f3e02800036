#!/bin/bash
# paddock-exec, the per-job supervisor, against a real box: streams land in
# their files byte-exact and in order, stdin goes through stdin.fifo, output
# is capped with a marker, exit codes and kills are recorded, the supervisor
# outlives its caller, and status is written last.
. "$(dirname "$0")/lib.sh"
pd_start

EXEC=${PADDOCK_EXEC:-$TOP_BUILDDIR/daemon/paddock-exec}
mkdir "$M/boxes/x"
echo running >"$M/boxes/x/state"
[ "$(cat "$M/boxes/x/state")" = running ] || { diag "box x did not start"; exit 1; }
# As the daemon decides it: crun needs the private namespace on hybrid hosts.
private_ns=false
mountpoint -q /sys/fs/cgroup/unified 2>/dev/null && private_ns=true

# spec NAME [KEY=JSON...] -- ARGV...: creates $PD_TMP/jobs/NAME with a
# spec.json for box x, and prints the job directory.
spec() {
	local name=$1 dir=$PD_TMP/jobs/$1
	shift
	mkdir -p "$dir"
	python3 - "$dir/spec.json" "$PD_TMP/run/crun" "$private_ns" "$@" <<'PY'
import json, sys
path, root, private_ns = sys.argv[1:4]
rest = sys.argv[4:]
sep = rest.index("--")
spec = {"container": "x", "crun": "/usr/bin/crun", "crun_root": root,
        "private_ns": private_ns == "true", "user": "0:0", "cwd": "/",
        "env": ["PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root"],
        "argv": rest[sep + 1:], "log_max": 67108864}
for kv in rest[:sep]:
    k, v = kv.split("=", 1)
    spec[k] = json.loads(v)
json.dump(spec, open(path, "w"))
PY
	echo "$dir"
}

# job NAME [KEY=JSON...] -- ARGV...: writes the spec and starts the
# supervisor; prints the job directory.
job() {
	local dir
	dir=$(spec "$@") || return 1
	"$EXEC" "$dir" || return 1
	echo "$dir"
}

final() {
	grep -Eq '^(exited|killed) ' "$1/status" 2>/dev/null
}

# wait_end DIR [SECONDS]
wait_end() {
	wait_for "${2:-30}" final "$1"
}

sup_alive() {
	kill -0 "$(cat "$1/supervisor.pid")" 2>/dev/null
}

rfc3339() {
	grep -Eqx '[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z' "$1"
}
export -f final sup_alive

# -- Basics: streams, order, exit code ---------------------------------------
# The command writes each next line once the previous one is in output
# (a line on stdin lets it go on): the order the supervisor sees is the
# order written, whatever the load.
J=$(job basic -- /bin/sh -c 'echo out1; read a; echo err1 >&2; read a; echo out2; exit 3')
ok "paddock-exec returns 0 and supervisor.pid is there when it does" test -s "$J/supervisor.pid"
ok "the supervisor runs in a session of its own" \
	same "$(ps -o sid= -p "$(cat "$J/supervisor.pid")" | tr -d ' ')" "$(cat "$J/supervisor.pid")"
wait_for 10 grep -qx out1 "$J/output" && echo >"$J/stdin.fifo"
wait_for 10 grep -qx err1 "$J/output" && echo >"$J/stdin.fifo"
ok "the job ends" wait_end "$J"
ok "stdout holds stdout" same "$(cat "$J/stdout")" "$(printf 'out1\nout2')"
ok "stderr holds stderr" same "$(cat "$J/stderr")" "err1"
ok "output interleaves both in order" same "$(cat "$J/output")" "$(printf 'out1\nerr1\nout2')"
ok "exit is 3" same "$(cat "$J/exit")" 3
ok "status is exited 3" same "$(cat "$J/status")" "exited 3"
ok "started is RFC 3339" rfc3339 "$J/started"
ok "ended is RFC 3339" rfc3339 "$J/ended"
ok "pid holds the command's PID" grep -Eq '^[0-9]+$' "$J/pid"
ok "the supervisor is gone after the job" wait_for 5 bash -c "! sup_alive '$J'"
ok "no temporary files are left" same "$(ls -A "$J" | grep -c '^\.')" 0

J=$(job ids user='"1000:1000"' cwd='"/tmp"' env='["PATH=/bin", "FOO=bar baz"]' -- \
	/bin/sh -c 'id -u; id -g; pwd; echo "$FOO"')
wait_end "$J"
ok "user, cwd and env are applied" same "$(cat "$J/stdout")" "$(printf '1000\n1000\n/tmp\nbar baz')"

J=$(job fds -- /bin/ls /proc/self/fd)
wait_end "$J"
ok "the command gets stdio only (ls sees 0 1 2 and its own 3)" \
	same "$(tr '\n' ' ' <"$J/stdout")" "0 1 2 3 "

# -- Binary output ------------------------------------------------------------
J=$(job binary -- /bin/sh -c 'head -c 10485760 /dev/urandom >/tmp/blob && cat /tmp/blob &&
	sha256sum /tmp/blob | cut -d" " -f1 >&2; rm -f /tmp/blob')
wait_end "$J" 60
ok "10 MiB of binary stdout is stored whole" same "$(stat -c %s "$J/stdout")" 10485760
ok "its sha256 matches the one taken in the box" \
	same "$(sha256sum <"$J/stdout" | cut -d' ' -f1)" "$(cat "$J/stderr")"
ok "output holds both streams" same "$(stat -c %s "$J/output")" $((10485760 + 65))
ok "binary job exited 0" same "$(cat "$J/status")" "exited 0"

# -- stdin ---------------------------------------------------------------------
head -c 300000 /dev/urandom >"$PD_TMP/in.bin"
J=$(job stdin -- /bin/cat)
# The supervisor makes stdin.fifo after paddock-exec has returned (the
# daemon makes it before it calls paddock-exec): a write before it exists
# would make a regular file.
ok "stdin.fifo is a FIFO" wait_for 10 test -p "$J/stdin.fifo"
ok "writing to stdin.fifo does not block (300 kB, more than a pipe holds)" \
	timeout 10 bash -c "cat '$PD_TMP/in.bin' >'$J/stdin.fifo'"
wait_for 10 bash -c "[ \$(stat -c %s '$J/stdout') -ge 300000 ]"
sleep 0.3
ok "without EOF, stdin stays open and the job runs" same "$(cat "$J/status")" running
ok "a running job has a pid file" test -s "$J/pid"
ok "a second supervisor for a running job is refused (1)" \
	bash -c "'$EXEC' '$J' 2>/dev/null; [ \$? -eq 1 ]"
ok "while it runs, the supervisor holds a lock on the job directory" \
	bash -c "! flock -n -s '$J' true"
printf 'tail\n' >"$J/stdin.fifo"
kill -USR1 "$(cat "$J/supervisor.pid")"
ok "SIGUSR1 closes stdin after delivering what was written" wait_end "$J"
ok "stdout equals stdin, byte for byte" \
	cmp "$J/stdout" <(cat "$PD_TMP/in.bin" - <<<tail)
ok "cat exited 0" same "$(cat "$J/status")" "exited 0"
ok "the lock is free once the supervisor is gone" wait_for 5 flock -n -s "$J" true

# Right after paddock-exec returns: the signal must wait for the supervisor,
# not kill it.
J=$(job stdin-empty -- /bin/sh -c 'wc -c')
kill -USR1 "$(cat "$J/supervisor.pid")"
ok "SIGUSR1 with nothing written gives the command EOF" wait_end "$J"
ok "it read nothing" same "$(tr -d ' ' <"$J/stdout")" 0

# 2 MB is more than the pipe and the supervisor's 1 MiB buffer hold: the
# writer waits while the command does not read, and is let go when it ends.
J=$(job stdin-unread -- /bin/sh -c 'exec 0<&-; sleep 1; echo done')
timeout 20 bash -c "head -c 2000000 /dev/zero >'$J/stdin.fifo'" 2>/dev/null &
writer=$!
ok "a job that does not read its stdin is not held up by a writer" wait_end "$J" 10
ok "and ends normally" same "$(cat "$J/status"):$(cat "$J/stdout")" "exited 0:done"
ok "the waiting writer is let go when the job ends" \
	wait_for 5 bash -c "! kill -0 $writer"
wait "$writer"
ok "(not by the timeout)" test $? -ne 124

# -- Caps ----------------------------------------------------------------------
J=$(job cap log_max=1000 -- /bin/sh -c 'head -c 5000 /dev/zero | tr "\0" a')
wait_end "$J"
want() {
	head -c 1000 /dev/zero | tr '\0' a
	printf '\n[paddock: %s capped at 1000 bytes; the rest is dropped]\n' "$1"
	printf '[paddock: 4000 bytes dropped]\n'
}
ok "stdout is capped, marked, and counts what was dropped" cmp "$J/stdout" <(want stdout)
ok "output is capped the same way" cmp "$J/output" <(want output)
ok "stderr, under the cap, is untouched" same "$(stat -c %s "$J/stderr")" 0
ok "a capped job ends normally" same "$(cat "$J/status")" "exited 0"

J=$(job flood log_max=1000 -- /bin/sh -c 'head -c 50000000 /dev/zero; echo bye >&2')
ok "50 MB over a 1000-byte cap: the job never blocks" wait_end "$J" 60
ok "the file stays small" test "$(stat -c %s "$J/stdout")" -lt 1200
ok "the dropped count is exact" grep -qx '\[paddock: 49999000 bytes dropped\]' "$J/stdout"
ok "stderr still gets its line" same "$(cat "$J/stderr")" bye

# -- Signals -------------------------------------------------------------------
J=$(job killed -- /bin/sh -c 'echo ready; exec sleep 60')
wait_for 10 grep -q ready "$J/stdout"
kill -KILL "$(cat "$J/pid")"
ok "a command killed by SIGKILL ends the job" wait_end "$J"
ok "status is killed SIGKILL" same "$(cat "$J/status")" "killed SIGKILL"
ok "exit is 128+9" same "$(cat "$J/exit")" 137

J=$(job term -- /bin/sh -c 'trap "echo got TERM; exit 7" TERM; echo ready; while :; do sleep 0.1; done')
wait_for 10 grep -q ready "$J/stdout"
kill -TERM "$(cat "$J/supervisor.pid")"
ok "SIGTERM to the supervisor reaches the command" wait_end "$J"
ok "the command's handler ran" grep -q "got TERM" "$J/stdout"
ok "and its exit is recorded" same "$(cat "$J/status")" "exited 7"

# -- Leftovers and lifetimes ----------------------------------------------------
# Timed from the command's output on, not from its start (crun exec is
# slow under load): the drain bound is 2 s.
J=$(job background -- /bin/sh -c 'sleep 60 & echo bg')
wait_for 20 grep -q bg "$J/stdout"
start=$(date +%s)
ok "a background process holding the pipes does not keep the job running" wait_end "$J" 10
ok "it ends within the drain bound" test $(($(date +%s) - start)) -le 5
ok "its output before exit is there" same "$(cat "$J/stdout"):$(cat "$J/status")" "bg:exited 0"

J=$(spec orphan -- /bin/sh -c 'sleep 1; echo late; exit 5')
# In a subshell, so that this shell does not report the caller's death.
(setsid bash -c 'echo $$ >"$3"; "$1" "$2"; sleep 60' - "$EXEC" "$J" "$PD_TMP/caller" &)
wait_for 10 test -s "$J/supervisor.pid"
caller=$(cat "$PD_TMP/caller")
kill -KILL -- -"$caller"
ok "the caller's process group is gone" wait_for 5 bash -c "! kill -0 -- -$caller"
ok "the supervisor outlives it" sup_alive "$J"
ok "and still records the exit" wait_end "$J"
ok "with the output" same "$(cat "$J/stdout"):$(cat "$J/status")" "late:exited 5"

# status is written last: the moment it is final, exit, ended and all output
# are already there.
J=$(spec last -- /bin/sh -c 'head -c 3000000 /dev/zero; echo end >&2; exit 4')
"$EXEC" "$J"
until final "$J"; do :; done
seen="$(stat -c %s "$J/stdout") $(cat "$J/stderr") $(cat "$J/exit") $(test -s "$J/ended" && echo ended)"
ok "status is written last" same "$seen" "3000000 end 4 ended"

# -- Cannot start ----------------------------------------------------------------
J=$(job noexec -- /nonexistent)
wait_end "$J"
ok "a missing executable is exited 127" same "$(cat "$J/status"):$(cat "$J/exit")" "exited 127:127"
ok "stderr says why" grep -q '^\[paddock: cannot start: .*/nonexistent.*not found' "$J/stderr"
ok "so does output" grep -q '^\[paddock: cannot start: ' "$J/output"
ok "there is no pid file" test ! -e "$J/pid"

J=$(job nobox container='"nosuch"' -- /bin/true)
wait_end "$J"
ok "a missing container is exited 127" same "$(cat "$J/status")" "exited 127"
ok "and says which" grep -q '^\[paddock: cannot start: .*nosuch' "$J/stderr"

J=$PD_TMP/jobs/badspec
mkdir -p "$J"
echo '{"container": "x", "argv": []}' >"$J/spec.json"
"$EXEC" "$J"
wait_end "$J"
ok "a bad spec.json is exited 127 with the reason" \
	grep -q '^\[paddock: cannot start: spec.json: ' "$J/stderr"

ok "a missing job directory fails the call with status 1" \
	bash -c "'$EXEC' '$PD_TMP/jobs/none' 2>/dev/null; [ \$? -eq 1 ]"
ok "no arguments is a usage error (2)" bash -c "'$EXEC' 2>/dev/null; [ \$? -eq 2 ]"

pd_done
