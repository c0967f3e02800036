#!/bin/bash
# Docker inside a box obeys the box's network policy: containers the box's
# Docker runs, on its default bridge and on a network made with `docker
# network create`, and the RUN steps of `docker build`, reach what the box
# may reach and nothing else. Against a fake internet the test builds itself
# (as test-net-dns.sh): the daemon runs in a private "host" namespace whose
# default route leads to an "inet" namespace holding HTTP servers, a
# listener on 169.254.169.254 and a DNS server (dnsmasq) authoritative for
# the test's names. No traffic leaves these namespaces.
#
#   allowed.test 198.51.100.10   other.test 198.51.100.11   (no name) 203.0.113.10
#
# Box d runs Docker (image docker); box p is a plain box serving HTTP on
# :8000, which d's containers must never reach. The host serves HTTP on
# :8080 on every address it has (the bridge's gateway among them) and the
# daemon listens on all of them too: neither is reachable from a container.
# For each policy (allow-all, an allowlist of allowed.test, deny-all) one
# container per network runs every probe at once (busybox nc, ping and
# nslookup: the static busybox's wget crashes, as on the host); builds,
# with the legacy builder and with BuildKit, fetch an allowed and a denied
# target in a RUN step. A container that takes box p's address (or another
# one) as its source gets nothing out: the inet namespace counts what
# arrives on a port only that container uses, and box d's port on the
# bridge shows the packets did leave the box.
. "$(dirname "$0")/lib.sh"
require_root
command -v python3 >/dev/null || skip_all "needs python3"
command -v dnsmasq >/dev/null || skip_all "needs dnsmasq (scripts/install-deps)"
command -v nsenter >/dev/null || skip_all "needs nsenter"
command -v busybox >/dev/null || skip_all "needs busybox (the containers' image)"

WEB="198.51.100.10 198.51.100.11 203.0.113.10 169.254.169.254"
DNS=198.51.100.53

if [ -z "${PD_NET_INSIDE:-}" ]; then
	tag=pdk$$
	cleanup_ns() {
		pd_fake_net_down
		rm -rf "/tmp/$tag-www"
	}
	trap cleanup_ns EXIT
	# shellcheck disable=SC2086
	pd_fake_net "$tag" $WEB $DNS || skip_all "cannot make network namespaces"
	mkdir -p "/tmp/$tag-www" && echo hello >"/tmp/$tag-www/index.html"
	# shellcheck disable=SC2086
	pd_fake_serve "$INETNS" "/tmp/$tag-www" 80 $WEB
	# Every address of the host, present and future (the bridge's).
	pd_fake_serve "$HOSTNS" "/tmp/$tag-www" 8080 0.0.0.0
	ip netns exec "$INETNS" dnsmasq --keep-in-foreground --no-resolv --no-hosts \
		--bind-interfaces --listen-address=$DNS --port=53 --user=root --pid-file= \
		--host-record=allowed.test,198.51.100.10 --host-record=other.test,198.51.100.11 \
		--local-ttl=60 >/dev/null 2>&1 &
	PD_FAKE_PIDS="$PD_FAKE_PIDS $!"
	# What arrives in the internet on the spoofing probes' ports (81: a
	# spoofed source, 82: box p itself, 83: the spoofing container as
	# itself), counted before anything answers.
	ip netns exec "$INETNS" nft -f - <<'NFT'
table inet count {
	counter spoofed {}
	counter genuine {}
	counter genuine_c {}
	chain pre {
		type filter hook prerouting priority raw; policy accept;
		tcp dport 81 counter name spoofed
		tcp dport 82 counter name genuine
		tcp dport 83 counter name genuine_c
	}
}
NFT
	pd_fake_wait "$INETNS" 6 && pd_fake_wait "$HOSTNS" 1
	PD_INETNS=$INETNS PD_NET_INSIDE=1 nsenter --net="/run/netns/$HOSTNS" "$0"
	rc=$?
	cleanup_ns
	trap - EXIT
	ip netns list | grep -q "^$tag" && { echo "# namespaces left behind"; rc=1; }
	exit $rc
fi

PD_NETWORK=on PD_BRIDGE=pd-k$(($$ % 1000)) PD_SUBNET=10.204.$(($$ % 250)).0/24
PD_NFT_TABLE=paddock_k$$ PD_DNS_UPSTREAM=$DNS PD_LISTEN=0.0.0.0:0
export PD_NETWORK PD_BRIDGE PD_SUBNET PD_NFT_TABLE PD_DNS_UPSTREAM PD_LISTEN
pd_use_image docker
pd_setup || exit 1
pd_docker_type
pd_start
T0=$(date +%s)
GW=${PD_SUBNET%.0/24}.1

