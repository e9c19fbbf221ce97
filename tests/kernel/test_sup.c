// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_sup.c - tdb.ko's supervisor role (include/tdb/kdev.h, "THE
 * SUPERVISOR"), with this test as a minimal supervisor: it claims the
 * role, maps the log ring read-only, checks every record (CRC32C, the
 * LSN sequence, the content against what the writers did) and reports
 * TDB_IOC_SUP_DURABLE.  Kernel only (qemu); it reloads tdb.ko with
 * log_ring_mb=1 first and loads it plain again at the end, since the
 * role changes the module's state for good (logging on, held answers).
 *
 *  - require_supervisor=1 before any claim: ATTACH, a /dev/tdb request
 *    and generic netlink requests get -EAGAIN "... waiting for its
 *    supervisor ...";
 *  - recovering: a /dev/tdb client and a generic netlink request get
 *    -EAGAIN "tdb is recovering: ..."; the supervisor's own TABLE_CREATE
 *    passes and is not logged; READY lets clients in;
 *  - puts, deletes and transactions from 3 processes (sync always):
 *    each answer is held until DURABLE covers its record; every record
 *    intact, LSNs consecutive from the claim's next_lsn, each writer's
 *    changes in its order, a transaction one record;
 *  - a held answer: a put does not return until DURABLE;
 *  - a second claim: -EBUSY naming our pid; a non-root one: -EPERM;
 *    another instance: -ESTALE; rmmod refused while supervised;
 *  - the supervisor closes with records not durable: a new one (same
 *    instance, tables resident) finds them from log_first, none lost;
 *  - a full log ring (sync none): -ENOBUFS "the change log is full",
 *    nothing applied; DURABLE makes room again;
 *  - a supervisor that reads the log but never reports it durable (sync
 *    always, deadline 300 ms): a put is answered -ETIMEDOUT "... did not
 *    report it durable ..." at its deadline (rings and generic netlink
 *    share one hold policy) and stays applied;
 *  - no supervisor (sync always, deadline 300 ms): a put is answered
 *    -ETIMEDOUT "... no supervisor (tdbd) is attached" and stays applied;
 *  - TDB_IOC_SUP_STATS: records, held and timed-out answers, cleanups.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <libmnl/libmnl.h>
#include <linux/netlink.h>

#include <tdb/client.h>
#include <tdb/kdev.h>
#include <tdb/proto.h>
#include <tdb/ring.h>

#include "kt.h"
#include "proto.h"

#define INSTANCE 0x5eed5eed12345678ull
#define FIRST_LSN 1000
#define WRITERS 3
#define PUTS 40
#define TABLE "sup_t"

/* --- CRC32C, our own (the test checks the kernel's) --------------------- */

static uint32_t crc_tab[256];

static uint32_t crc32c(const void *buf, size_t len)
{
	const unsigned char *p = buf;
	uint32_t c = ~0u;

	if (!crc_tab[1]) {
		for (uint32_t i = 0; i < 256; i++) {
			uint32_t v = i;

			for (int j = 0; j < 8; j++)
				v = v & 1 ? (v >> 1) ^ 0x82f63b78u : v >> 1;
			crc_tab[i] = v;
		}
	}
	while (len--)
		c = (c >> 8) ^ crc_tab[(c ^ *p++) & 0xff];
	return ~c;
}

static uint32_t get32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static uint64_t get64(const unsigned char *p)
{
	return get32(p) | (uint64_t)get32(p + 4) << 32;
}

/* --- the supervisor ------------------------------------------------------- */

struct sup {
	struct kt_raw r;        /* its file, with rings (its own requests) */
	struct tdb_sup_claim c;
	const struct tdb_ring_hdr *h;
	const unsigned char *d;
	size_t map_len;
	uint64_t pos;           /* next ring index to read */
	uint64_t next_lsn;      /* the LSN the next record must have */
	uint64_t durable;
	unsigned char rec[1 << 20];
	size_t len;
	/* what the records said, one line per op */
	char **ops;
	size_t nops, cap;
	unsigned int records, txns;
};

