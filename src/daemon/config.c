// SPDX-License-Identifier: GPL-2.0-only
/*
 * config.c - tdbd's settings: the key table, value parsers, the
 * tdbd.conf reader, the command line, --help text and the reload diff.
 *
 * Everything a key is (name, type, field, range, restart or not) lives
 * in one row of keys[]; the setter, the diff and the option parser all
 * walk that table, so a key cannot be known to one and not the others.
 *
 * Invariants:
 *  - a failing call leaves the caller's struct as it was: the file and
 *    the command line are applied to a copy that is stored only when
 *    every line and option was accepted;
 *  - nothing is kept between calls (tdbd calls from_args again at
 *    SIGHUP), no global state is written, nothing is printed;
 *  - memory is bounded whatever the input: a file is read through one
 *    line buffer of TDBD_LINE_MAX bytes, values shown in messages are
 *    escaped and cut to SHOW_MAX bytes.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include "config.h"
#include "limtable.h"    /* src/owner: the limits table */

#define TDBD_LINE_MAX 4096     /* bytes in a line, without its '\n' */
#define SHOW_MAX 48            /* bytes of a bad value quoted back */
#define KiB (1ULL << 10)
#define MiB (1ULL << 20)
#define GiB (1ULL << 30)
#define TiB (1ULL << 40)

/* --- the keys ---------------------------------------------------------- */

enum ktype {
	K_SOCKET,   /* absolute path that fits sun_path */
	K_DIR,      /* absolute path, or "" */
	K_GROUP,    /* group name or number, or "" */
	K_MODE,     /* octal permission bits */
	K_UINT,     /* plain decimal number */
	K_SIZE,     /* bytes, K/M/G suffixes */
	K_MS,       /* duration: ms (bare), s, m */
	K_US,       /* duration: us (bare), ms */
	K_BOOL,
	K_LEVEL,    /* syslog level by name */
	K_SYNC,     /* always, batch, none (enum wal_sync) */
	K_BACKEND,  /* daemon, kernel (enum tdbd_backend) */
};

struct key {
	const char *name;
	enum ktype type;
	size_t off, width;      /* the field in struct tdbd_config */
	uint64_t min, max;      /* numbers: accepted range, inclusive */
	const char *range;      /* the range as users write it */
	bool pow2;              /* K_SIZE: must be a power of two */
	bool restart;           /* a change takes effect only at restart */
	/* A limit (src/owner/limtable.h): its default, range (min, max,
	 * range and pow2 above are unused) and what 0 means come from
	 * the one table tdb.ko's module parameters are made from too. */
	const struct tdbo_limit *lim;
};

#define FIELD(f) offsetof(struct tdbd_config, f), \
	sizeof(((struct tdbd_config *)0)->f)
