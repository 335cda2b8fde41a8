/*
 * HDF5's Fletcher32 checksum (filter id 3), bit-for-bit as the HDF5 library
 * computes it, so that dsview accepts every chunk HDF5 wrote and HDF5 (h5py)
 * accepts every chunk dsview writes.
 *
 * HDF5's variant differs from the textbook one in three ways that all matter:
 *  - 16-bit words are formed big-endian from byte pairs, whatever the host;
 *  - both sums start at 0 (not 0xffff);
 *  - the sums are folded with an end-around carry ((x & 0xffff) + (x >> 16))
 *    after every 360 words and once more at the end, which is "mod 65535"
 *    except that 0xffff may survive as itself; we fold the same way rather
 *    than use %, or such chunks would fail.
 * An odd trailing byte counts as the high byte of a last word whose low byte
 * is 0.
 *
 * The trailer: HDF5 stores the 32-bit value little-endian (UINT32ENCODE).
 * Before 1.6.3, HDF5 on little-endian hosts stored it with the bytes of each
 * 16-bit half swapped; HDF5 still accepts that "reversed" form, so do we.
 */
#include <string.h>

#include "common/bytes.h"
#include "dsview/codec.h"
#include "dsview/dsview.h"

/* HDF5 folds after at most this many words: the largest count for which
 * sum2 cannot overflow 32 bits. */
#define FL32_BLOCK_WORDS 360

static inline uint32_t fold(uint32_t x)
{
	return (x & 0xffff) + (x >> 16);
}

/* Over one block of n <= 360 big-endian words w_i: *a = sum of w_i and
 * *b = sum of (n - i) w_i, which fits 32 bits for n <= 360. The word-by-word
 * recurrence sum1 += w; sum2 += sum1 adds exactly a to sum1 and
 * n * sum1 + b to sum2, so the block form gives the same integers before
 * each fold, and so bit-identical checksums; unlike the recurrence it has
 * no carried dependency and vectorises (AVX2 picked at load time). */
#ifdef __clang__
#define DSV_VECTORISE /* clang vectorises at -O2 and has no optimize() */
#else
#define DSV_VECTORISE optimize("tree-vectorize")
#endif
/* The clone's resolver runs while the dynamic linker relocates, before
 * ThreadSanitizer's runtime is up, and its instrumented entry crashes
 * there: a TSan build keeps the default clone only. */
#if defined(__SANITIZE_THREAD__)
#define DSV_CLONES
#else
#define DSV_CLONES target_clones("avx2", "default"),
#endif
__attribute__((DSV_CLONES DSV_VECTORISE)) static void block_sums(const uint8_t *p, size_t n,
								 uint32_t *a, uint32_t *b)
{
	uint32_t sa = 0, sb = 0;
	for (size_t i = 0; i < n; i++) {
		uint16_t v;
		memcpy(&v, p + 2 * i, 2);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
		uint32_t w = v;
#else
		uint32_t w = __builtin_bswap16(v); /* HDF5 reads words big-endian */
#endif
		sa += w;
		sb += (uint32_t)(n - i) * w;
	}
	*a = sa;
	*b = sb;
}

uint32_t dsv_fletcher32(const void *data, size_t len)
{
	const uint8_t *p = data;
	size_t words = len / 2;
	uint32_t sum1 = 0, sum2 = 0;

	while (words) {
		size_t n = words > FL32_BLOCK_WORDS ? FL32_BLOCK_WORDS : words;
		uint32_t a, b;
		block_sums(p, n, &a, &b);
		/* HDF5's sums do not overflow within a block; 64 bits here
		 * only keep the intermediate n * sum1 + b honest. */
		sum2 = (uint32_t)((uint64_t)sum2 + (uint64_t)n * sum1 + b);
		sum1 += a;
		p += 2 * n;
		words -= n;
		sum1 = fold(sum1);
		sum2 = fold(sum2);
	}
	if (len & 1) {
		sum1 += (uint32_t)p[0] << 8;
		sum2 += sum1;
		sum1 = fold(sum1);
		sum2 = fold(sum2);
	}
	sum1 = fold(sum1);
	sum2 = fold(sum2);
	return (sum2 << 16) | sum1;
}

int dsv_fletcher32_check(const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint32_t sum, stored, reversed;

	if (len < 4)
		return DSV_ERR_CORRUPT;
	sum = dsv_fletcher32(p, len - 4);
	stored = dsv_load_le32(p + len - 4);
	/* HDF5 < 1.6.3 on little-endian hosts: bytes swapped in each half. */
	reversed = ((sum & 0x00ff00ffu) << 8) | ((sum >> 8) & 0x00ff00ffu);
	return stored == sum || stored == reversed ? 0 : DSV_ERR_CHECKSUM;
}

void dsv_fletcher32_append(void *buf, size_t len)
{
	uint8_t *p = (uint8_t *)buf + len;
	uint32_t sum = dsv_fletcher32(buf, len);

	p[0] = (uint8_t)sum;
	p[1] = (uint8_t)(sum >> 8);
	p[2] = (uint8_t)(sum >> 16);
	p[3] = (uint8_t)(sum >> 24);
}
