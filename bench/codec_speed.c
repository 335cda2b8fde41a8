/*
 * Single-core speeds of every codec `dsview pack` writes, through dsview's
 * own encoders and decoders (src/pack/codecs.c: the ones pack and the read
 * path call), on one file's bytes cut into chunks. One line of JSON per
 * codec and level:
 *
 *   codec_speed FILE ELEM_BYTES CHUNK_BYTES [REPEAT] [CODEC:LEVEL ...]
 *
 * ELEM_BYTES: the dtype's size (Blosc's type size, bitshuffle's element).
 * Without CODEC:LEVEL arguments, the list below. Every chunk is encoded
 * once (timed) and decoded REPEAT times (default 3, best pass timed), and
 * checked against its input. ratio: raw / (encoded + 4), the 4 being the
 * Fletcher32 trailer every store chunk carries. The last chunk holds the
 * rest of the file (pack pads it with zeros to a whole chunk, which costs
 * a few bytes more).
 * bench/codec_table.py runs this over the survey's data sets.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dsview/pack.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static const char *const default_list[] = {
	"none:0",
	"lz4:1",
	"lz4hc:9",
	"zstd:1",
	"zstd:3",
	"zstd:6",
	"zstd:9",
	"zstd:12",
	"zstd:15",
	"zstd:19",
	"blosc-lz4-noshuffle:5",
	"blosc-lz4-shuffle:5",
	"blosc-lz4-bitshuffle:5",
	"blosc-zstd-noshuffle:5",
	"blosc-zstd-shuffle:3",
	"blosc-zstd-shuffle:4",
	"blosc-zstd-shuffle:5",
	"blosc-zstd-bitshuffle:5",
	"bitshuffle-lz4:0",
	"bitshuffle-zstd:3",
	NULL,
};

static int one(const char *spec, const char *in, size_t total, size_t chunk, size_t elem,
	       int repeat)
{
	char name[64];
	const char *colon = strchr(spec, ':');
	dsv_pack_codec c;
	int level = colon ? atoi(colon + 1) : -1;
	size_t len = colon ? (size_t)(colon - spec) : strlen(spec);

	if (len >= sizeof(name))
		return 1;
	memcpy(name, spec, len);
	name[len] = '\0';
	if (dsv_pack_codec_by_name(name, &c) || c == DSV_PACK_AUTO) {
		fprintf(stderr, "codec_speed: unknown codec %s\n", name);
		return 1;
	}
	const dsv_pack_codec_info *info = dsv_pack_codec_get(c);
	if (level < 0 || info->max_level == 0)
		level = info->default_level;
	/* LZ4 in blocks of 16 KiB, pack's default --block-size */
	size_t block = info->lz4_blocks ? (16u << 10) : 0;
	size_t cap = dsv_pack_codec_bound(c, chunk, block, elem);
	size_t nchunks = (total + chunk - 1) / chunk;
	char *enc = malloc(cap * nchunks), *back = malloc(chunk);
	size_t *encn = calloc(nchunks, sizeof(*encn)), stored = 0;
#define LEN(i) ((i) + 1 < nchunks ? chunk : total - (i)*chunk)
	if (!enc || !back || !encn)
		return 1;

	double t = now();
	for (size_t i = 0; i < nchunks; i++) {
		int64_t got = dsv_pack_codec_encode(c, level, enc + i * cap, cap, in + i * chunk,
						    LEN(i), block, elem);
		if (got < 0) {
			fprintf(stderr, "codec_speed: %s encode failed\n", spec);
			return 1;
		}
		encn[i] = (size_t)got;
		stored += (size_t)got + 4;
	}
	double enc_s = now() - t, dec_s = 1e30;
	for (int r = 0; r < repeat; r++) {
		t = now();
		for (size_t i = 0; i < nchunks; i++)
			if (dsv_pack_codec_decode(c, back, LEN(i), enc + i * cap, encn[i], elem) !=
			    (int64_t)LEN(i))
				return 1;
		t = now() - t;
		dec_s = t < dec_s ? t : dec_s;
	}
	for (size_t i = 0; i < nchunks; i++)
		if (dsv_pack_codec_decode(c, back, LEN(i), enc + i * cap, encn[i], elem) !=
			    (int64_t)LEN(i) ||
		    memcmp(back, in + i * chunk, LEN(i))) {
			fprintf(stderr, "codec_speed: %s round trip differs\n", spec);
			return 1;
		}
	double raw = (double)total;
	printf("{\"codec\": \"%s\", \"level\": %d, \"ratio\": %.3f, \"encode_MBps\": %.1f, "
	       "\"decode_GBps\": %.3f, \"float32_out_GBps\": %.3f}\n",
	       name, level, raw / (double)stored, raw / enc_s / 1e6, raw / dec_s / 1e9,
	       raw / dec_s / 1e9 * 4.0 / (double)elem);
	fflush(stdout);
	free(enc);
	free(back);
	free(encn);
	return 0;
#undef LEN
}

int main(int argc, char **argv)
{
	size_t elem = argc > 2 ? strtoull(argv[2], NULL, 10) : 0;
	size_t chunk = argc > 3 ? strtoull(argv[3], NULL, 10) : 0;
	int repeat = argc > 4 ? atoi(argv[4]) : 3;
	struct stat st;
	int fd = argc > 1 ? open(argv[1], O_RDONLY) : -1;

	if (fd < 0 || fstat(fd, &st) < 0 || elem == 0 || chunk == 0 || chunk % elem ||
	    (size_t)st.st_size < chunk || repeat < 1) {
		fprintf(stderr, "usage: codec_speed FILE ELEM_BYTES CHUNK_BYTES [REPEAT] "
				"[CODEC:LEVEL ...]\n");
		return 1;
	}
	size_t total = (size_t)st.st_size - (size_t)st.st_size % elem;
	char *in = malloc(total);
	if (!in || pread(fd, in, total, 0) != (ssize_t)total)
		return 1;
	if (argc > 5) {
		for (int k = 5; k < argc; k++)
			if (one(argv[k], in, total, chunk, elem, repeat))
				return 1;
	} else {
		for (int k = 0; default_list[k]; k++)
			if (one(default_list[k], in, total, chunk, elem, repeat))
				return 1;
	}
	return 0;
}
