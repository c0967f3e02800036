#!/bin/bash
# The seed workflow through the tree alone, in a real debian box: a Node
# project with a zero-dependency `node --test` suite is copied into
# root/config/project with cp -a and tested with `npm test` as a job.
. "$(dirname "$0")/lib.sh"
require_root

pd_use_debian
pd_start

B=$M/boxes/seed
mkdir "$B"
ok "the box uses the debian image" same "$(cat "$B/image")" debian

proj=$PD_TMP/project
pd_node_project "$proj"

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
