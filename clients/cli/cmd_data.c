// SPDX-License-Identifier: GPL-2.0-only
/*
 * cmd_data.c - the tdb CLI's record commands: get, put, del, scan.  Keys
 * and values are byte strings with lengths (cli_bytes, the library's
 * klen/vlen) from end to end; the output encodings are fmt.c's.
 */
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"

/* {"key":..,"value":..} or, without a value, {"key":..}: one document. */
static void json_record(const struct cli *cli, const void *k, size_t kn,
			const void *v, size_t vn, bool with_value)
{
	bool hex = cli->enc == FMT_HEX;

	cli_doc_open();
	putchar('{');
	fmt_json_field(stdout, "key", k, kn, hex);
	if (with_value) {
		putchar(',');
		fmt_json_field(stdout, "value", v, vn, hex);
	}
	putchar('}');
	cli_doc_close();
}

int cmd_get(struct cli *cli)
{
	struct tdbc_table *t;
	void *val = NULL;
	long n;
	int rc;

	if ((rc = cli_open_table(cli, &t)))
		return -rc;
	n = tdbc_get_alloc(t, NULL, cli->key.p, cli->key.n, &val);
	if (n < 0) {
		rc = cli_fail(cli, (int)n);
	} else if (cli->json) {
		json_record(cli, cli->key.p, cli->key.n, val, (size_t)n, true);
	} else {
		/* Raw by default: the bytes and nothing else, so that
		 * `tdb get T K > F` copies the value exactly; encoded
		 * output is text and ends its line. */
		enum fmt_enc enc = cli_enc(cli, FMT_RAW);

		fmt_bytes(stdout, val, (size_t)n, enc);
		if (enc != FMT_RAW)
			putchar('\n');
	}
	free(val);
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
		err = tdbc_put(t, NULL, cli->key.p, cli->key.n, cli->value.p,
			       cli->value.n,
			       cli->no_overwrite ? TDBC_NOOVERWRITE : 0);
	else
		err = tdbc_del(t, NULL, cli->key.p, cli->key.n);
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
		json_record(cli, k, kn, v, vn, !cli->keys_only);
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
