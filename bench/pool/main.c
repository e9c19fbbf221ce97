// SPDX-License-Identifier: GPL-2.0-only
/*
 * tdb-bench-pool - the scratch pool (src/core/pool.c) against its peers on
 * the workloads of the 2015 Tempesta FW pool benchmark.
 *
 * Usage:
 *   tdb-bench-pool [--runs R] [--scale S] [--case LIST] [--peer LIST]
 *                  [--cpu K] [--grow-order K] [--raw]
 *
 *   --runs R     fresh processes per (case, peer); the table shows the
 *                median (default 5)
 *   --scale S    N = 20,000,000 * S (default 1: the seed's N)
 *   --case LIST  comma-separated subset of: small, small-free, big,
 *                big-free, mix, cd (default: all)
 *   --peer LIST  comma-separated subset of: ours, malloc, glib, boost, apr
 *                (default: all)
 *   --cpu K      pin the driver and every case to CPU K
 *   --grow-order K  ours only: cache.grow_order (default TDBE_POOL_GROW_ORDER;
 *                0 = TfwPool's one page per new chunk), for comparison
 *   --raw        also print every sample
 *
 *   tdb-bench-pool --child PEER CASE N   (internal: one case, one process)
 *
 * Every (case, peer) runs in a fresh process: the driver re-executes
 * itself with --child, so no case inherits a heap grown, faulted in or
 * fragmented by another (the seed ran all cases in one process, which made
 * its alloc-only numbers depend on the order of the cases).  The runs are
 * interleaved: run 1 of every cell, then run 2, and so on.
 *
 * Workloads (loops.h; types Small 24 B, Big 240 B, Huge 8305 B):
 *   small, big        alloc-only: N*24/sizeof(T) allocations, each touched
 *   small-free, ...   the same, freeing every 4th object right away
 *   mix               N: Huge every 4096th (freed), Big every 4th (freed),
 *                     else Small (kept)
 *   cd                N/100 pools created, given 100 allocations (Big for
 *                     every 4th pool, else Small) and destroyed
 * Result: nanoseconds per allocation (median), and the ratio peer/ours.
 *
 * Peers: ours (tdbe_pool_* with a 512-page cache), glibc malloc/free,
 * GLib g_slice (GLib >= 2.76 made it plain malloc; the header says which
 * one this binary got), boost::object_pool (boost.cc), APR pools
 * (apr_palloc in a child pool of a parent with its own allocator).
 * malloc and GLib keep their pointers in an array and free them all at
 * the end, inside the timer, as in the seed; the pools' own teardown is
 * outside the timer in the single-pool cases, as in the seed, and inside
 * it for create & destroy.  n/a: boost cannot do the Mix (one type per
 * pool); APR cannot free single blocks (no w/ free, no Mix).
 */
#include <errno.h>
#include <gnu/libc-version.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <apr_general.h>
#include <apr_pools.h>
#include <apr_version.h>
#include <glib.h>

#include "pool.h"
#include "loops.h"

size_t bp_n = 20 * 1000 * 1000;
uint64_t bp_cpu_ns;

void
bp_fail(void)
{
	fprintf(stderr, "failed alloc\n");
	exit(3);
}

/* Pointer array of the malloc and GLib peers (seed: a static array). */
static void **
bp_ptrs_new(void)
{
	void **p = calloc(bp_n, sizeof(*p));

	if (!p)
		bp_fail();
	return p;
}

/* ------------------------------------------------------------------------
 * ours: tdbe_pool, one page cache for the process (a thread's cache)
 */
static struct tdbe_pool_cache bp_cache;

#define P_SETUP(T)							\
	struct tdbe_pool *pool = tdbe_pool_create(&bp_cache, 0);	\
	if (!pool)							\
		bp_fail()
#define P_TEARDOWN()            tdbe_pool_destroy(pool)
#define P_ALLOC(T)              tdbe_pool_alloc(pool, sizeof(T))
#define P_FREE(o, T)            tdbe_pool_free(pool, (o), sizeof(T))
#define P_KEEP(i, o)            ((void)0)
#define P_DROP(i)               ((void)0)
#define P_RELEASE_ALL(n, T)     ((void)0)
#define P_CD_SETUP()            ((void)0)
#define P_CD_TEARDOWN()         ((void)0)
#define P_CD_BEGIN(T)							\
	struct tdbe_pool *cd = tdbe_pool_create(&bp_cache, 0);		\
	if (!cd)							\
		bp_fail()
