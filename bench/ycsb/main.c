// SPDX-License-Identifier: GPL-2.0-only
/*
 * main.c - tdb-bench-ycsb's driver: YCSB's workloads A-F (or any YCSB
 * property file) against tdb and its peers, with YCSB's command line
 * (-load, -t, -P, -p, -threads).  For each system, in an order rotating
 * between runs: start() (an empty store), the load phase (recordcount
 * inserts spread over the clients), the run phase (operationcount
 * operations drawn by the proportions, the same seeds and so the same
 * key streams for every system), stop().  Clients are processes (or one
 * process's threads for a peer with threads_only) that open their own
 * handle, meet at a barrier, and write their latencies into log-bucketed
 * histograms in shared memory, merged by the driver.  Any error of any
 * operation fails the cell and is printed with its message.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../common/csv.h"
#include "../common/machine.h"
#include "driver.h"

#define RUNS_MAX  15u
#define SYS_MAX   8u
#define HSUB      16u                   /* sub-buckets per power of 2 */
#define HBUCKETS  (HSUB + 44u * HSUB)   /* up to 2^48 ns */

/* --- the peers built in ----------------------------------------------- */
static const struct ycsb_peer *const all_peers[] = {
	&ycsb_tdb, &ycsb_lmdb,
#ifdef YCSB_HAVE_ROCKSDB
	&ycsb_rocksdb,
#endif
#ifdef YCSB_HAVE_REDIS
	&ycsb_redis, &ycsb_redis_pipelined,
#endif
};
#define NPEERS (sizeof(all_peers) / sizeof(*all_peers))

/* --- what the clients share -------------------------------------------- */
struct opstat {
	uint64_t count;
	uint64_t hist[HBUCKETS];        /* latencies, ns, log-bucketed */
};
struct slot {                           /* one client's */
	double t0, t1;                  /* its first op's start, last end */
	struct opstat op[YCSB_OPS];
	int failed;
	char msg[YCSB_MSG];
};
struct shared {
	_Atomic unsigned int ready;
	_Atomic int go;
	struct ycsb_counter ins;        /* the run phase's insert keys */
	struct slot slot[YCSB_PROCS_MAX];
};

enum phase { LOAD, RUN };

/* One cell's figures: a system, one run. */
struct result {
	int state;                      /* 0 ok, 1 skipped, -1 failed */
	char msg[YCSB_MSG];
	double load_ops, run_ops, srv_cpu;
	uint64_t count[YCSB_OPS];
	double p50[YCSB_OPS], p99[YCSB_OPS], p999[YCSB_OPS];    /* us */
};

struct options {
	bool load, run, strict, selftest;
	unsigned int runs;
	uint64_t seed;
	const char *systems, *csv, *dir;
	const struct ycsb_peer *sys[SYS_MAX];
	unsigned int nsys;
};

/* --- histograms ----------------------------------------------------------- */
static unsigned int bucket_of(uint64_t ns)
{
	unsigned int msb, b;

	if (ns < HSUB)
		return (unsigned int)ns;
	msb = 63u - (unsigned int)__builtin_clzll(ns);
	b = HSUB + (msb - 4u) * HSUB + (unsigned int)((ns >> (msb - 4)) &
						      (HSUB - 1));
	return b < HBUCKETS ? b : HBUCKETS - 1;
}

/* The middle of bucket b, in ns. */
static double bucket_mid(unsigned int b)
{
	unsigned int msb, sub;
	double lo, width;

	if (b < HSUB)
		return b;
	msb = (b - HSUB) / HSUB + 4;
	sub = (b - HSUB) % HSUB;
	width = (double)(1ull << (msb - 4));
	lo = (double)(1ull << msb) + sub * width;
	return lo + width / 2;
}

static double percentile(const uint64_t *h, uint64_t n, double q)
{
	uint64_t want = (uint64_t)((double)n * q), seen = 0;

	for (unsigned int b = 0; b < HBUCKETS; b++) {
		seen += h[b];
		if (seen > want)
			return bucket_mid(b);
	}
	return 0;
}

/* --- records ----------------------------------------------------------------
 * Field f of key number n, generation g: n (8 bytes, as far as the field
 * holds them), f, then a filler byte of g and f.  A read checks each
 * field's n and f: the record is the key's, and whole fields. */
static void field_make(const struct ycsb_conf *c, uint64_t n, unsigned int f,
		       unsigned int g, uint8_t *out)
{
	uint8_t head[9];
	size_t h = c->fieldlength < sizeof(head) ? c->fieldlength :
		sizeof(head);

	memcpy(head, &n, 8);
	head[8] = (uint8_t)f;
	memcpy(out, head, h);
	memset(out + h, 'a' + (int)((g + f) % 26), c->fieldlength - h);
}

