/*
 * The HDF5 LZ4 filter (id 32004) framing, compatible with the HDF5 LZ4 plugin
 * that hdf5plugin ships:
 *
 *   u64 BE  raw size of the chunk
 *   u32 BE  block size (the plugin writes min(block size, raw size))
 *   per block, in order: u32 BE stored size, then the stored bytes
 *
 * Every block holds `block size` raw bytes but the last, which holds the
 * rest. A block whose stored size equals its raw size was stored raw
 * (compression did not help); anything else is one LZ4 block.
 *
 * The frame is untrusted input: every size in it is checked against the
 * bytes actually present and against dst_cap before use, nothing is
 * allocated from a header value, and decoding only uses LZ4_decompress_safe.
 * The frame ends with its last block: bytes after it in the chunk are
 * never read, as the plugin's decoder never reads them.
 */
#include <limits.h>
#include <string.h>

#include <lz4.h>
#include <lz4hc.h>

#include "common/arith.h"
#include "common/bytes.h"
#include "codec/lz4_table.h"
#include "dsview/codec.h"
#include "dsview/dsview.h"

#define LZ4F_HEADER DSV_LZ4_HEADER /* u64 raw size + u32 block size */
#define LZ4F_BLOCK_HEADER 4

int dsv_lz4_raw_size(const void *src, size_t src_size, uint64_t *raw_size)
{
	if (src_size < LZ4F_HEADER)
		return DSV_ERR_CORRUPT;
	*raw_size = dsv_load_be64(src);
	if (*raw_size > INT64_MAX)
		return DSV_ERR_CORRUPT;
	return 0;
}

int dsv_lz4_frame_head(const void *src, size_t src_size, dsv_lz4_frame *f)
{
	memset(f, 0, sizeof(*f));
	if (dsv_lz4_raw_size(src, src_size, &f->raw))
		return DSV_ERR_CORRUPT;
	if (f->raw == 0)
		return 0;
	f->block = dsv_load_be32((const uint8_t *)src + 8);
	if (f->block == 0)
		return DSV_ERR_CORRUPT;
	if (f->block > f->raw) /* the plugin's decoder clamps the same way */
		f->block = f->raw;
	f->nblocks = f->raw / f->block + (f->raw % f->block != 0);
	return 0;
}

int dsv_lz4_frame_info(const void *src, size_t src_size, dsv_lz4_frame *f)
{
	uint64_t min_src;

	if (dsv_lz4_frame_head(src, src_size, f))
		return DSV_ERR_CORRUPT;
	if (f->raw == 0)
		return src_size == LZ4F_HEADER ? 0 : DSV_ERR_CORRUPT;
	/* Each block costs at least its 4-byte header: rejects a tiny block
	 * size that would make us loop over billions of phantom blocks. */
	if (dsv_mul_u64(f->nblocks, LZ4F_BLOCK_HEADER, &min_src) ||
	    dsv_add_u64(min_src, LZ4F_HEADER, &min_src) || min_src > src_size)
		return DSV_ERR_CORRUPT;
	return 0;
}

int dsv_lz4_block_decode(uint8_t *out, uint64_t want, const uint8_t *in, uint32_t stored)
{
	if (stored == want) {
		memcpy(out, in, (size_t)want);
		return 0;
	}
	/* LZ4_decompress_safe takes int sizes; a larger block cannot have
	 * come from an LZ4 compressor. */
	if (want > LZ4_MAX_INPUT_SIZE || stored > INT_MAX)
		return DSV_ERR_CORRUPT;
	int got = LZ4_decompress_safe((const char *)in, (char *)out, (int)stored, (int)want);
	return got < 0 || (uint64_t)got != want ? DSV_ERR_CORRUPT : 0;
}

int64_t dsv_lz4_decode(void *dst, size_t dst_cap, const void *src, size_t src_size)
{
	const uint8_t *in = src;
	uint8_t *out = dst;
	dsv_lz4_frame f;
	size_t pos = LZ4F_HEADER;

	if (dsv_lz4_frame_info(src, src_size, &f))
		return DSV_ERR_CORRUPT;
	/* Checked before anything is written: a frame that claims more than
	 * the caller expects is corrupt, not a reason to grow a buffer. */
	if (f.raw > dst_cap)
		return DSV_ERR_CORRUPT;
	for (uint64_t i = 0; i < f.nblocks; i++) {
		uint64_t want = dsv_lz4_block_raw(&f, i);
		uint32_t stored;

		if (src_size - pos < LZ4F_BLOCK_HEADER)
			return DSV_ERR_CORRUPT;
		stored = dsv_load_be32(in + pos);
		pos += LZ4F_BLOCK_HEADER;
		if (stored == 0 || stored > src_size - pos ||
		    dsv_lz4_block_decode(out + i * f.block, want, in + pos, stored))
			return DSV_ERR_CORRUPT;
		pos += stored;
	}
	/* Bytes after the last block are not the frame's: the plugin's
	 * decoder stops at the last block and never reads them; neither do we. */
	return (int64_t)f.raw;
}

