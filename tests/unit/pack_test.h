/*
 * The fixture of the pack unit tests (test_pack.c, test_pack_codecs.c): a
 * temporary directory holding in.bin, ROWS x COLS uint16 (a ramp with a
 * little hash noise: compressible, not trivially), the same rows in data,
 * and pack options for it as a raw input. Define PACK_TEST_DIR (the
 * mkdtemp template) before including; needs cmocka included first.
 */
#ifndef DSV_TESTS_PACK_TEST_H
#define DSV_TESTS_PACK_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dsview/pack.h"
#include "dsview/source.h"

#define ROWS 1000
#define COLS 37

static char dir[] = PACK_TEST_DIR;
static uint16_t data[ROWS][COLS];

/* A path in dir; the last four stay valid. */
static const char *tpath(const char *name)
{
	static char bufs[4][300];
	static int k;
	char *p = bufs[k++ % 4];
	snprintf(p, 300, "%s/%s", dir, name);
	return p;
}

static int setup(void **state)
{
	(void)state;
	if (!mkdtemp(dir))
		return -1;
	for (int r = 0; r < ROWS; r++)
		for (int c = 0; c < COLS; c++)
			data[r][c] = (uint16_t)(r * 3 + c +
						(((unsigned)(r * 2654435761u) >> 28) & 3));
	FILE *f = fopen(tpath("in.bin"), "wb");
	if (!f || fwrite(data, sizeof(data), 1, f) != 1)
		return -1;
	fclose(f);
	return 0;
}

static int teardown(void **state)
{
	char cmd[300];
	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd);
}

/* Options packing in.bin (rows inferred) into out. */
static void pack_raw_opts(dsv_pack_opts *o, const char *out)
{
	dsv_pack_opts_init(o);
	o->input = tpath("in.bin");
	o->output = out;
	o->raw.dtype = DSV_U16;
	o->raw.ndim = 2;
	o->raw.shape[0] = -1;
	o->raw.shape[1] = COLS;
}

/* Every chunk of store s decodes on the fast path (codec, Fletcher32,
 * chunks of raw_size bytes, or any when 0) back to data. */
static void read_back_chunks(dsv_source *s, dsv_codec codec, uint64_t raw_size)
{
	static uint16_t back[ROWS][COLS];
	const dsv_source_info *in = dsv_source_get_info(s);
	size_t cap = dsv_source_scratch_size(s);
	void *scratch = malloc(cap ? cap : 1);

	assert_int_equal(in->kind, DSV_SRC_H5_CHUNKED);
	memset(back, 0xee, sizeof(back));
	for (uint64_t i = 0; i < in->nchunks; i++) {
		dsv_chunk_ref ref;
		assert_int_equal(dsv_source_chunk(s, i, &ref), 0);
		assert_int_equal(ref.codec, codec);
		assert_true(ref.fletcher32);
		assert_false(ref.fallback);
		if (raw_size)
			assert_int_equal(ref.raw_size, raw_size);
		assert_int_equal(dsv_source_read_chunk(s, &ref, (uint16_t *)back + ref.elem_start,
						       ref.nelems * 2, scratch, cap, NULL),
				 0);
	}
	assert_memory_equal(back, data, sizeof(data));
	free(scratch);
}

#endif
