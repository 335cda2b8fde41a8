/* The host's half of an LZ4 chunk decoded on the GPU (lz4_plan.h). */
#include <stdlib.h>

#include "dsview/codec.h"
#include "dsview/dsview.h"
#include "gpu/dev_lz4.h"
#include "gpu/gpu_emu.h"
#include "gpu/lz4_plan.h"

int (*dsv_gpu_plan_fail_hook)(void);

int dsv_gpu_plan_lz4(const void *src, size_t n, uint64_t raw, uint64_t src_base, uint64_t dst_base,
		     dsv_gpu_job *jobs, size_t cap, size_t *njobs)
{
	dsv_lz4_frame f;
	uint64_t *at;

	*njobs = 0;
	if (dsv_lz4_frame_info(src, n, &f) || f.raw != raw)
		return DSV_ERR_CORRUPT;
	if (f.nblocks == 0)
		return 0;
	/* frame_info checked that every block's 4-byte header fits in n */
	if (dsv_gpu_plan_fail_hook && dsv_gpu_plan_fail_hook())
		return DSV_ERR_NOMEM;
	at = malloc((size_t)(f.nblocks + 1) * sizeof(*at));
	if (!at)
		return DSV_ERR_NOMEM;
	if (dsv_lz4_index(src, n, &f, at)) {
		free(at);
		return DSV_ERR_CORRUPT;
	}
	for (uint64_t j = 0; j < f.nblocks && j < cap; j++) {
		jobs[j].src = src_base + at[j] + 4;
		jobs[j].stored = (uint32_t)(at[j + 1] - at[j] - 4);
		jobs[j].dst = dst_base + j * f.block;
		/* block <= raw <= INT64_MAX, but a block of 4 GiB or more is
		 * never an LZ4 block: stored sizes are u32 and want must fit */
		uint64_t want = dsv_lz4_block_raw(&f, j);
		if (want > UINT32_MAX) {
			free(at);
			return DSV_ERR_CORRUPT;
		}
		jobs[j].want = (uint32_t)want;
	}
	*njobs = (size_t)f.nblocks;
	free(at);
	return 0;
}

int64_t dsv_gpu_lz4_decode_host(void *dst, size_t dst_cap, const void *src, size_t n)
{
	uint64_t raw;
	size_t njobs;
	int err;

	if (dsv_lz4_raw_size(src, n, &raw) || raw > dst_cap)
		return DSV_ERR_CORRUPT;
	if ((err = dsv_gpu_plan_lz4(src, n, raw, 0, 0, NULL, 0, &njobs)))
		return err;
	dsv_gpu_job *jobs = malloc((njobs ? njobs : 1) * sizeof(*jobs));
	if (!jobs)
		return DSV_ERR_NOMEM;
	err = dsv_gpu_plan_lz4(src, n, raw, 0, 0, jobs, njobs, &njobs);
	for (size_t j = 0; !err && j < njobs; j++)
		if (dsv_dev_lz4_frame_block((const uint8_t *)src + jobs[j].src, jobs[j].stored,
					    (uint8_t *)dst + jobs[j].dst, jobs[j].want, 0, 1))
			err = DSV_ERR_CORRUPT;
	free(jobs);
	return err ? err : (int64_t)raw;
}
