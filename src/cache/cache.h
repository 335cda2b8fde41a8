/*
 * Chunk cache: decoded chunks (in the source dtype) under a byte budget.
 *
 * Keys are (key, chunk): the read path uses a source's key and the chunk's
 * index in that source, so views of one source share it. dsv_cache_get returns a referenced entry, filling
 * it on a miss through the caller's fill function; concurrent gets of one
 * key while it is being filled wait for that one fill (a chunk is decoded
 * once). A failed fill is never cached: every waiter gets the error and the
 * next get tries again. Entries are refcounted with paired get/put; an
 * unreferenced entry may be evicted whenever the bytes held exceed the
 * budget. Eviction is 2Q (see cache.c): chunks read once go through a FIFO
 * that gives back first (down to a quarter of the budget), chunks read again
 * after falling out of it go to an LRU, so one long scan cannot flush what
 * is reused. Budget 0 keeps nothing past its last put.
 *
 * Thread safety: every function may be called from any thread; one mutex
 * guards the table, and fills run outside it.
 */
#ifndef DSV_CACHE_CACHE_H
#define DSV_CACHE_CACHE_H

#include <stddef.h>
#include <stdint.h>

typedef struct dsv_cache dsv_cache;
typedef struct dsv_cache_entry dsv_cache_entry;

/* Fills buf (size bytes) with chunk `chunk` of key `key`; arg is the arg
 * of the get that missed. @return 0 or a negative dsv_err. Called without
 * the cache lock held. */
typedef int (*dsv_cache_fill_fn)(void *ctx, const void *arg, uint32_t key, uint64_t chunk,
				 void *buf, size_t size);

typedef struct dsv_cache_stats {
	uint64_t hits, misses, evictions, fills, fill_errors, waits;
	uint64_t ghost_hits; /* misses on keys that fell out of probation */
	uint64_t reuses;     /* fills that took over an evicted chunk's buffer */
	uint64_t bytes_used, budget, entries;
	uint64_t bytes_probation; /* part of bytes_used in the probation FIFO */
} dsv_cache_stats;

dsv_cache *dsv_cache_create(uint64_t budget, dsv_cache_fill_fn fill, void *ctx);
void dsv_cache_destroy(dsv_cache *c); /* accepts NULL; no entry may be held */

/* @return 0 with *out referenced, or the fill's error. arg goes to the
 * fill when this get is the one that fills. */
int dsv_cache_get(dsv_cache *c, uint32_t key, uint64_t chunk, size_t size, const void *arg,
		  dsv_cache_entry **out);
/* The same for a chunk a sequential scan reads once (the readahead's): on
 * a miss, once more than a few such chunks are held, it takes over the
 * buffer of the oldest that nobody holds, even under the budget, rather
 * than fault in a fresh one (cache.c). A get of it that misses again
 * later, after a ghost, keeps it as any other. */
int dsv_cache_get_once(dsv_cache *c, uint32_t key, uint64_t chunk, size_t size, const void *arg,
		       dsv_cache_entry **out);
/* Valid until the matching put. */
const void *dsv_cache_data(const dsv_cache_entry *e);
size_t dsv_cache_size(const dsv_cache_entry *e);
void dsv_cache_put(dsv_cache *c, dsv_cache_entry *e);

/* True when the last fill of (key, chunk) failed less than a second ago
 * (and no fill of it succeeded since; out-of-memory failures are not
 * counted). A hint for a caller that can make do with part of the chunk
 * (the read path's band reads of HDF5-library chunks), so that a damaged
 * chunk is not decoded whole again for every small read of it; a get
 * still always tries the fill. */
int dsv_cache_failed_lately(dsv_cache *c, uint32_t key, uint64_t chunk);

/* The entry of (key, chunk) if it is ready in the cache, or once the fill
 * under way (another get's: readahead's, say) ends well: held as a get
 * holds it (dsv_cache_put it) and counted as a hit. Else NULL, and nothing
 * is filled or counted: for a caller that can make do with less than the
 * whole entry when it is not there (the read path's LZ4 blocks), but
 * should not make again what is being made. */
dsv_cache_entry *dsv_cache_peek(dsv_cache *c, uint32_t key, uint64_t chunk);

void dsv_cache_get_stats(dsv_cache *c, dsv_cache_stats *out);

#endif
