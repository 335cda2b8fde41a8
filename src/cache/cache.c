/*
 * DESIGN
 *
 * What it is for: FUSE worker threads ask for byte ranges of a view; each
 * range lies in a few chunks whose decoded, transformed bytes are costly to
 * produce (pread + LZ4 + transform). The cache keeps recently used chunks so
 * that the many small reads a kernel makes of one chunk (readahead windows,
 * page faults of a memmap) decode it once.
 *
 * Invariants:
 *  - An entry is in the hash table while it is LOADING or READY; a FAILED
 *    entry is removed from the table before anyone is woken, so a failure is
 *    never served to a later get.
 *  - refs counts holders (gets not yet put). The table's own link does not
 *    count. An entry is freed when it is out of the table and refs is 0.
 *  - Only READY entries are on the LRU list; head = most recently used.
 *  - used = sum of sizes of entries in the table (LOADING ones too, so that
 *    concurrent misses count against the budget before they allocate).
 *  - Eviction only takes READY entries with refs == 0. Held entries can push
 *    used above the budget by at most (threads x chunk size); that overshoot
 *    is the "small fixed overhead" of the budget promise.
 *
 * Locking: one mutex (c->lock) for the table, the list and the counters; one
 * condition variable, broadcast when any fill completes. Fills and frees of
 * chunk buffers run outside the lock.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "dsview/cache.h"
#include "dsview/dsview.h"

enum { ST_LOADING, ST_READY, ST_FAILED };

struct dsv_cache_entry {
	uint32_t view;
	uint64_t chunk;
	size_t size;
	void *data;
	int refs;
	int state;
	int err;
	int in_table;
	dsv_cache_entry *hnext;
	dsv_cache_entry *prev, *next; /* LRU */
};

struct dsv_cache {
	pthread_mutex_t lock;
	pthread_cond_t filled;
	dsv_cache_fill_fn fill;
	void *ctx;
	dsv_cache_entry **buckets;
	size_t nbuckets; /* power of two */
	size_t count;
	dsv_cache_entry *head, *tail;
	dsv_cache_stats st;
};

static size_t hash_key(uint32_t view, uint64_t chunk)
{
	uint64_t h = chunk * 0x9E3779B97F4A7C15ull ^ ((uint64_t)view * 0xC2B2AE3D27D4EB4Full);
	h ^= h >> 29;
	return (size_t)h;
}

dsv_cache *dsv_cache_create(uint64_t budget, dsv_cache_fill_fn fill, void *ctx)
{
	dsv_cache *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->nbuckets = 1024;
	c->buckets = calloc(c->nbuckets, sizeof(*c->buckets));
	if (!c->buckets) {
		free(c);
		return NULL;
	}
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->filled, NULL);
	c->fill = fill;
	c->ctx = ctx;
	c->st.budget = budget;
	return c;
}

static void entry_free(dsv_cache_entry *e)
{
	free(e->data);
	free(e);
}

void dsv_cache_destroy(dsv_cache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->nbuckets; i++) {
		dsv_cache_entry *e = c->buckets[i], *n;
		for (; e; e = n) {
			n = e->hnext;
			entry_free(e);
		}
	}
	free(c->buckets);
	pthread_cond_destroy(&c->filled);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

static dsv_cache_entry *lookup(dsv_cache *c, uint32_t view, uint64_t chunk)
{
	dsv_cache_entry *e = c->buckets[hash_key(view, chunk) & (c->nbuckets - 1)];
	while (e && (e->view != view || e->chunk != chunk))
		e = e->hnext;
	return e;
}

static void grow(dsv_cache *c)
{
	size_t n = c->nbuckets * 2;
	dsv_cache_entry **b = calloc(n, sizeof(*b));
	if (!b)
		return; /* longer chains, still correct */
	for (size_t i = 0; i < c->nbuckets; i++) {
		dsv_cache_entry *e = c->buckets[i], *next;
		for (; e; e = next) {
			next = e->hnext;
			size_t h = hash_key(e->view, e->chunk) & (n - 1);
			e->hnext = b[h];
			b[h] = e;
		}
	}
	free(c->buckets);
	c->buckets = b;
	c->nbuckets = n;
}

static void table_insert(dsv_cache *c, dsv_cache_entry *e)
{
	if (c->count >= c->nbuckets)
		grow(c);
	size_t h = hash_key(e->view, e->chunk) & (c->nbuckets - 1);
	e->hnext = c->buckets[h];
	c->buckets[h] = e;
	e->in_table = 1;
	c->count++;
	c->st.bytes_used += e->size;
}

