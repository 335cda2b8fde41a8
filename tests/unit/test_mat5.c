/* The MAT-file walk (formats/eeglab/mat5.c) over files built here element
 * by element: small elements, numbers in a smaller storage type than
 * their class, char arrays, struct fields element by element, compressed
 * variables passed over, and each malformation refused with where. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "formats/eeglab/mat5.h"

typedef struct buf {
	uint8_t b[4096];
	size_t n;
} buf;

static int mem_read(void *arg, void *dst, size_t n, uint64_t off)
{
	const buf *m = arg;
	if (off > m->n || n > m->n - off)
		return DSV_ERR_TRUNCATED;
	memcpy(dst, m->b + off, n);
	return 0;
}

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* Appends an element (padded to 8 but for a compressed one) or, small,
 * one in its tag. */
static void el(buf *m, uint32_t type, const void *data, uint32_t len)
{
	if (len <= 4 && type != 14 && type != 15 && len) {
		put32(m->b + m->n, type | len << 16);
		memset(m->b + m->n + 4, 0, 4);
		memcpy(m->b + m->n + 4, data, len);
		m->n += 8;
		return;
	}
	size_t start = m->n;
	put32(m->b + m->n, type);
	put32(m->b + m->n + 4, len);
	if (len)
		memcpy(m->b + m->n + 8, data, len);
	m->n += 8 + len;
	while ((m->n - start) % 8 && type != 15) /* a compressed element is not padded */
		m->b[m->n++] = 0;
}

/* A matrix element of class cls, dims, name, and one part (type, data). */
static void matrix(buf *m, int cls, int32_t r, int32_t c, const char *name, uint32_t type,
		   const void *data, uint32_t len)
{
	buf body = { .n = 0 };
	uint32_t flags[2] = { (uint32_t)cls, 0 };
	int32_t dims[2] = { r, c };
	el(&body, 6, flags, 8);
	el(&body, 5, dims, 8);
	el(&body, 1, name, (uint32_t)strlen(name));
	if (type)
		el(&body, type, data, len);
	el(m, 14, body.b, (uint32_t)body.n);
}

static void header(buf *m)
{
	memset(m->b, ' ', 128);
	memcpy(m->b, "MATLAB 5.0 MAT-file, written here", 33);
	m->b[124] = 0;
	m->b[125] = 1;
	m->b[126] = 'I';
	m->b[127] = 'M';
	m->n = 128;
}

static void test_walk(void **state)
{
	(void)state;
	buf m;
	header(&m);
	uint8_t eight = 129;
	int16_t small[6] = { -3, 7, 1000, -1000, 0, 5 };
	uint16_t name[3] = { 'F', 'z', 0x263a };
	matrix(&m, 6, 1, 1, "nbchan", 2, &eight, 1); /* a double stored as uint8 */
	el(&m, 15, "zlib bytes", 10);                /* compressed: passed over */
	matrix(&m, 6, 2, 3, "data", 3, small, sizeof(small));
	matrix(&m, 4, 1, 3, "lab", 17, name, sizeof(name));
	/* a 1 x 2 struct of fields a, bb: a(1) = 1.5, bb(1) = 'x', a(2) = 2.5, bb(2) = [] */
	buf st = { .n = 0 };
	uint32_t flags[2] = { 2, 0 };
	int32_t dims[2] = { 1, 2 }, flen = 3;
	double v1 = 1.5, v2 = 2.5;
	el(&st, 6, flags, 8);
	el(&st, 5, dims, 8);
	el(&st, 1, "s", 1);
	el(&st, 5, &flen, 4);
	el(&st, 1, "a\0\0bb\0", 6);
	matrix(&st, 6, 1, 1, "", 9, &v1, 8);
	matrix(&st, 4, 1, 1, "", 16, "x", 1);
	matrix(&st, 6, 1, 1, "", 9, &v2, 8);
	el(&st, 14, NULL, 0);
	el(&m, 14, st.b, (uint32_t)st.n);

	dsv_mat mat = { mem_read, &m, m.n };
	dsv_mat_var v, f[2];
	dsv_errbuf eb;
	double d;
	char s[16];
	assert_int_equal(dsv_mat_check_header(&mat, &eb), 0);
	assert_int_equal(dsv_mat_find(&mat, "nbchan", &v, &eb), 0);
	assert_int_equal(dsv_mat_scalar(&mat, &v, &d, &eb), 0);
	assert_true(d == 129);
	assert_int_equal(dsv_mat_find(&mat, "data", &v, &eb), 0);
	assert_true(v.cls == 6 && v.type == DSV_MI_INT16 && v.numel == 6 && v.dims[1] == 3);
	assert_int_equal(v.data_len, sizeof(small));
	assert_memory_equal(m.b + v.data_off, small, sizeof(small));
	assert_int_equal(dsv_mat_find(&mat, "lab", &v, &eb), 0);
	assert_int_equal(dsv_mat_string(&mat, &v, s, sizeof(s), &eb), 0);
	assert_string_equal(s, "Fz?");
	assert_int_equal(dsv_mat_find(&mat, "s", &v, &eb), 0);
	assert_true(v.cls == DSV_MX_STRUCT && v.nfields == 2 && v.numel == 2);
	assert_int_equal(dsv_mat_field(&mat, &v, "a", f, 2, &eb), 0);
	assert_int_equal(dsv_mat_scalar(&mat, &f[1], &d, &eb), 0);
	assert_true(d == 2.5);
	assert_int_equal(dsv_mat_field(&mat, &v, "bb", f, 2, &eb), 0);
	assert_int_equal(dsv_mat_string(&mat, &f[0], s, sizeof(s), &eb), 0);
	assert_string_equal(s, "x");
	assert_int_equal(f[1].cls, 0); /* [] */
	assert_int_equal(dsv_mat_field(&mat, &v, "c", f, 1, &eb), DSV_ERR_NOTFOUND);
	assert_int_equal(dsv_mat_field(&mat, &v, "a", f, 3, &eb), DSV_ERR_NOTFOUND);
	/* not found, with a compressed variable in the file: said so */
	assert_int_equal(dsv_mat_find(&mat, "pnts", &v, &eb), DSV_ERR_UNSUPPORTED);
	assert_non_null(strstr(eb.reason, "compressed"));
}

