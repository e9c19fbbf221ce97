// SPDX-License-Identifier: MIT
/*
 * ring.c - the ring index discipline, compiled unchanged into tdbd,
 * libtdbclient and tdb.ko (ring_core.h says what it owns; the ABI is
 * include/tdb/ring.h): format and attach, the producer (reserve, NOOP
 * padding, commit, publish), the consumer (load, pop, release), the FEED
 * producer's tail and the feed reader.
 *
 * Rules kept everywhere below:
 *  - our own index lives in struct tdb_ring and is only ever stored to
 *    the header, never loaded back from it;
 *  - the peer's index is loaded once per call, with acquire, and checked
 *    against what is possible before it is used;
 *  - a consumer copies a message's header once, checks the length it
 *    read, then copies the body once; it hands its private copy upward;
 *  - a FEED producer reads back only its own data (readers map it
 *    read-only), to find where the messages it retires end;
 *  - every loop is bounded by the budget or by the ring size.
 */
#include "ring_core.h"

/* --- helpers ------------------------------------------------------------- */

/* The frame walker's view of our data area (ring_core.h, "frames"): the
 * private copies of the sizes, never the header's. */
static inline struct tdb_frames frames_of(const struct tdb_ring *r)
{
	struct tdb_frames a = { r->data, r->data_size, r->max_msg };

	return a;
}

int tdb_ring_violation(struct tdb_ring *r, const char *why)
{
	if (!r->dead) {
		r->dead = true;
		r->error = why;
	}
	/* The flag tells the peer, except in a FEED ring (readers map it
	 * read-only) and during attach (the kind is not trusted yet).  The
	 * header is shared memory, but an atomic OR on it is safe whatever
	 * the peer does. */
	if (r->hdr && (r->kind == TDB_RING_SUBMIT ||
		       r->kind == TDB_RING_COMPLETE))
		tdb_fetch_or(&r->hdr->flags, TDB_RING_F_OVERRUN);
	return -EPROTO;
}

/* Wake the other side if it said (through `flag`) that it sleeps. */
static int wake_if(struct tdb_ring *r, uint32_t flag)
{
	if (!r->ops || !r->ops->wake)
		return 0;
	tdb_smp_mb();
	if (!(tdb_load_relaxed(&r->hdr->flags) & flag))
		return 0;
	tdb_fetch_and(&r->hdr->flags, ~flag);
	tdb_fetch_add(&r->hdr->futex, 1);
	return r->ops->wake(r, flag);
}

/* --- setup --------------------------------------------------------------- */

static bool good_size(uint32_t data_size)
{
	return data_size >= TDB_RING_MIN_DATA &&
	       data_size <= TDB_RING_MAX_DATA &&
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
	/* The header is complete before magic says so. */
	tdb_store_release(&h->magic, TDB_RING_MAGIC);
	return 0;
}

/* Check the header once and keep private copies of it. */
static int check_hdr(struct tdb_ring *r, size_t data_map_size,
		     uint32_t kind)
{
	struct tdb_ring_hdr *h = r->hdr;
	uint64_t magic = tdb_load_acquire(&h->magic);
	uint32_t version = tdb_load_relaxed(&h->version);
	uint32_t hkind = tdb_load_relaxed(&h->kind);
	uint32_t hdr_size = tdb_load_relaxed(&h->hdr_size);
	uint32_t size = tdb_load_relaxed(&h->data_size);
	uint32_t max_msg = tdb_load_relaxed(&h->max_msg);

	if (magic != TDB_RING_MAGIC)
		return tdb_ring_violation(r, "ring header has a bad magic "
					  "number");
	if (version != TDB_RING_VERSION)
		return tdb_ring_violation(r, "ring header has an unknown "
					  "version");
	if (hkind != kind)
		return tdb_ring_violation(r, "ring is of another kind");
	if (hdr_size != TDB_RING_HDR_SIZE)
		return tdb_ring_violation(r, "ring header size is wrong");
	if (!good_size(size))
		return tdb_ring_violation(r, "ring data size is not a power "
					  "of two between 4 KiB and 1 GiB");
	if (size != data_map_size)
		return tdb_ring_violation(r, "ring data size differs from "
					  "the mapping");
	if (max_msg < NLMSG_HDRLEN || max_msg > size / 2 || (max_msg & 3))
		return tdb_ring_violation(r, "ring max_msg is out of range");
	r->kind = kind;
	r->data_size = size;
	r->mask = size - 1;
	r->max_msg = max_msg;
	return 0;
}

