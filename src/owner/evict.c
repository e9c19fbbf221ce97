/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * evict.c - bounded tables: what a write that would take a table past
 * its bound does (TABLE_CREATE's MAX_BYTES, MAX_RECORDS and EVICT;
 * docs/PROTOCOL.md and tdb/proto.h, "EVICTION").
 *
 * The bound counts what TABLE_STAT shows: BYTES_USED (key and value
 * bytes) and RECORDS, expired records not yet swept included (they are
 * the first to go).  Under TDB_EVICT_REFUSE a write that would pass it
 * fails -ENOSPC before it applies (tdbo_bound_refuse; a commit: after
 * its changes applied and before they are logged, then undone).  Under
 * the other policies the write applies and then, under the same hold of
 * the table's lock, records are evicted until the table is within its
 * bound again (tdbo_evict): nobody sees it past the bound, and a key the
 * write itself wrote is never the victim.  Each eviction is one change
 * through the pipeline (tdbo_change_one with `evict`): a logged DEL,
 * sent to watchers with REASON TDB_REASON_EVICTED.
 *
 * Victims, as Redis picks them: TDBO_EVICT_SAMPLES records sampled at
 * random (tdbe_sample), the best candidate of them evicted; an expired
 * one is always best.
 *   LRU: the record's access word is a stamp of the table's use clock
 *        (t->use_clock, one tick per write or owner-served read of the
 *        table): the oldest stamp goes.  A logical clock, not time, so
 *        recency is told apart however fast uses come.
 *   LFU: the access word is Redis's: a minute stamp (16 bits) and a
 *        logarithmic use counter (8 bits) that starts at LFU_INIT, grows
 *        with probability 1 / ((counter - LFU_INIT) * LFU_LOG_FACTOR + 1)
 *        per use, and loses one per LFU_DECAY_MS without use: the lowest
 *        counter goes.
 *   TTL: the soonest deadline goes; records without one are never
 *        evicted (with none left, writes past the bound are refused).
 * Cost: a record of an LRU or LFU table carries 4 bytes more (the
 * access word); an owner-served read of such a table stores to it; an
 * eviction samples TDBO_EVICT_SAMPLES records (tdbi_sample each: a
 * directory slot, a bucket, one try or a few).
 * Reads through the zero-copy maps do not reach the owner and are not
 * counted as uses.
 */
#include "internal.h"

#define TDBO_EVICT_SAMPLES 5u
#define TDBO_EVICT_TRIES   64u          /* samples per victim at most */
#define LFU_INIT           5u
#define LFU_LOG_FACTOR     10u
#define LFU_DECAY_MS       60000u

static bool keeps_access(const struct tdbo_table *t)
{
	return t->evict == TDB_EVICT_LRU || t->evict == TDB_EVICT_LFU;
}

/* The owner's generator for sampling and LFU's coin (xorshift64*; its
 * state races between threads harmlessly: any value will do). */
static uint64_t rnd(struct tdbo_owner *o)
{
	uint64_t x = tdb_load_relaxed(&o->evict_rng);

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	tdb_store_relaxed(&o->evict_rng, x);
	return x * 0x2545f4914f6cdd1dull;
}

static uint32_t lfu_minutes(const struct tdbo_table *t)
{
	return (uint32_t)(tdbe_table_now_ms(t->t) / LFU_DECAY_MS) & 0xffff;
}

/* LFU's counter as of now: one less per decay period without use. */
static uint32_t lfu_decayed(const struct tdbo_table *t, uint32_t w)
{
	uint32_t c = w & 0xff;
	uint32_t idle = (lfu_minutes(t) - (w >> 8)) & 0xffff;

	return idle >= c ? 0 : c - idle;
}

/* The access word after one more use (old: the record's, or none). */
static uint32_t access_used(struct tdbo_table *t, uint32_t old, bool had)
{
	uint32_t c;

	if (t->evict == TDB_EVICT_LRU) {
		uint32_t clk = tdb_load_relaxed(&t->use_clock) + 1;

		tdb_store_relaxed(&t->use_clock, clk);
		return clk;
	}
	c = had ? lfu_decayed(t, old) : LFU_INIT;
	if (had && c < 255 &&
	    rnd(t->o) % ((c > LFU_INIT ? c - LFU_INIT : 0) *
			 LFU_LOG_FACTOR + 1) == 0)
		c++;
	return lfu_minutes(t) << 8 | c;
}

