#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# check_architecture.sh - docs/ARCHITECTURE.md, the map of the tree, is
# true about which files exist (issue 26: "a map that is true").
#
#   check_architecture.sh SRCDIR
#
# 1. Every repository path the map names exists.  A path is a run of
#    [A-Za-z0-9_.*[]/-] anywhere in the text (backticks, table cells or
#    prose) that starts with a top-level directory of the tree: src/
#    kmod/ include/ tests/ docs/ clients/ bench/ man/ packaging/
#    debian/ scripts/ LICENSES/ .ci/ (a trailing "." or "/" is dropped;
#    a glob such as `src/wal/walrec.[ch]` must match something, and each
#    of name.c and name.h for "name.[ch]").  `tdb/NAME.h` is
#    include/tdb/NAME.h.  A bare file name in backticks with a source
#    suffix (.c .h .[ch] .sh .py .gp), e.g. `exec.c`, must be the name of
#    some file in the tree (it names a file in the directory the row or
#    paragraph is about; that it is there is for the reader to see).
#    Everything else is not taken for a path: function names, commands,
#    runtime files such as `tdbd.lock`, `wal/` or /run/tdb/tdbd.sock.
# 2. Every file under src/ kmod/ clients/ bench/ is on the map: the map
#    names the file itself (its path, or a glob matching it) or the
#    directory that holds it, as `dir/` or `dir` (its own directory,
#    not only an ancestor: a new subdirectory gets a line of its own).
#    meson.build files are the build of their directory and exempt.
#
# 3. Functions named next to their file: in a table row, a cell that
#    is one path in backticks and nothing else (`src/owner/serve.c`)
#    followed by a cell naming functions in backticks with "()"
#    (`tdbo_serve()`, `finish()`): each such function must be in that
#    file, as a name followed by "(" (a definition, a declaration or a
#    call).  Only names with "()" are taken; anything else in the cell
#    is the reader's.
#
# Each failure is one line naming the path (and the map's line for 1),
# so the output after a move of files says what to fix.
# Exit: 0 true, 1 untrue (listed), 2 usage error.
set -u
[ $# -eq 1 ] && [ -f "$1/docs/ARCHITECTURE.md" ] || {
	echo "usage: check_architecture.sh SRCDIR (with docs/ARCHITECTURE.md)" >&2
	exit 2
}
cd "$1" || exit 2
map=docs/ARCHITECTURE.md
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
bad=0

top='(src|kmod|include|tests|docs|clients|bench|man|packaging|debian|scripts|LICENSES|\.ci)/'

# LINE:PATH for every path named (1.), tdb/NAME.h already made whole.
grep -noE "(^|[^A-Za-z0-9_./-])$top[A-Za-z0-9_.*/[-]*(\\][A-Za-z0-9_.]*)?" \
	"$map" | sed -E 's/^([0-9]+):[^A-Za-z0-9_.]?/\1:/; s/[./]+$//' \
	> "$tmp/paths"
grep -noE '(^|[^A-Za-z0-9_./-])tdb/[A-Za-z0-9_]+\.h' "$map" |
	sed -E 's/^([0-9]+):[^A-Za-z0-9_]?/\1:include\//' >> "$tmp/paths"

# Does the glob or path $1 (relative to the top) name something?
exists() {
	case $1 in
	*'.[ch]')
		exists "${1%.\[ch\]}.c" && exists "${1%.\[ch\]}.h"
		return ;;
	esac
	for f in $1; do
		[ -e "$f" ] && return 0
	done
	return 1
}

while IFS=: read -r line path; do
	if ! exists "$path"; then
		echo "$map:$line: names $path, which is not in the tree"
		bad=1
	fi
done < "$tmp/paths"

# Bare file names in backticks (1., last part).
find . \( -name .git -o -name 'build*' -o -name 'obj-*' \) -prune -o \
	-type f -print | sed 's|.*/||' | sort -u > "$tmp/names"
grep -noE '`[A-Za-z0-9_-]+\.(\[ch\]|c|h|sh|py|gp)`' "$map" |
	tr -d '`' | while IFS=: read -r line name; do
	case $name in
	*'.[ch]') set -- "${name%.\[ch\]}.c" "${name%.\[ch\]}.h" ;;
	*) set -- "$name" ;;
	esac
	for n in "$@"; do
		if ! grep -qxF "$n" "$tmp/names"; then
			echo "$map:$line: names \`$n\`, no file of that name" \
			     "is in the tree"
			echo x >> "$tmp/bad"
		fi
	done
done
[ -s "$tmp/bad" ] && bad=1

# 2. The named paths, globs expanded, one per line.
cut -d: -f2- "$tmp/paths" | sort -u | while read -r path; do
	case $path in
	*'.[ch]') set -- "${path%.\[ch\]}.c" "${path%.\[ch\]}.h" ;;
	*) set -- $path ;;
	esac
	for f in "$@"; do
		echo "${f%/}"
	done
done | sort -u > "$tmp/named"

find src kmod clients bench \( -name 'build*' \) -prune -o -type f \
	! -name meson.build -print | sort | while read -r f; do
	d=${f%/*}
	if ! grep -qxF "$f" "$tmp/named" && ! grep -qxF "$d" "$tmp/named"
	then
		echo "$f: not on the map (name it or $d/ in $map)"
		echo x >> "$tmp/bad2"
	fi
done
[ -s "$tmp/bad2" ] && bad=1

# 3. LINE<TAB>PATH<TAB>FUNCTION for every function named next to a path.
TOP="^\`$top" awk '
BEGIN { top = ENVIRON["TOP"] }
/^\|/ {
	n = split($0, cell, "|")
	for (i = 2; i < n; i++) {
		p = cell[i]
		gsub(/^[ \t]+|[ \t]+$/, "", p)
		if (p !~ /^`[^` ]+`$/ || p !~ top)
			continue
		p = substr(p, 2, length(p) - 2)
		f = cell[i + 1]
		while (match(f, /`[A-Za-z_][A-Za-z0-9_]*\(\)`/)) {
			print NR "\t" p "\t" substr(f, RSTART + 1, RLENGTH - 4)
			f = substr(f, RSTART + RLENGTH)
		}
	}
}' "$map" > "$tmp/funcs"
while IFS='	' read -r line path fn; do
	[ -f "$path" ] || continue      # reported by 1.
	if ! grep -qE "(^|[^A-Za-z0-9_])$fn[[:space:]]*\(" "$path"; then
		echo "$map:$line: names $fn() in $path, which has no $fn("
		echo x >> "$tmp/bad3"
	fi
done < "$tmp/funcs"
[ -s "$tmp/bad3" ] && bad=1

[ $bad = 0 ] && echo "$map: every path it names exists, every file" \
	"under src/ kmod/ clients/ bench/ is on it, every function it names" \
	"next to a file is in it"
exit $bad
