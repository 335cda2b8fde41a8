/*
 * HDF5 dataset sources: opening one.
 *
 * At open (mount) time we ask the HDF5 library where the bytes are, then
 * mostly stop using it: contiguous datasets become a flat run at
 * data_offset, and chunked datasets (h5_chunks.c) whose filters dsview
 * decodes itself become a chunk map (offset, size, filter mask per chunk)
 * that source.c reads with pread from any thread, in whole rows or as an
 * N-d grid (h5_grid.c). Everything else the library can decode (gzip,
 * shuffle, big-endian types, compact layout, data never written outside
 * a grid) is read through H5Dread (h5_read.c): kind DSV_SRC_H5_FALLBACK,
 * serialised. The library decodes LZ4, Zstandard, LZF, Blosc and
 * bitshuffle there with dsview's own codecs, registered in-process
 * (src/formats/h5/decode.c); plugins are never loaded.
 *
 * The HDF5 layer below (src/formats/h5/h5.h) holds what this shares with `info`
 * and pack: the one global lock every HDF5 call runs under (no other lock
 * is taken while it is held), the read-only driver every file is opened
 * through and the chunk locator built on it (a chunk map costs one index
 * lookup per chunk: src/formats/h5/driver.c says why the library's own chunk-info
 * calls will not do), the fork probe that meets a crashing file in a child
 * first, the link walk, and the guards on chunks the library decodes.
 *
 * Trust: the file is untrusted. Dynamic filter plugins are never loaded
 * (a file must not choose code to run), external links are never followed
 * and external storage is refused (it could point at any file on the
 * machine); a virtual dataset is served only as its sources, each opened
 * here as a source of its own (h5_vds.c), and every chunk address and size the library
 * reports is checked before it is used.
 *
 * Fork: sources are opened before the daemon forks; the child inherits the
 * library state and its file descriptors. That is fine for the library as
 * long as the parent leaves with _exit() and closes nothing.
 */
/* HDF5 1.12 renamed H5Lget_info/H5Lvisit's structs; ask for the 1.10
 * names so this file also builds against 1.12. */
#ifndef H5_USE_110_API
#define H5_USE_110_API
#endif
#include <hdf5.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/arith.h"
#include "dsview/source.h"
#include "formats/h5/h5.h"
#include "formats/h5/h5_src.h"
#include "net/net.h"
#include "source/source_i.h"

/* Sanity cap on what a file may ask of us before we allocate. */
#define H5_MAX_PATH 4096
/* Opens of a file that keeps being replaced before we give up. */
#define H5_OPEN_TRIES 3
/* A fallback chunk is aligned to the file's own chunk bands when a band is
 * at most this big, so one dsview chunk never decodes an HDF5 chunk twice. */
#define H5_MAX_BAND_BYTES (16u << 20)

/* Flat element ranges for a fallback source, aligned to the file's chunk
 * bands along axis 0 when those are of reasonable size. */
static void fallback_chunks(dsv_source *s, hsize_t band_rows)
{
	uint64_t esize = dsv_dtype_size(s->info.dtype), band, band_bytes;

	dsv_source_flat_chunks(s, DSV_FALLBACK_CHUNK_BYTES);
	if (!band_rows || !s->info.row_elems || dsv_mul_u64(band_rows, s->info.row_elems, &band))
		return;
	s->more->band_elems = band;
	if (s->info.chunk_elems % s->info.row_elems || dsv_mul_u64(band, esize, &band_bytes) ||
	    band_bytes > H5_MAX_BAND_BYTES)
		return;
	uint64_t k = (s->info.chunk_elems + band / 2) / band;
	s->info.chunk_elems = (k ? k : 1) * band;
	s->info.nchunks = (s->info.nelems + s->info.chunk_elems - 1) / s->info.chunk_elems;
}

/* Opens path for pread (s->fd) and for the library (o->file, o->lapl):
 * both must be one file (device and inode), else both are opened again,
 * since a file renamed over path in between (`dsview pack --force` of
 * the same output) would get the new file's chunk map applied to the
 * old file's bytes. *locked is set once the HDF5 lock is taken: from
 * then on, on success or not, the caller holds it. */
