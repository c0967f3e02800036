#!/bin/bash
# The Paddock skill (skill/paddock/SKILL.md) stays true: its front matter is
# the Agent Skills format's (name paddock, matching its directory; a
# description of 1..1024 characters on one line), `paddock skill install
# DIR` writes the very file, and EVERY ```sh block of it runs, in order,
# against a real daemon (tiny image), each as its own `bash -e -o
# pipefail` in one working directory, with the CLI found through
# PADDOCK_URL and PADDOCK_TOKEN as the skill says, and /paddock being this
# daemon's mount (the only rewrite of the examples). A block whose first
# line is `# needs: IMAGE` runs against that image: it is skipped, with
# the reason, only when the image is absent (desktop: from the cache in
# PD_IMAGES; agents: the agents image, with the fake model server in the
# fake internet of agents-lib.sh as the model's endpoint, since no real
# model is reachable).
. "$(dirname "$0")/lib.sh"
require_root
# shellcheck source=agents-lib.sh
. "$(dirname "$0")/agents-lib.sh"
PADDOCK=${PADDOCK:-$TOP_BUILDDIR/cli/paddock}
SKILL=$TOP_SRCDIR/skill/paddock/SKILL.md

# skip NAME WHY: a TAP test that did not run, and why.
skip() {
	pd_n=$((pd_n + 1))
	echo "ok $pd_n - $1 # SKIP $2"
}
have_image() { [ -n "${PD_IMAGES:-}" ] && [ -d "$PD_IMAGES/$1/rootfs" ]; }
# The desktop and agents blocks need those images: built into the cache once
# where they can be (whichever test asks first builds them), so the examples
# run whatever the tests' order.
if [ -z "${PD_NET_INSIDE:-}" ]; then
	for img in desktop agents; do
		pd_image_cache "$img" || diag "the $img image cannot be built here"
	done
fi
# The agents' block needs the agents image and the fake model's internet:
# then the whole test runs in it.
agents=
have_image agents && pd_model_can && agents=1
if [ -n "$agents" ]; then
	pd_model_outer "$0"
	pd_model_setup
else
	pd_setup || exit 1
fi
for img in desktop agents; do
	have_image "$img" && ln -s "$PD_IMAGES/$img" "$D/images/$img"
done
[ -n "$agents" ] && export ANTHROPIC_API_KEY=sk-ant-skill-test-$RANDOM$RANDOM
pd_start
pd_owner || { diag "cannot log in as the owner"; exit 1; }

# --- the front matter ---------------------------------------------------------
# frontcheck: the Agent Skills rules (agentskills.io): between --- lines,
# name (lowercase letters, digits and single hyphens, 1..64, the
# directory's name) and description (1..1024 characters) required, only
# the format's keys; one line each here. Says what is wrong on stderr.
cat >"$PD_TMP/frontcheck.py" <<'PY'
import os, re, sys
path = sys.argv[1]
lines = open(path, encoding="utf-8").read().split("\n")
assert lines[0] == "---", "no front matter: the first line is not ---"
end = lines.index("---", 1)
front = {}
for l in lines[1:end]:
    m = re.match(r"^([a-z-]+): (.+)$", l)
    assert m, "not a one-line key: value: %r" % l
    assert m.group(1) not in front, "key given twice: " + m.group(1)
    front[m.group(1)] = m.group(2)
known = {"name", "description", "license", "compatibility", "metadata", "allowed-tools"}
assert set(front) <= known, "unknown keys: %s" % (set(front) - known)
name = front.get("name", "")
assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", name) and len(name) <= 64, "bad name %r" % name
assert name == os.path.basename(os.path.dirname(os.path.abspath(path))), "name is not the directory's"
d = front.get("description", "")
assert 20 <= len(d) <= 1024, "description of %d characters" % len(d)
assert "Use when" in d, "the description does not say when to use it"
assert not d.startswith(("'", '"', "|", ">")), "the description is quoted or a block"
PY
ok "SKILL.md's front matter: Agent Skills format, name paddock, a description saying when" \
	python3 "$PD_TMP/frontcheck.py" "$SKILL"

# --- skill install DIR writes the same file --------------------------------------
ok "paddock skill install DIR writes DIR/paddock/SKILL.md and prints it" \
	same "$("$PADDOCK" skill install "$PD_TMP/skills")" "$PD_TMP/skills/paddock/SKILL.md"
ok "it is SKILL.md byte for byte" cmp "$SKILL" "$PD_TMP/skills/paddock/SKILL.md"

