/*
 * HDF5 chunked datasets: which path serves one, and where its chunks are.
 *
 * The filter pipeline decides (dsv_h5_open_chunked): chunks of whole rows
 * with no filter or one codec dsview decodes itself (deflate 1, LZ4 32004,
 * Zstandard 32015, LZF 32000, Blosc 32001, bitshuffle 32008), shuffle (2)
 * in front of it and/or Fletcher32 after it, become a chunk map that
 * source.c reads with pread from any thread;
 * chunks that split rows with such a pipeline go to the N-d grid
 * (h5_grid.c); everything else the library can decode is left to it
 * (h5_source.c keeps the handles, h5_read.c reads), with the reason in info.why.
 *
 * Both maps are made by one locator (dsv_h5_locate_chunks): every chunk is
 * asked once for its stored size and then for the file offset the library
 * reads it from (src/formats/h5/driver.c's locator), its size checked against what
 * any encoding of the chunk could take, and the library's own count of the
 * chunks it holds checked against ours. Runs under the HDF5 lock, at open.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/codec.h"
#include "common/arith.h"
#include "common/knobs.h"
#include "dsview/codec.h"
#include "dsview/h5info.h"
#include "formats/h5/h5.h"
#include "formats/h5/h5_src.h"
#include "source/source_i.h"

/* Sanity cap on what a file may ask of us before we allocate. */
#define H5_MAX_CHUNKS (1ull << 28)

static const char *filter_name(H5Z_filter_t id)
{
	const char *name = dsv_h5_filter_name((int)id);
	return name ? name : "unknown";
}

static void why_filters(dsv_h5_open *o, const H5Z_filter_t *ids, int nf)
{
	char w[96];
	size_t cap = sizeof(w), len;
	len = (size_t)snprintf(w, cap, "filter%s ", nf > 1 ? "s" : "");
	for (int i = 0; i < nf && len < cap; i++)
		len += (size_t)snprintf(w + len, cap - len, "%s%s", i ? "+" : "",
					filter_name(ids[i]));
	dsv_source_why(o->s, "%s", w);
}

int dsv_h5_locate_chunks(dsv_source *s, hid_t dset, hid_t space, const hsize_t *cdims,
			 const uint64_t *gcount, uint64_t n, uint64_t raw, int codec, int fl32,
			 int unwritten_ok, uint64_t *unwritten, dsv_h5_bad_chunk *bad,
			 dsv_errbuf *eb)
{
	uint64_t idx[DSV_MAX_DIMS] = { 0 }, allocated = 0;
	hsize_t coord[DSV_MAX_DIMS] = { 0 };
	void *probe = NULL;
	size_t probe_cap = 0;
	int nd = s->info.ndim, err = 0;
	uint64_t max_stored = dsv_source_max_stored(raw, codec, fl32);

	*unwritten = 0;
	if (!n)
		return 0;
	if (dsv_source_chunk_map(s, n))
		return dsv_errf_at(eb, DSV_ERR_NOMEM, s->path, s->dataset,
				   "out of memory for %llu chunks", (unsigned long long)n);

	for (uint64_t i = 0; i < n; i++) {
		unsigned mask = 0;
		haddr_t addr = HADDR_UNDEF;
		hsize_t size = 0;
		uint64_t end;

		for (int k = 0; k < nd; k++)
			coord[k] = idx[k] * cdims[k];
		for (int k = nd - 1; k >= 0; k--) { /* the next chunk's position */
			if (++idx[k] < gcount[k])
				break;
			idx[k] = 0;
		}
		/* HDF5 1.10 fails this call for a chunk never written (and
		 * says size 0); the count check below catches any chunk
		 * taken for unwritten that exists. */
		if (H5Dget_chunk_storage_size(dset, coord, &size) < 0 || size == 0) {
			if (!unwritten_ok) {
				err = DSV_ERR_NOTFOUND;
				goto out;
			}
			s->more->chunk_off[i] = DSV_SRC_UNALLOCATED;
			(*unwritten)++;
			continue;
		}
		*bad = (dsv_h5_bad_chunk){ .index = i, .size = size };
		/* Checked before the probe buffer grows to it. */
		if (size > max_stored) {
			err = DSV_ERR_CORRUPT;
			goto out;
		}
		if (size > probe_cap) {
			/* Never written to (the probe skips the read), so
			 * these pages are never touched. */
			void *p = realloc(probe, (size_t)size);
			if (!p) {
				err = dsv_errf_at(eb, DSV_ERR_NOMEM, s->path, NULL,
						  "out of memory");
				goto out;
			}
			probe = p;
			probe_cap = (size_t)size;
		}
		if (dsv_h5_locate_chunk(dset, coord, size, probe, &addr, &mask) < 0) {
			bad->unlocated = 1;
			err = DSV_ERR_CORRUPT;
			goto out;
		}
		int c_codec = codec && !(mask & (1u << s->more->codec_filter_bit));
		int c_fl32 = fl32 && !(mask & (1u << s->more->fl32_filter_bit));
		/* Unfiltered chunks are exactly a chunk (a short one would
		 * make pread serve a neighbour's bytes). */
		if ((!c_codec && size != raw + (c_fl32 ? 4 : 0)) || dsv_add_u64(addr, size, &end)) {
			err = DSV_ERR_CORRUPT;
			goto out;
		}
		/* A chunk past the end of the file is recorded, not refused:
		 * source.c fails those reads with DSV_ERR_TRUNCATED. */
		s->more->chunk_off[i] = addr;
		s->more->chunk_size[i] = (uint32_t)size;
		s->more->chunk_mask[i] = mask;
		s->info.stored_bytes += size;
		allocated++;
	}
	/* Serving fill values where the file has data would be silent
	 * corruption: the library's own count must agree with ours. It
	 * counts every chunk its index holds, also those outside the
	 * dataset's extent (written there directly, or by writers whose
	 * index the library now places outside it), which no read reaches:
	 * more than we found is the library's to read, as h5py reads it;
	 * fewer is an index that contradicts itself. */
	hsize_t counted = 0;
	if (H5Dget_num_chunks(dset, space, &counted) < 0 || counted < allocated)
		err = dsv_errf_at(eb, DSV_ERR_FORMAT, s->path, s->dataset,
				  "chunk index inconsistent (%llu chunks found, %llu counted)",
				  (unsigned long long)allocated, (unsigned long long)counted);
	else if (counted > allocated) {
		bad->beyond = counted - allocated;
		err = DSV_ERR_UNSUPPORTED;
	}
out:
	free(probe);
	return err;
}

