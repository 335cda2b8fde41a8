/* The block table of an LZ4 store: see lz4_table.h. */
#include <string.h>

#include "codec/lz4_table.h"
#include "common/bytes.h"
#include "dsview/dsview.h"

#define LZ4F_HEADER DSV_LZ4_HEADER
#define LZ4F_BLOCK_HEADER 4

void dsv_lz4_block_table(const void *src, const dsv_lz4_frame *f, const uint64_t *at, uint32_t *row)
{
	const uint8_t *in = src;
	for (uint64_t i = 0; i < f->nblocks; i++) {
		row[DSV_LZ4_TABLE_WORDS * i] = dsv_load_be32(in + at[i]);
		row[DSV_LZ4_TABLE_WORDS * i + 1] = dsv_fletcher32(in + at[i],
								  (size_t)(at[i + 1] - at[i]));
	}
}

int dsv_lz4_table_span(const uint32_t *row, uint64_t b0, uint64_t b1, uint64_t payload,
		       uint64_t *start, uint64_t *end)
{
	uint64_t at = LZ4F_HEADER;

	*start = 0;
	if (b0 > b1 || at > payload)
		return DSV_ERR_CORRUPT;
	for (uint64_t j = 0; j <= b1; j++) {
		uint64_t size = row[DSV_LZ4_TABLE_WORDS * j];
		if (j == b0)
			*start = at;
		/* at <= payload before each step, so nothing overflows */
		if (size == 0 || payload - at < LZ4F_BLOCK_HEADER ||
		    payload - at - LZ4F_BLOCK_HEADER < size)
			return DSV_ERR_CORRUPT;
		at += LZ4F_BLOCK_HEADER + size;
	}
	*end = at;
	return 0;
}

/* Block j's part [a, z) of [lo, hi), decoded from its stored bytes at p
 * (size of them, checked to lie in the input): straight to its place in
 * dst when the block lies inside [lo, hi) and there is no sink, else
 * through edge. @return 0 or DSV_ERR_CORRUPT. */
static int put_block(uint8_t *dst, uint64_t lo, uint64_t hi, const uint8_t *p, uint64_t size,
		     uint64_t first, uint64_t want, uint8_t *edge, dsv_lz4_sink sink, void *arg)
{
	uint64_t a = lo > first ? lo : first, z = hi < first + want ? hi : first + want;
	int inside = !sink && a == first && z == first + want;
	uint8_t *to = inside ? dst + (first - lo) : edge;

	if (size == 0 || dsv_lz4_block_decode(to, want, p, (uint32_t)size))
		return DSV_ERR_CORRUPT;
	if (sink)
		sink(arg, edge + (a - first), z - a);
	else if (!inside)
		memcpy(dst + (a - lo), edge + (a - first), (size_t)(z - a));
	return 0;
}

int64_t dsv_lz4_table_decode(void *dst, uint64_t lo, uint64_t hi, const void *src, size_t n,
			     const dsv_lz4_frame *f, const uint32_t *row, void *edge,
			     dsv_lz4_sink sink, void *arg)
{
	const uint8_t *p = src, *stop = p + n;
	uint64_t bs = f->block, done = 0;

	if (lo >= hi || hi > f->raw || bs == 0)
		return DSV_ERR_CORRUPT;
	uint64_t b0, b1;
	dsv_lz4_table_cover(lo, hi, bs, &b0, &b1);
	for (uint64_t j = b0; j <= b1; j++) {
		uint64_t size = row[DSV_LZ4_TABLE_WORDS * j], want = dsv_lz4_block_raw(f, j);
		if ((size_t)(stop - p) < LZ4F_BLOCK_HEADER ||
		    (size_t)(stop - p) - LZ4F_BLOCK_HEADER < size || dsv_load_be32(p) != size ||
		    dsv_fletcher32(p, (size_t)(LZ4F_BLOCK_HEADER + size)) !=
			    row[DSV_LZ4_TABLE_WORDS * j + 1] ||
		    put_block(dst, lo, hi, p + LZ4F_BLOCK_HEADER, size, j * bs, want, edge, sink,
			      arg))
			return DSV_ERR_CORRUPT;
		done += want;
		p += LZ4F_BLOCK_HEADER + size;
	}
	return (int64_t)done;
}

int dsv_lz4_table_row(const void *frame, size_t size, uint64_t nblocks, uint64_t *at, uint32_t *row)
{
	dsv_lz4_frame f;
	if (dsv_lz4_frame_info(frame, size, &f) || f.nblocks != nblocks ||
	    dsv_lz4_index(frame, size, &f, at))
		return DSV_ERR_CORRUPT;
	dsv_lz4_block_table(frame, &f, at, row);
	return 0;
}

void dsv_lz4_table_load(uint32_t *row, const void *stored, uint64_t words)
{
	const uint8_t *b = stored;
	for (uint64_t i = 0; i < words; i++, b += 4)
		row[i] = dsv_load_le32(b);
}
