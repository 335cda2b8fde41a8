/* Token formats (src/formats/tokens): a LitData dataset of more chunk
 * files than the descriptor budget, read through the cache; a Megatron
 * index's documents as rows, cut or padded, against the documents the
 * test wrote; an llm.c file's and a Megatron index's index cache entries
 * made into their sources again, and damaged ones refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/bytes.h"
#include "common/knobs.h"
#include "dsview/source.h"
#include "fixture.h"
#include "formats/tokens/tokens.h"
#include "source/source.h"

static char dir[] = "/tmp/dsv-test-tokens-XXXXXX";

#define NCHUNKS 12
#define ITEMS 3
#define BUDGET 4

/* Chunk c of the LitData dataset: ITEMS items of c + 1 int32 tokens,
 * token k of the chunk 100 * c + k. */
static void write_lit_chunk(int c)
{
	uint32_t n = ITEMS, len = (uint32_t)(c + 1), hdr[2 + ITEMS];
	int32_t tok[ITEMS * NCHUNKS];
	unsigned char buf[sizeof(hdr) + sizeof(tok)];
	char name[32];
	hdr[0] = n;
	for (uint32_t i = 0; i <= n; i++)
		hdr[1 + i] = (uint32_t)sizeof(hdr) + 4 * len * i;
	for (uint32_t k = 0; k < n * len; k++)
		tok[k] = 100 * c + (int32_t)k;
	memcpy(buf, hdr, sizeof(hdr));
	memcpy(buf + sizeof(hdr), tok, 4 * n * len);
	snprintf(name, sizeof(name), "lit/chunk-0-%d.bin", c);
	scratch_write(dir, name, buf, sizeof(hdr) + 4 * n * len);
}

static const char *write_lit(void)
{
	static char path[256];
	char json[4096], *p = json;
	snprintf(path, sizeof(path), "%s/lit", dir);
	assert_int_equal(mkdir(path, 0755), 0);
	p += sprintf(p, "{\"chunks\": [");
	for (int c = 0; c < NCHUNKS; c++) {
		write_lit_chunk(c);
		p += sprintf(p, "%s{\"filename\": \"chunk-0-%d.bin\", \"dim\": %d}", c ? ", " : "",
			     c, ITEMS * (c + 1));
	}
	sprintf(p, "], \"config\": {\"item_loader\": \"TokensLoader\", \"compression\": null, "
		   "\"data_format\": [\"no_header_tensor:16\"]}}");
	scratch_write(dir, "lit/index.json", json, strlen(json));
	return path;
}

static void test_litdata_under_the_budget(void **state)
{
	dsv_source *s;
	dsv_errbuf eb;
	dsv_source_fd_stats st;
	dsv_chunk_ref ref;
	(void)state;
	setenv("DSVIEW_OPEN_FILES", "4", 1);
	dsv_knobs_reload();
	assert_int_equal(dsv_source_open(write_lit(), &s, &eb), 0);
	const dsv_source_info *in = dsv_source_get_info(s);
	assert_int_equal(in->nelems, ITEMS * NCHUNKS * (NCHUNKS + 1) / 2);
	dsv_source_fd_counts(&st);
	assert_true(st.open <= BUDGET);
	int32_t *got = malloc(in->nelems * 4);
	for (int round = 0; round < 2; round++) {
		memset(got, 0, in->nelems * 4);
		for (uint64_t i = 0; i < in->nchunks; i++) {
			assert_int_equal(dsv_source_chunk(s, i, &ref), 0);
			assert_int_equal(dsv_source_decode_chunk(s, &ref, got + ref.elem_start,
								 ref.nelems * 4, NULL),
					 0);
		}
		for (int c = 0, at = 0; c < NCHUNKS; c++)
			for (int k = 0; k < ITEMS * (c + 1); k++)
				assert_int_equal(got[at++], 100 * c + k);
		dsv_source_fd_counts(&st);
		assert_true(st.open <= BUDGET);
	}
	dsv_source_fd_counts(&st);
	assert_true(st.reopens > 0);
	free(got);
	dsv_source_close(s);
	unsetenv("DSVIEW_OPEN_FILES");
	dsv_knobs_reload();
}

