/* Manifests (INI through inih, then dsview's validation of every key), in a
 * directory that holds a small .npy, a raw file, an index file (i.npy) and a
 * mean/std array (m.npy) for them to name; every view that loads is read
 * whole, in odd pieces, through the read path (windows, rows, layouts). */
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "dsview/view.h"
#include "engine/engine.h"
#include "fuzz.h"

/* Every byte of every view through the engine (it takes m), in pieces of
 * 7 and then 4096 bytes. */
static void read_views(dsv_manifest *m)
{
	static char buf[4096];
	dsv_engine_opts o = { .cache_size = 1 << 20, .gpu = "off" };
	dsv_engine *e;
	if (dsv_engine_new(m, &o, &e, NULL)) {
		dsv_manifest_free(m);
		return;
	}
	if (dsv_engine_start(e, NULL, NULL) == 0)
		for (size_t i = 0; i < dsv_engine_nviews(e); i++) {
			uint32_t file = DSV_ENGINE_FILE(i, 0);
			uint64_t nbytes = dsv_engine_file_size(e, file);
			for (size_t piece = 7; piece <= sizeof(buf); piece += sizeof(buf) - 7)
				for (uint64_t off = 0; off < nbytes && off < (1u << 20);
				     off += piece)
					(void)dsv_engine_read(
						e, file, off,
						nbytes - off < piece ? nbytes - off : piece, buf);
		}
	dsv_engine_free(e);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int ready;
	dsv_manifest *m;
	dsv_errbuf eb;
	if (!ready) {
		unsigned char px[4 * 6];
		dsv_log_set_level(DSV_LOG_WARN); /* not the backend's line for every input */
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
		read_views(m); /* and frees it */
	}
	return 0;
}
