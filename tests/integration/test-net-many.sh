#!/bin/bash
# Fifty boxes on one bridge, each under its own egress policy, against a
# fake internet the test builds itself (as test-net.sh does: the daemon,
# bridge and nftables table live in a private "host" namespace routed to an
# "inet" namespace with HTTP servers on 198.51.100.10-12, 203.0.113.10 and
# 169.254.169.254; the host serves 192.0.2.2:8080). Every box runs an HTTP
# server on port 7000 that its neighbour must not reach. Checked: the full
# reachability matrix of every box, live policy changes without cross-talk,
# enforcement while the daemon is down (SIGTERM and kill -9), leftovers of
# a crash cleared at start, and nothing left after the boxes are deleted.
. "$(dirname "$0")/lib.sh"
require_root
command -v python3 >/dev/null || skip_all "needs python3"
command -v curl >/dev/null || skip_all "needs curl"

WEB="198.51.100.10 198.51.100.11 198.51.100.12 203.0.113.10"

if [ -z "${PD_NET_INSIDE:-}" ]; then
	# Outer half: make the namespaces and servers, run this script again
	# inside the host namespace, then check that nothing is left.
	tag=pdm$$
	www=/tmp/$tag-www
	cleanup_ns() {
		pd_fake_net_down
		rm -rf "$www"
	}
	trap cleanup_ns EXIT
	pd_fake_net "$tag" $WEB 169.254.169.254 || skip_all "cannot make network namespaces"
	mkdir -p "$www" && echo hello >"$www/index.html"
	# shellcheck disable=SC2086
	pd_fake_serve "$INETNS" "$www" 80 $WEB 169.254.169.254
	pd_fake_serve "$HOSTNS" "$www" 8080 192.0.2.2
	pd_fake_wait "$INETNS" 5 && pd_fake_wait "$HOSTNS" 1
	# nsenter, not `ip netns exec`: that one remounts /sys, hiding the
	# cgroup mounts crun needs.
	PD_NET_INSIDE=1 PD_NET_REPORT=$www/inner-tmp nsenter --net="/run/netns/$HOSTNS" "$0"
	rc=$?
	inner_tmp=$(cat "$www/inner-tmp" 2>/dev/null)
	cleanup_ns
	trap - EXIT
	# Past the inner plan, so failures here are diagnostics and the exit
	# status.
	if ip netns list | grep -q "^$tag"; then
		echo "# namespaces left behind: $(ip netns list | grep "^$tag" | tr '\n' ' ')"
		rc=1
	fi
	if [ -z "$inner_tmp" ] || [ -e "$inner_tmp" ]; then
		echo "# the run's directory is left behind (or unknown): [$inner_tmp]"
		rc=1
	fi
	if ls -d /tmp/"$tag"* >/dev/null 2>&1; then
		echo "# left in /tmp: $(ls -d /tmp/"$tag"*)"
		rc=1
	fi
	exit $rc
fi

# Inner half: in the host namespace.
PD_NETWORK=on PD_BRIDGE=pd-m$(($$ % 1000)) PD_SUBNET=10.202.$(($$ % 250)).0/24 PD_NFT_TABLE=paddock_m$$
export PD_NETWORK PD_BRIDGE PD_SUBNET PD_NFT_TABLE
pd_start
echo "$PD_TMP" >"$PD_NET_REPORT"

N=50
SHELLS=5 # parallel writers for create, start, policy changes and deletion
PAR=8    # boxes probed at once

bn=() kind=() variant=() addr=()
for ((i = 0; i < N; i++)); do
	bn[i]=$(printf b%02d "$i")
done

# set_kind I KIND [VARIANT]: what box I's policy is to be. Kinds: allow
# (allow-all), deny (deny-all), one (allowlist of one /32 among
# 198.51.100.10-12, chosen by I and VARIANT), net (allowlist of
# 203.0.113.0/24). The wanted text goes to $PD_TMP/want/NAME.
mkdir -p "$PD_TMP/want"
set_kind() {
	kind[$1]=$2
	variant[$1]=${3:-0}
	case $2 in
	allow) echo allow-all ;;
	deny) echo deny-all ;;
	one) printf 'allowlist\n198.51.100.%d/32\n' $((10 + ($1 + ${3:-0}) % 3)) ;;
	net) printf 'allowlist\n203.0.113.0/24\n' ;;
	esac >"$PD_TMP/want/${bn[$1]}"
}

