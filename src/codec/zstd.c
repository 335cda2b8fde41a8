/*
 * The HDF5 Zstandard filter (id 32015) and Zarr's "zstd" compressor
 * (numcodecs): a chunk is zstd frames, as ZSTD_compress writes one (with
 * its content size in the header) or as a streaming compressor writes one
 * (without it: zstd -c from a pipe, python-zstandard with
 * write_content_size=False, ZSTD_compressStream).
 *
 * We decode what the references decode: a frame that declares its size
 * into a buffer of that size (ZSTD_decompress, as the HDF5 plugin and
 * numcodecs call it); one that declares none as numcodecs' streaming path
 * does, every frame of the input in turn; skippable frames skipped,
 * nothing after the last frame. The output goes straight into the
 * caller's buffer of the chunk's known size, so a frame without a content
 * size needs no guess and no window buffer: output that would pass the
 * end is an error, never a write past it, and the caller checks it made
 * the whole chunk. A declared content size must fit the buffer (checked
 * before anything is decoded) and libzstd checks each frame makes what it
 * declares. libzstd's one-shot decoder allocates no window, so a hostile
 * window size costs nothing.
 */
#include <zstd.h>
#include <zstd_errors.h>

#include "dsview/codec.h"
#include "dsview/dsview.h"

int dsv_zstd_raw_size(const void *src, size_t src_size, uint64_t *raw_size)
{
	unsigned long long n = ZSTD_getFrameContentSize(src, src_size);

	if (n == ZSTD_CONTENTSIZE_UNKNOWN) {
		*raw_size = DSV_ZSTD_SIZE_UNKNOWN;
		return 0;
	}
	/* ERROR: not a frame (or a header cut short) */
	if (n == ZSTD_CONTENTSIZE_ERROR || n >= DSV_ZSTD_SIZE_UNKNOWN || n > INT64_MAX)
		return DSV_ERR_CORRUPT;
	*raw_size = n;
	return 0;
}

int64_t dsv_zstd_decode(void *dst, size_t dst_cap, const void *src, size_t src_size)
{
	uint64_t raw;
	size_t got;

	if (dsv_zstd_raw_size(src, src_size, &raw) ||
	    (raw != DSV_ZSTD_SIZE_UNKNOWN && raw > dst_cap) || dst_cap > INT64_MAX)
		return DSV_ERR_CORRUPT;
	/* A declared size is where the references stop (the HDF5 plugin
	 * and numcodecs size their buffer by it): a second frame after it
	 * overflows there too. */
	got = ZSTD_decompress(dst, raw != DSV_ZSTD_SIZE_UNKNOWN ? (size_t)raw : dst_cap, src,
			      src_size);
	if (ZSTD_isError(got))
		return ZSTD_getErrorCode(got) == ZSTD_error_dstSize_tooSmall ? DSV_ERR_OVERFLOW
									     : DSV_ERR_CORRUPT;
	return (int64_t)got;
}

size_t dsv_zstd_bound(size_t src_size)
{
	return ZSTD_compressBound(src_size);
}

int64_t dsv_zstd_encode(void *dst, size_t dst_cap, const void *src, size_t src_size, int level)
{
	size_t n;

	if ((uint64_t)src_size > INT64_MAX || level < ZSTD_minCLevel() || level > ZSTD_maxCLevel())
		return DSV_ERR_INVALID;
	n = ZSTD_compress(dst, dst_cap, src, src_size, level);
	if (ZSTD_isError(n))
		return ZSTD_getErrorCode(n) == ZSTD_error_dstSize_tooSmall ? DSV_ERR_OVERFLOW
									   : DSV_ERR_INVALID;
	return (int64_t)n;
}
