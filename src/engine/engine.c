/*
 * DESIGN
 *
 * The engine makes a view's bytes for whoever asks: the FUSE front end
 * (src/fs) today, a process reading without a mount tomorrow. A read
 * walks engine -> read (dsv_read, read/read.h: a view's byte range to
 * runs of source elements) -> cache (decoded chunks, kept in the source
 * dtype, and a small second cache for tiles of windows) or, for plain
 * sources, a pread -> backend (source pread of the stored chunk, codec)
 * and comes back to read, where the transform (xform) turns source
 * elements into output bytes, written once into the caller's buffer.
 * Nothing below calls up; the engine knows no front end, only the sink
 * it is given.
 *
 * One maker (dsv_engine_make, read.c) makes a file's bytes for every
 * request: a reader's, the readahead's and the hinted rows'. It gets a
 * request (dsv_read_req: the range and how to read it) and decides where
 * the bytes are made: a read that streams (the readahead) of a view the
 * device makes goes to the device whole (dsv_backend_make); everything
 * else, and what the device declines, goes down the read path. The
 * request's flags (DSV_READ_*) go down as they are, through the cache's
 * fill to the backend and the source; what the read did comes back
 * apart, in a dsv_read_info.
 *
 * The cache's fill is here (fill below): the read path says, through
 * dsv_read_fill, which chunk of which view an entry is and the request's
 * flags, and the backend decodes it; tiles of windows the read path makes
 * itself.
 *
 * Readahead (prefetch.h, pages.c): every read tells the prefetcher which
 * segments (dsv_view_seg_range: chunks, or about a chunk's rows of a view
 * with windows, rows or a layout) it touched; those ahead of a sequential
 * stream are made by its threads the same way and handed to the sink
 * (FUSE: notify_store into the kernel's page cache for the file), so the
 * reader finds them there without a request.
 *
 * Sampler hints (hints.h, pages.c): rows a reader will ask for next are
 * made by a pool of threads and handed to the sink the same way.
 *
 * Memory limits (budget.h, pages.c): under a control group's memory
 * limit (the serving process's, or that of a reader that opens a data
 * file), what the sink holds (and, for FUSE, what replies left in the
 * page cache) is counted in regions of the files and held under half the
 * limit, the least recently touched regions dropped whole through the
 * sink; a pass over a file larger than half the serving process's limit
 * also drops the pages it has passed (prefetch.h).
 *
 * Errors: engine functions return dsv_err; the front end says them its
 * own way (errno for FUSE, in src/fs/ops.c).
 */
#include <malloc.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "dsview/xform.h"
#include "engine/engine_i.h"
#include "manifest/manifest.h"

/* The tiles' cache: a pass reads each tile once, a few threads at a time
 * (an eighth of the chunk cache's budget when that is smaller). */
#define TILE_BUDGET (32u << 20)

/* A chunk the read path asked the cache for (read/read.h): key and chunk
 * are the source's, arg says which view and source of it. */
static int fill(void *ctx, const void *arg, uint32_t key, uint64_t chunk, void *buf, size_t size)
{
	dsv_engine *e = ctx;
	dsv_chunk_ref ref;
	dsv_read_job job;
	size_t si;
	(void)key;
	int err = dsv_read_fill(arg, chunk, buf, size, &job);
	if (!job.v) { /* the read path's own: a tile of windows */
		if (job.tile)
			atomic_fetch_add(&e->tiles_made, 1);
		return err;
	}
	if (err)
		return err;
	if (dsv_view_chunk_ref(job.v, job.g, &si, &ref))
		return DSV_ERR_INTERNAL;
	atomic_fetch_add(&e->bytes_decoded, ref.nelems * job.v->out_esize);
	if (job.flags & DSV_READ_STREAM)
		atomic_fetch_add(&e->stream_fills, 1);
	return dsv_backend_decode(e->backend, job.v, job.g, buf, size, job.flags);
}

int dsv_engine_new(dsv_manifest *m, const dsv_engine_opts *o, dsv_engine **out, dsv_errbuf *eb)
{
	dsv_engine *e = calloc(1, sizeof(*e));
	*out = NULL;
	if (e)
		e->file_size = calloc(m->nviews * 2 + 1, sizeof(*e->file_size));
	if (!e || !e->file_size) {
		free(e);
		return dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
	}
	e->m = m;
	e->o = *o;
	e->nfiles = m->nviews * 2;
	for (size_t i = 0; i < m->nviews; i++) {
		e->file_size[DSV_ENGINE_FILE(i, 0)] = m->views[i]->nbytes;
		e->file_size[DSV_ENGINE_FILE(i, 1)] = m->views[i]->nbytes +
						      m->views[i]->npy_header_len;
	}
	pthread_mutex_init(&e->budget_lock, NULL);
	*out = e;
	return 0;
}

