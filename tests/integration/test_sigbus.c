// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_sigbus.c - a client takes the memory of its own completion ring
 * away, and tdbd must survive its SIGBUS.
 *
 * With rings on hugetlb memfds, a client punches a hole in its
 * completion ring's data (fallocate), then takes every free huge page for
 * itself.  When tdbd next writes an answer there, the page fault finds no
 * page: SIGBUS.  tdbd must drop that client (a violation), keep serving
 * everyone else and stop cleanly.  Then the same with the submission
 * ring's data, under requests tdbd has yet to read: the zero page the
 * handler swaps in reads as a broken frame, and the log must still name
 * the SIGBUS (the cause), not the frame.  Needs root (vm.nr_hugepages); skips
 * (77) otherwise or if the kernel gives no huge pages.
 */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "proto.h"
#include "ring.h"

#define HUGE (2u << 20)
#define NR_PATH "/proc/sys/vm/nr_hugepages"

static long read_nr(void)
{
	char buf[32] = "";
	int fd = open(NR_PATH, O_RDONLY);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;

	if (fd >= 0)
		close(fd);
	return n > 0 ? strtol(buf, NULL, 10) : -1;
}

static bool write_nr(long v)
{
	char buf[32];
	int fd = open(NR_PATH, O_WRONLY);
	int n = snprintf(buf, sizeof(buf), "%ld\n", v);
	bool ok = fd >= 0 && write(fd, buf, (size_t)n) == n;

	if (fd >= 0)
		close(fd);
	return ok && read_nr() == v;
}

static bool violated(const struct tdbc_stats *st, const void *arg)
{
	const struct tdbc_stats *base = arg;

	return st->violations == base->violations + 1 &&
	       st->clients <= base->clients && st->rings == base->rings;
}

