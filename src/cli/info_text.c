/*
 * dsview info, the human renderer: prints the document info_json.c built
 * as aligned text, one label column. Every name or path from a file goes
 * through dsv_cli_shown, so it cannot drive the terminal.
 */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/info_i.h"
#include "cli/progress.h"
#include "dsview/dsview.h"

#define LABEL "  %-10s"

/* A string field as it may be shown on a terminal (see dsv_cli_shown). */
static const char *jshown(const json_t *o, const char *key)
{
	return dsv_cli_shown(dsv_cli_jstr(o, key, ""));
}

static const char *fmt_shape(char *buf, size_t cap, const json_t *arr)
{
	size_t n = json_array_size(arr), len = 0;
	len += (size_t)snprintf(buf, cap, "(");
	for (size_t k = 0; k < n && len < cap; k++)
		len += (size_t)snprintf(buf + len, cap - len, "%s%lld", k ? ", " : "",
					(long long)json_integer_value(json_array_get(arr, k)));
	if (len < cap)
		snprintf(buf + len, cap - len, "%s)", n == 1 ? "," : "");
	return buf;
}

/* A scalar from the store attribute as text. */
static const char *fmt_scalar(char *buf, size_t cap, const json_t *v)
{
	if (json_is_string(v))
		snprintf(buf, cap, "%s", dsv_cli_shown(json_string_value(v)));
	else if (json_is_integer(v))
		snprintf(buf, cap, "%lld", (long long)json_integer_value(v));
	else if (json_is_real(v))
		snprintf(buf, cap, "%g", json_real_value(v));
	else if (json_is_true(v) || json_is_false(v))
		snprintf(buf, cap, "%s", json_is_true(v) ? "true" : "false");
	else
		snprintf(buf, cap, "?");
	return buf;
}

/* The source's chunks: none for a flat one, whose chunks are dsview's
 * readahead units, not the file's ("flat" in info_json.c). */
static void print_chunks(const json_t *src)
{
	char b[32];
	if (json_is_true(json_object_get(src, "flat")))
		return;
	uint64_t n = dsv_cli_jint(src, "nchunks"), bytes = dsv_cli_jint(src, "chunk_bytes");
	uint64_t nrows = (uint64_t)json_integer_value(
		json_array_get(json_object_get(src, "shape"), 0));
	const json_t *rows = json_object_get(src, "chunk_rows");

	if (n == 0) {
		printf(LABEL " none (no elements)\n", "chunks");
		return;
	}
	printf(LABEL " %llu chunk%s of ", "chunks", (unsigned long long)n, n == 1 ? "" : "s");
	if (json_is_integer(rows)) {
		uint64_t r = (uint64_t)json_integer_value(rows);
		/* One chunk holds all the rows, however many it could. */
		if (n == 1 && nrows < r) {
			r = nrows;
			bytes = dsv_cli_jint(src, "data_bytes");
		}
		printf("%llu row%s", (unsigned long long)r, r == 1 ? "" : "s");
	} else {
		printf("%llu elements (rows split)",
		       (unsigned long long)dsv_cli_jint(src, "chunk_elems"));
	}
	printf(" (%s%s)", dsv_fmt_bytes(b, sizeof(b), bytes), n > 1 ? " each" : "");
	/* with a block table, a read of a few rows reads and decodes only
	 * their blocks; without one, the chunk whole */
	if (json_is_integer(json_object_get(src, "lz4_block_bytes")))
		printf(", LZ4 blocks of %s%s",
		       dsv_fmt_bytes(b, sizeof(b), dsv_cli_jint(src, "lz4_block_bytes")),
		       json_is_true(json_object_get(src, "lz4_block_table"))
			       ? ", block table (a read takes only its blocks)"
			       : "");
	printf("\n");
}

