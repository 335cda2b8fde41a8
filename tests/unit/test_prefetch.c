/* Readahead streams (src/engine/prefetch.c): a sequential pass, even with the
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

#include "engine/prefetch.h"
#include "view/view.h" /* white-box: the view as the read path sees it */

#define NCHUNKS 1000

typedef struct record {
	pthread_mutex_t mu;
	int n;
	uint64_t chunk[4096];
	int trip[4096];
	int block; /* handler waits while set */
	int calls; /* of the handler (batches) */
	int ndrops;
	uint32_t drop_file[256];
	uint64_t drop_first[256], drop_last[256];
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

static void dropper(void *ctx, uint32_t file, uint64_t first, uint64_t last)
{
	record *r = ctx;
	pthread_mutex_lock(&r->mu);
	if (r->ndrops < 256) {
		r->drop_file[r->ndrops] = file;
		r->drop_first[r->ndrops] = first;
		r->drop_last[r->ndrops++] = last;
	}
	pthread_mutex_unlock(&r->mu);
}

/* One view of NCHUNKS chunks of 1 MiB decoded and CHUNK_OUT bytes of
 * output, of which each read (hint below) reads a part: streams start
 * after 32 MiB read and run 8 chunks (8 MiB decoded) ahead. */
#define CHUNK_OUT (64ull << 20)
static dsv_view view = {
	.nchunks = NCHUNKS, .nsegs = NCHUNKS, .seg_raw = 1 << 20, .nbytes = NCHUNKS * CHUNK_OUT
};

/* A read of bytes from the start of chunk first that touched first..last. */
static void hint(dsv_prefetch *p, uint32_t file, uint64_t first, uint64_t last, uint64_t bytes)
{
	dsv_prefetch_hint(p, file, first, last, first * CHUNK_OUT, bytes);
}

static dsv_prefetch *start(record *r)
{
	static dsv_view *files[2] = { &view, NULL };
	memset(r, 0, sizeof(*r));
	pthread_mutex_init(&r->mu, NULL);
	return dsv_prefetch_start(files, NULL, NULL, NULL, 2, 2, 8 << 20, handler, dropper, r);
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
		hint(p, 0, g + 1, g + 1, 4 << 20);
		hint(p, 0, g, g, 4 << 20);
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
	hint(p, 0, 12, 12, 4096);
	assert_int_equal(settle(&r, 13), 13);
	for (uint64_t g = 16; g < 21; g++)
		assert_true(has(&r, g));
	assert_int_equal(dsv_prefetch_done(p), 13);
	/* the other file is not read ahead */
	hint(p, 1, 0, 100, 400 << 20);
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
	dsv_prefetch *p = dsv_prefetch_start(files, batch, NULL, NULL, 2, 2, 8 << 20, handler, NULL,
					     &r);
	for (uint64_t g = 0; g < 8; g++)
		hint(p, 0, g, g, 4 << 20);
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
		hint(p, 0, rows[i], rows[i] + (rows[i] % 2), 1 << 20);
	assert_int_equal(settle(&r, 1), 0);
	dsv_prefetch_stop(p);
}

static void test_two_shards_two_streams(void **state)
{
	record r;
	(void)state;
	dsv_prefetch *p = start(&r);
	for (uint64_t g = 0; g < 8; g++) {
		hint(p, 0, g, g, 4 << 20);
		hint(p, 0, 500 + g, 500 + g, 4 << 20);
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
		hint(p, 0, g, g, 4 << 20);
	/* both threads hold a job; the reader gets through 8..15 meanwhile */
	usleep(20000);
	hint(p, 0, 8, 15, 32 << 20);
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
		hint(p, 0, g, g, 4 << 20);
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
		hint(p, 0, g, g, 4 << 20);
	assert_true(settle(&r, n + 8) >= n + 8);
	int again = 0;
	for (int i = n; i < r.n; i++) {
		assert_true(r.chunk[i] >= 8 && r.chunk[i] < 16);
		again++;
	}
	assert_int_equal(again, 8);
	/* the first pass's stream is still there for a reader at its head */
	hint(p, 0, 40, 44, 16 << 20);
	assert_true(settle(&r, n + 9) >= n + 9);
	assert_true(r.chunk[r.n - 1] >= 48);
	dsv_prefetch_stop(p);
}

/* The highest chunk dropped from file (-1: none), after the threads
 * have had time to take what was queued. */
static long long dropped_to(record *r, uint32_t file)
{
	long long hi = -1;
	usleep(50000);
	pthread_mutex_lock(&r->mu);
	for (int i = 0; i < r->ndrops; i++) {
		assert_true(r->drop_first[i] <= r->drop_last[i]);
		if (r->drop_file[i] == file && (long long)r->drop_last[i] > hi)
			hi = (long long)r->drop_last[i];
	}
	pthread_mutex_unlock(&r->mu);
	return hi;
}

/* Readahead of files (2) that drops behind its streams in file 0 only. */
static dsv_prefetch *start_dropping(record *r, dsv_view *const *files)
{
	static const unsigned char drop[2] = { 1, 0 };
	memset(r, 0, sizeof(*r));
	pthread_mutex_init(&r->mu, NULL);
	return dsv_prefetch_start(files, NULL, drop, NULL, 2, 2, 8 << 20, handler, dropper, r);
}

/* Where drop is set (a mount under a memory limit), a pass drops the
 * chunks more than its window (8 chunks ahead, 4 of slack) behind its
 * head, in runs, each chunk once; not where it is not set. */
static void test_drop_behind(void **state)
{
	static dsv_view *files[2] = { &view, &view };
	record r;
	(void)state;
	dsv_prefetch *p = start_dropping(&r, files);
	for (uint64_t g = 0; g < 60; g++) {
		hint(p, 0, g, g, 4 << 20);
		hint(p, 1, g, g, 4 << 20);
	}
	long long hi = dropped_to(&r, 0);
	assert_true(hi >= 40 && hi < 59 - 12);
	assert_int_equal(dropped_to(&r, 1), -1);
	dsv_prefetch_stop(p); /* no drop comes after this */
	/* runs that follow one another from the stream's start, in whatever
	 * order the threads reported them */
	uint64_t next = 0;
	for (int k = 0; k < r.ndrops; k++) {
		int i = 0;
		while (i < r.ndrops && r.drop_first[i] != next)
			i++;
		assert_true(i < r.ndrops); /* a gap, or a chunk dropped twice */
		assert_true(r.drop_last[i] - r.drop_first[i] + 1 >= 5);
		next = r.drop_last[i] + 1;
	}
}

/* A second reader a little behind the first in the same part (an
 * established stream within a window below what would go) holds the
 * first's drops until it moves on; a few stray reads do not. */
static void test_drop_held_by_slower_reader(void **state)
{
	static dsv_view *files[2] = { &view, NULL };
	record r;
	(void)state;
	dsv_prefetch *p = start_dropping(&r, files);
	for (uint64_t g = 0; g < 40; g++)
		hint(p, 0, g, g, 4 << 20);
	long long first = dropped_to(&r, 0);
	assert_true(first >= 20 && first < 39 - 12);
	for (uint64_t g = 20; g < 32; g++) /* the slower reader: 48 MiB */
		hint(p, 0, g, g, 4 << 20);
	hint(p, 0, 900, 900, 4096); /* a stray read */
	for (uint64_t g = 40; g < 80; g++)
		hint(p, 0, g, g, 4 << 20);
	assert_true(dropped_to(&r, 0) < 32);
	for (uint64_t g = 32; g < 90; g++) /* the slower one reads on past */
		hint(p, 0, g, g, 4 << 20);
	hint(p, 0, 80, 80, 4 << 20);
	assert_true(dropped_to(&r, 0) >= 60);
	dsv_prefetch_stop(p);
}

/* A view whose reads read its chunks whole: chunks of 256 KiB decoded, 1
 * MiB of output each (a uint8 source as float32); 32 chunks ahead. */
static dsv_view dense_view = {
	.nchunks = NCHUNKS, .nsegs = NCHUNKS, .seg_raw = 256 << 10, .nbytes = NCHUNKS << 20
};

/* early: the file's chunks are decoded (pages.c), so a dense pass
 * starts at 4 MiB; else only at 32 MiB. */
static dsv_prefetch *start_dense(record *r, int early)
{
	static dsv_view *files[1] = { &dense_view };
	const unsigned char flags[1] = { (unsigned char)early };
	memset(r, 0, sizeof(*r));
	pthread_mutex_init(&r->mu, NULL);
	return dsv_prefetch_start(files, NULL, NULL, flags, 1, 2, 8 << 20, handler, NULL, r);
}

/* A pass that reads every byte starts after 4 MiB, long before 32 MiB,
 * and queues as far ahead as it has run. */
static void test_dense_pass_starts_at_4mib(void **state)
{
	record r;
	(void)state;
	dsv_prefetch *p = start_dense(&r, 1);
	for (uint64_t g = 0; g < 3; g++)
		dsv_prefetch_hint(p, 0, g, g, g << 20, 1 << 20);
	assert_int_equal(settle(&r, 1), 0);
	dsv_prefetch_hint(p, 0, 3, 3, 3 << 20, 1 << 20);
	assert_int_equal(settle(&r, 4), 4);
	for (uint64_t g = 4; g < 8; g++)
		assert_true(has(&r, g));
	/* on through 8..15 (reads of the pushed chunks never come): the
	 * tripwire's page moves it on, a window as long as it has run */
	dsv_prefetch_hint(p, 0, 6, 6, 6 << 20, 4096);
	assert_true(settle(&r, 7) >= 7);
	assert_true(has(&r, 8) && has(&r, 10));
	dsv_prefetch_stop(p);
}

/* Reads of a quarter of each of adjacent chunks (the rows of a sorted
 * shuffled batch, each with the kernel's read around it) are no pass:
 * nothing is queued before 32 MiB. */
static void test_sparse_run_queues_nothing(void **state)
{
	record r;
	(void)state;
	dsv_prefetch *p = start_dense(&r, 1);
	for (uint64_t g = 0; g < 120; g++)
		dsv_prefetch_hint(p, 0, g, g, g << 20, 256 << 10);
	assert_int_equal(settle(&r, 1), 0);
	dsv_prefetch_stop(p);
}

/* A file of plain chunks (not early): the same dense pass waits for 32
 * MiB, as any stream does. */
static void test_plain_file_starts_at_32mib(void **state)
{
	record r;
	(void)state;
	dsv_prefetch *p = start_dense(&r, 0);
	for (uint64_t g = 0; g < 31; g++)
		dsv_prefetch_hint(p, 0, g, g, g << 20, 1 << 20);
	assert_int_equal(settle(&r, 1), 0);
	dsv_prefetch_hint(p, 0, 31, 31, 31ull << 20, 1 << 20);
	assert_true(settle(&r, 32) >= 32);
	assert_true(has(&r, 32) && has(&r, 63));
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
		cmocka_unit_test(test_drop_behind),
		cmocka_unit_test(test_drop_held_by_slower_reader),
		cmocka_unit_test(test_dense_pass_starts_at_4mib),
		cmocka_unit_test(test_sparse_run_queues_nothing),
		cmocka_unit_test(test_plain_file_starts_at_32mib),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
