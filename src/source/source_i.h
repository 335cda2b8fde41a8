/*
 * Private layout of a source, shared by the source room's files and the
 * format folders above it (src/formats/NAME).
 *
 * Two layouts cover every kind:
 *  - flat: the elements are one contiguous run of the file starting at
 *    data_offset (npy, raw, HDF5 contiguous). dsview picks chunk_elems.
 *  - chunked: HDF5 chunks of chunk_rows whole rows each (these tables
 *    and settings are in s->more, struct dsv_source_more); chunk i's
 *    stored bytes are at chunk_off[i], chunk_size[i] long, filters
 *    skipped per chunk_mask[i] (HDF5's filter mask). chunk_off[i] == UINT64_MAX means the
 *    chunk was never written (the fill value: served through the fallback,
 *    or for a grid (h5_grid.c) as g_fill).
 * Fallback sources (filters only HDF5 decodes) use the chunked or flat
 * arithmetic for element ranges but read through h5 under a global lock.
 */
#ifndef DSV_SOURCE_I_H
#define DSV_SOURCE_I_H

#include <stdint.h>
#include <sys/types.h>

#include "dsview/source.h"
#include "source/source.h"

#define DSV_SRC_UNALLOCATED UINT64_MAX

/* Reads exactly n bytes at off; DSV_ERR_TRUNCATED if the file ends first,
 * DSV_ERR_IO on a read error. */
int dsv_source_pread(const dsv_source *s, void *buf, size_t n, uint64_t off);
/* dsv_source_read_chunk for a read asked as flags (DSV_READ_*): its body,
 * which the public call enters with 0. */
int dsv_source_read_chunk_as(const dsv_source *s, const dsv_chunk_ref *ref, unsigned flags,
			     void *dst, size_t dst_cap, void *scratch, size_t scratch_cap,
			     dsv_errbuf *eb);

/* One band of a grid source being made (grid.c), handed to the format's
 * grid hooks: which band, and the stored bytes a hook read for it at once
 * (file bytes [held_off, held_off + held_len) at held, covering grid
 * chunks held_first .. held_end - 1 in C order), which the band's later
 * chunks are decoded from; for a sharded Zarr array in object storage, the
 * run of a shard's inner chunks fetched by one GET, held_first that
 * shard's index plus one (zarr_object.c). Lives for one band, on the reader's
 * stack. */
typedef struct dsv_grid_io {
	uint64_t band;
	unsigned flags; /* the read's (DSV_READ_*, source/source.h) */
	int whole;      /* the band is made whole (every chunk of it read), not one chunk-row */
	dsv_errbuf
		*eb; /* which grid chunk failed, for the reader (dsv_grid_fault); NULL: not asked */
	const unsigned char *held;
	uint64_t held_off, held_len;
	uint64_t held_first, held_end;
} dsv_grid_io;

struct dsv_source {
	dsv_source_info info;
	int refs;    /* dsv_source_ref adds one; close frees at the last */
	char *path;  /* what is opened: a URL with its query */
	char *shown; /* what info.path shows: path without a URL's query */
	char *dataset;
	/* The file's descriptor, or -1 while the descriptor cache (fds.c)
	 * has it closed: read it only between dsv_source_fd_get and _put.
	 * The cache's list and pins, and what the first open found (the
	 * file a reopen must be: dev, ino, file_size, info.mtime). */
	int fd;
	unsigned fd_pins;
	unsigned char fd_file; /* fd is the cache's (a file was opened) */
	struct dsv_source *fd_prev, *fd_next;
	dev_t dev;
	ino_t ino;
	/* an object in object storage or on an https:// server (src/net),
	 * read by ranged GETs where a file is read with pread; fd is then -1 */
	struct dsv_net_obj *net;
	uint64_t file_size; /* at open; offsets were checked against it */

	/* flat layout */
	uint64_t data_offset;

	/* chunked layout (the rest in more) */
	int chunked;
	dsv_codec codec;
	int fletcher32;
	/* HDF5 shuffle in front of the codec: element bytes (0: none) */
	unsigned shuffle;
	/* Fallback sources: chunks only the format's own library decodes
	 * (HDF5 filters), read through more->lib_read (h5_read.c) under its lock */
	int fallback;
	/* N-d chunk grid (grid.c; the rest in more) */
	int grid;
	/* The format's own state, private to its folder (the HDF5 library's
	 * handles for lib_read, a Zarr array's metadata and store), freed by
	 * fmt_close at the last close; NULL for none. */
	void *fmt;
	void (*fmt_close)(void *fmt);

	/* info.why's text when a format composed one at open (e.g. "filters
	 * shuffle+deflate": dsv_source_why), else NULL */
	char *why;
	/* the dataset's attributes as JSON text (info.attrs), and its axis
	 * names (info.dim_names), where the format has them; else NULL */
	char *attrs_json, *dims_json;