static void print_flat(const json_t *root)
{
	const json_t *src = json_object_get(root, "source");
	char shape[DSV_MAX_DIMS * 24], a[32], b[32];

	printf("%s: %s\n", jshown(root, "path"), jshown(root, "kind"));
	printf(LABEL " %s %s\n", "shape",
	       fmt_shape(shape, sizeof(shape), json_object_get(src, "shape")),
	       jshown(src, "dtype"));
	uint64_t data = dsv_cli_jint(src, "data_bytes"), stored = dsv_cli_jint(src, "stored_bytes");
	if (!strcmp(dsv_cli_jstr(root, "kind", ""),
		    "zarr")) { /* a directory: its chunk files count */
		printf(LABEL " %s in %s of chunk files", "data", dsv_fmt_bytes(a, sizeof(a), data),
		       dsv_fmt_bytes(b, sizeof(b), stored));
		if (stored)
			printf(" (ratio %.2f)", (double)data / (double)stored);
		printf("\n");
	} else {
		printf(LABEL " %s in a %s file\n", "data", dsv_fmt_bytes(a, sizeof(a), data),
		       dsv_fmt_bytes(b, sizeof(b), dsv_cli_jint(root, "file_bytes")));
	}
	if (json_is_integer(json_object_get(src, "source_offset"))) {
		const char *why = dsv_cli_jstr(src, "why", "");
		printf(LABEL " %s elements from byte %llu (source_offset)%s%s\n", "layout",
		       jshown(src, "source_dtype"),
		       (unsigned long long)dsv_cli_jint(src, "source_offset"), *why ? ", " : "",
		       dsv_cli_shown(why));
	}
	const json_t *scale = json_object_get(src, "scale");
	if (json_is_number(scale))
		printf(LABEL " x * %.17g + %.17g (the file's own scaling)\n", "values",
		       json_number_value(scale), json_number_value(json_object_get(src, "offset")));
	print_chunks(src);
}

static void print_filters(const json_t *filters)
{
	size_t n = json_array_size(filters);
	printf(LABEL " ", "filters");
	if (!n)
		printf("none");
	for (size_t i = 0; i < n; i++) {
		const json_t *f = json_array_get(filters, i);
		const json_t *cd = json_object_get(f, "cd");
		printf("%s%s", i ? " + " : "", jshown(f, "name"));
		/* The compression level is the one parameter people ask about. */
		if (dsv_cli_jint(f, "id") == 1 && json_array_size(cd) > 0)
			printf(" (level %lld)",
			       (long long)json_integer_value(json_array_get(cd, 0)));
	}
	printf("\n");
}

static void print_store(const json_t *store)
{
	const json_t *v;
	char b[4096], c[32];

	if (json_object_get(store, "error")) {
		printf(LABEL " dsview attribute present, but %s\n", "store",
		       jshown(store, "error"));
		return;
	}
	printf(LABEL " %s", "store",
	       json_is_string(json_object_get(store, "codec")) ? jshown(store, "codec")
							       : "codec unknown");
	if ((v = json_object_get(store, "level")))
		printf(" level %s", fmt_scalar(b, sizeof(b), v));
	if ((v = json_object_get(store, "chunk_rows")))
		printf(", %s rows per chunk", fmt_scalar(b, sizeof(b), v));
	if (json_is_integer(v = json_object_get(store, "chunk_bytes")))
		printf(" (%s)", dsv_fmt_bytes(c, sizeof(c), (uint64_t)json_integer_value(v)));
	if (json_is_true(json_object_get(store, "fletcher32")))
		printf(", fletcher32");
	if ((v = json_object_get(store, "source")))
		printf(", packed from %s", fmt_scalar(b, sizeof(b), v));
	if ((v = json_object_get(store, "dsview_version")))
		printf(" by dsview %s", fmt_scalar(b, sizeof(b), v));
	if ((v = json_object_get(store, "format_version")))
		printf(" (store format %s)", fmt_scalar(b, sizeof(b), v));
	printf("\n");
}

/* A virtual dataset's parts: the rows each serves, and from where. */
static void print_parts(const json_t *parts, const char *why)
{
	const json_t *p;
	size_t i;

	printf(LABEL " virtual: %s\n", "dsview", dsv_cli_shown(why));
	json_array_foreach(parts, i, p)
	{
		const json_t *r = json_object_get(p, "rows");
		char rows[64];
		snprintf(rows, sizeof(rows), "rows %llu-%llu",
			 (unsigned long long)json_integer_value(json_array_get(r, 0)),
			 (unsigned long long)json_integer_value(json_array_get(r, 1)));
		printf("    %-18s %s:", rows, jshown(p, "path"));
		printf("%s (%s", jshown(p, "dataset"), jshown(p, "kind"));
		printf("%s%s)\n", *dsv_cli_jstr(p, "why", "") ? "; " : "", jshown(p, "why"));
	}
}

