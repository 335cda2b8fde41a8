/* Block-level access to LZ4 32004 frames: the header's layout, the block
 * index, and blocks decoded alone, on good frames (several block sizes,
 * blocks stored raw) and hostile ones (block size 0, larger than the
 * chunk, block counts whose headers cannot fit, sizes 0 or past the end,
 * truncated and trailing bytes, a lying index). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "dsview/codec.h"
#include "dsview/dsview.h"

static uint32_t rng_state = 7;
static uint32_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 17;
	rng_state ^= rng_state << 5;
	return rng_state;
}

/* Runs of repeated bytes with stretches of noise: some blocks compress,
 * some are stored raw. */
static void fill(uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (i / 3000) % 3 == 2 ? (uint8_t)rnd() : (uint8_t)(i / 64);
}

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static void put_be64(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

/* Decodes every block of enc alone into out; @return 0 or the first error. */
static int decode_blocks(const uint8_t *enc, size_t n, uint8_t *out, size_t cap)
{
	dsv_lz4_frame f;
	int err = dsv_lz4_frame_info(enc, n, &f);
	if (err)
		return err;
	if (f.raw > cap)
		return DSV_ERR_CORRUPT;
	uint64_t *at = malloc((size_t)(f.nblocks + 1) * sizeof(*at));
	assert_non_null(at);
	err = dsv_lz4_index(enc, n, &f, at);
	for (uint64_t i = 0; !err && i < f.nblocks; i++) {
		uint64_t want = f.raw - i * f.block < f.block ? f.raw - i * f.block : f.block;
		int64_t got = dsv_lz4_decode_block(out + i * f.block, (size_t)want, enc, n, &f, at, i);
		if (got != (int64_t)want)
			err = DSV_ERR_CORRUPT;
	}
	free(at);
	return err;
}

static void test_blocks_round_trip(void **state)
{
	(void)state;
	static const size_t sizes[] = { 1, 4096, 100000, 262144 };
	static const size_t blocks[] = { 1, 1000, 4096, 16384, 65536, 1u << 30 };
	for (size_t s = 0; s < sizeof(sizes) / sizeof(*sizes); s++) {
		size_t n = sizes[s];
		uint8_t *src = malloc(n), *a = malloc(n), *b = malloc(n);
		assert_non_null(src);
		fill(src, n);
		for (size_t k = 0; k < sizeof(blocks) / sizeof(*blocks); k++) {
			if (n / blocks[k] > 5000)
				continue; /* tiny blocks on big inputs: slow, nothing new */
			size_t cap = dsv_lz4_bound(n, blocks[k]);
			uint8_t *enc = malloc(cap);
			int64_t m = dsv_lz4_encode(enc, cap, src, n, blocks[k], 0);
			assert_true(m > 0);
			dsv_lz4_frame f;
			assert_int_equal(dsv_lz4_frame_info(enc, (size_t)m, &f), 0);
			assert_int_equal(f.raw, n);
			assert_int_equal(f.block, blocks[k] < n ? blocks[k] : n);
			assert_int_equal(f.nblocks, (n + f.block - 1) / f.block);
			memset(a, 0, n);
			assert_int_equal(decode_blocks(enc, (size_t)m, a, n), 0);
			assert_memory_equal(a, src, n);
			assert_int_equal(dsv_lz4_decode(b, n, enc, (size_t)m), (int64_t)n);
			assert_memory_equal(b, src, n);
			free(enc);
		}
		free(src);
		free(a);
		free(b);
	}
}

static void test_blocks_empty_frame(void **state)
{
	(void)state;
	uint8_t enc[16];
	dsv_lz4_frame f;
	uint64_t at[1];
	put_be64(enc, 0);
	put_be32(enc + 8, 0);
	assert_int_equal(dsv_lz4_frame_info(enc, 12, &f), 0);
	assert_int_equal(f.nblocks, 0);
	assert_int_equal(dsv_lz4_index(enc, 12, &f, at), 0);
	assert_int_equal(dsv_lz4_decode_block(enc, 16, enc, 12, &f, at, 0), DSV_ERR_CORRUPT);
	assert_int_equal(dsv_lz4_frame_info(enc, 13, &f), DSV_ERR_CORRUPT); /* trailing */
	assert_int_equal(dsv_lz4_frame_info(enc, 11, &f), DSV_ERR_CORRUPT); /* short */
}

static void test_blocks_hostile_headers(void **state)
{
	(void)state;
	uint8_t enc[64];
	dsv_lz4_frame f;

	memset(enc, 0, sizeof(enc));
	/* block size 0 */
	put_be64(enc, 10);
	put_be32(enc + 8, 0);
	assert_int_equal(dsv_lz4_frame_info(enc, sizeof(enc), &f), DSV_ERR_CORRUPT);
	/* a block larger than the chunk: clamped to it, one block */
	put_be32(enc + 8, 0xFFFFFFFFu);
	put_be32(enc + 12, 10);
	assert_int_equal(dsv_lz4_frame_info(enc, 26, &f), 0);
	assert_int_equal(f.block, 10);
	assert_int_equal(f.nblocks, 1);
	/* more blocks than the bytes have room for headers (and counts
	 * whose header bytes overflow 64 bits) */
	put_be64(enc, 1ull << 62);
	put_be32(enc + 8, 1);
	assert_int_equal(dsv_lz4_frame_info(enc, sizeof(enc), &f), DSV_ERR_CORRUPT);
	put_be64(enc, UINT64_MAX);
	assert_int_equal(dsv_lz4_frame_info(enc, sizeof(enc), &f), DSV_ERR_CORRUPT);
	put_be64(enc, 12); /* 12 blocks of 1: 60 bytes of headers, 64 here */
	assert_int_equal(dsv_lz4_frame_info(enc, sizeof(enc), &f), 0);
	put_be64(enc, 14); /* 68 bytes of headers */
	assert_int_equal(dsv_lz4_frame_info(enc, sizeof(enc), &f), DSV_ERR_CORRUPT);
}

/* A frame of 4 raw-stored blocks of 8 bytes: "AAAAAAAA" "BBBBBBBB" ... */
static size_t four_blocks(uint8_t *enc)
{
	put_be64(enc, 32);
	put_be32(enc + 8, 8);
	for (int i = 0; i < 4; i++) {
		put_be32(enc + 12 + i * 12, 8);
		memset(enc + 16 + i * 12, 'A' + i, 8);
	}
	return 12 + 4 * 12;
}

static void test_blocks_hostile_sizes(void **state)
{
	(void)state;
	uint8_t enc[64], out[32];
	uint64_t at[5];
	dsv_lz4_frame f;
	size_t n = four_blocks(enc);

	assert_int_equal(dsv_lz4_frame_info(enc, n, &f), 0);
	assert_int_equal(dsv_lz4_index(enc, n, &f, at), 0);
	assert_int_equal(at[0], 12);
	assert_int_equal(at[3], 48);
	assert_int_equal(at[4], n);
	assert_int_equal(dsv_lz4_decode_block(out, 8, enc, n, &f, at, 2), 8);
	assert_memory_equal(out, "CCCCCCCC", 8);
	/* a short destination, a block past the last */
	assert_int_equal(dsv_lz4_decode_block(out, 7, enc, n, &f, at, 2), DSV_ERR_CORRUPT);
	assert_int_equal(dsv_lz4_decode_block(out, 8, enc, n, &f, at, 4), DSV_ERR_CORRUPT);

	/* a stored size of 0 */
	put_be32(enc + 24, 0);
	assert_int_equal(dsv_lz4_index(enc, n, &f, at), DSV_ERR_CORRUPT);
	/* one past the end of the frame, and one that is huge */
	put_be32(enc + 24, 45);
	assert_int_equal(dsv_lz4_index(enc, n, &f, at), DSV_ERR_CORRUPT);
	put_be32(enc + 24, 0xFFFFFFF0u);
	assert_int_equal(dsv_lz4_index(enc, n, &f, at), DSV_ERR_CORRUPT);
	/* sizes that add up past the frame only together */
	put_be32(enc + 24, 20);
	assert_int_equal(dsv_lz4_index(enc, n, &f, at), DSV_ERR_CORRUPT);
	n = four_blocks(enc);
	/* trailing bytes, and every truncation */
	assert_int_equal(dsv_lz4_index(enc, n + 1, &f, at), DSV_ERR_CORRUPT);
	for (size_t cut = 0; cut < n; cut++) {
		if (dsv_lz4_frame_info(enc, cut, &f) == 0)
			assert_int_equal(dsv_lz4_index(enc, cut, &f, at), DSV_ERR_CORRUPT);
	}
	/* an index that lies (not this frame's) reads nothing outside it */
	assert_int_equal(dsv_lz4_frame_info(enc, n, &f), 0);
	assert_int_equal(dsv_lz4_index(enc, n, &f, at), 0);
	uint64_t lie[5] = { 12, 24, 1000, 60, 60 };
	assert_int_equal(dsv_lz4_decode_block(out, 8, enc, n, &f, lie, 2), DSV_ERR_CORRUPT);
	uint64_t lie2[5] = { 12, 24, 58, 70, 60 };
	assert_int_equal(dsv_lz4_decode_block(out, 8, enc, n, &f, lie2, 2), DSV_ERR_CORRUPT);
	uint64_t lie3[5] = { 12, 24, 36, 48, 61 };
	assert_int_equal(dsv_lz4_decode_block(out, 8, enc, n, &f, lie3, 3), DSV_ERR_CORRUPT);
}

/* A damaged compressed block fails alone: the others still decode. */
static void test_blocks_damage_is_local(void **state)
{
	(void)state;
	enum { N = 65536, B = 8192 };
	uint8_t *src = malloc(N), *out = malloc(N);
	size_t cap = dsv_lz4_bound(N, B);
	uint8_t *enc = malloc(cap);
	for (size_t i = 0; i < N; i++)
		src[i] = (uint8_t)(i / 100);
	int64_t m = dsv_lz4_encode(enc, cap, src, N, B, 0);
	assert_true(m > 0);
	dsv_lz4_frame f;
	uint64_t at[N / B + 1];
	assert_int_equal(dsv_lz4_frame_info(enc, (size_t)m, &f), 0);
	assert_int_equal(dsv_lz4_index(enc, (size_t)m, &f, at), 0);
	/* block 3's bytes all 0xFF: a literal run longer than the block */
	size_t stored = (size_t)(at[4] - at[3] - 4);
	assert_true(stored < B); /* compressed, not stored raw */
	memset(enc + at[3] + 4, 0xFF, stored);
	int bad = 0;
	for (uint64_t i = 0; i < f.nblocks; i++) {
		int64_t got = dsv_lz4_decode_block(out + i * B, B, enc, (size_t)m, &f, at, i);
		if (got != B)
			bad++;
		else
			assert_memory_equal(out + i * B, src + i * B, B);
	}
	assert_int_equal(bad, 1);
	assert_int_equal(dsv_lz4_decode(out, N, enc, (size_t)m), DSV_ERR_CORRUPT);
	free(src);
	free(out);
	free(enc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_blocks_round_trip),
		cmocka_unit_test(test_blocks_empty_frame),
		cmocka_unit_test(test_blocks_hostile_headers),
		cmocka_unit_test(test_blocks_hostile_sizes),
		cmocka_unit_test(test_blocks_damage_is_local),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
