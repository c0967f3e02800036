#!/bin/bash
# dns.sh - the boxes' resolver: lookup latency and throughput through it
# against the same lookups sent straight to the upstream server.
#
# Like net.sh, the whole run lives in network namespaces the script makes:
# the daemon in a "host" namespace routed to an "inet" namespace holding a
# dnsmasq authoritative for the test's names (allowed.test = 198.51.100.10,
# and synthesized names h-198-18-X-Y.many.test = 198.18.X.Y, TTL 60 s), the
# daemon's dns_upstream. No traffic leaves them.
#
# The client is a python3 script (stdlib only, hand-built queries over UDP)
# that checks every answer (NOERROR and the expected A record):
#
#   - sequential: BENCH_K (2000) A queries one after another, after
#     BENCH_WARMUP (50) untimed ones; median and p99 latency in µs;
#   - burst: BENCH_BURST (1500) queries with BENCH_INFLIGHT (32) in flight
#     on one socket; queries answered per second.
#
# BENCH_ROUNDS (3) rounds, each side once per round with the order of the
# sides rotated; each figure is the median of the rounds.
#
# Sides, in this order:
#
#   direct          from the daemon's namespace straight to dnsmasq,
#                   allowed.test (the baseline)
#   allow-all       from box "open" (allow-all) to its resolver (the bridge
#                   address), allowed.test: the lookup is forwarded as is
#   allowlist       from box "list" (allowlist: allowed.test) to its
#                   resolver: the answer's A record goes into the box's
#                   nftables set before the reply, but only when that would
#                   extend the element's timeout (the daemon keeps time in
#                   seconds), so about one set update a second
#   direct-new      straight to dnsmasq, every query a different synthesized
#                   name (the baseline of the next side)
#   allowlist-new   from box "freshR" (allowlist: *.many.test; one box per
#                   round), every query a different name with a new
#                   address: one nftables set update per answer, the most
#                   expensive path
#   relay-new       the floor under allowlist-new: the same names from box
#                   "open" through dns-relay.c (built by this script), a
#                   bare C relay in the resolver's place (the bridge
#                   address, port 5300, opened in the daemon's table for
#                   the run) that passes queries and replies as they are on
#                   one kept upstream socket: the two extra hops any
#                   forwarder at the bridge pays, and nothing else (no
#                   target; its ratio to direct-new is printed)
#
# The box sides run the client in the box's network namespace
# (nsenter --net=RUN/netns/BOX), so the query's source address is the
# box's and the resolver serves it. Ratios: box side / its direct baseline
# for latency, and the same for queries/s. Targets (reported, never a
# failure): queries/s >= 0.8 of the direct side's, and allowlist-new's
# latency <= 2 times direct-new's. A slow machine never makes it fail, a
# wrong or missing answer does.
#
# The client sends plain queries (no EDNS), as glibc's and musl's resolvers
# do by default: after the first, the resolver answers the fixed-name sides
# from its cache (per box, for the record's TTL); allowlist-new asks a new
# name every time, so it always goes upstream and updates the set.
#
# Needs root, a built tree, python3, dnsmasq; prints a block and RESULT
# lines.

set -u
export LC_ALL=C
BENCH_NAME=dns
BENCH_TARGET=nan
. "$(cd "$(dirname "$0")" && pwd)/common.sh"

K=${BENCH_K:-2000}
WARM=${BENCH_WARMUP:-50}
BURST=${BENCH_BURST:-1500}
ROUNDS=${BENCH_ROUNDS:-3}
INFLIGHT=${BENCH_INFLIGHT:-32}
DNS=198.51.100.53

# A box keeps at most 4096 looked-up addresses: allowlist-new uses a new
# one per query, and there are 65536 synthesized names.
PER_ROUND=$((K + WARM + BURST))
if [ $PER_ROUND -gt 4000 ] || [ $((PER_ROUND * ROUNDS)) -gt 65536 ] || [ "$ROUNDS" -lt 1 ]; then
	echo "dns.sh: needs BENCH_K + BENCH_WARMUP + BENCH_BURST <= 4000 (a box's looked-up addresses), that times BENCH_ROUNDS <= 65536, BENCH_ROUNDS >= 1" >&2
	exit 2
fi

