/* Readahead streams (src/fs/prefetch.c): a sequential pass, even with the
 * pieces of each window arriving last first, queues the chunks ahead with
 * one tripwire per batch; reads of the pushed region's tripwire move the
 * stream on; shuffled reads queue nothing; two shards read side by side
 * are two streams; jobs the stream has read past are dropped. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fs/prefetch.h"
#include "view/view.h" /* white-box: the view as the read path sees it */

#define NCHUNKS 1000

typedef struct record {
	pthread_mutex_t mu;
	int n;
	uint64_t chunk[4096];
	int trip[4096];
	int block; /* handler waits while set */
	int calls; /* of the handler (batches) */
} record;

static int handler(void *ctx, uint32_t file, uint64_t first, uint64_t last, uint64_t trip)
{
	record *r = ctx;
	(void)file;
	for (;;) {
		pthread_mutex_lock(&r->mu);
		if (!r->block)
			break;
		pthread_mutex_unlock(&r->mu);
		usleep(1000);
	}
	for (uint64_t chunk = first; chunk <= last && r->n < 4096; chunk++) {
		r->chunk[r->n] = chunk;
		r->trip[r->n++] = chunk == trip;
	}
	r->calls++;
	pthread_mutex_unlock(&r->mu);
	return 0;
}

/* One view of NCHUNKS chunks of 1 MiB decoded: streams start after 32 MiB
 * read and run 8 chunks (8 MiB decoded) ahead. */
static dsv_view view = { .nchunks = NCHUNKS, .nsegs = NCHUNKS, .seg_raw = 1 << 20 };

static dsv_prefetch *start(record *r)
{
	static dsv_view *files[2] = { &view, NULL };
	memset(r, 0, sizeof(*r));
	pthread_mutex_init(&r->mu, NULL);
	return dsv_prefetch_start(files, NULL, 2, 2, 8 << 20, handler, r);
}

/* Waits until the handler has seen n jobs (or 5 s), then a little more to
 * catch any job too many. */
static int settle(record *r, int n)
{
	for (int i = 0; i < 5000; i++) {
		pthread_mutex_lock(&r->mu);
		int got = r->n;
		pthread_mutex_unlock(&r->mu);
		if (got >= n)
			break;
		usleep(1000);
	}
	usleep(20000);
	pthread_mutex_lock(&r->mu);
	int got = r->n;
	pthread_mutex_unlock(&r->mu);
	return got;
}

static int has(const record *r, uint64_t chunk)
{
	for (int i = 0; i < r->n; i++)
		if (r->chunk[i] == chunk)
			return 1;
	return 0;
}

static void test_sequential_queues_ahead(void **state)
{
	record r;
	(void)state;
	dsv_prefetch *p = start(&r);
	/* windows of two chunks, the later one first */
	for (uint64_t g = 0; g < 8; g += 2) {
		dsv_prefetch_hint(p, 0, g + 1, g + 1, 4 << 20);
		dsv_prefetch_hint(p, 0, g, g, 4 << 20);
	}
	assert_int_equal(settle(&r, 8), 8);
	for (uint64_t g = 8; g < 16; g++)
		assert_true(has(&r, g));
	int trips = 0;
	for (int i = 0; i < r.n; i++)
		if (r.trip[i]) {
			assert_int_equal(r.chunk[i], 12); /* the middle of 8..15 */
			trips++;
		}
	assert_int_equal(trips, 1);
	/* the reader finds 8..15 in the page cache, asks only for the
	 * tripwire's first page: the stream moves on */
	dsv_prefetch_hint(p, 0, 12, 12, 4096);
	assert_int_equal(settle(&r, 13), 13);
	for (uint64_t g = 16; g < 21; g++)
		assert_true(has(&r, g));
	assert_int_equal(dsv_prefetch_done(p), 13);
	/* the other file is not read ahead */
	dsv_prefetch_hint(p, 1, 0, 100, 400 << 20);
	assert_int_equal(settle(&r, 14), 13);
	dsv_prefetch_stop(p);
}

/* With batches of up to 4 for file 0 (the device's readahead), the same
 * pass hands 8..15 on in runs of consecutive chunks, no run longer than
 * 4, the tripwire still 12 (whichever run holds it). */
static void test_batches(void **state)
{
	static dsv_view *files[2] = { &view, NULL };
	static const unsigned batch[2] = { 4, 4 };
	record r;
	(void)state;
	memset(&r, 0, sizeof(r));
	pthread_mutex_init(&r.mu, NULL);
	r.block = 1; /* let the queue fill first */
	dsv_prefetch *p = dsv_prefetch_start(files, batch, 2, 2, 8 << 20, handler, &r);
	for (uint64_t g = 0; g < 8; g++)
		dsv_prefetch_hint(p, 0, g, g, 4 << 20);
	usleep(20000);
	pthread_mutex_lock(&r.mu);
	r.block = 0;
	pthread_mutex_unlock(&r.mu);
	assert_int_equal(settle(&r, 8), 8);
	for (uint64_t g = 8; g < 16; g++)
		assert_true(has(&r, g));
	/* in runs (one at a time would be 8 calls), the tripwire in its run */
	assert_true(r.calls <= 4);
	for (int i = 0; i < r.n; i++)
		assert_int_equal(r.trip[i], r.chunk[i] == 12);
	assert_int_equal(dsv_prefetch_done(p), 8);
	dsv_prefetch_stop(p);
}

