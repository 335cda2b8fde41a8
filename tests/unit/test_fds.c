/* The descriptor cache (source/fds.c): many sources under a small budget,
 * every read right, descriptors reopened and checked, a replaced file
 * refused, the budget from the knob, the messages' hint. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "common/knobs.h"
#include "dsview/source.h"
#include "fixture.h"
#include "source/source.h"

#define NFILES 24
#define NELEMS 16
#define BUDGET 4

static char dir[] = "/tmp/dsv-test-fds-XXXXXX";

/* A version-1 .npy of NELEMS int32 values base, base + 1, ... */
static const char *write_ints(const char *name, int32_t base)
{
	unsigned char buf[128 + NELEMS * 4];
	const char *dict = "{'descr': '<i4', 'fortran_order': False, 'shape': (16,), }";
	size_t hl = strlen(dict), len = 128 - 10;
	memset(buf, ' ', 128);
	memcpy(buf, "\x93NUMPY\x01\x00", 8);
	buf[8] = (unsigned char)len;
	buf[9] = 0;
	memcpy(buf + 10, dict, hl);
	buf[127] = '\n';
	for (int i = 0; i < NELEMS; i++) {
		int32_t v = base + i;
		memcpy(buf + 128 + 4 * i, &v, 4);
	}
	return scratch_write(dir, name, buf, sizeof(buf));
}

/* Source s's one chunk into out: 0 or the read's error. */
static int read_all(const dsv_source *s, int32_t *out)
{
	dsv_chunk_ref ref;
	assert_int_equal(dsv_source_chunk(s, 0, &ref), 0);
	return dsv_source_decode_chunk(s, &ref, out, NELEMS * 4, NULL);
}

static dsv_source *srcs[NFILES];

static int setup(void **state)
{
	(void)state;
	assert_int_equal(scratch_make(dir), 0);
	setenv("DSVIEW_OPEN_FILES", "4", 1);
	dsv_knobs_reload();
	for (int i = 0; i < NFILES; i++) {
		char name[32];
		dsv_errbuf eb;
		snprintf(name, sizeof(name), "f%02d.npy", i);
		assert_int_equal(dsv_source_open_npy(write_ints(name, 1000 * i), &srcs[i], &eb), 0);
	}
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	for (int i = 0; i < NFILES; i++)
		dsv_source_close(srcs[i]);
	unsetenv("DSVIEW_OPEN_FILES");
	dsv_knobs_reload();
	return scratch_remove(dir);
}

static void test_reads_under_a_budget(void **state)
{
	(void)state;
	dsv_source_fd_stats st;
	int32_t got[NELEMS];

	dsv_source_fd_counts(&st);
	assert_int_equal(st.budget, BUDGET);
	assert_true(st.open <= BUDGET);
	for (int round = 0; round < 2; round++)
		for (int i = 0; i < NFILES; i++) {
			assert_int_equal(read_all(srcs[i], got), 0);
			for (int k = 0; k < NELEMS; k++)
				assert_int_equal(got[k], 1000 * i + k);
			dsv_source_fd_counts(&st);
			assert_true(st.open <= BUDGET);
		}
	dsv_source_fd_counts(&st);
	/* every source but the last few read was closed before its read */
	assert_true(st.reopens >= 2 * (NFILES - BUDGET));
	assert_int_equal(st.replaced, 0);
}

/* Readers on threads, each source read right, the budget held: a
 * descriptor in use by one reader is never closed under it. */
#define READERS 8
#define READS 2000

static void *reader(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg, bad = 0;
	int32_t got[NELEMS];
	for (int r = 0; r < READS; r++) {
		int i = 1 + (int)(rand_r(&seed) % (NFILES - 1)); /* f00 is replaced below */
		if (read_all(srcs[i], got) || got[0] != 1000 * i ||
		    got[NELEMS - 1] != 1000 * i + 15)
			bad++;
	}
	return (void *)(uintptr_t)bad;
}

static void test_readers_on_threads(void **state)
{
	(void)state;
	pthread_t t[READERS];
	dsv_source_fd_stats st;
	for (uintptr_t k = 0; k < READERS; k++)
		assert_int_equal(pthread_create(&t[k], NULL, reader, (void *)(k + 1)), 0);
	for (int k = 0; k < READERS; k++) {
		void *bad;
		pthread_join(t[k], &bad);
		assert_int_equal((uintptr_t)bad, 0);
	}
	dsv_source_fd_counts(&st);
	assert_true(st.open <= BUDGET);
	assert_int_equal(st.replaced, 0);
}

static void test_replaced_file_refused(void **state)
{
	(void)state;
	dsv_source_fd_stats before, after;
	int32_t got[NELEMS];
	char path[600];

	/* f00 was read long ago: closed. A new file renamed over it. */
	snprintf(path, sizeof(path), "%s/new.npy", dir);
	write_ints("new.npy", -5);
	assert_int_equal(rename(path, dsv_source_get_info(srcs[0])->path), 0);
	dsv_source_fd_counts(&before);
	assert_int_equal(read_all(srcs[0], got), DSV_ERR_IO);
	dsv_source_fd_counts(&after);
	assert_int_equal(after.replaced, before.replaced + 1);
	/* the others still read right */
	for (int i = 1; i < NFILES; i++) {
		assert_int_equal(read_all(srcs[i], got), 0);
		assert_int_equal(got[NELEMS - 1], 1000 * i + NELEMS - 1);
	}
}

static void test_open_hint(void **state)
{
	(void)state;
	assert_non_null(strstr(dsv_source_open_hint(EMFILE), "ulimit -n"));
	assert_non_null(strstr(dsv_source_open_hint(ENFILE), "ulimit -n"));
	assert_string_equal(dsv_source_open_hint(ENOENT), "");
}

static void test_raise_limit(void **state)
{
	(void)state;
	struct rlimit rl;
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
	long got = dsv_source_raise_fd_limit();
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
	assert_true(rl.rlim_cur == rl.rlim_max);
	if (rl.rlim_cur != RLIM_INFINITY)
		assert_int_equal(got, (long)rl.rlim_cur);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reads_under_a_budget),
		cmocka_unit_test(test_readers_on_threads),
		cmocka_unit_test(test_replaced_file_refused),
		cmocka_unit_test(test_open_hint),
		cmocka_unit_test(test_raise_limit),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
