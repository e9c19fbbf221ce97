// SPDX-License-Identifier: GPL-2.0-only
/*
 * peer_check.c - tdb-bench-ycsb-peers: a check of the RocksDB and Redis
 * peers through their struct ycsb_peer alone (test bench-ycsb-peers), so
 * a peer that returns wrong data fails here, not as a fast figure.
 *
 *   tdb-bench-ycsb-peers [rocksdb|redis|redis-pipelined ...]
 *
 * For each peer: start(); a load of RECORDS records through two handles
 * (c->loading, alternating, so RocksDB's shared DB and Redis's two
 * connections both serve); then on two fresh handles: every record read
 * back and compared byte for byte, a missing key is -ENOENT, one field
 * updated (the other fields must stay), whole values written, rmw, new
 * inserts outside the load, and scans from keys spread over the key
 * order and from keys between two records, whose counts must be the
 * number of keys >= the start key (capped by count); every record read
 * again by threads with a handle each (RocksDB's one DB shared by
 * threads, as the driver runs it); stop().  Keys are
 * hashed so that insert order is not key order.
 * Exit: 0 every peer passed, 1 a check failed (each failure a line
 * naming the peer, the operation and the key), 77 every peer skipped
 * (not built in, redis-server missing).
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ycsb.h"

#define RECORDS   1000u
#define EXTRA     10u           /* inserted in the run phase */
#define ALL       (RECORDS + EXTRA)

struct check {
	const struct ycsb_peer *p;
	struct ycsb_conf c;
	char keys[ALL][YCSB_KEY_MAX];
	size_t klen[ALL];
	unsigned int order[ALL];        /* record numbers in key order */
	unsigned char gen[ALL][16];     /* each field's generation */
	char msg[YCSB_MSG];
	int fails;
};