	/* What only some sources need (chunk tables, codecs' settings, a
	 * grid, the hooks of a format that reads its own way): allocated
	 * with the source, and given back (more pointing at one shared
	 * part of zeros, read-only) by dsv_source_settle when all of it is
	 * zero, as for a small contiguous .npy, so that a view of 10^5 such
	 * sources does not hold 10^5 of them. */
	struct dsv_source_more *more;
};
/* A source's part that only some kinds use (struct dsv_source's more). */
struct dsv_source_more {
	/* chunked layout */
	uint64_t chunk_rows;
	uint64_t chunk_raw_size; /* decoded bytes of a full HDF5 chunk */
	uint64_t *chunk_off;
	uint32_t *chunk_size;
	uint32_t *chunk_mask;
	unsigned codec_filter_bit;   /* bit in chunk_mask meaning "codec skipped" */
	unsigned fl32_filter_bit;    /* bit meaning "Fletcher32 skipped" */
	unsigned shuffle_filter_bit; /* bit meaning "shuffle skipped" */
	/* bitshuffle's cd_values: element size, block size (elements, 0:
	 * default), compression (DSV_BSHUF_*); checked at open */
	unsigned bshuf_elem, bshuf_block, bshuf_comp;
	/* Blosc2: the chunk's shape, which a B2ND frame's must be (ndim
	 * values in the block dsv_source_dims gives; NULL until then) */
	uint64_t *blosc2_shape;
	/* LZ4 stores with a block table (h5_table.c): its file offset and
	 * blocks per chunk (0: none; chunks are decoded whole); for a source
	 * in object storage the whole table as stored, read once at open
	 * (NULL: each row read where it lies, as from a file) */
	uint64_t table_off, table_blocks;
	void *table_mem;

	/* fallback sources */
	uint64_t band_elems; /* elements per band of the file's own chunks, or 0 */
	int (*lib_read)(const dsv_source *s, const dsv_chunk_ref *ref, void *dst, size_t dst_cap);

	/* N-d chunk grid (grid.c): the array is stored in chunks that are
	 * boxes of gshape; the read path's chunks are bands of g_band
	 * chunk-rows (gshape[0] whole rows each; chunked is set, chunk_rows
	 * = g_band * gshape[0]), each made from the grid chunks it holds.
	 * grid_chunk decodes grid chunk idx into size bytes in its stored
	 * order and byte order, or returns DSV_ERR_NOTFOUND for a chunk never
	 * written (read as g_fill). */
	uint64_t *gshape; /* ndim values each, in the block dsv_source_dims gives */
	uint64_t *gcount; /* grid chunks along each axis */
	uint64_t g_band;  /* chunk-rows a band (dsv_grid_set_bands) */
	int g_fortran, g_big_endian;
	unsigned char g_fill[8]; /* one element, little-endian */
	int (*grid_chunk)(const dsv_source *s, dsv_grid_io *io, const uint64_t *idx, void *dst,
			  size_t size);
	/* optional: called once a band, before its chunks are asked for
	 * one by one (e.g. to ask the kernel for all of them at once, so
	 * their disk reads overlap) */
	void (*grid_begin)(const dsv_source *s, dsv_grid_io *io);
	/* optional: elements [start + p * stride, + len) for p < nruns,
	 * one run after another into dst (nruns * len elements), read
	 * together from the records that hold them (an EEG recording's
	 * channels over one stretch of time: its file stores them time
	 * after time), not through the read path's chunks, each of which is
	 * a few channels' whole time (dsv_source_read_runs) */
	int (*gather)(const dsv_source *s, uint64_t start, uint64_t stride, uint64_t nruns,
		      uint64_t len, void *dst);
	/* optional, with gather: the same runs' elements [o->skip, + o->n)
	 * mapped by o->lin as they are decoded, into dst
	 * (dsv_source_read_runs_to) */
	int (*gather_to)(const dsv_source *s, uint64_t start, uint64_t stride, uint64_t nruns,
			 uint64_t len, const dsv_gather_out *o, void *dst);
	/* optional: a source whose elements lie in runs of one or more
	 * files, not at their offsets in its own (runs.c): dsv_source_pread
	 * reads their flat layout (element i at byte i * esize) through it */
	int (*vpread)(const dsv_source *s, void *buf, size_t n, uint64_t off);
	uint64_t vsize; /* the bytes of that flat layout (file_size stays the file's) */
	/* optional: the data's bytes on disk, when counting them costs too
	 * much for open (dsv_source_stored_bytes; thread-safe) */
	uint64_t (*stored_count)(const dsv_source *s);
};

/* Sets info.why to the text fmt makes, held by s (the last close frees
 * it); out of memory, to "". */
