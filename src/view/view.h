/*
 * A view as the rooms above it serve it (read, backend, gpu, fs, cli):
 * its output shape, its sources and where their elements and chunks
 * start, the geometry that maps view rows to source runs, the transform
 * plans, and the files' text. The view room builds it (view_i.h holds
 * the rest: the view as declared, and what building it needs); the CLI
 * and library users outside go through dsv_view_get_info. Not installed.
 *
 * Thread safety: a view is immutable once loaded; everything here may be
 * read from any thread.
 */
#ifndef DSV_VIEW_VIEW_H
#define DSV_VIEW_VIEW_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "dsview/view.h"

struct dsv_view {
	char *name; /* may contain '/' only in zero-config mode (HDF5 groups) */
	dsv_dtype dtype;
	int ndim;
	uint64_t shape[DSV_MAX_DIMS];
	uint64_t nelems, row_bytes, nbytes;
	uint64_t row_elems; /* output elements per row (shape[1:]) */
	size_t out_esize;

	size_t nsources;
	dsv_source **sources; /* each owned once (dsv_source_ref when shared) */
	uint32_t *src_key;    /* the cache key of each source's chunks: shared sources share it */
	uint64_t *elem_base;  /* nsources + 1: first element of each source, concatenated */
	uint64_t *chunk_base; /* nsources + 1: global index of each first chunk */
	uint64_t nchunks;

	/* Geometry (geom.c). Rows of the sources, windowed, are
	 * concatenated into "logical rows" (lrow_base: nsources + 1), then
	 * `rows` picks the view's rows from them, then `layout` permutes
	 * each row. mapped == 0 when none of these is set: view element e
	 * is element e of the concatenated sources, read in long runs. */
	int mapped;
	int has_window;
	uint64_t win, stride;   /* window length and stride along win_axis */
	int win_axis;           /* in source dims, >= 0 */
	uint64_t *nwin;         /* per source: windows per source row (k > 0) or in all (k = 0) */
	uint64_t *lrow_base;    /* nsources + 1 */
	int rows_kind;          /* DSV_ROWS_ALL, _SLICE or _INDEX */
	uint64_t rows_first;    /* resolved slice: logical row of view row 0 */
	int64_t rows_delta;     /* resolved slice: step between view rows */
	uint64_t *rows_index;   /* _INDEX: logical row of each view row */
	int layout_chw;         /* the row's last axis (C of HW C) moves to the front */
	uint64_t lay_c, lay_hw; /* C and the product of the other row dims */
	uint64_t nsegs, seg_rows, seg_raw; /* readahead units: see dsv_view_seg_range */
	/* Windows along an axis k > 0 are many short runs (an EEG window is
	 * one run per channel): they are read through the cache in tiles of
	 * tile_wins consecutive windows of one source row, every run's
	 * stretch read once per tile (0: not tiled). tile_key: the cache key
	 * of source i's tiles is tile_key + i (this view's own). */
	uint64_t tile_wins;
	uint32_t tile_key;

	dsv_xform **xf; /* per source: its plan (sources of one dtype share one) */

	/* content of V.json and its length: made at its first use
	 * (dsv_view_json), then kept; NULL until then */
	char *json;
	size_t json_len;
	char *npy_header; /* NPY 1.0 header, npy_header_len % 64 == 0 */
	size_t npy_header_len;
	struct timespec mtime; /* newest source mtime */

	/* The view room's own part (view_i.h): the view as declared, and
	 * what building and describing it needs. */
	struct dsv_view_decl *decl;
};

#define DSV_ROWS_ALL 0
#define DSV_ROWS_SLICE 1
#define DSV_ROWS_INDEX 2

/* geom.c. The source i with base[i] <= x < base[i + 1] (the last such i,
 * as sources may be empty). */
size_t dsv_view_source_of(const dsv_view *v, const uint64_t *base, uint64_t x);
/* The logical row (windowed, concatenated, before `rows`) of view row row. */
uint64_t dsv_view_lrow(const dsv_view *v, uint64_t row);
/* Where logical row l's elements are, before layout: nruns runs of len
 * elements of source si, the p-th starting at element start + p * stride
 * of the source. */
typedef struct dsv_row_runs {
	size_t si;
	uint64_t start, len, stride, nruns;
} dsv_row_runs;
void dsv_view_lrow_runs(const dsv_view *v, uint64_t l, dsv_row_runs *r);

/* Logs a failed chunk: the view, source, chunk, its rows, file offset and
 * stored size, and the reason; for a band of a grid, its rows and which
 * grid chunk failed in it (eb's msg, as dsv_source_read_chunk fills it;
 * eb may be NULL). */
void dsv_view_log_chunk_error(const dsv_view *v, size_t src, const dsv_chunk_ref *ref, int err,
			      const dsv_errbuf *eb);
/* The last chunk failure dsv_view_log_chunk_error logged on this thread,
 * and forgets it: "" when none since the last call. */
const char *dsv_view_take_error(void);
/* As dsv_view_log_chunk_error, for a part of an LZ4 chunk whose blocks
 * failed the block table's check (the chunk is then read whole). */
void dsv_view_log_block_error(const dsv_view *v, size_t src, const dsv_chunk_ref *ref, int err);

/* V.json's text (and its length in *len, when len is not NULL), made at
 * the first call and kept for the view's life: a mount of a view of 10^5
 * sources does not pay for it until it is looked up. Thread-safe.
 * @return NULL when out of memory. */
const char *dsv_view_json(const dsv_view *v, size_t *len);
/* dsv_view_get_info without V.json (json NULL): for the read paths that
 * ask once a request, which need its shape and neither the text nor the
 * lock that makes it. */
void dsv_view_get_fields(const dsv_view *v, dsv_view_info *out);

#endif
