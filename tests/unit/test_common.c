/* src/common: size parsing, dtype parsing, extensions, "file.h5:/path"
 * splitting, --gpu values, shapes, view names and their reversible map, and the
 * error buffer's fields. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/str.h"
#include "dsview/dsview.h"

static void test_parse_size(void **state)
{
	static const struct {
		const char *s;
		uint64_t v;
	} ok[] = {
		{ "0", 0 },
		{ "1048576", 1048576 },
		{ "64k", 64u << 10 },
		{ "64K", 64u << 10 },
		{ "512M", 512u << 20 },
		{ "1G", 1ull << 30 },
		{ "2T", 2ull << 40 },
		{ "4KiB", 4u << 10 },
		{ "4kib", 4u << 10 },
		{ "3MB", 3u << 20 },
		{ "16777215T", 16777215ull << 40 },
		{ "18446744073709551615", UINT64_MAX },
	};
	static const char *const bad[] = { "",   "-1",   "+1",   " 1",
					   "1 ", "1X",   "1KX",  "1KiBs",
					   "K",  "1.5G", "0x10", "18446744073709551616" };
	(void)state;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		uint64_t v = 7;
		assert_int_equal(dsv_parse_size(ok[i].s, &v), 0);
		assert_true(v == ok[i].v);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint64_t v = 7;
		assert_int_equal(dsv_parse_size(bad[i], &v), DSV_ERR_INVALID);
		assert_true(v == 7);
	}
	uint64_t v = 7;
	assert_int_equal(dsv_parse_size("16777216T", &v), DSV_ERR_OVERFLOW);
	assert_int_equal(dsv_parse_size(NULL, &v), DSV_ERR_INVALID);
	assert_true(v == 7);
}

static void test_dtype_parse(void **state)
{
	(void)state;
	for (int t = 0; t < DSV_DTYPE__COUNT; t++)
		assert_int_equal(dsv_dtype_parse(dsv_dtype_name((dsv_dtype)t)), t);
	assert_int_equal(dsv_dtype_parse("u1"), DSV_U8);
	assert_int_equal(dsv_dtype_parse("|u1"), DSV_U8);
	assert_int_equal(dsv_dtype_parse("<i2"), DSV_I16);
	assert_int_equal(dsv_dtype_parse("=f4"), DSV_F32);
	assert_int_equal(dsv_dtype_parse("f8"), DSV_F64);
	assert_int_equal(dsv_dtype_parse("half"), DSV_F16);
	assert_int_equal(dsv_dtype_parse("bf16"), DSV_BF16);
	assert_int_equal(dsv_dtype_parse(">i2"), DSV_DTYPE_INVALID); /* big-endian */
	assert_int_equal(dsv_dtype_parse("int64"), DSV_I64);
	assert_int_equal(dsv_dtype_parse("<i8"), DSV_I64);
	assert_int_equal(dsv_dtype_parse("u8"), DSV_U64);
	assert_int_equal(dsv_dtype_parse("uint64"), DSV_U64);
	assert_int_equal(dsv_dtype_size(DSV_I64), 8);
	assert_string_equal(dsv_dtype_npy_descr(DSV_U64), "<u8");
	assert_int_equal(dsv_dtype_parse("int128"), DSV_DTYPE_INVALID);
	assert_int_equal(dsv_dtype_parse("Float32"), DSV_DTYPE_INVALID);
	assert_int_equal(dsv_dtype_parse(""), DSV_DTYPE_INVALID);
	assert_int_equal(dsv_dtype_parse(NULL), DSV_DTYPE_INVALID);
	assert_int_equal(dsv_dtype_size(DSV_F64), 8);
	assert_int_equal(dsv_dtype_size(DSV_DTYPE_INVALID), 0);
	assert_string_equal(dsv_dtype_npy_descr(DSV_BF16), "<u2");
	assert_true(dsv_dtype_is_output(DSV_BF16));
	assert_false(dsv_dtype_is_output(DSV_F64));
}

