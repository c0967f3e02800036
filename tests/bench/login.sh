#!/bin/bash
# login.sh - what a login costs, and what an attacker gets out of the login
# limits, on one private daemon at the production hashing cost (Argon2id,
# libsodium's interactive limits):
#
#   1. The login's latency: BENCH_LOGINS (10) right logins over HTTP, one
#      at a time, each from a fresh 127.x address and 1.1 s after the last
#      (so the global budget, one verification per second, never makes one
#      wait). Baselines in the same run: the bare crypto_pwhash_str_verify()
#      of the same kind of hash, in a small C program (BENCH_VERIFY, 20
#      checks), and a token-authenticated request (GET /v1/tree/version,
#      BENCH_REQS, 200, one connection each). Ratio = login median / bare
#      verification median (what HTTP and the limits add); target <= 1.5.
#   2. An attacker rotating source addresses: BENCH_THREADS (32) threads
#      posting wrong passwords at full speed for BENCH_ATTACK_SECONDS (20),
#      each attempt from a fresh address of 127.0.0.0/8. Reported: the
#      passwords the server checked per second (401 replies) against what
#      the CPU could check without the budget (the host's CPUs / the bare
#      verification time). No target: the figure is bounded by the budget
#      (1/s plus a burst of 4, engine/auth.h), about 1.
#
# Needs root, python3 and a C compiler with libsodium's headers.

set -u
export LC_ALL=C
BENCH_NAME=login_ms
BENCH_TARGET=1.5
. "$(cd "$(dirname "$0")" && pwd)/common.sh"

LOGINS=${BENCH_LOGINS:-10}
VERIFY=${BENCH_VERIFY:-20}
REQS=${BENCH_REQS:-200}
THREADS=${BENCH_THREADS:-32}
ATTACK=${BENCH_ATTACK_SECONDS:-20}

command -v python3 >/dev/null || bench_broken "python3 is not installed"
command -v cc >/dev/null || skip_all "needs a C compiler (cc) for the bare verification"
# The attack opens thousands of connections a second (lib.sh says why that
# needs a network namespace of its own).
pd_own_netns "$0" "$@"
bench_start
pd_owner "bench-owner-password" || bench_broken "cannot set the owner's password and log in"
HOSTPORT=${PD_URL#http://}
export HOST=${HOSTPORT%:*} PORT=${HOSTPORT##*:}

# --- baselines ----------------------------------------------------------------
cat >"$PD_TMP/verify.c" <<'C'
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
int main(int argc, char **argv)
{
	char h[crypto_pwhash_STRBYTES];
	const char *pw = "bench-owner-password";
	int n = atoi(argv[1]);
	if (sodium_init() < 0 || crypto_pwhash_str(h, pw, strlen(pw), crypto_pwhash_OPSLIMIT_INTERACTIVE,
						    crypto_pwhash_MEMLIMIT_INTERACTIVE) != 0)
		return 1;
	for (int i = 0; i < n; i++) {
		struct timespec a, b;
		clock_gettime(CLOCK_MONOTONIC, &a);
		if (crypto_pwhash_str_verify(h, pw, strlen(pw)) != 0)
			return 1;
		clock_gettime(CLOCK_MONOTONIC, &b);
		printf("%.3f\n", (b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6);
	}
	return 0;
}
C
cc -O2 -o "$PD_TMP/verify" "$PD_TMP/verify.c" -lsodium 2>"$PD_TMP/cc.log" ||
	skip_all "cannot build against libsodium: $(head -n1 "$PD_TMP/cc.log")"
"$PD_TMP/verify" "$VERIFY" >"$PD_TMP/verify_ms" || bench_broken "the bare verification failed"

cat >"$PD_TMP/reqs.py" <<'PY'
import http.client, json, os, sys, time
host, port = os.environ["HOST"], int(os.environ["PORT"])
mode, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    t = time.perf_counter()
    if mode == "token":
        c = http.client.HTTPConnection(host, port)
        c.request("GET", "/v1/tree/version", headers={"Authorization": "Bearer " + os.environ["PD_TOKEN"]})
    else:
        time.sleep(1.1)  # a budget unit is back
        t = time.perf_counter()
        c = http.client.HTTPConnection(host, port, source_address=("127.77.%d.%d" % (i // 250, i % 250 + 1), 0))
        c.request("POST", "/v1/login", json.dumps({"password": os.environ["PD_PASSWORD"]}),
                  {"Content-Type": "application/json"})
    r = c.getresponse()
    body = r.read()
    c.close()
    if r.status != 200:
        sys.exit("%s: %d %s" % (mode, r.status, body))
    print("%.3f" % ((time.perf_counter() - t) * 1000))
PY
python3 "$PD_TMP/reqs.py" token "$REQS" >"$PD_TMP/token_ms" || bench_broken "token requests failed"
sleep 5 # a full budget for the logins
python3 "$PD_TMP/reqs.py" login "$LOGINS" >"$PD_TMP/login_ms" || bench_broken "logins failed"

# --- the attack -------------------------------------------------------------------
python3 "$BENCH_DIR/../integration/login-attack.py" "$ATTACK" "$THREADS" 100 >"$PD_TMP/attack.json" ||
	bench_broken "the attack script failed"
read -r a_secs a_checked a_refused a_other < <(python3 -c '
import json, sys
o = json.load(open(sys.argv[1])); c = o["counts"]
print(o["seconds"], c.get("401", 0), c.get("429", 0), sum(v for k, v in c.items() if k not in ("401", "429")))' \
	"$PD_TMP/attack.json")

read -r v_med _ _ _ _ v_n < <(bench_stats "$PD_TMP/verify_ms")
read -r l_med _ l_min _ _ l_n < <(bench_stats "$PD_TMP/login_ms")
read -r t_med _ _ _ _ t_n < <(bench_stats "$PD_TMP/token_ms")
ratio=$(bench_ratio "$l_med" "$v_med")
rate=$(python3 -c "print('%.2f' % ($a_checked / $a_secs))")
capacity=$(python3 -c "print('%.1f' % ($(nproc) * 1000 / $v_med))")
rate_ratio=$(bench_ratio "$rate" "$capacity")

echo
printf 'Logins at the production cost; load %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
bench_build_note
printf '  bare crypto_pwhash_str_verify, median of %d: %s ms\n' "$v_n" "$v_med"
printf '  token-authenticated GET, median of %d: %s ms\n' "$t_n" "$t_med"
printf '  login over HTTP, median of %d (min %s): %s ms = %s x the verification, %s x a token request\n' \
	"$l_n" "$l_min" "$l_med" "$ratio" "$(bench_ratio "$l_med" "$t_med")"
printf '    ratio %s  target <= %s  met: %s\n' "$ratio" "$BENCH_TARGET" "$(bench_meets "$ratio" "$BENCH_TARGET")"
printf '  attack, %d threads, a fresh address per attempt, %s s: %s passwords checked (%s/s), %s refused (429), %s other\n' \
	"$THREADS" "$a_secs" "$a_checked" "$rate" "$a_refused" "$a_other"
printf '    without the budget the CPUs could check about %s/s (%d CPUs / %s ms): the attacker got %s of that\n' \
	"$capacity" "$(nproc)" "$v_med" "$rate_ratio"
echo "RESULT login_ms=$l_med ratio=$ratio target=$BENCH_TARGET"
echo "RESULT login_attack_guesses_per_s=$rate ratio=$rate_ratio target=nan"
