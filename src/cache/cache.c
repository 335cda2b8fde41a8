/*
 * DESIGN
 *
 * What it is for: FUSE worker threads and readahead threads ask for byte
 * ranges of a view; a range that lies in chunks that must be decoded whole
 * (LZ4, Fletcher32, HDF5-library filters) needs those chunks' elements,
 * costly to produce (pread + checksum + LZ4). The cache keeps decoded
 * chunks, in the source dtype, so that the many requests a kernel makes of
 * one chunk (readahead windows, page faults of a memmap, several readers)
 * decode it once; each request transforms what it needs from them. Plain
 * chunks (raw elements on disk) never come here: they are pread on demand.
 *
 * Policy (2Q): what the kernel asks for once lands in its page cache, so a
 * chunk that is only ever read once (a sequential epoch larger than the
 * budget) must not flush chunks that are read again. New chunks enter a
 * FIFO probation queue (IN); hits there are the same reader finishing the
 * chunk, or other rows of it, and change nothing. A chunk that falls out of
 * IN leaves its key in a ghost ring (no data). A miss on a ghost means the
 * chunk is wanted again: it is decoded into the MAIN queue, an LRU. IN may
 * use whatever MAIN does not, but once the budget is full it is the first
 * to give back down to a quarter of the budget, so a scan of any length
 * leaves MAIN's three quarters alone.
 *
 * Memory: a miss that evicts takes over a victim's buffer when it is big
 * enough and wastes at most a quarter of itself on the new chunk (any source,
 * any chunk: adopt_buffer), so a long scan recycles a few buffers instead
 * of returning pages to the kernel and faulting in fresh zeroed ones for
 * every chunk. A chunk a sequential scan reads once (dsv_cache_get_once:
 * the readahead's) does the same well under the budget: once more than
 * ONCE_KEEP of them are held, a miss takes over the buffer of the oldest
 * idle one, so a pass that fits the budget does not fault in a fresh
 * buffer, and fill the budget, for each chunk (its key goes to the ghosts:
 * read again, it is decoded into MAIN).
 *
 * Invariants:
 *  - An entry is in the hash table while it is LOADING or READY; a FAILED
 *    entry is removed from the table before anyone is woken, so a failure is
 *    never served to a later get.
 *  - refs counts holders (gets not yet put). The table's own link does not
 *    count. An entry is freed when it is out of the table and refs is 0.
 *  - Only READY entries are on a queue (q says which): head = newest (IN)
 *    or most recently used (MAIN).
 *  - used = sum of sizes of entries in the table (LOADING ones too, so that
 *    concurrent misses count against the budget before they allocate);
 *    in_bytes is the part of it on (or headed for) IN.
 *  - Eviction happens only while used > budget.
 *  - Eviction only takes READY entries with refs == 0. Held entries can push
 *    used above the budget by at most (threads x chunk size); that overshoot
 *    is the "small fixed overhead" of the budget promise.
 *  - A key is never both in the table and in the ghost ring.
 *
 * Locking: one mutex (c->lock) for the table, the queues, the ghosts and the
 * counters; one condition variable, broadcast when any fill completes. Fills
 * and frees of chunk buffers run outside the lock.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "cache/cache.h"
#include "common/chunk_table.h"
#include "common/hash.h"
#include "dsview/dsview.h"

enum { ST_LOADING, ST_READY, ST_FAILED };
enum { Q_IN, Q_MAIN, NQ };

struct dsv_cache_entry {
	dsv_chunk_link link; /* first; (key, chunk) in the table */
	size_t size;
	size_t cap; /* bytes allocated at data (>= size) */
	void *data;
	int refs;
	int state;
	int err;
	int in_table;
	int q;
	int once;               /* got by dsv_cache_get_once, and not read again after a ghost */
	dsv_cache_entry *vnext; /* on a list of victims, out of the table */
	dsv_cache_entry *prev, *next; /* on queue q */
};

/* A key whose fill failed lately: a hint for callers that can read part
 * of a chunk instead (dsv_cache_failed_lately), never an answer in place
 * of a fill. */
typedef struct failed {
	uint32_t key;
	int live;
	uint64_t chunk;
	uint64_t when_ns; /* CLOCK_MONOTONIC */
} failed;

#define FAILED_SLOTS 32
#define FAILED_HINT_NS 1000000000ull /* a failed chunk is tried whole again after 1 s */

typedef struct queue {
	dsv_cache_entry *head, *tail;
} queue;

