#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# test_cli.sh - the tdb command line client (clients/cli) against a real
# tdbd: every command, its output (text, --json, --hex, escapes) and its
# exit code, binary keys and values with NUL bytes, a watcher in the
# background fed by other tdb processes, usage errors, a missing daemon,
# a refused user, both transports (rings, --no-rings), and a table tdbd
# set aside at start (state "aside" in tables; prlimit --as); ordered
# tables (create --ordered, KIND, scan --from/--after/--to/--through/
# --reverse in key order, ranges refused on a hash table); tdb batch
# (quoting, binary, pipelining, --txn all or nothing, --json results),
# the shell on a pty, --json-array, tables sorted with owners by name,
# stats counting only the tables the caller may see; versions, conditions
# and incr (get --version, put/del --if-*, exit 7, a transaction's
# conflict in batch and batch --txn); expiry (put --ttl/--at, also on
# batch lines, ttl, expire, persist, create --ttl, get --deadline, the
# TTL and EXPIRING columns, watch's DEL ... expired, an expired key
# absent to every command, durations refused with their reason);
# eviction (create --max-bytes/--max-records/--evict, sizes and policies
# refused with their reason, the BOUND and EVICT columns, stat's and
# stats' figures, watch's DEL ... evicted, a refused put past a bound).
#   test_cli.sh TDB TDBD
# Exit 0: all passed; 1: a check failed (each says FAIL); 77: skipped (no
# tdbd given).  The daemon runs on a socket in a scratch directory and is
# stopped at the end: it must exit 0.
set -u

tdb=${1:?usage: test_cli.sh TDB TDBD}
tdbd=${2:-}
if [ -z "$tdbd" ] || [ ! -x "$tdbd" ]; then
	echo "SKIP: no tdbd to test against"
	exit 77
fi

dir=$(mktemp -d /tmp/tdb-cli-test.XXXXXX)
chmod 755 "$dir"        # the refused-user check connects as nobody
sock=$dir/tdbd.sock
pid=
failures=0
checks=0

cleanup() {
	[ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

fail() {
	echo "FAIL: $*" >&2
	failures=$((failures + 1))
}

# The socket is 0666 so that nobody can reach it and be refused by a
# table's mode (exit 4) rather than by the socket (exit 5).
"$tdbd" --socket "$sock" --socket-mode 0666 --log-level notice \
	>"$dir/tdbd.log" 2>&1 &
pid=$!
i=0
while [ ! -S "$sock" ]; do
	i=$((i + 1))
	if [ $i -gt 200 ] || ! kill -0 "$pid" 2>/dev/null; then
		echo "FAIL: tdbd did not start" >&2
		cat "$dir/tdbd.log" >&2
		exit 1
	fi
	sleep 0.05
done
export TDB_SOCKET="$sock"

out=$dir/out
err=$dir/err
exp=$dir/exp

# run CMD...: stdout in $out, stderr in $err, exit code in $rc.
run() {
	"$@" >"$out" 2>"$err"
	rc=$?
}

# expect_rc RC CMD...: the command exits RC.
expect_rc() {
	want_rc=$1
	shift
	checks=$((checks + 1))
	run "$@"
	if [ "$rc" != "$want_rc" ]; then
		fail "$* exited $rc, want $want_rc; stderr: $(cat "$err")"
		return 1
	fi
	return 0
}

# expect_out TEXT CMD...: exit 0 and stdout exactly TEXT plus a newline
# (TEXT "" means no output at all).
expect_out() {
	want=$1
	shift
	expect_rc 0 "$@" || return 1
	if [ -z "$want" ]; then : >"$exp"; else printf '%s\n' "$want" >"$exp"; fi
	if ! cmp -s "$out" "$exp"; then
		fail "$*: stdout differs; got:"
		od -c "$out" | head -20 >&2
		echo "want:" >&2
		od -c "$exp" | head -20 >&2
	fi
}

# expect_err RC PREFIX CMD...: exit RC, nothing on stdout, stderr
# starting with PREFIX.
expect_err() {
	err_rc=$1
	prefix=$2
	shift 2
	expect_rc "$err_rc" "$@" || return 1
	[ -s "$out" ] && fail "$*: wrote to stdout: $(cat "$out")"
	case $(head -n 1 "$err") in
	"$prefix"*) ;;
	*) fail "$*: stderr '$(cat "$err")' does not start with '$prefix'" ;;
	esac
}

# has GREP-ARGS...: grep finds them in $out (the last command's stdout).
has() {
	checks=$((checks + 1))
	grep -q "$@" "$out" || fail "no '$*' in: $(cat "$out")"
}

# expect_file FILE CMD...: exit 0 and stdout byte for byte FILE.
expect_file() {
	file=$1
	shift
	expect_rc 0 "$@" || return 1
	cmp -s "$out" "$file" || fail "$*: stdout is not $file's bytes"
}

# json_check PYEXPR: every line of $out is a JSON document and PYEXPR
# (over `docs`, the list of them) is true.
if command -v python3 >/dev/null 2>&1; then
	json_check() {
		checks=$((checks + 1))
		python3 -c '
import json, sys
docs = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")]
sys.exit(0 if eval("(" + sys.argv[2] + ")") else 1)' "$out" "$1" ||
		fail "json: $1 is not true of: $(cat "$out")"
	}
else
	echo "note: no python3, JSON shapes not checked"
	json_check() { :; }
fi

# --- usage errors (2): refused before connecting ---------------------------
nosock="--socket $dir/nothing-here"
# no command off a terminal: a batch from stdin (here empty)
expect_out "" "$tdb" </dev/null
expect_err 2 "tdb: begin: a command of the shell and of batch input only" "$tdb" begin
expect_err 2 "tdb: batch: wrong number of arguments" "$tdb" batch x
expect_err 2 "tdb: get: --txn does not apply" "$tdb" $nosock get t k --txn
expect_err 2 "tdb: no such command: frob" "$tdb" frob
expect_err 2 "tdb: get: wrong number of arguments" "$tdb" $nosock get t
expect_err 2 "tdb: get: wrong number of arguments" "$tdb" $nosock get t k x
expect_err 2 "tdb: get: --prefix does not apply" "$tdb" $nosock get t k --prefix a
expect_err 2 "tdb: get: KEY is not hex" "$tdb" $nosock -k get t 0g
expect_err 2 "tdb: get: KEY is not hex" "$tdb" $nosock -k get t 123
expect_err 2 "tdb: put: give the value once" "$tdb" $nosock put t k
expect_err 2 "tdb: put: give the value once" "$tdb" $nosock put t k v --stdin
expect_err 2 "tdb: put: give the value once" "$tdb" $nosock put t k - --file /dev/null
expect_err 2 "tdb: --mode 999: not an octal number" "$tdb" $nosock create t --mode 999
expect_err 2 "tdb: --mode 1000: out of range" "$tdb" $nosock create t --mode 1000
expect_err 2 "tdb: --max-extents 0: at least 1" "$tdb" $nosock create t --max-extents 0
expect_err 2 "tdb: --limit x: not a number" "$tdb" $nosock scan t --limit x
expect_err 2 "tdb: --hex and --escape exclude" "$tdb" $nosock --hex --escape get t k
expect_err 2 "tdb: unrecognized option '--frob'" "$tdb" --frob stats
expect_err 2 "tdb: --uid no-such-user-here: no such user" "$tdb" $nosock create t --uid no-such-user-here
expect_err 2 "tdb: --count 0: at least 1" "$tdb" $nosock watch t --count 0
expect_err 2 "tdb: --limit 0: at least 1" "$tdb" $nosock scan t --limit 0
expect_err 2 "tdb: watch: --keys-only does not apply" "$tdb" $nosock watch t --keys-only
# ranges (scan of an ordered table), refused before connecting
expect_err 2 "tdb: scan: the range's start is after its end" "$tdb" $nosock scan t --from b --to a
expect_err 2 "tdb: scan: the range's start is after its end" "$tdb" $nosock scan t --after ab --through a
expect_err 2 "tdb: scan: --prefix and a range (--from" "$tdb" $nosock scan t --prefix a --to b
expect_err 2 "tdb: scan: --prefix and a range (--from" "$tdb" $nosock scan t --prefix a --reverse
expect_err 2 "tdb: give the range's start once" "$tdb" $nosock scan t --from a --after b
expect_err 2 "tdb: give the range's end once" "$tdb" $nosock scan t --to a --through b
expect_err 2 "tdb: scan: --from is empty" "$tdb" $nosock scan t --from ''
expect_err 2 "tdb: scan: --through is 4097 bytes, longer than 4096" "$tdb" $nosock scan t --through "$(head -c 4097 /dev/zero | tr '\0' k)"
expect_err 2 "tdb: scan: --to is not hex" "$tdb" $nosock -k scan t --to 0g
expect_err 2 "tdb: get: --reverse does not apply" "$tdb" $nosock get t k --reverse
expect_err 2 "tdb: scan: --ordered does not apply" "$tdb" $nosock scan t --ordered
# put's input is read before connecting; unreadable or bad input is 6
expect_err 6 "tdb: put: $dir/none: no such file" "$tdb" $nosock put t k --file "$dir/none"
expect_err 6 "tdb: put: reading $dir: is a directory" "$tdb" $nosock put t k --file "$dir"
echo zz >"$dir/zz"
expect_err 6 "tdb: put: reading stdin: not hex" "$tdb" $nosock -v put t k - <"$dir/zz"
# keys: 1 to 4096 bytes, and a new table's name: refused before
# connecting (the socket is nowhere), with the rule named
expect_err 2 "tdb: put: KEY is empty (a key has 1 to 4096 bytes)" "$tdb" $nosock put kv '' v
expect_err 2 "tdb: get: KEY is empty" "$tdb" $nosock get kv ''
expect_err 2 "tdb: del: KEY is empty" "$tdb" $nosock -k del kv ''
long=$(head -c 4097 /dev/zero | tr '\000' k)
expect_err 2 "tdb: put: KEY is 4097 bytes, longer than 4096" "$tdb" $nosock put kv "$long" v
expect_err 2 "tdb: get: KEY is 4097 bytes, longer than 4096" "$tdb" $nosock get kv "$long"
expect_err 2 "tdb: create: table name has a space" "$tdb" $nosock create 'bad name'
head -c 1048577 /dev/zero >"$dir/toobig"
expect_err 2 "tdb: put: VALUE is 1048577 bytes, longer than 1048576" "$tdb" $nosock put kv k --file "$dir/toobig"
expect_rc 0 "$tdb" help
grep -q '^Usage: tdb ' "$out" || fail "help: $(head -n 1 "$out")"
expect_rc 0 "$tdb" --help
grep -q '^Exit codes: 0 ok, 1 not found, 2 usage error, 3 exists' "$out" ||
	fail "--help does not give the exit codes"
