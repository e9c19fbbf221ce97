// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_config.c - tests of tdbd's configuration (src/daemon/config.c,
 * declared in src/daemon/config.h).
 *
 * Every key with good values, bad values and the edges of its range;
 * the tdbd.conf syntax (comments, blanks, quotes, CRLF, a final line
 * without '\n'); every error message word for word with its line
 * number; the command line and its precedence over the file whatever
 * the order; the shipped packaging/tdbd.conf; --help; the reload diff;
 * and random files and argvs that must give success or an error, never
 * a crash, a half-applied struct or an out-of-range value.
 *
 * Files are written in a private directory made by the group setup.
 * TDB_CONFIG_FUZZ (rounds, default 3000) and TDB_CONFIG_SEED scale and
 * pick the random part; a failing round prints its seed.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <syslog.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"
#include "limtable.h"       /* src/owner: the one limits table */

#define MiB (1ULL << 20)
#define GiB (1ULL << 30)
#define TiB (1ULL << 40)

static char dir[64];            /* private scratch directory */
static char path[PATH_MAX];     /* the last file written */
static char err[8192];
static int nfiles;

/* --- helpers ------------------------------------------------------------- */

static int setup_dir(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/tdbd-config-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	return 0;
}

static int remove_dir(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* Write len bytes to a new file in dir; its name is left in path. */
static const char *write_file_len(const char *data, size_t len)
{
	FILE *f;

	snprintf(path, sizeof(path), "%s/tdbd-%d.conf", dir, nfiles++);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
	return path;
}

static const char *write_file(const char *text)
{
	return write_file_len(text, strlen(text));
}

/* Load text over the defaults. */
static int load_text(struct tdbd_config *c, const char *text)
{
	tdbd_config_defaults(c);
	err[0] = '\0';
	return tdbd_config_load(c, write_file(text), err, sizeof(err));
}

/* Loading text fails with -EINVAL and exactly "<path>:<rest>"; the
 * struct is left as it was. */
static void expect_file_error(const char *text, const char *rest)
{
	struct tdbd_config c, before;
	char want[PATH_MAX + 512];

	tdbd_config_defaults(&c);
	before = c;
	err[0] = '\0';
	assert_int_equal(tdbd_config_load(&c, write_file(text), err,
					  sizeof(err)), -EINVAL);
	snprintf(want, sizeof(want), "%s:%s", path, rest);
	assert_string_equal(err, want);
	assert_memory_equal(&c, &before, sizeof(c));
}

/* A field as a number, by key name (strings: their length). */
static uint64_t field(const struct tdbd_config *c, const char *key)
{
	if (!strcmp(key, "socket"))
		return strlen(c->socket);
	if (!strcmp(key, "socket-mode"))
		return c->socket_mode;
	if (!strcmp(key, "socket-group"))
		return strlen(c->socket_group);
	if (!strcmp(key, "data-dir"))
		return strlen(c->data_dir);
	if (!strcmp(key, "workers"))
		return c->workers;
	if (!strcmp(key, "ring-size"))
		return c->ring_size;
	if (!strcmp(key, "feed-size"))
		return c->feed_size;
	if (!strcmp(key, "hugepages"))
		return c->hugepages;
	if (!strcmp(key, "client-deadline"))
		return c->client_deadline_ms;
	if (!strcmp(key, "max-clients"))
		return c->max_clients;
	if (!strcmp(key, "max-txn-ops"))
		return c->max_txn_ops;
	if (!strcmp(key, "max-txn-bytes"))
		return c->max_txn_bytes;
	if (!strcmp(key, "max-txns"))
		return c->max_txns;
	if (!strcmp(key, "max-watches"))
		return c->max_watches;
	if (!strcmp(key, "max-tables"))
		return c->max_tables;
	if (!strcmp(key, "max-snapshot-bytes"))
		return c->max_snapshot_bytes;
	if (!strcmp(key, "max-clients-per-uid"))
		return c->max_clients_per_uid;
	if (!strcmp(key, "max-tables-per-uid"))
		return c->max_tables_per_uid;
	if (!strcmp(key, "max-reserve-per-uid"))
		return c->max_reserve_per_uid;
	if (!strcmp(key, "max-reserve"))
		return c->max_reserve;
	if (!strcmp(key, "max-txn-memory-per-uid"))
		return c->max_txn_memory_per_uid;
	if (!strcmp(key, "max-txn-memory"))
		return c->max_txn_memory;
	if (!strcmp(key, "max-snapshot-memory-per-uid"))
		return c->max_snapshot_memory_per_uid;
	if (!strcmp(key, "max-snapshot-memory"))
		return c->max_snapshot_memory;
	if (!strcmp(key, "max-memory"))
		return c->max_memory;
	if (!strcmp(key, "table-mode"))
		return c->table_mode;
	if (!strcmp(key, "idle-spin"))
		return c->idle_spin_us;
	if (!strcmp(key, "log-level"))
		return (uint64_t)c->log_level;
	if (!strcmp(key, "max-watches-per-uid"))
		return c->max_watches_per_uid;
	if (!strcmp(key, "max-watches-total"))
		return c->max_watches_total;
	if (!strcmp(key, "max-data-per-uid"))
		return c->max_data_per_uid;
	if (!strcmp(key, "max-ring-memory-per-uid"))
		return c->max_ring_memory_per_uid;
	if (!strcmp(key, "max-ring-memory"))
		return c->max_ring_memory;
	if (!strcmp(key, "reader-lease"))
		return c->reader_lease_ms;
	fail_msg("no key %s", key);
	return 0;
}

static const char *const all_keys[] = {
	"socket", "socket-mode", "socket-group", "data-dir", "workers",
	"ring-size", "feed-size", "hugepages", "client-deadline",
	"max-clients", "max-txn-ops", "max-txn-bytes", "max-txns",
	"max-clients-per-uid", "max-tables-per-uid", "max-reserve-per-uid",
	"max-reserve", "max-txn-memory-per-uid", "max-txn-memory",
	"max-snapshot-memory-per-uid", "max-watches", "max-tables",
	"max-snapshot-bytes",
	"max-snapshot-memory", "max-memory", "table-mode", "idle-spin",
	"log-level",
};
#define NKEYS (sizeof(all_keys) / sizeof(all_keys[0]))

/* Keys whose change needs a restart (config.h, tdbd_config_diff). */
static bool needs_restart(const char *key)
{
	static const char *const r[] = { "socket", "data-dir", "workers",
		"ring-size", "feed-size", "hugepages", "max-snapshot-bytes" };
	size_t i;

	for (i = 0; i < sizeof(r) / sizeof(r[0]); i++)
		if (!strcmp(r[i], key))
			return true;
	return false;
}

static bool terminated(const char *s, size_t size)
{
	return memchr(s, '\0', size) != NULL;
}

/* Everything config.h promises about a struct that was accepted. */
static void assert_valid(const struct tdbd_config *c)
{
	assert_true(terminated(c->socket, sizeof(c->socket)));
	assert_true(terminated(c->socket_group, sizeof(c->socket_group)));
	assert_true(terminated(c->data_dir, sizeof(c->data_dir)));
	assert_int_equal(c->socket[0], '/');
	assert_true(!c->data_dir[0] || c->data_dir[0] == '/');
	assert_true(c->socket_mode <= 0777);
	assert_true(c->table_mode <= 0777);
	assert_in_range(c->workers, 1, 64);
	assert_in_range(c->ring_size, 4 * MiB, 256 * MiB);
	assert_int_equal(c->ring_size & (c->ring_size - 1), 0);
	assert_in_range(c->feed_size, 4 * MiB, GiB);
	assert_int_equal(c->feed_size & (c->feed_size - 1), 0);
	assert_in_range(c->client_deadline_ms, 1, 3600000);
	assert_in_range(c->max_clients, 1, 65536);
	assert_in_range(c->max_txn_ops, 1, 1048576);
	assert_in_range(c->max_txn_bytes, 1024, 4 * GiB);
	assert_in_range(c->max_txns, 1, 1024);
	/* per-uid limits: 0 is "no limit" (src/owner/limtable.h) */
	assert_in_range(c->max_clients_per_uid, 0, 65536);
	assert_in_range(c->max_tables_per_uid, 0, 4000);
	assert_true(!c->max_reserve_per_uid ||
		    c->max_reserve_per_uid >= 4 * MiB);
	assert_true(c->max_reserve_per_uid <= 128 * TiB);
	assert_in_range(c->max_reserve, 4 * MiB, 128 * TiB);
	assert_true(!c->max_txn_memory_per_uid ||
		    c->max_txn_memory_per_uid >= MiB);
	assert_true(c->max_txn_memory_per_uid <= TiB);
	assert_in_range(c->max_txn_memory, MiB, TiB);
	assert_true(!c->max_snapshot_memory_per_uid ||
		    c->max_snapshot_memory_per_uid >= MiB);
	assert_true(c->max_snapshot_memory_per_uid <= TiB);
	assert_in_range(c->idle_spin_us, 0, 100000);
	assert_in_range(c->log_level, LOG_ERR, LOG_DEBUG);
}

/* --- defaults and single keys -------------------------------------------- */

static void test_defaults(void **state)
{
	struct tdbd_config c;

	(void)state;
	memset(&c, 0xa5, sizeof(c));
	tdbd_config_defaults(&c);
	assert_string_equal(c.socket, "/run/tdb/tdbd.sock");
	assert_int_equal(c.socket_mode, 0660);
	assert_string_equal(c.socket_group, "");
	assert_string_equal(c.data_dir, "");
	assert_int_equal(c.workers, 1);
	assert_int_equal(c.ring_size, 4 * MiB);
	assert_int_equal(c.feed_size, 4 * MiB);
	assert_true(c.hugepages);
	assert_int_equal(c.client_deadline_ms, 10000);
	assert_int_equal(c.max_clients, 1024);
	assert_int_equal(c.max_txn_ops, 65536);
	assert_int_equal(c.max_txn_bytes, 64 * MiB);
	assert_int_equal(c.max_txns, 16);
	assert_int_equal(c.max_clients_per_uid, 64);
	assert_int_equal(c.max_tables_per_uid, 256);
	assert_int_equal(c.max_reserve_per_uid, 256 * GiB);
	assert_int_equal(c.max_reserve, 16 * TiB);
	assert_int_equal(c.max_txn_memory_per_uid, 256 * MiB);
	assert_int_equal(c.max_txn_memory, GiB);
	assert_int_equal(c.max_snapshot_memory_per_uid, 512 * MiB);
	assert_int_equal(c.max_snapshot_memory, GiB);
	assert_int_equal(c.max_memory, 0);     /* 3/4 of physical memory */
	assert_int_equal(c.table_mode, 0600);
	assert_int_equal(c.idle_spin_us, 50);
	assert_int_equal(c.log_level, LOG_INFO);
	assert_valid(&c);
}

struct good {
	const char *key, *value;
	uint64_t want;          /* field(); for strings their length */
};

static const struct good goods[] = {
	{ "socket", "/a", 2 },
	{ "socket", "/run/tdb/other.sock", 19 },
	{ "socket-mode", "0660", 0660 }, { "socket-mode", "660", 0660 },
	{ "socket-mode", "0", 0 }, { "socket-mode", "0777", 0777 },
	{ "socket-mode", "777", 0777 }, { "socket-mode", "0000000777", 0777 },
	{ "socket-mode", "7", 07 },
	{ "socket-group", "tdb", 3 }, { "socket-group", "tdb-users", 9 },
	{ "socket-group", "_svc.x", 6 }, { "socket-group", "MACHINE$", 8 },
	{ "socket-group", "0", 1 }, { "socket-group", "4294967294", 10 },
	{ "socket-group", "", 0 },
	{ "data-dir", "/var/lib/tdb", 12 }, { "data-dir", "/", 1 },
	{ "data-dir", "", 0 },
	{ "workers", "1", 1 }, { "workers", "64", 64 },
	{ "workers", "007", 7 },
	{ "ring-size", "4M", 4 * MiB }, { "ring-size", "4m", 4 * MiB },
	{ "ring-size", "4194304", 4 * MiB }, { "ring-size", "4096K", 4 * MiB },
	{ "ring-size", "4096k", 4 * MiB }, { "ring-size", "256M", 256 * MiB },
	{ "ring-size", "8M", 8 * MiB },
	{ "feed-size", "4M", 4 * MiB }, { "feed-size", "1G", GiB },
	{ "feed-size", "1g", GiB }, { "feed-size", "1024M", GiB },
	{ "feed-size", "16777216", 16 * MiB },
	{ "hugepages", "yes", 1 }, { "hugepages", "no", 0 },
	{ "hugepages", "true", 1 }, { "hugepages", "false", 0 },
	{ "hugepages", "on", 1 }, { "hugepages", "off", 0 },
	{ "hugepages", "1", 1 }, { "hugepages", "0", 0 },
	{ "hugepages", "YES", 1 }, { "hugepages", "Off", 0 },
	{ "client-deadline", "1", 1 }, { "client-deadline", "1ms", 1 },
	{ "client-deadline", "10s", 10000 }, { "client-deadline", "250", 250 },
	{ "client-deadline", "60m", 3600000 },
	{ "client-deadline", "3600s", 3600000 },
	{ "client-deadline", "3600000", 3600000 },
	{ "client-deadline", "3600000ms", 3600000 },
	{ "max-clients", "1", 1 }, { "max-clients", "65536", 65536 },
	{ "max-txn-ops", "1", 1 }, { "max-txn-ops", "1048576", 1048576 },
	{ "max-txn-bytes", "1K", 1024 }, { "max-txn-bytes", "1024", 1024 },
	{ "max-txn-bytes", "3000", 3000 }, { "max-txn-bytes", "4G", 4 * GiB },
	{ "max-txn-bytes", "4096M", 4 * GiB },
	{ "max-txn-bytes", "4294967296", 4 * GiB },
	{ "max-txn-bytes", "64M", 64 * MiB },
	{ "max-txns", "1", 1 }, { "max-txns", "1024", 1024 },
	{ "max-clients-per-uid", "1", 1 },
	{ "max-clients-per-uid", "65536", 65536 },
	{ "max-tables-per-uid", "1", 1 },
	{ "max-tables-per-uid", "4000", 4000 },
	{ "max-reserve-per-uid", "4M", 4 * MiB },
	{ "max-reserve-per-uid", "128T", 128 * TiB },
	{ "max-reserve", "16t", 16 * TiB }, { "max-reserve", "2048G", 2 * TiB },
	{ "max-txn-memory-per-uid", "1M", MiB },
	{ "max-txn-memory-per-uid", "1T", TiB },
	{ "max-txn-memory", "1G", GiB }, { "max-txn-memory", "1024M", GiB },
	{ "max-snapshot-memory-per-uid", "512M", 512 * MiB },
	{ "max-snapshot-memory", "1M", MiB },
	{ "max-snapshot-memory", "1024G", 1024 * GiB },
	{ "max-memory", "0", 0 }, { "max-memory", "64M", 64 * MiB },
	{ "max-memory", "16384G", 16384 * GiB },
	{ "table-mode", "0600", 0600 }, { "table-mode", "644", 0644 },
	{ "table-mode", "0", 0 }, { "table-mode", "0777", 0777 },
	{ "idle-spin", "0", 0 }, { "idle-spin", "0us", 0 },
	{ "idle-spin", "50", 50 }, { "idle-spin", "50us", 50 },
	{ "idle-spin", "1ms", 1000 }, { "idle-spin", "100ms", 100000 },
	{ "idle-spin", "100000", 100000 },
	{ "idle-spin", "100000us", 100000 },
	{ "log-level", "error", LOG_ERR }, { "log-level", "warning", LOG_WARNING },
	{ "log-level", "notice", LOG_NOTICE }, { "log-level", "info", LOG_INFO },
	{ "log-level", "debug", LOG_DEBUG }, { "log-level", "DEBUG", LOG_DEBUG },
};

static void test_set_good(void **state)
{
	struct tdbd_config c;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(goods) / sizeof(goods[0]); i++) {
		tdbd_config_defaults(&c);
		err[0] = '\0';
		if (tdbd_config_set(&c, goods[i].key, goods[i].value, err,
				    sizeof(err)))
			fail_msg("%s = '%s': %s", goods[i].key, goods[i].value,
				 err);
		if (field(&c, goods[i].key) != goods[i].want)
			fail_msg("%s = '%s' gave %llu, want %llu",
				 goods[i].key, goods[i].value,
				 (unsigned long long)field(&c, goods[i].key),
				 (unsigned long long)goods[i].want);
		assert_valid(&c);
	}
}

