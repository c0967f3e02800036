#!/bin/bash
# root/ (the box's live filesystem, served without the daemon on the data
# path) and TTL (countdown, expiry stops the box, persists across restarts).
. "$(dirname "$0")/lib.sh"
pd_start

B=$M/boxes/f
mkdir "$B"

ok "root is a link to the box's mounted filesystem" test -L "$B/root"
ok "root of a created box shows the image" test -x "$B/root/bin/busybox"
ok "files can be written before the box first starts" bash -c "mkdir -p '$B/root/config/project' && echo early > '$B/root/config/project/a.txt'"
echo running >"$B/state"
ok "a file written before start is there inside" same "$(pd_crun exec f cat /config/project/a.txt)" early
ok "a file written through root/ is visible inside at once" bash -c "
	echo host > '$B/root/tmp/from-host' && test \"\$(pd_crun exec f cat /tmp/from-host)\" = host"
ok "a file written inside is visible in root/ at once" bash -c "
	pd_crun exec f sh -c 'echo box > /tmp/from-box' && test \"\$(cat '$B/root/tmp/from-box')\" = box"
ok "cp -a of a tree into root/ works" bash -c "
	mkdir -p '$PD_TMP/tree/sub' && for i in \$(seq 100); do echo \$i > '$PD_TMP/tree/sub/f'\$i; done &&
	cp -a '$PD_TMP/tree' '$B/root/config/' &&
	test \"\$(pd_crun exec f sh -c 'cat /config/tree/sub/f* | wc -l')\" = 100"
ok "root/ data does not go through the daemon (it is not a FUSE file)" bash -c "
	[ \"\$(stat -f -c %T '$B/root/config/tree/sub/f1')\" != fuseblk ] &&
	[ \"\$(stat -f -c %T '$B/root/config/tree/sub/f1')\" != fuse ]"
echo stopped >"$B/state"
ok "root/ of a stopped box still shows its files" same "$(cat "$B/root/tmp/from-box")" box
ok "and takes writes" bash -c "echo later > '$B/root/tmp/later'"
echo running >"$B/state"
ok "which the box sees when it runs again" same "$(pd_crun exec f cat /tmp/later)" later

# TTL
ok "ttl starts as none" same "$(cat "$B/ttl")" none
ok "expires starts as never" same "$(cat "$B/expires")" never
ok "ttl: garbage is EINVAL" write_expect EINVAL "$B/ttl" "soon"
ok "ttl: negative is EINVAL" write_expect EINVAL "$B/ttl" "-5"
ok "the reason is in error" grep -q "ttl: not a TTL" "$B/error"
ok "ttl unchanged by bad writes" same "$(cat "$B/ttl")" none
ok "ttl takes suffixes" bash -c "echo 2h > '$B/ttl' && [ \$(cat '$B/ttl') -gt 7190 ] && [ \$(cat '$B/ttl') -le 7200 ]"
ok "expires is RFC 3339" grep -Eq '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z$' "$B/expires"
ok "none clears it" bash -c "echo none > '$B/ttl' && test \"\$(cat '$B/ttl')\" = none && test \"\$(cat '$B/expires')\" = never"
echo 2 >"$B/ttl"
ok "ttl counts down" bash -c "v=\$(cat '$B/ttl'); [ \$v -le 2 ] && [ \$v -ge 1 ]"
ok "TTL of 2 s stops the box" wait_for 6 bash -c "test \"\$(cat '$B/state')\" = stopped"
ok "the expiry is an event" bash -c "snap '$B/events' | grep -q ' f expired\$'"
ok "after expiry ttl reads none" same "$(cat "$B/ttl")" none
ok "the box can start again and stays up" bash -c "echo running > '$B/state' && sleep 1.5 && test \"\$(cat '$B/state')\" = running"
ok "writing N restarts the countdown" bash -c "echo 100 > '$B/ttl' && echo 3 > '$B/ttl' && [ \$(cat '$B/ttl') -le 3 ]"
echo none >"$B/ttl"

# A TTL that ran out while the daemon was down fires at start.
echo 1 >"$B/ttl"
pd_stop
sleep 2
ok "the box kept running while the daemon was down" bash -c "crun_list | grep -qx f"
pd_start
ok "a TTL that expired while the daemon was down fires at start" wait_for 5 bash -c "test \"\$(cat '$B/state')\" = stopped"
ok "no container is left" bash -c "! crun_list | grep -qx f"

# default_ttl from the configuration.
pd_stop
sed -i 's/^stop_grace = .*/&\ndefault_ttl = 1h/' "$PD_TMP/paddock.ini"
pd_start
mkdir "$M/boxes/g"
ok "default_ttl applies to new boxes" bash -c "v=\$(cat '$M/boxes/g/ttl'); [ \$v -gt 3590 ] && [ \$v -le 3600 ]"
rmdir "$M/boxes/g" "$B"

pd_done
