# lib.sh - shared setup for integration tests: a private paddockd with its
# own mount point, data directory, run directory and cgroup parent, started
# from the build tree and torn down (boxes, mounts, cgroups) on exit, even
# on failure. Tests print TAP.
#
#   . "$(dirname "$0")/lib.sh"
#   pd_start                 # starts paddockd; sets M (mount), D (data)
#   ok "name" command...     # one TAP test
#   pd_done                  # prints the plan, exits with the result

set -u

TOP_BUILDDIR=${TOP_BUILDDIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
TOP_SRCDIR=${TOP_SRCDIR:-$TOP_BUILDDIR}
PADDOCKD=${PADDOCKD:-$TOP_BUILDDIR/daemon/paddockd}
MKIMAGE=${MKIMAGE:-$TOP_SRCDIR/scripts/mkimage}

pd_n=0
pd_failed=0
PD_PID=
PD_TMP=

skip_all() {
	echo "1..0 # SKIP $*"
	exit 0
}

require_root() {
	[ "$(id -u)" = 0 ] || skip_all "needs root"
	[ -c /dev/fuse ] || skip_all "needs /dev/fuse"
	command -v crun >/dev/null || skip_all "needs crun"
}

ok() {
	local name=$1
	shift
	pd_n=$((pd_n + 1))
	if "$@"; then
		echo "ok $pd_n - $name"
	else
		echo "not ok $pd_n - $name"
		pd_failed=$((pd_failed + 1))
	fi
}

diag() {
	echo "# $*"
}

# Fails (returns 1) with a diagnostic unless $1 = $2.
same() {
	if [ "$1" != "$2" ]; then
		diag "expected [$2], got [$1]"
		return 1
	fi
}

# write_expect ERRNO_NAME FILE VALUE: the write must fail with that errno.
write_expect() {
	local want=$1 file=$2 value=$3 out
	out=$(python3 -c '
import errno, os, sys
try:
    fd = os.open(sys.argv[1], os.O_WRONLY | os.O_TRUNC)
    v = sys.argv[2]
    # "hex:..." carries bytes argv cannot (NUL).
    data = bytes.fromhex(v[4:]) if v.startswith("hex:") else v.encode("utf-8", "surrogateescape")
    os.write(fd, data)
    os.close(fd)
    print("OK")
except OSError as e:
    print(errno.errorcode[e.errno])
' "$file" "$value")
	same "$out" "$want"
}

# wait_for SECONDS COMMAND...: polls until the command succeeds.
wait_for() {
	local limit=$1
	shift
	local end=$(($(date +%s%N) / 1000000 + limit * 1000))
	while ! "$@" 2>/dev/null; do
		[ $(($(date +%s%N) / 1000000)) -lt $end ] || return 1
		sleep 0.05
	done
}

# The daemon's config. Knobs (environment): PD_IMAGE, PD_STOP_GRACE,
# PD_LOG_MAX, PD_MERGE_DEPTH, PD_LISTEN, PD_NETWORK, PD_BRIDGE, PD_SUBNET,
# PD_NFT_TABLE, PD_DNS_UPSTREAM, PD_GROUP (the group that may use the tree,
# a name or a numeric gid; unset: the default, paddock).
pd_config() {
	cat >"$PD_TMP/paddock.ini" <<INI
[paddock]
mount = $M
data = $D
run = $PD_TMP/run
default_image = ${PD_IMAGE:-tiny}
cgroup_parent = $PD_CGROUP
stop_grace = ${PD_STOP_GRACE:-2}
exec_log_max = ${PD_LOG_MAX:-256M}
layer_merge_depth = ${PD_MERGE_DEPTH:-16}
listen = ${PD_LISTEN:-127.0.0.1:0}
network = ${PD_NETWORK:-off}
bridge = ${PD_BRIDGE:-pd-t$(($$ % 10000))}
subnet = ${PD_SUBNET:-10.200.$(($$ % 250)).0/24}
nft_table = ${PD_NFT_TABLE:-paddock_t$$}
dns_upstream = ${PD_DNS_UPSTREAM:-auto}
${PD_GROUP:+group = $PD_GROUP}
[types.tiny]
cpus = 0.5
memory = 64M
pids = 256
disk = 1G
INI
}

# The image cache: building tiny takes under a second, so each test run
# builds its own unless PD_IMAGES points at a prepared data directory.
pd_setup() {
	require_root
	PD_TMP=$(mktemp -d /tmp/paddock-test.XXXXXX)
	M=$PD_TMP/mnt
	D=$PD_TMP/data
	PD_CGROUP=paddock-test-$$
	trap pd_cleanup EXIT
	trap 'exit 1' INT TERM
	pd_config
	mkdir -p "$D/images"
	if [ -n "${PD_IMAGES:-}" ] && [ -d "$PD_IMAGES/${PD_IMAGE:-tiny}" ]; then
		ln -s "$PD_IMAGES/${PD_IMAGE:-tiny}" "$D/images/${PD_IMAGE:-tiny}"
	else
		"$MKIMAGE" --config "$PD_TMP/paddock.ini" tiny >"$PD_TMP/mkimage.log" 2>&1 ||
			{ cat "$PD_TMP/mkimage.log" >&2; return 1; }
	fi
}

# pd_fake_net TAG ADDR...: two network namespaces for network tests, made
# by the test: HOSTNS (TAGh, where the daemon is to run: 192.0.2.2, default
# route through a veth) and INETNS (TAGi, the "internet": 192.0.2.1 and
# ADDR.../32 on its loopback, a route back to 10.0.0.0/8). Returns non-zero
# when namespaces cannot be made. pd_fake_net_down deletes both (and with
# them every link and table inside).
pd_fake_net() {
	local tag=$1 a
	shift
	HOSTNS=${tag}h INETNS=${tag}i
	ip netns add "$HOSTNS" && ip netns add "$INETNS" || return 1
	ip link add "${tag}a" netns "$HOSTNS" type veth peer name "${tag}b" netns "$INETNS" &&
		ip -n "$HOSTNS" link set lo up &&
		ip -n "$HOSTNS" addr add 192.0.2.2/24 dev "${tag}a" &&
		ip -n "$HOSTNS" link set "${tag}a" up &&
		ip -n "$HOSTNS" route add default via 192.0.2.1 &&
		ip -n "$INETNS" link set lo up &&
		ip -n "$INETNS" addr add 192.0.2.1/24 dev "${tag}b" || return 1
	for a in "$@"; do
		ip -n "$INETNS" addr add "$a/32" dev lo || return 1
	done
	ip -n "$INETNS" link set "${tag}b" up &&
		ip -n "$INETNS" route add 10.0.0.0/8 via 192.0.2.2
}

# Kills the servers in PD_FAKE_PIDS (pd_fake_serve's, and any other PID a
# test appended) and waits for them, then deletes both namespaces.
pd_fake_net_down() {
	if [ -n "${PD_FAKE_PIDS:-}" ]; then
		# shellcheck disable=SC2086
		kill $PD_FAKE_PIDS 2>/dev/null
		# shellcheck disable=SC2086
		wait $PD_FAKE_PIDS 2>/dev/null
	fi
	PD_FAKE_PIDS=
	ip netns del "$HOSTNS" 2>/dev/null
	ip netns del "$INETNS" 2>/dev/null
}

# pd_fake_serve NS DIR PORT ADDR...: serves the files of DIR over HTTP on
# ADDR:PORT for each ADDR, from one python3 process (a thread per address
# and per connection) run in network namespace NS, in the background. A
# plain threaded TCP server: http.server's HTTPServer looks its own name up
# in DNS at bind (getfqdn), which hangs where there is no resolver. The
# process's PID is appended to PD_FAKE_PIDS (killed by pd_fake_net_down).
# Wait for the listeners with pd_fake_wait.
pd_fake_serve() {
	local ns=$1 dir=$2 port=$3
	shift 3
	ip netns exec "$ns" python3 -c 'import functools, http.server, socketserver, sys, threading
class S(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True
    request_queue_size = 256
class H(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *a):
        pass
h = functools.partial(H, directory=sys.argv[1])
servers = [S((a, int(sys.argv[2])), h) for a in sys.argv[3:]]
for s in servers[1:]:
    threading.Thread(target=s.serve_forever, daemon=True).start()
servers[0].serve_forever()' "$dir" "$port" "$@" >/dev/null 2>&1 &
	PD_FAKE_PIDS="${PD_FAKE_PIDS:-} $!"
}

# pd_fake_wait NS COUNT: waits until network namespace NS has at least
# COUNT listening TCP sockets; non-zero after 10 seconds without.
pd_fake_wait() {
	wait_for 10 pd_fake_listening "$1" "$2"
}

pd_fake_listening() {
	[ "$(ip netns exec "$1" ss -Hltn | wc -l)" -ge "$2" ]
}

# The daemon's HTTP base URL (RUN/http-url, written once it listens).
pd_url() {
	head -n1 "$PD_TMP/run/http-url"
}

# Sets the owner's password through the one-time setup link (DATA/setup-url)
# and logs in: PD_URL, PD_PASSWORD and PD_TOKEN are set. Returns non-zero on
# any failure.
pd_owner() {
	local link secret
	PD_PASSWORD=${1:-owner-pass-$RANDOM$RANDOM}
	wait_for 10 test -s "$D/setup-url" || return 1
	wait_for 10 test -s "$PD_TMP/run/http-url" || return 1
	PD_URL=$(pd_url)
	link=$(cat "$D/setup-url")
	secret=${link##*token=}
	curl -fsS -o /dev/null -H 'Content-Type: application/json' \
		--data "{\"token\":\"$secret\",\"password\":\"$PD_PASSWORD\"}" \
		"$PD_URL/v1/setup" || return 1
	PD_TOKEN=$(curl -fsS -H 'Accept: text/plain' --data "{\"password\":\"$PD_PASSWORD\"}" \
		"$PD_URL/v1/login") || return 1
	[ -n "$PD_TOKEN" ] || return 1
	export PD_URL PD_PASSWORD PD_TOKEN
}

# curl with the owner's token against the tree: hc [CURL-ARGS...] PATH
hc() {
	local path=${!#}
	curl -sS -H "Authorization: Bearer $PD_TOKEN" "${@:1:$#-1}" "$PD_URL/v1/tree/$path"
}
export -f hc pd_url

# Boxes from the debian image (PD_IMAGE=debian). It takes a minute or two
# to build: built once into a cache beside the build tree
# (tests/images-cache, or PD_IMAGES) and linked into each run. Skips the
# test when it cannot be built.
pd_use_debian() {
	local cache=${PD_IMAGES:-$TOP_BUILDDIR/tests/images-cache}
	if [ ! -d "$cache/debian/rootfs" ]; then
		mkdir -p "$cache"
		printf '[paddock]\ndata = %s\n' "$(dirname "$cache")/images-cache-data" >"$cache.ini"
		mkdir -p "$(dirname "$cache")/images-cache-data"
		if ! "$MKIMAGE" --config "$cache.ini" debian >"$cache.log" 2>&1; then
			tail -n 20 "$cache.log" | sed 's/^/# /'
			skip_all "cannot build the debian image (no Debian mirror?)"
		fi
		rm -rf "$cache"
		ln -s "$(dirname "$cache")/images-cache-data/images" "$cache"
	fi
	export PD_IMAGES=$cache PD_IMAGE=debian
}

# pd_node_project DIR: a Node project with a zero-dependency `node --test`
# suite of two passing tests in DIR/test/sum.test.js (`npm test` runs it).
pd_node_project() {
	mkdir -p "$1/test"
	cat >"$1/package.json" <<'JSON'
{ "name": "seed", "version": "1.0.0", "private": true,
  "scripts": { "test": "node --test" } }
JSON
	cat >"$1/sum.js" <<'JS'
module.exports = (a, b) => a + b;
JS
	cat >"$1/test/sum.test.js" <<'JS'
const test = require('node:test');
const assert = require('node:assert');
const sum = require('../sum.js');
test('adds', () => assert.strictEqual(sum(2, 3), 5));
test('adds negatives', () => assert.strictEqual(sum(-2, -3), -5));
JS
}

# Sets up, serves HTTP on a unix socket ($SOCK, no token needed) and
# starts the daemon.
pd_start_with_socket() {
	pd_setup || exit 1
	SOCK=$PD_TMP/run/paddock.sock
	sed -i "s|^\[paddock\]$|[paddock]\nsocket = $SOCK|" "$PD_TMP/paddock.ini"
	pd_start
	wait_for 10 test -S "$SOCK" || { diag "no unix socket"; exit 1; }
}

pd_start() {
	export PD_TMP M D PD_CGROUP
	[ -n "$PD_TMP" ] || pd_setup || exit 1
	"$PADDOCKD" --config "$PD_TMP/paddock.ini" --foreground ${PD_DEBUG:+--debug} \
		>>"$PD_TMP/paddockd.log" 2>&1 &
	PD_PID=$!
	if ! wait_for 10 test -f "$M/version"; then
		diag "paddockd did not come up:"
		sed 's/^/# /' "$PD_TMP/paddockd.log"
		exit 1
	fi
}

# Stops the daemon the way a service manager would.
pd_stop() {
	[ -n "$PD_PID" ] || return 0
	kill -TERM "$PD_PID" 2>/dev/null
	wait "$PD_PID" 2>/dev/null
	local rc=$?
	PD_PID=
	return $rc
}

# Kills the daemon with SIGKILL: the mount is left stale, boxes run on.
pd_kill9() {
	[ -n "$PD_PID" ] || return 0
	kill -KILL "$PD_PID" 2>/dev/null
	wait "$PD_PID" 2>/dev/null
	PD_PID=
	return 0
}

# crun against our daemon's containers. On hybrid cgroup hosts crun needs
# the private mount namespace paddockd also uses (see daemon/cgroup.h).
pd_crun() {
	unshare -m --propagation private sh -c \
		'umount /sys/fs/cgroup/unified 2>/dev/null; r=$1; shift; exec crun --root "$r" "$@"' \
		- "$PD_TMP/run/crun" "$@"
}

crun_list() {
	pd_crun list -q 2>/dev/null
}

pd_cleanup() {
	local rc=$?
	set +e
	[ -n "$PD_TMP" ] || exit $rc
	if [ -n "$PD_PID" ]; then
		kill -TERM "$PD_PID" 2>/dev/null
		wait "$PD_PID" 2>/dev/null
	fi
	# Containers the daemon left running: only ours, by our crun root.
	for c in $(crun_list); do
		pd_crun kill --all "$c" KILL 2>/dev/null
		pd_crun delete --force "$c" 2>/dev/null
	done
	umount -l "$M" 2>/dev/null
	# Box roots and their views, volume views, snapshot mounts and the
	# boxes' network namespaces (bind mounts that would keep the namespaces
	# alive).
	grep -o -e " $PD_TMP/run/roots/[^ ]* " -e " $PD_TMP/run/volumes/[^ ]* " \
		-e " $D/boxes/[0-9]*/rootfs " -e " $PD_TMP/run/snapshots/[^ ]* " \
		-e " $PD_TMP/run/netns/[^ ]* " /proc/self/mountinfo | while read -r mp; do
		umount -l "$mp"
	done
	for d in /sys/fs/cgroup/*/"$PD_CGROUP" /sys/fs/cgroup/"$PD_CGROUP"; do
		[ -d "$d" ] || continue
		find "$d" -depth -type d -exec rmdir {} + 2>/dev/null
	done
	if [ "$pd_failed" -ne 0 ] || [ $rc -ne 0 ]; then
		diag "paddockd log:"
		tail -n 40 "$PD_TMP/paddockd.log" 2>/dev/null | sed 's/^/# /'
	fi
	rm -rf --one-file-system "$PD_TMP"
	exit $rc
}

pd_done() {
	echo "1..$pd_n"
	[ "$pd_failed" -eq 0 ]
	exit $?
}

# Prints what a stream holds now, without waiting for more (O_NONBLOCK).
snap() {
	python3 - "$1" <<'PY'
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_NONBLOCK)
out = b""
while True:
    try:
        b = os.read(fd, 65536)
    except BlockingIOError:
        break
    if not b:
        break
    out += b
sys.stdout.buffer.write(out)
PY
}

# Helpers usable from `bash -c` in tests.
export -f pd_crun crun_list same diag snap write_expect wait_for
