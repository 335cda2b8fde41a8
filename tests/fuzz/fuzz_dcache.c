/* A disk cache entry as found on disk (src/net/disk_cache.c): the input is
 * written as block 0's entry of a fixed object, then read through the
 * cache, whole and in part. Whatever the file holds, the read succeeds
 * with the fetch's bytes or the entry's checked ones; a damaged entry is
 * dropped and fetched again. */
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "fuzz.h"
#include "net/disk_cache.h"

#define SIZE (3 * DSV_DCACHE_PAGE + 1000) /* the object: one short block of four pages */

static uint8_t truth[SIZE], out[SIZE];
static dsv_dcache_id id;
static char name[DSV_DCACHE_NAME];

static int fetch(const void *obj, void *buf, size_t n, uint64_t off)
{
	(void)obj;
	memcpy(buf, truth + off, n);
	return 0;
}

static void start(void)
{
	dsv_errbuf eb;
	dsv_log_set_level(DSV_LOG_ERROR); /* each damaged input's warning: expected */
	for (size_t i = 0; i < SIZE; i++)
		truth[i] = (uint8_t)(i * 7 + (i >> 9));
	if (dsv_dcache_id_make(&id, "https://fuzz.example/bucket/x.h5", "\"fuzz-etag\"", SIZE) ||
	    dsv_net_disk_cache(fuzz_dir(), 64u << 20, &eb))
		abort();
	dsv_dcache_entry_name(name, &id, 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int started;
	if (!started++)
		start();
	fuzz_write(name, data, size);
	if (dsv_dcache_pread(&id, "fuzz", out, SIZE, 0, fetch, NULL))
		abort();
	fuzz_write(name, data, size);
	if (dsv_dcache_pread(&id, "fuzz", out, 2 * DSV_DCACHE_PAGE, DSV_DCACHE_PAGE / 2, fetch,
			     NULL))
		abort();
	return 0;
}
