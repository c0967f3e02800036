#!/bin/bash
# The escape suite: a box's root attacks the host, the runtime and another
# box; each case is a real attempt that must fail or stay contained. Three
# boxes: `atk` (the attacker), `vic` (the victim: a secret file, IPC
# objects, a process whose working directory holds the secret) and `bomb`
# (a small type for the fork and memory bombs, and the runtime attack).
#
# - tests/escape/battery.sh runs the in-box attacks (tests/escape/
#   escape-probe.c, built static here) as the box's root in one exec job:
#   user namespaces, bpf, perf, keyring, open_by_handle_at, modules, kexec,
#   the kernel log, raw I/O, mounts, mknod and devices, /proc/kcore,
#   sysrq, /proc/sys, /sys, cgroup files, ptrace and signals to host PIDs,
#   the other box's files through /proc/PID/root|cwd and guessed host paths,
#   a chroot breakout, the other box's IPC, /proc/1/exe;
# - from the host: the host uids of box processes and the boxes' id ranges,
#   the runtime's binaries (CVE-2019-5736: a watcher in the box grabs every
#   runtime process that enters it, then `crun` and paddock-init are hashed),
#   the box's cgroup limits after its attempts to lift them, symbolic links
#   flipped in root/ while the host reads and writes through HTTP and the
#   tree, a volume's mount point made a link to a host directory, a fork
#   bomb and a memory bomb (the host, the daemon and the other box keep
#   working), memory-backed filesystems filled, and, with `seccomp = off`
#   in a second run, the keyrings a box gets.
#
# Prints the table case -> CONTAINED | ESCAPED | SKIPPED (reason) as TAP
# comments, then one TAP line per case. Known gaps, written as attacks
# that succeed, are TAP TODO lines (contained, they show as an unexpected
# pass: drop the TODO then). Layer-2 spoofing is test-net-l2.sh's.
. "$(dirname "$0")/lib.sh"
require_root
ESC_SRC=$TOP_SRCDIR/tests/escape
pd_setup || exit 1
PROBE=$PD_TMP/escape-probe
${CC:-cc} -static -O2 -D_GNU_SOURCE -o "$PROBE" "$ESC_SRC/escape-probe.c" 2>"$PD_TMP/cc.log" ||
	skip_all "cannot build a static program: $(head -c 200 "$PD_TMP/cc.log")"
# The boxes run a copy of crun: if the runtime attack worked it would
# damage the copy, not the machine's.
cp "$(command -v crun)" "$PD_TMP/crun"
INIT=$(dirname "$PADDOCKD")/paddock-init
sed -i "s|^\[paddock\]$|[paddock]\ncrun = $PD_TMP/crun|" "$PD_TMP/paddock.ini"
cat >>"$PD_TMP/paddock.ini" <<'INI'
[types.esc]
cpus = 0.5
memory = 256M
pids = 256
disk = 1G
[types.bomb]
cpus = 0.5
memory = 64M
pids = 64
disk = 1G
[types.fill]
cpus = 0.5
memory = 64M
pids = 64
disk = 64M
INI
binaries() { sha256sum "$PD_TMP/crun" "$INIT" | cut -d' ' -f1 | tr '\n' ' '; }
BINARIES=$(binaries)
pd_start
pd_owner || { diag "cannot set up the owner"; exit 1; }
B=$M/boxes

# ---- results -------------------------------------------------------------
declare -A RES DET TODO
ORDER=()
# record CASE RESULT DETAIL
record() {
	[ -n "${RES[$1]+x}" ] || ORDER+=("$1")
	RES[$1]=$2
	DET[$1]=$3
}
# judge CASE DETAIL COMMAND...: CONTAINED when COMMAND succeeds.
judge() {
	local c=$1 d=$2
	shift 2
	if "$@"; then record "$c" CONTAINED "$d"; else record "$c" ESCAPED "$d"; fi
}

