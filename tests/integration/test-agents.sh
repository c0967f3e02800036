#!/bin/bash
# The four npm coding agents, real binaries in a box of the agents image,
# each sent a prompt that its model (a fake one, tests/integration/
# fake-model.py, in the fake internet this test builds as test-net-dns.sh
# does) answers with one tool call writing hello.txt, then "Wrote
# hello.txt":
#
#   model.test  198.51.100.20:8080  the fake model (Anthropic Messages,
#                                   OpenAI Responses and Chat Completions)
#   other.test  198.51.100.21:8080  the same server, named by no preset
#
# The daemon's config points every agent at http://model.test:8080
# ([agent NAME] base_url); box a's policy is an allowlist of the four
# presets (@claude @codex @opencode @pi: model.test only); the API keys are
# secrets named in its `secrets` file. For each agent: hello.txt in root/
# with the prompt's content, the normalized events (start with the
# session, tool_call writing hello.txt, tool_result, message, end last),
# result, exit 0, the key reached the model (the server logs it) and is in
# no daemon log, job record, info, snapshot or export. Then: a prompt
# resuming another's session, the CLI's `paddock prompt`, a codex prompt
# killed while it waits for its model leaves no key in the box, and a box
# under deny-all (or an allowlist without the preset) gets an error event
# and end at once.
. "$(dirname "$0")/lib.sh"
require_root
command -v python3 >/dev/null || skip_all "needs python3"
command -v dnsmasq >/dev/null || skip_all "needs dnsmasq (scripts/install-deps)"
command -v zstd >/dev/null || skip_all "needs zstd"

# shellcheck source=agents-lib.sh
. "$(dirname "$0")/agents-lib.sh"
AGENTS=$MODEL_AGENTS
pd_model_outer "$0"
pd_use_image agents
pd_model_daemon
PADDOCK=${PADDOCK:-$TOP_BUILDDIR/cli/paddock}
# The CLI, as a command (timeout runs it).
PD="env PADDOCK_CONFIG=$PD_TMP/cli.ini $PADDOCK --url unix:$SOCK"
export PADDOCK SOCK PD_TMP PD_MODEL_LOG PD

# Keys no file of the test's names: random, so that a grep finds only
# copies of them.
ANT_KEY=sk-ant-test-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
OAI_KEY=sk-oai-test-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
export ANT_KEY OAI_KEY
# no_key FILE...: no file holds either key (grep's 1: no match and no
# error; 2, an unreadable file, is a failure too).
no_key() {
	local found
	found=$(grep -rlsF -D skip --exclude-dir=lxcfs.d -e "$ANT_KEY" -e "$OAI_KEY" "$@")
	[ -z "$found" ] || { echo "$found" | sed 's/^/# the key is in: /'; return 1; }
}
export -f no_key
key_of() { [ "$1" = codex ] && echo "$OAI_KEY" || echo "$ANT_KEY"; }

A=$M/boxes/a
HOMEDIR=$A/root/config
ok "the agents are listed with their versions" \
	bash -c "for a in $AGENTS; do grep -q '^version ' $M/agents/\$a || exit 1; done"
ok "the keys are set as secrets" \
	bash -c "printf %s '$ANT_KEY' > $M/secrets/ANTHROPIC_API_KEY && printf %s '$OAI_KEY' > $M/secrets/OPENAI_API_KEY"
mkdir "$A"
ok "box a receives both" bash -c "printf 'ANTHROPIC_API_KEY\nOPENAI_API_KEY\n' > $A/secrets"
ok "box a's policy: an allowlist of the four presets" \
	bash -c "printf 'allowlist\n@claude\n@codex\n@opencode\n@pi\n' > $A/policy"
ok "box a runs" bash -c "echo running > $A/state"

# ended P: the prompt's status is final.
ended() {
	local s
	s=$(cat "$1/status" 2>/dev/null) || return 1
	[ -n "$s" ] && [ "$s" != running ] && [ "$s" != created ]
}
export -f ended wait_for

