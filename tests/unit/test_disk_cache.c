/* The disk cache of objects' stored bytes (src/net/disk_cache.c): the
 * entry format and its checks, the least-recently-used order, and reads
 * through a real directory with a fetch that counts its calls in place of
 * the GETs. What needs a server is in tests/e2e/test_s3_cache.py. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "net/disk_cache.h"

#define BLOCK DSV_DCACHE_BLOCK
#define OBJ_SIZE (3 * BLOCK + 12345) /* three whole blocks and a short one */

static char dir[] = "/tmp/dsv-test-dcache-XXXXXX";
static uint8_t *object; /* what the fake store holds */

typedef struct fake {
	const uint8_t *bytes;
	int calls, fail;
	uint64_t fetched;
} fake;

static int fake_fetch(const void *obj, void *buf, size_t n, uint64_t off)
{
	fake *f = (fake *)obj;
	f->calls++;
	if (f->fail)
		return DSV_ERR_IO;
	memcpy(buf, f->bytes + off, n);
	f->fetched += n;
	return 0;
}

static void empty_dir(void)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char p[4096];
	while ((e = readdir(d)))
		if (e->d_name[0] != '.' || !strcmp(e->d_name, ".lock")) {
			snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
			unlink(p);
		}
	closedir(d);
}

static int count_entries(void)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;
	while ((e = readdir(d)))
		n += strlen(e->d_name) > 32 && e->d_name[32] == '-';
	closedir(d);
	return n;
}

static int setup(void **state)
{
	(void)state;
	if (!mkdtemp(dir) || !(object = malloc(OBJ_SIZE)))
		return -1;
	for (size_t i = 0; i < OBJ_SIZE; i++)
		object[i] = (uint8_t)(i * 2654435761u >> 13);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	dsv_net_disk_cache(NULL, 0, NULL);
	empty_dir();
	rmdir(dir);
	free(object);
	return 0;
}

static int fresh(void **state)
{
	dsv_errbuf eb;
	(void)state;
	empty_dir();
	return dsv_net_disk_cache(dir, 64u << 20, &eb);
}

static void make_id(dsv_dcache_id *id, const char *etag)
{
	assert_int_equal(dsv_dcache_id_make(id, "https://h/b/k?X-Amz-Signature=s", etag, OBJ_SIZE),
			 0);
}

static void stats(dsv_net_stats *st)
{
	memset(st, 0, sizeof(*st));
	dsv_net_get_stats(st);
}

static void test_entry_format(void **state)
{
	dsv_dcache_id id, other, plain;
	uint8_t hdr[DSV_DCACHE_HEADER];
	const char *why = NULL;
	(void)state;
	make_id(&id, "\"v1\"");
	make_id(&other, "\"v2\"");
	/* the query (a presigned signature) is not part of the identity */
	assert_int_equal(dsv_dcache_id_make(&plain, "https://h/b/k", "\"v1\"", OBJ_SIZE), 0);
	assert_memory_equal(plain.url_hash, id.url_hash, 32);
	assert_string_equal(plain.stem, id.stem);
	assert_string_not_equal(other.stem, id.stem); /* a new version: new names */

	dsv_dcache_entry_header(hdr, &id, BLOCK, BLOCK, object + BLOCK);
	assert_int_equal(dsv_dcache_entry_check(hdr, &id, BLOCK, BLOCK, &why), 0);
	assert_int_equal(dsv_dcache_pages_check(hdr, BLOCK, 0, DSV_DCACHE_PAGES, object + BLOCK),
			 0);
	assert_int_equal(dsv_dcache_entry_check(hdr, &other, BLOCK, BLOCK, &why), DSV_ERR_CORRUPT);
	assert_string_equal(why, "it is of another object or version");
	assert_int_equal(dsv_dcache_entry_check(hdr, &id, 0, BLOCK, &why), DSV_ERR_CORRUPT);
	assert_string_equal(why, "it holds another block");
	assert_int_equal(dsv_dcache_entry_check(hdr, &id, BLOCK, BLOCK - 1, &why), DSV_ERR_CORRUPT);
	/* one bit anywhere in the header */
	hdr[DSV_DCACHE_HEADER / 3] ^= 4;
	assert_int_equal(dsv_dcache_entry_check(hdr, &id, BLOCK, BLOCK, &why), DSV_ERR_CORRUPT);
	assert_string_equal(why, "its header's checksum is wrong");
	hdr[DSV_DCACHE_HEADER / 3] ^= 4;
	hdr[0] ^= 1;
	assert_int_equal(dsv_dcache_entry_check(hdr, &id, BLOCK, BLOCK, &why), DSV_ERR_CORRUPT);
	assert_string_equal(why, "not an entry of this version");
	hdr[0] ^= 1;

	/* one bit in the data: the page holding it fails, the others pass */
	uint8_t *copy = malloc(BLOCK);
	memcpy(copy, object + BLOCK, BLOCK);
	copy[5 * DSV_DCACHE_PAGE + 17] ^= 0x80;
	assert_int_equal(dsv_dcache_pages_check(hdr, BLOCK, 0, 5, copy), 0);
	assert_int_equal(dsv_dcache_pages_check(hdr, BLOCK, 5, 1, copy + 5 * DSV_DCACHE_PAGE),
			 DSV_ERR_CHECKSUM);
	free(copy);

	/* the short last block: its last page is short too */
	uint32_t tail = OBJ_SIZE - 3 * BLOCK;
	dsv_dcache_entry_header(hdr, &id, 3 * BLOCK, tail, object + 3 * BLOCK);
	assert_int_equal(dsv_dcache_entry_check(hdr, &id, 3 * BLOCK, tail, &why), 0);
	assert_int_equal(dsv_dcache_pages_check(hdr, tail, 0, 1, object + 3 * BLOCK), 0);

	char name[DSV_DCACHE_NAME];
	dsv_dcache_entry_name(name, &id, 3);
	assert_int_equal(strlen(name), 32 + 1 + 8);
	assert_memory_equal(name, id.stem, 32);
	assert_string_equal(name + 32, "-00000003");
}

