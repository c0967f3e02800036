#!/bin/bash
# GET /metrics against a real daemon: the token it needs, the text format
# (every line checked against the exposition grammar, histograms
# cumulative), and counters, gauges and histograms that move when a box
# starts, a job runs and requests come.
. "$(dirname "$0")/lib.sh"

pd_start
ok "the owner logs in" pd_owner
URL=$PD_URL
SOCK=$PD_TMP/run/paddock.sock

code() { # code [CURL-ARGS...] URL: the status code only
	curl -sS -o /dev/null -w '%{http_code}' "$@"
}
scrape() {
	curl -fsS -H "Authorization: Bearer $PD_TOKEN" "$URL/metrics"
}
# value SERIES: the value of one series (name and labels as written) in $OUT.
value() {
	awk -v s="$1" '$1 == s { print $2; f = 1 } END { if (!f) print "none" }' <<<"$OUT"
}

# A strict reader of the text format (version 0.0.4): names and labels by
# the grammar, one TYPE before a family's samples, no series twice,
# counters ending in _total, histograms with ascending le, cumulative
# buckets, a +Inf bucket equal to _count, and _sum.
validate() {
	python3 -c '
import re, sys
name = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
label = r"[a-zA-Z_][a-zA-Z0-9_]*=\"(?:[^\"\\\\\n]|\\\\[\\\\\"n])*\""
sample = re.compile(r"^(" + name + r")(\{(?:" + label + r"(?:," + label + r")*)?\})? "
                    r"([-+]?(?:[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?|Inf|NaN))( -?[0-9]+)?$")
types, helps, seen, buckets, counts = {}, set(), set(), {}, {}
def fail(msg, line):
    sys.exit("%s: %r" % (msg, line))
text = sys.stdin.read()
if not text.endswith("\n"):
    fail("no final newline", text[-40:])
for line in text.split("\n")[:-1]:
    if line.startswith("#"):
        m = re.match(r"^# (HELP|TYPE) (" + name + r") (.*)$", line)
        if not m:
            fail("bad comment", line)
        if m.group(1) == "TYPE":
            if m.group(3) not in ("counter", "gauge", "histogram", "summary", "untyped"):
                fail("bad type", line)
            if m.group(2) in types:
                fail("TYPE twice", line)
            types[m.group(2)] = m.group(3)
        else:
            if m.group(2) in helps:
                fail("HELP twice", line)
            helps.add(m.group(2))
        continue
    m = sample.match(line)
    if not m:
        fail("bad sample", line)
    n, labels, v = m.group(1), m.group(2) or "", m.group(3)
    fam = n
    for suf in ("_bucket", "_sum", "_count"):
        if n.endswith(suf) and types.get(n[: -len(suf)]) == "histogram":
            fam = n[: -len(suf)]
    if fam not in types:
        fail("sample before its TYPE", line)
    if types[fam] == "counter" and not n.endswith("_total"):
        fail("counter not named _total", line)
    if (n, labels) in seen:
        fail("series twice", line)
    seen.add((n, labels))
    if types[fam] == "histogram":
        ls = re.sub(r",?le=\"[^\"]*\"", "", labels).replace("{,", "{")
        if n.endswith("_bucket"):
            le = re.search(r"le=\"([^\"]*)\"", labels)
            if not le:
                fail("bucket without le", line)
            b = buckets.setdefault((fam, ls), [])
            lev = float(le.group(1))
            if b and (lev <= b[-1][0] or float(v) < b[-1][1]):
                fail("buckets not ascending or not cumulative", line)
            b.append((lev, float(v)))
        elif n.endswith("_count"):
            counts[(fam, ls if ls != "{}" else "")] = float(v)
for (fam, ls), b in buckets.items():
    key = (fam, ls if ls != "{}" else "")
    if b[-1][0] != float("inf"):
        fail("no +Inf bucket", fam + ls)
    if counts.get(key) != b[-1][1]:
        fail("+Inf bucket is not _count", fam + ls)
'
}

# --- access -------------------------------------------------------------------
ok "no token: 401" same "$(code "$URL/metrics")" 401
ok "a wrong token: 401" same "$(code -H 'Authorization: Bearer pd_aaaaaaaaaaaa_bbb' "$URL/metrics")" 401
ok "the 401 asks for a bearer token" bash -c "curl -sSi '$URL/metrics' | grep -qi '^WWW-Authenticate: Bearer'"
ok "with the token: 200" same "$(code -H "Authorization: Bearer $PD_TOKEN" "$URL/metrics")" 200
ok "its type is the text format 0.0.4" bash -c "curl -sS -o /dev/null -w '%{content_type}' \
	-H 'Authorization: Bearer $PD_TOKEN' '$URL/metrics' | grep -qx 'text/plain; version=0.0.4; charset=utf-8'"
