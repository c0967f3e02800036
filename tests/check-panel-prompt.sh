#!/bin/bash
# check-panel-prompt.sh - the panel's prompt rendering (web/panel/
# prompt-render.js) under node's test runner, as TAP. Skips (77 through
# the TAP plan) only when node is missing.
TOP_SRCDIR=${TOP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
export TOP_SRCDIR
command -v node >/dev/null || { echo "1..0 # SKIP needs node"; exit 0; }
exec node --test --test-reporter=tap "$TOP_SRCDIR/tests/panel/prompt-render.test.js"
