/* The index cache's file (source/index.c) and its flat sources
 * (index_flat.c): entries found only by their key, stamp and format;
 * every damaged, cut or foreign file refused whole; a file written and
 * loaded back; a .npy made again from its entry reads the same elements
 * and opens its file only at that read; a chunked source (index_chunks.c)
 * made from an entry written here by hand reads its chunks where the
 * entry says, saves back to the same bytes, and every value out of what
 * its encoding allows is refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "codec/codec.h"
#include "common/bytes.h"
#include "dsview/source.h"
#include "fixture.h"
#include "source/index.h"
#include "source/source.h"

static char dir[] = "/tmp/dsv-test-index-XXXXXX";
static const dsv_index_stamp ST[3] = {
	{ 100, 1700000000123456789ull, 11, 2049 },
	{ 200, 1700000000000000001ull, 12, 2049 },
	{ 300, 1700000000999999999ull, 13, 2050 },
};
static const char *const KEYS[3] = { "/d/a.npy", "/d/b.h5\0/x", "/d/c.bin\0raw 9 -1 8" };
static const size_t KEYLEN[3] = { 8, 10, 19 };
static const char *const FMTS[3] = { "npy", "hdf5", "raw" };

SCRATCH_GROUP_FIXTURES(dir)

/* An index of "what" holding the three entries, blob i = i + 1 bytes of
 * value 'a' + i. */
static dsv_index *three(void)
{
	dsv_index *ix = dsv_index_new("what");
	assert_non_null(ix);
	for (int i = 0; i < 3; i++) {
		unsigned char blob[3];
		memset(blob, 'a' + i, sizeof(blob));
		assert_int_equal(
			dsv_index_add(ix, KEYS[i], KEYLEN[i], &ST[i], FMTS[i], blob, (size_t)i + 1),
			0);
	}
	return ix;
}

static void serialize(const dsv_index *ix, unsigned char **buf, size_t *len)
{
	assert_int_equal(dsv_index_serialize(ix, buf, len), 0);
}

/* buf parsed into a new index of "what": the result, why into *why. */
static int parse_copy(const unsigned char *buf, size_t len, const char **why)
{
	dsv_index *ix = dsv_index_new("what");
	unsigned char *copy = malloc(len ? len : 1);
	memcpy(copy, buf, len);
	int err = dsv_index_parse(ix, copy, len, why);
	dsv_index_free(ix);
	return err;
}

static void test_round_trip(void **state)
{
	(void)state;
	unsigned char *buf;
	size_t len, blen;
	const void *blob;
	const char *why = NULL;
	dsv_index *ix = three(), *back = dsv_index_new("what");
	dsv_index_stamp other = ST[0];

	serialize(ix, &buf, &len);
	dsv_index_free(ix);
	assert_int_equal(dsv_index_parse(back, buf, len, &why), 0);
	assert_true(dsv_index_changed(back)); /* a write now would drop every entry */
	for (int i = 0; i < 3; i++) {
		assert_int_equal(
			dsv_index_find(back, KEYS[i], KEYLEN[i], &ST[i], FMTS[i], &blob, &blen), 1);
		assert_int_equal(blen, (size_t)i + 1);
		for (size_t k = 0; k < blen; k++)
			assert_int_equal(((const unsigned char *)blob)[k], 'a' + i);
	}
	assert_false(dsv_index_changed(back)); /* every entry found: the file stands */
	/* each part of the stamp, the format and the key must match */
	other.mtime_ns++;
	assert_int_equal(dsv_index_find(back, KEYS[0], KEYLEN[0], &other, "npy", &blob, &blen), 0);
	other = ST[0], other.size++;
	assert_int_equal(dsv_index_find(back, KEYS[0], KEYLEN[0], &other, "npy", &blob, &blen), 0);
	other = ST[0], other.ino++;
	assert_int_equal(dsv_index_find(back, KEYS[0], KEYLEN[0], &other, "npy", &blob, &blen), 0);
	other = ST[0], other.dev++;
	assert_int_equal(dsv_index_find(back, KEYS[0], KEYLEN[0], &other, "npy", &blob, &blen), 0);
	assert_int_equal(dsv_index_find(back, KEYS[0], KEYLEN[0], &ST[0], "raw", &blob, &blen), 0);
	assert_int_equal(dsv_index_find(back, "/d/b.h5", 7, &ST[1], "hdf5", &blob, &blen), 0);
	/* a stale entry replaced: changed, and the new state found */
	other = ST[0], other.mtime_ns += 5;
	assert_int_equal(dsv_index_add(back, KEYS[0], KEYLEN[0], &other, "npy", "zz", 2), 0);
	assert_true(dsv_index_changed(back));
	assert_int_equal(dsv_index_find(back, KEYS[0], KEYLEN[0], &other, "npy", &blob, &blen), 1);
	assert_int_equal(blen, 2);
	assert_memory_equal(blob, "zz", 2);
	dsv_index_free(back);
}

