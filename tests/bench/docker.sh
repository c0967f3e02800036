#!/bin/bash
# docker.sh - what Docker inside a box costs: a container run, a box start,
# a stop+start cycle. Boxes of the docker image and type dock (2 cpus, 2G,
# 4096 pids, a 4G disk: lib.sh's pd_docker_type), one daemon, one run.
#
# (a) docker_run_ms: `docker run --rm bb:1 true` in a box with Docker (bb:1
#     a root filesystem of the host's static busybox, `docker import`ed: no
#     registry), timed in the box by a bash loop (EPOCHREALTIME, no fork
#     for the clock) so the exec job around it is not counted. For scale,
#     the same with `--network none` (no bridge, veth or iptables work).
#     Baseline: `crun run` on the host of a bundle whose rootfs is the same
#     busybox tree and whose config.json is `crun spec`'s with
#     terminal false, args `true` and a cgroup of the benchmark's own;
#     timed by hyperfine -N when installed, else by the same kind of loop;
#     in a private mount namespace without the v2 tree on a hybrid host
#     (as box-start.sh). Ratio: docker median / crun median.
# (b) docker_start_ms: a stopped box with Docker on, from the write of
#     running to state until `docker info` answers in it (one exec job
#     that polls it every 20 ms); against a box of the same image and
#     type with Docker off, until a job `true` answers; and the write
#     alone (the start) of both. The two boxes interleave, alternating
#     which goes first; each stop is timed apart (for (c): the stop of a
#     Docker box whose store holds no image, only what dockerd makes at
#     its first start). Ratios: on
#     until docker info / off until true; on until docker info / on start
#     alone; on start alone / off start alone (what the Docker tier adds to
#     the start itself). The Docker-on waits are also printed in the order
#     taken (a wait that grows from one start to the next shows there),
#     and the first start of that box (a new store) apart.
# (c) docker_cycle_ms: a stop+start cycle (`echo stopped > state`, then
#     `echo running > state`) of the Docker box of (a), whose store holds
#     bb:1: its stop copies the box's changes into the snapshot instead of
#     moving its disk image, and ends dockerd; against the Docker-off box
#     of (b). Before each cycle 4 KiB are written into each box's root
#     (untimed), so both stops have changes to freeze. Also until it
#     answers again (docker: `docker info`, then bb:1 must still be there;
#     off: a job `true`). Ratio: cycle of the Docker box / cycle of the
#     other.
#
# RESULT docker_run_ms, docker_start_ms, docker_cycle_ms, each with its
# ratio; target=nan: no target, the numbers say what Docker costs. Never
# fails because the machine is slow: only a box that does not start, a
# Docker that does not answer within BENCH_READY_S, or crun refusing the
# bundle stop it (exit 1).
#
# Environment: BENCH_N (runs of (a), 10), BENCH_WARMUP (2 for (a), 1 cycle
# for (b) and (c)), BENCH_STARTS (cycles of (b) and (c), 8), BENCH_READY_S
# (how long Docker may take to answer, 600). Needs root, crun, busybox,
# the docker image (built into the image cache when missing).

set -u
export LC_ALL=C
BENCH_NAME=docker_run_ms
BENCH_TARGET=nan
. "$(cd "$(dirname "$0")" && pwd)/common.sh"

N=${BENCH_N:-10}
WARMUP=${BENCH_WARMUP:-2}
STARTS=${BENCH_STARTS:-8}
READY=${BENCH_READY_S:-600}

# --- (a)'s host side, run inside a private mount namespace ------------------
if [ "${1:-}" = __host ]; then
	bench_in_private_ns
	if command -v hyperfine >/dev/null; then
		hyperfine -N --style none --warmup "$WARMUP" --runs "$N" \
			--export-json "$RAW/hyperfine.json" \
			"crun --root $RAW/crunroot run --bundle $RAW/bundle bbraw" >"$RAW/hyperfine.out" 2>&1 ||
			{ cat "$RAW/hyperfine.out" >&2; exit 1; }
		python3 -c '
