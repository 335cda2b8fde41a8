/*
 * The LZ4 block decoder of the CUDA backend, written once for the device
 * and the host (DSV_HD): nvcc builds it into the kernels, and the unit
 * tests and tests/fuzz/fuzz_devlz4.c build it as plain C and hold it to
 * liblz4's LZ4_decompress_safe, byte for byte.
 *
 * Same answers as LZ4_decompress_safe (liblz4 1.9.4, the version Debian
 * bookworm ships and the tests run against): the same blocks accepted, the
 * same byte count returned, the same bytes. That decoder checks the end of
 * its input and output differently while more than 64 output bytes are left
 * (its "fast loop") than after, and a block that only one of the two sets
 * of checks accepts is accepted or refused by where it ends; so this
 * decoder keeps the same two phases and the same tests, written on indices
 * instead of pointers. A match offset of 0, which the format never writes,
 * gives zeros as liblz4's copy does. Every read and write is also checked
 * against n and cap on its own (tests the liblz4 walk makes unreachable),
 * so no input reads or writes out of bounds.
 *
 * Lanes: the lanes of one warp run the same walk on the same bytes (their
 * loads are uniform) and share each copy, lane k taking bytes k, k + lanes,
 * ...; DSV_DEV_SYNC orders the copies. The host runs it with one lane.
 */
#ifndef DSV_GPU_DEV_LZ4_H
#define DSV_GPU_DEV_LZ4_H

#include <stdint.h>

#include "xform/xform_elem.h" /* DSV_HD */

#ifdef __CUDA_ARCH__ /* the device pass of nvcc */
#define DSV_DEV_SYNC() __syncwarp()
#else
#define DSV_DEV_SYNC() ((void)0)
#endif

/* LZ4 block sizes are C ints (LZ4_MAX_INPUT_SIZE is below 2^31). */
#define DSV_DEV_LZ4_MAX 0x7E000000

/* n bytes from s to d, striped over the lanes. */
static inline DSV_HD void dsv_dev_copy(uint8_t *d, const uint8_t *s, uint32_t n, unsigned lane,
				       unsigned lanes)
{
	for (uint32_t k = lane; k < n; k += lanes)
		d[k] = s[k];
	DSV_DEV_SYNC();
}

/* An LZ4 match: n bytes at out + o repeating the off bytes before it
 * (out[o + k] = out[o - off + k % off]); zeros when off is 0. Every byte
 * read lies before o, so the lanes need no order among themselves. */
static inline DSV_HD void dsv_dev_match(uint8_t *out, uint32_t o, uint32_t off, uint32_t n,
					unsigned lane, unsigned lanes)
{
	if (off == 0) {
		for (uint32_t k = lane; k < n; k += lanes)
			out[o + k] = 0;
	} else if (off >= n) {
		for (uint32_t k = lane; k < n; k += lanes)
			out[o + k] = out[o - off + k];
	} else {
		for (uint32_t k = lane; k < n; k += lanes)
			out[o + k] = out[o - off + k % off];
	}
	DSV_DEV_SYNC();
}

/* A length's extension bytes (255, 255, ..., last < 255) at *i, added to
 * *len. initial: refuse when *i is already at limit. @return 0 or -1. */
static inline DSV_HD int dsv_dev_lz4_varlen(const uint8_t *in, int64_t n, int64_t *i, int64_t limit,
					    int initial, int64_t *len)
{
	unsigned s;
	if (initial && *i >= limit)
		return -1;
	do {
		if (*i >= n)
			return -1;
		s = in[(*i)++];
		*len += s;
		if (*i > limit)
			return -1;
	} while (s == 255);
	return 0;
}

static inline DSV_HD int64_t dsv_dev_le16(const uint8_t *p)
{
	return (int64_t)p[0] | (int64_t)p[1] << 8;
}

/* Decodes the LZ4 block in[0, n) into out, at most cap bytes.
 * @return the bytes decoded (as LZ4_decompress_safe: a valid block may
 * decode to fewer than cap), or -1 for a malformed block. */
