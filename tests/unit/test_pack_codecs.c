/* The codecs pack writes (src/pack/codecs.c, auto.c, dsv_blosc_encode):
 * names and levels, each codec's round trip through its own encoder and
 * dsview's decoder, a store of each read back on the fast path with the
 * filter and cd_values hdf5plugin writes, and --codec auto's choice. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dsview/codec.h"
#include "dsview/pack.h"
#include "dsview/source.h"
#include "formats/h5/h5.h"
#include "pack/pack_i.h"

#define PACK_TEST_DIR "/tmp/dsv-test-packc-XXXXXX"
#include "pack_test.h"

static void raw_opts(dsv_pack_opts *o, const char *out)
{
	pack_raw_opts(o, out);
	o->force = 1;
}

static dsv_codec read_codec(dsv_pack_codec c)
{
	switch (dsv_pack_codec_get(c)->filter) {
	case DSV_H5Z_FILTER_LZ4: return DSV_CODEC_LZ4;
	case DSV_H5Z_FILTER_ZSTD: return DSV_CODEC_ZSTD;
	case DSV_H5Z_FILTER_BLOSC: return DSV_CODEC_BLOSC;
	case DSV_H5Z_FILTER_BSHUF: return DSV_CODEC_BSHUF;
	default: return DSV_CODEC_NONE;
	}
}

/* Every chunk of the store decodes on the fast path to data. */
static void check_store(const char *path, dsv_codec codec)
{
	char spec[400];
	dsv_source *s;
	dsv_errbuf eb;

	snprintf(spec, sizeof(spec), "%s:/in", path);
	assert_int_equal(dsv_source_open(spec, &s, &eb), 0);
	read_back_chunks(s, codec, 0);
	dsv_source_close(s);
}

/* The filter pipeline is [codec's filter with cd, Fletcher32]. */
static void check_filters(const char *path, dsv_pack_codec c, int level, uint64_t chunk_bytes,
			  uint64_t block)
{
	unsigned want[8], got[16];
	size_t nwant = dsv_pack_codec_cd(c, level, 2, chunk_bytes, block, want), ngot = 16;
	unsigned flags;

	dsv_h5_lock();
	hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
	hid_t d = H5Dopen2(f, "/in", H5P_DEFAULT);
	hid_t pl = H5Dget_create_plist(d);
	int nf = H5Pget_nfilters(pl);
	H5Z_filter_t id0 = H5Pget_filter2(pl, 0, &flags, &ngot, got, 0, NULL, NULL);
	size_t n1 = 0;
	H5Z_filter_t id1 = nf > 1 ? H5Pget_filter2(pl, 1, &flags, &n1, NULL, 0, NULL, NULL) : -1;
	H5Pclose(pl);
	H5Dclose(d);
	H5Fclose(f);
	dsv_h5_unlock();
	if (c == DSV_PACK_NONE) {
		assert_int_equal(nf, 1);
		assert_int_equal(id0, H5Z_FILTER_FLETCHER32);
		return;
	}
	assert_int_equal(nf, 2);
	assert_int_equal(id0, dsv_pack_codec_get(c)->filter);
	assert_int_equal(id1, H5Z_FILTER_FLETCHER32);
	assert_int_equal(ngot, nwant);
	assert_memory_equal(got, want, nwant * sizeof(unsigned));
}

