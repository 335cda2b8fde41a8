/* HDF5 files: dataset listing, dsview's chunk-map resolution and checks
 * (layouts, filters, links, offsets past the end; a virtual dataset's
 * mappings and their parts), then every chunk read as a mount reads it.
 * The HDF5 library itself is not instrumented. */
#include <stdlib.h>

#include "fuzz.h"
#include "formats/h5/h5_vds.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *path = fuzz_write("x.h5", data, size);
	char **names = NULL;
	size_t n = 0;
	dsv_errbuf eb;
	if (dsv_h5_list_datasets(path, &names, &n, NULL, &eb) != 0)
		return 0;
	for (size_t i = 0; i < n; i++) {
		dsv_source **parts;
		size_t np;
		if (i < 16 && dsv_h5_open_parts(path, names[i], &parts, &np, &eb) == 0) {
			for (size_t k = 0; k < np; k++)
				fuzz_read_chunks(parts[k]);
			dsv_h5_close_parts(parts, np);
		}
		free(names[i]);
	}
	free(names);
	return 0;
}
