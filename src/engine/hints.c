/* Sampler hints: a bounded FIFO of rows and the threads that store them;
 * see hints.h. */
#include <pthread.h>
#include <stdlib.h>

#include "engine/hints.h"

typedef struct hint {
	uint32_t file;
	uint64_t row;
} hint;

struct dsv_hints {
	dsv_hint_fn fn;
	void *ctx;
	pthread_mutex_t mu; /* the ring and the counters */
	pthread_cond_t cv;
	hint *q;
	size_t cap, head, len;
	int stopping, nthreads, want; /* want: threads to start with the first hint */
	pthread_t *tids;
	dsv_hints_stats st;
};

static void *hint_thread(void *arg)
{
	dsv_hints *h = arg;
	pthread_mutex_lock(&h->mu);
	for (;;) {
		while (!h->stopping && h->len == 0)
			pthread_cond_wait(&h->cv, &h->mu);
		if (h->stopping)
			break;
		hint j = h->q[h->head];
		h->head = (h->head + 1) % h->cap;
		h->len--;
		pthread_mutex_unlock(&h->mu);
		int err = h->fn(h->ctx, j.file, j.row);
		pthread_mutex_lock(&h->mu);
		if (err)
			h->st.failed++;
		else
			h->st.stored++;
	}
	pthread_mutex_unlock(&h->mu);
	return NULL;
}

dsv_hints *dsv_hints_start(int threads, size_t cap, dsv_hint_fn fn, void *ctx)
{
	dsv_hints *h = calloc(1, sizeof(*h));
	if (!h)
		return NULL;
	h->fn = fn;
	h->ctx = ctx;
	h->cap = cap ? cap : 1;
	h->q = calloc(h->cap, sizeof(*h->q));
	h->tids = calloc(threads > 0 ? (size_t)threads : 1, sizeof(*h->tids));
	pthread_mutex_init(&h->mu, NULL);
	pthread_cond_init(&h->cv, NULL);
	if (!h->q || !h->tids) {
		dsv_hints_stop(h);
		return NULL;
	}
	h->want = threads > 0 ? threads : 1;
	return h;
}

/* With mu held. The threads start with the first hint: a mount nobody
 * hints costs no threads (16 idle threads are 16 stacks, and more under
 * a sanitizer). A thread that cannot be made now is tried again with the
 * next hints; until one exists, hints wait in the queue. */
static void start_threads(dsv_hints *h)
{
	for (; h->nthreads < h->want; h->nthreads++)
		if (pthread_create(&h->tids[h->nthreads], NULL, hint_thread, h))
			break;
}

uint64_t dsv_hints_add(dsv_hints *h, uint32_t file, const uint64_t *rows, size_t n)
{
	uint64_t dropped = 0;
	pthread_mutex_lock(&h->mu);
	if (h->nthreads < h->want)
		start_threads(h);
	for (size_t i = 0; i < n; i++) {
		if (h->len == h->cap) { /* the oldest waiting hint makes room */
			h->head = (h->head + 1) % h->cap;
			h->len--;
			dropped++;
		}
		h->q[(h->head + h->len) % h->cap] = (hint){ file, rows[i] };
		h->len++;
	}
	h->st.queued += n;
	h->st.dropped += dropped;
	pthread_cond_broadcast(&h->cv);
	pthread_mutex_unlock(&h->mu);
	return dropped;
}

void dsv_hints_stop(dsv_hints *h)
{
	if (!h)
		return;
	pthread_mutex_lock(&h->mu);
	h->stopping = 1;
	pthread_cond_broadcast(&h->cv);
	pthread_mutex_unlock(&h->mu);
	for (int i = 0; i < h->nthreads; i++)
		pthread_join(h->tids[i], NULL);
	pthread_mutex_destroy(&h->mu);
	pthread_cond_destroy(&h->cv);
	free(h->q);
	free(h->tids);
	free(h);
}

void dsv_hints_get_stats(dsv_hints *h, dsv_hints_stats *out)
{
	pthread_mutex_lock(&h->mu);
	*out = h->st;
	pthread_mutex_unlock(&h->mu);
}
