#!/bin/bash
# Attacks on the HTTP API, each written as the attacker would run it (raw
# HTTP with curl --path-as-is and python sockets; 127.0.0.0/8 is all
# loopback, so every source address of it is a different client):
#
# - control bytes in the path (%00 ...), the query, the method, headers
#   (raw NUL bytes too, folded headers refused) and bodies (form keys
#   too): 400, nothing changes;
# - root/ listings show every file name, escaped so no two look alike;
# - text that is not UTF-8 in error replies: valid JSON, never 500;
# - the local socket: 0660 root:GROUP, and its peers judged by their
#   credentials (nobody is refused even through a socket made 0666);
# - a revoked token's streams end within 1 s, through HTTP and through
#   the mount, and its requests under way (a body still coming, a tar
#   push) are cut without acting;
# - logins: X-Forwarded-For believed only from a trusted proxy; an attack
#   at full speed from rotating addresses is held to the global budget, and
#   the owner logs in from a fresh address right after it;
# - slowloris: 2,000 (and 4,500) idle connections from one address while
#   another address is served; 4,400 from 40 addresses stop at the
#   listener's 4,096.
#
# PD_ATTACK_SECONDS (60) sets the length of the login attack.
. "$(dirname "$0")/lib.sh"

ATTACK_SECONDS=${PD_ATTACK_SECONDS:-60}
command -v setpriv >/dev/null || skip_all "needs setpriv"
command -v python3 >/dev/null || skip_all "needs python3"

# The login attack opens about 4,000 connections a second: the whole test
# (daemon, clients) runs in a network namespace of its own (pd_own_netns).
pd_own_netns "$0" "$@"

# A numeric group nobody has, for the local socket's access rule.
GID=64123
while getent group "$GID" >/dev/null; do GID=$((GID + 1)); done

pd_setup || exit 1
SOCK=$PD_TMP/run/paddock.sock
sed -i "s|^\[paddock\]$|[paddock]\nsocket = $SOCK\ngroup = $GID\ntrusted_proxies = 127.0.0.5|" \
	"$PD_TMP/paddock.ini"