/* A key that fell out of IN; slots form a ring, oldest overwritten first. */
typedef struct ghost {
	uint32_t key;
	int live;
	uint64_t chunk;
	int32_t hnext; /* next slot in the same bucket, -1 at the end */
} ghost;

struct dsv_cache {
	pthread_mutex_t lock;
	pthread_cond_t filled;
	dsv_cache_fill_fn fill;
	void *ctx;
	dsv_chunk_table table; /* entries LOADING or READY */
	queue qs[NQ];
	uint64_t in_bytes, in_cap;
	uint64_t once_held; /* entries in the table with once set */
	ghost *ghosts;
	int32_t *gbuckets;
	uint32_t nghosts, gmask, gpos;
	failed failed[FAILED_SLOTS];
	uint32_t fpos;
	dsv_cache_stats st;
};

/* Chunks read once by a scan kept before their buffers are taken over:
 * the readahead's chunks in flight (at most 64 ahead of a stream, fs/
 * prefetch.c) and those its reader is still finishing. */
#define ONCE_KEEP 96u

#define GHOST_MIN 1024u
#define GHOST_MAX (1u << 18)
#define GHOST_PER_BYTES (128u << 10) /* one ghost per 128 KiB of budget */

dsv_cache *dsv_cache_create(uint64_t budget, dsv_cache_fill_fn fill, void *ctx)
{
	dsv_cache *c = calloc(1, sizeof(*c));
	uint64_t ng = budget / GHOST_PER_BYTES;
	uint32_t nb = 1;

	if (!c)
		return NULL;
	c->nghosts = (uint32_t)(ng < GHOST_MIN ? GHOST_MIN : ng > GHOST_MAX ? GHOST_MAX : ng);
	while (nb < c->nghosts)
		nb <<= 1;
	c->gmask = nb - 1;
	int no_table = dsv_chunk_table_init(&c->table, 1024);
	c->ghosts = calloc(c->nghosts, sizeof(*c->ghosts));
	c->gbuckets = malloc(nb * sizeof(*c->gbuckets));
	if (no_table || !c->ghosts || !c->gbuckets) {
		dsv_chunk_table_fini(&c->table, NULL);
		free(c->ghosts);
		free(c->gbuckets);
		free(c);
		return NULL;
	}
	memset(c->gbuckets, 0xff, nb * sizeof(*c->gbuckets)); /* all -1 */
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->filled, NULL);
	c->fill = fill;
	c->ctx = ctx;
	c->st.budget = budget;
	c->in_cap = budget / 4;
	return c;
}

/* Chunk buffers of MAP_MIN bytes or more are their own mappings, populated
 * at once: the kernel fills in every page in one call instead of taking a
 * fault per page as the decoder first writes it (a fault costs a VM exit
 * on virtualised machines: decoding into fresh pages spent half its time
 * in faults), and a freed buffer goes straight back to the system, so RSS
 * follows the budget. */
#define MAP_MIN (128u << 10)

