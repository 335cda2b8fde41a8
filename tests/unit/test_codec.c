/* Codecs: LZ4 32004 framing (round trips, hostile frames, the plugin's own
 * output) and HDF5's Fletcher32 (vectors HDF5 itself computed). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/bytes.h"
#include "dsview/codec.h"
#include "dsview/dsview.h"
#include "fixture.h"

static uint32_t rng_state = 1;
static uint32_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 17;
	rng_state ^= rng_state << 5;
	return rng_state;
}

/* Compressible text-like bytes, or noise. */
static void fill(uint8_t *p, size_t n, int noise)
{
	static const char words[] = "the quick brown fox jumps over the lazy dog ";
	for (size_t i = 0; i < n; i++)
		p[i] = noise ? (uint8_t)rnd() : (uint8_t)words[(i * 7 / 5) % (sizeof(words) - 1)];
}

/* Encodes src, checks the frame's structure, decodes into an exact-size
 * buffer, and returns the encoded size. */
static size_t round_trip(const uint8_t *src, size_t n, size_t block, int level)
{
	size_t cap = dsv_lz4_bound(n, block);
	uint8_t *enc = malloc(cap), *dec = malloc(n + 1);
	uint64_t raw;
	assert_non_null(enc);
	assert_non_null(dec);

	int64_t got = dsv_lz4_encode(enc, cap, src, n, block, level);
	assert_true(got >= 12 && (size_t)got <= cap);
	assert_int_equal(dsv_lz4_raw_size(enc, (size_t)got, &raw), 0);
	assert_int_equal(raw, n);

	/* Walk the blocks as the plugin's decoder would. */
	size_t bs = dsv_load_be32(enc + 8), pos = 12, done = 0;
	size_t want_bs = block ? block : DSV_LZ4_DEFAULT_BLOCK;
	assert_int_equal(bs, n < want_bs ? n : want_bs);
	while (done < n) {
		size_t want = n - done < bs ? n - done : bs, stored = dsv_load_be32(enc + pos);
		assert_true(stored <= want);
		if (stored == want)
			assert_memory_equal(enc + pos + 4, src + done, want);
		pos += 4 + stored;
		done += want;
	}
	assert_int_equal(pos, (size_t)got);

	assert_int_equal(dsv_lz4_decode(dec, n, enc, (size_t)got), (int64_t)n);
	if (n)
		assert_memory_equal(dec, src, n);
	/* More room than needed is fine too. */
	assert_int_equal(dsv_lz4_decode(dec, n + 1, enc, (size_t)got), (int64_t)n);
	free(enc);
	free(dec);
	return (size_t)got;
}

static void test_lz4_round_trip(void **state)
{
	static const size_t sizes[] = { 1, 2, 15, 64, 65, 1000, 4096, 70001, 1 << 20 };
	static const size_t blocks[] = { 0, 1, 64, 100, 4096, 1 << 16 };
	static const int levels[] = { 0, 1, 9, 12 };
	size_t max = 1 << 20;
	uint8_t *buf = malloc(max);
	(void)state;
	assert_non_null(buf);
	for (int noise = 0; noise < 2; noise++) {
		for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
			fill(buf, sizes[i], noise);
			for (size_t b = 0; b < sizeof(blocks) / sizeof(blocks[0]); b++) {
				if (blocks[b] == 1 && sizes[i] > 4096)
					continue; /* a million 5-byte blocks: slow, proves nothing new */
				for (size_t l = 0; l < sizeof(levels) / sizeof(levels[0]); l++)
					round_trip(buf, sizes[i], blocks[b], levels[l]);
			}
		}
	}
	/* Text compresses; a default-block 1 MiB frame is one block. */
	fill(buf, max, 0);
	assert_true(round_trip(buf, max, 0, 0) < max / 4);
	assert_true(round_trip(buf, max, 0, 9) < max / 4);
	free(buf);
}

