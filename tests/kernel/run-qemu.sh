#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# run-qemu.sh - the kernel stage: boot Debian's kernel under qemu (TCG)
# with an initramfs built here, load tdb.ko, run the guest tests against
# /dev/tdb and generic netlink, unload it and check that nothing leaked.
#
#   run-qemu.sh [options] --ko PATH/tdb.ko [--] TEST_BINARY...
#
#   --ko FILE       the module (required; exit 77 if it does not exist)
#   --kver VER      kernel version (default: tdb.ko's vermagic; else the
#                   newest /boot/vmlinuz-* with /lib/modules/VER/build)
#   --timeout S     whole run, boot to power-off (default 900)
#   --mem MB        guest memory (default 2048)
#   --log FILE      keep the serial log here (default: a temp file,
#                   printed on failure)
#   --keep          keep the work directory (initramfs tree, log)
#   --env K=V       extra environment for the guest tests (repeatable)
#   --extra FILE    also copy FILE and its shared libraries into the
#                   guest at its own path, not run (repeatable)
#   --disk IMAGE    attach IMAGE (raw, an ext4 file system made on the
#                   host, e.g. truncate -s 4G I && mkfs.ext4 -q -F I) as
#                   virtio-blk and mount it on /data in the guest before
#                   anything else, so that fdatasync there reaches a real
#                   file (the initramfs is tmpfs: fdatasync does nothing);
#                   unmounted after the tests, before the memory check
#   --disk-cache M  qemu's cache mode for --disk: writeback (default: the
#                   guest sees a volatile write cache and its flushes
#                   become fdatasync of IMAGE on the host) or none
#                   (O_DIRECT on the host, flushes likewise); never unsafe
#
# The guest's /init (written below) mounts proc, sys and devtmpfs, loads and unloads tdb.ko once to warm the kernel's own
# caches, records MemFree and SUnreclaim, loads tdb.ko, runs each test
# binary with TDB_BACKEND=kernel and prints one line per test:
#   TDBTEST <name> PASS|FAIL|SKIP rc=N secs=S
# then checks that rmmod is refused while /dev/tdb is open, unloads the
# module, compares memory with the tolerances below, checks the taint
# flags, prints "TDBTEST-END rc=N" and powers off.
#
# The host side fails (exit 1) on a FAIL line, a missing END line, rc
# other than 0, or any kernel complaint in the log (WARNING:, BUG, Oops,
# general protection, Call Trace, UBSAN, KASAN, kmemleak, RCU stalls,
# sleeping in atomic context, scheduling while atomic).  Exit 77 (meson's
# "skipped") when qemu, the kernel image, its modules or headers,
# busybox-static or the module are missing.
set -eu

ko= kver= timeout_s=900 mem=2048 log= keep= envs= extras= disk=
dcache=writeback
while [ $# -gt 0 ]; do
	case "$1" in
	--ko) ko=$2; shift 2 ;;
	--kver) kver=$2; shift 2 ;;
	--timeout) timeout_s=$2; shift 2 ;;
	--mem) mem=$2; shift 2 ;;
	--log) log=$2; shift 2 ;;
	--keep) keep=1; shift ;;
	--env) envs="$envs $2"; shift 2 ;;
	--extra) extras="$extras $2"; shift 2 ;;
	--disk) disk=$2; shift 2 ;;
	--disk-cache) dcache=$2; shift 2 ;;
	--) shift; break ;;
	-h|--help) sed -n '2,44s/^# \{0,1\}//p' "$0"; exit 0 ;;
	-*) echo "run-qemu: unknown option $1" >&2; exit 2 ;;
	*) break ;;
	esac
done

skip() { echo "run-qemu: SKIP: $*" >&2; exit 77; }
die() { echo "run-qemu: FAIL: $*" >&2; exit 1; }

# --- what we need on the host ------------------------------------------
. "$(dirname "$0")/qemu-common.sh"
qc_host_tools
[ -n "$ko" ] || die "no --ko given"
[ -f "$ko" ] || skip "module $ko not built (meson -Dkmod=enabled, or make -C kmod)"

# The kernel: tdb.ko's vermagic names the one it was built for; that
# kernel's image and modules must be here.  Without a vermagic (never
# for a real build), the newest image that has a build directory.
vermagic=$(modinfo -F vermagic "$ko" 2>/dev/null | awk '{ print $1 }')
if [ -z "$kver" ]; then
	kver=$vermagic
fi
qc_kernel "$kver" build
[ -z "$vermagic" ] || [ "$vermagic" = "$kver" ] ||
	die "$ko was built for $vermagic, not $kver"

