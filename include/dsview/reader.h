/*
 * The views without a mount: what `dsview mount SOURCE` serves, read in
 * the calling process through the same engine, byte for byte what the
 * mount's V.dat files hold. No root, no /dev/fuse, no daemon.
 *
 *   dsv_reader *r;
 *   dsv_errbuf eb;
 *   if (dsv_reader_open("neuro.ini", "cache_size=512M", &r, &eb))
 *           fprintf(stderr, "%s\n", eb.msg);
 *   int v = dsv_reader_find(r, "stim");
 *   dsv_reader_view_get(r, v, &info);         // shape, dtype, row bytes
 *   dsv_reader_read_rows(r, v, rows, n, buf, &eb);
 *   dsv_reader_close(r);
 *
 * Options: NULL, or "key=value" pairs separated by ',': the keys of a
 * manifest's [dsview] section (cache_size, threads, gpu, gpu_cache,
 * disk_cache, disk_cache_size, s3_endpoint, s3_region, s3_profile,
 * s3_addressing), which win over the manifest's own, and for a SOURCE
 * that is not a manifest `dtype` (default float32) and `strict` (refuse
 * it all when one dataset cannot be served), as `dsview mount` takes
 * them, and `log_level` (error, warning or info; default warning: the
 * process's log, stderr, gets what goes wrong, such as a damaged chunk's
 * line). `threads` is the number of threads a gather of rows is split
 * over, the calling one among them (default 4; 1: the calling thread
 * alone). The s3_ settings and the disk cache are the process's, as
 * they are the daemon's.
 *
 * Memory: each reader holds its chunk cache (cache_size: by default the
 * smaller of 1 GiB and 10% of the machine's memory or memory limit;
 * decoded chunks of compressed or chunked sources, nothing for a plain
 * .npy or raw file) plus an eighth of it, at most 32 MiB, for tiles of
 * windows, and per reading thread a buffer of a few chunks. A process
 * made by fork has its own.
 *
 * Errors are dsv_err codes, and eb (may be NULL) says why in the words
 * `dsview mount` uses: a bad manifest "file:line: reason", a damaged
 * chunk the view, source, rows and file offset (DSV_ERR_CORRUPT,
 * DSV_ERR_CHECKSUM, DSV_ERR_TRUNCATED or DSV_ERR_IO: never wrong bytes).
 *
 * Thread safety: every call but close may be made from any number of
 * threads at once. Fork: a process made by fork may go on using a reader
 * its parent opened; its first call opens the source again there (the
 * parent's threads, connections and device state do not cross a fork),
 * and a device initialised in the parent is not used in the child.
 */
#ifndef DSVIEW_READER_H
#define DSVIEW_READER_H

#include <stddef.h>
#include <stdint.h>

#include "dsview/dsview.h"

typedef struct dsv_reader dsv_reader;

/* What one view is. The pointers live as long as the reader. */
typedef struct dsv_reader_view {
	const char *name; /* "stim", or "group/dataset" for a zero-config HDF5 group */
	const char *json; /* the text of the mount's V.json */
	dsv_dtype dtype;  /* the output */
	int ndim;
	uint64_t shape[DSV_MAX_DIMS];
	uint64_t rows;      /* shape[0] */
	uint64_t row_bytes; /* bytes of one row of the output */
	uint64_t nbytes;    /* bytes of V.dat */
} dsv_reader_view;

/* Opens what `dsview mount source` takes (a manifest, a file, a
 * directory, a Zarr array or group, a URL) with options (above).
 * @return 0, or a dsv_err with eb set. */
int dsv_reader_open(const char *source, const char *options, dsv_reader **out, dsv_errbuf *eb);
/* Frees everything; accepts NULL. No other call may be running. */
void dsv_reader_close(dsv_reader *r);

size_t dsv_reader_nviews(const dsv_reader *r);
/* The index of the view named name, or -1. */
int dsv_reader_find(const dsv_reader *r, const char *name);
/* View i described into out. @return 0, or DSV_ERR_INVALID (no view i). */
int dsv_reader_view_get(const dsv_reader *r, size_t i, dsv_reader_view *out);
/* The text of a zero-config mount's /.skipped.json (what it does not
 * serve, and why), or NULL when nothing was skipped. */
const char *dsv_reader_skipped_json(const dsv_reader *r);

/* Bytes [off, off + len) of view i's output (the mount's V.dat) into dst.
 * @return 0, or a dsv_err with eb set (DSV_ERR_INVALID: a range outside
 * the view). */
int dsv_reader_read(dsv_reader *r, size_t i, uint64_t off, size_t len, void *dst, dsv_errbuf *eb);
/* Rows rows[0 .. n) of view i, in that order (any order, repeats
 * allowed), into dst: n * row_bytes bytes, row k at k * row_bytes. Each
 * run of consecutive rows is made at once, decoded and transformed
 * straight into dst. @return 0, or a dsv_err with eb set (DSV_ERR_INVALID:
 * a row outside the view, nothing read). */
int dsv_reader_read_rows(dsv_reader *r, size_t i, const int64_t *rows, size_t n, void *dst,
			 dsv_errbuf *eb);

/* The reader's counters as a JSON object (those of the mount's
 * /.stats.json that are the engine's: bytes served, chunks decoded,
 * cache hits, ...), into buf as snprintf. @return the length the text
 * needs (>= cap: cut short), or a negative dsv_err. */
int dsv_reader_stats(dsv_reader *r, char *buf, size_t cap);

#endif