static void value_make(const struct ycsb_conf *c, uint64_t n, unsigned int g,
		       uint8_t *out)
{
	for (unsigned int f = 0; f < c->fieldcount; f++)
		field_make(c, n, f, g, out + (size_t)f * c->fieldlength);
}

static int value_check(const struct ycsb_conf *c, uint64_t n,
		       const uint8_t *v, char *msg)
{
	uint8_t want[9];
	size_t h = c->fieldlength < sizeof(want) ? c->fieldlength :
		sizeof(want);

	memcpy(want, &n, 8);
	for (unsigned int f = 0; f < c->fieldcount; f++) {
		want[8] = (uint8_t)f;
		if (memcmp(v + (size_t)f * c->fieldlength, want, h)) {
			ycsb_msgf(msg, "read of key number %" PRIu64 ": field "
				  "%u is not the record's (wrong record or a "
				  "torn field)", n, f);
			return -1;
		}
	}
	return 0;
}

/* --- one client ------------------------------------------------------------ */
struct client {
	const struct ycsb_peer *p;
	const struct ycsb_conf *c;
	struct shared *sh;
	unsigned int proc;
	enum phase phase;
	uint64_t seed;
	struct slot *s;
	void *h;
	uint8_t *val, *rbuf;
	struct ycsb_chooser *ch;        /* the run phase's key chooser */
	struct ycsb_discrete mix;       /* its operations */
	struct ycsb_rng rng;
	uint64_t pending[1024];         /* run-phase inserts not acked */
	unsigned int npending;
};

static uint64_t ns_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void record(struct client *k, enum ycsb_op op, uint64_t t0)
{
	struct opstat *o = &k->s->op[op];

	o->count++;
	o->hist[bucket_of(ns_now() - t0)]++;
}

static int op_fail(struct client *k, enum ycsb_op op, uint64_t n,
		   int rc, const char *why)
{
	char key[YCSB_KEY_MAX + 1];
	size_t kl = ycsb_key(k->c, n, key);

	key[kl] = 0;
	snprintf(k->s->msg, sizeof(k->s->msg), "client %u, %s %s (key "
		 "number %" PRIu64 "): %s%s%s", k->proc, ycsb_op_name[op], key,
		 n, rc < 0 ? strerror(-rc) : "", rc < 0 && *why ? ": " : "",
		 why);
	return -1;
}

/* Run-phase inserts past the peer's flush: now readable by everyone. */
static int ack_pending(struct client *k, char *msg)
{
	int rc = k->npending ? k->p->flush(k->h, msg) : 0;

	if (rc)
		return op_fail(k, YCSB_INSERT, k->pending[0], rc, msg);
	for (unsigned int i = 0; i < k->npending; i++)
		if (ycsb_counter_ack(&k->sh->ins, k->pending[i]))
			return op_fail(k, YCSB_INSERT, k->pending[i], 0,
				       "more than 2^20 inserts unacknowledged");
	k->npending = 0;
	return 0;
}

static int do_insert(struct client *k, uint64_t n, char *msg)
{
	char key[YCSB_KEY_MAX];
	size_t kl = ycsb_key(k->c, n, key);
	size_t vl = ycsb_vlen(k->c);
	uint64_t t0;
	int rc;

	value_make(k->c, n, 0, k->val);
	t0 = ns_now();
	rc = k->p->insert(k->h, key, kl, k->val, vl, msg);
	record(k, YCSB_INSERT, t0);
	if (rc)
		return op_fail(k, YCSB_INSERT, n, rc, msg);
	return 0;
}

static int do_op(struct client *k, enum ycsb_op op, struct ycsb_chooser *ch,
		 struct ycsb_rng *r, char *msg)
{
	const struct ycsb_conf *c = k->c;
	char key[YCSB_KEY_MAX];
	uint64_t n, t0;
	size_t kl;
	unsigned int len = 0, got = 0;
	int field = -1, rc;