/* The chunk map of a fast-path dataset chunked in whole rows, chunk_rows a
 * chunk. @return 0, or a dsv_err with the message set; *unwritten counts
 * chunks the file never stored (fill values, through the library). */
static int resolve_chunks(dsv_h5_open *o, hsize_t chunk_rows, int codec, int fl32,
			  uint64_t *unwritten, uint64_t *beyond)
{
	dsv_source *s = o->s;
	uint64_t esize = dsv_dtype_size(s->info.dtype), raw, nchunks, gcount[DSV_MAX_DIMS];
	hsize_t cdims[DSV_MAX_DIMS];
	dsv_h5_bad_chunk bad = { 0 };

	if (dsv_mul_u64(chunk_rows, s->info.row_elems, &s->info.chunk_elems) ||
	    dsv_mul_u64(s->info.chunk_elems, esize, &raw) || raw > UINT32_MAX)
		return dsv_errf_at(o->eb, DSV_ERR_FORMAT, s->path, s->dataset,
				   "chunk size too large");
	s->chunked = 1;
	s->more->chunk_rows = chunk_rows;
	s->more->chunk_raw_size = raw;
	nchunks = s->info.nrows / chunk_rows + (s->info.nrows % chunk_rows != 0);
	if (s->info.nelems == 0)
		nchunks = 0;
	if (nchunks > H5_MAX_CHUNKS)
		return dsv_errf_at(o->eb, DSV_ERR_OVERFLOW, s->path, s->dataset,
				   "too many chunks (%llu)", (unsigned long long)nchunks);
	s->info.nchunks = nchunks;
	/* a grid of one chunk across every axis but the first */
	for (int k = 0; k < s->info.ndim; k++) {
		cdims[k] = k ? o->dims[k] : chunk_rows;
		gcount[k] = k ? 1 : nchunks;
	}
	int err = dsv_h5_locate_chunks(s, o->dset, o->space, cdims, gcount, nchunks, raw, codec,
				       fl32, 1, unwritten, &bad, o->eb);
	*beyond = bad.beyond;
	if (err == DSV_ERR_CORRUPT && bad.unlocated)
		return dsv_errf_at(o->eb, DSV_ERR_FORMAT, s->path, s->dataset,
				   "cannot locate chunk %llu", (unsigned long long)bad.index);
	if (err == DSV_ERR_CORRUPT)
		return dsv_errf_at(o->eb, DSV_ERR_FORMAT, s->path, s->dataset,
				   "chunk %llu has an impossible size (%llu bytes, raw %llu)",
				   (unsigned long long)bad.index, (unsigned long long)bad.size,
				   (unsigned long long)raw);
	return err;
}

