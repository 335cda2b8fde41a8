/* The readers of windows: consecutive windows of one source row read
 * together, windows from tiles in the chunk cache, and windows a source
 * gathers itself; see read/read.h. */
#include <string.h>

#include "common/tlsbuf.h"
#include "read/read_i.h"
#include "source/source.h"
#include "view/view.h"
#include "xform/linear.h"

/* Whole windows that overlap or touch (stride <= window) are read
 * together: per run, the stretch of source the next windows of one source
 * row cover, once, then each window transformed from it. Without this an
 * EEG window of 129 channels is 129 small reads, and each sample is read
 * W / stride times. At most this many source bytes per stretch. */
#define WINDOW_STRETCH (1u << 20)

/* How many whole rows from view row i (with n elements left to read)
 * are consecutive windows of one source row: 0 or 1 when not worth it. */
uint64_t dsv_read_window_batch(const dsv_view *v, uint64_t i, uint64_t n, const dsv_row_runs *r)
{
	if (!v->has_window || v->layout_chw || v->stride > v->win ||
	    (v->rows_kind == DSV_ROWS_SLICE ? v->rows_delta != 1 : v->rows_kind != DSV_ROWS_ALL))
		return 0;
	uint64_t l = v->rows_kind == DSV_ROWS_SLICE ? v->rows_first + i : i;
	uint64_t nw = v->nwin[r->si], j0 = (l - v->lrow_base[r->si]) % nw, b = n / v->row_elems;
	size_t ses = dsv_dtype_size(dsv_source_get_info(v->sources[r->si])->dtype);
	uint64_t step = v->stride * (r->len / v->win), cap = WINDOW_STRETCH / ses;
	if (b > nw - j0)
		b = nw - j0;
	if (r->len < cap && b > (cap - r->len) / (step ? step : 1) + 1)
		b = (cap - r->len) / (step ? step : 1) + 1;
	return b;
}

/* b whole windows from view row i (output element e), the first at r. */
int dsv_read_windows(dsv_cache *c, const dsv_view *v, const dsv_row_runs *r, uint64_t b, uint64_t e,
		     char *dst, const dsv_read_req *req, dsv_read_info *info)
{
	size_t ses = dsv_dtype_size(dsv_source_get_info(v->sources[r->si])->dtype);
	uint64_t step = v->stride * (r->len / v->win), span = (b - 1) * step + r->len;
	char *buf = dsv_tls_buf(DSV_TLS_ROW, (size_t)(span * ses));
	if (!buf)
		return DSV_ERR_NOMEM;
	for (uint64_t p = 0; p < r->nruns; p++) {
		int err = dsv_read_src(c, v, r->si, r->start + p * r->stride, span, NULL, 0, buf,
				       req, info, 0);
		if (err)
			return err;
		for (uint64_t w = 0; w < b; w++) {
			uint64_t o = w * v->row_elems + p * r->len;
			dsv_xform_run(v->xf[r->si], dst + o * v->out_esize, buf + w * step * ses,
				      r->len, e + o);
		}
	}
	return 0;
}

/* Where logical row l's window lies in its tile (view/view.h): the tile's
 * index among its source's, the stretch of one run in the tile
 * (elements), the window's offset in that stretch, and the logical row
 * of the tile's first window. */
typedef struct tile_pos {
	uint64_t id, span, off, first;
} tile_pos;

static void tile_of(const dsv_view *v, const dsv_row_runs *r, uint64_t l, tile_pos *t)
{
	uint64_t nw = v->nwin[r->si], tw = v->tile_wins, local = l - v->lrow_base[r->si];
	uint64_t src_row = local / nw, j = local % nw, j0 = j - j % tw;
	uint64_t wins = nw - j0 < tw ? nw - j0 : tw, step = v->stride * (r->len / v->win);
	t->id = src_row * ((nw + tw - 1) / tw) + j0 / tw;
	t->span = (wins - 1) * step + r->len;
	t->off = (j - j0) * step;
	t->first = l - (j - j0);
}

/* Fills tile id of source a->si: every run's stretch, one after another,
 * read through the cache a->c (compressed sources). */
