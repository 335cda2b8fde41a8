/* Codecs: bitshuffle 32008. The bit transpose against a naive bit loop
 * written from the format description (not from our encoder), chunks the
 * real bitshuffle plugin wrote (fixtures/gen_bshuf.py), round trips over
 * element sizes, sizes that leave elements over, block sizes and both
 * inner codecs, and every malformation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lz4.h>

#include "codec/codec.h"
#include "common/bytes.h"
#include "dsview/codec.h"
#include "dsview/dsview.h"
#include "fixture.h"

static void fill(uint8_t *p, size_t n, unsigned seed, int compressible)
{
	uint32_t x = seed * 2654435761u + 1;
	for (size_t i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		p[i] = compressible ? (uint8_t)((i / 7) % 13) : (uint8_t)(x >> 24);
	}
}

/* The format, one bit at a time: a block of m elements (m % 8 == 0) is
 * 8 * es rows of m bits; bit b of element e (bit b % 8 of its byte b / 8)
 * is bit e % 8 of byte e / 8 of row b. */
static void ref_trans_block(uint8_t *out, const uint8_t *in, size_t m, size_t es)
{
	memset(out, 0, m * es);
	for (size_t e = 0; e < m; e++)
		for (size_t b = 0; b < 8 * es; b++) {
			unsigned bit = in[e * es + b / 8] >> (b % 8) & 1;
			out[(b * m + e) / 8] |= (uint8_t)(bit << (e % 8));
		}
}

/* The uncompressed chunk: full blocks, the rest rounded down to 8
 * elements as one block, the last n % 8 elements verbatim. */
static void ref_shuffle(uint8_t *out, const uint8_t *in, size_t n, size_t es, size_t blk)
{
	size_t done = 0, left = n % 8;
	while (done < n - left) {
		size_t m = n - left - done < blk ? n - left - done : blk;
		ref_trans_block(out + done * es, in + done * es, m, es);
		done += m;
	}
	memcpy(out + done * es, in + done * es, left * es);
}

static void test_default_block(void **state)
{
	(void)state;
	assert_int_equal(dsv_bshuf_default_block(1), 8192);
	assert_int_equal(dsv_bshuf_default_block(2), 4096);
	assert_int_equal(dsv_bshuf_default_block(4), 2048);
	assert_int_equal(dsv_bshuf_default_block(8), 1024);
	assert_int_equal(dsv_bshuf_default_block(3), 2728);  /* 2730 down to 8 */
	assert_int_equal(dsv_bshuf_default_block(100), 128); /* at least 128 */
}

/* The transpose of one 8-element block by hand: element e = 1 << e
 * (uint8) puts row b = 0x01 << b, i.e. an 8x8 identity. */
static void test_hand_made(void **state)
{
	(void)state;
	uint8_t in[8], out[8], back[8];
	for (int e = 0; e < 8; e++)
		in[e] = (uint8_t)(1u << e);
	assert_int_equal(dsv_bshuf_encode(out, sizeof(out), in, 8, 1, 0, DSV_BSHUF_NONE, 0), 8);
	for (int b = 0; b < 8; b++)
		assert_int_equal(out[b], 1u << b);
	/* all elements 0x80: only row 7 is set, all 8 bits */
	memset(in, 0x80, 8);
	assert_int_equal(dsv_bshuf_encode(out, sizeof(out), in, 8, 1, 0, DSV_BSHUF_NONE, 0), 8);
	for (int b = 0; b < 8; b++)
		assert_int_equal(out[b], b == 7 ? 0xff : 0);
	assert_int_equal(dsv_bshuf_decode(back, 8, out, 8, 1, 0, DSV_BSHUF_NONE), 8);
	assert_memory_equal(back, in, 8);
}

static const size_t esizes[] = { 1, 2, 4, 8, 3, 16 };
static const size_t counts[] = { 0, 1, 7, 8, 9, 64, 100, 1027, 5000, 20003 };
static const size_t blocks[] = { 0, 8, 64, 1024 };
static const int comps[] = { DSV_BSHUF_NONE, DSV_BSHUF_LZ4, DSV_BSHUF_ZSTD };

