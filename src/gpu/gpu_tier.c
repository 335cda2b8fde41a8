/*
 * The device-memory tier's index (gpu_tier.h): a table of chunks by
 * (source, chunk) (common/chunk_table.h, as the chunk cache's), and a bump
 * allocator over the tier's bytes. Nothing is evicted, so an offset handed
 * out stays the chunk's; a reservation that fails is forgotten (and its
 * bytes given back when they were the last handed out).
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

struct dsv_gpu_tier {
	pthread_mutex_t mu;
	uint64_t cap, used;
	dsv_chunk_table tab;
	uint64_t held, hits, misses;
};

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

int dsv_gpu_tier_reserve(dsv_gpu_tier *t, const void *owner, uint64_t chunk, uint64_t n,
			 uint64_t *at)
{
	int rc = -1;
	slot *s;
	pthread_mutex_lock(&t->mu);
	uint64_t start = (t->used + ALIGN - 1) / ALIGN * ALIGN;
	if (n == 0 || start > t->cap || n > t->cap - start || lookup(t, owner, chunk) ||
	    !(s = malloc(sizeof(*s))))
		goto out;
	*s = (slot){ { NULL, (uintptr_t)owner, chunk }, start, n, RESERVED };
	dsv_chunk_table_add(&t->tab, &s->link);
	t->used = start + n;
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
