/* HDF5's Blosc2 filter (32026) on hostile bytes, through libblosc2 as the
 * fast path loads it (src/codec/blosc2.c): byte 0 picks the chunk's shape
 * and so the decoded size (a 2-d float32 chunk, a 3-d uint8 one that B2ND
 * cuts into blocks, a 1-d one, a 9-d one), the rest is the chunk's frame.
 * Without libblosc2 on the loader's path (make venv: the blosc2 wheel's;
 * fuzz-replay and fuzz set it) every input is refused unread. */
#include <stdlib.h>
#include <string.h>

#include "codec/codec.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct {
		int ndim;
		uint64_t shape[9];
		size_t esize;
	} shapes[] = {
		{ 2, { 16, 24 }, 4 },
		{ 3, { 4, 8, 6 }, 1 },
		{ 1, { 700 }, 1 },
		{ 9, { 1, 3, 2, 2, 2, 2, 2, 2, 3 }, 2 },
	};
	if (size < 1)
		return 0;
	int pick = data[0] % 4;
	size_t n = shapes[pick].esize;
	for (int k = 0; k < shapes[pick].ndim; k++)
		n *= shapes[pick].shape[k];
	unsigned char *dst = malloc(n);
	if (!dst)
		return 0;
	(void)dsv_blosc2_decode(dst, n, data + 1, size - 1, shapes[pick].ndim, shapes[pick].shape);
	free(dst);
	return 0;
}
