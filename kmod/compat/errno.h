/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * compat/errno.h - <errno.h> for the sources tdb.ko shares with user
 * space (src/proto/proto.c): the E* values only.
 *
 * There is deliberately no `errno` here.  The kernel has no per-thread
 * errno, and a file-static one would be shared by every CPU running the
 * codec at once.  proto.c never reads errno (it returns negative errno
 * values), and the libmnl shim drops the errno libmnl would set (see
 * compat/libmnl/libmnl.h), so if shared code ever starts reading errno
 * the kernel build fails to compile instead of racing.
 */
#ifndef TDBK_COMPAT_ERRNO_H
#define TDBK_COMPAT_ERRNO_H

#include <linux/errno.h>

#endif