# counted NAME: packets the inet namespace counted on NAME's port.
counted() {
	ip netns exec "$PD_INETNS" nft list counter inet count "$1" | sed -n 's/.*packets \([0-9]*\).*/\1/p'
}

ok "box d (Docker) starts and its Docker answers" pd_docker_box d
# Without it nothing below means anything.
[ "$pd_failed" -eq 0 ] || pd_done
D_=$M/boxes/d
P=$M/boxes/p
mkdir "$P" && echo off >"$P/docker"
ok "box p (plain) starts" bash -c "echo running > '$P/state'"
ipd=$(cat "$D_/ip")
ipp=$(cat "$P/ip")
diag "d $ipd, p $ipp, gateway $GW; $(($(date +%s) - T0)) s to here"

# Box p serves HTTP on :8000 (a server run in its network namespace).
mkdir -p "$PD_TMP/www" && echo hello >"$PD_TMP/www/index.html"
nsenter --net="$PD_TMP/run/netns/p" busybox httpd -f -p 8000 -h "$PD_TMP/www" >/dev/null 2>&1 &
PSERVE=$!
stop_pserve() {
	kill "$PSERVE" 2>/dev/null
	wait "$PSERVE" 2>/dev/null
}
pd_on_exit stop_pserve
HTTP_PORT=$(pd_url | sed 's/.*:\([0-9]*\).*/\1/')
diag "daemon's HTTP port $HTTP_PORT"
# The controls: each target the containers must not reach answers the host.
ok "control: box p serves :8000 (from the host)" wait_for 10 curl -fsS -o /dev/null "http://$ipp:8000/"
ok "control: the host serves :8080 on the gateway" curl -fsS -o /dev/null "http://$GW:8080/"
ok "control: the daemon answers HTTP on the gateway" \
	bash -c "curl -sS -o /dev/null -w '%{http_code}' 'http://$GW:$HTTP_PORT/v1/tree/' | grep -q '^[1-5]'"
ok "control: the daemon answers HTTP on the host's address" \
	bash -c "curl -sS -o /dev/null -w '%{http_code}' 'http://192.0.2.2:$HTTP_PORT/v1/tree/' | grep -q '^[1-5]'"

# The probes a container runs (sh, busybox), all at once, each printing
# "NAME RESULT": open (an HTTP status line, or a ping's reply, came back
# within 2 s) or closed; for lookups the first address, refused (the
# resolver said REFUSED) or none. Pings where they must fail go to an
# address no earlier probe pinged: a fresh container's ping has the PID,
# hence the ICMP id, of the one before, and an echo flow tracked under the
# previous policy would still count as established (policy changes let
# established flows finish).
cat >"$D_/root/tmp/probe.sh" <<'SH'
fetch() {
	if printf 'GET / HTTP/1.0\r\n\r\n' | nc -w 2 "$2" "$3" 2>/dev/null | head -n1 | grep -q '^HTTP/'; then
		echo "$1 open"
	else
		echo "$1 closed"
	fi
}
ping1() {
	if ping -c 1 -W 1 "$2" >/dev/null 2>&1; then echo "$1 open"; else echo "$1 closed"; fi
}
look() {
	out=$(timeout 3 nslookup "$2" $3 2>&1)
	a=$(echo "$out" | sed -n '/^Name:/,$ s/^Address: *\([0-9.]*\)$/\1/p' | head -n1)
	if [ -n "$a" ]; then
		echo "$1 $a"
	elif echo "$out" | grep -q REFUSED; then
		echo "$1 refused"
	else
		echo "$1 none"
	fi
}
# A name looked up, then fetched from its address.
named() {
	a=$(look x "$2" | cut -d' ' -f2)
	case $a in
	*.*) fetch "$1" "$a" 80 ;;
	*) echo "$1 $a" ;;
	esac
}
gw=$1 ipp=$2 port=$3
fetch meta 169.254.169.254 80 &
fetch boxp "$ipp" 8000 &
ping1 pingp "$ipp" &
ping1 pinggw "$gw" &
ping1 pingnet 203.0.113.10 &
ping1 pingother 198.51.100.11 &
fetch gw8080 "$gw" 8080 &
fetch host8080 192.0.2.2 8080 &
fetch gwhttp "$gw" "$port" &
fetch hosthttp 192.0.2.2 "$port" &
fetch allowedip 198.51.100.10 80 &
fetch otherip 198.51.100.11 80 &
fetch noname 203.0.113.10 80 &
look direct allowed.test 198.51.100.53 &
look lkallowed allowed.test &
look lkother other.test &
named allowed allowed.test &
named other other.test &
fetch byname allowed.test 80 &
wait
SH

