/* Blosc 32001: buffers from libblosc's own compressor (blosc_compress_ctx,
 * as the HDF5 filter calls blosc_compress) with every inner codec, shuffle
 * and type size decode bit for bit to exactly their size; every
 * malformation of the header and block table, and flipped bytes anywhere,
 * only fail or decode to exactly the right size. Inputs under test are
 * heap copies of exactly their length, so a read past them is an ASan
 * error (make unit SANITIZE=address,undefined). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include <blosc.h>

#include "dsview/codec.h"
#include "dsview/dsview.h"

static const char *const cnames[] = { "blosclz", "lz4", "lz4hc", "snappy", "zlib", "zstd" };

static void fill(uint8_t *p, size_t n, unsigned seed, int compressible)
{
	uint32_t x = seed * 2654435761u + 1;
	for (size_t i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		p[i] = compressible ? (uint8_t)((i / 7) % 13) : (uint8_t)(x >> 24);
	}
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

/* Compresses n bytes of pattern into a malloc'd buffer of exactly its
 * size (*m). */
static uint8_t *make(const char *cname, int shuffle, size_t typesize, size_t n, int compressible,
		     unsigned seed, size_t *m, uint8_t **raw)
{
	uint8_t *in = malloc(n ? n : 1), *enc = malloc(n + BLOSC_MAX_OVERHEAD);
	assert_non_null(in);
	assert_non_null(enc);
	fill(in, n, seed, compressible);
	int c = blosc_compress_ctx(5, shuffle, typesize, n, in, enc, n + BLOSC_MAX_OVERHEAD, cname,
				   0, 1);
	assert_true(c >= BLOSC_MIN_HEADER_LENGTH);
	*m = (size_t)c;
	uint8_t *exact = malloc((size_t)c);
	assert_non_null(exact);
	memcpy(exact, enc, (size_t)c);
	free(enc);
	*raw = in;
	return exact;
}

/* src[0..len) copied to a heap block of exactly len bytes, then decoded. */
static int64_t decode_exact(void *dst, size_t dst_size, const uint8_t *src, size_t len)
{
	uint8_t *copy = malloc(len ? len : 1);
	assert_non_null(copy);
	memcpy(copy, src, len);
	int64_t got = dsv_blosc_decode(dst, dst_size, copy, len);
	free(copy);
	return got;
}

static void test_blosc_round_trip(void **state)
{
	(void)state;
	static const size_t sizes[] = { 1, 8, 100, 5000, 65536 + 24, 300000 };
	static const size_t types[] = { 1, 2, 4, 8 };
	unsigned seed = 1;
	for (size_t ci = 0; ci < sizeof(cnames) / sizeof(cnames[0]); ci++)
		for (int sh = BLOSC_NOSHUFFLE; sh <= BLOSC_BITSHUFFLE; sh++)
			for (size_t ti = 0; ti < 4; ti++)
				for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++)
					for (int comp = 0; comp < 2; comp++) {
						size_t n = sizes[si] / types[ti] * types[ti], m;
						uint8_t *in, *enc, *out;
						uint64_t raw;
						if (!n)
							continue;
						enc = make(cnames[ci], sh, types[ti], n, comp,
							   seed++, &m, &in);
						out = malloc(n + 1);
						assert_non_null(out);
						assert_int_equal(dsv_blosc_raw_size(enc, m, &raw),
								 0);
						assert_int_equal(raw, n);
						assert_int_equal(dsv_blosc_decode(out, n, enc, m),
								 (int64_t)n);
						assert_memory_equal(out, in, n);
						/* the chunk must be exactly the size asked for */
						assert_int_equal(
							dsv_blosc_decode(out, n - 1, enc, m),
							DSV_ERR_CORRUPT);
						assert_int_equal(
							dsv_blosc_decode(out, n + 1, enc, m),
							DSV_ERR_CORRUPT);
						free(out);
						free(in);
						free(enc);
					}
}

static void test_blosc_empty(void **state)
{
	(void)state;
	uint8_t enc[BLOSC_MAX_OVERHEAD], out[1];
	assert_int_equal(blosc_compress_ctx(5, 1, 4, 0, "", enc, sizeof(enc), "lz4", 0, 1), 16);
	assert_int_equal(dsv_blosc_decode(out, 0, enc, sizeof(enc)), 0);
	assert_int_equal(dsv_blosc_decode(out, 1, enc, sizeof(enc)), DSV_ERR_CORRUPT);
}

