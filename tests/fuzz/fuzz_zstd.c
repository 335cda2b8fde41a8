/* The zstd 32015 chunk decoder on hostile bytes, and an encode -> decode
 * round trip of the same bytes that must give them back. */
#include <stdlib.h>
#include <string.h>

#include "dsview/codec.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t raw;
	if (dsv_zstd_raw_size(data, size, &raw) == 0) {
		/* a frame without a size decodes into the chunk's: 64 KiB */
		int sized = raw != DSV_ZSTD_SIZE_UNKNOWN;
		size_t cap = !sized ? (64u << 10) : raw < (16u << 20) ? (size_t)raw : (16u << 20);
		void *out = malloc(cap ? cap : 1);
		if (out) {
			int64_t got = dsv_zstd_decode(out, cap, data, size);
			if (got >= 0 && (sized ? (uint64_t)got != raw : (uint64_t)got > cap))
				abort(); /* the declared size, or no more than the room */
			free(out);
		}
	}

	if (size > (1u << 16))
		return 0;
	size_t bound = dsv_zstd_bound(size);
	char *enc = malloc(bound), *back = malloc(size + 1);
	if (!enc || !back)
		abort();
	int64_t n = dsv_zstd_encode(enc, bound, data, size, size ? 1 + data[0] % 9 : 1);
	if (n < 0)
		abort(); /* encoding into a bound-sized buffer cannot fail */
	if (dsv_zstd_decode(back, size, enc, (size_t)n) != (int64_t)size ||
	    memcmp(back, data, size))
		abort();
	free(enc);
	free(back);
	return 0;
}
