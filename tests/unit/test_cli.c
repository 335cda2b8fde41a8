/* The command line: PATH classification, shapes, integer options, escaping,
 * error reasons from fields, the daemon pid from .stats.json, and each
 * subcommand's refusal of bad options (exit 1, before any side effect). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/progress.h"
#include "cli/target.h"
#include "formats/formats.h"
#include "dsview/source.h"

static char dir[] = "/tmp/dsv-test-cli-XXXXXX";

static const char *in_dir(const char *name)
{
	static char ring[16][512];
	static unsigned k;
	char *p = ring[k++ % 16];
	snprintf(p, 512, "%s/%s", dir, name);
	return p;
}

static const char *put(const char *name, const void *data, size_t n)
{
	const char *p = in_dir(name);
	FILE *f = fopen(p, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, n, f), n);
	fclose(f);
	return p;
}

static const char *put_s(const char *name, const char *text)
{
	return put(name, text, strlen(text));
}

static int setup(void **state)
{
	(void)state;
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[600];
	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* spec parses as kind, in the format named format (NULL: a manifest) */
static void expect_kind(const char *spec, int raw, dsv_target_kind kind, const char *format,
			const char *file, const char *dataset)
{
	dsv_target t;
	dsv_errbuf eb = { 0 };
	int err = dsv_target_parse(spec, raw, &t, &eb);
	if (err)
		fail_msg("%s: %s", spec, eb.msg);
	if (t.kind != kind)
		fail_msg("%s: kind %d, want %d", spec, (int)t.kind, (int)kind);
	if (format)
		assert_string_equal(t.format->name, format);
	else
		assert_null(t.format);
	assert_string_equal(t.file, file);
	if (dataset)
		assert_string_equal(t.dataset, dataset);
	else
		assert_null(t.dataset);
	dsv_target_free(&t);
}

static void expect_error(const char *spec, int raw, int want, const char *msg)
{
	dsv_target t;
	dsv_errbuf eb = { 0 };
	assert_int_equal(dsv_target_parse(spec, raw, &t, &eb), want);
	assert_null(t.file);
	assert_null(t.dataset);
	assert_string_equal(eb.msg, msg);
	/* the file at fault is a field too, apart from the reason */
	char composed[sizeof(eb.file) + sizeof(eb.reason) + 2];
	assert_int_equal(eb.code, want);
	assert_true(eb.file[0] != '\0');
	snprintf(composed, sizeof(composed), "%s: %s", eb.file, eb.reason);
	assert_string_equal(composed, msg);
}

