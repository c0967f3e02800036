#!/bin/bash
# Files between host and box, written as attacks. The box (and whatever
# crafts an archive) is hostile:
# - `paddock pull` run as root by the real CLI from a box holding a
#   setuid-root file, a setgid one, files of another owner, an absolute
#   link, a link climbing out and chains of links; and from a crafted
#   stream (a fake server: devices, FIFOs, hard links out, a name with ..);
# - pushes over real HTTP (curl --path-as-is) of chains of links that are
#   inside when read lexically, out when followed, also through links the
#   box planted, and of a hard link that moves a symlink;
# - the same archives imported through the real FUSE file and PUT data/;
# - a push bigger than the box type's disk limit;
# - 1 MiB and 300 hard links to it, pushed, then merged by stop rounds
#   (layer_merge_depth = 2): the merged layer stays 1 MiB, links stay links.
. "$(dirname "$0")/lib.sh"
require_root
PADDOCK=${PADDOCK:-$TOP_BUILDDIR/cli/paddock}
PD_MERGE_DEPTH=2

FAKE_PID=
fake_stop() {
	[ -n "$FAKE_PID" ] || return 0
	kill "$FAKE_PID" 2>/dev/null
	wait "$FAKE_PID" 2>/dev/null
	FAKE_PID=
}
pd_setup || exit 1
trap 'rc=$?; fake_stop; (exit $rc); pd_cleanup' EXIT
cat >>"$PD_TMP/paddock.ini" <<'INI'
[types.mini]
cpus = 0.5
memory = 64M
pids = 256
disk = 2M
INI
pd_start
pd_owner || { diag "cannot set up the owner"; exit 1; }

B=$M/boxes
V=$M/volumes
H=$PD_TMP/h
mkdir -p "$H"
python3 "$TOP_SRCDIR/tests/integration/hostile-tars.py" "$H" --transfer
export PADDOCK_CONFIG=$PD_TMP/cli.ini
pdc() { "$PADDOCK" --url "$PD_URL" --token "$PD_TOKEN" "$@"; }
mode() { stat -c %a "$1"; }
owner() { stat -c %u:%g "$1"; }
absent() { [ ! -e "$1" ] && [ ! -L "$1" ]; }

# --- pull from a hostile box, as root ---------------------------------------------
mkdir "$B/src"
R=$B/src/root/data
mkdir -p "$R/sub"
echo hello >"$R/ok"
cp /bin/true "$R/rootshell" && chown 0:0 "$R/rootshell" && chmod 4755 "$R/rootshell"
echo x >"$R/sgid" && chmod 2755 "$R/sgid"
echo mine >"$R/owned" && chown 1234:1234 "$R/owned"
ln -s /etc "$R/etc"
ln -s ../../../../../../../.. "$R/up"
ln -s . "$R/a"
ln -s a/.. "$R/b"
ln -s b/../.. "$R/c"
ln -s ok "$R/rel"
ln -s ../ok "$R/sub/rel"
mkfifo "$R/fifo"
pdc -q pull src /data --to "$H/out" 2>"$H/pull.err"
rc=$?
sed 's/^/# /' "$H/pull.err"
ok "pull of a box with hostile entries exits 1" same "$rc" 1
ok "the setuid-root file lands without its setuid bit" same "$(mode "$H/out/rootshell")" 755
ok "the setgid file without its setgid bit" same "$(mode "$H/out/sgid")" 755
ok "files belong to the user who pulled, not the box's owner" same "$(owner "$H/out/owned")" 0:0
ok "the absolute link is not written" absent "$H/out/etc"
ok "it is named on stderr" grep -q "skipped etc: symlink to /etc leads outside the target directory" "$H/pull.err"
ok "the link climbing out is not written" absent "$H/out/up"
ok "the chain b -> a/.. is not written" absent "$H/out/b"
ok "nor c -> b/../.." absent "$H/out/c"
ok "both named" bash -c "grep -q 'skipped b: symlink to a/..' '$H/pull.err' && grep -q 'skipped c: symlink to b/../..' '$H/pull.err'"
ok "the FIFO never comes (the daemon does not send it)" absent "$H/out/fifo"
ok "links inside are kept" bash -c "[ \"\$(readlink '$H/out/rel')\" = ok ] && [ \"\$(readlink '$H/out/sub/rel')\" = ../ok ] && [ \"\$(readlink '$H/out/a')\" = . ]"
ok "the rest is copied" bash -c "cmp -s /bin/true '$H/out/rootshell' && [ \"\$(cat '$H/out/ok')\" = hello ]"
ok "the summary says how many were skipped" grep -q "paddock: 4 entries were skipped (see above)" "$H/pull.err"
ok "nothing was written beside the target" bash -c "[ \"\$(ls -A '$H' | grep -v '\\.tar\$' | sort | tr '\n' ' ')\" = 'out pull.err ' ]"

