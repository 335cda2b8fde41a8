/* Chunk cache: hits, single fill under concurrency, failures never cached,
 * budget and eviction (2Q: probation FIFO, ghosts, main LRU), buffer reuse,
 * budget 0. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache/cache.h"
#include "dsview/dsview.h"

typedef struct fill_ctx {
	atomic_int calls;
	atomic_int fail_next; /* fail this many fills */
	int slow_us;
	const void *last_arg; /* the arg of the last get that filled */
} fill_ctx;

static int fill(void *ctx, const void *arg, uint32_t view, uint64_t chunk, void *buf, size_t size)
{
	fill_ctx *f = ctx;
	if (arg)
		f->last_arg = arg;
	atomic_fetch_add(&f->calls, 1);
	if (f->slow_us)
		usleep((useconds_t)f->slow_us);
	if (atomic_load(&f->fail_next) > 0) {
		atomic_fetch_sub(&f->fail_next, 1);
		return DSV_ERR_CHECKSUM;
	}
	memset(buf, (int)(view * 16 + chunk) & 0xff, size);
	return 0;
}

static void test_hit_and_miss(void **state)
{
	fill_ctx f = { 0 };
	dsv_cache *c = dsv_cache_create(1 << 20, fill, &f);
	dsv_cache_entry *e, *e2;
	dsv_cache_stats st;
	(void)state;
	assert_int_equal(dsv_cache_get(c, 1, 2, 1000, NULL, &e), 0);
	assert_int_equal(((const unsigned char *)dsv_cache_data(e))[999], 18);
	assert_int_equal(dsv_cache_size(e), 1000);
	assert_int_equal(dsv_cache_get(c, 1, 2, 1000, NULL, &e2), 0);
	assert_ptr_equal(e, e2);
	dsv_cache_put(c, e);
	dsv_cache_put(c, e2);
	assert_int_equal(dsv_cache_get(c, 2, 2, 1000, NULL, &e), 0); /* other view, same chunk */
	assert_int_equal(((const unsigned char *)dsv_cache_data(e))[0], 34);
	dsv_cache_put(c, e);
	dsv_cache_get_stats(c, &st);
	assert_int_equal(st.misses, 2);
	assert_int_equal(st.hits, 1);
	assert_int_equal(st.bytes_used, 2000);
	assert_int_equal(f.calls, 2);
	dsv_cache_destroy(c);
}

static void test_failure_not_cached(void **state)
{
	fill_ctx f = { 0 };
	dsv_cache *c = dsv_cache_create(1 << 20, fill, &f);
	dsv_cache_entry *e;
	dsv_cache_stats st;
	(void)state;
	f.fail_next = 1;
	assert_int_equal(dsv_cache_get(c, 0, 7, 100, NULL, &e), DSV_ERR_CHECKSUM);
	assert_null(e);
	dsv_cache_get_stats(c, &st);
	assert_int_equal(st.bytes_used, 0);
	assert_int_equal(st.entries, 0);
	assert_int_equal(dsv_cache_get(c, 0, 7, 100, NULL, &e), 0); /* retry succeeds */
	dsv_cache_put(c, e);
	assert_int_equal(f.calls, 2);
	dsv_cache_destroy(c);
}

static void get_put(dsv_cache *c, uint32_t view, uint64_t chunk, size_t size)
{
	dsv_cache_entry *e;
	assert_int_equal(dsv_cache_get(c, view, chunk, size, NULL, &e), 0);
	assert_int_equal(((const unsigned char *)dsv_cache_data(e))[size - 1],
			 (view * 16 + chunk) & 0xff);
	dsv_cache_put(c, e);
}

static void test_eviction_within_budget(void **state)
{
	fill_ctx f = { 0 };
	dsv_cache *c = dsv_cache_create(10 * 1000, fill, &f);
	dsv_cache_stats st;
	(void)state;
	for (uint64_t k = 0; k < 100; k++) {
		get_put(c, 0, k, 1000);
		dsv_cache_get_stats(c, &st);
		assert_true(st.bytes_used <= 10 * 1000);
	}
	assert_int_equal(st.evictions, 90);
	assert_int_equal(st.entries, 10);
	assert_int_equal(st.bytes_probation, 10 * 1000); /* nothing was reused */
	/* the newest are still there; the oldest is not, and is a ghost */
	get_put(c, 0, 99, 1000);
	assert_int_equal(f.calls, 100);
	get_put(c, 0, 0, 1000);
	assert_int_equal(f.calls, 101);
	dsv_cache_get_stats(c, &st);
	assert_int_equal(st.ghost_hits, 1);
	dsv_cache_destroy(c);
}

