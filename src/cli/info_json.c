/*
 * dsview info, the model: one JSON document describing the target (the
 * schema is in info.c's usage), which --json prints as it is and
 * info_text.c renders as text.
 *
 * A dataset dsview refuses to serve is described, with the reason, not an
 * error; only a target that cannot be read at all fails the build.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/info_i.h"
#include "cli/target.h"
#include "dsview/h5info.h"
#include "dsview/source.h"
#include "dsview/view.h"
#include "formats/formats.h"
#include "formats/h5/h5_format.h"
#include "formats/h5/h5_vds.h"
#include "source/source.h"

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

static json_t *jsource(const dsv_source *s)
{
	const dsv_source_info *si = dsv_source_get_info(s);
	json_t *o = json_object();
	uint64_t esize = dsv_dtype_size(si->dtype);

	json_object_set_new(o, "path", jtext(si->path));
	json_object_set_new(o, "dataset", jstr_or_null(si->dataset));
	json_object_set_new(o, "kind", json_string(dsv_source_kind_name(si->kind)));
	json_object_set_new(o, "why", jstr_or_null(si->why));
	json_object_set_new(o, "dtype", json_string(dsv_dtype_name(si->dtype)));
	json_object_set_new(o, "shape", jshape(si->ndim, si->shape));
	json_object_set_new(o, "dimension_names",
			    si->dim_names ? json_loads(si->dim_names, JSON_DECODE_ANY, NULL)
					  : json_null());
	json_object_set_new(o, "scale", si->has_scale ? json_real(si->scale) : json_null());
	json_object_set_new(o, "offset", si->has_scale ? json_real(si->offset) : json_null());
	json_object_set_new(o, "data_bytes", json_integer((json_int_t)(si->nelems * esize)));
	json_object_set_new(o, "stored_bytes",
			    json_integer((json_int_t)dsv_source_stored_bytes(s)));
	json_object_set_new(o, "flat", json_boolean(dsv_source_kind_flat(si->kind)));
	json_object_set_new(o, "nchunks", json_integer((json_int_t)si->nchunks));
	json_object_set_new(o, "chunk_elems", json_integer((json_int_t)si->chunk_elems));
	json_object_set_new(o, "chunk_rows",
			    si->row_elems && si->chunk_elems % si->row_elems == 0
				    ? json_integer((json_int_t)(si->chunk_elems / si->row_elems))
				    : json_null());
	json_object_set_new(o, "chunk_bytes", json_integer((json_int_t)(si->chunk_elems * esize)));
	json_object_set_new(o, "lz4_block_bytes",
			    si->lz4_block ? json_integer((json_int_t)si->lz4_block) : json_null());
	json_object_set_new(o, "lz4_block_table", json_boolean(si->lz4_table));
	dsv_raw_layout l;
	int raw = !dsv_source_raw_layout_of(s, &l);
	json_object_set_new(o, "source_offset",
			    raw ? json_integer((json_int_t)l.offset) : json_null());
	json_object_set_new(o, "source_dtype",
			    raw ? json_string(l.int24 ? "int24" : dsv_dtype_name(l.dtype))
				: json_null());
	return o;
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

/* How a virtual dataset is served: as its parts (its sources and fill
 * rows, "parts": [SOURCE with "rows"]), counted as a fast path unless a
 * part needs the library; or refused, with the reason. */
