#!/bin/bash
# vnc.sh - the desktop's WebSocket proxy (GET /v1/vnc/NAME) against a
# client straight on Xvnc's unix socket, in the same run, while a terminal
# scrolls in the box (xfce4-terminal running a loop that prints).
#
# The same RFB client (tests/integration/vnc-client.py `fps`: raw encoding,
# one incremental FramebufferUpdateRequest after each update, as noVNC does)
# runs ROUNDS times for SECONDS each way, alternating. Reported:
#
#   vnc_fps           updates/s through the proxy; ratio proxy / direct
#                     (target 0.8, met when >=)
#   vnc_latency_ms    mean ms from a request to its update through the
#                     proxy; ratio proxy / direct (no target); the block
#                     says the ms the proxy adds
#   vnc_full_mbps     MB/s of whole-screen updates (4 MB each, raw, asked
#                     for again as soon as one is in): the proxy's
#                     throughput; ratio proxy / direct (target 0.8, >=)
#
# Medians of the rounds. Needs the desktop image (cached as for the
# integration tests: PD_IMAGES) and python3-websocket.
BENCH_NAME=vnc_fps
BENCH_TARGET=0.8
. "$(dirname "$0")/common.sh"

ROUNDS=${ROUNDS:-3}
SECONDS_EACH=${SECONDS_EACH:-8}
CLIENT=$BENCH_DIR/../integration/vnc-client.py
PY=/usr/bin/python3
$PY -c 'import websocket' 2>/dev/null || skip_all "python3-websocket is not installed"

pd_use_image desktop
bench_start
pd_owner || bench_broken "no owner token"
WS=${PD_URL/http:/ws:}
B=$M/boxes/bench
mkdir "$B"
echo desktop >"$B/image"
user=$(pd_job bench 'id -un') || bench_broken "the box does not run"
mkdir "$B/exec/dir" && echo root >"$B/exec/dir/user" &&
	echo "install -d -m 700 -o $user -g $user /run/paddock-desktop" >"$B/exec/dir/cmd"
[ "$(timeout 30 cat "$B/exec/dir/exit")" = 0 ] || bench_broken "cannot make the desktop's directory"
mkdir "$B/exec/xvnc" && echo 'exec Xvnc :1 -rfbport -1 -rfbunixpath /run/paddock-desktop/vnc.sock -rfbunixmode 0600 -SecurityTypes None -geometry 1280x800 -depth 24' >"$B/exec/xvnc/cmd"
wait_for 60 test -S "$B/root/run/paddock-desktop/vnc.sock" || bench_broken "Xvnc did not start"
sock=$(ls -d "$D"/boxes/*/rootfs/run/paddock-desktop/vnc.sock | head -n1)
mkdir "$B/exec/term" && echo 'DISPLAY=:1 exec xfce4-terminal --disable-server --geometry=160x48+0+0 -x sh -c "i=0; while :; do i=\$((i+1)); echo \"line \$i: the quick brown fox jumps over the lazy dog 0123456789\"; done"' >"$B/exec/term/cmd"
wait_for 60 pd_job bench 'DISPLAY=:1 xdotool search --class xfce4-terminal >/dev/null' >/dev/null 2>&1 ||
	bench_broken "the terminal did not start"
sleep 2

fps() { awk '{print $2 / $6}' <<<"$1"; }
lat() { awk '{print $8}' <<<"$1"; }
: >"$PD_TMP/direct.fps" >"$PD_TMP/proxy.fps" >"$PD_TMP/direct.lat" >"$PD_TMP/proxy.lat"
: >"$PD_TMP/direct.mbps" >"$PD_TMP/proxy.mbps"
mbps() { awk '{print $4 / $6 / 1e6}' <<<"$1"; }
for r in $(seq "$ROUNDS"); do
	d=$($PY "$CLIENT" fps "unix:$sock" "$SECONDS_EACH") || bench_broken "the direct client failed"
	p=$($PY "$CLIENT" fps "$WS/v1/vnc/bench" "$SECONDS_EACH" --token "$PD_TOKEN") ||
		bench_broken "the client through the proxy failed"
	echo "round $r: direct $d"
	echo "round $r: proxy  $p"
	fps "$d" >>"$PD_TMP/direct.fps"
	fps "$p" >>"$PD_TMP/proxy.fps"
	lat "$d" >>"$PD_TMP/direct.lat"
	lat "$p" >>"$PD_TMP/proxy.lat"
	d=$($PY "$CLIENT" full "unix:$sock" "$SECONDS_EACH") || bench_broken "the direct client failed"
	p=$($PY "$CLIENT" full "$WS/v1/vnc/bench" "$SECONDS_EACH" --token "$PD_TOKEN") ||
		bench_broken "the client through the proxy failed"
	echo "round $r: whole screens direct $d"
	echo "round $r: whole screens proxy  $p"
	mbps "$d" >>"$PD_TMP/direct.mbps"
	mbps "$p" >>"$PD_TMP/proxy.mbps"
done
dm=$(bench_stats "$PD_TMP/direct.mbps" | cut -d' ' -f1)
pm=$(bench_stats "$PD_TMP/proxy.mbps" | cut -d' ' -f1)
df=$(bench_stats "$PD_TMP/direct.fps" | cut -d' ' -f1)
pf=$(bench_stats "$PD_TMP/proxy.fps" | cut -d' ' -f1)
dl=$(bench_stats "$PD_TMP/direct.lat" | cut -d' ' -f1)
pl=$(bench_stats "$PD_TMP/proxy.lat" | cut -d' ' -f1)
echo "updates/s of a scrolling terminal (1280x800, raw): direct $df, through the proxy $pf"
echo "ms from a request to its update: direct $dl, through the proxy $pl (added $(awk -v a="$pl" -v b="$dl" 'BEGIN {printf "%.2f", a - b}'))"
echo "RESULT vnc_fps=$pf ratio=$(awk -v a="$pf" -v b="$df" 'BEGIN {printf "%.3f", a / b}') target=$BENCH_TARGET"
echo "MB/s of whole-screen updates: direct $dm, through the proxy $pm"
echo "RESULT vnc_full_mbps=$pm ratio=$(awk -v a="$pm" -v b="$dm" 'BEGIN {printf "%.3f", a / b}') target=0.8"
echo "RESULT vnc_latency_ms=$pl ratio=$(awk -v a="$pl" -v b="$dl" 'BEGIN {printf "%.3f", a / b}') target=none"
echo kill >"$B/exec/term/ctl"
echo kill >"$B/exec/xvnc/ctl"