# job BOX CMD [SECONDS]: runs CMD in BOX and prints its stdout once it has
# ended (non-zero if it did not end in time).
job() {
	echo "$2" >"$B/$1/exec/new" || return 1
	local last
	last=$(readlink "$B/$1/exec/last")
	timeout "${3:-30}" cat "$B/$1/exec/$last/exit" >/dev/null || return 1
	cat "$B/$1/exec/$last/stdout"
}
# job_start BOX CMD [USER]: starts a long job (as USER); sets JOBDIR to its
# directory and JOBPID to its host PID.
job_start() {
	JOBDIR=$B/$1/exec/p$RANDOM$RANDOM
	JOBPID=
	mkdir "$JOBDIR" || return 1
	[ -z "${3:-}" ] || echo "$3" >"$JOBDIR/user"
	echo "$2" >"$JOBDIR/cmd" || return 1
	wait_for 10 test -s "$JOBDIR/pid" || return 1
	JOBPID=$(cat "$JOBDIR/pid")
}
init_pid() {
	pd_crun state "$1" | python3 -c 'import json, sys; print(json.load(sys.stdin)["pid"])'
}
# ids PID: "UID:GID" of a process as the host sees them.
ids() {
	awk '/^Uid:/ { u = $2 } /^Gid:/ { g = $2 } END { print u ":" g }' "/proc/$1/status"
}
# cgf CONTROLLER BOX V1FILE V2FILE: a box cgroup's file, seen from the host.
cgf() {
	if [ -d "/sys/fs/cgroup/$1/$PD_CGROUP" ]; then
		cat "/sys/fs/cgroup/$1/$PD_CGROUP/$2/$3"
	else
		cat "/sys/fs/cgroup/$PD_CGROUP/$2/$4"
	fi
}
# kv TEXT NAME: the value of NAME=VALUE in TEXT.
kv() {
	echo "$1" | tr ' \t' '\n\n' | sed -n "s/^$2=//p" | head -n 1
}
alive() {
	[ "$(job vic 'echo alive' 20)" = alive ]
}

for b in atk vic bomb; do
	mkdir "$B/$b" && mkdir "$B/$b/root/escape" &&
		cp "$PROBE" "$ESC_SRC/battery.sh" "$B/$b/root/escape/" &&
		chmod 755 "$B/$b/root/escape/escape-probe" "$B/$b/root/escape/battery.sh" &&
		echo esc >"$B/$b/type" || { diag "cannot make box $b"; exit 1; }
done
echo bomb >"$B/bomb/type"
TOKEN=secret-$RANDOM$RANDOM$RANDOM
mkdir "$B/vic/root/secret" && echo "$TOKEN" >"$B/vic/root/secret/s.txt"
echo "$TOKEN" >"$PD_TMP/host-only"
IPC_KEY=$((0x5e000000 + RANDOM))
IPC_NAME=esc-$RANDOM$RANDOM
job vic "/escape/escape-probe ipc-hold $IPC_KEY $IPC_NAME $TOKEN /secret 900" >/dev/null ||
	{ diag "the victim box does not run"; exit 1; }
echo running >"$B/atk/state" && echo running >"$B/bomb/state" ||
	{ diag "the boxes do not start"; exit 1; }
VIC_INIT=$(init_pid vic)
ATK_INIT=$(init_pid atk)
BOMB_INIT=$(init_pid bomb)

# ---- the battery, inside the attacker box ---------------------------------
OUT=$(job atk "ESC_HOST_PIDS='$PD_PID $VIC_INIT $$ 1' ESC_SECRET=/secret/s.txt ESC_TOKEN=$TOKEN \
ESC_HOST_FILE=$PD_TMP/host-only ESC_IPC_KEY=$IPC_KEY ESC_IPC_NAME=$IPC_NAME \
ESC_KEY=esc-$RANDOM /escape/battery.sh" 120) || diag "the battery did not end"
while IFS=$'\t' read -r c r d; do
	[ -n "$c" ] || continue
	case "$c:$r" in
	fill:*:HOST)
		# A memory-backed filesystem of 64 MiB: the writes end there,
		# and what they took is charged to the box's memory.
		mib=${d#mib=}
		mib=${mib%% *}
		peak=$(cgf memory atk memory.max_usage_in_bytes memory.peak)
		judge "$c" "$d box-memory-peak:$((peak >> 20))MiB" \
			test "$mib" -le 64 -a "${d##*error=}" = ENOSPC -a "$((peak >> 20))" -ge "$mib"
		;;
	*:CONTAINED | *:ESCAPED) record "$c" "$r" "$d" ;;
	*) record "$c" ESCAPED "unexpected result $r: $d" ;;
	esac
done <<<"$OUT"
[ -n "${RES[exe-init]+x}" ] || record battery ESCAPED "the battery did not finish: $(echo "$OUT" | tail -n 3)"

