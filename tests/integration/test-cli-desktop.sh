#!/bin/bash
# The paddock CLI's desktop commands against a real daemon over HTTP, in a
# box of the desktop image: `desktop BOX` turns it on and prints its URL,
# actions move the cursor (one, several, from stdin), a bad action prints
# the server's own error text and changes nothing, `screenshot -o FILE`
# writes a whole PNG of the desktop's geometry (checked chunk by chunk and
# inflated with zlib), `exec --desktop` runs X clients on it, `windows
# --json` finds a window by its title, `geometry` applies live, and once
# the desktop is off a screenshot fails with the server's reason and
# leaves no file behind. Then the CLI against a fake server that sends
# broken PNGs: nothing is ever renamed into place. Skips (77) only when
# the desktop image cannot be built.
. "$(dirname "$0")/lib.sh"
require_root
PADDOCK=${PADDOCK:-$TOP_BUILDDIR/cli/paddock}

pd_use_image desktop
pd_setup || exit 1
# A tiny image beside it: a box without a desktop.
"$MKIMAGE" --config "$PD_TMP/paddock.ini" tiny >"$PD_TMP/mkimage-tiny.log" 2>&1 ||
	{ sed 's/^/# /' "$PD_TMP/mkimage-tiny.log"; exit 1; }
pd_start
pd_owner || { diag "cannot log in as the owner"; exit 1; }

export PADDOCK_CONFIG=$PD_TMP/cli/config.ini
unset PADDOCK_URL PADDOCK_TOKEN
paddock() { "$PADDOCK" --url "$PD_URL" --token "$PD_TOKEN" "$@"; }
export -f paddock
export PADDOCK PD_URL PD_TOKEN

# pngcheck FILE W H [drawn]: a whole PNG of W x H (every chunk's CRC, IHDR
# first, IEND last, the IDAT stream inflated to exactly the rows it must
# hold); with "drawn", not a blank screen either. Says why not on stderr.
cat >"$PD_TMP/pngcheck.py" <<'PY'
import struct, sys, zlib

d = open(sys.argv[1], "rb").read()
want = (int(sys.argv[2]), int(sys.argv[3]))
assert d[:8] == b"\x89PNG\r\n\x1a\n", "no PNG signature"
pos, chunks, idat = 8, [], b""
while pos < len(d):
    n, kind = struct.unpack(">I4s", d[pos:pos + 8])
    body = d[pos + 8:pos + 8 + n]
    crc, = struct.unpack(">I", d[pos + 8 + n:pos + 12 + n])
    assert zlib.crc32(kind + body) == crc, "bad CRC in %r" % kind
    chunks.append(kind)
    if kind == b"IHDR":
        w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
    if kind == b"IDAT":
        idat += body
    pos += 12 + n
