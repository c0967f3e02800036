#!/bin/bash
# check-layers.sh - the arrows between the layers point down (docs/layers.md).
#
# 1. Every #include "FOLDER/x.h" of a file in a layer names its own layer
#    or one it may use (the table below); an include of one of our headers
#    without its folder ("engine.h") is refused too, since it would hide
#    which layer it reaches into.
# 2. Inside engine/, the parts reach each other through engine/internal.h,
#    not through each other's headers.
# 3. When the layers' libraries are built: no library uses a symbol that
#    only a layer it may not use defines (a function declared by hand, not
#    through a header, is caught here).
# Tests of the checker come first: made-up trees that break each rule
# must fail it. TAP output; run by `make check` with TOP_SRCDIR and
# TOP_BUILDDIR set.
set -uo pipefail

TOP_SRCDIR=${TOP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
TOP_BUILDDIR=${TOP_BUILDDIR:-$TOP_SRCDIR}

# What each folder may include besides itself (and system headers).
declare -A MAY=(
	[common]=""
	[store]="common"
	[net]="common"
	[box]="common"
	[runtime]="common store"
	[engine]="common store net runtime box"
	[fs]="common store net runtime box engine"
	[web]="common store net runtime box engine fs"
	[daemon]="common store net runtime box engine fs web"
	[cli]="common"
)
LAYERS="common store net box runtime engine fs web daemon cli"
# Libraries, for the symbol check (daemon/ and cli/ hold programs).
declare -A LIB=(
	[common]=common/.libs/libpaddockcommon.a
	[store]=store/.libs/libpaddockstore.a
	[net]=net/.libs/libpaddocknet.a
	[box]=box/.libs/libpaddockbox.a
	[runtime]=runtime/.libs/libpaddockruntime.a
	[engine]=engine/.libs/libpaddockengine.a
	[fs]=fs/.libs/libpaddockfs.a
	[web]=web/.libs/libpaddockweb.a
	[cli]=cli/.libs/libpaddockcli.a
)

n=0
failed=0
ok() {
	n=$((n + 1))
	if [ -z "$2" ]; then
		echo "ok $n - $1"
	else
		echo "not ok $n - $1"
		sed 's/^/#   /' <<<"$2"
		failed=1
	fi
}

# include_violations TOP LAYER: one line per include of LAYER's files that
# reaches a layer it may not use, or one of our headers without its folder.
include_violations() {
	local top=$1 layer=$2 allowed f line target
	allowed=" $layer ${MAY[$layer]} "
	local -A ours=()
	for f in "$top"/{common,store,net,box,runtime,engine,fs,web,daemon,cli}/*.h; do
		[ -e "$f" ] && ours[${f##*/}]=1
	done
	for f in "$top/$layer"/*.[ch]; do
		[ -e "$f" ] || continue
		while IFS= read -r line; do
			target=${line#*\"}
			target=${target%%\"*}
			if [[ $target == */* ]]; then
				[[ $allowed == *" ${target%%/*} "* ]] ||
					echo "${f#"$top"/}: $line (${target%%/*}/ is not below $layer/)"
			elif [ -n "${ours[$target]:-}" ]; then
				echo "${f#"$top"/}: $line (name the folder)"
			fi
		done < <(grep -E '^[[:space:]]*#[[:space:]]*include[[:space:]]+"' "$f")
	done
}

# The checker catches an upward include (and accepts a downward one).
fake=$(mktemp -d)
trap 'rm -rf "$fake"' EXIT
mkdir -p "$fake"/{common,engine,store}
printf '#include "engine/engine.h"\n' >"$fake/store/bad.c"
printf '#include "store/ok.h"\n#include "engine.h"\n' >"$fake/engine/engine.h"
: >"$fake/store/ok.h"
out=$(include_violations "$fake" store; include_violations "$fake" engine)
expect="store/bad.c: #include \"engine/engine.h\" (engine/ is not below store/)
engine/engine.h: #include \"engine.h\" (name the folder)"
ok "the checker finds an upward include and a flat one, and only those" \
	"$([ "$out" = "$expect" ] || printf 'got:\n%s\nwanted:\n%s' "$out" "$expect")"

for layer in $LAYERS; do
	if [ -z "${MAY[$layer]}" ]; then
		what="none of our other folders"
	else
		what="${MAY[$layer]// /, } only"
	fi
	ok "$layer/ includes $what" "$(include_violations "$TOP_SRCDIR" "$layer")"
done

# Inside engine/: a part (jobs.c, volumes.c, snapshots.c, net.c, ...) and
# the core (engine.c) reach each other through engine/internal.h only. A
# .c file includes that, its own header, and the headers of the engine's
# leaf modules, which call nothing of the engine.
ENGINE_SHARED="internal engine access auth box-state"
engine_violations() {
	local top=$1 f own target
	for f in "$top"/engine/*.c; do
		[ -e "$f" ] || continue
		own=${f##*/}
		own=${own%.c}
		for target in $(sed -n 's|^[[:space:]]*#[[:space:]]*include[[:space:]]*"engine/\([^"]*\)\.h".*|\1|p' "$f"); do
			[ "$target" = "$own" ] || [[ " $ENGINE_SHARED " == *" $target "* ]] ||
				echo "engine/${f##*/}: includes engine/$target.h (declare what it needs in engine/internal.h)"
		done
	done
}
out=$(mkdir -p "$fake/engine" && printf '#include "engine/jobs.h"\n#include "engine/internal.h"\n' >"$fake/engine/volumes.c" &&
	printf '#include "engine/jobs.h"\n' >"$fake/engine/jobs.c" && engine_violations "$fake")
ok "the checker finds an engine part that includes another part's header" \
	"$([ "$out" = "engine/volumes.c: includes engine/jobs.h (declare what it needs in engine/internal.h)" ] || echo "got: $out")"
ok "engine/'s parts reach each other through engine/internal.h" "$(engine_violations "$TOP_SRCDIR")"

# Symbols: who defines what, then who needs what.
defs=$(mktemp)
trap 'rm -rf "$fake" "$defs"' EXIT
built=1
for layer in "${!LIB[@]}"; do
	[ -f "$TOP_BUILDDIR/${LIB[$layer]}" ] || { built=0; break; }
	# The CLI's library holds a copy of common/'s objects: not a definer.
	[ "$layer" = cli ] && continue
	nm --defined-only -g "$TOP_BUILDDIR/${LIB[$layer]}" | awk -v l="$layer" 'NF == 3 { print $3, l }'
done | sort -k1,1 >"$defs"
for layer in $LAYERS; do
	[ -n "${LIB[$layer]:-}" ] || continue
	if [ $built = 0 ]; then
		echo "ok $((n += 1)) # SKIP the libraries are not built"
		continue
	fi
	allowed=" $layer ${MAY[$layer]} "
	bad=$(nm -u "$TOP_BUILDDIR/${LIB[$layer]}" | awk 'NF == 2 { print $2 }' | sort -u |
		join - "$defs" | while read -r sym where; do
			[[ $allowed == *" $where "* ]] || echo "$sym (defined in $where/)"
		done)
	ok "$layer/'s library uses no symbol of a layer above it" "$bad"
done

echo "1..$n"
exit $failed
