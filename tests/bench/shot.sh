#!/bin/bash
# shot.sh - what screenshot.png costs to encode: the xwd to PNG conversion
# (engine/shot.c) of a 1280x800 frame, in process, built with -O2 from
# the source tree (not the sanitizer build). No daemon, no box: the grab
# itself (xwd in the box) and the exec around it are the engine's and are
# measured by the desktop's own figures.
#
# Frames: desktop-1280x800.png (an XFCE desktop with a terminal and a Tk
# window) made into the grab xwd -root writes there; and a "photo" copy
# whose right half is smooth colour with noise. For each, interleaved,
# BENCH_N (30) rounds of: memcpy of the grab's bytes (the floor), the
# conversion, and libpng's simplified writer with its defaults (zlib 6,
# adaptive filters) on the same pixels (shot.c says more).
#
#   RESULT shot_png_ms=<median ms, desktop> ratio=<paddock / libpng
#          defaults> target=0.5
#   RESULT shot_png_photo_ms=<the same, photo frame> ratio=... target=0.5
#
# The issue's budget for the whole screenshot (grab, exec, conversion) is
# 150 ms; the conversion's share is printed beside it.
#
# Needs a C compiler and libpng's headers (libpng-dev).

set -u
export LC_ALL=C
BENCH_DIR=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$BENCH_DIR/../.." && pwd)
N=${BENCH_N:-30}

if ! command -v cc >/dev/null || ! pkg-config --exists libpng16; then
	echo "skipped: needs a C compiler and libpng-dev"
	echo "RESULT shot_png_ms=skipped ratio=nan target=0.5"
	exit 0
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# shellcheck disable=SC2046
cc -O2 -std=gnu11 -D_GNU_SOURCE -I"$TOP" -o "$TMP/shot" "$BENCH_DIR/shot.c" \
	"$TOP/engine/shot.c" "$TOP/common/buf.c" "$TOP/common/error.c" \
	$(pkg-config --cflags --libs libpng16) -lm 2>"$TMP/cc.log" || {
	echo "cannot build shot.c: $(cat "$TMP/cc.log")" >&2
	exit 1
}
"$TMP/shot" "$BENCH_DIR/desktop-1280x800.png" "$N" >"$TMP/out" || exit 1

echo "xwd to PNG, 1280x800, median of $N rounds (ms, bytes):"
awk '{printf "  %-8s %-8s %8.2f ms %9d bytes\n", $1, $2, $3, $4}' "$TMP/out"
for frame in desktop photo; do
	ours=$(awk -v f=$frame '$1 == f && $2 == "paddock" {print $3}' "$TMP/out")
	def=$(awk -v f=$frame '$1 == f && $2 == "default" {print $3}' "$TMP/out")
	copy=$(awk -v f=$frame '$1 == f && $2 == "copy" {print $3}' "$TMP/out")
	ratio=$(awk -v a="$ours" -v b="$def" 'BEGIN {printf "%.2f", a / b}')
	echo "$frame: paddock ${ours} ms = ${ratio} x libpng defaults (${def} ms), $(awk -v a="$ours" -v b="$copy" 'BEGIN {printf "%.0f", a / b}') x a copy of the grab (${copy} ms); $(awk -v a="$ours" 'BEGIN {printf "%.0f", a / 150 * 100}')% of the 150 ms screenshot budget"
	name=shot_png_ms
	[ $frame = photo ] && name=shot_png_photo_ms
	echo "RESULT $name=$ours ratio=$ratio target=0.5"
done
