/*
 * The bitshuffle HDF5 filter (id 32008), as kiyo-masui/bitshuffle writes
 * it (its src/bshuf_h5filter.c, src/bitshuffle.c and src/bitshuffle_core.c):
 *
 * cd_values: [0] major, [1] minor version, [2] element size in bytes,
 * [3] block size in elements (0: bshuf_default_block_size), [4]
 * compression (0 none, 2 LZ4, 3 zstd), [5] zstd level (encoding only).
 *
 * Blocking (bshuf_blocked_wrap_fun), for n elements of elem_size bytes and
 * a block of B elements (a multiple of 8): n / B full blocks, then one
 * block of (n % B) rounded down to a multiple of 8 elements if that is
 * not 0, then the last n % 8 elements copied verbatim (never shuffled).
 *
 * A block of m elements (m % 8 == 0) is bit-transposed: it is read as
 * 8 * elem_size rows of m bits, row b holding bit b % 8 of byte b / 8 of
 * every element, element e at bit e % 8 of byte e / 8 of the row.
 *
 * Uncompressed (cd[4] == 0): the chunk is the blocks and the leftover, no
 * header, the same size as the data; B comes from cd[3].
 * Compressed (cd[4] == 2 or 3): a 12-byte header, u64 BE raw size and u32
 * BE block size in *bytes* (B * elem_size: the plugin's decoder takes B
 * from here, not from cd[3]); then per block a u32 BE compressed size and
 * one LZ4 block (LZ4_compress_default) or one zstd frame (ZSTD_compress),
 * which decodes to exactly m * elem_size bytes; then the leftover bytes
 * raw. No block is ever stored raw.
 *
 * Untrusted input: every size is checked against the caller's expected
 * size and the bytes present; the only allocation is one block of
 * transposed bytes, bounded by dst_size.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <lz4.h>
#include <zstd.h>

#include "codec/codec.h"
#include "common/bytes.h"
#include "dsview/codec.h"
#include "dsview/dsview.h"

#define BSHUF_HEADER 12
#define BSHUF_BLOCK_HEADER 4

size_t dsv_bshuf_default_block(size_t elem_size)
{
	size_t b = elem_size ? 8192 / elem_size : 0;
	b -= b % 8;
	return b > 128 ? b : 128;
}

int dsv_bshuf_params(const unsigned *cd, size_t ncd, unsigned *elem_size, unsigned *block_size,
		     int *compression, dsv_errbuf *eb)
{
	const int U = DSV_ERR_UNSUPPORTED;

	*elem_size = ncd > 2 ? cd[2] : 0;
	*block_size = ncd > 3 ? cd[3] : 0;
	*compression = ncd > 4 ? (int)cd[4] : DSV_BSHUF_NONE;
	if (*elem_size == 0)
		return dsv_errf(eb, U, "no element size");
	if (*block_size % 8)
		return dsv_errf(eb, U, "block size not a multiple of 8 elements");
	/* The plugin decodes any other value as no compression; its own
	 * set_local means to refuse them, and so do we. */
	if (*compression != DSV_BSHUF_NONE && *compression != DSV_BSHUF_LZ4 &&
	    *compression != DSV_BSHUF_ZSTD)
		return dsv_errf(eb, U, "unknown compression");
	return 0;
}

/* Transposes the 8x8 bit matrix in x: bit j of byte i goes to bit i of
 * byte j (Hacker's Delight 7-3). */
static uint64_t transpose8(uint64_t x)
{
	uint64_t t;
	t = (x ^ (x >> 7)) & 0x00AA00AA00AA00AAULL;
	x ^= t ^ (t << 7);
	t = (x ^ (x >> 14)) & 0x0000CCCC0000CCCCULL;
	x ^= t ^ (t << 14);
	t = (x ^ (x >> 28)) & 0x00000000F0F0F0F0ULL;
	x ^= t ^ (t << 28);
	return x;
}

/* m elements (m % 8 == 0) of es bytes: in (bit rows) -> out (elements). */
static void untrans(uint8_t *out, const uint8_t *in, size_t m, size_t es)
{
	size_t row = m / 8; /* bytes in a bit row */

	for (size_t j = 0; j < es; j++)
		for (size_t q = 0; q < row; q++) {
			uint64_t x = 0;
			for (size_t k = 0; k < 8; k++)
				x |= (uint64_t)in[(j * 8 + k) * row + q] << (8 * k);
			x = transpose8(x);
			for (size_t e = 0; e < 8; e++)
				out[(q * 8 + e) * es + j] = (uint8_t)(x >> (8 * e));
		}
}

