#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# run-powercut.sh - tdbd against power cuts: a qemu guest (TCG) whose data
# disk nbdkit serves through its cache filter in writeback mode (writes
# stay in nbdkit's memory until the guest flushes), writers in the guest
# that report every acknowledged change over a second serial port (a
# host file, which survives), and cuts: kill -9 of nbdkit and qemu
# together at a random moment, so whatever the guest had not flushed is
# gone.  Then a boot on the same disk: tdbd recovers and the checker
# (pc_writer check) verifies every acknowledged change and transaction.
# tests/powercut/README.md says more.
#
# Kernel mode (--ko): the same with tdb.ko owning the tables: each boot
# loads a fresh tdb.ko, starts `tdbd --backend kernel` (which restores
# the tables from the disk into it and then supervises it) and the
# writers and the checker go through /dev/tdb.
#
#   run-powercut.sh --tdbd PATH --writer PATH [options]
#
#   --cycles N      cuts with `sync always` (default 10); 0: none
#   --sync MODE     that run's sync mode instead (`batch`: the same
#                   promise; nothing acknowledged may be lost)
#   --control N     cuts with `sync none`, the control (default 4); 0:
#                   none.  At least one must lose an acknowledged change
#                   (else the harness could not see a loss: FAIL)
#   --control-sync MODE  the control's sync mode (default none; `always`
#                   checks the harness itself: the run must then FAIL)
#   --early-every N every Nth cut of the always run falls 0-1 s after
#                   tdbd starts (recovery, checkpoint, check), not
#                   while the writers run (default 4; 0: never)
#   --mount-opts O  the data disk's mount options in the guest (default
#                   none; `nobarrier` checks the harness: flushes never
#                   reach the disk, so `sync always` must then FAIL)
#   --writers N     writer threads in the guest (default 4)
#   --cut-ms A:B    cut A..B ms after the first acknowledgement of a boot
#                   (default 300:2500)
#   --kver VER      kernel (default: the newest /boot/vmlinuz-* with
#                   /lib/modules/VER)
#   --mem MB        guest memory (default 768)
#   --ko FILE       kernel mode: tdb.ko (exit 77 if the file does not
#                   exist: meson without -Dkmod=enabled); the kernel is
#                   the one its vermagic names unless --kver
#   --ko-args ARGS  tdb.ko's parameters (default log_ring_mb=1: the
#                   change log ring wraps often)
#   --keep          keep the work directory (disk images, serial logs)
#   --skip WHY      exit 77 at once saying WHY (meson: sanitizer builds)
#
# Output: one line per boot (PCRUN ...), then "run-powercut: PASS ..." or
# the failing boot's console log and "run-powercut: FAIL: ...".  Exit 0, 1
# (FAIL) or 77 (skipped: qemu, nbdkit, qemu-io, mkfs.ext4, busybox-static,
# the kernel or, in kernel mode, tdb.ko missing).
set -eu

tdbd= writer= cycles=10 control=4 writers=4 cut=300:2500 kver= mem=768
keep= skipwhy= ctl_sync=none mount_opts=
early_every=4 run_sync=always ko= ko_args=log_ring_mb=1
while [ $# -gt 0 ]; do
	case "$1" in
	--tdbd) tdbd=$2; shift 2 ;;
	--writer) writer=$2; shift 2 ;;
	--cycles) cycles=$2; shift 2 ;;
	--sync) run_sync=$2; shift 2 ;;
	--control) control=$2; shift 2 ;;
	--control-sync) ctl_sync=$2; shift 2 ;;
	--mount-opts) mount_opts=$2; shift 2 ;;
	--early-every) early_every=$2; shift 2 ;;
	--writers) writers=$2; shift 2 ;;
	--cut-ms) cut=$2; shift 2 ;;
	--kver) kver=$2; shift 2 ;;
	--mem) mem=$2; shift 2 ;;
	--ko) ko=$2; shift 2 ;;
	--ko-args) ko_args=$2; shift 2 ;;
	--keep) keep=1; shift ;;
	--skip) skipwhy=$2; shift 2 ;;
	-h|--help) sed -n '2,56s/^# \{0,1\}//p' "$0"; exit 0 ;;
	*) echo "run-powercut: unknown argument $1" >&2; exit 2 ;;
	esac
