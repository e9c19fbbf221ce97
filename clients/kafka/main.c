// SPDX-License-Identifier: GPL-2.0-only
/*
 * main.c - tdb-kafka's command line: `tdb-kafka ship|apply|status` and
 * their options, the log (stderr, one line per event), SIGTERM/SIGINT,
 * systemd's notify socket (READY=1, STATUS=, STOPPING=1), and the
 * librdkafka configuration built from --brokers and --kafka-conf.
 */
#include "kafka.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

volatile sig_atomic_t kf_stop;

void kf_log(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("tdb-kafka: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

/* sd_notify(3) without libsystemd: one datagram to $NOTIFY_SOCKET. */
void kf_notify(const char *fmt, ...)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	char buf[512];
	va_list ap;
	int fd, n;

	if (!path || (path[0] != '/' && path[0] != '@') ||
	    strlen(path) >= sizeof(a.sun_path))
		return;
	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (n >= (int)sizeof(buf))
		n = sizeof(buf) - 1;
	memcpy(a.sun_path, path, strlen(path));
	if (a.sun_path[0] == '@')
		a.sun_path[0] = 0;
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	(void)!sendto(fd, buf, (size_t)n, MSG_NOSIGNAL, (struct sockaddr *)&a,
		      (socklen_t)(offsetof(struct sockaddr_un, sun_path) +
				  strlen(path)));
	close(fd);
}

uint64_t kf_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

rd_kafka_conf_t *kf_conf(const struct kf_opts *o, char *err, size_t errlen)
{
	rd_kafka_conf_t *conf = rd_kafka_conf_new();
	char e2[256], kv[1024], *eq;

	if (o->brokers && rd_kafka_conf_set(conf, "bootstrap.servers",
					    o->brokers, e2, sizeof(e2))) {
		snprintf(err, errlen, "--brokers %s: %s", o->brokers, e2);
		goto bad;
	}
	for (unsigned int i = 0; i < o->nconf; i++) {
		snprintf(kv, sizeof(kv), "%s", o->conf[i]);
		eq = strchr(kv, '=');
		if (!eq) {
			snprintf(err, errlen, "--kafka-conf %s: not KEY=VALUE",
				 o->conf[i]);
			goto bad;
		}
		*eq = 0;
		if (rd_kafka_conf_set(conf, kv, eq + 1, e2, sizeof(e2))) {
			snprintf(err, errlen, "--kafka-conf %s: %s",
				 o->conf[i], e2);
			goto bad;
		}
	}
	return conf;
bad:
	rd_kafka_conf_destroy(conf);
	return NULL;
}

const char *kf_topic(const struct kf_opts *o, const char *table, char *buf,
		     size_t len)
{
	for (unsigned int i = 0; i < o->nmaps; i++)
		if (!strcmp(o->maps[i].table, table))
			return o->maps[i].topic;
	snprintf(buf, len, "%s%s", o->prefix, table);
	return buf;
}

static void usage(FILE *f)
{
	fputs(
"usage: tdb-kafka ship --data-dir DIR --state-dir DIR [options]\n"
"       tdb-kafka apply [options]\n"
"       tdb-kafka status --state-dir DIR\n"
"\n"
"ship: tdbd's WAL (DIR/wal), records made durable, into Kafka topics.\n"
"apply: those topics into a local tdbd (a replica), transactions whole.\n"
"status: the shipper's position and lag (its status file).\n"
"\n"
"  -s, --socket PATH      tdbd's socket (default $TDB_SOCKET, else\n"
"                         /run/tdb/tdbd.sock)\n"
"  -d, --data-dir DIR     ship: tdbd's data directory (read only)\n"
"  -S, --state-dir DIR    ship: where the position and status live\n"
"  -b, --brokers LIST     Kafka's bootstrap servers (host:port,...)\n"
"  -X, --kafka-conf K=V   a librdkafka property (repeatable)\n"
"  -p, --topic-prefix P   topic of table T: P T (default \"tdb.\")\n"
"  -m, --map TABLE=TOPIC  this table's topic instead (repeatable; apply\n"
"                         reads the topics of --topic-prefix and --map)\n"
"      --snapshot         ship: with no position, or when the WAL it\n"
"                         needs is gone, send a snapshot of every table\n"
"                         first, then the stream after it\n"
"      --batch N          ship: WAL records read per round (10000)\n"
"      --max-inflight N   ship: records produced and not acknowledged\n"
"                         before the shipper waits (100000)\n"
"  -h, --help             this text\n"
"\n"
"Exit: 0 stopped by SIGTERM/SIGINT, 1 an error (named on stderr), 2 bad\n"
"usage.  tdb-kafka(1).\n", f);
}

static int add_map(struct kf_opts *o, const char *arg)
{
	const char *eq = strchr(arg, '=');
	struct kf_map *m;

	if (!eq || eq == arg || !eq[1]) {
		fprintf(stderr, "tdb-kafka: --map %s: not TABLE=TOPIC\n", arg);
		return -EINVAL;
	}
	m = realloc(o->maps, (o->nmaps + 1) * sizeof(*m));
	if (!m)
		return -ENOMEM;
	o->maps = m;
	m[o->nmaps].table = strndup(arg, (size_t)(eq - arg));
	m[o->nmaps].topic = strdup(eq + 1);
	if (!m[o->nmaps].table || !m[o->nmaps].topic)
		return -ENOMEM;
	o->nmaps++;
	return 0;
}

static int num_opt(const char *name, const char *arg, unsigned int *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(arg, &end, 10);
	if (errno || *end || !v || v > 100000000) {
		fprintf(stderr, "tdb-kafka: %s %s: not a number in "
			"1..100000000\n", name, arg);
		return -EINVAL;
	}
	*out = (unsigned int)v;
	return 0;
}

static int parse(int argc, char **argv, struct kf_opts *o)
{
	static const struct option lo[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "data-dir", required_argument, NULL, 'd' },
		{ "state-dir", required_argument, NULL, 'S' },
		{ "brokers", required_argument, NULL, 'b' },
		{ "kafka-conf", required_argument, NULL, 'X' },
		{ "topic-prefix", required_argument, NULL, 'p' },
		{ "map", required_argument, NULL, 'm' },
		{ "snapshot", no_argument, NULL, 1 },
		{ "batch", required_argument, NULL, 2 },
		{ "max-inflight", required_argument, NULL, 3 },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "s:d:S:b:X:p:m:h", lo,
				NULL)) != -1) {
		switch (c) {
		case 's': o->socket = optarg; break;
		case 'd': o->data_dir = optarg; break;
		case 'S': o->state_dir = optarg; break;
		case 'b': o->brokers = optarg; break;
		case 'p': o->prefix = optarg; break;
		case 'X':
			if (o->nconf == KF_CONF_MAX) {
				fprintf(stderr, "tdb-kafka: more than %d "
					"--kafka-conf\n", KF_CONF_MAX);
				return -EINVAL;
			}
			o->conf[o->nconf++] = optarg;
			break;
		case 'm':
			if (add_map(o, optarg))
				return -EINVAL;
			break;
		case 1: o->snapshot = true; break;
		case 2:
			if (num_opt("--batch", optarg, &o->batch))
				return -EINVAL;
			break;
		case 3:
			if (num_opt("--max-inflight", optarg,
				    &o->max_inflight))
				return -EINVAL;
			break;
		case 'h': usage(stdout); exit(0);
		default: return -EINVAL;
		}
	}
	return optind < argc ? -EINVAL : 0;
}

