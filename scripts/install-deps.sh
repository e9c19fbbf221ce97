#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# Install the Debian 12 packages tdb needs, by set.  Run as root.  Safe to
# run again; installs only what is missing.
#   install-deps.sh [SET...]      SET: build, test, kernel, bench, all
#                                 (default: all)
#   build   building tdb (tdbd, libtdbclient, the CLI, the tests' and the
#           engine benchmark's binaries) and running tdbd and the CLI:
#           the compiler and meson, liburcu, LMDB, libmnl, libsystemd,
#           xxhash, libedit (the tdb shell's line editing), cmocka; what
#           `./run demo` and `./run bench` install.  No kernel image,
#           qemu, clang or Redis.
#   test    the test suite's tools besides the build: lmdb-utils (mdb_stat,
#           mdb_dump, mdb_load in the persistence and dump tests),
#           binutils (nm in the symbol checks), procps, systemd
#           (systemd-socket-activate), python3 (JSON checks), mandoc
#           (man-lint), clang + libclang-rt-14-dev (libFuzzer and the
#           sanitizer runtimes for tests/fuzz; clang-14 only recommends
#           libclang-rt-14-dev), librdkafka-dev (tdb-kafka and its test
#           `kafka` on librdkafka's mock cluster; without it meson
#           skips both).
#   kernel  tdb.ko and the qemu tests (tests/kernel, tests/powercut):
#           linux-headers-amd64 to build tdb.ko, linux-image-amd64 for the
#           kernel qemu boots (its /boot/vmlinuz-* and /lib/modules),
#           qemu-system-x86, busybox-static and cpio for the guest's
#           initramfs, kmod for modinfo; for the power-cut test nbdkit
#           (the guest's data disk, its cache filter in writeback mode),
#           qemu-utils (qemu-io, nbdkit's self-check), e2fsprogs
#           (mkfs.ext4 of the disk image).
#   bench   the benchmarks' peers: redis-server and redis-tools (tdb-bench
#           against Redis; it starts its own server, so the package's
#           service is stopped and disabled when this installs it),
#           gnuplot-nox (bench/ring/plot.gp, bench/summary/), GLib, APR
#           and Boost's headers (tdb-bench-pool's peers; without them
#           meson skips tdb-bench-pool), librocksdb-dev (tdb-bench-ycsb's
#           RocksDB peer; without it the peer reports itself skipped).
#   all     all of the above: what `./run test` and .ci/run install.
# Packages come with --no-install-recommends: nothing the suite runs comes
# only through a Recommends (issue 30: the all set from an empty dpkg
# status, apt-get -s, is 356 packages so and 688 with recommends; the
# difference is qemu's GUI, audio and video stack, OVMF, qemu-block-extra,
# llvm-14 (clang-14's recommends: its llvm-symbolizer only makes sanitizer
# reports name functions), dbus, apparmor, firmware, fonts, groff,
# manpages).
# A test whose tools are missing is skipped (exit 77), not failed.
set -eu
BUILD="build-essential g++ meson ninja-build pkg-config
      libxxhash-dev liburcu-dev libcmocka-dev liblmdb-dev
      libmnl-dev libsystemd-dev libedit-dev"
TEST="lmdb-utils binutils procps systemd python3 mandoc
      clang libclang-rt-14-dev librdkafka-dev"
KERNEL="linux-headers-amd64 linux-image-amd64 qemu-system-x86
      busybox-static cpio kmod
      nbdkit qemu-utils e2fsprogs"
BENCH="redis-server redis-tools gnuplot-nox
      libglib2.0-dev libboost-dev libapr1-dev librocksdb-dev"

[ $# -gt 0 ] || set -- all
PKGS=
for set in "$@"; do
	case "$set" in
	build)	PKGS="$PKGS $BUILD" ;;
	test)	PKGS="$PKGS $BUILD $TEST" ;;
	kernel)	PKGS="$PKGS $BUILD $KERNEL" ;;
	bench)	PKGS="$PKGS $BUILD $BENCH" ;;
	all)	PKGS="$PKGS $BUILD $TEST $KERNEL $BENCH" ;;
	-h|--help) sed -n '3,/^# A test whose/s/^# \{0,1\}//p' "$0"; exit 0 ;;
	*)	echo "install-deps: unknown set '$set' (build, test, kernel," \
		     "bench, all)" >&2
		exit 2 ;;
	esac
done

missing=""
for p in $PKGS; do
	case " $missing " in *" $p "*) continue ;; esac
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
	apt-get install -y -q --no-install-recommends $missing
	# tdb-bench starts its own redis-server on a Unix socket: the
	# package's system service is not needed, so it is not left running
	# or enabled at boot.
	case " $missing " in *" redis-server "*)
		if command -v systemctl >/dev/null 2>&1; then
			systemctl disable --now redis-server >/dev/null 2>&1 ||
				true
		fi ;;
	esac
fi
