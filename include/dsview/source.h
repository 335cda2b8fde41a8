/*
 * Sources: one array on disk (.npy, raw binary, or an HDF5 dataset) seen as a
 * sequence of chunks. A chunk is a contiguous C-order run of elements; every
 * chunk but the last holds info.chunk_elems elements, so locating a chunk is
 * arithmetic. Chunk maps and offsets are resolved at open (mount) time; the
 * read path only does pread(2) and, for filters dsview cannot decode itself,
 * reads through the HDF5 library under a global lock.
 *
 * Thread safety: after open, a source is immutable (but for the count
 * dsv_source_stored_bytes keeps, under its own lock); dsv_source_chunk,
 * dsv_source_read_chunk and dsv_source_decode_chunk may be called from any
 * number of threads. open/close are not concurrent with anything on the
 * same source.
 */
#ifndef DSVIEW_SOURCE_H
#define DSVIEW_SOURCE_H

#include <stdint.h>
#include <time.h>

#include "dsview/dsview.h"

typedef struct dsv_source dsv_source;

typedef enum dsv_codec {
	DSV_CODEC_NONE = 0,  /* stored bytes are the raw little-endian elements */
	DSV_CODEC_LZ4 = 1,   /* HDF5 filter 32004 framing */
	DSV_CODEC_ZSTD = 2,  /* HDF5 filter 32015: one zstd frame */
	DSV_CODEC_LZF = 3,   /* HDF5 filter 32000 (h5py): bare LZF stream */
	DSV_CODEC_BLOSC = 4, /* HDF5 filter 32001: one Blosc-1 buffer */
	DSV_CODEC_BSHUF = 5, /* HDF5 filter 32008: bitshuffle [+ LZ4 or zstd] */
	/* HDF5 filter 32026: one Blosc2 frame, decoded by libblosc2 */
	DSV_CODEC_BLOSC2 = 6,
	DSV_CODEC_DEFLATE = 7, /* HDF5 filter 1 (h5py's "gzip"): one zlib stream */
} dsv_codec;

typedef enum dsv_source_kind {
	DSV_SRC_NPY,
	DSV_SRC_RAW,
	DSV_SRC_H5_CONTIGUOUS,
	DSV_SRC_H5_CHUNKED,  /* chunked, no filter or [shuffle +] one of deflate, LZ4,
			      zstd, LZF, Blosc, bitshuffle [+ Fletcher32]: fast path */
	DSV_SRC_H5_FALLBACK, /* filters only the HDF5 library decodes: serialised */
	DSV_SRC_ZARR,        /* a Zarr v2 or v3 array: a directory of chunk files */
	DSV_SRC_NIFTI,       /* a NIfTI-1 or NIfTI-2 .nii image: flat, dim reversed */
	DSV_SRC_FILL,        /* rows of one value: a virtual dataset's unmapped or missing rows */
	DSV_SRC_RUN,         /* elements in one run of a file, at an offset its header gives (llm.c,
			 Megatron, an Arrow column of one record batch) */
	DSV_SRC_RUNS,        /* elements in several runs of one or more files (Arrow record
				batches, LitData chunk files): served in bands of whole runs' pieces */
	DSV_SRC_EDF,         /* an EDF/BDF recording: samples gathered from its data records */
	DSV_SRC_EEGLAB,      /* an EEGLAB .set: time-major samples gathered by channel */
	DSV_SRC_BV,          /* a BrainVision recording: samples times each channel's resolution */
	DSV_SRC_DOCUMENTS,   /* a Megatron index's documents as rows, each cut or padded to
				one length: tokens gathered from the .bin */
} dsv_source_kind;

