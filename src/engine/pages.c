/* What the engine hands to the sink without a request, and takes out of
 * it again: the readahead's chunks and hinted rows (for FUSE, stored in
 * the kernel's page cache), the pages a pass has passed under a memory
 * limit and the page budget's oldest regions. engine.c's DESIGN has the
 * whole walk. */
#include <stdatomic.h>
#include <stdlib.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "common/knobs.h"
#include "common/tlsbuf.h"
#include "engine/engine_i.h"

/* Readahead: the prefetcher's threads make the chunks ahead of a file's
 * sequential streams and hand them to the sink (for FUSE, the kernel's
 * page cache for that file), where the reader's next page faults find
 * them without a request. A chunk is stored from the page where it starts
 * to the page where the next one starts, so consecutive chunks tile the
 * file in whole pages (a page stored in two parts would never be up to
 * date); a tripwire chunk (prefetch.h) leaves its first page to the
 * reader. Stores go in pieces of at most the sink's max_store bytes. The
 * bytes are made as a read's are, by dsv_engine_make (read.c), which
 * decides where (the device, or the read path): pages.c only decides how
 * much one request asks for. */
/* Decoded (source) bytes ahead of a stream: DSVIEW_READAHEAD_KB, 8 MiB
 * unless set (common/knobs.c). */
#define PREFETCH_THREADS 2
#define DEVICE_BATCH 8 /* chunks, at most, in one device batch */

/* Stores k bytes of file at off, made at buf, through the sink, and
 * counts them in *count (the readahead's bytes, or the hints'). */
static int store(dsv_engine *e, _Atomic uint64_t *count, uint32_t file, uint64_t off, char *buf,
		 size_t k)
{
	int err = e->sink.store(e->sink.ctx, file, off, buf, k);
	if (err)
		return err;
	atomic_fetch_add(count, k);
	dsv_budget_add(e->budget, file, off, k);
	return 0;
}

/* Makes bytes [off, end) of file (whole pages, or up to its end) in one
 * request of flags (dsv_engine_make, which decides where they are made),
 * and stores them in pieces of at most max_store bytes, all but the page
 * at skip (a tripwire's; UINT64_MAX: none), counted in *count. */
static int make_store(dsv_engine *e, _Atomic uint64_t *count, uint32_t file, uint64_t off,
		      uint64_t end, uint64_t skip, unsigned flags)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	dsv_read_req req = { .off = off, .len = (size_t)(end - off), .flags = flags };
	char *buf = dsv_tls_buf(DSV_TLS_OUT, req.len ? req.len : 1);
	dsv_read_info info;
	int err;

	if (!buf)
		return DSV_ERR_NOMEM;
	if ((err = dsv_engine_make(e, file, &req, buf, &info)))
		return err;
	for (uint64_t o = off; o < end;) {
		uint64_t k = end - o < e->sink.max_store ? end - o : e->sink.max_store;
		if (o == skip) {
			o += page;
			continue;
		}
		if (o < skip && o + k > skip)
			k = skip - o;
		if ((err = store(e, count, file, o, buf + (o - off), (size_t)k)))
			return err;
		o += k;
	}
	return 0;
}

/* The same in requests of at most max_store bytes, each stored before the
 * next is made; the page at skip is not made at all. */
static int make_store_pieces(dsv_engine *e, _Atomic uint64_t *count, uint32_t file, uint64_t off,
			     uint64_t end, uint64_t skip, unsigned flags)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	while (off < end) {
		uint64_t k = end - off < e->sink.max_store ? end - off : e->sink.max_store;
		int err;
		if (off == skip) {
			off += page;
			continue;
		}
		if (off < skip && off + k > skip)
			k = skip - off;
		if ((err = make_store(e, count, file, off, off + k, UINT64_MAX, flags)))
			return err;
		off += k;
	}
	return 0;
}

/* The pages of file from the one where chunk starts to the one where the
 * next starts (or the end of the file): [*off, *end). */
