/* Arrow IPC files: message framing, the Message, Schema, RecordBatch and
 * Footer FlatBuffers (every offset followed by fb.c), each column's
 * batches and their (compressed) buffers, then every chunk of what opens
 * read as a mount reads it. */
#include <stdlib.h>

#include "fuzz.h"
#include "formats/formats.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *path = fuzz_write("x.arrow", data, size);
	const dsv_format *f = dsv_format_named("arrow");
	char **names = NULL;
	size_t n = 0;
	dsv_errbuf eb;
	if (!f || f->list(path, &names, &n, &eb) != 0)
		return 0;
	for (size_t i = 0; i < n; i++) {
		dsv_source *s;
		if (f->open(path, names[i], &s, &eb) == 0) {
			fuzz_read_chunks(s);
			dsv_source_close(s);
		}
		free(names[i]);
	}
	free(names);
	return 0;
}