pd_start
ok "owner set up, first token" pd_owner "the-owner-password-1"
URL=$PD_URL
HOSTPORT=${URL#http://}
HOST=${HOSTPORT%:*}
PORT=${HOSTPORT##*:}
export URL HOST PORT

code() { # code [CURL-ARGS...] URL: the status code only
	curl -sS -o /dev/null -w '%{http_code}' "$@"
}
tc() { # tc [CURL-ARGS...] PATH: raw path (no normalisation) with the token
	local path=${!#}
	curl -sS --path-as-is -H "Authorization: Bearer $PD_TOKEN" "${@:1:$#-1}" "$URL/v1/tree/$path"
}

# status(SOCKET), for the scripts below: the status code of the reply that
# comes on it, or "closed" when the connection ends without one.
cat >"$PD_TMP/rawhttp.py" <<'EOF'
def status(s):
    got = b""
    try:
        while b"\r\n" not in got:
            b = s.recv(4096)
            if not b:
                break
            got += b
    except OSError:
        pass
    return got.split(b" ")[1].decode() if got.startswith(b"HTTP/") else "closed"
EOF
# raw BYTES-AS-PYTHON-LITERAL: sends the bytes (\r\n written out) on a new
# connection, prints the status code (or "closed").
cat >"$PD_TMP/raw.py" <<'EOF'
import ast, os, socket, sys
from rawhttp import status
data = ast.literal_eval("b'" + sys.argv[1] + "'").replace(b"TOKEN", os.environ["PD_TOKEN"].encode())
s = socket.create_connection((os.environ["HOST"], int(os.environ["PORT"])), timeout=10)
s.sendall(data)
print(status(s))
EOF
raw() {
	python3 "$PD_TMP/raw.py" "$1"
}

# A JSON error reply: status, valid UTF-8 JSON with error and errno.
cat >"$PD_TMP/jsonerr.py" <<'EOF'
import json, sys
status, body = sys.argv[1], open(sys.argv[2], "rb").read()
o = json.loads(body.decode("utf-8", "strict"))
assert status == sys.argv[3], (status, body)
assert o["errno"] == sys.argv[4] and o["error"], body
for c in o["error"]:
    assert ord(c) >= 0x20 and not 0x7f <= ord(c) <= 0x9f, o["error"]
EOF
json_error() { # json_error WANT-STATUS WANT-ERRNO [CURL-ARGS...] URL
	local want=$1 errno=$2 st
	shift 2
	st=$(curl -sS --path-as-is -o "$PD_TMP/body" -w '%{http_code}' "$@")
	python3 "$PD_TMP/jsonerr.py" "$st" "$PD_TMP/body" "$want" "$errno" ||
		{ diag "got $st: $(head -c 300 "$PD_TMP/body")"; return 1; }
}

# --- control bytes ---------------------------------------------------------
hc -o /dev/null -X PUT boxes/x/
hc -o /dev/null -X PUT boxes/x/exec/j1/
hc -o /dev/null -X PUT --data 'echo hi' boxes/x/exec/j1/cmd
hc -o /dev/null boxes/x/exec/j1/exit
hc -o /dev/null -X PUT --data 600 boxes/x/ttl
ttl_before=$(cat "$M/boxes/x/ttl")
ok "%00 in a DELETE path: 400" same "$(tc -o /dev/null -w '%{http_code}' -X DELETE 'boxes/x%00/exec/j1')" 400
ok "...box x is still there (not cut to boxes/x)" test -d "$M/boxes/x"
ok "...its job too" test -d "$M/boxes/x/exec/j1"
ok "%00 in a PUT path: 400" same "$(tc -o /dev/null -w '%{http_code}' -X PUT --data 60 'boxes/x/ttl%00.swp')" 400
ok "...ttl is unchanged (not cut to ttl)" bash -c "t=\$(cat '$M/boxes/x/ttl'); [ \$((${ttl_before} - t)) -le 5 ] && [ \$t -gt 100 ]"
for b in 01 0a 0d 1b 1f 7f; do
	ok "%$b in a path: 400" same "$(tc -o /dev/null -w '%{http_code}' "boxes/x/state%$b")" 400
done
ok "%00 in a query value: 400" same "$(tc -o /dev/null -w '%{http_code}' 'boxes/x/exec/j1/stdout?follow=0%00x')" 400
ok "%0a in a query key: 400" same "$(tc -o /dev/null -w '%{http_code}' 'boxes/x/state?a%0ab=1')" 400
ok "the 400 is a JSON error" json_error 400 EINVAL -H "Authorization: Bearer $PD_TOKEN" "$URL/v1/tree/boxes/x%00/state"
ok "a raw NUL in the request line: 400" same \
	"$(raw 'DELETE /v1/tree/boxes/x\x00/exec/j1 HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer TOKEN\r\n\r\n')" 400
ok "...box x and its job are still there" test -d "$M/boxes/x/exec/j1"
ok "a raw control byte in the request line: 400" same \
	"$(raw 'GET /v1/tree/boxes/x\x01/state HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer TOKEN\r\n\r\n')" 400
ok "a raw NUL inside a header value: 400" same \
	"$(raw 'GET /v1/tree/version HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer TOKEN\x00junk\r\n\r\n')" 400
ok "a raw NUL in the last header: 400" same \
	"$(raw 'GET /v1/tree/version HTTP/1.1\r\nAuthorization: Bearer TOKEN\r\nX-Note: a\x00b\r\n\r\n')" 400
ok "...and a DELETE carrying one deletes nothing" bash -c "
	[ \"\$(python3 '$PD_TMP/raw.py' 'DELETE /v1/tree/boxes/x/exec/j1/ HTTP/1.1\r\nHost: h\x00\r\nAuthorization: Bearer TOKEN\r\n\r\n')\" = 400 ] &&
	test -d '$M/boxes/x/exec/j1'"
ok "a raw NUL in a header after a folded one (obs-fold): 400 (was 200)" same \
	"$(raw 'GET /v1/tree/version HTTP/1.1\r\nX-A: a\r\n b\r\nAuthorization: Bearer TOKEN\x00junk\r\n\r\n')" 400
ok "a folded header alone (obs-fold, RFC 7230 3.2.4): 400" same \
	"$(raw 'GET /v1/tree/version HTTP/1.1\r\nX-A: a\r\n\tb\r\nAuthorization: Bearer TOKEN\r\n\r\n')" 400
ok "a raw NUL in the method: 400 (was 200)" same \
	"$(raw 'GET\x00junk /v1/tree/version HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer TOKEN\r\n\r\n')" 400
ok "...and a DELETE\\0x deletes nothing (acted as DELETE)" bash -c "
	[ \"\$(python3 '$PD_TMP/raw.py' 'DELETE\x00x /v1/tree/boxes/x/exec/j1/ HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer TOKEN\r\n\r\n')\" = 400 ] &&
	test -d '$M/boxes/x/exec/j1'"
ok "spaces between the method and the URI are still taken: 200" same \
	"$(raw 'GET   /v1/tree/version HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer TOKEN\r\n\r\n')" 200
ok "a long head (45 headers, 18 KiB) is judged, not refused: 200" same \
	"$(raw "GET /v1/tree/version HTTP/1.1\\r\\nHost: h\\r\\n$(for i in $(seq 45); do printf 'X-Pad-%d: %0400d\\r\\n' "$i" 0; done)Authorization: Bearer TOKEN\\r\\n\\r\\n")" 200
ok "a control byte in a header value: 400" same \
	"$(code -H "Authorization: Bearer $PD_TOKEN" -H $'X-Note: a\x01b' "$URL/v1/tree/version")" 400
ok "an escape sequence in a header value: 400" same \
	"$(code -H "Authorization: Bearer $PD_TOKEN" -H $'X-Note: \x1b[31mred' "$URL/v1/tree/version")" 400
ok "a tab in a header value is whitespace: 200" same \
	"$(code -H "Authorization: Bearer $PD_TOKEN" -H $'X-Note: a\tb' "$URL/v1/tree/version")" 200
ok "an ordinary request with every usual header: 200" same \
	"$(raw 'GET /v1/tree/version?x=1 HTTP/1.1\r\nHost: h:1\r\nUser-Agent: t/1\r\nAccept: */*\r\nX-Empty:\r\nX-Spaces:  v  \r\nAuthorization: Bearer TOKEN\r\n\r\n')" 200

login_json() { # login_json BODY: the status of a JSON login from 127.0.0.1
	code -H 'Content-Type: application/json' --data-binary "$1" "$URL/v1/login"
}
ok "a JSON login with \\u0000 in the password: 400" same \
	"$(login_json '{"password":"the-owner-password-1\u0000junk"}')" 400
ok "a JSON login with \\u0001 in the password: 400" same \
	"$(login_json '{"password":"the-owner-\u0001password-1"}')" 400
ok "a JSON login with ESC in the label: 400" same \
	"$(login_json '{"password":"the-owner-password-1","label":"\u001b[2J"}')" 400
ok "a JSON login with the password twice: 400" same \
	"$(login_json '{"password":"wrong-password-0","password":"the-owner-password-1"}')" 400
ok "a form login with %00 in the password: 400" same \
	"$(code --data 'password=the-owner-password-1%00junk' "$URL/v1/login")" 400
ok "a form login whose key is cut at %00 (password%00junk=): 400 (was 200)" same \
	"$(code --data 'password%00junk=the-owner-password-1' "$URL/v1/login")" 400
printf 'password\0junk=the-owner-password-1' >"$PD_TMP/nulkey.form"
ok "...or at a raw NUL: 400" same "$(code --data-binary @"$PD_TMP/nulkey.form" "$URL/v1/login")" 400
ok "...or a %1F, %7f in a key: 400" same \
	"$(code --data 'password=the-owner-password-1&label%1F=a' "$URL/v1/login") $(code --data 'password=the-owner-password-1&x%7f=1' "$URL/v1/login")" "400 400"
ok "a JSON login whose key holds \\u0000: 400" same \
	"$(login_json '{"password\u0000junk":"the-owner-password-1"}')" 400
ok "a form login with the password twice: 400" same \
	"$(code --data 'password=x&password=the-owner-password-1' "$URL/v1/login")" 400
ok "a form login, decoded by the post processor: 200" bash -c "
	curl -sS --data-urlencode 'password=the-owner-password-1' --data-urlencode 'label=form + é&=' \
		'$URL/v1/login' >'$PD_TMP/form.json' &&
	id=\$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[\"id\"])' '$PD_TMP/form.json') &&
	[ \"\$(cat '$M/tokens/'\$id/label)\" = 'form + é&=' ]"
ok "none of the refused logins made a token" same "$(ls "$M/tokens" | wc -l)" 2

# --- text that is not UTF-8 -------------------------------------------------
ok "a path with bytes that are not UTF-8: 404 with valid JSON (was \"out of memory\")" \
	json_error 404 ENOENT -H "Authorization: Bearer $PD_TOKEN" "$URL/v1/tree/boxes/%ff%fe/state"
ok "a write to such a path: valid JSON" \
	json_error 404 ENOENT -X PUT --data 1 -H "Authorization: Bearer $PD_TOKEN" "$URL/v1/tree/boxes/x/%c3%28"
hc -o /dev/null -X PUT boxes/u/
ok "a control write of such bytes: a JSON error naming them escaped" \
	json_error 400 EINVAL -X PUT --data-binary $'\xff\xfe bogus' -H "Authorization: Bearer $PD_TOKEN" "$URL/v1/tree/boxes/u/state"

# A box's file names in root/ listings: every one shown, escaped so that no
# two look alike (a name that is not UTF-8 was dropped from the JSON).
hc -o /dev/null -X PUT boxes/x/root/tmp/names/
hc -o /dev/null -X PUT --data 1 'boxes/x/root/tmp/names/%ff%fe'
hc -o /dev/null -X PUT --data 2 'boxes/x/root/tmp/names/%5cxff%5cxfe'
cat >"$PD_TMP/names.py" <<'EOF'
import json, sys
o = json.load(open(sys.argv[1]))
names = sorted(e["name"] for e in o["entries"])
assert names == sorted(sys.argv[2:]), names
EOF
ok "a root/ file named with bytes 0xff 0xfe is listed, escaped (was left out)" bash -c "
	hc -fsS boxes/x/root/tmp/names/ >'$PD_TMP/names.json' &&
	python3 '$PD_TMP/names.py' '$PD_TMP/names.json' '\\xff\\xfe' '\\x5cxff\\x5cxfe'"
ok "...and the text listing shows the same two names" bash -c "
	hc -fsS 'boxes/x/root/tmp/names/?format=text' | awk '{print \$4}' | sort >'$PD_TMP/names.txt' &&
	printf '%s\\n' '\\x5cxff\\x5cxfe' '\\xff\\xfe' | sort | cmp - '$PD_TMP/names.txt'"

# --- the local socket ------------------------------------------------------------
chmod 711 "$PD_TMP" "$PD_TMP/run"
nobody() {
	setpriv --reuid=65534 --regid=65534 --clear-groups "$@"
}
member() {
	setpriv --reuid=65534 --regid=65534 --groups "$GID" "$@"
}
ok "the socket is 0660 root:GROUP" same "$(stat -c '%a %u:%g' "$SOCK")" "660 0:$GID"
ok "root is served on it without a token" same "$(code --unix-socket "$SOCK" http://x/v1/tree/version)" 200
ok "a member of the group is served on it" same \
	"$(member curl -sS -o /dev/null -w '%{http_code}' --unix-socket "$SOCK" http://x/v1/tree/version)" 200
ok "nobody cannot connect" bash -c "
	! setpriv --reuid=65534 --regid=65534 --clear-groups curl -sS -o /dev/null --unix-socket '$SOCK' http://x/v1/tree/version 2>/dev/null"
chmod 666 "$SOCK"
nobody curl -sS -w '\n%{http_code}' --unix-socket "$SOCK" http://x/v1/tree/version >"$PD_TMP/nobody.out"
head -n1 "$PD_TMP/nobody.out" >"$PD_TMP/nobody.json"
ok "through a socket made 0666, nobody gets 403 with a JSON error" \
	python3 "$PD_TMP/jsonerr.py" "$(tail -n1 "$PD_TMP/nobody.out")" "$PD_TMP/nobody.json" 403 EACCES
ok "...and cannot create a box" bash -c "
	setpriv --reuid=65534 --regid=65534 --clear-groups curl -sS -o /dev/null -X PUT --unix-socket '$SOCK' http://x/v1/tree/boxes/evil/
	[ ! -e '$M/boxes/evil' ]"
ok "...nor read the tokens" bash -c "
	! setpriv --reuid=65534 --regid=65534 --clear-groups curl -fsS --unix-socket '$SOCK' http://x/v1/tree/tokens/ 2>/dev/null"
chmod 660 "$SOCK"

# --- revocation ends streams -----------------------------------------------------
# follow NAME TOKEN PATH: reads the stream in the background; NAME.log gets
# "line T" per line and "end T HOW" at the end (T: seconds since the epoch).
cat >"$PD_TMP/follow.py" <<'EOF'
import os, socket, sys, time
out = open(sys.argv[1], "w", buffering=1)
s = socket.create_connection((os.environ["HOST"], int(os.environ["PORT"])))
s.sendall(("GET /v1/tree/%s HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer %s\r\n\r\n"
           % (sys.argv[3], sys.argv[2])).encode())
buf, head = b"", True
try:
    while True:
        b = s.recv(65536)
        if not b:
            how = "eof"
            break
        buf += b
        if head and b"\r\n\r\n" in buf:
            head = False
            out.write("status %s\n" % buf.split(b" ")[1].decode())
            buf = buf.split(b"\r\n\r\n", 1)[1]
        while b"\n" in buf and not head:
            line, buf = buf.split(b"\n", 1)
            out.write("line %.3f %s\n" % (time.time(), line.strip().decode(errors="replace")))
except OSError as e:
    how = "error"
out.write("end %.3f %s\n" % (time.time(), how))
EOF
follow() {
	python3 "$PD_TMP/follow.py" "$PD_TMP/$1.log" "$2" "$3" &
	echo $! >"$PD_TMP/$1.pid"
}
ended() { grep -q '^end' "$PD_TMP/$1.log" 2>/dev/null; }
end_time() { awk '/^end/ {print $2}' "$PD_TMP/$1.log"; }
lines() { grep -c '^line' "$PD_TMP/$1.log" 2>/dev/null; }
# ends_within NAME T0 SECONDS: the stream ended, at most SECONDS after T0.
ends_within() {
	wait_for 5 ended "$1" || { diag "$1 still flowing 5 s later"; return 1; }
	python3 -c 'import sys; d = float(sys.argv[1]) - float(sys.argv[2]); print("# %s ended %.3f s after the revocation" % (sys.argv[4], d)); sys.exit(0 if d <= float(sys.argv[3]) else 1)' \
		"$(end_time "$1")" "$2" "$3" "$1"
}
new_token() { # new_token LABEL: prints "ID TOKEN"
	curl -sS --interface 127.0.0.1 --data "{\"password\":\"$PD_PASSWORD\",\"label\":\"$1\"}" "$URL/v1/login" |
		python3 -c 'import json,sys; o=json.load(sys.stdin); print(o["id"], o["token"])'
}

hc -o /dev/null -X PUT boxes/rv/
hc -o /dev/null -X PUT boxes/rv/exec/tick/
hc -o /dev/null -X PUT --data 'while true; do echo tick; sleep 0.2; done' boxes/rv/exec/tick/cmd
# The owner's own stream, which must survive everything below (the login
# attack lasts longer than every timeout).
follow keep "$PD_TOKEN" events

read -r id2 tok2 <<<"$(new_token doomed)"
follow out2 "$tok2" boxes/rv/exec/tick/stdout
follow ev2 "$tok2" events
follow own "$PD_TOKEN" boxes/rv/exec/tick/stdout
ok "a second token follows stdout (lines flow)" wait_for 10 bash -c "[ \$(grep -c '^line' '$PD_TMP/out2.log') -ge 3 ]"
ok "...and the events stream (connected)" wait_for 10 grep -q '^status 200' "$PD_TMP/ev2.log"
t0=$(date +%s.%N)
ok "DELETE tokens/ID revokes it" same "$(hc -o /dev/null -w '%{http_code}' -X DELETE "tokens/$id2/")" 204
ok "its stdout stream ends within 1 s" ends_within out2 "$t0" 1
ok "its parked events stream ends within 1 s" ends_within ev2 "$t0" 1
ok "the token is refused afterwards" same "$(code -H "Authorization: Bearer $tok2" "$URL/v1/tree/version")" 401
n=$(lines own)
ok "another token's stream of the same job flows on" wait_for 5 bash -c "[ \$(grep -c '^line' '$PD_TMP/own.log') -gt $((n + 2)) ]"
ok "...and is not ended" bash -c "! grep -q '^end' '$PD_TMP/own.log'"

read -r id3 tok3 <<<"$(new_token doomed-too)"
follow out3 "$tok3" boxes/rv/exec/tick/stdout
follow ev3 "$tok3" events
ok "a third token's streams flow" wait_for 10 bash -c "[ \$(grep -c '^line' '$PD_TMP/out3.log') -ge 3 ] && grep -q '^status 200' '$PD_TMP/ev3.log'"
t0=$(date +%s.%N)
ok "rmdir tokens/ID through the mount revokes it" rmdir "$M/tokens/$id3"
ok "its stdout stream ends within 1 s" ends_within out3 "$t0" 1
ok "its events stream ends within 1 s" ends_within ev3 "$t0" 1
ok "the token is refused afterwards" same "$(code -H "Authorization: Bearer $tok3" "$URL/v1/tree/version")" 401
kill "$(cat "$PD_TMP/own.pid")" 2>/dev/null

# --- revocation stops requests already under way -----------------------------------
# midway TOKEN ID METHOD PATH BODY-FILE SPLIT: sends the head and the
# first SPLIT bytes of the body with TOKEN, revokes TOKEN's ID with the
# owner's token (DELETE tokens/ID/), then sends the rest. Prints
# "revoked=STATUS reply=STATUS" (reply "closed" when the connection ended
# without one).
cat >"$PD_TMP/midway.py" <<'EOF2'
import http.client, os, socket, sys, time
from rawhttp import status
tok, tid, method, path, body, split = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], open(sys.argv[5], "rb").read(), int(sys.argv[6])
s = socket.create_connection((os.environ["HOST"], int(os.environ["PORT"])), timeout=10)
s.sendall(("%s /v1/tree/%s HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer %s\r\n"
           "Content-Length: %d\r\n\r\n" % (method, path, tok, len(body))).encode() + body[:split])
time.sleep(0.5)
c = http.client.HTTPConnection(os.environ["HOST"], int(os.environ["PORT"]), timeout=10)
c.request("DELETE", "/v1/tree/tokens/%s/" % tid, headers={"Authorization": "Bearer " + os.environ["PD_TOKEN"]})
revoked = c.getresponse().status
time.sleep(0.3)
try:
    s.sendall(body[split:])
except OSError:
    pass
print("revoked=%d reply=%s" % (revoked, status(s)))
EOF2
midway() {
	python3 "$PD_TMP/midway.py" "$@"
}
cut_off() { # cut_off MIDWAY-OUTPUT: revoked, and the request got no success
	diag "$1"
	case $1 in
	"revoked=204 reply=closed" | "revoked=204 reply=401") return 0 ;;
	esac
	return 1
}
export PD_TOKEN
printf 77777 >"$PD_TMP/ttl.body"
hc -o /dev/null -X PUT --data 600 boxes/x/ttl
read -r id4 tok4 <<<"$(new_token midway-ttl)"
ok "a PUT whose head came before its token's revocation does not act after it (was 204)" cut_off \
	"$(midway "$tok4" "$id4" PUT boxes/x/ttl "$PD_TMP/ttl.body" 0)"
ok "...ttl is not 77777" bash -c "t=\$(cat '$M/boxes/x/ttl'); [ \$t -le 600 ] && [ \$t -gt 500 ]"
hc -o /dev/null -X PUT boxes/x/root/tmp/
python3 - "$PD_TMP/push.tar" <<'EOF2'
import io, sys, tarfile
with tarfile.open(sys.argv[1], "w", format=tarfile.PAX_FORMAT) as t:
    for i in range(8):
        data = bytes([65 + i]) * 65536
        info = tarfile.TarInfo("f%d" % i)
        info.size = len(data)
        t.addfile(info, io.BytesIO(data))
EOF2
read -r id5 tok5 <<<"$(new_token midway-push)"
ok "a tar push trickling in across its token's revocation is cut (was 200)" cut_off \
	"$(midway "$tok5" "$id5" PUT 'boxes/x/root/tmp/pushed/?format=tar' "$PD_TMP/push.tar" 200000)"
ok "...and nothing of it is merged" bash -c "sleep 1
	! hc -fsS -o /dev/null boxes/x/root/tmp/pushed/f0 2>/dev/null && ! hc -fsS -o /dev/null boxes/x/root/tmp/pushed/ 2>/dev/null"
read -r id6 tok6 <<<"$(new_token midway-file)"
ok "a file PUT under root/ trickling in across the revocation is cut" cut_off \
	"$(midway "$tok6" "$id6" PUT boxes/x/root/tmp/trickled "$PD_TMP/push.tar" 200000)"
ok "...and the file is not there" bash -c "sleep 1; ! hc -fsS -o /dev/null boxes/x/root/tmp/trickled 2>/dev/null"
read -r id8 tok8 <<<"$(new_token self)"
ok "a token revoking itself hears that it worked (204), then is refused" same \
	"$(code -X DELETE -H "Authorization: Bearer $tok8" "$URL/v1/tree/tokens/$id8/") $(code -H "Authorization: Bearer $tok8" "$URL/v1/tree/version")" "204 401"
read -r id7 tok7 <<<"$(new_token not-revoked)"
ok "the same push with a token that stays valid works" bash -c "
	curl -fsS -X PUT -H 'Authorization: Bearer $tok7' --data-binary @'$PD_TMP/push.tar' \
		'$URL/v1/tree/boxes/x/root/tmp/pushed3/?format=tar' >/dev/null &&
	[ \"\$(hc -fsS boxes/x/root/tmp/pushed3/f7 | head -c 3)\" = HHH ]"

# --- logins behind a proxy ---------------------------------------------------------
login_from() { # login_from SRC PASSWORD [CURL-ARGS...]: the status
	local src=$1 pw=$2
	shift 2
	code --interface "$src" "$@" --data "{\"password\":\"$pw\"}" "$URL/v1/login"
}
# Three failures lock a client out for 2 s.
fail3() { # fail3 SRC [CURL-ARGS...]: three failures, each past the last lockout
	local src=$1 a b c
	shift
	a=$(login_from "$src" wrong-password-1 "$@")
	sleep 0.6
	b=$(login_from "$src" wrong-password-2 "$@")
	sleep 1.1
	c=$(login_from "$src" wrong-password-3 "$@")
	same "$a $b $c" "401 401 401"
}
ok "via the trusted proxy, a client fails three times: 401" \
	fail3 127.0.0.5 -H 'X-Forwarded-For: 203.0.113.7'
ok "...which locks that client out (429)" same \
	"$(login_from 127.0.0.5 "$PD_PASSWORD" -H 'X-Forwarded-For: 203.0.113.7')" 429
ok "...even when it writes another address to the left" same \
	"$(login_from 127.0.0.5 "$PD_PASSWORD" -H 'X-Forwarded-For: 198.51.100.1, 203.0.113.7')" 429
ok "...but not another client behind the same proxy (was 429 for everyone)" same \
	"$(login_from 127.0.0.5 "$PD_PASSWORD" -H 'X-Forwarded-For: 198.51.100.9')" 200
ok "a chain of trusted proxies: the first untrusted hop counts" same \
	"$(login_from 127.0.0.5 "$PD_PASSWORD" -H 'X-Forwarded-For: 203.0.113.7, 127.0.0.5')" 429
ok "a malformed X-Forwarded-For from the proxy: 400" same \
	"$(login_from 127.0.0.5 "$PD_PASSWORD" -H 'X-Forwarded-For: 203.0.113.7, not-an-address')" 400
ok "from anyone else X-Forwarded-For is ignored: failures" \
	fail3 127.0.0.6 -H 'X-Forwarded-For: 192.0.2.1'
ok "...locks the sender, whatever it claims next" same \
	"$(login_from 127.0.0.6 "$PD_PASSWORD" -H 'X-Forwarded-For: 192.0.2.2')" 429

# --- a login attack from rotating addresses ------------------------------------------
# The attacker (login-attack.py): 32 threads, each attempt from a fresh
# source address, at full speed; killed, not stopped, so that what it has in
# flight is left behind in the server.
diag "login attack: ${ATTACK_SECONDS} s from rotating addresses, 32 threads"
python3 "$(dirname "$0")/login-attack.py" 0 32 10 "$PD_TMP/attack.log" &
attack=$!
sleep "$ATTACK_SECONDS"
kill -9 "$attack"
wait "$attack" 2>/dev/null
tail -n1 "$PD_TMP/attack.log" >"$PD_TMP/attack.json"
t0=$(date +%s.%N)
owner=$(code --interface 127.200.0.1 --max-time 60 --data "{\"password\":\"$PD_PASSWORD\"}" "$URL/v1/login")
t1=$(date +%s.%N)
diag "attack: $(cat "$PD_TMP/attack.json")"
diag "the owner's login right after the attack took $(python3 -c "print('%.2f' % ($t1 - $t0))") s"
ok "right after the attack the owner logs in from a fresh address" same "$owner" 200
ok "the attack made real guesses (the budget is used)" python3 -c '
import json, sys; o = json.load(open(sys.argv[1])); assert o["counts"].get("401", 0) >= o["seconds"] / 2, o' "$PD_TMP/attack.json"
# The budget: 1 verification per second plus a burst of 4 (engine/auth.h);
# before it, rotating addresses gave about 15 guesses per second.
ok "the attacker's guess rate is bounded (at most 1/s + the burst)" python3 -c '
import json, sys; o = json.load(open(sys.argv[1]))
bound = (o["seconds"] + 4) / o["seconds"] + 0.1
assert o["guesses_per_s"] <= bound, (o["guesses_per_s"], bound)' "$PD_TMP/attack.json"
ok "the owner's parked events stream survived the attack (longer than every timeout)" bash -c "
	! grep -q '^end' '$PD_TMP/keep.log' && hc -o /dev/null -X PUT boxes/after/ &&
	wait_for 5 grep -q 'after' '$PD_TMP/keep.log'"

# --- slowloris ---------------------------------------------------------------------------
# siege SRC N SECONDS-TO-HOLD PROBES [PROBE-TIMEOUT]: opens N connections
# from SRC that send half a request head and nothing more; meanwhile PROBES
# requests from 127.0.0.3 (a fresh connection each, given PROBE-TIMEOUT
# seconds, default 10) are timed. SRC is an address, or A.B.C.D+K for K
# addresses from A.B.C.D on (the connections go round them). What the daemon
# holds is counted on its side (its sockets whose peer is one of SRC: one
# still waiting in the listen queue is not held) before the probes, then
# again after them until it holds none or SECONDS-TO-HOLD have passed.
cat >"$PD_TMP/siege.py" <<'EOF'
import http.client, ipaddress, json, os, socket, subprocess, sys, time
host, port, pid = os.environ["HOST"], int(os.environ["PORT"]), os.environ["PD_PID"]
spec, n, hold, probes = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
probe_timeout = float(sys.argv[5]) if len(sys.argv) > 5 else 10
base, _, k = spec.partition("+")
first = int(ipaddress.IPv4Address(base))
srcs = [str(ipaddress.IPv4Address(first + i)) for i in range(int(k or 1))]
def held():
    out = subprocess.run(["ss", "-Htnp", "state", "established", "( sport = :%d )" % port],
                         capture_output=True, text=True).stdout
    return sum(1 for l in out.splitlines()
               if l.split()[3].rsplit(":", 1)[0] in srcs and "pid=%s," % pid in l)
def listen_queue():
    out = subprocess.run(["ss", "-Hltn", "( sport = :%d )" % port], capture_output=True, text=True).stdout
    return int(out.split()[1]) if out.split() else -1
socks = []
for i in range(n):
    s = socket.socket()
    s.setblocking(False)
    s.bind((srcs[i % len(srcs)], 0))
    try:
        s.connect((host, port))
    except BlockingIOError:
        pass
    socks.append(s)
# Each connection that gets through sends half a head, once.
end, pending = time.time() + 20, set(socks)
while pending and time.time() < end:
    for s in list(pending):
        try:
            s.send(b"GET /v1/tree/version HTTP/1.1\r\nHost: slow\r\nX-Slow: ")
            pending.discard(s)
        except BlockingIOError:
            pass
        except OSError:
            pending.discard(s)
    time.sleep(0.05)
time.sleep(1)
h, q = held(), listen_queue()
times = []
for i in range(probes):
    t = time.time()
    try:
        c = http.client.HTTPConnection(host, port, timeout=probe_timeout, source_address=("127.0.0.3", 0))
        c.request("GET", "/v1/tree/version", headers={"Authorization": "Bearer " + os.environ["PD_TOKEN"]})
        st = c.getresponse().status
        c.close()
    except OSError:
        st = 0
    times.append((time.time() - t) * 1000 if st == 200 else None)
t = time.time()
while time.time() - t < hold and held() > 0:
    time.sleep(0.5)
ok = sorted(x for x in times if x is not None)
print(json.dumps({"opened": n, "addresses": len(srcs), "held": h, "listen_queue": q, "held_after_wait": held(),
                  "waited_s": round(time.time() - t, 1), "probes": probes, "served": len(ok),
                  "median_ms": round(ok[len(ok) // 2], 1) if ok else None,
                  "max_ms": round(ok[-1], 1) if ok else None}))
for s in socks:
    s.close()
EOF
export PD_PID
python3 "$PD_TMP/siege.py" 127.0.0.2 2000 20 20 >"$PD_TMP/siege.json"
diag "2,000 idle connections: $(cat "$PD_TMP/siege.json")"
ok "while 2,000 idle connections come from 127.0.0.2, 127.0.0.3 is served in < 100 ms" python3 -c '
import json, sys; o = json.load(open(sys.argv[1]))
assert o["served"] == o["probes"] and o["median_ms"] < 100, o' "$PD_TMP/siege.json"
ok "...the daemon holds at most 128 of them" python3 -c '
import json, sys; o = json.load(open(sys.argv[1])); assert 0 < o["held"] <= 128, o' "$PD_TMP/siege.json"
ok "...and closes those once the head deadline (10 s) passes" python3 -c '
import json, sys; o = json.load(open(sys.argv[1])); assert o["held_after_wait"] == 0, o' "$PD_TMP/siege.json"

python3 "$PD_TMP/siege.py" 127.0.0.2 4500 0 5 >"$PD_TMP/siege2.json"
diag "4,500 idle connections: $(cat "$PD_TMP/siege2.json")"
ok "4,500 idle connections from one address (the 128 it may hold and more waiting) starve no other" python3 -c '
import json, sys; o = json.load(open(sys.argv[1]))
assert o["served"] == o["probes"] and o["median_ms"] < 100, o' "$PD_TMP/siege2.json"

# Spread over 40 addresses (110 each, under the per-address cap), 4,400
# idle connections reach the listener's limit (4,096) instead, which holds.
python3 "$PD_TMP/siege.py" 127.0.1.1+40 4400 0 3 30 >"$PD_TMP/siege4.json"
diag "4,400 idle connections from 40 addresses: $(cat "$PD_TMP/siege4.json")"
ok "4,400 idle connections from 40 addresses: the daemon holds at most 4,096" python3 -c '
import json, sys; o = json.load(open(sys.argv[1])); assert 4000 <= o["held"] <= 4096, o' "$PD_TMP/siege4.json"
# At its limit the listener stops accepting: a fresh address waits in the
# listen queue until the head deadline (10 s) frees the idle ones.
ok "...a fresh address waits at most for the head deadline, then is served" python3 -c '
import json, sys; o = json.load(open(sys.argv[1]))
assert o["served"] == o["probes"] and o["max_ms"] < 13000, o' "$PD_TMP/siege4.json"

# A trusted proxy carries many clients: it is not capped like one.
python3 "$PD_TMP/siege.py" 127.0.0.5 300 0 1 >"$PD_TMP/siege3.json"
diag "300 connections from the trusted proxy: $(cat "$PD_TMP/siege3.json")"
ok "a trusted proxy may hold more than 128 connections" python3 -c '
import json, sys; o = json.load(open(sys.argv[1])); assert o["held"] == 300, o' "$PD_TMP/siege3.json"

ok "after all this, the owner's token still works" same "$(hc -o /dev/null -w '%{http_code}' version)" 200
for f in keep out2 ev2 out3 ev3 own; do
	[ -f "$PD_TMP/$f.pid" ] && kill "$(cat "$PD_TMP/$f.pid")" 2>/dev/null
done
for b in x u rv after; do hc -o /dev/null -X DELETE boxes/$b/; done
pd_done