static void test_unused_entries_dropped(void **state)
{
	(void)state;
	unsigned char *buf, *buf2;
	size_t len, len2, blen;
	const void *blob;
	const char *why;
	dsv_index *ix = three(), *back = dsv_index_new("what");

	serialize(ix, &buf, &len);
	dsv_index_free(ix);
	assert_int_equal(dsv_index_parse(back, buf, len, &why), 0);
	assert_int_equal(dsv_index_find(back, KEYS[1], KEYLEN[1], &ST[1], "hdf5", &blob, &blen), 1);
	assert_true(dsv_index_changed(back)); /* two entries no source asked for */
	serialize(back, &buf2, &len2);
	dsv_index_free(back);
	back = dsv_index_new("what");
	assert_int_equal(dsv_index_parse(back, buf2, len2, &why), 0);
	assert_int_equal(dsv_index_find(back, KEYS[0], KEYLEN[0], &ST[0], "npy", &blob, &blen), 0);
	assert_int_equal(dsv_index_find(back, KEYS[1], KEYLEN[1], &ST[1], "hdf5", &blob, &blen), 1);
	dsv_index_free(back);
}

static void test_every_flipped_byte_and_cut_refused(void **state)
{
	(void)state;
	unsigned char *buf;
	size_t len;
	const char *why;
	dsv_index *ix = three();

	serialize(ix, &buf, &len);
	dsv_index_free(ix);
	assert_int_equal(parse_copy(buf, len, &why), 0);
	for (size_t i = 0; i < len; i++)
		for (int bit = 0; bit < 8; bit += 3) {
			buf[i] ^= (unsigned char)(1u << bit);
			assert_int_not_equal(parse_copy(buf, len, &why), 0);
			buf[i] ^= (unsigned char)(1u << bit);
		}
	for (size_t cut = 0; cut < len; cut++)
		assert_int_not_equal(parse_copy(buf, cut, &why), 0);
	free(buf);
}

/* buf with its CRC made right again after an edit. */
static void reseal(unsigned char *buf, size_t len)
{
	uint32_t c = dsv_crc32c(buf, len - 4);
	for (int k = 0; k < 4; k++)
		buf[len - 4 + k] = (unsigned char)(c >> (8 * k));
}

static void test_checked_fields_refused(void **state)
{
	(void)state;
	unsigned char *buf;
	size_t len;
	const char *why;
	dsv_index *ix = three(), *other = dsv_index_new("another");

	serialize(ix, &buf, &len);
	dsv_index_free(ix);
	/* another version, its CRC right */
	buf[8] = 2;
	reseal(buf, len);
	assert_int_equal(parse_copy(buf, len, &why), DSV_ERR_UNSUPPORTED);
	assert_non_null(strstr(why, "version"));
	buf[8] = 1;
	/* an entry count past what the file holds */
	buf[16] = 200;
	reseal(buf, len);
	assert_int_equal(parse_copy(buf, len, &why), DSV_ERR_CORRUPT);
	/* one entry fewer than the file holds: bytes left over */
	buf[16] = 2;
	reseal(buf, len);
	assert_int_equal(parse_copy(buf, len, &why), DSV_ERR_CORRUPT);
	assert_non_null(strstr(why, "left"));
	buf[16] = 3;
	/* the first key's length past the end of the file */
	size_t k0 = 24 + 4 + 4; /* header, what's length, "what" */
	buf[k0 + 3] = 0x7f;
	reseal(buf, len);
	assert_int_equal(parse_copy(buf, len, &why), DSV_ERR_CORRUPT);
	buf[k0 + 3] = 0;
	/* restored: it parses again */
	reseal(buf, len);
	assert_int_equal(parse_copy(buf, len, &why), 0);
	/* the index of another source */
	unsigned char *copy = malloc(len);
	memcpy(copy, buf, len);
	assert_int_equal(dsv_index_parse(other, copy, len, &why), DSV_ERR_CORRUPT);
	assert_non_null(strstr(why, "another source"));
	dsv_index_free(other);
	free(buf);
}