#define LIMIT(name, type, f, id, restart) \
	{ name, type, FIELD(f), 0, 0, NULL, false, restart, \
	  &tdbo_limits_table[TDBO_LIM_##id] }

static const struct key keys[] = {
	{ "socket", K_SOCKET, FIELD(socket), 0, 0, NULL, false, true, NULL },
	{ "socket-mode", K_MODE, FIELD(socket_mode), 0, 0777, "0..0777",
	  false, false, NULL },
	{ "socket-group", K_GROUP, FIELD(socket_group), 0, 0, NULL, false,
	  false, NULL },
	{ "data-dir", K_DIR, FIELD(data_dir), 0, 0, NULL, false, true, NULL },
	{ "workers", K_UINT, FIELD(workers), 1, 64, "1..64", false, true,
	  NULL },
	{ "ring-size", K_SIZE, FIELD(ring_size), 4 * MiB, 256 * MiB,
	  "4M..256M", true, true, NULL },
	LIMIT("feed-size", K_SIZE, feed_size, FEED_SIZE, true),
	{ "hugepages", K_BOOL, FIELD(hugepages), 0, 0, NULL, false, true,
	  NULL },
	{ "client-deadline", K_MS, FIELD(client_deadline_ms), 1, 3600000,
	  "1ms..60m", false, false, NULL },
	LIMIT("max-clients", K_UINT, max_clients, MAX_CLIENTS, false),
	LIMIT("max-txn-ops", K_UINT, max_txn_ops, MAX_TXN_OPS, false),
	LIMIT("max-txn-bytes", K_SIZE, max_txn_bytes, MAX_TXN_BYTES, false),
	LIMIT("max-txns", K_UINT, max_txns, MAX_TXNS, false),
	LIMIT("max-clients-per-uid", K_UINT, max_clients_per_uid,
	      MAX_CLIENTS_PER_UID, false),
	LIMIT("max-tables-per-uid", K_UINT, max_tables_per_uid,
	      MAX_TABLES_PER_UID, false),
	LIMIT("max-reserve-per-uid", K_SIZE, max_reserve_per_uid,
	      MAX_RESERVE_PER_UID, false),
	LIMIT("max-reserve", K_SIZE, max_reserve, MAX_RESERVE, false),
	LIMIT("max-txn-memory-per-uid", K_SIZE, max_txn_memory_per_uid,
	      MAX_TXN_MEMORY_PER_UID, false),
	LIMIT("max-txn-memory", K_SIZE, max_txn_memory, MAX_TXN_MEMORY,
	      false),
	LIMIT("max-snapshot-memory-per-uid", K_SIZE,
	      max_snapshot_memory_per_uid, MAX_SNAPSHOT_MEMORY_PER_UID, false),
	LIMIT("max-watches", K_UINT, max_watches, MAX_WATCHES, false),
	LIMIT("max-watches-per-uid", K_UINT, max_watches_per_uid,
	      MAX_WATCHES_PER_UID, false),
	LIMIT("max-watches-total", K_UINT, max_watches_total,
	      MAX_WATCHES_TOTAL, false),
	LIMIT("max-data-per-uid", K_SIZE, max_data_per_uid, MAX_DATA_PER_UID,
	      false),
	LIMIT("max-ring-memory-per-uid", K_SIZE, max_ring_memory_per_uid,
	      MAX_RING_MEMORY_PER_UID, false),
	LIMIT("max-ring-memory", K_SIZE, max_ring_memory, MAX_RING_MEMORY,
	      false),
	LIMIT("max-tables", K_UINT, max_tables, MAX_TABLES, false),
	LIMIT("max-snapshot-bytes", K_SIZE, max_snapshot_bytes,
	      MAX_SNAPSHOT_BYTES, true),
	LIMIT("max-snapshot-memory", K_SIZE, max_snapshot_memory,
	      MAX_SNAPSHOT_MEMORY, false),
	LIMIT("max-memory", K_SIZE, max_memory, MAX_MEMORY, false),
	LIMIT("table-mode", K_MODE, table_mode, TABLE_MODE, false),
	{ "idle-spin", K_US, FIELD(idle_spin_us), 0, 100000, "0..100ms",
	  false, false, NULL },
	LIMIT("reader-lease", K_MS, reader_lease_ms, READER_LEASE, false),
	{ "log-level", K_LEVEL, FIELD(log_level), 0, 0, NULL, false, false,
	  NULL },
	{ "sync", K_SYNC, FIELD(sync), 0, 0, NULL, false, true, NULL },
	{ "backend", K_BACKEND, FIELD(backend), 0, 0, NULL, false, true,
	  NULL },
	{ "batch-interval", K_MS, FIELD(batch_ms), 1, 10000, "1ms..10s",
	  false, true, NULL },
	{ "wal-segment-size", K_SIZE, FIELD(wal_segment_size), MiB, GiB,
	  "1M..1G", false, true, NULL },
	{ "checkpoint-interval", K_MS, FIELD(checkpoint_interval_ms), 1000,
	  86400000, "1s..1440m", false, true, NULL },
	{ "checkpoint-wal-size", K_SIZE, FIELD(checkpoint_wal_size), MiB,
	  64 * GiB, "1M..64G", false, true, NULL },
	{ "checkpoint-run-size", K_SIZE, FIELD(checkpoint_run_size), MiB,
	  16 * GiB, "1M..16G", false, true, NULL },
	{ "wal-truncate-damaged", K_BOOL, FIELD(wal_truncate_damaged), 0, 0,
	  NULL, false, true, NULL },
};

#define NKEYS (sizeof(keys) / sizeof(keys[0]))

static const struct key *key_find(const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < NKEYS; i++)
		if (strlen(keys[i].name) == len &&
		    !memcmp(keys[i].name, name, len))
			return &keys[i];
	return NULL;
}

static void store_number(const struct key *k, struct tdbd_config *c,
			 uint64_t v);

void tdbd_config_defaults(struct tdbd_config *c)
{
	size_t i;

	memset(c, 0, sizeof(*c));
	snprintf(c->socket, sizeof(c->socket), "%s", "/run/tdb/tdbd.sock");
	c->socket_mode = 0660;
	c->workers = 1;
	c->ring_size = 4 * MiB;
	c->hugepages = true;
	c->client_deadline_ms = 10000;
	c->idle_spin_us = 50;
	c->log_level = LOG_INFO;
	c->sync = 0;                    /* WAL_SYNC_ALWAYS */
	c->batch_ms = 10;
	c->wal_segment_size = 64 * MiB;
	c->checkpoint_interval_ms = 300000;
	c->checkpoint_wal_size = 256 * MiB;
	c->checkpoint_run_size = 64 * MiB;
	/* the limits: their defaults are the table's */
	for (i = 0; i < NKEYS; i++)
		if (keys[i].lim)
			store_number(&keys[i], c, keys[i].lim->def);
}

/* --- messages ------------------------------------------------------------ */

/* snprintf that tolerates a NULL or empty buffer (callers may pass one). */
static void __attribute__((format(printf, 3, 4)))
msg(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* A value or key as it may appear in a message: printable ASCII as is,
 * other bytes as \xNN, at most SHOW_MAX bytes of it then "...", and
 * "" for an empty one.  out must hold SHOW_MAX * 4 + 4 bytes. */
#define SHOW_LEN (SHOW_MAX * 4 + 4)
static const char *show(char *out, const char *s, size_t len)
{
	size_t i, o = 0;

	if (!len)
		return "\"\"";
	for (i = 0; i < len && i < SHOW_MAX; i++) {
		unsigned char ch = (unsigned char)s[i];

		if (ch >= 0x20 && ch < 0x7f)
			out[o++] = (char)ch;
		else
			o += (size_t)sprintf(out + o, "\\x%02x", ch);
	}
	if (i < len) {
		memcpy(out + o, "...", 3);
		o += 3;
	}
	out[o] = '\0';
	return out;
}

/* --- value parsers ------------------------------------------------------- */
/* Each returns NULL and stores the value, or returns the reason it was
 * refused; "out of range" reasons are built by the caller. */

struct unit {
	const char *sfx;
	uint64_t mul;
};

static const struct unit u_plain[] = { { "", 1 } };
static const struct unit u_size[] = {
	{ "", 1 }, { "K", KiB }, { "k", KiB }, { "M", MiB }, { "m", MiB },
	{ "G", GiB }, { "g", GiB }, { "T", TiB }, { "t", TiB },
};
static const struct unit u_ms[] = {
	{ "", 1 }, { "ms", 1 }, { "s", 1000 }, { "m", 60000 },
};
static const struct unit u_us[] = { { "", 1 }, { "us", 1 }, { "ms", 1000 } };

enum { NUM_OK, NUM_BAD, NUM_RANGE };

/* Decimal digits and one of the units.  Values too big for 64 bits
 * saturate (they are then out of any range); "-N" is out of range. */
static int parse_scaled(const char *s, const struct unit *u, size_t nu,
			uint64_t *out)
{
	bool neg = false, big = false;
	uint64_t v = 0;
	size_t i;

	if (*s == '-') {
		neg = true;
		s++;
	}
	if (!isdigit((unsigned char)*s))
		return NUM_BAD;
	for (; isdigit((unsigned char)*s); s++) {
		unsigned int d = (unsigned int)(*s - '0');

		if (v > (UINT64_MAX - d) / 10)
			big = true;
		else
			v = v * 10 + d;
	}
	for (i = 0; i < nu; i++)
		if (!strcmp(s, u[i].sfx))
			break;
	if (i == nu)
		return NUM_BAD;
	if (neg)
		return NUM_RANGE;
	if (big || v > UINT64_MAX / u[i].mul)
		*out = UINT64_MAX;
	else
		*out = v * u[i].mul;
	return NUM_OK;
}

/* Octal permission bits: "0660" or "660". */
static int parse_mode(const char *s, uint64_t *out)
{
	uint64_t v = 0;

	if (!*s)
		return NUM_BAD;
	for (; *s; s++) {
		if (*s < '0' || *s > '7')
			return NUM_BAD;
		v = v * 8 + (uint64_t)(*s - '0');
		if (v > 07777777)
			v = 07777777;   /* saturate: out of range anyway */
	}
	*out = v;
	return NUM_OK;
}

static const char *parse_bool(const char *s, bool *out)
{
	static const char *const yes[] = { "yes", "true", "on", "1" };
	static const char *const no[] = { "no", "false", "off", "0" };
	size_t i;

	for (i = 0; i < 4; i++) {
		if (!strcasecmp(s, yes[i])) {
			*out = true;
			return NULL;
		}
		if (!strcasecmp(s, no[i])) {
			*out = false;
			return NULL;
		}
	}
	return "not a boolean (yes/no, true/false, on/off, 1/0)";
}

static const char *parse_level(const char *s, int *out)
{
	static const struct { const char *name; int level; } lv[] = {
		{ "error", LOG_ERR }, { "warning", LOG_WARNING },
		{ "notice", LOG_NOTICE }, { "info", LOG_INFO },
		{ "debug", LOG_DEBUG },
	};
	size_t i;

	for (i = 0; i < sizeof(lv) / sizeof(lv[0]); i++)
		if (!strcasecmp(s, lv[i].name)) {
			*out = lv[i].level;
			return NULL;
		}
	return "not a log level (error, warning, notice, info, debug)";
}

/* Group names as groupadd takes them, less the oddities: a letter,
 * digit or '_' first, then letters, digits, '_', '.', '-', and an
 * optional final '$'.  All digits is a number (a gid). */
static const char *check_group(const char *s, size_t len)
{
	size_t i;
	bool digits = true;

	if (!len)
		return NULL;            /* the daemon's own group */
	if (len >= sizeof(((struct tdbd_config *)0)->socket_group))
		return "too long (at most 63 bytes)";
	for (i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)s[i];

		if (!isdigit(ch))
			digits = false;
		if (isalnum(ch) || ch == '_' || (i && (ch == '.' ||
		    ch == '-')) || (i && i == len - 1 && ch == '$'))
			continue;
		return "not a group name or number";
	}
	if (digits) {
		uint64_t v;

		/* (gid_t)-1 means "no change" to chown(): not a group */
		if (parse_scaled(s, u_plain, 1, &v) != NUM_OK ||
		    v >= (uint64_t)(gid_t)-1)
			return "out of range 0..4294967294";
	}
	return NULL;
}

static const char *check_path(const struct key *k, const char *s,
			      size_t len)
{
	if (k->type == K_DIR && !len)
		return NULL;            /* scratch directory */
	if (s[0] != '/')
		return k->type == K_DIR ?
			"not an absolute path (or \"\" for a scratch directory)" :
			"not an absolute path";
	if (len >= k->width)
		return k->type == K_SOCKET ?
			"too long for a socket (at most 107 bytes)" :
			"too long (at most 4095 bytes)";
	return NULL;
}

/* A limit's value as tdbd.conf takes it: sizes with the largest of
 * T, G, M, K that divides them, durations in m, s or ms, modes octal. */
static void limit_value(char *out, size_t len, enum ktype type, uint64_t v)
{
	static const struct unit sz[] = {
		{ "T", TiB }, { "G", GiB }, { "M", MiB }, { "K", KiB },
	};
	static const struct unit ms[] = { { "m", 60000 }, { "s", 1000 } };
	const struct unit *u = type == K_SIZE ? sz : ms;
	size_t i, n = type == K_SIZE ? 4 : type == K_MS ? 2 : 0;

	if (type == K_MODE) {
		snprintf(out, len, "%#llo", (unsigned long long)v);
		return;
	}
	for (i = 0; v && i < n; i++)
		if (!(v % u[i].mul)) {
			snprintf(out, len, "%llu%s",
				 (unsigned long long)(v / u[i].mul), u[i].sfx);
			return;
		}
	snprintf(out, len, "%llu%s", (unsigned long long)v,
		 type == K_MS ? "ms" : "");
}

/* A limit's range as users write it: "1..65536", "8M..1T, or 0". */
static const char *limit_range(const struct key *k, char *out, size_t len)
{
	char lo[24], hi[24];

	limit_value(lo, sizeof(lo), k->type, k->lim->min);
	limit_value(hi, sizeof(hi), k->type, k->lim->max);
	snprintf(out, len, "%s..%s%s", lo, hi, k->lim->min &&
		 (k->lim->flags & (TDBO_LF_ZERO_OFF | TDBO_LF_ZERO_AUTO)) ?
		 ", or 0" : "");
	return out;
}

/* Numbers of every kind: parse, then range, then power of two. */
static const char *parse_number(const struct key *k, const char *s,
				uint64_t *v, char *buf, size_t buflen)
{
	static const char *const bad[] = {
		[K_MODE] = "not an octal mode",
		[K_UINT] = "not a number",
		[K_SIZE] = "not a size (bytes, or a number with K, M, G or T)",
		[K_MS] = "not a duration (a number with ms, s or m; bare = ms)",
		[K_US] = "not a duration (a number with us or ms; bare = us)",
	};
	char range[64];
	int rc;

	switch (k->type) {
	case K_MODE:
		rc = parse_mode(s, v);
		break;
	case K_SIZE:
		rc = parse_scaled(s, u_size, 9, v);
		break;
	case K_MS:
		rc = parse_scaled(s, u_ms, 4, v);
		break;
	case K_US:
		rc = parse_scaled(s, u_us, 3, v);
		break;
	default:
		rc = parse_scaled(s, u_plain, 1, v);
		break;
	}
	if (rc == NUM_BAD)
		return bad[k->type];
	if (k->lim) {
		if (rc == NUM_RANGE || (!tdbo_limit_ok(k->lim, *v) &&
					(*v < k->lim->min ||
					 *v > k->lim->max))) {
			snprintf(buf, buflen, "out of range %s",
				 limit_range(k, range, sizeof(range)));
			return buf;
		}
		return tdbo_limit_ok(k->lim, *v) ? NULL :
		       "not a power of two";
	}
	if (rc == NUM_RANGE || *v < k->min || *v > k->max) {
		snprintf(buf, buflen, "out of range %s", k->range);
		return buf;
	}
	if (k->pow2 && (*v & (*v - 1)))
		return "not a power of two";
	return NULL;
}

static void store_number(const struct key *k, struct tdbd_config *c,
			 uint64_t v)
{
	char *p = (char *)c + k->off;

	if (k->width == sizeof(uint64_t)) {
		uint64_t x = v;

		memcpy(p, &x, sizeof(x));
	} else {
		uint32_t x = (uint32_t)v;   /* ranges keep it in 32 bits */

		memcpy(p, &x, sizeof(x));
	}
}

/* Check value for key k; store it into c only if it is good. */
static const char *set_key(const struct key *k, struct tdbd_config *c,
			   const char *value, char *buf, size_t buflen)
{
	size_t len = strlen(value);
	const char *why;
	uint64_t v = 0;     /* set by parse_number (gcc -O3 cannot tell) */
	bool b;
	int lvl;

	switch (k->type) {
	case K_SOCKET:
	case K_DIR:
		why = check_path(k, value, len);
		break;
	case K_GROUP:
		why = check_group(value, len);
		break;
	case K_BOOL:
		if (!(why = parse_bool(value, &b)))
			*(bool *)((char *)c + k->off) = b;
		return why;
	case K_LEVEL:
		if (!(why = parse_level(value, &lvl)))
			c->log_level = lvl;
		return why;
	case K_SYNC:
		if (!strcmp(value, "always"))
			c->sync = 0;
		else if (!strcmp(value, "batch"))
			c->sync = 1;
		else if (!strcmp(value, "none"))
			c->sync = 2;
		else
			return "not a sync mode (always, batch or none)";
		return NULL;
	case K_BACKEND:
		if (!strcmp(value, "daemon"))
			c->backend = TDBD_BACKEND_DAEMON;
		else if (!strcmp(value, "kernel"))
			c->backend = TDBD_BACKEND_KERNEL;
		else
			return "not a backend (daemon or kernel)";
		return NULL;
	default:
		if (!(why = parse_number(k, value, &v, buf, buflen)))
			store_number(k, c, v);
		return why;
	}
	if (!why) {
		/* zero-padded, so equal settings are equal bytes */
		memset((char *)c + k->off, 0, k->width);
		memcpy((char *)c + k->off, value, len);  /* fits: checked */
	}
	return why;
}

int tdbd_config_set(struct tdbd_config *c, const char *key,
		    const char *value, char *err, size_t errlen)
{
	char shown[SHOW_LEN], buf[128];
	const struct key *k;
	const char *why;

	k = key ? key_find(key, strlen(key)) : NULL;
	if (!k) {
		msg(err, errlen, "unknown key '%s'",
		    key ? show(shown, key, strlen(key)) : "(null)");
		return -ENOENT;
	}
	if (!value) {
		msg(err, errlen, "%s: missing value", k->name);
		return -EINVAL;
	}
	why = set_key(k, c, value, buf, sizeof(buf));
	if (why) {
		msg(err, errlen, "%s: %s (%s)", k->name, why,
		    show(shown, value, strlen(value)));
		return -EINVAL;
	}
	return 0;
}

/* --- the file ------------------------------------------------------------ */

static bool blank(char ch)
{
	return ch == ' ' || ch == '\t';
}

/*
 * The value after '=': quoted (escapes \" and \\; then only blanks or a
 * comment may follow) or bare (up to the end or a '#' that starts the
 * value or follows a blank; no blanks or '"' inside).  Unquoted in place.
 * Returns NULL and *val, or the reason.
 */
static const char *take_value(char *s, char **val)
{
	char *o, *end;

	while (blank(*s))
		s++;
	if (!*s || *s == '#')
		return "missing value";
	if (*s != '"') {
		for (end = s; *end && !(*end == '#' && blank(end[-1])); end++)
			if (*end == '"')
				return "'\"' in an unquoted value (quote "
				       "the whole value, escape it as \\\")";
		while (blank(end[-1]))
			end--;
		*end = '\0';
		for (o = s; *o; o++)
			if (blank(*o))
				return "blank in an unquoted value (quote it)";
		*val = s;
		return NULL;
	}
	*val = o = ++s;
	for (; *s != '"'; s++) {
		if (!*s)
			return "unterminated quote";
		if (*s == '\\') {
			s++;
			if (*s != '"' && *s != '\\')
				return "bad escape in quoted value (only \\\" "
				       "and \\\\)";
		}
		*o++ = *s;
	}
	*o = '\0';
	for (s++; blank(*s); s++)
		;
	if (*s && *s != '#')
		return "text after the closing quote";
	return NULL;
}

struct file_state {
	const char *path;
	struct tdbd_config *c;      /* the copy being built */
	unsigned int first[NKEYS];  /* line each key was set on, 0 = not */
	char *err;
	size_t errlen;
};

/* One line, NUL-terminated, '\n' and any final '\r' removed. */
static int do_line(struct file_state *f, char *s, unsigned int ln)
{
	char shown[SHOW_LEN], why[512];
	const struct key *k;
	char *key, *eq, *end, *val;
	const char *bad;

	while (blank(*s))
		s++;
	if (!*s || *s == '#')
		return 0;
	eq = strchr(s, '=');
	if (!eq) {
		msg(f->err, f->errlen, "%s:%u: missing '='", f->path, ln);
		return -EINVAL;
	}
	key = s;
	for (end = eq; end > key && blank(end[-1]); end--)
		;
	if (end == key) {
		msg(f->err, f->errlen, "%s:%u: missing key before '='",
		    f->path, ln);
		return -EINVAL;
	}
	k = key_find(key, (size_t)(end - key));
	if (!k) {
		msg(f->err, f->errlen, "%s:%u: unknown key '%s'", f->path, ln,
		    show(shown, key, (size_t)(end - key)));
		return -EINVAL;
	}
	if (f->first[k - keys]) {
		msg(f->err, f->errlen, "%s:%u: duplicate key '%s' (first on "
		    "line %u)", f->path, ln, k->name, f->first[k - keys]);
		return -EINVAL;
	}
	f->first[k - keys] = ln;
	bad = take_value(eq + 1, &val);
	if (bad) {
		msg(f->err, f->errlen, "%s:%u: %s: %s", f->path, ln, k->name,
		    bad);
		return -EINVAL;
	}
	if (tdbd_config_set(f->c, k->name, val, why, sizeof(why))) {
		msg(f->err, f->errlen, "%s:%u: %s", f->path, ln, why);
		return -EINVAL;
	}
	return 0;
}

/* Split what read() gives into lines of at most TDBD_LINE_MAX bytes. */
static int read_lines(struct file_state *f, int fd)
{
	char line[TDBD_LINE_MAX + 2], buf[4096];   /* + '\r', NUL */
	unsigned int ln = 1;
	size_t len = 0;
	ssize_t n, i;
	int rc;

	for (;;) {
		n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = -errno;
			msg(f->err, f->errlen, "%s: %s", f->path,
			    strerror(-rc));
			return rc;
		}
		if (n == 0)
			break;
		for (i = 0; i < n; i++) {
			if (buf[i] == '\n') {
				line[len] = '\0';
				if (len && line[len - 1] == '\r')
					line[len - 1] = '\0';
				/* a UTF-8 byte order mark some editors add */
				if (ln == 1 && !strncmp(line, "\xef\xbb\xbf", 3))
					rc = do_line(f, line + 3, ln);
				else
					rc = do_line(f, line, ln);
				if (rc)
					return rc;
				ln++;
				len = 0;
			} else if (buf[i] == '\0') {
				msg(f->err, f->errlen, "%s:%u: contains a NUL "
				    "byte (not a text file?)", f->path, ln);
				return -EINVAL;
			} else if (len == TDBD_LINE_MAX + 1 ||
				   (len == TDBD_LINE_MAX && buf[i] != '\r')) {
				/* the limit does not count a CRLF's '\r' */
				msg(f->err, f->errlen, "%s:%u: line longer than "
				    "%d bytes", f->path, ln, TDBD_LINE_MAX);
				return -EINVAL;
			} else {
				line[len++] = buf[i];
			}
		}
	}
	if (!len)
		return 0;
	line[len] = '\0';           /* last line without a '\n' */
	if (line[len - 1] == '\r')
		line[len - 1] = '\0';
	if (ln == 1 && !strncmp(line, "\xef\xbb\xbf", 3))
		return do_line(f, line + 3, ln);
	return do_line(f, line, ln);
}

