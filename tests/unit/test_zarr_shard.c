/* Zarr v3 sharding and bytes codecs (src/formats/zarr/zarr_shard.c, zarr_meta.c,
 * src/codec/crc32c.c): the sharded zarr.json zarr-python 3.0 writes, the
 * shard metadata refused with its reason, a shard index checked and
 * decoded (entries never written, entries past the file, a wrong
 * checksum), and chains of a compressor and crc32c in both orders. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include "codec/codec.h"
#include "formats/zarr/zarr.h"

/* zarr.create_array(shape=(50, 12, 7), dtype="<f4", chunks=(4, 6, 7),
 * shards=(8, 12, 7)) as zarr 3.0.10 writes it, less its whitespace. */
static const char *sharded_json(const char *sharding_cfg)
{
	static char text[2048];
	snprintf(text, sizeof(text),
		 "{\"shape\": [50, 12, 7], \"data_type\": \"float32\", \"chunk_grid\": {\"name\": "
		 "\"regular\", \"configuration\": {\"chunk_shape\": [8, 12, 7]}}, "
		 "\"chunk_key_encoding\": {\"name\": \"default\", \"configuration\": "
		 "{\"separator\": \"/\"}}, \"fill_value\": 0.0, \"codecs\": [{\"name\": "
		 "\"sharding_indexed\", \"configuration\": %s}], \"attributes\": {}, "
		 "\"zarr_format\": 3, \"node_type\": \"array\", \"storage_transformers\": []}",
		 sharding_cfg);
	return text;
}

#define DEFAULT_CFG                                                                            \
	"{\"chunk_shape\": [4, 6, 7], \"codecs\": [{\"name\": \"bytes\", \"configuration\": "  \
	"{\"endian\": \"little\"}}, {\"name\": \"zstd\", \"configuration\": {\"level\": 0, "   \
	"\"checksum\": false}}], \"index_codecs\": [{\"name\": \"bytes\", \"configuration\": " \
	"{\"endian\": \"little\"}}, {\"name\": \"crc32c\"}], \"index_location\": \"end\"}"

static int parse(const char *text, dsv_zarr_meta *m, dsv_errbuf *eb)
{
	return dsv_zarr_parse(text, strlen(text), 3, m, eb);
}

static void test_crc32c(void **state)
{
	(void)state;
	/* the check value of CRC-32C, and RFC 3720's 32 zero bytes */
	unsigned char zeros[32] = { 0 };
	assert_int_equal(dsv_crc32c("123456789", 9), 0xE3069283u);
	assert_int_equal(dsv_crc32c(zeros, 32), 0x8A9136AAu);
	assert_int_equal(dsv_crc32c("", 0), 0);
}

