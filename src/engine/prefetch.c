/* Background readahead of chunks; see prefetch.h. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "engine/prefetch.h"
#include "view/view.h"

#define QUEUE_CAP 256
#define MAX_DEPTH 64 /* chunks per stream */
#define NSTREAMS 4   /* per file */
/* When a stream is sequential, and queues chunks ahead of it. In a file
 * whose chunks are decoded (prefetch.h: early), a stream whose reads
 * cover most of the bytes between the lowest and the highest it read
 * (DENSE_NUM / DENSE_DEN of them) is a pass: it starts once it has read
 * START_DENSE bytes, or a whole chunk's output where chunks are larger.
 * The rows of a shuffled batch can fall in a run of adjacent chunks, and
 * the kernel's reads around one memmapped row touch neighbouring chunks
 * too, but they read only a part of what lies between them: such a
 * stream, and any in a file of plain chunks (the kernel's readahead and a
 * pread serve those well), starts once it has read START_BYTES over at
 * least START_MIN chunks. */
#define START_DENSE (4u << 20)
#define DENSE_NUM 3
#define DENSE_DEN 4
#define START_BYTES (32u << 20)
#define START_MIN 4

typedef struct job {
	uint32_t file, stream;
	uint64_t chunk;
	uint64_t drop_to; /* a drop job: chunks [chunk, drop_to); else 0 */
	int trip;
} job;

/* Chunks [lo, hi] that reads of a file touched, each read overlapping or
 * next to the stream so far. */
typedef struct stream {
	int live;
	uint64_t lo, hi;
	uint64_t ahead;    /* chunks below this were already queued */
	uint64_t dropped;  /* chunks from lo below this were dropped behind it */
	uint64_t bytes;    /* read so far */
	uint64_t blo, bhi; /* the lowest and highest (exclusive) byte read */
	int started;       /* found sequential: queues ahead from now on */
	uint64_t used;     /* tick of the last read, for replacing the oldest */
} stream;

typedef struct file_state {
	const dsv_view *v;
	unsigned depth; /* chunks to keep queued ahead */
	unsigned slack; /* chunks a read may lag a stream's head and continue it */
	unsigned batch; /* chunks one call of fn may take */
	uint64_t dense; /* bytes a dense stream reads before it starts (0: never early) */
	int drop;       /* drop the pages a stream has passed */
	stream s[NSTREAMS];
} file_state;

struct dsv_prefetch {
	dsv_prefetch_fn fn;
	dsv_prefetch_drop_fn drop;
	void *ctx;
	file_state *files;
	size_t nfiles;

