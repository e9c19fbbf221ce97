// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_client_abi.c - a program built against TDBCLIENT_1 keeps working
 * on libtdbclient.so.1 after TDBCLIENT_1.1 (expiry) grew struct
 * tdbc_table_opts, tdbc_table_stat, tdbc_event and tdbc_stats.
 *
 * It calls the TDBCLIENT_1 versions of the calls that take those structs
 * (bound with .symver, as the dynamic linker binds an old program) with
 * the structs as TDBCLIENT_1 had them, each followed by a canary: the
 * library must fill the old members right, never write past them (the
 * canary stays), and never read past them (tdbc_table_create@TDBCLIENT_1
 * is given a struct followed by bytes that would read as a default TTL:
 * the table must get none).
 *
 * The same for TDBCLIENT_1.1's versions after TDBCLIENT_1.2 (ordered
 * tables) gave struct tdbc_table_opts and tdbc_table_stat a `flags`:
 * tdbc_table_opts_init@TDBCLIENT_1.1 leaves the old struct's padding
 * after evict (where flags now is) alone, tdbc_table_create@TDBCLIENT_1.1
 * never reads it (bytes there that would read as TDBC_TABLE_ORDERED
 * make no ordered table), tdbc_table_stat@TDBCLIENT_1.1 writes nothing
 * past the 1.1 struct.  Against a real tdbd ($TDBD; skipped, 77,
 * without it).  Linked with the shared library: the versions are the
 * dynamic linker's business.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include <tdb/client.h>

#include "daemon.h"

/* The structs of TDBCLIENT_1 (include/tdb/client.h before expiry). */
struct opts_1 {
	uint32_t max_extents, mode, uid, gid;
};
struct stat_1 {
	char name[TDB_NAME_MAX + 1];
	uint64_t records, bytes_used, bytes_allocated, bytes_pending;
	uint32_t extents, max_extents;
	uint64_t page_size;
	uint64_t index_nodes, index_buckets;
	uint32_t uid, gid, mode;
	uint32_t state;
};
struct event_1 {
	enum tdbc_event_kind kind;
	uint32_t seq;
	const void *key;
	size_t klen;
	const void *val;
	size_t vlen;
	uint64_t version;
};
struct stats_1 {
	uint32_t tables, clients, watches, txns;
	uint64_t requests, errors, uptime_ms;
	uint64_t accepted, cleanups, txns_aborted, watches_dropped;
	uint32_t rings, throttled, dumps;
	uint64_t rings_freed, stuck, violations;
	uint64_t wal_records, wal_lsn, wal_durable;
	uint64_t checkpoints, ckpt_failures, ckpt_lsn;
	uint32_t tables_aside;
	uint64_t wal_syncs;
	uint64_t readers_expired;
};

/* The structs of TDBCLIENT_1.1 (before ordered tables). */
struct opts_1_1 {
	uint32_t max_extents, mode, uid, gid;
	uint64_t default_ttl;
	uint64_t max_bytes, max_records;
	uint32_t evict;
};
struct stat_1_1 {
	char name[TDB_NAME_MAX + 1];
	uint64_t records, bytes_used, bytes_allocated, bytes_pending;
	uint32_t extents, max_extents;
	uint64_t page_size;
	uint64_t index_nodes, index_buckets;
	uint32_t uid, gid, mode;
	uint32_t state;
	uint64_t default_ttl, expiring, expired;
	uint64_t max_bytes, max_records;
	uint32_t evict;
	uint64_t evicted;
};

/* The TDBCLIENT_1.1 versions. */
__asm__(".symver old11_opts_init, tdbc_table_opts_init@TDBCLIENT_1.1");
__asm__(".symver old11_create, tdbc_table_create@TDBCLIENT_1.1");
__asm__(".symver old11_stat, tdbc_table_stat@TDBCLIENT_1.1");
void old11_opts_init(struct opts_1_1 *opts);
int old11_create(struct tdbc *c, const char *name,
		 const struct opts_1_1 *o);
