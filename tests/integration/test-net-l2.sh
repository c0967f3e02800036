#!/bin/bash
# Layer 2 on the daemon's bridge: a box (root inside, with CAP_NET_RAW)
# sends crafted Ethernet frames from its eth0 and must get nothing through
# but its own MAC and IPv4 address. Attacks: frames with another box's
# source MAC (the bridge's forwarding database must not learn it on the
# attacker's port; the victim keeps its inbound traffic), gratuitous ARP for
# another box's address or with another box's MAC (the host's neighbour
# entries stay), IPv4 with forged sources and IPv6 (nothing arrives on the
# bridge), and a box listening on its eth0 for another box's frames while
# the bridge has forgotten what it learnt (the fdb holds a static entry for
# each box's MAC on its port, which never ages, and box ports get no
# flooded unicast). Frames are made by tests/l2-frame.c, built static here and copied
# into the box's root. The whole run (daemon, bridge, table, boxes) lives
# in a network namespace of its own: no traffic leaves it.
. "$(dirname "$0")/lib.sh"
require_root
pd_own_netns "$0" "$@"
command -v cc >/dev/null || skip_all "needs a C compiler"
command -v bridge >/dev/null || skip_all "needs bridge (iproute2)"
command -v nsenter >/dev/null || skip_all "needs nsenter"
command -v busybox >/dev/null || skip_all "needs busybox (ping)"

PD_NETWORK=on PD_BRIDGE=pd-l$(($$ % 1000)) PD_SUBNET=10.203.$(($$ % 250)).0/24 PD_NFT_TABLE=paddock_l$$
export PD_NETWORK PD_BRIDGE PD_SUBNET PD_NFT_TABLE
pd_setup || exit 1
FRAME=$PD_TMP/l2-frame
cc -static -O2 -o "$FRAME" "$TOP_SRCDIR/tests/l2-frame.c" 2>"$PD_TMP/cc.log" ||
	skip_all "cannot build a static binary: $(head -n1 "$PD_TMP/cc.log")"
pd_start

BR=$PD_BRIDGE
GW=${PD_SUBNET%.0/24}.1
A=$M/boxes/a
V=$M/boxes/v
mkdir "$A" "$V"
ok "box a (the attacker) starts" bash -c "echo running > '$A/state'"
ok "box v (the victim) starts" bash -c "echo running > '$V/state'"
ipa=$(cat "$A/ip")
ipv=$(cat "$V/ip")
cp "$FRAME" "$A/root/l2-frame"

# mac_in BOX: eth0's MAC in the box's namespace.
mac_in() {
	nsenter --net="$PD_TMP/run/netns/$1" ip -o link show eth0 | grep -o 'link/ether [0-9a-f:]*' | cut -d' ' -f2
}
# port_of BOX: the box's port on the bridge (the peer of its eth0).
port_of() {
	local peer
	peer=$(nsenter --net="$PD_TMP/run/netns/$1" ip -o link show eth0 | sed -n 's/^[0-9]*: eth0@if\([0-9]*\):.*/\1/p')
	ip -o link | sed -n "s/^$peer: \([^@:]*\).*/\1/p"
}
# The MAC the daemon chose: 02:70 and the address's bytes.
mac_of_ip() {
	local IFS=.
	# shellcheck disable=SC2086
	printf '02:70:%02x:%02x:%02x:%02x' $1
}
maca=$(mac_in a)
macv=$(mac_in v)
porta=$(port_of a)
portv=$(port_of v)
macbr=$(ip -o link show "$BR" | grep -o 'link/ether [0-9a-f:]*' | cut -d' ' -f2)
diag "a: $ipa $maca on $porta; v: $ipv $macv on $portv; bridge $GW $macbr"
ok "box a's MAC is the one the daemon chose" same "$maca" "$(mac_of_ip "$ipa")"
ok "box v's MAC is the one the daemon chose" same "$macv" "$(mac_of_ip "$ipv")"
ok "both ports found" test -n "$porta" -a -n "$portv"