static void test_blosc_truncated_and_trailing(void **state)
{
	(void)state;
	size_t n = 40000, m;
	uint8_t *in, *enc = make("zstd", BLOSC_SHUFFLE, 4, n, 1, 7, &m, &in), *out = malloc(n);
	uint8_t *longer = malloc(m + 16);
	uint64_t raw;
	assert_non_null(out);
	assert_non_null(longer);
	/* every cut, header ones included: cbytes is past the input (a cut
	 * buffer whose header still says m would send libblosc past its end) */
	for (size_t cut = 0; cut < m; cut++) {
		assert_int_equal(decode_exact(out, n, enc, cut), DSV_ERR_CORRUPT);
		if (cut < BLOSC_MIN_HEADER_LENGTH)
			assert_int_equal(dsv_blosc_raw_size(enc, cut, &raw), DSV_ERR_CORRUPT);
	}
	/* bytes after the buffer (z5 before 2.0.10 wrote 16 in its Zarr
	 * chunks): not Blosc's, never read, the buffer decodes as libblosc
	 * decodes it; the copy is exactly m + 16 bytes, so reading past them
	 * is an ASan error, and garbage there changes nothing */
	memcpy(longer, enc, m);
	for (size_t k = 1; k <= 16; k++) {
		memset(longer + m, 0xA5, k);
		memset(out, 0, n);
		assert_int_equal(dsv_blosc_raw_size(longer, m + k, &raw), 0);
		assert_int_equal(raw, n);
		assert_int_equal(decode_exact(out, n, longer, m + k), (int64_t)n);
		assert_memory_equal(out, in, n);
	}
	/* a header that claims more than the input: truncated, refused */
	put32(longer + 12, (uint32_t)(m + 17));
	assert_int_equal(dsv_blosc_decode(out, n, longer, m + 16), DSV_ERR_CORRUPT);
	assert_int_equal(dsv_blosc_raw_size(longer, m + 16, &raw), DSV_ERR_CORRUPT);
	/* a cut buffer whose header claims the cut length: the block table or
	 * the last block's streams now point past the end */
	for (size_t cut = BLOSC_MIN_HEADER_LENGTH; cut < m; cut += 97) {
		uint8_t *c = malloc(cut);
		assert_non_null(c);
		memcpy(c, enc, cut);
		put32(c + 12, (uint32_t)cut);
		assert_int_equal(dsv_blosc_decode(out, n, c, cut), DSV_ERR_CORRUPT);
		free(c);
	}
	free(longer);
	free(out);
	free(in);
	free(enc);
}

/* One header field changed: the decode must fail. */
static void expect_bad(const uint8_t *enc, size_t m, size_t n, size_t at, const uint8_t *val,
		       size_t len)
{
	uint8_t *c = malloc(m), *out = malloc(n + 64);
	assert_non_null(c);
	assert_non_null(out);
	memcpy(c, enc, m);
	memcpy(c + at, val, len);
	assert_int_equal(dsv_blosc_decode(out, n, c, m), DSV_ERR_CORRUPT);
	free(out);
	free(c);
}

