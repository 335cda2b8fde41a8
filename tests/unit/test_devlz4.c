/* The CUDA backend's LZ4 decoder (src/gpu/dev_lz4.h), built for the host,
 * against liblz4: LZ4 blocks of many kinds (noise, runs, short periods,
 * fast and HC compression, every size up to a few hundred bytes and large
 * ones) must decode to the same bytes with the same count as
 * LZ4_decompress_safe at the exact size and at larger capacities; every
 * truncation and one-byte change of small blocks, hand-made blocks at the
 * edges of the format, and the fuzz corpus of the LZ4 targets must be
 * refused exactly when liblz4 refuses them; whole 32004 frames through the
 * GPU plan (src/gpu/lz4_plan.c) must match dsv_lz4_decode; and the copies
 * split over 32 lanes give the bytes one lane gives. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lz4.h>
#include <lz4hc.h>

#include "dsview/codec.h"
#include "gpu/dev_lz4.h"
#include "gpu/lz4_plan.h"

static uint32_t rng_state = 11;
static uint32_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 17;
	rng_state ^= rng_state << 5;
	return rng_state;
}

/* kind 0 noise, 1 runs, 2 a short period, 3 small alphabet, 4 zeros, 5 mixed */
static void fill(uint8_t *p, size_t n, int kind)
{
	uint32_t period = 1 + rnd() % 40;
	for (size_t i = 0; i < n; i++) {
		switch (kind) {
		case 0: p[i] = (uint8_t)rnd(); break;
		case 1: p[i] = (uint8_t)(i / (7 + period)); break;
		case 2: p[i] = (uint8_t)(i % period * 37); break;
		case 3: p[i] = (uint8_t)("ab\n "[rnd() % 4]); break;
		case 4: p[i] = 0; break;
		default: p[i] = (i / 500) % 2 ? (uint8_t)rnd() : (uint8_t)(i / 64); break;
		}
	}
}

/* Block in[0, n) into capacity cap by both decoders: the same count (or
 * both refuse) and the same bytes. @return the count. */
static int check_block(const uint8_t *in, size_t n, size_t cap)
{
	uint8_t *a = malloc(cap + 1), *b = malloc(cap + 1);
	assert_non_null(a);
	assert_non_null(b);
	memset(a, 0xa5, cap + 1);
	memset(b, 0xa5, cap + 1);
	int want = LZ4_decompress_safe((const char *)in, (char *)a, (int)n, (int)cap);
	int64_t got = dsv_dev_lz4_block(in, (int64_t)n, b, (int64_t)cap, 0, 1);
	if ((want < 0) != (got < 0) || (want >= 0 && got != want)) {
		fprintf(stderr, "n %zu cap %zu: liblz4 %d, dev %lld\n", n, cap, want,
			(long long)got);
		fail();
	}
	if (want > 0)
		assert_memory_equal(a, b, (size_t)want);
	free(a);
	free(b);
	return want;
}

/* Compressed blocks of every kind: fast (acceleration 1 and 9) and HC. */
static void test_devlz4_good_blocks(void **state)
{
	(void)state;
	size_t sizes[] = { 1,  2,   5,   12,  13,   31,   32,    63,     64,
			   65, 100, 255, 256, 1000, 4096, 65536, 300000, 1u << 20 };
	for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
		for (int kind = 0; kind < 6; kind++) {
			for (int mode = 0; mode < 3; mode++) {
				size_t n = sizes[si];
				int bound = LZ4_compressBound((int)n);
				uint8_t *src = malloc(n), *enc = malloc((size_t)bound);
				assert_non_null(src);
				assert_non_null(enc);
				fill(src, n, kind);
				int c = mode == 0   ? LZ4_compress_default((char *)src, (char *)enc,
									   (int)n, bound)
					: mode == 1 ? LZ4_compress_fast((char *)src, (char *)enc,
									(int)n, bound, 9)
						    : LZ4_compress_HC((char *)src, (char *)enc,
								      (int)n, bound, 9);
				assert_true(c > 0);
				assert_int_equal(check_block(enc, (size_t)c, n), (int)n);
				/* more room than the block fills: the same count */
				(void)check_block(enc, (size_t)c, n + 1);
				(void)check_block(enc, (size_t)c, n + 100);
				if (n > 1)
					(void)check_block(enc, (size_t)c, n - 1);
				free(src);
				free(enc);
			}
		}
	}
	/* every size up to 300 of a mixed kind, at the exact size */
	for (size_t n = 1; n <= 300; n++) {
		uint8_t src[300], enc[400];
		fill(src, n, (int)(n % 6));
		int c = LZ4_compress_default((char *)src, (char *)enc, (int)n, sizeof(enc));
		assert_int_equal(check_block(enc, (size_t)c, n), (int)n);
	}
}

