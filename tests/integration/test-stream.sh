#!/bin/bash
# A job's streams read live through the tree: large reads (1 MiB, the I/O
# size the files show) byte-exact at any offset while the job writes in small
# pieces, output written while a reader waits reaches it, readers get EOF
# when the job has ended, and output keeps the order of stdout and stderr
# while the supervisor reads a busy stream in batches.
. "$(dirname "$0")/lib.sh"
pd_start

B=$M/boxes/x
X=$B/exec
mkdir "$B"
echo running >"$B/state"
[ "$(cat "$B/state")" = running ] || { diag "box x did not start"; exit 1; }

MIB=1048576

# -- Large reads, live and afterwards --------------------------------------------
# seq writes through stdio, 4 KiB at a time: the supervisor batches them.
N=3000000
seq 1 $N >"$PD_TMP/seq.want"
mkdir "$X/big"
echo "seq 1 $N" >"$X/big/cmd"
ok "stdout shows an I/O size of 1 MiB (st_blksize)" same "$(stat -c %o "$X/big/stdout")" $MIB
ok "a value (state) shows 4 KiB: its readers need no large buffer" same "$(stat -c %o "$B/state")" 4096
ok "a live reader with 1 MiB reads gets the stream byte-exact" timeout 60 python3 -c "
import os, sys
fd = os.open('$X/big/stdout', os.O_RDONLY)
got = bytearray()
while True:
    b = os.read(fd, $MIB)
    if not b:
        break
    got += b
want = open('$PD_TMP/seq.want', 'rb').read()
if bytes(got) != want:
    sys.exit('got %d bytes, want %d; first difference at %d' % (len(got), len(want),
             next((i for i, (x, y) in enumerate(zip(got, want)) if x != y), min(len(got), len(want)))))
"
ok "the job exited 0" same "$(timeout 10 cat "$X/big/exit")" 0
ok "a read of an ended job's stream answers 1 MiB at once, at any offset" python3 -c "
import os, sys
want = open('$PD_TMP/seq.want', 'rb').read()
fd = os.open('$X/big/stdout', os.O_RDONLY)
for off in (0, 1, 4095, 4096, 12345, $MIB - 7, len(want) - $MIB - 3):
    b = os.pread(fd, $MIB, off)
    if b != want[off:off + $MIB]:
        sys.exit('at %d: %d bytes, not the %d of the file there' % (off, len(b), $MIB))
for off in (len(want) - 5, len(want), len(want) + 100):
    b = os.pread(fd, $MIB, off)
    if b != want[off:]:
        sys.exit('at %d near the end: %r' % (off, b))
"
ok "output holds the same bytes" cmp "$X/big/output" "$PD_TMP/seq.want"

# -- A waiting reader is woken -------------------------------------------------
# The job writes a line, then waits for a line on stdin before the next: the
# reader's read of the second waits (parked) until then.
mkdir "$X/wait"
echo 'echo first; read a; echo second; read a; echo third' >"$X/wait/cmd"
ok "output written while a reader waits reaches it, and EOF follows the end" timeout 30 python3 -c "
import os, sys, threading, time
fd = os.open('$X/wait/stdout', os.O_RDONLY)
def expect(want):
    got = b''
    while not got.endswith(b'\n'):
        b = os.read(fd, $MIB)
        if not b:
            sys.exit('EOF before %r (got %r)' % (want, got))
        got += b
    if got != want:
        sys.exit('got %r, want %r' % (got, want))
def feed():
    time.sleep(0.5)
    with open('$X/wait/stdin', 'w') as f:
        f.write('go\n')
expect(b'first\n')
threading.Thread(target=feed).start()
t = time.monotonic()
expect(b'second\n')  # parked for about 0.5 s
if time.monotonic() - t < 0.3:
    sys.exit('the read did not wait for the job')
threading.Thread(target=feed).start()
expect(b'third\n')
if os.read(fd, $MIB) != b'':
    sys.exit('no EOF after the job ended')
"
ok "the job exited 0" same "$(timeout 10 cat "$X/wait/exit")" 0

mkdir "$X/end"
echo 'echo only; read a' >"$X/end/cmd"
(timeout 30 cat "$X/end/stdout" >"$PD_TMP/end.out"; echo $? >"$PD_TMP/end.rc") &
reader=$!
wait_for 10 grep -qx only "$PD_TMP/end.out"
ok "a reader waits at the end of a running job's stream" wait_for 10 pd_parked $reader
echo go >"$X/end/stdin"
ok "it gets EOF when the job ends" wait_for 10 test -s "$PD_TMP/end.rc"
ok "and ends normally" same "$(cat "$PD_TMP/end.rc")" 0
wait $reader 2>/dev/null
ok "a reader of an ended job's stream gets it and EOF at once" \
	same "$(timeout 5 cat "$X/end/stdout")" only

# -- Order of stdout and stderr in output -----------------------------------------
# Each round writes 64 KiB of filler and a marker to stdout, then a marker to
# stderr, then waits until the test has seen the stderr marker in output. The
# filler makes the supervisor hold stdout (it reads it in batches) while the
# stderr marker comes: S<i> was written first and must come first.
mkdir "$X/order"
echo 'for i in 1 2 3 4 5 6 7 8; do head -c 65536 /dev/zero | tr "\0" x; echo; echo S$i; echo E$i >&2; read a; done' >"$X/order/cmd"
order_rounds() {
	local i
	for i in 1 2 3 4 5 6 7 8; do
		# A snapshot: a live read would wait for the job's end.
		wait_for 20 eval "snap '$X/order/output' | grep -qx 'E$i'" ||
			{ echo "no E$i in output"; return 1; }
		echo go >"$X/order/stdin" || return 1
	done
}
ok "the job runs its rounds" order_rounds
ok "the job exited 0" same "$(timeout 10 cat "$X/order/exit")" 0
ok "output keeps each stdout marker before the stderr marker written after it" \
	same "$(grep -v '^x' "$X/order/output" | tr '\n' ' ')" "S1 E1 S2 E2 S3 E3 S4 E4 S5 E5 S6 E6 S7 E7 S8 E8 "
ok "stdout holds all the filler" same "$(awk '/^x+$/ && length == 65536' "$X/order/stdout" | wc -l)" 8

pd_done