# allowed I: the fake web addresses box I's policy lets through.
allowed() {
	case ${kind[$1]} in
	allow) echo $WEB ;;
	deny) ;;
	one) echo 198.51.100.$((10 + ($1 + ${variant[$1]}) % 3)) ;;
	net) echo 203.0.113.10 ;;
	esac
}

# in_parallel FUNC: runs FUNC I for every box, from SHELLS shells at once
# (box I in shell I % SHELLS). FUNC prints a line for each failure; they
# are collected in $PD_TMP/failed (empty when all went well).
in_parallel() {
	local s pids=()
	: >"$PD_TMP/failed"
	for ((s = 0; s < SHELLS; s++)); do
		(
			for ((i = s; i < N; i += SHELLS)); do
				"$1" "$i"
			done >>"$PD_TMP/failed.$s"
		) &
		pids+=($!)
	done
	# Not a bare `wait`: the daemon is a child of this shell too.
	wait "${pids[@]}"
	for ((s = 0; s < SHELLS; s++)); do
		cat "$PD_TMP/failed.$s" >>"$PD_TMP/failed"
		rm -f "$PD_TMP/failed.$s"
	done
}

# none_failed WHAT: passes when the last in_parallel had no failure, else
# names each.
none_failed() {
	[ ! -s "$PD_TMP/failed" ] && return 0
	sed "s/^/# $1: /" "$PD_TMP/failed"
	return 1
}

create_box() {
	local b=$M/boxes/${bn[$1]}
	mkdir "$b" 2>/dev/null || { echo "${bn[$1]}: mkdir failed"; return; }
	# The neighbour's target: a page served on port 7000 inside the box.
	mkdir -p "$b/root/www" && echo "box ${bn[$1]}" >"$b/root/www/index.html" ||
		echo "${bn[$1]}: cannot write into root/"
}

start_box() {
	local b=$M/boxes/${bn[$1]}
	echo running 2>/dev/null >"$b/state" || echo "${bn[$1]}: start failed: $(cat "$b/error")"
}

write_policy() {
	local b=$M/boxes/${bn[$1]}
	cat "$PD_TMP/want/${bn[$1]}" 2>/dev/null >"$b/policy" ||
		echo "${bn[$1]}: policy write failed: $(cat "$b/error")"
}

start_listener() {
	echo 'httpd -f -p 7000 -h /www' 2>/dev/null >"$M/boxes/${bn[$1]}/exec/new" ||
		echo "${bn[$1]}: cannot start httpd"
}

# listener_up I: box I's port 7000 answers from the host (through the
# bridge, which the host may use): a neighbour that gets nothing is held
# back by isolation, not by a missing server.
listener_up() {
	[ "$(curl -s -m 3 -o /dev/null -w '%{http_code}' "http://${addr[$1]}:7000/")" = 200 ]
}

delete_box() {
	rmdir "$M/boxes/${bn[$1]}" 2>/dev/null || echo "${bn[$1]}: rmdir failed"
}

# probe BOX TARGET...: "TARGET 1" or "TARGET 0" per HOST:PORT target,
# sorted: 1 when an HTTP GET from inside the box got 200 within 3 s. All
# targets are tried at once (busybox nc, see test-net.sh's fetch).
probe() {
	local box=$1
	shift
	pd_crun exec "$box" sh -c '
		for t in "$@"; do
			(if printf "GET / HTTP/1.0\r\n\r\n" | nc -w 3 "${t%:*}" "${t#*:}" 2>/dev/null |
				head -n1 | grep -q " 200 "; then echo "$t 1"; else echo "$t 0"; fi) &
		done
		wait' - "$@" 2>/dev/null | sort
}

# check_box I: prints one line per cell of box I's matrix that is wrong
# (nothing when all are right): each fake web server reachable iff the
# policy allows it; metadata, the host and the neighbour box never.
check_box() {
	local i=$1 t a want got out nb=$((($1 + 1) % N))
	local targets=() yes
	yes=" $(allowed "$i") "
	for a in $WEB 169.254.169.254; do
		targets+=("$a:80")
	done
	targets+=(192.0.2.2:8080 "${addr[nb]}:7000")
	out=$(probe "${bn[i]}" "${targets[@]}")
	for t in "${targets[@]}"; do
		want=0
		[[ $yes == *" ${t%:*} "* ]] && want=1
		got=$(awk -v t="$t" '$1 == t { print $2 }' <<<"$out")
		case $got in
		"$want") ;;
		1) echo "${bn[i]} (${kind[i]}): $t reachable, must not be" ;;
		0) echo "${bn[i]} (${kind[i]}): $t unreachable, must be" ;;
		*) echo "${bn[i]} (${kind[i]}): $t: no answer from the probe" ;;
		esac
	done
}

