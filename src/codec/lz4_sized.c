/*
 * numcodecs' LZ4 framing (Zarr's "lz4" compressor): the decoded size as 4
 * bytes little-endian, then one raw LZ4 block (LZ4_compress_fast). The
 * HDF5 filter's framing (32004, lz4.c) is another format. The size in the
 * frame must be the one the caller expects, and liblz4's safe decoder must
 * consume the whole block and make exactly that many bytes.
 */
#include <limits.h>
#include <lz4.h>
#include <string.h>

#include "codec/codec_test.h"
#include "common/bytes.h"
#include "dsview/codec.h"
#include "dsview/dsview.h"

int64_t dsv_lz4_sized_decode(void *dst, size_t dst_size, const void *src, size_t src_size)
{
	const unsigned char *p = src;
	if (src_size < 4 || src_size - 4 > INT_MAX || dst_size > INT_MAX)
		return DSV_ERR_CORRUPT;
	uint32_t n = dsv_load_le32(p);
	if (n != dst_size)
		return DSV_ERR_CORRUPT;
	if (n == 0)
		return src_size == 4 || src_size == 5 ? 0 : DSV_ERR_CORRUPT;
	int got = LZ4_decompress_safe((const char *)p + 4, dst, (int)(src_size - 4), (int)n);
	return got == (int)n ? (int64_t)n : DSV_ERR_CORRUPT;
}

int64_t dsv_lz4_sized_encode(void *dst, size_t dst_cap, const void *src, size_t src_size)
{
	unsigned char *d = dst;
	if (src_size > (size_t)LZ4_MAX_INPUT_SIZE || dst_cap < 4 || dst_cap - 4 > INT_MAX)
		return DSV_ERR_OVERFLOW;
	int k = LZ4_compress_default(src, (char *)d + 4, (int)src_size, (int)(dst_cap - 4));
	if (k <= 0 && src_size > 0)
		return DSV_ERR_OVERFLOW;
	for (int i = 0; i < 4; i++)
		d[i] = (unsigned char)(src_size >> (8 * i));
	return 4 + (int64_t)k;
}
