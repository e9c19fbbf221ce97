# SPDX-License-Identifier: GPL-2.0-only
# plot.gp - the headline ratios of docs/BENCHMARKS.md's summary as a PNG
# (gnuplot, Debian gnuplot-nox):
#   gnuplot -c bench/summary/plot.gp bench/summary/ratios.csv \
#       docs/images/summary.png
# ratios.csv: area,label,ratio,section; each ratio is copied from the
# section of BENCHMARKS.md it names (tdb's figure over the peer's, > 1:
# tdb is faster), none is measured here.  One panel per area; each bar
# runs from 1 (as fast as the peer) to the ratio, on a log scale: green
# where tdb is faster, red where slower.
if (ARGC < 2) { print "usage: gnuplot -c plot.gp RATIOS.csv OUT.png"; exit }
csv = ARG1
set datafile separator ","
set terminal pngcairo size 1500,1000 font ",10" noenhanced
set output ARG2
areas = "engine pool rings tdbd durability kernel"
titles = "engine_vs_LMDB_(§1) scratch_pool_vs_allocators_(§2) rings_vs_sockets_(§3) through_tdbd_(§10) durable_puts_(§10) tdb.ko_vs_tdbd,_under_TCG_(§6)"
title(i) = system(sprintf("echo '%s' | cut -d' ' -f%d | tr _ ' '", titles, i))
rows(a) = sprintf("< awk -F, '$1 == \"%s\"' %s", a, csv)
set multiplot layout 3,2 title "tdb against its peers: headline ratios (tdb / peer; > 1 is faster), docs/BENCHMARKS.md" font ",13"
set logscale x
set xrange [0.5:200]
set xtics ("0.5x" 0.5, "1x" 1, "2x" 2, "5x" 5, "10x" 10, "20x" 20, "50x" 50, "100x" 100, "200x" 200)
set grid xtics
set style fill solid 0.8 noborder
set lmargin 38
unset key
set arrow 1 from 1, graph 0 to 1, graph 1 nohead lc rgb "black" lw 1
do for [i = 1:words(areas)] {
	set title title(i)
	set yrange [-0.6:*] reverse
	plot rows(word(areas, i)) using (sqrt($3)):0:(($3 < 1 ? $3 : 1)):(($3 < 1 ? 1 : $3)):($0 - 0.35):($0 + 0.35):($3 < 1 ? 0xd62728 : 0x2ca02c):ytic(2) \
		with boxxyerror lc rgb variable, \
	     rows(word(areas, i)) using (($3 < 1 ? 1 : $3) * 1.08):0:(strcol(3) . "x") \
		with labels left font ",9"
}
unset multiplot
