/*
 * Size limits on the decoders the HDF5 library runs for dsview's fallback
 * reads (guard.c sets them per read, through dsv_h5_decode_arm).
 *
 * HDF5 1.10 copies a whole chunk out of whatever its filter pipeline
 * returned, without checking the size: a gzip chunk that inflates to 24
 * bytes of a 48-byte chunk is read 24 bytes past the end of a heap buffer
 * (`make fuzz`), and `verify` said OK while the mount served those bytes
 * as data. So the decoders the library runs for us must make exactly the
 * size the dataset's chunk calls for: our LZ4 filter (32004, registered
 * in-process so the library never needs a plugin for it), zlib's inflate,
 * which the library's own (unreplaceable: H5Zregister refuses predefined
 * ids) deflate filter calls through the dynamic linker, so this program's
 * inflate() below is the one it gets, and libaec's SZ_BufftoBuffDecompress
 * for szip, interposed the same way. The sizes are set per fallback read,
 * under the global lock; 0 means not checked.
 *
 * The interposed functions are the whole process's, though: anything else
 * calling inflate (another library, a test) gets ours too. So the checks
 * apply only to the thread that holds the HDF5 lock, which is the only
 * one the library runs in and the only one that writes the expected
 * sizes; every other caller goes straight to the real function, found
 * once under pthread_once (no unlocked write, and no call before the
 * library's set-up fails).
 */
#include <hdf5.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <zlib.h>

#include "codec/codec.h"
#include "dsview/codec.h"
#include "formats/h5/h5.h"

static size_t expect[DSV_H5_NDEC]; /* under the lock; 0: unchecked */

typedef int (*inflate_fn)(z_streamp, int);
typedef int (*szip_fn)(void *, size_t *, const void *, size_t, void *);
static pthread_once_t real_once = PTHREAD_ONCE_INIT;
static inflate_fn real_inflate;
static szip_fn real_szip;

static void find_real(void)
{
	*(void **)&real_inflate = dlsym(RTLD_NEXT, "inflate");
	*(void **)&real_szip = dlsym(RTLD_NEXT, "SZ_BufftoBuffDecompress");
}

int inflate(z_streamp strm, int flush)
{
	pthread_once(&real_once, find_real);
	int rc = real_inflate ? real_inflate(strm, flush) : Z_STREAM_ERROR;
	if (!dsv_h5_lock_held())
		return rc;
	if (expect[DSV_H5_DEC_DEFLATE] && (rc == Z_OK || rc == Z_STREAM_END) &&
	    (strm->total_out > expect[DSV_H5_DEC_DEFLATE] ||
	     (rc == Z_STREAM_END && strm->total_out != expect[DSV_H5_DEC_DEFLATE])))
		return Z_DATA_ERROR;
	return rc;
}

/* szip: the library takes the decoded size from the chunk's first 4 bytes
 * and hands libsz (libaec) a buffer of that size; a chunk that claims less
 * than a chunk is copied out whole just the same. Interposed like inflate;
 * the parameter block is opaque here (libaec's SZ_com_t). */
int SZ_BufftoBuffDecompress(void *dest, size_t *destLen, const void *source, size_t sourceLen,
			    void *param);
int SZ_BufftoBuffDecompress(void *dest, size_t *destLen, const void *source, size_t sourceLen,
			    void *param)
{
	pthread_once(&real_once, find_real);
	size_t want = dsv_h5_lock_held() ? expect[DSV_H5_DEC_SZIP] : 0;
	if (!real_szip || (want && *destLen != want))
		return -1; /* SZ_PARAM_ERROR: the library fails the read */
	int rc = real_szip(dest, destLen, source, sourceLen, param);
	if (rc == 0 && want && *destLen != want)
		return -1;
	return rc;
}

/* The LZ4 filter (32004) registered in-process, so that the library
 * fallback (chunks that split rows, shuffle in front, big-endian data)
 * decodes LZ4 with our bounds-checked codec instead of a plugin. Called by
 * the library under the global lock. Returns the new size, 0 on failure. */