static int open_file(dsv_h5_open *o, const char *path, int *locked, dsv_errbuf *eb)
{
	dsv_source *s = o->s;
	int err;

	for (int tries = 1;; tries++) {
		/* Our own descriptor first: it gives the clearest "no such file". */
		err = dsv_source_open_file(s, eb);
		if (!err)
			err = dsv_h5_probe(path, dsv_h5_probe_all, eb);
		if (err)
			return err;

		*locked = 1;
		o->lapl = dsv_h5_lock() < 0 ? -1 : dsv_h5_make_lapl(H5P_LINK_ACCESS);
		if (o->lapl < 0)
			return dsv_errf_at(eb, DSV_ERR_INTERNAL, path, NULL, "HDF5 setup failed");
		o->file = H5Fopen(path, H5F_ACC_RDONLY, dsv_h5_ro_fapl());
		if (o->file < 0)
			return dsv_h5_open_failed(path, eb);
		if (s->net) {
			err = dsv_h5_same_file(o->file, -1, s->net);
		} else {
			int fd = dsv_source_fd_get(s), e = errno;
			if (fd < 0)
				return dsv_errf_at(eb, DSV_ERR_IO, path, NULL,
						   "cannot open it again to check it is the file "
						   "HDF5 opened: %s%s",
						   strerror(e), dsv_source_open_hint(e));
			err = dsv_h5_same_file(o->file, fd, NULL);
			dsv_source_fd_put(s);
		}
		if (err == 1)
			return 0;
		if (err < 0)
			return dsv_errf_at(eb, err, path, NULL,
					   "cannot tell which file HDF5 opened");
		if (tries == H5_OPEN_TRIES)
			return dsv_errf_at(eb, DSV_ERR_IO, path, NULL,
					   "the file was replaced while it was being opened "
					   "(%d times); try again",
					   tries);
		H5Fclose(o->file);
		H5Pclose(o->lapl);
		o->file = o->lapl = -1;
		dsv_h5_unlock();
		*locked = 0;
		dsv_source_fd_close(s);
		dsv_net_close(s->net);
		s->net = NULL;
	}
}

/* The dataset dname of the open file, with its property list, type and
 * dataspace; no link on the way may leave the file. */
static int open_dataset(dsv_h5_open *o, const char *path, const char *dname, dsv_errbuf *eb)
{
	int err = dsv_h5_check_links(o->file, o->lapl, o->s->path, dname, eb);
	if (err)
		return err;
	o->dset = H5Oopen(o->file, dname, o->lapl);
	if (o->dset < 0)
		return dsv_errf_at(eb, DSV_ERR_NOTFOUND, path, dname, "cannot open");
	if (H5Iget_type(o->dset) != H5I_DATASET)
		return dsv_errf_at(eb, DSV_ERR_INVALID, path, dname, "not a dataset");
	o->dcpl = H5Dget_create_plist(o->dset);
	o->ftype = H5Dget_type(o->dset);
	o->space = H5Dget_space(o->dset);
	if (o->dcpl < 0 || o->ftype < 0 || o->space < 0)
		return dsv_errf_at(eb, DSV_ERR_FORMAT, path, dname, "unreadable dataset header");
	return 0;
}

/* Refusals come first: they hold whatever the type or layout. Then the
 * element type (s->info.dtype, o->conv). */
static int check_dataset(dsv_h5_open *o, H5D_layout_t layout, int vds_ok, const char *path,
			 const char *dname, dsv_errbuf *eb)
{
	dsv_errbuf type;

	if (layout == H5D_VIRTUAL && !vds_ok)
		return dsv_errf_at(eb, DSV_ERR_UNSUPPORTED, path, dname,
				   "virtual dataset: a mount serves it (its source datasets, "
				   "concatenated); here, name one of its sources");
	if (H5Pget_external_count(o->dcpl) != 0)
		return dsv_errf_at(eb, DSV_ERR_UNSUPPORTED, path, dname,
				   "external storage refused (the data lives in other files)");
	if (dsv_h5_classify_type(o->ftype, &o->s->info.dtype, &o->conv, o->conv_why,
				 sizeof(o->conv_why), &type))
		return dsv_errf_at(eb, DSV_ERR_UNSUPPORTED, path, dname,
				   "unsupported element type %s (dsview serves integers of 1 "
				   "to 8 bytes, enum and bitfield as their integer, float16, "
				   "float32, float64)",
				   type.reason);
	return 0;
}

