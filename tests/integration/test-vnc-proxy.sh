#!/bin/bash
# The desktop's WebSocket (GET /v1/vnc/NAME) through the real daemon: RFB
# from the box's Xvnc through the proxy, view-only by default (a pointer
# event does not move the box's pointer; with control=1 it does), the
# refusals before any upgrade (no token, a wrong one, a box that does not
# exist, a path that is not one segment, a foreign Origin), a revoked
# token's socket closing within about a second (an expired one's within
# about two, saying when), the socket closing when the
# box stops, and the attacks on the VNC socket itself: a link the box plants
# in its place is not followed (the daemon would otherwise connect to a host
# socket), another box and a host user other than root cannot reach it.
#
# Xvnc is started here by an exec job, as the desktop session will start it.
. "$(dirname "$0")/lib.sh"
require_root

CLIENT=$(dirname "$0")/vnc-client.py
PY=/usr/bin/python3
$PY -c 'import websocket' 2>/dev/null || skip_all "python3-websocket is not installed"

pd_use_image desktop
pd_start
pd_owner || { diag "no owner token"; exit 1; }
WS=${PD_URL/http:/ws:}
B=$M/boxes/desk

mkdir "$B"
echo desktop >"$B/image"

# status PATH [CURL-ARGS...]: the HTTP status of a WebSocket handshake on
# PATH (raw: --path-as-is), the body to $PD_TMP/body.
status() {
	local path=$1
	shift
	curl -sS --path-as-is -o "$PD_TMP/body" -w '%{http_code}' --max-time 5 \
		-H 'Connection: Upgrade' -H 'Upgrade: websocket' -H 'Sec-WebSocket-Version: 13' \
		-H 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==' "$@" "$PD_URL$path"
}

export -f status

# shown FILE CMD...: CMD, and FILE as diagnostics when it fails.
shown() {
	local f=$1
	shift
	"$@" && return 0
	sed 's/^/# /' "$f"
	return 1
}
export PD_TMP

start_job() {
	mkdir "$B/exec/$1" && echo "$2" >"$B/exec/$1/cmd"
}

# as_root BOX NAME CMD: runs CMD as the box's root (job NAME), waits for it.
as_root() {
	mkdir "$M/boxes/$1/exec/$2" && echo root >"$M/boxes/$1/exec/$2/user" &&
		echo "$3" >"$M/boxes/$1/exec/$2/cmd" &&
		same "$(timeout 30 cat "$M/boxes/$1/exec/$2/exit")" 0 ||
		{ sed 's/^/# /' "$M/boxes/$1/exec/$2/output"; return 1; }
}

# The desktop's directory as the session makes it: the box user's, 0700.
desk_dir() {
	as_root desk "mkdir$1" "rm -rf /run/paddock-desktop && install -d -m 700 -o $user -g $user /run/paddock-desktop"
}

xvnc_cmd='exec Xvnc :1 -rfbport -1 -rfbunixpath /run/paddock-desktop/vnc.sock -rfbunixmode 0600 \
		-SecurityTypes None -geometry 1280x800 -depth 24'

