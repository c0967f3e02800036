#!/bin/bash
# The desktop of a box, through the tree and its HTTP mirror: desktop/state
# on starts Xvnc (no TCP listener) and an XFCE session in the box; the
# seed's scenario (a Tk app started with exec desktop=1, found by title in
# desktop/windows, its button clicked through desktop/input, the clicked
# state's colour seen in screenshot.png, decoded); the session restarted
# when Xvnc is killed (said in events); off -> ENODEV; a bad input line ->
# EINVAL with its number and nothing done; a live geometry change; the
# refusals (an image without Xvnc, a type with too little memory); the VNC
# socket out of reach of another box and of a host user.
. "$(dirname "$0")/lib.sh"
require_root

pd_use_image desktop
pd_start
pd_owner || { diag "no owner"; exit 1; }

B=$M/boxes/desk
D1=$B/desktop
mkdir "$B"

# decode PNG: prints "W H" and checks the pixels asked for (python3's zlib
# inflates; the PNG structure is checked chunk by chunk, CRCs included).
cat >"$PD_TMP/png.py" <<'PY'
import struct, sys, zlib

def decode(data):
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG signature"
    pos, idat, ihdr = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        crc, = struct.unpack(">I", data[pos + 8 + n:pos + 12 + n])
        assert zlib.crc32(kind + body) == crc, "bad CRC in %r" % kind
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
        pos += 12 + n
    w, h, depth, ctype = ihdr[:4]
    assert depth == 8 and ctype in (2, 6), ihdr
    bpp = 3 if ctype == 2 else 4
    raw = zlib.decompress(idat)
    stride = w * bpp
    rows, prev, p = [], bytearray(stride), 0
    for _ in range(h):
        f = raw[p]; line = bytearray(raw[p + 1:p + 1 + stride]); p += 1 + stride
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]; c = prev[i - bpp] if i >= bpp else 0
            if f == 1: line[i] = (line[i] + a) & 255
            elif f == 2: line[i] = (line[i] + b) & 255
            elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                pr = a if pa <= pb and pa <= pc else b if pb <= pc else c
                line[i] = (line[i] + pr) & 255
        rows.append(line); prev = line
    return w, h, bpp, rows

w, h, bpp, rows = decode(open(sys.argv[1], "rb").read())
print(w, h)
# Optional: X Y RRGGBB -- the pixel there must be that colour.
args = sys.argv[2:]
for i in range(0, len(args), 3):
    x, y, want = int(args[i]), int(args[i + 1]), args[i + 2]
    px = rows[y][x * bpp:x * bpp + 3]
    got = "%02x%02x%02x" % tuple(px)
    assert got == want, "pixel %d,%d is %s, not %s" % (x, y, got, want)
PY
png() { python3 "$PD_TMP/png.py" "$@"; }

ok "desktop/ lists its files" same "$(ls "$D1" | tr '\n' ' ')" "cursor geometry input state url windows "
ok "state reads off at first" same "$(cat "$D1/state")" off
ok "geometry reads the default" same "$(cat "$D1/geometry")" 1280x800
ok "url is the panel's route for the box" bash -c "grep -qx '$(pd_url)/#/desktop/desk' '$D1/url'"
ok "screenshot.png while off: ENODEV" same "$(errno_of "open('$B/screenshot.png','rb').read()")" ENODEV
ok "the error file says how to turn it on" grep -q "desktop is off (echo on > boxes/desk/desktop/state)" "$B/error"
ok "windows while off: ENODEV" same "$(errno_of "open('$D1/windows').read()")" ENODEV
ok "cursor while off: ENODEV" same "$(errno_of "open('$D1/cursor').read()")" ENODEV
ok "input while off: ENODEV" write_expect ENODEV "$D1/input" "move 1 1"
ok "a bad state: EINVAL" write_expect EINVAL "$D1/state" maybe
ok "a bad geometry: EINVAL, unchanged" bash -c "
	$(declare -f write_expect same diag); write_expect EINVAL '$D1/geometry' 9999x9999 &&
	write_expect EINVAL '$D1/geometry' 100x && test \"\$(cat '$D1/geometry')\" = 1280x800"

