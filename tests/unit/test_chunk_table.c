/* The table of things by (key, chunk) that the chunk cache and the GPU
 * tier share: finds what was added, through doublings of its buckets;
 * forgets what was removed (from the head, middle and end of a chain);
 * keys that differ only in key or only in chunk are different things;
 * fini frees every thing still in it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>

#include "common/chunk_table.h"

typedef struct thing {
	dsv_chunk_link link;
	int id;
} thing;

static int freed;

static void free_thing(void *p)
{
	freed++;
	free(p);
}

static thing *add(dsv_chunk_table *t, uint64_t key, uint64_t chunk, int id)
{
	thing *x = malloc(sizeof(*x));
	assert_non_null(x);
	x->link.key = key;
	x->link.chunk = chunk;
	x->id = id;
	dsv_chunk_table_add(t, &x->link);
	return x;
}

static int id_of(const dsv_chunk_table *t, uint64_t key, uint64_t chunk)
{
	const thing *x = (const thing *)dsv_chunk_table_find(t, key, chunk);
	return x ? x->id : -1;
}

static void test_find_through_growth(void **state)
{
	(void)state;
	dsv_chunk_table t;
	assert_int_equal(dsv_chunk_table_init(&t, 4), 0);
	for (int i = 0; i < 1000; i++)
		add(&t, (uint64_t)(i % 3), (uint64_t)(i / 3), i);
	assert_int_equal(t.count, 1000);
	assert_true(t.mask + 1 >= 1000); /* doubled as it filled */
	for (int i = 0; i < 1000; i++)
		assert_int_equal(id_of(&t, (uint64_t)(i % 3), (uint64_t)(i / 3)), i);
	assert_int_equal(id_of(&t, 3, 0), -1);
	assert_int_equal(id_of(&t, 0, 334), -1);
	freed = 0;
	dsv_chunk_table_fini(&t, free_thing);
	assert_int_equal(freed, 1000);
}

static void test_remove(void **state)
{
	(void)state;
	dsv_chunk_table t;
	thing *x[64];
	/* one bucket: every thing on one chain */
	assert_int_equal(dsv_chunk_table_init(&t, 1), 0);
	for (int i = 0; i < 3; i++)
		x[i] = add(&t, 7, (uint64_t)i, i);
	dsv_chunk_table_remove(&t, &x[1]->link);
	free(x[1]);
	assert_int_equal(id_of(&t, 7, 1), -1);
	assert_int_equal(id_of(&t, 7, 0), 0);
	assert_int_equal(id_of(&t, 7, 2), 2);
	for (int i = 3; i < 64; i++)
		x[i] = add(&t, 7, (uint64_t)i, i);
	for (int i = 0; i < 64; i += 2) {
		dsv_chunk_table_remove(&t, &x[i]->link);
		free(x[i]);
	}
	assert_int_equal(t.count, 31);
	for (int i = 2; i < 64; i++)
		assert_int_equal(id_of(&t, 7, (uint64_t)i), i % 2 ? i : -1);
	freed = 0;
	dsv_chunk_table_fini(&t, free_thing);
	assert_int_equal(freed, 31);
	dsv_chunk_table_fini(&t, free_thing); /* again: nothing left */
	assert_int_equal(freed, 31);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_find_through_growth),
		cmocka_unit_test(test_remove),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
