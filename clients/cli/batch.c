// SPDX-License-Identifier: GPL-2.0-only
/*
 * batch.c - tdb batch and the interactive shell: commands read a line
 * at a time (words split by fmt_split, parsed by main.c as a command
 * line), run on one connection.
 *
 * get, put, del and incr are pipelined: each line's request is queued, up to
 * BURST are published at once (tdbc_submit) and up to WINDOW lines are
 * in flight before the oldest is waited for (tdbc_reap), so a batch of
 * puts costs about what the daemon spends on them, not a round trip
 * each.  Results are printed, and failures reported, in line order.
 * Invariants:
 *  - lines [head, tail) are queued, in slot[line % WINDOW]; of them
 *    [head, sent) were submitted; tail - head <= WINDOW;
 *  - a request is not queued while an earlier one on the same table and
 *    key is in flight (the window is drained first), so a line always
 *    sees the lines before it even if the owner ran a client's requests
 *    out of order;
 *  - every other command (scan, tables, create, begin, ...) first drains
 *    the window, then runs as it does on the command line.
 * With --txn (or between begin and commit) the requests carry the
 * transaction; a failed line aborts it (nothing is applied) and, with
 * --txn, ends the batch.  The owner checks at commit that no key the
 * transaction read (get, incr) was changed by another client since:
 * if one was, the commit fails with -ESTALE, its message naming the
 * table and key, and nothing is applied (exit 7, EXIT_CONFLICT).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef HAVE_LIBEDIT
#include <editline/readline.h>
#endif

#include "cli.h"

#define WINDOW 1024u            /* lines in flight; a power of two */
#define BURST 64u               /* requests published at once */
#define BUCKETS 65536u          /* in-flight (table, key) hash counts:
				 * few false alarms with WINDOW lines */

struct slot {
	long line;
	enum tdbc_op op;
	int res;                /* 0 or the negative errno */
	bool done;
	enum fmt_enc enc;       /* GET's text output */
	bool key_hex, hex;      /* messages' key; JSON in hex */
	struct tdbc_table *t;
	uint8_t *key, *val;     /* PUT's value; GET's answer, copied */
	size_t klen, vlen;
	unsigned int flags;     /* TDBC_IF_*, a PUT's TDBC_TTL or
				 * TDBC_DEADLINE */
	uint64_t if_version;    /* with TDBC_IF_VERSION */
	int64_t delta;          /* INCR's; its answer: the new value */
	uint64_t expiry;        /* PUT --ttl's ms, --at's deadline */
	bool show_version;      /* get --version */
	bool show_deadline;     /* get --deadline */
	uint64_t version;       /* GET's answer: the record's version */
	uint64_t deadline;      /* GET's answer: the record's deadline */
	char *msg;              /* the owner's text of a failure worth
				 * showing (a condition, INCR), or NULL */
	uint32_t bucket;
};

struct table_ent {
	char *name;
	struct tdbc_table *t;
};

struct batch {
	struct cli *cli;        /* tdb's own options and the connection */
	bool shell;
	struct tdbc_txn *txn;   /* --txn's, or begin's */
	bool txn_failed;        /* a line of the open transaction failed */
	long txn_line;          /* ... the first of them */
	struct slot slot[WINDOW];
	uint64_t head, sent, tail;
	uint16_t busy[BUCKETS];
	struct table_ent *tabs;
	size_t ntabs;
	int rc;                 /* the first failure's exit code */
	bool stop;              /* read no more lines */
	FILE *cap;              /* a line's messages (cli_err) */
	char *cap_buf;
	size_t cap_len;
};

