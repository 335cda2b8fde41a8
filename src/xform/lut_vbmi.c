/*
 * The 8-bit sources' table lookups with AVX-512 VBMI byte permutes (the
 * lut kernel of the "avx512vbmi" and "avx512bf16" variants, xform.c).
 *
 * A plan's table (x->lut: per channel, 256 outputs of 2 or 4 bytes) is
 * kept a second time as byte planes (x->planes: per channel and output
 * byte, 256 bytes indexed by the raw source byte, int8's offset folded
 * in). One vpermi2b looks 64 source bytes up in 128 bytes of a plane (bit
 * 6 of the index picks the register), so a plane is two of them with bit 7
 * choosing between their results; the output elements' bytes are then
 * interleaved by in-lane unpacks. Those unpacks interleave 128-bit lanes,
 * not whole vectors, so the 64 source bytes are first permuted (pre_perm)
 * into the order that makes the unpacked outputs come out in sequence.
 *
 * HWC pixels of 2 or 3 channels: element i of a 64-byte block has channel
 * (c0 + i) % nchan, c0 the block's first. Two channels: each channel's
 * lookups are zero-masked to its positions (after the permute) and ORed.
 * Three: 64 pixels at a time are split into one vector per channel and
 * joined again after the lookups (groups3). No element branches. The
 * outputs are the table's bytes, so they are identical to every other
 * variant's by construction; what is left over from a block of 64 goes
 * through the table one element at a time.
 */
#include <stdint.h>
#include <string.h>

#include "xform/xform_i.h"

#if defined(__x86_64__)
#include <immintrin.h>

#define VBMI __attribute__((target("avx512f,avx512bw,avx512vbmi")))

/* The source byte each position takes before the unpacks, for outputs of
 * os bytes (w = 16 / os of them per 128-bit lane of an output vector):
 * output vector q's lane l, slot j, comes from position 16 l + w q + j,
 * and must be source element (64 / os) q + w l + j. */
static void pre_perm(uint8_t perm[64], size_t os)
{
	for (unsigned l = 0; l < 4; l++) {
		for (unsigned q = 0; q < os; q++) {
			unsigned w = 16u / (unsigned)os; /* elements per lane per output */
			for (unsigned j = 0; j < w; j++)
				perm[16 * l + w * q + j] = (uint8_t)(64 / os * q + w * l + j);
		}
	}
}

/* One plane's lookup of 64 indices: the low 128 entries where bit 7 is
 * clear (klo), the high where set (khi), zero elsewhere. */
static inline __attribute__((always_inline)) VBMI __m512i plane_look(const uint8_t *plane,
								     __m512i idx, __mmask64 klo,
								     __mmask64 khi)
{
	__m512i t0 = _mm512_loadu_si512(plane), t1 = _mm512_loadu_si512(plane + 64);
	__m512i t2 = _mm512_loadu_si512(plane + 128), t3 = _mm512_loadu_si512(plane + 192);
	return _mm512_or_si512(_mm512_maskz_permutex2var_epi8(klo, t0, idx, t1),
			       _mm512_maskz_permutex2var_epi8(khi, t2, idx, t3));
}

/* 64 elements' os byte planes r (in pre_perm's order) interleaved into o. */
static inline __attribute__((always_inline)) VBMI void store_block(uint8_t *o, size_t os,
								   const __m512i r[4])
{
	if (os == 2) {
		_mm512_storeu_si512(o, _mm512_unpacklo_epi8(r[0], r[1]));
		_mm512_storeu_si512(o + 64, _mm512_unpackhi_epi8(r[0], r[1]));
	} else {
		__m512i a = _mm512_unpacklo_epi8(r[0], r[1]);
		__m512i b = _mm512_unpackhi_epi8(r[0], r[1]);
		__m512i c = _mm512_unpacklo_epi8(r[2], r[3]);
		__m512i d = _mm512_unpackhi_epi8(r[2], r[3]);
		_mm512_storeu_si512(o, _mm512_unpacklo_epi16(a, c));
		_mm512_storeu_si512(o + 64, _mm512_unpackhi_epi16(a, c));
		_mm512_storeu_si512(o + 128, _mm512_unpacklo_epi16(b, d));
		_mm512_storeu_si512(o + 192, _mm512_unpackhi_epi16(b, d));
	}
}

/* n / 64 blocks of 64 elements from element 0 of channel c0; planes are
 * the first channel's (channel c's at + c * os * 256). chmask[c0][c]: the
 * positions (after the permute) of channel c's elements in a block whose
 * first has channel c0. Returns the elements done. */
