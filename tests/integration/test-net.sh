#!/bin/bash
# Box networking against a fake internet the test builds itself: the whole
# run (daemon, bridge, nftables table, boxes) lives in a private network
# namespace ("host") whose default route leads through a veth to a second
# namespace ("inet") holding HTTP servers on 198.51.100.10 and
# 203.0.113.10 and a listener on 169.254.169.254. No traffic leaves these
# namespaces; deleting them at the end removes every link and table.
. "$(dirname "$0")/lib.sh"
require_root
command -v python3 >/dev/null || skip_all "needs python3"

if [ -z "${PD_NET_INSIDE:-}" ]; then
	# Outer half: make the namespaces, then run this script again inside.
	tag=pdn$$
	cleanup_ns() {
		pd_fake_net_down
	}
	trap cleanup_ns EXIT
	pd_fake_net "$tag" 198.51.100.10 203.0.113.10 169.254.169.254 ||
		skip_all "cannot make network namespaces"
	mkdir -p "/tmp/$tag-www" && head -c 20000000 /dev/zero >"/tmp/$tag-www/big" && echo hello >"/tmp/$tag-www/index.html"
	pd_fake_serve "$INETNS" "/tmp/$tag-www" 80 198.51.100.10 203.0.113.10 169.254.169.254
	# A host service the boxes must not reach.
	pd_fake_serve "$HOSTNS" "/tmp/$tag-www" 8080 192.0.2.2
	pd_fake_wait "$INETNS" 3 && pd_fake_wait "$HOSTNS" 1
	# nsenter, not `ip netns exec`: that one remounts /sys, hiding the
	# cgroup mounts crun needs.
	PD_NET_INSIDE=1 nsenter --net="/run/netns/$HOSTNS" "$0"
	rc=$?
	rm -rf "/tmp/$tag-www"
	cleanup_ns
	trap - EXIT
	ip netns list | grep -q "^$tag" && { echo "# namespaces left behind"; rc=1; }
	exit $rc
fi

PD_NETWORK=on PD_BRIDGE=pd-n$(($$ % 1000)) PD_SUBNET=10.201.$(($$ % 250)).0/24 PD_NFT_TABLE=paddock_n$$
export PD_NETWORK PD_BRIDGE PD_SUBNET PD_NFT_TABLE
pd_start

