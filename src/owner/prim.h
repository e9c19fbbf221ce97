/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * prim.h - the few primitives the owner (src/owner) needs beyond
 * platform.h, written once so that the same sources build into tdbd and
 * tdb.ko: an intrusive doubly linked list, reference counts and
 * statistics counters on plain integers, and string helpers.
 *
 * Everything here is static inline on platform.h's atomics; nothing is
 * taken from libc or the kernel (tests/check_symbols.sh checks the
 * owner's objects).  Names carry the tdbo_ prefix because the kernel's
 * <linux/types.h>, which platform.h includes there, already defines
 * struct list_head and friends.
 */
#ifndef TDB_OWNER_PRIM_H
#define TDB_OWNER_PRIM_H

#include "platform.h"
#include "tdb/proto.h"    /* tdb_escape */

#define tdbo_container_of(p, type, member) \
	((type *)(void *)((char *)(p) - __builtin_offsetof(type, member)))

/* --- lists ------------------------------------------------------------ */

/* A list head, or a node in a list.  An empty head (and a node on no
 * list, after tdbo_list_del_init) points at itself. */
struct tdbo_list {
	struct tdbo_list *next, *prev;
};

static inline void tdbo_list_init(struct tdbo_list *h)
{
	h->next = h;
	h->prev = h;
}

static inline bool tdbo_list_empty(const struct tdbo_list *h)
{
	return h->next == h;
}

static inline void tdbo_list_insert(struct tdbo_list *n,
				    struct tdbo_list *prev,
				    struct tdbo_list *next)
{
	next->prev = n;
	n->next = next;
	n->prev = prev;
	prev->next = n;
}

/* At the front (tdbo_list_add) or the back (tdbo_list_add_tail). */
static inline void tdbo_list_add(struct tdbo_list *n, struct tdbo_list *h)
{
	tdbo_list_insert(n, h, h->next);
}

static inline void tdbo_list_add_tail(struct tdbo_list *n,
				      struct tdbo_list *h)
{
	tdbo_list_insert(n, h->prev, h);
}

static inline void tdbo_list_del(struct tdbo_list *n)
{
	n->next->prev = n->prev;
	n->prev->next = n->next;
	n->next = n->prev = n;
}

#define tdbo_list_entry(p, type, member) tdbo_container_of(p, type, member)
#define tdbo_list_first(h, type, member) \
	tdbo_list_entry((h)->next, type, member)

/* for (each entry e of type T on list h, linked through member m) */
#define tdbo_list_for_each(e, h, m)					\
	for (e = tdbo_list_entry((h)->next, __typeof__(*e), m);	\
	     &e->m != (h);						\
	     e = tdbo_list_entry(e->m.next, __typeof__(*e), m))

/* The same, safe against removing e (n: the next entry, saved). */
#define tdbo_list_for_each_safe(e, n, h, m)				\
	for (e = tdbo_list_entry((h)->next, __typeof__(*e), m),	\
	     n = tdbo_list_entry(e->m.next, __typeof__(*e), m);	\
	     &e->m != (h);						\
	     e = n, n = tdbo_list_entry(n->m.next, __typeof__(*n), m))

/* --- reference counts and counters ------------------------------------ */

/* A reference count: the last tdbo_ref_put (true) frees the object. */
static inline void tdbo_ref_init(uint32_t *r, uint32_t v)
{
	tdb_store_relaxed(r, v);
}

static inline void tdbo_ref_get(uint32_t *r)
{
	tdb_fetch_add(r, 1);
}

static inline bool tdbo_ref_put(uint32_t *r)
{
	return tdb_fetch_sub(r, 1) == 1;
}

/* Statistics, read by STATS from any thread. */
#define tdbo_add(p, v)  ((void)tdb_fetch_add((p), (v)))
#define tdbo_sub(p, v)  ((void)tdb_fetch_sub((p), (v)))
#define tdbo_inc(p)     tdbo_add((p), 1)
#define tdbo_dec(p)     tdbo_sub((p), 1)
#define tdbo_read(p)    tdb_load_relaxed(p)

/* --- strings (names are at most TDBE_NAME_MAX bytes) ------------------ */

static inline size_t tdbo_strlen(const char *s)
{
	size_t n = 0;

	while (s[n])
		n++;
	return n;
}

static inline bool tdbo_streq(const char *a, const char *b)
{
	while (*a && *a == *b) {
		a++;
		b++;
	}
	return *a == *b;
}

/* Copy at most size - 1 bytes and a NUL (size > 0). */
static inline void tdbo_strlcpy(char *dst, const char *src, size_t size)
{
	size_t n = 0;

	while (n + 1 < size && src[n]) {
		dst[n] = src[n];
		n++;
	}
	dst[n] = '\0';
}

/* --- texts for extended acks that name a number or a key ------------
 * A text of at most TDBO_TEXT - 1 bytes built by appending, truncated
 * at the end (never overrun); it lives where the answer is built from
 * (the client's or the transaction's `why`).  Key bytes come from a
 * client: shown escaped (tdb_escape), at most 48 of them. */
#ifndef TDBO_TEXT
#define TDBO_TEXT 256u         /* as in owner.h */
#endif

static inline void tdbo_text_add(char *b, const char *s)
{
	size_t n = tdbo_strlen(b);

	while (*s && n + 1 < TDBO_TEXT)
		b[n++] = *s++;
	b[n] = '\0';
}

static inline void tdbo_text_u64(char *b, uint64_t v)
{
	char d[24];
	int i = (int)sizeof(d) - 1;

	d[i] = '\0';
	do {
		d[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	tdbo_text_add(b, d + i);
}

static inline void tdbo_text_key(char *b, const void *key, size_t klen)
{
	char e[4 * 48 + 1];

	tdb_escape(e, sizeof(e), key, klen < 48 ? klen : 48);
	tdbo_text_add(b, "'");
	tdbo_text_add(b, e);
	tdbo_text_add(b, klen > 48 ? "'..." : "'");
}

/* --- memory ---------------------------------------------------------- */

/* n zeroed elements of size bytes, or NULL (also if n * size wraps). */
static inline void *tdbo_alloc_array(size_t n, size_t size)
{
	if (size && n > (size_t)-1 / size)
		return NULL;
	return tdbp_alloc(n * size);
}

static inline void *tdbo_memdup(const void *p, size_t n)
{
	void *q = tdbp_alloc(n ? n : 1);

	if (q && n)
		memcpy(q, p, n);
	return q;
}

static inline bool tdbo_is_pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

/* The smallest power of two >= v (v <= 2^63). */
static inline uint64_t tdbo_roundup_pow2(uint64_t v)
{
	uint64_t p = 1;

	while (p < v)
		p <<= 1;
	return p;
}

#define tdbo_min(a, b) ((a) < (b) ? (a) : (b))
#define tdbo_max(a, b) ((a) > (b) ? (a) : (b))

#endif
