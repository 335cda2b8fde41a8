/*
 * zlib and gzip streams: Zarr's "zlib" compressor (numcodecs: zlib.compress,
 * one zlib stream) and "gzip" (numcodecs and zarr v3: a gzip file, one or
 * more members back to back, as `gzip -d` reads them). A chunk's decoded
 * size is known to the caller, so a stream must inflate to exactly that
 * many bytes, end, and span the whole input: a stream that is truncated,
 * makes more or fewer bytes, or is followed by anything but another gzip
 * member is corrupt. zlib's inflate writes only into the buffer it is
 * given, so a hostile stream can cost time bounded by its output, no more.
 */
#include <limits.h>
#include <string.h>
#include <zlib.h>

#include "codec/codec_test.h"
#include "dsview/codec.h"
#include "dsview/dsview.h"

#define WBITS 15
#define GZIP_WBITS (16 + WBITS)

int64_t dsv_zlib_decode(void *dst, size_t dst_size, const void *src, size_t src_size, int gzip)
{
	z_stream z;
	int rc;
	if (dst_size > UINT_MAX || src_size > UINT_MAX || dst_size > INT64_MAX)
		return DSV_ERR_OVERFLOW;
	memset(&z, 0, sizeof(z));
	if (inflateInit2(&z, gzip ? GZIP_WBITS : WBITS) != Z_OK)
		return DSV_ERR_NOMEM;
	z.next_in = (Bytef *)(uintptr_t)src;
	z.avail_in = (uInt)src_size;
	z.next_out = dst;
	z.avail_out = (uInt)dst_size;
	for (;;) {
		rc = inflate(&z, Z_NO_FLUSH);
		if (rc == Z_STREAM_END && gzip && z.avail_in > 0) {
			if (inflateReset(&z) != Z_OK) /* the next member */
				break;
			continue;
		}
		if (rc != Z_OK)
			break;
		/* Z_OK with the output full or the input used up: the stream
		 * wants more room or more bytes than there are */
		if (z.avail_out == 0 || z.avail_in == 0) {
			rc = Z_DATA_ERROR;
			break;
		}
	}
	/* total_out restarts with each gzip member: what was written is how
	 * far the output pointer moved */
	size_t made = (size_t)(z.next_out - (Bytef *)dst), left = z.avail_in;
	inflateEnd(&z);
	if (rc == Z_MEM_ERROR)
		return DSV_ERR_NOMEM;
	if (rc != Z_STREAM_END || left != 0 || made != dst_size)
		return DSV_ERR_CORRUPT;
	return (int64_t)made;
}

size_t dsv_zlib_bound(size_t src_size, int gzip)
{
	/* compressBound plus gzip's header and trailer (18 bytes; 10 + 8) */
	return (size_t)compressBound((uLong)src_size) + (gzip ? 18 : 0);
}

int64_t dsv_zlib_encode(void *dst, size_t dst_cap, const void *src, size_t src_size, int level,
			int gzip)
{
	z_stream z;
	if (src_size > UINT_MAX || dst_cap > UINT_MAX)
		return DSV_ERR_OVERFLOW;
	memset(&z, 0, sizeof(z));
	if (level < 0 || level > 9)
		level = Z_DEFAULT_COMPRESSION;
	if (deflateInit2(&z, level, Z_DEFLATED, gzip ? GZIP_WBITS : WBITS, 8, Z_DEFAULT_STRATEGY) !=
	    Z_OK)
		return DSV_ERR_NOMEM;
	z.next_in = (Bytef *)(uintptr_t)src;
	z.avail_in = (uInt)src_size;
	z.next_out = dst;
	z.avail_out = (uInt)dst_cap;
	int rc = deflate(&z, Z_FINISH);
	int64_t n = rc == Z_STREAM_END ? (int64_t)z.total_out : DSV_ERR_OVERFLOW;
	deflateEnd(&z);
	return n;
}
