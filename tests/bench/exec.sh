#!/bin/bash
# exec.sh - exec jobs through the tree, against raw `crun exec` in the same
# box. Two measurements, two RESULT lines.
#
# (a) Round trip of a command that does nothing. Paddock: `mkdir
#     MOUNT/boxes/X/exec/JOB`, `echo true > .../cmd` (the job starts when
#     the file is closed), `read < .../exit` (waits for the end). The job
#     is deleted (rmdir) outside the timed part. Baselines, interleaved with
#     it in the same box, with the daemon's crun --root:
#       crun      `crun exec X true`, crun alone: the timed loop runs in one
#                 private mount namespace without the v2 cgroup tree and
#                 calls crun directly (as box-start.sh does), so no wrapper
#                 process is timed;
#       wrapper   pd_crun's wrapper alone (unshare -m, sh, umount of the v2
#                 tree, exec) running `true` instead of crun;
#       wrapped   the whole pd_crun call: wrapper + crun exec X true;
#       same      crun alone with the very command line paddock-exec gives
#                 crun (--log, --pid-file, --user, --cwd, --env..., the
#                 image's shell -c true), read from the job's spec.json.
#     Ratio = paddock median / crun median; target <= 1.5. Also printed:
#     paddock / wrapped, and the split of paddock's time.
#
# (a') The same round trip in a box of the `debian` image, whose jobs run
#     `bash -lc CMD` (a login shell reads /etc/profile): paddock's job of
#     `true` against `crun exec Y bash -lc true`, crun alone, interleaved.
#     Target <= 1.5. Needs the debian image prepared in PD_IMAGES (it is
#     never built here); skipped with a message without it, or with
#     BENCH_DEBIAN=0. Its own RESULT line, exec_debian_roundtrip_ms.
#
# (b) 1 GiB of output through `stdout`. Paddock: `echo CMD > .../cmd`, then
#     `cat .../stdout > /dev/null`, which follows the job live and ends at
#     EOF, i.e. once the job has ended; timed from before the cmd write to
#     cat's exit. Baseline: `crun exec X CMD > /dev/null` in the same box
#     (crun alone, as in (a)). CMD is `head -c 1073741824 /dev/zero` when
#     the image's head takes that count (busybox does), else
#     `dd if=/dev/zero bs=1M count=1024`. Ratio = paddock MB/s / crun MB/s;
#     target >= 0.8 (higher is better, unlike the other benchmarks). Also
#     timed, no target: `crun exec X CMD | cat > /dev/null`, the cost of a
#     pipe alone.
#     Paddock stores the stream on disk, twice (stdout and output), capped
#     by exec_log_max (64M by default): this run's daemon gets
#     exec_log_max = 2G, and the data directory needs 2.5 GiB free, or (b)
#     is skipped with a message. Each job is deleted (rmdir) after its run
#     to free the disk. The job's stdout file is checked to hold 1 GiB.
#     Busybox `head -c` copies byte by byte through stdio and is itself the
#     bottleneck (about 200 MB/s) on both sides; so that the daemon's own
#     ceiling shows too, a second block (no target) repeats the runs with
#     `dd bs=1M`, which produces GB/s, and adds: the same through a pipe
#     (`crun exec ... | cat > /dev/null`), the paddock job with no reader
#     (cmd to exit: pipe, supervisor, stored twice), and a re-read of the
#     finished job's stdout through FUSE (set BENCH_STREAM_EXTRA=0 to skip).
#     Only paddock fills memory (2 GiB of page cache per job); on a VM that
#     hands freed memory back to its hypervisor (free page reporting) that
#     is slower than on bare metal, and the order of the runs matters: see
#     README.md. The script prints how much was handed back meanwhile.
#
# Environment: BENCH_N (50) and BENCH_WARMUP (3) for (a) and (a');
# BENCH_STREAM_RUNS (3) and BENCH_STREAM_EXTRA (1) for (b); BENCH_STREAM=0
# skips (b). Needs root and a built tree (make); prints a result block and
# three RESULT lines.

set -u
export LC_ALL=C
BENCH_NAME=exec_roundtrip_ms
BENCH_TARGET=1.5
DEB_NAME=exec_debian_roundtrip_ms
STREAM_NAME=exec_stream_mbps
STREAM_TARGET=0.8
. "$(cd "$(dirname "$0")" && pwd)/common.sh"

