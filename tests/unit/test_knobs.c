/* The DSVIEW_* knobs (common/knobs.c): defaults, valid values, and bad
 * ones refused with one warning line naming the variable and value. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/knobs.h"
#include "common/log.h"

static char log_path[] = "/tmp/dsv-test-knobs-XXXXXX";

/* The log so far, from the file every test writes to (then emptied). */
static void log_take(char *buf, size_t cap)
{
	FILE *f = fopen(log_path, "r");
	assert_non_null(f);
	size_t n = fread(buf, 1, cap - 1, f);
	fclose(f);
	buf[n] = '\0';
	assert_int_equal(truncate(log_path, 0), 0);
}

static int lines(const char *s)
{
	int n = 0;
	for (; *s; s++)
		n += *s == '\n';
	return n;
}

static void unset_all(void)
{
	for (int k = 0; k < DSV_KNOB__COUNT; k++)
		unsetenv(dsv_knob_get_def((dsv_knob)k)->name);
}

static int setup(void **state)
{
	int fd = mkstemp(log_path);
	(void)state;
	if (fd < 0)
		return -1;
	close(fd);
	unset_all();
	return dsv_log_open(log_path);
}

static int teardown(void **state)
{
	(void)state;
	unset_all();
	return unlink(log_path);
}

/* Every entry is whole: a DSVIEW_ name, a default in range, a line of
 * help; names are distinct. */
static void test_table(void **state)
{
	(void)state;
	for (int k = 0; k < DSV_KNOB__COUNT; k++) {
		const dsv_knob_def *d = dsv_knob_get_def((dsv_knob)k);
		assert_non_null(d->name);
		assert_int_equal(strncmp(d->name, "DSVIEW_", 7), 0);
		assert_non_null(d->help);
		if (d->names)
			assert_int_equal(d->def, -1);
		else
			assert_true(d->min <= d->def && d->def <= d->max);
		for (int j = 0; j < k; j++)
			assert_string_not_equal(d->name, dsv_knob_get_def((dsv_knob)j)->name);
	}
}

/* Unset or empty: the defaults, and nothing logged. */
static void test_defaults(void **state)
{
	char buf[4096];
	(void)state;
	setenv("DSVIEW_HINT_THREADS", "", 1);
	dsv_knobs_reload();
	assert_int_equal(dsv_knob_int(DSV_KNOB_GRID_BAND_KB), 256);
	assert_int_equal(dsv_knob_int(DSV_KNOB_H5_GRID), 1);
	assert_null(dsv_knob_name(DSV_KNOB_KERNEL));
	assert_int_equal(dsv_knob_int(DSV_KNOB_GPU_EMULATE), 0);
	assert_int_equal(dsv_knob_int(DSV_KNOB_GPU_MIN_KB), 0);
	assert_int_equal(dsv_knob_int(DSV_KNOB_GPU_MIN_BLOCKS), 16);
	assert_int_equal(dsv_knob_int(DSV_KNOB_READAHEAD_KB), 8192);
	assert_int_equal(dsv_knob_int(DSV_KNOB_CLONE_FD), 0);
	assert_int_equal(dsv_knob_int(DSV_KNOB_MAX_BACKGROUND), 0);
	assert_int_equal(dsv_knob_int(DSV_KNOB_HINT_THREADS), 16);
	assert_int_equal(dsv_knob_int(DSV_KNOB_NET_AHEAD_KB), 32768);
	assert_int_equal(dsv_knob_int(DSV_KNOB_NET_GET_KB), 4096);
	assert_int_equal(dsv_knob_int(DSV_KNOB_NET_GETS), 8);
	log_take(buf, sizeof(buf));
	assert_string_equal(buf, "");
	unset_all();
}