/* A Megatron dataset of 6 uint16 sequences in 3 documents: {0}, {1, 2,
 * 3} (sequence 2 empty), {4, 5}; sequence i holds i + 2 tokens 10 * i +
 * k, but the empty one. */
#define NSEQ 6
static const int64_t doc_idx[] = { 0, 1, 4, 6 };

static int seq_len_of(int i)
{
	return i == 2 ? 0 : i + 2;
}

/* code 8 (uint16) or 7 (float32: the same numbers as floats). */
static const char *write_meg(const char *name, uint8_t code)
{
	unsigned char idx[34 + NSEQ * 12 + sizeof(doc_idx)], bin[512];
	size_t es = code == 7 ? 4 : 2;
	uint64_t v, at = 0;
	char path[64];
	memcpy(idx, "MMIDIDX\0\0", 9);
	v = 1;
	memcpy(idx + 9, &v, 8);
	idx[17] = code;
	v = NSEQ;
	memcpy(idx + 18, &v, 8);
	v = sizeof(doc_idx) / 8;
	memcpy(idx + 26, &v, 8);
	for (int i = 0; i < NSEQ; i++) {
		int32_t l = seq_len_of(i);
		int64_t p = (int64_t)(at * es);
		memcpy(idx + 34 + 4 * i, &l, 4);
		memcpy(idx + 34 + 4 * NSEQ + 8 * i, &p, 8);
		for (int k = 0; k < l; k++, at++) {
			uint16_t t = (uint16_t)(10 * i + k);
			float f = (float)t;
			memcpy(bin + es * at, es == 4 ? (void *)&f : (void *)&t, es);
		}
	}
	memcpy(idx + 34 + 12 * NSEQ, doc_idx, sizeof(doc_idx));
	snprintf(path, sizeof(path), "%s.bin", name);
	scratch_write(dir, path, bin, es * at);
	snprintf(path, sizeof(path), "%s.idx", name);
	return scratch_write(dir, path, idx, sizeof(idx));
}

/* Row r of the documents cut or padded to len with pad, as int64. */
static void want_row(int r, int len, int64_t pad, int64_t *out)
{
	int c = 0;
	for (int64_t q = doc_idx[r]; q < doc_idx[r + 1]; q++)
		for (int k = 0; k < seq_len_of((int)q) && c < len; k++)
			out[c++] = 10 * q + k;
	for (; c < len; c++)
		out[c] = pad;
}

static void test_megatron_documents(void **state)
{
	const char *idx = write_meg("meg", 8);
	dsv_doc_rows rows = { .seq_len = 7, .pad = -1 };
	dsv_source *s;
	dsv_errbuf eb;
	dsv_chunk_ref ref;
	int32_t got[3 * 7];
	int64_t want[3 * 7];
	(void)state;
	for (int r = 0; r < 3; r++)
		want_row(r, 7, -1, want + 7 * r);
	assert_int_equal(dsv_megatron_open_documents(idx, &rows, &s, &eb), 0);
	const dsv_source_info *in = dsv_source_get_info(s);
	assert_int_equal(in->ndim, 2);
	assert_int_equal(in->shape[0], 3);
	assert_int_equal(in->shape[1], 7);
	assert_int_equal(in->dtype, DSV_I32); /* uint16 tokens and a pad of -1 */
	assert_int_equal(dsv_source_chunk(s, 0, &ref), 0);
	assert_int_equal(ref.nelems, 21);
	assert_int_equal(dsv_source_decode_chunk(s, &ref, got, sizeof(got), NULL), 0);
	for (int i = 0; i < 21; i++)
		assert_int_equal(got[i], want[i]);
	/* a range that starts and ends inside rows */
	dsv_chunk_ref part = ref;
	part.elem_start = 5;
	part.nelems = 11;
	memset(got, 0x55, sizeof(got));
	assert_int_equal(dsv_source_read_fallback(s, &part, got, sizeof(got)), 0);
	for (int i = 0; i < 11; i++)
		assert_int_equal(got[i], want[5 + i]);
	dsv_source_close(s);

	/* a pad the tokens' dtype holds: rows in it; longer than every document */
	uint16_t u[3 * 20];
	int64_t w[3 * 20];
	rows = (dsv_doc_rows){ .seq_len = 20, .pad = 0 };
	assert_int_equal(dsv_megatron_open_documents(idx, &rows, &s, &eb), 0);
	assert_int_equal(dsv_source_get_info(s)->dtype, DSV_U16);
	assert_int_equal(dsv_source_chunk(s, 0, &ref), 0);
	assert_int_equal(dsv_source_decode_chunk(s, &ref, u, sizeof(u), NULL), 0);
	for (int r = 0; r < 3; r++)
		want_row(r, 20, 0, w + 20 * r);
	for (int i = 0; i < 60; i++)
		assert_int_equal(u[i], w[i]);
	dsv_source_close(s);

	/* float tokens are no documents of token ids */
	assert_int_equal(dsv_megatron_open_documents(write_meg("flt", 7), &rows, &s, &eb),
			 DSV_ERR_UNSUPPORTED);
	assert_non_null(strstr(eb.msg, "dtype code 7 is float32"));
}