# --- every example ---------------------------------------------------------------
# The blocks, one file each: ex/N.sh; ex/N.line is where it starts.
mkdir -p "$PD_TMP/ex" "$PD_TMP/cwd" "$PD_TMP/bin"
awk -v dir="$PD_TMP/ex" '
	/^```sh$/ { n++; f = dir "/" n ".sh"; print NR > (dir "/" n ".line"); inblock = 1; next }
	/^```/ && inblock { inblock = 0; close(f); next }
	inblock { print > f }' "$SKILL"
count=$(find "$PD_TMP/ex" -name '*.sh' | wc -l)
ok "the skill has examples (at least 10 sh blocks)" test "$count" -ge 10
ln -s "$PADDOCK" "$PD_TMP/bin/paddock"

export PADDOCK_URL=$PD_URL PADDOCK_TOKEN=$PD_TOKEN PADDOCK_CONFIG=$PD_TMP/cli/config.ini
for i in $(seq 1 "$count"); do
	f=$PD_TMP/ex/$i.sh
	line=$(cat "$PD_TMP/ex/$i.line")
	what="example $i (SKILL.md line $line: $(grep -v '^#' "$f" | head -n1))"
	need=$(sed -n '1s/^# needs: *\([a-z]*\).*/\1/p' "$f")
	if [ -n "$need" ] && ! have_image "$need"; then
		skip "$what" "needs the $need image (not in PD_IMAGES=${PD_IMAGES:-unset})"
		continue
	fi
	if [ "$need" = agents ] && [ -z "$agents" ]; then
		skip "$what" "needs the fake model's internet (python3, dnsmasq)"
		continue
	fi
	sed -i "s|/paddock/|$M/|g" "$f"
	if (cd "$PD_TMP/cwd" && PATH=$PD_TMP/bin:$PATH timeout 600 bash -e -o pipefail "$f") \
		>"$PD_TMP/ex/$i.out" 2>&1; then
		ok "$what" true
	else
		ok "$what" false
		sed 's/^/#   /' "$f"
		echo "#   output:"
		tail -n 30 "$PD_TMP/ex/$i.out" | sed 's/^/#   /'
	fi
done

# What the examples say they do, checked beyond their exit status. n_of
# TEXT: the first example with a line starting with TEXT.
n_of() { grep -n "^$1" "$PD_TMP/ex/"*.sh 2>/dev/null | head -n1 | sed 's|.*/\([0-9]*\)\.sh:.*|\1|'; }
i=$(n_of 'paddock new --name skill-demo')
ok "exec printed the box's greeting" bash -c "[ -n '$i' ] && grep -q 'hello from the box' '$PD_TMP/ex/$i.out'"
i=$(n_of 'if paddock exec')
ok "the failing command's status reached the caller" \
	bash -c "[ -n '$i' ] && grep -q 'failed with 3' '$PD_TMP/ex/$i.out' &&
		grep -q 'hi from /tmp' '$PD_TMP/ex/$i.out'"
i=$(n_of 'paddock new --name skill-desk')
[ -n "$i" ] && have_image desktop &&
	ok "the desktop's screenshot is a PNG" bash -c "head -c 8 '$PD_TMP/cwd/desk.png' | od -An -tx1 | grep -q '89 50 4e 47 0d 0a 1a 0a'"
ok "the file pulled out holds what the box wrote" same "$(cat "$PD_TMP/cwd/results/out.txt")" result
i=$(n_of 'paddock restore')
ok "restore brought the file back as it was before" bash -c "[ -n '$i' ] && grep -qx before '$PD_TMP/ex/$i.out'"
i=$(n_of 'paddock fork')
ok "the fork's changes left the original alone" bash -c "[ -n '$i' ] && grep -qx state.txt '$PD_TMP/ex/$i.out'"
i=$(n_of 'printf .%s. .not-a-real-key.')
ok "the secret reached the box's command, not its value in the output" \
	bash -c "[ -n '$i' ] && grep -q 'sees 14 characters' '$PD_TMP/ex/$i.out' && ! grep -q not-a-real-key '$PD_TMP/ex/$i.out'"
if [ -n "$agents" ]; then
	ok "the agent's key reached the fake model" grep -q "$ANTHROPIC_API_KEY" "$PD_MODEL_LOG"
	ok "the agent's --json events end with its end event, exit 0" \
		bash -c "tail -n1 '$PD_TMP/cwd/events.jsonl' | grep -q '^{\"type\":\"end\".*\"exit\":0'"
	i=$(n_of 'paddock prompt skill-agent --agent')
	ok "the readable events showed the tool call" \
		bash -c "[ -n '$i' ] && grep -q '^→ ' '$PD_TMP/ex/$i.out'"
fi
ok "the examples removed the boxes they made" bash -c "test -z \"\$(ls '$M/boxes')\""
pd_done
