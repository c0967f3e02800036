#!/bin/bash
# The seed workflow through the tree alone, in a real debian box: a Node
# project with a zero-dependency `node --test` suite is copied into
# root/config/project with cp -a and tested with `npm test` as a job.
. "$(dirname "$0")/lib.sh"
require_root

# The debian image takes a minute or two to build: build it once into a
# cache beside the build tree (tests/images-cache) and link it into each run.
cache=${PD_IMAGES:-$TOP_BUILDDIR/tests/images-cache}
if [ ! -d "$cache/debian/rootfs" ]; then
	mkdir -p "$cache"
	printf '[paddock]\ndata = %s\n' "$(dirname "$cache")/images-cache-data" >"$cache.ini"
	mkdir -p "$(dirname "$cache")/images-cache-data"
	if ! "$MKIMAGE" --config "$cache.ini" debian >"$cache.log" 2>&1; then
		tail -n 20 "$cache.log" | sed 's/^/# /'
		skip_all "cannot build the debian image (no Debian mirror?)"
	fi
	rm -rf "$cache"
	ln -s "$(dirname "$cache")/images-cache-data/images" "$cache"
fi
export PD_IMAGES=$cache PD_IMAGE=debian
pd_start

B=$M/boxes/seed
mkdir "$B"
ok "the box uses the debian image" same "$(cat "$B/image")" debian

proj=$PD_TMP/project
mkdir -p "$proj/test"
cat >"$proj/package.json" <<'JSON'
{ "name": "seed", "version": "1.0.0", "private": true,
  "scripts": { "test": "node --test" } }
JSON
cat >"$proj/sum.js" <<'JS'
module.exports = (a, b) => a + b;
JS
cat >"$proj/test/sum.test.js" <<'JS'
const test = require('node:test');
const assert = require('node:assert');
const sum = require('../sum.js');
test('adds', () => assert.strictEqual(sum(2, 3), 5));
test('adds negatives', () => assert.strictEqual(sum(-2, -3), -5));
JS

ok "cp -a the project into root/config/project" cp -a "$proj" "$B/root/config/project"
ok "npm test passes as a job (exit 0)" bash -c "
	echo 'cd /config/project && npm test' > '$B/exec/new' &&
	test \"\$(timeout 120 cat '$B/exec/last/exit')\" = 0"
ok "its output shows the passing tests" bash -c "grep -q '# pass 2' '$B/exec/last/output'"
ok "jobs run as the box user in its home" bash -c "
	echo 'id -un; pwd' > '$B/exec/new' && timeout 30 cat '$B/exec/last/exit' >/dev/null &&
	test \"\$(cat '$B/exec/last/stdout' | tr '\n' ' ')\" = 'box /config '"

# Break a test: the job fails with a non-zero exit.
sed -i 's/sum(2, 3), 5/sum(2, 3), 6/' "$B/root/config/project/test/sum.test.js"
ok "a failing test gives a non-zero exit" bash -c "
	echo 'cd /config/project && npm test' > '$B/exec/new' &&
	e=\$(timeout 120 cat '$B/exec/last/exit') && [ \"\$e\" -ne 0 ]"
ok "and the output says which test failed" bash -c "grep -q '# fail 1' '$B/exec/last/output'"

rmdir "$B"
pd_done
