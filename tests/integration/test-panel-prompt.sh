#!/bin/bash
# The panel's prompts page (#/prompts/NAME), end to end in a real headless
# browser (Debian's chromium, playwright-core): a box of the agents image,
# the real claude binary pointed at the fake model (tests/integration/
# fake-model.py, in the fake internet of agents-lib.sh, as test-agents.sh
# does). The browser logs in on the prompts page, picks the agent claude
# from the list the page got from /v1/tree/agents/, sends a prompt asking
# for hello.txt and sees the events as they stream: the start line, the
# tool call naming hello.txt (shown before the agent ended), its result, the
# final answer, the prompt's exit 0, and the prompt in the past prompts
# with its status "exited 0"; hello.txt is in the box's root/ with the
# content asked for. Then a prompt whose model holds its request
# (PADDOCK-HANG: the fake model answers only after 120 s) shows its start
# line while it runs, and the page's Stop button kills it: status "killed",
# the page shows the exit the tree has, Stop is disabled again
# (tests/panel/panel-prompt.mjs).
# A screenshot of the page is kept as an artifact in
# tests/panel-artifacts/panel-prompt/ of the build tree (printed).
# Skips only without chromium (or node and npm to drive it), network
# namespaces or dnsmasq, or when the agents image cannot be built.
. "$(dirname "$0")/lib.sh"
. "$TOP_SRCDIR/tests/panel/lib.sh"
require_root
panel_require
command -v python3 >/dev/null || skip_all "needs python3"
command -v dnsmasq >/dev/null || skip_all "needs dnsmasq (scripts/install-deps)"

# playwright-core comes from the npm registry, which the fake internet
# does not reach: installed (once, quietly) before entering it; inside,
# panel_playwright finds it or says why it is missing.
if [ -z "${PD_NET_INSIDE:-}" ] && [ "$(pw_version)" != "$PW_VERSION" ]; then
	mkdir -p "$PW_DIR" &&
		npm install --no-audit --no-fund --loglevel=error --prefix "$PW_DIR" \
			"playwright-core@$PW_VERSION" >/dev/null 2>&1
fi

# shellcheck source=agents-lib.sh
. "$(dirname "$0")/agents-lib.sh"
pd_model_outer "$0"
pd_use_image agents

# Inside the fake internet's host namespace: its loopback is the test's own.
PORT=$(panel_port)
URL=http://127.0.0.1:$PORT
PASSWORD=panel-test-$RANDOM$RANDOM
PD_LISTEN=127.0.0.1:$PORT
pd_model_daemon

panel_shots panel-prompt || exit 1
panel_playwright
ok "the daemon listens on $URL" wait_for 10 curl -fsS -o /dev/null "$URL/"
panel_owner

BOX=a
B=$M/boxes/$BOX
KEY=sk-ant-test-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
ok "the key is a secret" bash -c "printf %s '$KEY' > '$M/secrets/ANTHROPIC_API_KEY'"
mkdir "$B"
ok "box $BOX receives it" bash -c "echo ANTHROPIC_API_KEY > '$B/secrets'"
ok "box $BOX's policy: an allowlist of @claude" \
	bash -c "printf 'allowlist\n@claude\n' > '$B/policy'"
ok "box $BOX runs" bash -c "echo running > '$B/state'"

# The agents image's user works in its home, /config.
PANEL_BOX=$BOX PANEL_HOME=config PD_MODEL_LOG=$PD_MODEL_LOG panel_run 600 panel-prompt.mjs
[ "$pd_failed" -eq 0 ] || {
	diag "box error: $(cat "$B/error" 2>/dev/null)"
	for p in "$B"/prompts/*; do
		[ -L "$p" ] && continue
		diag "prompt ${p##*/}: $(cat "$p/status" 2>/dev/null)"
		tail -n 5 "$p/output" 2>/dev/null | cut -c1-300 | sed 's/^/#   /'
	done
}

pd_done
