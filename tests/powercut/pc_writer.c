// SPDX-License-Identifier: GPL-2.0-only
/*
 * pc_writer.c - the guest side of the power-cut test (run-powercut.sh):
 * writers that report every acknowledged change, and the checker that
 * reads the table back after a cut.  Public client API only.
 *
 *   pc_writer write [--socket S] --acks FILE --cycle C [--writers W]
 *                   [--keys K] [--ops N]
 *   pc_writer check [--socket S] --acks FILE --cycle C [--writers W]
 *                   [--keys K]
 *
 * The owner: tdbd at socket S; without --socket, the one
 * libtdbclient picks ($TDB_BACKEND=kernel: tdb.ko through /dev/tdb,
 * the power cut's kernel mode, whose tdbd --backend kernel supervises).
 *
 * The changes.  Writer w (a thread with its own connection) owns keys
 * "wWW-kKKK" (K of them) of table "pc" and runs ops n = 1, 2, ... of
 * cycle C (the boot number), one at a time: a put of one key, or a
 * transaction putting 2-4 of its keys.  Which keys, and every byte of
 * every value, are a pure function of (w, C, n, key) (op_gen,
 * val_gen): the value carries w, C, n, the key and the op's size in a
 * header, then pseudo-random bytes (8 B to 1 KiB; one value in 10 4 to
 * 40 KiB, so records span pages of the WAL).  So the checker rebuilds
 * any value from its header and compares every byte, and rebuilds any
 * op's keys.
 *
 * Refusals.  tdb.ko refuses a change with ENOBUFS, applying nothing,
 * while its change log ring is full (tdbd has not made enough of it
 * durable yet: with sync none or batch the writers are not held back
 * and can outrun it).  The writer then sends the same op again, 1 ms
 * later, REFUSED_MAX times at most; it says so on stdout (PCREFUSED,
 * the first time and every REFUSED_EVERY-th).
 *
 * The ack channel.  After tdbc_put or tdbc_txn_commit returned 0, the
 * writer writes "A w C n\n" to FILE (the guest's second serial port,
 * a file on the host) and waits until it is out (tcdrain on a tty,
 * fdatasync on a file) before its next op.  Hence: every op whose line
 * is in the log was acknowledged, and a writer's ops up to n + 1 at
 * most were ever sent when n is its last line (a cut may fall between
 * an ack and its line).
 *
 * The check (after the cut and tdbd's recovery; FILE holds the lines of
 * every cycle before C).  For each key, the latest acknowledged op that
 * wrote it is computed from the log; the table is scanned; then:
 *  - bad: a key or value the writers never wrote (wrong bytes, an op
 *    past a writer's last line + 1, a cycle not run yet, a key the op
 *    does not write);
 *  - lost: an acknowledged op some key of which holds an older value
 *    (or none): "lost_last" counts those of cycle C - 1, the cut just
 *    survived;
 *  - torn: a transaction some key of which shows it while another key
 *    of it holds an older value (all or nothing);
 *  - holes: a lost op of a writer some later op of which (same cycle)
 *    survived: not a prefix of what the writer did.
 * Expiry (issue 27).  After an op, a writer puts, one time in four, a
 * record that expires into table "pcx": key "wWW-xKKK", a deadline of
 * now + 0.2..5 s or 30..120 s (tdbc_put_at), the value a header naming (w, C, n,
 * the deadline) and bytes from it.  Its ack line is "X w C n D" (D: the
 * deadline).  The check scans "pcx" with the records' deadlines and
 * counts as bad a record whose deadline is not its value's, or one
 * returned although its deadline had passed when the scan began; and
 * as lost an acknowledged X put whose key holds an older put (whatever
 * the deadlines), or holds nothing while the put's deadline is still
 * more than X_SLACK_MS ahead when the scan ends
 * (the guest's clock after a reboot comes from the RTC: a second or so
 * of slack).
 *
 * It prints "PCCHECK cycle=C ... lost=.. torn=.. holes=.. bad=.." and
 * details (PCLOST, PCTORN, PCBAD, at most a few each); exit 0 when all
 * are 0, 1 when not, 2 when it could not check.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include <tdb/client.h>

#define TABLE       "pc"
#define XTABLE      "pcx"       /* records that expire */
#define X_SLACK_MS  2000u
#define MAX_WRITERS 16
#define MAX_KEYS    512
#define MAX_TXN     4
#define KEY_LEN     9           /* "wWW-kKKK" + NUL */
#define SMALL_VAL   1100        /* most values: 8 B..SMALL_VAL */
#define BIG_MIN     4096        /* one in 10: BIG_MIN..MAX_VAL, records */
#define MAX_VAL     40960       /* that span pages of the WAL */
#define DETAILS     8           /* detail lines per kind */
#define REFUSED_MAX 60000       /* tries of an op refused (ENOBUFS) */
#define REFUSED_EVERY 1000      /* say every 1000th refusal */

