#!/bin/bash
# The fast paths of box networking keep their order:
#
#  - the resolver answers a box under an allowlist only once the answer's
#    addresses are in the box's nftables set, so a box that connects the
#    moment it reads the answer gets through: 300 names, each new (a new
#    address, a set update per answer), each connected to right after its
#    answer from a client in the box's network namespace; then the same
#    names again after the box's looked-up addresses were dropped (deny-all
#    and back), answered from the resolver's cache, which must put them
#    back before it answers; and names asked all at once (60 in flight,
#    with 20 names the allowlist does not cover among them): each allowed
#    answer's address is reachable the moment it is read, each other name is
#    refused and its address stays out of the set and unreachable;
#  - a box's link and rules are made while its container starts: when they
#    cannot be made (the bridge gone), the start fails with the reason and
#    leaves no container, namespace or port behind.
#
# Against a fake internet the test builds itself (as test-net-dns.sh): the
# daemon in a private "host" namespace routed to an "inet" namespace where
# dnsmasq answers h-198-18-X-Y.many.test with 198.18.X.Y and
# h-198-19-X-Y.other.test with 198.19.X.Y (TTL 60 s), and every address of
# 198.18.0.0/15 is local, with a TCP listener on port 8000.
. "$(dirname "$0")/lib.sh"
require_root
command -v python3 >/dev/null || skip_all "needs python3"
command -v dnsmasq >/dev/null || skip_all "needs dnsmasq (scripts/install-deps)"

DNS=198.51.100.53

if [ -z "${PD_NET_INSIDE:-}" ]; then
	tag=pdo$$
	trap pd_fake_net_down EXIT
	pd_fake_net "$tag" $DNS || skip_all "cannot make network namespaces"
	ip -n "$INETNS" route add local 198.18.0.0/15 dev lo || skip_all "cannot route 198.18.0.0/15"
	ip netns exec "$INETNS" dnsmasq --keep-in-foreground --no-resolv --no-hosts \
		--bind-interfaces --listen-address=$DNS --port=53 --user=root --pid-file= \
		--synth-domain=many.test,198.18.0.0/16,h- --synth-domain=other.test,198.19.0.0/16,h- \
		--local-ttl=60 >/dev/null 2>&1 &
	PD_FAKE_PIDS="${PD_FAKE_PIDS:-} $!"
	# Accepts and closes connections to any 198.18.0.0/16 address.
	ip netns exec "$INETNS" python3 -c '
import socket
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 8000))
s.listen(512)
while True:
    c, _ = s.accept()
    c.close()
' &
	PD_FAKE_PIDS="$PD_FAKE_PIDS $!"
	pd_fake_wait "$INETNS" 2 || { echo "Bail out! the fake internet did not start"; exit 1; }
	PD_NET_INSIDE=1 nsenter --net="/run/netns/$HOSTNS" "$0"
	rc=$?
	pd_fake_net_down
	trap - EXIT
	ip netns list | grep -q "^$tag" && { echo "# namespaces left behind"; rc=1; }
	exit $rc
fi

PD_NETWORK=on PD_BRIDGE=pd-o$(($$ % 1000)) PD_SUBNET=10.204.$(($$ % 250)).0/24
PD_NFT_TABLE=paddock_o$$ PD_DNS_UPSTREAM=$DNS
export PD_NETWORK PD_BRIDGE PD_SUBNET PD_NFT_TABLE PD_DNS_UPSTREAM
pd_start
gw=${PD_SUBNET%.0/24}.1

# The client: for names number FIRST..FIRST+COUNT-1 (h-198-18-X-Y.many.test,
# from 198.18.1.0 on), looks each up
# through the resolver (a hand-built query over UDP, no EDNS: cacheable) and
# connects to the answer's address on port 8000 at once. Prints "connected
# N refused M" and what went wrong with the first failure.
cat >"$PD_TMP/lookconnect.py" <<'PY'
import socket, struct, sys

server, first, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])

def query(qid, name):
    q = struct.pack(">HHHHHH", qid, 0x0100, 1, 0, 0, 0)
    for label in name.split("."):
        q += bytes([len(label)]) + label.encode()
    return q + b"\0" + struct.pack(">HH", 1, 1)

def answer_a(m):
    flags, qd, an = struct.unpack(">HHH", m[2:8])
    if flags & 15:
        return None, "rcode %d" % (flags & 15)
    o = 12
    for _ in range(qd):
        while m[o]:
            o += 1 + m[o]
        o += 5
    for _ in range(an):
        o += 2 if m[o] >= 0xC0 else len(m)  # the owner: a pointer to the question
        t, _c, _ttl, n = struct.unpack(">HHIH", m[o:o + 10])
        o += 10
        if t == 1 and n == 4:
            return socket.inet_ntoa(m[o:o + 4]), None
        o += n
    return None, "no A record"

u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.connect((server, 53))
u.settimeout(3)
ok = bad = 0
why = ""

def connects(addr):
    c = socket.socket()
    c.settimeout(2)
    try:
        c.connect((addr, 8000))
        return None
    except OSError as e:
        return str(e)
    finally:
        c.close()

