/* Zarr metadata: the first byte picks the format (odd: v3 zarr.json, even:
 * v2 .zarray), the rest is the text. Whatever parses gets the chunk keys of
 * its first and last chunks, and its attributes and axis names (for as many
 * axes as the first byte's next three bits say). */
#include <stdlib.h>

#include "fuzz.h"
#include "formats/zarr/zarr.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	dsv_zarr_meta m;
	dsv_errbuf eb;
	char key[1024], *attrs, *dims;
	uint64_t idx[DSV_MAX_DIMS] = { 0 };
	if (size < 1)
		return 0;
	int version = data[0] & 1 ? 3 : 2;
	const char *text = (const char *)data + 1;
	if (dsv_zarr_parse(text, size - 1, version, &m, &eb) == 0) {
		(void)dsv_zarr_chunk_key(&m, idx, key, sizeof(key));
		for (int k = 0; k < m.ndim; k++)
			idx[k] = m.grid[k] ? m.grid[k] - 1 : 0;
		(void)dsv_zarr_chunk_key(&m, idx, key, sizeof(key));
	}
	if (dsv_zarr_attrs(text, size - 1, version, data[0] >> 1 & 7, &attrs, &dims, &eb) == 0) {
		free(attrs);
		free(dims);
	}
	return 0;
}