static void test_victims_oldest_first(void **state)
{
	dsv_dcache_ent e[4] = {
		{ "c", 100, { 30, 0 } },
		{ "a", 100, { 10, 5 } },
		{ "d", 100, { 30, 1 } },
		{ "b", 100, { 10, 9 } },
	};
	(void)state;
	/* 400 bytes down to 250: the two oldest go */
	assert_int_equal(dsv_dcache_victims(e, 4, 400, 250), 2);
	assert_string_equal(e[0].name, "a");
	assert_string_equal(e[1].name, "b");
	assert_string_equal(e[2].name, "c");
	assert_string_equal(e[3].name, "d");
	assert_int_equal(dsv_dcache_victims(e, 4, 400, 400), 0);
	assert_int_equal(dsv_dcache_victims(e, 4, 400, 0), 4);
}

static void test_second_read_hits(void **state)
{
	dsv_dcache_id id;
	fake f = { .bytes = object };
	dsv_net_stats a, b;
	uint8_t *buf = malloc(OBJ_SIZE);
	(void)state;
	make_id(&id, "\"v1\"");
	stats(&a);
	/* a read across three blocks: one GET of the three, whole */
	uint64_t off = BLOCK / 2, n = 2 * BLOCK;
	assert_int_equal(dsv_dcache_pread(&id, "obj", buf, n, off, fake_fetch, &f), 0);
	assert_memory_equal(buf, object + off, n);
	assert_int_equal(f.calls, 1);
	assert_int_equal(f.fetched, 3 * BLOCK);
	assert_int_equal(count_entries(), 3);
	/* again, and a part of it: no fetch */
	memset(buf, 0, n);
	assert_int_equal(dsv_dcache_pread(&id, "obj", buf, n, off, fake_fetch, &f), 0);
	assert_memory_equal(buf, object + off, n);
	assert_int_equal(dsv_dcache_pread(&id, "obj", buf, 100, BLOCK + 7, fake_fetch, &f), 0);
	assert_memory_equal(buf, object + BLOCK + 7, 100);
	assert_int_equal(f.calls, 1);
	/* the whole object: only the short last block is fetched */
	assert_int_equal(dsv_dcache_pread(&id, "obj", buf, OBJ_SIZE, 0, fake_fetch, &f), 0);
	assert_memory_equal(buf, object, OBJ_SIZE);
	assert_int_equal(f.calls, 2);
	assert_int_equal(f.fetched, OBJ_SIZE);
	stats(&b);
	assert_int_equal(b.disk_misses - a.disk_misses, 4);
	assert_int_equal(b.disk_hits - a.disk_hits, 3 + 1 + 3);
	assert_int_equal(b.disk_bytes - a.disk_bytes, n + 100 + 3 * BLOCK);
	assert_int_equal(b.disk_used, 4 * DSV_DCACHE_HEADER + OBJ_SIZE);

	/* another version of the object finds none of it */
	make_id(&id, "\"v2\"");
	assert_int_equal(dsv_dcache_pread(&id, "obj", buf, 100, 0, fake_fetch, &f), 0);
	assert_int_equal(f.calls, 3);
	free(buf);
}

