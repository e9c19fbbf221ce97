// SPDX-License-Identifier: GPL-2.0-only
/*
 * dirty.c - dirty sets (durable.h): the keys each table changed since
 * the last checkpoint, so that a checkpoint writes only those.  Owns
 * struct dirty; a table holds its set in dt->ckpt_dirty (or
 * dt->ckpt_full: the table is written whole), both under the owner's
 * write lock, where the owner's dirty hook (tdbd_dirty_add) runs.
 *
 * Invariants:
 *  - A set is an open-addressing hash of the keys (xxh64), at most half
 *    full; its keys' bytes live in chunks freed with the set.
 *  - Out of memory, or over DIRTY_MAX keys, the table goes whole
 *    (ckpt_full, no set): a checkpoint then rewrites all of it, so a key
 *    is never forgotten.
 *  - A checkpoint takes a table's set (and ckpt_full) under the write
 *    lock and gives it back (dur_dirty_merge) if it fails.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "durable_int.h"
#include "internal.h"           /* src/owner: struct tdbo_table */
#include "keysort.h"

#define DIRTY_MAX (1u << 20)    /* keys tracked per table; beyond, the
				 * table is rewritten whole */

struct dkey {
	uint64_t h;
	uint32_t klen;
	unsigned char *key;     /* NULL: empty slot */
};

/* The keys' bytes, in chunks freed with the set (a malloc per key was
 * a fifth of a change's cost in tdbd). */
struct dchunk {
	struct dchunk *next;
	size_t used, cap;
	unsigned char data[];
};

#define DCHUNK (64u << 10)

struct dirty {
	struct dkey *v;
	uint32_t n, cap;        /* cap a power of two; n <= cap / 2 */
	struct dchunk *chunks;  /* the newest first */
};

void tdbd_dirty_free(struct dirty *s)
{
	if (!s)
		return;
	while (s->chunks) {
		struct dchunk *c = s->chunks;

		s->chunks = c->next;
		free(c);
	}
	free(s->v);
	free(s);
}

/* A copy of key in s's chunks, or NULL. */
static unsigned char *dirty_copy(struct dirty *s, const void *key,
				 size_t klen)
{
	struct dchunk *c = s->chunks;
	size_t n = klen ? klen : 1;     /* an empty key: a non-NULL slot */
	unsigned char *p;

	if (!c || c->cap - c->used < n) {
		size_t cap = n > DCHUNK ? n : DCHUNK;

		if (!(c = malloc(sizeof(*c) + cap)))
			return NULL;
		c->used = 0;
		c->cap = cap;
		c->next = s->chunks;
		s->chunks = c;
	}
	p = c->data + c->used;
	if (klen)
		memcpy(p, key, klen);
	c->used += n;
	return p;
}

static struct dkey *dirty_slot(struct dirty *s, uint64_t h, const void *key,
			       size_t klen)
{
	uint32_t i = (uint32_t)h & (s->cap - 1);

	while (s->v[i].key && !(s->v[i].h == h && s->v[i].klen == klen &&
				!memcmp(s->v[i].key, key, klen)))
		i = (i + 1) & (s->cap - 1);
	return &s->v[i];
}

static int dirty_grow(struct dirty *s)
{
	struct dirty t = { .cap = s->cap ? s->cap * 2 : 64 };
	uint32_t i;

	t.v = calloc(t.cap, sizeof(*t.v));
	if (!t.v)
		return -ENOMEM;
	for (i = 0; i < s->cap; i++)
		if (s->v[i].key)
			*dirty_slot(&t, s->v[i].h, s->v[i].key,
				    s->v[i].klen) = s->v[i];
	free(s->v);
	s->v = t.v;
	s->cap = t.cap;
	return 0;
}

/* The owner's dirty hook, under its write lock.  Out of memory or over
 * DIRTY_MAX: the table goes whole. */
void tdbd_dirty_add(void *arg, struct tdbo_table *dt, const void *key,
		    size_t klen)
{
	uint64_t h = XXH64(key, klen, 0);
	struct dirty *s = dt->ckpt_dirty;
	struct dkey *k;

	(void)arg;
	if (dt->ckpt_full)
		return;
	if (!s && !(s = dt->ckpt_dirty = calloc(1, sizeof(*s))))
		goto whole;
	if ((s->n + 1) * 2 > s->cap) {
		if (s->n >= DIRTY_MAX || dirty_grow(s))
			goto whole;
	}
	k = dirty_slot(s, h, key, klen);
	if (k->key)
		return;
	if (!(k->key = dirty_copy(s, key, klen)))
		goto whole;
	k->h = h;
	k->klen = (uint32_t)klen;
	s->n++;
	return;
whole:
	dt->ckpt_full = true;
	tdbd_dirty_free(dt->ckpt_dirty);
	dt->ckpt_dirty = NULL;
}

/* Give a checkpoint's set back to the table (the checkpoint failed). */
void dur_dirty_merge(struct tdbo_table *dt, struct dirty *s, bool full)
{
	uint32_t i;

	if (full)
		dt->ckpt_full = true;
	for (i = 0; s && i < s->cap; i++)
		if (s->v[i].key)
			tdbd_dirty_add(NULL, dt, s->v[i].key, s->v[i].klen);
	tdbd_dirty_free(s);
}

uint32_t dur_dirty_count(const struct dirty *s)
{
	return s ? s->n : 0;
}

int dur_dirty_keys(const struct dirty *s, struct keyset *ks)
{
	uint32_t i;
	int err = 0;

	for (i = 0; !err && s && i < s->cap; i++)
		if (s->v[i].key)
			err = keyset_add(ks, s->v[i].key, s->v[i].klen);
	return err;
}