static const char magic[4] = { 'P', 'C', 'V', '1' };

struct val_hdr {
	char magic[4];
	uint32_t w, c, n, k;
	uint32_t m;             /* keys the op writes: 1 = a lone put */
	uint32_t len;           /* payload bytes after the header */
};

struct op {
	uint32_t m;
	uint32_t keys[MAX_TXN];
};

static struct {
	const char *socket, *acks;
	uint32_t cycle, writers, keys;
	uint64_t ops;           /* write: stop after this many (0: never) */
} opt = { .writers = 4, .keys = 64 };

static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static uint64_t seed_of(uint32_t w, uint32_t c, uint32_t n)
{
	return mix(mix(mix(w) ^ c) ^ n);
}

/* Op n of writer w in cycle c: 70% a put, else a 2-4 key transaction
 * of distinct keys. */
static void op_gen(uint32_t w, uint32_t c, uint32_t n, struct op *op)
{
	uint64_t s = seed_of(w, c, n);
	uint32_t i, j;

	op->m = (s % 10 < 7) ? 1 : 2 + (uint32_t)((s >> 8) % 3);
	for (i = 0; i < op->m; i++) {
again:
		s = mix(s);
		op->keys[i] = (uint32_t)(s % opt.keys);
		for (j = 0; j < i; j++)
			if (op->keys[j] == op->keys[i])
				goto again;
	}
}

static bool op_has(const struct op *op, uint32_t k)
{
	uint32_t i;

	for (i = 0; i < op->m; i++)
		if (op->keys[i] == k)
			return true;
	return false;
}

/* The value op (w, c, n) of m keys puts at key k; returns its length. */
static size_t val_gen(uint32_t w, uint32_t c, uint32_t n, uint32_t k,
		      uint32_t m, uint8_t *buf)
{
	uint64_t s = mix(seed_of(w, c, n) ^ ((uint64_t)k << 40));
	struct val_hdr h;
	size_t i;

	memcpy(h.magic, magic, sizeof(magic));
	h.w = w;
	h.c = c;
	h.n = n;
	h.k = k;
	h.m = m;
	if ((s >> 32) % 10)
		h.len = 8 + (uint32_t)(s % (SMALL_VAL - sizeof(h) - 8));
	else
		h.len = BIG_MIN + (uint32_t)(s % (MAX_VAL - sizeof(h) -
						  BIG_MIN));
	memcpy(buf, &h, sizeof(h));
	for (i = 0; i < h.len; i++) {
		s = mix(s);
		buf[sizeof(h) + i] = (uint8_t)s;
	}
	return sizeof(h) + h.len;
}

static void key_name(uint32_t w, uint32_t k, char *buf)
{
	/* w < MAX_WRITERS, k < MAX_KEYS: always two and three digits */
	snprintf(buf, KEY_LEN, "w%02u-k%03u", w % 100, k % 1000);
}

static void die(const char *what, int err, const char *msg)
{
	fprintf(stderr, "pc_writer: %s: %s%s%s\n", what, tdbc_strerror(err),
		msg && *msg ? ": " : "", msg ? msg : "");
	exit(2);
}

static struct tdbc *connect_or_die(void)
{
	char msg[256];
	struct tdbc *c;
	int tries = 0;
	int r;

	/* the socket may be there a moment before tdbd listens on it;
	 * tdb.ko answers EAGAIN while its supervisor restores the tables */
	while (((r = tdbc_connect(&c, opt.socket, 0, msg, sizeof(msg))) ==
		-ECONNREFUSED || r == -EAGAIN) && ++tries < 600)
		usleep(100000);
	if (r < 0)
		die("connect", r, msg);
	return c;
}

/* --- write ------------------------------------------------------------ */

static pthread_mutex_t ack_lock = PTHREAD_MUTEX_INITIALIZER;
static int ack_fd = -1;
static bool ack_tty;

/* One line per acknowledged op, out of the guest before the next op:
 * "A w C n", or "X w C n D" for an expiring put with deadline D. */