static void test_lz4_incompressible_stored_raw(void **state)
{
	uint8_t src[10000];
	(void)state;
	fill(src, sizeof(src), 1);
	/* 10000 bytes in 3000-byte blocks: 4 blocks, all raw. */
	size_t got = round_trip(src, sizeof(src), 3000, 0);
	assert_int_equal(got, 12 + 4 * 4 + sizeof(src));
	assert_int_equal(dsv_lz4_bound(sizeof(src), 3000), got);
	got = round_trip(src, sizeof(src), 0, 9);
	assert_int_equal(got, 12 + 4 + sizeof(src));
}

static void test_lz4_empty(void **state)
{
	uint8_t enc[32], dec[1];
	uint64_t raw = 99;
	(void)state;
	assert_int_equal(dsv_lz4_bound(0, 0), 12);
	assert_int_equal(dsv_lz4_encode(enc, sizeof(enc), "", 0, 0, 0), 12);
	assert_int_equal(dsv_lz4_raw_size(enc, 12, &raw), 0);
	assert_int_equal(raw, 0);
	assert_int_equal(dsv_lz4_decode(dec, 0, enc, 12), 0);
	assert_int_equal(dsv_lz4_decode(dec, 1, enc, 13), DSV_ERR_CORRUPT); /* trailing */
}

static void test_lz4_encode_bad_args(void **state)
{
	uint8_t src[1000], dst[2000];
	(void)state;
	fill(src, sizeof(src), 1);
	assert_int_equal(dsv_lz4_encode(dst, 11, src, sizeof(src), 0, 0), DSV_ERR_OVERFLOW);
	assert_int_equal(dsv_lz4_encode(dst, 500, src, sizeof(src), 0, 0),
			 DSV_ERR_OVERFLOW); /* no room */
	assert_int_equal(dsv_lz4_encode(dst, 1015, src, sizeof(src), 0, 0),
			 DSV_ERR_OVERFLOW); /* one short */
	assert_int_equal(dsv_lz4_encode(dst, 1016, src, sizeof(src), 0, 0), 1016);
	assert_int_equal(dsv_lz4_encode(dst, sizeof(dst), src, sizeof(src), 0, -1),
			 DSV_ERR_INVALID);
	assert_int_equal(dsv_lz4_encode(dst, sizeof(dst), src, sizeof(src), 0, 99),
			 DSV_ERR_INVALID);
}

/* A 3-block frame (compressed, compressed, short raw) to break. */
static size_t good_frame(uint8_t *enc, size_t cap, uint8_t *src, size_t n)
{
	memset(src, 'a', n);
	fill(src + 2 * 256, n - 2 * 256, 1);
	int64_t got = dsv_lz4_encode(enc, cap, src, n, 256, 0);
	assert_true(got > 0);
	return (size_t)got;
}

static void test_lz4_truncated(void **state)
{
	uint8_t src[600], enc[1024], dec[600];
	size_t n;
	(void)state;
	n = good_frame(enc, sizeof(enc), src, sizeof(src));
	assert_true(dsv_load_be32(enc + 12) < 256); /* block 0 compressed */
	assert_int_equal(dsv_lz4_decode(dec, sizeof(dec), enc, n), (int64_t)sizeof(src));
	for (size_t cut = 0; cut < n; cut++)
		assert_int_equal(dsv_lz4_decode(dec, sizeof(dec), enc, cut), DSV_ERR_CORRUPT);
}