static void test_has_ext(void **state)
{
	(void)state;
	assert_true(dsv_has_ext("a.npy", ".npy"));
	assert_true(dsv_has_ext("a.NPY", ".npy"));
	assert_true(dsv_has_ext("/d/x.Ini", ".ini"));
	assert_true(dsv_has_ext(".npy", ".npy"));
	assert_false(dsv_has_ext("npy", ".npy"));
	assert_false(dsv_has_ext("a.npy.bak", ".npy"));
	assert_false(dsv_has_ext("", ".npy"));
}

static void test_natural_order(void **state)
{
	static const char *const sorted[] = { "",   "a",     "a0",     "a1",     "a01",
					      "a2", "a10",   "a10b",   "a10c",   "a11",
					      "b",  "s2.h5", "s10.h5", "s100.h5" };
	(void)state;
	for (size_t i = 0; i < sizeof(sorted) / sizeof(sorted[0]); i++)
		for (size_t j = 0; j < sizeof(sorted) / sizeof(sorted[0]); j++) {
			int c = dsv_natural_cmp(sorted[i], sorted[j]);
			if ((i < j && c >= 0) || (i > j && c <= 0) || (i == j && c))
				fail_msg("'%s' vs '%s': %d", sorted[i], sorted[j], c);
		}
	static const char *const given[] = {
		"s100.h5", "a10", "s2.h5", "a", "a01", "s10.h5", "a2"
	};
	static const char *const want[] = { "a", "a01", "a2", "a10", "s2.h5", "s10.h5", "s100.h5" };
	char *mixed[7];
	for (size_t i = 0; i < 7; i++)
		assert_non_null(mixed[i] = strdup(given[i]));
	dsv_natural_sort(mixed, 7);
	for (size_t i = 0; i < 7; i++) {
		assert_string_equal(mixed[i], want[i]);
		free(mixed[i]);
	}
	/* names sharing a directory, a stem and digits: in natural order
	 * whether listed sorted already, backwards or shuffled */
	static const char *const paths[] = {
		"/d/1/rec9.npy",  "/d/1/rec10.npy",  "/d/1/rec010.npy",
		"/d/1/rec11.npy", "/d/1/rec100.npy", "/d/1/rec100a.npy"
	};
	static const size_t orders[][6] = { { 0, 1, 2, 3, 4, 5 },
					    { 5, 4, 3, 2, 1, 0 },
					    { 3, 0, 5, 1, 4, 2 } };
	for (size_t o = 0; o < 3; o++) {
		char *names[6];
		for (size_t i = 0; i < 6; i++)
			names[i] = (char *)paths[orders[o][i]];
		dsv_natural_sort(names, 6);
		for (size_t i = 0; i < 6; i++)
			assert_string_equal(names[i], paths[i]);
	}
	/* the shared "/d/rec1" ends inside the numbers: 19 before 1000 */
	static const char *const cut[] = { "/d/rec1000", "/d/rec19", "/d/rec1000" };
	char *three[3] = { (char *)cut[0], (char *)cut[1], (char *)cut[2] };
	dsv_natural_sort(three, 3);
	assert_string_equal(three[0], "/d/rec19");
	assert_string_equal(three[1], "/d/rec1000");
	assert_true(dsv_has_glob("/d/s*.h5"));
	assert_true(dsv_has_glob("s?.h5"));
	assert_true(dsv_has_glob("s[12].h5"));
	assert_false(dsv_has_glob("/d/s1.h5"));
}