	if (op == YCSB_INSERT) {
		n = (uint64_t)ycsb_counter_next(&k->sh->ins);
		if (do_insert(k, n, msg))
			return -1;
		if (c->batch <= 1)
			return ycsb_counter_ack(&k->sh->ins, (int64_t)n) ?
				op_fail(k, op, n, 0, "more than 2^20 inserts "
					"unacknowledged") : 0;
		k->pending[k->npending++] = n;
		return k->npending >= c->batch ? ack_pending(k, msg) : 0;
	}
	n = (uint64_t)ycsb_chooser_key(ch, r);
	kl = ycsb_key(c, n, key);
	if (op == YCSB_SCAN)
		len = ycsb_chooser_scanlen(ch, c, r);
	if ((op == YCSB_UPDATE || op == YCSB_RMW) && !c->writeallfields) {
		field = (int)ycsb_uniform(r, 0, c->fieldcount - 1);
		field_make(c, n, (unsigned int)field, 1, k->val);
	} else if (op == YCSB_UPDATE || op == YCSB_RMW) {
		value_make(c, n, 1, k->val);
	}
	t0 = ns_now();
	switch (op) {
	case YCSB_READ:
		rc = k->p->read(k->h, key, kl, k->rbuf, ycsb_vlen(c), msg);
		break;
	case YCSB_UPDATE:
		rc = k->p->update(k->h, key, kl, field, k->val, field < 0 ?
				  ycsb_vlen(c) : c->fieldlength, msg);
		break;
	case YCSB_SCAN:
		rc = k->p->scan(k->h, key, kl, len, &got, msg);
		break;
	default:
		rc = k->p->rmw(k->h, key, kl, field, k->val, field < 0 ?
			       ycsb_vlen(c) : c->fieldlength, msg);
		break;
	}
	record(k, op, t0);
	if (rc)
		return op_fail(k, op, n, rc, msg);
	if (op == YCSB_READ && value_check(c, n, k->rbuf, msg))
		return op_fail(k, op, n, 0, msg);
	if (op == YCSB_SCAN && (got < 1 || got > len)) {
		ycsb_msgf(msg, "scan of %u records from a present key gave %u",
			  len, got);
		return op_fail(k, op, n, 0, msg);
	}
	return 0;
}

/* This client's share of n things: [*from, *to). */
static void share(uint64_t n, unsigned int procs, unsigned int p,
		  uint64_t *from, uint64_t *to)
{
	*from = n * p / procs;
	*to = n * (p + 1) / procs;
}

static int client_ops(struct client *k, char *msg)
{
	const struct ycsb_conf *c = k->c;
	uint64_t from, to;

	share(k->phase == LOAD ? c->recordcount : c->operationcount,
	      c->threads, k->proc, &from, &to);
	if (k->phase == LOAD) {
		for (uint64_t n = from; n < to; n++)
			if (do_insert(k, n, msg))
				return -1;
	} else {
		for (uint64_t i = from; i < to; i++)
			if (do_op(k, ycsb_discrete_next(&k->mix, &k->rng),
				  k->ch, &k->rng, msg))
				return -1;
		if (ack_pending(k, msg))
			return -1;
	}
	if (k->p->flush(k->h, msg)) {
		snprintf(k->s->msg, sizeof(k->s->msg), "client %u: flush at "
			 "the end: %s", k->proc, msg);
		return -1;
	}
	return 0;
}

static int client_run(struct client *k)
{
	char msg[YCSB_MSG] = "";
	int rc;

	k->val = malloc(ycsb_vlen(k->c));
	k->rbuf = malloc(ycsb_vlen(k->c));
	k->ch = malloc(sizeof(*k->ch));
	if (!k->val || !k->rbuf || !k->ch) {
		ycsb_msgf(k->s->msg, "client %u: out of memory", k->proc);
		k->s->failed = 1;
		atomic_fetch_add(&k->sh->ready, 1);
		free(k->val);
		free(k->rbuf);
		free(k->ch);
		return -1;
	}
	/* The generators before the barrier: latest's zeta over the
	 * records is not timed. */
	ycsb_rng_seed(&k->rng, k->seed * 0x100000001b3ull + k->proc);
	ycsb_discrete_init(&k->mix, k->c);
	if (k->phase == RUN)
		ycsb_chooser_init(k->ch, k->c, &k->sh->ins, k->proc);
	rc = k->p->open(k->c, k->proc, &k->h, msg);
	if (rc) {
		ycsb_msgf(k->s->msg, "client %u: open: %s", k->proc, msg);
		k->s->failed = 1;
	}
	atomic_fetch_add(&k->sh->ready, 1);
	while (!atomic_load(&k->sh->go))
		usleep(100);
	if (!rc && atomic_load(&k->sh->go) > 0) {
		k->s->t0 = ycsb_now();
		rc = client_ops(k, msg);
		k->s->t1 = ycsb_now();
		k->s->failed = rc != 0;
	}
	if (k->h)
		k->p->close(k->h);
	free(k->val);
	free(k->rbuf);
	free(k->ch);
	return rc;
}

static void *client_thread(void *arg)
{
	client_run(arg);
	return NULL;
}

