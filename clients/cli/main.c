// SPDX-License-Identifier: GPL-2.0-only
/*
 * main.c - tdb, the command line client of tdbd: the command line (global
 * and command options, arguments), the connection, error reporting and
 * exit codes, JSON documents (one a line, or --json-array).  The
 * commands themselves are in cmd_*.c; batch.c runs lines of commands
 * (tdb batch, the shell) through cli_line_parse.
 *
 * Exit codes (scripts rely on them; also in `tdb --help`):
 *   0  ok
 *   1  not found: no such table or key (get, del, stat, drop, ...)
 *   2  usage error: bad command line (nothing was sent)
 *   3  exists: create of an existing table, put --no-overwrite
 *   4  permission denied by the table's owner and mode
 *   5  cannot connect to tdbd
 *   6  any other error (from the daemon, reading input, writing output,
 *      watch --count not reached before --timeout)
 *   7  conflict: a condition failed (put/del --if-version), or a
 *      transaction's commit found a key it read changed by another
 *      client (batch --txn, the shell's commit)
 * Errors go to stderr as "tdb: COMMAND TABLE KEY: <what happened>" (the
 * daemon's or the library's text, else tdbc_strerror), a failed connect
 * as "tdb: COMMAND: cannot connect to tdbd at PATH: ...".
 *
 * The whole command line is checked (a new table's name, the key's and
 * the value's sizes), and hex arguments and put's input read, before
 * connecting: a usage error never depends on the daemon.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

#ifndef TDB_VERSION
#define TDB_VERSION "unknown"
#endif

/* Input is refused past this (put --file/--stdin): the value limit, or
 * twice it and some white space in hex. */
#define INPUT_CAP ((size_t)TDB_VALUE_MAX * 3)