# probe NETWORK: runs the probes in a container on NETWORK (bridge or
# another); the results in $PROBE.
PROBE=
probe() {
	PROBE=$(pd_job d "docker run --rm -i --network $1 bb:1 sh -s $GW $ipp $HTTP_PORT </tmp/probe.sh") ||
		{ diag "the probe container on $1 failed"; return 1; }
	diag "$1: $(echo "$PROBE" | sort | tr '\n' ' ')"
}
# res NAME: the probe's result.
res() {
	echo "$PROBE" | sed -n "s/^$1 //p"
}
is() {
	same "$(res "$1")" "$2"
}
# unresolved NETWORK NAME: no address for the lookup NAME: the box's
# resolver said REFUSED (on the default bridge, where the container asks
# it), or no answer came through Docker's own resolver (another network).
unresolved() {
	case $1:$(res "$2") in
	*:refused | pdnet:none) return 0 ;;
	esac
	diag "$2: $(res "$2")"
	return 1
}

# common MODE NETWORK: what holds under every policy.
common() {
	ok "$1 ($2): the metadata address unreachable" is meta closed
	ok "$1 ($2): box p unreachable" is boxp closed
	ok "$1 ($2): box p does not answer ping" is pingp closed
	ok "$1 ($2): the gateway does not answer ping" is pinggw closed
	ok "$1 ($2): the host's service on the gateway unreachable" is gw8080 closed
	ok "$1 ($2): the host's service on its own address unreachable" is host8080 closed
	ok "$1 ($2): the daemon's HTTP port on the gateway unreachable" is gwhttp closed
	ok "$1 ($2): the daemon's HTTP port on the host's address unreachable" is hosthttp closed
	ok "$1 ($2): DNS straight to another server gets no answer" is direct none
}

matrix() {
	local mode=$1 net=$2
	ok "$mode ($net): the probe container ran" probe "$net"
	common "$mode" "$net"
	case $mode in
	allow-all)
		ok "$mode ($net): allowed.test resolves" is lkallowed 198.51.100.10
		ok "$mode ($net): other.test resolves" is lkother 198.51.100.11
		ok "$mode ($net): allowed.test reachable by name" is allowed open
		ok "$mode ($net): other.test reachable by name" is other open
		ok "$mode ($net): an address with no name reachable" is noname open
		ok "$mode ($net): and it answers ping" is pingnet open
		ok "$mode ($net): nc by name (the C library's resolver)" is byname open
		;;
	allowlist)
		ok "$mode ($net): allowed.test resolves" is lkallowed 198.51.100.10
		ok "$mode ($net): allowed.test reachable by name" is allowed open
		ok "$mode ($net): nc by name (the C library's resolver)" is byname open
		ok "$mode ($net): other.test does not resolve" unresolved "$net" lkother
		ok "$mode ($net): other.test's address unreachable" is otherip closed
		ok "$mode ($net): an address with no name unreachable" is noname closed
		ok "$mode ($net): other.test's address does not answer ping" is pingother closed
		;;
	deny-all)
		ok "$mode ($net): allowed.test does not resolve" unresolved "$net" lkallowed
		ok "$mode ($net): allowed.test's address unreachable" is allowedip closed
		ok "$mode ($net): other.test's address unreachable" is otherip closed
		ok "$mode ($net): an address with no name unreachable" is noname closed
		ok "$mode ($net): other.test's address does not answer ping" is pingother closed
		ok "$mode ($net): nc by name fails" is byname closed
		;;
	esac
}

# Build contexts in the box: /tmp/ctx-NAME, one RUN step fetching TARGET
# (a name or an address, port 80) and printing FETCHED once it got an HTTP
# status line, then the step's resolv.conf.
for t in allowed.test other.test 203.0.113.10 169.254.169.254 198.51.100.10; do
	mkdir -p "$D_/root/tmp/ctx-$t"
	cat >"$D_/root/tmp/ctx-$t/Dockerfile" <<DF
