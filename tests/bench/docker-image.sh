#!/bin/bash
# docker-image.sh - what the docker and full images weigh, and what building
# them costs.
#
# Sizes (du -sb of the root filesystem, hard links counted once), with the
# debian image they are built on as the baseline:
#   - debian, docker and full, and desktop and agents when the cache has
#     them, each against debian;
#   - what docker adds to debian (Debian's Docker, docker-compose's Python
#     libraries), and Docker's programs alone (/usr/bin and /usr/sbin);
#   - full against the sum of what desktop, docker and agents each add to
#     debian, when the cache has all three (what one build of the three
#     shares: Debian libraries both desktop and docker pull in).
# Build times: what the cache's build logs say (mkimage's "built NAME in
# ... (N s)"), when the images were built by the tests; and with
# BENCH_BUILD=1 (the default) `mkimage docker` and `mkimage full` timed
# into a data directory of their own whose debian image is the cache's,
# against the copy of the debian image alone (cp -a, the floor every build
# starts with).
#
# RESULT docker_image_mib=DOCKER ratio=DOCKER/debian target=nan,
# full_image_mib=FULL ratio=FULL/debian target=nan, and (BENCH_BUILD=1)
# docker_image_build_s and full_image_build_s, ratio to the copy. No
# target: the images weigh what Debian and the agents' vendors ship.
# Needs root (the images are built by mkimage if the cache lacks them; full
# needs the npm registry).

BENCH_NAME=docker_image_mib
BENCH_TARGET=nan
# shellcheck source=common.sh
. "$(dirname "$0")/common.sh"
require_root

pd_use_image docker >/dev/null
pd_use_image full >/dev/null
BASE=$PD_IMAGES/debian/rootfs

bytes() {
	du -sb -- "$@" 2>/dev/null | awk '{ s += $1 } END { printf "%.0f\n", s }'
}
mib() {
	python3 -c 'import sys; print("%.1f" % (int(sys.argv[1]) / 1048576))' "$1"
}
# seconds T0 T1: T1 - T0 (nanoseconds) in seconds, one decimal.
seconds() {
	python3 -c 'import sys; print("%.1f" % ((int(sys.argv[2]) - int(sys.argv[1])) / 1e9))' "$1" "$2"
}
# logged NAME: the build time the cache's log of NAME says, or nothing.
logged() {
	sed -n "s/^mkimage: built $1 in .* (\([0-9]*\) bytes, \([0-9]*\) s)\$/\2/p" "$PD_IMAGES.$1.log" 2>/dev/null | tail -n 1
}

base=$(bytes "$BASE")
declare -A size
for n in debian desktop agents docker full; do
	[ -d "$PD_IMAGES/$n/rootfs" ] && size[$n]=$(bytes "$PD_IMAGES/$n/rootfs")
done

echo "images (du -sb of rootfs/; ratio to debian; build time from the cache's log)"
for n in debian desktop agents docker full; do
	[ -n "${size[$n]:-}" ] || continue
	t=$(logged "$n")
	printf '  %-8s %9s MiB  %5s x debian%s\n' "$n" "$(mib "${size[$n]}")" \
		"$(bench_ratio "${size[$n]}" "$base")" "${t:+  built in $t s}"
done

D_R=$PD_IMAGES/docker/rootfs
progs=$(bytes "$D_R/usr/bin/docker" "$D_R/usr/sbin/dockerd" "$D_R/usr/bin/containerd" \
	"$D_R/usr/bin/containerd-shim"* "$D_R/usr/bin/ctr" "$D_R/usr/sbin/runc" "$D_R/usr/sbin/docker-proxy" \
	"$D_R/usr/bin/tini-static")
echo "what docker adds to debian:"
printf '  %-19s %9s MiB\n' "all of it" "$(mib $((size[docker] - base)))"
printf '  %-19s %9s MiB  (docker, dockerd, containerd and its shims, ctr, runc, docker-proxy, docker-init (tini))\n' \
	"Docker's programs" "$(mib "$progs")"
printf '  %-19s %9s MiB  (docker-compose and its Python libraries, iptables, the rest)\n' \
	"the rest" "$(mib $((size[docker] - base - progs)))"

if [ -n "${size[desktop]:-}" ] && [ -n "${size[agents]:-}" ]; then
	parts=$((size[desktop] + size[agents] + size[docker] - 3 * base))
	echo "full against its parts (what desktop, agents and docker each add to debian):"
	printf '  %-19s %9s MiB\n' "sum of the parts" "$(mib "$parts")"
	printf '  %-19s %9s MiB  (%s x the sum)\n' "full adds" "$(mib $((size[full] - base)))" \
		"$(bench_ratio $((size[full] - base)) "$parts")"
fi

build_lines=()
if [ "${BENCH_BUILD:-1}" = 1 ]; then
	pd_setup >/dev/null || bench_broken "cannot set up"
	A=$PD_TMP/bench-images
	mkdir -p "$A/images"
	ln -s "$PD_IMAGES/debian" "$A/images/debian"
	printf '[paddock]\ndata = %s\n' "$A" >"$A.ini"
	t0=$(date +%s%N)
	cp -a --reflink=auto -- "$BASE" "$A/copy" || bench_broken "cannot copy the debian image"
	t1=$(date +%s%N)
	rm -rf --one-file-system "$A/copy"
	copy_s=$(seconds "$t0" "$t1")
	echo "build (BENCH_BUILD=1): copying the debian image alone ${copy_s} s"
	for n in docker full; do
		sync
		t0=$(date +%s%N)
		"$MKIMAGE" --config "$A.ini" "$n" >"$A.$n.log" 2>&1 || {
			tail -n 20 "$A.$n.log"
			bench_broken "mkimage $n failed"
		}
		t1=$(date +%s%N)
		s=$(seconds "$t0" "$t1")
		echo "  mkimage $n ${s} s ($(bench_ratio "$s" "$copy_s") x the copy)"
		grep -E "skipped|added [0-9]+ packages|^Need to get|^Fetched .* in" "$A.$n.log" | sed 's/^/    /'
		rm -rf --one-file-system "$A/images/$n"
		build_lines+=("RESULT ${n}_image_build_s=$s ratio=$(bench_ratio "$s" "$copy_s") target=nan")
	done
fi

echo "RESULT $BENCH_NAME=$(mib "${size[docker]}") ratio=$(bench_ratio "${size[docker]}" "$base") target=$BENCH_TARGET"
echo "RESULT full_image_mib=$(mib "${size[full]}") ratio=$(bench_ratio "${size[full]}" "$base") target=nan"
for l in "${build_lines[@]}"; do
	echo "$l"
done