# matrix I...: checks those boxes, PAR at a time; results in
# $PD_TMP/res/NAME.
matrix() {
	local i done_pid
	local -A running=()
	rm -rf "$PD_TMP/res"
	mkdir -p "$PD_TMP/res"
	for i in "$@"; do
		check_box "$i" >"$PD_TMP/res/${bn[i]}" &
		running[$!]=1
		if [ ${#running[@]} -ge $PAR ]; then
			wait -n -p done_pid "${!running[@]}"
			unset "running[$done_pid]"
		fi
	done
	[ ${#running[@]} = 0 ] || wait "${!running[@]}"
}

# matrix_ok I...: passes when the last matrix found nothing wrong for
# those boxes (and checked each), else names each failing cell.
matrix_ok() {
	local i bad=0
	for i in "$@"; do
		if [ ! -e "$PD_TMP/res/${bn[i]}" ]; then
			diag "${bn[i]}: not probed"
			bad=1
		elif [ -s "$PD_TMP/res/${bn[i]}" ]; then
			sed 's/^/# /' "$PD_TMP/res/${bn[i]}"
			bad=1
		fi
	done
	[ $bad = 0 ]
}

# of_kind K: the boxes whose policy is of kind K now.
of_kind() {
	local i
	for ((i = 0; i < N; i++)); do
		[ "${kind[i]}" = "$1" ] && echo "$i"
	done
}

# sample: three boxes of each kind.
sample() {
	local k
	for k in allow deny one net; do
		of_kind $k | head -n3
	done
}

# read_all FILE: NAME VALUE lines of every box's FILE (values on one line).
read_all() {
	local i
	for ((i = 0; i < N; i++)); do
		echo "${bn[i]} $(tr '\n' ' ' <"$M/boxes/${bn[i]}/$1")"
	done
}

# want_all: the same for the wanted policies.
want_all() {
	local i
	for ((i = 0; i < N; i++)); do
		echo "${bn[i]} $(tr '\n' ' ' <"$PD_TMP/want/${bn[i]}")"
	done
}

# same_lines GOT WANT: like same, but names the differing lines.
same_lines() {
	[ "$1" = "$2" ] && return 0
	diff <(echo "$2") <(echo "$1") | grep '^[<>]' | head -n 20 | sed 's/^</# want/; s/^>/# got /'
	return 1
}

nft_table() {
	nft list table inet "$PD_NFT_TABLE" 2>/dev/null
}

box_chains() {
	nft_table | grep -c 'chain box_'
}

# --- 1. fifty boxes at once, each policy's matrix ------------------------

t0=$(date +%s)
in_parallel create_box
ok "$N boxes created from $SHELLS shells at once" none_failed create
in_parallel start_box
ok "and started from $SHELLS shells at once" none_failed start
ok "every box reads running" same_lines "$(read_all state)" "$(for n in "${bn[@]}"; do echo "$n running "; done)"
for ((i = 0; i < N; i++)); do
	addr[i]=$(cat "$M/boxes/${bn[i]}/ip")
done
ok "every box has an address in the subnet" bash -c "
	for a in ${addr[*]}; do [[ \$a == ${PD_SUBNET%.0/24}.* ]] || exit 1; done
	[ \$(printf '%s\n' ${addr[*]} | wc -l) = $N ]"
ok "no two boxes share an address" same "$(printf '%s\n' "${addr[@]}" | sort | uniq -d)" ""
ok "one veth per box on the bridge" same "$(ip -o link show master "$PD_BRIDGE" | grep -c ": ${PD_BRIDGE}v")" $N

kinds=(allow deny one net)
for ((i = 0; i < N; i++)); do
	set_kind $i "${kinds[i % 4]}"
done
in_parallel write_policy
ok "$N policies written from $SHELLS shells at once" none_failed policy
ok "every box reads back its policy" same_lines "$(read_all policy)" "$(want_all)"
ok "one chain per box in the table" same "$(box_chains)" $N

in_parallel start_listener
ok "a server on port 7000 in every box" none_failed listener
for ((i = 0; i < N; i++)); do
	wait_for 10 listener_up $i || echo "${bn[i]} (${addr[i]}): port 7000 does not answer from the host"
done >"$PD_TMP/failed"
ok "every box's server answers from the host (so a neighbour could connect)" none_failed listener

matrix $(seq 0 $((N - 1)))
ok "allow-all boxes: the 4 web servers reachable; metadata, host, neighbour not" matrix_ok $(of_kind allow)
ok "deny-all boxes: nothing reachable" matrix_ok $(of_kind deny)
ok "allowlist of one /32: that server only" matrix_ok $(of_kind one)
ok "allowlist of 203.0.113.0/24: 203.0.113.10 only" matrix_ok $(of_kind net)
diag "50 boxes up and checked in $(($(date +%s) - t0)) s"

# --- 2. live changes to half the boxes, no cross-talk ---------------------

changed=() kept=()
for ((i = 0; i < N; i++)); do
	if [ $((i % 2)) = 0 ]; then
		case ${kind[i]} in
		allow) set_kind $i deny ;;
		deny) set_kind $i net ;;
		one) set_kind $i one 1 ;;
		net) set_kind $i allow ;;
		esac
		changed+=("$i")
	else
		kept+=("$i")
	fi
