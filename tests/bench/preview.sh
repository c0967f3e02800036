#!/bin/bash
# preview.sh - preview URLs (docs/preview.md): a request through the proxy
# against the same request made straight to the server in the box, from
# inside the box's network namespace (nsenter into its PID 1's), in the
# same run.
#
# A Node.js server in an agents box answers "ok" (2 bytes) and, for
# /big, 64 MiB. One curl process per side fetches N small answers over one
# kept-alive connection (the proxy opens a connection into the box per
# request: that cost is in the figure), then the big one, ROUNDS times.
#
#   preview_latency_ms   median ms per small request through the proxy;
#                        ratio proxy / direct (no target: a connection into
#                        the box per request and a hop through the
#                        daemon; the block says the ms it adds)
#   preview_mbps         MB/s of the big answer through the proxy; ratio
#                        proxy / direct (target 0.5, met when >=)
#
# Needs root, the agents image (cached as for the integration tests:
# PD_IMAGES) and nsenter.
BENCH_NAME=preview_latency_ms
BENCH_TARGET=none
. "$(dirname "$0")/common.sh"

ROUNDS=${ROUNDS:-5}
N=${N:-200}
command -v nsenter >/dev/null || skip_all "nsenter is not installed"

pd_use_image agents
bench_start
pd_owner || bench_broken "no owner token"
B=$M/boxes/bench
mkdir "$B"
echo running >"$B/state"
cat >"$B/root/tmp/srv.js" <<'JS'
const big = Buffer.alloc(64 * 1024 * 1024, 97);
require('http').createServer((req, res) => {
	if (req.url === '/big') {
		res.writeHead(200, {'Content-Length': big.length});
		return res.end(big);
	}
	res.writeHead(200, {'Content-Length': 2});
	res.end('ok');
}).listen(8080, '127.0.0.1');
JS
echo 8080 >"$B/ports"
mkdir "$B/exec/srv" && echo 'exec node /tmp/srv.js' >"$B/exec/srv/cmd"
pid=$(pd_crun state bench | jq -r .pid)
if [ -z "$pid" ] || [ "$pid" = null ]; then bench_broken "no PID for the box"; fi
up() { [ "$(curl -s -H "Authorization: Bearer $PD_TOKEN" "$PD_URL/v1/ports/bench/8080/")" = ok ]; }
wait_for 30 up || bench_broken "the server in the box does not answer through the proxy"

# run SIDE: N small requests on one connection (per-request seconds to
# FILE.lat), then the big answer's bytes/s to FILE.mbps.
urls() { for _ in $(seq "$N"); do printf -- '-o /dev/null %s ' "$1"; done; }
run() {
	local side=$1 base pre=() auth=()
	if [ "$side" = proxy ]; then
		base=$PD_URL/v1/ports/bench/8080
		auth=(-H "Authorization: Bearer $PD_TOKEN")
	else
		base=http://127.0.0.1:8080
		pre=(nsenter -t "$pid" -n)
	fi
	# shellcheck disable=SC2046
	"${pre[@]}" curl -fs -w '%{time_total}\n' "${auth[@]}" $(urls "$base/") \
		>>"$PD_TMP/$side.lat" &&
		"${pre[@]}" curl -fs -o /dev/null -w '%{speed_download}\n' "${auth[@]}" "$base/big" \
			>>"$PD_TMP/$side.mbps"
}
for f in direct.lat proxy.lat direct.mbps proxy.mbps; do : >"$PD_TMP/$f"; done
for _ in $(seq "$ROUNDS"); do
	run direct || bench_broken "the direct client failed"
	run proxy || bench_broken "the client through the proxy failed"
done
ms() { awk '{ print $1 * 1000 }' "$1" >"$1.ms"; bench_stats "$1.ms" | cut -d' ' -f1; }
mb() { awk '{ print $1 / 1e6 }' "$1" >"$1.mb"; bench_stats "$1.mb" | cut -d' ' -f1; }
dl=$(ms "$PD_TMP/direct.lat")
pl=$(ms "$PD_TMP/proxy.lat")
dm=$(mb "$PD_TMP/direct.mbps")
pm=$(mb "$PD_TMP/proxy.mbps")
echo "ms per small request ($N a round, $ROUNDS rounds, kept-alive): direct $dl, through the proxy $pl (added $(awk -v a="$pl" -v b="$dl" 'BEGIN {printf "%.3f", a - b}'))"
echo "MB/s of a 64 MiB answer: direct $dm, through the proxy $pm"
echo "RESULT preview_latency_ms=$pl ratio=$(awk -v a="$pl" -v b="$dl" 'BEGIN {printf "%.3f", a / b}') target=$BENCH_TARGET"
echo "RESULT preview_mbps=$pm ratio=$(awk -v a="$pm" -v b="$dm" 'BEGIN {printf "%.3f", a / b}') target=0.5"
