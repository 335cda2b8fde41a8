/* Pack -> decode round trip: the input's bytes become a small .npy (dtype,
 * row length, chunk size and codec from the first bytes), dsview pack
 * writes a store, and reading every chunk of it back must give the same
 * bytes. Any difference aborts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dsview/pack.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct {
		dsv_dtype t;
		const char *descr;
	} types[] = { { DSV_U8, "|u1" }, { DSV_I16, "<i2" }, { DSV_F32, "<f4" } };
	if (size < 5)
		return 0;
	int k = data[0] % 3;
	size_t es = dsv_dtype_size(types[k].t);
	uint64_t cols = 1 + data[1] % 64, rows = (size - 5) / (cols * es);
	if (rows == 0 || rows > 4096)
		return 0;
	size_t nbytes = (size_t)(rows * cols * es);
	const uint8_t *x = data + 5;
	char in[256], out[256];
	snprintf(in, sizeof(in), "%s",
		 fuzz_write_npy("in.npy", types[k].descr, rows, cols, x, nbytes));
	snprintf(out, sizeof(out), "%s/store.h5", fuzz_dir());

	dsv_pack_opts o;
	dsv_pack_result res;
	dsv_errbuf eb;
	dsv_pack_opts_init(&o);
	o.input = in;
	o.output = out;
	o.dataset = "x";
	o.chunk_bytes = 1 + (uint64_t)data[2] * (1 + data[3]);
	o.codec = (dsv_pack_codec)(data[4] % DSV_PACK_NCODECS);
	/* keep LZ4HC and zstd fast */
	o.level = o.codec == DSV_PACK_LZ4HC || o.codec == DSV_PACK_ZSTD ||
				  o.codec == DSV_PACK_BSHUF_ZSTD
			  ? 1
			  : -1;
	o.threads = 1 + data[4] / 128;
	o.force = 1;
	if (dsv_pack(&o, &res, &eb) != 0) {
		fprintf(stderr, "fuzz_pack: a valid .npy did not pack: %s\n", eb.msg);
		abort();
	}

	dsv_source *s;
	if (dsv_source_open_h5(out, "/x", &s, &eb) != 0) {
		fprintf(stderr, "fuzz_pack: the store does not open: %s\n", eb.msg);
		abort();
	}
	const dsv_source_info *info = dsv_source_get_info(s);
	size_t scratch_n = dsv_source_scratch_size(s);
	char *back = calloc(1, nbytes), *scratch = malloc(scratch_n ? scratch_n : 1);
	if (!back || !scratch || info->nelems != rows * cols)
		abort();
	for (uint64_t i = 0; i < info->nchunks; i++) {
		dsv_chunk_ref r;
		if (dsv_source_chunk(s, i, &r) || r.elem_start + r.nelems > rows * cols ||
		    dsv_source_read_chunk(s, &r, back + r.elem_start * es, r.nelems * es, scratch,
					  scratch_n, NULL))
			abort();
	}
	if (memcmp(back, x, nbytes))
		abort();
	free(back);
	free(scratch);
	dsv_source_close(s);
	return 0;
}