static void test_blosc_bad_header(void **state)
{
	(void)state;
	size_t n = 300000, m, nm;
	uint8_t *in, *enc = make("lz4", BLOSC_SHUFFLE, 2, n, 1, 3, &m, &in), v[4];
	uint8_t *min, *menc = make("blosclz", BLOSC_NOSHUFFLE, 1, 1000, 0, 4, &nm, &min);
	uint64_t raw;

	assert_true((enc[8] | enc[9] << 8 | enc[10] << 16 | (uint32_t)enc[11] << 24) <
		    n);                        /* blocks */
	assert_true(menc[2] & BLOSC_MEMCPYED); /* random: stored */
	/* nbytes != the chunk size, up or down (the buffer still fits dst) */
	put32(v, (uint32_t)n - 2);
	expect_bad(enc, m, n, 4, v, 4);
	put32(v, (uint32_t)n + 2);
	expect_bad(enc, m, n, 4, v, 4);
	put32(v, 0);
	expect_bad(enc, m, n, 4, v, 4);
	put32(v, 0x80000000u); /* negative as libblosc's int32 */
	expect_bad(enc, m, n, 4, v, 4);
	/* cbytes != input size */
	put32(v, (uint32_t)m - 1);
	expect_bad(enc, m, n, 12, v, 4);
	put32(v, (uint32_t)m + 1);
	expect_bad(enc, m, n, 12, v, 4);
	put32(v, 0xfffffff0u);
	expect_bad(enc, m, n, 12, v, 4);
	/* typesize 0, version, flags from the future */
	v[0] = 0;
	expect_bad(enc, m, n, 3, v, 1);
	v[0] = 1;
	expect_bad(enc, m, n, 0, v, 1);
	v[0] = 3;
	expect_bad(enc, m, n, 0, v, 1);
	v[0] = enc[2] | 0x08;
	expect_bad(enc, m, n, 2, v, 1);
	/* inner codec that does not exist (format 7) */
	v[0] = (uint8_t)((enc[2] & 0x1f) | 0xe0);
	expect_bad(enc, m, n, 2, v, 1);
	/* blocksize 0, larger than the chunk, negative */
	put32(v, 0);
	expect_bad(enc, m, n, 8, v, 4);
	put32(v, (uint32_t)n + 1);
	expect_bad(enc, m, n, 8, v, 4);
	put32(v, 0xffffff00u);
	expect_bad(enc, m, n, 8, v, 4);
	/* blocksize 1: a block table of n entries that cannot fit */
	put32(v, 1);
	expect_bad(enc, m, n, 8, v, 4);
	/* a block start inside the table, past the end, negative */
	put32(v, 16);
	expect_bad(enc, m, n, 16, v, 4);
	put32(v, (uint32_t)m - 3);
	expect_bad(enc, m, n, 20, v, 4);
	put32(v, 0xfffffffcu);
	expect_bad(enc, m, n, 16, v, 4);
	/* a stored (memcpyed) buffer must be exactly nbytes + 16 */
	v[0] = menc[2] & ~BLOSC_MEMCPYED;
	expect_bad(menc, nm, 1000, 2, v, 1);
	put32(v, 999);
	expect_bad(menc, nm, 1000, 4, v, 4);
	v[0] = enc[2] | BLOSC_MEMCPYED;
	expect_bad(enc, m, n, 2, v, 1);
	/* raw_size's own refusals */
	assert_int_equal(dsv_blosc_raw_size(enc, m - 1, &raw), DSV_ERR_CORRUPT);
	assert_int_equal(dsv_blosc_raw_size(enc, m, &raw), 0);
	assert_int_equal(raw, n);
	free(in);
	free(enc);
	free(min);
	free(menc);
}

/* Each byte of small buffers (every codec, both shuffles) flipped with a
 * few masks: fail, or exactly the chunk size. */
static void test_blosc_mutations(void **state)
{
	(void)state;
	static const uint8_t masks[] = { 0x01, 0x80, 0xff, 0x5a };
	size_t n = 2048;
	uint8_t *out = malloc(n);
	assert_non_null(out);
	for (size_t ci = 0; ci < sizeof(cnames) / sizeof(cnames[0]); ci++)
		for (int sh = BLOSC_NOSHUFFLE; sh <= BLOSC_BITSHUFFLE; sh++) {
			size_t m;
			uint8_t *in, *enc = make(cnames[ci], sh, 4, n, 1, (unsigned)ci, &m, &in);
			uint8_t *mut = malloc(m);
			assert_non_null(mut);
			for (size_t i = 0; i < m; i++)
				for (size_t k = 0; k < sizeof(masks); k++) {
					memcpy(mut, enc, m);
					mut[i] ^= masks[k];
					int64_t got = dsv_blosc_decode(out, n, mut, m);
					assert_true(got == DSV_ERR_CORRUPT || got == (int64_t)n);
				}
			free(mut);
			free(in);
			free(enc);
		}
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_blosc_round_trip),
		cmocka_unit_test(test_blosc_empty),
		cmocka_unit_test(test_blosc_truncated_and_trailing),
		cmocka_unit_test(test_blosc_bad_header),
		cmocka_unit_test(test_blosc_mutations),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