/* --- one phase of one system ------------------------------------------------ */
static void release(struct shared *sh, unsigned int procs)
{
	int bad = 0;

	while (atomic_load(&sh->ready) < procs)
		usleep(200);
	for (unsigned int i = 0; i < procs; i++)
		bad |= sh->slot[i].failed;
	atomic_store(&sh->go, bad ? -1 : 1);    /* -1: all stop */
}

static int phase_threads(struct client *k,
			 unsigned int procs, struct shared *sh)
{
	pthread_t t[YCSB_PROCS_MAX];
	unsigned int started = 0;

	for (; started < procs; started++)
		if (pthread_create(&t[started], NULL, client_thread,
				   &k[started]))
			break;
	if (started < procs) {
		ycsb_msgf(sh->slot[started].msg, "pthread_create failed");
		sh->slot[started].failed = 1;
		atomic_fetch_add(&sh->ready, procs - started);
	}
	release(sh, procs);
	for (unsigned int i = 0; i < started; i++)
		pthread_join(t[i], NULL);
	return 0;
}

static int phase_procs(struct client *k, unsigned int procs,
		       struct shared *sh)
{
	pid_t pid[YCSB_PROCS_MAX];
	unsigned int started = 0;
	int st;

	fflush(NULL);
	for (; started < procs; started++) {
		pid[started] = fork();
		if (pid[started] < 0)
			break;
		if (pid[started] == 0)
			_exit(client_run(&k[started]) ? 1 : 0);
	}
	if (started < procs) {
		ycsb_msgf(sh->slot[started].msg, "fork: %s", strerror(errno));
		sh->slot[started].failed = 1;
		atomic_fetch_add(&sh->ready, procs - started);
	}
	release(sh, procs);
	for (unsigned int i = 0; i < started; i++) {
		if (waitpid(pid[i], &st, 0) == pid[i] && !WIFEXITED(st) &&
		    !sh->slot[i].failed) {
			ycsb_msgf(sh->slot[i].msg, "client %u died (signal "
				  "%d)", i, WIFSIGNALED(st) ? WTERMSIG(st) : 0);
			sh->slot[i].failed = 1;
		}
	}
	return 0;
}

/* Merge the slots into r; the phase's ops/s, or -1 if a client failed. */
static double merge(struct shared *sh, const struct ycsb_conf *c,
		    enum phase ph, struct result *r)
{
	double t0 = 1e300, t1 = 0;
	uint64_t ops = 0;

	for (unsigned int i = 0; i < c->threads; i++) {
		struct slot *s = &sh->slot[i];

		if (s->failed) {
			snprintf(r->msg, sizeof(r->msg), "%s phase: %s",
				 ph == LOAD ? "load" : "run", s->msg);
			return -1;
		}
		t0 = s->t0 < t0 ? s->t0 : t0;
		t1 = s->t1 > t1 ? s->t1 : t1;
		for (int o = 0; o < YCSB_OPS; o++)
			ops += s->op[o].count;
	}
	if (ph == RUN) {
		static struct opstat all;       /* driver only */

		for (int o = 0; o < YCSB_OPS; o++) {
			memset(&all, 0, sizeof(all));
			for (unsigned int i = 0; i < c->threads; i++) {
				all.count += sh->slot[i].op[o].count;
				for (unsigned int b = 0; b < HBUCKETS; b++)
					all.hist[b] += sh->slot[i].op[o].hist[b];
			}
			r->count[o] = all.count;
			r->p50[o] = percentile(all.hist, all.count, 0.5) / 1e3;
			r->p99[o] = percentile(all.hist, all.count, 0.99) / 1e3;
			r->p999[o] = percentile(all.hist, all.count, 0.999) /
				1e3;
		}
	}
	return t1 > t0 ? (double)ops / (t1 - t0) : 0;
}

static double phase(const struct ycsb_peer *p, const struct ycsb_conf *conf,
		    struct shared *sh, enum phase ph, uint64_t seed,
		    struct result *r)
{
	static struct client k[YCSB_PROCS_MAX];
	struct ycsb_conf c = *conf;

	c.loading = ph == LOAD;
	memset(sh->slot, 0, sizeof(sh->slot));
	atomic_store(&sh->ready, 0);
	atomic_store(&sh->go, 0);
	ycsb_counter_init(&sh->ins, (int64_t)c.recordcount);
	for (unsigned int i = 0; i < c.threads; i++)
		k[i] = (struct client){ .p = p, .c = &c, .sh = sh, .proc = i,
					.phase = ph, .seed = seed,
					.s = &sh->slot[i] };
	if (p->threads_only)
		phase_threads(k, c.threads, sh);
	else
		phase_procs(k, c.threads, sh);
	return merge(sh, &c, ph, r);
}