static const char shell_help[] =
"Commands, as on tdb's command line (quote as in sh; in double quotes\n"
"\\n \\t \\\\ \\xHH \\0 as scan prints them):\n"
"  get TABLE KEY [--version] [--deadline]\n"
"  put TABLE KEY VALUE [--if-absent | --if-present | --if-version V]\n"
"                      [--ttl DURATION | --at MS]\n"
"  del TABLE KEY [--if-version V]   incr TABLE KEY [DELTA]\n"
"  ttl TABLE KEY   persist TABLE KEY\n"
"  expire TABLE KEY DURATION | --ttl DURATION | --at MS\n"
"  scan TABLE [--prefix P] [--limit N] [--keys-only] [--deadline]\n"
"  scan TABLE [--from K | --after K] [--to K | --through K] [--reverse]\n"
"             [--limit N] ...      (a range of an ordered table)\n"
"  tables   stat TABLE   stats   create TABLE [...]   drop TABLE\n"
"  create TABLE [--ttl DURATION] [--max-bytes SIZE] [--max-records N]\n"
"               [--evict refuse|lru|lfu|ttl] [--ordered]\n"
"  watch TABLE [--prefix P] [--count N] [--timeout MS]\n"
"  -k, -v, --hex, --escape on a line apply to that line.\n"
"  begin           start a transaction: put, del, get and incr join it\n"
"  commit          apply it, all or nothing; fails (nothing applied) if\n"
"                  another client changed a key it read: run it again\n"
"  abort           drop it\n"
"  help            this text\n"
"  quit, exit      leave (so does end of input)\n";

/* --- reporting ------------------------------------------------------------ */

/*
 * A failed line: "tdb: line N: WHAT" (the shell: "tdb: WHAT") on stderr
 * and, with --json, {"line":N,"error":WHAT,"exit":CODE} in the output
 * at its place.  The batch's exit code is its first failure's.
 */
static void report(struct batch *b, long line, int code, const char *what)
{
	/* --txn: the first failure ends it all; lines in flight after it
	 * fail with it or are dropped with the transaction, unsaid */
	if (b->cli->txn && b->rc)
		return;
	if (b->shell || !line)
		fprintf(stderr, "tdb: %s\n", what);
	else
		fprintf(stderr, "tdb: line %ld: %s\n", line, what);
	if (b->cli->json) {
		cli_doc_open();
		printf("{\"line\":%ld,\"error\":", line);
		fmt_json_str(stdout, what, strlen(what));
		printf(",\"exit\":%d}", code);
		cli_doc_close();
	}
	if (!b->rc)
		b->rc = code;
	if (b->txn && !b->txn_failed) {
		b->txn_failed = true;
		b->txn_line = line;
	}
	if (b->cli->txn)
		b->stop = true;
}

/* --- the window ----------------------------------------------------------- */

static uint32_t key_bucket(const struct tdbc_table *t, const uint8_t *k,
			   size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull ^ (uintptr_t)t;
	size_t i;

	for (i = 0; i < n; i++)
		h = (h ^ k[i]) * 0x100000001b3ull;
	return (uint32_t)(h ^ h >> 32) % BUCKETS;
}

static struct slot *slot_of(struct batch *b, uint64_t i)
{
	return &b->slot[i % WINDOW];
}

static const char *op_name(enum tdbc_op op)
{
	return op == TDBC_OP_GET ? "get" : op == TDBC_OP_PUT ? "put" :
	       op == TDBC_OP_INCR ? "incr" : "del";
}

/* "OP TABLE KEY: what happened" for a failed request. */
static void slot_failed(struct batch *b, const struct slot *s)
{
	char *msg = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&msg, &len);
	const char *name = tdbc_table_name(s->t);
	const char *what = tdbc_strerror(s->res);

	if (s->res == -ENOENT)
		what = "no such key";
	else if (s->res == -EEXIST)
		what = "key exists";
	else if (s->res == -E2BIG && b->txn)
		what = "the transaction is over tdbd's max-txn-ops or "
		       "max-txn-bytes";
	/* the owner's words say which condition and what the key is at */
	if (s->msg && (s->res == -ECANCELED || s->res == -EDOM ||
		       s->res == -ERANGE || s->res == -ESTALE))
		what = s->msg;
	if (f) {
		fprintf(f, "%s ", op_name(s->op));
		fmt_bytes(f, name, strlen(name), FMT_ESCAPE);
		fputc(' ', f);
		fmt_bytes(f, s->key, s->klen,
			  s->key_hex ? FMT_HEX : FMT_ESCAPE);
		fprintf(f, ": %s", what);
		fclose(f);
	}
	report(b, s->line, cli_exit_code(s->res), msg ? msg : what);
	free(msg);
	/* a dead connection fails every line after: say it once */
	if (s->res == -EPIPE || s->res == -ECONNRESET || s->res == -EPROTO)
		b->stop = true;
}