int dsv_lz4_index(const void *src, size_t src_size, const dsv_lz4_frame *f, uint64_t *at)
{
	const uint8_t *in = src;
	size_t pos = LZ4F_HEADER;

	for (uint64_t i = 0; i < f->nblocks; i++) {
		uint32_t stored;

		if (pos > src_size || src_size - pos < LZ4F_BLOCK_HEADER)
			return DSV_ERR_CORRUPT;
		at[i] = pos;
		stored = dsv_load_be32(in + pos);
		pos += LZ4F_BLOCK_HEADER;
		if (stored == 0 || stored > src_size - pos)
			return DSV_ERR_CORRUPT;
		pos += stored;
	}
	at[f->nblocks] = pos; /* bytes after it are not the frame's (see dsv_lz4_decode) */
	return 0;
}

static size_t eff_block(size_t src_size, size_t block_size)
{
	if (block_size == 0)
		block_size = DSV_LZ4_DEFAULT_BLOCK;
	return block_size < src_size ? block_size : src_size;
}

size_t dsv_lz4_bound(size_t src_size, size_t block_size)
{
	size_t bs = eff_block(src_size, block_size), nblocks, bound;

	if (src_size == 0)
		return LZ4F_HEADER;
	nblocks = src_size / bs + (src_size % bs != 0);
	/* A block is stored raw unless it shrinks, so no block grows. */
	if (__builtin_mul_overflow(nblocks, (size_t)LZ4F_BLOCK_HEADER, &bound) ||
	    __builtin_add_overflow(bound, (size_t)LZ4F_HEADER, &bound) ||
	    __builtin_add_overflow(bound, src_size, &bound))
		return SIZE_MAX;
	return bound;
}

/* hc: LZ4HC at level; else LZ4 fast with acceleration level (>= 1). */
static int64_t encode(void *dst, size_t dst_cap, const void *src, size_t src_size,
		      size_t block_size, int hc, int level)
{
	const char *in = src;
	uint8_t *out = dst;
	size_t bs = eff_block(src_size, block_size), done = 0, pos = LZ4F_HEADER;

	/* The plugin writes the block size as u32 and LZ4 blocks are int. */
	if (bs > LZ4_MAX_INPUT_SIZE || (uint64_t)src_size > INT64_MAX)
		return DSV_ERR_INVALID;
	if (dst_cap < LZ4F_HEADER)
		return DSV_ERR_OVERFLOW;
	dsv_store_be64(out, (uint64_t)src_size);
	dsv_store_be32(out + 8, (uint32_t)bs);

	while (done < src_size) {
		size_t want = src_size - done < bs ? src_size - done : bs;
		size_t room, cap;
		int got = 0;

		if (dst_cap - pos < LZ4F_BLOCK_HEADER)
			return DSV_ERR_OVERFLOW;
		room = dst_cap - pos - LZ4F_BLOCK_HEADER;
		/* Ask for strictly fewer bytes than the block: if LZ4 cannot
		 * fit it there, it does not shrink and goes in raw. */
		cap = want - 1 < room ? want - 1 : room;
		if (cap > 0) {
			if (!hc)
				got = LZ4_compress_fast(in + done,
							(char *)out + pos + LZ4F_BLOCK_HEADER,
							(int)want, (int)cap, level);
			else
				got = LZ4_compress_HC(in + done,
						      (char *)out + pos + LZ4F_BLOCK_HEADER,
						      (int)want, (int)cap, level);
		}
		if (got <= 0 || (size_t)got >= want) {
			if (room < want)
				return DSV_ERR_OVERFLOW;
			memcpy(out + pos + LZ4F_BLOCK_HEADER, in + done, want);
			got = (int)want;
		}
		dsv_store_be32(out + pos, (uint32_t)got);
		pos += LZ4F_BLOCK_HEADER + (size_t)got;
		done += want;
	}
	return (int64_t)pos;
}

int64_t dsv_lz4_encode(void *dst, size_t dst_cap, const void *src, size_t src_size,
		       size_t block_size, int level)
{
	if (level < 0 || level > LZ4HC_CLEVEL_MAX)
		return DSV_ERR_INVALID;
	return encode(dst, dst_cap, src, src_size, block_size, level > 0, level > 0 ? level : 1);
}

int64_t dsv_lz4_encode_fast(void *dst, size_t dst_cap, const void *src, size_t src_size,
			    size_t block_size, int acceleration)
{
	if (acceleration < 1 || acceleration > DSV_LZ4_MAX_ACCELERATION)
		return DSV_ERR_INVALID;
	return encode(dst, dst_cap, src, src_size, block_size, 0, acceleration);
}
