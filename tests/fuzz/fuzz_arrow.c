/* Arrow IPC files: message framing, the Message, Schema, RecordBatch and
 * Footer FlatBuffers (every offset followed by fb.c), each column's
 * batches and their (compressed) buffers, then every chunk of what opens
 * read as a mount reads it. */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_open_all("arrow", fuzz_write("x.arrow", data, size));
	return 0;
}