static void ack_line(uint32_t w, uint32_t n, bool x, uint64_t d)
{
	char line[96];
	int len = x ? snprintf(line, sizeof(line), "X %u %u %u %llu\n", w,
			       opt.cycle, n, (unsigned long long)d) :
		      snprintf(line, sizeof(line), "A %u %u %u\n", w,
			       opt.cycle, n);
	ssize_t r;

	pthread_mutex_lock(&ack_lock);
	r = write(ack_fd, line, (size_t)len);
	if (r != len) {
		perror("pc_writer: write to the ack channel");
		exit(2);
	}
	if (ack_tty ? tcdrain(ack_fd) : fdatasync(ack_fd)) {
		perror("pc_writer: draining the ack channel");
		exit(2);
	}
	pthread_mutex_unlock(&ack_lock);
}

static void ack(uint32_t w, uint32_t n)
{
	ack_line(w, n, false, 0);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* The value of expiring put (w, c, n) with deadline d; its length. */
struct xval_hdr {
	char magic[4];
	uint32_t w, c, n;
	uint64_t deadline;
};
static const char xmagic[4] = { 'P', 'C', 'X', '1' };

static size_t xval_gen(uint32_t w, uint32_t c, uint32_t n, uint64_t d,
		       uint8_t *buf)
{
	uint64_t s = mix(seed_of(w, c, n) ^ d);
	struct xval_hdr h;
	size_t i, len = 8 + (size_t)(s % 200);

	memcpy(h.magic, xmagic, sizeof(xmagic));
	h.w = w;
	h.c = c;
	h.n = n;
	h.deadline = d;
	memcpy(buf, &h, sizeof(h));
	for (i = 0; i < len; i++) {
		s = mix(s);
		buf[sizeof(h) + i] = (uint8_t)s;
	}
	return sizeof(h) + len;
}

/* Op n's expiring put, if it has one: its key, and its time to live. */
static bool xop_gen(uint32_t w, uint32_t c, uint32_t n, uint32_t *k,
		    uint32_t *ttl)
{
	uint64_t s = mix(seed_of(w, c, n) ^ 0x5851f42d4c957f2dull);

	*k = (uint32_t)((s >> 8) % opt.keys);
	/* half expire before the cut or soon after (the sweep, replay of
	 * its DELs), half are still live when the next boot checks */
	*ttl = (s >> 62) & 1 ? 200 + (uint32_t)((s >> 32) % 4800) :
			       30000 + (uint32_t)((s >> 32) % 90000);
	return s % 4 == 0;
}

static void xkey_name(uint32_t w, uint32_t k, char *buf)
{
	snprintf(buf, KEY_LEN, "w%02u-x%03u", w % 100, k % 1000);
}

/* Op n's expiring put: 0 and its deadline in *d, or < 0. */
static int do_xop(struct tdbc_table *xt, uint32_t w, uint32_t n,
		  uint64_t *d)
{
	static __thread uint8_t val[512];
	char key[KEY_LEN];
	uint32_t k, ttl;
	size_t len;

	*d = 0;
	if (!xop_gen(w, opt.cycle, n, &k, &ttl))
		return 0;
	*d = now_ms() + ttl;
	xkey_name(w, k, key);
	len = xval_gen(w, opt.cycle, n, *d, val);
	return tdbc_put_at(xt, NULL, key, KEY_LEN - 1, val, len, 0, 0, *d);
}

static int do_op(struct tdbc *c, struct tdbc_table *t, uint32_t w,
		 uint32_t n)
{
	static __thread uint8_t val[MAX_VAL];
	struct tdbc_txn *txn = NULL;
	char key[KEY_LEN];
	struct op op;
	uint32_t i;
	size_t len;
	int r;

	op_gen(w, opt.cycle, n, &op);
	if (op.m > 1) {
		r = tdbc_txn_begin(c, &txn);
		if (r < 0)
			return r;
	}
	for (i = 0; i < op.m; i++) {
		key_name(w, op.keys[i], key);
		len = val_gen(w, opt.cycle, n, op.keys[i], op.m, val);
		r = tdbc_put(t, txn, key, KEY_LEN - 1, val, len, 0);
		if (r < 0) {
			if (txn)
				tdbc_txn_abort(txn);
			return r;
		}
	}
	return txn ? tdbc_txn_commit(txn) : 0;
}

/* do_op, again while tdb.ko refuses it for a full change log (nothing
 * of the op was applied), REFUSED_MAX times at most. */
static int do_op_refused(struct tdbc *c, struct tdbc_table *t, uint32_t w,
			 uint32_t n)
{
	static unsigned long refused;   /* all writers' */
	unsigned int tries = 0;
	unsigned long nr;
	int r;

	while ((r = do_op(c, t, w, n)) == -ENOBUFS && tries < REFUSED_MAX) {
		nr = __atomic_add_fetch(&refused, 1, __ATOMIC_RELAXED);
		if (nr == 1 || nr % REFUSED_EVERY == 0) {
			printf("PCREFUSED writer %u op %u: %lu refusal(s) so "
			       "far: %s\n", w, n, nr, tdbc_errmsg(c));
			fflush(stdout);
		}
		usleep(1000);
		tries++;
	}
	return r;
}

static void *writer(void *arg)
{
	uint32_t w = (uint32_t)(uintptr_t)arg;
	struct tdbc *c = connect_or_die();
	struct tdbc_table *t, *xt;
	uint64_t n, d;
	int r;

	r = tdbc_table_open(c, TABLE, &t);
	if (r < 0)
		die("table open", r, tdbc_errmsg(c));
	r = tdbc_table_open(c, XTABLE, &xt);
	if (r < 0)
		die("table open", r, tdbc_errmsg(c));
	for (n = 1; !opt.ops || n <= opt.ops; n++) {
		r = do_op_refused(c, t, w, (uint32_t)n);
		if (r < 0) {
			fprintf(stderr, "pc_writer: writer %u op %llu: ", w,
				(unsigned long long)n);
			die("change", r, tdbc_errmsg(c));
		}
		ack(w, (uint32_t)n);
		r = do_xop(xt, w, (uint32_t)n, &d);
		while (r == -ENOBUFS) {         /* tdb.ko's full log */
			usleep(1000);
			r = do_xop(xt, w, (uint32_t)n, &d);
		}
		if (r < 0) {
			fprintf(stderr, "pc_writer: writer %u op %llu: ", w,
				(unsigned long long)n);
			die("expiring put", r, tdbc_errmsg(c));
		}
		if (d)
			ack_line(w, (uint32_t)n, true, d);
	}
	tdbc_table_close(xt);
	tdbc_table_close(t);
	tdbc_close(c);
	return NULL;
}

static int cmd_write(void)
{
	pthread_t th[MAX_WRITERS];
	struct tdbc *c = connect_or_die();
	uint32_t w;
	int r;

	ack_fd = open(opt.acks, O_WRONLY | O_APPEND | O_CREAT | O_NOCTTY,
		      0644);
	if (ack_fd < 0) {
		perror(opt.acks);
		return 2;
	}
	ack_tty = isatty(ack_fd);
	/* The table's creation is acknowledged too: it must survive. */
	r = tdbc_table_create(c, TABLE, NULL);
	if (r < 0 && r != -EEXIST)
		die("table create", r, tdbc_errmsg(c));
	r = tdbc_table_create(c, XTABLE, NULL);
	if (r < 0 && r != -EEXIST)
		die("table create", r, tdbc_errmsg(c));
	tdbc_close(c);
	printf("PCWRITE-GO cycle=%u writers=%u keys=%u\n", opt.cycle,
	       opt.writers, opt.keys);
	fflush(stdout);
	for (w = 0; w < opt.writers; w++)
		if (pthread_create(&th[w], NULL, writer,
				   (void *)(uintptr_t)w)) {
			fprintf(stderr, "pc_writer: pthread_create failed\n");
			return 2;
		}
	for (w = 0; w < opt.writers; w++)
		pthread_join(th[w], NULL);
	close(ack_fd);
	return 0;
}

/* --- check ------------------------------------------------------------ */

/* An op's place in a writer's history: (cycle + 1) << 32 | n; 0 = none
 * (no value, or no op acknowledged). */
static uint64_t pos(uint32_t c, uint32_t n)
{
	return ((uint64_t)(c + 1) << 32) | n;
}

static uint32_t *lastack;       /* [w][c]: last op with a line, 0 = none */
static uint64_t *expect;        /* [w][k]: latest acked op writing it */
static uint64_t *found;         /* [w][k]: the op whose value is there */
static uint32_t *topfound;      /* [w][c]: latest op seen in the table */

#define LASTACK(w, c) lastack[(size_t)(w) * opt.cycle + (c)]
#define TOPFOUND(w, c) topfound[(size_t)(w) * opt.cycle + (c)]
#define SLOT(a, w, k) a[(size_t)(w) * opt.keys + (k)]

static unsigned long n_bad, n_lost, n_lost_last, n_torn, n_holes;
/* expiring puts: [w][k] the latest acked one's place and deadline, and
 * what the scan found there */
static uint64_t *xexpect, *xdeadline, *xfound;
static uint32_t *xlastack;      /* [w][c]: last X line's op */
static unsigned long n_xacked, n_xlive, n_xlost, n_xbad;

#define DETAIL(count, ...) do { \
		if ((count) <= DETAILS) \
			printf(__VA_ARGS__); \
	} while (0)