/* Where the frame at index i of a FEED ring ends, and its header in *h
 * if h is not NULL (the producer's own data, below r->pos: readers
 * cannot write it).  Not inlined: it runs only when a FEED producer
 * retires messages, and inlined into tdb_ring_reserve_err (with a header
 * on the stack) it cost every reserve of every ring kind registers. */
static __attribute__((__noinline__))
uint64_t feed_next(const struct tdb_ring *r, uint64_t i, struct nlmsghdr *h)
{
	struct tdb_frames a = frames_of(r);
	struct nlmsghdr own;
	const char *why;
	long step;

	if (!h)
		h = &own;
	step = tdb_frame_at(&a, i, r->pos, h, &why);
	if (step < 0) {         /* cannot happen; never loop on it */
		h->nlmsg_type = NLMSG_NOOP;
		return i + (r->data_size - (uint32_t)(i & r->mask));
	}
	return i + (uint64_t)step;
}

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
		struct nlmsghdr h;
		uint64_t next = feed_next(r, i, &h);

		if (h.nlmsg_type != NLMSG_NOOP)
			r->seq = h.nlmsg_seq + 1;
		if (next == i || next - r->other > r->pos - r->other)
			break;
		i = next;
	}
}

static int attach_producer(struct tdb_ring *r)
{
	r->pos = tdb_load_acquire(&r->hdr->prod);
	r->other = r->kind == TDB_RING_FEED ?
		   tdb_load_acquire(&r->hdr->tail) :
		   tdb_load_acquire(&r->hdr->cons);
	if (r->pos - r->other > r->data_size || (r->pos & 3) ||
	    (r->other & 3))
		return tdb_ring_violation(r, "ring indices are inconsistent");
	r->published = r->pos;
	if (r->kind == TDB_RING_FEED)
		feed_resume_seq(r);
	return 0;
}

static int attach_consumer(struct tdb_ring *r)
{
	uint64_t prod = tdb_load_acquire(&r->hdr->prod);

	r->pos = r->kind == TDB_RING_FEED ? prod :
		 tdb_load_acquire(&r->hdr->cons);
	if (prod - r->pos > r->data_size || (r->pos & 3))
		return tdb_ring_violation(r, "ring indices are inconsistent");
	r->end = r->pos;
	return 0;
}

int tdb_ring_attach(struct tdb_ring *r, void *hdr, const void *data,
		    size_t data_map_size, uint32_t kind,
		    enum tdb_ring_role role, const struct tdb_ring_ops *ops)
{
	int err;

	memset(r, 0, sizeof(*r));
	r->eventfd = -1;
	r->hdr = hdr;
	r->data = (unsigned char *)data;
	r->ops = ops;
	if (!hdr || !data)
		return -EINVAL;
	/* Each field once; from here on only the private copies count. */
	err = check_hdr(r, data_map_size, kind);
	if (err)
		return err;
	return role == TDB_RING_PRODUCER ? attach_producer(r) :
					   attach_consumer(r);
}

const char *tdb_ring_error(const struct tdb_ring *r)
{
	return r->error;
}

/* --- producer ------------------------------------------------------------ */

/* Make room for the bytes up to `end` in a FEED ring by retiring the
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
		t = feed_next(r, t, (struct nlmsghdr *)0);
	/* tail may pass prod when a batch bigger than the ring is not yet
	 * published; readers then wait for the publish (tdb_feed_read). */
	r->other = t;
	tdb_store_release(&r->hdr->tail, t);
	/* The tail store must be visible before the data stores that
	 * follow (a release orders it only after earlier accesses). */
	tdb_smp_mb();
}

