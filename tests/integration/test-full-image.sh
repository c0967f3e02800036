#!/bin/bash
# The full image (what a box has by default on a server install) in a real
# box: the desktop's programs (Xvnc, XFCE, xdotool, Firefox ESR), Node.js
# 22, each coding agent its agents.ini lists running as the box user, the
# Docker tools, and the image's docker file: on. It is one build of the
# three images' steps, so this checks that each part is there; the parts'
# own tests (test-desktop-image.sh, test-agents-image.sh,
# test-docker-image.sh) check them in depth.
# The image is built once into the cache the debian image lives in (on
# that image); the test skips only when no Debian mirror or no npm registry
# answers.
. "$(dirname "$0")/lib.sh"
require_root

CATALOGUE=$TOP_SRCDIR/scripts/agents.ini
pd_use_image full
pd_start

IMG=$PD_IMAGES/full
INI=$IMG/agents.ini
R=$IMG/rootfs

# ini_get SECTION KEY FILE, ini_sections FILE: mkimage's own readers.
eval "$(sed -n '/^ini_get() {/,/^}/p; /^ini_sections() {/,/^}/p' "$MKIMAGE")"

ids=$(ini_sections "$INI" | tr '\n' ' ')
diag "the image's agents: $ids"
diag "its description: $(cat "$IMG/description")"

B=$M/boxes/full
mkdir "$B"
ok "a box of the full image" bash -c "echo full >'$B/image' && test \"\$(cat '$B/image')\" = full"
ok "the box user is box (uid 1000, home /config)" same "$(pd_job full 'echo "$(id -u):$HOME"')" 1000:/config

# The desktop.
ok "Xvnc, xfce4-session, xfce4-terminal, xdotool, xwd, xrandr, firefox-esr and dbus-launch are there" \
	pd_job full 'for p in Xvnc xfce4-session xfwm4 xfce4-panel xfce4-terminal xdotool xwd xrandr firefox-esr dbus-launch; do command -v $p >/dev/null || { echo missing $p; exit 1; }; done'
ok "Python has Tk" pd_job full 'python3 -c "import tkinter; tkinter.Tcl()"'

# Node.js 22 from the catalogue, in place of Debian's.
node_v=$(ini_get "" node "$CATALOGUE")
node_is() {
	local v
	v=$(pd_job full 'node --version') && same "$v" "v$node_v" && case $v in v22.*) ;; *) false ;; esac
}
ok "node --version is the catalogue's Node.js $node_v (22)" node_is
ok "Debian's nodejs and npm are not installed" \
	same "$(pd_job full 'dpkg-query -W -f="\${Status}\n" nodejs npm 2>/dev/null | grep -c " installed" || true')" 0

# The agents.
has_agents() {
	local id r=0
	for id in claude codex opencode pi; do
		case " $ids " in *" $id "*) ;; *) diag "no [$id]"; r=1 ;; esac
	done
	return $r
}
ok "agents.ini lists claude, codex, opencode and pi" has_agents
check_npm_agents() {
	local id r=0
	for id in $(ini_sections "$CATALOGUE"); do
		[ -n "$(ini_get "$id" package "$CATALOGUE")" ] || continue
		same "$(ini_get "$id" version "$INI")" "$(ini_get "$id" version "$CATALOGUE")" || { diag "[$id]"; r=1; }
	done
	return $r
}
ok "at the catalogue's pinned versions" check_npm_agents
check_versions() {
	local id bin v out r=0
	for id in $ids; do
		bin=$(ini_get "$id" bin "$INI")
		v=$(ini_get "$id" version "$INI")
		out=$(pd_job full "$bin --version 2>&1") || { diag "$id: $bin --version failed"; r=1; continue; }
		diag "$id: $bin --version: $(echo "$out" | head -n 1)"
		case $out in
		*"$v"*) ;;
		*) diag "$id: expected $v"; r=1 ;;
		esac
	done
	return $r
}
ok "each agent's --version, run by the box user, is agents.ini's version" check_versions
check_description() {
	local id r=0 d
	d=$(cat "$IMG/description")
	for id in $ids; do
		case $d in
		*"$(ini_get "$id" name "$INI") $(ini_get "$id" version "$INI")"*) ;;
		*) diag "description [$d] does not name $id"; r=1 ;;
		esac
	done
	case $d in *XFCE*Docker*) ;; *) diag "description [$d]"; r=1 ;; esac
	# The daemon keeps 255 bytes of it.
	[ ${#d} -lt 256 ] || { diag "description is ${#d} bytes"; r=1; }
	return $r
}
ok "the description names the desktop, Docker and each agent with its version" check_description

# Docker.
# (dockerd and runc are in /usr/sbin, out of a user's PATH on Debian.)
ok "docker, dockerd, containerd, runc and docker-compose run" \
	pd_job full 'PATH=$PATH:/usr/sbin:/sbin; for t in docker dockerd containerd runc docker-compose; do $t --version >/dev/null 2>&1 || { echo "$t --version failed"; exit 1; }; done'
in_docker_group() {
	local g
	g=$(pd_job full 'id -nG box') || return 1
	case " $g " in
	*" docker "*) ;;
	*) diag "id -nG box: $g"; return 1 ;;
	esac
}
ok "id box lists group docker" in_docker_group

rmdir "$B"

# The image itself.
ok "the image's docker file says on" same "$(cat "$IMG/docker")" on
ok "the image's user, home and shell are box, /config, /bin/bash" \
	same "$(cat "$IMG/user" "$IMG/home" "$IMG/shell" | tr '\n' ' ')" "box /config /bin/bash "
ok "/var/lib/docker in the image is empty or absent" \
	bash -c "test ! -e '$R/var/lib/docker' || test -z \"\$(ls -A '$R/var/lib/docker')\""
ok "no apt lists, no apt cache, no apt or dpkg logs (after apt's install and Node.js's purge)" bash -c "
	! find '$R/var/lib/apt/lists' '$R/var/cache/apt' '$R/var/log/apt' -mindepth 1 ! -name lock ! -name partial | grep -q . &&
	test ! -e '$R/var/log/dpkg.log' && test ! -e '$R/var/log/alternatives.log'"
ok "no policy-rc.d, no npm configuration or cache, nothing in /tmp, /run or /root from the build" bash -c "
	test ! -e '$R/usr/sbin/policy-rc.d' &&
	! ls -d '$R/usr/local/etc/npmrc' '$R/root/.npmrc' '$R/config/.npmrc' '$R/etc/npmrc' 2>/dev/null | grep -q . &&
	test -z \"\$(find '$R/tmp' '$R/var/tmp' -mindepth 1)\" &&
	test \"\$(ls -A '$R/run')\" = lock &&
	test \"\$(ls -A '$R/root' | tr '\n' ' ')\" = '.bashrc .profile ' &&
	! find '$R' -xdev -name _cacache | grep -q ."

pd_done
