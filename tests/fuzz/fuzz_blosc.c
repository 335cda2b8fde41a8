/* The Blosc 32001 chunk decoder on hostile bytes (decoded into a buffer of
 * exactly the header's size, and of a size one off), and a round trip
 * through libblosc's compressor with the codec, shuffle and type size the
 * first bytes pick, which must give the bytes back. */
#include <blosc.h>
#include <stdlib.h>
#include <string.h>

#include "dsview/codec.h"
#include "fuzz.h"

static const char *const cnames[] = { "blosclz", "lz4", "lz4hc", "snappy", "zlib", "zstd" };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t raw;
	if (dsv_blosc_raw_size(data, size, &raw) == 0 && raw <= (16u << 20)) {
		void *out = malloc(raw + 1);
		if (out) {
			int64_t got = dsv_blosc_decode(out, (size_t)raw, data, size);
			if (got >= 0 && (uint64_t)got != raw)
				abort(); /* a success must be the declared size */
			if (dsv_blosc_decode(out, (size_t)raw + 1, data, size) >= 0)
				abort(); /* and only that size */
			free(out);
		}
	}

	if (size < 3 || size > (1u << 16))
		return 0;
	const char *cname = cnames[data[0] % 6];
	int shuffle = data[1] % 3, clevel = data[2] % 10;
	size_t typesize = (size_t)1 << (data[1] / 3 % 4), n = size - 3;
	char *enc = malloc(n + BLOSC_MAX_OVERHEAD), *back = malloc(n + 1);
	if (!enc || !back)
		abort();
	int m = blosc_compress_ctx(clevel, shuffle, typesize, n, data + 3, enc,
				   n + BLOSC_MAX_OVERHEAD, cname, 0, 1);
	if (m < BLOSC_MIN_HEADER_LENGTH)
		abort(); /* nbytes + 16 always suffices */
	if (dsv_blosc_decode(back, n, enc, (size_t)m) != (int64_t)n || memcmp(back, data + 3, n))
		abort();
	free(enc);
	free(back);
	return 0;
}
