/*
 * The shape of a view: per-source windows, concatenation, the
 * `rows` selection and the layout, and the map from a view row back to
 * the source elements it is made of.
 *
 * A "logical row" is a row of the concatenated, windowed sources: a
 * source row (no window), or one window. Every logical row is a set of
 * equally spaced runs of source elements (dsv_row_runs): one run for a
 * plain row or a window along axis 0, one run per index of the axes
 * between 0 and the window axis otherwise (an EEG window of 129 channels
 * is 129 runs of W samples). The view's rows are logical rows picked by
 * `rows` (all, a slice, or an index array), and `layout = CHW` permutes
 * the elements inside a row.
 */
#include <stdlib.h>
#include <string.h>

#include "common/arith.h"
#include "view/view_i.h"

#define TILE_BYTES (512u << 10)

/* Resolves a Python slice over n rows: the first row, the step, and the
 * count (PySlice_AdjustIndices). has_* are 0 for an omitted bound. */
static uint64_t slice_count(int64_t start, int has_start, int64_t stop, int has_stop, int64_t step,
			    uint64_t n, uint64_t *first)
{
	int64_t len = (int64_t)n, a, b;
	if (step > 0) {
		a = has_start ? start : 0;
		b = has_stop ? stop : len;
		if (a < 0)
			a = a + len < 0 ? 0 : a + len;
		if (a > len)
			a = len;
		if (b < 0)
			b = b + len < 0 ? 0 : b + len;
		if (b > len)
			b = len;
		*first = (uint64_t)a;
		return b > a ? (uint64_t)((b - a - 1) / step) + 1 : 0;
	}
	a = has_start ? start : len - 1;
	b = has_stop ? stop : -1;
	if (has_start && a < 0)
		a = a + len < 0 ? -1 : a + len;
	if (a >= len)
		a = len - 1;
	if (has_stop && b < 0)
		b = b + len < 0 ? -1 : b + len;
	if (b >= len)
		b = len - 1;
	*first = a < 0 ? 0 : (uint64_t)a;
	return a > b ? (uint64_t)((a - b - 1) / -step) + 1 : 0;
}

/* Source i's logical rows and, with a window, its windows per row. */
static int source_rows(dsv_view *v, size_t i, uint64_t *out, dsv_errbuf *eb)
{
	const dsv_source_info *si = dsv_source_get_info(v->sources[i]);
	if (!v->has_window) {
		*out = si->nrows;
		return 0;
	}
	uint64_t t = si->shape[v->win_axis];
	uint64_t n = t >= v->win ? (t - v->win) / v->stride + 1 : 0;
	v->nwin[i] = n;
	if (v->win_axis == 0)
		*out = n;
	else if (dsv_mul_u64(si->nrows, n, out))
		return dsv_errf_key(eb, DSV_ERR_OVERFLOW, "window", "too many windows");
	return 0;
}

/* The window axis as an index into the sources' dims, and its checks. */
static int resolve_window(dsv_view *v, const dsv_source_info *first, dsv_errbuf *eb)
{
	int k = v->win_axis < 0 ? v->win_axis + first->ndim : v->win_axis;
	if (first->ndim < 1)
		return dsv_errf_key(eb, DSV_ERR_INVALID, "window",
				    "window needs sources with at least one dimension");
	if (k < 0 || k >= first->ndim)
		return dsv_errf_key(eb, DSV_ERR_INVALID, "window_axis",
				    "window_axis %d is out of range for sources of %d dimensions",
				    v->win_axis, first->ndim);
	v->win_axis = k;
	return 0;
}

/* Checks an index array against n logical rows, making negative indices
 * count from the end. */
static int check_index(dsv_view *v, uint64_t count, uint64_t n, dsv_errbuf *eb)
{
	for (uint64_t i = 0; i < count; i++) {
		int64_t x = (int64_t)v->rows_index[i];
		if (x < 0 && 0 - (uint64_t)x <= n)
			x += (int64_t)n;
		if (x < 0 || (uint64_t)x >= n)
			return dsv_errf_key(eb, DSV_ERR_INVALID, "rows",
					    "rows: %s[%llu] = %lld is out of range for %llu rows",
					    v->decl->rows_file, (unsigned long long)i,
					    (long long)(int64_t)v->rows_index[i],
					    (unsigned long long)n);
		v->rows_index[i] = (uint64_t)x;
	}
	return 0;
}

