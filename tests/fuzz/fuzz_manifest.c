/* Manifests (INI through inih, then dsview's validation of every key), in a
 * directory that holds a small .npy, a raw file, an index file (i.npy) and a
 * mean/std array (m.npy) for them to name; every view that loads is read
 * whole, in odd pieces, through the read path (windows, rows, layouts). */
#include <stdio.h>
#include <string.h>

#include "backend/backend.h"
#include "dsview/view.h"
#include "fuzz.h"
#include "read/read.h"

static int fill(void *ctx, const void *arg, uint32_t key, uint64_t chunk, void *buf, size_t size)
{
	dsv_read_job job;
	(void)ctx;
	(void)key;
	int err = dsv_read_fill(arg, chunk, buf, size, &job);
	return err || !job.v ? err : dsv_cpu_decode(job.v, job.g, buf, size, job.stream);
}

/* Every byte of every view, in pieces of 7 and then 4096 bytes. */
static void read_views(const dsv_manifest *m)
{
	static char buf[4096];
	dsv_cache *c = dsv_cache_create(1 << 20, fill, NULL);
	if (!c)
		return;
	for (size_t i = 0; i < m->nviews; i++) {
		dsv_view_info vi;
		dsv_read_info info;
		dsv_view_get_info(m->views[i], &vi);
		for (size_t piece = 7; piece <= sizeof(buf); piece += sizeof(buf) - 7)
			for (uint64_t off = 0; off < vi.nbytes && off < (1u << 20); off += piece)
				(void)dsv_read(c, NULL, m->views[i], off,
					       vi.nbytes - off < piece ? vi.nbytes - off : piece,
					       buf, 0, &info);
	}
	dsv_cache_destroy(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int ready;
	dsv_manifest *m;
	dsv_errbuf eb;
	if (!ready) {
		unsigned char px[4 * 6];
		for (size_t i = 0; i < sizeof(px); i++)
			px[i] = (unsigned char)(i * 37);
		fuzz_write_npy("a.npy", "|u1", 4, 6, px, sizeof(px));
		fuzz_write("r.bin", px, sizeof(px));
		static const double mean[6] = { 0.5, 1, -2, 3, 0.25, 7 };
		fuzz_write_npy("m.npy", "<f8", 1, 6, mean, sizeof(mean));
		/* a 1-D index file: the header by hand (fuzz_write_npy writes 2-D) */
		static const int64_t idx[5] = { 3, 0, -1, 2, 2 };
		char npy[128 + sizeof(idx)];
		int n = snprintf(npy + 10, 118,
				 "{'descr': '<i8', 'fortran_order': False, 'shape': (5,), }");
		memcpy(npy, "\x93NUMPY\x01\x00\x76\x00", 10);
		memset(npy + 10 + n, ' ', (size_t)(127 - 10 - n));
		npy[127] = '\n';
		memcpy(npy + 128, idx, sizeof(idx));
		fuzz_write("i.npy", npy, sizeof(npy));
		ready = 1;
	}
	if (dsv_manifest_load(fuzz_write("m.ini", data, size), &m, &eb) == 0) {
		read_views(m);
		dsv_manifest_free(m);
	}
	return 0;
}
