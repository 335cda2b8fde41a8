/*
 * The reader's reads: a byte range of a view, and a gather of rows, each
 * run of consecutive rows one engine read straight into the caller's
 * memory (decoded and transformed there, as a FUSE reply is).
 *
 * With threads > 1 a gather's runs, long ones cut into pieces of about
 * GATHER_PIECE, are shared out: the caller posts its
 * job on a list, the gather threads and the caller take runs from it by
 * an atomic counter until none is left, and the caller waits for the
 * threads inside its job to leave it. Jobs of several callers may be on
 * the list at once; a thread helps the first with runs left.
 *
 * A failed read stops its job (no run is started after it) and the first
 * failure is the caller's error, in the words of the mount's log line
 * when the failing thread met the chunk itself.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reader/reader_i.h"

/* A gather smaller than this is read by the calling thread alone: handing
 * it out costs more than it saves. */
#define GATHER_MIN_BYTES (256u << 10)
/* With gather threads, a run longer than this is cut into pieces of about
 * this size (whole rows where rows are at least as long), so one long
 * read (a sequential pass, np.asarray) decodes its chunks on every
 * thread too. */
#define GATHER_PIECE (1u << 20)

typedef struct run {
	uint64_t off; /* in the view's output */
	uint64_t len;
	char *dst;
} run;

typedef struct job {
	dsv_engine *e;
	uint32_t file;
	const run *runs;
	size_t n;
	atomic_size_t next; /* the next run to take */
	int active;         /* gather threads inside, under the pool's lock */
	int err;            /* the first failure, under the pool's lock */
	uint64_t err_off, err_len;
	char why[5120]; /* as the log line (view.c) */
	struct job *link;
} job;

struct dsv_gather {
	pthread_mutex_t lock;
	pthread_cond_t work, left;
	job *jobs;
	int stop, nthreads;
	pthread_t th[];
};

/* Records err of run at (taken in this thread) as j's failure unless an
 * earlier one is; lock NULL: j is this thread's alone. */
static void job_failed(job *j, const run *at, int err, pthread_mutex_t *lock)
{
	const char *why = dsv_engine_take_error();
	if (lock)
		pthread_mutex_lock(lock);
	if (!j->err) {
		j->err = err;
		j->err_off = at->off;
		j->err_len = at->len;
		snprintf(j->why, sizeof(j->why), "%s", why);
	}
	if (lock)
		pthread_mutex_unlock(lock);
	atomic_store(&j->next, j->n); /* start no other run */
}

/* Takes j's runs until none is left. */
static void do_runs(job *j, pthread_mutex_t *lock)
{
	size_t i;
	while ((i = atomic_fetch_add(&j->next, 1)) < j->n) {
		const run *at = &j->runs[i];
		dsv_engine_count_request(j->e);
		int err = dsv_engine_read(j->e, j->file, at->off, (size_t)at->len, at->dst);
		if (err)
			job_failed(j, at, err, lock);
	}
}

static void *gather_main(void *arg)
{
	dsv_gather *g = arg;
	pthread_mutex_lock(&g->lock);
	while (!g->stop) {
		job *j = g->jobs;
		while (j && atomic_load(&j->next) >= j->n)
			j = j->link;
		if (!j) {
			pthread_cond_wait(&g->work, &g->lock);
			continue;
		}
		j->active++;
		pthread_mutex_unlock(&g->lock);
		do_runs(j, &g->lock);
		pthread_mutex_lock(&g->lock);
		if (--j->active == 0)
			pthread_cond_broadcast(&g->left);
	}
	pthread_mutex_unlock(&g->lock);
	return NULL;
}