# in_a ARGS...: the frame tool run as root inside box a.
in_a() {
	pd_crun exec a /l2-frame "$@"
}
# count_br SECONDS udp PORT | dst MAC: frames arriving up the bridge (to
# the host), counted in the background into $PD_TMP/count.
count_br() {
	"$FRAME" count "$BR" "$@" >"$PD_TMP/count" &
	cpid=$!
	sleep 0.3
}
# Waits for count_br's counter; its result in $got.
counted() {
	wait $cpid
	got=$(cat "$PD_TMP/count")
}
# The host pings (busybox: iputils is not a dependency).
hping() {
	busybox ping "$@" >/dev/null
}
neigh_mac() {
	ip neigh show "$1" dev "$BR" | grep -o 'lladdr [0-9a-f:]*' | cut -d' ' -f2
}

# --- the positive cases: the box's own traffic --------------------------------
ok "the host reaches box v (ARP and IPv4 both ways)" hping -c 2 -W 2 "$ipv"
ok "the host reaches box a" hping -c 2 -W 2 "$ipa"
ok "the bridge has v's MAC on v's port" bash -c "bridge fdb show br '$BR' | grep -qi '^$macv dev $portv '"
count_br 3 udp 9997
in_a udp eth0 "$maca" "$macbr" "$ipa" "$GW" 9997 10 20
counted
ok "a's own UDP frames (own MAC, own address) reach the host" same "$got" 10
# The box's network namespace belongs to its user namespace: box root has
# that namespace's network capabilities (raw sockets above, a port below
# 1024), none over the host's.
ok "box a's network namespace is owned by its user namespace" python3 -c "
import fcntl, os, sys
ns = os.open('$PD_TMP/run/netns/a', os.O_RDONLY)
owner = fcntl.ioctl(ns, 0xb701)  # NS_GET_USERNS
pid = int(sys.argv[1])
sys.exit(0 if os.fstat(owner).st_ino == os.stat('/proc/%d/ns/user' % pid).st_ino != os.stat('/proc/self/ns/user').st_ino else 1)
" "$(pd_crun state a | python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])')"
ok "box root binds port 80 in it" pd_crun exec a sh -c 'nc -l -p 80 & p=$!; sleep 0.3; kill -0 $p && kill $p'
ok "box a resolves its gateway over ARP" bash -c "pd_crun exec a ping -c1 -W1 $GW >/dev/null 2>&1; pd_crun exec a cat /proc/net/arp | grep -qi '^$GW .* $macbr '"

# --- 0: the ports are pinned -------------------------------------------------
# port_locked PORT: isolated, learning and unicast flooding off, broadcast
# and multicast flooding on (ARP).
port_locked() {
	local d
	d=$(bridge -d link show dev "$1")
	for w in "learning off" "flood off" "mcast_flood on" "isolated on"; do
		grep -q " $w " <<<"$d " || { echo "$1: no '$w' in: $d"; return 1; }
	done
	if grep -q "bcast_flood" <<<"$d"; then
		grep -q " bcast_flood on " <<<"$d " || { echo "$1: broadcast flooding off: $d"; return 1; }
	fi
}
# static_on MAC PORT: the bridge's fdb has a static (forwarding) entry for
# MAC on PORT, and none elsewhere.
static_on() {
	local l
	l=$(bridge fdb show br "$BR" | grep -i "^$1 ")
	[ "$(grep -c . <<<"$l")" = 1 ] && grep -q "^$1 dev $2 master $BR static" <<<"$l" ||
		{ echo "entries for $1: $l"; return 1; }
}
# learned_on PORT: how many entries the bridge learnt on PORT.
learned_on() {
	bridge fdb show br "$BR" brport "$1" | grep -v 'permanent\|static' | grep -c .
}
ok "a's port is locked (no learning, no unicast flood, isolated)" port_locked "$porta"
ok "v's port is locked" port_locked "$portv"
ok "the fdb has a static entry for a's MAC on a's port" static_on "$maca" "$porta"
ok "the fdb has a static entry for v's MAC on v's port" static_on "$macv" "$portv"
ok "the bridge learnt nothing on a's port" same "$(learned_on "$porta")" 0
ok "the bridge learnt nothing on v's port" same "$(learned_on "$portv")" 0