static inline __attribute__((always_inline)) VBMI uint64_t
blocks(const uint8_t *planes, size_t os, int nchan, const uint64_t chmask[3][3], int c0, void *dst,
       const uint8_t *src, uint64_t n, const uint8_t perm[64])
{
	const __m512i pv = _mm512_loadu_si512(perm);
	uint8_t *o = dst;
	uint64_t i = 0;
	for (; i + 64 <= n; i += 64) {
		__m512i idx = _mm512_permutexvar_epi8(pv, _mm512_loadu_si512(src + i));
		__mmask64 k7 = _mm512_movepi8_mask(idx);
		__m512i r[4];
#pragma GCC unroll 4
		for (size_t b = 0; b < os; b++) {
			r[b] = _mm512_setzero_si512();
#pragma GCC unroll 3
			for (int c = 0; c < nchan; c++) {
				__mmask64 kc = nchan == 1 ? ~(__mmask64)0 : chmask[c0][c];
				const uint8_t *pl = planes + ((size_t)c * os + b) * 256;
				r[b] = _mm512_or_si512(r[b],
						       plane_look(pl, idx, kc & ~k7, kc & k7));
			}
		}
		store_block(o + os * i, os, r);
		if (nchan == 3)
			c0 = c0 == 2 ? 0 : c0 + 1; /* 64 = 1 mod 3 */
	}
	return i;
}

/* Elements [i, n) through the table, element i of channel c; with nchan
 * (HWC) the channel advances every element, with 0 it stays c. */
static void tail(const dsv_xform *x, size_t os, void *dst, const uint8_t *src, uint64_t i,
		 uint64_t n, int c, int nchan)
{
	unsigned flip = x->src == DSV_I8 ? 0x80u : 0u;
	for (; i < n; i++) {
		size_t k = (size_t)c * 256 + (src[i] ^ flip);
		if (os == 4)
			memcpy((char *)dst + 4 * i, (const float *)x->lut + k, 4);
		else
			memcpy((char *)dst + 2 * i, (const uint16_t *)x->lut + k, 2);
		if (nchan && ++c == nchan)
			c = 0;
	}
}

/* chmask[c0][c] for HWC blocks of nchan channels, elements of os bytes. */
static void channel_masks(uint64_t chmask[3][3], int nchan, const uint8_t perm[64])
{
	memset(chmask, 0, sizeof(uint64_t) * 9);
	for (int c0 = 0; c0 < nchan; c0++)
		for (unsigned p = 0; p < 64; p++)
			chmask[c0][(c0 + perm[p]) % nchan] |= 1ull << p;
}

/* A run of one channel's elements (chan_inner > 1, or one channel). */
VBMI static void run_one(const dsv_xform *x, size_t os, const uint8_t perm[64], void *dst,
			 const uint8_t *src, uint64_t n, int c)
{
	static const uint64_t none[3][3];
	const uint8_t *pl = x->planes + (size_t)c * os * 256;
	uint64_t i = os == 4 ? blocks(pl, 4, 1, none, 0, dst, src, n, perm)
			     : blocks(pl, 2, 1, none, 0, dst, src, n, perm);
	tail(x, os, dst, src, i, n, c, 0);
}

/* Three-channel HWC pixels 192 elements (64 pixels) at a time, element 0
 * of channel c0: the three source vectors are split into one vector per
 * channel (two permutes each), each looked up in its own channel's planes
 * only, and the results put back in pixel order, and pre_perm's, by two
 * permutes per plane and output block: a third fewer permutes than
 * masking every channel's lookups over every block. Element e of the
 * group is channel (c0 + e) % 3's element e / 3. Returns the elements
 * done. */
