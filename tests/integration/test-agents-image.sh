#!/bin/bash
# The agents image in a real box: Node.js 22 (not Debian's 18), each agent
# the image's agents.ini lists runs as the box user and says the version
# agents.ini gives, and agents.ini lists exactly what is installed; the
# image keeps neither the build's npm configuration (registry, CA file) nor
# an npm cache. Then mkimage's catalogue handling on a small catalogue: the
# vendor-script path (probe answers: installed, version read back as the
# box user; probe silent or install failing: skipped) and bad catalogues.
# The image is built once into the cache the debian image lives in; the
# test skips only when no Debian mirror or no npm registry answers.
. "$(dirname "$0")/lib.sh"
require_root

CATALOGUE=$TOP_SRCDIR/scripts/agents.ini
pd_use_image agents
pd_start

IMG=$PD_IMAGES/agents
INI=$IMG/agents.ini
R=$IMG/rootfs

# ini_get SECTION KEY FILE, ini_sections FILE: mkimage's own readers.
eval "$(sed -n '/^ini_get() {/,/^}/p; /^ini_sections() {/,/^}/p' "$MKIMAGE")"

ids=$(ini_sections "$INI" | tr '\n' ' ')
diag "the image's agents: $ids"

# The catalogue: every line fits inih's 200-byte lines (the daemon reads
# agents.ini files with inih), every agent has what the contract says.
ok "the catalogue's lines fit inih's line length" bash -c "! awk 'length(\$0) > 197' '$CATALOGUE' | grep -q ."
check_catalogue() {
	local id r=0
	for id in $(ini_sections "$CATALOGUE"); do
		for k in name bin secrets endpoints; do
			[ -n "$(ini_get "$id" "$k" "$CATALOGUE")" ] || { diag "[$id] has no $k"; r=1; }
		done
		if [ -n "$(ini_get "$id" package "$CATALOGUE")" ]; then
			[ -n "$(ini_get "$id" version "$CATALOGUE")" ] || { diag "[$id] is not pinned"; r=1; }
		else
			if [ -z "$(ini_get "$id" install "$CATALOGUE")" ] || [ -z "$(ini_get "$id" probe "$CATALOGUE")" ]; then
				diag "[$id] has neither package nor install and probe"
				r=1
			fi
		fi
	done
	return $r
}
ok "every catalogue agent has name, bin, secrets, endpoints and a pinned package or install steps" check_catalogue
ok "the catalogue has claude, codex, opencode, pi, kimi and prime" \
	same "$(ini_sections "$CATALOGUE" | sort | tr '\n' ' ')" "claude codex kimi opencode pi prime "

# The image's agents.ini: the npm agents at their pinned versions (kimi and
# prime only when their vendors answered the build).
check_npm_agents() {
	local id r=0
	for id in $(ini_sections "$CATALOGUE"); do
		[ -n "$(ini_get "$id" package "$CATALOGUE")" ] || continue
		same "$(ini_get "$id" version "$INI")" "$(ini_get "$id" version "$CATALOGUE")" || { diag "[$id]"; r=1; }
		same "$(ini_get "$id" package "$INI")" "$(ini_get "$id" package "$CATALOGUE")" || r=1
	done
	return $r
}
ok "agents.ini lists every npm agent at its pinned version" check_npm_agents
check_fields() {
	local id k r=0
	for id in $ids; do
		for k in name bin secrets endpoints; do
			same "$(ini_get "$id" "$k" "$INI")" "$(ini_get "$id" "$k" "$CATALOGUE")" || { diag "[$id] $k"; r=1; }
		done
		[ -z "$(ini_get "$id" install "$INI")$(ini_get "$id" probe "$INI")" ] || { diag "[$id] keeps install steps"; r=1; }
	done
	return $r
}
ok "agents.ini carries name, bin, secrets and endpoints from the catalogue, no install steps" check_fields
ok "agents.ini has no keys outside its agents' sections" bash -c "! awk '/^[ \t]*\\[/ {exit} /=/' '$INI' | grep -q ."
check_description() {
	local id r=0 d
	d=$(cat "$IMG/description")
	for id in $ids; do
		case $d in
		*"$(ini_get "$id" name "$INI") $(ini_get "$id" version "$INI")"*) ;;
		*) diag "description [$d] does not name $id"; r=1 ;;
		esac
	done
	return $r
}
ok "the image's description names each agent with its version" check_description

