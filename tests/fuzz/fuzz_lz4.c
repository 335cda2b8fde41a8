/* The LZ4 32004 chunk decoder and Fletcher32 check on hostile bytes, and an
 * encode -> decode round trip of the same bytes that must give them back. */
#include <stdlib.h>
#include <string.h>

#include "dsview/codec.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t raw;
	if (dsv_lz4_raw_size(data, size, &raw) == 0) {
		size_t cap = raw < (16u << 20) ? (size_t)raw : (16u << 20);
		void *out = malloc(cap ? cap : 1);
		if (out) {
			int64_t got = dsv_lz4_decode(out, cap, data, size);
			if (got >= 0 && (uint64_t)got != raw)
				abort(); /* a success must be the declared size */
			free(out);
		}
	}
	(void)dsv_fletcher32_check(data, size);

	if (size > (1u << 16))
		return 0;
	size_t bound = dsv_lz4_bound(size, 0);
	size_t block = size > 1 ? 1 + data[0] % size : 0; /* several blocks too */
	size_t bound_b = block ? dsv_lz4_bound(size, block) : bound;
	char *enc = malloc((bound_b > bound ? bound_b : bound) + 4), *back = malloc(size + 1);
	if (!enc || !back)
		abort();
	int64_t n = block && size > 1
			    ? dsv_lz4_encode(enc, bound_b, data, size, block, data[1] % 13)
			    : dsv_lz4_encode_fast(enc, bound, data, size, 0, 1);
	if (n < 0)
		abort(); /* encoding into a bound-sized buffer cannot fail */
	dsv_fletcher32_append(enc, (size_t)n);
	if (dsv_fletcher32_check(enc, (size_t)n + 4) != 0)
		abort();
	if (dsv_lz4_decode(back, size, enc, (size_t)n) != (int64_t)size || memcmp(back, data, size))
		abort();
	free(enc);
	free(back);
	return 0;
}