int dsv_view_geometry(dsv_view *v, uint64_t nindex, dsv_errbuf *eb)
{
	const dsv_source_info *first = dsv_source_get_info(v->sources[0]);
	uint64_t nl = 0, rowe = first->row_elems, maxes = 1;
	uint64_t row_shape[DSV_MAX_DIMS + 1];
	int row_ndim;
	int err;

	v->lrow_base = calloc(v->nsources + 1, sizeof(uint64_t));
	v->nwin = calloc(v->nsources, sizeof(uint64_t));
	if (!v->lrow_base || !v->nwin)
		return dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
	if (v->has_window && (err = resolve_window(v, first, eb)))
		return err;
	for (size_t i = 0; i < v->nsources; i++) {
		const dsv_source_info *si = dsv_source_get_info(v->sources[i]);
		uint64_t r;
		if ((err = source_rows(v, i, &r, eb)))
			return err;
		if (dsv_add_u64(v->lrow_base[i], r, &v->lrow_base[i + 1]))
			return dsv_errf(eb, DSV_ERR_OVERFLOW, "view '%s' is too large", v->name);
		if (dsv_dtype_size(si->dtype) > maxes)
			maxes = dsv_dtype_size(si->dtype);
	}
	nl = v->lrow_base[v->nsources];

	/* the row shape after windows */
	row_ndim = first->ndim > 0 ? first->ndim - 1 : 0;
	for (int k = 1; k < first->ndim; k++)
		row_shape[k - 1] = first->shape[k];
	if (v->has_window) {
		uint64_t longest = 0;
		for (size_t i = 0; i < v->nsources; i++) {
			const dsv_source_info *si = dsv_source_get_info(v->sources[i]);
			if (si->shape[v->win_axis] > longest)
				longest = si->shape[v->win_axis];
		}
		if (longest < v->win)
			return dsv_errf_key(eb, DSV_ERR_INVALID, "window",
					    "window %llu is longer than axis %d of every source "
					    "(longest: %llu)",
					    (unsigned long long)v->win, v->win_axis,
					    (unsigned long long)longest);
		if (v->win_axis == 0) {
			if (row_ndim + 1 > DSV_MAX_DIMS - 1)
				return dsv_errf_key(eb, DSV_ERR_INVALID, "window",
						    "too many dimensions");
			memmove(row_shape + 1, row_shape, (size_t)row_ndim * sizeof(uint64_t));
			row_shape[0] = v->win;
			row_ndim++;
		} else {
			row_shape[v->win_axis - 1] = v->win;
		}
		rowe = 1;
		for (int k = 0; k < row_ndim; k++)
			if (dsv_mul_u64(rowe, row_shape[k], &rowe))
				return dsv_errf(eb, DSV_ERR_OVERFLOW, "view '%s' is too large",
						v->name);
	}

	/* rows */
	uint64_t n = nl;
	if (v->rows_kind == DSV_ROWS_SLICE) {
		const struct dsv_view_decl *d = v->decl;
		n = slice_count(d->rows_start, d->rows_start != INT64_MIN, d->rows_stop,
				d->rows_stop != INT64_MIN, d->rows_step, nl, &v->rows_first);
		v->rows_delta = d->rows_step;
	} else if (v->rows_kind == DSV_ROWS_INDEX) {
		if ((err = check_index(v, nindex, nl, eb)))
			return err;
		n = nindex;
	}

	/* layout */
	if (v->layout_chw) {
		if (row_ndim < 2)
			return dsv_errf_key(
				eb, DSV_ERR_INVALID, "layout",
				"layout CHW needs rows of at least 2 dimensions (H, W, C); "
				"these have %d",
				row_ndim);
		v->lay_c = row_shape[row_ndim - 1];
		v->lay_hw = rowe / (v->lay_c ? v->lay_c : 1);
		memmove(row_shape + 1, row_shape, (size_t)(row_ndim - 1) * sizeof(uint64_t));
		row_shape[0] = v->lay_c;
	}

	v->mapped = v->has_window || v->rows_kind != DSV_ROWS_ALL || v->layout_chw;
	v->ndim = first->ndim == 0 && !v->has_window ? 0 : row_ndim + 1; /* a 0-d array stays one */
	v->shape[0] = n;
	memcpy(v->shape + 1, row_shape, (size_t)row_ndim * sizeof(uint64_t));
	v->row_elems = rowe;
	if (dsv_mul_u64(n, rowe, &v->nelems))
		return dsv_errf(eb, DSV_ERR_OVERFLOW, "view '%s' is too large", v->name);

	/* tiles of windows along an inner axis: about TILE_BYTES of source */
	if (v->has_window && v->win_axis > 1 && v->stride <= v->win && !v->layout_chw) {
		uint64_t per = rowe * maxes * v->stride / v->win; /* source bytes a window adds */
		uint64_t t = per ? TILE_BYTES / per : 64;
		v->tile_wins = t < 2 ? 2 : t > 64 ? 64 : t;
	}

	/* readahead units: chunks, or about a chunk's worth of rows */
	if (!v->mapped) {
		v->nsegs = v->nchunks;
		v->seg_raw = v->decl->max_chunk_raw;
	} else {
		uint64_t rb = rowe * maxes > 0 ? rowe * maxes : 1;
		v->seg_rows = rb >= (1u << 20) ? 1 : (1u << 20) / rb;
		v->nsegs = n / v->seg_rows + (n % v->seg_rows != 0);
		v->seg_raw = v->seg_rows * rb;
	}
	return 0;
}