/* The codec dsview decodes itself for filter id, or DSV_CODEC_NONE. */
static dsv_codec own_codec(H5Z_filter_t id)
{
	switch (id) {
	case H5Z_FILTER_DEFLATE: return DSV_CODEC_DEFLATE;
	case DSV_H5Z_FILTER_LZ4: return DSV_CODEC_LZ4;
	case DSV_H5Z_FILTER_ZSTD: return DSV_CODEC_ZSTD;
	case DSV_H5Z_FILTER_LZF: return DSV_CODEC_LZF;
	case DSV_H5Z_FILTER_BLOSC: return DSV_CODEC_BLOSC;
	case DSV_H5Z_FILTER_BSHUF: return DSV_CODEC_BSHUF;
	case DSV_H5Z_FILTER_BLOSC2:
		return dsv_blosc2_load(NULL) ? DSV_CODEC_NONE : DSV_CODEC_BLOSC2;
	}
	return DSV_CODEC_NONE;
}

/* A chunked dataset's chunk shape and filter pipeline, as its property
 * list gives them. */
typedef struct pipeline {
	hsize_t cdims[DSV_MAX_DIMS];
	H5Z_filter_t ids[DSV_H5_MAX_FILTERS];
	unsigned cds[DSV_H5_MAX_FILTERS][DSV_H5_MAX_CD]; /* first parameters */
	size_t ncds[DSV_H5_MAX_FILTERS];
	int nf;
	int whole_rows;  /* each chunk spans whole rows */
	int fast;        /* dsview decodes every filter itself */
	unsigned opts;   /* H5Pget_chunk_opts */
	uint64_t celems; /* elements in a chunk; UINT64_MAX: too many */
} pipeline;

/* The chunk shape: whether chunks span whole rows, their elements. */
static int read_chunk_dims(dsv_h5_open *o, pipeline *pl)
{
	dsv_source *s = o->s;
	int ndim = s->info.ndim;

	if (H5Pget_chunk(o->dcpl, DSV_MAX_DIMS, pl->cdims) != ndim || pl->cdims[0] == 0)
		return dsv_errf_at(o->eb, DSV_ERR_FORMAT, s->path, s->dataset,
				   "bad chunk dimensions");
	pl->whole_rows = 1;
	pl->celems = 1;
	for (int k = 0; k < ndim; k++) {
		if (k > 0 && pl->cdims[k] != o->dims[k])
			pl->whole_rows = 0;
		if (pl->celems != UINT64_MAX && dsv_mul_u64(pl->celems, pl->cdims[k], &pl->celems))
			pl->celems = UINT64_MAX;
	}
	return 0;
}

/* dsview decodes bitshuffle on both paths (decode.c): parameters of
 * filter i it cannot decode are refused here, others kept in s. */
static int take_bshuf(dsv_h5_open *o, const pipeline *pl, int i)
{
	dsv_source *s = o->s;
	unsigned elem, block;
	int comp;
	dsv_errbuf why;
	int bad = dsv_bshuf_params(pl->cds[i], pl->ncds[i], &elem, &block, &comp, &why);

	if (!bad && elem != H5Tget_size(o->ftype))
		bad = dsv_errf(&why, DSV_ERR_UNSUPPORTED, "element size is not the dataset's");
	if (bad)
		return dsv_errf_at(o->eb, bad, s->path, s->dataset,
				   "bitshuffle parameters not supported: %s", why.msg);
	s->more->bshuf_elem = elem;
	s->more->bshuf_block = block;
	s->more->bshuf_comp = (unsigned)comp;
	return 0;
}

/* dsview decodes [shuffle] [codec] [fletcher32] itself, each optional,
 * in this order (h5py's: shuffle=True, compression=..., fletcher32=True),
 * shuffle only of the dataset's own element size; anything else (two
 * codecs, shuffle after a codec, nbit, scaleoffset) is the library's. */
static int own_pipeline(const pipeline *pl, size_t type_size)
{
	int i = 0;
	if (i < pl->nf && pl->ids[i] == H5Z_FILTER_SHUFFLE) {
		if (pl->ncds[i] < 1 || pl->cds[i][0] != type_size)
			return 0;
		i++;
	}
	if (i < pl->nf && own_codec(pl->ids[i]))
		i++;
	if (i < pl->nf && pl->ids[i] == H5Z_FILTER_FLETCHER32)
		i++;
	return i == pl->nf;
}