if [ -z "${PD_NET_INSIDE:-}" ]; then
	require_root
	command -v python3 >/dev/null || skip_all "needs python3"
	command -v dnsmasq >/dev/null || skip_all "needs dnsmasq (scripts/install-deps)"
	tag=pdq$$
	trap pd_fake_net_down EXIT
	pd_fake_net "$tag" $DNS || bench_broken "cannot make network namespaces"
	ip netns exec "$INETNS" dnsmasq --keep-in-foreground --no-resolv --no-hosts \
		--bind-interfaces --listen-address=$DNS --port=53 --user=root --pid-file= \
		--host-record=allowed.test,198.51.100.10 --synth-domain=many.test,198.18.0.0/16,h- \
		--local-ttl=60 >/dev/null 2>&1 &
	PD_FAKE_PIDS="${PD_FAKE_PIDS:-} $!"
	pd_fake_wait "$INETNS" 1 || bench_broken "dnsmasq did not start"
	PD_NET_INSIDE=1 nsenter --net="/run/netns/$HOSTNS" "$0"
	rc=$?
	pd_fake_net_down
	trap - EXIT
	exit $rc
fi

PD_NETWORK=on PD_BRIDGE=pq$(($$ % 10000)) PD_SUBNET=10.203.$(($$ % 250)).0/24
PD_NFT_TABLE=paddock_q$$ PD_DNS_UPSTREAM=$DNS
export PD_NETWORK PD_BRIDGE PD_SUBNET PD_NFT_TABLE PD_DNS_UPSTREAM
bench_start
gw=${PD_SUBNET%.0/24}.1

# The client. seq: prints "median_us p99_us mean_us answered lost"; burst:
# prints "qps median_us answered lost" (median latency under load). Exits 1 on a wrong answer (and
# says which), or when nothing was answered.
cat >"$PD_TMP/dnsq.py" <<'PY'
import os, random, select, socket, statistics, struct, sys, time

mode, server, names, start, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
warm = int(sys.argv[6])
inflight = int(sys.argv[7]) if mode == "burst" else 1
TIMEOUT = 2.0

def name_of(i):
    """The name and the address it must resolve to for query number i."""
    if names == "fixed":
        return "allowed.test", "198.51.100.10"
    a = "198.18.%d.%d" % ((i >> 8) & 255, i & 255)
    return "h-%s.many.test" % a.replace(".", "-"), a

def query(qid, name):
    q = struct.pack(">HHHHHH", qid, 0x0100, 1, 0, 0, 0)
    for label in name.split("."):
        q += bytes([len(label)]) + label.encode()
    return q + b"\0" + struct.pack(">HH", 1, 1)

def skip_name(m, o):
    while True:
        n = m[o]
        if n >= 0xC0:
            return o + 2
        if n == 0:
            return o + 1
        o += 1 + n

def check(m, want):
    """None if m is NOERROR with an A record want, else why not."""
    flags, qd, an = struct.unpack(">HHH", m[2:8])
    if not flags & 0x8000:
        return "not a reply"
    if flags & 15:
        return "rcode %d" % (flags & 15)
    o = 12
    for _ in range(qd):
        o = skip_name(m, o) + 4
    for _ in range(an):
        o = skip_name(m, o)
        t, _c, _ttl, n = struct.unpack(">HHIH", m[o:o + 10])
        o += 10
        if t == 1 and n == 4 and socket.inet_ntoa(m[o:o + 4]) == want:
            return None
        o += n
    return "no A record %s" % want

def fail(why):
    print("wrong answer: %s" % why, file=sys.stderr)
    sys.exit(1)

s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.connect((server, int(os.environ.get("DNSQ_PORT", "53"))))
base = random.randrange(1 << 16)

if mode == "seq":
    s.settimeout(TIMEOUT)
    lat, lost = [], 0
    for i in range(start, start + warm + count):
        name, want = name_of(i)
        qid = (base + i) & 0xFFFF
        q = query(qid, name)
        t0 = time.perf_counter_ns()
        s.send(q)
        try:
            while True:
                m = s.recv(4096)
                if struct.unpack(">H", m[:2])[0] == qid:
                    break
        except socket.timeout:
            lost += 1
            continue
        t1 = time.perf_counter_ns()
        why = check(m, want)
        if why:
            fail("%s: %s" % (name, why))
        if i >= start + warm:
            lat.append((t1 - t0) / 1000)
    if not lat:
        fail("no answer at all")
    lat.sort()
    p99 = lat[min(len(lat) - 1, int(round(0.99 * (len(lat) - 1))))]
    print("%.1f %.1f %.1f %d %d" % (statistics.median(lat), p99, statistics.mean(lat), len(lat), lost))
    sys.exit(0)

