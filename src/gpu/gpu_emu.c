/*
 * The device's batch (dsv_gpu_decode_xform) computed on the CPU by the
 * host build of the device code: planned and staged as the device's
 * (batch.h), each job through dev_lz4.h's block decoder, the admits
 * copied into the tier, each element through dev_xform.h's
 * dsv_dev_xform_elem into one output, and that output delivered, as the
 * kernels and copies do. DSVIEW_GPU_EMULATE=1 routes the mount's device
 * readahead here on a machine without a GPU (backend/make.c), so that the
 * tests cover that path, from the staging of stored bytes to the pages
 * stored, with the device's own planning and arithmetic, and the tier
 * (host memory standing in for the device's). One lane, element by
 * element: slow, and never a fallback for a real device.
 */
#include <stdlib.h>
#include <string.h>

#include "gpu/batch.h"
#include "gpu/dev_lz4.h"
#include "gpu/dev_xform.h"
#include "gpu/gpu_emu.h"

/* The buffers of one batch, as a slot's. */
typedef struct emu_bufs {
	uint8_t *in, *raw, *out;
	dsv_gpu_job *jobs;
	dsv_cuda_item *ci;
	dsv_cuda_admit *ad;
} emu_bufs;

static void *room(size_t n, size_t size)
{
	return malloc((n ? n : 1) * size);
}

static void bufs_free(emu_bufs *e)
{
	free(e->in);
	free(e->raw);
	free(e->out);
	free(e->jobs);
	free(e->ci);
	free(e->ad);
}

/* The kernels' work: every job decoded, the admits copied into the tier,
 * every item transformed. @return 0 or DSV_ERR_CORRUPT (a block failed). */
static int run(const dsv_xform_desc *x, const dsv_gpu_batch *b, const emu_bufs *e, size_t nitems,
	       uint8_t *tier)
{
	for (size_t j = 0; j < b->njobs; j++)
		if (dsv_dev_lz4_frame_block(e->in + e->jobs[j].src, e->jobs[j].stored,
					    e->raw + e->jobs[j].dst, e->jobs[j].want, 0, 1))
			return DSV_ERR_CORRUPT;
	for (size_t a = 0; a < b->nadmits; a++)
		memcpy(tier + e->ad[a].tier_at, e->raw + e->ad[a].raw_off, (size_t)e->ad[a].n);
	for (size_t i = 0; i < nitems; i++) {
		const dsv_cuda_item *c = &e->ci[i];
		const uint8_t *src = (c->from_tier ? tier : e->raw) + c->src_off;
		for (uint64_t k = 0; k < c->nelems; k++)
			dsv_dev_xform_elem(x, src, k, c->e0 + k, e->out + c->out_off);
	}
	return 0;
}

int dsv_gpu_emu_decode_xform(const dsv_xform_desc *x, const dsv_gpu_item *items, size_t nitems,
			     uint8_t *tier)
{
	dsv_gpu_batch b;
	emu_bufs e = { 0 };
	int err = dsv_gpu_batch_size(x, items, nitems, tier != NULL, &b);
	if (err)
		return err;
	e.in = room(b.n, 1);
	e.raw = room((size_t)b.raw, 1);
	e.out = room(b.out_n, 1);
	e.jobs = room(b.njobs, sizeof(*e.jobs));
	e.ci = room(nitems, sizeof(*e.ci));
	e.ad = room(b.nadmits, sizeof(*e.ad));
	if (!e.in || !e.raw || !e.out || !e.jobs || !e.ci || !e.ad)
		err = DSV_ERR_NOMEM;
	else if (!(err = dsv_gpu_batch_plan(x, items, nitems, tier != NULL, &b, e.in, e.jobs, e.ci,
					    e.ad)) &&
		 !(err = run(x, &b, &e, nitems, tier)))
		dsv_gpu_batch_deliver(x, items, nitems, e.ci, e.out);
	bufs_free(&e);
	return err;
}
