/* Block-level access to LZ4 32004 frames: the header's layout, the block
 * index, the block table pack writes, and byte ranges decoded from only
 * their blocks by the table (into place, or block by block to a sink), on
 * good frames (several block sizes, blocks stored raw, ranges that start
 * and end inside blocks, a short last block) and hostile ones (block size
 * 0, larger than the chunk, block counts whose headers cannot fit, sizes 0
 * or past the end, truncated frames and bytes after one, a table that
 * lies about sizes or checksums, a damaged block). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "common/bytes.h"
#include "codec/lz4_table.h"
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

/* A dsv_lz4_sink that appends each block's part to out. */
typedef struct appended {
	uint8_t *out;
	uint64_t len, calls;
} appended;

static void append(void *arg, const uint8_t *bytes, uint64_t len)
{
	appended *a = arg;
	memcpy(a->out + a->len, bytes, (size_t)len);
	a->len += len;
	a->calls++;
}

/* The same range again through a sink: the same answer, one part a block,
 * in order, together the bytes decoded into out. */
static void check_sink(const uint8_t *src, size_t n, uint64_t lo, uint64_t hi,
		       const dsv_lz4_frame *f, const uint32_t *row, uint8_t *edge, int64_t want,
		       const uint8_t *out)
{
	appended a = { malloc((size_t)(hi - lo)), 0, 0 };
	assert_non_null(a.out);
	memset(edge, 0, (size_t)f->block);
	assert_int_equal(dsv_lz4_table_decode(NULL, lo, hi, src, n, f, row, edge, append, &a),
			 want);
	if (want >= 0) {
		assert_int_equal(a.len, hi - lo);
		assert_int_equal(a.calls, (hi - 1) / f->block - lo / f->block + 1);
		assert_memory_equal(a.out, out, (size_t)(hi - lo));
	}
	free(a.out);
}

/* Bytes [lo, hi) of frame enc into out through its own block table, from
 * only the blocks that hold them, and through a sink (check_sink).
 * @return 0 or the first error. */
static int decode_range(const uint8_t *enc, size_t n, uint64_t lo, uint64_t hi, uint8_t *out)
{
	dsv_lz4_frame f;
	int err = dsv_lz4_frame_info(enc, n, &f);
	if (err)
		return err;
	uint64_t *at = malloc((size_t)(f.nblocks + 1) * sizeof(*at)), start, end;
	uint32_t *row = malloc((size_t)(f.nblocks + 1) * DSV_LZ4_TABLE_WORDS * 4);
	uint8_t *edge = malloc((size_t)f.block + 1);
	assert_true(at && row && edge);
	err = dsv_lz4_index(enc, n, &f, at);
	if (!err) {
		dsv_lz4_block_table(enc, &f, at, row);
		err = dsv_lz4_table_span(row, lo / f.block, (hi - 1) / f.block, n, &start, &end);
	}
	if (!err) {
		assert_int_equal(start, at[lo / f.block]);
		assert_int_equal(end, at[(hi - 1) / f.block + 1]);
		int64_t got = dsv_lz4_table_decode(out, lo, hi, enc + start, (size_t)(end - start),
						   &f, row, edge, NULL, NULL);
		check_sink(enc + start, (size_t)(end - start), lo, hi, &f, row, edge, got, out);
		if (got < 0)
			err = (int)got;
		else { /* the raw bytes of the blocks it decoded */
			uint64_t last = (hi - 1) / f.block * f.block;
			uint64_t tail = f.raw - last < f.block ? f.raw - last : f.block;
			assert_int_equal(got, last + tail - lo / f.block * f.block);
		}
	}
	free(at);
	free(row);
	free(edge);
	return err;
}