/* An acknowledged expiring put: the latest of its key so far (the log
 * is in cycle order, and each writer's lines in op order). */
static void xack(uint32_t w, uint32_t c, uint32_t n, uint64_t d)
{
	uint32_t k, ttl;

	if (!xop_gen(w, c, n, &k, &ttl))
		return;
	SLOT(xexpect, w, k) = pos(c, n);
	SLOT(xdeadline, w, k) = d;
	n_xacked++;
}

static int read_acks(void)
{
	unsigned int w, c, n;
	char line[128];
	FILE *f = fopen(opt.acks, "r");
	unsigned long lines = 0;

	if (!f) {
		perror(opt.acks);
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		unsigned long long d;

		if (line[0] == 'X') {
			if (sscanf(line, "X %u %u %u %llu", &w, &c, &n,
				   &d) != 4 || w >= opt.writers ||
			    c >= opt.cycle || !d ||
			    n <= xlastack[(size_t)w * opt.cycle + c]) {
				printf("PCBAD ack log line %lu: %s",
				       lines + 1, line);
				fclose(f);
				return -1;
			}
			xack(w, c, n, d);
			xlastack[(size_t)w * opt.cycle + c] = n;
			lines++;
			continue;
		}
		if (sscanf(line, "A %u %u %u", &w, &c, &n) != 3 ||
		    w >= opt.writers || c >= opt.cycle) {
			printf("PCBAD ack log line %lu: %s", lines + 1, line);
			fclose(f);
			return -1;
		}
		/* a writer's lines come in order, one per op */
		if (n != LASTACK(w, c) + 1) {
			printf("PCBAD ack log: writer %u cycle %u op %u after "
			       "op %u\n", w, c, n, LASTACK(w, c));
			fclose(f);
			return -1;
		}
		LASTACK(w, c) = n;
		lines++;
	}
	fclose(f);
	printf("PCCHECK-ACKS lines=%lu\n", lines);
	return 0;
}