int old11_stat(struct tdbc *c, const char *name, struct stat_1_1 *st);

/* The TDBCLIENT_1 versions, as an old program is bound to them. */
__asm__(".symver old_opts_init, tdbc_table_opts_init@TDBCLIENT_1");
__asm__(".symver old_create, tdbc_table_create@TDBCLIENT_1");
__asm__(".symver old_stat, tdbc_table_stat@TDBCLIENT_1");
__asm__(".symver old_watch_next, tdbc_watch_next@TDBCLIENT_1");
__asm__(".symver old_stats, tdbc_stats@TDBCLIENT_1");
void old_opts_init(struct opts_1 *opts);
int old_create(struct tdbc *c, const char *name, const struct opts_1 *o);
int old_stat(struct tdbc *c, const char *name, struct stat_1 *st);
int old_watch_next(struct tdbc_watch *w, struct event_1 *ev, int timeout_ms,
		   uint64_t *lost);
int old_stats(struct tdbc *c, struct stats_1 *st);

#define CANARY 0xa5
#define CANARY_LEN 64

static void canary_ok(const unsigned char *p)
{
	int i;

	for (i = 0; i < CANARY_LEN; i++)
		if (p[i] != CANARY)
			fail_msg("byte %d past the old struct was written", i);
}

static struct daemon g_daemon;

static int setup(void **state)
{
	(void)state;
	return daemon_start(&g_daemon, "abi") ? -1 : 0;
}

static int teardown(void **state)
{
	(void)state;
	daemon_stop(&g_daemon, SIGTERM);
	return 0;
}

static void test_old_structs(void **state)
{
	struct { struct opts_1 o; unsigned char canary[CANARY_LEN]; } oi;
	/* bytes after the old struct that would read as default_ttl 5 */
	struct { struct opts_1 o; uint64_t ttl_if_read; } oc;
	struct { struct stat_1 st; unsigned char canary[CANARY_LEN]; } os;
	struct { struct event_1 ev; unsigned char canary[CANARY_LEN]; } oe;
	struct { struct stats_1 s; unsigned char canary[CANARY_LEN]; } ox;
	struct tdbc_table_stat st;
	struct tdbc_table *t;
	struct tdbc_watch *w;
	struct tdbc *c = NULL;
	char msg[256];

	(void)state;
	assert_int_equal(tdbc_connect(&c, g_daemon.sock, 0, msg,
				      sizeof(msg)), 0);

	memset(&oi, CANARY, sizeof(oi));
	old_opts_init(&oi.o);
	assert_int_equal(oi.o.max_extents, 0);
	assert_int_equal(oi.o.mode, (uint32_t)-1);
	assert_int_equal(oi.o.uid, (uint32_t)-1);
	assert_int_equal(oi.o.gid, (uint32_t)-1);
	canary_ok(oi.canary);

	memset(&oc, 0, sizeof(oc));
	old_opts_init(&oc.o);
	oc.o.mode = 0640;
	oc.ttl_if_read = 5;
	assert_int_equal(old_create(c, "abi1", &oc.o), 0);
	assert_int_equal(tdbc_table_stat(c, "abi1", &st), 0);
	assert_int_equal(st.mode, 0640);
	assert_int_equal(st.default_ttl, 0);
	assert_int_equal(old_create(c, "abi2", NULL), 0);

	assert_int_equal(tdbc_table_open(c, "abi1", &t), 0);
	assert_int_equal(tdbc_watch(t, NULL, 0, &w), 0);
	assert_int_equal(tdbc_put_ttl(t, NULL, "k", 1, "v", 1, 0, 0, 60000),
			 0);

	memset(&os, CANARY, sizeof(os));
	assert_int_equal(old_stat(c, "abi1", &os.st), 0);
	assert_string_equal(os.st.name, "abi1");
	assert_int_equal(os.st.records, 1);
	assert_int_equal(os.st.mode, 0640);
	assert_int_equal(os.st.state, 0);
	canary_ok(os.canary);
	assert_int_equal(old_stat(c, "nosuch", &os.st), -ENOENT);

	memset(&oe, CANARY, sizeof(oe));
	assert_int_equal(old_watch_next(w, &oe.ev, 5000, NULL), 1);
	assert_int_equal(oe.ev.kind, TDBC_EV_PUT);
	assert_int_equal(oe.ev.klen, 1);
	assert_memory_equal(oe.ev.key, "k", 1);
	assert_int_equal(oe.ev.vlen, 1);
	assert_memory_equal(oe.ev.val, "v", 1);
	assert_true(oe.ev.version > 0);
	canary_ok(oe.canary);
	assert_int_equal(old_watch_next(w, &oe.ev, 0, NULL), 0);
	canary_ok(oe.canary);

	memset(&ox, CANARY, sizeof(ox));
	assert_int_equal(old_stats(c, &ox.s), 0);
	assert_int_equal(ox.s.tables, 2);
	assert_true(ox.s.requests > 0);
	assert_int_equal(ox.s.tables_aside, 0);
	canary_ok(ox.canary);

	tdbc_watch_close(w);
	tdbc_table_close(t);
	tdbc_close(c);
}

