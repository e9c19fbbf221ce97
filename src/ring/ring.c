/*
 * ring.c - the shared ring: producer, consumer and feed reader.
 *
 * Rules kept everywhere below (see include/tdb/ring.h for the ABI):
 *  - our own index lives in struct tdb_ring and is only ever stored to
 *    the header, never loaded back from it;
 *  - the peer's index is loaded once per call, with acquire, and checked
 *    against what is possible before it is used;
 *  - a consumer copies a message's header once, checks the length it
 *    read, then copies the body once; it hands its private copy upward;
 *  - every loop is bounded by the budget or by the ring size.
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "ring.h"

#define load_acquire(p)     __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define store_release(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define full_barrier()      __atomic_thread_fence(__ATOMIC_SEQ_CST)

/* --- helpers ------------------------------------------------------------ */

/* The peer broke the protocol: this side stops using the ring.  The
 * flag tells the peer, except in a FEED ring (readers map it read-only)
 * and during attach (the kind is not trusted yet). */
static int violation(struct tdb_ring *r, const char *why)
{
	r->dead = true;
	r->error = why;
	if (r->kind == TDB_RING_SUBMIT || r->kind == TDB_RING_COMPLETE)
		__atomic_fetch_or(&r->hdr->flags, TDB_RING_F_OVERRUN,
				  __ATOMIC_RELAXED);
	return -EPROTO;
}

static int futex_wait(uint32_t *addr, uint32_t val, int timeout_ms)
{
	struct timespec ts, *tp = NULL;

	if (timeout_ms >= 0) {
		ts.tv_sec = timeout_ms / 1000;
		ts.tv_nsec = (long)(timeout_ms % 1000) * 1000000L;
		tp = &ts;
	}
	if (syscall(SYS_futex, addr, FUTEX_WAIT, val, tp, NULL, 0) == 0)
		return 0;
	if (errno == EAGAIN)
		return 0;           /* the word moved: something happened */
	return errno == ETIMEDOUT ? -ETIMEDOUT : -errno;
}