/* What the acknowledged ops must have left: for each key the latest. */
static unsigned long compute_expect(void)
{
	unsigned long acked = 0;
	uint32_t w, c, n, i;
	struct op op;

	for (c = 0; c < opt.cycle; c++)
		for (w = 0; w < opt.writers; w++)
			for (n = 1; n <= LASTACK(w, c); n++) {
				op_gen(w, c, n, &op);
				for (i = 0; i < op.m; i++)
					SLOT(expect, w, op.keys[i]) =
						pos(c, n);
				acked++;
			}
	return acked;
}

static bool parse_key(const void *key, size_t klen, uint32_t *w,
		      uint32_t *k)
{
	char buf[KEY_LEN], back[KEY_LEN];
	unsigned int a, b;

	if (klen != KEY_LEN - 1)
		return false;
	memcpy(buf, key, klen);
	buf[klen] = 0;
	if (sscanf(buf, "w%2u-k%3u", &a, &b) != 2 || a >= opt.writers ||
	    b >= opt.keys)
		return false;
	key_name(a, b, back);
	if (strcmp(buf, back))
		return false;
	*w = a;
	*k = b;
	return true;
}

/* A record: one the writers wrote (then noted in found[]), or bad. */
static void check_record(const void *key, size_t klen, const void *val,
			 size_t vlen)
{
	static uint8_t want[MAX_VAL];
	struct val_hdr h;
	uint32_t w, k;
	struct op op;
	const char *why = NULL;

	if (!parse_key(key, klen, &w, &k)) {
		n_bad++;
		DETAIL(n_bad, "PCBAD key '%.*s' (%zu bytes) never written\n",
		       (int)(klen > 32 ? 32 : klen), (const char *)key, klen);
		return;
	}
	if (vlen < sizeof(h)) {
		why = "value shorter than its header";
		goto bad;
	}
	memcpy(&h, val, sizeof(h));
	if (memcmp(h.magic, magic, sizeof(magic)) || h.w != w || h.k != k) {
		why = "header does not name this key";
		goto bad;
	}
	if (h.c >= opt.cycle) {
		why = "cycle not run yet";
		goto bad;
	}
	if (h.n == 0 || h.n > LASTACK(w, h.c) + 1) {
		why = "op past the writer's last ack + 1";
		goto bad;
	}
	op_gen(w, h.c, h.n, &op);
	if (!op_has(&op, k) || op.m != h.m) {
		why = "the op does not write this key";
		goto bad;
	}
	if (vlen != val_gen(w, h.c, h.n, k, h.m, want) ||
	    memcmp(val, want, vlen)) {
		why = "bytes differ from what the op wrote";
		goto bad;
	}
	SLOT(found, w, k) = pos(h.c, h.n);
	if (h.n > TOPFOUND(w, h.c))
		TOPFOUND(w, h.c) = h.n;
	return;
bad:
	n_bad++;
	DETAIL(n_bad, "PCBAD w%02u-k%03u: %s (len %zu)\n", w, k, why, vlen);
}

