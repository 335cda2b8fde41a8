/* The index cache's file (source/index.c) and the saved states of its
 * sources, all untrusted bytes read back at a mount. The first byte's
 * low three bits choose: 1, a .npy's saved state (index_flat.c); 2, a
 * chunked source's (index_chunks.c); 3, an HDF5 dataset's entry
 * (h5_index.c: a flat or chunked layout, its path, attributes and axis
 * names); 4, an EDF/BDF recording's (edf_index.c): each made into a
 * source of a real file and read, a chunked one and a recording saved
 * again to the same bytes. Else the rest is an index file, parsed; one
 * that parses is looked up, written out again and must parse again. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "formats/edf/edf.h"
#include "formats/h5/h5_src.h"
#include "fuzz.h"
#include "source/index.h"

#define WHAT "/fuzz/m.ini"

static void index_file(const uint8_t *data, size_t size)
{
	dsv_index *ix = dsv_index_new(WHAT), *again;
	unsigned char *copy = malloc(size ? size : 1), *out;
	const dsv_index_stamp st = { 152, 1700000000000000000ull, 7, 2049 };
	const void *blob;
	size_t len, olen;
	const char *why;

	if (!ix || !copy) {
		free(copy);
		dsv_index_free(ix);
		return;
	}
	memcpy(copy, data, size);
	if (dsv_index_parse(ix, copy, size, &why) == 0) {
		(void)dsv_index_find(ix, "/fuzz/a.npy", 11, &st, "npy", &blob, &len);
		(void)dsv_index_add(ix, "/fuzz/new.npy", 13, &st, "npy", "x", 1);
		if (dsv_index_serialize(ix, &out, &olen) == 0) {
			if ((again = dsv_index_new(WHAT)) &&
			    dsv_index_parse(again, out, olen, &why))
				abort(); /* what was written must read back */
			dsv_index_free(again);
		}
	}
	dsv_index_free(ix);
}

static void flat_state(const uint8_t *data, size_t size)
{
	static const int16_t elems[12] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12 };
	const char *path = fuzz_write_npy("f.npy", "<i2", 3, 4, elems, sizeof(elems));
	struct stat fs;
	dsv_index_stamp st;
	dsv_source *s;
	dsv_errbuf eb;

	if (stat(path, &fs))
		return;
	dsv_index_stamp_of(&fs, &st);
	if (dsv_index_load_flat(path, NULL, data, size, &st, DSV_SRC_NPY, &s, &eb) == 0) {
		fuzz_read_chunks(s);
		dsv_source_close(s);
	}
}

/* The file a chunked state's chunks are read from: 256 bytes, byte i
 * of value i. */
static const char *chunk_file(dsv_index_stamp *st)
{
	unsigned char bytes[256];
	struct stat fs;
	for (int i = 0; i < 256; i++)
		bytes[i] = (unsigned char)i;
	const char *path = fuzz_write("c.h5", bytes, sizeof(bytes));
	if (!path || stat(path, &fs))
		return NULL;
	dsv_index_stamp_of(&fs, st);
	return path;
}

static void chunked_state(const uint8_t *data, size_t size)
{
	dsv_index_stamp st;
	const char *path = chunk_file(&st);
	dsv_index_buf again = { 0 };
	dsv_source *s;
	dsv_errbuf eb;

	if (!path ||
	    dsv_index_load_chunked(path, "/x", data, size, &st, DSV_SRC_H5_CHUNKED, &s, &eb))
		return;
	fuzz_read_chunks(s);
	if (dsv_index_save_chunked(s, &again) == 0 &&
	    (again.len != size || memcmp(again.p, data, size)))
		abort(); /* what loaded must save back as it was */
	free(again.p);
	dsv_source_close(s);
}

static void h5_entry(const uint8_t *data, size_t size)
{
	dsv_index_stamp st;
	const char *path = chunk_file(&st);
	dsv_source *s;
	dsv_errbuf eb;

	if (path && dsv_h5_index_load(path, "/x", data, size, &st, &s, &eb) == 0) {
		fuzz_read_chunks(s);
		dsv_source_close(s);
	}
}

/* A recording's entry, for a file of 512 + 200 * 18 bytes (one EDF
 * signal of 100 samples a record: 18 records). */
static void edf_entry(const uint8_t *data, size_t size)
{
	static unsigned char bytes[512 + 200 * 18];
	dsv_index_buf again = { 0 };
	struct stat fs;
	dsv_index_stamp st;
	dsv_source *s;
	dsv_errbuf eb;

	for (size_t i = 0; i < sizeof(bytes); i++)
		bytes[i] = (unsigned char)(i * 7);
	const char *path = fuzz_write("r.edf", bytes, sizeof(bytes));
	if (!path || stat(path, &fs))
		return;
	dsv_index_stamp_of(&fs, &st);
	if (dsv_edf_index_load(path, NULL, data, size, &st, &s, &eb))
		return;
	fuzz_read_chunks(s);
	if (dsv_edf_index_save(s, &again) == 0 &&
	    (again.len != size || memcmp(again.p, data, size)))
		abort(); /* what loaded must save back as it was */
	free(again.p);
	dsv_source_close(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	switch (data[0] & 7) {
	case 1: flat_state(data + 1, size - 1); break;
	case 2: chunked_state(data + 1, size - 1); break;
	case 3: h5_entry(data + 1, size - 1); break;
	case 4: edf_entry(data + 1, size - 1); break;
	default: index_file(data + 1, size - 1); break;
	}
	return 0;
}
