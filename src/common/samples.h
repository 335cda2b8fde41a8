/*
 * Runs of little-endian signed integer samples widened to int32: BDF's
 * and a raw source's 24-bit samples, EDF's 16-bit ones. The same values
 * as dsv_load_le24s per sample (common/bytes.h), read several at a time.
 */
#ifndef DSV_COMMON_SAMPLES_H
#define DSV_COMMON_SAMPLES_H

#include <stddef.h>
#include <stdint.h>

/* out[i] = the sign-extended 24-bit sample at p + 3 * i, i < n. Reads
 * only the 3 * n bytes from p on; any alignment. */
void dsv_le24s_to_i32(int32_t *out, const uint8_t *p, size_t n);

/* The same, portable C only: the reference the fast path is tested
 * against, and its path where the processor has no AVX2. */
void dsv_le24s_to_i32_portable(int32_t *out, const uint8_t *p, size_t n);

/* out[i] = the signed 16-bit sample at p + 2 * i, i < n; any alignment. */
void dsv_le16s_to_i32(int32_t *out, const uint8_t *p, size_t n);

#endif