static void test_survives_remount(void **state)
{
	dsv_dcache_id id;
	fake f = { .bytes = object };
	dsv_net_stats st;
	dsv_errbuf eb;
	uint8_t *buf = malloc(OBJ_SIZE);
	(void)state;
	make_id(&id, "\"v1\"");
	assert_int_equal(dsv_dcache_pread(&id, "obj", buf, OBJ_SIZE, 0, fake_fetch, &f), 0);
	assert_int_equal(dsv_net_disk_cache(NULL, 0, &eb), 0);
	assert_int_equal(dsv_net_disk_cache(dir, 64u << 20, &eb), 0);
	stats(&st);
	assert_int_equal(st.disk_used, 4 * DSV_DCACHE_HEADER + OBJ_SIZE); /* counted at start */
	assert_int_equal(dsv_dcache_pread(&id, "obj", buf, OBJ_SIZE, 0, fake_fetch, &f), 0);
	assert_memory_equal(buf, object, OBJ_SIZE);
	assert_int_equal(f.calls, 1);
	/* a smaller size at the next start evicts down to it */
	assert_int_equal(dsv_net_disk_cache(dir, 2 * BLOCK, &eb), 0);
	stats(&st);
	assert_true(st.disk_used <= 2 * BLOCK);
	assert_true(count_entries() < 4);
	free(buf);
}

static void test_size_evicts_least_recent(void **state)
{
	dsv_dcache_id id;
	fake f = { .bytes = object };
	dsv_errbuf eb;
	dsv_net_stats a, b;
	uint8_t buf[64];
	char p[4096], name[DSV_DCACHE_NAME];
	(void)state;
	/* room for two and a half entries; the low mark (90%) keeps two */
	assert_int_equal(dsv_net_disk_cache(dir, 2 * (BLOCK + DSV_DCACHE_HEADER) + BLOCK / 2, &eb),
			 0);
	make_id(&id, "\"v1\"");
	stats(&a);
	for (int blk = 0; blk < 2; blk++) {
		assert_int_equal(dsv_dcache_pread(&id, "obj", buf, 64, (uint64_t)blk * BLOCK,
						  fake_fetch, &f),
				 0);
		usleep(20000); /* mtimes apart */
	}
	/* block 0 used again (long ago by its mtime: a hit touches it), so
	 * block 1 is now the least recent */
	dsv_dcache_entry_name(name, &id, 0);
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	struct timespec old[2] = { { 1, 0 }, { 1, 0 } };
	assert_int_equal(utimensat(AT_FDCWD, p, old, 0), 0);
	assert_int_equal(dsv_dcache_pread(&id, "obj", buf, 64, 0, fake_fetch, &f), 0);
	assert_int_equal(f.calls, 2);
	usleep(20000);
	/* a third entry: over the size, the least recent goes */
	assert_int_equal(dsv_dcache_pread(&id, "obj", buf, 64, 2 * BLOCK, fake_fetch, &f), 0);
	stats(&b);
	assert_int_equal(b.disk_evictions - a.disk_evictions, 1);
	assert_int_equal(count_entries(), 2);
	assert_int_equal(b.disk_used, 2 * (BLOCK + DSV_DCACHE_HEADER));
	assert_int_equal(dsv_dcache_pread(&id, "obj", buf, 64, 0, fake_fetch, &f), 0);
	assert_int_equal(dsv_dcache_pread(&id, "obj", buf, 64, 2 * BLOCK, fake_fetch, &f), 0);
	assert_int_equal(f.calls, 3); /* 0 and 2 kept */
	assert_int_equal(dsv_dcache_pread(&id, "obj", buf, 64, BLOCK, fake_fetch, &f), 0);
	assert_memory_equal(buf, object + BLOCK, 64);
	assert_int_equal(f.calls, 4); /* 1 was evicted */
}

