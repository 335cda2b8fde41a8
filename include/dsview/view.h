/*
 * Views and manifests. A view is one or more sources concatenated along axis
 * 0, a transform plan and an output dtype; a manifest is a list of views plus
 * mount defaults. Beyond concatenation a view may window its sources, pick
 * rows and permute each row; read/read.c maps byte ranges.
 *
 * Global chunk index g: the chunks of source 0, then of source 1, ...
 *
 * Thread safety: views are immutable once loaded; every const function may be
 * called from any thread. Loading and freeing are single-threaded.
 */
#ifndef DSVIEW_VIEW_H
#define DSVIEW_VIEW_H

#include <stdint.h>
#include <time.h>

#include "dsview/dsview.h"
#include "dsview/source.h"
#include "dsview/xform.h"

/* A view; its layout is the library's own. Outside the library, read it
 * with dsv_view_get_info. */
typedef struct dsv_view dsv_view;

/* A dataset of a zero-config file that is not served: its path in the
 * file, the reason alone (dsv_errbuf.reason), one word for summaries
 * ("string", "compound", "scalar", "name", "unreadable", ...), and for a
 * scalar dataset its value (JSON text), else NULL. */
typedef struct dsv_skipped {
	char *path;
	char *reason;
	char kind[24];
	char *value;
} dsv_skipped;

typedef struct dsv_manifest {
	char *path;
	struct timespec mtime; /* the manifest file's (zero for a zero-config mount) */
	dsv_view **views;
	size_t nviews;
	/* zero-config only: what the file holds that is not served (empty
	 * for a manifest, where every error is fatal), and skipped_json, the
	 * text of /.skipped.json (NULL when nothing was skipped) */
	dsv_skipped *skipped;
	size_t nskipped;
	char *skipped_json;
	/* zero-config only: the dtype was asked for (DSV_FROM_FILE_DTYPE) */
	int dtype_given;
	/* [dsview] defaults; has_* tells whether the manifest set them */
	int has_cache_size, has_threads, has_gpu, has_gpu_cache, has_disk_cache_size;
	uint64_t cache_size, gpu_cache, disk_cache_size;
	int threads;
	char gpu[16];
	char *disk_cache;  /* the disk cache's directory of objects' bytes, or NULL */
	char *index_cache; /* the index cache's directory (what mounts learnt), or NULL */
} dsv_manifest;

/* What a view is, for readers outside the library (info, verify): a
 * copy of the view's description; the pointers are the view's own and
 * live as long as it does. */
typedef struct dsv_view_info {
	const char *name;
	dsv_dtype dtype; /* output */
	int ndim;
	uint64_t shape[DSV_MAX_DIMS];
	uint64_t nelems, row_bytes, nbytes;
	size_t nsources;
	dsv_source *const *sources;
	const uint64_t *elem_base; /* nsources + 1: first element of each source in their
				    * concatenation (before windows, rows, layout) */
	uint64_t nchunks;
	/* the transform as declared */
	double scale, offset;
	int nchan, channel_axis, has_clip;
	const double *mean, *std; /* nchan values each */
	double clip_lo, clip_hi;
	struct timespec mtime; /* newest source mtime */
	const char *json;      /* V.json: rows, window, layout and the full transform */
} dsv_view_info;

void dsv_view_get_info(const dsv_view *v, dsv_view_info *out);

/* Parses and validates a manifest, opening every source. On error, eb holds
 * "<manifest>:<line>: <reason>". */
int dsv_manifest_load(const char *path, dsv_manifest **out, dsv_errbuf *eb);
/* A single .npy or HDF5 file: every array becomes a view cast to dtype.
 * HDF5 names are mapped to view names by dsv_name_escape (common/str.h),
 * each group a directory. A dataset that cannot be served is put in
 * m->skipped and the rest are served; it fails only when nothing can be
 * served (eb then gives the reasons), or, with DSV_FROM_FILE_STRICT, at
 * the first dataset that cannot be served. */
#define DSV_FROM_FILE_STRICT 1
/* The dtype was asked for (--dtype): a token stream's view is cast to it
 * too; without, token streams are served as int64 (others as dtype). */
#define DSV_FROM_FILE_DTYPE 2
int dsv_manifest_from_file(const char *path, dsv_dtype dtype, unsigned flags, dsv_manifest **out,
			   dsv_errbuf *eb);
void dsv_manifest_free(dsv_manifest *m); /* accepts NULL */

/* Readahead units ("segments") of a view: its chunks, in order, for a
 * view that is its sources concatenated; about a chunk's worth of rows
 * otherwise (windows, rows, layout). The view bytes of segment seg.
 * @return 0, or DSV_ERR_INVALID for seg out of range. */
int dsv_view_seg_range(const dsv_view *v, uint64_t seg, uint64_t *off, uint64_t *len);

/* Source index and chunk reference of global chunk g. */
int dsv_view_chunk_ref(const dsv_view *v, uint64_t g, size_t *src, dsv_chunk_ref *ref);

/* True if name is a valid view name (letters, digits, '_', '-', '.';
 * not "." or "..", at most 200 bytes). */
int dsv_view_name_ok(const char *name);

#endif
