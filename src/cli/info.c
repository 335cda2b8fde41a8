/*
 * dsview info: describes a .npy, a raw file, an HDF5 file (every dataset,
 * or one), a dsview store or a manifest.
 *
 * Everything is first gathered into one JSON document (the schema is in
 * info_usage below); --json prints it, otherwise the human renderer prints
 * the same document as aligned text. One model keeps the two outputs from
 * drifting apart.
 *
 * A dataset dsview refuses to serve is described, not an error: info is
 * where a user finds out why. Only a file that cannot be read at all (or a
 * bad argument) exits 1.
 */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/progress.h"
#include "cli/target.h"
#include "dsview/h5info.h"
#include "dsview/pack.h"
#include "dsview/source.h"
#include "dsview/view.h"

static const char info_usage[] =
	"usage: dsview info [--json] PATH\n"
	"       dsview info [--json] --dtype T --shape A,B,... RAWFILE\n"
	"\n"
	"Describes PATH: a .npy, a raw file (with --dtype and --shape; the first\n"
	"dimension may be -1), an HDF5 file (every dataset) or one dataset of it\n"
	"(file.h5:/path/dset), a dsview store, or a manifest (.ini: every view).\n"
	"For HDF5 datasets: layout, chunks, filters, bytes stored, and how dsview\n"
	"serves each one: fast path (dsview reads and decodes the chunks itself),\n"
	"library fallback (through HDF5, serialised) or refused, with the reason.\n"
	"\n"
	"options:\n"
	"  --json        print one JSON document instead of text\n"
	"  --dtype T     raw file: element type (uint8, int16, float32, ...)\n"
	"  --shape S     raw file: shape, e.g. -1,64,64,3\n"
	"  -h, --help    this help\n"
	"\n"
	"Names and paths are shown with control characters and bytes that are not\n"
	"UTF-8 as \\xNN; in JSON, which escapes control characters itself, only\n"
	"the bytes that are not UTF-8.\n"
	"\n"
	"JSON schema (sizes in bytes, all numbers are JSON numbers):\n"
	"  {\"path\", \"kind\": \"npy\"|\"raw\"|\"hdf5\"|\"manifest\", \"file_bytes\",\n"
	"   npy, raw: \"source\": SOURCE\n"
	"   hdf5:     \"datasets\": [DATASET],\n"
	"             \"totals\": {\"datasets\", \"fast_path\", \"library_fallback\",\n"
	"                        \"refused\", \"raw_bytes\", \"stored_bytes\",\n"
	"                        \"links_not_followed\": {\"soft\", \"external\"}}\n"
	"   manifest: \"views\": [VIEW], \"totals\": {\"views\", \"virtual_bytes\",\n"
	"             \"stored_bytes\"} (a source shared by views counted once)}\n"
	"  SOURCE  = {\"path\", \"dataset\": str|null, \"kind\": \"npy\"|\"raw\"|\n"
	"             \"hdf5-contiguous\"|\"hdf5-chunked\"|\"hdf5-library\", \"why\": str|null,\n"
	"             \"dtype\", \"shape\", \"data_bytes\", \"stored_bytes\", \"nchunks\",\n"
	"             \"chunk_elems\", \"chunk_rows\": int|null (null: chunks split rows),\n"
	"             \"chunk_bytes\"}    (the chunks dsview reads and caches)\n"
	"  DATASET = {\"name\", \"type\" (as stored), \"element_bytes\", \"shape\",\n"
	"             \"layout\": \"contiguous\"|\"chunked\"|\"compact\"|\"virtual\"|\"unknown\",\n"
	"             \"chunk_shape\": [int]|null, \"chunks_written\": int|null,\n"
	"             \"filters\": [{\"id\", \"name\", \"cd\": [int]}], \"external_files\",\n"
	"             \"raw_bytes\", \"stored_bytes\", \"ratio\": raw/stored|null,\n"
	"             \"serve\": \"fast-path\"|\"library-fallback\"|\"refused\",\n"
	"             \"why\": str|null (fallback or refusal reason),\n"
	"             \"source\": SOURCE|null (null when refused),\n"
	"             \"store\": null | the dsview attribute's JSON object |\n"
	"                      {\"error\": str} (attribute present but unreadable)}\n"
	"  VIEW    = {\"name\", \"shape\", \"dtype\", \"nbytes\" (size of NAME.dat),\n"
	"             \"stored_bytes\", \"ratio\", \"transform\": {\"scale\", \"offset\",\n"
	"             \"mean\", \"std\", \"channel_axis\", \"clip\"} (null when unset),\n"
	"             \"sources\": [SOURCE with \"rows\": [first, end)]}\n";

