/*
 * Readahead of a file's next chunks, in the background: sequential access
 * makes the next chunks before they are asked for (docs/performance.md).
 *
 * Every read of a data file tells the prefetcher which chunks of its view
 * it touched (its readahead units, dsv_view_seg_range: the chunks of a
 * view that concatenates its sources, runs of about a chunk's rows of one
 * with windows, rows or a layout; "chunk" below means such a unit). A read that overlaps, or is next to, one of the file's recent
 * streams extends that stream (a file keeps several, for workers that read
 * shards of it side by side; the kernel does not send one stream's pieces
 * in order, so direction inside a stream does not matter); any other read
 * starts a new stream in place of the least recently used. Once a stream
 * is sequential (it has read 32 MiB over a few chunks; in a file read
 * ahead early, its reads that cover most of the bytes between the lowest
 * and the highest it read and come to 4 MiB or a chunk's output will do),
 * the chunks of the next `bytes` of decoded (source
 * dtype) data beyond it are queued; a few threads hand each one (or a run
 * of a stream's consecutive ones, where the caller takes batches) to the
 * caller's function, which makes the chunks' output and gives it to the
 * kernel (pages.c: the sink, for FUSE notify_store into the file's page cache), so the
 * reader's next page faults find it there. Reads served from there never
 * reach us, so one chunk in the middle of each batch queued is a tripwire:
 * it is handed on without its first page, which the reader then asks us
 * for, and that read moves the stream on and queues the next batch. A job
 * the stream has already read past by the time a thread takes it is
 * dropped. The queue is global
 * and bounded: when it is full, hints are dropped, so readahead never piles
 * up work.
 *
 * Thread safety: hint may be called from any thread; start/stop are not
 * concurrent with anything else.
 */
#ifndef DSV_ENGINE_PREFETCH_H
#define DSV_ENGINE_PREFETCH_H

#include <stddef.h>
#include <stdint.h>

#include "dsview/view.h"

typedef struct dsv_prefetch dsv_prefetch;

/* Makes chunks first..last of file `file` and hands them on, all but the
 * first page of chunk trip (a tripwire; UINT64_MAX: none). @return 0 or a
 * negative error (a failure is not retried: the reader that needs the
 * chunk reads it itself and gets the error). */
typedef int (*dsv_prefetch_fn)(void *ctx, uint32_t file, uint64_t first, uint64_t last,
			       uint64_t trip);
#define DSV_PREFETCH_NO_TRIP UINT64_MAX
/* Drops chunks first..last of file `file` from the kernel's page cache:
 * a stream has passed them (drop below). */
typedef void (*dsv_prefetch_drop_fn)(void *ctx, uint32_t file, uint64_t first, uint64_t last);

/* file_views[i]: the view that file i shows, or NULL for files that are
 * not read ahead. batch: NULL, or batch[i] the most chunks of file i one
 * call of fn may take (consecutive chunks queued for one stream go
 * together: the device's readahead, pages.c), else one at a time. drop:
 * NULL, or drop[i] non-zero where the pages a stream of file i has passed
 * (more than its window behind its head, no other stream of the file
 * behind them) are handed to drop_fn from the threads, so that a pass
 * holds about a window of the file's pages, not the whole pass (a mount
 * under a memory limit smaller than the file, pages.c). early: NULL, or
 * early[i] non-zero where a dense stream of file i starts at 4 MiB (a
 * view whose chunks are decoded, pages.c). NULL if threads or
 * bytes is 0 (readahead off) or on allocation failure. */
dsv_prefetch *dsv_prefetch_start(dsv_view *const *file_views, const unsigned *batch,
				 const unsigned char *drop, const unsigned char *early,
				 size_t nfiles, int threads, uint64_t bytes, dsv_prefetch_fn fn,
				 dsv_prefetch_drop_fn drop_fn, void *ctx);
/* A read of `bytes` bytes of file at byte off touched the view's chunks
 * first..last (global indices). */
void dsv_prefetch_hint(dsv_prefetch *p, uint32_t file, uint64_t first, uint64_t last, uint64_t off,
		       uint64_t bytes);
/* Stops the threads (after their current chunk) and frees p; accepts NULL. */
void dsv_prefetch_stop(dsv_prefetch *p);
/* Chunks handed on successfully so far. */
uint64_t dsv_prefetch_done(const dsv_prefetch *p);

#endif