#define P_CD_ALLOC(T)           tdbe_pool_alloc(cd, sizeof(T))
#define P_CD_KEEP(j, o)         ((void)0)
#define P_CD_END(T)             tdbe_pool_destroy(cd)

static BP_DEFINE_SINGLE(ours_small, Small, 0)
static BP_DEFINE_SINGLE(ours_small_free, Small, 1)
static BP_DEFINE_SINGLE(ours_big, Big, 0)
static BP_DEFINE_SINGLE(ours_big_free, Big, 1)
static BP_DEFINE_MIX(ours_mix)
static BP_DEFINE_CD(ours_cd)

#undef P_SETUP
#undef P_TEARDOWN
#undef P_ALLOC
#undef P_FREE
#undef P_KEEP
#undef P_DROP
#undef P_RELEASE_ALL
#undef P_CD_SETUP
#undef P_CD_TEARDOWN
#undef P_CD_BEGIN
#undef P_CD_ALLOC
#undef P_CD_KEEP
#undef P_CD_END

/* ------------------------------------------------------------------------
 * malloc/free (glibc) and GLib slices: pointers kept, all freed at the end
 */
#define P_SETUP(T)              void **ptrs = bp_ptrs_new()
#define P_TEARDOWN()            free(ptrs)
#define P_KEEP(i, o)            (ptrs[i] = (o))
#define P_DROP(i)               (ptrs[i] = NULL)
#define P_CD_SETUP()            void *cdp[100]
#define P_CD_TEARDOWN()         ((void)0)
#define P_CD_BEGIN(T)           ((void)0)
#define P_CD_KEEP(j, o)         (cdp[j] = (o))

#define P_ALLOC(T)              malloc(sizeof(T))
#define P_FREE(o, T)            free(o)
#define P_RELEASE_ALL(n, T)						\
	do {								\
		for (size_t k_ = 0; k_ < (n); ++k_)			\
			free(ptrs[k_]);					\
	} while (0)
#define P_CD_ALLOC(T)           malloc(sizeof(T))
#define P_CD_END(T)							\
	do {								\
		for (size_t k_ = 0; k_ < 100; ++k_)			\
			free(cdp[k_]);					\
	} while (0)

static BP_DEFINE_SINGLE(malloc_small, Small, 0)
static BP_DEFINE_SINGLE(malloc_small_free, Small, 1)
static BP_DEFINE_SINGLE(malloc_big, Big, 0)
static BP_DEFINE_SINGLE(malloc_big_free, Big, 1)
static BP_DEFINE_MIX(malloc_mix)
static BP_DEFINE_CD(malloc_cd)

#undef P_ALLOC
#undef P_FREE
#undef P_RELEASE_ALL
#undef P_CD_ALLOC
#undef P_CD_END

#define P_ALLOC(T)              g_slice_alloc(sizeof(T))
#define P_FREE(o, T)            g_slice_free1(sizeof(T), (o))
#define P_RELEASE_ALL(n, T)						\
	do {								\
		for (size_t k_ = 0; k_ < (n); ++k_)			\
			g_slice_free1(sizeof(T), ptrs[k_]);		\
	} while (0)
#define P_CD_ALLOC(T)           g_slice_alloc(sizeof(T))
#define P_CD_END(T)							\
	do {								\
		for (size_t k_ = 0; k_ < 100; ++k_)			\
			g_slice_free1(sizeof(T), cdp[k_]);		\
	} while (0)

static BP_DEFINE_SINGLE(glib_small, Small, 0)
static BP_DEFINE_SINGLE(glib_small_free, Small, 1)
static BP_DEFINE_SINGLE(glib_big, Big, 0)
static BP_DEFINE_SINGLE(glib_big_free, Big, 1)
static BP_DEFINE_MIX(glib_mix)
static BP_DEFINE_CD(glib_cd)

#undef P_SETUP
#undef P_TEARDOWN
#undef P_ALLOC
#undef P_FREE
#undef P_KEEP
#undef P_DROP
#undef P_RELEASE_ALL
#undef P_CD_SETUP
#undef P_CD_TEARDOWN
#undef P_CD_BEGIN
#undef P_CD_ALLOC
#undef P_CD_KEEP
#undef P_CD_END

