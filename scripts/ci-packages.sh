#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# CI job for tdb's Debian packages, as root on Debian 12:
#
#   1. install the packaging tools and build dependencies (apt-get
#      build-dep ./ reads debian/control: debhelper, chrpath, ...);
#   2. build the .debs (scripts/build-packages.sh --nocheck: the test
#      suite already runs in `./run test`) and run lintian on them: no
#      error and no warning;
#   3. install them (apt-get install ./*.deb) and check what they
#      installed: the system user tdb, /run/tdb, /var/lib/tdb, the units
#      (systemd-analyze verify, and security with an exposure of at most
#      0.4), tdbd --check-config on the shipped /etc/tdb/tdbd.conf;
#   4. smoke test: the installed tdbd in the foreground as user tdb on a
#      temporary --data-dir and --socket; the installed tdb CLI creates,
#      puts, gets, scans; clients/examples/hello.c compiled with
#      `cc $(pkg-config --cflags --libs tdbclient)` runs against it;
#      group tdb may connect, others may not; tdb-bench runs; the data
#      survive a restart;
#   4b. tdb-dkms: DKMS builds tdb.ko from the installed source against
#      the installed linux-headers-amd64's kernel (`dkms build tdb/VER
#      -k KVER`, installing linux-headers-amd64 first if missing); the
#      module must exist with that kernel's vermagic (this machine's
#      kernel cannot load modules: building is the test);
#   5. install Samba's libtdb-dev and tdb-tools next to them: apt must
#      succeed, no file may belong to both sides, both sets of files must
#      be there, and a program using both libraries must build and run;
#   6. purge every package this script installed (ours, Samba's, the
#      build dependencies), remove the user tdb if it made it, and check
#      that nothing of tdb is left.
#
# Takes a few minutes (most of it apt and the build).  Exit status 0 if
# everything passed.
set -eu
cd "$(dirname "$0")/.."
top=$(pwd)

if [ "$(id -u)" != 0 ]; then
	echo "ci-packages: run as root (it installs and removes packages)" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
APT="apt-get -y -q -o Dpkg::Use-Pty=0"

work=$(mktemp -d /tmp/tdb-ci-packages.XXXXXX)
chmod 0755 "$work"
tdbd_pid=
purged=

say() { printf '\n=== ci-packages: %s\n' "$*"; }
fail() { echo "ci-packages: FAIL: $*" >&2; exit 1; }
installed() {
	dpkg-query -W -f='${db:Status-Status} ${binary:Package}\n' 2>/dev/null |
		awk '$1 == "installed" { print $2 }' | sort
}

# --- what the machine has now, to put it back ---------------------------
installed > "$work/before"
had_user=no
getent passwd tdb >/dev/null && had_user=yes
had_group=no
getent group tdb >/dev/null && had_group=yes

stop_tdbd() {
	if [ -n "$tdbd_pid" ]; then
		kill -TERM "$tdbd_pid" 2>/dev/null || true
		wait "$tdbd_pid" 2>/dev/null || true
		tdbd_pid=
	fi
}
restore() {
	stop_tdbd
	installed > "$work/after"
	new=$(comm -13 "$work/before" "$work/after" | tr '\n' ' ')
	if [ -n "$new" ]; then
		say "purging what this script installed: $new"
		# SUDO_FORCE_REMOVE: dkms recommends sudo, whose prerm refuses
		# to go on a machine without a root password unless told
		# shellcheck disable=SC2086
		SUDO_FORCE_REMOVE=yes $APT purge $new || return 1
	fi
	# dkms leaves the signing key it made (mok.key, mok.pub)
	if ! grep -qx dkms "$work/before" && [ -d /var/lib/dkms ]; then
		rm -rf /var/lib/dkms
	fi
	if [ "$had_user" = no ] && getent passwd tdb >/dev/null; then
		userdel tdb || return 1
	fi
	if [ "$had_group" = no ] && getent group tdb >/dev/null; then
		groupdel tdb || return 1
	fi
	return 0
}
on_exit() {
	rc=$?
	if [ -z "$purged" ]; then
		restore || echo "ci-packages: could not put the machine back" >&2
	fi
	rm -rf "$work"
	[ "$rc" = 0 ] || echo "ci-packages: FAILED (exit $rc)" >&2
	exit "$rc"
}
trap on_exit EXIT
trap 'exit 130' INT TERM

# --- 1. packaging tools, build dependencies ------------------------------
say "installing the build dependencies (apt-get build-dep ./)"
apt-get update -q
DEB_BUILD_PROFILES=nocheck $APT --no-install-recommends build-dep ./
$APT --no-install-recommends install lintian