int dsv_reader_gather_start(dsv_reader *r, dsv_errbuf *eb)
{
	int n = r->threads - 1; /* the caller is one of them */
	dsv_gather *g;
	if (n < 1)
		return 0;
	if (!(g = calloc(1, sizeof(*g) + (size_t)n * sizeof(pthread_t))))
		return dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
	pthread_mutex_init(&g->lock, NULL);
	pthread_cond_init(&g->work, NULL);
	pthread_cond_init(&g->left, NULL);
	for (; g->nthreads < n; g->nthreads++)
		if (pthread_create(&g->th[g->nthreads], NULL, gather_main, g))
			break;
	r->gather = g;
	if (g->nthreads < n) {
		dsv_reader_gather_stop(r);
		return dsv_errf(eb, DSV_ERR_INTERNAL, "cannot start %d gather threads", n);
	}
	return 0;
}

void dsv_reader_gather_stop(dsv_reader *r)
{
	dsv_gather *g = r->gather;
	if (!g)
		return;
	pthread_mutex_lock(&g->lock);
	g->stop = 1;
	pthread_cond_broadcast(&g->work);
	pthread_mutex_unlock(&g->lock);
	for (int i = 0; i < g->nthreads; i++)
		pthread_join(g->th[i], NULL);
	pthread_cond_destroy(&g->left);
	pthread_cond_destroy(&g->work);
	pthread_mutex_destroy(&g->lock);
	free(g);
	r->gather = NULL;
}

/* j's runs, by the gather threads and this one. */
static void run_shared(dsv_gather *g, job *j)
{
	job **p;
	pthread_mutex_lock(&g->lock);
	j->link = g->jobs;
	g->jobs = j;
	pthread_cond_broadcast(&g->work);
	pthread_mutex_unlock(&g->lock);
	do_runs(j, &g->lock);
	pthread_mutex_lock(&g->lock);
	for (p = &g->jobs; *p != j; p = &(*p)->link)
		;
	*p = j->link;
	while (j->active)
		pthread_cond_wait(&g->left, &g->lock);
	pthread_mutex_unlock(&g->lock);
}

/* eb for j's failure in view i of r: the log line's words where the
 * failing thread met the chunk, else the view, rows and reason. */
static int job_error(const dsv_reader *r, dsv_engine *e, size_t i, const job *j, dsv_errbuf *eb)
{
	dsv_view_info vi;
	uint64_t rb;
	if (j->why[0])
		return dsv_errf_at(eb, j->err, r->source, NULL, "%s", j->why);
	dsv_engine_view_info(e, i, &vi);
	rb = vi.row_bytes ? vi.row_bytes : 1;
	return dsv_errf_at(
		eb, j->err, r->source, NULL, "view %s: bytes %llu-%llu (rows %llu-%llu): %s",
		vi.name, (unsigned long long)j->err_off,
		(unsigned long long)(j->err_off + j->err_len - 1),
		(unsigned long long)(j->err_off / rb),
		(unsigned long long)((j->err_off + j->err_len - 1) / rb), dsv_strerror(j->err));
}

/* runs[0 .. *n) with every run longer than GATHER_PIECE cut into pieces
 * of whole units of unit bytes (a row; 1 for a byte range), in a new
 * array (NULL: out of memory), *n updated. */
static run *cut_runs(const run *runs, size_t *n, uint64_t unit)
{
	uint64_t piece = unit >= GATHER_PIECE ? unit : GATHER_PIECE / unit * unit;
	size_t total = 0, k = 0;
	run *out;
	for (size_t i = 0; i < *n; i++)
		total += (size_t)((runs[i].len + piece - 1) / piece);
	if (!(out = malloc(total * sizeof(*out))))
		return NULL;
	for (size_t i = 0; i < *n; i++)
		for (uint64_t at = 0; at < runs[i].len; at += piece)
			out[k++] = (run){ .off = runs[i].off + at,
					  .len = runs[i].len - at < piece ? runs[i].len - at
									  : piece,
					  .dst = runs[i].dst + at };
	*n = k;
	return out;
}

/* Reads runs[0 .. n) of view i (bytes in all; unit: the bytes a piece of
 * a run holds whole) into place. */