static void store_le64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

/* load (a token format's) of blob for file as it is now. */
typedef int (*load_fn)(const char *, const char *, const void *, size_t, const dsv_index_stamp *,
		       dsv_source **, dsv_errbuf *);
static int load_entry(load_fn load, const char *file, const void *blob, size_t len,
		      dsv_source **out)
{
	struct stat fs;
	dsv_index_stamp st;
	dsv_errbuf eb;
	assert_int_equal(stat(file, &fs), 0);
	dsv_index_stamp_of(&fs, &st);
	int err = load(file, NULL, blob, len, &st, out, &eb);
	if (err) {
		assert_null(*out);
		assert_string_equal(eb.file, file);
	}
	return err;
}

/* s made from blob reads every token as want(k), with no file opened
 * before the read, and saves back to blob. */
static void check_made(dsv_source *s, const unsigned char *blob, size_t len, uint64_t n,
		       int64_t (*want)(uint64_t))
{
	dsv_index_buf again = { 0 };
	dsv_chunk_ref ref;
	const dsv_source_info *in = dsv_source_get_info(s);
	assert_int_equal(in->kind, DSV_SRC_RUN);
	assert_int_equal(in->nelems, n);
	assert_int_equal(in->tokens, 1);
	unsigned char *raw = malloc(n * dsv_dtype_size(in->dtype));
	for (uint64_t i = 0; i < in->nchunks; i++) {
		assert_int_equal(dsv_source_chunk(s, i, &ref), 0);
		assert_int_equal(dsv_source_decode_chunk(
					 s, &ref, raw + ref.elem_start * dsv_dtype_size(in->dtype),
					 ref.nelems * dsv_dtype_size(in->dtype), NULL),
				 0);
	}
	for (uint64_t k = 0; k < n; k++)
		assert_int_equal(dsv_load_uint(raw + k * dsv_dtype_size(in->dtype),
					       (int)dsv_dtype_size(in->dtype), 0),
				 want(k));
	assert_int_equal(dsv_tokens_index_save(s, &again), 0);
	assert_int_equal(again.len, len);
	assert_memory_equal(again.p, blob, len);
	free(again.p);
	free(raw);
}

#define LLMC_N 300
static int64_t llmc_tok(uint64_t k)
{
	return (int64_t)((k * 7919) % 50257);
}

static int64_t meg_tok(uint64_t k)
{
	/* the sequences' tokens one after the other: 10 * i + k, i = 0, 1, 3, 4, 5 */
	static const int64_t all[] = { 0,  1,  10, 11, 12, 30, 31, 32, 33, 34, 40, 41,
				       42, 43, 44, 45, 50, 51, 52, 53, 54, 55, 56 };
	return all[k];
}