static void test_sharded_as_written(void **state)
{
	(void)state;
	dsv_zarr_meta m;
	dsv_errbuf eb;
	assert_int_equal(parse(sharded_json(DEFAULT_CFG), &m, &eb), 0);
	assert_true(m.sharded);
	assert_int_equal(m.chunks[0], 4);
	assert_int_equal(m.chunks[1], 6);
	assert_int_equal(m.shard[0], 8);
	assert_int_equal(m.per_shard[0], 2);
	assert_int_equal(m.per_shard[1], 2);
	assert_int_equal(m.per_shard[2], 1);
	assert_int_equal(m.shard_chunks, 4);
	assert_int_equal(m.grid[0], 13); /* inner chunks along axis 0 */
	assert_int_equal(m.kgrid[0], 7); /* shards along axis 0 */
	assert_int_equal(m.kgrid[1], 1);
	assert_true(m.index_crc);
	assert_false(m.index_at_start);
	assert_false(m.index_big_endian);
	assert_int_equal(m.codec, DSV_ZC_ZSTD);
	assert_int_equal(m.nsteps, 1);
	assert_int_equal(dsv_zarr_index_bytes(&m), 4 * 16 + 4);
	char key[64];
	uint64_t idx[3] = { 6, 0, 0 };
	assert_int_equal(dsv_zarr_chunk_key(&m, idx, key, sizeof(key)), 0);
	assert_string_equal(key, "c/6/0/0");
	idx[0] = 7; /* a shard outside the shard grid */
	assert_int_equal(dsv_zarr_chunk_key(&m, idx, key, sizeof(key)), DSV_ERR_INVALID);
	assert_true(dsv_zarr_is_chunk_key(&m, "c/6/0/0"));
	assert_false(dsv_zarr_is_chunk_key(&m, "c/7/0/0"));
	assert_false(dsv_zarr_is_chunk_key(&m, "c/0/1/0"));

	/* the index first, big-endian, no checksum; inner crc32c around gzip */
	assert_int_equal(
		parse(sharded_json(
			      "{\"chunk_shape\": [8, 3, 7], \"codecs\": [{\"name\": "
			      "\"transpose\", \"configuration\": {\"order\": [2, 1, 0]}}, "
			      "{\"name\": \"bytes\", \"configuration\": {\"endian\": \"big\"}},"
			      "{\"name\": \"crc32c\"}, {\"name\": \"gzip\"}, {\"name\": "
			      "\"crc32c\"}], \"index_codecs\": [{\"name\": \"bytes\", "
			      "\"configuration\": {\"endian\": \"big\"}}], \"index_location\": "
			      "\"start\"}"),
		      &m, &eb),
		0);
	assert_true(m.index_at_start);
	assert_true(m.index_big_endian);
	assert_false(m.index_crc);
	assert_true(m.fortran);
	assert_true(m.big_endian);
	assert_int_equal(m.nsteps, 3);
	assert_int_equal(m.step[0], DSV_ZC_CRC32C);
	assert_int_equal(m.step[1], DSV_ZC_GZIP);
	assert_int_equal(m.step[2], DSV_ZC_CRC32C);
	assert_int_equal(m.shard_chunks, 4);
	assert_int_equal(dsv_zarr_index_bytes(&m), 64);
}

