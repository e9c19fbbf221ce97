/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * compat/kcompat.h - the kernel APIs tdb.ko uses that changed after 6.1
 * (the DKMS package builds against whatever kernel is installed).  Each
 * guard names the release that changed the API; only the 6.1 side is
 * compiled in this project's tests.
 *
 *  - tdbk_vma_clear_flags(), tdbk_vma_set_flags(): vma->vm_flags became
 *    read-only in 6.3 (vm_flags_clear() and friends, which take the mmap
 *    lock checks).
 *  - .llseek: no_llseek was removed in 6.12; it had been "#define
 *    no_llseek NULL" since 6.0 (a NULL .llseek means -ESPIPE), so dev.c
 *    just leaves the field out: the same on every kernel, no guard.
 *  - TDBK_HAVE_MCAST_CAP: GENL_MCAST_CAP_NET_ADMIN (genl_bind refuses
 *    joining the group without CAP_NET_ADMIN) came in 6.7 and was
 *    backported to the 6.1.y and 6.6.y stable kernels.  Generic netlink
 *    families have no bind hook before 6.8, so a kernel without the
 *    flag cannot restrict the group: genl.c then registers no multicast
 *    group at all rather than one anyone could join.
 *  - timer_delete_sync(): the name since 6.2 (del_timer_sync, its old
 *    name, went away in 6.15).
 */
#ifndef TDBK_COMPAT_KCOMPAT_H
#define TDBK_COMPAT_KCOMPAT_H

#include <linux/version.h>
#include <linux/mm.h>
#include <net/genetlink.h>

static inline void tdbk_vma_clear_flags(struct vm_area_struct *vma,
					unsigned long flags)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 3, 0)
	vm_flags_clear(vma, flags);
#else
	vma->vm_flags &= ~flags;
#endif
}

static inline void tdbk_vma_set_flags(struct vm_area_struct *vma,
				      unsigned long flags)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 3, 0)
	vm_flags_set(vma, flags);
#else
	vma->vm_flags |= flags;
#endif
}

#ifdef GENL_MCAST_CAP_NET_ADMIN
#define TDBK_HAVE_MCAST_CAP 1
#else
#define TDBK_HAVE_MCAST_CAP 0
#endif

#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 2, 0)
#define timer_delete_sync del_timer_sync
#endif

#endif
