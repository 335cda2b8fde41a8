/* The device-memory tier's index (src/gpu/gpu_tier.c): a chunk is found
 * only once committed; reservations never overlap, start aligned and stay
 * inside the tier; a full tier refuses and keeps what it holds; a chunk is
 * not reserved twice; a dropped reservation gives its room back, to the
 * bump when it was the last, else as a hole; the table grows past its first size; and threads
 * reserving at once get disjoint room. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdlib.h>

#include "gpu/gpu_tier.h"

static int src_a, src_b; /* two sources: their addresses */

static void test_find_after_commit(void **state)
{
	(void)state;
	dsv_gpu_tier *t = dsv_gpu_tier_new(1 << 20);
	uint64_t at = 99, at2;
	assert_non_null(t);
	assert_int_equal(dsv_gpu_tier_find(t, &src_a, 3, &at), 0);
	assert_int_equal(dsv_gpu_tier_reserve(t, &src_a, 3, 1000, &at), 0);
	assert_int_equal(at, 0);
	/* reserved, not yet there: not found, and not reserved again */
	assert_int_equal(dsv_gpu_tier_find(t, &src_a, 3, &at2), 0);
	assert_int_equal(dsv_gpu_tier_reserve(t, &src_a, 3, 1000, &at2), -1);
	dsv_gpu_tier_commit(t, &src_a, 3, 1);
	assert_int_equal(dsv_gpu_tier_find(t, &src_a, 3, &at2), 1);
	assert_int_equal(at2, at);
	/* held: not reserved again; the same chunk of another source is not it */
	assert_int_equal(dsv_gpu_tier_reserve(t, &src_a, 3, 1000, &at2), -1);
	assert_int_equal(dsv_gpu_tier_find(t, &src_b, 3, &at2), 0);
	assert_int_equal(dsv_gpu_tier_reserve(t, &src_b, 3, 10, &at2), 0);
	assert_int_equal(at2, 1024); /* after the first, on a 256-byte boundary */
	dsv_gpu_tier_commit(t, &src_b, 3, 1);
	dsv_gpu_tier_stats st;
	dsv_gpu_tier_get_stats(t, &st);
	assert_int_equal(st.cap, 1 << 20);
	assert_int_equal(st.used, 1034);
	assert_int_equal(st.chunks, 2);
	assert_int_equal(st.hits, 1);
	assert_int_equal(st.misses, 3);
	dsv_gpu_tier_free(t);
}

static void test_full_keeps_what_it_holds(void **state)
{
	(void)state;
	dsv_gpu_tier *t = dsv_gpu_tier_new(4096);
	uint64_t at;
	assert_int_equal(dsv_gpu_tier_reserve(t, &src_a, 0, 3000, &at), 0);
	dsv_gpu_tier_commit(t, &src_a, 0, 1);
	/* 3072 is the next start: 1024 left */
	assert_int_equal(dsv_gpu_tier_reserve(t, &src_a, 1, 1025, &at), -1);
	assert_int_equal(dsv_gpu_tier_reserve(t, &src_a, 1, 1024, &at), 0);
	assert_int_equal(at, 3072);
	dsv_gpu_tier_commit(t, &src_a, 1, 1);
	assert_int_equal(dsv_gpu_tier_reserve(t, &src_a, 2, 1, &at), -1);
	assert_int_equal(dsv_gpu_tier_reserve(t, &src_a, 3, 0, &at), -1); /* nothing to keep */
	assert_int_equal(dsv_gpu_tier_find(t, &src_a, 0, &at), 1);
	assert_int_equal(at, 0);
	assert_int_equal(dsv_gpu_tier_find(t, &src_a, 1, &at), 1);
	assert_int_equal(at, 3072);
	/* larger than the whole tier */
	dsv_gpu_tier *small = dsv_gpu_tier_new(100);
	assert_int_equal(dsv_gpu_tier_reserve(small, &src_a, 0, 101, &at), -1);
	assert_int_equal(dsv_gpu_tier_reserve(small, &src_a, 0, 100, &at), 0);
	dsv_gpu_tier_free(small);
	dsv_gpu_tier_free(t);
}

