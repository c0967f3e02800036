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
# - a push bigger than the box type's disk limit; two pushes that fit one
#   at a time, one after the other and at once; 20,000 directories and
#   links that hold no content;
# - a directory merging through a link already in the target, which
#   another part of the archive also writes (pull and push);
# - a pull the daemon cannot finish (names deeper than PATH_MAX), a tree
#   300 levels deep, a pull as root onto an existing bin/;
# - archives whose links are costly to judge (a chain and 99,000 links to
#   its head; 40,000 links 120 levels down);
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

pdc -q pull src /data --to "$H/own" --owners 2>"$PD_TMP/own.err" || sed "s/^/# /" "$PD_TMP/own.err"
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
fpull cut-gzip "$H/cutgz" 2>"$H/cutgz.err"
rc=$?
sed 's/^/# /' "$H/cutgz.err"
ok "a gzip stream cut in its trailer: refused with a reason that reads as one" bash -c "[ $rc -ne 0 ] && ! grep -q '(null)' '$H/cutgz.err' && grep -q 'not a tar archive: ' '$H/cutgz.err'"
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
# The image's user is root: box root, the first id of the box's range.
ok "without setuid/setgid bits, owned by the image's user" bash -c "
	[ \$(stat -c %a '$B/dst/root/opt/s/rootshell') = 755 ] && [ \$(stat -c %a '$B/dst/root/opt/s/sgid') = 755 ] &&
	[ \$(stat -c %u '$B/dst/root/opt/s/owned') = \$(python3 -c \"import sqlite3; print(sqlite3.connect('$D/paddock.db').execute('SELECT uid_base FROM boxes WHERE name=?', ('dst',)).fetchone()[0])\") ]"
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
ok "with the limit in the reason" grep -q "push refused, the box is unchanged: entry 1 (big): 3145728 bytes on disk: box small has a disk limit of 2097152 bytes (type mini)" "$H/resp"
ok "and nothing written" same "$(listing "$B/small/root/")" "$before"
diag "$(cat "$H/resp")"
ok "1 MiB and 300 hard links to it fit (links take no room)" same "$(push links300 opt/hl small)" 200

# Two pushes one after the other: the first one's files count at once,
# though the box's usage figure is a few seconds old.
mkdir "$B/seq"
echo mini >"$B/seq/type"
ok "1.5 MiB into a box whose type allows 2 MiB: 200" same "$(push half-a opt seq)" 200
code=$(push half-b opt seq)
ok "another 1.5 MiB right after it: 507" same "$code" 507
diag "$(cat "$H/resp")"
ok "only the first is in the box" bash -c "[ -f '$B/seq/root/opt/a' ] && [ ! -e '$B/seq/root/opt/b' ]"
# Two at the same moment (sent slowly, so both are in flight): one holds
# the room, the other is refused.
mkdir "$B/conc"
echo mini >"$B/conc/type"
slow_push() { # slow_push ARCHIVE PATH BOX OUT
	hc --path-as-is -o /dev/null -w '%{http_code}\n' --limit-rate 300K -X PUT \
		--data-binary @"$H/$1.tar" "boxes/$3/root/$2?format=tar" >"$4"
}
slow_push half-a opt conc "$H/conc1" &
p1=$!
slow_push half-b opt conc "$H/conc2" &
p2=$!
wait "$p1" "$p2"
ok "two 1.5 MiB pushes at once: one 200, one 507" same "$(cat "$H/conc1" "$H/conc2" | sort | tr '\n' ' ')" "200 507 "
ok "and one file in the box" same "$(ls "$B/conc/root/opt" | wc -l)" 1
# What takes no content takes room too: 20,000 directories and 20,000
# links with 4,000-byte targets in a 550 KB archive grew a box by 158 MB.
mkdir "$B/fill"
echo mini >"$B/fill/type"
before=$(listing "$B/fill/root/")
code=$(push dirs-links opt fill)
ok "20,000 directories and links with long targets under a 2 MiB limit: 507" same "$code" 507
ok "refused for the disk limit" grep -q "box fill has a disk limit of 2097152 bytes (type mini)" "$H/resp"
ok "and nothing written" same "$(listing "$B/fill/root/")" "$before"
diag "$(cat "$H/resp")"

# --- a directory that merges through a link --------------------------------------------------------
# Pull: the box has data/d -> e and data/e/; pull 1. Then it makes d a real
# directory holding sub/L -> ../../../../../etc and adds e/sub -> a/b/c/d2:
# merged through the link d -> e from pull 1, L would land in e/sub and
# lead out of the target.
mkdir "$B/lnk"
R=$B/lnk/root/data
mkdir -p "$R/e"
ln -s e "$R/d"
T=$H/deep/er/T
mkdir -p "$T"
pdc -q pull lnk /data --to "$T" 2>"$H/lnk1.err"
ok "pull 1 (d -> e, e/) is taken" same "$?:$(readlink "$T/d")" "0:e"
rm "$R/d"
mkdir -p "$R/d/sub"
ln -s ../../../../../etc "$R/d/sub/L"
ln -s a/b/c/d2 "$R/e/sub"
pdc -q pull lnk /data --to "$T" 2>"$H/lnk2.err"
rc=$?
sed 's/^/# /' "$H/lnk2.err"
ok "pull 2 exits 1" same "$rc" 1
ok "no link leads out of the target" bash -c "out=\$(find '$T' -type l -exec realpath -m {} + | grep -v '^$T/'); [ -z \"\$out\" ] || { echo \"# \$out\"; false; }"
ok "d is the box's directory now, not the old link" bash -c "[ -d '$T/d' ] && [ ! -L '$T/d' ] && [ -d '$T/d/sub' ]"
ok "L is skipped, and named" bash -c "[ ! -e '$T/d/sub/L' ] && [ ! -L '$T/d/sub/L' ] && [ ! -L '$T/e/sub/L' ] && grep -q 'skipped d/sub/L: symlink to ../../../../../etc leads outside the target directory' '$H/lnk2.err'"
# Push: push 1 leaves opt/e/ and opt/d -> e; push 2 writes e/sub -> a/b/c/d2
# and d/sub/L -> ../../../../../../etc/shadow, which would land in e/sub.
mkdir "$B/lnkp"
ok "push 1 (e/, d -> e) into opt: 200" same "$(push merge-1 opt lnkp)" 200
before=$(listing "$B/lnkp/root/")
code=$(push merge-2 opt lnkp)
ok "push 2 (d/ lands where the archive writes e/): 403" same "$code" 403
ok "with the reason" grep -q "d/ would merge through the symlink already there into /opt/e, where the archive also writes e" "$H/resp"
ok "and the box root is unchanged" same "$(listing "$B/lnkp/root/")" "$before"
R0=$(realpath "$B/lnkp/root")
ok "no link leads out of the box root" bash -c "out=\$(find '$R0/opt' -type l -exec realpath -m {} + | grep -v '^$R0/'); [ -z \"\$out\" ] || { echo \"# \$out\"; false; }"
diag "$(cat "$H/resp")"

# --- pulls the daemon cannot finish, and trees too deep -----------------------------------------
# 18 nested directories of 252-byte names: deeper than PATH_MAX, so the
# daemon stops midway. The pull must say so and leave the target as it was.
mkdir "$B/cut"
python3 - "$B/cut/root" <<'PY'
import os, sys
os.chdir(sys.argv[1])
os.mkdir("long")
os.chdir("long")
for i in range(18):
    n = ("%02d" % i) * 126
    os.mkdir(n)
    os.chdir(n)
PY
mkdir "$H/cut" && echo before >"$H/cut/keep"
pdc -q pull cut /long --to "$H/cut" 2>"$H/cut.err"
rc=$?
sed 's/^/# /' "$H/cut.err"
ok "a pull the daemon cuts short fails" test "$rc" -ne 0
ok "saying the transfer ended early" grep -q "the transfer ended early" "$H/cut.err"
ok "and the target is as it was" same "$(ls -A "$H/cut")" keep
# 300 nested directories: the pull takes 256 levels and names what it left.
mkdir "$B/deep"
python3 - "$B/deep/root" <<'PY'
import os, sys
os.chdir(sys.argv[1])
os.mkdir("tree")
os.chdir("tree")
open("top", "w").write("top")
for i in range(300):
    os.mkdir("d")
    os.chdir("d")
PY
pdc -q pull deep /tree --to "$H/deep" 2>"$H/deep.err"
rc=$?
ok "a tree 300 levels deep: pull exits 1" same "$rc" 1
ok "naming what it left out" grep -q "more than 256 levels of directories" "$H/deep.err"
ok "the rest is in place, 256 levels of it" bash -c "[ \"\$(cat '$H/deep/top')\" = top ] && cd '$H/deep' && for i in \$(seq 255); do cd d || exit 1; done && [ -d d ] && [ ! -e d/d ]"
head -c 300 "$H/deep.err" | sed 's/^/# /'

# --- pull onto existing host directories ------------------------------------------------------
# A box can make /usr/local/bin world-writable, or its own, when the owner
# pulls into /usr/local as root: directories that exist keep their mode and
# owner.
mkdir "$B/meta"
mkdir -p "$B/meta/root/local/bin"
echo x >"$B/meta/root/local/bin/tool"
chmod 0777 "$B/meta/root/local/bin"
chown 1234:1234 "$B/meta/root/local/bin" "$B/meta/root/local/bin/tool"
mkdir -p "$H/usrlocal/bin"
chmod 0755 "$H/usrlocal/bin"
pdc -q pull meta /local --to "$H/usrlocal" --owners 2>"$H/meta.err"
ok "pull --owners onto an existing bin/ works" same "$?" 0
ok "bin/ keeps its mode and owner" same "$(mode "$H/usrlocal/bin"):$(owner "$H/usrlocal/bin")" 755:0:0
ok "what the pull made has the box's owner" same "$(owner "$H/usrlocal/bin/tool")" 1234:1234

# --- the link check within bounds ---------------------------------------------------------------
mkdir "$B/chain"
t0=$(date +%s)
code=$(push chain99k opt chain)
t1=$(date +%s)
ok "a chain of 39 links and 99,000 links to its head: 200" same "$code" 200
diag "pushed in $((t1 - t0)) s (29 s before each link's walk was remembered)"
code=$(push deep-links opt chain)
ok "40,000 links to new names 120 levels down: 413" same "$code" 413
ok "refused for the lookups it takes" grep -q "path lookups to judge" "$H/resp"
diag "$(cat "$H/resp")"

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
