# SPDX-License-Identifier: GPL-2.0-only
# ycsb.gp - docs/BENCHMARKS.md's YCSB charts: one panel per workload
# (A-F), the run phase's throughput of each system with 1 and with 8
# client processes (gnuplot, Debian gnuplot-nox):
#   gnuplot -c bench/summary/ycsb.gp ROWS OUT.png SUBTITLE
# ROWS: "workload system ops_1 ops_8" lines (ops a second with 1 and
# with 8 processes, "-" where not measured), space separated, made by
# make-charts.sh from tdb-bench-ycsb's --csv (the "X run" rows);
# WORKLOADS: the workloads ROWS has, e.g. "A B C D E F".
if (ARGC < 4) { print "usage: gnuplot -c ycsb.gp ROWS OUT.png SUBTITLE WORKLOADS"; exit }
rows = ARG1
set terminal pngcairo size 1500,900 font ",10" noenhanced
set output ARG2
set multiplot layout 2,3 title "YCSB run phase: operations a second per system, 1 and 8 client processes (tdb-bench-ycsb)\n" . ARG3 font ",12"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 noborder
set boxwidth 0.9
set grid ytics
set format y "%.1s%c"
set yrange [0:*]
set key below horizontal font ",9"
set offsets 0, 0, graph 0.1, 0
set xtics font ",9"
set datafile missing "-"
do for [w in ARG4] {
	set title "workload " . w
	sel = sprintf("< awk '$1 == \"%s\"' %s", w, rows)
	plot sel using 3:xtic(2) title "1 process" lc rgb "#1f77b4", \
	     sel using 4 title "8 processes" lc rgb "#ff7f0e"
}
unset multiplot
