/*
 * HDF5 dataset sources: opening one and resolving its chunk map.
 *
 * At open (mount) time we ask the HDF5 library where the bytes are, then
 * mostly stop using it: contiguous datasets become a flat run at
 * data_offset, and chunked datasets whose chunks are whole rows with no
 * filter or one codec dsview decodes itself (LZ4 32004, Zstandard 32015,
 * LZF 32000, Blosc 32001), and/or Fletcher32 become a chunk map (offset, size, filter
 * mask per chunk) that source.c reads with pread from any thread.
 * Everything else the library can decode (gzip, shuffle, big-endian types,
 * chunks that split rows, compact layout, never-written data) is read
 * through H5Dread (h5_read.c): kind DSV_SRC_H5_FALLBACK, serialised. The
 * library decodes LZ4, Zstandard, LZF and Blosc there with dsview's own codecs,
 * registered in-process (src/h5/decode.c); plugins are never loaded.
 *
 * The HDF5 layer below (src/h5/h5.h) holds what this shares with `info`
 * and pack: the one global lock every HDF5 call runs under (no other lock
 * is taken while it is held), the read-only driver every file is opened
 * through and the chunk locator built on it (a chunk map costs one index
 * lookup per chunk: src/h5/driver.c says why the library's own chunk-info
 * calls will not do), the fork probe that meets a crashing file in a child
 * first, the link walk, and the guards on chunks the library decodes.
 *
 * Trust: the file is untrusted. Dynamic filter plugins are never loaded
 * (a file must not choose code to run), external links are never followed
 * and external storage / virtual datasets are refused (either could point
 * at any file on the machine), and every chunk address and size the library
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

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dsview/codec.h"
#include "dsview/h5info.h"
#include "h5/h5.h"
#include "source/h5_src.h"
#include "source/source_i.h"

/* Sanity caps on what a file may ask of us before we allocate. */
#define H5_MAX_CHUNKS (1ull << 28)
#define H5_MAX_PATH 4096
/* Opens of a file that keeps being replaced before we give up. */
#define H5_OPEN_TRIES 3
/* A fallback chunk is aligned to the file's own chunk bands when a band is
 * at most this big, so one dsview chunk never decodes an HDF5 chunk twice. */
#define H5_MAX_BAND_BYTES (16u << 20)

static const char *filter_name(H5Z_filter_t id)
{
	const char *name = dsv_h5_filter_name((int)id);
	return name ? name : "unknown";
}

/* Open-time working set; everything here is released before returning. */
typedef struct h5_open {
	dsv_source *s;
	dsv_errbuf *eb;
	hid_t lapl, file, dset, dcpl, ftype, space;
	hsize_t dims[DSV_MAX_DIMS];
	int conv;            /* element type needs library conversion */
	char conv_why[64];
	dsv_h5_chunk_check *cc;  /* for the fallback's h5_state */
} h5_open;

static void why_filters(h5_open *o, const H5Z_filter_t *ids, int nf)
{
	char *w = o->s->h5_why;
	size_t cap = sizeof(o->s->h5_why), len;
	len = (size_t)snprintf(w, cap, "filter%s ", nf > 1 ? "s" : "");
	for (int i = 0; i < nf && len < cap; i++)
		len += (size_t)snprintf(w + len, cap - len, "%s%s", i ? "+" : "",
					filter_name(ids[i]));
}

/* Flat element ranges for a fallback source, aligned to the file's chunk
 * bands along axis 0 when those are of reasonable size. */
static void fallback_chunks(dsv_source *s, hsize_t band_rows)
{
	uint64_t esize = dsv_dtype_size(s->info.dtype), band, band_bytes;

	dsv_source_flat_chunks(s, DSV_FALLBACK_CHUNK_BYTES);
	if (!band_rows || !s->info.row_elems || dsv_mul_u64(band_rows, s->info.row_elems, &band))
		return;
	s->band_elems = band;
	if (s->info.chunk_elems % s->info.row_elems ||
	    dsv_mul_u64(band, esize, &band_bytes) || band_bytes > H5_MAX_BAND_BYTES)
		return;
	uint64_t k = (s->info.chunk_elems + band / 2) / band;
	s->info.chunk_elems = (k ? k : 1) * band;
	s->info.nchunks = (s->info.nelems + s->info.chunk_elems - 1) / s->info.chunk_elems;
}

