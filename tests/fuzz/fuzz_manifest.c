/* Manifests (INI through inih, then dsview's validation of every key), in a
 * directory that holds a small .npy and a raw file for them to name. */
#include <string.h>

#include "dsview/view.h"
#include "fuzz.h"

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
		ready = 1;
	}
	if (dsv_manifest_load(fuzz_write("m.ini", data, size), &m, &eb) == 0)
		dsv_manifest_free(m);
	return 0;
}