/* Every block of enc through the table, whole, into out. */
static int decode_blocks(const uint8_t *enc, size_t n, uint8_t *out, size_t cap)
{
	uint64_t raw;
	if (dsv_lz4_raw_size(enc, n, &raw) || raw > cap)
		return DSV_ERR_CORRUPT;
	return raw ? decode_range(enc, n, 0, raw, out) : 0;
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
			/* ranges that start and end anywhere, inside blocks too */
			for (int r = 0; r < 20; r++) {
				uint64_t lo = rnd() % n, hi = lo + 1 + rnd() % (n - lo);
				memset(a, 0, n);
				assert_int_equal(decode_range(enc, (size_t)m, lo, hi, a), 0);
				assert_memory_equal(a, src + lo, (size_t)(hi - lo));
			}
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
	uint8_t enc[16], edge[1];
	dsv_lz4_frame f;
	uint64_t at[1];
	uint32_t row[2] = { 0, 0 };
	dsv_store_be64(enc, 0);
	dsv_store_be32(enc + 8, 0);
	assert_int_equal(dsv_lz4_frame_info(enc, 12, &f), 0);
	assert_int_equal(f.nblocks, 0);
	assert_int_equal(dsv_lz4_index(enc, 12, &f, at), 0);
	assert_int_equal(dsv_lz4_table_decode(enc, 0, 1, enc, 12, &f, row, edge, NULL, NULL),
			 DSV_ERR_CORRUPT);
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
	dsv_store_be64(enc, 10);
	dsv_store_be32(enc + 8, 0);
	assert_int_equal(dsv_lz4_frame_info(enc, sizeof(enc), &f), DSV_ERR_CORRUPT);
	/* a block larger than the chunk: clamped to it, one block */
	dsv_store_be32(enc + 8, 0xFFFFFFFFu);
	dsv_store_be32(enc + 12, 10);
	assert_int_equal(dsv_lz4_frame_info(enc, 26, &f), 0);
	assert_int_equal(f.block, 10);
	assert_int_equal(f.nblocks, 1);
	/* more blocks than the bytes have room for headers (and counts
	 * whose header bytes overflow 64 bits) */
	dsv_store_be64(enc, 1ull << 62);
	dsv_store_be32(enc + 8, 1);
	assert_int_equal(dsv_lz4_frame_info(enc, sizeof(enc), &f), DSV_ERR_CORRUPT);
	dsv_store_be64(enc, UINT64_MAX);
	assert_int_equal(dsv_lz4_frame_info(enc, sizeof(enc), &f), DSV_ERR_CORRUPT);
	dsv_store_be64(enc, 12); /* 12 blocks of 1: 60 bytes of headers, 64 here */
	assert_int_equal(dsv_lz4_frame_info(enc, sizeof(enc), &f), 0);
	dsv_store_be64(enc, 14); /* 68 bytes of headers */
	assert_int_equal(dsv_lz4_frame_info(enc, sizeof(enc), &f), DSV_ERR_CORRUPT);
}

/* The header alone: what a reader of a chunk's first bytes learns. */
static void test_blocks_header_alone(void **state)
{
	(void)state;
	uint8_t enc[DSV_LZ4_HEADER];
	dsv_lz4_frame f;

	dsv_store_be64(enc, 1000);
	dsv_store_be32(enc + 8, 300);
	assert_int_equal(dsv_lz4_frame_head(enc, sizeof(enc), &f), 0);
	assert_int_equal(f.raw, 1000);
	assert_int_equal(f.block, 300);
	assert_int_equal(f.nblocks, 4);
	/* the whole frame's check wants room for the 4 block headers */
	assert_int_equal(dsv_lz4_frame_info(enc, sizeof(enc), &f), DSV_ERR_CORRUPT);
	dsv_store_be32(enc + 8, 4000); /* clamped to the chunk */
	assert_int_equal(dsv_lz4_frame_head(enc, sizeof(enc), &f), 0);
	assert_int_equal(f.block, 1000);
	assert_int_equal(f.nblocks, 1);
	dsv_store_be32(enc + 8, 0);
	assert_int_equal(dsv_lz4_frame_head(enc, sizeof(enc), &f), DSV_ERR_CORRUPT);
	dsv_store_be64(enc, UINT64_MAX);
	assert_int_equal(dsv_lz4_frame_head(enc, sizeof(enc), &f), DSV_ERR_CORRUPT);
	dsv_store_be64(enc, 0); /* empty: no blocks, whatever the block size says */
	assert_int_equal(dsv_lz4_frame_head(enc, sizeof(enc), &f), 0);
	assert_int_equal(f.nblocks, 0);
	assert_int_equal(dsv_lz4_frame_head(enc, sizeof(enc) - 1, &f), DSV_ERR_CORRUPT);
}

/* A frame of 4 raw-stored blocks of 8 bytes: "AAAAAAAA" "BBBBBBBB" ... */
static size_t four_blocks(uint8_t *enc)
{
	dsv_store_be64(enc, 32);
	dsv_store_be32(enc + 8, 8);
	for (int i = 0; i < 4; i++) {
		dsv_store_be32(enc + 12 + i * 12, 8);
		memset(enc + 16 + i * 12, 'A' + i, 8);
	}
	return 12 + 4 * 12;
}

/* The table's layout, as stored and as pack makes a row: a chunk's blocks,
 * a row's bytes, the blocks that cover a range, little-endian words, and
 * a frame that has not the blocks the table's width says. */
