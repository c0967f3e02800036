#!/bin/bash
# The desktop image in a real box, through the tree alone: Xvnc on a unix
# socket only (no TCP port), an XFCE session, a terminal and a Tk window
# found by title with xdotool, a screen grab (xwd) whose pixels show the Tk
# window's colour where xdotool says the window is, Firefox ESR opening a
# page on the display, and the memory the idle desktop uses (diagnostics).
# The image is built once into the cache the debian image lives in (on
# that image); the test skips only when no Debian mirror answers.
. "$(dirname "$0")/lib.sh"
require_root

pd_use_image desktop
pd_start

B=$M/boxes/desk
mkdir "$B"
ok "the box uses the desktop image" bash -c "echo desktop >'$B/image' && test \"\$(cat '$B/image')\" = desktop"

# The image's programs, found by the box user's shell.
ok "Xvnc, XFCE, xfce4-terminal, xdotool, xwd, xrandr, Firefox and dbus-launch are there" \
	pd_job desk 'for p in Xvnc xfce4-session xfwm4 xfce4-panel xfce4-terminal xdotool xwd xrandr firefox-esr dbus-launch; do command -v $p >/dev/null || { echo missing $p; exit 1; }; done'
ok "Python has Tk" pd_job desk 'python3 -c "import tkinter; tkinter.Tcl()"'
ok "the DejaVu fonts are there" pd_job desk 'test -f /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf'

# start_job NAME CMD: starts CMD as the named job NAME (it keeps running).
start_job() {
	mkdir "$B/exec/$1" && echo "$2" >"$B/exec/$1/cmd"
}

# running NAME...: the jobs still run (else their output as diagnostics).
running() {
	local j r=0
	for j; do
		[ "$(cat "$B/exec/$j/status")" = running ] && continue
		diag "job $j: $(cat "$B/exec/$j/status")"
		tail -n 20 "$B/exec/$j/output" | sed 's/^/# /'
		r=1
	done
	return $r
}

# quiet BOX CMD: pd_job without its diagnostics, for polling.
quiet() {
	pd_job "$@" >/dev/null 2>&1
}

# The X server: VNC on a unix socket, X on its unix socket only.
ok "Xvnc :1 starts" start_job xvnc \
	'exec Xvnc :1 -geometry 1280x800 -depth 24 -SecurityTypes None -localhost -rfbport -1 -rfbunixpath /tmp/.vnc-sock -rfbunixmode 0600'
ok "its X socket appears" wait_for 60 test -S "$B/root/tmp/.X11-unix/X1"
ok "its VNC socket appears (mode 0600)" bash -c "
	wait_for 30 test -S '$B/root/tmp/.vnc-sock' && test \"\$(stat -c %a '$B/root/tmp/.vnc-sock')\" = 600"
# What the daemon will proxy: the VNC server greets on its socket.
ok "the VNC socket speaks RFB 3.8" same "$(timeout 10 python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
print(s.recv(12).decode().strip())' "$B/root/tmp/.vnc-sock")" "RFB 003.008"
ok "Xvnc answers X clients" pd_job desk 'DISPLAY=:1 xrandr --current | grep -q "current 1280 x 800"'
# No socket of the box listens on TCP (state 0A in /proc/net/tcp{,6}).
ok "nothing in the box listens on TCP" pd_job desk \
	'test -r /proc/net/tcp && ! cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | awk "\$4 == \"0A\"" | grep -q .'

# An XFCE session and a terminal.
ok "an XFCE session starts (dbus-launch xfce4-session)" start_job session \
	'export DISPLAY=:1; exec dbus-launch --exit-with-session xfce4-session'
ok "its window manager and panel come up" wait_for 90 \
	quiet desk 'DISPLAY=:1 xdotool search --class xfce4-panel >/dev/null && pgrep -x xfwm4 >/dev/null'
ok "a terminal starts" start_job term 'DISPLAY=:1 exec xfce4-terminal --disable-server --title=pd-term'
ok "xdotool finds the terminal by its title" wait_for 60 \
	quiet desk 'DISPLAY=:1 xdotool search --onlyvisible --name "^pd-term$" | grep -q .'

# The idle desktop's memory (Xvnc, the session with its panel, window
# manager and desktop, a terminal), after a few quiet seconds: the box's
# usage (what its cgroup is charged, page cache included) and the
# processes' proportional set sizes.
sleep 5
mem=$(awk '$1 == "memory_bytes" {print $2}' "$B/usage")
pss=$(pd_job desk 'cat /proc/[0-9]*/smaps_rollup 2>/dev/null | awk "/^Pss:/ {s += \$2} END {print s * 1024}"')
diag "idle desktop (Xvnc, xfce4-session, xfce4-terminal): usage memory_bytes $mem ($((mem / 1048576)) MiB), processes' Pss $pss ($((pss / 1048576)) MiB)"
ok "usage reports the idle desktop's memory" test "${mem:-0}" -gt $((50 * 1048576))