[ $# -gt 0 ] || die "no test binaries given"
case "$dcache" in
writeback|none) ;;
*) die "--disk-cache $dcache: writeback or none (flushes must reach the image)" ;;
esac
[ -z "$disk" ] || [ -f "$disk" ] || die "--disk $disk: no such image"
for t in "$@"; do
	[ -x "$t" ] || die "test binary $t missing"
done

# --- the initramfs ----------------------------------------------------------
work=$(mktemp -d /tmp/tdb-kernel.XXXXXX)
cleanup() { [ -n "$keep" ] || rm -rf "$work"; }
trap cleanup EXIT
trap 'exit 130' INT TERM
qc_tree
mkdir -p "$root/tests"

# --disk: the block and file system modules, loaded (DISKMODS) and the
# disk mounted before anything else; tdb.ko's own modules (DEPMODS) are
# what qc_add_deps adds after them (one it shares is loaded already).
diskmods=
if [ -n "$disk" ]; then
	for m in virtio_pci virtio_blk crc32c_generic ext4; do
		qc_add_module "$m"
	done
	diskmods=$qc_load_order
	qc_load_order=
	mkdir -p "$root/data"
fi

# tdb.ko and the modules it needs (modinfo's depends, recursively).
cp "$ko" "$root/lib/modules/tdb.ko"
qc_add_deps "$ko"