bool tdbo_evict_access(struct tdbo_table *t, const void *key, size_t klen,
		       uint32_t *access)
{
	const void *v;
	uint32_t *w;
	size_t vl;

	if (!keeps_access(t))
		return false;
	tdbe_read_lock();
	w = tdbe_lookup_ex(t->t, key, klen, &v, &vl, NULL, NULL) ? NULL :
	    tdbe_rec_access(v, klen);
	*access = access_used(t, w ? tdb_load_relaxed(w) : 0, w != NULL);
	tdbe_read_unlock();
	return true;
}

void tdbo_evict_hit(struct tdbo_table *t, const void *val, size_t klen)
{
	uint32_t *w;

	if (!keeps_access(t) || !(w = tdbe_rec_access(val, klen)))
		return;
	tdb_store_relaxed(w, access_used(t, tdb_load_relaxed(w), true));
}

void tdbo_evict_touch(struct tdbo_table *t, const void *key, size_t klen)
{
	const void *v;
	size_t vl;

	if (!keeps_access(t))
		return;
	tdbe_read_lock();
	if (!tdbe_lookup_ex(t->t, key, klen, &v, &vl, NULL, NULL))
		tdbo_evict_hit(t, v, klen);
	tdbe_read_unlock();
}

enum { OVER_NONE, OVER_BYTES, OVER_RECORDS };

/* Which bound is passed now, with add_bytes and add_records more. */
static int over_which(struct tdbo_table *t, int64_t add_bytes,
		      int64_t add_recs)
{
	struct tdbe_table_stat st;

	tdbe_table_stat(t->t, &st);
	if (t->max_bytes &&
	    (int64_t)st.bytes_used + add_bytes > (int64_t)t->max_bytes)
		return OVER_BYTES;
	if (t->max_records &&
	    (int64_t)st.records + add_recs > (int64_t)t->max_records)
		return OVER_RECORDS;
	return OVER_NONE;
}

static bool over(struct tdbo_table *t, int64_t add_bytes, int64_t add_recs)
{
	return over_which(t, add_bytes, add_recs) != OVER_NONE;
}

/* The refusal's text, naming the bound and its value, into why
 * (TDBO_TEXT bytes). */
static const char *bound_text(const struct tdbo_table *t, int which,
			      char *why)
{
	why[0] = '\0';
	tdbo_text_add(why, "table is at its bound: ");
	if (which == OVER_BYTES) {
		tdbo_text_add(why, "MAX_BYTES ");
		tdbo_text_u64(why, t->max_bytes);
		tdbo_text_add(why, " bytes of keys and values");
	} else {
		tdbo_text_add(why, "MAX_RECORDS ");
		tdbo_text_u64(why, t->max_records);
		tdbo_text_add(why, " records");
	}
	tdbo_text_add(why, t->evict == TDB_EVICT_TTL ?
		      "; none of its records has a deadline to evict by "
		      "(EVICT ttl)" : " (EVICT refuse)");
	return why;
}

/* Nothing may be evicted to make room: refuse, or ttl with no record
 * that has a deadline. */
static bool must_refuse(struct tdbo_table *t)
{
	struct tdbe_table_stat st;

	if (t->evict == TDB_EVICT_REFUSE)
		return true;
	if (t->evict != TDB_EVICT_TTL)
		return false;
	tdbe_table_stat(t->t, &st);
	return !st.expiring;
}

int tdbo_bound_refuse(struct tdbo_table *t, const struct tdbo_change *ch,
		      const char **msg, char *why)
{
	size_t need = 0;
	int64_t bytes, recs = 1;
	int which;

	if ((!t->max_bytes && !t->max_records) || ch->del || !must_refuse(t))
		return 0;
	bytes = (int64_t)(ch->klen + ch->vlen);
	if (tdbe_get_ex(t->t, ch->key, ch->klen, NULL, 0, &need, NULL,
			NULL) != -ENOENT) {
		bytes -= (int64_t)(ch->klen + need);    /* it replaces one */
		recs = 0;
	}
	which = over_which(t, bytes, recs);
	if (which == OVER_NONE)
		return 0;
	*msg = bound_text(t, which, why);
	return -ENOSPC;
}

int tdbo_bound_check_now(struct tdbo_table *t, const char **msg, char *why)
{
	int which;

	if ((!t->max_bytes && !t->max_records) || !must_refuse(t))
		return 0;
	which = over_which(t, 0, 0);
	if (which == OVER_NONE)
		return 0;
	*msg = bound_text(t, which, why);
	return -ENOSPC;
}

/*
 * The eviction pool (Redis's): the TDBO_EVICT_POOL best candidates seen
 * by the last samples of this table, best first, kept between
 * evictions, so each eviction picks the best of many more records than
 * its own TDBO_EVICT_SAMPLES.  A candidate's score: higher is a better
 * victim; an entry is checked again before it is evicted (still there,
 * score not lower: a use since moves it back).
 */