/* has_room's slow path: read the consumer's index, once, and check it. */
static bool load_cons(struct tdb_ring *r, uint64_t end)
{
	uint64_t c = tdb_load_acquire(&r->hdr->cons);

	/* The consumer can only have moved forward, up to what we
	 * published. */
	if (c - r->other > r->published - r->other || (c & 3)) {
		tdb_ring_violation(r, "consumer index is outside the "
				   "published range");
		return false;
	}
	r->other = c;
	return end - c <= r->data_size;
}

/* Is there room up to `end`?  What we know of the consumer's index is
 * usually enough (inline: once per reserve); else load_cons. */
static inline bool has_room(struct tdb_ring *r, uint64_t end)
{
	return end - r->other <= r->data_size || load_cons(r, end);
}

/* The padding before a message of `need` bytes at r->pos (the bytes to
 * the end of the data area, if it does not fit there). */
static uint32_t wrap_pad(const struct tdb_ring *r, uint32_t need)
{
	uint32_t off = (uint32_t)(r->pos & r->mask);
	uint32_t rem = r->data_size - off;

	return need > rem ? rem : 0;
}

static uint32_t need_of(size_t len)
{
	return NLMSG_ALIGN((uint32_t)(len < NLMSG_HDRLEN ? NLMSG_HDRLEN
							  : len));
}

bool tdb_ring_has_room(struct tdb_ring *r, size_t len)
{
	uint32_t need;

	if (r->dead || r->reserved || len > r->max_msg)
		return false;
	if (r->kind == TDB_RING_FEED)
		return true;
	need = need_of(len);
	return has_room(r, r->pos + wrap_pad(r, need) + need);
}

static void *reserve_fail(int *err, int e)
{
	if (err)
		*err = e;
	return (void *)0;
}

void *tdb_ring_reserve_err(struct tdb_ring *r, size_t len, int *err)
{
	uint32_t need, pad;

	if (r->dead)
		return reserve_fail(err, -EPROTO);
	if (r->reserved || len < NLMSG_HDRLEN)
		return reserve_fail(err, -EINVAL);
	if (len > r->max_msg)
		return reserve_fail(err, -EMSGSIZE);
	need = NLMSG_ALIGN((uint32_t)len);
	pad = wrap_pad(r, need);
	if (r->kind == TDB_RING_FEED)
		feed_make_room(r, r->pos + pad + need);
	else if (!has_room(r, r->pos + pad + need))
		return reserve_fail(err, r->dead ? -EPROTO : -EAGAIN);
	if (pad) {
		if (pad >= NLMSG_HDRLEN) {
			struct nlmsghdr *noop = (struct nlmsghdr *)
				(r->data + (r->pos & r->mask));

			memset(noop, 0, NLMSG_HDRLEN);
			noop->nlmsg_len = pad;
			noop->nlmsg_type = NLMSG_NOOP;
		}
		r->pos += pad;
	}
	r->reserved = need;
	r->reserved_len = (uint32_t)len;
	return r->data + (r->pos & r->mask);
}

int tdb_ring_commit(struct tdb_ring *r, size_t len)
{
	unsigned char *p = r->data + (r->pos & r->mask);
	struct nlmsghdr *nlh = (struct nlmsghdr *)p;
	size_t i;

	/* len against what was asked for, before any 32-bit rounding. */
	if (!r->reserved || len < NLMSG_HDRLEN || len > r->reserved_len)
		return -EINVAL;
	nlh->nlmsg_len = (uint32_t)len;        /* ours, whatever was built */
	if (r->kind == TDB_RING_FEED)
		nlh->nlmsg_seq = r->seq++;
	/* The consumer sees whole words: no stale bytes in the padding
	 * (at most 3 bytes: stores, not a memset call). */
	if (tdb_unlikely(len & (NLMSG_ALIGNTO - 1)))
		for (i = len; i < NLMSG_ALIGN(len); i++)
			p[i] = 0;
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
	tdb_store_release(&r->hdr->prod, r->pos);
	/* One word, read by tdb_ring_unread() without the ring's lock. */
	tdb_store_relaxed(&r->published, r->pos);
	if (r->kind == TDB_RING_FEED) {
		/* Readers map the header read-only and cannot say they
		 * sleep, so every publish bumps the futex (and the home
		 * wakes them): batch to amortise it. */
		tdb_smp_mb();
		tdb_fetch_add(&r->hdr->futex, 1);
		return r->ops && r->ops->wake ? r->ops->wake(r, 0) : 0;
	}
	return wake_if(r, TDB_RING_F_CONS_WAITING);
}

