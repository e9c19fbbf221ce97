/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * cond_model.h - a model-based test of versions, conditional writes,
 * INCR and serializable transactions (issue 24), shared by
 * test_cond_model.c (tdbd) and tests/kernel/test_kcond.c (both homes).
 *
 * One driver process holds CM_CONNS connections (rings, rings without
 * maps, no rings) and issues requests on them in a random interleaving,
 * one at a time: the owner answers each before the next is sent, so the
 * owner's serial order is the driver's, and the model applies each op
 * when its answer comes.  So the check is exact: every answer (errno,
 * value, INCR's sum) must be the model's.  Ops, on CM_TABLES tables x
 * CM_KEYS keys of the driver's prefix:
 *  - alone: PUT plain / IF_ABSENT (-EEXIST) / IF_PRESENT (-ENOENT) /
 *    IF_VERSION (-ECANCELED, its message naming the version now), DEL
 *    plain (-ENOENT) / IF_VERSION, GET with its version (also in place:
 *    tdbc_get_ref_ver in a read section), INCR (-EDOM for
 *    a value that is not a canonical decimal s64, -ERANGE past the
 *    range), some of them through tdbc_submit/tdbc_reap;
 *  - in a transaction (at most one open per connection, others writing
 *    meanwhile): GET (of the table: joins the read set; of its own
 *    change: version 0), PUT/DEL with or without conditions, INCR;
 *    some of them through tdbc_submit (INCR's completion in a
 *    transaction carries no version); commit: -ESTALE (naming a table
 *    and key read that changed) when a read is no longer current, else
 *    the failing condition's errno, else 0 and everything applied;
 *    nothing applied on any failure; abort.  An INCR refused in a transaction ends it (abort).
 * Versions: the model gives every acknowledged write (a commit counts
 * once) a write number in acknowledgement order; each version learned
 * (GET, scan, INCR through tdbc_submit) must be nonzero, the same for
 * every key of one commit, and strictly increasing with the write
 * number, over all keys: so a version never repeats for a key, also
 * after a delete and a re-create.  IF_VERSION targets are the key's
 * version now, or a version of an earlier write (a past incarnation),
 * or one no write had: decidable whether the version now is known.
 * At the end every key is read and each table scanned with versions.
 *
 * Left out on purpose, where the contract does not pin the answer:
 * IF_VERSION on a key the same transaction already wrote, and reads in a
 * transaction of a key it wrote conditionally.  Conditions in a
 * transaction are modelled in order (an IF_ABSENT put after the
 * transaction's own put of the key fails), as TDB_PUT_NOOVERWRITE
 * already is; when a commit fails in several ways, any of their errnos
 * is accepted (nothing applied in every case).
 */
#ifndef TDB_ITEST_COND_MODEL_H
#define TDB_ITEST_COND_MODEL_H

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tdb/client.h>

#include "harness.h"

#define CM_TABLES 2
#define CM_KEYS   10
#define CM_CONNS  3
#define CM_VMAX   40            /* value bytes at most */
#define CM_TXOPS  24            /* changes per transaction at most */

static const char *const cm_tname[CM_TABLES] = { "cm_a", "cm_b" };
static const unsigned int cm_cflags[CM_CONNS] = { 0, TDBC_NO_MAP,
						 TDBC_NO_RINGS };

typedef struct tdbc *cm_connect_fn(unsigned int flags);

struct cm_key {
	bool present;
	unsigned char val[CM_VMAX];
	size_t vlen;
	uint64_t wid;           /* the write that made it so (0: none) */
};

struct cm_op {                  /* a change buffered in a transaction */
	int tb, k;
	bool del;
	unsigned int flags;     /* TDBC_IF_* */
	uint64_t if_wid;        /* IF_VERSION: the write whose version it
				 * names; 0: a version no write had */
	unsigned char val[CM_VMAX];
	size_t vlen;
};

struct cm_conn {
	struct tdbc *c;
	struct tdbc_table *t[CM_TABLES];
	struct tdbc_txn *x;
	/* the open transaction */
	struct cm_op ops[CM_TXOPS];
	int nops;
	bool rs_in[CM_TABLES][CM_KEYS];         /* read set */
	bool rs_present[CM_TABLES][CM_KEYS];
	uint64_t rs_wid[CM_TABLES][CM_KEYS];
	bool ov_in[CM_TABLES][CM_KEYS];         /* its own changes */
	bool ov_cond[CM_TABLES][CM_KEYS];       /* ... one conditional */
	struct cm_key ov[CM_TABLES][CM_KEYS];
};

struct cm {
	uint64_t seed, rnd;
	long step;
	const char *prefix;
	struct cm_conn conn[CM_CONNS];
	struct cm_key key[CM_TABLES][CM_KEYS];
	uint64_t *vers;         /* by write number; 0: not learned */
	uint64_t nw, capw;      /* write numbers given (next: nw + 1) */
	/* counts, printed */
	uint64_t n_ops, n_commits, n_stale, n_condfail, n_aborts, n_learned,
		 n_cas_ok, n_cas_fail, n_edom, n_erange, n_async;
};

#define CMCHECK(m, cond, fmt, ...)                                        \
	CHECK(cond, "seed %" PRIu64 " step %ld: " fmt, (m)->seed, (m)->step, \
	      ##__VA_ARGS__)

static inline unsigned int cm_rn(struct cm *m, unsigned int n)
{
	return (unsigned int)(h_rand(&m->rnd) % n);
}

static inline size_t cm_keyname(const struct cm *m, int k, char *out)
{
	return (size_t)snprintf(out, 48, "%s:k%02d", m->prefix, k);
}

/* INCR's encoding (tdb/proto.h): 1..20 bytes, optional '-', digits, no
 * leading zero, no "-0"; in the s64 range. */
static inline bool cm_int(const unsigned char *v, size_t n, int64_t *out)
{
	const unsigned char *p = v;
	bool neg = false;
	uint64_t acc = 0, lim;

	if (n == 0 || n > 20)
		return false;
	if (*p == '-') {
		neg = true;
		p++;
		n--;
		if (n == 0)
			return false;
	}
	if (p[0] == '0' && (n > 1 || neg))
		return false;
	lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	for (; n; n--, p++) {
		if (*p < '0' || *p > '9')
			return false;
		if (acc > (lim - (uint64_t)(*p - '0')) / 10)
			return false;
		acc = acc * 10 + (uint64_t)(*p - '0');
	}
	*out = neg ? (int64_t)(0 - acc) : (int64_t)acc;
	return true;
}

static inline void cm_random_val(struct cm *m, unsigned char *buf,
				 size_t *len)
{
	static const char *const odd[] = { "007", "-0", "+5", " 5", "5 ", "",
		"12a", "--1", "99999999999999999999", "-9223372036854775809",
		"9223372036854775808", "0x10", "1e3", "00" };
	static const char *const edge[] = { "9223372036854775807",
		"9223372036854775800", "-9223372036854775808",
		"-9223372036854775801", "0", "-1" };
	unsigned int r = cm_rn(m, 100);
	int n;

	if (r < 45)
		n = snprintf((char *)buf, CM_VMAX, "%d",
			     (int)cm_rn(m, 101) - 50);
	else if (r < 55)
		n = snprintf((char *)buf, CM_VMAX, "%s", edge[cm_rn(m, 6)]);
	else if (r < 68)
		n = snprintf((char *)buf, CM_VMAX, "%s", odd[cm_rn(m, 14)]);
	else
		n = snprintf((char *)buf, CM_VMAX, "v%" PRIu64 "-%ld",
			     h_rand(&m->rnd) % 100000, m->step);
	*len = (size_t)n;
}

static inline int64_t cm_random_delta(struct cm *m)
{
	switch (cm_rn(m, 8)) {
	case 0: return INT64_MAX / 2 + 3;
	case 1: return INT64_MIN / 2 - 3;
	case 2: return 0;
	case 3: return -(int64_t)cm_rn(m, 100);
	default: return 1 + (int64_t)cm_rn(m, 10);
	}
}

/* --- write numbers and versions ---------------------------------------- */

static inline uint64_t cm_new_write(struct cm *m)
{
	if (m->nw + 2 > m->capw) {
		m->capw = m->capw ? m->capw * 2 : 1024;
		m->vers = realloc(m->vers, m->capw * sizeof(*m->vers));
		CHECK(m->vers, "out of memory");
	}
	m->nw++;
	m->vers[m->nw] = 0;
	return m->nw;
}

/* Version v was seen for write w: nonzero, the same as before, and in
 * order with every other version learned. */
static inline void cm_learn(struct cm *m, uint64_t w, uint64_t v,
			    const char *what)
{
	uint64_t i;

	CMCHECK(m, v != 0, "%s: version 0", what);
	CMCHECK(m, w != 0 && w <= m->nw, "%s: no write for version %" PRIu64,
		what, v);
	if (m->vers[w]) {
		CMCHECK(m, m->vers[w] == v, "%s: version %" PRIu64 ", but the "
			"same write (a key of one commit, or a read before) "
			"had %" PRIu64, what, v, m->vers[w]);
		return;
	}
	for (i = 1; i <= m->nw; i++) {
		if (!m->vers[i])
			continue;
		CMCHECK(m, i < w ? m->vers[i] < v : m->vers[i] > v, "%s: "
			"version %" PRIu64 " of write #%" PRIu64 " is out of "
			"order with version %" PRIu64 " of write #%" PRIu64
			" (versions must grow with every write, never repeat)",
			what, v, w, m->vers[i], i);
	}
	m->vers[w] = v;
	m->n_learned++;
}

/* A version to put in IF_VERSION for key (tb,k), and the write it names
 * (0: none).  *right: it is the key's version now. */
static inline uint64_t cm_pick_version(struct cm *m, int tb, int k,
				       uint64_t *wid)
{
	const struct cm_key *key = &m->key[tb][k];
	unsigned int r = cm_rn(m, 10);
	uint64_t i, w;

	if (r < 6 && key->present && m->vers[key->wid]) {
		*wid = key->wid;
		return m->vers[key->wid];
	}
	if (r < 9 && m->nw) {
		/* a version of some earlier write, this key's or not */
		w = 1 + h_rand(&m->rnd) % m->nw;
		for (i = 0; i < m->nw; i++, w = w % m->nw + 1)
			if (m->vers[w]) {
				*wid = w;
				return m->vers[w];
			}
	}
	*wid = 0;
	return (1ull << 62) + cm_rn(m, 1000);
}

static inline bool cm_matches(const struct cm_key *key, uint64_t if_wid)
{
	return key->present && if_wid && key->wid == if_wid;
}

/* --- reading back ------------------------------------------------------ */

static inline void cm_check_get(struct cm *m, int ci, int tb, int k,
				bool async)
{
	struct cm_conn *cn = &m->conn[ci];
	const struct cm_key *key = &m->key[tb][k];
	unsigned char buf[CM_VMAX + 8];
	char kn[48], what[96];
	size_t kl = cm_keyname(m, k, kn);
	uint64_t ver = 0;
	long n;

	snprintf(what, sizeof(what), "GET %s/%s on conn %d%s", cm_tname[tb],
		 kn, ci, async ? " (submit)" : "");
	if (!async && cm_rn(m, 4) == 0) {
		/* in place (the map where there is one), in a section */
		const void *vp = NULL;
		size_t vl = 0;
		int tries, e;

		for (tries = 0; tries < 100; tries++) {
			CMCHECK(m, tdbc_read_begin(cn->c) == 0, "read_begin");
			n = tdbc_get_ref_ver(cn->t[tb], kn, kl, &vp, &vl, &ver);
			if (n == 0) {
				CMCHECK(m, vl <= CM_VMAX, "%s (ref): %zu bytes",
					what, vl);
				memcpy(buf, vp, vl);
				n = (long)vl;
			}
			e = tdbc_read_end(cn->c);
			if (e != -ESTALE)
				break;
		}
		CMCHECK(m, e == 0, "%s (ref): read_end %s", what,
			h_errname(e));
	} else if (async) {
		struct tdbc_req rq = { .op = TDBC_OP_GET, .table = cn->t[tb],
				       .key = kn, .klen = kl, .user = 7 };
		struct tdbc_cqe cq;

		CMCHECK(m, tdbc_submit(cn->c, &rq, 1) == 1, "submit");
		CMCHECK(m, tdbc_reap(cn->c, &cq, 1, 1, 10000) == 1, "reap");
		CMCHECK(m, cq.user == 7, "cqe user");
		n = cq.res < 0 ? cq.res : (long)cq.vlen;
		if (n >= 0) {
			CMCHECK(m, cq.vlen <= CM_VMAX, "%s: %zu bytes", what,
				cq.vlen);
			memcpy(buf, cq.val, cq.vlen);
		}
		ver = cq.version;
		m->n_async++;
	} else {
		n = tdbc_get_ver(cn->t[tb], NULL, kn, kl, buf, sizeof(buf),
				 NULL, &ver);
	}
	if (!key->present) {
		CMCHECK(m, n == -ENOENT, "%s: %s, want ENOENT (absent)", what,
			n < 0 ? h_errname((int)n) : "found");
		return;
	}
	CMCHECK(m, n >= 0, "%s: %s (%s), want the value", what,
		h_errname((int)n), tdbc_errmsg(cn->c));
	CMCHECK(m, (size_t)n == key->vlen && !memcmp(buf, key->val, key->vlen),
		"%s: value \"%.*s\", want \"%.*s\"", what, (int)n, buf,
		(int)key->vlen, key->val);
	cm_learn(m, key->wid, ver, what);
}

/* --- alone --------------------------------------------------------------- */

static inline void cm_set(struct cm *m, int tb, int k, bool present,
			  const unsigned char *v, size_t vlen, uint64_t w)
{
	struct cm_key *key = &m->key[tb][k];

	key->present = present;
	key->vlen = present ? vlen : 0;
	if (present && vlen)
		memcpy(key->val, v, vlen);
	key->wid = w;
}

static inline void cm_alone(struct cm *m, int ci)
{
	struct cm_conn *cn = &m->conn[ci];
	int tb = (int)cm_rn(m, CM_TABLES), k = (int)cm_rn(m, CM_KEYS);
	struct cm_key *key = &m->key[tb][k];
	unsigned char val[CM_VMAX];
	char kn[48], what[128];
	size_t kl = cm_keyname(m, k, kn), vlen = 0;
	unsigned int r = cm_rn(m, 100), flags = 0;
	uint64_t if_wid = 0, ver = 0;
	bool async = cm_rn(m, 5) == 0, del = false;
	int err, want;

	m->n_ops++;
	if (r < 22) {
		cm_check_get(m, ci, tb, k, async);
		return;
	}
	if (r < 40) {                                   /* INCR */
		int64_t d = cm_random_delta(m), base = 0, sum = 0, res = 0;
		bool ok = true;

		if (key->present)
			ok = cm_int(key->val, key->vlen, &base);
		if (!ok)
			want = -EDOM;
		else if (__builtin_add_overflow(base, d, &sum))
			want = -ERANGE;
		else
			want = 0;
		snprintf(what, sizeof(what), "INCR %s/%s by %" PRId64
			 " on conn %d%s", cm_tname[tb], kn, d, ci,
			 async ? " (submit)" : "");
		if (async) {
			struct tdbc_req rq = { .op = TDBC_OP_INCR,
				.table = cn->t[tb], .key = kn, .klen = kl,
				.delta = d, .user = 9 };
			struct tdbc_cqe cq;

			CMCHECK(m, tdbc_submit(cn->c, &rq, 1) == 1, "submit");
			CMCHECK(m, tdbc_reap(cn->c, &cq, 1, 1, 10000) == 1,
				"reap");
			err = cq.res;
			res = cq.num;
			ver = cq.version;
			m->n_async++;
		} else {
			err = tdbc_incr(cn->t[tb], NULL, kn, kl, d, &res);
		}
		CMCHECK(m, err == want, "%s of \"%.*s\": %s (%s), want %s",
			what, (int)key->vlen, key->present ?
			(const char *)key->val : "(absent)", h_errname(err),
			tdbc_errmsg(cn->c), h_errname(want));
		m->n_edom += want == -EDOM;
		m->n_erange += want == -ERANGE;
		if (want)
			return;
		CMCHECK(m, res == sum, "%s: result %" PRId64 ", want %" PRId64,
			what, res, sum);
		vlen = (size_t)snprintf((char *)val, sizeof(val), "%" PRId64,
					sum);
		cm_set(m, tb, k, true, val, vlen, cm_new_write(m));
		if (async)
			cm_learn(m, key->wid, ver, what);
		return;
	}
	if (r < 52) {
		flags = 0;
	} else if (r < 60) {
		flags = TDBC_IF_ABSENT;
	} else if (r < 68) {
		flags = TDBC_IF_PRESENT;
	} else if (r < 80) {
		flags = TDBC_IF_VERSION;
	} else if (r < 88) {
		del = true;
	} else {
		del = true;
		flags = TDBC_IF_VERSION;
	}
	if (flags & TDBC_IF_VERSION)
		ver = cm_pick_version(m, tb, k, &if_wid);
	if (!del)
		cm_random_val(m, val, &vlen);
	if (flags & TDBC_IF_VERSION)
		want = cm_matches(key, if_wid) ? 0 : -ECANCELED;
	else if (del)
		want = key->present ? 0 : -ENOENT;
	else if (flags & TDBC_IF_ABSENT)
		want = key->present ? -EEXIST : 0;
	else if (flags & TDBC_IF_PRESENT)
		want = key->present ? 0 : -ENOENT;
	else
		want = 0;
	snprintf(what, sizeof(what), "%s %s/%s flags %#x version %" PRIu64
		 " on conn %d%s", del ? "DEL" : "PUT", cm_tname[tb], kn,
		 flags, ver, ci, async ? " (submit)" : "");
	if (async) {
		struct tdbc_req rq = { .op = del ? TDBC_OP_DEL : TDBC_OP_PUT,
			.table = cn->t[tb], .key = kn, .klen = kl,
			.val = val, .vlen = vlen, .flags = flags,
			.version = ver, .user = 11 };
		struct tdbc_cqe cq;

		CMCHECK(m, tdbc_submit(cn->c, &rq, 1) == 1, "submit");
		CMCHECK(m, tdbc_reap(cn->c, &cq, 1, 1, 10000) == 1, "reap");
		err = cq.res;
		m->n_async++;
	} else if (del) {
		err = flags ? tdbc_del_if(cn->t[tb], NULL, kn, kl, flags, ver)
			    : tdbc_del(cn->t[tb], NULL, kn, kl);
	} else {
		err = flags ? tdbc_put_if(cn->t[tb], NULL, kn, kl, val, vlen,
					  flags, ver)
			    : tdbc_put(cn->t[tb], NULL, kn, kl, val, vlen, 0);
	}
	CMCHECK(m, err == want, "%s (key %s, write #%" PRIu64 " version %"
		PRIu64 "): %s (%s), want %s", what, key->present ? "present" :
		"absent", key->wid, key->wid ? m->vers[key->wid] : 0,
		h_errname(err), tdbc_errmsg(cn->c), h_errname(want));
	if (flags & TDBC_IF_VERSION) {
		if (want) {
			m->n_cas_fail++;
			/* the message names the version now */
			if (!async && key->present && m->vers[key->wid]) {
				char num[24];

				snprintf(num, sizeof(num), "%" PRIu64,
					 m->vers[key->wid]);
				CMCHECK(m, strstr(tdbc_errmsg(cn->c), num),
					"%s: ECANCELED's message \"%s\" does "
					"not name the key's version %s", what,
					tdbc_errmsg(cn->c), num);
			}
		} else {
			m->n_cas_ok++;
		}
	}
	if (want)
		return;
	cm_set(m, tb, k, !del, val, vlen, cm_new_write(m));
}

/* --- in a transaction ---------------------------------------------------- */

static inline void cm_txn_clear(struct cm_conn *cn)
{
	cn->x = NULL;
	cn->nops = 0;
	memset(cn->rs_in, 0, sizeof(cn->rs_in));
	memset(cn->ov_in, 0, sizeof(cn->ov_in));
	memset(cn->ov_cond, 0, sizeof(cn->ov_cond));
}

static inline void cm_read_set_add(struct cm *m, struct cm_conn *cn, int tb,
				   int k)
{
	if (cn->rs_in[tb][k])
		return;
	cn->rs_in[tb][k] = true;
	cn->rs_present[tb][k] = m->key[tb][k].present;
	cn->rs_wid[tb][k] = m->key[tb][k].wid;
}

static inline void cm_abort(struct cm *m, int ci, const char *why)
{
	struct cm_conn *cn = &m->conn[ci];
	int err = tdbc_txn_abort(cn->x);

	CMCHECK(m, err == 0, "abort (%s) on conn %d: %s", why, ci,
		h_errname(err));
	cm_txn_clear(cn);
	m->n_aborts++;
}

static inline void cm_commit(struct cm *m, int ci)
{
	struct cm_conn *cn = &m->conn[ci];
	struct cm_key after[CM_TABLES][CM_KEYS];
	bool stale = false, changed = false, errs[3] = { false };
	int stale_tb = -1, stale_k = -1, i, tb, k, err;
	uint64_t w;

	for (tb = 0; tb < CM_TABLES; tb++)
		for (k = 0; k < CM_KEYS; k++) {
			const struct cm_key *key = &m->key[tb][k];

			if (!cn->rs_in[tb][k])
				continue;
			if (key->present != cn->rs_present[tb][k] ||
			    (key->present && key->wid != cn->rs_wid[tb][k])) {
				stale = true;
				stale_tb = tb;
				stale_k = k;
			}
		}
	memcpy(after, m->key, sizeof(after));
	for (i = 0; i < cn->nops; i++) {
		const struct cm_op *op = &cn->ops[i];
		struct cm_key *key = &after[op->tb][op->k];

		if (op->flags & TDBC_IF_VERSION) {
			if (!cm_matches(key, op->if_wid))
				errs[0] = true;
		} else if (op->flags & TDBC_IF_ABSENT) {
			if (key->present)
				errs[1] = true;
		} else if (op->flags & TDBC_IF_PRESENT) {
			if (!key->present)
				errs[2] = true;
		}
		if (op->del) {
			changed |= key->present;
			key->present = false;
			key->vlen = 0;
		} else {
			changed = true;
			key->present = true;
			key->vlen = op->vlen;
			memcpy(key->val, op->val, op->vlen);
		}
		key->wid = UINT64_MAX;          /* this commit's */
	}
	err = tdbc_txn_commit(cn->x);
	m->n_ops++;
	if (stale || errs[0] || errs[1] || errs[2]) {
		bool ok = (stale && err == -ESTALE) ||
			  (errs[0] && err == -ECANCELED) ||
			  (errs[1] && err == -EEXIST) ||
			  (errs[2] && err == -ENOENT);

		CMCHECK(m, ok, "commit of %d changes on conn %d: %s (%s), "
			"want%s%s%s%s", cn->nops, ci, h_errname(err),
			tdbc_errmsg(cn->c), stale ? " ESTALE" : "",
			errs[0] ? " ECANCELED" : "", errs[1] ? " EEXIST" : "",
			errs[2] ? " ENOENT" : "");
		if (err == -ESTALE && !errs[0] && !errs[1] && !errs[2]) {
			char kn[48];
			const char *msg = tdbc_errmsg(cn->c);
			bool named = false;

			/* it names a table and key that changed */
			for (tb = 0; tb < CM_TABLES; tb++)
				for (k = 0; k < CM_KEYS; k++) {
					const struct cm_key *key =
						&m->key[tb][k];

					if (!cn->rs_in[tb][k] ||
					    (key->present ==
					     cn->rs_present[tb][k] &&
					     (!key->present || key->wid ==
					      cn->rs_wid[tb][k])))
						continue;
					cm_keyname(m, k, kn);
					named |= strstr(msg, cm_tname[tb]) &&
						 strstr(msg, kn);
				}
			cm_keyname(m, stale_k, kn);
			CMCHECK(m, named, "ESTALE's message \"%s\" names no "
				"table and key that changed (e.g. %s/%s)",
				msg, cm_tname[stale_tb], kn);
		}
		if (err == -ESTALE)
			m->n_stale++;
		else
			m->n_condfail++;
		cm_txn_clear(cn);
		return;
	}
	CMCHECK(m, err == 0, "commit of %d changes on conn %d: %s (%s), "
		"want 0", cn->nops, ci, h_errname(err), tdbc_errmsg(cn->c));
	m->n_commits++;
	if (changed) {
		w = cm_new_write(m);
		for (tb = 0; tb < CM_TABLES; tb++)
			for (k = 0; k < CM_KEYS; k++)
				if (after[tb][k].wid == UINT64_MAX)
					after[tb][k].wid = w;
		memcpy(m->key, after, sizeof(after));
	} else {
		/* deletes of absent keys only: no key changed */
		for (tb = 0; tb < CM_TABLES; tb++)
			for (k = 0; k < CM_KEYS; k++)
				if (after[tb][k].wid == UINT64_MAX) {
					CMCHECK(m, !m->key[tb][k].present,
						"model");
				}
	}
	cm_txn_clear(cn);
}

static inline void cm_in_txn(struct cm *m, int ci)
{
	struct cm_conn *cn = &m->conn[ci];
	int tb = (int)cm_rn(m, CM_TABLES), k = (int)cm_rn(m, CM_KEYS);
	unsigned int r = cm_rn(m, 100);
	char kn[48], what[128];
	size_t kl = cm_keyname(m, k, kn);
	int err;

	if (r < 14) {
		cm_commit(m, ci);
		return;
	}
	if (r < 17) {
		m->n_ops++;
		cm_abort(m, ci, "by choice");
		return;
	}
	m->n_ops++;
	if (r < 45 && !cn->ov_cond[tb][k]) {            /* GET */
		unsigned char buf[CM_VMAX + 8];
		const struct cm_key *key;
		uint64_t ver = 7;
		long n;

		snprintf(what, sizeof(what), "GET %s/%s in txn on conn %d",
			 cm_tname[tb], kn, ci);
		n = tdbc_get_ver(cn->t[tb], cn->x, kn, kl, buf, sizeof(buf),
				 NULL, &ver);
		if (cn->ov_in[tb][k]) {
			key = &cn->ov[tb][k];
		} else {
			key = &m->key[tb][k];
			cm_read_set_add(m, cn, tb, k);
		}
		if (!key->present) {
			CMCHECK(m, n == -ENOENT, "%s: %s, want ENOENT", what,
				n < 0 ? h_errname((int)n) : "found");
			return;
		}
		CMCHECK(m, n >= 0 && (size_t)n == key->vlen &&
			!memcmp(buf, key->val, key->vlen), "%s: %s \"%.*s\", "
			"want \"%.*s\"", what, h_errname(n < 0 ? (int)n : 0),
			n < 0 ? 0 : (int)n, buf, (int)key->vlen, key->val);
		if (cn->ov_in[tb][k])
			CMCHECK(m, ver == 0, "%s: the transaction's own change "
				"has version %" PRIu64 ", want 0", what, ver);
		else
			cm_learn(m, key->wid, ver, what);
		return;
	}
	if (r < 60 && !cn->ov_cond[tb][k]) {            /* INCR */
		const struct cm_key *key = cn->ov_in[tb][k] ? &cn->ov[tb][k] :
					   &m->key[tb][k];
		int64_t d = cm_random_delta(m), base = 0, sum = 0, res = 0;
		bool ok = true;
		int want;
		struct cm_key *o = &cn->ov[tb][k];

		if (!cn->ov_in[tb][k])
			cm_read_set_add(m, cn, tb, k);
		if (key->present)
			ok = cm_int(key->val, key->vlen, &base);
		want = !ok ? -EDOM : __builtin_add_overflow(base, d, &sum) ?
		       -ERANGE : 0;
		snprintf(what, sizeof(what), "INCR %s/%s by %" PRId64 " in "
			 "txn on conn %d", cm_tname[tb], kn, d, ci);
		if (cn->nops == CM_TXOPS) {
			cm_commit(m, ci);
			return;
		}
		if (cm_rn(m, 4) == 0) {
			struct tdbc_req rq = { .op = TDBC_OP_INCR,
				.table = cn->t[tb], .txn = cn->x, .key = kn,
				.klen = kl, .delta = d, .user = 13 };
			struct tdbc_cqe cq;

			CMCHECK(m, tdbc_submit(cn->c, &rq, 1) == 1, "submit");
			CMCHECK(m, tdbc_reap(cn->c, &cq, 1, 1, 10000) == 1,
				"reap");
			err = cq.res;
			res = cq.num;
			CMCHECK(m, err || cq.version == 0, "%s (submit): "
				"version %" PRIu64 " in a transaction, want 0 "
				"(INT only)", what, cq.version);
			m->n_async++;
		} else {
			err = tdbc_incr(cn->t[tb], cn->x, kn, kl, d, &res);
		}
		CMCHECK(m, err == want, "%s of \"%.*s\": %s (%s), want %s",
			what, (int)key->vlen, key->present ?
			(const char *)key->val : "(absent)", h_errname(err),
			tdbc_errmsg(cn->c), h_errname(want));
		if (want) {
			m->n_edom += want == -EDOM;
			m->n_erange += want == -ERANGE;
			cm_abort(m, ci, what);
			return;
		}
		CMCHECK(m, res == sum, "%s: result %" PRId64 ", want %" PRId64,
			what, res, sum);
		cn->ops[cn->nops] = (struct cm_op){ .tb = tb, .k = k };
		cn->ops[cn->nops].vlen = (size_t)snprintf(
			(char *)cn->ops[cn->nops].val, CM_VMAX, "%" PRId64,
			sum);
		o->present = true;
		o->vlen = cn->ops[cn->nops].vlen;
		memcpy(o->val, cn->ops[cn->nops].val, o->vlen);
		cn->ov_in[tb][k] = true;
		cn->nops++;
		return;
	}
	if (cn->nops == CM_TXOPS) {
		cm_commit(m, ci);
		return;
	}
	{                                               /* PUT, DEL */
		struct cm_op *op = &cn->ops[cn->nops];
		unsigned int rr = cm_rn(m, 100);
		uint64_t ver = 0;

		memset(op, 0, sizeof(*op));
		op->tb = tb;
		op->k = k;
		if (rr < 35)
			op->flags = 0;
		else if (rr < 48)
			op->flags = TDBC_IF_ABSENT;
		else if (rr < 60)
			op->flags = TDBC_IF_PRESENT;
		else if (rr < 75 && !cn->ov_in[tb][k])
			op->flags = TDBC_IF_VERSION;
		else if (rr < 90)
			op->del = true;
		else if (!cn->ov_in[tb][k]) {
			op->del = true;
			op->flags = TDBC_IF_VERSION;
		} else {
			op->del = true;
		}
		if (op->del)
			op->flags &= TDBC_IF_VERSION;
		if (op->flags & TDBC_IF_VERSION)
			ver = cm_pick_version(m, tb, k, &op->if_wid);
		if (!op->del)
			cm_random_val(m, op->val, &op->vlen);
		snprintf(what, sizeof(what), "%s %s/%s flags %#x in txn on "
			 "conn %d", op->del ? "DEL" : "PUT", cm_tname[tb], kn,
			 op->flags, ci);
		if (cm_rn(m, 4) == 0) {
			struct tdbc_req rq = { .op = op->del ? TDBC_OP_DEL :
				TDBC_OP_PUT, .table = cn->t[tb], .txn = cn->x,
				.key = kn, .klen = kl, .val = op->val,
				.vlen = op->vlen, .flags = op->flags,
				.version = ver, .user = 15 };
			struct tdbc_cqe cq;

			CMCHECK(m, tdbc_submit(cn->c, &rq, 1) == 1, "submit");
			CMCHECK(m, tdbc_reap(cn->c, &cq, 1, 1, 10000) == 1,
				"reap");
			err = cq.res;
			m->n_async++;
		} else if (op->del) {
			err = op->flags ? tdbc_del_if(cn->t[tb], cn->x, kn, kl,
						      op->flags, ver)
					: tdbc_del(cn->t[tb], cn->x, kn, kl);
		} else {
			err = op->flags ? tdbc_put_if(cn->t[tb], cn->x, kn, kl,
						      op->val, op->vlen,
						      op->flags, ver)
					: tdbc_put(cn->t[tb], cn->x, kn, kl,
						   op->val, op->vlen, 0);
		}
		CMCHECK(m, err == 0, "%s: %s (%s), want 0 (conditions are "
			"checked at commit)", what, h_errname(err),
			tdbc_errmsg(cn->c));
		cn->nops++;
		cn->ov_in[tb][k] = true;
		cn->ov_cond[tb][k] |= op->flags != 0;
		cn->ov[tb][k].present = !op->del;
		cn->ov[tb][k].vlen = op->vlen;
		memcpy(cn->ov[tb][k].val, op->val, op->vlen);
	}
}

/* --- the run ------------------------------------------------------------- */

/* The final check: every key, and a scan of each table, with versions. */
static inline void cm_final(struct cm *m)
{
	struct cm_conn *cn = &m->conn[0];
	int tb, k;

	for (tb = 0; tb < CM_TABLES; tb++) {
		bool seen[CM_KEYS] = { false };
		struct tdbc_scan *s;
		const void *kp, *vp;
		size_t klen, vlen, plen = strlen(m->prefix);
		uint64_t ver;
		int err;

		for (k = 0; k < CM_KEYS; k++)
			cm_check_get(m, (int)(k % CM_CONNS), tb, k, false);
		err = tdbc_scan_open(cn->t[tb], m->prefix, plen, 0, &s);
		CMCHECK(m, err == 0, "scan: %s", h_errname(err));
		while ((err = tdbc_scan_next_ver(s, &kp, &klen, &vp, &vlen,
						 &ver)) == 1) {
			const struct cm_key *key;
			char kn[48];

			const char *kc = kp;

			if (klen != plen + 4 || kc[plen] != ':' ||
			    kc[plen + 1] != 'k' || kc[plen + 2] < '0' ||
			    kc[plen + 2] > '9' || kc[plen + 3] < '0' ||
			    kc[plen + 3] > '9')
				continue;       /* another driver's */
			k = (kc[plen + 2] - '0') * 10 + kc[plen + 3] - '0';
			CMCHECK(m, k >= 0 && k < CM_KEYS && !seen[k] &&
				cm_keyname(m, k, kn) == klen &&
				!memcmp(kn, kp, klen), "scan: key %.*s",
				(int)klen, (const char *)kp);
			seen[k] = true;
			key = &m->key[tb][k];
			CMCHECK(m, key->present && vlen == key->vlen &&
				!memcmp(vp, key->val, vlen), "scan %s: %s "
				"\"%.*s\", want %s", cm_tname[tb], kn,
				(int)vlen, (const char *)vp, key->present ?
				"that value" : "absent");
			CMCHECK(m, ver == m->vers[key->wid], "scan %s: %s "
				"version %" PRIu64 ", GET said %" PRIu64,
				cm_tname[tb], kn, ver, m->vers[key->wid]);
		}
		CMCHECK(m, err == 0, "scan: %s", h_errname(err));
		tdbc_scan_close(s);
		for (k = 0; k < CM_KEYS; k++)
			CMCHECK(m, seen[k] == m->key[tb][k].present, "scan %s: "
				"key %d %s", cm_tname[tb], k, seen[k] ?
				"found, want absent" : "missing");
	}
}

/* Connect the driver's connections (again, after a restart: the old
 * ones are closed first). */
static inline void cm_connect(struct cm *m, cm_connect_fn *connect)
{
	int ci, tb;

	for (ci = 0; ci < CM_CONNS; ci++) {
		struct cm_conn *cn = &m->conn[ci];

		if (cn->c) {
			for (tb = 0; tb < CM_TABLES; tb++)
				tdbc_table_close(cn->t[tb]);
			tdbc_close(cn->c);
		}
		cm_txn_clear(cn);
		cn->c = connect(cm_cflags[ci]);
		for (tb = 0; tb < CM_TABLES; tb++) {
			int err = tdbc_table_open(cn->c, cm_tname[tb],
						  &cn->t[tb]);

			CHECK(err == 0, "open %s: %s", cm_tname[tb],
			      h_errname(err));
		}
	}
}

static inline struct cm *cm_open(cm_connect_fn *connect, uint64_t seed,
				 const char *prefix)
{
	struct cm *m = calloc(1, sizeof(*m));

	CHECK(m, "out of memory");
	m->seed = seed;
	m->rnd = seed * 0x9E3779B97F4A7C15ull + 1;
	m->prefix = prefix;
	cm_connect(m, connect);
	return m;
}

/* `ops` more steps; open transactions are committed at the end. */
static inline void cm_steps(struct cm *m, long ops)
{
	long end = m->step + ops;
	int ci;

	for (; m->step < end; m->step++) {
		ci = (int)cm_rn(m, CM_CONNS);
		if (m->conn[ci].x) {
			cm_in_txn(m, ci);
		} else if (cm_rn(m, 100) < 12) {
			int err;

			cm_txn_clear(&m->conn[ci]);
			err = tdbc_txn_begin(m->conn[ci].c, &m->conn[ci].x);
			CMCHECK(m, err == 0, "begin: %s", h_errname(err));
			m->n_ops++;
		} else {
			cm_alone(m, ci);
		}
	}
	for (ci = 0; ci < CM_CONNS; ci++)
		if (m->conn[ci].x)
			cm_commit(m, ci);
}

static inline void cm_print(struct cm *m)
{
	printf("cond model %s seed %" PRIu64 ": %ld steps, %" PRIu64
	       " ops, %" PRIu64 " commits, %" PRIu64 " stale, %" PRIu64
	       " failed conditions, %" PRIu64 " aborts, CAS %" PRIu64
	       " ok / %" PRIu64 " refused, EDOM %" PRIu64 ", ERANGE %" PRIu64
	       ", %" PRIu64 " via submit, %" PRIu64 " versions learned of %"
	       PRIu64 " writes\n", m->prefix, m->seed, m->step, m->n_ops,
	       m->n_commits, m->n_stale, m->n_condfail, m->n_aborts,
	       m->n_cas_ok, m->n_cas_fail, m->n_edom, m->n_erange,
	       m->n_async, m->n_learned, m->nw);
	fflush(stdout);
	/* the run must have exercised what it claims to */
	if (m->step >= 1000)
		CMCHECK(m, m->n_stale && m->n_condfail && m->n_cas_ok &&
			m->n_cas_fail && m->n_edom && m->n_commits,
			"the run did not exercise every outcome (stale, "
			"failed conditions, CAS both ways, EDOM, commits)");
}

static inline void cm_close(struct cm *m)
{
	int ci, tb;

	for (ci = 0; ci < CM_CONNS; ci++) {
		for (tb = 0; tb < CM_TABLES; tb++)
			tdbc_table_close(m->conn[ci].t[tb]);
		tdbc_close(m->conn[ci].c);
	}
	free(m->vers);
	free(m);
}

/*
 * Run `ops` steps with seed `seed` on keys "<prefix>:kNN" of tables cm_a
 * and cm_b (made by the caller, empty of such keys; prefixes of one
 * length), check everything at the end, print a summary.
 */
static inline void cm_run(cm_connect_fn *connect, uint64_t seed,
			  const char *prefix, long ops)
{
	struct cm *m = cm_open(connect, seed, prefix);

	cm_steps(m, ops);
	cm_final(m);
	cm_print(m);
	cm_close(m);
}

#endif
