/*
 * The GPU backend's host side (gpu.h), built with CUDA: which chunks the
 * device takes, reading and checking their stored bytes, the plan of
 * their LZ4 blocks (lz4_plan.c), the slots callers share, the counters,
 * and the fallback to the CPU. The CUDA runtime calls are gpu.cu's.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/knobs.h"
#include "common/log.h"
#include "common/tlsbuf.h"
#include "dsview/source.h"
#include "gpu/batch.h"
#include "gpu/cuda_i.h"
#include "gpu/gpu.h"
#include "source/source.h"
#include "view/view.h"

/* Two slots: while one caller's chunk is in its kernel, another's copies
 * run (double buffering across the FUSE and readahead threads). A chunk
 * read alone that finds both busy is decoded on the CPU instead of
 * waiting: its stored bytes are read before a slot is taken, so a slot is
 * held only for the copies and kernels. */
#define NSLOTS 2

struct dsv_gpu {
	int device;
	char name[256];
	uint64_t min_bytes;  /* DSVIEW_GPU_MIN_KB: smaller chunks stay on the CPU */
	uint64_t min_blocks; /* DSVIEW_GPU_MIN_BLOCKS: a chunk of fewer stays on the CPU */
	uint64_t batch;      /* each slot's buffers: a larger chunk stays on the CPU */
	uint8_t *tier;       /* device memory of the tier, or NULL */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	dsv_cuda_slot *slots[NSLOTS];
	int busy[NSLOTS];
	/* why slot k's last call failed: used by the caller holding slot k, so
	 * no per-call error buffer sits on the decode path's stack */
	dsv_errbuf eb[NSLOTS];
	atomic_int failed;
	atomic_uint_fast64_t chunks, bytes, batches, fallbacks, busy_cpu;
};

int dsv_gpu_open(int device, uint64_t batch, dsv_gpu **out, dsv_errbuf *eb)
{
	dsv_gpu *g = calloc(1, sizeof(*g));
	int err;
	*out = NULL;
	if (!g)
		return dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
	g->device = dsv_cuda_open(device, g->name, sizeof(g->name), eb);
	if (g->device < 0) {
		err = g->device;
		free(g);
		return err;
	}
	g->min_bytes = (uint64_t)dsv_knob_int(DSV_KNOB_GPU_MIN_KB) << 10;
	g->min_blocks = (uint64_t)dsv_knob_int(DSV_KNOB_GPU_MIN_BLOCKS);
	g->batch = batch;
	pthread_mutex_init(&g->mu, NULL);
	pthread_cond_init(&g->cv, NULL);
	for (int k = 0; k < NSLOTS; k++) {
		if ((err = dsv_cuda_slot_new(g->device, (size_t)batch, &g->slots[k], eb))) {
			int dev = g->device;
			dsv_gpu_close(g);
			dsv_cuda_release(dev); /* the device is refused whole */
			return err;
		}
	}
	*out = g;
	return 0;
}

int dsv_gpu_tier_alloc(dsv_gpu *g, uint64_t n, dsv_errbuf *eb)
{
	return dsv_cuda_tier_new(g->device, (size_t)n, &g->tier, eb);
}

void dsv_gpu_close(dsv_gpu *g)
{
	if (!g)
		return;
	for (int k = 0; k < NSLOTS; k++)
		dsv_cuda_slot_free(g->slots[k]);
	dsv_cuda_tier_free(g->device, g->tier);
	pthread_mutex_destroy(&g->mu);
	pthread_cond_destroy(&g->cv);
	free(g);
}

const char *dsv_gpu_name(const dsv_gpu *g)
{
	return g->name;
}

void dsv_gpu_get_stats(const dsv_gpu *g, dsv_gpu_stats *st)
{
	dsv_gpu *m = (dsv_gpu *)g; /* atomics are read through non-const */
	st->chunks = atomic_load(&m->chunks);
	st->bytes = atomic_load(&m->bytes);
	st->batches = atomic_load(&m->batches);
	st->fallbacks = atomic_load(&m->fallbacks);
	st->busy = atomic_load(&m->busy_cpu);
	st->failed = atomic_load(&m->failed);
}

static int take(dsv_gpu *g)
{
	int k;
	pthread_mutex_lock(&g->mu);
	for (;;) {
		for (k = 0; k < NSLOTS && g->busy[k]; k++)
			;
		if (k < NSLOTS)
			break;
		pthread_cond_wait(&g->cv, &g->mu);
	}
	g->busy[k] = 1;
	pthread_mutex_unlock(&g->mu);
	return k;
}

/* A free slot, or -1 when both are busy. */
static int try_take(dsv_gpu *g)
{
	int k;
	pthread_mutex_lock(&g->mu);
	for (k = 0; k < NSLOTS && g->busy[k]; k++)
		;
	if (k < NSLOTS)
		g->busy[k] = 1;
	pthread_mutex_unlock(&g->mu);
	return k < NSLOTS ? k : -1;
}

