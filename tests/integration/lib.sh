# lib.sh - shared setup for integration tests: a private paddockd with its
# own mount point, data directory, run directory and cgroup parent, started
# from the build tree and torn down (boxes, mounts, cgroups) on exit, even
# on failure. Tests print TAP.
#
#   . "$(dirname "$0")/lib.sh"
#   pd_start                 # starts paddockd; sets M (mount), D (data)
#   ok "name" command...     # one TAP test
#   pd_done                  # prints the plan, exits with the result
#
# Every paddockd a test starts is judged when it ends: a stop (pd_stop,
# pd_done, the cleanup) must end in status 0, a kill -9 (pd_kill9) or an
# injected fault (PADDOCK_FAULT) in SIGKILL and nothing else. The sanitized
# binaries (the daemon, the paddock-exec supervisors it spawns, the CLI)
# write their ASan/LSan reports into a directory of the test's (PD_SAN),
# the daemon its UBSan reports into its log; any report fails the test and
# is shown as TAP diagnostics.

set -u

TOP_BUILDDIR=${TOP_BUILDDIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
TOP_SRCDIR=${TOP_SRCDIR:-$TOP_BUILDDIR}
PADDOCKD=${PADDOCKD:-$TOP_BUILDDIR/daemon/paddockd}
MKIMAGE=${MKIMAGE:-$TOP_SRCDIR/scripts/mkimage}

pd_n=0
pd_failed=0
PD_PID=
PD_TMP=
PD_SAN=
pd_log_seen=0
# Daemons started and not yet judged, and how many ended badly.
pd_daemons=
pd_bad=0
pd_exit_hooks=()

skip_all() {
	echo "1..0 # SKIP $*"
	exit 0
}

# pd_own_netns "$0" "$@": runs the calling script again (exec) in a network
# namespace of its own with loopback up, unless it already runs in one.
# For tests that open thousands of connections a second: in the host's
# namespace they fill the kernel's connection tracking table whenever some
# nftables rules track connections, and the kernel then drops new SYNs
# ("nf_conntrack: table full"). The namespace is gone with its last process.
pd_own_netns() {
	[ -z "${PD_OWN_NETNS:-}" ] || return 0
	command -v unshare >/dev/null || skip_all "needs unshare"
	PD_OWN_NETNS=1 exec unshare --net bash -c 'ip link set lo up && exec "$0" "$@"' "$@"
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

# A hold point (PADDOCK_HOLD=STEP:$HOLD, pd_hold() in common/util.h): arm it
# with `touch "$HOLD/arm"`, start what reaches it in the background, then
# pd_hold_wait waits (up to $T s) until it is held there. A watchdog
# releases the hold after 60 s, so operations stuck behind it (some wait in
# the kernel, where no timeout reaches them) end and fail the test rather
# than hang it. pd_hold_release lets it go on.
pd_hold_wait() {
	(sleep 60 && rm -f "$HOLD/held") &
	WATCHDOG=$!
	wait_for "${T:-10}" test -e "$HOLD/held"
}
pd_hold_release() {
	kill "$WATCHDOG" 2>/dev/null
	wait "$WATCHDOG" 2>/dev/null
	rm -f "$HOLD/held"
}

# pd_parked PID...: true when each PID, or a process under it (timeout,
# bash -c), waits in a read the daemon holds: a parked stream (FUSE's
# request_wait_answer). For tests that must act only once readers wait.
pd_parked() {
	local p
	for p in "$@"; do
		pd_parked_one "$p" || return 1
	done
}

pd_parked_one() {
	local c
	[ "$(cat "/proc/$1/wchan" 2>/dev/null)" = request_wait_answer ] && return 0
	for c in $(cat /proc/"$1"/task/*/children 2>/dev/null); do
		pd_parked_one "$c" && return 0
	done
	return 1
}

# The daemon's config. Knobs (environment): PD_IMAGE, PD_STOP_GRACE,
# PD_LOG_MAX, PD_MERGE_DEPTH, PD_LISTEN, PD_NETWORK, PD_BRIDGE, PD_SUBNET,
# PD_NFT_TABLE, PD_DNS_UPSTREAM, PD_GROUP (the group that may use the tree,
# a name or a numeric gid; unset: the default, paddock), PD_LXCFS (on, off
# or a path; unset: the default, on), PD_DISK_LIMIT (on or off; unset: the
# default, on).
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
${PD_LXCFS:+lxcfs = $PD_LXCFS}
${PD_DISK_LIMIT:+disk_limit = $PD_DISK_LIMIT}
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
	# The boxes' root (a host id of its own) passes through it to RUN, as
	# through /run: pass only, no listing.
	chmod 0711 "$PD_TMP"
	M=$PD_TMP/mnt
	D=$PD_TMP/data
	PD_CGROUP=paddock-test-$$
	trap pd_cleanup EXIT
	trap 'exit 1' INT TERM
	pd_san_setup || return 1
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
# test when it cannot be built for want of a Debian mirror; fails it when
# the mirror answers and the build fails all the same.
pd_use_debian() {
	pd_use_image debian
}

# pd_use_image NAME: boxes from image NAME (debian, desktop, agents, docker
# or full), from the cache as pd_use_debian does.
pd_use_image() {
	if ! pd_image_cache "$1"; then
		pd_mirror_answers || skip_all "cannot build the $1 image (no Debian mirror)"
		case $1 in
		agents | full) pd_npm_answers || skip_all "cannot build the $1 image (no npm registry)" ;;
		esac
		echo "1..1"
		echo "not ok 1 - the $1 image builds (the mirror answers)"
		exit 1
	fi
	export PD_IMAGE=$1
}

# pd_debian_cache: the debian image in the cache (built once, as
# pd_use_debian does), PD_IMAGES set to the cache; non-zero when it cannot
# be built (for a test that checks the debian image only in part).
pd_debian_cache() {
	pd_image_cache debian
}

# pd_image_cache NAME: image NAME in the cache, built there once per cache
# (desktop, agents, docker and full on the cache's debian, building that
# first),
# PD_IMAGES set to the cache; non-zero, the build log's end as diagnostics,
# when it cannot be built. The cache is the images/ directory of a data
# directory (a link to one, tests/images-cache-data/images, unless
# PD_IMAGES names one).
pd_image_cache() {
	local name=$1 cache=${PD_IMAGES:-$TOP_BUILDDIR/tests/images-cache} real data
	if [ ! -d "$cache/$name/rootfs" ]; then
		# An empty directory left by an older run is no cache.
		[ -L "$cache" ] || rmdir "$cache" 2>/dev/null
		if [ ! -e "$cache" ]; then
			data=$(dirname "$cache")/images-cache-data
			mkdir -p "$data/images" && ln -s "$data/images" "$cache" || return 1
		fi
		real=$(readlink -f "$cache")
		if [ "${real##*/}" != images ]; then
			diag "$cache is not the images/ directory of a data directory"
			return 1
		fi
		printf '[paddock]\ndata = %s\n' "${real%/images}" >"$cache.ini"
		if ! "$MKIMAGE" --config "$cache.ini" "$name" >"$cache.$name.log" 2>&1; then
			tail -n 20 "$cache.$name.log" | sed 's/^/# /'
			return 1
		fi
	fi
	export PD_IMAGES=$cache
}

# True when the host's Debian mirror (where apt would fetch busybox-static
# from) answers over HTTP: a failed image build is then a failure, not a
# machine without a mirror.
pd_mirror_answers() {
	local uri
	uri=$(apt-get -qq --print-uris download busybox-static 2>/dev/null | head -n1 | cut -d"'" -f2)
	[ -n "$uri" ] && curl -fsS -o /dev/null -I --max-time 20 "$uri"
}

# True when the npm registry the host's npm uses answers (the agents image
# gets Node.js and the agents from it).
pd_npm_answers() {
	command -v npm >/dev/null && timeout 60 npm ping >/dev/null 2>&1
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

# uc METHOD PATH [CURL-ARGS...]: the HTTP API over the unix socket of
# pd_start_with_socket (no token).
uc() {
	local method=$1 path=$2
	shift 2
	curl -sS --unix-socket "$SOCK" -X "$method" "$@" "http://paddock/v1/tree/$path"
}

# errno_of PYTHON-STATEMENTS: runs them, prints OK or the errno's name
# (TIMEOUT if they have not finished within 30 s).
errno_of() {
	timeout 30 python3 -c "
import errno, os, sys
try:
    $1
    print('OK')
except OSError as e:
    print(errno.errorcode[e.errno])" || echo TIMEOUT
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
	pd_daemons="$pd_daemons $PD_PID"
	if ! wait_for 10 test -f "$M/version"; then
		diag "paddockd did not come up:"
		sed 's/^/# /' "$PD_TMP/paddockd.log"
		exit 1
	fi
}

# Stops the daemon the way a service manager would. It must exit 0 within
# a minute: anything else (a sanitizer's abort, LSan's status, a hang) is
# said, counted against the test, and returned.
pd_stop() {
	[ -n "$PD_PID" ] || return 0
	local pid=$PD_PID rc
	PD_PID=
	kill -TERM "$pid" 2>/dev/null
	pd_reap "$pid" 60
	rc=$?
	pd_judge "$pid" $rc "0" "on SIGTERM"
	return $rc
}

# Kills the daemon with SIGKILL: the mount is left stale, boxes run on. The
# daemon must have been alive until then (status 137).
pd_kill9() {
	[ -n "$PD_PID" ] || return 0
	local pid=$PD_PID rc
	PD_PID=
	kill -KILL "$pid" 2>/dev/null
	pd_reap "$pid" 60
	rc=$?
	pd_judge "$pid" $rc "137" "when killed with SIGKILL"
	return 0
}

# pd_reap PID SECONDS: waits for the daemon PID to end and returns its exit
# status (128+N for signal N). Past SECONDS it is killed and reaped, and
# 255 returned. A PID this shell cannot wait for (a subshell's caller's
# child, or one a test reaped itself) gives 127.
pd_reap() {
	local pid=$1 limit=$2 rc
	if ! wait_for "$limit" pd_ended "$pid"; then
		diag "paddockd (PID $pid) did not end within $limit s: killed"
		kill -KILL "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
		return 255
	fi
	wait "$pid" 2>/dev/null
	rc=$?
	return $rc
}

# True once PID has exited (gone, or a zombie waiting to be reaped).
pd_ended() {
	local stat
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
	stat=${stat##*) }
	[ "${stat%% *}" = Z ]
}

# pd_judge PID STATUS WANT HOW: counts a daemon that ended with STATUS other
# than WANT (a space-separated list; 127, status unknown, always passes:
# the reports still tell) and shows its status and the log's end.
pd_judge() {
	local pid=$1 rc=$2 want=$3 how=$4 w
	pd_daemons=$(echo "$pd_daemons" | tr ' ' '\n' | grep -vx "$pid" | tr '\n' ' ')
	for w in $want 127; do
		[ "$rc" = "$w" ] && return 0
	done
	pd_bad=$((pd_bad + 1))
	if [ "$rc" -gt 128 ] && [ "$rc" -lt 255 ]; then
		diag "paddockd (PID $pid) was killed by signal $((rc - 128)) $how (wanted status $want)"
	else
		diag "paddockd (PID $pid) exited with status $rc $how (wanted status $want)"
	fi
	pd_san_reports || return 1
	diag "the end of paddockd's log:"
	tail -n 10 "$PD_TMP/paddockd.log" 2>/dev/null | sed 's/^/# /'
	return 1
}

# Judges the daemons a test dropped without pd_stop or pd_kill9 (it set
# PD_PID= after an injected fault killed one): SIGKILL is what a fault
# does; anything else is counted.
pd_judge_dropped() {
	local pid rc
	for pid in $pd_daemons; do
		[ "$pid" = "$PD_PID" ] && continue
		pd_reap "$pid" 60
		rc=$?
		pd_judge "$pid" $rc "137" "(its PID dropped by the test: an injected fault)"
	done
}

# The sanitizers' reports: one file per process that has one (PD_SAN/asan.PID),
# sticky and writable by all, outside PD_TMP (which is root's only): a CLI
# run as another user reports there too. GCC links ASan and UBSan as two
# runtimes, and UBSan's reports go to stderr whatever log_path says: the
# daemon's stderr is its log, scanned too (pd_san_reports); a supervisor's
# is /dev/null, where only its exit (a job that never ends) tells.
pd_san_setup() {
	PD_SAN=$(mktemp -d /tmp/paddock-san.XXXXXX) || return 1
	chmod 1733 "$PD_SAN"
	export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}log_path=$PD_SAN/asan"
	export PD_SAN
	pd_log_seen=0
}

# Shows every report not shown yet as diagnostics (the report files, which
# it removes, and the lines of the daemon's log from the first sanitizer
# line on); non-zero when there was one.
pd_san_reports() {
	local f found=0 n
	[ -n "$PD_SAN" ] || return 0
	for f in "$PD_SAN"/*; do
		[ -f "$f" ] || continue
		found=1
		diag "sanitizer report ${f##*/}:"
		sed 's/^/# /' "$f"
		rm -f "$f"
	done
	f=$PD_TMP/paddockd.log
	if [ -f "$f" ]; then
		n=$(wc -l <"$f")
		if tail -n +$((pd_log_seen + 1)) "$f" | head -n $((n - pd_log_seen)) |
			grep -Eq 'runtime error:|ERROR: [A-Za-z]+Sanitizer'; then
			found=1
			diag "sanitizer report in paddockd's log:"
			tail -n +$((pd_log_seen + 1)) "$f" | head -n $((n - pd_log_seen)) |
				sed -n -E '/runtime error:|ERROR: [A-Za-z]+Sanitizer/,$p' | head -n 60 | sed 's/^/# /'
		fi
		pd_log_seen=$n
	fi
	[ $found -eq 0 ]
}

# Waits (up to 20 s) for the paddock-exec supervisors of this test's jobs
# to end, so that what they report at exit is seen.
pd_wait_supervisors() {
	local f pid
	for f in $(find "$PD_TMP" -xdev -name supervisor.pid 2>/dev/null); do
		pid=$(cat "$f" 2>/dev/null)
		[ -n "$pid" ] || continue
		grep -qa paddock-exec "/proc/$pid/cmdline" 2>/dev/null || continue
		wait_for 20 pd_ended "$pid" || diag "supervisor $pid did not end"
	done
}

# True when every daemon so far ended as it should and no sanitizer
# reported anything.
pd_clean() {
	local r=0
	pd_san_reports || r=1
	[ "$pd_bad" -eq 0 ] || r=1
	pd_bad=0
	return $r
}

# pd_on_exit FUNCTION: runs FUNCTION during the cleanup, after the daemon is
# stopped, its containers killed and its mounts gone (for what a test set
# up around the daemon: tables, links, sysctls).
pd_on_exit() {
	pd_exit_hooks+=("$1")
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

# The daemon's lxcfs, which a daemon killed with SIGKILL leaves running
# (runtime/lxcfs.h): the process named by RUN/lxcfs.pid when its command
# line ends with this run's RUN/lxcfs, then its mount.
pd_lxcfs_cleanup() {
	local pid
	pid=$(cat "$PD_TMP/run/lxcfs.d/lxcfs.pid" 2>/dev/null)
	if [ -n "$pid" ] && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null |
		grep -qF -- " $PD_TMP/run/lxcfs.d/lxcfs "; then
		kill -KILL "$pid" 2>/dev/null
		wait_for 10 pd_ended "$pid"
	fi
	while grep -q " $PD_TMP/run/lxcfs.d/lxcfs " /proc/self/mountinfo; do
		umount -l "$PD_TMP/run/lxcfs.d/lxcfs" || break
	done
}

# pd_loops_gone SECS: true once no loop device reads a file under PD_TMP
# (SECS seconds at most: the kernel clears them asynchronously).
pd_loops_gone() {
	local i
	for ((i = 0; i < $1 * 10; i++)); do
		losetup -nO BACK-FILE | grep -q "^$PD_TMP/" || return 0
		sleep 0.1
	done
	return 1
}

pd_cleanup() {
	local rc=$? h
	set +e
	[ -n "$PD_TMP" ] || exit $rc
	pd_stop
	pd_judge_dropped
	# Containers the daemon left running: only ours, by our crun root.
	for c in $(crun_list); do
		pd_crun kill --all "$c" KILL 2>/dev/null
		pd_crun delete --force "$c" 2>/dev/null
	done
	umount -l "$M" 2>/dev/null
	pd_lxcfs_cleanup
	# Box roots and their views, volume views, snapshot mounts and the
	# boxes' network and user namespaces (bind mounts that would keep the
	# namespaces alive).
	grep -o -e " $PD_TMP/run/roots/[^ ]* " -e " $PD_TMP/run/volumes/[^ ]* " \
		-e " $D/boxes/[0-9]*/rootfs " -e " $D/trash/[^ ]*/rootfs " \
		-e " $PD_TMP/run/snapshots/[^ ]* " \
		-e " $PD_TMP/run/netns/[^ ]* " -e " $PD_TMP/run/userns/[^ ]* " \
		/proc/self/mountinfo | while read -r mp; do
		umount -l "$mp"
	done
	# Then what those held: the boxes' disk images and the image layers'
	# read-only mounts, and their loop devices (cleared by the kernel
	# once unused; detached here if one is left).
	grep -o -e " $D/boxes/[0-9]*/disk " -e " $D/trash/[^ ]*/disk " \
		-e " $PD_TMP/run/layers/[^ ]* " \
		/proc/self/mountinfo | while read -r mp; do
		umount "$mp" 2>/dev/null || umount -l "$mp"
	done
	pd_loops_gone 5 || losetup -nO NAME,BACK-FILE | awk -v d="$PD_TMP/" \
		'index($2, d) == 1 {print $1}' | xargs -r -n1 losetup -d
	for d in /sys/fs/cgroup/*/"$PD_CGROUP" /sys/fs/cgroup/"$PD_CGROUP"; do
		[ -d "$d" ] || continue
		find "$d" -depth -type d -exec rmdir {} + 2>/dev/null
	done
	for h in "${pd_exit_hooks[@]}"; do
		"$h"
	done
	# What pd_done has not judged yet: a test that ended early, supervisors
	# that ended with their boxes.
	pd_wait_supervisors
	pd_clean || { [ $rc -ne 0 ] || rc=1; }
	if [ "$pd_failed" -ne 0 ] || [ $rc -ne 0 ]; then
		diag "paddockd log:"
		tail -n 40 "$PD_TMP/paddockd.log" 2>/dev/null | sed 's/^/# /'
	fi
	rm -rf --one-file-system "$PD_TMP"
	[ -z "$PD_SAN" ] || rm -rf "$PD_SAN"
	exit $rc
}

# Stops the daemon (it must exit 0), then prints the plan and exits with the
# result. The last test: every daemon ended as it should, no sanitizer
# report from any process.
pd_done() {
	pd_stop
	pd_judge_dropped
	ok "paddockd ended cleanly each time; no sanitizer report" pd_clean
	echo "1..$pd_n"
	[ "$pd_failed" -eq 0 ]
	exit $?
}

# pd_job BOX CMD: runs CMD in the box as a quick job and prints its stdout;
# fails (showing its output as diagnostics) unless it exits 0 within 30 s.
pd_job() {
	echo "$2" >"$M/boxes/$1/exec/new" || return 1
	local last
	last=$(readlink "$M/boxes/$1/exec/last")
	same "$(timeout 30 cat "$M/boxes/$1/exec/$last/exit")" 0 || {
		sed 's/^/# /' "$M/boxes/$1/exec/$last/output"
		return 1
	}
	cat "$M/boxes/$1/exec/$last/stdout"
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

# pd_fake_crun: after pd_setup, before pd_start: the daemon runs crun
# through a wrapper (the `crun` config key) in which "crun state" and "crun
# kill" (a stop signals the container without asking crun state first)
# fail with an error other than "no such container" while
# $PD_TMP/crun-broken exists (FLAG). When FLAG is a directory, the wrapper
# first touches FLAG/waiting and waits until FLAG/go exists: a test holds
# the caller in crun.
pd_fake_crun() {
	FLAG=$PD_TMP/crun-broken
	cat >"$PD_TMP/crun" <<SH
#!/bin/sh
for a; do
	if { [ "\$a" = state ] || [ "\$a" = kill ]; } && [ -e '$FLAG' ]; then
		if [ -d '$FLAG' ]; then
			touch '$FLAG/waiting'
			while ! [ -e '$FLAG/go' ]; do sleep 0.05; done
		fi
		echo "cannot read the cgroup: Resource temporarily unavailable" >&2
		exit 1
	fi
done
exec $(command -v crun) "\$@"
SH
	chmod 755 "$PD_TMP/crun"
	sed -i "s|^\[paddock\]$|[paddock]\ncrun = $PD_TMP/crun|" "$PD_TMP/paddock.ini"
}

# Helpers usable from `bash -c` in tests.
export -f pd_crun crun_list same diag snap write_expect wait_for pd_ended pd_parked pd_parked_one

# --- Docker in a box (docs/docker.md) ---------------------------------------

# pd_docker_type: adds type "dock" (room for dockerd and a few containers)
# to the configuration; call after pd_setup, before pd_start.
pd_docker_type() {
	cat >>"$PD_TMP/paddock.ini" <<INI
[types.dock]
cpus = 2
memory = 2G
pids = 4096
disk = ${PD_DOCKER_DISK:-4G}
INI
}

# pd_busybox_tar FILE: a root filesystem of the host's static busybox (its
# applets as links) as a tar, for `docker import` (no registry is reached).
pd_busybox_tar() {
	local d a rc
	d=$(mktemp -d) || return 1
	mkdir -p "$d/bin" "$d/etc" "$d/tmp" && cp "$(command -v busybox)" "$d/bin/" || { rm -rf "$d"; return 1; }
	for a in $("$d/bin/busybox" --list); do
		[ "$a" = busybox ] || ln -s busybox "$d/bin/$a"
	done
	echo 'root:x:0:0:root:/root:/bin/sh' >"$d/etc/passwd"
	tar -C "$d" -cf "$1" .
	rc=$?
	rm -rf "$d"
	return $rc
}

# pd_docker_ready BOX [SECONDS]: waits until the box's Docker answers (as
# the box's user), 60 s at most.
pd_docker_ready() {
	local i
	for ((i = 0; i < ${2:-60} * 2; i++)); do
		pd_job "$1" 'docker info >/dev/null 2>&1' >/dev/null 2>&1 && return 0
		sleep 0.5
	done
	diag "box $1: Docker did not answer; dockerd's log:"
	pd_job "$1" 'sudo tail -n 20 /var/log/dockerd.log' 2>&1 | sed 's/^/# /'
	return 1
}

# pd_docker_box BOX: a box of the docker image and type dock, started, its
# Docker answering, with image bb:1 (busybox) imported.
pd_docker_box() {
	local b=$M/boxes/$1
	mkdir "$b" && echo docker >"$b/image" && echo dock >"$b/type" || return 1
	echo running >"$b/state" || { diag "$(cat "$b/error")"; return 1; }
	pd_docker_ready "$1" || return 1
	pd_busybox_tar "$b/root/tmp/bb.tar" || return 1
	pd_job "$1" 'docker import /tmp/bb.tar bb:1 >/dev/null' >/dev/null
}
