/* Output bytes of a view's byte ranges; see read/read.h. */
#include <string.h>

#include "common/tlsbuf.h"
#include "read/read.h"
#include "read/read_i.h"
#include "source/source.h"
#include "view/view.h"

/* Plain elements are pread and transformed this many source bytes at a
 * time: the piece stays in the core's cache between the two. */
#define PLAIN_PIECE (256u << 10)

/* n elements from src (source dtype) to dst: transformed by x, whose
 * channels count from output element oe, or copied as they are (x NULL). */
static void emit(const dsv_xform *x, char *dst, const void *src, uint64_t n, uint64_t oe,
		 size_t ses)
{
	if (x)
		dsv_xform_run(x, dst, src, n, oe);
	else
		memcpy(dst, src, (size_t)(n * ses));
}

static int read_plain(const dsv_view *v, size_t si, const dsv_chunk_ref *ref, uint64_t first,
		      uint64_t n, const dsv_xform *x, uint64_t oe, char *dst)
{
	const dsv_source *s = v->sources[si];
	size_t ses = dsv_dtype_size(dsv_source_get_info(s)->dtype);
	size_t oes = x ? v->out_esize : ses;
	uint64_t step = PLAIN_PIECE / ses;
	void *raw = x ? dsv_tls_buf(DSV_TLS_RAW, (size_t)((n < step ? n : step) * ses)) : NULL;

	if (x && !raw)
		return DSV_ERR_NOMEM;
	for (uint64_t k = 0; k < n; k += step) {
		uint64_t m = n - k < step ? n - k : step;
		char *out = dst + k * oes;
		int err = dsv_source_read_elems(s, ref, first + k, m, x ? raw : out);
		if (err) {
			dsv_view_log_chunk_error(v, si, ref, err, NULL);
			return err;
		}
		if (x)
			dsv_xform_run(x, out, raw, m, oe + k);
	}
	return 0;
}

/* Elements [first, first + n) of a fallback chunk (through the HDF5
 * library) or of a grid's band, uncached, band by band of the file's own
 * chunks (chunk-rows of a grid). Such a chunk spans several of those; when
 * it fails as a whole, the part a request wants may lie in good ones, so a
 * damaged file chunk fails only the requests that touch it (each file
 * chunk is decoded whole, sizes checked as ever). */
static int read_fallback_part(const dsv_view *v, size_t si, const dsv_chunk_ref *ref,
			      uint64_t first, uint64_t n, const dsv_xform *x, uint64_t oe,
			      char *dst)
{
	const dsv_source *s = v->sources[si];
	size_t ses = dsv_dtype_size(dsv_source_get_info(s)->dtype);
	void *raw = dsv_tls_buf(DSV_TLS_RAW, (size_t)(n * ses));
	int err;

	if (!raw)
		return DSV_ERR_NOMEM;
	if ((err = dsv_source_read_fallback_bands(s, ref, first, n, raw, (size_t)(n * ses), NULL,
						  NULL)))
		return err;
	emit(x, dst, raw, n, oe, ses);
	return 0;
}

/* Each LZ4 block's part of a piece, transformed from the scratch it was
 * just decoded into (a dsv_lz4_sink): whole elements, in order. */
typedef struct block_sink {
	const dsv_xform *x;
	char *dst;
	uint64_t oe;
	size_t ses, oes;
} block_sink;

static void xform_block(void *arg, const uint8_t *bytes, uint64_t len)
{
	block_sink *k = arg;
	uint64_t n = len / k->ses;
	dsv_xform_run(k->x, k->dst, bytes, n, k->oe);
	k->dst += n * k->oes;
	k->oe += n;
}

/* Elements [first, first + n) of LZ4 chunk ref from the blocks that hold
 * them (source/lz4_part.c): each block transformed as soon as it is
 * decoded when blocks hold whole elements (every store pack writes), else
 * the piece decoded, then transformed; decoded into dst as they are
 * without x. @return 0, or the blocks' failure (dst partly written). */
