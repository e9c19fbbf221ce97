/* SPDX-License-Identifier: GPL-2.0-only */
/* compat/stddef.h - size_t, ptrdiff_t (<linux/types.h>), NULL and
 * offsetof (<linux/stddef.h>). */
#ifndef TDBK_COMPAT_STDDEF_H
#define TDBK_COMPAT_STDDEF_H

#include <linux/types.h>
#include <linux/stddef.h>

#endif
