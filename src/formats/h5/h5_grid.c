/*
 * HDF5 datasets whose chunks split rows ((1, 64, 64) over (N, 256, 256)
 * volumes, (1000, 16) over (N, 129) channels) with filters dsview decodes
 * itself: served through the N-d grid (grid.c) instead of the library
 * fallback. At open, every chunk of the grid is located as row chunks are
 * (dsv_h5_locate_chunks, h5_chunks.c) into s->more->chunk_off/chunk_size/
 * chunk_mask, indexed by the chunk's grid position in C order. A band's chunks are read in runs:
 * chunks next to each other in the file (HDF5 writes a dataset's chunks in
 * C order of their grid positions, its index nodes among them) are read
 * with one pread into the band's dsv_grid_io, and each is then decoded
 * from there with dsv_source_decode_stored (Fletcher32, codec, size
 * checks), outside the HDF5 lock, as row chunks are. The kernel is asked
 * for a band's later runs before the first is read.
 *
 * A chunk never written reads as the dataset's fill value, as the library
 * reads it: the default (zeros) or the one the file defines, taken at open
 * in the stored type (no conversion: the grid serves only types stored as
 * they are served). Datasets whose never-written chunks the library would
 * not fill (fill time "never", or no fill value defined: it leaves the
 * reader's buffer as it was), a chunk whose stored size is impossible or
 * that the library will not locate, or bands larger than the read path
 * takes stay on the fallback, with the reason.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/arith.h"
#include "common/tlsbuf.h"
#include "formats/h5/h5_src.h"

#define GRID_MAX_CHUNKS (1ull << 28)

/* Chunks at most this far apart in the file are read with one pread, the
 * bytes between them read and passed over: HDF5 puts its chunk index's
 * B-tree nodes (~3 KiB) among the chunks, and a 64 KiB read costs about
 * what two 4 KiB ones do. */
#define RUN_GAP (64u << 10)
/* A read of several chunks spans at most this (one chunk: any size). */
#define RUN_MAX (4u << 20)

/* The grid chunks of band b: linear indices [*first, *end). */
static void band_chunks(const dsv_source *s, uint64_t b, uint64_t *first, uint64_t *end)
{
	uint64_t per = 1;
	for (int k = 1; k < s->info.ndim; k++)
		per *= s->more->gcount[k];
	uint64_t rows_end = (b + 1) * s->more->g_band;
	*first = b * s->more->g_band * per;
	*end = (rows_end < s->more->gcount[0] ? rows_end : s->more->gcount[0]) * per;
}

/* The first chunk from lin on (before end) that the file stores, or end. */
static uint64_t next_stored(const dsv_source *s, uint64_t lin, uint64_t end)
{
	while (lin < end && s->more->chunk_off[lin] == DSV_SRC_UNALLOCATED)
		lin++;
	return lin;
}

/* The end of the run of chunks read with one pread from stored chunk lin
 * on (before end), chunks never written among them passed over: each next
 * one starts at most RUN_GAP after the one before it ends, the run spans
 * at most RUN_MAX bytes and lies inside the file as it was at open (a
 * chunk past its end is read alone, so its error names it). *stop: the
 * file offset where the run's bytes end. */
static uint64_t run_end(const dsv_source *s, uint64_t lin, uint64_t end, uint64_t *stop)
{
	uint64_t off = s->more->chunk_off[lin];
	*stop = off + s->more->chunk_size[lin];
	for (lin = next_stored(s, lin + 1, end); lin < end; lin = next_stored(s, lin + 1, end)) {
		uint64_t o = s->more->chunk_off[lin], e = o + s->more->chunk_size[lin];
		if (o < *stop || o - *stop > RUN_GAP || e - off > RUN_MAX || e > s->file_size)
			break;
		*stop = e;
	}
	return lin;
}

/* Makes io hold the stored bytes of the run of chunks from stored chunk
 * lin on. */