static int run(bool punch_sub)
{
	struct tdb_proto_msg m = { .cmd = TDB_CMD_ATTACH };
	struct h_daemon d;
	struct tdbc_stats base, st;
	struct tdbc *ctl;
	struct tdb_ring sub;
	struct statfs sf;
	struct stat sb;
	struct h_raw r;
	void *hog[64], *sub_hdr, *sub_data;
	size_t sub_size;
	char msg[256];
	int fds[4], err, nhog = 0, i;

	h_init("tdbd-sigbus", 120);
	h_start(&d, "tdbd", NULL);
	ctl = h_connect(&d, TDBC_NO_RINGS);
	h_stats(ctl, &base);

	h_raw_connect(&r, d.sock);
	err = h_raw_call(&r, &m, NULL, NULL, NULL, msg, sizeof(msg));
	CHECK(err == 0, "ATTACH: %s (%s)", h_errname(err), msg);
	CHECK(h_raw_take_fds(&r, fds, 4) == 4, "ATTACH brought no fds");
	CHECK(fstatfs(fds[1], &sf) == 0, "fstatfs");
	if (sf.f_type != 0x958458f6) {  /* HUGETLBFS_MAGIC */
		h_note("skipped: tdbd's rings are not on huge pages");
		h_raw_close(&r);
		h_stop(&d);
		return 77;
	}
	CHECK(fstat(fds[0], &sb) == 0, "fstat");
	sub_size = (size_t)sb.st_size - HUGE;
	sub_hdr = mmap(NULL, HUGE, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0],
		       0);
	sub_data = mmap(NULL, sub_size, PROT_READ | PROT_WRITE, MAP_SHARED,
			fds[0], HUGE);
	CHECK(sub_hdr != MAP_FAILED && sub_data != MAP_FAILED, "map sub");
	CHECK(tdb_ring_attach_producer(&sub, sub_hdr, sub_data, sub_size,
				       TDB_RING_SUBMIT) == 0, "attach sub");
	tdb_ring_set_eventfd(&sub, fds[2]);

	/* Requests whose answers tdbd must write (into the hole), or which
	 * it must read (from the hole): written now, published after. */
	for (i = 0; i < 4; i++) {
		struct tdb_proto_msg q = { .cmd = TDB_CMD_STATS, .seq = 100 + i };
		long len = tdb_proto_size(TDB_PROTO_REQUEST, &q, NULL);
		void *p = tdb_ring_reserve(&sub, (size_t)len);

		CHECK(p && tdb_proto_build(p, (size_t)len, TDB_PROTO_REQUEST,
					   &q, NULL) == len, "build");
		tdb_ring_commit(&sub, (size_t)len);
	}

	/* Take the ring's data pages away, then every free huge page:
	 * tdbd's next access there has no page.  (A hole punched where no
	 * page exists keeps its reservation, so fault them in first: a
	 * read-only mapping is enough.) */
	CHECK(fstat(fds[punch_sub ? 0 : 1], &sb) == 0, "fstat");
	{
		volatile const unsigned char *cd = mmap(NULL,
			(size_t)sb.st_size - HUGE, PROT_READ, MAP_SHARED,
			fds[punch_sub ? 0 : 1], HUGE);
		size_t off;
		unsigned int sum = 0;

		CHECK(cd != MAP_FAILED, "map comp data");
		for (off = 0; off < (size_t)sb.st_size - HUGE; off += HUGE)
			sum += cd[off];
		(void)sum;
		munmap((void *)cd, (size_t)sb.st_size - HUGE);
	}
	CHECK(fallocate(fds[punch_sub ? 0 : 1],
			FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			HUGE, sb.st_size - HUGE) == 0, "punch hole: %s",
	      strerror(errno));
	while (nhog < 64) {
		void *p = mmap(NULL, HUGE, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB |
			       MAP_POPULATE, -1, 0);

		if (p == MAP_FAILED)
			break;
		hog[nhog++] = p;
	}
	h_note("punched the %s ring, holding %d free huge pages",
	       punch_sub ? "submission" : "completion", nhog);
	tdb_ring_publish(&sub);
	{
		uint64_t one = 1;

		CHECK(write(fds[2], &one, sizeof(one)) == sizeof(one),
		      "eventfd");
	}

	CHECK(h_raw_wait_hup(&r, 10000), "the client was not dropped");
	CHECK(h_wait_stats(ctl, &st, violated, &base, 5000),
	      "violations %llu -> %llu, clients %u, rings %u (expected one "
	      "violation and everything freed)",
	      (unsigned long long)base.violations,
	      (unsigned long long)st.violations, st.clients, st.rings);
	CHECK(h_log_has(&d, "went away under us (SIGBUS"), "tdbd's log does "
	      "not name the SIGBUS as the reason the client was dropped");
	for (i = 0; i < nhog; i++)
		munmap(hog[i], HUGE);

	/* still serving: a fresh client over rings */
	{
		struct tdbc *c2 = h_connect(&d, 0);

		h_stats(c2, &st);
		tdbc_close(c2);
	}
	tdb_ring_detach(&sub);
	munmap(sub_hdr, HUGE);
	munmap(sub_data, sub_size);
	for (i = 0; i < 4; i++)
		close(fds[i]);
	h_raw_close(&r);
	tdbc_close(ctl);
	h_stop(&d);
	h_done();
	return 0;
}

/* The test runs in a child, so that vm.nr_hugepages is put back however
 * it ends (a failed CHECK _exits). */
int main(void)
{
	long old = read_nr();
	int status = 0;
	pid_t pid;

	if (geteuid() != 0 || old < 0) {
		fprintf(stderr, "tdbd-sigbus: skipped: needs root to set "
			NR_PATH "\n");
		return 77;
	}
	if (!write_nr(8)) {
		write_nr(old);
		fprintf(stderr, "tdbd-sigbus: skipped: cannot get 8 huge "
			"pages\n");
		return 77;
	}
	for (int sub = 0; sub < 2 && !status; sub++) {
		pid = fork();
		if (pid == 0)
			_exit(run(sub));
		if (pid < 0 || waitpid(pid, &status, 0) != pid)
			status = 1 << 8;
	}
	write_nr(old);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
