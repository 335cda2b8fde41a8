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
#include "dsview/source.h"
#include "gpu/cuda_i.h"
#include "gpu/gpu.h"
#include "source/source.h"
#include "view/view.h"

/* Two slots: while one caller's chunk is in its kernel, another's copies
 * run (double buffering across the FUSE and readahead threads). */
#define NSLOTS 2

struct dsv_gpu {
	int device;
	char name[256];
	uint64_t min_bytes; /* DSVIEW_GPU_MIN_KB: smaller chunks stay on the CPU */
	uint64_t batch;     /* each slot's buffers: a larger chunk stays on the CPU */
	uint8_t *tier;      /* device memory of the tier, or NULL */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	dsv_cuda_slot *slots[NSLOTS];
	int busy[NSLOTS];
	/* why slot k's last call failed: used by the caller holding slot k, so
	 * no per-call error buffer sits on the decode path's stack */
	dsv_errbuf eb[NSLOTS];
	atomic_int failed;
	atomic_uint_fast64_t chunks, bytes, batches, fallbacks;
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
	g->batch = batch;
	pthread_mutex_init(&g->mu, NULL);
	pthread_cond_init(&g->cv, NULL);
	for (int k = 0; k < NSLOTS; k++) {
		if ((err = dsv_cuda_slot_new(g->device, (size_t)batch, &g->slots[k], eb))) {
			dsv_gpu_close(g);
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

/* Stages chunk ref's stored bytes and its block plan in slot k.
 * @return the jobs, or -1 when the CPU should take the chunk (a read
 * error, a failed checksum or frame: it reads and reports it again). */
static int64_t stage_chunk(dsv_gpu *g, int k, const dsv_source *s, const dsv_chunk_ref *ref,
			   size_t *payload)
{
	void *in;
	dsv_gpu_job *jobs;
	size_t njobs;
	size_t n = (size_t)ref->stored_size;

	int rc = dsv_cuda_slot_stage(g->slots[k], n, 0, &in, &jobs, &g->eb[k]);
	if (rc) {
		turn_off(g, k, rc);
		return -1;
	}
	if (dsv_source_read_stored(s, ref, in, payload))
		return -1;
	if (dsv_gpu_plan_lz4(in, *payload, ref->raw_size, 0, 0, NULL, 0, &njobs))
		return -1;
	if ((rc = dsv_cuda_slot_stage(g->slots[k], n, njobs, &in, &jobs, &g->eb[k]))) {
		turn_off(g, k, rc);
		return -1;
	}
	if (dsv_gpu_plan_lz4(in, *payload, ref->raw_size, 0, 0, jobs, njobs, &njobs))
		return -1;
	return (int64_t)njobs;
}

int dsv_gpu_decode(dsv_gpu *g, const dsv_view *v, uint64_t chunk, void *out, size_t size,
		   int64_t admit_at)
{
	dsv_chunk_ref ref;
	size_t si, payload = 0;

	if (dsv_view_chunk_ref(v, chunk, &si, &ref) || ref.codec != DSV_CODEC_LZ4 || ref.fallback ||
	    ref.grid || ref.raw_size < g->min_bytes || ref.raw_size > g->batch ||
	    ref.stored_size > g->batch)
		return DSV_ERR_UNSUPPORTED;
	const dsv_source *s = v->sources[si];
	if (size != ref.nelems * dsv_dtype_size(dsv_source_get_info(s)->dtype) || size > ref.raw_size)
		return DSV_ERR_UNSUPPORTED; /* the CPU says what is wrong */
	if (atomic_load(&g->failed)) {
		atomic_fetch_add(&g->fallbacks, 1);
		return DSV_ERR_UNSUPPORTED;
	}
	int k = take(g), rc = -1;
	int64_t njobs = stage_chunk(g, k, s, &ref, &payload);
	if (njobs >= 0) {
		dsv_cuda_admit ad = { 0, (uint64_t)admit_at, ref.raw_size };
		int admit = admit_at >= 0 && g->tier;
		rc = dsv_cuda_slot_run(g->slots[k], payload, (size_t)njobs, ref.raw_size, NULL, NULL, 0,
				       g->tier, admit ? &ad : NULL, (size_t)admit, out, size, NULL,
				       &g->eb[k]);
		turn_off(g, k, rc);
	}
	give(g, k);
	if (rc != 0) {
		atomic_fetch_add(&g->fallbacks, 1);
		return DSV_ERR_UNSUPPORTED;
	}
	atomic_fetch_add(&g->chunks, 1);
	atomic_fetch_add(&g->bytes, size);
	atomic_fetch_add(&g->batches, 1);
	return 0;
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

int dsv_gpu_decode_xform(dsv_gpu *g, const dsv_xform_desc *x, const dsv_gpu_item *items,
			 size_t nitems, dsv_gpu_timing *t)
{
	size_t es = dsv_dtype_size((dsv_dtype)x->src), os = dsv_dtype_size((dsv_dtype)x->dst);
	size_t n = 0, njobs = 0, nj, out_n = 0, nadmits = 0;
	uint64_t raw = 0;
	int err = 0;

	if (atomic_load(&g->failed))
		return DSV_ERR_UNSUPPORTED;
	for (size_t i = 0; i < nitems; i++) {
		if (items[i].raw % es)
			return DSV_ERR_CORRUPT;
		out_n += items[i].raw / es * os;
		if (items[i].tier_at >= 0) {
			if (!g->tier)
				return DSV_ERR_INVALID;
			continue;
		}
		if (dsv_gpu_plan_lz4(items[i].src, items[i].n, items[i].raw, 0, 0, NULL, 0, &nj))
			return DSV_ERR_CORRUPT;
		n += items[i].n;
		njobs += nj;
		raw += items[i].raw;
		nadmits += items[i].admit_at >= 0 && g->tier;
	}
	dsv_cuda_item *ci = calloc(nitems ? nitems : 1, sizeof(*ci));
	dsv_cuda_admit *ad = calloc(nadmits ? nadmits : 1, sizeof(*ad));
	int k = take(g), rc = -1;
	void *in;
	dsv_gpu_job *jobs;
	if (!ci || !ad) {
		err = DSV_ERR_NOMEM;
	} else if ((rc = dsv_cuda_slot_stage(g->slots[k], n, njobs, &in, &jobs, &g->eb[k]))) {
		turn_off(g, k, rc);
		err = DSV_ERR_UNSUPPORTED;
	} else {
		uint64_t at = 0, dst = 0, o = 0;
		size_t j = 0, a = 0;
		for (size_t i = 0; i < nitems; i++) {
			const dsv_gpu_item *it = &items[i];
			if (it->tier_at >= 0) {
				ci[i] = (dsv_cuda_item){ (uint64_t)it->tier_at, o, it->raw / es, it->e0, 1 };
				o += it->raw / es * os;
				continue;
			}
			memcpy((uint8_t *)in + at, it->src, it->n);
			(void)dsv_gpu_plan_lz4(it->src, it->n, it->raw, at, dst, jobs + j, njobs - j, &nj);
			ci[i] = (dsv_cuda_item){ dst, o, it->raw / es, it->e0, 0 };
			if (it->admit_at >= 0 && g->tier)
				ad[a++] = (dsv_cuda_admit){ dst, (uint64_t)it->admit_at, it->raw };
			j += nj;
			at += it->n;
			dst += it->raw;
			o += it->raw / es * os;
		}
		dsv_gpu_times tm;
		rc = dsv_cuda_slot_run(g->slots[k], n, njobs, raw, x, ci, nitems, g->tier, ad, nadmits,
				       NULL, out_n, &tm, &g->eb[k]);
		if (rc == DSV_ERR_INTERNAL || rc == DSV_ERR_OVERFLOW) {
			turn_off(g, k, rc);
			err = DSV_ERR_UNSUPPORTED;
		} else if (rc) {
			err = DSV_ERR_CORRUPT;
		} else {
			const uint8_t *outs = dsv_cuda_slot_out(g->slots[k]);
			for (size_t i = 0; i < nitems; i++)
				memcpy(items[i].out, outs + ci[i].out_off, (size_t)(ci[i].nelems * os));
			if (t)
				*t = (dsv_gpu_timing){ tm.h2d_s, tm.kernel_s, tm.d2h_s };
			atomic_fetch_add(&g->batches, 1);
			atomic_fetch_add(&g->chunks, nitems);
			atomic_fetch_add(&g->bytes, out_n);
		}
	}
	give(g, k);
	free(ci);
	free(ad);
	return err;
}
