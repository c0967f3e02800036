#!/bin/bash
# Preview URLs (docs/preview.md): a box's ports file (good and bad writes,
# the error file, nothing changed on a refusal, forks copy it), and the
# proxy with real Node.js servers in an agents box (network off: reached
# from inside the box's network namespace): the path form and the host
# form, bodies both ways (a 1 MiB upload, a chunked one, a 5 MiB chunked
# answer), a WebSocket round trip, the token (header, query, cookie; never
# seen by the box), a public port, a port not listed (listening or not),
# nothing listening, path tricks with --path-as-is, hostile Host headers,
# hostile answers (not HTTP, ambiguous framing, a head too large, bodies
# cut short or badly chunked, interim answers, a head sent in pieces),
# a server that reads slowly or never answers, a list changed while the box
# runs, a box not running, the daemon's stop with a request waiting; the
# ask of Caddy's on-demand TLS (GET /v1/preview-ask?domain=NAME: yes for a
# listed port only, loopback only).
. "$(dirname "$0")/lib.sh"
require_root
command -v node >/dev/null || skip_all "node is not installed on the host (the WebSocket client)"

pd_use_image agents
pd_setup || exit 1
sed -i 's|^\[paddock\]$|[paddock]\npreview_domain = preview.test\npublic_url = http://api.preview.test|' "$PD_TMP/paddock.ini"
pd_start
pd_owner || { diag "no owner token"; exit 1; }
B=$M/boxes/web
PORT=${PD_URL##*:}

# --- the ports file -----------------------------------------------------------------

mkdir "$B"
ok "a new box publishes nothing" same "$(cat "$B/ports")" ""
ok "a list is written" write_expect OK "$B/ports" $'8080\n3000 public\n8081'
ok "it reads back sorted, one entry a line" same "$(cat "$B/ports")" $'3000 public\n8080\n8081'
bad() {
	local want
	want=$(cat "$B/ports")
	write_expect EINVAL "$B/ports" "$1" &&
		grep -q "$2" "$B/error" && same "$(cat "$B/ports")" "$want"
}
ok "port 0 is refused, the reason in error, nothing changed" bad 0 'line 1: "0" is not a port'
ok "a port above 65535 is refused" bad $'8080\n65536' 'line 2: "65536" is not a port'
ok "a word that is not a port is refused" bad 'http' '"http" is not a port'
ok "a word other than public is refused" bad '8080 private' 'only "public" may follow'
ok "a port listed twice is refused" bad $'8080\n8080 public' 'port 8080 is listed twice'
ok "more than 64 ports are refused" bad "$(seq 1000 1064)" 'more than 64 ports'
ok "info lists the ports" bash -c "jq -ce .ports '$B/info' | grep -qx '\[{\"port\":3000,\"public\":true},{\"port\":8080,\"public\":false},{\"port\":8081,\"public\":false}\]'"
ok "urls: a preview URL per port (the host form)" same "$(cat "$B/urls")" $'3000 http://3000-web.preview.test/\n8080 http://8080-web.preview.test/\n8081 http://8081-web.preview.test/'
ok "an empty list (a blank line) clears it" bash -c "echo >'$B/ports' && test -z \"\$(cat '$B/ports')\""
echo $'8080\n3000 public\n8081' >"$B/ports"

# pv PATH [CURL-ARGS...]: status of a request through the proxy (raw
# path), the body in $PD_TMP/body, the head in $PD_TMP/head.
pv() {
	local path=$1
	shift
	curl -sS --path-as-is -o "$PD_TMP/body" -D "$PD_TMP/head" -w '%{http_code}' --max-time 20 \
		"$@" "$PD_URL$path"
}
export -f pv
T=(-H "Authorization: Bearer $PD_TOKEN")
body_has() { jq -e "$1" "$PD_TMP/body" >/dev/null || { sed 's/^/# /' "$PD_TMP/body"; echo; false; }; }

ok "a box not running: 503 with the reason" bash -c \
	"test \"\$(curl -sS -o '$PD_TMP/body' -w '%{http_code}' -H 'Authorization: Bearer $PD_TOKEN' '$PD_URL/v1/ports/web/8080/')\" = 503 && grep -q 'not running' '$PD_TMP/body'"
ok "a box that does not exist: 404" same "$(pv /v1/ports/nobox/8080/ "${T[@]}")" 404
ok "a port not listed: 404" same "$(pv /v1/ports/web/9090/ "${T[@]}")" 404

# --- servers in the box -------------------------------------------------------------

cat >"$B/root/tmp/srv.js" <<'JS'
const http = require('http'), crypto = require('crypto');
function handler(req, res) {
	if (req.url === '/big') {
		res.writeHead(200, {'Content-Type': 'application/octet-stream'});
		let n = 0;
		const chunk = Buffer.alloc(64 * 1024, 97);
		const w = () => {
			while (n < 80) {
				n++;
				if (!res.write(chunk)) return res.once('drain', w);
			}
			res.end();
		};
		return w();
	}
	if (req.url === '/hang')
		return; /* never answers */
	if (req.url === '/slow') {
		/* Reads nothing for a while: the upload waits (backpressure). */
		req.pause();
		setTimeout(() => req.resume(), 1500);
	}
	const h = crypto.createHash('sha256');
	let len = 0;
	req.on('data', d => { h.update(d); len += d.length; });
	req.on('end', () => {
		res.writeHead(200, {'Content-Type': 'application/json', 'X-Box': 'yes',
				    'Set-Cookie': 'paddock_token=planted; Path=/'});
		res.end(JSON.stringify({port: req.socket.localPort, method: req.method, url: req.url,
					headers: req.headers, len, sha: h.digest('hex')}));
	});
}
for (const p of [8080, 3000, 9090]) {
	const s = http.createServer(handler);
	s.on('upgrade', (req, sock, head) => {
		const acc = crypto.createHash('sha1')
			.update(req.headers['sec-websocket-key'] + '258EAFA5-E914-47DA-95CA-C5AB0DC85B11')
			.digest('base64');
		sock.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n' +
			   'Connection: Upgrade\r\nSec-WebSocket-Accept: ' + acc + '\r\n\r\n');
		let buf = head;
		const frame = d => {
			buf = Buffer.concat([buf, d]);
			if (buf.length < 6) return;
			const len = buf[1] & 0x7f;
			if (buf.length < 6 + len) return;
			const mask = buf.subarray(2, 6);
			const p = Buffer.from(buf.subarray(6, 6 + len).map((b, i) => b ^ mask[i % 4]));
			buf = buf.subarray(6 + len);
			const out = Buffer.concat([Buffer.from('echo:' + p.toString() + ':' +
							       req.url)]);
			sock.write(Buffer.concat([Buffer.from([0x81, out.length]), out]));
		};
		sock.on('data', frame);
		frame(Buffer.alloc(0));
	});
	s.listen(p, '0.0.0.0');
}
JS
cat >"$PD_TMP/ws.js" <<'JS'
const net = require('net');
const [port, path, host, auth, hold] = process.argv.slice(2);
let echoed = false;
const s = net.connect(+port, '127.0.0.1', () => {
	s.write(`GET ${path} HTTP/1.1\r\nHost: ${host}\r\nUpgrade: websocket\r\n` +
		'Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n' +
		'Sec-WebSocket-Version: 13\r\n' + (auth ? `Authorization: Bearer ${auth}\r\n` : '') +
		'\r\n');
});
let buf = Buffer.alloc(0), up = false;
s.on('data', d => {
	buf = Buffer.concat([buf, d]);
	if (!up) {
		const i = buf.indexOf('\r\n\r\n');
		if (i < 0) return;
		const st = buf.subarray(0, i).toString().split(' ')[1];
		if (st !== '101') { console.log('status ' + st); process.exit(0); }
		up = true;
		buf = buf.subarray(i + 4);
		const msg = Buffer.from('hello'), mask = Buffer.from([1, 2, 3, 4]);
		const p = Buffer.from(msg.map((b, j) => b ^ mask[j % 4]));
		s.write(Buffer.concat([Buffer.from([0x81, 0x80 | msg.length]), mask, p]));
	}
	if (!echoed && buf.length >= 2 && buf.length >= 2 + (buf[1] & 0x7f)) {
		console.log(buf.subarray(2, 2 + (buf[1] & 0x7f)).toString());
		echoed = true;
		if (!hold) {
			s.end();
			process.exit(0);
		}
	}
});
/* hold: stays open after the echo until the proxy closes the socket. */
s.on('close', () => { console.log('closed'); process.exit(0); });
s.on('error', e => { console.log('error ' + e.message); process.exit(1); });
setTimeout(() => { console.log('timeout'); process.exit(1); }, hold ? 30000 : 10000);
JS

