#!/bin/bash
# Egress policies with names: the boxes' resolver and the policy matrix,
# against a fake internet the test builds itself (as test-net.sh): the
# daemon runs in a private "host" namespace whose default route leads to an
# "inet" namespace holding HTTP servers, a listener on 169.254.169.254 and
# a DNS server (dnsmasq) authoritative for the test's names, which logs
# every query it gets, so the test can tell that a refused lookup never
# left the host.
#
#   allowed.test   198.51.100.10      other.test (and *.other.test) 198.51.100.11
#   *.wild.test    198.51.100.12      (no name)  198.51.100.14, 203.0.113.10
#
# For each mode, from box a: the allowed domain, another domain, a wildcard
# match, an allowed network, another address, the metadata address, the
# host, box b, a query sent straight to the DNS server, a lookup of a
# denied name.
. "$(dirname "$0")/lib.sh"
require_root
command -v python3 >/dev/null || skip_all "needs python3"
command -v dnsmasq >/dev/null || skip_all "needs dnsmasq (scripts/install-deps)"

WEB="198.51.100.10 198.51.100.11 198.51.100.12 198.51.100.14 203.0.113.10 169.254.169.254"
DNS=198.51.100.53

if [ -z "${PD_NET_INSIDE:-}" ]; then
	tag=pdd$$
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
	pd_fake_serve "$HOSTNS" "/tmp/$tag-www" 8080 192.0.2.2
	PD_DNS_LOG=/tmp/$tag-www/dns.log
	ip netns exec "$INETNS" dnsmasq --keep-in-foreground --no-resolv --no-hosts \
		--bind-interfaces --listen-address=$DNS --port=53 --user=root --pid-file= \
		--host-record=allowed.test,198.51.100.10,2001:db8::10 --address=/other.test/198.51.100.11 \
		--address=/wild.test/198.51.100.12 --host-record=short.test,198.51.100.10 \
		--local-ttl=60 --log-queries --log-facility="$PD_DNS_LOG" >/dev/null 2>&1 &
	PD_FAKE_PIDS="$PD_FAKE_PIDS $!"
	pd_fake_wait "$INETNS" 7 && pd_fake_wait "$HOSTNS" 1
	PD_DNS_LOG=$PD_DNS_LOG PD_NET_INSIDE=1 nsenter --net="/run/netns/$HOSTNS" "$0"
	rc=$?
	cleanup_ns
	trap - EXIT
	ip netns list | grep -q "^$tag" && { echo "# namespaces left behind"; rc=1; }
	exit $rc
fi

PD_NETWORK=on PD_BRIDGE=pd-d$(($$ % 1000)) PD_SUBNET=10.202.$(($$ % 250)).0/24
PD_NFT_TABLE=paddock_d$$ PD_DNS_UPSTREAM=$DNS
export PD_NETWORK PD_BRIDGE PD_SUBNET PD_NFT_TABLE PD_DNS_UPSTREAM
pd_start_with_socket
PADDOCK=${PADDOCK:-$TOP_BUILDDIR/cli/paddock}
pd() { PADDOCK_CONFIG=$PD_TMP/cli.ini "$PADDOCK" --url "unix:$SOCK" "$@"; }
# hs [CURL-ARGS...] PATH: the tree over HTTP on the unix socket.
hs() { curl -sS --unix-socket "$SOCK" "${@:1:$#-1}" "http://paddock/v1/tree/${!#}"; }
export -f pd hs
export PADDOCK SOCK PD_TMP

A=$M/boxes/a
Bx=$M/boxes/b