static const char usage_text[] =
"Usage: tdb [OPTION]... COMMAND [ARG]...\n"
"       tdb [OPTION]...       (a shell on a terminal, else a batch)\n"
"The command line client of tdbd, the tdb daemon.\n"
"\n"
"Commands:\n"
"  tables                      list the tables one may read\n"
"  create TABLE [--max-extents N] [--mode MODE] [--uid U] [--gid G]\n"
"         [--ttl DURATION]     (--ttl: the table's default TTL)\n"
"         [--max-bytes SIZE] [--max-records N] [--evict POLICY]\n"
"                              bounds, and what a write past one does\n"
"         [--ordered]          keys kept in order: scan takes ranges\n"
"  drop TABLE\n"
"  stat TABLE                  one table's figures\n"
"  stats                       the daemon's counters\n"
"  get TABLE KEY [--version] [--deadline]\n"
"                              the value to stdout (--version: the\n"
"                              record's version, a tab, then the value;\n"
"                              --deadline: its deadline, a tab, first)\n"
"  put TABLE KEY VALUE|- [COND] [--ttl DURATION | --at MS]\n"
"  put TABLE KEY --file F | --stdin [COND] [--ttl DURATION | --at MS]\n"
"                              COND: --if-absent (--no-overwrite),\n"
"                              --if-present or --if-version V\n"
"  ttl TABLE KEY               the time the key has left, in ms, or\n"
"                              \"no expiry\"\n"
"  expire TABLE KEY DURATION | --ttl DURATION | --at MS\n"
"                              set the key's deadline\n"
"  persist TABLE KEY           clear it: the key no longer expires\n"
"  del TABLE KEY [--if-version V]\n"
"  incr TABLE KEY [DELTA]      add DELTA (default 1; may be negative) to\n"
"                              a decimal integer value (absent: 0), done\n"
"                              by tdbd in one step; prints the new value\n"
"  scan TABLE [--prefix P] [--limit N] [--keys-only] [--deadline]\n"
"  scan TABLE [--from K | --after K] [--to K | --through K] [--reverse]\n"
"         [--limit N] [--keys-only] [--deadline]\n"
"                              a range of an ordered table, in key\n"
"                              order (--reverse: from its top down)\n"
"  watch TABLE [--prefix P] [--count N] [--timeout MS]\n"
"                              follow changes, one line each\n"
"  batch [--txn]               commands from stdin, one a line, quoted\n"
"                              as in sh (in \"...\": \\n \\t \\\\ \\xHH \\0);\n"
"                              --txn: as one transaction (get, put,\n"
"                              del, incr only), all or nothing; the keys\n"
"                              it read are checked at commit (exit 7\n"
"                              if another client changed one)\n"
"  (no command)                on a terminal, a shell: the same lines,\n"
"                              begin/commit/abort, help, quit; history\n"
"                              in $XDG_STATE_HOME/tdb/history or\n"
"                              ~/.tdb_history.  Otherwise a batch.\n"
"\n"
"Options (before or after the command):\n"
"      --socket PATH     tdbd's socket (default $TDB_SOCKET, else\n"
"                        " TDBC_SOCKET_DEFAULT ")\n"
"      --no-rings        talk over the socket only (no shared rings)\n"
"      --json            machine output: one JSON document, or one per\n"
"                        line for tables, scan, watch and batch\n"
"      --json-array      the same documents as one JSON array\n"
"      --hex             print keys and values in hex\n"
"      --escape          print keys and values with C escapes\n"
"  -k, --key-hex         KEY and --prefix are given in hex\n"
"  -v, --value-hex       VALUE (also from --file/--stdin) is given in hex\n"
"  -h, --help, help      print this help and exit\n"
"  -V, --version         print the version and exit\n"
"      --max-extents N   create: size cap in 2 MiB extents (1..32768)\n"
"      --mode MODE       create: permission bits, octal (default: tdbd's\n"
"                        table-mode, 0600 unless set)\n"
"      --uid U, --gid G  create: owner, a number or name (root only)\n"
"      --max-bytes SIZE  create: bound on the table's key and value bytes\n"
"                        (stat's bytes_used); SIZE a number of bytes,\n"
"                        or with K, M, G or T (powers of 1024: 64M)\n"
"      --max-records N   create: bound on the table's records\n"
"      --ordered         create: the table keeps its keys in order\n"
"                        (bytewise, shorter first), so that scan takes\n"
"                        ranges and lists keys in that order; fixed at\n"
"                        create\n"
"      --evict POLICY    create: what a write past a bound does: refuse\n"
"                        (the default: it fails, exit 6), lru, lfu (the\n"
"                        least recently / frequently used records are\n"
"                        removed), ttl (those soonest to expire; none\n"
"                        left: refuse); lru, lfu, ttl need a bound\n"
"      --file F, --stdin put: the value is the file's (stdin's) bytes\n"
"      --no-overwrite, --if-absent\n"
"                        put: fail (exit 3) if the key exists\n"
"      --if-present      put: fail (exit 1) if the key is absent\n"
"      --if-version V    put, del: only if the key is at version V (as\n"
"                        get --version prints it), else exit 7\n"
"      --ttl DURATION    put, expire: the record expires after DURATION;\n"
"                        create: the table's default for puts without\n"
"                        --ttl.\n"
"                        DURATION: a whole number and a unit, ms, s, m,\n"
"                        h or d (500ms, 30s, 2h, 1d), parts may add up\n"
"                        (1h30m); a number alone is seconds; from 1ms\n"
"                        to 10 years (3650d)\n"
"      --at MS           put, expire: the record expires at MS, in\n"
"                        milliseconds since the epoch (date +%s%3N)\n"
"      --version         after get: print the record's version too\n"
"      --deadline        get, scan: print the record's deadline too (ms\n"
"                        since the epoch, - for none) and a tab first\n"
"      --prefix P        scan, watch: keys starting with P only\n"
"      --from K, --after K\n"
"                        scan: the range starts at K (--from: K\n"
"                        included; --after: K excluded); ordered tables\n"
"      --to K, --through K\n"
"                        scan: the range ends at K (--to: K excluded;\n"
"                        --through: K included)\n"
"      --reverse         scan: walk the range from its end down\n"
"      --limit N         scan: at most N records\n"
"      --keys-only       scan: print keys only\n"
"      --count N         watch: stop after N changes\n"
"      --timeout MS      watch: stop after MS milliseconds in all\n"
"Put -- before arguments that start with '-' (a negative number, as\n"
"incr's DELTA, needs none).\n"
"A new table's name (create): letters, digits, '_', '.', '-', ':', not\n"
"starting with '-' or '.' (older tables may have others).\n"
"\n"
"Output:\n"
"  get prints the value's bytes as they are (so `tdb get T K > F` copies\n"
"  it exactly); with --hex or --escape, as text and a newline.  With\n"
"  --version, the version (decimal) and a tab come first.  A version\n"
"  changes on every write of the key and never repeats for it.\n"
"  incr prints the new value, a decimal integer, and a newline.\n"
"  ttl prints the milliseconds the key has left, or \"no expiry\"; an\n"
"  expired key is absent to every command (exit 1).\n"
"  scan prints KEY<tab>VALUE lines, watch PUT<tab>KEY<tab>VALUE,\n"
"  DEL<tab>KEY (DEL<tab>KEY<tab>expired when tdbd removed it at its\n"
"  deadline, DEL<tab>KEY<tab>evicted when it removed it to keep a\n"
"  bounded table within its bound), DROP, and OVERRUN lost=N when\n"
"  changes were lost (it goes on); both escape keys and values by\n"
"  default: printable ASCII as is, \\\\ \\n \\t \\r, other bytes \\xHH.\n"
"  tables prints a header and one line per table, sorted by name,\n"
"  owners by name, TTL the default TTL (- for none), EXPIRING the\n"
"  records with a deadline, BOUND the bounds (1000r: records, 64M: key\n"
"  and value bytes, both 1000r,64M; - for none), EVICT the policy,\n"
"  KIND hash or ordered (create --ordered);\n"
"  stat and stats print NAME VALUE lines;\n"
"  table names are escaped as keys are.  Modes are octal.  stats counts\n"
"  the tables one may see.  batch prints get's values escaped, a line\n"
"  each, and names a failed line: \"tdb: line N: ...\".\n"
"  JSON: a key, value or table name that is valid UTF-8 without control\n"
"  characters (but tab, CR, LF) is a string member \"key\"/\"value\"/\n"
"  \"name\" (C1 controls in it \\u-escaped), else (keys and values also\n"
"  with --hex) \"key_hex\"/\"value_hex\"/\"name_hex\" holds its hex.\n"
"  Shapes:\n"
"    get     {\"key\":..,\"value\":..} (--version: and \"version\":N;\n"
"            --deadline: and \"deadline\":N or null)\n"
"    incr    {\"key\":..,\"value\":N} (N a JSON number)\n"
"    ttl     {\"key\":..,\"ttl_ms\":N,\"deadline\":N} (no expiry:\n"
"            both null)\n"
"    scan    {\"key\":..,\"value\":..} per line (no value: --keys-only;\n"
"            --deadline: and \"deadline\":N or null)\n"
"    watch   {\"event\":\"put\",\"seq\":N,\"key\":..,\"value\":..}\n"
"            (and \"deadline\":N if it has one),\n"
"            {\"event\":\"del\",\"seq\":N,\"key\":..} (and\n"
"            \"reason\":\"expired\" or \"evicted\" if tdbd removed\n"
"            it),\n"
"            {\"event\":\"drop\",\"seq\":N},\n"
"            {\"event\":\"overrun\",\"lost\":N}\n"
"    tables  per line, and stat: {\"name\":..,\"records\":N,\n"
"            \"bytes_used\":N,\"bytes_allocated\":N,\"bytes_pending\":N,\n"
"            \"extents\":N,\"max_extents\":N,\"page_size\":N,\n"
"            \"index_nodes\":N,\"index_buckets\":N,\"uid\":N,\"gid\":N,\n"
"            \"mode\":\"0640\",\"state\":\"ok\",\"default_ttl_ms\":N,\n"
"            \"expiring\":N,\"expired\":N,\"max_bytes\":N,\n"
"            \"max_records\":N,\"evict\":\"lru\",\"evicted\":N,\n"
"            \"kind\":\"hash\"}\n"
"            (bounds 0: none; state \"aside\": tdbd\n"
"            set the table aside at start; its data is kept on disk)\n"
"    stats   {\"tables\":N,...} every counter of the daemon\n"
"    create, drop, put, del, expire, persist: {\"ok\":true}\n"
"    batch   {\"line\":N,\"ok\":true}, {\"line\":N,\"key\":..,\"value\":..},\n"
"            (get --version: and \"version\":N; incr: \"value\":N),\n"
"            {\"line\":N,\"error\":..,\"exit\":N}; other commands in a\n"
"            batch print their own documents\n"
"  Errors go to stderr only (batch --json: also as a document).\n"
"\n"
"Exit codes: 0 ok, 1 not found, 2 usage error, 3 exists, 4 permission\n"
"denied, 5 cannot connect, 6 other error (incl. watch --count not\n"
"reached within --timeout, incr of a value that is not an integer or\n"
"would overflow), 7 conflict (--if-version failed, or a transaction's\n"
"commit found a key it read changed by another client).\n";

/* --- options ------------------------------------------------------------ */

