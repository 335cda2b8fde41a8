/* Runs of little-endian signed samples widened to int32 (samples.h). */
#include <stdatomic.h>
#include <stdint.h>

#include "common/bytes.h"
#include "common/samples.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

/* Four bytes from p on hold a sample and the next one's first byte: one
 * 32-bit load (a plain move where the host is little-endian), the top
 * byte shifted out and the sign shifted back in. The last sample is read
 * byte by byte, so no byte past p + 3 * n is touched. */
void dsv_le24s_to_i32_portable(int32_t *out, const uint8_t *p, size_t n)
{
	size_t i = 0;
	for (; i + 1 < n; i++)
		out[i] = (int32_t)(dsv_load_le32(p + 3 * i) << 8) >> 8;
	for (; i < n; i++)
		out[i] = dsv_load_le24s(p + 3 * i);
}

#if defined(__x86_64__)
/* Eight samples a step: two 16-byte loads 12 bytes apart (four samples
 * each, and 4 bytes not used), one byte shuffle that puts each sample's
 * bytes in the top three of a 32-bit lane (the bottom one zero), and an
 * arithmetic shift right by 8 that sign-extends. A step reads up to byte
 * 3 * i + 28, so steps run while i + 10 <= n; the rest is portable. */
__attribute__((target("avx2"))) static void le24s_avx2(int32_t *out, const uint8_t *p, size_t n)
{
	const __m256i shuf = _mm256_setr_epi8(-1, 0, 1, 2, -1, 3, 4, 5, -1, 6, 7, 8, -1, 9, 10, 11,
					      -1, 0, 1, 2, -1, 3, 4, 5, -1, 6, 7, 8, -1, 9, 10, 11);
	size_t i = 0;
	for (; i + 10 <= n; i += 8) {
		const uint8_t *q = p + 3 * i;
		__m256i v = _mm256_loadu2_m128i((const __m128i *)(q + 12), (const __m128i *)q);
		v = _mm256_srai_epi32(_mm256_shuffle_epi8(v, shuf), 8);
		_mm256_storeu_si256((__m256i *)(out + i), v);
	}
	dsv_le24s_to_i32_portable(out + i, p + 3 * i, n - i);
}

static int has_avx2(void)
{
	static atomic_int known = -1; /* every thread finds the same answer */
	int k = atomic_load_explicit(&known, memory_order_relaxed);
	if (k < 0) {
		__builtin_cpu_init();
		k = __builtin_cpu_supports("avx2") ? 1 : 0;
		atomic_store_explicit(&known, k, memory_order_relaxed);
	}
	return k;
}
#endif

void dsv_le24s_to_i32(int32_t *out, const uint8_t *p, size_t n)
{
#if defined(__x86_64__)
	if (has_avx2()) {
		le24s_avx2(out, p, n);
		return;
	}
#endif
	dsv_le24s_to_i32_portable(out, p, n);
}

void dsv_le16s_to_i32(int32_t *out, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		out[i] = (int16_t)(uint16_t)((uint16_t)p[2 * i] | (uint16_t)p[2 * i + 1] << 8);
}