t0=$(date +%s%N)
ok "on starts the created box and its desktop" write_expect OK "$D1/state" on
t1=$(date +%s%N)
diag "state on -> first frame (write returned): $(((t1 - t0) / 1000000)) ms"
ok "the box runs" same "$(cat "$B/state")" running
ok "state reads on" same "$(cat "$D1/state")" on
ok "the VNC socket is there, 0600, in a 0700 directory of the box user" bash -c "
	test -S '$B/root/run/paddock-desktop/vnc.sock' &&
	test \"\$(stat -c %a '$B/root/run/paddock-desktop/vnc.sock')\" = 600 &&
	test \"\$(stat -c %a '$B/root/run/paddock-desktop')\" = 700"
ok "nothing in the box listens on TCP" pd_job desk \
	'! cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | awk "\$4 == \"0A\"" | grep -q .'
ok "Xvnc runs with -rfbport -1 and the unix socket" pd_job desk \
	'pgrep -a Xvnc | grep -q -- "-rfbport -1 -rfbunixpath /run/paddock-desktop/vnc.sock"'

ok "screenshot.png is a valid PNG of 1280x800" bash -c "
	cat '$B/screenshot.png' >'$PD_TMP/s0.png' && test \"\$(python3 '$PD_TMP/png.py' '$PD_TMP/s0.png')\" = '1280 800'"
ok "the same over HTTP" bash -c "
	hc -f -o '$PD_TMP/s1.png' boxes/desk/screenshot.png && test \"\$(python3 '$PD_TMP/png.py' '$PD_TMP/s1.png')\" = '1280 800'"
ok "state over HTTP" same "$(hc boxes/desk/desktop/state)" on

ok "the XFCE session comes up (its panel is a window)" wait_for 90 grep -q " xfce4-panel$" "$D1/windows"

# The seed's scenario: a Tk app whose button paints a big area green.
cat >"$B/root/tmp/app.py" <<'PY'
import tkinter as tk

root = tk.Tk()
root.title("pd-seed-app")
root.geometry("400x300+200+150")
area = tk.Frame(root, bg="#ff0000", width=400, height=250)
area.pack(side="bottom", fill="both", expand=True)
def clicked():
    area.configure(bg="#00ff00")
