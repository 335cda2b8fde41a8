/*
 * What the source room offers the rest of the library beyond the
 * installed dsview/source.h: the reads the read path, the backend, pack
 * and verify build on, the zero-config helpers the CLI and the manifest
 * use, and shared ownership for views. Not installed.
 *
 * Thread safety: as dsview/source.h says for a source; the reads here may
 * be called from any number of threads, dsv_source_ref only where open
 * and close may. A dsv_range is one thread's.
 */
#ifndef DSV_SOURCE_SOURCE_H
#define DSV_SOURCE_SOURCE_H

#include <stddef.h>
#include <stdint.h>

#include "codec/lz4_table.h"
#include "dsview/source.h"
#include "xform/linear.h"

/* Another owner of s (views that share one source share its chunks in the
 * cache): each owner closes it once, and the last close frees it. Not
 * thread-safe, as open and close are not. @return s */
dsv_source *dsv_source_ref(dsv_source *s);
/* Gives back the part of s that only chunked, gridded, coded or
 * library-read sources use when s (opened) uses none of it: a small
 * contiguous source costs less memory. Nothing of that part may be set
 * after: the format registry calls it as each open ends (the part given
 * back at once is the next open's), and views as a source is added. */
void dsv_source_settle(dsv_source *s);

/* How a read is asked for: the flags of a read request (read/read.h's
 * dsv_read_req). The read path, the backend, the source and a format's
 * grid hooks each get them as the reader set them, as an argument (a
 * band's dsv_grid_io for the hooks). */
enum {
	/* The reader reads on through the chunks that follow (the
	 * readahead): a piece of an LZ4 chunk with a block table is served
	 * from the whole chunk, decoded once and cached, and a source whose
	 * chunks are files of their own (Zarr) asks the kernel for the next
	 * ones too, as the kernel's readahead does inside one file. Without
	 * it, a piece comes from the blocks that hold it. */
	DSV_READ_STREAM = 1u,
};

/* As dsv_source_decode_chunk, for a read asked as flags (DSV_READ_*, or
 * 0, as the public call asks): the backend's way in. */
int dsv_source_decode_chunk_as(const dsv_source *s, const dsv_chunk_ref *ref, unsigned flags,
			       void *dst, size_t dst_cap, dsv_errbuf *eb);

/* Reads below a whole chunk's: the read path, the backend and verify. */

/* Chunk ref's stored bytes (ref->stored_size of them) into buf, its
 * Fletcher32 checked when it has one: *payload = the codec's part, the
 * checksum left off. @return 0, DSV_ERR_CORRUPT (the checksum), or a read
 * error (DSV_ERR_TRUNCATED, DSV_ERR_IO). */
int dsv_source_read_stored(const dsv_source *s, const dsv_chunk_ref *ref, void *buf,
			   size_t *payload);

/* Reads one chunk's elements (ref->nelems, native little-endian, source
 * dtype) through the HDF5 library. dst_cap >= ref->nelems * esize. */
int dsv_source_read_fallback(const dsv_source *s, const dsv_chunk_ref *ref, void *dst,
			     size_t dst_cap);
/* Elements in one band of the file's own chunks (its chunk rows times the
 * row) for a fallback source, or for a grid source whose chunks (bands)
 * group several chunk-rows; else 0. A chunk spans one or more; the file's
 * chunks are decoded whole, so a range aligned to bands touches no file
 * chunk outside it. */
uint64_t dsv_source_fallback_band(const dsv_source *s);
/* Bytes [lo, hi) of LZ4 chunk ref's decoded bytes, from only the blocks
 * that hold them, read and checked through the store's block table
 * (info.lz4_table): into dst, or, with a sink, block by block to
 * sink(arg, ...) (codec/lz4_table.h, dsv_lz4_table_decode); *decoded +=
 * the bytes decoded. @return 0; DSV_ERR_UNSUPPORTED (nothing read) when
 * the source has no table or ref is not such a chunk; DSV_ERR_CORRUPT
 * when a block or the table fails a check (the sink may have had the
 * blocks before it); DSV_ERR_TRUNCATED, DSV_ERR_IO, DSV_ERR_NOMEM. */
int dsv_source_read_lz4_part(const dsv_source *s, const dsv_chunk_ref *ref, uint64_t lo,
			     uint64_t hi, void *dst, dsv_lz4_sink sink, void *arg,
			     uint64_t *decoded);
/* For verify: chunk ref's row of the block table matches its stored frame
 * (sizes and checksums of every block). @return 0 (also when the source
 * has no table), DSV_ERR_CORRUPT, or a read error. */
int dsv_source_check_lz4_table(const dsv_source *s, const dsv_chunk_ref *ref);
/* Reads elements [first, first + n) of a plain chunk (dsv_chunk_is_plain)
 * into dst (n * esize bytes): one pread, nothing else of the chunk.
 * DSV_ERR_TRUNCATED when they lie past the end of the file. */
int dsv_source_read_elems(const dsv_source *s, const dsv_chunk_ref *ref, uint64_t first, uint64_t n,
			  void *dst);

