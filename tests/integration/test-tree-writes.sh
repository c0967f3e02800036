#!/bin/bash
# Writes as editors and agent file tools make them, on every writable file
# of the tree: `sed -i` and "write .NAME.tmp, then rename it over NAME"
# (Python's os.rename, as the agent tools do). The writable files are found
# by listing the mount, so one that no case below covers fails the test.
# Reads that could never finish (exit and the streams of a job whose cmd was
# never written) fail at once with EBUSY and say why, over FUSE and HTTP;
# a job's settings written after its cmd are refused with the reason.
. "$(dirname "$0")/lib.sh"
require_root
pd_start_with_socket

B=$M/boxes/w
X=$B/exec
H=$PD_TMP/host
mkdir -p "$H"

# tmp_rename FILE VALUE: writes VALUE to .NAME.tmp beside FILE, then renames
# it over FILE; prints OK or the errno's name. VALUE "@PATH": that file's
# bytes.
tmp_rename() {
	python3 - "$1" "$2" <<'PY'
import errno, os, sys
path, value = sys.argv[1], sys.argv[2]
tmp = os.path.join(os.path.dirname(path), "." + os.path.basename(path) + ".tmp")
data = open(value[1:], "rb").read() if value.startswith("@") else value.encode()
try:
    with open(tmp, "wb") as f:
        f.write(data)
    os.rename(tmp, path)
    print("OK")
except OSError as e:
    print(errno.errorcode[e.errno])
PY
}

# writable DIR: the writable regular files DIR lists, sorted, on one line.
writable() {
	find "$1/" -mindepth 1 -maxdepth 1 -type f -perm -u=w ! -name '.*' -printf '%f\n' | sort | tr '\n' ' '
}

# covers DIR "FILES": the files this test writes in DIR are all it holds.
covers() {
	same "$(writable "$1")" "$2"
}

# job_ends JOB CODE: the job's exit is CODE within 20 s.
job_ends() {
	same "$(timeout 20 cat "$X/$1/exit")" "$2"
}

# --- every writable file: listed, then written the editor's way ---------------------

mkdir "$B" "$M/volumes/vol"
ok "a box's writable files are the ones covered here" \
	covers "$B" "docker fork image policy ports prompt restore secrets snapshot state ttl type volumes "
ok "docker: sed -i (off, the tiny image's own value)" bash -c "sed -i 's/.*/off/' '$B/docker' && test \"\$(cat '$B/docker')\" = off"
ok "docker: on through a rename is refused (no dockerd in tiny)" same "$(tmp_rename "$B/docker" on)" EINVAL
ok "docker: still off, and the refused temp file can be removed" \
	bash -c "test \"\$(cat '$B/docker')\" = off && rm '$B/.docker.tmp'"
ok "image: sed -i" bash -c "sed -i 's/.*/tiny/' '$B/image' && test \"\$(cat '$B/image')\" = tiny"
ok "type: sed -i" bash -c "sed -i 's/small/tiny/' '$B/type' && test \"\$(cat '$B/type')\" = tiny"
ok "ttl: sed -i" bash -c "sed -i 's/.*/7200/' '$B/ttl' && test \"\$(cat '$B/ttl')\" -gt 7000"
ok "policy: sed -i" bash -c "sed -i 's/allow-all/deny-all/' '$B/policy' && test \"\$(cat '$B/policy')\" = deny-all"
ok "volumes: temp file renamed" same "$(tmp_rename "$B/volumes" vol)" OK
ok "volumes: applied" same "$(cat "$B/volumes")" vol
echo v >"$M/secrets/TW_KEY"
ok "secrets: temp file renamed" same "$(tmp_rename "$B/secrets" TW_KEY)" OK
ok "secrets: applied" same "$(cat "$B/secrets")" TW_KEY
ok "ports: temp file renamed" same "$(tmp_rename "$B/ports" '8080 public')" OK
ok "ports: applied" same "$(cat "$B/ports")" "8080 public"
ok "ports: sed -i" bash -c "sed -i 's/ public//' '$B/ports' && test \"\$(cat '$B/ports')\" = 8080"
ok "state: sed -i starts the box" bash -c "sed -i 's/created/running/' '$B/state' && test \"\$(cat '$B/state')\" = running"
ok "no temp file is left in the box's directory" same "$(ls -A "$B" | grep -c '^\.')" 0

