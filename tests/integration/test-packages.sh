#!/bin/bash
# test-packages.sh - the release: the tarball holds every file git tracks,
# the amd64 packages build from it and are lintian clean
# (scripts/build-release), and they install, upgrade, are removed and
# purged cleanly in a Debian 12 chroot made with mmdebstrap from the
# host's mirror.
#
# The packages are built into tests/packages-cache/out unless
# PD_PACKAGES_DIR names a directory holding ones built earlier
# (build-release's OUTDIR). The chroot's tarball is cached in
# tests/packages-cache/ (made once; remade when the packages' dependencies
# change). Services never start in the chroot (policy-rc.d), and every
# command runs in a mount namespace of its own, so no mount outlives it.
. "$(dirname "$0")/lib.sh"

[ "$(id -u)" = 0 ] || skip_all "needs root"
for c in dpkg-buildpackage dh lintian mmdebstrap unshare; do
	command -v $c >/dev/null || skip_all "needs $c (scripts/install-deps)"
done

cache=$TOP_BUILDDIR/tests/packages-cache
mkdir -p "$cache"
work=$(mktemp -d "$cache/run.XXXXXX")
root=$work/root
cleanup() {
	local rc=$?
	# Nothing is mounted under $root outside the commands' namespaces; the
	# check is for a command that escaped them.
	if grep -qF -e " ${root}/" -e " ${root} " /proc/self/mountinfo; then
		diag "mounts left under the chroot; detaching them"
		awk -v r="$root" '$5 == r || index($5, r "/") == 1 {print $5}' /proc/self/mountinfo |
			sort -r | xargs -r -n1 umount -l
	fi
	rm -rf --one-file-system "$work"
	exit $rc
}
trap cleanup EXIT

# The chroot's commands: /proc and /dev mounted in a namespace that ends
# with the command.
in_root() {
	unshare --mount --propagation private --fork -- sh -c '
		root=$1; shift
		mount -t proc proc "$root/proc" && mount --bind /dev "$root/dev" &&
		exec chroot "$root" "$@"' sh "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C.UTF-8 "$@"
}

# 1. The tarball has everything git tracks (but git's own files).
tarball_complete() {
	local tarball=$1 missing
	git -C "$TOP_SRCDIR" rev-parse --git-dir >/dev/null 2>&1 || {
		diag "not a git checkout: nothing to compare"
		return 0
	}
	missing=$(comm -23 <(git -C "$TOP_SRCDIR" ls-files | grep -vx -e .gitignore -e m4/.keep | sort) \
		<(tar -tzf "$tarball" | sed 's|^[^/]*/||' | sort))
	[ -z "$missing" ] || {
		diag "tracked but not in the tarball (add them to EXTRA_DIST):"
		echo "$missing" | sed 's/^/#   /'
		return 1
	}
}

# 2. The packages.
out=${PD_PACKAGES_DIR:-}
if [ -z "$out" ]; then
	out=$cache/out
	rm -rf "$out"
	start=$(date +%s)
	build_release() {
		"$TOP_SRCDIR/scripts/build-release" --arch amd64 "$out" >"$work/build-release.log" 2>&1 || {
			tail -n 30 "$work/build-release.log" | sed 's/^/# /'
			return 1
		}
		sed 's/^/# /' "$out/build-times-amd64.txt"
	}
	ok "build-release: tarball, amd64 packages, lintian clean, SHA256SUMS" build_release
	diag "build-release took $(($(date +%s) - start)) s"
fi
version=$(sed -n 's/^paddock (\([^)]*\)).*/\1/p;q' "$TOP_SRCDIR/debian/changelog")
deb=$out/paddock_${version}_amd64.deb
cli=$out/paddock-cli_${version}_amd64.deb
tarball=$(ls "$out"/paddock-*.tar.gz 2>/dev/null | head -n1)
if [ ! -f "$deb" ] || [ ! -f "$cli" ] || [ -z "$tarball" ]; then
	ok "the packages and the tarball exist in $out" false
	echo "1..$pd_n"
	exit 1
fi
ok "the tarball holds every tracked file" tarball_complete "$tarball"
ok "SHA256SUMS matches" sh -c 'cd "$1" && sha256sum --quiet -c SHA256SUMS' - "$out"
lintian_clean() {
	mkdir -p "$work/tmp"; TMPDIR=$work/tmp lintian --fail-on error,warning "$out/paddock_${version}_amd64.changes" >"$work/lintian.txt" 2>&1 || {
		grep -v '^running with root' "$work/lintian.txt" | sed 's/^/# /'
		return 1
	}
}
# (build-release ran it already on the packages it built.)
[ -z "${PD_PACKAGES_DIR:-}" ] ||
	ok "lintian clean (or each tag overridden with its reason)" lintian_clean