static int read_runs(dsv_reader *r, dsv_engine *e, size_t i, const run *runs, size_t n,
		     uint64_t bytes, uint64_t unit, dsv_errbuf *eb)
{
	job j = { .e = e, .file = DSV_ENGINE_FILE(i, 0), .runs = runs, .n = n };
	run *cut = NULL;
	(void)dsv_engine_take_error(); /* none of an earlier call's */
	if (r->gather && bytes >= GATHER_MIN_BYTES) {
		if (!(cut = cut_runs(runs, &j.n, unit ? unit : 1)))
			return dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
		j.runs = cut;
	}
	if (j.n > 1 && cut)
		run_shared(r->gather, &j);
	else
		do_runs(&j, NULL);
	free(cut);
	return j.err ? job_error(r, e, i, &j, eb) : 0;
}

/* r's engine into *e (reopened after a fork) where it has a view i.
 * @return 0, or a dsv_err with eb set. */
static int engine_view(dsv_reader *r, size_t i, dsv_engine **e, dsv_errbuf *eb)
{
	int err = dsv_reader_engine(r, e, eb);
	if (!err && i >= dsv_engine_nviews(*e))
		err = dsv_errf(eb, DSV_ERR_INVALID, "no view %zu: %s has %zu", i, r->source,
			       dsv_engine_nviews(*e));
	return err;
}

int dsv_reader_read(dsv_reader *r, size_t i, uint64_t off, size_t len, void *dst, dsv_errbuf *eb)
{
	dsv_engine *e;
	uint64_t size;
	int err = engine_view(r, i, &e, eb);
	if (err)
		return err;
	size = dsv_engine_file_size(e, DSV_ENGINE_FILE(i, 0));
	if (off > size || len > size - off)
		return dsv_errf(eb, DSV_ERR_INVALID,
				"view %s: bytes %llu-%llu are outside its %llu bytes",
				dsv_engine_view_name(e, i), (unsigned long long)off,
				(unsigned long long)(off + len), (unsigned long long)size);
	if (!len)
		return 0;
	run one = { .off = off, .len = len, .dst = dst };
	return read_runs(r, e, i, &one, 1, len, 1, eb);
}

/* rows[0 .. n) of view vi as runs of consecutive rows into *out. */
static int make_runs(const dsv_view_info *vi, const int64_t *rows, size_t n, char *dst, run **out,
		     size_t *nruns, dsv_errbuf *eb)
{
	uint64_t nrows = vi->ndim ? vi->shape[0] : 1, rb = vi->row_bytes;
	size_t k = 0;
	run *runs;

	for (size_t s = 0; s < n; s++)
		if (rows[s] < 0 || (uint64_t)rows[s] >= nrows)
			return dsv_errf(eb, DSV_ERR_INVALID,
					"view %s: row %lld out of range: it has %llu rows (nothing "
					"read)",
					vi->name, (long long)rows[s], (unsigned long long)nrows);
	if (!(runs = malloc((n ? n : 1) * sizeof(*runs))))
		return dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
	for (size_t s = 0; s < n; s++) {
		if (k && rows[s] == rows[s - 1] + 1) {
			runs[k - 1].len += rb;
			continue;
		}
		runs[k++] = (run){ .off = (uint64_t)rows[s] * rb, .len = rb, .dst = dst + s * rb };
	}
	*out = runs;
	*nruns = k;
	return 0;
}

int dsv_reader_read_rows(dsv_reader *r, size_t i, const int64_t *rows, size_t n, void *dst,
			 dsv_errbuf *eb)
{
	dsv_engine *e;
	dsv_view_info vi;
	run *runs = NULL;
	size_t nruns = 0;
	int err = engine_view(r, i, &e, eb);
	if (err)
		return err;
	dsv_engine_view_info(e, i, &vi);
	if ((err = make_runs(&vi, rows, n, dst, &runs, &nruns, eb)))
		return err;
	err = read_runs(r, e, i, runs, nruns, (uint64_t)n * vi.row_bytes, vi.row_bytes, eb);
	free(runs);
	return err;
}