# The limits the box tried to lift, as the host reads them.
limits=$(cgf memory atk memory.limit_in_bytes memory.max):$(cgf pids atk pids.max pids.max)
judge cgroup-write "${DET[cgroup-write]} host:limits=$limits" \
	test "${RES[cgroup-write]}:$limits" = CONTAINED:$((256 << 20)):256

# ---- user namespaces, from the host ----------------------------------------
# Box root and the box's users are not host root nor a host user: each box
# maps its ids to a range of its own.
job_start atk 'sleep 60'
P_ROOT=$JOBPID J_ROOT=$JOBDIR
job_start atk 'sleep 60' 1000
P_USER=$JOBPID J_USER=$JOBDIR
detail="init:$(ids "$ATK_INIT") exec-root:$(ids "$P_ROOT") exec-1000:$(ids "$P_USER") other-box-init:$(ids "$VIC_INIT")"
# Every id a number, none of them 0 or 1000.
not_host_ids() {
	echo "$1" | tr ' ' '\n' | awk -F: '{ for (i = 2; i <= 3; i++) if ($i !~ /^[0-9]+$/ || $i == 0 || $i == 1000) bad = 1 } END { exit bad }'
}
judge userns-host-uid "$detail" not_host_ids "$detail"
echo kill >"$J_ROOT/ctl"
echo kill >"$J_USER/ctl"
# ranges BOX=PID...: "BOX:in,out,count" of each line of its uid_map.
ranges() {
	local p
	for p; do
		awk -v b="${p%=*}" '{ printf "%s:%s,%s,%s ", b, $1, $2, $3 }' "/proc/${p#*=}/uid_map"
	done
}
no_overlap() {
	python3 - "$@" <<'PY'
import sys
r = []
for item in sys.argv[1:]:
    box, m = item.split(":")
    _, out, n = map(int, m.split(","))
    r.append((box, out, out + n))
bad = [(a, b) for i, a in enumerate(r) for b in r[i + 1:]
       if a[0] != b[0] and a[1] < b[2] and b[1] < a[2]]
bad += [(a, "host 0") for a in r if a[1] == 0]
sys.exit(1 if bad else 0)
PY
}
detail=$(ranges atk="$ATK_INIT" vic="$VIC_INIT" bomb="$BOMB_INIT")
# shellcheck disable=SC2086
judge userns-ranges "uid_map (box:inside,outside,count): $detail" no_overlap $detail

# ---- the runtime's binaries (CVE-2019-5736) --------------------------------
# A watcher in the bomb box grabs /proc/PID/exe of every runtime process
# that enters the box for an exec and reopens it for writing, while and
# after it runs; then the binaries are hashed from the host.
job bomb '/escape/escape-probe exe-watch 4 >/tmp/watch.log 2>&1 &' >/dev/null
for _ in 1 2 3 4 5 6; do job bomb true >/dev/null; done
wait_for 15 grep -q '^exe-runtime' "$B/bomb/root/tmp/watch.log"
IFS=$'\t' read -r c r d <"$B/bomb/root/tmp/watch.log"
[ "$(binaries)" = "$BINARIES" ] && bin=unchanged || bin=CHANGED
judge exe-runtime "${d:-no report} host:crun-and-paddock-init-$bin" \
	test "${r:-}:$bin" = CONTAINED:unchanged
[ "${RES[exe-init]}" != CONTAINED ] ||
	judge exe-init "${DET[exe-init]} host:paddock-init-$bin" test $bin = unchanged

