#!/bin/bash
# `paddock doctor` against a test daemon: every check passes for what the
# test setup has; then configurations of the test's own that break one
# thing each (a data directory or an image missing, a bad file, the daemon
# gone) fail that check with what to do, and exit 1. Caddy's part with a
# Caddyfile of the test's and a TLS server on loopback whose certificate
# expires soon, then later. Nothing of the machine's is changed.
. "$(dirname "$0")/lib.sh"

PADDOCK=${PADDOCK:-$TOP_BUILDDIR/cli/paddock}
pd_start
CFG=$PD_TMP/paddock.ini
NOCADDY=$PD_TMP/no-Caddyfile
wait_for 10 test -s "$PD_TMP/run/http-url" || diag "no http-url"

# doc CONFIG [ARGS...]: runs doctor, its output in $OUT, its status in $RC.
# Caddy (caddy validate) keeps its state under the test's directory.
doc() {
	local cfg=$1
	shift
	OUT=$(HOME=$PD_TMP XDG_DATA_HOME=$PD_TMP/xdg-data XDG_CONFIG_HOME=$PD_TMP/xdg-config \
		"$PADDOCK" doctor --config "$cfg" "$@" 2>&1)
	RC=$?
}
# line CHECK: the check's line in $OUT.
line() {
	grep -E "^(ok  |FAIL|warn|skip) $1: " <<<"$OUT"
}
has() { # has REGEX: $OUT has a line matching it
	grep -Eq "$1" <<<"$OUT" || { sed 's/^/# /' <<<"$OUT"; return 1; }
}
# A config like the test's with KEY = VALUE changed.
variant() {
	local name=$1 key=$2 value=$3
	if grep -q "^$key = " "$CFG"; then
		sed "s|^$key = .*|$key = $value|" "$CFG"
	else
		sed "s|^\[paddock\]\$|[paddock]\n$key = $value|" "$CFG"
	fi >"$PD_TMP/$name.ini"
	echo "$PD_TMP/$name.ini"
}

# --- all well ------------------------------------------------------------------
doc "$CFG" --caddyfile "$NOCADDY"
ok "the test daemon's setup: exit 0" same "$RC" 0
ok "no check fails" bash -c "! grep '^FAIL' <<<'$OUT' | sed 's/^/# /' | grep -q ."
ok "each line is a verdict, a check and what it found" \
	bash -c "grep -Ev '^(ok  |FAIL|warn|skip) [a-z0-9]+: .+' <<<'$OUT' | grep -v '^(not root' | (! grep -q .)"
ok "config: warned that every user may read it (the test's is 0644)" \
	has "^warn config: $CFG is readable by every user; it may hold secrets: chmod o-r $CFG$"
for c in fuse fusermount3 crun cgroups userns overlayfs data images http socket mount; do
	ok "$c: ok" has "^ok   $c: "
done
ok "group: looked up" has "^(ok   group: paddock \(gid [0-9]+, |warn group: no group paddock: .*: groupadd --system paddock)"
ok "crun: its version" has "^ok   crun: crun version [0-9]"
ok "images: the default one, tiny" has "^ok   images: [0-9]+ images?, the default tiny among them"
ok "mount: the test's mount point" has "^ok   mount: $M \(FUSE\)"
ok "nftables: skipped with network = off" has "^skip nftables: network = off"
ok "caddy: not configured" has "^skip caddy: not configured"
doc "$CFG" --caddyfile "$NOCADDY" --json
ok "--json: an array of checks, none failed" python3 -c '
import json, sys
a = json.loads(sys.argv[1])
assert len(a) >= 12, a
assert all(set(o) >= {"check", "status", "detail"} for o in a), a
assert not [o for o in a if o["status"] == "fail"], a' "$OUT"

# --- broken, one thing at a time ---------------------------------------------------
doc "$(variant nodata data "$PD_TMP/nowhere")" --caddyfile "$NOCADDY"
ok "a missing data directory: exit 1" same "$RC" 1
ok "... FAIL data with what to do" has "^FAIL data: $PD_TMP/nowhere is not a directory: start paddockd once"
ok "... the images are not looked for" has "^skip images: "
ok "... the end says how many failed" has "^[0-9]+ checks? failed$"

mkdir -p "$PD_TMP/empty/images"
doc "$(variant noimages data "$PD_TMP/empty")" --caddyfile "$NOCADDY"
ok "no image at all: exit 1" same "$RC" 1
ok "... FAIL images with the mkimage line" has "^FAIL images: no image in $PD_TMP/empty/images: mkimage --config $PD_TMP/noimages.ini tiny$"

doc "$(variant nodefault default_image nosuch)" --caddyfile "$NOCADDY"
ok "the default image missing: exit 1" same "$RC" 1
ok "... FAIL images naming it" has "^FAIL images: 1 image, but not the default one, nosuch: mkimage --config .* nosuch$"

