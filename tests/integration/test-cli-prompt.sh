#!/bin/bash
# `paddock prompt` against a real daemon, real agents in a box of the agents
# image, and the fake model server (fake-model.py) in the fake internet of
# agents-lib.sh (the daemon in a "host" namespace whose default route leads
# to an "inet" namespace where the model answers at model.test; no real
# model is reachable). Each agent's base_url in the daemon's config points
# at it; the box's policy is an allowlist of the agent's preset (@AGENT),
# which expands to that host.
#
# For every agent the image holds (/paddock/agents/): readable events (a
# tool call line naming hello.txt, the answer), the file in the box, exit
# 0, usage on stderr only; --json (JSON lines, start first, end last);
# the prompt's key reached the model but not the CLI's output. Then, with
# the first agent: TEXT from stdin ("-"), --continue, --cwd; a deny-all
# box ends at once with the agent error naming the preset (exit 1, no
# hang); an unknown agent fails with the server's reason and leaves no
# prompt behind; Ctrl-C sends kill (the prompt ends killed, the CLI
# exits 130).
#
# Skips (77) only when the agents image is not built and cannot be, or
# the machine cannot build the fake internet (python3, dnsmasq).
. "$(dirname "$0")/lib.sh"
require_root
# shellcheck source=agents-lib.sh
. "$(dirname "$0")/agents-lib.sh"
PADDOCK=${PADDOCK:-$TOP_BUILDDIR/cli/paddock}

pd_model_can || skip_all "needs python3 and dnsmasq (scripts/install-deps)"
pd_image_cache agents ||
	skip_all "the agents image is not built and cannot be (needs the Debian mirror and the npm registry)"
pd_model_outer "$0"
export PD_IMAGE=agents
pd_model_daemon
pd_owner || { diag "cannot log in as the owner"; exit 1; }
export PADDOCK_CONFIG=$PD_TMP/cli/config.ini PADDOCK_URL=$PD_URL PADDOCK_TOKEN=$PD_TOKEN
paddock() { "$PADDOCK" "$@"; }
export -f paddock
export PADDOCK M PD_TMP PD_MODEL_LOG

agents=$(ls "$M/agents" 2>/dev/null)
ok "the agents image holds agents (/paddock/agents/: $(echo $agents))" test -n "$agents"
first=${agents%%$'\n'*}

# secrets_for AGENT: its secrets' names (the "secrets" line of agents/NAME).
secrets_for() { sed -n 's/^secrets //p' "$M/agents/$1"; }

# A box per agent, its policy the agent's preset, its keys as secrets.
for a in $agents; do
	box=p-$a
	key=sk-test-$a-$RANDOM$RANDOM
	echo "$key" >"$PD_TMP/key-$a"
	ok "$a: a box of the agents image under 'allowlist @$a'" bash -c "
		paddock new --name $box --ttl 1800 >/dev/null &&
		printf 'allowlist\n@%s\n' $a > '$M/boxes/$box/policy'"
	names=$(secrets_for "$a")
	for s in $names; do printf '%s' "$key" >"$M/secrets/$s"; done
	ok "$a: the secrets it needs ($names) named in the box's secrets" \
		bash -c "printf '%s\n' $names > '$M/boxes/$box/secrets'"

	out=$PD_TMP/$a.out err=$PD_TMP/$a.err
	timeout 600 "$PADDOCK" prompt --agent "$a" "$box" \
		'Create the file hello.txt with content:' 'hi from the fake model' >"$out" 2>"$err"
	rc=$?
	ok "$a: paddock prompt exits 0 (the agent's status)" same "$rc" 0 ||
		{ sed 's/^/#   /' "$err" | tail -n 20; }
	ok "$a: a tool call shown on one line, naming hello.txt or its command" \
		bash -c "grep -E '^→ [^ ]+ .*hello\.txt' '$out'"
	ok "$a: the answer shown in full" grep -q 'Wrote hello.txt' "$out"
	ok "$a: the file is in the box's root/ (the agent's working directory: home)" \
		grep -qs 'hi from the fake model' "$M/boxes/$box/root/config/hello.txt"
	ok "$a: the prompt's name and usage on stderr, not stdout" bash -c "
		grep -q '^paddock: prompt cli-' '$err' && ! grep -q '^paddock:' '$out'"
	ok "$a: the key reached the model" grep -q "$key" "$PD_MODEL_LOG"
	ok "$a: the key is not in the CLI's output" bash -c "! grep -q '$key' '$out' '$err'"

	timeout 600 "$PADDOCK" --json prompt --agent "$a" "$box" 'Create hello.txt again' \
		>"$out.json" 2>"$err.json"
	rc=$?
	ok "$a: --json exits 0" same "$rc" 0
	ok "$a: --json prints JSON lines only: start first, end (exit 0) last" python3 -c '