/* Print the oldest line's result (it is done) and free its slot. */
static void slot_print(struct batch *b, struct slot *s)
{
	if (s->res) {
		slot_failed(b, s);
	} else if (b->cli->json) {
		cli_doc_open();
		printf("{\"line\":%ld,", s->line);
		if (s->op == TDBC_OP_GET) {
			fmt_json_field(stdout, "key", s->key, s->klen, s->hex);
			putchar(',');
			fmt_json_field(stdout, "value", s->val, s->vlen,
				       s->hex);
			if (s->show_version)
				printf(",\"version\":%" PRIu64, s->version);
			if (s->show_deadline && s->deadline)
				printf(",\"deadline\":%" PRIu64,
				       s->deadline);
			else if (s->show_deadline)
				fputs(",\"deadline\":null", stdout);
		} else if (s->op == TDBC_OP_INCR) {
			fmt_json_field(stdout, "key", s->key, s->klen, s->hex);
			printf(",\"value\":%" PRId64, s->delta);
		} else {
			fputs("\"ok\":true", stdout);
		}
		putchar('}');
		cli_doc_close();
	} else if (s->op == TDBC_OP_GET) {
		if (s->show_version)
			printf("%" PRIu64 "\t", s->version);
		if (s->show_deadline && s->deadline)
			printf("%" PRIu64 "\t", s->deadline);
		else if (s->show_deadline)
			fputs("-\t", stdout);
		fmt_bytes(stdout, s->val, s->vlen, s->enc);
		putchar('\n');
	} else if (s->op == TDBC_OP_INCR) {
		printf("%" PRId64 "\n", s->delta);
	}
	b->busy[s->bucket]--;
	free(s->key);
	free(s->val);
	free(s->msg);
	memset(s, 0, sizeof(*s));
}

static void print_done(struct batch *b)
{
	while (b->head < b->tail && slot_of(b, b->head)->done)
		slot_print(b, slot_of(b, b->head++));
}

static void slot_done(struct slot *s, int res, const void *val, size_t vlen)
{
	s->done = true;
	s->res = res;
	if (!res && s->op == TDBC_OP_INCR)
		return;         /* slot_cqe keeps the new value */
	if (!res && s->op == TDBC_OP_GET) {
		free(s->val);           /* PUT's value is not kept */
		s->val = malloc(vlen ? vlen : 1);
		if (s->val)
			memcpy(s->val, val, vlen);
		else
			s->res = -ENOMEM;
		s->vlen = vlen;
	}
}

/* A completion: the result, the version and deadline (GET) or new
 * value (INCR). */
static void slot_cqe(struct slot *s, const struct tdbc_cqe *cqe)
{
	slot_done(s, cqe->res, cqe->val, cqe->vlen);
	s->version = cqe->version;
	if (!cqe->res && s->op == TDBC_OP_INCR)
		s->delta = cqe->num;
	if (!cqe->res && s->op == TDBC_OP_GET)
		s->deadline = cqe->deadline;
}

/* Reap at least min completions (waiting), then print what is done. */
static void reap(struct batch *b, unsigned int min)
{
	struct tdbc_cqe cqe[BURST];
	uint64_t i;
	int n, k, last_failed = -1;

	if (min > BURST)
		min = BURST;
	if (min > tdbc_inflight(b->cli->c))
		min = tdbc_inflight(b->cli->c);
	n = tdbc_reap(b->cli->c, cqe, BURST, min, -1);
	for (k = 0; k < n; k++) {
		slot_cqe(slot_of(b, cqe[k].user), &cqe[k]);
		if (cqe[k].res)
			last_failed = k;
	}
	/* tdbc_errmsg holds the text of the last failed one only */
	if (last_failed >= 0) {
		struct slot *s = slot_of(b, cqe[last_failed].user);

		free(s->msg);
		s->msg = strdup(tdbc_errmsg(b->cli->c));
	}
	if (n < 0)      /* the connection is dead: so is what it held */
		for (i = b->head; i < b->sent; i++)
			if (!slot_of(b, i)->done)
				slot_done(slot_of(b, i), n, NULL, 0);
	print_done(b);
}