enum {
	OPT_SOCKET = 256, OPT_NO_RINGS, OPT_JSON, OPT_JSON_ARRAY, OPT_HEX,
	OPT_ESCAPE,
	/* command options: bit (opt - OPT_CMD0) in struct command.opts */
	OPT_CMD0,
	OPT_MAX_EXTENTS = OPT_CMD0, OPT_MODE, OPT_UID, OPT_GID, OPT_FILE,
	OPT_STDIN, OPT_NO_OVERWRITE, OPT_PREFIX, OPT_LIMIT, OPT_KEYS_ONLY,
	OPT_COUNT, OPT_TIMEOUT, OPT_TXN, OPT_IF_ABSENT, OPT_IF_PRESENT,
	OPT_IF_VERSION, OPT_TTL, OPT_AT, OPT_SHOW_DEADLINE, OPT_MAX_BYTES,
	OPT_MAX_RECORDS, OPT_EVICT, OPT_ORDERED, OPT_FROM, OPT_AFTER, OPT_TO,
	OPT_THROUGH, OPT_REVERSE,
	OPT_SHOW_VERSION,       /* get --version (not in long_opts: -V) */
	OPT_END
};
#define O(opt) (1u << ((opt) - OPT_CMD0))

static const struct option long_opts[] = {
	{ "socket",       required_argument, NULL, OPT_SOCKET },
	{ "no-rings",     no_argument,       NULL, OPT_NO_RINGS },
	{ "json",         no_argument,       NULL, OPT_JSON },
	{ "json-array",   no_argument,       NULL, OPT_JSON_ARRAY },
	{ "hex",          no_argument,       NULL, OPT_HEX },
	{ "escape",       no_argument,       NULL, OPT_ESCAPE },
	{ "key-hex",      no_argument,       NULL, 'k' },
	{ "value-hex",    no_argument,       NULL, 'v' },
	{ "help",         no_argument,       NULL, 'h' },
	{ "version",      no_argument,       NULL, 'V' },
	{ "max-extents",  required_argument, NULL, OPT_MAX_EXTENTS },
	{ "mode",         required_argument, NULL, OPT_MODE },
	{ "uid",          required_argument, NULL, OPT_UID },
	{ "gid",          required_argument, NULL, OPT_GID },
	{ "file",         required_argument, NULL, OPT_FILE },
	{ "stdin",        no_argument,       NULL, OPT_STDIN },
	{ "no-overwrite", no_argument,       NULL, OPT_NO_OVERWRITE },
	{ "prefix",       required_argument, NULL, OPT_PREFIX },
	{ "limit",        required_argument, NULL, OPT_LIMIT },
	{ "keys-only",    no_argument,       NULL, OPT_KEYS_ONLY },
	{ "count",        required_argument, NULL, OPT_COUNT },
	{ "timeout",      required_argument, NULL, OPT_TIMEOUT },
	{ "txn",          no_argument,       NULL, OPT_TXN },
	{ "if-absent",    no_argument,       NULL, OPT_IF_ABSENT },
	{ "if-present",   no_argument,       NULL, OPT_IF_PRESENT },
	{ "if-version",   required_argument, NULL, OPT_IF_VERSION },
	{ "ttl",          required_argument, NULL, OPT_TTL },
	{ "at",           required_argument, NULL, OPT_AT },
	{ "deadline",     no_argument,       NULL, OPT_SHOW_DEADLINE },
	{ "max-bytes",    required_argument, NULL, OPT_MAX_BYTES },
	{ "max-records",  required_argument, NULL, OPT_MAX_RECORDS },
	{ "evict",        required_argument, NULL, OPT_EVICT },
	{ "ordered",      no_argument,       NULL, OPT_ORDERED },
	{ "from",         required_argument, NULL, OPT_FROM },
	{ "after",        required_argument, NULL, OPT_AFTER },
	{ "to",           required_argument, NULL, OPT_TO },
	{ "through",      required_argument, NULL, OPT_THROUGH },
	{ "reverse",      no_argument,       NULL, OPT_REVERSE },
	{ NULL, 0, NULL, 0 }
};

static const struct command commands[] = {
	{ "tables", "", 0, 0, 0, cmd_tables },
	{ "create", "TABLE", 1, 1,
	  O(OPT_MAX_EXTENTS) | O(OPT_MODE) | O(OPT_UID) | O(OPT_GID) |
	  O(OPT_TTL) | O(OPT_MAX_BYTES) | O(OPT_MAX_RECORDS) | O(OPT_EVICT) |
	  O(OPT_ORDERED), cmd_create },
	{ "drop", "TABLE", 1, 1, 0, cmd_drop },
	{ "stat", "TABLE", 1, 1, 0, cmd_stat },
	{ "stats", "", 0, 0, 0, cmd_stats },
	{ "get", "TABLE KEY", 2, 2, O(OPT_SHOW_VERSION) | O(OPT_SHOW_DEADLINE),
	  cmd_get },
	{ "put", "TABLE KEY [VALUE]", 2, 3,
	  O(OPT_FILE) | O(OPT_STDIN) | O(OPT_NO_OVERWRITE) |
	  O(OPT_IF_ABSENT) | O(OPT_IF_PRESENT) | O(OPT_IF_VERSION) |
	  O(OPT_TTL) | O(OPT_AT), cmd_put },
	{ "del", "TABLE KEY", 2, 2, O(OPT_IF_VERSION), cmd_del },
	{ "incr", "TABLE KEY [DELTA]", 2, 3, 0, cmd_incr },
	{ "ttl", "TABLE KEY", 2, 2, 0, cmd_ttl },
	{ "expire", "TABLE KEY DURATION | TABLE KEY --at MS", 2, 3,
	  O(OPT_TTL) | O(OPT_AT), cmd_expire },
	{ "persist", "TABLE KEY", 2, 2, 0, cmd_persist },
	{ "scan", "TABLE", 1, 1,
	  O(OPT_PREFIX) | O(OPT_LIMIT) | O(OPT_KEYS_ONLY) |
	  O(OPT_SHOW_DEADLINE) | O(OPT_FROM) | O(OPT_AFTER) | O(OPT_TO) |
	  O(OPT_THROUGH) | O(OPT_REVERSE), cmd_scan },
	{ "watch", "TABLE", 1, 1,
	  O(OPT_PREFIX) | O(OPT_COUNT) | O(OPT_TIMEOUT), cmd_watch },
	{ "batch", "", 0, 0, O(OPT_TXN), cmd_batch },
};

/* tdb with no command: the shell on a terminal, else a batch. */
static const struct command shell_command = {
	"shell", "", 0, 0, 0, cmd_shell
};

/* Words of the batch and shell language only (batch.c runs them). */
static const char *const line_words[] = {
	"begin", "commit", "abort", "quit", "exit",
};

