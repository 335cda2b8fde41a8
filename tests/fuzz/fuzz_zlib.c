/* zlib/gzip chunk decoding on hostile bytes, and an encode -> decode round
 * trip. Byte 0: bit 0 picks gzip; bytes 1-2 the decoded size asked for
 * (little-endian, up to 64 KiB); the rest is the stream. */
#include <stdlib.h>
#include <string.h>

#include "codec/codec_test.h"
#include "dsview/codec.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 3)
		return 0;
	int gzip = data[0] & 1;
	size_t want = (size_t)data[1] | (size_t)data[2] << 8;
	const uint8_t *src = data + 3;
	size_t n = size - 3;
	unsigned char *out = malloc(want ? want : 1);
	if (!out)
		abort();
	int64_t got = dsv_zlib_decode(out, want, src, n, gzip);
	if (got >= 0 && (size_t)got != want)
		abort(); /* a success is exactly the size asked for */
	free(out);

	if (n > (1u << 16))
		return 0;
	size_t bound = dsv_zlib_bound(n, gzip);
	unsigned char *enc = malloc(bound), *back = malloc(n + 1);
	if (!enc || !back)
		abort();
	int64_t k = dsv_zlib_encode(enc, bound, src, n, data[0] >> 1 & 7, gzip);
	if (k < 0)
		abort(); /* encoding into a bound-sized buffer cannot fail */
	if (dsv_zlib_decode(back, n, enc, (size_t)k, gzip) != (int64_t)n || memcmp(back, src, n))
		abort();
	free(enc);
	free(back);
	return 0;
}
