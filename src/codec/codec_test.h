/*
 * Encoders that only tests and the fuzzers use, not the library's
 * interface: they make the inputs the decoders of dsview/codec.h and
 * codec.h are tested on. Nothing under src/ but their own files includes
 * this.
 *
 * Thread safety: all functions are reentrant; no global state.
 */
#ifndef DSV_CODEC_CODEC_TEST_H
#define DSV_CODEC_CODEC_TEST_H

#include <stddef.h>
#include <stdint.h>

#include "codec/codec.h"

/* Encodes src as an LZF stream that liblzf and h5py decode (a simple
 * greedy encoder, for tests and fuzzing). @return the encoded size, or
 * DSV_ERR_OVERFLOW if it does not fit in dst_cap (at most src_size +
 * src_size / 32 + 1 bytes are ever needed). */
int64_t dsv_lzf_encode(void *dst, size_t dst_cap, const void *src, size_t src_size);

/* zlib and gzip streams (dsv_zlib_decode) */
/* Room dsv_zlib_encode needs at most for src_size bytes. */
size_t dsv_zlib_bound(size_t src_size, int gzip);
/* One zlib stream (or one gzip member) at level 0-9 (else the default).
 * @return its size, or DSV_ERR_OVERFLOW when dst_cap is too small. */
int64_t dsv_zlib_encode(void *dst, size_t dst_cap, const void *src, size_t src_size, int level,
			int gzip);

/* numcodecs' LZ4 framing (codec.h): @return the frame's size or
 * DSV_ERR_OVERFLOW; room needed: 4 + LZ4_compressBound(src_size). */
int64_t dsv_lz4_sized_encode(void *dst, size_t dst_cap, const void *src, size_t src_size);

#endif
