/*
 * The arrays a manifest names with '@' (rows = @idx.npy, mean = @m.npy,
 * std = @s.npy) and the transform plans of a view: one per source dtype,
 * or one per source with per_source = true.
 *
 * mean/std come in three forms. One value applies to every element
 * (nchan 1). One value per channel indexes the channel axis of the
 * output (docs/transform.md). An array of the row's shape (before layout)
 * gives each element of a row its own value: a plan with nchan = the
 * row's elements and chan_inner 1, so element e of the view uses value
 * e % row_elems; with layout = CHW the array is permuted into the output
 * order here, once.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/arith.h"
#include "formats/npy/npy.h"
#include "source/source.h"
#include "view/view_i.h"

/* Reads a whole .npy into memory: *data (malloc'd, source dtype). On
 * error eb names key as the setting at fault. */
static int load_npy(const char *path, const char *key, dsv_source_info *info, void **data,
		    dsv_errbuf *eb)
{
	dsv_source *s;
	dsv_range r;
	uint64_t bad, bytes;
	int err = dsv_format_npy.open(path, NULL, &s, eb);
	*data = NULL;
	if (!err) {
		*info = *dsv_source_get_info(s);
		if (dsv_mul_u64(info->nelems, dsv_dtype_size(info->dtype), &bytes) ||
		    bytes > ((uint64_t)1 << 36))
			err = dsv_errf_at(eb, DSV_ERR_OVERFLOW, path, NULL,
					  "too large for a %s array", key);
		else if (!(*data = malloc(bytes ? bytes : 1)) || dsv_range_init(&r, s))
			err = dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
		else {
			if ((err = dsv_range_read(&r, 0, info->nelems, *data, &bad)))
				dsv_errf_at(eb, err, path, NULL, "cannot read: %s",
					    dsv_strerror(err));
			dsv_range_free(&r);
		}
		info->path = info->dataset = NULL; /* the source's own, freed below */
		dsv_source_close(s);
	}
	if (err) {
		free(*data);
		*data = NULL;
		snprintf(eb->key, sizeof(eb->key), "%s", key);
	}
	return err;
}

static int is_int(dsv_dtype t)
{
	return t == DSV_U8 || t == DSV_I8 || t == DSV_U16 || t == DSV_I16 || t == DSV_U32 ||
	       t == DSV_I32 || t == DSV_U64 || t == DSV_I64;
}

/* The value of element i of an integer array as int64; 0 if it does not
 * fit (a uint64 above INT64_MAX), with *ok cleared. */
static int64_t int_at(dsv_dtype t, const void *p, uint64_t i, int *ok)
{
	switch (t) {
	case DSV_U8: return ((const uint8_t *)p)[i];
	case DSV_I8: return ((const int8_t *)p)[i];
	case DSV_U16: return ((const uint16_t *)p)[i];
	case DSV_I16: return ((const int16_t *)p)[i];
	case DSV_U32: return ((const uint32_t *)p)[i];
	case DSV_I32: return ((const int32_t *)p)[i];
	case DSV_I64: return ((const int64_t *)p)[i];
	default:
		if (((const uint64_t *)p)[i] > INT64_MAX) {
			*ok = 0;
			return 0;
		}
		return (int64_t)((const uint64_t *)p)[i];
	}
}

int dsv_view_load_index(dsv_view *v, uint64_t *count, dsv_errbuf *eb)
{
	dsv_source_info info;
	void *data;
	int err = load_npy(v->decl->rows_file, "rows", &info, &data, eb);
	if (err)
		return err;
	if (info.ndim != 1 || !is_int(info.dtype)) {
		free(data);
		return dsv_errf_key(eb, DSV_ERR_INVALID, "rows",
				    "rows: %s must be a 1-D integer array (it is %d-D %s)",
				    v->decl->rows_file, info.ndim, dsv_dtype_name(info.dtype));
	}
	v->rows_index = malloc((info.nelems ? info.nelems : 1) * sizeof(uint64_t));
	for (uint64_t i = 0; v->rows_index && i < info.nelems; i++) {
		int ok = 1;
		int64_t x = int_at(info.dtype, data, i, &ok);
		if (!ok) {
			free(data);
			return dsv_errf_key(eb, DSV_ERR_INVALID, "rows",
					    "rows: %s[%llu] = %llu is out of range",
					    v->decl->rows_file, (unsigned long long)i,
					    (unsigned long long)((const uint64_t *)data)[i]);
		}
		v->rows_index[i] = (uint64_t)x;
	}
	free(data);
	if (!v->rows_index)
		return dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
	*count = info.nelems;
	return 0;
}

/* A mean or std array, into *out as float64. */
static int load_norm(const char *path, const char *key, dsv_source_info *info, double **out,
		     dsv_errbuf *eb)
{
	void *data;
	int err = load_npy(path, key, info, &data, eb);
	if (err)
		return err;
	*out = malloc((info->nelems ? info->nelems : 1) * sizeof(double));
	if (*out)
		dsv_elems_to_f64(info->dtype, data, info->nelems, *out);
	free(data);
	return *out ? 0 : dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
}