import json, sys
evs = [json.loads(l) for l in open(sys.argv[1])]
assert evs and all(isinstance(e, dict) and isinstance(e.get("type"), str) and "time" in e for e in evs)
assert evs[0]["type"] == "start", evs[0]
assert evs[-1]["type"] == "end" and evs[-1]["exit"] == 0, evs[-1]
assert any(e["type"] == "tool_call" for e in evs)
' "$out.json"
	ok "$a: --json says nothing on stderr" test ! -s "$err.json"
done

box=p-$first
# --- TEXT from standard input, --cwd, --continue ----------------------------------
mkdir -p "$M/boxes/$box/root/tmp/demo" && chmod 0777 "$M/boxes/$box/root/tmp/demo"
ok "prompt BOX - reads the text from stdin; --cwd sets where the agent works" bash -c "
	echo 'Create hello.txt with content: hi from the fake model' |
		timeout 600 "$PADDOCK" prompt --agent $first --cwd /tmp/demo $box - >'$PD_TMP/stdin.out' 2>&1 &&
	grep -q 'hi from the fake model' '$M/boxes/$box/root/tmp/demo/hello.txt'"
last=$(readlink "$M/boxes/$box/prompts/last" 2>/dev/null)
last=${last##*/}
ok "the prompt's text is what stdin held" bash -c "
	grep -q 'hi from the fake model' '$M/boxes/$box/prompts/$last/text' 2>/dev/null ||
	grep -rqs 'hi from the fake model' '$M/boxes/$box/prompts/'*/text"
prev=$(ls -t "$M/boxes/$box/prompts" | grep -v '^last$' | head -n1)
ok "--continue P resumes an earlier prompt's session, exit 0" bash -c "
	timeout 600 "$PADDOCK" prompt --agent $first --continue '$prev' $box 'And once more' >/dev/null 2>'$PD_TMP/cont.err' ||
	{ sed 's/^/#   /' '$PD_TMP/cont.err'; false; }"

# --- refusals -------------------------------------------------------------------
n_before=$(ls "$M/boxes/$box/prompts" | grep -vc '^last$')
ok "an unknown agent: exit 1 with the server's reason" bash -c "
	! timeout 60 "$PADDOCK" prompt --agent nosuchagent $box 'hi' 2>'$PD_TMP/bad.err' &&
	grep -q 'nosuchagent' '$PD_TMP/bad.err'"
ok "... and no prompt is left behind" \
	same "$(ls "$M/boxes/$box/prompts" | grep -vc '^last$')" "$n_before"

paddock new --name p-deny --ttl 600 >/dev/null
printf 'deny-all\n' >"$M/boxes/p-deny/policy"
start=$(date +%s)
timeout 120 "$PADDOCK" prompt --agent "$first" p-deny 'hi' >"$PD_TMP/deny.out" 2>"$PD_TMP/deny.err"
rc=$?
ok "deny-all: the prompt ends at once (no hang), exit 1" bash -c "
	[ $rc = 1 ] && [ \$((\$(date +%s) - $start)) -lt 60 ]"
ok "deny-all: the agent error names the policy and the preset to add" bash -c "
	grep -q '^paddock: agent error: .*@$first' '$PD_TMP/deny.err'"

# --- Ctrl-C ---------------------------------------------------------------------
# The agent is pointed at a server that never answers (MODEL_SILENT: its
# base URL in the prompt's env, allowed by the policy), so it runs until
# killed.
slow=http://$MODEL_SILENT:$MODEL_PORT
printf 'allowlist\n@%s\n%s\n' "$first" "$MODEL_SILENT" >"$M/boxes/$box/policy"
"$PADDOCK" prompt --agent "$first" --env "ANTHROPIC_BASE_URL=$slow" \
	--env "OPENAI_BASE_URL=$slow/v1" "$box" 'wait' \
	>"$PD_TMP/int.out" 2>"$PD_TMP/int.err" &
cli=$!
wait_for 60 grep -q '^paddock: prompt cli-' "$PD_TMP/int.err"
p=$(sed -n 's/^paddock: prompt \(cli-[a-z0-9]*\)$/\1/p' "$PD_TMP/int.err")
wait_for 60 grep -q running "$M/boxes/$box/prompts/$p/status"
kill -INT "$cli"
wait "$cli"
rc=$?
ok "Ctrl-C: the CLI exits 130" same "$rc" 130
ok "Ctrl-C: it said it stops the agent" grep -q 'stopping the agent' "$PD_TMP/int.err"
ok "Ctrl-C: the prompt was killed (status)" \
	wait_for 30 grep -q '^killed' "$M/boxes/$box/prompts/$p/status"

for a in $agents; do paddock rm "p-$a"; done
paddock rm p-deny
pd_done
