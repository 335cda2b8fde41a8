/*
 * Single-core reference speeds for the pack benchmark: LZ4 fast and LZ4HC
 * compression and LZ4 decompression of one file's bytes in chunks, through
 * dsview's own 32004 codec, on one thread. Prints one JSON object.
 *
 *   codec_bench FILE [CHUNK_BYTES] [SKIP_BYTES] [BLOCK_BYTES]
 *
 * BLOCK_BYTES: LZ4 raw bytes per block inside a chunk (0, the default: one
 * block per chunk), as `dsview pack --block-size` writes them.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dsview/codec.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	size_t chunk = argc > 2 ? strtoull(argv[2], NULL, 10) : (1u << 20);
	off_t skip = argc > 3 ? (off_t)strtoull(argv[3], NULL, 10) : 0;
	size_t block = argc > 4 ? strtoull(argv[4], NULL, 10) : 0;
	struct stat st;
	int fd = argc > 1 ? open(argv[1], O_RDONLY) : -1;

	if (fd < 0 || fstat(fd, &st) < 0 || st.st_size <= skip || chunk == 0) {
		fprintf(stderr,
			"usage: codec_bench FILE [CHUNK_BYTES] [SKIP_BYTES] [BLOCK_BYTES]\n");
		return 1;
	}
	size_t n = (size_t)(st.st_size - skip);
	char *in = malloc(n), *back = malloc(chunk);
	size_t cap = dsv_lz4_bound(chunk, block);
	size_t nchunks = (n + chunk - 1) / chunk;
	char *enc = malloc(cap * nchunks);
	size_t *encn = calloc(nchunks, sizeof(*encn));
	if (!in || !back || !enc || !encn || pread(fd, in, n, skip) != (ssize_t)n)
		return 1;

	double t, fast_s, hc_s, dec_s;
	size_t fast_out = 0, hc_out = 0;

	t = now();
	for (size_t i = 0; i < nchunks; i++) {
		size_t len = i + 1 < nchunks ? chunk : n - i * chunk;
		int64_t got = dsv_lz4_encode(enc + i * cap, cap, in + i * chunk, len, block, 9);
		if (got < 0)
			return 1;
		hc_out += (size_t)got;
	}
	hc_s = now() - t;

	t = now();
	for (size_t i = 0; i < nchunks; i++) {
		size_t len = i + 1 < nchunks ? chunk : n - i * chunk;
		int64_t got = dsv_lz4_encode_fast(enc + i * cap, cap, in + i * chunk, len, block,
						  1);
		if (got < 0)
			return 1;
		encn[i] = (size_t)got;
		fast_out += (size_t)got;
	}
	fast_s = now() - t;

	t = now();
	for (size_t i = 0; i < nchunks; i++) {
		size_t len = i + 1 < nchunks ? chunk : n - i * chunk;
		if (dsv_lz4_decode(back, chunk, enc + i * cap, encn[i]) != (int64_t)len)
			return 1;
	}
	dec_s = now() - t;

	printf("{\"bytes\": %zu, \"lz4_MBps\": %.1f, \"lz4_ratio\": %.3f, \"lz4hc_MBps\": %.1f, "
	       "\"lz4hc_ratio\": %.3f, \"decode_MBps\": %.1f}\n",
	       n, n / fast_s / 1e6, (double)n / fast_out, n / hc_s / 1e6, (double)n / hc_out,
	       n / dec_s / 1e6);
	return 0;
}