static int scan_table(struct tdbc *c, unsigned long *records)
{
	const void *key, *val;
	size_t klen, vlen;
	struct tdbc_table *t;
	struct tdbc_scan *s;
	int r;

	*records = 0;
	r = tdbc_table_open(c, TABLE, &t);
	if (r == -ENOENT) {
		printf("PCCHECK-NOTABLE table %s does not exist\n", TABLE);
		return 0;
	}
	if (r < 0)
		die("table open", r, tdbc_errmsg(c));
	r = tdbc_scan_open(t, NULL, 0, 0, &s);
	if (r < 0)
		die("scan open", r, tdbc_errmsg(c));
	while ((r = tdbc_scan_next(s, &key, &klen, &val, &vlen)) == 1) {
		check_record(key, klen, val, vlen);
		(*records)++;
	}
	if (r < 0)
		die("scan", r, tdbc_errmsg(c));
	tdbc_scan_close(s);
	tdbc_table_close(t);
	return 0;
}

/* A record of "pcx" returned by a scan that began at t0. */
static void check_xrecord(const void *key, size_t klen, const void *val,
			  size_t vlen, uint64_t deadline, uint64_t t0)
{
	static uint8_t want[512];
	struct xval_hdr h;
	char buf[KEY_LEN], back[KEY_LEN];
	unsigned int w = 0, k = 0;
	const char *why = NULL;
	uint32_t kk, ttl;

	if (klen != KEY_LEN - 1) {
		why = "key never written";
		goto bad;
	}
	memcpy(buf, key, klen);
	buf[klen] = 0;
	if (sscanf(buf, "w%2u-x%3u", &w, &k) != 2 || w >= opt.writers ||
	    k >= opt.keys || (xkey_name(w, k, back), strcmp(buf, back))) {
		why = "key never written";
		goto bad;
	}
	if (vlen < sizeof(h)) {
		why = "value shorter than its header";
		goto bad;
	}
	memcpy(&h, val, sizeof(h));
	if (memcmp(h.magic, xmagic, sizeof(xmagic)) || h.w != w ||
	    h.c >= opt.cycle || !xop_gen(w, h.c, h.n, &kk, &ttl) || kk != k) {
		why = "header does not name an expiring put of this key";
		goto bad;
	}
	if (vlen != xval_gen(w, h.c, h.n, h.deadline, want) ||
	    memcmp(val, want, vlen)) {
		why = "bytes differ from what the put wrote";
		goto bad;
	}
	if (deadline != h.deadline) {
		why = "its deadline is not the one it was put with";
		goto bad;
	}
	if (deadline <= t0) {
		why = "returned after its deadline";
		goto bad;
	}
	SLOT(xfound, w, k) = pos(h.c, h.n);
	n_xlive++;
	if (pos(h.c, h.n) < SLOT(xexpect, w, k)) {
		/* the latest acknowledged put of the key is lost, whatever
		 * its deadline: an older record is back in its place */
		n_xlost++;
		n_lost++;
		DETAIL(n_lost, "PCLOST pcx w%02u-x%03u: holds cycle %u op %u, "
		       "older than the latest acknowledged put of the key\n",
		       w, k, h.c, h.n);
	}
	return;
bad:
	n_xbad++;
	n_bad++;
	DETAIL(n_bad, "PCBAD pcx w%02u-x%03u: %s (deadline %llu, scan at "
	       "%llu)\n", w, k, why, (unsigned long long)deadline,
	       (unsigned long long)t0);
}

/* Could an expiring put of key k by writer w that was never acknowledged
 * have replaced the acknowledged one at place p, and then expired?  A
 * writer's op whose line did not reach the log may still have been
 * applied (made durable, then the cut took the ack): its expiring put is
 * op n's after the last X line of the cycle, up to the op after its last
 * A line, in p's cycle (after p's op) or a later one. */
static bool x_unacked_may_hide(uint32_t w, uint32_t k, uint64_t p)
{
	uint32_t pc = (uint32_t)(p >> 32) - 1, pn = (uint32_t)p;

	for (uint32_t c = pc; c < opt.cycle; c++) {
		uint32_t from = xlastack[(size_t)w * opt.cycle + c];
		uint32_t to = LASTACK(w, c) + 1;

		if (c == pc && from < pn)
			from = pn;
		for (uint32_t n = from + 1; n <= to; n++) {
			uint32_t kk, ttl;

			if (xop_gen(w, c, n, &kk, &ttl) && kk == k)
				return true;
		}
	}
	return false;
}

