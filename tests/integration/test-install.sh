#!/bin/bash
# The server installer end to end, in a booted Debian 12 system container
# (systemd-nspawn; its root filesystem made by mmdebstrap with the packages
# scripts/install would install, cached as a tarball in the build tree):
#
#   scripts/install --domain paddock.test --tls internal (Caddy with its
#   own CA; the name resolves to loopback inside) builds Paddock from this
#   source tree (bound read-only) and prints the https setup link; from
#   outside the container: the link works, `paddock login --cacert` with
#   Caddy's CA (saved: later commands trust it), the documented first test;
#   `systemctl restart paddockd` with a job running (its output continues);
#   a rerun of the installer (an upgrade: boxes, token, configuration kept)
#   that adds --preview-domain (Caddy's on-demand certificates: only for a
#   published port, paddockd's ask); a shutdown (running boxes stopped
#   with a snapshot) and a boot (the service comes back); uninstall (data
#   kept), uninstall --purge.
#
# The container has a network of its own: a veth pair (198.18.251.0/30)
# to this host; the daemon's bridge and nftables table live in it. Boxes use
# the debian image of the test cache, bound read-only into the container.
. "$(dirname "$0")/lib.sh"
require_root
for cmd in systemd-nspawn mmdebstrap nsenter unshare curl; do
	command -v "$cmd" >/dev/null || skip_all "needs $cmd (scripts/install-deps)"
done
[ -d /sys/fs/cgroup ] || skip_all "needs cgroups"
pd_debian_cache || skip_all "no debian image (cannot build it here)"