import json, sys
for t in json.load(open(sys.argv[1]))["results"][0]["times"]:
    print("%.3f" % (t * 1000))' "$RAW/hyperfine.json" >"$RAW/t_crun"
		exit 0
	fi
	: >"$RAW/t_crun"
	for ((i = 0; i < WARMUP + N; i++)); do
		t0=$(now_us)
		crun --root "$RAW/crunroot" run --bundle "$RAW/bundle" bbraw \
			</dev/null >/dev/null 2>"$RAW/crun.err" ||
			{ echo "crun run failed: $(cat "$RAW/crun.err")" >&2; exit 1; }
		t1=$(now_us)
		[ $i -ge "$WARMUP" ] && echo "$(((t1 - t0) / 1000)).$(printf '%03d' $(((t1 - t0) % 1000)))" >>"$RAW/t_crun"
	done
	exit 0
fi

# --- set-up ------------------------------------------------------------------
require_root
command -v crun >/dev/null || skip_all "needs crun"
command -v busybox >/dev/null || skip_all "needs busybox (busybox-static)"
pd_use_image docker >/dev/null
pd_setup || bench_broken "cannot set up"
trap bench_cleanup EXIT
trap 'exit 130' INT TERM
pd_docker_type
pd_start

RAW=$PD_TMP/raw
BENCH_CG=paddock-bench-$$
mkdir -p "$RAW/crunroot" "$RAW/bundle/rootfs"
raw_cleanup() {
	unshare -m --propagation private sh -c 'umount /sys/fs/cgroup/unified 2>/dev/null; exec "$@"' - \
		crun --root "$RAW/crunroot" delete -f bbraw >/dev/null 2>&1
	bench_rm_cgroup "$BENCH_CG"
}
bench_on_exit raw_cleanup

# ms_of FILE: the microseconds in FILE as milliseconds.
ms_of() {
	awk '{ printf "%.3f\n", $1 / 1000 }' "$1"
}
# job BOX CMD: runs CMD in the box as the next job, waits for it, prints
# its stdout; non-zero (its output on stderr) when it fails. CMD bounds
# its own time where it could hang (timeout in the box).
job() {
	local last e
	echo "$2" >"$M/boxes/$1/exec/new" || return 1
	last=$(readlink "$M/boxes/$1/exec/last") || return 1
	read -r e <"$M/boxes/$1/exec/$last/exit"
	if [ "$e" != 0 ]; then
		echo "job '$2' in $1 exited $e:" >&2
		tail -n 20 "$M/boxes/$1/exec/$last/output" >&2
		return 1
	fi
	cat "$M/boxes/$1/exec/$last/stdout"
}
# What "answers" means: Docker's daemon (polled every 20 ms, as the box's
# user), or any job.
DOCKER_UP="timeout $READY bash -c 'until docker info >/dev/null 2>&1; do sleep 0.02; done'"
new_box() { # new_box NAME on|off
	mkdir "$M/boxes/$1" && echo docker >"$M/boxes/$1/image" && echo dock >"$M/boxes/$1/type" &&
		echo "$2" >"$M/boxes/$1/docker" || bench_broken "cannot make box $1: $(cat "$M/boxes/$1/error" 2>/dev/null)"
}
start() {
	echo running >"$M/boxes/$1/state" || bench_broken "$1 does not start: $(cat "$M/boxes/$1/error")"
}
stop() {
	echo stopped >"$M/boxes/$1/state" || bench_broken "$1 does not stop: $(cat "$M/boxes/$1/error")"
}
# Every stop takes a snapshot: delete those no box stands on.
prune() {
	local s
	for s in $(ls "$M/snapshots"); do rmdir "$M/snapshots/$s" 2>/dev/null; done
}

pd_busybox_tar "$PD_TMP/bb.tar" || bench_broken "cannot make the busybox root filesystem"
tar -C "$RAW/bundle/rootfs" -xf "$PD_TMP/bb.tar" || bench_broken "cannot unpack it"
(cd "$RAW/bundle" && crun spec) || bench_broken "crun spec failed"
python3 - "$RAW/bundle/config.json" "/$BENCH_CG/bb" <<'PY' || bench_broken "cannot edit config.json"
import json, sys
c = json.load(open(sys.argv[1]))
c["process"]["terminal"] = False
c["process"]["args"] = ["true"]
c["linux"]["cgroupsPath"] = sys.argv[2]
json.dump(c, open(sys.argv[1], "w"), indent=1)
PY