/* The decoder against the naive reference, and our encoder producing it. */
static void test_against_reference(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(esizes) / sizeof(esizes[0]); i++)
		for (size_t j = 0; j < sizeof(counts) / sizeof(counts[0]); j++)
			for (size_t k = 0; k < sizeof(blocks) / sizeof(blocks[0]); k++) {
				size_t es = esizes[i], n = counts[j], size = n * es;
				size_t blk = blocks[k] ? blocks[k] : dsv_bshuf_default_block(es);
				uint8_t *in = malloc(size + 1), *ref = malloc(size + 1),
					*enc = malloc(size + 1), *out = malloc(size + 1);
				assert_true(in && ref && enc && out);
				fill(in, size, (unsigned)(i * 100 + j), 0);
				ref_shuffle(ref, in, n, es, blk);
				assert_int_equal(dsv_bshuf_encode(enc, size, in, size, es,
								  blocks[k], DSV_BSHUF_NONE, 0),
						 size);
				assert_memory_equal(enc, ref, size);
				assert_int_equal(dsv_bshuf_decode(out, size, ref, size, es,
								  blocks[k], DSV_BSHUF_NONE),
						 size);
				assert_memory_equal(out, in, size);
				free(in);
				free(ref);
				free(enc);
				free(out);
			}
}

/* Compressed: each block of the frame, decompressed by liblz4 itself, is
 * the reference transpose of its elements. */
static void test_lz4_frame_layout(void **state)
{
	(void)state;
	size_t es = 4, n = 1027, blk = 64, size = n * es;
	uint8_t *in = malloc(size), *enc = malloc(dsv_bshuf_bound(size, es, blk, DSV_BSHUF_LZ4)),
		*ref = malloc(blk * es), *blkbuf = malloc(blk * es);
	assert_true(in && enc && ref && blkbuf);
	fill(in, size, 7, 1);
	int64_t len = dsv_bshuf_encode(enc, dsv_bshuf_bound(size, es, blk, DSV_BSHUF_LZ4), in, size,
				       es, blk, DSV_BSHUF_LZ4, 0);
	assert_true(len > 12);
	assert_int_equal(dsv_load_be32(enc), 0);
	assert_int_equal(dsv_load_be32(enc + 4), size);
	assert_int_equal(dsv_load_be32(enc + 8), blk * es);
	size_t pos = 12, done = 0;
	while (done < n - n % 8) {
		size_t m = n - n % 8 - done < blk ? n - n % 8 - done : blk;
		uint32_t stored = dsv_load_be32(enc + pos);
		assert_int_equal(LZ4_decompress_safe((char *)enc + pos + 4, (char *)blkbuf,
						     (int)stored, (int)(m * es)),
				 m * es);
		ref_trans_block(ref, in + done * es, m, es);
		assert_memory_equal(blkbuf, ref, m * es);
		pos += 4 + stored;
		done += m;
	}
	assert_int_equal(len - (int64_t)pos, (n % 8) * es);
	assert_memory_equal(enc + pos, in + done * es, (n % 8) * es);
	free(in);
	free(enc);
	free(ref);
	free(blkbuf);
}

static void test_round_trips(void **state)
{
	(void)state;
	for (size_t c = 0; c < sizeof(comps) / sizeof(comps[0]); c++)
		for (size_t i = 0; i < sizeof(esizes) / sizeof(esizes[0]); i++)
			for (size_t j = 0; j < sizeof(counts) / sizeof(counts[0]); j++)
				for (size_t k = 0; k < sizeof(blocks) / sizeof(blocks[0]); k++)
					for (int z = 0; z < 2; z++) {
						size_t es = esizes[i], size = counts[j] * es;
						size_t bound = dsv_bshuf_bound(size, es, blocks[k],
									       comps[c]);
						uint8_t *in = malloc(size + 1),
							*enc = malloc(bound + 1),
							*out = malloc(size + 1);
						assert_true(in && enc && out);
						fill(in, size, (unsigned)(c + i + j + k), z);
						int64_t len = dsv_bshuf_encode(enc, bound, in, size,
									       es, blocks[k],
									       comps[c], 3);
						assert_true(len >= 0);
						assert_int_equal(dsv_bshuf_decode(out, size, enc,
										  (size_t)len, es,
										  blocks[k],
										  comps[c]),
								 size);
						assert_memory_equal(out, in, size);
						free(in);
						free(enc);
						free(out);
					}
}

