/* EEGLAB .set files: the MAT-file walk (variables, struct fields, numbers
 * and strings), and reads of every chunk of what opens, v6 or v7.3 (the
 * HDF5 library's read of the variables; the library itself is not
 * instrumented). */
#include <string.h>

#include "formats/eeglab/eeglab.h"
#include "formats/eeglab/mat5.h"
#include "fuzz.h"

typedef struct mem {
	const uint8_t *p;
	size_t n;
} mem;

static int mem_read(void *arg, void *dst, size_t n, uint64_t off)
{
	const mem *m = arg;
	if (off > m->n || n > m->n - off)
		return DSV_ERR_TRUNCATED;
	memcpy(dst, m->p + off, n);
	return 0;
}

/* The walk alone, from memory: each variable EEGLAB asks for. */
static void walk(const uint8_t *data, size_t size)
{
	static const char *const names[] = { "nbchan", "pnts", "srate", "data", "chanlocs", "EEG" };
	mem m = { data, size };
	dsv_mat mat = { mem_read, &m, size };
	dsv_mat_var v, f[4];
	dsv_errbuf eb;
	double d;
	char s[64];
	if (dsv_mat_check_header(&mat, &eb))
		return;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (dsv_mat_find(&mat, names[i], &v, &eb))
			continue;
		(void)dsv_mat_scalar(&mat, &v, &d, &eb);
		(void)dsv_mat_string(&mat, &v, s, sizeof(s), &eb);
		if (!dsv_mat_field(&mat, &v, "labels", f, v.numel < 4 ? v.numel : 4, &eb))
			(void)dsv_mat_string(&mat, &f[0], s, sizeof(s), &eb);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	dsv_source *s;
	dsv_errbuf eb;
	walk(data, size);
	/* through the registry: a MATLAB v7.3 file (HDF5) is the HDF5 folder's */
	if (dsv_source_open(fuzz_write("x.set", data, size), &s, &eb) == 0) {
		fuzz_read_chunks(s);
		dsv_source_close(s);
	}
	return 0;
}
