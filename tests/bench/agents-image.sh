#!/bin/bash
# agents-image.sh - what the agents image weighs, and what building it costs.
#
# Sizes (du -sb, hard links counted once), with the debian image it is
# built on as the baseline:
#   - the whole image against the debian image;
#   - each agent of its agents.ini: the npm package's directory, native
#     platform packages included (the others: their command, resolved);
#   - Node.js and npm (/usr/local/bin/node, its headers and docs, npm's
#     package);
#   - the rest: what the image differs by otherwise (Debian's nodejs and
#     npm, purged, make it negative).
# Build time (BENCH_BUILD=1, the default): `mkimage agents` into a data
# directory of its own whose debian image is the cache's, against the copy
# of the debian image alone (cp -a, the floor the build starts with).
#
# RESULT agents_image_mib=TOTAL ratio=TOTAL/debian target=nan, and
# agents_image_build_s=S ratio=S/copy target=nan. No target: the agents
# weigh what their vendors ship.
# Needs root (the image is built by mkimage if the cache lacks it).

BENCH_NAME=agents_image_mib
BENCH_TARGET=nan
# shellcheck source=common.sh
. "$(dirname "$0")/common.sh"
require_root

pd_use_image agents >/dev/null
IMG=$PD_IMAGES/agents
R=$IMG/rootfs
BASE=$PD_IMAGES/debian/rootfs
eval "$(sed -n '/^ini_get() {/,/^}/p; /^ini_sections() {/,/^}/p' "$MKIMAGE")"

bytes() {
	du -sb -- "$@" 2>/dev/null | awk '{ s += $1 } END { print s + 0 }'
}
mib() {
	python3 -c 'import sys; print("%.1f" % (int(sys.argv[1]) / 1048576))' "$1"
}

total=$(bytes "$R")
base=$(bytes "$BASE")
node=$(bytes "$R/usr/local/bin/node" "$R/usr/local/include/node" "$R/usr/local/share/doc/node" \
	"$R/usr/local/share/man/man1/node.1" "$R/usr/local/lib/node_modules/npm")
sum=0
lines=()
for id in $(ini_sections "$IMG/agents.ini"); do
	pkg=$(ini_get "$id" package "$IMG/agents.ini")
	if [ -n "$pkg" ]; then
		b=$(bytes "$R/usr/local/lib/node_modules/$pkg")
	else
		bin=$(ini_get "$id" bin "$IMG/agents.ini")
		b=$(bytes "$(readlink -f "$R/usr/local/bin/$bin")")
	fi
	sum=$((sum + b))
	lines+=("$(printf '  %-10s %-8s %9s MiB  (%s of debian)' "$id" "$(ini_get "$id" version "$IMG/agents.ini")" \
		"$(mib "$b")" "$(bench_ratio "$b" "$base")")")
done

echo "agents image ($(cat "$IMG/description"))"
printf '  %-19s %9s MiB\n' "debian (baseline)" "$(mib "$base")"
printf '  %-19s %9s MiB  (%s x debian)\n' "agents image" "$(mib "$total")" "$(bench_ratio "$total" "$base")"
echo "what the agents image adds:"
printf '%s\n' "${lines[@]}"
printf '  %-19s %9s MiB\n' "agents together" "$(mib "$sum")"
printf '  %-19s %9s MiB\n' "Node.js and npm" "$(mib "$node")"
printf '  %-19s %9s MiB  (Debian'"'"'s nodejs and npm purged)\n' "the rest" "$(mib $((total - base - sum - node)))"

build_line=
if [ "${BENCH_BUILD:-1}" = 1 ]; then
	pd_setup >/dev/null || bench_broken "cannot set up"
	A=$PD_TMP/bench-agents
	mkdir -p "$A/images"
	ln -s "$PD_IMAGES/debian" "$A/images/debian"
	printf '[paddock]\ndata = %s\n' "$A" >"$A.ini"
	t0=$(date +%s%N)
	cp -a --reflink=auto -- "$BASE" "$A/copy" || bench_broken "cannot copy the debian image"
	t1=$(date +%s%N)
	rm -rf --one-file-system "$A/copy"
	sync
	t2=$(date +%s%N)
	"$MKIMAGE" --config "$A.ini" agents >"$A.log" 2>&1 || {
		tail -n 20 "$A.log"
		bench_broken "mkimage agents failed"
	}
	t3=$(date +%s%N)
	copy_s=$(python3 -c 'import sys; print("%.1f" % ((int(sys.argv[2]) - int(sys.argv[1])) / 1e9))' "$t0" "$t1")
	build_s=$(python3 -c 'import sys; print("%.1f" % ((int(sys.argv[2]) - int(sys.argv[1])) / 1e9))' "$t2" "$t3")
	echo "build: mkimage agents ${build_s} s; copying the debian image alone ${copy_s} s ($(bench_ratio "$build_s" "$copy_s") x)"
	grep -E "skipped|npm.*added|added [0-9]+ packages" "$A.log" | sed 's/^/  /'
	rm -rf --one-file-system "$A/images/agents"
	build_line="RESULT agents_image_build_s=$build_s ratio=$(bench_ratio "$build_s" "$copy_s") target=nan"
fi

echo "RESULT $BENCH_NAME=$(mib "$total") ratio=$(bench_ratio "$total" "$base") target=$BENCH_TARGET"
[ -z "$build_line" ] || echo "$build_line"
