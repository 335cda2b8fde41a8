/*
 * HDF5's deflate filter (id 1, h5py's "gzip") and shuffle filter (id 2),
 * decoded without the library so that any thread can decode them.
 *
 * A deflate chunk is one zlib stream (RFC 1950: the library's filter calls
 * zlib's compress2), inflated here by libdeflate into a buffer of the
 * chunk's known size: the stream must make exactly that many bytes and
 * its Adler-32 must match. Bytes after the stream's end are not read, as
 * the library's filter does not read them. libdeflate writes only into
 * the buffer it is given, so a hostile stream costs time bounded by its
 * output, no more.
 *
 * Shuffle stores byte k of every element together: a chunk of n bytes of
 * s-byte elements is s planes of n / s bytes, byte k of element i at
 * k * (n / s) + i, then the n % s bytes left over as they were. Chunks of
 * 1-byte elements or of one element are stored as they are.
 */
#include <libdeflate.h>
#include <string.h>

#include "codec/codec.h"
#include "dsview/codec.h"
#include "dsview/dsview.h"

int64_t dsv_deflate_decode(void *dst, size_t dst_size, const void *src, size_t src_size)
{
	struct libdeflate_decompressor *d;
	size_t in = 0, out = 0;
	enum libdeflate_result rc;

	if (dst_size > INT64_MAX)
		return DSV_ERR_OVERFLOW;
	d = libdeflate_alloc_decompressor();
	if (!d)
		return DSV_ERR_NOMEM;
	rc = libdeflate_zlib_decompress_ex(d, src, src_size, dst, dst_size, &in, &out);
	libdeflate_free_decompressor(d);
	if (rc != LIBDEFLATE_SUCCESS || out != dst_size)
		return DSV_ERR_CORRUPT;
	return (int64_t)out;
}

/* One output element of each row of the planes, for a fixed size: the
 * compiler unrolls the inner loop for the common sizes. */
static inline void unshuffle_elems(uint8_t *restrict d, const uint8_t *restrict s, size_t plane,
				   size_t first, size_t count, size_t esize)
{
	for (size_t i = first; i < first + count; i++)
		for (size_t k = 0; k < esize; k++)
			d[(i - first) * esize + k] = s[k * plane + i];
}

/* Elements [first, first + count) of planes of plane bytes each into d,
 * in tiles that keep each plane's run in cache. */
static void unshuffle_run(uint8_t *d, const uint8_t *s, size_t plane, size_t count, size_t esize)
{
	enum { TILE = 4096 };
	for (size_t i = 0; i < count; i += TILE) {
		size_t c = count - i < TILE ? count - i : TILE;
		uint8_t *o = d + i * esize;
		switch (esize) {
		case 2: unshuffle_elems(o, s, plane, i, c, 2); break;
		case 4: unshuffle_elems(o, s, plane, i, c, 4); break;
		case 8: unshuffle_elems(o, s, plane, i, c, 8); break;
		default: unshuffle_elems(o, s, plane, i, c, esize); break;
		}
	}
}

int dsv_unshuffle(void *dst, size_t dst_size, const void *src, size_t src_size, size_t esize)
{
	const uint8_t *s = src;
	uint8_t *d = dst;

	if (esize == 0 || dst_size > src_size)
		return DSV_ERR_INVALID;
	size_t plane = src_size / esize;
	if (esize == 1 || plane <= 1) {
		memmove(d, s, dst_size);
		return 0;
	}
	/* whole elements from the planes, then the bytes of the element
	 * dst_size ends in, then the leftover (stored as is) */
	size_t whole = dst_size / esize, part = dst_size % esize;
	if (whole > plane)
		whole = plane;
	unshuffle_run(d, s, plane, whole, esize);
	size_t at = whole * esize;
	if (whole < plane) {
		for (size_t k = 0; k < part; k++)
			d[at + k] = s[k * plane + whole];
	} else if (dst_size > at) {
		memcpy(d + at, s + at, dst_size - at);
	}
	return 0;
}
