// SPDX-License-Identifier: GPL-2.0-only
/*
 * cmd_data.c - the tdb CLI's record commands: get, put, del, incr, scan.  Keys
 * and values are byte strings with lengths (cli_bytes, the library's
 * klen/vlen) from end to end; the output encodings are fmt.c's.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"

/* {"key":..,"value":..} or, without a value, {"key":..}, and
 * "version":N when asked (version not 0): one document. */
static void json_record(const struct cli *cli, const void *k, size_t kn,
			const void *v, size_t vn, bool with_value,
			uint64_t version)
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
	putchar('}');
	cli_doc_close();
}

/* The value (malloc()ed) and its version: a first try into a small
 * buffer, then one of the size the owner said (again if the value grew
 * meanwhile). */
static long get_ver(struct tdbc_table *t, const struct cli *cli, void **val,
		    uint64_t *version)
{
	size_t cap = 4096, need = 0;
	long n;

	for (;;) {
		void *p = malloc(cap ? cap : 1);

		if (!p)
			return -ENOMEM;
		n = tdbc_get_ver(t, NULL, cli->key.p, cli->key.n, p, cap,
				 &need, version);
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
	uint64_t version = 0;
	void *val = NULL;
	long n;
	int rc;

	if ((rc = cli_open_table(cli, &t)))
		return -rc;
	if (cli->show_version)
		n = get_ver(t, cli, &val, &version);
	else
		n = tdbc_get_alloc(t, NULL, cli->key.p, cli->key.n, &val);
	if (n < 0) {
		rc = cli_fail(cli, (int)n);
	} else if (cli->json) {
		json_record(cli, cli->key.p, cli->key.n, val, (size_t)n, true,
			    version);
	} else {
		/* Raw by default: the bytes and nothing else, so that
		 * `tdb get T K > F` copies the value exactly; encoded
		 * output is text and ends its line.  --version: the
		 * version and a tab first, so the rest is still exact. */
		enum fmt_enc enc = cli_enc(cli, FMT_RAW);

		if (cli->show_version)
			printf("%" PRIu64 "\t", version);
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
	if (put)
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

/* One scan line: KEY<tab>VALUE (or KEY), escaped, or hex with --hex. */
static void scan_line(const struct cli *cli, const void *k, size_t kn,
		      const void *v, size_t vn)
{
	enum fmt_enc enc = cli_enc(cli, FMT_ESCAPE);

	if (cli->json) {
		json_record(cli, k, kn, v, vn, !cli->keys_only, 0);
		return;
	}
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
	size_t kn, vn;
	int rc, err;

	if ((rc = cli_open_table(cli, &t)))
		return -rc;
	err = tdbc_scan_open(t, cli->prefix.p, cli->prefix.n, cli->limit,
			     &s);
	if (err) {
		rc = cli_fail(cli, err);
		goto out;
	}
	while ((err = tdbc_scan_next(s, &k, &kn, &v, &vn)) > 0)
		scan_line(cli, k, kn, v, vn);
	if (err < 0)
		rc = cli_fail(cli, err);
	tdbc_scan_close(s);
out:
	tdbc_table_close(t);
	return rc;
}