# ---- symbolic links flipped in root/ ---------------------------------------
# The box swaps /race/d (a directory) with links to a host directory, an
# absolute one and one climbing with .., while the host reads and writes
# through race/d. Nothing outside the box may be read or written.
HD=$PD_TMP/hostdir
mkdir "$HD" && echo "$TOKEN" >"$HD/hostfile"
R=$B/atk/root/race
job atk "mkdir -p /race/d && echo box-file >/race/d/hostfile && ln -s $HD /race/l1 &&
ln -s ../../../../../../../../../../../..$HD /race/l2 &&
{ /escape/escape-probe flip 60 /tmp/flip.stop /race/d /race/l1 /race/l2 >/tmp/flip.log 2>&1 & }" >/dev/null
sleep 0.2
HTTP_OUT=$(python3 - "$PD_URL" "$PD_TOKEN" atk "$TOKEN" 4 <<'PY'
import http.client, io, sys, tarfile, time, urllib.parse
url, token, box, secret, seconds = sys.argv[1:6]
u = urllib.parse.urlsplit(url)
H = {"Authorization": "Bearer " + token}
base = "/v1/tree/boxes/%s/root/race" % box
conn = None
def req(method, path, body=None, hdr=None):
    global conn
    for _ in range(2):
        try:
            if conn is None:
                conn = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
            conn.request(method, base + path, body=body, headers={**H, **(hdr or {})})
            r = conn.getresponse()
            return r.status, r.read()
        except (http.client.HTTPException, OSError):
            conn.close()
            conn = None
    return 0, b""
buf = io.BytesIO()
with tarfile.open(fileobj=buf, mode="w") as t:
    data = b"from the host\n"
    ti = tarfile.TarInfo("pwned-tar")
    ti.size = len(data)
    t.addfile(ti, io.BytesIO(data))
tar = buf.getvalue()
ops = [("get", "GET", "/d/hostfile", None, None),
       ("pull", "GET", "/?format=tar", None, None),
       ("put", "PUT", "/d/pwned-put", b"from the host\n", None),
       ("push", "PUT", "/d/?format=tar", tar, {"Content-Type": "application/x-tar"}),
       ("mkdir", "PUT", "/d/pwned-dir/", None, None),
       ("delete", "DELETE", "/d/hostfile", None, None)]
stats, leaked = {}, 0
end = time.time() + float(seconds)
while time.time() < end:
    for name, method, path, body, hdr in ops:
        status, got = req(method, path, body, hdr)
        if secret.encode() in got:
            leaked += 1
        k = "%s:%d" % (name, status)
        stats[k] = stats.get(k, 0) + 1
print("leaked=%d %s" % (leaked, " ".join("%s=%d" % kv for kv in sorted(stats.items()))))
PY
)
hd_state() { echo "$(ls -A "$HD" | tr '\n' ' ')$(cat "$HD/hostfile")"; }
judge race-http "$HTTP_OUT host-dir:[$(hd_state)]" \
	test "${HTTP_OUT%% *}:$(hd_state)" = "leaked=0:hostfile $TOKEN"
# The same through the tree: root/ is the box's mount seen from the host,
# nosymfollow, so host tools get ELOOP at the box's links, whatever they
# point to. Once the box stops flipping, the host writes and reads in its
# directory and sees its links (readlink): the view still works.
reads=0 end=$((SECONDS + 2))
while [ $SECONDS -lt $end ]; do
	grep -qs "$TOKEN" "$R/d/hostfile" && reads=$((reads + 1))
	{ echo from-the-host >"$R/d/pwned-tree"; } 2>/dev/null || true
done
job atk 'touch /tmp/flip.stop' >/dev/null
wait_for 10 test -s "$B/atk/root/tmp/flip.log"
FLIPS=$(cat "$B/atk/root/tmp/flip.log")
DET[race-http]="${DET[race-http]} box:$(kv "$FLIPS" swaps)-swaps"
after="$(echo host-file >"$R/d/after" && cat "$R/d/after") $(readlink "$R/l1") $(cat "$R/l1/hostfile" 2>&1 | sed 's/.*: //')"
judge race-tree "host reads of the host file through root/: $reads; host-dir:[$(hd_state)]; after: $after" \
	test "$reads:$(hd_state):$after" = "0:hostfile $TOKEN:host-file $HD Too many levels of symbolic links"
case "$FLIPS" in flip*swaps=*) ;; *) record race-http ESCAPED "the box's flips did not run: $FLIPS" ;; esac

# ---- the box's links in the other views -----------------------------------
# A snapshot's root/ and a volume's data/ are nosymfollow as root/ is:
# the links the box left there (race/l1 and race/l2 lead to the host
# directory) are seen, not followed. The HTTP mirror resolves them inside
# the box: race/l1/hostfile is the box's /host... path, which it lacks.
echo links >"$B/atk/snapshot"
SNAP=$(readlink "$B/atk/snapshots/last")
mkdir "$M/volumes/lv" && ln -s "$HD" "$M/volumes/lv/data/evil"
via() { cat "$1/hostfile" 2>&1 | sed 's/.*: //'; }
views="snapshot:$(via "$M/snapshots/$SNAP/root/race/l1") $(via "$M/snapshots/$SNAP/root/race/l2")"
views="$views volume:$(via "$M/volumes/lv/data/evil")"
views="$views http:$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $PD_TOKEN" \
	"$PD_URL/v1/tree/boxes/atk/root/race/l1/hostfile")"
