// SPDX-License-Identifier: GPL-2.0-only
/*
 * peer_tdb.c - tdb as a tdb-bench-ycsb peer: tdbd (--tdbd, $TDBD or the
 * build tree's) started on a socket in the run's directory with
 * --config /dev/null --sync none (as tdb-bench's peer: the peers do not
 * sync either), one ORDERED table (workload E scans in key order), and
 * every client its own connection with rings and the table's read-only
 * map (libtdbclient, include/tdb/client.h):
 *
 *   read     tdbc_get: a zero-copy lookup in the map, the value copied
 *            into the caller's buffer
 *   insert   tdbc_put (batch 1); batch B: tdbc_submit, up to B writes
 *            in flight, flush() reaps them all; the load keeps 256 in
 *            flight
 *   update   one field: tdbc_get_ver (mapped) of the record and its
 *            version, the field patched, tdbc_put_if(TDBC_IF_VERSION):
 *            a compare-and-swap retried on -ECANCELED, so atomic (no
 *            lost update); batch B: the conditional put submitted, a
 *            conflict redone blocking when its completion comes back.
 *            The whole record (writeallfields): tdbc_put / a submitted
 *            PUT
 *   rmw      the same compare-and-swap, blocking: atomic
 *   scan     tdbc_map_range from the key, zero-copy in the map, each
 *            value's first and last byte read
 */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tdb/client.h>

#include "driver.h"
#include "../common/tdbd.h"

#define TABLE     "usertable"
#define LOAD_PIPE 256u
#define EXTENT    (2u << 20)
#define CAS_TRIES 100000

static struct {
	pid_t pid;
	char bin[PATH_MAX];
	char sock[108];
	char log[4200];
	char data[4200];
	uint32_t extents;
} srv;

static const char *find_tdbd(void)
{
#ifdef TDB_BENCH_TDBD
	const char *built = TDB_BENCH_TDBD;
#else
	const char *built = NULL;
#endif
	return bench_find_tdbd(ycsb_tdbd_path, built, srv.bin,
			       sizeof(srv.bin));
}

/* --- driver ------------------------------------------------------------ */
static int connect_retry(struct tdbc **c, char *msg)
{
	return bench_tdbd_connect(&srv.pid, srv.sock, srv.log, c, msg,
				  YCSB_MSG);
}

static int create_table(struct tdbc *c, const struct ycsb_conf *conf,
			char *msg)
{
	/* every record, the run's inserts, as many again waiting for a
	 * grace period, the index: with room to spare */
	uint64_t recs = conf->recordcount + (uint64_t)(conf->insertproportion *
		(double)conf->operationcount) + 1;
	uint64_t need = recs * (YCSB_KEY_MAX + ycsb_vlen(conf) + 128) * 3;
	uint64_t ext = (need + EXTENT - 1) / EXTENT;
	struct tdbc_table_opts to;
	struct tdbc_table_stat st;
	int err;

	tdbc_table_opts_init(&to);
	to.max_extents = ext < 1024 ? 1024 : ext > 65536 ? 65536 :
		(uint32_t)ext;
	to.flags = TDBC_TABLE_ORDERED;
	srv.extents = to.max_extents;
	err = tdbc_table_create(c, TABLE, &to);
	if (!err)
		err = tdbc_table_stat(c, TABLE, &st);
	if (err) {
		ycsb_msgf(msg, "tdb table %s: %s: %s", TABLE,
			  tdbc_strerror(err), tdbc_errmsg(c));
		return -1;
	}
	if (!(st.flags & TDBC_TABLE_ORDERED)) {
		ycsb_msgf(msg, "tdbd created %s without TDBC_TABLE_ORDERED",
			  TABLE);
		return -1;
	}
	return 0;
}

