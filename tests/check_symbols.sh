#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# check_symbols.sh - prove shared code is freestanding (src/core/platform.h):
# the objects of the engine (src/core), the ring core (src/ring/ring.c)
# and the codec (src/proto), which tdbd and tdb.ko both compile, may
# reference no external symbol but the platform layer's (tdbp_*) and
# memcpy/memcmp/memset.
#
#   check_symbols.sh [--sanitized] [--allow REGEX]... FILE...
#       FILE: static libraries (thin or not) or objects.  A symbol one of
#       the files defines is internal; every other undefined symbol must
#       be allowed.  --sanitized also allows __asan_*, __ubsan_*, __tsan_*
#       and __stack_chk_fail (what -fsanitize=... and the stack protector
#       add).  --allow adds an extended regex of names allowed besides
#       (the codec's libmnl calls: tests/meson.build says why).  Check one
#       component per run: a symbol another FILE defines counts as
#       internal.
#   check_symbols.sh --bad-object
#       Self-test: compile an object that calls malloc (with $CC, default
#       cc) and check it.  Must exit non-zero (meson: should_fail); exits
#       0 (so the self-test fails) if the compile fails or the report does
#       not name malloc.
#
# Exit: 0 clean, 1 offending symbols (listed), 2 usage or tool error.
set -u

NM=${NM:-nm}
sanitized=0

if [ "${1:-}" = "--bad-object" ]; then
	dir=$(mktemp -d) || exit 0
	trap 'rm -rf "$dir"' EXIT
	cat > "$dir/bad.c" <<'EOF'
#include <stdlib.h>
void *tdbx_bad(size_t n) { return malloc(n); }
EOF
	# shellcheck disable=SC2086  # CC may be "ccache cc"
	if ! ${CC:-cc} -O2 -c "$dir/bad.c" -o "$dir/bad.o"; then
		echo "check_symbols self-test: cannot compile the bad object" >&2
		exit 0
	fi
	out=$("$0" "$dir/bad.o" 2>&1)
	rc=$?
	printf '%s\n' "$out"
	if [ $rc -eq 1 ] && printf '%s\n' "$out" | grep -qx '  malloc'; then
		echo "check_symbols self-test: malloc caught, as it should be"
		exit 1
	fi
	echo "check_symbols self-test: the check did NOT catch malloc (rc $rc)" >&2
	exit 0
fi

extra=""
while [ $# -gt 0 ]; do
	case "$1" in
	--sanitized) sanitized=1; shift ;;
	--allow)
		if [ $# -lt 2 ]; then
			echo "check_symbols: --allow REGEX" >&2
			exit 2
		fi
		extra="$extra|$2"
		shift 2 ;;
	*) break ;;
	esac
done
if [ $# -eq 0 ]; then
	echo "usage: $0 [--sanitized] [--allow REGEX]... LIB.a|OBJ.o ... | --bad-object" >&2
	exit 2
fi
for f in "$@"; do
	if [ ! -r "$f" ]; then
		echo "check_symbols: cannot read $f" >&2
		exit 2
	fi
done

tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT

# POSIX format: "name type [value size]"; archive members print a
# "lib.a[obj.o]:" header line (one field), skipped by NF >= 2.
if ! "$NM" -P -g "$@" > "$tmp/nm" 2> "$tmp/nm.err"; then
	echo "check_symbols: $NM failed:" >&2
	cat "$tmp/nm.err" >&2
	exit 2
fi
awk 'NF >= 2 && ($2 == "U" || $2 == "w" || $2 == "v") { print $1 }' \
	"$tmp/nm" | sort -u > "$tmp/undef"
awk 'NF >= 2 && $2 != "U" && $2 != "w" && $2 != "v" { print $1 }' \
	"$tmp/nm" | sort -u > "$tmp/def"
comm -23 "$tmp/undef" "$tmp/def" > "$tmp/ext"

# What shared code may call.  _GLOBAL_OFFSET_TABLE_ is defined by the
# linker (PIC code addressing), not a function of any library.
names='tdbp_[A-Za-z0-9_]+|memcpy|memcmp|memset|_GLOBAL_OFFSET_TABLE_'
if [ $sanitized -eq 1 ]; then
	names="$names|__asan_[A-Za-z0-9_]+|__ubsan_[A-Za-z0-9_]+|__tsan_[A-Za-z0-9_]+|__stack_chk_fail"
fi
allow="^($names$extra)\$"
grep -Ev "$allow" "$tmp/ext" > "$tmp/bad"

next=$(wc -l < "$tmp/ext")
if [ -s "$tmp/bad" ]; then
	echo "check_symbols: FAIL: shared code references symbols outside the"
	echo "platform layer (only tdbp_* and memcpy/memcmp/memset are allowed;"
	echo "see src/core/platform.h).  Offending symbols:"
	sed 's/^/  /' "$tmp/bad"
	echo "in: $*"
	if [ $sanitized -eq 0 ] && grep -Eq '^__(asan|ubsan|tsan)_' "$tmp/bad"; then
		echo "(sanitizer symbols: pass --sanitized for a sanitized build)"
	fi
	exit 1
fi
echo "check_symbols: ok: $next external symbols, all allowed:"
sed 's/^/  /' "$tmp/ext" | grep -Ev '__(asan|ubsan|tsan)_' || true
exit 0
