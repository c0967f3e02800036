#!/bin/bash
# The Docker tier never becomes host privileges, written as attacks: code
# in a box is hostile, and a box with Docker has every capability of its
# user namespace, Docker's seccomp profile decided for all of them and a
# cgroup of its own to manage.
#
# - Box root of a Docker box (d1) tries the host: host-wide sysctls, kernel
#   modules, raw I/O, the clock, block and memory devices (mknod, a
#   devtmpfs, the devices cgroup), the cgroup tree (its own limits, a new
#   v1 hierarchy for a release_agent, fresh v1 and v2 mounts that must
#   show its own cgroup only, a container's cgroup parent climbing out),
#   the host's files bound in read-only (remounted read-write: still not
#   writable) and /proc's masked parts unmounted, the host's processes,
#   the daemon's nftables table, the host's container runtime and files; a
#   nested container asks for more memory than the box has (-m 4g in a 2G
#   box) and is killed at the box's limit. The box's own v2 cgroup (v1 and
#   hybrid hosts) is gone with its stop, also by a restarted daemon, and
#   back with its start.
# - Nested containers: `docker run --privileged` has the box's user
#   namespace and nothing more (no host sysctl, device, disk, cgroup);
#   --pid=host sees the box's processes, -v /:/host the box's files; what
#   a nested container's root writes lands on the host as box root's host
#   id (its range), never host root.
# - A default box next to it (docker off) keeps the default tier: no
#   CAP_SYS_ADMIN, seccomp mode 2, a read-only /sys/fs/cgroup, and its
#   docker file refuses `on` while it runs (EBUSY, the reason in error,
#   nothing changed); a debian box (no dockerd) refuses `on` (EINVAL) even
#   stopped; bad values are EINVAL; user nobody can neither read nor write
#   the file (EACCES).
# - The Docker store: out of other local users' reach (also box root's
#   host id), not in the box's root/ view, nor in a snapshot or its export.
#
# The run (daemon, bridge, nftables table, boxes) lives in a network
# namespace of its own, and a mount namespace whose mounts are shared.
. "$(dirname "$0")/lib.sh"
require_root
# Mounts shared, as on a host run by systemd, so that a mount leaking out
# of a box would show; in a mount namespace of the test's own.
if [ -z "${PD_SHARED_MOUNTS:-}" ]; then
	PD_SHARED_MOUNTS=1 exec unshare --mount --propagation shared "$0" "$@"
fi
pd_own_netns "$0" "$@"
command -v setpriv >/dev/null || skip_all "needs setpriv"
command -v nft >/dev/null || skip_all "needs nft"
command -v zstd >/dev/null || skip_all "needs zstd"
command -v busybox >/dev/null || skip_all "needs busybox (the nested containers' image)"

PD_NETWORK=on PD_BRIDGE=pd-e$(($$ % 1000)) PD_SUBNET=10.206.$(($$ % 250)).0/24 PD_NFT_TABLE=paddock_e$$
export PD_NETWORK PD_BRIDGE PD_SUBNET PD_NFT_TABLE
pd_image_cache debian || skip_all "the debian image cannot be built"
pd_use_image docker
pd_setup || exit 1
pd_docker_type
cat >>"$PD_TMP/paddock.ini" <<'INI'
[types.small]
cpus = 0.5
memory = 512M
pids = 512
disk = 2G
INI
ln -s "$PD_IMAGES/debian" "$D/images/debian"
pd_start
B=$M/boxes
HOST_CORE=$(cat /proc/sys/kernel/core_pattern)
INIT=$(dirname "$PADDOCKD")/paddock-init
INIT_SUM=$(sha256sum <"$INIT" | cut -d' ' -f1)
TOKEN=tok$RANDOM$RANDOM
echo "$TOKEN" >"$PD_TMP/host-only"

# pd_job_as USER BOX CMD [SECONDS]: pd_job as USER (a named job).
pd_job_as() {
	local j=j$RANDOM$RANDOM
	mkdir "$B/$2/exec/$j" && echo "$1" >"$B/$2/exec/$j/user" &&
		echo "$3" >"$B/$2/exec/$j/cmd" || return 1
	same "$(timeout "${4:-60}" cat "$B/$2/exec/$j/exit")" 0 || {
		sed 's/^/# /' "$B/$2/exec/$j/output" | tail -n 20
		return 1
	}
	cat "$B/$2/exec/$j/stdout"
}
db() {
	python3 -c 'import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); [print("|".join(map(str, r))) for r in c.execute(sys.argv[2])]' "$D/paddock.db" "$1"
}
init_pid() {
	pd_crun state "$1" | python3 -c 'import json, sys; print(json.load(sys.stdin)["pid"])'
}
# has TEXT PATTERN / hasnt TEXT PATTERN: whether TEXT matches the glob.
has() { [[ $1 == $2 ]] || { diag "[$1] does not match [$2]"; return 1; }; }
hasnt() { [[ $1 != $2 ]] || { diag "[$1] matches [$2]"; return 1; }; }
# refused RESULT: an errno name (the attempt failed), not OK.
refused() {
	case $1 in
	E[A-Z]*) return 0 ;;
	*) diag "got [$1]"; return 1 ;;
	esac
}
# nobody_errno PYTHON-STATEMENTS: errno_of as user nobody, no groups
# (errno_as: errno_of as a program, for setpriv to run).
nobody_errno() {
	setpriv --reuid=65534 --regid=65534 --clear-groups -- errno_as "$1"
}
# as_uid UID PYTHON-STATEMENTS: errno_of as that host uid (and gid).
as_uid() {
	setpriv --reuid="$1" --regid="$1" --clear-groups -- errno_as "$2"
}
cat >"$PD_TMP/errno_as" <<'SH'
#!/bin/sh
exec timeout 30 python3 -c "
import errno, os, sys
try:
    $1
    print('OK')
