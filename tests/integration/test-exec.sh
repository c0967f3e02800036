#!/bin/bash
# Exec jobs through the tree: named and quick jobs, live streams, exit codes,
# stdin, ctl, binary output, O_NONBLOCK, parked readers, rmdir, bad input.
. "$(dirname "$0")/lib.sh"
pd_start

B=$M/boxes/x
X=$B/exec
mkdir "$B"

ok "exec is a directory" test -d "$X"
ok "exec/new is write-only" same "$(stat -c %a "$X/new")" 220
ok "exec/last does not exist before the first job" test ! -e "$X/last"
ok "mkdir exec/JOB makes a job" mkdir "$X/hello"
ok "a new job lists its files" same "$(ls "$X/hello" | tr '\n' ' ')" "cmd ctl cwd desktop ended env exit output pid started status stderr stdin stdout user "
ok "its status is created" same "$(cat "$X/hello/status")" created
ok "env takes KEY=VALUE lines" bash -c "printf 'GREETING=hi there\nN=42\n' > '$X/hello/env'"
ok "env refuses a bad line (EINVAL)" write_expect EINVAL "$X/hello/env" "no equals sign"
ok "cwd takes an absolute path" bash -c "echo /tmp > '$X/hello/cwd'"
ok "cwd refuses a relative path" write_expect EINVAL "$X/hello/cwd" "tmp"
ok "the box is still created" same "$(cat "$B/state")" created
ok "writing cmd starts the job (and the created box)" bash -c "echo 'echo \"\$GREETING \$N\"; pwd; echo oops >&2; exit 3' > '$X/hello/cmd'"
ok "the box is running" same "$(cat "$B/state")" running
ok "exit waits and returns the code" same "$(timeout 10 cat "$X/hello/exit")" 3
ok "status reads exited 3" same "$(cat "$X/hello/status")" "exited 3"
ok "stdout has the job's output, env and cwd applied" same "$(cat "$X/hello/stdout")" "hi there 42
/tmp"
ok "stderr has its errors" same "$(cat "$X/hello/stderr")" oops
ok "output interleaves both" same "$(cat "$X/hello/output" | sort | tr '\n' ' ')" "/tmp hi there 42 oops "
ok "started and ended are RFC 3339" bash -c "grep -Eq '^[0-9-]{10}T[0-9:]{8}Z\$' '$X/hello/started' && grep -Eq '^[0-9-]{10}T[0-9:]{8}Z\$' '$X/hello/ended'"
ok "pid is a number" grep -Eq '^[0-9]+$' "$X/hello/pid"
ok "cmd reads back" grep -q 'exit 3' "$X/hello/cmd"
ok "cmd is written once (EBUSY)" write_expect EBUSY "$X/hello/cmd" "true"
ok "settings are fixed once started (EBUSY)" write_expect EBUSY "$X/hello/cwd" "/"
ok "the reason is in the box's error" grep -q 'exec/hello/cwd: ' "$B/error"
ok "job events are recorded" bash -c "snap '$B/events' | grep -q ' x job hello ended exited 3\$'"

# Quick jobs.
ok "exec/new starts a numbered job" bash -c "echo 'echo quick' > '$X/new'"
ok "exec/last leads to it" same "$(readlink "$X/last")" 1
ok "its output is there" same "$(timeout 10 cat "$X/last/exit"; cat "$X/last/stdout")" "0
quick"
ok "the next one is 2" bash -c "echo 'exit 0' > '$X/new' && test \"\$(readlink '$X/last')\" = 2"

