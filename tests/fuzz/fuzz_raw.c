/* Raw files: shape and size inference from a dtype (or int24), a shape
 * any one dimension of which may be -1, a header to skip, and the file's
 * size. Input: dtype byte (DSV_DTYPE__COUNT: int24), ndim byte (its low
 * two bits ndim - 1, the rest the header's bytes), four shape bytes (0 in
 * the first means -1), then the file's bytes. */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	dsv_source *s;
	dsv_errbuf eb;
	dsv_raw_layout l = { 0 };
	if (size < 6)
		return 0;
	int t = data[0] % (DSV_DTYPE__COUNT + 1);
	l.dtype = t == DSV_DTYPE__COUNT ? DSV_I32 : (dsv_dtype)t;
	l.int24 = t == DSV_DTYPE__COUNT;
	l.ndim = 1 + data[1] % 4;
	l.offset = data[1] >> 2;
	for (int k = 0; k < 4; k++)
		l.shape[k] = data[2 + k] ? (int64_t)data[2 + k] * (k ? 1 : 1000003) : (k ? 0 : -1);
	if (dsv_source_open_raw_layout(fuzz_write("x.bin", data + 6, size - 6), &l, &s, &eb) == 0) {
		fuzz_read_chunks(s);
		dsv_source_close(s);
	}
	return 0;
}
