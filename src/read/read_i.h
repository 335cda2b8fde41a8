/*
 * Private to src/read: what the cache's fill gets with each get (read.c
 * makes the gets, blocks.c the LZ4 block entries), and the block path.
 */
#ifndef DSV_READ_READ_I_H
#define DSV_READ_READ_I_H

#include "read/read.h"
#include "view/view_i.h"

/* What an entry is: a chunk (decoded by the backend), or the read path's
 * own: a tile of windows made from runs read through the cache c, or an
 * LZ4 chunk's frame: its checked stored bytes, block index, and the
 * blocks decoded so far (blocks.c). */
enum { ENTRY_CHUNK, ENTRY_TILE, ENTRY_FRAME };
typedef struct read_src_arg {
	const dsv_view *v;
	size_t si;
	int kind;
	dsv_cache *c;
} read_src_arg;

/* Elements [first, first + n) of LZ4 chunk ref of source si into raw
 * (source dtype), from the chunk when the cache holds it decoded, else
 * from its blocks that hold them, decoded alone (*decoded += the bytes
 * this call decoded). @return 0, a dsv_err (logged), or
 * DSV_ERR_UNSUPPORTED (nothing logged) when the request is
 * the whole chunk's to serve: one block per chunk, a request that covers
 * every block, or a frame unlike the source's first. */
int dsv_read_lz4_part(dsv_cache *c, const dsv_view *v, size_t si, const dsv_chunk_ref *ref,
		      uint64_t first, uint64_t n, void *raw, uint64_t *decoded);

/* Fills the frame entry id (nothing decoded yet) into buf (size bytes). */
int dsv_read_fill_lz4(const read_src_arg *a, uint64_t id, void *buf, size_t size);

#endif