FILE *cli_err;


static const char *opt_name(int val)
{
	const struct option *o;

	if (val == OPT_SHOW_VERSION)
		return "version";
	for (o = long_opts; o->name; o++)
		if (o->val == val)
			return o->name;
	return "?";
}

/* What parsing collects besides struct cli. */
struct parsed {
	char **pos;             /* positional arguments, command first */
	int npos;
	unsigned int seen;      /* O(OPT_...) of command options given */
	const char *prefix_arg; /* decoded once -k is known */
	const char *from_arg, *to_arg;  /* scan's bounds, the same */
	const char *last_word;  /* the word getopt looked at last */
	/* negative numbers ("-5") hidden from getopt (parse_line) */
	char **neg_orig, **neg_copy;
	int nneg;
};

/* "tdb: [CMD: ]message" and the hint; returns EXIT_USAGE. */
__attribute__((format(printf, 2, 3)))
static int usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(cli_err, "tdb: ");
	if (cmd)
		fprintf(cli_err, "%s: ", cmd);
	va_start(ap, fmt);
	vfprintf(cli_err, fmt, ap);
	va_end(ap);
	fprintf(cli_err, "\nTry 'tdb --help'.\n");
	return EXIT_USAGE;
}

static int parse_num(const char *opt, const char *s, int base,
		     uint64_t max, uint64_t *out)
{
	int err = fmt_parse_u64(s, base, max, out);

	if (err == -ERANGE)
		return usage_error(NULL, "--%s %s: out of range (at most "
				   "%llu)", opt, s, (unsigned long long)max);
	if (err)
		return usage_error(NULL, "--%s %s: not a%s number", opt, s,
				   base == 8 ? "n octal" : "");
	return 0;
}

/* A duration (--ttl, expire's DURATION): 1 ms to TDB_TTL_MAX (10
 * years), fmt_parse_duration's units; what names it in messages. */
static int parse_duration(const char *what, const char *s, uint64_t *ms)
{
	const char *why;
	int err = fmt_parse_duration(s, TDB_TTL_MAX, ms, &why);

	if (err == -EDOM)
		return usage_error(NULL, "%s %s: zero (a TTL is 1ms to 3650d)",
				   what, s);
	if (err == -ERANGE)
		return usage_error(NULL, "%s %s: over 10 years (3650d), the "
				   "longest TTL", what, s);
	if (err)
		return usage_error(NULL, "%s %s: not a duration: %s", what, s,
				   why);
	return 0;
}

/* A user or group: a number, else a name looked up in passwd/group.
 * (uint32_t)-1 is refused: it means "the caller's". */
static int parse_id(const char *opt, const char *s, uint32_t *out)
{
	uint64_t v;
	struct passwd *pw;
	struct group *gr;

	if (!fmt_parse_u64(s, 10, UINT32_MAX - 1, &v)) {
		*out = (uint32_t)v;
		return 0;
	}
	if (opt[0] == 'u' && (pw = getpwnam(s))) {
		*out = pw->pw_uid;
		return 0;
	}
	if (opt[0] == 'g' && (gr = getgrnam(s))) {
		*out = gr->gr_gid;
		return 0;
	}
	return usage_error(NULL, "--%s %s: no such %s, nor a number", opt, s,
			   opt[0] == 'u' ? "user" : "group");
}

static int set_enc(struct cli *cli, int enc)
{
	if (cli->enc >= 0 && cli->enc != enc)
		return usage_error(NULL, "--hex and --escape exclude each "
				   "other");
	cli->enc = enc;
	return 0;
}

/* One command option's argument. */
static int parse_cmd_opt(struct cli *cli, struct parsed *p, int opt,
			 const char *arg)
{
	uint64_t v = 0;
	int rc = 0;

	p->seen |= O(opt);
	switch (opt) {
	case OPT_MAX_EXTENTS:
		rc = parse_num("max-extents", arg, 10, TDB_EXTENTS_MAX, &v);
		if (!rc && !v)
			rc = usage_error(NULL, "--max-extents %s: at least 1",
					 arg);
		cli->max_extents = (uint32_t)v;
		break;
	case OPT_MODE:
		rc = parse_num("mode", arg, 8, 0777, &v);
		cli->mode = (uint32_t)v;
		break;
	case OPT_UID:
		rc = parse_id("uid", arg, &cli->uid);
		break;
	case OPT_GID:
		rc = parse_id("gid", arg, &cli->gid);
		break;
	case OPT_FILE:
		cli->file = arg;
		break;
	case OPT_STDIN:
		cli->use_stdin = true;
		break;
	case OPT_NO_OVERWRITE:
	case OPT_IF_ABSENT:
		cli->no_overwrite = true;
		break;
	case OPT_IF_PRESENT:
		cli->if_present = true;
		break;
	case OPT_IF_VERSION:
		/* versions are never 0 */
		rc = parse_num("if-version", arg, 10, UINT64_MAX,
			       &cli->if_version);
		if (!rc && !cli->if_version)
			rc = usage_error(NULL, "--if-version 0: no record "
					 "has version 0");
		break;
	case OPT_TTL:
		rc = parse_duration("--ttl", arg, &cli->ttl_ms);
		break;
	case OPT_AT:
		/* a deadline: ms since the epoch, never 0 (the protocol's
		 * "none") */
		rc = parse_num("at", arg, 10, UINT64_MAX, &cli->at_ms);
		if (!rc && !cli->at_ms)
			rc = usage_error(NULL, "--at 0: a deadline is "
					 "milliseconds since the epoch, at "
					 "least 1");
		break;
	case OPT_SHOW_DEADLINE:
		cli->show_deadline = true;
		break;
	case OPT_MAX_BYTES:
		rc = fmt_parse_size(arg, UINT64_MAX, &cli->max_bytes);
		if (rc)
			rc = usage_error(NULL, "--max-bytes %s: not a size "
					 "(a number, maybe with K, M, G or "
					 "T)", arg);
		else if (!cli->max_bytes)
			rc = usage_error(NULL, "--max-bytes %s: at least 1",
					 arg);
		break;
	case OPT_MAX_RECORDS:
		rc = parse_num("max-records", arg, 10, UINT64_MAX,
			       &cli->max_records);
		if (!rc && !cli->max_records)
			rc = usage_error(NULL, "--max-records %s: at least 1",
					 arg);
		break;
	case OPT_EVICT:
		rc = cli_evict_parse(arg, &cli->evict);
		if (rc)
			rc = usage_error(NULL, "--evict %s: one of refuse, "
					 "lru, lfu, ttl", arg);
		break;
	case OPT_PREFIX:
		p->prefix_arg = arg;
		break;
	case OPT_ORDERED:
		cli->table_flags |= TDBC_TABLE_ORDERED;
		break;
	case OPT_FROM:
	case OPT_AFTER:
		if (p->from_arg)
			rc = usage_error(NULL, "give the range's start once: "
					 "--from K or --after K");
		p->from_arg = arg;
		if (opt == OPT_AFTER)
			cli->range_flags |= TDBC_RANGE_FROM_EXCL;
		break;
	case OPT_TO:
	case OPT_THROUGH:
		if (p->to_arg)
			rc = usage_error(NULL, "give the range's end once: "
					 "--to K or --through K");
		p->to_arg = arg;
		if (opt == OPT_THROUGH)
			cli->range_flags |= TDBC_RANGE_TO_INCL;
		break;
	case OPT_REVERSE:
		cli->range_flags |= TDBC_RANGE_REVERSE;
		break;
	case OPT_LIMIT:
		/* the protocol's LIMIT is a u32; the library's 0 means
		 * "no limit", which --limit 0 would not say */
		rc = parse_num("limit", arg, 10, UINT32_MAX, &cli->limit);
		if (!rc && !cli->limit)
			rc = usage_error(NULL, "--limit %s: at least 1", arg);
		break;
	case OPT_KEYS_ONLY:
		cli->keys_only = true;
		break;
	case OPT_COUNT:
		rc = parse_num("count", arg, 10, UINT64_MAX, &cli->count);
		if (!rc && !cli->count)
			rc = usage_error(NULL, "--count %s: at least 1", arg);
		break;
	case OPT_TIMEOUT:
		rc = parse_num("timeout", arg, 10, INT32_MAX, &v);
		cli->timeout_ms = (long)v;
		break;
	case OPT_TXN:
		cli->txn = true;
		break;
	}
	return rc;
}

