#!/bin/bash
# Access tokens that expire, against a real daemon: POST /v1/login's ttl
# and its answer's expires; a request with an expired token (a tree route,
# /metrics) gets 401 with the time it expired; a stream open with it ends;
# tokens/ID/expires over FUSE and HTTP; bad ttl values make no token; the
# tree's tokens/ stays closed to other local users; token_ttl (the default
# lifetime and the longest one) after a restart, old tokens kept; the CLI's
# login --ttl. About 20 s, most of it waiting for tokens to expire.
. "$(dirname "$0")/lib.sh"
require_root
command -v setpriv >/dev/null || skip_all "needs setpriv"
PADDOCK=${PADDOCK:-$TOP_BUILDDIR/cli/paddock}

pd_start
ok "the daemon listens" wait_for 10 test -s "$PD_TMP/run/http-url"
URL=$(pd_url)
ok "pd_owner: setup then login" pd_owner "right-password-1"
PW=$PD_PASSWORD

code() { # code [CURL-ARGS...] URL: the status code only
	curl -sS -o /dev/null -w '%{http_code}' "$@"
}
login() { # login JSON-BODY: the answer's body; the status in $PD_TMP/status
	curl -sS -o "$PD_TMP/login.out" -w '%{http_code}' -H 'Content-Type: application/json' \
		--data "$1" "$URL/v1/login" >"$PD_TMP/status"
	cat "$PD_TMP/login.out"
}
field() { # field JSON KEY
	python3 -c 'import json, sys; print(json.loads(sys.argv[1]).get(sys.argv[2], ""))' "$1" "$2"
}
ntokens() {
	find "$M/tokens" -mindepth 1 -maxdepth 1 | wc -l
}
# get TOKEN PATH: status, then the body, of a GET with that token
get() {
	curl -sS -D "$PD_TMP/headers" -o "$PD_TMP/body" -w '%{http_code}' \
		-H "Authorization: Bearer $1" "$URL$2"
	echo
	cat "$PD_TMP/body"
}

# --- a token that never expires ---------------------------------------------
id=${PD_TOKEN:3:12}
ok "a login without ttl: tokens/ID/expires is never" same "$(cat "$M/tokens/$id/expires")" never
ok "...over HTTP too" same "$(hc "tokens/$id/expires")" never
out=$(login "{\"password\":\"$PW\"}")
ok "...and its answer has no expires" same "$(field "$out" expires)" ""

# --- a short one ---------------------------------------------------------------
out=$(login "{\"password\":\"$PW\",\"label\":\"short\",\"ttl\":2}")
ok "login with ttl 2: 200" same "$(cat "$PD_TMP/status")" 200
short=$(field "$out" token)
sid=$(field "$out" id)
exp=$(field "$out" expires)
ok "the answer has expires, RFC 3339 UTC, about 2 s ahead" python3 -c '
import datetime, sys, time
t = datetime.datetime.strptime(sys.argv[1], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc)
assert 0 <= t.timestamp() - time.time() <= 3, (sys.argv[1], time.time())' "$exp"
ok "tokens/ID/expires over FUSE says the same" same "$(cat "$M/tokens/$sid/expires")" "$exp"
ok "...and over HTTP" same "$(hc "tokens/$sid/expires")" "$exp"
ok "the token works before it expires" same "$(code -H "Authorization: Bearer $short" "$URL/v1/tree/version")" 200
ok "...on /metrics too" same "$(code -H "Authorization: Bearer $short" "$URL/metrics")" 200
# A stream open with it (events never ends by itself) ends at the expiry.
start=$(date +%s)
curl -sS -N -o /dev/null --max-time 20 -H "Authorization: Bearer $short" \
	"$URL/v1/tree/events" 2>/dev/null &
