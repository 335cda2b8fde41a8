/* dsv_pack: round trips through the store, the store's attribute, refusals,
 * interruption and a damaged input, each leaving no output and no temporary. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "dsview/codec.h"
#include "dsview/pack.h"
#include "dsview/source.h"
#include "formats/h5/h5.h"

#define PACK_TEST_DIR "/tmp/dsv-test-pack-XXXXXX"
#include "pack_test.h"

/* Entries of dir whose name starts with prefix. */
static int count_files(const char *prefix)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;
	assert_non_null(d);
	while ((e = readdir(d)))
		n += !strncmp(e->d_name, prefix, strlen(prefix));
	closedir(d);
	return n;
}

static void raw_opts(dsv_pack_opts *o, const char *out)
{
	pack_raw_opts(o, out);
	o->chunk_bytes = 1000; /* 1000 / 74 bytes per row: 14 rows */
}

/* Reads every chunk of the store back and compares with data. */
static void check_store(const char *spec, dsv_codec codec)
{
	dsv_source *s;
	dsv_errbuf eb;

	assert_int_equal(dsv_source_open(spec, &s, &eb), 0);
	const dsv_source_info *in = dsv_source_get_info(s);
	assert_int_equal(in->kind, DSV_SRC_H5_CHUNKED);
	assert_int_equal(in->dtype, DSV_U16);
	assert_int_equal(in->ndim, 2);
	assert_int_equal(in->shape[0], ROWS);
	assert_int_equal(in->shape[1], COLS);
	assert_int_equal(in->chunk_elems, 14 * COLS);
	assert_int_equal(in->nchunks, (ROWS + 13) / 14);

	read_back_chunks(s, codec, 14 * COLS * 2); /* edge chunk stored whole */
	dsv_source_close(s);
}

static void test_roundtrip_every_codec(void **state)
{
	static const dsv_pack_codec codecs[] = { DSV_PACK_LZ4, DSV_PACK_LZ4HC, DSV_PACK_NONE };
	(void)state;
	for (int k = 0; k < 3; k++) {
		dsv_pack_opts o;
		dsv_pack_result res;
		dsv_errbuf eb;
		char spec[400];

		raw_opts(&o, tpath("rt.h5"));
		o.codec = codecs[k];
		o.threads = 3; /* more workers than cores: order must still hold */
		o.force = 1;
		assert_int_equal(dsv_pack(&o, &res, &eb), 0);
		assert_int_equal(res.rows, ROWS);
		assert_int_equal(res.chunk_rows, 14);
		assert_int_equal(res.chunks, 72);
		assert_int_equal(res.raw_bytes, sizeof(data));
		assert_string_equal(res.dataset, "/in");
		assert_int_equal(res.threads, 3);
		if (codecs[k] == DSV_PACK_NONE)
			assert_int_equal(res.stored_bytes, 72 * (14 * COLS * 2 + 4));
		else
			assert_true(res.stored_bytes < sizeof(data) / 2);
		assert_true(res.file_bytes >= res.stored_bytes);
		assert_int_equal(count_files("rt.h5.tmp-"), 0);
		snprintf(spec, sizeof(spec), "%s:/in", tpath("rt.h5"));
		check_store(spec, codecs[k] == DSV_PACK_NONE ? DSV_CODEC_NONE : DSV_CODEC_LZ4);
	}
}

/* The store's "dsview" attribute is a UTF-8 variable-length string of JSON. */
static void test_store_attribute(void **state)
{
	dsv_pack_opts o;
	dsv_pack_result res;
	dsv_errbuf eb;
	char *text = NULL;
	(void)state;

	raw_opts(&o, tpath("attr.h5"));
	o.dataset = "betas";
	o.codec = DSV_PACK_LZ4HC;
	assert_int_equal(dsv_pack(&o, &res, &eb), 0);
	assert_int_equal(res.level, 9);

	dsv_h5_lock();
	hid_t f = H5Fopen(tpath("attr.h5"), H5F_ACC_RDONLY, H5P_DEFAULT);
	hid_t d = H5Dopen2(f, "/betas", H5P_DEFAULT);
	hid_t a = H5Aopen(d, DSV_STORE_ATTR, H5P_DEFAULT);
	hid_t t = H5Aget_type(a);
	assert_true(f >= 0 && d >= 0 && a >= 0 && t >= 0);
	assert_true(H5Tis_variable_str(t) > 0);
	assert_int_equal(H5Tget_cset(t), H5T_CSET_UTF8);
	assert_true(H5Aread(a, t, &text) >= 0);
	H5Tclose(t);
	H5Aclose(a);
	H5Dclose(d);
	H5Fclose(f);
	dsv_h5_unlock();

	json_error_t je;
	json_t *j = json_loads(text, 0, &je);
	H5free_memory(text);
	assert_non_null(j);
	assert_string_equal(json_string_value(json_object_get(j, "format")), DSV_STORE_FORMAT);
	assert_int_equal(json_integer_value(json_object_get(j, "format_version")), 1);
	assert_string_equal(json_string_value(json_object_get(j, "dsview_version")),
			    DSV_VERSION_STRING);
	assert_string_equal(json_string_value(json_object_get(j, "codec")), "lz4hc");
	assert_int_equal(json_integer_value(json_object_get(j, "level")), 9);
	assert_int_equal(json_integer_value(json_object_get(j, "chunk_rows")), 14);
	assert_int_equal(json_integer_value(json_object_get(j, "raw_bytes")), sizeof(data));
	assert_string_equal(json_string_value(json_object_get(j, "dtype")), "uint16");
	assert_string_equal(json_string_value(json_object_get(j, "source_kind")), "raw");
	assert_true(json_is_true(json_object_get(j, "fletcher32")));
	json_t *shape = json_object_get(j, "shape");
	assert_int_equal(json_array_size(shape), 2);
	assert_int_equal(json_integer_value(json_array_get(shape, 0)), ROWS);
	assert_int_equal(json_integer_value(json_array_get(shape, 1)), COLS);
	json_decref(j);
}

