#!/bin/bash
# export.sh - export throughput: reading snapshots/ID/export and
# volumes/NAME/export to /dev/null, in MB/s of the tree's size, against
# `tar -C DIR -cf - . | zstd -3 -c > /dev/null` of the same tree (zstd
# level 3 is what the export uses, export.h EXPORT_ZSTD_LEVEL; both run
# zstd single-threaded). Two RESULT lines:
#
#   export-snapshot  MB/s of snapshots/ID/export (ratio = ours / baseline)
#   export-volume    MB/s of volumes/NAME/export (same baseline)
#
# The tree (~200 MB): 2,000 small files of 1-16 KB of text, 40 files of
# 4 MB of mixed data (half random, half text), built once. Target ratio >=
# 0.8 (the export also hashes every byte with XXH3 and writes a temp file).
# Each figure is the median of RUNS (default 3) runs, page cache warm.
. "$(dirname "$0")/common.sh"

BENCH_NAME=export-snapshot
BENCH_TARGET=0.8
RUNS=${RUNS:-3}
command -v zstd >/dev/null || skip_all "needs zstd"
bench_start
bench_build_note

mkdir "$M/boxes/big" || bench_broken "cannot create a box"
T=$M/boxes/big/root/tree
python3 - "$T" <<'PY' || bench_broken "cannot fill the box"
import os, random, sys
t = sys.argv[1]
random.seed(7)
words = b"alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu\n"
for d in range(20):
    os.makedirs(f"{t}/small/{d}", exist_ok=True)
    for i in range(100):
        n = random.randint(1024, 16384)
        with open(f"{t}/small/{d}/f{i}.txt", "wb") as f:
            f.write((words * (n // len(words) + 1))[:n])
os.makedirs(f"{t}/large", exist_ok=True)
for i in range(40):
    with open(f"{t}/large/blob{i}", "wb") as f:
        f.write(os.urandom(2 << 20))
        f.write((words * ((2 << 20) // len(words) + 1))[: 2 << 20])
PY
echo snap >"$M/boxes/big/snapshot" || bench_broken "cannot snapshot"
id=$(readlink "$M/boxes/big/snapshots/last")
mkdir "$M/volumes/big" && cp -a "$T/." "$M/volumes/big/data/" || bench_broken "cannot fill a volume"
sync
bytes=$(du -sb "$T" | cut -f1)
mb=$(python3 -c "print($bytes / 1e6)")
echo "  tree: $mb MB in $(find "$T" -type f | wc -l) files"

# rate CMD...: MB/s of the tree for one run of CMD.
rate() {
	local t0 t1
	t0=$(date +%s%N)
	"$@" >/dev/null || bench_broken "failed: $*"
	t1=$(date +%s%N)
	python3 -c "print('%.1f' % ($bytes / 1e6 / ((int('$t1') - int('$t0')) / 1e9)))"
}
base() { tar -C "$T" -cf - . | zstd -3 -q -c; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
runs() {
	local i
	for ((i = 0; i < RUNS; i++)); do rate "$@"; done | median
}

cat "$M/snapshots/$id/export" >/dev/null # mounts the root, warms the cache
b_med=$(runs base)
s_med=$(runs cat "$M/snapshots/$id/export")
v_med=$(runs cat "$M/volumes/big/export")
echo "  baseline tar | zstd -3: $b_med MB/s; snapshot export: $s_med MB/s; volume export: $v_med MB/s"
echo "  archive: $(cat "$M/snapshots/$id/export" | wc -c) bytes (tar | zstd -3: $(base | wc -c))"
ratio() { python3 -c "print('%.2f' % ($1 / $2))"; }
echo "RESULT export-snapshot=$s_med ratio=$(ratio "$s_med" "$b_med") target=$BENCH_TARGET"
echo "RESULT export-volume=$v_med ratio=$(ratio "$v_med" "$b_med") target=$BENCH_TARGET"