except OSError as e:
    print(errno.errorcode[e.errno])"
SH
chmod 755 "$PD_TMP/errno_as"
PATH=$PD_TMP:$PATH
# fails COMMAND...: COMMAND fails (its output dropped).
fails() { ! "$@" >/dev/null 2>&1; }
# quiet COMMAND...: COMMAND, its output dropped.
quiet() { "$@" >/dev/null; }

# ---- the boxes -------------------------------------------------------------
ok "a Docker box starts, its Docker answers, bb:1 imported" pd_docker_box d1
P1=$(init_pid d1)
ID1=$(db "SELECT id FROM boxes WHERE name = 'd1'")
BASE=$(db "SELECT uid_base FROM boxes WHERE name = 'd1'")
ok "box d1 has a range of its own (host id $BASE, not 0)" test -n "$BASE" -a "${BASE:-0}" -gt 0
ok "its PID 1 is box root, mapped to that range" \
	same "$(awk '{print $1, $2, $3}' "/proc/$P1/uid_map")" "0 $BASE 65536"

mkdir "$B/plain" && echo docker >"$B/plain/image" && echo small >"$B/plain/type"
ok "a default box of the docker image: docker off before its start" bash -c "echo off >'$B/plain/docker'"
ok "and it starts" bash -c "echo running >'$B/plain/state'"
PP=$(init_pid plain)

# ---- box root of the Docker box against the host ---------------------------
# The host's root device, for mknod; the daemon's runtime and files, by
# their host paths (none may be there inside).
HOST_DEV=$(stat -c '%Hd:%Ld' /)
cat >"$B/d1/root/tmp/attack.py" <<'PY'
import ctypes, errno, os, platform, sys, time

libc = ctypes.CDLL(None, use_errno=True)
libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong,
                       ctypes.c_char_p]
libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
libc.syscall.restype = ctypes.c_long


def say(name, value):
    print(f"{name}\t{value}", flush=True)


def en(fn):
    try:
        r = fn()
        return "OK" if r is None else f"OK {r}"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))


def check(r):
    if r < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return r


def write(path, data):
    def f():
        fd = os.open(path, os.O_WRONLY)
        try:
            os.write(fd, data.encode())
        finally:
            os.close(fd)
    return en(f)


def read(path, n=4096):
    with open(path, "rb") as f:
        return f.read(n).decode(errors="replace").strip()


def mount(src, tgt, fs, data=None, flags=0):
    os.makedirs(tgt, exist_ok=True)
    check(libc.mount(src.encode(), tgt.encode(), fs.encode() if fs else None, flags,
                     data.encode() if data else None))


def umount(tgt):
    libc.umount2(tgt.encode(), 2)


env = os.environ
host_dev = tuple(int(x) for x in env["HOST_DEV"].split(":"))

# Host-wide sysctls (the init namespaces'); the box's own network
# namespace's ip_forward is the tier working (the control).
say("sysctl-core_pattern", write("/proc/sys/kernel/core_pattern", "|/tmp/pwn %p"))
say("sysctl-drop_caches", write("/proc/sys/vm/drop_caches", "3"))
say("sysctl-panic", write("/proc/sys/kernel/panic", "1"))
say("sysctl-ip_forward", write("/proc/sys/net/ipv4/ip_forward", "1"))
say("sysrq", write("/proc/sysrq-trigger", "h"))

# Kernel modules: init_module and finit_module of any file.
nr = {"x86_64": (175, 313), "aarch64": (105, 273)}.get(platform.machine())
if nr:
    buf = ctypes.create_string_buffer(b"\x7fELF" + b"\0" * 60)
    say("init_module", en(lambda: check(libc.syscall(nr[0], buf, ctypes.c_ulong(64), b""))))
    fd = os.open("/bin/true", os.O_RDONLY)
    say("finit_module", en(lambda: check(libc.syscall(nr[1], fd, b"", 0))))
    os.close(fd)
if platform.machine() == "x86_64":
    say("ioperm", en(lambda: check(libc.ioperm(ctypes.c_ulong(0x80), ctypes.c_ulong(1), 1))))
    say("iopl", en(lambda: check(libc.iopl(3))))


class timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


ts = timespec(int(time.time()), 0)
say("clock_settime", en(lambda: check(libc.clock_settime(0, ctypes.byref(ts)))))

# Devices: nodes (the host's root disk, /dev/mem), every host device at
# once (a devtmpfs), the devices cgroup; what /dev holds.
say("mknod-block", en(lambda: os.mknod("/tmp/pd-disk", 0o600 | 0o060000, os.makedev(*host_dev))))
say("mknod-mem", en(lambda: os.mknod("/tmp/pd-mem", 0o600 | 0o020000, os.makedev(1, 1))))
say("mount-devtmpfs", en(lambda: mount("devtmpfs", "/tmp/pd-devtmpfs", "devtmpfs")))
say("mount-hostdisk", en(lambda: mount("/dev/vda", "/tmp/pd-hostdisk", "ext4")))
blk, chars = [], set()
for d, dirs, files in os.walk("/dev"):
    for n in files + dirs:
        p = os.path.join(d, n)
        st = os.lstat(p)
        if (st.st_mode & 0o170000) == 0o060000:
            blk.append(p)
        elif (st.st_mode & 0o170000) == 0o020000:
            chars.add(f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev) if os.major(st.st_rdev) != 136 else 'N'}")