static int read_blocks(const dsv_view *v, size_t si, const dsv_chunk_ref *ref, uint64_t first,
		       uint64_t n, const dsv_xform *x, uint64_t oe, char *dst, dsv_read_info *info)
{
	const dsv_source *s = v->sources[si];
	const dsv_source_info *in = dsv_source_get_info(s);
	size_t ses = dsv_dtype_size(in->dtype);
	uint64_t lo = first * ses, hi = (first + n) * ses, decoded = 0;
	int err;

	if (x && in->lz4_block % ses == 0) {
		block_sink k = { x, dst, oe, ses, v->out_esize };
		err = dsv_source_read_lz4_part(s, ref, lo, hi, NULL, xform_block, &k, &decoded);
	} else {
		void *raw = x ? dsv_tls_buf(DSV_TLS_RAW, (size_t)(n * ses)) : dst;
		if (!raw)
			return DSV_ERR_NOMEM;
		err = dsv_source_read_lz4_part(s, ref, lo, hi, raw, NULL, NULL, &decoded);
		if (!err && x)
			dsv_xform_run(x, dst, raw, n, oe);
	}
	info->lz4_bytes += decoded / ses * v->out_esize;
	return err;
}

/* The cache key of a chunk is its source's (v->src_key: views that share
 * a source share its decoded chunks) and its index in the source. */
static int read_cached(dsv_cache *c, const dsv_view *v, size_t si, const dsv_chunk_ref *ref,
		       uint64_t first, uint64_t n, const dsv_xform *x, uint64_t oe, char *dst,
		       const dsv_read_req *req, dsv_read_info *info)
{
	const dsv_source_info *in = dsv_source_get_info(v->sources[si]);
	size_t ses = dsv_dtype_size(in->dtype);
	uint32_t key = v->src_key[si];
	read_src_arg arg = { v, si, ENTRY_CHUNK, NULL, req };
	dsv_cache_entry *e;
	int err;

	/* A library-decoded chunk, or a grid's band of several chunk-rows,
	 * that just failed whole: a part of it is read band by band of the
	 * file's own chunks, without decoding the whole chunk again (under the
	 * library's lock) for every small read (the kernel asks page by page). */
	int narrow = (ref->fallback || (ref->grid && dsv_source_fallback_band(v->sources[si]))) &&
		     n < ref->nelems;
	if (narrow && dsv_cache_failed_lately(c, key, ref->index))
		return read_fallback_part(v, si, ref, first, n, x, oe, dst);
	/* A part of a chunk of a store with a block table, not in the cache
	 * whole: from its own blocks (read_blocks). The prefetcher's threads
	 * take whole chunks (DSV_READ_STREAM): a sequential pass decodes each
	 * chunk once. A part that fails (a block, or the table, fails a
	 * check) is logged and read from the whole chunk, whose own checksum
	 * then decides. */
	if (in->lz4_table && ref->codec == DSV_CODEC_LZ4 && n < ref->nelems &&
	    !(req->flags & DSV_READ_STREAM)) {
		if ((e = dsv_cache_peek(c, key, ref->index))) {
			emit(x, dst, (const char *)dsv_cache_data(e) + first * ses, n, oe, ses);
			dsv_cache_put(c, e);
			return 0;
		}
		if (!(err = read_blocks(v, si, ref, first, n, x, oe, dst, info)))
			return 0;
		if (err == DSV_ERR_NOMEM)
			return err;
		dsv_view_log_block_error(v, si, ref, err);
	}
	/* a stream's chunk is read once: its buffer is recycled (cache.h) */
	err = (req->flags & DSV_READ_STREAM ? dsv_cache_get_once : dsv_cache_get)(
		c, key, ref->index, (size_t)(ref->nelems * ses), &arg, &e);
	if (err && narrow && err != DSV_ERR_NOMEM)
		return read_fallback_part(v, si, ref, first, n, x, oe, dst) ? err : 0;
	if (err)
		return err; /* the fill logged it */
	emit(x, dst, (const char *)dsv_cache_data(e) + first * ses, n, oe, ses);
	dsv_cache_put(c, e);
	return 0;
}

