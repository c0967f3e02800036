#!/bin/bash
# The tree over HTTP where it differs from a plain file read: an export
# read with follow=0 (what exists now; nothing leaks, and the daemon's stop
# waits for a cancelled export's threads), the errno -> status of a
# desktop that is off (409 ENODEV) or that an image cannot have (501
# ENOTSUP), JSON values served as application/json, a link to a host path
# (a snapshot's root) never shown, and paths through the tree's own
# relative links (boxes/NAME/snapshots/ID/label). About 5 s.
. "$(dirname "$0")/lib.sh"

HOLD=$(mktemp -d /tmp/paddock-hold.XXXXXX)
export PADDOCK_HOLD=export-end:$HOLD
cleanup_hold() { rm -rf "$HOLD"; }
pd_on_exit cleanup_hold
pd_start
ok "the owner logs in" pd_owner
B=$M/boxes

status() { # status [CURL-ARGS...] PATH: the status code, the body in $PD_TMP/body
	hc -o "$PD_TMP/body" -w '%{http_code}' "$@"
}
field() { # field NAME: NAME of the JSON object in $PD_TMP/body
	python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$PD_TMP/body" "$1"
}
export -f field

mkdir "$B/a"
echo first >"$B/a/snapshot"
s=$(readlink "$B/a/snapshots/last")
mkdir "$M/volumes/v"

# --- exports read with follow=0 -----------------------------------------------------
ok "snapshots/ID/export?follow=0: 200" same "$(status "snapshots/$s/export?follow=0")" 200
ok "what it answered is the start of the archive (maybe nothing yet)" bash -c "
	hc 'snapshots/$s/export' >'$PD_TMP/whole.zst' &&
	cmp -n \$(stat -c %s '$PD_TMP/body') '$PD_TMP/body' '$PD_TMP/whole.zst'"
ok "volumes/NAME/export?follow=0: 200" same "$(status "volumes/v/export?follow=0")" 200
ok "the whole export, followed, is a valid archive" zstd -tq "$PD_TMP/whole.zst"
echo second >"$B/a/snapshot"
s2=$(readlink "$B/a/snapshots/last")
ok "a second snapshot's export read with follow=0" same "$(status "snapshots/$s2/export?follow=0")" 200
ok "no export is left running on it: it can be deleted at once" \
	same "$(status -X DELETE "snapshots/$s2/")" 204

# --- a desktop off, an image without one ------------------------------------------------
ok "screenshot.png of a desktop that is off: 409" same "$(status boxes/a/screenshot.png)" 409
ok "with ENODEV and the reason" bash -c "[ \"\$(field errno)\" = ENODEV ] && grep -q 'desktop' '$PD_TMP/body'"
ok "desktop/windows while off: 409" same "$(status boxes/a/desktop/windows)" 409
ok "desktop/cursor while off: 409" same "$(status boxes/a/desktop/cursor)" 409
ok "desktop/input while off: 409" same "$(status -X PUT --data 'move 1 1' boxes/a/desktop/input)" 409
ok "desktop/state on for an image without Xvnc: 501" \
	same "$(status -X PUT --data on boxes/a/desktop/state)" 501
ok "with ENOTSUP and the reason" bash -c "[ \"\$(field errno)\" = ENOTSUP ] && grep -q 'has no desktop' '$PD_TMP/body'"

# --- JSON values -------------------------------------------------------------------------
ok "boxes/NAME/info is application/json" same \
	"$(hc -o /dev/null -w '%{content_type}' boxes/a/info)" application/json
ok "and one JSON object" python3 -c '
import json, sys; o = json.loads(sys.argv[1]); assert o["name"] == "a"' "$(hc boxes/a/info)"
ok "a text value stays text/plain" same \
	"$(hc -o /dev/null -w '%{content_type}' boxes/a/state)" "text/plain; charset=utf-8"

# --- links ---------------------------------------------------------------------------------
ok "snapshots/ID/root: not the host path" bash -c "
	code=\$(hc -o '$PD_TMP/body' -w '%{http_code}' 'snapshots/$s/root')
	[ \"\$code\" = 501 ] && ! grep -q '$PD_TMP' '$PD_TMP/body' && grep -q ENOTSUP '$PD_TMP/body'"
diag "$(cat "$PD_TMP/body")"
ok "snapshots/ID/root/: the same" bash -c "
	[ \"\$(hc -o '$PD_TMP/body' -w '%{http_code}' 'snapshots/$s/root/')\" = 501 ] && ! grep -q '$PD_TMP' '$PD_TMP/body'"
ok "a path through it: the same" bash -c "
	[ \"\$(hc -o '$PD_TMP/body' -w '%{http_code}' 'snapshots/$s/root/etc/passwd')\" = 501 ] && ! grep -q '$PD_TMP' '$PD_TMP/body'"
ok "boxes/NAME/snapshots/ID: its relative link" same \
	"$(hc "boxes/a/snapshots/$s")" "{\"link\":\"../../../snapshots/$s\"}"
ok "boxes/NAME/snapshots/ID/label: followed to the snapshot's label" same \
	"$(hc "boxes/a/snapshots/$s/label")" "$(hc "snapshots/$s/label")"
ok "boxes/NAME/snapshots/last/label: two links" same \
	"$(hc "boxes/a/snapshots/last/label")" first
ok "boxes/NAME/snapshots/ID/: the snapshot's listing" same \
	"$(hc "boxes/a/snapshots/$s/?format=text" | awk '{print $4}' | sort | tr '\n' ' ')" \
	"$(hc "snapshots/$s/?format=text" | awk '{print $4}' | sort | tr '\n' ' ')"
ok "a label written through the box's link" bash -c "
	[ \"\$(hc -o /dev/null -w '%{http_code}' -X PUT --data relabelled 'boxes/a/snapshots/$s/label')\" = 204 ] &&
	[ \"\$(cat '$M/snapshots/$s/label')\" = relabelled ]"
echo j >"$B/a/exec/new"
ok "exec/last/ (a link, with a slash): the job's listing" bash -c "
	hc 'boxes/a/exec/last/?format=text' | grep -q ' exit\$'"

# --- the daemon's stop waits for an export's threads ---------------------------------------
touch "$HOLD/arm"
ok "an export read with follow=0 while its end is held" same "$(status "snapshots/$s/export?follow=0")" 200
ok "its compressor thread reaches the hold" wait_for 10 test -e "$HOLD/held"
pid=$PD_PID
PD_PID=
kill -TERM "$pid"
sleep 2
ok "the stopping daemon waits for it" bash -c "! pd_ended $pid"
rm -f "$HOLD/held"
pd_reap "$pid" 60
rc=$?
ok "then ends cleanly" pd_judge "$pid" $rc 0 "on SIGTERM"

pd_done
