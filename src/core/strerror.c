// SPDX-License-Identifier: GPL-2.0-only
/*
 * strerror.c - names for the errno values the engine returns.
 */
#include "core.h"

const char *tdbe_strerror(int err)
{
	switch (err < 0 ? -err : err) {
	case 0:            return "success";
	case EINVAL:       return "invalid argument";
	case E2BIG:        return "key or value is over its size limit";
	case ENAMETOOLONG: return "table name is too long";
	case EEXIST:       return "already exists";
	case ENOENT:       return "not found";
	case ENOSPC:       return "table is full (at its size cap)";
	case ENOMEM:       return "out of memory";
	case ENOBUFS:      return "buffer too small for the value";
	case EUCLEAN:      return "region is damaged or not a tdb region";
	case EBUSY:        return "busy";
	case EPERM:        return "operation not permitted";
	default:           return "unknown error";
	}
}