static void test_set_strings(void **state)
{
	struct tdbd_config c;
	char p[PATH_MAX + 8];

	(void)state;
	tdbd_config_defaults(&c);
	assert_int_equal(tdbd_config_set(&c, "socket", "/x/y z.sock", err,
					 sizeof(err)), 0);
	assert_string_equal(c.socket, "/x/y z.sock");
	assert_int_equal(tdbd_config_set(&c, "socket-group", "wheel", err,
					 sizeof(err)), 0);
	assert_string_equal(c.socket_group, "wheel");
	assert_int_equal(tdbd_config_set(&c, "socket-group", "", err,
					 sizeof(err)), 0);
	assert_string_equal(c.socket_group, "");
	assert_int_equal(tdbd_config_set(&c, "data-dir", "/srv/tdb", err,
					 sizeof(err)), 0);
	assert_string_equal(c.data_dir, "/srv/tdb");

	/* the longest that fit: 107-byte socket, 4095-byte data-dir,
	 * 63-byte group */
	memset(p, 'a', sizeof(p));
	p[0] = '/';
	p[107] = '\0';
	assert_int_equal(tdbd_config_set(&c, "socket", p, err, sizeof(err)),
			 0);
	assert_string_equal(c.socket, p);
	p[107] = 'a';
	p[PATH_MAX - 1] = '\0';
	assert_int_equal(tdbd_config_set(&c, "data-dir", p, err, sizeof(err)),
			 0);
	assert_string_equal(c.data_dir, p);
	memset(p, 'g', 63);
	p[63] = '\0';
	assert_int_equal(tdbd_config_set(&c, "socket-group", p, err,
					 sizeof(err)), 0);
	assert_string_equal(c.socket_group, p);
	assert_valid(&c);
}

struct bad {
	const char *key, *value, *msg;
};