	pthread_mutex_t mu; /* the queue and every stream */
	pthread_cond_t cv;
	job q[QUEUE_CAP];
	unsigned head, len;
	uint64_t tick;
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
		if (j.drop_to) {
			pthread_mutex_unlock(&p->mu);
			p->drop(p->ctx, j.file, j.chunk, j.drop_to - 1);
			pthread_mutex_lock(&p->mu);
			continue;
		}
		const stream *s = &p->files[j.file].s[j.stream];
		if (!s->live || j.chunk <= s->hi || j.chunk < s->lo)
			continue; /* read already, or the stream was replaced */
		/* and the stream's next chunks queued after it, up to the batch */
		uint64_t last = j.chunk, trip = j.trip ? j.chunk : DSV_PREFETCH_NO_TRIP;
		while (p->len && last + 1 - j.chunk < p->files[j.file].batch) {
			const job *n = &p->q[p->head];
			if (n->file != j.file || n->stream != j.stream || n->chunk != last + 1)
				break;
			last++;
			trip = n->trip ? n->chunk : trip;
			p->head = (p->head + 1) % QUEUE_CAP;
			p->len--;
		}
		pthread_mutex_unlock(&p->mu);
		if (p->fn(p->ctx, j.file, j.chunk, last, trip) == 0)
			atomic_fetch_add(&p->done, last + 1 - j.chunk);
		pthread_mutex_lock(&p->mu);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

dsv_prefetch *dsv_prefetch_start(dsv_view *const *file_views, const unsigned *batch,
				 const unsigned char *drop, const unsigned char *early,
				 size_t nfiles, int threads, uint64_t bytes, dsv_prefetch_fn fn,
				 dsv_prefetch_drop_fn drop_fn, void *ctx)
{
	dsv_prefetch *p;

	if (threads <= 0 || bytes == 0 || nfiles == 0)
		return NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->fn = fn;
	p->drop = drop_fn;
	p->ctx = ctx;
	p->nfiles = nfiles;
	p->files = calloc(nfiles, sizeof(*p->files));
	p->tids = calloc((size_t)threads, sizeof(*p->tids));
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	if (!p->files || !p->tids) {
		dsv_prefetch_stop(p);
		return NULL;
	}
	for (size_t i = 0; i < nfiles; i++) {
		const dsv_view *v = file_views[i];
		if (!v)
			continue;
		uint64_t raw = v->seg_raw ? v->seg_raw : 1;
		uint64_t d = bytes / raw;
		p->files[i].v = v;
		p->files[i].depth = (unsigned)(d < 2 ? 2 : d > MAX_DEPTH ? MAX_DEPTH : d);
		p->files[i].slack = p->files[i].depth / 4 > START_MIN ? p->files[i].depth / 4
								      : START_MIN;
		p->files[i].batch = batch && batch[i] > 1 ? batch[i] : 1;
		uint64_t seg_out = v->nsegs ? v->nbytes / v->nsegs : 0;
		p->files[i].dense = seg_out > START_DENSE ? seg_out : START_DENSE;
		if (p->files[i].dense > START_BYTES)
			p->files[i].dense = START_BYTES;
		if (!early || !early[i])
			p->files[i].dense = 0;
		p->files[i].drop = drop_fn && drop && drop[i];
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

/* The last chunk a read may start at and still continue s: the one after
 * it, or any that was queued ahead of it (read from the page cache, those
 * never reach us, but for a tripwire's first page). */
static uint64_t reach(const stream *s)
{
	return s->hi + 1 > s->ahead ? s->hi + 1 : s->ahead;
}

/* Whether a read up to chunk last is near stream s's head: the kernel's
 * pieces of a pass arrive out of order by a few chunks, but a read far
 * behind the head is another pass (the next epoch from the start), which
 * must start a stream of its own, or it would never be read ahead. */
static int near_head(const file_state *f, const stream *s, uint64_t last)
{
	return last + f->slack >= s->hi;
}

/* The stream a read of [first, last] continues (overlaps, is next to, or
 * lies in what was queued ahead of it, near its head; of several, the one
 * whose head is nearest), or a fresh one in place of the least recently
 * used. */
static unsigned find_stream(file_state *f, uint64_t first, uint64_t last, int *fresh)
{
	unsigned oldest = 0, best = NSTREAMS;
	uint64_t gap = UINT64_MAX;
	for (unsigned i = 0; i < NSTREAMS; i++) {
		const stream *s = &f->s[i];
		if (s->live && first <= reach(s) && last + 1 >= s->lo && near_head(f, s, last)) {
			uint64_t d = s->hi > last ? s->hi - last : last - s->hi;
			if (d < gap) {
				gap = d;
				best = i;
			}
		}
		if (f->s[oldest].live && (!s->live || s->used < f->s[oldest].used))
			oldest = i;
	}
	*fresh = best == NSTREAMS;
	return *fresh ? oldest : best;
}

/* Folds into stream si every other stream it now overlaps or touches, one
 * of the two having started near the other's head: the pieces of one
 * window arrive last first, so a stream's next window can start as a
 * stream of its own. (An earlier pass over the same chunks, which this one
 * reads again from its start, is not folded in.) */
static void merge_streams(file_state *f, unsigned si)
{
	stream *s = &f->s[si];
	for (unsigned i = 0; i < NSTREAMS; i++) {
		stream *t = &f->s[i];
		if (i == si || !t->live || t->lo > reach(s) || reach(t) < s->lo ||
		    !(t->lo > s->lo ? near_head(f, s, t->lo)
				    : s->lo > t->lo && near_head(f, t, s->lo)))
			continue;
		if (t->lo < s->lo)
			s->lo = t->lo;
		if (t->hi > s->hi)
			s->hi = t->hi;
		if (t->ahead > s->ahead)
			s->ahead = t->ahead;
		if (t->dropped > s->dropped)
			s->dropped = t->dropped;
		s->bytes += t->bytes;
		s->blo = t->blo < s->blo ? t->blo : s->blo;
		s->bhi = t->bhi > s->bhi ? t->bhi : s->bhi;
		s->started |= t->started;
		t->live = 0;
	}
}

/* Queues a drop of the chunks stream si of f has passed: those more than
 * its window (depth and slack) behind its head, unless another stream of
 * the file that has read as much as a stream must to be read ahead reads
 * among them or a window below them (a slower reader of the same part).
 * A stream further below (a worker on an earlier shard, a pass far
 * behind) does not hold them, nor do a few stray reads: the dropped pages
 * are only made again if a reader ever comes back to them. */
static void queue_drop(dsv_prefetch *p, uint32_t file, unsigned si)
{
	file_state *f = &p->files[file];
	stream *s = &f->s[si];
	uint64_t keep = (uint64_t)f->depth + f->slack;
	if (!f->drop || p->len == QUEUE_CAP || s->hi < keep)
		return;
	uint64_t from = s->dropped > s->lo ? s->dropped : s->lo, to = s->hi - keep;
	if (to < from + f->depth / 2 + 1)
		return; /* drops go in runs of half a window at least */
	for (unsigned i = 0; i < NSTREAMS; i++)
		if (i != si && f->s[i].live && f->s[i].bytes >= START_BYTES && f->s[i].hi < to &&
		    f->s[i].hi + keep >= from)
			return;
	p->q[(p->head + p->len) % QUEUE_CAP] = (job){
		.file = file, .stream = si, .chunk = from, .drop_to = to
	};
	p->len++;
	s->dropped = to;
}

/* Whether stream s of f has read enough, and densely enough, to be
 * read ahead (START_DENSE above); once it has, it stays so. */
static int sequential(const file_state *f, stream *s)
{
	uint64_t len = s->hi + 1 - s->lo;
	if (!s->started)
		s->started = (f->dense && s->bytes >= f->dense &&
			      s->bytes / DENSE_NUM >= (s->bhi - s->blo) / DENSE_DEN) ||
			     (len >= START_MIN && s->bytes >= START_BYTES);
	return s->started;
}

void dsv_prefetch_hint(dsv_prefetch *p, uint32_t file, uint64_t first, uint64_t last, uint64_t off,
		       uint64_t bytes)
{
	if (!p || file >= p->nfiles || !p->files[file].v)
		return;
	file_state *f = &p->files[file];
	int fresh;

	pthread_mutex_lock(&p->mu);
	unsigned si = find_stream(f, first, last, &fresh);
	stream *s = &f->s[si];
	s->used = ++p->tick;
	if (fresh) {
		*s = (stream){ .live = 1,
			       .lo = first,
			       .hi = last,
			       .used = p->tick,
			       .bytes = bytes,
			       .blo = off,
			       .bhi = off + bytes };
		goto out;
	}
	s->bytes += bytes;
	s->blo = off < s->blo ? off : s->blo;
	s->bhi = off + bytes > s->bhi ? off + bytes : s->bhi;
	if (first < s->lo)
		s->lo = first;
	if (last > s->hi)
		s->hi = last;
	merge_streams(f, si);
	/* Only a sequential stream queues anything, and then as far ahead as
	 * it has run, up to depth, so random reads cost nothing. */
	uint64_t len = s->hi + 1 - s->lo;
	if (!sequential(f, s))
		goto out;
	queue_drop(p, file, si);
	uint64_t from = s->hi + 1, to = from + (len < f->depth ? len : f->depth);
	if (to > f->v->nsegs)
		to = f->v->nsegs;
	if (s->ahead > from)
		from = s->ahead; /* already queued up to there */
	if (from >= to)
		goto out;
	s->ahead = to;
	for (uint64_t g = from; g < to && p->len < QUEUE_CAP; g++) {
		p->q[(p->head + p->len) % QUEUE_CAP] = (job){
			.file = file, .stream = si, .chunk = g, .trip = g == from + (to - from) / 2
		};
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
	free(p->files);
	free(p);
}

uint64_t dsv_prefetch_done(const dsv_prefetch *p)
{
	return p ? atomic_load(&((dsv_prefetch *)p)->done) : 0;
}
