#!/bin/bash
# Errors travel with the call: the body of a failed HTTP write is the
# reason that very write recorded, never another's. Two clients write bad
# values to two different control files of one box at the same moment, many
# times; each reply must quote its own file's failure ("TIME FILE: reason
# (ERRNO)"), and the box's error file keeps the line of one of the two.
. "$(dirname "$0")/lib.sh"
pd_start_with_socket

ROUNDS=${PD_RACE_ROUNDS:-400}
mkdir "$M/boxes/racy"

python3 - "$SOCK" "$ROUNDS" >"$PD_TMP/race.out" 2>&1 <<'PY'
import http.client, json, socket, sys, threading

sock, rounds = sys.argv[1], int(sys.argv[2])

class Unix(http.client.HTTPConnection):
    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(sock)

# Two bad writes to two files of one box (each fails with EINVAL and
# records its own line in the box's error file).
writes = {"type": b"no-such-type\n", "ttl": b"soon-ish\n"}
barrier = threading.Barrier(len(writes))
wrong, other, bad = [], [], []

def client(name, body):
    conn = Unix("paddock")
    for i in range(rounds):
        barrier.wait()
        conn.request("PUT", "/v1/tree/boxes/racy/" + name, body=body)
        resp = conn.getresponse()
        data = resp.read()
        try:
            o = json.loads(data)
        except ValueError:
            bad.append((name, i, resp.status, data))
            continue
        err = o.get("error", "")
        if resp.status != 400 or o.get("errno") != "EINVAL":
            bad.append((name, i, resp.status, data))
        elif " %s: " % name not in err or not err.endswith("(EINVAL)"):
            wrong.append((name, i, err))
            if any(" %s: " % n in err for n in writes if n != name):
                other.append((name, i, err))

threads = [threading.Thread(target=client, args=kv) for kv in writes.items()]
for t in threads:
    t.start()
for t in threads:
    t.join()
print("rounds %d wrong %d other %d bad %d" % (rounds, len(wrong), len(other), len(bad)))
for w in (wrong + bad)[:5]:
    print("example", w)
PY
sed 's/^/# /' "$PD_TMP/race.out"
ok "the race ran" grep -q "^rounds $ROUNDS " "$PD_TMP/race.out"
ok "every failed write got a 400 EINVAL JSON reply" grep -q " bad 0$" "$PD_TMP/race.out"
ok "each reply quotes its own file's failure, never the other's" \
	grep -q " wrong 0 other 0 " "$PD_TMP/race.out"

# The error file itself still works as the spec says: the last failure of
# either file, until that file is written successfully.
ok "the error file holds one of the two failures" \
	grep -Eq '^[0-9TZ:-]+ (type|ttl): .*\(EINVAL\)$' "$M/boxes/racy/error"

# Over HTTP, the body is the very line the error file shows.
body=$(uc PUT boxes/racy/type --data-binary 'still-no-such-type')
ok "a lone failure's body is the error file's line" same \
	"$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["error"])' "$body")" \
	"$(cat "$M/boxes/racy/error")"
ok "a later success of another file leaves it" bash -c "echo 1h >'$M/boxes/racy/ttl'"
ok "... the type failure stays" grep -q ' type: ' "$M/boxes/racy/error"
ok "a success of that file clears it" bash -c "echo small >'$M/boxes/racy/type'"
ok "... the error file is empty" same "$(cat "$M/boxes/racy/error")" ""

# A failure that records nothing (no such file) says the path and errno.
body=$(uc PUT boxes/racy/nope --data-binary x)
ok "a write to a missing file says ENOENT with its path" \
	python3 -c 'import json,sys; o=json.loads(sys.argv[1]); assert o["errno"]=="ENOENT" and "/boxes/racy/nope" in o["error"], o' "$body"

pd_done
