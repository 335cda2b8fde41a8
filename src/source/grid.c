/*
 * N-d chunk grids (source_i.h: grid): an array stored in chunks that are
 * boxes, not runs of whole rows (Zarr, zarr.c; HDF5 chunks that split
 * rows, h5_grid.c).
 *
 * The read path works in chunks of whole rows, so a grid source offers it
 * bands: band b is rows [b * gshape[0], (b + 1) * gshape[0]) in C order,
 * made here from the grid chunks whose first index is b. Each grid chunk
 * is decoded once per band (the cache then holds the band), its bytes
 * swapped to little-endian if stored big-endian, and the part of it inside
 * the array (edge chunks are stored whole, as Zarr does) copied to its
 * place: runs along the last axis for C-order chunks, element by element
 * for Fortran-order ones. A chunk never written reads as the fill value.
 * A band that is exactly one C-order chunk (little-endian, or bytes) is
 * decoded in place. Before a band is made, the format's grid_begin may
 * ask the kernel for all its chunks at once, so their reads overlap; the
 * band's dsv_grid_io carries what the format read for the band between
 * its chunks (h5_grid.c reads file-adjacent chunks with one pread).
 */
#include <stdio.h>
#include <string.h>

#include "common/tlsbuf.h"
#include "source/source_i.h"

/* The calling thread's last grid chunk that failed (dsv_source_grid_failure). */
static _Thread_local char failed[4096 + 1024];

void dsv_grid_note_failure(const char *what)
{
	snprintf(failed, sizeof(failed), "%s", what);
}

const char *dsv_source_grid_failure(void)
{
	return failed;
}

/* n elements of es bytes, each the fill value (a chunk never written). */
static void fill(void *dst, uint64_t n, const unsigned char *value, size_t es)
{
	for (uint64_t i = 0; i < n; i++)
		memcpy((unsigned char *)dst + i * es, value, es);
}

static void swap_elems(unsigned char *p, uint64_t n, size_t es)
{
	for (uint64_t i = 0; i < n; i++, p += es)
		for (size_t a = 0, b = es - 1; a < b; a++, b--) {
			unsigned char t = p[a];
			p[a] = p[b];
			p[b] = t;
		}
}

/* Copies the part of grid chunk idx inside the array from chunk to band. */
static void scatter(const dsv_source *s, const uint64_t *idx, const unsigned char *chunk,
		    unsigned char *band, uint64_t band_rows)
{
	const dsv_source_info *in = &s->info;
	size_t es = dsv_dtype_size(in->dtype);
	int nd = in->ndim, last = nd - 1;
	uint64_t len[DSV_MAX_DIMS], start[DSV_MAX_DIMS], cs[DSV_MAX_DIMS], ds[DSV_MAX_DIMS];
	uint64_t at[DSV_MAX_DIMS] = { 0 };

	for (int k = 0; k < nd; k++) {
		start[k] = k ? idx[k] * s->gshape[k] : 0;
		uint64_t extent = k ? in->shape[k] : band_rows;
		len[k] = extent - start[k] < s->gshape[k] ? extent - start[k] : s->gshape[k];
	}
	/* strides in elements: the chunk's (C or Fortran order), the band's */
	for (int k = last; k >= 0; k--) {
		ds[k] = k == last ? 1 : ds[k + 1] * in->shape[k + 1];
		if (!s->g_fortran)
			cs[k] = k == last ? 1 : cs[k + 1] * s->gshape[k + 1];
	}
	for (int k = 0; s->g_fortran && k < nd; k++)
		cs[k] = k ? cs[k - 1] * s->gshape[k - 1] : 1;
	for (;;) {
		uint64_t so = 0, dof = start[last];
		for (int k = 0; k < last; k++) {
			so += at[k] * cs[k];
			dof += (at[k] + start[k]) * ds[k];
		}
		if (!s->g_fortran) {
			memcpy(band + dof * es, chunk + so * es, (size_t)(len[last] * es));
		} else {
			for (uint64_t i = 0; i < len[last]; i++)
				memcpy(band + (dof + i) * es, chunk + (so + i * cs[last]) * es, es);
		}
		int k = last - 1;
		for (; k >= 0; k--) {
			if (++at[k] < len[k])
				break;
			at[k] = 0;
		}
		if (k < 0)
			return;
	}
}

int dsv_grid_read_band(const dsv_source *s, const dsv_chunk_ref *ref, void *dst, size_t dst_cap)
{
	const dsv_source_info *in = &s->info;
	size_t es = dsv_dtype_size(in->dtype);
	int nd = in->ndim;
	uint64_t celems = 1, idx[DSV_MAX_DIMS] = { 0 };

	if (ref->nelems * es > dst_cap || !s->grid_chunk)
		return DSV_ERR_INVALID;
	for (int k = 0; k < nd; k++)
		celems *= s->gshape[k];
	size_t csize = (size_t)(celems * es);
	unsigned char *chunk = dsv_tls_buf(DSV_TLS_GRID, csize);
	if (!chunk)
		return DSV_ERR_NOMEM;
	uint64_t band_rows = nd ? ref->nelems / in->row_elems : 1;
	if (nd)
		idx[0] = ref->index;
	dsv_grid_io io = { .band = ref->index };
	if (s->grid_begin)
		s->grid_begin(s, &io);
	/* One C-order chunk that is exactly the band (whole rows, not the
	 * last band's short chunk): decoded in place, no copy. */
	int whole = nd && !s->g_fortran && band_rows == s->gshape[0] &&
		    (!s->g_big_endian || es == 1);
	for (int k = 1; whole && k < nd; k++)
		whole = s->gshape[k] == in->shape[k];
	if (whole) {
		int err = s->grid_chunk(s, &io, idx, dst, csize);
		if (err == DSV_ERR_NOTFOUND)
			fill(dst, celems, s->g_fill, es);
		return err == DSV_ERR_NOTFOUND ? 0 : err;
	}
	for (;;) {
		int err = s->grid_chunk(s, &io, idx, chunk, csize);
		if (err == DSV_ERR_NOTFOUND) {
			fill(chunk, celems, s->g_fill, es);
		} else if (err) {
			return err;
		} else if (s->g_big_endian && es > 1) {
			swap_elems(chunk, celems, es);
		}
		if (nd == 0) {
			memcpy(dst, chunk, es);
			return 0;
		}
		scatter(s, idx, chunk, dst, band_rows);
		int k = nd - 1;
		for (; k >= 1; k--) {
			if (++idx[k] < s->gcount[k])
				break;
			idx[k] = 0;
		}
		if (k < 1)
			return 0;
	}
}
