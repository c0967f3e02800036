#!/bin/bash
# run-all.sh - runs every benchmark and gathers their RESULT lines, printed
# together at the end and written to tests/bench/results/latest.txt.
# Most ratios are costs (met when ratio <= target); exec_stream_mbps and
# root_copy_files_per_s are throughput ratios (met when ratio >= target):
# see README.md.
#
#   run-all.sh [--tree | --release]
#
# Which paddockd is measured:
#   default    the tree's daemon/paddockd, unless it was built with the
#              sanitizers: then a plain copy is built first (build-release.sh)
#   --tree     the tree's daemon/paddockd as it is (or $PADDOCKD if set)
#   --release  always build and measure a plain copy of the working tree
#
# Exit status: 0 when every benchmark ran (whatever the numbers), 1 when
# one of them broke. Needs root, like the benchmarks.

set -u
export LC_ALL=C
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
mode=auto
case "${1:-}" in
--tree) mode=tree ;;
--release) mode=release ;;
"") ;;
*)
	echo "usage: $0 [--tree | --release]" >&2
	exit 2
	;;
esac

work=$(mktemp -d /tmp/paddock-bench-all.XXXXXX)
cleanup() {
	rm -rf --one-file-system "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

export PADDOCKD=${PADDOCKD:-$top/daemon/paddockd}
[ -x "$PADDOCKD" ] || { echo "no $PADDOCKD: run make first" >&2; exit 1; }
sanitized=no
grep -aq __asan_init "$PADDOCKD" && sanitized=yes
build="tree ($PADDOCKD)"
if [ $mode = release ] || { [ $mode = auto ] && [ $sanitized = yes ]; }; then
	[ $sanitized = yes ] && echo "run-all: $PADDOCKD is an ASan/UBSan build; measuring a plain copy"
	PADDOCKD=$("$here/build-release.sh" "$work/build") || { echo "run-all: the build failed" >&2; exit 1; }
	build="plain copy of the working tree (no sanitizers)"
elif [ $sanitized = yes ]; then
	build="$build, ASan/UBSan build"
fi

results=()
broken=0
for b in box-start box-rmdir state-read idle-memory exec root-copy http login snapshot stop-snapshot export net dns seccomp isolation volume-live lock shot agents-image prompt docker-image docker preview sdk; do
	echo "=== $b"
	"$here/$b.sh" | tee "$work/$b.out"
	rc=${PIPESTATUS[0]}
	# A script may print several RESULT lines (exec.sh prints two).
	mapfile -t lines < <(grep '^RESULT ' "$work/$b.out")
	if [ "$rc" -ne 0 ] || [ ${#lines[@]} = 0 ]; then
		[ "$rc" -ge 128 ] && exit "$rc" # interrupted
		broken=1
		lines+=("RESULT ${b//-/_}=broken ratio=nan target=nan")
	fi
	results+=("${lines[@]}")
	echo
done

rev=$(git -C "$top" rev-parse --short HEAD 2>/dev/null || echo unknown)
git -C "$top" diff --quiet HEAD -- . 2>/dev/null || rev="$rev+changes"
mkdir -p "$here/results"
{
	echo "# paddock benchmarks, $(date -u +%Y-%m-%dT%H:%M:%SZ), $(uname -r), $(nproc) CPUs, commit $rev"
	echo "# paddockd: $build"
	printf '%s\n' "${results[@]}"
} >"$here/results/latest.txt"

echo "=== results (also in tests/bench/results/latest.txt)"
printf '%s\n' "${results[@]}"
exit $broken
