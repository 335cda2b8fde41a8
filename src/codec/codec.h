/*
 * What the codec room offers the rest of the library beyond the installed
 * dsview/codec.h: bitshuffle's filter parameters, numcodecs' LZ4 framing
 * for Zarr chunks, Blosc2 through libblosc2, and CRC-32C. Not installed.
 *
 * Thread safety: all functions are reentrant; no global state.
 */
#ifndef DSV_CODEC_CODEC_H
#define DSV_CODEC_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "dsview/codec.h"
#include "dsview/dsview.h"

/* Reads the filter's cd_values (cd[2] element size, cd[3] block size,
 * cd[4] compression). @return 0 and the three, or DSV_ERR_UNSUPPORTED
 * with why dsview does not decode them in eb (may be NULL): "no element
 * size", ... */
int dsv_bshuf_params(const unsigned *cd, size_t ncd, unsigned *elem_size, unsigned *block_size,
		     int *compression, dsv_errbuf *eb);

/* bitshuffle's default block size in elements (cd_values[3] == 0):
 * 8192 / elem_size rounded down to a multiple of 8, at least 128. */
size_t dsv_bshuf_default_block(size_t elem_size);

/*
 * numcodecs' LZ4 framing (Zarr's "lz4" compressor; lz4_sized.c): 4 bytes
 * little-endian decoded size, then one LZ4 block. Decode makes exactly
 * dst_size bytes or fails: @return dst_size or DSV_ERR_CORRUPT. The
 * encoder is in codec_test.h.
 */
int64_t dsv_lz4_sized_decode(void *dst, size_t dst_size, const void *src, size_t src_size);

/* An LZ4 frame (lz4frame.h's format: Arrow IPC's LZ4_FRAME buffers),
 * lz4frame.c: exactly dst_size bytes, the frame ending with the input.
 * @return dst_size, DSV_ERR_CORRUPT or DSV_ERR_NOMEM. */
int64_t dsv_lz4f_decode(void *dst, size_t dst_size, const void *src, size_t src_size);

/* Blosc2, HDF5 filter 32026 (blosc2.c), decoded by libblosc2 loaded at
 * the first call. @return 0 when it is loaded, else DSV_ERR_UNSUPPORTED
 * with why in eb (may be NULL): not found, or too old. */
int dsv_blosc2_load(dsv_errbuf *eb);

/* Decodes one chunk's Blosc2 frame src[0, src_size) into exactly dst_size
 * bytes: a B2ND array whose shape is the chunk's, shape[0..ndim), or a
 * plain super-chunk whose first chunk is dst_size bytes.
 * @return dst_size, DSV_ERR_CORRUPT, or DSV_ERR_UNSUPPORTED (no
 * libblosc2). */
int64_t dsv_blosc2_decode(void *dst, size_t dst_size, const void *src, size_t src_size, int ndim,
			  const uint64_t *shape);

/* The CRC-32C (Castagnoli) of data[0, len) (crc32c.c), as Zarr v3's
 * crc32c codec stores it (little-endian, after the bytes). */
uint32_t dsv_crc32c(const void *data, size_t len);

#endif
