#!/bin/bash
# The HTTP mirror against a real daemon: owner setup and login, tokens,
# the tree over HTTP (values, listings, control writes, mkdir/rmdir,
# streams), files under root/ and tar push/pull, hostile paths and
# archives, 100 streaming clients, and clients that go away mid-stream.
. "$(dirname "$0")/lib.sh"

pd_start
ok "RUN/http-url names the bound port" wait_for 10 test -s "$PD_TMP/run/http-url"
URL=$(pd_url)
SOCK=$PD_TMP/run/paddock.sock

code() { # code [CURL-ARGS...] URL: the status code only
	curl -sS -o /dev/null -w '%{http_code}' "$@"
}

# --- setup link and login -----------------------------------------------
ok "the setup link is written to DATA/setup-url, mode 0600" \
	same "$(stat -c %a "$D/setup-url" 2>/dev/null)" 600
link=$(cat "$D/setup-url")
secret=${link##*token=}
ok "the setup page opens with the secret" same "$(code "$URL/setup?token=$secret")" 200
ok "a wrong secret is refused" same "$(code -H 'Content-Type: application/json' \
	--data '{"token":"wrong","password":"longenough"}' "$URL/v1/setup")" 404
ok "a short password is refused" same "$(code -H 'Content-Type: application/json' \
	--data "{\"token\":\"$secret\",\"password\":\"short\"}" "$URL/v1/setup")" 400
ok "login before setup is refused" same "$(code --data '{"password":"whatever1"}' "$URL/v1/login")" 401
sleep 1 # past the failed attempt's lockout
ok "pd_owner: setup then login" pd_owner "right-password-1"
ok "the setup link works only once" same "$(code -H 'Content-Type: application/json' \
	--data "{\"token\":\"$secret\",\"password\":\"another-pass\"}" "$URL/v1/setup")" 404
ok "DATA/setup-url is gone" test ! -e "$D/setup-url"
ok "the setup page says it is used" same "$(code "$URL/setup?token=$secret")" 404
ok "a token looks like pd_ID_SECRET" bash -c '[[ $PD_TOKEN =~ ^pd_[a-z0-9]{12}_[A-Za-z0-9_-]{43}$ ]]'
json_token=$(curl -sS --data '{"password":"right-password-1","label":"second"}' "$URL/v1/login")
ok "login answers JSON by default" python3 -c '
import json, sys
o = json.loads(sys.argv[1]); assert o["token"].startswith("pd_") and o["id"]' "$json_token"

# --- every route needs a token ---------------------------------------------
for path in "/v1/tree/" "/v1/tree/boxes/" "/v1/tree/version" "/v1/tree/events" \
	"/v1/tree/tokens/" "/v1/tree/boxes/x/root/etc/passwd" "/v1/other"; do
	ok "GET $path without a token: 401" same "$(code "$URL$path")" 401
done
ok "PUT without a token: 401" same "$(code -X PUT "$URL/v1/tree/boxes/x/")" 401
ok "DELETE without a token: 401" same "$(code -X DELETE "$URL/v1/tree/boxes/x/")" 401
ok "a bad token: 401" same "$(code -H 'Authorization: Bearer pd_aaaaaaaaaaaa_bbb' "$URL/v1/tree/")" 401
ok "401 says why, in JSON" bash -c "curl -sS '$URL/v1/tree/' | grep -q '\"errno\":\"EACCES\"'"
ok "no box was made by refused requests" test ! -e "$M/boxes/x"
ok "the unix socket needs no token" same "$(code --unix-socket "$SOCK" http://x/v1/tree/version)" 200
# 0660 root:paddock where the group exists (test-http-attacks.sh checks who
# gets in), 0600 root:root otherwise.
if getent group paddock >/dev/null; then
	ok "the unix socket is 0660 root:paddock" same "$(stat -c '%a %U:%G' "$SOCK")" "660 root:paddock"
else
	ok "the unix socket is root's only (0600, no group paddock)" same "$(stat -c '%a %U' "$SOCK")" "600 root"
fi

# --- the tree over HTTP -----------------------------------------------------
ok "GET version" same "$(hc version)" "$(cat "$M/version")"
ok "GET / lists the root as JSON" python3 -c '
import json, sys
o = json.loads(sys.argv[1])
names = {e["name"]: e for e in o["entries"]}
assert names["boxes"]["type"] == "dir" and names["version"]["type"] == "file", o
assert names["version"]["mode"] == "0440", o' "$(hc "")"
ok "mkdir boxes/web over HTTP" same "$(hc -o /dev/null -w '%{http_code}' -X PUT boxes/web/)" 201
ok "the box is visible through the mount at once" same "$(cat "$M/boxes/web/state" 2>&1)" created
ok "?format=text lists one line per entry" bash -c "hc 'boxes/?format=text' | grep -qx 'd 0770 0 web'"
ok "a bad control write: 400 with the error file's text" bash -c "
	out=\$(hc -w ' %{http_code}' -X PUT --data-binary bogus boxes/web/state)
	[[ \$out == *'\"errno\":\"EINVAL\"'*' 400' ]] && [[ \$out == *state* ]]"
ok "...and it changed nothing" same "$(cat "$M/boxes/web/state")" created
ok "PUT ttl" same "$(hc -o /dev/null -w '%{http_code}' -X PUT --data 600 boxes/web/ttl)" 204
ok "...seen through the mount" bash -c "t=\$(cat '$M/boxes/web/ttl'); [ \"\$t\" -le 600 ] && [ \"\$t\" -ge 590 ]"
ok "a missing file: 404" same "$(hc -o /dev/null -w '%{http_code}' boxes/web/nope)" 404
ok "mkdir of a taken name: 409" same "$(hc -o /dev/null -w '%{http_code}' -X PUT boxes/web/)" 409
ok "a bad name: 400" same "$(hc -o /dev/null -w '%{http_code}' -X PUT boxes/Bad_Name/)" 400
ok "a control body over 64 KiB: 413" same "$(head -c 70000 /dev/zero | tr '\0' a |
	hc -o /dev/null -w '%{http_code}' -X PUT --data-binary @- boxes/web/ttl)" 413