/* Values in range are taken, the ends included; names by name. */
static void test_valid(void **state)
{
	char buf[4096];
	(void)state;
	setenv("DSVIEW_GRID_BAND_KB", "0", 1);
	setenv("DSVIEW_H5_GRID", "0", 1);
	setenv("DSVIEW_KERNEL", "avx2", 1);
	setenv("DSVIEW_GPU_EMULATE", "1", 1);
	setenv("DSVIEW_GPU_MIN_KB", "64", 1);
	setenv("DSVIEW_READAHEAD_KB", "0", 1);
	setenv("DSVIEW_CLONE_FD", "1", 1);
	setenv("DSVIEW_MAX_BACKGROUND", "65535", 1);
	setenv("DSVIEW_HINT_THREADS", "1", 1);
	dsv_knobs_reload();
	assert_int_equal(dsv_knob_int(DSV_KNOB_GRID_BAND_KB), 0);
	assert_int_equal(dsv_knob_int(DSV_KNOB_H5_GRID), 0);
	assert_string_equal(dsv_knob_name(DSV_KNOB_KERNEL), "avx2");
	assert_int_equal(dsv_knob_int(DSV_KNOB_KERNEL), 1);
	assert_int_equal(dsv_knob_int(DSV_KNOB_GPU_EMULATE), 1);
	assert_int_equal(dsv_knob_int(DSV_KNOB_GPU_MIN_KB), 64);
	assert_int_equal(dsv_knob_int(DSV_KNOB_READAHEAD_KB), 0);
	assert_int_equal(dsv_knob_int(DSV_KNOB_CLONE_FD), 1);
	assert_int_equal(dsv_knob_int(DSV_KNOB_MAX_BACKGROUND), 65535);
	assert_int_equal(dsv_knob_int(DSV_KNOB_HINT_THREADS), 1);
	setenv("DSVIEW_GRID_BAND_KB", "262144", 1); /* the top: 256 MiB */
	setenv("DSVIEW_HINT_THREADS", "256", 1);
	dsv_knobs_reload();
	assert_int_equal(dsv_knob_int(DSV_KNOB_GRID_BAND_KB), 262144);
	assert_int_equal(dsv_knob_int(DSV_KNOB_HINT_THREADS), 256);
	log_take(buf, sizeof(buf));
	assert_string_equal(buf, "");
	unset_all();
}

/* A bad value: the default, and one warning line that names the
 * variable and the value. */
static void check_bad(const char *name, const char *bad, dsv_knob k, int64_t def, const char *says)
{
	char buf[4096], want[256];
	unset_all();
	setenv(name, bad, 1);
	dsv_knobs_reload();
	assert_int_equal(dsv_knob_int(k), def);
	log_take(buf, sizeof(buf));
	assert_int_equal(lines(buf), 1);
	snprintf(want, sizeof(want), " warning: %s='%s' is not %s", name, bad, says);
	if (!strstr(buf, want))
		fail_msg("%s: got '%s', want '%s'", name, buf, want);
}

static void test_bad_values(void **state)
{
	(void)state;
	check_bad("DSVIEW_HINT_THREADS", "0", DSV_KNOB_HINT_THREADS, 16,
		  "a whole number in [1, 256]: 16 used");
	check_bad("DSVIEW_HINT_THREADS", "257", DSV_KNOB_HINT_THREADS, 16, "a whole number");
	check_bad("DSVIEW_HINT_THREADS", "8 ", DSV_KNOB_HINT_THREADS, 16, "a whole number");
	check_bad("DSVIEW_HINT_THREADS", "many", DSV_KNOB_HINT_THREADS, 16, "a whole number");
	check_bad("DSVIEW_READAHEAD_KB", "-1", DSV_KNOB_READAHEAD_KB, 8192, "a whole number");
	check_bad("DSVIEW_READAHEAD_KB", "1.5", DSV_KNOB_READAHEAD_KB, 8192, "a whole number");
	check_bad("DSVIEW_READAHEAD_KB", "99999999999999999999", DSV_KNOB_READAHEAD_KB, 8192,
		  "a whole number");
	check_bad("DSVIEW_GRID_BAND_KB", "262145", DSV_KNOB_GRID_BAND_KB, 256,
		  "a whole number in [0, 262144]: 256 used");
	check_bad("DSVIEW_H5_GRID", "off", DSV_KNOB_H5_GRID, 1, "a whole number in [0, 1]");
	check_bad("DSVIEW_GPU_EMULATE", "2", DSV_KNOB_GPU_EMULATE, 0, "a whole number in [0, 1]");
	check_bad("DSVIEW_CLONE_FD", "yes", DSV_KNOB_CLONE_FD, 0, "a whole number in [0, 1]");
	check_bad("DSVIEW_MAX_BACKGROUND", "65536", DSV_KNOB_MAX_BACKGROUND, 0,
		  "a whole number in [0, 65535]");
	check_bad("DSVIEW_GPU_MIN_KB", "1k", DSV_KNOB_GPU_MIN_KB, 0, "a whole number");
	check_bad("DSVIEW_GPU_MIN_BLOCKS", "0", DSV_KNOB_GPU_MIN_BLOCKS, 16,
		  "a whole number in [1, 1048576]: 16 used");
	check_bad("DSVIEW_KERNEL", "sse", DSV_KNOB_KERNEL, -1,
		  "one of scalar, avx2, avx512, avx512vbmi, avx512bf16: unset");
	assert_null(dsv_knob_name(DSV_KNOB_KERNEL));
	unset_all();
	dsv_knobs_reload();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_valid),
		cmocka_unit_test(test_bad_values),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