int tdb_ring_put_msg(struct tdb_ring *r, const struct nlmsghdr *nlh)
{
	size_t len = nlh->nlmsg_len;
	void *dst;
	int err;

	if (len < NLMSG_HDRLEN)
		return -EINVAL;
	dst = tdb_ring_reserve_err(r, len, &err);
	if (!dst)
		return err;
	memcpy(dst, nlh, len);
	return tdb_ring_commit(r, len);
}

int tdb_ring_space_prepare(struct tdb_ring *r, size_t len, uint32_t *v)
{
	uint32_t need;
	uint64_t end;

	if (len > r->max_msg)
		return -EMSGSIZE;
	if (r->kind == TDB_RING_FEED)
		return 0;
	need = need_of(len);
	end = r->pos + wrap_pad(r, need) + need;
	if (has_room(r, end))
		return 0;
	if (r->dead)
		return -EPROTO;
	/* Unpublished messages would never be consumed. */
	tdb_ring_publish(r);
	/* The futex value first, then the flag: a consumer that frees too
	 * little, clears our flag and bumps the futex after we read it
	 * makes the wait return at once, and we set the flag again; read
	 * after the flag, that bump would leave us asleep with no flag set
	 * (a lost wake-up). */
	*v = tdb_load_acquire(&r->hdr->futex);
	tdb_fetch_or(&r->hdr->flags, TDB_RING_F_PROD_WAITING);
	if (has_room(r, end))
		return 0;
	return r->dead ? -EPROTO : 1;
}

/* --- consumer ------------------------------------------------------------ */

/*
 * Copy the frame at r->pos into r->msg and check it against the
 * published end p: the header through the frame walker (once, into
 * r->msg, checked there), then the body, once, with the checked length.
 * Returns its padded length, 0 for padding to skip (*skip set), or
 * -EPROTO with *why set (the caller decides whether that is a
 * violation: a feed reader first checks whether it was lapped).
 * Inline: it runs once per message, in pop and in tdb_feed_read.
 */
static inline long copy_msg(struct tdb_ring *r, uint64_t p,
			    uint32_t *skip, const char **why)
{
	struct nlmsghdr *nlh = (struct nlmsghdr *)r->msg;
	struct tdb_frames a = frames_of(r);
	long step = tdb_frame_at(&a, r->pos, p, nlh, why);

	*skip = 0;
	if (step < 0)
		return step;
	if (nlh->nlmsg_type == NLMSG_NOOP) {
		*skip = (uint32_t)step;
		return 0;
	}
	/* The walker's own expression for the frame's place, so that the
	 * compiler computes it once. */
	memcpy(r->msg + NLMSG_HDRLEN,
	       a.data + (uint32_t)(r->pos & (a.size - 1)) + NLMSG_HDRLEN,
	       nlh->nlmsg_len - NLMSG_HDRLEN);
	return step;
}

/* The producer's index, loaded once and checked. */
static int load_prod(struct tdb_ring *r, uint64_t *p)
{
	*p = tdb_load_acquire(&r->hdr->prod);
	if (*p - r->pos > r->data_size)
		return tdb_ring_violation(r, "producer index is more than a "
					  "ring ahead or behind the consumer");
	if (*p & 3)
		return tdb_ring_violation(r, "producer index is not 4-byte "
					  "aligned");
	return 0;
}