typedef struct dsv_source_info {
	const char *path;    /* as given (resolved against the manifest dir) */
	const char *dataset; /* HDF5 dataset path, NULL for npy/raw */
	dsv_source_kind kind;
	const char *why; /* for info/log: why this kind (e.g. "filter gzip") */
	dsv_dtype dtype;
	int ndim;
	uint64_t shape[DSV_MAX_DIMS];
	uint64_t nrows;       /* shape[0] (1 for a 0-d array) */
	uint64_t row_elems;   /* product of shape[1:] */
	uint64_t nelems;      /* nrows * row_elems */
	uint64_t chunk_elems; /* elements per chunk (all but the last) */
	uint64_t nchunks;
	uint64_t stored_bytes; /* bytes on disk for the data; 0 for a Zarr
				  array: ask dsv_source_stored_bytes */
	/* LZ4 (32004) sources: raw bytes per LZ4 block, as the first stored
	 * chunk's frame says (clamped to the chunk); 0 for other codecs or a
	 * frame that could not be read (chunks are then decoded whole) */
	uint64_t lz4_block;
	/* 1 when the store's block table lets a read of a few rows read and
	 * check only their blocks */
	int lz4_table;
	struct timespec mtime;
	const char *attrs; /* an HDF5 dataset's or Zarr array's attributes, a JSON
				 object, or NULL */
	/* the names of the ndim axes, a JSON array of strings and nulls (an
	 * axis without a name), or NULL: a Zarr array's (v3 dimension_names,
	 * or v2 xarray's _ARRAY_DIMENSIONS attribute), an HDF5 dataset's (its
	 * dimension labels and scales) */
	const char *dim_names;
	/* the source's own scaling, before the view's transform: a value is
	 * stored * scale + offset (a NIfTI image's scl_slope and scl_inter);
	 * has_scale 0: none (scale 1, offset 0) */
	int has_scale;
	double scale, offset;
	/* 1 for a token stream (a token file's 1-D stream of integer ids): a
	 * view of token streams alone serves int64 unless it asks otherwise */
	int tokens;
} dsv_source_info;

/* Where one chunk's bytes are and how to turn them into elements. */
typedef struct dsv_chunk_ref {
	uint64_t index;
	uint64_t elem_start;  /* first source element the chunk holds */
	uint64_t nelems;      /* elements used from the decoded chunk */
	uint64_t offset;      /* file offset of the stored bytes */
	uint64_t stored_size; /* bytes to pread, Fletcher32 trailer included */
	uint64_t raw_size;    /* decoded size; >= nelems*esize (HDF5 edge chunks) */
	dsv_codec codec;
	int fletcher32; /* stored bytes end with HDF5's Fletcher32 of the rest */
	int fallback;   /* read with dsv_source_read_fallback, not pread */
	int grid;       /* a band of an N-d chunk grid, made from its chunks */
	/* the codec's output (the stored bytes, with no codec) is HDF5-shuffled
	 * elements of this many bytes (dsv_unshuffle); 0: not shuffled, or
	 * elements of 1 byte, which the shuffle leaves as they are */
	unsigned shuffle;
} dsv_chunk_ref;

/* True when the chunk's stored bytes are its plain elements (no codec, no
 * checksum, no HDF5-library filter, not a band of a grid): any run of them
 * can be pread alone. */
static inline int dsv_chunk_is_plain(const dsv_chunk_ref *r)
{
	return r->codec == DSV_CODEC_NONE && !r->fletcher32 && !r->shuffle && !r->fallback &&
	       !r->grid;
}

/* Opens "x.npy", "x.h5:/path/to/dset" or "x.h5" (a file with exactly one dataset). */
int dsv_source_open(const char *spec, dsv_source **out, dsv_errbuf *eb);
int dsv_source_open_npy(const char *path, dsv_source **out, dsv_errbuf *eb);
/* A NIfTI-1 or NIfTI-2 single-file image (.nii). */
int dsv_source_open_nifti(const char *path, dsv_source **out, dsv_errbuf *eb);
/* A raw file's layout, as source_dtype, source_shape and source_offset
 * (or --source-dtype, --source-shape, --source-offset) give it: offset
 * bytes of header, then little-endian elements of dtype in C order. With
 * int24 set the elements are 3-byte signed samples (BDF's), served
 * sign-extended as dtype DSV_I32. */
typedef struct dsv_raw_layout {
	dsv_dtype dtype;
	int int24;
	int ndim;
	int64_t shape[DSV_MAX_DIMS];
	uint64_t offset;
} dsv_raw_layout;

/* Sets l's dtype (and int24) from a source dtype name: any dtype but
 * bfloat16, or int24 (i3, <i3). @return 0, or -1 for a name it is not. */
