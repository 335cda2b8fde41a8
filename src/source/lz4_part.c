/*
 * A few rows of an LZ4 store's chunk, from the blocks that hold them
 * (dsv_source_read_lz4_part): the store's block table (h5_table.c) gives
 * each block's stored size and checksum, so a shuffled reader of one row
 * reads one row of the table (8 bytes a block, mostly in the page cache)
 * and the row's own blocks, checks each against its checksum, and decodes
 * only them: about the bytes it asked for, where the chunk's Fletcher32
 * would have it read and check the whole chunk.
 *
 * The table is untrusted like the rest of the file: every size is
 * checked to keep its blocks inside the chunk's stored bytes, each block's
 * own 4-byte header must agree with the table, and a block is decoded
 * only after its checksum held (LZ4_decompress_safe, exact size).
 */
#include <string.h>

#include "common/tlsbuf.h"
#include "dsview/codec.h"
#include "source/source_i.h"

#define FRAME_HEAD 12  /* u64 raw size, u32 block size */
#define BLOCK_HEAD 4   /* u32 stored size */

static uint32_t le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

int dsv_source_read_lz4_part(const dsv_source *s, const dsv_chunk_ref *ref, uint64_t lo,
			     uint64_t hi, void *dst, uint64_t *decoded)
{
	uint64_t bs = s->info.lz4_block, nb = s->table_blocks, words, b0, b1;
	uint64_t payload, at, start = 0;
	unsigned char *row, *stored, *edge;
	int err;

	if (!nb || ref->codec != DSV_CODEC_LZ4 || ref->fallback || ref->grid ||
	    ref->raw_size != s->chunk_raw_size || ref->index >= s->info.nchunks || lo >= hi ||
	    hi > ref->raw_size || ref->stored_size < (ref->fletcher32 ? 4 : 0))
		return DSV_ERR_UNSUPPORTED;
	payload = ref->stored_size - (ref->fletcher32 ? 4 : 0);
	b0 = lo / bs;
	b1 = (hi - 1) / bs;
	/* the table's row up to block b1, then the blocks' stored bytes */
	words = (b1 + 1) * DSV_LZ4_TABLE_WORDS;
	row = dsv_tls_buf(DSV_TLS_BLOCKS, (size_t)(words * 4 + bs));
	if (!row)
		return DSV_ERR_NOMEM;
	edge = row + words * 4;
	err = dsv_source_pread(s, row, (size_t)(words * 4),
			       s->table_off + ref->index * nb * DSV_LZ4_TABLE_WORDS * 4);
	if (err)
		return err;
	at = FRAME_HEAD;
	for (uint64_t j = 0; j <= b1; j++) {
		uint64_t size = le32(row + j * DSV_LZ4_TABLE_WORDS * 4);
		if (j == b0)
			start = at;
		/* at <= payload holds before each step, so nothing overflows */
		if (size == 0 || size > payload || payload - size < at + BLOCK_HEAD)
			return DSV_ERR_CORRUPT;
		at += BLOCK_HEAD + size;
	}
	stored = dsv_tls_buf(DSV_TLS_STORED, (size_t)(at - start));
	if (!stored)
		return DSV_ERR_NOMEM;
	if ((err = dsv_source_pread(s, stored, (size_t)(at - start), ref->offset + start)))
		return err;

	const unsigned char *p = stored;
	for (uint64_t j = b0; j <= b1; j++) {
		const unsigned char *w = row + j * DSV_LZ4_TABLE_WORDS * 4;
		uint64_t size = le32(w), first = j * bs;
		uint64_t want = ref->raw_size - first < bs ? ref->raw_size - first : bs;
		if (be32(p) != size || dsv_fletcher32(p, (size_t)(BLOCK_HEAD + size)) != le32(w + 4))
			return DSV_ERR_CORRUPT;
		/* a block inside [lo, hi) straight to its place, else via edge */
		int inside = first >= lo && first + want <= hi;
		unsigned char *to = inside ? (unsigned char *)dst + (first - lo) : edge;
		if (dsv_lz4_decode_stored(to, want, p + BLOCK_HEAD, (size_t)size))
			return DSV_ERR_CORRUPT;
		if (!inside) {
			uint64_t a = lo > first ? lo : first, z = hi < first + want ? hi : first + want;
			memcpy((unsigned char *)dst + (a - lo), edge + (a - first), (size_t)(z - a));
		}
		*decoded += want;
		p += BLOCK_HEAD + size;
	}
	return 0;
}

int dsv_source_check_lz4_table(const dsv_source *s, const dsv_chunk_ref *ref)
{
	uint64_t nb = s->table_blocks, words = nb * DSV_LZ4_TABLE_WORDS, payload;
	unsigned char *row, *stored;
	uint64_t *at;
	uint32_t *want;
	dsv_lz4_frame f;
	int err;

	if (!nb || ref->codec != DSV_CODEC_LZ4 || ref->fallback || ref->grid ||
	    ref->index >= s->info.nchunks)
		return 0;
	if (ref->stored_size < (ref->fletcher32 ? 4 : 0))
		return DSV_ERR_CORRUPT;
	payload = ref->stored_size - (ref->fletcher32 ? 4 : 0);
	/* the table's row, the frame's own table and index, then the frame */
	row = dsv_tls_buf(DSV_TLS_BLOCKS, (size_t)(words * 8 + (nb + 1) * 8));
	stored = dsv_tls_buf(DSV_TLS_STORED, (size_t)payload);
	if (!row || !stored)
		return DSV_ERR_NOMEM;
	want = (uint32_t *)(row + words * 4);
	at = (uint64_t *)(row + words * 8);
	if ((err = dsv_source_pread(s, row, (size_t)(words * 4),
				    s->table_off + ref->index * words * 4)) ||
	    (err = dsv_source_pread(s, stored, (size_t)payload, ref->offset)))
		return err;
	if (dsv_lz4_frame_info(stored, (size_t)payload, &f) || f.nblocks != nb ||
	    dsv_lz4_index(stored, (size_t)payload, &f, at))
		return DSV_ERR_CORRUPT;
	dsv_lz4_block_table(stored, &f, at, want);
	for (uint64_t i = 0; i < words; i++)
		if (le32(row + i * 4) != want[i])
			return DSV_ERR_CORRUPT;
	return 0;
}
