#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# lint-man.sh MANDOC PAGE... - the man-lint test (man/meson.build).
#
# 1. `mandoc -Tlint -Wwarning` over every page must say nothing and exit
#    0: no warning, error or unsupported request anywhere.
# 2. `mandoc -Tlint -Wstyle` must say nothing either, except
#    "referenced manual not found" for a page that is not ours (fdatasync(2),
#    mdb_dump(1), sd_notify(3)...): whether those are installed depends on
#    the machine, not on the pages.  A cross reference to one of our own
#    pages must resolve.
# 3. Each (built) page's .Os line names tdb and its version (".Os tdb
#    0.1.0": meson appends it; the pages in the tree say ".Os tdb").
# The pages are linted together from their directory, so that mandoc
# resolves the cross references between them.
# Exit 0: clean; 1: findings (printed); 77: no mandoc (skipped).
set -u
mandoc=${1:-}
[ $# -gt 0 ] && shift
if [ -z "$mandoc" ] || ! [ -x "$mandoc" ]; then
	echo "man-lint: mandoc not found (apt-get install mandoc): skipped"
	exit 77
fi
if [ $# -eq 0 ]; then
	echo "man-lint: no pages given" >&2
	exit 1
fi
dir=$(dirname "$1")
ours=""                 # "tdbd(8) tdbd.conf(5) ..."
names=""                # the pages' file names
for p in "$@"; do
	if [ "$(dirname "$p")" != "$dir" ]; then
		echo "man-lint: $p is not in $dir with the others" >&2
		exit 1
	fi
	b=$(basename "$p")
	ours="$ours ${b%.*}(${b##*.})"
	names="$names $b"
done
cd "$dir" || exit 1
# shellcheck disable=SC2086 # page file names hold no blanks
set -- $names
tmp=$(mktemp) || exit 1
trap 'rm -f "$tmp"' EXIT
fail=0

# 1: warnings and worse
mandoc -Tlint -Wwarning "$@" >"$tmp" 2>&1
rc=$?
if [ $rc -ne 0 ] || [ -s "$tmp" ]; then
	echo "man-lint: mandoc -Tlint -Wwarning (exit $rc):"
	cat "$tmp"
	fail=1
fi

# 2: style, but for references to pages of other packages
mandoc -Tlint -Wstyle "$@" >"$tmp" 2>&1
allowed=0
while IFS= read -r line; do
	case $line in
	*": STYLE: referenced manual not found: Xr "*)
		ref=${line##*: Xr }
		ref=${ref% (*}               # "(2 times)"
		name=${ref% *}; sec=${ref##* }
		case " $ours " in
		*" $name($sec) "*)
			echo "man-lint: $line (one of ours)"
			fail=1 ;;
		*)
			allowed=$((allowed + 1)) ;;
		esac ;;
	*": STYLE: "*)
		echo "man-lint: $line"
		fail=1 ;;
	*": WARNING: "* | *": ERROR: "* | *": UNSUPP: "* | *": BADARG: "* | \
	*": SYSERR: "*)
		;;                          # reported by pass 1
	*"outdated mandoc.db lacks"*)
		;;                          # the page was found all the same
	*)
		echo "man-lint: note: $line" ;;
	esac
done <"$tmp"

# 3: the version on the .Os line
for p in "$@"; do
	grep -qx '\.Os tdb [0-9][0-9.]*' "$p" || {
		echo "man-lint: $p: no \".Os tdb VERSION\" line (man/meson.build)"
		fail=1
	}
done

# 4: groff as man(1) and lintian run it, 80 columns: no warning (a
# "can't break line" here fails the Debian package's lintian)
if command -v man >/dev/null 2>&1 && command -v groff >/dev/null 2>&1; then
	for p in "$@"; do
		LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -E UTF-8 -l "$p" \
			2>"$tmp" >/dev/null || true
		if [ -s "$tmp" ]; then
			sed "s|^|man-lint: $p: |" "$tmp"
			fail=1
		fi
	done
fi

n=$#
if [ $fail -ne 0 ]; then
	echo "man-lint: $n pages, FAILED"
	exit 1
fi
echo "man-lint: $n pages clean at -Wwarning and -Wstyle" \
	"($allowed references to manuals of other packages not installed here)"
exit 0