/*
 * Negative numbers as arguments ("tdb incr T K -5"): getopt would take
 * "-5" for options.  No option is a digit, so such a word is always an
 * argument unless it is the value of the option before it: parse_line
 * hands getopt a copy starting with '\x01' instead, and unhide_neg gives
 * the positional back as it was.
 */
static bool is_neg_number(const char *s)
{
	if (s[0] != '-' || !s[1])
		return false;
	for (s++; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

/* Does word (the one before) take the next word as its value? */
static bool takes_value(const char *word)
{
	const struct option *o;
	size_t n;

	if (strncmp(word, "--", 2) || !word[2] || strchr(word, '='))
		return false;
	n = strlen(word + 2);
	for (o = long_opts; o->name; o++)
		if (o->has_arg == required_argument &&
		    !strncmp(o->name, word + 2, n))
			return true;
	return false;
}

static char *unhide_neg(struct parsed *p, char *arg)
{
	int i;

	for (i = 0; i < p->nneg; i++)
		if (p->neg_copy[i] == arg)
			return p->neg_orig[i];
	return arg;
}

static int hide_negs(struct parsed *p, int argc, char **argv)
{
	int i;

	for (i = 1; i < argc && strcmp(argv[i], "--"); i++) {
		char *copy;

		if (!is_neg_number(argv[i]) || takes_value(argv[i - 1]))
			continue;
		if (!p->neg_orig) {
			p->neg_orig = calloc((size_t)argc, sizeof(char *));
			p->neg_copy = calloc((size_t)argc, sizeof(char *));
		}
		copy = strdup(argv[i]);
		if (!p->neg_orig || !p->neg_copy || !copy) {
			free(copy);
			fprintf(cli_err, "tdb: out of memory\n");
			return EXIT_ERROR;
		}
		copy[0] = '\x01';
		p->neg_orig[p->nneg] = argv[i];
		p->neg_copy[p->nneg++] = copy;
		argv[i] = copy;
	}
	return -1;
}

/* Returns -1 to go on, else an exit code (help, version, error). */
static int parse_opt(struct cli *cli, struct parsed *p, int opt)
{
	if (cli->in_line && (opt == OPT_SOCKET || opt == OPT_NO_RINGS ||
			     opt == OPT_JSON || opt == OPT_JSON_ARRAY))
		return usage_error(NULL, "--%s applies to the whole batch: "
				   "give it to tdb itself", opt_name(opt));
	switch (opt) {
	case 1:                 /* a positional argument, in order */
		p->pos[p->npos++] = unhide_neg(p, optarg);
		return -1;
	case OPT_SOCKET:   cli->socket = optarg; return -1;
	case OPT_NO_RINGS: cli->flags |= TDBC_NO_RINGS; return -1;
	case OPT_JSON:     cli->json = true; return -1;
	case OPT_JSON_ARRAY:
		cli->json = cli->json_array = true;
		return -1;
	case OPT_HEX:
		return set_enc(cli, FMT_HEX) ? EXIT_USAGE : -1;
	case OPT_ESCAPE:
		return set_enc(cli, FMT_ESCAPE) ? EXIT_USAGE : -1;
	case 'k':          cli->key_hex = true; return -1;
	case 'v':          cli->value_hex = true; return -1;
	case 'h':
		fputs(usage_text, stdout);
		return fflush(stdout) ? EXIT_ERROR : EXIT_OK;
	case 'V':
		/* after get: the record's version, not tdb's */
		if (p->npos && !strcmp(p->pos[0], "get")) {
			p->seen |= O(OPT_SHOW_VERSION);
			cli->show_version = true;
			return -1;
		}
		printf("tdb %s\n", TDB_VERSION);
		return fflush(stdout) ? EXIT_ERROR : EXIT_OK;
	case '?':               /* getopt said what, but in a line */
		if (cli->in_line)
			return usage_error(NULL, "%s: no such option, or "
					   "its argument is missing",
					   p->last_word);
		fprintf(cli_err, "Try 'tdb --help'.\n");
		return EXIT_USAGE;
	}
	if (opt >= OPT_CMD0 && opt < OPT_END)
		return parse_cmd_opt(cli, p, opt, optarg) ? EXIT_USAGE : -1;
	return EXIT_USAGE;
}

/* getopt_long over the whole line; "-" first in optstring returns the
 * positionals in order (as option 1) whatever POSIXLY_CORRECT says, so
 * options may come before and after the command; "--" ends them. */
static int parse_line(struct cli *cli, struct parsed *p, int argc,
		      char **argv)
{
	int opt, rc;

	argv[0] = (char *)"tdb";        /* getopt's messages say "tdb:" */
	rc = hide_negs(p, argc, argv);
	if (rc >= 0)
		return rc;
	optind = 0;                     /* anew for every line (glibc) */
	opterr = !cli->in_line;         /* a line's go to cli_err */
	while ((opt = getopt_long(argc, argv, "-kvhV", long_opts,
				  NULL)) != -1) {
		/* an unknown option, or one missing its argument, is the
		 * word getopt just passed */
		p->last_word = argv[optind > 1 ? optind - 1 : 1];
		rc = parse_opt(cli, p, opt);
		if (rc >= 0)
			return rc;
	}
	while (optind < argc)
		p->pos[p->npos++] = unhide_neg(p, argv[optind++]);
	return -1;
}

/* --- arguments ---------------------------------------------------------- */

static const struct command *find_command(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(commands[i].name, name))
			return &commands[i];
	return NULL;
}

/* strerror(e) with a lower-case first letter, as tdb's other texts
 * ("no such file or directory"); an acronym ("I/O ...") stays.  One
 * static buffer: one use per message. */
static const char *lc_strerror(int e)
{
	static char buf[128];

	snprintf(buf, sizeof(buf), "%s", strerror(e));
	if (buf[0] >= 'A' && buf[0] <= 'Z' && !(buf[1] >= 'A' &&
						buf[1] <= 'Z'))
		buf[0] = (char)(buf[0] - 'A' + 'a');
	return buf;
}

/* The protocol's key rule (TDB_KEY_MIN..TDB_KEY_MAX bytes), checked
 * before connecting: EXIT_USAGE after saying which, or 0. */
static int check_key(const char *cmd, const struct cli_bytes *b)
{
	if (b->n < TDB_KEY_MIN)
		return usage_error(cmd, "KEY is empty (a key has %u to %u "
				   "bytes)", TDB_KEY_MIN, TDB_KEY_MAX);
	if (b->n > TDB_KEY_MAX)
		return usage_error(cmd, "KEY is %zu bytes, longer than %u",
				   b->n, TDB_KEY_MAX);
	return 0;
}

/* An ordered table's order: bytewise, a key before the longer keys it
 * starts (LMDB's). */
static int key_cmp(const void *a, size_t alen, const void *b, size_t blen)
{
	int d = memcmp(a, b, alen < blen ? alen : blen);

	if (d)
		return d;
	return alen < blen ? -1 : alen > blen;
}

/* A range's bound is a key: TDB_KEY_MIN..TDB_KEY_MAX bytes. */
static int check_bound(const char *cmd, const char *opt,
		       const struct cli_bytes *b)
{
	if (b->n < TDB_KEY_MIN)
		return usage_error(cmd, "%s is empty (a key has %u to %u "
				   "bytes)", opt, TDB_KEY_MIN, TDB_KEY_MAX);
	if (b->n > TDB_KEY_MAX)
		return usage_error(cmd, "%s is %zu bytes, longer than %u",
				   opt, b->n, TDB_KEY_MAX);
	return 0;
}

/* The length of an argument: a line's word may hold NUL bytes (from
 * "\x00" in double quotes); an argv string has none. */
static size_t arg_len(const struct cli *cli, const char *arg)
{
	int i;

	for (i = 0; cli->words && i < cli->words->n; i++)
		if (cli->words->word[i] == arg)
			return cli->words->len[i];
	return strlen(arg);
}

/* A KEY, VALUE or --prefix argument: as given, or decoded from hex. */
static int take_bytes(const struct cli *cli, const char *what,
		      const char *arg, bool hex, struct cli_bytes *b)
{
	const char *cmd = cli->cmd;
	size_t n = arg_len(cli, arg);
	int err = 0;

	if (hex) {
		err = fmt_hex_decode(arg, n, &b->p, &b->n);
	} else if ((b->p = malloc(n + 1))) {
		memcpy(b->p, arg, n);
		b->n = n;
	} else {
		err = -ENOMEM;
	}
	if (err == -EINVAL)
		return usage_error(cmd, "%s is not hex (two digits a byte)",
				   what);
	if (!err && !strcmp(what, "KEY"))
		err = check_key(cmd, b);
	if (err > 0)
		return err;
	if (err) {
		fprintf(cli_err, "tdb: %s: %s\n", cmd, lc_strerror(-err));
		return EXIT_ERROR;
	}
	b->set = true;
	return 0;
}

/* put's value from --file, --stdin or "-". */
static int read_value(struct cli *cli)
{
	int fd = STDIN_FILENO, err;
	uint8_t *raw;
	size_t n;

	if (cli->file && (fd = open(cli->file, O_RDONLY | O_CLOEXEC)) < 0) {
		fprintf(cli_err, "tdb: put: %s: %s\n", cli->file,
			lc_strerror(errno));
		return EXIT_ERROR;
	}
	err = fmt_read_all(fd, INPUT_CAP, &raw, &n);
	if (fd != STDIN_FILENO)
		close(fd);
	if (err) {
		fprintf(cli_err, "tdb: put: reading %s: %s\n",
			cli->file ? cli->file : "stdin",
			err == -E2BIG ? "too long for a value" :
			lc_strerror(-err));
		return EXIT_ERROR;
	}
	if (!cli->value_hex) {
		cli->value = (struct cli_bytes){ raw, n, true };
		return 0;
	}
	err = fmt_hex_decode((const char *)raw, n, &cli->value.p,
			     &cli->value.n);
	free(raw);
	if (err) {
		fprintf(cli_err, "tdb: put: reading %s: %s\n",
			cli->file ? cli->file : "stdin", err == -EINVAL ?
			"not hex (two digits a byte)" : lc_strerror(-err));
		return EXIT_ERROR;
	}
	cli->value.set = true;
	return 0;
}

static int put_args(struct cli *cli, char **args, int nargs)
{
	int sources = (nargs == 3) + !!cli->file + cli->use_stdin, rc;

	if (nargs == 3 && !strcmp(args[2], "-")) {
		if (cli->file || cli->use_stdin)
			sources = 2;
		cli->use_stdin = true;
		nargs = 2;
	}
	if (sources != 1)
		return usage_error("put", "give the value once: VALUE, -, "
				   "--file F or --stdin");
	if (cli->in_line && cli->use_stdin)
		return usage_error("put", "- and --stdin read the commands' "
				   "input: give VALUE or --file F");
	if (nargs == 3)
		rc = take_bytes(cli, "VALUE", args[2], cli->value_hex,
				&cli->value);
	else
		rc = read_value(cli);
	if (!rc && cli->value.n > TDB_VALUE_MAX)
		return usage_error("put", "VALUE is %zu bytes, longer than %u",
				   cli->value.n, TDB_VALUE_MAX);
	return rc;
}

/* incr's DELTA: a signed 64-bit decimal integer, 1 when not given. */
static int incr_args(struct cli *cli, char **args, int nargs)
{
	int err;

	cli->delta = 1;
	if (nargs < 3)
		return 0;
	err = fmt_parse_s64(args[2], &cli->delta);
	if (err == -ERANGE)
		return usage_error("incr", "DELTA %s: out of the signed 64-bit "
				   "range", args[2]);
	if (err)
		return usage_error("incr", "DELTA %s: not an integer (an "
				   "optional '-' and decimal digits)", args[2]);
	return 0;
}

/* expire's DURATION, --ttl DURATION or --at MS: one of them. */
static int expire_args(struct cli *cli, char **args, int nargs)
{
	if ((nargs == 3) + !!cli->ttl_ms + !!cli->at_ms != 1)
		return usage_error("expire", "give the deadline once: "
				   "DURATION, --ttl DURATION or --at MS");
	return nargs == 3 ? parse_duration("DURATION", args[2], &cli->ttl_ms)
			  : 0;
}

/* The TDBC_IF_* flags of put's and del's options; main.c checked that
 * at most one condition was given. */
unsigned int cli_cond_flags(const struct cli *cli)
{
	return (cli->no_overwrite ? TDBC_IF_ABSENT : 0) |
	       (cli->if_present ? TDBC_IF_PRESENT : 0) |
	       (cli->if_version ? TDBC_IF_VERSION : 0);
}

/* A new table's name: the protocol's rule, before anything is sent
 * (other commands take any name: tables made before the rule). */
static int check_new_name(const char *name)
{
	const char *why = "";

	if (!tdb_name_check(name, strlen(name), &why))
		return 0;
	return usage_error("create", "%s", why);
}

/* scan's range: its bounds (keys, in hex under -k), not with --prefix,
 * from not after to; cli->ranged says a range was asked for. */
static int range_args(struct cli *cli, const struct parsed *p)
{
	const unsigned int bounds = O(OPT_FROM) | O(OPT_AFTER) | O(OPT_TO) |
				    O(OPT_THROUGH);
	int rc;

	if (!(p->seen & (bounds | O(OPT_REVERSE))))
		return 0;
	if (p->prefix_arg)
		return usage_error(cli->cmd, "--prefix and a range (--from, "
				   "--after, --to, --through, --reverse) "
				   "exclude each other");
	cli->ranged = true;
	if (p->from_arg &&
	    ((rc = take_bytes(cli, "--from", p->from_arg, cli->key_hex,
			      &cli->from)) ||
	     (rc = check_bound(cli->cmd, cli->range_flags &
			       TDBC_RANGE_FROM_EXCL ? "--after" : "--from",
			       &cli->from))))
		return rc;
	if (p->to_arg &&
	    ((rc = take_bytes(cli, "--to", p->to_arg, cli->key_hex,
			      &cli->to)) ||
	     (rc = check_bound(cli->cmd, cli->range_flags &
			       TDBC_RANGE_TO_INCL ? "--through" : "--to",
			       &cli->to))))
		return rc;
	if (cli->from.set && cli->to.set &&
	    key_cmp(cli->from.p, cli->from.n, cli->to.p, cli->to.n) > 0)
		return usage_error(cli->cmd, "the range's start is after its "
				   "end (keys in bytewise order, shorter "
				   "first)");
	return 0;
}

/* Check the positionals and options against the command; decode them. */
static int take_args(struct cli *cli, const struct command *cmd,
		     struct parsed *p)
{
	char **args = p->pos + 1;
	int nargs = p->npos - 1, rc;
	unsigned int bad = p->seen & ~cmd->opts;

	if (bad)
		return usage_error(cmd->name, "--%s does not apply here",
				   opt_name(OPT_CMD0 + __builtin_ctz(bad)));
	if (!!cli->no_overwrite + !!cli->if_present + !!cli->if_version > 1)
		return usage_error(cmd->name, "give one condition: "
				   "--if-absent (--no-overwrite), "
				   "--if-present or --if-version V");
	if (cli->ttl_ms && cli->at_ms)
		return usage_error(cmd->name, "give --ttl or --at, not both");
	if (nargs < cmd->min_args || nargs > cmd->max_args)
		return usage_error(cmd->name, "wrong number of arguments\n"
				   "Usage: tdb %s%s%s", cmd->name,
				   *cmd->args ? " " : "", cmd->args);
	if (nargs >= 1)
		cli->table = args[0];
	if (!strcmp(cmd->name, "create") && (rc = check_new_name(cli->table)))
		return rc;
	if (nargs >= 2 && (rc = take_bytes(cli, "KEY", args[1],
					   cli->key_hex, &cli->key)))
		return rc;
	if (p->prefix_arg && (rc = take_bytes(cli, "--prefix",
					      p->prefix_arg, cli->key_hex,
					      &cli->prefix)))
		return rc;
	if ((rc = range_args(cli, p)))
		return rc;
	if (!strcmp(cmd->name, "put"))
		return put_args(cli, args, nargs);
	if (!strcmp(cmd->name, "incr"))
		return incr_args(cli, args, nargs);
	if (!strcmp(cmd->name, "expire"))
		return expire_args(cli, args, nargs);
	return 0;
}

/* --- running ------------------------------------------------------------ */

int cli_exit_code(int err)
{
	switch (err) {
	case -ENOENT: return EXIT_NOTFOUND;
	case -EEXIST: return EXIT_EXISTS;
	case -EACCES:
	case -EPERM:  return EXIT_DENIED;
	case -ECANCELED:
	case -ESTALE: return EXIT_CONFLICT;
	}
	return EXIT_ERROR;
}

/*
 * "tdb: CMD TABLE KEY: MESSAGE": the table and key the failure is about
 * (escaped as scan escapes them, the key in hex under -k), then the
 * owner's or the library's text, which says what happened ("no such
 * key"); tdbc_strerror only when there is no such text, so that nothing
 * is said twice.
 */
int cli_fail(const struct cli *cli, int err)
{
	const char *msg = cli->c ? tdbc_errmsg(cli->c) : "";

	fprintf(cli_err, "tdb: %s", cli->cmd);
	if (cli->table) {
		fputc(' ', cli_err);
		fmt_bytes(cli_err, cli->table, strlen(cli->table),
			  FMT_ESCAPE);
	}
	if (cli->key.set) {
		fputc(' ', cli_err);
		fmt_bytes(cli_err, cli->key.p, cli->key.n,
			  cli->key_hex ? FMT_HEX : FMT_ESCAPE);
	}
	fprintf(cli_err, ": %s\n", *msg ? msg : tdbc_strerror(err));
	return cli_exit_code(err);
}

enum fmt_enc cli_enc(const struct cli *cli, enum fmt_enc dflt)
{
	return cli->enc >= 0 ? (enum fmt_enc)cli->enc : dflt;
}

int cli_open_table(struct cli *cli, struct tdbc_table **t)
{
	int err = tdbc_table_open(cli->c, cli->table, t);

	return err ? -cli_fail(cli, err) : 0;
}

static int run(struct cli *cli, const struct command *cmd)
{
	char errmsg[512] = "";
	int err, rc;

	err = tdbc_connect(&cli->c, cli->socket, cli->flags, errmsg,
			   sizeof(errmsg));
	if (err) {
		/* The library's message names the path and says what to
		 * do; tdbc_strerror's table wording would mislead here. */
		fprintf(stderr, "tdb: %s: %s\n", cmd->name,
			*errmsg ? errmsg : tdbc_strerror(err));
		return EXIT_CONNECT;
	}
	rc = cmd->run(cli);
	cli_docs_end(rc);
	tdbc_close(cli->c);
	cli->c = NULL;
	/* Output that could not be written is a failure, not a success
	 * with a truncated answer. */
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "tdb: %s: writing the output: %s\n",
			cmd->name, lc_strerror(errno));
		if (rc == EXIT_OK)
			rc = EXIT_ERROR;
	}
	return rc;
}

