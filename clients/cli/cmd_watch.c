// SPDX-License-Identifier: GPL-2.0-only
/*
 * cmd_watch.c - `tdb watch`: follow a table's change feed, one line (or
 * JSON line) per change, flushed at once so a pipe sees it live.
 *
 *   PUT<tab>KEY<tab>VALUE   DEL<tab>KEY   DROP   OVERRUN lost=N
 *
 * and DEL<tab>KEY<tab>expired for a key the owner removed at its
 * deadline (JSON: "reason":"expired"; a PUT's deadline is JSON's
 * "deadline" only, so text lines keep their fields), DEL<tab>KEY<tab>
 * evicted for one it removed to keep a bounded table within its bound
 * ("reason":"evicted").
 *
 * It ends after --count changes (OVERRUN is not a change), at the
 * table's drop, or when --timeout (milliseconds in all, from the start)
 * runs out: a success unless --count was given and not reached.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <time.h>

#include "cli.h"

static void print_event(const struct cli *cli, const struct tdbc_event *ev)
{
	static const char *const names[] = {
		[TDBC_EV_PUT] = "put", [TDBC_EV_DEL] = "del",
		[TDBC_EV_DROP] = "drop",
	};
	static const char *const words[] = {
		[TDBC_EV_PUT] = "PUT", [TDBC_EV_DEL] = "DEL",
		[TDBC_EV_DROP] = "DROP",
	};
	bool hex = cli->enc == FMT_HEX;
	enum fmt_enc enc = cli_enc(cli, FMT_ESCAPE);
	const char *reason = ev->reason == TDBC_REASON_EXPIRED ? "expired" :
			     ev->reason == TDBC_REASON_EVICTED ? "evicted" :
			     NULL;

	if (cli->json) {
		cli_doc_open();
		printf("{\"event\":\"%s\",\"seq\":%" PRIu32, names[ev->kind],
		       ev->seq);
		if (ev->kind != TDBC_EV_DROP) {
			putchar(',');
			fmt_json_field(stdout, "key", ev->key, ev->klen, hex);
		}
		if (ev->kind == TDBC_EV_PUT) {
			putchar(',');
			fmt_json_field(stdout, "value", ev->val, ev->vlen,
				       hex);
			if (ev->deadline)
				printf(",\"deadline\":%" PRIu64,
				       ev->deadline);
		}
		if (ev->kind == TDBC_EV_DEL && reason)
			printf(",\"reason\":\"%s\"", reason);
		putchar('}');
		cli_doc_close();
		return;
	}
	fputs(words[ev->kind], stdout);
	if (ev->kind != TDBC_EV_DROP) {
		putchar('\t');
		fmt_bytes(stdout, ev->key, ev->klen, enc);
	}
	if (ev->kind == TDBC_EV_PUT) {
		putchar('\t');
		fmt_bytes(stdout, ev->val, ev->vlen, enc);
	}
	if (ev->kind == TDBC_EV_DEL && reason)
		printf("\t%s", reason);
	putchar('\n');
}

static void print_overrun(const struct cli *cli, uint64_t lost)
{
	if (cli->json) {
		cli_doc_open();
		printf("{\"event\":\"overrun\",\"lost\":%" PRIu64 "}", lost);
		cli_doc_close();
	} else
		printf("OVERRUN lost=%" PRIu64 "\n", lost);
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* What the next wait may take: -1 (for ever) without a deadline. */
static int wait_ms(int64_t deadline)
{
	int64_t left;

	if (deadline < 0)
		return -1;
	left = deadline - now_ms();
	return left > 0 ? (int)left : 0;
}

/* Follow the feed until done; 0 or a negative errno (-ETIMEDOUT: the
 * deadline came before --count changes). */
static int follow(struct cli *cli, struct tdbc_watch *w, uint64_t *seen)
{
	int64_t deadline = cli->timeout_ms < 0 ? -1 :
			   now_ms() + cli->timeout_ms;
	struct tdbc_event ev;
	uint64_t lost;
	int r, wait;

	while (!cli->count || *seen < cli->count) {
		wait = wait_ms(deadline);
		r = tdbc_watch_next(w, &ev, wait, &lost);
		if (r == -EOVERFLOW) {
			print_overrun(cli, lost);
		} else if (r == 1) {
			if (ev.kind < TDBC_EV_PUT || ev.kind > TDBC_EV_DROP)
				return -EPROTO; /* names[] has no such */
			print_event(cli, &ev);
			++*seen;
		} else if (r == 0 && wait == 0) {
			return cli->count ? -ETIMEDOUT : 0;
		} else if (r < 0) {
			return r;
		}
		if (fflush(stdout))
			return -errno;  /* run() reports it */
		if (r == 1 && ev.kind == TDBC_EV_DROP)
			return 0;
	}
	return 0;
}

int cmd_watch(struct cli *cli)
{
	struct tdbc_table *t;
	struct tdbc_watch *w;
	uint64_t seen = 0;
	int rc, err;

	if ((rc = cli_open_table(cli, &t)))
		return -rc;
	err = tdbc_watch(t, cli->prefix.p, cli->prefix.n, &w);
	if (err) {
		rc = cli_fail(cli, err);
		goto out;
	}
	err = follow(cli, w, &seen);
	if (err == -ETIMEDOUT) {
		fprintf(cli_err, "tdb: watch: timed out: %" PRIu64 " of %"
			PRIu64 " changes came\n", seen, cli->count);
		rc = EXIT_ERROR;
	} else if (err && !ferror(stdout)) {
		rc = cli_fail(cli, err);
	} else if (err) {
		rc = EXIT_ERROR;
	}
	tdbc_watch_close(w);
out:
	tdbc_table_close(t);
	return rc;
}