echo running >"$B/state"
mkdir "$B/exec/srv"
echo 'node /tmp/srv.js' >"$B/exec/srv/cmd"
up() { [ "$(pv /v1/ports/web/3000/)" = 200 ]; }
ok "the servers in the box answer through the proxy" wait_for 30 up

ok "path form: 200 from the box's server on 8080" same "$(pv '/v1/ports/web/8080/hello/x?a=1&b=2' "${T[@]}")" 200
ok "path form: the box sees the path after the port and the query" \
	body_has '.port == 8080 and .url == "/hello/x?a=1&b=2" and .method == "GET"'
ok "the token is not passed on, nor hop-by-hop headers; Host is localhost" \
	body_has '(.headers | has("authorization") | not) and .headers.host == "localhost:8080" and .headers.connection == "close" and .headers["x-forwarded-prefix"] == "/v1/ports/web/8080"'
ok "the box's headers come back; its paddock_token cookie does not" \
	bash -c "grep -qi '^x-box: yes' '$PD_TMP/head' && ! grep -qi 'set-cookie: paddock_token' '$PD_TMP/head'"
ok "the path form's pages are sandboxed (the API's origin)" grep -qi '^content-security-policy: sandbox' "$PD_TMP/head"
ok "/v1/ports/BOX/PORT alone is the box's /" bash -c \
	"test \"\$(curl -sS -o '$PD_TMP/body' -w '%{http_code}' -H 'Authorization: Bearer $PD_TOKEN' '$PD_URL/v1/ports/web/8080')\" = 200 && jq -e '.url == \"/\"' '$PD_TMP/body' >/dev/null"

