/* The bitshuffle 32008 chunk decoder on hostile bytes, and an encode ->
 * decode round trip of the same bytes that must give them back.
 * Input: byte 0 picks the element size (1 + b % 16), byte 1 the
 * compression (none, LZ4, zstd), bytes 2-3 the element count (u16 BE),
 * byte 4 the block size of an uncompressed chunk (8 * b elements; 0: the
 * default); the rest is the chunk. */
#include <stdlib.h>
#include <string.h>

#include "dsview/codec.h"
#include "fuzz.h"

static const int comps[] = { DSV_BSHUF_NONE, DSV_BSHUF_LZ4, DSV_BSHUF_ZSTD };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 5)
		return 0;
	size_t es = 1 + data[0] % 16, n = (size_t)data[2] << 8 | data[3], block = 8u * data[4];
	int comp = comps[data[1] % 3];
	size_t want = n * es;
	void *out = malloc(want ? want : 1);
	if (!out)
		abort();
	int64_t got = dsv_bshuf_decode(out, want, data + 5, size - 5, es, block, comp);
	if (got >= 0 && (size_t)got != want)
		abort(); /* a success must be the exact size */
	free(out);

	if (size > (1u << 16))
		return 0;
	/* the same bytes as data: whole elements of es bytes */
	size_t raw = (size - 5) / es * es;
	size_t bound = dsv_bshuf_bound(raw, es, block, comp);
	char *enc = malloc(bound + 1), *back = malloc(raw + 1);
	if (!enc || !back)
		abort();
	int64_t len = dsv_bshuf_encode(enc, bound, data + 5, raw, es, block, comp, 1);
	if (len < 0)
		abort(); /* encoding into a bound-sized buffer cannot fail */
	if (dsv_bshuf_decode(back, raw, enc, (size_t)len, es, block, comp) != (int64_t)raw ||
	    memcmp(back, data + 5, raw))
		abort();
	free(enc);
	free(back);
	return 0;
}