# Three RESULT lines, so all say skipped.
skip_all() {
	echo "skipped: $*"
	echo "RESULT $BENCH_NAME=skipped ratio=nan target=$BENCH_TARGET"
	echo "RESULT $DEB_NAME=skipped ratio=nan target=$BENCH_TARGET"
	echo "RESULT $STREAM_NAME=skipped ratio=nan target=$STREAM_TARGET"
	exit 0
}

N=${BENCH_N:-50}
WARMUP=${BENCH_WARMUP:-3}
SRUNS=${BENCH_STREAM_RUNS:-3}
SEXTRA=${BENCH_STREAM_EXTRA:-1}
SIZE=1073741824
LOG_MAX=2G
NEED_FREE=$((2 * SIZE + 512 * 1024 * 1024))


fail() {
	echo "$*" >&2
	exit 1
}

# Host-side file of job $1 (the tree's own data directory).
job_file() {
	local f
	for f in "$D"/boxes/*/jobs/"$1"/"$2"; do
		[ -e "$f" ] && { echo "$f"; return 0; }
	done
	return 1
}

# Runs paddock job $1 with command $2: mkdir, cmd, then either cat of its
# stdout (live reader) or read of exit. Prints the microseconds from the
# cmd write to the end. The job is left in place.
pd_stream_job() {
	local j=$X/$1 cmd=$2 how=$3 t0 t1 code size
	mkdir "$j" || fail "mkdir $j failed"
	t0=$(now_us)
	echo "$cmd" >"$j/cmd" || fail "starting job $1 failed: $(cat "$M/boxes/$BOX/error")"
	if [ "$how" = live ]; then
		cat "$j/stdout" >/dev/null || fail "cat $j/stdout failed"
	else
		read -r code <"$j/exit"
	fi
	t1=$(now_us)
	read -r code <"$j/exit"
	[ "$code" = 0 ] || fail "job $1 ($cmd) exited $code: $(head -c 300 "$j/stderr")"
	size=$(stat -c %s "$(job_file "$1" stdout)") || fail "no stdout file for job $1"
	[ "$size" = "$SIZE" ] || fail "job $1 stored $size bytes of stdout, not $SIZE"
	echo $((t1 - t0))
}

# crun alone, inside the private namespace of the loops below.
raw_crun() {
	crun --root "$CRUN_ROOT" "$@"
}

# --- (a) the round-trip loop, run inside a private mount namespace ----------
if [ "${1:-}" = __roundtrip ]; then
	bench_in_private_ns
	mapfile -d '' SAME <"$RAW/same.args"
	sides=(paddock crun wrapper wrapped same)
	for s in "${sides[@]}" mkdir cmd exit; do
		: >"$RAW/t_$s"
	done
	for ((i = 0; i < WARMUP + N; i++)); do
		# Rotate which side goes first, so drift hits all alike.
		for ((k = 0; k < ${#sides[@]}; k++)); do
			side=${sides[$(((i + k) % ${#sides[@]}))]}
			case $side in
			paddock)
				j=$X/rt$i
				t0=$(now_us)
				mkdir "$j" || fail "mkdir $j failed"
				t1=$(now_us)
				echo true >"$j/cmd" || fail "starting job rt$i failed: $(cat "$M/boxes/$BOX/error")"
				t2=$(now_us)
				read -r code <"$j/exit"
				t3=$(now_us)
				[ "$code" = 0 ] || fail "job rt$i exited ${code:-(nothing)}"
				rmdir "$j" || fail "rmdir $j failed"
				if [ $i -ge "$WARMUP" ]; then
					echo $((t3 - t0)) >>"$RAW/t_paddock"
					echo $((t1 - t0)) >>"$RAW/t_mkdir"
					echo $((t2 - t1)) >>"$RAW/t_cmd"
					echo $((t3 - t2)) >>"$RAW/t_exit"
				fi
				continue
				;;
			crun)
				t0=$(now_us)
				raw_crun exec "$BOX" true </dev/null >/dev/null 2>"$RAW/err"
				rc=$?
				t1=$(now_us)
				;;
			wrapper)
				t0=$(now_us)
				unshare -m --propagation private sh -c \
					'umount /sys/fs/cgroup/unified 2>/dev/null; exec true' \
					</dev/null >/dev/null 2>"$RAW/err"
				rc=$?
				t1=$(now_us)
				;;
			wrapped)
				# pd_crun, word for word.
				t0=$(now_us)
				unshare -m --propagation private sh -c \
					'umount /sys/fs/cgroup/unified 2>/dev/null; r=$1; shift; exec crun --root "$r" "$@"' \
					- "$CRUN_ROOT" exec "$BOX" true </dev/null >/dev/null 2>"$RAW/err"
				rc=$?
				t1=$(now_us)
				;;
			same)
				t0=$(now_us)
				raw_crun "${SAME[@]}" </dev/null >/dev/null 2>"$RAW/err"
				rc=$?
				t1=$(now_us)
				;;
			esac
			[ $rc = 0 ] || fail "$side failed (exit $rc): $(head -c 300 "$RAW/err")"
			[ $i -ge "$WARMUP" ] && echo $((t1 - t0)) >>"$RAW/t_$side"
		done
	done
	exit 0
fi

# --- (a') the debian round trip, also in a private mount namespace ------------
if [ "${1:-}" = __debian ]; then
	bench_in_private_ns
	: >"$RAW/d_paddock"
	: >"$RAW/d_crun"
	for ((i = 0; i < WARMUP + N; i++)); do
		for ((k = 0; k < 2; k++)); do
			if [ $(((i + k) % 2)) = 0 ]; then
				j=$DX/dr$i
				t0=$(now_us)
				mkdir "$j" || fail "mkdir $j failed"
				echo true >"$j/cmd" || fail "starting job dr$i failed: $(cat "$M/boxes/$DBOX/error")"
				read -r code <"$j/exit"
				t1=$(now_us)
				[ "$code" = 0 ] || fail "job dr$i exited ${code:-(nothing)}"
				rmdir "$j" || fail "rmdir $j failed"
				side=paddock
			else
				t0=$(now_us)
				raw_crun exec "$DBOX" bash -lc true </dev/null >/dev/null 2>"$RAW/err" ||
					fail "crun exec $DBOX bash -lc true failed: $(head -c 300 "$RAW/err")"
				t1=$(now_us)
				side=crun
			fi
			[ $i -ge "$WARMUP" ] && echo $((t1 - t0)) >>"$RAW/d_$side"
		done
	done
	exit 0
fi

# --- (b) the streaming loop, also in a private mount namespace ---------------
if [ "${1:-}" = __stream ]; then
	bench_in_private_ns
	read -r -a SARGV <<<"$SCMD"
	read -r -a XARGV <<<"$XCMD"
	for s in raw pipe paddock x_raw x_pipe x_noreader x_live x_reread; do
		: >"$RAW/s_$s"
	done
	for ((r = 0; r < SRUNS; r++)); do
		# Headline: the command of the target, crun and paddock, plus crun
		# through a pipe (no target). The order rotates, but paddock never
		# goes first, right after the previous round's jobs were deleted
		# (see below), so its runs all find the same state.
		orders=("0 1 2" "2 1 0" "0 2 1" "2 0 1")
		for side in ${orders[$((r % 4))]}; do
			case $side in
			0)
				t0=$(now_us)
				raw_crun exec "$BOX" "${SARGV[@]}" </dev/null >/dev/null 2>"$RAW/err" ||
					fail "crun exec $SCMD failed: $(head -c 300 "$RAW/err")"
				t1=$(now_us)
				echo $((t1 - t0)) >>"$RAW/s_raw"
				;;
			1)
				us=$(pd_stream_job "st$r" "$SCMD" live) || exit 1
				echo "$us" >>"$RAW/s_paddock"
				rmdir "$X/st$r" || fail "rmdir $X/st$r failed"
				;;
			2)
				t0=$(now_us)
				raw_crun exec "$BOX" "${SARGV[@]}" </dev/null 2>"$RAW/err" | cat >/dev/null
				rc=${PIPESTATUS[0]}
				t1=$(now_us)
				[ "$rc" = 0 ] || fail "crun exec $SCMD | cat failed: $(head -c 300 "$RAW/err")"
				echo $((t1 - t0)) >>"$RAW/s_pipe"
				;;
			esac
		done
		[ "$SEXTRA" = 1 ] || continue
		# A producer that is not the limit. A paddock job fills 2 GiB of
		# page cache; where freed memory goes back to the hypervisor (free
		# page reporting), memory freed seconds ago is slow to fill again.
		# So that both paddock runs below find the same state, an untimed
		# job runs and is deleted first, and each timed one follows the
		# deletion of the one before by about a second.
		us=$(pd_stream_job "xw$r" "$XCMD" exit) || exit 1
		rmdir "$X/xw$r" || fail "rmdir $X/xw$r failed"
		t0=$(now_us)
		raw_crun exec "$BOX" "${XARGV[@]}" </dev/null >/dev/null 2>"$RAW/err" ||
			fail "crun exec $XCMD failed: $(head -c 300 "$RAW/err")"
		t1=$(now_us)
		echo $((t1 - t0)) >>"$RAW/s_x_raw"
		us=$(pd_stream_job "xn$r" "$XCMD" exit) || exit 1
		echo "$us" >>"$RAW/s_x_noreader"
		rmdir "$X/xn$r" || fail "rmdir $X/xn$r failed"
		t0=$(now_us)
		raw_crun exec "$BOX" "${XARGV[@]}" </dev/null 2>"$RAW/err" | cat >/dev/null
		rc=${PIPESTATUS[0]}
		t1=$(now_us)
		[ "$rc" = 0 ] || fail "crun exec $XCMD | cat failed: $(head -c 300 "$RAW/err")"
		echo $((t1 - t0)) >>"$RAW/s_x_pipe"
		us=$(pd_stream_job "xl$r" "$XCMD" live) || exit 1
		echo "$us" >>"$RAW/s_x_live"
		t0=$(now_us)
		cat "$X/xl$r/stdout" >/dev/null || fail "re-reading $X/xl$r/stdout failed"
		t1=$(now_us)
		echo $((t1 - t0)) >>"$RAW/s_x_reread"
		rmdir "$X/xl$r" || fail "rmdir $X/xl$r failed"
	done
	exit 0
fi

# --- set-up ------------------------------------------------------------------
# bench_start, with exec_log_max raised before the daemon starts.
pd_setup || bench_broken "cannot set up (building the tiny image failed?)"
trap bench_cleanup EXIT
trap 'exit 130' INT TERM
sed -i -e '/^[[:space:]]*exec_log_max[[:space:]]*=/d' \
	-e "/^\[paddock\][[:space:]]*\$/a exec_log_max = $LOG_MAX" "$PD_TMP/paddock.ini" ||
	bench_broken "cannot edit $PD_TMP/paddock.ini"
# The debian image, when prepared, beside tiny (for (a')).
DEBIAN=0
if [ "${BENCH_DEBIAN:-1}" = 1 ] && [ -n "${PD_IMAGES:-}" ] && [ -d "$PD_IMAGES/debian/rootfs" ]; then
	ln -s "$PD_IMAGES/debian" "$D/images/debian" && DEBIAN=1
fi
pd_start

RAW=$PD_TMP/raw
CRUN_ROOT=$PD_TMP/run/crun
BOX=ex
X=$M/boxes/$BOX/exec
mkdir -p "$RAW/same"

mkdir "$M/boxes/$BOX" || bench_broken "mkdir $M/boxes/$BOX failed"
echo running >"$M/boxes/$BOX/state" ||
	bench_broken "cannot start a box: $(cat "$M/boxes/$BOX/error")"

# A probe job: paddock-exec's crun command line, and the log cap in force.
mkdir "$X/probe" || bench_broken "mkdir $X/probe failed"
echo true >"$X/probe/cmd" || bench_broken "cannot start a job: $(cat "$M/boxes/$BOX/error")"
read -r code <"$X/probe/exit"
[ "$code" = 0 ] || bench_broken "the probe job (true) exited ${code:-(nothing)}"
spec=$(job_file probe spec.json) || bench_broken "no spec.json for the probe job"
log_max=$(python3 - "$spec" "$RAW/same" "$RAW/same.args" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
d = sys.argv[2]
# As sup_crun_argv() builds it, after "crun --root=ROOT".
a = ["--log=file:%s/crun.log" % d, "exec", "--pid-file=%s/pid" % d]
if s.get("user"):
    a.append("--user=" + s["user"])
if s.get("cwd"):
    a.append("--cwd=" + s["cwd"])
a += ["--env=" + e for e in s.get("env", [])]
a += ["--", s["container"]] + s["argv"]
open(sys.argv[3], "w").write("\0".join(a) + "\0")
print(s.get("log_max", 0))
PY
) || bench_broken "cannot read $spec"
rmdir "$X/probe" || bench_broken "rmdir $X/probe failed"
same_cmd=$(tr '\0' ' ' <"$RAW/same.args")

DBOX=deb
DX=$M/boxes/$DBOX/exec
export RAW M X BOX CRUN_ROOT D N WARMUP SRUNS SEXTRA SIZE DBOX DX

# --- (a) run -------------------------------------------------------------------
unshare -m --propagation private "$0" __roundtrip || bench_broken "the round-trip loop failed"

# The FUSE mkdir of a job alone, without the shell's mkdir process.
python3 - "$X" >"$RAW/t_fusemkdir" <<'PY' || bench_broken "in-process mkdir/rmdir of jobs failed"
import os, sys, time
for i in range(50):
    d = os.path.join(sys.argv[1], "mk%d" % i)
    t = time.perf_counter()
    os.mkdir(d)
    print((time.perf_counter() - t) * 1e6)
    os.rmdir(d)
PY

ms_stats() {
	bench_stats <(awk '{print $1/1000}' "$RAW/t_$1")
}
read -r p_med p_mean p_min p_p90 p_sd _ < <(ms_stats paddock)
read -r c_med c_mean c_min c_p90 c_sd _ < <(ms_stats crun)
read -r w_med w_mean w_min w_p90 w_sd _ < <(ms_stats wrapper)
read -r cw_med cw_mean cw_min cw_p90 cw_sd _ < <(ms_stats wrapped)
read -r s_med s_mean s_min s_p90 s_sd _ < <(ms_stats same)
read -r pm_med pm_mean _ < <(ms_stats mkdir)
read -r pc_med pc_mean _ < <(ms_stats cmd)
read -r pe_med pe_mean _ < <(ms_stats exit)
read -r fm_med fm_mean _ < <(ms_stats fusemkdir)
rt_ratio=$(bench_ratio "$p_med" "$c_med")

printf 'exec round trip of `true`: %d iterations (+%d warm-up), five sides interleaved; load %s\n' \
	"$N" "$WARMUP" "$(cut -d' ' -f1-3 /proc/loadavg)"
bench_build_note
printf '  %-40s %9s %9s %9s %9s %8s\n' "" median mean min p90 stdev
row() {
	printf '  %-40s %9.2f %9.2f %9.2f %9.2f %8.2f ms\n' "$@"
}
row "paddock mkdir + cmd + read exit" "$p_med" "$p_mean" "$p_min" "$p_p90" "$p_sd"
printf '  %-40s %9.2f %9.2f %9s %9s %8s ms\n' "  of which mkdir exec/JOB" "$pm_med" "$pm_mean" "" "" ""
printf '  %-40s %9.2f %9.2f %9s %9s %8s ms\n' "    (mkdir(2) alone, no mkdir process)" "$fm_med" "$fm_mean" "" "" ""
printf '  %-40s %9.2f %9.2f %9s %9s %8s ms\n' "  of which write cmd (job started)" "$pc_med" "$pc_mean" "" "" ""
printf '  %-40s %9.2f %9.2f %9s %9s %8s ms\n' "  of which read exit (job ended)" "$pe_med" "$pe_mean" "" "" ""
row "crun exec X true (crun alone)" "$c_med" "$c_mean" "$c_min" "$c_p90" "$c_sd"
row "pd_crun wrapper alone (exec true)" "$w_med" "$w_mean" "$w_min" "$w_p90" "$w_sd"
row "pd_crun exec X true (wrapper + crun)" "$cw_med" "$cw_mean" "$cw_min" "$cw_p90" "$cw_sd"
row "crun exec, paddock-exec's command line" "$s_med" "$s_mean" "$s_min" "$s_p90" "$s_sd"
printf '  ratio paddock / crun alone (medians): %s  target <= %s  met: %s  (of minimums: %s)\n' \
	"$rt_ratio" "$BENCH_TARGET" "$(bench_meets "$rt_ratio" "$BENCH_TARGET")" \
	"$(bench_ratio "$p_min" "$c_min")"
printf '  ratio paddock / pd_crun (wrapper + crun):  %s\n' "$(bench_ratio "$p_med" "$cw_med")"
printf '  paddock-exec command line: %s\n' "$same_cmd"
echo "RESULT $BENCH_NAME=$p_med ratio=$rt_ratio target=$BENCH_TARGET"
echo

# --- (a') run ------------------------------------------------------------------
if [ "$DEBIAN" = 1 ]; then
	mkdir "$M/boxes/$DBOX" || bench_broken "mkdir $M/boxes/$DBOX failed"
	echo debian >"$M/boxes/$DBOX/image" ||
		bench_broken "cannot set the debian image: $(cat "$M/boxes/$DBOX/error")"
	echo running >"$M/boxes/$DBOX/state" ||
		bench_broken "cannot start a debian box: $(cat "$M/boxes/$DBOX/error")"
	unshare -m --propagation private "$0" __debian || bench_broken "the debian loop failed"
	read -r d_med d_mean d_min d_p90 d_sd _ < <(bench_stats <(awk '{print $1/1000}' "$RAW/d_paddock"))
	read -r dc_med dc_mean dc_min dc_p90 dc_sd _ < <(bench_stats <(awk '{print $1/1000}' "$RAW/d_crun"))
	d_ratio=$(bench_ratio "$d_med" "$dc_med")
	printf 'exec round trip of `true` in the debian image (bash -lc): %d iterations (+%d warm-up), interleaved; load %s\n' \
		"$N" "$WARMUP" "$(cut -d' ' -f1-3 /proc/loadavg)"
	printf '  %-40s %9s %9s %9s %9s %8s\n' "" median mean min p90 stdev
	row "paddock mkdir + cmd + read exit" "$d_med" "$d_mean" "$d_min" "$d_p90" "$d_sd"
	row "crun exec Y bash -lc true (crun alone)" "$dc_med" "$dc_mean" "$dc_min" "$dc_p90" "$dc_sd"
	printf '  ratio paddock / crun alone (medians): %s  target <= %s  met: %s  (of minimums: %s)\n' \
		"$d_ratio" "$BENCH_TARGET" "$(bench_meets "$d_ratio" "$BENCH_TARGET")" \
		"$(bench_ratio "$d_min" "$dc_min")"
	echo "RESULT $DEB_NAME=$d_med ratio=$d_ratio target=$BENCH_TARGET"
	echo "stopped" >"$M/boxes/$DBOX/state" || true
else
	echo "exec round trip in the debian image: skipped (no debian image in PD_IMAGES, or BENCH_DEBIAN=0)"
	echo "RESULT $DEB_NAME=skipped ratio=nan target=$BENCH_TARGET"
fi
echo

# --- (b) run -------------------------------------------------------------------
meets_min() {
	python3 -c '
import sys
try:
    print("yes" if float(sys.argv[1]) >= float(sys.argv[2]) else "NO")
except ValueError:
    print("unknown")' "$1" "$2"
}

stream_skip() {
	echo "1 GiB stream: skipped: $*"
	echo "RESULT $STREAM_NAME=skipped ratio=nan target=$STREAM_TARGET"
	exit 0
}

[ "${BENCH_STREAM:-1}" = 1 ] || stream_skip "BENCH_STREAM=${BENCH_STREAM}"
[ "$log_max" -ge "$SIZE" ] 2>/dev/null ||
	bench_broken "exec_log_max is $log_max in the job's spec, not $LOG_MAX: the config edit did not take"
free=$(df -B1 --output=avail "$D" | tail -n 1 | tr -d ' ')
[ "${free:-0}" -ge "$NEED_FREE" ] ||
	stream_skip "$D has $((free / 1048576)) MiB free; paddock stores the 1 GiB stream twice (stdout, output): needs $((NEED_FREE / 1048576)) MiB"

# Does the image's head take a 1 GiB count? (busybox's does). Checked on a
# small file; the runs check the byte count.
got=$(pd_crun exec "$BOX" sh -c \
	"a=\$(head -c $SIZE /etc/passwd | wc -c) && b=\$(wc -c </etc/passwd) && [ \$a -eq \$b ] && echo ok" \
	2>/dev/null)
if [ "$got" = ok ]; then
	SCMD="head -c $SIZE /dev/zero"
else
	SCMD="dd if=/dev/zero bs=1M count=$((SIZE / 1048576))"
fi
XCMD="dd if=/dev/zero bs=1M count=$((SIZE / 1048576))"
export SCMD XCMD

PR=/sys/module/page_reporting/parameters/reported_kib
pr0=$(cat "$PR" 2>/dev/null)
unshare -m --propagation private "$0" __stream || bench_broken "the streaming loop failed"
pr1=$(cat "$PR" 2>/dev/null)

# "median mean min max" of MB/s (10^6 bytes/s) for the times in s_$1.
mbps() {
	[ -s "$RAW/s_$1" ] || { echo "nan nan nan nan"; return; }
	python3 - "$RAW/s_$1" "$SIZE" <<'PY'
import statistics, sys
size = int(sys.argv[2])
xs = sorted(size / (int(l) / 1e6) / 1e6 for l in open(sys.argv[1]) if l.strip())
print("%.1f %.1f %.1f %.1f" % (statistics.median(xs), statistics.mean(xs), xs[0], xs[-1]))
PY
}
secs() {
	[ -s "$RAW/s_$1" ] || { echo nan; return; }
	read -r med _ < <(bench_stats <(awk '{print $1/1e6}' "$RAW/s_$1"))
	echo "$med"
}
srow() {
	local label=$1 side=$2 med mean min max
	read -r med mean min max < <(mbps "$side")
	printf '  %-44s %8s %8s %8s %8s %8s\n' "$label" "$med" "$mean" "$min" "$max" "$(secs "$side")"
}
read -r sp_med _ < <(mbps paddock)
read -r sr_med _ < <(mbps raw)
st_ratio=$(bench_ratio "$sp_med" "$sr_med")

printf '1 GiB of output: `%s`, %d runs per side, order rotating; load %s\n' \
	"$SCMD" "$SRUNS" "$(cut -d' ' -f1-3 /proc/loadavg)"
bench_build_note
echo "  exec_log_max = $LOG_MAX (stream stored twice: stdout and output); MB = 10^6 bytes"
if [ -n "$pr0" ] && [ -n "$pr1" ] && [ "$pr1" -gt "$pr0" ]; then
	echo "  note: free page reporting returned $(((pr1 - pr0) / 1024)) MiB of freed memory to the hypervisor"
	echo "        during the runs; refilling it is slow, and only paddock (its stored stream) fills memory"
fi
printf '  %-44s %8s %8s %8s %8s %8s\n' "MB/s" median mean min max "med s"
srow "crun exec X CMD > /dev/null" raw
srow "crun exec X CMD | cat > /dev/null" pipe
srow "paddock cmd, then cat stdout > /dev/null" paddock
read -r sq_med _ < <(mbps pipe)
printf '  ratio paddock / crun (median MB/s): %s  target >= %s  met: %s  (paddock / crun | cat: %s)\n' \
	"$st_ratio" "$STREAM_TARGET" "$(meets_min "$st_ratio" "$STREAM_TARGET")" \
	"$(bench_ratio "$sp_med" "$sq_med")"
if [ "$SEXTRA" = 1 ]; then
	read -r xr_med _ < <(mbps x_raw)
	read -r xp_med _ < <(mbps x_pipe)
	read -r xl_med _ < <(mbps x_live)
	printf '  with `%s` (the producer is not the limit; no target):\n' "$XCMD"
	srow "crun exec X dd > /dev/null" x_raw
	srow "crun exec X dd | cat > /dev/null" x_pipe
	srow "paddock job, no reader (cmd to exit)" x_noreader
	srow "paddock cmd, then cat stdout > /dev/null" x_live
	srow "re-read of the ended job's stdout (FUSE)" x_reread
	printf '    ratios paddock live / crun > /dev/null: %s, / crun | cat: %s\n' \
		"$(bench_ratio "$xl_med" "$xr_med")" "$(bench_ratio "$xl_med" "$xp_med")"
fi
echo "RESULT $STREAM_NAME=$sp_med ratio=$st_ratio target=$STREAM_TARGET"
exit 0
