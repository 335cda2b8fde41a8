/*
 * DESIGN
 *
 * What it is for: a chunk of an LZ4 (32004) store is several independent
 * LZ4 blocks (`dsview pack` writes blocks of about 16 KiB, an exact part
 * of a row when the row divides so). A shuffled reader asks for a row or a
 * piece of one; decoding the whole chunk for it decodes rows nobody asked
 * for (3.2x the bytes asked, measured with one block per 1 MiB chunk).
 * Here a piece of such a chunk is made from the blocks that hold it, each
 * decoded alone.
 *
 * Entries: the chunk cache holds two kinds of entry per LZ4 chunk under
 * the source's key:
 *  - the chunk, decoded whole by the backend (read.c, as ever): a request
 *    that covers every block of a chunk, or finds it in the cache
 *    (dsv_cache_peek), is served from it. The prefetcher's threads, which
 *    read ahead of sequential streams, take whole chunks (read.h,
 *    dsv_read_whole_chunks): a sequential pass decodes each chunk once,
 *    whole, into an entry of the chunk's raw size (a frame holds stored
 *    and raw bytes, nearly twice that, of which a scan needs neither).
 *  - its frame (id bits 63 and 62 | chunk), the read path's own: the
 *    chunk's stored bytes, read with one pread and checked against their
 *    Fletcher32 (the checksum covers the whole chunk, so no block is
 *    trusted before the chunk was read whole once), the offset of every
 *    block from one scan of the block headers (dsv_lz4_index: every size
 *    bounds-checked), and a chunk-sized area the blocks are decoded into on
 *    demand, each block's state in an atomic word (raw, busy, done). A
 *    request takes the frame from the cache, decodes the blocks it covers
 *    that are not done yet (the first reader to claim a block decodes it;
 *    another that wants it yields until it is done), and copies its bytes.
 *    Pieces of one row share its blocks; a sequential pass without
 *    readahead decodes each block once, so each chunk once, as before.
 * Per-block cache entries were measured first: 12 small entries per row
 * (an allocation, a fill and a wake-up of every waiter each) cost more CPU
 * than the decoding they saved. Frames are cached like chunks (2Q, one
 * budget; a frame is the chunk's stored plus raw bytes): a chunk read again
 * soon decodes no block twice. With blocks that are exact parts of rows, a
 * shuffled row decodes its own bytes.
 *
 * When the block path does not apply (DSV_ERR_UNSUPPORTED to read.c, which
 * then serves the whole chunk): the source has one block per chunk (stores
 * written by others with the plugin's default, or small chunks), more than
 * 2^20 blocks per chunk or a chunk index past 2^40, a request that covers
 * every block, or a frame whose block size is not the one the source's
 * first chunk declared (info.lz4_block, a hint read at open; the frame's
 * size is computed from it). A frame that fails that way, or any other
 * way, was noted by the cache: for a second the chunk's pieces go the
 * whole-chunk way rather than re-read a frame that just failed.
 *
 * Errors: a frame that is short, past the end of the file, fails its
 * checksum, or whose header or block sizes do not hold (size 0, past the
 * chunk, not adding up to its stored size) fails its fill, logged with the
 * source and chunk; a block that does not decode to its size fails the
 * reads that need it, logged, and stays undecoded. Failed fills are never
 * cached (cache.c): the read fails with EIO and a retry reads again.
 */
#include <sched.h>
#include <stdatomic.h>
#include <string.h>

#include "dsview/codec.h"
#include "read/read_i.h"

#define FRAME_ID (1ull << 63 | 1ull << 62) /* | chunk: the frame entry's id */
#define MAX_BLOCKS (1ull << 20)
#define MAX_CHUNK_INDEX (1ull << 40)

enum { BLOCK_RAW, BLOCK_BUSY, BLOCK_DONE }; /* a block's state in its frame */

/* A frame entry: this, then at[nb + 1] (dsv_lz4_index), state[nb] (padded
 * to 8 bytes), the decoded chunk (raw bytes, valid block by block), then
 * the stored bytes (payload of them the codec's). */
typedef struct frame_head {
	dsv_lz4_frame f;
	uint64_t payload;
} frame_head;

typedef struct frame_view {
	frame_head *h;
	uint64_t *at;
	_Atomic uint32_t *state;
	char *decoded;
	char *stored;
} frame_view;

/* Blocks of chunk ref by the source's block size, or 0 when its pieces
 * are not made from blocks. */
static uint64_t blocks_of(const dsv_source_info *in, const dsv_chunk_ref *ref)
{
	uint64_t bs = in->lz4_block, nb;
	if (ref->codec != DSV_CODEC_LZ4 || ref->fallback || bs == 0 || bs >= ref->raw_size ||
	    ref->index >= MAX_CHUNK_INDEX)
		return 0;
	nb = ref->raw_size / bs + (ref->raw_size % bs != 0);
	return nb <= MAX_BLOCKS ? nb : 0;
}

static size_t state_bytes(uint64_t nb)
{
	return (size_t)(nb * sizeof(uint32_t) + 7) / 8 * 8;
}

static size_t frame_size(const dsv_chunk_ref *ref, uint64_t nb)
{
	return sizeof(frame_head) + (size_t)(nb + 1) * sizeof(uint64_t) + state_bytes(nb) +
	       (size_t)ref->raw_size + (size_t)ref->stored_size;
}