pdc -q pull src /data --to "$H/own" --owners 2>/dev/null
ok "--owners restores the box's owners" same "$(owner "$H/own/owned")" 1234:1234
ok "but never a setuid bit" same "$(mode "$H/own/rootshell")" 755
ok "a file pulled alone works as before" bash -c "'$PADDOCK' --url '$PD_URL' --token '$PD_TOKEN' -q pull src /data/ok --to '$H/one' 2>'$H/one.err' && [ \"\$(cat '$H/one/ok')\" = hello ] || { sed 's/^/# /' '$H/one.err'; ls -la '$H/one' | sed 's/^/# /'; false; }"

# --- pull of a crafted stream: a server that is not paddockd --------------------------
python3 - "$H" >"$H/fake.port" 2>/dev/null <<'PY' &
import http.server, os, socketserver, sys
d = sys.argv[1]
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        name = self.path.split("?")[0].rstrip("/").rsplit("/", 1)[-1]
        p = os.path.join(d, name + ".tar")
        if not name or not os.path.isfile(p):
            self.send_error(404)
            return
        data = open(p, "rb").read()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-tar")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
    def log_message(self, *a):
        pass
s = socketserver.TCPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
PY
FAKE_PID=$!
wait_for 10 test -s "$H/fake.port" || diag "the fake server did not start"
FAKE=http://127.0.0.1:$(cat "$H/fake.port")
fpull() { "$PADDOCK" --url "$FAKE" --token pd_fake -q pull evil "/$1" --to "$2"; }
fpull pull-mix "$H/mix" 2>"$H/mix.err"
rc=$?
sed 's/^/# /' "$H/mix.err"
ok "crafted stream: pull exits 1" same "$rc" 1
ok "no device node is made" absent "$H/mix/null"
ok "no FIFO" absent "$H/mix/fifo"
ok "no hard link to the host's /etc/shadow" absent "$H/mix/shadow"
ok "no setuid root file" same "$(mode "$H/mix/rootshell"):$(owner "$H/mix/rootshell")" 755:0:0
ok "no links out" bash -c "! [ -L '$H/mix/etc' ] && ! [ -L '$H/mix/up' ] && ! [ -L '$H/mix/b' ]"
ok "each refusal named" bash -c "for n in null fifo shadow etc up b; do grep -q \"skipped \$n: \" '$H/mix.err' || exit 1; done"
ok "the good entries land" bash -c "[ \"\$(cat '$H/mix/ok')\" = fine ] && [ \"\$(readlink '$H/mix/rel')\" = ok ]"
mkdir "$H/dd" && echo before >"$H/dd/keep"
fpull dotdot "$H/dd" 2>"$H/dd.err"
rc=$?
ok "a name with .. refuses the whole pull" bash -c "[ $rc = 1 ] && grep -q 'entry 2 (../escape): path leaves the target directory' '$H/dd.err'"
ok "and leaves the target as it was" same "$(ls -A "$H/dd")" keep
ok "nothing escaped" absent "$H/escape"
fake_stop

