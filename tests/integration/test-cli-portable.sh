#!/bin/bash
# test-cli-portable.sh - the CLI beyond Linux, checked from Linux:
#  - macOS: each file of cli/, and each file of common/ the CLI links
#    there (libpaddockcommon-cli.la without the Linux-only extractor),
#    compiles with the macOS branches of platform-posix.c
#    (-DPADDOCK_PLATFORM_MACOS), without _GNU_SOURCE, and with what glibc
#    has and macOS lacks poisoned (tests/macos-poison.h);
#  - ./configure --disable-server (the macOS build's configure): a copy of
#    the release tree (make distdir) configured so in a fresh build
#    directory builds common's portable part, the CLI and its unit tests,
#    and they pass; pull with the stand-in extractor of the non-Linux
#    build refuses with its reason (~1-2 min in all);
#  - Windows: scripts/build-windows-cli cross-builds the CLI's portable
#    part and its tests with mingw-w64 and runs them under Wine; each of
#    their TAP lines is one here.
# The Windows libraries are built once into the build tree
# (build-windows/deps, kept between runs: ~30-50 s in all then; the first run builds
# jansson, libcurl and inih from Debian's source packages: a few minutes).
# Skips what its tools are missing for (mingw-w64, wine, cmake); set
# PD_WINDOWS_BUILD=0 to skip the Windows part.
. "$(dirname "$0")/lib.sh"

src=$TOP_SRCDIR
command -v gcc >/dev/null || skip_all "needs gcc"

# --- macOS ---------------------------------------------------------------------

# The files of common/ the CLI links on macOS: libpaddockcommon-cli.la's
# sources, but in common/Makefile.am's "if HOST_LINUX" block those of its
# else branch only.
macos_common_files() {
	awk '
		/^if HOST_LINUX/ { cond = "linux"; next }
		/^else/ && cond == "linux" { cond = "other"; next }
		/^endif/ { cond = ""; next }
		/^libpaddockcommon_cli_la_SOURCES/ { take = 1 }
		take && cond != "linux" {
			for (i = 1; i <= NF; i++)
				if ($i ~ /\.c$/) print $i
		}
		take && !/\\$/ { take = 0 }
	' "$src/common/Makefile.am" | sed "s|^|$src/common/|"
}

macos_check() {
	local f out bad=0 files
	files=$(macos_common_files)
	# The list itself: the portable helpers and the stand-in extractor are
	# in it, util.c and the Linux extractor are not.
	case $files in
	*/util-portable.c*) ;;
	*) diag "no util-portable.c in: $files"; return 1 ;;
	esac
	case $files in
	*/tarsafe-unsupported.c*) ;;
	*) diag "no tarsafe-unsupported.c in: $files"; return 1 ;;
	esac
	if echo "$files" | grep -Eq '/(util|tarsafe|tarsafe-extract|tarsafe-links)\.c$'; then
		diag "a Linux-only file in: $files"
		return 1
	fi
	for f in "$src"/cli/*.c $files; do
		case $f in
		*-windows.c | */skill-md.c) continue ;;
		esac
		# Not Linux: what a file keeps for Linux (#ifdef __linux__, as
		# cli/doctor.c's host checks) is left out, as on a Mac.
		if ! out=$(gcc -std=gnu11 -D_DEFAULT_SOURCE -DPADDOCK_PLATFORM_MACOS \
			-U__linux__ -U__linux -Ulinux -U__gnu_linux__ -I"$src" \
			-I"$TOP_BUILDDIR" -include "$src/tests/macos-poison.h" \
			-Werror=implicit-function-declaration -fsyntax-only "$f" 2>&1); then
			diag "${f#"$src"/}:"
			echo "$out" | grep -E 'error' | head -5 | sed 's/^/#   /'
			bad=1
		fi
	done
	return $bad
}
ok "macOS: cli/*.c and the common/ files it links compile with the macOS branches, no GNU-only call" macos_check

# --- ./configure --disable-server ----------------------------------------------