#define TDBO_EVICT_POOL 16u

struct pool_ent {
	uint64_t score;
	size_t klen;
	unsigned char *key;     /* TDBE_KEY_MAX bytes, kept */
};

struct tdbo_evict_pool {
	unsigned int n;
	struct pool_ent e[TDBO_EVICT_POOL];
};

/* -1: never a victim (ttl: no deadline). */
static int64_t score_of(struct tdbo_table *t, bool expired,
			uint64_t deadline, uint32_t access)
{
	if (expired)
		return INT64_MAX;
	switch (t->evict) {
	case TDB_EVICT_TTL:
		return deadline ? (int64_t)(INT64_MAX - 1 - (deadline >> 1))
				: -1;
	case TDB_EVICT_LRU:
		return (int64_t)(uint32_t)(tdb_load_relaxed(&t->use_clock) -
					   access);
	default:
		return 255 - (int64_t)lfu_decayed(t, access);
	}
}

static struct tdbo_evict_pool *pool_of(struct tdbo_table *t)
{
	struct tdbo_evict_pool *p = t->evict_pool;
	unsigned int i;

	if (p)
		return p;
	p = tdbp_alloc(sizeof(*p));
	if (!p)
		return NULL;
	memset(p, 0, sizeof(*p));
	for (i = 0; i < TDBO_EVICT_POOL; i++) {
		p->e[i].key = tdbp_alloc(TDBE_KEY_MAX);
		if (!p->e[i].key) {
			while (i--)
				tdbp_free(p->e[i].key);
			tdbp_free(p);
			return NULL;
		}
	}
	t->evict_pool = p;
	return p;
}

static void pool_drop(struct tdbo_evict_pool *p, unsigned int i)
{
	unsigned char *k = p->e[i].key;

	for (; i + 1 < p->n; i++)       /* the engine's rule: no memmove */
		p->e[i] = p->e[i + 1];
	p->n--;
	p->e[p->n].key = k;     /* the buffer goes to the free end */
}

/* Put (key, score) in its place, best first; not if worse than a full
 * pool's worst.  A key already there is taken out first. */
static void pool_add(struct tdbo_evict_pool *p, const void *key, size_t klen,
		     uint64_t score)
{
	unsigned int i, at;
	unsigned char *k;

	for (i = 0; i < p->n; i++)
		if (p->e[i].klen == klen && !memcmp(p->e[i].key, key, klen)) {
			pool_drop(p, i);
			break;
		}
	for (at = 0; at < p->n && p->e[at].score >= score; at++)
		;
	if (at == TDBO_EVICT_POOL)
		return;
	if (p->n == TDBO_EVICT_POOL)
		p->n--;                 /* the worst goes */
	k = p->e[p->n].key;
	for (i = p->n; i > at; i--)
		p->e[i] = p->e[i - 1];
	p->e[at].key = k;
	memcpy(k, key, klen);
	p->e[at].klen = klen;
	p->e[at].score = score;
	p->n++;
}

/* TDBO_EVICT_SAMPLES candidates into the pool. */
static void pool_fill(struct tdbo_table *t, struct tdbo_evict_pool *p,
		      struct tdbo_evict_keep *keep, unsigned char *sbuf)
{
	unsigned int tries, got = 0;

	for (tries = 0; tries < TDBO_EVICT_TRIES &&
	     got < TDBO_EVICT_SAMPLES; tries++) {
		struct tdbe_sample s;
		int64_t sc;

		if (tdbe_sample(t->t, rnd(t->o), sbuf, &s))
			continue;
		if (keep && keep->fn(keep->arg, t, s.key, s.klen))
			continue;
		sc = score_of(t, s.expired, s.deadline, s.access);
		if (sc < 0)
			continue;       /* not a candidate: not a sample */
		got++;
		pool_add(p, s.key, s.klen, (uint64_t)sc);
	}
}

/* The candidate's score now, or -1 if it is gone or not one. */
static int64_t score_now(struct tdbo_table *t, const void *key, size_t klen,
			 bool *expired)
{
	uint64_t dl = 0;
	const void *v;
	uint32_t *w;
	size_t vl;
	int64_t sc;

	*expired = false;
	tdbe_read_lock();
	if (tdbe_lookup_ex(t->t, key, klen, &v, &vl, NULL, &dl)) {
		tdbe_read_unlock();
		/* absent to readers: gone, or expired (a DEL of it must
		 * then be the sweep's kind) */
		*expired = tdbe_expired(t->t, key, klen);
		return *expired ? INT64_MAX : -1;
	}
	w = tdbe_rec_access(v, klen);
	sc = score_of(t, false, dl, w ? tdb_load_relaxed(w) : 0);
	tdbe_read_unlock();
	return sc;
}

