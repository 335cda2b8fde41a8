/* The in-process reader (dsview/reader.h): views listed and described,
 * byte ranges and gathers of rows equal to the transform computed here,
 * the gather threads giving the same bytes, every bad option and range
 * refused with its reason, and a child made by fork reading on. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dsview/reader.h"
#include "fixture.h"

#define ROWS 500
#define ROW 600 /* uint8 elements a row */

static char dir[] = "/tmp/dsv-test-reader-XXXXXX";
static uint8_t data[ROWS * ROW];
static char npy[600], ini[600];

static void write_npy(void)
{
	char head[128];
	int n = snprintf(head + 10, sizeof(head) - 10,
			 "{'descr': '|u1', 'fortran_order': False, 'shape': (%d, %d), }", ROWS,
			 ROW);
	memset(head + 10 + n, ' ', (size_t)(128 - 10 - n));
	head[127] = '\n';
	memcpy(head, "\x93NUMPY\x01\x00", 8);
	head[8] = 118; /* 128 - 10 */
	head[9] = 0;
	FILE *f = fopen(npy, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(head, 1, 128, f), 128);
	assert_int_equal(fwrite(data, 1, sizeof(data), f), sizeof(data));
	fclose(f);
}

static int setup(void **state)
{
	(void)state;
	if (scratch_make(dir))
		return -1;
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 7 + i / 13);
	snprintf(npy, sizeof(npy), "%s/x.npy", dir);
	snprintf(ini, sizeof(ini), "%s/m.ini", dir);
	write_npy();
	FILE *f = fopen(ini, "w");
	if (!f)
		return -1;
	fprintf(f, "[half]\nsource = x.npy\nscale = 0.5\noffset = -1\n"
		   "[every3]\nsource = x.npy\nrows = ::3\n");
	fclose(f);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	return scratch_remove(dir);
}

static dsv_reader *open_ok(const char *source, const char *options)
{
	dsv_reader *r = NULL;
	dsv_errbuf eb;
	int err = dsv_reader_open(source, options, &r, &eb);
	if (err)
		fail_msg("open %s: %s", source, eb.msg);
	return r;
}

static void test_views_described(void **state)
{
	(void)state;
	dsv_reader *r = open_ok(ini, NULL);
	dsv_reader_view v;
	assert_int_equal(dsv_reader_nviews(r), 2);
	assert_int_equal(dsv_reader_find(r, "every3"), 1);
	assert_int_equal(dsv_reader_find(r, "nope"), -1);
	assert_int_equal(dsv_reader_view_get(r, 1, &v), 0);
	assert_string_equal(v.name, "every3");
	assert_int_equal(v.dtype, DSV_F32);
	assert_int_equal(v.ndim, 2);
	assert_int_equal(v.rows, (ROWS + 2) / 3);
	assert_int_equal(v.shape[1], ROW);
	assert_int_equal(v.row_bytes, ROW * 4);
	assert_non_null(strstr(v.json, "\"shape\""));
	assert_int_equal(dsv_reader_view_get(r, 2, &v), DSV_ERR_INVALID);
	assert_null(dsv_reader_skipped_json(r));
	dsv_reader_close(r);
}

/* rows[0 .. n) of view "half" read with options equal x * 0.5 - 1. */
static void check_gather(const char *options, const int64_t *rows, size_t n)
{
	dsv_reader *r = open_ok(ini, options);
	float *got = malloc(n * ROW * sizeof(float));
	dsv_errbuf eb;
	assert_non_null(got);
	if (dsv_reader_read_rows(r, 0, rows, n, got, &eb))
		fail_msg("read_rows: %s", eb.msg);
	for (size_t k = 0; k < n; k++)
		for (size_t j = 0; j < ROW; j++)
			assert_true(got[k * ROW + j] ==
				    (float)(data[(size_t)rows[k] * ROW + j] * 0.5 - 1.0));
	free(got);
	dsv_reader_close(r);
}

static void test_gathers_any_order(void **state)
{
	(void)state;
	int64_t rows[300];
	for (size_t k = 0; k < 300; k++) /* runs, jumps back, repeats */
		rows[k] = k < 100 ? (int64_t)k + 50 : k < 200 ? (int64_t)((k * 37) % ROWS) : 7;
	check_gather(NULL, rows, 300);
	check_gather("threads=4,cache_size=8M", rows, 300);
	check_gather("threads=2", rows, 1);
}

