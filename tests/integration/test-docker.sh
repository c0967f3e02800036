#!/bin/bash
# Docker in a box (docs/docker.md), with the docker image and no registry:
# an image imported from a busybox root filesystem; docker run, a two-step
# docker build, a container killed at its memory limit while the box
# lives, a published port reached from inside the box; Docker's store on
# the box's disk (counted in usage, within the disk limit, left out of
# snapshots and exports); stop -> resume keeps the box's files, Docker's
# images and a working Docker; a fork starts with an empty store and says
# so; dockerd restarted when it dies, adopted across daemon restarts (also
# after kill -9); docker off gives the default box's privileges back.
. "$(dirname "$0")/lib.sh"
require_root
command -v busybox >/dev/null || skip_all "needs busybox (the nested containers' root filesystem)"

pd_use_image docker
PD_IMAGE=docker
pd_setup
pd_docker_type
cat >>"$PD_TMP/paddock.ini" <<INI
[types.dsmall]
cpus = 2
memory = 2G
pids = 4096
disk = 600M
INI
pd_start

B=$M/boxes/d1
quiet() {
	pd_job "$@" >/dev/null 2>&1
}
# events_has BOX TEXT: the box's events so far hold TEXT.
events_has() {
	snap "$M/boxes/$1/events" | grep -qF -- "$2" || {
		diag "no [$2] in the events of $1:"
		snap "$M/boxes/$1/events" | tail -n 5 | sed 's/^/# /'
		return 1
	}
}
# The host PID of the box's dockerd: a process named dockerd whose root is
# the box's (its /proc/PID/root is the box's root filesystem).
host_dockerd() {
	local p
	for p in $(pgrep -x dockerd); do
		[ "$(stat -L -c %d:%i "/proc/$p/root" 2>/dev/null)" = "$(stat -L -c %d:%i "$B/root")" ] && { echo "$p"; return 0; }
	done
	return 1
}

# restarts BOX: how many "docker restarted" events the box has had.
restarts() {
	snap "$M/boxes/$1/events" | grep -c "docker restarted"
}
export -f events_has host_dockerd quiet pd_job pd_docker_ready restarts
export B

# --- the setting and the tier -------------------------------------------------

mkdir "$B" && echo docker >"$B/image" && echo dock >"$B/type"
ok "docker reads on for a box of the docker image" same "$(cat "$B/docker")" on
pd_owner
ok "and over HTTP" same "$(hc boxes/d1/docker)" on
ok "info says docker: true" bash -c "grep -q '\"docker\":true' '$B/info'"
ok "the box starts" bash -c "echo running >'$B/state'"
ok "its Docker answers the box's user (no sudo), within 60 s" pd_docker_ready d1
ok "box root has every capability of its user namespace" \
	same "$(pd_job d1 "sudo grep CapEff /proc/self/status | cut -f2")" 000001ffffffffff
ok "and a seccomp filter (Docker's profile for every capability)" \
	same "$(pd_job d1 "grep ^Seccomp: /proc/1/status | cut -f2")" 2
ok "its own cgroup is box root's, and the only one it sees" \
	pd_job d1 'test "$(cat /proc/self/cgroup | cut -d: -f3 | sort -u)" = / && sudo test -w /sys/fs/cgroup/memory/cgroup.procs'
ok "/var/lib/docker is a mount of its own (Docker's store)" \
	pd_job d1 'mountpoint -q /var/lib/docker 2>/dev/null || grep -q " /var/lib/docker " /proc/self/mountinfo'
ok "writing docker while it runs: EBUSY, with the reason" \
	bash -c "! echo off >'$B/docker' 2>/dev/null && grep -q 'while the box is stopped' '$B/error' && test \"\$(cat '$B/docker')\" = on"

# --- containers -----------------------------------------------------------------

pd_busybox_tar "$B/root/tmp/bb.tar"
ok "docker import of a busybox root filesystem" pd_job d1 'docker import /tmp/bb.tar bb:1 >/dev/null'
ok "docker run --rm bb:1 echo hi" same "$(pd_job d1 'docker run --rm bb:1 echo hi')" hi
ok "a two-step docker build FROM it" same "$(pd_job d1 'mkdir -p /tmp/b && cd /tmp/b &&
	printf "FROM bb:1\nRUN echo built >/built\nRUN echo twice >>/built\nCMD [\"cat\", \"/built\"]\n" >Dockerfile &&
	docker build -q -t bb:2 . >/dev/null && docker run --rm bb:2 | tr "\n" " "')" "built twice "
