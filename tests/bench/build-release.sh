#!/bin/bash
# build-release.sh DIR - builds paddockd and paddock-init from the current
# working tree without sanitizers, in DIR (created; must not exist or be
# empty), and prints the path of the new paddockd on stdout.
#
# Why: a tree configured with --enable-sanitizers (the usual developer
# setting) gives a paddockd whose every fork is slower and whose memory
# keeps growing (ASan's quarantine), which is not what a benchmark should
# measure. The working tree itself is left alone: its sources, edits
# included, are copied, cleaned, configured with the defaults (-g -O2) and
# the programs are built (not the tests).

set -euo pipefail
[ $# = 1 ] || { echo "usage: $0 DIR" >&2; exit 2; }
top=$(cd "$(dirname "$0")/../.." && pwd)
dir=$1
mkdir -p "$dir"
[ -z "$(ls -A "$dir")" ] || { echo "$0: $dir is not empty" >&2; exit 2; }
src=$dir/src

echo "build-release: copying $top to $src" >&2
mkdir "$src"
tar -C "$top" --exclude=./.git --exclude=./tests/bench/results --exclude='./tests/images-cache*' \
	--exclude=./tests/node-cache -cf - . | tar -C "$src" -xf -
cd "$src"
if [ -f Makefile ]; then
	make distclean >/dev/null 2>&1 || true
fi
[ -x configure ] || ./autogen.sh >/dev/null
echo "build-release: configuring and building (no sanitizers)" >&2
./configure --quiet >"$dir/configure.log" 2>&1 ||
	{ tail -n 20 "$dir/configure.log" >&2; exit 1; }
jobs=$(nproc 2>/dev/null || echo 2)
make -j"$jobs" >"$dir/make.log" 2>&1 ||
	{ tail -n 30 "$dir/make.log" >&2; exit 1; }
[ -x daemon/paddockd ] && [ -x daemon/paddock-init ] ||
	{ echo "$0: no daemon/paddockd after the build" >&2; exit 1; }
if grep -aq __asan_init daemon/paddockd; then
	echo "$0: the copy was built with ASan anyway (CFLAGS in the environment?)" >&2
	exit 1
fi
echo "$src/daemon/paddockd"
