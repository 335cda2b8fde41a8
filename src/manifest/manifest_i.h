/*
 * What the manifest room's files share: manifest.c (reading, sections,
 * opening) and keys.c (the keys of a section) while a manifest is parsed,
 * spec.c (a source line's sources) and zeroconf.c (manifests made from a
 * file or directory).
 */
#ifndef DSV_MANIFEST_MANIFEST_I_H
#define DSV_MANIFEST_MANIFEST_I_H

#include <stdio.h>

#include "manifest/manifest.h"
#include "formats/tokens/tokens.h"
#include "source/format.h"
#include "view/view_i.h"

/* An empty manifest for path (gpu "auto"), or NULL when out of memory. */
dsv_manifest *dsv_manifest_new(const char *path);

/* How a view's source lines are opened where its keys say: raw, the
 * layout of raw files (source_dtype, ...); docs, a Megatron index's
 * documents as rows (rows = documents). NULL: as the registry tells. */
typedef struct dsv_spec_opts {
	const dsv_raw_layout *raw;
	const dsv_doc_rows *docs;
} dsv_spec_opts;

/* Opens the sources of one manifest source line (spec.c): path is the
 * line's value resolved against the manifest's directory; so NULL, or
 * how the view's keys say its sources are opened. Each source is added to
 * v and checked against its first. @return 0, or a dsv_err with eb set. */
int dsv_view_open_spec(dsv_view *v, const char *path, const dsv_spec_opts *so, dsv_errbuf *eb);
/* parallel.c: fn(ctx, k) for each k in [0, n), on up to DSV_OPEN_THREADS
 * threads (one more each DSV_OPEN_PER_THREAD items; the caller's among
 * them), each taking the next k; a thread stops when fn returns nonzero.
 * fn must be safe on several threads (distinct k). */
void dsv_mf_parallel(size_t n, int (*fn)(void *ctx, size_t k), void *ctx);
/* s3glob.c: the objects an s3:// URL whose key holds '*' or '[' matches,
 * *urls[0 .. *n) (each and all the caller's to free), in natural order.
 * @return 0; DSV_ERR_NOTFOUND (none), DSV_ERR_INVALID (no prefix before
 * the first wildcard), or a listing's error; eb names the pattern. */
int dsv_s3_glob(const char *pattern, char ***urls, size_t *n, dsv_errbuf *eb);

/* index_use.c: the mount's index cache, while its sources are opened. */
typedef struct dsv_mf_index {
	struct dsv_index *ix; /* NULL: none */
	char *file;
} dsv_mf_index;
/* Loads the index cache of the mount of source (a manifest's path, or a
 * zero-config mount's file or directory), when m (may be NULL) or the
 * command line names its directory, and has the registry's opens use
 * it. Never fails: what goes wrong is a log line, and no index. */
void dsv_mf_index_begin(dsv_mf_index *mi, const dsv_manifest *m, const char *source);
/* Stops the opens using it, and writes it when ok (every source
 * opened) and it changed. */
void dsv_mf_index_end(dsv_mf_index *mi, int ok);

typedef struct pending_view {
	dsv_view *v;
	int line;     /* section header line */
	char **specs; /* source specs as written */
	int *spec_lines;
	size_t nspecs;
	/* source_dtype, source_shape, source_offset: raw.dtype set (and
	 * raw_dtype_line) when given */
	dsv_raw_layout raw;
	int has_raw_dtype, raw_dtype_line, raw_shape_line, raw_offset_line;
	/* rows = documents (docs_line), seq_len, pad_token */
	dsv_doc_rows docs;
	int docs_line, seq_len_line, pad_line;
	int mean_line, std_line, axis_line, dtype_line, clip_line;
	int nmean, nstd;
	char *mean_file, *std_file, *rows_file; /* '@' values, as written */
	int rows_line, window_line, stride_line, waxis_line, layout_line, per_source_line;
} pending_view;

typedef struct parse_ctx {
	const char *path;
	char *dir;
	FILE *f;
	int line;
	int section_line;                 /* line of the last [section] header */
	char sect[DSV_VIEW_NAME_MAX + 2]; /* its name; a longer one is cut short */
	size_t sect_len;                  /* the whole name's length */
	int sect_nul;                     /* the name holds a NUL byte */
	char *buf;                        /* the physical line (getline) */
	size_t cap;
	int too_long;
	char *long_value; /* the value of an over-long key line (reader()) */
	int long_line;    /* its line; 0: none */
	int err;
	dsv_errbuf *eb;
	dsv_manifest *m;
	pending_view *views;
	size_t nviews;
	int cur_section_line;
	int started;
	int in_dsview;
} parse_ctx;