done
change_policy() {
	[ $(($1 % 2)) = 0 ] && write_policy "$1"
}
in_parallel change_policy
ok "policies of ${#changed[@]} boxes changed live from $SHELLS shells at once" none_failed change
ok "every box reads its current policy" same_lines "$(read_all policy)" "$(want_all)"
matrix $(seq 0 $((N - 1)))
ok "the changed boxes follow their new policy" matrix_ok "${changed[@]}"
ok "the other boxes are unaffected" matrix_ok "${kept[@]}"

# --- 3. SIGTERM and restart ----------------------------------------------

ips_before=$(read_all ip)
policies_before=$(read_all policy)
ok "SIGTERM stops the daemon with status 0" pd_stop
ok "the table stays while the daemon is down" same "$(box_chains)" $N
matrix $(sample)
ok "while down: the rules still hold (3 boxes of each policy)" matrix_ok $(sample)
pd_start
ok "after restart: every box still running" same_lines "$(read_all state)" "$(for n in "${bn[@]}"; do echo "$n running "; done)"
ok "after restart: every box keeps its address" same_lines "$(read_all ip)" "$ips_before"
ok "after restart: every box keeps its policy" same_lines "$(read_all policy)" "$policies_before"
ok "after restart: one chain per box" same "$(box_chains)" $N
matrix $(sample)
ok "after restart: the matrix holds (3 boxes of each policy)" matrix_ok $(sample)

# --- 4. kill -9, leftovers of a crash -----------------------------------

# A box whose deletion a crash interrupts (recorded as deleting, as
# test-restart.sh does): the start finishes the deletion, network included.
mkdir "$M/boxes/crash" && echo running >"$M/boxes/crash/state"
crash_ip=$(cat "$M/boxes/crash/ip")
crash_id=$(python3 -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute("SELECT id FROM boxes WHERE name = ?", ("crash",)).fetchone()[0])' "$D/paddock.db")
crash_if=$PD_BRIDGE$(printf v%x "$crash_id")
ok "one more box is up, with its port" bash -c "[ -n '$crash_ip' ] && ip link show '$crash_if' >/dev/null"

