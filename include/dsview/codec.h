/*
 * Codecs for stored chunks: the HDF5 LZ4 filter (id 32004) framing and HDF5's
 * Fletcher32 checksum (filter id 3).
 *
 * LZ4 32004 framing (as written by the HDF5 LZ4 plugin / hdf5plugin):
 *   8-byte big-endian total raw size, 4-byte big-endian block size, then per
 *   block a 4-byte big-endian compressed size and the block; a block whose
 *   compressed size equals its raw size is stored raw.
 *
 * Thread safety: all functions are reentrant; no global state.
 */
#ifndef DSVIEW_CODEC_H
#define DSVIEW_CODEC_H

#include <stddef.h>
#include <stdint.h>

#define DSV_H5Z_FILTER_LZ4 32004
#define DSV_LZ4_DEFAULT_BLOCK (1u << 30) /* hdf5plugin's default: one block */

/* Reads the raw size from a 32004 header. @return 0 or DSV_ERR_CORRUPT. */
int dsv_lz4_raw_size(const void *src, size_t src_size, uint64_t *raw_size);

/* Decodes a 32004 frame into dst. Never reads or writes out of bounds.
 * @return the decoded size, which must equal the header's raw size and be
 * <= dst_cap, or DSV_ERR_CORRUPT. */
int64_t dsv_lz4_decode(void *dst, size_t dst_cap, const void *src,
		       size_t src_size);

/* Worst-case encoded size for src_size bytes in blocks of block_size. */
size_t dsv_lz4_bound(size_t src_size, size_t block_size);

/* Encodes src as a 32004 frame. level 0: LZ4 fast; level >= 1: LZ4HC level.
 * @return the encoded size or a negative dsv_err. */
int64_t dsv_lz4_encode(void *dst, size_t dst_cap, const void *src,
		       size_t src_size, size_t block_size, int level);

/* As dsv_lz4_encode with LZ4 fast at an acceleration of 1 (LZ4's
 * default, = level 0 above) to DSV_LZ4_MAX_ACCELERATION: higher is faster
 * and compresses less. */
#define DSV_LZ4_MAX_ACCELERATION 65537
int64_t dsv_lz4_encode_fast(void *dst, size_t dst_cap, const void *src,
			    size_t src_size, size_t block_size, int acceleration);

/* HDF5's Fletcher32 of len bytes (odd lengths padded as HDF5 does). */
uint32_t dsv_fletcher32(const void *data, size_t len);

/* Checks buf[0..len-4) against the 4-byte trailer HDF5's filter appends
 * (accepting the byte order older HDF5 versions wrote).
 * @return 0 or DSV_ERR_CHECKSUM (DSV_ERR_CORRUPT if len < 4). */
int dsv_fletcher32_check(const void *buf, size_t len);

/* Appends the trailer: writes 4 bytes at buf + len. */
void dsv_fletcher32_append(void *buf, size_t len);

#endif
