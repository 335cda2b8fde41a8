/*
 * The block table of an LZ4 store: its one home. `dsview pack` writes one
 * next to each LZ4 store whose chunks have several blocks (src/pack/table.c;
 * where in the file: dsview/h5info.h, DSV_STORE_BLOCKS, found and checked
 * by src/source/h5_table.c), and a reader of a few rows of a chunk reads
 * and checks only their blocks through it (src/source/lz4_part.c).
 *
 * Layout: one row per chunk, all rows the same width, stored as unsigned
 * 32-bit little-endian words. A chunk of raw bytes in blocks of block
 * bytes has dsv_lz4_table_blocks(raw, block) blocks, the frame's own count
 * (the last block holds the rest); for block i, two words:
 *   row[2i]     the block's stored size (its 4-byte header's value)
 *   row[2i + 1] dsv_fletcher32 of the block's header and stored bytes
 * so row c of the table starts dsv_lz4_table_row_bytes(nblocks) * c bytes
 * in. With it a reader reads and checks only the blocks it needs, where
 * the chunk's own Fletcher32 covers the whole chunk.
 *
 * The table is untrusted like the rest of the file: span and decode check
 * what it says against the stored bytes and never read or write out of
 * bounds. Thread safety: every function is pure (no state).
 */
#ifndef DSV_CODEC_LZ4_TABLE_H
#define DSV_CODEC_LZ4_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "dsview/codec.h"

#define DSV_LZ4_TABLE_WORDS 2 /* 32-bit words a block */

/* Blocks a chunk of raw bytes has in blocks of block bytes (block > 0). */
static inline uint64_t dsv_lz4_table_blocks(uint64_t raw, uint64_t block)
{
	return raw / block + (raw % block != 0);
}

/* Bytes of one row of a table of nblocks blocks a chunk. */
static inline uint64_t dsv_lz4_table_row_bytes(uint64_t nblocks)
{
	return nblocks * DSV_LZ4_TABLE_WORDS * 4;
}

/* The blocks b0..b1 that hold bytes [lo, hi) of a chunk (lo < hi). */
static inline void dsv_lz4_table_cover(uint64_t lo, uint64_t hi, uint64_t block, uint64_t *b0,
				       uint64_t *b1)
{
	*b0 = lo / block;
	*b1 = (hi - 1) / block;
}

/* Encodes: fills row (DSV_LZ4_TABLE_WORDS * f->nblocks words) from an
 * indexed frame (dsv_lz4_index's at). */
void dsv_lz4_block_table(const void *src, const dsv_lz4_frame *f, const uint64_t *at,
			 uint32_t *row);

/* The row of frame[0, size), which must have nblocks blocks: header,
 * index and row in one step; at is scratch for nblocks + 1 offsets.
 * @return 0, or DSV_ERR_CORRUPT (not a frame of nblocks blocks). */
int dsv_lz4_table_row(const void *frame, size_t size, uint64_t nblocks, uint64_t *at,
		      uint32_t *row);

/* Parses words stored words (little-endian, as in the file) into row, in
 * host order; row may be stored itself. */
void dsv_lz4_table_load(uint32_t *row, const void *stored, uint64_t words);

/* Where blocks b0..b1 lie in a frame of payload bytes by a table's row
 * (its words for blocks 0..b1): [*start, *end), headers included.
 * @return 0, or DSV_ERR_CORRUPT (a size of 0, or blocks past payload). */
int dsv_lz4_table_span(const uint32_t *row, uint64_t b0, uint64_t b1, uint64_t payload,
		       uint64_t *start, uint64_t *end);

/* Where dsv_lz4_table_decode puts each block's part of [lo, hi): NULL,
 * into dst at its place; else a sink, given the parts in order (bytes of
 * len, valid only during the call: a block just decoded into edge, still
 * in the core's cache for the sink to read). */
typedef void (*dsv_lz4_sink)(void *arg, const uint8_t *bytes, uint64_t len);

/* Bytes [lo, hi) of frame f's raw bytes from the stored bytes of the
 * blocks that cover them (dsv_lz4_table_cover), src[0, n) as
 * dsv_lz4_table_span placed them, one block at a time: into dst (hi - lo
 * bytes) when sink is NULL, else each decoded into edge and handed to
 * sink(arg, ...) (dst unused). Each block's header must equal its size in
 * row and its checksum row's, then it decodes to exactly its raw size.
 * edge: f->block bytes of scratch (for the blocks [lo, hi) covers in
 * part, or every block with a sink). Never reads or writes out of bounds,
 * whatever row and src hold. @return the raw bytes decoded, or
 * DSV_ERR_CORRUPT (parts before the failing block may have been given). */
int64_t dsv_lz4_table_decode(void *dst, uint64_t lo, uint64_t hi, const void *src, size_t n,
			     const dsv_lz4_frame *f, const uint32_t *row, void *edge,
			     dsv_lz4_sink sink, void *arg);

/* codec/lz4.c's decoder of one block (stored bytes at in, stored of them,
 * already checked to lie in the input, into want bytes at out), for the
 * table's reader. @return 0 or DSV_ERR_CORRUPT. */
int dsv_lz4_block_decode(uint8_t *out, uint64_t want, const uint8_t *in, uint32_t stored);

#endif