static void test_sharding_refused(void **state)
{
	(void)state;
	static const struct {
		const char *cfg, *reason;
		int code;
	} cases[] = {
		{ "{\"chunk_shape\": [3, 6, 7], \"codecs\": [{\"name\": \"bytes\", "
		  "\"configuration\": {\"endian\": \"little\"}}], \"index_codecs\": [{\"name\": "
		  "\"bytes\", \"configuration\": {\"endian\": \"little\"}}]}",
		  "shard shape[0] 8 is not a multiple of the inner chunk's 3", DSV_ERR_FORMAT },
		{ "{\"chunk_shape\": [4, 6, 7], \"codecs\": [{\"name\": \"sharding_indexed\"}], "
		  "\"index_codecs\": [{\"name\": \"bytes\", \"configuration\": {\"endian\": "
		  "\"little\"}}]}",
		  "sharding inside a shard", DSV_ERR_UNSUPPORTED },
		{ "{\"chunk_shape\": [4, 6, 7], \"codecs\": [{\"name\": \"bytes\", "
		  "\"configuration\": {\"endian\": \"little\"}}], \"index_codecs\": [{\"name\": "
		  "\"bytes\", \"configuration\": {\"endian\": \"little\"}}, {\"name\": \"zstd\"}]}",
		  "index_codecs other than bytes", DSV_ERR_UNSUPPORTED },
		{ "{\"chunk_shape\": [4, 6, 7], \"codecs\": [{\"name\": \"bytes\", "
		  "\"configuration\": {\"endian\": \"little\"}}], \"index_codecs\": [{\"name\": "
		  "\"bytes\", \"configuration\": {\"endian\": \"little\"}}], \"index_location\": "
		  "\"middle\"}",
		  "index_location is not", DSV_ERR_FORMAT },
		{ "{\"chunk_shape\": [4, 6, 7], \"codecs\": [{\"name\": \"bytes\", "
		  "\"configuration\": {\"endian\": \"little\"}}, {\"name\": \"bz2\"}], "
		  "\"index_codecs\": [{\"name\": \"bytes\", \"configuration\": {\"endian\": "
		  "\"little\"}}]}",
		  "compressor 'bz2'", DSV_ERR_UNSUPPORTED },
		{ "{\"chunk_shape\": [1, 1, 1], \"codecs\": [{\"name\": \"bytes\", "
		  "\"configuration\": {\"endian\": \"little\"}}], \"index_codecs\": [{\"name\": "
		  "\"bytes\", \"configuration\": {\"endian\": \"little\"}}]}",
		  NULL, 0 }, /* 672 inner chunks: fine */
	};
	dsv_zarr_meta m;
	dsv_errbuf eb;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int rc = parse(sharded_json(cases[i].cfg), &m, &eb);
		if (rc != cases[i].code || (cases[i].reason && !strstr(eb.msg, cases[i].reason)))
			fail_msg("case %zu: rc %d, message '%s'", i, rc, eb.msg);
	}
	/* codecs around the sharding, and a shard of too many inner chunks */
	const char *outer =
		"{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [4], \"data_type\": "
		"\"uint8\", \"chunk_grid\": {\"name\": \"regular\", \"configuration\": "
		"{\"chunk_shape\": [4]}}, \"chunk_key_encoding\": {\"name\": \"default\"}, "
		"\"codecs\": [{\"name\": \"sharding_indexed\", \"configuration\": "
		"{\"chunk_shape\": "
		"[2], \"codecs\": [{\"name\": \"bytes\"}], \"index_codecs\": [{\"name\": "
		"\"bytes\", \"configuration\": {\"endian\": \"little\"}}]}}, {\"name\": "
		"\"gzip\"}], \"fill_value\": 0}";
	assert_int_equal(parse(outer, &m, &eb), DSV_ERR_UNSUPPORTED);
	assert_non_null(strstr(eb.msg, "codec 'gzip' after sharding_indexed"));
	const char *huge =
		"{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [4194304], "
		"\"data_type\": "
		"\"uint8\", \"chunk_grid\": {\"name\": \"regular\", \"configuration\": "
		"{\"chunk_shape\": [4194304]}}, \"chunk_key_encoding\": {\"name\": \"default\"}, "
		"\"codecs\": [{\"name\": \"sharding_indexed\", \"configuration\": "
		"{\"chunk_shape\": "
		"[1], \"codecs\": [{\"name\": \"bytes\"}], \"index_codecs\": [{\"name\": "
		"\"bytes\", \"configuration\": {\"endian\": \"little\"}}]}}], \"fill_value\": 0}";
	assert_int_equal(parse(huge, &m, &eb), DSV_ERR_UNSUPPORTED);
	assert_non_null(strstr(eb.msg, "a shard of more than 1048576 inner chunks"));
}

static void put_le64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static void put_le32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static void test_shard_index(void **state)
{
	(void)state;
	dsv_zarr_meta m;
	dsv_errbuf eb;
	unsigned char raw[68];
	uint64_t out[8];
	assert_int_equal(parse(sharded_json(DEFAULT_CFG), &m, &eb), 0);
	/* inner chunks 0 and 3 written, 1 and 2 never (all ones) */
	memset(raw, 0xff, sizeof(raw));
	put_le64(raw, 0);
	put_le64(raw + 8, 100);
	put_le64(raw + 48, 100);
	put_le64(raw + 56, 50);
	put_le32(raw + 64, dsv_crc32c(raw, 64));
	assert_int_equal(dsv_zarr_shard_index(&m, raw, 68, 218, out, &eb), 0);
	assert_int_equal(out[0], 0);
	assert_int_equal(out[1], 100);
	assert_true(out[2] == UINT64_MAX && out[3] == UINT64_MAX);
	assert_int_equal(out[6], 100);
	assert_int_equal(out[7], 50);
	/* the last chunk's end past a file shorter by one byte than needed */
	assert_int_equal(dsv_zarr_shard_index(&m, raw, 68, 149, out, &eb), DSV_ERR_CORRUPT);
	assert_non_null(strstr(eb.msg, "entry 3 (offset 100, 50 bytes) lies past the end"));
	/* a flipped bit in an entry */
	raw[8] ^= 1;
	assert_int_equal(dsv_zarr_shard_index(&m, raw, 68, 218, out, &eb), DSV_ERR_CORRUPT);
	assert_non_null(strstr(eb.msg, "checksum (crc32c) differs"));
	/* an offset that would wrap around */
	put_le64(raw, UINT64_MAX - 10);
	put_le64(raw + 8, 20);
	put_le32(raw + 64, dsv_crc32c(raw, 64));
	assert_int_equal(dsv_zarr_shard_index(&m, raw, 68, 218, out, &eb), DSV_ERR_CORRUPT);
	/* one entry half all-ones is no empty chunk */
	put_le64(raw, UINT64_MAX);
	put_le64(raw + 8, 4);
	put_le32(raw + 64, dsv_crc32c(raw, 64));
	assert_int_equal(dsv_zarr_shard_index(&m, raw, 68, 218, out, &eb), DSV_ERR_CORRUPT);
	/* the wrong size */
	assert_int_equal(dsv_zarr_shard_index(&m, raw, 64, 218, out, &eb), DSV_ERR_CORRUPT);
}