/* Chunks read again after falling out of probation go to the main LRU,
 * and a scan of chunks read once, longer than the budget, leaves them. */
static void test_scan_does_not_flush_reused_chunks(void **state)
{
	fill_ctx f = { 0 };
	dsv_cache *c = dsv_cache_create(10 * 1000, fill, &f);
	dsv_cache_stats st;
	(void)state;
	for (uint64_t k = 0; k < 6; k++) /* a working set ... */
		get_put(c, 0, k, 1000);
	for (uint64_t k = 100; k < 110; k++) /* ... pushed out by others ... */
		get_put(c, 0, k, 1000);
	for (uint64_t k = 0; k < 6; k++) /* ... and read again: ghost hits */
		get_put(c, 0, k, 1000);
	dsv_cache_get_stats(c, &st);
	assert_int_equal(st.ghost_hits, 6);
	int calls = f.calls;
	for (uint64_t k = 1000; k < 1100; k++) /* a long scan */
		get_put(c, 0, k, 1000);
	assert_int_equal(f.calls, calls + 100);
	dsv_cache_get_stats(c, &st);
	assert_int_equal(st.bytes_probation, 10 * 1000 - 6 * 1000); /* IN kept the rest */
	for (uint64_t k = 0; k < 6; k++) /* the reused chunks survived it */
		get_put(c, 0, k, 1000);
	assert_int_equal(f.calls, calls + 100); /* plain LRU would have lost them */
	dsv_cache_get_stats(c, &st);
	assert_true(st.bytes_used <= 10 * 1000);
	/* ghosts are bounded: after a scan longer than the ghost ring (1024
	 * keys at this budget), the oldest scanned keys are forgotten */
	for (uint64_t k = 2000; k < 4000; k++)
		get_put(c, 0, k, 1000);
	dsv_cache_get_stats(c, &st);
	uint64_t gh = st.ghost_hits;
	get_put(c, 0, 2000, 1000); /* forgotten: a plain miss */
	get_put(c, 0, 3990, 1000); /* remembered: a ghost hit */
	dsv_cache_get_stats(c, &st);
	assert_int_equal(st.ghost_hits, gh + 1);
	dsv_cache_destroy(c);
}

/* Chunks a scan reads once recycle their buffers well under the budget:
 * past the few it keeps, each miss takes over the oldest idle one's buffer
 * (its key a ghost: read again, it comes back), never a held one's; plain
 * gets still fill the budget with buffers of their own. */
static void test_read_once_recycled_under_budget(void **state)
{
	fill_ctx f = { 0 };
	dsv_cache *c = dsv_cache_create(1 << 30, fill, &f);
	dsv_cache_stats st;
	dsv_cache_entry *e, *held;
	(void)state;
	assert_int_equal(dsv_cache_get_once(c, 0, 0, 4096, NULL, &held), 0);
	for (uint64_t k = 1; k < 400; k++) {
		assert_int_equal(dsv_cache_get_once(c, 0, k, 4096, NULL, &e), 0);
		assert_int_equal(((const unsigned char *)dsv_cache_data(e))[4095], k & 0xff);
		dsv_cache_put(c, e);
	}
	dsv_cache_get_stats(c, &st);
	assert_int_equal(st.fills, 400);
	assert_true(st.reuses >= 400 - 128);
	assert_true(st.entries <= 128);
	assert_int_equal(st.evictions, st.reuses);
	/* the held one stays, whole */
	assert_int_equal(((const unsigned char *)dsv_cache_data(held))[0], 0);
	assert_int_equal(dsv_cache_get(c, 0, 0, 4096, NULL, &e), 0);
	assert_ptr_equal(e, held);
	dsv_cache_put(c, e);
	dsv_cache_put(c, held);
	/* chunk 1 fell out: read again, it is a ghost hit, filled anew */
	uint64_t ghosts = st.ghost_hits, fills = st.fills;
	get_put(c, 0, 1, 4096);
	dsv_cache_get_stats(c, &st);
	assert_int_equal(st.ghost_hits, ghosts + 1);
	assert_int_equal(st.fills, fills + 1);
	/* plain gets under the budget take no one's buffer */
	uint64_t reuses = st.reuses;
	for (uint64_t k = 0; k < 200; k++)
		get_put(c, 1, k, 4096);
	dsv_cache_get_stats(c, &st);
	assert_int_equal(st.reuses, reuses);
	dsv_cache_destroy(c);
}