say("dev-block", ",".join(blk) or "none")
say("dev-char", ",".join(sorted(chars)))
say("kcore", en(lambda: len(open("/proc/kcore", "rb").read(64))))
say("devices-allow", write("/sys/fs/cgroup/devices/devices.allow", "a *:* rwm"))
os.makedirs("/sys/fs/cgroup/devices/pd-nest", exist_ok=True)
say("devices-allow-nested", write("/sys/fs/cgroup/devices/pd-nest/devices.allow", "a *:* rwm"))
os.rmdir("/sys/fs/cgroup/devices/pd-nest")

# cgroups: the view's root is the box's own cgroup; its limits are not
# the box's to change; a nested cgroup may ask for more (the kernel keeps
# it within the box's); fresh mounts show the same subtree; no new v1
# hierarchy (a release_agent of its own).
say("cgroup-paths", ",".join(sorted({l.split(":", 2)[2].strip() for l in open("/proc/self/cgroup")})))
say("cgroup-view-limit", read("/sys/fs/cgroup/memory/memory.limit_in_bytes"))
say("cgroup-view-dirs", ",".join(sorted(
    f"{c}/{n}" for c in os.listdir("/sys/fs/cgroup") if os.path.isdir(f"/sys/fs/cgroup/{c}")
    for n in os.listdir(f"/sys/fs/cgroup/{c}") if os.path.isdir(f"/sys/fs/cgroup/{c}/{n}"))) or "none")