ok "HEAD answers 200" same "$(code -I -H "Authorization: Bearer $PD_TOKEN" "$URL/metrics")" 200
ok "the unix socket needs no token" same "$(code --unix-socket "$SOCK" http://x/metrics)" 200
ok "POST /metrics is no route (404)" same "$(code -X POST -H "Authorization: Bearer $PD_TOKEN" "$URL/metrics")" 404

# --- before any box -------------------------------------------------------------
OUT=$(scrape)
ok "the format is valid" validate <<<"$OUT"
for s in created starting running stopping stopped; do
	ok "boxes in state $s: 0, listed" same "$(value "paddock_boxes{state=\"$s\"}")" 0
done
ok "build info names the version" same \
	"$(value "paddock_build_info{version=\"$("$PADDOCKD" --version | cut -d' ' -f2)\"}")" 1
ok "uptime is a number" bash -c "[[ '$(value paddock_uptime_seconds)' =~ ^[0-9]+\.[0-9]+$ ]]"
ok "the start time is now or before" bash -c "(( $(value paddock_start_time_seconds) <= $(date +%s) ))"
ok "the data directory's filesystem has a size" bash -c "(( $(value paddock_data_fs_size_bytes) > 0 ))"
ok "no box started yet" same "$(value paddock_box_start_seconds_count)" 0
ok "no exec job started yet" same "$(value 'paddock_job_start_seconds_count{kind="exec"}')" 0
ok "no job runs" same "$(value 'paddock_jobs_running{kind="exec"}')" 0
ok "the 401s were counted" bash -c "(( $(value 'paddock_http_requests_total{method="GET",code="401"}') >= 3 ))"
ok "the POST's 404 was counted" same "$(value 'paddock_http_requests_total{method="POST",code="404"}')" 1
ok "a 200 GET was counted" bash -c "(( $(value 'paddock_http_requests_total{method="GET",code="200"}') >= 2 ))"

# --- a box and a job -------------------------------------------------------------
B=$M/boxes/m
mkdir "$B"
OUT=$(scrape)
ok "a created box counts" same "$(value 'paddock_boxes{state="created"}')" 1
ok "the box starts" bash -c "echo running > '$B/state'"
OUT=$(scrape)
ok "it counts as running" same "$(value 'paddock_boxes{state="running"}')" 1
ok "no longer as created" same "$(value 'paddock_boxes{state="created"}')" 0
ok "one box start went well" same "$(value 'paddock_box_starts_total{result="ok"}')" 1
ok "its latency is in the histogram" same "$(value paddock_box_start_seconds_count)" 1
ok "... with a sum above 0" bash -c "awk 'BEGIN { exit !($(value paddock_box_start_seconds_sum) > 0) }'"
ok "... in the +Inf bucket" same "$(value 'paddock_box_start_seconds_bucket{le="+Inf"}')" 1
ok "a job starts" bash -c "echo 'sleep 30' > '$B/exec/new'"
OUT=$(scrape)
ok "it runs" same "$(value 'paddock_jobs_running{kind="exec"}')" 1
ok "one exec start went well" same "$(value 'paddock_job_starts_total{kind="exec",result="ok"}')" 1
ok "its latency is in the histogram" same "$(value 'paddock_job_start_seconds_count{kind="exec"}')" 1
ok "prompts are apart" same "$(value 'paddock_job_start_seconds_count{kind="prompt"}')" 0
ok "the box's files count in the disk use" bash -c "(( $(value paddock_boxes_disk_bytes) >= 0 ))"
ok "the running box's memory counts" bash -c "(( $(value paddock_boxes_memory_bytes) > 0 ))"
ok "the format is still valid" validate <<<"$OUT"
ok "the job is stopped" bash -c "echo kill > '$B/exec/1/ctl'"
ok "... and ends" bash -c "timeout 10 cat '$B/exec/1/exit' >/dev/null"
OUT=$(scrape)
ok "no job runs then" same "$(value 'paddock_jobs_running{kind="exec"}')" 0
ok "the box stops" bash -c "echo stopped > '$B/state'"
OUT=$(scrape)
ok "it counts as stopped" same "$(value 'paddock_boxes{state="stopped"}')" 1
ok "and no box as running" same "$(value 'paddock_boxes{state="running"}')" 0
ok "the format is valid at the end" validate <<<"$OUT"

pd_done