/* Every truncation and every one-byte change of small blocks. */
static void test_devlz4_mutations(void **state)
{
	(void)state;
	for (int round = 0; round < 24; round++) {
		size_t n = 20 + rnd() % 180;
		uint8_t src[256], enc[300], bad[300];
		fill(src, n, round % 6);
		int c = LZ4_compress_default((char *)src, (char *)enc, (int)n, sizeof(enc));
		assert_true(c > 0);
		for (int cut = 0; cut < c; cut++)
			(void)check_block(enc, (size_t)cut, n);
		for (int at = 0; at < c; at++) {
			static const uint8_t vals[] = { 0x00, 0x01, 0x0f, 0x10,
							0xf0, 0xff, 0xee, 0x80 };
			for (size_t v = 0; v < sizeof(vals); v++) {
				memcpy(bad, enc, (size_t)c);
				bad[at] = vals[v];
				(void)check_block(bad, (size_t)c, n);
				(void)check_block(bad, (size_t)c, n + 70);
			}
		}
	}
}

/* Hand-made blocks at the edges of the format. */
static void test_devlz4_edges(void **state)
{
	(void)state;
	uint8_t b[256];
	size_t caps[] = { 0, 1, 4, 5, 12, 13, 18, 32, 40, 63, 64, 65, 100, 200 };
	for (size_t ci = 0; ci < sizeof(caps) / sizeof(caps[0]); ci++) {
		size_t cap = caps[ci];
		/* empty block: one zero token */
		b[0] = 0;
		(void)check_block(b, 1, cap);
		(void)check_block(b, 0, cap);
		/* literals only */
		b[0] = 0x50;
		memcpy(b + 1, "hello", 5);
		(void)check_block(b, 6, cap);
		/* a match with offset 0, 1, 7, 8, and one past the output */
		for (int off = 0; off < 12; off++) {
			uint8_t m[] = { 0x8f,         'a', 'b', 'c',  'd', 'e', 'f', 'g', 'h',
					(uint8_t)off, 0,   20,  0x50, 'v', 'w', 'x', 'y', 'z' };
			(void)check_block(m, sizeof(m), cap);
			(void)check_block(m, sizeof(m) - 5, cap);
		}
		/* a match in the last bytes, then an empty literal token: liblz4
		 * accepts it when the shortcut copies the match */
		for (int pre = 0; pre < 60; pre++) {
			size_t k = 0;
			b[k++] = 0xf0;
			b[k++] = (uint8_t)pre;
			for (int j = 0; j < 15 + pre; j++)
				b[k++] = (uint8_t)('A' + j % 26);
			b[k++] = 0xee;
			for (int j = 0; j < 14; j++)
				b[k++] = (uint8_t)('a' + j);
			b[k++] = 9;
			b[k++] = 0;
			b[k++] = 0;
			(void)check_block(b, k, 15 + (size_t)pre + 32);
			(void)check_block(b, k, cap);
		}
		/* long literal and match lengths ending at the limits */
		for (int x = 0; x < 4; x++) {
			size_t k = 0;
			b[k++] = 0xff;
			b[k++] = (uint8_t)(255 - x);
			for (int j = 0; j < 270 - x && k < 200; j++)
				b[k++] = (uint8_t)j;
			(void)check_block(b, k, cap);
			(void)check_block(b, k, 300);
		}
	}
}

/* A copy split over 32 lanes, each lane run alone in turn: the same bytes
 * as one lane (no lane reads what another writes in the same copy). */
static void test_devlz4_lanes(void **state)
{
	(void)state;
	uint8_t one[600], many[600];
	for (uint32_t off = 0; off < 70; off++) {
		for (uint32_t n = 1; n < 120; n += 7) {
			fill(one, 200, 0);
			memcpy(many, one, 200);
			if (off <= 200) {
				dsv_dev_match(one, 200, off, n, 0, 1);
				for (unsigned lane = 0; lane < 32; lane++)
					dsv_dev_match(many, 200, off, n, lane, 32);
				assert_memory_equal(one, many, 200 + n);
			}
		}
	}
	fill(one, 600, 0);
	memset(many, 0, 600);
	for (unsigned lane = 0; lane < 32; lane++)
		dsv_dev_copy(many, one, 600, lane, 32);
	assert_memory_equal(one, many, 600);
}

