#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# run-bench.sh - tdb.ko against tdbd in ONE qemu guest boot: builds
# nothing, boots Debian's kernel under TCG through
# tests/kernel/run-qemu.sh (which loads tdb.ko, runs the guest binaries,
# unloads the module and checks memory and the kernel log), with
# tdb-bench-kdev --compare as the one guest binary and tdbd copied in
# beside it (run-qemu.sh --extra).  Prints the benchmark's report.
#
#   bench/kernel/run-bench.sh [--build DIR] [--runs R] [--keys N]
#                             [--ops N] [--batch B] [--timeout S]
#                             [--log FILE] [--csv FILE]
#
#   --build DIR   a meson build dir with tdb.ko built (-Dkmod=enabled):
#                 DIR/kmod/tdb.ko, DIR/src/daemon/tdbd,
#                 DIR/bench/kernel/tdb-bench-kdev (default: ./build)
#   --runs R      runs; medians over them (default 5)
#   --keys N      keys loaded (default 100000)
#   --ops N       operations per case and run (default 20000)
#   --batch B     async batch (default 32)
#   --timeout S   the whole boot (default 1800)
#   --log FILE    keep the guest's serial log here
#   --csv FILE    also write the figures as CSV to FILE (tdb-bench-kdev
#                 --csv -, cut from the serial log; the "kernel" area of
#                 bench/summary/make-charts.sh), with a "# host:" line
#
# Durable mode (docs/BENCHMARKS.md, "Durable kernel-resident tables"):
#
#   bench/kernel/run-bench.sh --durable [--build DIR] [--disk-size G]
#                             [--disk-dir DIR] [--mem MB] [--timeout S]
#                             [--log FILE] [--csv FILE] [-- ARGS...]
#
#   tdb-bench-durable (bench/durable) in the guest instead, on an ext4
#   disk image made here (--disk-size GiB, default 8, in --disk-dir,
#   default /var/tmp, removed after) attached by run-qemu.sh --disk and
#   mounted on /data, so that fdatasync reaches a real file.  ARGS go to
#   tdb-bench-durable after "--dir /data --tdbd TDBD" (no spaces or
#   commas in them; lists take '+': --systems always+kernel+lmdb).
#   Default ARGS: --only puts --systems always+kernel+lmdb --keys 100k
#   --runs 3.  Restore: -- --only restore --restore-records 1M+10M
#   --ko-arg max_memory_mb=8192 (and --mem to fit both copies).
#   --mem MB      guest memory (default 4096)
#
# Not a test: benchmarks are run by hand (docs/BENCHMARKS.md section 6).
# Under TCG every figure is emulation speed; only the ratios between the
# two backends measured in the same boot mean anything.
set -eu