expect_rc 0 "$tdb" --version
grep -q '^tdb [0-9]' "$out" || fail "--version says '$(cat "$out")'"

# --- no daemon (5) -----------------------------------------------------------
# a connect failure is worded as one (not "no such table or key"), once
expect_err 5 "tdb: stats: cannot connect to tdbd at $dir/nothing-here: no such socket (is tdbd running?)" "$tdb" $nosock stats
[ "$(wc -l <"$err")" = 1 ] || fail "no daemon: $(cat "$err")"
expect_err 5 "tdb: tables: cannot connect to tdbd at $dir/nothing-here: no such socket" env TDB_SOCKET="$dir/nothing-here" "$tdb" tables
expect_err 5 "tdb: get: cannot connect to tdbd at $dir/nothing-here: no such socket" env TDB_SOCKET="$dir/nothing-here" "$tdb" get t k
: >"$dir/not-a-socket"
expect_err 5 "tdb: stats: cannot connect to tdbd at $dir/not-a-socket: " "$tdb" --socket "$dir/not-a-socket" stats
grep -q "table" "$err" && fail "not a socket: $(cat "$err")"

# --- tables: create, list, stat, drop --------------------------------------
expect_out "" "$tdb" create t1 --mode 0640
expect_err 3 "tdb: create t1: table exists" "$tdb" create t1
expect_out '{"ok":true}' "$tdb" --json create t2 --max-extents 3
expect_rc 0 "$tdb" tables
has '^NAME  *RECORDS  *BYTES  *EXTENTS  *PAGE  *TTL  *EXPIRING  *BOUND  *EVICT  *OWNER  *MODE  *STATE  *KIND$'
[ "$(grep -c . "$out")" = 3 ] || fail "tables: not a header and 2 lines: $(cat "$out")"
run "$tdb" tables
has -E "^t1 +0 +0 +[0-9]+/[0-9]+ +[0-9]+ +- +0 +- +- +$(id -un):$(id -gn) +0640 +ok +hash$"
run "$tdb" tables
has -E '^t2 +0 +0 +[0-9]+/3 +[0-9]+ +- +0 +- +- +[^ ]+:[^ ]+ +0600 +ok +hash$'
expect_rc 0 "$tdb" --json tables
json_check 'sorted(d["name"] for d in docs) == ["t1", "t2"] and
	[d["mode"] for d in docs if d["name"] == "t1"] == ["0640"] and
	[d["max_extents"] for d in docs if d["name"] == "t2"] == [3] and
	all(d["state"] == "ok" for d in docs)'
expect_rc 0 "$tdb" stat t2
has -x 'max_extents *3'
has -x 'mode *0600'
has -x 'name *t2'
has -x 'state *ok'
has -x 'default_ttl_ms *0'
has -x 'expiring *0'
has -x 'expired *0'
has -x 'max_bytes *0'
has -x 'max_records *0'
has -x 'evict *refuse'
has -x 'evicted *0'
has -x 'kind *hash'
[ "$(wc -l <"$out")" = 22 ] || fail "stat: $(wc -l <"$out") lines, want 22"
expect_out "" "$tdb" drop t2
expect_err 1 "tdb: drop t2: no such table" "$tdb" drop t2
expect_err 1 "tdb: stat t2: no such table" "$tdb" stat t2
# a missing table or key is named, and worded as such (not "no such
# table or key: no such table")
expect_err 1 "tdb: get t2 k: no such table" "$tdb" get t2 k
[ "$(cat "$err")" = "tdb: get t2 k: no such table" ] ||
	fail "get of a missing table: $(cat "$err")"

# --- put, get, del ------------------------------------------------------------
expect_out "" "$tdb" put t1 alice '{"age": 31}'
printf '{"age": 31}' >"$exp.alice"
expect_file "$exp.alice" "$tdb" get t1 alice
expect_out '{"key":"alice","value":"{\"age\": 31}"}' "$tdb" --json get t1 alice
expect_out '7b22616765223a2033317d' "$tdb" --hex get t1 alice

# binary: NUL bytes, a newline, 0xff; from stdin, a file and "-"
printf 'bin\000val\n\377' >"$dir/bin"
expect_out "" "$tdb" put t1 carol --stdin <"$dir/bin"
expect_file "$dir/bin" "$tdb" get t1 carol
expect_out '62696e0076616c0aff' "$tdb" --hex get t1 carol
expect_out 'bin\x00val\n\xff' "$tdb" --escape get t1 carol
expect_out '{"key":"carol","value_hex":"62696e0076616c0aff"}' "$tdb" --json get t1 carol
expect_out "" "$tdb" put t1 dave --file "$dir/bin"
expect_file "$dir/bin" "$tdb" get t1 dave
expect_out "" "$tdb" put t1 erin - <"$dir/bin"
expect_file "$dir/bin" "$tdb" get t1 erin
# hex out, hex in: `--hex get | -v put -` copies a value exactly
"$tdb" --hex get t1 carol | "$tdb" -v put t1 frank - ||
	fail "--hex get | -v put - failed"
expect_file "$dir/bin" "$tdb" get t1 frank
# binary keys (-k) and values (-v) given in hex
expect_out "" "$tdb" -k -v put t1 00ff0a00 0001fe
expect_out '0001fe' "$tdb" -k --hex get t1 00ff0a00
expect_out '{"key_hex":"00ff0a00","value_hex":"0001fe"}' "$tdb" -k --json get t1 00ff0a00
expect_err 1 "tdb: get t1 00ff0a: no such key" "$tdb" -k get t1 00ff0a
# an empty value
expect_out "" "$tdb" put t1 empty ''
expect_out "" "$tdb" get t1 empty
expect_out '{"key":"empty","value":""}' "$tdb" --json get t1 empty
# -- lets a value start with '-'
expect_out "" "$tdb" put t1 neg -- -5
expect_out "-5" "$tdb" --escape get t1 neg

# --no-overwrite: 3 and the value stays; a new key goes in
expect_err 3 "tdb: put t1 alice: key exists" "$tdb" put t1 alice x --no-overwrite
expect_file "$exp.alice" "$tdb" get t1 alice
expect_out "" "$tdb" put t1 --no-overwrite gina g
expect_out "g" "$tdb" --escape get t1 gina

# missing keys: 1, and nothing on stdout
expect_err 1 "tdb: get t1 nobody: no such key" "$tdb" get t1 nobody
[ "$(cat "$err")" = "tdb: get t1 nobody: no such key" ] ||
	fail "get of a missing key: $(cat "$err")"
# unprintable bytes of the names are escaped as scan escapes them
expect_err 1 'tdb: get t1 a\nb\xff: no such key' "$tdb" get t1 "$(printf 'a\nb\377')"
expect_err 1 "tdb: del t1 nobody: no such key" "$tdb" del t1 nobody
expect_out '{"ok":true}' "$tdb" --json del t1 gina
expect_err 1 "tdb: get t1 gina: no such key" "$tdb" get t1 gina
expect_out "" "$tdb" del t1 neg

# --- scan ---------------------------------------------------------------------
for k in 1 2 3 4 5; do
	"$tdb" put t1 "p:$k" "v$k" || fail "put p:$k"
