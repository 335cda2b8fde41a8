/* Arrow IPC metadata (formats/arrow/ipc.c, fb.c) read from memory:
 * pyarrow's stream and file forms (tests/unit/fixtures/gen_arrow.py),
 * a column's nodes and buffers in each record batch, unservable columns,
 * and every cut and every flipped byte of the stream read without a
 * read outside it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "common/bytes.h"
#include "fixture.h"
#include "formats/arrow/ipc.h"

/* The token values of batch b (list<int32>): its offsets' first to last. */
static void expect_values(const mem *m, const dsv_arrow_batch *b, int32_t first, int n)
{
	int32_t lo = (int32_t)dsv_load_le32(m->p + b->off[1]);
	int32_t hi = (int32_t)dsv_load_le32(m->p + b->off[1] + 4 * (uint64_t)b->length);
	assert_int_equal(hi - lo, n);
	for (int i = 0; i < n; i++)
		assert_int_equal((int32_t)dsv_load_le32(m->p + b->off[3] + 4 * (uint64_t)(lo + i)),
				 first + i);
}

static void check_form(const char *fixture, int file_form)
{
	size_t n;
	uint8_t *p = read_fixture(fixture, &n);
	mem m = { p, n };
	dsv_arrow_file f;
	char why[256];
	assert_int_equal(dsv_arrow_open(mem_read, &m, n, "input_ids", &f, why, sizeof(why)), 0);
	assert_int_equal(f.file_form, file_form);
	assert_int_equal(f.ncols, 3);
	assert_string_equal(f.cols[0].name, "text");
	assert_true(f.cols[0].why[0] != '\0');
	assert_int_equal(f.cols[1].type, ARROW_LIST);
	assert_int_equal(f.cols[1].dtype, DSV_I32);
	assert_int_equal(f.cols[1].node, 1); /* after text's one node */
	assert_int_equal(f.cols[1].buf, 3);  /* and its three buffers */
	assert_int_equal(f.cols[2].dtype, DSV_I64);
	assert_int_equal(f.nbatches, 2);
	assert_int_equal(f.batches[0].length, 3);
	assert_int_equal(f.batches[0].codec, -1);
	assert_int_equal(f.batches[0].nulls[0], 0);
	expect_values(&m, &f.batches[0], 0, 6);
	assert_int_equal(f.batches[1].length, 2);
	expect_values(&m, &f.batches[1], 6, 5);
	dsv_arrow_free(&f);
	assert_int_equal(dsv_arrow_open(mem_read, &m, n, "text", &f, why, sizeof(why)),
			 DSV_ERR_UNSUPPORTED);
	assert_non_null(strstr(why, "column text is a utf8 column"));
	dsv_arrow_free(&f);
	assert_int_equal(dsv_arrow_open(mem_read, &m, n, "nope", &f, why, sizeof(why)),
			 DSV_ERR_NOTFOUND);
	assert_string_equal(why, "no column nope");
	dsv_arrow_free(&f);
	free(p);
}

static void test_stream(void **state)
{
	(void)state;
	check_form("arrow_stream.bin", 0);
}

static void test_file(void **state)
{
	(void)state;
	check_form("arrow_file.bin", 1);
}

static void test_metadata_length(void **state)
{
	size_t n;
	uint8_t *p = read_fixture("arrow_stream.bin", &n);
	mem m = { p, n };
	dsv_arrow_file f;
	char why[256];
	(void)state;
	p[7] = 0x7f; /* the schema's metadata length, past the file */
	assert_int_equal(dsv_arrow_open(mem_read, &m, n, "input_ids", &f, why, sizeof(why)),
			 DSV_ERR_FORMAT);
	assert_non_null(strstr(why, "metadata length"));
	dsv_arrow_free(&f);
	free(p);
}

/* Every prefix and every byte flipped: an answer each time, a whole
 * stream only where the bytes still make one. */
static void test_cut_and_flipped(void **state)
{
	(void)state;
	for (int form = 0; form < 2; form++) {
		size_t n;
		uint8_t *p = read_fixture(form ? "arrow_file.bin" : "arrow_stream.bin", &n);
		char why[256];
		for (size_t cut = 0; cut < n; cut++) {
			mem m = { p, cut };
			dsv_arrow_file f;
			int err = dsv_arrow_open(mem_read, &m, cut, "input_ids", &f, why,
						 sizeof(why));
			assert_true(err || f.nbatches <= 2);
			assert_true(!err || why[0]);
			dsv_arrow_free(&f);
		}
		for (size_t at = 0; at < n; at++) {
			p[at] ^= 0xFF;
			mem m = { p, n };
			dsv_arrow_file f;
			int err = dsv_arrow_open(mem_read, &m, n, "input_ids", &f, why,
						 sizeof(why));
			for (size_t b = 0; !err && b < f.nbatches; b++)
				for (int k = 0; k < 4; k++)
					assert_true(f.batches[b].off[k] + f.batches[b].size[k] <=
						    n);
			dsv_arrow_free(&f);
			p[at] ^= 0xFF;
		}
		free(p);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stream),
		cmocka_unit_test(test_file),
		cmocka_unit_test(test_metadata_length),
		cmocka_unit_test(test_cut_and_flipped),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