static void cell(const struct ycsb_peer *p, const struct ycsb_conf *c,
		 const struct options *o, struct shared *sh, struct result *r)
{
	char msg[YCSB_MSG] = "";
	double cpu0 = 0;
	pid_t srv;
	int rc;

	memset(r, 0, sizeof(*r));
	fprintf(stderr, "  %s: ", p->name);
	rc = p->start(c, msg);
	if (rc) {
		r->state = rc > 0 ? 1 : -1;
		snprintf(r->msg, sizeof(r->msg), "start: %s", msg);
		fprintf(stderr, "%s\n", rc > 0 ? "skipped" : "FAILED");
		return;
	}
	/* The load is always done: every store starts empty. */
	r->load_ops = phase(p, c, sh, LOAD, o->seed, r);
	if (r->load_ops >= 0 && o->run) {
		srv = p->server ? p->server() : 0;
		cpu0 = srv > 0 ? ycsb_proc_cpu(srv) : 0;
		r->run_ops = phase(p, c, sh, RUN, o->seed, r);
		r->srv_cpu = srv > 0 && cpu0 >= 0 ?
			ycsb_proc_cpu(srv) - cpu0 : -1;
	}
	p->stop();
	r->state = r->load_ops < 0 || r->run_ops < 0 ? -1 : 0;
	if (r->state)
		fprintf(stderr, "FAILED: %s\n", r->msg);
	else
		fprintf(stderr, "load %.0f ops/s, run %.0f ops/s\n",
			r->load_ops, r->run_ops);
}

/* --- the report ------------------------------------------------------------- */
static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The median of the runs' figure; the run whose run ops/s is the median
 * gives the latencies (*at). */
static double median(const struct result *r, unsigned int runs, bool load,
		     unsigned int *at)
{
	double v[RUNS_MAX], m;

	for (unsigned int i = 0; i < runs; i++)
		v[i] = load ? r[i].load_ops : r[i].run_ops;
	qsort(v, runs, sizeof(double), cmp_double);
	m = v[(runs - 1) / 2];
	for (unsigned int i = 0; at && i < runs; i++)
		if ((load ? r[i].load_ops : r[i].run_ops) == m)
			*at = i;
	return m;
}

static void csv_name(const char *name, char *out, size_t len)
{
	size_t i = 0;

	for (; name[i] && i + 1 < len; i++)
		out[i] = name[i] == ' ' ? '-' : (char)tolower(name[i]);
	out[i] = 0;
}

static const char *wl_name(const struct ycsb_conf *c)
{
	const char *s = strrchr(c->workload, '/');

	return s ? s + 1 : c->workload;
}

struct figs {
	double load, run;
	const struct result *lat;       /* the median run's */
	int state;
	const char *msg;
};

static void figures(struct result (*res)[RUNS_MAX], unsigned int i,
		    unsigned int runs, struct figs *f)
{
	unsigned int at = 0;

	f->state = 0;
	f->msg = "";
	for (unsigned int r = 0; r < runs; r++)
		if (res[i][r].state) {
			f->state = res[i][r].state;
			f->msg = res[i][r].msg;
			return;
		}
	f->load = median(res[i], runs, true, NULL);
	f->run = median(res[i], runs, false, &at);
	f->lat = &res[i][at];
}

