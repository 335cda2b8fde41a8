/* Sampler hints' queue (engine/hints.c): every row reaches the function once,
 * in order; past the capacity the oldest waiting hints are dropped; the
 * counters add up. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "dsview/dsview.h"
#include "engine/hints.h"

typedef struct rec {
	pthread_mutex_t mu;
	uint64_t rows[4096];
	uint32_t files[4096];
	size_t n;
	int gate; /* while set, the function waits: the queue fills */
	int fail_odd;
} rec;

static int record(void *ctx, uint32_t file, uint64_t row)
{
	rec *r = ctx;
	while (__atomic_load_n(&r->gate, __ATOMIC_ACQUIRE))
		usleep(100);
	pthread_mutex_lock(&r->mu);
	r->files[r->n] = file;
	r->rows[r->n++] = row;
	pthread_mutex_unlock(&r->mu);
	return r->fail_odd && (row & 1) ? DSV_ERR_IO : 0;
}

static void wait_done(dsv_hints *h, uint64_t want)
{
	dsv_hints_stats st;
	for (int i = 0; i < 5000; i++) {
		dsv_hints_get_stats(h, &st);
		if (st.stored + st.failed + st.dropped >= want)
			return;
		usleep(1000);
	}
	fail_msg("hints not done");
}

static void test_in_order_once(void **state)
{
	static rec r = { .mu = PTHREAD_MUTEX_INITIALIZER };
	uint64_t rows[100];
	(void)state;
	for (int i = 0; i < 100; i++)
		rows[i] = (uint64_t)(i * 7);
	dsv_hints *h = dsv_hints_start(1, 1000, record, &r);
	assert_non_null(h);
	assert_int_equal(dsv_hints_add(h, 3, rows, 100), 0);
	wait_done(h, 100);
	dsv_hints_stop(h);
	assert_int_equal(r.n, 100);
	for (int i = 0; i < 100; i++) {
		assert_int_equal(r.rows[i], rows[i]);
		assert_int_equal(r.files[i], 3);
	}
}

static void test_full_queue_drops_oldest(void **state)
{
	static rec r = { .mu = PTHREAD_MUTEX_INITIALIZER };
	uint64_t rows[50];
	dsv_hints_stats st;
	(void)state;
	for (int i = 0; i < 50; i++)
		rows[i] = (uint64_t)i;
	r.gate = 1;
	dsv_hints *h = dsv_hints_start(1, 10, record, &r);
	assert_non_null(h);
	/* the thread may have taken one row before the gate held it */
	uint64_t dropped = dsv_hints_add(h, 0, rows, 50);
	assert_true(dropped == 40 || dropped == 39);
	__atomic_store_n(&r.gate, 0, __ATOMIC_RELEASE);
	wait_done(h, 50);
	dsv_hints_get_stats(h, &st);
	dsv_hints_stop(h);
	assert_int_equal(st.queued, 50);
	assert_int_equal(st.dropped, dropped);
	assert_int_equal(st.stored + st.dropped, 50);
	/* what was kept is the newest: the last rows, in order */
	assert_int_equal(r.rows[r.n - 1], 49);
	for (size_t i = 1; i < r.n; i++)
		assert_true(r.rows[i] > r.rows[i - 1]);
}

static void test_failures_counted(void **state)
{
	static rec r = { .mu = PTHREAD_MUTEX_INITIALIZER, .fail_odd = 1 };
	uint64_t rows[20];
	dsv_hints_stats st;
	(void)state;
	for (int i = 0; i < 20; i++)
		rows[i] = (uint64_t)i;
	dsv_hints *h = dsv_hints_start(2, 100, record, &r);
	assert_non_null(h);
	dsv_hints_add(h, 1, rows, 20);
	wait_done(h, 20);
	dsv_hints_get_stats(h, &st);
	dsv_hints_stop(h);
	assert_int_equal(st.stored, 10);
	assert_int_equal(st.failed, 10);
	dsv_hints_stop(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_in_order_once),
		cmocka_unit_test(test_full_queue_drops_oldest),
		cmocka_unit_test(test_failures_counted),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