static void test_structs_1_1(void **state)
{
	struct { struct opts_1_1 o; unsigned char canary[CANARY_LEN]; } oi;
	struct { struct stat_1_1 st; unsigned char canary[CANARY_LEN]; } os;
	const size_t pad = offsetof(struct opts_1_1, evict) + sizeof(uint32_t);
	struct opts_1_1 oc;
	struct tdbc_table_stat st;
	struct tdbc *c = NULL;
	char msg[256];
	size_t i;

	(void)state;
	assert_int_equal(tdbc_connect(&c, g_daemon.sock, 0, msg,
				      sizeof(msg)), 0);

	/* init: the 1.1 members, nothing in the padding after evict */
	memset(&oi, CANARY, sizeof(oi));
	old11_opts_init(&oi.o);
	assert_int_equal(oi.o.mode, (uint32_t)-1);
	assert_int_equal(oi.o.default_ttl, 0);
	assert_int_equal(oi.o.max_records, 0);
	assert_int_equal(oi.o.evict, TDBC_EVICT_REFUSE);
	for (i = pad; i < sizeof(oi.o); i++)
		if (((unsigned char *)&oi.o)[i] != CANARY)
			fail_msg("byte %zu (padding after evict) was written",
				 i);
	canary_ok(oi.canary);

	/* create: the padding reads as TDBC_TABLE_ORDERED if read */
	memset(&oc, 0, sizeof(oc));
	old11_opts_init(&oc);
	oc.mode = 0640;
	oc.max_records = 100;
	for (i = pad; i < sizeof(oc); i += sizeof(uint32_t))
		memcpy((unsigned char *)&oc + i, &(uint32_t){
			TDBC_TABLE_ORDERED }, sizeof(uint32_t));
	assert_int_equal(old11_create(c, "abi11", &oc), 0);
	assert_int_equal(tdbc_table_stat(c, "abi11", &st), 0);
	assert_int_equal(st.mode, 0640);
	assert_int_equal(st.max_records, 100);
	assert_int_equal(st.flags, 0);

	memset(&os, CANARY, sizeof(os));
	assert_int_equal(old11_stat(c, "abi11", &os.st), 0);
	assert_string_equal(os.st.name, "abi11");
	assert_int_equal(os.st.mode, 0640);
	assert_int_equal(os.st.max_records, 100);
	canary_ok(os.canary);
	assert_int_equal(old11_stat(c, "nosuch", &os.st), -ENOENT);
	assert_int_equal(tdbc_table_drop(c, "abi11"), 0);
	tdbc_close(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_old_structs),
		cmocka_unit_test(test_structs_1_1),
	};

	if (!tdbd_path()) {
		printf("test_client_abi: $TDBD is not set to an executable "
		       "tdbd: skipped\n");
		return 77;
	}
	return cmocka_run_group_tests_name("client-abi", tests, setup,
					   teardown);
}