done
"$tdb" put t1 q:1 w || fail "put q:1"
# t1 now: alice carol dave erin frank 00ff0a00 empty p:1-5 q:1 = 13
expect_rc 0 "$tdb" stat t1
has -x 'records *13'
expect_rc 0 "$tdb" scan t1 --prefix p: --keys-only
printf 'p:%s\n' 1 2 3 4 5 >"$exp"
sort "$out" | cmp -s - "$exp" || fail "scan --prefix p: --keys-only: $(cat "$out")"
expect_rc 0 "$tdb" scan t1 --prefix p:
printf 'p:%s\tv%s\n' 1 1 2 2 3 3 4 4 5 5 >"$exp"
sort "$out" | cmp -s - "$exp" || fail "scan --prefix p:: $(cat "$out")"
expect_rc 0 "$tdb" scan t1 --prefix p: --limit 2
[ "$(grep -c '^p:[1-5]	v[1-5]$' "$out")" = 2 ] && [ "$(wc -l <"$out")" = 2 ] ||
	fail "scan --limit 2: $(cat "$out")"
expect_rc 0 "$tdb" scan t1
[ "$(wc -l <"$out")" = 13 ] || fail "scan: $(wc -l <"$out") lines, want 13"
has -xF 'carol	bin\x00val\n\xff'
has -xF '\x00\xff\n\x00	\x00\x01\xfe'
has -xF 'empty	'
expect_out '00ff0a00	0001fe' "$tdb" -k --hex scan t1 --prefix 00ff
expect_out "" "$tdb" scan t1 --prefix zzz
expect_rc 0 "$tdb" --json scan t1
json_check 'len(docs) == 13 and
	{"key": "carol", "value_hex": "62696e0076616c0aff"} in docs and
	{"key": "p:3", "value": "v3"} in docs and
	{"key_hex": "00ff0a00", "value_hex": "0001fe"} in docs'
expect_rc 0 "$tdb" --json scan t1 --keys-only --prefix p:
json_check 'sorted(d["key"] for d in docs) == ["p:1", "p:2", "p:3", "p:4", "p:5"]
	and all(len(d) == 1 for d in docs)'

# --- ordered tables: create --ordered, scan's ranges ---------------------------
expect_out "" "$tdb" create o1 --ordered
run "$tdb" tables
has -E "^o1 +0 +0 +[0-9]+/[0-9]+ +[0-9]+ +- +0 +- +- +[^ ]+:[^ ]+ +0600 +ok +ordered$"
expect_rc 0 "$tdb" stat o1
has -x 'kind *ordered'
expect_rc 0 "$tdb" --json stat o1
json_check 'len(docs) == 1 and docs[0]["kind"] == "ordered"'
for k in b a c ab d aa; do
	"$tdb" put o1 "$k" "v$k" || fail "put o1 $k"
done
"$tdb" -k put o1 00ff ff || fail "put o1 00ff"
"$tdb" -k put o1 ff00 00 || fail "put o1 ff00"
# an ordered table's scan (no range) is in key order, shorter first
expect_out "$(printf '\\x00\\xff\na\naa\nab\nb\nc\nd\n\\xff\\x00')" "$tdb" scan o1 --keys-only
expect_out "$(printf 'a\naa\nab\nb')" "$tdb" scan o1 --keys-only --from a --to c
expect_out "$(printf 'aa\nab\nb\nc')" "$tdb" scan o1 --keys-only --after a --through c
expect_out "$(printf 'b\nab\naa\na')" "$tdb" scan o1 --keys-only --from a --to c --reverse
expect_out "$(printf 'c\nb\nab\naa')" "$tdb" scan o1 --keys-only --after a --through c --reverse
expect_out "$(printf '\\xff\\x00\nd')" "$tdb" scan o1 --keys-only --reverse --limit 2
expect_out "ab	vab" "$tdb" scan o1 --from ab --through ab
expect_out "" "$tdb" scan o1 --from b --to b
expect_out "" "$tdb" scan o1 --after b --through b
expect_out "" "$tdb" scan o1 --from e --to f
expect_out "$(printf '\\x00\\xff\na')" "$tdb" scan o1 --keys-only --to aa
expect_out "$(printf 'd\n\\xff\\x00')" "$tdb" scan o1 --keys-only --after c
expect_out '6161	766161' "$tdb" -k --hex scan o1 --from 6161 --to 6162
expect_out 'ff00	3030' "$tdb" -k --hex scan o1 --from ff
expect_out '{"key":"aa","value":"vaa"}' "$tdb" --json scan o1 --after a --limit 1
expect_out "$(printf 'a\naa')" "$tdb" --no-rings scan o1 --keys-only --from a --to ab
expect_out "$(printf 'b\nab')" "$tdb" --no-rings scan o1 --keys-only --to c --reverse --limit 2
printf 'scan o1 --keys-only --from c\nscan o1 --keys-only --to a --reverse\n' >"$dir/t"
expect_out "$(printf 'c\nd\n\\xff\\x00\n\\x00\\xff')" "$tdb" batch <"$dir/t"
expect_err 6 "tdb: scan t1: range scans need an ordered table" "$tdb" scan t1 --from a
expect_out "" "$tdb" drop o1

# --- stats and --json stat ----------------------------------------------------
expect_rc 0 "$tdb" stats
for f in tables clients watches txns requests errors uptime_ms accepted \
	cleanups txns_aborted watches_dropped rings throttled dumps \
	rings_freed stuck violations wal_records wal_lsn wal_durable \
	wal_syncs checkpoints ckpt_failures ckpt_lsn tables_aside \
	readers_expired expired evicted; do
	grep -Eq "^$f +[0-9]+$" "$out" || fail "stats has no $f line"
