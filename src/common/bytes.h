/*
 * Fixed-width integers in byte buffers of a given byte order, whatever the
 * host's: the framings dsview reads and writes (32004's big-endian sizes,
 * bitshuffle's, Blosc's and .npy's little-endian ones, HDF5's trailers).
 */
#ifndef DSV_COMMON_BYTES_H
#define DSV_COMMON_BYTES_H

#include <stdint.h>

static inline uint32_t dsv_load_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static inline uint64_t dsv_load_be64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

static inline uint32_t dsv_load_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* A little-endian signed 24-bit sample (BDF's, a raw int24 source's),
 * sign-extended. */
static inline int32_t dsv_load_le24s(const uint8_t *p)
{
	uint32_t u = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16;
	return (int32_t)(u << 8) >> 8;
}

static inline uint64_t dsv_load_le64(const uint8_t *p)
{
	return (uint64_t)dsv_load_le32(p) | (uint64_t)dsv_load_le32(p + 4) << 32;
}

static inline void dsv_store_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static inline void dsv_store_be64(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

/* An n-byte (1 to 8) unsigned integer in either byte order: headers whose
 * order is known only once read (NIfTI's, by its sizeof_hdr). */
static inline uint64_t dsv_load_uint(const uint8_t *p, int n, int big_endian)
{
	uint64_t v = 0;
	for (int i = 0; i < n; i++)
		v = v << 8 | p[big_endian ? i : n - 1 - i];
	return v;
}

#endif
