/*
 * The device-memory tier's index (`--gpu-cache`; docs/gpu.md): which decoded chunks are kept in the tier's memory, and
 * where. The memory itself is the device's (gpu.cu) or, under
 * DSVIEW_GPU_EMULATE, the host's; this index only hands out offsets in it.
 *
 * The tier fills once and keeps what it holds: a chunk is admitted while
 * there is room, and nothing is evicted. Training reads its data set in
 * epochs; with a data set larger than the tier, an evicting cache (LRU,
 * FIFO) would have pushed out each chunk before the next epoch came back
 * to it and would hit nothing, where a full tier keeps serving its part.
 * The sources are read-only, so what it holds never goes stale.
 *
 * A chunk is reserved before its batch runs (the batch copies the decoded
 * chunk into the tier) and committed after: findable only once its bytes
 * are there. A chunk reserved or held already is not reserved again.
 *
 * Thread safety: every call may come from any number of threads.
 */
#ifndef DSV_GPU_GPU_TIER_H
#define DSV_GPU_GPU_TIER_H

#include <stddef.h>
#include <stdint.h>

typedef struct dsv_gpu_tier dsv_gpu_tier;

/* An index over cap bytes. @return NULL when out of memory. */
dsv_gpu_tier *dsv_gpu_tier_new(uint64_t cap);
void dsv_gpu_tier_free(dsv_gpu_tier *t); /* accepts NULL */

/* @return 1 with *at the offset of chunk's decoded bytes when the tier
 * holds chunk (of source owner), else 0. Counts a hit or a miss. */
int dsv_gpu_tier_find(dsv_gpu_tier *t, const void *owner, uint64_t chunk, uint64_t *at);
/* Room for n decoded bytes of chunk. @return 0 with *at, or -1 when the
 * tier is full or the chunk is held or reserved already. */
int dsv_gpu_tier_reserve(dsv_gpu_tier *t, const void *owner, uint64_t chunk, uint64_t n,
			 uint64_t *at);
/* Ends a reservation: ok, the bytes are in and the chunk is found from
 * now on; else it is dropped and its room comes back, for the next
 * reservation it fits. */
void dsv_gpu_tier_commit(dsv_gpu_tier *t, const void *owner, uint64_t chunk, int ok);

typedef struct dsv_gpu_tier_stats {
	uint64_t cap, used;    /* bytes */
	uint64_t chunks;       /* held */
	uint64_t hits, misses; /* dsv_gpu_tier_find's answers */
} dsv_gpu_tier_stats;
void dsv_gpu_tier_get_stats(dsv_gpu_tier *t, dsv_gpu_tier_stats *st);

#endif
