/* The page budget (src/engine/budget.c): under the budget nothing is dropped;
 * past it the least recently added regions go, whole, until the count is
 * an eighth below; a region added again is kept longer; forgotten bytes
 * are not dropped; a region is never counted above its size; regions map
 * back to their files, an empty file's none; a lowered budget sheds at
 * once, a higher one is ignored; no budget counts nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "engine/budget.h"

#define MIB (1ull << 20)
#define REG (2 * MIB)

typedef struct record {
	pthread_mutex_t mu;
	int n;
	uint32_t file[64];
	uint64_t off[64], len[64], held[64];
} record;

static void dropper(void *ctx, uint32_t file, uint64_t off, uint64_t len, uint64_t held)
{
	record *r = ctx;
	pthread_mutex_lock(&r->mu);
	if (r->n < 64) {
		r->file[r->n] = file;
		r->off[r->n] = off;
		r->len[r->n] = len;
		r->held[r->n] = held;
	}
	r->n++;
	pthread_mutex_unlock(&r->mu);
}

/* The drops made, once n have come (or 5 s have passed). */
static int wait_drops(record *r, int n)
{
	int got = 0;
	for (int i = 0; i < 5000; i++) {
		pthread_mutex_lock(&r->mu);
		got = r->n;
		pthread_mutex_unlock(&r->mu);
		if (got >= n)
			break;
		usleep(1000);
	}
	usleep(20000); /* and no more than n */
	pthread_mutex_lock(&r->mu);
	got = r->n;
	pthread_mutex_unlock(&r->mu);
	return got;
}

static record rec;

static int setup(void **state)
{
	(void)state;
	memset(&rec, 0, sizeof(rec));
	pthread_mutex_init(&rec.mu, NULL);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	pthread_mutex_destroy(&rec.mu);
	return 0;
}

static void test_under_budget_drops_nothing(void **state)
{
	(void)state;
	uint64_t sizes[] = { 64 * MIB };
	dsv_budget *b = dsv_budget_start(sizes, 1, 16 * MIB, dropper, &rec);
	assert_non_null(b);
	assert_int_equal(dsv_budget_region(b), REG);
	for (uint64_t off = 0; off < 16 * MIB; off += 128 << 10)
		dsv_budget_add(b, 0, off, 128 << 10);
	assert_int_equal(dsv_budget_held(b), 16 * MIB);
	assert_int_equal(wait_drops(&rec, 0), 0);
	dsv_budget_stop(b);
}

static void test_oldest_regions_dropped_whole(void **state)
{
	(void)state;
	uint64_t sizes[] = { 64 * MIB };
	dsv_budget *b = dsv_budget_start(sizes, 1, 16 * MIB, dropper, &rec);
	assert_non_null(b);
	/* regions 3, 5, 7, ... 19 whole: 9 regions, 18 MiB, past 16 */
	for (uint64_t r = 3; r < 21; r += 2)
		dsv_budget_add(b, 0, r * REG, REG);
	/* down to 14 MiB: the two added first */
	assert_int_equal(wait_drops(&rec, 2), 2);
	assert_int_equal(rec.file[0], 0);
	assert_int_equal(rec.off[0], 3 * REG);
	assert_int_equal(rec.len[0], REG);
	assert_int_equal(rec.off[1], 5 * REG);
	assert_int_equal(dsv_budget_held(b), 14 * MIB);
	dsv_budget_stop(b);
}

static void test_added_again_kept_longer(void **state)
{
	(void)state;
	uint64_t sizes[] = { 64 * MIB };
	dsv_budget *b = dsv_budget_start(sizes, 1, 8 * MIB, dropper, &rec);
	assert_non_null(b);
	for (uint64_t r = 0; r < 4; r++) /* half of each of 4 regions */
		dsv_budget_add(b, 0, r * REG, MIB);
	dsv_budget_add(b, 0, 0, 4096);                 /* region 0 again: now the newest */
	dsv_budget_add(b, 0, 4 * REG, 6 * MIB - 4096); /* regions 4-6: 10 MiB */
	/* down to 7 MiB: regions 1, 2, 3 (3 MiB) and not 0 */
	assert_int_equal(wait_drops(&rec, 3), 3);
	assert_int_equal(rec.off[0], 1 * REG);
	assert_int_equal(rec.off[1], 2 * REG);
	assert_int_equal(rec.off[2], 3 * REG);
	assert_int_equal(rec.held[0], MIB); /* what was counted in each */
	assert_int_equal(rec.held[2], MIB);
	assert_int_equal(dsv_budget_held(b), 7 * MIB);
	dsv_budget_stop(b);
}

static void test_forgotten_bytes_not_dropped(void **state)
{
	(void)state;
	uint64_t sizes[] = { 64 * MIB };
	dsv_budget *b = dsv_budget_start(sizes, 1, 8 * MIB, dropper, &rec);
	assert_non_null(b);
	dsv_budget_add(b, 0, 0, 4 * MIB);    /* regions 0, 1 */
	dsv_budget_forget(b, 0, 0, 3 * MIB); /* region 0 and half of 1 */
	assert_int_equal(dsv_budget_held(b), MIB);
	dsv_budget_add(b, 0, 10 * REG, 8 * MIB); /* regions 10-13: 9 MiB */
	/* region 1 is the oldest left; 0 was forgotten whole */
	assert_int_equal(wait_drops(&rec, 2), 2);
	assert_int_equal(rec.off[0], 1 * REG);
	assert_int_equal(rec.off[1], 10 * REG);
	assert_int_equal(dsv_budget_held(b), 6 * MIB);
	dsv_budget_stop(b);
}