static const struct bad bads[] = {
	{ "socket", "", "socket: not an absolute path (\"\")" },
	{ "socket", "run/tdbd.sock",
	  "socket: not an absolute path (run/tdbd.sock)" },
	{ "socket-mode", "0800", "socket-mode: not an octal mode (0800)" },
	{ "socket-mode", "rw", "socket-mode: not an octal mode (rw)" },
	{ "socket-mode", "", "socket-mode: not an octal mode (\"\")" },
	{ "socket-mode", "-1", "socket-mode: not an octal mode (-1)" },
	{ "socket-mode", "1000", "socket-mode: out of range 0..0777 (1000)" },
	{ "socket-mode", "01777",
	  "socket-mode: out of range 0..0777 (01777)" },
	{ "socket-mode", "777777777777777777777777777777",
	  "socket-mode: out of range 0..0777 (777777777777777777777777777777)" },
	{ "socket-group", "a b",
	  "socket-group: not a group name or number (a b)" },
	{ "socket-group", "-x",
	  "socket-group: not a group name or number (-x)" },
	{ "socket-group", "x:y",
	  "socket-group: not a group name or number (x:y)" },
	{ "socket-group", "$x",
	  "socket-group: not a group name or number ($x)" },
	{ "socket-group", "4294967295",
	  "socket-group: out of range 0..4294967294 (4294967295)" },
	{ "socket-group", "99999999999999999999999",
	  "socket-group: out of range 0..4294967294 (99999999999999999999999)" },
	{ "data-dir", "tdb",
	  "data-dir: not an absolute path (or \"\" for a scratch directory) "
	  "(tdb)" },
	{ "workers", "0", "workers: out of range 1..64 (0)" },
	{ "workers", "65", "workers: out of range 1..64 (65)" },
	{ "workers", "-1", "workers: out of range 1..64 (-1)" },
	{ "workers", "18446744073709551616",
	  "workers: out of range 1..64 (18446744073709551616)" },
	{ "workers", "abc", "workers: not a number (abc)" },
	{ "workers", "4x", "workers: not a number (4x)" },
	{ "workers", "1.5", "workers: not a number (1.5)" },
	{ "workers", " 4", "workers: not a number ( 4)" },
	{ "workers", "0x10", "workers: not a number (0x10)" },
	{ "workers", "+4", "workers: not a number (+4)" },
	{ "workers", "", "workers: not a number (\"\")" },
	{ "ring-size", "5000000", "ring-size: not a power of two (5000000)" },
	{ "ring-size", "6M", "ring-size: not a power of two (6M)" },
	{ "ring-size", "2M", "ring-size: out of range 4M..256M (2M)" },
	{ "ring-size", "4194303", "ring-size: out of range 4M..256M (4194303)" },
	{ "ring-size", "512M", "ring-size: out of range 4M..256M (512M)" },
	{ "ring-size", "1G", "ring-size: out of range 4M..256M (1G)" },
	{ "ring-size", "0", "ring-size: out of range 4M..256M (0)" },
	{ "ring-size", "99999999999999999G",
	  "ring-size: out of range 4M..256M (99999999999999999G)" },
	{ "ring-size", "4MB",
	  "ring-size: not a size (bytes, or a number with K, M, G or T) "
	  "(4MB)" },
	{ "ring-size", "4 M",
	  "ring-size: not a size (bytes, or a number with K, M, G or T) "
	  "(4 M)" },
	{ "ring-size", "M",
	  "ring-size: not a size (bytes, or a number with K, M, G or T) "
	  "(M)" },
	{ "feed-size", "2G", "feed-size: out of range 4M..1G (2G)" },
	{ "feed-size", "3M", "feed-size: out of range 4M..1G (3M)" },
	{ "feed-size", "12M", "feed-size: not a power of two (12M)" },
	{ "hugepages", "maybe",
	  "hugepages: not a boolean (yes/no, true/false, on/off, 1/0) (maybe)" },
	{ "hugepages", "2",
	  "hugepages: not a boolean (yes/no, true/false, on/off, 1/0) (2)" },
	{ "hugepages", "",
	  "hugepages: not a boolean (yes/no, true/false, on/off, 1/0) (\"\")" },
	{ "client-deadline", "0", "client-deadline: out of range 1ms..60m (0)" },
	{ "client-deadline", "0s",
	  "client-deadline: out of range 1ms..60m (0s)" },
	{ "client-deadline", "61m",
	  "client-deadline: out of range 1ms..60m (61m)" },
	{ "client-deadline", "3600001",
	  "client-deadline: out of range 1ms..60m (3600001)" },
	{ "client-deadline", "1h", "client-deadline: not a duration (a number "
	  "with ms, s or m; bare = ms) (1h)" },
	{ "client-deadline", "1.5s", "client-deadline: not a duration (a "
	  "number with ms, s or m; bare = ms) (1.5s)" },
	{ "client-deadline", "10S", "client-deadline: not a duration (a "
	  "number with ms, s or m; bare = ms) (10S)" },
	{ "client-deadline", "10us", "client-deadline: not a duration (a "
	  "number with ms, s or m; bare = ms) (10us)" },
	{ "max-clients", "0", "max-clients: out of range 1..65536 (0)" },
	{ "max-clients", "65537", "max-clients: out of range 1..65536 (65537)" },
	{ "max-txn-ops", "0", "max-txn-ops: out of range 1..1048576 (0)" },
	{ "max-txn-ops", "1048577",
	  "max-txn-ops: out of range 1..1048576 (1048577)" },
	{ "max-txn-bytes", "1023",
	  "max-txn-bytes: out of range 1K..4G (1023)" },
	{ "max-txn-bytes", "4294967297",
	  "max-txn-bytes: out of range 1K..4G (4294967297)" },
	{ "max-txn-bytes", "5G", "max-txn-bytes: out of range 1K..4G (5G)" },
	{ "max-txns", "0", "max-txns: out of range 1..1024 (0)" },
	{ "max-txns", "1025", "max-txns: out of range 1..1024 (1025)" },
	{ "max-clients-per-uid", "65537",
	  "max-clients-per-uid: out of range 1..65536, or 0 (65537)" },
	{ "max-tables-per-uid", "4001",
	  "max-tables-per-uid: out of range 1..4000, or 0 (4001)" },
	{ "max-reserve", "129T", "max-reserve: out of range 4M..128T (129T)" },
	{ "max-reserve-per-uid", "1M",
	  "max-reserve-per-uid: out of range 4M..128T, or 0 (1M)" },
	{ "max-txn-memory", "2T", "max-txn-memory: out of range 1M..1T (2T)" },
	{ "max-txn-memory-per-uid", "1K",
	  "max-txn-memory-per-uid: out of range 1M..1T, or 0 (1K)" },
	{ "max-snapshot-memory", "1023K",
	  "max-snapshot-memory: out of range 1M..1T (1023K)" },
	{ "max-snapshot-memory", "1025G",
	  "max-snapshot-memory: out of range 1M..1T (1025G)" },
	{ "max-memory", "16385G",
	  "max-memory: out of range 0..16T (16385G)" },
	{ "table-mode", "0778", "table-mode: not an octal mode (0778)" },
	{ "table-mode", "1000", "table-mode: out of range 0..0777 (1000)" },
	{ "idle-spin", "100001",
	  "idle-spin: out of range 0..100ms (100001)" },
	{ "idle-spin", "101ms", "idle-spin: out of range 0..100ms (101ms)" },
	{ "idle-spin", "-0", "idle-spin: out of range 0..100ms (-0)" },
	{ "idle-spin", "1s", "idle-spin: not a duration (a number with us or "
	  "ms; bare = us) (1s)" },
	{ "log-level", "warn", "log-level: not a log level (error, warning, "
	  "notice, info, debug) (warn)" },
	{ "log-level", "7", "log-level: not a log level (error, warning, "
	  "notice, info, debug) (7)" },
};

static void test_set_bad(void **state)
{
	struct tdbd_config c, before;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bads) / sizeof(bads[0]); i++) {
		tdbd_config_defaults(&c);
		before = c;
		err[0] = '\0';
		if (tdbd_config_set(&c, bads[i].key, bads[i].value, err,
				    sizeof(err)) != -EINVAL)
			fail_msg("%s = '%s' accepted", bads[i].key,
				 bads[i].value);
		if (strcmp(err, bads[i].msg))
			fail_msg("%s = '%s':\n got '%s'\nwant '%s'",
				 bads[i].key, bads[i].value, err, bads[i].msg);
		assert_memory_equal(&c, &before, sizeof(c));
	}
}

/* Values too long for their field, and odd bytes, quoted back escaped
 * and cut short. */
static void test_set_bad_long(void **state)
{
	struct tdbd_config c, before;
	char p[PATH_MAX + 8], want[512];

	(void)state;
	tdbd_config_defaults(&c);
	before = c;
	memset(p, 'a', sizeof(p));
	p[0] = '/';
	p[108] = '\0';
	assert_int_equal(tdbd_config_set(&c, "socket", p, err, sizeof(err)),
			 -EINVAL);
	snprintf(want, sizeof(want), "socket: too long for a socket (at most "
		 "107 bytes) (/%.47s...)", p + 1);
	assert_string_equal(err, want);

	p[108] = 'a';
	p[PATH_MAX] = '\0';
	assert_int_equal(tdbd_config_set(&c, "data-dir", p, err, sizeof(err)),
			 -EINVAL);
	snprintf(want, sizeof(want), "data-dir: too long (at most 4095 bytes) "
		 "(/%.47s...)", p + 1);
	assert_string_equal(err, want);

	memset(p, 'g', 64);
	p[64] = '\0';
	assert_int_equal(tdbd_config_set(&c, "socket-group", p, err,
					 sizeof(err)), -EINVAL);
	snprintf(want, sizeof(want), "socket-group: too long (at most 63 "
		 "bytes) (%.48s...)", p);
	assert_string_equal(err, want);

	assert_int_equal(tdbd_config_set(&c, "workers", "1\x01\xff\t", err,
					 sizeof(err)), -EINVAL);
	assert_string_equal(err, "workers: not a number (1\\x01\\xff\\x09)");
	assert_memory_equal(&c, &before, sizeof(c));
}

static void test_set_unknown(void **state)
{
	struct tdbd_config c, before;

	(void)state;
	tdbd_config_defaults(&c);
	before = c;
	assert_int_equal(tdbd_config_set(&c, "rign-size", "4M", err,
					 sizeof(err)), -ENOENT);
	assert_string_equal(err, "unknown key 'rign-size'");
	assert_int_equal(tdbd_config_set(&c, "ring_size", "4M", err,
					 sizeof(err)), -ENOENT);
	assert_int_equal(tdbd_config_set(&c, "Workers", "4", err,
					 sizeof(err)), -ENOENT);
	assert_int_equal(tdbd_config_set(&c, "", "4", err, sizeof(err)),
			 -ENOENT);
	assert_string_equal(err, "unknown key '\"\"'");
	assert_int_equal(tdbd_config_set(&c, NULL, "4", err, sizeof(err)),
			 -ENOENT);
	assert_int_equal(tdbd_config_set(&c, "workers", NULL, err,
					 sizeof(err)), -EINVAL);
	assert_string_equal(err, "workers: missing value");
	/* no buffer, or a tiny one: still refused, nothing overrun */
	assert_int_equal(tdbd_config_set(&c, "workers", "0", NULL, 0),
			 -EINVAL);
	memset(err, 'z', 16);
	assert_int_equal(tdbd_config_set(&c, "workers", "0", err, 8),
			 -EINVAL);
	assert_string_equal(err, "workers");
	assert_int_equal(err[8], 'z');
	assert_memory_equal(&c, &before, sizeof(c));
	/* every key of config.h is known */
	for (size_t i = 0; i < NKEYS; i++)
		assert_int_not_equal(tdbd_config_set(&c, all_keys[i], "\x01",
						     err, sizeof(err)),
				     -ENOENT);
}

/* --- the file ------------------------------------------------------------ */

static void test_file_all_keys(void **state)
{
	struct tdbd_config c;

	(void)state;
	assert_int_equal(load_text(&c,
		"socket = /run/t/t.sock\n"
		"socket-mode = 0666\n"
		"socket-group = tdb\n"
		"data-dir = /var/lib/tdb\n"
		"workers = 8\n"
		"ring-size = 16M\n"
		"feed-size = 64M\n"
		"hugepages = no\n"
		"client-deadline = 2s\n"
		"max-clients = 100\n"
		"max-txn-ops = 1000\n"
		"max-txn-bytes = 1M\n"
		"max-txns = 4\n"
		"table-mode = 0640\n"
		"idle-spin = 1ms\n"
		"log-level = debug\n"
		"max-snapshot-memory = 64M\n"
		"max-memory = 2G\n"), 0);
	assert_string_equal(c.socket, "/run/t/t.sock");
	assert_int_equal(c.socket_mode, 0666);
	assert_string_equal(c.socket_group, "tdb");
	assert_string_equal(c.data_dir, "/var/lib/tdb");
	assert_int_equal(c.workers, 8);
	assert_int_equal(c.ring_size, 16 * MiB);
	assert_int_equal(c.feed_size, 64 * MiB);
	assert_false(c.hugepages);
	assert_int_equal(c.client_deadline_ms, 2000);
	assert_int_equal(c.max_clients, 100);
	assert_int_equal(c.max_txn_ops, 1000);
	assert_int_equal(c.max_txn_bytes, MiB);
	assert_int_equal(c.max_txns, 4);
	assert_int_equal(c.table_mode, 0640);
	assert_int_equal(c.idle_spin_us, 1000);
	assert_int_equal(c.log_level, LOG_DEBUG);
	assert_int_equal(c.max_snapshot_memory, 64 * MiB);
	assert_int_equal(c.max_memory, 2 * GiB);
}

