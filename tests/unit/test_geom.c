/*
 * View geometry (view/geom.c): rows slices with Python's semantics,
 * windows per source, the runs of a window, tiles, CHW shapes, and the
 * manifest errors of the views, each at its line.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dsview/view.h"
#include "view/view_i.h" /* white-box: the view's layout */

static char dir[] = "/tmp/dsv-test-geom-XXXXXX";

/* A C-order .npy of dtype descr and shape, elements i % 251 (one byte)
 * or i (int64). */
static void write_npy(const char *name, const char *descr, int ndim, const uint64_t *shape)
{
	char path[300], dict[256], sh[160] = "";
	size_t n = 1, es = descr[2] == '8' ? 8 : 1;
	for (int k = 0; k < ndim; k++) {
		n *= shape[k];
		snprintf(sh + strlen(sh), sizeof(sh) - strlen(sh), "%llu,%s",
			 (unsigned long long)shape[k], ndim == 1 ? "" : " ");
	}
	int len = snprintf(dict, sizeof(dict),
			   "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", descr, sh);
	size_t hdr = (10 + (size_t)len + 1 + 63) / 64 * 64;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	unsigned char pre[10] = { 0x93,
				  'N',
				  'U',
				  'M',
				  'P',
				  'Y',
				  1,
				  0,
				  (unsigned char)((hdr - 10) & 0xff),
				  (unsigned char)((hdr - 10) >> 8) };
	fwrite(pre, 1, 10, f);
	fwrite(dict, 1, (size_t)len, f);
	for (size_t i = 10 + (size_t)len; i < hdr - 1; i++)
		fputc(' ', f);
	fputc('\n', f);
	for (size_t i = 0; i < n; i++) {
		if (es == 8) {
			int64_t x = (int64_t)i;
			fwrite(&x, 8, 1, f);
		} else {
			fputc((int)(i % 251), f);
		}
	}
	fclose(f);
}

static dsv_manifest *load(const char *text, dsv_errbuf *eb)
{
	char path[300];
	dsv_manifest *m = NULL;
	snprintf(path, sizeof(path), "%s/m.ini", dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	if (dsv_manifest_load(path, &m, eb))
		return NULL;
	return m;
}

static int setup(void **state)
{
	(void)state;
	if (!mkdtemp(dir))
		return -1;
	write_npy("r10.npy", "|u1", 2, (uint64_t[]){ 10, 2 });
	write_npy("r0.npy", "|u1", 2, (uint64_t[]){ 0, 2 });
	write_npy("r7.npy", "|u1", 2, (uint64_t[]){ 7, 2 });
	write_npy("eeg_a.npy", "|u1", 3, (uint64_t[]){ 2, 3, 50 });
	write_npy("eeg_b.npy", "|u1", 3, (uint64_t[]){ 1, 3, 35 });
	write_npy("eeg_c.npy", "|u1", 3, (uint64_t[]){ 1, 3, 10 });
	write_npy("tok.npy", "|u1", 1, (uint64_t[]){ 1000 });
	write_npy("img.npy", "|u1", 4, (uint64_t[]){ 4, 5, 6, 3 });
	write_npy("idx.npy", "<i8", 1, (uint64_t[]){ 12 });
	return 0;
}

static int teardown(void **state)
{
	char cmd[300];
	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd);
}

#define NONE INT64_MIN
/* list(range(n))[a:b:s]: its length, first and step (computed by Python) */
static const struct {
	int n;
	int64_t a, b, s;
	uint64_t count, first;
	int64_t step;
} slices[] = {
	{ 10, NONE, NONE, 1, 10, 0, 1 },
	{ 10, 2, 8, 1, 6, 2, 1 },
	{ 10, -3, NONE, 1, 3, 7, 1 },
	{ 10, NONE, NONE, -1, 10, 9, -1 },
	{ 10, 8, 1, -2, 4, 8, -2 },
	{ 10, -1, -11, -1, 10, 9, -1 },
	{ 10, NONE, NONE, 3, 4, 0, 3 },
	{ 10, 20, 30, 1, 0, 0, 1 },
	{ 10, -20, 3, 1, 3, 0, 1 },
	{ 10, 5, 5, 1, 0, 0, 1 },
	{ 10, 3, -3, -1, 0, 0, -1 },
	{ 10, NONE, -20, -2, 5, 9, -2 },
	{ 0, NONE, NONE, 1, 0, 0, 1 },
	{ 0, NONE, NONE, -1, 0, 0, -1 },
	{ 7, 100, NONE, -3, 3, 6, -3 },
	{ 10, -100, 100, 4, 3, 0, 4 },
	/* steps that overflow a naive (stop - start + step - 1) / step */
	{ 10, 0, 10, INT64_MAX, 1, 0, INT64_MAX },
	{ 10, NONE, NONE, -INT64_MAX, 1, 9, -INT64_MAX },
	{ 10, -9223372036854775807, 9223372036854775807, 3, 4, 0, 3 },
};

