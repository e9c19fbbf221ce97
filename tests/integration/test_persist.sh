#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# test_persist.sh - tdbd's data directory across restarts, through the
# tdb CLI: tables (owner, mode, cap) and records (binary, empty, 1 MiB)
# survive SIGTERM (checkpoint) and SIGKILL (WAL replay); the checkpoint
# is readable by mdb_stat and mdb_dump; a torn WAL tail is cut and
# logged; a damaged WAL stops start-up with the file and offset, and
# --wal-truncate-damaged cuts it there; a scratch directory is removed
# at exit.
#   test_persist.sh TDB TDBD
# Exit 0: all passed; 1: a check failed (each says FAIL); 77: skipped.
set -u

tdb=${1:?usage: test_persist.sh TDB TDBD}
tdbd=${2:-}
if [ -z "$tdbd" ] || [ ! -x "$tdbd" ]; then
	echo "SKIP: no tdbd to test against"
	exit 77
fi

dir=$(mktemp -d /tmp/tdb-persist-test.XXXXXX)
data=$dir/data
sock=$dir/tdbd.sock
log=$dir/tdbd.log
pid=
failures=0
checks=0
export TDB_SOCKET="$sock"

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

check() {	# check WHAT CMD...: CMD succeeds
	what=$1
	shift
	checks=$((checks + 1))
	"$@" || fail "$what"
}

# start [OPTIONS]: tdbd on $data; 0 once it listens, 1 if it exited.
start() {
	rm -f "$sock"
	"$tdbd" --socket "$sock" --data-dir "$data" --log-level info "$@" \
		>"$log" 2>&1 &
	pid=$!
	i=0
	while [ ! -S "$sock" ]; do
		i=$((i + 1))
		if ! kill -0 "$pid" 2>/dev/null; then
			wait "$pid"
			pid=
			return 1
		fi
		if [ $i -gt 400 ]; then
			fail "tdbd did not start in 20 s"
			cat "$log" >&2
			exit 1
		fi
		sleep 0.05
	done
	return 0
}

stop() {	# SIGTERM; it must exit 0
	kill -TERM "$pid"
	wait "$pid"
	rc=$?
	pid=
	checks=$((checks + 1))
	[ "$rc" = 0 ] || { fail "tdbd exited $rc at SIGTERM"; cat "$log" >&2; }
}

crash() {	# SIGKILL
	kill -KILL "$pid"
	wait "$pid" 2>/dev/null
	pid=
}

logged() {	# logged TEXT: tdbd's last log has it
	checks=$((checks + 1))
	grep -q -- "$1" "$log" || { fail "log lacks '$1':"; cat "$log" >&2; }
}

# get_is TABLE KEY VALUE
get_is() {
	checks=$((checks + 1))
	got=$("$tdb" get "$1" "$2" 2>&1)
	[ "$got" = "$3" ] || fail "get $1 $2: '$got', want '$3'"
}

absent() {	# absent TABLE KEY: exit 1 (no such key)
	checks=$((checks + 1))
	"$tdb" get "$1" "$2" >/dev/null 2>&1
	rc=$?
	[ "$rc" = 1 ] || fail "get $1 $2 exited $rc, want 1 (absent)"
}

# --- 1. a clean stop: everything in the checkpoint ----------------------
start || { fail "first start"; cat "$log" >&2; exit 1; }
check "create t1" "$tdb" create t1 --mode 0640 --max-extents 7
check "create t2" "$tdb" create t2
check "create gone" "$tdb" create gone
for i in 1 2 3 4 5 6 7 8 9 10; do
	check "put k$i" "$tdb" put t1 "k$i" "v$i"
done
check "put empty" "$tdb" put t1 empty ""
check "put binary" "$tdb" -k -v put t2 00ff0061 000102fe
head -c 1048576 /dev/urandom >"$dir/big"
check "put 1 MiB" "$tdb" put t2 big --file "$dir/big"
check "replace k1" "$tdb" put t1 k1 v1b
check "del k2" "$tdb" del t1 k2
check "drop gone" "$tdb" drop gone
stop
logged "checkpoint at LSN"

if command -v mdb_stat >/dev/null && command -v mdb_dump >/dev/null; then
	mdb_stat -a "$data/checkpoint" >"$dir/stat" 2>&1
	checks=$((checks + 1))
	grep -q "Status of t1" "$dir/stat" && grep -q "Status of t2" \
		"$dir/stat" || fail "mdb_stat -a lacks t1/t2: $(cat "$dir/stat")"
	checks=$((checks + 1))
	grep -q "Status of gone" "$dir/stat" && fail "dropped table in mdb_stat"
	mdb_dump -p -s t1 "$data/checkpoint" >"$dir/dump" 2>&1
	checks=$((checks + 1))
	grep -q "^ k3$" "$dir/dump" && grep -q "^ v3$" "$dir/dump" &&
		grep -q "^ v1b$" "$dir/dump" && ! grep -q "^ k2$" "$dir/dump" ||
		fail "mdb_dump -s t1 is not t1: $(cat "$dir/dump")"
