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
 * Entries: the chunk cache holds three kinds of entry under the source's
 * key (ids apart: bit 63 marks the two kinds this file makes):
 *  - the chunk, decoded whole by the backend (read.c, as ever): a request
 *    that covers every block of a chunk, or finds it in the cache
 *    (dsv_cache_peek), is served from it. Readahead asks for whole chunks,
 *    so a sequential pass with readahead decodes each chunk once, whole.
 *  - a frame (id bit 62): the chunk's stored bytes, read with one pread and
 *    checked against their Fletcher32 (the checksum covers the whole chunk,
 *    so no block is trusted before the chunk is read whole once), and the
 *    offset of every block, from one scan of the block headers
 *    (dsv_lz4_index: every size bounds-checked). Made once per chunk, then
 *    any of its blocks decodes from it without touching the file.
 *  - a block (id: chunk << 20 | block): one decoded block. A request
 *    copies the part of each block it covers. Pieces of one row share its
 *    blocks; a sequential pass without readahead decodes each block once,
 *    so each chunk once, as before.
 * Frames and blocks are cached like chunks (2Q, one budget): a chunk read
 * again soon decodes no block twice, and nothing here keeps memory of its
 * own. The bytes decoded are the blocks a request covers: with blocks that
 * are exact parts of rows, a row costs its own bytes.
 *
 * When the block path does not apply (DSV_ERR_UNSUPPORTED to read.c, which
 * then serves the whole chunk): the source has one block per chunk (stores
 * written by others with the plugin's default, or small chunks), more than
 * 2^20 blocks per chunk or a chunk index past 2^40 (ids would not fit), a
 * request that covers every block, or a frame whose block size is not the
 * one the source's first chunk declared (info.lz4_block, a hint read at
 * open; block ids are computed from it). A frame that fails that way, or
 * any other way, was noted by the cache: for a second the chunk's pieces go
 * the whole-chunk way rather than re-read a frame that just failed.
 *
 * Errors: a frame that is short, past the end of the file, fails its
 * checksum, or whose header or block sizes do not hold (size 0, past the
 * chunk, not adding up to its stored size) fails its fill, logged with the
 * source and chunk; a block that does not decode to its size likewise.
 * Failed fills are never cached (cache.c): the read fails with EIO and a
 * retry reads again.
 */
#include <string.h>

#include "dsview/codec.h"
#include "read/read_i.h"

#define OWN_BIT (1ull << 63)
#define FRAME_BIT (1ull << 62)
#define BLOCK_BITS 20
#define MAX_BLOCKS (1ull << BLOCK_BITS)
#define MAX_CHUNK_INDEX (1ull << 40)

/* A frame entry: this, then at[nblocks + 1] (dsv_lz4_index), then the
 * stored bytes (payload of them the codec's). */
typedef struct frame_head {
	dsv_lz4_frame f;
	uint64_t payload;
} frame_head;

static uint64_t frame_id(uint64_t chunk)
{
	return OWN_BIT | FRAME_BIT | chunk;
}

static uint64_t block_id(uint64_t chunk, uint64_t b)
{
	return OWN_BIT | chunk << BLOCK_BITS | b;
}

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

static size_t frame_size(const dsv_chunk_ref *ref, uint64_t nb)
{
	return sizeof(frame_head) + (size_t)(nb + 1) * sizeof(uint64_t) + (size_t)ref->stored_size;
}

int dsv_read_lz4_part(dsv_cache *c, const dsv_view *v, size_t si, const dsv_chunk_ref *ref,
		      uint64_t first, uint64_t n, void *raw)
{
	const dsv_source_info *in = dsv_source_get_info(v->sources[si]);
	size_t ses = dsv_dtype_size(in->dtype);
	uint64_t nb = blocks_of(in, ref), bs = in->lz4_block;
	uint64_t lo = first * ses, hi = (first + n) * ses;
	uint32_t key = v->src_key[si];
	read_src_arg arg = { v, si, ENTRY_BLOCK, c };
	dsv_cache_entry *e;
	char *out = raw;

	/* the blocks that hold the chunk's elements (an HDF5 edge chunk
	 * decodes to more) */
	if (nb < 2 || n == 0 || (lo / bs == 0 && (hi - 1) / bs + 1 >= (ref->nelems * ses + bs - 1) / bs) ||
	    dsv_cache_failed_lately(c, key, frame_id(ref->index)))
		return DSV_ERR_UNSUPPORTED;
	if ((e = dsv_cache_peek(c, key, ref->index))) {
		memcpy(out, (const char *)dsv_cache_data(e) + lo, (size_t)(hi - lo));
		dsv_cache_put(c, e);
		return 0;
	}
	for (uint64_t b = lo / bs; b * bs < hi; b++) {
		uint64_t start = b * bs, size = ref->raw_size - start < bs ? ref->raw_size - start : bs;
		uint64_t from = lo > start ? lo : start, to = hi < start + size ? hi : start + size;
		int err = dsv_cache_get(c, key, block_id(ref->index, b), (size_t)size, &arg, &e);
		if (err)
			return err;
		memcpy(out + (from - lo), (const char *)dsv_cache_data(e) + (from - start),
		       (size_t)(to - from));
		dsv_cache_put(c, e);
	}
	return 0;
}

