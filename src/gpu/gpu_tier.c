/*
 * The device-memory tier's index (gpu_tier.h): a table of chunks, open
 * addressing on (source, chunk), and a bump allocator over the tier's
 * bytes. Nothing is evicted, so an offset handed out stays the chunk's.
 */
#include <pthread.h>
#include <stdlib.h>

#include "common/hash.h"
#include "gpu/gpu_tier.h"

#define ALIGN 256 /* each chunk starts on a boundary every device load likes */

enum { EMPTY, RESERVED, HELD, DROPPED };

typedef struct slot {
	const void *owner;
	uint64_t chunk, at, n;
	int state;
} slot;

struct dsv_gpu_tier {
	pthread_mutex_t mu;
	uint64_t cap, used;
	slot *tab;
	size_t mask, count; /* table size - 1; slots not EMPTY */
	uint64_t held, hits, misses;
};

dsv_gpu_tier *dsv_gpu_tier_new(uint64_t cap)
{
	dsv_gpu_tier *t = calloc(1, sizeof(*t));
	if (!t || !(t->tab = calloc(64, sizeof(slot)))) {
		free(t);
		return NULL;
	}
	t->mask = 63;
	t->cap = cap;
	pthread_mutex_init(&t->mu, NULL);
	return t;
}

void dsv_gpu_tier_free(dsv_gpu_tier *t)
{
	if (!t)
		return;
	pthread_mutex_destroy(&t->mu);
	free(t->tab);
	free(t);
}

/* The slot of (owner, chunk), or the EMPTY one where it would go. */
static slot *lookup(slot *tab, size_t mask, const void *owner, uint64_t chunk)
{
	for (size_t i = dsv_hash_chunk((uintptr_t)owner, chunk) & mask;; i = (i + 1) & mask) {
		slot *s = &tab[i];
		if (s->state == EMPTY || (s->owner == owner && s->chunk == chunk))
			return s;
	}
}

/* Doubles the table. @return 0, or -1 when out of memory. */
static int grow(dsv_gpu_tier *t)
{
	size_t n = (t->mask + 1) * 2;
	slot *tab = calloc(n, sizeof(slot));
	if (!tab)
		return -1;
	for (size_t i = 0; i <= t->mask; i++)
		if (t->tab[i].state != EMPTY)
			*lookup(tab, n - 1, t->tab[i].owner, t->tab[i].chunk) = t->tab[i];
	free(t->tab);
	t->tab = tab;
	t->mask = n - 1;
	return 0;
}

int dsv_gpu_tier_find(dsv_gpu_tier *t, const void *owner, uint64_t chunk, uint64_t *at)
{
	pthread_mutex_lock(&t->mu);
	slot *s = lookup(t->tab, t->mask, owner, chunk);
	int hit = s->state == HELD;
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
	pthread_mutex_lock(&t->mu);
	uint64_t start = (t->used + ALIGN - 1) / ALIGN * ALIGN;
	if (n == 0 || start > t->cap || n > t->cap - start)
		goto out;
	if ((t->count + 1) * 2 > t->mask + 1 && grow(t))
		goto out;
	slot *s = lookup(t->tab, t->mask, owner, chunk);
	if (s->state == RESERVED || s->state == HELD)
		goto out;
	if (s->state == EMPTY)
		t->count++;
	*s = (slot){ owner, chunk, start, n, RESERVED };
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
	slot *s = lookup(t->tab, t->mask, owner, chunk);
	if (s->state == RESERVED) {
		if (ok) {
			s->state = HELD;
			t->held++;
		} else {
			if (s->at + s->n == t->used)
				t->used = s->at;
			s->state = DROPPED; /* keeps the probe chains whole */
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
