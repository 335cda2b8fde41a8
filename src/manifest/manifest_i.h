/*
 * What manifest.c (reading, sections, opening) and keys.c (the keys of a
 * section) share while a manifest is parsed.
 */
#ifndef DSV_MANIFEST_MANIFEST_I_H
#define DSV_MANIFEST_MANIFEST_I_H

#include <stdio.h>

#include "view/view_i.h"

typedef struct pending_view {
	dsv_view *v;
	int line;     /* section header line */
	char **specs; /* source specs as written */
	int *spec_lines;
	size_t nspecs;
	int has_raw_dtype, raw_dtype_line, raw_ndim, raw_shape_line;
	dsv_dtype raw_dtype;
	int64_t raw_shape[DSV_MAX_DIMS];
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

#endif
