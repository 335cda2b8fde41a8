/*
 * CRC-32C (Castagnoli, reflected polynomial 0x82F63B78, initial and final
 * value all ones), as Zarr v3's crc32c codec and a shard index's checksum
 * use it: crc32c("123456789") = 0xE3069283. Debian has no C library for
 * it (zlib's crc32 is the other polynomial), so it is computed here, eight
 * bytes a step from eight tables (slicing-by-8), made once.
 */
#include <pthread.h>
#include <string.h>

#include "codec/codec.h"

static uint32_t table[8][256];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void make_tables(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
		table[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			table[t][i] = (table[t - 1][i] >> 8) ^ table[0][table[t - 1][i] & 0xff];
}

uint32_t dsv_crc32c(const void *data, size_t len)
{
	const unsigned char *p = data;
	uint32_t c = 0xffffffffu;
	pthread_once(&once, make_tables);
	for (; len >= 8; len -= 8, p += 8) {
		uint32_t lo = c ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
				   (uint32_t)p[3] << 24);
		c = table[7][lo & 0xff] ^ table[6][(lo >> 8) & 0xff] ^ table[5][(lo >> 16) & 0xff] ^
		    table[4][lo >> 24] ^ table[3][p[4]] ^ table[2][p[5]] ^ table[1][p[6]] ^
		    table[0][p[7]];
	}
	while (len--)
		c = (c >> 8) ^ table[0][(c ^ *p++) & 0xff];
	return c ^ 0xffffffffu;
}