ok "exec/'s writable file is new" covers "$X" "new "
ok "exec/new: temp file renamed" same "$(tmp_rename "$X/new" 'echo via-new')" OK
ok "exec/new: the job ran" bash -c "test \"\$(readlink '$X/last')\" = 1 && $(declare -f same job_ends); X='$X' job_ends 1 0 && test \"\$(cat '$X/1/stdout')\" = via-new"
ok "no temp file is left in exec/" same "$(ls -A "$X" | tr '\n' ' ')" "1 last new "

# prompts/: settings the editor's way; the box's image (tiny) has no
# agents, so a text is refused, through a rename as through a write.
P=$B/prompts
mkdir "$P/p"
ok "a prompt's writable files are the ones covered here" \
	covers "$P/p" "agent continue ctl cwd env model text "
ok "prompt cwd: temp file renamed" same "$(tmp_rename "$P/p/cwd" /tmp)" OK
ok "prompt env: temp file renamed" same "$(tmp_rename "$P/p/env" 'A=1')" OK
ok "prompt env: sed -i" bash -c "sed -i 's/1/2/' '$P/p/env' && test \"\$(cat '$P/p/env')\" = A=2"
ok "prompt model: temp file renamed" same "$(tmp_rename "$P/p/model" m1)" OK
ok "prompt agent: temp file renamed, refused (no agents here)" same "$(tmp_rename "$P/p/agent" claude)" EINVAL
ok "prompt continue: temp file renamed, refused (no such prompt)" same "$(tmp_rename "$P/p/continue" zz)" ENOENT
ok "prompt text: temp file renamed, refused (tiny has no agents)" same "$(tmp_rename "$P/p/text" hi)" ENOENT
ok "box prompt: temp file renamed, refused the same way" same "$(tmp_rename "$B/prompt" hi)" ENOENT
ok "the refused ones stay as temp files, which can be removed" \
	bash -c "rm '$P/p/.agent.tmp' '$P/p/.continue.tmp' '$P/p/.text.tmp' '$B/.prompt.tmp'"
ok "no temp file is left in the prompt's directory" same "$(ls -A "$P/p" | grep -c '^\.')" 0
ok "and the prompt has not started" same "$(cat "$P/p/status")" created

mkdir "$X/j"
ok "a job's writable files are the ones covered here" \
	covers "$X/j" "cmd ctl cwd desktop env stdin user "
ok "env: temp file renamed" same "$(tmp_rename "$X/j/env" 'GREETING=hi')" OK
ok "env: sed -i" bash -c "sed -i 's/hi/hello/' '$X/j/env' && test \"\$(cat '$X/j/env')\" = GREETING=hello"
ok "cwd: temp file renamed" same "$(tmp_rename "$X/j/cwd" /tmp)" OK
ok "cwd: sed -i" bash -c "sed -i 's|/tmp|/etc|' '$X/j/cwd' && test \"\$(cat '$X/j/cwd')\" = /etc"
ok "user: temp file renamed" same "$(tmp_rename "$X/j/user" nobody)" OK
ok "user: sed -i" bash -c "sed -i 's/nobody/root/' '$X/j/user' && test \"\$(cat '$X/j/user')\" = root"
ok "desktop: temp file renamed" same "$(tmp_rename "$X/j/desktop" 1)" OK
ok "desktop: sed -i" bash -c "sed -i 's/1/0/' '$X/j/desktop' && test \"\$(cat '$X/j/desktop')\" = 0"
ok "cmd: temp file renamed starts the job" same "$(tmp_rename "$X/j/cmd" 'echo "$GREETING"; pwd; id -u')" OK
ok "cmd: it ran with env, cwd and user" bash -c "$(declare -f same job_ends); X='$X' job_ends j 0 &&
	test \"\$(cat '$X/j/stdout')\" = \"\$(printf 'hello\n/etc\n0')\""
ok "no temp file is left in the job's directory" same "$(ls -A "$X/j" | grep -c '^\.')" 0
mkdir "$X/c"
echo cat >"$X/c/cmd"
ok "stdin: temp file renamed feeds the process" same "$(tmp_rename "$X/c/stdin" fed)" OK
ok "ctl: temp file renamed (eof)" same "$(tmp_rename "$X/c/ctl" eof)" OK
ok "the job read what was fed and ended" bash -c "$(declare -f same job_ends); X='$X' job_ends c 0 && test \"\$(cat '$X/c/stdout')\" = fed"
mkdir "$X/s"
echo 'sleep 100' >"$X/s/cmd"
wait_for 10 test -s "$X/s/pid"
ok "ctl: temp file renamed (kill)" same "$(tmp_rename "$X/s/ctl" kill)" OK
ok "the job was killed" job_ends s 137