static int tdb_start(const struct ycsb_conf *c, char *msg)
{
	const char *bin = find_tdbd();
	struct tdbc *cl = NULL;
	int err;

	if (!bin) {
		ycsb_msgf(msg, "no tdbd (give --tdbd PATH or set $TDBD)");
		return 1;
	}
	if (bin != srv.bin)
		snprintf(srv.bin, sizeof(srv.bin), "%s", bin);
	if ((size_t)snprintf(srv.sock, sizeof(srv.sock), "%s/tdbd.sock",
			     c->dir) >= sizeof(srv.sock)) {
		ycsb_msgf(msg, "socket path under %s is too long", c->dir);
		return -1;
	}
	snprintf(srv.log, sizeof(srv.log), "%s/tdbd.log", c->dir);
	snprintf(srv.data, sizeof(srv.data), "%s/tdbd.data", c->dir);
	{
		const char *argv[] = {
			srv.bin, "--config", "/dev/null", "--sync", "none",
			"--socket", srv.sock, "--data-dir", srv.data, NULL,
		};

		srv.pid = ycsb_spawn(argv, srv.log, msg);
	}
	if (srv.pid < 0) {
		srv.pid = 0;
		return -1;
	}
	err = connect_retry(&cl, msg);
	if (!err && !tdbc_uses_rings(cl)) {
		ycsb_msgf(msg, "tdbd gave no rings (see %s)", srv.log);
		err = -1;
	}
	if (!err)
		err = create_table(cl, c, msg);
	if (cl)
		tdbc_close(cl);
	if (err) {
		ycsb_stop_server(srv.pid);
		srv.pid = 0;
		return -1;
	}
	return 0;
}

static void tdb_stop(void)
{
	int st = ycsb_stop_server(srv.pid);

	if (st != 0)
		fprintf(stderr, "tdb-bench-ycsb: tdbd ended with status %d "
			"(log %s)\n", st, srv.log);
	srv.pid = 0;
	if (ycsb_rm_tree(srv.data))
		fprintf(stderr, "tdb-bench-ycsb: could not remove %s\n",
			srv.data);
	unlink(srv.log);
}

static pid_t tdb_server(void)
{
	return srv.pid;
}

static void tdb_describe(const struct ycsb_conf *c, char *buf, size_t len)
{
	const char *bin = find_tdbd();

	(void)c;
	snprintf(buf, len, "%s --config /dev/null --sync none; one ordered "
		 "table; read: tdbc_get in the map; update/rmw: mapped get "
		 "+ tdbc_put_if version (CAS, atomic); insert: tdbc_put (batch "
		 "1) or tdbc_submit; scan: tdbc_map_range (zero-copy)",
		 bin ? bin : "(no tdbd found)");
}

/* --- client ----------------------------------------------------------- */
struct inflight {                       /* a submitted write */
	char key[YCSB_KEY_MAX];
	size_t klen;
	int field;                      /* a CAS of this field, or -1 */
	uint8_t *bytes;                 /* the field's new bytes */
};

struct tdb_h {
	struct tdbc *c;
	struct tdbc_table *t;
	const struct ycsb_conf *conf;
	unsigned int depth;             /* writes kept in flight */
	uint8_t *rec, *vals;            /* a record; depth values */
	struct inflight *fl;
	unsigned int *free_ids, nfree;
	struct tdbc_cqe cqe[LOAD_PIPE];
};

static int fail(struct tdb_h *h, const char *what, int err, char *msg)
{
	ycsb_msgf(msg, "tdb %s: %s%s%s", what, tdbc_strerror(err),
		  *tdbc_errmsg(h->c) ? ": " : "", tdbc_errmsg(h->c));
	return err < 0 ? err : -EIO;
}

static void tdb_close(void *hv)
{
	struct tdb_h *h = hv;

	if (h->t)
		tdbc_table_close(h->t);
	if (h->c)
		tdbc_close(h->c);
	free(h->rec);
	free(h->vals);
	if (h->fl)
		for (unsigned int i = 0; i < h->depth; i++)
			free(h->fl[i].bytes);
	free(h->fl);
	free(h->free_ids);
	free(h);
}

static int alloc_h(struct tdb_h *h, const struct ycsb_conf *c)
{
	size_t vl = ycsb_vlen(c);

	h->rec = malloc(vl);
	h->vals = malloc(vl * h->depth);
	h->fl = calloc(h->depth, sizeof(*h->fl));
	h->free_ids = malloc(h->depth * sizeof(*h->free_ids));
	if (!h->rec || !h->vals || !h->fl || !h->free_ids)
		return -ENOMEM;
	for (unsigned int i = 0; i < h->depth; i++) {
		if (!(h->fl[i].bytes = malloc(c->fieldlength)))
			return -ENOMEM;
		h->free_ids[h->nfree++] = i;
	}
	return 0;
}

