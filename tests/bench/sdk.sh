#!/bin/bash
# sdk.sh - commands.run("true") round trips through the TypeScript and
# Python SDKs, against `paddock exec BOX -- true` and the raw HTTP calls,
# on one box of the tiny image, in the same run.
#
#   raw        the HTTP requests a run needs and nothing else, in one
#              Python process on one kept-alive connection (http.client):
#              PUT exec/JOB/ (mkdir), PUT exec/JOB/cmd, GET exec/JOB/exit
#              (answers once the job has ended). The floor a client can
#              reach.
#   typescript sdk/typescript/bench/run-true.mjs: Box.connect(), then
#              box.commands.run("true") N times (each also follows stdout
#              and stderr to their end), in one Node process.
#   python     sdk/python/bench/run_true.py: the same with the Python SDK.
#   cli        `paddock exec BOX -- true`, a process per run (its start,
#              the config read and a new connection are in the figure).
#
# Each side warms up (one run not counted), then N runs, ROUNDS times,
# interleaved; medians of every run. RESULT: the TypeScript and Python
# SDKs' median ms, ratio against raw (target none: the SDKs do more than
# the floor — they read both streams — and the ratio says what that costs).
#
# Needs root, node with npm and tsc (node-typescript), python3 with
# python3-build (the wheel is built with Debian's python3, as test-sdk-python.sh
# builds it).
BENCH_NAME=sdk_run_true_ms
BENCH_TARGET=none
. "$(dirname "$0")/common.sh"

N=${N:-30}
ROUNDS=${ROUNDS:-3}
for c in node npm tsc python3; do
	command -v "$c" >/dev/null || skip_all "$c is not installed"
done
TS_SRC=$TOP_SRCDIR/sdk/typescript
PY_SRC=$TOP_SRCDIR/sdk/python
[ -d "$TS_SRC/src" ] && [ -d "$PY_SRC/paddock" ] || skip_all "no SDK sources"

PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
bench_start_http() {
	pd_setup || bench_broken "cannot set up"
	trap bench_cleanup EXIT
	trap 'exit 130' INT TERM
	sed -i "s|^listen *=.*|listen = 127.0.0.1:$PORT|" "$PD_TMP/paddock.ini"
	pd_start
}
bench_start_http
pd_owner || bench_broken "no owner token"
hc -fsS -o /dev/null -X PUT boxes/bench/ && hc -fsS -o /dev/null -X PUT --data running boxes/bench/state ||
	bench_broken "cannot start the box"

# The TypeScript SDK, built and installed as a user would (npm pack).
export npm_config_cache=$PD_TMP/npm-cache
TS=$PD_TMP/ts
mkdir -p "$TS/sdk" "$TS/app"
cp -r "$TS_SRC/src" "$TS_SRC/package.json" "$TS_SRC"/tsconfig*.json "$TS_SRC/README.md" \
	"$TS_SRC/LICENSE" "$TS/sdk/"
(cd "$TS/sdk" && npm run -s build && npm --offline --no-audit --no-fund --loglevel=error pack \
	--ignore-scripts --pack-destination "$TS" >/dev/null) >"$PD_TMP/ts-build.log" 2>&1 ||
	{ cat "$PD_TMP/ts-build.log"; bench_broken "the TypeScript SDK does not build"; }
printf '{ "name": "bench", "version": "1.0.0", "private": true }\n' >"$TS/app/package.json"
(cd "$TS/app" && npm --offline --no-audit --no-fund --loglevel=error install "$TS"/paddock-sdk-*.tgz \
	>/dev/null) || bench_broken "the TypeScript SDK does not install"
cp "$TS_SRC/bench/run-true.mjs" "$TS/app/"

# The Python SDK from its wheel.
PY=$PD_TMP/py
mkdir -p "$PY"
cp -r "$PY_SRC" "$PY/src"
(cd "$PY/src" && /usr/bin/python3 -m build --wheel --no-isolation --outdir "$PY/dist" >"$PD_TMP/py-build.log" 2>&1) ||
	{ cat "$PD_TMP/py-build.log"; bench_broken "the Python SDK's wheel does not build"; }
