#!/bin/bash
# docs/openapi.yaml against a real daemon (tests/openapi-check.py): the
# document is valid OpenAPI 3.1; every route of the router is described;
# every described operation answers with a documented status, content type
# and body (on a box, a job, a prompt, a snapshot, a volume, a secret and a
# token made here); without a token every protected one is 401, on a
# missing box every box one is 404; every path of the tree the daemon
# lists is described, and every described tree path is listed. A tree file
# or route added without its description, or removed with it left there,
# fails here. About 6 s.
. "$(dirname "$0")/lib.sh"

SPEC=$TOP_SRCDIR/docs/openapi.yaml
CHECK=$TOP_SRCDIR/tests/openapi-check.py
python3 -c 'import yaml, jsonschema' 2>/dev/null ||
	skip_all "needs python3-yaml and python3-jsonschema"

pd_start
ok "the description is valid OpenAPI 3.1 (refs, operationIds, parameters, schemas)" \
	python3 "$CHECK" lint "$SPEC"
ok "every route literal of the router (web/*.c) is described" \
	python3 "$CHECK" routes "$SPEC" "$TOP_SRCDIR/web"
ok "the owner logs in" pd_owner
URL=$PD_URL

# put_ok EXPECTED-STATUS PATH [BODY]: a PUT under /v1/tree/ that must answer
# EXPECTED-STATUS; prints the body.
put_ok() {
	local out
	out=$(hc -w '\n%{http_code}' -X PUT --data-binary "${3-}" "$2") || return 1
	[ "${out##*$'\n'}" = "$1" ] || { diag "PUT $2: $out"; return 1; }
	printf '%s' "${out%$'\n'*}"
}
json_field() { # json_field FIELD: FIELD of the JSON object on stdin
	python3 -c 'import json, sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"
}

# --- the objects every path template is filled with ---------------------------
make_objects() {
	put_ok 201 boxes/web/ >/dev/null &&
		put_ok 204 boxes/web/ports 8080 &&
		put_ok 201 boxes/web/exec/j1/ >/dev/null &&
		put_ok 204 boxes/web/exec/j1/cmd 'echo hello; echo oops >&2' &&
		same "$(hc boxes/web/exec/j1/exit)" 0 &&
		put_ok 204 boxes/web/exec/new 'true' &&
		put_ok 201 boxes/web/prompts/p1/ >/dev/null &&
		# A job not started (its settings), one reading its stdin, and a
		# server on the published port (preview URLs).
		put_ok 201 boxes/web/exec/fresh/ >/dev/null &&
		put_ok 201 boxes/web/exec/reader/ >/dev/null &&
		put_ok 204 boxes/web/exec/reader/cmd 'cat' &&
		put_ok 201 boxes/web/exec/httpd/ >/dev/null &&
		put_ok 204 boxes/web/exec/httpd/cmd 'echo served >/tmp/index.html; exec httpd -f -p 127.0.0.1:8080 -h /tmp' &&
		SNAP=$(put_ok 200 boxes/web/snapshot first | json_field snapshot) &&
		put_ok 201 boxes/web/root/tmp/ >/dev/null
	put_ok 204 boxes/web/root/tmp/hello.txt hello &&
		put_ok 204 boxes/web/root/hello.txt hello &&
		put_ok 201 volumes/vol/ >/dev/null &&
		put_ok 201 volumes/vempty/ >/dev/null &&
		put_ok 201 volumes/vol/data/tmp/ >/dev/null &&
		put_ok 204 volumes/vol/data/tmp/hello.txt hello &&
		put_ok 204 volumes/vol/data/hello.txt hello &&
		put_ok 204 secrets/API_KEY sk-keep &&
		put_ok 204 secrets/OA_VICTIM sk-victim &&
		# For the deletes: a snapshot of a box of its own, a second token.
		put_ok 201 boxes/vsrc/ >/dev/null &&
		VSNAP=$(put_ok 200 boxes/vsrc/snapshot victim | json_field snapshot) &&
		VTOKEN=$(curl -fsS --data "{\"password\":\"$PD_PASSWORD\",\"label\":\"victim\"}" \
			"$URL/v1/login" | json_field id) &&
		[ -n "$SNAP" ] && [ -n "$VSNAP" ] && [ -n "$VTOKEN" ]
}
ok "a box, jobs, a prompt, snapshots, a volume, secrets and tokens are made" make_objects

TOKEN_ID=${PD_TOKEN#pd_}
TOKEN_ID=${TOKEN_ID%%_*}
FX=$PD_TMP/fixtures.json
cat >"$FX" <<EOF
{
  "keep": {"box": "web", "job": "j1", "prompt": "p1", "snapshot": "$SNAP",
           "volume": "vol", "secret": "API_KEY", "token": "$TOKEN_ID",
           "type": "tiny", "image": "tiny", "port": 8080},
  "victim": {"box": "oa-victim", "job": "oa-vjob", "prompt": "oa-vprompt",
             "snapshot": "$VSNAP", "volume": "oa-vvol", "secret": "OA_VICTIM",
             "token": "$VTOKEN"},
  "files": {"file": "tmp/hello.txt", "listdir": "tmp", "dir": "tmp/oa-dir"},
  "op_values": {"setJobEnv": {"job": "fresh"}, "setJobCwd": {"job": "fresh"},
                "setJobUser": {"job": "fresh"}, "setJobDesktop": {"job": "fresh"},
                "setJobCmd": {"job": "fresh"}, "writeJobStdin": {"job": "reader"},
                "controlJob": {"job": "reader"}, "importVolume": {"volume": "vempty"}},
  "last": ["restoreBox"],
  "missing_box": "no-such-box",
  "bodies": {"login": {"password": "$PD_PASSWORD", "label": "openapi-check", "ttl": 3600},
             "restoreBox": "$SNAP"},
  "walk_may_miss": ["/v1/tree/agents/{agent}", "/v1/tree/tokens/{token}/expires"],
  "walk_must_see": ["/v1/tree/boxes/web/exec/j1/stdout", "/v1/tree/boxes/web/exec/last",
                    "/v1/tree/boxes/web/prompts/p1/", "/v1/tree/snapshots/$SNAP/",
                    "/v1/tree/boxes/web/snapshots/$SNAP", "/v1/tree/volumes/vol/data/tmp/",
                    "/v1/tree/boxes/web/root/tmp/", "/v1/tree/tokens/$TOKEN_ID/",
                    "/v1/tree/secrets/API_KEY", "/v1/tree/images/tiny/created",
                    "/v1/tree/types/tiny"]
}
EOF
live() {
	python3 "$CHECK" live "$SPEC" "$URL" "$PD_TOKEN" "$FX" "$1"
}

ok "every path the tree lists is described, every described tree path is listed" live walk
ok "without a token, every protected operation is 401 with an Error body" live noauth
ok "on a box that does not exist, every box operation is 404 with an Error body" live missing
ok "every described operation answers as described" live ops
ok "after the writes, every path the tree lists is still described" live walk

pd_done