static int tdb_open(const struct ycsb_conf *c, unsigned int proc, void **out,
		    char *msg)
{
	struct tdb_h *h = calloc(1, sizeof(*h));
	char why[YCSB_MSG];
	int err;

	(void)proc;
	if (!h) {
		ycsb_msgf(msg, "out of memory");
		return -ENOMEM;
	}
	h->conf = c;
	h->depth = c->loading ? LOAD_PIPE : c->batch > LOAD_PIPE ? LOAD_PIPE :
		c->batch;
	if (alloc_h(h, c)) {
		tdb_close(h);
		ycsb_msgf(msg, "out of memory");
		return -ENOMEM;
	}
	err = tdbc_connect(&h->c, srv.sock, 0, why, sizeof(why));
	if (err) {
		ycsb_msgf(msg, "tdbc_connect %s: %s", srv.sock, why);
		tdb_close(h);
		return err;
	}
	err = tdbc_table_open(h->c, TABLE, &h->t);
	if (err) {
		fail(h, "table open", err, msg);
		tdb_close(h);
		return err;
	}
	if (!tdbc_uses_rings(h->c) || !tdbc_table_mapped(h->t)) {
		ycsb_msgf(msg, "tdbd gave no rings or no map of %s", TABLE);
		tdb_close(h);
		return -EPROTO;
	}
	*out = h;
	return 0;
}

/* The CAS loop: the record and its version from the map, field patched,
 * written if still at that version. */
static int cas_field(struct tdb_h *h, const char *key, size_t klen,
		     int field, const void *bytes, size_t len, char *msg)
{
	size_t vl = ycsb_vlen(h->conf), need = 0;

	for (int i = 0; i < CAS_TRIES; i++) {
		uint64_t ver = 0;
		long n = tdbc_get_ver(h->t, NULL, key, klen, h->rec, vl, &need,
				      &ver);
		int err;

		if (n < 0)
			return fail(h, "get (for an update)", (int)n, msg);
		if ((size_t)n != vl) {
			ycsb_msgf(msg, "tdb: the record has %ld bytes, not %zu",
				  n, vl);
			return -EIO;
		}
		memcpy(h->rec + (size_t)field * h->conf->fieldlength, bytes,
		       len);
		err = tdbc_put_if(h->t, NULL, key, klen, h->rec, vl,
				  TDBC_IF_VERSION, ver);
		if (err != -ECANCELED)
			return err ? fail(h, "put_if version", err, msg) : 0;
	}
	ycsb_msgf(msg, "tdb: %d version conflicts in a row", CAS_TRIES);
	return -EAGAIN;
}

/* Reap at least min completions; a conflicted CAS is redone blocking. */
static int reap(struct tdb_h *h, unsigned int min, char *msg)
{
	int r = tdbc_reap(h->c, h->cqe, LOAD_PIPE, min, -1);

	if (r < 0)
		return fail(h, "reap", r, msg);
	for (int i = 0; i < r; i++) {
		unsigned int id = (unsigned int)h->cqe[i].user;
		struct inflight *f = &h->fl[id];
		int err = h->cqe[i].res;

		if (err == -ECANCELED && f->field >= 0)
			err = cas_field(h, f->key, f->klen, f->field,
					f->bytes, h->conf->fieldlength, msg);
		else if (err)
			err = fail(h, "submitted write", err, msg);
		h->free_ids[h->nfree++] = id;
		if (err)
			return err;
	}
	return 0;
}

/* A write submitted; field >= 0: a CAS at version ver. */
static int submit(struct tdb_h *h, const char *key, size_t klen,
		  const void *val, int field, const void *bytes,
		  uint64_t ver, char *msg)
{
	size_t vl = ycsb_vlen(h->conf);
	struct tdbc_req q;
	unsigned int id;
	int err;

	while (!h->nfree)
		if ((err = reap(h, 1, msg)))
			return err;
	id = h->free_ids[--h->nfree];
	memcpy(h->fl[id].key, key, klen);
	h->fl[id].klen = klen;
	h->fl[id].field = field;
	if (field >= 0)
		memcpy(h->fl[id].bytes, bytes, h->conf->fieldlength);
	q = (struct tdbc_req){
		.op = TDBC_OP_PUT, .table = h->t, .key = key, .klen = klen,
		.val = val, .vlen = vl, .user = id,
		.flags = field >= 0 ? TDBC_IF_VERSION : 0, .version = ver,
	};
	for (;;) {
		int r = tdbc_submit(h->c, &q, 1);

		if (r == 1)
			return 0;
		if (r < 0 && r != -EAGAIN) {
			h->free_ids[h->nfree++] = id;
			return fail(h, "submit", r, msg);
		}
		if ((err = reap(h, 1, msg)))
			return err;
	}
}

