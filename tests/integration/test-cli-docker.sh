#!/bin/bash
# The paddock CLI's docker command against a real daemon over HTTP: `docker
# BOX` prints the box's setting (the image's default until written; --json
# as an object), `docker BOX on|off` sets it on a box that is not running
# and the next start follows it (dockerd answers or is not there), a change
# while the box runs fails with the server's own reason (EBUSY) plus a hint
# and changes nothing, while writing the value it has succeeds; a word other
# than on/off is a usage error (exit 2) that never reaches the server; a
# box of the debian image refuses on with the server's reason (EINVAL); an
# unknown box fails with the server's reason. `new --docker/--no-docker`:
# the setting is written before the start, and a box that cannot have it is
# deleted again. Skips (77) only when the docker image cannot be built.
. "$(dirname "$0")/lib.sh"
require_root
PADDOCK=${PADDOCK:-$TOP_BUILDDIR/cli/paddock}

pd_use_image docker
pd_setup || exit 1
# The debian image beside it (docker is built on it, in the same cache): a
# box without Docker.
ln -s "$PD_IMAGES/debian" "$D/images/debian" || exit 1
pd_docker_type
pd_start
pd_owner || { diag "cannot log in as the owner"; exit 1; }

export PADDOCK_CONFIG=$PD_TMP/cli/config.ini
unset PADDOCK_URL PADDOCK_TOKEN
paddock() { "$PADDOCK" --url "$PD_URL" --token "$PD_TOKEN" "$@"; }
export -f paddock
export PADDOCK PD_URL PD_TOKEN

E=$PD_TMP/err
O=$PD_TMP/out
# server_error BODY FILE: the server's reason for writing BODY to FILE of
# the tree, without the line's time; no_time FILE: the CLI's message in
# FILE the same way (a second call may fall in the next second).
server_error() {
	hc -X PUT --data-binary "$1" "$2" | python3 -c 'import json, re, sys; print(re.sub(r"^\S+Z ", "", json.load(sys.stdin)["error"]))'
}
no_time() {
	sed -E 's/^paddock: [0-9T:-]+Z /paddock: /' "$1"
}
export -f no_time
# cli RC CMD...: runs the CLI with stdout in $O and stderr in $E; true when
# it exits RC (else both are shown as diagnostics).
cli() {
	local want=$1 rc
	shift
	paddock "$@" >"$O" 2>"$E"
	rc=$?
	[ "$rc" = "$want" ] && return 0
	diag "paddock $*: exit $rc, want $want"
	sed 's/^/# out: /' "$O"
	sed 's/^/# err: /' "$E"
	return 1
}
# docker_answers BOX: whether `docker info` answers in the box (once, as
# the box's user).
docker_answers() {
	pd_job "$1" 'docker info >/dev/null 2>&1' >/dev/null 2>&1
}
export -f cli docker_answers pd_job pd_docker_ready server_error
export E O

# --- a box of the docker image, not started ------------------------------------------
mkdir "$M/boxes/d1" && echo docker >"$M/boxes/d1/image" && echo dock >"$M/boxes/d1/type"
ok "docker BOX: the image's default, on" bash -c "cli 0 docker d1 && test \"\$(cat '$O')\" = on"
ok "docker --json BOX: {\"docker\":\"on\"}" bash -c "
	cli 0 --json docker d1 && python3 -c '