/* Chunk 0 of each dataset the real plugin wrote (gen_bshuf.py). */
static void check_plugin_chunk(const char *name, size_t es, size_t n, size_t blk, int comp,
			       uint64_t seed, void (*conv)(int64_t v, uint8_t *out))
{
	size_t len, size = n * es;
	uint8_t *chunk = read_fixture(name, &len), *out = malloc(size), *want = malloc(size);
	int64_t *pat = malloc(n * sizeof(*pat));
	assert_true(out && want && pat);
	fixture_pattern(pat, n, seed);
	for (size_t i = 0; i < n; i++)
		conv(pat[i], want + i * es);
	assert_int_equal(dsv_bshuf_decode(out, size, chunk, len, es, blk, comp), size);
	assert_memory_equal(out, want, size);
	free(chunk);
	free(out);
	free(want);
	free(pat);
}

static void conv_i16(int64_t v, uint8_t *o)
{
	int16_t x = (int16_t)(v - 100);
	memcpy(o, &x, 2);
}
static void conv_f32(int64_t v, uint8_t *o)
{
	float x = (float)((double)v * 0.25 - 3);
	memcpy(o, &x, 4);
}
static void conv_u8(int64_t v, uint8_t *o)
{
	*o = (uint8_t)v;
}
static void conv_f64(int64_t v, uint8_t *o)
{
	double x = (double)v * 1.5e300;
	memcpy(o, &x, 8);
}

static void test_plugin_chunks(void **state)
{
	(void)state;
	size_t len;
	uint8_t *hdr = read_fixture("bshuf_lz4_i16.bin", &len);
	/* The plugin's header: raw size and the default block in bytes. */
	assert_int_equal(dsv_load_be32(hdr + 4), 105 * 2);
	assert_int_equal(dsv_load_be32(hdr + 8), dsv_bshuf_default_block(2) * 2);
	free(hdr);
	check_plugin_chunk("bshuf_lz4_i16.bin", 2, 105, 0, DSV_BSHUF_LZ4, 1, conv_i16);
	check_plugin_chunk("bshuf_zstd_f32.bin", 4, 210, 64, DSV_BSHUF_ZSTD, 2, conv_f32);
	check_plugin_chunk("bshuf_none_u8.bin", 1, 900, 0, DSV_BSHUF_NONE, 3, conv_u8);
	check_plugin_chunk("bshuf_lz4_f64.bin", 8, 20, 16, DSV_BSHUF_LZ4, 4, conv_f64);
}

/* An LZ4 frame of 1027 4-byte elements in 64-element blocks: 16 full
 * blocks, no partial one, 3 left over. */
static uint8_t *frame(size_t *len, uint8_t *in)
{
	size_t size = 1027 * 4, bound = dsv_bshuf_bound(size, 4, 64, DSV_BSHUF_LZ4);
	uint8_t *enc = malloc(bound + 64);
	assert_non_null(enc);
	fill(in, size, 11, 1);
	int64_t n = dsv_bshuf_encode(enc, bound, in, size, 4, 64, DSV_BSHUF_LZ4, 0);
	assert_true(n > 0);
	*len = (size_t)n;
	return enc;
}

