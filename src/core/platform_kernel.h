/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * platform_kernel.h - the kernel half of platform.h that must be macros
 * or types: fixed-width integers, errno values, mem*(), atomics and
 * barriers.  The functions platform.h declares are in kmod/platform.c.
 *
 * The engine's uint*_t, size_t and bool come from <linux/types.h> (the
 * kernel defines uint8_t..uint64_t and uintptr_t there); UINT32_MAX and
 * friends, which the kernel spells U32_MAX, come from kmod/compat/stdint.h
 * (kbuild puts kmod/compat on the include path).
 *
 * Ordering: the engine's acquire/release pairs map to the kernel's
 * smp_load_acquire()/smp_store_release(), relaxed accesses to
 * READ_ONCE()/WRITE_ONCE().  The kernel has no fetch-add on a plain
 * integer field (only on atomic_t), so tdb_fetch_add/sub use the
 * compiler's __atomic builtins, fully ordered like the kernel's
 * value-returning atomics (atomic_add_return): stronger than the
 * acq_rel the contract asks for, and a single "lock xadd" on x86.
 */
#ifndef TDB_CORE_PLATFORM_KERNEL_H
#define TDB_CORE_PLATFORM_KERNEL_H

#include <linux/types.h>
#include <linux/stddef.h>
#include <stdint.h>          /* kmod/compat/stdint.h: UINT32_MAX etc. */
#include <linux/errno.h>
#include <linux/string.h>
#include <linux/compiler.h>
#include <linux/prefetch.h>
#include <asm/barrier.h>

#define tdb_load_acquire(p)     smp_load_acquire(p)
#define tdb_store_release(p, v) smp_store_release((p), (v))
#define tdb_load_relaxed(p)     READ_ONCE(*(p))
#define tdb_store_relaxed(p, v) WRITE_ONCE(*(p), (v))
/* As tdb_fetch_add below: the kernel's atomic_or() wants an atomic_t. */
#define tdb_fetch_or(p, v)      __atomic_fetch_or((p), (v), __ATOMIC_SEQ_CST)
#define tdb_fetch_and(p, v)     __atomic_fetch_and((p), (v), __ATOMIC_SEQ_CST)
#define tdb_fetch_add(p, v)     __atomic_fetch_add((p), (v), __ATOMIC_SEQ_CST)
#define tdb_fetch_sub(p, v)     __atomic_fetch_sub((p), (v), __ATOMIC_SEQ_CST)

#define tdb_smp_mb()  smp_mb()
#define tdb_smp_wmb() smp_wmb()
#define tdb_smp_rmb() smp_rmb()

#define tdb_likely(x)   likely(x)
#define tdb_unlikely(x) unlikely(x)
#define tdb_prefetch(p) prefetch(p)

#endif