int tdbd_config_load(struct tdbd_config *c, const char *path, char *err,
		     size_t errlen)
{
	struct tdbd_config tmp = *c;
	struct file_state f = { .path = path, .c = &tmp, .err = err,
				.errlen = errlen };
	struct stat st;
	int fd, rc;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		rc = -errno;
		msg(err, errlen, "%s: %s", path, strerror(-rc));
		return rc;
	}
	if (fstat(fd, &st)) {
		rc = -errno;
		msg(err, errlen, "%s: %s", path, strerror(-rc));
	} else if (S_ISDIR(st.st_mode)) {
		rc = -EISDIR;
		msg(err, errlen, "%s: is a directory, not a file", path);
	} else {
		rc = read_lines(&f, fd);
	}
	close(fd);
	if (!rc)
		*c = tmp;
	return rc;
}

/* --- the command line ---------------------------------------------------- */

enum opt { O_KEY, O_CONFIG, O_CHECK, O_HELP, O_VERSION, O_NONE };

static enum opt opt_find(const char *name, size_t len, const struct key **k)
{
	static const char *const names[] = {
		[O_CONFIG] = "config", [O_CHECK] = "check-config",
		[O_HELP] = "help", [O_VERSION] = "version",
	};
	int i;

	for (i = O_CONFIG; i < O_NONE; i++)
		if (strlen(names[i]) == len && !memcmp(names[i], name, len))
			return (enum opt)i;
	*k = key_find(name, len);
	return *k ? O_KEY : O_NONE;
}