B=$M/boxes/ag
mkdir "$B"
ok "a box of the agents image" bash -c "echo agents >'$B/image' && test \"\$(cat '$B/image')\" = agents"

# Node.js: the catalogue's, Node 22, in /usr/local; Debian's is gone.
node_v=$(ini_get "" node "$CATALOGUE")
npm_v=$(ini_get "" npm "$CATALOGUE")
node_is() {
	local v
	v=$(pd_job ag 'node --version') && same "$v" "v$node_v" && case $v in v22.*) ;; *) false ;; esac
}
ok "node --version is the catalogue's Node.js $node_v (22)" node_is
ok "npm --version is the catalogue's npm $npm_v" same "$(pd_job ag 'npm --version')" "$npm_v"
ok "node and npm are /usr/local's; Debian's nodejs and npm are not installed" \
	same "$(pd_job ag 'command -v node npm; dpkg-query -W -f="\${Status}\n" nodejs npm 2>/dev/null | grep -c " installed" || true')" \
	"$(printf '/usr/local/bin/node\n/usr/local/bin/npm\n0')"

# Each agent, as the box user with its home: --version says agents.ini's.
check_versions() {
	local id bin v out r=0
	for id in $ids; do
		bin=$(ini_get "$id" bin "$INI")
		v=$(ini_get "$id" version "$INI")
		out=$(pd_job ag "test \"\$(id -u):\$HOME\" = 1000:/config && $bin --version 2>&1") || { diag "$id: $bin --version failed"; r=1; continue; }
		diag "$id: $bin --version: $(echo "$out" | head -n 1)"
		case $out in
		*"$v"*) ;;
		*) diag "$id: expected $v"; r=1 ;;
		esac
	done
	return $r
}
ok "each agent's --version, run by the box user (uid 1000, HOME /config), is agents.ini's version" check_versions

# Exactly what is installed: npm's global packages are npm and the npm
# agents of agents.ini; every catalogue agent not in agents.ini is absent.
want=$(for id in $ids; do ini_get "$id" package "$INI"; done | sed '/^$/d' | sort | tr '\n' ' ')
ok "npm's global packages are npm and agents.ini's npm agents, nothing else" \
	same "$(pd_job ag 'ls /usr/local/lib/node_modules | while read -r d; do case $d in @*) for s in /usr/local/lib/node_modules/$d/*; do echo "$d/${s##*/}"; done ;; *) echo "$d" ;; esac; done | grep -vx npm | sort | tr "\n" " "')" "$want"
check_absent() {
	local id bin r=0
	for id in $(ini_sections "$CATALOGUE"); do
		case " $ids " in *" $id "*) continue ;; esac
		bin=$(ini_get "$id" bin "$CATALOGUE")
		if pd_job ag "command -v $bin" >/dev/null 2>&1; then
			diag "$id is not in agents.ini but $bin is installed"
			r=1
		fi
	done
	return $r
}
ok "catalogue agents missing from agents.ini are not in the image" check_absent

