/* SPDX-License-Identifier: GPL-2.0-only */
/* compat/string.h - <string.h> for shared sources: the kernel's mem*()
 * and str*() (memcpy, memset, strlen, strnlen, ...). */
#ifndef TDBK_COMPAT_STRING_H
#define TDBK_COMPAT_STRING_H

#include <linux/string.h>

#endif