/* The filters, each with parameters that fit the chunk; then whether
 * dsview decodes the pipeline itself (pl->fast). */
static int read_filters(dsv_h5_open *o, pipeline *pl)
{
	dsv_source *s = o->s;
	int nf = pl->nf = H5Pget_nfilters(o->dcpl), err;

	if (nf < 0 || nf > (int)(sizeof(pl->ids) / sizeof(pl->ids[0])))
		return dsv_errf_at(o->eb, DSV_ERR_FORMAT, s->path, s->dataset,
				   "unreadable filter pipeline");
	for (int i = 0; i < nf; i++) {
		unsigned flags;
		char name[64];
		pl->ncds[i] = DSV_H5_MAX_CD;
		pl->ids[i] = H5Pget_filter2(o->dcpl, (unsigned)i, &flags, &pl->ncds[i], pl->cds[i],
					    sizeof(name), name, NULL);
		if (pl->ids[i] < 0)
			return dsv_errf_at(o->eb, DSV_ERR_FORMAT, s->path, s->dataset,
					   "unreadable filter %d", i);
		if (!dsv_h5_filter_params_ok(pl->ids[i], pl->cds[i], pl->ncds[i], pl->celems,
					     H5Tget_size(o->ftype)))
			return dsv_errf_at(o->eb, DSV_ERR_FORMAT, s->path, s->dataset,
					   "filter %s parameters do not match the chunk "
					   "(damaged file?)",
					   filter_name(pl->ids[i]));
		if (pl->ids[i] == DSV_H5Z_FILTER_BSHUF && (err = take_bshuf(o, pl, i)))
			return err;
	}
	pl->fast = own_pipeline(pl, H5Tget_size(o->ftype));
	/* With this option HDF5 stores partial edge chunks unfiltered without
	 * saying so in the filter mask: only the library knows. */
	if (nf > 0 && H5Pget_chunk_opts(o->dcpl, &pl->opts) >= 0 &&
	    (pl->opts & H5D_CHUNK_DONT_FILTER_PARTIAL_CHUNKS) && s->info.nrows % pl->cdims[0])
		pl->fast = 0;
	return 0;
}

/* A fast pipeline, read without the library: its shuffle, codec and
 * Fletcher32 and the filter bits that say a chunk skipped them. */
static int take_pipeline(dsv_source *s, const pipeline *pl)
{
	dsv_codec codec = DSV_CODEC_NONE;
	int fl32 = 0;

	s->shuffle = 0;
	for (int i = 0; i < pl->nf; i++) {
		if (pl->ids[i] == H5Z_FILTER_SHUFFLE) {
			/* 1-byte elements: the shuffle leaves them as they are */
			s->shuffle = pl->cds[i][0] > 1 ? pl->cds[i][0] : 0;
			s->more->shuffle_filter_bit = (unsigned)i;
		} else if (own_codec(pl->ids[i])) {
			codec = own_codec(pl->ids[i]);
			s->more->codec_filter_bit = (unsigned)i;
		} else {
			fl32 = 1;
			s->more->fl32_filter_bit = (unsigned)i;
		}
	}
	s->codec = codec;
	s->fletcher32 = fl32;
	if (dsv_source_dims(s))
		return DSV_ERR_NOMEM;
	for (int k = 0; k < s->info.ndim; k++)
		s->more->blosc2_shape[k] = pl->cdims[k];
	s->info.kind = DSV_SRC_H5_CHUNKED;
	return 0;
}

/* Chunks of whole rows, read without the library: the chunk map. */
static int serve_rows(dsv_h5_open *o, const pipeline *pl, uint64_t *unwritten)
{
	dsv_source *s = o->s;
	uint64_t beyond = 0;
	int err = resolve_chunks(o, pl->cdims[0], s->codec != DSV_CODEC_NONE, s->fletcher32,
				 unwritten, &beyond);
	if (err == DSV_ERR_UNSUPPORTED) {
		/* the library reads it (serve_by_library), as h5py does */
		dsv_source_why(s, "%llu indexed chunks outside the extent",
			       (unsigned long long)beyond);
		dsv_h5_drop_chunk_map(s);
		s->codec = DSV_CODEC_NONE;
		s->fletcher32 = 0;
		s->shuffle = 0;
		*unwritten = 0;
		return err;
	}
	if (!err && s->codec == DSV_CODEC_LZ4) {
		dsv_source_note_lz4_block(s);
		dsv_h5_open_block_table(s, o->file, o->lapl);
	}
	return err;
}

