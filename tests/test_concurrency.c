// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_concurrency.c - readers, cursors and writers on one table at once.
 *
 * Two writer threads (each owning half the keys, so the per-table mutex
 * is contended) replace and delete records; a reader copies values out
 * with tdbe_get, another reads them in place with tdbe_lookup under
 * tdbe_read_lock, and a cursor thread scans the table over and over.
 *
 * Every value carries its key id, a version and an xxh64 checksum, and
 * its payload is a function of (key id, version): a reader accepts only
 * -ENOENT or exactly a value that was written for that key (version no
 * newer than the writer has issued), never garbage.  Zero-copy readers
 * re-check the bytes at the end of their read-side section, so memory
 * reused inside a section is caught.  Stable keys (never deleted, only
 * replaced) must come back from every cursor scan exactly once; other
 * keys at most once.  Most keys are first inserted while the readers
 * run, so the index grows under them.  Two thirds into the run the
 * table is dropped while every thread keeps using its handle.
 * Meanwhile another thread creates, fills, lists and drops side tables.
 *
 * TDB_CONC_SECONDS=<s> sets the run time (default 4).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "core.h"
#include "user.h"

#define NKEYS      32768u
#define NINITIAL   2048u           /* present before the threads start */
#define NSTABLE    256u            /* keys [0, NSTABLE) are never deleted */
#define VMAGIC     0x76616c75u     /* "valu" */
#define VMAX       6000u
#define NWRITERS   2

struct vhdr {
	uint32_t magic;
	uint32_t key_id;
	uint64_t version;
	uint32_t len;          /* whole value, header included */
	uint32_t pad;
	uint64_t sum;          /* xxh64 of everything but this field */
};

struct ckey {
	char tag[4];
	uint32_t id;
};

static struct tdbe_table *g_t;
static uint64_t g_maxver[NKEYS];   /* highest version issued, per key */
static int g_stop;
static int g_failed;
static char g_failmsg[512];

static void __attribute__((format(printf, 1, 2))) fail(const char *fmt, ...)
{
	va_list ap;

	if (__atomic_exchange_n(&g_failed, 1, __ATOMIC_ACQ_REL))
		return;
	va_start(ap, fmt);
	vsnprintf(g_failmsg, sizeof(g_failmsg), fmt, ap);
	va_end(ap);
	__atomic_store_n(&g_stop, 1, __ATOMIC_RELEASE);
}

static int stopped(void)
{
	return __atomic_load_n(&g_stop, __ATOMIC_ACQUIRE);
}

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

static uint32_t vlen_of(uint32_t id, uint64_t ver)
{
	uint64_t h = mix(id * 1000003ull + ver);

	/* Mostly small, sometimes a few KiB: replaces change size class. */
	if (h % 8 == 0)
		return sizeof(struct vhdr) + (uint32_t)(h >> 8) % (VMAX -
							   sizeof(struct vhdr));
	return sizeof(struct vhdr) + (uint32_t)(h >> 8) % 200;
}

static void payload(uint8_t *p, size_t n, uint32_t id, uint64_t ver)
{
	uint64_t x = mix(((uint64_t)id << 40) ^ ver) | 1;
	size_t i;

	for (i = 0; i < n; i++) {
		x ^= x << 13; x ^= x >> 7; x ^= x << 17;
		p[i] = (uint8_t)x;
	}
}

static uint64_t vsum(const uint8_t *v, size_t len)
{
	XXH64_state_t *st = XXH64_createState();
	uint64_t h;

	XXH64_reset(st, 0x5eed);
	XXH64_update(st, v, offsetof(struct vhdr, sum));
	XXH64_update(st, v + sizeof(struct vhdr), len - sizeof(struct vhdr));
	h = XXH64_digest(st);
	XXH64_freeState(st);
	return h;
}

