/*
 * dsview pack: writes a store (docs/packing.md), a standard
 * HDF5 file holding one dataset chunked along axis 0 (whole rows per
 * chunk), with the filter pipeline codec then Fletcher32, in the source's
 * dtype, little-endian. The codec is LZ4 (32004) unless opts say another
 * (dsv_pack_codec: zstd 32015, Blosc 32001, bitshuffle 32008, none, or
 * auto, which measures them). Each LZ4 chunk is several independent LZ4
 * blocks (the framing's block size), and a block table (dsview/h5info.h,
 * DSV_STORE_BLOCKS; written by src/pack/table.c) gives each block's stored
 * size and checksum, so that a reader reads, checks and decodes only the
 * blocks a request covers.
 *
 * Chunks are compressed by worker threads and written in order by one
 * writer through HDF5's direct chunk write. Memory is bounded: at most
 * 2 x threads chunks are in flight, whatever the input size. The output is
 * written to "OUTPUT.tmp-PID-XXXXXX" (created with O_EXCL), fsynced, renamed
 * over OUTPUT and the directory fsynced; any failure or interruption
 * removes the temporary and leaves OUTPUT as it was.
 *
 * The dataset carries one string attribute, DSV_STORE_ATTR, holding JSON:
 *   {"format": "dsview-store", "format_version": 1, "dsview_version": "0.1.0",
 *    "source": "<input as given>", "source_kind": "npy", "dtype": "uint8",
 *    "shape": [...], "codec": "lz4", "level": 0, "chunk_rows": 64,
 *    "chunk_bytes": 1048576, "block_bytes": 12544, "raw_bytes": N,
 *    "fletcher32": true, "block_table": "/.dsview/NAME"}
 * (codec: dsv_pack_codec_info.name, the one chosen for auto; level: 0 for
 * codecs without; block_bytes: LZ4 stores only; block_table: those of
 * several blocks a chunk; "scale" and "offset": an input with a scaling of
 * its own, a NIfTI image's scl_slope and scl_inter, which the store's
 * source applies as the image's did)
 * Its presence is what makes an HDF5 dataset a dsview store (info, verify).
 *
 * Thread safety: dsv_pack runs one pack at a time per process (it takes the
 * HDF5 lock around every library call; other threads may read sources).
 */
#ifndef DSVIEW_PACK_H
#define DSVIEW_PACK_H

#include <signal.h>
#include <stdint.h>

#include "dsview/dsview.h"
#include "dsview/h5info.h" /* DSV_STORE_ATTR */
#include "dsview/source.h" /* dsv_raw_layout */

#define DSV_STORE_FORMAT "dsview-store"
#define DSV_STORE_FORMAT_VERSION 1
#define DSV_PACK_DEFAULT_CHUNK (1u << 20)
/* Codecs decoded a chunk at a time (zstd, Blosc, bitshuffle): a shuffled
 * row decodes its whole chunk, so their chunks are smaller (docs/packing.md). */
#define DSV_PACK_DEFAULT_WHOLE_CHUNK (256u << 10)
/* HDF5 caps a chunk at 4 GiB - 1 and LZ4 a block at about 2 GiB; chunks
 * stay at or below 1 GiB (one LZ4 block, the plugin's default size). */
#define DSV_PACK_MAX_CHUNK (1ull << 30)

/* LZ4 raw bytes per block that --block-size asks for (the default, and
 * the bounds it accepts); dsv_pack_block_bytes fits it to the rows. */
#define DSV_PACK_DEFAULT_BLOCK \
	(16u << 10) /* bench/block_bench.py: docs/benchmarks/lz4-block-size.md */
#define DSV_PACK_MIN_BLOCK (4u << 10)
#define DSV_PACK_MAX_BLOCK DSV_PACK_MAX_CHUNK

/* The block size a store of rows of row_bytes in chunks of chunk_bytes
 * gets for a wanted size: the chunk when want >= chunk_bytes; else whole
 * rows when a row fits in want (as many as fit); else an exact fraction of
 * a row, the largest not over want and at least want / 2, when the row
 * divides so (a shuffled row then decodes exactly its own blocks); else
 * want. */
