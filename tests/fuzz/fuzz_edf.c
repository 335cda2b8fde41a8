/* EDF/BDF header parsing, and reads of every chunk of what it accepts:
 * the samples gathered from the data records. The first byte picks the
 * file's name (.edf or .bdf), as a mount would see it. */
#include "formats/edf/edf.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	dsv_edf_hdr h;
	dsv_source *s;
	dsv_errbuf eb;

	if (size < 1)
		return 0;
	(void)dsv_edf_parse(data + 1, size - 1, size - 1, &h, &eb);
	dsv_edf_hdr_free(&h);
	const char *name = data[0] & 1 ? "x.bdf" : "x.edf";
	if (dsv_source_open_edf(fuzz_write(name, data + 1, size - 1), &s, &eb) == 0) {
		fuzz_read_chunks(s);
		dsv_source_close(s);
	}
	return 0;
}