static void note_op(struct sup *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void note_op(struct sup *s, const char *fmt, ...)
{
	va_list ap;
	char *line;

	va_start(ap, fmt);
	CHECK(vasprintf(&line, fmt, ap) > 0, "vasprintf");
	va_end(ap);
	if (s->nops == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 256;
		s->ops = realloc(s->ops, s->cap * sizeof(*s->ops));
		CHECK(s->ops, "out of memory");
	}
	s->ops[s->nops++] = line;
}

static int sup_claim_fd(int fd, struct tdb_sup_claim *c, uint32_t sync,
			uint32_t deadline_ms, uint64_t instance)
{
	memset(c, 0, sizeof(*c));
	c->version = TDB_DEV_VERSION;
	c->sync = sync;
	c->deadline_ms = deadline_ms;
	c->next_lsn = FIRST_LSN;
	c->instance = instance;
	return ioctl(fd, TDB_IOC_SUP_CLAIM, c) ? -errno : 0;
}

static void sup_map(struct sup *s)
{
	void *m;

	CHECK(s->c.log_offset == TDB_DEV_OFF_LOG && s->c.log_size ==
	      TDB_RING_HDR_SIZE + (1u << 20), "log ring at %#llx, %llu bytes",
	      (unsigned long long)s->c.log_offset,
	      (unsigned long long)s->c.log_size);
	/* read-only: PROT_WRITE is refused */
	m = mmap(NULL, s->c.log_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		 s->r.fd, (off_t)s->c.log_offset);
	CHECK(m == MAP_FAILED && errno == EACCES, "a writable map of the log "
	      "ring: %s", m == MAP_FAILED ? strerror(errno) : "allowed");
	m = mmap(NULL, s->c.log_size, PROT_READ, MAP_SHARED, s->r.fd,
		 (off_t)s->c.log_offset);
	CHECK(m != MAP_FAILED, "map the log ring: %s", strerror(errno));
	s->h = m;
	s->d = (const unsigned char *)m + TDB_RING_HDR_SIZE;
	s->map_len = s->c.log_size;
	CHECK(s->h->magic == TDB_RING_MAGIC && s->h->kind == TDB_RING_LOG &&
	      s->h->data_size == (1u << 20) && s->h->max_msg >= 64,
	      "the log ring's header");
	s->pos = __atomic_load_n(&s->h->cons, __ATOMIC_ACQUIRE);
	s->next_lsn = s->c.log_first;
}

static void sup_unmap(struct sup *s)
{
	munmap((void *)s->h, s->map_len);
	s->h = NULL;
}

/* Check one whole record and note its ops. */
static void check_record(struct sup *s)
{
	const unsigned char *r = s->rec;
	uint32_t len = get32(r + 4), n, i, off;

	CHECK(s->len >= 24 && len == s->len, "record of %zu bytes says %u",
	      s->len, len);
	CHECK(crc32c(r + 4, len - 4) == get32(r), "record LSN %llu: bad CRC",
	      (unsigned long long)get64(r + 8));
	CHECK(get64(r + 8) == s->next_lsn, "record LSN %llu, want %llu",
	      (unsigned long long)get64(r + 8),
	      (unsigned long long)s->next_lsn);
	s->next_lsn++;
	s->records++;
	switch (r[16]) {
	case 1:                 /* WAL_OPS: tdb.ko writes them no more */
		CHECK(0, "record LSN %llu of the old kind (no version)",
		      (unsigned long long)get64(r + 8));
		break;
	case 4:                 /* WAL_OPS_V: nops, 0, version, ops */
		n = get32(r + 24);
		CHECK(!get32(r + 28) && get64(r + 32), "record LSN %llu: a "
		      "bad version header", (unsigned long long)get64(r + 8));
		if (n > 1)
			s->txns++;
		for (i = 0, off = 40; i < n; i++) {
			uint8_t op = r[off], nl = r[off + 1];
			uint32_t kl = get32(r + off + 4), vl = get32(r + off + 8);
			const char *name = (const char *)r + off + 12;
			const char *key = name + nl, *val = key + kl;

			CHECK(off + 12 + nl + kl + vl <= len, "op past the record");
			if (op == 1 && vl < 64)
				note_op(s, "%sP %.*s %.*s %.*s", n > 1 ? "T" : "",
					nl, name, (int)kl, key, (int)vl, val);
			else if (op == 1)
				note_op(s, "P %.*s %.*s (%u bytes)", nl, name,
					(int)kl, key, vl);
			else
				note_op(s, "%sD %.*s %.*s", n > 1 ? "T" : "",
					nl, name, (int)kl, key);
			off += 12 + nl + kl + vl;
		}
		CHECK(off == len, "ops end at %u of %u", off, len);
		break;
	case 2:                 /* WAL_CREATE */
		note_op(s, "C %.*s", r[24 + 28], (const char *)r + 24 + 29);
		break;
	case 3:
		note_op(s, "X %.*s", r[24], (const char *)r + 25);
		break;
	default:
		CHECK(0, "record type %u", r[16]);
	}
}

/* Read every published record; 1 if any. */
static int sup_read(struct sup *s)
{
	uint64_t prod = __atomic_load_n(&s->h->prod, __ATOMIC_ACQUIRE);
	uint32_t size = s->h->data_size;
	int got = 0;

	while (s->pos < prod) {
		uint32_t off = (uint32_t)(s->pos & (size - 1));
		const struct nlmsghdr *nh = (const void *)(s->d + off);

		if (size - off < NLMSG_HDRLEN) {
			s->pos += size - off;
			continue;
		}
		CHECK(nh->nlmsg_len >= NLMSG_HDRLEN &&
		      nh->nlmsg_len <= size - off, "log message length %u",
		      nh->nlmsg_len);
		s->pos += NLMSG_ALIGN(nh->nlmsg_len);
		if (nh->nlmsg_type == NLMSG_NOOP)
			continue;
		CHECK(nh->nlmsg_type == TDB_LOG_MSG, "log message type %u",
		      nh->nlmsg_type);
		CHECK(s->len + nh->nlmsg_len - NLMSG_HDRLEN <= sizeof(s->rec),
		      "record too long");
		memcpy(s->rec + s->len, nh + 1, nh->nlmsg_len - NLMSG_HDRLEN);
		s->len += nh->nlmsg_len - NLMSG_HDRLEN;
		if (nh->nlmsg_flags & TDB_LOG_F_MORE)
			continue;
		check_record(s);
		s->len = 0;
		got = 1;
	}
	CHECK(!ioctl(s->r.fd, TDB_IOC_SUP_READ, &s->pos), "SUP_READ: %s",
	      strerror(errno));
	return got;
}

static void sup_durable(struct sup *s, uint64_t lsn)
{
	CHECK(!ioctl(s->r.fd, TDB_IOC_SUP_DURABLE, &lsn), "SUP_DURABLE: %s",
	      strerror(errno));
	s->durable = lsn;
}

/* One round: read, report all durable. */
static void sup_round(struct sup *s, int ms)
{
	struct pollfd p = { .fd = s->r.fd, .events = POLLIN };

	poll(&p, 1, ms);
	sup_read(s);
	if (s->next_lsn - 1 > s->durable)
		sup_durable(s, s->next_lsn - 1);
}

static bool has_op(struct sup *s, const char *line)
{
	for (size_t i = 0; i < s->nops; i++)
		if (!strcmp(s->ops[i], line))
			return true;
	return false;
}

/* --- helpers ------------------------------------------------------------- */

static void sh(const char *cmd, int want_ok)
{
	int st = system(cmd);

	CHECK(want_ok ? st == 0 : st != 0, "%s: status %#x", cmd, st);
}

static void reload(const char *params)
{
	char cmd[256];

	sh("rmmod tdb", 1);
	snprintf(cmd, sizeof(cmd), "insmod /lib/modules/tdb.ko %s", params);
	sh(cmd, 1);
	for (int i = 0; i < 100 && access(TDB_DEV_PATH, F_OK); i++)
		usleep(10000);
}

/* A request on a raw connection; its error and message.  The
 * supervisor (pump) reads and reports the log meanwhile: an answer
 * held for durability comes once it has. */
static int raw_call(struct kt_raw *r, struct tdb_proto_msg *m, char *msg,
		    size_t msglen, struct sup *pump)
{
	unsigned char buf[8192] __attribute__((aligned(8)));
	struct tdb_proto_extack ext = { 0 };
	struct tdb_proto_msg a;
	uint32_t seq = kt_raw_queue(r, m);
	long n;

	kt_raw_flush(r);
	if (pump)
		sup_round(pump, 0);
	n = kt_raw_recv(r, buf, sizeof(buf), 10000);
	CHECK(tdb_proto_parse(buf, (size_t)n, TDB_PROTO_ANSWER, &a, &ext) == 0,
	      "an answer does not parse");
	CHECK(a.seq == seq, "answer seq %u, want %u", a.seq, seq);
	snprintf(msg, msglen, "%s", a.ext.msg ? a.ext.msg : "");
	return a.error;
}

static int raw_put(struct kt_raw *r, const char *key, char *msg, size_t ml,
		   struct sup *pump)
{
	struct tdb_proto_msg m = {
		.cmd = TDB_CMD_PUT,
		.attrs = TDB_PROTO_BIT(TDB_A_TABLE) | TDB_PROTO_BIT(TDB_A_KEY) |
			 TDB_PROTO_BIT(TDB_A_VALUE),
		.table = TABLE, .table_len = sizeof(TABLE) - 1,
		.key = key, .key_len = (uint32_t)strlen(key),
		.value = "v", .value_len = 1,
	};

	return raw_call(r, &m, msg, ml, pump);
}

/* --- the writers ---------------------------------------------------------- */

static void writer(int w)
{
	struct tdbc *c = kt_connect(0);
	struct tdbc_table *t = kt_open(c, TABLE);
	struct tdbc_txn *x;
	char k[32], v[32];
	int i, err;

	for (i = 0; i < PUTS; i++) {
		snprintf(k, sizeof(k), "w%d-%d", w, i);
		snprintf(v, sizeof(v), "v%d", i);
		err = tdbc_put(t, NULL, k, strlen(k), v, strlen(v), 0);
		CHECK(err == 0, "put %s: %s (%s)", k, h_errname(err),
		      tdbc_errmsg(c));
		if (i % 5 == 4) {
			err = tdbc_del(t, NULL, k, strlen(k));
			CHECK(err == 0, "del %s: %s", k, h_errname(err));
		}
	}
	CHECK(tdbc_txn_begin(c, &x) == 0, "txn begin");
	for (i = 0; i < 3; i++) {
		snprintf(k, sizeof(k), "w%d-x%d", w, i);
		CHECK(tdbc_put(t, x, k, strlen(k), "t", 1, 0) == 0, "txn put");
	}
	err = tdbc_txn_commit(x);
	CHECK(err == 0, "commit: %s (%s)", h_errname(err), tdbc_errmsg(c));
	tdbc_table_close(t);
	tdbc_close(c);
	_exit(0);
}

/* The writers' changes are in the log, each writer's in its order. */
static void check_writers(struct sup *s)
{
	char want[PUTS * 2 + 3][64], pre[16];

	for (int w = 0; w < WRITERS; w++) {
		size_t n = 0, j = 0;

		for (int i = 0; i < PUTS; i++) {
			snprintf(want[n++], sizeof(want[0]),
				 "P " TABLE " w%d-%d v%d", w, i, i);
			if (i % 5 == 4)
				snprintf(want[n++], sizeof(want[0]),
					 "D " TABLE " w%d-%d", w, i);
		}
		for (int i = 0; i < 3; i++)
			snprintf(want[n++], sizeof(want[0]),
				 "TP " TABLE " w%d-x%d t", w, i);
		snprintf(pre, sizeof(pre), " w%d-", w);
		for (size_t i = 0; i < s->nops; i++) {
			if (!strstr(s->ops[i], pre))
				continue;
			CHECK(j < n && !strcmp(s->ops[i], want[j]), "writer "
			      "%d: op %zu is \"%s\", want \"%s\"", w, j,
			      s->ops[i], j < n ? want[j] : "nothing");
			j++;
		}
		CHECK(j == n, "writer %d: %zu of %zu ops logged", w, j, n);
	}
}

/* --- the phases ----------------------------------------------------------- */

static int nonroot_claim(void *arg __attribute__((unused)))
{
	struct tdb_sup_claim c;
	int fd = open(TDB_DEV_PATH, O_RDWR), err;

	CHECK(fd >= 0, "open: %s", strerror(errno));
	err = sup_claim_fd(fd, &c, TDB_SUP_SYNC_ALWAYS, 0, INSTANCE);
	CHECK(err == -EPERM, "a claim without CAP_SYS_ADMIN: %s",
	      h_errname(err));
	close(fd);
	return 0;
}

static void recovering(struct sup *s, struct kt_raw *early)
{
	char buf[1024] __attribute__((aligned(4))), msg[256];
	struct tdb_proto_msg m = {
		.cmd = TDB_CMD_TABLE_CREATE,
		.attrs = TDB_PROTO_BIT(TDB_A_TABLE),
		.table = TABLE, .table_len = sizeof(TABLE) - 1,
	};
	struct nlmsghdr *nlh;
	struct kt_genl g;
	int err;

	/* a client on /dev/tdb: each request answered -EAGAIN, and why */
	err = raw_put(early, "early", msg, sizeof(msg), s);
	CHECK(err == -EAGAIN && strstr(msg, "tdb is recovering"),
	      "a put while recovering: %s (%s)", h_errname(err), msg);
	/* generic netlink: the same, in the extended ack */
	kt_genl_open(&g);
	nlh = kt_genl_msg(&g, buf, TDB_CMD_PUT, NLM_F_ACK);
	mnl_attr_put_strz(nlh, TDB_A_TABLE, TABLE);
	mnl_attr_put(nlh, TDB_A_KEY, 1, "k");
	mnl_attr_put(nlh, TDB_A_VALUE, 1, "v");
	err = kt_genl_call(&g, nlh, msg, sizeof(msg));
	CHECK(err == -EAGAIN && strstr(msg, "tdb is recovering"),
	      "a genl put while recovering: %s (%s)", h_errname(err), msg);
	kt_genl_close(&g);
	/* the supervisor's own restore passes, unlogged */
	err = raw_call(&s->r, &m, msg, sizeof(msg), s);
	CHECK(err == 0, "the supervisor's TABLE_CREATE: %s (%s)",
	      h_errname(err), msg);
	CHECK(__atomic_load_n(&s->h->prod, __ATOMIC_ACQUIRE) == 0,
	      "the restore was logged");
	CHECK(!ioctl(s->r.fd, TDB_IOC_SUP_READY, 0), "READY: %s",
	      strerror(errno));
	err = raw_put(early, "early", msg, sizeof(msg), s);
	CHECK(err == 0, "a put after READY: %s (%s)", h_errname(err), msg);
}

/* require_supervisor=1 (set at run time): clients wait for one. */
static void waiting(struct kt_raw *early)
{
	char buf[1024] __attribute__((aligned(4))), msg[256];
	struct tdb_dev_attach a = {
		.version = TDB_DEV_VERSION,
		.sq_data_size = 4096, .cq_data_size = 4096,
	};
	struct nlmsghdr *nlh;
	struct kt_genl g;
	int err, fd;

	sh("echo 1 > /sys/module/tdb/parameters/require_supervisor", 1);
	err = raw_put(early, "early", msg, sizeof(msg), NULL);
	CHECK(err == -EAGAIN && strstr(msg, "waiting for its supervisor"),
	      "a put before any supervisor: %s (%s)", h_errname(err), msg);
	kt_genl_open(&g);
	/* a dump is refused too (its start), but 6.1 loses a dump
	 * start's extended ack: a request shows the message */
	nlh = kt_genl_msg(&g, buf, TDB_CMD_TABLE_LIST, NLM_F_DUMP);
	err = kt_genl_call(&g, nlh, msg, sizeof(msg));
	CHECK(err == -EAGAIN, "a genl dump before any supervisor: %s",
	      h_errname(err));
	nlh = kt_genl_msg(&g, buf, TDB_CMD_TABLE_CREATE, NLM_F_ACK);
	mnl_attr_put_strz(nlh, TDB_A_TABLE, "nope");
	err = kt_genl_call(&g, nlh, msg, sizeof(msg));
	CHECK(err == -EAGAIN && strstr(msg, "waiting for its supervisor"),
	      "a genl create before any supervisor: %s (%s)",
	      h_errname(err), msg);
	kt_genl_close(&g);
	fd = open(TDB_DEV_PATH, O_RDWR);
	CHECK(fd >= 0, "open");
	CHECK(ioctl(fd, TDB_IOC_ATTACH, &a) == -1 && errno == EAGAIN,
	      "ATTACH before any supervisor: %s", strerror(errno));
	close(fd);
}

static void writers(struct sup *s)
{
	pid_t pid[WRITERS];
	int w, left = WRITERS, status;

	for (w = 0; w < WRITERS; w++) {
		pid[w] = fork();
		CHECK(pid[w] >= 0, "fork");
		if (!pid[w])
			writer(w);
		h_track(pid[w]);
	}
	while (left) {
		sup_round(s, 20);
		for (w = 0; w < WRITERS; w++) {
			if (pid[w] <= 0 || waitpid(pid[w], &status, WNOHANG) !=
			    pid[w])
				continue;
			h_untrack(pid[w]);
			CHECK(WIFEXITED(status) && !WEXITSTATUS(status),
			      "writer %d failed (%#x)", w, status);
			pid[w] = 0;
			left--;
		}
	}
	sup_read(s);
	check_writers(s);
}

/* A put's answer waits for DURABLE. */
static void held(struct sup *s)
{
	int status, i;
	pid_t pid = fork();

	CHECK(pid >= 0, "fork");
	if (!pid) {
		struct tdbc *c = kt_connect(0);
		struct tdbc_table *t = kt_open(c, TABLE);

		CHECK(tdbc_put(t, NULL, "held", 4, "h", 1, 0) == 0, "put");
		_exit(0);
	}
	h_track(pid);
	/* read the record, do not report it */
	for (i = 0; i < 100 && !has_op(s, "P " TABLE " held h"); i++) {
		usleep(10000);
		sup_read(s);
	}
	CHECK(has_op(s, "P " TABLE " held h"), "the put was not logged");
	usleep(300000);
	CHECK(waitpid(pid, &status, WNOHANG) == 0, "the put returned before "
	      "its record was durable");
	sup_durable(s, s->next_lsn - 1);
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
	      !WEXITSTATUS(status), "the held put (%#x)", status);
	h_untrack(pid);
}