static size_t lz4_filter(unsigned flags, size_t ncd, const unsigned cd[], size_t nbytes,
			 size_t *buf_size, void **buf)
{
	uint64_t raw;
	void *out;
	int64_t n;

	if (flags & H5Z_FLAG_REVERSE) {
		/* An LZ4 block expands at most 255 times; a header claiming
		 * more is hostile, and we refuse it before allocating. */
		if (dsv_lz4_raw_size(*buf, nbytes, &raw) != 0 || raw == 0 || raw / 256 > nbytes ||
		    raw > SIZE_MAX / 2 || (expect[DSV_H5_DEC_LZ4] && raw != expect[DSV_H5_DEC_LZ4]))
			return 0;
		out = H5allocate_memory((size_t)raw, 0);
		if (!out)
			return 0;
		n = dsv_lz4_decode(out, (size_t)raw, *buf, nbytes);
	} else {
		size_t block = ncd > 0 && cd[0] > 0 ? cd[0] : DSV_LZ4_DEFAULT_BLOCK;
		size_t cap = dsv_lz4_bound(nbytes, block);
		out = cap ? H5allocate_memory(cap, 0) : NULL;
		if (!out)
			return 0;
		n = dsv_lz4_encode(out, cap, *buf, nbytes, block, 0);
	}
	if (n <= 0) {
		H5free_memory(out);
		return 0;
	}
	H5free_memory(*buf);
	*buf = out;
	*buf_size = (size_t)n;
	return (size_t)n;
}

/* Our decoders of Zstandard (32015), LZF (32000) and Blosc (32001) for
 * the library's reads: decode only (dsview never writes chunks through
 * the library). The decoded size is the frame's content size (zstd; the
 * chunk size guard.c expects for a frame that declares none), the
 * header's nbytes (Blosc), or for LZF the chunk size h5py records in
 * cd[2]; either must be what the read expects when guard.c knows it.
 * Returns the new size, 0 on failure. */
static size_t decode_filter(int dec, unsigned flags, size_t ncd, const unsigned cd[], size_t nbytes,
			    size_t *buf_size, void **buf)
{
	uint64_t raw = expect[dec];
	void *out;
	int64_t n;

	if (!(flags & H5Z_FLAG_REVERSE))
		return 0;
	if (dec == DSV_H5_DEC_ZSTD || dec == DSV_H5_DEC_BLOSC) {
		uint64_t declared;
		if ((dec == DSV_H5_DEC_ZSTD ? dsv_zstd_raw_size(*buf, nbytes, &declared)
					    : dsv_blosc_raw_size(*buf, nbytes, &declared)) ||
		    (raw && declared != raw && declared != DSV_ZSTD_SIZE_UNKNOWN))
			return 0;
		/* a zstd frame without a size: the chunk's, when known */
		if (declared != DSV_ZSTD_SIZE_UNKNOWN)
			raw = declared;
	} else if (!raw) {
		raw = ncd > 2 ? cd[2] : 0;
	}
	/* A zstd block of n bytes makes at most 128 KiB (an RLE block: 4
	 * bytes), an LZF reference of 3 bytes 264, Blosc's inner codecs at
	 * most what zstd does (blosclz, LZ4: 255 a byte): a size past 65536 times the
	 * input is hostile and refused before allocating. */
	if (raw == 0 || raw > SIZE_MAX / 2 || raw / 65536 > nbytes)
		return 0;
	out = H5allocate_memory((size_t)raw, 0);
	if (!out)
		return 0;
	n = dec == DSV_H5_DEC_ZSTD    ? dsv_zstd_decode(out, (size_t)raw, *buf, nbytes)
	    : dec == DSV_H5_DEC_BLOSC ? dsv_blosc_decode(out, (size_t)raw, *buf, nbytes)
				      : dsv_lzf_decode(out, (size_t)raw, *buf, nbytes);
	if (n != (int64_t)raw) {
		H5free_memory(out);
		return 0;
	}
	H5free_memory(*buf);
	*buf = out;
	*buf_size = (size_t)n;
	return (size_t)n;
}

static size_t zstd_filter(unsigned flags, size_t ncd, const unsigned cd[], size_t nbytes,
			  size_t *buf_size, void **buf)
{
	return decode_filter(DSV_H5_DEC_ZSTD, flags, ncd, cd, nbytes, buf_size, buf);
}

static size_t lzf_filter(unsigned flags, size_t ncd, const unsigned cd[], size_t nbytes,
			 size_t *buf_size, void **buf)
{
	return decode_filter(DSV_H5_DEC_LZF, flags, ncd, cd, nbytes, buf_size, buf);
}

static size_t blosc_filter(unsigned flags, size_t ncd, const unsigned cd[], size_t nbytes,
			   size_t *buf_size, void **buf)
{
	return decode_filter(DSV_H5_DEC_BLOSC, flags, ncd, cd, nbytes, buf_size, buf);
}

/* Our bitshuffle (32008) decoder for the library's reads, decode only.
 * The decoded size: a compressed chunk's header says it, an uncompressed
 * chunk keeps its size; either must be what the read expects when guard.c
 * knows it, and a whole number of elements (cd[2] bytes). Returns the new
 * size, 0 on failure. */
