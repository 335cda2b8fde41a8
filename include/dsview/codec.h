/*
 * Codecs for stored chunks: the HDF5 LZ4 filter (id 32004) framing, the
 * Zstandard filter (32015), h5py's LZF filter (32000), the Blosc filter
 * (32001, decoded by libblosc), bitshuffle (32008), HDF5's Fletcher32
 * checksum (filter id 3), deflate (id 1) and shuffle (id 2), and zlib/gzip
 * streams (Zarr). What only the
 * library's other rooms use is in src/codec/codec.h; the encoders only
 * tests use, in src/codec/codec_test.h.
 *
 * LZ4 32004 framing (as written by the HDF5 LZ4 plugin / hdf5plugin):
 *   8-byte big-endian total raw size, 4-byte big-endian block size, then per
 *   block a 4-byte big-endian compressed size and the block; a block whose
 *   compressed size equals its raw size is stored raw.
 *
 * Every encoder says "dst_cap is too small" with one code, DSV_ERR_OVERFLOW
 * (the output exceeds its cap), and keeps DSV_ERR_INVALID for parameters
 * it does not take, so a caller can tell "give it more room" from a bug.
 *
 * Thread safety: all functions are reentrant; no global state.
 */
#ifndef DSVIEW_CODEC_H
#define DSVIEW_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "dsview/dsview.h"

#define DSV_H5Z_FILTER_LZ4 32004
#define DSV_LZ4_DEFAULT_BLOCK (1u << 30) /* hdf5plugin's default: one block */
#define DSV_H5Z_FILTER_ZSTD 32015
#define DSV_H5Z_FILTER_LZF 32000
#define DSV_H5Z_FILTER_BLOSC 32001
#define DSV_H5Z_FILTER_BLOSC2 32026

/* Reads the raw size from a 32004 header. @return 0 or DSV_ERR_CORRUPT. */
int dsv_lz4_raw_size(const void *src, size_t src_size, uint64_t *raw_size);

/* Decodes a 32004 frame into dst; bytes after its last block are not
 * read (the plugin's rule). Never reads or writes out of bounds.
 * @return the decoded size, which must equal the header's raw size and be
 * <= dst_cap, or DSV_ERR_CORRUPT. */
int64_t dsv_lz4_decode(void *dst, size_t dst_cap, const void *src, size_t src_size);

/*
 * Block-level access to a 32004 frame: its blocks are independent, so a
 * reader that wants a few bytes of a chunk decodes only the blocks that
 * hold them. The header gives the layout; one scan of the block headers
 * (dsv_lz4_index) gives every block's offset; then any block decodes
 * alone.
 */
typedef struct dsv_lz4_frame {
	uint64_t raw;     /* decoded bytes of the whole frame */
	uint64_t block;   /* raw bytes per block, clamped to raw (the last holds the rest) */
	uint64_t nblocks; /* 0 for an empty frame */
} dsv_lz4_frame;

/* Raw bytes of block i of f (all but the last hold f->block). */
static inline uint64_t dsv_lz4_block_raw(const dsv_lz4_frame *f, uint64_t i)
{
	uint64_t first = i * f->block;
	return f->raw - first < f->block ? f->raw - first : f->block;
}

/* Bytes of a frame's header: u64 raw size, u32 block size. */
#define DSV_LZ4_HEADER 12

/* Reads and checks the header alone (src may be just its DSV_LZ4_HEADER
 * bytes). @return 0, or DSV_ERR_CORRUPT (short, a raw size past
 * INT64_MAX, block size 0 in a frame that is not empty). */
int dsv_lz4_frame_head(const void *src, size_t src_size, dsv_lz4_frame *f);

/* Reads and checks the header of a whole frame src[0, src_size).
 * @return 0, or DSV_ERR_CORRUPT (what dsv_lz4_frame_head refuses, more
 * blocks than src_size has room for the headers of, bytes after an empty
 * frame). */
int dsv_lz4_frame_info(const void *src, size_t src_size, dsv_lz4_frame *f);

/* Scans the block headers of a frame f describes: at[i] = offset in src
 * of block i's 4-byte size, at[f->nblocks] = the end of the last block
 * (at holds f->nblocks + 1; bytes after it are not the frame's).
 * @return 0, or DSV_ERR_CORRUPT (a stored size of 0, a block past the
 * end). */
int dsv_lz4_index(const void *src, size_t src_size, const dsv_lz4_frame *f, uint64_t *at);

/* The store's block table, read and written through codec/lz4_table.h,
 * gives each block's place so that a reader decodes only the blocks of
 * the bytes it wants. */

/* Worst-case encoded size for src_size bytes in blocks of block_size. */
size_t dsv_lz4_bound(size_t src_size, size_t block_size);

/* Encodes src as a 32004 frame. level 0: LZ4 fast; level >= 1: LZ4HC level.
 * @return the encoded size, DSV_ERR_OVERFLOW (dst_cap short) or
 * DSV_ERR_INVALID (level or block size out of range). */