button = tk.Button(root, text="Paint", command=clicked)
button.pack(side="top", fill="x")
def where():
    # The button's centre on the screen, for the test to click.
    open("/tmp/button", "w").write("%d %d\n" % (button.winfo_rootx() + button.winfo_width() // 2,
                                               button.winfo_rooty() + button.winfo_height() // 2))
root.after(1500, where)
root.mainloop()
PY
mkdir "$B/exec/app"
echo 1 >"$B/exec/app/desktop"
ok "exec desktop=1 gives the job DISPLAY" true
echo 'exec python3 /tmp/app.py' >"$B/exec/app/cmd"
ok "the app's window is in desktop/windows by its title" wait_for 60 grep -q " pd-seed-app$" "$D1/windows"
grep " pd-seed-app$" "$D1/windows" | sed 's/^/# /'
read -r wid wgeom _ < <(grep " pd-seed-app$" "$D1/windows" | head -n1)
# WxH+X+Y
ww=${wgeom%%x*}; rest=${wgeom#*x}; wh=${rest%%+*}; rest=${rest#*+}; wx=${rest%%+*}; wy=${rest#*+}
diag "window $wid at $wx,$wy size ${ww}x$wh"
wait_for 20 test -s "$B/root/tmp/button"
read -r cx by <"$B/root/tmp/button"
ay=$((by + 150))
diag "button at $cx,$by"
ok "before the click the area is red" wait_for 20 bash -c "
	cat '$B/screenshot.png' >'$PD_TMP/before.png' && python3 '$PD_TMP/png.py' '$PD_TMP/before.png' $cx $ay ff0000 >/dev/null"
ok "a click on its button through desktop/input" write_expect OK "$D1/input" "click $cx $by"
ok "the cursor is where the click was" same "$(cat "$D1/cursor")" "$cx $by"
ok "screenshot.png shows the clicked state (the area is green)" wait_for 20 bash -c "
	cat '$B/screenshot.png' >'$PD_TMP/after.png' && python3 '$PD_TMP/png.py' '$PD_TMP/after.png' $cx $ay 00ff00 $((cx - 150)) $((ay + 20)) 00ff00 >/dev/null" ||
	python3 "$PD_TMP/png.py" "$PD_TMP/after.png" $cx $ay 00ff00 2>&1 | sed 's/^/# /'

ok "a bad line: EINVAL" write_expect EINVAL "$D1/input" "$(printf 'move 10 10\nfly 3 4\n')"
ok "the error names the line" grep -q "desktop/input: line 2" "$B/error"
ok "and nothing was done (the cursor did not move)" same "$(cat "$D1/cursor")" "$cx $by"
ok "a point off the screen: EINVAL" write_expect EINVAL "$D1/input" "click 5000 10"
# The write returns once xdotool has sent the move; the X server may answer
# another client's query (cursor) before it has applied it: allow it a moment.
cursor_is() {
	local i
	for i in $(seq 50); do
		[ "$(cat "$D1/cursor")" = "$1" ] && return 0
		sleep 0.1
	done
	echo "# cursor: $(cat "$D1/cursor"), not $1"
	return 1
}
ok "input over HTTP" bash -c "hc -f -X PUT --data 'move 20 30' boxes/desk/desktop/input >/dev/null"
ok "... the cursor is there" cursor_is "20 30"

# A live geometry change.
ok "geometry 1024x768 applies live" write_expect OK "$D1/geometry" 1024x768
ok "the screenshot has the new size" wait_for 10 bash -c "
	cat '$B/screenshot.png' >'$PD_TMP/g.png' && test \"\$(python3 '$PD_TMP/png.py' '$PD_TMP/g.png')\" = '1024 768'"

# Supervision: Xvnc killed from inside the box comes back.
ok "Xvnc killed in the box" pd_job desk 'pkill -KILL -x Xvnc'
ok "events says the desktop restarted" wait_for 30 grep -q "desktop restarted (1): Xvnc ended" "$B/events"
ok "and it runs again (a screenshot)" wait_for 30 bash -c "
	cat '$B/screenshot.png' >'$PD_TMP/r.png' && python3 '$PD_TMP/png.py' '$PD_TMP/r.png' >/dev/null"
ok "with the geometry it was given" same "$(python3 "$PD_TMP/png.py" "$PD_TMP/r.png")" "1024 768"

# The socket from elsewhere: another box and a host user.
ok "a host user other than root cannot reach the VNC socket" bash -c "
	! setpriv --reuid=65534 --regid=65534 --clear-groups python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])' '$B/root/run/paddock-desktop/vnc.sock' 2>/dev/null"
mkdir "$M/boxes/other"
ok "another box sees no such socket" pd_job other \
	'! test -e /run/paddock-desktop/vnc.sock && ! ls /proc/*/root/run/paddock-desktop 2>/dev/null | grep -q .'

# A daemon restart adopts the running session.
xpid=$(pd_job desk 'pgrep -x Xvnc')
pd_stop
pd_start
ok "after a daemon restart the session is adopted, not duplicated" bash -c "
	$(declare -f pd_job same diag); M='$M'; pd_job desk 'test \"\$(pgrep -x Xvnc)\" = $xpid'"
ok "state reads on" wait_for 10 bash -c "test \"\$(cat '$D1/state')\" = on"

# Stop and start the box: the desktop comes back.
ok "the box stops" write_expect OK "$B/state" stopped
ok "screenshot of a stopped box: ENODEV" same "$(errno_of "open('$B/screenshot.png','rb').read()")" ENODEV
ok "the box starts" write_expect OK "$B/state" running
ok "its desktop starts with it" wait_for 30 bash -c "
	cat '$B/screenshot.png' >'$PD_TMP/x.png' && python3 '$PD_TMP/png.py' '$PD_TMP/x.png' >/dev/null"
ok "off stops it" write_expect OK "$D1/state" off
ok "state reads off" same "$(cat "$D1/state")" off
ok "no Xvnc left" pd_job desk '! pgrep -x Xvnc'
ok "screenshot.png: ENODEV again" same "$(errno_of "open('$B/screenshot.png','rb').read()")" ENODEV

# Refusals: a type with too little memory, an image without Xvnc.
echo tiny >"$M/boxes/other/type" 2>/dev/null || { echo stopped >"$M/boxes/other/state"; echo tiny >"$M/boxes/other/type"; }
ok "a type with too little memory: ENOMEM" write_expect ENOMEM "$M/boxes/other/desktop/state" on
ok "the error names the type's memory and what is needed" grep -q "type tiny has 64M of memory; the desktop needs at least 512M" "$M/boxes/other/error"
ok "and state stays off" same "$(cat "$M/boxes/other/desktop/state")" off

rmdir "$B" "$M/boxes/other"
pd_done
