#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# Build one libFuzzer target with clang and run it for a while.
#
#   run-fuzz.sh NAME [SOURCE...] [-- CC_ARGS...]
#
# NAME is the target: tests/fuzz/fuzz_NAME.c, which defines
# LLVMFuzzerTestOneInput.  SOURCEs are the library sources it exercises
# (compiled into it, instrumented); the include path has include/ and the
# directory of every SOURCE.  CC_ARGS go to clang last (libraries: -lmnl).
#
# Seeds: if fuzz_NAME.c has a main() under #ifdef TDB_FUZZ_SEEDS, it is
# built that way and run with a directory to fill with seed inputs; files
# in tests/fuzz/corpus-NAME/ are seeds too, if that directory exists.
#
# Environment:
#   FUZZ_SECONDS  how long to fuzz (default 20)
#   FUZZ_WORKDIR  where binaries, corpus and crash files go
#                 (default ${TMPDIR:-/tmp}/tdb-fuzz-NAME)
#   FUZZ_ARGS     more libFuzzer options (e.g. -max_len=70000 -jobs=2)
#   CLANG         the compiler (default clang)
#
# Exit status: 0 when the run found nothing, 77 (meson's "skipped") when
# clang or its libFuzzer runtime is missing (Debian 12: apt-get install
# clang libclang-rt-14-dev; scripts/install-deps.sh has them), else
# libFuzzer's status, with the crashing input left in FUZZ_WORKDIR and
# the command that replays it printed.
set -eu

if [ $# -lt 1 ]; then
	echo "usage: $0 NAME [SOURCE...] [-- CC_ARGS...]" >&2
	exit 2
fi
name=$1
shift
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
target="$here/fuzz_$name.c"
[ -f "$target" ] || { echo "run-fuzz: no $target" >&2; exit 2; }

srcs=""
incs="-I$root/include"
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
	case "$1" in
	/*) src=$1 ;;
	*)  src="$root/$1" ;;
	esac
	srcs="$srcs $src"
	incs="$incs -I$(dirname "$src")"
	shift
done
[ $# -gt 0 ] && shift           # the --
extra="$*"

cc=${CLANG:-clang}
secs=${FUZZ_SECONDS:-20}
work=${FUZZ_WORKDIR:-${TMPDIR:-/tmp}/tdb-fuzz-$name}
mkdir -p "$work/corpus" "$work/seeds"

# Skip (77) unless clang can link a libFuzzer target with the sanitizers.
if ! command -v "$cc" >/dev/null 2>&1; then
	echo "run-fuzz: $cc not found: skipped (apt-get install clang libclang-rt-14-dev)"
	exit 77
fi
printf '#include <stddef.h>\n#include <stdint.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n' \
	> "$work/probe.c"
if ! "$cc" -fsanitize=fuzzer,address,undefined "$work/probe.c" \
		-o "$work/probe" >"$work/probe.log" 2>&1; then
	echo "run-fuzz: $cc cannot build libFuzzer targets: skipped (apt-get install libclang-rt-14-dev)"
	sed 's/^/  /' "$work/probe.log"
	exit 77
fi

# -fno-sanitize-recover: a UBSan finding is a crash libFuzzer reports.
cflags="-g -O1 -std=gnu11 -D_GNU_SOURCE -Wall -Wextra -fno-omit-frame-pointer
	-fno-sanitize-recover=all $incs"
# shellcheck disable=SC2086
"$cc" -fsanitize=fuzzer,address,undefined $cflags "$target" $srcs $extra \
	-o "$work/fuzz_$name"

if grep -q TDB_FUZZ_SEEDS "$target"; then
	# shellcheck disable=SC2086
	"$cc" -fsanitize=address,undefined $cflags -DTDB_FUZZ_SEEDS \
		"$target" $srcs $extra -o "$work/seeds_$name"
	"$work/seeds_$name" "$work/seeds"
fi
if [ -d "$here/corpus-$name" ]; then
	cp "$here/corpus-$name"/* "$work/seeds/" 2>/dev/null || true
fi

echo "run-fuzz: fuzz_$name for ${secs}s in $work"
status=0
# libFuzzer's own default failure status is 77, which meson would take
# for "skipped": ask for 1 (crash, leak) and 2 (timeout) instead.
# shellcheck disable=SC2086
"$work/fuzz_$name" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
	-error_exitcode=1 -timeout_exitcode=2 -print_final_stats=1 \
	-artifact_prefix="$work/" ${FUZZ_ARGS:-} \
	"$work/corpus" "$work/seeds" || status=$?
[ "$status" = 77 ] && status=1  # whatever said 77, it was no skip
if [ "$status" != 0 ]; then
	echo "run-fuzz: fuzz_$name FAILED (status $status); inputs:" >&2
	ls -l "$work"/crash-* "$work"/leak-* "$work"/timeout-* \
		"$work"/oom-* 2>/dev/null >&2 || true
	echo "run-fuzz: replay with: $work/fuzz_$name FILE" >&2
fi
exit "$status"
