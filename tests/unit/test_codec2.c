/* Codecs: Zstandard 32015 (frames with and without their content size;
 * round trips against libzstd's compressor, hostile frames) and LZF 32000 (liblzf's
 * stream as h5py writes it; a stream h5py made, hand-made streams, every
 * malformation). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include <zstd.h>

#include "codec/codec_test.h"
#include "dsview/codec.h"
#include "dsview/dsview.h"

static void fill(uint8_t *p, size_t n, unsigned seed, int compressible)
{
	uint32_t x = seed * 2654435761u + 1;
	for (size_t i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		p[i] = compressible ? (uint8_t)((i / 7) % 13) : (uint8_t)(x >> 24);
	}
}

/* ---- zstd ---- */

static void test_zstd_round_trip(void **state)
{
	(void)state;
	static const size_t sizes[] = { 1, 2, 100, 4096, 100000, 1u << 20 };
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		for (int c = 0; c < 2; c++) {
			size_t n = sizes[k], bound = ZSTD_compressBound(n);
			uint8_t *in = malloc(n), *enc = malloc(bound), *out = malloc(n + 8);
			assert_non_null(in);
			assert_non_null(enc);
			assert_non_null(out);
			fill(in, n, (unsigned)k, c);
			/* libzstd's own one-shot compressor, as the plugin calls it */
			size_t m = ZSTD_compress(enc, bound, in, n, c ? 19 : 1);
			assert_false(ZSTD_isError(m));
			uint64_t raw = 0;
			assert_int_equal(dsv_zstd_raw_size(enc, m, &raw), 0);
			assert_int_equal(raw, n);
			/* exact and roomier buffers both give exactly n */
			assert_int_equal(dsv_zstd_decode(out, n, enc, m), (int64_t)n);
			assert_memory_equal(out, in, n);
			assert_int_equal(dsv_zstd_decode(out, n + 8, enc, m), (int64_t)n);
			/* and our encoder gives what libzstd decodes */
			int64_t e = dsv_zstd_encode(enc, bound, in, n, 3);
			assert_true(e > 0);
			assert_int_equal(ZSTD_decompress(out, n, enc, (size_t)e), n);
			assert_memory_equal(out, in, n);
			/* a byte short of that: too small, not a bad argument */
			assert_int_equal(dsv_zstd_encode(enc, (size_t)e - 1, in, n, 3),
					 DSV_ERR_OVERFLOW);
			assert_int_equal(dsv_zstd_encode(enc, bound, in, n, 99), DSV_ERR_INVALID);
			free(in);
			free(enc);
			free(out);
		}
	}
}

static size_t make_frame(uint8_t *enc, size_t cap, const uint8_t *in, size_t n)
{
	size_t m = ZSTD_compress(enc, cap, in, n, 3);
	assert_false(ZSTD_isError(m));
	return m;
}

static void test_zstd_too_small_buffer(void **state)
{
	(void)state;
	uint8_t in[5000], enc[6000], out[5000];
	fill(in, sizeof(in), 1, 1);
	size_t m = make_frame(enc, sizeof(enc), in, sizeof(in));
	assert_int_equal(dsv_zstd_decode(out, sizeof(in) - 1, enc, m), DSV_ERR_CORRUPT);
	assert_int_equal(dsv_zstd_decode(out, 0, enc, m), DSV_ERR_CORRUPT);
}

static void test_zstd_truncated(void **state)
{
	(void)state;
	uint8_t in[5000], enc[6000], out[5000];
	fill(in, sizeof(in), 2, 0);
	size_t m = make_frame(enc, sizeof(enc), in, sizeof(in));
	for (size_t cut = 0; cut < m; cut += (cut < 32 ? 1 : 97)) {
		uint64_t raw;
		int64_t got = dsv_zstd_decode(out, sizeof(out), enc, cut);
		assert_int_equal(got, DSV_ERR_CORRUPT);
		if (cut < 5)
			assert_int_equal(dsv_zstd_raw_size(enc, cut, &raw), DSV_ERR_CORRUPT);
	}
}

