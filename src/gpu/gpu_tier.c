/*
 * The device-memory tier's index (gpu_tier.h): a table of chunks by
 * (source, chunk) (common/chunk_table.h, as the chunk cache's), and a bump
 * allocator over the tier's bytes. Nothing is evicted, so an offset handed
 * out stays the chunk's. A reservation dropped (the device refused the
 * chunk, or its batch failed) gives its bytes back: to the bump when they
 * were the last handed out, else as a hole the next reservation that fits
 * takes (a source's chunks are mostly of one size).
 */
#include <pthread.h>
#include <stdlib.h>

#include "common/chunk_table.h"
#include "gpu/gpu_tier.h"

#define ALIGN 256 /* each chunk starts on a boundary every device load likes */

enum { RESERVED, HELD };

/* A chunk the tier holds or is taking in, found in the table by (the
 * source's address, chunk). */
typedef struct slot {
	dsv_chunk_link link; /* first */
	uint64_t at, n;
	int state;
} slot;

/* Room a dropped reservation gave back below the bump. */
typedef struct hole {
	uint64_t at, n;
} hole;

struct dsv_gpu_tier {
	pthread_mutex_t mu;
	uint64_t cap, used;
	dsv_chunk_table tab;
	uint64_t held, hits, misses;
	hole *holes;
	size_t nholes, holes_cap;
};

static uint64_t aligned(uint64_t n)
{
	return (n + ALIGN - 1) / ALIGN * ALIGN;
}

dsv_gpu_tier *dsv_gpu_tier_new(uint64_t cap)
{
	dsv_gpu_tier *t = calloc(1, sizeof(*t));
	if (!t || dsv_chunk_table_init(&t->tab, 64)) {
		free(t);
		return NULL;
	}
	t->cap = cap;
	pthread_mutex_init(&t->mu, NULL);
	return t;
}

void dsv_gpu_tier_free(dsv_gpu_tier *t)
{
	if (!t)
		return;
	dsv_chunk_table_fini(&t->tab, free);
	free(t->holes);
	pthread_mutex_destroy(&t->mu);
	free(t);
}

static slot *lookup(dsv_gpu_tier *t, const void *owner, uint64_t chunk)
{
	return (slot *)dsv_chunk_table_find(&t->tab, (uintptr_t)owner, chunk);
}

int dsv_gpu_tier_find(dsv_gpu_tier *t, const void *owner, uint64_t chunk, uint64_t *at)
{
	pthread_mutex_lock(&t->mu);
	slot *s = lookup(t, owner, chunk);
	int hit = s && s->state == HELD;
	if (hit) {
		*at = s->at;
		t->hits++;
	} else {
		t->misses++;
	}
	pthread_mutex_unlock(&t->mu);
	return hit;
}

/* Room for n bytes from a hole: 0 with *at, or -1 when none fits. */
static int from_hole(dsv_gpu_tier *t, uint64_t n, uint64_t *at)
{
	for (size_t i = 0; i < t->nholes; i++) {
		hole *h = &t->holes[i];
		if (h->n < n)
			continue;
		*at = h->at;
		uint64_t took = aligned(n) < h->n ? aligned(n) : h->n;
		h->at += took;
		h->n -= took;
		if (h->n == 0)
			*h = t->holes[--t->nholes];
		return 0;
	}
	return -1;
}

/* Room of n bytes at at, below the bump, kept for a later reservation
 * (lost when no memory is left to note it). */
static void add_hole(dsv_gpu_tier *t, uint64_t at, uint64_t n)
{
	if (t->nholes == t->holes_cap) {
		size_t cap = t->holes_cap ? 2 * t->holes_cap : 16;
		hole *h = realloc(t->holes, cap * sizeof(*h));
		if (!h)
			return;
		t->holes = h;
		t->holes_cap = cap;
	}
	t->holes[t->nholes++] = (hole){ at, n };
}

int dsv_gpu_tier_reserve(dsv_gpu_tier *t, const void *owner, uint64_t chunk, uint64_t n,
			 uint64_t *at)
{
	int rc = -1;
	slot *s;
	pthread_mutex_lock(&t->mu);
	uint64_t start = aligned(t->used);
	if (n == 0 || lookup(t, owner, chunk) || !(s = malloc(sizeof(*s))))
		goto out;
	if (from_hole(t, n, at) == 0) {
		start = *at;
	} else if (start > t->cap || n > t->cap - start) {
		free(s);
		goto out;
	} else {
		t->used = start + n;
	}
	*s = (slot){ { NULL, (uintptr_t)owner, chunk }, start, n, RESERVED };
	dsv_chunk_table_add(&t->tab, &s->link);
	*at = start;
	rc = 0;
out:
	pthread_mutex_unlock(&t->mu);
	return rc;
}

void dsv_gpu_tier_commit(dsv_gpu_tier *t, const void *owner, uint64_t chunk, int ok)
{
	pthread_mutex_lock(&t->mu);
	slot *s = lookup(t, owner, chunk);
	if (s && s->state == RESERVED) {
		if (ok) {
			s->state = HELD;
			t->held++;
		} else {
			if (s->at + s->n == t->used)
				t->used = s->at;
			else
				add_hole(t, s->at, aligned(s->n));
			dsv_chunk_table_remove(&t->tab, &s->link);
			free(s);
		}
	}
	pthread_mutex_unlock(&t->mu);
}

void dsv_gpu_tier_get_stats(dsv_gpu_tier *t, dsv_gpu_tier_stats *st)
{
	pthread_mutex_lock(&t->mu);
	*st = (dsv_gpu_tier_stats){ t->cap, t->used, t->held, t->hits, t->misses };
	pthread_mutex_unlock(&t->mu);
}