uint64_t dsv_pack_block_bytes(uint64_t row_bytes, uint64_t chunk_bytes, uint64_t want);

/* The codecs pack writes (src/pack/codecs.c), each as hdf5plugin writes
 * it: the filter id and cd_values it leaves in the file, the chunk bytes
 * its encoder makes. Fletcher32 follows every one. */
typedef enum dsv_pack_codec {
	DSV_PACK_LZ4 = 0,   /* 32004, LZ4 fast, --level = acceleration (1 default) */
	DSV_PACK_LZ4HC = 1, /* 32004, LZ4HC, --level 1..12 (9 default) */
	DSV_PACK_NONE = 2,  /* uncompressed rows, Fletcher32 only */
	DSV_PACK_ZSTD,      /* 32015, one frame per chunk, --level 1..22 */
	/* 32001 Blosc, one thread, Blosc's automatic block size, clevel 1..9
	 * (5 default, as hdf5plugin): inner codec x shuffle */
	DSV_PACK_BLOSC_LZ4,
	DSV_PACK_BLOSC_LZ4_SHUFFLE,
	DSV_PACK_BLOSC_LZ4_BITSHUFFLE,
	DSV_PACK_BLOSC_ZSTD,
	DSV_PACK_BLOSC_ZSTD_SHUFFLE,
	DSV_PACK_BLOSC_ZSTD_BITSHUFFLE,
	/* 32008 bitshuffle, its default block: LZ4 (no level), zstd 1..22 */
	DSV_PACK_BSHUF_LZ4,
	DSV_PACK_BSHUF_ZSTD,
	DSV_PACK_NCODECS,
	/* Not a codec: dsv_pack samples chunks and picks one (auto.c). */
	DSV_PACK_AUTO = DSV_PACK_NCODECS,
} dsv_pack_codec;

typedef struct dsv_pack_codec_info {
	const char *name; /* as --codec takes it: "zstd", "blosc-lz4-shuffle" */
	unsigned filter;  /* HDF5 filter id; 0: none */
	int min_level, max_level, default_level; /* no levels: all 0 */
	int lz4_blocks; /* chunks are 32004 blocks (--block-size applies) */
} dsv_pack_codec_info;

/* The codec's description, or NULL (DSV_PACK_AUTO and beyond). */
const dsv_pack_codec_info *dsv_pack_codec_get(dsv_pack_codec c);

/* The codec named name ("auto" included). @return 0 or DSV_ERR_INVALID. */
int dsv_pack_codec_by_name(const char *name, dsv_pack_codec *c);

/* Every name --codec takes, comma-separated, for messages. */
const char *dsv_pack_codec_names(void);

/* 0 if level suits c (-1: the default, always), else DSV_ERR_INVALID
 * with the one-line reason in eb ("zstd: --level must be 1 to 22"). */
int dsv_pack_level_check(dsv_pack_codec c, int level, dsv_errbuf *eb);

/* Worst-case encoded size of raw bytes (no Fletcher32 trailer); block:
 * LZ4 raw bytes per block; elem: the dtype's size. SIZE_MAX: impossible. */
size_t dsv_pack_codec_bound(dsv_pack_codec c, size_t raw, size_t block, size_t elem);

/* Encodes a chunk as the codec's filter would store it. level: resolved
 * (not -1). @return the encoded size or a negative dsv_err. */
int64_t dsv_pack_codec_encode(dsv_pack_codec c, int level, void *dst, size_t cap, const void *src,
			      size_t raw, size_t block, size_t elem);

/* Decodes one encoded chunk of exactly raw bytes with dsview's own decoder
 * (the read path's: dsv_lz4_decode, dsv_zstd_decode, ...). @return raw or
 * a negative dsv_err. */
int64_t dsv_pack_codec_decode(dsv_pack_codec c, void *dst, size_t raw, const void *src, size_t n,
			      size_t elem);

/* The filter's cd_values as hdf5plugin leaves them in a file, for a chunk
 * of chunk_bytes. @return how many (at most 8; 0 for none). */