# exec/last follows the newest job at once, though the kernel caches link
# targets: each new job's last is a new node.
last_follows() {
	local i
	for i in 1 2 3 4 5; do
		echo "echo quick $i" >"$X/new" || return 1
		[ "$(cat "$X/last/cmd")" = "echo quick $i" ] || { echo "job $i: cmd is $(cat "$X/last/cmd")"; return 1; }
		[ "$(readlink "$X/last")" = $((2 + i)) ] || { echo "job $i: last is $(readlink "$X/last")"; return 1; }
	done
	[ "$(timeout 10 cat "$X/last/exit"; cat "$X/last/stdout")" = "0
quick 5" ]
}
ok "exec/last follows each new job right after exec/new" last_follows
ok "a deleted last job hands exec/last to the one before" bash -c "
	rmdir '$X/7' && test \"\$(readlink '$X/last')\" = 6 && test \"\$(cat '$X/last/cmd')\" = 'echo quick 4'"
ok "the next job takes the freed number and is last, with its own cmd" bash -c "
	echo 'echo quick 6' > '$X/new' && test \"\$(readlink '$X/last')\" = 7 &&
	test \"\$(cat '$X/last/cmd')\" = 'echo quick 6' && test \"\$(cat '$X/7/cmd')\" = 'echo quick 6'"

# Live streaming: lines arrive as they are produced. The job writes line
# N+1 only once the reader has line N (it waits for /tmp/liveN, which the
# reader makes): a stream that waited for the end would never get there.
mkdir "$X/live"
echo 'for i in 1 2 3 4 5 6; do echo line $i; until [ -e /tmp/live$i ]; do sleep 0.1; done; done' >"$X/live/cmd"
ok "cat output follows the job live and ends with it" timeout 20 python3 -c "
seen = b''
with open('$X/live/output', 'rb', buffering=0) as f:
    while True:
        b = f.read(4096)
        if not b: break
        seen += b
        for i in range(1, seen.count(b'\\n') + 1):
            open('$B/root/tmp/live%d' % i, 'w').close()
lines = seen.decode().split()
assert lines.count('line') == 6, lines
"
ok "a late reader gets the whole stream from byte 0" same "$(cat "$X/live/stdout" | wc -l)" 6

# stdin round trip.
mkdir "$X/cat"
echo 'cat' >"$X/cat/cmd"
ok "stdin is fed to the process" bash -c "printf 'one\ntwo\n' > '$X/cat/stdin'"
ok "ctl eof closes it and the job ends" bash -c "echo eof > '$X/cat/ctl' && test \"\$(timeout 10 cat '$X/cat/exit')\" = 0"
ok "what went in came out" same "$(cat "$X/cat/stdout")" "one
two"

# A write bigger than the job's pipes take while nothing reads them is a
# short write (the bytes taken); writes go on until one is EAGAIN (the
# pipes full), and nothing is taken twice: the job counts exactly what the
# writes said they took.
mkdir "$X/big"
echo 'sleep 2; wc -c' >"$X/big/cmd"
cat >"$PD_TMP/stdin-big.py" <<'PY'
import errno, os, sys
fd = os.open(sys.argv[1], os.O_WRONLY)
first = os.write(fd, b"x" * 300000)
total, end = first, "none"
for _ in range(64):
    try:
        total += os.write(fd, b"y" * 300000)
    except OSError as e:
        end = errno.errorcode[e.errno]
        break
os.close(fd)
print(first, total, end)
PY
read -r took total end < <(python3 "$PD_TMP/stdin-big.py" "$X/big/stdin")
ok "a write bigger than the pipe takes is short: $took of 300000 bytes" \
	test "${took:-0}" -gt 0 -a "${took:-0}" -lt 300000
ok "writes on, once the pipes are full, are EAGAIN (after $total bytes)" same "$end" EAGAIN
echo eof >"$X/big/ctl"
ok "the job read exactly the bytes taken, none twice" same "$(timeout 10 cat "$X/big/stdout" | tr -d ' ')" "$total"

# ctl: kill and signals.
mkdir "$X/sleep"
echo 'sleep 1000' >"$X/sleep/cmd"
ok "status reads running" wait_for 5 bash -c "test \"\$(cat '$X/sleep/status')\" = running"
ok "rmdir of a running job is EBUSY" bash -c "! rmdir '$X/sleep' 2>/dev/null && test -d '$X/sleep'"
ok "ctl: garbage is EINVAL" write_expect EINVAL "$X/sleep/ctl" "explode"
ok "ctl: unknown signal is EINVAL" write_expect EINVAL "$X/sleep/ctl" "signal SIGNOPE"
ok "ctl kill ends sleep 1000" bash -c "echo kill > '$X/sleep/ctl' && test \"\$(timeout 10 cat '$X/sleep/exit')\" = 137"
ok "status says killed" grep -q '^killed' "$X/sleep/status"
mkdir "$X/term"
echo 'sleep 1000' >"$X/term/cmd"
wait_for 5 test -s "$X/term/pid"
ok "ctl signal TERM works" bash -c "echo 'signal TERM' > '$X/term/ctl' && test \"\$(timeout 10 cat '$X/term/exit')\" = 143"
ok "rmdir of a finished job works" rmdir "$X/sleep"
ok "and it is gone" test ! -e "$X/sleep"

# Binary output, byte-exact.
mkdir "$X/bin"
echo 'head -c 100000000 /dev/urandom > /tmp/rand.bin; cat /tmp/rand.bin' >"$X/bin/cmd"
ok "100 MB of random bytes match by sha256" bash -c "
	timeout 60 cat '$X/bin/exit' >/dev/null &&
	test \"\$(sha256sum < '$X/bin/stdout' | cut -d' ' -f1)\" = \"\$(sha256sum < '$B/root/tmp/rand.bin' | cut -d' ' -f1)\""

# O_NONBLOCK and parked readers.
mkdir "$X/quiet"
echo 'sleep 30' >"$X/quiet/cmd"
ok "O_NONBLOCK read at the end gives EAGAIN" python3 -c "
import os
fd = os.open('$X/quiet/stdout', os.O_RDONLY | os.O_NONBLOCK)
try:
    os.read(fd, 100); raise SystemExit('no EAGAIN')
except BlockingIOError: pass"
ok "exit opened O_NONBLOCK gives EAGAIN while running" python3 -c "
import os
fd = os.open('$X/quiet/exit', os.O_RDONLY | os.O_NONBLOCK)
try:
    os.read(fd, 100); raise SystemExit('no EAGAIN')
except BlockingIOError: pass"
pids=()
for i in $(seq 500); do
	cat "$X/quiet/stdout" >/dev/null &
	pids+=($!)
done
ok "500 readers of a running job's stdout are parked" wait_for 60 pd_parked "${pids[@]}"
ok "with 500 parked readers, state answers at once" bash -c "
	s=\$(date +%s%N); cat '$B/state' >/dev/null; e=\$(date +%s%N); [ \$(( (e - s) / 1000000 )) -lt 1000 ]"
ok "and a new job still starts and finishes" bash -c "echo 'echo alive' > '$X/new' && test \"\$(timeout 10 cat '$X/last/exit')\" = 0"
echo kill >"$X/quiet/ctl"
ok "all 500 readers end when the job ends" wait "${pids[@]}"

# Bad input.
ok "an invalid job name is EINVAL" bash -c "! mkdir '$X/Bad' 2>/dev/null"
ok "a duplicate job is EEXIST" bash -c "! mkdir '$X/hello' 2>/dev/null"
ok "empty cmd is EINVAL" write_expect EINVAL "$X/new" $'\n'
ok "a cmd with a NUL byte is EINVAL" bash -c "mkdir '$X/nul' && write_expect EINVAL '$X/nul/cmd' hex:6c73006c73"
ok "stdout is read-only" write_expect EACCES "$X/hello/stdout" x
ok "exec on a stopped box is EBUSY" bash -c "echo stopped > '$B/state' && mkdir '$X/late' && write_expect EBUSY '$X/late/cmd' true"
ok "the box's error says why" grep -q 'exec/late/cmd: box x is stopped' "$B/error"

rmdir "$X/bin"

# Jobs outlive the daemon: kill -9 it while a job writes, restart, and the
# stream is complete and exit right.
echo running >"$B/state"
mkdir "$X/long"
echo 'i=0; while [ $i -lt 40 ]; do echo "tick $i"; i=$((i + 1)); sleep 0.1; done; exit 7' >"$X/long/cmd"
wait_for 20 bash -c "snap '$X/long/stdout' | grep -q '^tick 5\$'" || diag "the job has not written yet"
pd_kill9
sleep 3
pd_start
ok "after kill -9 and restart, exit is right" same "$(timeout 20 cat "$X/long/exit")" 7
ok "and no output was lost" same "$(grep -c '^tick' "$X/long/stdout")" 40
ok "the stream is in order" same "$(tail -n 1 "$X/long/stdout")" "tick 39"
ok "the job's end is an event" bash -c "snap '$B/events' | grep -q ' x job long ended exited 7\$'"
mkdir "$X/across"
echo 'sleep 3; echo done' >"$X/across/cmd"
pd_stop
pd_start
ok "a job running across a clean restart is followed live again" same "$(timeout 20 cat "$X/across/output")" done

# Temp-then-rename works for job files too.
mkdir "$X/tmpw"
ok "cmd written as a temp file then renamed starts the job" bash -c "
	echo 'echo renamed' > '$X/tmpw/.cmd.tmp' && mv '$X/tmpw/.cmd.tmp' '$X/tmpw/cmd' &&
	test \"\$(timeout 10 cat '$X/tmpw/exit')\" = 0 && test \"\$(cat '$X/tmpw/stdout')\" = renamed"

rmdir "$B"
ok "deleting the box deletes its jobs" test ! -e "$B"
pd_done