void dsv_source_why(dsv_source *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Allocates a zeroed source (its more part too) with path (and dataset)
 * copied and fd = -1. */
dsv_source *dsv_source_alloc(const char *path, const char *dataset);

/* The most bytes a stored chunk of raw bytes may take, past which it is
 * not a chunk to allocate for: with a codec twice raw plus 64 KiB (at
 * worst LZ4 frames are about raw + raw/255 + 16 bytes a block, zstd
 * frames raw + raw/256 + 64, LZF streams raw + raw/32 + 1, Blosc buffers
 * raw + 16, zlib streams raw + raw/1000 + 13), and 4 more for a
 * Fletcher-32 checksum. */
uint64_t dsv_source_max_stored(uint64_t raw, int codec, int fl32);
/* s's chunk map (offset, stored size and filter mask of each of n
 * chunks), zeroed; n > 0. @return 0 or DSV_ERR_NOMEM (what was made is
 * freed with s). */
int dsv_source_chunk_map(dsv_source *s, uint64_t n);

/* Gives s the room for gshape, gcount and blosc2_shape (DSV_MAX_DIMS
 * values each), once: a flat source, the most common, keeps none, so a
 * view of many small sources stays small. @return 0 or DSV_ERR_NOMEM. */
int dsv_source_dims(dsv_source *s);
/* Splits a flat source into chunks of whole rows of about target_bytes of
 * source elements (a row larger than that is split into equal pieces). */
void dsv_source_flat_chunks(dsv_source *s, uint64_t target_bytes);
/* Fills nrows/row_elems/nelems from ndim/shape; DSV_ERR_OVERFLOW if the
 * byte size does not fit in 63 bits. */
int dsv_source_set_shape(dsv_source *s, int ndim, const uint64_t *shape);
/* Opens s->path read-only, fills fd, file_size, mtime; a URL
 * (dsv_url_scheme_len) is opened as an object instead (net, by a HEAD). */
int dsv_source_open_file(dsv_source *s, dsv_errbuf *eb);

/* Implemented in fds.c, the descriptor cache. The file s->path opened the
 * first time, its descriptor put in the cache: fd, file_size, info.mtime,
 * dev, ino. */
int dsv_source_fd_first(dsv_source *s, dsv_errbuf *eb);
/* The file name in the directory of s's file (a recording's data file
 * beside its header: a BrainVision .eeg, an EEGLAB .fdt) as a source of
 * its own, with no shape, to read with dsv_source_pread: its descriptor
 * is the cache's, under the budget with every other, and its size and
 * mtime in file_size and info.mtime. name holds no '/'. @return 0 or
 * DSV_ERR_NOTFOUND, DSV_ERR_IO, DSV_ERR_NOMEM; eb's file is the data
 * file's path. Closed with dsv_source_close. */
int dsv_source_open_beside(const dsv_source *s, const char *name, dsv_source **out, dsv_errbuf *eb);
/* s's descriptor for a read (opened again, checked, when the cache had
 * closed it), kept open until dsv_source_fd_put; -1 when it cannot be
 * opened (errno says why) or is no longer the same file (errno ESTALE),
 * logged once a minute. */
int dsv_source_fd_get(const dsv_source *s);
void dsv_source_fd_put(const dsv_source *s);
/* Closes s's descriptor and takes it out of the cache (s's last close). */
void dsv_source_fd_close(dsv_source *s);
/* Registers the cache's fork handlers now, once. Fork handlers that
 * prepare run in the reverse order of their registration: a room whose
 * locks are taken before the cache's (the HDF5 library's: its driver
 * sheds descriptors under its lock) calls this before registering its
 * own, so a fork takes them in that order too. */
void dsv_source_fds_atfork(void);

/* Reads exactly n bytes of fd at off; DSV_ERR_TRUNCATED if the file ends
 * first, DSV_ERR_IO on a read error (dsv_source_pread for any fd). */
int dsv_pread_fd(int fd, void *buf, size_t n, uint64_t off);
/* Checks (Fletcher32) and decodes a chunk's stored bytes, already read
 * (ref->stored_size of them at stored), into need bytes at dst: the second
 * half of dsv_source_read_chunk, for readers that read several chunks'
 * stored bytes at once. @return 0, DSV_ERR_CHECKSUM, DSV_ERR_CORRUPT or
 * DSV_ERR_NOMEM. */
int dsv_source_decode_stored(const dsv_source *s, const dsv_chunk_ref *ref, const void *stored,
			     void *dst, size_t need);

/* Implemented in grid.c. Groups a grid source's chunk-rows into bands (the
 * read path's chunks) of about DSVIEW_GRID_BAND_KB of elements, at least
 * one chunk-row each, and sets g_band, chunk_rows, chunk_raw_size and
 * info.chunk_elems/nchunks. Needs the shape, gshape and gcount. */
void dsv_grid_set_bands(dsv_source *s);
/* Band ref->index of a grid source into dst, for a read asked as flags
 * (DSV_READ_*); on failure eb (may be NULL) names the grid chunk that
 * failed. */
int dsv_grid_read_band(const dsv_source *s, const dsv_chunk_ref *ref, unsigned flags, void *dst,
		       size_t dst_cap, dsv_errbuf *eb);
/* Elements [part->elem_start, + part->nelems) of a grid source, all in one
 * chunk-row, into dst, from that chunk-row's chunks alone: a band that
 * fails whole still serves its other chunk-rows (range.c). */
int dsv_grid_read_part(const dsv_source *s, const dsv_chunk_ref *part, void *dst, dsv_errbuf *eb);
/* A grid_chunk that fails with err says which chunk in io->eb, when the
 * reader asked: file is the chunk's own file (Zarr) or NULL, where the
 * place inside the source's file (HDF5: "chunk (i, j)") or NULL, and msg
 * the words alone (they name the chunk themselves). */
void dsv_grid_fault(dsv_grid_io *io, int err, const char *file, const char *where, const char *fmt,
		    ...) __attribute__((format(printf, 5, 6)));

/* One run of a source's elements (runs.c): count elements at byte off of
 * file (NULL: the source's own file), a source of its own opened with
 * dsv_source_open_file, so that its descriptor too is the cache's (fds.c)
 * and counts in its budget (a LitData chunk file); or, compressed (codec:
 * DSV_RUN_LZ4F, DSV_RUN_ZSTD), a frame of stored bytes at off that
 * decodes to raw bytes, the run's elements skip bytes into them. */
enum { DSV_RUN_PLAIN, DSV_RUN_LZ4F, DSV_RUN_ZSTD };
typedef struct dsv_run {
	dsv_source *file;
	uint64_t off, count;
	int codec;
	uint64_t stored, raw, skip;
} dsv_run;
/* Makes s (its dtype set, nothing else of its layout) the concatenation
 * of runs[0 .. n) (taken: freed with s, and each file of its own closed
 * with it, whatever the result), as rows of row elements (1: a
 * 1-D array): a band of the read path is read by one pread per plain run
 * it crosses, a compressed run decoded whole. Each run must lie inside
 * its file and its decoded bytes (the caller checks). Uses s->fmt and
 * fmt_close. @return 0, DSV_ERR_INVALID (the runs are not whole rows),
 * DSV_ERR_OVERFLOW or DSV_ERR_NOMEM. */
int dsv_source_set_runs(dsv_source *s, dsv_run *runs, size_t n, uint64_t row);

/* Implemented in timerows.c. Makes s (its dtype set, nothing else of its
 * layout) the (K, C, T) source of samples stored time-major, channel
 * fastest (K trials of T rows of C elements) from byte off of data
 * (taken: closed with s, whatever the result): a file beside s's
 * (dsv_source_open_beside), a source with a shape whose elements are
 * those rows (an HDF5 dataset (K, T, C), read through its chunks; off
 * 0), or NULL: s's own file. Uses s->fmt and fmt_close. @return 0, DSV_ERR_OVERFLOW or
 * DSV_ERR_NOMEM. */
int dsv_source_set_time_rows(dsv_source *s, dsv_source *data, uint64_t off, uint64_t K, uint64_t C,
			     uint64_t T);

/* Sets info.lz4_block from the first stored LZ4 chunk's header (a
 * hint: each frame's own header is checked when it is read). */
void dsv_source_note_lz4_block(dsv_source *s);

/* Chunk sizes of flat sources. Sources read with pread are read piece by
 * piece, only what a request needs, so their chunks matter only as the
 * unit of readahead and of `verify`: about 1 MiB of source bytes, so that
 * asking the kernel for the next chunks is a few large I/Os. The library
 * fallback pays a call per chunk and decodes whole chunks into the cache. */
#define DSV_PREAD_CHUNK_BYTES (1u << 20)
#define DSV_FALLBACK_CHUNK_BYTES (1u << 20)
/* Bands of a grid whose chunk-rows are small are grouped to about
 * DSVIEW_GRID_BAND_KB of elements (common/knobs.c, 256 KiB unless set):
 * the cache, readahead and the read of a band's chunks (adjacent in an
 * HDF5 file: one pread) then deal in units that are not tiny, while a
 * shuffled row reads at most a few times its own bytes.
 * 256 KiB measured best against 64 KiB and 1 MiB (make bench-grid's
 * (1, 64, 64) uint8 volumes, 64 KiB a chunk-row; docs/benchmarks/grid-zarr.md). */
/* A band of a grid (one chunk-row, or the grouped ones) at most this big:
 * the read path decodes a band whole into one cache entry. The range of
 * DSVIEW_GRID_BAND_KB (common/knobs.c) ends here. */
#define DSV_GRID_BAND_MAX (256ull << 20)

#endif
