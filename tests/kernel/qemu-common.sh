# SPDX-License-Identifier: GPL-2.0-only
# qemu-common.sh - shell the qemu stages share (tests/kernel/run-qemu.sh,
# tests/powercut/run-powercut.sh): the host tools they need, the kernel
# they boot, and building and packing an initramfs tree (busybox-static,
# binaries with their shared libraries, kernel modules with the modules
# they depend on).
#
# Sourced (POSIX sh).  The caller defines skip() (exit 77 with a reason)
# and die() (exit 1), and sets $work (a scratch directory) before
# qc_tree; qc_tree sets $root, the tree every other function fills.

# QEMU and BUSYBOX, or skip saying what to install.  Extra tools to
# require may follow (name:package pairs).
qc_host_tools() {
	QEMU=$(command -v qemu-system-x86_64 || true)
	[ -n "$QEMU" ] ||
		skip "qemu-system-x86_64 missing" \
			"(apt-get install qemu-system-x86)"
	# busybox-static's /bin/busybox (the dynamic one would need its libs)
	BUSYBOX=/bin/busybox
	[ -x "$BUSYBOX" ] && ! ldd "$BUSYBOX" >/dev/null 2>&1 ||
		skip "busybox-static missing (apt-get install busybox-static)"
	for qc_t in cpio:cpio gzip:gzip modinfo:kmod ldd:libc-bin \
		timeout:coreutils "$@"; do
		command -v "${qc_t%%:*}" >/dev/null 2>&1 ||
			skip "${qc_t%%:*} missing (apt-get install ${qc_t#*:})"
	done
}

# kver and kimg: the kernel to boot.  $1: the version wanted ("" = the
# newest /boot/vmlinuz-* whose /lib/modules/<ver>/kernel is here; with
# $2 = build, also /lib/modules/<ver>/build, as tdb.ko needs).
qc_kernel() {
	kver=$1
	if [ -z "$kver" ]; then
		for qc_img in $(ls -1 /boot/vmlinuz-* 2>/dev/null |
				sort -rV); do
			qc_v=${qc_img#/boot/vmlinuz-}
			[ -d "/lib/modules/$qc_v/${2:-kernel}" ] || continue
			kver=$qc_v
			break
		done
	fi
	[ -n "$kver" ] || skip "no /boot/vmlinuz-* with" \
		"/lib/modules/<ver>/${2:-kernel} (apt-get install" \
		"linux-image-amd64 linux-headers-amd64)"
	kimg=/boot/vmlinuz-$kver
	[ -r "$kimg" ] ||
		skip "$kimg missing (apt-get install linux-image-$kver)"
	[ -d "/lib/modules/$kver/kernel" ] ||
		skip "/lib/modules/$kver missing (linux-image-$kver)"
}

# A fresh tree in $work/root with busybox, the usual directories and a
# passwd/group for root and nobody.  qc_load_order: the modules added so
# far, in the order /init must insmod them.
qc_tree() {
	root=$work/root
	qc_load_order=
	qc_mods_done=" "
	mkdir -p "$root/bin" "$root/sbin" "$root/proc" "$root/sys" \
		"$root/dev" "$root/tmp" "$root/lib/modules" "$root/etc"
	cp "$BUSYBOX" "$root/bin/busybox"
	echo "root:x:0:0:root:/:/bin/sh" > "$root/etc/passwd"
	echo "nobody:x:65534:65534:nobody:/:/bin/sh" >> "$root/etc/passwd"
	echo "root:x:0:" > "$root/etc/group"
	echo "nogroup:x:65534:" >> "$root/etc/group"
}

# A file into the tree at its own absolute path (symlinks resolved: the
# copy is the file itself, also under the link's name).
qc_copy_abs() {
	[ -e "$root$1" ] && return 0
	mkdir -p "$root$(dirname "$1")"
	cp -L "$1" "$root$1"
}

# A binary and every shared library it needs, at their paths (so that
# RUNPATHs such as $ORIGIN/../src/client keep working), and the dynamic
# loader.
qc_copy_with_libs() {
	qc_copy_abs "$1"
	ldd "$1" > "$work/ldd.out" 2>&1 || die "ldd $1: $(cat "$work/ldd.out")"
	! grep 'not found' "$work/ldd.out" || die "$1 needs libraries not found"
	while read -r qc_a qc_b qc_c _; do
		case "$qc_a" in /*) qc_copy_abs "$qc_a" ;; esac   # the loader
		if [ "$qc_b" = "=>" ]; then
			case "$qc_c" in /*) qc_copy_abs "$qc_c" ;; esac
		fi
	done < "$work/ldd.out"
}

# The modules a module file depends on (modinfo's depends, recursively),
# uncompressed into $root/lib/modules/<name>.ko, appended to
# qc_load_order after their own dependencies.
qc_add_deps() {	# module file
	for qc_d in $(modinfo -F depends "$1" | tr ',' ' '); do
		qc_add_module "$qc_d" "$1"
	done
}

# A module of $kver by name, after the modules it depends on.
qc_add_module() {	# name [who needs it]
	case "$qc_mods_done" in *" $1 "*) return 0 ;; esac
	qc_mods_done="$qc_mods_done$1 "
	qc_f=$(modinfo -k "$kver" -n "$1" 2>/dev/null) ||
		die "module $1${2:+ (needed by $2)} not found for $kver"
	qc_add_deps "$qc_f"
	# qc_add_deps may have changed qc_f (recursion shares variables)
	qc_f=$(modinfo -k "$kver" -n "$1")
	case "$qc_f" in
	*.ko.xz) xz -dc "$qc_f" > "$root/lib/modules/$1.ko" ;;
	*.ko.zst) zstd -qdc "$qc_f" > "$root/lib/modules/$1.ko" ;;
	*.ko.gz) gzip -dc "$qc_f" > "$root/lib/modules/$1.ko" ;;
	*) cp "$qc_f" "$root/lib/modules/$1.ko" ;;
	esac
	qc_load_order="$qc_load_order $1"
}

# Pack a tree (default $root) as a gzip'd newc cpio archive.  Archives
# concatenated make one initramfs: the kernel unpacks them in order.
qc_pack() {	# output [tree]
	(cd "${2:-$root}" && find . | cpio -o -H newc --quiet | gzip -1) > "$1"
}
