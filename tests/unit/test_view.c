/* Views and manifests: byte range -> chunk mapping at every boundary, and
 * every manifest error naming file, line and reason. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dsview/view.h"
#include "view/view_i.h" /* white-box: the view's layout */

static char dir[] = "/tmp/dsv-test-view-XXXXXX";

static void write_file(const char *name, const void *data, size_t n)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, n, f), n);
	fclose(f);
}

static const char *write_manifest(const char *text)
{
	static char path[256];
	snprintf(path, sizeof(path), "%s/m.ini", dir);
	write_file("m.ini", text, strlen(text));
	return path;
}

static int setup(void **state)
{
	(void)state;
	if (!mkdtemp(dir))
		return -1;
	/* a.bin: 2500 rows x 1000 uint8; b.bin: 700 rows; c.bin: rows of 7 */
	unsigned char *buf = malloc(2500 * 1000);
	for (size_t i = 0; i < 2500 * 1000; i++)
		buf[i] = (unsigned char)(i % 251);
	write_file("a.bin", buf, 2500 * 1000);
	write_file("b.bin", buf, 700 * 1000);
	write_file("c.bin", buf, 70);
	write_file("odd.bin", buf, 1001);
	write_file("empty.bin", buf, 0);
	free(buf);
	return 0;
}

static int teardown(void **state)
{
	char cmd[300];
	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd);
}

/* Brute force: which chunk holds byte b, where does that chunk start. */
static void brute(const dsv_view *v, uint64_t b, uint64_t *chunk, uint64_t *start, uint64_t *bytes)
{
	uint64_t g = 0, pos = 0;
	for (size_t i = 0; i < v->nsources; i++) {
		const dsv_source_info *si = dsv_source_get_info(v->sources[i]);
		for (uint64_t k = 0; k < si->nchunks; k++, g++) {
			uint64_t n = si->nelems - k * si->chunk_elems;
			if (n > si->chunk_elems)
				n = si->chunk_elems;
			uint64_t len = n * v->out_esize;
			if (b < pos + len) {
				*chunk = g;
				*start = pos;
				*bytes = len;
				return;
			}
			pos += len;
		}
	}
	fail_msg("byte %llu past the view", (unsigned long long)b);
}

static void test_segment_boundaries(void **state)
{
	dsv_manifest *m;
	dsv_errbuf eb;
	(void)state;
	const char *p = write_manifest(
		"[v]\nsource = a.bin\nsource = empty.bin\nsource = b.bin\n"
		"source_dtype = uint8\nsource_shape = -1 1000\ndtype = bfloat16\n");
	if (dsv_manifest_load(p, &m, &eb))
		fail_msg("%s", eb.msg);
	const dsv_view *v = m->views[0];
	assert_int_equal(v->nsources, 3);
	assert_int_equal(v->shape[0], 3200);
	assert_int_equal(v->nbytes, 3200ull * 1000 * 2);
	assert_int_equal(v->row_bytes, 2000);

	/* every chunk start, +-1, +-2, and the end of the view */
	uint64_t probes[256];
	size_t np = 0;
	for (size_t i = 0; i < v->nsources; i++) {
		const dsv_source_info *si = dsv_source_get_info(v->sources[i]);
		for (uint64_t k = 0; k <= si->nchunks && np < 240; k++) {
			uint64_t b = (v->elem_base[i] + (k * si->chunk_elems < si->nelems
								 ? k * si->chunk_elems
								 : si->nelems)) *
				     2;
			for (int d = -2; d <= 2; d++)
				if ((int64_t)b + d >= 0)
					probes[np++] = (uint64_t)((int64_t)b + d);
		}
	}
	probes[np++] = v->nbytes - 1;
	probes[np++] = v->nbytes;
	probes[np++] = v->nbytes + 5;
	/* a plain concatenation reads ahead by chunks: segment g is chunk g */
	assert_int_equal(v->nsegs, v->nchunks);
	for (size_t i = 0; i < np; i++) {
		uint64_t b = probes[i], g = 0, start = 0, bytes = 0, off, len;
		if (b >= v->nbytes)
			continue;
		brute(v, b, &g, &start, &bytes);
		assert_int_equal(dsv_view_seg_range(v, g, &off, &len), 0);
		assert_int_equal(off, start);
		assert_int_equal(len, bytes);
	}
	uint64_t off, len;
	assert_int_equal(dsv_view_seg_range(v, v->nsegs, &off, &len), DSV_ERR_INVALID);

	/* chunk refs line up with the sources */
	size_t si;
	dsv_chunk_ref ref;
	assert_int_equal(dsv_view_chunk_ref(v, v->nchunks - 1, &si, &ref), 0);
	assert_int_equal(si, 2);
	assert_int_equal(ref.elem_start + ref.nelems, 700 * 1000);
	assert_int_equal(dsv_view_chunk_ref(v, v->nchunks, &si, &ref), DSV_ERR_INVALID);
	dsv_manifest_free(m);
}

