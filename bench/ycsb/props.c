// SPDX-License-Identifier: GPL-2.0-only
/*
 * props.c - YCSB's workload properties for tdb-bench-ycsb (driver.h):
 * CoreWorkload's defaults, property files (-P, Java .properties syntax:
 * `name=value` or `name: value`, `#` and `!` comments) and -p settings
 * into struct ycsb_conf, each value checked with an error naming the
 * property.  A property tdb-bench-ycsb does not use is ignored with a
 * note, as YCSB ignores what its workload does not read.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"

void ycsb_conf_defaults(struct ycsb_conf *c)
{
	*c = (struct ycsb_conf){
		.recordcount = 1000, .operationcount = 1000,
		.fieldcount = 10, .fieldlength = 100,
		.readallfields = true, .writeallfields = false,
		.readproportion = 0.95, .updateproportion = 0.05,
		.requestdistribution = YCSB_UNIFORM,
		.scanlengthdistribution = YCSB_UNIFORM,
		.minscanlength = 1, .maxscanlength = 1000,
		.zipfianconstant = 0.99, .zeropadding = 1,
		.threads = 1, .batch = 1,
	};
}

static const char *const dist_names[] = {
	[YCSB_UNIFORM] = "uniform", [YCSB_ZIPFIAN] = "zipfian",
	[YCSB_LATEST] = "latest", [YCSB_HOTSPOT] = "hotspot",
	[YCSB_SEQUENTIAL] = "sequential", [YCSB_EXPONENTIAL] = "exponential",
};

const char *ycsb_dist_name(enum ycsb_dist d)
{
	return (unsigned int)d < sizeof(dist_names) / sizeof(*dist_names) ?
		dist_names[d] : "?";
}

static int bad(char *msg, const char *name, const char *value,
	       const char *want)
{
	ycsb_msgf(msg, "property %s=%s: %s", name, value, want);
	return -EINVAL;
}

static int get_u64(const char *name, const char *v, uint64_t min,
		   uint64_t max, uint64_t *out, char *msg)
{
	char *end;
	unsigned long long n;

	errno = 0;
	n = strtoull(v, &end, 10);
	if (!*v || *end || errno || *v == '-' || n < min || n > max) {
		char want[96];

		snprintf(want, sizeof(want), "want a whole number from %llu "
			 "to %llu", (unsigned long long)min,
			 (unsigned long long)max);
		return bad(msg, name, v, want);
	}
	*out = n;
	return 0;
}

static int get_uint(const char *name, const char *v, unsigned int min,
		    unsigned int max, unsigned int *out, char *msg)
{
	uint64_t n;
	int err = get_u64(name, v, min, max, &n, msg);

	if (!err)
		*out = (unsigned int)n;
	return err;
}

static int get_prop(const char *name, const char *v, double *out, char *msg)
{
	char *end;
	double d;

	errno = 0;
	d = strtod(v, &end);
	if (!*v || *end || errno || !(d >= 0 && d <= 1))
		return bad(msg, name, v, "want a proportion from 0 to 1");
	*out = d;
	return 0;
}

static int get_bool(const char *name, const char *v, bool *out, char *msg)
{
	if (!strcasecmp(v, "true"))
		*out = true;
	else if (!strcasecmp(v, "false"))
		*out = false;
	else
		return bad(msg, name, v, "want true or false");
	return 0;
}

static int get_dist(const char *name, const char *v, bool scan,
		    enum ycsb_dist *out, char *msg)
{
	for (unsigned int i = 0; i < sizeof(dist_names) / sizeof(*dist_names);
	     i++) {
		if (strcmp(v, dist_names[i]))
			continue;
		if (scan && i != YCSB_UNIFORM && i != YCSB_ZIPFIAN)
			return bad(msg, name, v, "a scan length is uniform "
				   "or zipfian (YCSB allows no other)");
		if (i == YCSB_HOTSPOT || i == YCSB_EXPONENTIAL)
			return bad(msg, name, v, "not supported by "
				   "tdb-bench-ycsb (uniform, zipfian, latest, "
				   "sequential are)");
		*out = (enum ycsb_dist)i;
		return 0;
	}
	return bad(msg, name, v, scan ? "want uniform or zipfian" :
		   "want uniform, zipfian, latest or sequential");
}

/* Properties of YCSB that change nothing here: silently accepted when
 * they say what tdb-bench-ycsb does anyway. */