/* A shard file of m (index at the end, crc32c) at path whose inner chunk
 * i is len[i] bytes at off[i] (UINT64_MAX: never written), padded with
 * pad bytes before the index. @return its size. */
static long write_shard(const char *path, const dsv_zarr_meta *m, const uint64_t *off,
			const uint64_t *len, size_t pad)
{
	unsigned char idx[68];
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	for (size_t i = 0; i < pad; i++)
		fputc((int)i, f);
	for (int i = 0; i < 4; i++) {
		put_le64(idx + 16 * i, off[i]);
		put_le64(idx + 16 * i + 8, len[i]);
	}
	put_le32(idx + 64, dsv_crc32c(idx, 64));
	assert_int_equal(dsv_zarr_index_bytes(m), sizeof(idx));
	fwrite(idx, 1, sizeof(idx), f);
	long size = ftell(f);
	fclose(f);
	return size;
}

static void test_index_cache(void **state)
{
	(void)state;
	dsv_zarr_meta m;
	dsv_errbuf eb;
	char path[] = "/tmp/dsv-shard-XXXXXX";
	uint64_t off, len;
	const uint64_t o1[4] = { 0, 10, UINT64_MAX, 30 }, l1[4] = { 10, 20, UINT64_MAX, 5 };
	const uint64_t o2[4] = { 5, 0, 0, 0 }, l2[4] = { 1, 2, 3, 4 };
	assert_int_equal(parse(sharded_json(DEFAULT_CFG), &m, &eb), 0);
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	dsv_zarr_index_cache *c = dsv_zarr_index_cache_create(&m);
	assert_non_null(c);
	long size = write_shard(path, &m, o1, l1, 35);
	assert_int_equal(dsv_zarr_index_find(c, &m, fd, (uint64_t)size, 3, 1, &off, &len, &eb), 0);
	assert_int_equal(off, 10);
	assert_int_equal(len, 20);
	assert_int_equal(dsv_zarr_index_find(c, &m, fd, (uint64_t)size, 3, 2, &off, &len, &eb),
			 DSV_ERR_NOTFOUND);
	/* another shard's index in the same file: a shard is its own entry,
	 * and the file at another size is read again */
	long size2 = write_shard(path, &m, o2, l2, 7);
	assert_int_equal(dsv_zarr_index_find(c, &m, fd, (uint64_t)size2, 4, 0, &off, &len, &eb), 0);
	assert_int_equal(off, 5);
	assert_int_equal(dsv_zarr_index_find(c, &m, fd, (uint64_t)size2, 3, 3, &off, &len, &eb), 0);
	assert_int_equal(len, 4);
	/* a corrupt index: the error, nothing kept */
	assert_int_equal(dsv_zarr_index_find(c, &m, fd, 20, 5, 0, &off, &len, &eb),
			 DSV_ERR_CORRUPT);
	assert_non_null(strstr(eb.msg, "shorter than its index"));
	assert_int_equal(dsv_zarr_index_find(c, &m, fd, (uint64_t)size2, 3, 4, &off, &len, &eb),
			 DSV_ERR_INTERNAL); /* past the shard's 4 inner chunks */
	dsv_zarr_index_cache_destroy(c);
	dsv_zarr_index_cache_destroy(NULL);
	close(fd);
	unlink(path);
}