# In a copy of the release tree: the source tree may itself be configured,
# which rules out a second build directory of it. The copy's makes run
# without the outer make's variables (TESTS=... would run this very test
# in the copy, and so on).
unset MAKEFLAGS MFLAGS MAKELEVEL
cli_only() {
	local t=$1 log=$1/log start
	start=$(date +%s)
	# distdir must be relative (automake's recursion): made in the build
	# tree under a name of its own, then moved.
	local dd=paddock-cli-only-$$
	if ! make -s -C "$TOP_BUILDDIR" distdir distdir="$dd" >"$log" 2>&1 ||
		! mv "$TOP_BUILDDIR/$dd" "$t/src"; then
		rm -rf "${TOP_BUILDDIR:?}/$dd"
		diag "make distdir failed"
		tail -5 "$log" | sed 's/^/#   /'
		return 1
	fi
	mkdir -p "$t/build"
	(cd "$t/build" && "$t/src/configure" --disable-server) >>"$log" 2>&1 || {
		diag "configure --disable-server failed"
		tail -5 "$log" | sed 's/^/#   /'
		return 1
	}
	# None of the daemon's libraries was asked for.
	if grep -E '^checking for (FUSE|SQLITE|XXHASH|MHD|SODIUM|NFTABLES|SECCOMP)\.\.\.' "$log"; then
		diag "configure --disable-server checked for a library of the daemon"
		return 1
	fi
	if ! make -C "$t/build" -j2 >>"$log" 2>&1; then
		diag "make failed"
		grep -E 'error|undefined' "$log" | head -10 | sed 's/^/#   /'
		return 1
	fi
	diag "--disable-server: configure and build took $(($(date +%s) - start)) s"
	return 0
}
T=$(mktemp -d "${TMPDIR:-/tmp}/paddock-cli-only.XXXXXX")
if ok "--disable-server: a fresh build directory configures and builds" cli_only "$T"; then
	b=$T/build
	ok "--disable-server: cli/paddock built, no daemon" \
		bash -c "test -x '$b/cli/paddock' && test ! -e '$b/daemon/paddockd' &&
			test ! -e '$b/common/libpaddockcommon.la'"
	ok "--disable-server: paddock --help runs" bash -c "'$b/cli/paddock' --help >/dev/null"
	# Only the CLI's own tests: check_cli, check_cli_prompt,
	# check_cli_portable, check_doctor.
	make -C "$b/tests" check >"$T/check.log" 2>&1
	rc=$?
	diag "--disable-server: unit tests: $(grep -c '^PASS: ' "$T/check.log") passed," \
		"$(grep -Ec '^(FAIL|ERROR): ' "$T/check.log") failed"
	ok "--disable-server: make -C tests check passes" same "$rc" 0
	ok "--disable-server: the tests run are the CLI's" same \
		"$(sed -n 's/^\(PASS\|FAIL\|ERROR\): \([a-z_]*\) .*/\2/p' "$T/check.log" | sort -u | tr '\n' ' ')" \
		"check_cli check_cli_portable check_cli_prompt check_doctor "
	[ "$rc" = 0 ] || grep -E '^(FAIL|ERROR)' "$T/check.log" | head -10 | sed 's/^/# /'

	# The non-Linux build's pull: the stand-in extractor linked in place
	# of the real one (a program's own object comes before the archive's),
	# as the macOS build has it.
	pull_refuses() {
		cat >"$T/pull.c" <<-'EOF'
		#include <errno.h>
		#include <fcntl.h>
		#include <stdio.h>
		#include <string.h>
		#include <unistd.h>
		#include "cli/transfer.h"
		int main(int argc, char **argv)
		{
			cli_pull_opts opts = {0};
			pd_error err = {0};
			int fds[2], dfd = open(argv[1], O_RDONLY | O_DIRECTORY);
			if (argc != 2 || dfd < 0 || pipe(fds) < 0)
				return 2;
			write(fds[1], "x", 1);
			close(fds[1]);
			int r = cli_pull_extract(fds[0], dfd, &opts, &err);
			printf("%d %s\n", r, err.msg);
			return r == -EOPNOTSUPP ? 0 : 1;
		}
		EOF
		mkdir -p "$T/into"
		# shellcheck disable=SC2046
		gcc -std=gnu11 -D_GNU_SOURCE -I"$T/src" -I"$b" -o "$T/pull" "$T/pull.c" \
			"$T/src/common/tarsafe-unsupported.c" "$b/cli/.libs/libpaddockcli.a" \
			$(pkg-config --libs libcurl libarchive inih jansson) -lpthread ||
			return 1
		out=$("$T/pull" "$T/into") || { diag "$out"; return 1; }
		diag "$out"
		case $out in *"not in the macOS build"*) ;; *) return 1 ;; esac
		[ -z "$(ls -A "$T/into")" ]
	}
	ok "non-Linux pull: refuses with its reason, writes nothing" pull_refuses
