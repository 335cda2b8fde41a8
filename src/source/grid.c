/*
 * N-d chunk grids (source_i.h: grid): an array stored in chunks that are
 * boxes, not runs of whole rows (Zarr, zarr.c; HDF5 chunks that split
 * rows, h5_grid.c).
 *
 * The read path works in chunks of whole rows, so a grid source offers it
 * bands: band b is chunk-rows [b * g_band, (b + 1) * g_band), rows
 * [b * g_band * gshape[0], ...) in C order, made here from the grid chunks
 * whose first index is among them. g_band groups small chunk-rows into
 * bands of about DSVIEW_GRID_BAND_KB (dsv_grid_set_bands). Each grid chunk
 * is decoded once per band (the cache then holds the band), its bytes
 * swapped to little-endian if stored big-endian, and the part of it inside
 * the array (edge chunks are stored whole, as Zarr does) copied to its
 * place: runs along the last axis for C-order chunks, element by element
 * for Fortran-order ones. A chunk never written reads as the fill value.
 * A C-order chunk of whole rows (little-endian, or bytes) is decoded in
 * place, straight into its band. Before a band is made, the format's grid_begin may
 * ask the kernel for all its chunks at once, so their reads overlap; the
 * band's dsv_grid_io carries what the format read for the band between
 * its chunks (h5_grid.c reads file-adjacent chunks with one pread).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/knobs.h"
#include "common/tlsbuf.h"
#include "source/source_i.h"

void dsv_grid_fault(dsv_grid_io *io, int err, const char *file, const char *where, const char *fmt,
		    ...)
{
	dsv_errbuf *eb = io->eb;
	va_list ap;

	if (!eb)
		return;
	dsv_errf(eb, err, "%s", "");
	snprintf(eb->file, sizeof(eb->file), "%s", file ? file : "");
	snprintf(eb->where, sizeof(eb->where), "%s", where ? where : "");
	va_start(ap, fmt);
	vsnprintf(eb->reason, sizeof(eb->reason), fmt, ap);
	va_end(ap);
	snprintf(eb->msg, sizeof(eb->msg), "%s", eb->reason);
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

/* n runs of run bytes, cstep apart in the chunk and dstep in the band.
 * Runs of one element of 1, 2, 4 or 8 bytes (a chunk one element wide on
 * the last axis) are copied as loads and stores, not a memcpy call each. */
static void copy_runs(unsigned char *d, size_t dstep, const unsigned char *c, size_t cstep,
		      size_t run, uint64_t n)
{
	uint64_t r;
	switch (run) {
	case 1:
		for (r = 0; r < n; r++)
			d[r * dstep] = c[r * cstep];
		return;
	case 2:
		for (r = 0; r < n; r++)
			memcpy(d + r * dstep, c + r * cstep, 2);
		return;
	case 4:
		for (r = 0; r < n; r++)
			memcpy(d + r * dstep, c + r * cstep, 4);
		return;
	case 8:
		for (r = 0; r < n; r++)
			memcpy(d + r * dstep, c + r * cstep, 8);
		return;
	default:
		for (r = 0; r < n; r++)
			memcpy(d + r * dstep, c + r * cstep, run);
	}
}

/* Copies the part of grid chunk idx inside the array from chunk to band,
 * whose row row0 is the chunk's first. */