echo before >"$B/root/marker"
ok "snapshot: temp file renamed" same "$(tmp_rename "$B/snapshot" snap-label)" OK
SNAP=$(readlink "$B/snapshots/last")
ok "the snapshot exists, labelled" same "$(cat "$M/snapshots/$SNAP/label" 2>&1)" snap-label
ok "a snapshot's writable file is label" covers "$M/snapshots/$SNAP" "label "
ok "label: sed -i" bash -c "sed -i 's/snap-label/relabelled/' '$M/snapshots/$SNAP/label' &&
	test \"\$(cat '$M/snapshots/$SNAP/label')\" = relabelled"
ok "no temp file is left in the snapshot's directory" same "$(ls -A "$M/snapshots/$SNAP" | grep -c '^\.')" 0
echo after >"$B/root/marker"
ok "restore: temp file renamed" same "$(tmp_rename "$B/restore" "$SNAP")" OK
ok "restore: applied, and the box runs again" bash -c "
	test \"\$(cat '$B/root/marker')\" = before && test \"\$(cat '$B/state')\" = running"
ok "fork: temp file renamed" same "$(tmp_rename "$B/fork" w2)" OK
ok "fork: box w2 exists" same "$(cat "$M/boxes/w2/state")" created

# A volume's import takes an archive: bigger than any control value, so a
# temp of a volume's directory is kept on disk, not in memory.
mkdir "$M/volumes/imp" "$H/src"
head -c 3000000 /dev/urandom >"$H/src/big.bin"
echo small >"$H/src/small.txt"
tar -C "$H/src" -cf "$H/a.tar" .
ok "a volume's writable file is import" covers "$M/volumes/imp" "import "
ok "import: a 3 MB archive as a temp file renamed" same "$(tmp_rename "$M/volumes/imp/import" "@$H/a.tar")" OK
ok "import: the files are in the volume" bash -c "
	cmp '$H/src/big.bin' '$M/volumes/imp/data/big.bin' && test \"\$(cat '$M/volumes/imp/data/small.txt')\" = small"
ok "no temp file is left in the volume's directory" same "$(ls -A "$M/volumes/imp" | grep -c '^\.')" 0
ok "import again: ENOTEMPTY (the volume is not empty)" same "$(tmp_rename "$M/volumes/imp/import" "@$H/a.tar")" ENOTEMPTY
ok "the volume's error says why" grep -q 'import: .*not empty' "$M/volumes/imp/error"
ok "a failed rename leaves the temp file, with its size" same "$(stat -c %s "$M/volumes/imp/.import.tmp")" "$(stat -c %s "$H/a.tar")"
ok "it reads back byte for byte" cmp "$H/a.tar" "$M/volumes/imp/.import.tmp"
ok "and rm removes it" bash -c "rm '$M/volumes/imp/.import.tmp' && test -z \"\$(ls -A '$M/volumes/imp' | grep '^\.')\""
ok "a temp left in a volume's directory goes with the volume" bash -c "
	mkdir '$M/volumes/gone' && echo x > '$M/volumes/gone/.import.tmp' && rmdir '$M/volumes/gone' &&
	mkdir '$M/volumes/gone' && test -z \"\$(ls -A '$M/volumes/gone' | grep '^\.')\""

ok "a bad value renamed over type: EINVAL" same "$(tmp_rename "$B/type" no-such-type)" EINVAL
ok "type is unchanged, the reason is in error" bash -c "
	test \"\$(cat '$B/type')\" = tiny && grep -q 'type: ' '$B/error'"
ok "the temp file stays" test -e "$B/.type.tmp"
rm -f "$B/.type.tmp"

# Where nothing is writable, no temp file is made either.
for d in "" boxes types images/tiny snapshots volumes boxes/w/snapshots tokens; do
	ok "no writable file in /$d, no temp file there (EACCES)" \
		same "$(errno_of "open('$M/$d/.x.tmp', 'w')")" EACCES