# Native parts: each npm agent's platform package is this machine's.
arch=$(uname -m)
case $arch in x86_64) narch=x64 ;; aarch64) narch=arm64 ;; *) narch=$arch ;; esac
check_native() {
	local r=0 p
	for p in @anthropic-ai/claude-code/node_modules/@anthropic-ai/claude-code-linux-$narch \
		@openai/codex/node_modules/@openai/codex-linux-$narch opencode-ai/node_modules/opencode-linux-$narch; do
		case "$p" in
		@anthropic-ai*) [ -n "$(ini_get claude version "$INI")" ] || continue ;;
		@openai*) [ -n "$(ini_get codex version "$INI")" ] || continue ;;
		opencode*) [ -n "$(ini_get opencode version "$INI")" ] || continue ;;
		esac
		[ -d "$R/usr/local/lib/node_modules/$p" ] || { diag "missing $p"; r=1; }
	done
	return $r
}
ok "claude, codex and opencode have their linux-$narch native package" check_native

# The build's npm configuration is gone: no npmrc anywhere npm reads one,
# npm's registry is its default and no CA file is set, in the box too.
ok "no npmrc in the image (global, root's, the box user's, /etc)" \
	bash -c "! ls -d '$R/usr/local/etc/npmrc' '$R/root/.npmrc' '$R/config/.npmrc' '$R/etc/npmrc' 2>/dev/null | grep -q ."
# (npm config ls names every file that sets something: "user" config from
# ..., "global" config from ...; -l marks a default something overrode,
# -l itself by the command line.)
ok "the box's npm uses its defaults: no config file sets anything, no CA file" \
	same "$(pd_job ag 'npm config ls | grep -c "config from"; npm config ls -l | grep -v "overridden by cli" | grep -c overridden; npm config get cafile')" \
	"$(printf '0\n0\nnull')"
ok "the image holds no build directory, no npm cache and nothing in /tmp" \
	bash -c "! find '$R/tmp' '$R/var/tmp' '$R/root' '$R/config' -mindepth 1 \
		! -path '$R/root/.bashrc' ! -path '$R/root/.profile' \
		! -path '$R/config/.bashrc' ! -path '$R/config/.profile' ! -path '$R/config/.bash_logout' | grep -q . &&
		! find '$R' -xdev -name _cacache | grep -q ."
ok "the host's CA file was not left in the image" \
	bash -c "! find '$R' -xdev -path '*paddock-build*' | grep -q ."

rmdir "$B"

# mkimage's catalogue handling, on a catalogue of vendor-script agents
# only (no npm agent: quick), into a data directory of the test whose
# debian image is the cache's.
A=$PD_TMP/agdata
mkdir -p "$A/images"
ln -s "$PD_IMAGES/debian" "$A/images/debian"
printf '[paddock]\ndata = %s\n' "$A" >"$A.ini"
mkdir "$PD_TMP/www"
# The vendor's download: an agent that prints its version only when run
# by the box user.
cat >"$PD_TMP/www/vendor-agent" <<'SH'
#!/bin/sh
[ "$(id -u)" = 1000 ] || { echo "run as $(id -u)" >&2; exit 1; }
echo "vendor-agent version 3.4.5 (test)"
SH
python3 -m http.server --bind 127.0.0.1 0 --directory "$PD_TMP/www" >"$PD_TMP/www.log" 2>&1 &
www_pid=$!
www_stop() {
	kill "$www_pid" 2>/dev/null
	wait "$www_pid" 2>/dev/null
}
pd_exit_hooks+=(www_stop)
port=
wait_for 10 grep -q "port [0-9]" "$PD_TMP/www.log"
port=$(sed -n 's/.*port \([0-9]*\).*/\1/p' "$PD_TMP/www.log" | head -n 1)
cat >"$A/agents.ini" <<EOF
node = $node_v
npm = $npm_v

[vendor]
name = Vendor Agent
bin = vendor-agent
secrets = VENDOR_KEY
endpoints = api.vendor.test
probe = http://127.0.0.1:$port/vendor-agent
install = curl -fsS http://127.0.0.1:$port/vendor-agent -o /usr/local/bin/vendor-agent && chmod 0755 /usr/local/bin/vendor-agent

