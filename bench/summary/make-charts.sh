#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# make-charts.sh - the per-area charts of docs/BENCHMARKS.md's summary,
# from the CSV files the benchmarks write with --csv (bench/common/csv.h;
# tdb-bench-ring's own columns for rings.csv):
#   bench/summary/make-charts.sh [DATA_DIR [OUT_DIR]]
# DATA_DIR (default bench/summary/data) holds engine.csv (tdb-bench-engine),
# rings.csv (tdb-bench-ring), daemon.csv (tdb-bench), durability.csv
# (tdb-bench-durable) and kernel.csv (tdb-bench-kdev, or copied: its
# header says); OUT_DIR (default docs/images) gets bench-AREA.png for each
# file present.  ycsb.csv (tdb-bench-ycsb's --csv files of the workloads
# and process counts, one after the other) gets bench-ycsb.png instead:
# a panel per workload, each system's run-phase throughput with 1 and 8
# processes (ycsb.gp).  Each chart is a bar per ratio tdb/peer (> 1: tdb is
# better), titled with the area and the CSV's "# date" and "# machine"
# lines; log scale where the ratios span a decade or more.  Needs gnuplot
# with pngcairo (Debian gnuplot-nox, scripts/install-deps.sh bench).
# Exit status: 0; 1 an error; 2 usage.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
data=${1:-$here/data}
out=${2:-$here/../../docs/images}
[ $# -le 2 ] || { echo "usage: $0 [DATA_DIR [OUT_DIR]]" >&2; exit 2; }
[ -d "$data" ] || { echo "$0: no directory $data" >&2; exit 1; }
command -v gnuplot >/dev/null || { echo "$0: gnuplot missing" >&2; exit 1; }
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The common columns (csv.h) checked, then awk program $2 on the rows.
COLUMNS="area,system,peer,operation,param,value,unit,ratio"

# rows AREA FILE: label,ratio lines of the area's chart on stdout.
rows() {
	case $1 in
	engine)	# every phase: tdb's call against LMDB's
		awk -F, '!/^#/ && $1 == "engine" && $8 != "" {
			printf "%s vs %s,%s\n", $4, $5, $8 }' "$2" ;;
	daemon)	# tdb (libtdbclient, mapped reads): batch 1 vs LMDB and
		# Redis one at a time, batch > 1 vs LMDB and Redis pipelined
		awk -F, '!/^#/ && $1 == "daemon" && $2 == "tdb" && $8 != "" {
			split($5, p, " "); b = p[4]
			if (b == 1 && $3 == "Redis pipelined") next
			if (b > 1 && $3 == "Redis") next
			split($4, o, " ")
			printf "%s %s vs %s,%s\n", o[1], $5, $3, $8 }' "$2" ;;
	durability)
		awk -F, '!/^#/ && $1 == "durability" && $8 != "" {
			sub(/^put sync /, "", $4); sub(/:.*/, "", $4)
			printf "sync %s %s vs LMDB synced,%s\n", $4, $5, $8
		}' "$2" ;;
	kernel)	# tdb.ko against tdbd (its header says where it came from)
		awk -F, '!/^#/ && $1 == "kernel" && $8 != "" {
			printf "%s: %s %s vs %s,%s\n", $2, $4, $5, $3, $8
		}' "$2" ;;
	rings)	# tdb-bench-ring's matrix: rings vs netlink at 64 B and
		# 1 KiB, 1 and 10 receivers; ping-pong p50 vs netlink busy-poll
		awk -F, '
		$1 == "tput" { d[$2 "," $3 "," $4] = $8 }
		$1 == "pingpong" { pp[$3] = $6 }
		END {
			n = split("1,64 1,1024 10,64 10,1024", c, " ")
			for (i = 1; i <= n; i++) {
				split(c[i], rs, ",")
				r = rs[1]; s = rs[2]
				if (d[c[i] ",copy"] && d[c[i] ",nlu"])
					printf "SPSC x%s %s B vs netlink unicast,%.4g\n",
					    r, s, d[c[i] ",copy"] / d[c[i] ",nlu"]
				if (d[c[i] ",feed"] && d[c[i] ",nlm"])
					printf "FEED x%s %s B vs netlink multicast,%.4g\n",
					    r, s, d[c[i] ",feed"] / d[c[i] ",nlm"]
			}
			if (pp["ring-spin"] && pp["nl-busy"])
				printf "ping-pong p50 vs netlink busy-poll,%.4g\n",
				    pp["nl-busy"] / pp["ring-spin"]
			if (pp["ring-sleep"] && pp["nl"])
				printf "ping-pong p50 sleeping vs netlink,%.4g\n",
				    pp["nl"] / pp["ring-sleep"]
		}' "$2" ;;
	esac
}