say("cgroup-own-memory", write("/sys/fs/cgroup/memory/memory.limit_in_bytes", str(8 << 30)))
say("cgroup-own-memsw", write("/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes", str(8 << 30)))
say("cgroup-own-pids", write("/sys/fs/cgroup/pids/pids.max", "max"))
say("cgroup-own-cpu", write("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "-1"))
os.makedirs("/sys/fs/cgroup/memory/pd-hog", exist_ok=True)
say("cgroup-nested-memory", write("/sys/fs/cgroup/memory/pd-hog/memory.limit_in_bytes", str(8 << 30)))
say("cgroup-nested-memory-reads", read("/sys/fs/cgroup/memory/pd-hog/memory.limit_in_bytes"))
os.rmdir("/sys/fs/cgroup/memory/pd-hog")
say("release_agent", write("/sys/fs/cgroup/memory/release_agent", "/tmp/pwn"))
say("cgroup-new-hierarchy", en(lambda: mount("cgroup", "/tmp/pd-cgx", "cgroup", "none,name=pdx")))
umount("/tmp/pd-cgx")
try:
    mount("cgroup", "/tmp/pd-cg1", "cgroup", "memory")
    say("cgroup-v1-mount-limit", read("/tmp/pd-cg1/memory.limit_in_bytes"))
    say("cgroup-v1-mount-release_agent", write("/tmp/pd-cg1/release_agent", "/tmp/pwn"))
    umount("/tmp/pd-cg1")
except OSError as e:
    say("cgroup-v1-mount-limit", errno.errorcode[e.errno])
# cgroup2: processes of other PID namespaces show as 0, and every
# directory is a cgroup.
try:
    mount("cgroup2", "/tmp/pd-cg2", "cgroup2")
    procs = read("/tmp/pd-cg2/cgroup.procs", 1 << 20).split()
    say("cgroup-v2-foreign-procs", sum(1 for p in procs if p == "0"))
    say("cgroup-v2-dirs", ",".join(sorted(n for n in os.listdir("/tmp/pd-cg2")
                                          if os.path.isdir(f"/tmp/pd-cg2/{n}"))) or "none")
    say("cgroup-v2-mkdir", en(lambda: os.mkdir("/tmp/pd-cg2/pd-x")))
    try:
        os.rmdir("/tmp/pd-cg2/pd-x")
    except OSError:
        pass
    umount("/tmp/pd-cg2")
except OSError as e:
    say("cgroup-v2-foreign-procs", errno.errorcode[e.errno])

# sysfs: a fresh one (the box's network namespace's) is still the host's
# kernel: its knobs stay the host's.
try:
    mount("sysfs", "/tmp/pd-sys", "sysfs")
    say("sysfs-uevent_helper", write("/tmp/pd-sys/kernel/uevent_helper", "/tmp/pwn"))
    say("sysfs-thp", write("/tmp/pd-sys/kernel/mm/transparent_hugepage/enabled", "never"))
    umount("/tmp/pd-sys")
except OSError as e:
    say("sysfs-uevent_helper", "mount " + errno.errorcode[e.errno])

# The host's files bound into the box read-only (the box's init, the
# resolver's file) and the read-only or masked parts of /proc: the mounts
# are the box's own mount namespace's, made by the runtime after its user
# namespace, so box root may remount or unmount them; the files stay the
# host's root's, an id the box does not have: no write either way.
MS_REMOUNT, MS_BIND = 32, 4096
for name, path in (("init", "/dev/paddock-init"), ("resolv", "/etc/resolv.conf")):
    if not os.path.exists(path):
        continue
    say(f"bound-{name}-write", write(path, "x"))
    say(f"bound-{name}-remount", en(lambda: check(libc.mount(None, path.encode(), None,
                                                             MS_REMOUNT | MS_BIND, None))))
    say(f"bound-{name}-write-rw", write(path, "x"))
    say(f"bound-{name}-umount", en(lambda: check(libc.umount2(path.encode(), 2))))
for path in ("/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs", "/proc/kcore",
             "/proc/keys", "/proc/timer_list", "/sys/firmware"):
    libc.umount2(path.encode(), 2)
say("unmasked-sysrq", write("/proc/sysrq-trigger", "h"))
irq = next((f"/proc/irq/{d}/smp_affinity_list" for d in sorted(os.listdir("/proc/irq"))
            if d.isdigit() and os.path.exists(f"/proc/irq/{d}/smp_affinity_list")), None) \
    if os.path.isdir("/proc/irq") else None
say("unmasked-irq", write(irq, "0") if irq else "ENOENT")
say("unmasked-kcore", en(lambda: len(open("/proc/kcore", "rb").read(64))))

# Processes, the host's runtime, files and sockets.
comms = []
for p in os.listdir("/proc"):
    if p.isdigit():
        try:
            comms.append(read(f"/proc/{p}/comm"))
        except OSError:
            pass
say("procs", ",".join(sorted(set(comms))))
say("procs-count", len(comms))
say("pid1", read("/proc/1/cmdline").replace("\0", " "))
for name, path in (("crun-root", env["HOST_CRUN"]), ("exec-dir", env["HOST_EXEC"]),
                   ("host-file", env["HOST_FILE"]), ("host-data", env["HOST_DATA"])):
    say(name, en(lambda: os.stat(path)))
socks = []
for top in ("/run", "/var/run", "/tmp", "/var/lib", "/dev", "/root", "/etc", "/config"):
    for d, dirs, files in os.walk(top):
        for n in files:
            p = os.path.join(d, n)
            try:
                if (os.lstat(p).st_mode & 0o170000) == 0o140000:
                    socks.append(os.path.realpath(p))
            except OSError:
                pass
say("sockets", ",".join(sorted(set(socks))) or "none")
say("uid_map", " ".join(read("/proc/self/uid_map").split()))
PY
ATTACK=$(pd_job_as root d1 "HOST_DEV=$HOST_DEV HOST_CRUN='$PD_TMP/run/crun' HOST_EXEC='$PD_TMP/run/exec' \
HOST_FILE='$PD_TMP/host-only' HOST_DATA='$D' python3 /tmp/attack.py" 120) ||
	diag "the attacks did not all run"
declare -A R
while IFS=$'\t' read -r k v; do
	[ -n "$k" ] && R[$k]=$v
done <<<"$ATTACK"
r() { echo "${R[$1]-missing}"; }

diag "box root's attempts:"
echo "$ATTACK" | sed 's/^/#   /'
ok "box root: uid_map is the box's range" same "$(r uid_map)" "0 $BASE 65536"
ok "box root writes its own network namespace's ip_forward (the tier is on)" same "$(r sysctl-ip_forward)" OK
ok "box root cannot write kernel.core_pattern" refused "$(r sysctl-core_pattern)"
ok "the host's core_pattern is unchanged" same "$(cat /proc/sys/kernel/core_pattern)" "$HOST_CORE"
ok "box root cannot write vm.drop_caches" refused "$(r sysctl-drop_caches)"
ok "box root cannot write kernel.panic" refused "$(r sysctl-panic)"
ok "box root cannot write /proc/sysrq-trigger" refused "$(r sysrq)"
# EPERM; ENOSYS on a kernel without modules.
if [ -n "${R[init_module]+x}" ]; then
	ok "box root cannot load a module (init_module)" refused "$(r init_module)"
	ok "box root cannot load a module (finit_module)" refused "$(r finit_module)"
fi
if [ -n "${R[ioperm]+x}" ]; then
	ok "box root cannot reach I/O ports (ioperm)" refused "$(r ioperm)"
	ok "box root cannot reach I/O ports (iopl)" refused "$(r iopl)"
fi
ok "box root cannot set the clock" refused "$(r clock_settime)"
ok "box root cannot make a node of the host's root disk ($HOST_DEV)" refused "$(r mknod-block)"
ok "box root cannot make /dev/mem" refused "$(r mknod-mem)"
ok "box root cannot mount a devtmpfs (every host device)" refused "$(r mount-devtmpfs)"
ok "box root cannot mount the host's disk" refused "$(r mount-hostdisk)"
ok "the box's /dev holds no block device" same "$(r dev-block)" none
ok "and only null, zero, full, random, urandom, tty and its own ptys" \
	same "$(r dev-char | sed 's/^136:N,//')" "1:3,1:5,1:7,1:8,1:9,5:0,5:2"
kcore_empty() {
	case $(r kcore) in
	"OK 0" | E*) ;;
	*) diag "/proc/kcore: $(r kcore)"; return 1 ;;
	esac
}
ok "/proc/kcore reads nothing" kcore_empty
ok "box root cannot allow devices in its devices cgroup" refused "$(r devices-allow)"
ok "nor in a devices cgroup it made" refused "$(r devices-allow-nested)"

