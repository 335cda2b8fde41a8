/* NIfTI header parsing and chunk reads of whatever it accepts. */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	dsv_source *s;
	dsv_errbuf eb;
	if (dsv_source_open_nifti(fuzz_write("x.nii", data, size), &s, &eb) == 0) {
		fuzz_read_chunks(s);
		dsv_source_close(s);
	}
	return 0;
}
