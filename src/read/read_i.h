/*
 * What read.c and read_windows.c share: the argument the chunk cache's
 * fill gets, reading a source's elements through the cache, and the
 * readers of windows (together, from tiles, or gathered by the source).
 */
#ifndef DSV_READ_I_H
#define DSV_READ_I_H

#include <stddef.h>
#include <stdint.h>

#include "read/read.h"
#include "view/view.h"

/* What the cache's fill gets with each get: an entry is a chunk (decoded
 * by the backend), or the read path's own, a tile of windows made from
 * runs read through the cache c. */
enum { ENTRY_CHUNK, ENTRY_TILE };
typedef struct read_src_arg {
	const dsv_view *v;
	size_t si;
	int kind;
	dsv_cache *c;
	const dsv_read_req *req; /* the read that asked (its get's) */
} read_src_arg;

/* Elements [a, a + n) of source si of v into dst, chunk piece by chunk
 * piece: transformed by x from output element oe, or raw (x NULL).
 * by_chunk: the view's readahead units are its chunks (noted in info). */
int dsv_read_src(dsv_cache *c, const dsv_view *v, size_t si, uint64_t a, uint64_t n,
		 const dsv_xform *x, uint64_t oe, char *dst, const dsv_read_req *req,
		 dsv_read_info *info, int by_chunk);
/* Widens info's span of readahead units to take in unit u. */
void dsv_read_note_unit(dsv_read_info *info, uint64_t u);

/* read_windows.c: how many whole rows from view row i (n elements left to
 * read) are consecutive windows of one source row, read together (0 or 1:
 * not worth it); b such windows from view row i (output element e), the
 * first at r. */
uint64_t dsv_read_window_batch(const dsv_view *v, uint64_t i, uint64_t n, const dsv_row_runs *r);
int dsv_read_windows(dsv_cache *c, const dsv_view *v, const dsv_row_runs *r, uint64_t b, uint64_t e,
		     char *dst, const dsv_read_req *req, dsv_read_info *info);
/* Positions [q, q + n) of logical row l, a window of a tiled view, from
 * its tile in the cache tiles (made through c). */
int dsv_read_tiled(dsv_cache *c, dsv_cache *tiles, const dsv_view *v, const dsv_row_runs *r,
		   uint64_t l, uint64_t q, uint64_t n, uint64_t oe, char *dst,
		   const dsv_read_req *req);
/* The cache's fill of tile id of source a->si. */
int dsv_read_fill_tile(const read_src_arg *a, uint64_t id, void *buf, size_t size);
/* Positions [q, q + n) of a window of a source that gathers its runs
 * itself (dsv_source_gathers), read uncached. */
int dsv_read_gathered(const dsv_view *v, const dsv_row_runs *r, uint64_t q, uint64_t n, uint64_t oe,
		      char *dst);

#endif
