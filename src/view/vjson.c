/*
 * A view's V.json: its shape, dtype, rows, window, layout, transform, and
 * an entry for each source. A view of a few sources is written indented
 * from one jansson tree; a view of more is written compact, its sources'
 * entries one after another into the text (one small tree at a time), so
 * that a view of 10^5 sources holds no tree of 10^5 objects at mount.
 * Both give the text jansson gives for the whole tree. It is made at its
 * first use, not at mount.
 */
#include <jansson.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/str.h"
#include "view/view_i.h"

/* A view of more sources than this has its V.json written compact (no
 * newlines or indentation): at 10^4 sources the indentation was half of
 * the text, and the text is held in memory for the mount's life. */
#define JSON_INDENT_MAX_SOURCES 64
#define JSON_FLAGS (JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17))

static json_t *shape_json(int ndim, const uint64_t *shape)
{
	json_t *a = json_array();
	for (int k = 0; k < ndim; k++)
		json_array_append_new(a, json_integer((json_int_t)shape[k]));
	return a;
}

static json_t *doubles_json(const double *d, int n)
{
	json_t *a = json_array();
	for (int k = 0; k < n; k++)
		json_array_append_new(a, json_real(d[k]));
	return a;
}

json_t *dsv_json_text(const char *s)
{
	json_t *j = json_string(s);
	if (!j) { /* not UTF-8: a name from a file may be any bytes */
		size_t n = strlen(s) < 1024 ? strlen(s) : 1024;
		char *buf = malloc(4 * n + 4);
		j = buf ? json_string(dsv_shown(s, strlen(s), n, buf)) : NULL;
		free(buf);
	}
	return j;
}

/* A clip bound: an integer for an integer output (the largest int64 is
 * no double: written as a bound it arrives as 2^63, and means it). */
static json_t *bound_json(const dsv_view *v, double b)
{
	if (!dsv_dtype_is_int(v->dtype) || b >= 18446744073709551616.0)
		return json_real(b);
	if (b >= 9223372036854775808.0)
		return v->dtype == DSV_I64 ? json_integer(INT64_MAX) : json_real(b);
	return json_integer((json_int_t)b);
}

/* mean or std as declared: values, or the file and its shape */
static json_t *norm_json(const dsv_view *v, const double *vals, const char *file)
{
	if (file)
		return json_pack("{s:o,s:o}", "file", dsv_json_text(file), "shape",
				 shape_json(v->decl->norm_ndim, v->decl->norm_shape));
	return v->decl->nchan ? doubles_json(vals, v->decl->nchan) : json_null();
}

static json_t *rows_json(const dsv_view *v)
{
	if (v->rows_kind == DSV_ROWS_INDEX)
		return json_pack("{s:o,s:I}", "index", dsv_json_text(v->decl->rows_file), "count",
				 (json_int_t)v->shape[0]);
	if (v->rows_kind != DSV_ROWS_SLICE)
		return json_null();
	json_t *o = json_object();
	const struct dsv_view_decl *d = v->decl;
	json_object_set_new(o, "start",
			    d->rows_start == INT64_MIN ? json_null() : json_integer(d->rows_start));
	json_object_set_new(o, "stop",
			    d->rows_stop == INT64_MIN ? json_null() : json_integer(d->rows_stop));
	json_object_set_new(o, "step", json_integer(d->rows_step));
	json_object_set_new(o, "count", json_integer((json_int_t)v->shape[0]));
	return o;
}

/* Source i's axis names, parsed (NULL: none). */
static json_t *dim_names_of(const dsv_view *v, size_t i)
{
	const char *t = dsv_source_get_info(v->sources[i])->dim_names;
	return t ? json_loads(t, JSON_DECODE_ANY, NULL) : NULL;
}

/* The view's axis names, when its sources all name theirs alike: a window
 * along axis 0 adds an axis without a name in front ((n, W, ...)), and
 * CHW moves the row's last axis to the front of the row. NULL otherwise. */
static json_t *view_dim_names(const dsv_view *v)
{
	json_t *d = dim_names_of(v, 0);
	for (size_t i = 1; d && i < v->nsources; i++) {
		json_t *other = dim_names_of(v, i);
		int same = other && json_equal(d, other);
		json_decref(other);
		if (!same) {
			json_decref(d);
			return NULL;
		}
	}
	if (d && v->has_window && v->win_axis == 0)
		json_array_insert_new(d, 0, json_null());
	size_t n = json_array_size(d);
	if (d && v->layout_chw && n >= 3) {
		json_t *c = json_incref(json_array_get(d, n - 1));
		json_array_remove(d, n - 1);
		json_array_insert_new(d, 1, c);
	}
	if (d && json_array_size(d) != (size_t)v->ndim) {
		json_decref(d);
		d = NULL;
	}
	return d;
}

