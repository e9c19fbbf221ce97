// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_answers.c - answers the owner must give whatever the request:
 *  - dumps that skip records: a prefix SCAN over 20000 records that
 *    matches none, or a few at the far end, completes with the right
 *    records over rings and over TDBC_NO_RINGS (tdb.ko used to pause
 *    such a dump after 256 records with nothing written: the rings
 *    client napped per 256 records, genl ended it with -EIO);
 *  - generic netlink (tdb.ko only): NLM_F_ACK must match the command
 *    (PUT without it, GET with it: exactly one NLMSG_ERROR -EINVAL,
 *    nothing more), and requests refused before the owner runs them
 *    count in STATS requests and errors;
 *  - /dev/tdb (tdb.ko only): at most 1024 watches per client (-EMFILE).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <libmnl/libmnl.h>

#include <tdb/client.h>
#include <tdb/kdev.h>
#include <tdb/proto.h>

#include "kt.h"

#define NREC 20000

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Scan prefix; the keys must be exactly want[0..n), in any order (the
 * engine's order is not the keys'), each once. */
static void scan_expect(struct tdbc_table *t, const char *what,
			const char *prefix, const char *const *want,
			unsigned int n)
{
	struct tdbc_scan *s;
	const void *k, *v;
	size_t kl, vl;
	unsigned int got = 0, i;
	bool seen[16] = { false };
	double t0 = now_s();
	int err;

	err = tdbc_scan_open(t, prefix, strlen(prefix), 0, &s);
	CHECK(err == 0, "%s: scan_open \"%s\": %s", what, prefix,
	      h_errname(err));
	while ((err = tdbc_scan_next(s, &k, &kl, &v, &vl)) == 1) {
		CHECK(got < n, "%s: prefix \"%s\": more than %u records",
		      what, prefix, n);
		for (i = 0; i < n; i++)
			if (kl == strlen(want[i]) && !memcmp(k, want[i], kl))
				break;
		CHECK(i < n && !seen[i], "%s: prefix \"%s\": record \"%.*s\" "
		      "%s", what, prefix, (int)kl, (const char *)k,
		      i < n ? "twice" : "does not match");
		seen[i] = true;
		CHECK(vl == kl && !memcmp(v, k, vl), "%s: bad value", what);
		got++;
	}
	CHECK(err == 0, "%s: prefix \"%s\": scan_next: %s", what, prefix,
	      h_errname(err));
	CHECK(got == n, "%s: prefix \"%s\": %u records, want %u", what,
	      prefix, got, n);
	tdbc_scan_close(s);
	printf("# %s: prefix \"%s\": %u records in %.2f s\n", what, prefix,
	       got, now_s() - t0);
}

static void skipping_scans(const char *table, unsigned int flags)
{
	static const char *const none[1];
	static const char *const tail[] = { "zz0", "zz1", "zz2" };
	static const char *const mid[] = {
		"k12340", "k12341", "k12342", "k12343", "k12344",
		"k12345", "k12346", "k12347", "k12348", "k12349",
	};
	static const char *const tail9[] = {
		"k19990", "k19991", "k19992", "k19993", "k19994",
		"k19995", "k19996", "k19997", "k19998", "k19999",
	};
	struct tdbc *c = kt_connect(flags);
	struct tdbc_table *t;
	char key[16];
	unsigned int i;
	int err;

	kt_create(c, table, 0600, 0);
	t = kt_open(c, table);
	for (i = 0; i < NREC; i++) {
		int n = snprintf(key, sizeof(key), "k%05u", i);

		err = tdbc_put(t, NULL, key, (size_t)n, key, (size_t)n, 0);
		CHECK(err == 0, "%s: put %s: %s", table, key, h_errname(err));
	}
	for (i = 0; i < 3; i++) {
		int n = snprintf(key, sizeof(key), "zz%u", i);

		err = tdbc_put(t, NULL, key, (size_t)n, key, (size_t)n, 0);
		CHECK(err == 0, "%s: put %s: %s", table, key, h_errname(err));
	}
	scan_expect(t, table, "nomatch", none, 0);
	scan_expect(t, table, "zz", tail, 3);
	scan_expect(t, table, "k1234", mid, 10);
	/* and the connection still answers */
	scan_expect(t, table, "zz1", tail + 1, 1);
	scan_expect(t, table, "k1999", tail9, 10);
	tdbc_close(c);
}

/* Send nlh; exactly one answer: an NLMSG_ERROR with err, nothing else
 * (a second answer would already be queued: doit runs in send()). */
static void one_error(struct kt_genl *g, struct nlmsghdr *nlh, int want,
		      const char *what)
{
	char buf[8192] __attribute__((aligned(4))), msg[256];
	int err = kt_genl_call(g, nlh, msg, sizeof(msg));
	long n;

	CHECK(err == want, "%s: %s (%s), want %s", what, h_errname(err), msg,
	      h_errname(want));
	n = recv(g->fd, buf, sizeof(buf), MSG_DONTWAIT);
	CHECK(n < 0 && errno == EAGAIN, "%s: a second answer (%ld bytes)",
	      what, n);
	printf("# %s: %s \"%s\"\n", what, h_errname(err), msg);
}