static void print_row(const struct ycsb_peer *p, const struct ycsb_conf *c,
		      const struct figs *f, const struct options *o,
		      FILE *csv)
{
	char sys[64], param[16], what[64];

	csv_name(p->name, sys, sizeof(sys));
	snprintf(param, sizeof(param), "%u", c->threads);
	if (f->state) {
		printf("%-16s %5u  %s: %s\n", p->name, c->threads,
		       f->state > 0 ? "skipped" : "FAILED", f->msg);
		return;
	}
	printf("%-16s %5u %11.0f %11.0f", p->name, c->threads, f->load,
	       o->run ? f->run : 0);
	for (int op = 0; op < YCSB_OPS; op++)
		if (f->lat->count[op])
			printf("  %s %.1f/%.1f/%.1f", ycsb_op_name[op],
			       f->lat->p50[op], f->lat->p99[op],
			       f->lat->p999[op]);
	if (f->lat->srv_cpu > 0)
		printf("  server CPU %.2f s", f->lat->srv_cpu);
	printf("\n");
	snprintf(what, sizeof(what), "%s load", wl_name(c));
	bench_csv_row(csv, "ycsb", sys, NULL, what, param, f->load, "ops/s",
		      -1);
	if (!o->run)
		return;
	snprintf(what, sizeof(what), "%s run", wl_name(c));
	bench_csv_row(csv, "ycsb", sys, NULL, what, param, f->run, "ops/s",
		      -1);
	for (int op = 0; op < YCSB_OPS; op++) {
		if (!f->lat->count[op])
			continue;
		snprintf(what, sizeof(what), "%s %s p50", wl_name(c),
			 ycsb_op_name[op]);
		bench_csv_row(csv, "ycsb", sys, NULL, what, param,
			      f->lat->p50[op], "us", -1);
		snprintf(what, sizeof(what), "%s %s p99", wl_name(c),
			 ycsb_op_name[op]);
		bench_csv_row(csv, "ycsb", sys, NULL, what, param,
			      f->lat->p99[op], "us", -1);
		snprintf(what, sizeof(what), "%s %s p99.9", wl_name(c),
			 ycsb_op_name[op]);
		bench_csv_row(csv, "ycsb", sys, NULL, what, param,
			      f->lat->p999[op], "us", -1);
	}
}

/* tdb against a peer: throughput (above 1: tdb does more) and p50
 * latency per op (above 1: tdb takes less). */
static void print_ratio(const struct ycsb_peer *p, const struct ycsb_conf *c,
			const struct figs *t, const struct figs *f,
			const struct options *o, FILE *csv)
{
	char sys[64], param[16], what[64];

	if (t->state || f->state || f->load <= 0)
		return;
	csv_name(p->name, sys, sizeof(sys));
	snprintf(param, sizeof(param), "%u", c->threads);
	printf("ratio tdb/%-10s %5u %10.2fx", p->name, c->threads,
	       t->load / f->load);
	snprintf(what, sizeof(what), "%s load", wl_name(c));
	bench_csv_row(csv, "ycsb", "tdb", sys, what, param, t->load, "ops/s",
		      t->load / f->load);
	if (o->run && f->run > 0) {
		printf(" %10.2fx", t->run / f->run);
		snprintf(what, sizeof(what), "%s run", wl_name(c));
		bench_csv_row(csv, "ycsb", "tdb", sys, what, param, t->run,
			      "ops/s", t->run / f->run);
		for (int op = 0; op < YCSB_OPS; op++)
			if (t->lat->count[op] && t->lat->p50[op] > 0)
				printf("  %s p50 %.2fx", ycsb_op_name[op],
				       f->lat->p50[op] / t->lat->p50[op]);
	}
	printf("\n");
}

static void report(const struct ycsb_conf *c, const struct options *o,
		   struct result (*res)[RUNS_MAX], FILE *csv)
{
	struct figs f[SYS_MAX];
	int tdb = -1;

	printf("\nYCSB %s: recordcount=%" PRIu64 " operationcount=%" PRIu64
	       " fields %ux%u B, %s requests, read/update/insert/scan/rmw "
	       "%.2f/%.2f/%.2f/%.2f/%.2f, scans %u..%u (%s), batch %u; "
	       "median of %u run%s\n", wl_name(c), c->recordcount,
	       c->operationcount, c->fieldcount, c->fieldlength,
	       ycsb_dist_name(c->requestdistribution), c->readproportion,
	       c->updateproportion, c->insertproportion, c->scanproportion,
	       c->readmodifywriteproportion, c->minscanlength,
	       c->maxscanlength, ycsb_dist_name(c->scanlengthdistribution),
	       c->batch, o->runs, o->runs > 1 ? "s" : "");
	printf("%-16s %5s %11s %11s  op p50/p99/p99.9 us\n", "system",
	       "procs", "load ops/s", "run ops/s");
	for (unsigned int i = 0; i < o->nsys; i++) {
		figures(res, i, o->runs, &f[i]);
		print_row(o->sys[i], c, &f[i], o, csv);
		if (o->sys[i] == &ycsb_tdb)
			tdb = (int)i;
	}
	if (tdb < 0)
		return;
	printf("%-16s %5s %11s %11s  (above 1: tdb better)\n", "", "procs",
	       "load", "run");
	for (unsigned int i = 0; i < o->nsys; i++)
		if ((int)i != tdb)
			print_ratio(o->sys[i], c, &f[tdb], &f[i], o, csv);
}