WHEEL=$(ls "$PY"/dist/*.whl)

export PADDOCK_URL=$PD_URL PADDOCK_TOKEN=$PD_TOKEN PADDOCK_CONFIG=$PD_TMP/no-config.ini
PADDOCK=$TOP_BUILDDIR/cli/paddock

cat >"$PD_TMP/raw.py" <<'PY'
import http.client, os, statistics, sys, time, urllib.parse
u = urllib.parse.urlsplit(os.environ["PADDOCK_URL"])
auth = {"Authorization": "Bearer " + os.environ["PADDOCK_TOKEN"]}
c = http.client.HTTPConnection(u.hostname, u.port)
def req(method, path, body=None):
    c.request(method, "/v1/tree/boxes/bench/exec/" + path, body=body, headers=auth)
    r = c.getresponse()
    data = r.read()
    if r.status >= 300:
        sys.exit(f"{method} {path}: {r.status} {data!r}")
    return data
n, tag = int(sys.argv[1]), sys.argv[2]
times = []
for i in range(n + 1):
    job = f"raw-{tag}-{i}"
    t0 = time.perf_counter()
    req("PUT", job + "/")
    req("PUT", job + "/cmd", b"true")
    code = req("GET", job + "/exit").strip()
    if code != b"0":
        sys.exit(f"exit {code!r}")
    if i:
        times.append((time.perf_counter() - t0) * 1000)
    req("DELETE", job)
print(f"median {statistics.median(times):.1f} ms, mean {statistics.mean(times):.1f} ms ({n} runs)")
PY

: >"$PD_TMP/raw.ms"
: >"$PD_TMP/ts.ms"
: >"$PD_TMP/py.ms"
: >"$PD_TMP/cli.ms"
median_of() { sed -n 's/^median \([0-9.]*\) ms.*/\1/p'; }
for r in $(seq "$ROUNDS"); do
	python3 "$PD_TMP/raw.py" "$N" "$r" | median_of >>"$PD_TMP/raw.ms" || bench_broken "raw HTTP failed"
	(cd "$TS/app" && node run-true.mjs bench "$N") | median_of >>"$PD_TMP/ts.ms" ||
		bench_broken "the TypeScript run failed"
	PYTHONPATH=$WHEEL python3 "$PY_SRC/bench/run_true.py" --json bench "$N" | jq -r .median_ms >>"$PD_TMP/py.ms" ||
		bench_broken "the Python run failed"
	"$PADDOCK" exec bench -- true || bench_broken "paddock exec failed"
	for _ in $(seq "$N"); do
		t0=$(now_us)
		"$PADDOCK" exec bench -- true || bench_broken "paddock exec failed"
		echo "$(( $(now_us) - t0 ))" | awk '{ print $1 / 1000 }' >>"$PD_TMP/cli.all"
	done
	sort -n "$PD_TMP/cli.all" | awk '{ a[NR] = $1 } END { print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2) }' >>"$PD_TMP/cli.ms"
	rm -f "$PD_TMP/cli.all"
	for j in $(hc -fsS boxes/bench/exec/ | jq -r '.entries[] | select(.type == "dir") | .name'); do
		hc -fsS -o /dev/null -X DELETE "boxes/bench/exec/$j" || true
	done
done
med() { bench_stats "$1" | cut -d' ' -f1; }
raw=$(med "$PD_TMP/raw.ms")
ts=$(med "$PD_TMP/ts.ms")
py=$(med "$PD_TMP/py.ms")
cli=$(med "$PD_TMP/cli.ms")
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
echo "commands.run(\"true\") round trip, median ms of $N runs x $ROUNDS rounds (the box: tiny):"
echo "  raw HTTP (3 requests, one connection)  $raw"
echo "  TypeScript SDK                          $ts  ($(ratio "$ts" "$raw") x raw)"
echo "  Python SDK                              $py  ($(ratio "$py" "$raw") x raw)"
echo "  paddock exec (a process per run)        $cli  ($(ratio "$cli" "$raw") x raw)"
echo "RESULT sdk_ts_run_true_ms=$ts ratio=$(ratio "$ts" "$raw") target=none"
echo "RESULT sdk_py_run_true_ms=$py ratio=$(ratio "$py" "$raw") target=none"