else
	sed 's/^/# /' "$T/log" | tail -15
fi
rm -rf --one-file-system "$T"

# --- Windows -------------------------------------------------------------------

# One Wine prefix for both parts below (some 700 MB), removed at the end
# with its wineserver.
# Wine's own temporary directory (its server's) goes inside it too.
WINE_DIR=$(mktemp -d "${TMPDIR:-/tmp}/paddock-wine.XXXXXX")
WINEPREFIX=$WINE_DIR/prefix
mkdir "$WINEPREFIX" "$WINE_DIR/tmp"
export WINEPREFIX WINEDEBUG=-all
wine_gone() {
	wineserver -k 2>/dev/null
	rm -rf --one-file-system "$WINE_DIR"
}
trap wine_gone EXIT

windows() {
	local why=""
	[ "${PD_WINDOWS_BUILD:-1}" = 0 ] && why="PD_WINDOWS_BUILD=0"
	command -v x86_64-w64-mingw32-gcc >/dev/null || why="needs mingw-w64"
	command -v cmake >/dev/null || why="needs cmake"
	command -v wine >/dev/null || command -v wine64 >/dev/null || why="needs wine"
	if [ -n "$why" ]; then
		pd_n=$((pd_n + 1))
		echo "ok $pd_n # SKIP Windows: $why"
		return
	fi
	local out=$TOP_BUILDDIR/build-windows log start
	mkdir -p "$out"
	log=$out/test.log
	start=$(date +%s)
	# A mirror without bookworm's inih tarball: the next suite's (same API).
	PD_DEBSRC_SUITES=${PD_DEBSRC_SUITES-trixie} \
		TMPDIR=$WINE_DIR/tmp "$src/scripts/build-windows-cli" --run "$out" >"$out/tap" 2>"$log"
	local rc=$?
	diag "Windows: build and run took $(($(date +%s) - start)) s"
	if ! grep -q '^1\.\.' "$out/tap"; then
		# It never ran: the build (or a fetch) failed.
		sed 's/^/# /' "$log" | tail -15
		if grep -q 'cannot fetch the source\|no source tarball' "$log"; then
			pd_n=$((pd_n + 1))
			echo "ok $pd_n # SKIP Windows: the libraries' source packages cannot be fetched"
			return
		fi
		ok "Windows: paddock.exe and the tests build with mingw-w64" false
		return
	fi
	ok "Windows: paddock.exe and the tests build with mingw-w64" true
	local line
	while IFS= read -r line; do
		case $line in
		ok\ *) ok "Windows (Wine): ${line#ok * - }" true ;;
		not\ ok\ *) ok "Windows (Wine): ${line#not ok * - }" false ;;
		\#*) echo "$line" ;;
		esac
	done <"$out/tap"
	ok "Windows: the tests' exit status is 0" same "$rc" 0
}
windows

# --- paddock.exe under Wine against a real server --------------------------------

exe=$TOP_BUILDDIR/build-windows/paddock.exe
why=""
[ -f "$exe" ] || why="no paddock.exe built"
[ "$(id -u)" = 0 ] && [ -c /dev/fuse ] && command -v crun >/dev/null ||
	why="a server needs root, /dev/fuse and crun"