# The bridge forgets what it learnt after 1 s of silence (the default is
# 300 s; this is the test's own bridge), then the host sends to v while a
# listens on its eth0 (promiscuous): a learnt entry would be gone and the
# bridge would flood v's frames to a.
hping -c 1 -W 2 "$ipv"
ip link set "$BR" type bridge ageing_time 100
sleep 3
nsenter --net="$PD_TMP/run/netns/a" "$FRAME" count eth0 5 dst "$macv" >"$PD_TMP/flooded" &
spy=$!
sleep 0.3
ok "v silent past the ageing time: the host still reaches it" hping -c 3 -i 1 -W 2 "$ipv"
wait $spy
ok "v silent past the ageing time: a received none of v's frames" same "$(cat "$PD_TMP/flooded")" 0
ok "after ageing, v's MAC is still on v's port" static_on "$macv" "$portv"
# A frame from the host to a MAC no port has: not flooded to box ports.
nsenter --net="$PD_TMP/run/netns/a" "$FRAME" count eth0 2 dst 02:70:de:ad:be:ef >"$PD_TMP/flooded" &
spy=$!
sleep 0.3
"$FRAME" udp "$BR" "$macbr" 02:70:de:ad:be:ef "$GW" "$ipv" 9995 5 10
wait $spy
ok "unicast to an unknown MAC from the host: not flooded to a" same "$(cat "$PD_TMP/flooded")" 0
ip link set "$BR" type bridge ageing_time 30000

# --- 1: another box's source MAC --------------------------------------------
# v's MAC from a's port, with a's own address (which the port allows): the
# bridge would learn v's MAC on a's port and send v's inbound frames to a.
nsenter --net="$PD_TMP/run/netns/a" "$FRAME" count eth0 4 dst "$macv" >"$PD_TMP/stolen" &
spy=$!
count_br 4 udp 9996
in_a udp eth0 "$macv" ff:ff:ff:ff:ff:ff "$ipa" "$GW" 9996 300 10 &
atk=$!
sleep 1
ok "forged source MAC: the bridge does not learn v's MAC on a's port" bash -c "! bridge fdb show br '$BR' | grep -qi '^$macv dev $porta '"
ok "forged source MAC: v keeps receiving its traffic" bash -c "busybox ping -c 5 -i 0.3 -w 3 '$ipv' | grep -q ' 5 packets received'"
wait $atk
counted
ok "forged source MAC: the frames never reach the host" same "$got" 0
wait $spy
ok "forged source MAC: a received none of v's frames" same "$(cat "$PD_TMP/stolen")" 0
ok "after the attack, v's MAC is still on v's port" bash -c "bridge fdb show br '$BR' | grep -qi '^$macv dev $portv '"
ok "after the attack, a's port has learnt only a's MAC" bash -c "[ \"\$(bridge fdb show br '$BR' brport '$porta' | grep -v permanent | grep -vi '^$maca ' | grep -v '^33:33\|^01:00' | wc -l)\" = 0 ]"
# The same through ARP: an ARP frame with v's MAC as its Ethernet source.
in_a arp eth0 "$macv" ff:ff:ff:ff:ff:ff 1 "$maca" "$ipa" 00:00:00:00:00:00 "$GW" 5 10
ok "forged source MAC in ARP: not learnt on a's port" bash -c "! bridge fdb show br '$BR' | grep -qi '^$macv dev $porta '"

