/* BrainVision headers (.vhdr, through inih) and reads of every chunk of
 * what opens: the input is the header; its data file x.eeg beside it is
 * 960 bytes of a fixed pattern (whole samples of 1 to 6 channels of every
 * stored type, so most headers reach the reads). */
#include "formats/bv/bv.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t eeg[960];
	dsv_source *s;
	dsv_errbuf eb;
	for (size_t i = 0; i < sizeof(eeg); i++)
		eeg[i] = (uint8_t)(i * 37 + 11);
	fuzz_write("x.eeg", eeg, sizeof(eeg));
	if (dsv_source_open_bv(fuzz_write("x.vhdr", data, size), &s, &eb) == 0) {
		fuzz_read_chunks(s);
		dsv_source_close(s);
	}
	return 0;
}
