#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# test-checker.sh - the power-cut checker (pc_writer check) against a
# tdbd on this host, no qemu: it passes what the writers wrote, and it
# sees each kind of damage run-powercut.sh counts on it to see: an
# acknowledged op missing (lost), a transaction in part (torn), a later
# op kept over a lost earlier one (holes), bytes nobody wrote (bad).
#   test-checker.sh PC_WRITER TDBD TDB_CLI
# Exit 0: all passed; 1: a check failed (each says FAIL); 77: skipped.
set -u

pcw=${1:?usage: test-checker.sh PC_WRITER TDBD TDB_CLI}
tdbd=${2:?}
cli=${3:?}

dir=$(mktemp -d /tmp/tdb-pc-checker.XXXXXX)
sock=$dir/tdbd.sock
pid=
failures=0
cleanup() {
	[ -z "$pid" ] || kill -KILL "$pid" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

: > "$dir/empty.conf"
"$tdbd" --config "$dir/empty.conf" --socket "$sock" \
	--data-dir "$dir/data" --hugepages no > "$dir/tdbd.log" 2>&1 &
pid=$!
i=0
while [ ! -S "$sock" ]; do
	i=$((i + 1))
	kill -0 "$pid" 2>/dev/null && [ $i -lt 200 ] || {
		cat "$dir/tdbd.log"
		echo "FAIL: tdbd did not start" >&2
		exit 1
	}
	sleep 0.1
done

acks=$dir/acks
tdb() { "$cli" --socket "$sock" "$@"; }
# check CYCLE WANT-RC WHAT [field=value...]: run the checker, compare
check() {
	cyc=$1 want=$2 what=$3
	shift 3
	"$pcw" check --socket "$sock" --acks "$acks" --cycle "$cyc" \
		> "$dir/out" 2>&1
	rc=$?
	[ "$rc" = "$want" ] ||
		fail "$what: rc $rc, want $want: $(cat "$dir/out")"
	for kv in "$@"; do
		grep -q "^PCCHECK .* $kv\( \|$\)" "$dir/out" ||
			fail "$what: no $kv in: $(grep '^PCCHECK ' "$dir/out")"
	done
}

# Two cycles of 300 ops per writer, as two boots would leave them.
"$pcw" write --socket "$sock" --acks "$acks" --cycle 0 --ops 300 \
	> /dev/null || fail "writers, cycle 0"
check 1 0 "cycle 0 as written" lost=0 torn=0 holes=0 bad=0 acked=1200
"$pcw" write --socket "$sock" --acks "$acks" --cycle 1 --ops 300 \
	> /dev/null || fail "writers, cycle 1"
check 2 0 "cycles 0-1 as written" lost=0 torn=0 holes=0 bad=0 acked=2400
grep -q '^PCCHECK-X acked=[1-9][0-9]* live=[1-9]' "$dir/out" ||
	fail "no expiring put acknowledged and live: $(grep '^PCCHECK-X' \
	"$dir/out")"
cp "$acks" "$dir/acks.good"
# values of a cycle the checker was not told of are bad
grep '^A [0-9]* 0 ' "$dir/acks.good" > "$acks"
check 1 1 "a cycle not run yet"
grep -q '^PCBAD .*cycle not run yet' "$dir/out" ||
	fail "no value seen from a cycle not run: $(cat "$dir/out")"
cp "$dir/acks.good" "$acks"

# An ack for an op never sent (301 was not run): lost, at the last cycle.
echo "A 0 1 301" >> "$acks"
check 2 1 "an acknowledged op missing" lost=1 lost_last=1 holes=0
cp "$dir/acks.good" "$acks"
# An ack line out of order: the checker cannot check.
echo "A 0 1 305" >> "$acks"
check 2 2 "a gap in the ack log"
cp "$dir/acks.good" "$acks"

# Expiry (table pcx): an acknowledged expiring put still a minute from
# its deadline that is not there is lost; a record whose deadline is not
# the one it was put with is bad.
n=302
while ! "$pcw" xkey 0 1 $n > /dev/null; do n=$((n + 1)); done
echo "X 0 1 $n $(( $(date +%s) * 1000 + 60000 ))" >> "$acks"
check 2 1 "an acknowledged expiring put missing" lost=1
grep -q '^PCCHECK-X .* lost=1 ' "$dir/out" ||
	fail "the missing expiring put not counted: $(cat "$dir/out")"
cp "$dir/acks.good" "$acks"
now=$(( $(date +%s) * 1000 ))
line=$(awk -v now="$now" '$1 == "X" && $5 > now + 4000 { l = $0 } END {
	print l }' "$acks")
if [ -n "$line" ]; then
	set -- $line
	key=$("$pcw" xkey "$2" "$3" "$4")
	tdb expire pcx "$key" --at $(( $5 + 1 )) > /dev/null ||
		fail "tdb expire pcx $key"
	check 2 1 "a deadline changed" bad=1
	grep -q "^PCBAD pcx $key: its deadline is not" "$dir/out" ||
		fail "the changed deadline not seen: $(cat "$dir/out")"
	tdb expire pcx "$key" --at "$5" > /dev/null || fail "tdb expire back"
else
	echo "test-checker: no expiring put 4 s from its deadline left;" \
	     "the changed-deadline check is skipped"
fi

# Garbage in place of a value, and a key nobody wrote: bad (and the
# acknowledged ops of the key are lost).
tdb put pc w01-k005 garbage || fail "tdb put"
tdb put pc stray value || fail "tdb put"
check 2 1 "bytes nobody wrote" bad=2
tdb del pc stray || fail "tdb del"

# Deleting keys of writer 2 until a transaction is left in part: torn.
for k in 000 001 002 003; do
	tdb del pc "w02-k$k" || fail "tdb del"
done
check 2 1 "keys of transactions deleted"
grep -q '^PCTORN ' "$dir/out" ||
	fail "no transaction seen torn: $(cat "$dir/out")"
grep -q '^PCCHECK .* torn=0 ' "$dir/out" && fail "torn=0 after deletes"
grep -q '^PCCHECK .* holes=0 ' "$dir/out" && fail "holes=0 after deletes"

# No table at all: everything acknowledged is lost.
tdb drop pc || fail "tdb drop"
check 2 1 "the table gone" lost=2400 records=0

kill -TERM "$pid"
wait "$pid" || fail "tdbd exit status $?"
pid=
if [ "$failures" -gt 0 ]; then
	echo "test-checker: $failures check(s) failed" >&2
	exit 1
fi
echo "test-checker: all checks passed"