views="$views readlink:$(readlink "$M/snapshots/$SNAP/root/race/l1" "$M/volumes/lv/data/evil" | tr '\n' ' ')"
loop="Too many levels of symbolic links"
judge links-views "$views" test "$views" = \
	"snapshot:$loop $loop volume:$loop http:404 readlink:$HD $HD "

# ---- a volume's mount point made a link to a host directory ---------------
# The box may fail to start (its own loss): the host directory must stay
# untouched either way.
HD2=$PD_TMP/hostdir2
mkdir "$HD2" "$M/volumes/v" && echo v >"$B/atk/volumes" &&
	job atk "mkdir -p /mnt && rm -rf /mnt/v && ln -s $HD2 /mnt/v" >/dev/null &&
	echo stopped >"$B/atk/state"
if echo running 2>/dev/null >"$B/atk/state"; then
	job atk 'echo from-the-box >/mnt/v/written' >/dev/null
	why="started"
else
	why="start refused: $(cut -d' ' -f3- "$B/atk/error")"
fi
detail="host-dir:[$(ls -A "$HD2" | tr '\n' ' ')] volume:[$(ls -A "$M/volumes/v/data" | tr '\n' ' ')] box $why"
judge mount-dest-link "$detail" bash -c "! mountpoint -q '$HD2' && [ -z \"\$(ls -A '$HD2')\" ]"

# ---- fork bomb -------------------------------------------------------------
echo '/escape/escape-probe fork-bomb' >"$B/bomb/exec/new"
sleep 3
pids=$(cgf pids bomb pids.current pids.current)
events=$(cgf pids bomb pids.events pids.events | awk '/^max/ { print $2 }')
t0=$(date +%s%N)
alive && other=works || other=broken
t1=$(date +%s%N)
host=$(timeout 10 bash -c 'for i in 1 2 3 4 5 6 7 8 9 10; do /bin/true; done && echo works' || echo broken)
timeout 60 bash -c "echo stopped >'$B/bomb/state'"
state=$(cat "$B/bomb/state")
detail="pids=$pids/64 refused-forks=${events:-?} other-box:$other ($(((t1 - t0) / 1000000)) ms) host:$host stop:$state"
fork_bomb_held() {
	[ -n "$pids" ] && [ "$pids" -le 64 ] && [ "${events:-0}" -gt 0 ] &&
		[ "$other:$host:$state" = works:works:stopped ]
}
judge fork-bomb "$detail" fork_bomb_held

# ---- memory bomb ------------------------------------------------------------
echo running >"$B/bomb/state"
echo '/escape/escape-probe mem-bomb' >"$B/bomb/exec/new"
last=$(readlink "$B/bomb/exec/last")
code=$(timeout 60 cat "$B/bomb/exec/$last/exit")
reached=$(tail -n 1 "$B/bomb/exec/$last/stdout" | cut -f3)
ooms=$(cgf memory bomb memory.oom_control memory.events | awk '/^oom_kill / { print $2 }')
alive && other=works || other=broken
kill -0 "$PD_PID" && daemon=alive || daemon=gone
detail="exit=$code last-seen:${reached:-none} oom-kills-in-the-box=${ooms:-?} other-box:$other daemon:$daemon box:$(cat "$B/bomb/state")"
mem_bomb_held() {
	[ "$code" = 137 ] && [ "${ooms:-0}" -gt 0 ] && [ "$other:$daemon" = works:alive ]
}
judge mem-bomb "$detail" mem_bomb_held
timeout 60 bash -c "echo stopped >'$B/bomb/state'"

# ---- the disk ----------------------------------------------------------------
# A box writes until its disk is full, then some more; the host's
# filesystem, the daemon and the other box must not notice.
mkdir "$B/filler" && echo fill >"$B/filler/type" && echo running >"$B/filler/state" ||
	diag "cannot make box filler"