head -c 1048576 /dev/urandom >"$PD_TMP/up.bin"
SHA=$(sha256sum "$PD_TMP/up.bin" | cut -d' ' -f1)
ok "a 1 MiB POST body reaches the box whole" same "$(pv /v1/ports/web/8080/up "${T[@]}" --data-binary @"$PD_TMP/up.bin")" 200
ok "... its length and digest" body_has ".len == 1048576 and .sha == \"$SHA\" and .method == \"POST\""
ok "a chunked PUT body reaches the box whole" same "$(pv /v1/ports/web/8080/up "${T[@]}" -X PUT -H 'Transfer-Encoding: chunked' --data-binary @"$PD_TMP/up.bin")" 200
ok "... its length and digest" body_has ".len == 1048576 and .sha == \"$SHA\" and .method == \"PUT\""
head -c 25165824 /dev/urandom >"$PD_TMP/up8.bin"
SHA8=$(sha256sum "$PD_TMP/up8.bin" | cut -d' ' -f1)
ok "a 24 MiB upload to a server that waits before reading arrives whole (more than the sockets hold)" \
	same "$(pv /v1/ports/web/8080/slow "${T[@]}" --data-binary @"$PD_TMP/up8.bin")" 200
ok "... its length and digest" body_has ".len == 25165824 and .sha == \"$SHA8\""
ok "other methods pass (PATCH)" bash -c "test \"\$(pv /v1/ports/web/8080/p -X PATCH -H 'Authorization: Bearer $PD_TOKEN' -d x)\" = 200 && jq -e '.method == \"PATCH\"' '$PD_TMP/body' >/dev/null"
ok "a 5 MiB chunked answer comes back whole" bash -c \
	"curl -sS --max-time 20 -H 'Authorization: Bearer $PD_TOKEN' '$PD_URL/v1/ports/web/8080/big' | wc -c | grep -qx 5242880"