static void describe(const struct ycsb_conf *c, const struct options *o)
{
	char buf[2048], cpu[128];
	double la[3];

	cpu_model(cpu, sizeof(cpu));
	printf("machine: %s, %ld CPUs", cpu, sysconf(_SC_NPROCESSORS_ONLN));
	if (getloadavg(la, 3) == 3)
		printf("; load average at the start %.2f %.2f %.2f", la[0],
		       la[1], la[2]);
	printf("\n");
	for (unsigned int i = 0; i < o->nsys; i++) {
		buf[0] = 0;
		o->sys[i]->describe(c, buf, sizeof(buf));
		printf("  %-16s %s%s\n", o->sys[i]->name, buf,
		       o->sys[i]->threads_only ? " [clients: threads of one "
		       "process]" : "");
	}
}

/* --- options ---------------------------------------------------------------- */
static void usage(FILE *f)
{
	fprintf(f,
"usage: tdb-bench-ycsb [-load] [-t] -P FILE [-P FILE...] [-p NAME=VALUE...]\n"
"                      [-threads N] [--systems LIST] [--runs R] [--csv FILE]\n"
"                      [--tdbd PATH] [--dir DIR] [--seed S] [--strict]\n"
"       tdb-bench-ycsb --selftest\n"
"YCSB's workloads (bench/ycsb/workloads/workloada..f, or your own property\n"
"files) against tdb and its peers.  Default: both phases (the load is done\n"
"anyway: every store starts empty; -load alone reports only it), every\n"
"system built in, in one run.  -threads N: client processes.  --systems:\n"
"a comma list of");
	for (size_t i = 0; i < NPEERS; i++)
		fprintf(f, " %s", all_peers[i]->name);
	fprintf(f, ".\n"
"--runs R: R runs, the systems' order rotating, medians reported.  --strict:\n"
"exit 77 if a system is not installed.  Properties beyond YCSB's: batch\n"
"(writes a client may keep in flight, tdb.batch and redis.pipeline the\n"
"same), zipfianconstant (latest and zipfian scan lengths).\n");
}

static bool name_is(const char *name, const char *want, size_t len)
{
	size_t i = 0;

	for (; i < len && name[i]; i++) {
		char a = name[i] == ' ' ? '-' : (char)tolower(name[i]);

		if (a != tolower(want[i]))
			return false;
	}
	return i == len && !name[i];
}

static int pick_systems(struct options *o)
{
	const char *s = o->systems;

	if (!s) {
		for (size_t i = 0; i < NPEERS && i < SYS_MAX; i++)
			o->sys[o->nsys++] = all_peers[i];
		return 0;
	}
	while (*s) {
		size_t len = strcspn(s, ","), i;

		for (i = 0; i < NPEERS; i++)
			if (name_is(all_peers[i]->name, s, len))
				break;
		if (i == NPEERS) {
			fprintf(stderr, "tdb-bench-ycsb: --systems: no system "
				"%.*s built in (see --help)\n", (int)len, s);
			return -1;
		}
		if (o->nsys == SYS_MAX)
			return -1;
		o->sys[o->nsys++] = all_peers[i];
		s += len + (s[len] == ',');
	}
	return 0;
}

static void note(void *arg, const char *text)
{
	(void)arg;
	fprintf(stderr, "tdb-bench-ycsb: note: %s\n", text);
}

static int need(int argc, char **argv, int i)
{
	if (i + 1 >= argc) {
		fprintf(stderr, "tdb-bench-ycsb: %s needs a value\n", argv[i]);
		return -1;
	}
	return 0;
}

/* -threads N, --runs R, --seed S. */
static int set_number(const char *a, const char *v, struct ycsb_conf *c,
		      struct options *o)
{
	unsigned long long max = !strcmp(a, "-threads") ? YCSB_PROCS_MAX :
		!strcmp(a, "--runs") ? RUNS_MAX : UINT64_MAX, n;
	char *end;

	errno = 0;
	n = strtoull(v, &end, 10);
	if (!*v || *end || errno || *v == '-' || !n || n > max) {
		fprintf(stderr, "tdb-bench-ycsb: %s %s: want 1..%llu\n", a, v,
			max);
		return -1;
	}
	if (max == YCSB_PROCS_MAX)
		c->threads = (unsigned int)n;
	else if (max == RUNS_MAX)
		o->runs = (unsigned int)n;
	else
		o->seed = n;
	return 0;
}

