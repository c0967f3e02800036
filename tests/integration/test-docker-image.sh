#!/bin/bash
# The docker image: Debian 12's Docker on the debian image. In a real box,
# as the box user and as root, the Docker tools run (docker, dockerd,
# containerd, runc, docker-compose) and the box user is in group docker;
# the image says it has Docker (its docker file: on) and keeps nothing of
# its build: no Docker state, nothing in /run, no apt lists, caches or
# logs, no apparmor, cgroupfs-mount or needrestart. Whether dockerd runs in
# a box is the engine's business, not this test's.
# The image is built once into the cache the debian image lives in (on
# that image); the test skips only when no Debian mirror answers.
. "$(dirname "$0")/lib.sh"
require_root

pd_use_image docker
pd_start

IMG=$PD_IMAGES/docker
R=$IMG/rootfs

B=$M/boxes/dk
mkdir "$B"
ok "a box of the docker image" bash -c "echo docker >'$B/image' && test \"\$(cat '$B/image')\" = docker"

# pd_job_as USER BOX CMD: pd_job as USER (a named job with its user file).
pd_job_as() {
	local j=j$RANDOM$RANDOM
	mkdir "$M/boxes/$2/exec/$j" && echo "$1" >"$M/boxes/$2/exec/$j/user" &&
		echo "$3" >"$M/boxes/$2/exec/$j/cmd" || return 1
	same "$(timeout 60 cat "$M/boxes/$2/exec/$j/exit")" 0 || {
		sed 's/^/# /' "$M/boxes/$2/exec/$j/output"
		return 1
	}
	cat "$M/boxes/$2/exec/$j/stdout"
}

# Each tool's --version, its first line as a diagnostic. dockerd, runc and
# iptables are in /usr/sbin, which Debian's profile leaves out of a user's
# PATH: the box user names it (the daemon runs dockerd as root anyway).
tools='PATH=$PATH:/usr/sbin:/sbin; for t in docker dockerd containerd runc docker-compose; do
v=$($t --version 2>&1) || { echo "$t --version failed: $v"; exit 1; }; echo "$t: $(echo "$v" | head -n 1)"; done'
versions() {
	local out r=0
	out=$(pd_job_as "$1" dk "$tools") || r=1
	echo "$out" | sed "s/^/# $1: /"
	return $r
}
ok "docker, dockerd, containerd, runc and docker-compose run as the box user" versions box
ok "and as root" versions root
ok "the box user is box (uid 1000, home /config)" same "$(pd_job dk 'echo "$(id -u):$HOME"')" 1000:/config
in_docker_group() {
	local g
	g=$(pd_job dk 'id -nG box') || return 1
	case " $g " in
	*" docker "*) ;;
	*) diag "id -nG box: $g"; return 1 ;;
	esac
}
ok "id box lists group docker" in_docker_group
ok "iptables, xz, unpigz and docker-init are there (dockerd's helpers)" \
	pd_job_as root dk 'for p in iptables xz unpigz docker-init; do command -v $p >/dev/null || { echo missing $p; exit 1; }; done'

rmdir "$B"

# The image itself.
ok "the image's docker file says on" same "$(cat "$IMG/docker")" on
ok "the image's docker file is one line" same "$(od -An -c "$IMG/docker" | tr -s ' ')" " o n \\n"
ok "the description names Docker" \
	same "$(cat "$IMG/description")" "Debian 12 (bookworm) with build tools, Node.js, Python, Docker (docker.io, containerd, runc, docker-compose)"
ok "the image's user, home and shell are box, /config, /bin/bash" \
	same "$(cat "$IMG/user" "$IMG/home" "$IMG/shell" | tr '\n' ' ')" "box /config /bin/bash "
ok "the debian image has no docker file" test ! -e "$PD_IMAGES/debian/docker"
# empty_or_absent DIR: nothing in DIR, or no DIR.
empty_or_absent() {
	[ ! -e "$1" ] || [ -z "$(ls -A "$1")" ] || { diag "$1: $(ls -A "$1" | head -n 5 | tr '\n' ' ')"; return 1; }
}
ok "/var/lib/docker in the image is empty or absent" empty_or_absent "$R/var/lib/docker"
ok "/var/lib/containerd in the image is empty or absent" empty_or_absent "$R/var/lib/containerd"
ok "/run holds only its lock directory, empty" \
	same "$(cd "$R/run" && find . -mindepth 1 | sort | tr '\n' ' ')" "./lock "
ok "no apt lists, no apt cache, no apt or dpkg logs" bash -c "
	! find '$R/var/lib/apt/lists' '$R/var/cache/apt' '$R/var/log/apt' -mindepth 1 ! -name lock ! -name partial | grep -q . &&
	! find '$R/var/lib/apt/lists' '$R/var/cache/apt' -mindepth 2 | grep -q . &&
	test ! -e '$R/var/log/dpkg.log' && test ! -e '$R/var/log/alternatives.log'"
ok "no policy-rc.d left from the build" test ! -e "$R/usr/sbin/policy-rc.d"
ok "nothing left in /tmp and /var/tmp" same "$(find "$R/tmp" "$R/var/tmp" -mindepth 1)" ""
ok "nothing but .bashrc and .profile in /root" same "$(ls -A "$R/root" | tr '\n' ' ')" ".bashrc .profile "
installed() {
	[ "$(dpkg-query --admindir="$R/var/lib/dpkg" -W -f='${Status}' "$1" 2>/dev/null)" = "install ok installed" ]
}
check_packages() {
	local p r=0
	for p in docker.io containerd runc docker-compose iptables tini xz-utils pigz; do
		installed "$p" || { diag "$p is not installed"; r=1; }
	done
	for p in apparmor cgroupfs-mount needrestart; do
		! installed "$p" || { diag "$p is installed"; r=1; }
	done
	return $r
}
ok "docker.io, containerd, runc, docker-compose, iptables are installed; apparmor, cgroupfs-mount, needrestart are not" \
	check_packages
ok "group docker is a system group of the image" \
	bash -c "awk -F: '\$1 == \"docker\" && \$3 < 1000 {f = 1} END {exit !f}' '$R/etc/group'"

pd_done