static frame_view view_of(void *buf, const dsv_chunk_ref *ref, uint64_t nb)
{
	frame_view w;
	w.h = buf;
	w.at = (uint64_t *)(w.h + 1);
	w.state = (_Atomic uint32_t *)(w.at + nb + 1);
	w.decoded = (char *)w.state + state_bytes(nb);
	w.stored = w.decoded + ref->raw_size;
	return w;
}

/* Block b of frame w decoded (by this thread, or another that was at it):
 * @return 0 (and adds the bytes this thread decoded to *decoded), or
 * DSV_ERR_CORRUPT (the block stays undecoded: a later read tries again). */
static int ensure_block(const dsv_view *v, size_t si, const dsv_chunk_ref *ref, frame_view *w,
			uint64_t b, uint64_t *decoded)
{
	uint64_t bs = w->h->f.block, want = ref->raw_size - b * bs < bs ? ref->raw_size - b * bs : bs;
	uint32_t st = atomic_load_explicit(&w->state[b], memory_order_acquire);

	while (st != BLOCK_DONE) {
		uint32_t raw = BLOCK_RAW;
		if (st == BLOCK_RAW &&
		    atomic_compare_exchange_strong_explicit(&w->state[b], &raw, BLOCK_BUSY,
							    memory_order_acquire,
							    memory_order_acquire)) {
			int64_t got = dsv_lz4_decode_block(w->decoded + b * bs, (size_t)want, w->stored,
							   (size_t)w->h->payload, &w->h->f, w->at, b);
			if (got != (int64_t)want) {
				atomic_store_explicit(&w->state[b], BLOCK_RAW, memory_order_release);
				dsv_view_log_chunk_error(v, si, ref, DSV_ERR_CORRUPT);
				return DSV_ERR_CORRUPT;
			}
			atomic_store_explicit(&w->state[b], BLOCK_DONE, memory_order_release);
			*decoded += want;
			return 0;
		}
		sched_yield(); /* another reader is decoding it: microseconds */
		st = atomic_load_explicit(&w->state[b], memory_order_acquire);
	}
	return 0;
}

int dsv_read_lz4_part(dsv_cache *c, const dsv_view *v, size_t si, const dsv_chunk_ref *ref,
		      uint64_t first, uint64_t n, void *raw, uint64_t *decoded)
{
	const dsv_source_info *in = dsv_source_get_info(v->sources[si]);
	size_t ses = dsv_dtype_size(in->dtype);
	uint64_t nb = blocks_of(in, ref), bs = in->lz4_block;
	uint64_t lo = first * ses, hi = (first + n) * ses;
	uint32_t key = v->src_key[si];
	read_src_arg arg = { v, si, ENTRY_FRAME, c };
	dsv_cache_entry *e;
	int err = 0;

	/* the blocks that hold the chunk's elements (an HDF5 edge chunk
	 * decodes to more) */
	if (nb < 2 || n == 0 || (lo / bs == 0 && (hi - 1) / bs + 1 >= (ref->nelems * ses + bs - 1) / bs) ||
	    dsv_cache_failed_lately(c, key, FRAME_ID | ref->index))
		return DSV_ERR_UNSUPPORTED;
	if ((e = dsv_cache_peek(c, key, ref->index))) {
		memcpy(raw, (const char *)dsv_cache_data(e) + lo, (size_t)(hi - lo));
		dsv_cache_put(c, e);
		return 0;
	}
	if ((err = dsv_cache_get(c, key, FRAME_ID | ref->index, frame_size(ref, nb), &arg, &e)))
		return err; /* the frame's fill logged it, or it is the whole chunk's */
	frame_view w = view_of((void *)dsv_cache_data(e), ref, nb);
	for (uint64_t b = lo / bs; !err && b * bs < hi; b++)
		err = ensure_block(v, si, ref, &w, b, decoded);
	if (!err)
		memcpy(raw, w.decoded + lo, (size_t)(hi - lo));
	dsv_cache_put(c, e);
	return err;
}

int dsv_read_fill_lz4(const read_src_arg *a, uint64_t id, void *buf, size_t size)
{
	const dsv_source *s = a->v->sources[a->si];
	const dsv_source_info *in = dsv_source_get_info(s);
	dsv_chunk_ref ref;
	size_t payload = 0;
	uint64_t nb;

	if ((id & FRAME_ID) != FRAME_ID || dsv_source_chunk(s, id & ~FRAME_ID, &ref) ||
	    !(nb = blocks_of(in, &ref)) || size != frame_size(&ref, nb))
		return DSV_ERR_INTERNAL;
	frame_view w = view_of(buf, &ref, nb);
	int err = dsv_source_read_stored(s, &ref, w.stored, (size_t)ref.stored_size, &payload);
	if (!err && (dsv_lz4_frame_info(w.stored, payload, &w.h->f) || w.h->f.raw != ref.raw_size))
		err = DSV_ERR_CORRUPT;
	if (!err && (w.h->f.block != in->lz4_block || w.h->f.nblocks != nb))
		return DSV_ERR_UNSUPPORTED; /* a sound frame, cut otherwise: whole */
	if (!err && dsv_lz4_index(w.stored, payload, &w.h->f, w.at))
		err = DSV_ERR_CORRUPT;
	if (err) {
		dsv_view_log_chunk_error(a->v, a->si, &ref, err);
		return err;
	}
	w.h->payload = payload;
	for (uint64_t b = 0; b < nb; b++) /* a reused buffer holds anything */
		atomic_init(&w.state[b], BLOCK_RAW);
	return 0;
}
