/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * cli.h - what the tdb CLI's files share: the parsed command line
 * (struct cli), the exit codes, and the commands (cmd_*.c), which main.c
 * calls once the command line is known to be valid and the connection
 * is up; and what batch.c (tdb batch, the shell) uses of main.c's
 * parsing to run lines of words as commands.
 */
#ifndef TDB_CLI_H
#define TDB_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <tdb/client.h>

#include "fmt.h"

/* Exit codes (also in `tdb --help`); scripts rely on them. */
enum {
	EXIT_OK = 0,
	EXIT_NOTFOUND = 1,      /* no such table or key */
	EXIT_USAGE = 2,         /* bad command line */
	EXIT_EXISTS = 3,        /* create of a table, put --no-overwrite */
	EXIT_DENIED = 4,        /* the table's owner or mode forbids it */
	EXIT_CONNECT = 5,       /* no daemon at the socket, cannot connect */
	EXIT_ERROR = 6,         /* any other failure (daemon, I/O, ...) */
	EXIT_CONFLICT = 7,      /* a condition failed (--if-version), or a
				 * transaction read a key another client
				 * changed (commit: -ECANCELED, -ESTALE) */
};

/* A byte string from the command line (decoded from hex when asked). */
struct cli_bytes {
	uint8_t *p;             /* malloc()ed, never NULL once set */
	size_t n;
	bool set;
};

struct cli {
	/* global options */
	const char *socket;     /* NULL: $TDB_SOCKET, else the default */
	unsigned int flags;     /* TDBC_NO_RINGS */
	bool json;
	bool json_array;        /* --json-array: the documents as one array */
	bool txn;               /* batch --txn */
	int enc;                /* forced enum fmt_enc; -1: the command's */
	bool key_hex, value_hex;

	/* command options (main.c checks each applies to the command) */
	uint32_t max_extents;   /* 0: the daemon's default */
	uint32_t mode, uid, gid;        /* (uint32_t)-1: default */
	const char *file;       /* put --file */
	bool use_stdin;         /* put --stdin, or VALUE "-" */
	bool no_overwrite;      /* put --no-overwrite, --if-absent */
	bool if_present;        /* put --if-present */
	uint64_t if_version;    /* put, del --if-version V; 0: none */
	bool show_version;      /* get --version: the record's version */
	bool show_deadline;     /* get --deadline: the record's deadline */
	uint64_t ttl_ms;        /* put, create --ttl; expire DURATION; 0:
				 * none */
	uint64_t at_ms;         /* put, expire --at: a deadline; 0: none */
	uint64_t max_bytes, max_records;        /* create; 0: none */
	uint32_t evict;         /* create --evict: TDBC_EVICT_* */
	uint32_t table_flags;   /* create --ordered: TDBC_TABLE_* */
	int64_t delta;          /* incr: DELTA (1 when not given) */
	struct cli_bytes prefix;
	/* scan's range: --from/--after, --to/--through, --reverse */
	bool ranged;
	struct cli_bytes from, to;
	unsigned int range_flags;       /* TDBC_RANGE_* */
	uint64_t limit;         /* scan; 0: all */
	bool keys_only;
	uint64_t count;         /* watch: stop after this many; 0: never */
	long timeout_ms;        /* watch: stop after this long; -1: never */

	/* the command */
	const char *cmd;        /* its name, for messages */
	struct cli_bytes key, value;    /* decoded arguments */
	const char *table;
	struct tdbc *c;         /* the connection (commands that need one) */

	/* a line of a batch or the shell (cli_line_parse) */
	bool in_line;
	const struct fmt_words *words;  /* its words: their lengths */
	char **argv_mem, **pos_mem;     /* freed by cli_line_free */
};

struct command {
	const char *name;
	const char *args;       /* for usage messages */
	int min_args, max_args; /* positional arguments after the name */
	unsigned int opts;      /* O(OPT_...) it takes */
	int (*run)(struct cli *cli);
};

/* Where messages go: stderr, or a batch line's buffer (batch.c), which
 * names the line before it passes them on. */
extern FILE *cli_err;

/*
 * Parse one line's words (a batch's, the shell's) as a command line
 * after "tdb": into lc, which starts with base's output and key
 * options (a line may add -k, -v, --hex, --escape and the command's
 * options; the connection's and --json's are the batch's).  -1 and
 * *cmd when the command is to be run (cmd->run(lc), lc->c set by the
 * caller), else an exit code after saying why to cli_err.  A leading
 * word "tdb" (or a path to it) is skipped, so commands printed for a
 * shell paste as they are.  Free with cli_line_free whatever it returned.
 */
int cli_line_parse(struct cli *lc, const struct cli *base,
		   const struct fmt_words *w, const struct command **cmd);
void cli_line_free(struct cli *lc);
/* 1 if the first word is tdb, or a path to it (./build/.../tdb): the
 * words a command pasted from a shell starts with; else 0. */
int cli_skip_tdb(const struct fmt_words *w);

/*
 * JSON documents, one a line; with --json-array (cli_docs_array) one
 * array of them: "[" before the first, "," between, "]" at the end
 * (cli_docs_end, "[]" if none).  Every document goes between
 * cli_doc_open and cli_doc_close.
 */
void cli_docs_array(bool on);
void cli_doc_open(void);
void cli_doc_close(void);
void cli_docs_end(int rc);
/* {"ok":true}, the document of create, drop, put and del. */
void cli_ok_doc(void);

/*
 * Report a failure of the command: "tdb: CMD TABLE KEY: <tdbc_errmsg>"
 * (the table and key when the command has them, escaped; tdbc_strerror
 * when there is no message); returns the exit code err maps to
 * (cli_exit_code).
 */
int cli_fail(const struct cli *cli, int err);
/* --evict's words: refuse, lru, lfu, ttl (TDBC_EVICT_*); -EINVAL for
 * another.  cli_evict_name gives a policy's word ("unknown" for a
 * number it does not know). */
int cli_evict_parse(const char *s, uint32_t *evict);
const char *cli_evict_name(uint32_t evict);
/* The exit code for a negative errno of a command (not of connecting). */
int cli_exit_code(int err);
/* The encoding for keys and values: the forced one or the default. */
enum fmt_enc cli_enc(const struct cli *cli, enum fmt_enc dflt);
/* Open cli->table; on failure reports and returns the exit code, as a
 * negative number (so the caller can tell it from 0). */
int cli_open_table(struct cli *cli, struct tdbc_table **t);

/* Commands: each returns its exit code. */
int cmd_tables(struct cli *cli);
int cmd_create(struct cli *cli);
int cmd_drop(struct cli *cli);
int cmd_stat(struct cli *cli);
int cmd_stats(struct cli *cli);
int cmd_get(struct cli *cli);
int cmd_put(struct cli *cli);
int cmd_del(struct cli *cli);
int cmd_incr(struct cli *cli);
int cmd_ttl(struct cli *cli);
int cmd_expire(struct cli *cli);
int cmd_persist(struct cli *cli);
/* The TDBC_IF_* flags of put and del's options. */
unsigned int cli_cond_flags(const struct cli *cli);
int cmd_scan(struct cli *cli);
int cmd_watch(struct cli *cli);
int cmd_batch(struct cli *cli);         /* batch.c */
int cmd_shell(struct cli *cli);         /* batch.c */

#endif
