// SPDX-License-Identifier: GPL-2.0-only
/*
 * kmap.c - table maps on /dev/tdb (include/tdb/kdev.h, "TABLE MAPS"):
 * the mmap of a table's slot range, read-only, its page-fault handler,
 * and taking the mapped pages away when the table is dropped.
 *
 * A table's region is an array of 2 MiB extents (platform.c): compound
 * order-9 pages or vmalloc memory.  Nothing is mapped at mmap() time;
 * the fault handler looks the table up by its slot each time and maps
 * the pages of the extent touched (vm_insert_page: a page reference and
 * an rmap entry per PTE), or the zero page when the table is gone or the
 * file may no longer read it.
 *
 * Invariants and why:
 *  - Memory safety does not depend on timing: every PTE of a table page
 *    holds a reference on that page, so an extent freed by a drop (or by
 *    the last handle) stays allocated until its last PTE goes, and
 *    reads through a stale PTE see old table bytes, never someone
 *    else's memory.  Zero-page PTEs are special PTEs (no reference).
 *  - Zeros only after the header says stale: a reader checks its section
 *    against its header page (magic, map_gen), which may still be mapped
 *    while a page it faults in now is the zero page; a page of zeros
 *    under a good header reads as an empty bucket, a present key as
 *    absent.  So the owner moves map_gen before a fault can find the
 *    table gone (registry.c, reg_drop: the bump, then `dropped` with
 *    release and the unlink, under reg_lock), and the fault's checks
 *    read `dropped` with acquire (tdbo_may_read) or take reg_lock
 *    (tdbo_table_by_map_slot): the reader's loads after the fault see
 *    the new map_gen and its section says stale.
 *  - Revocation: the owner calls the home's map_revoke hook when a table
 *    is dropped (after its region's map_gen moved).  tdbk_map_revoke()
 *    bumps zap_gen and then unmaps the table's slot range in the one
 *    address_space every /dev/tdb file uses (an anonymous inode of our
 *    own, so a second device node cannot hide mappings from it).  A
 *    fault reads zap_gen before its checks and again after it inserted
 *    its PTEs (full barriers both sides): if it moved, the fault takes
 *    its own PTEs down again and the access faults anew.  So once
 *    map_revoke has returned, no PTE of the dropped table is left.
 *  - Locking: map_revoke runs under the owner's o->wlock and the
 *    table's wlock and takes i_mmap_rwsem (read) and page-table locks.
 *    The fault runs under mmap_lock (read) and takes only the owner's
 *    registry lock (a leaf: tdbo_table_by_map_slot) and page-table
 *    locks: never a table's wlock, never the file's f->lock, so a fault
 *    never waits for a writer (a writer may be waiting for this very
 *    reader's read section, up to the lease).
 *  - The file (vma->vm_file) outlives its vmas, so the client that
 *    vm_private_data names is valid in the fault.  Its credentials are
 *    fixed at open; tdbo_may_read() reads only fixed fields and the
 *    table's dropped flag, so it needs no client lock.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/atomic.h>
#include <linux/fs.h>
#include <linux/fs_context.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mount.h>
#include <linux/pfn_t.h>
#include <linux/pseudo_fs.h>
#include <linux/vmalloc.h>

#include "kcompat.h"
#include "tdb/kdev.h"
#include "core.h"
#include "owner.h"
#include "transport.h"

#define TDBK_MAP_FS_MAGIC 0x7464626d    /* "tdbm" */
#define EXTENT_PAGES (TDBP_EXTENT_SIZE >> PAGE_SHIFT)
#define SLOT_PAGES (TDB_DEV_SLOT >> PAGE_SHIFT)

static struct tdbo_owner *map_owner;
static struct vfsmount *map_mnt;
static int map_mnt_count;
static struct inode *map_inode;
/* Bumped by every revocation, before its unmap (see the top). */
static atomic_t zap_gen = ATOMIC_INIT(0);

/* --- the address_space all /dev/tdb files share --------------------------- */

static int map_fs_init_fs_context(struct fs_context *fc)
{
	return init_pseudo(fc, TDBK_MAP_FS_MAGIC) ? 0 : -ENOMEM;
}