/* Publish the queued lines not sent yet. */
static void submit(struct batch *b)
{
	struct tdbc_req req[BURST];
	unsigned int n, i;
	int r;

	while (b->sent < b->tail) {
		n = (unsigned int)(b->tail - b->sent);
		if (n > BURST)
			n = BURST;
		for (i = 0; i < n; i++) {
			struct slot *s = slot_of(b, b->sent + i);

			req[i] = (struct tdbc_req){
				.op = s->op, .table = s->t, .txn = b->txn,
				.key = s->key, .klen = s->klen,
				.val = s->val, .vlen = s->vlen,
				.flags = s->flags, .user = b->sent + i,
				.version = s->if_version, .delta = s->delta,
			};
			if (s->op == TDBC_OP_PUT)       /* delta's union */
				req[i].expiry = s->expiry;
		}
		r = tdbc_submit(b->cli->c, req, n);
		if (r > 0) {
			for (i = 0; i < (unsigned int)r; i++) {
				struct slot *s = slot_of(b, b->sent + i);

				/* the library copied it: not kept */
				free(s->val);
				s->val = NULL;
			}
			b->sent += (uint64_t)r;
		} else if (r == -EAGAIN && tdbc_inflight(b->cli->c)) {
			reap(b, 1);
		} else {
			slot_done(slot_of(b, b->sent++), r ? r : -EIO, NULL,
				  0);
		}
	}
}

/* Run and print every queued line. */
static void drain(struct batch *b)
{
	submit(b);
	while (b->head < b->tail) {
		if (!tdbc_inflight(b->cli->c) && !slot_of(b, b->head)->done) {
			/* cannot happen: every sent line is in flight */
			slot_done(slot_of(b, b->head), -EIO, NULL, 0);
		}
		reap(b, 1);
	}
}

/* Is an earlier request on the same table and key still queued? */
static bool conflicts(struct batch *b, const struct slot *n)
{
	uint64_t i;

	if (!b->busy[n->bucket])
		return false;
	for (i = b->head; i < b->tail; i++) {
		const struct slot *s = slot_of(b, i);

		if (s->t == n->t && s->klen == n->klen &&
		    !memcmp(s->key, n->key, n->klen))
			return true;
	}
	return false;
}

/* Queue a get, put or del line; the key and value move into the slot. */
static void queue(struct batch *b, struct cli *lc, enum tdbc_op op,
		  struct tdbc_table *t, long line)
{
	struct slot n = {
		.line = line, .op = op, .enc = cli_enc(lc, FMT_ESCAPE),
		.key_hex = lc->key_hex, .hex = lc->enc == FMT_HEX, .t = t,
		.key = lc->key.p, .klen = lc->key.n,
		.flags = cli_cond_flags(lc), .if_version = lc->if_version,
		.delta = lc->delta, .show_version = lc->show_version,
		.show_deadline = lc->show_deadline,
	};

	if (op == TDBC_OP_PUT && lc->ttl_ms) {
		n.flags |= TDBC_TTL;
		n.expiry = lc->ttl_ms;
	} else if (op == TDBC_OP_PUT && lc->at_ms) {
		n.flags |= TDBC_DEADLINE;
		n.expiry = lc->at_ms;
	}
	if (op == TDBC_OP_PUT) {
		n.val = lc->value.p;
		n.vlen = lc->value.n;
		lc->value.p = NULL;
	}
	lc->key.p = NULL;
	lc->key.set = false;
	n.bucket = key_bucket(t, n.key, n.klen);
	if (conflicts(b, &n))
		drain(b);
	while (b->tail - b->head == WINDOW) {
		submit(b);
		reap(b, BURST);         /* a wake-up per burst, not per line */
	}
	b->busy[n.bucket]++;
	*slot_of(b, b->tail++) = n;
	if (b->tail - b->sent >= BURST)
		submit(b);
}

/* --- lines ---------------------------------------------------------------- */