# Before the desktop is on: a clear refusal, no upgrade.
user=$(pd_job desk 'id -un')
desk_dir 1
ok "a desktop that is off: 409 with the reason" bash -c "
	[ \"\$(status /v1/vnc/desk -H 'Authorization: Bearer $PD_TOKEN')\" = 409 ] &&
	grep -q 'the desktop is off' '$PD_TMP/body'"

ok "Xvnc starts on the desktop's socket" start_job xvnc "$xvnc_cmd"
ok "its socket appears" shown "$B/exec/xvnc/output" wait_for 60 test -S "$B/root/run/paddock-desktop/vnc.sock"
ROOTFS=$(ls -d "$D"/boxes/*/rootfs/run/paddock-desktop | head -n1)
ROOTFS=${ROOTFS%/run/paddock-desktop}

# RFB through the proxy: Bearer, and the token as a subprotocol.
out=$($PY "$CLIENT" init "$WS/v1/vnc/desk" --token "$PD_TOKEN" 2>&1)
ok "RFB 003.008 from the box's Xvnc through the proxy (Bearer)" grep -qx 'version RFB 003.008' <<<"$out"
ok "a full framebuffer update of the desktop's size" grep -qx 'update 1280x800 rects [0-9]*' <<<"$out"
[ -n "$out" ] && sed 's/^/# /' <<<"$out"
out=$($PY "$CLIENT" init "$WS/v1/vnc/desk" --proto "$PD_TOKEN" 2>&1)
ok "the same with the token as the subprotocol paddock-token.TOKEN" \
	grep -qx 'update 1280x800 rects [0-9]*' <<<"$out"
ok "the server answers the subprotocol binary" bash -c "
	curl -sS -i --max-time 2 -H 'Connection: Upgrade' -H 'Upgrade: websocket' \
		-H 'Sec-WebSocket-Version: 13' -H 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==' \
		-H 'Sec-WebSocket-Protocol: binary, paddock-token.$PD_TOKEN' '$PD_URL/v1/vnc/desk' 2>/dev/null |
	tr -d '\r' | grep -qix 'Sec-WebSocket-Protocol: binary'"
curl -sS -i --max-time 2 -H 'Connection: Upgrade' -H 'Upgrade: websocket' \
	-H 'Sec-WebSocket-Version: 13' -H 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==' \
	-H "Authorization: Bearer $PD_TOKEN" "$PD_URL/v1/vnc/desk" 2>/dev/null | tr -d '\r' >"$PD_TMP/head"
ok "the Sec-WebSocket-Accept of RFC 6455's example key" shown "$PD_TMP/head" \
	grep -qx 'Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=' "$PD_TMP/head"

# View-only: the pointer stays; with control=1 it moves.
where() {
	pd_job desk 'DISPLAY=:1 xdotool getmouselocation --shell' | awk -F= '$1 == "X" {x = $2} $1 == "Y" {y = $2} END {print x "," y}'
}
before=$(where)
diag "pointer at $before"
$PY "$CLIENT" pointer "$WS/v1/vnc/desk" 123 234 --token "$PD_TOKEN" >/dev/null 2>"$PD_TMP/err" ||
	sed 's/^/# /' "$PD_TMP/err"
ok "view-only: a pointer event through the proxy does not move the pointer" same "$(where)" "$before"
$PY "$CLIENT" pointer "$WS/v1/vnc/desk?control=0" 123 234 --token "$PD_TOKEN" >/dev/null 2>&1
ok "control=0 is view-only too" same "$(where)" "$before"
$PY "$CLIENT" pointer "$WS/v1/vnc/desk?control=1" 123 234 --token "$PD_TOKEN" >/dev/null 2>"$PD_TMP/err" ||
	sed 's/^/# /' "$PD_TMP/err"
ok "control=1: the same event moves it" same "$(where)" "123,234"

# Refusals, before any upgrade.
ok "no token: 401" same "$(status /v1/vnc/desk)" 401
ok "a wrong token: 401" same "$(status /v1/vnc/desk -H 'Authorization: Bearer pd_aaaaaaaaaaaa_bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb')" 401
ok "a wrong token as the subprotocol: 401" \
	same "$(status /v1/vnc/desk -H 'Sec-WebSocket-Protocol: binary, paddock-token.pd_aaaaaaaaaaaa_bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb')" 401
ok "a box that does not exist: 404" same "$(status /v1/vnc/nosuch -H "Authorization: Bearer $PD_TOKEN")" 404
for p in /v1/vnc/../vnc/desk /v1/vnc/desk/.. '/v1/vnc/desk%2F..' '/v1/vnc/%2E%2E' '/v1/vnc/desk%2Fx' /v1/vnc/ '/v1/vnc/desk%00'; do
	ok "path $p: 400 or 404, no upgrade" bash -c "
		s=\$(status '$p' -H 'Authorization: Bearer $PD_TOKEN'); [ \"\$s\" = 400 ] || [ \"\$s\" = 404 ]"
done
ok "a foreign Origin: 403" same "$(status /v1/vnc/desk -H "Authorization: Bearer $PD_TOKEN" -H 'Origin: http://evil.example')" 403
host=${PD_URL#http://}
ok "the server's own Origin: upgraded (101)" same "$(status /v1/vnc/desk -H "Authorization: Bearer $PD_TOKEN" -H "Origin: $PD_URL")" 101
ok "no Upgrade header: 400" same "$(curl -sS -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $PD_TOKEN" "$PD_URL/v1/vnc/desk")" 400
ok "a text frame closes the socket (1003)" $PY -c "
import websocket, sys
ws = websocket.create_connection('$WS/v1/vnc/desk', header=['Authorization: Bearer $PD_TOKEN'], timeout=10)
ws.recv()
ws.send('RFB 003.008\n')
op, f = ws.recv_data_frame(True)
while op != websocket.ABNF.OPCODE_CLOSE:
    op, f = ws.recv_data_frame(True)
sys.exit(0 if f.data[:2] == b'\x03\xeb' else 1)"
ok "an unknown RFB message closes the socket (1008)" $PY -c "
import websocket, sys
ws = websocket.create_connection('$WS/v1/vnc/desk', header=['Authorization: Bearer $PD_TOKEN'], timeout=10)
ws.recv()
ws.send_binary(b'RFB 003.008\n\x01\x01\x07\x00\x00\x00')
op, f = ws.recv_data_frame(True)
while op != websocket.ABNF.OPCODE_CLOSE:
    op, f = ws.recv_data_frame(True)
sys.exit(0 if f.data[:2] == b'\x03\xf0' else 1)"
ok "the token is never logged" bash -c "! grep -qF '${PD_TOKEN##*_}' '$PD_TMP/paddockd.log'"

# A revoked token: its open socket closes within about a second.
token2=$(curl -fsS -H 'Accept: text/plain' --data "{\"password\":\"$PD_PASSWORD\",\"label\":\"vnc\"}" "$PD_URL/v1/login")
id2=$(cut -d_ -f2 <<<"$token2")
timeout 90 $PY "$CLIENT" hold "$WS/v1/vnc/desk" --proto "$token2" >"$PD_TMP/hold" 2>&1 &
hold=$!
ok "a socket opened with a second token" wait_for 20 grep -q open "$PD_TMP/hold"
t0=$(date +%s.%N)
rmdir "$M/tokens/$id2"
ok "revoking the token closes it (1008)" shown "$PD_TMP/hold" wait_for 5 grep -q '^closed 1008' "$PD_TMP/hold"
wait "$hold"
t1=$(awk '/^closed/ {print $NF}' "$PD_TMP/hold")
diag "closed $(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", b - a}') s after the revocation"
ok "within a second and a half" awk -v a="$t0" -v b="$t1" 'BEGIN {exit !(b - a < 1.5)}'
ok "and the token opens no new one: 401" same "$(status /v1/vnc/desk -H "Authorization: Bearer $token2")" 401

# A token that expires: its socket closes within about two seconds of it,
# saying when; then it opens no new one.
out=$(curl -fsS -H 'Content-Type: application/json' \
	--data "{\"password\":\"$PD_PASSWORD\",\"label\":\"vnc-short\",\"ttl\":3}" "$PD_URL/v1/login")
token3=$(jq -r .token <<<"$out")
exp3=$(jq -r .expires <<<"$out")
timeout 90 $PY "$CLIENT" hold "$WS/v1/vnc/desk" --proto "$token3" >"$PD_TMP/hold3" 2>&1 &
hold=$!
ok "a socket opened with a token that expires" wait_for 20 grep -q open "$PD_TMP/hold3"
ok "its expiry closes it (1008, the token expired at TIME)" shown "$PD_TMP/hold3" \
	wait_for 8 grep -q "^closed 1008 the_token_expired_at_$exp3 " "$PD_TMP/hold3"
wait "$hold"
ok "and the expired token opens no new one: 401" same "$(status /v1/vnc/desk -H "Authorization: Bearer $token3")" 401
ok "... saying so" grep -qF "the token expired at $exp3" "$PD_TMP/body"

# Idle: a socket with nothing to say stays open past the HTTP timeouts.
timeout 90 $PY "$CLIENT" hold "$WS/v1/vnc/desk" --token "$PD_TOKEN" >"$PD_TMP/idle" 2>&1 &
idle=$!
wait_for 20 grep -q open "$PD_TMP/idle"
sleep 40
ok "an idle socket outlives the 30 s HTTP timeouts" shown "$PD_TMP/idle" bash -c "
	kill -0 $idle && ! grep -q 'closed\|error' '$PD_TMP/idle'"

# The desktop ends (Xvnc killed): the socket closes.
echo kill >"$B/exec/xvnc/ctl"
ok "Xvnc's end closes the socket (1000)" shown "$PD_TMP/idle" wait_for 10 grep -q '^closed 1000' "$PD_TMP/idle"
wait "$idle"

# A link the box plants where the socket belongs, to a socket of the host:
# not followed (the host's socket sees no connection).
$PY -c "
import socket, sys, os
s = socket.socket(socket.AF_UNIX)
s.bind('$PD_TMP/host.sock')
os.chmod('$PD_TMP/host.sock', 0o666)
s.listen(8)
s.settimeout(60)
try:
    c, _ = s.accept()
    open('$PD_TMP/host-hit', 'w').write('hit')
except socket.timeout:
    pass" &
lsn=$!
wait_for 10 test -S "$PD_TMP/host.sock"
desk_dir 2
pd_job desk "ln -sfn '$PD_TMP/host.sock' /run/paddock-desktop/vnc.sock" >/dev/null
ok "a link to a host socket at the VNC socket's place: refused (409)" \
	same "$(status /v1/vnc/desk -H "Authorization: Bearer $PD_TOKEN")" 409
diag "$(cat "$PD_TMP/body")"
as_root desk link "rm -rf /run/paddock-desktop && ln -sfn '$PD_TMP' /run/paddock-desktop"
ln -sfn host.sock "$PD_TMP/vnc.sock"
ok "a link to a host directory in place of the socket's directory: refused (409)" \
	same "$(status /v1/vnc/desk -H "Authorization: Bearer $PD_TOKEN")" 409
ok "the host's socket saw no connection" test ! -e "$PD_TMP/host-hit"
kill "$lsn" 2>/dev/null
wait "$lsn" 2>/dev/null

# Xvnc again, for the reachability checks.
desk_dir 3
start_job xvnc2 "$xvnc_cmd"
wait_for 60 test -S "$B/root/run/paddock-desktop/vnc.sock"
ok "Xvnc serves again" bash -c "$PY '$CLIENT' init '$WS/v1/vnc/desk' --token '$PD_TOKEN' | grep -q '^update'"
# Another box: not its file, not its socket (unix sockets of another
# network namespace are not even listed).
mkdir "$M/boxes/other"
echo desktop >"$M/boxes/other/image"
ok "another box cannot connect to the desktop's socket" pd_job other "python3 -c '
import socket
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(\"/run/paddock-desktop/vnc.sock\")
    raise SystemExit(1)
except OSError:
    pass' && ! grep -q paddock-desktop /proc/net/unix"
# A host user other than root: neither through the daemon's data nor
# through the box's root view.
sockpath=$(ls -d "$PD_TMP"/run/roots/*/run/paddock-desktop/vnc.sock 2>/dev/null | head -n1)
for p in "$ROOTFS/run/paddock-desktop/vnc.sock" "$sockpath"; do
	[ -n "$p" ] || continue
	ok "nobody on the host cannot connect to ${p#$PD_TMP/}" bash -c "
		! setpriv --reuid=65534 --regid=65534 --clear-groups $PY -c '
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])' '$p' 2>/dev/null"
done
ok "but root can (the path is right)" $PY -c "
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])" "$ROOTFS/run/paddock-desktop/vnc.sock"