static void test_refusals_leave_nothing(void **state)
{
	dsv_pack_opts o;
	dsv_pack_result res;
	dsv_errbuf eb;
	struct stat st;
	(void)state;

	/* an existing output is kept without force */
	FILE *f = fopen(tpath("keep.h5"), "wb");
	fputs("precious", f);
	fclose(f);
	raw_opts(&o, tpath("keep.h5"));
	assert_int_equal(dsv_pack(&o, &res, &eb), DSV_ERR_INVALID);
	assert_non_null(strstr(eb.msg, "--force"));
	assert_string_equal(eb.file, tpath("keep.h5")); /* the file at fault, as a field */
	assert_string_equal(eb.reason, "already exists (use --force to replace it)");
	assert_int_equal(stat(tpath("keep.h5"), &st), 0);
	assert_int_equal(st.st_size, 8);

	raw_opts(&o, tpath("nodir/x.h5"));
	assert_int_equal(dsv_pack(&o, &res, &eb), DSV_ERR_NOTFOUND);
	assert_non_null(strstr(eb.msg, "nodir"));

	raw_opts(&o, tpath("bad.h5"));
	o.codec = DSV_PACK_LZ4HC;
	o.level = 13;
	assert_int_equal(dsv_pack(&o, &res, &eb), DSV_ERR_INVALID);
	o.codec = DSV_PACK_LZ4;
	o.level = DSV_LZ4_MAX_ACCELERATION + 1;
	assert_int_equal(dsv_pack(&o, &res, &eb), DSV_ERR_INVALID);
	o.level = -1;
	o.dataset = "a/b";
	assert_int_equal(dsv_pack(&o, &res, &eb), DSV_ERR_INVALID);
	o.dataset = NULL;
	o.raw.shape[1] = 47; /* 74000 bytes are not whole rows of 94 */
	assert_true(dsv_pack(&o, &res, &eb) < 0);
	assert_non_null(strstr(eb.msg, "whole number of rows"));
	assert_int_equal(count_files("bad.h5"), 0);
}

static volatile sig_atomic_t stop_now;

static void stop_after_first(const dsv_pack_progress *p, void *arg)
{
	int *calls = arg;
	(void)p;
	if (++*calls == 1)
		stop_now = 1;
}

/* The stop flag (what the CLI's signal handler sets) mid-pack: an error,
 * and neither the output nor a temporary remains. */
static void test_interrupted_mid_pack(void **state)
{
	dsv_pack_opts o;
	dsv_pack_result res;
	dsv_errbuf eb;
	int calls = 0;
	(void)state;

	raw_opts(&o, tpath("int.h5"));
	o.chunk_bytes = 74; /* one row per chunk: 1000 chunks */
	o.codec = DSV_PACK_LZ4HC;
	o.level = 12;
	o.threads = 1;
	o.stop = &stop_now;
	o.progress = stop_after_first;
	o.progress_arg = &calls;
	stop_now = 0;
	assert_int_equal(dsv_pack(&o, &res, &eb), DSV_ERR_INTERRUPTED);
	assert_int_equal(eb.code, DSV_ERR_INTERRUPTED);
	assert_string_equal(eb.msg, "interrupted");
	assert_true(calls >= 1);
	assert_int_equal(count_files("int.h5"), 0);

	stop_now = 1; /* before anything */
	o.progress = NULL;
	assert_int_equal(dsv_pack(&o, &res, &eb), DSV_ERR_INTERRUPTED);
	assert_int_equal(count_files("int.h5"), 0);
}

/* A store whose chunk 5 fails its checksum as input: the error names the
 * rows and the input chunk; nothing is written. */