static void give(dsv_gpu *g, int k)
{
	pthread_mutex_lock(&g->mu);
	g->busy[k] = 0;
	pthread_cond_signal(&g->cv);
	pthread_mutex_unlock(&g->mu);
}

/* A CUDA error in slot k (err DSV_ERR_INTERNAL, its words in g->eb[k]):
 * logged once, and the device is off from then on. Other errors (a
 * chunk too large for the slot, a corrupt block) leave it on. */
static void turn_off(dsv_gpu *g, int k, int err)
{
	if (err == DSV_ERR_INTERNAL && atomic_exchange(&g->failed, 1) == 0)
		dsv_log_warn("gpu: %s; decoding on the CPU from now on", g->eb[k].msg);
}

/* Does the device take chunk ref of source s, by what is known before
 * its bytes are read? */
static int takes(const dsv_gpu *g, const dsv_source *s, const dsv_chunk_ref *ref, size_t size)
{
	const dsv_source_info *in = dsv_source_get_info(s);
	if (ref->codec != DSV_CODEC_LZ4 || ref->shuffle || ref->fallback || ref->grid ||
	    ref->raw_size < g->min_bytes || ref->raw_size > g->batch || ref->stored_size > g->batch)
		return 0;
	/* the CPU says what is wrong with a size that does not fit */
	if (size != ref->nelems * dsv_dtype_size(in->dtype) || size > ref->raw_size)
		return 0;
	/* a chunk of few blocks is a few warps: a CPU core decodes it sooner */
	return !in->lz4_block ||
	       (ref->raw_size + in->lz4_block - 1) / in->lz4_block >= g->min_blocks;
}

/* A chunk read and planned before it takes a slot. */
typedef struct read_chunk {
	const void *bytes; /* the LZ4 frame, in the thread's staging buffer */
	size_t n;          /* its bytes, the checksum left off */
	dsv_gpu_job *jobs; /* malloc'd */
	size_t njobs;
} read_chunk;

/* Reads chunk ref's stored bytes (checking its Fletcher32) and plans its
 * blocks into c. @return 0; DSV_ERR_UNSUPPORTED for a frame of fewer
 * blocks than the device takes; another dsv_err for the CPU to read and
 * report again (a read error, a failed check, no memory). */
static int read_chunk_in(const dsv_gpu *g, const dsv_source *s, const dsv_chunk_ref *ref,
			 read_chunk *c)
{
	void *buf = dsv_tls_buf(DSV_TLS_DEV_IN, (size_t)ref->stored_size);
	int err;

	*c = (read_chunk){ buf, 0, NULL, 0 };
	if (!buf)
		return DSV_ERR_NOMEM;
	if ((err = dsv_source_read_stored(s, ref, buf, &c->n)) ||
	    (err = dsv_gpu_plan_lz4(buf, c->n, ref->raw_size, 0, 0, NULL, 0, &c->njobs)))
		return err;
	if (c->njobs < g->min_blocks)
		return DSV_ERR_UNSUPPORTED;
	if (!(c->jobs = malloc(c->njobs * sizeof(*c->jobs))))
		return DSV_ERR_NOMEM;
	size_t again;
	if ((err = dsv_gpu_plan_lz4(buf, c->n, ref->raw_size, 0, 0, c->jobs, c->njobs, &again)))
		return err;
	return again == c->njobs ? 0 : DSV_ERR_CORRUPT;
}

/* Chunk c decoded in slot k into out (size bytes), admitted to the tier
 * at admit_at when >= 0. @return 0 or the slot's dsv_err. */
static int run_chunk(dsv_gpu *g, int k, const read_chunk *c, uint64_t raw, void *out, size_t size,
		     int64_t admit_at)
{
	void *in;
	dsv_gpu_job *jobs;
	int rc = dsv_cuda_slot_stage(g->slots[k], c->n, c->njobs, &in, &jobs, &g->eb[k]);
	if (rc)
		return rc;
	memcpy(in, c->bytes, c->n);
	memcpy(jobs, c->jobs, c->njobs * sizeof(*jobs));
	dsv_cuda_admit ad = { 0, (uint64_t)admit_at, raw };
	int admit = admit_at >= 0 && g->tier;
	return dsv_cuda_slot_run(g->slots[k], c->n, c->njobs, raw, NULL, NULL, 0, g->tier,
				 admit ? &ad : NULL, (size_t)admit, out, size, NULL, &g->eb[k]);
}

