/*
 * dsview pack, the chunks: input rows -> codec (LZ4 here, the others through
 * codecs.c) + Fletcher32 chunks,
 * made on worker threads and handed in order to the writer, which pack.c
 * gives (it puts them in the HDF5 file). Also the sample compression that
 * estimates the store's size.
 *
 * Shape of the work:
 *
 *   workers (threads)                      writer (the calling thread)
 *   take chunk i = next++          ---->   waits for slot[w % K] to be ready,
 *   read its rows from the source          hands it to write (pack.c: HDF5),
 *   compress into slot[i % K]              frees the slot, reports progress, w++
 *
 * A worker may only take chunk i while i < written + K, so slot i % K is
 * free and at most K = 2 x threads compressed chunks exist at once:
 * memory stays flat however large the input. HDF5 (a serial build) is
 * only called by the writer, under the global HDF5 lock, because workers
 * reading an HDF5 input through the library fallback take that lock too.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "dsview/codec.h"
#include "dsview/pack.h"
#include "dsview/source.h"
#include "pack/pack_i.h"
#include "source/source.h"

#define SAMPLE_CHUNKS 8

int dsv_pack_read_chunk(const packer *p, dsv_range *r, uint64_t i, char *raw, uint64_t *bad)
{
	uint64_t row0 = i * p->chunk_rows;
	uint64_t rows = p->in->nrows - row0 < p->chunk_rows ? p->in->nrows - row0 : p->chunk_rows;
	uint64_t used = rows * p->row_bytes;
	int err = dsv_range_read(r, row0 * p->in->row_elems, rows * p->in->row_elems, raw, bad);

	if (!err && used < p->chunk_bytes)
		memset(raw + used, 0, (size_t)(p->chunk_bytes - used));
	return err;
}

/* Reads chunk i's rows into raw and encodes them into out. @return the
 * stored size or a negative dsv_err. */
static int64_t make_chunk(packer *p, dsv_range *r, uint64_t i, char *raw, void *out, uint64_t *bad)
{
	const dsv_pack_opts *o = p->o;
	int64_t n;
	int err;

	err = dsv_pack_read_chunk(p, r, i, raw, bad);
	if (err)
		return err;
	switch (o->codec) {
	case DSV_PACK_LZ4:
		n = dsv_lz4_encode_fast(out, p->slot_cap - 4, raw, (size_t)p->chunk_bytes,
					(size_t)p->block_bytes, o->level);
		break;
	case DSV_PACK_LZ4HC:
		n = dsv_lz4_encode(out, p->slot_cap - 4, raw, (size_t)p->chunk_bytes,
				   (size_t)p->block_bytes, o->level);
		break;
	default: /* codecs.c */
		n = dsv_pack_codec_encode(o->codec, o->level, out, p->slot_cap - 4, raw,
					  (size_t)p->chunk_bytes, 0, dsv_dtype_size(p->in->dtype));
	}
	if (n < 0)
		return (int)n;
	dsv_fletcher32_append(out, (size_t)n);
	return n + 4;
}

/* Records a worker's failure. Chunks are handed out in order and a worker
 * finishes the chunk it holds, so after the join the message names the
 * lowest chunk that failed, whichever thread got there first. */
static void fail_locked(packer *p, int err, uint64_t chunk, uint64_t bad_in)
{
	if (p->err && (p->err == DSV_ERR_NOMEM || chunk >= p->err_chunk))
		return;
	p->err = err;
	p->err_chunk = chunk;
	uint64_t r0 = chunk * p->chunk_rows;
	uint64_t r1 = r0 + p->chunk_rows < p->in->nrows ? r0 + p->chunk_rows : p->in->nrows;
	if (err == DSV_ERR_NOMEM)
		dsv_errf(&p->eb, err, "out of memory");
	else
		dsv_errf_at(&p->eb, err, p->o->input, NULL,
			    "rows %llu-%llu (source chunk %llu): %s", (unsigned long long)r0,
			    (unsigned long long)(r1 - 1), (unsigned long long)bad_in,
			    dsv_strerror(err));
	pthread_cond_broadcast(&p->cv_ready);
	pthread_cond_broadcast(&p->cv_space);
}

static void *worker(void *arg)
{
	packer *p = arg;
	dsv_range r;
	char *raw = malloc(p->chunk_bytes ? (size_t)p->chunk_bytes : 1);
	int err = dsv_range_init(&r, p->src);

	pthread_mutex_lock(&p->mu);
	if (err || !raw)
		fail_locked(p, DSV_ERR_NOMEM, 0, 0);
	for (;;) {
		while (!p->err && !stopped(p->o) && p->next < p->nchunks &&
		       p->next >= p->written + p->nslots)
			pthread_cond_wait(&p->cv_space, &p->mu);
		if (p->err || stopped(p->o) || p->next >= p->nchunks)
			break;
		uint64_t i = p->next++, bad = 0;
		slot *s = &p->slots[i % p->nslots];
		pthread_mutex_unlock(&p->mu);

		int64_t n = make_chunk(p, &r, i, raw, s->buf, &bad);

		pthread_mutex_lock(&p->mu);
		if (n < 0) {
			fail_locked(p, (int)n, i, bad);
			break;
		}
		s->size = (size_t)n;
		s->ready = 1;
		pthread_cond_broadcast(&p->cv_ready);
	}
	pthread_mutex_unlock(&p->mu);
	dsv_range_free(&r);
	free(raw);
	return NULL;
}

/* Bytes the store will take: exact without compression, else estimated
 * from up to SAMPLE_CHUNKS chunks spread over the input. */
