#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# bench_ship.sh - tdb-kafka's figures for docs/BENCHMARKS.md §16, run by
# hand (not a test): librdkafka's mock cluster (kafka_mock) and one tdbd
# (--sync batch) on this machine,
#  1. N operations of kafka_load (one request at a time: single puts and
#     deletes, transactions of 1-6 ops) with no shipper: the writers'
#     time;
#  2. a shipper started on that WAL: the records and messages it ships
#     and the time until all are acknowledged (its status file, written
#     once a second: +-1 s);
#  3. N more operations with the shipper following: the writers' time;
#  4. again without, and 5. again with (the machine is noisy).
#   bench_ship.sh BUILDDIR [N]   (N default 150000)
set -u
B=${1:?usage: bench_ship.sh BUILDDIR [N]}
N=${2:-150000}
D=$(mktemp -d /tmp/tdb-kafka-bench.XXXXXX)
pids=
trap 'for p in $pids; do kill $p 2>/dev/null; done; rm -rf "$D"' EXIT
now() { date +%s.%N; }
secs() { echo "$2 - $1" | bc; }
mkfifo "$D/ctl"
"$B/tests/kafka/kafka_mock" 1 <"$D/ctl" >"$D/mock.out" 2>"$D/mock.err" &
pids="$pids $!"
exec 3>"$D/ctl"
while [ ! -s "$D/mock.out" ]; do sleep 0.1; done
boot=$(head -n1 "$D/mock.out")
: >"$D/e.conf"
mkdir -p "$D/src"
"$B/src/daemon/tdbd" --config "$D/e.conf" --socket "$D/src.sock" \
	--data-dir "$D/src" --sync batch --workers 1 >"$D/src.log" 2>&1 &
pids="$pids $!"
while [ ! -S "$D/src.sock" ]; do sleep 0.05; done
ship() {
	"$B/clients/kafka/tdb-kafka" ship -s "$D/src.sock" -d "$D/src" \
		-S "$D/state" -b "$boot" -X linger.ms=5 >>"$D/ship.log" 2>&1 &
	sp=$!
	pids="$pids $sp"
}
load() {        # SEED WHAT
	t0=$(now)
	"$B/tests/kafka/kafka_load" "$D/src.sock" "$1" "$N" || exit 1
	echo "writers, $2: $N operations in $(secs "$t0" "$(now)") s;" \
	     "loadavg $(cut -d' ' -f1-3 /proc/loadavg)"
}
load 1 "no shipper"
dur=$(TDB_SOCKET="$D/src.sock" "$B/clients/cli/tdb" stats |
      awk '/wal_durable/ { print $2 }')
t0=$(now)
ship
while a=$(awk -F= '/acked_lsn/ { print $2 }' "$D/state/status" 2>/dev/null)
	[ "${a:-0}" -lt "$dur" ]; do
	sleep 0.05
done
echo "ship: $dur records, $(awk -F= '/messages/ { print $2 }' \
      "$D/state/status") messages acknowledged in $(secs "$t0" "$(now)") s" \
     "(+-1 s); loadavg $(cut -d' ' -f1-3 /proc/loadavg)"
load 2 "shipper following"
kill $sp
wait $sp
load 3 "no shipper"
ship
sleep 3
load 4 "shipper following"