static void test_file_syntax(void **state)
{
	struct tdbd_config c, d;

	(void)state;
	/* comments, blank lines, blanks around key and value */
	assert_int_equal(load_text(&c,
		"# tdbd.conf\n"
		"\n"
		"   \t\n"
		"   # indented comment = not a key\n"
		"workers=4\n"
		"  \tring-size\t =\t 8M \t\n"
		"max-txns = 5 # trailing comment\n"
		"max-clients = 6#x\n"), -EINVAL);
	assert_string_equal(err + strlen(path), ":8: max-clients: not a "
			    "number (6#x)");
	assert_int_equal(load_text(&c,
		"# tdbd.conf\n"
		"\n"
		"   \t\n"
		"   # indented comment = not a key\n"
		"workers=4\n"
		"  \tring-size\t =\t 8M \t\n"
		"max-txns = 5 # trailing comment\n"
		"max-clients = 6\t#\n"
		"data-dir = /a#b\n"), 0);
	assert_int_equal(c.workers, 4);
	assert_int_equal(c.ring_size, 8 * MiB);
	assert_int_equal(c.max_txns, 5);
	assert_int_equal(c.max_clients, 6);
	assert_string_equal(c.data_dir, "/a#b");

	/* quotes: blanks, '#', escapes, empty, a comment after */
	assert_int_equal(load_text(&c,
		"socket = \"/run/my dir/#1.sock\"   # quoted\n"
		"data-dir = \"/a\\\"b\\\\c\"\n"
		"socket-group = \"\"\n"
		"workers = \"12\"\n"
		"log-level=\"notice\"\n"), 0);
	assert_string_equal(c.socket, "/run/my dir/#1.sock");
	assert_string_equal(c.data_dir, "/a\"b\\c");
	assert_string_equal(c.socket_group, "");
	assert_int_equal(c.workers, 12);
	assert_int_equal(c.log_level, LOG_NOTICE);

	/* CRLF, a byte order mark, no final newline */
	assert_int_equal(load_text(&c, "\xef\xbb\xbfworkers = 3\r\n"
				   "# c\r\n\r\nmax-txns = 2"), 0);
	assert_int_equal(c.workers, 3);
	assert_int_equal(c.max_txns, 2);

	/* an empty file, a file of comments: the defaults */
	tdbd_config_defaults(&d);
	assert_int_equal(load_text(&c, ""), 0);
	assert_memory_equal(&c, &d, sizeof(c));
	assert_int_equal(load_text(&c, "\n\n# nothing\n   \n"), 0);
	assert_memory_equal(&c, &d, sizeof(c));

	/* a file only changes what it names, over what was there */
	tdbd_config_defaults(&c);
	c.workers = 9;
	c.max_txns = 7;
	assert_int_equal(tdbd_config_load(&c, write_file("max-txns = 3\n"),
					  err, sizeof(err)), 0);
	assert_int_equal(c.workers, 9);
	assert_int_equal(c.max_txns, 3);
}

/* Every error message, word for word, with its line number. */
static void test_file_errors(void **state)
{
	(void)state;
	expect_file_error("# 1\n# 2\n# 3\n# 4\n# 5\n# 6\n# 7\n# 8\n# 9\n"
			  "# 10\n# 11\nrign-size = 4M\n",
			  "12: unknown key 'rign-size'");
	expect_file_error("\n\nring-size = 5000000\n",
			  "3: ring-size: not a power of two (5000000)");
	expect_file_error("\n\n\n\n\n\nworkers 4\n", "7: missing '='");
	expect_file_error("\n\n\nworkers = 2\n\n\n\n\nworkers = 3\n",
			  "9: duplicate key 'workers' (first on line 4)");
	expect_file_error("workers = 2\nworkers = 2\n",
			  "2: duplicate key 'workers' (first on line 1)");
	expect_file_error(" = 4\n", "1: missing key before '='");
	expect_file_error("workers =\n", "1: workers: missing value");
	expect_file_error("workers =   \t\n", "1: workers: missing value");
	expect_file_error("workers = # four\n", "1: workers: missing value");
	expect_file_error("socket-group =\n",
			  "1: socket-group: missing value");
	expect_file_error("socket = \"/a\n",
			  "1: socket: unterminated quote");
	expect_file_error("socket = \"/a\\\"\n",
			  "1: socket: unterminated quote");
	expect_file_error("socket = \"/a\\n\"\n",
			  "1: socket: bad escape in quoted value (only \\\" "
			  "and \\\\)");
	expect_file_error("socket = \"/a\" x\n",
			  "1: socket: text after the closing quote");
	expect_file_error("socket = \"/a\"\"/b\"\n",
			  "1: socket: text after the closing quote");
	expect_file_error("socket = /my dir/s\n",
			  "1: socket: blank in an unquoted value (quote it)");
	expect_file_error("workers = 4 8\n",
			  "1: workers: blank in an unquoted value (quote it)");
	expect_file_error("socket = /a\"b\n",
			  "1: socket: '\"' in an unquoted value (quote the "
			  "whole value, escape it as \\\")");
	expect_file_error("ring size = 4M\n", "1: unknown key 'ring size'");
	expect_file_error("RING-SIZE = 4M\n", "1: unknown key 'RING-SIZE'");
	expect_file_error("\"workers\" = 4\n",
			  "1: unknown key '\"workers\"'");
	expect_file_error("wor\x01kers\xfe = 4\n",
			  "1: unknown key 'wor\\x01kers\\xfe'");
	expect_file_error("workers = 0\n",
			  "1: workers: out of range 1..64 (0)");
	expect_file_error("workers = \"\"\n",
			  "1: workers: not a number (\"\")");
	expect_file_error("hugepages = \"yes please\"\n",
			  "1: hugepages: not a boolean (yes/no, true/false, "
			  "on/off, 1/0) (yes please)");
	/* the error is on the last line, which has no '\n' */
	expect_file_error("workers = 2\nmax-txns = 0",
			  "2: max-txns: out of range 1..1024 (0)");
	expect_file_error("workers = 2\r\nmax-txns = x\r\n",
			  "2: max-txns: not a number (x)");
	/* the first error wins */
	expect_file_error("workers = 0\nfoo = 1\n",
			  "1: workers: out of range 1..64 (0)");
}

/* A bad line leaves the struct untouched, even keys set before it. */
static void test_file_atomic(void **state)
{
	struct tdbd_config c, before;

	(void)state;
	tdbd_config_defaults(&c);
	c.max_txns = 99;
	before = c;
	assert_int_equal(tdbd_config_load(&c, write_file(
		"workers = 4\nsocket = /x\nmax-txns = 5\nlog-level = loud\n"),
		err, sizeof(err)), -EINVAL);
	assert_memory_equal(&c, &before, sizeof(c));
}

static void test_file_long_lines(void **state)
{
	struct tdbd_config c;
	char *buf = malloc(3 * 4096 + 64);

	(void)state;
	assert_non_null(buf);
	/* a 4096-byte line is fine (a comment, then a key) */
	memset(buf, 'x', 4096);
	buf[0] = '#';
	strcpy(buf + 4096, "\nworkers = 5\n");
	assert_int_equal(load_text(&c, buf), 0);
	assert_int_equal(c.workers, 5);
	/* and a 4096-byte key line, blanks before its value */
	memset(buf, ' ', 4096);
	memcpy(buf, "workers =", 9);
	strcpy(buf + 4095, "6\n");
	assert_int_equal(load_text(&c, buf), 0);
	assert_int_equal(c.workers, 6);
	/* ... also with CRLF, at the end of the file with or without
	 * its '\n' */
	strcpy(buf + 4095, "6\r\nmax-txns = 2\r\n");
	assert_int_equal(load_text(&c, buf), 0);
	assert_int_equal(c.workers, 6);
	assert_int_equal(c.max_txns, 2);
	strcpy(buf + 4095, "7\r");
	assert_int_equal(load_text(&c, buf), 0);
	assert_int_equal(c.workers, 7);
	strcpy(buf + 4095, "7\rx\n");
	expect_file_error(buf, "1: line longer than 4096 bytes");
	/* 4097 bytes on line 2 */
	strcpy(buf, "# one\n");
	memset(buf + 6, 'x', 4097);
	buf[6] = '#';
	strcpy(buf + 6 + 4097, "\n");
	expect_file_error(buf, "2: line longer than 4096 bytes");
	/* the same with no '\n' at all */
	buf[6 + 4097] = '\0';
	expect_file_error(buf, "2: line longer than 4096 bytes");
	/* a data-dir of 4096 bytes cannot fit in the line anyway; one
	 * of 4000 can */
	strcpy(buf, "data-dir = /");
	memset(buf + 12, 'd', 3999);
	buf[12 + 3999] = '\0';
	assert_int_equal(load_text(&c, buf), 0);
	assert_int_equal(strlen(c.data_dir), 4000);
	free(buf);
}

static void test_file_nul(void **state)
{
	struct tdbd_config c, before;
	char want[PATH_MAX + 64];
	static const char data[] = "workers = 2\n# ok\nmax-txns = 3\0\n";

	(void)state;
	tdbd_config_defaults(&c);
	before = c;
	assert_int_equal(tdbd_config_load(&c, write_file_len(data,
							     sizeof(data) - 1),
					  err, sizeof(err)), -EINVAL);
	snprintf(want, sizeof(want), "%s:3: contains a NUL byte (not a text "
		 "file?)", path);
	assert_string_equal(err, want);
	assert_memory_equal(&c, &before, sizeof(c));
	/* a NUL inside a comment is just as bad */
	assert_int_equal(tdbd_config_load(&c, write_file_len("#\0\n", 3),
					  err, sizeof(err)), -EINVAL);
	snprintf(want, sizeof(want), "%s:1: contains a NUL byte (not a text "
		 "file?)", path);
	assert_string_equal(err, want);
}

