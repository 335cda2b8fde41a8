/* .npz archives: the zip directory (end records, zip64, central entries),
 * each member's local header and embedded .npy header, then every chunk
 * of what opens read as a mount reads it. */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_open_all("npz", fuzz_write("x.npz", data, size));
	return 0;
}