int64_t dsv_lz4_encode(void *dst, size_t dst_cap, const void *src, size_t src_size,
		       size_t block_size, int level);

/* As dsv_lz4_encode with LZ4 fast at an acceleration of 1 (LZ4's
 * default, = level 0 above) to DSV_LZ4_MAX_ACCELERATION: higher is faster
 * and compresses less. */
#define DSV_LZ4_MAX_ACCELERATION 65537
int64_t dsv_lz4_encode_fast(void *dst, size_t dst_cap, const void *src, size_t src_size,
			    size_t block_size, int acceleration);

/*
 * Zstandard 32015 (and Zarr's zstd): a chunk is zstd frames, with or
 * without a declared content size (ZSTD_compress declares it, streaming
 * compressors may not), decoded as libzstd's one-shot decoder does into a
 * buffer of the chunk's known size.
 */

/* dsv_zstd_raw_size's size of a frame that does not declare one. */
#define DSV_ZSTD_SIZE_UNKNOWN UINT64_MAX

/* Reads the first frame's declared content size, DSV_ZSTD_SIZE_UNKNOWN
 * when it declares none. @return 0, or DSV_ERR_CORRUPT for bytes that
 * are not a frame. */
int dsv_zstd_raw_size(const void *src, size_t src_size, uint64_t *raw_size);

/* Decodes the frames src[0..src_size) into dst. Never reads or writes out
 * of bounds. @return the decoded size (<= dst_cap: the caller checks it
 * is the whole chunk), DSV_ERR_OVERFLOW (the frames make more than
 * dst_cap) or DSV_ERR_CORRUPT (not a frame, a declared size past
 * dst_cap, trailing bytes, damaged data, a frame that makes other than
 * it declares). */
int64_t dsv_zstd_decode(void *dst, size_t dst_cap, const void *src, size_t src_size);

/* Worst-case encoded size (ZSTD_compressBound). */
size_t dsv_zstd_bound(size_t src_size);

/* Encodes src as one frame with its content size, as the HDF5 plugin
 * does. @return the encoded size, DSV_ERR_OVERFLOW (dst_cap short) or
 * DSV_ERR_INVALID (level out of range). */
int64_t dsv_zstd_encode(void *dst, size_t dst_cap, const void *src, size_t src_size, int level);

/*
 * LZF 32000: a chunk is liblzf's raw stream, no header (h5py stores a
 * chunk LZF cannot shrink raw, with the filter's bit set in its mask).
 */

/* Decodes src into exactly dst_size bytes at dst. Never reads or writes
 * out of bounds. @return dst_size, or DSV_ERR_CORRUPT (truncated stream,
 * a run or reference past dst_size, a reference before the start, or a
 * stream that decodes to fewer bytes). */
int64_t dsv_lzf_decode(void *dst, size_t dst_size, const void *src, size_t src_size);

/*
 * Blosc 32001: a chunk is one Blosc-1 buffer (16-byte header with the raw
 * size nbytes and the buffer's own size cbytes, then blocks compressed
 * with blosclz, lz4, lz4hc, snappy, zlib or zstd, optionally byte- or
 * bit-shuffled), as blosc_compress writes it for hdf5-blosc / hdf5plugin.
 */

/* Reads nbytes from the header. The buffer is the header's first cbytes
 * bytes of src; bytes after it are not read (libblosc's rule). @return 0,
 * or DSV_ERR_CORRUPT for fewer than 16 bytes, a format version other than
 * 2, a cbytes past src_size, or an nbytes past BLOSC_MAX_BUFFERSIZE. */
int dsv_blosc_raw_size(const void *src, size_t src_size, uint64_t *raw_size);

/* Decodes the buffer at src (its cbytes of src_size) into exactly dst_size bytes at dst
 * (libblosc's blosc_decompress_ctx, one thread, after checking the header
 * and block table against src_size and dst_size). Never reads or writes
 * out of bounds. @return dst_size, or DSV_ERR_CORRUPT (as
 * dsv_blosc_raw_size, nbytes != dst_size, typesize or blocksize 0, a block
 * table outside the input, damaged blocks, or another decoded size). */
int64_t dsv_blosc_decode(void *dst, size_t dst_size, const void *src, size_t src_size);

/* The filter's cd_values as hdf5-blosc's set_local leaves them: [0] filter
 * version 2, [1] Blosc format 2, [2] type size, [3] chunk bytes, [4]
 * clevel, [5] shuffle (DSV_BLOSC_NOSHUFFLE, _SHUFFLE, _BITSHUFFLE), [6]
 * compressor code (DSV_BLOSC_LZ4, _LZ4HC, _ZSTD: Blosc's own codes). */
#define DSV_BLOSC_NOSHUFFLE 0
#define DSV_BLOSC_SHUFFLE 1
#define DSV_BLOSC_BITSHUFFLE 2
#define DSV_BLOSC_LZ4 1
#define DSV_BLOSC_LZ4HC 2
#define DSV_BLOSC_ZSTD 5