static void test_zstd_trailing_bytes_and_two_frames(void **state)
{
	(void)state;
	uint8_t in[300], enc[1000], out[600];
	fill(in, sizeof(in), 3, 1);
	size_t m = make_frame(enc, sizeof(enc), in, sizeof(in));
	/* a stray byte after the frame */
	enc[m] = 0;
	assert_int_equal(dsv_zstd_decode(out, sizeof(out), enc, m + 1), DSV_ERR_CORRUPT);
	/* a second frame after one that declares 300 bytes: past the size
	 * the references decode into, however roomy our buffer */
	memcpy(enc + m, enc, m);
	memset(out, 0xAA, sizeof(out));
	assert_int_equal(dsv_zstd_decode(out, sizeof(out), enc, 2 * m), DSV_ERR_OVERFLOW);
	for (size_t i = sizeof(in); i < sizeof(out); i++)
		assert_int_equal(out[i], 0xAA);
	/* a skippable frame after it is skipped, as libzstd does */
	static const uint8_t skip[] = { 0x50, 0x2a, 0x4d, 0x18, 2, 0, 0, 0, 7, 7 };
	memcpy(enc + m, skip, sizeof(skip));
	assert_int_equal(dsv_zstd_decode(out, sizeof(out), enc, m + sizeof(skip)),
			 (int64_t)sizeof(in));
	assert_memory_equal(out, in, sizeof(in));
}

/* A frame without a content size, as streaming compressors write it. */
static size_t make_unsized_frame(uint8_t *enc, size_t cap, const uint8_t *in, size_t n)
{
	ZSTD_CCtx *cctx = ZSTD_createCCtx();
	assert_non_null(cctx);
	assert_false(ZSTD_isError(ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 0)));
	size_t m = ZSTD_compress2(cctx, enc, cap, in, n);
	ZSTD_freeCCtx(cctx);
	assert_false(ZSTD_isError(m));
	assert_int_equal(ZSTD_getFrameContentSize(enc, m), ZSTD_CONTENTSIZE_UNKNOWN);
	return m;
}

static void test_zstd_no_content_size(void **state)
{
	(void)state;
	uint8_t in[4000], enc[5000], out[4100];
	fill(in, sizeof(in), 4, 1);
	size_t m = make_unsized_frame(enc, sizeof(enc), in, sizeof(in));
	uint64_t raw = 0;
	assert_int_equal(dsv_zstd_raw_size(enc, m, &raw), 0);
	assert_true(raw == DSV_ZSTD_SIZE_UNKNOWN);
	/* into the chunk's known size: exactly it */
	assert_int_equal(dsv_zstd_decode(out, sizeof(in), enc, m), (int64_t)sizeof(in));
	assert_memory_equal(out, in, sizeof(in));
	/* a chunk size it overflows: refused, nothing written past it */
	memset(out, 0xAA, sizeof(out));
	assert_int_equal(dsv_zstd_decode(out, sizeof(in) - 1, enc, m), DSV_ERR_OVERFLOW);
	for (size_t i = sizeof(in) - 1; i < sizeof(out); i++)
		assert_int_equal(out[i], 0xAA);
	/* one it falls short of: the size it made, for the caller to refuse */
	assert_int_equal(dsv_zstd_decode(out, sizeof(out), enc, m), (int64_t)sizeof(in));
	/* two such frames decode in turn, as numcodecs' stream does */
	memcpy(enc + m, enc, m);
	uint8_t two[8000];
	assert_int_equal(dsv_zstd_decode(two, sizeof(two), enc, 2 * m), (int64_t)sizeof(two));
	assert_memory_equal(two, in, sizeof(in));
	assert_memory_equal(two + sizeof(in), in, sizeof(in));
	/* cut short or with a stray byte after it: refused */
	for (size_t cut = 0; cut < m; cut += (cut < 32 ? 1 : 53))
		assert_true(dsv_zstd_decode(out, sizeof(in), enc, cut) < 0);
	enc[m] = 0;
	assert_int_equal(dsv_zstd_decode(out, sizeof(in), enc, m + 1), DSV_ERR_CORRUPT);
}