static int known_same(const char *name, const char *v, char *msg)
{
	if (!strcmp(name, "workload")) {
		if (strstr(v, "CoreWorkload"))
			return 0;
		return bad(msg, name, v, "only CoreWorkload's properties are "
			   "understood");
	}
	if (!strcmp(name, "fieldlengthdistribution")) {
		if (!strcmp(v, "constant"))
			return 0;
		return bad(msg, name, v, "only constant field lengths are "
			   "supported");
	}
	if (!strcmp(name, "insertstart")) {
		if (!strcmp(v, "0"))
			return 0;
		return bad(msg, name, v, "only 0 is supported (one client "
			   "machine loads everything)");
	}
	if (!strcmp(name, "table") || !strcmp(name, "dataintegrity"))
		return 0;
	return 1;
}

int ycsb_prop_set(struct ycsb_conf *c, const char *n, const char *v,
		  char *msg)
{
	uint64_t u;
	int err;

	if (!strcmp(n, "recordcount"))
		return get_u64(n, v, 1, 1ull << 40, &c->recordcount, msg);
	if (!strcmp(n, "operationcount"))
		return get_u64(n, v, 0, 1ull << 40, &c->operationcount, msg);
	if (!strcmp(n, "fieldcount"))
		return get_uint(n, v, 1, 1024, &c->fieldcount, msg);
	if (!strcmp(n, "fieldlength"))
		return get_uint(n, v, 1, 1 << 20, &c->fieldlength, msg);
	if (!strcmp(n, "readallfields"))
		return get_bool(n, v, &c->readallfields, msg);
	if (!strcmp(n, "writeallfields"))
		return get_bool(n, v, &c->writeallfields, msg);
	if (!strcmp(n, "readproportion"))
		return get_prop(n, v, &c->readproportion, msg);
	if (!strcmp(n, "updateproportion"))
		return get_prop(n, v, &c->updateproportion, msg);
	if (!strcmp(n, "insertproportion"))
		return get_prop(n, v, &c->insertproportion, msg);
	if (!strcmp(n, "scanproportion"))
		return get_prop(n, v, &c->scanproportion, msg);
	if (!strcmp(n, "readmodifywriteproportion"))
		return get_prop(n, v, &c->readmodifywriteproportion, msg);
	if (!strcmp(n, "requestdistribution"))
		return get_dist(n, v, false, &c->requestdistribution, msg);
	if (!strcmp(n, "scanlengthdistribution"))
		return get_dist(n, v, true, &c->scanlengthdistribution, msg);
	if (!strcmp(n, "minscanlength"))
		return get_uint(n, v, 1, 1 << 24, &c->minscanlength, msg);
	if (!strcmp(n, "maxscanlength"))
		return get_uint(n, v, 1, 1 << 24, &c->maxscanlength, msg);
	if (!strcmp(n, "zeropadding"))
		return get_uint(n, v, 1, YCSB_KEY_MAX - 4, &c->zeropadding,
				msg);
	if (!strcmp(n, "threadcount"))
		return get_uint(n, v, 1, YCSB_PROCS_MAX, &c->threads, msg);
	if (!strcmp(n, "batch") || !strcmp(n, "tdb.batch") ||
	    !strcmp(n, "redis.pipeline"))
		return get_uint(n, v, 1, 1024, &c->batch, msg);
	if (!strcmp(n, "insertorder")) {
		if (strcmp(v, "hashed") && strcmp(v, "ordered"))
			return bad(msg, n, v, "want hashed or ordered");
		c->orderedinserts = !strcmp(v, "ordered");
		return 0;
	}
	if (!strcmp(n, "zipfianconstant")) {
		char *end;
		double d = strtod(v, &end);

		if (!*v || *end || !(d > 0 && d < 1))
			return bad(msg, n, v, "want a number between 0 and 1 "
				   "(exclusive)");
		c->zipfianconstant = d;
		return 0;
	}
	if (!strcmp(n, "insertcount")) {
		err = get_u64(n, v, 0, 1ull << 40, &u, msg);
		if (!err && u != c->recordcount)
			return bad(msg, n, v, "only recordcount is supported "
				   "(set recordcount instead)");
		return err;
	}
	err = known_same(n, v, msg);
	if (err == 1)
		ycsb_msgf(msg, "property %s is not used by tdb-bench-ycsb "
			  "(ignored)", n);
	return err;
}