static void test_duplicate_key_refused(void **state)
{
	(void)state;
	dsv_index *ix = dsv_index_new("what");
	unsigned char *buf;
	size_t len;
	const char *why;
	/* two entries of keys "a1" and "a2", then the second renamed "a1" */
	assert_int_equal(dsv_index_add(ix, "a1", 2, &ST[0], "npy", "x", 1), 0);
	assert_int_equal(dsv_index_add(ix, "a2", 2, &ST[1], "npy", "y", 1), 0);
	serialize(ix, &buf, &len);
	dsv_index_free(ix);
	unsigned char *second = memmem(buf + 40, len - 40, "a2", 2);
	assert_non_null(second);
	second[1] = '1';
	reseal(buf, len);
	assert_int_equal(parse_copy(buf, len, &why), DSV_ERR_CORRUPT);
	assert_non_null(strstr(why, "twice"));
	free(buf);
}

static void test_write_and_load(void **state)
{
	(void)state;
	char file[256], bad[256];
	const char *why;
	const void *blob;
	size_t blen;
	dsv_index *ix = three(), *back = dsv_index_new("what");

	snprintf(file, sizeof(file), "%s/ix.dsvidx", dir);
	assert_int_equal(dsv_index_write(ix, file, &why), 0);
	assert_int_equal(dsv_index_load(back, file, &why), 0);
	assert_int_equal(dsv_index_find(back, KEYS[2], KEYLEN[2], &ST[2], "raw", &blob, &blen), 1);
	assert_int_equal(blen, 3);
	dsv_index_free(back);
	back = dsv_index_new("what");
	snprintf(bad, sizeof(bad), "%s/none/ix.dsvidx", dir);
	assert_int_equal(dsv_index_load(back, bad, &why), DSV_ERR_NOTFOUND);
	assert_int_equal(dsv_index_write(ix, bad, &why), DSV_ERR_IO); /* no such directory */
	assert_non_null(why);
	dsv_index_free(back);
	dsv_index_free(ix);
	/* no temporary file left beside it */
	snprintf(bad, sizeof(bad), "%s/ix.dsvidx.tmp.%ld", dir, (long)getpid());
	assert_int_not_equal(access(bad, F_OK), 0);
}

/* A version-1 .npy of 12 int16 values, shape (3, 4), i * 7 - 20. */
static const char *write_npy(const char *name)
{
	unsigned char buf[128 + 24];
	const char *dict = "{'descr': '<i2', 'fortran_order': False, 'shape': (3, 4), }";
	memset(buf, ' ', 128);
	memcpy(buf, "\x93NUMPY\x01\x00", 8);
	buf[8] = 128 - 10;
	buf[9] = 0;
	memcpy(buf + 10, dict, strlen(dict));
	buf[127] = '\n';
	for (int i = 0; i < 12; i++) {
		int16_t v = (int16_t)(i * 7 - 20);
		memcpy(buf + 128 + 2 * i, &v, 2);
	}
	return scratch_write(dir, name, buf, sizeof(buf));
}