static void test_shuffled_queues_nothing(void **state)
{
	record r;
	(void)state;
	dsv_prefetch *p = start(&r);
	srand(3);
	uint64_t rows[256];
	for (int i = 0; i < 256; i++)
		rows[i] = (uint64_t)rand() % NCHUNKS;
	/* a sorted batch (rows only 4 chunks apart on average): each read of
	 * about 1 MiB touches its row's chunk and, from the kernel's read
	 * around it, maybe the next */
	for (int i = 0; i < 256; i++)
		for (int j = i + 1; j < 256; j++)
			if (rows[j] < rows[i]) {
				uint64_t t = rows[i];
				rows[i] = rows[j];
				rows[j] = t;
			}
	for (int i = 0; i < 256; i++)
		dsv_prefetch_hint(p, 0, rows[i], rows[i] + (rows[i] % 2), 1 << 20);
	assert_int_equal(settle(&r, 1), 0);
	dsv_prefetch_stop(p);
}

static void test_two_shards_two_streams(void **state)
{
	record r;
	(void)state;
	dsv_prefetch *p = start(&r);
	for (uint64_t g = 0; g < 8; g++) {
		dsv_prefetch_hint(p, 0, g, g, 4 << 20);
		dsv_prefetch_hint(p, 0, 500 + g, 500 + g, 4 << 20);
	}
	assert_int_equal(settle(&r, 16), 16);
	assert_true(has(&r, 8) && has(&r, 15) && has(&r, 508) && has(&r, 515));
	dsv_prefetch_stop(p);
}

static void test_stale_jobs_dropped(void **state)
{
	record r;
	(void)state;
	dsv_prefetch *p = start(&r);
	pthread_mutex_lock(&r.mu);
	r.block = 1;
	pthread_mutex_unlock(&r.mu);
	for (uint64_t g = 0; g < 8; g++)
		dsv_prefetch_hint(p, 0, g, g, 4 << 20);
	/* both threads hold a job; the reader gets through 8..15 meanwhile */
	usleep(20000);
	dsv_prefetch_hint(p, 0, 8, 15, 32 << 20);
	pthread_mutex_lock(&r.mu);
	r.block = 0;
	pthread_mutex_unlock(&r.mu);
	int n = settle(&r, 8);
	/* only the two jobs in hand when the stream moved, then 16.. */
	int behind = 0;
	for (int i = 0; i < n; i++)
		if (r.chunk[i] < 16) {
			assert_true(r.chunk[i] == 8 || r.chunk[i] == 9);
			behind++;
		}
	assert_true(behind <= 2);
	assert_true(has(&r, 16) && has(&r, 23));
	dsv_prefetch_stop(p);
}

/* A second pass over the file from its start (the next epoch, its pages
 * evicted) is read ahead again: it is not taken for the first pass, which
 * queued everything up to its end already. */
static void test_second_pass(void **state)
{
	record r;
	(void)state;
	dsv_prefetch *p = start(&r);
	for (uint64_t g = 0; g < 40; g++)
		dsv_prefetch_hint(p, 0, g, g, 4 << 20);
	/* (jobs the reader passed before a thread took them are dropped) */
	for (int i = 0; i < 5000; i++) {
		pthread_mutex_lock(&r.mu);
		int done = has(&r, 47);
		pthread_mutex_unlock(&r.mu);
		if (done)
			break;
		usleep(1000);
	}
	int n = settle(&r, 0);
	assert_true(has(&r, 47));
	for (uint64_t g = 0; g < 8; g++)
		dsv_prefetch_hint(p, 0, g, g, 4 << 20);
	assert_true(settle(&r, n + 8) >= n + 8);
	int again = 0;
	for (int i = n; i < r.n; i++) {
		assert_true(r.chunk[i] >= 8 && r.chunk[i] < 16);
		again++;
	}
	assert_int_equal(again, 8);
	/* the first pass's stream is still there for a reader at its head */
	dsv_prefetch_hint(p, 0, 40, 44, 16 << 20);
	assert_true(settle(&r, n + 9) >= n + 9);
	assert_true(r.chunk[r.n - 1] >= 48);
	dsv_prefetch_stop(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sequential_queues_ahead),
		cmocka_unit_test(test_batches),
		cmocka_unit_test(test_shuffled_queues_nothing),
		cmocka_unit_test(test_two_shards_two_streams),
		cmocka_unit_test(test_stale_jobs_dropped),
		cmocka_unit_test(test_second_pass),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
