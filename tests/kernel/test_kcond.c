// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_kcond.c - issue 24 in both homes: tdb.ko is held to the same
 * exact answers as tdbd (the integration tests' cores, shared headers):
 *
 *  counters  NPROC processes (even ones on rings, odd ones on generic
 *            netlink / tdbd's socket) x M increments of one key through
 *            tdbc_incr, tdbc_txn_run (get + put), a CAS loop
 *            (tdbc_get_ver + tdbc_put_if TDBC_IF_VERSION) and a plain
 *            transaction (0 or -ESTALE, never a silent loss): the final
 *            value is exactly the increments that took, each value taken
 *            once (cond_counters.h); txn_run, CAS and the plain one saw
 *            conflicts;
 *  model     the model-based test of conditions, INCR, versions and
 *            transactions (cond_model.h): one driver on three connections
 *            (rings, rings without maps, generic netlink / the socket),
 *            OPS steps, every answer checked exactly, then every key and
 *            a scan with versions.
 *
 * Env: TDB_KCOND_SEED (default 1), TDB_KCOND_OPS (default 1200),
 * TDB_KCOND_M (increments per process, default 300); scaled by
 * TDB_ITEST_SCALE.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tdb/client.h>

#include "kt.h"
#include "cond_counters.h"
#include "cond_model.h"

#define NPROC 4

static struct tdbc *connect_k(unsigned int flags)
{
	return kt_connect(flags);
}

int main(void)
{
	const char *es = getenv("TDB_KCOND_SEED"), *eo = getenv("TDB_KCOND_OPS"),
		   *em = getenv("TDB_KCOND_M");
	uint64_t seed = es ? strtoull(es, NULL, 0) : 1;
	long ops = eo ? atol(eo) : h_scaled(1200, 300);
	long m = em ? atol(em) : h_scaled(300, 150);
	struct tdbc *root;
	uint64_t conflicts = 0;
	int mode, tb, ran = 0;

	kt_init("kcond", 600);
	root = kt_connect(0);
	kt_create(root, "kc_cnt", 0, 0);
	for (tb = 0; tb < CM_TABLES; tb++)
		kt_create(root, cm_tname[tb], 0, 0);

	for (mode = CC_INCR; mode <= CC_PLAIN; mode++) {
		struct cc_run r = {
			.connect = connect_k, .table = "kc_cnt",
			.mode = (enum cc_mode)mode, .nproc = NPROC,
			.per_proc = m, .nkeys = 1,
		};
		char pre[16];

		if (!h_want(cc_mode_name[mode]))
			continue;
		snprintf(pre, sizeof(pre), "c%d-", mode);
		r.prefix = pre;
		cc_run(&r, root);
		cc_print("kcond", &r);
		/* tdbd: each way saw conflicts; tdb.ko under TCG (and
		 * the sanitizers) interleaves less (a few per way): all
		 * of them did */
		if (mode != CC_INCR && !kt_kernel && !h_sanitized())
			CHECK(r.sum.retries > 0, "%s: %d processes on one key "
			      "saw no conflict: the test proves nothing",
			      cc_mode_name[mode], NPROC);
		if (mode != CC_INCR)
			conflicts += r.sum.retries;
		ran += mode != CC_INCR;
	}
	CHECK(!ran || conflicts > 0, "%d processes on one key saw no "
	      "conflict in txn_run, CAS or plain transactions: the test "
	      "proves nothing", NPROC);
	if (h_want("model")) {
		printf("kcond: model seed %" PRIu64 ", %ld steps\n", seed, ops);
		cm_run(connect_k, seed, "k0", ops);
	}

	CHECK(tdbc_table_drop(root, "kc_cnt") == 0, "drop");
	for (tb = 0; tb < CM_TABLES; tb++)
		CHECK(tdbc_table_drop(root, cm_tname[tb]) == 0, "drop");
	tdbc_close(root);
	kt_done();
	return 0;
}