enum { NORM_NONE, NORM_SCALAR, NORM_CHANNEL, NORM_ELEMENT };

/* The row's shape before layout (what a per-element array matches). */
static int pre_layout_row(const dsv_view *v, uint64_t *shape)
{
	int n = v->ndim - 1;
	if (n <= 0)
		return 0;
	if (!v->layout_chw) {
		memcpy(shape, v->shape + 1, (size_t)n * sizeof(uint64_t));
	} else {
		memcpy(shape, v->shape + 2, (size_t)(n - 1) * sizeof(uint64_t));
		shape[n - 1] = v->shape[1];
	}
	return n;
}

static int same_shape(int na, const uint64_t *a, int nb, const uint64_t *b)
{
	if (na != nb)
		return 0;
	for (int k = 0; k < na; k++)
		if (a[k] != b[k])
			return 0;
	return 1;
}

/* Loads mean/std files and decides the form; *per is the values per
 * source (the whole array unless per_source). */
static int norm_form(dsv_view *v, int *form, uint64_t *per, dsv_errbuf *eb)
{
	dsv_source_info mi, si;
	uint64_t row[DSV_MAX_DIMS];
	char want[DSV_MAX_DIMS * 24], got[DSV_MAX_DIMS * 24];
	int err, lead, rn = pre_layout_row(v, row);

	if (!v->decl->mean_file) {
		int nchan = v->decl->nchan;
		*form = nchan == 0 ? NORM_NONE : nchan == 1 ? NORM_SCALAR : NORM_CHANNEL;
		*per = (uint64_t)v->decl->nchan;
		if (v->decl->per_source && v->decl->nchan)
			return dsv_errf_key(eb, DSV_ERR_INVALID, "per_source",
					    "per_source needs mean = @file.npy and std = @file.npy "
					    "with one entry per source");
		return 0;
	}
	if ((err = load_norm(v->decl->mean_file, "mean", &mi, &v->decl->mean, eb)) ||
	    (err = load_norm(v->decl->std_file, "std", &si, &v->decl->std, eb)))
		return err;
	if (!same_shape(mi.ndim, mi.shape, si.ndim, si.shape)) {
		dsv_shape_str(want, sizeof(want), mi.ndim, mi.shape);
		dsv_shape_str(got, sizeof(got), si.ndim, si.shape);
		return dsv_errf_key(eb, DSV_ERR_INVALID, "std",
				    "std array has shape %s but the mean array has %s", got, want);
	}
	v->decl->norm_ndim = mi.ndim;
	memcpy(v->decl->norm_shape, mi.shape, sizeof(v->decl->norm_shape));
	lead = v->decl->per_source != 0;
	if (lead && (mi.ndim < 1 || mi.shape[0] != v->nsources))
		return dsv_errf_key(
			eb, DSV_ERR_INVALID, "mean",
			"per_source: the mean array needs a leading axis of %zu (one per "
			"source), not shape %s",
			v->nsources, (dsv_shape_str(got, sizeof(got), mi.ndim, mi.shape), got));
	*per = mi.nelems / (lead ? v->nsources : 1);
	if (mi.ndim - lead == 0)
		*form = NORM_SCALAR;
	else if (same_shape(mi.ndim - lead, mi.shape + lead, rn, row))
		*form = NORM_ELEMENT;
	else if (mi.ndim - lead == 1)
		*form = NORM_CHANNEL;
	else {
		dsv_shape_str(want, sizeof(want), rn, row);
		dsv_shape_str(got, sizeof(got), mi.ndim, mi.shape);
		return dsv_errf_key(eb, DSV_ERR_INVALID, "mean",
				    "mean array has shape %s; expected the row shape %s, one value "
				    "per channel or a scalar%s",
				    got, want, lead ? ", after the leading axis of sources" : "");
	}
	if (*per > INT32_MAX)
		return dsv_errf_key(eb, DSV_ERR_INVALID, "mean", "mean array too large");
	for (uint64_t i = 0; i < mi.nelems; i++)
		if (v->decl->std[i] == 0)
			return dsv_errf_key(eb, DSV_ERR_INVALID, "std",
					    "std array holds 0 (at flat index %llu)",
					    (unsigned long long)i);
	v->decl->nchan = (int)*per;
	return 0;
}

/* Per-element arrays in pre-layout order (pixel-major, channel last)
 * into the CHW output order, every source slice. */
static int permute_chw(const dsv_view *v, double *a, uint64_t slices)
{
	uint64_t c = v->lay_c, hw = v->lay_hw, n = c * hw;
	double *tmp = malloc((n ? n : 1) * sizeof(double));
	if (!tmp)
		return DSV_ERR_NOMEM;
	for (uint64_t s = 0; s < slices; s++) {
		double *p = a + s * n;
		for (uint64_t h = 0; h < hw; h++)
			for (uint64_t k = 0; k < c; k++)
				tmp[k * hw + h] = p[h * c + k];
		memcpy(p, tmp, n * sizeof(double));
	}
	free(tmp);
	return 0;
}