/* The copies hide_negs made (nothing points to them once parsed). */
static void neg_free(struct parsed *p)
{
	int i;

	for (i = 0; i < p->nneg; i++)
		free(p->neg_copy[i]);
	free(p->neg_copy);
	free(p->neg_orig);
	p->neg_copy = p->neg_orig = NULL;
	p->nneg = 0;
}

static void cli_free(struct cli *cli, struct parsed *p)
{
	free(cli->key.p);
	free(cli->value.p);
	free(cli->prefix.p);
	free(cli->from.p);
	free(cli->to.p);
	free(p->pos);
	neg_free(p);
}

static bool is_line_word(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(line_words) / sizeof(line_words[0]); i++)
		if (!strcmp(line_words[i], name))
			return true;
	return false;
}

/* The command p names (after parse_line), or an exit code. */
static int pick_command(struct cli *cli, struct parsed *p,
			const struct command **cmd)
{
	if (!strcmp(p->pos[0], "help"))
		return parse_opt(cli, p, 'h');
	*cmd = find_command(p->pos[0]);
	if (*cmd && cli->in_line && !strcmp(p->pos[0], "batch"))
		*cmd = NULL;
	if (!*cmd && is_line_word(p->pos[0]) && !cli->in_line)
		return usage_error(NULL, "%s: a command of the shell and of "
				   "batch input only", p->pos[0]);
	if (!*cmd)
		return usage_error(NULL, "no such command: %s", p->pos[0]);
	cli->cmd = (*cmd)->name;
	return take_args(cli, *cmd, p);
}

