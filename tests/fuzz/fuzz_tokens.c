/* Token files: the first byte picks which, the rest is the file. 0: an
 * llm.c .bin; 1: a Megatron .idx (its .bin: the next two bytes say how
 * long, zeros), as its token stream and as its documents (rows of
 * 1 + the first byte / 3 tokens, pad -1); 2: a LitData directory,
 * index.json and one chunk file split at the first NUL. Every chunk of
 * what opens is read. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"
#include "formats/formats.h"
#include "formats/tokens/tokens.h"

static void open_read(const char *fmt, const char *path)
{
	const dsv_format *f = dsv_format_named(fmt);
	dsv_source *s;
	dsv_errbuf eb;
	if (f && f->open(path, NULL, &s, &eb) == 0) {
		fuzz_read_chunks(s);
		dsv_source_close(s);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static unsigned char zeros[65536];
	if (size < 3)
		return 0;
	const uint8_t *p = data + 1;
	size_t n = size - 1;
	if (data[0] % 3 == 0) {
		open_read("llmc", fuzz_write("x.bin", p, n));
	} else if (data[0] % 3 == 1) {
		size_t bin = (size_t)(p[0] | p[1] << 8);
		fuzz_write("m.bin", zeros, bin);
		const char *idx = fuzz_write("m.idx", p + 2, n - 2);
		dsv_doc_rows rows = { .seq_len = 1u + data[0] / 3u, .pad = -1 };
		dsv_source *s;
		dsv_errbuf eb;
		open_read("megatron", idx);
		if (dsv_megatron_open_documents(idx, &rows, &s, &eb) == 0) {
			fuzz_read_chunks(s);
			dsv_source_close(s);
		}
	} else {
		const uint8_t *nul = memchr(p, 0, n);
		size_t j = nul ? (size_t)(nul - p) : n;
		char dir[256];
		snprintf(dir, sizeof(dir), "%s/lit", fuzz_dir());
		mkdir(dir, 0755);
		fuzz_write("lit/index.json", p, j);
		fuzz_write("lit/chunk-0-0.bin", nul ? nul + 1 : p, nul ? n - j - 1 : 0);
		open_read("litdata", dir);
	}
	return 0;
}
