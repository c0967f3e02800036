#!/bin/bash
# The Python SDK (sdk/python) against a real daemon over HTTP with a token:
# the wheel is built with Debian's tools (python3 -m build --wheel
# --no-isolation), installed into a directory of the test's own, and
# sdk/python/tests/ is run by pytest against it (never the source tree);
# each pytest test is one TAP line. Boxes: debian (the seed's first test,
# the README's examples) and tiny (the rest, quicker).
. "$(dirname "$0")/lib.sh"
require_root
# Debian's python3 (its pytest, build, setuptools, wheel), whatever else is first in PATH.
PY=${PD_PYTHON:-/usr/bin/python3}
[ -x "$PY" ] || PY=python3
"$PY" -c 'import pytest, build, setuptools, wheel' 2>/dev/null ||
	skip_all "python3-pytest, python3-build, python3-setuptools or python3-wheel is missing"

SDK=$TOP_SRCDIR/sdk/python
[ -f "$SDK/pyproject.toml" ] || skip_all "no sdk/python in this source tree"

pd_use_debian
pd_setup || exit 1
# tiny beside debian (built in under a second).
"$MKIMAGE" --config "$PD_TMP/paddock.ini" tiny >"$PD_TMP/mkimage.log" 2>&1 ||
	{ diag "the tiny image does not build"; sed 's/^/# /' "$PD_TMP/mkimage.log"; exit 1; }
# The local socket too (unix:PATH, no token).
SOCK=$PD_TMP/run/paddock.sock
sed -i "s|^\[paddock\]$|[paddock]\nsocket = $SOCK|" "$PD_TMP/paddock.ini"
pd_start
pd_owner || { diag "no owner token"; exit 1; }

# Built from a copy: the build leaves build/ and *.egg-info behind it.
cp -r "$SDK" "$PD_TMP/sdk-src"
rm -rf "$PD_TMP/sdk-src/build" "$PD_TMP/sdk-src"/*.egg-info
ok "the wheel builds (python3 -m build --wheel --no-isolation)" bash -c "
	cd '$PD_TMP/sdk-src' &&
	'$PY' -m build --wheel --no-isolation -o '$PD_TMP/dist' >'$PD_TMP/build.log' 2>&1 ||
	{ sed 's/^/# /' '$PD_TMP/build.log'; exit 1; }"
WHEEL=$(ls "$PD_TMP"/dist/paddock_sdk-0.1.0-*.whl 2>/dev/null | head -n1)
ok "it is paddock_sdk-0.1.0, with py.typed, for any Python 3" bash -c "
	test -n '$WHEEL' && case '$WHEEL' in *-py3-none-any.whl) ;; *) exit 1 ;; esac &&
	'$PY' -m zipfile -l '$WHEEL' | grep 'paddock/py.typed' >/dev/null"
mkdir -p "$PD_TMP/site"
"$PY" -m zipfile -e "$WHEEL" "$PD_TMP/site"

# The tests and the README run from copies, away from the source tree.
cp -r "$SDK/tests" "$PD_TMP/sdk-tests"
cp "$SDK/README.md" "$PD_TMP/sdk-tests/README.md"
export PADDOCK_URL=$PD_URL PADDOCK_TOKEN=$PD_TOKEN PD_PASSWORD
export PADDOCK_CONFIG=$PD_TMP/no-config.ini
export PD_SDK_README=$PD_TMP/sdk-tests/README.md PD_SDK_SOCKET=$SOCK
export PYTHONPATH=$PD_TMP/site PYTHONDONTWRITEBYTECODE=1
ok "the SDK is imported from the wheel" same "$(cd "$PD_TMP" && "$PY" -c 'import paddock; print(paddock.__file__)')" \
	"$PD_TMP/site/paddock/__init__.py"

# Their temporary files (a 100 MB one, the README's mkdtemp()s) go into
# the test's own directory, removed at the end.
mkdir -p "$PD_TMP/tmp"
(cd "$PD_TMP/sdk-tests" && TMPDIR=$PD_TMP/tmp timeout 600 "$PY" -m pytest -p no:cacheprovider \
	-q -rfEs --basetemp="$PD_TMP/pytest" --junitxml="$PD_TMP/junit.xml" . \
	>"$PD_TMP/pytest.log" 2>&1)
rc=$?
# One TAP line per pytest test.
while IFS=$'\t' read -r status name; do
	if [ "$status" = pass ]; then
		ok "pytest: $name" true
	elif [ "$status" = skip ]; then
		pd_n=$((pd_n + 1))
		echo "ok $pd_n - pytest: $name # SKIP"
	else
		ok "pytest: $name" false
	fi
done < <(python3 - "$PD_TMP/junit.xml" <<'PY'
import sys, xml.etree.ElementTree as ET
try:
    root = ET.parse(sys.argv[1]).getroot()
except Exception:
    sys.exit(0)
for tc in root.iter("testcase"):
    name = "%s::%s" % (tc.get("classname", "").rsplit(".", 1)[-1], tc.get("name"))
    if tc.find("failure") is not None or tc.find("error") is not None:
        status = "fail"
    elif tc.find("skipped") is not None:
        status = "skip"
    else:
        status = "pass"
    print("%s\t%s" % (status, name))
PY
)
ok "pytest ran and passed" same "$rc" 0
# pytest's account of the failures (then its summary).
[ "$rc" = 0 ] || sed -n '/= FAILURES =/,$p' "$PD_TMP/pytest.log" | grep -v '^$' | head -n 300 | sed 's/^/# /'

# The benchmark's program (tests/bench calls it) on a box of its own.
B=$("$PY" -c 'import paddock; print(paddock.Box.create(type="tiny", image="tiny", ttl=600).name)')
ok "bench/run_true.py BOX 5 prints a median and a mean" bash -c "
	'$PY' '$SDK/bench/run_true.py' '$B' 5 >'$PD_TMP/bench.out' 2>&1 &&
	grep -Eq '^commands.run\(\"true\"\), 5 calls: median [0-9.]+ ms, mean [0-9.]+ ms' '$PD_TMP/bench.out' ||
	{ sed 's/^/# /' '$PD_TMP/bench.out'; exit 1; }"
diag "$(cat "$PD_TMP/bench.out")"
pd_done