static void *buf_alloc(size_t n)
{
	if (n < MAP_MIN)
		return malloc(n);
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
		       -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

static void buf_free(void *p, size_t cap)
{
	if (p && cap >= MAP_MIN)
		munmap(p, cap);
	else
		free(p);
}

static void entry_free(void *entry)
{
	dsv_cache_entry *e = entry;
	buf_free(e->data, e->cap);
	free(e);
}

void dsv_cache_destroy(dsv_cache *c)
{
	if (!c)
		return;
	dsv_chunk_table_fini(&c->table, entry_free);
	free(c->ghosts);
	free(c->gbuckets);
	pthread_cond_destroy(&c->filled);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

/* ---- ghosts ---- */

static void ghost_unlink(dsv_cache *c, uint32_t slot)
{
	ghost *g = &c->ghosts[slot];
	int32_t *p = &c->gbuckets[dsv_hash_chunk(g->key, g->chunk) & c->gmask];
	while (*p != (int32_t)slot)
		p = &c->ghosts[*p].hnext;
	*p = g->hnext;
	g->live = 0;
}

static void ghost_add(dsv_cache *c, uint32_t key, uint64_t chunk)
{
	uint32_t slot = c->gpos;
	ghost *g = &c->ghosts[slot];
	int32_t *b = &c->gbuckets[dsv_hash_chunk(key, chunk) & c->gmask];

	if (g->live)
		ghost_unlink(c, slot); /* the oldest key is forgotten */
	g->key = key;
	g->chunk = chunk;
	g->live = 1;
	g->hnext = *b;
	*b = (int32_t)slot;
	c->gpos = (slot + 1) % c->nghosts;
}

/* Removes (key, chunk) from the ghosts; @return 1 if it was there. */
static int ghost_take(dsv_cache *c, uint32_t key, uint64_t chunk)
{
	int32_t i = c->gbuckets[dsv_hash_chunk(key, chunk) & c->gmask];
	for (; i >= 0; i = c->ghosts[i].hnext)
		if (c->ghosts[i].key == key && c->ghosts[i].chunk == chunk) {
			ghost_unlink(c, (uint32_t)i);
			return 1;
		}
	return 0;
}

/* ---- table and queues ---- */

static dsv_cache_entry *lookup(dsv_cache *c, uint32_t key, uint64_t chunk)
{
	return (dsv_cache_entry *)dsv_chunk_table_find(&c->table, key, chunk);
}

static void table_insert(dsv_cache *c, dsv_cache_entry *e)
{
	dsv_chunk_table_add(&c->table, &e->link);
	e->in_table = 1;
	c->st.bytes_used += e->size;
	if (e->q == Q_IN)
		c->in_bytes += e->size;
	c->once_held += (uint64_t)e->once;
}

static void table_remove(dsv_cache *c, dsv_cache_entry *e)
{
	dsv_chunk_table_remove(&c->table, &e->link);
	e->in_table = 0;
	c->st.bytes_used -= e->size;
	if (e->q == Q_IN)
		c->in_bytes -= e->size;
	c->once_held -= (uint64_t)e->once;
}

static void q_unlink(dsv_cache *c, dsv_cache_entry *e)
{
	queue *q = &c->qs[e->q];
	if (e->prev)
		e->prev->next = e->next;
	else
		q->head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		q->tail = e->prev;
	e->prev = e->next = NULL;
}

static void q_push_head(dsv_cache *c, dsv_cache_entry *e)
{
	queue *q = &c->qs[e->q];
	e->prev = NULL;
	e->next = q->head;
	if (q->head)
		q->head->prev = e;
	q->head = e;
	if (!q->tail)
		q->tail = e;
}

/* The oldest unreferenced entry of queue q, or NULL. */
static dsv_cache_entry *oldest_idle(dsv_cache *c, int q)
{
	dsv_cache_entry *e = c->qs[q].tail;
	while (e && e->refs)
		e = e->prev;
	return e;
}

/* Unlinks e and chains it on *victims (through vnext) for freeing outside
 * the lock; an entry leaving IN leaves its key behind as a ghost. */
static void evict_one(dsv_cache *c, dsv_cache_entry *e, dsv_cache_entry **victims)
{
	if (e->q == Q_IN)
		ghost_add(c, (uint32_t)e->link.key, e->link.chunk);
	q_unlink(c, e);
	table_remove(c, e);
	c->st.evictions++;
	e->vnext = *victims;
	*victims = e;
}

/* Brings everything within the budget: from IN while it holds more than its
 * quarter, else MAIN's least recently used, else IN anyway. */
static dsv_cache_entry *evict(dsv_cache *c)
{
	dsv_cache_entry *victims = NULL, *e;

	while (c->st.bytes_used > c->st.budget) {
		e = c->in_bytes > c->in_cap ? oldest_idle(c, Q_IN) : NULL;
		if (!e && !(e = oldest_idle(c, Q_MAIN)) && !(e = oldest_idle(c, Q_IN)))
			break;
		evict_one(c, e, &victims);
	}
	return victims;
}

/* For a miss of a chunk read once: the oldest idle entry read once on IN,
 * evicted onto *victims, once more than ONCE_KEEP are held. */
static void evict_once(dsv_cache *c, dsv_cache_entry **victims)
{
	if (c->once_held <= ONCE_KEEP)
		return;
	dsv_cache_entry *e = c->qs[Q_IN].tail;
	while (e && (e->refs || !e->once))
		e = e->prev;
	if (e)
		evict_one(c, e, victims);
}

static void free_list(dsv_cache_entry *e)
{
	dsv_cache_entry *n;
	for (; e; e = n) {
		n = e->vnext;
		entry_free(e);
	}
}

/* Moves into e the buffer of a victim that fits size without wasting more
 * than a quarter of it. */
static void adopt_buffer(dsv_cache_entry *e, dsv_cache_entry *victims, size_t size)
{
	for (dsv_cache_entry *v = victims; v; v = v->vnext)
		if (v->data && v->cap >= size && v->cap - size <= v->cap / 4) {
			e->data = v->data;
			e->cap = v->cap;
			v->data = NULL;
			return;
		}
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static failed *failed_find(dsv_cache *c, uint32_t key, uint64_t chunk)
{
	for (int i = 0; i < FAILED_SLOTS; i++)
		if (c->failed[i].live && c->failed[i].key == key && c->failed[i].chunk == chunk)
			return &c->failed[i];
	return NULL;
}

/* Under c->lock: remembers (err != 0) or forgets (err == 0) a failed fill. */
static void failed_note(dsv_cache *c, uint32_t key, uint64_t chunk, int err)
{
	failed *f = failed_find(c, key, chunk);
	if (!err) {
		if (f)
			f->live = 0;
		return;
	}
	if (err == DSV_ERR_NOMEM)
		return; /* says nothing about the chunk */
	if (!f) {
		f = &c->failed[c->fpos];
		c->fpos = (c->fpos + 1) % FAILED_SLOTS;
	}
	*f = (failed){ .key = key, .chunk = chunk, .live = 1, .when_ns = now_ns() };
}

int dsv_cache_failed_lately(dsv_cache *c, uint32_t key, uint64_t chunk)
{
	int lately;
	pthread_mutex_lock(&c->lock);
	failed *f = failed_find(c, key, chunk);
	lately = f && now_ns() - f->when_ns < FAILED_HINT_NS;
	pthread_mutex_unlock(&c->lock);
	return lately;
}

dsv_cache_entry *dsv_cache_peek(dsv_cache *c, uint32_t key, uint64_t chunk)
{
	pthread_mutex_lock(&c->lock);
	dsv_cache_entry *e = lookup(c, key, chunk);
	if (e && e->state == ST_LOADING) { /* join the fill, as a get does */
		e->refs++;
		c->st.waits++;
		while (e->state == ST_LOADING)
			pthread_cond_wait(&c->filled, &c->lock);
		if (e->state != ST_READY) {
			if (--e->refs == 0)
				entry_free(e); /* failed entries are already out of the table */
			e = NULL;
		} else {
			c->st.hits++;
		}
	} else if (e && e->state == ST_READY) {
		e->refs++;
		c->st.hits++;
		if (e->q == Q_MAIN) {
			q_unlink(c, e);
			q_push_head(c, e);
		}
	} else {
		e = NULL;
	}
	pthread_mutex_unlock(&c->lock);
	return e;
}

static int get(dsv_cache *c, uint32_t key, uint64_t chunk, size_t size, const void *arg, int once,
	       dsv_cache_entry **out)
{
	dsv_cache_entry *e, *victims;
	int err, reused;

	*out = NULL;
	pthread_mutex_lock(&c->lock);
	e = lookup(c, key, chunk);
	if (e) {
		e->refs++;
		if (e->state == ST_READY) {
			c->st.hits++;
			if (e->q == Q_MAIN) {
				q_unlink(c, e);
				q_push_head(c, e);
			}
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
	e->link.key = key;
	e->link.chunk = chunk;
	e->size = size;
	e->refs = 1;
	e->state = ST_LOADING;
	e->q = Q_IN;
	e->once = once;
	if (ghost_take(c, key, chunk)) {
		e->q = Q_MAIN; /* read again after it fell out of IN */
		e->once = 0;
		c->st.ghost_hits++;
	}
	table_insert(c, e);
	victims = evict(c);
	if (e->once)
		evict_once(c, &victims);
	pthread_mutex_unlock(&c->lock);
	adopt_buffer(e, victims, size ? size : 1);
	free_list(victims);

	reused = e->data != NULL;
	if (!reused && (e->data = buf_alloc(size ? size : 1)))
		e->cap = size ? size : 1;
	err = e->data ? c->fill(c->ctx, arg, key, chunk, e->data, size) : DSV_ERR_NOMEM;

	pthread_mutex_lock(&c->lock);
	c->st.fills++;
	c->st.reuses += (uint64_t)reused;
	failed_note(c, key, chunk, err);
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
	q_push_head(c, e);
	pthread_cond_broadcast(&c->filled);
	pthread_mutex_unlock(&c->lock);
	*out = e;
	return 0;
}

int dsv_cache_get(dsv_cache *c, uint32_t key, uint64_t chunk, size_t size, const void *arg,
		  dsv_cache_entry **out)
{
	return get(c, key, chunk, size, arg, 0, out);
}

int dsv_cache_get_once(dsv_cache *c, uint32_t key, uint64_t chunk, size_t size, const void *arg,
		       dsv_cache_entry **out)
{
	return get(c, key, chunk, size, arg, 1, out);
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
	out->entries = c->table.count;
	out->bytes_probation = c->in_bytes;
	pthread_mutex_unlock(&c->lock);
}