static void test_table_layout(void **state)
{
	(void)state;
	uint8_t enc[64], le[8 * 4];
	uint64_t at[5], b0, b1;
	uint32_t row[8], back[8];
	size_t n = four_blocks(enc);

	assert_int_equal(dsv_lz4_table_blocks(32, 8), 4);
	assert_int_equal(dsv_lz4_table_blocks(33, 8), 5);
	assert_int_equal(dsv_lz4_table_blocks(7, 8), 1);
	assert_int_equal(dsv_lz4_table_row_bytes(4), 32);
	dsv_lz4_table_cover(8, 16, 8, &b0, &b1); /* block 1 exactly */
	assert_int_equal(b0, 1);
	assert_int_equal(b1, 1);
	dsv_lz4_table_cover(7, 17, 8, &b0, &b1); /* a byte of blocks 0 and 2 */
	assert_int_equal(b0, 0);
	assert_int_equal(b1, 2);

	assert_int_equal(dsv_lz4_table_row(enc, n, 4, at, row), 0);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(row[2 * i], 8);
		assert_int_equal(row[2 * i + 1], dsv_fletcher32(enc + 12 + i * 12, 12));
	}
	assert_int_equal(dsv_lz4_table_row(enc, n, 3, at, row), DSV_ERR_CORRUPT);
	assert_int_equal(dsv_lz4_table_row(enc, n - 1, 4, at, row), DSV_ERR_CORRUPT);
	assert_int_equal(dsv_lz4_table_row(enc, n, 4, at, row), 0);
	for (int i = 0; i < 8; i++)
		for (int k = 0; k < 4; k++)
			le[4 * i + k] = (uint8_t)(row[i] >> (8 * k));
	dsv_lz4_table_load(back, le, 8);
	assert_memory_equal(back, row, sizeof(row));
	memcpy(back, le, sizeof(le)); /* in place, as a reader loads it */
	dsv_lz4_table_load(back, back, 8);
	assert_memory_equal(back, row, sizeof(row));
}

static void test_blocks_hostile_sizes(void **state)
{
	(void)state;
	uint8_t enc[64], out[32], edge[8];
	uint64_t at[5], start, end;
	uint32_t row[8];
	dsv_lz4_frame f;
	size_t n = four_blocks(enc);

	assert_int_equal(dsv_lz4_frame_info(enc, n, &f), 0);
	assert_int_equal(dsv_lz4_index(enc, n, &f, at), 0);
	assert_int_equal(at[0], 12);
	assert_int_equal(at[3], 48);
	assert_int_equal(at[4], n);
	dsv_lz4_block_table(enc, &f, at, row);
	assert_int_equal(row[4], 8);
	assert_int_equal(row[5], dsv_fletcher32(enc + 36, 12));
	assert_int_equal(dsv_lz4_table_span(row, 2, 2, n, &start, &end), 0);
	assert_int_equal(start, 36);
	assert_int_equal(end, 48);
	assert_int_equal(dsv_lz4_table_decode(out, 18, 21, enc + 36, 12, &f, row, edge, NULL, NULL),
			 8);
	assert_memory_equal(out, "CCC", 3);
	/* a range past the frame, an empty one */
	assert_int_equal(dsv_lz4_table_decode(out, 30, 33, enc + 36, 12, &f, row, edge, NULL, NULL),
			 DSV_ERR_CORRUPT);
	assert_int_equal(dsv_lz4_table_decode(out, 5, 5, enc + 36, 12, &f, row, edge, NULL, NULL),
			 DSV_ERR_CORRUPT);
	/* stored bytes short of what the table says */
	assert_int_equal(dsv_lz4_table_decode(out, 16, 24, enc + 36, 11, &f, row, edge, NULL, NULL),
			 DSV_ERR_CORRUPT);
	assert_int_equal(dsv_lz4_table_decode(out, 16, 24, enc + 36, 3, &f, row, edge, NULL, NULL),
			 DSV_ERR_CORRUPT);

	/* a table that lies: sizes of 0, past the frame, huge, past it only
	 * together; spans out of order */
	uint32_t lie[8];
	memcpy(lie, row, sizeof(lie));
	lie[2] = 0;
	assert_int_equal(dsv_lz4_table_span(lie, 2, 2, n, &start, &end), DSV_ERR_CORRUPT);
	lie[2] = 45;
	assert_int_equal(dsv_lz4_table_span(lie, 1, 1, n, &start, &end), DSV_ERR_CORRUPT);
	lie[2] = 0xFFFFFFF0u;
	assert_int_equal(dsv_lz4_table_span(lie, 3, 3, n, &start, &end), DSV_ERR_CORRUPT);
	lie[2] = 20;
	assert_int_equal(dsv_lz4_table_span(lie, 3, 3, n, &start, &end), DSV_ERR_CORRUPT);
	assert_int_equal(dsv_lz4_table_span(row, 3, 2, n, &start, &end), DSV_ERR_CORRUPT);
	assert_int_equal(dsv_lz4_table_span(row, 0, 3, n - 1, &start, &end), DSV_ERR_CORRUPT);
	assert_int_equal(dsv_lz4_table_span(row, 0, 0, 11, &start, &end), DSV_ERR_CORRUPT);
	/* a size that is not the block's header, a checksum that is not its */
	memcpy(lie, row, sizeof(lie));
	lie[4] = 7;
	assert_int_equal(dsv_lz4_table_decode(out, 16, 24, enc + 36, 12, &f, lie, edge, NULL, NULL),
			 DSV_ERR_CORRUPT);
	memcpy(lie, row, sizeof(lie));
	lie[5] ^= 1;
	assert_int_equal(dsv_lz4_table_decode(out, 16, 24, enc + 36, 12, &f, lie, edge, NULL, NULL),
			 DSV_ERR_CORRUPT);

	/* the index: a stored size of 0 */
	dsv_store_be32(enc + 24, 0);
	assert_int_equal(dsv_lz4_index(enc, n, &f, at), DSV_ERR_CORRUPT);
	/* one past the end of the frame, and one that is huge */
	dsv_store_be32(enc + 24, 45);
	assert_int_equal(dsv_lz4_index(enc, n, &f, at), DSV_ERR_CORRUPT);
	dsv_store_be32(enc + 24, 0xFFFFFFF0u);
	assert_int_equal(dsv_lz4_index(enc, n, &f, at), DSV_ERR_CORRUPT);
	/* sizes that add up past the frame only together */
	dsv_store_be32(enc + 24, 20);
	assert_int_equal(dsv_lz4_index(enc, n, &f, at), DSV_ERR_CORRUPT);
	n = four_blocks(enc);
	/* bytes after the last block are not the frame's: the index ends
	 * where the last block does; and every truncation fails */
	assert_int_equal(dsv_lz4_index(enc, n + 1, &f, at), 0);
	assert_int_equal(at[f.nblocks], n);
	for (size_t cut = 0; cut < n; cut++) {
		if (dsv_lz4_frame_info(enc, cut, &f) == 0)
			assert_int_equal(dsv_lz4_index(enc, cut, &f, at), DSV_ERR_CORRUPT);
	}
}

