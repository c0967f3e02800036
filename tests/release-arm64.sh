#!/bin/bash
# release-arm64.sh - the arm64 release, outside the suite: cross-builds the
# packages (scripts/build-release --arch arm64), checks they are arm64
# packages, lintian clean, and that their binaries and the CLI's unit tests
# ran under qemu-user. Prints TAP.
#
# Not in `make check`: the first run adds the arm64 architecture to dpkg and
# installs about 150 arm64 library packages beside the host's (a test suite
# should not change the host's package set). Once they are there it takes
# about 1 minute on an idle 2-core machine (3 under load; the cross build
# is most of it). Run it as root before a release:
#
#   tests/release-arm64.sh [OUTDIR]
#
# OUTDIR (default: a temporary directory, removed) keeps the packages.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
n=0 failed=0

ok() {
	local name=$1
	shift
	n=$((n + 1))
	if "$@"; then
		echo "ok $n - $name"
	else
		echo "not ok $n - $name"
		failed=$((failed + 1))
	fi
}

[ "$(id -u)" = 0 ] || {
	echo "1..0 # SKIP needs root (it installs the arm64 libraries)"
	exit 0
}
[ "$(dpkg --print-architecture)" = amd64 ] || {
	echo "1..0 # SKIP cross-builds from an amd64 host only"
	exit 0
}

out=${1:-}
tmp=
if [ -z "$out" ]; then
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/paddock-arm64.XXXXXX")
	out=$tmp
fi
mkdir -p "$out" || exit 1
trap '[ -z "$tmp" ] || rm -rf "$tmp"' EXIT
version=$(sed -n 's/^paddock (\([^)]*\)).*/\1/p;q' "$top/debian/changelog")

build() {
	local start rc=0
	start=$(date +%s)
	"$top/scripts/build-release" --arch arm64 "$out" >"$out/build-release-arm64.log" 2>&1 || rc=$?
	echo "# build-release --arch arm64 took $(($(date +%s) - start)) s"
	sed 's/^/# /' "$out/build-times-arm64.txt" 2>/dev/null
	[ $rc = 0 ] || tail -n 30 "$out/build-release-arm64.log" | sed 's/^/# /'
	return $rc
}
ok "build-release --arch arm64 (cross build, lintian, qemu checks)" build

arm64_debs() {
	local p a
	for p in paddock paddock-cli; do
		a=$(dpkg-deb -f "$out/${p}_${version}_arm64.deb" Architecture 2>/dev/null)
		[ "$a" = arm64 ] || {
			echo "# $p: architecture [$a]"
			return 1
		}
	done
	# The binaries inside are aarch64 ELF files (e_machine 183).
	dpkg-deb --fsys-tarfile "$out/paddock-cli_${version}_arm64.deb" |
		tar -xO ./usr/bin/paddock | od -An -tu2 -j18 -N2 | grep -qw 183
}
ok "paddock and paddock-cli are arm64 packages of $version" arm64_debs
ok "lintian clean" lintian --fail-on error,warning "$out/paddock_${version}_arm64.changes"
ran_under_qemu() {
	sed 's/^/# /' "$out/qemu-arm64.txt"
	grep -q "^cli/paddock --version: paddock ${version%-*}$" "$out/qemu-arm64.txt" &&
		grep -q "^daemon/paddockd --version: paddock ${version%-*}$" "$out/qemu-arm64.txt" &&
		grep -q '^check_cli: [0-9]* passed' "$out/qemu-arm64.txt" &&
		grep -q '^check_cli_prompt: [0-9]* passed' "$out/qemu-arm64.txt"
}
ok "--version and the CLI's unit tests ran under qemu-aarch64" ran_under_qemu
ok "SHA256SUMS matches" sh -c 'cd "$1" && sha256sum --quiet -c SHA256SUMS' - "$out"

echo "1..$n"
[ $failed = 0 ]
