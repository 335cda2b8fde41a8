/* The device's batch as its emulation runs it (src/gpu/gpu_emu.c, through
 * the device's own planning, src/gpu/batch.c): several LZ4 chunks, some
 * admitted to the tier and some read from it, against dsv_lz4_decode and
 * dsv_xform_run byte for byte; a plan that fails (out of memory, while
 * sizing or while staging) fails the batch, and no output of it is
 * delivered, so no stale jobs or bytes can pass for a result; a damaged
 * block fails the batch as the CPU's decoder fails the chunk. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "dsview/codec.h"
#include "dsview/xform.h"
#include "gpu/gpu_emu.h"

#define NCH 4
#define ELEMS 3000 /* uint16 elements per chunk: 6000 bytes */
#define BLOCK 1024 /* 6 blocks a chunk */

typedef struct batch {
	uint8_t raw[NCH][ELEMS * 2];
	uint8_t enc[NCH][ELEMS * 2 + 256];
	size_t n[NCH];
	float out[NCH][ELEMS], want[NCH][ELEMS];
	dsv_gpu_item items[NCH];
	dsv_xform *x;
	dsv_xform_desc d;
} batch;

static batch *make_batch(void)
{
	batch *b = calloc(1, sizeof(*b));
	dsv_xform_params p;
	dsv_errbuf eb;
	assert_non_null(b);
	dsv_xform_params_init(&p);
	p.scale = 0.5;
	p.offset = -3;
	assert_int_equal(dsv_xform_create(&b->x, DSV_U16, DSV_F32, &p, &eb), 0);
	dsv_xform_describe(b->x, &b->d);
	for (int c = 0; c < NCH; c++) {
		for (int i = 0; i < ELEMS * 2; i++)
			b->raw[c][i] = (uint8_t)(i % 7 == 0 ? i * 131 + c : i / 50 + c);
		int64_t n = dsv_lz4_encode(b->enc[c], sizeof(b->enc[c]), b->raw[c], ELEMS * 2,
					   BLOCK, 0);
		assert_true(n > 0);
		b->n[c] = (size_t)n;
		dsv_xform_run(b->x, b->want[c], b->raw[c], ELEMS, (uint64_t)c * ELEMS);
		b->items[c] = (dsv_gpu_item){ b->enc[c], b->n[c], ELEMS * 2, (uint64_t)c * ELEMS,
					      b->out[c], -1,      -1 };
	}
	memset(b->out, 0xAB, sizeof(b->out));
	return b;
}

static void free_batch(batch *b)
{
	dsv_xform_destroy(b->x);
	free(b);
}

static void test_same_bytes_and_tier(void **state)
{
	(void)state;
	batch *b = make_batch();
	uint8_t *tier = calloc(1, 1 << 16);
	assert_non_null(tier);
	/* chunks 0 and 2 admitted */
	b->items[0].admit_at = 0;
	b->items[2].admit_at = 8192;
	assert_int_equal(dsv_gpu_emu_decode_xform(&b->d, b->items, NCH, tier), 0);
	assert_memory_equal(b->out, b->want, sizeof(b->out));
	assert_memory_equal(tier, b->raw[0], ELEMS * 2);
	assert_memory_equal(tier + 8192, b->raw[2], ELEMS * 2);
	/* the next epoch: 0 and 2 from the tier (no stored bytes), 1 and 3
	 * decoded, in one batch */
	memset(b->out, 0, sizeof(b->out));
	b->items[0] = (dsv_gpu_item){ NULL, 0, ELEMS * 2, 0, b->out[0], 0, -1 };
	b->items[2] = (dsv_gpu_item){ NULL, 0, ELEMS * 2, 2 * ELEMS, b->out[2], 8192, -1 };
	assert_int_equal(dsv_gpu_emu_decode_xform(&b->d, b->items, NCH, tier), 0);
	assert_memory_equal(b->out, b->want, sizeof(b->out));
	/* from a tier that is not there */
	assert_int_equal(dsv_gpu_emu_decode_xform(&b->d, b->items, NCH, NULL), DSV_ERR_INVALID);
	free(tier);
	free_batch(b);
}

static int plans, fail_at;
static int fail_one(void)
{
	return ++plans == fail_at;
}

static void test_plan_fails(void **state)
{
	(void)state;
	batch *b = make_batch();
	float stale[NCH][ELEMS];
	memcpy(stale, b->out, sizeof(stale));
	/* the batch is sized with one plan a chunk, then staged with one
	 * more: any of them failing fails the batch, nothing delivered */
	for (fail_at = 1; fail_at <= 2 * NCH; fail_at++) {
		plans = 0;
		dsv_gpu_plan_fail_hook = fail_one;
		int rc = dsv_gpu_emu_decode_xform(&b->d, b->items, NCH, NULL);
		dsv_gpu_plan_fail_hook = NULL;
		assert_int_equal(rc, DSV_ERR_NOMEM);
		assert_memory_equal(b->out, stale, sizeof(stale));
	}
	/* and once it plans, the bytes are right */
	assert_int_equal(dsv_gpu_emu_decode_xform(&b->d, b->items, NCH, NULL), 0);
	assert_memory_equal(b->out, b->want, sizeof(b->out));
	free_batch(b);
}

static void test_damaged_block(void **state)
{
	(void)state;
	batch *b = make_batch();
	uint8_t raw[ELEMS * 2];
	int refused = 0;
	/* each byte past the frame's header changed in turn in chunk 1: the
	 * batch fails exactly when the CPU's decoder fails that chunk */
	for (size_t at = 16; at < b->n[1]; at += 37) {
		uint8_t keep = b->enc[1][at];
		b->enc[1][at] ^= 0x5A;
		int cpu = dsv_lz4_decode(raw, sizeof(raw), b->enc[1], b->n[1]) != ELEMS * 2;
		int rc = dsv_gpu_emu_decode_xform(&b->d, b->items, NCH, NULL);
		assert_int_equal(rc != 0, cpu);
		if (rc)
			assert_int_equal(rc, DSV_ERR_CORRUPT);
		refused += cpu;
		b->enc[1][at] = keep;
	}
	assert_true(refused > 0);
	free_batch(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_bytes_and_tier),
		cmocka_unit_test(test_plan_fails),
		cmocka_unit_test(test_damaged_block),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