static void scan_xtable(struct tdbc *c)
{
	const void *key, *val;
	size_t klen, vlen;
	struct tdbc_table *t;
	struct tdbc_scan *s;
	uint64_t t0, t1, d;
	uint32_t w, k;
	int r;

	r = tdbc_table_open(c, XTABLE, &t);
	if (r == -ENOENT)
		return;
	if (r < 0)
		die("table open", r, tdbc_errmsg(c));
	t0 = now_ms();          /* before the owner can send a part */
	r = tdbc_scan_open(t, NULL, 0, 0, &s);
	if (r < 0)
		die("scan open", r, tdbc_errmsg(c));
	while ((r = tdbc_scan_next_ex(s, &key, &klen, &val, &vlen, NULL,
				      &d)) == 1)
		check_xrecord(key, klen, val, vlen, d, t0);
	if (r < 0)
		die("scan", r, tdbc_errmsg(c));
	t1 = now_ms();
	tdbc_scan_close(s);
	tdbc_table_close(t);
	/* acknowledged, still well before its deadline: must be there */
	for (w = 0; w < opt.writers; w++)
		for (k = 0; k < opt.keys; k++) {
			uint64_t p = SLOT(xexpect, w, k);

			if (!p || SLOT(xdeadline, w, k) <= t1 + X_SLACK_MS ||
			    SLOT(xfound, w, k))
				continue;       /* there, or counted above */
			if (x_unacked_may_hide(w, k, p)) {
				/* a later put of the key, in flight at a
				 * cut, may have landed and expired */
				printf("PCNOTE pcx w%02u-x%03u: cycle %u op "
				       "%u gone, a later unacknowledged put "
				       "of the key may have replaced it\n",
				       w, k, (uint32_t)(p >> 32) - 1,
				       (uint32_t)p);
				continue;
			}
			n_xlost++;
			n_lost++;
			DETAIL(n_lost, "PCLOST pcx w%02u-x%03u: cycle %u op "
			       "%u (deadline in %llu ms) is not there\n", w, k,
			       (uint32_t)(p >> 32) - 1, (uint32_t)p,
			       (unsigned long long)(SLOT(xdeadline, w, k) -
						    t1));
		}
}

static void lost_detail(uint32_t w, uint32_t c, uint32_t n,
			const struct op *op, uint32_t k)
{
	uint64_t p = SLOT(found, w, k);
	char has[48] = "nothing";

	if (p)
		snprintf(has, sizeof(has), "cycle %u op %u",
			 (uint32_t)(p >> 32) - 1, (uint32_t)p);
	DETAIL(n_lost, "PCLOST writer %u cycle %u op %u (%u keys%s): "
	       "w%02u-k%03u holds %s\n", w, c, n, op->m,
	       n < TOPFOUND(w, c) ? ", a later op survived" : "", w, k, has);
}

/* Acknowledged ops whose keys do not all hold them (or later ops). */
static void find_lost(void)
{
	uint32_t w, c, n, i;
	struct op op;

	for (c = 0; c < opt.cycle; c++)
		for (w = 0; w < opt.writers; w++)
			for (n = 1; n <= LASTACK(w, c); n++) {
				op_gen(w, c, n, &op);
				for (i = 0; i < op.m; i++)
					if (SLOT(found, w, op.keys[i]) <
					    pos(c, n))
						break;
				if (i == op.m)
					continue;
				n_lost++;
				if (c + 1 == opt.cycle)
					n_lost_last++;
				if (n < TOPFOUND(w, c))
					n_holes++;
				lost_detail(w, c, n, &op, op.keys[i]);
			}
}

/* A transaction seen at one key must be seen (or overwritten by a
 * later op) at all its keys.  Counted once, at the first of its keys
 * that holds it. */
static void find_torn(void)
{
	uint32_t w, k, i, first, c, n;
	uint64_t p;
	struct op op;

	for (w = 0; w < opt.writers; w++)
		for (k = 0; k < opt.keys; k++) {
			p = SLOT(found, w, k);
			if (!p)
				continue;
			c = (uint32_t)(p >> 32) - 1;
			n = (uint32_t)p;
			op_gen(w, c, n, &op);
			if (op.m < 2)
				continue;
			for (first = 0; SLOT(found, w, op.keys[first]) != p;
			     first++)
				;
			if (op.keys[first] != k)
				continue;
			for (i = 0; i < op.m; i++)
				if (SLOT(found, w, op.keys[i]) < p)
					break;
			if (i == op.m)
				continue;
			n_torn++;
			DETAIL(n_torn, "PCTORN writer %u cycle %u op %u: "
			       "w%02u-k%03u has it, w%02u-k%03u not\n",
			       w, c, n, w, k, w, op.keys[i]);
		}
}