void dsv_read_note_unit(dsv_read_info *info, uint64_t u)
{
	if (info->first > u)
		info->first = u;
	if (info->last < u)
		info->last = u;
}

/* Elements [a, a + n) of source si into dst, chunk piece by chunk piece:
 * transformed by x from output element oe, or raw (x NULL). by_chunk:
 * the view's readahead units are its chunks (note them in info). */
int dsv_read_src(dsv_cache *c, const dsv_view *v, size_t si, uint64_t a, uint64_t n,
		 const dsv_xform *x, uint64_t oe, char *dst, const dsv_read_req *req,
		 dsv_read_info *info, int by_chunk)
{
	const dsv_source *s = v->sources[si];
	const dsv_source_info *in = dsv_source_get_info(s);
	size_t oes = x ? v->out_esize : dsv_dtype_size(in->dtype);
	while (n) {
		dsv_chunk_ref ref;
		int err;
		if (dsv_source_chunk(s, a / in->chunk_elems, &ref))
			return DSV_ERR_INTERNAL;
		uint64_t first = a - ref.elem_start, m = ref.nelems - first;
		if (m > n)
			m = n;
		if (dsv_chunk_is_plain(&ref)) {
			err = read_plain(v, si, &ref, first, m, x, oe, dst);
			info->plain_bytes += m * v->out_esize;
		} else {
			err = read_cached(c, v, si, &ref, first, m, x, oe, dst, req, info);
		}
		if (by_chunk)
			dsv_read_note_unit(info, v->chunk_base[si] + ref.index);
		if (err)
			return err;
		dst += m * oes;
		a += m;
		oe += m;
		n -= m;
	}
	return 0;
}

/* Output elements [e, e + n) of a view that is its sources concatenated:
 * long runs, source by source. */
static int read_concat(dsv_cache *c, const dsv_view *v, uint64_t e, uint64_t n, char *dst,
		       const dsv_read_req *req, dsv_read_info *info)
{
	while (n) {
		size_t si = dsv_view_source_of(v, v->elem_base, e);
		uint64_t m = v->elem_base[si + 1] - e;
		if (m > n)
			m = n;
		int err = dsv_read_src(c, v, si, e - v->elem_base[si], m, v->xf[si], e, dst, req,
				       info, 1);
		if (err)
			return err;
		dst += m * v->out_esize;
		e += m;
		n -= m;
	}
	return 0;
}

/* Positions [q, q + n) of a CHW row (position k * hw + h) from the row's
 * HWC elements (element h * nc + k) in row: channel by channel, a whole
 * row in one pass over its pixels, writing a stream per channel. */
#define GATHER(T)                                                             \
	do {                                                                  \
		const T *in_ = row;                                           \
		T *o_ = out;                                                  \
		if (q == 0 && n == nc * hw) {                                 \
			for (uint64_t h_ = 0; h_ < hw; h_++)                  \
				for (uint64_t k_ = 0; k_ < nc; k_++)          \
					o_[k_ * hw + h_] = in_[h_ * nc + k_]; \
			break;                                                \
		}                                                             \
		uint64_t k_ = q / hw, h_ = q - k_ * hw;                       \
		while (n) {                                                   \
			uint64_t m_ = hw - h_ < n ? hw - h_ : n;              \
			for (uint64_t i_ = 0; i_ < m_; i_++)                  \
				o_[i_] = in_[(h_ + i_) * nc + k_];            \
			o_ += m_;                                             \
			n -= m_;                                              \
			k_++;                                                 \
			h_ = 0;                                               \
		}                                                             \
	} while (0)

static void gather_chw(const void *row, void *out, size_t es, uint64_t nc, uint64_t hw, uint64_t q,
		       uint64_t n)
{
	switch (es) {
	case 1: GATHER(uint8_t); break;
	case 2: GATHER(uint16_t); break;
	case 4: GATHER(uint32_t); break;
	default: GATHER(uint64_t); break;
	}
}

