/*
 * The HDF5 Zstandard filter (id 32015) as HDF5Plugin-Zstandard and
 * hdf5plugin write it: a chunk is exactly one zstd frame made by
 * ZSTD_compress, so the frame header carries the chunk's raw size. The
 * plugin's own decoder trusts that size for its malloc; we do not: the frame
 * must declare its content size, the declared size must fit the caller's
 * buffer, the frame must span the whole input (no trailing bytes, no second
 * frame), and libzstd must produce exactly the declared size. libzstd's
 * one-shot decoder writes only into dst and allocates no window buffer, so
 * a hostile window size costs nothing.
 */
#include <zstd.h>
#include <zstd_errors.h>

#include "dsview/codec.h"
#include "dsview/dsview.h"

int dsv_zstd_raw_size(const void *src, size_t src_size, uint64_t *raw_size)
{
	unsigned long long n = ZSTD_getFrameContentSize(src, src_size);

	/* UNKNOWN: a streamed frame without a size; ERROR: not a frame. */
	if (n == ZSTD_CONTENTSIZE_UNKNOWN || n == ZSTD_CONTENTSIZE_ERROR || n > INT64_MAX)
		return DSV_ERR_CORRUPT;
	*raw_size = n;
	return 0;
}

int64_t dsv_zstd_decode(void *dst, size_t dst_cap, const void *src, size_t src_size)
{
	uint64_t raw;
	size_t frame, got;

	if (dsv_zstd_raw_size(src, src_size, &raw) || raw > dst_cap)
		return DSV_ERR_CORRUPT;
	frame = ZSTD_findFrameCompressedSize(src, src_size);
	if (ZSTD_isError(frame) || frame != src_size)
		return DSV_ERR_CORRUPT;
	/* dst_cap is clamped to the declared size: a frame whose blocks hold
	 * more than its header says fails here instead of writing past it. */
	got = ZSTD_decompress(dst, (size_t)raw, src, src_size);
	if (ZSTD_isError(got) || got != raw)
		return DSV_ERR_CORRUPT;
	return (int64_t)raw;
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
