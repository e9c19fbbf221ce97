/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * transport.h - how main.c starts and stops the parts of tdb.ko.
 *
 * Load order: platform (memory limit) -> owner -> genl -> /dev/tdb ->
 * the expiry sweep; unload in reverse.  The misc device's fops hold a
 * module reference per open file, so rmmod is refused (EBUSY) while a
 * /dev/tdb client is attached; generic netlink clients hold none, so
 * genl exit frees their per-socket state itself.
 */
#ifndef TDBK_TRANSPORT_H
#define TDBK_TRANSPORT_H

#include <linux/types.h>

struct cred;
struct tdbo_owner;
struct tdbo_client;
struct tdbo_limits;
struct tdbo_hooks;

int tdbk_genl_init(struct tdbo_owner *o);
void tdbk_genl_exit(void);
int tdbk_dev_init(struct tdbo_owner *o);
void tdbk_dev_exit(void);
/* sweep.c: expiry's sweep, a delayed work running the owner's rounds;
 * started last at load, stopped (cancelled and waited for) first at
 * unload, before anything a round uses goes. */
void tdbk_sweep_start(struct tdbo_owner *o);
void tdbk_sweep_stop(void);

/* home.c: what tdb.ko supplies to the shared owner (src/owner).  The
 * limits (module parameters), checked at load (-EINVAL, logged); the
 * feed memory hooks; a client of the opener's or sender's credentials. */
int tdbk_home_check(void);
const struct tdbo_limits *tdbk_home_limits(void);
void tdbk_home_max_data_set(u64 bytes);        /* from max_memory_mb */
/* The owner whose transactions and snapshots count in max_memory_mb
 * (NULL before it is made and once it is freed); what they hold now. */
void tdbk_home_owner_set(struct tdbo_owner *o);
u64 tdbk_home_held(void);
u64 tdbk_home_max_memory(void);                /* bytes, 0: automatic */
extern const struct tdbo_hooks tdbk_home_hooks;
struct tdbo_client *tdbk_client_new(struct tdbo_owner *o,
				    const struct cred *cred, bool may_watch,
				    void (*wake)(void *arg), void *arg,
				    int *err);

/* kmap.c: table maps on /dev/tdb.  init/exit around the misc device
 * (dev.c); every opened file is pointed at kmap's address_space; mmap
 * of a table slot range (granted: the file had a TABLE_MAP answered);
 * revoke: the owner's map_revoke hook (home.c), unmapping the range of
 * the table at slot. */
int tdbk_map_init(struct tdbo_owner *o);
void tdbk_map_exit(void);
struct file;
struct vm_area_struct;
void tdbk_map_file_open(struct file *file);
int tdbk_map_mmap(struct tdbo_client *c, bool granted,
		  struct vm_area_struct *vma, u64 off);
void tdbk_map_revoke(u64 slot);

/* selftest.c: exercise the engine through the kernel platform at load
 * time (module parameter selftest=1); 0 or a negative errno, logged. */
int tdbk_selftest(void);

/* platform.c: bytes charged now (extents, change feeds, client rings,
 * the log ring: back to 0 at unload), and the limit (max_memory_mb, 0:
 * 3/4 of the RAM); charge (false: what is charged, the owner's held
 * memory and bytes would pass the limit; nothing counted) and uncharge
 * other memory against it. */
unsigned long tdbk_mem_used(void);
unsigned long tdbk_mem_limit(void);
bool tdbk_mem_charge(size_t bytes);
void tdbk_mem_uncharge(size_t bytes);

#endif
