#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# ycsb-smoke.sh - test bench-ycsb-smoke: tdb-bench-ycsb on workloads A-F
# at recordcount 2000, operationcount 4000, 2 client processes, every
# system built in.  --strict: a system that fails or returns a wrong
# record fails the test (exit 1), a missing one skips it (77, e.g. no
# redis-server).  Then each table must carry every system's row with
# figures and tdb's ratio lines.
# Usage: ycsb-smoke.sh TDB-BENCH-YCSB TDBD WORKLOADS-DIR
bin=$1
tdbd=$2
wl=$3
fail() {
	echo "ycsb-smoke: $*" >&2
	exit 1
}
for w in a b c d e f; do
	out=$("$bin" -P "$wl/workload$w" -p recordcount=2000 \
		-p operationcount=4000 -threads 2 --strict --tdbd "$tdbd")
	rc=$?
	printf '%s\n' "$out"
	[ "$rc" -eq 0 ] || exit "$rc"
	printf '%s\n' "$out" | grep -Eq "^tdb +2 +[0-9]+ +[0-9]+ " ||
		fail "workload$w: no tdb row with figures"
	printf '%s\n' "$out" | grep -Eq "^LMDB +2 +[0-9]+ +[0-9]+ " ||
		fail "workload$w: no LMDB row with figures"
	printf '%s\n' "$out" | grep -Eq "^ratio tdb/LMDB +2 +[0-9.]+x +[0-9.]+x" ||
		fail "workload$w: no tdb/LMDB ratio line"
done
echo "ycsb-smoke: workloads A-F ran on every system with zero errors"