/* The inverse of untrans. */
static void trans(uint8_t *out, const uint8_t *in, size_t m, size_t es)
{
	size_t row = m / 8;

	for (size_t j = 0; j < es; j++)
		for (size_t q = 0; q < row; q++) {
			uint64_t x = 0;
			for (size_t e = 0; e < 8; e++)
				x |= (uint64_t)in[(q * 8 + e) * es + j] << (8 * e);
			x = transpose8(x);
			for (size_t k = 0; k < 8; k++)
				out[(j * 8 + k) * row + q] = (uint8_t)(x >> (8 * k));
		}
}

/* Decodes one compressed block of want bytes into tmp. */
static int inner_decode(int compression, void *tmp, size_t want, const uint8_t *src, size_t n)
{
	if (compression == DSV_BSHUF_LZ4) {
		if (want > LZ4_MAX_INPUT_SIZE || n > INT_MAX)
			return DSV_ERR_CORRUPT;
		int got = LZ4_decompress_safe((const char *)src, tmp, (int)n, (int)want);
		return got >= 0 && (size_t)got == want ? 0 : DSV_ERR_CORRUPT;
	}
	return dsv_zstd_decode(tmp, want, src, n) == (int64_t)want ? 0 : DSV_ERR_CORRUPT;
}

int64_t dsv_bshuf_decode(void *dst, size_t dst_size, const void *src, size_t src_size,
			 size_t elem_size, size_t block_size, int compression)
{
	const uint8_t *in = src;
	uint8_t *out = dst, *tmp = NULL;
	size_t n, blk, pos = 0, done = 0, left;
	int64_t ret = DSV_ERR_CORRUPT;

	if (elem_size == 0 || dst_size % elem_size || (uint64_t)dst_size > INT64_MAX)
		return DSV_ERR_CORRUPT;
	n = dst_size / elem_size;
	if (compression == DSV_BSHUF_NONE) {
		blk = block_size ? block_size : dsv_bshuf_default_block(elem_size);
		if (src_size != dst_size)
			return DSV_ERR_CORRUPT;
	} else if (compression == DSV_BSHUF_LZ4 || compression == DSV_BSHUF_ZSTD) {
		uint32_t bbytes;
		if (src_size < BSHUF_HEADER || dsv_load_be64(in) != dst_size)
			return DSV_ERR_CORRUPT;
		bbytes = dsv_load_be32(in + 8);
		if (bbytes % elem_size)
			return DSV_ERR_CORRUPT;
		blk = bbytes / elem_size;
		pos = BSHUF_HEADER;
	} else {
		return DSV_ERR_CORRUPT;
	}
	if (blk == 0 || blk % 8)
		return DSV_ERR_CORRUPT;

	left = n % 8;
	if (n - left) {
		/* The largest block any chunk of this size has, not B. */
		size_t cap = (blk < n - left ? blk : n - left) * elem_size;
		tmp = malloc(cap);
		if (!tmp)
			return DSV_ERR_NOMEM;
	}
	while (done < n - left) {
		size_t m = n - left - done < blk ? n - left - done : blk;
		size_t want = m * elem_size;

		if (compression == DSV_BSHUF_NONE) {
			memcpy(tmp, in + pos, want);
			pos += want;
		} else {
			uint32_t stored;
			if (src_size - pos < BSHUF_BLOCK_HEADER)
				goto out;
			stored = dsv_load_be32(in + pos);
			pos += BSHUF_BLOCK_HEADER;
			if (stored > src_size - pos ||
			    inner_decode(compression, tmp, want, in + pos, stored))
				goto out;
			pos += stored;
		}
		untrans(out + done * elem_size, tmp, m, elem_size);
		done += m;
	}
	if (src_size - pos != left * elem_size)
		goto out; /* a leftover short, or trailing bytes */
	memcpy(out + done * elem_size, in + pos, left * elem_size);
	ret = (int64_t)dst_size;
out:
	free(tmp);
	return ret;
}