/* Past the budget, a miss takes over the buffer of the chunk it evicts. */
static void test_buffers_recycled(void **state)
{
	fill_ctx f = { 0 };
	dsv_cache *c = dsv_cache_create(8 * 4096, fill, &f);
	dsv_cache_stats st;
	dsv_cache_entry *e;
	(void)state;
	for (uint64_t k = 0; k < 50; k++)
		get_put(c, 0, k, 4096);
	dsv_cache_get_stats(c, &st);
	assert_int_equal(st.fills, 50);
	assert_int_equal(st.reuses, 50 - 8); /* all but the first budget's worth */
	/* a much smaller chunk does not take a big buffer, nor a bigger one a
	 * small buffer */
	uint64_t before = st.reuses;
	get_put(c, 1, 0, 100);
	get_put(c, 1, 1, 8192);
	dsv_cache_get_stats(c, &st);
	assert_int_equal(st.reuses, before);
	/* a reused buffer holds the new chunk's bytes everywhere */
	assert_int_equal(dsv_cache_get(c, 0, 500, 4096, NULL, &e), 0);
	const unsigned char *d = dsv_cache_data(e);
	for (size_t i = 0; i < 4096; i++)
		assert_int_equal(d[i], (500) & 0xff);
	dsv_cache_put(c, e);
	dsv_cache_destroy(c);
}

static void test_held_entries_not_evicted(void **state)
{
	fill_ctx f = { 0 };
	dsv_cache *c = dsv_cache_create(1000, fill, &f);
	dsv_cache_entry *held, *e;
	(void)state;
	assert_int_equal(dsv_cache_get(c, 0, 1, 1000, NULL, &held), 0);
	for (uint64_t k = 2; k < 10; k++) {
		assert_int_equal(dsv_cache_get(c, 0, k, 1000, NULL, &e), 0);
		dsv_cache_put(c, e);
	}
	assert_int_equal(((const unsigned char *)dsv_cache_data(held))[500], 1);
	dsv_cache_put(c, held);
	dsv_cache_destroy(c);
}

static void test_budget_zero(void **state)
{
	fill_ctx f = { 0 };
	dsv_cache *c = dsv_cache_create(0, fill, &f);
	dsv_cache_entry *e;
	dsv_cache_stats st;
	(void)state;
	for (int i = 0; i < 3; i++) {
		assert_int_equal(dsv_cache_get(c, 0, 5, 4096, NULL, &e), 0);
		dsv_cache_put(c, e);
	}
	dsv_cache_get_stats(c, &st);
	assert_int_equal(st.bytes_used, 0);
	assert_int_equal(f.calls, 3);
	dsv_cache_destroy(c);
}

typedef struct worker_arg {
	dsv_cache *c;
	int rc;
	unsigned char first;
} worker_arg;

static void *worker(void *p)
{
	worker_arg *a = p;
	dsv_cache_entry *e;
	a->rc = dsv_cache_get(a->c, 3, 42, 1 << 16, NULL, &e);
	if (!a->rc) {
		a->first = ((const unsigned char *)dsv_cache_data(e))[0];
		dsv_cache_put(a->c, e);
	}
	return NULL;
}

static void test_concurrent_misses_fill_once(void **state)
{
	fill_ctx f = { .slow_us = 50000 };
	dsv_cache *c = dsv_cache_create(1 << 20, fill, &f);
	pthread_t t[16];
	worker_arg a[16];
	(void)state;
	for (int i = 0; i < 16; i++) {
		a[i] = (worker_arg){ .c = c };
		pthread_create(&t[i], NULL, worker, &a[i]);
	}
	for (int i = 0; i < 16; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(a[i].rc, 0);
		assert_int_equal(a[i].first, (3 * 16 + 42) & 0xff);
	}
	assert_int_equal(f.calls, 1);
	dsv_cache_destroy(c);
}

/* peek: NULL for what is not there (nothing filled), the entry when it
 * is ready, and for a fill under way, its end: the entry when it went
 * well, NULL when it failed (the failure is not cached). */