ok "box root's cgroups are each hierarchy's root in its view" same "$(r cgroup-paths)" "/"
ok "the view's root is the box's cgroup (its memory limit, 2G)" same "$(r cgroup-view-limit)" 2147483648
views_own() {
	local v
	v=$(r cgroup-view-dirs)
	hasnt "$v" "*$PD_CGROUP*" && hasnt "$v" "*plain*" && hasnt "$v" "*/d1*"
}
ok "its cgroup view holds no host or other box's cgroup" views_own
ok "box root cannot raise its memory limit" refused "$(r cgroup-own-memory)"
ok "nor its memory+swap limit" refused "$(r cgroup-own-memsw)"
ok "nor its pids limit" refused "$(r cgroup-own-pids)"
ok "nor its CPU quota" refused "$(r cgroup-own-cpu)"
ok "a nested cgroup may ask for 8G" same "$(r cgroup-nested-memory):$(r cgroup-nested-memory-reads)" "OK:$((8 << 30))"
limits() {
	echo "$(cat "/sys/fs/cgroup/memory/$PD_CGROUP/d1/memory.limit_in_bytes")/$(cat "/sys/fs/cgroup/pids/$PD_CGROUP/d1/pids.max")/$(cat "/sys/fs/cgroup/cpu/$PD_CGROUP/d1/cpu.cfs_quota_us")"
}
ok "the host reads the box's limits unchanged (2G, 4096 pids, 2 CPUs)" same "$(limits)" "2147483648/4096/200000"
ok "box root cannot write a release_agent" refused "$(r release_agent)"
ok "box root cannot make a v1 hierarchy of its own" refused "$(r cgroup-new-hierarchy)"
ok "a fresh v1 mount shows the box's cgroup (2G)" same "$(r cgroup-v1-mount-limit)" 2147483648
ok "and has no release_agent to write" refused "$(r cgroup-v1-mount-release_agent)"
ok "a fresh cgroup2 mount lists no process of the host" same "$(r cgroup-v2-foreign-procs)" 0
# On a v1 or hybrid host crun places a box in v1 cgroups only: the runtime
# gives a Docker box a v2 cgroup of its own, its cgroup namespace's root.
ok "box d1's init is in a v2 cgroup of its own" grep -qx "0::/$PD_CGROUP/d1" "/proc/$P1/cgroup"
ok "and no cgroup of the host" same "$(r cgroup-v2-dirs)" none
ok "a fresh sysfs's knobs are the host's: uevent_helper refused" refused "$(r sysfs-uevent_helper)"
ok "transparent_hugepage refused" refused "$(r sysfs-thp)"

ok "box root cannot write the box init bound from the host" refused "$(r bound-init-write)"
ok "nor once it has remounted it read-write ($(r bound-init-remount))" refused "$(r bound-init-write-rw)"
if [ -n "${R[bound-resolv-write]+x}" ]; then
	ok "nor the resolver's file, remounted or not" \
		bash -c "for v in '$(r bound-resolv-write)' '$(r bound-resolv-write-rw)'; do case \$v in E*) ;; *) exit 1 ;; esac; done"
fi
ok "with /proc's read-only and masked parts unmounted: no sysrq" refused "$(r unmasked-sysrq)"
ok "no IRQ affinity" refused "$(r unmasked-irq)"
kcore_empty2() {
	case $(r unmasked-kcore) in
	"OK 0" | E*) ;;
	*) diag "/proc/kcore: $(r unmasked-kcore)"; return 1 ;;
	esac
}
ok "no /proc/kcore" kcore_empty2
ok "the host's box init is unchanged" same "$(sha256sum <"$INIT" | cut -d' ' -f1)" "$INIT_SUM"
ok "box root sees no host process (no paddockd, no crun)" \
	bash -c "! echo '$(r procs)' | tr ',' '\n' | grep -Eqx 'paddockd|crun|paddock-exec|systemd|init'"
