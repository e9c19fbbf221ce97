// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_ckpt_stop.c - checkpoints never hold a stop hostage, and the
 * checkpoint file does not grow without bound (docs/DURABILITY.md,
 * "Checkpoints").
 *
 *  - stop: a table of 2 M records (scaled), new since the last
 *    checkpoint so a checkpoint would write it whole.  SIGTERM must end
 *    tdbd within STOP_MS (before: it wrote that checkpoint first, about
 *    6 us a record), and it says it stops without one; the next start
 *    replays the WAL and has every record with its value.  That start
 *    checkpoints after its recovery: SIGTERM at once, while that
 *    checkpoint runs, must end it within STOP_MS too, and the start
 *    after has every record.  A small stop checkpoint is still written.
 *    TDBD_STOP_CKPT_MAX is set to a quarter of the table, so the
 *    sanitizer build (half the records) takes the same paths.
 *  - size: a table of 100k records (16 B keys, 200 B values) rewritten
 *    whole (every value new) ROUNDS times, a checkpoint after each (one
 *    a second); after each, data.mdb must be at most 1.5x the records'
 *    bytes (before: it grew to three copies of the table, LMDB reusing
 *    a freed page only two transactions later).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

#define TABLE   "ck"
#define KLEN    16
#define BATCH   256
#define STOP_MS 2500u

static void key_make(char *k, uint64_t i)
{
	char tmp[32];

	snprintf(tmp, sizeof(tmp), "k%015llu",
		 (unsigned long long)(i % 1000000000000000ull));
	memcpy(k, tmp, KLEN);
}

/* The value of key i in generation gen: vlen bytes from both. */
static void val_make(unsigned char *v, size_t vlen, uint64_t i,
		     unsigned int gen)
{
	uint64_t s = i * 0x9e3779b97f4a7c15ull ^ gen;

	for (size_t j = 0; j < vlen; j++)
		v[j] = (unsigned char)(h_rand(&s) >> 56);
}

/* Put keys [0, n) with generation gen's values, BATCH in flight. */
static void load(struct tdbc *c, struct tdbc_table *t, uint64_t n,
		 size_t vlen, unsigned int gen)
{
	static char keys[BATCH][KLEN];
	static unsigned char vals[BATCH][256];
	struct tdbc_req rq[BATCH];
	struct tdbc_cqe cq[BATCH];
	uint64_t i;

	for (i = 0; i < n; i += BATCH) {
		unsigned int m = n - i < BATCH ? (unsigned int)(n - i) : BATCH;
		unsigned int sent = 0, done = 0, j;
		int k;

		for (j = 0; j < m; j++) {
			key_make(keys[j], i + j);
			val_make(vals[j], vlen, i + j, gen);
			rq[j] = (struct tdbc_req){ .op = TDBC_OP_PUT, .table = t,
				.key = keys[j], .klen = KLEN, .val = vals[j],
				.vlen = vlen, .user = j };
		}
		while (done < m) {
			if (sent < m) {
				k = tdbc_submit(c, rq + sent, m - sent);
				CHECK(k >= 0, "submit: %s", h_errname(k));
				sent += (unsigned int)k;
			}
			k = tdbc_reap(c, cq, BATCH, 1, 10000);
			CHECK(k > 0, "reap: %s", h_errname(k));
			for (j = 0; j < (unsigned int)k; j++)
				CHECK(cq[j].res == 0, "put: %s",
				      h_errname(cq[j].res));
			done += (unsigned int)k;
		}
	}
}