# The same packages one Debian revision up, for the upgrade: repacked (the
# maintainer scripts and the files dpkg replaces are what is tested; a
# rebuild would give the same contents).
bump() {
	local in=$1 outdeb=$2 d=$work/repack
	rm -rf "$d"
	dpkg-deb -R "$in" "$d" &&
		sed -i -e "s/^Version: .*/Version: $version.1/" \
			-e "s/(= $version)/(= $version.1)/g" "$d/DEBIAN/control" &&
		dpkg-deb --root-owner-group -Zxz -b "$d" "$outdeb" >/dev/null
}
bump_both() {
	bump "$deb" "$work/paddock-up.deb" && bump "$cli" "$work/paddock-cli-up.deb"
}
ok "packages of version $version.1 for the upgrade" bump_both

# 3. The chroot: Debian 12 minbase with the packages' dependencies, from the
# host's mirror (where apt fetches its own packages from), made once.
deps=$( (dpkg-deb -f "$deb" Depends; dpkg-deb -f "$cli" Depends) | tr ',' '\n' |
	sed -e 's/([^)]*)//g' -e 's/|.*//' -e 's/[[:space:]]//g' -e '/^$/d' | sort -u | tr '\n' ',')
mirror=$(apt-get -qq --print-uris download busybox-static 2>/dev/null | head -n1 | cut -d"'" -f2 |
	sed 's|/pool/.*||')
key=$(printf '%s\n' "$deps" "$mirror" | sha256sum | cut -c1-16)
chroot_tar=$cache/chroot-$key.tar
if [ ! -f "$chroot_tar" ]; then
	[ -n "$mirror" ] || skip_all "no Debian mirror in the host's apt sources"
	start=$(date +%s)
	if ! mmdebstrap --quiet --format=tar --variant=minbase --include="${deps%,}" bookworm "$chroot_tar.tmp" \
		"$mirror" >"$work/mmdebstrap.log" 2>&1; then
		tail -n 20 "$work/mmdebstrap.log" | sed 's/^/# /'
		pd_mirror_answers || skip_all "cannot make the chroot (the mirror does not answer)"
		ok "mmdebstrap makes the Debian 12 chroot" false
		echo "1..$pd_n"
		exit 1
	fi
	mv "$chroot_tar.tmp" "$chroot_tar"
	rm -f "$cache"/chroot-*.tar.tmp
	find "$cache" -maxdepth 1 -name 'chroot-*.tar' ! -name "${chroot_tar##*/}" -delete
	diag "made the chroot in $(($(date +%s) - start)) s"
fi
mkdir "$root"
tar -C "$root" -xf "$chroot_tar"
printf '#!/bin/sh\n# No service starts while testing the packages.\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
chmod 0755 "$root/usr/sbin/policy-rc.d"
cp "$deb" "$cli" "$work/paddock-up.deb" "$work/paddock-cli-up.deb" "$root/tmp/"

# What the chroot holds before the packages, to compare after the purge:
# every path but dpkg's and apt's own records, logs, caches and what lives
# in memory on a running system (/run, /tmp: adduser leaves its lock file
# in /run).
snapshot() {
	(cd "$root" && find . -xdev \( -path ./var/lib/dpkg -o -path ./var/log -o -path ./var/cache \
		-o -path ./tmp -o -path ./run -o -path ./proc -o -path ./dev \) -prune -o -print) | sort
}
snapshot >"$work/before"