assert chunks[0] == b"IHDR" and chunks[-1] == b"IEND", chunks
assert (w, h) == want, "size %dx%d, want %dx%d" % (w, h, *want)
assert interlace == 0, "interlaced"
channels = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}[ctype]
raw = zlib.decompress(idat)
assert len(raw) == h * (1 + (w * channels * depth + 7) // 8), "IDAT holds %d bytes" % len(raw)
if sys.argv[4:] == ["drawn"]:
    assert len(set(raw)) > 8, "the screen is blank"
PY
pngcheck() {
	python3 "$PD_TMP/pngcheck.py" "$@"
}
# empty_dir DIR: DIR holds nothing (no file, no temporary file).
empty_dir() {
	[ -z "$(ls -A "$1")" ] || { diag "$1 holds: $(ls -A "$1" | tr '\n' ' ')"; return 1; }
}
# server_error BODY FILE: the "error" text the daemon answers to writing
# BODY to FILE of the tree (for comparing with what the CLI prints).
# server_error BODY FILE: the server's reason for a bad write, without the
# line's time (a second call may fall in the next second); no_time FILE: the
# CLI's message in FILE the same way.
server_error() {
	hc -X PUT --data-binary "$1" "$2" | python3 -c 'import json, re, sys; print(re.sub(r"^\S+Z ", "", json.load(sys.stdin)["error"]))'
}
# shown CMD...: runs CMD; when it fails, its stderr goes to the TAP log
# as a comment, so a failed check says the CLI's reason.
shown() {
	local err rc
	err=$("$@" 2>&1 >/dev/null) && return 0
	rc=$?
	printf '%s\n' "$err" | sed 's/^/# /'
	return $rc
}
no_time() {
	sed -E 's/^paddock: [0-9T:-]+Z /paddock: /' "$1"
}
export -f no_time
E=$PD_TMP/err
O=$PD_TMP/out

# --- a desktop box, off ------------------------------------------------------
ok "paddock new --name desk --image desktop" same "$(paddock new --name desk --image desktop)" desk
mkdir "$PD_TMP/shots"
ok "screenshot of a desktop that is off: exit 1, the server's reason, no file" bash -c "
	paddock screenshot desk -o '$PD_TMP/shots/off.png' >'$O' 2>'$E'; rc=\$?
	test \$rc = 1 && grep -q 'the desktop is off' '$E' && test ! -s '$O'"
ok "and a hint in the CLI's words" grep -q "turn it on with 'paddock desktop desk'" "$E"
ok "nothing is left in the target directory" empty_dir "$PD_TMP/shots"
ok "desktop windows while off: exit 1, the server's reason" bash -c "
	! paddock desktop desk windows 2>'$E' && grep -q 'the desktop is off' '$E'"

# --- on ------------------------------------------------------------------------
paddock desktop desk >"$O" 2>"$E"
rc=$?
ok "paddock desktop desk: exit 0" same "$rc" 0 || sed 's/^/# /' "$E"
ok "it prints desktop/url, the panel's view of this desktop" bash -c "
	test \"\$(cat '$O')\" = \"\$(cat '$M/boxes/desk/desktop/url')\" && grep -Eq '#/desktop/desk\$' '$O'"
ok "desktop/state reads on" same "$(cat "$M/boxes/desk/desktop/state")" on
ok "the desktop answers at once (cursor)" bash -c "paddock desktop desk cursor >/dev/null"
url=$(cat "$M/boxes/desk/desktop/url")
ok "desktop desk url prints the same" bash -c "test -n '$url' && test \"\$(paddock desktop desk url)\" = '$url'"
ok "--json desktop desk on: {\"url\": …}" bash -c "test -n '$url' && test \"\$(paddock --json desktop desk on |
	python3 -c 'import json, sys; print(json.load(sys.stdin)[\"url\"])')\" = '$url'"
ok "desktop desk on again is harmless" paddock desktop desk --no-wait

geometry=$(paddock desktop desk geometry)
ok "desktop desk geometry: the default 1280x800" same "$geometry" 1280x800
ok "--json geometry has width and height" same "$(paddock desktop desk geometry --json |
	python3 -c 'import json, sys; o = json.load(sys.stdin); print(o["width"], o["height"])')" "1280 800"

# --- input -----------------------------------------------------------------------
ok "desktop desk move 123 234" shown paddock desktop desk move 123 234
ok "cursor shows it" same "$(paddock desktop desk cursor 2>&1)" "123 234"
ok "--json cursor: {\"x\":123,\"y\":234}" same "$(paddock --json desktop desk cursor)" '{"x":123,"y":234}'
ok "several actions in one call, a lone ',' between them" \
	shown paddock desktop desk move 10 20 , move 300 200 , click
ok "the last one wins" same "$(paddock desktop desk cursor 2>&1)" "300 200"
ok "actions on standard input (desktop desk -)" bash -c "printf 'move 50 60\nmove 70 80\n' | paddock desktop desk -"
ok "cursor shows the last line's position" same "$(paddock desktop desk cursor)" "70 80"

want=$(server_error $'move 400 400\nmove 10\n' boxes/desk/desktop/input)
printf "%s\n" "$want" >"$PD_TMP/want"
diag "the server's error for a bad second line: $want"
ok "a bad action: exit 1 and exactly the server's text" bash -c "
	paddock desktop desk move 400 400 , move 10 2>'$E'; rc=\$?
	test \$rc = 1 && test \"\$(no_time '$E')\" = \"paddock: \$(cat '$PD_TMP/want')\""
ok "the server's text names the line" bash -c "grep -q 2 '$E'"
ok "nothing of it was sent: the cursor did not move" same "$(paddock desktop desk cursor)" "70 80"
ok "an unknown action: exit 1, the server's reason" bash -c "
	! paddock desktop desk wiggle 3 2>'$E' && grep -q '^paddock: .' '$E'"