static void test_npy_header_and_json(void **state)
{
	dsv_manifest *m;
	dsv_errbuf eb;
	(void)state;
	const char *p = write_manifest(
		"; comment\n[dsview]\ncache_size = 64M\nthreads = 4\n\n"
		"[img.v1]\nsource = c.bin\nsource_dtype = u1\nsource_shape = -1 7\n"
		"dtype = bfloat16\nscale = 0.5\noffset = 1 ; inline comment\n"
		"mean = 1 2 3 4 5 6 7\nstd = 1,1,1,1,1,1,2\nclip = -5 5\n");
	if (dsv_manifest_load(p, &m, &eb))
		fail_msg("%s", eb.msg);
	assert_int_equal(m->cache_size, 64 << 20);
	assert_int_equal(m->threads, 4);
	const dsv_view *v = m->views[0];
	assert_string_equal(v->name, "img.v1");
	assert_int_equal(v->npy_header_len % 64, 0);
	assert_memory_equal(v->npy_header, "\x93NUMPY\x01\x00", 8);
	assert_int_equal(v->npy_header[v->npy_header_len - 1], '\n');
	assert_non_null(memmem(v->npy_header, v->npy_header_len, "{'descr': '<u2', ", 16));
	assert_non_null(memmem(v->npy_header, v->npy_header_len, "'shape': (10, 7), }", 19));
	assert_non_null(strstr(dsv_view_json(v, NULL), "\"dtype\": \"bfloat16\""));
	assert_non_null(strstr(v->json, "\"row_bytes\": 14"));
	assert_int_equal(v->json_len, strlen(v->json));
	assert_int_equal(v->decl->nchan, 7);
	dsv_manifest_free(m);
}

/* A view of more sources than are written indented: its V.json, written
 * source by source, is the text jansson writes for the whole of it. */
static void test_json_of_many_sources(void **state)
{
	unsigned char rows[70];
	char name[32], text[512];
	dsv_manifest *m;
	dsv_errbuf eb;
	(void)state;
	for (int i = 0; i < 70; i++)
		rows[i] = (unsigned char)i;
	for (int i = 0; i < 100; i++) {
		snprintf(name, sizeof(name), "many%03d.bin", i);
		write_file(name, rows, 7 * (size_t)(i % 3 + 8));
	}
	snprintf(text, sizeof(text),
		 "[many]\nsource = %s/many*.bin\nsource_dtype = u1\nsource_shape = -1 7\n"
		 "window = 4\nstride = 3\nscale = 0.1\noffset = 1e-3\nclip = -5 5\n",
		 dir);
	if (dsv_manifest_load(write_manifest(text), &m, &eb))
		fail_msg("%s", eb.msg);
	size_t len;
	assert_null(m->views[0]->json); /* made at its first use */
	const char *got = dsv_view_json(m->views[0], &len);
	assert_int_equal(len, strlen(got));
	json_error_t je;
	json_t *root = json_loads(got, 0, &je);
	if (!root)
		fail_msg("V.json does not parse: %s", je.text);
	assert_int_equal(json_array_size(json_object_get(root, "sources")), 100);
	assert_int_equal(json_array_size(json_object_get(root, "chunk_rows")), 100);
	json_t *last = json_array_get(json_object_get(root, "sources"), 99);
	assert_int_equal(json_integer_value(json_object_get(last, "windows")), 2);
	char *want = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
	assert_non_null(want);
	assert_int_equal(strlen(got), strlen(want) + 1);
	assert_memory_equal(got, want, strlen(want));
	assert_int_equal(got[strlen(want)], '\n');
	free(want);
	json_decref(root);
	dsv_manifest_free(m);
}

typedef struct bad_case {
	const char *text;
	int line;
	const char *needle;
} bad_case;