/* The best victim into kbuf: true if found (*expired: it has). */
static bool pick(struct tdbo_table *t, struct tdbo_evict_keep *keep,
		 unsigned char *kbuf, unsigned char *sbuf, size_t *klen,
		 bool *expired)
{
	struct tdbo_evict_pool *p = pool_of(t);
	unsigned int rounds;

	if (!p)
		return false;
	for (rounds = 0; rounds < 4; rounds++) {
		pool_fill(t, p, keep, sbuf);
		while (p->n) {
			struct pool_ent *e = &p->e[0];
			int64_t sc;

			if (keep && keep->fn(keep->arg, t, e->key, e->klen)) {
				pool_drop(p, 0);
				continue;
			}
			sc = score_now(t, e->key, e->klen, expired);
			if (sc < 0) {
				pool_drop(p, 0);        /* gone meanwhile */
				continue;
			}
			if ((uint64_t)sc < e->score) {
				/* used since: back into its place */
				memcpy(sbuf, e->key, e->klen);
				*klen = e->klen;
				pool_drop(p, 0);
				pool_add(p, sbuf, *klen, (uint64_t)sc);
				if (p->e[0].score <= (uint64_t)sc &&
				    p->e[0].klen == *klen &&
				    !memcmp(p->e[0].key, sbuf, *klen))
					goto take;
				continue;
			}
take:
			*klen = p->e[0].klen;
			memcpy(kbuf, p->e[0].key, *klen);
			pool_drop(p, 0);
			return true;
		}
	}
	return false;
}

void tdbo_evict_forget(struct tdbo_table *t)
{
	struct tdbo_evict_pool *p = t->evict_pool;
	unsigned int i;

	if (!p)
		return;
	for (i = 0; i < TDBO_EVICT_POOL; i++)
		tdbp_free(p->e[i].key);
	tdbp_free(p);
	t->evict_pool = NULL;
}

unsigned int tdbo_evict(struct tdbo_table *t, struct tdbo_evict_keep *keep,
			char *why)
{
	struct tdbo_owner *o = t->o;
	unsigned char *kbuf = NULL;
	unsigned int n = 0;

	if ((!t->max_bytes && !t->max_records) ||
	    t->evict == TDB_EVICT_REFUSE || t->dropped || !t->t)
		return 0;
	while (over(t, 0, 0)) {
		struct tdbo_change ch = { .del = true, .quiet = true };
		const char *msg = NULL;
		bool expired;
		size_t klen;
		uint64_t lsn;

		if (!kbuf && !(kbuf = tdbp_alloc(2 * TDBE_KEY_MAX)))
			break;
		/* none found (only kept keys sampled, or ttl without a
		 * deadline left): past the bound until the next write */
		if (!pick(t, keep, kbuf, kbuf + TDBE_KEY_MAX, &klen, &expired))
			break;
		ch.key = kbuf;
		ch.klen = klen;
		ch.expiry = expired;
		ch.evict = !expired;
		if (tdbo_change_one(t, &ch, true, &lsn, &msg, why))
			break;          /* the log is full: the next write */
		if (ch.expiry) {
			t->expired++;
			tdbo_inc(&o->expired);
		} else {
			t->evicted++;
			tdbo_inc(&o->evicted);
			n++;
		}
	}
	tdbp_free(kbuf);
	return n;
}

/* --- TOUCH: uses of records read through a map --------------------------- */

static void touch_word(void *arg, uint32_t *w)
{
	struct tdbo_table *t = arg;

	tdb_store_relaxed(w, access_used(t, tdb_load_relaxed(w), true));
}

int tdbo_cmd_touch(struct tdbo_client *c, const struct tdb_proto_msg *m,
		   struct tdb_proto_extack *ext)
{
	const unsigned char *h = m->hashes;
	struct tdbo_table *t;
	uint32_t i;
	int err = 0;

	t = tdbo_resolve(c, m, TDBO_MAY_READ, ext, &err);
	if (!t)
		return err;
	if (keeps_access(t)) {
		tdbe_read_lock();
		for (i = 0; i < m->nhashes; i++) {
			uint64_t hash;

			memcpy(&hash, h + 8 * i, sizeof(hash));
			tdbe_touch_hash(t->t, hash, touch_word, t);
		}
		tdbe_read_unlock();
	}
	tdbo_table_put(t);
	return 0;
}