#define LABEL "  %-10s"

/* ---- building the document ---- */

static json_t *jshape(int ndim, const uint64_t *shape)
{
	json_t *a = json_array();
	for (int k = 0; k < ndim; k++)
		json_array_append_new(a, json_integer((json_int_t)shape[k]));
	return a;
}

/* A JSON string for text from a file or the command line: JSON strings
 * are UTF-8, so a byte that is not (a name in another encoding) becomes
 * \xNN instead of making jansson drop the whole value. */
static json_t *jtext(const char *s)
{
	return json_string(dsv_cli_escaped(s, 0));
}

static json_t *jstr_or_null(const char *s)
{
	return s && *s ? jtext(s) : json_null();
}

static json_t *jratio(uint64_t raw, uint64_t stored)
{
	return stored ? json_real((double)raw / (double)stored) : json_null();
}

static json_t *jsource(const dsv_source_info *si)
{
	json_t *o = json_object();
	uint64_t esize = dsv_dtype_size(si->dtype);

	json_object_set_new(o, "path", jtext(si->path));
	json_object_set_new(o, "dataset", jstr_or_null(si->dataset));
	json_object_set_new(o, "kind", json_string(dsv_source_kind_name(si->kind)));
	json_object_set_new(o, "why", jstr_or_null(si->why));
	json_object_set_new(o, "dtype", json_string(dsv_dtype_name(si->dtype)));
	json_object_set_new(o, "shape", jshape(si->ndim, si->shape));
	json_object_set_new(o, "data_bytes", json_integer((json_int_t)(si->nelems * esize)));
	json_object_set_new(o, "stored_bytes", json_integer((json_int_t)si->stored_bytes));
	json_object_set_new(o, "nchunks", json_integer((json_int_t)si->nchunks));
	json_object_set_new(o, "chunk_elems", json_integer((json_int_t)si->chunk_elems));
	json_object_set_new(o, "chunk_rows",
			    si->row_elems && si->chunk_elems % si->row_elems == 0
				    ? json_integer((json_int_t)(si->chunk_elems / si->row_elems))
				    : json_null());
	json_object_set_new(o, "chunk_bytes", json_integer((json_int_t)(si->chunk_elems * esize)));
	return o;
}

/* eb messages read "<file>:<dataset>: <reason>"; info shows the reason
 * under the dataset's name, so the prefix goes. */
static const char *reason_of(const char *msg, const char *file, const char *dataset)
{
	size_t n = strlen(file);
	if (!strncmp(msg, file, n) && msg[n] == ':') {
		const char *r = msg + n + 1;
		size_t m = dataset ? strlen(dataset) : 0;
		if (dataset && !strncmp(r, dataset, m) && r[m] == ':')
			r += m + 1;
		while (*r == ' ')
			r++;
		return r;
	}
	return msg;
}

static json_t *jstore(const dsv_h5_desc *d)
{
	json_error_t je;
	json_t *o;

	if (d->store_attr_bad)
		return json_pack("{s:s}", "error", "attribute is not a single string");
	if (!d->store_attr)
		return json_null();
	o = json_loads(d->store_attr, JSON_REJECT_DUPLICATES, &je);
	if (!o || !json_is_object(o)) {
		json_decref(o);
		return json_pack("{s:s}", "error", "attribute is not a JSON object");
	}
	return o;
}

/*
 * One HDF5 dataset: its header (dsv_h5_describe) and how dsview serves it
 * (dsv_source_open_h5); counts[] gets fast/fallback/refused. @return 0
 * with *out set, or the dsv_err (eb set) when the dataset cannot even be
 * described.
 */