/* The table has n records, and a sample of them gen's values. */
static void verify(const struct h_daemon *d, uint64_t n, size_t vlen,
		   unsigned int gen)
{
	struct tdbc *c = h_connect(d, 0);
	struct tdbc_table_stat st;
	struct tdbc_table *t;
	unsigned char want[256], got[256];
	uint64_t s = 12345;
	char k[KLEN];
	int err;

	err = tdbc_table_stat(c, TABLE, &st);
	CHECK(!err, "table stat: %s", h_errname(err));
	CHECK(st.records == n, "%llu records after the restart, not %llu",
	      (unsigned long long)st.records, (unsigned long long)n);
	err = tdbc_table_open(c, TABLE, &t);
	CHECK(!err, "open: %s", h_errname(err));
	for (unsigned int j = 0; j < 2000; j++) {
		uint64_t i = h_rand(&s) % n;
		size_t need = 0;
		long len;

		key_make(k, i);
		val_make(want, vlen, i, gen);
		len = tdbc_get(t, NULL, k, KLEN, got, sizeof(got), &need);
		CHECK(len == (long)vlen && !memcmp(got, want, vlen),
		      "key %llu: wrong value after the restart (%ld)",
		      (unsigned long long)i, len);
	}
	tdbc_table_close(t);
	tdbc_close(c);
}

/* SIGTERM; exit 0 within STOP_MS (scaled for the sanitizers). */
static unsigned int stop_fast(struct h_daemon *d, const char *when)
{
	unsigned int budget = h_sanitized() ? 3 * STOP_MS : STOP_MS;
	uint64_t t0 = h_now_ms();
	unsigned int ms;

	CHECK(kill(d->pid, SIGTERM) == 0, "kill: %s", strerror(errno));
	if (!h_wait_exit(d, 120000)) {
		kill(d->pid, SIGKILL);
		h_wait_exit(d, 10000);
		CHECK(0, "%s: tdbd did not exit in 120 s of SIGTERM", when);
	}
	ms = (unsigned int)(h_now_ms() - t0);
	CHECK(WIFEXITED(d->status) && WEXITSTATUS(d->status) == 0,
	      "%s: tdbd did not exit 0", when);
	h_check_log(d);
	CHECK(ms <= budget, "%s: SIGTERM took %u ms (at most %u)", when, ms,
	      budget);
	return ms;
}

static void part_stop(void)
{
	static const char *const args[] = { "--sync", "none",
		"--checkpoint-interval", "1440m",
		"--checkpoint-wal-size", "64G", NULL };
	uint64_t n = (uint64_t)h_scaled(2000000, 1000);
	char maxenv[64];
	const char *env[] = { maxenv, NULL };
	struct h_daemon d;
	struct tdbc_table *t;
	struct tdbc *c;
	unsigned int ms;
	int err;

	snprintf(maxenv, sizeof(maxenv), "TDBD_STOP_CKPT_MAX=%llu",
		 (unsigned long long)(n / 4));
	h_start_env(&d, "stop", args, env);
	c = h_connect(&d, 0);
	err = tdbc_table_create(c, TABLE, NULL);
	CHECK(!err, "create: %s", h_errname(err));
	err = tdbc_table_open(c, TABLE, &t);
	CHECK(!err, "open: %s", h_errname(err));
	load(c, t, n, 100, 1);
	tdbc_table_close(t);
	tdbc_close(c);

	/* a new table of n records: no checkpoint at the stop */
	ms = stop_fast(&d, "stop with a new table");
	CHECK(h_log_has(&d, "stopping without a checkpoint"),
	      "no \"stopping without a checkpoint\" in the log");
	h_note("SIGTERM with %llu records to checkpoint: %u ms",
	       (unsigned long long)n, ms);

	/* the start replays it and checkpoints after recovery: stop it
	 * while that checkpoint runs */
	h_start_env(&d, "stop", args, env);
	ms = stop_fast(&d, "stop during the checkpoint after recovery");
	h_note("SIGTERM right after a start that replayed %llu records: "
	       "%u ms, the checkpoint %s", (unsigned long long)n, ms,
	       h_log_has(&d, "abandoned") ? "abandoned" :
	       h_log_has(&d, "(after recovery)") ? "done first" : "not begun");

	/* every record, and a small stop checkpoint is written */
	h_start_env(&d, "stop", args, env);
	verify(&d, n, 100, 1);
	c = h_connect(&d, 0);
	err = tdbc_table_open(c, TABLE, &t);
	CHECK(!err, "open: %s", h_errname(err));
	load(c, t, 100, 100, 2);
	tdbc_table_close(t);
	tdbc_close(c);
	h_stop(&d);
	if (!h_log_has(&d, "(after recovery)"))
		CHECK(h_log_has(&d, "(stopping)"),
		      "no checkpoint written at a stop with little to write");
}

