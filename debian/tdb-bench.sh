#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# /usr/bin/tdb-bench (package tdbd-tools): the benchmark proper is
# /usr/libexec/tdbd/tdb-bench.  It starts a tdbd of its own: by default
# the one installed here (--tdbd PATH or $TDBD choose another).
TDBD=${TDBD:-/usr/sbin/tdbd}
export TDBD
exec /usr/libexec/tdbd/tdb-bench "$@"