ok "a container over its memory limit (-m 32m) is killed (137)" \
	same "$(pd_job d1 'docker run --rm -m 32m bb:1 awk "BEGIN { s = \"0123456789abcdef\"; while (1) s = s s }" >/dev/null 2>&1; echo $?')" 137
ok "its cgroup was under the box's (nested limits)" \
	pd_job d1 'docker run -d --name lim -m 48m bb:1 sleep 60 >/dev/null && id=$(docker inspect -f "{{.Id}}" lim) &&
		test "$(cat /sys/fs/cgroup/memory/docker/$id/memory.limit_in_bytes)" = $((48 << 20)) && docker rm -f lim >/dev/null'
ok "the box lives on (running, jobs run)" bash -c "test \"\$(cat '$B/state')\" = running && pd_job d1 true"
ok "docker run -p 8080:80: the published port answers inside the box" \
	pd_job d1 'docker run -d --name web -p 8080:80 bb:1 sh -c "echo served >/www; httpd -f -p 80 -h /" >/dev/null &&
		for i in $(seq 50); do out=$(curl -sf http://127.0.0.1:8080/www) && break; sleep 0.2; done;
		docker rm -f web >/dev/null; test "$out" = served'
ok "docker-compose runs a one-service stack" same "$(pd_job d1 'mkdir -p /tmp/c && cd /tmp/c &&
	printf "services:\n  hello:\n    image: bb:1\n    command: echo composed\n" >docker-compose.yml &&
	docker-compose up 2>/dev/null | grep -o composed | head -1; docker-compose down >/dev/null 2>&1')" composed

# --- the store: usage, the disk limit, snapshots --------------------------------

disk_bytes() {
	sed -n 's/^disk_bytes //p' "$M/boxes/$1/usage"
}
before=$(disk_bytes d1)
ok "a container's 200 MB layer" pd_job d1 'docker run --name big bb:1 dd if=/dev/zero of=/big bs=1M count=200 2>/dev/null'
after=$(disk_bytes d1)
ok "is counted in usage's disk_bytes" test $((after - before)) -ge $((190 << 20))
diag "disk_bytes $before -> $after"
ok "Docker's store is not in root/" bash -c "test -z \"\$(ls -A '$B/root/var/lib/docker' 2>/dev/null)\""
ok "a snapshot of the running box" bash -c "echo with-docker >'$B/snapshot'"
S=$(readlink -f "$B/snapshots/$(ls "$B/snapshots" | tail -1)")
ok "holds no file of Docker's store" bash -c "test -z \"\$(ls -A '$S/root/var/lib/docker' 2>/dev/null)\""
ok "nor does its export" bash -c "! cat '$S/export' | zstd -dc | tar -t 2>/dev/null | grep -q '^./var/lib/docker/.'"

# The disk limit holds for Docker's store: a box of a 600M disk.
mkdir "$M/boxes/small" && echo docker >"$M/boxes/small/image" && echo dsmall >"$M/boxes/small/type"
echo running >"$M/boxes/small/state"
ok "a box with a 600M disk" pd_docker_ready small
pd_busybox_tar "$M/boxes/small/root/tmp/bb.tar"
quiet small 'docker import /tmp/bb.tar bb:1'
ok "a container writing 900 MB fails with ENOSPC" \
	pd_job small 'docker run --rm bb:1 dd if=/dev/zero of=/fill bs=1M count=900 2>&1 | grep -q "No space left"'
ok "the box's disk is full, no more (statfs of its image)" \
	bash -c "test \"\$(sed -n 's/^disk_bytes //p' '$M/boxes/small/usage')\" -le $((650 << 20))"
echo stopped >"$M/boxes/small/state"
rmdir "$M/boxes/small"

# --- stop -> resume ---------------------------------------------------------------

pd_job d1 'echo kept >/config/mine.txt' >/dev/null
ok "stop" bash -c "echo stopped >'$B/state'"
ok "the stop's snapshot was taken (its changes copied out)" events_has d1 "snapshot d1-"
ok "resume" bash -c "echo running >'$B/state'"
ok "Docker answers again" pd_docker_ready d1
ok "the box's files are kept" same "$(pd_job d1 'cat /config/mine.txt')" kept
ok "Docker's images are kept" same "$(pd_job d1 'docker images --format "{{.Repository}}:{{.Tag}}" | sort | tr "\n" " "')" "bb:1 bb:2 "
ok "and its stopped containers" same "$(pd_job d1 'docker ps -a --format "{{.Names}}"')" big
ok "docker run works after the resume" same "$(pd_job d1 'docker run --rm bb:2')" "$(printf 'built\ntwice')"

# --- dockerd dies: restarted ------------------------------------------------------

p=$(host_dockerd)
ok "dockerd runs in the box (host PID $p)" test -n "$p"
n=$(restarts d1)
kill -KILL "$p" 2>/dev/null
ok "killed, it is restarted (event)" wait_for 20 bash -c "test \$(restarts d1) -gt $n"
ok "the event says why" events_has d1 "docker restarted (1): dockerd was killed by signal 9"
ok "a new dockerd" wait_for 20 bash -c "p2=\$(host_dockerd) && test -n \"\$p2\" && test \"\$p2\" != $p"
ok "and Docker answers again" pd_docker_ready d1
ok "with its images" pd_job d1 'docker image inspect bb:1 >/dev/null'

# --- daemon restarts: dockerd adopted ---------------------------------------------

p=$(host_dockerd)
pd_stop
pd_start
ok "after a daemon restart the same dockerd runs (adopted)" same "$(host_dockerd)" "$p"
ok "Docker answers" pd_docker_ready d1
pd_kill9
pd_start
ok "after kill -9 of the daemon, too" same "$(host_dockerd)" "$p"
n=$(restarts d1)
kill -KILL "$p" 2>/dev/null
ok "and the new daemon restarts it when it dies" wait_for 20 bash -c "test \$(restarts d1) -gt $n"
ok "Docker answers" pd_docker_ready d1

# --- fork ---------------------------------------------------------------------------

ok "fork d1 into f1" bash -c "echo f1 >'$B/fork'"
ok "the fork says its Docker store starts empty" events_has f1 "starts with an empty Docker store"
ok "its docker setting is its source's" same "$(cat "$M/boxes/f1/docker")" on
echo dock >"$M/boxes/f1/type"
ok "the fork starts" bash -c "echo running >'$M/boxes/f1/state'"
ok "its Docker answers" pd_docker_ready f1
ok "with no image" same "$(pd_job f1 'docker images -q | wc -l')" 0
ok "but the source's files" same "$(pd_job f1 'cat /config/mine.txt')" kept
pd_busybox_tar "$M/boxes/f1/root/tmp/bb.tar"
ok "and a working Docker" same "$(pd_job f1 'docker import /tmp/bb.tar bb:1 >/dev/null && docker run --rm bb:1 echo forked')" forked
ok "the source still has its images" pd_job d1 'docker image inspect bb:2 >/dev/null'
echo stopped >"$M/boxes/f1/state"

# --- docker off: the default tier --------------------------------------------------

echo stopped >"$B/state"
ok "docker off on the stopped box" bash -c "echo off >'$B/docker' && test \"\$(cat '$B/docker')\" = off"
ok "info says docker: false" bash -c "grep -q '\"docker\":false' '$B/info'"
echo running >"$B/state"
ok "started without Docker: no dockerd" bash -c "sleep 2; ! host_dockerd >/dev/null"
ok "and the default box's capabilities" \
	same "$(pd_job d1 "sudo grep CapEff /proc/self/status | cut -f2")" 00000000a80425fb
ok "and its seccomp filter" same "$(pd_job d1 "grep ^Seccomp: /proc/1/status | cut -f2")" 2
echo stopped >"$B/state"
ok "docker on again" bash -c "echo on >'$B/docker'"
echo running >"$B/state"
ok "Docker is back, with its images" bash -c "pd_docker_ready d1 && pd_job d1 'docker image inspect bb:1 >/dev/null'"

# --- restore: the store starts empty --------------------------------------------------

first=$(ls "$B/snapshots" | head -1)
ok "restore an earlier snapshot" bash -c "echo $first >'$B/restore'"
ok "the restore says Docker's store starts empty" events_has d1 "a restore resets it"
ok "Docker answers after the restore" pd_docker_ready d1
ok "with no image" same "$(pd_job d1 'docker images -q | wc -l')" 0

pd_done