# A Tk window of a colour of its own.
cat >"$B/root/tmp/tk-probe.py" <<'PY'
import tkinter as tk

root = tk.Tk()
root.title("pd-tk-probe")
root.geometry("300x200+400+300")
tk.Frame(root, bg="#ff00ff", width=300, height=200).pack(fill="both", expand=True)
root.mainloop()
PY
ok "a Tk window starts" start_job tk 'DISPLAY=:1 exec python3 /tmp/tk-probe.py'
ok "xdotool finds the Tk window by its title" wait_for 60 \
	quiet desk 'DISPLAY=:1 xdotool search --onlyvisible --name "^pd-tk-probe$" | grep -q .'

# A screen grab: xwd -root, then the pixel at the Tk window's centre (from
# xdotool) must be its magenta, and the screen must not be all one colour.
cat >"$B/root/tmp/xwd-check.py" <<'PY'
import struct, sys

d = open(sys.argv[1], "rb").read()
cx, cy = int(sys.argv[2]), int(sys.argv[3])
h = struct.unpack(">25I", d[:100])
hsize, w, hgt, order, bpp, bpl, ncolors = h[0], h[4], h[5], h[7], h[11], h[12], h[19]
assert (w, hgt) == (1280, 800), (w, hgt)
assert bpp in (24, 32), bpp
masks = h[14:17]
px0 = hsize + 12 * ncolors
assert len(d) >= px0 + hgt * bpl, (len(d), px0 + hgt * bpl)
step = bpp // 8

def rgb(x, y):
    o = px0 + y * bpl + step * x
    v = int.from_bytes(d[o:o + step], "little" if order == 0 else "big")
    out = []
    for m in masks:
        s = (m & -m).bit_length() - 1
        out.append(((v & m) >> s) * 255 // (m >> s))
    return tuple(out)

centre = rgb(cx, cy)
assert centre == (255, 0, 255), "centre %r" % (centre,)
seen = {rgb(x, y) for x in range(0, w, 37) for y in range(0, hgt, 23)}
assert len(seen) > 3, "colours %r" % (seen,)
print("ok", centre, len(seen))
PY
cat >"$B/root/tmp/grab.sh" <<'SH'
export DISPLAY=:1
id=$(xdotool search --onlyvisible --name "^pd-tk-probe$" | head -n1)
xdotool windowactivate --sync "$id"
eval "$(xdotool getwindowgeometry --shell "$id")"
xwd -root -silent >/tmp/screen.xwd
python3 /tmp/xwd-check.py /tmp/screen.xwd $((X + WIDTH / 2)) $((Y + HEIGHT / 2))
SH
# The window manager raises it, then the server paints it: a few tries.
ok "xwd -root grabs the screen, the raised Tk window's pixels included" \
	wait_for 30 quiet desk 'bash /tmp/grab.sh'
pd_job desk 'bash /tmp/grab.sh' | sed -E 's/^(# )?/# /'

ok "Xvnc, the session, the terminal and Tk still run" running xvnc session term tk

# Firefox ESR on the display, with no GPU: a local page, found by its title.
cat >"$B/root/tmp/page.html" <<'HTML'
<!doctype html><title>pd-firefox-probe</title><p>hello</p>
HTML
ok "Firefox ESR starts on the display" start_job firefox \
	'DISPLAY=:1 exec firefox-esr --no-remote --new-instance file:///tmp/page.html'
ok "and shows the page (its window has the page's title)" wait_for 120 \
	quiet desk 'DISPLAY=:1 xdotool search --onlyvisible --name "^pd-firefox-probe" | grep -q .'
mem=$(awk '$1 == "memory_bytes" {print $2}' "$B/usage")
pss=$(pd_job desk 'cat /proc/[0-9]*/smaps_rollup 2>/dev/null | awk "/^Pss:/ {s += \$2} END {print s * 1024}"')
diag "with a Tk window and Firefox ESR on a local page: usage memory_bytes $mem ($((mem / 1048576)) MiB), processes' Pss $pss ($((pss / 1048576)) MiB)"

# The session ends with Xvnc; every job ends.
for j in firefox tk term session xvnc; do
	echo kill >"$B/exec/$j/ctl"
done
ok "the jobs end when killed" bash -c "
	for j in firefox tk term session xvnc; do timeout 30 cat '$B/exec/'\$j/exit >/dev/null || exit 1; done"

rmdir "$B"
pd_done