# burst: up to inflight queries outstanding on one socket.
s.setblocking(False)
pending = {}  # id -> (send time, want, name)
nxt, end, lat, lost = start, start + count, [], 0
t_start = time.perf_counter()
while nxt < end or pending:
    while nxt < end and len(pending) < inflight:
        name, want = name_of(nxt)
        qid = (base + nxt) & 0xFFFF
        s.send(query(qid, name))
        pending[qid] = (time.perf_counter_ns(), want, name)
        nxt += 1
    r, _, _ = select.select([s], [], [], 0.1)
    now = time.perf_counter_ns()
    if r:
        while True:
            try:
                m = s.recv(4096)
            except BlockingIOError:
                break
            p = pending.pop(struct.unpack(">H", m[:2])[0], None)
            if p is None:
                continue
            why = check(m, p[1])
            if why:
                fail("%s: %s" % (p[2], why))
            lat.append((now - p[0]) / 1000)
    for qid in [k for k, p in pending.items() if now - p[0] > TIMEOUT * 1e9]:
        del pending[qid]
        lost += 1
elapsed = time.perf_counter() - t_start
if not lat:
    fail("no answer at all")
print("%.0f %.1f %d %d" % (len(lat) / elapsed, statistics.median(lat), len(lat), lost))
PY

# Box "open" allow-all, "list" allowlist allowed.test, "fresh1"... (one
# per round) allowlist *.many.test.
boxes="open list"
for r in $(seq 1 "$ROUNDS"); do boxes="$boxes fresh$r"; done
for b in $boxes; do
	if ! { mkdir "$M/boxes/$b" && echo running >"$M/boxes/$b/state"; }; then
		bench_broken "cannot start box $b: $(cat "$M/boxes/$b/error" 2>/dev/null)"
	fi
	case $b in
	list) printf 'allowlist\nallowed.test\n' ;;
	fresh*) printf 'allowlist\n*.many.test\n' ;;
	*) continue ;;
	esac >"$M/boxes/$b/policy" || bench_broken "policy of $b: $(cat "$M/boxes/$b/error")"
done
[ -e "$PD_TMP/run/netns/open" ] || bench_broken "no $PD_TMP/run/netns/open"

# The bare relay (relay-new), on the bridge address, port 5300, which the
# daemon's table is made to let in from the boxes for this run.
cc -O2 -o "$PD_TMP/dns-relay" "$BENCH_DIR/dns-relay.c" 2>"$PD_TMP/cc.log" ||
	bench_broken "cannot build dns-relay.c (a C compiler is needed): $(cat "$PD_TMP/cc.log")"
nft insert rule inet "$PD_NFT_TABLE" from_boxes_to_host ip daddr "$gw" udp dport 5300 accept ||
	bench_broken "cannot open port 5300 for the relay"
"$PD_TMP/dns-relay" "$gw" 5300 $DNS 53 &
relay_pid=$!
stop_relay() { kill "$relay_pid" 2>/dev/null; wait "$relay_pid" 2>/dev/null; }
bench_on_exit stop_relay