/* Worst-case encoded size (the raw size plus Blosc's 16-byte header). */
size_t dsv_blosc_bound(size_t src_size);

/* Encodes src as one Blosc-1 buffer, as the filter does (blosc_compress
 * with Blosc's automatic block size; here blosc_compress_ctx, one thread,
 * no global state): typesize (over 255: 1, as the filter does), clevel
 * 0-9, shuffle and compcode as above. @return the buffer's size,
 * DSV_ERR_OVERFLOW (dst_cap short), or DSV_ERR_INVALID (bad parameters,
 * src_size over BLOSC_MAX_BUFFERSIZE). */
int64_t dsv_blosc_encode(void *dst, size_t dst_cap, const void *src, size_t src_size,
			 size_t typesize, int clevel, int shuffle, int compcode);

/*
 * Bitshuffle 32008 (kiyo-masui/bitshuffle's HDF5 filter): blocks of
 * elements bit-transposed, optionally each compressed with LZ4 or zstd
 * behind a 12-byte header; the format is described in bitshuffle.c.
 * compression is cd_values[4]: DSV_BSHUF_NONE, _LZ4 or _ZSTD.
 */
#define DSV_H5Z_FILTER_BSHUF 32008
#define DSV_BSHUF_NONE 0
#define DSV_BSHUF_LZ4 2
#define DSV_BSHUF_ZSTD 3

/* Decodes a chunk of exactly dst_size bytes of elem_size-byte elements.
 * block_size (elements, 0: the default) is used only when uncompressed;
 * a compressed chunk carries its own. Never reads or writes out of bounds;
 * allocates one block (at most dst_size bytes) while it runs.
 * @return dst_size, DSV_ERR_NOMEM, or DSV_ERR_CORRUPT (a header that does
 * not say dst_size, a block size that is 0, not a multiple of 8 elements
 * or of elem_size bytes, a block past the input or that does not decode to
 * its size, a short leftover or trailing bytes). */
int64_t dsv_bshuf_decode(void *dst, size_t dst_size, const void *src, size_t src_size,
			 size_t elem_size, size_t block_size, int compression);

/* Worst-case encoded size, or SIZE_MAX for impossible parameters. */
size_t dsv_bshuf_bound(size_t src_size, size_t elem_size, size_t block_size, int compression);

/* Encodes src as the bitshuffle plugin does (LZ4_compress_default; zstd
 * at level). For tests and fuzzing. @return the encoded size,
 * DSV_ERR_NOMEM, DSV_ERR_OVERFLOW (dst_cap short) or DSV_ERR_INVALID (bad
 * parameters). */
int64_t dsv_bshuf_encode(void *dst, size_t dst_cap, const void *src, size_t src_size,
			 size_t elem_size, size_t block_size, int compression, int level);

/* HDF5's Fletcher32 of len bytes (odd lengths padded as HDF5 does). */
uint32_t dsv_fletcher32(const void *data, size_t len);

/* Checks buf[0..len-4) against the 4-byte trailer HDF5's filter appends
 * (accepting the byte order older HDF5 versions wrote).
 * @return 0 or DSV_ERR_CHECKSUM (DSV_ERR_CORRUPT if len < 4). */
int dsv_fletcher32_check(const void *buf, size_t len);

/* Appends the trailer: writes 4 bytes at buf + len. */
void dsv_fletcher32_append(void *buf, size_t len);

/*
 * zlib and gzip streams (Zarr's "zlib" and "gzip" compressors; src/codec/
 * zlib.c). Decode must make exactly dst_size bytes from a stream that ends
 * and spans src (gzip: one or more members). @return dst_size, or
 * DSV_ERR_CORRUPT / DSV_ERR_NOMEM / DSV_ERR_OVERFLOW (sizes over 4 GiB).
 */
int64_t dsv_zlib_decode(void *dst, size_t dst_size, const void *src, size_t src_size, int gzip);

/*
 * HDF5's deflate (filter id 1, h5py's "gzip") and shuffle (id 2) filters
 * (src/codec/deflate.c), decoded without the library.
 */

/* Inflates the zlib stream at src (libdeflate) into exactly dst_size
 * bytes; bytes after the stream are not read (the library's rule). Never
 * reads or writes out of bounds. @return dst_size, DSV_ERR_NOMEM, or
 * DSV_ERR_CORRUPT (not a zlib stream, damaged, a wrong Adler-32, a stream
 * that makes other than dst_size bytes). */
int64_t dsv_deflate_decode(void *dst, size_t dst_size, const void *src, size_t src_size);

/* Undoes the shuffle of a whole chunk src[0, src_size) of esize-byte
 * elements, writing its first dst_size bytes (<= src_size) to dst, which
 * must not overlap src. @return 0, or DSV_ERR_INVALID (esize 0, dst_size
 * past src_size). */
int dsv_unshuffle(void *dst, size_t dst_size, const void *src, size_t src_size, size_t esize);

#endif
