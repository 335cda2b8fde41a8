/* Background readahead of chunks; see prefetch.h. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "fs/prefetch.h"

#define QUEUE_CAP 256
#define MAX_DEPTH 64 /* chunks per view */
/* A run of reads must cover this much output before anything is queued: the
 * kernel's page faults on one memmapped row (its readahead window is 1 MiB)
 * look sequential too, and a shuffled batch must not decode rows nobody
 * asked for. */
#define START_BYTES (4u << 20)

typedef struct job {
	uint32_t view;
	uint64_t chunk;
} job;

typedef struct view_state {
	_Atomic uint64_t last;  /* last chunk the previous read touched, +1 (0: none) */
	_Atomic uint64_t ahead; /* chunks below this were already queued */
	_Atomic uint64_t run;   /* first chunk of the current sequential run */
	unsigned depth;         /* chunks to keep queued ahead */
	unsigned start;         /* run length, in chunks, before queueing any */
} view_state;

struct dsv_prefetch {
	dsv_cache *cache;
	dsv_view *const *views;
	size_t nviews;
	view_state *vs;

	pthread_mutex_t mu;
	pthread_cond_t cv;
	job q[QUEUE_CAP];
	unsigned head, len;
	int stopping;
	int nthreads;
	pthread_t *tids;
	_Atomic uint64_t done;
};

static void *prefetch_thread(void *arg)
{
	dsv_prefetch *p = arg;

	pthread_mutex_lock(&p->mu);
	for (;;) {
		while (!p->stopping && p->len == 0)
			pthread_cond_wait(&p->cv, &p->mu);
		if (p->stopping)
			break;
		job j = p->q[p->head];
		p->head = (p->head + 1) % QUEUE_CAP;
		p->len--;
		pthread_mutex_unlock(&p->mu);

		const dsv_view *v = p->views[j.view];
		dsv_chunk_ref ref;
		dsv_cache_entry *e;
		size_t src;
		/* A failure is not cached: the reader that needs the chunk
		 * decodes it again and gets the error itself. */
		if (dsv_view_chunk_ref(v, j.chunk, &src, &ref) == 0 &&
		    dsv_cache_get(p->cache, j.view, j.chunk, (size_t)(ref.nelems * v->out_esize),
				  &e) == 0) {
			dsv_cache_put(p->cache, e);
			atomic_fetch_add(&p->done, 1);
		}
		pthread_mutex_lock(&p->mu);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

dsv_prefetch *dsv_prefetch_start(dsv_cache *cache, dsv_view *const *views, size_t nviews,
				 int threads, uint64_t bytes)
{
	dsv_prefetch *p;

	if (threads <= 0 || bytes == 0 || nviews == 0)
		return NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->cache = cache;
	p->views = views;
	p->nviews = nviews;
	p->vs = calloc(nviews, sizeof(*p->vs));
	p->tids = calloc((size_t)threads, sizeof(*p->tids));
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	if (!p->vs || !p->tids) {
		dsv_prefetch_stop(p);
		return NULL;
	}
	for (size_t i = 0; i < nviews; i++) {
		uint64_t chunk = views[i]->max_chunk_out ? views[i]->max_chunk_out : 1;
		uint64_t d = bytes / chunk;
		p->vs[i].depth = (unsigned)(d < 2 ? 2 : d > MAX_DEPTH ? MAX_DEPTH : d);
		d = (START_BYTES + chunk - 1) / chunk;
		p->vs[i].start = (unsigned)(d < 2 ? 2 : d > MAX_DEPTH ? MAX_DEPTH : d);
	}
	for (; p->nthreads < threads; p->nthreads++)
		if (pthread_create(&p->tids[p->nthreads], NULL, prefetch_thread, p))
			break;
	if (p->nthreads == 0) {
		dsv_prefetch_stop(p);
		return NULL;
	}
	return p;
}

void dsv_prefetch_hint(dsv_prefetch *p, uint32_t vi, uint64_t first, uint64_t last)
{
	if (!p || vi >= p->nviews)
		return;
	view_state *s = &p->vs[vi];
	uint64_t prev = atomic_exchange(&s->last, last + 1);
	uint64_t nchunks = p->views[vi]->nchunks;

	/* Sequential: this read starts in, or right after, the chunk where
	 * the previous one ended. Anything else (a shuffled batch) starts a
	 * new run. Only a run longer than START_BYTES queues anything, and then
	 * as far ahead as it has run, up to depth, so random reads cost no
	 * extra decoding. */
	if (prev == 0 || first + 1 < prev || first > prev) {
		atomic_store(&s->run, first);
		return;
	}
	uint64_t run = atomic_load(&s->run);
	uint64_t len = last >= run ? last + 1 - run : 0;
	if (len < s->start)
		return;
	uint64_t from = last + 1, to = last + 1 + (len < s->depth ? len : s->depth);
	if (to > nchunks)
		to = nchunks;
	uint64_t ahead = atomic_load(&s->ahead);
	if (ahead > from && ahead <= to + s->depth)
		from = ahead; /* already queued up to there */
	if (from >= to)
		return;
	atomic_store(&s->ahead, to);

	pthread_mutex_lock(&p->mu);
	for (uint64_t g = from; g < to && p->len < QUEUE_CAP; g++) {
		p->q[(p->head + p->len) % QUEUE_CAP] = (job){ .view = vi, .chunk = g };
		p->len++;
	}
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

void dsv_prefetch_stop(dsv_prefetch *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->stopping = 1;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	for (int i = 0; i < p->nthreads; i++)
		pthread_join(p->tids[i], NULL);
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
	free(p->tids);
	free(p->vs);
	free(p);
}

uint64_t dsv_prefetch_done(const dsv_prefetch *p)
{
	return p ? atomic_load(&((dsv_prefetch *)p)->done) : 0;
}