/* No .owner: the mount we pin must not hold a reference on tdb.ko
 * itself, or it could never be unloaded; tdbk_map_exit() releases it. */
static struct file_system_type map_fs_type = {
	.name = "tdb_map",
	.init_fs_context = map_fs_init_fs_context,
	.kill_sb = kill_anon_super,
};

int tdbk_map_init(struct tdbo_owner *o)
{
	int err = simple_pin_fs(&map_fs_type, &map_mnt, &map_mnt_count);

	if (err)
		return err;
	map_inode = alloc_anon_inode(map_mnt->mnt_sb);
	if (IS_ERR(map_inode)) {
		err = PTR_ERR(map_inode);
		map_inode = NULL;
		simple_release_fs(&map_mnt, &map_mnt_count);
		return err;
	}
	map_owner = o;
	return 0;
}

/* After misc_deregister, with no file open (each holds tdb.ko). */
void tdbk_map_exit(void)
{
	iput(map_inode);
	map_inode = NULL;
	simple_release_fs(&map_mnt, &map_mnt_count);
	map_owner = NULL;
}

void tdbk_map_file_open(struct file *file)
{
	file->f_mapping = map_inode->i_mapping;
}

/* --- revocation ----------------------------------------------------------- */

/* The owner's map_revoke hook (home.c): t was dropped. */
void tdbk_map_revoke(u64 slot)
{
	smp_mb__before_atomic();        /* the drop before the bump */
	atomic_inc(&zap_gen);
	smp_mb__after_atomic();         /* the bump before the unmap */
	unmap_mapping_pages(map_inode->i_mapping, slot * SLOT_PAGES,
			    TDB_DEV_MAP_SLOTS * SLOT_PAGES, true);
}

/* --- faults --------------------------------------------------------------- */

/* The table's first slot, from a slot of its range. */
static u64 map_base(u64 slot)
{
	return slot & ~(TDB_DEV_MAP_SLOTS - 1);
}

/*
 * Map the pages of extent ext that the vma covers, npages of them from
 * page first_pg of the extent at first_addr: the faulting page (want,
 * counted from first_pg) first, then the others.  0, or the error of the
 * faulting page (a PTE already there is no error).
 */
static int insert_extent(struct vm_area_struct *vma, const void *ext,
			 unsigned long first_addr, unsigned long first_pg,
			 unsigned long npages, unsigned long want)
{
	unsigned long i;

	for (i = 0; i < npages; i++) {
		unsigned long n = (want + i) % npages;
		const u8 *p = (const u8 *)ext + ((first_pg + n) << PAGE_SHIFT);
		struct page *pg = is_vmalloc_addr(p) ? vmalloc_to_page(p)
						     : virt_to_page(p);
		int e;

		if (WARN_ON_ONCE(!pg))
			return i ? 0 : -EFAULT;
		e = vm_insert_page(vma, first_addr + (n << PAGE_SHIFT), pg);
		if (e && e != -EBUSY)
			return i ? 0 : e;
	}
	return 0;
}

static vm_fault_t map_zero(struct vm_fault *vmf)
{
	unsigned long addr = vmf->address & PAGE_MASK;

	/* A special PTE (VM_MIXEDMAP): no reference on the zero page. */
	return vmf_insert_mixed(vmf->vma, addr,
				pfn_to_pfn_t(my_zero_pfn(addr)));
}

/*
 * Map the part of the extent at ext that the vma covers around the
 * faulting page (region offset roff): one fault per 2 MiB instead of
 * 512.  *pgoff and *npages: the file range it covered (for taking it
 * down again).  0 or the faulting page's error.
 */
static int map_extent(struct vm_fault *vmf, const void *ext, u64 roff,
		      pgoff_t *pgoff, unsigned long *npages)
{
	struct vm_area_struct *vma = vmf->vma;
	unsigned long addr = vmf->address & PAGE_MASK;
	unsigned long pg = (unsigned long)(roff & (TDBP_EXTENT_SIZE - 1)) >>
			   PAGE_SHIFT;
	unsigned long below = min(pg, (addr - vma->vm_start) >> PAGE_SHIFT);
	unsigned long above = min(EXTENT_PAGES - pg,
				  (vma->vm_end - addr) >> PAGE_SHIFT);

	*pgoff = vmf->pgoff - below;
	*npages = below + above;
	return insert_extent(vma, ext, addr - (below << PAGE_SHIFT),
			     pg - below, below + above, below);
}

