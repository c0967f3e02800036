#!/bin/bash
# http.sh - the HTTP mirror and the CLI against the same work through the
# FUSE tree or plain tools, in one go on one private daemon:
#
#   1. GET of a control file (boxes/X/state) over HTTP against a FUSE read
#      of it: one python3 process each, BENCH_LOOP (2000) requests on one
#      keep-alive connection (a minimal client: one prepared request, the
#      reply read by Content-Length) vs BENCH_LOOP open+read+close; five
#      interleaved rounds, median. Ratio = HTTP / FUSE µs per op;
#      target <= 2.
#   2. `paddock push BOX SRC --to DIR` of a 10,000-file tree (BENCH_DIRS x
#      BENCH_FILES files of 512-1536 bytes) against `tar -cf - | tar -xf -`
#      of the same tree into a directory on the same disk. BENCH_RUNS (3)
#      runs each, alternating; ratio = tar median time / push median time
#      (a throughput ratio: higher is better); target >= 0.5.
#   3. `paddock exec BOX -- true` against the same job through the tree
#      (mkdir exec/JOB, write `true` to cmd, read exit) from a shell, both
#      under hyperfine (BENCH_EXEC_RUNS, 30). Ratio = CLI / tree; target
#      <= 3.
#
# The CLI talks TCP with a bearer token (as from a laptop), not the unix
# socket. Needs root and a built tree; prints a block and three RESULT lines.

set -u
export LC_ALL=C
BENCH_NAME=http_get_us
BENCH_TARGET=2
. "$(cd "$(dirname "$0")" && pwd)/common.sh"

LOOP=${BENCH_LOOP:-2000}
NDIRS=${BENCH_DIRS:-100}
NFILES=${BENCH_FILES:-100}
RUNS=${BENCH_RUNS:-3}
EXEC_RUNS=${BENCH_EXEC_RUNS:-30}
# The CLI built with the daemon measured (a plain copy from run-all.sh).
PADDOCK=${PADDOCK:-$(cd "$(dirname "$PADDOCKD")/.." && pwd)/cli/paddock}

command -v hyperfine >/dev/null || bench_broken "hyperfine is not installed"
[ -x "$PADDOCK" ] || bench_broken "no CLI at $PADDOCK (make)"
bench_start
pd_owner || bench_broken "cannot set the owner's password and log in"
export PADDOCK_URL=$PD_URL PADDOCK_TOKEN=$PD_TOKEN PADDOCK_CONFIG=$PD_TMP/cli.ini

BOX=httpbench
mkdir "$M/boxes/$BOX" || bench_broken "mkdir failed"
echo running >"$M/boxes/$BOX/state" || bench_broken "cannot start: $(cat "$M/boxes/$BOX/error")"