static void test_index_entries(void **state)
{
	(void)state;
	unsigned char file[1024 + 2 * LLMC_N] = { 0 };
	uint32_t head[3] = { 20240520u, 1, LLMC_N };
	memcpy(file, head, sizeof(head));
	for (int k = 0; k < LLMC_N; k++) {
		uint16_t v = (uint16_t)llmc_tok((uint64_t)k);
		memcpy(file + 1024 + 2 * k, &v, 2);
	}
	const char *path = scratch_write(dir, "l.bin", file, sizeof(file));
	dsv_source *s, *back;
	dsv_errbuf eb;
	dsv_index_buf b = { 0 };
	dsv_source_fd_stats before, after;

	assert_int_equal(dsv_format_llmc.open(path, NULL, &s, &eb), 0);
	assert_int_equal(dsv_tokens_index_save(s, &b), 0);
	dsv_source_fd_counts(&before);
	assert_int_equal(load_entry(dsv_llmc_index_load, path, b.p, b.len, &back), 0);
	dsv_source_fd_counts(&after);
	assert_int_equal(after.firsts, before.firsts); /* nothing opened yet */
	assert_string_equal(dsv_source_get_info(back)->why, dsv_source_get_info(s)->why);
	check_made(back, b.p, b.len, LLMC_N, llmc_tok);
	dsv_source_close(back);
	dsv_source_close(s);
	/* dtype, offset, count, tokens, the file's size, the text's length and a byte */
	const struct {
		size_t at;
		uint64_t bad;
	} cases[] = { { 0, DSV_F32 }, { 0, DSV_BF16 },    { 0, 99 },
		      { 8, 1026 },    { 16, LLMC_N + 1 }, { 16, 1ull << 62 },
		      { 24, 0 },      { 24, 2 },          { 32, 1024 + 2 * LLMC_N + 2 },
		      { 40, 7 },      { 64, 300 },        { 64, 1000 },
		      { 72, 0x0a } };
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		uint64_t keep = dsv_load_le64(b.p + cases[k].at);
		store_le64(b.p + cases[k].at, cases[k].bad);
		if (load_entry(dsv_llmc_index_load, path, b.p, b.len, &back) != DSV_ERR_CORRUPT)
			fail_msg("llm.c case %zu (at %zu) not refused", k, cases[k].at);
		store_le64(b.p + cases[k].at, keep);
	}
	assert_int_equal(load_entry(dsv_llmc_index_load, path, b.p, b.len - 1, &back),
			 DSV_ERR_CORRUPT);
	free(b.p);

	/* Megatron: found by the .idx, the .bin's stamp checked */
	const char *idx = write_meg("mi", 8);
	char bin[256];
	snprintf(bin, sizeof(bin), "%s/mi.bin", dir);
	b = (dsv_index_buf){ 0 };
	assert_int_equal(dsv_format_megatron.open(idx, NULL, &s, &eb), 0);
	assert_int_equal(dsv_tokens_index_save(s, &b), 0);
	dsv_source_close(s);
	dsv_source_fd_counts(&before);
	assert_int_equal(load_entry(dsv_meg_index_load, idx, b.p, b.len, &back), 0);
	dsv_source_fd_counts(&after);
	assert_int_equal(after.firsts, before.firsts);
	assert_string_equal(dsv_source_get_info(back)->path, bin);
	check_made(back, b.p, b.len, 23, meg_tok);
	dsv_source_close(back);
	const struct {
		size_t at;
		uint64_t bad;
	} mcases[] = { { 0, DSV_U64 }, { 0, DSV_F16 }, { 8, 2 }, { 24, 0 }, { 48, 1 }, { 56, 1 } };
	for (size_t k = 0; k < sizeof(mcases) / sizeof(mcases[0]); k++) {
		uint64_t keep = dsv_load_le64(b.p + mcases[k].at);
		store_le64(b.p + mcases[k].at, mcases[k].bad);
		if (load_entry(dsv_meg_index_load, idx, b.p, b.len, &back) != DSV_ERR_CORRUPT)
			fail_msg("Megatron case %zu (at %zu) not refused", k, mcases[k].at);
		store_le64(b.p + mcases[k].at, keep);
	}
	/* the .bin touched since: refused; gone: refused */
	struct timespec ts[2] = { { 0, UTIME_OMIT }, { 1000000, 0 } };
	assert_int_equal(utimensat(AT_FDCWD, bin, ts, 0), 0);
	assert_int_equal(load_entry(dsv_meg_index_load, idx, b.p, b.len, &back), DSV_ERR_CORRUPT);
	assert_int_equal(unlink(bin), 0);
	assert_int_equal(load_entry(dsv_meg_index_load, idx, b.p, b.len, &back), DSV_ERR_NOTFOUND);
	free(b.p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_litdata_under_the_budget),
		cmocka_unit_test(test_megatron_documents),
		cmocka_unit_test(test_index_entries),
	};
	if (scratch_make(dir))
		return 1;
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	scratch_remove(dir);
	return rc;
}