/*
 * Walk argv once: flags and the --config path into *a, key options set
 * on *c in argv order (the last of a repeated option wins).  The same
 * argv gives the same result every time: this is called twice per
 * tdbd_config_from_args, first to check everything and find --config,
 * then to lay the options over the file.
 */
static int walk_args(int argc, char *const argv[], struct tdbd_args *a,
		     const char **cfg_opt, struct tdbd_config *c, char *err,
		     size_t errlen)
{
	char shown[SHOW_LEN], why[512];
	const struct key *k = NULL;
	const char *arg, *name, *eq, *val;
	size_t nlen;
	enum opt o;
	int i;

	for (i = 1; i < argc && argv[i]; i++) {
		arg = argv[i];
		if (!strcmp(arg, "-h") || !strcmp(arg, "-V")) {
			*(arg[1] == 'h' ? &a->help : &a->version) = true;
			continue;
		}
		if (!strcmp(arg, "--")) {
			if (i + 1 < argc && argv[i + 1]) {
				arg = argv[i + 1];
				goto unexpected;
			}
			break;
		}
		if (arg[0] != '-' || !arg[1])
			goto unexpected;
		if (arg[1] != '-') {
			msg(err, errlen, "unknown option %s",
			    show(shown, arg, strlen(arg)));
			return -EINVAL;
		}
		name = arg + 2;
		eq = strchr(name, '=');
		nlen = eq ? (size_t)(eq - name) : strlen(name);
		o = opt_find(name, nlen, &k);
		if (o == O_NONE) {
			/* "--=x": show the whole argument, not "" */
			msg(err, errlen, "unknown option --%s", nlen ?
			    show(shown, name, nlen) :
			    show(shown, name, strlen(name)));
			return -EINVAL;
		}
		if (o == O_CHECK || o == O_HELP || o == O_VERSION) {
			if (eq) {
				msg(err, errlen, "--%.*s takes no value",
				    (int)nlen, name);
				return -EINVAL;
			}
			*(o == O_CHECK ? &a->check : o == O_HELP ? &a->help :
			  &a->version) = true;
			continue;
		}
		if (eq) {
			val = eq + 1;
		} else if (i + 1 < argc && argv[i + 1]) {
			val = argv[++i];
		} else {
			msg(err, errlen, "--%s needs a value", name);
			return -EINVAL;
		}
		if (o == O_CONFIG) {
			if (!*val) {
				msg(err, errlen, "--config: empty path");
				return -EINVAL;
			}
			*cfg_opt = val;
		} else if (tdbd_config_set(c, k->name, val, why,
					   sizeof(why))) {
			msg(err, errlen, "--%s", why);
			return -EINVAL;
		}
	}
	return 0;
unexpected:
	msg(err, errlen, "unexpected argument '%s' (options are --key VALUE)",
	    show(shown, arg, strlen(arg)));
	return -EINVAL;
}