import json, sys; o = json.load(open(sys.argv[1])); assert o == {\"docker\": \"on\"}, o' '$O'"
ok "docker BOX off: exit 0, nothing printed" bash -c "cli 0 docker d1 off && test ! -s '$O' && test ! -s '$E'"
ok "the box's docker file says off" same "$(cat "$M/boxes/d1/docker")" off
ok "and docker BOX prints off" bash -c "cli 0 docker d1 && test \"\$(cat '$O')\" = off"
ok "docker -v BOX on says what it did" bash -c "
	cli 0 -v docker d1 on && grep -qx 'paddock: d1: docker = on' '$E'"
ok "the box's docker file says on" same "$(cat "$M/boxes/d1/docker")" on
ok "docker current: the box used last" bash -c "cli 0 docker current && test \"\$(cat '$O')\" = on"

# --- usage errors: never sent ---------------------------------------------------------
for word in maybe ON 1 ''; do
	ok "docker BOX '$word': usage error (exit 2), the CLI's reason" bash -c "
		cli 2 docker d1 '$word' && grep -q \"docker takes on or off, not '$word'\" '$E'"
done
ok "docker BOX on off: exit 2" cli 2 docker d1 on off
ok "docker without BOX: exit 2" cli 2 docker
ok "new --docker --no-docker: exit 2, no box made" bash -c "
	cli 2 new --name nd --docker --no-docker && test ! -e '$M/boxes/nd'"
ok "the setting is still on" same "$(cat "$M/boxes/d1/docker")" on
ok "the server says its own reason for such a word (the CLI never sends one)" \
	bash -c "server_error maybe boxes/d1/docker | grep -q 'write on or off'"

# --- running: the tier is fixed for the run ------------------------------------------
ok "paddock start d1" cli 0 start d1
ok "its Docker answers" pd_docker_ready d1
want=$(server_error off boxes/d1/docker)
ok "the server refuses off while it runs (EBUSY)" grep -q 'set while the box is stopped' <<<"$want"
printf 'paddock: %s\n' "$want" >"$PD_TMP/want"
ok "docker BOX off while it runs: exit 1, the server's reason" bash -c "
	cli 1 docker d1 off && test \"\$(no_time '$E' | head -n 1)\" = \"\$(cat '$PD_TMP/want')\""
ok "then a hint in the CLI's words" grep -qx \
	"paddock: stop it first ('paddock stop d1'), then 'paddock docker d1 off' and 'paddock start d1'" "$E"
sed 's/^/# /' "$E"
ok "with -q, the server's reason only" bash -c "cli 1 -q docker d1 off && test \$(wc -l <'$E') = 1"
ok "the setting is unchanged: on" bash -c "cli 0 docker d1 && test \"\$(cat '$O')\" = on"
ok "docker BOX on while it runs with Docker on: exit 0 (nothing to change)" cli 0 docker d1 on
ok "its Docker still answers" docker_answers d1

# --- stopped: off, then the next start has no Docker; on again -----------------------
ok "paddock stop d1" cli 0 stop d1
ok "docker BOX off on the stopped box: exit 0" cli 0 docker d1 off
ok "it reads off" bash -c "cli 0 docker d1 && test \"\$(cat '$O')\" = off"
ok "paddock start d1" cli 0 start d1
ok "a job answers in it" pd_job d1 true
ok "but Docker does not: the start followed the setting" bash -c '! docker_answers d1'
ok "docker BOX on while it runs without Docker: exit 1 (EBUSY)" bash -c "
	cli 1 docker d1 on && grep -q 'runs with Docker off' '$E'"
ok "paddock stop d1, docker d1 on" bash -c "cli 0 stop d1 && cli 0 docker d1 on"
ok "paddock start d1: Docker answers again" bash -c "cli 0 start d1 && pd_docker_ready d1"
ok "paddock stop d1" cli 0 stop d1

# --- a box without Docker --------------------------------------------------------------
mkdir "$M/boxes/e1" && echo debian >"$M/boxes/e1/image"
ok "docker BOX of the debian image: off" bash -c "cli 0 docker e1 && test \"\$(cat '$O')\" = off"
want=$(server_error on boxes/e1/docker)
ok "the server refuses on: the box has no Docker (EINVAL)" grep -q 'has no Docker' <<<"$want"
printf 'paddock: %s\n' "$want" >"$PD_TMP/want"
ok "docker BOX on: exit 1, the server's reason, no hint" bash -c "
	cli 1 docker e1 on && test \"\$(no_time '$E')\" = \"\$(cat '$PD_TMP/want')\""
sed 's/^/# /' "$E"
ok "it still reads off" bash -c "cli 0 docker e1 && test \"\$(cat '$O')\" = off"
ok "docker BOX off: exit 0 (it is off already)" cli 0 docker e1 off
ok "--json: {\"docker\":\"off\"}" bash -c "cli 0 docker --json e1 && test \"\$(cat '$O')\" = '{\"docker\":\"off\"}'"

# --- an unknown box --------------------------------------------------------------------
want=$(hc boxes/nosuch/docker | python3 -c 'import json, re, sys; print(re.sub(r"^\S+Z ", "", json.load(sys.stdin)["error"]))')
printf 'paddock: %s\n' "$want" >"$PD_TMP/want"
ok "docker of an unknown box: exit 1, the server's reason" bash -c "
	cli 1 docker nosuch && test -n \"\$(cat '$PD_TMP/want' | cut -c10-)\" &&
	test \"\$(no_time '$E')\" = \"\$(cat '$PD_TMP/want')\" && test ! -s '$O'"
sed 's/^/# /' "$E"
ok "docker on of an unknown box: exit 1, no box made" bash -c "
	cli 1 docker nosuch on && test -s '$E' && test ! -e '$M/boxes/nosuch'"

# --- new --docker / --no-docker --------------------------------------------------------
ok "new --docker with the debian image: exit 1, the server's reason" bash -c "
	cli 1 new --name e2 --image debian --docker && grep -q 'docker: .*has no Docker' '$E'"
ok "and the box is deleted again" test ! -e "$M/boxes/e2"
ok "new --no-docker with the docker image prints its name" bash -c "
	cli 0 new --name d2 --image docker --type dock --no-docker && test \"\$(cat '$O')\" = d2"
ok "it runs, with Docker off" bash -c "
	test \"\$(cat '$M/boxes/d2/state')\" = running && test \"\$(cat '$M/boxes/d2/docker')\" = off"
ok "a job answers in it, Docker does not" bash -c "pd_job d2 true >/dev/null && ! docker_answers d2"
ok "paddock rm d2" cli 0 rm d2
ok "new --docker with the docker image: on, and Docker answers" bash -c "
	cli 0 new --name d3 --image docker --type dock --docker &&
	test \"\$(cat '$M/boxes/d3/docker')\" = on && pd_docker_ready d3"
ok "paddock rm d3, e1, d1" bash -c "cli 0 rm d3 && cli 0 rm e1 && cli 0 rm d1"

pd_done