static inline __attribute__((always_inline)) VBMI uint64_t groups3(const uint8_t *planes, size_t os,
								   int c0, uint8_t *o,
								   const uint8_t *src, uint64_t n,
								   const uint8_t perm[64])
{
	uint8_t split[3][64], join[3][64];
	uint64_t ksplit[3] = { 0 }, kjoin[3] = { 0 };
	uint64_t i = 0;
	for (int c = 0; c < 3; c++) {
		unsigned r = (unsigned)(c - c0 + 3) % 3; /* the channel's first element */
		for (unsigned j = 0; j < 64; j++) {
			unsigned e = 3 * j + r; /* < 192; >= 128 from the third vector */
			split[c][j] = (uint8_t)(e & 127);
			ksplit[c] |= (uint64_t)(e >= 128) << j;
		}
	}
	for (unsigned k = 0; k < 3; k++) {
		for (unsigned q = 0; q < 64; q++) {
			unsigned e = 64 * k + perm[q], c = (c0 + e) % 3;
			/* channels 0 and 1 by one permute (bit 6: channel 1), 2 by
			 * a masked one reading the low 6 bits */
			join[k][q] = (uint8_t)(e / 3 + (c == 1 ? 64 : 0));
			kjoin[k] |= (uint64_t)(c == 2) << q;
		}
	}
	__m512i sv[3], jv[3];
	for (int c = 0; c < 3; c++) {
		sv[c] = _mm512_loadu_si512(split[c]);
		jv[c] = _mm512_loadu_si512(join[c]);
	}
	for (; i + 192 <= n; i += 192) {
		__m512i v0 = _mm512_loadu_si512(src + i), v1 = _mm512_loadu_si512(src + i + 64);
		__m512i v2 = _mm512_loadu_si512(src + i + 128);
		__m512i look[3][4];
#pragma GCC unroll 3
		for (int c = 0; c < 3; c++) {
			__m512i xc = _mm512_mask_permutexvar_epi8(
				_mm512_permutex2var_epi8(v0, sv[c], v1), ksplit[c], sv[c], v2);
			__mmask64 k7 = _mm512_movepi8_mask(xc);
#pragma GCC unroll 4
			for (size_t b = 0; b < os; b++)
				look[c][b] = plane_look(planes + ((size_t)c * os + b) * 256, xc,
							~k7, k7);
		}
#pragma GCC unroll 3
		for (unsigned k = 0; k < 3; k++) {
			__m512i r[4];
#pragma GCC unroll 4
			for (size_t b = 0; b < os; b++)
				r[b] = _mm512_mask_permutexvar_epi8(
					_mm512_permutex2var_epi8(look[0][b], jv[k], look[1][b]),
					kjoin[k], jv[k], look[2][b]);
			store_block(o + os * (i + 64 * k), os, r);
		}
	}
	return i;
}

/* HWC pixels: 2 or 3 channels advancing with every element. */
VBMI static void run_hwc(const dsv_xform *x, size_t os, const uint8_t perm[64], void *dst,
			 const uint8_t *src, uint64_t n, uint64_t e0)
{
	uint64_t chmask[3][3];
	int nchan = x->nchan, c0 = (int)(e0 % (uint64_t)nchan);
	uint64_t i;
	channel_masks(chmask, nchan, perm);
	if (os == 4)
		i = nchan == 2 ? blocks(x->planes, 4, 2, chmask, c0, dst, src, n, perm)
			       : groups3(x->planes, 4, c0, dst, src, n, perm);
	else
		i = nchan == 2 ? blocks(x->planes, 2, 2, chmask, c0, dst, src, n, perm)
			       : groups3(x->planes, 2, c0, dst, src, n, perm);
	if (nchan == 3 && n - i >= 64) /* what is left: 64 at a time, channel c0 again */
		i += os == 4 ? blocks(x->planes, 4, 3, chmask, c0, (char *)dst + 4 * i, src + i,
				      n - i, perm)
			     : blocks(x->planes, 2, 3, chmask, c0, (char *)dst + 2 * i, src + i,
				      n - i, perm);
	tail(x, os, dst, src, i, n, (int)((e0 + i) % (uint64_t)nchan), nchan);
}

void dsv_xform_lut_vbmi(const dsv_xform *x, void *dst, const void *src, uint64_t n, uint64_t e0)
{
	size_t os = dsv_dtype_size(x->dst);
	uint8_t perm[64];
	const uint8_t *s = src;
	char *d = dst;
	pre_perm(perm, os);
	if (x->nchan == 1) {
		run_one(x, os, perm, dst, src, n, 0);
		return;
	}
	if (x->chan_inner == 1) {
		run_hwc(x, os, perm, dst, src, n, e0);
		return;
	}
	uint64_t q = e0 / x->chan_inner, into = e0 - q * x->chan_inner;
	int c = (int)(q % (uint64_t)x->nchan);
	while (n) {
		uint64_t len = x->chan_inner - into;
		if (len > n)
			len = n;
		run_one(x, os, perm, d, s, len, c);
		s += len;
		d += len * os;
		n -= len;
		into = 0;
		if (++c == x->nchan)
			c = 0;
	}
}
#endif