static void test_flat_source_from_its_entry(void **state)
{
	(void)state;
	const char *path = write_npy("a.npy");
	dsv_source *s, *back;
	dsv_errbuf eb;
	dsv_index_buf b = { 0 };
	dsv_index_stamp st;
	dsv_source_fd_stats before, after;
	struct stat fs;
	int16_t got[12];
	dsv_chunk_ref ref;

	assert_int_equal(dsv_source_open_npy(path, &s, &eb), 0);
	assert_int_equal(dsv_source_stamp(s, &st), 0);
	assert_int_equal(stat(path, &fs), 0);
	dsv_index_stamp want;
	dsv_index_stamp_of(&fs, &want);
	assert_memory_equal(&st, &want, sizeof(st));
	assert_int_equal(dsv_index_save_flat(s, &b), 0);
	dsv_source_close(s);

	dsv_source_fd_counts(&before);
	assert_int_equal(dsv_index_load_flat(path, NULL, b.p, b.len, &st, DSV_SRC_NPY, &back, &eb),
			 0);
	dsv_source_fd_counts(&after);
	assert_int_equal(after.open, before.open); /* nothing opened yet */
	assert_int_equal(after.firsts, before.firsts);
	const dsv_source_info *in = dsv_source_get_info(back);
	assert_int_equal(in->dtype, DSV_I16);
	assert_int_equal(in->ndim, 2);
	assert_int_equal(in->shape[0], 3);
	assert_int_equal(in->shape[1], 4);
	assert_int_equal(dsv_source_chunk(back, 0, &ref), 0);
	assert_int_equal(dsv_source_decode_chunk(back, &ref, got, sizeof(got), NULL), 0);
	for (int i = 0; i < 12; i++)
		assert_int_equal(got[i], i * 7 - 20);
	dsv_source_fd_counts(&after);
	assert_int_equal(after.reopens, before.reopens + 1); /* opened at the read */
	dsv_source_close(back);

	/* the wrong kind, and each value past what the file holds */
	assert_int_equal(dsv_index_load_flat(path, NULL, b.p, b.len, &st, DSV_SRC_RAW, &back, &eb),
			 DSV_ERR_CORRUPT);
	assert_non_null(strstr(eb.msg, "a.npy"));
	assert_null(back);
	unsigned char *blob = b.p;
	size_t off_at = 8 * 5; /* kind, dtype, ndim, two dims, then data_offset */
	uint64_t keep = dsv_load_le64(blob + off_at);
	blob[off_at] = 200; /* the data runs past the end of the file */
	assert_int_equal(dsv_index_load_flat(path, NULL, b.p, b.len, &st, DSV_SRC_NPY, &back, &eb),
			 DSV_ERR_CORRUPT);
	blob[off_at] = (unsigned char)keep;
	blob[8] = 99; /* no such dtype */
	assert_int_equal(dsv_index_load_flat(path, NULL, b.p, b.len, &st, DSV_SRC_NPY, &back, &eb),
			 DSV_ERR_CORRUPT);
	blob[8] = (unsigned char)DSV_I16;
	blob[16] = 0; /* no dimensions */
	assert_int_equal(dsv_index_load_flat(path, NULL, b.p, b.len, &st, DSV_SRC_NPY, &back, &eb),
			 DSV_ERR_CORRUPT);
	blob[16] = 2;
	blob[24 + 7] = 0x40; /* a shape whose bytes overflow */
	assert_int_equal(dsv_index_load_flat(path, NULL, b.p, b.len, &st, DSV_SRC_NPY, &back, &eb),
			 DSV_ERR_CORRUPT);
	blob[24 + 7] = 0;
	assert_int_equal(
		dsv_index_load_flat(path, NULL, b.p, b.len - 1, &st, DSV_SRC_NPY, &back, &eb),
		DSV_ERR_CORRUPT);
	assert_int_equal(dsv_index_load_flat(path, NULL, b.p, b.len, &st, DSV_SRC_NPY, &back, &eb),
			 0);

	/* the file changed since the stamp: its first read fails, not a wrong answer */
	struct timespec ts[2] = { { 0, UTIME_OMIT }, { 1000000, 0 } };
	assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
	assert_int_equal(dsv_source_chunk(back, 0, &ref), 0);
	assert_int_equal(dsv_source_decode_chunk(back, &ref, got, sizeof(got), NULL), DSV_ERR_IO);
	dsv_source_close(back);
	free(b.p);
}

/* A (5, 4) int16 array in chunks of 2 rows stored raw and out of order
 * (chunk 0 at 64, 1 at 16, 2 at 96; the last one full, as HDF5 stores
 * it), element i = i * 3 - 30; and its saved state as the encoding
 * says: kind, dtype, ndim, shape, the 14 fields, then each chunk's
 * offset and mask << 32 | size. */
static void store_le64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

#define CH_FIELD(k) (8 * (5 + (k))) /* field k after the shape */
#define CH_CHUNK(i) (CH_FIELD(14) + 16 * (i))
static const uint64_t CH_OFF[3] = { 64, 16, 96 };