/*
 * Resolves every chunk of a fast-path chunked dataset (see "Chunk maps" at
 * the top). @return 0, or a dsv_err with the message set; *unwritten counts
 * chunks the file never stored (fill values, through the library).
 */
static int resolve_chunks(h5_open *o, hsize_t chunk_rows, int codec, int fl32,
			  uint64_t *unwritten)
{
	dsv_source *s = o->s;
	uint64_t esize = dsv_dtype_size(s->info.dtype), raw, nchunks, max_stored, allocated = 0;
	hsize_t coord[DSV_MAX_DIMS] = { 0 };
	void *probe = NULL;
	size_t probe_cap = 0;
	int err = 0;

	if (dsv_mul_u64(chunk_rows, s->info.row_elems, &s->info.chunk_elems) ||
	    dsv_mul_u64(s->info.chunk_elems, esize, &raw) || raw > UINT32_MAX)
		return dsv_errf_at(o->eb, DSV_ERR_FORMAT, s->path, s->dataset,
				   "chunk size too large");
	s->chunked = 1;
	s->chunk_rows = chunk_rows;
	s->chunk_raw_size = raw;
	/* LZ4 frames are about raw + raw/255 + 16 bytes per block, zstd
	 * frames raw + raw/256 + 64, LZF streams raw + raw/32 + 1, Blosc
	 * buffers raw + 16 (stored) at worst;
	 * anything far beyond that is not a chunk we should allocate scratch
	 * for. */
	max_stored = (codec ? 2 * raw + (64u << 10) : raw) + (fl32 ? 4 : 0);
	nchunks = s->info.nrows / chunk_rows + (s->info.nrows % chunk_rows != 0);
	if (s->info.nelems == 0)
		nchunks = 0;
	if (nchunks > H5_MAX_CHUNKS)
		return dsv_errf_at(o->eb, DSV_ERR_OVERFLOW, s->path, s->dataset,
				   "too many chunks (%llu)", (unsigned long long)nchunks);
	s->info.nchunks = nchunks;
	*unwritten = 0;
	if (!nchunks)
		return 0;
	/* calloc checks nchunks * size for overflow. */
	s->chunk_off = calloc(nchunks, sizeof(*s->chunk_off));
	s->chunk_size = calloc(nchunks, sizeof(*s->chunk_size));
	s->chunk_mask = calloc(nchunks, sizeof(*s->chunk_mask));
	if (!s->chunk_off || !s->chunk_size || !s->chunk_mask)
		return dsv_errf_at(o->eb, DSV_ERR_NOMEM, s->path, s->dataset,
				   "out of memory for %llu chunks", (unsigned long long)nchunks);

	for (uint64_t i = 0; i < nchunks; i++) {
		unsigned mask = 0;
		haddr_t addr = HADDR_UNDEF;
		hsize_t size = 0;
		uint64_t end;

		coord[0] = i * chunk_rows;
		/* HDF5 1.10 fails this call for a chunk never written (and
		 * says size 0); the count check below catches any chunk
		 * taken for unwritten that exists. */
		if (H5Dget_chunk_storage_size(o->dset, coord, &size) < 0 || size == 0) {
			s->chunk_off[i] = DSV_SRC_UNALLOCATED;
			(*unwritten)++;
			continue;
		}
		/* Checked before the probe buffer grows to it. */
		if (size > max_stored)
			goto bad_size;
		if (size > probe_cap) {
			/* Never written to (the probe skips the read), so
			 * these pages are never touched. */
			void *p = realloc(probe, (size_t)size);
			if (!p) {
				err = dsv_errf_at(o->eb, DSV_ERR_NOMEM, s->path, NULL,
						  "out of memory");
				goto out;
			}
			probe = p;
			probe_cap = (size_t)size;
		}
		if (dsv_h5_locate_chunk(o->dset, coord, size, probe, &addr, &mask) < 0) {
			err = dsv_errf_at(o->eb, DSV_ERR_FORMAT, s->path, s->dataset,
					  "cannot locate chunk %llu", (unsigned long long)i);
			goto out;
		}
		int c_codec = codec && !(mask & (1u << s->codec_filter_bit));
		int c_fl32 = fl32 && !(mask & (1u << s->fl32_filter_bit));
		uint64_t trailer = c_fl32 ? 4 : 0;
		/* Unfiltered chunks are exactly a chunk (a short one would
		 * make pread serve a neighbour's bytes). */
		if ((!c_codec && size != raw + trailer) || dsv_add_u64(addr, size, &end))
			goto bad_size;
		/* A chunk past the end of the file is recorded, not refused:
		 * source.c fails those reads with DSV_ERR_TRUNCATED. */
		s->chunk_off[i] = addr;
		s->chunk_size[i] = (uint32_t)size;
		s->chunk_mask[i] = mask;
		s->info.stored_bytes += size;
		allocated++;
		continue;
bad_size:
		err = dsv_errf_at(o->eb, DSV_ERR_FORMAT, s->path, s->dataset,
				  "chunk %llu has an impossible size (%llu bytes, raw %llu)",
				  (unsigned long long)i, (unsigned long long)size,
				  (unsigned long long)raw);
		goto out;
	}
	/* Serving fill values where the file has data would be silent
	 * corruption: the library's own count must agree with ours. */
	hsize_t counted = 0;
	if (H5Dget_num_chunks(o->dset, o->space, &counted) < 0 || counted != allocated)
		err = dsv_errf_at(o->eb, DSV_ERR_FORMAT, s->path, s->dataset,
				  "chunk index inconsistent (%llu chunks found, %llu counted)",
				  (unsigned long long)allocated, (unsigned long long)counted);
out:
	free(probe);
	return err;
}

