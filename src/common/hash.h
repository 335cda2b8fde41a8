/*
 * The hash of a (key, chunk) pair, for the tables that find chunks by
 * their source and index: common/chunk_table.h (the chunk cache's and the
 * GPU tier's) and the cache's ring of ghosts. Multiplicative mixing of
 * each half, folded. And the hash of a run of bytes (names, paths), for
 * the tables that find things by name: FNV-1a, folded.
 */
#ifndef DSV_COMMON_HASH_H
#define DSV_COMMON_HASH_H

#include <stddef.h>
#include <stdint.h>

static inline size_t dsv_hash_chunk(uint64_t key, uint64_t chunk)
{
	uint64_t h = chunk * 0x9E3779B97F4A7C15ull ^ key * 0xC2B2AE3D27D4EB4Full;
	h ^= h >> 29;
	return (size_t)h;
}

/* FNV-1a of n bytes at p, continuing from h (DSV_HASH_SEED to start). */
#define DSV_HASH_SEED 0xcbf29ce484222325ull
static inline uint64_t dsv_hash_bytes(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

#endif
