/* Raw files: shape and size inference from a dtype, a shape whose first
 * dimension may be -1, and the file's size. Input: dtype byte, ndim byte,
 * four shape bytes (0 in the first means -1), then the file's bytes. */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	dsv_source *s;
	dsv_errbuf eb;
	int64_t shape[4];
	if (size < 6)
		return 0;
	dsv_dtype t = (dsv_dtype)(data[0] % DSV_DTYPE__COUNT);
	int ndim = 1 + data[1] % 4;
	for (int k = 0; k < 4; k++)
		shape[k] = data[2 + k] ? (int64_t)data[2 + k] * (k ? 1 : 1000003) : (k ? 0 : -1);
	if (dsv_source_open_raw(fuzz_write("x.bin", data + 6, size - 6), t, ndim, shape, &s, &eb) ==
	    0) {
		fuzz_read_chunks(s);
		dsv_source_close(s);
	}
	return 0;
}
