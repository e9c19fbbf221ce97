// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_index_split.c - the index's pages split and its directory doubles
 * under readers, and a key is never lost or resurrected meanwhile.
 *
 * One writer inserts keys 0..N-1 in order into an empty table, so the
 * index grows from one bucket page to thousands (every page splits, the
 * directory doubles a dozen times) while two readers look keys up; the
 * writer also deletes every key k = 3 mod 4 some LAG keys behind.  After
 * each call the writer publishes how far it got (release).  A reader
 * reads both marks (acquire) before its read section, then asks for
 * random keys below them (tdbe_lookup and tdbe_lookup_many in turn):
 * a key inserted and not deleted must be found with its own value; a
 * key whose delete returned before the section began must be absent
 * (its grace period is over for this section, so no old page or chain
 * may still show it).  At the end every key is deleted and the index
 * must give all its pages, overflow buckets and its grown directory
 * back.
 *
 * TDB_SPLIT_KEYS=<n> sets N (default 300000).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "user.h"

#define LAG 5000u

struct skey {
	char tag[4];
	uint32_t id;
};

static struct tdbe_table *g_t;
static uint32_t g_n;
static uint32_t g_ins;      /* keys [0, g_ins) were put */
static uint32_t g_del;      /* deletes of keys below g_del returned */
static int g_done, g_failed;

static void __attribute__((format(printf, 1, 2))) fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "test_index_split: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	__atomic_store_n(&g_failed, 1, __ATOMIC_RELEASE);
}

static void key_of(struct skey *k, uint32_t id)
{
	memcpy(k->tag, "splt", 4);
	k->id = id;
}

static bool deleted_kind(uint32_t id)
{
	return id % 4 == 3;
}