/* ------------------------------------------------------------------------
 * APR: pools are children of one parent that has its own allocator (no
 * mutex), as a server keeps one per thread.  No single free.
 */
static apr_pool_t *bp_apr_parent;

#define P_SETUP(T)							\
	apr_pool_t *pool;						\
	if (apr_pool_create(&pool, bp_apr_parent) != APR_SUCCESS)	\
		bp_fail()
#define P_TEARDOWN()            apr_pool_destroy(pool)
#define P_ALLOC(T)              apr_palloc(pool, sizeof(T))
#define P_FREE(o, T)            ((void)(o))     /* never used: n/a */
#define P_KEEP(i, o)            ((void)0)
#define P_DROP(i)               ((void)0)
#define P_RELEASE_ALL(n, T)     ((void)0)
#define P_CD_SETUP()            ((void)0)
#define P_CD_TEARDOWN()         ((void)0)
#define P_CD_BEGIN(T)							\
	apr_pool_t *cd;							\
	if (apr_pool_create(&cd, bp_apr_parent) != APR_SUCCESS)		\
		bp_fail()
#define P_CD_ALLOC(T)           apr_palloc(cd, sizeof(T))
#define P_CD_KEEP(j, o)         ((void)0)
#define P_CD_END(T)             apr_pool_destroy(cd)

static BP_DEFINE_SINGLE(apr_small, Small, 0)
static BP_DEFINE_SINGLE(apr_big, Big, 0)
static BP_DEFINE_CD(apr_cd)

/* ------------------------------------------------------------------------
 * the case table
 */
enum { P_OURS, P_MALLOC, P_GLIB, P_BOOST, P_APR, NPEERS };
static const char *const peer_name[NPEERS] = {
	"ours", "malloc", "glib", "boost", "apr",
};

typedef uint64_t case_fn(void);

static const struct bcase {
	const char *name;
	const char *label;
	size_t obj;                     /* sizeof(T) of single-type cases */
	case_fn *fn[NPEERS];            /* NULL: n/a */
} cases[] = {
	{ "small", "Small 24 B", sizeof(Small),
	  { ours_small, malloc_small, glib_small, boost_small, apr_small } },
	{ "small-free", "Small w/ free", sizeof(Small),
	  { ours_small_free, malloc_small_free, glib_small_free,
	    boost_small_free, NULL } },
	{ "big", "Big 240 B", sizeof(Big),
	  { ours_big, malloc_big, glib_big, boost_big, apr_big } },
	{ "big-free", "Big w/ free", sizeof(Big),
	  { ours_big_free, malloc_big_free, glib_big_free, boost_big_free,
	    NULL } },
	{ "mix", "Mix w/ free", 0,
	  { ours_mix, malloc_mix, glib_mix, NULL, NULL } },
	{ "cd", "create & destroy", 0,
	  { ours_cd, malloc_cd, glib_cd, boost_cd, apr_cd } },
};
#define NCASES ((int)(sizeof(cases) / sizeof(cases[0])))

/* Allocations made by one run of case c. */
static size_t
case_ops(int c)
{
	if (cases[c].obj)
		return bp_n * sizeof(Small) / cases[c].obj;
	if (!strcmp(cases[c].name, "cd"))
		return bp_n / 100 * 100;
	return bp_n;
}

static int
find_case(const char *s)
{
	for (int c = 0; c < NCASES; c++)
		if (!strcmp(s, cases[c].name))
			return c;
	return -1;
}

static int
find_peer(const char *s)
{
	for (int p = 0; p < NPEERS; p++)
		if (!strcmp(s, peer_name[p]))
			return p;
	return -1;
}

/* ------------------------------------------------------------------------
 * child: one case of one peer
 */
