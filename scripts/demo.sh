#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# The main job of `./run demo`: start tdbd in the foreground on a scratch
# data directory, then show the tdb CLI against it from several
# processes: create a table, put, get, scan, a watcher in a second
# process, a transaction-free batch of puts, stats.  Stops tdbd at the
# end (or, on a terminal with --serve, keeps it serving until Ctrl-C).
#   scripts/demo.sh BUILD_DIR [--serve]
set -eu
build=${1:-build}
serve=${2:-}
tdbd=$build/src/daemon/tdbd
tdb=$build/clients/cli/tdb
[ -x "$tdbd" ] && [ -x "$tdb" ] || { echo "demo: build first ($tdbd, $tdb)" >&2; exit 1; }

dir=$(mktemp -d /tmp/tdb-demo.XXXXXX)
export TDB_SOCKET="$dir/tdbd.sock"
# Bold only on a terminal (no escape codes in a file or a pipe).
if [ -t 1 ]; then bold=$(printf '\033[1m') off=$(printf '\033[0m'); else bold= off=; fi
say() { printf '\n%s$ %s%s\n' "$bold" "$*" "$off"; }
# An argument as a shell would need it typed: quoted if it has anything
# but plain characters, so that a command shown can be pasted.
quote() {
	case "$1" in
	''|*[!A-Za-z0-9_./:=@%+,-]*)
		printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")" ;;
	*)	printf '%s' "$1" ;;
	esac
}
run() {
	line=
	for a in "$@"; do line="$line${line:+ }$(quote "$a")"; done
	say "$line"
	"$@"
}

"$tdbd" --socket "$TDB_SOCKET" --log-level notice &
pid=$!
stop() {
	kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
	rm -rf "$dir"
}
trap stop EXIT INT TERM
i=0
while [ ! -S "$TDB_SOCKET" ]; do
	i=$((i + 1)); [ $i -lt 100 ] || { echo "demo: tdbd did not start" >&2; exit 1; }
	sleep 0.05
done
echo "tdbd (pid $pid) serving on $TDB_SOCKET, scratch data directory"

run "$tdb" create users --mode 0644
say "$tdb watch users --count 4 &   # a second process follows the changes"
"$tdb" watch users --count 4 --timeout 5000 > "$dir/watch.out" &
wpid=$!
sleep 0.3
run "$tdb" put users alice '{"age": 31}'
run "$tdb" put users bob '{"age": 27}'
say "printf 'binary\\000value' | $tdb put users carol --stdin"
printf 'binary\000value' | "$tdb" put users carol --stdin
run "$tdb" get users alice; echo
run "$tdb" --hex get users carol
run "$tdb" del users bob
run "$tdb" scan users
run "$tdb" --json stat users
run "$tdb" tables
say "$tdb get users bob   # exit code 1: not found"
"$tdb" get users bob || echo "(exit $?)"
say "# counters and compare-and-swap: the owner applies them in one step"
run "$tdb" incr users visits
run "$tdb" incr users visits 41
run "$tdb" get --version users visits; echo
say "$tdb put --if-version 1 users visits 0   # a stale version: refused, nothing changes"
"$tdb" put --if-version 1 users visits 0 || echo "(exit $?)"
say "# expiry: a key that lives 500 ms, then is gone for every reader"
run "$tdb" put users session:alice token --ttl 500ms
run "$tdb" ttl users session:alice
sleep 0.7
say "$tdb get users session:alice   # exit code 1: expired"
"$tdb" get users session:alice || echo "(exit $?)"
wait "$wpid" || true
say "# what the watcher saw:"
cat "$dir/watch.out"
run "$tdb" stats
if [ "$serve" = --serve ] && [ -t 0 ]; then
	echo; echo "tdbd keeps serving on $TDB_SOCKET (export TDB_SOCKET=$TDB_SOCKET); Ctrl-C stops it."
	wait "$pid"
fi