static int parse(int argc, char **argv, struct ycsb_conf *c,
		 struct options *o)
{
	char msg[YCSB_MSG];
	bool load = false, run = false;
	int rc;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		msg[0] = 0;
		if (!strcmp(a, "-load")) {
			load = true;
		} else if (!strcmp(a, "-t")) {
			run = true;
		} else if (!strcmp(a, "--selftest")) {
			o->selftest = true;
		} else if (!strcmp(a, "--strict")) {
			o->strict = true;
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			exit(0);
		} else if (i + 1 < argc && (!strcmp(a, "-P") ||
					    !strcmp(a, "-p"))) {
			i++;
			rc = a[1] == 'P' ?
				ycsb_props_file(c, argv[i], note, NULL, msg) :
				ycsb_prop_arg(c, argv[i], msg);
			if (rc == 1)
				note(NULL, msg);
			else if (rc) {
				fprintf(stderr, "tdb-bench-ycsb: %s\n", msg);
				return -1;
			}
			if (a[1] == 'P')
				c->workload = argv[i];
		} else if (!strcmp(a, "-threads") || !strcmp(a, "--runs") ||
			   !strcmp(a, "--seed")) {
			if (need(argc, argv, i) ||
			    set_number(a, argv[++i], c, o))
				return -1;
		} else if (!strcmp(a, "--systems") || !strcmp(a, "--csv") ||
			   !strcmp(a, "--tdbd") || !strcmp(a, "--dir")) {
			if (need(argc, argv, i))
				return -1;
			if (a[2] == 's')
				o->systems = argv[++i];
			else if (a[2] == 'c')
				o->csv = argv[++i];
			else if (a[2] == 't')
				ycsb_tdbd_path = argv[++i];
			else
				o->dir = argv[++i];
		} else {
			fprintf(stderr, "tdb-bench-ycsb: unknown argument %s "
				"(see --help)\n", a);
			return -1;
		}
	}
	o->load = load || !run;
	o->run = run || !load;
	if (o->selftest)
		return 0;
	if (!c->workload) {
		fprintf(stderr, "tdb-bench-ycsb: no -P workload file (see "
			"--help)\n");
		return -1;
	}
	if (ycsb_conf_check(c, msg)) {
		fprintf(stderr, "tdb-bench-ycsb: %s\n", msg);
		return -1;
	}
	return pick_systems(o);
}

/* --- the temp dir --------------------------------------------------------- */
static char *make_dir(const char *base)
{
	static char dir[4096];
	const char *t = base ? base : getenv("TMPDIR");

	snprintf(dir, sizeof(dir), "%s/tdb-bench-ycsb.XXXXXX",
		 t && *t ? t : "/tmp");
	if (!mkdtemp(dir)) {
		fprintf(stderr, "tdb-bench-ycsb: mkdtemp %s: %s\n", dir,
			strerror(errno));
		return NULL;
	}
	return dir;
}

int main(int argc, char **argv)
{
	static struct result res[SYS_MAX][RUNS_MAX];
	struct options o = { .runs = 1, .seed = 1 };
	struct cpu_sample s0, s1;
	struct ycsb_conf c;
	struct shared *sh;
	FILE *csv = NULL;
	int status = 0;
	double la[3], steal, others;

	ycsb_conf_defaults(&c);
	if (parse(argc, argv, &c, &o))
		return 2;
	if (o.selftest)
		return ycsb_selftest() ? 1 : 0;
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED) {
		perror("tdb-bench-ycsb: mmap of the shared results");
		return 1;
	}
	if (!(c.dir = make_dir(o.dir)))
		return 1;
	if (o.csv && !(csv = bench_csv_open(o.csv, argc, argv)))
		return 1;
	describe(&c, &o);
	cpu_sample(&s0);
	for (unsigned int r = 0; r < o.runs; r++) {
		fprintf(stderr, "run %u of %u:\n", r + 1, o.runs);
		for (unsigned int j = 0; j < o.nsys; j++) {
			unsigned int i = (j + r) % o.nsys;

			cell(o.sys[i], &c, &o, sh, &res[i][r]);
		}
	}
	cpu_sample(&s1);
	report(&c, &o, res, csv);
	others = cpu_others(&s0, &s1, &steal);
	if (getloadavg(la, 3) == 3)
		printf("load average at the end: %.2f %.2f %.2f; others used "
		       "%.0f%% of the machine's CPU meanwhile\n", la[0], la[1],
		       la[2], others * 100);
	bench_csv_note(csv, "load average at the end %.2f %.2f %.2f; others "
		       "%.0f%% of the CPU", la[0], la[1], la[2], others * 100);
	for (unsigned int i = 0; i < o.nsys; i++)
		for (unsigned int r = 0; r < o.runs; r++) {
			if (res[i][r].state < 0)
				status = 1;
			else if (res[i][r].state > 0 && o.strict && !status)
				status = 77;
		}
	if (bench_csv_close(csv, o.csv))
		status = 1;
	ycsb_rm_tree(c.dir);
	return status;
}