static void test_damaged_input(void **state)
{
	dsv_pack_opts o;
	dsv_pack_result res;
	dsv_errbuf eb;
	dsv_source *s;
	dsv_chunk_ref ref;
	char spec[400];
	(void)state;

	raw_opts(&o, tpath("good.h5"));
	assert_int_equal(dsv_pack(&o, &res, &eb), 0);
	snprintf(spec, sizeof(spec), "%s:/in", tpath("good.h5"));
	assert_int_equal(dsv_source_open(spec, &s, &eb), 0);
	assert_int_equal(dsv_source_chunk(s, 5, &ref), 0);
	dsv_source_close(s);
	FILE *f = fopen(tpath("good.h5"), "r+b");
	assert_non_null(f);
	fseek(f, (long)(ref.offset + ref.stored_size / 2), SEEK_SET);
	int c = fgetc(f);
	fseek(f, (long)(ref.offset + ref.stored_size / 2), SEEK_SET);
	fputc(c ^ 0x5a, f);
	fclose(f);

	/* Source chunk 5 (rows 70-83) feeds output chunks 7 and 8, which two
	 * threads make at once: the message names the first, every time. */
	for (int k = 0; k < 30; k++) {
		dsv_pack_opts_init(&o);
		o.input = spec;
		o.output = tpath("fromdamaged.h5");
		o.chunk_bytes = 74 * 10;
		o.threads = 2 + k % 3;
		assert_int_equal(dsv_pack(&o, &res, &eb), DSV_ERR_CHECKSUM);
		assert_non_null(strstr(eb.msg, "source chunk 5"));
		assert_non_null(strstr(eb.msg, "rows 70-79"));
		assert_int_equal(count_files("fromdamaged.h5"), 0);
	}
}

/* LZ4 fast at several accelerations round-trips; out-of-range refused. */
/* Block sizes fitted to rows: whole rows, an exact part of a row, the
 * chunk, or the size asked when the row does not divide. */
static void test_block_bytes(void **state)
{
	(void)state;
	uint64_t row = 224 * 224 * 3, chunk = 6 * row;
	assert_int_equal(dsv_pack_block_bytes(row, chunk, 64 << 10), row / 3);
	assert_int_equal(dsv_pack_block_bytes(row, chunk, 32 << 10), row / 6);
	assert_int_equal(dsv_pack_block_bytes(row, chunk, 16 << 10), row / 12);
	assert_int_equal(dsv_pack_block_bytes(row, chunk, 128 << 10), row / 2);
	assert_int_equal(dsv_pack_block_bytes(row, chunk, 256 << 10), row);
	assert_int_equal(dsv_pack_block_bytes(row, chunk, 2 * row + 1), 2 * row);
	assert_int_equal(dsv_pack_block_bytes(row, chunk, chunk), chunk);
	assert_int_equal(dsv_pack_block_bytes(row, chunk, 1u << 30), chunk);
	/* small rows: as many whole rows as fit */
	assert_int_equal(dsv_pack_block_bytes(74, 74 * 1000, 4096), 74 * 55);
	/* a prime row: no part divides it, the size asked */
	assert_int_equal(dsv_pack_block_bytes(100003, 10 * 100003, 16384), 16384);
	/* every block is at least half of what was asked */
	for (uint64_t r = 4097; r < 4097 + 2000; r += 7)
		for (uint64_t want = 4096; want <= 65536; want *= 2) {
			uint64_t b = dsv_pack_block_bytes(r, 64 * r, want);
			assert_true(b <= want && b >= want / 2);
		}
}

static void test_encode_fast(void **state)
{
	static char enc[sizeof(data) + 1024], back[sizeof(data)];
	(void)state;
	for (int accel = 1; accel <= 4096; accel *= 8) {
		int64_t n = dsv_lz4_encode_fast(enc, sizeof(enc), data, sizeof(data), 0, accel);
		assert_true(n > 0);
		if (accel == 1)
			assert_true((size_t)n < sizeof(data) / 2);
		assert_int_equal(dsv_lz4_decode(back, sizeof(back), enc, (size_t)n), sizeof(data));
		assert_memory_equal(back, data, sizeof(data));
	}
	assert_true(dsv_lz4_encode_fast(enc, sizeof(enc), data, sizeof(data), 0, 0) < 0);
	assert_true(dsv_lz4_encode_fast(enc, sizeof(enc), data, sizeof(data), 0,
					DSV_LZ4_MAX_ACCELERATION + 1) < 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip_every_codec),
		cmocka_unit_test(test_store_attribute),
		cmocka_unit_test(test_refusals_leave_nothing),
		cmocka_unit_test(test_interrupted_mid_pack),
		cmocka_unit_test(test_damaged_input),
		cmocka_unit_test(test_encode_fast),
		cmocka_unit_test(test_block_bytes),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