# --- 2: gratuitous ARP ------------------------------------------------------
hping -c 1 -W 2 "$ipv" >/dev/null
hping -c 1 -W 2 "$ipa" >/dev/null
# Past the neighbour lock time (1 s): an update would now be taken.
sleep 1.5
ok "the host's entry for v is v's MAC" same "$(neigh_mac "$ipv")" "$macv"
in_a arp eth0 "$maca" ff:ff:ff:ff:ff:ff 1 "$maca" "$ipv" 00:00:00:00:00:00 "$ipv" 3 50
in_a arp eth0 "$maca" ff:ff:ff:ff:ff:ff 2 "$maca" "$ipv" ff:ff:ff:ff:ff:ff "$ipv" 3 50
ok "gratuitous ARP for v's address: the host's entry for v is unchanged" same "$(neigh_mac "$ipv")" "$macv"
# a's own address, with v's MAC as the sender: the host would send a's
# traffic to v's MAC (ARP's sender MAC is not the frame's source).
ok "the host's entry for a is a's MAC" same "$(neigh_mac "$ipa")" "$maca"
in_a arp eth0 "$maca" ff:ff:ff:ff:ff:ff 1 "$macv" "$ipa" 00:00:00:00:00:00 "$ipa" 3 50
in_a arp eth0 "$maca" "$macbr" 2 "$macv" "$ipa" "$macbr" "$GW" 3 50
ok "ARP with another box's sender MAC: the host's entry for a is unchanged" same "$(neigh_mac "$ipa")" "$maca"
ok "after the ARP attacks, v still answers" hping -c 2 -W 2 "$ipv"

# --- 3: forged IPv4 sources -------------------------------------------------
count_br 3 udp 9998
for src in "$ipv" "${PD_SUBNET%.0/24}.200" 192.0.2.77 0.0.0.0 "$GW"; do
	in_a udp eth0 "$maca" "$macbr" "$src" "$GW" 9998 5 10
done
counted
ok "forged IPv4 sources (another box, unused, outside, 0.0.0.0, the gateway): none arrive" same "$got" 0
# The same frames with a's address do arrive: the counter sees what passes.
count_br 2 udp 9998
in_a udp eth0 "$maca" "$macbr" "$ipa" "$GW" 9998 5 10
counted
ok "the same frames from a's own address arrive" same "$got" 5

# --- 4: other ethertypes ----------------------------------------------------
count_br 2 dst 33:33:00:00:00:01
in_a ip6 eth0 "$maca" 33:33:00:00:00:01 5 10
counted
ok "IPv6 from a box: none arrive" same "$got" 0

# --- a box that runs across a daemon restart, with another MAC -------------
# (as one started before MACs and ports were pinned): the daemon gives it
# its MAC and pins its port.
pd_stop
nsenter --net="$PD_TMP/run/netns/v" ip link set eth0 address 02:99:00:00:00:01
bridge link set dev "$portv" learning on flood on
bridge fdb del "$macv" dev "$portv" master
pd_start
ok "after a restart, a running box's eth0 has its pinned MAC again" same "$(mac_in v)" "$macv"
ok "after a restart, its port is locked again" port_locked "$portv"
ok "after a restart, the fdb has its static entry again" static_on "$macv" "$portv"
ok "after a restart, a's port is unchanged" static_on "$maca" "$porta"
ok "and it is reachable" hping -c 2 -W 2 "$ipv"

# --- a box stops, a box is deleted: nothing of theirs stays in the fdb ------
ok "box a stops" bash -c "echo stopped > '$A/state'"
ok "a's port is gone" bash -c "! ip link show '$porta' >/dev/null 2>&1"
ok "no fdb entry for a's MAC is left" bash -c "! bridge fdb show br '$BR' | grep -qi '^$maca '"
ok "box v is stopped and deleted" bash -c "echo stopped > '$V/state' && rmdir '$V'"
ok "no fdb entry for v's MAC is left" bash -c "! bridge fdb show br '$BR' | grep -qi '^$macv '"
ok "no box port is left on the bridge" same "$(bridge link show master "$BR" | grep -c .)" 0

pd_done