int tdbd_config_from_args(struct tdbd_config *c, int argc, char *const argv[],
			  struct tdbd_args *args, char *err, size_t errlen)
{
	struct tdbd_config tmp;
	struct tdbd_args a = { 0 };
	const char *cfg_opt = NULL, *path;
	int rc;

	/* 1: every option checked, --config found, nothing read yet */
	tdbd_config_defaults(&tmp);
	rc = walk_args(argc, argv, &a, &cfg_opt, &tmp, err, errlen);
	if (rc)
		return rc;
	if (a.help || a.version) {  /* no file needed to print these */
		*c = tmp;
		*args = a;
		return 0;
	}
	/* 2: defaults, then the file, then the options over it */
	tdbd_config_defaults(&tmp);
	path = cfg_opt ? cfg_opt : TDBD_CONFIG_DEFAULT;
	rc = tdbd_config_load(&tmp, path, err, errlen);
	if (rc == -ENOENT && !cfg_opt)
		path = NULL;            /* the default file is optional */
	else if (rc)
		return rc;
	rc = walk_args(argc, argv, &a, &cfg_opt, &tmp, err, errlen);
	if (rc)
		return rc;              /* cannot happen: pass 1 accepted */
	a.config_path = path;
	*c = tmp;
	*args = a;
	return 0;
}