done
ok "a job's directory name taken by a temp file in exec/: mkdir is EEXIST" bash -c "
	echo x > '$X/tmpjob' && ! mkdir '$X/tmpjob' 2>/dev/null && rm '$X/tmpjob' && mkdir '$X/tmpjob'"

# --- reads that could never finish --------------------------------------------------------

mkdir "$X/u"
for f in exit stdout stderr output; do
	ok "$f of a job not started: EBUSY at once" same "$(errno_of "open('$X/u/$f').read()")" EBUSY
	ok "$f of a job not started, O_NONBLOCK: EBUSY" \
		same "$(errno_of "os.read(os.open('$X/u/$f', os.O_RDONLY | os.O_NONBLOCK), 10)")" EBUSY
done
ok "the box's error says why" grep -q 'exec/u/output: job u has not started, so output would wait forever: write its command to cmd first' "$B/error"
ok "cat exit says so and ends" bash -c "! timeout 10 cat '$X/u/exit' 2>'$H/err' && grep -q 'busy' '$H/err'"
ok "HTTP GET exit of a job not started: 409 with the reason" bash -c "
	$(declare -f uc); SOCK='$SOCK'
	[ \"\$(uc GET boxes/w/exec/u/exit -m 10 -o '$H/body' -w '%{http_code}')\" = 409 ] &&
	grep -q '\"errno\":\"EBUSY\"' '$H/body' && grep -q 'job u has not started' '$H/body'"
ok "again at once: the same reason" bash -c "
	$(declare -f uc); SOCK='$SOCK'
	[ \"\$(uc GET boxes/w/exec/u/exit -m 10 -o '$H/body' -w '%{http_code}')\" = 409 ] &&
	grep -q 'job u has not started' '$H/body'"
ok "HTTP GET stdout (following) of a job not started: 409 at once" bash -c "
	$(declare -f uc); SOCK='$SOCK'
	[ \"\$(uc GET 'boxes/w/exec/u/stdout?follow=1' -m 10 -o '$H/body' -w '%{http_code}')\" = 409 ] &&
	grep -q 'so stdout would wait forever' '$H/body'"
echo 'sleep 1; echo done' >"$X/u/cmd"
ok "once started, exit waits for the end" bash -c "
	s=\$(date +%s%N); v=\$(timeout 20 cat '$X/u/exit'); e=\$(date +%s%N)
	[ \"\$v\" = 0 ] && [ \$(( (e - s) / 1000000 )) -ge 300 ]"
ok "and stdout has what it wrote" same "$(cat "$X/u/stdout")" done
mkdir "$X/v"
echo 'sleep 1; exit 4' >"$X/v/cmd"
ok "HTTP GET exit of a started job follows it: 200 and the code" bash -c "
	$(declare -f uc); SOCK='$SOCK'
	[ \"\$(uc GET boxes/w/exec/v/exit -m 20 -o '$H/body' -w '%{http_code}')\" = 200 ] &&
	[ \"\$(cat '$H/body')\" = 4 ]"

# --- settings written after cmd ---------------------------------------------------------

mkdir "$X/late"
echo 'GREETING=early' >"$X/late/env"
echo 'sleep 30' >"$X/late/cmd"
declare -A value=([env]=A=1 [cwd]=/ [user]=root [desktop]=1)
for f in env cwd user desktop; do
	ok "$f after cmd: EBUSY" write_expect EBUSY "$X/late/$f" "${value[$f]}"
	ok "$f after cmd: the reason says to write it before cmd" \
		grep -q "exec/late/$f: job late has started (cmd was written): write env, cwd, user and desktop before cmd; $f is not changed (EBUSY)" "$B/error"
done
ok "env is unchanged" same "$(cat "$X/late/env")" GREETING=early
ok "env after cmd as a temp file renamed: EBUSY" same "$(tmp_rename "$X/late/env" A=1)" EBUSY
ok "the temp file stays" test -e "$X/late/.env.tmp"
rm -f "$X/late/.env.tmp"
ok "HTTP PUT cwd after cmd: 409 with the reason" bash -c "
	$(declare -f uc); SOCK='$SOCK'
	[ \"\$(uc PUT boxes/w/exec/late/cwd --data-binary / -o '$H/body' -w '%{http_code}')\" = 409 ] &&
	grep -q 'write env, cwd, user and desktop before cmd' '$H/body'"
echo kill >"$X/late/ctl"

rmdir "$M/boxes/w2"
pd_done
