/*
 * Work over many files on a few threads at once (opening a glob's files
 * or a directory's: reading their headers waits on the disk, one file at
 * a time would wait on each in turn). Each thread takes the next index
 * until none is left or the work says to stop.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "common/defaults.h"
#include "manifest/manifest_i.h"

typedef struct pool {
	size_t n;
	atomic_size_t next;
	int (*fn)(void *ctx, size_t k);
	void *ctx;
} pool;

static void *worker(void *arg)
{
	pool *p = arg;
	for (;;) {
		size_t k = atomic_fetch_add(&p->next, 1);
		if (k >= p->n || p->fn(p->ctx, k))
			return NULL;
	}
}

void dsv_mf_parallel(size_t n, int (*fn)(void *ctx, size_t k), void *ctx)
{
	pthread_t t[DSV_OPEN_THREADS];
	pool p = { .n = n, .fn = fn, .ctx = ctx };
	size_t nt = 0, want = n / DSV_OPEN_PER_THREAD;

	atomic_init(&p.next, 0);
	if (want > DSV_OPEN_THREADS)
		want = DSV_OPEN_THREADS;
	while (nt < want && pthread_create(&t[nt], NULL, worker, &p) == 0)
		nt++;
	worker(&p); /* here too: alone when the files are few or no thread starts */
	while (nt)
		pthread_join(t[--nt], NULL);
}
