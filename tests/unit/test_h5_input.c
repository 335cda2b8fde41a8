/*
 * What dsview refuses or meets before reading an HDF5 file: external,
 * soft and user-defined links, external storage, unsupported types, files
 * that are not HDF5 at all; the integer kinds served (64-bit, enum and
 * bitfield as their base integer, either byte order).
 */
#include "h5_test.h"
#include "formats/h5/h5.h"
#include "source/source.h"

#include <signal.h>

static void test_links(void **state)
{
	uint8_t a[3] = { 1, 2, 3 };
	hsize_t dims[] = { 3 };
	(void)state;
	hid_t o = new_file("other.h5", 0);
	H5Dclose(mkds(o, "d", H5T_STD_U8LE, 1, dims, NULL, H5P_DEFAULT));
	hid_t g = H5Gcreate2(o, "g", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
	H5Dclose(mkds(g, "d", H5T_STD_U8LE, 1, dims, NULL, H5P_DEFAULT));
	H5Gclose(g);
	H5Fclose(o);

	hid_t f = new_file("links.h5", 0);
	hid_t d = mkds(f, "real", H5T_STD_U8LE, 1, dims, NULL, H5P_DEFAULT);
	H5Dwrite(d, H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, a);
	H5Dclose(d);
	g = H5Gcreate2(f, "grp", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
	d = mkds(g, "real2", H5T_STD_U8LE, 1, dims, NULL, H5P_DEFAULT);
	H5Dwrite(d, H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, a);
	H5Dclose(d);
	H5Lcreate_soft("real2", g, "rel", H5P_DEFAULT, H5P_DEFAULT);
	H5Gclose(g);
	/* Relative to this file's directory, as most external links are. */
	H5Lcreate_external("other.h5", "/d", f, "ext", H5P_DEFAULT, H5P_DEFAULT);
	H5Lcreate_external("other.h5", "/g", f, "extg", H5P_DEFAULT, H5P_DEFAULT);
	H5Lcreate_soft("/ext", f, "soft_ext", H5P_DEFAULT, H5P_DEFAULT);
	H5Lcreate_soft("/extg", f, "soft_extg", H5P_DEFAULT, H5P_DEFAULT);
	H5Lcreate_soft("/real", f, "soft_ok", H5P_DEFAULT, H5P_DEFAULT);
	H5Lcreate_soft("/loop2", f, "loop1", H5P_DEFAULT, H5P_DEFAULT);
	H5Lcreate_soft("/loop1", f, "loop2", H5P_DEFAULT, H5P_DEFAULT);
	H5Fclose(f);

	assert_int_equal(open_err("links.h5", "/ext", "external link refused"),
			 DSV_ERR_UNSUPPORTED);
	assert_int_equal(open_err("links.h5", "/extg/d", "external link refused"),
			 DSV_ERR_UNSUPPORTED);
	assert_int_equal(open_err("links.h5", "/soft_ext", "external link refused"),
			 DSV_ERR_UNSUPPORTED);
	assert_int_equal(open_err("links.h5", "/soft_extg/d", "external link refused"),
			 DSV_ERR_UNSUPPORTED);
	assert_true(open_err("links.h5", "/loop1", NULL) < 0);
	assert_int_equal(open_err("links.h5", "/nope", "no such dataset"), DSV_ERR_NOTFOUND);
	assert_int_equal(open_err("links.h5", "/grp/nope", "no such dataset"), DSV_ERR_NOTFOUND);
	assert_int_equal(open_err("links.h5", "/grp", "not a dataset"), DSV_ERR_INVALID);

	static const char *ok[] = { "/real", "/soft_ok", "/grp/real2", "/grp/rel" };
	for (int i = 0; i < 4; i++) {
		dsv_source *s = open_ok("links.h5", ok[i]);
		assert_int_equal(dsv_source_fallback_band(s), 0); /* not a fallback */
		read_check(s, a, sizeof(a));
		dsv_source_close(s);
	}

	/* Listing: hard-linked datasets only, nothing from other.h5. */
	char p[256], **names;
	size_t n, skipped[2];
	dsv_errbuf eb;
	assert_int_equal(
		dsv_h5_list_datasets(tpath(p, sizeof(p), "links.h5"), &names, &n, skipped, &eb), 0);
	assert_int_equal(n, 2);
	assert_int_equal(skipped[0], 6); /* rel, soft_ext, soft_extg, soft_ok, loop1, loop2 */
	assert_int_equal(skipped[1], 2); /* ext, extg */
	assert_string_equal(names[0], "/grp/real2");
	assert_string_equal(names[1], "/real");
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

static void test_external_storage_refused(void **state)
{
	hsize_t dims[] = { 100 };
	(void)state;
	hid_t f = new_file("extstore.h5", 0);
	hid_t p = H5Pcreate(H5P_DATASET_CREATE);
	assert_int_equal(H5Pset_external(p, "/etc/passwd", 0, 100), 0);
	H5Dclose(mkds(f, "x", H5T_STD_U8LE, 1, dims, NULL, p));
	H5Pclose(p);
	H5Fclose(f);
	assert_int_equal(open_err("extstore.h5", "/x", "external storage refused"),
			 DSV_ERR_UNSUPPORTED);
}

static void test_unsupported_types(void **state)
{
	hsize_t dims[] = { 4 };
	(void)state;
	hid_t f = new_file("types.h5", 0);
	hid_t str = H5Tcopy(H5T_C_S1);
	H5Tset_size(str, 8);
	H5Dclose(mkds(f, "str", str, 1, dims, NULL, H5P_DEFAULT));
	H5Tclose(str);
	H5Dclose(mkds(f, "opaque", H5T_NATIVE_OPAQUE, 1, dims, NULL, H5P_DEFAULT));
	H5Dclose(mkds(f, "ldouble", H5T_NATIVE_LDOUBLE, 1, dims, NULL, H5P_DEFAULT));
	hid_t vl = H5Tvlen_create(H5T_NATIVE_INT);
	H5Dclose(mkds(f, "vlen", vl, 1, dims, NULL, H5P_DEFAULT));
	H5Tclose(vl);
	H5Dclose(mkds(f, "ref", H5T_STD_REF_OBJ, 1, dims, NULL, H5P_DEFAULT));
	hid_t ben = H5Tenum_create(H5T_STD_I64LE);
	int64_t v64 = 0;
	H5Tenum_insert(ben, "zero", &v64);
	hid_t arr = H5Tarray_create2(H5T_NATIVE_INT, 1, (hsize_t[]){ 2 });
	H5Dclose(mkds(f, "array", arr, 1, dims, NULL, H5P_DEFAULT));
	H5Tclose(arr);
	H5Tclose(ben);
	hid_t cmp = H5Tcreate(H5T_COMPOUND, 8);
	H5Tinsert(cmp, "a", 0, H5T_STD_I32LE);
	H5Tinsert(cmp, "b", 4, H5T_IEEE_F32LE);
	H5Dclose(mkds(f, "cmp", cmp, 1, dims, NULL, H5P_DEFAULT));
	H5Tclose(cmp);
	hid_t en = H5Tenum_create(H5T_NATIVE_INT);
	int v = 0;
	H5Tenum_insert(en, "zero", &v);
	H5Tclose(en);
	/* bfloat16 spelled as an HDF5 float: must not pass for float16 */
	hid_t bf = H5Tcopy(H5T_IEEE_F32LE);
	H5Tset_fields(bf, 15, 7, 8, 0, 7);
	H5Tset_precision(bf, 16);
	H5Tset_size(bf, 2);
	H5Dclose(mkds(f, "bf16", bf, 1, dims, NULL, H5P_DEFAULT));
	H5Tclose(bf);
	hid_t sc = H5Screate(H5S_SCALAR);
	H5Dclose(H5Dcreate2(f, "scalar", H5T_STD_I32LE, sc, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
	H5Sclose(sc);
	hid_t nul = H5Screate(H5S_NULL);
	H5Dclose(H5Dcreate2(f, "null", H5T_STD_I32LE, nul, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
	H5Sclose(nul);
	H5Fclose(f);

	assert_int_equal(open_err("types.h5", "/str", "string"), DSV_ERR_UNSUPPORTED);
	assert_int_equal(open_err("types.h5", "/cmp", "compound"), DSV_ERR_UNSUPPORTED);
	assert_int_equal(open_err("types.h5", "/opaque", "opaque"), DSV_ERR_UNSUPPORTED);
	assert_int_equal(open_err("types.h5", "/ldouble", "long double"), DSV_ERR_UNSUPPORTED);
	assert_int_equal(open_err("types.h5", "/vlen", "variable-length"), DSV_ERR_UNSUPPORTED);
	assert_int_equal(open_err("types.h5", "/ref", "reference"), DSV_ERR_UNSUPPORTED);
	assert_int_equal(open_err("types.h5", "/array", "array"), DSV_ERR_UNSUPPORTED);
	assert_int_equal(open_err("types.h5", "/bf16", "not IEEE half"), DSV_ERR_UNSUPPORTED);
	assert_int_equal(open_err("types.h5", "/scalar", "scalar"), DSV_ERR_UNSUPPORTED);
	assert_int_equal(open_err("types.h5", "/null", NULL), DSV_ERR_UNSUPPORTED);
}

/* Writes name as file type ftype from values of memory type mtype. */
static void mk_written(hid_t f, const char *name, hid_t ftype, hid_t mtype, hsize_t n,
		       const void *vals)
{
	hsize_t dims[] = { n };
	hid_t d = mkds(f, name, ftype, 1, dims, NULL, H5P_DEFAULT);
	assert_true(H5Dwrite(d, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, vals) >= 0);
	H5Dclose(d);
}

/* Reads name and checks dtype, fast path or fallback, and the bytes. */
static void check_int_kind(const char *name, dsv_dtype dt, int fallback, const void *want,
			   size_t nbytes)
{
	dsv_source *s = open_ok("ints.h5", name);
	const dsv_source_info *in = dsv_source_get_info(s);
	if (in->dtype != dt)
		fail_msg("%s: dtype %s, want %s", name, dsv_dtype_name(in->dtype),
			 dsv_dtype_name(dt));
	if ((in->kind == DSV_SRC_H5_FALLBACK) != fallback)
		fail_msg("%s: kind %s (%s)", name, dsv_source_kind_name(in->kind),
			 in->why ? in->why : "");
	read_check(s, want, nbytes);
	dsv_source_close(s);
}

static void test_integer_kinds(void **state)
{
	static const int64_t i64[4] = { INT64_MIN, -1, (1ll << 53) + 1, INT64_MAX };
	static const uint64_t u64[4] = { 0, 1, (1ull << 63) + 1, UINT64_MAX };
	static const int16_t i16[4] = { -32768, -1, 7, 32767 };
	static const uint32_t u32[4] = { 0, 1, 0xdeadbeefu, UINT32_MAX };
	static const uint16_t u16[4] = { 0, 1, 0xbeefu, UINT16_MAX };
	(void)state;
	hid_t f = new_file("ints.h5", 0);
	mk_written(f, "i64", H5T_STD_I64LE, H5T_NATIVE_INT64, 4, i64);
	mk_written(f, "i64be", H5T_STD_I64BE, H5T_NATIVE_INT64, 4, i64);
	mk_written(f, "u64", H5T_STD_U64LE, H5T_NATIVE_UINT64, 4, u64);
	mk_written(f, "u64be", H5T_STD_U64BE, H5T_NATIVE_UINT64, 4, u64);

	/* enums: values are the base integer's */
	hid_t en = H5Tenum_create(H5T_STD_I16LE), enm = H5Tenum_create(H5T_NATIVE_INT16);
	for (int i = 0; i < 4; i++) {
		char nm[8];
		snprintf(nm, sizeof(nm), "v%d", i);
		H5Tenum_insert(en, nm, &i16[i]);
		H5Tenum_insert(enm, nm, &i16[i]);
	}
	mk_written(f, "enum16", en, enm, 4, i16);
	H5Tclose(en);
	hid_t ebe = H5Tenum_create(H5T_STD_U64BE), ebem = H5Tenum_create(H5T_NATIVE_UINT64);
	for (int i = 0; i < 4; i++) {
		char nm[8];
		snprintf(nm, sizeof(nm), "v%d", i);
		uint64_t be;
		memcpy(&be, &u64[i], 8);
		be = __builtin_bswap64(be);
		H5Tenum_insert(ebe, nm, &be); /* values in the base type's byte order */
		H5Tenum_insert(ebem, nm, &u64[i]);
	}
	mk_written(f, "enum64be", ebe, ebem, 4, u64);
	H5Tclose(ebe);
	H5Tclose(ebem);
	H5Tclose(enm);

	/* bitfields: the unsigned integer of their size */
	mk_written(f, "bits32", H5T_STD_B32LE, H5T_STD_B32LE, 4, u32);
	mk_written(f, "bits16be", H5T_STD_B16BE, H5T_STD_B16LE, 4, u16);
	mk_written(f, "bits64be", H5T_STD_B64BE, H5T_STD_B64LE, 4, u64);
	H5Fclose(f);

	check_int_kind("/i64", DSV_I64, 0, i64, sizeof(i64));
	check_int_kind("/i64be", DSV_I64, 1, i64, sizeof(i64));
	check_int_kind("/u64", DSV_U64, 0, u64, sizeof(u64));
	check_int_kind("/u64be", DSV_U64, 1, u64, sizeof(u64));
	check_int_kind("/enum16", DSV_I16, 0, i16, sizeof(i16));
	check_int_kind("/enum64be", DSV_U64, 1, u64, sizeof(u64));
	check_int_kind("/bits32", DSV_U32, 0, u32, sizeof(u32));
	check_int_kind("/bits16be", DSV_U16, 1, u16, sizeof(u16));
	check_int_kind("/bits64be", DSV_U64, 1, u64, sizeof(u64));
}

static void test_bad_files(void **state)
{
	char p[256];
	dsv_source *s = NULL;
	dsv_errbuf eb;
	char **names;
	size_t n;
	(void)state;
	assert_int_equal(open_err("missing.h5", "/x", NULL), DSV_ERR_NOTFOUND);
	FILE *f = fopen(tpath(p, sizeof(p), "text.h5"), "w");
	fputs("not hdf5 at all\n", f);
	fclose(f);
	assert_int_equal(open_err("text.h5", "/x", "not an HDF5 file"), DSV_ERR_FORMAT);
	assert_int_equal(dsv_h5_list_datasets(p, &names, &n, NULL, &eb), DSV_ERR_FORMAT);
	assert_int_equal(
		dsv_h5_list_datasets(tpath(p, sizeof(p), "missing.h5"), &names, &n, NULL, &eb),
		DSV_ERR_NOTFOUND);
	assert_int_equal(dsv_source_open_h5(p, "", &s, &eb), DSV_ERR_INVALID);
	assert_null(s);
}

static void probe_nothing(const char *path)
{
	(void)path;
}

static void probe_crash(const char *path)
{
	(void)path;
	raise(SIGSEGV);
}

/* Leaves 0xff bytes where the probe's locals will be, so a status it
 * never received reads as a death by signal, not as a lucky 0. */
static void __attribute__((noinline)) dirty_stack(void)
{
	volatile unsigned char junk[8192];
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = 0xff;
}

/* A process that ignores SIGCHLD has its children reaped for it, and
 * waitpid fails with ECHILD: the probe cannot know how its child ended.
 * That is not evidence of damage (and must not be remembered as a
 * verdict on the file): the file is opened unprobed, as when fork fails. */
static void test_probe_when_waitpid_fails(void **state)
{
	char p[256];
	dsv_errbuf eb = { 0 };
	hsize_t dims[] = { 4 };
	uint8_t a[4] = { 1, 2, 3, 4 };
	(void)state;
	hid_t f = new_file("waitpid.h5", 0);
	hid_t d = mkds(f, "x", H5T_STD_U8LE, 1, dims, NULL, H5P_DEFAULT);
	assert_int_equal(H5Dwrite(d, H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, a), 0);
	H5Dclose(d);
	H5Fclose(f);
	tpath(p, sizeof(p), "waitpid.h5");

	void (*old)(int) = signal(SIGCHLD, SIG_IGN);
	dirty_stack();
	int err = dsv_h5_check_input(p, probe_nothing, &eb);
	signal(SIGCHLD, old);
	if (err)
		fail_msg("probe with SIGCHLD ignored: %d %s", err, eb.msg);
	/* Not remembered: a probe that can wait still meets the crash. */
	assert_int_equal(dsv_h5_check_input(p, probe_crash, &eb), DSV_ERR_FORMAT);
	assert_non_null(strstr(eb.reason, "damaged HDF5 file"));
}

/* Crashes on the files whose names hold "bad", as the library does on a
 * damaged file. */
static void probe_crash_bad(const char *path)
{
	if (strstr(path, "bad"))
		raise(SIGSEGV);
}

/* Many files probed by batch children: the sound ones remembered as
 * sound (a crashing probe is not run on them again), each that crashed
 * remembered as damaged (a sound probe is not run on it again), and the
 * files after a crash probed too. */
static void test_probe_many(void **state)
{
	static const char *names[] = { "m0.h5",    "m1.h5", "m2bad.h5", "m3.h5",
				       "m4bad.h5", "m5.h5", "m6.h5" };
	enum { N = sizeof(names) / sizeof(names[0]) };
	char paths[N][256], *ps[N];
	dsv_errbuf eb = { 0 };
	(void)state;

	for (int i = 0; i < N; i++) {
		H5Fclose(new_file(names[i], 0));
		ps[i] = (char *)tpath(paths[i], sizeof(paths[i]), names[i]);
	}
	dsv_h5_probe_many(ps, N, probe_crash_bad);
	for (int i = 0; i < N; i++) {
		int bad = strstr(names[i], "bad") != NULL;
		int err = dsv_h5_check_input(ps[i], bad ? probe_nothing : probe_crash, &eb);
		if (bad) {
			assert_int_equal(err, DSV_ERR_FORMAT);
			assert_non_null(strstr(eb.reason, "damaged HDF5 file"));
		} else if (err) {
			fail_msg("%s: probed again after the batch: %s", names[i], eb.msg);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_links),
		cmocka_unit_test(test_external_storage_refused),
		cmocka_unit_test(test_unsupported_types),
		cmocka_unit_test(test_integer_kinds),
		cmocka_unit_test(test_bad_files),
		cmocka_unit_test(test_probe_when_waitpid_fails),
		cmocka_unit_test(test_probe_many),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