/* The bodies of tdb_ring_load and tdb_ring_pop, which consume inlines
 * (the exported functions may be interposed, so calls to them are not
 * inlined in PIC code, and pop runs once per message). */
static inline int load(struct tdb_ring *r)
{
	if (r->dead)
		return -EPROTO;
	if (r->kind == TDB_RING_FEED || !r->msg)
		return -EINVAL;
	return load_prod(r, &r->end);
}

static inline long pop(struct tdb_ring *r, unsigned int *budget)
{
	while (r->pos != r->end && *budget) {
		const char *why;
		uint32_t skip;
		long len = copy_msg(r, r->end, &skip, &why);

		(*budget)--;
		if (len < 0)
			return tdb_ring_violation(r, why);
		if (!len) {
			r->pos += skip;
			continue;
		}
		r->pos += (uint64_t)len;
		/* The copy's nlmsg_len is the one we checked. */
		return (long)((const struct nlmsghdr *)r->msg)->nlmsg_len;
	}
	return 0;
}

int tdb_ring_load(struct tdb_ring *r)
{
	return load(r);
}

long tdb_ring_pop(struct tdb_ring *r, unsigned int *budget)
{
	return r->dead ? -EPROTO : pop(r, budget);
}

void tdb_ring_release(struct tdb_ring *r)
{
	if (r->dead)
		return;
	tdb_store_release(&r->hdr->cons, r->pos);
	wake_if(r, TDB_RING_F_PROD_WAITING);
}