/* Close with records not durable; a new supervisor finds them. */
static void restart(struct sup *s, uint32_t sync, uint32_t deadline)
{
	struct kt_raw w;
	uint64_t d = s->durable;
	struct tdb_sup_claim c;
	char msg[256];
	int err, i;

	/* two records the supervisor reads but never reports */
	kt_raw_open(&w);
	for (i = 0; i < 2; i++) {
		char k[8];
		struct tdb_proto_msg m = {
			.cmd = TDB_CMD_PUT,
			.attrs = TDB_PROTO_BIT(TDB_A_TABLE) |
				 TDB_PROTO_BIT(TDB_A_KEY) |
				 TDB_PROTO_BIT(TDB_A_VALUE),
			.table = TABLE, .table_len = sizeof(TABLE) - 1,
			.key = k, .key_len = 2, .value = "r", .value_len = 1,
		};

		snprintf(k, sizeof(k), "r%d", i);
		kt_raw_queue(&w, &m);
	}
	kt_raw_flush(&w);
	for (i = 0; i < 100 && s->next_lsn < s->durable + 3; i++) {
		usleep(10000);
		sup_read(s);
	}
	CHECK(s->next_lsn == d + 3, "2 records, got %llu",
	      (unsigned long long)(s->next_lsn - d - 1));
	/* the supervisor dies */
	sup_unmap(s);
	kt_raw_close(&s->r);
	/* another data directory is refused */
	kt_raw_open(&s->r);
	err = sup_claim_fd(s->r.fd, &c, sync, deadline, INSTANCE + 1);
	CHECK(err == -ESTALE && c.kernel_instance == INSTANCE,
	      "another instance's claim: %s (instance %llx)", h_errname(err),
	      (unsigned long long)c.kernel_instance);
	err = sup_claim_fd(s->r.fd, &s->c, sync, deadline, INSTANCE);
	CHECK(err == 0, "the new claim: %s", h_errname(err));
	CHECK(s->c.kernel_instance == INSTANCE && s->c.tables == 1 &&
	      s->c.log_first == d + 1 && s->c.log_next == d + 3,
	      "the new claim: instance %llx, %u tables, LSN %llu..%llu",
	      (unsigned long long)s->c.kernel_instance, s->c.tables,
	      (unsigned long long)s->c.log_first,
	      (unsigned long long)s->c.log_next);
	sup_map(s);
	s->records = 0;
	sup_round(s, 50);
	for (i = 0; i < 2; i++) {
		struct tdb_proto_extack ext = { 0 };
		unsigned char buf[4096] __attribute__((aligned(8)));
		struct tdb_proto_msg a;
		long n = kt_raw_recv(&w, buf, sizeof(buf), 10000);

		CHECK(tdb_proto_parse(buf, (size_t)n, TDB_PROTO_ANSWER, &a,
				      &ext) == 0 && a.error == 0,
		      "the put's answer after the restart");
	}
	sup_round(s, 0);
	CHECK(s->records == 2 && has_op(s, "P " TABLE " r0 r") &&
	      has_op(s, "P " TABLE " r1 r"), "the records not durable were "
	      "lost (%u found)", s->records);
	err = raw_put(&w, "after", msg, sizeof(msg), s);
	CHECK(err == 0, "a put after the restart: %s", h_errname(err));
	kt_raw_close(&w);
}

