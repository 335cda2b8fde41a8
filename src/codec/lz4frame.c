/*
 * LZ4 frames (the LZ4 frame format of lz4frame.h: magic, frame
 * descriptor, blocks, end mark), as Arrow IPC's LZ4_FRAME compresses each
 * buffer. Decoded by liblz4's LZ4F_decompress into a buffer of the size
 * the caller knows (Arrow stores it before the frame): the frame must
 * make exactly that many bytes, end, and span the input.
 */
#include <lz4frame.h>

#include "codec/codec.h"
#include "dsview/dsview.h"

int64_t dsv_lz4f_decode(void *dst, size_t dst_size, const void *src, size_t src_size)
{
	LZ4F_dctx *d;
	if (LZ4F_isError(LZ4F_createDecompressionContext(&d, LZ4F_VERSION)))
		return DSV_ERR_NOMEM;
	size_t in = 0, out = 0, hint = 1;
	while (hint && in < src_size) {
		size_t dn = dst_size - out, sn = src_size - in;
		hint = LZ4F_decompress(d, (char *)dst + out, &dn, (const char *)src + in, &sn,
				       NULL);
		if (LZ4F_isError(hint) || (dn == 0 && sn == 0))
			break;
		in += sn;
		out += dn;
	}
	LZ4F_freeDecompressionContext(d);
	if (LZ4F_isError(hint) || hint != 0 || in != src_size || out != dst_size)
		return DSV_ERR_CORRUPT;
	return (int64_t)out;
}