/* The handle of lc's table, opened once per batch; 0, or an exit code
 * after a message. */
static int table_of(struct batch *b, struct cli *lc, struct tdbc_table **t)
{
	struct table_ent *nt;
	size_t i;
	int rc;

	for (i = 0; i < b->ntabs; i++) {
		if (!strcmp(b->tabs[i].name, lc->table)) {
			*t = b->tabs[i].t;
			return 0;
		}
	}
	rc = cli_open_table(lc, t);
	if (rc)
		return -rc;
	nt = realloc(b->tabs, (b->ntabs + 1) * sizeof(*nt));
	if (!nt || !(nt[b->ntabs].name = strdup(lc->table))) {
		if (nt)
			b->tabs = nt;
		tdbc_table_close(*t);
		fprintf(cli_err, "tdb: out of memory\n");
		return EXIT_ERROR;
	}
	b->tabs = nt;
	b->tabs[b->ntabs++].t = *t;
	return 0;
}

/* Run a parsed line: -1 when queued, else its exit code (after saying
 * why to cli_err). */
static int exec_line(struct batch *b, struct cli *lc,
		     const struct command *cmd, long line)
{
	enum tdbc_op op = cmd->run == cmd_get ? TDBC_OP_GET :
			  cmd->run == cmd_put ? TDBC_OP_PUT :
			  cmd->run == cmd_del ? TDBC_OP_DEL :
			  cmd->run == cmd_incr ? TDBC_OP_INCR : 0;
	struct tdbc_table *t;
	int rc;

	lc->c = b->cli->c;
	if (op) {
		rc = table_of(b, lc, &t);
		if (rc)
			return rc;
		queue(b, lc, op, t, line);
		return -1;
	}
	if (b->cli->txn) {
		fprintf(cli_err, "tdb: %s: not in a transaction (--txn takes "
			"get, put, del and incr)\n", cmd->name);
		return EXIT_USAGE;
	}
	drain(b);
	return cmd->run(lc);
}

/*
 * "WHO: ..." for a failed commit (or abort, begin): the owner's text or
 * the library's.  A conflict (-ESTALE: a key the transaction read was
 * changed by another client; the owner's text names the table and key)
 * and a failed condition (-ECANCELED) say so first and that nothing
 * was applied.
 */
static void txn_failed(struct batch *b, long line, const char *who, int err)
{
	const char *m = tdbc_errmsg(b->cli->c);
	char msg[700];

	if (!*m)
		m = tdbc_strerror(err);
	if (err == -ESTALE)
		snprintf(msg, sizeof(msg), "%s: conflict: %s; nothing was "
			 "applied: run the transaction again", who, m);
	else if (err == -ECANCELED)
		snprintf(msg, sizeof(msg), "%s: %s; nothing was applied",
			 who, m);
	else
		snprintf(msg, sizeof(msg), "%s: %s", who, m);
	report(b, line, cli_exit_code(err), msg);
}

/* begin, commit, abort: 0 or an exit code after a report. */
static int txn_word(struct batch *b, const char *w, long line)
{
	int err;

	if (b->cli->txn) {
		report(b, line, EXIT_USAGE, "begin, commit and abort are "
		       "--txn's: its transaction is the whole input");
		return EXIT_USAGE;
	}
	if (!strcmp(w, "begin") == (b->txn != NULL)) {
		report(b, line, EXIT_USAGE, b->txn ? "a transaction is open "
		       "already (commit or abort it)" :
		       "no transaction is open (begin one)");
		return EXIT_USAGE;
	}
	drain(b);
	if (!strcmp(w, "begin")) {
		b->txn_failed = false;
		err = tdbc_txn_begin(b->cli->c, &b->txn);
	} else if (!strcmp(w, "abort") || b->txn_failed) {
		err = tdbc_txn_abort(b->txn);
		b->txn = NULL;
		if (!strcmp(w, "commit")) {
			char msg[96];

			snprintf(msg, sizeof(msg), "commit: line %ld failed: "
				 "the transaction is aborted, nothing "
				 "applied", b->txn_line);
			report(b, line, EXIT_ERROR, msg);
			return EXIT_ERROR;
		}
	} else {
		err = tdbc_txn_commit(b->txn);
		b->txn = NULL;
	}
	if (err) {
		txn_failed(b, line, w, err);
		return cli_exit_code(err);
	}
	if (b->cli->json) {
		drain(b);
		cli_doc_open();
		printf("{\"line\":%ld,\"ok\":true}", line);
		cli_doc_close();
	}
	return 0;
}