static int
child(const char *peer, const char *cname, const char *n)
{
	int p = find_peer(peer), c = find_case(cname);
	struct rusage ru0, ru1;
	uint64_t ns;

	if (p < 0 || c < 0 || !cases[c].fn[p]) {
		fprintf(stderr, "tdb-bench-pool: no case %s for %s\n", cname,
			peer);
		return 2;
	}
	bp_n = strtoull(n, NULL, 10);

	if (p == P_OURS) {
		const char *g = getenv("TDB_BENCH_POOL_GROW_ORDER");

		if (tdbe_pool_cache_init(&bp_cache, TDBE_POOL_CACHE_MAX))
			return 2;
		if (g)
			bp_cache.grow_order = (unsigned int)atoi(g);
	}
	if (p == P_APR) {
		apr_allocator_t *a;

		if (apr_initialize() != APR_SUCCESS
		    || apr_allocator_create(&a) != APR_SUCCESS
		    || apr_pool_create_ex(&bp_apr_parent, NULL, NULL, a)
		       != APR_SUCCESS)
			return 2;
		apr_allocator_owner_set(a, bp_apr_parent);
	}

	getrusage(RUSAGE_SELF, &ru0);
	ns = cases[c].fn[p]();
	getrusage(RUSAGE_SELF, &ru1);

	printf("%" PRIu64 " %" PRIu64 " %ld\n", ns, bp_cpu_ns,
	       ru1.ru_minflt - ru0.ru_minflt);
	fflush(stdout);
	if (p == P_OURS)
		tdbe_pool_cache_destroy(&bp_cache);
	if (p == P_APR) {
		apr_pool_destroy(bp_apr_parent);
		apr_terminate();
	}
	return 0;
}

/* One run of one cell. */
struct sample {
	uint64_t wall, cpu;     /* ns; wall == 0: the run failed */
	long faults;            /* minor page faults of the case */
};

/* Run one child. */
static struct sample
spawn(int p, int c)
{
	struct sample sm = { 0, 0, 0 };
	char nbuf[32], out[128];
	int fd[2], st;
	ssize_t len = 0, r;
	pid_t pid;

	snprintf(nbuf, sizeof(nbuf), "%zu", bp_n);
	if (pipe(fd))
		return sm;
	pid = fork();
	if (pid < 0)
		return sm;
	if (pid == 0) {
		char *argv[] = { "tdb-bench-pool", "--child",
				 (char *)peer_name[p], (char *)cases[c].name,
				 nbuf, NULL };

		dup2(fd[1], 1);
		close(fd[0]);
		close(fd[1]);
		execv("/proc/self/exe", argv);
		_exit(127);
	}
	close(fd[1]);
	while (len < (ssize_t)sizeof(out) - 1
	       && (r = read(fd[0], out + len, sizeof(out) - 1 - (size_t)len)) > 0)
		len += r;
	close(fd[0]);
	out[len] = 0;
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)
	    || sscanf(out, "%" SCNu64 " %" SCNu64 " %ld", &sm.wall, &sm.cpu,
		      &sm.faults) != 3)
		sm.wall = 0;
	return sm;
}

/* ------------------------------------------------------------------------
 * driver
 */
static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Median of the runs (wall or CPU time), or 0 if any run failed. */
static double
median(const struct sample *v, int n, int use_cpu)
{
	uint64_t s[n];

	for (int i = 0; i < n; i++) {
		if (!v[i].wall)
			return 0;
		s[i] = use_cpu ? v[i].cpu : v[i].wall;
	}
	qsort(s, (size_t)n, sizeof(s[0]), cmp_u64);
	return n & 1 ? (double)s[n / 2]
		     : ((double)s[n / 2 - 1] + (double)s[n / 2]) / 2;
}

static int case_on[NCASES], peer_on[NPEERS];

/*
 * One table, a row per case and a column per peer: med / ops (ns per
 * allocation), med / 1e6 (ms), or, with ratio, med of the peer / med of
 * ours.
 */
enum { T_NS, T_MS, T_RATIO };

static void
table(const char *title, double med[][NPEERS], int kind)
{
	printf("\n%s\n%-18s", title, "case");
	for (int p = kind == T_RATIO; p < NPEERS; p++)
		if (peer_on[p])
			printf("%9s", peer_name[p]);
	printf("\n");
	for (int c = 0; c < NCASES; c++) {
		if (!case_on[c])
			continue;
		printf("%-18s", cases[c].label);
		for (int p = kind == T_RATIO; p < NPEERS; p++) {
			if (!peer_on[p])
				continue;
			if (!cases[c].fn[p])
				printf("%9s", "n/a");
			else if (!med[c][p] || (kind == T_RATIO
						&& !med[c][P_OURS]))
				printf("%9s", "FAIL");
			else if (kind == T_RATIO)
				printf("%9.2f", med[c][p] / med[c][P_OURS]);
			else if (kind == T_MS)
				printf("%9.1f", med[c][p] / 1e6);
			else
				printf("%9.2f", med[c][p] / (double)case_ops(c));
		}
		printf("\n");
	}
}

