/* common/samples: runs of little-endian 24- and 16-bit samples widened to
 * int32, against the one-sample loads of common/bytes.h, on every
 * alignment and length, each run ending at a page nobody may read. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/bytes.h"
#include "common/samples.h"

#define MAXN 300

/* Two pages, the second unreadable: a run of `bytes` placed to end where
 * the second begins, so a read past its end faults. */
typedef struct guarded {
	uint8_t *map;
	size_t page;
} guarded;

static void guarded_open(guarded *g)
{
	g->page = (size_t)sysconf(_SC_PAGESIZE);
	g->map = mmap(NULL, 2 * g->page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
		      0);
	assert_true(g->map != MAP_FAILED);
	assert_int_equal(mprotect(g->map + g->page, g->page, PROT_NONE), 0);
}

static uint8_t *guarded_run(guarded *g, const uint8_t *bytes, size_t len)
{
	uint8_t *p = g->map + g->page - len;
	memcpy(p, bytes, len);
	return p;
}

/* Random samples, with the extremes and their neighbours mixed in. */
static void fill24(uint8_t *b, size_t n, unsigned seed)
{
	static const int32_t special[] = { -8388608, 8388607, -1, 0, 1, -8388607, 8388606 };
	srand(seed);
	for (size_t i = 0; i < n; i++) {
		int32_t v = (i % 3 == 0) ? special[(i / 3) % 7] : (rand() % 16777216) - 8388608;
		uint32_t u = (uint32_t)v;
		b[3 * i] = (uint8_t)u;
		b[3 * i + 1] = (uint8_t)(u >> 8);
		b[3 * i + 2] = (uint8_t)(u >> 16);
	}
}

static void check24(void (*load)(int32_t *, const uint8_t *, size_t))
{
	static uint8_t bytes[3 * MAXN];
	static int32_t out[MAXN + 1];
	guarded g;
	guarded_open(&g);
	fill24(bytes, MAXN, 7);
	for (size_t start = 0; start < 32; start++) {
		for (size_t n = 0; start + n <= MAXN && n < 80; n++) {
			/* bytes[3 * start ..] at every alignment of the page's end */
			const uint8_t *p = guarded_run(&g, bytes + 3 * start, 3 * n);
			out[n] = 0x5a5a5a5a;
			load(out, p, n);
			for (size_t i = 0; i < n; i++)
				assert_int_equal(out[i], dsv_load_le24s(bytes + 3 * (start + i)));
			assert_int_equal(out[n], 0x5a5a5a5a); /* nothing written past n */
		}
	}
	/* long runs, with every start alignment relative to 16 and 32 bytes */
	for (size_t shift = 0; shift < 32; shift++) {
		size_t n = MAXN - shift / 3 - 1;
		uint8_t *p = guarded_run(&g, bytes, 3 * n + shift) + shift;
		memmove(p, bytes, 3 * n);
		load(out, p, n);
		for (size_t i = 0; i < n; i++)
			assert_int_equal(out[i], dsv_load_le24s(bytes + 3 * i));
	}
	munmap(g.map, 2 * g.page);
}

static void test_le24_fast(void **state)
{
	(void)state;
	check24(dsv_le24s_to_i32);
}

static void test_le24_portable(void **state)
{
	(void)state;
	check24(dsv_le24s_to_i32_portable);
}

/* The extremes by value, not only by agreement with dsv_load_le24s. */
static void test_le24_extremes(void **state)
{
	(void)state;
	const uint8_t b[] = { 0x00, 0x00, 0x80, 0xff, 0xff, 0x7f, 0xff, 0xff, 0xff, 0x01, 0x00,
			      0x00, 0x00, 0x00, 0x80, 0xff, 0xff, 0x7f, 0xff, 0xff, 0xff, 0x01,
			      0x00, 0x00, 0x00, 0x00, 0x80, 0xff, 0xff, 0x7f, 0x34, 0x12, 0xf0 };
	const int32_t want[] = { -8388608, 8388607, -1,       1,       -8388608, 8388607,
				 -1,       1,       -8388608, 8388607, -1043916 };
	int32_t out[11];
	dsv_le24s_to_i32(out, b, 11);
	assert_memory_equal(out, want, sizeof(want));
	dsv_le24s_to_i32_portable(out, b, 11);
	assert_memory_equal(out, want, sizeof(want));
}

static void test_le16(void **state)
{
	(void)state;
	static uint8_t bytes[2 * MAXN];
	static int32_t out[MAXN + 1];
	guarded g;
	guarded_open(&g);
	srand(11);
	for (size_t i = 0; i < sizeof(bytes); i++)
		bytes[i] = (uint8_t)rand();
	bytes[0] = 0x00, bytes[1] = 0x80; /* -32768 */
	bytes[2] = 0xff, bytes[3] = 0x7f; /* 32767 */
	for (size_t start = 0; start < 16; start++) {
		for (size_t n = 0; start + n <= MAXN && n < 80; n++) {
			const uint8_t *p = guarded_run(&g, bytes + 2 * start, 2 * n);
			out[n] = 0x5a5a5a5a;
			dsv_le16s_to_i32(out, p, n);
			for (size_t i = 0; i < n; i++) {
				const uint8_t *q = bytes + 2 * (start + i);
				assert_int_equal(out[i], (int16_t)(q[0] | q[1] << 8));
			}
			assert_int_equal(out[n], 0x5a5a5a5a);
		}
	}
	dsv_le16s_to_i32(out, bytes, 2);
	assert_int_equal(out[0], -32768);
	assert_int_equal(out[1], 32767);
	munmap(g.map, 2 * g.page);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_le24_fast),
		cmocka_unit_test(test_le24_portable),
		cmocka_unit_test(test_le24_extremes),
		cmocka_unit_test(test_le16),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