stream=$!
sleep 3.2 # past the expiry (2 s from the login)
ok "a tree route with the expired token: 401 and the time it expired" same \
	"$(get "$short" /v1/tree/version)" \
	"401
{\"error\":\"the token expired at $exp\",\"errno\":\"EACCES\"}"
ok "...with WWW-Authenticate: Bearer error=\"invalid_token\"" \
	grep -qi '^WWW-Authenticate: Bearer error="invalid_token"' "$PD_TMP/headers"
ok "/metrics the same" same "$(get "$short" /metrics)" \
	"401
{\"error\":\"the token expired at $exp\",\"errno\":\"EACCES\"}"
ok "a write the same (and nothing happens)" same \
	"$(code -X PUT -H "Authorization: Bearer $short" --data-binary 'x' "$URL/v1/tree/boxes/nope/ttl")" 401
ok "a stream open with the token ended within 2 s of the expiry" bash -c "
	for i in \$(seq 1 50); do kill -0 $stream 2>/dev/null || exit 0; sleep 0.1; done; exit 1"
ended=$(date +%s)
diag "the stream ended $((ended - start)) s after it started (the token lived 2 s)"
wait $stream 2>/dev/null
ok "an unknown token still says missing or invalid" same "$(get pd_aaaaaaaaaaaa_bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb /v1/tree/version)" \
	"401
{\"error\":\"missing or invalid token\",\"errno\":\"EACCES\"}"
ok "the expired token is still listed, its expiry past" same "$(cat "$M/tokens/$sid/expires")" "$exp"
ok "rmdir tokens/ID removes it" rmdir "$M/tokens/$sid"

# --- bad values ----------------------------------------------------------------
before=$(ntokens)
for bad in 0 -1 1.5 '"60"' 315360001 true '[60]'; do
	out=$(login "{\"password\":\"$PW\",\"ttl\":$bad}")
	ok "ttl $bad: 400 EINVAL, the reason names ttl" same \
		"$(cat "$PD_TMP/status") $(field "$out" errno) $(field "$out" error)" \
		"400 EINVAL ttl: the token's lifetime, a whole number of seconds from 1 to 315360000 (ten years)"
done
out=$(login "{\"password\":\"$PW\",\"ttl\":99999999999999999999999}")
ok "a ttl too big for any integer: 400" same "$(cat "$PD_TMP/status")" 400
ok "a form's ttl=abc: 400" same "$(code --data "password=$PW&ttl=abc" "$URL/v1/login")" 400
ok "a form's ttl=0: 400" same "$(code --data "password=$PW&ttl=0" "$URL/v1/login")" 400
ok "a wrong password with a bad ttl: 400 (the ttl is judged first)" same \
	"$(code -H 'Content-Type: application/json' --data '{"password":"wrong-password","ttl":0}' "$URL/v1/login")" 400
ok "no bad login made a token" same "$(ntokens)" "$before"
out=$(login "{\"password\":\"$PW\",\"ttl\":null}")
ok "ttl null: as if there were none" same "$(cat "$PD_TMP/status") $(field "$out" expires)" "200 "
ok "a form's ttl=60: a token" same "$(curl -sS -H 'Accept: application/json' --data "password=$PW&ttl=60" "$URL/v1/login" |
	python3 -c 'import json, sys; print(bool(json.load(sys.stdin)["expires"]))')" True
ok "ttl 315360000 (ten years): 200" same "$(code -H 'Content-Type: application/json' \
	--data "{\"password\":\"$PW\",\"ttl\":315360000}" "$URL/v1/login")" 200

# --- other local users ------------------------------------------------------------
ok "another local user cannot read tokens/ID/expires" bash -c "
	! setpriv --reuid=65534 --regid=65534 --clear-groups cat '$M/tokens/$id/expires' 2>'$PD_TMP/err' &&
	grep -q 'Permission denied' '$PD_TMP/err'"
ok "...nor list tokens/" bash -c "
	! setpriv --reuid=65534 --regid=65534 --clear-groups ls '$M/tokens/' 2>/dev/null"

# --- token_ttl, after a restart -------------------------------------------------
sed -i "s|^\[paddock\]$|[paddock]\ntoken_ttl = 1h|" "$PD_TMP/paddock.ini"
pd_stop
rm -f "$PD_TMP/run/http-url"
pd_start
wait_for 10 test -s "$PD_TMP/run/http-url"
URL=$(pd_url)
export PD_URL=$URL # hc's
ok "a token made before the restart still works and never expires" bash -c "
	[ \"\$(hc tokens/$id/expires)\" = never ]"
out=$(login "{\"password\":\"$PW\"}")
ok "token_ttl = 1h: a login without ttl expires in an hour" python3 -c '
import datetime, sys, time
t = datetime.datetime.strptime(sys.argv[1], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc)
assert 3595 <= t.timestamp() - time.time() <= 3601, sys.argv[1]' "$(field "$out" expires)"
out=$(login "{\"password\":\"$PW\",\"ttl\":3601}")
ok "a longer ttl than token_ttl: 400 with the reason" bash -c "
	[ \"\$(cat '$PD_TMP/status')\" = 400 ] &&
	[ '$(field "$out" error)' = 'ttl: at most 3600 seconds on this server (its token_ttl)' ]"
ok "a shorter one: 200" same "$(code -H 'Content-Type: application/json' \
	--data "{\"password\":\"$PW\",\"ttl\":60}" "$URL/v1/login")" 200

# --- the CLI --------------------------------------------------------------------------
export PADDOCK_CONFIG=$PD_TMP/cli/config.ini
unset PADDOCK_URL PADDOCK_TOKEN
ok "paddock login --ttl 0 is refused before asking" bash -c "
	! echo '$PW' | '$PADDOCK' login '$URL' --password-stdin --ttl 0 2>'$PD_TMP/err' &&
	grep -q 'ttl' '$PD_TMP/err'"
ok "paddock login --ttl 2" bash -c "echo '$PW' | '$PADDOCK' -q login '$URL' --password-stdin --ttl 2"
ok "token ls shows EXPIRES" bash -c "'$PADDOCK' token ls >'$PD_TMP/ls' && head -1 '$PD_TMP/ls' | grep -q EXPIRES &&
	grep -q never '$PD_TMP/ls'"
sleep 2.5
ok "once it expired, a command fails with the reason" bash -c "
	! '$PADDOCK' ls 2>'$PD_TMP/err' && grep -q 'the token expired at' '$PD_TMP/err'"
diag "$(head -1 "$PD_TMP/err")"

pd_done