FROM bb:1
RUN printf 'GET / HTTP/1.0\r\n\r\n' | nc -w 2 $t 80 | head -n1 | grep '^HTTP/' && echo FETCHED && cat /etc/resolv.conf
DF
done
# build BUILDER TARGET: builds /tmp/ctx-TARGET with the legacy builder or
# BuildKit (DOCKER_BUILDKIT=0 or 1), no cache; the output in $BUILT, the
# status in $BUILD_RC.
BUILT=
BUILD_RC=
build() {
	local k=0
	[ "$1" = buildkit ] && k=1
	BUILT=$(pd_job d "cd /tmp/ctx-$2 && DOCKER_BUILDKIT=$k timeout 25 docker build --no-cache --progress plain . 2>&1; echo rc=\$?") ||
		{ diag "the build job failed"; return 1; }
	# The legacy builder colours a step's errors.
	BUILT=$(sed 's/\x1b\[[0-9;]*m//g' <<<"$BUILT")
	BUILD_RC=$(echo "$BUILT" | sed -n 's/^rc=//p' | tail -n1)
}
# builds BUILDER TARGET: the build got TARGET's page in its RUN step, whose
# resolver was the box's.
builds() {
	build "$1" "$2" && [ "$BUILD_RC" = 0 ] && grep -q '^\(#[0-9]* [0-9.]* \)\?FETCHED' <<<"$BUILT" &&
		grep -q "nameserver $GW\$" <<<"$BUILT" && return 0
	echo "$BUILT" | tail -n 15 | sed 's/^/# /'
	return 1
}
# fails_to BUILDER TARGET: the build failed in its RUN step, which got no
# page.
fails_to() {
	build "$1" "$2" && [ "$BUILD_RC" != 0 ] && grep -q 'RUN printf' <<<"$BUILT" &&
		grep -q -e 'returned a non-zero code' -e 'exit code: 1' <<<"$BUILT" &&
		! grep -q '^\(#[0-9]* [0-9.]* \)\?FETCHED' <<<"$BUILT" && {
		diag "$(grep -m1 -e 'nc: ' <<<"$BUILT")"
		return 0
	}
	echo "$BUILT" | tail -n 15 | sed 's/^/# /'
	return 1
}

# spoof NETWORK SOURCE PORT: a container with CAP_NET_ADMIN on NETWORK
# takes SOURCE (an address of its box's subnet or outside it) as its own
# and makes it the source of its default route, then connects to
# 203.0.113.10:PORT. With SOURCE "self" it connects as itself.
cat >"$D_/root/tmp/spoof.sh" <<'SH'
if [ "$1" != self ]; then
	gw=$(ip route | sed -n 's/^default via \([0-9.]*\).*/\1/p')
	ip addr add "$1/32" dev eth0 && ip route replace default via "$gw" dev eth0 src "$1" || exit 1
fi
ip route get 203.0.113.10 | head -n1
nc -w 2 203.0.113.10 "$2" </dev/null >/dev/null 2>&1
exit 0
SH
spoof() {
	local out
	out=$(pd_job d "docker run --rm -i --cap-add NET_ADMIN --network $1 bb:1 sh -s $2 $3 </tmp/spoof.sh") ||
		{ diag "the spoofing container failed"; return 1; }
	diag "route: $out"
}
# rx_of BOX: packets the box's port on the bridge has received.
rx_of() {
	local peer port
	peer=$(nsenter --net="$PD_TMP/run/netns/$1" ip -o link show eth0 | sed -n 's/^[0-9]*: eth0@if\([0-9]*\):.*/\1/p')
	port=$(ip -o link | sed -n "s/^$peer: \([^@:]*\).*/\1/p")
	awk -v p="$port:" '$1 == p { print $3 }' /proc/net/dev
}
# p_reaches PORT: box p itself connects to 203.0.113.10:PORT.
p_reaches() {
	nsenter --net="$PD_TMP/run/netns/p" busybox nc -w 2 203.0.113.10 "$1" </dev/null >/dev/null 2>&1
}
# nothing_out NETWORK SOURCE: a container on NETWORK sending as SOURCE
# gets nothing to the internet.
nothing_out() {
	spoof "$1" "$2" 81 && same "$(counted spoofed)" 0
}
# arrived COUNTER: at least one packet counted.
arrived() {
	[ "$(counted "$1")" -ge 1 ]
}

