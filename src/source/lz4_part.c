/*
 * A few rows of an LZ4 store's chunk, from the blocks that hold them
 * (dsv_source_read_lz4_part): the store's block table (h5_table.c) gives
 * each block's stored size and checksum, so a shuffled reader of one row
 * reads one row of the table (8 bytes a block, mostly in the page cache)
 * and the row's own blocks, checks each against its checksum, and decodes
 * only them: about the bytes it asked for, where the chunk's Fletcher32
 * would have it read and check the whole chunk. The table is untrusted
 * like the rest of the file; codec/lz4.c checks what it says.
 */
#include <string.h>

#include "common/bytes.h"
#include "common/tlsbuf.h"
#include "dsview/codec.h"
#include "source/source_i.h"

/* The table's words for blocks 0..nblocks-1 of chunk ref, in host order,
 * at the start of the calling thread's DSV_TLS_BLOCKS buffer, which holds
 * extra bytes after them. @return the words, or NULL (*err set). */
static uint32_t *table_row(const dsv_source *s, const dsv_chunk_ref *ref, uint64_t nblocks,
			   size_t extra, int *err)
{
	uint64_t words = nblocks * DSV_LZ4_TABLE_WORDS;
	unsigned char *b = dsv_tls_buf(DSV_TLS_BLOCKS, (size_t)(words * 4) + extra);
	uint32_t *row = (uint32_t *)b;

	*err = b ? dsv_source_pread(s, b, (size_t)(words * 4),
				    s->table_off + ref->index * s->table_blocks *
							   DSV_LZ4_TABLE_WORDS * 4)
		 : DSV_ERR_NOMEM;
	if (*err)
		return NULL;
	for (uint64_t i = 0; i < words; i++, b += 4) /* stored little-endian */
		row[i] = dsv_load_le32(b);
	return row;
}

/* A chunk of this source that its table covers. */
static int covered(const dsv_source *s, const dsv_chunk_ref *ref)
{
	return s->table_blocks && ref->codec == DSV_CODEC_LZ4 && !ref->fallback && !ref->grid &&
	       ref->raw_size == s->chunk_raw_size && ref->index < s->info.nchunks &&
	       ref->stored_size >= (ref->fletcher32 ? 4u : 0u);
}

int dsv_source_read_lz4_part(const dsv_source *s, const dsv_chunk_ref *ref, uint64_t lo,
			     uint64_t hi, void *dst, uint64_t *decoded)
{
	dsv_lz4_frame f = { ref->raw_size, s->info.lz4_block, s->table_blocks };
	uint64_t start, end;
	uint32_t *row;
	void *stored;
	int err;

	if (!covered(s, ref) || lo >= hi || hi > ref->raw_size)
		return DSV_ERR_UNSUPPORTED;
	/* the table's row up to the last block wanted, then those blocks */
	if (!(row = table_row(s, ref, (hi - 1) / f.block + 1, (size_t)f.block, &err)))
		return err;
	if (dsv_lz4_table_span(row, lo / f.block, (hi - 1) / f.block,
			       ref->stored_size - (ref->fletcher32 ? 4 : 0), &start, &end))
		return DSV_ERR_CORRUPT;
	if (!(stored = dsv_tls_buf(DSV_TLS_STORED, (size_t)(end - start))))
		return DSV_ERR_NOMEM;
	if ((err = dsv_source_pread(s, stored, (size_t)(end - start), ref->offset + start)))
		return err;
	void *edge = (char *)row + ((hi - 1) / f.block + 1) * DSV_LZ4_TABLE_WORDS * 4;
	int64_t got = dsv_lz4_table_decode(dst, lo, hi, stored, (size_t)(end - start), &f, row,
					   edge);
	if (got < 0)
		return DSV_ERR_CORRUPT;
	*decoded += (uint64_t)got;
	return 0;
}

int dsv_source_check_lz4_table(const dsv_source *s, const dsv_chunk_ref *ref)
{
	uint64_t nb = s->table_blocks, words = nb * DSV_LZ4_TABLE_WORDS, payload;
	dsv_lz4_frame f;
	uint32_t *row, *want;
	uint64_t *at;
	void *stored;
	int err;

	if (!covered(s, ref))
		return 0;
	payload = ref->stored_size - (ref->fletcher32 ? 4 : 0);
	/* the table's row; then the frame's own row and block offsets */
	if (!(row = table_row(s, ref, nb, (size_t)(words * 4 + (nb + 1) * 8), &err)))
		return err;
	want = row + words;
	at = (uint64_t *)(want + words + (words & 1));
	if (!(stored = dsv_tls_buf(DSV_TLS_STORED, (size_t)payload)))
		return DSV_ERR_NOMEM;
	if ((err = dsv_source_pread(s, stored, (size_t)payload, ref->offset)))
		return err;
	if (dsv_lz4_frame_info(stored, (size_t)payload, &f) || f.nblocks != nb ||
	    dsv_lz4_index(stored, (size_t)payload, &f, at))
		return DSV_ERR_CORRUPT;
	dsv_lz4_block_table(stored, &f, at, want);
	return memcmp(row, want, (size_t)(words * 4)) ? DSV_ERR_CORRUPT : 0;
}