/* The dataset's shape (o->dims, s->info) and attributes. */
static int read_shape(dsv_h5_open *o, const char *path, const char *dname, dsv_errbuf *eb)
{
	dsv_source *s = o->s;
	uint64_t shape[DSV_MAX_DIMS];
	int ndim;

	switch (H5Sget_simple_extent_type(o->space)) {
	case H5S_SIMPLE: break;
	case H5S_SCALAR:
		return dsv_errf_at(eb, DSV_ERR_UNSUPPORTED, path, dname,
				   "scalar datasets are not supported");
	default:
		return dsv_errf_at(eb, DSV_ERR_UNSUPPORTED, path, dname,
				   "dataset has no dataspace");
	}
	ndim = H5Sget_simple_extent_ndims(o->space);
	if (ndim < 1 || ndim > DSV_MAX_DIMS ||
	    H5Sget_simple_extent_dims(o->space, o->dims, NULL) != ndim)
		return dsv_errf_at(eb, DSV_ERR_FORMAT, path, dname, "bad rank");
	for (int k = 0; k < ndim; k++)
		shape[k] = o->dims[k];
	s->info.attrs = s->attrs_json = dsv_h5_attrs_json(o->dset);
	dsv_h5_store_scale(s);
	if (dsv_source_set_shape(s, ndim, shape))
		return dsv_errf_at(eb, DSV_ERR_OVERFLOW, path, dname,
				   "shape too large (more than 2^63 bytes)");
	dsv_h5_dim_names(s, o->dset);
	return 0;
}

/* A contiguous dataset: one run of bytes at its offset, or the library's
 * (*fallback) when it was never written or its type must be converted. */
static int map_contiguous(dsv_h5_open *o, int *fallback, const char *path, const char *dname,
			  dsv_errbuf *eb)
{
	dsv_source *s = o->s;
	uint64_t nbytes = s->info.nelems * dsv_dtype_size(s->info.dtype), end;
	haddr_t off = H5Dget_offset(o->dset);

	if (nbytes == 0) {
		s->info.kind = DSV_SRC_H5_CONTIGUOUS; /* nothing to read */
		dsv_source_flat_chunks(s, DSV_PREAD_CHUNK_BYTES);
		return 0;
	}
	if (o->conv || off == HADDR_UNDEF) {
		/* Never written: the library supplies fill values. */
		*fallback = 1;
		dsv_source_why(s, "%s", o->conv ? o->conv_why : "never written");
		return 0;
	}
	if (dsv_add_u64(off, nbytes, &end) || end > s->file_size)
		return dsv_errf_at(eb, DSV_ERR_FORMAT, path, dname, "data past end of file");
	s->data_offset = off;
	s->info.kind = DSV_SRC_H5_CONTIGUOUS;
	s->info.stored_bytes = nbytes;
	dsv_source_flat_chunks(s, DSV_PREAD_CHUNK_BYTES);
	return 0;
}

/* Where the bytes are, by layout: a flat run, a chunk map, or the
 * library (*fallback; *band_rows its file's chunk rows); *unwritten
 * chunks the library must fill. */
static int map_layout(dsv_h5_open *o, H5D_layout_t layout, int *fallback, hsize_t *band_rows,
		      uint64_t *unwritten, const char *path, const char *dname, dsv_errbuf *eb)
{
	switch (layout) {
	case H5D_CONTIGUOUS: return map_contiguous(o, fallback, path, dname, eb);
	case H5D_CHUNKED: return dsv_h5_open_chunked(o, fallback, band_rows, unwritten);
	case H5D_COMPACT:
		*fallback = 1;
		dsv_source_why(o->s, "compact layout");
		return 0;
	default: return dsv_errf_at(eb, DSV_ERR_UNSUPPORTED, path, dname, "unknown layout");
	}
}

/* The source's kind and why; a source that needs the library keeps its
 * handles for the read path. */