const char *tdbd_config_usage(void)
{
	return
"Usage: tdbd [OPTION]...\n"
"The tdb daemon: serves tdb tables to processes on this host over a Unix\n"
"socket and shared rings.\n"
"\n"
"  --config PATH          the settings file (default " TDBD_CONFIG_DEFAULT ",\n"
"                         read only if it exists; one named here must exist)\n"
"  --check-config         check the settings, say which file they came from,\n"
"                         and exit\n"
"  -h, --help             print this help and exit\n"
"  -V, --version          print the version and exit\n"
"\n"
"Settings: `key = value` in the file, --key VALUE or --key=VALUE here.  The\n"
"command line beats the file, the file beats the defaults.  (R): takes\n"
"effect at restart only; the others also at reload (SIGHUP).\n"
"\n"
"  --socket PATH          (R) the Unix socket: absolute, under 108 bytes\n"
"                         (default /run/tdb/tdbd.sock)\n"
"  --socket-mode MODE     the socket's mode, octal, <= 0777 (default 0660)\n"
"  --socket-group GROUP   the socket's group, a name or number; \"\" = the\n"
"                         daemon's group (default \"\")\n"
"  --data-dir DIR         (R) where tables live, absolute; \"\" = a scratch\n"
"                         directory removed at exit (default \"\")\n"
"  --workers N            (R) threads serving rings, 1..64 (default 1)\n"
"  --ring-size SIZE       (R) bytes per client ring, a power of two,\n"
"                         4M..256M (default 4M)\n"
"  --feed-size SIZE       (R) bytes per table change feed, a power of two,\n"
"                         4M..1G (default 4M)\n"
"  --hugepages BOOL       (R) try hugetlb memfds for rings (default yes)\n"
"  --client-deadline TIME cut off a client that leaves its completions\n"
"                         undrained this long, 1ms..60m (default 10s)\n"
"  --max-clients N        clients at once, 1..65536 (default 1024)\n"
"  --max-txn-ops N        changes per transaction, 1..1048576\n"
"                         (default 65536)\n"
"  --max-txn-bytes SIZE   bytes buffered per transaction, 1K..4G\n"
"                         (default 64M)\n"
"  --max-txns N           open transactions per client, 1..1024\n"
"                         (default 16)\n"
"  --max-clients-per-uid N clients of one user at once, 1..65536\n"
"                         (default 64)\n"
"  --max-tables-per-uid N tables one user may own, 1..4000 (default 256)\n"
"                         The per-user limits (max-*-per-uid) also take 0:\n"
"                         no limit (max-data-per-uid: half of max-memory).\n"
"  --max-reserve-per-uid SIZE address space the tables of one user may\n"
"                         reserve (max-extents x 2M each), 4M..128T\n"
"                         (default 256G)\n"
"  --max-reserve SIZE     the same for all tables, 4M..128T (default 16T)\n"
"  --max-txn-memory-per-uid SIZE bytes the open transactions of one user\n"
"                         may buffer, 1M..1T (default 256M)\n"
"  --max-txn-memory SIZE  the same for all transactions, 1M..1T\n"
"                         (default 1G)\n"
"  --max-snapshot-memory-per-uid SIZE old values the snapshot scans of\n"
"                         one user may keep, 1M..1T (default 512M)\n"
"  --max-data-per-uid SIZE table memory (extents) of the tables one user\n"
"                         owns, 0..16T, 0 = half of max-memory\n"
"                         (default 0)\n"
"  --max-ring-memory-per-uid SIZE ring memory of one user's connections\n"
"                         (2 x ring-size each), 8M..1T (default 1G)\n"
"  --max-ring-memory SIZE the same for all connections, 8M..16T\n"
"                         (default 8G)\n"
"  --max-watches-per-uid N watches of one user's connections,\n"
"                         1..1048576 (default 4096)\n"
"  --max-watches-total N  watches in all, 1..1048576 (default 16384)\n"
"                         Root is exempt from the per-user limits; the\n"
"                         last eighth of max-clients, max-reserve,\n"
"                         max-txn-memory, max-tables, max-memory's\n"
"                         table data, max-ring-memory and\n"
"                         max-watches-total is kept for root.\n"
"  --max-watches N        watches per client, 1..65536 (default 1024)\n"
"  --max-tables N         tables at once, 1..4000 (the checkpoint store's\n"
"                         most; the last eighth is kept for root)\n"
"                         (default 4000)\n"
"  --max-snapshot-bytes SIZE (R) old values a snapshot scan may keep for\n"
"                         keys changed during it, 1K..64G (default 256M)\n"
"  --max-snapshot-memory SIZE old values all snapshot scans together may\n"
"                         keep, 1M..1T (default 1G)\n"
"  --max-memory SIZE      table extents, transactions, snapshots, change\n"
"                         feeds and client rings in all; past it writes\n"
"                         that add data fail (-ENOMEM), reads and deletes\n"
"                         go on; 0..16T, 0 = 3/4 of the physical memory\n"
"                         (default 0)\n"
"  --table-mode MODE      mode of new tables when the creator gives none,\n"
"                         octal, <= 0777 (default 0600)\n"
"  --idle-spin TIME       how long a worker polls before it sleeps,\n"
"                         0..100ms (default 50us)\n"
"  --reader-lease TIME    longest a writer waits for a client stuck in a\n"
"                         read section of a mapped table, 1ms..60s\n"
"                         (default 100ms)\n"
"  --log-level LEVEL      error, warning, notice, info or debug\n"
"                         (default info)\n"
"  --sync MODE            (R) always: a change is acknowledged once its WAL\n"
"                         record is on disk; batch: once written, synced\n"
"                         within batch-interval (a power cut loses at most\n"
"                         that); none: once written, synced by the kernel\n"
"                         (default always; docs/DURABILITY.md)\n"
"  --batch-interval TIME  (R) batch: longest a written record waits for\n"
"                         its fdatasync, 1ms..10s (default 10ms)\n"
"  --wal-segment-size SIZE (R) WAL segment files, 1M..1G (default 64M)\n"
"  --checkpoint-interval TIME (R) checkpoint into LMDB this often when\n"
"                         anything changed, 1s..1440m (default 5m)\n"
"  --checkpoint-wal-size SIZE (R) ... or after this much WAL, 1M..64G\n"
"                         (default 256M)\n"
"  --checkpoint-run-size SIZE (R) kernel mode: the changes one checkpoint\n"
"                         run gathers before it is written and committed\n"
"                         (tdbd's memory for a checkpoint), 1M..16G\n"
"                         (default 64M)\n"
"  --backend MODE         (R) daemon: tdbd keeps the tables and serves\n"
"                         clients on its socket; kernel: tdb.ko keeps them\n"
"                         and tdbd makes them durable (its supervisor, no\n"
"                         socket; docs/DURABILITY.md) (default daemon)\n"
"  --wal-truncate-damaged BOOL (R) at start, cut a damaged WAL at the\n"
"                         damage (losing what follows) instead of refusing\n"
"                         to start (default no)\n"
"\n"
"SIZE: bytes, or a number with K, M, G or T (powers of 1024).  TIME: for\n"
"client-deadline, reader-lease, batch-interval and checkpoint-interval\n"
"ms, s or m\n"
"(bare = ms); for idle-spin us or ms (bare =\n"
"us).  BOOL: yes/no, true/false, on/off, 1/0.  MODE: octal (0660 or 660).\n"
"See docs/CONFIG.md.\n";
}