static void test_malformed(void **state)
{
	(void)state;
	size_t size = 1027 * 4, len;
	uint8_t in[1027 * 4], out[1027 * 4 + 64];
	uint8_t *f = frame(&len, in), *m = malloc(len + 64);
	assert_non_null(m);
	assert_int_equal(dsv_bshuf_decode(out, size, f, len, 4, 0, DSV_BSHUF_LZ4), size);

	/* truncated anywhere, header included */
	for (size_t cut = 0; cut < len; cut++)
		assert_int_equal(dsv_bshuf_decode(out, size, f, cut, 4, 0, DSV_BSHUF_LZ4),
				 DSV_ERR_CORRUPT);
	/* trailing bytes */
	memcpy(m, f, len);
	m[len] = 0;
	assert_int_equal(dsv_bshuf_decode(out, size, m, len + 1, 4, 0, DSV_BSHUF_LZ4),
			 DSV_ERR_CORRUPT);
	/* a total size other than the chunk's, either way */
	assert_int_equal(dsv_bshuf_decode(out, size - 4, f, len, 4, 0, DSV_BSHUF_LZ4),
			 DSV_ERR_CORRUPT);
	assert_int_equal(dsv_bshuf_decode(out, size + 4, f, len, 4, 0, DSV_BSHUF_LZ4),
			 DSV_ERR_CORRUPT);
	memcpy(m, f, len);
	m[7] ^= 4;
	assert_int_equal(dsv_bshuf_decode(out, size, m, len, 4, 0, DSV_BSHUF_LZ4), DSV_ERR_CORRUPT);
	memcpy(m, f, len);
	m[0] = 1; /* high byte of the u64 */
	assert_int_equal(dsv_bshuf_decode(out, size, m, len, 4, 0, DSV_BSHUF_LZ4), DSV_ERR_CORRUPT);
	/* a size not a multiple of the element size */
	assert_int_equal(dsv_bshuf_decode(out, size - 1, f, len, 4, 0, DSV_BSHUF_LZ4),
			 DSV_ERR_CORRUPT);
	assert_int_equal(dsv_bshuf_decode(out, size, f, len, 0, 0, DSV_BSHUF_LZ4), DSV_ERR_CORRUPT);
	/* block sizes: 0, not a multiple of the element size (257: the
	 * plugin would truncate it to 64 elements; we call it corrupt), not of 8
	 * elements, larger than the chunk (consistent: then one block is
	 * the whole chunk, and the blocks here do not add up) */
	static const uint32_t bad_blocks[] = { 0,     255,    254,      4 * 64 + 1, 4 * 60,
					       4 * 4, 4 * 72, 4 * 2048, 0xfffffff8u };
	for (size_t i = 0; i < sizeof(bad_blocks) / sizeof(bad_blocks[0]); i++) {
		memcpy(m, f, len);
		dsv_store_be32(m + 8, bad_blocks[i]);
		assert_int_equal(dsv_bshuf_decode(out, size, m, len, 4, 0, DSV_BSHUF_LZ4),
				 DSV_ERR_CORRUPT);
	}
	/* a block's compressed size past the input, and one short of it */
	memcpy(m, f, len);
	dsv_store_be32(m + 12, 0xffffffffu);
	assert_int_equal(dsv_bshuf_decode(out, size, m, len, 4, 0, DSV_BSHUF_LZ4), DSV_ERR_CORRUPT);
	memcpy(m, f, len);
	dsv_store_be32(m + 12, (uint32_t)len);
	assert_int_equal(dsv_bshuf_decode(out, size, m, len, 4, 0, DSV_BSHUF_LZ4), DSV_ERR_CORRUPT);
	memcpy(m, f, len);
	dsv_store_be32(m + 12, dsv_load_be32(f + 12) - 1);
	assert_int_equal(dsv_bshuf_decode(out, size, m, len, 4, 0, DSV_BSHUF_LZ4), DSV_ERR_CORRUPT);
	/* a block that decodes to the wrong size: a valid LZ4 block of 255
	 * bytes where 256 are due */
	{
		uint8_t src[255], blk[LZ4_COMPRESSBOUND(255) + 12 + 4 + 12];
		memset(src, 3, sizeof(src));
		int c = LZ4_compress_default((char *)src, (char *)blk + 16, 255,
					     LZ4_COMPRESSBOUND(255));
		assert_true(c > 0);
		memset(blk, 0, 8);
		blk[6] = 1; /* raw size 256, as u64 BE */
		dsv_store_be32(blk + 8, 256);
		dsv_store_be32(blk + 12, (uint32_t)c);
		assert_int_equal(
			dsv_bshuf_decode(out, 256, blk, 16 + (size_t)c, 1, 0, DSV_BSHUF_LZ4),
			DSV_ERR_CORRUPT);
		/* the same bytes where 255 + 1 left over are due: wrong too */
		blk[7] = 0xff;
		blk[6] = 0;
		assert_int_equal(
			dsv_bshuf_decode(out, 255, blk, 16 + (size_t)c, 1, 0, DSV_BSHUF_LZ4),
			DSV_ERR_CORRUPT);
	}
	/* an unknown compression */
	assert_int_equal(dsv_bshuf_decode(out, size, f, len, 4, 0, 1), DSV_ERR_CORRUPT);
	assert_int_equal(dsv_bshuf_decode(out, size, f, len, 4, 0, 4), DSV_ERR_CORRUPT);
	/* uncompressed: the size must be the data's; a block size not a
	 * multiple of 8 */
	assert_int_equal(dsv_bshuf_decode(out, 64, in, 65, 4, 0, DSV_BSHUF_NONE), DSV_ERR_CORRUPT);
	assert_int_equal(dsv_bshuf_decode(out, 64, in, 63, 4, 0, DSV_BSHUF_NONE), DSV_ERR_CORRUPT);
	assert_int_equal(dsv_bshuf_decode(out, 64, in, 64, 4, 12, DSV_BSHUF_NONE), DSV_ERR_CORRUPT);
	/* flipping any bit of a frame never goes out of bounds (ASan) and
	 * never succeeds with another size */
	for (size_t i = 0; i < len; i++) {
		memcpy(m, f, len);
		m[i] ^= (uint8_t)(1u << (i % 8));
		int64_t got = dsv_bshuf_decode(out, size, m, len, 4, 0, DSV_BSHUF_LZ4);
		assert_true(got == DSV_ERR_CORRUPT || got == (int64_t)size);
	}
	free(f);
	free(m);
}