static int settle_kind(dsv_h5_open *o, int fallback, hsize_t band_rows, uint64_t unwritten,
		       const char *path, const char *dname, dsv_errbuf *eb)
{
	dsv_source *s = o->s;
	int err;

	if (fallback) {
		s->fallback = 1;
		s->chunked = 0;
		s->codec = DSV_CODEC_NONE;
		s->info.kind = DSV_SRC_H5_FALLBACK;
		s->info.stored_bytes = H5Dget_storage_size(o->dset);
		fallback_chunks(s, band_rows);
	} else if (unwritten) {
		dsv_source_why(s, "%llu of %llu chunks never written (fill values via HDF5)",
			       (unsigned long long)unwritten, (unsigned long long)s->info.nchunks);
	}
	if (!fallback && !unwritten)
		return 0;
	err = dsv_h5_keep(s, &o->file, &o->dset, &o->cc);
	if (err == DSV_ERR_NOMEM)
		return dsv_errf_at(eb, DSV_ERR_NOMEM, path, NULL, "out of memory");
	if (err)
		return dsv_errf_at(eb, DSV_ERR_INTERNAL, path, dname, "no memory type for %s",
				   dsv_dtype_name(s->info.dtype));
	return 0;
}

/* Closes the handles the open did not keep (under the HDF5 lock). */
static void close_handles(dsv_h5_open *o)
{
	dsv_h5_chunk_check_free(o->cc);
	if (o->space >= 0)
		H5Sclose(o->space);
	if (o->ftype >= 0)
		H5Tclose(o->ftype);
	if (o->dcpl >= 0)
		H5Pclose(o->dcpl);
	if (o->dset >= 0)
		H5Oclose(o->dset);
	if (o->file >= 0)
		H5Fclose(o->file);
	if (o->lapl >= 0)
		H5Pclose(o->lapl);
}

int dsv_source_open_h5(const char *path, const char *dataset, dsv_source **out, dsv_errbuf *eb)
{
	return dsv_h5_open_any(path, dataset, out, NULL, eb);
}

int dsv_h5_open_any(const char *path, const char *dataset, dsv_source **out, dsv_h5_vds *vds,
		    dsv_errbuf *eb)
{
	char dname[H5_MAX_PATH];
	dsv_h5_open o = {
		.lapl = -1, .file = -1, .dset = -1, .dcpl = -1, .ftype = -1, .space = -1
	};
	dsv_source *s;
	int err, fallback = 0, locked = 0;
	hsize_t band_rows = 0;
	uint64_t unwritten = 0;
	H5D_layout_t layout;

	*out = NULL;
	if (!path || !dataset || !*dataset)
		return dsv_errf_at(eb, DSV_ERR_INVALID, path ? path : "", NULL, "no dataset given");
	if ((size_t)snprintf(dname, sizeof(dname), "%s%s", dataset[0] == '/' ? "" : "/", dataset) >=
	    sizeof(dname))
		return dsv_errf_at(eb, DSV_ERR_INVALID, path, NULL, "dataset path too long");
	s = dsv_source_alloc(path, dname);
	if (!s)
		return dsv_errf_at(eb, DSV_ERR_NOMEM, path, NULL, "out of memory");
	o.s = s;
	o.eb = eb;
	if (!(err = open_file(&o, path, &locked, eb)) &&
	    !(err = open_dataset(&o, path, dname, eb))) {
		layout = H5Pget_layout(o.dcpl);
		err = check_dataset(&o, layout, vds != NULL, path, dname, eb);
		if (!err && layout == H5D_VIRTUAL)
			err = dsv_h5_read_vds(&o, path, dname, vds, eb);
		else if (!err && !(err = read_shape(&o, path, dname, eb)) &&
			 !(err = map_layout(&o, layout, &fallback, &band_rows, &unwritten, path,
					    dname, eb)))
			err = settle_kind(&o, fallback, band_rows, unwritten, path, dname, eb);
	}
	if (locked) {
		close_handles(&o);
		dsv_h5_unlock();
	}
	if (err || (vds && vds->found)) {
		dsv_source_close(s);
		return err;
	}
	*out = s;
	return 0;
}