/* Elements [start + p * stride, + len) for p < nruns of s (a window's
 * channels), run after run into dst (nruns * len elements, source dtype),
 * gathered by the format from the bytes that hold them all, where it
 * stores a recording time-major (EDF, BrainVision, EEGLAB): one read of
 * the stretch of time, not one of every channel's chunk. @return 0;
 * DSV_ERR_UNSUPPORTED (nothing read) where the format reads runs through
 * its chunks; DSV_ERR_INVALID for runs outside the source; a read error. */
/* s gathers runs itself (dsv_source_read_runs serves them). */
int dsv_source_gathers(const dsv_source *s);
int dsv_source_read_runs(const dsv_source *s, uint64_t start, uint64_t stride, uint64_t nruns,
			 uint64_t len, void *dst);

/* Where a gather writes a view's output itself (dsv_source_read_runs_to):
 * elements [skip, skip + n) of the runs (one after another), each mapped
 * by lin from its float64 value, into dst (n outputs). */
typedef struct dsv_gather_out {
	dsv_xform_lin lin;
	uint64_t skip, n;
} dsv_gather_out;

/* dsv_source_read_runs with the view's linear map applied by the source
 * as it decodes (no float64 buffer, one pass): the same bytes as the
 * runs read and then transformed. DSV_ERR_UNSUPPORTED (nothing read)
 * where s has no such gather or these runs are not its kind;
 * DSV_ERR_INVALID for runs outside the source or [skip, skip + n)
 * outside the runs; a read error. */
int dsv_source_read_runs_to(const dsv_source *s, uint64_t start, uint64_t stride, uint64_t nruns,
			    uint64_t len, const dsv_gather_out *o, void *dst);

/* Called for every band read: part names its elements, err its result,
 * eb (when err, for a grid's band; else NULL) which grid chunk failed, as
 * dsv_source_read_chunk's eb says it. */
typedef void (*dsv_band_fn)(void *arg, const dsv_chunk_ref *part, int err, const dsv_errbuf *eb);
/* Reads elements [first, first + n) of fallback or grid chunk ref
 * (relative to the chunk) into dst, band by band of the file's own chunks
 * (dsv_source_fallback_band), so a damaged file chunk fails only its band.
 * With each NULL, stops at the first band that fails; otherwise calls each
 * for every band and goes on. @return 0, or the first band's dsv_err
 * (DSV_ERR_INVALID for a range outside the chunk or a short dst). */
int dsv_source_read_fallback_bands(const dsv_source *s, const dsv_chunk_ref *ref, uint64_t first,
				   uint64_t n, void *dst, size_t dst_cap, dsv_band_fn each,
				   void *arg);

/* A reader of runs of one source's elements, for callers that walk a
 * source roughly in order (pack). One per thread. */
typedef struct dsv_range {
	const dsv_source *src;
	size_t esize;
	uint64_t memo; /* the chunk buf holds decoded, or UINT64_MAX */
	void *buf;     /* one decoded chunk */
	size_t cap;
} dsv_range;

int dsv_range_init(dsv_range *r, const dsv_source *s); /* 0 or DSV_ERR_NOMEM */
void dsv_range_free(dsv_range *r);
/* Copies elements [e0, e0 + n) of the source into dst: plain chunks by
 * pread of just those elements, others decoded whole once (kept in the
 * reader for the next call) and copied from. On failure *bad is the chunk
 * that failed. @return 0 or the chunk's dsv_err. */
int dsv_range_read(dsv_range *r, uint64_t e0, uint64_t n, void *dst, uint64_t *bad);

/* The descriptor cache (fds.c): the descriptors of the sources that read
 * files, one budget for the process, the least recently read closed past
 * it and opened again (checked) at their next read. */
typedef struct dsv_source_fd_stats {
	uint64_t open;     /* sources' descriptors open now */
	uint64_t budget;   /* at most this many (DSVIEW_OPEN_FILES or the limit) */
	uint64_t reopens;  /* descriptors opened again after the cache closed them */
	uint64_t replaced; /* reopens refused: the file was replaced or changed */
	uint64_t firsts;   /* files opened by a source's open (to read its header) */
} dsv_source_fd_stats;
void dsv_source_fd_counts(dsv_source_fd_stats *out);
/* Raises the soft limit of open files to the hard limit and sizes the
 * cache's budget from it again. @return the new soft limit, or -1 when
 * it cannot be read or is unlimited. */
long dsv_source_raise_fd_limit(void);
/* open(2) of path read-only for a descriptor outside the cache (the HDF5
 * library's files): at the process's limit (EMFILE), the cache closes
 * some of its idle descriptors and the open is tried once more. @return
 * the descriptor, or -1 with errno set. */
int dsv_source_open_path(const char *path);
/* " (the limit of open files: raise it with ulimit -n)" for an open(2)
 * that failed with e = EMFILE or ENFILE, else "": for messages. */
const char *dsv_source_open_hint(int e);

#endif