ok "its PID 1 is the box's init" same "$(r pid1)" "/dev/paddock-init "
ok "the daemon's crun state is not there" refused "$(r crun-root)"
ok "nor the boxes' exec sockets" refused "$(r exec-dir)"
ok "nor the host's files" refused "$(r host-file)"
ok "nor the data directory" refused "$(r host-data)"
own_sockets() {
	local s
	for s in $(r sockets | tr ',' ' '); do
		case $s in
		/run/docker.sock | /run/docker/* | /var/run/docker.sock | /var/run/docker/*) ;;
		*) diag "socket $s"; return 1 ;;
		esac
	done
}
ok "every socket in the box is its own Docker's" own_sockets
ok "the docker socket is the box's own Docker (its name is the box's)" \
	same "$(pd_job d1 'docker info --format "{{.Name}}"')" d1
ok "runc in the box lists no host container" same "$(pd_job_as root d1 'runc list -q; runc --root /run/crun list -q 2>/dev/null; true')" ""

# nftables: box root's network namespace holds Docker's rules, never the
# daemon's table. Box root runs the host's nft (and its libraries) from
# /tmp/nft in the box.
mkdir -p "$B/d1/root/tmp/nft"
cp /usr/sbin/nft "$B/d1/root/tmp/nft/"
for l in $(ldd /usr/sbin/nft | grep -o '/[^ ]*'); do cp "$l" "$B/d1/root/tmp/nft/"; done
LD=$(basename "$(ldd /usr/sbin/nft | grep -o '/[^ ]*ld-linux[^ ]*')")
NFT="/tmp/nft/$LD --library-path /tmp/nft /tmp/nft/nft"
ok "the daemon's table is in the daemon's namespace" quiet nft list table inet "$PD_NFT_TABLE"
RULES=$(nft list table inet "$PD_NFT_TABLE" | wc -l)
BOXRULES=$(pd_job_as root d1 "$NFT list ruleset")
ok "box root lists its namespace's ruleset (Docker's)" has "$BOXRULES" "*DOCKER*"
ok "the daemon's table is not in it" hasnt "$BOXRULES" "*$PD_NFT_TABLE*"
ok "box root cannot delete the daemon's table (not there)" \
	fails pd_job_as root d1 "$NFT delete table inet $PD_NFT_TABLE"
ok "the daemon's table is whole" same "$(nft list table inet "$PD_NFT_TABLE" | wc -l)" "$RULES"

# ---- nested containers -------------------------------------------------------
PRIV=$(pd_job d1 "docker run --rm --privileged bb:1 sh -c '
echo \"uid_map \$(cat /proc/self/uid_map | tr -s \" \" | sed \"s/^ //\")\"
(echo x >/proc/sys/kernel/core_pattern) 2>/dev/null && echo core OK || echo core refused
(echo 3 >/proc/sys/vm/drop_caches) 2>/dev/null && echo drop OK || echo drop refused
echo \"blocks \$(find /dev -type b | wc -l)\"
mknod /tmp/disk b ${HOST_DEV%:*} ${HOST_DEV#*:} 2>/dev/null && echo mknod OK || echo mknod refused
mkdir -p /mnt/d /mnt/t /mnt/c
mount -t devtmpfs none /mnt/d 2>/dev/null && echo devtmpfs OK || echo devtmpfs refused
mount -t ext4 /dev/vda /mnt/t 2>/dev/null && echo disk OK || echo disk refused
(echo \"a *:* rwm\" >/sys/fs/cgroup/devices/devices.allow) 2>/dev/null && echo devices OK || echo devices refused
ls /proc | grep -c \"^[0-9]\" | sed \"s/^/procs /\"
'" 60)
diag "docker run --privileged:"
echo "$PRIV" | sed 's/^/#   /'
p() { echo "$PRIV" | sed -n "s/^$1 //p"; }
ok "a --privileged container has the box's user namespace (its range)" same "$(p uid_map)" "0 $BASE 65536"
ok "it cannot write kernel.core_pattern" same "$(p core)" refused
ok "nor vm.drop_caches" same "$(p drop)" refused
ok "it sees no block device" same "$(p blocks)" 0
ok "it cannot make a node of the host's disk" same "$(p mknod)" refused
ok "nor mount a devtmpfs" same "$(p devtmpfs)" refused
ok "nor mount the host's disk" same "$(p disk)" refused
ok "nor allow devices in its cgroup" same "$(p devices)" refused
# In the box's PID namespace (--pid=host), a process of another one (the
# host's) would show as 0 in cgroup.procs.
ok "a cgroup2 mount in a --privileged --pid=host container lists no host process" \
	same "$(pd_job d1 "docker run --rm --privileged --pid=host bb:1 sh -c 'mkdir -p /mnt/c && mount -t cgroup2 none /mnt/c && grep -c ^0\$ /mnt/c/cgroup.procs || true'")" 0

PIDHOST=$(pd_job d1 "docker run --rm --pid=host bb:1 sh -c 'cat /proc/1/cmdline | tr \"\\0\" \" \"; echo; cat /proc/[0-9]*/comm | sort -u | tr \"\\n\" \",\"'")
ok "--pid=host: PID 1 is the box's init" same "$(echo "$PIDHOST" | head -n1)" "/dev/paddock-init "
ok "and it sees the box's dockerd but no host process" bash -c "
	c='$(echo "$PIDHOST" | tail -n1)'
	case \",\$c\" in *,dockerd,*) ;; *) exit 1 ;; esac
	! echo \"\$c\" | tr ',' '\n' | grep -Eqx 'paddockd|crun|paddock-exec|systemd|init'"
echo "$TOKEN-box" >"$B/d1/root/tmp/box-token"
ROOTV=$(pd_job d1 "docker run --rm -v /:/host bb:1 sh -c 'cat /host/tmp/box-token; test -e /host$PD_TMP && echo host-tmp || echo no-host-tmp; cat /host/proc/1/cmdline | tr \"\\0\" \" \"; echo'")
ok "-v /:/host shows the box's files" same "$(echo "$ROOTV" | sed -n 1p)" "$TOKEN-box"
ok "and not the host's" same "$(echo "$ROOTV" | sed -n 2p)" no-host-tmp
ok "its /proc is the box's" same "$(echo "$ROOTV" | sed -n 3p)" "/dev/paddock-init "

# What a nested container's root writes: in its own layer (the Docker
# store) and through a bind mount of the box's /tmp.
ok "a nested container's root writes in its layer and in the box's /tmp" \
	pd_job d1 "docker run --name own1 -v /tmp:/t bb:1 sh -c 'echo x >/own-$TOKEN && echo x >/t/own-$TOKEN && mkdir /t/owndir-$TOKEN && cp /bin/busybox /t/suid-$TOKEN && chmod 4755 /t/suid-$TOKEN'"
owner() { stat -c '%u:%g' "$1"; }
STORE=$D/boxes/$ID1/disk/docker
LAYERFILE=$(find "$STORE" -name "own-$TOKEN" -print -quit 2>/dev/null)
ok "its layer's file is in the box's store on the host" test -n "$LAYERFILE"
ok "owned by box root's host id, not host root" same "$(owner "$LAYERFILE")" "$BASE:$BASE"
ok "the file in the box's /tmp, seen through root/: the box's range" \
	same "$(owner "$B/d1/root/tmp/own-$TOKEN"),$(owner "$B/d1/root/tmp/owndir-$TOKEN")" "$BASE:$BASE,$BASE:$BASE"
ok "and on the box's disk" same "$(owner "$D/boxes/$ID1/disk/upper/tmp/own-$TOKEN")" "$BASE:$BASE"
ok "its setuid program raises to box root's host id only" same "$(owner "$B/d1/root/tmp/suid-$TOKEN")" "$BASE:$BASE"
ok "no file of the store is host root's (but the store's mount point)" \
	same "$(find "$STORE" -mindepth 1 \( -uid 0 -o -gid 0 \) -print -quit)" ""