static void test_byte_ranges(void **state)
{
	(void)state;
	dsv_reader *r = open_ok(npy, "dtype=uint8");
	uint8_t buf[5000];
	dsv_errbuf eb;
	assert_int_equal(dsv_reader_read(r, 0, 12345, sizeof(buf), buf, &eb), 0);
	assert_memory_equal(buf, data + 12345, sizeof(buf));
	assert_int_equal(dsv_reader_read(r, 0, sizeof(data) - 10, 11, buf, &eb), DSV_ERR_INVALID);
	assert_non_null(strstr(eb.msg, "outside its"));
	assert_int_equal(dsv_reader_read(r, 1, 0, 1, buf, &eb), DSV_ERR_INVALID);
	int64_t bad[2] = { 3, ROWS };
	assert_int_equal(dsv_reader_read_rows(r, 0, bad, 2, buf, &eb), DSV_ERR_INVALID);
	assert_non_null(strstr(eb.msg, "row 500 out of range"));
	char stats[8192];
	int n = dsv_reader_stats(r, stats, sizeof(stats));
	assert_true(n > 0 && (size_t)n < sizeof(stats));
	assert_non_null(strstr(stats, "\"bytes_served\":5000"));
	dsv_reader_close(r);
}

static void test_bad_options(void **state)
{
	(void)state;
	static const struct {
		const char *source, *options, *want;
	} cases[] = {
		{ "x.npy", "colour=red", "unknown option 'colour'" },
		{ "x.npy", "dtype=float64", "dtype 'float64' must be" },
		{ "x.npy", "cache_size=lots", "cache_size 'lots' is not a size" },
		{ "x.npy", "threads=0", "threads '0' must be" },
		{ "x.npy", "gpu=maybe", "gpu 'maybe' must be auto, off" },
		{ "x.npy", "gpu=off,gpu_cache=1G", "gpu_cache needs a GPU" },
		{ "x.npy", "s3_secret_key=x", "credentials are never read" },
		{ "x.npy", "dtype", "expected key=value" },
		{ "m.ini", "dtype=float16", "dtype applies to a SOURCE that is not a manifest" },
		{ "nope.npy", NULL, "No such file" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char path[700];
		dsv_reader *r = (dsv_reader *)1;
		dsv_errbuf eb;
		snprintf(path, sizeof(path), "%s/%s", dir, cases[i].source);
		assert_true(dsv_reader_open(path, cases[i].options, &r, &eb) < 0);
		assert_null(r);
		if (!strstr(eb.msg, cases[i].want))
			fail_msg("%s %s: '%s' lacks '%s'", cases[i].source,
				 cases[i].options ? cases[i].options : "", eb.msg, cases[i].want);
	}
}

/* A child made by fork reads with its parent's reader (opened again
 * there), threads and all; the parent reads on. */
static void test_fork(void **state)
{
	(void)state;
#ifdef __SANITIZE_THREAD__
	skip(); /* ThreadSanitizer cannot start threads after a multi-threaded fork */
#endif
	dsv_reader *r = open_ok(ini, "threads=3");
	int64_t rows[200];
	float *want = malloc(200 * ROW * sizeof(float)), *got = malloc(200 * ROW * sizeof(float));
	dsv_errbuf eb;
	for (int k = 0; k < 200; k++)
		rows[k] = (k * 131) % ROWS;
	assert_int_equal(dsv_reader_read_rows(r, 0, rows, 200, want, &eb), 0);
	pid_t pid = fork();
	if (pid == 0) {
		int bad = dsv_reader_read_rows(r, 0, rows, 200, got, &eb) ||
			  memcmp(got, want, 200 * ROW * sizeof(float));
		dsv_reader_close(r);
		_exit(bad);
	}
	int status;
	assert_true(pid > 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	memset(got, 0, 200 * ROW * sizeof(float));
	assert_int_equal(dsv_reader_read_rows(r, 0, rows, 200, got, &eb), 0);
	assert_memory_equal(got, want, 200 * ROW * sizeof(float));
	free(want);
	free(got);
	dsv_reader_close(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_views_described),
		cmocka_unit_test(test_gathers_any_order),
		cmocka_unit_test(test_byte_ranges),
		cmocka_unit_test(test_bad_options),
		cmocka_unit_test(test_fork),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