static void print_dataset(const json_t *d)
{
	const json_t *src = json_object_get(d, "source"), *store = json_object_get(d, "store");
	/* shown when printed */
	const char *serve = dsv_cli_jstr(d, "serve", ""), *why = dsv_cli_jstr(d, "why", "");
	char shape[DSV_MAX_DIMS * 24], a[32], b[32];

	printf("%s%s\n", jshown(d, "name"), json_is_object(store) ? "  (dsview store)" : "");
	if (!json_object_get(d, "layout")) {
		/* Listed, but even its header could not be read. */
		printf(LABEL " refused: %s\n", "dsview", dsv_cli_shown(why));
		return;
	}
	printf(LABEL " %s %s\n", "shape",
	       fmt_shape(shape, sizeof(shape), json_object_get(d, "shape")), jshown(d, "type"));
	printf(LABEL " %s", "layout", jshown(d, "layout"));
	if (json_is_array(json_object_get(d, "chunk_shape"))) {
		printf(", chunks of %s",
		       fmt_shape(shape, sizeof(shape), json_object_get(d, "chunk_shape")));
		if (json_is_integer(json_object_get(d, "chunks_written")))
			printf(", %llu written",
			       (unsigned long long)dsv_cli_jint(d, "chunks_written"));
	}
	if (dsv_cli_jint(d, "external_files"))
		printf(", external storage in %llu file(s)",
		       (unsigned long long)dsv_cli_jint(d, "external_files"));
	printf("\n");
	print_filters(json_object_get(d, "filters"));
	printf(LABEL " %s for %s raw", "stored",
	       dsv_fmt_bytes(a, sizeof(a), dsv_cli_jint(d, "stored_bytes")),
	       dsv_fmt_bytes(b, sizeof(b), dsv_cli_jint(d, "raw_bytes")));
	if (json_is_real(json_object_get(d, "ratio")))
		printf(" (ratio %.2f)", json_real_value(json_object_get(d, "ratio")));
	printf("\n");
	if (!strcmp(serve, "fast-path"))
		printf(LABEL " fast path (%s: dsview preads and decodes)%s%s\n", "dsview",
		       jshown(src, "kind"), *why ? "; " : "", dsv_cli_shown(why));
	else if (!strcmp(serve, "virtual"))
		print_parts(json_object_get(d, "parts"), why);
	else if (!strcmp(serve, "library-fallback"))
		printf(LABEL " library fallback (%s; decoded by HDF5, serialised)\n", "dsview",
		       dsv_cli_shown(why));
	else
		printf(LABEL " refused: %s\n", "dsview", dsv_cli_shown(why));
	if (json_is_object(src))
		print_chunks(src);
	if (json_is_object(store))
		print_store(store);
}

static void print_h5(const json_t *root)
{
	const json_t *ds = json_object_get(root, "datasets"), *t = json_object_get(root, "totals");
	char a[32], b[32];
	uint64_t n = dsv_cli_jint(t, "datasets"), raw = dsv_cli_jint(t, "raw_bytes");
	uint64_t stored = dsv_cli_jint(t, "stored_bytes");

	printf("%s: HDF5 file, %s, %llu dataset%s (%llu fast path, %llu library fallback, "
	       "%llu refused)\n",
	       jshown(root, "path"), dsv_fmt_bytes(a, sizeof(a), dsv_cli_jint(root, "file_bytes")),
	       (unsigned long long)n, n == 1 ? "" : "s",
	       (unsigned long long)dsv_cli_jint(t, "fast_path"),
	       (unsigned long long)dsv_cli_jint(t, "library_fallback"),
	       (unsigned long long)dsv_cli_jint(t, "refused"));
	for (size_t i = 0; i < json_array_size(ds); i++)
		print_dataset(json_array_get(ds, i));
	if (n > 1) {
		printf("total: %s raw, %s stored", dsv_fmt_bytes(a, sizeof(a), raw),
		       dsv_fmt_bytes(b, sizeof(b), stored));
		if (stored)
			printf(" (ratio %.2f)", (double)raw / (double)stored);
		printf("\n");
	}
	const json_t *links = json_object_get(t, "links_not_followed");
	uint64_t soft = dsv_cli_jint(links, "soft"), ext = dsv_cli_jint(links, "external");
	if (soft + ext)
		printf("links: %llu soft, %llu external, not followed (a mount of the file serves "
		       "only its own datasets; a manifest line naming a soft link serves its "
		       "target)\n",
		       (unsigned long long)soft, (unsigned long long)ext);
}