static void test_lz4_lying_sizes(void **state)
{
	uint8_t src[600], enc[1024], bad[1100], dec[1200];
	size_t n;
	(void)state;
	n = good_frame(enc, sizeof(enc), src, sizeof(src));
	size_t b1 = 12 + 4 + dsv_load_be32(enc + 12); /* offset of block 1's size */

#define BREAK(stmt)                                                                          \
	do {                                                                                 \
		memcpy(bad, enc, n);                                                         \
		stmt;                                                                        \
		assert_int_equal(dsv_lz4_decode(dec, sizeof(src), bad, n), DSV_ERR_CORRUPT); \
	} while (0)

	/* raw size: larger than dst, one more, one less, absurd */
	BREAK(dsv_store_be64(bad, sizeof(src) + 1));
	BREAK(dsv_store_be64(bad, sizeof(src) - 1));
	BREAK(dsv_store_be64(bad, 1ull << 62));
	BREAK(dsv_store_be64(bad, UINT64_MAX));
	/* header block size: zero, smaller, larger than the blocks really are */
	BREAK(dsv_store_be32(bad + 8, 0));
	BREAK(dsv_store_be32(bad + 8, 1));
	BREAK(dsv_store_be32(bad + 8, 255));
	BREAK(dsv_store_be32(bad + 8, 257));
	BREAK(dsv_store_be32(bad + 8, UINT32_MAX));
	/* a block's stored size: zero, past the end of src, bigger than its
	 * raw size, one off either way */
	BREAK(dsv_store_be32(bad + 12, 0));
	BREAK(dsv_store_be32(bad + 12, UINT32_MAX));
	BREAK(dsv_store_be32(bad + 12, (uint32_t)n));
	BREAK(dsv_store_be32(bad + 12, dsv_load_be32(enc + 12) + 1));
	BREAK(dsv_store_be32(bad + 12, dsv_load_be32(enc + 12) - 1));
	BREAK(dsv_store_be32(bad + 12, 256)); /* claims raw: then the frame misaligns */
	BREAK(dsv_store_be32(bad + b1, dsv_load_be32(enc + b1) + 1));
	BREAK(dsv_store_be32(bad + n - 4 - 88, 89)); /* last (raw, 88 bytes) block */
	BREAK(dsv_store_be32(bad + n - 4 - 88, 87));
#undef BREAK

	/* dst smaller than the header's raw size: refused before writing. */
	memset(dec, 0x5a, sizeof(dec));
	assert_int_equal(dsv_lz4_decode(dec, sizeof(src) - 1, enc, n), DSV_ERR_CORRUPT);
	/* bytes after the last block: not the frame's, never read (the
	 * plugin's decoder stops at the last block too) */
	memcpy(bad, enc, n);
	memset(bad + n, 0xA5, 7);
	memset(dec, 0, sizeof(dec));
	assert_int_equal(dsv_lz4_decode(dec, sizeof(dec), bad, n + 7), (int64_t)sizeof(src));
	assert_memory_equal(dec, src, sizeof(src));
	assert_int_equal(dsv_lz4_decode(dec, sizeof(dec), enc, n), (int64_t)sizeof(src));

	/* Block size 0 in a one-block frame: the plugin would loop forever. */
	int64_t one = dsv_lz4_encode(bad, sizeof(bad), src, 256, 0, 0);
	assert_true(one > 0);
	assert_int_equal(dsv_lz4_decode(dec, 256, bad, (size_t)one), 256);
	dsv_store_be32(bad + 8, 0);
	assert_int_equal(dsv_lz4_decode(dec, 256, bad, (size_t)one), DSV_ERR_CORRUPT);

	/* A tiny block size with a huge raw size must fail at once, not
	 * loop: 2^40 one-byte blocks cannot fit in 20 bytes. */
	uint8_t tiny[20] = { 0 };
	dsv_store_be64(tiny, 1ull << 40);
	dsv_store_be32(tiny + 8, 1);
	assert_int_equal(dsv_lz4_decode(dec, SIZE_MAX, tiny, sizeof(tiny)), DSV_ERR_CORRUPT);
	uint64_t raw;
	assert_int_equal(dsv_lz4_raw_size(tiny, 11, &raw), DSV_ERR_CORRUPT);
	dsv_store_be64(tiny, UINT64_MAX);
	assert_int_equal(dsv_lz4_raw_size(tiny, 12, &raw), DSV_ERR_CORRUPT);
}

/* Random damage to valid frames: the decoder answers, never crashes (run
 * under SANITIZE=address,undefined). */
static void test_lz4_mutations(void **state)
{
	uint8_t src[600], enc[1024], bad[1024], dec[600];
	size_t n;
	(void)state;
	n = good_frame(enc, sizeof(enc), src, sizeof(src));
	rng_state = 12345;
	for (int iter = 0; iter < 20000; iter++) {
		memcpy(bad, enc, n);
		int flips = 1 + (int)(rnd() % 4);
		for (int k = 0; k < flips; k++)
			bad[rnd() % n] ^= (uint8_t)(1u << (rnd() % 8));
		size_t len = rnd() % 8 ? n : rnd() % n;
		int64_t got = dsv_lz4_decode(dec, sizeof(dec), bad, len);
		assert_true(got == DSV_ERR_CORRUPT || (got >= 0 && got <= (int64_t)sizeof(dec)));
	}
}