# A container's cgroup parent that climbs out of the box's: Docker's
# cgroups are made in the box's view, whose root is the box's cgroup.
ok "a container with --cgroup-parent=/../../../pd-esc-$TOKEN runs" \
	quiet pd_job d1 "docker run -d --name cgp --cgroup-parent=/../../../pd-esc-$TOKEN bb:1 sleep 600"
cg_inside() {
	local f n=0
	for f in $(find /sys/fs/cgroup -maxdepth 6 -type d -name "pd-esc-$TOKEN" 2>/dev/null); do
		n=$((n + 1))
		case $f in
		/sys/fs/cgroup/*/"$PD_CGROUP"/d1/*) ;;
		*) diag "a cgroup outside the box's: $f"; return 1 ;;
		esac
	done
	[ $n -gt 0 ] || { diag "no pd-esc-$TOKEN cgroup found"; return 1; }
}
ok "its cgroups are within the box's on the host" cg_inside
# Docker's mounts (its containers' overlays) stay in the box's mount
# namespace: none in the host's under the store.
host_mounts() {
	local n
	n=$(grep -c " $STORE/" /proc/self/mountinfo)
	[ "$n" = 0 ] || { diag "$(grep " $STORE/" /proc/self/mountinfo | head -n 3)"; return 1; }
}
ok "the running container's mounts are not in the host's mount table" host_mounts
ok "it is removed" quiet pd_job d1 "docker rm -f cgp"

# Memory: a container asks for 4G in a 2G box and takes 3G: the kernel
# kills it at the box's limit.
MEM=$(pd_job d1 'docker run --name mem1 -m 4g --memory-swap 4g bb:1 sh -c "x=\$(head -c 3000000000 /dev/zero | tr \"\\0\" a); echo survived \${#x}"; echo "exit $?"; docker inspect -f "{{.HostConfig.Memory}} {{.State.OOMKilled}}" mem1' 120)
ok "the container got -m 4g and was killed (OOM, 137)" same "$(echo "$MEM" | tr '\n' ' ')" "exit 137 4294967296 true "
# The kernel lets a task it is killing charge a few pages more, to exit.
peak=$(cat "/sys/fs/cgroup/memory/$PD_CGROUP/d1/memory.max_usage_in_bytes")
ok "the box's peak memory stayed at its limit (2G, peak $peak)" test "$peak" -le $((2048 + 32 << 20))
ok "the box's limits are still 2G, 4096 pids, 2 CPUs" same "$(limits)" "2147483648/4096/200000"
ok "the box's Docker still answers" pd_docker_ready d1 30

# ---- the default box beside it -------------------------------------------------
capeff=$(awk '/^CapEff:/ {print $2}' "/proc/$PP/status")
ok "a default box's PID 1 lacks CAP_SYS_ADMIN (CapEff $capeff)" test $((0x$capeff >> 21 & 1)) = 0
ok "and has a seccomp filter (mode 2)" same "$(awk '/^Seccomp:/ {print $2}' "/proc/$PP/status")" 2
ok "and so has the Docker box's (Docker's profile for every capability)" same "$(awk '/^Seccomp:/ {print $2}' "/proc/$P1/status")" 2
# What the Docker box's filter still refuses its root: io_uring (EPERM) and
# the kernel's keyrings (ENOSYS, so runc carries on without one).
ok "the Docker box's root: io_uring_setup EPERM, keyctl and add_key ENOSYS" \
	same "$(pd_job_as root d1 "python3 -c \"
import ctypes, errno
libc = ctypes.CDLL(None, use_errno=True)
for nr in (425, 250, 248):
    r = libc.syscall(nr, 0, 0, 0, 0, 0)
    print(errno.errorcode[ctypes.get_errno()] if r < 0 else 'OK')\"" | tr '\n' ' ')" "EPERM ENOSYS ENOSYS "
# Every cgroup mount read-only (the tmpfs holding them is the box's own).
ok "its /sys/fs/cgroup is read-only" \
	same "$(pd_job_as root plain "awk '\$3 ~ /^cgroup/ && \$2 ~ \"^/sys/fs/cgroup/\" {split(\$4, o, \",\"); print o[1]}' /proc/self/mounts | sort | uniq -c | awk '{print \$2}'")" ro
ok "box root cannot write its cgroups there (EROFS, EACCES)" \
	same "$(pd_job_as root plain "python3 -c \"
import errno, os
for f in (lambda: os.mkdir('/sys/fs/cgroup/memory/x'), lambda: os.open('/sys/fs/cgroup/memory/cgroup.procs', os.O_WRONLY)):
    try:
        f(); print('OK')
    except OSError as e:
        print(errno.errorcode[e.errno])\"" | tr '\n' ' ')" "EROFS EACCES "
ok "its docker file reads off" same "$(cat "$B/plain/docker")" off
ok "writing on while it runs: EBUSY" write_expect EBUSY "$B/plain/docker" on
ok "with the reason in its error" grep -q "set while the box is stopped" "$B/plain/error"
ok "nothing changed: docker off" same "$(cat "$B/plain/docker")" off
ok "nothing changed: same PID 1, no CAP_SYS_ADMIN, seccomp" \
	same "$(init_pid plain):$(awk '/^Seccomp:/ {print $2}' "/proc/$PP/status")" "$PP:2"
for v in yes hex:0a hex:6f6e0a78 hex:6f6e00 ON " on"; do
	ok "writing [$v] to the docker file: EINVAL" write_expect EINVAL "$B/plain/docker" "$v"
	ok "and to the Docker box's: EINVAL" write_expect EINVAL "$B/d1/docker" "$v"
done
ok "a write of no bytes changes nothing either" write_expect OK "$B/plain/docker" ""
ok "nothing changed: off and on" same "$(cat "$B/plain/docker") $(cat "$B/d1/docker")" "off on"
ok "writing off to the running Docker box: EBUSY" write_expect EBUSY "$B/d1/docker" off
ok "nothing changed: d1's Docker on, same PID 1, its seccomp filter" \
	same "$(cat "$B/d1/docker"):$(init_pid d1):$(awk '/^Seccomp:/ {print $2}' "/proc/$P1/status")" "on:$P1:2"

mkdir "$B/deb" && echo debian >"$B/deb/image" && echo small >"$B/deb/type"
ok "a debian box (no dockerd) refuses on: EINVAL" write_expect EINVAL "$B/deb/docker" on
ok "with the reason" grep -q "has no Docker" "$B/deb/error"
ok "it starts and stops" bash -c "echo running >'$B/deb/state' && echo stopped >'$B/deb/state'"
ok "stopped, it still refuses on: EINVAL" write_expect EINVAL "$B/deb/docker" on
ok "nothing changed: off" same "$(cat "$B/deb/docker")" off
ok "it starts in the default tier" bash -c "echo running >'$B/deb/state'"
ok "without CAP_SYS_ADMIN" test $((0x$(awk '/^CapEff:/ {print $2}' "/proc/$(init_pid deb)/status") >> 21 & 1)) = 0

# The control: the docker image's box, stopped, takes on (it has dockerd).
ok "the default box of the docker image stops" bash -c "echo stopped >'$B/plain/state'"
ok "stopped, it takes on" write_expect OK "$B/plain/docker" on
ok "and off again" write_expect OK "$B/plain/docker" off

ok "user nobody cannot read the docker file (EACCES)" \
	same "$(nobody_errno "open('$B/d1/docker').read()")" EACCES
ok "nor write it" same "$(nobody_errno "os.write(os.open('$B/plain/docker', os.O_WRONLY), b'on')")" EACCES
ok "nothing changed" same "$(cat "$B/plain/docker")" off

# ---- the Docker store ----------------------------------------------------------
ok "the data directory is root's alone (0700)" same "$(stat -c '%a %u' "$D")" "700 0"
ok "the box's directory too" same "$(stat -c '%a %u' "$D/boxes/$ID1")" "700 0"
ok "the store is box root's host id's, 0710" same "$(stat -c '%a %u:%g' "$STORE")" "710 $BASE:$BASE"
ok "user nobody cannot reach the store" same "$(nobody_errno "os.listdir('$STORE')")" EACCES
ok "nor box root's host id" same "$(as_uid "$BASE" "os.listdir('$STORE')")" EACCES
ok "nor its layer's file" same "$(as_uid "$BASE" "open('$LAYERFILE').read()")" EACCES
ok "the box's store is not empty (images, containers)" test -n "$(ls -A "$STORE/overlay2")"
ok "root/var/lib/docker is an empty mount point" same "$(ls -A "$B/d1/root/var/lib/docker")" ""
ok "the store is in no file of root/" same "$(find "$B/d1/root/" -xdev -name "own-$TOKEN" | sed "s|^$B/d1/root||" | sort | tr '\n' ' ')" "/tmp/own-$TOKEN "
ok "a snapshot of the running box" bash -c "echo escape >'$B/d1/snapshot'"
s=$(readlink "$B/d1/snapshots/last")
S=$M/snapshots/${s##*/}
ok "its root/var/lib/docker is empty" same "$(ls -A "$S/root/var/lib/docker" 2>&1)" ""
ok "its export has var/lib/docker as an empty directory only" \
	same "$(cat "$S/export" | zstd -dc | tar -t 2>/dev/null | sed 's|^\./||' | grep '^var/lib/docker')" "var/lib/docker/"