static vm_fault_t map_fault(struct vm_fault *vmf)
{
	struct tdbo_client *c = vmf->vma->vm_private_data;
	u64 off = (u64)vmf->pgoff << PAGE_SHIFT;
	u64 base = map_base(off / TDB_DEV_SLOT);
	u64 roff = off - base * TDB_DEV_SLOT;   /* in the region */
	unsigned long npages;
	struct tdbo_table *t;
	struct tdbe_table *et;
	const void *ext;
	pgoff_t pgoff;
	int gen, err;

	gen = atomic_read(&zap_gen);
	smp_mb();               /* the generation before the checks */
	t = tdbo_table_by_map_slot(map_owner, base);
	if (!t || tdbo_may_read(c, t) || !(et = tdbo_table_engine(t))) {
		/* gone, or no longer ours to read: zeros, not SIGBUS */
		tdbo_table_put(t);
		return map_zero(vmf);
	}
	if (roff >= (u64)tdbe_table_max_extents(et) * TDBP_EXTENT_SIZE) {
		tdbo_table_put(t);
		return VM_FAULT_SIGBUS;
	}
	ext = tdbe_table_extent(et, (u32)(roff >> TDBP_EXTENT_SHIFT));
	if (!ext) {
		/* Not backed yet: a zero page here would stay after it is
		 * (and hide its data); a reader never looks past nextents. */
		tdbo_table_put(t);
		return VM_FAULT_SIGBUS;
	}
	err = map_extent(vmf, ext, roff, &pgoff, &npages);
	tdbo_table_put(t);
	smp_mb();               /* the PTEs before the second look */
	if (atomic_read(&zap_gen) != gen) {
		/* A revocation ran meanwhile and may have missed these:
		 * take them down (every file's, harmlessly); the access
		 * faults again and checks again. */
		unmap_mapping_pages(vmf->vma->vm_file->f_mapping, pgoff,
				    npages, true);
		return VM_FAULT_NOPAGE;
	}
	if (err == -ENOMEM)
		return VM_FAULT_OOM;
	return err ? VM_FAULT_SIGBUS : VM_FAULT_NOPAGE;
}

static const struct vm_operations_struct map_vm_ops = {
	.fault = map_fault,
};

/* --- mmap ----------------------------------------------------------------- */

/*
 * mmap of a table slot range (slot >= TDB_DEV_SLOT_MAP_FIRST) for client
 * c, which was granted a map (granted).  Read-only for good: PROT_WRITE
 * is EACCES and VM_MAYWRITE goes, so mprotect() cannot add it.
 */
int tdbk_map_mmap(struct tdbo_client *c, bool granted,
		  struct vm_area_struct *vma, u64 off)
{
	u64 base = map_base(off / TDB_DEV_SLOT);
	u64 in = off - base * TDB_DEV_SLOT;
	u64 len = vma->vm_end - vma->vm_start, size;
	struct tdbo_table *t;
	int err;

	if (vma->vm_flags & VM_WRITE)
		return -EACCES;
	if (!granted)
		return -EACCES;
	t = tdbo_table_by_map_slot(map_owner, base);
	if (!t)
		return -ENOENT;
	err = tdbo_may_read(c, t);
	if (!err && !tdbo_table_engine(t))
		err = -ENOENT;
	size = err ? 0 : (u64)tdbe_table_max_extents(tdbo_table_engine(t)) *
			 TDBP_EXTENT_SIZE;
	tdbo_table_put(t);
	if (err)
		return err;
	if (in > size || len > size - in)
		return -EINVAL;
	/* MIXEDMAP: table pages by vm_insert_page (counted), the zero
	 * page as a special PTE; no growth by mremap, not in core dumps. */
	tdbk_vma_set_flags(vma, VM_MIXEDMAP | VM_DONTEXPAND | VM_DONTDUMP);
	tdbk_vma_clear_flags(vma, VM_MAYWRITE);
	vma->vm_ops = &map_vm_ops;
	vma->vm_private_data = c;
	return 0;
}