# finish P SECONDS: waits for prompt P to end; past SECONDS it is killed
# (reading `exit` of a running prompt would wait for it) and 1 returned.
finish() {
	wait_for "$2" ended "$1" && return 0
	echo kill >"$1/ctl"
	wait_for 30 ended "$1"
	return 1
}
export -f finish

# check_events FILE AGENT CONTENT: the schema's run of a scripted prompt.
check_events() {
	python3 - "$@" <<'PY'
import json, sys
path, agent, content = sys.argv[1:4]
lines = open(path).read().splitlines()
ev = [json.loads(l) for l in lines]
for l, e in zip(lines, ev):
    assert l.startswith('{"type":"') and list(e)[:2] == ["type", "time"], l
    assert e["time"].endswith("Z") and "." in e["time"], e["time"]
types = [e["type"] for e in ev]
assert types[0] == "start" and types.count("start") == 1, types
assert ev[0]["agent"] == agent and ev[0].get("session"), ev[0]
assert types[-1] == "end" and types.count("end") == 1, types
calls = [e for e in ev if e["type"] == "tool_call" and "hello.txt" in json.dumps(e["input"])]
assert calls, "no tool call writing hello.txt: %s" % types
assert content in json.dumps(calls[0]["input"]), calls[0]
res = [e for e in ev if e["type"] == "tool_result" and e["id"] == calls[0]["id"]]
assert res and res[0]["is_error"] is False, res
assert types.index("tool_result") > types.index("tool_call")
msgs = [e for e in ev if e["type"] == "message"]
assert msgs and msgs[-1]["text"] == "Wrote hello.txt", msgs
assert "usage" in types, types
assert "error" not in types, [e for e in ev if e["type"] == "error"]
assert ev[-1]["exit"] == 0 and ev[-1]["result"] == "Wrote hello.txt", ev[-1]
PY
}
# model_saw KEY SINCE: the fake model got a model request with KEY after
# line SINCE of its log.
model_saw() {
	tail -n +"$(($2 + 1))" "$PD_MODEL_LOG" | python3 -c '
import json, sys
key = sys.argv[1]
ok = any(json.loads(l)["key"] == key and json.loads(l)["path"].split("?")[0].endswith(("/messages", "/responses", "/chat/completions")) for l in sys.stdin)
sys.exit(0 if ok else 1)' "$1"
}
export -f check_events model_saw

# ---- each agent, one scripted prompt
for agent in $AGENTS; do
	P=$A/prompts/$agent
	content="made by $agent $$"
	rm -f "$HOMEDIR/hello.txt"
	since=$(wc -l <"$PD_MODEL_LOG")
	mkdir "$P" && echo "$agent" >"$P/agent"
	ok "$agent: the prompt starts" \
		bash -c "echo 'Write hello.txt with content: $content' > $P/text"
	ok "$agent: it ends within 180 s" finish "$P" 180
	ok "$agent: exit 0" same "$(cat "$P/exit" 2>/dev/null)" 0
	[ "$(cat "$P/exit" 2>/dev/null)" = 0 ] || tail -n 20 "$P/output" | sed 's/^/# /'
	ok "$agent: status exited 0" same "$(cat "$P/status")" "exited 0"
	ok "$agent: hello.txt in root/ with the content" \
		same "$(cat "$HOMEDIR/hello.txt" 2>/dev/null)" "$content"
	ok "$agent: the events: start, tool_call, tool_result, message, usage, end" \
		check_events "$P/events" "$agent" "$content"
	ok "$agent: result" same "$(cat "$P/result")" "Wrote hello.txt"
	ok "$agent: session is the start event's" \
		bash -c "[ -n \"\$(cat $P/session)\" ] && head -n1 $P/events | grep -qF \"\\\"session\\\":\\\"\$(cat $P/session)\\\"\""
	ok "$agent: the model saw its key" model_saw "$(key_of "$agent")" "$since"
done

# ---- resuming a session
P=$A/prompts/claude2
rm -f "$HOMEDIR/hello.txt"
mkdir "$P" && echo claude >"$P/agent" && echo claude >"$P/continue"
echo "Write hello.txt with content: again $$" >"$P/text"
ok "continue: the prompt ends with exit 0" \
	bash -c "finish $P 180 && [ \"\$(cat $P/exit)\" = 0 ]"