# --- escapes in URLs -------------------------------------------------------
for p in "boxes/../version" "boxes/%2e%2e/version" "boxes/web/root/../../../etc/passwd" \
	"boxes/web/root/%2e%2e/%2e%2e/etc/hostname" "boxes//web" "boxes/./web/state"; do
	ok "path $p: 400" same "$(curl -sS --path-as-is -o /dev/null -w '%{http_code}' \
		-H "Authorization: Bearer $PD_TOKEN" "$URL/v1/tree/$p")" 400
done

# --- jobs and streams --------------------------------------------------------
ok "mkdir a named job" same "$(hc -o /dev/null -w '%{http_code}' -X PUT boxes/web/exec/j1/)" 201
# The job writes line N+1 only once the reader has line N (it waits for
# /tmp/goN+1, which the reader makes): a stream that is not followed live
# never gets past line1 (the reader gives up after 60 s).
ok "PUT cmd starts it" same "$(hc -o /dev/null -w '%{http_code}' -X PUT \
	--data 'echo line1; until [ -e /tmp/go2 ]; do sleep 0.1; done; echo line2; until [ -e /tmp/go3 ]; do sleep 0.1; done; echo line3; echo oops >&2; exit 3' \
	boxes/web/exec/j1/cmd)" 204
python3 - "$URL" "$PD_TOKEN" "$M/boxes/web/root" >"$PD_TMP/live.txt" 2>&1 <<'EOF'
import signal, sys, urllib.request
url, tok, root = sys.argv[1:4]
signal.alarm(60)
req = urllib.request.Request(url + "/v1/tree/boxes/web/exec/j1/stdout",
                             headers={"Authorization": "Bearer " + tok})
n = 0
with urllib.request.urlopen(req) as r:
    while True:
        line = r.readline()
        if not line:
            break
        n += 1
        print(line.decode().strip(), flush=True)
        open("%s/tmp/go%d" % (root, n + 1), "w").close()
EOF
ok "stdout follows the job live (each line before the next is written)" \
	same "$(tr '\n' ' ' <"$PD_TMP/live.txt")" "line1 line2 line3 "
ok "exit waits and returns the code" same "$(hc boxes/web/exec/j1/exit)" 3
ok "stderr on its own" same "$(hc boxes/web/exec/j1/stderr)" oops
ok "?follow=0 of a finished stream" same "$(hc 'boxes/web/exec/j1/output?follow=0' | tr '\n' ' ')" \
	"line1 line2 line3 oops "