static const char *write_chunked(unsigned char *blob)
{
	unsigned char file[128] = { 0 };
	for (int i = 0; i < 20; i++) {
		int16_t v = (int16_t)(i * 3 - 30);
		memcpy(file + CH_OFF[i / 8] + 2 * (i % 8), &v, 2);
	}
	const uint64_t head[5] = { DSV_SRC_H5_CHUNKED, DSV_I16, 2, 5, 4 };
	/* chunk_rows 2, no codec, fletcher32 0, filter bits 0, no shuffle,
	 * no bitshuffle, no LZ4 block or table, 3 chunks */
	const uint64_t fields[14] = { 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3 };
	for (int k = 0; k < 5; k++)
		store_le64(blob + 8 * k, head[k]);
	for (int k = 0; k < 14; k++)
		store_le64(blob + CH_FIELD(k), fields[k]);
	for (int i = 0; i < 3; i++) {
		store_le64(blob + CH_CHUNK(i), CH_OFF[i]);
		store_le64(blob + CH_CHUNK(i) + 8, 16);
	}
	return scratch_write(dir, "c.h5", file, sizeof(file));
}
#define CH_LEN CH_CHUNK(3)

/* Loads blob[0 .. len) as the chunked source of path. */
static int load_chunked(const char *path, const unsigned char *blob, size_t len, dsv_source **out)
{
	struct stat fs;
	dsv_index_stamp st;
	dsv_errbuf eb;
	assert_int_equal(stat(path, &fs), 0);
	dsv_index_stamp_of(&fs, &st);
	int err = dsv_index_load_chunked(path, "/x", blob, len, &st, DSV_SRC_H5_CHUNKED, out, &eb);
	if (err) {
		assert_null(*out);
		assert_non_null(strstr(eb.msg, "c.h5"));
		assert_non_null(strstr(eb.msg, "index cache"));
	}
	return err;
}

static void test_chunked_source_from_its_entry(void **state)
{
	(void)state;
	unsigned char blob[CH_LEN];
	const char *path = write_chunked(blob);
	dsv_source *s;
	dsv_source_fd_stats before, after;
	dsv_index_buf b = { 0 };
	dsv_chunk_ref ref;
	int16_t got[8];

	dsv_source_fd_counts(&before);
	assert_int_equal(load_chunked(path, blob, sizeof(blob), &s), 0);
	dsv_source_fd_counts(&after);
	assert_int_equal(after.firsts, before.firsts); /* nothing opened yet */
	const dsv_source_info *in = dsv_source_get_info(s);
	assert_int_equal(in->kind, DSV_SRC_H5_CHUNKED);
	assert_int_equal(in->nchunks, 3);
	assert_int_equal(in->chunk_elems, 8);
	assert_int_equal(in->stored_bytes, 48);
	for (uint64_t c = 0; c < 3; c++) {
		assert_int_equal(dsv_source_chunk(s, c, &ref), 0);
		assert_int_equal(ref.offset, CH_OFF[c]);
		assert_int_equal(dsv_source_decode_chunk(s, &ref, got, sizeof(got), NULL), 0);
		for (uint64_t i = 0; i < ref.nelems; i++)
			assert_int_equal(got[i], (int)(c * 8 + i) * 3 - 30);
	}
	assert_int_equal(dsv_index_save_chunked(s, &b), 0); /* the same bytes back */
	assert_int_equal(b.len, sizeof(blob));
	assert_memory_equal(b.p, blob, sizeof(blob));
	free(b.p);
	dsv_source_close(s);
}