# The Docker box of (a) and (c), bb:1 imported into its store.
new_box dk on
start dk
job dk "$DOCKER_UP" >/dev/null || bench_broken "Docker does not answer in dk within $READY s"
cp "$PD_TMP/bb.tar" "$M/boxes/dk/root/tmp/bb.tar" || bench_broken "cannot copy bb.tar into dk"
job dk 'docker import /tmp/bb.tar bb:1 >/dev/null && rm /tmp/bb.tar' >/dev/null ||
	bench_broken "docker import failed"

# --- (a) docker run in the box, crun run on the host ---------------------------------
# runs_in_box ARGS: WARMUP + N runs of `docker run --rm ARGS bb:1 true`,
# the last N's microseconds into the file named after them.
runs_in_box() {
	job dk "for i in \$(seq $((WARMUP + N))); do
		t0=\${EPOCHREALTIME/./}
		timeout $READY docker run --rm $1 bb:1 true || { echo \"docker run failed\" >&2; exit 1; }
		t1=\${EPOCHREALTIME/./}
		[ \$i -gt $WARMUP ] && echo \$((10#\$t1 - 10#\$t0))
	done" >"$2" || bench_broken "docker run in the box failed"
}
runs_in_box "" "$PD_TMP/t_run"
runs_in_box "--network none" "$PD_TMP/t_run_nonet"
export RAW N WARMUP
unshare -m --propagation private "$0" __host || bench_broken "crun run of the busybox bundle failed"
hyper=no
command -v hyperfine >/dev/null && hyper=yes
stop dk

# --- (b) starts: Docker on until docker info, Docker off until true ------------------
new_box on1 on
new_box off1 off
for ((i = 0; i < 1 + STARTS; i++)); do
	for side in on off; do
		if [ $((i % 2)) = 1 ]; then
			[ $side = on ] && side=off || side=on
		fi
		t0=$(now_us)
		start "${side}1"
		t1=$(now_us)
		if [ $side = on ]; then
			job on1 "$DOCKER_UP" >/dev/null || bench_broken "Docker does not answer in on1 within $READY s"
		else
			job off1 true >/dev/null || bench_broken "a job does not answer in off1"
		fi
		t2=$(now_us)
		stop "${side}1"
		t3=$(now_us)
		if [ $i -ge 1 ]; then
			echo $((t1 - t0)) >>"$PD_TMP/t_start_$side"
			echo $((t2 - t0)) >>"$PD_TMP/t_ready_$side"
			echo $((t3 - t2)) >>"$PD_TMP/t_stop_$side"
		else
			echo $((t2 - t0)) >>"$PD_TMP/t_first_$side"
		fi
		prune
	done
done
rmdir "$M/boxes/on1" || bench_broken "rmdir on1 failed"

# --- (c) stop+start cycles: the Docker box with bb:1, the Docker-off box ---------------
start dk
start off1
job dk "$DOCKER_UP" >/dev/null || bench_broken "Docker does not answer in dk within $READY s"
for ((i = 0; i < 1 + STARTS; i++)); do
	for side in dk off1; do
		if [ $((i % 2)) = 1 ]; then
			[ $side = dk ] && side=off1 || side=dk
		fi
		head -c 4096 /dev/urandom >"$M/boxes/$side/root/tmp/f$i" || bench_broken "cannot write into $side"
		sync -f "$M/boxes/$side/root/tmp/f$i"
		t0=$(now_us)
		stop $side
		t1=$(now_us)
		start $side
		t2=$(now_us)
		if [ $side = dk ]; then
			job dk "$DOCKER_UP && docker image inspect bb:1 >/dev/null" >/dev/null ||
				bench_broken "after a stop+start, Docker does not answer in dk or bb:1 is gone"
		else
			job off1 true >/dev/null || bench_broken "a job does not answer in off1"
		fi
		t3=$(now_us)
		if [ $i -ge 1 ]; then
			echo $((t1 - t0)) >>"$PD_TMP/t_cstop_$side"
			echo $((t2 - t1)) >>"$PD_TMP/t_cstart_$side"
			echo $((t2 - t0)) >>"$PD_TMP/t_cycle_$side"
			echo $((t3 - t0)) >>"$PD_TMP/t_cready_$side"
		fi
		prune
	done
done
stop dk
stop off1

# --- report --------------------------------------------------------------------------
# row LABEL FILE [ms]: a table row of the stats of FILE (µs, or ms with ms);
# sets MED to its median.
row() {
	local f=$2
	[ "${3:-}" = ms ] || { ms_of "$2" >"$2.ms"; f=$2.ms; }
	read -r MED mean min p90 sd n < <(bench_stats "$f")
	printf '  %-46s %9.1f %9.1f %9.1f %9.1f %8.1f  %s\n' "$1" "$MED" "$mean" "$min" "$p90" "$sd" "$n"
}
# in_order FILE: its samples (µs) as ms in the order taken: a trend from
# one cycle to the next (a wait that grows) shows there, not in a median.
in_order() {
	printf '    %s\n' "in the order taken: $(awk '{ printf "%s%.0f", (NR > 1 ? " " : ""), $1 / 1000 }' "$1") ms"
}
printf 'Docker in a box: (a) %d runs (+%d warm-up); (b), (c) %d cycles (+1) per side, interleaved; load %s\n' \
	"$N" "$WARMUP" "$STARTS" "$(cut -d' ' -f1-3 /proc/loadavg)"
bench_build_note
printf '  %-46s %9s %9s %9s %9s %8s  %s\n' "ms" median mean min p90 stdev n
echo "(a) a container that runs true"
row "docker run --rm bb:1 true (in the box)" "$PD_TMP/t_run"
run=$MED
row "  the same, --network none" "$PD_TMP/t_run_nonet"
nonet=$MED
row "crun run, busybox bundle (host$([ $hyper = yes ] && echo ", hyperfine"))" "$RAW/t_crun" ms
crun=$MED
echo "(b) a box start"
row "Docker on: write running (start alone)" "$PD_TMP/t_start_on"
s_on=$MED
row "Docker on: until docker info answers" "$PD_TMP/t_ready_on"
r_on=$MED
in_order "$PD_TMP/t_ready_on"
row "  its first start (the warm-up: a new store)" "$PD_TMP/t_first_on"
row "Docker off: write running (start alone)" "$PD_TMP/t_start_off"
s_off=$MED
row "Docker off: until a job true answers" "$PD_TMP/t_ready_off"
r_off=$MED
row "  then its stop, Docker on (no image stored)" "$PD_TMP/t_stop_on"
row "  then its stop, Docker off" "$PD_TMP/t_stop_off"
echo "(c) a stop+start cycle (4 KiB changed before each)"
row "Docker box with bb:1: stop" "$PD_TMP/t_cstop_dk"
row "Docker box with bb:1: start" "$PD_TMP/t_cstart_dk"
row "Docker box with bb:1: stop+start" "$PD_TMP/t_cycle_dk"
c_dk=$MED
row "Docker box with bb:1: until Docker answers" "$PD_TMP/t_cready_dk"
cr_dk=$MED
in_order "$PD_TMP/t_cready_dk"
row "Docker off: stop" "$PD_TMP/t_cstop_off1"
row "Docker off: start" "$PD_TMP/t_cstart_off1"
row "Docker off: stop+start" "$PD_TMP/t_cycle_off1"
c_off=$MED
row "Docker off: until a job true answers" "$PD_TMP/t_cready_off1"
cr_off=$MED

run_ratio=$(bench_ratio "$run" "$crun")
start_ratio=$(bench_ratio "$r_on" "$r_off")
cycle_ratio=$(bench_ratio "$c_dk" "$c_off")
echo "ratios (medians)"
printf '  (a) docker run in the box / crun run on the host:         %s  (--network none: %s)\n' \
	"$run_ratio" "$(bench_ratio "$nonet" "$crun")"
printf '  (b) Docker on until docker info / Docker off until true:  %s\n' "$start_ratio"
printf '      Docker on until docker info / its start alone:        %s\n' "$(bench_ratio "$r_on" "$s_on")"
printf '      start alone, Docker on / Docker off:                  %s\n' "$(bench_ratio "$s_on" "$s_off")"
printf '  (c) stop+start, Docker box with bb:1 / Docker off:        %s  (until answering: %s)\n' \
	"$cycle_ratio" "$(bench_ratio "$cr_dk" "$cr_off")"
echo "RESULT docker_run_ms=$run ratio=$run_ratio target=nan"
echo "RESULT docker_start_ms=$r_on ratio=$start_ratio target=nan"
echo "RESULT docker_cycle_ms=$c_dk ratio=$cycle_ratio target=nan"
exit 0