static size_t make_value(uint8_t *v, uint32_t id, uint64_t ver)
{
	struct vhdr h = { .magic = VMAGIC, .key_id = id, .version = ver,
			  .len = vlen_of(id, ver) };

	memcpy(v, &h, sizeof(h));
	payload(v + sizeof(h), h.len - sizeof(h), id, ver);
	h.sum = vsum(v, h.len);
	memcpy(v, &h, sizeof(h));
	return h.len;
}

/* NULL if v (len bytes) is a value written for key id, else why not. */
static const char *check_value(const void *val, size_t len, uint32_t id,
			       uint64_t *verp)
{
	static __thread uint8_t exp[VMAX];
	struct vhdr h;

	if (len < sizeof(h))
		return "value shorter than its header";
	memcpy(&h, val, sizeof(h));
	if (h.magic != VMAGIC)
		return "bad magic";
	if (h.key_id != id)
		return "value of another key";
	if (h.len != len)
		return "length differs from the header's";
	if (h.sum != vsum(val, len))
		return "checksum mismatch";
	if (h.version == 0 ||
	    h.version > __atomic_load_n(&g_maxver[id], __ATOMIC_ACQUIRE))
		return "version never written";
	if (vlen_of(id, h.version) != len)
		return "length is not the one written for this version";
	payload(exp, len - sizeof(h), id, h.version);
	if (memcmp(exp, (const uint8_t *)val + sizeof(h), len - sizeof(h)))
		return "payload is not the one written";
	if (verp)
		*verp = h.version;
	return NULL;
}

static void key_of(struct ckey *k, uint32_t id)
{
	memcpy(k->tag, "conc", 4);
	k->id = id;
}

/* ------------------------------------------------------------------ */

struct wstats { uint64_t puts, dels, enoent; };
struct rstats { uint64_t found, enoent, enobufs, rounds; };

static void *writer(void *arg)
{
	long w = (long)arg;
	struct wstats *ws = calloc(1, sizeof(*ws));
	uint8_t *v = malloc(VMAX);
	uint64_t r = 0x1234567 + w;
	struct tdbe_extack ext;
	struct ckey k;

	while (!stopped()) {
		uint32_t id;
		int rc;

		r = mix(r + 1);
		id = (uint32_t)(r % (NKEYS / NWRITERS)) * NWRITERS + w;
		key_of(&k, id);
		if (id < NSTABLE || (r >> 32) % 100 < 75) {
			uint64_t ver = g_maxver[id] + 1;
			size_t n = make_value(v, id, ver);

			/* Issue the version before it can be seen. */
			__atomic_store_n(&g_maxver[id], ver, __ATOMIC_RELEASE);
			rc = tdbe_put(g_t, &k, sizeof(k), v, n, 0, &ext);
			if (rc) {
				fail("writer %ld: put key %u: %d %s", w, id, rc,
				     tdbe_strerror(rc));
				break;
			}
			ws->puts++;
		} else {
			rc = tdbe_del(g_t, &k, sizeof(k), &ext);
			if (rc && rc != -ENOENT) {
				fail("writer %ld: del key %u: %d", w, id, rc);
				break;
			}
			ws->dels++;
			ws->enoent += rc == -ENOENT;
		}
	}
	free(v);
	return ws;
}

static void *reader_get(void *arg)
{
	struct rstats *rs = calloc(1, sizeof(*rs));
	uint8_t *buf = malloc(VMAX);
	uint64_t r = 99;
	struct ckey k;

	(void)arg;
	while (!stopped()) {
		uint32_t id;
		size_t need = 0, cap = VMAX;
		const char *why;
		long n;

		r = mix(r + 1);
		id = (uint32_t)(r % NKEYS);
		key_of(&k, id);
		if ((r >> 40) % 16 == 0)
			cap = (r >> 20) % 64;   /* maybe too small */
		n = tdbe_get(g_t, &k, sizeof(k), buf, cap, &need);
		if (n == -ENOENT) {
			if (id < NSTABLE) {
				fail("get: stable key %u absent", id);
				break;
			}
			rs->enoent++;
			continue;
		}
		if (n == -ENOBUFS) {
			if (need <= cap || need < sizeof(struct vhdr) ||
			    need > VMAX) {
				fail("get: -ENOBUFS with need %zu (cap %zu)",
				     need, cap);
				break;
			}
			rs->enobufs++;
			continue;
		}
		if (n < 0) {
			fail("get key %u: %ld", id, n);
			break;
		}
		if ((why = check_value(buf, n, id, NULL))) {
			fail("get key %u (%ld bytes): %s", id, n, why);
			break;
		}
		rs->found++;
	}
	free(buf);
	return rs;
}

