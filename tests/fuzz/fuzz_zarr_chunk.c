/* A Zarr array's chunk files on hostile bytes: byte 0 picks the compressor
 * (none, blosc, zstd, lz4, zlib, gzip), byte 1 the dtype and byte order and
 * byte 2 the order (C/F); the array is (6, 5) in chunks of (4, 3), so the
 * input, split in four, is its four chunk files (0.0, 0.1, 1.0, 1.1; an
 * empty part is a missing file: the fill value). Every band is read as a
 * mount would, through the N-d grid. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *comp[] = { "null",
				      "{\"id\": \"blosc\"}",
				      "{\"id\": \"zstd\"}",
				      "{\"id\": \"lz4\"}",
				      "{\"id\": \"zlib\"}",
				      "{\"id\": \"gzip\"}" };
	static const char *dt[] = { "|u1", "<i2", ">i2", "<f4", ">f8", "<u8" };
	static const char *keys[] = { "0.0", "0.1", "1.0", "1.1" };
	char dir[4200], meta[512], path[4300];
	if (size < 3)
		return 0;
	snprintf(dir, sizeof(dir), "%s/a.zarr", fuzz_dir());
	mkdir(dir, 0755);
	snprintf(meta, sizeof(meta),
		 "{\"zarr_format\": 2, \"shape\": [6, 5], \"chunks\": [4, 3], \"dtype\": \"%s\", "
		 "\"compressor\": %s, \"fill_value\": 3, \"filters\": null, \"order\": \"%s\"}",
		 dt[data[1] % 6], comp[data[0] % 6], data[2] & 1 ? "F" : "C");
	snprintf(path, sizeof(path), "%s/.zarray", dir);
	FILE *f = fopen(path, "w");
	if (!f)
		return 0;
	fputs(meta, f);
	fclose(f);
	data += 3;
	size -= 3;
	for (size_t k = 0, part = size / 4; k < 4; k++) {
		size_t n = k < 3 ? part : size - 3 * part;
		snprintf(path, sizeof(path), "%s/%s", dir, keys[k]);
		remove(path);
		if (n && (f = fopen(path, "wb"))) {
			fwrite(data + k * part, 1, n, f);
			fclose(f);
		}
	}
	dsv_source *s;
	dsv_errbuf eb;
	if (dsv_source_open_zarr(dir, &s, &eb) == 0) {
		fuzz_read_chunks(s);
		dsv_source_close(s);
	}
	return 0;
}
