#!/bin/bash
# prompt.sh - how long a prompt takes to show its first event, per agent,
# against the same agent command run by hand in the same box.
#
# The four npm agents in a box of the `agents` image, each pointed at the
# fake model of tests/integration/fake-model.py (the fake internet of
# tests/integration/agents-lib.sh; its answers take no time, so the figures
# are the agents' and Paddock's own). Per agent, BENCH_N runs (5) of each,
# interleaved:
#
#   prompt    mkdir prompts/P, write agent, then the time from the write
#             of `text` (open, write, close) to the first line in `events`
#             (polled every 2 ms through FUSE);
#   by hand   an exec job of the same command line (argv and environment
#             read from the prompt's spec.json, the secrets given the same
#             way), from the write of `cmd` to the first line of its
#             `stdout`.
#
# Ratio = prompt median / by-hand median; target <= 1.2 (the prompt adds
# the agent's settings, its command line and the normalizer; the agent's
# own start dominates both). Also printed, no target: the time to `end`,
# and the size each agent takes in the image (its npm package directory).
#
# Needs root, a built tree, the agents image prepared in PD_IMAGES (never
# built here: skipped without it) and dnsmasq. One RESULT line per agent.
BENCH_NAME=prompt_first_event_ms
BENCH_TARGET=1.2
. "$(dirname "$0")/common.sh"
# shellcheck source=../integration/agents-lib.sh
. "$BENCH_DIR/../integration/agents-lib.sh"
require_root
command -v dnsmasq >/dev/null || skip_all "needs dnsmasq"
[ -d "${PD_IMAGES:-/nonexistent}/agents/rootfs" ] ||
	skip_all "needs the agents image in PD_IMAGES (scripts/mkimage agents)"
pd_model_outer "$0"
export PD_IMAGE=agents
pd_model_daemon
trap bench_cleanup EXIT

N=${BENCH_N:-5}
A=$M/boxes/a
mkdir "$A" || bench_broken "cannot make box a"
printf 'allowlist\n@claude\n@codex\n@opencode\n@pi\n' >"$A/policy" ||
	bench_broken "the presets are refused"
printf %s sk-bench-ant >"$M/secrets/ANTHROPIC_API_KEY" &&
	printf %s sk-bench-oai >"$M/secrets/OPENAI_API_KEY" &&
	printf 'ANTHROPIC_API_KEY\nOPENAI_API_KEY\n' >"$A/secrets" || bench_broken "no secrets"
echo running >"$A/state" || bench_broken "box a does not start"

# measure prompt P AGENT | measure job J SPEC: one run (a prompt of AGENT,
# or an exec job of the command in the prompt's SPEC); prints "first_ms
# end_ms": from the write of text (cmd) to the first line of events
# (stdout), and to the end.
measure() {
	python3 - "$@" <<'PY'
import json, os, shlex, sys, time
kind, d, arg = sys.argv[1:4]
os.mkdir(d)
if kind == "prompt":
    open(d + "/agent", "w").write(arg + "\n")
    start, text, stream = "text", "Write hello.txt with content: bench\n", "events"
else:
    spec = json.load(open(arg))
    argv = spec["argv"]
    if len(argv) > 3 and argv[1] == "-lc":  # the box's login shell around it
        argv = argv[3:]
    base = ("HOME=", "USER=", "PATH=", "LANG=", "TERM=")
    open(d + "/env", "w").write("".join(e + "\n" for e in spec.get("env", [])
                                        if not e.startswith(base)))
    start, text, stream = "cmd", " ".join(shlex.quote(a) for a in argv) + "\n", "stdout"


def has_line(path):
    # A read at the end of a followed stream waits while it runs: O_NONBLOCK.
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        return b"\n" in os.read(fd, 65536)
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


t0 = time.monotonic()
with open(d + "/" + start, "w") as f:
    f.write(text)
first = None
while True:
    if first is None and has_line(d + "/" + stream):
        first = time.monotonic() - t0
    with open(d + "/status") as f:
        status = f.read().strip()
    if status not in ("created", "running", ""):
        break
    if time.monotonic() - t0 > 300:
        sys.exit("%s did not end" % d)
    time.sleep(0.002)
end = time.monotonic() - t0
if status != "exited 0" or first is None:
    sys.exit("%s: %s: %s" % (d, status, open(d + "/output").read()[-2000:]))
print("%.1f %.1f" % (first * 1000, end * 1000))
PY
}

echo "prompt.sh: $N runs per agent and kind, box of the agents image, fake model"
for agent in $MODEL_AGENTS; do
	: >"$PD_TMP/$agent.prompt" && : >"$PD_TMP/$agent.hand" && : >"$PD_TMP/$agent.pend" && : >"$PD_TMP/$agent.hend"
	# A warm-up prompt, whose spec.json gives the by-hand command.
	measure prompt "$A/prompts/$agent-w" "$agent" >/dev/null || bench_broken "$agent: the prompt failed"
	spec=$(ls "$D"/boxes/*/prompts/"$agent-w"/spec.json 2>/dev/null | head -n1)
	[ -f "$spec" ] || bench_broken "no spec.json of prompt $agent-w"
	measure job "$A/exec/$agent-w" "$spec" >/dev/null || bench_broken "$agent: the exec job failed"
	for ((i = 0; i < N; i++)); do
		read -r f e < <(measure prompt "$A/prompts/$agent-$i" "$agent") || bench_broken "$agent: prompt $i"
		echo "$f" >>"$PD_TMP/$agent.prompt" && echo "$e" >>"$PD_TMP/$agent.pend"
		read -r f e < <(measure job "$A/exec/$agent-$i" "$spec") || bench_broken "$agent: job $i"
		echo "$f" >>"$PD_TMP/$agent.hand" && echo "$e" >>"$PD_TMP/$agent.hend"
	done
done

echo
printf '%-9s %14s %14s %7s %12s %12s %10s\n' agent "prompt 1st ms" "by hand 1st" ratio "prompt end" "by hand end" "image MiB"
results=()
for agent in $MODEL_AGENTS; do
	read -r pm _ <<<"$(bench_stats "$PD_TMP/$agent.prompt")"
	read -r hm _ <<<"$(bench_stats "$PD_TMP/$agent.hand")"
	read -r pe _ <<<"$(bench_stats "$PD_TMP/$agent.pend")"
	read -r he _ <<<"$(bench_stats "$PD_TMP/$agent.hend")"
	pkg=$(sed -n "/^\[$agent\]/,/^\[/ s/^package *= *//p" "$PD_IMAGES/agents/agents.ini")
	mib=$(du -sm "$PD_IMAGES/agents/rootfs/usr/local/lib/node_modules/$pkg" 2>/dev/null | cut -f1)
	ratio=$(awk -v a="$pm" -v b="$hm" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')
	printf '%-9s %14s %14s %7s %12s %12s %10s\n' "$agent" "$pm" "$hm" "$ratio" "$pe" "$he" "${mib:-?}"
	results+=("RESULT prompt_first_event_ms_$agent=$pm ratio=$ratio target=$BENCH_TARGET")
done
echo
printf '%s\n' "${results[@]}"
