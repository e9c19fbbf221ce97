#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# check-man.sh HEADER MANDIR MESON_BUILD - the man-coverage test.
#
# Every function include/tdb/client.h declares (tdbc_*) must have its own
# section 3 page MANDIR/<function>.3 that names it (.Nm) and declares it in
# its SYNOPSIS (.Fn or .Fo), must be listed in the overview page
# libtdbclient.3, and its page must be in MANDIR/meson.build (installed and
# linted).  Conversely every tdbc_*.3 page must document a function the
# header still declares, and every page in MANDIR must be in meson.build.
# So a new function cannot go undocumented, nor a removed one stay.
# Exit 0: all covered; 1: what is missing is printed.
set -u
if [ $# -ne 3 ]; then
	echo "usage: check-man.sh HEADER MANDIR MESON_BUILD" >&2
	exit 2
fi
header=$1 mandir=$2 build=$3
for f in "$header" "$build"; do
	[ -r "$f" ] || { echo "check-man: cannot read $f" >&2; exit 1; }
done

# The functions the header declares: comments and preprocessor lines
# removed, split into declarations at ; { and }, typedefs left out, and the
# tdbc_ name right before a declaration's first "(".
funcs=$(awk '
	/^[ \t]*#/ { next }
	{ sub(/\/\/.*/, ""); buf = buf " " $0 }
	END {
		while ((i = index(buf, "/*")) > 0) {
			rest = substr(buf, i + 2)
			j = index(rest, "*/")
			if (j == 0) { buf = substr(buf, 1, i - 1); break }
			buf = substr(buf, 1, i - 1) " " substr(rest, j + 2)
		}
		n = split(buf, decl, /[;{}]/)
		for (k = 1; k <= n; k++) {
			d = decl[k]
			if (d ~ /(^|[^A-Za-z0-9_])typedef[ \t]/)
				continue
			p = index(d, "(")
			if (p == 0)
				continue
			head = substr(d, 1, p - 1)
			if (match(head, /tdbc_[A-Za-z0-9_]+[ \t]*$/)) {
				name = substr(head, RSTART, RLENGTH)
				sub(/[ \t]+$/, "", name)
				print name
			}
		}
	}' "$header" | sort -u)

if [ -z "$funcs" ]; then
	echo "check-man: no tdbc_ function found in $header" >&2
	exit 1
fi

fail=0
nf=0
missing() {
	echo "check-man: $*"
	fail=1
}
overview=$mandir/libtdbclient.3
[ -r "$overview" ] || missing "no overview page libtdbclient.3"

for f in $funcs; do
	nf=$((nf + 1))
	page=$mandir/$f.3
	if ! [ -r "$page" ]; then
		missing "$f (declared in $header) has no page $f.3"
		continue
	fi
	grep -Eq "^\.Nm $f( ,)?\$" "$page" ||
		missing "$f.3: its NAME section does not name $f (.Nm $f)"
	grep -Eq "^\.(Fn|Fo) $f( |\$)" "$page" ||
		missing "$f.3: its SYNOPSIS does not declare $f (.Fn/.Fo $f)"
	[ -r "$overview" ] && ! grep -Eq "^\.It Xr $f 3\$" "$overview" &&
		missing "libtdbclient.3 does not list $f (.It Xr $f 3)"
	grep -q "'$f\.3'" "$build" ||
		missing "$f.3 is not in $build"
done

# Pages of functions the header no longer declares; pages not installed.
np=0
for page in "$mandir"/*.[1-8]; do
	[ -e "$page" ] || continue
	np=$((np + 1))
	b=$(basename "$page")
	case $b in
	tdbc_*.3)
		echo "$funcs" | grep -qx "${b%.3}" ||
			missing "$b documents ${b%.3}, which $header does not declare" ;;
	esac
	grep -q "'$b'" "$build" || missing "$b is not in $build"
done

if [ $fail -ne 0 ]; then
	echo "check-man: FAILED"
	exit 1
fi
echo "check-man: $nf functions of $(basename "$header") documented," \
	"$np pages installed"
exit 0