# --- 2. build ----------------------------------------------------------------
say "building the packages"
sh scripts/build-packages.sh --nocheck "$work/debs"
debs=$(ls "$work"/debs/*.deb | grep -v -- '-dbgsym_')
for p in tdbd libtdbclient1 libtdbclient-dev tdbd-tools tdb-dkms; do
	ls "$work"/debs/"${p}"_*.deb >/dev/null 2>&1 || fail "no package $p built"
done
say "lintian (errors and warnings fail)"
lintian --fail-on error,warning "$work"/debs/*.changes ||
	fail "lintian found errors or warnings"

# --- 3. install ------------------------------------------------------------
# tdb-dkms builds tdb.ko at install for kernels with headers: have the
# headers of Debian's kernel (linux-headers-amd64) there first.
if ! dpkg-query -W -f='${db:Status-Status}' linux-headers-amd64 2>/dev/null |
	grep -qx installed; then
	say "installing linux-headers-amd64 (for tdb-dkms)"
	$APT --no-install-recommends install linux-headers-amd64
fi
say "installing them"
# shellcheck disable=SC2086
$APT install $debs
for p in tdbd libtdbclient1 libtdbclient-dev tdbd-tools tdb-dkms; do
	dpkg-query -W -f='${db:Status-Status}' "$p" | grep -qx installed ||
		fail "$p is not installed"
done

say "checking what they installed"
getent passwd tdb >/dev/null || fail "no user tdb (sysusers.d)"
getent group tdb >/dev/null || fail "no group tdb (sysusers.d)"
check_dir() {	# path mode owner
	[ -d "$1" ] || fail "$1 missing (tmpfiles.d)"
	got=$(stat -c '%a %U:%G' "$1")
	[ "$got" = "$2 $3" ] || fail "$1 is $got, want $2 $3"
	echo "$1: $got"
}
check_dir /run/tdb 755 tdb:tdb
check_dir /var/lib/tdb 700 tdb:tdb
units="/lib/systemd/system/tdbd.service /lib/systemd/system/tdbd.socket"
for u in $units; do [ -f "$u" ] || fail "$u missing"; done
# shellcheck disable=SC2086
systemd-analyze verify $units || fail "systemd-analyze verify"
echo "systemd-analyze verify: clean"
# --threshold counts in tenths: 4 is an exposure of 0.4.
systemd-analyze security --offline=true --threshold=4 \
	/lib/systemd/system/tdbd.service > "$work/security.txt" ||
	{ cat "$work/security.txt"; fail "tdbd.service exposure above 0.4"; }
grep -E '^✗|Overall' "$work/security.txt"
/usr/sbin/tdbd --version
setpriv --reuid=tdb --regid=tdb --init-groups /usr/sbin/tdbd --check-config ||
	fail "tdbd --check-config on /etc/tdb/tdbd.conf"
pc_cflags=$(pkg-config --cflags tdbclient)
pc_libs=$(pkg-config --libs tdbclient)
echo "pkg-config tdbclient: cflags '$pc_cflags' libs '$pc_libs'"
[ "$(pkg-config --modversion tdbclient)" = "$(dpkg-query -W -f='${Version}' libtdbclient-dev)" ] ||
	fail "tdbclient.pc's version is not the package's"

# --- 4. smoke test ----------------------------------------------------------
say "smoke test: the installed tdbd, tdb, libtdbclient"
mkdir -p "$work/data" "$work/run"
chown tdb:tdb "$work/data" "$work/run"
sock="$work/run/tdbd.sock"
export TDB_SOCKET="$sock"
start_tdbd() {
	setpriv --reuid=tdb --regid=tdb --init-groups \
		/usr/sbin/tdbd --data-dir "$work/data" --socket "$sock" \
		--log-level notice &
	tdbd_pid=$!
	i=0
	until [ -S "$sock" ] && tdb tables >/dev/null 2>&1; do
		i=$((i + 1))
		[ $i -lt 200 ] || fail "tdbd did not start"
		kill -0 "$tdbd_pid" 2>/dev/null || fail "tdbd exited at start"
		sleep 0.05
	done
	echo "tdbd (pid $tdbd_pid, user tdb) serving on $sock"
}
stop_tdbd_checked() {
	kill -TERM "$tdbd_pid"
	st=0
	wait "$tdbd_pid" || st=$?
	tdbd_pid=
	[ "$st" = 0 ] || fail "tdbd exited $st at SIGTERM"
}
start_tdbd
command -v tdb | grep -qx /usr/bin/tdb || fail "tdb is not /usr/bin/tdb"
tdb create smoke --mode 0640
tdb put smoke alpha one
tdb put smoke beta two
[ "$(tdb get smoke alpha)" = one ] || fail "tdb get smoke alpha"
[ "$(tdb scan smoke | wc -l)" = 2 ] || fail "tdb scan smoke"
tdb tables
tdb stat smoke | head -n 3

# A client as another user: refused without group tdb (socket 0660,
# group tdb), let in with it.
if setpriv --reuid=nobody --regid=nogroup --clear-groups tdb tables \
	>/dev/null 2>&1; then
	fail "a client outside group tdb could connect"
fi
setpriv --reuid=nobody --regid=nogroup --groups="$(getent group tdb | cut -d: -f3)" \
	tdb tables >/dev/null || fail "a client in group tdb could not connect"
echo "socket access: group tdb in, others out"

cd "$work"
# shellcheck disable=SC2046
cc -o hello "$top/clients/examples/hello.c" $(pkg-config --cflags --libs tdbclient)
ldd ./hello | grep -Eq 'libtdbclient\.so\.1 => /(usr/)?lib/[^ ]*/libtdbclient\.so\.1 ' ||
	fail "hello does not use the installed libtdbclient.so.1"
./hello "$sock" > hello.out || { cat hello.out; fail "hello"; }
cat hello.out
grep -qx 'greeting = hello, world' hello.out || fail "hello's output"
# the event-loop example (tdbc_fd), with sd-event
# shellcheck disable=SC2046
cc -DWITH_SD_EVENT -o evloop "$top/clients/examples/evloop.c" \
	$(pkg-config --cflags --libs tdbclient libsystemd)
./evloop "$sock" --sd-event > evloop.out || { cat evloop.out; fail "evloop"; }
cat evloop.out
# counters from 4 processes, none lost (tdbc_incr, tdbc_txn_run, CAS)
# shellcheck disable=SC2046
cc -o counter "$top/clients/examples/counter.c" $(pkg-config --cflags --libs tdbclient)
./counter "$sock" 4 100 > counter.out || { cat counter.out; fail "counter"; }
cat counter.out
cd "$top"
[ -f /usr/share/doc/libtdbclient-dev/examples/hello.c ] ||
	fail "the example is not in libtdbclient-dev"
[ -f /usr/share/doc/libtdbclient-dev/examples/evloop.c ] ||
	fail "evloop.c is not in libtdbclient-dev"
[ -f /usr/share/doc/libtdbclient-dev/examples/counter.c ] ||
	fail "counter.c is not in libtdbclient-dev"

# tdb-bench starts its own tdbd: the installed one, through the wrapper.
tdb-bench --only tdb --keys 1000 --ops 1000 --txn-ops 100 --sync-ops 0 \
	--runs 1 --procs 1 --batch 1 --strict > "$work/bench.out" 2>&1 ||
	{ cat "$work/bench.out"; fail "tdb-bench"; }
echo "tdb-bench: ran against /usr/sbin/tdbd"

# --- 4b. tdb-dkms ------------------------------------------------------------
say "tdb-dkms: dkms builds tdb.ko against the installed kernel headers"
dkms_ver=$(dpkg-query -W -f='${Version}' tdb-dkms)
[ -f "/usr/src/tdb-$dkms_ver/dkms.conf" ] ||
	fail "/usr/src/tdb-$dkms_ver/dkms.conf missing"
for f in kmod/Makefile kmod/Kbuild kmod/main.c src/core/table.c \
	 src/proto/proto.c src/ring/ring.c src/ring/ring_core.h \
	 include/tdb/proto.h include/tdb/kdev.h; do
	[ -f "/usr/src/tdb-$dkms_ver/$f" ] || fail "tdb-dkms lacks $f"
done
# The kernel of linux-headers-amd64 (its dependency names it).
kver=$(dpkg-query -W -f='${Depends}' linux-headers-amd64 |
	sed -n 's/.*linux-headers-\([^ ,]*\).*/\1/p')
[ -n "$kver" ] && [ -d "/lib/modules/$kver/build" ] ||
	fail "no kernel build tree for linux-headers-amd64 ($kver)"
# Installing may already have built it for that kernel (AUTOINSTALL);
# --force builds it again here, so this check does not depend on that.
dkms build "tdb/$dkms_ver" -k "$kver" --force ||
	{ cat "/var/lib/dkms/tdb/$dkms_ver/build/make.log" 2>/dev/null;
	  fail "dkms build tdb/$dkms_ver -k $kver"; }
ko=/var/lib/dkms/tdb/$dkms_ver/$kver/$(uname -m)/module/tdb.ko
[ -f "$ko" ] || ko=$ko.xz
[ -f "$ko" ] || fail "dkms built no tdb.ko for $kver"
vm=$(modinfo -F vermagic "$ko" | awk '{ print $1 }')
[ "$vm" = "$kver" ] || fail "tdb.ko's vermagic is $vm, not $kver"
dkms status tdb
echo "tdb-dkms: tdb.ko $dkms_ver built for $kver ($(du -k "$ko" | cut -f1) KiB)"

# --- 5. Samba's libtdb-dev and tdb-tools next to ours ----------------------------
say "installing Samba's libtdb-dev and tdb-tools next to ours"
$APT install libtdb-dev tdb-tools || fail "apt could not install Samba's tdb next to ours"
ours="tdbd libtdbclient1 libtdbclient-dev tdbd-tools tdb-dkms"
samba="libtdb1 libtdb-dev tdb-tools"
files_of() {
	for p in "$@"; do dpkg-query -L "$p"; done | sort -u |
		while read -r f; do [ -d "$f" ] && [ ! -L "$f" ] || echo "$f"; done
}
# shellcheck disable=SC2086
files_of $ours > "$work/ours.files"
# shellcheck disable=SC2086
files_of $samba > "$work/samba.files"
if comm -12 "$work/ours.files" "$work/samba.files" | grep .; then
	fail "the files above belong to both tdb and Samba's tdb"
fi
echo "no file shared: $(wc -l < "$work/ours.files") of ours," \
     "$(wc -l < "$work/samba.files") of Samba's"
for f in /usr/include/tdb.h /usr/include/tdb/client.h /usr/bin/tdbtool \
	 /usr/bin/tdbdump /usr/bin/tdb /usr/sbin/tdbd /usr/bin/tdb-dump; do
	[ -e "$f" ] || fail "$f missing with both installed"
done
pkg-config --exists tdb tdbclient || fail "pkg-config tdb and tdbclient"
[ -z "$(dpkg --audit)" ] || { dpkg --audit; fail "dpkg --audit"; }

# One program on both libraries: Samba's tdb file and our daemon.
cat > "$work/both.c" <<'EOF'
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <tdb.h>                /* Samba's */
#include <tdb/client.h>         /* ours */

int main(int argc, char **argv)
{
	TDB_CONTEXT *db = tdb_open(argv[1], 0, TDB_DEFAULT, O_RDWR | O_CREAT, 0600);
	TDB_DATA k = { (unsigned char *)"k", 1 }, v = { (unsigned char *)"samba", 5 };
	struct tdbc *c;
	struct tdbc_table *t;
	char buf[16], err[256];
	long n;

	if (!db || tdb_store(db, k, v, TDB_REPLACE) || tdb_fetch(db, k).dsize != 5)
		return 1;
	tdb_close(db);
	if (tdbc_connect(&c, NULL, 0, err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	if (tdbc_table_open(c, "smoke", &t))
		return 1;
	n = tdbc_get(t, NULL, "alpha", 5, buf, sizeof(buf), NULL);
	if (n != 3 || memcmp(buf, "one", 3))
		return 1;
	tdbc_table_close(t);
	tdbc_close(c);
	puts("both: Samba's tdb and tdbd from one program");
	return 0;
}
EOF
# shellcheck disable=SC2046
cc -Wall -o "$work/both" "$work/both.c" $(pkg-config --cflags --libs tdb tdbclient)
"$work/both" "$work/samba.tdb" || fail "a program on both libraries"
tdbdump "$work/samba.tdb" | grep -q samba || fail "tdbdump of Samba's file"
"$work/hello" "$sock" >/dev/null || fail "hello with Samba's tdb installed"

say "restart: the tables are still there"
stop_tdbd_checked
start_tdbd
[ "$(tdb get smoke beta)" = two ] || fail "the data did not survive a restart"
stop_tdbd_checked
echo "tdbd stopped cleanly (exit 0), data kept across the restart"

# --- 6. put the machine back ------------------------------------------------
restore || fail "purge"
purged=yes
for p in $ours $samba; do
	if dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null | grep -qv '^not-installed$'; then
		fail "$p is still on the machine"
	fi
done
for f in /usr/sbin/tdbd /usr/bin/tdb /usr/include/tdb /etc/tdb \
	 /lib/systemd/system/tdbd.service /usr/lib/sysusers.d/tdbd.conf \
	 /usr/lib/tmpfiles.d/tdbd.conf /run/tdb /var/lib/tdb /usr/include/tdb.h \
	 "/usr/src/tdb-$dkms_ver" /var/lib/dkms/tdb; do
	[ ! -e "$f" ] || fail "$f left after the purge"
done
if [ "$had_user" = no ] && getent passwd tdb >/dev/null; then
	fail "user tdb left"
fi
echo "machine back as it was"
echo "ci-packages: all checks passed"