HF=(-H 'Host: 8080-web.preview.test')
ok "host form: 200, the path unchanged" same "$(pv '/app/index.html?q=1' "${T[@]}" "${HF[@]}")" 200
ok "host form: the box's server saw it" body_has '.port == 8080 and .url == "/app/index.html?q=1" and .headers["x-forwarded-host"] == "8080-web.preview.test"'
ok "host form: no sandbox (an origin of its own)" bash -c "! grep -qi '^content-security-policy' '$PD_TMP/head'"
ok "host form: a Host in any case, with the listener's port" same "$(pv /x "${T[@]}" -H 'Host: 8080-WEB.Preview.Test:443')" 200

# --- the token ---------------------------------------------------------------------------

ok "no token: 401 (path form)" same "$(pv /v1/ports/web/8080/)" 401
ok "no token: 401 (host form)" same "$(pv / "${HF[@]}")" 401
ok "a wrong token: 401" same "$(pv /v1/ports/web/8080/ -H 'Authorization: Bearer nope')" 401
ok "no token: 401 for a box that does not exist too (no names for anyone)" same "$(pv /v1/ports/nobox/8080/)" 401
ok "... and for a port not listed" same "$(pv / -H 'Host: 9090-web.preview.test')" 401
ok "the token as ?paddock_token=: 200" same "$(pv "/v1/ports/web/8080/q?a=1&paddock_token=$PD_TOKEN&b=2")" 200
ok "... the box does not see it" body_has '.url == "/q?a=1&b=2"'
ok "host form with ?paddock_token=: the cookie is set (HttpOnly)" bash -c \
	"test \"\$(pv '/?paddock_token=$PD_TOKEN' -H 'Host: 8080-web.preview.test')\" = 200 && grep -qi '^set-cookie: paddock_token=.*HttpOnly' '$PD_TMP/head'"
ok "the cookie alone: 200, the box gets the other cookies only" bash -c \
	"test \"\$(pv /c -H 'Host: 8080-web.preview.test' -H 'Cookie: a=1; paddock_token=$PD_TOKEN; b=2')\" = 200 && jq -e '.headers.cookie == \"a=1; b=2\"' '$PD_TMP/body' >/dev/null"
ok "a public port needs no token" same "$(pv /v1/ports/web/3000/pub)" 200
ok "... and its Authorization is the app's (passed on)" bash -c \
	"test \"\$(pv /v1/ports/web/3000/pub -H 'Authorization: Basic dTpw')\" = 200 && jq -e '.headers.authorization == \"Basic dTpw\" and .port == 3000' '$PD_TMP/body' >/dev/null"

# --- WebSockets ----------------------------------------------------------------------------

ok "a WebSocket round trip (path form)" same "$(node "$PD_TMP/ws.js" "$PORT" /v1/ports/web/8080/ws "127.0.0.1:$PORT" "$PD_TOKEN")" "echo:hello:/ws"
ok "a WebSocket round trip (host form)" same "$(node "$PD_TMP/ws.js" "$PORT" /sock 8080-web.preview.test "$PD_TOKEN")" "echo:hello:/sock"
ok "a WebSocket without a token: 401" same "$(node "$PD_TMP/ws.js" "$PORT" /v1/ports/web/8080/ws "127.0.0.1:$PORT")" "status 401"
ok "a WebSocket to a public port needs no token" same "$(node "$PD_TMP/ws.js" "$PORT" /w 3000-web.preview.test)" "echo:hello:/w"

