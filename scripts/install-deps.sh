#!/bin/sh
# Install every Debian 12 package tdb needs to build, test and benchmark.
# Run as root.  Safe to run again.
set -eu
PKGS="build-essential g++ meson ninja-build pkg-config
      libxxhash-dev liburcu-dev libcmocka-dev liblmdb-dev lmdb-utils
      libmnl-dev libsystemd-dev
      libglib2.0-dev libboost-dev libapr1-dev
      binutils procps
      gnuplot-nox"
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