size_t dsv_pack_codec_cd(dsv_pack_codec c, int level, size_t elem, uint64_t chunk_bytes,
			 uint64_t block, unsigned cd[8]);

typedef struct dsv_pack_progress {
	uint64_t rows_done, rows_total;
	uint64_t raw_bytes;    /* input bytes packed so far */
	uint64_t stored_bytes; /* chunk bytes written so far */
} dsv_pack_progress;

typedef struct dsv_pack_opts {
	const char *input;   /* "x.npy", "x.h5:/dset", or a raw file */
	const char *output;  /* final path */
	const char *dataset; /* dataset name in the store; NULL: input's base name */
	/* a raw input: its layout (raw.dtype DSV_DTYPE_INVALID: not raw) */
	dsv_raw_layout raw;
	uint64_t chunk_bytes; /* 0: DSV_PACK_DEFAULT_CHUNK; rounded to whole rows */
	dsv_pack_codec codec;
	/* LZ4 raw bytes per block wanted: 0: DSV_PACK_DEFAULT_BLOCK; else
	 * DSV_PACK_MIN_BLOCK .. DSV_PACK_MAX_BLOCK; fitted by dsv_pack_block_bytes */
	uint64_t block_bytes;
	int level;   /* -1: the codec's default */
	int threads; /* 0: online CPUs */
	int force;   /* replace an existing output */
	/* --codec auto only: how fast the storage the store will be read from
	 * delivers bytes (--storage): 0 fast (unknown, the default), else
	 * bytes/s; under what the decode bar's codecs make it is the
	 * bottleneck and auto picks for ratio (auto.c) */
	double storage_bytes_s;
	/* Set (from a signal handler) to stop: dsv_pack then cleans up and
	 * fails with DSV_ERR_INTERRUPTED (message "interrupted"). */
	volatile sig_atomic_t *stop;
	/* Called from the writer about ten times a second and at the end. */
	void (*progress)(const dsv_pack_progress *p, void *arg);
	void *progress_arg;
} dsv_pack_opts;

typedef struct dsv_pack_result {
	uint64_t rows, chunks, chunk_rows;
	uint64_t block_bytes;     /* LZ4 raw bytes per block (0: codec none) */
	uint64_t raw_bytes;       /* input bytes */
	uint64_t stored_bytes;    /* chunk bytes on disk (what the data costs) */
	uint64_t file_bytes;      /* size of the output file */
	uint64_t estimated_bytes; /* the free-space check's estimate (0: skipped) */
	char dataset[256];        /* the dataset's path in the store, "/name" */
	int threads;              /* compression threads used */
	int level;                /* the level used (defaults resolved) */
	dsv_pack_codec codec;     /* the codec used (--codec auto: the one chosen) */
	char auto_why[360];       /* --codec auto: what it chose and why, one line */
	double seconds;           /* all of it */
	double write_seconds;     /* read, compress and write every chunk */
	double sync_seconds;      /* close the file and fsync it */
} dsv_pack_result;

/* The raw bytes per chunk c gets without --chunk-size. */
uint64_t dsv_pack_default_chunk(dsv_pack_codec c);

/* --storage's value: "fast" (0), "slow" (DSV_PACK_SLOW_STORAGE) or a
 * rate, "250MB/s", "1.5G", "800M" (decimal k, M, G; "B" and "/s"
 * optional), into *bytes_s. @return 0 or DSV_ERR_INVALID. */
int dsv_pack_parse_storage(const char *s, double *bytes_s);
#define DSV_PACK_SLOW_STORAGE 250e6 /* bytes/s: a busy network file system */

/* Fills opts with defaults (codec lz4, level -1, all threads). */
void dsv_pack_opts_init(dsv_pack_opts *o);

/* Packs. @return 0, or a dsv_err with eb naming the file and the reason;
 * on any failure nothing is left at OUTPUT that was not there before and
 * no temporary remains. */
int dsv_pack(const dsv_pack_opts *o, dsv_pack_result *res, dsv_errbuf *eb);

/* The temporary-file prefix for an output: "OUTPUT.tmp-". */
#define DSV_PACK_TMP_INFIX ".tmp-"

#endif