static void test_manifest_errors(void **state)
{
	static const bad_case cases[] = {
		{ "[v]\nsource = a.bin\nsource_dtype = uint8\nsource_shape = -1 1000\ncolour = "
		  "red\n",
		  5, "unknown key 'colour'" },
		{ "[v/x]\nsource = a.bin\n", 1, "invalid view name" },
		{ "[..]\nsource = a.bin\n", 1, "invalid view name" },
		{ "[v]\nsource = missing.npy\n", 2, "missing.npy" },
		{ "[v]\nsource = a.bin\nsource = c.bin\nsource_dtype = uint8\nsource_shape = -1 "
		  "1000\n",
		  3, "whole number of rows" },
		{ "[v]\nsource = a.bin\nsource = c.bin\nsource_dtype = uint8\nsource_shape = -1 "
		  "7\n",
		  2, "whole number of rows" },
		{ "[v]\nsource = a.bin\nsource_dtype = uint8\nsource_shape = -1 1000\nmean = 1 "
		  "2\nstd = 1 1\n"
		  "channel_axis = -1\n",
		  5, "mean/std have 2 values" },
		{ "[v]\nsource = a.bin\nsource_dtype = uint8\nsource_shape = -1 10 100\nmean = 1 "
		  "2\nstd = 1 0\n"
		  "channel_axis = 1\n",
		  6, "std contains 0" },
		{ "[v]\nsource = odd.bin\nsource_dtype = uint8\nsource_shape = -1 1000\n", 2,
		  "whole number of rows" },
		{ "[v]\nsource = a.bin\nsource_dtype = uint8\n", 3,
		  "source_dtype and source_shape" },
		{ "[v]\nsource = a.bin\n", 2, "needs source_dtype" },
		{ "[v]\nsource = a.bin\nsource_dtype = uint8\nsource_shape = -1 1000\ndtype = "
		  "int3\n",
		  5, "dtype 'int3'" },
		{ "[v]\nsource = a.bin\nsource_dtype = uint8\nsource_shape = -1 1000\nscale = "
		  "abc\n",
		  5, "scale 'abc'" },
		{ "[v]\nsource = a.bin\nsource_dtype = uint8\nsource_shape = -1 1000\nclip = 5 "
		  "-5\n",
		  5, "clip" },
		{ "[v]\nsource = a.bin\nsource_dtype = uint8\nsource_shape = -1 1000\n[v]\nscale = "
		  "2\n",
		  5, "defined twice" },
		{ "source = a.bin\n", 1, "outside any [view]" },
		{ "[dsview]\ncache_size = lots\n", 2, "cache_size" },
		/* checked where it is written, not later as if it came from --gpu */
		{ "[dsview]\ngpu = 1x\n[v]\nsource = a.bin\n", 2,
		  "gpu '1x' must be auto, off or a device" },
		{ "[dsview]\ngpu = -1\n[v]\nsource = a.bin\n", 2, "gpu '-1'" },
		{ "[dsview]\nthreads = 4\n", 2, "no [view] section" },
		{ "[v]\nsource = a.bin\nsource_dtype = uint8\nsource_shape = -1 1000\nthis is not "
		  "ini\n",
		  5, "syntax error" },
		{ "[v]\nsource = a.bin\nsource_dtype = float32\nsource_shape = -1 250\n"
		  "[w]\nsource = b.bin\nsource = a.bin\nsource_dtype = uint8\nsource_shape = -1 "
		  "500\n"
		  "mean = 1 2\nstd = 1 1\nchannel_axis = 5\n",
		  12, "channel_axis 5" },
		{ "[v]\nsource = a.bin\nsource_dtype = uint8\nsource_shape = -1 1000\nmean = 1\n",
		  5, "mean and std must be given together" },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		dsv_manifest *m = (dsv_manifest *)0x1;
		dsv_errbuf eb = { 0 };
		char want[300];
		const char *p = write_manifest(cases[i].text);
		int err = dsv_manifest_load(p, &m, &eb);
		if (err == 0)
			fail_msg("case %zu loaded", i);
		assert_null(m);
		snprintf(want, sizeof(want), "%s:%d: ", p, cases[i].line);
		if (strncmp(eb.msg, want, strlen(want)) || !strstr(eb.msg, cases[i].needle))
			fail_msg("case %zu: got '%s', want '%s...%s'", i, eb.msg, want,
				 cases[i].needle);
	}
}