# The guest's report between TAG-BEGIN and TAG-END in the serial log
# (kernel timestamps dropped), its CSV (TAG-CSV-BEGIN..END) to $csv
# with a "# host:" line, the verdict of run-qemu.sh; the log goes
# unless kept or the run failed ($st).
report() {
	tag=$1
	sed -n "/^$tag-BEGIN/,/^$tag-END/p" "$log" |
		sed "/^$tag-CSV-BEGIN/,/^$tag-CSV-END/d" |
		sed "/^$tag-/d; /^\[ *[0-9.]*\] /d"
	if [ -n "$csv" ]; then
		sed -n "/^$tag-CSV-BEGIN/,/^$tag-CSV-END/p" "$log" |
			sed "/^$tag-/d; /^\[ *[0-9.]*\] /d; s/\r\$//" > "$log.csv"
		{
			sed -n '/^#/p' "$log.csv"
			echo "# host: $(lscpu | sed -n 's/^Model name: *//p' | head -n 1), $(nproc) CPUs; $(qemu-system-x86_64 --version | head -n 1), -accel tcg -smp 2 (emulated: only the ratios mean anything)"
			sed '/^#/d' "$log.csv"
		} > "$csv"
		rm -f "$log.csv"
	fi
	tail -n 1 "$log.verdict"
	if [ "$st" != 0 ]; then
		cat "$log.verdict" >&2
		echo "run-bench: run-qemu.sh exited $st (serial log $log)" >&2
	fi
	rm -f "$log.verdict"
	[ -n "$keep_log" ] || [ "$st" != 0 ] || rm -f "$log"
}

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
# --durable: tdb-bench-durable in the guest on a disk image; the report
# is what it prints between DURABLE-BEGIN and DURABLE-END (kernel
# messages taken out), its CSV between DURABLE-CSV-BEGIN and -END.
durable_run() {
	bench=$build/bench/durable/tdb-bench-durable
	for f in "$ko" "$tdbd" "$bench"; do
		[ -e "$f" ] || { echo "run-bench: $f missing (meson setup DIR -Dkmod=enabled; ninja -C DIR)" >&2; return 1; }
	done
	command -v mkfs.ext4 >/dev/null ||
		{ echo "run-bench: mkfs.ext4 missing (apt-get install e2fsprogs)" >&2; return 1; }
	[ $# -gt 0 ] || set -- --only puts --systems always+kernel+lmdb \
		--keys 100k --runs 3
	args="--dir,/data,--tdbd,$tdbd${csv:+,--csv,-}"
	for a in "$@"; do
		case "$a" in
		*,*|*" "*) echo "run-bench: '$a': no commas or spaces (lists take '+')" >&2; return 2 ;;
		esac
		args="$args,$a"
	done
	img=$(mktemp "$disk_dir/tdb-bench-durable.XXXXXX.img")
	truncate -s "${disk_size}G" "$img"
	mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$img" ||
		{ rm -f "$img"; return 1; }
	keep_log=$log
	[ -n "$log" ] || log=$(mktemp /tmp/tdb-bench-durable.XXXXXX.log)
	echo "host: $(lscpu | sed -n 's/^Model name: *//p' | head -n 1), $(nproc) CPUs;" \
		"$(qemu-system-x86_64 --version | head -n 1), -accel tcg -smp 2 -m $mem;" \
		"disk: ${disk_size} GiB raw image in $disk_dir (virtio-blk, cache=writeback, ext4)"
	st=0
	"$top/tests/kernel/run-qemu.sh" --ko "$ko" --timeout "$timeout_s" \
		--mem "$mem" --disk "$img" --log "$log" --extra "$tdbd" \
		--env "TDB_BENCH_DURABLE_ARGS=$args" \
		-- "$bench" > "$log.verdict" 2>&1 || st=$?
	rm -f "$img"
	report DURABLE
	return "$st"
}

build=./build runs=5 keys=100000 ops=20000 batch=32 timeout_s=1800 log=
csv= durable= disk_size=8 disk_dir=/var/tmp mem=4096
while [ $# -gt 0 ]; do
	case "$1" in
	--build) build=$2; shift 2 ;;
	--runs) runs=$2; shift 2 ;;
	--keys) keys=$2; shift 2 ;;
	--ops) ops=$2; shift 2 ;;
	--batch) batch=$2; shift 2 ;;
	--timeout) timeout_s=$2; shift 2 ;;
	--log) log=$2; shift 2 ;;
	--csv) csv=$2; shift 2 ;;
	--durable) durable=1; shift ;;
	--disk-size) disk_size=$2; shift 2 ;;
	--disk-dir) disk_dir=$2; shift 2 ;;
	--mem) mem=$2; shift 2 ;;
	--) shift; break ;;
	-h|--help) sed -n '2,46s/^# \{0,1\}//p' "$0"; exit 0 ;;
	*) echo "run-bench: unknown option $1 (see --help)" >&2; exit 2 ;;
	esac
done

build=$(cd "$build" && pwd)
ko=$build/kmod/tdb.ko
tdbd=$build/src/daemon/tdbd
if [ -n "$durable" ]; then
	durable_run "$@"
	exit $?
fi
[ $# -eq 0 ] || { echo "run-bench: arguments after -- are for --durable" >&2; exit 2; }
bench=$build/bench/kernel/tdb-bench-kdev
for f in "$ko" "$tdbd" "$bench"; do
	[ -e "$f" ] || { echo "run-bench: $f missing (meson setup DIR -Dkmod=enabled; ninja -C DIR)" >&2; exit 1; }
done
keep_log=$log
[ -n "$log" ] || log=$(mktemp /tmp/tdb-bench-kdev.XXXXXX.log)

echo "host: $(lscpu | sed -n 's/^Model name: *//p' | head -n 1), $(nproc) CPUs;" \
	"$(qemu-system-x86_64 --version | head -n 1), -accel tcg -smp 2"
st=0
"$top/tests/kernel/run-qemu.sh" --ko "$ko" --timeout "$timeout_s" \
	--log "$log" --extra "$tdbd" \
	--env "TDB_BENCH_KDEV_ARGS=--compare,--tdbd,$tdbd,--runs,$runs,--keys,$keys,--ops,$ops,--batch,$batch${csv:+,--csv,-}" \
	-- "$bench" > "$log.verdict" 2>&1 || st=$?
report KDEV
exit "$st"