static void test_peek_joins_a_fill_under_way(void **state)
{
	fill_ctx f = { .slow_us = 100000 };
	dsv_cache *c = dsv_cache_create(1 << 20, fill, &f);
	worker_arg a = { .c = c };
	pthread_t t;
	dsv_cache_entry *e;
	(void)state;
	assert_null(dsv_cache_peek(c, 3, 42));
	assert_int_equal(f.calls, 0);
	for (int fail = 1; fail >= 0; fail--) { /* a failed fill is not cached: then a good one */
		int before = atomic_load(&f.calls);
		atomic_store(&f.fail_next, fail);
		pthread_create(&t, NULL, worker, &a);
		while (atomic_load(&f.calls) == before) /* the worker's fill has begun */
			usleep(1000);
		e = dsv_cache_peek(c, 3, 42);
		pthread_join(t, NULL);
		if (fail) {
			assert_null(e);
			assert_int_equal(a.rc, DSV_ERR_CHECKSUM);
		} else {
			assert_non_null(e);
			assert_int_equal(a.rc, 0);
			assert_int_equal(((const unsigned char *)dsv_cache_data(e))[0],
					 (3 * 16 + 42) & 0xff);
			dsv_cache_put(c, e);
		}
	}
	assert_int_equal(f.calls, 2);
	dsv_cache_destroy(c);
}

static void test_concurrent_failure_shared_then_retry(void **state)
{
	fill_ctx f = { .slow_us = 50000, .fail_next = 1 };
	dsv_cache *c = dsv_cache_create(1 << 20, fill, &f);
	pthread_t t[8];
	worker_arg a[8];
	dsv_cache_entry *e;
	(void)state;
	for (int i = 0; i < 8; i++) {
		a[i] = (worker_arg){ .c = c };
		pthread_create(&t[i], NULL, worker, &a[i]);
	}
	int failed = 0;
	for (int i = 0; i < 8; i++) {
		pthread_join(t[i], NULL);
		failed += a[i].rc == DSV_ERR_CHECKSUM;
		assert_true(a[i].rc == 0 || a[i].rc == DSV_ERR_CHECKSUM);
	}
	assert_true(failed >= 1);
	assert_int_equal(dsv_cache_get(c, 3, 42, 1 << 16, NULL, &e), 0);
	dsv_cache_put(c, e);
	dsv_cache_destroy(c);
}

static void *stress(void *p)
{
	dsv_cache *c = p;
	unsigned seed = (unsigned)(uintptr_t)pthread_self();
	for (int i = 0; i < 20000; i++) {
		dsv_cache_entry *e;
		uint64_t k = (uint64_t)(rand_r(&seed) % 64);
		if (dsv_cache_get(c, 1, k, 512, NULL, &e) == 0) {
			const unsigned char *d = dsv_cache_data(e);
			if (d[0] != ((16 + k) & 0xff) || d[511] != d[0])
				abort();
			dsv_cache_put(c, e);
		}
	}
	return NULL;
}

static void test_stress_small_budget(void **state)
{
	fill_ctx f = { 0 };
	dsv_cache *c = dsv_cache_create(8 * 512, fill, &f);
	pthread_t t[8];
	dsv_cache_stats st;
	(void)state;
	for (int i = 0; i < 8; i++)
		pthread_create(&t[i], NULL, stress, c);
	for (int i = 0; i < 8; i++)
		pthread_join(t[i], NULL);
	dsv_cache_get_stats(c, &st);
	assert_true(st.bytes_used <= 8 * 512);
	assert_int_equal(st.hits + st.misses, 8 * 20000);
	dsv_cache_destroy(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hit_and_miss),
		cmocka_unit_test(test_failure_not_cached),
		cmocka_unit_test(test_eviction_within_budget),
		cmocka_unit_test(test_scan_does_not_flush_reused_chunks),
		cmocka_unit_test(test_buffers_recycled),
		cmocka_unit_test(test_held_entries_not_evicted),
		cmocka_unit_test(test_budget_zero),
		cmocka_unit_test(test_read_once_recycled_under_budget),
		cmocka_unit_test(test_concurrent_misses_fill_once),
		cmocka_unit_test(test_concurrent_failure_shared_then_retry),
		cmocka_unit_test(test_peek_joins_a_fill_under_way),
		cmocka_unit_test(test_stress_small_budget),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
