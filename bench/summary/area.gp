# SPDX-License-Identifier: GPL-2.0-only
# area.gp - one area's chart for docs/BENCHMARKS.md's summary: a bar per
# ratio (tdb's figure against its peer's, > 1: tdb is better), green
# where tdb is better, red where worse, from 1 (as good as the peer).
# Called by make-charts.sh, which writes the input (label,ratio rows):
#   gnuplot -c area.gp ROWS.csv OUT.png TITLE SUBTITLE LOG
# LOG: 1 for a log scale (the ratios span a decade or more), else 0.
if (ARGC < 5) { print "usage: gnuplot -c area.gp ROWS.csv OUT.png TITLE SUBTITLE LOG"; exit }
set datafile separator ","
stats ARG1 using 2 nooutput
n = STATS_records
hi = STATS_max > 1 ? STATS_max : 1
lo = STATS_min < 1 ? STATS_min : 1
set terminal pngcairo size 1100,(180 + 26 * n) font ",10" noenhanced
set output ARG2
set title ARG3 . "\n" . ARG4 font ",11"
unset key
set style fill solid 0.8 noborder
set grid xtics
set lmargin 44
set yrange [n - 0.4:-0.6]
set ytics scale 0
set xlabel "ratio of the figures (> 1: the first system is better); the CSV says how measured"
if (ARG5 eq "1") {
	set logscale x
	set xrange [lo / 1.5:hi * 3]
	set format x "%gx"
	base = 1
} else {
	set xrange [0:hi * 1.25]
	set format x "%gx"
	base = 0
}
set arrow 1 from 1, graph 0 to 1, graph 1 nohead lc rgb "black" lw 1
left(r) = r < 1 ? (base == 1 ? r : 0) : base
right(r) = r < 1 ? 1 : r
plot ARG1 using ((left($2) + right($2)) / 2):0:(left($2)):(right($2)):($0 - 0.35):($0 + 0.35):($2 < 1 ? 0xd62728 : 0x2ca02c):ytic(1) \
	with boxxyerror lc rgb variable, \
     ARG1 using (right($2) * (base == 1 ? 1.06 : 1) + (base == 1 ? 0 : hi * 0.01)):0:(sprintf("%.2fx", $2)) \
	with labels left font ",9"
