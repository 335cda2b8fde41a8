/* A manifest whose source line cannot be copied (strdup fails) gives
 * "manifest:line: out of memory", frees what it holds, and never reads
 * the missing copy (no NULL spec is kept for resolve() to read).
 * Built with -Wl,--wrap=strdup: __wrap_strdup fails for one string. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dsview/view.h"

#define FAILING "oom-on-copy.npy"

char *__real_strdup(const char *s);
char *__wrap_strdup(const char *s);

static int failed_copies;

char *__wrap_strdup(const char *s)
{
	if (s && !strcmp(s, FAILING)) {
		failed_copies++;
		return NULL;
	}
	return __real_strdup(s);
}

static void test_source_copy_fails(void **state)
{
	char dir[] = "/tmp/dsv-test-oom-XXXXXX", path[256], cmd[300];
	dsv_manifest *m = (dsv_manifest *)1;
	dsv_errbuf eb;
	(void)state;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/m.ini", dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs("[a]\nsource = other.npy\nsource = " FAILING "\n", f);
	fclose(f);
	assert_int_equal(dsv_manifest_load(path, &m, &eb), DSV_ERR_FORMAT);
	assert_null(m);
	assert_int_equal(failed_copies, 1);
	assert_int_equal(eb.line, 3);
	assert_string_equal(eb.reason, "out of memory");
	assert_non_null(strstr(eb.msg, "m.ini:3: out of memory"));
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_source_copy_fails),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