static int jdataset(const char *file, const char *name, uint64_t counts[3], uint64_t *raw,
		    uint64_t *stored, json_t **out, dsv_errbuf *eb)
{
	dsv_h5_desc d;
	dsv_source *s = NULL;
	dsv_errbuf oeb;
	json_t *o, *f;
	int err;

	*out = NULL;
	err = dsv_h5_describe(file, name, &d, eb);
	if (err)
		return err;
	o = json_object();
	json_object_set_new(o, "name", jtext(name));
	json_object_set_new(o, "type", jtext(d.type));
	json_object_set_new(o, "element_bytes", json_integer((json_int_t)d.type_size));
	json_object_set_new(o, "shape", jshape(d.ndim, d.shape));
	json_object_set_new(o, "layout", json_string(dsv_h5_layout_name(d.layout)));
	json_object_set_new(o, "chunk_shape", d.layout == DSV_H5_LAYOUT_CHUNKED
						      ? jshape(d.ndim, d.chunk) : json_null());
	json_object_set_new(o, "chunks_written", d.chunks_written >= 0
							 ? json_integer(d.chunks_written) : json_null());
	f = json_array();
	for (int i = 0; i < d.nfilters; i++) {
		json_t *cd = json_array();
		for (size_t k = 0; k < d.filters[i].ncd; k++)
			json_array_append_new(cd, json_integer(d.filters[i].cd[k]));
		json_array_append_new(f, json_pack("{s:i,s:o,s:o}", "id", d.filters[i].id,
						   "name", jtext(d.filters[i].name), "cd", cd));
	}
	json_object_set_new(o, "filters", f);
	json_object_set_new(o, "external_files", json_integer(d.external_files));
	json_object_set_new(o, "raw_bytes", json_integer((json_int_t)d.raw_bytes));
	json_object_set_new(o, "stored_bytes", json_integer((json_int_t)d.stored_bytes));
	json_object_set_new(o, "ratio", jratio(d.raw_bytes, d.stored_bytes));
	*raw += d.raw_bytes;
	*stored += d.stored_bytes;

	if (dsv_source_open_h5(file, name, &s, &oeb) == 0) {
		const dsv_source_info *si = dsv_source_get_info(s);
		int fb = si->kind == DSV_SRC_H5_FALLBACK;
		json_object_set_new(o, "serve", json_string(fb ? "library-fallback" : "fast-path"));
		json_object_set_new(o, "why", jstr_or_null(si->why));
		json_object_set_new(o, "source", jsource(si));
		counts[fb]++;
		dsv_source_close(s);
	} else {
		json_object_set_new(o, "serve", json_string("refused"));
		json_object_set_new(o, "why", jtext(reason_of(oeb.msg, file, name)));
		json_object_set_new(o, "source", json_null());
		counts[2]++;
	}
	json_object_set_new(o, "store", jstore(&d));
	dsv_h5_desc_free(&d);
	*out = o;
	return 0;
}

static int build_h5(const dsv_target *t, json_t *root, dsv_errbuf *eb)
{
	uint64_t counts[3] = { 0 }, raw = 0, stored = 0;
	json_t *arr = json_array();
	char **names = NULL;
	size_t n = 0, links[2] = { 0, 0 }; /* soft, external: not followed */
	int err = 0;

	json_object_set_new(root, "datasets", arr);
	if (t->dataset) {
		json_t *o;
		if ((err = jdataset(t->file, t->dataset, counts, &raw, &stored, &o, eb)))
			return err;
		json_array_append_new(arr, o);
	} else {
		/* The library's own reason first (e.g. a truncated copy):
		 * listing would only say "not an HDF5 file, or damaged". */
		err = dsv_h5_check_file(t->file, eb);
		if (!err)
			err = dsv_h5_list_datasets(t->file, &names, &n, links, eb);
		for (size_t i = 0; !err && i < n; i++) {
			/* A dataset listed but not describable (a damaged header)
			 * is shown with the reason; the others still are. */
			dsv_errbuf deb;
			json_t *o;
			if (jdataset(t->file, names[i], counts, &raw, &stored, &o, &deb)) {
				o = json_pack("{s:o,s:s,s:o,s:n,s:n}", "name", jtext(names[i]), "serve",
					      "refused", "why", jtext(reason_of(deb.msg, t->file, names[i])),
					      "source", "store");
				counts[2]++;
			}
			json_array_append_new(arr, o);
		}
		for (size_t i = 0; i < n; i++)
			free(names[i]);
		free(names);
		if (err)
			return err;
	}
	json_object_set_new(root, "totals",
			    json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:{s:I,s:I}}", "datasets",
				      (json_int_t)json_array_size(arr), "fast_path",
				      (json_int_t)counts[0], "library_fallback", (json_int_t)counts[1],
				      "refused", (json_int_t)counts[2], "raw_bytes", (json_int_t)raw,
				      "stored_bytes", (json_int_t)stored, "links_not_followed", "soft",
				      (json_int_t)links[0], "external", (json_int_t)links[1]));
	return 0;
}