title() {
	case $1 in
	engine)	echo "engine: tdb vs LMDB in one process (tdb-bench-engine)" ;;
	rings)	echo "rings: shared rings vs netlink between processes (tdb-bench-ring)" ;;
	daemon)	echo "through tdbd: libtdbclient vs LMDB and Redis (tdb-bench)" ;;
	durability) echo "durability: tdbd --sync vs LMDB full sync (tdb-bench-durable)" ;;
	kernel)	echo "kernel: tdb.ko's map vs its rings, tdb.ko vs tdbd (qemu TCG)" ;;
	esac
}

made=0
for area in engine rings daemon durability kernel; do
	f=$data/$area.csv
	[ -f "$f" ] || { echo "$0: no $f, no $area chart" >&2; continue; }
	if [ "$area" != rings ] &&
	   [ "$(grep -v '^#' "$f" | head -n 1)" != "$COLUMNS" ]; then
		echo "$0: $f: the column line is not $COLUMNS" >&2
		exit 1
	fi
	rows "$area" "$f" > "$tmp/$area.rows"
	[ -s "$tmp/$area.rows" ] || {
		echo "$0: $f: no ratios to chart" >&2; exit 1; }
	log=$(awk -F, 'NR == 1 { lo = hi = 1 }
		{ if ($2 < lo) lo = $2; if ($2 > hi) hi = $2 }
		END { print (hi / lo >= 10) ? 1 : 0 }' "$tmp/$area.rows")
	date=$(sed -n 's/^# date: //p' "$f" | head -n 1)
	machine=$(sed -n 's/^# machine: //p' "$f" | head -n 1)
	source=$(sed -n 's/^# source: //p' "$f" | head -n 1)
	sub=$(printf '%s; %s' "${date:-undated}" \
		"${machine:-machine not recorded}" | cut -c 1-120)
	[ -z "$source" ] || sub=$(printf '%s\n%s' "$sub" \
		"$(printf '%s' "$source" | cut -c 1-120)")
	gnuplot -c "$here/area.gp" "$tmp/$area.rows" "$out/bench-$area.png" \
		"$(title "$area")" "$sub" "$log"
	echo "$out/bench-$area.png"
	made=$((made + 1))
done

# YCSB: absolute throughput, not ratios.  Rows "ycsb,SYSTEM,,workloadX
# run,PROCS,OPS,ops/s," (no peer: a system's own figure) become
# "X SYSTEM OPS_1 OPS_8" in the systems' first-seen order.
f=$data/ycsb.csv
if [ -f "$f" ]; then
	awk -F, '!/^#/ && $1 == "ycsb" && $3 == "" && $4 ~ / run$/ &&
		($5 == 1 || $5 == 8) {
		w = $4; sub(/ run$/, "", w); sub(/^workload/, "", w)
		w = toupper(w); k = w " " $2
		if (!(k in seen)) { seen[k] = 1; order[++n] = k }
		ops[k, $5] = $6
	}
	END {
		for (i = 1; i <= n; i++) {
			k = order[i]
			printf "%s %s %s\n", k,
			    (k SUBSEP 1) in ops ? ops[k, 1] : "-",
			    (k SUBSEP 8) in ops ? ops[k, 8] : "-"
		}
	}' "$f" > "$tmp/ycsb.rows"
	[ -s "$tmp/ycsb.rows" ] || {
		echo "$0: $f: no run-phase rows to chart" >&2; exit 1; }
	wls=$(cut -d' ' -f1 "$tmp/ycsb.rows" | sort -u | tr '\n' ' ')
	date=$(sed -n 's/^# date: //p' "$f" | head -n 1)
	machine=$(sed -n 's/^# machine: //p' "$f" | head -n 1)
	sub=$(printf '%s; %s' "${date:-undated}" \
		"${machine:-machine not recorded}" | cut -c 1-120)
	gnuplot -c "$here/ycsb.gp" "$tmp/ycsb.rows" "$out/bench-ycsb.png" \
		"$sub" "$wls"
	echo "$out/bench-ycsb.png"
	made=$((made + 1))
fi
[ "$made" -gt 0 ] || { echo "$0: no CSV in $data" >&2; exit 1; }
