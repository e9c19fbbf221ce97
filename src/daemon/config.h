/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * config.h - tdbd's settings: defaults, tdbd.conf, command-line overrides.
 *
 * Precedence: built-in defaults, then the config file, then the command
 * line.  On SIGHUP tdbd builds a fresh struct from the file and the same
 * command line and applies what may change at run time
 * (tdbd_config_diff says which); everything else needs a restart and is
 * reported as such.
 *
 * The file: one `key = value` per line; blank lines and lines starting
 * with '#' (after optional blanks) are ignored; blanks around key and
 * value are ignored; a value may be double-quoted (then it may contain
 * '#' and blanks; \" and \\ escape).  Every key is also a long option:
 * `--key VALUE` or `--key=VALUE`.  Unknown keys, bad values, duplicate
 * keys in one file and missing values are errors naming the file, the
 * line and the reason: "/etc/tdb/tdbd.conf:12: ring-size: not a power
 * of two (5000000)".
 *
 * No global state: everything is in struct tdbd_config.  Functions never
 * print or exit; they return 0 or a negative errno and fill err.
 */
#ifndef TDBD_CONFIG_H
#define TDBD_CONFIG_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define TDBD_CONFIG_DEFAULT "/etc/tdb/tdbd.conf"

struct tdbd_config {
	/* key             type / range                     default */
	char socket[108];      /* socket: path (sun_path)   "/run/tdb/tdbd.sock" */
	uint32_t socket_mode;  /* socket-mode: octal, <= 0777      0660 */
	char socket_group[64]; /* socket-group: group name or number; ""
				* = the daemon's group          "" */
	char data_dir[PATH_MAX];/* data-dir: directory; "" = a scratch
				* directory made at start and removed at
				* exit                          "" */
	uint32_t workers;      /* workers: 1..64 threads serving rings  1 */
	uint32_t ring_size;    /* ring-size: bytes per client ring, a power
				* of two, 4M..256M (K/M/G suffixes)  4M */
	uint32_t feed_size;    /* feed-size: bytes per table change feed,
				* power of two, 4M..1G            4M */
	bool hugepages;        /* hugepages: yes/no, true/false, on/off,
				* 1/0: try hugetlb memfds for rings  yes */
	uint32_t client_deadline_ms; /* client-deadline: a duration
				* (ms, s, m suffixes; bare = ms), 1ms..1h:
				* a client that leaves its completions
				* undrained this long is cut off      10s */
	uint32_t max_clients;  /* max-clients: 1..65536              1024 */
	uint32_t max_txn_ops;  /* max-txn-ops: 1..1048576 changes per
				* transaction                        65536 */
	uint64_t max_txn_bytes;/* max-txn-bytes: bytes buffered per
				* transaction, 1K..4G (suffixes)     64M */
	uint32_t max_txns;     /* max-txns: open transactions per
				* client, 1..1024                       16 */
	/* limits per uid and in all (quota.h; docs/CONFIG.md, "Limits"):
	 * uid 0 is exempt from the per-uid ones, and the last eighth of
	 * each total is kept for it.  Every limit's default and range is
	 * src/owner/limtable.h's (the ranges written here are its), and
	 * the per-uid ones also take 0, "no limit" */
	uint32_t max_clients_per_uid; /* max-clients-per-uid: 1..65536
				* connections of one uid              64 */
	uint32_t max_tables_per_uid; /* max-tables-per-uid: 1..4000 tables
				* owned by one uid                   256 */
	uint64_t max_reserve_per_uid; /* max-reserve-per-uid: address
				* space the tables of one uid reserve
				* (max-extents x 2M each), 4M..128T  256G */
	uint64_t max_reserve;  /* max-reserve: the same in all, 4M..128T
				* (the process has 128T)              16T */
	uint64_t max_txn_memory_per_uid; /* max-txn-memory-per-uid: bytes
				* the open transactions of one uid
				* buffer, 1M..1T                     256M */
	uint64_t max_txn_memory; /* max-txn-memory: the same in all,
				* 1M..1T                               1G */
	uint64_t max_snapshot_memory_per_uid; /* max-snapshot-memory-per-uid:
				* pre-images the snapshots of one uid
				* keep, 1M..1T                       512M */
	uint32_t max_watches;  /* max-watches: watches per client,
				* 1..65536                            1024 */
	uint32_t max_watches_per_uid; /* max-watches-per-uid: watches of
				* one uid's connections, 1..1048576   4096 */
	uint32_t max_watches_total; /* max-watches-total: the same in all,
				* 1..1048576                         16384 */
	uint64_t max_data_per_uid; /* max-data-per-uid: extents of the
				* tables one uid owns, 0..16384G, 0 = half
				* of max-memory                         0 */
	uint64_t max_ring_memory_per_uid; /* max-ring-memory-per-uid: ring
				* memory of one uid's connections
				* (2 x ring-size each), 8M..1T          1G */
	uint64_t max_ring_memory; /* max-ring-memory: the same in all,
				* 8M..16T                               8G */
	uint32_t max_tables;   /* max-tables: tables at once, 1..4000
				* (TDBD_TABLES_MAX)                  4000 */
	uint64_t max_snapshot_bytes; /* max-snapshot-bytes: old values
				* one snapshot scan keeps for the keys
				* changed during it, 1K..64G (restart) 256M */
	uint64_t max_snapshot_memory; /* max-snapshot-memory: old values
				* all snapshot scans together keep,
				* 1M..1024G                          1G */
	uint64_t max_memory;   /* max-memory: what src/owner/limtable.h
				* counts (extents, buffered transactions,
				* snapshots, feeds, rings) in all; past it
				* writes that add data fail with -ENOMEM;
				* 0..16T, 0 = 3/4 of physical memory  0 */
	uint32_t table_mode;   /* table-mode: octal, <= 0777: mode of new
				* tables when the creator gives none  0600 */
	uint32_t idle_spin_us; /* idle-spin: a duration in us (us, ms
				* suffixes; bare = us), 0..100ms: how long
				* a worker polls before sleeping       50us */
	uint32_t reader_lease_ms; /* reader-lease: a duration (ms, s, m;
				* bare = ms), 1ms..60s: the longest a
				* writer waits for a client inside a read
				* section of a mapped table        100ms */
	int log_level;         /* log-level: error, warning, notice, info,
				* debug (syslog levels)              info */
	/* durability (docs/DURABILITY.md) */
	uint32_t sync;         /* sync: always, batch, none (enum
				* wal_sync)                        always */
	uint32_t batch_ms;     /* batch-interval: 1ms..10s            10ms */
	uint64_t wal_segment_size; /* wal-segment-size: 1M..1G         64M */
	uint32_t checkpoint_interval_ms; /* checkpoint-interval: 1s..24h 5m */
	uint64_t checkpoint_wal_size; /* checkpoint-wal-size: 1M..64G  256M */
	uint64_t checkpoint_run_size; /* checkpoint-run-size: 1M..16G   64M:
				* kernel mode, the changes a checkpoint
				* run gathers, then writes and commits */
	bool wal_truncate_damaged; /* wal-truncate-damaged: cut a damaged
				* WAL at the damage at start          no */
	uint32_t backend;      /* backend: daemon, kernel (enum
				* tdbd_backend): who keeps the tables  daemon */
};

enum tdbd_backend {
	TDBD_BACKEND_DAEMON = 0,  /* tdbd's own tables, served on its socket */
	TDBD_BACKEND_KERNEL = 1,  /* tdb.ko's, tdbd their supervisor (kernel/kernel.c) */
};

/* Fill in the defaults. */
void tdbd_config_defaults(struct tdbd_config *c);

/* Set one key from its text value (the file and the command line both
 * come here).  -ENOENT unknown key, -EINVAL bad value; err gets
 * "key: reason (value)". */
int tdbd_config_set(struct tdbd_config *c, const char *key,
		    const char *value, char *err, size_t errlen);

/* Apply a file.  -ENOENT if it does not exist (err names it), -EACCES
 * etc. if it cannot be read, -EINVAL for a bad line: err is
 * "path:line: reason".  On any error *c is left as it was. */
int tdbd_config_load(struct tdbd_config *c, const char *path, char *err,
		     size_t errlen);

/*
 * The command line.  Options: --config PATH (default TDBD_CONFIG_DEFAULT,
 * read only if it exists; a --config file must exist), --check-config
 * (sets *check), --help (sets *help), --version (sets *version), and
 * every config key as --key VALUE / --key=VALUE.  Builds the whole
 * configuration: defaults, the file, then the options, so an option
 * beats the file whatever their order.  *config_path gets the file used
 * (NULL if none).  -EINVAL with err ("--ring-size: not a power of two
 * (5000000)", "unknown option --foo", "--socket needs a value"), or the
 * file's error as tdbd_config_load gives it (-ENOENT for a missing
 * --config file).  On error *c and *args are left as they were.
 */
struct tdbd_args {
	const char *config_path;   /* out: the file read, or NULL */
	bool check, help, version; /* out */
};
int tdbd_config_from_args(struct tdbd_config *c, int argc, char *const argv[],
			  struct tdbd_args *args, char *err, size_t errlen);

/* The usage text (options and keys with defaults), for --help. */
const char *tdbd_config_usage(void);

/*
 * Print-free description of what changed between two configurations:
 * fills `changed` with the keys that differ (comma-separated, "" if
 * none) and `restart` with those among them that need a restart
 * (socket, data-dir, workers, ring-size, feed-size, hugepages).  The
 * others (socket-mode, socket-group, client-deadline, max-*, table-mode,
 * idle-spin, log-level) take effect at reload.
 */
void tdbd_config_diff(const struct tdbd_config *old,
		      const struct tdbd_config *new_, char *changed,
		      size_t changed_len, char *restart, size_t restart_len);

#endif