static char *trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = 0;
	return s;
}

/* One line of a file or a -p argument: name=value, name: value or
 * name value (Java's .properties). */
static int set_line(struct ycsb_conf *c, char *line, char *msg)
{
	char *s = trim(line), *sep, *val;

	if (!*s || *s == '#' || *s == '!')
		return 0;
	sep = s + strcspn(s, "=: \t");
	val = sep + strspn(sep, " \t");
	if (*val == '=' || *val == ':')
		val++;
	if (!*sep) {
		ycsb_msgf(msg, "property %s has no value (want name=value)",
			  s);
		return -EINVAL;
	}
	*sep = 0;
	return ycsb_prop_set(c, s, trim(val), msg);
}

int ycsb_prop_arg(struct ycsb_conf *c, const char *arg, char *msg)
{
	char buf[1024];

	if (strlen(arg) >= sizeof(buf)) {
		ycsb_msgf(msg, "-p %.40s...: longer than %zu bytes", arg,
			  sizeof(buf) - 1);
		return -EINVAL;
	}
	strcpy(buf, arg);
	if (!strchr(buf, '=')) {
		ycsb_msgf(msg, "-p %s: want name=value", arg);
		return -EINVAL;
	}
	return set_line(c, buf, msg);
}

int ycsb_props_file(struct ycsb_conf *c, const char *path,
		    void (*note)(void *arg, const char *text), void *arg,
		    char *msg)
{
	FILE *f = fopen(path, "r");
	char line[1024], m[YCSB_MSG];
	unsigned int no = 0;
	int err = 0;

	if (!f) {
		ycsb_msgf(msg, "-P %s: %s", path, strerror(errno));
		return -errno;
	}
	while (!err && fgets(line, sizeof(line), f)) {
		no++;
		m[0] = 0;
		err = set_line(c, line, m);
		if (err == 1) {
			char full[YCSB_MSG + 64];

			snprintf(full, sizeof(full), "%s:%u: %s", path, no, m);
			note(arg, full);
			err = 0;
		} else if (err) {
			ycsb_msgf(msg, "%s:%u: %s", path, no, m);
		}
	}
	fclose(f);
	return err;
}

int ycsb_conf_check(const struct ycsb_conf *c, char *msg)
{
	double sum = c->readproportion + c->updateproportion +
		c->insertproportion + c->scanproportion +
		c->readmodifywriteproportion;

	if (c->operationcount && !(sum > 0)) {
		ycsb_msgf(msg, "every *proportion property is 0: no operation "
			  "to run");
		return -EINVAL;
	}
	if (c->minscanlength > c->maxscanlength) {
		ycsb_msgf(msg, "property minscanlength=%u is above "
			  "maxscanlength=%u", c->minscanlength,
			  c->maxscanlength);
		return -EINVAL;
	}
	if (c->requestdistribution == YCSB_ZIPFIAN &&
	    fabs(c->zipfianconstant - 0.99) > 1e-12) {
		ycsb_msgf(msg, "property zipfianconstant=%g: the scrambled "
			  "zipfian of requestdistribution=zipfian takes "
			  "YCSB's precomputed 0.99 only", c->zipfianconstant);
		return -EINVAL;
	}
	return 0;
}