static void test_dsview_section_gpu(void **state)
{
	static const char *const ok[] = { "auto", "off", "0", "3" };
	(void)state;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		char text[200];
		dsv_manifest *m = NULL;
		dsv_errbuf eb = { 0 };
		snprintf(text, sizeof(text),
			 "[dsview]\ngpu = %s\n[v]\nsource = a.bin\nsource_dtype = uint8\n"
			 "source_shape = -1 1000\n",
			 ok[i]);
		if (dsv_manifest_load(write_manifest(text), &m, &eb))
			fail_msg("gpu = %s: %s", ok[i], eb.msg);
		assert_true(m->has_gpu);
		assert_string_equal(m->gpu, ok[i]);
		dsv_manifest_free(m);
	}
}

static void test_sources_must_match(void **state)
{
	char text[512];
	dsv_manifest *m;
	dsv_errbuf eb;
	(void)state;
	/* trailing shape differs: a as 1000-wide, b declared by a second view
	 * is impossible in one view (one source_shape), so use .npy files */
	static const unsigned char npy_a[] = "\x93NUMPY\x01\x00\x76\x00{'descr': '|u1', "
					     "'fortran_order': False, 'shape': (2, 3), }";
	static const unsigned char npy_b[] = "\x93NUMPY\x01\x00\x76\x00{'descr': '|u1', "
					     "'fortran_order': False, 'shape': (2, 4), }";
	static const unsigned char npy_c[] = "\x93NUMPY\x01\x00\x76\x00{'descr': '<i2', "
					     "'fortran_order': False, 'shape': (2, 3), }";
	unsigned char buf[128 + 16];
	const unsigned char *srcs[3] = { npy_a, npy_b, npy_c };
	const char *names[3] = { "a.npy", "b.npy", "c.npy" };
	for (int k = 0; k < 3; k++) {
		size_t n = strlen((const char *)srcs[k] + 10) + 10;
		memset(buf, 0, sizeof(buf));
		memcpy(buf, srcs[k], n);
		memset(buf + n, ' ', 128 - n - 1);
		buf[127] = '\n';
		write_file(names[k], buf, 128 + 16);
	}
	snprintf(text, sizeof(text), "[v]\nsource = a.npy\nsource = b.npy\n");
	assert_int_equal(dsv_manifest_load(write_manifest(text), &m, &eb), DSV_ERR_FORMAT);
	assert_non_null(strstr(eb.msg, "m.ini:3: source shape (2, 4) does not match"));
	/* mixed dtypes: each source converts from its own */
	snprintf(text, sizeof(text), "[v]\nsource = a.npy\nsource = c.npy\n");
	assert_int_equal(dsv_manifest_load(write_manifest(text), &m, &eb), 0);
	assert_int_equal(m->views[0]->shape[0], 4);
	dsv_manifest_free(m);
	snprintf(text, sizeof(text), "[v]\nsource = a.npy\nsource = %s/a.npy\n", dir);
	assert_int_equal(dsv_manifest_load(write_manifest(text), &m, &eb), 0);
	assert_int_equal(m->views[0]->shape[0], 4);
	dsv_manifest_free(m);
}

static void test_name_rules(void **state)
{
	(void)state;
	assert_true(dsv_view_name_ok("stim"));
	assert_true(dsv_view_name_ok("a-b_c.d9"));
	assert_false(dsv_view_name_ok(""));
	assert_false(dsv_view_name_ok("."));
	assert_false(dsv_view_name_ok(".."));
	assert_false(dsv_view_name_ok(".hidden"));
	assert_false(dsv_view_name_ok("a/b"));
	assert_false(dsv_view_name_ok("a\x01"));
	assert_false(dsv_view_name_ok("a b"));
	char longname[202];
	memset(longname, 'x', 201);
	longname[201] = '\0';
	assert_false(dsv_view_name_ok(longname));
	longname[200] = '\0';
	assert_true(dsv_view_name_ok(longname));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_segment_boundaries),
		cmocka_unit_test(test_npy_header_and_json),
		cmocka_unit_test(test_json_of_many_sources),
		cmocka_unit_test(test_manifest_errors),
		cmocka_unit_test(test_dsview_section_gpu),
		cmocka_unit_test(test_sources_must_match),
		cmocka_unit_test(test_name_rules),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