# run ROUND SIDE MODE ARGS...: the client for one side; its line is
# appended to $PD_TMP/SIDE.MODE.
sides="direct allow-all allowlist direct-new allowlist-new relay-new"
run() {
	local ns='' server=$gw names=fixed round=$1 side=$2 mode=$3 port=53
	shift 3
	case $side in
	direct) server=$DNS ;;
	allow-all) ns=open ;;
	allowlist) ns=list ;;
	direct-new) server=$DNS names=synth ;;
	allowlist-new) ns=fresh$round names=synth ;;
	relay-new) ns=open names=synth port=5300 ;;
	esac
	if [ -n "$ns" ]; then
		DNSQ_PORT=$port nsenter --net="$PD_TMP/run/netns/$ns" \
			python3 "$PD_TMP/dnsq.py" "$mode" "$server" $names "$@"
	else
		python3 "$PD_TMP/dnsq.py" "$mode" "$server" $names "$@"
	fi >>"$PD_TMP/$side.$mode" || bench_broken "$side ($mode): the lookups failed"
}
# The -new sides of round r use names r * PER_ROUND onwards.
for r in $(seq 1 "$ROUNDS"); do
	# shellcheck disable=SC2086
	set -- $sides
	order=("${@:r % $# + 1}" "${@:1:r % $#}")
	base=$(((r - 1) * PER_ROUND))
	for side in "${order[@]}"; do
		run "$r" "$side" seq "$base" "$K" "$WARM"
	done
	for side in "${order[@]}"; do
		run "$r" "$side" burst $((base + WARM + K)) "$BURST" 0 "$INFLIGHT"
	done
	# The set updates are real: the round's last address is in its box's set.
	last=$((base + PER_ROUND - 1))
	last_addr=198.18.$(((last >> 8) & 255)).$((last & 255))
	nft list table inet "$PD_NFT_TABLE" | grep -q "$last_addr" ||
		bench_broken "$last_addr is not in the table after allowlist-new's lookups"
done

# get SIDE MODE FIELD [DECIMALS]: the median over the rounds of field
# FIELD (1-based) of the side's client lines.
get() {
	local med
	cut -d' ' -f"$3" "$PD_TMP/$1.$2" >"$PD_TMP/field"
	read -r med _ < <(bench_stats "$PD_TMP/field")
	printf '%.*f' "${4:-1}" "$med"
}
# lost SIDE MODE FIELD: the sum over the rounds.
lost() {
	awk -v f="$3" '{ n += $f } END { print n + 0 }' "$PD_TMP/$1.$2"
}
base_of() {
	case $1 in
	*-new) echo direct-new ;;
	*) echo direct ;;
	esac
}

printf 'boxes'"'"' resolver vs straight to the upstream; load %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
bench_build_note
printf '  %-14s %11s %11s %8s %6s %12s %11s %8s %6s\n' side "median µs" "p99 µs" ratio lost \
	"queries/s" "median µs" ratio lost
for side in $sides; do
	b=$(base_of "$side")
	lr=$(bench_ratio "$(get "$side" seq 1 3)" "$(get "$b" seq 1 3)")
	qr=$(bench_ratio "$(get "$side" burst 1 3)" "$(get "$b" burst 1 3)")
	[ "$side" = "$b" ] && lr=- qr=-
	printf '  %-14s %11s %11s %8s %6s %12s %11s %8s %6s\n' "$side" \
		"$(get "$side" seq 1)" "$(get "$side" seq 2)" "$lr" "$(lost "$side" seq 5)" \
		"$(get "$side" burst 1 0)" "$(get "$side" burst 2)" "$qr" "$(lost "$side" burst 4)"
done
echo "  (medians of $ROUNDS rounds; sequential: $K lookups after $WARM; burst: $BURST lookups,"
echo "   $INFLIGHT in flight; ratios: box / its direct side)"
# allowlist-new against the floor: what the resolver itself adds.
echo "  allowlist-new / relay-new: latency $(bench_ratio "$(get allowlist-new seq 1 3)" "$(get relay-new seq 1 3)"), queries/s $(bench_ratio "$(get allowlist-new burst 1 3)" "$(get relay-new burst 1 3)")"
# Targets: queries/s at least 0.8 of the upstream's on every side, and the
# latency of a name new to an allowlist at most twice the upstream's.
for side in allow-all allowlist allowlist-new relay-new; do
	b=$(base_of "$side")
	n=${side//-/_}
	lt=nan qt=0.8
	[ "$side" = allowlist-new ] && lt=2
	[ "$side" = relay-new ] && qt=nan
	echo "RESULT dns_${n}_us=$(get "$side" seq 1) ratio=$(bench_ratio "$(get "$side" seq 1 3)" "$(get "$b" seq 1 3)") target=$lt"
	echo "RESULT dns_${n}_qps=$(get "$side" burst 1 0) ratio=$(bench_ratio "$(get "$side" burst 1 3)" "$(get "$b" burst 1 3)") target=$qt"
done
for b in $boxes; do rmdir "$M/boxes/$b"; done
exit 0