static int tdb_insert(void *hv, const char *key, size_t klen, const void *val,
		      size_t vlen, char *msg)
{
	struct tdb_h *h = hv;
	int err;

	if (h->depth > 1)
		return submit(h, key, klen, val, -1, NULL, 0, msg);
	err = tdbc_put(h->t, NULL, key, klen, val, vlen, 0);
	return err ? fail(h, "put", err, msg) : 0;
}

static int tdb_read(void *hv, const char *key, size_t klen, void *out,
		    size_t vlen, char *msg)
{
	struct tdb_h *h = hv;
	size_t need = 0;
	long n = tdbc_get(h->t, NULL, key, klen, out, vlen, &need);

	if (n < 0)
		return fail(h, "get", (int)n, msg);
	if ((size_t)n != vlen) {
		ycsb_msgf(msg, "tdb get: %ld bytes, not %zu", n, vlen);
		return -EIO;
	}
	return 0;
}

static int tdb_update(void *hv, const char *key, size_t klen, int field,
		      const void *bytes, size_t len, char *msg)
{
	struct tdb_h *h = hv;
	size_t vl = ycsb_vlen(h->conf), need = 0;
	uint64_t ver = 0;
	uint8_t *v;
	long n;

	if (field < 0)
		return tdb_insert(h, key, klen, bytes, len, msg);
	if (h->depth <= 1)
		return cas_field(h, key, klen, field, bytes, len, msg);
	/* batch: the record read now, the conditional put in flight */
	v = h->vals;            /* submit copies the value */
	n = tdbc_get_ver(h->t, NULL, key, klen, v, vl, &need, &ver);
	if (n < 0)
		return fail(h, "get (for an update)", (int)n, msg);
	memcpy(v + (size_t)field * h->conf->fieldlength, bytes, len);
	return submit(h, key, klen, v, field, bytes, ver, msg);
}

static int tdb_rmw(void *hv, const char *key, size_t klen, int field,
		   const void *bytes, size_t len, char *msg)
{
	struct tdb_h *h = hv;

	if (field < 0) {        /* writeallfields: read, then the record */
		size_t need = 0;
		long n = tdbc_get(h->t, NULL, key, klen, h->rec,
				  ycsb_vlen(h->conf), &need);

		if (n < 0)
			return fail(h, "get (rmw)", (int)n, msg);
		return tdb_insert(h, key, klen, bytes, len, msg);
	}
	return cas_field(h, key, klen, field, bytes, len, msg);
}

struct scan_st {
	unsigned int got;
	unsigned int sum;
};

static int scan_rec(void *arg, const void *key, size_t klen, const void *val,
		    size_t vlen, uint64_t version)
{
	struct scan_st *s = arg;
	const uint8_t *v = val;

	(void)key, (void)klen, (void)version;
	if (vlen)
		s->sum += v[0] + v[vlen - 1];
	s->got++;
	return 0;
}

static volatile unsigned int scan_sink;

static int tdb_scan(void *hv, const char *key, size_t klen,
		    unsigned int count, unsigned int *got, char *msg)
{
	struct tdb_h *h = hv;
	struct tdbc_range r = { .from = key, .from_len = klen };
	struct scan_st s = { 0, 0 };
	int rc = tdbc_map_range(h->t, &r, count, scan_rec, &s);

	*got = s.got;
	scan_sink = s.sum;
	return rc ? fail(h, "map_range", rc, msg) : 0;
}

static int tdb_flush(void *hv, char *msg)
{
	struct tdb_h *h = hv;
	unsigned int n;

	while ((n = tdbc_inflight(h->c)) > 0) {
		int err = reap(h, n < LOAD_PIPE ? n : LOAD_PIPE, msg);

		if (err)
			return err;
	}
	return 0;
}

const struct ycsb_peer ycsb_tdb = {
	.name = "tdb",
	.start = tdb_start, .stop = tdb_stop, .server = tdb_server,
	.describe = tdb_describe, .open = tdb_open, .insert = tdb_insert,
	.read = tdb_read, .update = tdb_update, .scan = tdb_scan,
	.rmw = tdb_rmw, .flush = tdb_flush, .close = tdb_close,
};
