#!/bin/bash
# A box reaches the npm registry through its resolver and NAT, on the real
# uplink: under allow-all, and under an allowlist naming the registry; not
# under an allowlist without it. The registry is the host's (`npm config get
# registry`), and the box's npm is pointed at it. Only where this machine
# itself reaches the registry (npm view from the host); skipped cleanly
# otherwise. The bridge, the nftables tables and ip_forward are the test's
# own and restored after.
. "$(dirname "$0")/lib.sh"
require_root
command -v npm >/dev/null || skip_all "needs npm on the host to tell whether the registry is reachable"
REGISTRY=$(npm config get registry 2>/dev/null)
# The host part of the URL: no scheme, no user, no path, no port.
REGISTRY_HOST=${REGISTRY#*://}
REGISTRY_HOST=${REGISTRY_HOST%%/*}
REGISTRY_HOST=${REGISTRY_HOST##*@}
REGISTRY_HOST=${REGISTRY_HOST%:*}
case $REGISTRY_HOST in
*[!A-Za-z0-9.-]* | "") skip_all "npm's registry ($REGISTRY) is not at a DNS name" ;;
esac
timeout 30 npm view left-pad version >/dev/null 2>&1 ||
	skip_all "the npm registry is not reachable from this machine"
pd_use_debian

PD_NETWORK=on PD_BRIDGE=pd-m$(($$ % 1000)) PD_SUBNET=10.203.$(($$ % 250)).0/24
PD_NFT_TABLE=paddock_m$$
export PD_NETWORK PD_BRIDGE PD_SUBNET PD_NFT_TABLE
forward=$(cat /proc/sys/net/ipv4/ip_forward)
net_cleanup() {
	nft delete table inet "$PD_NFT_TABLE" 2>/dev/null
	nft delete table bridge "$PD_NFT_TABLE" 2>/dev/null
	ip link del "$PD_BRIDGE" 2>/dev/null
	echo "$forward" >/proc/sys/net/ipv4/ip_forward
}
pd_setup || exit 1
pd_on_exit net_cleanup
pd_start

B=$M/boxes/n
mkdir "$B"
# Where the uplink re-signs TLS (an intercepting proxy), the host trusts
# that CA through its bundle: the box gets the same bundle for npm.
mkdir -p "$B/root/tmp"
cafile=$(npm config get cafile 2>/dev/null)
[ -f "$cafile" ] || cafile=/etc/ssl/certs/ca-certificates.crt
[ -f "$cafile" ] && cp "$cafile" "$B/root/tmp/host-ca.crt" && chmod 644 "$B/root/tmp/host-ca.crt"
# npmv: `npm view left-pad version` in the box, no retries, an empty
# cache each time (a cached answer must not pass for a reachable registry);
# prints it.
npmv() {
	echo "npm view --registry='$REGISTRY' --cache=\$(mktemp -u /tmp/npm-cache.XXXXXX) --cafile=/tmp/host-ca.crt --fetch-retries=0 --fetch-timeout=15000 left-pad version" >"$B/exec/new" &&
		{ [ "$(timeout 60 cat "$B/exec/last/exit")" = 0 ] || { sed "s/^/# /" "$B/exec/last/output"; false; }; } && cat "$B/exec/last/stdout"
}
ok "allow-all: npm view from the box" bash -c "$(declare -f npmv); B='$B' REGISTRY='$REGISTRY'; npmv | grep -Eq '^[0-9]+\.[0-9]+'"
ok "allowlist naming the registry" \
	bash -c "printf 'allowlist\n%s\n' '$REGISTRY_HOST' > '$B/policy'"
ok "allowlist: npm view still works" bash -c "$(declare -f npmv); B='$B' REGISTRY='$REGISTRY'; npmv | grep -Eq '^[0-9]+\.[0-9]+'"
ok "allowlist without the registry" bash -c "printf 'allowlist\nexample.test\n' > '$B/policy'"
ok "allowlist: npm view fails" bash -c "$(declare -f npmv); B='$B' REGISTRY='$REGISTRY'; ! npmv"
ok "the failed lookup was refused by the resolver" \
	bash -c "echo 'getent hosts $REGISTRY_HOST; echo rc=\$?' > '$B/exec/new' &&
		timeout 30 cat '$B/exec/last/exit' >/dev/null && grep -q 'rc=2' '$B/exec/last/stdout'"
rmdir "$B"
pd_done
