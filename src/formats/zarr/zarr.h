/*
 * Zarr array metadata: a v2 `.zarray` or a v3 `zarr.json`, parsed (jansson)
 * into what a reader of the array's chunk files needs. The text is
 * untrusted: every number is range-checked, products are overflow-checked,
 * and anything the read path would not serve exactly (filters, sharding,
 * object or structured dtypes, an unknown codec) is refused with the
 * reason. Thread safety: pure functions of their arguments.
 */
#ifndef DSV_ZARR_ZARR_H
#define DSV_ZARR_ZARR_H

#include <stddef.h>
#include <stdint.h>

#include "dsview/dsview.h"
#include "source/format.h"

/* Zarr arrays (v2, v3) and groups: a directory or an object storage
 * prefix holding the metadata (zarr.c). */
extern const dsv_format dsv_format_zarr;

/* What a chunk file's bytes are, before they are the chunk's elements. */
typedef enum dsv_zarr_codec {
	DSV_ZC_NONE,   /* the elements themselves */
	DSV_ZC_BLOSC,  /* one Blosc-1 buffer */
	DSV_ZC_ZSTD,   /* one Zstandard frame */
	DSV_ZC_LZ4,    /* numcodecs LZ4: 4-byte little-endian size, one LZ4 block */
	DSV_ZC_ZLIB,   /* a zlib stream */
	DSV_ZC_GZIP,   /* a gzip member */
	DSV_ZC_CRC32C, /* v3 crc32c: the bytes, then their CRC-32C (4 bytes, little-endian) */
} dsv_zarr_codec;

/* A shard of more inner chunks than this is refused: its index (16 bytes
 * an inner chunk) would pass 16 MiB. */
#define DSV_ZARR_MAX_SHARD_CHUNKS (1u << 20)

/* At most this many bytes-to-bytes codecs (v3: one compressor, crc32c). */
#define DSV_ZARR_MAX_STEPS 4

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
	int big_endian;       /* the stored elements are big-endian */
	int fortran;          /* a chunk's elements are in Fortran order */
	char sep;             /* '.' or '/' between a key's indices */
	int key_prefix;       /* v3 default encoding: keys begin "c" + sep */
	dsv_zarr_codec codec; /* the compressor (DSV_ZC_NONE: none) */
	/* every bytes-to-bytes codec, in the order it was applied when the
	 * chunk was written (the compressor among them); decoded in reverse */
	dsv_zarr_codec step[DSV_ZARR_MAX_STEPS];
	int nsteps;
	/* v3 sharding_indexed: chunks[] is then the inner chunk's shape (what
	 * the grid reads), and each key names a shard file holding a box of
	 * per_shard inner chunks, its index (C order, one little- or
	 * big-endian (offset, nbytes) pair of u64 an inner chunk, all-ones
	 * for one never written) at its start or end, then a CRC-32C of the
	 * index when index_crc. */
	int sharded;
	uint64_t shard[DSV_MAX_DIMS];     /* a shard's shape, a multiple of chunks[] */
	uint64_t per_shard[DSV_MAX_DIMS]; /* inner chunks along each axis of a shard */
	uint64_t shard_chunks;            /* product of per_shard */
	int index_at_start, index_crc, index_big_endian;
	uint64_t kgrid[DSV_MAX_DIMS]; /* files along each axis: shards, or chunks */
	int has_fill;                 /* 0: fill_value null, missing chunks read as zeros */
	unsigned char fill[8];        /* one element, little-endian */
	char compressor[32];          /* its name, for info ("blosc", "none") */
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

/* Bytes of a shard's index as stored: 16 an inner chunk, 4 more for the
 * CRC-32C. */
static inline uint64_t dsv_zarr_index_bytes(const dsv_zarr_meta *m)
{
	return m->shard_chunks * 16 + (m->index_crc ? 4 : 0);
}

/* Decodes a shard's stored index raw[0, n) (n must be
 * dsv_zarr_index_bytes) of a shard file of file_size bytes into
 * out[2 * shard_chunks]: (offset, nbytes) pairs, UINT64_MAX twice for an
 * inner chunk never written. Every other entry must lie inside the file.
 * @return 0, or DSV_ERR_CORRUPT with the reason in eb (may be NULL). */
int dsv_zarr_shard_index(const dsv_zarr_meta *m, const unsigned char *raw, size_t n,
			 uint64_t file_size, uint64_t *out, dsv_errbuf *eb);

/* Decodes one chunk's stored bytes src[0, n) through m's bytes-to-bytes
 * codecs, last applied first, into exactly size bytes at dst (the
 * elements, as "bytes" stored them). src is not changed.
 * @return 0, DSV_ERR_CORRUPT (a codec failed, a checksum differs, the
 * size is wrong) or DSV_ERR_NOMEM. */
int dsv_zarr_decode(const dsv_zarr_meta *m, void *dst, size_t size, const unsigned char *src,
		    size_t n);

/* The shard indexes a reader has read, kept (zarr_shard.c): bounded, and
 * safe to share between threads. */
typedef struct dsv_zarr_index_cache dsv_zarr_index_cache;

/* @return an empty cache for m's shards, or NULL when out of memory. */
dsv_zarr_index_cache *dsv_zarr_index_cache_create(const dsv_zarr_meta *m);
/* Frees c and what it holds; NULL is fine. */
void dsv_zarr_index_cache_destroy(dsv_zarr_index_cache *c);

/* Where inner chunk inner (C order within its shard) of shard (the shard's
 * linear index in kgrid) is in the shard's open file fd of file_size
 * bytes: *off and *len, from the cached index or, at the first call for
 * the shard, one read of it. @return 0, DSV_ERR_NOTFOUND (never written:
 * the fill value), or an error with the reason in eb (a corrupt index). */
int dsv_zarr_index_find(dsv_zarr_index_cache *c, const dsv_zarr_meta *m, int fd, uint64_t file_size,
			uint64_t shard, uint64_t inner, uint64_t *off, uint64_t *len,
			dsv_errbuf *eb);

/* dsv_zarr_index_find for a shard in object storage: the object key
 * under net, its index fetched by one ranged GET at the first call for
 * the shard; etag (DSV_NET_ETAG_MAX bytes) gets the ETag the index was
 * read under, for the inner chunk's GET. @return as dsv_zarr_index_find;
 * DSV_ERR_NOTFOUND also when there is no such object (a shard never
 * written); DSV_ERR_IO when the GET failed (eb says why). */
struct dsv_net_dir;
int dsv_zarr_index_find_object(dsv_zarr_index_cache *c, const dsv_zarr_meta *m,
			       const struct dsv_net_dir *net, const char *key, uint64_t shard,
			       uint64_t inner, uint64_t *off, uint64_t *len, char *etag,
			       dsv_errbuf *eb);

/* The path, relative to the array's directory, of the file at index
 * idx[0..ndim) of kgrid (a chunk, or a shard when sharded) into out. @return 0, or DSV_ERR_INVALID when it does not fit
 * in cap or an index is outside the grid. */
int dsv_zarr_chunk_key(const dsv_zarr_meta *m, const uint64_t *idx, char *out, size_t cap);

/* True when rel (a path relative to the array's directory) is the key of
 * a file inside kgrid, exactly as dsv_zarr_chunk_key spells it. */
int dsv_zarr_is_chunk_key(const dsv_zarr_meta *m, const char *rel);

#endif
