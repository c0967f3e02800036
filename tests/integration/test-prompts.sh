#!/bin/bash
# Prompts as files (engine/prompts.h) and the @AGENT policy presets,
# against a fake internet the test builds itself (as test-net-dns.sh):
#
#   model.test  198.51.100.20 (an HTTP server on :8080; on :8090 the fake
#               model server, fake-model.py: the configured base_url of
#               agent claude)
#   other.test  198.51.100.21 (the same HTTP server: not the agent's; on
#               :8090 a listener that never answers: a prompt that runs
#               until it is killed)
#
# The box image "agentbox" is the tiny image with an agents.ini naming
# claude (as scripts/mkimage agents writes it): the catalogue is real, no
# agent binary is run. Checked: /paddock/agents, a prompt's files and
# settings, every refused input with its reason, a prompt under deny-all
# (an error event naming the policy and the preset, end, exit 1, no
# process), allowlist + @claude reaching model.test only, and the same
# over HTTP. Then, when the agents image is in the cache (PD_IMAGES/agents)
# and the fake model server is there (it comes with the agents' adapters),
# the real claude in a box of that image, through the files only: events,
# result, session, the file it wrote, continue, and a prompt that runs
# across a daemon restart until ctl kill ends it.
. "$(dirname "$0")/lib.sh"
require_root
command -v python3 >/dev/null || skip_all "needs python3"
command -v dnsmasq >/dev/null || skip_all "needs dnsmasq (scripts/install-deps)"

WEB="198.51.100.20 198.51.100.21"
DNS=198.51.100.53
FAKE_MODEL=$TOP_SRCDIR/tests/integration/fake-model.py

if [ -z "${PD_NET_INSIDE:-}" ]; then
	# The real-agent part needs the agents image: built into the cache once
	# (test-agents.sh fails where it can be built and is not).
	pd_image_cache agents || diag "the agents image cannot be built here"
	tag=pdp$$
	cleanup_ns() {
		pd_fake_net_down
		rm -rf "/tmp/$tag-www"
	}
	trap cleanup_ns EXIT
	# shellcheck disable=SC2086
	pd_fake_net "$tag" $WEB $DNS || skip_all "cannot make network namespaces"
	mkdir -p "/tmp/$tag-www" && echo model >"/tmp/$tag-www/index.html"
	# shellcheck disable=SC2086
	pd_fake_serve "$INETNS" "/tmp/$tag-www" 8080 $WEB
	if [ -f "$FAKE_MODEL" ]; then
		ip netns exec "$INETNS" python3 "$FAKE_MODEL" --listen 198.51.100.20 --port 8090 \
			--content "hi from the fake model" --log "/tmp/$tag-www/model.log" \
			>"/tmp/$tag-www/model.out" 2>&1 &
		PD_FAKE_PIDS="$PD_FAKE_PIDS $!"
		ip netns exec "$INETNS" python3 -c 'import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("198.51.100.21", 8090)); s.listen(64)
held = []
while True:
    c, _ = s.accept(); held.append(c)' >/dev/null 2>&1 &
		PD_FAKE_PIDS="$PD_FAKE_PIDS $!"
	fi
	ip netns exec "$INETNS" dnsmasq --keep-in-foreground --no-resolv --no-hosts \
		--bind-interfaces --listen-address=$DNS --port=53 --user=root --pid-file= \
		--address=/model.test/198.51.100.20 --address=/other.test/198.51.100.21 \
		--local-ttl=60 >/dev/null 2>&1 &
	PD_FAKE_PIDS="$PD_FAKE_PIDS $!"
	pd_fake_wait "$INETNS" $([ -f "$FAKE_MODEL" ] && echo 5 || echo 3)
	PD_MODEL_LOG=/tmp/$tag-www/model.log PD_NET_INSIDE=1 nsenter --net="/run/netns/$HOSTNS" "$0"
	rc=$?
	cleanup_ns
	trap - EXIT
	ip netns list | grep -q "^$tag" && { echo "# namespaces left behind"; rc=1; }
	exit $rc
fi