static void test_target_parse(void **state)
{
	static const unsigned char sig[8] = { 0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n' };
	unsigned char block[520] = { 0 };
	char want[700];
	(void)state;

	const char *npy = put("a.npy", "x", 1), *NPY = put("X.NPY", "x", 1);
	const char *nii = put("b.nii", "x", 1), *niigz = put("c.Nii.GZ", "x", 1);
	const char *h5 = put("d.h5", "x", 1), *ini = put("m.ini", "[v]\n", 4);
	const char *sig0 = put("data.bin", sig, sizeof(sig));
	memcpy(block + 512, sig, sizeof(sig));
	const char *sig512 = put("userblock.dat", block, sizeof(block));
	const char *plain = put("plain.bin", block, 100);
	/* a .npy by another name: its magic says so */
	const char *npymagic = put("array.bin", "\x93NUMPY\x01\x00", 8);

	expect_kind(npy, 0, DSV_TARGET_ARRAY, "npy", npy, NULL);
	/* extensions match in any case */
	expect_kind(NPY, 0, DSV_TARGET_ARRAY, "npy", NPY, NULL);
	expect_kind(nii, 0, DSV_TARGET_ARRAY, "nifti", nii, NULL);
	/* refused when opened */
	expect_kind(niigz, 0, DSV_TARGET_ARRAY, "nifti", niigz, NULL);
	expect_kind(h5, 0, DSV_TARGET_DATASETS, "hdf5", h5, NULL);
	expect_kind(sig0, 0, DSV_TARGET_DATASETS, "hdf5", sig0, NULL);
	expect_kind(sig512, 0, DSV_TARGET_DATASETS, "hdf5", sig512, NULL);
	expect_kind(npymagic, 0, DSV_TARGET_ARRAY, "npy", npymagic, NULL);
	expect_kind(ini, 0, DSV_TARGET_MANIFEST, NULL, ini, NULL);
	expect_kind(plain, 1, DSV_TARGET_ARRAY, "raw", plain, NULL);
	/* --source-dtype/--source-shape: raw, whatever the name */
	expect_kind(npy, 1, DSV_TARGET_ARRAY, "raw", npy, NULL);

	/* file.h5:/dset: split at the last ":/"; a file of datasets whatever
	 * the name */
	snprintf(want, sizeof(want), "%s:/grp/x", h5);
	expect_kind(want, 0, DSV_TARGET_DATASETS, "hdf5", h5, "/grp/x");
	snprintf(want, sizeof(want), "%s:/x", plain);
	expect_kind(want, 0, DSV_TARGET_DATASETS, "hdf5", plain, "/x");

	snprintf(want, sizeof(want),
		 "%s: not a manifest (.ini), a .npy, a NIfTI image (.nii), an HDF5 file "
		 "(.h5), a .npz, an Arrow IPC file (.arrow), a Zarr array or group, an EDF or "
		 "BDF recording (.edf, .bdf), an EEGLAB dataset (.set), a BrainVision header "
		 "(.vhdr), an llm.c .bin, a Megatron .idx, or a LitData directory (index.json); a "
		 "raw file needs "
		 "--source-dtype and --source-shape",
		 plain);
	expect_error(plain, 0, DSV_ERR_INVALID, want);
	snprintf(want, sizeof(want), "%s: No such file or directory", in_dir("missing.npy"));
	expect_error(in_dir("missing.npy"), 0, DSV_ERR_NOTFOUND, want);
	snprintf(want, sizeof(want), "%s: No such file or directory", in_dir("missing.h5"));
	char spec[600];
	snprintf(spec, sizeof(spec), "%s:/dset", in_dir("missing.h5"));
	expect_error(spec, 0, DSV_ERR_NOTFOUND, want);
	snprintf(want, sizeof(want), "%s: not a regular file", dir);
	expect_error(dir, 0, DSV_ERR_INVALID, want);
}

static void test_int_arg(void **state)
{
	int v = -7;
	(void)state;
	assert_int_equal(dsv_cli_int_arg("--threads", "4", 1, 256, &v), 0);
	assert_int_equal(v, 4);
	assert_int_equal(dsv_cli_int_arg("--threads", "256", 1, 256, &v), 0);
	assert_int_equal(v, 256);
	v = -7;
	assert_int_equal(dsv_cli_int_arg("--threads", "0", 1, 256, &v), -1);
	assert_int_equal(dsv_cli_int_arg("--threads", "257", 1, 256, &v), -1);
	assert_int_equal(dsv_cli_int_arg("--threads", "", 1, 256, &v), -1);
	assert_int_equal(dsv_cli_int_arg("--threads", "4x", 1, 256, &v), -1);
	assert_int_equal(dsv_cli_int_arg("--threads", "x", 1, 256, &v), -1);
	assert_int_equal(dsv_cli_int_arg("--threads", "99999999999999999999", 1, 256, &v), -1);
	assert_int_equal(v, -7); /* untouched on failure */
}

static void test_escaped(void **state)
{
	(void)state;
	assert_string_equal(dsv_cli_escaped("plain/name_1.npy", 1), "plain/name_1.npy");
	assert_string_equal(dsv_cli_escaped("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 1),
			    "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
	/* control characters: escaped for a terminal, kept for JSON */
	assert_string_equal(dsv_cli_escaped("a\x1b[31mb\n", 1), "a\\x1b[31mb\\x0a");
	assert_string_equal(dsv_cli_escaped("a\x1b[31mb\n", 0), "a\x1b[31mb\n");
	assert_string_equal(dsv_cli_escaped("\x7f", 1), "\\x7f");
	assert_string_equal(dsv_cli_escaped("\xc2\x85", 1), "\\xc2\\x85"); /* C1 NEL */
	assert_string_equal(dsv_cli_escaped("\xc2\x85", 0), "\xc2\x85");
	/* not UTF-8: always escaped */
	assert_string_equal(dsv_cli_escaped("\xff", 0), "\\xff");
	assert_string_equal(dsv_cli_escaped("\xc0\xaf", 0), "\\xc0\\xaf");          /* overlong */
	assert_string_equal(dsv_cli_escaped("\xed\xa0\x80", 0), "\\xed\\xa0\\x80"); /* surrogate */
	assert_string_equal(dsv_cli_escaped("\xf4\x90\x80\x80", 0), "\\xf4\\x90\\x80\\x80");
	assert_string_equal(dsv_cli_escaped("\xe2\x82", 0), "\\xe2\\x82"); /* cut short */
	assert_string_equal(dsv_cli_shown("x\ty"), "x\\x09y");
	/* results live until 8 more calls */
	const char *first = dsv_cli_escaped("first", 0);
	for (int k = 0; k < 7; k++)
		dsv_cli_escaped("other", 0);
	assert_string_equal(first, "first");
}

static void test_reason(void **state)
{
	dsv_errbuf eb;
	(void)state;
	dsv_errf_at(&eb, DSV_ERR_UNSUPPORTED, "f.h5", "/ext", "external storage refused");
	assert_string_equal(dsv_cli_reason(&eb, "f.h5", "/ext"), "external storage refused");
	assert_string_equal(dsv_cli_reason(&eb, "f.h5", "/other"),
			    "f.h5:/ext: external storage refused");
	assert_string_equal(dsv_cli_reason(&eb, "g.h5", "/ext"),
			    "f.h5:/ext: external storage refused");
	dsv_errf_at(&eb, DSV_ERR_FORMAT, "f.h5", NULL, "truncated");
	assert_string_equal(dsv_cli_reason(&eb, "f.h5", "/ext"), "truncated");
	assert_string_equal(dsv_cli_reason(&eb, "f.h5", NULL), "truncated");
	dsv_errf(&eb, DSV_ERR_NOMEM, "out of memory");
	assert_string_equal(dsv_cli_reason(&eb, "f.h5", "/ext"), "out of memory");
}

static void test_stats_pid(void **state)
{
	const char *p;
	(void)state;
	p = put_s("s1.json", "{\n  \"pid\": 1234,\n  \"backend\": \"cpu\"\n}\n");
	assert_int_equal(dsv_cli_stats_pid(p), 1234);
	/* the top-level member, not the first "pid" in the text */
	static const char nested[] =
		"{\"views\": {\"pid\": 5, \"note\": \"\\\"pid\\\": 6\"}, \"pid\": 77}";
	p = put("s2.json", nested, sizeof(nested) - 1);
	assert_int_equal(dsv_cli_stats_pid(p), 77);
	p = put_s("s3.json", "{\"pid\": \"12\"}");
	assert_int_equal(dsv_cli_stats_pid(p), 0);
	p = put_s("s4.json", "{\"pid\": -3}");
	assert_int_equal(dsv_cli_stats_pid(p), 0);
	p = put_s("s5.json", "{\"pid\": 12"); /* cut short */
	assert_int_equal(dsv_cli_stats_pid(p), 0);
	p = put_s("s6.json", "[1234]");
	assert_int_equal(dsv_cli_stats_pid(p), 0);
	assert_int_equal(dsv_cli_stats_pid(in_dir("none.json")), 0);
}

static void test_same_file(void **state)
{
	dsv_source_info a = { .path = "f.h5", .dataset = "/x" }, b = a;
	(void)state;
	assert_true(dsv_source_same_file(&a, &b));
	b.dataset = "/y";
	assert_false(dsv_source_same_file(&a, &b));
	b.dataset = NULL;
	assert_false(dsv_source_same_file(&a, &b));
	a.dataset = NULL;
	assert_true(dsv_source_same_file(&a, &b));
	b.path = "g.h5";
	assert_false(dsv_source_same_file(&a, &b));
}

/* Runs cmd on the NULL-terminated words with stdout and stderr silenced.
 * optind = 0 as the commands set it themselves: GNU getopt restarts. */
static int run(int (*cmd)(int, char **), ...)
{
	char *argv[32];
	int argc = 0, rc, out = dup(1), err = dup(2), null = open("/dev/null", O_WRONLY);
	va_list ap;

	va_start(ap, cmd);
	while (argc < 31 && (argv[argc] = va_arg(ap, char *)))
		argc++;
	va_end(ap);
	argv[argc] = NULL;
	fflush(stdout);
	fflush(stderr);
	dup2(null, 1);
	dup2(null, 2);
	optind = 0;
	rc = cmd(argc, argv);
	fflush(stdout);
	fflush(stderr);
	dup2(out, 1);
	dup2(err, 2);
	close(out);
	close(err);
	close(null);
	return rc;
}

static void test_info_options(void **state)
{
	const char *npy = put("opt.npy", "x", 1);
	(void)state;
	assert_int_equal(run(dsv_cmd_info, "info", NULL), EXIT_USER);
	assert_int_equal(run(dsv_cmd_info, "info", "--bogus", npy, NULL), EXIT_USER);
	assert_int_equal(run(dsv_cmd_info, "info", npy, npy, NULL), EXIT_USER);
	/* the old spellings: --dtype is the output's, --shape is --source-shape */
	assert_int_equal(run(dsv_cmd_info, "info", "--dtype", "uint8", npy, NULL), EXIT_USER);
	assert_int_equal(run(dsv_cmd_info, "info", "--shape", "4", npy, NULL), EXIT_USER);
	assert_int_equal(run(dsv_cmd_info, "info", "--dtype", "uint8", "--source-dtype", "uint8",
			     "--source-shape", "4", npy, NULL),
			 EXIT_USER);
	assert_int_equal(run(dsv_cmd_info, "info", "--source-dtype", "uint8", npy, NULL),
			 EXIT_USER);
	assert_int_equal(run(dsv_cmd_info, "info", "--source-shape", "4", npy, NULL), EXIT_USER);
	assert_int_equal(run(dsv_cmd_info, "info", "--source-offset", "4", npy, NULL), EXIT_USER);
	assert_int_equal(run(dsv_cmd_info, "info", "--source-dtype", "bfloat16", "--source-shape",
			     "4", npy, NULL),
			 EXIT_USER);
	assert_int_equal(run(dsv_cmd_info, "info", "--source-dtype", "uint8", "--source-shape",
			     "4,0", npy, NULL),
			 EXIT_USER);
	assert_int_equal(run(dsv_cmd_info, "info", "--source-dtype", "uint8", "--source-shape",
			     "-1", "--source-offset", "-3", npy, NULL),
			 EXIT_USER);
	assert_int_equal(run(dsv_cmd_info, "info", "--source-dtype", "uint8", "--source-shape",
			     "-1", "--source-offset", "2k", npy, NULL),
			 EXIT_USER);
	assert_int_equal(run(dsv_cmd_info, "info", in_dir("missing.npy"), NULL), EXIT_USER);
	assert_int_equal(run(dsv_cmd_info, "info", "--json", "--help", NULL), EXIT_OK);
}

static void test_verify_options(void **state)
{
	(void)state;
	assert_int_equal(run(dsv_cmd_verify, "verify", NULL), EXIT_USER);
	assert_int_equal(run(dsv_cmd_verify, "verify", "--threads", "0", "x.h5", NULL), EXIT_USER);
	assert_int_equal(run(dsv_cmd_verify, "verify", "--threads", "two", "x.h5", NULL),
			 EXIT_USER);
	assert_int_equal(run(dsv_cmd_verify, "verify", "--bogus", "x.h5", NULL), EXIT_USER);
	assert_int_equal(run(dsv_cmd_verify, "verify", "a.h5", "b.h5", NULL), EXIT_USER);
	assert_int_equal(run(dsv_cmd_verify, "verify", in_dir("missing.h5"), NULL), EXIT_USER);
	assert_int_equal(run(dsv_cmd_verify, "verify", "--dtype", "uint8", "x.bin", NULL),
			 EXIT_USER);
	assert_int_equal(run(dsv_cmd_verify, "verify", "--source-dtype", "int23", "--source-shape",
			     "-1", "x.bin", NULL),
			 EXIT_USER);
	assert_int_equal(run(dsv_cmd_verify, "verify", "-h", NULL), EXIT_OK);
}

static void test_pack_options(void **state)
{
	const char *out = in_dir("out.h5");
	(void)state;
	assert_int_equal(run(dsv_cmd_pack, "pack", NULL), EXIT_USER);
	assert_int_equal(run(dsv_cmd_pack, "pack", "in.npy", NULL), EXIT_USER);
	assert_int_equal(run(dsv_cmd_pack, "pack", "--codec", "zstd", "in.npy", out, NULL),
			 EXIT_USER);
	assert_int_equal(run(dsv_cmd_pack, "pack", "--level", "0", "in.npy", out, NULL), EXIT_USER);
	assert_int_equal(run(dsv_cmd_pack, "pack", "--level", "2x", "in.npy", out, NULL),
			 EXIT_USER);
	assert_int_equal(run(dsv_cmd_pack, "pack", "--chunk-size", "0", "in.npy", out, NULL),
			 EXIT_USER);
	assert_int_equal(run(dsv_cmd_pack, "pack", "--chunk-size", "lots", "in.npy", out, NULL),
			 EXIT_USER);
	assert_int_equal(run(dsv_cmd_pack, "pack", "--threads", "257", "in.npy", out, NULL),
			 EXIT_USER);
	assert_int_equal(run(dsv_cmd_pack, "pack", "--dtype", "uint8", "in.bin", out, NULL),
			 EXIT_USER);
	assert_int_equal(
		run(dsv_cmd_pack, "pack", "--dtype", "uint8", "--shape", "4", "in.bin", out, NULL),
		EXIT_USER);
	assert_int_equal(run(dsv_cmd_pack, "pack", "--source-dtype", "nope", "--source-shape", "4",
			     "in.bin", out, NULL),
			 EXIT_USER);
	assert_int_equal(run(dsv_cmd_pack, "pack", "in.bin", out, NULL),
			 EXIT_USER); /* raw, no dtype */
	assert_int_equal(run(dsv_cmd_pack, "pack", "--help", NULL), EXIT_OK);
	assert_int_equal(access(out, F_OK), -1); /* nothing written */
}

static void test_umount_options(void **state)
{
	(void)state;
	/* no "umount" alone: it means /mnt/dsview, which may be a real mount */
	assert_int_equal(run(dsv_cmd_umount, "umount", "-q", dir, NULL), EXIT_USER);
	assert_int_equal(run(dsv_cmd_umount, "umount", dir, dir, NULL), EXIT_USER);
	assert_int_equal(run(dsv_cmd_umount, "umount", dir, NULL), EXIT_USER); /* not mounted */
	assert_int_equal(run(dsv_cmd_umount, "umount", "--help", NULL), EXIT_OK);
}

static void test_mount_options(void **state)
{
	(void)state;
	assert_int_equal(run(dsv_cmd_mount, "mount", NULL), EXIT_USER);
	assert_int_equal(run(dsv_cmd_mount, "mount", "--bogus", "a.npy", NULL), EXIT_USER);
	assert_int_equal(run(dsv_cmd_mount, "mount", "--threads", "0", "a.npy", NULL), EXIT_USER);
	assert_int_equal(run(dsv_cmd_mount, "mount", "a.npy", dir, "extra", NULL), EXIT_USER);
	assert_int_equal(run(dsv_cmd_mount, "mount", "--help", NULL), EXIT_OK);
}

static void test_size_arg(void **state)
{
	uint64_t v = 7;
	int err = dup(2), null = open("/dev/null", O_WRONLY);
	(void)state;
	dup2(null, 2);
	assert_int_equal(dsv_cli_size_arg("--x", "8K", 4096, 0, NULL, &v), 0);
	assert_int_equal(v, 8192);
	assert_int_equal(dsv_cli_size_arg("--x", "3K", 4096, 0, NULL, &v), -1); /* not rounded */
	assert_int_equal(dsv_cli_size_arg("--x", "5000", 4096, 0, NULL, &v), -1);
	assert_int_equal(dsv_cli_size_arg("--x", "2G", 1, 1ull << 30, "RAM", &v), -1);
	assert_int_equal(dsv_cli_size_arg("--x", "1G", 1, 1ull << 30, "RAM", &v), 0);
	assert_int_equal(dsv_cli_size_arg("--x", "lots", 1, 0, NULL, &v), -1);
	assert_int_equal(v, 1ull << 30); /* untouched by a failure */
	dup2(err, 2);
	close(err);
	close(null);
}

static void test_progress_fits(void **state)
{
	dsv_progress p = { .label = "pack", .unit = "rows", .total = 2371, .t0 = 0 };
	char line[256];
	(void)state;
	for (int cols = 10; cols <= 200; cols++) {
		size_t n = dsv_progress_line(&p, 1234, 8120000000ull, 3370000000ull, 10.0, cols,
					     line, sizeof(line));
		assert_int_equal(n, strlen(line));
		assert_true(n <= (size_t)cols - 1); /* never the last column: no wrap */
		if (cols >= 40)
			assert_non_null(strstr(line, "52%")); /* the percentage stays */
		if (cols >= 100)                              /* room for everything */
			assert_true(strstr(line, "[") && strstr(line, "rows") &&
				    strstr(line, "ETA") && strstr(line, "2.41x"));
	}
	dsv_progress_line(&p, 1234, 0, 0, 10.0, 0, line, sizeof(line)); /* width unknown */
	assert_non_null(strstr(line, "[##########.........."));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_target_parse),  cmocka_unit_test(test_int_arg),
		cmocka_unit_test(test_escaped),       cmocka_unit_test(test_reason),
		cmocka_unit_test(test_stats_pid),     cmocka_unit_test(test_same_file),
		cmocka_unit_test(test_info_options),  cmocka_unit_test(test_verify_options),
		cmocka_unit_test(test_pack_options),  cmocka_unit_test(test_umount_options),
		cmocka_unit_test(test_mount_options), cmocka_unit_test(test_size_arg),
		cmocka_unit_test(test_progress_fits),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
