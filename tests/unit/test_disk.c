/* common/disk: the readahead window of a file's device, as the kernel
 * shows it for the device under /sys/class/bdi; 0 where there is none. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "common/disk.h"

static void test_no_device(void **state)
{
	(void)state;
	assert_int_equal(dsv_disk_readahead("/nonexistent/dsv-test-disk"), 0);
	assert_int_equal(dsv_disk_readahead("/proc/self/status"), 0); /* no backing device */
}

/* A file on a disk (the one holding /var/tmp, or this test's binary): the
 * bdi's read_ahead_kb, where the device has a bdi of its own (a whole
 * disk); a partition's is its disk's, also a multiple of a page. */
static void test_file_on_disk(void **state)
{
	(void)state;
	const char *paths[] = { "/var/tmp", "/proc/self/exe" };
	for (size_t i = 0; i < 2; i++) {
		struct stat st;
		char p[96];
		unsigned long long kb;
		if (stat(paths[i], &st) != 0)
			continue;
		uint64_t got = dsv_disk_readahead(paths[i]);
		assert_int_equal(got % 4096, 0);
		snprintf(p, sizeof(p), "/sys/class/bdi/%u:%u/read_ahead_kb", major(st.st_dev),
			 minor(st.st_dev));
		FILE *f = fopen(p, "r");
		if (!f)
			continue;
		assert_int_equal(fscanf(f, "%llu", &kb), 1);
		fclose(f);
		assert_int_equal(got, kb * 1024);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_device),
		cmocka_unit_test(test_file_on_disk),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