PD_NETWORK=on PD_BRIDGE=pd-p$(($$ % 1000)) PD_SUBNET=10.203.$(($$ % 250)).0/24
PD_NFT_TABLE=paddock_p$$ PD_DNS_UPSTREAM=$DNS
export PD_NETWORK PD_BRIDGE PD_SUBNET PD_NFT_TABLE PD_DNS_UPSTREAM
pd_setup || exit 1
cat >>"$PD_TMP/paddock.ini" <<INI
[agent claude]
base_url = http://model.test:8090
model = fake-model-1
[agent codex]
base_url = http://model.test:8090
[agent opencode]
base_url = http://model.test:8090
[agent pi]
base_url = http://model.test:8090
INI
# The tiny image, with the catalogue file mkimage agents writes.
cp -aL "$D/images/tiny" "$D/images/agentbox"
cat >"$D/images/agentbox/agents.ini" <<INI
[claude]
name = Claude Code
version = 2.1.332
bin = claude
secrets = ANTHROPIC_API_KEY
endpoints = api.anthropic.com statsig.anthropic.com
[codex]
name = Codex
version = 0.80.0
bin = codex
secrets = OPENAI_API_KEY
endpoints = api.openai.com
INI
SOCK=$PD_TMP/run/paddock.sock
sed -i "s|^\[paddock\]$|[paddock]\nsocket = $SOCK|" "$PD_TMP/paddock.ini"
pd_start
wait_for 10 test -S "$SOCK" || { diag "no unix socket"; exit 1; }
hs() { curl -sS --unix-socket "$SOCK" "${@:1:$#-1}" "http://paddock/v1/tree/${!#}"; }
export -f hs
export SOCK

# fails ERRNO-NAME CMD...: the write fails (its shell says so).
fails() { ! "$@" 2>/dev/null; }
# said BOX TEXT: the box's error file holds TEXT.
said() { grep -qF -- "$2" "$M/boxes/$1/error"; }
get() {
	pd_crun exec "$1" sh -c "printf 'GET / HTTP/1.0\r\n\r\n' | nc -w 2 $2 8080 | head -n1 | grep -q ' 200 '" 2>/dev/null
}
export -f get

# ---- the catalogue
ok "agents/ lists the image's agents" bash -c "[ \"\$(ls $M/agents | tr '\n' ' ')\" = 'claude codex ' ]"
ok "agents/claude: version, images, secrets, base_url, model" \
	bash -c "[ \"\$(cat $M/agents/claude)\" = \"\$(printf 'version 2.1.332\nimages agentbox\nsecrets ANTHROPIC_API_KEY\nbase_url http://model.test:8090\nmodel fake-model-1')\" ]"
ok "agents/nope does not exist" bash -c "! test -e $M/agents/nope"

# ---- settings and bad input (box b: the agents image)
mkdir "$M/boxes/b" && echo agentbox >"$M/boxes/b/image"
P=$M/boxes/b/prompts
ok "mkdir prompts/p1" mkdir "$P/p1"
ok "mkdir prompts/last is refused" fails mkdir "$P/last"
ok "a new prompt lists its files" \
	bash -c "ls $P/p1 | tr '\n' ' ' | grep -q 'agent continue ctl cwd ended env events exit model output result session started status text'"
ok "its status is created" bash -c "[ \"\$(cat $P/p1/status)\" = created ]"
ok "its agent reads as the default (the image's first)" bash -c "[ \"\$(cat $P/p1/agent)\" = claude ]"
ok "its model reads as the configured one" bash -c "[ \"\$(cat $P/p1/model)\" = fake-model-1 ]"
ok "an unknown agent is refused" fails sh -c "echo nope > $P/p1/agent"
ok "... with the known ones in the error file" said b 'prompts/p1/agent: unknown agent "nope" (known: claude, codex)'
ok "a malformed env line is refused" fails sh -c "printf 'A=1\nnot a pair\n' > $P/p1/env"
ok "... line 2 named" said b "env line 2: not KEY=VALUE"
ok "a relative cwd is refused" fails sh -c "echo src > $P/p1/cwd"
ok "... said" said b "cwd: an absolute path"
ok "continue of a missing prompt is refused" fails sh -c "echo p9 > $P/p1/continue"
ok "... ENOENT said" said b 'continue: no prompt "p9" in this box'
ok "a model with blanks is refused" fails sh -c "echo 'a b' > $P/p1/model"
printf '\n \n' >"$P/p1/text" 2>/dev/null
ok "an empty text is refused (at close)" bash -c "[ \"\$(cat $P/p1/status)\" = created ]"
ok "... said" said b "text: empty"
ok "a text over 100 KiB is refused" fails sh -c "head -c 102401 /dev/zero | tr '\\0' a > $P/p1/text"
ok "... said" said b "text: over 102400 bytes"
ok "nothing changed: still created, no settings" \
	bash -c "[ \"\$(cat $P/p1/status)\" = created ] && [ -z \"\$(cat $P/p1/env $P/p1/cwd $P/p1/continue)\" ]"