/* Records the first error (msg at line of the manifest). @return 0, what
 * an inih handler returns to go on after it. */
int dsv_mf_fail(parse_ctx *c, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* spec resolved against dir, the manifest's directory (a URL, an absolute
 * path or no dir: spec itself), newly allocated; NULL when out of memory. */
char *dsv_mf_resolve(const char *dir, const char *spec);
/* A key of the [dsview] section, or of a view's section. @return 1 ok,
 * 0 failed (dsv_mf_fail called). */
int dsv_mf_dsview_key(parse_ctx *c, const char *name, const char *value);
int dsv_mf_view_key(parse_ctx *c, pending_view *pv, const char *name, const char *value);

/* Zero-configuration mounts' skipped datasets (skipped.c). */
/* Records dataset path as skipped for reason, of kind (a word); value: a
 * scalar dataset's value as JSON text (taken), or NULL. @return 0 or
 * DSV_ERR_NOMEM. */
int dsv_mf_skip_value(dsv_manifest *m, const char *path, const char *reason, const char *kind,
		      char *value);
int dsv_mf_skip(dsv_manifest *m, const char *path, const char *reason, const char *kind);
/* One word for why dataset of file is not served, from its header (and a
 * scalar's value in *value, newly allocated, or NULL). */
void dsv_mf_skip_kind(const char *file, const char *dataset, char *kind, size_t cap, char **value);
/* m->skipped_json rendered from m->skipped. @return 0 or DSV_ERR_NOMEM. */
int dsv_mf_skipped_render(dsv_manifest *m);
/* Nothing of path can be served: eb says why, naming each skipped dataset.
 * @return DSV_ERR_UNSUPPORTED. */
int dsv_mf_nothing_served(const dsv_manifest *m, const char *path, dsv_errbuf *eb);
/* The .skipped.json path of dataset dset: dset alone, or "in:dset" when in
 * (a file's name in a directory mount) is not NULL; in buf. */
const char *dsv_mf_skip_path(const char *in, const char *dset, char *buf, size_t cap);

/* The files a directory mount of dir serves, as paths below it (every
 * file of a format at its top level, recordings of tree formats below it:
 * dir_files.c), in natural order: *names[0 .. *n), each the caller's to
 * free, and the array. @return 0 or a dsv_err with eb set (dir unread). */
int dsv_mf_dir_files(const char *dir, char ***names, size_t *n, dsv_errbuf *eb);
/* The format of dir's file name: the one its name says, else one with no
 * name of its own that its first bytes say (an llm.c token file's .bin;
 * a name another format claims is never read). NULL: not served. */
const dsv_format *dsv_mf_entry_format(const char *dir, const char *name);

/* What zero-configuration mounts share (zeroconf.c), for zarr_tree.c. */
/* Adds a view named name of source s (taken), with the dataset's own path
 * hdf5_path for V.json (or NULL), once it is finished. */
int dsv_mf_add_file_view(dsv_manifest *m, const char *name, const char *hdf5_path, dsv_source *s,
			 dsv_dtype dtype, dsv_errbuf *eb);
/* The view name of the dataset path dset, each part mapped by
 * dsv_name_escape, in *out. @return 0, DSV_ERR_NOMEM, or DSV_ERR_INVALID
 * when a part's mapped name passes DSV_VIEW_NAME_MAX (*part_len: its
 * length). */
int dsv_mf_map_name(const char *dset, char **out, size_t *part_len);
/* The view name of the file at path, less strip bytes, mapped as
 * dsv_mf_map_name's parts are, in *out; eb says why it cannot be one. */
int dsv_mf_file_view_name(const char *path, size_t strip, char **out, dsv_errbuf *eb);
/* Whether err ends a zero-configuration load whatever else: an error of
 * ours, not the file's, or any error under DSV_FROM_FILE_STRICT. */
int dsv_mf_fatal(int err, unsigned flags);
/* `dsview mount X.zarr` (zarr_tree.c): a Zarr array or a group's arrays
 * into m; fails when nothing can be served. */
int dsv_mf_from_zarr(dsv_manifest *m, const char *path, dsv_dtype dtype, unsigned flags,
		     dsv_errbuf *eb);

#endif