ok "a usage error (empty action) is exit 2, nothing sent" bash -c "
	paddock desktop desk move 1 1 , 2>/dev/null; test \$? = 2 &&
	test \"\$(paddock desktop desk cursor)\" = '70 80'"

# --- screenshots -------------------------------------------------------------------
# The X server answers before the session has drawn its desktop.
ok "the desktop draws (a screenshot that is not blank, within 60 s)" wait_for 60 bash -c "
	paddock screenshot desk -o '$PD_TMP/drawn.png' >/dev/null && python3 '$PD_TMP/pngcheck.py' '$PD_TMP/drawn.png' 1280 800 drawn"
paddock screenshot desk -o "$PD_TMP/shots/a.png" >"$O" 2>"$E"
ok "screenshot desk -o FILE: exit 0, prints the path" same "$(cat "$O")" "$PD_TMP/shots/a.png" ||
	sed 's/^/# /' "$E"
ok "FILE is a whole PNG of the desktop's geometry" pngcheck "$PD_TMP/shots/a.png" 1280 800
ok "with the mode a new file gets (umask 022: 644)" same "$(stat -c %a "$PD_TMP/shots/a.png")" 644
ok "no temporary file is left beside it" same "$(ls -A "$PD_TMP/shots")" a.png
ok "-o over an existing file replaces it" bash -c "
	echo old >'$PD_TMP/shots/b.png' && paddock screenshot desk -o '$PD_TMP/shots/b.png' >/dev/null &&
	python3 '$PD_TMP/pngcheck.py' '$PD_TMP/shots/b.png' 1280 800"
mkdir "$PD_TMP/cwd"
ok "without -o: BOX-YYYYMMDD-HHMMSS.png in the current directory, twice" bash -c "
	cd '$PD_TMP/cwd' && paddock screenshot desk >'$O.1' && paddock screenshot desk >'$O.2'"
ok "named as said, two different files (the second never replaces the first)" bash -c "
	grep -Eqx 'desk-[0-9]{8}-[0-9]{6}(-2)?\.png' '$O.1' && grep -Eqx 'desk-[0-9]{8}-[0-9]{6}(-2)?\.png' '$O.2' &&
	test \"\$(cat '$O.1')\" != \"\$(cat '$O.2')\" && test \$(ls '$PD_TMP/cwd' | wc -l) = 2"
ok "-o DIR: the default name inside DIR" bash -c "
	paddock screenshot desk -o '$PD_TMP/shots' >'$O' && grep -Eq '^$PD_TMP/shots/desk-[0-9-]+\.png\$' '$O' &&
	python3 '$PD_TMP/pngcheck.py' \"\$(cat '$O')\" 1280 800"
ok "--json: path, width, height, bytes" bash -c "
	paddock --json screenshot desk -o '$PD_TMP/shots/j.png' | python3 -c '
