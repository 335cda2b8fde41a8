/* A Zarr v3 shard file on hostile bytes: byte 0 picks the index's place
 * (bit 0: start, else end) and checksum (bit 1: crc32c) and the inner
 * codecs (bits 2-3: bytes alone, + zstd, + gzip + crc32c, + blosc), byte 1
 * the dtype and byte order; the array is (6, 5) in shards of (4, 4) of
 * inner chunks of (2, 2), and the rest of the input is shard c/0/0 (the
 * other three are missing: the fill value). Every band is read as a mount
 * would, through the N-d grid: the shard index parser, the index cache
 * and the inner codec chain. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *inner[] = {
		"",
		", {\"name\": \"zstd\", \"configuration\": {\"level\": 0, \"checksum\": false}}",
		", {\"name\": \"gzip\", \"configuration\": {\"level\": 1}}, {\"name\": \"crc32c\"}",
		", {\"name\": \"blosc\", \"configuration\": {\"cname\": \"lz4\", \"clevel\": 5, "
		"\"shuffle\": \"shuffle\", \"typesize\": 2, \"blocksize\": 0}}",
	};
	static const char *dt[][2] = { { "uint8", "little" },
				       { "int16", "little" },
				       { "float32", "big" } };
	char dir[4200], meta[2048], path[4300];
	if (size < 2)
		return 0;
	const char **t = dt[data[1] % 3];
	snprintf(dir, sizeof(dir), "%s/s.zarr", fuzz_dir());
	mkdir(dir, 0755);
	snprintf(meta, sizeof(meta),
		 "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [6, 5], \"data_type\": "
		 "\"%s\", \"chunk_grid\": {\"name\": \"regular\", \"configuration\": "
		 "{\"chunk_shape\": [4, 4]}}, \"chunk_key_encoding\": {\"name\": \"default\"}, "
		 "\"fill_value\": 3, \"codecs\": [{\"name\": \"sharding_indexed\", "
		 "\"configuration\": {\"chunk_shape\": [2, 2], \"codecs\": [{\"name\": \"bytes\", "
		 "\"configuration\": {\"endian\": \"%s\"}}%s], \"index_codecs\": [{\"name\": "
		 "\"bytes\", \"configuration\": {\"endian\": \"little\"}}%s], \"index_location\": "
		 "\"%s\"}}]}",
		 t[0], t[1], inner[(data[0] >> 2) & 3],
		 data[0] & 2 ? ", {\"name\": \"crc32c\"}" : "", data[0] & 1 ? "start" : "end");
	snprintf(path, sizeof(path), "%s/zarr.json", dir);
	FILE *f = fopen(path, "w");
	if (!f)
		return 0;
	fputs(meta, f);
	fclose(f);
	snprintf(path, sizeof(path), "%s/c", dir);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/c/0", dir);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/c/0/0", dir);
	remove(path);
	if (size > 2 && (f = fopen(path, "wb"))) {
		fwrite(data + 2, 1, size - 2, f);
		fclose(f);
	}
	dsv_source *s;
	dsv_errbuf eb;
	if (dsv_source_open_zarr(dir, &s, &eb) == 0) {
		fuzz_read_chunks(s);
		dsv_source_close(s);
	}
	return 0;
}