int dsv_gpu_decode(dsv_gpu *g, const dsv_view *v, uint64_t chunk, void *out, size_t size,
		   int64_t admit_at)
{
	dsv_chunk_ref ref;
	read_chunk c;
	size_t si;

	if (dsv_view_chunk_ref(v, chunk, &si, &ref) || !takes(g, v->sources[si], &ref, size))
		return DSV_ERR_UNSUPPORTED;
	if (atomic_load(&g->failed)) {
		atomic_fetch_add(&g->fallbacks, 1);
		return DSV_ERR_UNSUPPORTED;
	}
	int rc = read_chunk_in(g, v->sources[si], &ref, &c), k = -1;
	if (rc == 0 && (k = try_take(g)) < 0)
		atomic_fetch_add(&g->busy_cpu, 1);
	if (k >= 0) {
		rc = run_chunk(g, k, &c, ref.raw_size, out, size, admit_at);
		turn_off(g, k, rc);
		give(g, k);
	}
	free(c.jobs);
	if (rc == 0 && k >= 0) {
		atomic_fetch_add(&g->chunks, 1);
		atomic_fetch_add(&g->bytes, size);
		atomic_fetch_add(&g->batches, 1);
		return 0;
	}
	if (rc && rc != DSV_ERR_UNSUPPORTED)
		atomic_fetch_add(&g->fallbacks, 1);
	return DSV_ERR_UNSUPPORTED;
}

int dsv_gpu_tier_read(dsv_gpu *g, uint64_t at, void *out, size_t n)
{
	if (!g->tier || atomic_load(&g->failed))
		return DSV_ERR_UNSUPPORTED;
	int k = take(g);
	int rc = dsv_cuda_slot_fetch(g->slots[k], g->tier, at, n, out, &g->eb[k]);
	turn_off(g, k, rc);
	give(g, k);
	return rc ? DSV_ERR_UNSUPPORTED : 0;
}

/* Batch b of items planned and run in slot k. @return 0 and the items'
 * outputs delivered, DSV_ERR_UNSUPPORTED (a CUDA error: the device is
 * off), DSV_ERR_CORRUPT or DSV_ERR_NOMEM (the plan, or a block). */
static int run_batch(dsv_gpu *g, int k, const dsv_xform_desc *x, const dsv_gpu_item *items,
		     size_t nitems, const dsv_gpu_batch *b, dsv_cuda_item *ci, dsv_cuda_admit *ad,
		     dsv_gpu_timing *t)
{
	void *in;
	dsv_gpu_job *jobs;
	dsv_gpu_times tm;
	int rc = dsv_cuda_slot_stage(g->slots[k], b->n, b->njobs, &in, &jobs, &g->eb[k]);
	if (rc) {
		turn_off(g, k, rc);
		return DSV_ERR_UNSUPPORTED;
	}
	/* a plan that fails leaves the pinned jobs of an earlier batch: the
	 * kernel must not run on them */
	if ((rc = dsv_gpu_batch_plan(x, items, nitems, g->tier != NULL, b, in, jobs, ci, ad)))
		return rc;
	rc = dsv_cuda_slot_run(g->slots[k], b->n, b->njobs, b->raw, x, ci, nitems, g->tier, ad,
			       b->nadmits, NULL, b->out_n, &tm, &g->eb[k]);
	if (rc == DSV_ERR_INTERNAL || rc == DSV_ERR_OVERFLOW) {
		turn_off(g, k, rc);
		return DSV_ERR_UNSUPPORTED;
	}
	if (rc)
		return DSV_ERR_CORRUPT;
	dsv_gpu_batch_deliver(x, items, nitems, ci, dsv_cuda_slot_out(g->slots[k]));
	if (t)
		*t = (dsv_gpu_timing){ tm.h2d_s, tm.kernel_s, tm.d2h_s };
	return 0;
}

int dsv_gpu_decode_xform(dsv_gpu *g, const dsv_xform_desc *x, const dsv_gpu_item *items,
			 size_t nitems, dsv_gpu_timing *t)
{
	dsv_gpu_batch b;
	int err;

	if (atomic_load(&g->failed))
		return DSV_ERR_UNSUPPORTED;
	if ((err = dsv_gpu_batch_size(x, items, nitems, g->tier != NULL, &b)))
		return err;
	dsv_cuda_item *ci = calloc(nitems ? nitems : 1, sizeof(*ci));
	dsv_cuda_admit *ad = calloc(b.nadmits ? b.nadmits : 1, sizeof(*ad));
	if (!ci || !ad) {
		err = DSV_ERR_NOMEM;
	} else {
		int k = take(g);
		err = run_batch(g, k, x, items, nitems, &b, ci, ad, t);
		give(g, k);
	}
	if (!err) {
		atomic_fetch_add(&g->batches, 1);
		atomic_fetch_add(&g->chunks, nitems);
		atomic_fetch_add(&g->bytes, b.out_n);
	}
	free(ci);
	free(ad);
	return err;
}