static json_t *jdoubles(const double *d, int n)
{
	json_t *a = json_array();
	for (int k = 0; k < n; k++)
		json_array_append_new(a, json_real(d[k]));
	return a;
}

static int same_source(const dsv_source_info *a, const dsv_source_info *b)
{
	return !strcmp(a->path, b->path) &&
	       (a->dataset && b->dataset ? !strcmp(a->dataset, b->dataset) : a->dataset == b->dataset);
}

static int build_manifest(const dsv_target *t, json_t *root, dsv_errbuf *eb)
{
	dsv_manifest *m;
	uint64_t virt = 0, disk = 0;
	json_t *views = json_array();
	int err;

	json_object_set_new(root, "views", views);
	err = dsv_manifest_load(t->file, &m, eb);
	if (err)
		return err;
	for (size_t i = 0; i < m->nviews; i++) {
		const dsv_view *v = m->views[i];
		json_t *o = json_object(), *srcs = json_array(), *xf = json_object();
		uint64_t vstored = 0;

		for (size_t k = 0; k < v->nsources; k++) {
			const dsv_source_info *si = dsv_source_get_info(v->sources[k]);
			uint64_t row = si->row_elems ? si->row_elems : 1;
			json_t *so = jsource(si);
			json_object_set_new(so, "rows",
					    json_pack("[I,I]", (json_int_t)(v->elem_base[k] / row),
						      (json_int_t)(v->elem_base[k + 1] / row)));
			json_array_append_new(srcs, so);
			vstored += si->stored_bytes;
			/* The totals count each file's bytes once. */
			int seen = 0;
			for (size_t pi = 0; pi <= i && !seen; pi++) {
				const dsv_view *pv = m->views[pi];
				size_t lim = pi == i ? k : pv->nsources;
				for (size_t pk = 0; pk < lim && !seen; pk++)
					seen = same_source(dsv_source_get_info(pv->sources[pk]), si);
			}
			if (!seen)
				disk += si->stored_bytes;
		}
		json_object_set_new(xf, "scale", json_real(v->scale));
		json_object_set_new(xf, "offset", json_real(v->offset));
		json_object_set_new(xf, "mean", v->nchan ? jdoubles(v->mean, v->nchan) : json_null());
		json_object_set_new(xf, "std", v->nchan ? jdoubles(v->std, v->nchan) : json_null());
		json_object_set_new(xf, "channel_axis",
				    v->nchan ? json_integer(v->channel_axis) : json_null());
		if (v->has_clip) {
			double c[2] = { v->clip_lo, v->clip_hi };
			json_object_set_new(xf, "clip", jdoubles(c, 2));
		} else {
			json_object_set_new(xf, "clip", json_null());
		}
		json_object_set_new(o, "name", json_string(v->name));
		json_object_set_new(o, "shape", jshape(v->ndim, v->shape));
		json_object_set_new(o, "dtype", json_string(dsv_dtype_name(v->dtype)));
		json_object_set_new(o, "nbytes", json_integer((json_int_t)v->nbytes));
		json_object_set_new(o, "stored_bytes", json_integer((json_int_t)vstored));
		json_object_set_new(o, "ratio", jratio(v->nbytes, vstored));
		json_object_set_new(o, "transform", xf);
		json_object_set_new(o, "sources", srcs);
		json_array_append_new(views, o);
		virt += v->nbytes;
	}
	json_object_set_new(root, "totals",
			    json_pack("{s:I,s:I,s:I}", "views", (json_int_t)m->nviews,
				      "virtual_bytes", (json_int_t)virt, "stored_bytes",
				      (json_int_t)disk));
	dsv_manifest_free(m);
	return 0;
}

static int build_flat(const dsv_target *t, dsv_dtype dtype, int ndim, const int64_t *shape,
		      json_t *root, dsv_errbuf *eb)
{
	dsv_source *s;
	int err = t->kind == DSV_TARGET_NPY ? dsv_source_open_npy(t->file, &s, eb)
					     : dsv_source_open_raw(t->file, dtype, ndim, shape, &s, eb);
	if (err)
		return err;
	json_object_set_new(root, "source", jsource(dsv_source_get_info(s)));
	dsv_source_close(s);
	return 0;
}

