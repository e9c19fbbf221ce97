#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# Build tdb's Debian binary packages (debian/) into a directory:
#
#   scripts/build-packages.sh [--nocheck] [OUTDIR]
#
# OUTDIR (default build-deb/) gets tdbd_*.deb, libtdbclient1_*.deb,
# libtdbclient-dev_*.deb, tdbd-tools_*.deb (and the -dbgsym ones, the
# .buildinfo and .changes).  The build runs in a copy of the tree in a
# temporary directory (dpkg-buildpackage -us -uc -b there), so the work
# tree gets no debian/build, debian/tmp or ../*.deb.  --nocheck skips
# the test suite (DEB_BUILD_OPTIONS=nocheck; it is long and reserves
# hugepages as root); without it DEB_BUILD_OPTIONS is used as given.
#
# Needs the build dependencies of debian/control: as root,
# `apt-get build-dep ./` installs them (scripts/ci-packages.sh does).
set -eu
cd "$(dirname "$0")/.."
top=$(pwd)

nocheck=
case "${1:-}" in
--nocheck) nocheck=1; shift ;;
-h|--help) sed -n '2,16s/^# \{0,1\}//p' "$0"; exit 0 ;;
-*) echo "build-packages: unknown option $1" >&2; exit 2 ;;
esac
out=${1:-build-deb}

for tool in dpkg-buildpackage dpkg-parsechangelog dh; do
	command -v "$tool" >/dev/null 2>&1 || {
		echo "build-packages: $tool missing: apt-get install dpkg-dev debhelper" \
		     "(or, as root, apt-get build-dep ./)" >&2
		exit 1
	}
done

# The package's version is debian/changelog's; it must be meson's.
pkgver=$(dpkg-parsechangelog -S Version)
mesonver=$(sed -n "s/^ *version *: *'\([^']*\)'.*/\1/p" meson.build | head -n 1)
if [ "$pkgver" != "$mesonver" ]; then
	echo "build-packages: debian/changelog says $pkgver, meson.build $mesonver:" \
	     "add a debian/changelog entry for $mesonver" >&2
	exit 1
fi

stage=$(mktemp -d /tmp/tdb-build-packages.XXXXXX)
trap 'rm -rf "$stage"' EXIT INT TERM
src="$stage/tdbd-$pkgver"
mkdir "$src"
# Everything but version control, build directories and what an earlier
# dpkg-buildpackage at the root may have left.
tar -C "$top" -cf - \
	--exclude=./.git --exclude='./build*' --exclude='./obj-*' \
	--exclude=./debian/build --exclude=./debian/tmp \
	--exclude=./debian/.debhelper --exclude=./debian/files \
	--exclude='./debian/*.substvars' --exclude='./debian/*.debhelper' \
	--exclude='./debian/*.debhelper.log' \
	--exclude=./debian/debhelper-build-stamp \
	--exclude=./debian/tdbd --exclude=./debian/tdbd-tools \
	--exclude=./debian/libtdbclient1 --exclude=./debian/libtdbclient-dev \
	. | tar -C "$src" -xf -

if [ -n "$nocheck" ]; then
	DEB_BUILD_OPTIONS="nocheck ${DEB_BUILD_OPTIONS:-}"
	DEB_BUILD_PROFILES="nocheck ${DEB_BUILD_PROFILES:-}"
	export DEB_BUILD_OPTIONS DEB_BUILD_PROFILES
fi
echo "build-packages: building tdbd $pkgver in $src" \
     "(DEB_BUILD_OPTIONS=${DEB_BUILD_OPTIONS:-})"
(cd "$src" && dpkg-buildpackage -us -uc -b -jauto)

mkdir -p "$out"
rm -f "$out"/*.deb "$out"/*.buildinfo "$out"/*.changes
for f in "$stage"/*.deb "$stage"/*.ddeb "$stage"/*.buildinfo "$stage"/*.changes; do
	[ -e "$f" ] && mv "$f" "$out"/
done
echo "build-packages: packages in $out:"
for f in "$out"/*.deb; do
	printf '  %-44s %s\n' "$(basename "$f")" \
		"$(dpkg-deb -f "$f" Installed-Size) KiB installed"
done
