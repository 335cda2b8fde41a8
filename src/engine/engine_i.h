/*
 * What the engine's files share (private: only src/engine/ and the
 * engine's tests include it). engine.c's DESIGN note has the whole walk.
 *
 *   engine.c    the engine's life: new, start (backend, caches), stop,
 *               free; the cache's fill; what is served
 *   read.c      the one maker of a file's bytes (dsv_engine_make); reads,
 *               hints, opens: the counted, timed calls
 *   pages.c     what goes to the sink without a request (readahead,
 *               hinted rows) and what is dropped from it (behind a pass,
 *               the page budget's oldest regions)
 *   stats.c     the counters, a table rendered as JSON members
 *   prefetch.c  readahead streams and their queue (prefetch.h)
 *   hints.c     sampler hints' queue and threads (hints.h)
 *   budget.c    the page budget (budget.h)
 */
#ifndef DSV_ENGINE_ENGINE_I_H
#define DSV_ENGINE_ENGINE_I_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "backend/backend.h"
#include "cache/cache.h"
#include "engine/budget.h"
#include "engine/engine.h"
#include "engine/hints.h"
#include "engine/prefetch.h"
#include "read/read.h"
#include "view/view.h"

/* How long one kind of work took, per request: n[k] counts requests of
 * [2^k, 2^(k+1)) microseconds (n[0] also those under 1 us, the last
 * bucket everything longer); sum_us is their total. */
#define DSV_LAT_BUCKETS 16
typedef struct lat_hist {
	_Atomic uint64_t n[DSV_LAT_BUCKETS];
	_Atomic uint64_t sum_us;
} lat_hist;

struct dsv_engine {
	dsv_manifest *m;
	dsv_engine_opts o;
	dsv_engine_sink sink; /* sink.store NULL: none */
	size_t nfiles;        /* 2 a view */
	uint64_t *file_size;  /* [nfiles] */
	dsv_backend *backend;
	dsv_cache *cache;
	dsv_cache *tiles;       /* tiles of windows (read.h): a small budget of its own */
	dsv_prefetch *prefetch; /* NULL: off */
	dsv_hints *hints;       /* sampler hints (hints.h), NULL: off */
	/* the page budget (budget.h), NULL: off; started, or lowered, under
	 * budget_lock by the first open from a group with a smaller limit */
	dsv_budget *_Atomic budget;
	pthread_mutex_t budget_lock;
	_Atomic int last_opener; /* the process whose group was looked at last */
	/* reads: the front end's read requests, of any file, failed ones
	 * too; bytes_served: the bytes of the engine's reads that succeeded */
	_Atomic uint64_t reads, bytes_served, read_errors, opens;
	/* output bytes (as if transformed) of every chunk decoded and every
	 * plain piece pread: against bytes_served, the read amplification */
	_Atomic uint64_t bytes_decoded;
	/* stored through the sink: by the readahead, and for sampler hints */
	_Atomic uint64_t bytes_readahead, bytes_hinted;
	_Atomic uint64_t bytes_dropped; /* dropped from it behind a stream */
	_Atomic uint64_t bytes_shed;    /* counted in the regions the page budget dropped */
	_Atomic uint64_t tiles_made;    /* tiles of windows the read path made (read.h) */
	_Atomic uint64_t
		stream_fills; /* chunks filled for a read that streams: readahead_decoded */
	/* a read's two halves: making its bytes, and the front end writing
	 * the reply (for FUSE, the kernel copies it into the reader's pages) */
	lat_hist lat_make, lat_reply;
};

/* The view file shows, and the bytes of its .npy header before the view's
 * output (0 for a V.dat). */
static inline const dsv_view *file_view(const dsv_engine *e, uint32_t file, uint64_t *hdr)
{
	const dsv_view *v = e->m->views[file / 2];
	*hdr = file % 2 ? v->npy_header_len : 0;
	return v;
}

/* read.c */
/* The one maker of a file's bytes: [req->off, req->off + req->len) of
 * file (inside it) into buf, the .npy header where it lies in the range,
 * then the view's output, read as req->flags ask. A read that streams
 * (the readahead) of a view the device makes (dsv_backend_makes) is made
 * there whole (dsv_backend_make); any other, and one the device declines
 * or fails, by the read path (dsv_read), which reports a bad chunk.
 * info: what the read path did (nothing noted for the device's). Not
 * counted as served. */
int dsv_engine_make(dsv_engine *e, uint32_t file, const dsv_read_req *req, char *buf,
		    dsv_read_info *info);
/* Counts one request of work that began at t0 (CLOCK_MONOTONIC) and ended
 * at t1 into h. */
void dsv_engine_lat_add(lat_hist *h, const struct timespec *t0, const struct timespec *t1);

/* pages.c */
/* Starts the page budget (under a memory limit), the readahead and the
 * hints' threads, where there is a sink; each is left off where it
 * cannot start. */
void dsv_engine_pages_start(dsv_engine *e);
/* Stops them (accepts an engine where none started). */
void dsv_engine_pages_stop(dsv_engine *e);
/* A memory limit the served pages count against (the serving process's
 * group's, or a reader's): the page budget is started at half of it, or
 * lowered to that, unless it is already lower or the files fit. */
void dsv_engine_pages_limit(dsv_engine *e, uint64_t limit);

#endif
