/*
 * Background readahead of chunks (SPEC 8: "sequential access triggers
 * readahead of the next chunks in the background").
 *
 * Every read tells the prefetcher which of a view's cached chunks (those
 * decoded whole; plain ones are pread on demand) it touched.
 * When a read continues where the previous read of that view ended (or
 * stays in its last chunk), the chunks of the next `bytes` of decoded
 * (source dtype) data are queued (at least two chunks); a few
 * threads decode them into the cache (a get and an immediate put), so the
 * FUSE thread that asks for them next finds them decoded, or in flight and
 * waits for that one decode. The queue is global and bounded: when it is
 * full, hints are dropped, so prefetching can never pile up work or memory
 * beyond `bytes` per view plus the queue.
 *
 * Thread safety: hint may be called from any thread; start/stop are not
 * concurrent with anything else.
 */
#ifndef DSV_FS_PREFETCH_H
#define DSV_FS_PREFETCH_H

#include <stdint.h>

#include "dsview/cache.h"
#include "dsview/view.h"

typedef struct dsv_prefetch dsv_prefetch;

/* NULL if threads or bytes is 0 (prefetching off) or on allocation failure. */
dsv_prefetch *dsv_prefetch_start(dsv_cache *cache, dsv_view *const *views, size_t nviews,
				 int threads, uint64_t bytes);
/* A read of view vi touched chunks first..last (global chunk indices). */
void dsv_prefetch_hint(dsv_prefetch *p, uint32_t vi, uint64_t first, uint64_t last);
/* Stops the threads (after their current chunk) and frees p; accepts NULL. */
void dsv_prefetch_stop(dsv_prefetch *p);
/* Chunks decoded by prefetching so far. */
uint64_t dsv_prefetch_done(const dsv_prefetch *p);

#endif
