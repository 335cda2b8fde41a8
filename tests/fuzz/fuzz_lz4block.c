/* Block-level decoding of LZ4 32004 frames (what the read path does for a
 * piece of a chunk of a store with a block table) on hostile bytes:
 *  - a frame: the header, the block index and the frame's own block
 *    table; then ranges decoded from only their blocks, into place or
 *    block by block to a sink, must give exactly what the whole-frame
 *    decoder gives, and fail exactly when it does;
 *  - a hostile table: the input's first words as a table's row, the rest
 *    as the blocks' stored bytes: span and decode must stay in bounds,
 *    and a sink is never given more than the range;
 *  - a multi-block encode of the input must decode back through its
 *    table. */
#include <stdlib.h>
#include <string.h>

#include "codec/lz4_table.h"
#include "dsview/codec.h"
#include "fuzz.h"

#define MAX_RAW (16u << 20)

/* A sink (dsv_lz4_sink) that appends, and is never to be given more than
 * the range it was made for. */
typedef struct bounded {
	uint8_t *out;
	uint64_t len, cap;
} bounded;

static void append(void *arg, const uint8_t *bytes, uint64_t len)
{
	bounded *b = arg;
	if (len > b->cap - b->len)
		abort();
	memcpy(b->out + b->len, bytes, (size_t)len);
	b->len += len;
}

/* Bytes [lo, hi) of src through its own table into out, and the same
 * through a sink, which must agree. @return 1 when they decode, 0 when
 * the frame fails (header, index or a block). */
static int by_table(const uint8_t *src, size_t size, uint64_t lo, uint64_t hi, uint8_t *out)
{
	dsv_lz4_frame f;
	uint64_t start, end;
	int ok = 0;
	if (dsv_lz4_frame_info(src, size, &f) || hi > f.raw || lo >= hi)
		return 0;
	uint64_t *at = malloc((size_t)(f.nblocks + 1) * sizeof(*at));
	uint32_t *row = malloc((size_t)f.nblocks * DSV_LZ4_TABLE_WORDS * 4 + 1);
	uint8_t *edge = malloc((size_t)f.block);
	if (!at || !row || !edge)
		abort();
	if (dsv_lz4_index(src, size, &f, at) == 0) {
		dsv_lz4_block_table(src, &f, at, row);
		if (dsv_lz4_table_span(row, lo / f.block, (hi - 1) / f.block, size, &start, &end))
			abort(); /* the frame's own table always spans */
		ok = dsv_lz4_table_decode(out, lo, hi, src + start, (size_t)(end - start), &f, row,
					  edge, NULL, NULL) >= 0;
		bounded b = { malloc((size_t)(hi - lo)), 0, hi - lo };
		if (!b.out)
			abort();
		int ok2 = dsv_lz4_table_decode(NULL, lo, hi, src + start, (size_t)(end - start), &f,
					       row, edge, append, &b) >= 0;
		if (ok2 != ok || (ok && (b.len != hi - lo || memcmp(b.out, out, (size_t)b.len))))
			abort();
		free(b.out);
	}
	free(at);
	free(row);
	free(edge);
	return ok;
}

/* The input as a table's row for k blocks, then stored bytes. */
static void hostile_table(const uint8_t *data, size_t size)
{
	if (size < 4)
		return;
	uint64_t k = 1 + data[0] % 8, bs = 1 + (data[1] | (size_t)data[2] << 8) % 4096;
	size_t words = (size_t)k * DSV_LZ4_TABLE_WORDS;
	if (size < 3 + words * 4)
		return;
	uint32_t row[8 * DSV_LZ4_TABLE_WORDS];
	memcpy(row, data + 3, words * 4);
	const uint8_t *stored = data + 3 + words * 4;
	size_t n = size - 3 - words * 4;
	dsv_lz4_frame f = { k * bs, bs, k };
	uint64_t lo = data[1] % (k * bs), hi = lo + 1 + data[2] % (k * bs - lo), start, end;
	uint8_t *out = malloc((size_t)(hi - lo)), *edge = malloc((size_t)bs);
	if (!out || !edge)
		abort();
	if (dsv_lz4_table_span(row, lo / bs, (hi - 1) / bs, n, &start, &end) == 0) {
		if (end > n || start > end)
			abort();
		(void)dsv_lz4_table_decode(out, lo, hi, stored + start, (size_t)(end - start), &f,
					   row, edge, NULL, NULL);
	}
	(void)dsv_lz4_table_decode(out, lo, hi, stored, n, &f, row, edge, NULL, NULL);
	bounded b = { out, 0, hi - lo };
	(void)dsv_lz4_table_decode(NULL, lo, hi, stored, n, &f, row, edge, append, &b);
	free(out);
	free(edge);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t raw = 0;
	if (dsv_lz4_raw_size(data, size, &raw) == 0 && raw > 0 && raw <= MAX_RAW) {
		uint8_t *a = malloc((size_t)raw), *b = malloc((size_t)raw);
		if (!a || !b)
			abort();
		int64_t whole = dsv_lz4_decode(b, (size_t)raw, data, size);
		if (by_table(data, size, 0, raw, a) != (whole >= 0))
			abort(); /* the two decoders disagree on this frame */
		if (whole >= 0 && memcmp(a, b, (size_t)raw))
			abort();
		uint64_t lo = size % raw, hi = lo + 1 + (size * 7) % (raw - lo);
		if (whole >= 0 &&
		    (!by_table(data, size, lo, hi, a) || memcmp(a, b + lo, (size_t)(hi - lo))))
			abort();
		free(a);
		free(b);
	}
	hostile_table(data, size);

	if (size < 2 || size > (1u << 16))
		return 0;
	size_t block = 1 + (data[0] | (size_t)data[1] << 8) % size;
	size_t cap = dsv_lz4_bound(size, block);
	uint8_t *enc = malloc(cap), *back = malloc(size);
	if (!enc || !back)
		abort();
	int64_t n = dsv_lz4_encode(enc, cap, data, size, block, data[1] % 3);
	if (n < 0 || !by_table(enc, (size_t)n, 0, size, back) || memcmp(back, data, size))
		abort();
	free(enc);
	free(back);
	return 0;
}
