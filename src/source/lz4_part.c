/*
 * A few rows of an LZ4 store's chunk, from the blocks that hold them
 * (dsv_source_read_lz4_part): the store's block table (h5_table.c) gives
 * each block's stored size and checksum, so a shuffled reader of one row
 * reads one row of the table (8 bytes a block, mostly in the page cache;
 * a store in object storage holds its table in memory) and the row's own
 * blocks, checks each against its checksum, and decodes
 * only them: about the bytes it asked for, where the chunk's Fletcher32
 * would have it read and check the whole chunk. The table is untrusted
 * like the rest of the file; codec/lz4_table.c, the table's format,
 * checks what it says.
 */
#include <string.h>

#include "codec/lz4_table.h"
#include "common/tlsbuf.h"
#include "source/source_i.h"

/* The table's words for blocks 0..nblocks-1 of chunk ref, in host order,
 * at the start of the calling thread's DSV_TLS_BLOCKS buffer, which holds
 * extra bytes after them. @return the words, or NULL (*err set). */
static uint32_t *table_row(const dsv_source *s, const dsv_chunk_ref *ref, uint64_t nblocks,
			   size_t extra, int *err)
{
	uint64_t bytes = dsv_lz4_table_row_bytes(nblocks);
	uint64_t off = s->more->table_off +
		       ref->index * dsv_lz4_table_row_bytes(s->more->table_blocks);
	uint32_t *row = dsv_tls_buf(DSV_TLS_BLOCKS, (size_t)bytes + extra);
	const void *stored = row;

	*err = 0;
	if (!row)
		*err = DSV_ERR_NOMEM;
	else if (s->more->table_mem) /* read whole at open (h5_table.c) */
		stored = (const char *)s->more->table_mem + (off - s->more->table_off);
	else
		*err = dsv_source_pread(s, row, (size_t)bytes, off);
	if (*err)
		return NULL;
	dsv_lz4_table_load(row, stored, nblocks * DSV_LZ4_TABLE_WORDS);
	return row;
}

/* A chunk of this source that its table covers. */
static int covered(const dsv_source *s, const dsv_chunk_ref *ref)
{
	return s->more->table_blocks && ref->codec == DSV_CODEC_LZ4 && !ref->shuffle &&
	       !ref->fallback && !ref->grid && ref->raw_size == s->more->chunk_raw_size &&
	       ref->index < s->info.nchunks && ref->stored_size >= (ref->fletcher32 ? 4u : 0u);
}

int dsv_source_read_lz4_part(const dsv_source *s, const dsv_chunk_ref *ref, uint64_t lo,
			     uint64_t hi, void *dst, dsv_lz4_sink sink, void *arg,
			     uint64_t *decoded)
{
	dsv_lz4_frame f = { ref->raw_size, s->info.lz4_block, s->more->table_blocks };
	uint64_t b0, b1, start, end;
	uint32_t *row;
	void *stored;
	int err;

	if (!covered(s, ref) || lo >= hi || hi > ref->raw_size)
		return DSV_ERR_UNSUPPORTED;
	/* the table's row up to the last block wanted, then those blocks */
	dsv_lz4_table_cover(lo, hi, f.block, &b0, &b1);
	if (!(row = table_row(s, ref, b1 + 1, (size_t)f.block, &err)))
		return err;
	if (dsv_lz4_table_span(row, b0, b1, ref->stored_size - (ref->fletcher32 ? 4 : 0), &start,
			       &end))
		return DSV_ERR_CORRUPT;
	if (!(stored = dsv_tls_buf(DSV_TLS_STORED, (size_t)(end - start))))
		return DSV_ERR_NOMEM;
	if ((err = dsv_source_pread(s, stored, (size_t)(end - start), ref->offset + start)))
		return err;
	void *edge = (char *)row + dsv_lz4_table_row_bytes(b1 + 1);
	int64_t got = dsv_lz4_table_decode(dst, lo, hi, stored, (size_t)(end - start), &f, row,
					   edge, sink, arg);
	if (got < 0)
		return DSV_ERR_CORRUPT;
	*decoded += (uint64_t)got;
	return 0;
}

int dsv_source_check_lz4_table(const dsv_source *s, const dsv_chunk_ref *ref)
{
	uint64_t nb = s->more->table_blocks, words = nb * DSV_LZ4_TABLE_WORDS, payload;
	size_t bytes = (size_t)dsv_lz4_table_row_bytes(nb);
	uint32_t *row, *want;
	uint64_t *at;
	void *stored;
	int err;

	if (!covered(s, ref))
		return 0;
	payload = ref->stored_size - (ref->fletcher32 ? 4 : 0);
	/* the table's row; then the frame's own row and block offsets */
	if (!(row = table_row(s, ref, nb, bytes + (size_t)(nb + 1) * 8, &err)))
		return err;
	want = row + words;
	at = (uint64_t *)(want + words + (words & 1));
	if (!(stored = dsv_tls_buf(DSV_TLS_STORED, (size_t)payload)))
		return DSV_ERR_NOMEM;
	if ((err = dsv_source_pread(s, stored, (size_t)payload, ref->offset)))
		return err;
	if (dsv_lz4_table_row(stored, (size_t)payload, nb, at, want))
		return DSV_ERR_CORRUPT;
	return memcmp(row, want, bytes) ? DSV_ERR_CORRUPT : 0;
}