static void genl_acks(void)
{
	char buf[1024] __attribute__((aligned(4)));
	struct tdbc *c = kt_connect(0);
	struct tdbc_stats st0, st1;
	struct kt_genl g;
	struct nlmsghdr *nlh;
	int err;

	kt_create(c, "an_acks", 0600, 0);
	err = tdbc_stats(c, &st0);
	CHECK(err == 0, "stats: %s", h_errname(err));

	kt_genl_open(&g);
	nlh = kt_genl_msg(&g, buf, TDB_CMD_PUT, 0);
	mnl_attr_put_strz(nlh, TDB_A_TABLE, "an_acks");
	mnl_attr_put(nlh, TDB_A_KEY, 3, "key");
	mnl_attr_put(nlh, TDB_A_VALUE, 5, "value");
	one_error(&g, nlh, -EINVAL, "PUT without NLM_F_ACK");

	nlh = kt_genl_msg(&g, buf, TDB_CMD_GET, NLM_F_ACK);
	mnl_attr_put_strz(nlh, TDB_A_TABLE, "an_acks");
	mnl_attr_put(nlh, TDB_A_KEY, 3, "key");
	one_error(&g, nlh, -EINVAL, "GET with NLM_F_ACK");

	nlh = kt_genl_msg(&g, buf, TDB_CMD_STATS, NLM_F_ACK);
	one_error(&g, nlh, -EINVAL, "STATS with NLM_F_ACK");

	nlh = kt_genl_msg(&g, buf, TDB_CMD_SCAN, NLM_F_DUMP | NLM_F_ACK);
	mnl_attr_put_strz(nlh, TDB_A_TABLE, "an_acks");
	one_error(&g, nlh, -EINVAL, "SCAN with NLM_F_ACK");

	/* The refused PUT wrote nothing; the right flags still work. */
	nlh = kt_genl_msg(&g, buf, TDB_CMD_GET, 0);
	mnl_attr_put_strz(nlh, TDB_A_TABLE, "an_acks");
	mnl_attr_put(nlh, TDB_A_KEY, 3, "key");
	one_error(&g, nlh, -ENOENT, "GET of the refused PUT's key");
	nlh = kt_genl_msg(&g, buf, TDB_CMD_PUT, NLM_F_ACK);
	mnl_attr_put_strz(nlh, TDB_A_TABLE, "an_acks");
	mnl_attr_put(nlh, TDB_A_KEY, 3, "key");
	mnl_attr_put(nlh, TDB_A_VALUE, 5, "value");
	one_error(&g, nlh, 0, "PUT with NLM_F_ACK");

	/* A malformed request (GET without KEY): refused by the validator
	 * before the owner runs it. */
	nlh = kt_genl_msg(&g, buf, TDB_CMD_GET, 0);
	mnl_attr_put_strz(nlh, TDB_A_TABLE, "an_acks");
	one_error(&g, nlh, -EINVAL, "GET without KEY");
	kt_genl_close(&g);

	/* 5 refused here (4 flags, 1 parse), 1 owner error (ENOENT), and
	 * this STATS itself; nothing else runs meanwhile. */
	err = tdbc_stats(c, &st1);
	CHECK(err == 0, "stats: %s", h_errname(err));
	printf("# STATS requests %llu -> %llu, errors %llu -> %llu\n",
	       (unsigned long long)st0.requests,
	       (unsigned long long)st1.requests,
	       (unsigned long long)st0.errors,
	       (unsigned long long)st1.errors);
	CHECK(st1.errors >= st0.errors + 6, "STATS errors %llu -> %llu: "
	      "the refused requests were not counted",
	      (unsigned long long)st0.errors, (unsigned long long)st1.errors);
	CHECK(st1.requests >= st0.requests + 8, "STATS requests %llu -> %llu",
	      (unsigned long long)st0.requests,
	      (unsigned long long)st1.requests);
	tdbc_close(c);
}

static void watch_cap(void)
{
	static struct tdbc_watch *w[1025];
	struct tdbc *c = kt_connect(0);
	struct tdbc_table *t;
	char p[16];
	unsigned int i;
	int err = 0;

	kt_create(c, "an_watch", 0600, 0);
	t = kt_open(c, "an_watch");
	for (i = 0; i < 1024; i++) {
		int n = snprintf(p, sizeof(p), "p%u", i);

		err = tdbc_watch(t, p, (size_t)n, &w[i]);
		CHECK(err == 0, "watch %u: %s", i, h_errname(err));
	}
	err = tdbc_watch(t, "over", 4, &w[1024]);
	CHECK(err == -EMFILE, "watch 1025: %s, want EMFILE", h_errname(err));
	tdbc_watch_close(w[0]);
	err = tdbc_watch(t, "again", 5, &w[0]);
	CHECK(err == 0, "a watch after UNWATCH: %s", h_errname(err));
	for (i = 0; i < 1024; i++)
		tdbc_watch_close(w[i]);
	tdbc_close(c);
}

int main(void)
{
	kt_init("answers", 300);
	skipping_scans("an_rings", 0);
	skipping_scans("an_norings", TDBC_NO_RINGS);
	if (kt_kernel) {
		genl_acks();
		watch_cap();
	}
	kt_done();
	return 0;
}
