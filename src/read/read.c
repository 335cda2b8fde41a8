/* Output bytes of a view's byte ranges; see read/read.h. */
#include <string.h>

#include "common/tlsbuf.h"
#include "read/read.h"
#include "view/view_i.h"

/* Plain elements are pread and transformed this many source bytes at a
 * time: the piece stays in the core's cache between the two. */
#define PLAIN_PIECE (256u << 10)

static int read_plain(const dsv_view *v, size_t si, const dsv_chunk_ref *ref, uint64_t first,
		      uint64_t n, char *dst)
{
	const dsv_source *s = v->sources[si];
	size_t ses = dsv_dtype_size(dsv_source_get_info(s)->dtype);
	uint64_t step = PLAIN_PIECE / ses, elem = v->elem_base[si] + ref->elem_start + first;
	void *raw = dsv_tls_buf(DSV_TLS_RAW, (size_t)((n < step ? n : step) * ses));

	if (!raw)
		return DSV_ERR_NOMEM;
	for (uint64_t k = 0; k < n; k += step) {
		uint64_t m = n - k < step ? n - k : step;
		int err = dsv_source_read_elems(s, ref, first + k, m, raw);
		if (err) {
			dsv_view_log_chunk_error(v, si, ref, err);
			return err;
		}
		dsv_xform_run(v->xform, dst + k * v->out_esize, raw, m, elem + k);
	}
	return 0;
}

/* Elements [first, first + n) of a fallback chunk through the HDF5
 * library, uncached, band by band of the file's own chunks. A fallback
 * chunk spans several of those; when it fails as a whole, the part a
 * request wants may lie in good ones, so a damaged file chunk fails only
 * the requests that touch it (the library decodes each file chunk whole,
 * sizes checked as ever). */
static int read_fallback_part(const dsv_view *v, size_t si, const dsv_chunk_ref *ref,
			      uint64_t first, uint64_t n, char *dst)
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
	dsv_xform_run(v->xform, dst, raw, n, v->elem_base[si] + ref->elem_start + first);
	return 0;
}

static int read_cached(dsv_cache *c, const dsv_view *v, uint32_t vi, uint64_t g, size_t si,
		       const dsv_chunk_ref *ref, uint64_t first, uint64_t n, char *dst)
{
	size_t ses = dsv_dtype_size(dsv_source_get_info(v->sources[si])->dtype);
	dsv_cache_entry *e;
	int err;

	/* A library-decoded chunk that just failed whole: a part of it is read
	 * band by band, without decoding the whole chunk again under the
	 * library's lock for every small read (the kernel asks page by page). */
	if (ref->fallback && n < ref->nelems && dsv_cache_failed_lately(c, vi, g))
		return read_fallback_part(v, si, ref, first, n, dst);
	err = dsv_cache_get(c, vi, g, (size_t)(ref->nelems * ses), &e);
	if (err && ref->fallback && n < ref->nelems && err != DSV_ERR_NOMEM)
		return read_fallback_part(v, si, ref, first, n, dst) ? err : 0;
	if (err)
		return err; /* the fill logged it */
	dsv_xform_run(v->xform, dst, (const char *)dsv_cache_data(e) + first * ses, n,
		      v->elem_base[si] + ref->elem_start + first);
	dsv_cache_put(c, e);
	return 0;
}

/* Output elements [e, e + n) into dst, chunk piece by chunk piece. */
static int read_elems(dsv_cache *c, const dsv_view *v, uint32_t vi, uint64_t e, uint64_t n,
		      char *dst, dsv_read_info *info)
{
	size_t oes = v->out_esize;
	while (n) {
		dsv_span sp;
		dsv_chunk_ref ref;
		size_t si;
		int err;
		if (dsv_view_span_at(v, e * oes, n * oes, &sp) ||
		    dsv_view_chunk_ref(v, sp.chunk, &si, &ref))
			return DSV_ERR_INTERNAL;
		uint64_t first = sp.off / oes, m = sp.len / oes;
		if (dsv_chunk_is_plain(&ref)) {
			err = read_plain(v, si, &ref, first, m, dst);
			info->plain_bytes += m * oes;
		} else {
			err = read_cached(c, v, vi, sp.chunk, si, &ref, first, m, dst);
		}
		if (info->first > sp.chunk)
			info->first = sp.chunk;
		if (info->last < sp.chunk)
			info->last = sp.chunk;
		if (err)
			return err;
		dst += m * oes;
		e += m;
		n -= m;
	}
	return 0;
}

int dsv_read(dsv_cache *c, const dsv_view *v, uint32_t vi, uint64_t off, size_t len, void *dst,
	     dsv_read_info *info)
{
	uint64_t oes = v->out_esize, end = off + len;
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
		if (!(err = read_elems(c, v, vi, off / oes, 1, part, info)))
			memcpy(d, part + off % oes, len);
		return err;
	}
	if (off % oes) {
		if ((err = read_elems(c, v, vi, a - 1, 1, part, info)))
			return err;
		memcpy(d, part + off % oes, oes - off % oes);
		d += oes - off % oes;
	}
	if (b > a) {
		if ((err = read_elems(c, v, vi, a, b - a, d, info)))
			return err;
		d += (b - a) * oes;
	}
	if (end % oes && (err = read_elems(c, v, vi, b, 1, part, info)) == 0)
		memcpy(d, part, end % oes);
	return err;
}

int dsv_read_chunk_range(const dsv_view *v, uint64_t g, uint64_t *off, uint64_t *len)
{
	dsv_chunk_ref ref;
	size_t si;
	if (dsv_view_chunk_ref(v, g, &si, &ref))
		return DSV_ERR_INVALID;
	*off = (v->elem_base[si] + ref.elem_start) * v->out_esize;
	*len = ref.nelems * v->out_esize;
	return 0;
}
