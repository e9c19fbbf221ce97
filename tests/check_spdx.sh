#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# check_spdx.sh - every source file says its licence on its first line
# (the second after a #! line), as an SPDX-License-Identifier whose text
# is in LICENSES/; and the files compiled into libtdbclient or installed
# as its headers are MIT, so a program of any licence can link them
# (LICENSE says which parts are under which licence, and why).
#
#   check_spdx.sh SRCDIR [MITFILE...]
#       SRCDIR: the source tree.  Source files: *.c *.cc *.h *.sh *.gp
#       *.py *.map, meson.build, meson_options.txt, Kbuild, Makefile,
#       man pages (man/*.[1-8]), packaging/tdbd.*, run, .ci/run,
#       debian/rules, debian/tdbd.postrm.  Build directories (build*,
#       obj-*), .git and the package build's debian/ subdirectories are
#       skipped.
#       MITFILE: files that must say MIT (tests/meson.build passes
#       libtdbclient's sources and headers).
#
# Exit: 0 clean, 1 offending files (listed), 2 usage error.
set -u

[ $# -ge 1 ] && [ -d "$1" ] || {
	echo "usage: check_spdx.sh SRCDIR [MITFILE...]" >&2
	exit 2
}
src=$1
shift
bad=0

# spdx_of FILE: the identifier on the file's licence line, or nothing.
spdx_of() {
	n=1
	head -n 1 "$1" | grep -q '^#!' && n=2
	sed -n "${n}p" "$1" |
		sed -n 's/^.*SPDX-License-Identifier: \([^ *]*\).*$/\1/p'
}

list=$(cd "$src" && find . \
	\( -name .git -o -name 'build*' -o -name 'obj-*' -o -path ./debian/tmp \
	   -o -path ./debian/.debhelper -o -path ./debian/tdbd \
	   -o -path ./debian/tdbd-tools -o -path ./debian/libtdbclient1 \
	   -o -path ./debian/libtdbclient-dev -o -path ./debian/build \) -prune \
	-o -type f \( -name '*.[ch]' -o -name '*.cc' -o -name '*.sh' \
	   -o -name '*.gp' -o -name '*.py' -o -name '*.map' \
	   -o -name meson.build -o -name meson_options.txt -o -name Kbuild \
	   -o -name Makefile -o -path './man/*.[1-8]' \
	   -o -path './packaging/tdbd.*' -o -path ./run -o -path ./.ci/run \
	   -o -path ./debian/rules -o -path ./debian/tdbd.postrm \) -print | sort)
count=0
for f in $list; do
	count=$((count + 1))
	id=$(spdx_of "$src/$f")
	if [ -z "$id" ]; then
		echo "check_spdx: ${f#./}: no SPDX-License-Identifier line" \
		     "at the top" >&2
		bad=1
	elif [ ! -f "$src/LICENSES/$id.txt" ]; then
		echo "check_spdx: ${f#./}: $id has no text in LICENSES/" >&2
		bad=1
	fi
done
[ "$count" -gt 0 ] || { echo "check_spdx: no source files under $src" >&2; exit 2; }

for f in "$@"; do
	id=$(spdx_of "$f")
	if [ "$id" != MIT ]; then
		echo "check_spdx: $f: compiled into libtdbclient or installed" \
		     "with it, so it must be MIT, not '${id:-none}'" >&2
		bad=1
	fi
done
[ $bad = 0 ] && echo "check_spdx: $count files, $# of them MIT as required"
exit $bad