static int fail(struct check *k, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int fail(struct check *k, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "FAIL %s: ", k->p->name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	k->fails++;
	return -1;
}

/* Field f of record i at generation g. */
static void field_make(const struct check *k, unsigned int i, unsigned int f,
		       unsigned int g, unsigned char *out)
{
	for (unsigned int j = 0; j < k->c.fieldlength; j++)
		out[j] = (unsigned char)(i * 31 + f * 7 + g * 13 + j);
}

static void value_make(const struct check *k, unsigned int i,
		       unsigned char *out)
{
	for (unsigned int f = 0; f < k->c.fieldcount; f++)
		field_make(k, i, f, k->gen[i][f], out + f * k->c.fieldlength);
}

static int cmp_keys(const void *a, const void *b, void *arg)
{
	const struct check *k = arg;
	unsigned int x = *(const unsigned int *)a, y = *(const unsigned int *)b;
	size_t n = k->klen[x] < k->klen[y] ? k->klen[x] : k->klen[y];
	int d = memcmp(k->keys[x], k->keys[y], n);

	return d ? d : (k->klen[x] > k->klen[y]) - (k->klen[x] < k->klen[y]);
}

static void keys_make(struct check *k)
{
	for (unsigned int i = 0; i < ALL; i++) {
		uint64_t h = (i + 1) * 0x9e3779b97f4a7c15ull;

		k->klen[i] = (size_t)snprintf(k->keys[i], YCSB_KEY_MAX,
					      "user%llu", (unsigned long long)
					      h);
		k->order[i] = i;
	}
	qsort_r(k->order, ALL, sizeof(k->order[0]), cmp_keys, k);
}

/* Record i read through h must be what gen[] says. */
static int check_read(struct check *k, void *h, unsigned int i)
{
	size_t vlen = ycsb_vlen(&k->c);
	unsigned char want[4096], got[4096];
	int err = k->p->read(h, k->keys[i], k->klen[i], got, vlen, k->msg);

	if (err)
		return fail(k, "read %s: %s", k->keys[i], k->msg);
	value_make(k, i, want);
	for (size_t b = 0; b < vlen; b++)
		if (got[b] != want[b])
			return fail(k, "read %s: byte %zu (field %zu) is %u, "
				    "not %u", k->keys[i], b,
				    b / k->c.fieldlength, got[b], want[b]);
	return 0;
}

static int insert(struct check *k, void *h, unsigned int i)
{
	unsigned char v[4096];

	value_make(k, i, v);
	if (k->p->insert(h, k->keys[i], k->klen[i], v, ycsb_vlen(&k->c),
			 k->msg))
		return fail(k, "insert %s: %s", k->keys[i], k->msg);
	return 0;
}

static int load(struct check *k)
{
	void *h[2] = { NULL, NULL };
	int err = 0;

	k->c.loading = true;
	for (unsigned int p = 0; p < 2 && !err; p++)
		if (k->p->open(&k->c, p, &h[p], k->msg))
			err = fail(k, "open %u for the load: %s", p, k->msg);
	for (unsigned int i = 0; i < RECORDS && !err; i++)
		err = insert(k, h[i & 1], i);
	for (unsigned int p = 0; p < 2 && !err; p++)
		if (k->p->flush(h[p], k->msg))
			err = fail(k, "flush of the load: %s", k->msg);
	for (unsigned int p = 0; p < 2; p++)
		if (h[p])
			k->p->close(h[p]);
	k->c.loading = false;
	return err;
}

/* One field of records 0..99 and 50 fields of record 300 (h), whole
 * values of 100..109 and rmw of 200..209 (h2), inserts of
 * RECORDS..ALL-1; then every record read. */
static int writes(struct check *k, void *h, void *h2)
{
	unsigned int fl = k->c.fieldlength;
	unsigned char v[4096];

	for (unsigned int i = 0; i < 100; i++) {
		unsigned int f = i % k->c.fieldcount;

		field_make(k, i, f, ++k->gen[i][f], v);
		if (k->p->update(h, k->keys[i], k->klen[i], (int)f, v, fl,
				 k->msg))
			return fail(k, "update %s: %s", k->keys[i], k->msg);
	}
	/* One key updated 50 times over: RocksDB folds its operands into
	 * a value on the way (max_successive_merges). */
	for (unsigned int n = 0; n < 50; n++) {
		unsigned int i = 300, f = (n * 3) % k->c.fieldcount;

		field_make(k, i, f, ++k->gen[i][f], v);
		if (k->p->update(h, k->keys[i], k->klen[i], (int)f, v, fl,
				 k->msg))
			return fail(k, "update %s: %s", k->keys[i], k->msg);
	}
	for (unsigned int i = 100; i < 110; i++) {
		memset(k->gen[i], 2, sizeof(k->gen[i]));
		value_make(k, i, v);
		if (k->p->update(h2, k->keys[i], k->klen[i], -1, v,
				 ycsb_vlen(&k->c), k->msg))
			return fail(k, "update of a whole value %s: %s",
				    k->keys[i], k->msg);
	}
	for (unsigned int i = 200; i < 210; i++) {
		field_make(k, i, 3, ++k->gen[i][3], v);
		if (k->p->rmw(h2, k->keys[i], k->klen[i], 3, v, fl, k->msg))
			return fail(k, "rmw %s: %s", k->keys[i], k->msg);
	}
	for (unsigned int i = RECORDS; i < ALL; i++)
		if (insert(k, h, i))
			return -1;
	if (k->p->flush(h, k->msg) || k->p->flush(h2, k->msg))
		return fail(k, "flush: %s", k->msg);
	for (unsigned int i = 0; i < ALL; i++)
		if (check_read(k, i & 1 ? h2 : h, i))
			return -1;
	return 0;
}

/* A scan from `key` must give min(count, keys >= key). */
static int scan_one(struct check *k, void *h, const char *key, size_t klen,
		    unsigned int count, unsigned int want)
{
	unsigned int got = ~0u;

	if (k->p->scan(h, key, klen, count, &got, k->msg))
		return fail(k, "scan from %.*s: %s", (int)klen, key, k->msg);
	if (want > count)
		want = count;
	if (got != want)
		return fail(k, "scan from %.*s count %u gave %u records, not "
			    "%u", (int)klen, key, count, got, want);
	return 0;
}

static int scans(struct check *k, void *h)
{
	static const unsigned int at[] = { 0, 1, 2, 333, 500, ALL - 10,
					   ALL - 2, ALL - 1 };
	char key[YCSB_KEY_MAX + 1];

	for (size_t a = 0; a < sizeof(at) / sizeof(at[0]); a++) {
		unsigned int i = k->order[at[a]];

		if (scan_one(k, h, k->keys[i], k->klen[i], ALL, ALL - at[a]) ||
		    scan_one(k, h, k->keys[i], k->klen[i], 10, ALL - at[a]))
			return -1;
		/* Just after key i: record i is not in the scan. */
		memcpy(key, k->keys[i], k->klen[i]);
		key[k->klen[i]] = 0;
		if (scan_one(k, h, key, k->klen[i] + 1, ALL, ALL - at[a] - 1))
			return -1;
	}
	/* Before every key, after every key. */
	return scan_one(k, h, "a", 1, ALL, ALL) ||
		scan_one(k, h, "user:", 5, ALL, 0) ? -1 : 0;
}

static int run(struct check *k)
{
	void *h = NULL, *h2 = NULL;
	unsigned char v[4096];
	int err;

	if (k->p->open(&k->c, 0, &h, k->msg))
		return fail(k, "open 0: %s", k->msg);
	if (k->p->open(&k->c, 1, &h2, k->msg)) {
		k->p->close(h);
		return fail(k, "open 1: %s", k->msg);
	}
	err = k->p->read(h, "nokey", 5, v, ycsb_vlen(&k->c), k->msg);
	if (err != -ENOENT)
		err = fail(k, "read of a missing key gave %d (%s), not "
			   "-ENOENT", err, err ? k->msg : "found");
	else
		err = 0;
	for (unsigned int i = 0; i < RECORDS && !err; i++)
		err = check_read(k, i & 1 ? h : h2, i);
	if (!err)
		err = writes(k, h, h2);
	if (!err)
		err = scans(k, h2);
	k->p->close(h);
	k->p->close(h2);
	return err;
}

/* THREADS threads at once, each opening its own handle (proc t), reading
 * every record and closing: RocksDB's shared DB opened and closed under
 * them (as the driver runs a threads_only peer), Redis's connections. */
#define THREADS 3

struct reader {
	struct check *k;
	unsigned int proc;
	int fails;
	char msg[YCSB_MSG];
};

static void *reader(void *arg)
{
	struct reader *r = arg;
	struct check *k = r->k;
	size_t vlen = ycsb_vlen(&k->c);
	unsigned char want[4096], got[4096];
	void *h;

	if (k->p->open(&k->c, r->proc, &h, r->msg)) {
		r->fails++;
		return NULL;
	}
	for (unsigned int i = 0; i < ALL && !r->fails; i++) {
		value_make(k, i, want);
		if (k->p->read(h, k->keys[i], k->klen[i], got, vlen, r->msg))
			r->fails++;
		else if (memcmp(got, want, vlen)) {
			snprintf(r->msg, sizeof(r->msg), "read %s: wrong "
				 "value", k->keys[i]);
			r->fails++;
		}
	}
	k->p->close(h);
	return NULL;
}

static int readers(struct check *k)
{
	struct reader r[THREADS];
	pthread_t t[THREADS];
	unsigned int n = 0;
	int err = 0;

	for (; n < THREADS; n++) {
		r[n] = (struct reader){ .k = k, .proc = n };
		if (pthread_create(&t[n], NULL, reader, &r[n])) {
			err = fail(k, "pthread_create: %s", strerror(errno));
			break;
		}
	}
	while (n--) {
		pthread_join(t[n], NULL);
		if (r[n].fails)
			err = fail(k, "thread %u: %s", n, r[n].msg);
	}
	return err;
}

/* 0 passed, 1 skipped, -1 failed. */
static int check_peer(struct check *k, const char *dir)
{
	char desc[1024];
	int err;

	k->c = (struct ycsb_conf){ .recordcount = RECORDS,
		.operationcount = RECORDS, .fieldcount = 10,
		.fieldlength = 100, .threads = 2, .batch = 8, .dir = dir,
		.workload = "peer_check" };
	memset(k->gen, 0, sizeof(k->gen));
	/* The driver describes the systems before it starts them. */
	desc[0] = 0;
	if (k->p->describe)
		k->p->describe(&k->c, desc, sizeof(desc));
	err = k->p->start(&k->c, k->msg);
	if (err == 1) {
		printf("skip %s: %s\n", k->p->name, k->msg);
		return 1;
	}
	if (err)
		return fail(k, "start: %s", k->msg);
	printf("%s: %s\n", k->p->name, desc);
	if (strchr(desc, '?')) {
		k->p->stop();
		return fail(k, "describe() before start() knows no version: "
			    "%s", desc);
	}
	err = load(k);
	if (!err)
		err = run(k);
	if (!err)
		err = readers(k);
	k->p->stop();
	if (!err)
		printf("ok %s\n", k->p->name);
	return err;
}

static const struct { const char *name; const struct ycsb_peer *p; } peers[] = {
	{ "rocksdb", &ycsb_rocksdb },
	{ "redis", &ycsb_redis },
	{ "redis-pipelined", &ycsb_redis_pipelined },
};

static const struct ycsb_peer *peer_named(const char *name)
{
	for (size_t i = 0; i < sizeof(peers) / sizeof(peers[0]); i++)
		if (!strcmp(peers[i].name, name))
			return peers[i].p;
	return NULL;
}

int main(int argc, char **argv)
{
	const char *tmp = getenv("TMPDIR");
	char dir[4096];
	struct check *k = calloc(1, sizeof(*k));
	int ran = 0, failed = 0, n = argc > 1 ? argc - 1 : 3;

	snprintf(dir, sizeof(dir), "%s/ycsb-peers-XXXXXX", tmp ? tmp : "/tmp");
	if (!k || !mkdtemp(dir)) {
		fprintf(stderr, "tdb-bench-ycsb-peers: %s: %s\n",
			k ? dir : "calloc", strerror(errno));
		return 1;
	}
	keys_make(k);
	for (int a = 0; a < n; a++) {
		k->p = argc > 1 ? peer_named(argv[a + 1]) : peers[a].p;
		if (!k->p) {
			fprintf(stderr, "tdb-bench-ycsb-peers: no peer '%s' "
				"(rocksdb, redis, redis-pipelined)\n",
				argv[a + 1]);
			failed = 1;
			continue;
		}
		switch (check_peer(k, dir)) {
		case 0: ran++; break;
		case 1: break;
		default: ran++; failed = 1; break;
		}
	}
	if (rmdir(dir))
		fprintf(stderr, "tdb-bench-ycsb-peers: %s left behind: %s\n",
			dir, strerror(errno));
	free(k);
	return failed ? 1 : ran ? 0 : 77;
}