/* m with bytes codecs [c0, c1] (DSV_ZC_NONE: left out). */
static void chain(dsv_zarr_meta *m, dsv_zarr_codec c0, dsv_zarr_codec c1)
{
	memset(m, 0, sizeof(*m));
	if (c0 != DSV_ZC_NONE)
		m->step[m->nsteps++] = c0;
	if (c1 != DSV_ZC_NONE)
		m->step[m->nsteps++] = c1;
}

static void test_decode_chains(void **state)
{
	(void)state;
	dsv_zarr_meta m;
	unsigned char data[1000], enc[2000], inner[1004], out[1000];
	for (int i = 0; i < 1000; i++)
		data[i] = (unsigned char)(i * 7 % 13);
	/* bytes, crc32c */
	memcpy(enc, data, 1000);
	put_le32(enc + 1000, dsv_crc32c(data, 1000));
	chain(&m, DSV_ZC_CRC32C, DSV_ZC_NONE);
	assert_int_equal(dsv_zarr_decode(&m, out, 1000, enc, 1004), 0);
	assert_memory_equal(out, data, 1000);
	enc[10] ^= 4;
	assert_int_equal(dsv_zarr_decode(&m, out, 1000, enc, 1004), DSV_ERR_CORRUPT);
	assert_int_equal(dsv_zarr_decode(&m, out, 1000, enc, 3), DSV_ERR_CORRUPT);
	/* bytes, zstd, crc32c */
	size_t z = ZSTD_compress(enc, sizeof(enc) - 4, data, 1000, 3);
	assert_false(ZSTD_isError(z));
	put_le32(enc + z, dsv_crc32c(enc, z));
	chain(&m, DSV_ZC_ZSTD, DSV_ZC_CRC32C);
	assert_int_equal(dsv_zarr_decode(&m, out, 1000, enc, z + 4), 0);
	assert_memory_equal(out, data, 1000);
	assert_int_equal(dsv_zarr_decode(&m, out, 999, enc, z + 4), DSV_ERR_CORRUPT);
	/* bytes, crc32c, zstd: the checksum inside the frame */
	memcpy(inner, data, 1000);
	put_le32(inner + 1000, dsv_crc32c(data, 1000));
	z = ZSTD_compress(enc, sizeof(enc), inner, 1004, 3);
	chain(&m, DSV_ZC_CRC32C, DSV_ZC_ZSTD);
	memset(out, 0, sizeof(out));
	assert_int_equal(dsv_zarr_decode(&m, out, 1000, enc, z), 0);
	assert_memory_equal(out, data, 1000);
	inner[5] ^= 1; /* a frame of bytes whose checksum is wrong */
	z = ZSTD_compress(enc, sizeof(enc), inner, 1004, 3);
	assert_int_equal(dsv_zarr_decode(&m, out, 1000, enc, z), DSV_ERR_CORRUPT);
	/* no codec: the bytes, exactly */
	chain(&m, DSV_ZC_NONE, DSV_ZC_NONE);
	assert_int_equal(dsv_zarr_decode(&m, out, 1000, data, 1000), 0);
	assert_int_equal(dsv_zarr_decode(&m, out, 1000, data, 999), DSV_ERR_CORRUPT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_crc32c),           cmocka_unit_test(test_sharded_as_written),
		cmocka_unit_test(test_sharding_refused), cmocka_unit_test(test_shard_index),
		cmocka_unit_test(test_index_cache),      cmocka_unit_test(test_decode_chains),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