/* Index of the source i with base[i] <= x < base[i + 1] (sources may be
 * empty: the last such i). */
size_t dsv_view_source_of(const dsv_view *v, const uint64_t *base, uint64_t x)
{
	size_t lo = 0, hi = v->nsources;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (base[mid] <= x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo - 1;
}

uint64_t dsv_view_lrow(const dsv_view *v, uint64_t row)
{
	if (v->rows_kind == DSV_ROWS_SLICE)
		return (uint64_t)((int64_t)v->rows_first + (int64_t)row * v->rows_delta);
	if (v->rows_kind == DSV_ROWS_INDEX)
		return v->rows_index[row];
	return row;
}

void dsv_view_lrow_runs(const dsv_view *v, uint64_t l, dsv_row_runs *r)
{
	size_t si = dsv_view_source_of(v, v->lrow_base, l);
	const dsv_source_info *s = dsv_source_get_info(v->sources[si]);
	uint64_t local = l - v->lrow_base[si];
	r->si = si;
	r->nruns = 1;
	r->stride = 0;
	if (!v->has_window) {
		r->start = local * s->row_elems;
		r->len = s->row_elems;
	} else if (v->win_axis == 0) {
		r->start = local * v->stride * s->row_elems;
		r->len = v->win * s->row_elems;
	} else {
		/* axes 1..k-1 are the runs; the window covers W of axis k
		 * times everything after it */
		uint64_t t = s->shape[v->win_axis], inner = 1, outer = 1;
		for (int k = v->win_axis + 1; k < s->ndim; k++)
			inner *= s->shape[k];
		for (int k = 1; k < v->win_axis; k++)
			outer *= s->shape[k];
		uint64_t n = v->nwin[si], src_row = local / n, j = local % n;
		r->start = src_row * s->row_elems + j * v->stride * inner;
		r->len = v->win * inner;
		r->stride = t * inner;
		r->nruns = outer;
	}
}

int dsv_view_seg_range(const dsv_view *v, uint64_t seg, uint64_t *off, uint64_t *len)
{
	if (seg >= v->nsegs)
		return DSV_ERR_INVALID;
	if (!v->mapped) {
		size_t si = dsv_view_source_of(v, v->chunk_base, seg);
		dsv_chunk_ref ref;
		if (dsv_source_chunk(v->sources[si], seg - v->chunk_base[si], &ref))
			return DSV_ERR_INVALID;
		*off = (v->elem_base[si] + ref.elem_start) * v->out_esize;
		*len = ref.nelems * v->out_esize;
		return 0;
	}
	uint64_t r0 = seg * v->seg_rows, r1 = r0 + v->seg_rows;
	if (r1 > v->shape[0])
		r1 = v->shape[0];
	*off = r0 * v->row_bytes;
	*len = (r1 - r0) * v->row_bytes;
	return 0;
}