names=
for t in "$@"; do
	qc_copy_with_libs "$(readlink -f "$t")"
	n=$(basename "$t")
	n=${n#ktest_}
	ln -s "$(readlink -f "$t")" "$root/tests/$n"
	names="$names $n"
done
for f in $extras; do
	[ -x "$f" ] || die "extra binary $f missing"
	qc_copy_with_libs "$(readlink -f "$f")"
done

# The guest's /init.  Memory check, and why these tolerances:
#  - a warm-up load/unload first, so one-time allocations of the kernel
#    (genl family ids, misc minors, module loader caches, the sysfs
#    directory) are not counted against tdb.ko;
#  - then free memory and SUnreclaim after dropping the page, dentry and
#    inode caches and compacting, before the real load and after the
#    unload.  Free memory is MemFree plus the pages on the per-cpu free
#    lists (/proc/zoneinfo "count:"): without them MemFree alone moved
#    by 10-18 MiB between two points with nothing leaked, as freed pages
#    (order-9 ones too) park on those lists;
#  - a table's memory comes in 2 MiB extents (order-9 pages), its rings
#    in 4 MiB+ vmalloc areas: one leaked extent is 2048 KiB, so free
#    memory may drop by at most MEM_TOL_KB = 1536 KiB (measured: 236-312
#    KiB over whole runs: page tables, pids, task stacks freed lazily);
#  - slab objects tdb.ko leaked would stay in SUnreclaim: at most
#    SLAB_TOL_KB = 1024 KiB (measured: +140-390 KiB, the tests'
#    processes and sockets whose frees RCU defers);
#  - kmem_cache_destroy() of a cache of tdb.ko's with objects left warns
#    ("Slab cache still has objects"), which the log check catches;
#  - a test that holds N MiB of rings at once leaves about N/512 KiB of
#    page tables the kernel keeps after they are freed (measured: 32 KiB
#    per 16 MiB of rings), so tests must not hold over ~700 MiB of rings
#    at once or the check fails without a leak.
cat > "$root/init" <<'EOF'
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin:/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
chmod 1777 /tmp     # the initramfs is already a tmpfs (and may hold the tests)
mkdir -p /dev/shm && mount -t tmpfs -o mode=1777 tmpfs /dev/shm
# kernel messages at every level reach the console (the host greps them)
echo 8 > /proc/sys/kernel/printk
cd /
rc=0
say() { echo "$@"; }
meminfo() { awk -v k="$1:" '$1 == k { print $2 }' /proc/meminfo; }
# Free memory = MemFree + the pages parked on the per-cpu free lists
# (counted out of MemFree; order-9 pages may park there too), in kB.
freekb() {
	pcp=$(awk '$1 == "count:" { s += $2 } END { print s * 4 }' /proc/zoneinfo)
	echo $(( $(meminfo MemFree) + pcp ))
}
settle() {
	sync
	echo 3 > /proc/sys/vm/drop_caches
	# compaction does not empty the per-cpu free lists (freekb counts
	# them instead), but it keeps the measure from depending on where
	# freed order-9 pages went
	echo 1 > /proc/sys/vm/compact_memory
	sleep 1        # RCU-deferred frees (sockets, files, pids)
	echo 3 > /proc/sys/vm/drop_caches
	# SLUB keeps empty slabs of kmalloc caches; hand them back so that
	# SUnreclaim counts objects, not cached slabs
	for f in /sys/kernel/slab/*/shrink; do echo 1 > "$f"; done 2>/dev/null
}
loadmods() {
	for m in $DEPMODS; do
		insmod /lib/modules/$m.ko 2>/dev/null || grep -q "^$m " /proc/modules ||
			{ say "TDBTEST insmod-$m FAIL"; return 1; }
	done
	insmod /lib/modules/tdb.ko "$@"
}
say "TDBTEST-BEGIN kernel=$(uname -r) cpus=$(grep -c ^processor /proc/cpuinfo)"
# --disk: /dev/vda on /data (ext4), before the memory baseline
if [ -n "$DISKMODS" ]; then
	for m in $DISKMODS; do
		insmod /lib/modules/$m.ko 2>/dev/null || grep -q "^$m " /proc/modules ||
			say "TDBTEST disk FAIL (insmod $m)"
	done
	i=0
	while [ ! -b /dev/vda ] && [ $i -lt 200 ]; do i=$((i + 1)); sleep 0.1; done
	if mount -t ext4 /dev/vda /data; then
		say "TDBTEST disk PASS ($(grep ' /data ' /proc/mounts))"
	else
		say "TDBTEST disk FAIL (mount /dev/vda on /data)"
		say "TDBTEST-END rc=1"
		poweroff -f
	fi
fi
# the warm-up load runs the engine's in-kernel selftest (kmod/selftest.c:
# hash and ordered tables against a model, under the kernel's RCU)
if ! loadmods selftest=1; then
	dmesg | grep -i 'tdb.*selftest' | tail -3
	say "TDBTEST insmod FAIL (warm-up load with selftest=1)"
	say "TDBTEST-END rc=1"
	poweroff -f
fi
dmesg | grep -q 'selftest passed' && say "TDBTEST selftest PASS" ||
	say "TDBTEST selftest FAIL (no line saying it passed in dmesg)"
rmmod tdb || { say "TDBTEST rmmod-warmup FAIL"; rc=1; }
settle
free0=$(freekb); slab0=$(meminfo SUnreclaim)
grep -E 'MemFree|Slab|SUnreclaim|Vmalloc|PageTables|KernelStack|Percpu|AnonPages|Shmem|HugePages_' /proc/meminfo
cat /proc/buddyinfo
say "TDBMEM before free=${free0}kB SUnreclaim=${slab0}kB"
if loadmods && [ -c /dev/tdb ]; then
	say "TDBTEST insmod PASS"
else
	say "TDBTEST insmod FAIL (no /dev/tdb after insmod)"
	say "TDBTEST-END rc=1"
	poweroff -f
fi
export TDB_BACKEND=kernel TDB_KTEST=1
for kv in $GUEST_ENV; do export "$kv"; done
for t in $TESTS; do
	start=$(date +%s)
	say "TDBTEST-RUN $t"
	/tests/$t
	st=$?
	secs=$(( $(date +%s) - start ))
	case $st in
	0) say "TDBTEST $t PASS rc=0 secs=$secs" ;;
	77) say "TDBTEST $t SKIP rc=77 secs=$secs" ;;
	*) say "TDBTEST $t FAIL rc=$st secs=$secs"; rc=1 ;;
	esac
	grep -q '^tdb ' /proc/modules || { say "TDBTEST $t FAIL (module gone)"; rc=1; break; }
done

# the disk's caches (inodes, journal) are not tdb.ko's: out of the way
# of the memory check
if [ -n "$DISKMODS" ]; then
	umount /data || { say "TDBTEST umount-data FAIL"; rc=1; }
fi
# rmmod must be refused while a /dev/tdb client holds the device open
exec 3<>/dev/tdb
if rmmod tdb 2>/dev/null; then
	say "TDBTEST rmmod-busy FAIL (rmmod succeeded with /dev/tdb open)"; rc=1
	exec 3>&-
else
	say "TDBTEST rmmod-busy PASS"
	exec 3>&-
	if rmmod tdb; then
		say "TDBTEST rmmod PASS"
	else
		say "TDBTEST rmmod FAIL"; rc=1
	fi
fi
if grep -q '^tdb ' /proc/modules; then
	say "TDBTEST memory SKIP (module still loaded)"
else
	settle
	free1=$(freekb); slab1=$(meminfo SUnreclaim)
	dfree=$((free0 - free1)); dslab=$((slab1 - slab0))
	grep -E 'MemFree|Slab|SUnreclaim|Vmalloc|PageTables|KernelStack|Percpu|AnonPages|Shmem|HugePages_' /proc/meminfo
	cat /proc/buddyinfo
	say "TDBMEM after free=${free1}kB SUnreclaim=${slab1}kB lost=${dfree}kB slab+=${dslab}kB"
	if [ "$dfree" -le "$MEM_TOL_KB" ] && [ "$dslab" -le "$SLAB_TOL_KB" ]; then
		say "TDBTEST memory PASS lost=${dfree}kB slab+=${dslab}kB"
	else
		say "TDBTEST memory FAIL lost=${dfree}kB (max $MEM_TOL_KB) slab+=${dslab}kB (max $SLAB_TOL_KB)"
		# files a test left in the guest's RAM count as lost: the
		# biggest, to tell them from tdb.ko's memory
		du -xak / 2>/dev/null | sort -n | tail -n 12
		grep -i tdb /proc/slabinfo
		rc=1
	fi
fi
# Taint: only O (out-of-tree, 4096) and E (unsigned, 8192) are expected.
taint=$(cat /proc/sys/kernel/tainted)
if [ $((taint & ~(4096 | 8192))) -ne 0 ]; then
	say "TDBTEST taint FAIL tainted=$taint"; rc=1
else
	say "TDBTEST taint PASS tainted=$taint"
fi
say "TDBTEST-END rc=$rc"
poweroff -f
EOF
chmod 0755 "$root/init"
# What the script above reads (no quoting games in a here-document).
sed -i "2a TESTS=\"$names\"\nDEPMODS=\"$qc_load_order\"\nDISKMODS=\"$diskmods\"\nGUEST_ENV=\"$envs\"\nMEM_TOL_KB=1536\nSLAB_TOL_KB=1024" "$root/init"

qc_pack "$work/initrd.gz"

# --- boot -------------------------------------------------------------------
[ -n "$log" ] || log=$work/serial.log
: > "$log"
echo "run-qemu: kernel $kver, module $ko, tests:$names"
echo "run-qemu: initramfs $(du -k "$work/initrd.gz" | cut -f1) KiB, log $log"
t0=$(date +%s)
qst=0
# -accel tcg: KVM hangs here.  panic=-1 with -no-reboot: a panic ends
# qemu at once; oops=panic: an oops does not leave a half-dead guest
# running into the timeout.
# --disk: a raw virtio-blk drive whose flushes reach the image
set --
[ -z "$disk" ] ||
	set -- -drive "file=$disk,format=raw,if=virtio,cache=$dcache"
timeout -k 10 "$timeout_s" "$QEMU" -accel tcg -cpu max -m "$mem" -smp 2 \
	"$@" -nographic -no-reboot -monitor none -serial stdio \
	-kernel "$kimg" -initrd "$work/initrd.gz" \
	-append "console=ttyS0 panic=-1 oops=panic loglevel=7 rdinit=/init" \
	< /dev/null > "$log" 2>&1 || qst=$?
t1=$(date +%s)
tr -d '\r' < "$log" > "$log.clean" && mv "$log.clean" "$log"
echo "run-qemu: qemu exited $qst after $((t1 - t0)) s"

# --- verdict ----------------------------------------------------------------
bad=
grep -a '^TDBTEST' "$log" || true
grep -a '^TDBMEM' "$log" || true
if [ "$qst" = 124 ] || [ "$qst" = 137 ]; then
	bad="${bad}timed out after ${timeout_s} s; "
fi
if grep -aq '^TDBTEST [^ ]* FAIL' "$log"; then
	bad="${bad}a test failed; "
fi
end=$(grep -a '^TDBTEST-END rc=' "$log" | tail -n 1 || true)
case "$end" in
"TDBTEST-END rc=0") ;;
"") bad="${bad}no TDBTEST-END line (the guest hung, panicked or died); " ;;
*) bad="${bad}$end; " ;;
esac
pattern='WARNING:|BUG:|\] BUG |Oops|general protection|Call Trace|UBSAN|KASAN|kmemleak|RCU stall|rcu_sched self-detected stall|rcu: INFO|self-detected stall|sleeping function called from invalid context|scheduling while atomic|Kernel panic|Slab cache still has objects|list_add corruption|list_del corruption|refcount_t:|hung_task|blocked for more than'
if grep -aEn "$pattern" "$log" > "$work/complaints"; then
	bad="${bad}the kernel complained: $(head -n 3 "$work/complaints" | tr '\n' ' '); "
fi
if [ -n "$bad" ]; then
	echo "run-qemu: ---------------- guest serial log ----------------"
	cat "$log"
	echo "run-qemu: ---------------- end of guest log -----------------"
	echo "run-qemu: FAIL: $bad" >&2
	exit 1
fi
pass=$(grep -ac '^TDBTEST [^ ]* PASS' "$log" || true)
skipn=$(grep -ac '^TDBTEST [^ ]* SKIP' "$log" || true)
echo "run-qemu: $pass passed, 0 failed, $skipn skipped ($((t1 - t0)) s under TCG)"