/* Each field out of range, set to bad, is refused; put back, it loads. */
static void test_chunked_fields_refused(void **state)
{
	(void)state;
	unsigned char blob[CH_LEN];
	const char *path = write_chunked(blob);
	dsv_source *s;
	static const struct {
		size_t at;
		uint64_t bad;
	} cases[] = {
		{ 0, DSV_SRC_H5_CONTIGUOUS }, /* another kind */
		{ 8, 99 },                    /* no such dtype */
		{ 16, 0 },                    /* no dimensions */
		{ 24, 1ull << 62 },           /* a shape whose bytes overflow */
		{ CH_FIELD(0), 0 },           /* chunks of no rows */
		{ CH_FIELD(0), 3 },           /* rows that make another count of chunks */
		{ CH_FIELD(1), 99 },          /* no such codec */
		{ CH_FIELD(1), 1ull << 40 },
		{ CH_FIELD(1), 0x80000000u }, /* a codec that would be a negative enum */
		{ CH_FIELD(2), 0xc9000000u },
		/* fletcher32 that would be a negative int */ /* a 32-bit field past 32 bits */
		{ CH_FIELD(2), 2 },                           /* fletcher32 neither 0 nor 1 */
		{ CH_FIELD(3), 32 },                          /* a filter bit outside the mask */
		{ CH_FIELD(5), 3 },              /* a shuffle of another element size */
		{ CH_FIELD(7), 2 },              /* bitshuffle's fields without it */
		{ CH_FIELD(10), 4 },             /* an LZ4 block without LZ4 */
		{ CH_FIELD(11), 8 },             /* a table offset without a table */
		{ CH_FIELD(12), 2 },             /* a table without LZ4 */
		{ CH_FIELD(13), 4 },             /* another count of chunks */
		{ CH_FIELD(13), 1ull << 60 },    /* a count whose map overflows */
		{ CH_CHUNK(1) + 8, 0 },          /* a chunk of no bytes */
		{ CH_CHUNK(1) + 8, 15 },         /* an unfiltered chunk short of a chunk */
		{ CH_CHUNK(2), UINT64_MAX },     /* a chunk never written */
		{ CH_CHUNK(2), UINT64_MAX - 8 }, /* its end past 2^64 */
	};
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		uint64_t keep = dsv_load_le64(blob + cases[k].at);
		store_le64(blob + cases[k].at, cases[k].bad);
		if (load_chunked(path, blob, sizeof(blob), &s) != DSV_ERR_CORRUPT)
			fail_msg("case %zu (at %zu) not refused", k, cases[k].at);
		store_le64(blob + cases[k].at, keep);
	}
	/* cut short, a byte more */
	assert_int_equal(load_chunked(path, blob, sizeof(blob) - 1, &s), DSV_ERR_CORRUPT);
	unsigned char more[CH_LEN + 1];
	memcpy(more, blob, sizeof(blob));
	more[CH_LEN] = 0;
	assert_int_equal(load_chunked(path, more, sizeof(more), &s), DSV_ERR_CORRUPT);
	/* a codec's chunk may be any size up to about twice the chunk */
	store_le64(blob + CH_FIELD(1), DSV_CODEC_LZ4);
	store_le64(blob + CH_CHUNK(0) + 8, 2 * 16 + (64u << 10) + 1);
	assert_int_equal(load_chunked(path, blob, sizeof(blob), &s), DSV_ERR_CORRUPT);
	store_le64(blob + CH_CHUNK(0) + 8,
		   7 | 1ull << 32); /* but one whose codec was skipped is raw */
	assert_int_equal(load_chunked(path, blob, sizeof(blob), &s), DSV_ERR_CORRUPT);
	store_le64(blob + CH_CHUNK(0) + 8, 7);
	assert_int_equal(load_chunked(path, blob, sizeof(blob), &s), 0);
	dsv_source_close(s);
	/* a chunk past the end of the file loads, and its read fails */
	store_le64(blob + CH_FIELD(1), DSV_CODEC_NONE);
	store_le64(blob + CH_CHUNK(0) + 8, 16);
	store_le64(blob + CH_CHUNK(2), 120);
	assert_int_equal(load_chunked(path, blob, sizeof(blob), &s), 0);
	dsv_chunk_ref ref;
	int16_t got[8];
	assert_int_equal(dsv_source_chunk(s, 2, &ref), 0);
	assert_int_not_equal(dsv_source_decode_chunk(s, &ref, got, sizeof(got), NULL), 0);
	dsv_source_close(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_unused_entries_dropped),
		cmocka_unit_test(test_every_flipped_byte_and_cut_refused),
		cmocka_unit_test(test_checked_fields_refused),
		cmocka_unit_test(test_duplicate_key_refused),
		cmocka_unit_test(test_write_and_load),
		cmocka_unit_test(test_flat_source_from_its_entry),
		cmocka_unit_test(test_chunked_source_from_its_entry),
		cmocka_unit_test(test_chunked_fields_refused),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
