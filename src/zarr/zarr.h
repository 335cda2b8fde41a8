/*
 * Zarr array metadata: a v2 `.zarray` or a v3 `zarr.json`, parsed (jansson)
 * into what a reader of the array's chunk files needs. The text is
 * untrusted: every number is range-checked, products are overflow-checked,
 * and anything the read path would not serve exactly (filters, sharding,
 * object or structured dtypes, an unknown compressor) is refused with the
 * reason. Thread safety: pure functions of their arguments.
 */
#ifndef DSV_ZARR_ZARR_H
#define DSV_ZARR_ZARR_H

#include <stddef.h>
#include <stdint.h>

#include "dsview/dsview.h"

/* What a chunk file's bytes are, before they are the chunk's elements. */
typedef enum dsv_zarr_codec {
	DSV_ZC_NONE,  /* the elements themselves */
	DSV_ZC_BLOSC, /* one Blosc-1 buffer */
	DSV_ZC_ZSTD,  /* one Zstandard frame */
	DSV_ZC_LZ4,   /* numcodecs LZ4: 4-byte little-endian size, one LZ4 block */
	DSV_ZC_ZLIB,  /* a zlib stream */
	DSV_ZC_GZIP,  /* a gzip member */
} dsv_zarr_codec;

/* A chunk larger than this (decoded) is refused: a hostile .zarray must
 * not make a reader allocate gigabytes per chunk. */
#define DSV_ZARR_MAX_CHUNK_BYTES (1ull << 30)

typedef struct dsv_zarr_meta {
	int version; /* 2 or 3 */
	int ndim;    /* 0 .. DSV_MAX_DIMS */
	uint64_t shape[DSV_MAX_DIMS];
	uint64_t chunks[DSV_MAX_DIMS]; /* a chunk's shape, every one >= 1 */
	uint64_t grid[DSV_MAX_DIMS];   /* chunks along each axis (ceil) */
	uint64_t nchunks;              /* product of grid (1 for 0-d) */
	uint64_t chunk_elems;          /* product of chunks */
	dsv_dtype dtype;
	int big_endian; /* the stored elements are big-endian */
	int fortran;    /* a chunk's elements are in Fortran order */
	char sep;       /* '.' or '/' between a key's indices */
	int key_prefix; /* v3 default encoding: keys begin "c" + sep */
	dsv_zarr_codec codec;
	int has_fill;          /* 0: fill_value null, missing chunks read as zeros */
	unsigned char fill[8]; /* one element, little-endian */
	char compressor[32];   /* its name, for info ("blosc", "none") */
} dsv_zarr_meta;

/* Parses metadata text (version 2: a .zarray; 3: a zarr.json) into m.
 * @return 0, or DSV_ERR_INVALID / DSV_ERR_NOMEM with the reason in eb. */
int dsv_zarr_parse(const char *text, size_t len, int version, dsv_zarr_meta *m, dsv_errbuf *eb);

/* The attributes of a v3 zarr.json, or the whole text of a v2 .zattrs, as
 * compact JSON text into *out, NULL when there are none; and the names of
 * the array's ndim axes, a JSON array of strings (and nulls: no name) into
 * *dims, NULL when none are given: v3's dimension_names, refused unless
 * ndim strings or nulls, or v2's _ARRAY_DIMENSIONS attribute (xarray's
 * convention), taken when it is ndim strings and passed over otherwise (it
 * stays in the attributes). Both malloc'd; the caller frees them.
 * @return 0, or DSV_ERR_FORMAT (not JSON, attributes not an object, bad
 * dimension_names) / DSV_ERR_NOMEM with the reason in eb and nothing kept. */
int dsv_zarr_attrs(const char *text, size_t len, int version, int ndim, char **out, char **dims,
		   dsv_errbuf *eb);

/* The path, relative to the array's directory, of the chunk at grid index
 * idx[0..ndim) into out. @return 0, or DSV_ERR_INVALID when it does not fit
 * in cap or an index is outside the grid. */
int dsv_zarr_chunk_key(const dsv_zarr_meta *m, const uint64_t *idx, char *out, size_t cap);

/* True when rel (a path relative to the array's directory) is the key of
 * a chunk inside the grid, exactly as dsv_zarr_chunk_key spells it. */
int dsv_zarr_is_chunk_key(const dsv_zarr_meta *m, const char *rel);

#endif