/* ---- the human renderer ---- */

static uint64_t jint(const json_t *o, const char *key)
{
	return (uint64_t)json_integer_value(json_object_get(o, key));
}

static const char *jstr(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));
	return s ? s : "";
}

/* A string field as it may be shown on a terminal (see dsv_cli_shown). */
static const char *jshown(const json_t *o, const char *key)
{
	return dsv_cli_shown(jstr(o, key));
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

static void print_chunks(const json_t *src)
{
	char b[32];
	uint64_t n = jint(src, "nchunks"), bytes = jint(src, "chunk_bytes");
	uint64_t nrows = (uint64_t)json_integer_value(json_array_get(json_object_get(src, "shape"), 0));
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
			bytes = jint(src, "data_bytes");
		}
		printf("%llu row%s", (unsigned long long)r, r == 1 ? "" : "s");
	} else {
		printf("%llu elements (rows split)", (unsigned long long)jint(src, "chunk_elems"));
	}
	printf(" (%s%s)\n", dsv_fmt_bytes(b, sizeof(b), bytes), n > 1 ? " each" : "");
}

static void print_flat(const json_t *root)
{
	const json_t *src = json_object_get(root, "source");
	char shape[DSV_MAX_DIMS * 24], a[32], b[32];

	printf("%s: %s\n", jshown(root, "path"), jshown(root, "kind"));
	printf(LABEL " %s %s\n", "shape", fmt_shape(shape, sizeof(shape), json_object_get(src, "shape")),
	       jshown(src, "dtype"));
	printf(LABEL " %s in a %s file\n", "data", dsv_fmt_bytes(a, sizeof(a), jint(src, "data_bytes")),
	       dsv_fmt_bytes(b, sizeof(b), jint(root, "file_bytes")));
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
		if (jint(f, "id") == 1 && json_array_size(cd) > 0)
			printf(" (level %lld)", (long long)json_integer_value(json_array_get(cd, 0)));
	}
	printf("\n");
}