/* A frame whose header declares one size and whose blocks hold another. */
static void test_zstd_wrong_content_size(void **state)
{
	(void)state;
	uint8_t a[200], b[201], ea[400], eb[400], out[400];
	fill(a, sizeof(a), 5, 0);
	fill(b, sizeof(b), 5, 0);
	size_t ma = make_frame(ea, sizeof(ea), a, sizeof(a));
	size_t mb = make_frame(eb, sizeof(eb), b, sizeof(b));
	/* Same header layout (single segment, 1-byte FCS at offset 5 for
	 * sizes < 256): give a's frame the size 201. */
	assert_int_equal(ea[4], eb[4]);
	assert_int_equal(ea[5], 200);
	ea[5] = 201;
	uint64_t raw;
	assert_int_equal(dsv_zstd_raw_size(ea, ma, &raw), 0);
	assert_int_equal(raw, 201);
	assert_int_equal(dsv_zstd_decode(out, sizeof(out), ea, ma), DSV_ERR_CORRUPT);
	/* and declaring fewer than the blocks hold cannot write past them */
	eb[5] = 150;
	memset(out, 0xAA, sizeof(out));
	assert_true(dsv_zstd_decode(out, sizeof(out), eb, mb) < 0);
	for (size_t i = 150; i < sizeof(out); i++)
		assert_int_equal(out[i], 0xAA);
}

static void test_zstd_garbage(void **state)
{
	(void)state;
	uint8_t g[256], out[1024];
	fill(g, sizeof(g), 6, 0);
	uint64_t raw;
	assert_int_equal(dsv_zstd_raw_size(g, sizeof(g), &raw), DSV_ERR_CORRUPT);
	assert_int_equal(dsv_zstd_decode(out, sizeof(out), g, sizeof(g)), DSV_ERR_CORRUPT);
	assert_int_equal(dsv_zstd_decode(out, sizeof(out), g, 0), DSV_ERR_CORRUPT);
	/* a right magic number in front of garbage */
	g[0] = 0x28, g[1] = 0xb5, g[2] = 0x2f, g[3] = 0xfd;
	int64_t got = dsv_zstd_decode(out, sizeof(out), g, sizeof(g));
	assert_int_equal(got, DSV_ERR_CORRUPT);
}

static void test_zstd_mutations(void **state)
{
	(void)state;
	uint8_t in[3000], enc[4000], mut[4000], out[3000];
	fill(in, sizeof(in), 7, 1);
	size_t m = make_frame(enc, sizeof(enc), in, sizeof(in));
	for (size_t i = 0; i < m; i++) {
		for (int bit = 0; bit < 8; bit += 3) {
			memcpy(mut, enc, m);
			mut[i] ^= (uint8_t)(1u << bit);
			int64_t got = dsv_zstd_decode(out, sizeof(out), mut, m);
			uint64_t raw;
			/* no checksum in the frame: a flip may decode, but only
			 * ever to the size the frame still declares, or (its
			 * size flag flipped off) within the buffer */
			if (got >= 0 && dsv_zstd_raw_size(mut, m, &raw) == 0 &&
			    raw != DSV_ZSTD_SIZE_UNKNOWN)
				assert_int_equal(got, raw);
			assert_true(got < 0 || got <= (int64_t)sizeof(out));
		}
	}
}

/* ---- LZF ---- */

/* What h5py's lzf filter (liblzf) stored for the 78 bytes below. */
static const char lzf_text[] = "abcabcabcabcabcabcabcabcXYZXYZabcabcabc"
			       "abcabcabcabcabcabcabcabcXYZXYZabcabcabc";
static const uint8_t lzf_h5py[] = {
	0x03, 0x61, 0x62, 0x63, 0x61, 0xe0, 0x0b, 0x02, 0x02, 0x58, 0x59, 0x5a, 0x20, 0x02, 0xe0,
	0x0c, 0x1a, 0xe0, 0x03, 0x14, 0x20, 0x23, 0x20, 0x02, 0xa0, 0x11, 0x01, 0x62, 0x63,
};

