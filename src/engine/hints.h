/*
 * Sampler hints: the rows a reader will ask for next, made ahead of it.
 *
 * A reader (dsview.hint in python/dsview/_hints.py, which the package's
 * PyTorch loader calls for each batch) tells dsview the rows of its next
 * batches with an ioctl on its open V.dat or V.npy (DSV_IOC_PREFETCH, dsview/fs.h); a few threads make each
 * row's output and store its pages in that file's page cache (FUSE
 * notify_store), so the reader's page faults on those rows find them
 * there without a request. The queue is bounded: past its capacity the
 * oldest hints not yet taken are dropped (the sampler has moved on from
 * them), and a hint costs at most the work of reading its row.
 *
 * Thread safety: dsv_hints_add may be called from any thread; start/stop
 * are not concurrent with anything else.
 */
#ifndef DSV_ENGINE_HINTS_H
#define DSV_ENGINE_HINTS_H

#include <stddef.h>
#include <stdint.h>

typedef struct dsv_hints dsv_hints;

/* Makes row `row` of file `file` and stores its pages. @return 0 or a
 * negative error (not retried: a reader that needs the row reads it). */
typedef int (*dsv_hint_fn)(void *ctx, uint32_t file, uint64_t row);

/* cap: hints queued at most; threads: how many store them, started with
 * the first hint. NULL on allocation failure. */
dsv_hints *dsv_hints_start(int threads, size_t cap, dsv_hint_fn fn, void *ctx);
/* Queues rows of file, in order. @return how many queued hints were
 * dropped to make room. */
uint64_t dsv_hints_add(dsv_hints *h, uint32_t file, const uint64_t *rows, size_t n);
/* Stops the threads (after their current row) and frees h; accepts NULL. */
void dsv_hints_stop(dsv_hints *h);

typedef struct dsv_hints_stats {
	uint64_t queued, stored, dropped, failed;
} dsv_hints_stats;
void dsv_hints_get_stats(dsv_hints *h, dsv_hints_stats *out);

#endif