static int chunk_pages(dsv_engine *e, uint32_t file, uint64_t chunk, uint64_t *off, uint64_t *end)
{
	uint64_t hdr, len, page = (uint64_t)sysconf(_SC_PAGESIZE);
	const dsv_view *v = file_view(e, file, &hdr);
	int err = dsv_view_seg_range(v, chunk, off, &len);
	if (err)
		return err;
	*end = *off + len == v->nbytes ? e->file_size[file] : (hdr + *off + len) / page * page;
	*off = *off == 0 ? 0 : (hdr + *off) / page * page;
	return 0;
}

/* Chunks first..last of file (a batch: several only for a view the device
 * makes, start_prefetch) made as a read that streams and stored, all but
 * the tripwire's first page. A view the device makes is asked for in one
 * request, which it takes in one batch; any other in pieces (the read
 * path reads on through each chunk, so it is decoded whole, once). */
static int push_chunks(void *ctx, uint32_t file, uint64_t first, uint64_t last, uint64_t trip)
{
	dsv_engine *e = ctx;
	uint64_t off, end, o, c_end, skip = UINT64_MAX, hdr;
	int err;

	if ((err = chunk_pages(e, file, first, &off, &o)) ||
	    (err = chunk_pages(e, file, last, &o, &end)) ||
	    (trip != DSV_PREFETCH_NO_TRIP && (err = chunk_pages(e, file, trip, &skip, &c_end))))
		return err;
	if (dsv_backend_makes(e->backend, file_view(e, file, &hdr)))
		return make_store(e, &e->bytes_readahead, file, off, end, skip, DSV_READ_STREAM);
	return make_store_pieces(e, &e->bytes_readahead, file, off, end, skip, DSV_READ_STREAM);
}

/* Drops the pages of chunks first..last of file through the sink: a
 * stream has passed them. For FUSE, the pages a reader still maps are
 * unmapped; a read of them again asks for them. */
static void drop_chunks(void *ctx, uint32_t file, uint64_t first, uint64_t last)
{
	dsv_engine *e = ctx;
	uint64_t off, end, o;
	if (chunk_pages(e, file, first, &off, &o) || chunk_pages(e, file, last, &o, &end) ||
	    end <= off)
		return;
	if (e->sink.drop(e->sink.ctx, file, off, end - off) == 0)
		atomic_fetch_add(&e->bytes_dropped, end - off);
	dsv_budget_forget(e->budget, file, off, end - off);
}

/* The page budget's drops (budget.h): the least recently touched region. */
static void drop_region(void *ctx, uint32_t file, uint64_t off, uint64_t len, uint64_t held)
{
	dsv_engine *e = ctx;
	if (e->sink.drop(e->sink.ctx, file, off, len) == 0)
		atomic_fetch_add(&e->bytes_shed, held);
}

/* Under a memory limit, the data files' pages a mount keeps in the page
 * cache are held to half the limit (budget.h) where they could hold more:
 * the other half is the group's own, the readers' batches and
 * interpreters, the chunk cache (a tenth by default), the sources' pages.
 * The limit is the serving process's group's, from the start, or the
 * smallest of the groups its readers open the files from (read.c), from
 * that open. */
void dsv_engine_pages_limit(dsv_engine *e, uint64_t limit)
{
	uint64_t all = 0, budget = limit / 2;
	if (!budget || !e->sink.store)
		return;
	pthread_mutex_lock(&e->budget_lock);
	if (e->budget)
		dsv_budget_lower(e->budget, budget);
	else {
		for (size_t i = 0; i < e->nfiles; i++)
			all += e->file_size[i];
		if (all > budget)
			e->budget = dsv_budget_start(e->file_size, e->nfiles, budget, drop_region,
						     e);
	}
	pthread_mutex_unlock(&e->budget_lock);
}

/* Sampler hints (hints.h): a row's pages, from the page where it starts
 * to the page where it ends (or the end of the file), so the faults of a
 * read of the row find every page it touches. */
#define HINT_CAP 16384 /* rows queued at most */

/* Storing a hinted row is mostly a wait for the source's disk read (a
 * shuffled row is a random read), so the threads that do it are many: the
 * disk serves reads side by side. make bench-levers (AB_SIDE=64, one
 * reader of 12 KB rows) measured 9.4k rows/s with 2, 13.3k with 4, 18.5k
 * with 8, 22.2k with 16 and no more with 32: DSVIEW_HINT_THREADS, 16
 * unless set (common/knobs.c). */