/* The channel axis (output shape) and the elements after it. */
static int channel_axis(dsv_view *v, uint64_t *inner, dsv_errbuf *eb)
{
	int want = v->decl->has_channel_axis ? v->decl->channel_axis : v->layout_chw ? 1 : -1;
	int axis = want < 0 ? want + v->ndim : want;
	if (axis < 0 || axis >= v->ndim)
		return dsv_errf_key(eb, DSV_ERR_INVALID, "channel_axis",
				    "channel_axis %d is out of range for %d dimensions", want,
				    v->ndim);
	if (v->shape[axis] != (uint64_t)v->decl->nchan)
		return dsv_errf_key(eb, DSV_ERR_INVALID, "mean",
				    "mean/std have %d values but channel axis %d has length %llu",
				    v->decl->nchan, want, (unsigned long long)v->shape[axis]);
	v->decl->channel_axis = want;
	*inner = 1;
	for (int k = axis + 1; k < v->ndim; k++)
		*inner *= v->shape[k];
	return 0;
}

/* Sources whose elements one plan converts: the same dtype and the same
 * scaling of their own. */
static int same_plan(const dsv_source_info *a, const dsv_source_info *b)
{
	return a->dtype == b->dtype && a->has_scale == b->has_scale &&
	       (!a->has_scale || (a->scale == b->scale && a->offset == b->offset));
}

/* The plan's scale and offset for source si: the view's, after the
 * source's own (NIfTI's scl_slope, scl_inter), folded into one pair:
 * (x * slope + inter) * scale + offset = x * (slope * scale) +
 * (inter * scale + offset). With the view's 1 and 0 that is exactly the
 * source's pair, evaluated as nibabel's get_fdata() does. */
static void source_scale(const dsv_view *v, const dsv_source_info *si, dsv_xform_params *p)
{
	p->scale = v->decl->scale;
	p->offset = v->decl->offset;
	if (si->has_scale) {
		p->scale = si->scale * v->decl->scale;
		p->offset = si->offset * v->decl->scale + v->decl->offset;
	}
}

/* Plans a source may share with the sources before it: of the last this
 * many made. */
#define PLANS_SEEN 16

int dsv_view_plans(dsv_view *v, dsv_errbuf *eb)
{
	dsv_xform_params p;
	uint64_t per = 0;
	int form, err;

	if ((err = norm_form(v, &form, &per, eb)))
		return err;
	dsv_xform_params_init(&p);
	p.scale = v->decl->scale;
	p.offset = v->decl->offset;
	p.has_clip = v->decl->has_clip;
	p.clip_lo = v->decl->clip_lo;
	p.clip_hi = v->decl->clip_hi;
	p.nchan = form == NORM_NONE ? 0 : (int)per;
	v->decl->by_channel = form == NORM_CHANNEL;
	if (form == NORM_CHANNEL && (err = channel_axis(v, &p.chan_inner, eb)))
		return err;
	if (form == NORM_ELEMENT && v->layout_chw) {
		uint64_t slices = v->decl->per_source ? v->nsources : 1;
		if (permute_chw(v, v->decl->mean, slices) || permute_chw(v, v->decl->std, slices))
			return dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
	}
	v->xf = calloc(v->nsources, sizeof(*v->xf));
	v->decl->xf_own = calloc(v->nsources, 1);
	if (!v->xf || !v->decl->xf_own)
		return dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
	/* the sources that made the last PLANS_SEEN plans, looked through
	 * for one to share: a view of many sources has few plans */
	size_t seen[PLANS_SEEN], nseen = 0;
	for (size_t i = 0; i < v->nsources; i++) {
		const dsv_source_info *si = dsv_source_get_info(v->sources[i]);
		size_t k = 0, lim = nseen < PLANS_SEEN ? nseen : PLANS_SEEN;
		while (!v->decl->per_source && k < lim &&
		       !same_plan(si, dsv_source_get_info(v->sources[seen[k]])))
			k++;
		if (!v->decl->per_source && k < lim) {
			v->xf[i] = v->xf[seen[k]];
			continue;
		}
		seen[nseen++ % PLANS_SEEN] = i;
		if (si->has_scale && dsv_dtype_is_int(v->dtype))
			return dsv_errf_key(
				eb, DSV_ERR_INVALID, "dtype",
				"an integer output (%s) takes no scaling, and %s scales "
				"its values (x * %g + %g): serve it as a float type",
				dsv_dtype_name(v->dtype), si->path, si->scale, si->offset);
		source_scale(v, si, &p);
		if (p.nchan) {
			p.mean = v->decl->mean + (v->decl->per_source ? i * per : 0);
			p.std = v->decl->std + (v->decl->per_source ? i * per : 0);
		}
		if ((err = dsv_xform_create(&v->xf[i], si->dtype, v->dtype, &p, eb)))
			return err;
		v->decl->xf_own[i] = 1;
	}
	return 0;
}