token2=$(curl -fsS -H 'Accept: text/plain' --data "{\"password\":\"$PD_PASSWORD\",\"label\":\"ws\"}" "$PD_URL/v1/login")
id2=$(cut -d_ -f2 <<<"$token2")
node "$PD_TMP/ws.js" "$PORT" /held 8080-web.preview.test "$token2" hold >"$PD_TMP/held.out" &
WS_PID=$!
ok "a WebSocket held open" wait_for 10 grep -qx 'echo:hello:/held' "$PD_TMP/held.out"
rmdir "$M/tokens/$id2"
ok "its token revoked: it closes at once" wait_for 3 grep -qx closed "$PD_TMP/held.out"
kill "$WS_PID" 2>/dev/null
wait "$WS_PID" 2>/dev/null

token3=$(curl -fsS -H 'Content-Type: application/json' \
	--data "{\"password\":\"$PD_PASSWORD\",\"label\":\"ws-short\",\"ttl\":3}" "$PD_URL/v1/login" | jq -r .token)
node "$PD_TMP/ws.js" "$PORT" /held 8080-web.preview.test "$token3" hold >"$PD_TMP/held3.out" &
WS_PID=$!
ok "a WebSocket held open with a token that expires" wait_for 10 grep -qx 'echo:hello:/held' "$PD_TMP/held3.out"
ok "its token expired: it closes within about two seconds" wait_for 8 grep -qx closed "$PD_TMP/held3.out"
kill "$WS_PID" 2>/dev/null
wait "$WS_PID" 2>/dev/null
ok "the expired token: 401, saying so" bash -c "
	test \"\$(pv /v1/ports/web/8080/ -H 'Authorization: Bearer $token3')\" = 401 &&
	grep -q 'the token expired at' '$PD_TMP/body'"

# --- what is not reachable ---------------------------------------------------------------

ok "a port listening but not listed: 404 (path form)" same "$(pv /v1/ports/web/9090/ "${T[@]}")" 404
ok "a port listening but not listed: 404 (host form)" same "$(pv / "${T[@]}" -H 'Host: 9090-web.preview.test')" 404
ok "a listed port where nothing listens: 502" same "$(pv /v1/ports/web/8081/ "${T[@]}")" 502
ok "dot segments stay in the box's server's path" same "$(pv /v1/ports/web/8080/../../../tree/boxes "${T[@]}")" 200
ok "... which saw them as they were" body_has '.port == 8080 and .url == "/../../../tree/boxes"'
ok "encoded dot segments too" same "$(pv '/v1/ports/web/8080/%2e%2e/%2e%2e/x' "${T[@]}")" 200
ok "... as they were" body_has '.url == "/%2e%2e/%2e%2e/x"'
ok "an escaped box name is no box: 404" same "$(pv /v1/ports/w%65b/8080/ "${T[@]}")" 404
ok "a dot segment in place of the box: 404" same "$(pv /v1/ports/../8080/ "${T[@]}")" 404
ok "a port with a leading zero: 404" same "$(pv /v1/ports/web/08080/ "${T[@]}")" 404
ok "Host of another box: 404" same "$(pv / "${T[@]}" -H 'Host: 8080-other.preview.test')" 404
ok "Host with no port: 400" same "$(pv / "${T[@]}" -H 'Host: web.preview.test')" 400
ok "Host with a bad port: 400" same "$(pv / "${T[@]}" -H 'Host: 99999-web.preview.test')" 400
ok "Host with junk: 400" same "$(pv / "${T[@]}" -H 'Host: 8080-web@x.preview.test')" 400
ok "the server's own name (public_url's), under the domain, is the API's" \
	same "$(pv /v1/tree/boxes/web/ports "${T[@]}" -H 'Host: API.preview.test:80')" 200
ok "Host outside the domain is the API's (no route)" same "$(pv /hello "${T[@]}" -H 'Host: 8080-web.preview.test.evil.org')" 404
ok "... not the box's" bash -c "! grep -q '\"port\"' '$PD_TMP/body'"

# --- hostile answers ---------------------------------------------------------------------
# A raw server on 8082 answers each path with fixed bytes: never a crash,
# a 502 for a head that is not HTTP, a body cut short is cut for the client.