done

skip() { echo "run-powercut: SKIP: $*" >&2; exit 77; }
die() { echo "run-powercut: FAIL: $*" >&2; exit 1; }
say() { echo "run-powercut: $*"; }

[ -z "$skipwhy" ] || skip "$skipwhy"
. "$(dirname "$0")/../kernel/qemu-common.sh"
qc_host_tools nbdkit:nbdkit qemu-io:qemu-utils mkfs.ext4:e2fsprogs \
	od:coreutils stdbuf:coreutils stat:coreutils
TMPDIR=/tmp nbdkit -U - --filter=cache null --run true >/dev/null 2>&1 ||
	skip "nbdkit cannot run its cache filter (apt-get install nbdkit)"
[ -n "$tdbd" ] && [ -x "$tdbd" ] || die "no tdbd (--tdbd PATH)"
[ -n "$writer" ] && [ -x "$writer" ] || die "no pc_writer (--writer PATH)"
cut_min=${cut%%:*} cut_max=${cut#*:}
[ "$cut_max" -gt "$cut_min" ] || die "--cut-ms A:B needs A < B"
backend=daemon
if [ -n "$ko" ]; then
	backend=kernel
	[ -f "$ko" ] || skip "kernel mode: $ko not built (meson setup" \
		"-Dkmod=enabled, with linux-headers-amd64)"
	ko=$(readlink -f "$ko")
	# the kernel tdb.ko was built for (its vermagic), unless --kver
	[ -n "$kver" ] ||
		kver=$(modinfo -F vermagic "$ko" | awk '{ print $1 }')
fi
qc_kernel "$kver"

work=$(mktemp -d /tmp/tdb-powercut.XXXXXX)
qpid= npid=
cleanup() {
	# only the processes this script started, by pid
	[ -z "$qpid" ] || kill -9 "$qpid" 2>/dev/null || true
	[ -z "$npid" ] || kill -9 "$npid" 2>/dev/null || true
	[ -n "$keep" ] || rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

alive() { [ -d "/proc/$1" ] && ! grep -q ') Z' "/proc/$1/stat" 2>/dev/null; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }
rand() { od -An -N4 -tu4 /dev/urandom | tr -d ' '; }

# --- nbdkit -----------------------------------------------------------------
# The disk: nbdkit's file plugin over an image, under the cache filter in
# writeback mode (the cache is a deleted file in $TMPDIR: it dies with
# nbdkit).  npid and sock are set; the socket is there when it returns.
nbd_start() {	# image
	sock=$work/nbd.sock
	rm -f "$sock"
	TMPDIR=$work nbdkit -f -U "$sock" --filter=cache file file="$1" \
		cache=writeback > "$work/nbdkit.log" 2>&1 &
	npid=$!
	t=0
	while [ ! -S "$sock" ]; do
		alive "$npid" || die "nbdkit exited: $(cat "$work/nbdkit.log")"
		t=$((t + 1))
		[ $t -lt 100 ] || die "nbdkit made no socket in 10 s"
		sleep 0.1
	done
}

# Kill nbdkit and qemu together: the power cut.  Both are stopped
# first: killed one after the other, the survivor would see its peer's
# socket close and act on it (qemu fails the guest's in-flight writes
# with EIO, which the guest then logs).
cut_power() {
	kill -STOP "$npid" ${qpid:+"$qpid"} 2>/dev/null || true
	kill -9 "$npid" ${qpid:+"$qpid"} 2>/dev/null || true
	wait "$npid" 2>/dev/null || true
	[ -z "$qpid" ] || wait "$qpid" 2>/dev/null || true
	npid= qpid=
}

# The block server itself must lose what was not flushed and keep what
# was, or the test proves nothing: with qemu-io, write A, flush, write
# B, read B back, then cut; A must be in the image, B not.
nbd_selfcheck() {
	img=$work/selfcheck.img
	truncate -s 4M "$img"
	nbd_start "$img"
	# -t writeback: qemu-io's default (writethrough) makes every write
	# FUA; stdbuf: its output must reach the log before the sleep
	stdbuf -oL qemu-io -t writeback -f raw "nbd+unix:///?socket=$sock" \
		-c 'write -P 0xa1 0 64k' -c flush \
		-c 'write -P 0xb2 1M 64k' -c 'read -P 0xb2 1M 64k' \
		-c 'sleep 60000' > "$work/qemu-io.log" 2>&1 &
	qpid=$!
	t=0
	until grep -q '^read 65536/65536' "$work/qemu-io.log" 2>/dev/null; do
		alive "$qpid" || die "qemu-io: $(cat "$work/qemu-io.log")"
		t=$((t + 1))
		[ $t -lt 200 ] || die "qemu-io did not write in 20 s"
		sleep 0.1
	done
	grep -q 'Pattern verification failed' "$work/qemu-io.log" &&
		die "nbdkit did not read back its own write"
	cut_power
	# bytes other than A's in A's place, other than zero in B's
	a=$(dd if="$img" bs=64k count=1 2>/dev/null | tr -d '\241' | wc -c)
	b=$(dd if="$img" bs=64k skip=16 count=1 2>/dev/null |
		tr -d '\000' | wc -c)
	[ "$a" = 0 ] || die "nbdkit self-check: a flushed write was lost"
	[ "$b" = 0 ] || die "nbdkit self-check: an unflushed write" \
		"survived the kill (no writeback cache?)"
	say "nbdkit self-check: flushed write kept, unflushed write lost"
	rm -f "$img"
}

# --- the initramfs ----------------------------------------------------------
qc_tree
mkdir -p "$root/pc" "$root/data"
for m in virtio_pci virtio_blk crc32c_generic ext4; do
	qc_add_module "$m"
done
if [ "$backend" = kernel ]; then
	cp "$ko" "$root/lib/modules/tdb.ko"
	qc_add_deps "$ko"       # after ext4's: DEPMODS loads them first
fi
tdbd=$(readlink -f "$tdbd")
writer=$(readlink -f "$writer")
qc_copy_with_libs "$tdbd"
qc_copy_with_libs "$writer"

# /init: mount the data disk, start tdbd (which recovers), check what
# the cycles before acknowledged (boot >= 1), then write until the power
# goes (or, on the last boot, stop tdbd, unmount and power off).  In
# kernel mode tdbd starts after a fresh tdb.ko and restores the tables
# into it (PCRESTORE: its log line); pc_writer goes through /dev/tdb
# (TDB_BACKEND=kernel, no --socket); the last boot also unloads tdb.ko
# once tdbd is gone.
cat > "$root/init" <<'EOF'
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin:/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/shm && mount -t tmpfs -o mode=1777 tmpfs /dev/shm
chmod 1777 /tmp
. /pc/conf
say() { echo "$@"; }
fail() {
	say "PCFAIL $*"
	[ -f /tmp/tdbd.log ] && tail -n 40 /tmp/tdbd.log
	poweroff -f
}
for m in $DEPMODS; do
	insmod /lib/modules/$m.ko || fail "insmod $m"
done
i=0
while [ ! -b /dev/vda ]; do
	i=$((i + 1)); [ $i -lt 200 ] || fail "no /dev/vda"; sleep 0.1
done
mount -t ext4 ${MOUNT_OPTS:+-o "$MOUNT_OPTS"} /dev/vda /data ||
	fail "mount of the data disk"
mkdir -p /data/tdb
stty -F /dev/ttyS1 115200 raw -echo
if [ "$BACKEND" = kernel ]; then
	insmod /lib/modules/tdb.ko $KO_ARGS || fail "insmod tdb.ko $KO_ARGS"
	export TDB_BACKEND=kernel
	sock= args="--backend kernel"
	# no socket: ready once the tables are restored into tdb.ko
	ready() { grep -q 'supervising tdb.ko (kernel mode' /tmp/tdbd.log; }
else
	sock="--socket /tmp/tdbd.sock" args=
	ready() { [ -S /tmp/tdbd.sock ]; }
fi
say "PCBOOT cycle=$CYCLE mode=$MODE up=$(cut -d' ' -f1 /proc/uptime)"
# checkpoints every second and 1 MiB WAL segments: cuts land in
# checkpoints and segment switches too
$TDBD $sock $args --data-dir /data/tdb --sync "$MODE" \
	--hugepages no --wal-segment-size 1M --checkpoint-interval 1s \
	--log-level info > /tmp/tdbd.log 2>&1 &
tpid=$!
i=0
while ! ready; do
	kill -0 $tpid 2>/dev/null || fail "tdbd exited at start (recovery)"
	i=$((i + 1)); [ $i -lt 1200 ] || fail "tdbd not ready in 120 s"
	sleep 0.1
done
say "PCTDBD up=$(cut -d' ' -f1 /proc/uptime)"
[ "$BACKEND" != kernel ] ||
	say "PCRESTORE $(grep -o 'restored [0-9]* table.*records/s)' \
		/tmp/tdbd.log)"
if [ "$CYCLE" -gt 0 ]; then
	$WRITER check $sock --acks /pc/acks \
		--cycle "$CYCLE" --writers "$WRITERS"
	st=$?
	say "PCCHECK-RC $st up=$(cut -d' ' -f1 /proc/uptime)"
	[ $st -le 1 ] || fail "the checker could not check (rc=$st)"
	[ $st = 0 ] || tail -n 40 /tmp/tdbd.log
fi
if [ "$LAST" = 1 ]; then
	kill -TERM $tpid
	wait $tpid
	st=$?
	# no supervisor any more: tdb.ko must let itself be unloaded
	[ "$BACKEND" != kernel ] || rmmod tdb ||
		fail "rmmod tdb after tdbd stopped (rc=$st)"
	umount /data || fail "umount"
	say "PCEND tdbd-exit=$st"
	poweroff -f
fi
$WRITER write $sock --acks /dev/ttyS1 \
	--cycle "$CYCLE" --writers "$WRITERS"
fail "the writers stopped (rc=$?)"
EOF
chmod 0755 "$root/init"
printf 'DEPMODS="%s"\nTDBD="%s"\nWRITER="%s"\nWRITERS=%s\nMOUNT_OPTS="%s"\n' \
	"$qc_load_order" "$tdbd" "$writer" "$writers" "$mount_opts" \
	> "$root/pc/static"
printf 'BACKEND=%s\nKO_ARGS="%s"\n' "$backend" "$ko_args" >> "$root/pc/static"
sed -i '2a . /pc/static' "$root/init"
qc_pack "$work/base.gz"

# --- one boot ---------------------------------------------------------------
# Wait until a line matching $1 is in file $2; 0 found, 1 qemu is gone,
# 2 after $3 seconds.
wait_for() {
	t_end=$(($(now_ms) + $3 * 1000))
	while :; do
		grep -aq "$1" "$2" && return 0
		alive "$qpid" || { grep -aq "$1" "$2" && return 0; return 1; }
		[ "$(now_ms)" -lt "$t_end" ] || return 2
		sleep 0.1
	done
}

# A PCFAIL line from /init fails the boot.
pcfail() {
	! grep -aq '^PCFAIL' "$con" || boot_fail "$(grep -a '^PCFAIL' "$con")"
}

# Until the ack log grows (polled every 10 ms, for 5 s at most).
wait_ack() {
	size0=$(stat -c %s "$acks")
	t=0
	while [ "$(stat -c %s "$acks")" = "$size0" ] && [ $t -lt 500 ]; do
		t=$((t + 1))
		sleep 0.01
	done
}

# The console of the boot that failed, and the verdict.
boot_fail() {
	say "-------- guest console ($mode boot $cycle, sync $sync) --------"
	tr -d '\r' < "$con"
	say "-------- end of guest console --------"
	die "$mode boot $cycle: $*"
}

# Boot $cycle of mode $mode on $img: check (cycle > 0), then write and
# cut (unless last).  Sets check_line.
boot() {	# last (0/1)
	rm -rf "$work/conf"
	mkdir -p "$work/conf/pc"
	printf 'MODE=%s\nCYCLE=%s\nLAST=%s\n' "$sync" "$cycle" "$1" \
		> "$work/conf/pc/conf"
	cp "$acks_all" "$work/conf/pc/acks"
	qc_pack "$work/conf.gz" "$work/conf"
	cat "$work/base.gz" "$work/conf.gz" > "$work/initrd.gz"
	con=$work/$mode.console.$cycle
	acks=$work/$mode.acks.$cycle
	: > "$con"
	: > "$acks"
	nbd_start "$img"
	# cache=writeback: the guest sees a volatile write cache and flushes
	drive="file=nbd+unix:///?socket=$sock,format=raw,if=virtio"
	drive="$drive,cache=writeback"
	# loglevel=4: warnings and worse on the console, fewer slow bytes
	kargs="console=ttyS0 panic=-1 oops=panic loglevel=4 rdinit=/init"
	t_boot=$(now_ms)
	"$QEMU" -accel tcg -cpu max -m "$mem" -smp 2 -nodefaults \
		-display none -no-reboot \
		-serial "file:$con" -serial "file:$acks" \
		-drive "$drive" \
		-kernel "$kimg" -initrd "$work/initrd.gz" -append "$kargs" \
		< /dev/null > "$work/qemu.out" 2>&1 &
	qpid=$!
	check_line= t_check= early=
	# every $early_every-th cut of the always run comes early: at a
	# random moment 0-1 s after /init starts tdbd, so it falls in
	# recovery, the checkpoint after it, the check or the writers'
	# first ops (the next boot checks instead)
	if [ "$1" = 0 ] && [ "$mode" = always ] && [ "$early_every" -gt 0 ] &&
	   [ $((cycle % early_every)) = $((early_every - 1)) ]; then
		early=$(($(rand) % 1000))
		wait_for '^PCBOOT\|^PCFAIL' "$con" 300 ||
			boot_fail "no PCBOOT (qemu: $(cat "$work/qemu.out"))"
		sleep "$(awk "BEGIN { print $early / 1000 }")"
	elif [ "$cycle" -gt 0 ]; then
		wait_for '^PCCHECK-RC\|^PCFAIL' "$con" 300 || boot_fail \
			"no check result (qemu: $(cat "$work/qemu.out"))"
		t_check=$(($(now_ms) - t_boot))
	fi
	pcfail
	if grep -aq '^PCCHECK-RC' "$con"; then
		check_line=$(grep -a '^PCCHECK cycle=' "$con" | tr -d '\r')
		[ -n "$check_line" ] || boot_fail "no PCCHECK line"
		# the expiring puts' own counts (pc_writer.c, "Expiry")
		check_line="$check_line $(grep -a '^PCCHECK-X ' "$con" |
			tr -d '\r' | sed 's/^PCCHECK-X /x_/; s/ / x_/g')"
	fi
	if [ "$1" = 1 ]; then
		wait_for '^PCEND\|^PCFAIL' "$con" 120 || boot_fail "no PCEND"
		pcfail
		t=0
		while alive "$qpid"; do
			t=$((t + 1))
			[ $t -lt 300 ] || boot_fail "qemu did not power off"
			sleep 0.1
		done
		wait "$qpid" || true
		qpid=
		kill -TERM "$npid"
		wait "$npid" || true
		npid=
		acked=0 delay=-
	else
		if [ -n "$early" ]; then
			delay=early:$early
		else
			# the cut: a random moment after the boot's first ack
			wait_for '^A ' "$acks" 300 ||
				boot_fail "no acknowledgement from the writers"
			delay=$((cut_min + $(rand) % (cut_max - cut_min)))
			sleep "$(awk "BEGIN { print $delay / 1000 }")"
			# the control then cuts as soon as the next ack line
			# comes: a change just acknowledged, which `none`
			# has not flushed yet (if tdbd honours its mode)
			[ "$mode" != control ] || wait_ack
		fi
		alive "$qpid" || boot_fail "qemu died before the cut"
		cut_power
		# whole lines only: the cut may fall inside one
		[ "$(tail -c 1 "$acks" | od -An -tx1 | tr -d ' ')" = 0a ] ||
			sed -i '$d' "$acks"
		# ops' lines and expiring puts' (pc_writer.c)
		ackre='^A [0-9]* [0-9]* [0-9]*$'
		ackre="$ackre"'\|^X [0-9]* [0-9]* [0-9]* [0-9]*$'
		tr -d '\r' < "$acks" | grep -a "$ackre" >> "$acks_all" || true
		acked=$(grep -ac '^A ' "$acks" || true)
	fi
	pattern='WARNING:|BUG:|Oops|general protection|Call Trace|Kernel panic'
	pattern="$pattern|EXT4-fs error|I/O error|scheduling while atomic"
	pattern="$pattern|sleeping function called|self-detected stall"
	pattern="$pattern|refcount_t:|list_add corruption|list_del corruption"
	pattern="$pattern|blocked for more than|UBSAN|KASAN"
	grep -aEn "$pattern" "$con" > "$work/complaints" &&
		boot_fail "the kernel complained:" \
			"$(head -n 3 "$work/complaints" | tr '\n' ' ')"
	# kernel mode: what tdbd restored into the fresh tdb.ko (tables:
	# records), said before the check and the writers (an early cut
	# may come before)
	restored=
	if [ "$backend" = kernel ] && [ -z "$early" ]; then
		re='^PCRESTORE restored \([0-9]*\) table(s), \([0-9]*\) rec.*'
		restored=$(grep -a '^PCRESTORE' "$con" | tr -d '\r' |
			sed -n "s/$re/\\1:\\2/p")
		[ -n "$restored" ] ||
			boot_fail "tdbd said no 'restored N table(s)'"
		restored=" restored=$restored"
	fi
	# changes tdb.ko refused for a full change log (retried; pc_writer
	# says the first and every 1000th): the count it said last
	refused=$(grep -a '^PCREFUSED' "$con" | tail -n 1 |
		sed -n 's/.*: \([0-9]*\) refusal(s) so far.*/ refused>=\1/p')
	secs=$((($(now_ms) - t_boot) / 1000))
	say "PCRUN $backend $mode boot=$cycle secs=$secs" \
		"check_at=${t_check:--}ms acked=$acked" \
		"cut_ms=$delay$restored$refused" \
		"${check_line:-(no check)}"
}

# A field of check_line: lost, lost_last, torn, holes, bad.
field() { echo "$check_line" | sed -n "s/.* $1=\([0-9]*\).*/\1/p"; }

# A run: a fresh file system, $3 cuts with tdbd's `sync $2`, a last
# boot that checks.  mode: "always" (nothing may be lost) or "control"
# (losses counted in $losses).
run_mode() {	# mode sync cuts
	mode=$1 sync=$2
	img=$work/$mode.img
	rm -f "$img"
	truncate -s 256M "$img"
	mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$img" ||
		die "mkfs.ext4 failed"
	acks_all=$work/$mode.acks
	: > "$acks_all"
	losses=0
	cycle=0
	while [ "$cycle" -le "$3" ]; do
		last=0
		[ "$cycle" -lt "$3" ] || last=1
		boot $last
		if [ -n "$check_line" ]; then
			for f in torn holes bad; do
				[ "$(field $f)" = 0 ] ||
					boot_fail "$f: $check_line"
			done
			if [ "$mode" = always ]; then
				[ "$(field lost)" = 0 ] ||
					boot_fail "acknowledged changes" \
						"lost: $check_line"
			elif [ "$(field lost_last)" != 0 ]; then
				losses=$((losses + 1))
			fi
		fi
		cycle=$((cycle + 1))
	done
	rm -f "$img"
}

t0=$(now_ms)
say "$backend mode${ko:+ ($ko $ko_args)}; kernel $kver, tdbd $tdbd," \
	"$writers writers; $cycles cuts (sync $run_sync), $control" \
	"(control, sync $ctl_sync); work $work"
nbd_selfcheck
if [ "$cycles" -gt 0 ]; then
	run_mode always "$run_sync" "$cycles"
	say "$backend mode, sync $run_sync: $cycles cuts, no" \
		"acknowledged change lost, no transaction torn"
fi
if [ "$control" -gt 0 ]; then
	run_mode control "$ctl_sync" "$control"
	[ "$losses" -gt 0 ] ||
		die "the sync $ctl_sync control lost nothing in $control" \
			"cuts: the harness cannot see a loss"
	say "$backend mode, sync $ctl_sync (control): $losses of" \
		"$control cuts lost acknowledged changes (as expected)," \
		"none torn or out of order"
fi
say "PASS in $((($(now_ms) - t0) / 1000)) s"
