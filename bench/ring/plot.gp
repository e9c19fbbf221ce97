# SPDX-License-Identifier: GPL-2.0-only
# plot.gp - the tdb-bench-ring matrix as a PNG (gnuplot, Debian gnuplot-nox):
#   tdb-bench-ring --csv ring.csv
#   gnuplot -c bench/ring/plot.gp ring.csv ring.png
# docs/BENCHMARKS.md section 3 shows docs/images/ring-matrix.png, made from
# bench/ring/matrix.csv.  One panel per receiver count: delivered
# messages/s (medians, log scale) against the message size, one line per
# transport, each its own colour (gnuplot's default cycle has 8, so with
# 10 lines two pairs shared one); the sendmmsg variants dashed.
if (ARGC < 2) { print "usage: gnuplot -c plot.gp RESULTS.csv OUT.png"; exit }
csv = ARG1
set datafile separator ","
set terminal pngcairo size 1500,1050 font ",10"
set output ARG2
keys = "copy feed copy1 feed1 nlu nlm unix nlu-mm nlm-mm unix-mm"
names = "ring_SPSC_copies,_batch ring_FEED,_batch ring_SPSC,_publish/msg ring_FEED,_publish/msg netlink_unicast netlink_multicast AF_UNIX_seqpacket netlink_unicast,_sendmmsg netlink_multicast,_sendmmsg AF_UNIX,_sendmmsg"
colors = "#1f77b4 #d62728 #2ca02c #9467bd #ff7f0e #8c564b #e377c2 #17becf #7f7f7f #bcbd22"
name(i) = system(sprintf("echo '%s' | cut -d' ' -f%d | tr _ ' '", names, i))
# the rows of one receiver count and transport, in size order
rows(n, t) = sprintf("< awk -F, '$1 == \"tput\" && $2 == %s && $4 == \"%s\"' %s | sort -t, -k3n", n, t, csv)
set multiplot layout 2,2 title "tdb-bench-ring: messages delivered per second (all receivers together), medians" font ",13"
set logscale xy
set xrange [48:5500]
set yrange [100000:200000000]
set xtics ("64" 64, "128" 128, "512" 512, "1K" 1024, "4K" 4096)
set format y "%.0s%c"
set xlabel "message size, bytes"
set ylabel "delivered/s"
set grid
set key inside right top font ",8" spacing 0.9
do for [n in "1 2 4 10"] {
	set title sprintf("%s receiver%s", n, n eq "1" ? "" : "s")
	plot for [i = 1:words(keys)] rows(n, word(keys, i)) using 3:8 \
		with linespoints lw 2 lc rgb word(colors, i) \
		dt 1 + (i > 7) pt (i <= 4 ? 7 : i <= 7 ? 5 : 4) \
		title name(i)
}
unset multiplot
