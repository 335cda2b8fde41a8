/* The LZF 32000 chunk decoder on hostile bytes (the first two bytes pick
 * the expected size), and an encode -> decode round trip of the same bytes
 * that must give them back. */
#include <stdlib.h>
#include <string.h>

#include "codec/codec_test.h"
#include "dsview/codec.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size >= 2) {
		size_t want = (size_t)data[0] << 8 | data[1];
		void *out = malloc(want ? want : 1);
		if (!out)
			abort();
		int64_t got = dsv_lzf_decode(out, want, data + 2, size - 2);
		if (got >= 0 && (size_t)got != want)
			abort(); /* a success must be the exact size */
		free(out);
	}

	if (size > (1u << 16))
		return 0;
	size_t cap = size + size / 32 + 1;
	char *enc = malloc(cap), *back = malloc(size + 1);
	if (!enc || !back)
		abort();
	int64_t n = dsv_lzf_encode(enc, cap, data, size);
	if (n < 0)
		abort(); /* the documented bound always suffices */
	if (dsv_lzf_decode(back, size, enc, (size_t)n) != (int64_t)size || memcmp(back, data, size))
		abort();
	free(enc);
	free(back);
	return 0;
}