/* Damages block 1's entry with how, then reads it: dropped, fetched
 * again, the right bytes, one more corrupt count. */
static void read_damaged(void (*how)(int fd))
{
	dsv_dcache_id id;
	fake f = { .bytes = object };
	dsv_net_stats a, b;
	uint8_t *buf = malloc(BLOCK);
	char p[4096], name[DSV_DCACHE_NAME];
	make_id(&id, "\"v1\"");
	assert_int_equal(dsv_dcache_pread(&id, "obj", buf, BLOCK, BLOCK, fake_fetch, &f), 0);
	dsv_dcache_entry_name(name, &id, 1);
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	int fd = open(p, O_RDWR);
	assert_true(fd >= 0);
	how(fd);
	close(fd);
	stats(&a);
	memset(buf, 0, BLOCK);
	assert_int_equal(dsv_dcache_pread(&id, "obj", buf, BLOCK, BLOCK, fake_fetch, &f), 0);
	assert_memory_equal(buf, object + BLOCK, BLOCK);
	assert_int_equal(f.calls, 2);
	stats(&b);
	assert_int_equal(b.disk_corrupt - a.disk_corrupt, 1);
	/* written again whole: the next read hits */
	assert_int_equal(dsv_dcache_pread(&id, "obj", buf, BLOCK, BLOCK, fake_fetch, &f), 0);
	assert_memory_equal(buf, object + BLOCK, BLOCK);
	assert_int_equal(f.calls, 2);
	free(buf);
}

static void flip_data(int fd)
{
	uint8_t c;
	off_t at = DSV_DCACHE_HEADER + 3 * DSV_DCACHE_PAGE + 99;
	assert_int_equal(pread(fd, &c, 1, at), 1);
	c ^= 0x10;
	assert_int_equal(pwrite(fd, &c, 1, at), 1);
}

static void flip_header(int fd)
{
	uint8_t c;
	assert_int_equal(pread(fd, &c, 1, 100), 1);
	c ^= 1;
	assert_int_equal(pwrite(fd, &c, 1, 100), 1);
}

static void cut_short(int fd)
{
	assert_int_equal(ftruncate(fd, DSV_DCACHE_HEADER + BLOCK / 2), 0);
}

static void test_damaged_data_refetched(void **state)
{
	(void)state;
	read_damaged(flip_data);
}

static void test_damaged_header_refetched(void **state)
{
	(void)state;
	read_damaged(flip_header);
}

static void test_truncated_refetched(void **state)
{
	(void)state;
	read_damaged(cut_short);
}

static void test_fetch_failure(void **state)
{
	dsv_dcache_id id;
	fake f = { .bytes = object, .fail = 1 };
	uint8_t buf[64];
	(void)state;
	make_id(&id, "\"v1\"");
	assert_int_equal(dsv_dcache_pread(&id, "obj", buf, 64, 0, fake_fetch, &f), DSV_ERR_IO);
	assert_int_equal(count_entries(), 0);
	f.fail = 0;
	assert_int_equal(dsv_dcache_pread(&id, "obj", buf, 64, 0, fake_fetch, &f), 0);
	assert_memory_equal(buf, object, 64);
}

static void test_bad_dir(void **state)
{
	dsv_errbuf eb;
	(void)state;
	assert_int_equal(dsv_net_disk_cache("/nonexistent-dsv/x/y", 1 << 20, &eb), DSV_ERR_IO);
	assert_non_null(strstr(eb.msg, "/nonexistent-dsv/x/y"));
	assert_false(dsv_dcache_on());
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_entry_format),
		cmocka_unit_test(test_victims_oldest_first),
		cmocka_unit_test_setup(test_second_read_hits, fresh),
		cmocka_unit_test_setup(test_survives_remount, fresh),
		cmocka_unit_test_setup(test_size_evicts_least_recent, fresh),
		cmocka_unit_test_setup(test_damaged_data_refetched, fresh),
		cmocka_unit_test_setup(test_damaged_header_refetched, fresh),
		cmocka_unit_test_setup(test_truncated_refetched, fresh),
		cmocka_unit_test_setup(test_fetch_failure, fresh),
		cmocka_unit_test(test_bad_dir),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