static void test_names_and_levels(void **state)
{
	dsv_errbuf eb;
	dsv_pack_codec c;
	(void)state;

	for (int k = 0; k < DSV_PACK_NCODECS; k++) {
		const dsv_pack_codec_info *i = dsv_pack_codec_get((dsv_pack_codec)k);
		assert_non_null(i);
		assert_int_equal(dsv_pack_codec_by_name(i->name, &c), 0);
		assert_int_equal(c, k);
		assert_non_null(strstr(dsv_pack_codec_names(), i->name));
		assert_int_equal(dsv_pack_level_check(c, -1, &eb), 0);
		if (i->max_level) {
			assert_int_equal(dsv_pack_level_check(c, i->default_level, &eb), 0);
			assert_int_equal(dsv_pack_level_check(c, i->min_level, &eb), 0);
			assert_int_equal(dsv_pack_level_check(c, i->max_level, &eb), 0);
			assert_int_equal(dsv_pack_level_check(c, i->max_level + 1, &eb),
					 DSV_ERR_INVALID);
			assert_non_null(strstr(eb.msg, i->name));
			assert_int_equal(dsv_pack_level_check(c, i->min_level - 1, &eb),
					 DSV_ERR_INVALID);
		} else {
			assert_int_equal(dsv_pack_level_check(c, 1, &eb), DSV_ERR_INVALID);
			assert_non_null(strstr(eb.msg, "takes no --level"));
		}
	}
	assert_int_equal(dsv_pack_codec_by_name("auto", &c), 0);
	assert_int_equal(c, DSV_PACK_AUTO);
	assert_null(dsv_pack_codec_get(DSV_PACK_AUTO));
	assert_int_equal(dsv_pack_level_check(DSV_PACK_AUTO, 3, &eb), DSV_ERR_INVALID);
	assert_int_equal(dsv_pack_codec_by_name("zstandard", &c), DSV_ERR_INVALID);
	assert_int_equal(dsv_pack_codec_by_name("blosc", &c), DSV_ERR_INVALID);
	assert_int_equal(dsv_pack_level_check(DSV_PACK_ZSTD, 23, &eb), DSV_ERR_INVALID);
	assert_string_equal(eb.msg, "zstd: --level must be 1 to 22");
	assert_int_equal(dsv_pack_default_chunk(DSV_PACK_LZ4), DSV_PACK_DEFAULT_CHUNK);
	assert_int_equal(dsv_pack_default_chunk(DSV_PACK_NONE), DSV_PACK_DEFAULT_CHUNK);
	assert_int_equal(dsv_pack_default_chunk(DSV_PACK_ZSTD), DSV_PACK_DEFAULT_WHOLE_CHUNK);
	assert_int_equal(dsv_pack_default_chunk(DSV_PACK_BLOSC_LZ4_SHUFFLE),
			 DSV_PACK_DEFAULT_WHOLE_CHUNK);
}

/* Each codec's encoder and dsview's decoder agree; a damaged chunk fails. */
static void test_encode_decode_every_codec(void **state)
{
	size_t raw = sizeof(data), block = 4096;
	void *back = malloc(raw);
	(void)state;

	for (int k = 0; k < DSV_PACK_NCODECS; k++) {
		dsv_pack_codec c = (dsv_pack_codec)k;
		const dsv_pack_codec_info *i = dsv_pack_codec_get(c);
		size_t cap = dsv_pack_codec_bound(c, raw, block, 2);
		char *enc = malloc(cap);
		int64_t n = dsv_pack_codec_encode(c, i->default_level, enc, cap, data, raw, block,
						  2);
		assert_true(n > 0);
		if (c != DSV_PACK_NONE)
			assert_true((size_t)n < raw / 2);
		memset(back, 0, raw);
		assert_int_equal(dsv_pack_codec_decode(c, back, raw, enc, (size_t)n, 2), raw);
		assert_memory_equal(back, data, raw);
		/* a chunk cut short, or asked for another size, fails */
		assert_true(dsv_pack_codec_decode(c, back, raw, enc, (size_t)n - 1, 2) < 0);
		assert_true(dsv_pack_codec_decode(c, back, raw - 2, enc, (size_t)n, 2) < 0);
		/* no room */
		assert_true(dsv_pack_codec_encode(c, i->default_level, enc, 8, data, raw, block,
						  2) < 0);
		free(enc);
	}
	assert_true(dsv_pack_codec_encode(DSV_PACK_AUTO, 0, back, raw, data, raw, 0, 2) < 0);
	assert_int_equal(dsv_pack_codec_bound(DSV_PACK_AUTO, raw, 0, 2), SIZE_MAX);
	free(back);
}

