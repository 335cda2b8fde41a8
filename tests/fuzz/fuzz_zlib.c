/* zlib/gzip chunk decoding on hostile bytes, and an encode -> decode round
 * trip; HDF5's deflate filter (libdeflate) on the same zlib streams, and
 * un-shuffling what it makes. Byte 0: bit 0 picks gzip, bits 1-3 the
 * encoder's level and how many bytes short of the chunk a read keeps,
 * bits 4-7 the shuffle's element size less 1; bytes 1-2 the decoded size
 * asked for (little-endian, up to 64 KiB); the rest is the stream. */
#include <stdlib.h>
#include <string.h>

#include "codec/codec_test.h"
#include "dsview/codec.h"
#include "fuzz.h"

/* HDF5's shuffle undone element by element: byte k of element i is at
 * k * (n / es) + i, the n % es bytes left over are at the end as they were. */
static void unshuffle_ref(uint8_t *dst, const uint8_t *src, size_t n, size_t es)
{
	size_t ne = n / es;
	memcpy(dst, src, n);
	if (es <= 1 || ne <= 1)
		return;
	for (size_t i = 0; i < ne; i++)
		for (size_t k = 0; k < es; k++)
			dst[i * es + k] = src[k * ne + i];
}

/* The deflate filter's decoder agrees with zlib's on every stream zlib
 * takes whole; its output un-shuffles as the reference does, in part or
 * whole. */
static void deflate_and_unshuffle(const uint8_t *data, const uint8_t *src, size_t n, size_t want,
				  int64_t zlib_got, const uint8_t *zlib_out)
{
	uint8_t *out = malloc(want ? want : 1), *ref = malloc(want ? want : 1),
		*un = malloc(want + 1);
	if (!out || !ref || !un)
		abort();
	int64_t got = dsv_deflate_decode(out, want, src, n);
	if (got >= 0 && (size_t)got != want)
		abort(); /* a success is exactly the size asked for */
	if (zlib_got >= 0 && (got != zlib_got || memcmp(out, zlib_out, want)))
		abort(); /* zlib took the stream whole: so must the filter */
	if (got < 0) {   /* un-shuffle the stream's own bytes instead */
		size_t k = n < want ? n : want;
		memcpy(out, src, k);
		memset(out + k, 0, want - k);
	}
	size_t es = (size_t)(data[0] >> 4) + 1, cut = (size_t)(data[0] >> 1 & 7);
	size_t keep = want > cut ? want - cut : 0;
	unshuffle_ref(ref, out, want, es);
	un[keep] = 0xa5;
	if (dsv_unshuffle(un, keep, out, want, es) != 0 || memcmp(un, ref, keep) ||
	    un[keep] != 0xa5)
		abort();
	free(out);
	free(ref);
	free(un);
}

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
	if (!gzip)
		deflate_and_unshuffle(data, src, n, want, got, out);
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