static void
cpu_model(char *buf, size_t len)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[256];

	snprintf(buf, len, "unknown");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *v = strchr(line, ':');

		if (!strncmp(line, "model name", 10) && v) {
			v += 2;
			v[strcspn(v, "\n")] = 0;
			snprintf(buf, len, "%s", v);
			break;
		}
	}
	fclose(f);
}

/*
 * Which g_slice this GLib has: the slice allocator carves 16 B slices out
 * of a slab back to back; malloc cannot place two blocks closer than 32 B
 * (its 8 B header and 16 B granularity).  (24 B would not tell: the slice
 * allocator rounds it to 32 B too.)
 */
static size_t
gslice_spacing(void)
{
	enum { K = 16 };
	uintptr_t a[K];
	size_t best = SIZE_MAX;
	void *v[K];

	for (int i = 0; i < K; i++) {
		v[i] = g_slice_alloc(16);
		a[i] = (uintptr_t)v[i];
	}
	for (int i = 0; i < K; i++)
		for (int j = 0; j < K; j++)
			if (a[j] > a[i] && a[j] - a[i] < best)
				best = a[j] - a[i];
	for (int i = 0; i < K; i++)
		g_slice_free1(16, v[i]);
	return best;
}

static int
parse_list(char *s, int *on, int (*lookup)(const char *), const char *what)
{
	char *tok, *save = NULL;

	for (tok = strtok_r(s, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		int i = lookup(tok);

		if (i < 0) {
			fprintf(stderr, "tdb-bench-pool: unknown %s '%s'\n",
				what, tok);
			return -1;
		}
		on[i] = 1;
	}
	return 0;
}

static void
usage(void)
{
	fprintf(stderr,
		"usage: tdb-bench-pool [--runs R] [--scale S] [--case LIST]"
		" [--peer LIST] [--cpu K] [--grow-order K] [--raw]\n"
		"  cases: small small-free big big-free mix cd\n"
		"  peers: ours malloc glib boost apr\n");
}

int
main(int argc, char **argv)
{
	int runs = 5, cpu = -1, raw = 0, any_case = 0, any_peer = 0;
	int others = 0;
	double scale = 1.0, load[3];
	static struct sample res[NCASES][NPEERS][64];
	static double wall[NCASES][NPEERS], cput[NCASES][NPEERS];
	struct utsname un;
	char model[128], title[128];
	size_t sp;

	if (argc == 5 && !strcmp(argv[1], "--child"))
		return child(argv[2], argv[3], argv[4]);

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--raw")) {
			raw = 1;
			continue;
		}
		if (!v) {
			usage();
			return 2;
		}
		i++;
		if (!strcmp(a, "--runs")) {
			runs = atoi(v);
		} else if (!strcmp(a, "--scale")) {
			scale = atof(v);
		} else if (!strcmp(a, "--cpu")) {
			cpu = atoi(v);
		} else if (!strcmp(a, "--grow-order")) {
			/* Read by the children (ours). */
			if (atoi(v) < 0 || atoi(v) > (int)TDBE_POOL_ORDER_MAX
			    || setenv("TDB_BENCH_POOL_GROW_ORDER", v, 1)) {
				usage();
				return 2;
			}
		} else if (!strcmp(a, "--case")) {
			if (parse_list(v, case_on, find_case, "case"))
				return 2;
			any_case = 1;
		} else if (!strcmp(a, "--peer")) {
			if (parse_list(v, peer_on, find_peer, "peer"))
				return 2;
			any_peer = 1;
		} else {
			usage();
			return 2;
		}
	}
	if (runs < 1 || runs > 64 || scale <= 0 || scale > 10) {
		usage();
		return 2;
	}
	for (int c = 0; c < NCASES; c++)
		case_on[c] |= !any_case;
	for (int p = 0; p < NPEERS; p++)
		peer_on[p] |= !any_peer;
	bp_n = (size_t)(20e6 * scale);
	if (bp_n < 100)
		bp_n = 100;

	if (cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		if (sched_setaffinity(0, sizeof(set), &set)) {
			perror("sched_setaffinity");
			return 2;
		}
	}

	cpu_model(model, sizeof(model));
	uname(&un);
	sp = gslice_spacing();
	printf("tdb-bench-pool: N = %zu (scale %g), %d fresh process%s per"
	       " cell, medians\n", bp_n, scale, runs, runs > 1 ? "es" : "");
	printf("machine: %s, %ld CPUs, %s %s%s\n", model,
	       sysconf(_SC_NPROCESSORS_ONLN), un.sysname, un.release,
	       cpu >= 0 ? ", pinned to one CPU" : "");
	printf("peers: glibc %s, GLib %u.%u.%u, boost %s, APR %s\n",
	       gnu_get_libc_version(), glib_major_version, glib_minor_version,
	       glib_micro_version, boost_version(), apr_version_string());
	printf("g_slice: %s (GLib >= 2.76 made g_slice plain malloc; here two"
	       " 16 B slices are %zu B apart)%s\n",
	       sp == 16 ? "the real slab/magazine slice allocator"
			: "malloc", sp,
	       getenv("G_SLICE") ? ", G_SLICE is set" : "");
	if (getenv("TDB_BENCH_POOL_GROW_ORDER"))
		printf("ours: cache.grow_order = %s (default %u)\n",
		       getenv("TDB_BENCH_POOL_GROW_ORDER"),
		       TDBE_POOL_GROW_ORDER);
	if (getloadavg(load, 3) == 3)
		printf("load average at start: %.2f\n", load[0]);
	fflush(stdout);

	for (int r = 0; r < runs; r++) {
		fprintf(stderr, "run %d/%d\n", r + 1, runs);
		for (int c = 0; c < NCASES; c++) {
			if (!case_on[c])
				continue;
			for (int p = 0; p < NPEERS; p++) {
				if (!peer_on[p] || !cases[c].fn[p])
					continue;
				res[c][p][r] = spawn(p, c);
				if (!res[c][p][r].wall)
					fprintf(stderr, "%s %s: FAILED\n",
						cases[c].name, peer_name[p]);
			}
		}
	}

	for (int c = 0; c < NCASES; c++)
		for (int p = 0; p < NPEERS; p++)
			if (case_on[c] && peer_on[p] && cases[c].fn[p]) {
				wall[c][p] = median(res[c][p], runs, 0);
				cput[c][p] = median(res[c][p], runs, 1);
			}

	/* Ratios need ours and at least one peer. */
	for (int p = P_OURS + 1; p < NPEERS; p++)
		others |= peer_on[p] && peer_on[P_OURS];

	snprintf(title, sizeof(title),
		 "wall clock, ns per allocation (median of %d)", runs);
	table(title, wall, T_NS);
	if (others)
		table("wall clock, ratio peer/ours (> 1: ours is faster)",
		      wall, T_RATIO);
	snprintf(title, sizeof(title),
		 "CPU time (user + system), ns per allocation (median of %d)",
		 runs);
	table(title, cput, T_NS);
	if (others)
		table("CPU time, ratio peer/ours (> 1: ours is faster)", cput,
		      T_RATIO);
	table("wall clock, ms per case (median; the seed's unit)", wall,
	      T_MS);

	if (raw) {
		printf("\nsamples: wall ms / CPU ms (page faults of the case"
		       " process)\n");
		for (int c = 0; c < NCASES; c++)
			for (int p = 0; p < NPEERS; p++) {
				if (!case_on[c] || !peer_on[p]
				    || !cases[c].fn[p])
					continue;
				printf("%-10s %-6s", cases[c].name,
				       peer_name[p]);
				for (int r = 0; r < runs; r++)
					printf(" %6.1f/%6.1f (%ld)",
					       res[c][p][r].wall / 1e6,
					       res[c][p][r].cpu / 1e6,
					       res[c][p][r].faults);
				printf("\n");
			}
	}
	if (getloadavg(load, 3) == 3)
		printf("\nload average at end: %.2f\n", load[0]);
	return 0;
}
