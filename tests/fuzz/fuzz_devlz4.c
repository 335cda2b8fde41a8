/* The CUDA backend's LZ4 decoder (src/gpu/dev_lz4.h, the host build of the
 * device code) against liblz4 on hostile bytes:
 *  - the input as one LZ4 block, decoded into capacities around its size
 *    and across the 64-byte end of liblz4's fast phase: the same count as
 *    LZ4_decompress_safe (or both refuse) and the same bytes;
 *  - the input as a 32004 frame, through the GPU plan (src/gpu/lz4_plan.c):
 *    the same verdict and bytes as dsv_lz4_decode;
 *  - the input compressed (fast and HC) must decode back to itself. */
#include <stdlib.h>
#include <string.h>

#include <lz4.h>
#include <lz4hc.h>

#include "dsview/codec.h"
#include "fuzz.h"
#include "gpu/dev_lz4.h"
#include "gpu/lz4_plan.h"

#define MAX_CAP (1u << 20)

/* @return LZ4_decompress_safe's count; aborts when the two disagree. */
static int both(const uint8_t *in, size_t n, size_t cap)
{
	uint8_t *a = malloc(cap + 1), *b = malloc(cap + 1);
	if (!a || !b)
		abort();
	int want = LZ4_decompress_safe((const char *)in, (char *)a, (int)n, (int)cap);
	int64_t got = dsv_dev_lz4_block(in, (int64_t)n, b, (int64_t)cap, 0, 1);
	if ((want < 0) != (got < 0) || (want >= 0 && got != want) ||
	    (want > 0 && memcmp(a, b, (size_t)want)))
		abort();
	free(a);
	free(b);
	return want;
}

static void as_frame(const uint8_t *data, size_t size)
{
	uint64_t raw;
	if (dsv_lz4_raw_size(data, size, &raw) || raw > (16u << 20))
		return;
	uint8_t *a = malloc(raw ? (size_t)raw : 1), *b = malloc(raw ? (size_t)raw : 1);
	if (!a || !b)
		abort();
	int64_t want = dsv_lz4_decode(a, (size_t)raw, data, size);
	int64_t got = dsv_gpu_lz4_decode_host(b, (size_t)raw, data, size);
	if ((want < 0) != (got < 0) || (want >= 0 && got != want) ||
	    (want > 0 && memcmp(a, b, (size_t)want)))
		abort();
	free(a);
	free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > MAX_CAP)
		return 0;
	int full = both(data, size, MAX_CAP);
	size_t caps[] = { 0, 1, 16, 63, 64, 65, 200, 4096 };
	for (size_t c = 0; c < sizeof(caps) / sizeof(caps[0]); c++)
		(void)both(data, size, caps[c]);
	if (full >= 0) {
		/* around the decoded size: the fast phase ends 64 bytes early */
		int around[] = { 0, -1, 1, 5, 11, 12, 13, 31, 32, 33, 63, 64, 65 };
		for (size_t k = 0; k < sizeof(around) / sizeof(around[0]); k++)
			if (full + around[k] >= 0)
				(void)both(data, size, (size_t)(full + around[k]));
	}
	/* the first two bytes as a capacity, the rest as the block */
	if (size > 2)
		(void)both(data + 2, size - 2, (size_t)(data[0] | data[1] << 8));
	as_frame(data, size);

	if (size == 0 || size > (1u << 16))
		return 0;
	int bound = LZ4_compressBound((int)size);
	uint8_t *enc = malloc((size_t)bound);
	if (!enc)
		abort();
	int c = size % 2 ? LZ4_compress_default((const char *)data, (char *)enc, (int)size, bound)
			 : LZ4_compress_HC((const char *)data, (char *)enc, (int)size, bound,
					   1 + data[0] % 12);
	if (c <= 0 || both(enc, (size_t)c, size) != (int)size)
		abort();
	free(enc);
	return 0;
}