/* sync none: fill the ring; the change that finds no room is refused. */
static void full(struct sup *s)
{
	static char big[64 << 10];
	struct tdbc *c = kt_connect(0);
	struct tdbc_table *t = kt_open(c, TABLE);
	char k[16];
	int i, err = 0;

	memset(big, 'b', sizeof(big));
	for (i = 0; i < 40; i++) {
		snprintf(k, sizeof(k), "big%d", i);
		err = tdbc_put(t, NULL, k, strlen(k), big, sizeof(big), 0);
		if (err)
			break;
		sup_read(s);    /* read, but never durable */
	}
	CHECK(err == -ENOBUFS && strstr(tdbc_errmsg(c), "the change log is "
	      "full"), "put %d into a full log: %s (%s)", i, h_errname(err),
	      tdbc_errmsg(c));
	CHECK(i >= 8 && i <= 16, "the 1 MiB ring took %d puts of 64 KiB", i);
	CHECK(tdbc_get(t, NULL, k, strlen(k), big, sizeof(big), NULL) ==
	      -ENOENT, "the refused put was applied");
	sup_round(s, 0);
	err = tdbc_put(t, NULL, k, strlen(k), big, sizeof(big), 0);
	CHECK(err == 0, "a put after DURABLE: %s (%s)", h_errname(err),
	      tdbc_errmsg(c));
	tdbc_table_close(t);
	tdbc_close(c);
	sup_round(s, 0);
}

