#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# test_dump.sh - tdb-dump and tdb-load (clients/dump) against a real tdbd
# and LMDB's own mdb_dump / mdb_load (Debian lmdb-utils):
#  - round trips tdb -> tdb in both formats, binary keys and values (NUL,
#    newline, backslash), empty values, keys at LMDB's 511-byte limit;
#  - tdb-dump -> mdb_load (compared through mdb_dump of the result), with
#    tdb's header keywords (mdb_load warns and loads) and with -M;
#  - mdb_dump -> tdb-load, bytevalue and -p, named and main databases;
#  - 1 MiB values (mdb_load needs the mapsize= tdb-dump writes);
#  - a large table (100k records, scaled) streaming in bounded memory:
#    peak RSS of tdb-dump and tdb-load far under the data's size;
#  - malformed input: FILE:LINE, exit 7, the records before it loaded and
#    nothing of the bad one or after; -N; unknown keywords warned about;
#    the metadata keywords applied on create; exit codes; no progress bar
#    unless on a terminal;
#  - --sort: two tdbd loaded with the same records in other orders give
#    the same bytes (-a, both formats); the records in key order (checked
#    against sort(1) of the input: NUL and 0xff bytes, keys that are
#    prefixes of others); a sorted dump loads back to the same bytes;
#    peak RSS of holding a table as tdb-dump(1) says; bar and summary;
#  - expiry (with the tdb CLI, $TDB_CLI): deadlines blocks (exact
#    deadlines, 0 for a persisted record in a table with a default TTL,
#    nothing for an expired record or one without a deadline), the
#    default TTL keyword, --sort, many records with deadlines among
#    others (several blocks, each deadline back), tdb-load giving each
#    record its deadline and the table its default TTL, a record expired
#    since the dump skipped, a bad deadline refused with FILE:LINE,
#    mdb_load taking the dump (the table's database exactly its
#    records) and mdb_dump -a of that loading back with the deadlines;
#  - eviction: a bounded table's tdb_max_bytes=, tdb_max_records= and
#    tdb_evict= (none for an unbounded table), tdb-load creating the
#    table with them, a policy without a bound refused, mdb_load taking
#    the keywords;
#  - ordered tables (issue 28): tdb_ordered=1 in the header (not with -M,
#    none for a hash table), the records in key order (checked by the
#    helper against LMDB's order, not sort(1)), --sort the same bytes,
#    tdb-load --ordered and the header creating ordered tables, a dump
#    without the line a hash table, the round trip's dump the same bytes,
#    a load into an existing table of the other kind warned about, and
#    records with deadlines among others keeping the blocks in order.
#   test_dump.sh TDB_DUMP TDB_LOAD TDBD HELPER
# Exit 0: all passed; 1: a check failed (each says FAIL); 77: skipped (no
# tdbd, or no mdb_dump / mdb_load).
set -u

dump=${1:?usage: test_dump.sh TDB_DUMP TDB_LOAD TDBD HELPER}
load=${2:?}
tdbd=${3:?}
helper=${4:?}
scale=${TDB_ITEST_SCALE:-1}
sanitized=${TDB_ITEST_SANITIZED:-0}
if [ ! -x "$tdbd" ]; then
	echo "SKIP: no tdbd to test against"
	exit 77
fi
if ! command -v mdb_dump >/dev/null || ! command -v mdb_load >/dev/null
then
	echo "SKIP: no mdb_dump / mdb_load (Debian lmdb-utils)"
	exit 77
fi

dir=$(mktemp -d /tmp/tdb-dump-test.XXXXXX)
sock=$dir/tdbd.sock
pid=
failures=0
checks=0

pids=

