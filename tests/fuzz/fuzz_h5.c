/* HDF5 files: dataset listing, dsview's chunk-map resolution and checks
 * (layouts, filters, links, offsets past the end), then every chunk read as
 * a mount reads it. The HDF5 library itself is not instrumented. */
#include <stdlib.h>

#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *path = fuzz_write("x.h5", data, size);
	char **names = NULL;
	size_t n = 0;
	dsv_errbuf eb;
	if (dsv_h5_list_datasets(path, &names, &n, NULL, &eb) != 0)
		return 0;
	for (size_t i = 0; i < n; i++) {
		dsv_source *s;
		if (i < 16 && dsv_source_open_h5(path, names[i], &s, &eb) == 0) {
			fuzz_read_chunks(s);
			dsv_source_close(s);
		}
		free(names[i]);
	}
	free(names);
	return 0;
}