static size_t bshuf_filter(unsigned flags, size_t ncd, const unsigned cd[], size_t nbytes,
			   size_t *buf_size, void **buf)
{
	uint64_t raw = nbytes;
	unsigned elem, block;
	int comp;
	void *out;

	if (!(flags & H5Z_FLAG_REVERSE) || dsv_bshuf_params(cd, ncd, &elem, &block, &comp, NULL))
		return 0;
	if (comp != DSV_BSHUF_NONE) {
		/* The 12-byte header's u64 BE raw size. An LZ4 block expands at
		 * most 255 times, a zstd frame at most 65536: a size past that
		 * is hostile and refused before allocating. */
		const uint8_t *p = *buf;
		if (nbytes < 12)
			return 0;
		raw = 0;
		for (int i = 0; i < 8; i++)
			raw = raw << 8 | p[i];
		if (raw / 65536 > nbytes)
			return 0;
	}
	if (raw == 0 || raw > SIZE_MAX / 2 ||
	    (expect[DSV_H5_DEC_BSHUF] && raw != expect[DSV_H5_DEC_BSHUF]))
		return 0;
	out = H5allocate_memory((size_t)raw, 0);
	if (!out)
		return 0;
	if (dsv_bshuf_decode(out, (size_t)raw, *buf, nbytes, elem, block, comp) != (int64_t)raw) {
		H5free_memory(out);
		return 0;
	}
	H5free_memory(*buf);
	*buf = out;
	*buf_size = (size_t)raw;
	return (size_t)raw;
}

/* encoder_present is 1 for the decode-only ones too: HDF5 refuses to
 * create a dataset whose filter cannot encode, and `dsview pack` creates
 * its stores with these filters. It never encodes through the library
 * (pack writes whole chunks with H5Dwrite_chunk), and an attempt fails. */
static const H5Z_class2_t classes[] = {
	{ .version = H5Z_CLASS_T_VERS,
	  .id = DSV_H5Z_FILTER_LZ4,
	  .encoder_present = 1,
	  .decoder_present = 1,
	  .name = "lz4 (dsview)",
	  .filter = lz4_filter },
	{ .version = H5Z_CLASS_T_VERS,
	  .id = DSV_H5Z_FILTER_ZSTD,
	  .encoder_present = 1,
	  .decoder_present = 1,
	  .name = "zstd (dsview, decode only)",
	  .filter = zstd_filter },
	{ .version = H5Z_CLASS_T_VERS,
	  .id = DSV_H5Z_FILTER_LZF,
	  .encoder_present = 0,
	  .decoder_present = 1,
	  .name = "lzf (dsview, decode only)",
	  .filter = lzf_filter },
	{ .version = H5Z_CLASS_T_VERS,
	  .id = DSV_H5Z_FILTER_BLOSC,
	  .encoder_present = 1,
	  .decoder_present = 1,
	  .name = "blosc (dsview, decode only)",
	  .filter = blosc_filter },
	{ .version = H5Z_CLASS_T_VERS,
	  .id = DSV_H5Z_FILTER_BSHUF,
	  .encoder_present = 1,
	  .decoder_present = 1,
	  .name = "bitshuffle (dsview, decode only)",
	  .filter = bshuf_filter },
};

herr_t dsv_h5_decode_init(void)
{
	for (size_t i = 0; i < sizeof(classes) / sizeof(classes[0]); i++)
		if (H5Zregister(&classes[i]) < 0)
			return -1;
	return 0;
}

int dsv_h5_decoder_of(H5Z_filter_t id)
{
	switch (id) {
	case H5Z_FILTER_DEFLATE: return DSV_H5_DEC_DEFLATE;
	case DSV_H5Z_FILTER_LZ4: return DSV_H5_DEC_LZ4;
	case H5Z_FILTER_SZIP: return DSV_H5_DEC_SZIP;
	case DSV_H5Z_FILTER_ZSTD: return DSV_H5_DEC_ZSTD;
	case DSV_H5Z_FILTER_LZF: return DSV_H5_DEC_LZF;
	case DSV_H5Z_FILTER_BLOSC: return DSV_H5_DEC_BLOSC;
	case DSV_H5Z_FILTER_BSHUF: return DSV_H5_DEC_BSHUF;
	default: return -1;
	}
}

void dsv_h5_decode_arm(const size_t want[DSV_H5_NDEC])
{
	memcpy(expect, want, sizeof(expect));
}

void dsv_h5_decode_disarm(void)
{
	memset(expect, 0, sizeof(expect));
}
