/* Background readahead of chunks; see prefetch.h. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "dsview/read.h"
#include "fs/prefetch.h"

#define QUEUE_CAP 256
#define MAX_DEPTH 64 /* chunks per view */
/* A run must cover this much output, and at least START_MIN chunks, before
 * anything is queued: the kernel's reads around one memmapped row (its
 * readahead window is 1 MiB) touch neighbouring chunks too, and a shuffled
 * batch must not decode rows nobody asked for. */
#define START_BYTES (8u << 20)
#define START_MIN 3

typedef struct job {
	uint32_t view;
	uint64_t chunk;
} job;

/* The current run of a view: the chunks [lo, hi] that reads touched, each
 * read overlapping or next to the run so far. The kernel does not send a
 * sequential pass in order (the pieces of one readahead window may arrive
 * last first), so direction inside the run does not matter. */
typedef struct view_state {
	int live;
	uint64_t lo, hi;
	uint64_t ahead; /* chunks below this were already queued */
	unsigned depth; /* chunks to keep queued ahead */
	unsigned start; /* run length, in chunks, before queueing any */
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

		/* A failure is not cached: the reader that needs the chunk
		 * decodes it again and gets the error itself. */
		if (dsv_read_prefetch(p->cache, p->views[j.view], j.view, j.chunk) == 1)
			atomic_fetch_add(&p->done, 1);
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
		uint64_t raw = views[i]->max_chunk_raw ? views[i]->max_chunk_raw : 1;
		uint64_t out = views[i]->max_chunk_out ? views[i]->max_chunk_out : 1;
		uint64_t d = bytes / raw;
		p->vs[i].depth = (unsigned)(d < 2 ? 2 : d > MAX_DEPTH ? MAX_DEPTH : d);
		d = (START_BYTES + out - 1) / out;
		p->vs[i].start = (unsigned)(d < START_MIN ? START_MIN : d > MAX_DEPTH ? MAX_DEPTH : d);
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
	uint64_t nchunks = p->views[vi]->nchunks;

	pthread_mutex_lock(&p->mu);
	if (!s->live || first > s->hi + 1 || last + 1 < s->lo) {
		/* not next to the run: a new one (a shuffled batch jumps) */
		s->live = 1;
		s->lo = first;
		s->hi = last;
		s->ahead = 0;
		goto out;
	}
	if (first < s->lo)
		s->lo = first;
	if (last > s->hi)
		s->hi = last;
	/* Only a run longer than start queues anything, and then as far ahead
	 * as it has run, up to depth, so random reads cost no extra decoding. */
	uint64_t len = s->hi + 1 - s->lo;
	if (len < s->start)
		goto out;
	uint64_t from = s->hi + 1, to = from + (len < s->depth ? len : s->depth);
	if (to > nchunks)
		to = nchunks;
	if (s->ahead > from)
		from = s->ahead; /* already queued up to there */
	if (from >= to)
		goto out;
	s->ahead = to;
	for (uint64_t g = from; g < to && p->len < QUEUE_CAP; g++) {
		p->q[(p->head + p->len) % QUEUE_CAP] = (job){ .view = vi, .chunk = g };
		p->len++;
	}
	pthread_cond_broadcast(&p->cv);
out:
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
