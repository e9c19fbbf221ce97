/* SPDX-License-Identifier: MIT */
/*
 * platform_user.h - the user-space half of platform.h that must be
 * macros or types: fixed-width integers, errno values, atomics.
 * Only freestanding headers and <errno.h> (macros only) are included.
 */
#ifndef TDB_CORE_PLATFORM_USER_H
#define TDB_CORE_PLATFORM_USER_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>

void *memcpy(void *dst, const void *src, size_t n);
void *memset(void *s, int c, size_t n);
int memcmp(const void *a, const void *b, size_t n);

#define tdb_load_acquire(p)     __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define tdb_store_release(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define tdb_load_relaxed(p)     __atomic_load_n((p), __ATOMIC_RELAXED)
#define tdb_store_relaxed(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)
/* Fully ordered (the rings' sleep/wake handshake needs a full barrier). */
#define tdb_fetch_or(p, v)      __atomic_fetch_or((p), (v), __ATOMIC_SEQ_CST)
#define tdb_fetch_and(p, v)     __atomic_fetch_and((p), (v), __ATOMIC_SEQ_CST)
#define tdb_fetch_add(p, v)     __atomic_fetch_add((p), (v), __ATOMIC_ACQ_REL)
#define tdb_fetch_sub(p, v)     __atomic_fetch_sub((p), (v), __ATOMIC_ACQ_REL)

/* Fences: full, stores before stores, loads before loads. */
#define tdb_smp_mb()  __atomic_thread_fence(__ATOMIC_SEQ_CST)
#define tdb_smp_wmb() __atomic_thread_fence(__ATOMIC_RELEASE)
#define tdb_smp_rmb() __atomic_thread_fence(__ATOMIC_ACQUIRE)

#define tdb_likely(x)   __builtin_expect(!!(x), 1)
#define tdb_unlikely(x) __builtin_expect(!!(x), 0)
#define tdb_prefetch(p) __builtin_prefetch(p)

#endif