import json, os, sys
o = json.load(sys.stdin)
assert o[\"path\"] == sys.argv[1] and (o[\"width\"], o[\"height\"]) == (1280, 800), o
assert o[\"bytes\"] == os.path.getsize(sys.argv[1]), o' '$PD_TMP/shots/j.png'"
ok "-o - writes the PNG to a pipe" bash -c "
	paddock screenshot desk -o - >'$PD_TMP/piped.png' && python3 '$PD_TMP/pngcheck.py' '$PD_TMP/piped.png' 1280 800"
ok "-o - refuses a terminal" bash -c "
	script -qec \"'$PADDOCK' --url '$PD_URL' --token '$PD_TOKEN' screenshot desk -o -\" /dev/null >'$O' 2>&1
	test \$? = 1 && grep -q 'not writing a PNG to a terminal' '$O' && ! grep -qa IHDR '$O'"
ok "-o into a directory that does not exist: exit 1, the reason" bash -c "
	! paddock screenshot desk -o '$PD_TMP/nowhere/x.png' 2>'$E' && grep -q 'nowhere' '$E'"

# --- exec --desktop, windows -----------------------------------------------------------
ok "exec --desktop runs an X client on the desktop (xdotool getdisplaygeometry)" \
	same "$(paddock exec --desktop desk -- xdotool getdisplaygeometry)" "1280 800"
ok "exec --desktop: xrandr reads the screen" bash -c "
	paddock exec --desktop desk -- 'xrandr --current' | grep -q 'current 1280 x 800'"
diag "exec without --desktop sees DISPLAY='$(paddock exec desk -- 'echo "$DISPLAY"')'"

cat >"$M/boxes/desk/root/tmp/pd-cli-tk.py" <<'PY'
import tkinter as tk

root = tk.Tk()
root.title("pd-cli tk probe")
root.geometry("300x200+400+300")
tk.Frame(root, bg="#00ff00", width=300, height=200).pack(fill="both", expand=True)
root.mainloop()
PY
# A window that stays: `exec --desktop` in the background (killed by PID).
paddock exec --desktop desk -- python3 /tmp/pd-cli-tk.py >"$PD_TMP/tk.out" 2>&1 &
tk_pid=$!
ok "desktop desk windows lists the window by its title" wait_for 60 \
	bash -c "paddock desktop desk windows | grep -q 'pd-cli tk probe'"
paddock desktop desk windows | sed 's/^/# windows: /'
ok "--json windows: an object with id, the whole title and a size" bash -c "
	paddock --json desktop desk windows | python3 -c '
import json, sys
w = [o for o in json.load(sys.stdin) if o[\"title\"] == \"pd-cli tk probe\"]
assert len(w) == 1, w
assert w[0][\"id\"] and w[0][\"width\"] > 0 and w[0][\"height\"] > 0, w'"
kill "$tk_pid" 2>/dev/null
wait "$tk_pid" 2>/dev/null

# --- geometry ---------------------------------------------------------------------------
ok "desktop desk geometry 1024x768" paddock desktop desk geometry 1024x768
ok "geometry reads it back" same "$(paddock desktop desk geometry)" 1024x768
ok "screenshots follow it" wait_for 30 bash -c "
	paddock screenshot desk -o '$PD_TMP/small.png' >/dev/null && python3 '$PD_TMP/pngcheck.py' '$PD_TMP/small.png' 1024 768"
want=$(server_error $'99999x99999\n' boxes/desk/desktop/geometry)
printf "%s\n" "$want" >"$PD_TMP/want"
ok "a geometry above the maximum: exit 1, exactly the server's text" bash -c "
	paddock desktop desk geometry 99999x99999 2>'$E'; rc=\$?
	test \$rc = 1 && test \"\$(no_time '$E')\" = \"paddock: \$(cat '$PD_TMP/want')\""
ok "the geometry is unchanged" same "$(paddock desktop desk geometry)" 1024x768

# --- off ----------------------------------------------------------------------------------
ok "desktop desk off" paddock desktop desk off
ok "desktop/state reads off" same "$(cat "$M/boxes/desk/desktop/state")" off
rm -f "$PD_TMP/shots/"*
ok "screenshot after off: exit 1, the server's ENODEV text, no file left" bash -c "
	paddock screenshot desk -o '$PD_TMP/shots/after.png' >'$O' 2>'$E'; rc=\$?
	test \$rc = 1 && grep -q 'the desktop is off' '$E' && test ! -s '$O'"
ok "the directory is empty" empty_dir "$PD_TMP/shots"
ok "input after off: exit 1, the server's reason" bash -c "
	! paddock desktop desk move 1 1 2>'$E' && grep -q 'the desktop is off' '$E'"

# --- boxes without a desktop, and other errors -----------------------------------------------
ok "a box of the tiny image" same "$(paddock new --name plain --image tiny)" plain
ok "desktop plain: exit 1, the image has no desktop" bash -c "
	paddock desktop plain >'$O' 2>'$E'; test \$? = 1 && grep -q 'has no desktop' '$E' && test ! -s '$O'"
ok "desktop of no such box: exit 1, the server's reason" bash -c "
	paddock desktop nosuch 2>'$E'; test \$? = 1 && grep -q '^paddock: .' '$E'"
ok "screenshot of no such box: exit 1, no file" bash -c "
	cd '$PD_TMP/shots' && ! paddock screenshot nosuch 2>/dev/null && test -z \"\$(ls -A)\""

# --- a fake server sending broken answers: nothing is renamed into place ------------------------
cat >"$PD_TMP/fake.py" <<'PY'
import http.server, json, socketserver, struct, sys, time, zlib

def chunk(kind, body):
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 4, 2, 8, 2, 0, 0, 0)) +
       chunk(b"IDAT", zlib.compress(b"\x00" + bytes(range(12)) + b"\x00" + bytes(range(12, 24)))) +
       chunk(b"IEND", b""))

puts, cursor_reads = [], {}

class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a):
        pass
    def reply(self, status, body):
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def error(self, name, text):
        status = {"ENOENT": 404, "ENODEV": 409, "ENOTSUP": 501}.get(name, 500)
        self.reply(status, json.dumps({"error": text, "errno": name}).encode())
    def do_PUT(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        box = self.path.split("/")[4]
        if box == "noimg" and self.path.endswith("/desktop/state"):
            return self.error("ENOTSUP", "image tiny has no desktop (use the desktop image)")
        puts.append("%s %s" % (self.path, body.decode()))
        self.reply(204, b"")
    def do_GET(self):
        if self.path == "/v1/tree/puts":  # what was written, for the test
            return self.reply(200, json.dumps(puts).encode())
        box = self.path.split("/")[4]
        if self.path.endswith("/stdout") or self.path.endswith("/stderr"):
            return self.reply(200, b"")      # a job of `exec` that printed nothing
        if self.path.endswith("/exit"):
            return self.reply(200, b"0\n")
        if box == "stall":  # a PNG that starts, then nothing more for a while
            self.send_response(200)
            self.send_header("Content-Length", str(len(png) * 10))
            self.end_headers()
            self.wfile.write(png[:40])
            self.wfile.flush()
            time.sleep(30)
            self.close_connection = True
            return
        if self.path.endswith("/desktop/url"):
            return self.reply(200, ("http://panel/#/desktop/%s\n" % box).encode())
        if self.path.endswith("/state"):
            return self.reply(200, b"stopped\n" if box == "sleepy" else b"running\n")
        if self.path.endswith("/desktop/cursor"):
            n = cursor_reads[box] = cursor_reads.get(box, 0) + 1
            if box == "slow" and n <= 3:
                return self.error("ENODEV", "the desktop is off (echo on > boxes/slow/desktop/state)")
            if box == "gone":
                return self.error("ENOENT", "no box gone")
            return self.reply(200, b"5 6\n")
        if self.path.endswith("/desktop/windows"):
            # a box names its windows: titles that would drive a terminal
            body, status = ("0x1 pd \x1b]0;pwned\x07\x1b[2J\x9b31m title 300x200+1+2\n"
                            "0x2\tplain\t10x10+0+0\n").encode(), 200
        elif box == "good":
            body, status = png, 200
        elif box == "cut":      # the whole answer, but the PNG lacks its end
            body, status = png[:-12], 200
        elif box == "json":     # not a PNG at all
            body, status = b'{"hello":"world"}', 200
        elif box == "evilerr":  # a reason quoting a box's bytes
            body, status = b'{"error":"bad \\u001b[2J\\u0007 title \\u009b","errno":"EIO"}', 500
        elif box == "off":
            body, status = json.dumps({"error": "the desktop is off (echo on > boxes/off/desktop/state)",
                                       "errno": "ENODEV"}).encode(), 409
        elif box == "short":    # promises more than it sends, then closes
            self.send_response(200)
            self.send_header("Content-Length", str(len(png) * 10))
            self.end_headers()
            self.wfile.write(png)
            self.wfile.flush()
            self.close_connection = True
            return
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True

s = S(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
PY
python3 "$PD_TMP/fake.py" >"$PD_TMP/fake.port" 2>"$PD_TMP/fake.log" &
fake_pid=$!
wait_for 10 test -s "$PD_TMP/fake.port"
FAKE=http://127.0.0.1:$(cat "$PD_TMP/fake.port")
mkdir "$PD_TMP/fake-shots"
fake_shot() { # fake_shot BOX: the CLI's exit status against the fake server
	"$PADDOCK" --url "$FAKE" --token t screenshot "$1" -o "$PD_TMP/fake-shots/$1.png" >"$O" 2>"$E"
}
fake_shot good
ok "fake server: a good PNG is written" pngcheck "$PD_TMP/fake-shots/good.png" 4 2
rm -f "$PD_TMP/fake-shots/"*
for kind in cut json short off; do
	fake_shot "$kind"
	rc=$?
	ok "fake server, $kind answer: exit 1, a reason, nothing in the directory" bash -c "
		test $rc = 1 && grep -q '^paddock: .' '$E' && test -z \"\$(ls -A '$PD_TMP/fake-shots')\"" ||
		sed 's/^/# /' "$E"
done
ok "the ENODEV answer's text is printed as the server wrote it" \
	grep -qx 'paddock: the desktop is off (echo on > boxes/off/desktop/state)' "$E"

# -o at what is not a plain file: never replaced (root could otherwise turn
# /dev/null into a PNG), links followed to the file they name.
X=$PD_TMP/fake-special
mkdir "$X" "$X/real"
mknod "$X/null" c 1 3
ok "-o a character device (a /dev/null of the test's own): written into, still a device" bash -c "
	'$PADDOCK' --url '$FAKE' --token t screenshot good -o '$X/null' >'$O' && test -c '$X/null' &&
	test \"\$(stat -c %t:%T '$X/null')\" = 1:3 && test \"\$(cat '$O')\" = '$X/null'"
mkfifo "$X/fifo"
timeout 20 cat "$X/fifo" >"$X/from-fifo.png" &
reader=$!
ok "-o a FIFO: the PNG goes through it" bash -c "
	timeout 10 '$PADDOCK' --url '$FAKE' --token t screenshot good -o '$X/fifo' >/dev/null && test -p '$X/fifo'"
wait "$reader"
ok "the reader got the whole PNG" pngcheck "$X/from-fifo.png" 4 2
echo old >"$X/real/shot.png"
chmod 600 "$X/real/shot.png"
ln -s real/shot.png "$X/link.png"
ok "-o a symbolic link to a file: the file is replaced, the link stays" bash -c "
	'$PADDOCK' --url '$FAKE' --token t screenshot good -o '$X/link.png' >'$O' &&
	test -L '$X/link.png' && test \"\$(readlink '$X/link.png')\" = real/shot.png &&
	python3 '$PD_TMP/pngcheck.py' '$X/real/shot.png' 4 2 && test \"\$(cat '$O')\" = '$X/real/shot.png'"
ok "the file replaced keeps its mode (600)" same "$(stat -c %a "$X/real/shot.png")" 600
ln -s nowhere.png "$X/dangling.png"
ok "-o a link to nothing: exit 1, nothing made" bash -c "
	! '$PADDOCK' --url '$FAKE' --token t screenshot good -o '$X/dangling.png' 2>'$E' &&
	grep -q 'symbolic link to nothing' '$E' && test ! -e '$X/nowhere.png'"
ok "-o '': exit 1" bash -c "! '$PADDOCK' --url '$FAKE' --token t screenshot good -o '' 2>/dev/null"
ok "nothing else appeared beside them" same "$(ls -A "$X" | tr '\n' ' ')" "dangling.png fifo from-fifo.png link.png null real "
# controls FILE: FILE holds no control character but newlines and tabs (C0, DEL,
# and C1 as UTF-8).
controls() {
	python3 -c '
import re, sys
d = open(sys.argv[1], "rb").read().decode("utf-8", "replace")
bad = re.findall(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", d)
sys.exit(1 if bad else 0)' "$1"
}
"$PADDOCK" --url "$FAKE" --token t desktop evil windows >"$O" 2>"$E"
sed 's/^/# windows: /' "$O" | cat -v
ok "windows: a title's ESC, BEL and CSI never reach the terminal" controls "$O"
ok "the rest of the title and the other lines are kept" bash -c "
	grep -q '^0x1 pd .*title 300x200+1+2\$' '$O' && grep -q '^0x2.plain.10x10+0+0\$' '$O'"
"$PADDOCK" --url "$FAKE" --token t --json desktop evil windows >"$O.json"
ok "windows --json keeps the title, escaped as JSON" python3 -c '
import json, sys
w = json.load(open(sys.argv[1]))
assert w[0]["title"] == "pd \x1b]0;pwned\x07\x1b[2J\x9b31m title", w[0]
assert (w[0]["x"], w[0]["y"], w[0]["width"], w[0]["height"]) == (1, 2, 300, 200), w[0]
assert w[1]["title"] == "plain", w[1]' "$O.json"
"$PADDOCK" --url "$FAKE" --token t screenshot evilerr -o "$PD_TMP/fake-shots/e.png" 2>"$E"
sed 's/^/# stderr: /' "$E" | cat -v
ok "an error text with control characters is printed without them" controls "$E"
ok "and with the rest of its text" grep -q '^paddock: bad .* title ' "$E"

# The wait of `desktop BOX` and what goes on the wire.
fake() { "$PADDOCK" --url "$FAKE" --token t "$@"; }
ok "desktop slow: waits out 'off' while it starts, then prints the url" bash -c "
	$(declare -f fake); PADDOCK='$PADDOCK' FAKE='$FAKE'
	test \"\$(fake desktop slow 2>'$E')\" = 'http://panel/#/desktop/slow'"
ok "desktop gone: an error that is not 'starting' ends the wait at once" bash -c "
	$(declare -f fake); PADDOCK='$PADDOCK' FAKE='$FAKE'
	start=\$(date +%s); fake desktop gone >'$O' 2>'$E'; rc=\$?
	test \$rc = 1 && test \$((\$(date +%s) - start)) -lt 5 && grep -qx 'paddock: no box gone' '$E' && test ! -s '$O'"
ok "desktop noimg: the server's ENOTSUP text, exit 1" bash -c "
	$(declare -f fake); PADDOCK='$PADDOCK' FAKE='$FAKE'
	fake desktop noimg 2>'$E'; test \$? = 1 && grep -qx 'paddock: image tiny has no desktop (use the desktop image)' '$E'"
ok "desktop sleepy (stopped): no wait, the url, a notice" bash -c "
	$(declare -f fake); PADDOCK='$PADDOCK' FAKE='$FAKE'
	test \"\$(fake desktop sleepy 2>'$E')\" = 'http://panel/#/desktop/sleepy' && grep -q 'sleepy is stopped' '$E'"
fake desktop web click 1 2 , type 'a  b' , key ctrl+s
printf 'move 3 4\ntype , \n' | fake desktop web -
fake desktop web geometry 800x600
fake desktop web off
fake exec --desktop web -- xeyes
fake --json desktop web cursor >"$O"
ok "cursor --json from '5 6'" same "$(cat "$O")" '{"x":5,"y":6}'
curl -sS "$FAKE/v1/tree/puts" >"$O.puts"
ok "the writes on the wire: state on, one input write per call, geometry, off" python3 -c '
import json, sys
got = json.load(open(sys.argv[1]))
want = ["/v1/tree/boxes/slow/desktop/state on\n", "/v1/tree/boxes/gone/desktop/state on\n",
        "/v1/tree/boxes/sleepy/desktop/state on\n",
        "/v1/tree/boxes/web/desktop/input click 1 2\ntype a  b\nkey ctrl+s\n",
        "/v1/tree/boxes/web/desktop/input move 3 4\ntype , \n",
        "/v1/tree/boxes/web/desktop/geometry 800x600\n", "/v1/tree/boxes/web/desktop/state off\n"]
assert got[:len(want)] == want, got
job = got[len(want)].split()[0]
assert job.startswith("/v1/tree/boxes/web/exec/cli-") and job.endswith("/"), got
assert got[len(want):] == [job + " ", job + "desktop 1\n", job + "cmd xeyes"], got' "$O.puts"

# Killed while the PNG arrives (SIGTERM; SIGINT and SIGHUP alike): the
# temporary file goes with the command.
mkdir "$PD_TMP/fake-int"
"$PADDOCK" --url "$FAKE" --token t screenshot stall -o "$PD_TMP/fake-int/s.png" 2>/dev/null &
shot=$!
ok "a screenshot that stalls has its temporary file beside the target" \
	wait_for 10 bash -c "ls -A '$PD_TMP/fake-int' | grep -q '^\.s\.png\.'"
kill -TERM "$shot"
wait "$shot"
rc=$?
ok "SIGTERM ends it (status 143)" same "$rc" 143
ok "and nothing is left in the directory" empty_dir "$PD_TMP/fake-int"
kill "$fake_pid"
wait "$fake_pid" 2>/dev/null

paddock rm plain >/dev/null
paddock rm desk >/dev/null
pd_done
