/* Block-level decoding of LZ4 32004 frames (what the read path does for a
 * piece of a chunk) on hostile bytes: the header, the block index, every
 * block decoded alone. Differential: the blocks decode, one by one, to
 * exactly what the whole-frame decoder gives, and fail exactly when it
 * does. Then a multi-block encode of the same bytes must index and decode
 * block by block back to them. */
#include <stdlib.h>
#include <string.h>

#include "dsview/codec.h"
#include "fuzz.h"

#define MAX_RAW (16u << 20)

/* @return 1 when every block of src decodes alone into out (raw bytes). */
static int by_blocks(const uint8_t *src, size_t size, uint8_t *out, size_t cap, uint64_t *raw)
{
	dsv_lz4_frame f;
	int ok = 1;
	if (dsv_lz4_frame_info(src, size, &f) || f.raw > cap)
		return 0;
	*raw = f.raw;
	uint64_t *at = malloc((size_t)(f.nblocks + 1) * sizeof(*at));
	if (!at)
		abort();
	if (dsv_lz4_index(src, size, &f, at))
		ok = 0;
	for (uint64_t i = 0; ok && i < f.nblocks; i++) {
		uint64_t want = f.raw - i * f.block < f.block ? f.raw - i * f.block : f.block;
		int64_t got = dsv_lz4_decode_block(out + i * f.block, (size_t)want, src, size, &f, at, i);
		if (got >= 0 && (uint64_t)got != want)
			abort(); /* a success is the block's size */
		ok = got >= 0;
	}
	/* out of range and short destinations fail, whatever the frame */
	if (ok && dsv_lz4_decode_block(out, cap, src, size, &f, at, f.nblocks) >= 0)
		abort();
	free(at);
	return ok;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t raw = 0;
	if (dsv_lz4_raw_size(data, size, &raw) == 0 && raw <= MAX_RAW) {
		uint8_t *a = malloc(raw ? (size_t)raw : 1), *b = malloc(raw ? (size_t)raw : 1);
		if (!a || !b)
			abort();
		int blocks_ok = by_blocks(data, size, a, (size_t)raw, &raw);
		int64_t whole = dsv_lz4_decode(b, (size_t)raw, data, size);
		if (blocks_ok != (whole >= 0))
			abort(); /* the two decoders disagree on this frame */
		if (blocks_ok && memcmp(a, b, (size_t)raw))
			abort();
		free(a);
		free(b);
	}

	if (size < 2 || size > (1u << 16))
		return 0;
	size_t block = 1 + (data[0] | (size_t)data[1] << 8) % size;
	size_t cap = dsv_lz4_bound(size, block);
	uint8_t *enc = malloc(cap), *back = malloc(size);
	uint64_t got = 0;
	if (!enc || !back)
		abort();
	int64_t n = dsv_lz4_encode(enc, cap, data, size, block, data[1] % 3);
	if (n < 0 || !by_blocks(enc, (size_t)n, back, size, &got) || got != size ||
	    memcmp(back, data, size))
		abort();
	free(enc);
	free(back);
	return 0;
}