ok "nor the nested container's layer file" \
	same "$(cat "$S/export" | zstd -dc | tar -t 2>/dev/null | grep -c "own-$TOKEN")" 1

# The box's own v2 cgroup goes with it, also when a restarted daemon
# stops it, and comes back with its next start.
restart_daemon() { pd_stop && pd_start; }
ok "the daemon restarts, d1 runs on" restart_daemon
ok "in its v2 cgroup" grep -qx "0::/$PD_CGROUP/d1" "/proc/$(init_pid d1)/cgroup"
cg2_foreign() {
	pd_job_as root d1 'mkdir -p /tmp/c2 && mount -t cgroup2 none /tmp/c2 && { grep -c "^0$" /tmp/c2/cgroup.procs || true; } && umount /tmp/c2'
}
ok "d1 stops" bash -c "echo stopped >'$B/d1/state'"
if [ -d /sys/fs/cgroup/unified ]; then
	ok "its v2 cgroup is gone with it" test ! -e "/sys/fs/cgroup/unified/$PD_CGROUP/d1"
fi
start_d1() { echo running >"$B/d1/state" && pd_docker_ready d1; }
ok "it starts again, its Docker answers" start_d1
ok "in a v2 cgroup of its own again" grep -qx "0::/$PD_CGROUP/d1" "/proc/$(init_pid d1)/cgroup"
ok "where a cgroup2 mount lists no host process" same "$(cg2_foreign)" 0

pd_done