int cli_skip_tdb(const struct fmt_words *w)
{
	const char *slash;

	if (!w->n)
		return 0;
	slash = strrchr(w->word[0], '/');
	return !strcmp(slash ? slash + 1 : w->word[0], "tdb");
}

int cli_line_parse(struct cli *lc, const struct cli *base,
		   const struct fmt_words *w, const struct command **cmd)
{
	struct parsed p = { 0 };
	int i, skip = cli_skip_tdb(w), rc;

	*lc = (struct cli){
		.json = base->json, .json_array = base->json_array,
		.enc = base->enc, .key_hex = base->key_hex,
		.value_hex = base->value_hex,
		.mode = (uint32_t)-1, .uid = (uint32_t)-1,
		.gid = (uint32_t)-1, .timeout_ms = -1,
		.in_line = true, .words = w, .cmd = "",
	};
	*cmd = NULL;
	lc->argv_mem = calloc((size_t)w->n + 2, sizeof(char *));
	lc->pos_mem = p.pos = calloc((size_t)w->n + 2, sizeof(char *));
	if (!lc->argv_mem || !p.pos) {
		fprintf(cli_err, "tdb: out of memory\n");
		return EXIT_ERROR;
	}
	for (i = skip; i < w->n; i++)
		lc->argv_mem[i - skip + 1] = w->word[i];
	rc = parse_line(lc, &p, w->n - skip + 1, lc->argv_mem);
	neg_free(&p);
	if (rc >= 0)
		return rc;
	if (!p.npos)
		return usage_error(NULL, "no command");
	rc = pick_command(lc, &p, cmd);
	return rc || !*cmd ? rc : -1;
}