int dsv_raw_dtype_parse(const char *name, dsv_raw_layout *l);
/* A raw file opened as l says: any one dimension of the shape may be -1
 * (its length from the file's size after the offset); the elements must
 * fill the file after the offset exactly, so a shape that covers part of
 * it is refused (DSV_ERR_INVALID; DSV_ERR_TRUNCATED for more than the
 * file holds). */
int dsv_source_open_raw_layout(const char *path, const dsv_raw_layout *l, dsv_source **out,
			       dsv_errbuf *eb);
/* The layout a raw source was opened with, its shape resolved (no -1):
 * offset (source_offset), int24, dtype (DSV_I32 for int24), ndim, shape.
 * @return 0, or -1 when s is no raw source (l untouched). */
int dsv_source_raw_layout_of(const dsv_source *s, dsv_raw_layout *l);
/* dsv_source_open_raw_layout with no header and a dtype of its own. */
int dsv_source_open_raw(const char *path, dsv_dtype dtype, int ndim, const int64_t *shape,
			dsv_source **out, dsv_errbuf *eb);
int dsv_source_open_h5(const char *path, const char *dataset, dsv_source **out, dsv_errbuf *eb);
/* A Zarr array: dir holds its .zarray (v2) or zarr.json (v3). */
int dsv_source_open_zarr(const char *dir, dsv_source **out, dsv_errbuf *eb);
/* Lists dataset paths in an HDF5 file (for zero-config mounts); caller frees
 * each string and the array. Only the file's own datasets: soft and
 * external links are passed over, and counted in *skipped if not NULL
 * (skipped[0] soft, skipped[1] external and user-defined). */
int dsv_h5_list_datasets(const char *path, char ***names, size_t *count, size_t skipped[2],
			 dsv_errbuf *eb);
void dsv_source_close(dsv_source *s); /* accepts NULL */

const dsv_source_info *dsv_source_get_info(const dsv_source *s);
/* Bytes on disk for the data: info.stored_bytes, or for a Zarr array the
 * sizes of its chunk files (a missing one counts 0), counted at the first
 * call (a stat of every file in the array's directory) and kept. Safe to
 * call from any thread; a caller that comes while another counts waits. */
uint64_t dsv_source_stored_bytes(const dsv_source *s);
/* True if a and b are the same data: the same path as given and the same
 * HDF5 dataset (both NULL for .npy and raw). Paths are compared as
 * strings, as the totals of info and the work list of verify count them. */
int dsv_source_same_file(const dsv_source_info *a, const dsv_source_info *b);
const char *dsv_source_kind_name(dsv_source_kind k);
/* True for a kind whose file holds the elements as one run (npy, raw,
 * NIfTI, HDF5 contiguous; fill rows hold none): read piece by piece, its
 * chunks are only dsview's units of readahead and verify (about 1 MiB),
 * not the file's. */
int dsv_source_kind_flat(dsv_source_kind k);

/* @return 0, or DSV_ERR_INVALID for an index out of range. */
int dsv_source_chunk(const dsv_source *s, uint64_t index, dsv_chunk_ref *out);
/* Reads and decodes one chunk into dst (ref->nelems elements of the source
 * dtype): pread, Fletcher32 check, LZ4 decode or fallback. scratch must hold
 * ref->stored_size and ref->raw_size bytes (see dsv_source_scratch_size).
 * On failure eb (may be NULL) says what failed inside the chunk, where the
 * chunk's own numbers do not say it all: for a band of an N-d grid, which
 * of its chunks (HDF5: where is the grid position, msg adds the stored
 * size and offset; Zarr: file is the chunk's file). Readers on the hot
 * path pass NULL and, when a chunk fails, read it again with an errbuf
 * for the words; nothing is written to eb on success. */
int dsv_source_read_chunk(const dsv_source *s, const dsv_chunk_ref *ref, void *dst, size_t dst_cap,
			  void *scratch, size_t scratch_cap, dsv_errbuf *eb);
size_t dsv_source_scratch_size(const dsv_source *s);

/* As dsv_source_read_chunk, with the stored bytes staged in the calling
 * thread's own buffer: no scratch to size. */
int dsv_source_decode_chunk(const dsv_source *s, const dsv_chunk_ref *ref, void *dst,
			    size_t dst_cap, dsv_errbuf *eb);

#endif
