/*
 * Virtual dataset mappings laid out along axis 0 (formats/h5/vds_map.c): blocks
 * of whole rows from whole sources, in row order whatever the mappings'
 * order, gaps as fill rows; every other form refused with the mapping and
 * its form named; and where a mapping's source file is looked for.
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

#include "formats/h5/h5_vds.h"

static const uint64_t DIMS[2] = { 100, 4 };

/* Rows [r0, r0 + n) of DIMS, all of axis 1, as h5py writes layout[a:b]. */
static dsv_vds_map rows(uint64_t r0, uint64_t n)
{
	dsv_vds_map m = { 0 };
	m.vsel = (dsv_vds_sel){ .kind = DSV_VDS_SEL_HYPER,
				.ndim = 2,
				.dims = { 100, 4 },
				.start = { r0, 0 },
				.stride = { 1, 1 },
				.count = { 1, 1 },
				.block = { n, 4 } };
	m.ssel = (dsv_vds_sel){ .kind = DSV_VDS_SEL_ALL };
	return m;
}

static int plan(const dsv_vds_map *maps, size_t n, dsv_vds_piece *out, size_t *np, size_t *bad,
		char *why)
{
	return dsv_vds_plan(2, DIMS, maps, n, out, np, bad, why, 160);
}

static void test_rows_in_order_with_gaps(void **state)
{
	(void)state;
	dsv_vds_map m[3] = { rows(50, 30), rows(0, 20), rows(20, 10) };
	m[1].vsel.count[0] = 20; /* the same block as count 20 of block 1 */
	m[1].vsel.block[0] = 1;
	dsv_vds_piece out[7];
	size_t np = 0, bad = 99;
	char why[160];

	assert_int_equal(plan(m, 3, out, &np, &bad, why), 0);
	assert_int_equal(np, 5);
	const dsv_vds_piece want[5] = {
		{ 0, 20, 1 }, { 20, 10, 2 }, { 30, 20, -1 }, { 50, 30, 0 }, { 80, 20, -1 }
	};
	for (size_t i = 0; i < 5; i++) {
		assert_int_equal(out[i].row0, want[i].row0);
		assert_int_equal(out[i].rows, want[i].rows);
		assert_int_equal(out[i].map, want[i].map);
	}
	/* no mapping at all: every row is fill */
	assert_int_equal(plan(m, 0, out, &np, &bad, why), 0);
	assert_int_equal(np, 1);
	assert_int_equal(out[0].rows, 100);
	assert_int_equal(out[0].map, -1);
}

/* Each refused form: the mapping at fault and words naming the form. */
static void test_refused_forms(void **state)
{
	(void)state;
	struct {
		dsv_vds_map m;
		const char *needle;
	} c[8];
	for (size_t i = 0; i < 8; i++)
		c[i].m = rows(10, 10);
	c[0].m.vsel.stride[0] = 2, c[0].m.vsel.count[0] = 5, c[0].m.vsel.block[0] = 1;
	c[0].needle = "strided";
	c[1].m.vsel.block[0] = DSV_VDS_UNLIMITED, c[1].needle = "unlimited";
	c[2].m.vsel.block[1] = 2, c[2].needle = "part of axis 1";
	c[3].m.vsel.kind = DSV_VDS_SEL_OTHER, c[3].needle = "point or irregular";
	c[4].m.vsel.start[0] = 95, c[4].needle = "past the dataset's extent";
	c[5].m.ssel = c[0].m.vsel, c[5].needle = "strided selection in the source";
	c[6].m.ssel.kind = DSV_VDS_SEL_OTHER, c[6].needle = "irregular selection in the source";
	c[7].m.ssel = rows(0, 10).vsel, c[7].m.ssel.ndim = 3;
	c[7].needle = "another rank in the source";
	for (size_t i = 0; i < 8; i++) {
		dsv_vds_map m[2] = { rows(0, 10), c[i].m };
		dsv_vds_piece out[5];
		size_t np = 0, bad = 99;
		char why[160] = "";
		if (plan(m, 2, out, &np, &bad, why) != DSV_ERR_UNSUPPORTED || bad != 1 ||
		    !strstr(why, c[i].needle))
			fail_msg("case %zu: mapping %zu, '%s' (want '%s')", i, bad, why,
				 c[i].needle);
	}
	/* overlapping mappings: the later one named, with the one it overlaps */
	dsv_vds_map m[3] = { rows(0, 10), rows(30, 10), rows(5, 10) };
	dsv_vds_piece out[7];
	size_t np, bad = 99;
	char why[160] = "";
	assert_int_equal(plan(m, 3, out, &np, &bad, why), DSV_ERR_UNSUPPORTED);
	assert_int_equal(bad, 2);
	assert_non_null(strstr(why, "overlap mapping 0"));
}

/* The source as opened: all of it, of the mapping's rows and row shape. */
static void test_source_checked_at_open(void **state)
{
	(void)state;
	dsv_vds_map m = rows(10, 10);
	const uint64_t fits[2] = { 10, 4 }, longer[2] = { 12, 4 }, wide[2] = { 10, 5 };
	char buf[160];
	const char *why;

	assert_null(dsv_vds_check_source(&m, 2, DIMS, 10, 2, fits, buf, sizeof(buf)));
	why = dsv_vds_check_source(&m, 2, DIMS, 10, 2, longer, buf, sizeof(buf));
	assert_non_null(why);
	assert_non_null(strstr(why, "12 rows for 10 rows"));
	why = dsv_vds_check_source(&m, 2, DIMS, 10, 2, wide, buf, sizeof(buf));
	assert_non_null(strstr(why, "axis 1 is 5 long"));
	why = dsv_vds_check_source(&m, 2, DIMS, 10, 1, fits, buf, sizeof(buf));
	assert_non_null(strstr(why, "1 axes"));
	/* a block of the source's rows: refused, rows named */
	m.ssel = rows(2, 10).vsel;
	why = dsv_vds_check_source(&m, 2, DIMS, 10, 2, longer, buf, sizeof(buf));
	assert_non_null(strstr(why, "rows [2, 12) of a source of 12"));
	m.ssel = rows(0, 12).vsel;
	assert_null(dsv_vds_check_source(&m, 2, DIMS, 12, 2, longer, buf, sizeof(buf)));
}

static void test_source_file(void **state)
{
	(void)state;
	char dir[] = "/tmp/dsv-test-vds-XXXXXX", there[64];
	assert_non_null(mkdtemp(dir));
	snprintf(there, sizeof(there), "%s/there.h5", dir);
	FILE *f = fopen(there, "w");
	assert_non_null(f);
	fclose(f);
	struct {
		const char *vds, *name, *want;
	} c[] = {
		{ "/d/v.h5", ".", "/d/v.h5" },
		{ "/d/v.h5", "a.h5", "/d/a.h5" },
		{ "/d/v.h5", "sub/a.h5", "/d/sub/a.h5" },
		{ "v.h5", "a.h5", "a.h5" },
		{ "/d/v.h5", there, there },              /* absolute, present */
		{ "/d/v.h5", "/gone/x/b.h5", "/d/b.h5" }, /* absolute, missing: beside */
	};
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		char *got = dsv_vds_source_file(c[i].vds, c[i].name);
		assert_non_null(got);
		if (strcmp(got, c[i].want))
			fail_msg("case %zu: %s, want %s", i, got, c[i].want);
		free(got);
	}
	unlink(there);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rows_in_order_with_gaps),
		cmocka_unit_test(test_refused_forms),
		cmocka_unit_test(test_source_checked_at_open),
		cmocka_unit_test(test_source_file),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
