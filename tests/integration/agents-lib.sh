# shellcheck shell=bash
# agents-lib.sh - the fake model's internet, for the agents' tests and
# benchmark (sourced after lib.sh).
#
#   model.test  198.51.100.20:8080  fake-model.py (Anthropic Messages,
#                                   OpenAI Responses and Chat Completions)
#   other.test  198.51.100.21:8080  the same server, named by no preset
#   (no name)   198.51.100.22:8080  MODEL_SILENT: accepts connections and
#                                   never answers (a prompt pointed there
#                                   runs until killed)
#   DNS         198.51.100.53       dnsmasq, authoritative for both names
#
# pd_model_can: true when this machine can build it (python3, dnsmasq).
#
# pd_model_outer SCRIPT: run as the script's first step (outside): builds
# the namespaces (pd_fake_net), starts the fake model and the DNS server in
# the "internet", runs SCRIPT again inside the "host" namespace with
# PD_NET_INSIDE=1 and PD_MODEL_LOG (the model's request log: JSON lines
# with the key each request carried), tears everything down and exits with
# SCRIPT's status. Returns at once when already inside.
#
# pd_model_setup: inside, sets the network knobs, pd_setup, points every
# agent at the fake model ([agent NAME] base_url and model) and names the
# unix socket $SOCK in the config; the daemon is not started (a test may
# add images first, then pd_start).
# pd_model_daemon: pd_model_setup, then starts the daemon and waits for
# $SOCK.

MODEL_DNS=198.51.100.53
MODEL_PORT=8080
MODEL_SILENT=198.51.100.22
MODEL_AGENTS="claude codex opencode pi"

pd_model_can() {
	command -v python3 >/dev/null && command -v dnsmasq >/dev/null
}

pd_model_outer() {
	[ -n "${PD_NET_INSIDE:-}" ] && return 0
	local script=$1 tag=pdm$$ rc
	MODEL_DIR=/tmp/$tag-model
	cleanup_ns() {
		pd_fake_net_down
		rm -rf "$MODEL_DIR"
	}
	trap cleanup_ns EXIT
	pd_fake_net "$tag" 198.51.100.20 198.51.100.21 $MODEL_SILENT $MODEL_DNS ||
		skip_all "cannot make network namespaces"
	mkdir -p "$MODEL_DIR"
	PD_MODEL_LOG=$MODEL_DIR/requests.jsonl
	: >"$PD_MODEL_LOG"
	ip netns exec "$INETNS" python3 "$TOP_SRCDIR/tests/integration/fake-model.py" \
		--port $MODEL_PORT --listen 198.51.100.20 --listen 198.51.100.21 \
		--silent $MODEL_SILENT --log "$PD_MODEL_LOG" --hang 120 >"$MODEL_DIR/server.log" 2>&1 &
	PD_FAKE_PIDS="${PD_FAKE_PIDS:-} $!"
	ip netns exec "$INETNS" dnsmasq --keep-in-foreground --no-resolv --no-hosts \
		--bind-interfaces --listen-address=$MODEL_DNS --port=53 --user=root --pid-file= \
		--address=/model.test/198.51.100.20 --address=/other.test/198.51.100.21 \
		--local-ttl=60 >/dev/null 2>&1 &
	PD_FAKE_PIDS="$PD_FAKE_PIDS $!"
	pd_fake_wait "$INETNS" 4
	PD_MODEL_LOG=$PD_MODEL_LOG PD_NET_INSIDE=1 nsenter --net="/run/netns/$HOSTNS" "$script"
	rc=$?
	[ $rc -ne 0 ] && tail -n 20 "$MODEL_DIR/server.log" | sed 's/^/# model: /'
	cleanup_ns
	trap - EXIT
	ip netns list | grep -q "^$tag" && { echo "# namespaces left behind"; rc=1; }
	exit $rc
}

pd_model_setup() {
	local a model
	PD_NETWORK=on PD_BRIDGE=pd-m$(($$ % 1000)) PD_SUBNET=10.204.$(($$ % 250)).0/24
	PD_NFT_TABLE=paddock_m$$ PD_DNS_UPSTREAM=$MODEL_DNS
	export PD_NETWORK PD_BRIDGE PD_SUBNET PD_NFT_TABLE PD_DNS_UPSTREAM
	pd_setup || exit 1
	# codex offers its tools to a model it does not know (gpt-5 here) as
	# plain functions, to its own models through a JavaScript tool; the
	# fake answers both, the first is the plainer.
	for a in $MODEL_AGENTS; do
		case $a in
		claude) model=claude-sonnet-4-5 ;;
		codex) model=gpt-5 ;;
		*) model=anthropic/claude-sonnet-4-5 ;;
		esac
		printf '[agent %s]\nbase_url = http://model.test:%s\nmodel = %s\n' \
			"$a" $MODEL_PORT "$model" >>"$PD_TMP/paddock.ini"
	done
	SOCK=$PD_TMP/run/paddock.sock
	sed -i "s|^\[paddock\]$|[paddock]\nsocket = $SOCK|" "$PD_TMP/paddock.ini"
}

pd_model_daemon() {
	pd_model_setup
	pd_start
	wait_for 10 test -S "$SOCK" || { diag "no unix socket"; exit 1; }
}
