#!/usr/bin/env python3
"""One poll round of a box's PID 1 that both accepts a new connection and
sees a job's connection hang up (PID 1 stopped meanwhile, so both are ready
when it wakes). Starts job A (sleep), stops PID 1, hangs up A's connection,
connects B (true), lets PID 1 go on, and prints B's replies' first words
("pid run exit": PID 1's "pid" and the command's "run" sorted, as they
come in either order). Kills A at the end.

usage: exec-server-race.py SOCKET PID1"""
import os
import signal
import socket
import sys
import time

SOCK, INIT = sys.argv[1], int(sys.argv[2])


def request(argv):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.settimeout(10)
    s.connect(SOCK)
    words = [b"paddock-exec/1", b"0", b"0", b"/", str(len(argv)).encode()]
    words += [a.encode() for a in argv] + [b"PATH=/usr/bin:/bin"]
    null = os.open("/dev/null", os.O_RDWR)
    socket.send_fds(s, [b"\0".join(words) + b"\0"], [null, null, null])
    os.close(null)
    return s


a = request(["sleep", "60"])
# "pid" (from PID 1) and "run" (from the command) come in either order.
pidfd = None
while pidfd is None:
    msg, fds, _, _ = socket.recv_fds(a, 64, 1)
    assert msg in (b"pid", b"run"), msg
    if msg == b"pid":
        assert fds, msg
        pidfd = fds[0]
os.kill(INIT, signal.SIGSTOP)
try:
    a.close()
    b = request(["true"])
    time.sleep(0.2)
finally:
    os.kill(INIT, signal.SIGCONT)
words = []
while True:
    m = b.recv(256)
    if not m:
        break
    words.append(m.split(b" ")[0].decode())
signal.pidfd_send_signal(pidfd, signal.SIGKILL)
# The first two in either order (two writers), as the daemon takes them.
print(" ".join(sorted(words[:2]) + words[2:]))