static int hold_run(const dsv_source *s, dsv_grid_io *io, uint64_t lin)
{
	uint64_t first, end, off = s->more->chunk_off[lin], stop_off;
	band_chunks(s, io->band, &first, &end);
	uint64_t stop = run_end(s, lin, end, &stop_off), len = stop_off - off;
	unsigned char *buf = dsv_tls_buf(DSV_TLS_STORED, (size_t)len);
	int err;

	io->held = NULL;
	if (!buf)
		return DSV_ERR_NOMEM;
	if (len > s->file_size || off > s->file_size - len)
		return DSV_ERR_TRUNCATED;
	if ((err = dsv_source_pread(s, buf, (size_t)len, off)))
		return err;
	*io = (dsv_grid_io){ .band = io->band,
			     .eb = io->eb,
			     .held = buf,
			     .held_off = off,
			     .held_len = len,
			     .held_first = lin,
			     .held_end = stop };
	return 0;
}

static int h5_grid_chunk(const dsv_source *s, dsv_grid_io *io, const uint64_t *idx, void *dst,
			 size_t size)
{
	uint64_t lin = 0, esize = dsv_dtype_size(s->info.dtype);
	for (int k = 0; k < s->info.ndim; k++)
		lin = lin * s->more->gcount[k] + idx[k];
	if (s->more->chunk_off[lin] == DSV_SRC_UNALLOCATED)
		return DSV_ERR_NOTFOUND; /* grid.c fills it */
	uint32_t mask = s->more->chunk_mask[lin];
	dsv_chunk_ref r = {
		.index = lin,
		.nelems = size / esize,
		.raw_size = size,
		.offset = s->more->chunk_off[lin],
		.stored_size = s->more->chunk_size[lin],
		.codec = !(mask & (1u << s->more->codec_filter_bit)) ? s->codec : DSV_CODEC_NONE,
		.fletcher32 = s->fletcher32 && !(mask & (1u << s->more->fl32_filter_bit)),
		.shuffle = !(mask & (1u << s->more->shuffle_filter_bit)) ? s->shuffle : 0,
	};
	int err = 0;
	if (!io->held || lin < io->held_first || lin >= io->held_end)
		err = hold_run(s, io, lin);
	if (!err)
		err = dsv_source_decode_stored(s, &r, io->held + (r.offset - io->held_off), dst,
					       size);
	if (err) {
		char pos[256];
		size_t n = 0;
		for (int k = 0; k < s->info.ndim && n < sizeof(pos); k++)
			n += (size_t)snprintf(pos + n, sizeof(pos) - n, "%s%llu", k ? ", " : "",
					      (unsigned long long)idx[k]);
		char where[sizeof(pos) + 16];
		snprintf(where, sizeof(where), "chunk (%s)", pos);
		dsv_grid_fault(io, err, NULL, where, "%s, %llu bytes at offset %llu", where,
			       (unsigned long long)r.stored_size, (unsigned long long)r.offset);
	}
	return err;
}

/* The band's runs after its first, which is read at once: asked of the
 * kernel now, so their disk reads overlap the first's. */
static void h5_grid_begin(const dsv_source *s, dsv_grid_io *io)
{
	uint64_t first, end, stop_off, i;
	int fd = s->net ? -1 : dsv_source_fd_get(s); /* an object has no page cache to ask */

	if (fd < 0)
		return;
	band_chunks(s, io->band, &first, &end);
	if ((i = next_stored(s, first, end)) < end)
		i = next_stored(s, run_end(s, i, end, &stop_off), end);
	while (i < end) {
		uint64_t off = s->more->chunk_off[i], next = run_end(s, i, end, &stop_off);
		(void)posix_fadvise(fd, (off_t)off, (off_t)(stop_off - off), POSIX_FADV_WILLNEED);
		i = next_stored(s, next, end);
	}
	dsv_source_fd_put(s);
}

/* The dataset's fill value, one element as stored, into s->more->g_fill: what
 * the library reads for a chunk never written. @return 0, or
 * DSV_ERR_UNSUPPORTED when the library fills no such chunk (fill time
 * "never", or no fill value defined: the reader's buffer is left as it
 * was) or will not say its value. */
static int fill_value(dsv_source *s, hid_t dcpl, hid_t ftype)
{
	H5D_fill_value_t defined;
	H5D_fill_time_t when;
	if (H5Pfill_value_defined(dcpl, &defined) < 0 || H5Pget_fill_time(dcpl, &when) < 0 ||
	    when == H5D_FILL_TIME_NEVER ||
	    (defined != H5D_FILL_VALUE_DEFAULT && defined != H5D_FILL_VALUE_USER_DEFINED) ||
	    H5Tget_size(ftype) != dsv_dtype_size(s->info.dtype) ||
	    H5Tget_size(ftype) > sizeof(s->more->g_fill) ||
	    H5Pget_fill_value(dcpl, ftype, s->more->g_fill) < 0)
		return DSV_ERR_UNSUPPORTED;
	return 0;
}