static void test_file_not_readable(void **state)
{
	struct tdbd_config c, before;
	char p[PATH_MAX], want[PATH_MAX + 64];
	int status;
	pid_t pid;

	(void)state;
	tdbd_config_defaults(&c);
	before = c;
	/* missing */
	snprintf(p, sizeof(p), "%s/no-such.conf", dir);
	assert_int_equal(tdbd_config_load(&c, p, err, sizeof(err)), -ENOENT);
	snprintf(want, sizeof(want), "%s: No such file or directory", p);
	assert_string_equal(err, want);
	/* a directory */
	assert_int_equal(tdbd_config_load(&c, dir, err, sizeof(err)),
			 -EISDIR);
	snprintf(want, sizeof(want), "%s: is a directory, not a file", dir);
	assert_string_equal(err, want);
	/* a path through a file */
	snprintf(p, sizeof(p), "%s/x", write_file("workers = 2\n"));
	assert_int_equal(tdbd_config_load(&c, p, err, sizeof(err)),
			 -ENOTDIR);
	assert_memory_equal(&c, &before, sizeof(c));
	/* /dev/null reads as an empty file */
	assert_int_equal(tdbd_config_load(&c, "/dev/null", err, sizeof(err)),
			 0);
	assert_memory_equal(&c, &before, sizeof(c));

	/* no permission: as root (which reads anything) in a child that
	 * drops to nobody */
	write_file("workers = 2\n");
	assert_int_equal(chmod(path, 0), 0);
	assert_int_equal(chmod(dir, 0755), 0);
	snprintf(want, sizeof(want), "%s: Permission denied", path);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		if (geteuid() == 0 && (setgid(65534) || setuid(65534)))
			_exit(3);
		if (tdbd_config_load(&c, path, err, sizeof(err)) != -EACCES)
			_exit(1);
		_exit(strcmp(err, want) ? 2 : 0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(chmod(dir, 0700), 0);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* packaging/tdbd.conf: loads as the defaults; uncommented, it names
 * every key once, with its default. */
static void test_sample_file(void **state)
{
	const char *sample = getenv("TDB_CONFIG_SAMPLE");
	struct tdbd_config c, d;
	char line[4200], *out, *p;
	size_t cap = 1 << 16, used = 0, nkeys = 0;
	FILE *f;

	(void)state;
	if (!sample)
		skip();
	tdbd_config_defaults(&d);
	tdbd_config_defaults(&c);
	if (tdbd_config_load(&c, sample, err, sizeof(err)))
		fail_msg("%s", err);
	assert_memory_equal(&c, &d, sizeof(c));

	out = malloc(cap);
	assert_non_null(out);
	f = fopen(sample, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		/* "#key = value" or "# key = value" with a known key */
		p = line + (line[0] == '#');
		p += (*p == ' ' && line[0] == '#');
		if (p != line && strchr(p, '=') && !strchr(" \t#\n", p[0])) {
			size_t klen = strcspn(p, " =");
			size_t i;

			for (i = 0; i < NKEYS; i++)
				if (strlen(all_keys[i]) == klen &&
				    !strncmp(all_keys[i], p, klen))
					break;
			if (i < NKEYS) {
				nkeys++;
				assert_true(used + strlen(p) < cap);
				strcpy(out + used, p);
				used += strlen(p);
			}
		}
	}
	fclose(f);
	out[used] = '\0';
	assert_int_equal(nkeys, NKEYS);
	/* each once (a duplicate is an error), each with its default */
	if (load_text(&c, out))
		fail_msg("%s", err);
	assert_memory_equal(&c, &d, sizeof(c));
	free(out);
}

/* docs/CONFIG.md has a row for every key, with its default. */
static void test_doc(void **state)
{
	const char *doc = getenv("TDB_CONFIG_DOC");
	static const char *const defaults[NKEYS] = {
		"/run/tdb/tdbd.sock", "0660", "\"\"", "\"\"", "1", "4M", "4M",
		"yes", "10s", "1024", "65536", "64M", "16", "64", "256", "256G",
		"16T", "256M", "1G", "512M", "1024", "4000", "256M", "1G", "0",
		"0600", "50us", "info",
	};
	char *text, row[128], *p;
	size_t i, len;
	FILE *f;

	(void)state;
	if (!doc)
		skip();
	f = fopen(doc, "r");
	assert_non_null(f);
	text = malloc(1 << 20);
	assert_non_null(text);
	len = fread(text, 1, (1 << 20) - 1, f);
	text[len] = '\0';
	fclose(f);
	for (i = 0; i < NKEYS; i++) {
		snprintf(row, sizeof(row), "\n| `%s` |", all_keys[i]);
		p = strstr(text, row);
		if (!p)
			fail_msg("CONFIG.md has no row for %s", all_keys[i]);
		/* the row's default column: "| `DEFAULT` |" */
		snprintf(row, sizeof(row), "| `%s` |", defaults[i]);
		if (!strstr(p, row) || strstr(p, row) > strchr(p + 1, '\n'))
			fail_msg("CONFIG.md: %s's row lacks %s", all_keys[i],
				 row);
	}
	free(text);
}

/* --- the limits table (src/owner/limtable.h) ------------------------------ */

/* v as tdbd.conf takes it: a bare number (bytes, ms, a count) or octal
 * mode bits. */
static const char *lim_text(const struct tdbo_limit *l, uint64_t v,
			    char *buf, size_t len)
{
	snprintf(buf, len, l->unit == TDBO_LU_MODE ? "0%llo" : "%llu",
		 (unsigned long long)v);
	return buf;
}

static void lim_accepts(const struct tdbo_limit *l, uint64_t v, bool ok)
{
	struct tdbd_config c, before;
	char text[32];
	int rc;

	tdbd_config_defaults(&c);
	before = c;
	err[0] = '\0';
	rc = tdbd_config_set(&c, l->conf, lim_text(l, v, text, sizeof(text)),
			     err, sizeof(err));
	if (ok && rc)
		fail_msg("%s = %s refused: %s", l->conf, text, err);
	if (!ok && rc != -EINVAL)
		fail_msg("%s = %s accepted (range %llu..%llu)", l->conf, text,
			 (unsigned long long)l->min,
			 (unsigned long long)l->max);
	if (ok)
		assert_true(field(&c, l->conf) == v);
	else
		assert_memory_equal(&c, &before, sizeof(c));
}

/*
 * Every limit of the table: tdbd's default is the table's, its range is
 * the table's (the edges accepted, one past them refused, 0 only where
 * a flag gives it a meaning), each default is inside the range in both
 * homes, and a tdb.ko parameter in MiB can say both edges exactly.
 */
static void test_limits_table(void **state)
{
	struct tdbd_config c;
	bool zero;
	size_t i;

	(void)state;
	tdbd_config_defaults(&c);
	for (i = 0; i < TDBO_LIM_COUNT; i++) {
		const struct tdbo_limit *l = &tdbo_limits_table[i];

		assert_true(l->conf || l->param);
		assert_true(l->min <= l->max);
		if (!tdbo_limit_ok(l, l->def) || !tdbo_limit_ok(l, l->kdef))
			fail_msg("%s: a default out of its range",
				 l->conf ? l->conf : l->param);
		if (l->homes & TDBO_LH_KO) {
			uint64_t m = (1ULL << l->shift) - 1;

			assert_non_null(l->param);
			if ((l->min & m) || (l->max & m) || (l->kdef & m))
				fail_msg("%s: not whole MiB", l->param);
		}
		if (!(l->homes & TDBO_LH_TDBD))
			continue;
		assert_non_null(l->conf);
		if (field(&c, l->conf) != l->def)
			fail_msg("%s: tdbd's default %llu, the table's %llu",
				 l->conf,
				 (unsigned long long)field(&c, l->conf),
				 (unsigned long long)l->def);
		zero = l->flags & (TDBO_LF_ZERO_OFF | TDBO_LF_ZERO_AUTO);
		lim_accepts(l, l->min, true);
		lim_accepts(l, l->max, true);
		lim_accepts(l, l->max + 1, false);
		if (l->min > 1)
			lim_accepts(l, l->min - 1, false);
		if (l->min)
			lim_accepts(l, 0, zero);
		if (l->flags & TDBO_LF_POW2)
			lim_accepts(l, l->min + l->min / 2, false);
	}
}

/* Every tdbd.conf key of the table in docs/CONFIG.md ("| `key` |") and
 * man/tdbd.conf.5 (".It Cm key"), and every tdb.ko parameter in
 * docs/KERNEL.md ("| `param` | DEFAULT |", DEFAULT in its unit: MiB
 * where the shift is 20, octal mode bits). */
static char *slurp(const char *file)
{
	char *text = malloc(1 << 20);
	FILE *f = fopen(file, "r");
	size_t len;

	if (!f)
		fail_msg("cannot read %s", file);
	assert_non_null(text);
	len = fread(text, 1, (1 << 20) - 1, f);
	text[len] = '\0';
	fclose(f);
	return text;
}

/* l's default as the documents write it: sizes with the largest of T,
 * G, M, K that divides them, durations in s or ms, modes in octal. */
static const char *lim_doc_default(const struct tdbo_limit *l, char *buf,
				   size_t len)
{
	static const char sfx[] = "TGMK";
	uint64_t v = l->def;
	int i;

	if (l->unit == TDBO_LU_MODE) {
		snprintf(buf, len, "0%llo", (unsigned long long)v);
		return buf;
	}
	if (l->unit == TDBO_LU_MS) {
		if (v && !(v % 1000))
			snprintf(buf, len, "%llus",
				 (unsigned long long)(v / 1000));
		else
			snprintf(buf, len, "%llums", (unsigned long long)v);
		return buf;
	}
	for (i = 0; l->unit == TDBO_LU_BYTES && v && i < 4; i++) {
		uint64_t mul = 1ULL << (10 * (4 - i));

		if (!(v % mul)) {
			snprintf(buf, len, "%llu%c",
				 (unsigned long long)(v / mul), sfx[i]);
			return buf;
		}
	}
	snprintf(buf, len, "%llu", (unsigned long long)v);
	return buf;
}

static void test_limits_docs(void **state)
{
	const char *doc = getenv("TDB_CONFIG_DOC"),
		   *man = getenv("TDB_CONFIG_MAN"),
		   *kdoc = getenv("TDB_CONFIG_KDOC");
	char *cfg, *mtext, *ktext, row[128];
	const char *p;
	size_t i;

	(void)state;
	if (!doc || !man || !kdoc)
		skip();
	cfg = slurp(doc);
	mtext = slurp(man);
	ktext = slurp(kdoc);
	for (i = 0; i < TDBO_LIM_COUNT; i++) {
		const struct tdbo_limit *l = &tdbo_limits_table[i];

		if (l->homes & TDBO_LH_TDBD) {
			char def[32];
			const char *end;

			lim_doc_default(l, def, sizeof(def));
			snprintf(row, sizeof(row), "\n| `%s` |", l->conf);
			p = strstr(cfg, row);
			if (!p)
				fail_msg("CONFIG.md has no row for %s",
					 l->conf);
			end = strchr(p + 1, '\n');
			snprintf(row, sizeof(row), "| `%s` |", def);
			p = strstr(p, row);
			if (!p || (end && p > end))
				fail_msg("CONFIG.md: %s's row lacks %s",
					 l->conf, row);
			snprintf(row, sizeof(row), "\n.It Cm %s ", l->conf);
			p = strstr(mtext, row);
			if (!p)
				fail_msg("tdbd.conf.5 has no item for %s",
					 l->conf);
			end = strstr(p + 1, "\n.It ");
			snprintf(row, sizeof(row), "\nDefault %s", def);
			p = strstr(p, row);
			if (!p || (end && p > end) ||
			    (p[strlen(row)] != '.' && p[strlen(row)] != ' '))
				fail_msg("tdbd.conf.5: %s's item lacks "
					 "\"Default %s\"", l->conf, def);
		}
		if (l->homes & TDBO_LH_KO) {
			if (l->unit == TDBO_LU_MODE)
				snprintf(row, sizeof(row), "\n| `%s` | 0%llo",
					 l->param,
					 (unsigned long long)l->kdef);
			else
				snprintf(row, sizeof(row), "\n| `%s` | %llu",
					 l->param, (unsigned long long)
					 (l->kdef >> l->shift));
			/* then " |" or " (4 MiB) |" */
			p = strstr(ktext, row);
			if (!p || (p[strlen(row)] != ' '))
				fail_msg("KERNEL.md has no row \"%s ...\"",
					 row + 1);
		}
	}
	free(cfg);
	free(mtext);
	free(ktext);
}

/* --- the command line ---------------------------------------------------- */

static int args(struct tdbd_config *c, struct tdbd_args *a, ...)
{
	char *argv[64];
	int argc = 0;
	va_list ap;

	argv[argc++] = "tdbd";
	va_start(ap, a);
	while ((argv[argc] = va_arg(ap, char *)))
		argc++;
	va_end(ap);
	err[0] = '\0';
	memset(a, 0x5a, sizeof(*a));
	return tdbd_config_from_args(c, argc, argv, a, err, sizeof(err));
}

static bool default_file_exists(void)
{
	return access(TDBD_CONFIG_DEFAULT, F_OK) == 0;
}

static void test_args_keys(void **state)
{
	struct tdbd_config c, d;
	struct tdbd_args a;
	char cfg[PATH_MAX];

	(void)state;
	snprintf(cfg, sizeof(cfg), "%s", write_file(""));
	assert_int_equal(args(&c, &a, "--config", cfg,
		"--socket", "/tmp/t.sock", "--socket-mode=0600",
		"--socket-group", "7", "--data-dir=", "--workers", "3",
		"--ring-size=32M", "--feed-size", "1G", "--hugepages=off",
		"--client-deadline", "1m", "--max-clients=9",
		"--max-txn-ops", "10", "--max-txn-bytes=2K", "--max-txns", "2",
		"--table-mode=0", "--idle-spin", "0", "--log-level=error",
		NULL), 0);
	assert_string_equal(c.socket, "/tmp/t.sock");
	assert_int_equal(c.socket_mode, 0600);
	assert_string_equal(c.socket_group, "7");
	assert_string_equal(c.data_dir, "");
	assert_int_equal(c.workers, 3);
	assert_int_equal(c.ring_size, 32 * MiB);
	assert_int_equal(c.feed_size, GiB);
	assert_false(c.hugepages);
	assert_int_equal(c.client_deadline_ms, 60000);
	assert_int_equal(c.max_clients, 9);
	assert_int_equal(c.max_txn_ops, 10);
	assert_int_equal(c.max_txn_bytes, 2048);
	assert_int_equal(c.max_txns, 2);
	assert_int_equal(c.table_mode, 0);
	assert_int_equal(c.idle_spin_us, 0);
	assert_int_equal(c.log_level, LOG_ERR);
	assert_ptr_equal(a.config_path, cfg);
	assert_false(a.check);
	assert_false(a.help);
	assert_false(a.version);

	/* a repeated option: the last wins; "--" ends the options */
	assert_int_equal(args(&c, &a, "--config", cfg, "--workers=2",
			      "--workers", "5", "--", NULL), 0);
	assert_int_equal(c.workers, 5);
	/* a value that looks like an option is a value */
	assert_int_equal(args(&c, &a, "--config", cfg, "--socket-group",
			      "--workers", NULL), -EINVAL);
	assert_string_equal(err, "--socket-group: not a group name or number "
			    "(--workers)");
	/* nothing but the program name: the defaults (when there is no
	 * /etc/tdb/tdbd.conf on this machine) */
	if (!default_file_exists()) {
		tdbd_config_defaults(&d);
		memset(&c, 0x77, sizeof(c));
		assert_int_equal(args(&c, &a, NULL), 0);
		assert_memory_equal(&c, &d, sizeof(c));
		assert_null(a.config_path);
		assert_false(a.check || a.help || a.version);
	}
}

/* defaults < file < options, whatever the order of the options. */
static void test_args_precedence(void **state)
{
	struct tdbd_config c1, c2, c3;
	struct tdbd_args a;
	char cfg[PATH_MAX];

	(void)state;
	snprintf(cfg, sizeof(cfg), "%s", write_file(
		"workers = 4\nring-size = 8M\nlog-level = debug\n"));
	assert_int_equal(args(&c1, &a, "--workers", "8", "--config", cfg,
			      "--log-level=warning", NULL), 0);
	assert_int_equal(args(&c2, &a, "--config", cfg, "--workers", "8",
			      "--log-level", "warning", NULL), 0);
	assert_int_equal(args(&c3, &a, "--log-level=warning", "--workers=8",
			      "--config=", NULL), -EINVAL);
	assert_string_equal(err, "--config: empty path");
	assert_memory_equal(&c1, &c2, sizeof(c1));
	assert_int_equal(c1.workers, 8);          /* option over file */
	assert_int_equal(c1.ring_size, 8 * MiB);  /* file over default */
	assert_int_equal(c1.log_level, LOG_WARNING);
	assert_int_equal(c1.max_txns, 16);        /* default */
	/* the last --config is the one read */
	assert_int_equal(args(&c3, &a, "--config", "/nonexistent/x.conf",
			      "--config", cfg, NULL), 0);
	assert_int_equal(c3.workers, 4);
	assert_ptr_equal(a.config_path, cfg);
}

static void test_args_errors(void **state)
{
	static const struct {
		const char *argv[4];
		const char *msg;
	} t[] = {
		{ { "--foo" }, "unknown option --foo" },
		{ { "--foo=1" }, "unknown option --foo" },
		{ { "--rign-size", "4M" }, "unknown option --rign-size" },
		{ { "--ring_size=4M" }, "unknown option --ring_size" },
		{ { "--" "\x01" }, "unknown option --\\x01" },
		{ { "--=3" }, "unknown option --=3" },
		{ { "-x" }, "unknown option -x" },
		{ { "-workers" }, "unknown option -workers" },
		{ { "--socket" }, "--socket needs a value" },
		{ { "--workers", "2", "--log-level" },
		  "--log-level needs a value" },
		{ { "--config" }, "--config needs a value" },
		{ { "--workers", "0" }, "--workers: out of range 1..64 (0)" },
		{ { "--workers=0" }, "--workers: out of range 1..64 (0)" },
		{ { "--ring-size", "5000000" },
		  "--ring-size: not a power of two (5000000)" },
		{ { "--socket=rel" }, "--socket: not an absolute path (rel)" },
		{ { "--workers=" }, "--workers: not a number (\"\")" },
		{ { "--help=yes" }, "--help takes no value" },
		{ { "--version=1" }, "--version takes no value" },
		{ { "--check-config=" }, "--check-config takes no value" },
		{ { "workers=2" }, "unexpected argument 'workers=2' (options "
		  "are --key VALUE)" },
		{ { "-" }, "unexpected argument '-' (options are --key "
		  "VALUE)" },
		{ { "--", "x" }, "unexpected argument 'x' (options are --key "
		  "VALUE)" },
		/* option errors come before the file is looked at */
		{ { "--config", "/nonexistent/x.conf", "--workers=99" },
		  "--workers: out of range 1..64 (99)" },
	};
	struct tdbd_config c, before;
	struct tdbd_args a;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		tdbd_config_defaults(&c);
		c.workers = 33;
		before = c;
		if (args(&c, &a, t[i].argv[0], t[i].argv[1], t[i].argv[2],
			 t[i].argv[3], NULL) != -EINVAL)
			fail_msg("case %zu (%s) accepted", i, t[i].argv[0]);
		if (strcmp(err, t[i].msg))
			fail_msg("case %zu:\n got '%s'\nwant '%s'", i, err,
				 t[i].msg);
		assert_memory_equal(&c, &before, sizeof(c));
		/* *args untouched too (args() filled it with 0x5a) */
		assert_int_equal(((unsigned char *)&a)[0], 0x5a);
		assert_int_equal(((unsigned char *)&a)[sizeof(a) - 1], 0x5a);
	}
}

static void test_args_config_file(void **state)
{
	struct tdbd_config c, before;
	struct tdbd_args a;
	char cfg[PATH_MAX], want[PATH_MAX + 64], missing[PATH_MAX];

	(void)state;
	tdbd_config_defaults(&c);
	before = c;
	/* a --config file must exist */
	snprintf(missing, sizeof(missing), "%s/missing.conf", dir);
	assert_int_equal(args(&c, &a, "--config", missing, NULL), -ENOENT);
	snprintf(want, sizeof(want), "%s: No such file or directory",
		 missing);
	assert_string_equal(err, want);
	assert_memory_equal(&c, &before, sizeof(c));
	/* a bad --config file: its own message, line and all */
	snprintf(cfg, sizeof(cfg), "%s", write_file("workers = 2\nwrkers = 3\n"));
	assert_int_equal(args(&c, &a, "--workers", "4", "--config", cfg,
			      NULL), -EINVAL);
	snprintf(want, sizeof(want), "%s:2: unknown key 'wrkers'", cfg);
	assert_string_equal(err, want);
	/* a directory */
	assert_int_equal(args(&c, &a, "--config", dir, NULL), -EISDIR);
	assert_memory_equal(&c, &before, sizeof(c));
	/* --check-config: reads and checks, says which file */
	snprintf(cfg, sizeof(cfg), "%s", write_file("max-txns = 8\n"));
	assert_int_equal(args(&c, &a, "--check-config", "--config", cfg,
			      NULL), 0);
	assert_true(a.check);
	assert_false(a.help || a.version);
	assert_ptr_equal(a.config_path, cfg);
	assert_int_equal(c.max_txns, 8);
	/* --help and --version need no file, not even a missing one */
	assert_int_equal(args(&c, &a, "--config", missing, "--help", NULL),
			 0);
	assert_true(a.help);
	assert_null(a.config_path);
	assert_int_equal(args(&c, &a, "-h", NULL), 0);
	assert_true(a.help);
	assert_false(a.version);
	assert_int_equal(args(&c, &a, "--config", missing, "--version", NULL),
			 0);
	assert_true(a.version);
	assert_false(a.help);
	assert_int_equal(args(&c, &a, "-V", NULL), 0);
	assert_true(a.version);
	/* ... but bad options are still refused */
	assert_int_equal(args(&c, &a, "--help", "--bogus", NULL), -EINVAL);
	assert_string_equal(err, "unknown option --bogus");
}

/* Called again at reload: nothing carries over from an earlier call. */
static void test_args_no_state(void **state)
{
	struct tdbd_config c1, c2;
	struct tdbd_args a;
	char cfg[PATH_MAX], cfg2[PATH_MAX];
	char *argv1[] = { "tdbd", "--config", cfg, "--workers", "6", NULL };
	char *argv2[] = { "tdbd", "--config", cfg2, NULL };
	char *argv3[] = { "tdbd", "--config", cfg, "--check-config", "-h",
			  NULL };

	(void)state;
	snprintf(cfg, sizeof(cfg), "%s", write_file("workers = 2\n"));
	snprintf(cfg2, sizeof(cfg2), "%s", write_file("max-txns = 3\n"));
	assert_int_equal(tdbd_config_from_args(&c1, 5, argv1, &a, err,
					       sizeof(err)), 0);
	assert_int_equal(c1.workers, 6);
	assert_int_equal(tdbd_config_from_args(&c1, 6, argv3, &a, err,
					       sizeof(err)), 0);
	assert_true(a.help && a.check);
	/* same argv twice: same result; another argv: no trace of the
	 * first */
	assert_int_equal(tdbd_config_from_args(&c1, 3, argv2, &a, err,
					       sizeof(err)), 0);
	assert_false(a.help || a.check || a.version);
	assert_int_equal(c1.workers, 1);
	assert_int_equal(c1.max_txns, 3);
	assert_int_equal(tdbd_config_from_args(&c2, 3, argv2, &a, err,
					       sizeof(err)), 0);
	assert_memory_equal(&c1, &c2, sizeof(c1));
	/* the file changed between calls (a reload): the new contents */
	assert_int_equal(truncate(cfg2, 0), 0);
	assert_int_equal(tdbd_config_from_args(&c2, 3, argv2, &a, err,
					       sizeof(err)), 0);
	assert_int_equal(c2.max_txns, 16);
	/* argv is not modified */
	assert_string_equal(argv1[1], "--config");
	assert_string_equal(argv1[3], "--workers");
	assert_string_equal(argv1[4], "6");
}

/* A value other than the default, per key. */
static const char *const other[NKEYS] = {
	"/x.sock", "0600", "tdb", "/var/lib/tdb", "2", "8M", "8M", "no",
	"5s", "10", "10", "1M", "2", "8", "16", "1T", "64T", "64M", "2G",
	"1G", "8", "100", "512M", "64M", "1G", "0640", "0", "debug",
};

/* --- --help -------------------------------------------------------------- */

static void test_usage(void **state)
{
	const char *u = tdbd_config_usage(), *p, *q, *nl;
	struct tdbd_config c, d;
	char opt[64], val[64];
	size_t i;

	(void)state;
	assert_non_null(u);
	assert_non_null(strstr(u, "--config PATH"));
	assert_non_null(strstr(u, "--check-config"));
	assert_non_null(strstr(u, "--help"));
	assert_non_null(strstr(u, "--version"));
	assert_non_null(strstr(u, TDBD_CONFIG_DEFAULT));
	/* no line over 79 columns */
	for (p = u; (nl = strchr(p, '\n')); p = nl + 1)
		assert_true(nl - p <= 79);
	assert_int_equal(*p, '\0');
	/* every key, with the default the code really has: set the key
	 * to another value, then to the text after "(default " */
	tdbd_config_defaults(&d);
	for (i = 0; i < NKEYS; i++) {
		snprintf(opt, sizeof(opt), "  --%s ", all_keys[i]);
		p = strstr(u, opt);
		if (!p)
			fail_msg("usage lacks %s", opt);
		p = strstr(p, "(default ");
		assert_non_null(p);
		p += 9;
		q = strchr(p, ')');
		assert_non_null(q);
		assert_true((size_t)(q - p) < sizeof(val));
		memcpy(val, p, (size_t)(q - p));
		val[q - p] = '\0';
		if (!strcmp(val, "\"\""))
			val[0] = '\0';
		c = d;
		assert_int_equal(tdbd_config_set(&c, all_keys[i], other[i],
						 err, sizeof(err)), 0);
		if (tdbd_config_set(&c, all_keys[i], val, err, sizeof(err)))
			fail_msg("usage default of %s: %s", all_keys[i], err);
		if (memcmp(&c, &d, sizeof(c)))
			fail_msg("usage default of %s is wrong: %s",
				 all_keys[i], val);
	}
	/* the restart marks match the diff */
	for (i = 0; i < NKEYS; i++) {
		snprintf(opt, sizeof(opt), "  --%s ", all_keys[i]);
		p = strstr(u, opt) + strlen(opt);
		p += strspn(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZ ");
		if (needs_restart(all_keys[i]) != !strncmp(p, "(R)", 3))
			fail_msg("usage: %s restart mark wrong", all_keys[i]);
	}
}

/* --- reload diff --------------------------------------------------------- */

static void test_diff(void **state)
{
	struct tdbd_config a, b;
	char changed[512], restart[512], want[512];
	size_t i;

	(void)state;
	tdbd_config_defaults(&a);
	b = a;
	memset(changed, 'x', sizeof(changed));
	memset(restart, 'x', sizeof(restart));
	tdbd_config_diff(&a, &b, changed, sizeof(changed), restart,
			 sizeof(restart));
	assert_string_equal(changed, "");
	assert_string_equal(restart, "");

	/* one key at a time */
	for (i = 0; i < NKEYS; i++) {
		b = a;
		assert_int_equal(tdbd_config_set(&b, all_keys[i], other[i],
						 err, sizeof(err)), 0);
		tdbd_config_diff(&a, &b, changed, sizeof(changed), restart,
				 sizeof(restart));
		assert_string_equal(changed, all_keys[i]);
		assert_string_equal(restart, needs_restart(all_keys[i]) ?
				    all_keys[i] : "");
	}

	/* all of them, in config.h's order */
	b = a;
	want[0] = '\0';
	for (i = 0; i < NKEYS; i++) {
		assert_int_equal(tdbd_config_set(&b, all_keys[i], other[i],
						 err, sizeof(err)), 0);
		if (i)
			strcat(want, ", ");
		strcat(want, all_keys[i]);
	}
	tdbd_config_diff(&a, &b, changed, sizeof(changed), restart,
			 sizeof(restart));
	assert_string_equal(changed, want);
	assert_string_equal(restart, "socket, data-dir, workers, ring-size, "
			    "feed-size, hugepages, max-snapshot-bytes");

	/* too small: whole names then "...", always terminated */
	memset(changed, 'x', sizeof(changed));
	tdbd_config_diff(&a, &b, changed, 20, restart, 4);
	assert_string_equal(changed, "socket, socket-mode");
	assert_string_equal(restart, "...");
	tdbd_config_diff(&a, &b, changed, 25, restart, 3);
	assert_string_equal(changed, "socket, socket-mode...");
	assert_string_equal(restart, "");
	tdbd_config_diff(&a, &b, changed, 1, restart, 0);
	assert_string_equal(changed, "");
	tdbd_config_diff(&a, &b, NULL, 0, NULL, 0);

	/* bytes after a string's end are not a change */
	b = a;
	memset(b.data_dir + 1, 'q', 16);
	memset(b.socket_group + 1, 'q', 16);
	b.socket[strlen(b.socket) + 1] = 'q';
	tdbd_config_diff(&a, &b, changed, sizeof(changed), restart,
			 sizeof(restart));
	assert_string_equal(changed, "");

	/* reload as tdbd does it: the file changes, the argv does not */
	{
		struct tdbd_config old, new_;
		struct tdbd_args ar;
		char cfg[PATH_MAX];
		char *argv[] = { "tdbd", "--config", cfg, "--workers", "2",
				 NULL };
		FILE *f;

		snprintf(cfg, sizeof(cfg), "%s", write_file(
			"workers = 8\nmax-clients = 10\n"));
		assert_int_equal(tdbd_config_from_args(&old, 5, argv, &ar, err,
						       sizeof(err)), 0);
		f = fopen(cfg, "w");
		assert_non_null(f);
		fputs("workers = 16\nmax-clients = 20\nring-size = 8M\n"
		      "log-level = debug\n", f);
		fclose(f);
		assert_int_equal(tdbd_config_from_args(&new_, 5, argv, &ar,
						       err, sizeof(err)), 0);
		tdbd_config_diff(&old, &new_, changed, sizeof(changed),
				 restart, sizeof(restart));
		/* workers stays 2: the option still beats the file */
		assert_int_equal(new_.workers, 2);
		assert_string_equal(changed, "ring-size, max-clients, "
				    "log-level");
		assert_string_equal(restart, "ring-size");
	}
}

/* --- random input -------------------------------------------------------- */

static unsigned long fuzz_rounds(void)
{
	const char *s = getenv("TDB_CONFIG_FUZZ");

	return s ? strtoul(s, NULL, 10) : 3000;
}

static uint64_t rng;

static uint32_t rnd(void)
{
	/* xorshift64*: reproducible from TDB_CONFIG_SEED */
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return (uint32_t)((rng * 2685821657736338717ULL) >> 32);
}

static void seed_rng(void)
{
	const char *s = getenv("TDB_CONFIG_SEED");

	rng = s ? strtoull(s, NULL, 0) : 0x7dbdc0f1ULL;
	if (!rng)
		rng = 1;
	print_message("seed %#llx\n", (unsigned long long)rng);
}

/* Load data; check the outcome is one of the allowed ones. */
static int fuzz_load(const char *data, size_t len, unsigned long round)
{
	struct tdbd_config c, before;
	int rc;

	tdbd_config_defaults(&c);
	before = c;
	err[0] = '\0';
	rc = tdbd_config_load(&c, write_file_len(data, len), err, sizeof(err));
	unlink(path);
	if (rc != 0 && rc != -EINVAL)
		fail_msg("round %lu: rc %d (%s)", round, rc, err);
	if (rc) {
		/* "<path>:<line>: <reason>" and nothing applied */
		if (strncmp(err, path, strlen(path)) ||
		    err[strlen(path)] != ':' ||
		    strlen(err) < strlen(path) + 4)
			fail_msg("round %lu: message '%s'", round, err);
		assert_memory_equal(&c, &before, sizeof(c));
	} else {
		assert_valid(&c);
	}
	return rc;
}

/* A good file to mutate: every key, quotes, comments, CRLF. */
static const char seed_file[] =
	"# tdbd.conf\n"
	"socket = \"/run/t dir/t.sock\" # quoted\n"
	"socket-mode = 0666\n"
	"socket-group = tdb\n"
	"data-dir = /var/lib/tdb\r\n"
	"  workers\t= 8\n"
	"ring-size = 16M\n"
	"feed-size = 64M\n"
	"hugepages = no\n"
	"\n"
	"client-deadline = 2s\n"
	"max-clients = 100\n"
	"max-txn-ops = 1000\n"
	"max-txn-bytes = 1M\n"
	"max-txns = 4\n"
	"table-mode = \"0640\"\n"
	"idle-spin = 1ms\n"
	"log-level = debug";

/* Random bytes (mostly printable, with newlines), and the good file
 * above with a few bytes overwritten, inserted or removed. */
static void test_fuzz_bytes(void **state)
{
	unsigned long n = fuzz_rounds(), i, ok = 0, mok = 0;
	char buf[2048];
	size_t len, j, at;

	(void)state;
	seed_rng();
	assert_int_equal(fuzz_load(seed_file, sizeof(seed_file) - 1, 0), 0);
	for (i = 0; i < n; i++) {
		len = rnd() % sizeof(buf);
		for (j = 0; j < len; j++) {
			uint32_t r = rnd();

			buf[j] = (r & 0x300) ? (char)(0x20 + r % 95) :
				 (r & 0x400) ? '\n' : (char)r;
		}
		ok += fuzz_load(buf, len, i) == 0;

		len = sizeof(seed_file) - 1;
		memcpy(buf, seed_file, len);
		for (j = 1 + rnd() % 4; j > 0; j--) {
			uint32_t r = rnd();

			at = rnd() % len;
			if (r % 3 == 0 && len > 1) {            /* remove */
				memmove(buf + at, buf + at + 1, len - at - 1);
				len--;
			} else if (r % 3 == 1) {                /* insert */
				memmove(buf + at + 1, buf + at, len - at);
				buf[at] = (char)(r >> 8);
				len++;
			} else {                                /* overwrite */
				buf[at] = (char)(r >> 8);
			}
		}
		mok += fuzz_load(buf, len, i) == 0;
	}
	print_message("%lu random files, %lu accepted; %lu mutated, %lu "
		      "accepted\n", n, ok, n, mok);
	assert_true(mok > 0 && mok < n);
}

/* Lines made of real keys, good and bad values, quotes, comments. */
static void test_fuzz_lines(void **state)
{
	static const char *const vals[] = {
		"1", "0", "64", "65", "4M", "8M", "5000000", "1G", "yes", "off",
		"10s", "60m", "61m", "50us", "100ms", "0660", "0800", "debug",
		"/run/x.sock", "/var/lib/tdb", "rel/dir", "tdb", "", "\"\"",
		"\"/a b\"", "\"unterminated", "\"esc\\q\"", "\"x\" y", "#",
		"4 8", "a\"b", "-1", "18446744073709551616", "\x01\xff",
	};
	static const char *const seps[] = { "=", " = ", "\t=\t", "==", "",
					    " ", "= #c", "=\"" };
	static const char *const others[] = { "# comment", "", "   ",
		"\r", "bogus = 1", "=", "\xef\xbb\xbf", "   # x = y" };
	unsigned long n = fuzz_rounds(), i, ok = 0;
	char buf[4096];
	size_t len, lines, l;

	(void)state;
	seed_rng();
	for (i = 0; i < n; i++) {
		len = 0;
		lines = rnd() % 12;
		for (l = 0; l < lines; l++) {
			uint32_t r = rnd();
			int w;

			if (r % 5 == 0)
				w = snprintf(buf + len, sizeof(buf) - len,
					     "%s\n", others[rnd() % 8]);
			else
				w = snprintf(buf + len, sizeof(buf) - len,
				     "%s%s%s%s%s\n", r & 0x100 ? "  " : "",
				     all_keys[rnd() % NKEYS],
				     seps[(r >> 3) % 8],
				     vals[rnd() % (sizeof(vals) /
						   sizeof(vals[0]))],
				     r & 0x200 ? " # c" : "");
			if (w < 0 || (size_t)w >= sizeof(buf) - len)
				break;
			len += (size_t)w;
		}
		ok += fuzz_load(buf, len, i) == 0;
	}
	print_message("%lu random key files, %lu accepted\n", n, ok);
	/* the mix must exercise both outcomes, or it tests little */
	assert_true(ok > 0 && ok < n);
}

/*
 * Good files in random layouts: the file must give the same struct as
 * setting the same keys one by one (the file adds only syntax).
 */
static void test_fuzz_good_files(void **state)
{
	unsigned long n = fuzz_rounds() / 3, i;
	struct tdbd_config c, want;
	char buf[8192];
	size_t len;

	(void)state;
	seed_rng();
	for (i = 0; i < n; i++) {
		bool used[NKEYS] = { false };
		int k, lines = (int)(rnd() % 20);

		tdbd_config_defaults(&want);
		len = 0;
		for (; lines > 0; lines--) {
			const struct good *g = &goods[rnd() % (sizeof(goods) /
							      sizeof(goods[0]))];
			uint32_t r = rnd();
			bool quote = (r & 1) || !g->value[0];

			for (k = 0; strcmp(all_keys[k], g->key); k++)
				;
			if (used[k])
				continue;
			used[k] = true;
			assert_int_equal(tdbd_config_set(&want, g->key,
						g->value, err, sizeof(err)), 0);
			len += (size_t)snprintf(buf + len, sizeof(buf) - len,
				"%s%s%s%s%s%s%s%s%s",
				r & 2 ? "# a comment\n" : "",
				r & 4 ? "\n" : "",
				r & 8 ? " \t" : "", g->key,
				r & 16 ? " = " : "=",
				quote ? "\"" : "", g->value, quote ? "\"" : "",
				r & 32 ? " # why\r\n" : r & 64 ? "\r\n" : "\n");
			assert_true(len < sizeof(buf));
		}
		tdbd_config_defaults(&c);
		if (tdbd_config_load(&c, write_file_len(buf, len), err,
				     sizeof(err)))
			fail_msg("round %lu: %s\n%s", i, err, buf);
		unlink(path);
		assert_memory_equal(&c, &want, sizeof(c));
	}
}

static void test_fuzz_args(void **state)
{
	static const char *const toks[] = {
		"--workers", "--workers=4", "--ring-size", "8M", "--socket",
		"/s", "rel", "--help", "-h", "-V", "--version", "--check-config",
		"--", "-", "--bogus", "--log-level", "debug", "0", "--=",
		"--config", "/nonexistent", "--idle-spin=200ms", "\xff", "",
		"--socket-group", "--data-dir=", "--max-txn-bytes=4G",
		"--hugepages", "maybe", "yes",
	};
	unsigned long n = fuzz_rounds(), i, ok = 0;
	struct tdbd_config c, before;
	struct tdbd_args a;
	char *argv[12];
	int argc, rc;

	(void)state;
	seed_rng();
	for (i = 0; i < n; i++) {
		argv[0] = "tdbd";
		argc = 1 + (int)(rnd() % 10);
		for (int j = 1; j < argc; j++)
			argv[j] = (char *)toks[rnd() % (sizeof(toks) /
							sizeof(toks[0]))];
		argv[argc] = NULL;
		tdbd_config_defaults(&c);
		c.max_txns = 77;
		before = c;
		err[0] = '\0';
		rc = tdbd_config_from_args(&c, argc, argv, &a, err,
					   sizeof(err));
		if (rc == 0) {
			ok++;
			assert_valid(&c);
		} else {
			assert_true(rc == -EINVAL || rc == -ENOENT ||
				    rc == -EACCES || rc == -EISDIR);
			assert_true(err[0] != '\0');
			assert_memory_equal(&c, &before, sizeof(c));
		}
	}
	print_message("%lu random command lines, %lu accepted\n", n, ok);
	assert_true(ok > 0 && ok < n);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_set_good),
		cmocka_unit_test(test_set_strings),
		cmocka_unit_test(test_set_bad),
		cmocka_unit_test(test_limits_table),
		cmocka_unit_test(test_limits_docs),
		cmocka_unit_test(test_set_bad_long),
		cmocka_unit_test(test_set_unknown),
		cmocka_unit_test(test_file_all_keys),
		cmocka_unit_test(test_file_syntax),
		cmocka_unit_test(test_file_errors),
		cmocka_unit_test(test_file_atomic),
		cmocka_unit_test(test_file_long_lines),
		cmocka_unit_test(test_file_nul),
		cmocka_unit_test(test_file_not_readable),
		cmocka_unit_test(test_sample_file),
		cmocka_unit_test(test_doc),
		cmocka_unit_test(test_args_keys),
		cmocka_unit_test(test_args_precedence),
		cmocka_unit_test(test_args_errors),
		cmocka_unit_test(test_args_config_file),
		cmocka_unit_test(test_args_no_state),
		cmocka_unit_test(test_usage),
		cmocka_unit_test(test_diff),
		cmocka_unit_test(test_fuzz_bytes),
		cmocka_unit_test(test_fuzz_lines),
		cmocka_unit_test(test_fuzz_good_files),
		cmocka_unit_test(test_fuzz_args),
	};

	return cmocka_run_group_tests(tests, setup_dir, remove_dir);
}