# 4. Install.
installed() {
	local want=$1 p v
	for p in paddock paddock-cli; do
		v=$(in_root dpkg-query -W -f='${Status} ${Version}' "$p" 2>/dev/null)
		same "$v" "install ok installed $want" || return 1
	done
}
files_in_place() {
	local f
	for f in /usr/sbin/paddockd /usr/sbin/mkimage /usr/libexec/paddock/paddock-init \
		/usr/libexec/paddock/paddock-exec /usr/bin/paddock; do
		[ -x "$root$f" ] || {
			diag "$f missing or not executable"
			return 1
		}
	done
	for f in /usr/share/paddock/agents.ini /usr/share/man/man1/paddock.1.gz \
		/usr/share/man/man8/paddockd.8.gz /usr/share/man/man8/mkimage.8.gz \
		/usr/share/bash-completion/completions/paddock \
		/usr/share/doc/paddock/examples/paddock.ini.example /usr/share/doc/paddock/README.Debian \
		/usr/share/doc/paddock/copyright /usr/share/doc/paddock-cli/copyright; do
		[ -f "$root$f" ] || {
			diag "$f missing"
			return 1
		}
	done
	# paddockd looks for its box helpers where the package put them.
	grep -qa /usr/libexec/paddock "$root/usr/sbin/paddockd" || {
		diag "paddockd does not look in /usr/libexec/paddock"
		return 1
	}
}
versions_run() {
	same "$(in_root paddock --version)" "paddock ${version%-*}" &&
		same "$(in_root paddockd --version)" "paddock ${version%-*}" &&
		in_root mkimage --help >/dev/null
}
group_exists() {
	in_root getent group paddock >/dev/null || {
		diag "no paddock group"
		return 1
	}
}
# One group, a system one (gid below 1000), whatever the upgrades did.
group_is_system() {
	local gid
	group_exists || return 1
	gid=$(in_root getent group paddock | cut -d: -f3)
	[ -n "$gid" ] && [ "$gid" -lt 1000 ] && [ "$(in_root getent group | grep -c '^paddock:')" = 1 ]
}
# No process runs in the chroot (a service a maintainer script started).
no_service_running() {
	local p found=
	for p in /proc/[0-9]*; do
		[ "$(readlink "$p/root" 2>/dev/null)" = "$root" ] && found="$found ${p#/proc/}"
	done
	[ -z "$found" ] || {
		diag "running in the chroot:$found"
		return 1
	}
}

dpkg_i() {
	in_root dpkg -i "$@" >"$work/dpkg.log" 2>&1 || {
		tail -n 20 "$work/dpkg.log" | sed 's/^/# /'
		return 1
	}
}
ok "dpkg -i paddock paddock-cli (dependencies from the chroot only)" \
	dpkg_i "/tmp/${deb##*/}" "/tmp/${cli##*/}"
ok "both installed at $version" installed "$version"
ok "files in place; paddockd looks for its helpers in /usr/libexec/paddock" files_in_place
ok "paddock, paddockd --version and mkimage --help run" versions_run
ok "the paddock group exists, a system group" group_is_system
ok "no service started" no_service_running

# 5. Upgrade, then the same version again.
ok "upgrade to $version.1" dpkg_i /tmp/paddock-up.deb /tmp/paddock-cli-up.deb
ok "both installed at $version.1" installed "$version.1"
ok "files in place after the upgrade" files_in_place
ok "the binaries run after the upgrade" versions_run
ok "still one paddock group after the upgrade" group_is_system
ok "reinstall of $version.1" dpkg_i /tmp/paddock-up.deb /tmp/paddock-cli-up.deb
ok "installed after the reinstall" installed "$version.1"

# 6. Remove, then purge: nothing of the packages is left but the group
# (Debian leaves system groups; README.Debian).
removed() {
	in_root dpkg -r paddock paddock-cli >"$work/dpkg.log" 2>&1 || {
		tail -n 20 "$work/dpkg.log" | sed 's/^/# /'
		return 1
	}
	[ ! -e "$root/usr/sbin/paddockd" ] && [ ! -e "$root/usr/bin/paddock" ]
}
ok "dpkg -r removes the programs" removed
purged() {
	local p s
	in_root dpkg -P paddock paddock-cli >"$work/dpkg.log" 2>&1 || {
		tail -n 20 "$work/dpkg.log" | sed 's/^/# /'
		return 1
	}
	for p in paddock paddock-cli; do
		s=$(in_root dpkg-query -W -f='${Status}' "$p" 2>/dev/null)
		case $s in
		"" | "unknown ok not-installed") ;;
		*)
			diag "$p still known to dpkg: $s"
			return 1
			;;
		esac
	done
}
ok "dpkg -P purges both" purged
# addgroup's backups of the group files (/etc/group-, /etc/gshadow-) are
# the trace of the group that stays.
nothing_left() {
	local extra
	extra=$(comm -13 "$work/before" <(snapshot) | grep -vx -e ./etc/group- -e ./etc/gshadow-)
	[ -z "$extra" ] || {
		diag "left after the purge:"
		echo "$extra" | sed 's/^/#   /'
		return 1
	}
	extra=$(comm -23 "$work/before" <(snapshot))
	[ -z "$extra" ] || {
		diag "gone after the purge (that were there before):"
		echo "$extra" | sed 's/^/#   /'
		return 1
	}
}
ok "nothing left after the purge but the group" nothing_left
ok "the group is kept" group_exists

echo "1..$pd_n"
[ "$pd_failed" -eq 0 ]
