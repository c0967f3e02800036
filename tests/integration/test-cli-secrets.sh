#!/bin/bash
# `paddock secret set|ls|rm` against a real daemon over HTTP: the value from
# a pipe or a file (one trailing newline dropped), from a terminal without
# echo, bad names and values refused before anything is sent, ls with the
# set time (text and --json) and never a value, rm, and a box's job that
# gets the value.
. "$(dirname "$0")/lib.sh"
PADDOCK=${PADDOCK:-$TOP_BUILDDIR/cli/paddock}
pd_start
pd_owner || { diag "no owner"; exit 1; }
export PADDOCK_CONFIG=$PD_TMP/cli/config.ini PADDOCK_URL=$PD_URL PADDOCK_TOKEN=$PD_TOKEN
paddock() { "$PADDOCK" "$@"; }
export -f paddock
export PADDOCK

S=$M/secrets
V=cli-value-$RANDOM$RANDOM

ok "secret set reads the value from a pipe" bash -c "echo '$V' | paddock secret set CLI_KEY"
ok "the secret is in the tree" test -e "$S/CLI_KEY"
ok "secret ls lists it with the time it was set" bash -c "
	paddock secret ls | grep -Eq '^CLI_KEY +[0-9-]{10}T[0-9:]{8}Z\$'"
ok "secret ls has a header" same "$(paddock secret ls | head -1 | tr -s ' ')" "NAME SET"
ok "secret ls --json" bash -c "paddock --json secret ls | python3 -c '
import json, sys
v = json.load(sys.stdin)
assert [e[\"name\"] for e in v] == [\"CLI_KEY\"], v
assert v[0][\"set\"].endswith(\"Z\"), v'"
ok "secret ls never prints a value" bash -c "! paddock secret ls | grep -qF '$V' && ! paddock --json secret ls | grep -qF '$V'"

mkdir "$M/boxes/cb"
echo CLI_KEY >"$M/boxes/cb/secrets"
digest() { printf '%s' "$1" | sha256sum | cut -c1-64; }
ok "a job gets the value, its newline dropped" \
	same "$(pd_job cb 'printf %s "$CLI_KEY" | sha256sum | cut -c1-64')" "$(digest "$V")"
printf 'line one\nline two\n\n' >"$PD_TMP/multi"
ok "a file's value keeps its inner newlines (one trailing dropped)" bash -c "paddock secret set CLI_KEY < '$PD_TMP/multi'"
ok "...as the job sees" \
	same "$(pd_job cb 'printf %s "$CLI_KEY" | sha256sum | cut -c1-64')" "$(printf 'line one\nline two\n' | sha256sum | cut -c1-64)"

# From a terminal: the value is read without echo. A pty of the test's own:
# the value is typed once the prompt is there (typed earlier, the
# terminal's own echo, still on, would show it, as for any password prompt).
tty_set() { # tty_set NAME VALUE: prints what the terminal showed
	python3 - "$PADDOCK" "$1" "$2" <<'PY'
import os, pty, sys, time
paddock, name, value = sys.argv[1:4]
pid, fd = pty.fork()
if pid == 0:
    os.execv(paddock, [paddock, "secret", "set", name])
seen = b""
end = time.time() + 20
while b"(not shown): " not in seen and time.time() < end:
    seen += os.read(fd, 4096)
time.sleep(0.2)  # the echo is off once the prompt is out, then the read
os.write(fd, value.encode() + b"\n")
while True:
    try:
        b = os.read(fd, 4096)
    except OSError:
        break
    if not b:
        break
    seen += b
_, status = os.waitpid(pid, 0)
sys.stdout.write(seen.decode(errors="replace"))
sys.exit(os.waitstatus_to_exitcode(status))
PY
}
out=$(tty_set TTY_KEY "tty-$V")
rc=$?
ok "from a terminal: a prompt, and the value set" bash -c "test $rc = 0 && test -e '$S/TTY_KEY' && grep -q 'Value of TTY_KEY' <<<'$out'"
ok "from a terminal: the value is not echoed" bash -c "! grep -qF 'tty-$V' <<<'$out'"
echo TTY_KEY >"$M/boxes/cb/secrets"
ok "...and it is the value typed" \
	same "$(pd_job cb 'printf %s "$TTY_KEY" | sha256sum | cut -c1-64')" "$(digest "tty-$V")"

ok "a bad name is refused before anything is sent (exit 2)" bash -c "
	echo v | paddock secret set 'a-b' 2>'$PD_TMP/err'; test \$? = 2 && grep -q 'invalid secret name' '$PD_TMP/err' && test ! -e '$S/a-b'"
ok "a traversal name is refused" bash -c "echo v | paddock secret set '../x' 2>/dev/null; test \$? = 2"
ok "a value over 64 KiB is refused with a reason (exit 1)" bash -c "
	head -c 65537 /dev/zero | tr '\\0' a | paddock secret set BIG 2>'$PD_TMP/err'; test \$? = 1 &&
	grep -q 'at most 65536 bytes' '$PD_TMP/err' && test ! -e '$S/BIG'"
ok "a value of 64 KiB plus its newline is taken" bash -c "
	{ head -c 65536 /dev/zero | tr '\\0' a; echo; } | paddock secret set BIG && test -e '$S/BIG'"
ok "a NUL in the value is refused" bash -c "printf 'a\\0b' | paddock secret set NULV 2>/dev/null; test \$? = 1 && test ! -e '$S/NULV'"
ok "secret rm removes it" bash -c "paddock secret rm BIG && test ! -e '$S/BIG'"
ok "secret rm of a missing one fails with the reason" bash -c "
	paddock secret rm BIG 2>'$PD_TMP/err'; test \$? = 1 && grep -q 'paddock: ' '$PD_TMP/err'"
ok "a wrong token cannot list them" bash -c "! PADDOCK_TOKEN=wrong paddock secret ls >/dev/null 2>&1"
ok "the CLI's own command line never held a value (it reads stdin)" bash -c "! grep -rqF '$V' '$PD_TMP/paddockd.log'"

pd_done