cat >"$B/root/tmp/raw.js" <<'JS'
const net = require('net');
const pad = n => ('X-Pad: ' + 'a'.repeat(1000) + '\r\n').repeat(n);
const ok = 'HTTP/1.1 200 OK\r\n';
const answers = {
	'/notHTTP': 'hello there\r\n\r\n',
	'/badstatus': 'HTTP/1.1 2x0 OK\r\nContent-Length: 0\r\n\r\n',
	'/status600': 'HTTP/1.1 600 What\r\nContent-Length: 0\r\n\r\n',
	'/http2': 'HTTP/2.0 200 OK\r\nContent-Length: 0\r\n\r\n',
	'/bighead': ok + pad(70) + '\r\n',
	'/nearhead': ok + pad(16) + 'Content-Length: 2\r\n\r\nok',
	'/both': ok + 'Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n',
	'/twolengths': ok + 'Content-Length: 5\r\nContent-Length: 6\r\n\r\nhello!',
	'/fold': ok + 'X-Fold: one\r\n two\r\nContent-Length: 2\r\n\r\nok',
	'/badchunk': ok + 'Transfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n',
	'/short': ok + 'Content-Length: 10\r\n\r\nabc',
	'/shortchunk': ok + 'Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n',
	'/unasked101': 'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n',
	'/eof': ok + 'X-A: b  \r\n\r\nuntil the end',
	'/interim': 'HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n' +
		ok + 'Content-Length: 2\r\nX-Final: yes\r\n\r\nok',
	'/trailer': ok + 'Transfer-Encoding: chunked\r\n\r\n5;x=y\r\nhello\r\n6\r\n world\r\n0\r\nX-T: 1\r\n\r\n',
	'/nocontent': 'HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\nhello',
};
/* Sent 3 bytes at a time: names, values and chunk sizes split over reads. */
const dribbled = {
	'/dribble': ok + 'X-Split: one two three\r\nContent-Length: 5\r\n\r\nhello',
	'/dribblechunked': ok + 'Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n',
};
net.createServer(sock => {
	let buf = '', done = false;
	sock.on('error', () => {});
	sock.on('data', d => {
		buf += d.toString('latin1');
		if (done || buf.indexOf('\r\n\r\n') < 0) return;
		done = true;
		const path = buf.split(' ')[1];
		if (dribbled[path]) {
			const b = Buffer.from(dribbled[path], 'latin1');
			let i = 0;
			const t = setInterval(() => {
				sock.write(b.subarray(i, i + 3));
				i += 3;
				if (i >= b.length) { clearInterval(t); sock.end(); }
			}, 2);
			return;
		}
		sock.end(answers[path] ?? 'HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n', 'latin1');
	});
}).listen(8082, '0.0.0.0');
JS
echo $'8080\n3000 public\n8081\n8082' >"$B/ports"
mkdir "$B/exec/raw"
echo 'node /tmp/raw.js' >"$B/exec/raw/cmd"
rawup() { [ "$(pv /v1/ports/web/8082/x "${T[@]}")" = 404 ]; }
ok "a raw server in the box" wait_for 30 rawup
for a in notHTTP badstatus status600 http2 bighead both twolengths fold unasked101; do
	ok "an answer that is not HTTP or is ambiguous ($a): 502" same "$(pv /v1/ports/web/8082/$a "${T[@]}")" 502
done
ok "a head of 16 KiB passes, each header (MHD sends at most 32 KiB of head)" bash -c \
	"test \"\$(pv /v1/ports/web/8082/nearhead -H 'Authorization: Bearer $PD_TOKEN')\" = 200 && test \"\$(cat '$PD_TMP/body')\" = ok && test \"\$(grep -ci '^x-pad:' '$PD_TMP/head')\" = 16"
for a in badchunk short shortchunk; do
	ok "a body cut or badly framed ($a): the client's answer is cut" bash -c \
		"! curl -sS -o /dev/null --max-time 10 -H 'Authorization: Bearer $PD_TOKEN' '$PD_URL/v1/ports/web/8082/$a' 2>/dev/null"
