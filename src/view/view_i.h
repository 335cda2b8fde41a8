/*
 * Private to the view room (and the manifest parsing that builds views):
 * a view's own part, v->decl, which the rooms above never read (they read
 * view/view.h), and the helpers view.c and manifest.c share.
 */
#ifndef DSV_VIEW_I_H
#define DSV_VIEW_I_H

#include "dsview/view.h"
#include "source/source.h"
#include "view/view.h"

/* The view room's part of a view (v->decl): the view as declared, for
 * .json, info and building it. Allocated with the view (dsv_view_new). */
struct dsv_view_decl {
	uint64_t max_chunk_raw; /* decoded (source dtype) bytes of the largest chunk */

	/* rows as written (view/view.h has what they resolve to) */
	int64_t rows_start, rows_stop, rows_step; /* as written (slice) */
	char *rows_file;                          /* _INDEX: the index file, as resolved */

	/* transform as declared, for .json and info */
	double scale, offset;
	int nchan, channel_axis, has_clip, has_channel_axis;
	double *mean, *std;         /* nchan values, or the arrays' values (norm.c) */
	char *mean_file, *std_file; /* mean = @file / std = @file, as resolved */
	int norm_ndim;              /* shape of the mean/std arrays (files), else 0 */
	uint64_t norm_shape[DSV_MAX_DIMS];
	int per_source;
	int by_channel; /* mean/std index the channel axis (else scalar or per element) */
	double clip_lo, clip_hi;
	unsigned char *xf_own; /* per source: xf[i] is freed with the view */

	char *hdf5_path; /* zero-config HDF5: the dataset's own path, or NULL */
	/* the dtype was asked for (a manifest's dtype key, --dtype): else a
	 * view of token streams alone, with no transform, serves int64 */
	int dtype_given;
};

#define DSV_VIEW_NAME_MAX 200

/* Makes the views of m that read the same data (the same file and
 * dataset, opened the same way) share one source, and so one cache key:
 * a chunk decoded for one view is there for the others (train/val/test
 * splits of one store). Call once every view is finished. Found by a
 * hash of each source's file; with no memory for it, none are shared. */
void dsv_manifest_share(dsv_manifest *m);
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