void cli_line_free(struct cli *lc)
{
	struct parsed p = { .pos = lc->pos_mem };

	cli_free(lc, &p);
	free(lc->argv_mem);
	lc->argv_mem = lc->pos_mem = NULL;
}

/* --- JSON documents ------------------------------------------------------ */

static bool docs_array;
static unsigned long docs_n;

void cli_docs_array(bool on)
{
	docs_array = on;
}

void cli_doc_open(void)
{
	if (docs_array)
		putchar(docs_n ? ',' : '[');
	docs_n++;
}

void cli_doc_close(void)
{
	if (!docs_array)
		putchar('\n');
}

void cli_ok_doc(void)
{
	cli_doc_open();
	fputs("{\"ok\":true}", stdout);
	cli_doc_close();
}

/* The array's end; none after a failure that printed nothing, so that
 * stdout stays empty as without --json-array. */
void cli_docs_end(int rc)
{
	if (docs_array && (docs_n || rc == EXIT_OK))
		puts(docs_n ? "]" : "[]");
}

int main(int argc, char **argv)
{
	struct cli cli = {
		.enc = -1, .mode = (uint32_t)-1, .uid = (uint32_t)-1,
		.gid = (uint32_t)-1, .timeout_ms = -1,
	};
	struct parsed p = { .pos = calloc((size_t)argc + 1, sizeof(char *)) };
	const struct command *cmd = NULL;
	int rc;

	cli_err = stderr;
	if (!p.pos) {
		fprintf(stderr, "tdb: out of memory\n");
		return EXIT_ERROR;
	}
	rc = parse_line(&cli, &p, argc, argv);
	cli_docs_array(cli.json_array);
	if (rc < 0 && !p.npos) {
		/* no command: the shell on a terminal, else a batch from
		 * stdin (tdb(1)) */
		cmd = isatty(STDIN_FILENO) ? &shell_command :
					     find_command("batch");
		cli.cmd = cmd->name;
		p.pos[p.npos++] = (char *)cmd->name;
		rc = take_args(&cli, cmd, &p);
	} else if (rc < 0) {
		rc = pick_command(&cli, &p, &cmd);
	}
	if (!rc && cmd)
		rc = run(&cli, cmd);
	cli_free(&cli, &p);
	return rc;
}