done
ok "an answer framed by the close: whole, blanks after a value trimmed" bash -c \
	"test \"\$(pv /v1/ports/web/8082/eof -H 'Authorization: Bearer $PD_TOKEN')\" = 200 && test \"\$(cat '$PD_TMP/body')\" = 'until the end' && grep -q \$'^X-A: b\r\$' '$PD_TMP/head'"
ok "interim answers are skipped, their headers too" bash -c \
	"test \"\$(pv /v1/ports/web/8082/interim -H 'Authorization: Bearer $PD_TOKEN')\" = 200 && test \"\$(cat '$PD_TMP/body')\" = ok && grep -qi '^x-final: yes' '$PD_TMP/head' && ! grep -qi '^link:' '$PD_TMP/head'"
ok "a chunked answer with extensions and a trailer: the body alone" bash -c \
	"test \"\$(pv /v1/ports/web/8082/trailer -H 'Authorization: Bearer $PD_TOKEN')\" = 200 && test \"\$(cat '$PD_TMP/body')\" = 'hello world' && ! grep -qi '^x-t:' '$PD_TMP/head'"
ok "a 204 with body bytes: no body" bash -c \
	"test \"\$(pv /v1/ports/web/8082/nocontent -H 'Authorization: Bearer $PD_TOKEN')\" = 204 && test ! -s '$PD_TMP/body'"
ok "a head sent 3 bytes at a time" bash -c \
	"test \"\$(pv /v1/ports/web/8082/dribble -H 'Authorization: Bearer $PD_TOKEN')\" = 200 && test \"\$(cat '$PD_TMP/body')\" = hello && grep -q \$'^X-Split: one two three\r\$' '$PD_TMP/head'"
ok "a chunked body sent 3 bytes at a time" bash -c \
	"test \"\$(pv /v1/ports/web/8082/dribblechunked -H 'Authorization: Bearer $PD_TOKEN')\" = 200 && test \"\$(cat '$PD_TMP/body')\" = 'hello world'"
ok "after all that the daemon goes on" same "$(pv /v1/ports/web/3000/)" 200
echo $'8080\n3000 public\n8081' >"$B/ports"

# --- the ask of Caddy's on-demand TLS --------------------------------------------------------

# ask NAME [CURL-ARGS...]: the status of GET /v1/preview-ask?domain=NAME
# (no token: Caddy has none), the body in $PD_TMP/body.
ask() {
	local name=$1
	shift
	curl -sS -o "$PD_TMP/body" -w '%{http_code}' --max-time 10 "$@" \
		"$PD_URL/v1/preview-ask?domain=$name"
}
ok "ask: a listed port, no token: 200" same "$(ask 8080-web.preview.test)" 200
ok "ask: a public port: 200" same "$(ask 3000-web.preview.test)" 200
ok "ask: a listed port where nothing listens: 200 (the list decides)" same "$(ask 8081-web.preview.test)" 200
ok "ask: a port listening but not listed: 404" same "$(ask 9090-web.preview.test)" 404
cp "$PD_TMP/body" "$PD_TMP/ask-port.body"
ok "ask: no such box: 404" same "$(ask 8080-nobox.preview.test)" 404
ok "... the same answer as for a port not listed (no names told)" cmp -s "$PD_TMP/body" "$PD_TMP/ask-port.body"
ok "ask: a name under another domain: 404" same "$(ask 8080-web.other.test)" 404
ok "ask: the domain itself: 404" same "$(ask preview.test)" 404
ok "ask: the server's own name: 404" same "$(ask api.preview.test)" 404
ok "ask: a name with no port: 400" same "$(ask web.preview.test)" 400
ok "ask: a name with a :port: 400" same "$(ask 8080-web.preview.test:443)" 400
ok "ask: no name: 400" same "$(ask '')" 400
ok "ask: POST: 405" same "$(ask 8080-web.preview.test -X POST)" 405
ok "ask: a request a proxy forwarded (X-Forwarded-For): 403" \
	same "$(ask 8080-web.preview.test -H 'X-Forwarded-For: 192.0.2.9')" 403