/* 32004 frames through the GPU plan against dsv_lz4_decode. */
static void check_frame(const uint8_t *enc, size_t n, size_t cap)
{
	uint8_t *a = malloc(cap ? cap : 1), *b = malloc(cap ? cap : 1);
	assert_non_null(a);
	assert_non_null(b);
	int64_t want = dsv_lz4_decode(a, cap, enc, n);
	int64_t got = dsv_gpu_lz4_decode_host(b, cap, enc, n);
	if ((want < 0) != (got < 0) || (want >= 0 && got != want)) {
		fprintf(stderr, "frame of %zu bytes: codec %lld, plan %lld\n", n, (long long)want,
			(long long)got);
		fail();
	}
	if (want > 0)
		assert_memory_equal(a, b, (size_t)want);
	free(a);
	free(b);
}

static void test_devlz4_frames(void **state)
{
	(void)state;
	size_t sizes[] = { 0, 1, 100, 4096, 100000, 1u << 20 };
	size_t blocks[] = { 0, 1, 64, 1000, 65536 };
	for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
		for (size_t bi = 0; bi < sizeof(blocks) / sizeof(blocks[0]); bi++) {
			size_t n = sizes[si];
			if (blocks[bi] == 1 && n > 4096)
				continue;
			size_t cap = dsv_lz4_bound(n, blocks[bi]);
			uint8_t *src = malloc(n + 1), *enc = malloc(cap);
			assert_non_null(src);
			assert_non_null(enc);
			fill(src, n, 5); /* some blocks stored raw */
			int64_t c = dsv_lz4_encode(enc, cap, src, n, blocks[bi], (int)(si % 3));
			assert_true(c > 0);
			check_frame(enc, (size_t)c, n);
			check_frame(enc, (size_t)c, n + 10);
			if (n)
				check_frame(enc, (size_t)c, n - 1);
			check_frame(enc, (size_t)c - 1, n);
			for (int k = 0; k < 40 && c > 12; k++) {
				size_t at = rnd() % (size_t)c;
				uint8_t old = enc[at];
				enc[at] = (uint8_t)rnd();
				check_frame(enc, (size_t)c, n);
				enc[at] = old;
			}
			free(src);
			free(enc);
		}
	}
}

/* The committed fuzz seeds of the LZ4 targets, as frames and as blocks. */
static void test_devlz4_corpus(void **state)
{
	(void)state;
	const char *dirs[] = { "tests/fuzz/corpus/lz4", "tests/fuzz/corpus/lz4block",
			       "tests/fuzz/corpus/devlz4" };
	int files = 0;
	for (size_t d = 0; d < sizeof(dirs) / sizeof(dirs[0]); d++) {
		DIR *dir = opendir(dirs[d]);
		struct dirent *e;
		assert_non_null(dir);
		while ((e = readdir(dir))) {
			char path[512];
			if (e->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s", dirs[d], e->d_name);
			FILE *f = fopen(path, "rb");
			assert_non_null(f);
			static uint8_t buf[1 << 20];
			size_t n = fread(buf, 1, sizeof(buf), f);
			fclose(f);
			uint64_t raw;
			if (dsv_lz4_raw_size(buf, n, &raw) == 0 && raw <= (16u << 20))
				check_frame(buf, n, (size_t)raw);
			size_t caps[] = { 0, 1, 64, 100, 4096, 70000 };
			for (size_t c = 0; c < sizeof(caps) / sizeof(caps[0]); c++)
				(void)check_block(buf, n, caps[c]);
			if (n > 12)
				for (size_t c = 0; c < sizeof(caps) / sizeof(caps[0]); c++)
					(void)check_block(buf + 16, n - 16 > n ? 0 : n - 16,
							  caps[c]);
			files++;
		}
		closedir(dir);
	}
	assert_true(files > 50);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_devlz4_good_blocks), cmocka_unit_test(test_devlz4_mutations),
		cmocka_unit_test(test_devlz4_edges),       cmocka_unit_test(test_devlz4_lanes),
		cmocka_unit_test(test_devlz4_frames),      cmocka_unit_test(test_devlz4_corpus),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