/* mean or std: its values (a long list cut short), or its file */
static void print_norm(const char *label, const json_t *x)
{
	char shape[DSV_MAX_DIMS * 24];
	if (json_is_object(x)) {
		printf("%s %s %s", label, jshown(x, "file"),
		       fmt_shape(shape, sizeof(shape), json_object_get(x, "shape")));
		return;
	}
	size_t n = json_array_size(x);
	printf("%s [", label);
	for (size_t k = 0; k < n && k < 8; k++)
		printf("%s%.9g", k ? ", " : "", json_number_value(json_array_get(x, k)));
	printf("%s]", n > 8 ? ", ..." : "");
}

/* rows, window and layout lines: what the view is beyond concatenation */
static void print_shape_keys(const json_t *v)
{
	const json_t *r = json_object_get(v, "rows"), *w = json_object_get(v, "window");
	if (json_is_object(r) && json_object_get(r, "index")) {
		printf(LABEL " %lld rows picked by %s\n", "rows",
		       (long long)dsv_cli_jint(r, "count"), jshown(r, "index"));
	} else if (json_is_object(r)) {
		const json_t *a = json_object_get(r, "start"), *b = json_object_get(r, "stop");
		printf(LABEL " ", "rows");
		if (json_is_integer(a))
			printf("%lld", (long long)json_integer_value(a));
		printf(":");
		if (json_is_integer(b))
			printf("%lld", (long long)json_integer_value(b));
		printf(":%lld (%lld rows)\n",
		       (long long)json_integer_value(json_object_get(r, "step")),
		       (long long)dsv_cli_jint(r, "count"));
	}
	if (json_is_object(w))
		printf(LABEL " %lld along source axis %lld, stride %lld\n", "window",
		       (long long)dsv_cli_jint(w, "size"), (long long)dsv_cli_jint(w, "axis"),
		       (long long)dsv_cli_jint(w, "stride"));
	if (json_is_string(json_object_get(v, "layout")))
		printf(LABEL " %s\n", "layout", jshown(v, "layout"));
}