if [ -n "$why" ]; then
	pd_n=$((pd_n + 1))
	echo "ok $pd_n # SKIP paddock.exe against a server: $why"
	echo "1..$pd_n"
	[ "$pd_failed" -eq 0 ]
	exit
fi

wine=$(command -v wine64 || command -v wine)
# Windows writes \r\n to a pipe in text mode; stdout is binary here.
win() { TMPDIR=$WINE_DIR/tmp "$wine" "$exe" "$@"; }
export -f win
export wine exe

pd_use_debian
pd_setup || exit 1
pd_on_exit wine_gone # pd_setup's cleanup replaced the trap
pd_start
URL=$(pd_url)
wait_for 10 curl -s -o /dev/null "$URL/" || { diag "no server on $URL"; exit 1; }
# A Unix path: Wine's Z: drive is /, so the file lands here.
export PADDOCK_CONFIG=$PD_TMP/win/config.ini
unset PADDOCK_URL PADDOCK_TOKEN
PW='correct horse battery'
wait_for 10 test -s "$D/setup-url"
secret=$(sed 's/.*token=//' "$D/setup-url")
curl -sS -o /dev/null -H 'Content-Type: application/json' \
	--data "{\"token\":\"$secret\",\"password\":\"$PW\"}" "$URL/v1/setup"

E=$PD_TMP/win.err
ok "Windows: login --password-stdin writes the config (with the token)" bash -c "
	echo '$PW' | win -q login '$URL' --password-stdin 2>'$E' &&
	grep -q '^token = pd_' '$PADDOCK_CONFIG'"
ok "Windows: new --name w1 prints the name" same "$(win new --name w1 --ttl 600 2>"$E")" w1
ok "Windows: ls shows it running" bash -c "win ls 2>'$E' | grep -Eq '^w1 +running '"
ok "Windows: ls --json is JSON with the box" bash -c "win --json ls 2>'$E' | python3 -c '
import json, sys; assert any(b[\"name\"] == \"w1\" for b in json.load(sys.stdin))'"
ok "Windows: exec streams stdout and stderr apart" bash -c "
	win exec w1 -- sh -c 'echo out; echo err >&2' >'$PD_TMP/o' 2>'$PD_TMP/e' &&
	test \"\$(tr -d '\r' <'$PD_TMP/o')\" = out && grep -q '^err' '$PD_TMP/e'"
ok "Windows: exec exits with the job's code" bash -c "win exec w1 -- sh -c 'exit 7'; test \$? = 7"
ok "Windows: an error body's reason, and exit 1" bash -c "
	! win info nosuchbox 2>'$E' && grep -q '^paddock: ' '$E'"
ok "Windows: pull says it is not in this build yet" bash -c "
	! win pull w1 /etc/hostname --to '$PD_TMP/pulled' 2>'$E' &&
	grep -q 'not in the Windows build' '$E'"
mkdir -p "$PD_TMP/vol"
echo from-windows >"$PD_TMP/vol/f"
tar -C "$PD_TMP/vol" -cf - f | zstd -q >"$PD_TMP/in.tar.zst"
ok "Windows: volume create, import FILE (a PUT streamed from a file)" bash -c "
	win volume create wv 2>'$E' && win volume import wv '$PD_TMP/in.tar.zst' 2>>'$E'"
ok "Windows: the volume holds the file" same "$(cat "$M/volumes/wv/data/f")" from-windows
ok "Windows: volume export -o FILE (a GET streamed into a file)" bash -c "
	win volume export wv -o '$PD_TMP/out.tar.zst' 2>'$E' &&
	test \"\$(zstd -dc '$PD_TMP/out.tar.zst' | tar -xOf - f)\" = from-windows"
ok "Windows: volume rm" bash -c "win volume rm wv 2>'$E'"
ok "Windows: stop and rm" bash -c "win stop w1 2>'$E' && win rm w1 2>>'$E'"
ok "Windows: the box is gone" test ! -e "$M/boxes/w1"
[ "$pd_failed" -eq 0 ] || sed 's/^/# stderr: /' "$E"
pd_done
