// SPDX-License-Identifier: GPL-2.0-only
/*
 * cmd_data.c - the tdb CLI's record commands: get, put, del, incr, scan, and a
 * key's deadline: ttl, expire, persist.  Keys
 * and values are byte strings with lengths (cli_bytes, the library's
 * klen/vlen) from end to end; the output encodings are fmt.c's.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "cli.h"

/* The wall clock in ms since the epoch: the one deadlines are of. */
static uint64_t realtime_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* A deadline in a JSON document: the number, or null for none. */
static void json_deadline(const char *name, uint64_t deadline)
{
	if (deadline)
		printf(",\"%s\":%" PRIu64, name, deadline);
	else
		printf(",\"%s\":null", name);
}

/* {"key":..,"value":..} or, without a value, {"key":..}, and
 * "version":N and "deadline":N (or null) when asked: one document. */
static void json_record(const struct cli *cli, const void *k, size_t kn,
			const void *v, size_t vn, bool with_value,
			uint64_t version, uint64_t deadline)
{
	bool hex = cli->enc == FMT_HEX;

	cli_doc_open();
	putchar('{');
	fmt_json_field(stdout, "key", k, kn, hex);
	if (with_value) {
		putchar(',');
		fmt_json_field(stdout, "value", v, vn, hex);
	}
	if (cli->show_version)
		printf(",\"version\":%" PRIu64, version);
	if (cli->show_deadline)
		json_deadline("deadline", deadline);
	putchar('}');
	cli_doc_close();
}

/* The value (malloc()ed), its version and deadline: a first try into a
 * small buffer, then one of the size the owner said (again if the value
 * grew meanwhile). */
static long get_ex(struct tdbc_table *t, const struct cli *cli, void **val,
		   uint64_t *version, uint64_t *deadline)
{
	size_t cap = 4096, need = 0;
	long n;

	for (;;) {
		void *p = malloc(cap ? cap : 1);

		if (!p)
			return -ENOMEM;
		n = tdbc_get_ex(t, NULL, cli->key.p, cli->key.n, p, cap,
				&need, version, deadline);
		if (n != -ENOBUFS || need <= cap) {
			if (n < 0)
				free(p);
			else
				*val = p;
			return n;
		}
		free(p);
		cap = need;
	}
}

int cmd_get(struct cli *cli)
{
	struct tdbc_table *t;
	uint64_t version = 0, deadline = 0;
	void *val = NULL;
	long n;
	int rc;

	if ((rc = cli_open_table(cli, &t)))
		return -rc;
	if (cli->show_version || cli->show_deadline)
		n = get_ex(t, cli, &val, &version, &deadline);
	else
		n = tdbc_get_alloc(t, NULL, cli->key.p, cli->key.n, &val);
	if (n < 0) {
		rc = cli_fail(cli, (int)n);
	} else if (cli->json) {
		json_record(cli, cli->key.p, cli->key.n, val, (size_t)n, true,
			    version, deadline);
	} else {
		/* Raw by default: the bytes and nothing else, so that
		 * `tdb get T K > F` copies the value exactly; encoded
		 * output is text and ends its line.  --version: the
		 * version and a tab first, so the rest is still exact;
		 * --deadline: the deadline (- for none) and a tab, after
		 * the version. */
		enum fmt_enc enc = cli_enc(cli, FMT_RAW);

		if (cli->show_version)
			printf("%" PRIu64 "\t", version);
		if (cli->show_deadline && deadline)
			printf("%" PRIu64 "\t", deadline);
		else if (cli->show_deadline)
			fputs("-\t", stdout);
		fmt_bytes(stdout, val, (size_t)n, enc);
		if (enc != FMT_RAW)
			putchar('\n');
	}
	free(val);
	tdbc_table_close(t);
	return rc;
}

int cmd_incr(struct cli *cli)
{
	struct tdbc_table *t;
	int64_t num = 0;
	int rc, err;

	if ((rc = cli_open_table(cli, &t)))
		return -rc;
	err = tdbc_incr(t, NULL, cli->key.p, cli->key.n, cli->delta, &num);
	if (err) {
		rc = cli_fail(cli, err);
	} else if (cli->json) {
		cli_doc_open();
		putchar('{');
		fmt_json_field(stdout, "key", cli->key.p, cli->key.n,
			       cli->enc == FMT_HEX);
		printf(",\"value\":%" PRId64 "}", num);
		cli_doc_close();
	} else {
		printf("%" PRId64 "\n", num);
	}
	tdbc_table_close(t);
	return rc;
}