ok "events of an unstarted prompt: EBUSY at once" fails cat "$P/p1/events"
ok "valid settings are kept" \
	sh -c "echo claude > $P/p1/agent && echo m2 > $P/p1/model && echo /tmp > $P/p1/cwd && printf 'X=1\n' > $P/p1/env"
ok "... and read back" bash -c "[ \"\$(cat $P/p1/model)\" = m2 ] && [ \"\$(cat $P/p1/cwd)\" = /tmp ]"

# ---- an agent the image does not have
mkdir "$M/boxes/t"
echo hi >"$M/boxes/t/prompt" 2>/dev/null
ok "a prompt in a box whose image has no agents is refused, naming the image" \
	said t "prompt: image tiny has no agents (agents: none)"
echo claude >"$M/boxes/b/prompts/p1/agent"
echo tiny >"$M/boxes/b/image"
echo hi >"$M/boxes/b/prompts/p1/text" 2>/dev/null
ok "an agent the box's image lacks: ENOENT, naming image and agents" \
	said b "agent claude is not in image tiny (agents: none)"
ok "... the prompt is still created" bash -c "[ \"\$(cat $P/p1/status)\" = created ]"
echo agentbox >"$M/boxes/b/image"
ok "... and no prompt is left" bash -c "[ -z \"\$(ls $M/boxes/t/prompts)\" ]"

# ---- deny-all: refused before anything runs (contract 7)
echo deny-all >"$M/boxes/b/policy"
ok "a prompt under deny-all is accepted" sh -c "echo 'write hello.txt' > $M/boxes/b/prompt"
ok "prompts/last leads to it" bash -c "[ \"\$(readlink $P/last)\" = 1 ]"
ok "it ended: exited 1" bash -c "[ \"\$(cat $P/1/status)\" = 'exited 1' ] && [ \"\$(cat $P/1/exit)\" = 1 ]"
ok "its events: an error naming the policy and the preset, then end" \
	python3 -c "
import json,sys
ev=[json.loads(l) for l in open('$P/1/events')]
assert [e['type'] for e in ev]==['error','end'], ev
assert list(ev[0])[0]=='type' and ev[0]['time'].endswith('Z')
m=ev[0]['message']
assert 'deny-all' in m and '@claude' in m and 'model.test' in m, m
assert ev[1]['exit']==1
"
ok "the box was never started" bash -c "[ \"\$(cat $M/boxes/b/state)\" = created ]"
ok "its text and agent are recorded" \
	bash -c "[ \"\$(cat $P/1/text)\" = 'write hello.txt' ] && [ \"\$(cat $P/1/agent)\" = claude ]"
ok "settings after the start: EBUSY" fails sh -c "echo m3 > $P/1/model"
ok "... said" said b "prompt 1 has started (text was written)"
# continue: another prompt's session, of the same agent
mkdir "$P/c1" && echo 1 >"$P/c1/continue"
echo go >"$P/c1/text" 2>/dev/null
ok "continue of a prompt without a session: EINVAL at the start" \
	said b "continue: prompt 1 has no session to resume (its agent reported none)"