static void test_parse_gpu(void **state)
{
	int d = 99;
	(void)state;
	assert_int_equal(dsv_parse_gpu("auto", &d), 0);
	assert_int_equal(d, DSV_GPU_AUTO);
	assert_int_equal(dsv_parse_gpu("off", &d), 0);
	assert_int_equal(d, DSV_GPU_OFF);
	assert_int_equal(dsv_parse_gpu("0", &d), 0);
	assert_int_equal(d, 0);
	assert_int_equal(dsv_parse_gpu("7", &d), 0);
	assert_int_equal(d, 7);
	d = 99;
	static const char *const bad[] = { "",     "-1", "+1",  "1a",         " 1",
					   "AUTO", "on", "0x1", "99999999999" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(dsv_parse_gpu(bad[i], &d), DSV_ERR_INVALID);
	assert_int_equal(dsv_parse_gpu(NULL, &d), DSV_ERR_INVALID);
	assert_int_equal(d, 99);
}

/* dsv_parse_offset: --source-offset and source_offset, whole bytes. */
static void test_parse_offset(void **state)
{
	static const char *bad[] = { "",
				     " ",
				     "-1",
				     "+4",
				     "4k",
				     "1.5",
				     "0x10",
				     "4 4",
				     "9223372036854775808",
				     "99999999999999999999" };
	uint64_t v = 7;
	(void)state;
	assert_int_equal(dsv_parse_offset("0", &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(dsv_parse_offset(" 256 ", &v), 0);
	assert_int_equal(v, 256);
	assert_int_equal(dsv_parse_offset("9223372036854775807", &v), 0);
	assert_int_equal(v, INT64_MAX);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		v = 7;
		assert_int_equal(dsv_parse_offset(bad[i], &v), DSV_ERR_INVALID);
		assert_int_equal(v, 7);
	}
}

/* dsv_parse_shape: one grammar for --source-shape and source_shape. */
static void test_parse_shape(void **state)
{
	static const struct {
		const char *s;
		int n;
		int64_t dims[4];
	} ok[] = {
		{ "1000,64,64,3", 4, { 1000, 64, 64, 3 } },
		{ "1000 64 64 3", 4, { 1000, 64, 64, 3 } },
		{ "1000x64x64x3", 4, { 1000, 64, 64, 3 } },
		{ "(1000, 64, 64, 3)", 4, { 1000, 64, 64, 3 } },
		{ "-1, 2048", 2, { -1, 2048 } },
		{ "-1 250", 2, { -1, 250 } },
		{ "-1\t129\t200", 3, { -1, 129, 200 } },
		{ "(5,)", 1, { 5 } },
		{ "  7  ", 1, { 7 } },
		{ "0,3", 2, { 0, 3 } }, /* no rows is fine */
		{ "-1", 1, { -1 } },
		{ "2x3, 4", 3, { 2, 3, 4 } },
		{ "9223372036854775807", 1, { INT64_MAX } },
		{ "129, -1", 2, { 129, -1 } }, /* any one axis from the file size */
		{ "4 -1 2", 3, { 4, -1, 2 } },
	};
	static const char *const bad[] = {
		"",
		",,",
		"()",
		" ",
		"3,0",
		"-1,-1",
		"3,-1,-1",
		"3,-2",
		"-2,3",
		"3,a",
		"a",
		"1.5,2",
		"3;4",
		"3-1",
		"x",
		"99999999999999999999",
		"1,99999999999999999999",
		"-9223372036854775809",
	};
	int64_t s[DSV_MAX_DIMS];
	int n;
	(void)state;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		n = -5;
		assert_int_equal(dsv_parse_shape(ok[i].s, &n, s), 0);
		assert_int_equal(n, ok[i].n);
		for (int k = 0; k < n; k++)
			assert_true(s[k] == ok[i].dims[k]);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(dsv_parse_shape(bad[i], &n, s), DSV_ERR_INVALID);

	/* DSV_MAX_DIMS dimensions, not one more */
	char many[4 * DSV_MAX_DIMS] = "";
	for (int k = 0; k < DSV_MAX_DIMS; k++)
		strcat(many, "1,");
	assert_int_equal(dsv_parse_shape(many, &n, s), 0);
	assert_int_equal(n, DSV_MAX_DIMS);
	strcat(many, "1");
	assert_int_equal(dsv_parse_shape(many, &n, s), DSV_ERR_INVALID);
}

static void test_name_ok(void **state)
{
	char longest[DSV_NAME_MAX + 2];
	(void)state;
	assert_true(dsv_name_ok("stim"));
	assert_true(dsv_name_ok("a-b_c.d9"));
	assert_true(dsv_name_ok("A.."));
	assert_false(dsv_name_ok(""));
	assert_false(dsv_name_ok("."));
	assert_false(dsv_name_ok(".."));
	assert_false(dsv_name_ok(".hidden"));
	assert_false(dsv_name_ok("a/b"));
	assert_false(dsv_name_ok("a b"));
	assert_false(dsv_name_ok("caf\xc3\xa9"));
	memset(longest, 'x', DSV_NAME_MAX);
	longest[DSV_NAME_MAX] = '\0';
	assert_true(dsv_name_ok(longest));
	longest[DSV_NAME_MAX] = 'x';
	longest[DSV_NAME_MAX + 1] = '\0';
	assert_false(dsv_name_ok(longest));
}

static void check_escape(const char *name, const char *want)
{
	char out[1024], back[1024];
	assert_int_equal(dsv_name_escape(out, sizeof(out), name), strlen(want));
	assert_string_equal(out, want);
	assert_int_equal(dsv_name_unescape(back, sizeof(back), out), (int)strlen(name));
	assert_string_equal(back, name);
}

static void test_name_escape_examples(void **state)
{
	(void)state;
	check_escape("stim", "stim");
	check_escape("a-b_c.d9", "a-b_c.d9");
	check_escape("A..", "A..");
	check_escape("my data", "my_x20data");
	check_escape(".hidden", "_x2Ehidden");
	check_escape(".", "_x2E");
	check_escape("..", "_x2E.");
	check_escape("a_xb", "a_x5Fxb");
	check_escape("_x20", "_x5Fx20");
	check_escape("a_Xb_", "a_Xb_");
	check_escape("caf\xc3\xa9", "caf_xC3_xA9");
	check_escape("b c", "b_x20c");
	check_escape("\xff\x01\x7f", "_xFF_x01_x7F");
	check_escape("a:b;c=d\\e", "a_x3Ab_x3Bc_x3Dd_x5Ce");
}

/* Every name of up to 4 bytes over an alphabet of the bytes the rule
 * treats specially: each maps to a valid name that maps back, so two
 * names never share a mapped name. */
static void test_name_escape_round_trip(void **state)
{
	static const char alpha[] = "_x.aX2E \xff-";
	size_t na = sizeof(alpha) - 1, total = 0;
	char name[8], out[64], back[64];
	(void)state;
	for (size_t len = 1; len <= 4; len++) {
		size_t combos = 1;
		for (size_t k = 0; k < len; k++)
			combos *= na;
		for (size_t c = 0; c < combos; c++, total++) {
			size_t v = c;
			for (size_t k = 0; k < len; k++, v /= na)
				name[k] = alpha[v % na];
			name[len] = '\0';
			size_t n = dsv_name_escape(out, sizeof(out), name);
			assert_int_equal(n, strlen(out));
			assert_true(dsv_name_ok(out));
			assert_int_equal(dsv_name_unescape(back, sizeof(back), out), (int)len);
			assert_memory_equal(back, name, len + 1);
		}
	}
	assert_int_equal(total, 10 + 100 + 1000 + 10000);
	for (int b = 1; b < 256; b++) {
		name[0] = (char)b;
		name[1] = '\0';
		dsv_name_escape(out, sizeof(out), name);
		assert_true(dsv_name_ok(out));
		assert_int_equal(dsv_name_unescape(back, sizeof(back), out), 1);
		assert_int_equal((unsigned char)back[0], b);
	}
}

static void test_name_unescape_refuses(void **state)
{
	/* what dsv_name_escape never writes: decoding it would make a second
	 * name for one HDF5 name */
	static const char *bad[] = {
		"_x41", "a_x2E", "_x5F", "_x5Fy", "_x2e", "_xg0",        "_x",
		"_x4",  "a_x",   ".a",   "a b",   "_x00", "caf\xc3\xa9", "a/b"
	};
	char back[64];
	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(dsv_name_unescape(back, sizeof(back), bad[i]), DSV_ERR_INVALID);
	assert_int_equal(dsv_name_unescape(back, 3, "abc"), DSV_ERR_OVERFLOW);
	assert_int_equal(dsv_name_unescape(back, 4, "abc"), 3);
	assert_int_equal(dsv_name_unescape(back, 0, ""), DSV_ERR_OVERFLOW);
}

static void test_name_escape_limits(void **state)
{
	char name[DSV_NAME_MAX + 8], out[4 * DSV_NAME_MAX + 8], small[6];
	(void)state;
	/* snprintf-like: the length whatever the room, cut and terminated */
	assert_int_equal(dsv_name_escape(small, sizeof(small), "a b c"), 11);
	assert_string_equal(small, "a_x20");
	assert_int_equal(dsv_name_escape(NULL, 0, ".x"), 5);
	/* 50 escaped bytes fill the limit exactly; 51 pass it */
	memset(name, ' ', 50);
	name[50] = '\0';
	assert_int_equal(dsv_name_escape(out, sizeof(out), name), DSV_NAME_MAX);
	assert_true(dsv_name_ok(out));
	name[50] = ' ';
	name[51] = '\0';
	assert_int_equal(dsv_name_escape(out, sizeof(out), name), DSV_NAME_MAX + 4);
	assert_false(dsv_name_ok(out));
	/* a valid name of the longest length maps to itself */
	memset(name, 'n', DSV_NAME_MAX);
	name[DSV_NAME_MAX] = '\0';
	assert_int_equal(dsv_name_escape(out, sizeof(out), name), DSV_NAME_MAX);
	assert_string_equal(out, name);
}

static void test_errbuf_fields(void **state)
{
	dsv_errbuf eb;
	(void)state;
	assert_int_equal(dsv_errf_at(&eb, DSV_ERR_FORMAT, "x.h5", "/betas", "bad %s", "thing"),
			 DSV_ERR_FORMAT);
	assert_int_equal(eb.code, DSV_ERR_FORMAT);
	assert_string_equal(eb.file, "x.h5");
	assert_string_equal(eb.where, "/betas");
	assert_string_equal(eb.reason, "bad thing");
	assert_string_equal(eb.msg, "x.h5:/betas: bad thing");
	dsv_errbuf_at_line(&eb, "m.ini", 12);
	assert_string_equal(eb.msg, "m.ini:12: x.h5:/betas: bad thing");
	assert_string_equal(eb.file, "m.ini");
	assert_int_equal(eb.line, 12);
	assert_string_equal(eb.key, "");
	assert_string_equal(eb.reason, "bad thing");

	dsv_errf_at(&eb, DSV_ERR_NOTFOUND, "a.npy", NULL, "gone");
	assert_string_equal(eb.msg, "a.npy: gone");
	assert_string_equal(eb.where, "");
	assert_int_equal(eb.line, 0);
	assert_string_equal(eb.key, "");

	dsv_errf_key(&eb, DSV_ERR_INVALID, "std", "std[%d] is %g", 1, 0.0);
	assert_string_equal(eb.key, "std");
	assert_string_equal(eb.msg, "std[1] is 0");
	dsv_errbuf_at_line(&eb, "m.ini", 3);
	assert_string_equal(eb.key, "std"); /* kept */
	assert_string_equal(eb.msg, "m.ini:3: std[1] is 0");

	dsv_errf(&eb, DSV_ERR_IO, "plain");
	assert_string_equal(eb.msg, "plain");
	assert_string_equal(eb.file, "");
	assert_string_equal(eb.key, "");

	/* too long: cut, still terminated */
	char big[4000];
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	dsv_errf_at(&eb, DSV_ERR_IO, big, big, "%s", big);
	assert_int_equal(strlen(eb.msg), sizeof(eb.msg) - 1);
	assert_int_equal(dsv_errf(NULL, DSV_ERR_IO, "x"), DSV_ERR_IO);
	assert_int_equal(dsv_errf_at(NULL, DSV_ERR_IO, "f", NULL, "x"), DSV_ERR_IO);
	dsv_errbuf_at_line(NULL, "m.ini", 1);

	/* cleared: nothing set, every part empty, for a buffer used again */
	dsv_errf_key(&eb, DSV_ERR_INVALID, "std", "std[%d] is %g", 1, 0.0);
	dsv_errbuf_at_line(&eb, "m.ini", 3);
	dsv_errbuf_clear(&eb);
	assert_int_equal(eb.code, 0);
	assert_int_equal(eb.line, 0);
	assert_string_equal(eb.file, "");
	assert_string_equal(eb.where, "");
	assert_string_equal(eb.key, "");
	assert_string_equal(eb.reason, "");
	assert_string_equal(eb.msg, "");
	dsv_errbuf_clear(NULL);
}

/* A name from a file cannot forge a log line or reach a terminal raw. */
static void test_log_escapes_names(void **state)
{
	char path[] = "/tmp/dsv-test-log-XXXXXX", buf[512];
	int fd = mkstemp(path);
	(void)state;
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(dsv_log_open(path), 0);
	dsv_log_info("source %s", "a\nerror: forged\x1b[2J\xff.npy");
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	unlink(path);
	assert_non_null(strstr(buf, " info: source a\\x0aerror: forged\\x1b[2J\\xff.npy\n"));
	assert_true(n > 0 && strchr(buf, '\n') == buf + n - 1); /* one line */
}

static void test_strerror_table(void **state)
{
	(void)state;
	for (int e = 0; e > -DSV_ERR__COUNT; e--)
		assert_string_not_equal(dsv_strerror(e), "unknown error");
	assert_string_equal(dsv_strerror(-DSV_ERR__COUNT), "unknown error");
	assert_string_equal(dsv_strerror(1), "unknown error");
}

/* Lines of the log file at path. */
static int count_lines(const char *path)
{
	FILE *f = fopen(path, "r");
	int n = 0, c;
	while (f && (c = fgetc(f)) != EOF)
		n += c == '\n';
	if (f)
		fclose(f);
	return n;
}

static void test_log_limited_and_level(void **state)
{
	char path[] = "/tmp/dsv-log-XXXXXX";
	int fd = mkstemp(path);
	(void)state;
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(dsv_log_open(path), 0);
	for (int i = 0; i < 5; i++)
		dsv_log_limited(42, DSV_LOG_ERROR, "chunk %d bad", 7); /* one line a minute */
	assert_int_equal(count_lines(path), 1);
	dsv_log_limited(43, DSV_LOG_ERROR, "chunk %d bad", 8); /* another key */
	assert_int_equal(count_lines(path), 2);
	dsv_log_limited_flush(); /* key 42's 4 held back: one line with the count */
	assert_int_equal(count_lines(path), 3);
	dsv_log_limited_flush(); /* nothing left */
	assert_int_equal(count_lines(path), 3);
	assert_int_equal(dsv_log_parse_level("warning"), DSV_LOG_WARN);
	assert_int_equal(dsv_log_parse_level("debug"), -1);
	dsv_log_set_level(DSV_LOG_WARN);
	dsv_log_info("dropped");
	dsv_log_warn("kept");
	assert_int_equal(count_lines(path), 4);
	dsv_log_set_level(DSV_LOG_INFO);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_size),
		cmocka_unit_test(test_dtype_parse),
		cmocka_unit_test(test_has_ext),
		cmocka_unit_test(test_natural_order),
		cmocka_unit_test(test_parse_gpu),
		cmocka_unit_test(test_parse_shape),
		cmocka_unit_test(test_parse_offset),
		cmocka_unit_test(test_errbuf_fields),
		cmocka_unit_test(test_strerror_table),
		cmocka_unit_test(test_log_escapes_names),
		cmocka_unit_test(test_name_ok),
		cmocka_unit_test(test_name_escape_examples),
		cmocka_unit_test(test_name_escape_round_trip),
		cmocka_unit_test(test_name_unescape_refuses),
		cmocka_unit_test(test_name_escape_limits),
		cmocka_unit_test(test_log_limited_and_level),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