done
[ "$(wc -l <"$out")" = 28 ] || fail "stats: $(wc -l <"$out") lines, want 28"
has -Ex 'tables +1'
expect_rc 0 "$tdb" --json stats
json_check 'len(docs) == 1 and sorted(docs[0]) == sorted("""tables clients
	watches txns requests errors uptime_ms accepted cleanups txns_aborted
	watches_dropped rings throttled dumps rings_freed stuck
	violations wal_records wal_lsn wal_durable wal_syncs checkpoints
	ckpt_failures ckpt_lsn tables_aside readers_expired
	expired evicted""".split()) and
	docs[0]["tables"] == 1 and
	docs[0]["tables_aside"] == 0 and
	docs[0]["requests"] > 0 and docs[0]["clients"] >= 1 and
	docs[0]["wal_records"] > 0 and
	docs[0]["wal_durable"] == docs[0]["wal_lsn"]'
expect_rc 0 "$tdb" --json stat t1
json_check 'len(docs) == 1 and docs[0]["name"] == "t1" and
	docs[0]["records"] == 13 and docs[0]["mode"] == "0640" and
	sorted(docs[0]) == sorted("""name records bytes_used bytes_allocated
	bytes_pending extents max_extents page_size index_nodes index_buckets
	uid gid mode state default_ttl_ms expiring expired max_bytes
	max_records evict evicted kind""".split()) and
	docs[0]["bytes_used"] > 0 and
	docs[0]["state"] == "ok"'

# --- the other transport: --no-rings says and does the same ------------------
expect_file "$dir/bin" "$tdb" --no-rings get t1 carol
expect_out "" "$tdb" --no-rings put t1 p:6 v6
expect_rc 0 "$tdb" --no-rings scan t1 --prefix p: --keys-only
[ "$(wc -l <"$out")" = 6 ] || fail "--no-rings scan: $(cat "$out")"
expect_out "" "$tdb" --no-rings del t1 p:6
expect_err 1 "tdb: get t1 p:6: no such key" "$tdb" --no-rings get t1 p:6

# --- watch ----------------------------------------------------------------------
# wait_watches N: until the daemon counts N watches: the watchers are set
# up before anything is written that they must see (and earlier ones are
# gone before a new one is counted).
wait_watches() {
	i=0
	while :; do
		n=$("$tdb" stats | sed -n 's/^watches  *//p')
		[ "${n:-x}" = "$1" ] && return 0
		i=$((i + 1))
		[ $i -lt 200 ] || { fail "watchers did not show up"; return 1; }
		sleep 0.05
	done
}
wait_watches 0
"$tdb" watch t1 --count 4 --timeout 20000 >"$dir/w1" 2>"$dir/w1.err" &
w1=$!
"$tdb" --json watch t1 --prefix w: --count 2 --timeout 20000 \
	>"$dir/w2" 2>"$dir/w2.err" &
w2=$!
"$tdb" --no-rings --hex watch t1 --count 1 --timeout 20000 \
	>"$dir/w3" 2>"$dir/w3.err" &
w3=$!
wait_watches 3
"$tdb" put t1 w:1 a || fail "put w:1"
printf 'b\000' | "$tdb" put t1 w:2 - || fail "put w:2"
"$tdb" del t1 w:1 || fail "del w:1"
"$tdb" put t1 x:1 'tab	in' || fail "put x:1"
"$tdb" put t1 x:2 'not seen by the first watcher' || fail "put x:2"
for w in w1 w2 w3; do
	eval "wp=\$$w"
	checks=$((checks + 1))
	wait "$wp" || fail "watcher $w exited $?: $(cat "$dir/$w.err")"
done
printf 'PUT\tw:1\ta\nPUT\tw:2\tb\\x00\nDEL\tw:1\nPUT\tx:1\ttab\\tin\n' >"$exp"
cmp -s "$dir/w1" "$exp" || fail "watch: got $(od -c "$dir/w1")"
printf 'PUT\t773a31\t61\n' >"$exp"
cmp -s "$dir/w3" "$exp" || fail "watch --hex: got $(cat "$dir/w3")"
out=$dir/w2
json_check 'len(docs) == 2 and
	docs[0]["event"] == "put" and docs[0]["key"] == "w:1" and
	docs[0]["value"] == "a" and
	docs[1] == {"event": "put", "seq": docs[1]["seq"], "key": "w:2",
	"value_hex": "6200"} and docs[1]["seq"] > docs[0]["seq"]'
out=$dir/out

# a watch that ends at the table's drop; one that times out short of --count
expect_out "" "$tdb" create t3
wait_watches 0
"$tdb" watch t3 --timeout 20000 >"$dir/w4" 2>"$dir/w4.err" &
w4=$!
wait_watches 1
"$tdb" put t3 k v || fail "put t3"
"$tdb" drop t3 || fail "drop t3"
checks=$((checks + 1))
wait "$w4" || fail "watch of a dropped table exited $?: $(cat "$dir/w4.err")"
printf 'PUT\tk\tv\nDROP\n' >"$exp"
cmp -s "$dir/w4" "$exp" || fail "watch to the drop: got $(cat "$dir/w4")"
expect_err 6 "tdb: watch: timed out: 0 of 2 changes" "$tdb" watch t1 --count 2 --timeout 200
expect_out "" "$tdb" watch t1 --timeout 100
expect_err 1 "tdb: watch nosuch: no such table" "$tdb" watch nosuch --timeout 100

# a watcher that falls behind: its output pipe is full (not read until
# $dir/go exists) while 40 puts of 200 kB lap the 4 MiB feed; it says
# OVERRUN with the exact number lost, goes on, and ends at the drop.
expect_out "" "$tdb" create t6
head -c 200000 /dev/zero >"$dir/big"
wait_watches 0
{ "$tdb" watch t6 --timeout 60000 2>"$dir/w6.err"; echo $? >"$dir/w6.rc"; } |
	{ while [ ! -e "$dir/go" ]; do sleep 0.05; done; cat; } >"$dir/w6" &
w6=$!
wait_watches 1
i=0
while [ $i -lt 40 ]; do
	i=$((i + 1))
	"$tdb" put t6 "k$i" --file "$dir/big" || fail "put k$i to t6"
done
touch "$dir/go"
"$tdb" drop t6 || fail "drop t6"
wait "$w6"
checks=$((checks + 1))
[ "$(cat "$dir/w6.rc")" = 0 ] ||
	fail "lapped watcher exited $(cat "$dir/w6.rc"): $(cat "$dir/w6.err")"
lost=$(sed -n 's/^OVERRUN lost=\([0-9][0-9]*\)$/\1/p' "$dir/w6")
puts=$(grep -c '^PUT	k[0-9]*	\\x00\\x00' "$dir/w6")
checks=$((checks + 1))
if [ -z "$lost" ] || [ "$lost" -lt 1 ] || [ $((lost + puts)) != 40 ] ||
   [ "$(tail -n 1 "$dir/w6")" != DROP ]; then
	fail "lapped watcher: lost '$lost' + $puts PUT lines != 40, or no DROP:"
	cut -c 1-40 "$dir/w6" >&2
fi

# table names: a new one is letters, digits, _ . - : only, not starting
# with - or . (a usage error, nothing sent).  Names from before the rule
# (UTF-8 a JSON string, other bytes >= 0x80 in hex, and escaped text):
# tests/integration/test_names.c, which can make such tables.
for tname in "$(printf 't\303\251')" "$(printf 't\303')" -rf .hidden \
	'a b' 'a$b'; do
	expect_rc 2 "$tdb" create -- "$tname"
	grep -q "^tdb: create: table name " "$err" ||
		fail "create '$tname': $(cat "$err")"
done
expect_out "" "$tdb" create "ok_Name-1.2:3"
expect_out "" "$tdb" drop "ok_Name-1.2:3"

# --- batch: commands from stdin ---------------------------------------------------
# Quoting as sh (what ./run demo prints pastes as is, "tdb" first or not),
# scan's escapes in double quotes (NUL bytes too), -k/-v on a line; get
# prints the value escaped, a line each, in line order; a put and a get
# of the same key in flight keep their order.
expect_out "" "$tdb" create b1
cat >"$dir/batch" <<'EOF'
# a comment, then an empty line

tdb put b1 alice '{"age": 31}'
put b1 "bin\x00key" "v\x00\xff\n"
-k -v put b1 00ff 0a0b
put b1 'sp ace' "it's"   # a comment after the words
put b1 k 1
put b1 k 2
get b1 k
get b1 alice
get b1 "bin\x00key"
--hex get b1 "bin\x00key"
-k get b1 00ff
/usr/bin/tdb get b1 sp\ ace
EOF
printf '%s\n' 2 '{"age": 31}' 'v\x00\xff\n' 7600ff0a '\n\x0b' "it's" >"$exp.b"
expect_file "$exp.b" "$tdb" batch <"$dir/batch"
expect_out '7600ff0a' "$tdb" -k --hex get b1 62696e006b6579
expect_out "it's" "$tdb" --escape get b1 'sp ace'
expect_out '{"age": 31}' "$tdb" --escape get b1 alice
# tdb with no command off a terminal is the same
expect_file "$exp.b" "$tdb" <"$dir/batch"

# many lines: all applied, results in order
expect_out "" "$tdb" create b2
awk 'BEGIN { for (i = 1; i <= 5000; i++) printf "put b2 k%d v%d\n", i, i }' \
	>"$dir/many"
expect_out "" "$tdb" batch <"$dir/many"
expect_rc 0 "$tdb" stat b2
has -x 'records *5000'
awk 'BEGIN { for (i = 1; i <= 5000; i++) printf "get b2 k%d\n", i }' |
	"$tdb" batch >"$out" 2>"$err"
checks=$((checks + 1))
awk 'BEGIN { for (i = 1; i <= 5000; i++) printf "v%d\n", i }' |
	cmp -s - "$out" || fail "batch of 5000 gets: not in line order"

# a failing line is reported with its number; the others run; the exit
# code is the first failure's
cat >"$dir/bad" <<'EOF'
put b1 x 1
get b1 nosuch
put nosuchtable k v
put b1 y "unclosed
frob
put b1 k - 
put b1 z 3
EOF
expect_err 1 "tdb: line 2: get b1 nosuch: no such key" "$tdb" batch <"$dir/bad"
for m in "line 3: put nosuchtable k: no such table" \
	"line 4: a double quote is not closed" "line 5: no such command: frob" \
	"line 6: put: - and --stdin read the commands' input"; do
	checks=$((checks + 1))
	grep -qF "tdb: $m" "$err" || fail "batch: no '$m' in: $(cat "$err")"
done
expect_out "3" "$tdb" --escape get b1 z

# --json: a document per line, naming it; --json-array: one array
printf 'put b1 j 1\nget b1 j\nget b1 nosuch\ndel b1 j\nstat b1\n' >"$dir/j"
expect_rc 1 "$tdb" --json batch <"$dir/j"
json_check 'len(docs) == 5 and docs[0] == {"line": 1, "ok": True} and
	docs[1] == {"line": 2, "key": "j", "value": "1"} and
	docs[2]["line"] == 3 and docs[2]["exit"] == 1 and
	docs[2]["error"] == "get b1 nosuch: no such key" and
	docs[3] == {"line": 4, "ok": True} and docs[4]["name"] == "b1"'
expect_rc 1 "$tdb" --json-array batch <"$dir/j"
json_check 'len(docs) == 1 and len(docs[0]) == 5 and
	docs[0][1] == {"line": 2, "key": "j", "value": "1"}'
expect_out "[]" "$tdb" --json-array scan b1 --prefix nothing
expect_rc 0 "$tdb" --json-array scan b2 --prefix k1 --limit 3
json_check 'len(docs) == 1 and len(docs[0]) == 3 and
	all(d["key"].startswith("k1") for d in docs[0])'
expect_rc 0 "$tdb" --json-array get b1 z
json_check 'docs == [[{"key": "z", "value": "3"}]]'
expect_err 2 "tdb: line 1: --json applies to the whole batch" "$tdb" batch <<'EOF'
--json get b1 z
EOF

# --txn: all or nothing; a failed line aborts it and says which
expect_out "" "$tdb" create b3
expect_out "" "$tdb" put b3 pre 0
printf 'put b3 a 1\nput b3 b 2\nput nosuchtable k v\nput b3 c 3\n' >"$dir/t"
expect_err 1 "tdb: line 3: put nosuchtable k: no such table" "$tdb" batch --txn <"$dir/t"
grep -q "^tdb: batch: line 3 failed: the transaction is aborted, nothing applied$" "$err" ||
	fail "batch --txn: $(cat "$err")"
printf 'put b3 a 1\nput b3 pre 1 --no-overwrite\n' >"$dir/t"
expect_err 3 "tdb: batch: commit: " "$tdb" batch --txn <"$dir/t"
printf 'put b3 a 1\nput b3 b 2\nscan b3\n' >"$dir/t"
expect_err 2 "tdb: line 3: scan: not in a transaction" "$tdb" batch --txn <"$dir/t"
expect_rc 0 "$tdb" stat b3
has -x 'records *1'
printf 'put b3 a 1\ndel b3 pre\nget b3 a\nput b3 "x\\x00" 2\n' >"$dir/t"
expect_out "1" "$tdb" batch --txn <"$dir/t"
expect_rc 0 "$tdb" --hex scan b3
[ "$(LC_ALL=C sort "$out")" = "$(printf '61\t31\n7800\t32')" ] ||
	fail "batch --txn did not apply: $(cat "$out")"
# begin/commit/abort in a batch; an abort drops, a failed line aborts
printf 'begin\nput b3 q 1\nabort\nbegin\nput b3 r 1\nget b3 none\nput b3 s 1\ncommit\nget b3 q\n' >"$dir/t"
expect_err 1 "tdb: line 6: get b3 none: no such key" "$tdb" batch <"$dir/t"
grep -q "line 8: commit: line 6 failed: the transaction is aborted" "$err" ||
	fail "batch commit after a failure: $(cat "$err")"
grep -q "line 9: get b3 q: no such key" "$err" || fail "abort: $(cat "$err")"
expect_err 1 "tdb: get b3 r: no such key" "$tdb" get b3 r
printf 'begin\nput b3 q 1\ncommit\n' | "$tdb" batch || fail "begin, commit"
expect_out "1" "$tdb" --escape get b3 q

# --- versions, conditions, incr (issue 24) -------------------------------------
expect_out "" "$tdb" create v1
expect_out "1" "$tdb" incr v1 n
expect_out "42" "$tdb" incr v1 n 41
expect_out "-8" "$tdb" incr v1 n -50
expect_out "-8" "$tdb" incr v1 n -- 0
expect_out "-8" "$tdb" --escape get v1 n
expect_rc 0 "$tdb" --json incr v1 n 8
json_check 'docs == [{"key": "n", "value": 0}]'
expect_out "" "$tdb" put v1 s abc
expect_err 6 "tdb: incr v1 s: " "$tdb" incr v1 s
expect_out "" "$tdb" put v1 big 9223372036854775807
expect_err 6 "tdb: incr v1 big: " "$tdb" incr v1 big
expect_out "9223372036854775807" "$tdb" --escape get v1 big
expect_err 2 "tdb: incr: DELTA x: not an integer" "$tdb" $nosock incr v1 n x
expect_err 2 "tdb: incr: DELTA 9223372036854775808: out of" "$tdb" $nosock incr v1 n 9223372036854775808
expect_err 2 "tdb: incr: wrong number of arguments" "$tdb" $nosock incr v1
# get --version: the version, a tab, the value as get prints it
expect_rc 0 "$tdb" get v1 s --version
ver=$(cut -f1 "$out")
checks=$((checks + 1))
case $ver in
''|*[!0-9]*) fail "get --version: no version in '$(cat "$out")'" ;;
esac
[ "$(cut -f2- "$out")" = abc ] || fail "get --version: '$(cat "$out")'"
expect_out "$ver	abc" "$tdb" --escape get --version v1 s
expect_rc 0 "$tdb" --json get v1 s --version
json_check "docs == [{\"key\": \"s\", \"value\": \"abc\", \"version\": $ver}]"
# a version changes on every write; compare and swap
expect_out "" "$tdb" put v1 s new --if-version "$ver"
expect_err 7 "tdb: put v1 s: " "$tdb" put v1 s newer --if-version "$ver"
expect_out "new" "$tdb" --escape get v1 s
expect_err 7 "tdb: del v1 s: " "$tdb" del v1 s --if-version "$ver"
expect_rc 0 "$tdb" get v1 s --version
ver2=$(cut -f1 "$out")
checks=$((checks + 1))
[ "$ver2" -gt "$ver" ] 2>/dev/null || fail "version $ver2 after $ver"
expect_out "" "$tdb" del v1 s --if-version "$ver2"
expect_err 1 "tdb: get v1 s: " "$tdb" get v1 s --version
expect_err 7 "tdb: put v1 s: " "$tdb" put v1 s x --if-version "$ver2"
# if-absent (= --no-overwrite), if-present
expect_out "" "$tdb" put v1 s a --if-absent
expect_err 3 "tdb: put v1 s: " "$tdb" put v1 s b --if-absent
expect_err 1 "tdb: put v1 nokey: " "$tdb" put v1 nokey b --if-present
expect_out "" "$tdb" put v1 s c --if-present
expect_out "c" "$tdb" --escape get v1 s
expect_err 2 "tdb: put: give one condition" "$tdb" $nosock put v1 s x --if-absent --if-present
expect_err 2 "tdb: put: give one condition" "$tdb" $nosock put v1 s x --no-overwrite --if-version 3
expect_err 2 "tdb: --if-version 0: no record has version 0" "$tdb" $nosock put v1 s x --if-version 0
expect_err 2 "tdb: get: --if-version does not apply" "$tdb" $nosock get v1 s --if-version 3
expect_err 2 "tdb: incr: --if-present does not apply" "$tdb" $nosock incr v1 s --if-present
# --version anywhere but after get is tdb's own
expect_rc 0 "$tdb" --version
has '^tdb '
# in a batch: pipelined, in line order; failures named
printf 'incr v1 c\nincr v1 c 5\nget v1 c --version\nput v1 c 9 --if-version 1\nincr v1 s\nget v1 c\n' >"$dir/t"
expect_rc 7 "$tdb" batch <"$dir/t"
checks=$((checks + 1))
sed -n 3p "$out" | grep -Eqx '[0-9]+	6' || fail "batch get --version: $(cat "$out")"
[ "$(sed -n '1p;2p;4p' "$out")" = "$(printf '1\n6\n6')" ] || fail "batch incr: $(cat "$out")"
grep -q "^tdb: line 4: put v1 c: " "$err" || fail "batch --if-version: $(cat "$err")"
grep -q "^tdb: line 5: incr v1 s: " "$err" || fail "batch incr of text: $(cat "$err")"
expect_rc 0 "$tdb" --json batch <<'EOF'
incr v1 j 3
get v1 j --version
EOF
json_check 'docs[0] == {"line": 1, "key": "j", "value": 3} and docs[1]["value"] == "3" and docs[1]["version"] > 0'
# a transaction whose read key another client changes: the commit fails
# (exit 7), naming the table and key, and applies nothing.  The batch
# reads from a FIFO; `help` (with --json it goes to stderr, unbuffered)
# drains the window first, so once its text is there the get has run,
# and only then does the other tdb write.
wait_help() {   # wait_help FILE: up to 20 s for the help text in FILE
	i=0
	until grep -q "^Commands, as on" "$1" 2>/dev/null; do
		i=$((i + 1))
		[ $i -gt 400 ] && { fail "the batch's help never came"; return 1; }
		sleep 0.05
	done
}
expect_out "" "$tdb" put v1 acct 1
mkfifo "$dir/fifo"
"$tdb" --json batch <"$dir/fifo" >"$out" 2>"$err" &
bpid=$!
exec 3>"$dir/fifo"
printf 'begin\nget v1 acct\nhelp\n' >&3
wait_help "$err"
"$tdb" put v1 acct 2 || fail "put under a transaction"
printf 'put v1 acct 3\nput v1 other 1\ncommit\n' >&3
exec 3>&-
wait "$bpid"
rc=$?
checks=$((checks + 1))
[ "$rc" = 7 ] || fail "batch commit after a conflict exited $rc: $(cat "$err")"
grep -q "^tdb: line 6: commit: conflict: .*acct.*nothing was applied: run the transaction again$" "$err" ||
	fail "batch commit conflict: $(cat "$err")"
json_check 'docs[-1]["line"] == 6 and docs[-1]["exit"] == 7'
expect_out "2" "$tdb" --escape get v1 acct
expect_err 1 "tdb: get v1 other: " "$tdb" get v1 other
# the same with --txn
"$tdb" --json batch --txn <"$dir/fifo" >"$out" 2>"$err" &
bpid=$!
exec 3>"$dir/fifo"
printf 'get v1 acct\nput v1 f0 x\nhelp\n' >&3
wait_help "$err"
"$tdb" put v1 acct 4 || fail "put under a --txn batch"
printf 'put v1 acct 5\n' >&3
exec 3>&-
wait "$bpid"
rc=$?
checks=$((checks + 1))
[ "$rc" = 7 ] || fail "batch --txn after a conflict exited $rc: $(cat "$err")"
grep -q "^tdb: batch: commit: conflict: .*acct.*run the transaction again$" "$err" ||
	fail "batch --txn conflict: $(cat "$err")"
expect_out "4" "$tdb" --escape get v1 acct
expect_err 1 "tdb: get v1 f0: " "$tdb" get v1 f0
# without a conflict the same commits
printf 'get v1 acct\nput v1 acct 6\nincr v1 n\n' | "$tdb" batch --txn >"$out" 2>"$err" ||
	fail "batch --txn without a conflict: $(cat "$err")"
expect_out "6" "$tdb" --escape get v1 acct

# --- expiry (issue 27): --ttl, --at, ttl, expire, persist, create --ttl -----
# durations refused before connecting (2), each saying what is wrong
expect_err 2 "tdb: --ttl 0: zero" "$tdb" $nosock put t k v --ttl 0
expect_err 2 "tdb: --ttl 0ms: zero" "$tdb" $nosock put t k v --ttl 0ms
expect_err 2 "tdb: --ttl -5: not a duration: negative" "$tdb" $nosock put t k v --ttl -5
expect_err 2 "tdb: --ttl 1.5s: not a duration: a fraction" "$tdb" $nosock put t k v --ttl 1.5s
expect_err 2 "tdb: --ttl soon: not a duration" "$tdb" $nosock put t k v --ttl soon
expect_err 2 "tdb: --ttl 5min: not a duration: unknown unit" "$tdb" $nosock put t k v --ttl 5min
expect_err 2 "tdb: --ttl 3651d: over 10 years" "$tdb" $nosock put t k v --ttl 3651d
expect_err 2 "tdb: --ttl 315360000001ms: over 10 years" "$tdb" $nosock put t k v --ttl 315360000001ms
expect_err 2 "tdb: --at 0: a deadline is milliseconds since the epoch" "$tdb" $nosock put t k v --at 0
expect_err 2 "tdb: --at x: not a number" "$tdb" $nosock put t k v --at x
expect_err 2 "tdb: put: give --ttl or --at, not both" "$tdb" $nosock put t k v --ttl 1s --at 5
expect_err 2 "tdb: get: --ttl does not apply here" "$tdb" $nosock get t k --ttl 1s
expect_err 2 "tdb: del: --ttl does not apply here" "$tdb" $nosock del t k --ttl 1s
expect_err 2 "tdb: create: --at does not apply here" "$tdb" $nosock create t --at 5
expect_err 2 "tdb: --ttl 0: zero" "$tdb" $nosock create t --ttl 0
expect_err 2 "tdb: expire: give the deadline once: DURATION, --ttl DURATION or --at MS" "$tdb" $nosock expire t k
expect_err 2 "tdb: expire: give the deadline once: DURATION, --ttl DURATION or --at MS" "$tdb" $nosock expire t k 5s --at 7
expect_err 2 "tdb: expire: give the deadline once: DURATION, --ttl DURATION or --at MS" "$tdb" $nosock expire t k 5s --ttl 7s
expect_err 2 "tdb: expire: give --ttl or --at, not both" "$tdb" $nosock expire t k --ttl 5s --at 7
expect_err 2 "tdb: DURATION 0: zero" "$tdb" $nosock expire t k 0
expect_err 2 "tdb: DURATION -3: not a duration: negative" "$tdb" $nosock expire t k -3
expect_err 2 "tdb: ttl: wrong number of arguments" "$tdb" $nosock ttl t
expect_err 2 "tdb: persist: wrong number of arguments" "$tdb" $nosock persist t k x
# the maximum itself is a TTL
expect_out "" "$tdb" create ex1
expect_out "" "$tdb" put ex1 max v --ttl 3650d
expect_rc 0 "$tdb" ttl ex1 max
left=$(cat "$out")
checks=$((checks + 1))
[ "$left" -gt 315359000000 ] && [ "$left" -le 315360000000 ] ||
	fail "ttl of --ttl 3650d: $left"
expect_rc 0 "$tdb" tables
has -E "^ex1 +1 +[0-9]+ +[0-9]+/[0-9]+ +[0-9]+ +- +1 +"

# put --ttl: there, with a deadline, until it passes; then absent to get,
# ttl, scan, expire, persist (exit 1, "no such key").  TTLs of 3 s, so
# that the checks before they pass do not race them on a busy machine
# (or a sanitized build); then wait until the deadline is past.
# wait_past MS: until the wall clock is past MS (ms since the epoch).
wait_past() {
	while [ "$(date +%s%3N)" -le "$1" ]; do sleep 0.1; done
}
now=$(date +%s%3N)
expect_out "" "$tdb" put ex1 short v --ttl 3s
expect_out "" "$tdb" put ex1 plain p
expect_rc 0 "$tdb" ttl ex1 short
left=$(cat "$out")
checks=$((checks + 1))
[ "$left" -ge 0 ] && [ "$left" -le 3000 ] || fail "ttl of --ttl 3s: $left"
expect_rc 0 "$tdb" get ex1 short --deadline
dl=$(cut -f1 "$out")
checks=$((checks + 1))
[ "$dl" -ge $((now + 3000)) ] && [ "$dl" -le $((now + 3000 + 5000)) ] &&
	[ "$(cut -f2 "$out")" = v ] || fail "get --deadline: $(cat "$out") (now $now)"
expect_out "no expiry" "$tdb" ttl ex1 plain
expect_out "-	p" "$tdb" --escape get ex1 plain --deadline
expect_out '{"key":"plain","value":"p","deadline":null}' "$tdb" --json get ex1 plain --deadline
expect_out '{"key":"plain","ttl_ms":null,"deadline":null}' "$tdb" --json ttl ex1 plain
expect_rc 0 "$tdb" --json ttl ex1 short
json_check 'len(docs) == 1 and docs[0]["key"] == "short" and
	0 <= docs[0]["ttl_ms"] <= 3000 and docs[0]["deadline"] > 0'
wait_past "$dl"
expect_err 1 "tdb: get ex1 short: no such key" "$tdb" get ex1 short
expect_err 1 "tdb: get ex1 short: no such key" "$tdb" --no-rings get ex1 short
expect_err 1 "tdb: ttl ex1 short: no such key" "$tdb" ttl ex1 short
expect_err 1 "tdb: persist ex1 short: no such key" "$tdb" persist ex1 short
expect_err 1 "tdb: expire ex1 short: no such key" "$tdb" expire ex1 short 10s
expect_rc 0 "$tdb" scan ex1 --keys-only
printf 'max\nplain\n' >"$exp"
sort "$out" | cmp -s - "$exp" || fail "scan after expiry: $(cat "$out")"
# a put --if-absent sees an expired key absent
expect_out "" "$tdb" put ex1 short again --if-absent
expect_out "no expiry" "$tdb" ttl ex1 short

# persist: the key no longer expires; expire: it does again
expect_out "" "$tdb" put ex1 kept v --ttl 3s
expect_out "" "$tdb" persist ex1 kept
expect_out "no expiry" "$tdb" ttl ex1 kept
expect_out "" "$tdb" expire ex1 plain --ttl 1h
expect_rc 0 "$tdb" ttl ex1 plain
left=$(cat "$out")
checks=$((checks + 1))
[ "$left" -gt 3590000 ] && [ "$left" -le 3600000 ] || fail "ttl after expire --ttl 1h: $left"
expect_out "" "$tdb" expire ex1 plain 3s
expect_rc 0 "$tdb" ttl ex1 plain
left=$(cat "$out")
checks=$((checks + 1))
[ "$left" -ge 0 ] && [ "$left" -le 3000 ] || fail "ttl after expire 3s: $left"
# kept's 3 s are over too: it was put before
wait_past $(( $(date +%s%3N) + left ))
expect_out "v" "$tdb" --escape get ex1 kept
expect_err 1 "tdb: get ex1 plain: no such key" "$tdb" get ex1 plain
expect_err 1 "tdb: expire ex1 nosuch: no such key" "$tdb" expire ex1 nosuch 5s
expect_err 1 "tdb: persist ex1 nosuch: no such key" "$tdb" persist ex1 nosuch
expect_err 1 "tdb: ttl ex1 nosuch: no such key" "$tdb" ttl ex1 nosuch
# --at: an absolute deadline, as given; one in the past is absent at once
at=$(( $(date +%s%3N) + 60000 ))
expect_out "" "$tdb" put ex1 at v --at "$at"
expect_out "$at	v" "$tdb" --escape get ex1 at --deadline
expect_out "$at	at	v" "$tdb" scan ex1 --prefix at --deadline
expect_out "-	kept	v" "$tdb" scan ex1 --prefix kept --deadline
expect_out "{\"key\":\"at\",\"value\":\"v\",\"deadline\":$at}" "$tdb" --json scan ex1 --prefix at --deadline
expect_out '{"key":"kept","deadline":null}' "$tdb" --json scan ex1 --prefix kept --deadline --keys-only
expect_out "{\"key\":\"at\",\"value\":\"v\",\"version\":$("$tdb" get ex1 at --version | cut -f1),\"deadline\":$at}" "$tdb" --json get ex1 at --version --deadline
expect_out '{"ok":true}' "$tdb" --json expire ex1 at --at $((at + 1000))
expect_out "$((at + 1000))	v" "$tdb" --escape get ex1 at --deadline
expect_out "" "$tdb" expire ex1 at --at 1
expect_err 1 "tdb: get ex1 at: no such key" "$tdb" get ex1 at
expect_out "" "$tdb" put ex1 past v --at 1
expect_err 1 "tdb: get ex1 past: no such key" "$tdb" get ex1 past
# the owner's refusal of a deadline more than 10 years ahead (6)
expect_err 6 "tdb: put ex1 far: " "$tdb" put ex1 far v --at $(( $(date +%s%3N) + 315360000000 + 600000 ))

# create --ttl: the table's default, for puts without their own
expect_out "" "$tdb" create ex2 --ttl 1h30m
expect_rc 0 "$tdb" stat ex2
has -x 'default_ttl_ms *5400000'
expect_out "" "$tdb" put ex2 d v
expect_out "" "$tdb" put ex2 own v --ttl 2s
expect_rc 0 "$tdb" ttl ex2 d
left=$(cat "$out")
checks=$((checks + 1))
[ "$left" -gt 5390000 ] && [ "$left" -le 5400000 ] || fail "default TTL 1h30m: ttl $left"
expect_rc 0 "$tdb" ttl ex2 own
left=$(cat "$out")
checks=$((checks + 1))
[ "$left" -gt 0 ] && [ "$left" -le 2000 ] || fail "own TTL under a default: ttl $left"
expect_rc 0 "$tdb" tables
has -E "^ex2 +2 +[0-9]+ +[0-9]+/[0-9]+ +[0-9]+ +1h30m +2 +"
expect_rc 0 "$tdb" --json stat ex2
json_check 'docs[0]["default_ttl_ms"] == 5400000 and docs[0]["expiring"] == 2'
# a long default TTL widens its column: the lines stay aligned
expect_out "" "$tdb" create ex3 --ttl 1d2h3m4s5ms
expect_rc 0 "$tdb" tables
has -E "^ex3 +0 +[0-9]+ +[0-9]+/[0-9]+ +[0-9]+ +1d2h3m4s5ms +0 +"
checks=$((checks + 1))
[ "$(awk '{ print length($0) }' "$out" | sort -u | wc -l)" = 1 ] ||
	fail "tables with a long TTL: lines of different lengths: $(cat "$out")"
expect_out "" "$tdb" drop ex3

# batch lines: put --ttl pipelined, get --deadline, ttl/persist/expire
printf 'put ex1 b1 v --ttl 300ms\nput ex1 b2 w --at %s\nget ex1 b2 --deadline\nttl ex1 b2\npersist ex1 b2\nttl ex1 b2\nget ex1 b1 --deadline\n' \
	"$at" | "$tdb" batch >"$out" 2>"$err" || fail "batch with --ttl: $(cat "$err")"
b1dl=$(sed -n 4p "$out" | cut -f1)
sed 4d "$out" >"$out.rest"
checks=$((checks + 1))
[ "$(sed -n 1p "$out.rest")" = "$at	w" ] && [ "$(sed -n 3p "$out.rest")" = "no expiry" ] &&
	[ "$(sed -n 2p "$out.rest")" -le 60000 ] && [ "$b1dl" -gt 0 ] &&
	[ "$(sed -n 4p "$out" | cut -f2)" = v ] || fail "batch with --ttl: $(cat "$out")"
printf 'put ex1 b3 v --ttl 0\n' | "$tdb" batch >"$out" 2>"$err"
rc=$?
checks=$((checks + 1))
[ $rc = 2 ] && grep -q "^tdb: line 1: --ttl 0: zero" "$err" || fail "batch --ttl 0: $(cat "$err")"
sleep 0.5
printf 'get ex1 b1\n' | "$tdb" batch >"$out" 2>"$err"
rc=$?
checks=$((checks + 1))
[ $rc = 1 ] && grep -q "^tdb: line 1: get ex1 b1: no such key" "$err" ||
	fail "batch: an expired key: $(cat "$out") $(cat "$err")"

# watch: tdbd's removal of an expired key is a DEL marked "expired" (a
# client's DEL is not); a PUT's deadline is in JSON
wait_watches 0
"$tdb" watch ex1 --prefix w: --count 4 --timeout 20000 >"$dir/we" 2>"$dir/we.err" &
we=$!
"$tdb" --json watch ex1 --prefix w: --count 4 --timeout 20000 >"$dir/wej" 2>"$dir/wej.err" &
wej=$!
wait_watches 2
"$tdb" put ex1 w:del v || fail "put w:del"
"$tdb" del ex1 w:del || fail "del w:del"
"$tdb" put ex1 w:gone v --ttl 200ms || fail "put w:gone"
for w in we wej; do
	eval "wp=\$$w"
	checks=$((checks + 1))
	wait "$wp" || fail "watcher $w exited $?: $(cat "$dir/$w.err")"
done
printf 'PUT\tw:del\tv\nDEL\tw:del\nPUT\tw:gone\tv\nDEL\tw:gone\texpired\n' >"$exp"
checks=$((checks + 1))
cmp -s "$dir/we" "$exp" || fail "watch of an expiry: got $(cat "$dir/we")"
out=$dir/wej
json_check 'len(docs) == 4 and "deadline" not in docs[0] and
	docs[1] == {"event": "del", "seq": docs[1]["seq"], "key": "w:del"} and
	docs[2]["key"] == "w:gone" and docs[2]["deadline"] > 0 and
	docs[3] == {"event": "del", "seq": docs[3]["seq"], "key": "w:gone",
	"reason": "expired"}'
out=$dir/out
expect_err 1 "tdb: get ex1 w:gone: no such key" "$tdb" get ex1 w:gone
# the sweep's count: in the table's stat and the daemon's stats
expect_rc 0 "$tdb" --json stat ex1
json_check 'docs[0]["expired"] >= 1'
expect_rc 0 "$tdb" --json stats
json_check 'docs[0]["expired"] >= 1'
expect_out "" "$tdb" drop ex1
expect_out "" "$tdb" drop ex2

# --- eviction (issue 27): create --max-bytes/--max-records/--evict ----------
expect_err 2 "tdb: --max-bytes 0: at least 1" "$tdb" $nosock create ev1 --max-bytes 0
expect_err 2 "tdb: --max-bytes 1X: not a size (a number, maybe with K, M, G or T)" "$tdb" $nosock create ev1 --max-bytes 1X
expect_err 2 "tdb: --max-bytes 1.5M: not a size" "$tdb" $nosock create ev1 --max-bytes 1.5M
expect_err 2 "tdb: --max-records 0: at least 1" "$tdb" $nosock create ev1 --max-records 0
expect_err 2 "tdb: --evict LRU: one of refuse, lru, lfu, ttl" "$tdb" $nosock create ev1 --evict LRU --max-records 3
expect_err 2 "tdb: put: --evict does not apply here" "$tdb" $nosock put t k v --evict lru
# a policy needs a bound: the library says so before anything is sent
expect_err 6 "tdb: create ev1: an eviction policy needs a bound" "$tdb" create ev1 --evict lru
expect_err 1 "tdb: stat ev1: no such table" "$tdb" stat ev1
# lru, 3 records: the fourth put evicts one of the first three, which a
# watcher sees as a DEL marked "evicted"
expect_out "" "$tdb" create ev1 --max-records 3 --evict lru
wait_watches 0
"$tdb" watch ev1 --count 5 --timeout 20000 >"$dir/wv" 2>"$dir/wv.err" &
wv=$!
"$tdb" --json watch ev1 --count 5 --timeout 20000 >"$dir/wvj" 2>"$dir/wvj.err" &
wvj=$!
wait_watches 2
for k in a b c d; do "$tdb" put ev1 $k v || fail "put ev1 $k"; done
for w in wv wvj; do
	eval "wp=\$$w"
	checks=$((checks + 1))
	wait "$wp" || fail "watcher $w exited $?: $(cat "$dir/$w.err")"
done
checks=$((checks + 1))
[ "$(head -n 4 "$dir/wv" | tr '\n\t' ' :')" = "PUT:a:v PUT:b:v PUT:c:v PUT:d:v " ] &&
	grep -Eqx 'DEL	[abc]	evicted' "$dir/wv" ||
	fail "watch of an eviction: got $(cat "$dir/wv")"
victim=$(sed -n 's/^DEL	\(.\)	evicted$/\1/p' "$dir/wv")
out=$dir/wvj
json_check "len(docs) == 5 and
	docs[4] == {'event': 'del', 'seq': docs[4]['seq'], 'key': '$victim',
	'reason': 'evicted'}"
out=$dir/out
expect_err 1 "tdb: get ev1 $victim: no such key" "$tdb" get ev1 "$victim"
expect_rc 0 "$tdb" stat ev1
has -x 'records *3'
has -x 'max_records *3'
has -x 'max_bytes *0'
has -x 'evict *lru'
has -x 'evicted *1'
expect_rc 0 "$tdb" --json stat ev1
json_check 'docs[0]["max_records"] == 3 and docs[0]["max_bytes"] == 0 and
	docs[0]["evict"] == "lru" and docs[0]["evicted"] == 1'
expect_rc 0 "$tdb" --json stats
json_check 'docs[0]["evicted"] >= 1'
# both bounds, SIZE with a unit; refuse: the put past the bound fails (6)
# and says which bound
expect_out "" "$tdb" create ev2 --max-bytes 64K --max-records 2
expect_rc 0 "$tdb" --json stat ev2
json_check 'docs[0]["max_bytes"] == 65536 and docs[0]["max_records"] == 2 and
	docs[0]["evict"] == "refuse"'
expect_out "" "$tdb" put ev2 a v
expect_out "" "$tdb" put ev2 b v
expect_err 6 "tdb: put ev2 c: " "$tdb" put ev2 c v
checks=$((checks + 1))
grep -q "at its bound: MAX_RECORDS [0-9]* records (EVICT refuse)" "$err" ||
	fail "refused put: the message names no bound: $(cat "$err")"
expect_out "" "$tdb" put ev2 a w
expect_out "" "$tdb" create ev3 --max-bytes 3G --evict ttl
expect_rc 0 "$tdb" tables
has -E "^ev1 +3 +[0-9]+ +[0-9]+/[0-9]+ +[0-9]+ +- +0 +3r +lru +"
has -E "^ev2 +2 +[0-9]+ +[0-9]+/[0-9]+ +[0-9]+ +- +0 +2r,64K +refuse +"
has -E "^ev3 +0 +[0-9]+ +[0-9]+/[0-9]+ +[0-9]+ +- +0 +3G +ttl +"
checks=$((checks + 1))
[ "$(awk '{ print length($0) }' "$out" | sort -u | wc -l)" = 1 ] ||
	fail "tables with bounds: lines of different lengths: $(cat "$out")"
for t in ev1 ev2 ev3; do expect_out "" "$tdb" drop $t; done

# --- the shell: tdb alone on a terminal (a pty) ---------------------------------
if command -v python3 >/dev/null 2>&1; then
	checks=$((checks + 1))
	mkdir -p "$dir/state"
	XDG_STATE_HOME=$dir/state TERM=dumb python3 - "$tdb" >"$out" 2>&1 <<'EOF' ||
import os, pty, sys, time
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], [sys.argv[1]])
lines = ["put b1 sh \"a\\x41b\"", "get b1 sh", "begin", "put b1 tx 1",
         "abort", "get b1 tx", "help", "quit"]
out = b""
for l in lines:
    os.write(fd, l.encode() + b"\n")
    time.sleep(0.1)
end = time.time() + 10
while time.time() < end:
    try:
        b = os.read(fd, 4096)
    except OSError:
        break
    if not b:
        break
    out += b
_, st = os.waitpid(pid, 0)
text = out.decode("utf-8", "replace")
sys.stdout.write(text)
ok = (os.WIFEXITED(st) and os.WEXITSTATUS(st) == 0 and "tdb> " in text
      and "\naAb" in text.replace("\r", "") and "tdb (txn)> " in text
      and "get b1 tx: no such key" in text and "begin " in text)
sys.exit(0 if ok else 1)
EOF
	fail "shell on a pty: $(cat "$out")"
	if ldd "$tdb" 2>/dev/null | grep -q libedit; then
		checks=$((checks + 1))
		grep -q abort "$dir/state/tdb/history" 2>/dev/null ||
			fail "shell: no history in $dir/state/tdb/history"
	fi
	expect_out "aAb" "$tdb" --escape get b1 sh
else
	echo "note: no python3: the shell on a pty not checked"
fi

# --- tables: sorted by name, owners by name ------------------------------------
expect_out "" "$tdb" create zz
expect_out "" "$tdb" create aa
expect_rc 0 "$tdb" tables
sed 1d "$out" | awk '{ print $1 }' >"$dir/names"
checks=$((checks + 1))
LC_ALL=C sort -c "$dir/names" 2>/dev/null || fail "tables not sorted: $(cat "$dir/names")"
[ "$(head -n 1 "$dir/names")" = aa ] || fail "tables: aa not first"
expect_rc 0 "$tdb" --json tables
json_check '[d["name"] for d in docs] == sorted(d["name"] for d in docs)'
expect_rc 0 "$tdb" --json-array tables
json_check 'len(docs) == 1 and [d["name"] for d in docs[0]][:1] == ["aa"]'
if [ "$(id -u)" = 0 ] && ! getent passwd 4242 >/dev/null &&
   ! getent group 4243 >/dev/null; then
	expect_out "" "$tdb" create noname --uid 4242 --gid 4243
	expect_rc 0 "$tdb" tables
	has -E "^noname +0 +0 +[0-9]+/[0-9]+ +[0-9]+ +- +0 +- +- +4242:4243 +0600 +ok +hash$"
	has -E "^aa +0 +0 +[0-9]+/[0-9]+ +[0-9]+ +- +0 +- +- +$(id -un):$(id -gn) +0600 +ok +hash$"
	expect_out "" "$tdb" drop noname
fi

# --- permission denied (4): another user and a 0640 table --------------------
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null 2>&1 &&
   setpriv --reuid=65534 --regid=65534 --clear-groups "$tdb" --help \
	>/dev/null 2>&1; then
	as_nobody="setpriv --reuid=65534 --regid=65534 --clear-groups"
	expect_out "" "$tdb" create t4 --mode 0600
	expect_err 4 "tdb: get t4 k: permission denied" $as_nobody "$tdb" get t4 k
	expect_err 4 "tdb: put t4 k: permission denied" $as_nobody "$tdb" put t4 k v
	expect_out "" "$tdb" create t5 --mode 0644
	expect_out "" "$tdb" put t5 k v
	expect_out "v" $as_nobody "$tdb" --escape get t5 k
	expect_err 4 "tdb: put t5 k: permission denied" $as_nobody "$tdb" put t5 k w
	expect_err 4 "tdb: drop t5: only the table's owner" $as_nobody "$tdb" drop t5
	# stats counts only the tables the caller may read (those tables
	# lists): nobody sees t5 (0644), not the 0600 and 0640 ones
	expect_rc 0 $as_nobody "$tdb" tables
	seen=$(($(wc -l <"$out") - 1))
	expect_rc 0 "$tdb" tables
	all=$(($(wc -l <"$out") - 1))
	expect_rc 0 $as_nobody "$tdb" stats
	has -Ex "tables +$seen"
	checks=$((checks + 1))
	[ "$seen" -ge 1 ] && [ "$seen" -lt "$all" ] ||
		fail "stats as nobody: sees $seen of $all tables"
	expect_rc 0 "$tdb" stats
	has -Ex "tables +$all"
	# refused by the socket's directory, not by a table: exit 5, said so
	mkdir -m 0700 "$dir/priv"
	expect_err 5 "tdb: stats: cannot connect to tdbd at $dir/priv/s.sock: permission denied (not in the socket's group?)" $as_nobody "$tdb" --socket "$dir/priv/s.sock" stats
else
	echo "note: not root or no setpriv: permission checks (exit 4) skipped"
fi

# --- the daemon stops cleanly ----------------------------------------------------
kill -TERM "$pid"
wait "$pid"
drc=$?
pid=
checks=$((checks + 1))
if [ "$drc" != 0 ]; then
	fail "tdbd exited $drc"
	cat "$dir/tdbd.log" >&2
fi

# --- a table set aside at start: tables, --json tables, stats ----------------
# A tdbd with a data directory, started again under an address-space limit
# (prlimit --as) that leaves room for its ordinary needs but not for the
# 64 GiB a table of max-extents 32768 reserves: that table is set aside.
sasock=$dir/sa.sock
sa_start() {    # sa_start [WRAPPER...]: tdbd on $dir/sa.data, wait for it
	"$@" "$tdbd" --socket "$sasock" --data-dir "$dir/sa.data" \
		--log-level notice >>"$dir/sa.log" 2>&1 &
	pid=$!
	i=0
	until "$tdb" --socket "$sasock" stats >/dev/null 2>&1; do
		i=$((i + 1))
		if [ $i -gt 200 ] || ! kill -0 "$pid" 2>/dev/null; then
			fail "tdbd on sa.data did not start: $(cat "$dir/sa.log")"
			pid=
			return 1
		fi
		sleep 0.05
	done
}
sa_stop() {
	kill -TERM "$pid"
	wait "$pid" || fail "tdbd on sa.data exited $?: $(cat "$dir/sa.log")"
	pid=
}
if command -v prlimit >/dev/null 2>&1 && sa_start; then
	export TDB_SOCKET="$sasock"
	v0=$(awk '/^VmSize:/ { print $2 }' "/proc/$pid/status")     # KiB
	expect_out "" "$tdb" create sbig --max-extents 32768
	expect_out "" "$tdb" put sbig k v
	sa_stop
	if sa_start prlimit --as=$(( (v0 + 16 * 1024 * 1024) * 1024 )) --; then
		expect_rc 0 "$tdb" tables
		has -E "^sbig +0 +0 +0/32768 +0 +- +0 +- +- +$(id -un):$(id -gn) +0600 +aside +hash$"
		expect_rc 0 "$tdb" --json tables
		json_check '[d["state"] for d in docs if d["name"] == "sbig"]
			== ["aside"]'
		expect_err 6 "tdb: get sbig k: table sbig was set aside" "$tdb" get sbig k
		grep -q "table sbig was set aside at start" "$err" ||
			fail "get of a set-aside table: $(cat "$err")"
		expect_rc 0 "$tdb" stats
		has -Ex 'tables_aside +1'
		sa_stop
	fi
	sa_start && expect_out "v" "$tdb" --escape get sbig k && sa_stop
else
	echo "note: no prlimit: the set-aside table's listing not checked"
fi

if [ "$failures" != 0 ]; then
	echo "test_cli: $failures of $checks checks failed"
	exit 1
fi
echo "test_cli: all $checks checks passed"
exit 0