int tdb_ring_consume(struct tdb_ring *r, unsigned int budget,
		     tdb_ring_msg_fn *fn, void *arg)
{
	unsigned int n = 0;
	int ret = load(r);
	long len;

	if (ret)
		return ret;
	/* fn cannot kill the ring: pop needs no dead check here. */
	while ((len = pop(r, &budget)) > 0) {
		n++;
		ret = fn(arg, (const struct nlmsghdr *)r->msg);
		if (ret < 0)
			break;
	}
	if (len < 0)
		return (int)len;
	tdb_ring_release(r);
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

int tdb_ring_wait_prepare(struct tdb_ring *r, uint32_t *v)
{
	uint64_t p;
	int err;

	if (r->dead)
		return -EPROTO;
	/* The futex value before the flag, as in tdb_ring_space_prepare. */
	*v = tdb_load_acquire(&r->hdr->futex);
	tdb_fetch_or(&r->hdr->flags, TDB_RING_F_CONS_WAITING);
	err = load_prod(r, &p);
	if (err)
		return err;
	if (p != r->pos) {
		/* Not going to sleep: spare the producer a wake-up call. */
		tdb_fetch_and(&r->hdr->flags, ~TDB_RING_F_CONS_WAITING);
		return 0;
	}
	return 1;
}

bool tdb_ring_unread(const struct tdb_ring *r)
{
	uint64_t p = tdb_load_relaxed(&r->published);
	uint64_t c = tdb_load_relaxed(&r->hdr->cons);

	return c != p;
}

/* --- feed readers -------------------------------------------------------- */

/* Has the producer retired the bytes from `from` on?  (tail passed it) */
static bool lapped(struct tdb_ring *r, uint64_t from, uint64_t *tail)
{
	/* The copy we made is ordered before the tail we read next. */
	tdb_smp_rmb();
	*tail = tdb_load_acquire(&r->hdr->tail);
	return (int64_t)(*tail - from) > 0;
}

/* Step t over padding (at most a skipped end and a NOOP); the header
 * found after it in *h.  Returns the number of steps taken (2: no
 * message found yet).  The bytes may be torn (the caller checks `tail`
 * after): the walk is bounded by the ring, not by a `prod`, and stops
 * at the first frame that is not padding, good or bad. */
static unsigned int skip_padding(struct tdb_ring *r, uint64_t *t,
				 struct nlmsghdr *h)
{
	struct tdb_frames a = frames_of(r);
	unsigned int steps;

	for (steps = 0; steps < 2; steps++) {
		const char *why;
		long step = tdb_frame_at(&a, *t, *t + r->data_size, h, &why);

		if (step < 0 || h->nlmsg_type != NLMSG_NOOP)
			break;
		*t += (uint64_t)step;
	}
	return steps;
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
		struct nlmsghdr h;
		unsigned int steps = skip_padding(r, &t, &h);

		if (lapped(r, tail, &t2)) {
			if ((int64_t)(t2 -
				      tdb_load_acquire(&r->hdr->prod)) > 0)
				return 0;   /* mid-batch: try again later */
			tail = t2;
			continue;
		}
		r->pos = tail;
		if (t == tdb_load_acquire(&r->hdr->prod) || steps == 2)
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

/* A message at the reader's position, before the start it was told
 * (tdb_feed_start_at): 1 to skip it, 0 to take it, -EOVERFLOW when the
 * start was overwritten. */
static int before_start(struct tdb_ring *r, const struct nlmsghdr *nlh,
			uint64_t *lost)
{
	int32_t d = (int32_t)(nlh->nlmsg_seq - r->from_seq);

	if (d < 0) {
		r->seq = nlh->nlmsg_seq + 1;
		r->seq_known = true;
		return 1;
	}
	r->from_set = false;
	if (d > 0) {
		r->seq = nlh->nlmsg_seq;
		r->seq_known = true;
		if (lost)
			*lost = (uint64_t)d;
		return -EOVERFLOW;
	}
	return 0;
}

int tdb_feed_read(struct tdb_ring *r, unsigned int budget,
		  tdb_ring_msg_fn *fn, void *arg, uint64_t *lost)
{
	unsigned int n = 0, work = 0;
	uint64_t p, t;
	int ret;

	if (r->dead)
		return -EPROTO;
	if (r->kind != TDB_RING_FEED || !r->msg)
		return -EINVAL;
	p = tdb_load_acquire(&r->hdr->prod);
	if (lapped(r, r->pos, &t)) {
		/* The producer is retiring messages of a batch it has not
		 * published yet: nothing is readable until it does. */
		if ((int64_t)(t - p) > 0)
			return 0;
		return resync(r, t, lost);
	}
	if (p - r->pos > r->data_size || (p & 3))
		return tdb_ring_violation(r, "feed producer index is out of "
					  "range");
	while (r->pos != p && work < budget) {
		const char *why;
		uint32_t skip;
		long len = copy_msg(r, p, &skip, &why);
		const struct nlmsghdr *nlh = (const void *)r->msg;

		work++;
		/* Whatever we read, it only counts if the producer had not
		 * started overwriting it when we finished. */
		if (lapped(r, r->pos, &t)) {
			if ((int64_t)(t -
				      tdb_load_acquire(&r->hdr->prod)) > 0)
				return (int)n;
			return resync(r, t, lost);
		}
		if (len < 0)
			return tdb_ring_violation(r, why);
		if (!len) {
			r->pos += skip;
			continue;
		}
		if (r->from_set) {
			ret = before_start(r, nlh, lost);
			if (ret < 0)
				return ret;
			if (ret) {
				r->pos += (uint64_t)len;
				continue;
			}
		}
		if (r->seq_known && nlh->nlmsg_seq != r->seq)
			return tdb_ring_violation(r, "feed sequence number "
						  "skipped without a lap");
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
	t = tdb_load_acquire(&r->hdr->tail);
	p = tdb_load_acquire(&r->hdr->prod);
	if ((t & 3) || p - t > r->data_size)
		return tdb_ring_violation(r, "feed tail is out of range");
	r->pos = t;
	r->seq_known = false;
	r->from_set = true;
	r->from_seq = seq;
	return 0;
}

int tdb_feed_wait_prepare(struct tdb_ring *r, uint32_t *v)
{
	if (r->dead)
		return -EPROTO;
	*v = tdb_load_acquire(&r->hdr->futex);
	if (tdb_load_acquire(&r->hdr->prod) != r->pos)
		return 0;
	return 1;
}