static void test_rows_slices_as_python(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(slices) / sizeof(slices[0]); i++) {
		char text[200], a[24] = "", b[24] = "";
		dsv_errbuf eb;
		if (slices[i].a != NONE)
			snprintf(a, sizeof(a), "%lld", (long long)slices[i].a);
		if (slices[i].b != NONE)
			snprintf(b, sizeof(b), "%lld", (long long)slices[i].b);
		snprintf(text, sizeof(text), "[v]\nsource = r%d.npy\nrows = %s:%s:%lld\n",
			 slices[i].n, a, b, (long long)slices[i].s);
		dsv_manifest *m = load(text, &eb);
		if (!m)
			fail_msg("case %zu: %s", i, eb.msg);
		const dsv_view *v = m->views[0];
		if (v->shape[0] != slices[i].count)
			fail_msg("case %zu: %llu rows, want %llu", i,
				 (unsigned long long)v->shape[0],
				 (unsigned long long)slices[i].count);
		assert_int_equal(v->nbytes, slices[i].count * 2 * 4);
		if (slices[i].count > 0)
			assert_int_equal(dsv_view_lrow(v, 0), slices[i].first);
		if (slices[i].count > 1)
			assert_int_equal((int64_t)(dsv_view_lrow(v, 1) - dsv_view_lrow(v, 0)),
					 slices[i].step);
		dsv_manifest_free(m);
	}
}

static void test_windows_per_source(void **state)
{
	dsv_errbuf eb;
	(void)state;
	/* T = 50, 35, 10 with W 20, S 10: 4 windows a row, 2, none */
	dsv_manifest *m = load("[w]\nsource = eeg_a.npy\nsource = eeg_c.npy\nsource = eeg_b.npy\n"
			       "window = 20\nstride = 10\n",
			       &eb);
	if (!m)
		fail_msg("%s", eb.msg);
	const dsv_view *v = m->views[0];
	assert_int_equal(v->win_axis, 2);
	assert_int_equal(v->nwin[0], 4);
	assert_int_equal(v->nwin[1], 0);
	assert_int_equal(v->nwin[2], 2);
	assert_int_equal(v->shape[0], 2 * 4 + 0 + 2);
	assert_int_equal(v->ndim, 3);
	assert_int_equal(v->shape[1], 3);
	assert_int_equal(v->shape[2], 20);
	assert_true(v->tile_wins >= 2);
	/* row 5: source a, its row 1, window 1: 3 runs of 20 at 150 + 10 */
	dsv_row_runs r;
	dsv_view_lrow_runs(v, 5, &r);
	assert_int_equal(r.si, 0);
	assert_int_equal(r.start, 150 + 10);
	assert_int_equal(r.len, 20);
	assert_int_equal(r.stride, 50);
	assert_int_equal(r.nruns, 3);
	/* row 9: source b (the empty c is skipped), window 1 */
	dsv_view_lrow_runs(v, 9, &r);
	assert_int_equal(r.si, 2);
	assert_int_equal(r.start, 10);
	assert_int_equal(r.stride, 35);
	dsv_manifest_free(m);

	/* axis 0: a token stream, window 101 stride 100 */
	m = load("[t]\nsource = tok.npy\nwindow = 101\nstride = 100\nwindow_axis = 0\n", &eb);
	if (!m)
		fail_msg("%s", eb.msg);
	v = m->views[0];
	assert_int_equal(v->shape[0], 9);
	assert_int_equal(v->shape[1], 101);
	assert_int_equal(v->tile_wins, 0);
	dsv_view_lrow_runs(v, 8, &r);
	assert_int_equal(r.start, 800);
	assert_int_equal(r.len, 101);
	assert_int_equal(r.nruns, 1);
	dsv_manifest_free(m);
}

static void test_chw_and_index(void **state)
{
	dsv_errbuf eb;
	(void)state;
	dsv_manifest *m = load("[c]\nsource = img.npy\nlayout = CHW\nmean = 1 2 3\nstd = 1 1 1\n"
			       "[i]\nsource = r10.npy\nsource = r7.npy\nrows = @idx.npy\n",
			       &eb);
	if (!m)
		fail_msg("%s", eb.msg);
	const dsv_view *v = m->views[0];
	assert_int_equal(v->ndim, 4);
	assert_int_equal(v->shape[1], 3);
	assert_int_equal(v->shape[2], 5);
	assert_int_equal(v->shape[3], 6);
	assert_int_equal(v->lay_c, 3);
	assert_int_equal(v->lay_hw, 30);
	assert_int_equal(v->decl->channel_axis, 1); /* C, by default with CHW */
	v = m->views[1];
	assert_int_equal(v->shape[0], 12);
	assert_int_equal(dsv_view_lrow(v, 11), 11);
	dsv_manifest_free(m);
	/* idx.npy holds 0..11: index 10 and 11 are past 10 rows */
	assert_null(load("[i]\nsource = r10.npy\nrows = @idx.npy\n", &eb));
	assert_non_null(strstr(eb.msg, "m.ini:3: rows: "));
	assert_non_null(strstr(eb.msg, "idx.npy[10] = 10 is out of range for 10 rows"));
}

