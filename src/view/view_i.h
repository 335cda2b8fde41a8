/*
 * The layout of a view, private to the library: the rooms above view
 * (read, backend, fs) read it directly, as libfuse's lib/ reads fuse_i.h;
 * the CLI and other users go through dsv_view_get_info. Also the helpers
 * view.c and manifest.c share.
 */
#ifndef DSV_VIEW_I_H
#define DSV_VIEW_I_H

#include "dsview/view.h"
#include "source/source.h"

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
	uint64_t max_chunk_raw; /* decoded (source dtype) bytes of the largest chunk */

	/* Geometry (SPEC 12; geom.c). Rows of the sources, windowed, are
	 * concatenated into "logical rows" (lrow_base: nsources + 1), then
	 * `rows` picks the view's rows from them, then `layout` permutes
	 * each row. mapped == 0 when none of these is set: view element e
	 * is element e of the concatenated sources, read in long runs. */
	int mapped;
	int has_window;
	uint64_t win, stride; /* window length and stride along win_axis */
	int win_axis;         /* in source dims, >= 0 */
	uint64_t *nwin;       /* per source: windows per source row (k > 0) or in all (k = 0) */
	uint64_t *lrow_base;  /* nsources + 1 */
	int rows_kind;        /* DSV_ROWS_ALL, _SLICE or _INDEX */
	int64_t rows_start, rows_stop, rows_step; /* as written (slice) */
	uint64_t rows_first;  /* resolved slice: logical row of view row 0 */
	int64_t rows_delta;   /* resolved slice: step between view rows */
	uint64_t *rows_index; /* _INDEX: logical row of each view row */
	char *rows_file;      /* _INDEX: the index file, as resolved */
	int layout_chw;       /* the row's last axis (C of HW C) moves to the front */
	uint64_t lay_c, lay_hw; /* C and the product of the other row dims */
	uint64_t nsegs, seg_rows, seg_raw; /* readahead units: see dsv_view_seg_range */
	/* Windows along an axis k > 0 are many short runs (an EEG window is
	 * one run per channel): they are read through the cache in tiles of
	 * tile_wins consecutive windows of one source row, every run's
	 * stretch read once per tile (0: not tiled). tile_key: the cache key
	 * of source i's tiles is tile_key + i (this view's own). */
	uint64_t tile_wins;
	uint32_t tile_key;

	/* transform as declared, for .json and info */
	double scale, offset;
	int nchan, channel_axis, has_clip, has_channel_axis;
	double *mean, *std;   /* nchan values, or the arrays' values (norm.c) */
	char *mean_file, *std_file; /* mean = @file / std = @file, as resolved */
	int norm_ndim;        /* shape of the mean/std arrays (files), else 0 */
	uint64_t norm_shape[DSV_MAX_DIMS];
	int per_source;
	int by_channel;       /* mean/std index the channel axis (else scalar or per element) */
	double clip_lo, clip_hi;
	dsv_xform **xf;       /* per source: its plan (sources of one dtype share one) */
	unsigned char *xf_own; /* per source: xf[i] is freed with the view */

	char *hdf5_path;      /* zero-config HDF5: the dataset's own path, or NULL */
	char *json;           /* content of V.json */
	char *npy_header;     /* NPY 1.0 header, npy_header_len % 64 == 0 */
	size_t npy_header_len;
	struct timespec mtime; /* newest source mtime */
};

#define DSV_ROWS_ALL 0
#define DSV_ROWS_SLICE 1
#define DSV_ROWS_INDEX 2

#define DSV_VIEW_NAME_MAX 200
#define DSV_VIEW_MAX_SOURCES 4096

/* A raw source's declared layout (source_dtype, source_shape). */
typedef struct dsv_raw_spec {
	dsv_dtype dtype;
	int ndim;
	const int64_t *shape;
} dsv_raw_spec;

/* Opens the sources of one manifest source line (spec.c): path is the
 * line's value resolved against the manifest's directory; raw is NULL
 * unless the view declares a raw layout. Each source is added to v and
 * checked against its first. @return 0, or a dsv_err with eb set. */
int dsv_view_open_spec(dsv_view *v, const char *path, const dsv_raw_spec *raw, dsv_errbuf *eb);

/* Makes the views of m that read the same data (the same file and
 * dataset, opened the same way) share one source, and so one cache key:
 * a chunk decoded for one view is there for the others (train/val/test
 * splits of one store). Call once every view is finished. */
void dsv_manifest_share(dsv_manifest *m);
/* An empty manifest for path (gpu "auto"), or NULL when out of memory. */
dsv_manifest *dsv_manifest_new(const char *path);
dsv_view *dsv_view_new(const char *name);
void dsv_view_free(dsv_view *v);
int dsv_view_add_source(dsv_view *v, dsv_source *s);
int dsv_view_check_source(const dsv_view *v, size_t i, dsv_errbuf *eb);
/* Computes shape, bases, the transform plans, the .npy header and the
 * .json. Errors name the setting at fault (eb->key). */
int dsv_view_finish(dsv_view *v, dsv_errbuf *eb);

/* geom.c. The shape: windows, rows, layout (after the bases are set);
 * nindex is the length of rows_index. */
int dsv_view_geometry(dsv_view *v, uint64_t nindex, dsv_errbuf *eb);
/* The source i with base[i] <= x < base[i + 1] (the last such i, as
 * sources may be empty). */
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

/* norm.c. rows = @file: rows_index from rows_file, *count entries. */
int dsv_view_load_index(dsv_view *v, uint64_t *count, dsv_errbuf *eb);
/* mean/std arrays from their files, and the plan of every source. */
int dsv_view_plans(dsv_view *v, dsv_errbuf *eb);
/* A JSON string of s (a jansson json_t *): s itself when it is UTF-8,
 * else written as dsv_shown does; NULL when out of memory. */
struct json_t *dsv_json_text(const char *s);
void dsv_shape_str(char *buf, size_t cap, int ndim, const uint64_t *shape);

static inline int timespec_newer(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec > b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec > b->tv_nsec);
}

#endif