[gone]
name = Gone Agent
bin = gone-agent
secrets = GONE_KEY
endpoints = api.gone.test
probe = http://127.0.0.1:1/
install = touch /usr/local/bin/gone-agent

[broken]
name = Broken Agent
bin = broken-agent
secrets = BROKEN_KEY
endpoints = api.broken.test
probe = http://127.0.0.1:$port/vendor-agent
install = touch /usr/local/bin/broken-agent; exit 3
EOF
ok "mkimage builds an agents image from a catalogue of vendor-script agents" \
	"$MKIMAGE" --config "$A.ini" --agents "$A/agents.ini" agents 2>"$A.log"
sed 's/^/# /' "$A.log" | grep -v "^# *$" | tail -n 8
AI=$A/images/agents/agents.ini
ok "its agents.ini holds only the agent whose probe answered and whose install worked" \
	same "$(ini_sections "$AI" | tr '\n' ' ')" "vendor "
ok "with the version its --version printed as the box user" same "$(ini_get vendor version "$AI")" 3.4.5
ok "and the catalogue's name, bin, secrets and endpoints" \
	same "$(for k in name bin secrets endpoints; do ini_get vendor $k "$AI"; done | tr '\n' '|')" \
	"Vendor Agent|vendor-agent|VENDOR_KEY|api.vendor.test|"
ok "mkimage says it skipped the agent whose probe does not answer" \
	grep -q "skipped gone (Gone Agent): http://127.0.0.1:1/ does not answer" "$A.log"
ok "and the one whose install steps failed" grep -q "skipped broken: its install steps failed" "$A.log"
ok "the description names the agent installed" \
	bash -c "grep -q 'Node.js $node_v, Python, coding agents: Vendor Agent 3.4.5\$' '$A/images/agents/description'"
ok "that image has Node.js $node_v and no build leftovers" \
	bash -c "test \"\$('$A/images/agents/rootfs/usr/local/bin/node' --version)\" = v$node_v &&
		test -z \"\$(ls -A '$A/images/agents/rootfs/tmp')\""
rm -rf --one-file-system "$A/images/agents"

# Bad catalogues: a clear error, no image, nothing half-built left.
bad() {
	local body=$1 want=$2 out
	printf '%b' "$body" >"$A/bad.ini"
	if out=$("$MKIMAGE" --config "$A.ini" --agents "$A/bad.ini" agents 2>&1); then
		diag "mkimage accepted: $body"
		return 1
	fi
	case $out in
	*"$want"*) ;;
	*)
		diag "expected [$want] in: $out"
		return 1
		;;
	esac
	[ ! -e "$A/images/agents" ] && [ -z "$(ls -A "$A/images" | grep -v '^debian$')" ]
}
ok "a catalogue without node's version is refused" bad 'npm = 1.0.0\n[a]\nbin = a\npackage = a\nversion = 1\n' "node and npm versions missing"
ok "an npm agent without a pinned version is refused" bad "node = $node_v\nnpm = $npm_v\n[a]\nbin = a\npackage = a\n" "[a] has no pinned version"
ok "an agent id that is not a name is refused" bad "node = $node_v\nnpm = $npm_v\n[../x]\nbin = a\npackage = a\nversion = 1\n" "bad agent id [../x]"
ok "an agent with neither package nor install is refused" bad "node = $node_v\nnpm = $npm_v\n[a]\nbin = a\n" "[a] has neither package nor install"
ok "an agent without bin is refused" bad "node = $node_v\nnpm = $npm_v\n[a]\npackage = a\nversion = 1\n" "[a] has no bin"
missing() {
	local out
	! out=$("$MKIMAGE" --config "$A.ini" --agents "$A/none.ini" agents 2>&1) &&
		same "$out" "mkimage: $A/none.ini: cannot read the agents catalogue" && [ ! -e "$A/images/agents" ]
}
ok "a missing catalogue is refused" missing

pd_done