else
	echo "note: no mdb_stat/mdb_dump (lmdb-utils): not checked"
fi

start || { fail "restart after SIGTERM"; cat "$log" >&2; exit 1; }
get_is t1 k1 v1b
absent t1 k2
get_is t1 k10 v10
get_is t1 empty ""
check "binary value" sh -c "[ \"\$('$tdb' -k --hex get t2 00ff0061)\" = 000102fe ]"
"$tdb" get t2 big >"$dir/big2"
check "1 MiB value" cmp -s "$dir/big" "$dir/big2"
absent_table=$("$tdb" stat gone 2>&1)
checks=$((checks + 1))
case $absent_table in *"no such"*) ;; *) fail "dropped table is back: $absent_table" ;; esac
"$tdb" --json stat t1 >"$dir/st"
checks=$((checks + 1))
grep -q '"mode":"0640"' "$dir/st" && grep -q '"max_extents":7' "$dir/st" ||
	fail "t1 lost its mode or cap: $(cat "$dir/st")"

# --- 2. a crash: the changes since are in the WAL only -------------------
for i in 11 12 13 14 15 16 17 18 19 20; do
	check "put k$i" "$tdb" put t1 "k$i" "v$i"
done
check "del k3" "$tdb" del t1 k3
check "create t3" "$tdb" create t3
check "put t3" "$tdb" put t3 a b
crash
start || { fail "restart after SIGKILL"; cat "$log" >&2; exit 1; }
logged "WAL: replayed"
get_is t1 k20 v20
absent t1 k3
get_is t3 a b
get_is t1 k1 v1b

# --- 3. a torn tail: the last record is cut off --------------------------
for i in 21 22 23; do
	check "put k$i" "$tdb" put t1 "k$i" "v$i"
done
crash
seg=$(ls "$data"/wal/wal-*.log | tail -n 1)
size=$(stat -c %s "$seg")
truncate -s $((size - 5)) "$seg"
start || { fail "start after a torn tail"; cat "$log" >&2; exit 1; }
logged "torn tail"
get_is t1 k22 v22
absent t1 k23

# --- 4. damage in the middle: refused, then cut when asked ----------------
for i in 31 32 33 34 35; do
	check "put k$i" "$tdb" put t1 "k$i" "v$i"
done
crash
seg=$(ls "$data"/wal/wal-*.log | tail -n 1)
# flip a byte inside the value of k32's record ("v32")
off=$(grep -abo "v32" "$seg" | head -n 1 | cut -d: -f1)
checks=$((checks + 1))
if [ -z "$off" ]; then
	fail "cannot find k32's record in $seg"
else
	printf 'X' | dd of="$seg" bs=1 seek="$off" conv=notrunc 2>/dev/null
	if start; then
		fail "tdbd started on a damaged WAL"
		crash
	fi
	logged "$(basename "$seg")"
	logged "offset"
	logged "wal-truncate-damaged"
	start --wal-truncate-damaged yes ||
		{ fail "start with --wal-truncate-damaged"; cat "$log" >&2; }
	logged "damage"
	get_is t1 k31 v31
	absent t1 k32
	absent t1 k35
	# the cut log stays good at the next start
	stop
	start || { fail "start after the cut"; cat "$log" >&2; }
	get_is t1 k31 v31
	stop
fi

# --- 5. a scratch directory goes at exit ----------------------------------
rm -f "$sock"
"$tdbd" --socket "$sock" --log-level info >"$log" 2>&1 &
pid=$!
i=0
while [ ! -S "$sock" ] && [ $i -lt 400 ]; do i=$((i + 1)); sleep 0.05; done
"$tdb" create s >/dev/null 2>&1
"$tdb" put s k v >/dev/null 2>&1
scratch=$(sed -n 's/.*data in \([^ ;]*\) (scratch.*/\1/p' "$log" | head -n 1)
stop
checks=$((checks + 1))
if [ -z "$scratch" ]; then
	fail "no scratch directory in the log: $(cat "$log")"
elif [ -e "$scratch" ]; then
	fail "scratch directory $scratch left behind: $(ls -R "$scratch")"
fi

echo "test_persist: $checks checks, $failures failed"
[ "$failures" = 0 ]
