// SPDX-License-Identifier: GPL-2.0-only
/*
 * mock.c - a Kafka for tests/kafka: librdkafka's mock cluster
 * (rdkafka_mock.h) in a process of its own, so that shippers and
 * appliers may come and go.  Prints its bootstrap servers on a line,
 * then takes commands on stdin, one a line:
 *   down ID / up ID     broker ID (1..) stops / starts answering
 *   errs N              the next N Produce requests fail with
 *                       NOT_ENOUGH_REPLICAS (retriable)
 *   quit                (also at end of input)
 * Each command is answered with "ok" on stdout.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

int main(int argc, char **argv)
{
	int brokers = argc > 1 ? atoi(argv[1]) : 1;
	rd_kafka_conf_t *conf = rd_kafka_conf_new();
	rd_kafka_mock_cluster_t *mc;
	char err[256], line[256];
	rd_kafka_t *rk;
	int id;

	rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
	if (!rk) {
		fprintf(stderr, "mock: rd_kafka_new: %s\n", err);
		return 1;
	}
	mc = rd_kafka_mock_cluster_new(rk, brokers);
	if (!mc) {
		fprintf(stderr, "mock: rd_kafka_mock_cluster_new failed\n");
		return 1;
	}
	printf("%s\n", rd_kafka_mock_cluster_bootstraps(mc));
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin)) {
		if (sscanf(line, "down %d", &id) == 1) {
			rd_kafka_mock_broker_set_down(mc, id);
		} else if (sscanf(line, "up %d", &id) == 1) {
			rd_kafka_mock_broker_set_up(mc, id);
		} else if (sscanf(line, "errs %d", &id) == 1) {
			for (int i = 0; i < id; i++)
				rd_kafka_mock_push_request_errors(mc,
					0 /* ProduceRequest */, 1,
					RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS);
		} else if (!strncmp(line, "quit", 4)) {
			break;
		} else {
			fprintf(stderr, "mock: unknown command %s", line);
		}
		printf("ok\n");
		fflush(stdout);
	}
	rd_kafka_mock_cluster_destroy(mc);
	rd_kafka_destroy(rk);
	return 0;
}