void dsv_h5_drop_chunk_map(dsv_source *s)
{
	free(s->more->chunk_off);
	free(s->more->chunk_size);
	free(s->more->chunk_mask);
	s->more->chunk_off = NULL;
	s->more->chunk_size = NULL;
	s->more->chunk_mask = NULL;
	s->info.stored_bytes = 0;
}

int dsv_h5_open_grid(dsv_h5_open *o, const hsize_t *cdims, int codec, int fl32)
{
	dsv_source *s = o->s;
	int nd = s->info.ndim, err;
	uint64_t esize = dsv_dtype_size(s->info.dtype), raw = esize, band, n = 1, unwritten = 0;
	dsv_h5_bad_chunk bad = { 0 };

	if (dsv_source_dims(s))
		return dsv_errf(o->eb, DSV_ERR_NOMEM, "out of memory");
	for (int k = 0; k < nd; k++) {
		s->more->gshape[k] = cdims[k];
		s->more->gcount[k] = s->info.shape[k] / cdims[k] +
				     (s->info.shape[k] % cdims[k] != 0);
		if (dsv_mul_u64(raw, cdims[k], &raw) || dsv_mul_u64(n, s->more->gcount[k], &n))
			return dsv_errf_at(o->eb, DSV_ERR_OVERFLOW, s->path, s->dataset,
					   "too many chunks");
	}
	if (dsv_mul_u64(cdims[0], s->info.row_elems, &band) || dsv_mul_u64(band, esize, &band) ||
	    band > DSV_GRID_BAND_MAX || raw > UINT32_MAX) {
		dsv_source_why(s, "chunks split rows; a band of %llu rows is too large",
			       (unsigned long long)cdims[0]);
		return DSV_ERR_UNSUPPORTED;
	}
	if (n > GRID_MAX_CHUNKS)
		return dsv_errf_at(o->eb, DSV_ERR_OVERFLOW, s->path, s->dataset,
				   "too many chunks (%llu)", (unsigned long long)n);
	if (s->info.nelems == 0)
		n = 0;
	err = dsv_h5_locate_chunks(s, o->dset, o->space, cdims, s->more->gcount, n, raw, codec,
				   fl32, fill_value(s, o->dcpl, o->ftype) == 0, &unwritten, &bad,
				   o->eb);
	if (err == DSV_ERR_NOTFOUND) {
		dsv_source_why(s, "chunks split rows; some never written, and HDF5 fills them "
				  "with no value");
		err = DSV_ERR_UNSUPPORTED;
	} else if (err == DSV_ERR_CORRUPT) {
		/* The library may still read the rest, and verify then names the
		 * chunk: as the row-chunked path does with such files, leave it
		 * to the fallback rather than refuse the whole dataset. */
		dsv_source_why(s,
			       "chunks split rows; chunk %llu cannot be read directly "
			       "(%llu bytes stored, %llu raw)",
			       (unsigned long long)bad.index, (unsigned long long)bad.size,
			       (unsigned long long)raw);
		err = DSV_ERR_UNSUPPORTED;
	} else if (err == DSV_ERR_UNSUPPORTED) {
		dsv_source_why(s, "chunks split rows; %llu indexed chunks outside the extent",
			       (unsigned long long)bad.beyond);
	}
	if (err) {
		dsv_h5_drop_chunk_map(s);
		return err;
	}
	s->grid = 1;
	s->chunked = 1;
	s->more->grid_chunk = h5_grid_chunk;
	s->more->grid_begin = h5_grid_begin;
	dsv_grid_set_bands(s);
	char tail[96] = "";
	if (unwritten)
		snprintf(tail, sizeof(tail), "; %llu of %llu chunks never written (fill value)",
			 (unsigned long long)unwritten, (unsigned long long)n);
	dsv_source_why(s, "chunks split rows: bands of %llu row%s%s",
		       (unsigned long long)s->more->chunk_rows, s->more->chunk_rows == 1 ? "" : "s",
		       tail);
	return 0;
}
