/* The index cache's file (source/index.c) and the saved states of its
 * sources, all untrusted bytes read back at a mount. The first byte's
 * low three bits choose: 1, a .npy's saved state (index_flat.c); 2, a
 * chunked source's (index_chunks.c); 3, an HDF5 dataset's entry
 * (h5_index.c: a flat or chunked layout, its path, attributes and axis
 * names); 4, an EDF/BDF recording's (edf_index.c); 5, an llm.c
 * file's token run and 6, a Megatron index's (tokens_index.c), the
 * stamp they hold (bytes 32 to 63) set to their real file's: each made
 * into a source of a real file and read, a chunked one, a recording and
 * a token run saved again to the same bytes. Else the rest is an index file, parsed; one
 * that parses is looked up, written out again and must parse again. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "formats/edf/edf.h"
#include "formats/h5/h5_src.h"
#include "formats/tokens/tokens.h"
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

/* Reads every chunk of s, loaded from blob, then saves it back with save:
 * what loaded must save as it was (aborts otherwise). Closes s. */
static void read_and_save_back(dsv_source *s, int (*save)(const dsv_source *, dsv_index_buf *),
			       const void *blob, size_t size)
{
	dsv_index_buf again = { 0 };

	fuzz_read_chunks(s);
	if (save(s, &again) == 0 && (again.len != size || memcmp(again.p, blob, size)))
		abort(); /* what loaded must save back as it was */
	free(again.p);
	dsv_source_close(s);
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
	dsv_source *s;
	dsv_errbuf eb;

	if (!path ||
	    dsv_index_load_chunked(path, "/x", data, size, &st, DSV_SRC_H5_CHUNKED, &s, &eb))
		return;
	read_and_save_back(s, dsv_index_save_chunked, data, size);
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
	read_and_save_back(s, dsv_edf_index_save, data, size);
}

/* A token run's entry for path (whose run is in file run): its stamp
 * set to run's, loaded by load, read and saved back. */
static void token_entry(const uint8_t *data, size_t size, const char *path, const char *run,
			int (*load)(const char *, const char *, const void *, size_t,
				    const dsv_index_stamp *, dsv_source **, dsv_errbuf *))
{
	unsigned char *copy = malloc(size ? size : 1);
	struct stat fs, rs;
	dsv_index_stamp st, rst;
	dsv_source *s;
	dsv_errbuf eb;

	if (!copy || stat(path, &fs) || stat(run, &rs)) {
		free(copy);
		return;
	}
	dsv_index_stamp_of(&fs, &st);
	dsv_index_stamp_of(&rs, &rst);
	memcpy(copy, data, size);
	if (size >= 64) {
		const uint64_t v[4] = { rst.size, rst.mtime_ns, rst.ino, rst.dev };
		for (int k = 0; k < 32; k++)
			copy[32 + k] = (unsigned char)(v[k / 8] >> (8 * (k % 8)));
	}
	if (load(path, NULL, copy, size, &st, &s, &eb) == 0)
		read_and_save_back(s, dsv_tokens_index_save, copy, size);
	free(copy);
}

/* An llm.c file of 50 GPT-2 tokens; a Megatron .idx beside a .bin of
 * 100 bytes (the .idx itself is not read by the load). */
static void token_files(const uint8_t *data, size_t size, int megatron)
{
	static unsigned char bytes[1024 + 100];
	const uint32_t head[3] = { 20240520u, 1, 50 };
	memcpy(bytes, head, sizeof(head));
	for (size_t i = 1024; i < sizeof(bytes); i++)
		bytes[i] = (unsigned char)i;
	if (!megatron) {
		const char *p = fuzz_write("t.bin", bytes, sizeof(bytes));
		char path[512];
		if (p && snprintf(path, sizeof(path), "%s", p) < (int)sizeof(path))
			token_entry(data, size, path, path, dsv_llmc_index_load);
		return;
	}
	const char *b = fuzz_write("m.bin", bytes + 1024, 100);
	char bin[512], idx[512];
	if (!b || snprintf(bin, sizeof(bin), "%s", b) >= (int)sizeof(bin))
		return;
	const char *i = fuzz_write("m.idx", "MMIDIDX", 7);
	if (i && snprintf(idx, sizeof(idx), "%s", i) < (int)sizeof(idx))
		token_entry(data, size, idx, bin, dsv_meg_index_load);
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
	case 5: token_files(data + 1, size - 1, 0); break;
	case 6: token_files(data + 1, size - 1, 1); break;
	default: index_file(data + 1, size - 1); break;
	}
	return 0;
}