static void test_lzf_h5py_stream(void **state)
{
	(void)state;
	uint8_t out[78];
	assert_int_equal(sizeof(lzf_text) - 1, 78);
	assert_int_equal(dsv_lzf_decode(out, 78, lzf_h5py, sizeof(lzf_h5py)), 78);
	assert_memory_equal(out, lzf_text, 78);
	/* the exact size only: one byte more or less is corrupt */
	uint8_t big[79];
	assert_int_equal(dsv_lzf_decode(big, 79, lzf_h5py, sizeof(lzf_h5py)), DSV_ERR_CORRUPT);
	assert_int_equal(dsv_lzf_decode(out, 77, lzf_h5py, sizeof(lzf_h5py)), DSV_ERR_CORRUPT);
}

static void test_lzf_hand_made(void **state)
{
	(void)state;
	uint8_t out[300];
	/* 2 literals "ab", then a reference of length 7+1+2 = 10 at distance
	 * 2 (overlapping run): "ab" * 6 */
	static const uint8_t s1[] = { 0x01, 'a', 'b', 0xe0, 0x01, 0x01 };
	assert_int_equal(dsv_lzf_decode(out, 12, s1, sizeof(s1)), 12);
	assert_memory_equal(out, "abababababab", 12);
	/* shortest reference: ctrl 0x20 = length 3, distance 1 */
	static const uint8_t s2[] = { 0x00, 'z', 0x20, 0x00 };
	assert_int_equal(dsv_lzf_decode(out, 4, s2, sizeof(s2)), 4);
	assert_memory_equal(out, "zzzz", 4);
	/* longest reference: 7 + 255 + 2 = 264 */
	static const uint8_t s3[] = { 0x00, 'q', 0xe0, 0xff, 0x00 };
	assert_int_equal(dsv_lzf_decode(out, 265, s3, sizeof(s3)), 265);
	for (int i = 0; i < 265; i++)
		assert_int_equal(out[i], 'q');
	/* longest literal run, 32 bytes */
	uint8_t s4[33];
	s4[0] = 31;
	for (int i = 0; i < 32; i++)
		s4[1 + i] = (uint8_t)i;
	assert_int_equal(dsv_lzf_decode(out, 32, s4, sizeof(s4)), 32);
	assert_memory_equal(out, s4 + 1, 32);
	/* empty stream, empty chunk */
	assert_int_equal(dsv_lzf_decode(out, 0, s4, 0), 0);
}

