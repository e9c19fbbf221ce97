#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# test-charts.sh - meson test "summary-charts": every committed CSV of
# bench/summary/data has the header make-charts.sh needs (# command,
# # date, # machine; the columns of bench/common/csv.h, or tdb-bench-ring's
# own for rings.csv) and at least one ratio; then make-charts.sh draws the
# five charts (six with ycsb.csv) into OUT_DIR (not docs/images) and each is a PNG.  Exit 77
# (skip) after the header checks when gnuplot is missing.
#   bench/summary/test-charts.sh OUT_DIR
set -eu

here=$(cd "$(dirname "$0")" && pwd)
data=$here/data
out=${1:?usage: test-charts.sh OUT_DIR}
cols="area,system,peer,operation,param,value,unit,ratio"
ring="test,receivers,size,transport,messages,runs,sent_per_s,delivered_per_s"
fail=0

bad() { echo "FAIL: $*"; fail=1; }

for area in engine rings daemon durability kernel; do
	f=$data/$area.csv
	[ -f "$f" ] || { bad "$f missing"; continue; }
	for h in command date machine; do
		grep -q "^# $h: ." "$f" || bad "$f: no '# $h:' line"
	done
	first=$(grep -v '^#' "$f" | head -n 1)
	if [ "$area" = rings ]; then
		case $first in "$ring"*) ;; *) bad "$f: columns '$first'" ;; esac
		grep -q '^tput,' "$f" || bad "$f: no tput rows"
		continue
	fi
	[ "$first" = "$cols" ] || bad "$f: columns '$first', not '$cols'"
	awk -F, -v a="$area" -v f="$f" '
		/^#/ || $1 == "area" { next }
		NF != 8 { print "FAIL: " f ":" NR ": " NF " fields"; bad = 1 }
		$1 != a { print "FAIL: " f ":" NR ": area " $1; bad = 1 }
		$8 != "" { ratios++ }
		END { if (!ratios) { print "FAIL: " f ": no ratio"; bad = 1 }
		      exit bad }' "$f" || fail=1
done
grep -q '^# source: copied' "$data/kernel.csv" ||
	grep -q '^# host:' "$data/kernel.csv" ||
	bad "kernel.csv: neither '# source: copied ...' nor a run's '# host:'"
# ycsb.csv (tdb-bench-ycsb): the same header, run-phase rows to chart
f=$data/ycsb.csv
if [ -f "$f" ]; then
	for h in command date machine; do
		grep -q "^# $h: ." "$f" || bad "$f: no '# $h:' line"
	done
	first=$(grep -v '^#' "$f" | head -n 1)
	[ "$first" = "$cols" ] || bad "$f: columns '$first', not '$cols'"
	grep -q '^ycsb,[^,]*,,workload[a-f] run,[18],' "$f" ||
		bad "$f: no run-phase row of 1 or 8 processes"
fi
[ "$fail" = 0 ] || exit 1
echo "ok: the CSV headers and columns"

command -v gnuplot >/dev/null || { echo "skip: no gnuplot"; exit 77; }
rm -rf "$out"
"$here/make-charts.sh" "$data" "$out"
for area in engine rings daemon durability kernel; do
	p=$out/bench-$area.png
	[ "$(head -c 4 "$p" 2>/dev/null | tail -c 3)" = PNG ] ||
		bad "$p is not a PNG"
done
if [ -f "$data/ycsb.csv" ]; then
	p=$out/bench-ycsb.png
	[ "$(head -c 4 "$p" 2>/dev/null | tail -c 3)" = PNG ] ||
		bad "$p is not a PNG"
fi
[ "$fail" = 0 ] || exit 1
echo "ok: the charts in $out"
