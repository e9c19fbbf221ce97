// SPDX-License-Identifier: GPL-2.0-only
/*
 * main.c - tdb.ko's entry points: the module parameters the owner
 * honours, and starting/stopping the parts in order (kmod/transport.h):
 * [selftest] -> owner -> generic netlink -> /dev/tdb; unload in reverse.
 * (max_memory_mb lives with the memory it bounds, in platform.c.)
 *
 * Invariant: once tdb_init() returns 0 every part is up; when it fails,
 * every part it started is stopped again and nothing is left allocated.
 * At unload every extent must have been freed: a non-zero
 * tdbk_mem_used() then is a leak and is reported.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/log2.h>

#include "owner.h"
#include "transport.h"

#ifndef TDB_VERSION
#define TDB_VERSION "0.1.0"
#endif

static unsigned int default_mode = 0600;
module_param(default_mode, uint, 0444);
MODULE_PARM_DESC(default_mode,
		 "mode bits of a table created without MODE (default 0600)");

/* Writable at run time (read with READ_ONCE at each TABLE_CREATE), but
 * never 0: no table could ever be created. */
static int max_tables_set(const char *val, const struct kernel_param *kp)
{
	return param_set_uint_minmax(val, kp, 1, UINT_MAX);
}

static const struct kernel_param_ops max_tables_ops = {
	.set = max_tables_set,
	.get = param_get_uint,
};

static unsigned int max_tables = 4096;
module_param_cb(max_tables, &max_tables_ops, &max_tables, 0644);
MODULE_PARM_DESC(max_tables,
		 "tables at once; the last eighth is kept for root "
		 "(default 4096)");

unsigned int tdbk_max_tables(void)
{
	return READ_ONCE(max_tables);
}

static unsigned int feed_size = 1U << 20;
module_param(feed_size, uint, 0444);
MODULE_PARM_DESC(feed_size,
		 "data bytes of a change feed, a power of two from 4096 "
		 "to 1 GiB (default 1 MiB)");

static bool selftest;
module_param(selftest, bool, 0444);
MODULE_PARM_DESC(selftest,
		 "exercise the engine at load time; the load fails if it "
		 "does (default 0)");

#define FEED_SIZE_MIN 4096U
#define FEED_SIZE_MAX (1U << 30)

static struct tdbk_owner *owner;

/* A bad parameter fails the load with -EINVAL and says which. */
static int check_params(void)
{
	if (default_mode & ~0777U) {
		pr_err("default_mode=%#o has bits outside 0777\n",
		       default_mode);
		return -EINVAL;
	}
	if (!max_tables) {
		pr_err("max_tables=0: no table could ever be created\n");
		return -EINVAL;
	}
	if (!is_power_of_2(feed_size) || feed_size < FEED_SIZE_MIN ||
	    feed_size > FEED_SIZE_MAX) {
		pr_err("feed_size=%u is not a power of two from %u to %u\n",
		       feed_size, FEED_SIZE_MIN, FEED_SIZE_MAX);
		return -EINVAL;
	}
	return 0;
}

static int __init tdb_init(void)
{
	struct tdbk_limits lim = {
		.default_mode = default_mode,
		.feed_size = feed_size,
	};
	int err;

	err = check_params();
	if (err)
		return err;
	if (selftest) {
		err = tdbk_selftest();
		if (err)
			return err;	/* selftest.c said what failed */
	}
	err = 0;
	owner = tdbk_owner_new(&lim, &err);
	if (!owner) {
		pr_err("cannot create the owner (%d)\n", err);
		return err ? err : -ENOMEM;
	}
	err = tdbk_genl_init(owner);
	if (err) {
		pr_err("cannot register the generic netlink family (%d)\n",
		       err);
		goto free_owner;
	}
	err = tdbk_dev_init(owner);
	if (err) {
		pr_err("cannot register /dev/tdb (%d)\n", err);
		goto exit_genl;
	}
	pr_info("loaded (version %s, max_memory_mb=%lu, max_tables=%u)\n",
		TDB_VERSION, tdbk_mem_limit() >> 20, max_tables);
	return 0;

exit_genl:
	tdbk_genl_exit();
free_owner:
	tdbk_owner_free(owner);
	owner = NULL;
	return err;
}

static void __exit tdb_exit(void)
{
	unsigned long left;

	tdbk_dev_exit();
	tdbk_genl_exit();
	tdbk_owner_free(owner);
	owner = NULL;
	left = tdbk_mem_used();
	if (left)
		pr_err("unloaded with %lu bytes of extents still counted: "
		       "a region was leaked\n", left);
	else
		pr_info("unloaded\n");
}

module_init(tdb_init);
module_exit(tdb_exit);

MODULE_LICENSE("GPL");
MODULE_AUTHOR("tdb developers");
MODULE_DESCRIPTION("tdb: kernel-resident tables served over generic "
		   "netlink and /dev/tdb shared rings");
MODULE_VERSION(TDB_VERSION);