int dsv_read_fill_tile(const read_src_arg *a, uint64_t id, void *buf, size_t size)
{
	const dsv_view *v = a->v;
	size_t ses = dsv_dtype_size(dsv_source_get_info(v->sources[a->si])->dtype);
	uint64_t nw = v->nwin[a->si], ntiles = (nw + v->tile_wins - 1) / v->tile_wins;
	uint64_t l = v->lrow_base[a->si] + id / ntiles * nw + id % ntiles * v->tile_wins;
	dsv_read_info info;
	dsv_row_runs r;
	tile_pos t;
	if (nw == 0 || id >= ntiles * dsv_source_get_info(v->sources[a->si])->nrows)
		return DSV_ERR_INTERNAL;
	dsv_view_lrow_runs(v, l, &r);
	tile_of(v, &r, l, &t);
	if ((uint64_t)size != r.nruns * t.span * ses)
		return DSV_ERR_INTERNAL;
	memset(&info, 0, sizeof(info));
	for (uint64_t p = 0; p < r.nruns; p++) {
		int err = dsv_read_src(a->c, v, a->si, r.start + p * r.stride, t.span, NULL, 0,
				       (char *)buf + p * t.span * ses, a->req, &info, 0);
		if (err)
			return err;
	}
	return 0;
}

/* Positions [q, q + n) of logical row l, a window of a tiled view, from
 * its tile in the cache: one get for the whole row. */
int dsv_read_tiled(dsv_cache *c, dsv_cache *tiles, const dsv_view *v, const dsv_row_runs *r,
		   uint64_t l, uint64_t q, uint64_t n, uint64_t oe, char *dst,
		   const dsv_read_req *req)
{
	size_t ses = dsv_dtype_size(dsv_source_get_info(v->sources[r->si])->dtype);
	read_src_arg arg = { v, r->si, ENTRY_TILE, c, req };
	dsv_cache_entry *e;
	tile_pos t;
	tile_of(v, r, l, &t);
	int err = dsv_cache_get(tiles, v->tile_key + (uint32_t)r->si, t.id,
				(size_t)(r->nruns * t.span * ses), &arg, &e);
	if (err)
		return err;
	const char *tile = dsv_cache_data(e);
	uint64_t p = q / r->len, off = q - p * r->len;
	while (n) {
		uint64_t k = r->len - off < n ? r->len - off : n;
		dsv_xform_run(v->xf[r->si], dst, tile + (p * t.span + t.off + off) * ses, k, oe);
		dst += k * v->out_esize;
		oe += k;
		n -= k;
		p++;
		off = 0;
	}
	dsv_cache_put(tiles, e);
	return 0;
}

/* Positions [q, q + n) of a window (view row) along an inner axis (the
 * windows tiles would serve: many short runs) of a source that gathers
 * runs itself (an EEG recording: its channels' stretch of time lies in
 * the same records): the runs they touch read together, uncached, then
 * transformed from output element oe. A random window reads the records
 * it needs once, not the chunks (a few channels' whole time) or a tile of
 * windows around it. Where the view's transform is a linear map to float
 * (the source's float64 values rounded once, or scaled), the source
 * writes the output itself as it decodes: no float64 buffer, one pass. */
int dsv_read_gathered(const dsv_view *v, const dsv_row_runs *r, uint64_t q, uint64_t n, uint64_t oe,
		      char *dst)
{
	const dsv_source *s = v->sources[r->si];
	size_t ses = dsv_dtype_size(dsv_source_get_info(s)->dtype);
	uint64_t p0 = q / r->len, p1 = (q + n - 1) / r->len + 1;
	uint64_t start = r->start + p0 * r->stride;
	dsv_gather_out o = { .skip = q - p0 * r->len, .n = n };
	int err = dsv_xform_linear(v->xf[r->si], &o.lin)
			  ? dsv_source_read_runs_to(s, start, r->stride, p1 - p0, r->len, &o, dst)
			  : DSV_ERR_UNSUPPORTED;
	if (err == DSV_ERR_UNSUPPORTED) {
		char *buf = dsv_tls_buf(DSV_TLS_ROW, (size_t)((p1 - p0) * r->len * ses));
		if (!buf)
			return DSV_ERR_NOMEM;
		err = dsv_source_read_runs(s, start, r->stride, p1 - p0, r->len, buf);
		if (!err)
			dsv_xform_run(v->xf[r->si], dst, buf + o.skip * ses, n, oe);
	}
	if (err) {
		dsv_chunk_ref at; /* logged as the first run's chunk's failure */
		if (!dsv_source_chunk(s, start / dsv_source_get_info(s)->chunk_elems, &at))
			dsv_view_log_chunk_error(v, r->si, &at, err, NULL);
	}
	return err;
}