/* The frame of chunk ref (nb blocks by the hint) into buf. */
static int fill_frame(const read_src_arg *a, const dsv_chunk_ref *ref, uint64_t nb, void *buf)
{
	const dsv_source *s = a->v->sources[a->si];
	frame_head *h = buf;
	uint64_t *at = (uint64_t *)(h + 1);
	char *stored = (char *)(at + nb + 1);
	size_t payload = 0;
	int err = dsv_source_read_stored(s, ref, stored, (size_t)ref->stored_size, &payload);

	if (!err && (dsv_lz4_frame_info(stored, payload, &h->f) || h->f.raw != ref->raw_size))
		err = DSV_ERR_CORRUPT;
	if (!err && (h->f.block != dsv_source_get_info(s)->lz4_block || h->f.nblocks != nb))
		return DSV_ERR_UNSUPPORTED; /* a sound frame, cut otherwise: whole */
	if (!err && dsv_lz4_index(stored, payload, &h->f, at))
		err = DSV_ERR_CORRUPT;
	if (err) {
		dsv_view_log_chunk_error(a->v, a->si, ref, err);
		return err;
	}
	h->payload = payload;
	return 0;
}

/* Block b of chunk ref (nb blocks) into buf (size bytes), from its frame. */
static int fill_block(const read_src_arg *a, const dsv_chunk_ref *ref, uint64_t nb, uint64_t b,
		      void *buf, size_t size)
{
	read_src_arg fa = { a->v, a->si, ENTRY_FRAME, a->c };
	dsv_cache_entry *e;
	int err = dsv_cache_get(a->c, a->v->src_key[a->si], frame_id(ref->index),
				frame_size(ref, nb), &fa, &e);
	if (err)
		return err; /* the frame's fill logged it */
	const frame_head *h = dsv_cache_data(e);
	const uint64_t *at = (const uint64_t *)(h + 1);
	const char *stored = (const char *)(at + nb + 1);
	int64_t got = dsv_lz4_decode_block(buf, size, stored, (size_t)h->payload, &h->f, at, b);
	dsv_cache_put(a->c, e);
	if (got != (int64_t)size) {
		dsv_view_log_chunk_error(a->v, a->si, ref, DSV_ERR_CORRUPT);
		return DSV_ERR_CORRUPT;
	}
	return 0;
}

int dsv_read_fill_lz4(const read_src_arg *a, uint64_t id, void *buf, size_t size,
		      uint64_t *decoded)
{
	const dsv_source *s = a->v->sources[a->si];
	const dsv_source_info *in = dsv_source_get_info(s);
	uint64_t chunk = a->kind == ENTRY_FRAME ? id & ~(OWN_BIT | FRAME_BIT)
						: (id & ~OWN_BIT) >> BLOCK_BITS;
	uint64_t b = id & (MAX_BLOCKS - 1), nb;
	dsv_chunk_ref ref;

	*decoded = 0;
	if (!(id & OWN_BIT) || dsv_source_chunk(s, chunk, &ref) || !(nb = blocks_of(in, &ref)))
		return DSV_ERR_INTERNAL;
	if (a->kind == ENTRY_FRAME)
		return size == frame_size(&ref, nb) ? fill_frame(a, &ref, nb, buf) : DSV_ERR_INTERNAL;
	if (b >= nb || size != (size_t)(b + 1 < nb ? in->lz4_block : ref.raw_size - b * in->lz4_block))
		return DSV_ERR_INTERNAL;
	int err = fill_block(a, &ref, nb, b, buf, size);
	if (!err)
		*decoded = (uint64_t)size / dsv_dtype_size(in->dtype) * a->v->out_esize;
	return err;
}