static void futex_wake_all(uint32_t *addr)
{
	__atomic_fetch_add(addr, 1, __ATOMIC_SEQ_CST);
	syscall(SYS_futex, addr, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/* Wake the other side if it said (through `flag`) that it sleeps. */
static int wake_if(struct tdb_ring *r, uint32_t flag)
{
	uint64_t one = 1;

	full_barrier();
	if (!(__atomic_load_n(&r->hdr->flags, __ATOMIC_RELAXED) & flag))
		return 0;
	__atomic_fetch_and(&r->hdr->flags, ~flag, __ATOMIC_SEQ_CST);
	if (r->eventfd >= 0 && flag == TDB_RING_F_CONS_WAITING) {
		__atomic_fetch_add(&r->hdr->futex, 1, __ATOMIC_SEQ_CST);
		if (write(r->eventfd, &one, sizeof(one)) < 0 && errno != EAGAIN)
			return -errno;
		return 1;
	}
	futex_wake_all(&r->hdr->futex);
	return 1;
}

/* --- setup ---------------------------------------------------------------- */

static bool good_size(uint32_t data_size)
{
	return data_size >= TDB_RING_MIN_DATA && data_size <= TDB_RING_MAX_DATA &&
	       !(data_size & (data_size - 1));
}

int tdb_ring_format(void *mem, uint32_t kind, uint32_t data_size,
		    uint32_t max_msg)
{
	struct tdb_ring_hdr *h = mem;

	if (!mem || kind < TDB_RING_SUBMIT || kind > TDB_RING_FEED ||
	    !good_size(data_size))
		return -EINVAL;
	if (!max_msg)
		max_msg = data_size / 2;
	if (max_msg < NLMSG_HDRLEN || max_msg > data_size / 2)
		return -EINVAL;
	memset(h, 0, TDB_RING_HDR_SIZE);
	h->version = TDB_RING_VERSION;
	h->kind = kind;
	h->hdr_size = TDB_RING_HDR_SIZE;
	h->data_size = data_size;
	h->max_msg = max_msg & ~3u;
	store_release(&h->magic, TDB_RING_MAGIC);
	return 0;
}

static int attach(struct tdb_ring *r, void *hdr, const void *data,
		  size_t data_map_size, uint32_t kind)
{
	struct tdb_ring_hdr *h = hdr;
	uint64_t magic;
	uint32_t version, hkind, hdr_size, size, max_msg;

	memset(r, 0, sizeof(*r));
	r->eventfd = -1;
	r->hdr = h;
	r->data = (unsigned char *)data;
	if (!hdr || !data)
		return -EINVAL;
	/* Each field once; from here on only the private copies count. */
	magic = load_acquire(&h->magic);
	version = __atomic_load_n(&h->version, __ATOMIC_RELAXED);
	hkind = __atomic_load_n(&h->kind, __ATOMIC_RELAXED);
	hdr_size = __atomic_load_n(&h->hdr_size, __ATOMIC_RELAXED);
	size = __atomic_load_n(&h->data_size, __ATOMIC_RELAXED);
	max_msg = __atomic_load_n(&h->max_msg, __ATOMIC_RELAXED);
	if (magic != TDB_RING_MAGIC)
		return violation(r, "ring header has a bad magic number");
	if (version != TDB_RING_VERSION)
		return violation(r, "ring header has an unknown version");
	if (hkind != kind)
		return violation(r, "ring is of another kind");
	if (hdr_size != TDB_RING_HDR_SIZE)
		return violation(r, "ring header size is wrong");
	if (!good_size(size))
		return violation(r, "ring data size is not a power of two "
				    "between 4 KiB and 1 GiB");
	if (size != data_map_size)
		return violation(r, "ring data size differs from the mapping");
	if (max_msg < NLMSG_HDRLEN || max_msg > size / 2 || (max_msg & 3))
		return violation(r, "ring max_msg is out of range");
	r->kind = kind;
	r->data_size = size;
	r->mask = size - 1;
	r->max_msg = max_msg;
	return 0;
}

static uint64_t feed_next(const struct tdb_ring *r, uint64_t i);

/*
 * A FEED producer that attaches to a ring with messages in it (the owner
 * restarting its feed) goes on with the sequence numbers: one more than
 * the newest intact message's, so readers see no false gap.  The walk is
 * bounded by the ring (tail..prod is at most data_size bytes).
 */
static void feed_resume_seq(struct tdb_ring *r)
{
	uint64_t i = r->other;

	while (i != r->pos) {
		uint32_t off = (uint32_t)(i & r->mask);
		const struct nlmsghdr *nlh =
			(const struct nlmsghdr *)(r->data + off);
		uint64_t next = feed_next(r, i);

		if (r->data_size - off >= NLMSG_HDRLEN &&
		    nlh->nlmsg_type != NLMSG_NOOP)
			r->seq = nlh->nlmsg_seq + 1;
		if (next == i || next - r->other > r->pos - r->other)
			break;
		i = next;
	}
}

int tdb_ring_attach_producer(struct tdb_ring *r, void *hdr, void *data,
			     size_t data_map_size, uint32_t kind)
{
	int err = attach(r, hdr, data, data_map_size, kind);

	if (err)
		return err;
	r->pos = load_acquire(&r->hdr->prod);
	r->other = kind == TDB_RING_FEED ? load_acquire(&r->hdr->tail)
					 : load_acquire(&r->hdr->cons);
	if (r->pos - r->other > r->data_size || (r->pos & 3) || (r->other & 3))
		return violation(r, "ring indices are inconsistent");
	r->published = r->pos;
	if (kind == TDB_RING_FEED)
		feed_resume_seq(r);
	return 0;
}

int tdb_ring_attach_consumer(struct tdb_ring *r, void *hdr,
			     const void *data, size_t data_map_size,
			     uint32_t kind)
{
	int err = attach(r, hdr, data, data_map_size, kind);
	uint64_t prod;

	if (err)
		return err;
	prod = load_acquire(&r->hdr->prod);
	r->pos = kind == TDB_RING_FEED ? prod : load_acquire(&r->hdr->cons);
	if (prod - r->pos > r->data_size || (r->pos & 3))
		return violation(r, "ring indices are inconsistent");
	r->msg = malloc(r->max_msg);
	if (!r->msg)
		return -ENOMEM;
	return 0;
}

void tdb_ring_detach(struct tdb_ring *r)
{
	free(r->msg);
	r->msg = NULL;
	r->hdr = NULL;
	r->data = NULL;
}

const char *tdb_ring_error(const struct tdb_ring *r)
{
	return r->error;
}

void tdb_ring_set_eventfd(struct tdb_ring *r, int fd)
{
	r->eventfd = fd;
}

/* --- producer ------------------------------------------------------------- */

/* Where the message at index i of a FEED ring ends (the producer's own
 * data: readers cannot write it). */
static uint64_t feed_next(const struct tdb_ring *r, uint64_t i)
{
	uint32_t off = (uint32_t)(i & r->mask), rem = r->data_size - off;
	const struct nlmsghdr *nlh;

	if (rem < NLMSG_HDRLEN)
		return i + rem;
	nlh = (const struct nlmsghdr *)(r->data + off);
	if (nlh->nlmsg_len < NLMSG_HDRLEN || nlh->nlmsg_len > rem)
		return i + rem;     /* cannot happen; never loop on it */
	return i + NLMSG_ALIGN(nlh->nlmsg_len);
}

/* Make room for `need` bytes at pos in a FEED ring by retiring the
 * oldest messages; readers learn it from `tail` before any byte of them
 * is overwritten. */
static void feed_make_room(struct tdb_ring *r, uint64_t end)
{
	uint64_t t = r->other;

	if (end - t <= r->data_size)
		return;
	/* Retire a chunk (1/16 of the ring) beyond what is needed, so the
	 * tail store and its fence happen once per chunk, not per message. */
	while (end - t > r->data_size - r->data_size / 16 && t != r->pos)
		t = feed_next(r, t);
	/* tail may pass prod when a batch bigger than the ring is not yet
	 * published; readers then wait for the publish (tdb_feed_read). */
	r->other = t;
	store_release(&r->hdr->tail, t);
	/* The tail store must be visible before the data stores that
	 * follow (a release fence orders it before later stores). */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

static bool has_room(struct tdb_ring *r, uint64_t end)
{
	uint64_t c;

	if (end - r->other <= r->data_size)
		return true;
	c = load_acquire(&r->hdr->cons);
	/* The consumer can only have moved forward, up to what we
	 * published. */
	if (c - r->other > r->published - r->other || (c & 3)) {
		violation(r, "consumer index is outside the published range");
		return false;
	}
	r->other = c;
	return end - c <= r->data_size;
}

bool tdb_ring_has_room(struct tdb_ring *r, size_t len)
{
	uint32_t off, rem, need;

	if (r->dead || r->reserved || len > r->max_msg || r->kind == TDB_RING_FEED)
		return !r->dead && !r->reserved && len <= r->max_msg;
	need = NLMSG_ALIGN((uint32_t)(len < NLMSG_HDRLEN ? NLMSG_HDRLEN : len));
	off = (uint32_t)(r->pos & r->mask);
	rem = r->data_size - off;
	return has_room(r, r->pos + (need > rem ? rem : 0) + need);
}

void *tdb_ring_reserve(struct tdb_ring *r, size_t len)
{
	uint32_t off, rem, need, pad;

	if (r->dead) {
		errno = EPROTO;
		return NULL;
	}
	if (r->reserved || len < NLMSG_HDRLEN) {
		errno = EINVAL;
		return NULL;
	}
	if (len > r->max_msg) {
		errno = EMSGSIZE;
		return NULL;
	}
	need = NLMSG_ALIGN((uint32_t)len);
	off = (uint32_t)(r->pos & r->mask);
	rem = r->data_size - off;
	pad = need > rem ? rem : 0;
	if (r->kind == TDB_RING_FEED) {
		feed_make_room(r, r->pos + pad + need);
	} else if (!has_room(r, r->pos + pad + need)) {
		errno = r->dead ? EPROTO : EAGAIN;
		return NULL;
	}
	if (pad) {
		if (pad >= NLMSG_HDRLEN) {
			struct nlmsghdr *noop =
				(struct nlmsghdr *)(r->data + off);

			memset(noop, 0, NLMSG_HDRLEN);
			noop->nlmsg_len = pad;
			noop->nlmsg_type = NLMSG_NOOP;
		}
		r->pos += pad;
	}
	r->reserved = need;
	r->reserved_len = len;
	return r->data + (r->pos & r->mask);
}

int tdb_ring_commit(struct tdb_ring *r, size_t len)
{
	struct nlmsghdr *nlh;

	/* len against what was asked for, before any 32-bit rounding. */
	if (!r->reserved || len < NLMSG_HDRLEN || len > r->reserved_len)
		return -EINVAL;
	nlh = (struct nlmsghdr *)(r->data + (r->pos & r->mask));
	nlh->nlmsg_len = (uint32_t)len;        /* ours, whatever was built */
	if (r->kind == TDB_RING_FEED)
		nlh->nlmsg_seq = r->seq++;
	r->pos += NLMSG_ALIGN(len);
	r->reserved = 0;
	return 0;
}

void tdb_ring_abort(struct tdb_ring *r)
{
	r->reserved = 0;
}

int tdb_ring_publish(struct tdb_ring *r)
{
	if (r->dead)
		return -EPROTO;
	if (r->pos == r->published)
		return 0;
	store_release(&r->hdr->prod, r->pos);
	r->published = r->pos;
	if (r->kind == TDB_RING_FEED) {
		/* Readers map the header read-only and cannot say they
		 * sleep, so every publish wakes (batch to amortise it). */
		futex_wake_all(&r->hdr->futex);
		return 1;
	}
	return wake_if(r, TDB_RING_F_CONS_WAITING);
}

int tdb_ring_put(struct tdb_ring *r, const struct nlmsghdr *nlh)
{
	size_t len = nlh->nlmsg_len;
	void *dst;

	if (len < NLMSG_HDRLEN)
		return -EINVAL;
	dst = tdb_ring_reserve(r, len);
	if (!dst)
		return -errno;
	memcpy(dst, nlh, len);
	return tdb_ring_commit(r, len);
}

int tdb_ring_wait_space(struct tdb_ring *r, size_t len, int timeout_ms)
{
	uint32_t need, off, pad, v;
	int err;

	if (len > r->max_msg)
		return -EMSGSIZE;
	if (r->kind == TDB_RING_FEED)
		return 0;
	need = NLMSG_ALIGN((uint32_t)(len < NLMSG_HDRLEN ? NLMSG_HDRLEN : len));
	off = (uint32_t)(r->pos & r->mask);
	pad = need > r->data_size - off ? r->data_size - off : 0;
	for (;;) {
		if (has_room(r, r->pos + pad + need))
			return 0;
		if (r->dead)
			return -EPROTO;
		/* Unpublished messages would never be consumed. */
		tdb_ring_publish(r);
		/* The futex value first, then the flag: a consumer that
		 * frees too little, clears our flag and bumps the futex
		 * after we read it makes the wait return at once, and we
		 * set the flag again; read after the flag, that bump would
		 * leave us asleep with no flag set (a lost wake-up). */
		v = __atomic_load_n(&r->hdr->futex, __ATOMIC_SEQ_CST);
		__atomic_fetch_or(&r->hdr->flags, TDB_RING_F_PROD_WAITING,
				  __ATOMIC_SEQ_CST);
		if (has_room(r, r->pos + pad + need))
			return 0;
		err = futex_wait(&r->hdr->futex, v, timeout_ms);
		if (err)
			return err;
	}
}

/* --- consumer ------------------------------------------------------------- */

/*
 * Copy the message at r->pos into r->msg and check its frame against the
 * published end p.  Returns its padded length, 0 for padding to skip
 * (*skip set), or -EPROTO with *why set (the caller decides whether that
 * is a violation: a feed reader first checks whether it was lapped).
 */
static long copy_msg(struct tdb_ring *r, uint64_t p, uint32_t *skip,
		     const char **why)
{
	uint32_t off = (uint32_t)(r->pos & r->mask);
	uint32_t rem = r->data_size - off, len;
	uint64_t avail = p - r->pos;
	struct nlmsghdr *nlh = (struct nlmsghdr *)r->msg;

	*skip = 0;
	if (rem < NLMSG_HDRLEN) {
		if (avail < rem) {
			*why = "producer index is inside the skipped end of "
			       "the ring";
			return -EPROTO;
		}
		*skip = rem;
		return 0;
	}
	if (avail < NLMSG_HDRLEN) {
		*why = "producer index is inside a message header";
		return -EPROTO;
	}
	memcpy(nlh, r->data + off, NLMSG_HDRLEN);
	len = nlh->nlmsg_len;                  /* read once, from our copy */
	if (len < NLMSG_HDRLEN)
		*why = "message is shorter than its header";
	else if (len > rem)
		*why = "message runs past the end of the ring";
	else if (NLMSG_ALIGN(len) > avail)
		*why = "message runs past the producer index";
	else if (nlh->nlmsg_type == NLMSG_NOOP)
		*skip = NLMSG_ALIGN(len);
	else if (len > r->max_msg)
		*why = "message is longer than the ring's max_msg";
	else
		*why = NULL;
	if (*skip)
		return 0;
	if (*why)
		return -EPROTO;
	memcpy(r->msg + NLMSG_HDRLEN, r->data + off + NLMSG_HDRLEN,
	       len - NLMSG_HDRLEN);
	return NLMSG_ALIGN(len);
}

/* The producer's index, loaded once and checked. */
static int load_prod(struct tdb_ring *r, uint64_t *p)
{
	*p = load_acquire(&r->hdr->prod);
	if (*p - r->pos > r->data_size)
		return violation(r, "producer index is more than a ring ahead "
				    "or behind the consumer");
	if (*p & 3)
		return violation(r, "producer index is not 4-byte aligned");
	return 0;
}

int tdb_ring_consume(struct tdb_ring *r, unsigned int budget,
		     tdb_ring_msg_fn *fn, void *arg)
{
	unsigned int n = 0, work = 0;
	uint64_t p;
	int ret = 0;

	if (r->dead)
		return -EPROTO;
	if (r->kind == TDB_RING_FEED)
		return -EINVAL;
	ret = load_prod(r, &p);
	if (ret)
		return ret;
	/* Padding counts as work too, so a producer of nothing but NOOPs
	 * cannot keep us here. */
	while (r->pos != p && work < budget) {
		const char *why = NULL;
		uint32_t skip;
		long len = copy_msg(r, p, &skip, &why);

		work++;
		if (len < 0)
			return violation(r, why);
		if (!len) {
			r->pos += skip;
			continue;
		}
		r->pos += (uint64_t)len;
		n++;
		ret = fn(arg, (const struct nlmsghdr *)r->msg);
		if (ret < 0)
			break;
	}
	store_release(&r->hdr->cons, r->pos);
	wake_if(r, TDB_RING_F_PROD_WAITING);
	return ret < 0 ? ret : (int)n;
}

long tdb_ring_pending(struct tdb_ring *r)
{
	uint64_t p;
	int err;

	if (r->dead)
		return -EPROTO;
	err = load_prod(r, &p);
	return err ? err : (long)(p - r->pos);
}

int tdb_ring_wait(struct tdb_ring *r, int timeout_ms)
{
	uint32_t v;
	uint64_t p;
	int err;

	if (r->dead)
		return -EPROTO;
	/* The futex value before the flag, as in tdb_ring_wait_space. */
	v = __atomic_load_n(&r->hdr->futex, __ATOMIC_SEQ_CST);
	__atomic_fetch_or(&r->hdr->flags, TDB_RING_F_CONS_WAITING,
			  __ATOMIC_SEQ_CST);
	err = load_prod(r, &p);
	if (err)
		return err;
	if (p != r->pos) {
		/* Not going to sleep: spare the producer a wake-up call. */
		__atomic_fetch_and(&r->hdr->flags, ~TDB_RING_F_CONS_WAITING,
				   __ATOMIC_RELAXED);
		return 0;
	}
	if (r->eventfd >= 0) {
		struct pollfd pfd = { .fd = r->eventfd, .events = POLLIN };
		uint64_t cnt;
		int n = poll(&pfd, 1, timeout_ms);

		if (n < 0)
			return -errno;
		if (n == 0)
			return -ETIMEDOUT;
		if (read(r->eventfd, &cnt, sizeof(cnt)) < 0 && errno != EAGAIN)
			return -errno;
		return 0;
	}
	return futex_wait(&r->hdr->futex, v, timeout_ms);
}

/* --- feed readers ------------------------------------------------------------ */

/* Has the producer retired the bytes from `from` on?  (tail passed it) */
static bool lapped(struct tdb_ring *r, uint64_t from, uint64_t *tail)
{
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	*tail = load_acquire(&r->hdr->tail);
	return (int64_t)(*tail - from) > 0;
}

/*
 * Move a lapped reader to the oldest intact message and count what it
 * lost from the sequence number found there.  The producer may lap us
 * again while we look, so try a few times; if it keeps winning, the count
 * is unknown (0) and the next message is taken as the new start.
 */
static int resync(struct tdb_ring *r, uint64_t tail, uint64_t *lost)
{
	unsigned int tries;

	if (lost)
		*lost = 0;
	r->from_set = false;    /* lapped while skipping to a start */
	for (tries = 0; tries < 8; tries++) {
		uint64_t t = tail, t2;
		unsigned int steps;
		struct nlmsghdr h;

		/* Step over padding (at most a skipped tail and a NOOP). */
		for (steps = 0; steps < 2; steps++) {
			uint32_t off = (uint32_t)(t & r->mask);
			uint32_t rem = r->data_size - off;

			if (rem < NLMSG_HDRLEN) {
				t += rem;
				continue;
			}
			memcpy(&h, r->data + off, sizeof(h));
			if (h.nlmsg_type != NLMSG_NOOP ||
			    h.nlmsg_len < NLMSG_HDRLEN || h.nlmsg_len > rem)
				break;
			t += NLMSG_ALIGN(h.nlmsg_len);
		}
		if (lapped(r, tail, &t2)) {
			if ((int64_t)(t2 - load_acquire(&r->hdr->prod)) > 0)
				return 0;   /* mid-batch: try again later */
			tail = t2;
			continue;
		}
		r->pos = tail;
		if (t == load_acquire(&r->hdr->prod) || steps == 2)
			break;      /* nothing after the padding yet */
		if (r->seq_known && lost)
			*lost = (uint32_t)(h.nlmsg_seq - r->seq);
		r->seq = h.nlmsg_seq;
		r->seq_known = true;
		return -EOVERFLOW;
	}
	r->pos = tail;
	r->seq_known = false;
	return -EOVERFLOW;
}

int tdb_feed_read(struct tdb_ring *r, unsigned int budget,
		  tdb_ring_msg_fn *fn, void *arg, uint64_t *lost)
{
	unsigned int n = 0, work = 0;
	uint64_t p, t;
	int ret;

	if (r->dead)
		return -EPROTO;
	if (r->kind != TDB_RING_FEED)
		return -EINVAL;
	p = load_acquire(&r->hdr->prod);
	if (lapped(r, r->pos, &t)) {
		/* The producer is retiring messages of a batch it has not
		 * published yet: nothing is readable until it does. */
		if ((int64_t)(t - p) > 0)
			return 0;
		return resync(r, t, lost);
	}
	if (p - r->pos > r->data_size || (p & 3))
		return violation(r, "feed producer index is out of range");
	while (r->pos != p && work < budget) {
		const char *why = NULL;
		uint32_t skip;
		long len = copy_msg(r, p, &skip, &why);
		const struct nlmsghdr *nlh = (const void *)r->msg;

		work++;
		/* Whatever we read, it only counts if the producer had not
		 * started overwriting it when we finished. */
		if (lapped(r, r->pos, &t)) {
			if ((int64_t)(t - load_acquire(&r->hdr->prod)) > 0)
				return (int)n;
			return resync(r, t, lost);
		}
		if (len < 0)
			return violation(r, why);
		if (!len) {
			r->pos += skip;
			continue;
		}
		if (r->from_set) {
			int32_t d = (int32_t)(nlh->nlmsg_seq - r->from_seq);

			if (d < 0) {            /* before the start: skip */
				r->seq = nlh->nlmsg_seq + 1;
				r->seq_known = true;
				r->pos += (uint64_t)len;
				continue;
			}
			r->from_set = false;
			if (d > 0) {            /* the start was overwritten */
				r->seq = nlh->nlmsg_seq;
				r->seq_known = true;
				if (lost)
					*lost = (uint64_t)d;
				return -EOVERFLOW;
			}
		}
		if (r->seq_known && nlh->nlmsg_seq != r->seq)
			return violation(r, "feed sequence number skipped "
					    "without a lap");
		r->seq = nlh->nlmsg_seq + 1;
		r->seq_known = true;
		r->pos += (uint64_t)len;
		n++;
		ret = fn(arg, nlh);
		if (ret < 0)
			return ret;
	}
	return (int)n;
}

int tdb_feed_start_at(struct tdb_ring *r, uint32_t seq)
{
	uint64_t t, p;

	if (r->dead)
		return -EPROTO;
	if (r->kind != TDB_RING_FEED)
		return -EINVAL;
	t = load_acquire(&r->hdr->tail);
	p = load_acquire(&r->hdr->prod);
	if ((t & 3) || p - t > r->data_size)
		return violation(r, "feed tail is out of range");
	r->pos = t;
	r->seq_known = false;
	r->from_set = true;
	r->from_seq = seq;
	return 0;
}

int tdb_feed_wait(struct tdb_ring *r, int timeout_ms)
{
	uint32_t v;

	if (r->dead)
		return -EPROTO;
	v = __atomic_load_n(&r->hdr->futex, __ATOMIC_SEQ_CST);
	if (load_acquire(&r->hdr->prod) != r->pos)
		return 0;
	return futex_wait(&r->hdr->futex, v, timeout_ms);
}
