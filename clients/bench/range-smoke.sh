#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# range-smoke.sh - test bench-range-smoke: tdb-bench-range at tiny sizes.
# --strict makes the program fail (exit 1) if a system built in does not
# start, a record it returns is wrong or a ratio cannot be computed (77
# without redis-server); this script then checks that the report has
# every ratio line: ranges per process count and length, the point
# cells, the memory goals.  Usage: range-smoke.sh TDB-BENCH-RANGE TDBD
bin=$1
tdbd=$2
out=$("$bin" --keys 3000 --lens 10,100 --procs 1,2 --runs 1 \
	--budget 2000 --ops 300 --strict --tdbd "$tdbd")
rc=$?
printf '%s\n' "$out"
[ "$rc" -eq 0 ] || exit "$rc"
fail() {
	echo "range-smoke: $*" >&2
	exit 1
}
for p in 1 2; do
	for l in 10 100; do
		for s in "tdb map" "tdb rings" "tdb submit" "engine view"; do
			printf '%s\n' "$out" | grep -Eq \
			  "^ratio +$p +$l +$s +[0-9.]+x +[0-9.]+x( |$)" ||
				fail "no $s range ratio line for $p procs, L $l"
		done
	done
	for op in "get, rings" "get, map" put; do
		printf '%s\n' "$out" | grep -Eq "^ratio +$p +$op .*[0-9.]+x( |$)" ||
			fail "no point ratio line for $p procs, $op"
	done
done
printf '%s\n' "$out" | grep -q "^goal: zero-copy ranges" ||
	fail "no goal line for the zero-copy ranges"
[ "$(printf '%s\n' "$out" | grep -c '^goal: the ordered index')" -eq 2 ] ||
	fail "not two memory goal lines (random and key order)"
echo "range-smoke: every ratio line is there"
