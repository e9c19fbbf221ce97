/* SPDX-License-Identifier: GPL-2.0-only */
/* compat/stdint.h - <stdint.h> for shared sources: uint8_t..uint64_t and
 * uintptr_t come from <linux/types.h>; the C limits are spelled from the
 * kernel's U32_MAX etc.  src/core/platform_kernel.h includes this too. */
#ifndef TDBK_COMPAT_STDINT_H
#define TDBK_COMPAT_STDINT_H

#include <linux/types.h>
#include <linux/limits.h>

#ifndef UINT8_MAX
#define UINT8_MAX  U8_MAX
#endif
#ifndef UINT16_MAX
#define UINT16_MAX U16_MAX
#endif
#ifndef UINT32_MAX
#define UINT32_MAX U32_MAX
#endif
#ifndef UINT64_MAX
#define UINT64_MAX U64_MAX
#endif
#ifndef INT32_MAX
#define INT32_MAX  S32_MAX
#endif
#ifndef INT64_MAX
#define INT64_MAX  S64_MAX
#endif

#endif
