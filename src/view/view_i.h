/*
 * The layout of a view, private to the library: the rooms above view
 * (read, backend, fs) read it directly, as libfuse's lib/ reads fuse_i.h;
 * the CLI and other users go through dsv_view_get_info. Also the helpers
 * view.c and manifest.c share.
 */
#ifndef DSV_VIEW_I_H
#define DSV_VIEW_I_H

#include "dsview/view.h"

struct dsv_view {
	char *name; /* may contain '/' only in zero-config mode (HDF5 groups) */
	dsv_dtype dtype;
	int ndim;
	uint64_t shape[DSV_MAX_DIMS];
	uint64_t nelems, row_bytes, nbytes;
	size_t out_esize;

	size_t nsources;
	dsv_source **sources;
	uint64_t *elem_base;  /* nsources + 1: view element index of each source */
	uint64_t *chunk_base; /* nsources + 1: global index of each first chunk */
	uint64_t nchunks;
	uint64_t max_chunk_raw; /* decoded (source dtype) bytes of the largest chunk */

	/* transform as declared, for .json and info */
	double scale, offset;
	int nchan, channel_axis, has_clip;
	double *mean, *std;
	double clip_lo, clip_hi;
	dsv_xform *xform;

	char *hdf5_path;      /* zero-config HDF5: the dataset's own path, or NULL */
	char *json;           /* content of V.json */
	char *npy_header;     /* NPY 1.0 header, npy_header_len % 64 == 0 */
	size_t npy_header_len;
	struct timespec mtime; /* newest source mtime */
};

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

/* An empty manifest for path (gpu "auto"), or NULL when out of memory. */
dsv_manifest *dsv_manifest_new(const char *path);
dsv_view *dsv_view_new(const char *name);
void dsv_view_free(dsv_view *v);
int dsv_view_add_source(dsv_view *v, dsv_source *s);
int dsv_view_check_source(const dsv_view *v, size_t i, dsv_errbuf *eb);
/* Computes shape, bases, the transform plan, the .npy header and the .json. */
int dsv_view_finish(dsv_view *v, dsv_errbuf *eb);
/* A JSON string of s (a jansson json_t *): s itself when it is UTF-8,
 * else written as dsv_shown does; NULL when out of memory. */
struct json_t *dsv_json_text(const char *s);
void dsv_shape_str(char *buf, size_t cap, int ndim, const uint64_t *shape);

static inline int timespec_newer(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec > b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec > b->tv_nsec);
}

#endif