static int put_or_del(struct cli *cli, bool put)
{
	struct tdbc_table *t;
	int rc, err;

	if ((rc = cli_open_table(cli, &t)))
		return -rc;
	if (put && cli->ttl_ms)
		err = tdbc_put_ttl(t, NULL, cli->key.p, cli->key.n,
				   cli->value.p, cli->value.n,
				   cli_cond_flags(cli), cli->if_version,
				   cli->ttl_ms);
	else if (put && cli->at_ms)
		err = tdbc_put_at(t, NULL, cli->key.p, cli->key.n,
				  cli->value.p, cli->value.n,
				  cli_cond_flags(cli), cli->if_version,
				  cli->at_ms);
	else if (put)
		err = tdbc_put_if(t, NULL, cli->key.p, cli->key.n,
				  cli->value.p, cli->value.n,
				  cli_cond_flags(cli), cli->if_version);
	else
		err = tdbc_del_if(t, NULL, cli->key.p, cli->key.n,
				  cli_cond_flags(cli), cli->if_version);
	if (err)
		rc = cli_fail(cli, err);
	else if (cli->json)
		cli_ok_doc();
	tdbc_table_close(t);
	return rc;
}

int cmd_put(struct cli *cli)
{
	return put_or_del(cli, true);
}

int cmd_del(struct cli *cli)
{
	return put_or_del(cli, false);
}

/* --- a key's deadline ---------------------------------------------------- */

int cmd_ttl(struct cli *cli)
{
	struct tdbc_table *t;
	uint64_t deadline = 0, now, left;
	int rc, err;

	if ((rc = cli_open_table(cli, &t)))
		return -rc;
	err = tdbc_ttl(t, cli->key.p, cli->key.n, &deadline, NULL);
	now = realtime_ms();
	/* the owner said it is there, so its deadline was ahead of the
	 * owner's clock; ours is the same clock, read a little later */
	left = deadline > now ? deadline - now : 0;
	if (err) {
		rc = cli_fail(cli, err);
	} else if (cli->json) {
		cli_doc_open();
		putchar('{');
		fmt_json_field(stdout, "key", cli->key.p, cli->key.n,
			       cli->enc == FMT_HEX);
		if (deadline)
			printf(",\"ttl_ms\":%" PRIu64, left);
		else
			fputs(",\"ttl_ms\":null", stdout);
		json_deadline("deadline", deadline);
		putchar('}');
		cli_doc_close();
	} else if (deadline) {
		printf("%" PRIu64 "\n", left);
	} else {
		puts("no expiry");
	}
	tdbc_table_close(t);
	return rc;
}

/* expire (DURATION or --at) and persist: a write of the deadline. */
static int set_deadline(struct cli *cli, bool persist)
{
	struct tdbc_table *t;
	int rc, err;

	if ((rc = cli_open_table(cli, &t)))
		return -rc;
	if (persist)
		err = tdbc_persist(t, cli->key.p, cli->key.n);
	else if (cli->at_ms)
		err = tdbc_expire_at(t, cli->key.p, cli->key.n, cli->at_ms);
	else
		err = tdbc_expire(t, cli->key.p, cli->key.n, cli->ttl_ms,
				  NULL);
	if (err)
		rc = cli_fail(cli, err);
	else if (cli->json)
		cli_ok_doc();
	tdbc_table_close(t);
	return rc;
}

int cmd_expire(struct cli *cli)
{
	return set_deadline(cli, false);
}

int cmd_persist(struct cli *cli)
{
	return set_deadline(cli, true);
}

/* One scan line: KEY<tab>VALUE (or KEY), escaped, or hex with --hex;
 * --deadline: the deadline (- for none) and a tab first. */
static void scan_line(const struct cli *cli, const void *k, size_t kn,
		      const void *v, size_t vn, uint64_t deadline)
{
	enum fmt_enc enc = cli_enc(cli, FMT_ESCAPE);

	if (cli->json) {
		json_record(cli, k, kn, v, vn, !cli->keys_only, 0, deadline);
		return;
	}
	if (cli->show_deadline && deadline)
		printf("%" PRIu64 "\t", deadline);
	else if (cli->show_deadline)
		fputs("-\t", stdout);
	fmt_bytes(stdout, k, kn, enc);
	if (!cli->keys_only) {
		putchar('\t');
		fmt_bytes(stdout, v, vn, enc);
	}
	putchar('\n');
}

int cmd_scan(struct cli *cli)
{
	struct tdbc_table *t;
	struct tdbc_scan *s;
	const void *k, *v;
	uint64_t deadline = 0;
	size_t kn, vn;
	int rc, err;

	if ((rc = cli_open_table(cli, &t)))
		return -rc;
	if (cli->ranged) {
		struct tdbc_range r = {
			.from = cli->from.set ? cli->from.p : NULL,
			.from_len = cli->from.n,
			.to = cli->to.set ? cli->to.p : NULL,
			.to_len = cli->to.n,
			.flags = cli->range_flags,
		};

		err = tdbc_scan_range(t, &r, cli->limit, 0, &s);
	} else {
		err = tdbc_scan_open(t, cli->prefix.p, cli->prefix.n,
				     cli->limit, &s);
	}
	if (err) {
		rc = cli_fail(cli, err);
		goto out;
	}
	while ((err = tdbc_scan_next_ex(s, &k, &kn, &v, &vn, NULL,
					&deadline)) > 0)
		scan_line(cli, k, kn, v, vn, deadline);
	if (err < 0)
		rc = cli_fail(cli, err);
	tdbc_scan_close(s);
out:
	tdbc_table_close(t);
	return rc;
}