# --- push over HTTP: chains of links ------------------------------------------------------
mkdir "$B/dst"
# Planted by the box: a link climbing out, and a chain that leads out.
ln -s ../../../../../../../.. "$B/dst/root/up"
ln -s . "$B/dst/root/a2"
ln -s a2/.. "$B/dst/root/b2"
listing() { find "$1" -printf '%P %y %l %i\n' | sort; }
push() { # push ARCHIVE PATH BOX: the HTTP status, the body in $H/resp
	hc --path-as-is -o "$H/resp" -w '%{http_code}' -X PUT --data-binary @"$H/$1.tar" \
		"boxes/${3:-dst}/root/$2?format=tar"
}
for a in chain-dot:'entry 2 (b): symlink to a/.. leads outside the box root' \
	chain-climb:'entry 2 (b): symlink to a/..' \
	chain-moved:'entry 2 (h): symlink to ../../f leads outside the box root: climbs above it' \
	via-up:'entry 1 (x): symlink to up/etc leads outside the box root: climbs above it (through up -> ' \
	via-chain:'entry 1 (x): symlink to b2 leads outside the box root: climbs above it (through a2 -> .)'; do
	name=${a%%:*} why=${a#*:}
	before=$(listing "$B/dst/root/")
	code=$(push "$name" "")
	ok "push of $name into the box root is refused (403)" same "$code" 403
	ok "with the entry named ($name)" grep -qF "$why" "$H/resp"
	ok "and the box root is unchanged ($name)" same "$(listing "$B/dst/root/")" "$before"
	diag "$(cat "$H/resp")"
done
ok "a chain that stays inside is taken" bash -c "
	printf 'x' > '$H/f' && mkdir -p '$H/in/d' && ln -s ../f '$H/in/d/l' && ln -s d/l '$H/in/via' &&
	tar -C '$H/in' -cf '$H/inside.tar' . && [ \$(hc -o /dev/null -w '%{http_code}' -X PUT \
		--data-binary @'$H/inside.tar' 'boxes/dst/root/opt/in/?format=tar') = 200 ] &&
	[ \"\$(readlink '$B/dst/root/opt/in/via')\" = d/l ]"
python3 - "$H" <<'PY'
import io, sys, tarfile
with tarfile.open(sys.argv[1] + "/setuid.tar", "w") as t:
    for name, mode, uid in (("rootshell", 0o4755, 0), ("sgid", 0o2755, 0), ("owned", 0o644, 1234)):
        i = tarfile.TarInfo(name); i.size = 1; i.mode = mode; i.uid = i.gid = uid
        t.addfile(i, io.BytesIO(b"x"))
    i = tarfile.TarInfo("abs"); i.type = tarfile.SYMTYPE; i.linkname = "/etc/passwd"; t.addfile(i)
PY
ok "a push with setuid files, owners and an absolute link is taken" same \
	"$(hc -o /dev/null -w '%{http_code}' -X PUT --data-binary @"$H/setuid.tar" 'boxes/dst/root/opt/s/?format=tar')" 200
ok "without setuid/setgid bits, owned by the image's user" bash -c "
	[ \$(stat -c %a '$B/dst/root/opt/s/rootshell') = 755 ] && [ \$(stat -c %a '$B/dst/root/opt/s/sgid') = 755 ] &&
	[ \$(stat -c %u '$B/dst/root/opt/s/owned') = 0 ]"
ok "the absolute link kept as the box's /etc/passwd" same "$(readlink "$B/dst/root/opt/s/abs")" /etc/passwd

# --- imports: through the FUSE file and PUT data/ ----------------------------------------
n=0
for a in chain-dot chain-climb chain-moved; do
	n=$((n + 1))
	mkdir "$V/i$n"
	ok "import of $a through the FUSE file is refused" bash -c "! cat '$H/$a.tar' > '$V/i$n/import' 2>/dev/null"
	ok "with the reason ($a)" grep -q "import rejected, the volume is unchanged: entry 2 (.): symlink to .* leads outside the volume" "$V/i$n/error"
	ok "and the volume stays empty ($a)" same "$(ls -A "$V/i$n/data/")" ""
	diag "$(cat "$V/i$n/error")"
done
mkdir "$V/web"
ok "PUT volumes/NAME/data/?format=tar of chain-climb: 403" same \
	"$(hc --path-as-is -o "$H/resp" -w '%{http_code}' -X PUT --data-binary @"$H/chain-climb.tar" 'volumes/web/data/?format=tar')" 403
ok "the volume stays empty" same "$(ls -A "$V/web/data/")" ""
mkdir "$V/abs"
ok "an absolute link imports (it means the path in the box using the volume)" bash -c "
	cat '$H/setuid.tar' > '$V/abs/import' && [ \"\$(readlink '$V/abs/data/abs')\" = /etc/passwd ] &&
	[ \$(stat -c %a '$V/abs/data/rootshell') = 755 ]"

# --- the disk limit --------------------------------------------------------------------------
mkdir "$B/small"
echo mini >"$B/small/type"
before=$(listing "$B/small/root/")
code=$(push big3m opt "small")
ok "a push of 3 MiB into a box whose type allows 2 MiB: 507" same "$code" 507
ok "with the limit in the reason" grep -q "push refused, the box is unchanged: box small has a disk limit of 2097152 bytes (type mini)" "$H/resp"
ok "and nothing written" same "$(listing "$B/small/root/")" "$before"
diag "$(cat "$H/resp")"
ok "1 MiB and 300 hard links to it fit (links take no room)" same "$(push links300 opt/hl small)" 200

# --- hard links through a layer merge ----------------------------------------------------------
mkdir "$B/m"
ok "push of 1 MiB and 300 hard links" same "$(push links300 hl m)" 200
ok "they are links in the box" same "$(stat -c %h "$B/m/root/hl/big")" 301
for i in 1 2 3; do
	echo running >"$B/m/state"
	echo "$i" >"$B/m/root/round$i"
	echo stopped >"$B/m/state"
done
db() { python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); [print("|".join(map(str,r))) for r in c.execute(sys.argv[2])]' "$D/paddock.db" "$1"; }
stack=$(db "SELECT layers FROM boxes WHERE name = 'm'")
ok "three stops with depth 2 merged the stack into one layer" bash -c "[ -n '$stack' ] && ! echo '$stack' | grep -q ,"
merged=$D/layers/L$stack
ok "the merged layer holds the pushed files" test -f "$merged/hl/big"
ok "its 301 names are one file" same "$(find "$merged/hl" -type f -printf '%i\n' | sort -u | wc -l):$(stat -c %h "$merged/hl/big")" 1:301
size=$(du -sk "$merged" | cut -f1)
ok "the merged layer takes about 1 MiB, not 301 (${size} KiB)" test "$size" -lt 4096
ok "the box still sees the files" bash -c "echo running > '$B/m/state' && cmp -s '$B/m/root/hl/big' '$B/m/root/hl/l299' && [ \"\$(cat '$B/m/root/round3')\" = 3 ]"
echo stopped >"$B/m/state"

ok "no staging directory left anywhere" same "$(find "$D" "$H" -name '.paddock-push-*' 2>/dev/null | wc -l)" 0
pd_done