static void *reader_lookup(void *arg)
{
	struct rstats *rs = calloc(1, sizeof(*rs));
	uint64_t r = 77;
	struct ckey k;

	(void)arg;
	while (!stopped()) {
		const void *vp[8];
		size_t vl[8];
		uint32_t ids[8];
		const char *why = NULL;
		int i, j, n = 0;

		/* Every other round asks for the 8 keys in one
		 * tdbe_lookup_many call (interleaved walks), then checks
		 * the answers exactly like single lookups. */
		struct tdbe_lookup_req req[8];
		struct ckey keys[8];
		bool many = rs->rounds++ & 1;

		tdbe_read_lock();
		if (many) {
			for (i = 0; i < 8; i++) {
				r = mix(r + 1);
				key_of(&keys[i], (uint32_t)(r % NKEYS));
				req[i].key = &keys[i];
				req[i].klen = sizeof(keys[i]);
			}
			tdbe_lookup_many(g_t, req, 8);
		}
		for (i = 0; i < 8; i++) {
			int rc;

			if (many) {
				ids[n] = keys[i].id;
				rc = req[i].err;
				vp[n] = req[i].val;
				vl[n] = req[i].vlen;
			} else {
				r = mix(r + 1);
				ids[n] = (uint32_t)(r % NKEYS);
				key_of(&k, ids[n]);
				rc = tdbe_lookup(g_t, &k, sizeof(k), &vp[n],
						 &vl[n]);
			}
			if (rc == -ENOENT) {
				if (ids[n] < NSTABLE) {
					why = "stable key absent";
					break;
				}
				rs->enoent++;
				continue;
			}
			if (rc) {
				why = "lookup error";
				break;
			}
			if ((why = check_value(vp[n], vl[n], ids[n], NULL)))
				break;
			n++;
			rs->found++;
		}
		/* Still intact at the end of the section (not reused). */
		for (j = 0; !why && j < n; j++)
			if ((why = check_value(vp[j], vl[j], ids[j], NULL)))
				why = "value changed inside the read section";
		tdbe_read_unlock();
		if (why) {
			fail("lookup key %u: %s", n < 8 ? ids[n] : ids[0], why);
			break;
		}
	}
	return rs;
}

struct cstats { uint64_t scans, records; };

static void *cursor_thread(void *arg)
{
	struct cstats *cs = calloc(1, sizeof(*cs));
	unsigned char seen[NKEYS];

	(void)arg;
	while (!stopped()) {
		struct tdbe_cursor *c;
		const void *kp, *vp;
		size_t kl, vl;
		int err = 0, rc;
		uint32_t i;

		c = tdbe_cursor_open(g_t, &err);
		if (!c) {
			fail("cursor_open: %d", err);
			break;
		}
		memset(seen, 0, sizeof(seen));
		while ((rc = tdbe_cursor_next(c, &kp, &kl, &vp, &vl)) == 1) {
			struct ckey k;
			const char *why;

			if (kl != sizeof(k)) {
				fail("cursor: key of %zu bytes", kl);
				break;
			}
			memcpy(&k, kp, sizeof(k));
			if (memcmp(k.tag, "conc", 4) || k.id >= NKEYS) {
				fail("cursor: garbage key");
				break;
			}
			if ((why = check_value(vp, vl, k.id, NULL))) {
				fail("cursor: key %u: %s", k.id, why);
				break;
			}
			if (seen[k.id]++) {
				fail("cursor: key %u returned twice in one scan",
				     k.id);
				break;
			}
			cs->records++;
		}
		tdbe_cursor_close(c);
		if (stopped())
			break;
		if (rc != 0) {
			fail("cursor_next: %d", rc);
			break;
		}
		for (i = 0; i < NSTABLE; i++)
			if (seen[i] != 1) {
				fail("cursor: stable key %u returned %d times",
				     i, seen[i]);
				break;
			}
		cs->scans++;
	}
	return cs;
}