static void test_drop(void **state)
{
	(void)state;
	dsv_gpu_tier *t = dsv_gpu_tier_new(1 << 16);
	uint64_t a0, a1, a2;
	dsv_gpu_tier_stats st;
	assert_int_equal(dsv_gpu_tier_reserve(t, &src_a, 0, 500, &a0), 0);
	assert_int_equal(dsv_gpu_tier_reserve(t, &src_a, 1, 500, &a1), 0);
	/* the last one handed out, dropped: its room comes back */
	dsv_gpu_tier_commit(t, &src_a, 1, 0);
	dsv_gpu_tier_get_stats(t, &st);
	assert_int_equal(a1, 512);
	assert_int_equal(st.used, 512); /* up to where it started */
	assert_int_equal(dsv_gpu_tier_find(t, &src_a, 1, &a2), 0);
	/* a dropped chunk may be reserved again */
	assert_int_equal(dsv_gpu_tier_reserve(t, &src_a, 1, 500, &a2), 0);
	assert_int_equal(a2, a1);
	/* one not last, dropped: the chunk is not found, and its room is a
	 * hole the next reservations that fit take, aligned */
	dsv_gpu_tier_commit(t, &src_a, 0, 0);
	dsv_gpu_tier_commit(t, &src_a, 1, 1);
	dsv_gpu_tier_get_stats(t, &st);
	assert_int_equal(st.used, a2 + 500);
	assert_int_equal(st.chunks, 1);
	assert_int_equal(dsv_gpu_tier_find(t, &src_a, 0, &a0), 0);
	assert_int_equal(dsv_gpu_tier_find(t, &src_a, 1, &a0), 1);
	assert_int_equal(dsv_gpu_tier_reserve(t, &src_b, 0, 600, &a0), 0);
	assert_int_equal(a0, 1024); /* too large for the hole: from the bump */
	assert_int_equal(dsv_gpu_tier_reserve(t, &src_b, 1, 200, &a0), 0);
	assert_int_equal(a0, 0); /* the hole's start */
	assert_int_equal(dsv_gpu_tier_reserve(t, &src_b, 2, 256, &a0), 0);
	assert_int_equal(a0, 256); /* the hole's rest */
	assert_int_equal(dsv_gpu_tier_reserve(t, &src_b, 3, 1, &a0), 0);
	assert_int_equal(a0, 1792); /* the hole used up: from the bump */
	dsv_gpu_tier_get_stats(t, &st);
	assert_int_equal(st.used, 1793);
	/* a commit of what was never reserved does nothing */
	dsv_gpu_tier_commit(t, &src_a, 7, 1);
	assert_int_equal(dsv_gpu_tier_find(t, &src_a, 7, &a0), 0);
	dsv_gpu_tier_free(t);
}

static void test_many(void **state)
{
	(void)state;
	enum { N = 5000 };
	static uint64_t ats[N];
	dsv_gpu_tier *t = dsv_gpu_tier_new((uint64_t)N * 512);
	uint64_t at, end = 0;
	for (uint64_t c = 0; c < N; c++) {
		/* every third dropped: its room is the next one's */
		assert_int_equal(dsv_gpu_tier_reserve(t, c % 2 ? &src_a : &src_b, c, 300, &ats[c]),
				 0);
		assert_int_equal(ats[c], end);
		dsv_gpu_tier_commit(t, c % 2 ? &src_a : &src_b, c, c % 3 != 0);
		end = c % 3 ? ats[c] + 512 : ats[c];
	}
	for (uint64_t c = 0; c < N; c++) {
		int held = dsv_gpu_tier_find(t, c % 2 ? &src_a : &src_b, c, &at);
		assert_int_equal(held, c % 3 != 0);
		if (held)
			assert_int_equal(at, ats[c]);
		assert_int_equal(dsv_gpu_tier_find(t, c % 2 ? &src_b : &src_a, c, &at), 0);
	}
	dsv_gpu_tier_free(t);
}

enum { THREADS = 4, PER = 2000 };
typedef struct job {
	dsv_gpu_tier *t;
	int id;
	uint64_t at[PER];
	int got[PER];
} job;

static void *reserver(void *arg)
{
	job *j = arg;
	for (int i = 0; i < PER; i++) {
		/* every thread asks for every chunk: one of them gets each */
		uint64_t c = (uint64_t)(i * 7 + j->id) % PER;
		j->got[c] = dsv_gpu_tier_reserve(j->t, &src_a, c, 100 + c % 300, &j->at[c]) == 0;
		if (j->got[c])
			dsv_gpu_tier_commit(j->t, &src_a, c, 1);
	}
	return NULL;
}

static void test_threads(void **state)
{
	(void)state;
	static job jobs[THREADS];
	pthread_t th[THREADS];
	dsv_gpu_tier *t = dsv_gpu_tier_new(1 << 30);
	for (int k = 0; k < THREADS; k++) {
		jobs[k].t = t;
		jobs[k].id = k;
		pthread_create(&th[k], NULL, reserver, &jobs[k]);
	}
	for (int k = 0; k < THREADS; k++)
		pthread_join(th[k], NULL);
	/* each chunk reserved by exactly one thread, rooms disjoint */
	uint64_t *start = calloc(PER, sizeof(*start));
	for (uint64_t c = 0; c < PER; c++) {
		int owners = 0;
		for (int k = 0; k < THREADS; k++)
			if (jobs[k].got[c]) {
				owners++;
				start[c] = jobs[k].at[c];
			}
		assert_int_equal(owners, 1);
		uint64_t at;
		assert_int_equal(dsv_gpu_tier_find(t, &src_a, c, &at), 1);
		assert_int_equal(at, start[c]);
		assert_int_equal(at % 256, 0);
	}
	for (uint64_t c = 0; c < PER; c++)
		for (uint64_t d = c + 1; d < PER; d++)
			assert_true(start[c] + 100 + c % 300 <= start[d] ||
				    start[d] + 100 + d % 300 <= start[c]);
	free(start);
	dsv_gpu_tier_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_find_after_commit),
		cmocka_unit_test(test_full_keeps_what_it_holds),
		cmocka_unit_test(test_drop),
		cmocka_unit_test(test_many),
		cmocka_unit_test(test_threads),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
