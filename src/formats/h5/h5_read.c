/*
 * Fallback reads of HDF5 sources: the datasets dsview cannot read with
 * pread (see h5_source.c) are read through H5Dread, under the global HDF5 lock, so
 * one at a time. Before the library decodes a chunk, the layer's guards
 * check its stored size and arm the decoders' size checks (src/formats/h5/guard.c).
 * The handles a source keeps for this live in its h5_state, owned by the
 * source and closed with it.
 */
#include <hdf5.h>

#include <stdlib.h>

#include "formats/h5/h5.h"
#include "formats/h5/h5_src.h"
#include "source/source_i.h"

/* What fallback reads need; owned by the source (s->fmt). */
typedef struct h5_state {
	hid_t file;
	hid_t dset;
	hid_t mtype;            /* little-endian type of the source dtype (dsv_h5_mem_type) */
	dsv_h5_chunk_check *cc; /* chunked fallbacks only */
} h5_state;

/* Call with the HDF5 lock held. */
static void h5_state_free_locked(h5_state *h)
{
	if (!h)
		return;
	if (h->mtype >= 0)
		H5Tclose(h->mtype);
	if (h->dset >= 0)
		H5Dclose(h->dset);
	if (h->file >= 0)
		H5Fclose(h->file);
	dsv_h5_chunk_check_free(h->cc);
	free(h);
}

static int read_fallback(const dsv_source *s, const dsv_chunk_ref *ref, void *dst, size_t dst_cap);

static void h5_state_close(void *p)
{
	if (!p)
		return;
	(void)dsv_h5_lock(); /* closing needs no driver set-up */
	h5_state_free_locked(p);
	dsv_h5_unlock();
}

int dsv_h5_keep(dsv_source *s, hid_t *file, hid_t *dset, dsv_h5_chunk_check **cc)
{
	h5_state *st = calloc(1, sizeof(*st));
	if (!st)
		return DSV_ERR_NOMEM;
	st->file = *file;
	st->dset = *dset;
	hid_t ftype = H5Dget_type(st->dset);
	st->mtype = ftype < 0 ? -1 : dsv_h5_mem_type(ftype, s->info.dtype);
	if (ftype >= 0)
		H5Tclose(ftype);
	st->cc = *cc;
	*cc = NULL;
	*file = *dset = -1;
	if (st->mtype < 0) {
		h5_state_free_locked(st);
		return DSV_ERR_INTERNAL;
	}
	s->fmt = st;
	s->fmt_close = h5_state_close;
	s->more->lib_read = read_fallback;
	return 0;
}

/*
 * Selects the C-order element range [start, start + n) of a dataspace as a
 * union of at most 2 * ndim - 1 boxes: first partial runs up to the next
 * boundary of each axis, then the largest whole blocks, then the tail.
 * Hyperslab reads walk the selection in C order, so memory gets the range
 * in order. Call with the HDF5 lock held.
 */
static int select_range(hid_t space, int ndim, const uint64_t *shape, uint64_t start, uint64_t n)
{
	uint64_t stride[DSV_MAX_DIMS], a = start, end = start + n;
	H5S_seloper_t op = H5S_SELECT_SET;

	stride[ndim - 1] = 1;
	for (int k = ndim - 2; k >= 0; k--)
		stride[k] = stride[k + 1] * shape[k + 1];
	while (a < end) {
		hsize_t off[DSV_MAX_DIMS], cnt[DSV_MAX_DIMS];
		int lvl = 0;
		/* Outermost axis whose blocks a is aligned to and that fits. */
		while (a % stride[lvl] || a + stride[lvl] > end)
			lvl++;
		uint64_t rem = a;
		for (int k = 0; k < ndim; k++) {
			off[k] = rem / stride[k];
			rem %= stride[k];
			cnt[k] = k < lvl ? 1 : shape[k];
		}
		uint64_t c = (end - a) / stride[lvl];
		if (lvl > 0 && c > shape[lvl] - off[lvl])
			c = shape[lvl] - off[lvl];
		cnt[lvl] = c;
		if (H5Sselect_hyperslab(space, op, off, NULL, cnt, NULL) < 0)
			return -1;
		op = H5S_SELECT_OR;
		a += c * stride[lvl];
	}
	return 0;
}

/*
 * The memory dataspace for elements [start, start + n): a range of whole
 * rows is one box of the file, and memory gets the same shape, (rows,
 * shape[1:]), so that the library copies each chunk's part of it as one
 * block of the same shape; any other range is the union of boxes
 * select_range makes, read into a 1-D space (element by element through
 * the selection, many times slower, but only reads of part of a row take
 * it). Call with the HDF5 lock held.
 */
static hid_t memory_space(const dsv_source *s, uint64_t start, uint64_t n)
{
	uint64_t row = s->info.row_elems;
	hsize_t dims[DSV_MAX_DIMS];
	int nd = s->info.ndim;

	if (nd < 2 || row == 0 || start % row || n % row) {
		dims[0] = n;
		return H5Screate_simple(1, dims, NULL);
	}
	dims[0] = n / row;
	for (int k = 1; k < nd; k++)
		dims[k] = s->info.shape[k];
	return H5Screate_simple(nd, dims, NULL);
}

static int read_fallback(const dsv_source *s, const dsv_chunk_ref *ref, void *dst, size_t dst_cap)
{
	const h5_state *h = s->fmt;
	uint64_t esize = dsv_dtype_size(s->info.dtype);
	hsize_t n = ref->nelems;
	hid_t fspace, mspace;
	int err = DSV_ERR_IO;

	if (!h)
		return DSV_ERR_INTERNAL;
	if (ref->elem_start > s->info.nelems || ref->nelems > s->info.nelems - ref->elem_start ||
	    (uint64_t)dst_cap / esize < ref->nelems)
		return DSV_ERR_INVALID;
	if (n == 0)
		return 0;

	(void)dsv_h5_lock(); /* the file is open: set-up was done */
	fspace = H5Dget_space(h->dset);
	if (fspace < 0)
		goto out;
	mspace = memory_space(s, ref->elem_start, n);
	if (mspace < 0)
		goto out_fspace;
	if (select_range(fspace, s->info.ndim, s->info.shape, ref->elem_start, ref->nelems) < 0)
		goto out_mspace;
	if (h->cc) {
		err = dsv_h5_check_read_chunks(h->cc, h->dset, s, s->info.row_elems,
					       ref->elem_start, ref->nelems);
		if (err)
			goto out_mspace;
	}
	err = DSV_ERR_IO;
	if (H5Dread(h->dset, h->mtype, mspace, fspace, H5P_DEFAULT, dst) >= 0)
		err = 0;
	dsv_h5_decode_disarm();
out_mspace:
	H5Sclose(mspace);
out_fspace:
	H5Sclose(fspace);
out:
	dsv_h5_unlock();
	return err;
}