static inline DSV_HD int64_t dsv_dev_lz4_block(const uint8_t *in, int64_t n, uint8_t *out,
					       int64_t cap, unsigned lane, unsigned lanes)
{
	int64_t i = 0, o = 0, lit, ml, off;
	unsigned tok;
	int fast;

	if (n < 0 || cap < 0 || n > 0x7fffffff || cap > 0x7fffffff)
		return -1;
	if (cap == 0)
		return n == 1 && in[0] == 0 ? 0 : -1;
	if (n == 0)
		return -1;
	/* The fast phase runs while at least 64 output bytes are left. */
	fast = cap >= 64;
	for (;;) {
		if (i >= n)
			return -1;
		tok = in[i++];
		lit = tok >> 4;
		if (fast) {
			if (lit == 15) {
				if (dsv_dev_lz4_varlen(in, n, &i, n - 15, 1, &lit))
					return -1;
				if (o + lit > cap - 32 || i + lit > n - 32) {
					fast = 0;
					goto literals;
				}
			} else if (i > n - 17) {
				fast = 0;
				goto literals;
			}
			if (o + lit > cap || i + lit + 2 > n)
				return -1;
			dsv_dev_copy(out + o, in + i, (uint32_t)lit, lane, lanes);
			i += lit;
			o += lit;
			off = dsv_dev_le16(in + i);
			i += 2;
			ml = tok & 15;
			if (ml == 15) {
				if (dsv_dev_lz4_varlen(in, n, &i, n - 4, 0, &ml))
					return -1;
			}
			ml += 4;
			if (o + ml >= cap - 64) {
				fast = 0;
				goto match;
			}
			if (off > o)
				return -1;
			dsv_dev_match(out, (uint32_t)o, (uint32_t)off, (uint32_t)ml, lane, lanes);
			o += ml;
			continue;
		}
		/* The slow phase. Short literals and matches far from both ends
		 * skip the end tests (liblz4's two-stage shortcut). */
		if (lit != 15 && i < n - 16 && o <= cap - 32) {
			if (o + lit > cap || i + lit + 2 > n)
				return -1;
			dsv_dev_copy(out + o, in + i, (uint32_t)lit, lane, lanes);
			o += lit;
			i += lit;
			ml = tok & 15;
			off = dsv_dev_le16(in + i);
			i += 2;
			if (ml != 15 && off >= 8 && off <= o) {
				if (o + ml + 4 > cap)
					return -1;
				dsv_dev_match(out, (uint32_t)o, (uint32_t)off, (uint32_t)(ml + 4),
					      lane, lanes);
				o += ml + 4;
				continue;
			}
			goto match_len;
		}
		if (lit == 15 && dsv_dev_lz4_varlen(in, n, &i, n - 15, 1, &lit))
			return -1;
literals:
		if (o + lit > cap - 12 || i + lit > n - 8) {
			/* the last literals: they end the input exactly */
			if (i + lit != n || o + lit > cap)
				return -1;
			dsv_dev_copy(out + o, in + i, (uint32_t)lit, lane, lanes);
			return o + lit;
		}
		dsv_dev_copy(out + o, in + i, (uint32_t)lit, lane, lanes);
		i += lit;
		o += lit;
		off = dsv_dev_le16(in + i);
		i += 2;
		ml = tok & 15;
match_len:
		if (ml == 15 && dsv_dev_lz4_varlen(in, n, &i, n - 4, 0, &ml))
			return -1;
		ml += 4;
match:
		/* the last 5 bytes of a block are literals */
		if (off > o || o + ml > cap - 5)
			return -1;
		dsv_dev_match(out, (uint32_t)o, (uint32_t)off, (uint32_t)ml, lane, lanes);
		o += ml;
	}
}

/* One block of a 32004 frame (codec/lz4.c): stored bytes at in into
 * exactly want bytes at out; a block whose stored size is its raw size was
 * stored raw. @return 0 or -1, as dsv_lz4_decode judges the block. */
static inline DSV_HD int dsv_dev_lz4_frame_block(const uint8_t *in, uint64_t stored, uint8_t *out,
						 uint64_t want, unsigned lane, unsigned lanes)
{
	if (stored == want) {
		if (want > 0xffffffffu)
			return -1;
		dsv_dev_copy(out, in, (uint32_t)want, lane, lanes);
		return 0;
	}
	if (want > DSV_DEV_LZ4_MAX || stored > 0x7fffffff)
		return -1;
	return dsv_dev_lz4_block(in, (int64_t)stored, out, (int64_t)want, lane, lanes) ==
			       (int64_t)want
		       ? 0
		       : -1;
}

#endif