/* Messages a line's parsing and commands say go to b->cap. */
static void capture_begin(struct batch *b)
{
	b->cap_buf = NULL;
	b->cap = open_memstream(&b->cap_buf, &b->cap_len);
	cli_err = b->cap ? b->cap : stderr;
}

/* Report what the line said (its first line, without "tdb: "; not the
 * "Try 'tdb --help'" hint) if it failed. */
static void capture_end(struct batch *b, long line, int rc)
{
	char *what, *nl;

	cli_err = stderr;
	if (b->cap)
		fclose(b->cap);
	b->cap = NULL;
	what = b->cap_buf ? b->cap_buf : "";
	if (rc <= 0) {          /* not a failure: passed on as it is */
		fputs(what, stderr);
	} else {
		if (!strncmp(what, "tdb: ", 5))
			what += 5;
		if ((nl = strchr(what, '\n')))
			*nl = '\0';
		drain(b);       /* so that the report takes its place */
		report(b, line, rc, *what ? what : "failed");
	}
	free(b->cap_buf);
	b->cap_buf = NULL;
}

static bool word_is(const struct fmt_words *w, int i, const char *s)
{
	return i < w->n && !strcmp(w->word[i], s);
}

/* One line: its words, a word of the shell, or a command. */
static void run_line(struct batch *b, const char *s, size_t n, long line)
{
	const struct command *cmd;
	struct fmt_words w;
	const char *why = "";
	struct cli lc;
	int rc, i;

	rc = fmt_split(s, n, &w, &why);
	if (rc) {
		drain(b);
		report(b, line, rc == -ENOMEM ? EXIT_ERROR : EXIT_USAGE,
		       rc == -ENOMEM ? "out of memory" : why);
		return;
	}
	i = cli_skip_tdb(&w);
	if (i == w.n) {
		fmt_words_free(&w);
		return;
	}
	if (w.n == i + 1 && (word_is(&w, i, "quit") ||
			     word_is(&w, i, "exit"))) {
		b->stop = true;
	} else if (w.n == i + 1 && word_is(&w, i, "help")) {
		drain(b);       /* not into --json's documents */
		fputs(shell_help, b->cli->json ? stderr : stdout);
	} else if (w.n == i + 1 && (word_is(&w, i, "begin") ||
				    word_is(&w, i, "commit") ||
				    word_is(&w, i, "abort"))) {
		txn_word(b, w.word[i], line);
	} else {
		capture_begin(b);
		rc = cli_line_parse(&lc, b->cli, &w, &cmd);
		if (rc < 0)
			rc = exec_line(b, &lc, cmd, line);
		capture_end(b, line, rc);
		cli_line_free(&lc);
	}
	fmt_words_free(&w);
}

/* --- tdb batch ------------------------------------------------------------ */

static void batch_free(struct batch *b)
{
	size_t i;

	for (i = 0; i < b->ntabs; i++) {
		tdbc_table_close(b->tabs[i].t);
		free(b->tabs[i].name);
	}
	free(b->tabs);
}