static void table_remove(dsv_cache *c, dsv_cache_entry *e)
{
	dsv_cache_entry **p = &c->buckets[hash_key(e->view, e->chunk) & (c->nbuckets - 1)];
	while (*p != e)
		p = &(*p)->hnext;
	*p = e->hnext;
	e->in_table = 0;
	c->count--;
	c->st.bytes_used -= e->size;
}

static void lru_unlink(dsv_cache *c, dsv_cache_entry *e)
{
	if (e->prev)
		e->prev->next = e->next;
	else
		c->head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		c->tail = e->prev;
	e->prev = e->next = NULL;
}

static void lru_push_head(dsv_cache *c, dsv_cache_entry *e)
{
	e->prev = NULL;
	e->next = c->head;
	if (c->head)
		c->head->prev = e;
	c->head = e;
	if (!c->tail)
		c->tail = e;
}

/* Unlinks unreferenced LRU entries until used <= budget; returns them as a
 * list (through hnext) for the caller to free outside the lock. */
static dsv_cache_entry *evict(dsv_cache *c)
{
	dsv_cache_entry *freed = NULL, *e = c->tail, *prev;
	for (; e && c->st.bytes_used > c->st.budget; e = prev) {
		prev = e->prev;
		if (e->refs)
			continue;
		lru_unlink(c, e);
		table_remove(c, e);
		c->st.evictions++;
		e->hnext = freed;
		freed = e;
	}
	return freed;
}

static void free_list(dsv_cache_entry *e)
{
	dsv_cache_entry *n;
	for (; e; e = n) {
		n = e->hnext;
		entry_free(e);
	}
}

int dsv_cache_get(dsv_cache *c, uint32_t view, uint64_t chunk, size_t size, dsv_cache_entry **out)
{
	dsv_cache_entry *e, *victims;
	int err;

	*out = NULL;
	pthread_mutex_lock(&c->lock);
	e = lookup(c, view, chunk);
	if (e) {
		e->refs++;
		if (e->state == ST_READY) {
			c->st.hits++;
			lru_unlink(c, e);
			lru_push_head(c, e);
			pthread_mutex_unlock(&c->lock);
			*out = e;
			return 0;
		}
		c->st.waits++;
		while (e->state == ST_LOADING)
			pthread_cond_wait(&c->filled, &c->lock);
		if (e->state == ST_READY) {
			c->st.hits++;
			pthread_mutex_unlock(&c->lock);
			*out = e;
			return 0;
		}
		err = e->err;
		if (--e->refs == 0)
			entry_free(e); /* failed entries are already out of the table */
		pthread_mutex_unlock(&c->lock);
		return err;
	}

	c->st.misses++;
	e = calloc(1, sizeof(*e));
	if (!e) {
		pthread_mutex_unlock(&c->lock);
		return DSV_ERR_NOMEM;
	}
	e->view = view;
	e->chunk = chunk;
	e->size = size;
	e->refs = 1;
	e->state = ST_LOADING;
	table_insert(c, e);
	victims = evict(c);
	pthread_mutex_unlock(&c->lock);
	free_list(victims);

	e->data = malloc(size ? size : 1);
	err = e->data ? c->fill(c->ctx, view, chunk, e->data, size) : DSV_ERR_NOMEM;

	pthread_mutex_lock(&c->lock);
	c->st.fills++;
	if (err) {
		c->st.fill_errors++;
		e->state = ST_FAILED;
		e->err = err;
		table_remove(c, e);
		pthread_cond_broadcast(&c->filled);
		if (--e->refs == 0)
			entry_free(e);
		pthread_mutex_unlock(&c->lock);
		return err;
	}
	e->state = ST_READY;
	lru_push_head(c, e);
	pthread_cond_broadcast(&c->filled);
	pthread_mutex_unlock(&c->lock);
	*out = e;
	return 0;
}

const void *dsv_cache_data(const dsv_cache_entry *e)
{
	return e->data;
}

size_t dsv_cache_size(const dsv_cache_entry *e)
{
	return e->size;
}

void dsv_cache_put(dsv_cache *c, dsv_cache_entry *e)
{
	dsv_cache_entry *victims = NULL;
	if (!e)
		return;
	pthread_mutex_lock(&c->lock);
	if (--e->refs == 0 && c->st.bytes_used > c->st.budget)
		victims = evict(c);
	pthread_mutex_unlock(&c->lock);
	free_list(victims);
}

void dsv_cache_get_stats(dsv_cache *c, dsv_cache_stats *out)
{
	pthread_mutex_lock(&c->lock);
	*out = c->st;
	out->entries = c->count;
	pthread_mutex_unlock(&c->lock);
}