# --- 1. GET vs FUSE read ------------------------------------------------------
cat >"$PD_TMP/get.py" <<'PY'
import http.client, os, sys, time, urllib.parse
mode, n = sys.argv[1], int(sys.argv[2])
if mode == "http":
    # A minimal keep-alive client (one prepared request, responses parsed
    # by Content-Length), so the figure is the server's, not http.client's.
    import socket
    u = urllib.parse.urlparse(os.environ["PD_URL"])
    s = socket.create_connection((u.hostname, u.port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    req = ("GET /v1/tree/boxes/%s/state HTTP/1.1\r\nHost: x\r\n"
           "Authorization: Bearer %s\r\n\r\n" % (sys.argv[3], os.environ["PD_TOKEN"])).encode()
    buf = b""
    def op():
        global buf
        s.sendall(req)
        while b"\r\n\r\n" not in buf:
            buf += s.recv(65536)
        head, _, rest = buf.partition(b"\r\n\r\n")
        n = int([l.split(b":")[1] for l in head.split(b"\r\n")
                 if l.lower().startswith(b"content-length:")][0])
        while len(rest) < n:
            rest += s.recv(65536)
        body, buf = rest[:n], rest[n:]
        assert head.startswith(b"HTTP/1.1 200") and body == b"running\n", (head, body)
else:
    path = sys.argv[3]
    def op():
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        body = os.read(fd, 4096)
        while os.read(fd, 4096):
            pass
        os.close(fd)
        assert body == b"running\n", body
for count in (n // 10, n):
    t = time.perf_counter()
    for _ in range(count):
        op()
    t = time.perf_counter() - t
print("%.2f" % (t * 1e6 / n))
PY
: >"$PD_TMP/get_http"
: >"$PD_TMP/get_fuse"
for _ in 1 2 3 4 5; do
	python3 "$PD_TMP/get.py" http "$LOOP" "$BOX" >>"$PD_TMP/get_http" || bench_broken "HTTP GET loop failed"
	python3 "$PD_TMP/get.py" fuse "$LOOP" "$M/boxes/$BOX/state" >>"$PD_TMP/get_fuse" ||
		bench_broken "FUSE read loop failed"
done
read -r g_http _ < <(bench_stats "$PD_TMP/get_http")
read -r g_fuse _ < <(bench_stats "$PD_TMP/get_fuse")
get_ratio=$(bench_ratio "$g_http" "$g_fuse")

# --- 2. push vs tar | tar --------------------------------------------------------
SRC=$PD_TMP/src
python3 - "$SRC" "$NDIRS" "$NFILES" <<'PY'
import os, random, sys
root, nd, nf = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rnd = random.Random(7)
for d in range(nd):
    p = os.path.join(root, "d%03d" % d)
    os.makedirs(p)
    for f in range(nf):
        with open(os.path.join(p, "f%03d" % f), "wb") as fh:
            fh.write(rnd.randbytes(rnd.randint(512, 1536)))
PY
LOCAL=$D/tar-baseline
mkdir -p "$LOCAL"
: >"$PD_TMP/push_t"
: >"$PD_TMP/tar_t"
for i in $(seq 1 "$RUNS"); do
	sync
	s=$(now_us)
	"$PADDOCK" push "$BOX" "$SRC" --to "/tmp/push$i" >/dev/null 2>"$PD_TMP/push.err" ||
		bench_broken "paddock push failed: $(cat "$PD_TMP/push.err")"
	e=$(now_us)
	echo "$(((e - s) / 1000))" >>"$PD_TMP/push_t"
	sync
	mkdir -p "$LOCAL/t$i"
	s=$(now_us)
	tar -C "$SRC" -cf - . | tar -C "$LOCAL/t$i" -xf - || bench_broken "tar failed"
	e=$(now_us)
	echo "$(((e - s) / 1000))" >>"$PD_TMP/tar_t"
done
n_in_box=$(find "$(readlink "$M/boxes/$BOX/root")/tmp/push1" -type f | wc -l)
[ "$n_in_box" -eq $((NDIRS * NFILES)) ] || bench_broken "push left $n_in_box files, not $((NDIRS * NFILES))"
read -r p_med _ < <(bench_stats "$PD_TMP/push_t")
read -r t_med _ < <(bench_stats "$PD_TMP/tar_t")
push_ratio=$(bench_ratio "$t_med" "$p_med")
push_fps=$(python3 -c "print(round($NDIRS * $NFILES / ($p_med / 1000.0)))")

# --- 3. CLI exec vs the tree -----------------------------------------------------------
cat >"$PD_TMP/tree-exec.sh" <<SH
#!/bin/bash
j=t\$RANDOM\$RANDOM
mkdir "$M/boxes/$BOX/exec/\$j" && echo true >"$M/boxes/$BOX/exec/\$j/cmd" &&
	[ "\$(cat "$M/boxes/$BOX/exec/\$j/exit")" = 0 ]
SH
chmod +x "$PD_TMP/tree-exec.sh"
JSON=$PD_TMP/exec.json
hyperfine -N --style none --warmup 3 --runs "$EXEC_RUNS" --export-json "$JSON" \
	-n cli "$PADDOCK exec $BOX -- true" -n tree "$PD_TMP/tree-exec.sh" >/dev/null \
	2>"$PD_TMP/hyperfine.err" || bench_broken "hyperfine failed: $(cat "$PD_TMP/hyperfine.err")"
read -r e_cli e_tree < <(python3 - "$JSON" <<'PY'
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
print("%.2f %.2f" % (r["cli"]["median"] * 1e3, r["tree"]["median"] * 1e3))
PY
)
exec_ratio=$(bench_ratio "$e_cli" "$e_tree")

printf 'HTTP mirror and CLI; load %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
bench_build_note
printf '  GET boxes/X/state, keep-alive, %d per round, median of 5: HTTP %s us, FUSE read %s us\n' \
	"$LOOP" "$g_http" "$g_fuse"
printf '    ratio %s  target <= 2  met: %s\n' "$get_ratio" "$(bench_meets "$get_ratio" 2)"
printf '  push of %d files (median of %d): paddock push %s ms, tar | tar %s ms (%s files/s)\n' \
	$((NDIRS * NFILES)) "$RUNS" "$p_med" "$t_med" "$push_fps"
printf '    throughput ratio %s  target >= 0.5  met: %s\n' "$push_ratio" \
	"$(python3 -c "print('yes' if $push_ratio >= 0.5 else 'NO')")"
printf '  exec true (hyperfine, %d runs): paddock exec %s ms, through the tree %s ms\n' \
	"$EXEC_RUNS" "$e_cli" "$e_tree"
printf '    ratio %s  target <= 3  met: %s\n' "$exec_ratio" "$(bench_meets "$exec_ratio" 3)"
echo "RESULT http_get_us=$g_http ratio=$get_ratio target=2"
echo "RESULT push_files_per_s=$push_fps ratio=$push_ratio target=0.5"
echo "RESULT cli_exec_ms=$e_cli ratio=$exec_ratio target=3"
exit 0
