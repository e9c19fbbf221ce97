/* SPDX-License-Identifier: GPL-2.0-only */
/* compat/stdbool.h - bool, true and false come from <linux/types.h> and
 * <linux/stddef.h> in the kernel. */
#ifndef TDBK_COMPAT_STDBOOL_H
#define TDBK_COMPAT_STDBOOL_H

#include <linux/types.h>
#include <linux/stddef.h>

#endif