static int cmd_check(void)
{
	size_t wc = (size_t)opt.writers * opt.cycle;
	size_t wk = (size_t)opt.writers * opt.keys;
	unsigned long acked, records;
	struct tdbc *c;

	if (!opt.cycle) {
		fprintf(stderr, "pc_writer: check needs --cycle >= 1\n");
		return 2;
	}
	lastack = calloc(wc, sizeof(*lastack));
	topfound = calloc(wc, sizeof(*topfound));
	expect = calloc(wk, sizeof(*expect));
	found = calloc(wk, sizeof(*found));
	xexpect = calloc(wk, sizeof(*xexpect));
	xdeadline = calloc(wk, sizeof(*xdeadline));
	xfound = calloc(wk, sizeof(*xfound));
	xlastack = calloc(wc, sizeof(*xlastack));
	if (!lastack || !topfound || !expect || !found || !xexpect ||
	    !xdeadline || !xfound || !xlastack) {
		fprintf(stderr, "pc_writer: out of memory\n");
		return 2;
	}
	if (read_acks())
		return 2;
	acked = compute_expect();
	c = connect_or_die();
	scan_table(c, &records);
	scan_xtable(c);
	tdbc_close(c);
	find_lost();
	find_torn();
	printf("PCCHECK-X acked=%lu live=%lu lost=%lu bad=%lu\n", n_xacked,
	       n_xlive, n_xlost, n_xbad);
	printf("PCCHECK cycle=%u acked=%lu records=%lu lost=%lu "
	       "lost_last=%lu torn=%lu holes=%lu bad=%lu\n", opt.cycle,
	       acked, records, n_lost, n_lost_last, n_torn, n_holes, n_bad);
	fflush(stdout);
	return n_lost || n_torn || n_holes || n_bad ? 1 : 0;
}

/* --- main ------------------------------------------------------------- */

static unsigned long num(const char *s, unsigned long max)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || v > max) {
		fprintf(stderr, "pc_writer: bad number '%s' (max %lu)\n", s,
			max);
		exit(2);
	}
	return v;
}

static void usage(void)
{
	fprintf(stderr, "usage: pc_writer write|check [--socket PATH] "
		"--acks FILE --cycle N [--writers N] [--keys N] "
		"[--ops N]\n       pc_writer xkey W C N\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "acks", required_argument, NULL, 'a' },
		{ "cycle", required_argument, NULL, 'c' },
		{ "writers", required_argument, NULL, 'w' },
		{ "keys", required_argument, NULL, 'k' },
		{ "ops", required_argument, NULL, 'n' },
		{ NULL, 0, NULL, 0 },
	};
	const char *cmd;
	int ch;

	if (argc < 2)
		usage();
	cmd = argv[1];
	/* for test-checker.sh: op (W, C, N)'s expiring key, if it has one */
	if (!strcmp(cmd, "xkey") && argc == 5) {
		char key[KEY_LEN];
		uint32_t k, ttl;

		if (!xop_gen((uint32_t)num(argv[2], MAX_WRITERS - 1),
			     (uint32_t)num(argv[3], 100000),
			     (uint32_t)num(argv[4], UINT32_MAX), &k, &ttl))
			return 1;
		xkey_name((uint32_t)num(argv[2], MAX_WRITERS - 1), k, key);
		printf("%s\n", key);
		return 0;
	}
	optind = 2;
	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (ch) {
		case 's': opt.socket = optarg; break;
		case 'a': opt.acks = optarg; break;
		case 'c': opt.cycle = (uint32_t)num(optarg, 100000); break;
		case 'w':
			opt.writers = (uint32_t)num(optarg, MAX_WRITERS);
			break;
		case 'k': opt.keys = (uint32_t)num(optarg, MAX_KEYS); break;
		case 'n': opt.ops = num(optarg, UINT32_MAX); break;
		default: usage();
		}
	}
	if (!opt.acks || optind != argc || !opt.writers ||
	    opt.keys < MAX_TXN)
		usage();
	if (!strcmp(cmd, "write"))
		return cmd_write();
	if (!strcmp(cmd, "check"))
		return cmd_check();
	usage();
	return 2;
}