SRC=$TOP_SRCDIR
CLI=$TOP_BUILDDIR/cli/paddock
T=$(mktemp -d /var/tmp/paddock-install-test.XXXXXX)
NAME=pdinst$$
HOSTIF=pdi$$
HOST_IP=198.18.251.1
CT_IP=198.18.251.2
NSPAWN_PID=
LEAD=
CG_PATHS=$(cut -d: -f2- /proc/self/cgroup)
# The cgroups the container will leave under this test's own (see
# cleanup); any that exists already is someone else's and stays.
cg_dirs() {
	local line ctrl path sub
	for line in $CG_PATHS; do
		ctrl=${line%%:*} path=${line#*:}
		ctrl=${ctrl#name=}
		[ -n "$ctrl" ] || continue
		for sub in paddock payload supervisor; do
			echo "/sys/fs/cgroup/$ctrl${path%/}/$sub"
		done
	done
}
CG_BEFORE=$(for d in $(cg_dirs); do [ -d "$d" ] && echo "$d"; done)

# ---- the root filesystem, made once per package list ----
cache=$TOP_BUILDDIR/tests/images-cache-install
mkdir -p "$cache"
packages=$("$SRC/scripts/install" --print-packages | sort -u | tr '\n' ',')
packages="systemd,systemd-sysv,dbus,${packages%,}"
key=$(printf 'bookworm %s\n' "$packages" | sha256sum | cut -c1-16)
tarball=$cache/rootfs-$key.tar

host_mirror() {
	local uri
	uri=$(apt-get -qq --print-uris download busybox-static 2>/dev/null | head -n1 | cut -d"'" -f2)
	[ -n "$uri" ] && printf '%s\n' "${uri%%/pool/*}"
}

if [ ! -s "$tarball" ]; then
	pd_mirror_answers || skip_all "no Debian mirror answers (to make the container's root filesystem)"
	mirror=$(host_mirror)
	rm -rf "$cache"/rootfs-*.tar
	diag "making the container's root filesystem (once; a few minutes)"
	# mmdebstrap writes a tarball for a name ending in .tar.
	if ! mmdebstrap --variant=minbase --include="$packages" bookworm "$tarball.tmp.tar" \
		${mirror:+"$mirror"} >"$T/mmdebstrap.log" 2>&1; then
		sed 's/^/# /' "$T/mmdebstrap.log" | tail -n 20
		rm -rf "$tarball.tmp.tar"
		echo "1..1"
		echo "not ok 1 - the container's root filesystem is made"
		exit 1
	fi
	mv "$tarball.tmp.tar" "$tarball"
fi

ROOT=$T/root
mkdir "$ROOT"
tar -C "$ROOT" -xf "$tarball"
echo "$NAME" >"$ROOT/etc/hostname"
printf '127.0.0.1 localhost\n127.0.0.1 paddock.test\n' >"$ROOT/etc/hosts"
chroot "$ROOT" passwd -dq root >/dev/null 2>&1 || true

# In the container, as root with its environment.
ct() {
	nsenter -t "$LEAD" -a -- env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		HOME=/root LANG=C.UTF-8 "$@"
}

# Boots the container and waits until its systemd is up; its network and
# cgroups set up as a server's would be.
boot() {
	# nspawn (no machined here: --register=no) mounts the v1 controllers
	# read-only; paddockd makes the boxes' cgroups in them, so they are
	# made writable below, as on a real server.
	local -a reg=(--register=no --keep-unit)
	# Under systemd (a unified hierarchy, most likely), machined makes the
	# container's scope, with its cgroup delegated; /dev/fuse must be let
	# through the scope's device policy.
	[ -d /run/systemd/system ] && reg=("--property=DeviceAllow=/dev/fuse rwm")
	# nspawn's own seccomp allow-list is off: the boxes inside run under
	# paddockd's filter, as on a server. On a v1 host the container gets
	# v1 controllers.
	local -a env=(SYSTEMD_SECCOMP=0)
	[ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ] || env+=(SYSTEMD_NSPAWN_UNIFIED_HIERARCHY=0)
	env "${env[@]}" setsid systemd-nspawn -b -q \
		-D "$ROOT" -M "$NAME" "${reg[@]}" \
		--network-veth-extra="$HOSTIF:host0" \
		--capability=all --bind=/dev/fuse \
		--bind-ro="$SRC:/src" \
		--bind-ro="$PD_IMAGES/debian:/var/lib/paddock/images/debian" \
		</dev/null >>"$T/console.log" 2>&1 &
	NSPAWN_PID=$!
	local i state
	for i in $(seq 100); do
		LEAD=$(pgrep -P "$NSPAWN_PID" | head -n1)
		[ -n "$LEAD" ] && [ "$(cat "/proc/$LEAD/comm" 2>/dev/null)" = systemd ] && break
		LEAD=
		sleep 0.2
	done
	[ -n "$LEAD" ] || return 1
	for i in $(seq 150); do
		state=$(ct systemctl is-system-running 2>/dev/null)
		case $state in running | degraded) break ;; esac
		sleep 0.2
	done
	case $state in running | degraded) ;; *) diag "the container is $state" && return 1 ;; esac
	local c
	for c in /sys/fs/cgroup/*; do
		[ "${c##*/}" = systemd ] || [ "${c##*/}" = unified ] && continue
		nsenter -t "$LEAD" -m -- mount -o remount,bind,rw "$c" 2>/dev/null || true
	done
	ip link set "$HOSTIF" up && ip addr add "$HOST_IP/30" dev "$HOSTIF" &&
		nsenter -t "$LEAD" -n -- sh -c "ip link set lo up && ip link set host0 up &&
			ip addr add $CT_IP/30 dev host0"
}

# Shuts the container down as a machine's poweroff does.
poweroff() {
	[ -n "$NSPAWN_PID" ] || return 0
	ct systemctl poweroff 2>/dev/null || kill -TERM "$NSPAWN_PID" 2>/dev/null
	local i
	for i in $(seq 300); do
		kill -0 "$NSPAWN_PID" 2>/dev/null || break
		sleep 0.2
	done
	if kill -0 "$NSPAWN_PID" 2>/dev/null; then
		diag "the container did not power off in 60 s: killed"
		kill -KILL "$NSPAWN_PID" 2>/dev/null
	fi
	wait "$NSPAWN_PID" 2>/dev/null
	NSPAWN_PID='' LEAD=''
}