/* Chunks that split rows, read without the library: the N-d grid.
 * @return 0 or a dsv_err; DSV_ERR_UNSUPPORTED when the grid leaves them
 * to the library (its reason in why). */
static int serve_grid(dsv_h5_open *o, const pipeline *pl)
{
	dsv_source *s = o->s;
	int err = dsv_h5_open_grid(o, pl->cdims, s->codec != DSV_CODEC_NONE, s->fletcher32);
	if (err == DSV_ERR_UNSUPPORTED) {
		s->codec = DSV_CODEC_NONE; /* the library's, with the reason in why */
		s->fletcher32 = 0;
		s->shuffle = 0;
	}
	return err;
}

/* Leaves the dataset to the library: every filter has to be one it has
 * built in, since plugins are never loaded. Says why in why and makes
 * the chunk check the fallback's reads go through. */
static int serve_by_library(dsv_h5_open *o, const pipeline *pl)
{
	dsv_source *s = o->s;

	for (int i = 0; i < pl->nf; i++) {
		unsigned cfg = 0;
		H5Z_filter_t id = pl->ids[i];
		dsv_errbuf why;
		if (id == DSV_H5Z_FILTER_BLOSC2 && dsv_blosc2_load(&why))
			return dsv_errf_at(o->eb, DSV_ERR_UNSUPPORTED, s->path, s->dataset,
					   "filter 32026 (blosc2) needs libblosc2: %s", why.reason);
		if (id == DSV_H5Z_FILTER_BLOSC2)
			return dsv_errf_at(o->eb, DSV_ERR_UNSUPPORTED, s->path, s->dataset,
					   "filter 32026 (blosc2) is decoded by dsview only as "
					   "the one codec of a little-endian dataset (shuffle "
					   "before it and Fletcher32 after it allowed); this "
					   "dataset needs the HDF5 library, which has no Blosc2");
		if (H5Zfilter_avail(id) <= 0 || H5Zget_filter_info(id, &cfg) < 0 ||
		    !(cfg & H5Z_FILTER_CONFIG_DECODE_ENABLED))
			return dsv_errf_at(o->eb, DSV_ERR_UNSUPPORTED, s->path, s->dataset,
					   "filter %d (%s) is not available (dsview never loads "
					   "filter plugins; it decodes LZ4, Zstandard, LZF, Blosc, "
					   "bitshuffle and the HDF5 library's own filters: rewrite "
					   "the dataset with one of those where the plugin is "
					   "installed, e.g. h5repack -f GZIP=4)",
					   (int)id, filter_name(id));
	}
	if (o->conv)
		dsv_source_why(s, "%s", o->conv_why);
	else if (pl->fast)
		; /* serve_rows or dsv_h5_open_grid said why in why */
	else if (!pl->whole_rows)
		dsv_source_why(s, "chunks split rows; filters the library "
				  "decodes");
	else
		why_filters(o, pl->ids, pl->nf);
	o->cc = dsv_h5_chunk_check_new(
		s->info.ndim, o->dims, pl->cdims, H5Tget_size(o->ftype), pl->celems, pl->nf,
		pl->ids, (const unsigned(*)[DSV_H5_MAX_CD])pl->cds, pl->ncds, pl->opts);
	if (!o->cc)
		return dsv_errf_at(o->eb, DSV_ERR_NOMEM, s->path, NULL, "out of memory");
	return 0;
}

int dsv_h5_open_chunked(dsv_h5_open *o, int *fallback, hsize_t *band_rows, uint64_t *unwritten)
{
	pipeline pl = { .nf = 0 };
	int err;

	if ((err = read_chunk_dims(o, &pl)))
		return err;
	/* A band of cdims[0] rows covers whole chunks on every axis, split
	 * rows or not: fallback reads aligned to bands decode each once. */
	*band_rows = pl.cdims[0];
	if ((err = read_filters(o, &pl)))
		return err;
	/* DSVIEW_H5_GRID=0 leaves chunks that split rows to the library, for
	 * measuring the N-d grid against it (make bench-grid). */
	if (pl.fast && !o->conv && (pl.whole_rows || dsv_knob_int(DSV_KNOB_H5_GRID))) {
		if (take_pipeline(o->s, &pl))
			return dsv_errf(o->eb, DSV_ERR_NOMEM, "out of memory");
		*fallback = 0;
		err = pl.whole_rows ? serve_rows(o, &pl, unwritten) : serve_grid(o, &pl);
		if (err != DSV_ERR_UNSUPPORTED)
			return err;
	}
	if ((err = serve_by_library(o, &pl)))
		return err;
	*fallback = 1;
	return 0;
}