ok "ask: a request for a site's name (Host), as a proxy passes it on: 403" \
	same "$(ask 8080-web.preview.test -H 'Host: api.preview.test')" 403
# A peer that is not loopback: another address of this host (on a veth of
# its own), the daemon's listener still 127.0.0.1.
ASK_IF=pda$$
ask_if_gone() { ip link del "$ASK_IF" 2>/dev/null; }
pd_on_exit ask_if_gone
ask_from_other_address() {
	ip link add "$ASK_IF" type veth peer name "${ASK_IF}p" &&
		ip addr add 198.18.252.1/32 dev "$ASK_IF" && ip link set "$ASK_IF" up &&
		same "$(ask 8080-web.preview.test --interface 198.18.252.1)" 403
	local r=$?
	ask_if_gone
	return $r
}
ok "ask: from an address that is not loopback: 403" ask_from_other_address

ok "a client that gives up on a silent server: the daemon goes on" bash -c \
	"test \"\$(pv /v1/ports/web/8080/hang -H 'Authorization: Bearer $PD_TOKEN' --max-time 1)\" = 000 && test \"\$(pv /v1/ports/web/3000/)\" = 200"

# --- changes --------------------------------------------------------------------------------

echo '3000 public' >"$B/ports"
ok "a port taken off the list is gone at once" same "$(pv /v1/ports/web/8080/ "${T[@]}")" 404
echo $'8080\n3000 public' >"$B/ports"
ok "and back" same "$(pv /v1/ports/web/8080/ "${T[@]}")" 200
# The CLI: paddock ports BOX [PORT [public]... | none].
PADDOCK=${PADDOCK:-$TOP_BUILDDIR/cli/paddock}
export PADDOCK_CONFIG=$PD_TMP/cli/config.ini
unset PADDOCK_URL PADDOCK_TOKEN
paddock() { "$PADDOCK" --url "$PD_URL" --token "$PD_TOKEN" "$@"; }
ok "cli: ports BOX prints the list" same "$(paddock ports web)" $'3000 public\n8080'
ok "cli: ports BOX PORT [public]... replaces it" bash -c \
	"'$PADDOCK' --url '$PD_URL' --token '$PD_TOKEN' ports web 8080 5173 public 3000 public && test \"\$(cat '$B/ports')\" = \"\$(printf '3000 public\n5173 public\n8080')\""
ok "cli: a bad port fails with the server's reason, nothing changed" bash -c \
	"! '$PADDOCK' --url '$PD_URL' --token '$PD_TOKEN' ports web 70000 2>'$PD_TMP/err' && grep -q '\"70000\" is not a port' '$PD_TMP/err' && grep -qx 5173 <(cut -d' ' -f1 '$B/ports')"
ok "cli: ports BOX none empties it" bash -c \
	"'$PADDOCK' --url '$PD_URL' --token '$PD_TOKEN' ports web none && test -z \"\$(cat '$B/ports')\""
echo $'8080\n3000 public' >"$B/ports"
ok "a fork copies the list" bash -c "echo web2 >'$B/fork' && test \"\$(cat '$M/boxes/web2/ports')\" = \"\$(printf '3000 public\n8080')\""
ok "a box not running (the fork, created): 503" same "$(pv /v1/ports/web2/8080/ "${T[@]}")" 503
ok "... with the reason in the JSON error" body_has '.error | test("not running")'
rmdir "$M/boxes/web2"

# One request left waiting on a silent server in a running box: the
# daemon's stop ends it and the daemon exits cleanly.
curl -sS -o /dev/null --max-time 120 -H "Authorization: Bearer $PD_TOKEN" "$PD_URL/v1/ports/web/8080/hang" 2>/dev/null &
HANG_PID=$!
sleep 0.5
pd_stop
ok "the request left waiting ended with the daemon" wait_for 5 bash -c "! kill -0 $HANG_PID"
kill "$HANG_PID" 2>/dev/null
pd_done