A=$M/boxes/a
Bx=$M/boxes/b
# fetch BOX URL: exit 0 when the box got the page (2 s limit). busybox nc,
# not wget: the static busybox's wget looks the "http" service up through
# NSS, which crashes in a static binary on an image without NSS modules.
fetch() {
	local hostport=${2#http://} path
	path=/${hostport#*/}
	hostport=${hostport%%/*}
	local host=${hostport%:*} port=80
	[ "$hostport" != "$host" ] && port=${hostport##*:}
	pd_crun exec "$1" sh -c "printf 'GET $path HTTP/1.0\r\n\r\n' | nc -w 2 $host $port | head -n1 | grep -q ' 200 '" 2>/dev/null
}
export -f fetch

mkdir "$A" "$Bx"
ok "a created box has no address" same "$(cat "$A/ip")" ""
ok "policy starts allow-all" same "$(cat "$A/policy")" allow-all
ok "box a starts" bash -c "echo running > '$A/state'"
[ "$(cat "$A/state")" = running ] || diag "start: $(cat "$A/error")"
ok "box b starts" bash -c "echo running > '$Bx/state'"
ipa=$(cat "$A/ip")
ipb=$(cat "$Bx/ip")
ok "a running box has an address in the subnet" bash -c "[[ '$ipa' == ${PD_SUBNET%.0/24}.* ]]"
ok "two boxes have different addresses" test "$ipa" != "$ipb"
ok "the box has eth0 with its address" bash -c "pd_crun exec a ip -4 addr show eth0 2>/dev/null | grep -q '$ipa/' || pd_crun exec a cat /proc/net/fib_trie | grep -q '$ipa'"
ok "allow-all: a fake host is reachable" fetch a http://198.51.100.10/
ok "metadata address blocked" bash -c "! fetch a http://169.254.169.254/"
ok "the host's own address blocked" bash -c "! fetch a http://192.0.2.2:8080/"
ok "the bridge address blocked (no DNS server there either)" bash -c "! fetch a http://${PD_SUBNET%.0/24}.1:8080/"
ok "another box unreachable" bash -c "! pd_crun exec a ping -c1 -W1 $ipb >/dev/null 2>&1"

# A long download (rate-limited by the reader) stays up across deny-all.
pd_crun exec a sh -c "printf 'GET /big HTTP/1.0\r\n\r\n' | nc 198.51.100.10 80 | (sleep 2; wc -c) > /tmp/dl" &
dl=$!
# Connected to port 80 (0050) before the policy changes: ESTABLISHED (01),
# or FIN_WAIT1/2 (04, 05) once nc has sent its request and shut its side.
wait_for 20 bash -c "pd_crun exec a cat /proc/net/tcp | awk '\$3 ~ /:0050\$/ && \$4 ~ /^0[145]\$/' | grep -q ." ||
	diag "the download did not connect"
ok "deny-all is accepted" bash -c "echo deny-all > '$A/policy'"
ok "policy reads deny-all" same "$(cat "$A/policy")" deny-all
ok "deny-all: a new connection is refused" bash -c "! fetch a http://198.51.100.10/"
wait $dl
ok "deny-all: the established download finished (all 20 MB)" bash -c "[ \"\$(pd_crun exec a cat /tmp/dl | tr -d ' ')\" -gt 20000000 ]"
ok "box b keeps allow-all" fetch b http://203.0.113.10/

ok "allowlist with a network" bash -c "printf 'allowlist\n198.51.100.0/24\n' > '$A/policy'"
ok "allowlist: the listed network is reachable" fetch a http://198.51.100.10/
ok "allowlist: another address is not" bash -c "! fetch a http://203.0.113.10/"
ok "allowlist: metadata still blocked" bash -c "printf 'allowlist\n0.0.0.0/0\n' > '$A/policy' && ! fetch a http://169.254.169.254/"

before=$(cat "$A/policy")
ok "bad entry: EINVAL" write_expect EINVAL "$A/policy" $'allowlist\n10.0.0.0/8\nnot a host\n'
ok "error names the line" grep -q 'line 3' "$A/error"
ok "IPv6 entry refused" write_expect EINVAL "$A/policy" $'allowlist\n2001:db8::/32\n'
ok "error says IPv6 is not supported" grep -q 'IPv6 is not supported yet' "$A/error"
ok "empty allowlist: EINVAL" write_expect EINVAL "$A/policy" $'allowlist\n'
ok "1001 entries: EINVAL" write_expect EINVAL "$A/policy" "$(echo allowlist; for i in $(seq 0 1000); do echo 10.$((i / 256)).$((i % 256)).0/24; done)"
ok "the old policy stays" same "$(cat "$A/policy")" "$before"

echo deny-all >"$A/policy"
pd_stop
ok "rules stay while the daemon is down" bash -c "nft list table inet $PD_NFT_TABLE >/dev/null && ! fetch a http://198.51.100.10/"
pd_start
ok "after restart: policy kept" same "$(cat "$A/policy")" deny-all
ok "after restart: address kept" same "$(cat "$A/ip")" "$ipa"
ok "after restart: deny-all still enforced" bash -c "! fetch a http://198.51.100.10/"
ok "after restart: b still reaches the fake host" fetch b http://203.0.113.10/

# box_1 is a's chain and sets (a is the first box made).
no_rules_of_a() {
	! nft list table inet "$PD_NFT_TABLE" | grep -qE "box_1([^0-9]|\$)" &&
		! nft list table bridge "$PD_NFT_TABLE" | grep -q "\"${PD_BRIDGE}v1\""
}
ok "the table was deleted behind the daemon: a policy write rebuilds it" bash -c "nft delete table inet $PD_NFT_TABLE && echo allow-all > '$Bx/policy' && nft list chain inet $PD_NFT_TABLE from_boxes >/dev/null"
ok "after the rebuild: b reaches the fake host, a still refused" bash -c "fetch b http://203.0.113.10/ && ! fetch a http://198.51.100.10/"
ok "a fetch under allow-all leaves a tracked connection of box a" \
	bash -c "echo allow-all > '$A/policy' && fetch a http://198.51.100.10/ && grep -q 'src=$ipa ' /proc/net/nf_conntrack"
echo deny-all >"$A/policy"
ok "stop removes the box's veth" bash -c "echo stopped > '$A/state' && ! ip link show ${PD_BRIDGE}v1 >/dev/null 2>&1"
ok "a stopped box has no address" same "$(cat "$A/ip")" ""
ok "stop drops the box's tracked connections (its address goes to the next box)" \
	bash -c "! grep -q 'src=$ipa ' /proc/net/nf_conntrack"
ok "stop leaves no chain, set or port entry of the box" no_rules_of_a
ok "start/stop cycles leave nothing behind" bash -c "for i in 1 2; do echo running > '$A/state' && nft list chain inet $PD_NFT_TABLE box_1 >/dev/null && echo stopped > '$A/state' || exit 1; done"
ok "after the cycles: no chain, set or port entry of the box" no_rules_of_a
ok "after the cycles: b still reaches the fake host" fetch b http://203.0.113.10/
# A flow other than TCP meets a new policy at its next packet: a ping
# that runs on under allow-all gets no answer once deny-all is written.
replies() { grep -c 'bytes from' "$PD_TMP/ping.out"; }
pd_crun exec b ping -i 0.2 -c 40 -W 1 203.0.113.10 >"$PD_TMP/ping.out" 2>&1 &
pingpid=$!
answered() { [ "$(replies)" -ge 3 ]; }
wait_for 5 answered
ok "a ping running under allow-all gets answers" test "$(replies)" -ge 3
echo deny-all >"$Bx/policy"
sleep 0.5
n1=$(replies)
sleep 2
ok "deny-all at once: that same ping gets no answer any more" same "$(replies)" "$n1"
kill "$pingpid" 2>/dev/null
wait "$pingpid" 2>/dev/null
echo allow-all >"$Bx/policy"
ok "rmdir removes b's link and namespace" bash -c "rmdir '$Bx' && ! ip link show ${PD_BRIDGE}v2 >/dev/null 2>&1 && [ ! -e '$PD_TMP/run/netns/b' ]"
pd_done