static void test_lz4_plugin_frame(void **state)
{
	size_t len;
	uint8_t *frame = read_fixture("lz4_plugin_frame.bin", &len);
	int64_t want[240 / 2];
	uint8_t dec[240];
	uint64_t raw;
	(void)state;

	/* Chunk 0 of /lz4_fl32: 8 rows x 5 x 3 int16 = 240 bytes, 64-byte
	 * blocks, written by hdf5plugin, Fletcher32 trailer by HDF5. */
	assert_int_equal(dsv_fletcher32_check(frame, len), 0);
	assert_int_equal(dsv_lz4_raw_size(frame, len - 4, &raw), 0);
	assert_int_equal(raw, 240);
	assert_int_equal(dsv_load_be32(frame + 8), 64);
	assert_int_equal(dsv_lz4_decode(dec, sizeof(dec), frame, len - 4), 240);
	fixture_pattern(want, 120, 1);
	for (int i = 0; i < 120; i++) {
		int16_t v = (int16_t)(dec[2 * i] | dec[2 * i + 1] << 8);
		assert_int_equal(v, want[i] - 100);
	}
	/* It holds compressed blocks and a raw one; our decoder took both. */
	int ncomp = 0, nraw = 0;
	for (size_t pos = 12, done = 0; done < 240; done += 64) {
		size_t want_b = 240 - done < 64 ? 240 - done : 64, st = dsv_load_be32(frame + pos);
		st == want_b ? nraw++ : ncomp++;
		pos += 4 + st;
	}
	assert_true(ncomp > 0 && nraw > 0);
	free(frame);
}

/*
 * Fletcher32 values HDF5 1.10.8 itself wrote (h5py, fletcher32=True, one
 * chunk of uint8 data (i * 37 + 11) % 256, trailer read back with
 * read_direct_chunk and decoded little-endian).
 */
static void test_fletcher32_hdf5_vectors(void **state)
{
	static const struct {
		size_t len;
		int ff; /* all 0xff instead of the pattern */
		uint32_t sum;
	} v[] = {
		{ 1, 0, 0x0b000b00 },    { 2, 0, 0x0b300b30 },    { 3, 0, 0x6b606030 },
		{ 4, 0, 0x6bda60aa },    { 5, 0, 0x6b85ffaa },    { 719, 0, 0x29496276 },
		{ 720, 0, 0x2a3f636c },  { 721, 0, 0xa8ab7e6c },  { 722, 0, 0xa8eb7eac },
		{ 1441, 0, 0xb1ff7159 }, { 5000, 0, 0xcb6d45a2 }, { 2, 1, 0xffffffff },
		{ 721, 1, 0xff00ff00 },  { 4000, 1, 0xffffffff },
	};
	uint8_t buf[5004];
	(void)state;
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		for (size_t k = 0; k < v[i].len; k++)
			buf[k] = v[i].ff ? 0xff : (uint8_t)((k * 37 + 11) % 256);
		assert_int_equal(dsv_fletcher32(buf, v[i].len), v[i].sum);
		/* HDF5's trailer is the value little-endian. */
		dsv_fletcher32_append(buf, v[i].len);
		assert_int_equal(buf[v[i].len], v[i].sum & 0xff);
		assert_int_equal(buf[v[i].len + 3], v[i].sum >> 24);
		assert_int_equal(dsv_fletcher32_check(buf, v[i].len + 4), 0);
	}
}

/* HDF5's loop, word by word, as H5_checksum_fletcher32 writes it: the
 * blocked, vectorised dsv_fletcher32 must agree bit for bit, including
 * where a fold leaves 0xffff (all-0xff data) and at odd lengths/offsets. */