/* Other tables come and go (engine mutex, table list) meanwhile. */
struct tstats { uint64_t cycles, listed; };
static struct tdbe_engine *g_e;

static int list_cb(void *arg, const char *name,
		   const struct tdbe_table_stat *st)
{
	uint64_t *n = arg;

	if (!name || !st || !name[0])
		return -1;
	(*n)++;
	return 0;
}

static void *table_churn(void *arg)
{
	struct tstats *ts = calloc(1, sizeof(*ts));
	struct tdbe_table_opts o = { .max_extents = 2 };
	struct tdbe_extack ext = { 0 };
	struct tdbe_table *t;
	char name[32], val[64];
	int rc;

	(void)arg;
	while (!stopped()) {
		uint64_t i = ts->cycles++;

		snprintf(name, sizeof(name), "side-%u", (unsigned)(i % 4));
		rc = tdbe_table_create(g_e, name, &o, &ext);
		if (rc && rc != -EEXIST) {
			fail("side table create: %d", rc);
			break;
		}
		rc = tdbe_table_open(g_e, name, &t, &ext);
		if (rc) {
			fail("side table open: %d", rc);
			break;
		}
		snprintf(val, sizeof(val), "cycle %llu", (unsigned long long)i);
		rc = tdbe_put(t, "k", 1, val, strlen(val), 0, &ext);
		if (!rc) {
			char buf[64];
			size_t need;
			long n = tdbe_get(t, "k", 1, buf, sizeof(buf), &need);

			if (n != (long)strlen(val) || memcmp(buf, val, n))
				rc = -EBADMSG;
		}
		if (rc) {
			fail("side table put/get: %d", rc);
			break;
		}
		if (tdbe_table_list(g_e, list_cb, &ts->listed) < 0) {
			fail("table_list passed a bad entry");
			break;
		}
		/* Drop every other cycle while still holding the handle. */
		if (i % 2 && (rc = tdbe_table_drop(g_e, name, &ext))) {
			fail("side table drop: %d", rc);
			break;
		}
		tdbe_table_close(t);
	}
	return ts;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(void)
{
	const char *s = getenv("TDB_CONC_SECONDS");
	double secs = s && *s ? atof(s) : 4.0, t0;
	struct tdbe_table_opts o = { 0 };
	struct tdbe_extack ext = { 0 };
	struct tdbe_engine *e;
	pthread_t wt[NWRITERS], rg, rl, ct, tt;
	struct tstats *ts;
	struct wstats *ws[NWRITERS];
	struct rstats *rgs, *rls;
	struct cstats *cs;
	uint8_t *v = malloc(VMAX);
	int err = 0, rc, dropped = 0;
	uint32_t id;
	long i;

	tdbp_set_log(tdbp_log_stderr, (void *)(long)TDBP_LOG_ERR);
	e = g_e = tdbe_engine_new(&err);
	if (!e) {
		fprintf(stderr, "engine_new: %d\n", err);
		return 1;
	}
	if ((rc = tdbe_table_create(e, "conc", &o, &ext)) ||
	    (rc = tdbe_table_open(e, "conc", &g_t, &ext))) {
		fprintf(stderr, "create/open: %d (%s)\n", rc, ext.msg);
		return 1;
	}
	/* The first keys present at version 1 to start with; the rest are
	 * inserted while readers run (so buckets burst under them). */
	for (id = 0; id < NINITIAL; id++) {
		struct ckey k;
		size_t n = make_value(v, id, 1);

		key_of(&k, id);
		g_maxver[id] = 1;
		rc = tdbe_put(g_t, &k, sizeof(k), v, n, 0, &ext);
		if (rc) {
			fprintf(stderr, "initial put: %d\n", rc);
			return 1;
		}
	}

	t0 = now();
	for (i = 0; i < NWRITERS; i++)
		pthread_create(&wt[i], NULL, writer, (void *)i);
	pthread_create(&rg, NULL, reader_get, NULL);
	pthread_create(&rl, NULL, reader_lookup, NULL);
	pthread_create(&ct, NULL, cursor_thread, NULL);
	pthread_create(&tt, NULL, table_churn, NULL);

	while (!stopped() && now() - t0 < secs) {
		usleep(20000);
		if (!dropped && now() - t0 > secs * 2 / 3) {
			/* Handles keep working on a dropped table. */
			rc = tdbe_table_drop(e, "conc", &ext);
			if (rc)
				fail("drop while in use: %d", rc);
			dropped = 1;
		}
	}
	__atomic_store_n(&g_stop, 1, __ATOMIC_RELEASE);
	for (i = 0; i < NWRITERS; i++)
		pthread_join(wt[i], (void **)&ws[i]);
	pthread_join(rg, (void **)&rgs);
	pthread_join(rl, (void **)&rls);
	pthread_join(ct, (void **)&cs);
	pthread_join(tt, (void **)&ts);

	printf("%.1f s: writers %" PRIu64 "+%" PRIu64 " puts, %" PRIu64 "+%"
	       PRIu64 " dels; get %" PRIu64 " found %" PRIu64 " absent %"
	       PRIu64 " enobufs; lookup %" PRIu64 " found %" PRIu64
	       " absent; cursor %" PRIu64 " scans %" PRIu64 " records; "
	       "side tables %" PRIu64 " cycles\n",
	       now() - t0, ws[0]->puts, ws[1]->puts, ws[0]->dels, ws[1]->dels,
	       rgs->found, rgs->enoent, rgs->enobufs, rls->found, rls->enoent,
	       cs->scans, cs->records, ts->cycles);
	if (!g_failed) {
		/* Sanity: the run really exercised every path. */
		if (!ws[0]->puts || !ws[1]->puts || !ws[0]->dels ||
		    !rgs->found || !rgs->enoent || !rls->found ||
		    !rls->enoent || cs->scans < 2 || ts->cycles < 10)
			fail("a thread made no progress");
	}
	if (!g_failed) {
		/* Final state: every key is absent or at its last version. */
		for (id = 0; id < NKEYS && !g_failed; id++) {
			struct ckey k;
			uint64_t ver = 0;
			size_t need = 0;
			long n;
			const char *why;

			key_of(&k, id);
			n = tdbe_get(g_t, &k, sizeof(k), v, VMAX, &need);
			if (n == -ENOENT && id >= NSTABLE)
				continue;
			if (n < 0)
				fail("final get key %u: %ld", id, n);
			else if ((why = check_value(v, n, id, &ver)))
				fail("final get key %u: %s", id, why);
			else if (ver != g_maxver[id])
				fail("final get key %u: version %" PRIu64
				     ", last written %" PRIu64, id, ver,
				     g_maxver[id]);
		}
	}
	tdbe_table_close(g_t);
	tdbe_engine_free(e);
	for (i = 0; i < NWRITERS; i++)
		free(ws[i]);
	free(rgs);
	free(rls);
	free(cs);
	free(ts);
	free(v);
	if (g_failed) {
		fprintf(stderr, "test_concurrency: FAILED: %s\n", g_failmsg);
		return 1;
	}
	printf("test_concurrency: passed\n");
	return 0;
}