/* The codec dsview decodes itself for filter id, or DSV_CODEC_NONE. */
static dsv_codec own_codec(H5Z_filter_t id)
{
	switch (id) {
	case DSV_H5Z_FILTER_LZ4: return DSV_CODEC_LZ4;
	case DSV_H5Z_FILTER_ZSTD: return DSV_CODEC_ZSTD;
	case DSV_H5Z_FILTER_LZF: return DSV_CODEC_LZF;
	case DSV_H5Z_FILTER_BLOSC: return DSV_CODEC_BLOSC;
	case DSV_H5Z_FILTER_BSHUF: return DSV_CODEC_BSHUF;
	}
	return DSV_CODEC_NONE;
}

/*
 * Chunked layout: fast path when dsview can read the chunks itself, else
 * fallback if the library can, else refusal. Sets *fallback.
 */
static int open_chunked(h5_open *o, int *fallback, hsize_t *band_rows,
			uint64_t *unwritten)
{
	dsv_source *s = o->s;
	hsize_t cdims[DSV_MAX_DIMS];
	H5Z_filter_t ids[DSV_H5_MAX_FILTERS];
	unsigned cds[DSV_H5_MAX_FILTERS][DSV_H5_MAX_CD] = { { 0 } }; /* first parameters */
	size_t ncds[DSV_H5_MAX_FILTERS];
	int ndim = s->info.ndim, nf, whole_rows = 1, fl32 = 0, fast_pipe;
	dsv_codec codec = DSV_CODEC_NONE;
	unsigned opts = 0;
	uint64_t celems = 1; /* elements in a chunk; UINT64_MAX: too many */

	if (H5Pget_chunk(o->dcpl, DSV_MAX_DIMS, cdims) != ndim || cdims[0] == 0)
		return dsv_errf_at(o->eb, DSV_ERR_FORMAT, s->path, s->dataset,
				   "bad chunk dimensions");
	for (int k = 0; k < ndim; k++) {
		if (k > 0 && cdims[k] != o->dims[k])
			whole_rows = 0;
		if (celems != UINT64_MAX && dsv_mul_u64(celems, cdims[k], &celems))
			celems = UINT64_MAX;
	}
	/* A band of cdims[0] rows covers whole chunks on every axis, split
	 * rows or not: fallback reads aligned to bands decode each once. */
	*band_rows = cdims[0];

	nf = H5Pget_nfilters(o->dcpl);
	if (nf < 0 || nf > (int)(sizeof(ids) / sizeof(ids[0])))
		return dsv_errf_at(o->eb, DSV_ERR_FORMAT, s->path, s->dataset,
				   "unreadable filter pipeline");
	for (int i = 0; i < nf; i++) {
		unsigned flags;
		char name[64];
		ncds[i] = DSV_H5_MAX_CD;
		ids[i] = H5Pget_filter2(o->dcpl, (unsigned)i, &flags, &ncds[i], cds[i], sizeof(name),
					name, NULL);
		if (ids[i] < 0)
			return dsv_errf_at(o->eb, DSV_ERR_FORMAT, s->path, s->dataset,
					   "unreadable filter %d", i);
		if (!dsv_h5_filter_params_ok(ids[i], cds[i], ncds[i], celems,
					     H5Tget_size(o->ftype)))
			return dsv_errf_at(o->eb, DSV_ERR_FORMAT, s->path, s->dataset,
					   "filter %s parameters do not match the chunk "
					   "(damaged file?)",
					   filter_name(ids[i]));
		if (ids[i] == DSV_H5Z_FILTER_BSHUF) {
			/* dsview decodes bitshuffle on both paths (decode.c):
			 * parameters it cannot decode are refused here. */
			unsigned elem, block;
			int comp;
			const char *why = dsv_bshuf_params(cds[i], ncds[i], &elem, &block, &comp);
			if (!why && elem != H5Tget_size(o->ftype))
				why = "element size is not the dataset's";
			if (why)
				return dsv_errf_at(o->eb, DSV_ERR_UNSUPPORTED, s->path, s->dataset,
						   "bitshuffle parameters not supported: %s", why);
			s->bshuf_elem = elem;
			s->bshuf_block = block;
			s->bshuf_comp = (unsigned)comp;
		}
	}
	/* dsview decodes [codec], [codec, fletcher32] and [fletcher32]
	 * itself; anything else (shuffle in front, two codecs) is the
	 * library's. */
	fast_pipe = nf == 0 ||
		    (nf == 1 && (own_codec(ids[0]) || ids[0] == H5Z_FILTER_FLETCHER32)) ||
		    (nf == 2 && own_codec(ids[0]) && ids[1] == H5Z_FILTER_FLETCHER32);
	/* With this option HDF5 stores partial edge chunks unfiltered without
	 * saying so in the filter mask: only the library knows. */
	if (nf > 0 && H5Pget_chunk_opts(o->dcpl, &opts) >= 0 &&
	    (opts & H5D_CHUNK_DONT_FILTER_PARTIAL_CHUNKS) && s->info.nrows % cdims[0])
		fast_pipe = 0;

	/* DSVIEW_H5_GRID=0 leaves chunks that split rows to the library, for
	 * measuring the N-d grid against it (make bench-grid). */
	const char *grid_env = getenv("DSVIEW_H5_GRID");
	if (fast_pipe && !o->conv && (whole_rows || !grid_env || strcmp(grid_env, "0"))) {
		for (int i = 0; i < nf; i++) {
			if (own_codec(ids[i])) {
				codec = own_codec(ids[i]);
				s->codec_filter_bit = (unsigned)i;
			} else {
				fl32 = 1;
				s->fl32_filter_bit = (unsigned)i;
			}
		}
		s->codec = codec;
		s->fletcher32 = fl32;
		s->info.kind = DSV_SRC_H5_CHUNKED;
		*fallback = 0;
		if (whole_rows) {
			int err = resolve_chunks(o, cdims[0], codec != DSV_CODEC_NONE, fl32, unwritten);
			if (!err && codec == DSV_CODEC_LZ4) {
				dsv_source_note_lz4_block(s);
				dsv_h5_open_block_table(s, o->file, o->lapl);
			}
			return err;
		}
		int err = dsv_h5_open_grid(s, o->dset, o->dcpl, o->ftype, o->space, cdims,
					   codec != DSV_CODEC_NONE, fl32, s->h5_why,
					   sizeof(s->h5_why), o->eb);
		if (err != DSV_ERR_UNSUPPORTED)
			return err;
		s->codec = DSV_CODEC_NONE; /* the library's, with the reason in h5_why */
		s->fletcher32 = 0;
	}

	/* The library must decode it: every filter has to be one it has
	 * built in, since plugins are never loaded. */
	for (int i = 0; i < nf; i++) {
		unsigned cfg = 0;
		if (H5Zfilter_avail(ids[i]) <= 0 || H5Zget_filter_info(ids[i], &cfg) < 0 ||
		    !(cfg & H5Z_FILTER_CONFIG_DECODE_ENABLED))
			return dsv_errf_at(o->eb, DSV_ERR_UNSUPPORTED, s->path, s->dataset,
					   "filter %d (%s) is not available (dsview never loads "
					   "filter plugins; it decodes LZ4, Zstandard, LZF, Blosc, "
					   "bitshuffle and the HDF5 library's own filters: rewrite "
					   "the dataset with one of those where the plugin is "
					   "installed, e.g. h5repack -f GZIP=4)",
					   (int)ids[i], filter_name(ids[i]));
	}
	if (o->conv)
		snprintf(s->h5_why, sizeof(s->h5_why), "%s", o->conv_why);
	else if (!whole_rows && fast_pipe)
		; /* dsv_h5_open_grid said why in h5_why */
	else if (!whole_rows)
		snprintf(s->h5_why, sizeof(s->h5_why), "chunks split rows; filters the library "
			 "decodes");
	else if (fast_pipe)
		snprintf(s->h5_why, sizeof(s->h5_why), "unfiltered partial edge chunks");
	else
		why_filters(o, ids, nf);
	o->cc = dsv_h5_chunk_check_new(ndim, o->dims, cdims, H5Tget_size(o->ftype), celems, nf,
				       ids, (const unsigned (*)[DSV_H5_MAX_CD])cds, ncds, opts);
	if (!o->cc)
		return dsv_errf_at(o->eb, DSV_ERR_NOMEM, s->path, NULL, "out of memory");
	*fallback = 1;
	return 0;
}