static void test_region_counted_at_most_its_size(void **state)
{
	(void)state;
	uint64_t sizes[] = { 64 * MIB };
	dsv_budget *b = dsv_budget_start(sizes, 1, 8 * MIB, dropper, &rec);
	assert_non_null(b);
	for (int i = 0; i < 100; i++) /* the same pages served again and again */
		dsv_budget_add(b, 0, REG, REG);
	assert_int_equal(dsv_budget_held(b), REG);
	assert_int_equal(wait_drops(&rec, 0), 0);
	dsv_budget_stop(b);
}

static void test_regions_map_to_files(void **state)
{
	(void)state;
	/* 5 MiB (3 regions, the last short), an empty file, 4 MiB */
	uint64_t sizes[] = { 5 * MIB, 0, 4 * MIB };
	dsv_budget *b = dsv_budget_start(sizes, 3, 4 * MIB, dropper, &rec);
	assert_non_null(b);
	dsv_budget_add(b, 1, 0, MIB);            /* the empty file: nothing */
	dsv_budget_add(b, 7, 0, MIB);            /* no such file: nothing */
	dsv_budget_add(b, 0, 4 * MIB, 64 * MIB); /* clipped to its last MiB */
	assert_int_equal(dsv_budget_held(b), MIB);
	dsv_budget_add(b, 2, 0, 4 * MIB); /* 5 MiB: down to 3.5 */
	assert_int_equal(wait_drops(&rec, 2), 2);
	assert_int_equal(rec.file[0], 0);
	assert_int_equal(rec.off[0], 4 * MIB);
	assert_int_equal(rec.len[0], MIB); /* the short last region */
	assert_int_equal(rec.held[0], MIB);
	assert_int_equal(rec.file[1], 2);
	assert_int_equal(rec.off[1], 0);
	assert_int_equal(rec.len[1], REG);
	assert_int_equal(rec.held[1], REG);
	assert_int_equal(dsv_budget_held(b), REG);
	dsv_budget_stop(b);
}

static void test_lowered_budget_sheds(void **state)
{
	(void)state;
	uint64_t sizes[] = { 64 * MIB };
	dsv_budget *b = dsv_budget_start(sizes, 1, 32 * MIB, dropper, &rec);
	assert_non_null(b);
	for (uint64_t r = 0; r < 8; r++)
		dsv_budget_add(b, 0, r * REG, REG); /* 16 MiB, under 32 */
	dsv_budget_lower(b, 64 * MIB);              /* higher: ignored */
	assert_int_equal(wait_drops(&rec, 0), 0);
	assert_int_equal(dsv_budget_size(b), 32 * MIB);
	dsv_budget_lower(b, 8 * MIB); /* a reader's group's half: down to 7 MiB */
	assert_int_equal(wait_drops(&rec, 5), 5);
	assert_int_equal(rec.off[0], 0);
	assert_int_equal(rec.off[4], 4 * REG);
	assert_int_equal(dsv_budget_held(b), 6 * MIB);
	assert_int_equal(dsv_budget_size(b), 8 * MIB);
	dsv_budget_add(b, 0, 8 * REG, REG); /* 8 MiB: at the lowered budget, kept */
	assert_int_equal(wait_drops(&rec, 5), 5);
	dsv_budget_stop(b);
}

static void test_no_budget(void **state)
{
	(void)state;
	uint64_t sizes[] = { 64 * MIB };
	assert_null(dsv_budget_start(sizes, 1, 0, dropper, &rec));
	dsv_budget_add(NULL, 0, 0, MIB);
	dsv_budget_forget(NULL, 0, 0, MIB);
	dsv_budget_lower(NULL, MIB);
	assert_int_equal(dsv_budget_held(NULL), 0);
	assert_int_equal(dsv_budget_size(NULL), 0);
	dsv_budget_stop(NULL);
}

static void test_regions_grow_for_large_files(void **state)
{
	(void)state;
	uint64_t sizes[] = { 1ull << 40 }; /* 1 TiB: 2 MiB regions would be 512k */
	dsv_budget *b = dsv_budget_start(sizes, 1, 1ull << 30, dropper, &rec);
	assert_non_null(b);
	assert_true(dsv_budget_region(b) > REG);
	assert_true((1ull << 40) / dsv_budget_region(b) <= (256u << 10));
	dsv_budget_add(b, 0, (1ull << 40) - MIB, MIB);
	assert_int_equal(dsv_budget_held(b), MIB);
	dsv_budget_stop(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_under_budget_drops_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_oldest_regions_dropped_whole, setup, teardown),
		cmocka_unit_test_setup_teardown(test_added_again_kept_longer, setup, teardown),
		cmocka_unit_test_setup_teardown(test_forgotten_bytes_not_dropped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_region_counted_at_most_its_size, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_regions_map_to_files, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lowered_budget_sheds, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_budget, setup, teardown),
		cmocka_unit_test_setup_teardown(test_regions_grow_for_large_files, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