static void test_blosc_encode(void **state)
{
	size_t raw = sizeof(data), cap = dsv_blosc_bound(raw);
	char *enc = malloc(cap), *back = malloc(raw);
	(void)state;

	for (int sh = DSV_BLOSC_NOSHUFFLE; sh <= DSV_BLOSC_BITSHUFFLE; sh++) {
		int64_t n = dsv_blosc_encode(enc, cap, data, raw, 2, 5, sh, DSV_BLOSC_ZSTD);
		assert_true(n > 16 && (size_t)n < raw);
		assert_int_equal(enc[3], 2); /* typesize in the header */
		assert_int_equal(dsv_blosc_decode(back, raw, enc, (size_t)n), raw);
		assert_memory_equal(back, data, raw);
	}
	/* a type wider than Blosc's 255 bytes shuffles as bytes, as the filter does */
	assert_true(dsv_blosc_encode(enc, cap, data, raw, 1000, 5, 1, DSV_BLOSC_LZ4) > 0);
	assert_int_equal(enc[3], 1);
	assert_int_equal(dsv_blosc_encode(enc, cap, data, raw, 2, 10, 1, DSV_BLOSC_LZ4),
			 DSV_ERR_INVALID);
	assert_int_equal(dsv_blosc_encode(enc, cap, data, raw, 2, 5, 3, DSV_BLOSC_LZ4),
			 DSV_ERR_INVALID);
	assert_int_equal(dsv_blosc_encode(enc, cap, data, raw, 2, 5, 1, 3 /* snappy */),
			 DSV_ERR_INVALID);
	assert_int_equal(dsv_blosc_encode(enc, 10, data, raw, 2, 5, 1, DSV_BLOSC_LZ4),
			 DSV_ERR_OVERFLOW); /* dst too small */
	free(enc);
	free(back);
}

/* A store of every codec: the filter and cd_values hdf5plugin writes,
 * every chunk read back on the fast path, the codec in the attribute's
 * JSON (checked by the e2e test) and the result. */
static void test_store_of_every_codec(void **state)
{
	(void)state;
	for (int k = 0; k < DSV_PACK_NCODECS; k++) {
		dsv_pack_codec c = (dsv_pack_codec)k;
		dsv_pack_opts o;
		dsv_pack_result res;
		dsv_errbuf eb;

		raw_opts(&o, tpath("s.h5"));
		o.codec = c;
		o.chunk_bytes = 1000; /* 14 rows */
		o.threads = 2;
		assert_int_equal(dsv_pack(&o, &res, &eb), 0);
		assert_int_equal(res.codec, c);
		assert_int_equal(res.level, dsv_pack_codec_get(c)->default_level);
		assert_int_equal(res.chunk_rows, 14);
		assert_int_equal(res.block_bytes,
				 dsv_pack_codec_get(c)->lz4_blocks ? 14 * COLS * 2 : 0);
		assert_string_equal(res.auto_why, "");
		check_filters(tpath("s.h5"), c, res.level, 14 * COLS * 2, res.block_bytes);
		check_store(tpath("s.h5"), read_codec(c));
	}
}

static void test_auto(void **state)
{
	dsv_pack_opts o;
	dsv_pack_result res;
	dsv_errbuf eb;
	(void)state;

	raw_opts(&o, tpath("auto.h5"));
	o.codec = DSV_PACK_AUTO;
	assert_int_equal(dsv_pack(&o, &res, &eb), 0);
	assert_true(res.codec < DSV_PACK_NCODECS);
	/* 74 KB: too little to time, lz4 unmeasured */
	assert_string_equal(res.auto_why,
			    "auto: lz4 (74000 bytes: too few to measure the codecs on)");
	assert_int_equal(res.codec, DSV_PACK_LZ4);
	assert_null(strchr(res.auto_why, '\n'));
	/* without --chunk-size: the chosen codec's default chunk */
	uint64_t want = dsv_pack_default_chunk(res.codec) / (COLS * 2);
	assert_int_equal(res.chunk_rows, want < ROWS ? want : ROWS);
	check_store(tpath("auto.h5"), read_codec(res.codec));

	/* auto takes no level */
	o.level = 3;
	assert_int_equal(dsv_pack(&o, &res, &eb), DSV_ERR_INVALID);
	assert_non_null(strstr(eb.msg, "auto"));
	/* a level out of range for the codec, one line naming it */
	o.codec = DSV_PACK_BLOSC_ZSTD_SHUFFLE;
	o.level = 10;
	assert_int_equal(dsv_pack(&o, &res, &eb), DSV_ERR_INVALID);
	assert_string_equal(eb.msg, "blosc-zstd-shuffle: --level must be 1 to 9");
	o.codec = DSV_PACK_NONE;
	o.level = 1;
	assert_int_equal(dsv_pack(&o, &res, &eb), DSV_ERR_INVALID);
	assert_string_equal(eb.msg, "none: takes no --level");
}