/* Source i's entry in "sources". */
static json_t *source_json(const dsv_view *v, size_t i)
{
	const dsv_source_info *si = dsv_source_get_info(v->sources[i]);
	json_t *o = json_object();
	json_object_set_new(o, "path", json_string(si->path));
	if (si->dataset)
		json_object_set_new(o, "dataset", json_string(si->dataset));
	if (si->attrs) /* our own JSON text, so it parses */
		json_object_set_new(o, "attrs", json_loads(si->attrs, 0, NULL));
	if (si->dim_names)
		json_object_set_new(o, "dimension_names",
				    json_loads(si->dim_names, JSON_DECODE_ANY, NULL));
	json_object_set_new(o, "kind", json_string(dsv_source_kind_name(si->kind)));
	json_object_set_new(o, "dtype", json_string(dsv_dtype_name(si->dtype)));
	json_object_set_new(o, "shape", shape_json(si->ndim, si->shape));
	if (si->has_scale) /* applied before the view's transform (norm.c) */
		json_object_set_new(
			o, "scaling",
			json_pack("{s:f,s:f}", "scale", si->scale, "offset", si->offset));
	/* its rows among the concatenated (windowed) rows, before `rows` */
	json_object_set_new(
		o, "rows",
		json_pack("[I,I]", (json_int_t)v->lrow_base[i], (json_int_t)v->lrow_base[i + 1]));
	if (v->has_window)
		json_object_set_new(o, "windows", json_integer((json_int_t)v->nwin[i]));
	json_object_set_new(o, "chunk_elems", json_integer((json_int_t)si->chunk_elems));
	return o;
}

/* Source i's entry in "chunk_rows": rows a chunk, whole or not. */
static json_t *chunk_rows_json(const dsv_view *v, size_t i)
{
	const dsv_source_info *si = dsv_source_get_info(v->sources[i]);
	return si->row_elems && si->chunk_elems % si->row_elems == 0
		       ? json_integer((json_int_t)(si->chunk_elems / si->row_elems))
		       : json_real((double)si->chunk_elems / (double)si->row_elems);
}

static json_t *transform_json(const dsv_view *v)
{
	const struct dsv_view_decl *d = v->decl;
	json_t *xf = json_object();
	json_object_set_new(xf, "scale", json_real(d->scale));
	json_object_set_new(xf, "offset", json_real(d->offset));
	json_object_set_new(xf, "mean", norm_json(v, d->mean, d->mean_file));
	json_object_set_new(xf, "std", norm_json(v, d->std, d->std_file));
	json_object_set_new(xf, "channel_axis",
			    d->by_channel ? json_integer(d->channel_axis) : json_null());
	json_object_set_new(xf, "clip",
			    d->has_clip ? json_pack("[o,o]", bound_json(v, d->clip_lo),
						    bound_json(v, d->clip_hi))
					: json_null());
	json_object_set_new(xf, "per_source", json_boolean(d->per_source));
	return xf;
}

/* The view's members before "sources"; attrs (or NULL) its one source's. */
static json_t *head_json(const dsv_view *v, json_t *attrs)
{
	json_t *root = json_object();
	json_object_set_new(root, "shape", shape_json(v->ndim, v->shape));
	json_object_set_new(root, "dtype", json_string(dsv_dtype_name(v->dtype)));
	json_object_set_new(root, "order", json_string("C"));
	json_object_set_new(root, "nbytes", json_integer((json_int_t)v->nbytes));
	json_object_set_new(root, "row_bytes", json_integer((json_int_t)v->row_bytes));
	json_object_set_new(root, "npy_header_bytes", json_integer((json_int_t)v->npy_header_len));
	if (v->decl->hdf5_path)
		json_object_set_new(root, "hdf5_path", dsv_json_text(v->decl->hdf5_path));
	/* a view of one dataset carries its attributes (units, rates, ids) */
	if (attrs)
		json_object_set(root, "attrs", attrs); /* the source entry's, shared */
	json_t *names = view_dim_names(v);
	if (names)
		json_object_set_new(root, "dimension_names", names);
	json_object_set_new(root, "rows", rows_json(v));
	json_object_set_new(root, "window",
			    v->has_window ? json_pack("{s:I,s:I,s:i}", "size", (json_int_t)v->win,
						      "stride", (json_int_t)v->stride, "axis",
						      v->win_axis)
					  : json_null());
	json_object_set_new(root, "layout", v->layout_chw ? json_string("CHW") : json_null());
	return root;
}