static void test_shared_sources(void **state)
{
	dsv_errbuf eb;
	(void)state;
	dsv_manifest *m = load(
		"[a]\nsource = r10.npy\nrows = 0:5\n[b]\nsource = r10.npy\nrows = 5:\n"
		"[c]\nsource = r7.npy\nsource = r10.npy\n",
		&eb);
	if (!m)
		fail_msg("%s", eb.msg);
	assert_ptr_equal(m->views[0]->sources[0], m->views[1]->sources[0]);
	assert_int_equal(m->views[0]->src_key[0], m->views[1]->src_key[0]);
	assert_ptr_equal(m->views[2]->sources[1], m->views[0]->sources[0]);
	assert_int_not_equal(m->views[2]->src_key[0], m->views[0]->src_key[0]);
	dsv_manifest_free(m); /* each owner closes once: no double free */
}

static void test_errors_name_their_line(void **state)
{
	static const struct {
		const char *text;
		int line;
		const char *needle;
	} cases[] = {
		{ "[v]\nsource = r10.npy\nrows = 1:2:0\n", 3, "rows '1:2:0'" },
		{ "[v]\nsource = r10.npy\nrows = 5\n", 3, "rows '5'" },
		{ "[v]\nsource = r10.npy\nrows = @\n", 3, "'@' needs a file name" },
		{ "[v]\nsource = r10.npy\nrows = @missing.npy\n", 3, "missing.npy" },
		{ "[v]\nsource = r10.npy\nrows = @r10.npy\n", 3, "1-D integer array" },
		{ "[v]\nsource = eeg_a.npy\nwindow = 0\n", 3, "window '0'" },
		{ "[v]\nsource = eeg_a.npy\nstride = 2\n", 3, "stride needs window" },
		{ "[v]\nsource = eeg_a.npy\nwindow_axis = 1\n", 3, "window_axis needs window" },
		{ "[v]\nsource = eeg_c.npy\nwindow = 20\n", 3,
		  "longer than axis 2 of every source" },
		{ "[v]\nsource = eeg_a.npy\nwindow = 2\nwindow_axis = 3\n", 4,
		  "window_axis 3 is out of range" },
		{ "[v]\nsource = r10.npy\nlayout = NCHW\n", 3, "layout 'NCHW'" },
		{ "[v]\nsource = tok.npy\nlayout = CHW\n", 3, "at least 2 dimensions" },
		{ "[v]\nsource = r10.npy\nper_source = maybe\n", 3, "per_source 'maybe'" },
		{ "[v]\nsource = r10.npy\nmean = 1 2\nstd = 1 1\nper_source = true\n", 5,
		  "per_source needs mean = @file.npy" },
		{ "[v]\nsource = r10.npy\nmean = @r10.npy\nstd = 2\n", 3, "both be @files" },
		{ "[v]\nsource = r10.npy\nmean = @r7.npy\nstd = @r7.npy\n", 3,
		  "mean array has shape (7, 2); expected the row shape (2,)" },
		{ "[v]\nsource = r10.npy\nmean = @r10.npy\nstd = @r10.npy\nper_source = true\n", 3,
		  "leading axis of 1" },
		{ "[v]\nsource = r10.npy\ndtype = int8\n", 3, "uint8 values may not fit int8" },
		{ "[v]\nsource = r10.npy\nscale = 2\ndtype = int32\n", 4, "takes no scale" },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		dsv_errbuf eb = { 0 };
		char want[400];
		if (load(cases[i].text, &eb))
			fail_msg("case %zu loaded", i);
		snprintf(want, sizeof(want), "%s/m.ini:%d: ", dir, cases[i].line);
		if (strncmp(eb.msg, want, strlen(want)) || !strstr(eb.msg, cases[i].needle))
			fail_msg("case %zu: got '%s', want '%s...%s'", i, eb.msg, want,
				 cases[i].needle);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rows_slices_as_python),
		cmocka_unit_test(test_windows_per_source),
		cmocka_unit_test(test_chw_and_index),
		cmocka_unit_test(test_shared_sources),
		cmocka_unit_test(test_errors_name_their_line),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