static int push_row(void *ctx, uint32_t file, uint64_t row)
{
	dsv_engine *e = ctx;
	uint64_t hdr, page = (uint64_t)sysconf(_SC_PAGESIZE);
	const dsv_view *v = file_view(e, file, &hdr);
	uint64_t off = (hdr + row * v->row_bytes) / page * page;
	uint64_t end = (hdr + (row + 1) * v->row_bytes + page - 1) / page * page;
	return make_store_pieces(e, &e->bytes_hinted, file, off,
				 end < e->file_size[file] ? end : e->file_size[file], UINT64_MAX,
				 0);
}

/* Whether a read of v decodes chunks (a codec, a checksum, the HDF5
 * library's filters, a grid's bands): its passes are read ahead from
 * their first MiBs (prefetch.h: early). A plain source's pieces are a
 * pread each, which the kernel's readahead (or the network's, net/)
 * already runs ahead of. */
static int view_decodes(const dsv_view *v)
{
	for (size_t i = 0; i < v->nsources; i++) {
		dsv_chunk_ref ref;
		if (dsv_source_chunk(v->sources[i], 0, &ref) == 0 && !dsv_chunk_is_plain(&ref))
			return 1;
	}
	return 0;
}

static void start_prefetch(dsv_engine *e)
{
	/* 0 turns it off */
	uint64_t bytes = (uint64_t)dsv_knob_int(DSV_KNOB_READAHEAD_KB) << 10;
	dsv_view **file_views;
	unsigned *batch;
	unsigned char *drop, *early;

	if (bytes == 0 || !(file_views = calloc(e->nfiles, sizeof(*file_views))))
		return;
	batch = calloc(e->nfiles, sizeof(*batch));
	drop = calloc(e->nfiles, 1);
	early = calloc(e->nfiles, 1);
	if (!batch || !drop || !early) {
		free(file_views);
		free(batch);
		free(drop);
		free(early);
		return;
	}
	for (size_t i = 0; i < e->nfiles; i++) {
		const dsv_view *v = file_views[i] = e->m->views[i / 2];
		/* under a memory limit the file does not fit in twice over, a
		 * pass keeps a window of its pages, not all it read: the group
		 * would reclaim pushed pages before the reader got to them */
		drop[i] = e->o.mem_limit && e->file_size[i] > e->o.mem_limit / 2;
		early[i] = (unsigned char)view_decodes(v);
		/* the device takes a stream's next chunks in batches: half of
		 * what is queued ahead, so that both threads have one (a batch's
		 * first page may need the chunk before it: once a batch, not
		 * once a chunk) */
		uint64_t half = bytes / (v->seg_raw ? v->seg_raw : 1) / 2;
		if (dsv_backend_makes(e->backend, v))
			batch[i] = half < 1              ? 1
				   : half > DEVICE_BATCH ? DEVICE_BATCH
							 : (unsigned)half;
	}
	e->prefetch = dsv_prefetch_start(file_views, batch, drop, early, e->nfiles,
					 PREFETCH_THREADS, bytes, push_chunks, drop_chunks, e);
	free(file_views);
	free(batch);
	free(drop);
	free(early);
}

void dsv_engine_pages_start(dsv_engine *e)
{
	if (!e->sink.store)
		return;
	if (e->o.mem_limit)
		dsv_engine_pages_limit(e, e->o.mem_limit);
	start_prefetch(e);
	e->hints = dsv_hints_start((int)dsv_knob_int(DSV_KNOB_HINT_THREADS), HINT_CAP, push_row, e);
}

void dsv_engine_pages_stop(dsv_engine *e)
{
	/* their threads store pages, which the budget counts */
	dsv_prefetch_stop(e->prefetch);
	e->prefetch = NULL;
	dsv_hints_stop(e->hints);
	e->hints = NULL;
	dsv_budget_stop(e->budget);
	e->budget = NULL;
}