static void on_signal(int sig)
{
	(void)sig;
	kf_stop = 1;
}

int main(int argc, char **argv)
{
	struct kf_opts o = { .prefix = "tdb.", .batch = 10000,
			     .max_inflight = 100000 };
	struct sigaction sa = { .sa_handler = on_signal };
	const char *cmd;
	int rc;

	if (argc < 2 || !strcmp(argv[1], "-h") ||
	    !strcmp(argv[1], "--help")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	cmd = argv[1];
	if (parse(argc - 1, argv + 1, &o)) {
		usage(stderr);
		return 2;
	}
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (!strcmp(cmd, "ship")) {
		if (!o.data_dir || !o.state_dir) {
			fprintf(stderr, "tdb-kafka ship: --data-dir and "
				"--state-dir are needed\n");
			return 2;
		}
		rc = kf_ship(&o);
	} else if (!strcmp(cmd, "apply")) {
		rc = kf_apply(&o);
	} else if (!strcmp(cmd, "status")) {
		if (!o.state_dir) {
			fprintf(stderr, "tdb-kafka status: --state-dir is "
				"needed\n");
			return 2;
		}
		rc = kf_status_print(o.state_dir);
	} else {
		fprintf(stderr, "tdb-kafka: unknown command %s (ship, apply, "
			"status)\n", cmd);
		return 2;
	}
	for (unsigned int i = 0; i < o.nmaps; i++) {
		free(o.maps[i].table);
		free(o.maps[i].topic);
	}
	free(o.maps);
	return rc;
}