static void print_view(const json_t *v)
{
	const json_t *xf = json_object_get(v, "transform"), *srcs = json_object_get(v, "sources");
	const json_t *win = json_object_get(v, "window");
	char shape[DSV_MAX_DIMS * 24], a[32], b[32];

	printf("[%s]\n", jshown(v, "name"));
	printf(LABEL " %s %s, %s virtual (.dat), %s on disk", "output",
	       fmt_shape(shape, sizeof(shape), json_object_get(v, "shape")), jshown(v, "dtype"),
	       dsv_fmt_bytes(a, sizeof(a), dsv_cli_jint(v, "nbytes")),
	       dsv_fmt_bytes(b, sizeof(b), dsv_cli_jint(v, "stored_bytes")));
	if (json_is_real(json_object_get(v, "ratio")))
		printf(" (ratio %.2f)", json_real_value(json_object_get(v, "ratio")));
	printf("\n");
	print_shape_keys(v);
	printf(LABEL " scale %.9g, offset %.9g", "transform",
	       json_real_value(json_object_get(xf, "scale")),
	       json_real_value(json_object_get(xf, "offset")));
	if (!json_is_null(json_object_get(xf, "mean"))) {
		printf(", ");
		print_norm("mean", json_object_get(xf, "mean"));
		printf(", ");
		print_norm("std", json_object_get(xf, "std"));
		if (json_is_integer(json_object_get(xf, "channel_axis")))
			printf(", channel_axis %lld",
			       (long long)json_integer_value(json_object_get(xf, "channel_axis")));
		if (json_is_true(json_object_get(xf, "per_source")))
			printf(", per source");
	}
	if (json_is_array(json_object_get(xf, "clip"))) {
		printf(", ");
		print_norm("clip", json_object_get(xf, "clip"));
	}
	printf("\n");
	for (size_t k = 0; k < json_array_size(srcs); k++) {
		const json_t *s = json_array_get(srcs, k), *rows = json_object_get(s, "rows");
		long long r0 = (long long)json_integer_value(json_array_get(rows, 0));
		long long r1 = (long long)json_integer_value(json_array_get(rows, 1));
		const char *ds = json_string_value(json_object_get(s, "dataset"));
		const char *what = json_is_object(win) ? "windows" : "rows";
		printf(LABEL " %s%s%s  %s %s %s, ", "source", jshown(s, "path"), ds ? ":" : "",
		       ds ? dsv_cli_shown(ds) : "", jshown(s, "kind"),
		       fmt_shape(shape, sizeof(shape), json_object_get(s, "shape")),
		       jshown(s, "dtype"));
		if (json_is_integer(json_object_get(s, "source_offset")))
			printf("%s from byte %llu, ", jshown(s, "source_dtype"),
			       (unsigned long long)dsv_cli_jint(s, "source_offset"));
		if (json_is_object(win) && r1 == r0) {
			long long ax = (long long)dsv_cli_jint(win, "axis");
			printf("contributes no window: axis %lld has %lld < window %lld", ax,
			       (long long)json_integer_value(
				       json_array_get(json_object_get(s, "shape"), (size_t)ax)),
			       (long long)dsv_cli_jint(win, "size"));
		} else if (r1 > r0) {
			printf("%s %lld-%lld%s", what, r0, r1 - 1,
			       json_is_null(json_object_get(v, "rows")) ? " of the view"
									: " before `rows`");
		} else {
			printf("no rows");
		}
		if (*dsv_cli_jstr(s, "why", ""))
			printf(" (%s)", jshown(s, "why"));
		printf("\n");
	}
}

/* A manifest's views, or a Zarr group's or .npz's arrays (each a view) and what
 * of it is not served. */
static void print_manifest(const json_t *root, int group)
{
	const json_t *views = json_object_get(root, "views"), *t = json_object_get(root, "totals");
	const json_t *skipped = json_object_get(root, "skipped");
	char a[32], b[32];
	uint64_t n = dsv_cli_jint(t, "views"), virt = dsv_cli_jint(t, "virtual_bytes");
	uint64_t disk = dsv_cli_jint(t, "stored_bytes");

	const char *kind = jshown(root, "kind");
	printf("%s: %s, %llu %s%s\n", jshown(root, "path"),
	       !group                         ? "manifest"
	       : !strcmp(kind, "npz-group")   ? ".npz"
	       : !strcmp(kind, "arrow-group") ? "Arrow IPC file"
					      : "Zarr group",
	       (unsigned long long)n, group ? "array" : "view", n == 1 ? "" : "s");
	for (size_t i = 0; i < json_array_size(views); i++)
		print_view(json_array_get(views, i));
	for (size_t i = 0; i < json_array_size(skipped); i++) {
		const json_t *s = json_array_get(skipped, i);
		printf("[%s] not served: %s\n", jshown(s, "name"), jshown(s, "reason"));
	}
	printf("total: %s virtual, %s on disk", dsv_fmt_bytes(a, sizeof(a), virt),
	       dsv_fmt_bytes(b, sizeof(b), disk));
	if (disk)
		printf(" (ratio %.2f)", (double)virt / (double)disk);
	printf(", each source counted once\n");
}

void dsv_info_print(dsv_target_kind kind, const json_t *root)
{
	if (kind == DSV_TARGET_DATASETS)
		print_h5(root);
	else if (kind == DSV_TARGET_MANIFEST || kind == DSV_TARGET_GROUP)
		print_manifest(root, kind == DSV_TARGET_GROUP);
	else
		print_flat(root);
}
