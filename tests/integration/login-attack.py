#!/usr/bin/env python3
"""login-attack.py SECONDS THREADS OCTET [PROGRESS-FILE]

A password-guessing attacker against the daemon at $HOST:$PORT: THREADS
threads post wrong passwords to /v1/login at full speed, each attempt from
a fresh source address 127.(OCTET + thread).X.Y (127.0.0.0/8 is all
loopback, so every one is another client to the server). Runs for SECONDS
(0: until killed). Its totals so far, one JSON line
{"seconds": S, "counts": {"401": N, "429": M, ...}, "guesses_per_s": G}
(401: a password the server checked), go to PROGRESS-FILE every second,
and to stdout at the end.
"""
import http.client
import json
import os
import sys
import threading
import time

host, port = os.environ["HOST"], int(os.environ["PORT"])
seconds, threads, octet = float(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
progress = open(sys.argv[4], "a", buffering=1) if len(sys.argv) > 4 else None
counts, lock = {}, threading.Lock()
t0 = time.time()
stop = t0 + seconds if seconds > 0 else float("inf")
body = json.dumps({"password": "not-the-password"})


def attack(t):
    i = 0
    while time.time() < stop:
        i += 1
        src = "127.%d.%d.%d" % (octet + t, (i >> 8) & 255, (i & 255) or 1)
        try:
            c = http.client.HTTPConnection(host, port, timeout=60, source_address=(src, 0))
            c.request("POST", "/v1/login", body, {"Content-Type": "application/json"})
            status = str(c.getresponse().status)
            c.close()
        except OSError:
            status = "error"
        with lock:
            counts[status] = counts.get(status, 0) + 1


def totals():
    with lock:
        c = dict(counts)
    took = time.time() - t0
    return json.dumps({"seconds": round(took, 2), "counts": c,
                       "guesses_per_s": round(c.get("401", 0) / took, 3)})


workers = [threading.Thread(target=attack, args=(t,), daemon=True) for t in range(threads)]
for w in workers:
    w.start()
while any(w.is_alive() for w in workers):
    time.sleep(1)
    if progress:
        progress.write(totals() + "\n")
print(totals())