/* Positions [q, q + n) of a row before its layout, from the row's runs:
 * transformed by x from output element oe, or raw (x NULL). */
static int read_row_part(dsv_cache *c, const dsv_view *v, const dsv_row_runs *r, uint64_t q,
			 uint64_t n, const dsv_xform *x, uint64_t oe, char *dst,
			 const dsv_read_req *req, dsv_read_info *info)
{
	size_t oes = x ? v->out_esize
		       : dsv_dtype_size(dsv_source_get_info(v->sources[r->si])->dtype);
	uint64_t p = q / r->len, off = q - p * r->len;
	while (n) {
		uint64_t k = r->len - off < n ? r->len - off : n;
		int err = dsv_read_src(c, v, r->si, r->start + p * r->stride + off, k, x, oe, dst,
				       req, info, 0);
		if (err)
			return err;
		dst += k * oes;
		oe += k;
		n -= k;
		p++;
		off = 0;
	}
	return 0;
}

/* Positions [q, q + n) of view row i with layout CHW: the pixels they
 * need are read raw (all channels of pixels [h0, h1) for a range inside
 * one channel; [h0, hw) and [0, h1) for one that crosses into the next;
 * the whole row past that), gathered into output order, then transformed
 * once. The kernel asks for a row in pieces, and reads ahead into rows a
 * shuffled reader never asks for: each piece costs only its pixels. */
static int read_chw(dsv_cache *c, const dsv_view *v, const dsv_row_runs *r, uint64_t i, uint64_t q,
		    uint64_t n, char *dst, const dsv_read_req *req, dsv_read_info *info)
{
	size_t ses = dsv_dtype_size(dsv_source_get_info(v->sources[r->si])->dtype);
	uint64_t hw = v->lay_hw, nc = v->lay_c, k0 = q / hw, k1 = (q + n - 1) / hw;
	uint64_t h0 = q - k0 * hw, h1 = q + n - k1 * hw; /* pixels [h0, ..) of k0, [.., h1) of k1 */
	uint64_t from[2] = { 0, 0 }, to[2] = { hw, 0 };
	char *row = dsv_tls_buf(DSV_TLS_ROW, (size_t)(v->row_elems * ses));
	char *perm = dsv_tls_buf(DSV_TLS_PERM, (size_t)(n * ses));
	int err;
	if (!row || !perm)
		return DSV_ERR_NOMEM;
	if (k0 == k1) {
		from[0] = h0;
		to[0] = h1;
	} else if (k1 == k0 + 1 && h1 < h0) {
		from[0] = h0;
		to[1] = h1;
	}
	for (int k = 0; k < 2; k++)
		if (to[k] > from[k] &&
		    (err = read_row_part(c, v, r, from[k] * nc, (to[k] - from[k]) * nc, NULL, 0,
					 row + from[k] * nc * ses, req, info)))
			return err;
	gather_chw(row, perm, ses, nc, hw, q, n);
	dsv_xform_run(v->xf[r->si], dst, perm, n, i * v->row_elems + q);
	return 0;
}

/* Output elements [e, e + n) of a view with windows, rows or a layout:
 * row by row, each from its runs of source elements (geom.c), or
 * windows by the stretch. */