static uint32_t fletcher32_wordwise(const uint8_t *p, size_t len)
{
	uint32_t s1 = 0, s2 = 0;
	size_t words = len / 2;
	while (words) {
		size_t n = words > 360 ? 360 : words;
		words -= n;
		while (n--) {
			s1 += ((uint32_t)p[0] << 8) | p[1];
			s2 += s1;
			p += 2;
		}
		s1 = (s1 & 0xffff) + (s1 >> 16);
		s2 = (s2 & 0xffff) + (s2 >> 16);
	}
	if (len & 1) {
		s1 += (uint32_t)p[0] << 8;
		s2 += s1;
		s1 = (s1 & 0xffff) + (s1 >> 16);
		s2 = (s2 & 0xffff) + (s2 >> 16);
	}
	s1 = (s1 & 0xffff) + (s1 >> 16);
	s2 = (s2 & 0xffff) + (s2 >> 16);
	return (s2 << 16) | s1;
}

static void test_fletcher32_blocked_equals_wordwise(void **state)
{
	static uint8_t buf[(1 << 20) + 3];
	uint32_t x = 12345;
	(void)state;
	for (size_t i = 0; i < sizeof(buf); i++) {
		x = x * 1103515245u + 12345u;
		buf[i] = (uint8_t)(x >> 24);
	}
	for (size_t len = 0; len < 2200; len++)
		for (size_t off = 0; off < 3; off++)
			assert_int_equal(dsv_fletcher32(buf + off, len),
					 fletcher32_wordwise(buf + off, len));
	assert_int_equal(dsv_fletcher32(buf, 1 << 20), fletcher32_wordwise(buf, 1 << 20));
	memset(buf, 0xff, sizeof(buf));
	for (size_t len = 718; len < 726; len++)
		assert_int_equal(dsv_fletcher32(buf, len), fletcher32_wordwise(buf, len));
	assert_int_equal(dsv_fletcher32(buf, 1 << 20), fletcher32_wordwise(buf, 1 << 20));
}

static void test_fletcher32_check(void **state)
{
	uint8_t buf[1001 + 4];
	(void)state;
	fill(buf, 1001, 1);
	dsv_fletcher32_append(buf, 1001);
	assert_int_equal(dsv_fletcher32_check(buf, sizeof(buf)), 0);
	/* Every single-bit flip in the data or the trailer is caught. */
	for (size_t i = 0; i < sizeof(buf); i++) {
		for (int b = 0; b < 8; b++) {
			buf[i] ^= (uint8_t)(1u << b);
			assert_int_equal(dsv_fletcher32_check(buf, sizeof(buf)), DSV_ERR_CHECKSUM);
			buf[i] ^= (uint8_t)(1u << b);
		}
	}
	/* HDF5 < 1.6.3's form (bytes of each 16-bit half swapped) passes. */
	uint8_t t[4];
	memcpy(t, buf + 1001, 4);
	buf[1001] = t[1], buf[1002] = t[0], buf[1003] = t[3], buf[1004] = t[2];
	assert_int_equal(dsv_fletcher32_check(buf, sizeof(buf)), 0);
	/* but not big-endian, which no HDF5 wrote */
	buf[1001] = t[3], buf[1002] = t[2], buf[1003] = t[1], buf[1004] = t[0];
	assert_int_equal(dsv_fletcher32_check(buf, sizeof(buf)), DSV_ERR_CHECKSUM);
	/* Too short to hold a trailer. */
	assert_int_equal(dsv_fletcher32_check(buf, 3), DSV_ERR_CORRUPT);
	/* Empty payload: the trailer alone, sum 0. */
	memset(buf, 0, 4);
	assert_int_equal(dsv_fletcher32_check(buf, 4), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lz4_round_trip),
		cmocka_unit_test(test_lz4_incompressible_stored_raw),
		cmocka_unit_test(test_lz4_empty),
		cmocka_unit_test(test_lz4_encode_bad_args),
		cmocka_unit_test(test_lz4_truncated),
		cmocka_unit_test(test_lz4_lying_sizes),
		cmocka_unit_test(test_lz4_mutations),
		cmocka_unit_test(test_lz4_plugin_frame),
		cmocka_unit_test(test_fletcher32_hdf5_vectors),
		cmocka_unit_test(test_fletcher32_blocked_equals_wordwise),
		cmocka_unit_test(test_fletcher32_check),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