int dsv_source_open_h5(const char *path, const char *dataset, dsv_source **out,
		       dsv_errbuf *eb)
{
	char dname[H5_MAX_PATH];
	h5_open o = { .lapl = -1, .file = -1, .dset = -1, .dcpl = -1, .ftype = -1, .space = -1 };
	dsv_source *s;
	int err, fallback = 0, ndim;
	hsize_t band_rows = 0;
	uint64_t unwritten = 0, shape[DSV_MAX_DIMS];
	H5D_layout_t layout;

	*out = NULL;
	if (!path || !dataset || !*dataset)
		return dsv_errf_at(eb, DSV_ERR_INVALID, path ? path : "", NULL, "no dataset given");
	if ((size_t)snprintf(dname, sizeof(dname), "%s%s", dataset[0] == '/' ? "" : "/",
			     dataset) >= sizeof(dname))
		return dsv_errf_at(eb, DSV_ERR_INVALID, path, NULL, "dataset path too long");
	s = dsv_source_alloc(path, dname);
	if (!s)
		return dsv_errf_at(eb, DSV_ERR_NOMEM, path, NULL, "out of memory");
	o.s = s;
	o.eb = eb;
	/* pread's descriptor and the library's handle are opened by path
	 * one after the other; a file renamed over path in between (`dsview
	 * pack --force` of the same output) would get the new file's chunk
	 * map applied to the old file's bytes. So both must be one file
	 * (device and inode), else both are opened again. */
	for (int tries = 1;; tries++) {
		/* Our own descriptor first: it gives the clearest "no such file". */
		err = dsv_source_open_file(s, eb);
		if (!err)
			err = dsv_h5_probe(path, dsv_h5_probe_all, eb);
		if (err)
			goto out_source;

		o.lapl = dsv_h5_lock() < 0 ? -1 : dsv_h5_make_lapl(H5P_LINK_ACCESS);
		if (o.lapl < 0) {
			err = dsv_errf_at(eb, DSV_ERR_INTERNAL, path, NULL, "HDF5 setup failed");
			goto out_h5;
		}
		o.file = H5Fopen(path, H5F_ACC_RDONLY, dsv_h5_ro_fapl());
		if (o.file < 0) {
			err = dsv_h5_open_failed(path, eb);
			goto out_h5;
		}
		err = dsv_h5_same_file(o.file, s->fd);
		if (err == 1)
			break;
		if (err < 0) {
			err = dsv_errf_at(eb, err, path, NULL, "cannot tell which file HDF5 opened");
			goto out_h5;
		}
		if (tries == H5_OPEN_TRIES) {
			err = dsv_errf_at(eb, DSV_ERR_IO, path, NULL,
					  "the file was replaced while it was being opened "
					  "(%d times); try again", tries);
			goto out_h5;
		}
		H5Fclose(o.file);
		H5Pclose(o.lapl);
		o.file = o.lapl = -1;
		dsv_h5_unlock();
		close(s->fd);
		s->fd = -1;
	}
	err = dsv_h5_check_links(o.file, o.lapl, s->path, dname, eb);
	if (err)
		goto out_h5;
	o.dset = H5Oopen(o.file, dname, o.lapl);
	if (o.dset < 0) {
		err = dsv_errf_at(eb, DSV_ERR_NOTFOUND, path, dname, "cannot open");
		goto out_h5;
	}
	if (H5Iget_type(o.dset) != H5I_DATASET) {
		err = dsv_errf_at(eb, DSV_ERR_INVALID, path, dname, "not a dataset");
		goto out_h5;
	}
	o.dcpl = H5Dget_create_plist(o.dset);
	o.ftype = H5Dget_type(o.dset);
	o.space = H5Dget_space(o.dset);
	if (o.dcpl < 0 || o.ftype < 0 || o.space < 0) {
		err = dsv_errf_at(eb, DSV_ERR_FORMAT, path, dname, "unreadable dataset header");
		goto out_h5;
	}

	/* Refusals come first: they hold whatever the type or layout. */
	layout = H5Pget_layout(o.dcpl);
	if (layout == H5D_VIRTUAL) {
		err = dsv_errf_at(eb, DSV_ERR_UNSUPPORTED, path, dname, "virtual dataset refused");
		goto out_h5;
	}
	if (H5Pget_external_count(o.dcpl) != 0) {
		err = dsv_errf_at(eb, DSV_ERR_UNSUPPORTED, path, dname,
				  "external storage refused (the data lives in other files)");
		goto out_h5;
	}
	err = dsv_h5_classify_type(o.ftype, &s->info.dtype, &o.conv, o.conv_why, sizeof(o.conv_why));
	if (err) {
		err = dsv_errf_at(eb, DSV_ERR_UNSUPPORTED, path, dname,
				  "unsupported element type %s (dsview serves integers of 1 "
				  "to 8 bytes, enum and bitfield as their integer, float16, "
				  "float32, float64)",
				  o.conv_why);
		goto out_h5;
	}
	switch (H5Sget_simple_extent_type(o.space)) {
	case H5S_SIMPLE:
		break;
	case H5S_SCALAR:
		err = dsv_errf_at(eb, DSV_ERR_UNSUPPORTED, path, dname,
				  "scalar datasets are not supported");
		goto out_h5;
	default:
		err = dsv_errf_at(eb, DSV_ERR_UNSUPPORTED, path, dname, "dataset has no dataspace");
		goto out_h5;
	}
	ndim = H5Sget_simple_extent_ndims(o.space);
	if (ndim < 1 || ndim > DSV_MAX_DIMS ||
	    H5Sget_simple_extent_dims(o.space, o.dims, NULL) != ndim) {
		err = dsv_errf_at(eb, DSV_ERR_FORMAT, path, dname, "bad rank");
		goto out_h5;
	}
	for (int k = 0; k < ndim; k++)
		shape[k] = o.dims[k];
	s->info.attrs = s->attrs_json = dsv_h5_attrs_json(o.dset);
	if (dsv_source_set_shape(s, ndim, shape)) {
		err = dsv_errf_at(eb, DSV_ERR_OVERFLOW, path, dname,
				  "shape too large (more than 2^63 bytes)");
		goto out_h5;
	}

	switch (layout) {
	case H5D_CONTIGUOUS: {
		uint64_t nbytes = s->info.nelems * dsv_dtype_size(s->info.dtype), end;
		haddr_t off = H5Dget_offset(o.dset);
		if (nbytes == 0) {
			s->info.kind = DSV_SRC_H5_CONTIGUOUS; /* nothing to read */
			dsv_source_flat_chunks(s, DSV_PREAD_CHUNK_BYTES);
			break;
		}
		if (o.conv || off == HADDR_UNDEF) {
			/* Never written: the library supplies fill values. */
			fallback = 1;
			snprintf(s->h5_why, sizeof(s->h5_why), "%s",
				 o.conv ? o.conv_why : "never written");
			break;
		}
		if (dsv_add_u64(off, nbytes, &end) || end > s->file_size) {
			err = dsv_errf_at(eb, DSV_ERR_FORMAT, path, dname, "data past end of file");
			goto out_h5;
		}
		s->data_offset = off;
		s->info.kind = DSV_SRC_H5_CONTIGUOUS;
		s->info.stored_bytes = nbytes;
		dsv_source_flat_chunks(s, DSV_PREAD_CHUNK_BYTES);
		break;
	}
	case H5D_CHUNKED:
		err = open_chunked(&o, &fallback, &band_rows, &unwritten);
		if (err)
			goto out_h5;
		break;
	case H5D_COMPACT:
		fallback = 1;
		snprintf(s->h5_why, sizeof(s->h5_why), "compact layout");
		break;
	default:
		err = dsv_errf_at(eb, DSV_ERR_UNSUPPORTED, path, dname, "unknown layout");
		goto out_h5;
	}

	if (fallback) {
		s->fallback = 1;
		s->chunked = 0;
		s->codec = DSV_CODEC_NONE;
		s->info.kind = DSV_SRC_H5_FALLBACK;
		s->info.stored_bytes = H5Dget_storage_size(o.dset);
		fallback_chunks(s, band_rows);
	} else if (unwritten) {
		snprintf(s->h5_why, sizeof(s->h5_why),
			 "%llu of %llu chunks never written (fill values via HDF5)",
			 (unsigned long long)unwritten, (unsigned long long)s->info.nchunks);
	}
	s->info.why = s->h5_why;

	if (fallback || unwritten) {
		/* Keep the handles: the read path will need the library. */
		err = dsv_h5_keep(s, &o.file, &o.dset, &o.cc);
		if (err == DSV_ERR_NOMEM) {
			err = dsv_errf_at(eb, DSV_ERR_NOMEM, path, NULL, "out of memory");
			goto out_h5;
		}
		if (err) {
			err = dsv_errf_at(eb, DSV_ERR_INTERNAL, path, dname,
					  "no memory type for %s", dsv_dtype_name(s->info.dtype));
			goto out_h5;
		}
	}
	err = 0;

out_h5:
	dsv_h5_chunk_check_free(o.cc);
	if (o.space >= 0)
		H5Sclose(o.space);
	if (o.ftype >= 0)
		H5Tclose(o.ftype);
	if (o.dcpl >= 0)
		H5Pclose(o.dcpl);
	if (o.dset >= 0)
		H5Oclose(o.dset);
	if (o.file >= 0)
		H5Fclose(o.file);
	if (o.lapl >= 0)
		H5Pclose(o.lapl);
	dsv_h5_unlock();
out_source:
	if (err) {
		dsv_source_close(s);
		return err;
	}
	*out = s;
	return 0;
}