pd_kill9
ok "after kill -9 the table stays" same "$(box_chains)" $((N + 1))
python3 -c 'import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.execute("UPDATE boxes SET state = ? WHERE name = ?", ("deleting", "crash"))
c.commit()' "$D/paddock.db"
matrix $(sample)
ok "after kill -9: the rules still hold (3 boxes of each policy)" matrix_ok $(sample)
# Leftovers named as the daemon names its own: the namespace of a box
# name that does not exist, with a box port (of an unused id) whose peer is
# inside it, as a box's is; and a box port of an unused id whose peer is
# on the host, both ends outside any box namespace.
ghost_ns=$PD_TMP/run/netns/ghost
ghost_port=${PD_BRIDGE}v7fe
ghost_if=${PD_BRIDGE}v7ff
touch "$ghost_ns" && unshare --net="$ghost_ns" true &&
	nsenter --net="$ghost_ns" ip link add eth0 type veth peer name "$ghost_port" netns $$ &&
	ip link set "$ghost_port" master "$PD_BRIDGE" && ip link set "$ghost_port" up
ip link add "$ghost_if" type veth peer name "pdmx$(($$ % 100000))" &&
	ip link set "$ghost_if" master "$PD_BRIDGE" && ip link set "$ghost_if" up
ok "leftovers planted" bash -c "ip link show '$ghost_if' >/dev/null && ip link show '$ghost_port' >/dev/null &&
	grep -q ' $ghost_ns ' /proc/self/mountinfo"
pd_start
ok "after kill -9 and start: a stray namespace is removed" bash -c "[ ! -e '$ghost_ns' ] && ! grep -q ' $ghost_ns ' /proc/self/mountinfo"
# The kernel takes a namespace's links down after its last user is gone,
# not always at once.
ok "and the stray port inside it with it" wait_for 5 bash -c "! ip link show '$ghost_port' >/dev/null 2>&1"
ok "after kill -9 and start: a stray box port on the host is removed" bash -c "! ip link show '$ghost_if' >/dev/null 2>&1"
# Whatever that check said, the teardown checks below are about the boxes.
ip link del "$ghost_if" 2>/dev/null
ok "a deletion interrupted by the crash is finished" test ! -e "$M/boxes/crash"
ok "and the box's port is removed with it" wait_for 5 bash -c "! ip link show '$crash_if' >/dev/null 2>&1"
ok "and its namespace" test ! -e "$PD_TMP/run/netns/crash"
ok "and its address is gone from the table" bash -c "! nft list table inet '$PD_NFT_TABLE' | grep -qwF '$crash_ip'"
ok "after kill -9 and start: every box keeps its address" same_lines "$(read_all ip)" "$ips_before"
ok "after kill -9 and start: every box keeps its policy" same_lines "$(read_all policy)" "$policies_before"
ok "after kill -9 and start: one chain per box" same "$(box_chains)" $N
matrix $(seq 0 $((N - 1)))
ok "after kill -9 and start: the whole matrix holds" matrix_ok $(seq 0 $((N - 1)))

# --- 5. teardown ---------------------------------------------------------

in_parallel delete_box
ok "$N boxes deleted from $SHELLS shells at once" none_failed rmdir
ok "no box is left" same "$(ls "$M/boxes")" ""
ok "no box port is left" wait_for 5 bash -c "! ip -o link | grep ': ${PD_BRIDGE}v'"
ok "no namespace file is left" same "$(ls -A "$PD_TMP/run/netns")" ""
ok "no namespace is bound under the run directory" bash -c "! grep -q ' $PD_TMP/run/netns/' /proc/self/mountinfo"
ok "no per-box chain or map entry is left" bash -c "[ \"\$(nft list table inet '$PD_NFT_TABLE' | grep -c -e 'chain box_' -e 'jump box_')\" = 0 ]"
ok "no port entry is left in the bridge table" bash -c "! nft list set bridge '$PD_NFT_TABLE' ports | grep -q elements"
ok "SIGTERM with no boxes: status 0" pd_stop
ok "after shutdown the table holds no box" bash -c "! nft list table inet '$PD_NFT_TABLE' 2>/dev/null | grep -q 'box_'"
pd_done