static void test_malformed(void **state)
{
	(void)state;
	buf m;
	dsv_mat mat = { mem_read, &m, 0 };
	dsv_mat_var v;
	dsv_errbuf eb;
	double d = 1;
	header(&m);
	matrix(&m, 6, 1, 1, "x", 9, &d, 8);
	mat.size = m.n;
	/* the header: text, order, version */
	m.b[0] = 'X';
	assert_int_equal(dsv_mat_check_header(&mat, &eb), DSV_ERR_FORMAT);
	assert_string_equal(eb.where, "header");
	m.b[0] = 'M';
	m.b[126] = 'M', m.b[127] = 'I';
	assert_int_equal(dsv_mat_check_header(&mat, &eb), DSV_ERR_UNSUPPORTED);
	m.b[126] = 'I', m.b[127] = 'M';
	m.b[125] = 2;
	assert_int_equal(dsv_mat_check_header(&mat, &eb), DSV_ERR_FORMAT);
	m.b[125] = 1;
	/* the element's length past the file */
	put32(m.b + 132, 4000);
	assert_int_equal(dsv_mat_find(&mat, "x", &v, &eb), DSV_ERR_FORMAT);
	assert_string_equal(eb.where, "element at byte 128");
	/* cut inside the matrix */
	put32(m.b + 132, (uint32_t)(m.n - 136));
	mat.size = m.n - 8;
	assert_int_equal(dsv_mat_find(&mat, "x", &v, &eb), DSV_ERR_FORMAT);
	mat.size = m.n;
	/* flags of the wrong type; one dimension */
	m.b[136] = 5;
	assert_int_equal(dsv_mat_find(&mat, "x", &v, &eb), DSV_ERR_FORMAT);
	assert_non_null(strstr(eb.reason, "array flags"));
	m.b[136] = 6;
	put32(m.b + 156, 4);
	assert_int_equal(dsv_mat_find(&mat, "x", &v, &eb), DSV_ERR_FORMAT);
	assert_non_null(strstr(eb.reason, "dimensions"));
	put32(m.b + 156, 8);
	assert_int_equal(dsv_mat_find(&mat, "x", &v, &eb), 0);
	/* a scalar of a char array; a string of a number */
	char s[8];
	assert_int_equal(dsv_mat_string(&mat, &v, s, sizeof(s), &eb), DSV_ERR_FORMAT);
	v.cls = DSV_MX_CHAR;
	assert_int_equal(dsv_mat_scalar(&mat, &v, &d, &eb), DSV_ERR_FORMAT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_walk),
		cmocka_unit_test(test_malformed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