static void scatter(const dsv_source *s, const uint64_t *idx, const unsigned char *chunk,
		    unsigned char *band, uint64_t band_rows, uint64_t row0)
{
	const dsv_source_info *in = &s->info;
	size_t es = dsv_dtype_size(in->dtype);
	int nd = in->ndim, last = nd - 1;
	uint64_t len[DSV_MAX_DIMS], start[DSV_MAX_DIMS], cs[DSV_MAX_DIMS], ds[DSV_MAX_DIMS];
	uint64_t at[DSV_MAX_DIMS] = { 0 };

	for (int k = 0; k < nd; k++) {
		start[k] = k ? idx[k] * s->more->gshape[k] : row0;
		uint64_t extent = k ? in->shape[k] : band_rows;
		len[k] = extent - start[k] < s->more->gshape[k] ? extent - start[k]
								: s->more->gshape[k];
	}
	/* strides in elements: the chunk's (C or Fortran order), the band's */
	for (int k = last; k >= 0; k--) {
		ds[k] = k == last ? 1 : ds[k + 1] * in->shape[k + 1];
		if (!s->more->g_fortran)
			cs[k] = k == last ? 1 : cs[k + 1] * s->more->gshape[k + 1];
	}
	for (int k = 0; s->more->g_fortran && k < nd; k++)
		cs[k] = k ? cs[k - 1] * s->more->gshape[k - 1] : 1;
	/* one pass of the loop: the runs along the last axis at every index
	 * of the one before it (mid), their starts a fixed step apart */
	int mid = last - 1;
	uint64_t n = mid >= 0 ? len[mid] : 1;
	size_t cstep = mid >= 0 ? (size_t)(cs[mid] * es) : 0;
	size_t dstep = mid >= 0 ? (size_t)(ds[mid] * es) : 0, run = (size_t)(len[last] * es);
	for (;;) {
		uint64_t so = 0, dof = start[last];
		for (int k = 0; k <= mid; k++) {
			so += at[k] * cs[k];
			dof += (at[k] + start[k]) * ds[k];
		}
		const unsigned char *c = chunk + so * es;
		unsigned char *d = band + dof * es;
		if (!s->more->g_fortran)
			copy_runs(d, dstep, c, cstep, run, n);
		for (uint64_t r = 0; s->more->g_fortran && r < n; r++, c += cstep, d += dstep)
			for (uint64_t i = 0; i < len[last]; i++)
				memcpy(d + i * es, c + i * cs[last] * es, es);
		int k = mid - 1;
		for (; k >= 0; k--) {
			if (++at[k] < len[k])
				break;
			at[k] = 0;
		}
		if (k < 0)
			return;
	}
}

void dsv_grid_set_bands(dsv_source *s)
{
	dsv_source_info *in = &s->info;
	uint64_t esize = dsv_dtype_size(in->dtype);
	uint64_t target = (uint64_t)dsv_knob_int(DSV_KNOB_GRID_BAND_KB) << 10;

	if (in->ndim == 0) { /* one element, one chunk */
		s->more->g_band = 1;
		s->more->chunk_rows = 1;
		in->chunk_elems = 1;
		in->nchunks = 1;
		s->more->chunk_raw_size = esize;
		return;
	}
	uint64_t row_bytes = s->more->gshape[0] * in->row_elems * esize;
	s->more->g_band = row_bytes && row_bytes < target ? target / row_bytes : 1;
	if (s->more->g_band > s->more->gcount[0])
		s->more->g_band = s->more->gcount[0] ? s->more->gcount[0] : 1;
	s->more->chunk_rows = s->more->g_band * s->more->gshape[0];
	in->chunk_elems = s->more->chunk_rows * in->row_elems;
	in->nchunks = in->nelems ? (s->more->gcount[0] + s->more->g_band - 1) / s->more->g_band : 0;
	s->more->chunk_raw_size = in->chunk_elems * esize;
}

/* Grid chunk idx into chunk (csize bytes, celems elements): decoded, a
 * chunk never written filled, little-endian. */
static int load(const dsv_source *s, dsv_grid_io *io, const uint64_t *idx, unsigned char *chunk,
		size_t csize, uint64_t celems)
{
	size_t es = dsv_dtype_size(s->info.dtype);
	int err = s->more->grid_chunk(s, io, idx, chunk, csize);
	if (err == DSV_ERR_NOTFOUND)
		fill(chunk, celems, s->more->g_fill, es);
	else if (err)
		return err;
	else if (s->more->g_big_endian && es > 1)
		swap_elems(chunk, celems, es);
	return 0;
}

/* Chunk-rows [c0, c1) (c0 < c1 <= gcount[0]) into dst, their rows in C
 * order, each grid chunk decoded once. */
