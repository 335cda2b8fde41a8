/*
 * The HDF5 Blosc filter (id 32001) as hdf5-blosc and hdf5plugin write it: a
 * chunk is exactly one Blosc-1 buffer made by blosc_compress, so its 16-byte
 * header carries the raw size (nbytes) and its own length (cbytes):
 *
 *   0 version (2)  1 versionlz  2 flags  3 typesize
 *   4 nbytes  8 blocksize  12 cbytes  (little-endian int32)
 *   then, unless memcpyed, one int32 start offset per block, then the
 *   blocks (each one stream, or typesize streams, of the inner codec:
 *   blosclz, lz4/lz4hc, snappy, zlib or zstd; flags bits 5-7 say which).
 *
 * Decoding is libblosc's blosc_decompress_ctx (context version: no global
 * state, no lock, one thread). That call takes no input size: it trusts the
 * header's cbytes as the length of src. In c-blosc 1.21.3 (Debian 12) it
 * then bounds every read by cbytes (block starts and stream lengths are
 * checked against it, the memcpyed case needs cbytes == nbytes + 16) and
 * every write by destsize, and checks each stream decodes to its block's
 * size, but it never sees the real input length and returns nbytes-sized
 * results only when the header is honest. So before calling it we check,
 * ourselves: the input holds a header, cbytes is at most the input size,
 * nbytes equals the chunk size the caller expects, the format version,
 * typesize and blocksize are sane, and the block-start table lies inside
 * the first cbytes bytes with every start pointing into them. After it,
 * the result must be exactly the expected size.
 *
 * Bytes after the buffer: the buffer is the header's cbytes bytes, and
 * what follows them in a chunk is not Blosc's. z5 (before 2.0.10) wrote
 * 16 bytes past every Blosc buffer in its Zarr chunks; zarr-python
 * (numcodecs) and the HDF5 filter decode them, since both hand libblosc
 * the chunk and libblosc reads only cbytes. So do we: everything here
 * looks at src[0, cbytes) and never past it; a cbytes past the input is
 * a truncated chunk and refused.
 */
#include <blosc.h>
#include <limits.h>
#include <string.h>

#include "common/bytes.h"
#include "dsview/codec.h"
#include "dsview/dsview.h"

/* The buffer's own length, the header's cbytes, when the header is one
 * and src holds all of it. @return 0 or DSV_ERR_CORRUPT. */
static int buffer_size(const void *src, size_t src_size, size_t *cbytes)
{
	if (src_size < BLOSC_MIN_HEADER_LENGTH)
		return DSV_ERR_CORRUPT;
	*cbytes = dsv_load_le32((const uint8_t *)src + 12);
	return *cbytes <= src_size && *cbytes <= INT_MAX ? 0 : DSV_ERR_CORRUPT;
}

int dsv_blosc_raw_size(const void *src, size_t src_size, uint64_t *raw_size)
{
	size_t nbytes, cbytes;

	/* validate: at least a header, nbytes <= BLOSC_MAX_BUFFERSIZE; a
	 * version it does not know reads as zeros. */
	if (buffer_size(src, src_size, &cbytes) ||
	    ((const uint8_t *)src)[0] != BLOSC_VERSION_FORMAT ||
	    blosc_cbuffer_validate(src, cbytes, &nbytes) != 0)
		return DSV_ERR_CORRUPT;
	*raw_size = nbytes;
	return 0;
}

/* The header and block table of the buffer src[0, src_size) (src_size:
 * its cbytes) describe nbytes whose reads stay inside it. */
static int header_ok(const uint8_t *s, size_t src_size, uint64_t nbytes)
{
	uint8_t flags = s[2], typesize = s[3];
	uint32_t blocksize = dsv_load_le32(s + 8);
	uint64_t nblocks;

	if (nbytes == 0)
		return 1; /* the library writes nothing */
	/* bit 3 is reserved ("from the future"); 0x10 is "don't split" */
	if (typesize == 0 || (flags & 0x08) || blocksize == 0 || blocksize > nbytes ||
	    blocksize > BLOSC_MAX_BLOCKSIZE)
		return 0;
	nblocks = nbytes / blocksize + (nbytes % blocksize != 0);
	if (flags & BLOSC_MEMCPYED)
		return src_size == nbytes + BLOSC_MAX_OVERHEAD;
	if (nblocks > (src_size - BLOSC_MAX_OVERHEAD) / 4)
		return 0;
	for (uint64_t j = 0; j < nblocks; j++) {
		uint32_t start = dsv_load_le32(s + BLOSC_MAX_OVERHEAD + 4 * j);
		/* a block's first stream length lies after the table */
		if (start < BLOSC_MAX_OVERHEAD + 4 * nblocks || start > src_size - 4)
			return 0;
	}
	return 1;
}

int64_t dsv_blosc_decode(void *dst, size_t dst_size, const void *src, size_t src_size)
{
	uint64_t nbytes;
	size_t cbytes;
	int got;

	if (dsv_blosc_raw_size(src, src_size, &nbytes) || nbytes != dst_size ||
	    buffer_size(src, src_size, &cbytes) || !header_ok(src, cbytes, nbytes))
		return DSV_ERR_CORRUPT;
	if (nbytes == 0)
		return 0;
	got = blosc_decompress_ctx(src, dst, dst_size, 1);
	if (got < 0 || (uint64_t)got != nbytes)
		return DSV_ERR_CORRUPT;
	return (int64_t)nbytes;
}

size_t dsv_blosc_bound(size_t src_size)
{
	return src_size + BLOSC_MAX_OVERHEAD;
}

int64_t dsv_blosc_encode(void *dst, size_t dst_cap, const void *src, size_t src_size,
			 size_t typesize, int clevel, int shuffle, int compcode)
{
	static const char *const names[] = { [DSV_BLOSC_LZ4] = BLOSC_LZ4_COMPNAME,
					     [DSV_BLOSC_LZ4HC] = BLOSC_LZ4HC_COMPNAME,
					     [DSV_BLOSC_ZSTD] = BLOSC_ZSTD_COMPNAME };
	int n;

	/* As the filter does: a type too wide for Blosc's shuffle is bytes. */
	if (typesize == 0 || typesize > BLOSC_MAX_TYPESIZE)
		typesize = 1;
	if (src_size > BLOSC_MAX_BUFFERSIZE || clevel < 0 || clevel > 9 || shuffle < 0 ||
	    shuffle > BLOSC_BITSHUFFLE || compcode < 0 ||
	    compcode >= (int)(sizeof(names) / sizeof(names[0])) || !names[compcode])
		return DSV_ERR_INVALID;
	if (dst_cap > INT_MAX)
		dst_cap = INT_MAX;
	/* blocksize 0: Blosc's automatic choice, as blosc_compress makes it */
	n = blosc_compress_ctx(clevel, shuffle, typesize, src_size, src, dst, dst_cap,
			       names[compcode], 0, 1);
	/* 0: it does not fit in dst_cap; < 0: Blosc refused the parameters */
	return n > 0 ? n : n == 0 ? DSV_ERR_OVERFLOW : DSV_ERR_INVALID;
}