/* Over AUTO_MIN_BYTES: the codecs are measured on 4 sample chunks. */
static void test_auto_measures(void **state)
{
	enum { R = 4096, C = 128 };
	static uint16_t big[R][C];
	dsv_pack_opts o;
	dsv_pack_result res;
	dsv_errbuf eb;
	(void)state;

	for (int r = 0; r < R; r++)
		for (int c = 0; c < C; c++)
			big[r][c] = (uint16_t)(r + c * 7 +
					       (((unsigned)(r * C + c) * 2654435761u) >> 29));
	FILE *f = fopen(tpath("big.bin"), "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(big, sizeof(big), 1, f), 1);
	fclose(f);
	raw_opts(&o, tpath("big.h5"));
	o.input = tpath("big.bin");
	o.raw.shape[1] = C;
	o.chunk_bytes = 128 << 10; /* 8 chunks: samples 0, 2, 4, 6 */
	o.codec = DSV_PACK_AUTO;
	assert_int_equal(dsv_pack(&o, &res, &eb), 0);
	assert_true(res.codec < DSV_PACK_NCODECS);
	assert_non_null(strstr(res.auto_why, "on 4 sample chunks"));
	assert_true(!strncmp(res.auto_why + 6, dsv_pack_codec_get(res.codec)->name,
			     strlen(dsv_pack_codec_get(res.codec)->name)));
	assert_int_equal(res.chunk_rows, (128 << 10) / (C * 2));
	/* Which codec wins depends on this machine's speed (a sanitizer build
	 * on a loaded machine may find only lz4, or none, fast enough):
	 * whichever it is, the store holds what that codec makes of the data,
	 * the ratio its line reports on the sample give or take a quarter (the
	 * data is alike in every chunk). */
	const char *at = strstr(res.auto_why, ", ratio ");
	if (res.codec == DSV_PACK_NONE) {
		assert_true(res.stored_bytes >= sizeof(big));
	} else {
		assert_non_null(at);
		double ratio = strtod(at + strlen(", ratio "), NULL);
		double made = (double)sizeof(big) / (double)res.stored_bytes;
		assert_true(ratio > 1.0);
		assert_true(made > 1.0); /* it compresses */
		assert_true(made > ratio * 0.75 && made < ratio * 1.25);
	}
}

/* The regime rule on made-up figures (no timing): none, a fast codec of
 * ratio 1.3 (3 GB/s of float32 per core: 750 MB/s of uint8 raw bytes), a
 * slow one of 1.8 (0.9 GB/s of float32: 225 MB/s of uint8), one of 2.0
 * that encodes too slowly, one dropped (for uint8 the decode bar is 500
 * MB/s of raw bytes). */
static void test_auto_regime_rule(void **state)
{
	const dsv_pack_auto_fig m[] = {
		{ 0.99, 1e30, 1e30, 1 }, /* none */
		{ 1.30, 3e9, 400e6, 1 },  { 1.80, 0.9e9, 60e6, 1 },
		{ 2.00, 0.9e9, 10e6, 1 }, /* under the encode bar */
		{ 3.00, 9e9, 9e9, 0 },    /* dropped, never measured in full */
	};
	int best;
	(void)state;

	/* fast (no --storage, or storage over the bar): the decode bar holds */
	assert_false(dsv_pack_auto_slow(1, 0));
	assert_int_equal(dsv_pack_auto_rule(m, 5, 1, 0, &best), 1);
	assert_int_equal(best, 3);
	assert_false(dsv_pack_auto_slow(1, 500e6));
	assert_int_equal(dsv_pack_auto_rule(m, 5, 1, 1e9, &best), 1);
	/* slow: what each serves, min(storage x ratio, decode raw bytes/s):
	 * at 100 MB/s 130 vs 180 MB/s (the 1.8 decodes 225) */
	assert_true(dsv_pack_auto_slow(1, 100e6));
	assert_int_equal(dsv_pack_auto_rule(m, 5, 1, 100e6, &best), 2);
	/* at 250 MB/s 325 vs 225: the 1.8 no longer keeps up */
	assert_int_equal(dsv_pack_auto_rule(m, 5, 1, DSV_PACK_SLOW_STORAGE, &best), 1);
	/* float32: the bar is 2 GB/s of raw bytes, so 1 GB/s is slow; at it
	 * 1.3 vs 0.9 GB/s, at 400 MB/s 520 vs 720 MB/s */
	assert_true(dsv_pack_auto_slow(4, 1e9));
	assert_int_equal(dsv_pack_auto_rule(m, 5, 4, 1e9, &best), 1);
	assert_int_equal(dsv_pack_auto_rule(m, 5, 4, 400e6, &best), 2);
	/* nothing compresses: none, in either regime */
	dsv_pack_auto_fig flat[] = { m[0], { 0.99, 3e9, 400e6, 1 } };
	assert_int_equal(dsv_pack_auto_rule(flat, 2, 1, 0, &best), 0);
	assert_int_equal(dsv_pack_auto_rule(flat, 2, 1, 100e6, &best), 0);
	/* within 1% of the most served: the first in the list (cheaper) */
	dsv_pack_auto_fig tie[] = { m[0], m[1], { 1.31, 3e9, 400e6, 1 } };
	assert_int_equal(dsv_pack_auto_rule(tie, 3, 1, 100e6, &best), 1);
	assert_int_equal(best, 2);
}

static void test_parse_storage(void **state)
{
	static const struct {
		const char *s;
		double want;
	} ok[] = { { "fast", 0 },        { "slow", DSV_PACK_SLOW_STORAGE },
		   { "250MB/s", 250e6 }, { "250M", 250e6 },
		   { "1.5G", 1.5e9 },    { "1.5GB/s", 1.5e9 },
		   { "800k", 800e3 },    { "1000000", 1e6 },
		   { "100B/s", 100 } };
	static const char *const bad[] = { "",         "Fast",   "-5M",     "0",    "0.5",
					   "250 MB/s", "250MiB", "250Mb/s", "1e99", "nan",
					   "inf",      "M",      "250MB/",  "/s" };
	double v;
	(void)state;

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		v = -1;
		assert_int_equal(dsv_pack_parse_storage(ok[i].s, &v), 0);
		assert_true(v == ok[i].want);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(dsv_pack_parse_storage(bad[i], &v), DSV_ERR_INVALID);
}

/* --storage is for auto alone: one line, nothing written (e2e checks the
 * line auto prints with it). */
static void test_auto_storage(void **state)
{
	dsv_pack_opts o;
	dsv_pack_result res;
	dsv_errbuf eb;
	(void)state;

	raw_opts(&o, tpath("st.h5"));
	o.storage_bytes_s = DSV_PACK_SLOW_STORAGE;
	assert_int_equal(dsv_pack(&o, &res, &eb), DSV_ERR_INVALID);
	assert_string_equal(eb.msg, "--storage is for --codec auto (it says how fast the "
				    "store will be read)");
	assert_int_equal(access(tpath("st.h5"), F_OK), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names_and_levels),
		cmocka_unit_test(test_encode_decode_every_codec),
		cmocka_unit_test(test_blosc_encode),
		cmocka_unit_test(test_store_of_every_codec),
		cmocka_unit_test(test_auto),
		cmocka_unit_test(test_auto_measures),
		cmocka_unit_test(test_auto_regime_rule),
		cmocka_unit_test(test_parse_storage),
		cmocka_unit_test(test_auto_storage),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
