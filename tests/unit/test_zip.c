/* The zip directory of .npz archives (formats/npy/zip.c), read from
 * memory: stored members, zip64 end records and extra fields, and every
 * field that points outside the file refused with the reason. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "dsview/dsview.h"
#include "fixture.h"
#include "formats/npy/zip.h"

static void le16(uint8_t *p, unsigned v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void le32(uint8_t *p, uint32_t v)
{
	le16(p, v & 0xFFFF);
	le16(p + 2, v >> 16);
}

static void le64(uint8_t *p, uint64_t v)
{
	le32(p, (uint32_t)v);
	le32(p + 4, (uint32_t)(v >> 32));
}

/* One stored member "a.npy" holding 5 bytes; zip64: the central entry's
 * sizes and offset saturated, their values in a zip64 extra field, and
 * the end record's fields saturated with a zip64 record and locator.
 * @return the zip's size. */
static size_t build(uint8_t *z, int zip64)
{
	size_t at = 0;
	memset(z, 0, 512);
	le32(z, 0x04034b50);
	le16(z + 26, 5);
	memcpy(z + 30, "a.npy", 5);
	memcpy(z + 35, "HELLO", 5);
	at = 40;
	size_t cd = at;
	le32(z + at, 0x02014b50);
	le32(z + at + 20, zip64 ? 0xFFFFFFFFu : 5);
	le32(z + at + 24, zip64 ? 0xFFFFFFFFu : 5);
	le16(z + at + 28, 5);
	le16(z + at + 30, zip64 ? 28 : 0);
	le32(z + at + 42, zip64 ? 0xFFFFFFFFu : 0);
	memcpy(z + at + 46, "a.npy", 5);
	at += 51;
	if (zip64) {
		le16(z + at, 1);
		le16(z + at + 2, 24);
		le64(z + at + 4, 5);
		le64(z + at + 12, 5);
		le64(z + at + 20, 0);
		at += 28;
	}
	size_t cd_size = at - cd;
	if (zip64) {
		size_t rec = at;
		le32(z + at, 0x06064b50);
		le64(z + at + 24, 1);
		le64(z + at + 32, 1);
		le64(z + at + 40, cd_size);
		le64(z + at + 48, cd);
		at += 56;
		le32(z + at, 0x07064b50);
		le64(z + at + 8, rec);
		le32(z + at + 16, 1);
		at += 20;
	}
	le32(z + at, 0x06054b50);
	le16(z + at + 8, 1);
	le16(z + at + 10, zip64 ? 0xFFFF : 1);
	le32(z + at + 12, zip64 ? 0xFFFFFFFFu : (uint32_t)cd_size);
	le32(z + at + 16, zip64 ? 0xFFFFFFFFu : (uint32_t)cd);
	return at + 22;
}

static void test_list_and_data(void **state)
{
	(void)state;
	for (int zip64 = 0; zip64 < 2; zip64++) {
		uint8_t z[512];
		mem m = { z, build(z, zip64) };
		dsv_zip_member *all;
		size_t n;
		uint64_t off;
		char why[128];
		assert_int_equal(dsv_zip_list(mem_read, &m, m.n, &all, &n, why, sizeof(why)), 0);
		assert_int_equal(n, 1);
		assert_string_equal(all[0].name, "a.npy");
		assert_int_equal(all[0].method, 0);
		assert_int_equal(all[0].csize, 5);
		assert_int_equal(
			dsv_zip_data_at(mem_read, &m, m.n, &all[0], &off, why, sizeof(why)), 0);
		assert_memory_equal(z + off, "HELLO", 5);
		dsv_zip_free(all, n);
	}
}

/* The zip of build(z, zip64) with bytes at `at` set to v (n of them),
 * refused at list or at data_at with why holding want. */
static void refused(int zip64, size_t at, uint32_t v, int n, int code, const char *want)
{
	uint8_t z[512];
	mem m = { z, build(z, zip64) };
	dsv_zip_member *all = NULL;
	size_t count = 0;
	uint64_t off;
	char why[128] = "";
	if (n == 2)
		le16(z + at, v);
	else if (n == 4)
		le32(z + at, v);
	else
		m.n = at; /* cut there */
	int err = dsv_zip_list(mem_read, &m, m.n, &all, &count, why, sizeof(why));
	if (!err) {
		err = dsv_zip_data_at(mem_read, &m, m.n, &all[0], &off, why, sizeof(why));
		dsv_zip_free(all, count);
	}
	assert_int_equal(err, code);
	assert_non_null(strstr(why, want));
}

static void test_refused(void **state)
{
	(void)state;
	refused(0, 0, 0, 0, DSV_ERR_FORMAT, "too short");
	refused(0, 100, 0, 0, DSV_ERR_FORMAT, "no end of central directory");
	refused(0, 91 + 16, 400, 4, DSV_ERR_TRUNCATED, "central directory lies past");
	refused(0, 91 + 10, 60000, 2, DSV_ERR_FORMAT, "size or count");
	refused(0, 40, 0x12345678, 4, DSV_ERR_FORMAT, "entry signature");
	refused(0, 40 + 28, 300, 2, DSV_ERR_FORMAT, "runs past the directory");
	refused(0, 40 + 42, 1000, 4, DSV_ERR_TRUNCATED, "local header lies past");
	refused(0, 0, 0x11111111, 4, DSV_ERR_FORMAT, "local header signature");
	refused(0, 26, 400, 2, DSV_ERR_TRUNCATED, "member data runs past");
	refused(0, 40 + 8, 1, 2, DSV_ERR_UNSUPPORTED, "encrypted");
	refused(0, 91 + 4, 1, 2, DSV_ERR_UNSUPPORTED, "multi-disk");
	refused(1, 40 + 51 + 2, 8, 2, DSV_ERR_FORMAT, "zip64 extra field");
	refused(1, 40 + 79 + 56, 0, 4, DSV_ERR_FORMAT, "locator missing");
	refused(1, 40 + 79 + 56 + 8, 7, 4, DSV_ERR_FORMAT, "record offset is invalid");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_list_and_data),
		cmocka_unit_test(test_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