printf '[paddock]\nno_such_key = 1\n' >"$PD_TMP/bad.ini"
doc "$PD_TMP/bad.ini" --caddyfile "$NOCADDY"
ok "a bad config file: exit 1" same "$RC" 1
ok "... FAIL config with the file's line" has "^FAIL config: $PD_TMP/bad.ini:2: .*: fix the file"
doc "$PD_TMP/missing.ini" --caddyfile "$NOCADDY"
ok "a config file that is not there: FAIL config" has "^FAIL config: .*missing.ini"

doc "$(variant net network on)" --caddyfile "$NOCADDY"
ok "network = on: nf_tables is asked (nft list tables)" has "^(ok   nftables: nf_tables usable|warn nftables: nft not found)"

doc "$(variant nogroup group pdnosuchgroup)" --caddyfile "$NOCADDY"
ok "a group that does not exist: warn group, not a failure" has "^warn group: no group pdnosuchgroup: "
ok "... exit 0 all the same" same "$RC" 0

CRUNLESS=$(variant nocrun crun "$PD_TMP/no-crun")
doc "$CRUNLESS" --caddyfile "$NOCADDY"
ok "crun missing: FAIL crun with the package" has "^FAIL crun: $PD_TMP/no-crun not found: apt install crun"

# --- Caddy and its certificate ------------------------------------------------------
if command -v openssl >/dev/null; then
	port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	cat >"$PD_TMP/Caddyfile" <<CADDY
# Paddock, for the doctor's test
paddock.test:$port {
	tls internal
	reverse_proxy $(pd_url | sed 's|^http://||')
}
CADDY
	# tls_serve DAYS: a TLS server on 127.0.0.1:$port with a certificate
	# for paddock.test valid DAYS days.
	tls_serve() {
		openssl req -x509 -newkey rsa:2048 -nodes -days "$1" -subj /CN=paddock.test \
			-keyout "$PD_TMP/k.pem" -out "$PD_TMP/c.pem" >/dev/null 2>&1 || return 1
		openssl s_server -quiet -accept "127.0.0.1:$port" -cert "$PD_TMP/c.pem" \
			-key "$PD_TMP/k.pem" </dev/null >/dev/null 2>&1 &
		TLS_PID=$!
		wait_for 10 bash -c "ss -Hltn | grep -q '127.0.0.1:$port '"
	}
	tls_stop() {
		kill "$TLS_PID" 2>/dev/null
		wait "$TLS_PID" 2>/dev/null
	}
	ok "a TLS server with a certificate for 5 days" tls_serve 5
	doc "$CFG" --caddyfile "$PD_TMP/Caddyfile"
	ok "a certificate expiring within 14 days: exit 1" same "$RC" 1
	ok "... FAIL tls with its date and what to do" \
		has "^FAIL tls: the certificate for paddock.test expires [0-9-]{10} \([45] days\): Caddy renews"
	ok "... caddy itself is looked at" has "^(ok  |FAIL) caddy: "
	tls_stop
	ok "a TLS server with a certificate for 90 days" tls_serve 90
	doc "$CFG" --caddyfile "$PD_TMP/Caddyfile"
	ok "... ok tls, valid until its date" has "^ok   tls: the certificate for paddock.test is valid until [0-9-]{10} \((89|90) days\)$"
	# As the installer leaves it: a Caddyfile with a site of the owner's
	# that imports paddock.caddy, beside it, where Paddock's site is.
	mkdir -p "$PD_TMP/caddy"
	sed '/^#/d' "$PD_TMP/Caddyfile" >"$PD_TMP/caddy/paddock.caddy"
	printf 'other.test {\n\ttls internal\n\trespond hi\n}\n\n# Paddock\nimport %s\n' \
		"$PD_TMP/caddy/paddock.caddy" >"$PD_TMP/caddy/Caddyfile"
	doc "$CFG" --caddyfile "$PD_TMP/caddy/Caddyfile"
	ok "an imported paddock.caddy: its site is the one checked" \
		has "^ok   tls: the certificate for paddock.test is valid until "
	tls_stop
	doc "$CFG" --caddyfile "$PD_TMP/Caddyfile"
	ok "nothing on the port: FAIL tls" has "^FAIL tls: no TLS on 127.0.0.1:$port for paddock.test"
else
	ok "# SKIP no openssl for a TLS server" true
fi

# --- the daemon gone ----------------------------------------------------------------
pd_stop
doc "$CFG" --caddyfile "$NOCADDY"
ok "the daemon stopped: exit 1" same "$RC" 1
ok "... FAIL http" has "^FAIL http: .*: systemctl start paddockd"
ok "... FAIL socket" has "^FAIL socket: $PD_TMP/run/paddock.sock does not answer: .*: systemctl start paddockd"
ok "... FAIL mount" has "^FAIL mount: $M is not mounted: systemctl start paddockd"
ok "... the machine's checks still pass" has "^ok   overlayfs: "

pd_done
