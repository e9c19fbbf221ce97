// SPDX-License-Identifier: GPL-2.0-only
/*
 * main.c - tdb.ko's entry points: starting/stopping the parts in order
 * (kmod/transport.h): [selftest] -> owner (src/owner, with home.c's
 * limits and hooks) -> generic netlink -> /dev/tdb -> the expiry sweep
 * (sweep.c); unload in reverse.
 * (The owner's module parameters are in home.c; max_memory_mb lives
 * with the memory it bounds, in platform.c.)
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

#include "owner.h"
#include "transport.h"
#include "sup.h"

#ifndef TDB_VERSION
#define TDB_VERSION "0.1.0"
#endif

static bool selftest;
module_param(selftest, bool, 0444);
MODULE_PARM_DESC(selftest,
		 "exercise the engine at load time; the load fails if it "
		 "does (default 0)");

static struct tdbo_owner *owner;

static int __init tdb_init(void)
{
	int err;

	err = tdbk_home_check();
	if (err)
		return err;
	if (selftest) {
		err = tdbk_selftest();
		if (err)
			return err;	/* selftest.c said what failed */
	}
	err = 0;
	owner = tdbo_owner_new(tdbk_home_limits(), &tdbk_home_hooks, &err);
	if (!owner) {
		pr_err("cannot create the owner (%d)\n", err);
		return err ? err : -ENOMEM;
	}
	tdbk_home_owner_set(owner);
	err = tdbk_sup_init(owner);
	if (err)
		goto free_owner;
	err = tdbk_genl_init(owner);
	if (err) {
		pr_err("cannot register the generic netlink family (%d)\n",
		       err);
		goto exit_sup;
	}
	err = tdbk_dev_init(owner);
	if (err) {
		pr_err("cannot register /dev/tdb (%d)\n", err);
		goto exit_genl;
	}
	tdbk_sweep_start(owner);
	pr_info("loaded (version %s, max_memory_mb=%lu, max_tables=%u)\n",
		TDB_VERSION, tdbk_mem_limit() >> 20,
		tdbk_home_limits()->max_tables);
	return 0;

exit_genl:
	tdbk_genl_exit();
exit_sup:
	tdbk_sup_exit();
free_owner:
	tdbk_home_owner_set(NULL);
	tdbo_owner_free(owner);
	owner = NULL;
	return err;
}

static void __exit tdb_exit(void)
{
	unsigned long left;

	tdbk_sweep_stop();
	tdbk_dev_exit();
	tdbk_genl_exit();
	tdbk_sup_exit();
	tdbk_home_owner_set(NULL);
	tdbo_owner_free(owner);
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