#define ROUNDS   8
#define SZ_KEYS  100000
#define SZ_VLEN  200

static void part_size(void)
{
	static const char *const args[] = { "--sync", "none",
		"--checkpoint-interval", "1s", "--log-level", "info", NULL };
	static const char *const env[] = { "TDBD_CKPT_COMPACT_MIN=1048576",
		NULL };
	/* what the checkpoint holds: keys and values, and each key again
	 * with its 8-byte version in the table's /ver/ database */
	const double rec = (double)SZ_KEYS * (KLEN + SZ_VLEN) +
			   (double)SZ_KEYS * (KLEN + 8);
	struct h_daemon d;
	struct tdbc_table *t;
	struct tdbc *c;
	char file[H_PATH + 32];
	double worst = 0;
	int err;

	h_start_env(&d, "size", args, env);
	snprintf(file, sizeof(file), "%s/checkpoint/data.mdb", d.data);
	c = h_connect(&d, 0);
	err = tdbc_table_create(c, TABLE, NULL);
	CHECK(!err, "create: %s", h_errname(err));
	err = tdbc_table_open(c, TABLE, &t);
	CHECK(!err, "open: %s", h_errname(err));
	for (unsigned int r = 1; r <= ROUNDS; r++) {
		uint64_t t0 = h_now_ms(), t1;
		struct tdbc_stats ts;
		char line[64];
		struct stat st;

		load(c, t, SZ_KEYS, SZ_VLEN, r);
		/* a checkpoint of all of it (the counters), then its size
		 * line and its compaction if it makes one (the log; a
		 * tdbd that writes no size line gets 2 s) */
		h_stats(c, &ts);
		while (ts.ckpt_lsn < ts.wal_lsn) {
			CHECK(h_now_ms() - t0 < 60000, "round %u: no "
			      "checkpoint in 60 s", r);
			h_sleep_ms(50);
			h_stats(c, &ts);
		}
		/* its log line comes after the counter */
		snprintf(line, sizeof(line), "checkpoint at LSN %llu (",
			 (unsigned long long)ts.ckpt_lsn);
		while (!h_log_count(&d, line)) {
			CHECK(h_now_ms() - t0 < 60000, "round %u: no \"%s\" "
			      "in the log", r, line);
			h_sleep_ms(20);
		}
		t1 = h_now_ms();
		while (h_log_count(&d, "checkpoint: file ") <
		       h_log_count(&d, "checkpoint at LSN ") - 1 ||
		       h_log_count(&d, "; compacting") !=
		       h_log_count(&d, "checkpoint: compacted: ")) {
			if (!h_log_count(&d, "checkpoint: file ") &&
			    h_now_ms() - t1 > 2000)
				break;
			CHECK(h_now_ms() - t0 < 60000, "round %u: the "
			      "checkpoint's size line did not come", r);
			h_sleep_ms(50);
		}
		CHECK(!stat(file, &st), "stat %s: %s", file, strerror(errno));
		h_note("round %u: data.mdb %.1f MiB, %.2fx the records", r,
		       (double)st.st_size / 1048576, (double)st.st_size / rec);
		if ((double)st.st_size / rec > worst)
			worst = (double)st.st_size / rec;
		CHECK((double)st.st_size <= 1.5 * rec, "round %u: data.mdb "
		      "is %lld bytes, over 1.5x the records' %.0f", r,
		      (long long)st.st_size, rec);
	}
	tdbc_table_close(t);
	tdbc_close(c);
	h_stop(&d);
	h_start(&d, "size", args);
	verify(&d, SZ_KEYS, SZ_VLEN, ROUNDS);
	h_stop(&d);
	h_note("the file was at most %.2fx the records after a checkpoint",
	       worst);
}

int main(void)
{
	h_init("ckpt-stop", h_sanitized() ? 600 : 240);
	if (h_want("stop"))
		part_stop();
	if (h_want("size"))
		part_size();
	h_done();
	return 0;
}