/* A damaged compressed block fails alone: the others still decode, and a
 * sink has the blocks before it. */
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
	uint32_t row[N / B * DSV_LZ4_TABLE_WORDS];
	uint8_t edge[B];
	dsv_lz4_block_table(enc, &f, at, row);
	/* block 3's bytes all 0xFF: a literal run longer than the block */
	size_t stored = (size_t)(at[4] - at[3] - 4);
	assert_true(stored < B); /* compressed, not stored raw */
	memset(enc + at[3] + 4, 0xFF, stored);
	int bad = 0;
	for (uint64_t i = 0; i < f.nblocks; i++) {
		int64_t got = dsv_lz4_table_decode(out + i * B, i * B, (i + 1) * B, enc + at[i],
						   (size_t)(at[i + 1] - at[i]), &f, row, edge, NULL,
						   NULL);
		if (got != B)
			bad++;
		else
			assert_memory_equal(out + i * B, src + i * B, B);
	}
	assert_int_equal(bad, 1);
	/* to a sink, blocks 2 to 4 from inside 2: 2's part given, then 3 fails */
	appended a = { out, 0, 0 };
	memset(out, 0, N);
	assert_int_equal(dsv_lz4_table_decode(NULL, 2 * B + 5, 5 * B, enc + at[2],
					      (size_t)(at[5] - at[2]), &f, row, edge, append, &a),
			 DSV_ERR_CORRUPT);
	assert_int_equal(a.calls, 1);
	assert_int_equal(a.len, B - 5);
	assert_memory_equal(out, src + 2 * B + 5, B - 5);
	/* the checksum caught it: with the damaged block's own checksum in
	 * the table, LZ4 itself still refuses it */
	row[3 * DSV_LZ4_TABLE_WORDS + 1] = dsv_fletcher32(enc + at[3], (size_t)(at[4] - at[3]));
	assert_int_equal(dsv_lz4_table_decode(out, 3 * B, 4 * B, enc + at[3],
					      (size_t)(at[4] - at[3]), &f, row, edge, NULL, NULL),
			 DSV_ERR_CORRUPT);
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
		cmocka_unit_test(test_blocks_header_alone),
		cmocka_unit_test(test_table_layout),
		cmocka_unit_test(test_blocks_hostile_sizes),
		cmocka_unit_test(test_blocks_damage_is_local),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