ok "exec/new then exec/last/stdout" bash -c "
	hc -o /dev/null -X PUT --data 'echo via-last' boxes/web/exec/new &&
	[ \"\$(hc boxes/web/exec/last/stdout)\" = via-last ]"
# stdin: the answer says how much the job's pipes took; a body bigger
# than they take is taken in part (the rest is the client's to send).
hc -fsS -o /dev/null -X PUT boxes/web/exec/in/ && hc -fsS -o /dev/null -X PUT --data 'sleep 2; wc -c' boxes/web/exec/in/cmd
ok "PUT stdin answers what it took: all of a small body" \
	same "$(hc -X PUT --data-binary 'hello' boxes/web/exec/in/stdin)" '{"written":5}'
# Bodies of 60000 bytes until the pipes are full (503): one is taken in
# part on the way.
head -c 60000 /dev/zero >"$PD_TMP/piece.in"
sum=5 short=
for _ in $(seq 60); do
	a=$(hc -X PUT --data-binary @"$PD_TMP/piece.in" boxes/web/exec/in/stdin)
	n=$(printf '%s' "$a" | jq -r '.written // empty' 2>/dev/null)
	[ -n "$n" ] || break
	sum=$((sum + n))
	[ "$n" -lt 60000 ] && short="$n"
done
ok "filled up: a body taken in part (${short:-none} of 60000 bytes), then EAGAIN" \
	bash -c "[ -n '$short' ] && printf '%s' '$a' | grep -q EAGAIN"
hc -fsS -o /dev/null -X PUT --data eof boxes/web/exec/in/ctl
ok "the job read exactly what the answers said ($sum bytes)" same "$(hc boxes/web/exec/in/stdout | tr -d ' ')" "$sum"
ok "GET exec/last itself shows the link" bash -c "hc boxes/web/exec/last | grep -q '\"link\"'"
# Each read returns at once (timeout 5 < the job's 30 s); the first may
# come before the job has written.
first_now() {
	[ "$(timeout 5 curl -sS -H "Authorization: Bearer $PD_TOKEN" \
		"$URL/v1/tree/boxes/web/exec/slow/stdout?follow=0")" = first ]
}
ok "?follow=0 on a running job returns at once" bash -c "$(declare -f first_now); URL='$URL'
	hc -o /dev/null -X PUT boxes/web/exec/slow/ &&
	hc -o /dev/null -X PUT --data 'echo first; sleep 30' boxes/web/exec/slow/cmd &&
	wait_for 20 first_now"

fds_before=$(ls /proc/$PD_PID/fd | wc -l)
# conns N: the daemon holds N connections or more.
conns() {
	[ "$(ss -Htn state established "( sport = :${URL##*:} )" | wc -l)" -ge "$1" ]
}
# 100 clients follow one job's output at once; the job then prints and ends.
hc -o /dev/null -X PUT boxes/web/exec/many/
hc -o /dev/null -X PUT --data 'sleep 2; seq 1 1000' boxes/web/exec/many/cmd
for i in $(seq 1 100); do
	curl -sS -H "Authorization: Bearer $PD_TOKEN" "$URL/v1/tree/boxes/web/exec/many/stdout" \
		>"$PD_TMP/many.$i" 2>&1 &
	echo $! >>"$PD_TMP/many.pids"
done
wait_for 20 conns 100 || diag "fewer than 100 streams connected"
ok "while 100 streams are parked, state answers at once" bash -c "
	s=\$(date +%s%N); v=\$(hc boxes/web/state); e=\$(date +%s%N)
	[ \"\$v\" = running ] && [ \$(((e - s) / 1000000)) -lt 1000 ]"
for p in $(cat "$PD_TMP/many.pids"); do wait_for 20 bash -c "! kill -0 $p"; done
good=0
for i in $(seq 1 100); do
	[ "$(seq 1 1000 | sha256sum)" = "$(sha256sum <"$PD_TMP/many.$i")" ] && good=$((good + 1))
done
ok "all 100 clients got the whole output" same "$good" 100

# Clients that go away while parked: nothing is left behind.
for i in $(seq 1 20); do
	curl -sS -H "Authorization: Bearer $PD_TOKEN" "$URL/v1/tree/boxes/web/exec/slow/stdout" \
		>/dev/null 2>&1 &
	echo $! >>"$PD_TMP/gone.pids"
done
wait_for 20 conns 20 || diag "fewer than 20 streams connected"
for p in $(cat "$PD_TMP/gone.pids"); do kill "$p" 2>/dev/null; done
ok "connections of clients that left are closed" wait_for 10 bash -c \
	"[ \$(ls /proc/$PD_PID/fd | wc -l) -le $((fds_before + 2)) ]"

# --- root/: files and tar ---------------------------------------------------
ok "PUT a file under root/" same "$(printf 'hello\n' | hc -o /dev/null -w '%{http_code}' \
	-X PUT --data-binary @- boxes/web/root/tmp/hello.txt)" 204
ok "...the box sees it" bash -c "
	hc -o /dev/null -X PUT --data 'cat /tmp/hello.txt' boxes/web/exec/new &&
	[ \"\$(hc boxes/web/exec/last/stdout)\" = hello ]"
ok "GET it back" same "$(hc boxes/web/root/tmp/hello.txt)" hello
ok "a file the box writes is read over HTTP" bash -c "
	hc -o /dev/null -X PUT --data 'echo from-box > /tmp/b.txt' boxes/web/exec/new &&
	hc -o /dev/null boxes/web/exec/last/exit &&
	[ \"\$(hc boxes/web/root/tmp/b.txt)\" = from-box ]"
ok "mkdir -p under root/" same "$(hc -o /dev/null -w '%{http_code}' -X PUT boxes/web/root/tmp/a/b/c/)" 201
ok "list a directory of root/" bash -c "hc 'boxes/web/root/tmp/?format=text' | grep -q ' hello.txt\$'"
ok "DELETE a file" same "$(hc -o /dev/null -w '%{http_code}' -X DELETE boxes/web/root/tmp/hello.txt)" 204
ok "a non-empty directory needs recursive=1" same \
	"$(hc -o /dev/null -w '%{http_code}' -X DELETE boxes/web/root/tmp/a/)" 409
ok "recursive=1 removes it" same \
	"$(hc -o /dev/null -w '%{http_code}' -X DELETE 'boxes/web/root/tmp/a/?recursive=1')" 204

# A symlink planted by the box that points at host files.
secret_file=$PD_TMP/host-secret
echo host-only >"$secret_file"
hc -o /dev/null -X PUT --data "ln -s $secret_file /tmp/evil; ln -s / /tmp/rootlink" \
	boxes/web/exec/new
hc -o /dev/null boxes/web/exec/last/exit
ok "a planted link to a host file does not read the host file" bash -c "
	[ \"\$(hc boxes/web/root/tmp/evil)\" != host-only ]"
ok "writing through it does not touch the host file" bash -c "
	echo pwned | hc -o /dev/null -X PUT --data-binary @- boxes/web/root/tmp/evil
	[ \"\$(cat '$secret_file')\" = host-only ]"
ok "a planted link to / stays inside the box" bash -c "
	[ \"\$(hc -o /dev/null -w '%{http_code}' boxes/web/root/tmp/rootlink$PD_TMP/host-secret)\" = 404 ]"

# tar push and pull
mkdir -p "$PD_TMP/proj/src/deep" && echo one >"$PD_TMP/proj/a.txt" &&
	echo two >"$PD_TMP/proj/src/deep/b.txt" && ln -s a.txt "$PD_TMP/proj/link"
ok "tar push" bash -c "tar -C '$PD_TMP/proj' -cf - . |
	hc -X PUT --data-binary @- 'boxes/web/root/opt/proj/?format=tar' | grep -q '\"entries\"'"
ok "...the box sees the tree" bash -c "
	hc -o /dev/null -X PUT --data 'cat /opt/proj/src/deep/b.txt /opt/proj/link' boxes/web/exec/new &&
	[ \"\$(hc boxes/web/exec/last/stdout | tr '\n' ' ')\" = 'two one ' ]"
ok "tar pull round trip" bash -c "mkdir -p '$PD_TMP/back' &&
	hc 'boxes/web/root/opt/proj?format=tar' | tar -C '$PD_TMP/back' -xf - &&
	diff -r '$PD_TMP/proj' '$PD_TMP/back' && [ \"\$(readlink '$PD_TMP/back/link')\" = a.txt ]"
python3 - "$PD_TMP" <<'EOF'
import io, sys, tarfile
d = sys.argv[1]
def make(name, members):
    with tarfile.open(f"{d}/{name}.tar", "w") as t:
        for m, data in members:
            t.addfile(m, io.BytesIO(data) if data is not None else None)
def f(name, data=b"x"):
    i = tarfile.TarInfo(name); i.size = len(data); return (i, data)
def l(name, target, kind=tarfile.SYMTYPE):
    i = tarfile.TarInfo(name); i.type = kind; i.linkname = target; return (i, None)
def dev(name):
    i = tarfile.TarInfo(name); i.type = tarfile.CHRTYPE; i.devmajor = 1; i.devminor = 3; return (i, None)
make("dotdot", [f("good1"), f("../../escape")])
make("abs", [f("good1"), f(d + "/abs-escape")])
make("linkout", [f("good1"), l("out", "../../../../../../" + d.lstrip("/"))])
make("hardout", [f("good1"), l("hard", "/etc/passwd", tarfile.LNKTYPE)])
make("device", [f("good1"), dev("null")])
make("via-link", [l("sub", "../.."), f("sub/x")])
EOF
for a in dotdot abs linkout hardout device via-link; do
	ok "hostile archive ($a) is refused with a reason" bash -c "
		out=\$(hc -w ' %{http_code}' -X PUT --data-binary @'$PD_TMP/$a.tar' \
			'boxes/web/root/opt/h-$a/?format=tar')
		[[ \$out == *'\"error\"'* ]] && [[ \${out##* } == 4?? ]]"
	ok "...and leaves nothing behind ($a)" bash -c "
		[ \"\$(hc -o /dev/null -w '%{http_code}' boxes/web/root/opt/h-$a/)\" = 404 ]"
done
ok "nothing escaped to the host" bash -c "! ls '$PD_TMP'/abs-escape '$PD_TMP'/../escape 2>/dev/null | grep -q ."
ok "a truncated archive is refused and leaves nothing" bash -c "
	head -c 700 '$PD_TMP/dotdot.tar' >'$PD_TMP/trunc.tar'
	tar -C '$PD_TMP/proj' -cf - . | head -c 3000 >'$PD_TMP/trunc.tar'
	c=\$(hc -o /dev/null -w '%{http_code}' -X PUT --data-binary @'$PD_TMP/trunc.tar' 'boxes/web/root/opt/trunc/?format=tar')
	[ \"\$c\" = 400 ] && [ \"\$(hc -o /dev/null -w '%{http_code}' boxes/web/root/opt/trunc/)\" = 404 ]"

# --- tokens ------------------------------------------------------------------
ok "tokens/ lists the tokens" bash -c "[ \$(hc 'tokens/?format=text' | wc -l) -ge 2 ]"
id=$(echo "$PD_TOKEN" | cut -d_ -f2)
second=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["id"])' "$json_token")
second_token=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["token"])' "$json_token")
ok "a token's label" same "$(hc tokens/$second/label)" second
ok "revoke the second token" same "$(hc -o /dev/null -w '%{http_code}' -X DELETE tokens/$second/)" 204
ok "a revoked token: 401" same "$(code -H "Authorization: Bearer $second_token" "$URL/v1/tree/")" 401
ok "the first still works" same "$(hc -o /dev/null -w '%{http_code}' version)" 200
ok "it is gone from the mount too" test ! -e "$M/tokens/$second"

# --- rate limit -----------------------------------------------------------------
c1=$(code --data '{"password":"wrong-pass-1"}' "$URL/v1/login")
c2=$(code --data '{"password":"wrong-pass-2"}' "$URL/v1/login")
c3=$(code --data '{"password":"right-password-1"}' "$URL/v1/login")
ok "wrong passwords: 401, then limited (429)" same "$c1 $c2 $c3" "401 429 429"
ok "429 says when to retry" bash -c "curl -sS -D - -o /dev/null --data '{\"password\":\"x\"}' '$URL/v1/login' | grep -qi '^retry-after: [0-9]'"

# --- delete ----------------------------------------------------------------------
ino_before=$(stat -c %i "$M/boxes/web")
created_before=$(cat "$M/boxes/web/created")
ok "DELETE boxes/web/" same "$(hc -o /dev/null -w '%{http_code}' -X DELETE boxes/web/)" 204
ok "gone from the mount at once (the kernel's cached entry is dropped)" test ! -e "$M/boxes/web"
sleep 1.1
ok "created again over HTTP" same "$(hc -o /dev/null -w '%{http_code}' -X PUT boxes/web/)" 201
ok "the mount shows the new box, not the old one" bash -c "
	[ \"\$(stat -c %i '$M/boxes/web')\" != '$ino_before' ] &&
	[ \"\$(cat '$M/boxes/web/created')\" != '$created_before' ] &&
	[ \"\$(cat '$M/boxes/web/state')\" = created ]"
ok "DELETE it again" same "$(hc -o /dev/null -w '%{http_code}' -X DELETE boxes/web/)" 204

pd_done