static void jvirtual(const char *file, const char *name, json_t *o, uint64_t counts[3])
{
	dsv_source **parts;
	dsv_errbuf eb;
	size_t n;
	int fb = 0;

	if (dsv_h5_open_parts(file, name, &parts, &n, &eb)) {
		json_object_set_new(o, "serve", json_string("refused"));
		json_object_set_new(o, "why", jtext(dsv_cli_reason(&eb, file, name)));
		json_object_set_new(o, "source", json_null());
		counts[2]++;
		return;
	}
	json_t *arr = json_array();
	uint64_t row = 0;
	for (size_t i = 0; i < n; i++) {
		const dsv_source_info *si = dsv_source_get_info(parts[i]);
		json_t *p = jsource(parts[i]);
		json_object_set_new(
			p, "rows",
			json_pack("[I,I]", (json_int_t)row, (json_int_t)(row + si->nrows)));
		json_array_append_new(arr, p);
		row += si->nrows;
		fb |= si->kind == DSV_SRC_H5_FALLBACK;
	}
	dsv_h5_close_parts(parts, n);
	json_object_set_new(o, "serve", json_string("virtual"));
	json_object_set_new(
		o, "why",
		json_sprintf("%zu part%s, concatenated along axis 0", n, n == 1 ? "" : "s"));
	json_object_set_new(o, "source", json_null());
	json_object_set_new(o, "parts", arr);
	counts[fb]++;
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
	json_object_set_new(o, "chunk_shape",
			    d.layout == DSV_H5_LAYOUT_CHUNKED ? jshape(d.ndim, d.chunk)
							      : json_null());
	json_object_set_new(o, "chunks_written",
			    d.chunks_written >= 0 ? json_integer(d.chunks_written) : json_null());
	f = json_array();
	for (int i = 0; i < d.nfilters; i++) {
		json_t *cd = json_array();
		for (size_t k = 0; k < d.filters[i].ncd; k++)
			json_array_append_new(cd, json_integer(d.filters[i].cd[k]));
		json_array_append_new(f, json_pack("{s:i,s:o,s:o}", "id", d.filters[i].id, "name",
						   jtext(d.filters[i].name), "cd", cd));
	}
	json_object_set_new(o, "filters", f);
	json_object_set_new(o, "external_files", json_integer(d.external_files));
	json_object_set_new(o, "raw_bytes", json_integer((json_int_t)d.raw_bytes));
	json_object_set_new(o, "stored_bytes", json_integer((json_int_t)d.stored_bytes));
	json_object_set_new(o, "ratio", jratio(d.raw_bytes, d.stored_bytes));
	*raw += d.raw_bytes;
	*stored += d.stored_bytes;

	if (d.layout == DSV_H5_LAYOUT_VIRTUAL)
		jvirtual(file, name, o, counts);
	else if (dsv_source_open_h5(file, name, &s, &oeb) == 0) {
		const dsv_source_info *si = dsv_source_get_info(s);
		int fb = si->kind == DSV_SRC_H5_FALLBACK;
		json_object_set_new(o, "serve", json_string(fb ? "library-fallback" : "fast-path"));
		json_object_set_new(o, "why", jstr_or_null(si->why));
		json_object_set_new(o, "source", jsource(s));
		counts[fb]++;
		dsv_source_close(s);
	} else {
		json_object_set_new(o, "serve", json_string("refused"));
		json_object_set_new(o, "why", jtext(dsv_cli_reason(&oeb, file, name)));
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
		/* a cut or damaged file fails with the library's own reason */
		dsv_h5_unlisted *bad = NULL;
		size_t nbad = 0;
		err = dsv_h5_list_all(t->file, &names, &n, links, &bad, &nbad, eb);
		/* A damaged object the listing passed over is refused, with the
		 * library's reason, as a zero-config mount lists it as skipped. */
		for (size_t i = 0; !err && i < nbad; i++) {
			json_array_append_new(arr, json_pack("{s:o,s:s,s:o,s:n,s:n}", "name",
							     jtext(bad[i].path), "serve", "refused",
							     "why", jtext(bad[i].reason), "source",
							     "store"));
			counts[2]++;
		}
		dsv_h5_unlisted_free(bad, nbad);
		for (size_t i = 0; !err && i < n; i++) {
			/* A dataset listed but not describable (a damaged header)
			 * is shown with the reason; the others still are. */
			dsv_errbuf deb;
			json_t *o;
			if (jdataset(t->file, names[i], counts, &raw, &stored, &o, &deb)) {
				o = json_pack("{s:o,s:s,s:o,s:n,s:n}", "name", jtext(names[i]),
					      "serve", "refused", "why",
					      jtext(dsv_cli_reason(&deb, t->file, names[i])),
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
				      (json_int_t)counts[0], "library_fallback",
				      (json_int_t)counts[1], "refused", (json_int_t)counts[2],
				      "raw_bytes", (json_int_t)raw, "stored_bytes",
				      (json_int_t)stored, "links_not_followed", "soft",
				      (json_int_t)links[0], "external", (json_int_t)links[1]));
	return 0;
}

/* A Zarr group's arrays it could not serve: {"name", "reason"} each. */
static json_t *jskipped(const dsv_manifest *m)
{
	json_t *a = json_array();
	for (size_t i = 0; i < m->nskipped; i++)
		json_array_append_new(a, json_pack("{s:o,s:o}", "name", jtext(m->skipped[i].path),
						   "reason", jtext(m->skipped[i].reason)));
	return a;
}

/* A manifest's views, or a Zarr group's arrays as a zero-config mount
 * serves them (float32, one view each). */
static int build_manifest(const dsv_target *t, json_t *root, dsv_errbuf *eb)
{
	dsv_manifest *m;
	uint64_t virt = 0, disk = 0;
	json_t *views = json_array();
	int err;

	json_object_set_new(root, "views", views);
	err = t->kind == DSV_TARGET_GROUP ? dsv_manifest_from_file(t->file, DSV_F32, 0, &m, eb)
					  : dsv_manifest_load(t->file, &m, eb);
	if (err)
		return err;
	if (t->kind == DSV_TARGET_GROUP)
		json_object_set_new(root, "skipped", jskipped(m));
	for (size_t i = 0; i < m->nviews; i++) {
		dsv_view_info vi, pvi;
		const dsv_view_info *v = &vi;
		dsv_view_get_info(m->views[i], &vi);
		json_t *o = json_object(), *srcs = json_array();
		/* what the view is beyond its sources: V.json's own words */
		json_t *vj = json_loads(v->json, 0, NULL), *vsrcs = json_object_get(vj, "sources");
		uint64_t vstored = 0;

		if (!vj) {
			json_decref(o);
			json_decref(srcs);
			dsv_manifest_free(m);
			return dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
		}
		for (size_t k = 0; k < v->nsources; k++) {
			const dsv_source_info *si = dsv_source_get_info(v->sources[k]);
			json_t *vs = json_array_get(vsrcs, k);
			json_t *so = jsource(v->sources[k]);
			json_object_set(so, "rows", json_object_get(vs, "rows"));
			if (json_object_get(vs, "windows"))
				json_object_set(so, "windows", json_object_get(vs, "windows"));
			json_array_append_new(srcs, so);
			vstored += dsv_source_stored_bytes(v->sources[k]);
			/* The totals count each file's bytes once. */
			int seen = 0;
			for (size_t pi = 0; pi <= i && !seen; pi++) {
				const dsv_view_info *pv = &pvi;
				dsv_view_get_info(m->views[pi], &pvi);
				size_t lim = pi == i ? k : pv->nsources;
				for (size_t pk = 0; pk < lim && !seen; pk++)
					seen = dsv_source_same_file(
						dsv_source_get_info(pv->sources[pk]), si);
			}
			if (!seen)
				disk += dsv_source_stored_bytes(v->sources[k]);
		}
		static const char *const keys[] = { "rows", "window", "layout" };
		for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
			json_object_set(o, keys[k], json_object_get(vj, keys[k]));
		json_object_set(o, "transform", json_object_get(vj, "transform"));
		json_decref(vj);
		json_object_set_new(o, "name", json_string(v->name));
		json_object_set_new(o, "shape", jshape(v->ndim, v->shape));
		json_object_set_new(o, "dtype", json_string(dsv_dtype_name(v->dtype)));
		json_object_set_new(o, "nbytes", json_integer((json_int_t)v->nbytes));
		json_object_set_new(o, "stored_bytes", json_integer((json_int_t)vstored));
		json_object_set_new(o, "ratio", jratio(v->nbytes, vstored));
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

static int build_flat(const dsv_target *t, const dsv_raw_layout *raw, json_t *root, dsv_errbuf *eb)
{
	dsv_source *s;
	int err = t->format->traits & DSV_FMT_RAW ? dsv_source_open_raw_layout(t->file, raw, &s, eb)
						  : t->format->open(t->file, t->dataset, &s, eb);
	if (err)
		return err;
	json_object_set_new(root, "source", jsource(s));
	dsv_source_close(s);
	return 0;
}

int dsv_info_build(const dsv_target *t, const dsv_raw_layout *raw, json_t *root, dsv_errbuf *eb)
{
	char kind[64] = "manifest";
	int err = 0;

	json_object_set_new(root, "path", json_string(dsv_cli_path_escaped(t->file, 0)));
	if (t->format) /* "npy", ..., "zarr-group" */
		snprintf(kind, sizeof(kind), "%s%s", t->format->name,
			 t->kind == DSV_TARGET_GROUP ? "-group" : "");
	json_object_set_new(root, "kind", json_string(kind));
	if (t->kind != DSV_TARGET_MANIFEST)
		json_object_set_new(root, "file_bytes", json_integer((json_int_t)t->file_bytes));
	switch (t->kind) {
	case DSV_TARGET_ARRAY: err = build_flat(t, raw, root, eb); break;
	case DSV_TARGET_DATASETS: err = build_h5(t, root, eb); break;
	case DSV_TARGET_MANIFEST:
	case DSV_TARGET_GROUP: err = build_manifest(t, root, eb); break;
	}
	return err;
}