if len(sys.argv) > 4:
    # Burst: count allowed names and int(argv[4]) names of other.test (not
    # allowed), all sent before any answer is read; each allowed answer's
    # address is connected to as soon as it is read. Prints "connected N
    # refused M denied D reached R": D other.test lookups were refused, R
    # of their addresses reachable.
    others = int(sys.argv[4])
    want = {}
    for i in range(first, first + count):
        a = "198.18.%d.%d" % (1 + i // 256, i % 256)
        want[i] = (a, "h-%s.many.test" % a.replace(".", "-"), True)
    for j in range(others):
        a = "198.19.1.%d" % j
        want[30000 + j] = (a, "h-%s.other.test" % a.replace(".", "-"), False)
    for qid, (a, name, _) in want.items():
        u.send(query(qid, name))
    denied = reached = 0
    try:
        while want:
            m = u.recv(4096)
            qid = struct.unpack(">H", m[:2])[0]
            if qid not in want:
                continue
            a, name, allowed = want.pop(qid)
            addr, err = answer_a(m)
            if not allowed:
                denied += err == "rcode 5"
                continue
            e = connects(addr) if addr == a else "%s: %s" % (name, err or addr)
            if e:
                bad += 1
                why = why or "%s: %s" % (a, e)
            else:
                ok += 1
    except socket.timeout:
        bad += len(want)
        why = why or "%d not answered" % len(want)
    for j in range(others):
        reached += connects("198.19.1.%d" % j) is None
    print("connected %d refused %d denied %d reached %d %s" % (ok, bad, denied, reached, why))
    sys.exit(0)

for i in range(first, first + count):
    want = "198.18.%d.%d" % (1 + i // 256, i % 256)
    name = "h-%s.many.test" % want.replace(".", "-")
    u.send(query(i, name))
    m = u.recv(4096)
    addr, err = answer_a(m)
    if addr != want:
        bad += 1
        why = why or "%s: %s" % (name, err or addr)
        continue
    c = socket.socket()
    c.settimeout(2)
    try:
        c.connect((addr, 8000))
        ok += 1
    except OSError as e:
        bad += 1
        why = why or "%s: %s" % (addr, e)
    c.close()
print("connected %d refused %d %s" % (ok, bad, why))
PY

B=$M/boxes/o
mkdir "$B" && echo running >"$B/state"
printf 'allowlist\n*.many.test\n' >"$B/policy"
# lookconnect FIRST COUNT: the client in box o's network namespace; exit 0
# when every lookup was answered and every connection made.
lookconnect() {
	local out
	out=$(nsenter --net="$PD_TMP/run/netns/o" python3 "$PD_TMP/lookconnect.py" "$gw" "$1" "$2")
	echo "# $out"
	[[ "$out" == "connected $2 refused 0 "* ]]
}
ok "a name not looked up is not reachable" \
	bash -c "! nsenter --net='$PD_TMP/run/netns/o' timeout 3 bash -c 'echo > /dev/tcp/198.18.1.0/8000' 2>/dev/null"
ok "each new name's address is reachable right after its answer (300 names)" lookconnect 0 300
ok "deny-all drops the looked-up addresses" \
	bash -c "echo deny-all > '$B/policy' && ! nft list set inet $PD_NFT_TABLE box_1_names | grep -q 198.18.1.5"
printf 'allowlist\n*.many.test\n' >"$B/policy"
ok "... and they stay dropped under the allowlist again" \
	bash -c "! nsenter --net='$PD_TMP/run/netns/o' timeout 3 bash -c 'echo > /dev/tcp/198.18.1.5/8000' 2>/dev/null"
ok "answers from the cache put the addresses back before they leave (300 names)" \
	lookconnect 0 300
burst() {
	local out
	out=$(nsenter --net="$PD_TMP/run/netns/o" python3 "$PD_TMP/lookconnect.py" "$gw" 1000 40 20)
	echo "# $out"
	[[ "$out" == "connected 40 refused 0 denied 20 reached 0 "* ]]
}
ok "names asked at once: each allowed one reachable right after its answer, the others refused and unreachable" burst
ok "... and the other names' addresses are not in the set" \
	bash -c "! nft list set inet $PD_NFT_TABLE box_1_names | grep -q '198\.19\.'"

# The link is made while the container starts: a failure there is the
# start's, and nothing is left.
ip link del "$PD_BRIDGE"
mkdir "$M/boxes/nb"
ok "a start whose link cannot be made fails" bash -c "! echo running > '$M/boxes/nb/state'"
ok "... with the reason" grep -q "no bridge $PD_BRIDGE" "$M/boxes/nb/error"
ok "... and the box is not running" test "$(cat "$M/boxes/nb/state")" = created
ok "... no container left" bash -c "! pd_crun state nb >/dev/null 2>&1"
ok "... no namespace left" test ! -e "$PD_TMP/run/netns/nb"
ok "... no port left" bash -c "! ip link show '${PD_BRIDGE}v2' >/dev/null 2>&1"
ok "... no rules left" bash -c "! nft list table inet $PD_NFT_TABLE | grep -q 'chain box_2'"
pd_stop
pd_start
ok "after a restart (the bridge made again) it starts" \
	bash -c "echo running > '$M/boxes/nb/state' && test -n \"\$(cat '$M/boxes/nb/ip')\""
rmdir "$M/boxes/nb" "$B"
pd_done
