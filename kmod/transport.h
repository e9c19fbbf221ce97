/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * transport.h - how main.c starts and stops the parts of tdb.ko.
 *
 * Load order: platform (memory limit) -> owner -> genl -> /dev/tdb;
 * unload in reverse.  The misc device's fops hold a module reference
 * per open file, so rmmod is refused (EBUSY) while a /dev/tdb client is
 * attached; generic netlink clients hold none, so genl exit frees their
 * per-socket state itself.
 */
#ifndef TDBK_TRANSPORT_H
#define TDBK_TRANSPORT_H

struct cred;
struct tdbo_owner;
struct tdbo_client;
struct tdbo_limits;
struct tdbo_hooks;

int tdbk_genl_init(struct tdbo_owner *o);
void tdbk_genl_exit(void);
int tdbk_dev_init(struct tdbo_owner *o);
void tdbk_dev_exit(void);

/* home.c: what tdb.ko supplies to the shared owner (src/owner).  The
 * limits (module parameters), checked at load (-EINVAL, logged); the
 * feed memory hooks; a client of the opener's or sender's credentials. */
int tdbk_home_check(void);
const struct tdbo_limits *tdbk_home_limits(void);
extern const struct tdbo_hooks tdbk_home_hooks;
struct tdbo_client *tdbk_client_new(struct tdbo_owner *o,
				    const struct cred *cred, bool may_watch,
				    void (*wake)(void *arg), void *arg,
				    int *err);

/* selftest.c: exercise the engine through the kernel platform at load
 * time (module parameter selftest=1); 0 or a negative errno, logged. */
int tdbk_selftest(void);

/* platform.c: bytes of extents and change feeds backed now, and the
 * limit (max_memory_mb); charge (false: over the limit, nothing
 * counted) and uncharge other memory against it. */
unsigned long tdbk_mem_used(void);
unsigned long tdbk_mem_limit(void);
bool tdbk_mem_charge(size_t bytes);
void tdbk_mem_uncharge(size_t bytes);

#endif