# get BOX HOST[:PORT]: exit 0 when the box got a page (2 s limit).
get() {
	local host=${2%:*} port=80
	[ "$2" != "$host" ] && port=${2##*:}
	pd_crun exec "$1" sh -c "printf 'GET / HTTP/1.0\r\n\r\n' | nc -w 2 $host $port | head -n1 | grep -q ' 200 '" 2>/dev/null
}
# look BOX NAME [SERVER]: the box's lookup; prints the addresses, exit 0
# when there was one.
look() {
	pd_crun exec "$1" timeout 3 nslookup "$2" ${3:-} 2>/dev/null |
		sed -n '/^Name:/,$ s/^Address: *\([0-9.]*\)$/\1/p' | grep .
}
# refused BOX NAME: the box's resolver answered REFUSED.
refused() {
	pd_crun exec "$1" timeout 3 nslookup "$2" 2>&1 | grep -q REFUSED
}
# named BOX NAME: looks NAME up in the box, then fetches from the address.
named() {
	local ip
	ip=$(look "$1" "$2" | head -n1) && [ -n "$ip" ] && get "$1" "$ip"
}
upstream_saw() {
	grep -q "query\[A\] $1 " "$PD_DNS_LOG"
}
export -f get look refused named upstream_saw
export PD_DNS_LOG

mkdir "$A" "$Bx"
echo running >"$A/state"
echo running >"$Bx/state"
ipb=$(cat "$Bx/ip")
pd_crun exec b sh -c 'mkdir -p /tmp/w && echo hi > /tmp/w/index.html && httpd -p 8000 -h /tmp/w'
gw=${PD_SUBNET%.0/24}.1

ok "the box's resolv.conf names the resolver" \
	bash -c "pd_crun exec a cat /etc/resolv.conf | grep -qx 'nameserver $gw'"
ok "the resolv.conf is readable by the box's users" \
	bash -c "pd_crun exec a su -s /bin/sh nobody -c 'cat /etc/resolv.conf' 2>/dev/null | grep -q nameserver ||
		[ \"\$(stat -c %a '$PD_TMP/run/resolv.conf')\" = 644 ]"
ok "the resolv.conf is read-only in the box" \
	bash -c "! pd_crun exec a sh -c 'echo x > /etc/resolv.conf' 2>/dev/null"
ok "box b serves on :8000 (inside itself)" get b 127.0.0.1:8000

# common MODE: what holds in every mode.
common() {
	ok "$1: metadata address blocked" bash -c "! get a 169.254.169.254"
	ok "$1: the host blocked" bash -c "! get a 192.0.2.2:8080"
	ok "$1: the resolver's address serves nothing else" bash -c "! get a $gw:8080"
	ok "$1: box b unreachable" bash -c "! get a $ipb:8000"
	ok "$1: DNS straight to another server dropped" bash -c "! look a allowed.test $DNS"
}

# ---- allow-all
ok "allow-all: the allowed domain resolves and is reachable" named a allowed.test
ok "allow-all: another domain too" named a other.test
ok "allow-all: a wildcard's name too" named a x.wild.test
ok "allow-all: a network" get a 203.0.113.10
ok "allow-all: an address with no name" get a 198.51.100.14
ok "the upstream itself has an IPv6 address for allowed.test" \
	bash -c "timeout 3 busybox nslookup -type=aaaa allowed.test $DNS 2>/dev/null | grep -q '2001:db8::10'"
ok "allow-all: AAAA lookups get no address (IPv4 only)" \
	bash -c "out=\$(pd_crun exec a timeout 3 nslookup -type=aaaa allowed.test 2>&1) && ! grep -q '2001:db8' <<<\"\$out\" && grep -q '^Server:' <<<\"\$out\""
common allow-all

# ---- deny-all
echo deny-all >"$A/policy"
ok "deny-all: the allowed domain's lookup is refused" refused a allowed.test
ok "deny-all: its address is not reachable" bash -c "! get a 198.51.100.10"
ok "deny-all: a network is not reachable" bash -c "! get a 203.0.113.10"
ok "deny-all: a lookup never reaches upstream" \
	bash -c "refused a leak-deny.other.test && ! upstream_saw leak-deny.other.test"
common deny-all

# ---- allowlist
ok "allowlist with names, a wildcard and a network" \
	bash -c "printf 'allowlist\nallowed.test\n*.wild.test\n203.0.113.0/24\n' > '$A/policy'"
ok "allowlist: policy reads back canonical" \
	same "$(cat "$A/policy")" "$(printf 'allowlist\nallowed.test\n*.wild.test\n203.0.113.0/24')"
ok "allowlist: the allowed domain's address is closed before a lookup" \
	bash -c "! get a 198.51.100.10"
ok "allowlist: the allowed domain resolves and is reachable" named a allowed.test
ok "allowlist: upper case names match" bash -c "look a ALLOWED.Test >/dev/null"
ok "allowlist: another domain is refused" refused a other.test
ok "allowlist: its address is not reachable" bash -c "! get a 198.51.100.11"
ok "allowlist: a refused lookup never reaches upstream" \
	bash -c "refused a leak-list.other.test && ! upstream_saw leak-list.other.test"
ok "allowlist: a wildcard's subdomain resolves and is reachable" named a x.wild.test
ok "allowlist: the wildcard's own domain is refused" refused a wild.test
ok "allowlist: the listed network" get a 203.0.113.10
ok "allowlist: an address not listed" bash -c "! get a 198.51.100.14"
common allowlist
# tcpq BOX NAME-LABELS...: an A query over TCP to the resolver, built by
# hand (busybox has no DNS client for TCP); prints the reply's bytes in hex.
tcpq() {
	local box=$1 q='' len=16 l
	shift
	for l in "$@"; do
		q="$q\\x$(printf %02x ${#l})$l"
		len=$((len + 1 + ${#l}))
	done
	len=$((len + 1))
	pd_crun exec "$box" sh -c "printf '\\x00\\x$(printf %02x $len)\\x12\\x34\\x01\\x00\\x00\\x01\\x00\\x00\\x00\\x00\\x00\\x00${q}\\x00\\x00\\x01\\x00\\x01' |
		nc -w 2 $gw 53 | od -An -tx1" 2>/dev/null | tr -s ' \n' ' '
}
export -f tcpq
export gw
ok "allowlist: an allowed name over TCP: NOERROR with its address" \
	bash -c "r=\$(tcpq a allowed test) && [[ \"\$r\" =~ ' 12 34 8'.' '.'0 ' && \"\$r\" == *' c6 33 64 0a'* ]] || { echo \"# \$r\"; false; }"
ok "allowlist: another name over TCP: REFUSED" \
	bash -c "r=\$(tcpq a other test) && [[ \"\$r\" =~ ' 12 34 8'.' '.'5 ' ]] || { echo \"# \$r\"; false; }"
ok "allowlist: the answer is in the box's set with the record's lifetime" \
	bash -c "nft list set inet $PD_NFT_TABLE box_1_names | grep -Eq '198\.51\.100\.10 timeout (1m|60s)'"

# The set survives changes elsewhere: another box starting and stopping
# rebuilds nothing of a's.
mkdir "$M/boxes/c" && echo running >"$M/boxes/c/state"
ok "a's looked-up address survives another box's start" get a 198.51.100.10
echo stopped >"$M/boxes/c/state"
ok "... and its stop" get a 198.51.100.10

# Restart: the table and what a looked up stay in force.
pd_stop
ok "while the daemon is down: a still reaches its looked-up address" get a 198.51.100.10
ok "... and still not another" bash -c "! get a 198.51.100.14"
pd_start
ok "after restart: the looked-up address still reachable without a new lookup" \
	get a 198.51.100.10
ok "after restart: the resolver answers" named a allowed.test
ok "after restart: denied names still refused" refused a other.test

# A new allowlist drops the addresses of names it no longer lists.
ok "allowlist without allowed.test" bash -c "printf 'allowlist\nx.wild.test\n' > '$A/policy'"
ok "the dropped name's address is closed at once" bash -c "! get a 198.51.100.10"
ok "the dropped name is refused" refused a allowed.test
ok "an exact entry works like the wildcard did" named a x.wild.test
ok "allow-all again opens everything" \
	bash -c "echo allow-all > '$A/policy' && get a 198.51.100.14 && named a other.test"

# Bad input: nothing changes.
before=$(cat "$A/policy")
ok "a wildcard in the middle: EINVAL" write_expect EINVAL "$A/policy" $'allowlist\nfoo.*.test\n'
ok "a bare *: EINVAL" write_expect EINVAL "$A/policy" $'allowlist\n*\n'
ok "a name with a bad label: EINVAL" write_expect EINVAL "$A/policy" $'allowlist\n-bad.test\n'
ok "the error names the line" grep -q 'line 2' "$A/error"
ok "the old policy stays" same "$(cat "$A/policy")" "$before"

# ---- the CLI and HTTP
ok "paddock policy BOX allow ENTRY...: exit 0" pd policy a allow allowed.test 203.0.113.0/24
ok "paddock policy BOX prints it" \
	same "$(pd policy a)" "$(printf 'allowlist\nallowed.test\n203.0.113.0/24')"
ok "the CLI's allowlist is enforced: the name works" named a allowed.test
ok "... another is refused" refused a other.test
ok "paddock policy BOX deny-all" bash -c "pd policy a deny-all && ! get a 203.0.113.10"
pd policy a allow 'bad name!' >/dev/null 2>"$PD_TMP/pol.err"
ok "a bad entry from the CLI: exit 1" same "$?" 1
ok "... the server's reason with the line" grep -q 'line 2' "$PD_TMP/pol.err"
ok "... the policy is unchanged" same "$(pd policy a)" deny-all
ok "paddock new --policy allow:NAME,NET" \
	bash -c "pd new --name c2 --policy allow:allowed.test,203.0.113.0/24 >/dev/null"
ok "the new box runs under it" \
	bash -c "[ \"\$(cat '$M/boxes/c2/state')\" = running ] && named c2 allowed.test && refused c2 other.test && ! get c2 198.51.100.14"
ok "paddock new --policy deny-all" bash -c "pd new --name c3 --policy deny-all >/dev/null && ! get c3 203.0.113.10"
pd new --name c4 --policy allow:2001:db8::/32 >/dev/null 2>"$PD_TMP/new.err"
ok "paddock new with an IPv6 entry: exit 1, no box left" \
	bash -c "[ $? = 1 ] && grep -q 'IPv6 is not supported yet' '$PD_TMP/new.err' && [ ! -e '$M/boxes/c4' ]"
ok "HTTP PUT of a policy" \
	bash -c "hs -f -X PUT --data-binary \$'allowlist\n*.wild.test\n' boxes/a/policy >/dev/null"
ok "HTTP GET reads it back" same "$(hs boxes/a/policy)" "$(printf 'allowlist\n*.wild.test')"
ok "... and it is in force" bash -c "named a x.wild.test && refused a allowed.test"
code=$(hs -o "$PD_TMP/put.json" -w '%{http_code}' -X PUT --data-binary $'allowlist\n10.0.0.0/8\n1.2.3.4/33\n' boxes/a/policy)
ok "HTTP PUT of a bad policy: 400" same "$code" 400
ok "... with errno and the line in the body" \
	bash -c "grep -q EINVAL '$PD_TMP/put.json' && grep -q 'line 3' '$PD_TMP/put.json'"
ok "... the policy is unchanged" same "$(hs boxes/a/policy)" "$(printf 'allowlist\n*.wild.test')"
ok "the box's info has its policy and address" \
	bash -c "hs boxes/a/info | python3 -c 'import json,sys; i=json.load(sys.stdin); assert i[\"ip\"]==\"$(cat "$A/ip")\", i; assert \"wild.test\" in i[\"policy\"], i'"

rmdir "$A" "$Bx" "$M/boxes/c" "$M/boxes/c2" "$M/boxes/c3"
ok "no box chain left after the boxes are gone" \
	bash -c "! nft list table inet $PD_NFT_TABLE | grep -q 'chain box_'"
pd_done
