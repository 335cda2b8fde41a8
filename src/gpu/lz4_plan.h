/*
 * The host's half of an LZ4 (32004) chunk decoded on the GPU: the frame's
 * header and block headers are read and checked here, as dsv_lz4_decode
 * checks them, and each block becomes one job for a warp
 * (dsv_dev_lz4_frame_block, dev_lz4.h). Built in every build: the tests run
 * the same plan through the host build of the device decoder.
 */
#ifndef DSV_GPU_LZ4_PLAN_H
#define DSV_GPU_LZ4_PLAN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One block: stored bytes at src (offsets into the staged input) decode
 * to want bytes at dst (offsets into the output). */
typedef struct dsv_gpu_job {
	uint64_t src, dst;
	uint32_t stored, want;
} dsv_gpu_job;

/* The blocks of the frame src[0, n), which must decode to exactly raw
 * bytes: their count (0 for an empty frame) in *njobs, at most cap of
 * them written to jobs (ask with cap 0 first), offsets shifted by src_base
 * and dst_base. @return 0, DSV_ERR_CORRUPT (what dsv_lz4_decode refuses
 * before any block is decoded, or a raw size other than raw), or
 * DSV_ERR_NOMEM. */
int dsv_gpu_plan_lz4(const void *src, size_t n, uint64_t raw, uint64_t src_base, uint64_t dst_base,
		     dsv_gpu_job *jobs, size_t cap, size_t *njobs);

/* The whole frame through the plan and the host build of the device
 * decoder, one lane: what the GPU computes, for the tests and as a
 * reference. @return raw, or a negative dsv_err as dsv_lz4_decode. */
int64_t dsv_gpu_lz4_decode_host(void *dst, size_t dst_cap, const void *src, size_t n);

#ifdef __cplusplus
}
#endif

#endif