cleanup() {
	[ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
	for p in $pids; do
		kill -KILL "$p" 2>/dev/null
	done
	rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

fail() {
	echo "FAIL: $*" >&2
	failures=$((failures + 1))
}

note() {
	echo "== $*"
}

: >"$dir/empty.conf"
"$tdbd" --config "$dir/empty.conf" --socket "$sock" --log-level notice \
	--workers 2 >"$dir/tdbd.log" 2>&1 &
pid=$!
i=0
while [ ! -S "$sock" ]; do
	i=$((i + 1))
	if [ $i -gt 400 ] || ! kill -0 "$pid" 2>/dev/null; then
		echo "FAIL: tdbd did not start" >&2
		cat "$dir/tdbd.log" >&2
		exit 1
	fi
	sleep 0.05
done
export TDB_SOCKET="$sock"

out=$dir/out
err=$dir/err

# expect_rc RC CMD...: the command exits RC (stdout $out, stderr $err).
expect_rc() {
	want=$1
	shift
	checks=$((checks + 1))
	"$@" >"$out" 2>"$err"
	rc=$?
	if [ "$rc" != "$want" ]; then
		fail "$* exited $rc, want $want; stderr: $(head -c 600 "$err")"
		return 1
	fi
	return 0
}

# expect_err TEXT: stderr of the last command has TEXT.
expect_err() {
	checks=$((checks + 1))
	grep -qF -- "$1" "$err" || fail "stderr lacks '$1': $(head -c 600 "$err")"
}

# no_err: the last command wrote nothing to stderr.
no_err() {
	checks=$((checks + 1))
	[ ! -s "$err" ] || fail "unexpected stderr: $(head -c 600 "$err")"
}

# norm DUMPFILE [--nodb] > sorted records (one line each, hex)
norm() {
	f=$1
	shift
	"$helper" norm "$@" "$f" | LC_ALL=C sort
}

# same A B WHAT: two normalized record lists are equal.
same() {
	checks=$((checks + 1))
	if ! cmp -s "$1" "$2"; then
		fail "$3: records differ ($(wc -l <"$1") vs $(wc -l <"$2") lines)"
		diff "$1" "$2" | head -5 >&2
		return 1
	fi
	return 0
}

# ndump TABLE: tdb-dump -s TABLE, normalized without the db name.
ndump() {
	"$dump" -q -s "$1" >"$dir/nd.txt" || fail "tdb-dump -s $1 failed"
	norm "$dir/nd.txt" --nodb
}

# --- usage and exit codes ----------------------------------------------------
note "usage and exit codes"
expect_rc 2 "$dump"
expect_err "give -a"
expect_rc 2 "$dump" -a -s x
expect_rc 2 "$dump" --bogus
expect_rc 2 "$load" -b 0
expect_rc 0 "$dump" --help
expect_rc 0 "$load" --version
expect_rc 1 "$dump" -s nosuch
expect_err "tdb-dump: nosuch: no such table"
grep -q "no such table or key" "$err" && fail "said twice: $(cat "$err")"
expect_rc 5 "$dump" -a -S "$dir/nope.sock"
# said once, as a connect failure, with what to do
expect_err "tdb-dump: cannot connect to tdbd at $dir/nope.sock: no such socket (is tdbd running?)"
grep -q "cannot connect.*cannot connect" "$err" && fail "said twice: $(cat "$err")"
expect_rc 5 "$load" -S "$dir/nope.sock" </dev/null
expect_err "tdb-load: cannot connect to tdbd at $dir/nope.sock: no such socket"
expect_rc 0 "$dump" -a
no_err
checks=$((checks + 1))
[ ! -s "$out" ] || fail "tdb-dump -a of no tables wrote something"

# --- round trips, binary data ------------------------------------------------
note "tdb -> tdb round trips (binary keys at 511 bytes, empty values)"
"$helper" gen 1 2000 bin --maxval 700 >"$dir/d1.txt"
norm "$dir/d1.txt" --nodb >"$dir/d1.norm"
expect_rc 0 "$load" -f "$dir/d1.txt" && no_err
ndump bin >"$dir/x.norm"
same "$dir/d1.norm" "$dir/x.norm" "tdb-load, tdb-dump (bytevalue)"
expect_rc 0 "$dump" -p -s bin
cp "$out" "$dir/d1p.txt"
norm "$dir/d1p.txt" --nodb >"$dir/x.norm"
same "$dir/d1.norm" "$dir/x.norm" "tdb-dump -p"
checks=$((checks + 1))
grep -q '^format=print$' "$dir/d1p.txt" || fail "-p: no format=print"
checks=$((checks + 1))
grep -qF '\5c' "$dir/d1p.txt" || fail "-p: no escaped backslash"
expect_rc 0 "$load" -s bin2 -f "$dir/d1p.txt"
ndump bin2 >"$dir/x.norm"
same "$dir/d1.norm" "$dir/x.norm" "tdb-dump -p | tdb-load -s"
# the print form of the generator too (an independent encoder)
"$helper" gen 1 2000 bin3 --maxval 700 --print >"$dir/d1q.txt"
expect_rc 0 "$load" -f "$dir/d1q.txt"
ndump bin3 >"$dir/x.norm"
same "$dir/d1.norm" "$dir/x.norm" "format=print input"
# the exact text: tdb-dump's print output of a known record
printf 'VERSION=3\nformat=bytevalue\ndatabase=exact\ntype=btree\nHEADER=END\n 006b0a5c\n 2061207e7f\n 65\n \nDATA=END\n' \
	>"$dir/exact.txt"
expect_rc 0 "$load" -f "$dir/exact.txt"
expect_rc 0 "$dump" -p -M -s exact
checks=$((checks + 1))
grep -qxF ' \00k\0a\5c' "$out" && grep -qxF '  a ~\7f' "$out" &&
	grep -qx ' ' "$out" && grep -qx 'mapsize=[0-9]*' "$out" &&
	! grep -q '^tdb_' "$out" ||
	fail "tdb-dump -p -M text: $(cat "$out")"

# --- tdb-dump -> mdb_load ----------------------------------------------------
note "tdb-dump -> mdb_load (keywords warned about, -M clean)"
mkdir "$dir/env1" "$dir/env2"
"$dump" -q -s bin >"$dir/t1.txt"
expect_rc 0 mdb_load -f "$dir/t1.txt" "$dir/env1"
expect_err "unrecognized keyword ignored: tdb_owner"
expect_rc 0 mdb_dump -s bin "$dir/env1"
cp "$out" "$dir/m1.txt"
norm "$dir/m1.txt" --nodb >"$dir/x.norm"
same "$dir/d1.norm" "$dir/x.norm" "tdb-dump | mdb_load | mdb_dump"
"$dump" -q -M -p -s bin >"$dir/t1p.txt"
expect_rc 0 mdb_load -f "$dir/t1p.txt" "$dir/env2"
no_err
expect_rc 0 mdb_dump -s bin "$dir/env2"
cp "$out" "$dir/m2.txt"
norm "$dir/m2.txt" --nodb >"$dir/x.norm"
same "$dir/d1.norm" "$dir/x.norm" "tdb-dump -p -M | mdb_load | mdb_dump"
# -a: one block per table, all into one environment
mkdir "$dir/env3"
"$dump" -q -a >"$dir/all.txt"
checks=$((checks + 1))
[ "$(grep -c '^VERSION=3$' "$dir/all.txt")" = 4 ] ||
	fail "tdb-dump -a: $(grep -c '^VERSION=3$' "$dir/all.txt") blocks, want 4"
expect_rc 0 mdb_load -f "$dir/all.txt" "$dir/env3"
expect_rc 0 mdb_dump -l "$dir/env3"
checks=$((checks + 1))
[ "$(tr '\n' ' ' <"$out")" = "bin bin2 bin3 exact " ] ||
	fail "mdb_dump -l after -a: $(cat "$out")"
expect_rc 0 mdb_dump -a "$dir/env3"
cp "$out" "$dir/m3.txt"
norm "$dir/all.txt" >"$dir/a.norm"
norm "$dir/m3.txt" >"$dir/x.norm"
same "$dir/a.norm" "$dir/x.norm" "tdb-dump -a | mdb_load | mdb_dump -a"

# --- mdb_dump -> tdb-load ----------------------------------------------------
note "mdb_dump -> tdb-load"
expect_rc 0 "$load" -f "$dir/m3.txt" -q
for t in bin bin2 bin3; do
	ndump $t >"$dir/x.norm"
	same "$dir/d1.norm" "$dir/x.norm" "mdb_dump -a | tdb-load ($t)"
done
# -p, from an environment without backslashes (mdb_dump 0.9.24 -p writes
# '\' unescaped, which no reader can tell from an escape)
"$helper" gen 2 1500 nos --noslash >"$dir/d2.txt"
norm "$dir/d2.txt" --nodb >"$dir/d2.norm"
mkdir "$dir/env4"
expect_rc 0 mdb_load -f "$dir/d2.txt" "$dir/env4"
expect_rc 0 mdb_dump -p -s nos "$dir/env4"
cp "$out" "$dir/m4p.txt"
expect_rc 0 "$load" -s nosp -f "$dir/m4p.txt"
ndump nosp >"$dir/x.norm"
same "$dir/d2.norm" "$dir/x.norm" "mdb_dump -p | tdb-load"
# LMDB's main database: no database= line, so -s names the table
"$helper" gen 3 300 main --nodb >"$dir/d3.txt"
mkdir "$dir/env5"
expect_rc 0 mdb_load -f "$dir/d3.txt" "$dir/env5"
expect_rc 0 mdb_dump "$dir/env5"
cp "$out" "$dir/m5.txt"
expect_rc 7 "$load" -f "$dir/m5.txt"
expect_err "m5.txt:1: this block's header has no database= line"
expect_rc 0 "$load" -s main -f "$dir/m5.txt"
norm "$dir/d3.txt" --nodb >"$dir/d3.norm"
ndump main >"$dir/x.norm"
same "$dir/d3.norm" "$dir/x.norm" "mdb_dump (main DB) | tdb-load -s"

# --- 1 MiB values ------------------------------------------------------------
note "1 MiB values"
"$helper" gen 4 20 mib --big 4 >"$dir/d4.txt"
norm "$dir/d4.txt" --nodb >"$dir/d4.norm"
expect_rc 0 "$load" -f "$dir/d4.txt"
ndump mib >"$dir/x.norm"
same "$dir/d4.norm" "$dir/x.norm" "1 MiB values through tdb"
"$dump" -q -p -s mib >"$dir/t4p.txt"       # 3 MiB lines
expect_rc 0 "$load" -s mib2 -f "$dir/t4p.txt"
ndump mib2 >"$dir/x.norm"
same "$dir/d4.norm" "$dir/x.norm" "1 MiB values in print form"
mkdir "$dir/env6"
"$dump" -q -M -s mib >"$dir/t4.txt"
expect_rc 0 mdb_load -f "$dir/t4.txt" "$dir/env6"
expect_rc 0 mdb_dump -s mib "$dir/env6"
cp "$out" "$dir/m6.txt"
norm "$dir/m6.txt" --nodb >"$dir/x.norm"
same "$dir/d4.norm" "$dir/x.norm" "1 MiB values into mdb_load"
# without tdb-dump's mapsize=, mdb_load's own 1 MiB map cannot hold them
grep -v '^mapsize=' "$dir/t4.txt" >"$dir/t4n.txt"
mkdir "$dir/env7"
expect_rc 1 mdb_load -f "$dir/t4n.txt" "$dir/env7"
expect_err "MDB_MAP_FULL"

# --- a large table in bounded memory -----------------------------------------
n=$(awk -v s="$scale" 'BEGIN { n = int(100000 * s); print n < 20000 ? 20000 : n }')
note "a large table: $n records of 600 bytes"
"$helper" gen 5 "$n" large --fixval 600 --maxkey 40 >"$dir/d5.txt"
norm "$dir/d5.txt" --nodb >"$dir/d5.norm"
expect_rc 0 "$helper" rss "$dir/rss.load" "$load" -q -f "$dir/d5.txt"
expect_rc 0 "$helper" rss "$dir/rss.dump" "$dump" -q -s large -f "$dir/t5.txt"
norm "$dir/t5.txt" --nodb >"$dir/x.norm"
same "$dir/d5.norm" "$dir/x.norm" "large table round trip"
mkdir "$dir/env8"
expect_rc 0 mdb_load -f "$dir/t5.txt" "$dir/env8"
expect_rc 0 mdb_dump -s large "$dir/env8"
cp "$out" "$dir/m8.txt"
norm "$dir/m8.txt" --nodb >"$dir/x.norm"
same "$dir/d5.norm" "$dir/x.norm" "large table into mdb_load"
data_kb=$((n * 620 / 1024))
limit_kb=32768
[ "$sanitized" = 1 ] && limit_kb=262144
for t in load dump; do
	kb=$(cat "$dir/rss.$t")
	echo "   tdb-$t: peak RSS $kb KiB for $data_kb KiB of records"
	checks=$((checks + 1))
	[ "$kb" -lt "$limit_kb" ] ||
		fail "tdb-$t: peak RSS $kb KiB, over $limit_kb KiB"
done
# a pipe in, a pipe out
checks=$((checks + 1))
"$dump" -s large | "$load" -s large2 || fail "tdb-dump | tdb-load"
ndump large2 >"$dir/x.norm"
same "$dir/d5.norm" "$dir/x.norm" "tdb-dump | tdb-load"

# --- malformed input ----------------------------------------------------------
note "malformed input: FILE:LINE, nothing partial"
# 10 records "k1".."k10"; record 6 is broken in various ways
mkbad() {   # mkbad NAME KEYLINE VALLINE  (for record 6)
	{
		printf 'VERSION=3\nformat=bytevalue\ndatabase=%s\ntype=btree\nHEADER=END\n' "$1"
		for r in 1 2 3 4 5; do
			printf ' %s\n 7631\n' "$(printf "k$r" | od -An -tx1 | tr -d ' \n')"
		done
		printf '%s\n%s\n' "$2" "$3"
		for r in 7 8 9 10; do
			printf ' %s\n 7631\n' "$(printf "k$r" | od -An -tx1 | tr -d ' \n')"
		done
		printf 'DATA=END\n'
	} >"$dir/$1.txt"
}
# loaded_keys TABLE: the keys present, sorted, one a line (text)
loaded_keys() {
	"$dump" -q -p -M -s "$1" | awk 'f && /^ / { if (++n % 2) print substr($0, 2) }
		/^HEADER=END$/ { f = 1 }' | LC_ALL=C sort | tr '\n' ' '
}
want_keys="k1 k2 k3 k4 k5 "
mkbad bad1 ' 6b36' ' 763'                # odd hex in the value
expect_rc 7 "$load" -b 3 -f "$dir/bad1.txt"
expect_err "tdb-load: $dir/bad1.txt:17: odd number of hex digits"
checks=$((checks + 1))
[ "$(loaded_keys bad1)" = "$want_keys" ] ||
	fail "bad1 loaded: $(loaded_keys bad1)"
mkbad bad2 ' 6b3g' ' 7631'              # not hex in the key
expect_rc 7 "$load" -f "$dir/bad2.txt"
expect_err "bad2.txt:16: not a hex digit"
checks=$((checks + 1))
[ "$(loaded_keys bad2)" = "$want_keys" ] ||
	fail "bad2 loaded: $(loaded_keys bad2)"
mkbad bad3 ' 6b36' '7631'               # no leading space
expect_rc 7 "$load" -f "$dir/bad3.txt"
expect_err "bad3.txt:17: expected a value line"
mkbad bad4 ' 6b36' 'DATA=END'           # a key without its value
expect_rc 7 "$load" -f "$dir/bad4.txt"
expect_err "bad4.txt:16: a key without its value"
checks=$((checks + 1))
[ "$(loaded_keys bad4)" = "$want_keys" ] ||
	fail "bad4 loaded: $(loaded_keys bad4)"
mkbad bad5 ' ' ' 7631'                  # an empty key
expect_rc 7 "$load" -f "$dir/bad5.txt"
expect_err "bad5.txt:16: empty key"
# print form: a bad escape
printf 'VERSION=3\nformat=print\ndatabase=bad6\ntype=btree\nHEADER=END\n k1\n v1\n k2\n a\\zz\nDATA=END\n' >"$dir/bad6.txt"
expect_rc 7 "$load" -f "$dir/bad6.txt"
expect_err "bad6.txt:9: bad escape"
checks=$((checks + 1))
[ "$(loaded_keys bad6)" = "k1 " ] || fail "bad6 loaded: $(loaded_keys bad6)"
# the input ends inside a record, before DATA=END, inside a header
printf 'VERSION=3\nformat=print\ndatabase=bad7\ntype=btree\nHEADER=END\n k1\n v1\n k2\n' >"$dir/bad7.txt"
expect_rc 7 "$load" -f "$dir/bad7.txt"
expect_err "bad7.txt:8: unexpected end of input: a key without its value"
checks=$((checks + 1))
[ "$(loaded_keys bad7)" = "k1 " ] || fail "bad7 loaded: $(loaded_keys bad7)"
printf 'VERSION=3\nformat=print\ndatabase=bad8\ntype=btree\nHEADER=END\n k1\n v1\n' >"$dir/bad8.txt"
expect_rc 7 "$load" -f "$dir/bad8.txt"
expect_err "bad8.txt:8: unexpected end of input: no DATA=END"
printf 'VERSION=3\nformat=print\n' | "$load" >"$out" 2>"$err"
rc=$?
checks=$((checks + 1))
[ $rc = 7 ] || fail "a cut header: exit $rc"
expect_err "tdb-load: -:3: unexpected end of input in a header"
# header errors (nothing loaded at all)
for h in 'VERSION=4' 'format=hex' 'type=recno' 'dupsort=1' 'garbage line' \
	'tdb_mode=999'; do
	printf 'VERSION=3\n%s\ndatabase=bad9\nHEADER=END\n 6b\n 76\nDATA=END\n' \
		"$h" >"$dir/bad9.txt"
	expect_rc 7 "$load" -f "$dir/bad9.txt"
	expect_err "bad9.txt:2: "
done
expect_rc 1 "$dump" -s bad9
# limits: a key over 4096 bytes, a value over 1 MiB
awk 'BEGIN { printf "VERSION=3\nformat=print\ndatabase=bad10\nHEADER=END\n "
	for (i = 0; i < 4097; i++) printf "k"; printf "\n v\nDATA=END\n" }' \
	>"$dir/bad10.txt"
expect_rc 7 "$load" -f "$dir/bad10.txt"
expect_err "bad10.txt:5: key longer than 4096 bytes"
# a second block after a good one: the good one stays
{ cat "$dir/exact.txt"; printf 'VERSION=3\ndatabase=bad11\nHEADER=END\n 6b\n 7\nDATA=END\n'; } \
	| sed 's/database=exact/database=good11/' >"$dir/bad11.txt"
expect_rc 7 "$load" -f "$dir/bad11.txt"
expect_err "bad11.txt:15: odd number of hex digits"
expect_rc 0 "$dump" -s good11

# --- warnings, -N, metadata --------------------------------------------------
note "unknown keywords, -N, metadata"
printf 'VERSION=3\nformat=print\ndatabase=warn\ncolour=blue\ntype=btree\nmaxreaders=126\ndb_pagesize=4096\nHEADER=END\n a\n 1\nDATA=END\n' \
	>"$dir/warn.txt"
expect_rc 0 "$load" -f "$dir/warn.txt"
expect_err "tdb-load: warning: $dir/warn.txt:4: unrecognized keyword ignored: colour"
checks=$((checks + 1))
[ "$(wc -l <"$err")" = 1 ] || fail "more than one warning: $(cat "$err")"
printf 'VERSION=3\nformat=print\ndatabase=nov\ntype=btree\nHEADER=END\n a\n old\nDATA=END\n' >"$dir/n1.txt"
printf 'VERSION=3\nformat=print\ndatabase=nov\ntype=btree\nHEADER=END\n a\n new\n b\n new\n b\n newer\nDATA=END\n' >"$dir/n2.txt"
expect_rc 0 "$load" -f "$dir/n1.txt"
expect_rc 0 "$load" -N -f "$dir/n2.txt"
expect_rc 0 "$dump" -p -M -s nov
checks=$((checks + 1))
[ "$(sed -n '/HEADER=END/,$p' "$out" | tr '\n' '|')" = "HEADER=END| a| old| b| new|DATA=END|" ] ||
[ "$(sed -n '/HEADER=END/,$p' "$out" | tr '\n' '|')" = "HEADER=END| b| new| a| old|DATA=END|" ] ||
	fail "-N: $(cat "$out")"
expect_rc 0 "$load" -f "$dir/n2.txt"
expect_rc 0 "$dump" -p -M -s nov
checks=$((checks + 1))
grep -qx ' newer' "$out" && ! grep -qx ' old' "$out" ||
	fail "without -N the last value wins: $(cat "$out")"
printf 'VERSION=3\nformat=print\ndatabase=meta\ntype=btree\ntdb_owner=4321\ntdb_group=765\ntdb_mode=0604\ntdb_max_extents=7\nHEADER=END\n a\n 1\nDATA=END\n' >"$dir/meta.txt"
expect_rc 0 "$load" -f "$dir/meta.txt"
expect_rc 0 "$dump" -s meta
checks=$((checks + 1))
if [ "$(id -u)" = 0 ]; then
	grep -qx 'tdb_owner=4321' "$out" && grep -qx 'tdb_group=765' "$out" ||
		fail "owner/group not applied: $(cat "$out")"
else
	grep -qx "tdb_owner=$(id -u)" "$out" ||
		fail "owner: $(cat "$out")"
fi
checks=$((checks + 1))
grep -qx 'tdb_mode=0604' "$out" && grep -qx 'tdb_max_extents=7' "$out" ||
	fail "mode/max_extents not applied: $(cat "$out")"
# an existing table wider than the mode asked for (and, as root, not
# ours: the dump gave it to 4321) is refused, exit 4, naming its owner
# and mode (tests/integration/test_names.c has the squatting itself) ...
sed 's/tdb_mode=0604/tdb_mode=0600/' "$dir/meta.txt" >"$dir/meta2.txt"
expect_rc 4 "$load" -f "$dir/meta2.txt"
expect_err "meta: the table exists, owned by uid "
expect_err "mode 0604 (wider than 0600): not loading into it (--into-existing to load anyway)"
# ... and with --into-existing it keeps its own metadata
expect_rc 0 "$load" --into-existing -f "$dir/meta2.txt"
expect_rc 0 "$dump" -s meta
checks=$((checks + 1))
grep -qx 'tdb_mode=0604' "$out" || fail "existing table's mode changed"
# --mode: octal, 0..0777
expect_rc 2 "$load" --mode 0999 -f "$dir/meta2.txt"
expect_err "--mode: not an octal mode in 0..0777: '0999'"
expect_rc 2 "$load" --mode -1 -f "$dir/meta2.txt"

# --- a tdbd with tiny transactions: batches split, big records alone ----------
note "tdbd with max-txn-ops 7, max-txn-bytes 64K"
sock2=$dir/tdbd2.sock
"$tdbd" --config "$dir/empty.conf" --socket "$sock2" --log-level notice \
	--max-txn-ops 7 --max-txn-bytes 64K >"$dir/tdbd2.log" 2>&1 &
pid2=$!
i=0
while [ ! -S "$sock2" ] && [ $i -lt 400 ]; do
	i=$((i + 1))
	sleep 0.05
done
expect_rc 0 "$load" -S "$sock2" -f "$dir/d1.txt"
expect_rc 0 "$load" -S "$sock2" -f "$dir/d4.txt"
expect_rc 0 "$load" -S "$sock2" -N -s bin -f "$dir/d1p.txt"
for t in bin mib; do
	"$dump" -q -S "$sock2" -s $t >"$dir/small.txt" ||
		fail "tdb-dump -s $t from the second tdbd"
	norm "$dir/small.txt" --nodb >"$dir/x.norm"
	[ $t = bin ] && want="$dir/d1.norm" || want="$dir/d4.norm"
	same "$want" "$dir/x.norm" "loaded in split transactions ($t)"
done
kill -TERM "$pid2"
wait "$pid2"
rc=$?
checks=$((checks + 1))
[ $rc = 0 ] || fail "the second tdbd exited $rc"

# --- the progress bar: only on a terminal ---------------------------------------
note "progress bar and summary"
expect_rc 0 "$dump" -s large -f "$dir/t5b.txt"
no_err
# -v: the summary line, also off a terminal; nothing else.
nlarge=$(grep -c '^ ' "$dir/t5b.txt")
nlarge=$((nlarge / 2))
expect_rc 0 "$dump" -v -s large -f "$dir/t5b.txt"
checks=$((checks + 1))
grep -Eqx "tdb-dump: dumped $nlarge records, [0-9.]+ (B|KiB|MiB|GiB) in [0-9.]+ s \([0-9.]+ (B|KiB|MiB|GiB)/s\)" \
	"$err" && [ "$(wc -l <"$err")" = 1 ] ||
	fail "tdb-dump -v summary: $(head -c 300 "$err")"
expect_rc 0 "$load" -v -N -f "$dir/t5b.txt"
expect_err "tdb-load: loaded 0 records, "
expect_err "; $nlarge existing keys kept"
if command -v script >/dev/null; then
	checks=$((checks + 1))
	script -qec "\"$dump\" -s large -f \"$dir/t5c.txt\"" /dev/null \
		>"$dir/tty.out" 2>&1 </dev/null
	grep -q "tdb-dump: dumped $nlarge records" "$dir/tty.out" ||
		fail "no summary on a terminal: $(head -c 300 "$dir/tty.out")"
	checks=$((checks + 1))
	script -qec "\"$dump\" -q -s large -f \"$dir/t5c.txt\"" /dev/null \
		>"$dir/tty.out" 2>&1 </dev/null
	[ ! -s "$dir/tty.out" ] || fail "-q: $(head -c 300 "$dir/tty.out")"
fi

# --- --sort: deterministic dumps ---------------------------------------------
note "--sort: key order, the same bytes from two tdbd, round trip"
tab=$(printf '\t')
# extra_tdbd NAME: start another tdbd on $dir/NAME.sock (killed at exit)
extra_tdbd() {
	"$tdbd" --config "$dir/empty.conf" --socket "$dir/$1.sock" \
		--log-level notice --workers 2 >"$dir/$1.log" 2>&1 &
	pids="$pids $!"
	eval "pid_$1=$!"
	i=0
	while [ ! -S "$dir/$1.sock" ] && [ $i -lt 400 ]; do
		i=$((i + 1))
		sleep 0.05
	done
}
# stop_tdbd NAME: SIGTERM, exit 0
stop_tdbd() {
	eval "p=\$pid_$1"
	kill -TERM "$p"
	wait "$p"
	rc=$?
	checks=$((checks + 1))
	[ $rc = 0 ] || fail "tdbd $1 exited $rc"
}
# reverse_records FILE: the dump with each block's records (key/value
# line pairs) in the reverse order
reverse_records() {
	awk '/^HEADER=END$/ { print; inb = 1; n = 0; next }
		/^DATA=END$/ { for (i = n - 1; i >= 0; i -= 2)
				print r[i - 1] "\n" r[i]
			inb = 0; print; next }
		inb { r[n++] = $0; next }
		{ print }' "$1"
}
# edge keys, in bytevalue: NUL and 0xff bytes, keys that are prefixes of
# others (00 < 0000 < 000000 < the generator's 00000000..., ff < ff00 <
# ffff), one byte apart (0100 < 01ff)
edge=' ff\n 65\n 00\n 61\n ffff\n 66\n 0000\n 62\n ff00\n 67\n'
edge="$edge"' 000000\n 63\n 01ff\n 68\n 0100\n 69\n 7f\n \n 80\n 6a\n'
{
	"$helper" gen 7 3000 srt --maxval 200 --maxkey 64 | sed '$d'
	printf "$edge"
	echo DATA=END
	"$helper" gen 8 500 srt_print --print --maxkey 20
	printf 'VERSION=3\nformat=bytevalue\ndatabase=srt_empty\n'
	printf 'type=btree\nHEADER=END\nDATA=END\n'
} >"$dir/s.txt"
reverse_records "$dir/s.txt" >"$dir/s_rev.txt"
norm "$dir/s.txt" >"$dir/s.norm"
norm "$dir/s_rev.txt" >"$dir/x.norm"
same "$dir/s.norm" "$dir/x.norm" "reverse_records kept the records"
checks=$((checks + 1))
! cmp -s "$dir/s.txt" "$dir/s_rev.txt" || fail "reverse_records: no change"
extra_tdbd sa
extra_tdbd sb
expect_rc 0 "$load" -S "$dir/sa.sock" -f "$dir/s.txt"
expect_rc 0 "$load" -S "$dir/sb.sock" -b 7 -f "$dir/s_rev.txt"
for form in "" -p; do
	a=$dir/sa$form.txt
	b=$dir/sb$form.txt
	expect_rc 0 "$dump" -S "$dir/sa.sock" --sort $form -a -f "$a"
	no_err
	expect_rc 0 "$dump" -S "$dir/sb.sock" -o $form -a -f "$b"
	checks=$((checks + 1))
	cmp -s "$a" "$b" || fail "tdb-dump --sort $form -a: two tdbd, the" \
		"same records: not the same bytes ($(cmp "$a" "$b" 2>&1))"
done
"$dump" -q -S "$dir/sa.sock" -a >"$dir/ua.txt"
"$dump" -q -S "$dir/sb.sock" -a >"$dir/ub.txt"
cmp -s "$dir/ua.txt" "$dir/ub.txt" &&
	echo "   (the unsorted dumps happen to be the same too)"
# srt_keys: the keys of table srt in the order of the sorted dump
srt_keys() {
	awk -F "$tab" '$1 == "srt" { print substr($2, 1, 8) }' "$dir/sa.norm"
}
# the order: the records of the input sorted by key with sort(1) in the
# C locale on lowercase hex, which is bytewise with a prefix first
"$helper" norm "$dir/sa.txt" >"$dir/sa.norm"
LC_ALL=C sort -t "$tab" -k1,1 -k2,2 "$dir/s.norm" >"$dir/s.keyorder"
same "$dir/s.keyorder" "$dir/sa.norm" "tdb-dump --sort: records in key order"
checks=$((checks + 1))
[ "$(srt_keys | head -4 | tr '\n' ' ')" = "00 0000 000000 00000000 " ] &&
	[ "$(srt_keys | tail -7 | tr '\n' ' ')" = \
		"0100 01ff 7f 80 ff ff00 ffff " ] ||
	fail "edge keys out of order: $(srt_keys | tr '\n' ' ' | head -c 300)"
"$helper" norm "$dir/sa-p.txt" >"$dir/x.norm"
same "$dir/s.keyorder" "$dir/x.norm" "tdb-dump --sort -p: records in key order"
checks=$((checks + 1))
grep -q '^database=srt_empty$' "$dir/sa.txt" || fail "--sort: no empty table"
# a sorted dump loads back: the same bytes dumped again
extra_tdbd sc
expect_rc 0 "$load" -S "$dir/sc.sock" -f "$dir/sa.txt"
expect_rc 0 "$dump" -S "$dir/sc.sock" --sort -a -f "$dir/sc.txt"
checks=$((checks + 1))
cmp -s "$dir/sa.txt" "$dir/sc.txt" ||
	fail "tdb-load of a sorted dump, dumped sorted again: other bytes"
for s in sa sb sc; do
	stop_tdbd $s
done
pids=
# the large table: in order, and held in memory (tdb-dump(1) says so:
# its keys and values and 16 bytes a record; no more than that plus the
# RSS of a streaming dump and a margin for malloc)
expect_rc 0 "$helper" rss "$dir/rss.sort" "$dump" -q --sort -s large \
	-f "$dir/t5s.txt"
"$helper" norm --nodb "$dir/t5s.txt" >"$dir/x.norm"
LC_ALL=C sort -t "$tab" -k2,2 "$dir/d5.norm" >"$dir/d5.keyorder"
same "$dir/d5.keyorder" "$dir/x.norm" "--sort of the large table"
kb=$(cat "$dir/rss.sort")
held_kb=$(( (n * 16 + $(wc -c <"$dir/d5.txt") / 2) / 1024 ))
sort_limit_kb=$((held_kb * 5 / 4 + $(cat "$dir/rss.dump") + 16384))
[ "$sanitized" = 1 ] && sort_limit_kb=$((sort_limit_kb * 3))
echo "   tdb-dump --sort: peak RSS $kb KiB for $data_kb KiB of records"
checks=$((checks + 1))
[ "$kb" -lt "$sort_limit_kb" ] ||
	fail "tdb-dump --sort: peak RSS $kb KiB, over $sort_limit_kb KiB"
# the bar and the summary
expect_rc 0 "$dump" -v --sort -s large -f "$dir/t5s.txt"
checks=$((checks + 1))
grep -Eqx "tdb-dump: dumped $nlarge records, [0-9.]+ (B|KiB|MiB|GiB) in [0-9.]+ s \([0-9.]+ (B|KiB|MiB|GiB)/s\)" \
	"$err" && [ "$(wc -l <"$err")" = 1 ] ||
	fail "tdb-dump -v --sort summary: $(head -c 300 "$err")"
if command -v script >/dev/null; then
	checks=$((checks + 1))
	script -qec "\"$dump\" --sort -s large -f \"$dir/t5c.txt\"" /dev/null \
		>"$dir/tty.out" 2>&1 </dev/null
	grep -q "/$nlarge records" "$dir/tty.out" &&
		grep -q "tdb-dump: dumped $nlarge records" "$dir/tty.out" ||
		fail "--sort: no bar or summary on a terminal:" \
			"$(head -c 300 "$dir/tty.out")"
fi

# --- expiry --------------------------------------------------------------------
cli=${TDB_CLI:-}
if [ -z "$cli" ] || [ ! -x "$cli" ]; then
	echo "SKIP (part): no tdb CLI (\$TDB_CLI): expiry not checked"
else
note "expiry: deadlines blocks, the default TTL, tdb-load, mdb_load"
tab=$(printf '\t')
hexs() { printf '%s' "$1" | od -An -tx1 | tr -d ' \n'; }
now=$(date +%s%3N)
d1=$((now + 7200000))
d2=$((now + 5400000))
expect_rc 0 "$cli" create exp --ttl 1h
expect_rc 0 "$cli" put exp a 1 --at "$d1"
expect_rc 0 "$cli" put exp b 2                  # the table's 1 h
expect_rc 0 "$cli" put exp c 3
expect_rc 0 "$cli" persist exp c                # none, in a TTL table
expect_rc 0 "$cli" create exq
expect_rc 0 "$cli" put exq x 9 --at "$d2"
expect_rc 0 "$cli" put exq y 8                  # none: not listed
expect_rc 0 "$cli" put exq z 7 --ttl 200ms      # gone before the dump
expect_rc 0 "$cli" get exp b --deadline
db=$(cut -f1 "$out")
checks=$((checks + 1))
[ "$db" -gt "$now" ] 2>/dev/null || fail "exp/b has no deadline: $db"
sleep 0.4
expect_rc 0 "$dump" -p -s exp
cp "$out" "$dir/exp.txt"
expect_rc 0 "$dump" -p -s exq
cp "$out" "$dir/exq.txt"
# the text: the keyword; each deadline in a block before its record
checks=$((checks + 1))
grep -qx 'tdb_default_ttl=3600000' "$dir/exp.txt" ||
	fail "no tdb_default_ttl=3600000: $(head -c 400 "$dir/exp.txt")"
checks=$((checks + 1))
grep -q '^tdb_default_ttl' "$dir/exq.txt" &&
	fail "exq (no default TTL) has tdb_default_ttl="
"$helper" norm "$dir/exp.txt" >"$dir/exp.norm" ||
	fail "helper norm of the exp dump"
# norm's lines: DB, KEY, VALUE in hex; the deadlines' digits in hex too
for kv in "a:$d1" "b:$db" "c:0"; do
	k=${kv%%:*}
	v=${kv#*:}
	checks=$((checks + 1))
	grep -qx "/deadlines/exp$tab$(hexs "$k")$tab$(hexs "$v")" \
		"$dir/exp.norm" ||
		fail "exp: no deadline $v for $k: $(cat "$dir/exp.norm")"
done
checks=$((checks + 1))
[ "$(grep -c "^exp$tab" "$dir/exp.norm")" = 3 ] ||
	fail "exp: not its 3 records: $(cat "$dir/exp.norm")"
"$helper" norm "$dir/exq.txt" >"$dir/exq.norm" || fail "norm exq"
checks=$((checks + 1))
[ "$(grep -c "^/deadlines/exq$tab" "$dir/exq.norm")" = 1 ] &&
	grep -qx "/deadlines/exq$tab$(hexs x)$tab$(hexs "$d2")" \
		"$dir/exq.norm" ||
	fail "exq's deadlines: only x's, $d2: $(cat "$dir/exq.norm")"
checks=$((checks + 1))
grep -q "$tab$(hexs z)$tab" "$dir/exq.norm" &&
	fail "the expired exq/z was dumped"
# the deadlines block comes before the record it names
checks=$((checks + 1))
awk '/^database=\/deadlines\/exq$/ { d = NR }
	$0 == " x" && !dk { if (!d) bad = 1; dk = NR }
	END { exit bad || !dk }' "$dir/exq.txt" ||
	fail "exq: x's record before its deadlines block"
# --sort: one deadlines block (key order), then the table
expect_rc 0 "$dump" -p --sort -s exp
checks=$((checks + 1))
[ "$(grep -c '^database=' "$out")" = 2 ] &&
	[ "$(grep '^database=' "$out" | head -1)" = "database=/deadlines/exp" ] &&
	[ "$(sed -n '/^database=\/deadlines/,/DATA=END/p' "$out" |
	     grep '^ ' | paste -sd' ')" = " a  $d1  b  $db  c  0" ] ||
	fail "--sort with deadlines: $(cat "$out")"
# tdb-load: the deadlines, the default TTL
expect_rc 0 "$load" -s exp2 -f "$dir/exp.txt" && no_err
expect_rc 0 "$load" -s exq2 -f "$dir/exq.txt" && no_err
for kv in "exp2:a:$d1:1" "exp2:b:$db:2" "exp2:c:-:3" "exq2:x:$d2:9" \
	  "exq2:y:-:8"; do
	t=${kv%%:*}; r=${kv#*:}
	k=${r%%:*}; r=${r#*:}
	v=${r%%:*}; val=${r#*:}
	expect_rc 0 "$cli" get "$t" "$k" --deadline
	checks=$((checks + 1))
	[ "$(cat "$out")" = "$v$tab$val" ] ||
		fail "tdb-load: $t/$k reads '$(cat "$out")', want '$v$tab$val'"
done
expect_rc 1 "$cli" get exq2 z
expect_rc 0 "$cli" stat exp2
checks=$((checks + 1))
grep -Eq '^default_ttl_ms +3600000$' "$out" ||
	fail "exp2 was not created with the default TTL: $(cat "$out")"
expect_rc 0 "$cli" stat exq2
checks=$((checks + 1))
grep -Eq '^default_ttl_ms +0$' "$out" ||
	fail "exq2 has a default TTL: $(cat "$out")"
# a deadline that passed since the dump: the record is skipped
past=$((now - 1000))
{
	printf 'VERSION=3\nformat=print\ndatabase=/deadlines/exr\ntype=btree\n'
	printf 'HEADER=END\n p\n %s\n f\n %s\nDATA=END\n' "$past" "$d1"
	printf 'VERSION=3\nformat=print\ndatabase=exr\ntype=btree\n'
	printf 'HEADER=END\n p\n old\n f\n new\n n\n none\nDATA=END\n'
} >"$dir/exr.txt"
expect_rc 0 "$load" -v -f "$dir/exr.txt"
expect_err "1 expired since the dump skipped"
expect_rc 1 "$cli" get exr p
expect_rc 0 "$cli" get exr f --deadline
checks=$((checks + 1))
[ "$(cat "$out")" = "$d1${tab}new" ] || fail "exr/f: $(cat "$out")"
expect_rc 0 "$cli" get exr n --deadline
checks=$((checks + 1))
[ "$(cat "$out")" = "-${tab}none" ] || fail "exr/n: $(cat "$out")"
# a bad deadline: FILE:LINE, exit 7
{
	printf 'VERSION=3\nformat=print\ndatabase=/deadlines/exs\ntype=btree\n'
	printf 'HEADER=END\n p\n 12x\nDATA=END\n'
} >"$dir/exs.txt"
expect_rc 7 "$load" -f "$dir/exs.txt"
expect_err "exs.txt:7: a deadline must be 1 to 20 decimal digits"
# many records, deadlines among them: several blocks, all come back
nexl=9000
awk -v n="$nexl" -v d="$d1" 'BEGIN {
	print "VERSION=3\nformat=print\ndatabase=/deadlines/exl"
	print "type=btree\nHEADER=END"
	for (i = 0; i < n; i += 2) printf " k%06d\n %.0f\n", i, d + i
	print "DATA=END\nVERSION=3\nformat=print\ndatabase=exl"
	print "type=btree\nHEADER=END"
	for (i = 0; i < n; i++) printf " k%06d\n v%d\n", i, i
	print "DATA=END" }' >"$dir/exl.txt"
expect_rc 0 "$load" -f "$dir/exl.txt"
expect_rc 0 "$dump" -p -s exl
cp "$out" "$dir/exl.out"
checks=$((checks + 1))
[ "$(grep -c '^database=/deadlines/exl$' "$dir/exl.out")" -ge 2 ] ||
	fail "exl: $(grep -c '^database=' "$dir/exl.out") blocks, want its deadlines in chunks"
norm "$dir/exl.txt" >"$dir/exl.norm"
norm "$dir/exl.out" >"$dir/x.norm"
same "$dir/exl.norm" "$dir/x.norm" \
	"exl: records and deadlines through tdb-load and tdb-dump"
# mdb_load takes the dump: the table's database holds its records alone
mkdir "$dir/envx"
expect_rc 0 mdb_load -f "$dir/exp.txt" "$dir/envx"
expect_rc 0 mdb_load -f "$dir/exq.txt" "$dir/envx"
expect_rc 0 mdb_dump -p -s exq "$dir/envx"
checks=$((checks + 1))
[ "$(sed -n '/^HEADER=END$/,/^DATA=END$/p' "$out" | grep '^ ' |
     paste -sd' ')" = " x  9  y  8" ] ||
	fail "mdb_load of the exq dump: $(cat "$out")"
# mdb_dump -a of it ("/deadlines/..." first, by name) loads back
expect_rc 0 mdb_dump -a "$dir/envx"
cp "$out" "$dir/envx.txt"
expect_rc 0 "$load" -s exp3 -f "$dir/envx.txt"
expect_rc 0 "$cli" get exp3 a --deadline
checks=$((checks + 1))
[ "$(cat "$out")" = "$d1${tab}1" ] ||
	fail "mdb_dump -a | tdb-load: exp3/a: $(cat "$out")"
expect_rc 0 "$cli" get exp3 x --deadline
checks=$((checks + 1))
[ "$(cat "$out")" = "$d2${tab}9" ] ||
	fail "mdb_dump -a | tdb-load: exp3/x: $(cat "$out")"

# eviction: a bounded table's bounds and policy in its header, and
# tdb-load creates the table with them; none for an unbounded table
expect_rc 0 "$cli" create evb --max-bytes 1M --max-records 5 --evict lfu
expect_rc 0 "$cli" create evr --max-records 7
for k in a b; do expect_rc 0 "$cli" put evb $k v; done
expect_rc 0 "$dump" -p -s evb
cp "$out" "$dir/evb.txt"
expect_rc 0 "$dump" -p -s evr
cp "$out" "$dir/evr.txt"
checks=$((checks + 1))
[ "$(grep '^tdb_max\|^tdb_evict' "$dir/evb.txt" | paste -sd' ')" = \
  "tdb_max_extents=512 tdb_max_bytes=1048576 tdb_max_records=5 tdb_evict=lfu" ] ||
	fail "evb's header: $(head -c 400 "$dir/evb.txt")"
checks=$((checks + 1))
grep -qx 'tdb_max_records=7' "$dir/evr.txt" &&
	grep -qx 'tdb_evict=refuse' "$dir/evr.txt" &&
	! grep -q '^tdb_max_bytes' "$dir/evr.txt" ||
	fail "evr's header: $(head -c 400 "$dir/evr.txt")"
checks=$((checks + 1))
grep -q '^tdb_max_bytes\|^tdb_max_records\|^tdb_evict' "$dir/exp.txt" &&
	fail "exp (no bound) has bound keywords"
expect_rc 0 "$load" -s evb2 -f "$dir/evb.txt" && no_err
expect_rc 0 "$load" -s evr2 -f "$dir/evr.txt" && no_err
expect_rc 0 "$cli" --json stat evb2
checks=$((checks + 1))
grep -q '"records":2,' "$out" && grep -q '"max_bytes":1048576,' "$out" &&
	grep -q '"max_records":5,' "$out" && grep -q '"evict":"lfu"' "$out" ||
	fail "evb2 not created with evb's bounds: $(cat "$out")"
expect_rc 0 "$cli" --json stat evr2
checks=$((checks + 1))
grep -q '"max_bytes":0,' "$out" && grep -q '"max_records":7,' "$out" &&
	grep -q '"evict":"refuse"' "$out" ||
	fail "evr2 not created with evr's bound: $(cat "$out")"
# a policy without a bound: tdb-load says what the owner said
{
	printf 'VERSION=3\nformat=print\ndatabase=evx\ntype=btree\n'
	printf 'tdb_evict=lru\nHEADER=END\n k\n v\nDATA=END\n'
} >"$dir/evx.txt"
expect_rc 6 "$load" -f "$dir/evx.txt"
checks=$((checks + 1))
grep -q "evx: opening the table: an eviction policy needs a bound" "$err" &&
	! "$cli" stat evx >/dev/null 2>&1 ||
	fail "tdb-load of a policy without a bound: $(cat "$err")"
# mdb_load takes the keywords (warns, goes on)
mkdir "$dir/envb"
expect_rc 0 mdb_load -f "$dir/evb.txt" "$dir/envb"
fi

# --- ordered tables (issue 28) --------------------------------------------------
if [ -z "$cli" ] || [ ! -x "$cli" ]; then
	echo "SKIP (part): no tdb CLI (\$TDB_CLI): ordered tables not checked"
else
note "ordered tables: tdb_ordered=1, records in key order, round trips"
# kind TABLE WANT: the table's kind (tdb stat --json) is WANT
kind() {
	expect_rc 0 "$cli" --json stat "$1" || return
	checks=$((checks + 1))
	grep -q "\"kind\":\"$2\"" "$out" ||
		fail "$1: not a $2 table: $(cat "$out")"
}
"$helper" gen 28 400 ord --maxkey 40 >"$dir/ordin.txt"
norm "$dir/ordin.txt" --nodb >"$dir/ordin.n"
# a dump without the line (from before, or mdb_dump's): a hash table
expect_rc 0 "$load" -s ordh -f "$dir/ordin.txt" && no_err
kind ordh hash
# --ordered: created ordered
expect_rc 0 "$load" --ordered -s ord -f "$dir/ordin.txt" && no_err
kind ord ordered
expect_rc 0 "$dump" -s ord -f "$dir/ord.txt" && no_err
checks=$((checks + 1))
[ "$(grep -c '^tdb_ordered=1$' "$dir/ord.txt")" = 1 ] ||
	fail "the ordered table's dump has no tdb_ordered=1 line"
# its records: the same, in the reference order (memcmp, shorter first)
norm "$dir/ord.txt" --nodb >"$dir/ord.n"
same "$dir/ordin.n" "$dir/ord.n" "dump of the ordered table"
checks=$((checks + 1))
n=$("$helper" norm "$dir/ord.txt" | "$helper" inorder ord) &&
	[ "$n" = 400 ] || fail "the ordered table's dump is not in key order ($n)"
# a hash table's dump: no line, and (400 random keys) not in order: the
# check above can fail
expect_rc 0 "$dump" -s ordh -f "$dir/ordh.txt" && no_err
checks=$((checks + 1))
! grep -q '^tdb_ordered' "$dir/ordh.txt" ||
	fail "a hash table's dump has a tdb_ordered line"
checks=$((checks + 1))
! "$helper" norm "$dir/ordh.txt" | "$helper" inorder ordh >/dev/null 2>&1 ||
	fail "the hash table's 400 keys came in key order: the check is blind"
# --sort holds nothing more and gives the same bytes; -M no line
expect_rc 0 "$dump" -o -s ord -f "$dir/ords.txt" && no_err
checks=$((checks + 1))
cmp -s "$dir/ord.txt" "$dir/ords.txt" ||
	fail "--sort of an ordered table is not its plain dump"
expect_rc 0 "$dump" -M -s ord -f "$dir/ordm.txt" && no_err
checks=$((checks + 1))
! grep -q '^tdb_' "$dir/ordm.txt" || fail "-M left a tdb_ keyword"
# round trip: the header makes the new table ordered, the same dump
sed 's/^database=ord$/database=ord2/' "$dir/ord.txt" >"$dir/ord2in.txt"
expect_rc 0 "$load" -f "$dir/ord2in.txt" && no_err
kind ord2 ordered
expect_rc 0 "$dump" -s ord2 -f "$dir/ord2.txt" && no_err
checks=$((checks + 1))
cmp -s "$dir/ord2in.txt" "$dir/ord2.txt" ||
	fail "the round trip of an ordered table changed its dump"
# loading an ordered dump into an existing hash table: warned, loaded
expect_rc 0 "$load" -s ordh -f "$dir/ord.txt"
expect_err "ordh: the table exists as a hash table, the dump's is ordered"
# records with deadlines among others: blocks of the table still in key
# order, each deadline back after a round trip
dl=$(( $(date +%s) * 1000 + 3600000 ))
{
	printf 'VERSION=3\nformat=print\ndatabase=/deadlines/ordd\n'
	printf 'type=btree\nHEADER=END\n'
	for i in 010 020 150 299; do printf ' k%s\n %s\n' $i $dl; done
	printf 'DATA=END\nVERSION=3\nformat=print\ndatabase=ordd\n'
	printf 'type=btree\ntdb_ordered=1\nHEADER=END\n'
	i=0
	while [ $i -lt 300 ]; do
		printf ' k%03d\n v%d\n' $(( (i * 7) % 300 )) $i
		i=$((i + 1))
	done
	printf 'DATA=END\n'
} >"$dir/orddin.txt"
expect_rc 0 "$load" -f "$dir/orddin.txt" && no_err
kind ordd ordered
expect_rc 0 "$dump" -p -s ordd -f "$dir/ordd.txt" && no_err
checks=$((checks + 1))
n=$("$helper" norm "$dir/ordd.txt" | "$helper" inorder ordd) &&
	[ "$n" = 300 ] ||
	fail "the dump of an ordered table with deadlines is not in key order ($n)"
checks=$((checks + 1))
[ "$("$helper" norm "$dir/ordd.txt" | grep -c '^/deadlines/ordd')" = 4 ] ||
	fail "the ordered table's four deadlines are not in its dump"
fi

# --- the daemon ------------------------------------------------------------------
kill -TERM "$pid"
wait "$pid"
rc=$?
pid=
checks=$((checks + 1))
[ "$rc" = 0 ] || fail "tdbd exited $rc"
checks=$((checks + 1))
if grep -q 'ERROR\|Sanitizer\|runtime error' "$dir/tdbd.log"; then
	fail "tdbd's log: $(grep 'ERROR\|Sanitizer\|runtime error' "$dir/tdbd.log" | head -3)"
fi
echo "$((checks - failures)) passed, $failures failed"
[ "$failures" = 0 ]