/* V.json's text, held by v: s and a newline. */
static int keep_text(dsv_view *v, const char *s, size_t n)
{
	if (!(v->json = malloc(n + 2)))
		return DSV_ERR_NOMEM;
	memcpy(v->json, s, n);
	v->json[n] = '\n';
	v->json[n + 1] = '\0';
	v->json_len = n + 1;
	return 0;
}

/* A view of a few sources: one tree, written indented. */
static int json_of_tree(dsv_view *v)
{
	json_t *srcs = json_array(), *crows = json_array();
	for (size_t i = 0; i < v->nsources; i++) {
		json_array_append_new(srcs, source_json(v, i));
		json_array_append_new(crows, chunk_rows_json(v, i));
	}
	json_t *attrs = v->nsources == 1 ? json_object_get(json_array_get(srcs, 0), "attrs") : NULL;
	json_t *root = head_json(v, attrs);
	json_object_set_new(root, "sources", srcs);
	json_object_set_new(root, "transform", transform_json(v));
	json_object_set_new(root, "chunk_rows", crows);
	size_t layout = v->nsources > JSON_INDENT_MAX_SOURCES ? JSON_COMPACT : JSON_INDENT(2);
	char *s = json_dumps(root, layout | JSON_FLAGS);
	json_decref(root);
	int err = s ? keep_text(v, s, strlen(s)) : DSV_ERR_NOMEM;
	free(s);
	return err;
}

/* Text being written: its bytes, and bad once a put could not grow it. */
typedef struct text {
	char *p;
	size_t len, cap;
	int bad;
} text;

static int put(const char *s, size_t n, void *arg)
{
	text *t = arg;
	if (t->len + n + 2 > t->cap) {
		size_t cap = t->cap ? t->cap : 4096;
		while (t->len + n + 2 > cap)
			cap *= 2;
		char *p = realloc(t->p, cap);
		if (!p) {
			t->bad = 1;
			return -1;
		}
		t->p = p;
		t->cap = cap;
	}
	memcpy(t->p + t->len, s, n);
	t->len += n;
	return 0;
}

/* Writes j (taken) compact into t. */
static void put_json(text *t, json_t *j)
{
	if (!j || json_dump_callback(j, put, t, JSON_COMPACT | JSON_ENCODE_ANY | JSON_FLAGS))
		t->bad = 1;
	json_decref(j);
}

/* A view of many sources, compact: its members before "sources" from one
 * small tree, less its closing brace, then each source's entry and
 * chunk_rows' written one at a time, as the whole tree's dump would. */
static int json_streamed(dsv_view *v)
{
	text t = { 0 };
	json_t *head = head_json(v, NULL);
	put_json(&t, head);
	if (!t.bad && t.len >= 2 && t.p[t.len - 1] == '}')
		t.len--;
	else
		t.bad = 1;
	put(",\"sources\":[", 12, &t);
	for (size_t i = 0; i < v->nsources && !t.bad; i++) {
		if (i)
			put(",", 1, &t);
		put_json(&t, source_json(v, i));
	}
	put("],\"transform\":", 14, &t);
	put_json(&t, transform_json(v));
	put(",\"chunk_rows\":[", 15, &t);
	for (size_t i = 0; i < v->nsources && !t.bad; i++) {
		if (i)
			put(",", 1, &t);
		put_json(&t, chunk_rows_json(v, i));
	}
	put("]}\n", 3, &t);
	if (t.bad) {
		free(t.p);
		return DSV_ERR_NOMEM;
	}
	t.p[t.len] = '\0';
	char *fit = realloc(t.p, t.len + 1);
	v->json = fit ? fit : t.p;
	v->json_len = t.len;
	return 0;
}

/* Held while a view's V.json is made or looked for. */
static pthread_mutex_t json_lock = PTHREAD_MUTEX_INITIALIZER;

const char *dsv_view_json(const dsv_view *cv, size_t *len)
{
	dsv_view *v = (dsv_view *)cv; /* its text is made once, then only read */
	pthread_mutex_lock(&json_lock);
	if (!v->json)
		(void)(v->nsources > JSON_INDENT_MAX_SOURCES ? json_streamed(v) : json_of_tree(v));
	const char *made = v->json;
	if (len)
		*len = made ? v->json_len : 0;
	pthread_mutex_unlock(&json_lock);
	return made;
}