ok "docker network create" pd_job d 'docker network create pdnet >/dev/null'

# ---- the box's resolver inside containers
# gateway_only RESOLV.CONF: the text names the gateway and no loopback
# address.
gateway_only() {
	grep -qx "nameserver $GW" <<<"$1" && ! grep -q '^nameserver 127\.' <<<"$1" && return 0
	echo "$1" | sed 's/^/# /'
	return 1
}
ok "a container on the default bridge gets the box's resolv.conf: the gateway, no loopback" \
	gateway_only "$(pd_job d 'docker run --rm bb:1 cat /etc/resolv.conf')"
r=$(pd_job d 'docker run --rm --network pdnet bb:1 cat /etc/resolv.conf')
ok "a container on a user-defined network asks Docker's resolver (which asks the box's)" \
	same "$(grep '^nameserver' <<<"$r")" "nameserver 127.0.0.11"

# ---- allow-all
matrix allow-all bridge
matrix allow-all pdnet
for b in legacy buildkit; do
	ok "allow-all, docker build ($b): a RUN step reaches an address" builds $b 203.0.113.10
	ok "allow-all, docker build ($b): a RUN step does not reach the metadata address" fails_to $b 169.254.169.254
done
ok "control: a container with CAP_NET_ADMIN reaches the internet as itself" \
	eval 'spoof bridge self 83 && arrived genuine_c'
rx0=$(rx_of d)
ok "allow-all: the container sending as box p ran" spoof bridge "$ipp" 81
rx1=$(rx_of d)
ok "allow-all: a container sending as box p gets nothing out" same "$(counted spoofed)" 0
ok "... though its box sent the packets on (its port received $((rx1 - rx0)))" test $((rx1 - rx0)) -ge 1
ok "control: box p itself reaches the internet" eval 'p_reaches 82; arrived genuine'

# ---- an allowlist of one domain
ok "allowlist of allowed.test" bash -c "printf 'allowlist\nallowed.test\n' > '$D_/policy'"
matrix allowlist bridge
matrix allowlist pdnet
for b in legacy buildkit; do
	ok "allowlist, docker build ($b): a RUN step reaches allowed.test" builds $b allowed.test
	ok "allowlist, docker build ($b): a RUN step does not reach other.test" fails_to $b other.test
done

# ---- deny-all
# A ping flow tracked under a looser policy does not outlive the change: a
# new container's ping (the same address and ICMP id) meets the new one.
pingnet() {
	pd_job d 'docker run --rm bb:1 ping -c 1 -W 2 203.0.113.10 >/dev/null 2>&1 && echo open || echo closed'
}
ok "allow-all again" bash -c "echo allow-all > '$D_/policy'"
ok "allow-all: a container's ping gets its answer" same "$(pingnet)" open
ok "deny-all" bash -c "echo deny-all > '$D_/policy'"
before=$pd_failed
ok "deny-all at once: a new container's ping of the same address gets none" same "$(pingnet)" closed
if [ "$pd_failed" -ne "$before" ]; then
	diag "the daemon on the policy changes:"
	grep -E 'tracked flows|network' "$PD_TMP/paddockd.log" | tail -n 8 | sed 's/^/# /'
	diag "the host's tracked ICMP flows of box d:"
	grep -F "src=$(cat "$D_/ip") " /proc/net/nf_conntrack 2>/dev/null | grep icmp | sed 's/^/# /'
fi
matrix deny-all bridge
matrix deny-all pdnet
for b in legacy buildkit; do
	ok "deny-all, docker build ($b): a RUN step does not reach allowed.test" fails_to $b allowed.test
	ok "deny-all, docker build ($b): nor its address" fails_to $b 198.51.100.10
done
for n in bridge pdnet; do
	ok "deny-all ($n): a container sending as box p (allow-all) gets nothing out" \
		nothing_out "$n" "$ipp"
	ok "deny-all ($n): nor as an address outside the subnet" \
		nothing_out "$n" 203.0.113.99
	ok "deny-all ($n): nor as the gateway" nothing_out "$n" "$GW"
done
p_still_reaches() {
	local g
	g=$(counted genuine)
	p_reaches 82
	[ "$(counted genuine)" -gt "$g" ]
}
ok "box p still reaches the internet" p_still_reaches

diag "$(($(date +%s) - T0)) s to here"
pd_done