static void print_store(const json_t *store)
{
	const json_t *v;
	char b[4096], c[32];

	if (json_object_get(store, "error")) {
		printf(LABEL " dsview attribute present, but %s\n", "store", jshown(store, "error"));
		return;
	}
	printf(LABEL " %s", "store", json_is_string(json_object_get(store, "codec"))
					     ? jshown(store, "codec") : "codec unknown");
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

static void print_dataset(const json_t *d)
{
	const json_t *src = json_object_get(d, "source"), *store = json_object_get(d, "store");
	const char *serve = jstr(d, "serve"), *why = jstr(d, "why"); /* shown when printed */
	char shape[DSV_MAX_DIMS * 24], a[32], b[32];

	printf("%s%s\n", jshown(d, "name"), json_is_object(store) ? "  (dsview store)" : "");
	if (!json_object_get(d, "layout")) {
		/* Listed, but even its header could not be read. */
		printf(LABEL " refused: %s\n", "dsview", dsv_cli_shown(why));
		return;
	}
	printf(LABEL " %s %s\n", "shape", fmt_shape(shape, sizeof(shape), json_object_get(d, "shape")),
	       jshown(d, "type"));
	printf(LABEL " %s", "layout", jshown(d, "layout"));
	if (json_is_array(json_object_get(d, "chunk_shape"))) {
		printf(", chunks of %s", fmt_shape(shape, sizeof(shape), json_object_get(d, "chunk_shape")));
		if (json_is_integer(json_object_get(d, "chunks_written")))
			printf(", %llu written", (unsigned long long)jint(d, "chunks_written"));
	}
	if (jint(d, "external_files"))
		printf(", external storage in %llu file(s)", (unsigned long long)jint(d, "external_files"));
	printf("\n");
	print_filters(json_object_get(d, "filters"));
	printf(LABEL " %s for %s raw", "stored", dsv_fmt_bytes(a, sizeof(a), jint(d, "stored_bytes")),
	       dsv_fmt_bytes(b, sizeof(b), jint(d, "raw_bytes")));
	if (json_is_real(json_object_get(d, "ratio")))
		printf(" (ratio %.2f)", json_real_value(json_object_get(d, "ratio")));
	printf("\n");
	if (!strcmp(serve, "fast-path"))
		printf(LABEL " fast path (%s: dsview preads and decodes)%s%s\n", "dsview",
		       jshown(src, "kind"), *why ? "; " : "", dsv_cli_shown(why));
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
	uint64_t n = jint(t, "datasets"), raw = jint(t, "raw_bytes"), stored = jint(t, "stored_bytes");

	printf("%s: HDF5 file, %s, %llu dataset%s (%llu fast path, %llu library fallback, "
	       "%llu refused)\n", jshown(root, "path"), dsv_fmt_bytes(a, sizeof(a), jint(root, "file_bytes")),
	       (unsigned long long)n, n == 1 ? "" : "s", (unsigned long long)jint(t, "fast_path"),
	       (unsigned long long)jint(t, "library_fallback"), (unsigned long long)jint(t, "refused"));
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
	uint64_t soft = jint(links, "soft"), ext = jint(links, "external");
	if (soft + ext)
		printf("links: %llu soft, %llu external, not followed (a mount of the file serves "
		       "only its own datasets; a manifest line naming a soft link serves its "
		       "target)\n", (unsigned long long)soft, (unsigned long long)ext);
}

static void print_list(const char *label, const json_t *arr)
{
	printf("%s [", label);
	for (size_t k = 0; k < json_array_size(arr); k++)
		printf("%s%.9g", k ? ", " : "", json_number_value(json_array_get(arr, k)));
	printf("]");
}

static void print_view(const json_t *v)
{
	const json_t *xf = json_object_get(v, "transform"), *srcs = json_object_get(v, "sources");
	char shape[DSV_MAX_DIMS * 24], a[32], b[32];

	printf("[%s]\n", jshown(v, "name"));
	printf(LABEL " %s %s, %s virtual (.dat), %s on disk", "output",
	       fmt_shape(shape, sizeof(shape), json_object_get(v, "shape")), jshown(v, "dtype"),
	       dsv_fmt_bytes(a, sizeof(a), jint(v, "nbytes")),
	       dsv_fmt_bytes(b, sizeof(b), jint(v, "stored_bytes")));
	if (json_is_real(json_object_get(v, "ratio")))
		printf(" (ratio %.2f)", json_real_value(json_object_get(v, "ratio")));
	printf("\n");
	printf(LABEL " scale %.9g, offset %.9g", "transform",
	       json_real_value(json_object_get(xf, "scale")),
	       json_real_value(json_object_get(xf, "offset")));
	if (json_is_array(json_object_get(xf, "mean"))) {
		printf(", ");
		print_list("mean", json_object_get(xf, "mean"));
		printf(", ");
		print_list("std", json_object_get(xf, "std"));
		printf(", channel_axis %lld", (long long)json_integer_value(json_object_get(xf, "channel_axis")));
	}
	if (json_is_array(json_object_get(xf, "clip"))) {
		printf(", ");
		print_list("clip", json_object_get(xf, "clip"));
	}
	printf("\n");
	for (size_t k = 0; k < json_array_size(srcs); k++) {
		const json_t *s = json_array_get(srcs, k), *rows = json_object_get(s, "rows");
		long long r0 = (long long)json_integer_value(json_array_get(rows, 0));
		long long r1 = (long long)json_integer_value(json_array_get(rows, 1));
		const char *ds = json_string_value(json_object_get(s, "dataset"));
		printf(LABEL " %s%s%s  %s %s %s, ", "source", jshown(s, "path"), ds ? ":" : "",
		       ds ? dsv_cli_shown(ds) : "", jshown(s, "kind"),
		       fmt_shape(shape, sizeof(shape), json_object_get(s, "shape")), jshown(s, "dtype"));
		if (r1 > r0)
			printf("rows %lld-%lld of the view", r0, r1 - 1);
		else
			printf("no rows");
		if (*jstr(s, "why"))
			printf(" (%s)", jshown(s, "why"));
		printf("\n");
	}
}

static void print_manifest(const json_t *root)
{
	const json_t *views = json_object_get(root, "views"), *t = json_object_get(root, "totals");
	char a[32], b[32];
	uint64_t n = jint(t, "views"), virt = jint(t, "virtual_bytes"), disk = jint(t, "stored_bytes");

	printf("%s: manifest, %llu view%s\n", jshown(root, "path"), (unsigned long long)n,
	       n == 1 ? "" : "s");
	for (size_t i = 0; i < json_array_size(views); i++)
		print_view(json_array_get(views, i));
	printf("total: %s virtual, %s on disk", dsv_fmt_bytes(a, sizeof(a), virt),
	       dsv_fmt_bytes(b, sizeof(b), disk));
	if (disk)
		printf(" (ratio %.2f)", (double)virt / (double)disk);
	printf(", each source counted once\n");
}

int dsv_cmd_info(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "dtype", required_argument, NULL, 'D' },
		{ "shape", required_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *dtype_arg = NULL, *shape_arg = NULL, *kind = "";
	dsv_dtype dtype = DSV_DTYPE_INVALID;
	int64_t shape[DSV_MAX_DIMS];
	int c, json_out = 0, ndim = 0, err;
	dsv_target t;
	dsv_errbuf eb;
	json_t *root;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'j': json_out = 1; break;
		case 'D': dtype_arg = optarg; break;
		case 'S': shape_arg = optarg; break;
		case 'h': fputs(info_usage, stdout); return EXIT_OK;
		default: fputs(info_usage, stderr); return EXIT_USER;
		}
	}
	if (argc - optind != 1) {
		fputs(info_usage, stderr);
		return EXIT_USER;
	}
	const char *spec = argv[optind];
	if (!!dtype_arg != !!shape_arg) {
		dsv_cli_error("%s: a raw file needs both --dtype and --shape", spec);
		return EXIT_USER;
	}
	if (dtype_arg) {
		dtype = dsv_dtype_parse(dtype_arg);
		if (dtype == DSV_DTYPE_INVALID || dtype == DSV_BF16) {
			dsv_cli_error("--dtype '%s': unsupported (uint8, int8, uint16, int16, uint32, "
				      "int32, float16, float32, float64)", dtype_arg);
			return EXIT_USER;
		}
		if (dsv_target_parse_shape(shape_arg, &ndim, shape)) {
			dsv_cli_error("--shape '%s': want positive integers like 1000,64,64,3 "
				      "(the first may be -1)", shape_arg);
			return EXIT_USER;
		}
	}
	if ((err = dsv_target_parse(spec, dtype_arg != NULL, &t, &eb))) {
		dsv_cli_error("%s", eb.msg);
		return err == DSV_ERR_NOMEM ? EXIT_INTERNAL : EXIT_USER;
	}

	root = json_object();
	json_object_set_new(root, "path", jtext(t.file));
	switch (t.kind) {
	case DSV_TARGET_NPY: kind = "npy"; break;
	case DSV_TARGET_RAW: kind = "raw"; break;
	case DSV_TARGET_H5: kind = "hdf5"; break;
	case DSV_TARGET_MANIFEST: kind = "manifest"; break;
	}
	json_object_set_new(root, "kind", json_string(kind));
	if (t.kind != DSV_TARGET_MANIFEST)
		json_object_set_new(root, "file_bytes", json_integer((json_int_t)t.file_bytes));
	switch (t.kind) {
	case DSV_TARGET_NPY:
	case DSV_TARGET_RAW: err = build_flat(&t, dtype, ndim, shape, root, &eb); break;
	case DSV_TARGET_H5: err = build_h5(&t, root, &eb); break;
	case DSV_TARGET_MANIFEST: err = build_manifest(&t, root, &eb); break;
	}
	if (err) {
		dsv_cli_error("%s", eb.msg);
		json_decref(root);
		dsv_target_free(&t);
		return err == DSV_ERR_NOMEM || err == DSV_ERR_INTERNAL ? EXIT_INTERNAL : EXIT_USER;
	}

	if (json_out) {
		char *s = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
		if (!s) {
			dsv_cli_error("out of memory");
			err = DSV_ERR_NOMEM;
		} else {
			puts(s);
			free(s);
		}
	} else if (t.kind == DSV_TARGET_H5) {
		print_h5(root);
	} else if (t.kind == DSV_TARGET_MANIFEST) {
		print_manifest(root);
	} else {
		print_flat(root);
	}
	json_decref(root);
	dsv_target_free(&t);
	if (fflush(stdout) != 0 && !err) {
		dsv_cli_error("writing the output failed");
		return EXIT_USER;
	}
	return err ? EXIT_INTERNAL : EXIT_OK;
}