int dsv_engine_open(const char *source, dsv_dtype dtype, unsigned flags, const dsv_engine_opts *o,
		    dsv_engine **out, dsv_errbuf *eb)
{
	dsv_manifest *m;
	int err = dsv_manifest_open(source, dtype, flags, &m, eb);
	*out = NULL;
	if (!err && (err = dsv_engine_new(m, o, out, eb)))
		dsv_manifest_free(m);
	return err;
}

int dsv_engine_start(dsv_engine *e, const dsv_engine_sink *sink, dsv_errbuf *eb)
{
	int err;

	/* Other allocations above 128 KiB (edge-chunk scratch, the HDF5
	 * library's) come straight from mmap too, as the cache's chunk buffers
	 * do, so what is freed goes back to the system and RSS follows the
	 * cache budget. */
	mallopt(M_MMAP_THRESHOLD, 128 * 1024);
	mallopt(M_ARENA_MAX, 4);
	if ((err = dsv_backend_create(e->o.gpu, e->o.gpu_cache, e->o.cache_size, e->m->views,
				      e->m->nviews, &e->backend, eb)))
		return err;
	/* the device's pinned buffers come out of the budget */
	uint64_t pinned = dsv_backend_pinned(e->backend);
	e->cache = dsv_cache_create(e->o.cache_size > pinned ? e->o.cache_size - pinned : 0, fill,
				    e);
	uint64_t tiles = e->o.cache_size / 8 < TILE_BUDGET ? e->o.cache_size / 8 : TILE_BUDGET;
	e->tiles = e->cache ? dsv_cache_create(tiles, fill, e) : NULL;
	if (!e->cache || !e->tiles)
		return dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
	if (sink)
		e->sink = *sink;
	dsv_engine_pages_start(e);
	return 0;
}

void dsv_engine_stop(dsv_engine *e)
{
	if (e)
		dsv_engine_pages_stop(e);
}

void dsv_engine_free(dsv_engine *e)
{
	if (!e)
		return;
	dsv_engine_stop(e);
	dsv_cache_destroy(e->tiles);
	dsv_cache_destroy(e->cache);
	dsv_backend_destroy(e->backend);
	dsv_manifest_free(e->m); /* accepts NULL */
	pthread_mutex_destroy(&e->budget_lock);
	free(e->file_size);
	free(e);
}

dsv_manifest *dsv_engine_forget(dsv_engine *e)
{
	dsv_manifest *m = e ? e->m : NULL;
	if (e) {
		e->m = NULL;
		dsv_engine_free(e);
	}
	return m;
}

const char *dsv_engine_kernel(void)
{
	return dsv_xform_kernel_name();
}

size_t dsv_engine_nviews(const dsv_engine *e)
{
	return e->m->nviews;
}

const char *dsv_engine_source(const dsv_engine *e)
{
	return e->m->path;
}

struct timespec dsv_engine_mtime(const dsv_engine *e)
{
	return e->m->mtime;
}

const char *dsv_engine_view_name(const dsv_engine *e, size_t i)
{
	return e->m->views[i]->name;
}

const char *dsv_engine_view_json(const dsv_engine *e, size_t i, size_t *len)
{
	return dsv_view_json(e->m->views[i], len);
}

struct timespec dsv_engine_view_mtime(const dsv_engine *e, size_t i)
{
	struct timespec v = e->m->views[i]->mtime, m = e->m->mtime;
	return m.tv_sec > v.tv_sec || (m.tv_sec == v.tv_sec && m.tv_nsec > v.tv_nsec) ? m : v;
}

void dsv_engine_view_info(const dsv_engine *e, size_t i, dsv_view_info *out)
{
	dsv_view_get_fields(e->m->views[i], out);
}

const char *dsv_engine_backend(const dsv_engine *e)
{
	return dsv_backend_name(e->backend);
}

const char *dsv_engine_take_error(void)
{
	return dsv_view_take_error();
}

const char *dsv_engine_skipped_json(const dsv_engine *e)
{
	return e->m->skipped_json;
}

uint64_t dsv_engine_file_size(const dsv_engine *e, uint32_t file)
{
	return file < e->nfiles ? e->file_size[file] : 0;
}

uint64_t dsv_engine_view_disk(const dsv_engine *e, size_t view)
{
	const dsv_view *v = e->m->views[view];
	uint64_t sum = 0;
	for (size_t s = 0; s < v->nsources; s++)
		sum += dsv_source_stored_bytes(v->sources[s]);
	return sum;
}
