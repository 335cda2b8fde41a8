/* A batch planned on the host, for the device and its emulation (batch.h). */
#include <string.h>

#include "gpu/batch.h"

int dsv_gpu_batch_size(const dsv_xform_desc *x, const dsv_gpu_item *items, size_t nitems, int tier,
		       dsv_gpu_batch *b)
{
	size_t es = dsv_dtype_size((dsv_dtype)x->src), os = dsv_dtype_size((dsv_dtype)x->dst);
	size_t nj;
	int err;

	memset(b, 0, sizeof(*b));
	for (size_t i = 0; i < nitems; i++) {
		const dsv_gpu_item *it = &items[i];
		if (!es || it->raw % es)
			return DSV_ERR_CORRUPT;
		b->out_n += it->raw / es * os;
		if (it->tier_at >= 0) {
			if (!tier)
				return DSV_ERR_INVALID;
			continue;
		}
		if ((err = dsv_gpu_plan_lz4(it->src, it->n, it->raw, 0, 0, NULL, 0, &nj)))
			return err;
		b->n += it->n;
		b->njobs += nj;
		b->raw += it->raw;
		b->nadmits += it->admit_at >= 0 && tier;
	}
	return 0;
}

int dsv_gpu_batch_plan(const dsv_xform_desc *x, const dsv_gpu_item *items, size_t nitems, int tier,
		       const dsv_gpu_batch *b, uint8_t *in, dsv_gpu_job *jobs, dsv_cuda_item *ci,
		       dsv_cuda_admit *ad)
{
	size_t es = dsv_dtype_size((dsv_dtype)x->src), os = dsv_dtype_size((dsv_dtype)x->dst);
	uint64_t at = 0, dst = 0, o = 0;
	size_t j = 0, a = 0, nj;
	int err;

	for (size_t i = 0; i < nitems; i++) {
		const dsv_gpu_item *it = &items[i];
		uint64_t nelems = it->raw / es;
		if (it->tier_at >= 0) {
			ci[i] = (dsv_cuda_item){ (uint64_t)it->tier_at, o, nelems, it->e0, 1 };
			o += nelems * os;
			continue;
		}
		/* a plan that fails, or that finds more blocks than the
		 * sizing did, leaves jobs unwritten: nothing may run */
		if (at + it->n > b->n)
			return DSV_ERR_CORRUPT;
		memcpy(in + at, it->src, it->n);
		if ((err = dsv_gpu_plan_lz4(it->src, it->n, it->raw, at, dst, jobs + j,
					    b->njobs - j, &nj)))
			return err;
		if (nj > b->njobs - j)
			return DSV_ERR_CORRUPT;
		ci[i] = (dsv_cuda_item){ dst, o, nelems, it->e0, 0 };
		if (it->admit_at >= 0 && tier)
			ad[a++] = (dsv_cuda_admit){ dst, (uint64_t)it->admit_at, it->raw };
		j += nj;
		at += it->n;
		dst += it->raw;
		o += nelems * os;
	}
	if (j != b->njobs || at != b->n || dst != b->raw || o != b->out_n || a != b->nadmits)
		return DSV_ERR_CORRUPT;
	return 0;
}

void dsv_gpu_batch_deliver(const dsv_xform_desc *x, const dsv_gpu_item *items, size_t nitems,
			   const dsv_cuda_item *ci, const uint8_t *outs)
{
	size_t os = dsv_dtype_size((dsv_dtype)x->dst);
	for (size_t i = 0; i < nitems; i++)
		memcpy(items[i].out, outs + ci[i].out_off, (size_t)(ci[i].nelems * os));
}