/* The end of the input: --txn's commit (or abort), a begin left open. */
static void batch_end(struct batch *b)
{
	char msg[600];
	int err;

	drain(b);
	if (!b->txn)
		return;
	if (!b->cli->txn) {
		tdbc_txn_abort(b->txn);
		b->txn = NULL;
		report(b, 0, EXIT_ERROR, "batch: the input ended in a "
		       "transaction (no commit): aborted, nothing applied");
		return;
	}
	if (b->rc) {
		tdbc_txn_abort(b->txn);
		b->txn = NULL;
		snprintf(msg, sizeof(msg), "batch: line %ld failed: the "
			 "transaction is aborted, nothing applied",
			 b->txn_line);
		fprintf(stderr, "tdb: %s\n", msg);
		return;
	}
	err = tdbc_txn_commit(b->txn);
	b->txn = NULL;
	if (err == -ESTALE || err == -ECANCELED) {
		txn_failed(b, 0, "batch: commit", err);
	} else if (err) {
		/* the owner's text says that nothing was applied */
		if (*tdbc_errmsg(b->cli->c))
			snprintf(msg, sizeof(msg), "batch: commit: %s",
				 tdbc_errmsg(b->cli->c));
		else
			snprintf(msg, sizeof(msg), "batch: commit: %s; "
				 "nothing applied", tdbc_strerror(err));
		report(b, 0, cli_exit_code(err), msg);
	}
}

int cmd_batch(struct cli *cli)
{
	struct batch *b = calloc(1, sizeof(*b));
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	long no = 0;
	int rc, err;

	if (!b) {
		fprintf(stderr, "tdb: batch: out of memory\n");
		return EXIT_ERROR;
	}
	b->cli = cli;
	if (cli->txn && (err = tdbc_txn_begin(cli->c, &b->txn))) {
		free(b);
		return cli_fail(cli, err);
	}
	while (!b->stop && (n = getline(&line, &cap, stdin)) >= 0)
		run_line(b, line, (size_t)n, ++no);
	if (ferror(stdin) && !b->stop)
		report(b, 0, EXIT_ERROR, "batch: reading stdin failed");
	batch_end(b);
	free(line);
	batch_free(b);
	rc = b->rc;
	free(b);
	return rc;
}

/* --- the shell ------------------------------------------------------------ */

/* $XDG_STATE_HOME/tdb/history, else ~/.tdb_history (malloc()ed), or
 * NULL when neither is known. */
static char *history_path(void)
{
	const char *state = getenv("XDG_STATE_HOME");
	const char *home = getenv("HOME");
	char *p = NULL;

	if (state && *state) {
		if (asprintf(&p, "%s/tdb", state) < 0)
			return NULL;
		mkdir(state, 0700);     /* may exist; read_history says */
		mkdir(p, 0700);
		free(p);
		if (asprintf(&p, "%s/tdb/history", state) < 0)
			return NULL;
		return p;
	}
	if (home && *home && asprintf(&p, "%s/.tdb_history", home) >= 0)
		return p;
	return NULL;
}

/* One line typed (malloc()ed, no newline), or NULL at the end. */
static char *shell_read(const char *prompt)
{
#ifdef HAVE_LIBEDIT
	return readline(prompt);
#else
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;

	fputs(prompt, stdout);
	fflush(stdout);
	n = getline(&line, &cap, stdin);
	if (n < 0) {
		free(line);
		return NULL;
	}
	if (n && line[n - 1] == '\n')
		line[n - 1] = '\0';
	return line;
#endif
}

int cmd_shell(struct cli *cli)
{
	struct batch *b = calloc(1, sizeof(*b));
	char *hist = history_path(), *line;
	long no = 0;

	if (!b) {
		fprintf(stderr, "tdb: out of memory\n");
		free(hist);
		return EXIT_ERROR;
	}
	b->cli = cli;
	b->shell = true;
#ifdef HAVE_LIBEDIT
	using_history();
	stifle_history(1000);
	if (hist)
		read_history(hist);
#endif
	while (!b->stop &&
	       (line = shell_read(b->txn ? "tdb (txn)> " : "tdb> "))) {
#ifdef HAVE_LIBEDIT
		if (*line)
			add_history(line);
#endif
		run_line(b, line, strlen(line), ++no);
		drain(b);
		free(line);
		b->rc = 0;      /* the shell goes on after a failure */
		fflush(stdout);
	}
	if (!b->stop)
		putchar('\n');  /* end of input: leave the prompt's line */
	drain(b);
	if (b->txn) {
		tdbc_txn_abort(b->txn);
		fprintf(stderr, "tdb: the open transaction is aborted\n");
	}
#ifdef HAVE_LIBEDIT
	if (hist)
		write_history(hist);
#endif
	free(hist);
	batch_free(b);
	free(b);
	return EXIT_OK;
}