static void *writer(void *arg)
{
	struct tdbe_extack ext = { 0 };
	struct skey k;
	uint64_t v;
	uint32_t id;
	int rc;

	(void)arg;
	for (id = 0; id < g_n && !__atomic_load_n(&g_failed, __ATOMIC_ACQUIRE);
	     id++) {
		key_of(&k, id);
		v = id;
		rc = tdbe_put(g_t, &k, sizeof(k), &v, sizeof(v), 0, &ext);
		if (rc) {
			fail("put of key %u: %d (%s)", id, rc, ext.msg);
			break;
		}
		__atomic_store_n(&g_ins, id + 1, __ATOMIC_RELEASE);
		if (id >= LAG && deleted_kind(id - LAG)) {
			key_of(&k, id - LAG);
			rc = tdbe_del(g_t, &k, sizeof(k), &ext);
			if (rc) {
				fail("delete of key %u: %d (%s)", id - LAG,
				     rc, ext.msg);
				break;
			}
			__atomic_store_n(&g_del, id - LAG + 1,
					 __ATOMIC_RELEASE);
		}
	}
	__atomic_store_n(&g_done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* Check one answer for key id: rc and the value found. */
static void check(uint32_t id, int rc, const void *val, size_t vlen,
		  uint32_t del)
{
	uint64_t v;

	if (deleted_kind(id) && id < del) {
		if (rc != -ENOENT)
			fail("key %u deleted before the read section, "
			     "lookup gave %d", id, rc);
		return;
	}
	if (deleted_kind(id))
		return;      /* may be being deleted: either answer */
	if (rc) {
		fail("key %u present, lookup gave %d", id, rc);
		return;
	}
	memcpy(&v, val, sizeof(v));
	if (vlen != sizeof(v) || v != id)
		fail("key %u: wrong value (%zu bytes, %" PRIu64 ")", id, vlen,
		     v);
}

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return x;
}

static void *reader(void *arg)
{
	uint64_t r = (uint64_t)(uintptr_t)arg, rounds = 0;

	while (!__atomic_load_n(&g_done, __ATOMIC_ACQUIRE) &&
	       !__atomic_load_n(&g_failed, __ATOMIC_ACQUIRE)) {
		uint32_t del = __atomic_load_n(&g_del, __ATOMIC_ACQUIRE);
		uint32_t ins = __atomic_load_n(&g_ins, __ATOMIC_ACQUIRE);
		struct tdbe_lookup_req req[16];
		struct skey keys[16];
		unsigned int i;

		if (!ins)
			continue;
		for (i = 0; i < 16; i++) {
			r = mix(r + 1);
			/* half of them among the newest keys, where pages
			 * are splitting now */
			key_of(&keys[i], i & 1 ? (uint32_t)(r % ins) :
				ins - 1 - (uint32_t)(r % (ins < 512 ? ins : 512)));
			req[i].key = &keys[i];
			req[i].klen = sizeof(keys[i]);
		}
		tdbe_read_lock();
		if (rounds++ & 1) {
			tdbe_lookup_many(g_t, req, 16);
			for (i = 0; i < 16; i++)
				check(keys[i].id, req[i].err, req[i].val,
				      req[i].vlen, del);
		} else {
			for (i = 0; i < 16; i++) {
				const void *val = NULL;
				size_t vlen = 0;
				int rc = tdbe_lookup(g_t, &keys[i],
						     sizeof(keys[i]), &val,
						     &vlen);

				check(keys[i].id, rc, val, vlen, del);
			}
		}
		tdbe_read_unlock();
	}
	return (void *)(uintptr_t)rounds;
}

/* Delete every key left; the index must be empty afterwards and hold
 * no more than it did empty (empty: its bytes_allocated then). */
static int drain(uint64_t empty)
{
	struct tdbe_extack ext = { 0 };
	struct tdbe_table_stat st;
	struct skey k;
	uint32_t id;

	for (id = 0; id < g_n; id++) {
		int rc;

		key_of(&k, id);
		rc = tdbe_del(g_t, &k, sizeof(k), &ext);
		if (rc && rc != -ENOENT) {
			fprintf(stderr, "test_index_split: drain delete of "
				"key %u: %d (%s)\n", id, rc, ext.msg);
			return 1;
		}
	}
	tdbe_table_stat(g_t, &st);
	if (st.records || st.index_nodes || st.index_buckets) {
		fprintf(stderr, "test_index_split: after deleting every key "
			"%" PRIu64 " records, %" PRIu64 " pages, %" PRIu64
			" overflow buckets remain\n", st.records,
			st.index_nodes, st.index_buckets);
		return 1;
	}
	if (st.bytes_allocated - st.bytes_pending > empty) {
		fprintf(stderr, "test_index_split: emptied, the table holds "
			"%" PRIu64 " bytes (%" PRIu64 " pending), empty it "
			"held %" PRIu64 "\n", st.bytes_allocated,
			st.bytes_pending, empty);
		return 1;
	}
	return 0;
}

int main(void)
{
	const char *s = getenv("TDB_SPLIT_KEYS");
	struct tdbe_table_opts o = { 0 };
	struct tdbe_extack ext = { 0 };
	struct tdbe_table_stat st;
	struct tdbe_engine *e;
	pthread_t w, rd[2];
	void *rounds[2];
	uint64_t empty;
	int err = 0, rc;

	g_n = s && *s ? (uint32_t)strtoul(s, NULL, 10) : 300000u;
	if (g_n < 2 * LAG)
		g_n = 2 * LAG;
	tdbp_set_log(tdbp_log_stderr, (void *)(long)TDBP_LOG_ERR);
	e = tdbe_engine_new(&err);
	if (!e) {
		fprintf(stderr, "test_index_split: engine_new: %d\n", err);
		return 1;
	}
	if ((rc = tdbe_table_create(e, "split", &o, &ext)) ||
	    (rc = tdbe_table_open(e, "split", &g_t, &ext))) {
		fprintf(stderr, "test_index_split: create/open: %d (%s)\n",
			rc, ext.msg);
		return 1;
	}
	tdbe_table_stat(g_t, &st);
	empty = st.bytes_allocated;
	pthread_create(&rd[0], NULL, reader, (void *)(uintptr_t)1);
	pthread_create(&rd[1], NULL, reader, (void *)(uintptr_t)2);
	pthread_create(&w, NULL, writer, NULL);
	pthread_join(w, NULL);
	pthread_join(rd[0], &rounds[0]);
	pthread_join(rd[1], &rounds[1]);
	if (g_failed)
		return 1;
	tdbe_table_stat(g_t, &st);
	printf("%u keys put, %u deleted behind; readers %" PRIuPTR " + %"
	       PRIuPTR " rounds of 16; index: %" PRIu64 " pages, %" PRIu64
	       " overflow buckets, %" PRIu64 " bytes allocated\n", g_n,
	       g_del / 4, (uintptr_t)rounds[0], (uintptr_t)rounds[1],
	       st.index_nodes, st.index_buckets, st.bytes_allocated);
	if (st.index_nodes < g_n / 4 / 64 / 7) {
		fprintf(stderr, "test_index_split: %" PRIu64 " pages for %u "
			"keys: the pages did not split\n", st.index_nodes,
			g_n);
		return 1;
	}
	rc = drain(empty);
	tdbe_table_close(g_t);
	tdbe_engine_free(e);
	return rc;
}