size_t dsv_bshuf_bound(size_t src_size, size_t elem_size, size_t block_size, int compression)
{
	size_t blk = block_size ? block_size : dsv_bshuf_default_block(elem_size), bb, nblocks, per,
	       b;

	if (compression == DSV_BSHUF_NONE)
		return src_size;
	if (elem_size == 0 || __builtin_mul_overflow(blk, elem_size, &bb))
		return SIZE_MAX;
	nblocks = src_size / bb + 1;
	if (compression == DSV_BSHUF_LZ4)
		per = bb > LZ4_MAX_INPUT_SIZE ? 0 : (size_t)LZ4_compressBound((int)bb);
	else
		per = ZSTD_compressBound(bb);
	if (per == 0 || __builtin_add_overflow(per, (size_t)BSHUF_BLOCK_HEADER, &per) ||
	    __builtin_mul_overflow(per, nblocks, &b) ||
	    __builtin_add_overflow(b, (size_t)BSHUF_HEADER, &b) ||
	    __builtin_add_overflow(b, src_size, &b))
		return SIZE_MAX;
	return b;
}

int64_t dsv_bshuf_encode(void *dst, size_t dst_cap, const void *src, size_t src_size,
			 size_t elem_size, size_t block_size, int compression, int level)
{
	const uint8_t *in = src;
	uint8_t *out = dst, *tmp = NULL;
	size_t n, blk, pos = 0, done = 0, left;
	int64_t ret = DSV_ERR_OVERFLOW; /* what a goto out means: dst_cap short */

	if (elem_size == 0 || src_size % elem_size || (uint64_t)src_size > INT64_MAX)
		return DSV_ERR_INVALID;
	blk = block_size ? block_size : dsv_bshuf_default_block(elem_size);
	if (blk % 8 || blk > UINT32_MAX / elem_size)
		return DSV_ERR_INVALID;
	if (compression != DSV_BSHUF_NONE && compression != DSV_BSHUF_LZ4 &&
	    compression != DSV_BSHUF_ZSTD)
		return DSV_ERR_INVALID;
	n = src_size / elem_size;
	left = n % 8;
	if (compression != DSV_BSHUF_NONE) {
		if (dst_cap < BSHUF_HEADER)
			return DSV_ERR_OVERFLOW;
		dsv_store_be64(out, (uint64_t)src_size);
		dsv_store_be32(out + 8, (uint32_t)(blk * elem_size));
		pos = BSHUF_HEADER;
	}
	if (n - left) {
		tmp = malloc((blk < n - left ? blk : n - left) * elem_size);
		if (!tmp)
			return DSV_ERR_NOMEM;
	}
	while (done < n - left) {
		size_t m = n - left - done < blk ? n - left - done : blk;
		size_t want = m * elem_size;

		trans(tmp, in + done * elem_size, m, elem_size);
		if (compression == DSV_BSHUF_NONE) {
			if (dst_cap - pos < want)
				goto out;
			memcpy(out + pos, tmp, want);
			pos += want;
		} else {
			size_t room, got;
			if (dst_cap - pos < BSHUF_BLOCK_HEADER)
				goto out;
			room = dst_cap - pos - BSHUF_BLOCK_HEADER;
			if (compression == DSV_BSHUF_LZ4) {
				int r = want > LZ4_MAX_INPUT_SIZE
						? 0
						: LZ4_compress_default(
							  (const char *)tmp,
							  (char *)out + pos + BSHUF_BLOCK_HEADER,
							  (int)want,
							  room > INT_MAX ? INT_MAX : (int)room);
				if (r <= 0)
					goto out;
				got = (size_t)r;
			} else {
				got = ZSTD_compress(out + pos + BSHUF_BLOCK_HEADER, room, tmp, want,
						    level);
				if (ZSTD_isError(got) || got > UINT32_MAX)
					goto out;
			}
			dsv_store_be32(out + pos, (uint32_t)got);
			pos += BSHUF_BLOCK_HEADER + got;
		}
		done += m;
	}
	if (dst_cap - pos < left * elem_size)
		goto out;
	memcpy(out + pos, in + done * elem_size, left * elem_size);
	ret = (int64_t)(pos + left * elem_size);
out:
	free(tmp);
	return ret;
}