cleanup() {
	poweroff
	ip link del "$HOSTIF" 2>/dev/null
	# Under this test's own cgroups, once the container is gone: the
	# boxes' (the container's cgroup namespace starts there) and nspawn's
	# own (payload, supervisor); rmdir removes only empty ones.
	local d
	for d in $(cg_dirs); do
		[ -d "$d" ] && ! grep -qxF "$d" <<<"$CG_BEFORE" &&
			find "$d" -depth -type d -exec rmdir {} + 2>/dev/null
	done
	if grep -qF " $T/" /proc/self/mounts; then
		diag "mounts left under $T: kept"
		grep -F " $T/" /proc/self/mounts | sed 's/^/# /'
	else
		rm -rf "$T"
	fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# From outside: curl and the CLI see paddock.test (and two preview hosts)
# at the container's address (a private mount namespace each: a hosts file
# bound over this host's); they are given Caddy's CA (curl --cacert, the
# CLI's login --cacert).
outside() {
	unshare -m -- bash -c 'mount --bind "$0/hosts" /etc/hosts &&
		exec env -u PADDOCK_CACERT -u PADDOCK_URL -u PADDOCK_TOKEN -u PADDOCK_CONFIG \
			HOME="$0/home" "$@"' "$T" "$@"
}
echo "$CT_IP paddock.test 8080-job.preview.test 9090-job.preview.test" >"$T/hosts"
mkdir -p "$T/home"

ok "the container boots (systemd, its own network)" boot || {
	sed 's/^/# /' "$T/console.log" | tail -n 20
	echo "1..$pd_n"
	exit 1
}

# ---- bad input: refused before anything is done, with the fix ----
refused() {
	local out
	out=$(ct /src/scripts/install "$@" 2>&1) && return 1
	grep -q 'fix:' <<<"$out" && ! ct test -e /etc/paddock && ! ct test -e /var/log/paddock-install.log
}
ok "--tls other is refused, with the fix" refused --domain paddock.test --tls other
ok "--domain with a bad name is refused" refused --domain 'not a name'
ok "--images with an unknown image is refused" refused --images tiny,huge
ok "--listen with --domain is refused" refused --domain paddock.test --listen 0.0.0.0:80

# ---- install ----
install_first() {
	ct /src/scripts/install --source /src --domain paddock.test --tls internal \
		--images tiny --image-default debian >"$T/install.out" 2>&1 ||
		{ sed 's/^/# /' "$T/install.out" | tail -n 30 && return 1; }
}
ok "scripts/install --domain paddock.test --tls internal succeeds" install_first
ok "every step says what it does" grep -q '^== Building Paddock' "$T/install.out"
setup=$(grep -o 'https://paddock.test/setup?token=[A-Za-z0-9_-]*' "$T/install.out" | head -n1)
ok "it ends with the https setup link" test -n "$setup"
service_on() {
	ct systemctl is-enabled --quiet paddockd && ct systemctl is-active --quiet paddockd
}
ok "paddockd.service is enabled and active" service_on
ok "systemd-analyze verify accepts the unit" ct systemd-analyze verify --man=no paddockd.service
ok "the configuration is root:paddock 0640" \
	same "$(ct stat -c '%U:%G %a' /etc/paddock/paddock.ini)" "root:paddock 640"
ok "HTTP listens on loopback only" grep -qx 'listen = 127.0.0.1:7860' "$ROOT/etc/paddock/paddock.ini"

CA=$ROOT/var/lib/caddy/.local/share/caddy/pki/authorities/local/root.crt
ok "Caddy made its CA" test -s "$CA"

# ---- from outside ----
setup_opens() {
	outside curl -fsS --max-time 20 --cacert "$CA" "$setup" | grep -q 'set the owner'
}
ok "the setup link opens over https with the CA" setup_opens
set_password() {
	outside curl -fsS --max-time 20 --cacert "$CA" -H 'Content-Type: application/json' \
		-d "{\"token\":\"${setup#*token=}\",\"password\":\"install-test-9\"}" \
		https://paddock.test/v1/setup | grep -q true
}
ok "the owner's password is set through it" set_password
login() {
	echo install-test-9 | outside "$CLI" login https://paddock.test --password-stdin \
		--cacert "$CA" >/dev/null 2>&1
}
untrusted() {
	local out
	out=$(echo x | outside "$CLI" login https://paddock.test --password-stdin 2>&1) && return 1
	grep -q -- '--cacert FILE' <<<"$out" || { diag "$out" && return 1; }
}
ok "without the CA, the CLI refuses the certificate and says how to trust it" untrusted
ok "paddock login https://paddock.test --cacert CA" login
ok "the config keeps the CA for that URL" grep -qxF "cacert = $CA" "$T/home/.config/paddock/config.ini"

# The documented first test (http-cli.md), from a project directory.
proj=$T/project
pd_node_project "$proj"
first_test() {
	(cd "$proj" &&
		outside "$CLI" new --type small --ttl 3600 >"$T/new.out" &&
		outside "$CLI" push current . --to /config/project &&
		outside "$CLI" exec current -- bash -lc 'cd /config/project && npm test' >"$T/npm.out" 2>&1 &&
		grep -q '# pass 2' "$T/npm.out" &&
		outside "$CLI" stop current) ||
		{ sed 's/^/# /' "$T/npm.out" 2>/dev/null | tail -n 20 && return 1; }
}
ok "the documented first test: new, push, exec npm test, stop" first_test
first_box=$(tail -n1 "$T/new.out" 2>/dev/null)

# ---- restart with a job running ----
box_runs() {
	ct mkdir /paddock/boxes/job &&
		ct sh -c 'echo running >/paddock/boxes/job/state' &&
		same "$(ct cat /paddock/boxes/job/state)" running
}
ok "a box runs" box_runs
ct sh -c 'echo "for i in \$(seq 1 20); do echo line\$i; sleep 0.5; done" >/paddock/boxes/job/exec/new'
job=$(ct readlink /paddock/boxes/job/exec/last)
ct timeout 2 cat "/paddock/boxes/job/exec/$job/output" >/dev/null
pid1=$(ct systemctl show -P MainPID paddockd)
ok "systemctl restart paddockd with a job running" ct systemctl restart paddockd
pid2=$(ct systemctl show -P MainPID paddockd)
ok "a new daemon runs" test "$pid1" != "$pid2" -a "$pid2" != 0
ok "the box kept running" same "$(ct cat /paddock/boxes/job/state)" running
job_continued() {
	same "$(ct timeout 30 cat "/paddock/boxes/job/exec/$job/exit")" 0 &&
		same "$(ct cat "/paddock/boxes/job/exec/$job/output" | tr '\n' ' ')" \
			"$(seq -f 'line%g' -s ' ' 1 20) "
}
ok "the job's output continues to its end" job_continued

# ---- rerun: an upgrade ----
echo '; kept across upgrades' >>"$ROOT/etc/paddock/paddock.ini"
ct sh -c 'echo "sleep 600" >/paddock/boxes/job/exec/new'
upgrade() {
	ct /src/scripts/install --source /src --preview-domain preview.test >"$T/upgrade.out" 2>&1 ||
		{ sed 's/^/# /' "$T/upgrade.out" | tail -n 30 && return 1; }
}
ok "a rerun of the installer upgrades in place (and adds --preview-domain)" upgrade
ok "it says it upgrades and keeps the images" bash -c "
	grep -q 'upgrading' '$T/upgrade.out' && grep -q 'debian: kept' '$T/upgrade.out' &&
	grep -q 'tiny: kept' '$T/upgrade.out'"
ok "the configuration is kept" grep -qx '; kept across upgrades' "$ROOT/etc/paddock/paddock.ini"
still_runs() {
	same "$(ct cat /paddock/boxes/job/state)" running &&
		ct grep -q running /paddock/boxes/job/exec/last/status
}
ok "the box still runs, its job too" still_runs
ok "the first box is kept" ct test -d "/paddock/boxes/$first_box"
still_logged_in() {
	outside "$CLI" ls | grep -q '^job '
}
ok "the login still works (paddock ls; the CA saved at login)" still_logged_in

# ---- preview hosts: Caddy's on-demand certificates, asked for ----
ok "Caddy asks paddockd before an on-demand certificate" \
	grep -qF 'ask http://127.0.0.1:7860/v1/preview-ask' "$ROOT/etc/caddy/paddock.caddy"
ok "caddy validate accepts the Caddyfile" ct caddy validate --adapter caddyfile --config /etc/caddy/Caddyfile
ct sh -c 'echo 8080 >/paddock/boxes/job/ports'
# HTTPS to a preview host: the handshake needs a certificate made on
# demand, which Caddy gets only when the ask says yes.
preview() {
	outside curl -sS -o /dev/null -w '%{http_code}' --max-time 20 --cacert "$CA" "https://$1/" 2>/dev/null
}
ok "a published port's host gets a certificate (then 401: no token)" same "$(preview 8080-job.preview.test)" 401
ok "a port not published gets none (no TLS handshake)" same "$(preview 9090-job.preview.test)" 000
ok "the ask, asked from outside through Caddy: 403 (a forwarded request)" same "$(outside curl -sS -o /dev/null \
	-w '%{http_code}' --max-time 20 --cacert "$CA" \
	'https://paddock.test/v1/preview-ask?domain=8080-job.preview.test')" 403

# ---- shutdown and boot ----
# Three more running boxes (tiny) with files written, all stopped at once
# at shutdown while systemd unmounts what it sees.
more_boxes() {
	local b
	for b in t1 t2 t3; do
		ct mkdir "/paddock/boxes/$b" && ct sh -c "echo tiny >/paddock/boxes/$b/image" &&
			ct sh -c "echo running >/paddock/boxes/$b/state" &&
			ct sh -c "echo 'echo $b >/config/mark' >/paddock/boxes/$b/exec/new" || return 1
	done
}
ok "three more boxes run" more_boxes
ok "the container powers off" poweroff
shutdown_logged() {
	journalctl -D "$ROOT/var/log/journal" -u paddockd --no-pager 2>/dev/null |
		grep -q 'stopping the box job' &&
		journalctl -D "$ROOT/var/log/journal" -u paddockd --no-pager 2>/dev/null |
		grep -q '4 box(es) stopped'
}
ok "the shutdown stopped the running boxes" shutdown_logged
ok "the container boots again" boot || {
	sed 's/^/# /' "$T/console.log" | tail -n 20
	echo "1..$pd_n"
	exit 1
}
daemon_back() {
	local i
	for i in $(seq 100); do
		ct test -r /paddock/version && return 0
		sleep 0.2
	done
	return 1
}
ok "paddockd started at boot" daemon_back
ok "the box running at shutdown is stopped" same "$(ct cat /paddock/boxes/job/state)" stopped
stopped_with_snapshots() {
	local b
	for b in job t1 t2 t3; do
		same "$b $(ct cat /paddock/boxes/$b/state)" "$b stopped" &&
			test -n "$(ct ls /paddock/boxes/$b/snapshots)" || return 1
	done
	same "$(ct cat /paddock/boxes/t2/root/config/mark)" t2
}
ok "each with a snapshot, its files kept" stopped_with_snapshots

# ---- uninstall ----
uninstall() {
	ct /src/scripts/uninstall "$@" >"$T/uninstall.out" 2>&1 ||
		{ sed 's/^/# /' "$T/uninstall.out" | tail -n 30 && return 1; }
}
ok "scripts/uninstall succeeds" uninstall
ok "the service and the programs are gone" bash -c "
	! test -e '$ROOT/usr/local/sbin/paddockd' &&
	! test -e '$ROOT/usr/local/lib/systemd/system/paddockd.service'"
ok "it says what it kept, and the data is there" bash -c "
	grep -q 'kept:' '$T/uninstall.out' && test -f '$ROOT/var/lib/paddock/paddock.db'"
ok "Caddy no longer serves Paddock" bash -c "
	! grep -q paddock '$ROOT/etc/caddy/Caddyfile' && ! test -e '$ROOT/etc/caddy/paddock.caddy'"
purge() {
	ct umount /var/lib/paddock/images/debian && uninstall --purge &&
		! test -e "$ROOT/var/lib/paddock" && ! test -e "$ROOT/etc/paddock"
}
ok "scripts/uninstall --purge deletes the data" purge

echo "1..$pd_n"
[ "$pd_failed" -eq 0 ]