# The box stops: the socket closes.
timeout 90 $PY "$CLIENT" hold "$WS/v1/vnc/desk" --token "$PD_TOKEN" >"$PD_TMP/stop" 2>&1 &
h3=$!
wait_for 20 grep -q open "$PD_TMP/stop"
echo stopped >"$B/state"
ok "stopping the box closes the socket" wait_for 30 grep -q '^closed' "$PD_TMP/stop"
wait "$h3"
ok "a stopped box: 409" same "$(status /v1/vnc/desk -H "Authorization: Bearer $PD_TOKEN")" 409

rmdir "$M/boxes/other"

# The daemon stops with a socket open: it says so (1001) and ends cleanly
# (pd_done judges the exit and the sanitizers).
echo running >"$B/state"
desk_dir 4
start_job xvnc3 "$xvnc_cmd"
wait_for 60 test -S "$B/root/run/paddock-desktop/vnc.sock"
timeout 90 $PY "$CLIENT" hold "$WS/v1/vnc/desk" --token "$PD_TOKEN" >"$PD_TMP/last" 2>&1 &
h4=$!
ok "a socket is open" wait_for 20 grep -q open "$PD_TMP/last"
pd_stop
wait "$h4"
ok "the daemon's stop closes it (1001)" shown "$PD_TMP/last" grep -q '^closed 1001' "$PD_TMP/last"
pd_done
