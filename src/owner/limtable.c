// SPDX-License-Identifier: GPL-2.0-only
/*
 * limtable.c - the limits table (limtable.h says what it is and the rules)
 * as data both homes read: tdbd's config parser (defaults, ranges) and
 * tdb.ko's module parameters (kmod/home.c).  Freestanding: no libc, no
 * kernel function, so the same object builds into tdbd, tdb.ko and the
 * config test.
 *
 * Invariant: tdbo_limits_table[i] is the entry of enum tdbo_limit_id i
 * (designated initializers), and each entry's def and kdef pass
 * tdbo_limit_ok() (tests/config checks every entry).
 */
#include "limtable.h"

#ifndef NULL
#define NULL ((void *)0)
#endif

#define TDBO_LIM_ENTRY_(id, conf_, param_, field, unit_, shift_, def_,	\
			kdef_, min_, max_, flags_, root_, counts_, homes_)	\
	[TDBO_LIM_##id] = {						\
		.conf = conf_, .param = param_, .homes = homes_,	\
		.unit = unit_, .shift = shift_, .flags = flags_,	\
		.def = def_, .kdef = kdef_, .min = min_, .max = max_,	\
		.root = root_, .counts = counts_,			\
	},
#define BOTH_(id, conf, param, ...)					\
	TDBO_LIM_ENTRY_(id, conf, #param, __VA_ARGS__,			\
			TDBO_LH_TDBD | TDBO_LH_KO)
#define TDBD_(id, conf, param, ...)					\
	TDBO_LIM_ENTRY_(id, conf, NULL, __VA_ARGS__, TDBO_LH_TDBD)
#define KO_(id, conf, param, ...)					\
	TDBO_LIM_ENTRY_(id, conf, #param, __VA_ARGS__, TDBO_LH_KO)

const struct tdbo_limit tdbo_limits_table[TDBO_LIM_COUNT] = {
	TDBO_LIMITS_BOTH(BOTH_)
	TDBO_LIMITS_TDBD(TDBD_)
	TDBO_LIMITS_KO(KO_)
};

/* a (len bytes) equals the NUL-terminated b */
static int name_eq(const char *a, unsigned long len, const char *b)
{
	unsigned long i;

	for (i = 0; i < len; i++)
		if (!b[i] || a[i] != b[i])
			return 0;
	return !b[len];
}

const struct tdbo_limit *tdbo_limit_by_conf(const char *name,
					    unsigned long len)
{
	unsigned int i;

	for (i = 0; i < TDBO_LIM_COUNT; i++)
		if (tdbo_limits_table[i].conf &&
		    name_eq(name, len, tdbo_limits_table[i].conf))
			return &tdbo_limits_table[i];
	return NULL;
}

const struct tdbo_limit *tdbo_limit_by_param(const char *name)
{
	unsigned long len = 0;
	unsigned int i;

	while (name[len])
		len++;
	for (i = 0; i < TDBO_LIM_COUNT; i++)
		if (tdbo_limits_table[i].param &&
		    name_eq(name, len, tdbo_limits_table[i].param))
			return &tdbo_limits_table[i];
	return NULL;
}

int tdbo_limit_ok(const struct tdbo_limit *l, uint64_t v)
{
	if (!v && (l->flags & (TDBO_LF_ZERO_OFF | TDBO_LF_ZERO_AUTO)))
		return 1;
	if (v < l->min || v > l->max)
		return 0;
	return !(l->flags & TDBO_LF_POW2) || !(v & (v - 1));
}
