/*
 * Reading a view: the output bytes of any byte range, made on demand.
 *
 * A range of a view that is its sources concatenated maps onto long runs
 * of source elements; a view with windows, rows or a layout is read row by
 * row, each row from its runs (view/geom.c); windows along an inner axis
 * come from tiles of consecutive windows made once in the chunk cache, a
 * piece of a CHW row from the pixels it needs, gathered. A piece of a chunk
 * whose stored bytes are its plain elements (.npy, raw, HDF5 contiguous,
 * HDF5 chunks without filters) is pread alone, just the elements the range
 * needs, and transformed into the caller's buffer: nothing is decoded that
 * was not asked for, and the kernel's page cache, not ours, keeps the result.
 * A piece of a chunk of an LZ4 store with a block table is made from the
 * blocks that hold it, read and checked alone (source/lz4_part.c), unless
 * the cache holds the chunk decoded: a block at a time into a scratch the
 * size of one block, and transformed from there while it is still in the
 * core's cache. A piece of a chunk that must be decoded whole
 * (Fletcher32, other codecs, filters only the HDF5 library knows) comes
 * from the chunk cache, which holds
 * decoded chunks in the source dtype (a quarter of their float32 bytes for
 * uint8), and is transformed from there. Either way the transform writes
 * once, straight into the caller's buffer (the FUSE reply).
 *
 * A read is asked for by a request (dsv_read_req: the range and how to
 * read it) that its caller builds; what the read did comes back apart, in
 * a dsv_read_info. The request's flags go down as they are: in the
 * cache's fill to the backend, and from there to the source (source/
 * source.h, where the flags are).
 *
 * Thread safety: every function may be called from any number of threads.
 */
#ifndef DSV_READ_READ_H
#define DSV_READ_READ_H

#include <stddef.h>
#include <stdint.h>

#include "cache/cache.h"
#include "dsview/view.h"
#include "source/source.h"

/* What a read asks for, built by its caller and passed down unchanged. */
typedef struct dsv_read_req {
	uint64_t off; /* the range's first byte (of the view's output for dsv_read) */
	size_t len;
	unsigned flags; /* DSV_READ_* (source/source.h), or 0 */
} dsv_read_req;

/* What one read did. */
typedef struct dsv_read_info {
	uint64_t plain_bytes; /* output bytes made from elements pread for this read */
	uint64_t lz4_bytes;   /* output bytes of the LZ4 blocks this read decoded */
	uint64_t first, last; /* the first and last readahead unit (segment) read */
} dsv_read_info;

/* Writes bytes [req->off, req->off + req->len) of view v's output (any
 * alignment) into dst, read as req->flags ask. Tiles of windows go to the
 * cache tiles (NULL: c): read once each
 * by a sequential pass, they have a small cache of their own, whose
 * buffers are reused, rather than fill c's budget with fresh memory the
 * kernel must zero. Chunks that must be decoded whole come from the cache under their
 * source's key (v->src_key, shared by views of one source); its fill gets
 * the arg of the get, which dsv_read_fill reads: the view and the chunk to
 * decode into the source dtype (dsv_backend_decode) with the request's
 * flags, or a tile of windows dsv_read_fill makes itself. info: what the
 * read did, set afresh.
 * @return 0, or a negative dsv_err: the chunk's failure (logged with the
 * source, chunk and reason), DSV_ERR_INVALID for a range past the end. */
int dsv_read(dsv_cache *c, dsv_cache *tiles, const dsv_view *v, const dsv_read_req *req, void *dst,
	     dsv_read_info *info);

/* What a cache fill is to do, told by dsv_read_fill. */
typedef struct dsv_read_job {
	/* the view of the get that asked, for dsv_backend_decode to fill
	 * chunk g (its global index in v); NULL: the entry was the read
	 * path's own, and the fill made it (a tile of windows: tile set) */
	const dsv_view *v;
	uint64_t g;
	unsigned flags; /* the get's request's (DSV_READ_*) */
	int tile;
} dsv_read_job;

/* In a cache fill of (key, chunk) into buf (size bytes): fills buf itself
 * when the entry is the read path's own, else says in *job which chunk of
 * which view the backend is to decode. @return 0 or a negative dsv_err. */
int dsv_read_fill(const void *arg, uint64_t chunk, void *buf, size_t size, dsv_read_job *job);

#endif