static void test_lzf_malformed(void **state)
{
	(void)state;
	uint8_t out[64];
	memset(out, 0xAA, sizeof(out));
	/* literal run longer than the input holds */
	static const uint8_t lit_short[] = { 0x05, 'a', 'b' };
	assert_int_equal(dsv_lzf_decode(out, 6, lit_short, sizeof(lit_short)), DSV_ERR_CORRUPT);
	/* literal run longer than the output */
	static const uint8_t lit_long[] = { 0x03, 'a', 'b', 'c', 'd' };
	assert_int_equal(dsv_lzf_decode(out, 3, lit_long, sizeof(lit_long)), DSV_ERR_CORRUPT);
	assert_int_equal(out[3], 0xAA);
	/* back-reference before the start: at position 0, and distance 2 at 1 */
	static const uint8_t ref0[] = { 0x20, 0x00 };
	assert_int_equal(dsv_lzf_decode(out, 3, ref0, sizeof(ref0)), DSV_ERR_CORRUPT);
	static const uint8_t ref2[] = { 0x00, 'a', 0x20, 0x01 };
	assert_int_equal(dsv_lzf_decode(out, 4, ref2, sizeof(ref2)), DSV_ERR_CORRUPT);
	/* the largest distance, 8192, from position 1 */
	static const uint8_t far[] = { 0x00, 'a', 0x3f, 0xff };
	assert_int_equal(dsv_lzf_decode(out, 4, far, sizeof(far)), DSV_ERR_CORRUPT);
	/* reference longer than the output left */
	static const uint8_t ref_long[] = { 0x00, 'a', 0x40, 0x00 }; /* length 4 */
	assert_int_equal(dsv_lzf_decode(out, 4, ref_long, sizeof(ref_long)), DSV_ERR_CORRUPT);
	assert_int_equal(out[4], 0xAA);
	/* reference missing its offset byte, or its length byte */
	static const uint8_t no_off[] = { 0x00, 'a', 0x20 };
	assert_int_equal(dsv_lzf_decode(out, 4, no_off, sizeof(no_off)), DSV_ERR_CORRUPT);
	static const uint8_t no_len[] = { 0x00, 'a', 0xe0 };
	assert_int_equal(dsv_lzf_decode(out, 20, no_len, sizeof(no_len)), DSV_ERR_CORRUPT);
	static const uint8_t no_off7[] = { 0x00, 'a', 0xe0, 0x00 };
	assert_int_equal(dsv_lzf_decode(out, 10, no_off7, sizeof(no_off7)), DSV_ERR_CORRUPT);
	/* a stream that ends short of the size */
	static const uint8_t short_out[] = { 0x01, 'a', 'b' };
	assert_int_equal(dsv_lzf_decode(out, 3, short_out, sizeof(short_out)), DSV_ERR_CORRUPT);
	/* every truncation of a real stream */
	for (size_t cut = 0; cut < sizeof(lzf_h5py); cut++) {
		uint8_t o[78];
		assert_int_equal(dsv_lzf_decode(o, 78, lzf_h5py, cut), DSV_ERR_CORRUPT);
	}
}

static void test_lzf_round_trip(void **state)
{
	(void)state;
	static const size_t sizes[] = { 0, 1, 2, 3, 31, 32, 33, 264, 1000, 9000, 100000 };
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		for (int c = 0; c < 2; c++) {
			size_t n = sizes[k], cap = n + n / 32 + 1;
			uint8_t *in = malloc(n + 1), *enc = malloc(cap), *out = malloc(n + 1);
			assert_non_null(in);
			assert_non_null(enc);
			assert_non_null(out);
			fill(in, n, (unsigned)k, c);
			int64_t m = dsv_lzf_encode(enc, cap, in, n);
			assert_true(m >= 0);
			if (c && n >= 1000)
				assert_true((size_t)m < n / 4);
			assert_int_equal(dsv_lzf_decode(out, n, enc, (size_t)m), (int64_t)n);
			assert_memory_equal(out, in, n);
			/* too small an output buffer for the encoder */
			if (m > 1)
				assert_int_equal(dsv_lzf_encode(enc, (size_t)m - 1, in, n),
						 DSV_ERR_OVERFLOW);
			free(in);
			free(enc);
			free(out);
		}
	}
}

static void test_lzf_mutations(void **state)
{
	(void)state;
	uint8_t mut[sizeof(lzf_h5py)], out[78];
	for (size_t i = 0; i < sizeof(lzf_h5py); i++) {
		for (int bit = 0; bit < 8; bit++) {
			memcpy(mut, lzf_h5py, sizeof(mut));
			mut[i] ^= (uint8_t)(1u << bit);
			int64_t got = dsv_lzf_decode(out, 78, mut, sizeof(mut));
			assert_true(got == DSV_ERR_CORRUPT || got == 78);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_zstd_round_trip),
		cmocka_unit_test(test_zstd_too_small_buffer),
		cmocka_unit_test(test_zstd_truncated),
		cmocka_unit_test(test_zstd_trailing_bytes_and_two_frames),
		cmocka_unit_test(test_zstd_no_content_size),
		cmocka_unit_test(test_zstd_wrong_content_size),
		cmocka_unit_test(test_zstd_garbage),
		cmocka_unit_test(test_zstd_mutations),
		cmocka_unit_test(test_lzf_h5py_stream),
		cmocka_unit_test(test_lzf_hand_made),
		cmocka_unit_test(test_lzf_malformed),
		cmocka_unit_test(test_lzf_round_trip),
		cmocka_unit_test(test_lzf_mutations),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