static int read_rows(dsv_cache *c, dsv_cache *tiles, const dsv_view *v, uint64_t e, uint64_t n,
		     char *dst, const dsv_read_req *req, dsv_read_info *info)
{
	uint64_t re = v->row_elems;
	while (n) {
		uint64_t i = e / re, q = e - i * re, m = re - q, b;
		dsv_row_runs r;
		int err;
		if (m > n)
			m = n;
		dsv_read_note_unit(info, i / v->seg_rows);
		uint64_t l = dsv_view_lrow(v, i);
		dsv_view_lrow_runs(v, l, &r);
		if (v->tile_wins && dsv_source_gathers(v->sources[r.si])) {
			err = dsv_read_gathered(v, &r, q, m, e, dst);
		} else if (v->tile_wins) {
			err = dsv_read_tiled(c, tiles ? tiles : c, v, &r, l, q, m, e, dst, req);
		} else if (q == 0 && (b = dsv_read_window_batch(v, i, n, &r)) > 1) {
			m = b * re;
			dsv_read_note_unit(info, (i + b - 1) / v->seg_rows);
			err = dsv_read_windows(c, v, &r, b, e, dst, req, info);
		} else if (v->layout_chw) {
			err = read_chw(c, v, &r, i, q, m, dst, req, info);
		} else if (!v->has_window && q == 0 && m == re) {
			/* whole rows whose logical rows follow on in one source
			 * (a slice of step 1, a sorted index's runs) are one run */
			uint64_t k = 1;
			while ((k + 1) * re <= n && l + k < v->lrow_base[r.si + 1] &&
			       dsv_view_lrow(v, i + k) == l + k)
				k++;
			m = k * re;
			dsv_read_note_unit(info, (i + k - 1) / v->seg_rows);
			err = dsv_read_src(c, v, r.si, r.start, k * r.len, v->xf[r.si], e, dst, req,
					   info, 0);
		} else {
			err = read_row_part(c, v, &r, q, m, v->xf[r.si], e, dst, req, info);
		}
		if (err)
			return err;
		dst += m * v->out_esize;
		e += m;
		n -= m;
	}
	return 0;
}

static int read_elems(dsv_cache *c, dsv_cache *tiles, const dsv_view *v, uint64_t e, uint64_t n,
		      char *dst, const dsv_read_req *req, dsv_read_info *info)
{
	return v->mapped ? read_rows(c, tiles, v, e, n, dst, req, info)
			 : read_concat(c, v, e, n, dst, req, info);
}

int dsv_read(dsv_cache *c, dsv_cache *tiles, const dsv_view *v, const dsv_read_req *req, void *dst,
	     dsv_read_info *info)
{
	uint64_t off = req->off, oes = v->out_esize, end = off + req->len;
	size_t len = req->len;
	char *d = dst, part[8]; /* one element, for ranges that cut one */
	int err = 0;

	memset(info, 0, sizeof(*info));
	info->first = UINT64_MAX;
	if (end < off || end > v->nbytes)
		return DSV_ERR_INVALID;
	if (len == 0)
		return 0;
	/* whole elements [a, b); at most one cut element on each side */
	uint64_t a = (off + oes - 1) / oes, b = end / oes;
	if (a > b) { /* inside one element */
		if (!(err = read_elems(c, tiles, v, off / oes, 1, part, req, info)))
			memcpy(d, part + off % oes, len);
		return err;
	}
	if (off % oes) {
		if ((err = read_elems(c, tiles, v, a - 1, 1, part, req, info)))
			return err;
		memcpy(d, part + off % oes, oes - off % oes);
		d += oes - off % oes;
	}
	if (b > a) {
		if ((err = read_elems(c, tiles, v, a, b - a, d, req, info)))
			return err;
		d += (b - a) * oes;
	}
	if (end % oes && (err = read_elems(c, tiles, v, b, 1, part, req, info)) == 0)
		memcpy(d, part, end % oes);
	return err;
}

int dsv_read_fill(const void *arg, uint64_t chunk, void *buf, size_t size, dsv_read_job *job)
{
	const read_src_arg *a = arg;
	int err;
	memset(job, 0, sizeof(*job));
	if (!a)
		return DSV_ERR_INTERNAL;
	if (a->kind == ENTRY_TILE) {
		err = dsv_read_fill_tile(a, chunk, buf, size);
		job->tile = !err;
		return err;
	}
	if (a->kind != ENTRY_CHUNK || chunk >= dsv_source_get_info(a->v->sources[a->si])->nchunks)
		return DSV_ERR_INTERNAL;
	job->v = a->v;
	job->g = a->v->chunk_base[a->si] + chunk;
	job->flags = a->req->flags;
	return 0;
}