host_before=$(df -k --output=used "$D" | tail -1)
fill_out=$(job filler 'dd if=/dev/zero of=/fill bs=1M count=400 2>&1; dd if=/dev/zero of=/fill2 bs=1M count=10 2>&1; df -k / | tail -1' 120)
host_grew=$(($(df -k --output=used "$D" | tail -1) - host_before))
fill_df=$(echo "$fill_out" | tail -n 1 | awk '{print $2}')
fill_usage=$(awk '/^disk_bytes/ {print $2}' "$B/filler/usage")
alive && other=works || other=broken
kill -0 "$PD_PID" && daemon=alive || daemon=gone
host=$(dd if=/dev/zero of="$PD_TMP/host-write" bs=1M count=10 2>/dev/null && rm "$PD_TMP/host-write" && echo works || echo broken)
enospc=$(echo "$fill_out" | grep -c 'No space left on device')
detail="ENOSPC-in-box:$enospc host-grew:${host_grew}KiB df-in-box:${fill_df}KiB usage:${fill_usage} other-box:$other daemon:$daemon host:$host"
disk_fill_held() {
	[ "$enospc" -ge 2 ] && [ "$host_grew" -lt $((80 * 1024)) ] && [ "${fill_df:-0}" -lt 70000 ] &&
		[ "${fill_usage:-0}" -le $((70 * 1048576)) ] && [ "$other:$daemon:$host" = works:alive:works ]
}
judge disk-fill "$detail" disk_fill_held
timeout 60 bash -c "echo stopped >'$B/filler/state'"

# ---- the other box, after all that ------------------------------------------
judge victim-intact "secret:$(cat "$B/vic/root/secret/s.txt") state:$(cat "$B/vic/state")" \
	bash -c "[ \"\$(cat '$B/vic/root/secret/s.txt')\" = '$TOKEN' ] && [ \"\$(cat '$B/vic/state')\" = running ]"

# ---- keyrings without the seccomp filter -----------------------------------
# With `seccomp = off` keyctl reaches the kernel: each box must still have
# a session keyring and a user keyring of its own, and a key a box adds
# must not land in host root's keyring.
pd_stop
sed -i 's|^\[paddock\]$|[paddock]\nseccomp = off|' "$PD_TMP/paddock.ini"
pd_start
KEY=esc-key-$RANDOM$RANDOM
# Should box1's key land in host root's keyring, it goes even if the test
# stops early.
forget_key() { "$PROBE" key-find "$KEY" >/dev/null 2>&1; }
pd_on_exit forget_key
for b in k1 k2; do
	mkdir "$B/$b" && mkdir "$B/$b/root/escape" && cp "$PROBE" "$B/$b/root/escape/" ||
		diag "cannot make box $b"
done
K1=$(job k1 "/escape/escape-probe keyring $KEY" | cut -f2-)
K2=$(job k2 "/escape/escape-probe keyring" | cut -f2-)
HOSTK=$("$PROBE" keyring | cut -f3)
FOUND=$("$PROBE" key-find "$KEY" | cut -f3)
# apart NAME: box1's keyring NAME is a keyring (a serial) that is neither
# box2's nor the host's.
apart() {
	local a
	a=$(kv "$K1" "$1")
	[ "${a:-0}" -gt 0 ] && [ "$a" != "$(kv "$K2" "$1")" ] && [ "$a" != "$(kv "$HOSTK" "$1")" ]
}
judge keyring-session "box1:$(kv "$K1" session) box2:$(kv "$K2" session) host:$(kv "$HOSTK" session)" \
	apart session
user_apart() {
	apart user && [ "$(kv "$FOUND" found)" = ENOKEY ]
}
judge keyring-user "box1:$(kv "$K1" user) box2:$(kv "$K2" user) host:$(kv "$HOSTK" user); the key box1 added, in host root's keyring: $(kv "$FOUND" found)" \
	user_apart

# ---- the table -----------------------------------------------------------------
diag "escape suite: case -> result"
for c in "${ORDER[@]}"; do
	printf '# %-20s %-9s %s\n' "$c" "${RES[$c]}" "${DET[$c]}"
done
diag "net-l2               (MAC, ARP and IPv4 spoofing, fdb poisoning: test-net-l2.sh)"
for c in "${ORDER[@]}"; do
	pd_n=$((pd_n + 1))
	case "${RES[$c]}" in
	CONTAINED) echo "ok $pd_n - $c: CONTAINED${TODO[$c]:+ # TODO known gap: ${TODO[$c]}}" ;;
	SKIPPED) echo "ok $pd_n - $c # SKIP ${DET[$c]}" ;;
	*)
		echo "not ok $pd_n - $c: ${RES[$c]}${TODO[$c]:+ # TODO known gap: ${TODO[$c]}}"
		[ -n "${TODO[$c]:-}" ] || pd_failed=$((pd_failed + 1))
		;;
	esac
done
pd_done
