#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# with_hugepages.sh - run a test with 2 MiB hugepages reserved.
#
#   with_hugepages.sh [-n PAGES] PROGRAM [ARGS...]
#
# As root: saves /proc/sys/vm/nr_hugepages, sets it to PAGES (default
# $TDB_HUGEPAGES or 600), runs PROGRAM, and puts the old value back on
# any exit (trap).  Skips (exit 77, meson's "skipped") when not root,
# when the knob cannot be written, or when the kernel could not find
# enough memory for the pages.  PROGRAM's exit status is passed through.
#
# The caller (tests/meson.build) sets TDB_EXPECT_PAGE_SIZE=2097152 so
# the test proves that its tables really got hugetlb pages.
set -u

knob=/proc/sys/vm/nr_hugepages
want=${TDB_HUGEPAGES:-600}
if [ "${1:-}" = "-n" ]; then
	want=$2
	shift 2
fi
if [ $# -eq 0 ]; then
	echo "usage: $0 [-n PAGES] PROGRAM [ARGS...]" >&2
	exit 2
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "with_hugepages: not root, skipping"
	exit 77
fi
if [ ! -w "$knob" ] || ! old=$(cat "$knob"); then
	echo "with_hugepages: $knob not writable, skipping"
	exit 77
fi

restore() {
	echo "$old" > "$knob" 2>/dev/null
	echo "with_hugepages: vm.nr_hugepages back to $(cat "$knob") (was $old)"
}
trap restore EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

if [ "$old" -lt "$want" ]; then
	if ! echo "$want" > "$knob" 2>/dev/null; then
		echo "with_hugepages: cannot set $knob, skipping"
		exit 77
	fi
fi
total=$(cat "$knob")
free=$(awk '/^HugePages_Free:/ { print $2 }' /proc/meminfo)
echo "with_hugepages: vm.nr_hugepages $old -> $total ($free free)"
# A test may need a few dozen; refuse to pretend with fewer (a test that
# wants a small pool on purpose says how small: TDB_HUGEPAGES_MIN).
if [ "${free:-0}" -lt "${TDB_HUGEPAGES_MIN:-64}" ]; then
	echo "with_hugepages: only ${free:-0} hugepages free, skipping"
	exit 77
fi

"$@"
rc=$?
echo "with_hugepages: $1 exited $rc; HugePages_Free now" \
	"$(awk '/^HugePages_Free:/ { print $2 }' /proc/meminfo)"
exit $rc