ok "continue: the session resumed is the first prompt's" \
	same "$(cat "$P/session")" "$(cat "$A/prompts/claude/session")"
ok "continue: hello.txt written again" same "$(cat "$HOMEDIR/hello.txt" 2>/dev/null)" "again $$"

# ---- the CLI
ok "paddock prompt: exit 0 and the answer" \
	bash -c "out=\$(timeout 180 \$PD prompt a --agent pi 'Write hello.txt with content: cli $$') &&
		grep -q 'Wrote hello.txt' <<<\"\$out\" && [ \"\$(cat $HOMEDIR/hello.txt)\" = 'cli $$' ]"
ok "paddock prompt --json: the normalized events" \
	bash -c "timeout 180 \$PD prompt a --agent opencode --json 'Write hello.txt with content: json $$' > $PD_TMP/cli.jsonl &&
		check_events $PD_TMP/cli.jsonl opencode 'json $$'"

# ---- a codex prompt killed while its model holds the request
P=$A/prompts/hang
since=$(wc -l <"$PD_MODEL_LOG")
mkdir "$P" && echo codex >"$P/agent"
echo "PADDOCK-HANG write hello.txt" >"$P/text"
ok "killed codex: its request reached the model" \
	wait_for 60 bash -c "[ \$(wc -l < $PD_MODEL_LOG) -gt $since ]"
sleep 1
echo kill >"$P/ctl"
ok "killed codex: the prompt ends" finish "$P" 30
ok "killed codex: the box's home holds no copy of the key" no_key "$HOMEDIR"

# ---- the keys are nowhere but where they belong
ok "no key in the daemon's log" no_key "$PD_TMP/paddockd.log"
ok "no key in the data directory's files (job records, specs, the box's layers)" \
	no_key "$D" "$PD_TMP/run"
ok "no key in info" no_key "$A/info"
ok "no key in the prompts' files" \
	bash -c "cat $A/prompts/*/{events,output,result,session} > $PD_TMP/prompt-files && no_key $PD_TMP/prompt-files"
ok "no key in a snapshot's export" \
	bash -c "echo agents > $A/snapshot && s=\$(readlink $A/snapshots/last) &&
		! (cat $M/snapshots/\$s/export | zstd -dc | grep -aqF -e '$ANT_KEY' -e '$OAI_KEY')"

# ---- a box whose policy does not reach the model
B=$M/boxes/b
mkdir "$B"
echo deny-all >"$B/policy"
echo ANTHROPIC_API_KEY >"$B/secrets"
echo running >"$B/state"
t0=$(date +%s)
mkdir "$B/prompts/d" && echo claude >"$B/prompts/d/agent"
echo "Write hello.txt with content: denied" >"$B/prompts/d/text" 2>/dev/null
ok "deny-all: the prompt ends within 10 s" finish "$B/prompts/d" 10
ok "deny-all: it took under 10 s" bash -c "[ \$(( \$(date +%s) - $t0 )) -lt 10 ]"
ok "deny-all: an error event naming the policy and the preset, then end with exit 1" \
	python3 -c '
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
err = [e for e in ev if e["type"] == "error"]
assert err and "deny-all" in err[0]["message"] and "@claude" in err[0]["message"], ev
assert ev[-1]["type"] == "end" and ev[-1]["exit"] == 1, ev[-1]' "$B/prompts/d/events"
ok "deny-all: exit 1" same "$(cat "$B/prompts/d/exit")" 1
ok "deny-all: no hello.txt" test ! -e "$B/root/config/hello.txt"
echo "allowlist
other.test" >"$B/policy"
mkdir "$B/prompts/o" && echo codex >"$B/prompts/o/agent"
echo "Write hello.txt with content: denied" >"$B/prompts/o/text" 2>/dev/null
ok "an allowlist without @codex: an error event, end, exit 1 at once" \
	bash -c "finish $B/prompts/o 10 && [ \"\$(cat $B/prompts/o/exit)\" = 1 ] &&
		grep -q '\"type\":\"error\".*@codex' $B/prompts/o/events"

pd_done
