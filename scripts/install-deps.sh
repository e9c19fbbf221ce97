#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# Install the Debian 12 packages tdb needs.  Run as root.  Safe to run
# again.
#   install-deps.sh        everything: build, the whole test suite, the
#                          benchmarks' peers (./run test)
#   install-deps.sh build  only what building tdb and running tdbd and the
#                          CLI need (./run demo): no kernel image, qemu,
#                          clang or Redis
# The build set: the compiler and meson, the libraries tdbd and the
# client link (liburcu, LMDB, libmnl, libsystemd, xxhash) and those the
# tests and benchmarks are built against (cmocka; GLib, APR and Boost's
# headers for the pool benchmark's peers).
# The rest, for `./run test` and the benchmarks:
# lmdb-utils (mdb_stat, mdb_dump in the persistence test), redis (the
# benchmarks' peer), gnuplot-nox (benchmark plots).
# clang + libclang-rt-14-dev: libFuzzer and the sanitizer runtimes for
# tests/fuzz (clang-14 only recommends libclang-rt-14-dev).
# mandoc: the man-lint test of the manual pages (man/).
# The kernel stage (tests/kernel, kmod/): linux-headers-amd64 to build
# tdb.ko, linux-image-amd64 for the kernel qemu boots (its
# /boot/vmlinuz-* and /lib/modules), qemu-system-x86, busybox-static
# and cpio for the guest's initramfs, kmod for modinfo.
# The power-cut test (tests/powercut): nbdkit (the guest's data disk,
# its cache filter in writeback mode), qemu-utils (qemu-io, nbdkit's
# self-check), e2fsprogs (mkfs.ext4 of the disk image).
set -eu
PKGS="build-essential g++ meson ninja-build pkg-config
      libxxhash-dev liburcu-dev libcmocka-dev liblmdb-dev
      libmnl-dev libsystemd-dev
      libglib2.0-dev libboost-dev libapr1-dev"
if [ "${1:-}" != build ]; then
	PKGS="$PKGS lmdb-utils
      binutils procps systemd redis-server redis-tools
      gnuplot-nox
      clang libclang-rt-14-dev
      mandoc
      linux-headers-amd64 linux-image-amd64 qemu-system-x86
      busybox-static cpio kmod
      nbdkit qemu-utils e2fsprogs"
fi
missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
		missing="$missing $p"
done
if [ -n "$missing" ]; then
	if [ "$(id -u)" != 0 ]; then
		echo "install-deps: need root to install:$missing" >&2
		exit 1
	fi
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q
	# shellcheck disable=SC2086
	apt-get install -y -q $missing
fi