static void test_zstd_malformed(void **state)
{
	(void)state;
	size_t size = 1000 * 2, bound = dsv_bshuf_bound(size, 2, 128, DSV_BSHUF_ZSTD);
	uint8_t in[2000], out[2000], *enc = malloc(bound + 1);
	assert_non_null(enc);
	fill(in, size, 5, 1);
	int64_t len = dsv_bshuf_encode(enc, bound, in, size, 2, 128, DSV_BSHUF_ZSTD, 3);
	assert_true(len > 0);
	assert_int_equal(dsv_bshuf_decode(out, size, enc, (size_t)len, 2, 0, DSV_BSHUF_ZSTD), size);
	/* decoded as LZ4 it is garbage */
	assert_int_equal(dsv_bshuf_decode(out, size, enc, (size_t)len, 2, 0, DSV_BSHUF_LZ4),
			 DSV_ERR_CORRUPT);
	for (size_t cut = 0; cut < (size_t)len; cut++)
		assert_int_equal(dsv_bshuf_decode(out, size, enc, cut, 2, 0, DSV_BSHUF_ZSTD),
				 DSV_ERR_CORRUPT);
	for (size_t i = 0; i < (size_t)len; i++) {
		enc[i] ^= 0x10;
		int64_t got = dsv_bshuf_decode(out, size, enc, (size_t)len, 2, 0, DSV_BSHUF_ZSTD);
		assert_true(got == DSV_ERR_CORRUPT || got == (int64_t)size);
		enc[i] ^= 0x10;
	}
	free(enc);
}

static void test_encode_invalid(void **state)
{
	(void)state;
	uint8_t in[64], out[256];
	memset(in, 1, sizeof(in));
	assert_int_equal(dsv_bshuf_encode(out, sizeof(out), in, 63, 2, 0, DSV_BSHUF_LZ4, 0),
			 DSV_ERR_INVALID);
	assert_int_equal(dsv_bshuf_encode(out, sizeof(out), in, 64, 2, 12, DSV_BSHUF_LZ4, 0),
			 DSV_ERR_INVALID);
	assert_int_equal(dsv_bshuf_encode(out, sizeof(out), in, 64, 2, 0, 1, 0), DSV_ERR_INVALID);
	assert_int_equal(dsv_bshuf_encode(out, 11, in, 64, 2, 0, DSV_BSHUF_LZ4, 0),
			 DSV_ERR_OVERFLOW);
	assert_int_equal(dsv_bshuf_encode(out, 63, in, 64, 2, 0, DSV_BSHUF_NONE, 0),
			 DSV_ERR_OVERFLOW);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_default_block),     cmocka_unit_test(test_hand_made),
		cmocka_unit_test(test_against_reference), cmocka_unit_test(test_lz4_frame_layout),
		cmocka_unit_test(test_round_trips),       cmocka_unit_test(test_plugin_chunks),
		cmocka_unit_test(test_malformed),         cmocka_unit_test(test_zstd_malformed),
		cmocka_unit_test(test_encode_invalid),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