/* --- reload -------------------------------------------------------------- */

static bool key_differs(const struct key *k, const struct tdbd_config *a,
			const struct tdbd_config *b)
{
	const char *pa = (const char *)a + k->off;
	const char *pb = (const char *)b + k->off;

	switch (k->type) {
	case K_SOCKET:
	case K_DIR:
	case K_GROUP:
		/* bytes after the NUL may differ */
		return strncmp(pa, pb, k->width) != 0;
	case K_BOOL:
		return *(const bool *)pa != *(const bool *)pb;
	default:
		return memcmp(pa, pb, k->width) != 0;
	}
}

/* Append name to a ", "-separated list; a list that does not fit ends
 * in "..." (when there is room for it) rather than in half a name. */
static void list_add(char *list, size_t len, size_t *used, const char *name)
{
	int n;

	if (!len || *used >= len)
		return;
	n = snprintf(list + *used, len - *used, "%s%s", *used ? ", " : "",
		     name);
	if (n >= 0 && (size_t)n < len - *used) {
		*used += (size_t)n;
		return;
	}
	list[*used] = '\0';
	if (len - *used > 3)
		memcpy(list + *used, "...", 4);
	*used = len;                /* full: add nothing more */
}

void tdbd_config_diff(const struct tdbd_config *old,
		      const struct tdbd_config *new_, char *changed,
		      size_t changed_len, char *restart, size_t restart_len)
{
	size_t cu = 0, ru = 0, i;

	if (changed_len)
		changed[0] = '\0';
	if (restart_len)
		restart[0] = '\0';
	for (i = 0; i < NKEYS; i++) {
		if (!key_differs(&keys[i], old, new_))
			continue;
		list_add(changed, changed_len, &cu, keys[i].name);
		if (keys[i].restart)
			list_add(restart, restart_len, &ru, keys[i].name);
	}
}
