/*
 * The LZF filter (id 32000) as h5py's lzf_filter.c writes it: a chunk is
 * the bare output of liblzf's lzf_compress, no header. When LZF does not
 * make the chunk smaller, h5py's filter fails and HDF5 (the filter is
 * optional) stores the chunk raw with the filter's bit set in the chunk's
 * filter mask; that case never reaches this decoder.
 *
 * The stream is a sequence of items, each opened by a control byte c:
 *   c < 32:  c + 1 literal bytes follow;
 *   c >= 32: a back-reference of length (c >> 5) + 2, where a length
 *            field of 7 is extended by the next byte (7 + b + 2), at
 *            distance ((c & 0x1f) << 8) + next byte + 1 behind the output
 *            position. The copy may overlap its own output (runs).
 * This is liblzf's lzf_d.c read with every access checked: a literal run
 * or reference that would read past the input or write past dst_size, and
 * a reference before the start of the output, make the chunk corrupt;
 * so does a stream that ends short of dst_size.
 */
#include <string.h>

#include "codec/codec_test.h"
#include "dsview/codec.h"
#include "dsview/dsview.h"

int64_t dsv_lzf_decode(void *dst, size_t dst_size, const void *src, size_t src_size)
{
	const uint8_t *in = src;
	uint8_t *out = dst;
	size_t ip = 0, op = 0;

	if ((uint64_t)dst_size > INT64_MAX)
		return DSV_ERR_CORRUPT;
	while (ip < src_size) {
		size_t c = in[ip++];

		if (c < 32) {
			size_t len = c + 1;
			if (len > src_size - ip || len > dst_size - op)
				return DSV_ERR_CORRUPT;
			memcpy(out + op, in + ip, len);
			ip += len;
			op += len;
			continue;
		}
		size_t len = c >> 5, dist;
		if (len == 7) {
			if (ip >= src_size)
				return DSV_ERR_CORRUPT;
			len += in[ip++];
		}
		len += 2;
		if (ip >= src_size)
			return DSV_ERR_CORRUPT;
		dist = ((c & 0x1f) << 8) + in[ip++] + 1;
		if (dist > op || len > dst_size - op)
			return DSV_ERR_CORRUPT;
		/* Byte by byte: dist < len repeats the last dist bytes. */
		for (size_t k = 0; k < len; k++, op++)
			out[op] = out[op - dist];
	}
	return op == dst_size ? (int64_t)op : DSV_ERR_CORRUPT;
}

/* Flushes the pending literals [lit, ip) as runs of at most 32. */
static int put_literals(uint8_t *out, size_t cap, size_t *op, const uint8_t *in, size_t lit,
			size_t ip)
{
	while (lit < ip) {
		size_t n = ip - lit < 32 ? ip - lit : 32;
		if (cap - *op < n + 1)
			return -1;
		out[(*op)++] = (uint8_t)(n - 1);
		memcpy(out + *op, in + lit, n);
		*op += n;
		lit += n;
	}
	return 0;
}

#define LZF_HASH_BITS 13
#define LZF_MAX_DIST 8192
#define LZF_MAX_LEN 264 /* 7 + 255 + 2 */

int64_t dsv_lzf_encode(void *dst, size_t dst_cap, const void *src, size_t src_size)
{
	const uint8_t *in = src;
	uint8_t *out = dst;
	size_t table[1u << LZF_HASH_BITS];
	size_t ip = 0, lit = 0, op = 0;

	if ((uint64_t)src_size > INT64_MAX)
		return DSV_ERR_INVALID;
	for (size_t i = 0; i < (1u << LZF_HASH_BITS); i++)
		table[i] = SIZE_MAX;
	while (src_size >= 3 && ip <= src_size - 3) {
		uint32_t v = (uint32_t)in[ip] << 16 | (uint32_t)in[ip + 1] << 8 | in[ip + 2];
		uint32_t h = (v * 2654435761u) >> (32 - LZF_HASH_BITS);
		size_t ref = table[h], len = 0;

		table[h] = ip;
		if (ref != SIZE_MAX && ip - ref <= LZF_MAX_DIST) {
			size_t max = src_size - ip < LZF_MAX_LEN ? src_size - ip : LZF_MAX_LEN;
			while (len < max && in[ref + len] == in[ip + len])
				len++;
		}
		if (len < 3) {
			ip++;
			continue;
		}
		if (put_literals(out, dst_cap, &op, in, lit, ip) || dst_cap - op < 3)
			return DSV_ERR_OVERFLOW;
		size_t dist = ip - ref - 1, l = len - 2;
		if (l < 7) {
			out[op++] = (uint8_t)(l << 5 | dist >> 8);
		} else {
			out[op++] = (uint8_t)(7 << 5 | dist >> 8);
			out[op++] = (uint8_t)(l - 7);
		}
		out[op++] = (uint8_t)dist;
		ip += len;
		lit = ip;
	}
	if (put_literals(out, dst_cap, &op, in, lit, src_size))
		return DSV_ERR_OVERFLOW;
	return (int64_t)op;
}