int dsv_pack_estimate_size(packer *p, uint64_t *need)
{
	dsv_range r;
	char *raw = malloc((size_t)p->chunk_bytes), *out = malloc(p->slot_cap);
	uint64_t n = p->nchunks < SAMPLE_CHUNKS ? p->nchunks : SAMPLE_CHUNKS, sum = 0, bad;
	int err = dsv_range_init(&r, p->src);

	if (!err && (!raw || !out))
		err = DSV_ERR_NOMEM;
	for (uint64_t k = 0; !err && k < n; k++) {
		uint64_t i = n > 1 ? k * (p->nchunks - 1) / (n - 1) : 0;
		int64_t got = p->o->codec == DSV_PACK_NONE ? (int64_t)p->chunk_bytes + 4
							   : make_chunk(p, &r, i, raw, out, &bad);
		if (got < 0)
			err = (int)got;
		else
			sum += (uint64_t)got;
	}
	dsv_range_free(&r);
	free(raw);
	free(out);
	if (err)
		return err;
	/* 5% for chunks that compress worse than the sample */
	*need = (n ? sum / n * p->nchunks / 100 * 105 : 0) + META_RESERVE +
		p->nchunks * 64 /* chunk index entries */;
	return 0;
}

/* The writer loop: chunks in order to write. */
static int write_chunks(packer *p, dsv_pack_write_fn write, void *arg, dsv_pack_result *res,
			dsv_errbuf *eb)
{
	const dsv_pack_opts *o = p->o;
	dsv_pack_progress pr = { .rows_total = p->in->nrows };
	struct timespec last = { 0 };
	int err = 0;

	for (uint64_t w = 0; w < p->nchunks; w++) {
		slot *s = &p->slots[w % p->nslots];

		pthread_mutex_lock(&p->mu);
		while (!s->ready && !p->err && !stopped(o)) {
			struct timespec until;
			dsv_deadline_ms(&until, 100);
			pthread_cond_timedwait(&p->cv_ready, &p->mu, &until);
		}
		if (p->err && !s->ready)
			err = p->err;
		pthread_mutex_unlock(&p->mu);
		if (err)
			return err; /* the worker's message is in p->eb */
		if (stopped(o))
			return dsv_errf(eb, DSV_ERR_INTERRUPTED, "interrupted");

		uint64_t row0 = w * p->chunk_rows;
		if ((err = write(p, arg, w, row0, s->buf, s->size, eb)))
			return err;
		pr.stored_bytes += s->size;
		pr.rows_done = row0 + p->chunk_rows < p->in->nrows ? row0 + p->chunk_rows
								   : p->in->nrows;
		pr.raw_bytes = pr.rows_done * p->row_bytes;

		pthread_mutex_lock(&p->mu);
		s->ready = 0;
		p->written = w + 1;
		pthread_cond_broadcast(&p->cv_space);
		pthread_mutex_unlock(&p->mu);

		if (o->progress) {
			struct timespec now;
			clock_gettime(CLOCK_MONOTONIC, &now);
			if ((now.tv_sec - last.tv_sec) * 1000000000L + now.tv_nsec - last.tv_nsec >
			    100000000L) {
				o->progress(&pr, o->progress_arg);
				last = now;
			}
		}
	}
	if (o->progress)
		o->progress(&pr, o->progress_arg);
	res->stored_bytes = pr.stored_bytes;
	return 0;
}

int dsv_pack_run_workers(packer *p, dsv_pack_write_fn write, void *arg, dsv_pack_result *res,
			 dsv_errbuf *eb)
{
	int nthreads = p->o->threads > 0 ? p->o->threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
	pthread_t *tids;
	int started = 0, err = 0;

	if (nthreads < 1)
		nthreads = 1;
	if ((uint64_t)nthreads > p->nchunks)
		nthreads = p->nchunks ? (int)p->nchunks : 1;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv_ready, NULL);
	pthread_cond_init(&p->cv_space, NULL);
	p->nslots = 2u * (unsigned)nthreads;
	p->slots = calloc(p->nslots, sizeof(*p->slots));
	tids = calloc((size_t)nthreads, sizeof(*tids));
	if (!p->slots || !tids)
		err = DSV_ERR_NOMEM;
	for (unsigned k = 0; !err && k < p->nslots; k++)
		if (!(p->slots[k].buf = malloc(p->slot_cap)))
			err = DSV_ERR_NOMEM;
	if (err) {
		dsv_errf(eb, err, "out of memory");
		goto out;
	}
	for (; started < nthreads; started++)
		if (pthread_create(&tids[started], NULL, worker, p))
			break;
	if (!started) {
		err = dsv_errf(eb, DSV_ERR_INTERNAL, "cannot start threads");
		goto out;
	}
	res->threads = started;

	err = write_chunks(p, write, arg, res, eb);
	pthread_mutex_lock(&p->mu);
	if (err && !p->err)
		p->err = err; /* stop the workers */
	pthread_cond_broadcast(&p->cv_space);
	pthread_mutex_unlock(&p->mu);
	for (int k = 0; k < started; k++)
		pthread_join(tids[k], NULL);
	if (err && !eb->msg[0])
		*eb = p->eb;
out:
	free(tids);
	for (unsigned k = 0; p->slots && k < p->nslots; k++)
		free(p->slots[k].buf);
	free(p->slots);
	p->slots = NULL;
	pthread_cond_destroy(&p->cv_space);
	pthread_cond_destroy(&p->cv_ready);
	pthread_mutex_destroy(&p->mu);
	return err;
}
