/* The FUSE front end's start-up (src/fs/): a dsv_fs_serve that fails, at
 * any step, leaves no signal handler behind pointing at the session that
 * dsv_fs_destroy then frees. Mounts for real: needs root and /dev/fuse.
 *
 * Linked with -Wl,--wrap=fuse_loop_cfg_create (Makefile) so that a test can
 * make the step right after the signal handlers are installed fail. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fuse_lowlevel.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dsview/fs.h"
#include "dsview/view.h"

static char dir[] = "/tmp/dsv-test-fs-XXXXXX";
static char npy[256], mnt[256];
static int fail_loop_cfg; /* the next fuse_loop_cfg_create returns NULL */

struct fuse_loop_config *__real_fuse_loop_cfg_create(void);
struct fuse_loop_config *__wrap_fuse_loop_cfg_create(void);

struct fuse_loop_config *__wrap_fuse_loop_cfg_create(void)
{
	if (fail_loop_cfg) {
		fail_loop_cfg = 0;
		return NULL;
	}
	return __real_fuse_loop_cfg_create();
}

/* A 4x4 uint8 .npy. */
static int setup(void **state)
{
	static const char head[] = "{'descr': '|u1', 'fortran_order': False, 'shape': (4, 4), }";
	size_t n = sizeof(head) - 1, pad = (64 - (10 + n + 1) % 64) % 64;
	uint16_t hl = (uint16_t)(n + pad + 1);
	FILE *f;

	(void)state;
	if (!mkdtemp(dir))
		return -1;
	snprintf(npy, sizeof(npy), "%s/a.npy", dir);
	snprintf(mnt, sizeof(mnt), "%s/mnt", dir);
	if (mkdir(mnt, 0755) < 0 || !(f = fopen(npy, "wb")))
		return -1;
	fwrite("\x93NUMPY\x01\x00", 1, 8, f);
	fputc(hl & 0xff, f);
	fputc(hl >> 8, f);
	fwrite(head, 1, n, f);
	for (size_t i = 0; i < pad; i++)
		fputc(' ', f);
	fputc('\n', f);
	for (int i = 0; i < 16; i++)
		fputc(i, f);
	return fclose(f);
}

static int teardown(void **state)
{
	(void)state;
	unlink(npy);
	rmdir(mnt);
	return rmdir(dir);
}

static void assert_default_disposition(void)
{
	static const int sigs[] = { SIGTERM, SIGINT, SIGHUP };
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		struct sigaction sa;
		assert_int_equal(sigaction(sigs[i], NULL, &sa), 0);
		assert_ptr_equal(sa.sa_handler, SIG_DFL);
	}
}

/* Mounts a.npy, runs dsv_fs_serve, which must fail with want, frees it. */
static void serve_fails(const char *gpu, int want)
{
	dsv_fs_opts o = { .cache_size = 1 << 20, .threads = 2, .readahead = 128 << 10, .gpu = gpu };
	dsv_manifest *m = NULL;
	dsv_fs *fs = NULL;
	dsv_errbuf eb;

	assert_int_equal(dsv_manifest_from_file(npy, DSV_F32, 0, &m, &eb), 0);
	assert_int_equal(dsv_fs_mount(m, mnt, &o, &fs, &eb), 0);
	assert_int_equal(dsv_fs_serve(fs, &eb), want);
	dsv_fs_destroy(fs);
	assert_default_disposition();
}

/* No such GPU: the backend is not created (a build without CUDA has none). */
static void test_serve_fails_without_backend(void **state)
{
	(void)state;
	serve_fails("5", DSV_ERR_UNSUPPORTED);
}

/* The loop's configuration cannot be made: the handlers were installed by
 * then, and stayed, on a session that was freed next. */
static void test_serve_fails_after_signal_handlers(void **state)
{
	(void)state;
	fail_loop_cfg = 1;
	serve_fails("off", DSV_ERR_NOMEM);
	assert_int_equal(fail_loop_cfg, 0); /* the failure was injected */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_serve_fails_without_backend),
		cmocka_unit_test(test_serve_fails_after_signal_handlers),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