int main(void)
{
	static struct sup s;
	struct tdb_sup_claim c2;
	struct kt_raw early;
	struct stat st;
	int err, fd;

	kt_init("sup", 240);
	kt_need_kernel();
	reload("log_ring_mb=1");

	kt_raw_open(&early);            /* a client from before the claim */
	kt_raw_open(&s.r);
	waiting(&early);
	err = sup_claim_fd(s.r.fd, &s.c, TDB_SUP_SYNC_ALWAYS, 0, INSTANCE);
	CHECK(err == 0, "claim: %s", h_errname(err));
	CHECK(s.c.kernel_instance == 0 && s.c.log_first == FIRST_LSN &&
	      s.c.log_next == FIRST_LSN && s.c.holder_pid == (uint32_t)getpid(),
	      "the first claim's answer");
	sup_map(&s);

	/* one supervisor at a time; root only */
	fd = open(TDB_DEV_PATH, O_RDWR);
	CHECK(fd >= 0, "open");
	err = sup_claim_fd(fd, &c2, TDB_SUP_SYNC_ALWAYS, 0, INSTANCE);
	CHECK(err == -EBUSY && c2.holder_pid == (uint32_t)getpid(),
	      "a second claim: %s, holder %u", h_errname(err), c2.holder_pid);
	close(fd);
	CHECK(stat(TDB_DEV_PATH, &st) == 0 && chmod(TDB_DEV_PATH, 0666) == 0,
	      "chmod");
	kt_as_uid(65534, nonroot_claim, NULL);
	chmod(TDB_DEV_PATH, st.st_mode & 07777);

	recovering(&s, &early);
	kt_raw_close(&early);
	writers(&s);
	held(&s);
	sh("rmmod tdb 2>/dev/null", 0);         /* refused: supervised */
	{
		struct tdb_sup_stats st;

		CHECK(!ioctl(s.r.fd, TDB_IOC_SUP_STATS, &st), "STATS");
		CHECK(st.log_records == s.records && st.held == 0 &&
		      st.timed_out == 0 && st.log_refused == 0 &&
		      st.cleanups >= WRITERS + 1, "STATS: %llu records, %llu "
		      "held, %llu cleanups", (unsigned long long)st.log_records,
		      (unsigned long long)st.held,
		      (unsigned long long)st.cleanups);
	}
	printf("sup: %u records checked (%u transactions), LSN %d..%llu\n",
	       s.records, s.txns, FIRST_LSN,
	       (unsigned long long)s.next_lsn - 1);

	restart(&s, TDB_SUP_SYNC_NONE, 0);
	full(&s);

	/* no supervisor: a durable change times out, applied all the same */
	{
		struct tdbc *c;
		struct tdbc_table *t;
		char v[4];

		restart(&s, TDB_SUP_SYNC_ALWAYS, 300);
		c = kt_connect(0);
		t = kt_open(c, TABLE);
		/* attached, but DURABLE never comes: the deadline holds */
		err = tdbc_put(t, NULL, "slow", 4, "s", 1, 0);
		CHECK(err == -ETIMEDOUT && strstr(tdbc_errmsg(c),
		      "did not report it durable"), "a put the supervisor "
		      "never reports: %s (%s)", h_errname(err),
		      tdbc_errmsg(c));
		CHECK(tdbc_get(t, NULL, "slow", 4, v, sizeof(v), NULL) == 1,
		      "the timed-out put is not applied");
		sup_round(&s, 0);
		CHECK(has_op(&s, "P " TABLE " slow s"), "the timed-out put "
		      "was not logged");
		sup_unmap(&s);
		kt_raw_close(&s.r);
		err = tdbc_put(t, NULL, "late", 4, "l", 1, 0);
		CHECK(err == -ETIMEDOUT && strstr(tdbc_errmsg(c),
		      "no supervisor (tdbd) is attached"), "a put with no "
		      "supervisor: %s (%s)", h_errname(err), tdbc_errmsg(c));
		CHECK(tdbc_get(t, NULL, "late", 4, v, sizeof(v), NULL) == 1,
		      "the timed-out put is not applied");
		{
			struct tdb_sup_stats st;
			int fd = open(TDB_DEV_PATH, O_RDWR);

			CHECK(fd >= 0 && !ioctl(fd, TDB_IOC_SUP_STATS, &st),
			      "STATS by an ordinary opener: %s",
			      strerror(errno));
			CHECK(st.timed_out == 2 && st.held == 0, "STATS: %llu "
			      "timed out, %llu held",
			      (unsigned long long)st.timed_out,
			      (unsigned long long)st.held);
			close(fd);
		}
		tdbc_table_close(t);
		tdbc_close(c);
	}
	reload("");
	printf("sup: recovering, held answers, EBUSY/EPERM/ESTALE, restart "
	       "with no record lost, a full log, timeouts\n");
	kt_done();
	return 0;
}