static int read_chunk_rows(const dsv_source *s, dsv_grid_io *io, uint64_t c0, uint64_t c1,
			   void *dst)
{
	const dsv_source_info *in = &s->info;
	size_t es = dsv_dtype_size(in->dtype);
	int nd = in->ndim, err;
	uint64_t celems = 1, idx[DSV_MAX_DIMS] = { 0 };

	for (int k = 0; k < nd; k++)
		celems *= s->more->gshape[k];
	size_t csize = (size_t)(celems * es);
	unsigned char *chunk = dsv_tls_buf(DSV_TLS_GRID, csize);
	if (!chunk)
		return DSV_ERR_NOMEM;
	if (nd == 0) {
		if ((err = load(s, io, idx, chunk, csize, celems)))
			return err;
		memcpy(dst, chunk, es);
		return 0;
	}
	uint64_t rows = c1 * s->more->gshape[0] < in->nrows ? c1 * s->more->gshape[0] : in->nrows;
	uint64_t band_rows = rows - c0 * s->more->gshape[0];
	uint64_t slab_bytes = s->more->gshape[0] * in->row_elems * es;
	/* A C-order chunk of whole rows (little-endian, or bytes) is a slab
	 * of the band: decoded in place, no copy, unless it is the short last
	 * one (stored whole, it holds rows past the array's end). */
	int slab = !s->more->g_fortran && (!s->more->g_big_endian || es == 1);
	for (int k = 1; slab && k < nd; k++)
		slab = s->more->gshape[k] == in->shape[k];
	idx[0] = c0;
	for (;;) {
		uint64_t row0 = (idx[0] - c0) * s->more->gshape[0];
		if (slab && row0 + s->more->gshape[0] <= band_rows) {
			unsigned char *at = (unsigned char *)dst + (idx[0] - c0) * slab_bytes;
			err = s->more->grid_chunk(s, io, idx, at, csize);
			if (err == DSV_ERR_NOTFOUND)
				fill(at, celems, s->more->g_fill, es);
			else if (err)
				return err;
		} else {
			if ((err = load(s, io, idx, chunk, csize, celems)))
				return err;
			scatter(s, idx, chunk, dst, band_rows, row0);
		}
		int k = nd - 1;
		for (; k >= 1; k--) {
			if (++idx[k] < s->more->gcount[k])
				break;
			idx[k] = 0;
		}
		if (k < 1 && ++idx[0] == c1)
			return 0;
	}
}

int dsv_grid_read_band(const dsv_source *s, const dsv_chunk_ref *ref, unsigned flags, void *dst,
		       size_t dst_cap, dsv_errbuf *eb)
{
	size_t es = dsv_dtype_size(s->info.dtype);
	uint64_t c0 = ref->index * s->more->g_band, c1 = c0 + s->more->g_band;

	if (ref->nelems * es > dst_cap || !s->more->grid_chunk)
		return DSV_ERR_INVALID;
	dsv_grid_io io = { .band = ref->index, .flags = flags, .whole = 1, .eb = eb };
	if (s->more->grid_begin)
		s->more->grid_begin(s, &io);
	return read_chunk_rows(s, &io, c0, c1 < s->more->gcount[0] ? c1 : s->more->gcount[0], dst);
}

int dsv_grid_read_part(const dsv_source *s, const dsv_chunk_ref *part, void *dst, dsv_errbuf *eb)
{
	const dsv_source_info *in = &s->info;
	size_t es = dsv_dtype_size(in->dtype);
	uint64_t per = s->more->gshape[0] * in->row_elems; /* elements a chunk-row */
	uint64_t c = per ? part->elem_start / per : 0;

	if (!s->more->grid_chunk || in->ndim == 0 || !per || c >= s->more->gcount[0] ||
	    part->elem_start + part->nelems > (c + 1) * per ||
	    part->elem_start + part->nelems > in->nelems)
		return DSV_ERR_INVALID;
	unsigned char *rows = dsv_tls_buf(DSV_TLS_GRID_PART, (size_t)(per * es));
	if (!rows)
		return DSV_ERR_NOMEM;
	dsv_grid_io io = { .band = c / s->more->g_band, .eb = eb }; /* no grid_begin */
	int err = read_chunk_rows(s, &io, c, c + 1, rows);
	if (!err)
		memcpy(dst, rows + (part->elem_start - c * per) * es, (size_t)(part->nelems * es));
	return err;
}