ok "... and it did not start" bash -c "[ \"\$(cat $P/c1/status)\" = created ]"
# The session file is written from what the box's agent printed: one
# that reads as an option never reaches the next command line.
sess=$(ls -d "$D"/boxes/*/prompts/1)
printf -- '--dangerously-other\n' >"$sess/session"
echo go >"$P/c1/text" 2>/dev/null
ok "a session that reads as an option is refused" \
	said b "continue: the session prompt 1 recorded is not a plain id"
printf 'abc-123\n' >"$sess/session"
echo codex >"$P/c1/agent"
echo go >"$P/c1/text" 2>/dev/null
ok "continue of another agent's prompt: EINVAL" \
	said b "continue: prompt 1 ran agent claude, not codex (a session is one agent's)"
echo claude >"$P/c1/agent"
echo go >"$P/c1/text" 2>/dev/null
ok "continue of the same agent's session passes (refused by the policy next)" \
	bash -c "grep -q '\"type\":\"end\"' $P/c1/events && [ \"\$(cat $P/c1/exit)\" = 1 ]"
ok "over HTTP: events (followed to the end)" bash -c "hs 'boxes/b/prompts/1/events?follow=1' | grep -q '\"type\":\"end\"'"
ok "over HTTP: status" bash -c "hs boxes/b/prompts/1/status | grep -qx 'exited 1'"
ok "over HTTP: the quick form answers with the prompt's name" \
	bash -c "curl -sS --unix-socket $SOCK -X PUT --data-binary 'again' http://paddock/v1/tree/boxes/b/prompt | grep -q '\"prompt\":\"2\"'"
# Exec jobs and prompts: a name space each, both kept across a restart.
echo 'true' >"$M/boxes/b/exec/new" 2>/dev/null || true
ok "exec/1 and prompts/1 side by side" bash -c "test -d $M/boxes/b/exec/1 && test -d $P/1"
pd_stop
pd_start
ok "after a restart: the prompt, its kind and files" \
	bash -c "[ \"\$(cat $P/1/status)\" = 'exited 1' ] && grep -q error $P/1/events && test -d $M/boxes/b/exec/1"
ok "after a restart: prompts/last" bash -c "[ \"\$(readlink $P/last)\" = 2 ]"
ok "rmdir of an ended prompt" rmdir "$P/1"
ok "... it is gone" bash -c "! test -e $P/1"

# ---- presets
ok "an unknown preset is refused" fails sh -c "printf 'allowlist\n@nope\n' > $M/boxes/b/policy"
ok "... with the line and the known agents" said b "line 2: unknown agent @nope (known: claude, codex)"
ok "allowlist + @claude is taken" sh -c "printf 'allowlist\n@claude\n' > $M/boxes/b/policy"
ok "... and shown as written" bash -c "[ \"\$(cat $M/boxes/b/policy)\" = \"\$(printf 'allowlist\n@claude')\" ]"
echo running >"$M/boxes/b/state"
ok "the box reaches model.test (the configured base_url's host)" get b model.test
ok "... not other.test" bash -c "! get b other.test"
ok "... not the catalogue's endpoint (base_url replaces it)" \
	bash -c "! pd_crun exec b nslookup api.anthropic.com 2>/dev/null | grep -q '^Address: [0-9]'"
ok "a prompt under the preset is not refused by the policy" \
	bash -c "echo 'hi' > $P/p1/text 2>/dev/null; ! grep -q 'does not let' $P/p1/events 2>/dev/null"

# ---- a real agent (the agents image, its adapters)
# final FILE SECONDS: FILE (a status) holds a final status within SECONDS.
final() {
	local i
	for ((i = 0; i < $2 * 2; i++)); do
		grep -qE '^(exited|killed) ' "$1" 2>/dev/null && return 0
		sleep 0.5
	done
	return 1
}
export -f final
if [ -n "${PD_IMAGES:-}" ] && [ -d "$PD_IMAGES/agents/rootfs" ] && [ -f "$FAKE_MODEL" ]; then
	ln -s "$PD_IMAGES/agents" "$D/images/agents"
	R=$M/boxes/r/prompts
	key=sk-test-prompts-$RANDOM$RANDOM
	mkdir "$M/boxes/r" && echo agents >"$M/boxes/r/image"
	printf 'allowlist\n@claude\n@codex\n@opencode\n@pi\n198.51.100.21\n' >"$M/boxes/r/policy"
	echo running >"$M/boxes/r/state"
	# Every agent the image holds, through the files only.
	for a in $(sed -n 's/^\[\(.*\)\]$/\1/p' "$PD_IMAGES/agents/agents.ini"); do
		[ -e "$M/agents/$a" ] || continue
		p=$a-1
		rm -f "$M/boxes/r/root/config/hello.txt"
		mkdir "$R/$p"
		echo "$a" >"$R/$p/agent"
		sed -n 's/^secrets //p' "$M/agents/$a" | tr ' ' '\n' | sed "s/\$/=$key-$a/" >"$R/$p/env"
		echo 'Create the file hello.txt with the content hi from the fake model' >"$R/$p/text"
		ok "$a: the prompt ends" final "$R/$p/status" 300
		ok "$a: exit 0" bash -c "[ \"\$(cat $R/$p/exit)\" = 0 ] || { tail -n 20 $R/$p/output | sed 's/^/# /'; false; }"
		ok "$a: events: start first, a tool call, end (exit 0) last" python3 -c "
import json
ev=[json.loads(l) for l in open('$R/$p/events')]
assert ev[0]['type']=='start' and ev[0]['agent']=='$a', ev[0]
assert any(e['type']=='tool_call' for e in ev), ev
assert ev[-1]['type']=='end' and ev[-1]['exit']==0, ev[-1]
assert all(list(e)[0]=='type' and e['time'].endswith('Z') for e in ev)
"
		ok "$a: result is the answer" grep -q 'Wrote hello.txt' "$R/$p/result"
		ok "$a: the file it wrote is in the box (home, the default cwd)" \
			grep -qs 'hi from the fake model' "$M/boxes/r/root/config/hello.txt"
		ok "$a: its key reached the model" grep -q "$key-$a" "$PD_MODEL_LOG"
	done
	ok "claude: a session recorded" grep -qE '^[A-Za-z0-9._:/@+-]+$' "$R/claude-1/session"
	ok "claude: over HTTP, events followed to the end" \
		bash -c "hs 'boxes/r/prompts/claude-1/events?follow=1' | tail -n1 | grep -q '\"type\":\"end\"'"

	mkdir "$R/a2" && echo claude-1 >"$R/a2/continue"
	echo "ANTHROPIC_API_KEY=$key" >"$R/a2/env"
	echo 'Create hello.txt again' >"$R/a2/text"
	ok "continue: the second prompt ends with exit 0" \
		bash -c "final $R/a2/status 300 && [ \"\$(cat $R/a2/exit)\" = 0 ]"
	ok "continue: it resumed the first one's session" \
		grep -qF -- "$(cat "$R/claude-1/session")" "$(echo "$D"/boxes/*/prompts/a2/spec.json)"

	# A prompt whose model never answers: it runs until killed, across a
	# restart of the daemon.
	mkdir "$R/s1"
	printf 'ANTHROPIC_API_KEY=%s\nANTHROPIC_BASE_URL=http://198.51.100.21:8090\n' "$key" >"$R/s1/env"
	echo 'Wait for ever' >"$R/s1/text"
	ok "a prompt that waits on its model runs" bash -c "sleep 2; [ \"\$(cat $R/s1/status)\" = running ]"
	ok "rmdir of a running prompt: EBUSY" fails rmdir "$R/s1"
	ok "... said" said r "prompt s1 is running (write kill to its ctl first)"
	pd_stop
	pd_start
	ok "after a daemon restart the prompt still runs" bash -c "[ \"\$(cat $R/s1/status)\" = running ]"
	ok "ctl kill ends it" bash -c "echo kill > $R/s1/ctl && final $R/s1/status 30 && [ \"\$(cat $R/s1/status)\" = 'killed SIGKILL' ]"
	ok "its events end with end (exit 137)" bash -c "tail -n1 $R/s1/events | grep -q '\"exit\":137'"
	ok "rmdir of the ended prompt" rmdir "$R/s1"
else
	diag "no agents image in the cache or no fake model server: real-agent run skipped"
fi

pd_done
