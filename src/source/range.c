/*
 * Reading runs of a source's elements: the one home of "read a chunk's
 * elements" for the read path, the CPU backend, pack and verify.
 *
 * - dsv_source_decode_chunk: a whole chunk, its stored bytes staged in the
 *   calling thread's buffer (common/tlsbuf.h), so no caller sizes scratch;
 *   dsv_source_decode_chunk_as the same for a read asked as flags (the
 *   backend's, DSV_READ_*).
 * - dsv_range_read: any run of elements across chunks, for readers that
 *   walk a source in order (pack): plain pieces are pread straight into
 *   the destination, other chunks are decoded whole once into the reader's
 *   buffer and copied from it while the run stays inside them.
 * - dsv_source_read_fallback_bands: part of a chunk the HDF5 library
 *   decodes, band by band of the file's own chunks, so one damaged file
 *   chunk fails only the band that holds it (the read path's partial
 *   reads, and verify, which reports each bad band).
 *
 * Only the source's own reads are used here, nothing of a format's.
 */
#include <stdlib.h>
#include <string.h>

#include "common/tlsbuf.h"
#include "dsview/source.h"
#include "source/source_i.h"

int dsv_source_decode_chunk(const dsv_source *s, const dsv_chunk_ref *ref, void *dst,
			    size_t dst_cap, dsv_errbuf *eb)
{
	return dsv_source_decode_chunk_as(s, ref, 0, dst, dst_cap, eb);
}

int dsv_source_decode_chunk_as(const dsv_source *s, const dsv_chunk_ref *ref, unsigned flags,
			       void *dst, size_t dst_cap, dsv_errbuf *eb)
{
	void *stored = NULL;

	if (!ref->fallback && !dsv_chunk_is_plain(ref) &&
	    !(stored = dsv_tls_buf(DSV_TLS_STORED, (size_t)ref->stored_size)))
		return DSV_ERR_NOMEM;
	return dsv_source_read_chunk_as(s, ref, flags, dst, dst_cap, stored,
					stored ? (size_t)ref->stored_size : 0, eb);
}

int dsv_range_init(dsv_range *r, const dsv_source *s)
{
	const dsv_source_info *in = dsv_source_get_info(s);

	memset(r, 0, sizeof(*r));
	r->src = s;
	r->esize = dsv_dtype_size(in->dtype);
	r->memo = UINT64_MAX;
	r->cap = (size_t)(in->chunk_elems * r->esize);
	r->buf = r->cap ? malloc(r->cap) : NULL;
	return r->cap && !r->buf ? DSV_ERR_NOMEM : 0;
}

void dsv_range_free(dsv_range *r)
{
	free(r->buf);
	r->buf = NULL;
}

int dsv_range_read(dsv_range *r, uint64_t e0, uint64_t n, void *dst, uint64_t *bad)
{
	const dsv_source_info *in = dsv_source_get_info(r->src);
	uint64_t ce = in->chunk_elems;
	char *d = dst;

	while (n) {
		uint64_t j = e0 / ce, skip, take;
		dsv_chunk_ref ref;
		int err = dsv_source_chunk(r->src, j, &ref);

		*bad = j;
		if (err)
			return err;
		skip = e0 - ref.elem_start;
		take = ref.nelems - skip < n ? ref.nelems - skip : n;
		if (dsv_chunk_is_plain(&ref)) {
			err = dsv_source_read_elems(r->src, &ref, skip, take, d);
		} else {
			if (r->memo != j) {
				r->memo = UINT64_MAX;
				err = dsv_source_decode_chunk(r->src, &ref, r->buf, r->cap, NULL);
				if (!err)
					r->memo = j;
			}
			if (!err)
				memcpy(d, (char *)r->buf + skip * r->esize,
				       (size_t)(take * r->esize));
		}
		if (err)
			return err;
		d += take * r->esize;
		e0 += take;
		n -= take;
	}
	return 0;
}

int dsv_source_read_fallback_bands(const dsv_source *s, const dsv_chunk_ref *ref, uint64_t first,
				   uint64_t n, void *dst, size_t dst_cap, dsv_band_fn each,
				   void *arg)
{
	uint64_t band = dsv_source_fallback_band(s);
	uint64_t esize = dsv_dtype_size(dsv_source_get_info(s)->dtype);
	uint64_t e = ref->elem_start + first, end = e + n;
	char *d = dst;
	int first_err = 0;

	if (!(ref->fallback || ref->grid) || first > ref->nelems || n > ref->nelems - first ||
	    dst_cap / esize < n)
		return DSV_ERR_INVALID;
	/* which grid chunk failed, for each: only callers that narrow a
	 * failure down pass each, so the buffer is off the read path */
	dsv_errbuf *eb = each && ref->grid ? malloc(sizeof(*eb)) : NULL;
	if (!band)
		band = ref->nelems ? ref->nelems : 1; /* no bands known: one piece */
	while (e < end) {
		uint64_t stop = (e / band + 1) * band;
		dsv_chunk_ref part = *ref;
		part.elem_start = e;
		part.nelems = (stop < end ? stop : end) - e;
		dsv_errbuf_clear(eb);
		int err = part.grid ? dsv_grid_read_part(s, &part, d, eb)
				    : dsv_source_read_fallback(s, &part, d,
							       (size_t)(part.nelems * esize));
		if (each)
			each(arg, &part, err, eb && eb->code ? eb : NULL);
		if (err && !first_err)
			first_err = err;
		if (err && !each)
			return err;
		d += part.nelems * esize;
		e += part.nelems;
	}
	free(eb);
	return first_err;
}
